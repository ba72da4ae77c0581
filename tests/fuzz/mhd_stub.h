/* mhd_stub.h - a libmicrohttpd without sockets, for fuzz_peersrv */
#ifndef SPIRT_MHD_STUB_H
#define SPIRT_MHD_STUB_H

#include <stddef.h>
#include <stdint.h>

/*
 * mhd_stub.c defines the libmicrohttpd calls lib/peersrv.c makes.
 * MHD_start_daemon() keeps the request handler and the completion
 * callback it is given, and mhd_stub_request() then calls them as
 * libmicrohttpd does for one request: once with the headers, once per
 * piece of the body, once at its end (a handler that queued an answer
 * before the body gets no more of it; one cannot queue an answer in the
 * middle of a body), again each time it is resumed after the handler
 * suspended it (MHD_resume_connection from another thread), then the
 * completion, each request on a connection of its own (NOTIFY_CONNECTION
 * started before, closed after).  What the
 * handler answered comes back in struct mhd_stub_answer.
 */
struct mhd_stub_header {
	const char *name, *value;
};

struct mhd_stub_answer {
	int queued;             /* an answer was queued, once */
	int dropped;            /* the handler said MHD_NO: connection closed */
	int body_read;          /* bytes of the body handed to the handler */
	int resumes;            /* times it was suspended and resumed */
	unsigned status;
	unsigned char *body;    /* malloc()ed, len bytes */
	size_t len;
	char type[64];          /* its Content-Type */
};

/*
 * One request: method, url, headers (n of them; Content-Length among
 * them if the caller wants one), the body in pieces of at most piece
 * bytes (0: whole).  Fills a (free a->body).  Aborts if no daemon runs.
 */
void mhd_stub_request(struct mhd_stub_answer *a, const char *method,
    const char *url, const struct mhd_stub_header *h, size_t n,
    const unsigned char *body, size_t len, size_t piece);

/* the options the last MHD_start_daemon() was given */
struct mhd_stub_opts {
	unsigned conn_limit, conn_timeout, per_ip_limit;
	size_t mem_limit;
	int running;
};
extern struct mhd_stub_opts mhd_stub_opts;

#endif
