/* serve.c - warm mode: one invocation per line of step numbers on a stream */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"
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
spirt_serve_init(void)
{
	struct sigaction sa;

	/*
	 * Keep freed memory.  Each step allocates and frees the same large
	 * blocks (LMDB's dirty pages for a record of a megabyte, which it
	 * malloc()s per transaction): by default glibc maps the first ones
	 * afresh each time and returns freed heap tops to the kernel, and
	 * every step then page-faults its way through fresh memory.  Blocks
	 * up to 32 MiB (glibc's maximum threshold) now come from the heap, and
	 * the heap is never trimmed: a warm process keeps its peak size, as
	 * it would anyway at the next step.  bench/train measured 15% per
	 * step (docs/performance.md).
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	spirt_bigpages = 0;     /* plain heap blocks, reused (mem.h) */

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
