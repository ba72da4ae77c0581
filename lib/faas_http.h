/* faas_http.h - spirt-grad served over HTTP (libmicrohttpd) */
#ifndef SPIRT_FAAS_HTTP_H
#define SPIRT_FAAS_HTTP_H

#include "faas.h"

/*
 * The HTTP front end of spirt-grad -F http (spirt-grad(1)), for the
 * OpenFaaS of-watchdog's HTTP mode, Knative, Cloud Run and OpenWhisk:
 *
 *   GET|POST /, /grad/<step>/<worker>   one invocation; parameters from
 *                                        the path, the query and the body
 *   GET /healthz                        200 while the process serves
 *   GET /readyz                         200, or 503 once draining
 *   POST /init                          OpenWhisk: 200 {"OK":true}
 *   POST /run                           OpenWhisk: parameters from the
 *                                        body's "value"; a JSON answer
 *
 * Bodies over SPIRT_FAAS_BODY_MAX bytes get 413 unread.  Requests are
 * served by a thread each (at most SPIRT_FAAS_HTTP_CONN at once) and run
 * one at a time, so health checks answer while a gradient is computed.
 */
#define SPIRT_FAAS_HTTP_CONN 32

struct spirt_faas_http {
	/* in */
	const char *addr;       /* numeric IPv4 or IPv6 address to bind */
	unsigned port;          /* 0: any free port */
	spirt_faas_fn *run;
	void *arg;
	/* out */
	unsigned bound;         /* the port bound */
	unsigned long served;   /* invocations run */
	char msg[160];          /* why start failed */
	void *priv;
};

/*
 * Bind h->addr:h->port and serve in threads of libmicrohttpd.  Returns 0,
 * or an errno value (EADDRINUSE, EACCES, ...) or SPIRT_EINVAL with
 * h->msg.
 */
SPIRT_MUST_CHECK int spirt_faas_http_start(struct spirt_faas_http *h)
    SPIRT_NONNULL(1);

/* Readiness fails from now on (SIGTERM: the runner drains us). */
void spirt_faas_http_drain(struct spirt_faas_http *h) SPIRT_NONNULL(1);

/* Stop accepting, wait for the requests under way, free everything. */
void spirt_faas_http_stop(struct spirt_faas_http *h) SPIRT_NONNULL(1);

#endif
