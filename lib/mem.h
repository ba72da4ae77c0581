/* mem.h - large allocations on transparent huge pages */
#ifndef SPIRT_MEM_H
#define SPIRT_MEM_H

#include <stddef.h>

#define SPIRT_HUGE (2u << 20)   /* x86-64's PMD size: one huge page */

/*
 * Every program links with -Wl,--wrap=malloc (config.mk: WRAP_LDFLAGS,
 * which also defines SPIRT_WRAP_MALLOC), so each malloc() of the tools
 * and of LMDB (linked statically for that, LMDB_LIBS) goes through
 * spirt's wrapper.  A build with WRAP_LDFLAGS empty (a linker without
 * --wrap) leaves the wrapper out, and LMDB_LIBS=-llmdb links LMDB's
 * shared library: both work, only without huge pages.  While
 * spirt_bigpages is set (the default), a request of SPIRT_HUGE bytes or
 * more is rounded up to whole huge pages, aligned to one (posix_memalign)
 * and advised MADV_HUGEPAGE, so the kernel backs it with 2 MiB pages: one
 * page fault per 2 MiB instead of 512.  The record LMDB builds in memory
 * before writing it (megabytes for a gradient or a model) is such a
 * request; a whole spirt-agg of 8 x 1e6 floats went from 5.5 to 4.2 ms
 * with this and LMDB linked statically (docs/performance.md).  free() and
 * realloc() work on the result as on any other.  Warm tools clear spirt_bigpages (spirt_serve_init): their
 * large blocks are reused from the heap step after step instead.
 */
extern int spirt_bigpages;

#endif
