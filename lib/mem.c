/* mem.c - large allocations on transparent huge pages (see mem.h) */
#define _DEFAULT_SOURCE         /* madvise, MADV_HUGEPAGE */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "mem.h"

int spirt_bigpages = 1;

/* only when the link wraps malloc (config.mk: WRAP_LDFLAGS), else
 * __real_malloc is undefined */
#ifdef SPIRT_WRAP_MALLOC
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);

void *
__wrap_malloc(size_t n)
{
	size_t r;
	void *p;
	int rc;

	if (!spirt_bigpages || n < SPIRT_HUGE || n > SIZE_MAX - SPIRT_HUGE)
		return __real_malloc(n);
	r = (n + SPIRT_HUGE - 1) & ~(size_t)(SPIRT_HUGE - 1);
	if ((rc = posix_memalign(&p, SPIRT_HUGE, r)) != 0) {
		errno = rc;
		return NULL;
	}
#ifdef MADV_HUGEPAGE
	(void)madvise(p, r, MADV_HUGEPAGE);     /* whole huge pages */
#endif
	return p;
}
#endif
