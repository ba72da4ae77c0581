/* crypto.h - identities, member tokens, handshake and sealed messages */
#ifndef SPIRT_CRYPTO_H
#define SPIRT_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * The cryptographic ground of spirt-peer, over libsodium only.  The wire
 * formats, what each key binds and the threat model are specified in
 * docs/protocol.md; this header is the API.
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

#define SPIRT_ID_MAX 32
#define SPIRT_PK_BYTES 32               /* Ed25519 public key */
#define SPIRT_PK_HEX (2 * SPIRT_PK_BYTES + 1)
#define SPIRT_TOKEN_BYTES 216           /* a member token */
#define SPIRT_HS_BYTES 304              /* a handshake message, no token */
#define SPIRT_HS_MAX (SPIRT_HS_BYTES + SPIRT_TOKEN_BYTES)
#define SPIRT_MSG_HEAD 128              /* message header before the key */
#define SPIRT_MSG_TAG 16                /* Poly1305 tag */
#define SPIRT_MSG_KEY_MAX 511           /* = SPIRT_KEY_MAX (store.h) */
/* counters more than this far behind the newest are refused as replays */
#define SPIRT_REPLAY_WINDOW 1984

/* roles: a token holds one; "roles" arguments are masks of accepted ones */
#define SPIRT_ROLE_PEER 1
#define SPIRT_ROLE_FUNCTION 2

/* spirt_key_write flags */
#define SPIRT_KEY_NOOVERWRITE 0x1       /* EEXIST (as SPIRT_EOUTPUT) */

/* ---- library ---- */

/* Initialise libsodium (sodium_init); 0, or SPIRT_EBUG if it fails. */
SPIRT_MUST_CHECK int spirt_crypto_init(void);

/* The wall clock, nanoseconds since the Unix epoch. */
uint64_t spirt_crypto_now(void);

/* 1 if s is a valid run, peer or function id, else 0. */
int spirt_id_valid(const char *s);

/* "peer" -> SPIRT_ROLE_PEER, "function" -> SPIRT_ROLE_FUNCTION, else 0. */
int spirt_role_parse(const char *s);
/* "peer", "function" or "?" */
const char *spirt_role_name(int role);

/* ---- identity keys (Ed25519) ---- */

/* A key pair in guarded memory (sodium_malloc), read-only once made. */
struct spirt_key;

/* A fresh key pair.  Free with spirt_key_free(). */
SPIRT_MUST_CHECK int spirt_key_generate(struct spirt_key **k)
    SPIRT_NONNULL(1);
/* The key pair of a 32-byte seed (known-answer tests, key files). */
SPIRT_MUST_CHECK int spirt_key_from_seed(struct spirt_key **k,
    const unsigned char seed[32]) SPIRT_NONNULL(1, 2);
/* Zero and free; NULL is fine. */
void spirt_key_free(struct spirt_key *k);
/* @param pk out: the public key */
void spirt_key_public(unsigned char pk[SPIRT_PK_BYTES],
    const struct spirt_key *k) SPIRT_NONNULL(1, 2);

/*
 * Write the secret key file (docs/protocol.md, "Key files"): mode 0600,
 * atomically (a temporary of mode 0600, fsync, rename or link, fsync of
 * the directory).  With SPIRT_KEY_NOOVERWRITE an existing path is left
 * alone and SPIRT_EOUTPUT(EEXIST) returned.  Failures to create are
 * SPIRT_EOUTPUT(errno).
 */
SPIRT_MUST_CHECK int spirt_key_write(const struct spirt_key *k,
    const char *path, int flags) SPIRT_NONNULL(1, 2);
/*
 * Load a secret key file.  Returns SPIRT_EKEYPERM if group or others have
 * any permission on it (nothing is read), SPIRT_EKEYFILE if it is not a
 * well-formed key file (or its public key does not match its secret),
 * SPIRT_EVERSION for another format version, errno if it cannot be opened.
 */
SPIRT_MUST_CHECK int spirt_key_load(struct spirt_key **k, const char *path)
    SPIRT_NONNULL(1, 2);

/*
 * Detached Ed25519 signatures for records other modules define (signed
 * digests, lib/digest.h); each such record starts with its own magic
 * (docs/protocol.md, "Magic"), so a signature never crosses formats.
 * verify returns 0 or SPIRT_EMAC.
 */
#define SPIRT_SIG_BYTES 64
void spirt_key_sign(unsigned char sig[SPIRT_SIG_BYTES],
    const struct spirt_key *k, const void *msg, size_t len)
    SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_sig_verify(const unsigned char sig[SPIRT_SIG_BYTES],
    const unsigned char pk[SPIRT_PK_BYTES], const void *msg, size_t len)
    SPIRT_NONNULL(1, 2);
