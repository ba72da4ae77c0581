/* faas_lambda.c - spirt-grad as an AWS Lambda custom runtime (libcurl) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curldl.h"
#include "faas_lambda.h"
#include "serve.h"

#define API "/2018-06-01/runtime"

/*
 * libcurl is loaded at run time, by -F lambda only (lib/curldl.h): linked,
 * it and the thirty libraries it pulls in would be loaded at every start
 * of spirt-grad, cold invocations included, and triple their start-up
 * time.
 */
static const struct spirt_curl *cu;
static char cuerr[300];

struct xfer {
	CURL *h;
	struct spirt_faas_lambda *l;
	char *body;             /* the response body (GET next) */
	size_t n, cap;
	int big;
	int waiting;            /* in GET next: a signal may end it */
	char id[128];           /* Lambda-Runtime-Aws-Request-Id */
	char trace[512];        /* Lambda-Runtime-Trace-Id */
};

static size_t
on_body(char *p, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;
	size_t n = sz * nm, cap;
	char *q;

	if (x->n + n + 1 > x->cap) {
		cap = x->cap ? x->cap : 4096;
		while (cap < x->n + n + 1)
			cap *= 2;
		if (cap > (size_t)8 << 20 || (q = realloc(x->body, cap)) ==
		    NULL) {
			x->big = 1;
			return 0;       // an event over 8 MiB: not Lambda's
		}
		x->body = q;
		x->cap = cap;
	}
	memcpy(x->body + x->n, p, n);
	x->n += n;
	x->body[x->n] = '\0';
	return n;
}

/* Copy header "name: value" into dst if p holds it. */
static void
header(const char *p, size_t n, const char *name, char *dst, size_t cap)
{
	size_t k = strlen(name);

	if (n <= k + 1 || strncasecmp(p, name, k) != 0 || p[k] != ':')
		return;
	p += k + 1;
	n -= k + 1;
	while (n > 0 && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == '\n' ||
	    p[n - 1] == ' '))
		n--;
	if (n >= cap)
		n = 0;          // too long to be Lambda's: as if absent
	memcpy(dst, p, n);
	dst[n] = '\0';
}

static size_t
on_header(char *p, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;
	size_t n = sz * nm;

	header(p, n, "Lambda-Runtime-Aws-Request-Id", x->id, sizeof x->id);
	header(p, n, "Lambda-Runtime-Trace-Id", x->trace, sizeof x->trace);
	return n;
}

/* Called about once a second, even while idle: a signal ends the wait. */
static int
on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
    curl_off_t d)
{
	struct xfer *x = arg;

	(void)a, (void)b, (void)c, (void)d;
	// an answer under way is sent whatever comes
	return x->waiting && spirt_serve_stopped();
}

/*
 * One request to the Runtime API: method GET when body is NULL, else
 * POST body[0..n).  The status into *status.
 */
static int
call(struct xfer *x, const char *path, const void *body, size_t n,
    const char *type, const char *errtype, long *status)
{
	struct curl_slist *hd = NULL, *t;
	char url[512], h1[128], h2[128];
	CURLcode cc;
	int rc = 0;

	snprintf(url, sizeof url, "http://%s%s", x->l->api, path);
	cu->easy_reset(x->h);
	cu->easy_setopt(x->h, CURLOPT_URL, url);
	cu->easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http");
	cu->easy_setopt(x->h, CURLOPT_NOPROXY, "*");
	cu->easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
	cu->easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	cu->easy_setopt(x->h, CURLOPT_XFERINFODATA, x);
	cu->easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	cu->easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	cu->easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
	cu->easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	// no CURLOPT_TIMEOUT: the next event may be hours away
	if (body != NULL) {
		snprintf(h1, sizeof h1, "Content-Type: %s", type);
		if ((t = cu->slist_append(hd, h1)) == NULL)
			return ENOMEM;
		hd = t;
		// no "Expect: 100-continue" round trip
		if ((t = cu->slist_append(hd, "Expect:")) == NULL)
			goto nomem;
		hd = t;
		if (errtype != NULL) {
			snprintf(h2, sizeof h2,
			    "Lambda-Runtime-Function-Error-Type: %s", errtype);
			if ((t = cu->slist_append(hd, h2)) == NULL)
				goto nomem;
			hd = t;
		}
		cu->easy_setopt(x->h, CURLOPT_HTTPHEADER, hd);
		cu->easy_setopt(x->h, CURLOPT_POST, 1L);
		cu->easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
		cu->easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)n);
	}
	cc = cu->easy_perform(x->h);
	cu->slist_free_all(hd);
	if (cc == CURLE_ABORTED_BY_CALLBACK)
		return EINTR;
	if (cc != CURLE_OK) {
		rc = cc == CURLE_COULDNT_CONNECT ? ECONNREFUSED :
		    cc == CURLE_OUT_OF_MEMORY ? ENOMEM : EIO;
		return spirt_msgf(x->l->msg, sizeof x->l->msg, rc, "%s: %s",
		    path, cu->easy_strerror(cc));
	}
	cu->easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, status);
	return 0;
nomem:
	cu->slist_free_all(hd);
	return ENOMEM;
}

/* A request id goes into a path: only what Lambda's ids hold. */
static int
id_ok(const char *id)
{
	size_t i;

	if (id[0] == '\0')
		return 0;
	for (i = 0; id[i] != '\0'; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' &&
		    id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9') ||
		    id[i] == '-' || id[i] == '_' || id[i] == '.'))
			return 0;
	return 1;
}

