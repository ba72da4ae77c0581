/* faas.h - spirt-grad under a FaaS runner's contract: requests, answers */
#ifndef SPIRT_FAAS_H
#define SPIRT_FAAS_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * One invocation's request, whatever the runner (spirt-grad(1), FAAS):
 * its parameters come from a query string ("step=3&worker=1&model=mlp":
 * OpenFaaS's Http_Query, an HTTP request's query or form body), a path
 * ("/grad/3/1"), or a JSON object ({"step":3,"worker":"1"}: OpenWhisk's
 * argument or /run "value", a Lambda event or its queryStringParameters).
 * Only step, worker and model are parameters: the rest of the function's
 * set-up (store, batch, seed, data set) is the deployment's, in options or
 * SPIRT_* variables.  A parameter may be given once, across all sources.
 */
#define SPIRT_FAAS_BODY_MAX 65536       /* a request body: parameters only */

#define SPIRT_FAAS_STEP   0x1
#define SPIRT_FAAS_WORKER 0x2
#define SPIRT_FAAS_MODEL  0x4

struct spirt_faas_req {
	uint64_t step;
	uint32_t worker;
	char model[256];
	unsigned has;           /* SPIRT_FAAS_* of the parameters given */
	char msg[160];          /* why a request was refused */
};

/* Clear r: no parameter given. */
void spirt_faas_req_init(struct spirt_faas_req *r) SPIRT_NONNULL(1);

/*
 * Add the parameters of q[0..n) to r: a query string, "&"-separated
 * key=value pairs, %XX and '+' decoded.  Returns 0, or SPIRT_EINVAL (or
 * ERANGE) with the reason in r->msg: an unknown key, a key given twice, a
 * bad number (decimal, no sign, no leading zero; a step at most 2^64 - 2,
 * a worker 2^32 - 2) or model name.
 */
SPIRT_MUST_CHECK int spirt_faas_query(struct spirt_faas_req *r,
    const char *q, size_t n) SPIRT_NONNULL(1);

/* Add one parameter key = value (decoded), checked as above. */
SPIRT_MUST_CHECK int spirt_faas_param(struct spirt_faas_req *r,
    const char *key, const char *value) SPIRT_NONNULL(1, 2, 3);

/*
 * Add the parameters a request path names: "" and "/" name none,
 * "/grad/<step>/<worker>" (the key the gradient has in a store) name
 * both.  Returns 0, SPIRT_ENOTFOUND for any other path, or as above.
 */
SPIRT_MUST_CHECK int spirt_faas_path(struct spirt_faas_req *r,
    const char *path) SPIRT_NONNULL(1, 2);

/* Where spirt_faas_json() finds the parameters in a JSON document. */
#define SPIRT_FAAS_JSON_FLAT   0        /* the object's own members */
#define SPIRT_FAAS_JSON_VALUE  1        /* its "value" member (OpenWhisk /run) */
#define SPIRT_FAAS_JSON_EVENT  2        /* the object's own, or its
                                         * "queryStringParameters" when it
                                         * has one (API Gateway, function
                                         * URL events) */

/*
 * Add the parameters of the JSON object in s[0..n) (RFC 8259, read by
 * libjansson; at most 32 levels deep and 65536 values, no member name
 * twice in an object),
 * found as how says.  A parameter's value is an integer or a string (of
 * digits for step and worker); null counts as absent.  A step above
 * 2^63 - 1 is a string: jansson's integers are signed 64-bit.  Other
 * members are refused where parameters are read, and ignored elsewhere.
 */
SPIRT_MUST_CHECK int spirt_faas_json(struct spirt_faas_req *r,
    const char *s, size_t n, int how) SPIRT_NONNULL(1);

/*
 * A request body: nothing for an empty one (or only white space), JSON
 * (SPIRT_FAAS_JSON_FLAT) when it starts with '{', else a query string.
 */
SPIRT_MUST_CHECK int spirt_faas_body(struct spirt_faas_req *r,
    const char *s, size_t n) SPIRT_NONNULL(1);

/*
 * The request of a process started per invocation (OpenFaaS's classic
 * watchdog, OpenWhisk's docker skeleton): method (Http_Method: GET, POST
 * or NULL), path (Http_Path, or NULL), query (Http_Query, or NULL), arg
 * (the operand: JSON when it starts with '{', else a query string; or
 * NULL) and the body read from standard input.
 */
SPIRT_MUST_CHECK int spirt_faas_cgi(struct spirt_faas_req *r,
    const char *method, const char *path, const char *query,
    const char *arg, const char *body, size_t n) SPIRT_NONNULL(1);

/* One invocation's answer, filled by the function (spirt_faas_fn). */
struct spirt_faas_ans {
	int code;               /* the cold invocation's exit code, 0 ok */
	char msg[320];          /* its message, when code != 0 */
	uint64_t step;
	uint32_t worker;
	uint64_t samples;
	double loss;
	char key[64];           /* the store key written, or "" */
	unsigned char *rec;     /* the gradient record, when it is the */
	size_t len;             /* answer (malloc()ed; ans_clear frees) */
};

typedef void spirt_faas_fn(void *arg, const struct spirt_faas_req *req,
    struct spirt_faas_ans *ans);

/* Free a's record and clear it for the next invocation. */
void spirt_faas_ans_clear(struct spirt_faas_ans *a) SPIRT_NONNULL(1);

/*
 * The answer as one JSON object and a newline, into *out (malloc()ed,
 * *len bytes, NUL terminated):
 *   {"step":3,"worker":1,"samples":64,"loss":2.30258,"key":"grad/3/1"}
 * with "record":"<base64>" instead of "key" when want_record and a holds
 * one; or for a failure
 *   {"error":"spirt-grad: model/mlp@9: not found","exit":66}
 * Returns 0 or ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_faas_json_answer(char **out, size_t *len,
    const struct spirt_faas_ans *a, int want_record) SPIRT_NONNULL(1, 2, 3);

/* A JSON error object and newline for code and msg, as above. */
SPIRT_MUST_CHECK int spirt_faas_json_error(char **out, size_t *len,
    int code, const char *msg) SPIRT_NONNULL(1, 2, 4);

/*
 * The error document of Lambda's Runtime API for code and msg:
 *   {"errorMessage":"...","errorType":"Spirt.NoInput","stackTrace":[]}
 */
SPIRT_MUST_CHECK int spirt_faas_json_lambda_error(char **out, size_t *len,
    int code, const char *msg) SPIRT_NONNULL(1, 2, 4);

/*
 * The HTTP status of an exit code: 0 200, 64 400, 65 422, 66 404, 75 503,
 * other failures 500.
 */
unsigned spirt_faas_http_status(int code);

/* "Spirt.DataErr" and so on: a Lambda errorType for an exit code. */
const char *spirt_faas_error_type(int code);

#endif
