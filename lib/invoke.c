/* invoke.c - a gradient function behind a FaaS gateway, called (libcurl) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "curldl.h"
#include "faas.h"
#include "invoke.h"
#include "io.h"
#include "keys.h"

/*
 * libcurl is loaded at run time (lib/curldl.h), as for the other clients:
 * spirt-invoke is a cold function itself, started once per invocation.
 */
static const struct spirt_curl *cu;
static char cuerr[300];

struct xfer {
	unsigned char *body;
	size_t n, cap, max;
	int big;
	int fnerr;              /* Lambda's X-Amz-Function-Error came */
};

int
spirt_invoke_setup(void)
{
	CURLcode cc;
	int rc;

	if ((rc = spirt_curl_load(&cu)) != 0) {
		snprintf(cuerr, sizeof cuerr, "%s", spirt_curl_error());
		return rc;
	}
	if ((cc = cu->global_init(CURL_GLOBAL_DEFAULT)) != CURLE_OK) {
		snprintf(cuerr, sizeof cuerr, "curl_global_init: %s",
		    cu->easy_strerror(cc));
		return SPIRT_ENOTSUP;
	}
	return 0;
}

const char *
spirt_invoke_error(void)
{
	return cuerr;
}

int
spirt_invoke_open(struct spirt_invoke *v)
{
	v->priv = NULL;
	v->msg[0] = '\0';
	if (strncmp(v->url, "http://", 7) != 0 &&
	    strncmp(v->url, "https://", 8) != 0)
		return spirt_msgf(v->msg, sizeof v->msg, SPIRT_EURL,
		    "not an http:// or https:// URL");
	if (strlen(v->url) > 2048 || strpbrk(v->url, " \t\r\n") != NULL)
		return spirt_msgf(v->msg, sizeof v->msg, SPIRT_EURL,
		    "too long, or a blank in it");
	if (v->token != NULL && (strlen(v->token) > 4096 ||
	    strpbrk(v->token, "\r\n") != NULL))
		return spirt_msgf(v->msg, sizeof v->msg, SPIRT_EINVAL,
		    "the token: over 4096 bytes, or a line break in it");
	if (cu == NULL || (v->priv = cu->easy_init()) == NULL)
		return ENOMEM;
	return 0;
}

void
spirt_invoke_close(struct spirt_invoke *v)
{
	if (v->priv != NULL)
		cu->easy_cleanup(v->priv);
	v->priv = NULL;
}

void
spirt_invoke_ans_clear(struct spirt_invoke_ans *a)
{
	free(a->rec);
	memset(a, 0, sizeof *a);
}

static size_t
on_body(char *p, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;
	size_t n = sz * nm, cap;
	unsigned char *q;

	if (n > x->max - x->n) {
		x->big = 1;
		return 0;
	}
	if (x->n + n > x->cap) {
		cap = x->cap ? x->cap : 4096;
		while (cap < x->n + n)
			cap = cap > x->max / 2 ? x->max : cap * 2;
		if ((q = realloc(x->body, cap)) == NULL)
			return 0;
		x->body = q;
		x->cap = cap;
	}
	memcpy(x->body + x->n, p, n);
	x->n += n;
	return n;
}

static size_t
on_header(char *p, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;
	size_t n = sz * nm;
	static const char h[] = "X-Amz-Function-Error:";

	if (n >= sizeof h - 1 && strncasecmp(p, h, sizeof h - 1) == 0)
		x->fnerr = 1;
	return n;
}

static void
pause_ms(double ms)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ms / 1e3);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* An exit code a function may answer; any other is its bug, 70. */
static int
known_code(json_int_t c)
{
	switch (c) {
	case SPIRT_EX_USAGE: case SPIRT_EX_DATAERR: case SPIRT_EX_NOINPUT:
	case SPIRT_EX_UNAVAILABLE: case SPIRT_EX_SOFTWARE: case SPIRT_EX_OSERR:
	case SPIRT_EX_CANTCREAT: case SPIRT_EX_IOERR: case SPIRT_EX_TEMPFAIL:
		return (int)c;
	default:
		return SPIRT_EX_SOFTWARE;
	}
}

int
spirt_invoke_error_code(const char *type)
{
	static const int codes[] = {
		SPIRT_EX_USAGE, SPIRT_EX_DATAERR, SPIRT_EX_NOINPUT,
		SPIRT_EX_UNAVAILABLE, SPIRT_EX_OSERR, SPIRT_EX_CANTCREAT,
		SPIRT_EX_IOERR, SPIRT_EX_TEMPFAIL
	};
	size_t i;

	for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (strcmp(type, spirt_faas_error_type(codes[i])) == 0)
			return codes[i];
	return SPIRT_EX_SOFTWARE;
}

