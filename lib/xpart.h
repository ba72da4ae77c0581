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
 * (kind 1) naming their Merkle root; the owner of part k pulls slice k
 * of every other member with its path, climbs it to its signer's root,
 * combines the P slices with the round's rule and signs a result record
 * (kind 2) naming the hash of the P input records and the hash of the
 * result; every member then pulls every other owner's combined part,
 * checks it against the owner's record, and the record's inputs' hash
 * against the one it computes from the inputs' records; the members drawn
 * to check a part (x->check of them, from the hash of the P input
 * records' signatures) pull its P slices, combine them again and compare
 * with the owner's signed result; then every member assembles gagg/<t>.
 *
 * Record layout (little-endian), a u8 record in the store, version 3:
 *   0 magic "SPXP", 4 version 3, 5 kind (1 inputs, 2 result, 3 cover),
 *   6 u16 token length (0 or 216), 8 u64 step, 16 u32 parts P,
 *   20 u32 index (the signer's position among the P members; a
 *   cover: the part covered, the signer at index + 1 mod P), 24 run[32],
 *   56 id[32], 88 pk[32], 120 u64 n (floats of the whole vector),
 *   128 model hash[32], 160 hash[32] (kind 1: of the whole aggregate
 *   xagg/<t>/<id>; kinds 2 and 3: of the combined part),
 *   192 members[32] (spirt_xpart_members()), then
 *   kind 1: 224 root[32], the Merkle root of its P slices (leaf i
 *   spirt_xpart_leaf() of member i's id and the hash of slice i, the
 *   tree spirt_xpart_root()'s); kinds 2 and 3: 224 inputs[32]
 *   (spirt_xpart_inputs(): the hash of the P input records' signatures
 *   in member order, which binds each member's root, and with the
 *   part's position each slice); then 256 token, then the Ed25519
 *   signature of every byte before it: 320 bytes (536 with a token),
 *   whatever the kind and P.  Versions 1 and 2 (input records of P
 *   entries) are refused: SPIRT_EVERSION.
 *
 * A slice, xslice/<t>/<id k>, is a u8 record of its path (the sibling
 * hashes, 32 bytes each, leaf to root: spirt_xpart_path_len(k, P) of
 * them, at most ceil(log2 P)) then its tensor record: whoever takes it
 * climbs the path to its member's signed root (spirt_xpart_slice_open).
 */

#define SPIRT_XPART_VERSION 3
#define SPIRT_XPART_HEAD 192
/* every record's header: the members' hash and the root (kind 1) or the
 * inputs' hash (kinds 2, 3) after the common 192 bytes */
#define SPIRT_XPART_RESHEAD (SPIRT_XPART_HEAD + 2 * SPIRT_HASH_BYTES)
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
	/* the hash of the P members' ids (spirt_xpart_members()); kind 1:
	 * the Merkle root of its slices (spirt_xpart_root()); kinds 2 and
	 * 3: the hash of the P input records' signatures
	 * (spirt_xpart_inputs()) */
	unsigned char members[SPIRT_HASH_BYTES];
	unsigned char root[SPIRT_HASH_BYTES];
	unsigned char inputs[SPIRT_HASH_BYTES];
	unsigned char sig[SPIRT_SIG_BYTES];
};

/* Part k of parts over n floats: floats [off, off + len), off =
 * floor(k n / parts) (computed without overflow for any n < 2^64). */
void spirt_xpart_span(uint64_t n, size_t parts, size_t k, uint64_t *off,
    uint64_t *len) SPIRT_NONNULL(4, 5);

/* Bytes of a record of kind over parts members, with a token or not
 * (320, and 216 more with a token, whatever the kind and parts: version
 * 3's input records name a Merkle root, not P entries). */
size_t spirt_xpart_rec_size(int kind, size_t parts, int has_token);

/*
 * The members' hash every record names: the hash (spirt_hash) of the
 * parts ids in order, 32 bytes each as on the wire (NUL-padded); ids
 * must be valid ids (spirt_id_valid).  The inputs' hash a result or
 * cover record names: the hash of the parts input records' signatures
 * (in[i].sig, 64 bytes each, in member order).  Both return 0 or ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_xpart_members(unsigned char out[SPIRT_HASH_BYTES],
    const char *const *ids, size_t parts) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_xpart_inputs(unsigned char out[SPIRT_HASH_BYTES],
    const struct spirt_xpart_rec *in, size_t parts) SPIRT_NONNULL(1, 2);

/*
 * The Merkle tree of an input record (RFC 6962's split: the largest
 * power of two below the count on the left; H spirt_hash, domain bytes 0
 * for a leaf, 1 for a node).  Leaf of slice k: H(0x00 || id of member k
 * (32, NUL-padded) || hash of slice k's tensor record).  A node:
 * H(0x01 || left || right).  spirt_xpart_root: the root of n leaves (n
 * from 1 to SPIRT_XPART_MAXPARTS).  spirt_xpart_path_len: how many
 * sibling hashes leaf k's path has in a tree of n (at most ceil(log2
 * n)); spirt_xpart_path writes them, leaf to root, 32 bytes each.
 * spirt_xpart_climb: the root leaf k of n reaches with path (plen
 * hashes); returns 0, or SPIRT_EDATA if plen is not leaf k's length or
 * k is not below n.
 */
void spirt_xpart_leaf(unsigned char out[SPIRT_HASH_BYTES], const char *id,
    const unsigned char hash[SPIRT_HASH_BYTES]) SPIRT_NONNULL(1, 2, 3);
void spirt_xpart_root(unsigned char out[SPIRT_HASH_BYTES],
    const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n)
    SPIRT_NONNULL(1, 2);
size_t spirt_xpart_path_len(size_t k, size_t n);
void spirt_xpart_path(unsigned char *out,
    const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n, size_t k)
    SPIRT_NONNULL(1, 2);
/* The root of n leaves and every leaf's path at once (n hashes, not
 * about n^2 as n calls of spirt_xpart_path): leaf k's at paths + k
 * stride, stride at least 32 ceil(log2 n) bytes. */
void spirt_xpart_paths(unsigned char root[SPIRT_HASH_BYTES],
    unsigned char *paths, size_t stride,
    const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n)
    SPIRT_NONNULL(1, 2, 4);
SPIRT_MUST_CHECK int spirt_xpart_climb(unsigned char out[SPIRT_HASH_BYTES],
    const unsigned char leaf[SPIRT_HASH_BYTES], size_t k, size_t n,
    const unsigned char *path, size_t plen) SPIRT_NONNULL(1, 2);

/*
 * A slice as it is served (val, len: the u8 record of slice k's path
 * and tensor record, xslice/<t>/<id>) taken: its tensor record's hash
 * made the leaf of (id, the member owning part k) at position k of
 * parts, climbed to root (the signer's input record's).  *rec, *reclen:
 * the tensor record (pointing into val).  Returns 0, SPIRT_EDATA (not a
 * u8 record, or shorter than its path) or SPIRT_EMAC (it does not
 * reach root: another slice, position or member).
 */
SPIRT_MUST_CHECK int spirt_xpart_slice_open(
    const unsigned char root[SPIRT_HASH_BYTES], const char *id, size_t k,
    size_t parts, const void *val, size_t len, const void **rec,
    size_t *reclen) SPIRT_NONNULL(1, 2, 5, 7, 8);

/*
 * Sign r with k into out (cap >= spirt_xpart_rec_size()): sets r->pk,
 * fills r->sig.  Returns 0, or SPIRT_EINVAL for a bad kind, run or id,
 * parts 0 or above SPIRT_XPART_MAXPARTS, index not below parts, or cap
 * too small.  It signs the r->members given and r->root (kind 1) or
 * r->inputs (kinds 2, 3).
 */
SPIRT_MUST_CHECK int spirt_xpart_rec_sign(unsigned char *out, size_t cap,
    size_t *len, struct spirt_xpart_rec *r, const struct spirt_key *k)
    SPIRT_NONNULL(1, 3, 4, 5);

/*
 * Parse a record and check its signature under the key it carries.
 * Refusals: SPIRT_ETRUNC, SPIRT_EDATA (longer than it declares, a bad
 * field), SPIRT_EMAGIC, SPIRT_EVERSION (a version other than 3: of an
 * older spirt), SPIRT_EMAC.  A record names no member ids: that its
 * signer is the member at its index (at index + 1 for a cover) is
 * checked against the round, with its members' hash.
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
