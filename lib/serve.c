/* serve.c - warm mode: one invocation per line of step numbers on a stream */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "serve.h"

static volatile sig_atomic_t stopped;

static void
onsignal(int sig)
{
	(void)sig;
	stopped = 1;
}

void
spirt_serve_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = onsignal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int
spirt_serve_stopped(void)
{
	return stopped != 0;
}

int
spirt_serve_next(FILE *f, uint64_t *step, char *buf, size_t cap,
    uint64_t max)
{
	size_t n;
	int c, whole;

	if (stopped)
		return SPIRT_EOF;
	errno = 0;
	if (fgets(buf, (int)cap, f) == NULL) {
		if (stopped)    /* the wait was interrupted: a clean end */
			return SPIRT_EOF;
		return ferror(f) ? (errno ? errno : EIO) : SPIRT_EOF;
	}
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
