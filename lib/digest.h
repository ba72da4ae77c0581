/* digest.h - signed per-step digests of peers: equivocation, model checks */
#ifndef SPIRT_DIGEST_H
#define SPIRT_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "spirt.h"

/*
 * A digest is a peer's signed statement about one step t of a run
 * (docs/protocol.md, "Signed digests"): the values' hash (spirt_hash: the
 * SHA-256 tree of lib/vhash.h) of the aggregate it published (the whole
 * value of xagg/<t>/<id>), the hash of the model the step starts from
 * (the whole value of model/<m>@t; with a state, the hash of that hash
 * and mstate/<m>@t's: lib/exchange.c), and the hash of the aggregate it
 * received from every other peer that step,
 * as (peer id, hash) in ascending id order.  It is signed with the peer's
 * identity key and carries the public key and, optionally, the member
 * token that vouches for it, so a digest is checked with nothing but the
 * group public key or the allowlist.
 *
 * Two valid digests by one peer for one step of one run that disagree on
 * the peer's own aggregate (or model) hash are a proof that the peer told
 * two stories (equivocation): spirt_digest_conflict().
 *
 * Wire layout (little-endian, docs/protocol.md):
 *   0 magic "SPDG", 4 version 2, 5 zero, 6 u16 token length (0 or 216),
 *   8 u64 step, 16 u32 entries E, 20 zero, 24 run[32], 56 id[32],
 *   88 pk[32], 120 agg hash[32], 152 model hash[32], 184 token,
 *   then E entries of id[32] hash[32], then the Ed25519 signature of
 *   every byte before it.
 */

#define SPIRT_DIGEST_HEAD 184
#define SPIRT_DIGEST_ENTRY 64
#define SPIRT_DIGEST_MAXPEERS 256       /* entries one digest may hold */

struct spirt_digest_entry {
	char id[SPIRT_ID_MAX + 1];
	unsigned char hash[SPIRT_HASH_BYTES];
};

struct spirt_digest {
	uint64_t step;
	char run[SPIRT_ID_MAX + 1];
	char id[SPIRT_ID_MAX + 1];
	unsigned char pk[SPIRT_PK_BYTES];
	unsigned char agg[SPIRT_HASH_BYTES];    /* own xagg/<t>/<id> */
	unsigned char model[SPIRT_HASH_BYTES];  /* model@t */
	int has_token;
	unsigned char token[SPIRT_TOKEN_BYTES];
	size_t n;                               /* entries */
	struct spirt_digest_entry got[SPIRT_DIGEST_MAXPEERS];
	unsigned char sig[SPIRT_SIG_BYTES];     /* out of open/sign */
};

/*
 * What the signed records of lib/digest.h and lib/xpart.h share (after
 * their own headers): an optional member token, then n entries of id[32]
 * hash[32] in strictly ascending id order, then the signature; and, once
 * opened, the same checks of run, signer, step and membership.
 *
 * spirt_sigrec_put_tail writes the token (if token is not NULL) and the
 * entries at out and returns the bytes written.  spirt_sigrec_get_tail
 * reads them from b (the token into token if has_token) into e, counting
 * those read in *got; SPIRT_EDATA for an id not ascending or equal to
 * not_id (NULL: none), the id's codes for a bad one.
 * spirt_sigrec_check: SPIRT_ERUN, SPIRT_EADDR (peer NULL: any signer),
 * SPIRT_ESTEP, then with t the key a member in role peer under id at now
 * (spirt_trust_member's codes), else 0.
 */
size_t spirt_sigrec_put_tail(unsigned char *out, const unsigned char *token,
    const struct spirt_digest_entry *e, size_t n) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_sigrec_get_tail(const unsigned char *b,
    int has_token, unsigned char *token, struct spirt_digest_entry *e,
    size_t n, const char *not_id, size_t *got) SPIRT_NONNULL(1, 3, 7);
