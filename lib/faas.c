/* faas.c - spirt-grad under a FaaS runner's contract: requests, answers */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "faas.h"
#include "parse.h"
#include "store.h"

#define JSON_DEPTH 32
#define JSON_VALUES 65536

void
spirt_faas_req_init(struct spirt_faas_req *r)
{
	memset(r, 0, sizeof *r);
}

void
spirt_faas_ans_clear(struct spirt_faas_ans *a)
{
	free(a->rec);
	memset(a, 0, sizeof *a);
}

/* ---- parameters ---- */

/* A decimal number as the warm protocol has it: no sign, no leading 0. */
static int
number(struct spirt_faas_req *r, const char *what, const char *v,
    uint64_t max, uint64_t *out)
{
	size_t i, n = strlen(v);
	int rc;

	for (i = 0; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			break;
	if (n == 0 || i < n || (v[0] == '0' && n > 1))
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
		    "%s \"%.40s\": not a decimal number", what, v);
	if ((rc = spirt_parse_u64(out, v, 0, max)) != 0)
		return spirt_msgf(r->msg, sizeof r->msg, rc,
		    "%s %.40s: out of range 0..%llu", what, v,
		    (unsigned long long)max);
	return 0;
}

static int
setparam(struct spirt_faas_req *r, const char *k, const char *v)
{
	unsigned bit;
	uint64_t x;
	int rc;

	if (strcmp(k, "step") == 0)
		bit = SPIRT_FAAS_STEP;
	else if (strcmp(k, "worker") == 0)
		bit = SPIRT_FAAS_WORKER;
	else if (strcmp(k, "model") == 0)
		bit = SPIRT_FAAS_MODEL;
	else
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
		    "unknown parameter \"%.40s\" (step, worker, model)", k);
	if (r->has & bit)
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
		    "%s given twice", k);
	if (bit == SPIRT_FAAS_STEP) {
		if ((rc = number(r, k, v, UINT64_MAX - 1, &x)) != 0)
			return rc;
		r->step = x;
	} else if (bit == SPIRT_FAAS_WORKER) {
		if ((rc = number(r, k, v, UINT32_MAX - 1, &x)) != 0)
			return rc;
		r->worker = (uint32_t)x;
	} else {
		if (strlen(v) >= sizeof r->model || spirt_name_check(v) != 0)
			return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
			    "model \"%.40s\": a name is 1 to 255 letters, "
			    "digits, '.', '_' or '-'", v);
		memcpy(r->model, v, strlen(v) + 1);
	}
	r->has |= bit;
	return 0;
}

int
spirt_faas_param(struct spirt_faas_req *r, const char *key,
    const char *value)
{
	return setparam(r, key, value);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..n) into buf (cap); -1 if bad or too long. */
static int
urldecode(char *buf, size_t cap, const char *s, size_t n)
{
	size_t i, o = 0;
	int h, l;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if (i + 2 >= n || (h = hexval(s[i + 1])) < 0 ||
			    (l = hexval(s[i + 2])) < 0)
				return -1;
			c = (char)(h << 4 | l);
			i += 2;
		}
		if (c == '\0' || o + 1 >= cap)
			return -1;
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

int
spirt_faas_query(struct spirt_faas_req *r, const char *q, size_t n)
{
	char k[32], v[256];
	size_t i = 0, j, eq;
	int rc;

	if (q == NULL)
		return 0;
	while (i < n) {
		for (j = i; j < n && q[j] != '&'; j++)
			;
		if (j > i) {
			for (eq = i; eq < j && q[eq] != '='; eq++)
				;
			if (eq == j)
				return spirt_msgf(r->msg, sizeof r->msg,
				    SPIRT_EINVAL, "query \"%.*s\": not "
				    "key=value", (int)(j - i > 40 ? 40 :
				    j - i), q + i);
			if (urldecode(k, sizeof k, q + i, eq - i) != 0 ||
			    urldecode(v, sizeof v, q + eq + 1, j - eq - 1))
				return spirt_msgf(r->msg, sizeof r->msg,
				    SPIRT_EINVAL, "query \"%.*s\": bad "
				    "encoding or too long", (int)(j - i > 40 ?
				    40 : j - i), q + i);
			if ((rc = setparam(r, k, v)) != 0)
				return rc;
		}
		i = j + 1;
	}
	return 0;
}

int
spirt_faas_path(struct spirt_faas_req *r, const char *path)
{
	char s[32], w[32];
	const char *p, *slash;
	int rc;

	if (path[0] == '\0' || strcmp(path, "/") == 0)
		return 0;
	if (strncmp(path, "/grad/", 6) != 0)
		goto notfound;
	p = path + 6;
	if ((slash = strchr(p, '/')) == NULL || (size_t)(slash - p) >=
	    sizeof s || strlen(slash + 1) >= sizeof w)
		goto notfound;
	memcpy(s, p, (size_t)(slash - p));
	s[slash - p] = '\0';
	memcpy(w, slash + 1, strlen(slash + 1) + 1);
	if ((rc = setparam(r, "step", s)) != 0 ||
	    (rc = setparam(r, "worker", w)) != 0)
		return rc;
	return 0;
notfound:
	return spirt_msgf(r->msg, sizeof r->msg, SPIRT_ENOTFOUND,
	    "path \"%.60s\": not / or /grad/<step>/<worker>", path);
}

