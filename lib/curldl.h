/* curldl.h - libcurl, loaded at run time (ISC licence) */
#ifndef SPIRT_CURLDL_H
#define SPIRT_CURLDL_H

#include <curl/curl.h>

#include "spirt.h"

/*
 * No tool links libcurl: linked, it and the thirty libraries it pulls in
 * would be loaded at every start, a cold function's included, and triple
 * its start-up time.  What speaks HTTP as a client (lib/remote.c, a
 * peer's store by URL; lib/faas_lambda.c, -F lambda; lib/invoke.c, a
 * function behind a gateway) calls it through this table, which
 * spirt_curl_load() fills from libcurl.so.4 on first use.  Only this
 * module and its three users include <curl/curl.h>.
 */
#define SPIRT_CURL_SONAME "libcurl.so.4"

struct spirt_curl {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_reset)(CURL *);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};

/*
 * Load libcurl.so.4 and resolve the table, once per process (thread-safe;
 * later calls return the first one's result).  0 and *cu, or
 * SPIRT_ENOTSUP (library or a symbol missing: spirt_curl_error() says
 * which, naming libcurl.so.4).  curl_global_init() is the caller's.
 */
SPIRT_MUST_CHECK int spirt_curl_load(const struct spirt_curl **cu)
    SPIRT_NONNULL(1);
/* Why spirt_curl_load() failed ("" if it did not). */
const char *spirt_curl_error(void);

#endif
