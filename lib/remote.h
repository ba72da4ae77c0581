/* remote.h - a peer's store over HTTP: credentials and the client */
#ifndef SPIRT_REMOTE_H
#define SPIRT_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "spirt.h"

/*
 * The client side of the HTTP transport (docs/protocol.md, "HTTP
 * transport"), over libcurl: one handshake per session, then one sealed
 * request and one sealed answer per store operation.  Every request has a
 * deadline.  Nothing here prints or exits.
 */

/* HTTP operation codes, first byte of a request's plaintext */
#define SPIRT_OP_GET 1
#define SPIRT_OP_PUT 2
#define SPIRT_OP_DEL 3
#define SPIRT_OP_LIST 4

/*
 * The plaintexts of the wire (docs/protocol.md, "HTTP transport").
 * A request: op (1), flags (1), zero (6), then the value (put) or the key
 * to list after (list).  An answer: op (1), flags (1), status (2, LE),
 * zero (4), the request's counter (8), then the value (get) or the
 * listing (list).
 */
#define SPIRT_REQ_HEAD 8
#define SPIRT_ANS_HEAD 16
#define SPIRT_REQ_NOOVERWRITE 0x1       /* put flag */
#define SPIRT_REQ_STREAM 0x2            /* get: answer as a stream */
#define SPIRT_REQ_WAIT 0x4              /* get: wait for the key (bytes
					 * 4..7: ms, LE) */
#define SPIRT_WAIT_MAX_MS 30000u        /* the longest wait granted */
#define SPIRT_ANS_MORE 0x1              /* list: more keys follow */
/* one listing entry: key length (2), zero (2), value length (8), key */
#define SPIRT_LIST_ENTRY 12
/* answer statuses */
enum {
	SPIRT_ST_OK, SPIRT_ST_NOTFOUND, SPIRT_ST_EXIST, SPIRT_ST_ROLE,
	SPIRT_ST_KEY, SPIRT_ST_TOOBIG, SPIRT_ST_FULL, SPIRT_ST_BUSY,
	SPIRT_ST_ERROR, SPIRT_ST_ADDR, SPIRT_ST_STEP, SPIRT_ST_LAST
};
/* status <-> library code */
int spirt_status_code(unsigned st);
unsigned spirt_code_status(int rc);

/* Default deadline of one request, and of SPIRT_TIMEOUT's parse. */
#define SPIRT_REMOTE_TIMEOUT_MS 30000u
/* Default largest value a client accepts or a server takes: 1 GiB. */
#define SPIRT_REMOTE_MAX_BYTES ((uint64_t)1 << 30)

/* Who we are and whom we trust; filled by the caller or spirt_cred_load. */
struct spirt_cred {
	struct spirt_key *key;          /* our identity (owned) */
	char id[SPIRT_ID_MAX + 1];      /* our id */
	char run[SPIRT_ID_MAX + 1];     /* the run */
	unsigned char token[SPIRT_TOKEN_BYTES];
	int has_token;                  /* 0: allowlist only */
	struct spirt_trust *trust;      /* owned: run, group key, allowlist */
};

/*
 * Where the credentials are: the paths and ids the tool resolved (its
 * options, then SPIRT_KEY, SPIRT_TOKEN, SPIRT_ID, SPIRT_RUN, SPIRT_GROUP
 * and SPIRT_ALLOW: cmd/tool.h's remote_env()).  NULL or "": not given.
 * The library reads no environment variable.
 */
struct spirt_remote_conf {
	const char *key;        /* identity secret key file (0600)   required */
	const char *token;      /* member token file (gives id and run), or */
	const char *id, *run;   /*   the id and the run                      */
	const char *group;      /* group public key file or 64 hex digits, */
	const char *allow;      /*   and/or the allowlist file               */
};

/*
 * Credentials from the files and ids of rc.  Missing or bad: SPIRT_EENV /
 * SPIRT_EKEYPERM / SPIRT_EKEYFILE / errno, with msg naming the file and
 * the variable that names it (SPIRT_KEY, ...).  Flags:
 * SPIRT_CRED_TRUST_OPTIONAL takes neither group nor allow (then c->trust
 * is NULL: for peers reached through store paths, whose digests are
 * checked by signature only).
 */
#define SPIRT_CRED_TRUST_OPTIONAL 0x1
SPIRT_MUST_CHECK int spirt_cred_load(struct spirt_cred **c,
    const struct spirt_remote_conf *rc, unsigned flags, char *msg,
    size_t cap) SPIRT_NONNULL(1, 2, 4);
void spirt_cred_free(struct spirt_cred *c);

