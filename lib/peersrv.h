/* peersrv.h - a peer's store served over HTTP (spirt-peer serve) */
#ifndef SPIRT_PEERSRV_H
#define SPIRT_PEERSRV_H

#include <stddef.h>
#include <stdint.h>

#include "remote.h"
#include "store.h"

/*
 * The server side of the HTTP transport (docs/protocol.md, "HTTP
 * transport"), over libmicrohttpd: one thread of its own answers every
 * request, so the store, the sessions and the counters are touched by it
 * alone.  Refusals are answered with an HTTP status and a one-line reason,
 * counted, and passed to the log callback; the server keeps serving.
 * Nothing here prints or exits.
 */

struct spirt_peersrv_conf {
	struct spirt_store *store;      /* served; outlives the server */
	const char *path;               /* its directory, watched for waits
					 * (NULL: gets that wait ask the
					 * store again every 2 ms) */
	const struct spirt_cred *cred;  /* our key, id, run, token, trust */
	const char *listen;             /* "addr:port", "[v6]:port"; port 0
					 * picks a free one */
	uint64_t max_bytes;             /* largest value taken or given */
	unsigned max_sessions;          /* session table size */
	unsigned idle_s;                /* a session unused this long ends */
	unsigned max_conns;             /* connections at once */
	/* the limits of spirt-peer(1), each 0 for its default: */
	unsigned per_ip;                /* connections at once from one
					 * address (0: no limit but max_conns) */
	unsigned conn_timeout_s;        /* an idle connection closes (0: 60) */
	double rate;                    /* sealed requests a second from one
					 * member, bursts of twice that (at
					 * least 2); 0: no limit */
	/* level 0: a refusal; 1: a request served (verbose).  One line, no
	 * newline, without the program name.  Called from the server's
	 * thread. */
	void (*log)(void *arg, int level, const char *line);
	void *logarg;
};

struct spirt_peersrv;

/*
 * Listen and serve in a thread until spirt_peersrv_stop().  Returns 0,
 * SPIRT_EINVAL (a bad listen address, msg says), errno (cannot listen:
 * EADDRINUSE, ...), ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_peersrv_start(struct spirt_peersrv **srv,
    const struct spirt_peersrv_conf *conf, char *msg, size_t cap)
    SPIRT_NONNULL(1, 2, 3);
/* "addr:port" as bound (the port picked when asked for 0). */
const char *spirt_peersrv_addr(const struct spirt_peersrv *srv)
    SPIRT_NONNULL(1);

/* What the server did: requests answered, refusals by code. */
struct spirt_peersrv_stats {
	uint64_t served, refused;
	uint64_t by_code[SPIRT_ELAST - SPIRT_EOF];      /* [rc - SPIRT_EOF] */
};
/* Stop listening, end the thread, free; *st (may be NULL) the totals. */
void spirt_peersrv_stop(struct spirt_peersrv *srv,
    struct spirt_peersrv_stats *st);

/*
 * May a member of role (SPIRT_ROLE_*) do op on key (for a listing, the
 * prefix)?  0 or SPIRT_EROLE.  *noover (out): a put must not replace a
 * different value.  The rules are spirt-peer(1)'s.
 */
int spirt_peersrv_allowed(int role, int op, const char *key, int *noover)
    SPIRT_NONNULL(3, 4);
/*
 * spirt_peersrv_allowed() for the member of id in role at the peer self:
 * a member puts its own beat/<id> and no other member's (spirt-beat(1)),
 * SPIRT_EROLE; a function puts grad/<t>/<w> only for a worker w its id
 * binds at self (spirt_fn_binding(): "self.w<first>[-<last>]"), else
 * SPIRT_EADDR.  0, SPIRT_EROLE or SPIRT_EADDR.  The server then holds
 * such a put to the store (docs/protocol.md, "Authorisation"): t the
 * newest version of a model (else SPIRT_ESTEP), w a worker with samples
 * under the assignment (else SPIRT_EADDR), never replacing different
 * bytes (SPIRT_EEXIST).
 */
int spirt_peersrv_member_allowed(int role, const char *self, const char *id,
    int op, const char *key, int *noover) SPIRT_NONNULL(2, 3, 5, 6);
/*
 * May a function's gradient for worker w of step t be written in txn?
 * t must be the newest version of a model in the store (the step
 * computed now: not one spent, not one to come), and w a worker that
 * reads samples under the assignment of a data set of the store (not a
 * dead one, not one beyond the workers).  0, SPIRT_ESTEP, SPIRT_EADDR,
 * store errors.  (These three are lib/peerauth.c.)
 */
int spirt_peersrv_slot_check(struct spirt_txn *txn, uint64_t t, uint32_t w)
    SPIRT_NONNULL(1);

#endif