/* Printable text of s for a message: control bytes as '?'. */
static void
clean(char *dst, size_t cap, const char *s)
{
	size_t i;

	for (i = 0; i + 1 < cap && s[i] != '\0'; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' :
		    s[i];
	dst[i] = '\0';
}

/*
 * A JSON answer: the function's failure ({"error":..,"exit":N}, or
 * Lambda's {"errorMessage":..,"errorType":..}) or its success naming the
 * key it wrote ({"step":..,"worker":..,"key":..}).  1 if it is one of
 * them (*a filled), 0 if not.
 */
static int
json_answer(struct spirt_invoke_ans *a, const struct xfer *x, int ok)
{
	json_t *j, *e, *c, *s, *w, *k;
	json_error_t je;
	int r = 0;

	if (x->n == 0 || x->n > SPIRT_INVOKE_TEXT_MAX || (j = json_loadb(
	    (const char *)x->body, x->n, JSON_REJECT_DUPLICATES, &je)) ==
	    NULL)
		return 0;
	if (!json_is_object(j))
		goto out;
	e = json_object_get(j, "error");
	c = json_object_get(j, "exit");
	if (json_is_string(e) && json_is_integer(c)) {
		a->code = known_code(json_integer_value(c));
		clean(a->msg, sizeof a->msg, json_string_value(e));
		r = a->code != 0;
		goto out;
	}
	e = json_object_get(j, "errorMessage");
	c = json_object_get(j, "errorType");
	if (json_is_string(e) && json_is_string(c) && (x->fnerr || !ok)) {
		a->code = spirt_invoke_error_code(json_string_value(c));
		clean(a->msg, sizeof a->msg, json_string_value(e));
		r = 1;
		goto out;
	}
	s = json_object_get(j, "step");
	w = json_object_get(j, "worker");
	k = json_object_get(j, "key");
	if (ok && !x->fnerr && json_is_integer(s) && json_is_integer(w) &&
	    json_is_string(k) && json_integer_value(s) >= 0 &&
	    json_integer_value(w) >= 0 && json_integer_value(w) <
	    (json_int_t)UINT32_MAX && strlen(json_string_value(k)) <
	    sizeof a->key) {
		a->code = 0;
		a->step = (uint64_t)json_integer_value(s);
		a->worker = (uint32_t)json_integer_value(w);
		clean(a->key, sizeof a->key, json_string_value(k));
		r = 1;
	}
out:
	json_decref(j);
	return r;
}

/* The request's headers; NULL if out of memory. */
static struct curl_slist *
headers(const struct spirt_invoke *v)
{
	struct curl_slist *hd = NULL, *t;
	char auth[4200];
	const char *h[4];
	size_t i, n = 0;

	h[n++] = "Content-Type: application/json";
	h[n++] = "Accept: application/octet-stream, application/json";
	h[n++] = "Expect:";     // no 100-continue round trip
	if (v->as == SPIRT_INVOKE_LAMBDA)
		h[n++] = "X-Amz-Invocation-Type: RequestResponse";
	for (i = 0; i < n; i++) {
		if ((t = cu->slist_append(hd, h[i])) == NULL)
			goto nomem;
		hd = t;
	}
	if (v->token != NULL) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s",
		    v->token);
		t = cu->slist_append(hd, auth);
		memset(auth, 0, sizeof auth);
		if (t == NULL)
			goto nomem;
		hd = t;
	}
	return hd;
nomem:
	cu->slist_free_all(hd);
	return NULL;
}

enum { DONE, RETRY };

/* One attempt within left ms; DONE with *rc, or RETRY with v->msg. */
static int
attempt(struct spirt_invoke *v, struct spirt_invoke_ans *a,
    struct curl_slist *hd, const char *req, double left, int *rc)
{
	struct xfer x = { NULL, 0, 0, v->max, 0, 0 };
	CURL *h = v->priv;
	CURLcode cc;
	long status = 0;

