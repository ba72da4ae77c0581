/* crypto.h - identities, member tokens, handshake and sealed messages */
#ifndef SPIRT_CRYPTO_H
#define SPIRT_CRYPTO_H

#include "handshake.h"
#include "keyfile.h"
#include "session.h"
#include "token.h"
#include "trust.h"

/*
 * The cryptographic ground of spirt-peer, over libsodium.  The wire
 * formats, what each key binds and the threat model are specified in
 * docs/protocol.md; this header is the API, one module a room:
 *
 *   keyfile.h    libsodium's initialisation, ids and roles, identity
 *                keys, signatures, the values' hash, key files;
 *   token.h      member tokens and their files;
 *   trust.h      whom a peer trusts: group key, allowlist, the
 *                handshakes it has seen;
 *   session.h    sessions: sealed and streamed messages, replay window;
 *   handshake.h  the handshake that makes a session.
 *
 * The messages' AEAD and the values' SHA-256 run on the code the build
 * chose (lib/prim.h).
 *
 * Times are uint64_t nanoseconds since the Unix epoch (UTC) everywhere:
 * token expiry, handshake timestamps and every "now" argument, which the
 * caller passes (spirt_crypto_now() reads the clock) so that tests can
 * pick the instant.
 *
 * Ids (a run id, a peer or function id) are 1..SPIRT_ID_MAX bytes of
 * [A-Za-z0-9._-] starting with a letter or digit, so that they can be
 * part of a store key such as "agg/12/p1".
 *
 * Refusals each have their own code (lib/spirt.h): SPIRT_EMAC (a tampered
 * byte, a bad signature or MAC), SPIRT_EREPLAY, SPIRT_ESTALE,
 * SPIRT_EEXPIRED, SPIRT_EUNKNOWNKEY, SPIRT_ERUN, SPIRT_EROLE, SPIRT_EADDR,
 * SPIRT_ESTEP, SPIRT_EWRONGKEY; malformed input is SPIRT_ETRUNC,
 * SPIRT_EMAGIC, SPIRT_EVERSION or SPIRT_EDATA; key files SPIRT_EKEYFILE
 * and SPIRT_EKEYPERM.  Nothing here prints or exits.
 *
 * Objects are not thread-safe: one thread uses a session or a handshake
 * at a time, and one thread changes a trust (its allowlist; a responder's
 * handshake, which records what it saw).  A trust may be looked up from
 * several threads at once (spirt_trust_member, an initiator's handshake,
 * spirt_digest_verify): the exchange's pulling threads do; the one state
 * a lookup changes, the tokens it found good, has its own lock.
 */

#endif