/*
 * curl_global_init/cleanup: once, from the tool's main.  libcurl is loaded
 * here (lib/curldl.h), not linked: SPIRT_ENOTSUP when libcurl.so.4 cannot
 * be, and spirt_remote_global_error() says why.
 */
SPIRT_MUST_CHECK int spirt_remote_global_init(void);
const char *spirt_remote_global_error(void);
void spirt_remote_global_cleanup(void);

struct spirt_remote;            /* one server, one session, one thread */

/*
 * url: "http://host:port" or "http://ID@host:port" (ID pins the server's
 * peer id; without it the client asks GET /v1/id and then verifies in the
 * handshake that the server is a member with that id in role peer).
 * timeout_ms: the deadline of each request (connect + transfer), > 0.
 * Handshakes lazily on first use and again when the server has dropped
 * the session.  Returns 0, SPIRT_EURL, or the handshake's refusal code.
 * c must outlive r.
 */
SPIRT_MUST_CHECK int spirt_remote_open(struct spirt_remote **r,
    const char *url, const struct spirt_cred *c, unsigned timeout_ms)
    SPIRT_NONNULL(1, 2, 3);
void spirt_remote_close(struct spirt_remote *r);
/* The server's peer id ("" before the first handshake without a pin). */
const char *spirt_remote_peer(const struct spirt_remote *r) SPIRT_NONNULL(1);
/* Last failure in words (names URL, key, HTTP status or curl error). */
const char *spirt_remote_msg(const struct spirt_remote *r) SPIRT_NONNULL(1);
/* The deadline of each request from now on (> 0; 0 is ignored). */
void spirt_remote_set_timeout(struct spirt_remote *r, unsigned timeout_ms)
    SPIRT_NONNULL(1);
/* Largest answer accepted (default SPIRT_REMOTE_MAX_BYTES plus framing). */
void spirt_remote_set_max(struct spirt_remote *r, uint64_t max_bytes)
    SPIRT_NONNULL(1);
/*
 * cancelled (NULL: none) is asked while a request is under way, about
 * once a second while nothing arrives; non-zero stops it: EINTR.
 */
void spirt_remote_set_cancel(struct spirt_remote *r, int (*cancelled)(void))
    SPIRT_NONNULL(1);
/*
 * The same for one caller: aborted(arg) (aborted NULL: none) is asked as
 * cancelled is, from then on; non-zero stops the request under way:
 * EINTR.  A transfer that trickles, or stops moving, is stopped so
 * within about a second.
 */
void spirt_remote_set_abort(struct spirt_remote *r, int (*aborted)(void *),
    void *arg) SPIRT_NONNULL(1);

/*
 * step: the step the request is for (bound into the sealed message); 0
 * when the key has none (spirt_key_wirestep() in keys.h says which).
 * get returns a malloc'd copy in *val (free()).
 * Codes: 0, SPIRT_ENOTFOUND, SPIRT_EEXIST (put NOOVERWRITE), the
 * server's refusal codes (SPIRT_EROLE for an op the role may not do,
 * SPIRT_EMAC, ...), SPIRT_ETIMEDOUT (deadline), SPIRT_EUNREACH (cannot
 * connect), SPIRT_EPROTO (not a spirt peer / malformed answer), ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_remote_get(struct spirt_remote *r, uint64_t step,
    const char *key, void **val, size_t *len) SPIRT_NONNULL(1, 3, 4, 5);
/*
 * As spirt_remote_get, but a key that is not there yet is waited for, up
 * to wait_ms (the server grants at most 30 s): the server answers as soon
 * as the key is committed, else SPIRT_ENOTFOUND once the wait is over.
 * The request's deadline (spirt_remote_set_timeout) must be longer than
 * the wait.  A server that does not wait answers SPIRT_ENOTFOUND at once.
 */
SPIRT_MUST_CHECK int spirt_remote_get_wait(struct spirt_remote *r,
    uint64_t step, const char *key, unsigned wait_ms, void **val,
    size_t *len) SPIRT_NONNULL(1, 3, 5, 6);
SPIRT_MUST_CHECK int spirt_remote_put(struct spirt_remote *r, uint64_t step,
    const char *key, const void *val, size_t len, unsigned flags)
    SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_remote_del(struct spirt_remote *r, uint64_t step,
    const char *key) SPIRT_NONNULL(1, 3);
/* fn(arg, key, value length) per key under prefix, in key order; fn
 * returning non-zero stops the walk and that is returned. */
SPIRT_MUST_CHECK int spirt_remote_list(struct spirt_remote *r,
    const char *prefix, int (*fn)(void *arg, const char *key, size_t len),
    void *arg) SPIRT_NONNULL(1, 2, 3);

#endif
