/* handshake.h - two signed messages make a session (ISC licence) */
#ifndef SPIRT_HANDSHAKE_H
#define SPIRT_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"
#include "trust.h"

/*
 * Two messages, each signed by its sender's identity key and carrying its
 * token, agree ephemeral X25519 keys and make a session (session.h) bound
 * to the whole transcript (docs/protocol.md, "Handshake").
 */

#define SPIRT_HS_BYTES 304              /* a handshake message, no token */
#define SPIRT_HS_MAX (SPIRT_HS_BYTES + SPIRT_TOKEN_BYTES)

/* ---- handshake ---- */

/* Who this side is: identity key, id, and its token (NULL: allowlist). */
struct spirt_self {
	const struct spirt_key *key;
	const char *id;
	const unsigned char *token;     /* SPIRT_TOKEN_BYTES or NULL */
};

/* The initiator's pending handshake: its ephemeral secret, its message. */
struct spirt_hs;

/*
 * Initiator, step 1: the first message, to peer id "peer", into msg (cap
 * >= SPIRT_HS_MAX).  Keep *hs for spirt_hs_finish().  SPIRT_EINVAL if
 * self is inconsistent (bad id, a token for another key, id or run).
 */
SPIRT_MUST_CHECK int spirt_hs_init(struct spirt_hs **hs, unsigned char *msg,
    size_t cap, size_t *len, const struct spirt_self *self,
    const struct spirt_trust *t, const char *peer, uint64_t now)
    SPIRT_NONNULL(1, 2, 4, 5, 6, 7);
/*
 * Responder: check the initiator's message (signature, receiver, run,
 * membership in roles, timestamp within the window and newer than the
 * last accepted from that identity), answer into msg (cap >=
 * SPIRT_HS_MAX) and make the session.  The timestamp is recorded only on
 * success.  The session is unconfirmed until a message from the
 * initiator opens (spirt_session_confirmed).
 */
SPIRT_MUST_CHECK int spirt_hs_respond(struct spirt_session **s,
    unsigned char *msg, size_t cap, size_t *len,
    const struct spirt_self *self, struct spirt_trust *t,
    const unsigned char *in, size_t inlen, uint64_t now, int roles)
    SPIRT_NONNULL(1, 2, 4, 5, 6, 7);
/*
 * Initiator, step 2: check the answer (it must echo our message:
 * SPIRT_EREPLAY otherwise), make the session.  One answer per handshake:
 * a second call returns SPIRT_EREPLAY.
 */
SPIRT_MUST_CHECK int spirt_hs_finish(struct spirt_session **s,
    struct spirt_hs *hs, const struct spirt_trust *t,
    const unsigned char *in, size_t inlen, uint64_t now, int roles)
    SPIRT_NONNULL(1, 2, 3, 4);
/* Zero and free; NULL is fine. */
void spirt_hs_free(struct spirt_hs *hs);

#endif
