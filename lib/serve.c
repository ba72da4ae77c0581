/* serve.c - warm mode: one invocation per line of step numbers on a stream */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "serve.h"

int
spirt_serve_next(FILE *f, uint64_t *step, char *buf, size_t cap,
    uint64_t max)
{
	size_t n;
	int c, whole;

	errno = 0;
	if (fgets(buf, (int)cap, f) == NULL)
		return ferror(f) ? (errno ? errno : EIO) : SPIRT_EOF;
	n = strlen(buf);
	whole = n > 0 && buf[n - 1] == '\n';
	if (whole)
		buf[--n] = '\0';
	else if (n == cap - 1)
		/* longer than the buffer: drop the rest of the line */
		while ((c = getc(f)) != EOF && c != '\n')
			whole = -1;
	if (n > 0 && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (whole < 0)
		return SPIRT_EINVAL;
	return spirt_parse_u64(step, buf, 0, max);
}