/* ---- JSON, through libjansson: only what a request needs ---- */

static int
jbad(struct spirt_faas_req *r, const char *why)
{
	return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL, "JSON: %s",
	    why);
}

/*
 * jansson's complaint, without its " near '...'": that quotes the
 * sender's bytes, and a message is one line of ours.
 */
static int
jsyntax(struct spirt_faas_req *r, const json_error_t *e)
{
	const char *near = strstr(e->text, " near ");
	int n = near != NULL ? (int)(near - e->text) : (int)strlen(e->text);

	if (json_error_code(e) == json_error_end_of_input_expected)
		return jbad(r, "junk after the object");
	return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
	    "JSON: %.*s at byte %d", n, e->text, e->position);
}

/*
 * Bounds of s[0..n), counted before jansson reads it (strings skipped):
 * containers at most JSON_DEPTH levels below the top one, and at most
 * JSON_VALUES values (its ',' and containers), so that what it allocates
 * stays near the size of the text.  NULL, or what is exceeded.
 */
static const char *
jbounds(const char *s, size_t n)
{
	size_t i, values = 1;
	int d = 0, str = 0;

	for (i = 0; i < n; i++) {
		if (str) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				str = 0;
			continue;
		}
		if (s[i] == '"') {
			str = 1;
		} else if (s[i] == '{' || s[i] == '[') {
			if (++d > JSON_DEPTH + 1)
				return "nested too deep";
			values++;
		} else if (s[i] == '}' || s[i] == ']') {
			d--;
		} else if (s[i] == ',') {
			values++;
		}
		if (values > JSON_VALUES)
			return "more than 65536 values";
	}
	return NULL;
}

/* A parameter's value: a string or an integer; null is none. */
static int
jparam(struct spirt_faas_req *r, const char *key, json_t *v)
{
	char n[32];

	if (strcmp(key, "step") && strcmp(key, "worker") && strcmp(key, "model"))
		return setparam(r, key, "");            // unknown: refused
	if (json_is_null(v))
		return 0;
	if (json_is_string(v))
		return setparam(r, key, json_string_value(v));
	if (json_is_integer(v)) {
		// its decimal text, for number()'s checks: "-1" is refused
		snprintf(n, sizeof n, "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		return setparam(r, key, n);
	}
	if (json_is_real(v))
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
		    "%s %.17g: not a decimal number", key, json_real_value(v));
	return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
	    "%s: a number or a string expected", key);
}

/* The members of object o as parameters, in the document's order. */
static int
jparams(struct spirt_faas_req *r, json_t *o)
{
	const char *k;
	json_t *v;
	int rc;

	json_object_foreach(o, k, v)
		if ((rc = jparam(r, k, v)) != 0)
			return rc;
	return 0;
}

/* o's member name read as parameters: absent or null is none. */
static int
jmember(struct spirt_faas_req *r, json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return jbad(r, "object expected");
	return jparams(r, v);
}

int
spirt_faas_json(struct spirt_faas_req *r, const char *s, size_t n, int how)
{
	json_error_t e;
	json_t *top;
	const char *why;
	size_t i = 0;
	int rc;

	while (s != NULL && i < n && (s[i] == ' ' || s[i] == '\t' ||
	    s[i] == '\n' || s[i] == '\r'))
		i++;
	if (s == NULL || i == n || s[i] != '{')
		return jbad(r, "object expected");
	// jansson seeds its hash of member names (no flooding); a name
	// twice is refused, as a parameter given twice would be
	if ((why = jbounds(s, n)) != NULL)
		return jbad(r, why);
	if ((top = json_loadb(s, n, JSON_REJECT_DUPLICATES, &e)) == NULL)
		return jsyntax(r, &e);
	if (how == SPIRT_FAAS_JSON_VALUE)
		rc = jmember(r, top, "value");
	else if (how == SPIRT_FAAS_JSON_EVENT &&
	    json_object_get(top, "queryStringParameters") != NULL)
		// an API Gateway event holds queryStringParameters; read
		// them there, else the event's own members
		rc = jmember(r, top, "queryStringParameters");
	else
		rc = jparams(r, top);
	json_decref(top);
	return rc;
}

int
spirt_faas_body(struct spirt_faas_req *r, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	    s[i] == '\r'))
		i++;
	if (i == n)
		return 0;
	if (s[i] == '{')
		return spirt_faas_json(r, s, n, SPIRT_FAAS_JSON_FLAT);
	while (n > i && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;            // a form body typed with echo
	if (memchr(s, '\0', n) != NULL)
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
		    "body: a NUL byte (a query string or JSON expected)");
	return spirt_faas_query(r, s + i, n - i);
}

