/* xpart.h - the partitioned exchange: parts, their signed records, a round */
#ifndef SPIRT_XPART_H
#define SPIRT_XPART_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "digest.h"
#include "spirt.h"
#include "store.h"

struct spirt_exchange;
struct spirt_agg_params;

/*
 * The partitioned exchange (spirt-peer(1) exchange --parts,
 * docs/protocol.md "The partitioned exchange"): the P members of a round
 * in ascending id order, member i owns part i of the vector, the n
 * floats of the aggregate cut as spirt_xpart_span() says.  Each member
 * cuts its published aggregate into P slices and signs an input record
 * (kind 1) naming the hash of each; the owner of part k pulls slice k
 * of every other member, checks it against its signer's record,
 * combines the P slices with the round's rule and signs a result record
 * (kind 2) naming one hash of the inputs it combined and the hash of the
 * result; every member then pulls every other owner's combined part,
 * checks it against the owner's record, and the record's inputs' hash
 * against the one it computes from the inputs' records; the members drawn
 * to check a part (x->check of them, from the hash of the P input
 * records' signatures) pull its P slices, combine them again and compare
 * with the owner's signed result; then every member assembles gagg/<t>.
 *
 * Record layout (little-endian), a u8 record in the store:
 *   0 magic "SPXP", 4 version 2, 5 kind (1 inputs, 2 result, 3 cover),
 *   6 u16 token length (0 or 216), 8 u64 step, 16 u32 parts P,
 *   20 u32 index (the signer's position among the P members; a
 *   cover: the part covered, the signer at index + 1 mod P), 24 run[32],
 *   56 id[32], 88 pk[32], 120 u64 n (floats of the whole vector),
 *   128 model hash[32], 160 hash[32] (kind 1: of the whole aggregate
 *   xagg/<t>/<id>; kinds 2 and 3: of the combined part), then
 *   kind 1: 192 token, then P entries id[32] hash[32] in strictly
 *   ascending id order, the signer's at index, entry i the hash of
 *   slice i, xslice/<t>/<id i>;
 *   kinds 2 and 3: 192 members[32] (spirt_xpart_members()), 224
 *   inputs[32] (spirt_xpart_inputs(): one hash of the P (id, slice
 *   hash) it combined, not the P entries: every member holds the P
 *   input records, so it recomputes it), 256 token;
 *   then the Ed25519 signature of every byte before it.  Version 1
 *   (kinds 2 and 3 with P entries too) is refused: SPIRT_EVERSION.
 */

#define SPIRT_XPART_VERSION 2
#define SPIRT_XPART_HEAD 192
/* a result's or cover's header: the members' and inputs' hashes after
 * the common 192 bytes */
#define SPIRT_XPART_RESHEAD (SPIRT_XPART_HEAD + 2 * SPIRT_HASH_BYTES)
#define SPIRT_XPART_ENTRY 64
#define SPIRT_XPART_MAXPARTS (SPIRT_DIGEST_MAXPEERS + 1)

/* kind 3, a cover: the member after the owner of part index (in the
 * ring of members) combined it for the owner, which did not publish its
 * result before the deadline; the signer is member (index + 1) mod P,
 * its members', inputs' and part's hashes those of a result record */
enum {
	SPIRT_XPART_INPUTS = 1, SPIRT_XPART_RESULT = 2, SPIRT_XPART_COVER = 3
};

struct spirt_xpart_rec {
	int kind;                       /* SPIRT_XPART_INPUTS, ... */
	uint64_t step;
	uint32_t parts, index;
	uint64_t n;
	char run[SPIRT_ID_MAX + 1];
	char id[SPIRT_ID_MAX + 1];
	unsigned char pk[SPIRT_PK_BYTES];
	unsigned char model[SPIRT_HASH_BYTES];
	unsigned char hash[SPIRT_HASH_BYTES];
	int has_token;
	unsigned char token[SPIRT_TOKEN_BYTES];
	/* kinds 2 and 3: the hash of the P members' ids and of the P
	 * inputs combined (spirt_xpart_members(), spirt_xpart_inputs()) */
	unsigned char members[SPIRT_HASH_BYTES];
	unsigned char inputs[SPIRT_HASH_BYTES];
	/* kind 1: the P entries (member id, hash of its slice i) */
	struct spirt_digest_entry e[SPIRT_XPART_MAXPARTS];
	unsigned char sig[SPIRT_SIG_BYTES];
};

/* Part k of parts over n floats: floats [off, off + len), off =
 * floor(k n / parts) (computed without overflow for any n < 2^64). */
void spirt_xpart_span(uint64_t n, size_t parts, size_t k, uint64_t *off,
    uint64_t *len) SPIRT_NONNULL(4, 5);

/* Bytes of a record of kind over parts members, with a token or not
 * (kind 1: 256 + 64 parts, and 216 with a token; kinds 2 and 3: 320,
 * whatever parts). */
size_t spirt_xpart_rec_size(int kind, size_t parts, int has_token);

/*
 * The members' hash a result or cover record names: the hash (spirt_hash)
 * of the parts ids in order, 32 bytes each as on the wire (NUL-padded).
 * The inputs' hash: of the parts entries (id[32] hash[32], 64 bytes
 * each, in member order) as a kind 1 record lays them out, entry i the
 * hash of the slice of the part that member i's input record names.
 * ids (e's) must be valid ids (spirt_id_valid).  Both return 0 or
 * ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_xpart_members(unsigned char out[SPIRT_HASH_BYTES],
    const char *const *ids, size_t parts) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_xpart_inputs(unsigned char out[SPIRT_HASH_BYTES],
    const struct spirt_digest_entry *e, size_t parts) SPIRT_NONNULL(1, 2);

/*
 * Sign r with k into out (cap >= spirt_xpart_rec_size()): sets r->pk,
 * fills r->sig.  Returns 0, or SPIRT_EINVAL for a bad kind, run or id,
 * parts 0 or above SPIRT_XPART_MAXPARTS, index not below parts, (kind 1)
 * entries not valid ids in strictly ascending order or the entry at
 * index not the signer, or cap too small.  Kinds 2 and 3 sign the
 * r->members and r->inputs given (r->e unused).
 */