/*
 * The hash of values the protocol signs and compares (digests, rounds,
 * catch-up): the SHA-256 tree of lib/vhash.h over len bytes at p, its
 * 32 KiB pieces many at a time.  The digests' version 1 used BLAKE2b-256
 * here, version 2 the SHA-256 of the whole value.
 */
#define SPIRT_HASH_BYTES 32
void spirt_hash(unsigned char out[SPIRT_HASH_BYTES], const void *p,
    size_t len) SPIRT_NONNULL(1);

/* A public key file (mode 0644, atomic) and its reader. */
SPIRT_MUST_CHECK int spirt_pubkey_write(const unsigned char pk[SPIRT_PK_BYTES],
    const char *path) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_pubkey_load(unsigned char pk[SPIRT_PK_BYTES],
    const char *path) SPIRT_NONNULL(1, 2);
/* 64 hex digits <-> public key; parse returns SPIRT_EINVAL on bad text. */
SPIRT_MUST_CHECK int spirt_pubkey_parse(unsigned char pk[SPIRT_PK_BYTES],
    const char *hex) SPIRT_NONNULL(1, 2);
void spirt_pubkey_format(char hex[SPIRT_PK_HEX],
    const unsigned char pk[SPIRT_PK_BYTES]) SPIRT_NONNULL(1, 2);

/* ---- membership ---- */

/* A member as a token or the allowlist vouches for it. */
struct spirt_member {
	char id[SPIRT_ID_MAX + 1];
	char run[SPIRT_ID_MAX + 1];
	unsigned char pk[SPIRT_PK_BYTES];
	int role;                       /* SPIRT_ROLE_* */
	uint64_t issued;                /* 0 from the allowlist */
	uint64_t expires;               /* UINT64_MAX from the allowlist */
};

/*
 * Make a member token: the group key signs run, id, the member's public
 * key, role and the validity [issued, expires).
 * @param tok out: SPIRT_TOKEN_BYTES bytes
 * Returns SPIRT_EINVAL for a bad id or role or expires <= issued.
 */
SPIRT_MUST_CHECK int spirt_token_make(unsigned char tok[SPIRT_TOKEN_BYTES],
    const struct spirt_key *group, const char *run, const char *id,
    const unsigned char pk[SPIRT_PK_BYTES], int role, uint64_t issued,
    uint64_t expires) SPIRT_NONNULL(1, 2, 3, 4, 5);
/*
 * Verify a token against the group public key, for run, at time now, for
 * one of the roles in the mask roles.  On success m (may be NULL) holds
 * what it vouches for.  Refusals: SPIRT_ETRUNC/EDATA (size), SPIRT_EMAGIC,
 * SPIRT_EVERSION, SPIRT_EUNKNOWNKEY (made by another group key),
 * SPIRT_EMAC (signature), SPIRT_ERUN, SPIRT_EEXPIRED, SPIRT_EROLE.
 */
SPIRT_MUST_CHECK int spirt_token_verify(struct spirt_member *m,
    const unsigned char *tok, size_t len,
    const unsigned char group_pk[SPIRT_PK_BYTES], const char *run,
    uint64_t now, int roles) SPIRT_NONNULL(2, 4, 5);
/* Token files (text, docs/protocol.md): format into buf, parse from text. */
SPIRT_MUST_CHECK int spirt_token_format(char *buf, size_t cap, size_t *len,
    const unsigned char tok[SPIRT_TOKEN_BYTES]) SPIRT_NONNULL(1, 3, 4);
SPIRT_MUST_CHECK int spirt_token_parse(unsigned char tok[SPIRT_TOKEN_BYTES],
    const char *text, size_t len) SPIRT_NONNULL(1, 2);
/* Decode a token's fields without verifying it (for display). */
SPIRT_MUST_CHECK int spirt_token_decode(struct spirt_member *m,
    const unsigned char tok[SPIRT_TOKEN_BYTES]) SPIRT_NONNULL(1, 2);

/*
 * What a peer trusts: its run, the group public key (NULL: tokens are not
 * accepted), an allowlist of public keys, the handshake window, and the
 * newest handshake timestamp accepted from each identity.
 */
struct spirt_trust;

/* @param window timestamps further than this from now are stale (ns) */
SPIRT_MUST_CHECK int spirt_trust_new(struct spirt_trust **t, const char *run,
    const unsigned char *group_pk, uint64_t window) SPIRT_NONNULL(1, 2);
void spirt_trust_free(struct spirt_trust *t);
/* Allow pk as id with role; SPIRT_EINVAL if pk or id is already there. */
SPIRT_MUST_CHECK int spirt_trust_allow(struct spirt_trust *t,
    const unsigned char pk[SPIRT_PK_BYTES], const char *id, int role)
    SPIRT_NONNULL(1, 2, 3);