SPIRT_MUST_CHECK int spirt_sigrec_check(const char *run, const char *id,
    uint64_t step, const unsigned char *pk, const unsigned char *token,
    const char *want_run, const char *want_peer, uint64_t want_step,
    const struct spirt_trust *t, uint64_t now) SPIRT_NONNULL(1, 2, 4, 6);

/* Bytes of a digest with n entries and a token or not. */
size_t spirt_digest_size(size_t n, int has_token);

/*
 * Sign d with k into out (cap >= spirt_digest_size(d->n, d->has_token)):
 * sets d->pk from k, sorts d->got by id, fills d->sig.  Returns 0, or
 * SPIRT_EINVAL for a bad run or id, an entry with a bad id, an entry
 * twice or for d->id itself, too many entries, or cap too small.
 */
SPIRT_MUST_CHECK int spirt_digest_sign(unsigned char *out, size_t cap,
    size_t *len, struct spirt_digest *d, const struct spirt_key *k)
    SPIRT_NONNULL(1, 3, 4, 5);

/*
 * Parse a digest and check its signature under the public key it
 * carries.  Refusals: SPIRT_ETRUNC (shorter than its header or than it
 * declares), SPIRT_EDATA (longer, bad field, entries not in strictly
 * ascending id order or naming the signer), SPIRT_EMAGIC, SPIRT_EVERSION,
 * SPIRT_EMAC (signature).  d is filled only as far as it parsed.
 */
SPIRT_MUST_CHECK int spirt_digest_open(struct spirt_digest *d,
    const unsigned char *buf, size_t len) SPIRT_NONNULL(1, 2);

/*
 * spirt_digest_open(), then: for run (SPIRT_ERUN), by peer (SPIRT_EADDR;
 * NULL: any), for step (SPIRT_ESTEP), and the key a member in role peer
 * under that id at time now (token if carried and t has a group key, else
 * the allowlist: spirt_trust_member()'s codes).  t NULL: membership is
 * not checked.
 */
SPIRT_MUST_CHECK int spirt_digest_verify(struct spirt_digest *d,
    const unsigned char *buf, size_t len, const char *run, const char *peer,
    uint64_t step, const struct spirt_trust *t, uint64_t now)
    SPIRT_NONNULL(1, 2, 4);

/* The hash d holds for peer (its own agg for d->id), or NULL. */
const unsigned char *spirt_digest_hash_of(const struct spirt_digest *d,
    const char *peer) SPIRT_NONNULL(1, 2);

/*
 * Whether two opened digests prove equivocation: same run, step, id and
 * public key, and different aggregate (1) or model (2) hashes; 0 if not.
 */
int spirt_digest_conflict(const struct spirt_digest *a,
    const struct spirt_digest *b) SPIRT_NONNULL(1, 2);

/*
 * A digest as text, one "name=value" a line (hashes and keys in hex):
 * step, run, id, key, agg, model, then "got=<id> <hash>" per entry, then
 * sig.  Returns the length it needed (as snprintf), output truncated to
 * cap.
 */
size_t spirt_digest_format(char *buf, size_t cap,
    const struct spirt_digest *d) SPIRT_NONNULL(3);

/* An id as a 32-byte wire field (docs/protocol.md, "Conventions"): the
 * id (valid), then NULs; and back: 0, or SPIRT_EDATA for a field that is
 * not a valid id and NULs only after it.  id has SPIRT_ID_MAX + 1 bytes. */
void spirt_wire_id_put(unsigned char *p, const char *id) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_wire_id_get(char *id, const unsigned char *p)
    SPIRT_NONNULL(1, 2);

/* 64 lowercase hex digits and a NUL for a hash. */
void spirt_hash_hex(char hex[2 * SPIRT_HASH_BYTES + 1],
    const unsigned char h[SPIRT_HASH_BYTES]) SPIRT_NONNULL(1, 2);

#endif
