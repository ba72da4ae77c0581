/* dl.c - libraries loaded at run time: their functions (ISC licence) */
#include <dlfcn.h>
#include <string.h>

#include "dl.h"

const char *
spirt_dl_syms(void *dl, const struct spirt_dlsym *t, size_t n)
{
	void *p;

	for (size_t i = 0; i < n; i++) {
		if ((p = dlsym(dl, t[i].name)) == NULL)
			return t[i].name;
		memcpy(t[i].fn, &p, sizeof p);  /* ISO C: no object-to-function
						 * cast */
	}
	return NULL;
}
