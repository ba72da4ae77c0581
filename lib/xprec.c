/* xprec.c - the partitioned exchange's signed records: parts' spans, the
 * members' and inputs' hashes, the Merkle tree of an input record and a
 * slice's path to its root, the record packed, signed, opened, verified
 * (docs/protocol.md, "The partitioned exchange"); the round that makes
 * and pulls them is xpart.c's */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "keys.h"
#include "le.h"
#include "tensor.h"
#include "xpart.h"

#define XP_MAGIC "SPXP"
#define XP_VERSION SPIRT_XPART_VERSION

/* ---- the record ---- */

static int
kind_ok(int kind, size_t parts)
{
	return kind == SPIRT_XPART_INPUTS || kind == SPIRT_XPART_RESULT ||
	    (kind == SPIRT_XPART_COVER && parts >= 2);
}

void
spirt_xpart_span(uint64_t n, size_t parts, size_t k, uint64_t *off,
    uint64_t *len)
{
	uint64_t q = n / parts, r = n % parts;
	uint64_t a = k * q + k * r / parts;
	uint64_t b = (k + 1) * q + (k + 1) * r / parts;

	*off = a;
	*len = b - a;
}

size_t
spirt_xpart_rec_size(int kind, size_t parts, int has_token)
{
	(void)kind;
	(void)parts;
	return SPIRT_XPART_RESHEAD + (has_token ? SPIRT_TOKEN_BYTES : 0) +
	    SPIRT_SIG_BYTES;
}