/*
 * Add an allowlist file's members (docs/protocol.md, "Allowlist").  On
 * SPIRT_EKEYFILE or SPIRT_EVERSION, *line (if not NULL) is the 1-based
 * line at fault.
 */
SPIRT_MUST_CHECK int spirt_trust_allow_parse(struct spirt_trust *t,
    const char *text, size_t len, size_t *line) SPIRT_NONNULL(1, 2);
/*
 * Is the holder of pk, calling itself id, a member in role mask roles at
 * time now?  With a group key and a token (tok != NULL), the token decides
 * (spirt_token_verify, then it must name pk and id: SPIRT_EUNKNOWNKEY);
 * otherwise the allowlist does (SPIRT_EUNKNOWNKEY, SPIRT_EROLE).
 */
SPIRT_MUST_CHECK int spirt_trust_member(struct spirt_member *m,
    const struct spirt_trust *t, const unsigned char pk[SPIRT_PK_BYTES],
    const char *id, const unsigned char *tok, uint64_t now, int roles)
    SPIRT_NONNULL(2, 3, 4);

/* ---- handshake ---- */

/* Who this side is: identity key, id, and its token (NULL: allowlist). */
struct spirt_self {
	const struct spirt_key *key;
	const char *id;
	const unsigned char *token;     /* SPIRT_TOKEN_BYTES or NULL */
};

/* The initiator's pending handshake: its ephemeral secret, its message. */
struct spirt_hs;
/* Keys and counters of one established session. */
struct spirt_session;

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

/* ---- messages ---- */

/*
 * Size of a sealed message carrying n bytes under store key: header, key,
 * ciphertext, tag.  0 if key is invalid or the size overflows.
 */
size_t spirt_msg_size(const char *key, size_t n) SPIRT_NONNULL(1);

/* A message's clear header, for routing before it is opened. */
struct spirt_msg_info {
	uint64_t counter;
	uint64_t step;
	char run[SPIRT_ID_MAX + 1];
	char sender[SPIRT_ID_MAX + 1];
	char receiver[SPIRT_ID_MAX + 1];
	char key[SPIRT_MSG_KEY_MAX + 1];
	size_t n;                       /* plaintext bytes */
};
/* Parse (not authenticate) a message's header: ETRUNC, EMAGIC, ... */
SPIRT_MUST_CHECK int spirt_msg_info(struct spirt_msg_info *info,
    const unsigned char *msg, size_t len) SPIRT_NONNULL(1, 2);

/*
 * Seal n bytes of pt for the peer of s, bound to step and store key, into
 * out (cap >= spirt_msg_size(key, n)).  pt may be out + SPIRT_MSG_HEAD +
 * strlen(key) (in place).  EOVERFLOW when the counter is exhausted.
 */
SPIRT_MUST_CHECK int spirt_session_seal(struct spirt_session *s,
    unsigned char *out, size_t cap, size_t *len, uint64_t step,
    const char *key, const void *pt, size_t n)
    SPIRT_NONNULL(1, 2, 4, 6);
/*
 * Open a message from the peer of s that must be for step and store key.
 * The clear header is compared first (SPIRT_ERUN, SPIRT_EADDR, SPIRT_ESTEP,
 * SPIRT_EWRONGKEY), then the counter (SPIRT_EREPLAY), then the tag
 * (SPIRT_EMAC); the counter is marked seen only once the tag is good.  pt
 * (cap >= the plaintext) may be msg + SPIRT_MSG_HEAD + strlen(key).
 */
SPIRT_MUST_CHECK int spirt_session_open(struct spirt_session *s, void *pt,
    size_t cap, size_t *n, uint64_t step, const char *key,
    const unsigned char *msg, size_t len) SPIRT_NONNULL(1, 4, 6, 7);
/*
 * Streamed messages (docs/protocol.md, "Streamed messages"): the header
 * of a sealed message with type 2, then the payload in frames of
 * SPIRT_FRAME_BYTES (the last one shorter), each sealed on its own with
 * its number and a last-frame flag in its associated data, so that a
 * receiver opens each frame as it arrives, and a frame moved, dropped,
 * repeated or cut off is refused.  A stream takes one counter of the
 * session, as a message does.  The state holds no secret: the keys stay
 * in the session, which must outlive it.
 */
#define SPIRT_FRAME_BYTES 65536
#define SPIRT_MSG_SINGLE 1              /* a message's type */
#define SPIRT_MSG_STREAM 2

struct spirt_stream {
	struct spirt_session *s;
	unsigned char ad[SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX + 9];
	size_t hlen;                    /* header and key */
	uint64_t counter, n, frames, next;
	int open;                       /* 1: opening, 0: sealing */
};