SPIRT_MUST_CHECK int spirt_xpart_rec_sign(unsigned char *out, size_t cap,
    size_t *len, struct spirt_xpart_rec *r, const struct spirt_key *k)
    SPIRT_NONNULL(1, 3, 4, 5);

/*
 * Parse a record and check its signature under the key it carries.
 * Refusals: SPIRT_ETRUNC, SPIRT_EDATA (longer than it declares, a bad
 * field, entries not ascending or not naming the signer at index),
 * SPIRT_EMAGIC, SPIRT_EVERSION (a version other than 2: of an older
 * spirt), SPIRT_EMAC.  A result or cover record names no member ids:
 * that its signer is the member at its index (at index + 1 for a cover)
 * is checked against the round, with its members' hash.
 */
SPIRT_MUST_CHECK int spirt_xpart_rec_open(struct spirt_xpart_rec *r,
    const unsigned char *buf, size_t len) SPIRT_NONNULL(1, 2);

/*
 * spirt_xpart_rec_open(), then: run (SPIRT_ERUN), signer peer
 * (SPIRT_EADDR), step (SPIRT_ESTEP), and the key a member in role peer
 * under that id at time now (t NULL: not checked), as
 * spirt_digest_verify().
 */
SPIRT_MUST_CHECK int spirt_xpart_rec_verify(struct spirt_xpart_rec *r,
    const unsigned char *buf, size_t len, const char *run, const char *peer,
    uint64_t step, const struct spirt_trust *t, uint64_t now)
    SPIRT_NONNULL(1, 2, 4, 5);

/*
 * A member's verdict (xpart/<t>/verdict, the bytes of its u8 record: buf,
 * n of them): "members=<ids>\nbad=<k>\n" or "...\nbad=\n", whose first
 * line is members (mlen bytes, without its newline).  *bad: k, below
 * parts, or -1 for none.  Returns 0, SPIRT_ERUN (another members line:
 * of another round) or SPIRT_EDATA (not a verdict).
 */
SPIRT_MUST_CHECK int spirt_xpart_verdict_parse(const void *buf, size_t n,
    const char *members, size_t mlen, long *bad, size_t parts)
    SPIRT_NONNULL(3, 5);

/* The rule's parameters as a proof names them, one line of text
 * (lib/xproof.c reads them back). */
void spirt_xpart_params_text(char *buf, size_t cap,
    const struct spirt_agg_params *p) SPIRT_NONNULL(1, 3);

/*
 * Check a proof that a part's owner (or the member covering it) signed a
 * combination its signed inputs do not make: text (len bytes), what
 * spirt-peer exchange prints on catching it (docs/protocol.md "Checked
 * owners"): a comment line "# step ...", the result record in hex, then
 * a comment line and the hex of each of the P input records, the rule's
 * parameters, cclip's centre (hex, empty for the others) and each of the
 * P slices of the part.  Checks every record's signature (and, with tr,
 * that its signer is a member in role peer at now), that they are of one
 * round and the result names the slices each member signed, that each
 * slice is the one its member's record names, and combines them again
 * with the rule in a transaction of s that it undoes.  Returns 0 when
 * the combination is not the part the result record names (the proof
 * holds; msg says who signed what), SPIRT_EDATA (not a proof: malformed,
 * of two rounds, or the slices make the part signed), SPIRT_EMAC (a
 * signature, or a slice not the one named), the membership's or the
 * store's codes; msg says which line.
 */
SPIRT_MUST_CHECK int spirt_xpart_proof_check(struct spirt_store *s,
    const char *text, size_t len, const struct spirt_trust *tr,
    uint64_t now, char *msg, size_t cap) SPIRT_NONNULL(1, 2, 6);

/*
 * The round of x->step with every member (lib/exchange.h, x->parts),
 * after this peer published xagg/<t>/<self>: cut and sign (xslice/<t>/
 * <id> and xslice/<t>), pull and check the slices of this peer's part,
 * combine them (xpart/<t>, xpart/<t>/signed), pull and check the other
 * parts, cover the part of the member before this one (xpart/<t>/cover:
 * its part relayed, or combined here when it did not come) and take the
 * covers of the parts that did not come, check the parts drawn for this
 * peer, write gagg/<t> and gagg/<t>/round.  A rerun reuses what this
 * peer signed before (its slices, its part).  Returns 0; SPIRT_EBUSY
 * (a member's input record or slice not there before the deadline, or
 * an owner's part and its cover: nothing combined, no gagg/<t>),
 * SPIRT_EMAC (a slice or part that is
 * not what its signer's record names, a record of bad signature, a part
 * checked here that its owner combined wrongly: the owner's xpeer is
 * refused, the proof's text in its proof),
 * SPIRT_EDATA (a record or value that does not fit the round),
 * SPIRT_EMODEL (a member's model@t hashes differently), EINTR, the
 * aggregation's and the store's codes; x->msg says what, naming the
 * member at fault.
 */
SPIRT_MUST_CHECK int spirt_xpart_round(struct spirt_exchange *x)
    SPIRT_NONNULL(1);

#endif