int
spirt_xpart_members(unsigned char out[SPIRT_HASH_BYTES],
    const char *const *ids, size_t parts)
{
	unsigned char *b;

	/* (32 bytes a member, up to 257 of them: not on the stack) */
	if ((b = malloc(parts * 32 + 1)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < parts; i++)
		spirt_wire_id_put(b + 32 * i, ids[i]);
	spirt_hash(out, b, parts * 32);
	free(b);
	return 0;
}

int
spirt_xpart_inputs(unsigned char out[SPIRT_HASH_BYTES],
    const struct spirt_xpart_rec *in, size_t parts)
{
	unsigned char *b;

	if ((b = malloc(parts * SPIRT_SIG_BYTES + 1)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < parts; i++)
		memcpy(b + i * SPIRT_SIG_BYTES, in[i].sig, SPIRT_SIG_BYTES);
	spirt_hash(out, b, parts * SPIRT_SIG_BYTES);
	free(b);
	return 0;
}

/* ---- the Merkle tree of an input record (RFC 6962's shape) ---- */

/* the largest power of two below n (n >= 2): the left subtree's leaves */
static size_t
split(size_t n)
{
	size_t m = 1;

	while (m * 2 < n)
		m *= 2;
	return m;
}

/* H(0x01 || l || r) */
static void
node(unsigned char out[SPIRT_HASH_BYTES], const unsigned char *l,
    const unsigned char *r)
{
	unsigned char b[1 + 2 * SPIRT_HASH_BYTES];

	b[0] = 1;
	memcpy(b + 1, l, SPIRT_HASH_BYTES);
	memcpy(b + 1 + SPIRT_HASH_BYTES, r, SPIRT_HASH_BYTES);
	spirt_hash(out, b, sizeof b);
}

void
spirt_xpart_leaf(unsigned char out[SPIRT_HASH_BYTES], const char *id,
    const unsigned char hash[SPIRT_HASH_BYTES])
{
	unsigned char b[1 + 32 + SPIRT_HASH_BYTES];

	b[0] = 0;
	spirt_wire_id_put(b + 1, id);
	memcpy(b + 33, hash, SPIRT_HASH_BYTES);
	spirt_hash(out, b, sizeof b);
}

/* (recursion depth ceil(log2 n), at most 9) */
void
spirt_xpart_root(unsigned char out[SPIRT_HASH_BYTES],
    const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n)
{
	unsigned char l[SPIRT_HASH_BYTES], r[SPIRT_HASH_BYTES];
	size_t m;

	if (n <= 1) {
		memcpy(out, leaves[0], SPIRT_HASH_BYTES);
		return;
	}
	m = split(n);
	spirt_xpart_root(l, leaves, m);
	spirt_xpart_root(r, leaves + m, n - m);
	node(out, l, r);
}

size_t
spirt_xpart_path_len(size_t k, size_t n)
{
	size_t d = 0, m;

	while (n > 1) {
		m = split(n);
		if (k < m) {
			n = m;
		} else {
			k -= m;
			n -= m;
		}
		d++;
	}
	return d;
}

/* the path leaf to root is the subtree's path, then the sibling
 * subtree's root (RFC 6962 2.1.1) */
void
spirt_xpart_path(unsigned char *out,
    const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n, size_t k)
{
	size_t m, d;

	if (n <= 1)
		return;
	m = split(n);
	if (k < m) {
		spirt_xpart_path(out, leaves, m, k);
		d = spirt_xpart_path_len(k, m);
		spirt_xpart_root(out + d * SPIRT_HASH_BYTES, leaves + m, n - m);
	} else {
		spirt_xpart_path(out, leaves + m, n - m, k - m);
		d = spirt_xpart_path_len(k - m, n - m);
		spirt_xpart_root(out + d * SPIRT_HASH_BYTES, leaves, m);
	}
}

/* every leaf's path in one pass: each subtree's root hashed once and
 * copied into the paths of the leaves of its sibling (P log P copies, P
 * hashes, where P calls of spirt_xpart_path hash about P^2 nodes: 40 to
 * 60 ms of CPU at 257 members) */
static void
all_paths(unsigned char out[SPIRT_HASH_BYTES], unsigned char *paths,
    size_t stride, const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n)
{
	unsigned char l[SPIRT_HASH_BYTES], r[SPIRT_HASH_BYTES];
	size_t m;

	if (n <= 1) {
		memcpy(out, leaves[0], SPIRT_HASH_BYTES);
		return;
	}
	m = split(n);
	all_paths(l, paths, stride, leaves, m);
	all_paths(r, paths + m * stride, stride, leaves + m, n - m);
	for (size_t k = 0; k < n; k++)
		memcpy(paths + k * stride + (k < m ? spirt_xpart_path_len(k, m) :
		    spirt_xpart_path_len(k - m, n - m)) * SPIRT_HASH_BYTES,
		    k < m ? r : l, SPIRT_HASH_BYTES);
	node(out, l, r);
}

void
spirt_xpart_paths(unsigned char root[SPIRT_HASH_BYTES], unsigned char *paths,
    size_t stride, const unsigned char (*leaves)[SPIRT_HASH_BYTES], size_t n)
{
	all_paths(root, paths, stride, leaves, n);
}

static void
climb(unsigned char out[SPIRT_HASH_BYTES], const unsigned char *leaf,
    size_t k, size_t n, const unsigned char *path)
{
	unsigned char sub[SPIRT_HASH_BYTES];
	size_t m, d;

	if (n <= 1) {
		memcpy(out, leaf, SPIRT_HASH_BYTES);
		return;
	}
	m = split(n);
	if (k < m) {
		climb(sub, leaf, k, m, path);
		d = spirt_xpart_path_len(k, m);
		node(out, sub, path + d * SPIRT_HASH_BYTES);
	} else {
		climb(sub, leaf, k - m, n - m, path);
		d = spirt_xpart_path_len(k - m, n - m);
		node(out, path + d * SPIRT_HASH_BYTES, sub);
	}
}

int
spirt_xpart_climb(unsigned char out[SPIRT_HASH_BYTES],
    const unsigned char leaf[SPIRT_HASH_BYTES], size_t k, size_t n,
    const unsigned char *path, size_t plen)
{
	if (k >= n || n > SPIRT_XPART_MAXPARTS ||
	    plen != spirt_xpart_path_len(k, n))
		return SPIRT_EDATA;
	climb(out, leaf, k, n, path);
	return 0;
}

int
spirt_xpart_slice_open(const unsigned char root[SPIRT_HASH_BYTES],
    const char *id, size_t k, size_t parts, const void *val, size_t len,
    const void **rec, size_t *reclen)
{
	const void *b;
	size_t n, plen = spirt_xpart_path_len(k, parts) * SPIRT_HASH_BYTES;
	unsigned char h[SPIRT_HASH_BYTES], leaf[SPIRT_HASH_BYTES];
	int rc;

	if (k >= parts || parts > SPIRT_XPART_MAXPARTS)
		return SPIRT_EDATA;
	if ((rc = spirt_store_get_bytes(val, len, &b, &n)))
		return rc == SPIRT_EDTYPE ? SPIRT_EDATA : rc;
	if (n < plen)
		return SPIRT_EDATA;
	*rec = (const unsigned char *)b + plen;
	*reclen = n - plen;
	spirt_hash(h, *rec, *reclen);
	spirt_xpart_leaf(leaf, id, h);
	if ((rc = spirt_xpart_climb(h, leaf, k, parts, b, plen /
	    SPIRT_HASH_BYTES)))
		return rc;
	return memcmp(h, root, SPIRT_HASH_BYTES) ? SPIRT_EMAC : 0;
}

/* r's bytes before the signature into out (cap checked by the caller);
 * returns their length */
size_t
xp_rec_pack(unsigned char *out, const struct spirt_xpart_rec *r)
{
	size_t off;

	memset(out, 0, SPIRT_XPART_HEAD);
	memcpy(out, XP_MAGIC, 4);
	out[4] = XP_VERSION;
	out[5] = (unsigned char)r->kind;
	spirt_le_put16(out + 6, r->has_token ? SPIRT_TOKEN_BYTES : 0);
	spirt_le_put64(out + 8, r->step);
	spirt_le_put32(out + 16, r->parts);
	spirt_le_put32(out + 20, r->index);
	spirt_wire_id_put(out + 24, r->run);
	spirt_wire_id_put(out + 56, r->id);
	memcpy(out + 88, r->pk, SPIRT_PK_BYTES);
	spirt_le_put64(out + 120, r->n);
	memcpy(out + 128, r->model, SPIRT_HASH_BYTES);
	memcpy(out + 160, r->hash, SPIRT_HASH_BYTES);
	off = SPIRT_XPART_HEAD;
	/* the members' hash, then an input record's root or a result's
	 * (or cover's) inputs' hash: not P entries */
	memcpy(out + off, r->members, SPIRT_HASH_BYTES);
	memcpy(out + off + SPIRT_HASH_BYTES, r->kind == SPIRT_XPART_INPUTS ?
	    r->root : r->inputs, SPIRT_HASH_BYTES);
	off = SPIRT_XPART_RESHEAD;
	return off + spirt_sigrec_put_tail(out + off, r->has_token ? r->token :
	    NULL, NULL, 0);
}

int
spirt_xpart_rec_sign(unsigned char *out, size_t cap, size_t *len,
    struct spirt_xpart_rec *r, const struct spirt_key *k)
{
	size_t need, off;

	*len = 0;
	if (!spirt_id_valid(r->run) || !spirt_id_valid(r->id) ||
	    r->parts == 0 || r->parts > SPIRT_XPART_MAXPARTS ||
	    !kind_ok(r->kind, r->parts) || r->index >= r->parts)
		return SPIRT_EINVAL;
	if (cap < (need = spirt_xpart_rec_size(r->kind, r->parts,
	    r->has_token)))
		return SPIRT_EINVAL;
	spirt_key_public(r->pk, k);
	off = xp_rec_pack(out, r);
	spirt_key_sign(r->sig, k, out, off);
	memcpy(out + off, r->sig, SPIRT_SIG_BYTES);
	*len = need;
	return 0;
}

int
spirt_xpart_rec_open(struct spirt_xpart_rec *r, const unsigned char *b,
    size_t len)
{
	size_t tl, parts, need, got, off;
	int rc, kind;

	if (len < SPIRT_XPART_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(b, XP_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (b[4] != XP_VERSION)
		return SPIRT_EVERSION;
	tl = spirt_le_get16(b + 6);
	parts = spirt_le_get32(b + 16);
	kind = b[5];
	if ((tl != 0 && tl != SPIRT_TOKEN_BYTES) || parts == 0 ||
	    parts > SPIRT_XPART_MAXPARTS || !kind_ok(kind, parts) ||
	    spirt_le_get32(b + 20) >= parts)
		return SPIRT_EDATA;
	need = spirt_xpart_rec_size(kind, parts, tl != 0);
	if (len < need)
		return SPIRT_ETRUNC;
	if (len > need)
		return SPIRT_EDATA;
	/* the signature first: from here on, every field is the signer's */
	if ((rc = spirt_sig_verify(b + need - SPIRT_SIG_BYTES, b + 88, b,
	    need - SPIRT_SIG_BYTES)))
		return rc;
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->step = spirt_le_get64(b + 8);
	r->parts = (uint32_t)parts;
	r->index = spirt_le_get32(b + 20);
	if ((rc = spirt_wire_id_get(r->run, b + 24)) ||
	    (rc = spirt_wire_id_get(r->id, b + 56)))
		return rc;
	memcpy(r->pk, b + 88, SPIRT_PK_BYTES);
	r->n = spirt_le_get64(b + 120);
	memcpy(r->model, b + 128, SPIRT_HASH_BYTES);
	memcpy(r->hash, b + 160, SPIRT_HASH_BYTES);
	off = SPIRT_XPART_HEAD;
	memcpy(r->members, b + off, SPIRT_HASH_BYTES);
	memcpy(kind == SPIRT_XPART_INPUTS ? r->root : r->inputs,
	    b + off + SPIRT_HASH_BYTES, SPIRT_HASH_BYTES);
	off = SPIRT_XPART_RESHEAD;
	/* (the signer is checked against the round's members: a record
	 * names only their hash) */
	if ((rc = spirt_sigrec_get_tail(b + off, (r->has_token = tl != 0),
	    r->token, NULL, 0, NULL, &got)))
		return rc;
	memcpy(r->sig, b + need - SPIRT_SIG_BYTES, SPIRT_SIG_BYTES);
	return 0;
}

int
spirt_xpart_rec_verify(struct spirt_xpart_rec *r, const unsigned char *buf,
    size_t len, const char *run, const char *peer, uint64_t step,
    const struct spirt_trust *t, uint64_t now)
{
	int rc;

	if ((rc = spirt_xpart_rec_open(r, buf, len)))
		return rc;
	return spirt_sigrec_check(r->run, r->id, r->step, r->pk,
	    r->has_token ? r->token : NULL, run, peer, step, t, now);
}
