/* invoke.h - a gradient function behind a FaaS gateway, called (libcurl) */
#ifndef SPIRT_INVOKE_H
#define SPIRT_INVOKE_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "tensor.h"

/*
 * The client side of spirt-grad's runner contracts (spirt-grad(1), Under a
 * runner's contract; spirt-invoke(1)): one invocation is one POST of
 *
 *	{"step":3,"worker":1,"model":"mlp"}
 *
 * to the function's URL, as an OpenFaaS or Knative gateway forwards it to
 * spirt-grad -F http (SPIRT_INVOKE_HTTP), or as Lambda's Invoke API
 * (POST .../2015-03-31/functions/NAME/invocations, RequestResponse) hands
 * it to spirt-grad -F lambda as its event (SPIRT_INVOKE_LAMBDA).  The
 * answer is the gradient record (the function runs with -o -), a JSON
 * success naming the key the function wrote itself, or a failure: the
 * JSON error with its exit code, Lambda's errorType, or an HTTP status.
 * Everything the endpoint answers is untrusted: its size is bounded, and
 * spirt_invoke_check() checks a record before it is used.
 */
#define SPIRT_INVOKE_HTTP   1
#define SPIRT_INVOKE_LAMBDA 2

/* An answer that is not a record (JSON, an error page): at most 64 KiB. */
#define SPIRT_INVOKE_TEXT_MAX 65536

struct spirt_invoke {
	/* in */
	const char *url;        /* http:// or https:// */
	int as;                 /* SPIRT_INVOKE_* */
	unsigned deadline_ms;   /* one invocation, its retries included */
	unsigned retries;       /* more attempts where safe */
	const char *token;      /* a bearer token, or NULL */
	size_t max;             /* the largest answer taken (a record) */
	/* out */
	unsigned attempts;      /* of the last call */
	char msg[320];          /* why the last call failed */
	void *priv;
};

/* One invocation's answer. */
struct spirt_invoke_ans {
	int code;               /* the function's exit code, 0: success */
	unsigned char *rec;     /* the record answered (malloc()ed), or */
	size_t len;
	char key[64];           /* the key the function says it wrote */
	uint64_t step;          /* the JSON success's step and worker */
	uint32_t worker;
	char msg[320];          /* the function's error message */
};

/*
 * Load libcurl (libcurl.so.4, at run time) and start it, once, before any
 * other thread.  Returns 0, or SPIRT_ENOTSUP with the reason in
 * spirt_invoke_error().
 */
SPIRT_MUST_CHECK int spirt_invoke_setup(void);
const char *spirt_invoke_error(void);

/* Ready v for calls (v's in fields set).  0, SPIRT_EURL or ENOMEM. */
SPIRT_MUST_CHECK int spirt_invoke_open(struct spirt_invoke *v)
    SPIRT_NONNULL(1);
void spirt_invoke_close(struct spirt_invoke *v) SPIRT_NONNULL(1);

/*
 * Invoke the function for (step, worker, model).  An attempt that got no
 * answer (no connection, the gateway's 429, 502, 503 or 504, a transfer
 * cut) is made again after a pause, at most v->retries times, while the
 * deadline allows: the same (step, worker) computes the same bytes, so a
 * second run does no harm.  Returns 0 with *a filled (a->code says how
 * the function ended), or: SPIRT_ETIMEDOUT (no answer within the
 * deadline), SPIRT_EUNREACH (no connection, or the gateway has no such
 * function: 404, 401, 403), SPIRT_EBUSY (still 5xx after the retries),
 * SPIRT_ETOOBIG (over v->max), SPIRT_EDATA (an answer that is none of
 * the forms above), ENOMEM; with v->msg.
 */
SPIRT_MUST_CHECK int spirt_invoke_call(struct spirt_invoke *v,
    struct spirt_invoke_ans *a, uint64_t step, uint32_t worker,
    const char *model) SPIRT_NONNULL(1, 2, 5);

/* Free a's record and clear it. */
void spirt_invoke_ans_clear(struct spirt_invoke_ans *a) SPIRT_NONNULL(1);

/*
 * Check the gradient record rec[0..len) of (step, worker) against the
 * model's header (its spec in name, its parameter count in nelem):
 * checksums, f32 [P], the spec, the step, origin worker.  Fills *t.
 * Returns 0, or the decoder's code, SPIRT_EDTYPE, SPIRT_ESHAPE,
 * SPIRT_EMODEL, SPIRT_ESTEP or SPIRT_EADDR with msg (cap bytes).
 */
SPIRT_MUST_CHECK int spirt_invoke_check(struct spirt_tensor *t,
    const void *rec, size_t len, uint64_t step, uint32_t worker,
    const struct spirt_tensor *model, char *msg, size_t cap)
    SPIRT_NONNULL(1, 2, 6, 7);

/* The exit code of a Lambda errorType ("Spirt.NoInput": 66); 70 if none. */
int spirt_invoke_error_code(const char *type) SPIRT_NONNULL(1);

#endif