/* Answer invocation x->id with a (or its failure). */
static int
answer(struct xfer *x, struct spirt_faas_ans *a)
{
	char path[256], *s = NULL;
	size_t n;
	long status = 0;
	int rc;

	if (a->code != 0) {
		snprintf(path, sizeof path, API "/invocation/%s/error", x->id);
		if ((rc = spirt_faas_json_lambda_error(&s, &n, a->code,
		    a->msg)) == 0)
			rc = call(x, path, s, n, "application/json",
			    spirt_faas_error_type(a->code), &status);
	} else if (a->rec != NULL) {
		snprintf(path, sizeof path, API "/invocation/%s/response",
		    x->id);
		rc = call(x, path, a->rec, a->len, "application/octet-stream",
		    NULL, &status);
	} else {
		snprintf(path, sizeof path, API "/invocation/%s/response",
		    x->id);
		if ((rc = spirt_faas_json_answer(&s, &n, a, 0)) == 0)
			rc = call(x, path, s, n, "application/json", NULL,
			    &status);
	}
	free(s);
	if (rc != 0)
		return rc;
	if (status == 202) {
		x->l->served++;
		return 0;
	}
	// 400 or 413 (answer too large): this invocation fails, we go on;
	// 500: the Runtime API wants the runtime gone
	if (x->l->warn != NULL && status != 500)
		x->l->warn("%s: status %ld from the Runtime API", path, status);
	if (status >= 500)
		return spirt_msgf(x->l->msg, sizeof x->l->msg, EPROTO,
		    "%s: status %ld", path, status);
	return 0;
}

int
spirt_faas_lambda_setup(void)
{
	int rc;

	if (cu != NULL)
		return 0;
	if ((rc = spirt_curl_load(&cu)) != 0) {
		snprintf(cuerr, sizeof cuerr, "%s", spirt_curl_error());
		return rc;
	}
	if (cu->global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
		return 0;
	snprintf(cuerr, sizeof cuerr, "curl_global_init failed");
	cu = NULL;
	return SPIRT_ENOTSUP;
}

const char *
spirt_faas_lambda_error(void)
{
	return cuerr;
}

int
spirt_faas_lambda_loop(struct spirt_faas_lambda *l)
{
	struct xfer x;
	struct spirt_faas_req req;
	struct spirt_faas_ans ans;
	long status;
	int rc;

	memset(&x, 0, sizeof x);
	x.l = l;
	if ((x.h = cu->easy_init()) == NULL)
		return ENOMEM;
	memset(&ans, 0, sizeof ans);
	for (;;) {
		x.n = 0;
		x.big = 0;
		x.id[0] = x.trace[0] = '\0';
		if (spirt_serve_stopped()) {
			rc = 0;
			break;
		}
		x.waiting = 1;
		rc = call(&x, API "/invocation/next", NULL, 0, NULL, NULL,
		    &status);
		x.waiting = 0;
		if (rc == EINTR && spirt_serve_stopped()) {
			rc = 0;
			break;
		}
		if (rc == 0 && x.big)
			rc = spirt_msgf(l->msg, sizeof l->msg, EPROTO,
			    "next: an event over 8 MiB");
		if (rc == 0 && status != 200)
			rc = spirt_msgf(l->msg, sizeof l->msg, EPROTO,
			    "next: status %ld", status);
		if (rc == 0 && !id_ok(x.id))
			rc = spirt_msgf(l->msg, sizeof l->msg, EPROTO,
			    "next: no valid Lambda-Runtime-Aws-Request-Id");
		if (rc != 0)
			break;
		if (l->trace != NULL)
			l->trace(x.trace[0] != '\0' ? x.trace : NULL);

		spirt_faas_req_init(&req);
		if ((rc = spirt_faas_json(&req, x.body ? x.body : "{}",
		    x.body ? x.n : 2, SPIRT_FAAS_JSON_EVENT)) != 0) {
			ans.code = spirt_exit(rc);
			snprintf(ans.msg, sizeof ans.msg, "%s: event: %s",
			    l->prog ? l->prog : "spirt", req.msg);
			if (l->warn != NULL)
				l->warn("event: %s", req.msg);
		} else {
			l->run(l->arg, &req, &ans);
		}
		rc = answer(&x, &ans);
		spirt_faas_ans_clear(&ans);
		if (rc != 0)
			break;
	}
	free(x.body);
	cu->easy_cleanup(x.h);
	return rc;
}

int
spirt_faas_lambda_init_error(struct spirt_faas_lambda *l, int code,
    const char *msg)
{
	struct xfer x;
	char *s;
	size_t n;
	long status = 0;
	int rc;

	if (cu == NULL)         /* spirt_faas_lambda_setup() failed */
		return spirt_msgf(l->msg, sizeof l->msg, SPIRT_ENOTSUP, "%s",
		    *cuerr ? cuerr : "libcurl not loaded");
	memset(&x, 0, sizeof x);
	x.l = l;
	if ((x.h = cu->easy_init()) == NULL)
		return ENOMEM;
	if ((rc = spirt_faas_json_lambda_error(&s, &n, code, msg)) == 0) {
		rc = call(&x, API "/init/error", s, n, "application/json",
		    spirt_faas_error_type(code), &status);
		free(s);
	}
	if (rc == 0 && status != 202)
		rc = spirt_msgf(l->msg, sizeof l->msg, EPROTO,
		    "/init/error: status %ld", status);
	free(x.body);
	cu->easy_cleanup(x.h);
	return rc;
}