/* Frames of a stream of n bytes: ceil(n / SPIRT_FRAME_BYTES), 1 if n=0. */
uint64_t spirt_stream_frames(uint64_t n);
/* Wire size of a stream of n bytes under key; 0 if invalid or too big. */
size_t spirt_stream_size(const char *key, size_t n) SPIRT_NONNULL(1);
/* Plaintext bytes of the next frame; 0 once every frame is done. */
size_t spirt_stream_frame_len(const struct spirt_stream *w)
    SPIRT_NONNULL(1);

/*
 * What the first bytes of a message say, before it is opened: from its
 * first SPIRT_MSG_HEAD bytes, the type (SPIRT_MSG_SINGLE or _STREAM), the
 * length of its header and key, and its whole length.  SPIRT_ETRUNC (fewer
 * bytes), SPIRT_EMAGIC, SPIRT_EVERSION, SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_msg_peek(const unsigned char *m, size_t len,
    int *type, size_t *hlen, uint64_t *total) SPIRT_NONNULL(1, 3, 4, 5);

/*
 * Seal a stream of n bytes for step and store key: the header and key
 * into head (cap >= SPIRT_MSG_HEAD + strlen(key)), *hlen its length;
 * then each frame in turn with spirt_stream_seal_frame, len being
 * spirt_stream_frame_len(w): out gets len + SPIRT_MSG_TAG bytes (pt may be
 * out).  EOVERFLOW when the session's counter is exhausted.
 */
SPIRT_MUST_CHECK int spirt_stream_seal_begin(struct spirt_stream *w,
    struct spirt_session *s, unsigned char *head, size_t cap, size_t *hlen,
    uint64_t step, const char *key, size_t n) SPIRT_NONNULL(1, 2, 3, 5, 7);
SPIRT_MUST_CHECK int spirt_stream_seal_frame(struct spirt_stream *w,
    unsigned char *out, const void *pt, size_t len) SPIRT_NONNULL(1, 2);

/*
 * Open a stream from the peer of s that must be for step and store key.
 * begin checks its header and key (hlen bytes, as spirt_msg_peek says),
 * as spirt_session_open does before it decrypts (format, SPIRT_ERUN,
 * SPIRT_EADDR, SPIRT_ESTEP, SPIRT_EWRONGKEY, the counter: SPIRT_EREPLAY),
 * and gives the payload length; each frame then opens in turn (in:
 * spirt_stream_frame_len(r) + SPIRT_MSG_TAG bytes, pt may be in): SPIRT_EMAC
 * for a changed, moved or foreign frame.  end, after the last frame,
 * marks the counter seen (SPIRT_ETRUNC if frames are missing).  Nothing
 * of a stream may be used before end returns 0.
 */
SPIRT_MUST_CHECK int spirt_stream_open_begin(struct spirt_stream *r,
    struct spirt_session *s, const unsigned char *head, size_t hlen,
    uint64_t step, const char *key, size_t *n) SPIRT_NONNULL(1, 2, 3, 6, 7);
SPIRT_MUST_CHECK int spirt_stream_open_frame(struct spirt_stream *r,
    void *pt, const unsigned char *in, size_t inlen) SPIRT_NONNULL(1, 2, 3);
SPIRT_MUST_CHECK int spirt_stream_open_end(struct spirt_stream *r)
    SPIRT_NONNULL(1);

/*
 * A whole stream in one buffer, for small values and tests: seal n bytes
 * of pt into out (cap >= spirt_stream_size(key, n)); open msg (len bytes:
 * exactly a stream's, else SPIRT_ETRUNC or SPIRT_EDATA) into pt (cap >=
 * the payload), with the checks above.
 */
SPIRT_MUST_CHECK int spirt_stream_seal(struct spirt_session *s,
    unsigned char *out, size_t cap, size_t *len, uint64_t step,
    const char *key, const void *pt, size_t n) SPIRT_NONNULL(1, 2, 4, 6);
SPIRT_MUST_CHECK int spirt_stream_open(struct spirt_session *s, void *pt,
    size_t cap, size_t *n, uint64_t step, const char *key,
    const unsigned char *msg, size_t len) SPIRT_NONNULL(1, 4, 6, 7);

/* The peer this session is with, as its token or the allowlist says. */
const struct spirt_member *spirt_session_peer(const struct spirt_session *s)
    SPIRT_NONNULL(1);
/* 1 once the peer has proved it holds the keys (a message opened). */
int spirt_session_confirmed(const struct spirt_session *s) SPIRT_NONNULL(1);
/* Zero and free; NULL is fine. */
void spirt_session_free(struct spirt_session *s);

#endif
