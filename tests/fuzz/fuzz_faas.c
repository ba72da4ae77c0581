/* fuzz_faas.c - a FaaS invocation's request: query strings, paths, JSON
 * (lib/faas.c, docs/contracts.md "Under a FaaS runner") */
#include "faas.h"
#include "fuzz.h"

/*
 * The first byte picks the entry point: spirt_faas_cgi() (the watchdog's
 * Http_Method, Http_Path, Http_Query, the operand and the body), a bare
 * body, or spirt_faas_json() in each of its three ways.  For the CGI the
 * four strings are 2-byte little-endian lengths then bytes, the rest is
 * the body.  Beyond "no crash": a request parsed is within its bounds and
 * reads back the same from JSON and from a query string written for it,
 * and every refusal's JSON answer is JSON its own reader accepts.
 */
static char *
str(struct fuzz_in *in)
{
	size_t len = fuzz_u16(in), k;
	const uint8_t *p = fuzz_take(in, len, &k);
	char *s = malloc(k + 1);

	FUZZ_ASSERT(s != NULL);
	memcpy(s, p, k);
	s[k] = '\0';            /* an environment string ends at a NUL */
	return s;
}

static void
same(const struct spirt_faas_req *a, const struct spirt_faas_req *b)
{
	FUZZ_ASSERT(a->has == b->has);
	if (a->has & SPIRT_FAAS_STEP)
		FUZZ_ASSERT(a->step == b->step);
	if (a->has & SPIRT_FAAS_WORKER)
		FUZZ_ASSERT(a->worker == b->worker);
	if (a->has & SPIRT_FAAS_MODEL)
		FUZZ_ASSERT(strcmp(a->model, b->model) == 0);
}

/* r, written as JSON and as a query, parses back to r */
static void
reread(const struct spirt_faas_req *r)
{
	struct spirt_faas_req a, b;
	char js[512], q[512];
	size_t jn = 0, qn = 0;

	jn += (size_t)snprintf(js, sizeof js, "{");
	if (r->has & SPIRT_FAAS_STEP) {
		// a JSON number up to 2^63 - 1 (jansson's), a string above
		jn += (size_t)snprintf(js + jn, sizeof js - jn, r->step >
		    INT64_MAX ? "\"step\":\"%llu\"" : "\"step\":%llu",
		    (unsigned long long)r->step);
		qn += (size_t)snprintf(q + qn, sizeof q - qn, "step=%llu&",
		    (unsigned long long)r->step);
	}
	if (r->has & SPIRT_FAAS_WORKER) {
		jn += (size_t)snprintf(js + jn, sizeof js - jn,
		    "%s \"worker\" : \"%lu\"", jn > 1 ? "," : "",
		    (unsigned long)r->worker);
		qn += (size_t)snprintf(q + qn, sizeof q - qn, "worker=%lu&",
		    (unsigned long)r->worker);
	}
	if (r->has & SPIRT_FAAS_MODEL) {
		jn += (size_t)snprintf(js + jn, sizeof js - jn,
		    "%s\"model\":\"%s\"", jn > 1 ? "," : "", r->model);
		qn += (size_t)snprintf(q + qn, sizeof q - qn, "model=%s",
		    r->model);
	}
	jn += (size_t)snprintf(js + jn, sizeof js - jn, "}");
	spirt_faas_req_init(&a);
	spirt_faas_req_init(&b);
	FUZZ_ASSERT(spirt_faas_json(&a, js, jn, SPIRT_FAAS_JSON_FLAT) == 0);
	FUZZ_ASSERT(spirt_faas_query(&b, q, qn) == 0);
	same(r, &a);
	same(r, &b);
}

/* the refusal as the runner gets it: JSON the reader can skip whole */
static void
answer(const char *msg)
{
	struct spirt_faas_req t;
	char *out;
	size_t len;

	FUZZ_ASSERT(spirt_faas_json_error(&out, &len, 64, msg) == 0);
	FUZZ_ASSERT(len > 1 && out[len - 1] == '\n' && strlen(out) == len);
	spirt_faas_req_init(&t);
	FUZZ_ASSERT(spirt_faas_json(&t, out, len, SPIRT_FAAS_JSON_VALUE) ==
	    0 && t.has == 0);
	free(out);
	FUZZ_ASSERT(spirt_faas_json_lambda_error(&out, &len, 65, msg) == 0);
	spirt_faas_req_init(&t);
	FUZZ_ASSERT(spirt_faas_json(&t, out, len, SPIRT_FAAS_JSON_VALUE) ==
	    0);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	struct spirt_faas_req r;
	char *m, *path, *q, *arg;
	unsigned mode = fuzz_u8(&in);
	int rc;

	spirt_faas_req_init(&r);
	switch (mode % 5) {
	case 0:
		m = str(&in);
		path = str(&in);
		q = str(&in);
		arg = str(&in);
		rc = spirt_faas_cgi(&r, mode & 8 ? NULL : m, mode & 16 ? NULL :
		    path, mode & 32 ? NULL : q, mode & 64 ? NULL : arg,
		    (const char *)in.p, in.n);
		free(m);
		free(path);
		free(q);
		free(arg);
		break;
	case 1:
		rc = spirt_faas_body(&r, (const char *)in.p, in.n);
		break;
	default:
		rc = spirt_faas_json(&r, (const char *)in.p, in.n, mode % 5 -
		    2);
		break;
	}
	if (rc == 0) {
		FUZZ_ASSERT((r.has & ~7u) == 0);
		if (r.has & SPIRT_FAAS_STEP)
			FUZZ_ASSERT(r.step <= UINT64_MAX - 1);
		if (r.has & SPIRT_FAAS_WORKER)
			FUZZ_ASSERT(r.worker <= UINT32_MAX - 1);
		if (r.has & SPIRT_FAAS_MODEL)
			FUZZ_ASSERT(r.model[0] != '\0' && strlen(r.model) <
			    sizeof r.model);
		reread(&r);
	} else {
		FUZZ_ASSERT(r.msg[0] != '\0' && strlen(r.msg) < sizeof r.msg);
		answer(r.msg);
	}
	return 0;
}
