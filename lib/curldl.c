/* curldl.c - libcurl, loaded at run time (ISC licence) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "curldl.h"
#include "dl.h"

static struct spirt_curl table;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loadrc;
static char err[300];

static void
load(void)
{
	const struct spirt_dlsym t[] = {
		{ "curl_global_init", &table.global_init },
		{ "curl_global_cleanup", &table.global_cleanup },
		{ "curl_easy_init", &table.easy_init },
		{ "curl_easy_setopt", &table.easy_setopt },
		{ "curl_easy_perform", &table.easy_perform },
		{ "curl_easy_getinfo", &table.easy_getinfo },
		{ "curl_easy_reset", &table.easy_reset },
		{ "curl_easy_cleanup", &table.easy_cleanup },
		{ "curl_easy_strerror", &table.easy_strerror },
		{ "curl_slist_append", &table.slist_append },
		{ "curl_slist_free_all", &table.slist_free_all },
	};
	const char *why;
	void *dl;

	if ((dl = dlopen(SPIRT_CURL_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		why = dlerror();
		/* glibc's message names the file; say the name all the same */
		if (why != NULL && strstr(why, SPIRT_CURL_SONAME) != NULL)
			snprintf(err, sizeof err, "%s", why);
		else
			snprintf(err, sizeof err, "%s: %s", SPIRT_CURL_SONAME,
			    why != NULL ? why : "cannot be loaded");
		loadrc = SPIRT_ENOTSUP;
		return;
	}
	if ((why = spirt_dl_syms(dl, t, sizeof t / sizeof t[0])) != NULL) {
		snprintf(err, sizeof err, "%s: no symbol %s",
		    SPIRT_CURL_SONAME, why);
		dlclose(dl);
		memset(&table, 0, sizeof table);
		loadrc = SPIRT_ENOTSUP;
		return;
	}
	/* kept loaded for the life of the process */
}

int
spirt_curl_load(const struct spirt_curl **cu)
{
	*cu = NULL;
	if (pthread_once(&once, load) != 0)
		return SPIRT_EBUG;
	if (loadrc != 0)
		return loadrc;
	*cu = &table;
	return 0;
}

const char *
spirt_curl_error(void)
{
	return err;
}