	*rc = 0;
	cu->easy_reset(h);
	cu->easy_setopt(h, CURLOPT_URL, v->url);
	cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	// the gateway is reached directly: no proxy from the environment
	cu->easy_setopt(h, CURLOPT_NOPROXY, "*");
	cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
	cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	cu->easy_setopt(h, CURLOPT_WRITEDATA, &x);
	cu->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	cu->easy_setopt(h, CURLOPT_HEADERDATA, &x);
	cu->easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	cu->easy_setopt(h, CURLOPT_POST, 1L);
	cu->easy_setopt(h, CURLOPT_POSTFIELDS, req);
	cu->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)strlen(req));
	cc = cu->easy_perform(h);
	if (x.big) {
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_ETOOBIG,
		    "an answer over %zu bytes", v->max);
		goto out;
	}
	switch (cc) {
	case CURLE_OK:
		break;
	case CURLE_OPERATION_TIMEDOUT:
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_ETIMEDOUT,
		    "no answer within the deadline (%u ms)", v->deadline_ms);
		goto out;
	case CURLE_OUT_OF_MEMORY:
	case CURLE_WRITE_ERROR:
		*rc = ENOMEM;
		goto out;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_EUNREACH, "%s",
		    cu->easy_strerror(cc));
		free(x.body);
		return RETRY;
	default:
		// a transfer cut: the gateway or the function went away
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_EBUSY, "%s",
		    cu->easy_strerror(cc));
		free(x.body);
		return RETRY;
	}
	cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200 && !x.fnerr && x.n >= 4 &&
	    memcmp(x.body, SPIRT_TENSOR_MAGIC, 4) == 0) {
		a->code = 0;
		a->rec = x.body;
		a->len = x.n;
		return DONE;
	}
	if (json_answer(a, &x, status == 200))
		goto out;
	if (status == 429 || status == 502 || status == 503 ||
	    status == 504 || (status >= 500 && status <= 599)) {
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_EBUSY,
		    "HTTP status %ld", status);
		free(x.body);
		return status == 500 ? DONE : RETRY;
	}
	if (status == 404 || status == 401 || status == 403)
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_EUNREACH,
		    "HTTP status %ld: no such function, or not ours to call",
		    status);
	else
		*rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_EDATA,
		    "HTTP status %ld, %zu bytes: neither a gradient record "
		    "nor a function's JSON answer", status, x.n);
out:
	free(x.body);
	return DONE;
}

int
spirt_invoke_call(struct spirt_invoke *v, struct spirt_invoke_ans *a,
    uint64_t step, uint32_t worker, const char *model)
{
	struct curl_slist *hd;
	char req[400];
	double t0 = spirt_clock(), left, wait = 100;
	int rc = 0;

	memset(a, 0, sizeof *a);
	v->attempts = 0;
	v->msg[0] = '\0';
	// model is a checked name (letters, digits, '.', '_', '-'): no
	// escape needed in a JSON string
	if (spirt_name_check(model) != 0 || snprintf(req, sizeof req,
	    "{\"step\":%llu,\"worker\":%lu,\"model\":\"%s\"}",
	    (unsigned long long)step, (unsigned long)worker, model) >=
	    (int)sizeof req)
		return spirt_msgf(v->msg, sizeof v->msg, SPIRT_EINVAL,
		    "model \"%.40s\": not a model name", model);
	if ((hd = headers(v)) == NULL)
		return ENOMEM;
	for (;;) {
		left = v->deadline_ms - (spirt_clock() - t0) * 1e3;
		if (left < 1) {
			rc = spirt_msgf(v->msg, sizeof v->msg, SPIRT_ETIMEDOUT,
			    "no answer within the deadline (%u ms)%s%s",
			    v->deadline_ms, v->attempts ? "; last: " : "",
			    v->attempts ? v->msg : "");
			break;
		}
		v->attempts++;
		if (attempt(v, a, hd, req, left, &rc) == DONE ||
		    v->attempts > v->retries)
			break;
		left = v->deadline_ms - (spirt_clock() - t0) * 1e3;
		if (left <= wait)
			break;
		pause_ms(wait);
		wait *= 2;
	}
	cu->slist_free_all(hd);
	return rc;
}

int
spirt_invoke_check(struct spirt_tensor *t, const void *rec, size_t len,
    uint64_t step, uint32_t worker, const struct spirt_tensor *model,
    char *msg, size_t cap)
{
	const void *payload;
	int rc;

	if ((rc = spirt_tensor_decode(t, &payload, rec, len, 1)) != 0)
		return spirt_msgrc(msg, cap, rc, "the record");
	if (t->dtype != SPIRT_F32 || t->rank != 1 ||
	    t->dims[0] != model->nelem)
		return spirt_msgf(msg, cap, t->dtype != SPIRT_F32 ?
		    SPIRT_EDTYPE : SPIRT_ESHAPE, "the record: %s, rank %u, "
		    "%llu values; the model's gradient is f32 [%llu]",
		    spirt_dtype_name(t->dtype) ? spirt_dtype_name(t->dtype) :
		    "?", (unsigned)t->rank, (unsigned long long)t->nelem,
		    (unsigned long long)model->nelem);
	if (strcmp(t->name, model->name) != 0)
		return spirt_msgf(msg, cap, SPIRT_EMODEL, "the record: "
		    "another model's (spec \"%.40s\", not \"%.40s\")",
		    t->name, model->name);
	if (t->step != step)
		return spirt_msgf(msg, cap, SPIRT_ESTEP, "the record: step "
		    "%llu, not %llu", (unsigned long long)t->step,
		    (unsigned long long)step);
	if (t->origin != worker)
		return spirt_msgf(msg, cap, SPIRT_EADDR, "the record: another "
		    "worker's (origin %lu, not %lu)",
		    (unsigned long)t->origin, (unsigned long)worker);
	return 0;
}