int
spirt_faas_cgi(struct spirt_faas_req *r, const char *method,
    const char *path, const char *query, const char *arg, const char *body,
    size_t n)
{
	int rc;

	if (method != NULL && method[0] != '\0' && strcmp(method, "GET") &&
	    strcmp(method, "POST"))
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EINVAL,
		    "method %.20s: GET or POST", method);
	if (path != NULL && (rc = spirt_faas_path(r, path)) != 0)
		return rc;
	if (query != NULL && (rc = spirt_faas_query(r, query,
	    strlen(query))) != 0)
		return rc;
	if (arg != NULL && (rc = spirt_faas_body(r, arg, strlen(arg))) != 0)
		return rc;
	return body != NULL ? spirt_faas_body(r, body, n) : 0;
}

/* ---- answers ---- */

struct buf {
	char *p;
	size_t n, cap;
	int bad;
};

/* Room for n more bytes and a NUL at b->p + b->n; 0 when out of memory. */
static int
broom(struct buf *b, size_t n)
{
	char *p;
	size_t cap;

	if (b->bad)
		return 0;
	if (b->n + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->bad = 1;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	return 1;
}

static void
bput(struct buf *b, const char *s, size_t n)
{
	if (!broom(b, n))
		return;
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void
bputs(struct buf *b, const char *s)
{
	bput(b, s, strlen(s));
}

/* A JSON string of s, quotes included. */
static void
bstr(struct buf *b, const char *s)
{
	char e[8];

	bputs(b, "\"");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = (char)c;
			bput(b, e, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			snprintf(e, sizeof e, "\\u%04x", c);
			bputs(b, e);
		} else {
			bput(b, (const char *)&c, 1);
		}
	}
	bputs(b, "\"");
}

/* s[0..n) in base64 (RFC 4648, padded), encoded in place. */
static void
b64(struct buf *b, const unsigned char *s, size_t n)
{
	size_t m = sodium_base64_ENCODED_LEN(n,
	    sodium_base64_VARIANT_ORIGINAL);     // its NUL included

	if (!broom(b, m - 1))
		return;
	sodium_bin2base64(b->p + b->n, m, s, n,
	    sodium_base64_VARIANT_ORIGINAL);
	b->n += m - 1;
}

static int
bdone(struct buf *b, char **out, size_t *len)
{
	if (b->bad) {
		free(b->p);
		return ENOMEM;
	}
	*out = b->p;
	*len = b->n;
	return 0;
}

int
spirt_faas_json_error(char **out, size_t *len, int code, const char *msg)
{
	struct buf b = { NULL, 0, 0, 0 };
	char n[32];

	bputs(&b, "{\"error\":");
	bstr(&b, msg);
	snprintf(n, sizeof n, ",\"exit\":%d}\n", code);
	bputs(&b, n);
	return bdone(&b, out, len);
}

int
spirt_faas_json_lambda_error(char **out, size_t *len, int code,
    const char *msg)
{
	struct buf b = { NULL, 0, 0, 0 };

	bputs(&b, "{\"errorMessage\":");
	bstr(&b, msg);
	bputs(&b, ",\"errorType\":");
	bstr(&b, spirt_faas_error_type(code));
	bputs(&b, ",\"stackTrace\":[]}");
	return bdone(&b, out, len);
}

int
spirt_faas_json_answer(char **out, size_t *len,
    const struct spirt_faas_ans *a, int want_record)
{
	struct buf b = { NULL, 0, 0, 0 };
	char n[160];

	if (a->code != 0)
		return spirt_faas_json_error(out, len, a->code, a->msg);
	snprintf(n, sizeof n, "{\"step\":%llu,\"worker\":%lu,\"samples\":%llu,"
	    "\"loss\":%.9g", (unsigned long long)a->step,
	    (unsigned long)a->worker, (unsigned long long)a->samples, a->loss);
	bputs(&b, n);
	if (a->key[0] != '\0') {
		bputs(&b, ",\"key\":");
		bstr(&b, a->key);
	}
	if (want_record && a->rec != NULL) {
		bputs(&b, ",\"record\":\"");
		b64(&b, a->rec, a->len);
		bputs(&b, "\"");
	}
	bputs(&b, "}\n");
	return bdone(&b, out, len);
}

unsigned
spirt_faas_http_status(int code)
{
	switch (code) {
	case SPIRT_EX_OK: return 200;
	case SPIRT_EX_USAGE: return 400;
	case SPIRT_EX_DATAERR: return 422;
	case SPIRT_EX_NOINPUT: return 404;
	case SPIRT_EX_TEMPFAIL: return 503;
	default: return 500;
	}
}

const char *
spirt_faas_error_type(int code)
{
	switch (code) {
	case SPIRT_EX_USAGE: return "Spirt.Usage";
	case SPIRT_EX_DATAERR: return "Spirt.DataErr";
	case SPIRT_EX_NOINPUT: return "Spirt.NoInput";
	case SPIRT_EX_UNAVAILABLE: return "Spirt.Unavailable";
	case SPIRT_EX_OSERR: return "Spirt.OSErr";
	case SPIRT_EX_CANTCREAT: return "Spirt.CantCreat";
	case SPIRT_EX_IOERR: return "Spirt.IOErr";
	case SPIRT_EX_TEMPFAIL: return "Spirt.TempFail";
	default: return "Spirt.Software";
	}
}
