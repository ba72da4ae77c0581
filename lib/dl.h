/* dl.h - libraries loaded at run time: their functions (ISC licence) */
#ifndef SPIRT_DL_H
#define SPIRT_DL_H

#include <stddef.h>

/*
 * libcurl (lib/curldl.c) and libmicrohttpd for -F http (lib/faas_http.c)
 * are dlopen()ed on first use, so a cold start loads neither.  Each keeps
 * a table of the functions it calls, filled here.
 */
struct spirt_dlsym {
	const char *name;       /* the symbol */
	void *fn;               /* where its address goes: a function pointer */
};

/*
 * Look up the n symbols of t in dl (a dlopen() handle) and store each
 * address through its fn.  Returns NULL, or the name of the first symbol
 * dl lacks (what was stored before it is then of no use).
 */
const char *spirt_dl_syms(void *dl, const struct spirt_dlsym *t, size_t n);

#endif
