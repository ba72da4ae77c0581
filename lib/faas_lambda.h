/* faas_lambda.h - spirt-grad as an AWS Lambda custom runtime (libcurl) */
#ifndef SPIRT_FAAS_LAMBDA_H
#define SPIRT_FAAS_LAMBDA_H

#include "faas.h"

/*
 * The loop of a Lambda custom runtime, over the Runtime API (version
 * 2018-06-01) at AWS_LAMBDA_RUNTIME_API:
 *
 *   GET  /2018-06-01/runtime/invocation/next        no timeout: the
 *        event as the body, its id in Lambda-Runtime-Aws-Request-Id
 *   POST /2018-06-01/runtime/invocation/<id>/response   the answer
 *   POST /2018-06-01/runtime/invocation/<id>/error      a failure:
 *        {"errorMessage":..., "errorType":"Spirt.DataErr",
 *         "stackTrace":[]} and Lambda-Runtime-Function-Error-Type
 *   POST /2018-06-01/runtime/init/error             a start-up failure
 *
 * The event's parameters are read as SPIRT_FAAS_JSON_EVENT.  The answer
 * is the gradient record when the function gives one, else its JSON.
 * Each event's Lambda-Runtime-Trace-Id is handed to l->trace, if set,
 * before the function runs (NULL when the event has none): the tool puts
 * it in _X_AMZN_TRACE_ID, which the library does not touch.
 */
struct spirt_faas_lambda {
	/* in */
	const char *api;        /* host:port of the Runtime API */
	const char *prog;       /* the tool's name, for messages */
	spirt_faas_fn *run;
	void *arg;
	/* the tool's printer, for a refused answer (the loop goes on) */
	void (*warn)(const char *fmt, ...);
	/* the event's trace id, or NULL: called before each invocation */
	void (*trace)(const char *id);
	/* out */
	unsigned long served;   /* invocations answered */
	char msg[256];          /* why the loop or init_error failed */
};

/*
 * Load libcurl (libcurl.so.4, at run time) and start it, once, before any
 * other thread.  Returns 0, or SPIRT_ENOTSUP with the reason in
 * spirt_faas_lambda_error().
 */
SPIRT_MUST_CHECK int spirt_faas_lambda_setup(void);
const char *spirt_faas_lambda_error(void);

/*
 * Serve invocations until spirt_serve_stop() (the tool's SIGINT or
 * SIGTERM handler, lib/serve.h; a wait for the next event is abandoned
 * within a second).  Returns 0 then, or an errno value (ECONNREFUSED:
 * the Runtime API is not there, EPROTO: it broke the protocol) with
 * l->msg; a code of libcurl as EIO.
 */
SPIRT_MUST_CHECK int spirt_faas_lambda_loop(struct spirt_faas_lambda *l)
    SPIRT_NONNULL(1);

/*
 * Report a start-up failure (exit code and message) to
 * /runtime/init/error.  Returns 0 or an errno value with l->msg.
 */
SPIRT_MUST_CHECK int spirt_faas_lambda_init_error(struct spirt_faas_lambda *l,
    int code, const char *msg) SPIRT_NONNULL(1, 3);

#endif
