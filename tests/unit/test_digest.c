/* test_digest.c - signed digests: layout, refusals, equivocation proofs;
 * the partitioned exchange's records and parts (lib/xpart.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "check.h"
#include "digest.h"
#include "le.h"
#include "tensor.h"
#include "xpart.h"

#define SEC 1000000000ull
#define T0 (1700000000ull * SEC)
#define HOUR (3600 * SEC)

static struct spirt_key *
seed_key(int n)
{
	unsigned char seed[32];
	struct spirt_key *k = NULL;

	memset(seed, n, sizeof seed);
	CHECK_RC(spirt_key_from_seed(&k, seed));
	return k;
}

/* a digest of peer p2 at step 7 with entries p3 and p1 (out of order) */
static void
fill(struct spirt_digest *d, int aggbyte)
{
	memset(d, 0, sizeof *d);
	d->step = 7;
	snprintf(d->run, sizeof d->run, "run1");
	snprintf(d->id, sizeof d->id, "p2");
	spirt_hash(d->agg, &aggbyte, sizeof aggbyte);
	spirt_hash(d->model, "model@7", 7);
	d->n = 2;
	snprintf(d->got[0].id, sizeof d->got[0].id, "p3");
	spirt_hash(d->got[0].hash, "agg p3", 6);
	snprintf(d->got[1].id, sizeof d->got[1].id, "p1");
	spirt_hash(d->got[1].hash, "agg p1", 6);
}

/* the layout of docs/protocol.md, checked with raw libsodium calls */
static void
test_layout(void)
{
	struct spirt_key *k = seed_key(2);
	struct spirt_digest d, e;
	unsigned char buf[2048], pk[32], h[32];
	size_t len;

	fill(&d, 1);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK(len == 184 + 2 * 64 + 64);
	CHECK(len == spirt_digest_size(2, 0));
	CHECK(memcmp(buf, "SPDG\3\0\0\0", 8) == 0);
	CHECK(buf[8] == 7 && buf[9] == 0 && buf[16] == 2 && buf[17] == 0);
	CHECK(memcmp(buf + 24, "run1\0\0", 6) == 0);
	CHECK(memcmp(buf + 56, "p2\0\0", 4) == 0);
	spirt_key_public(pk, k);
	CHECK(memcmp(buf + 88, pk, 32) == 0);
	/* (the values' hash, lib/vhash.h: tests/unit/test_crypto checks
	 * it against a tree of libsodium's SHA-256 and Python's hashlib) */
	spirt_hash(h, "model@7", 7);
	CHECK(memcmp(buf + 152, h, 32) == 0);
	/* entries sorted by id: p1 then p3 */
	CHECK(memcmp(buf + 184, "p1\0", 3) == 0);
	CHECK(memcmp(buf + 248, "p3\0", 3) == 0);
	spirt_hash(h, "agg p1", 6);
	CHECK(memcmp(buf + 184 + 32, h, 32) == 0);
	CHECK(crypto_sign_verify_detached(buf + len - 64, buf, len - 64, pk)
	    == 0);

	CHECK_RC(spirt_digest_open(&e, buf, len));
	CHECK(e.step == 7 && strcmp(e.run, "run1") == 0 &&
	    strcmp(e.id, "p2") == 0 && e.n == 2 && !e.has_token);
	CHECK(strcmp(e.got[0].id, "p1") == 0 && strcmp(e.got[1].id, "p3") == 0);
	CHECK(memcmp(e.agg, d.agg, 32) == 0 && memcmp(e.model, d.model, 32) ==
	    0);
	CHECK(spirt_digest_hash_of(&e, "p2") == e.agg);
	CHECK(spirt_digest_hash_of(&e, "p3") == e.got[1].hash);
	CHECK(spirt_digest_hash_of(&e, "p4") == NULL);
	spirt_key_free(k);
}

static void
test_refusals(void)
{
	struct spirt_key *k = seed_key(2);
	struct spirt_digest d, e;
	unsigned char buf[2048], bad[2048];
	size_t len, dummy;

	fill(&d, 1);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	/* every byte matters: a flip anywhere is refused */
	for (size_t i = 0; i < len; i++) {
		int rc;

		memcpy(bad, buf, len);
		bad[i] ^= 0x20;
		rc = spirt_digest_open(&e, bad, len);
		CHECK(rc != 0);
		if (rc == 0)
			fprintf(stderr, "byte %zu flipped: accepted\n", i);
	}
	CHECK_EQ_RC(spirt_digest_open(&e, buf, len - 1), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_digest_open(&e, buf, 100), SPIRT_ETRUNC);
	memcpy(bad, buf, len);
	bad[len] = 0;
	CHECK_EQ_RC(spirt_digest_open(&e, bad, len + 1), SPIRT_EDATA);
	memcpy(bad, buf, len);
	bad[0] = 'X';
	CHECK_EQ_RC(spirt_digest_open(&e, bad, len), SPIRT_EMAGIC);
	bad[0] = 'S';
	bad[4] = 1;             /* version 1 hashed with BLAKE2b-256 */
	CHECK_EQ_RC(spirt_digest_open(&e, bad, len), SPIRT_EVERSION);
	bad[4] = 2;             /* version 2 with SHA-256 of the whole value */
	CHECK_EQ_RC(spirt_digest_open(&e, bad, len), SPIRT_EVERSION);
	bad[4] = 4;
	CHECK_EQ_RC(spirt_digest_open(&e, bad, len), SPIRT_EVERSION);
	memcpy(bad, buf, len);
	bad[200] ^= 1;          /* an entry's id: the signature catches it */
	CHECK_EQ_RC(spirt_digest_open(&e, bad, len), SPIRT_EMAC);
	/* a signer cannot list itself, twice, or a bad id */
	fill(&d, 1);
	snprintf(d.got[0].id, sizeof d.got[0].id, "p2");
	CHECK_EQ_RC(spirt_digest_sign(buf, sizeof buf, &dummy, &d, k),
	    SPIRT_EINVAL);
	fill(&d, 1);
	snprintf(d.got[0].id, sizeof d.got[0].id, "p1");
	CHECK_EQ_RC(spirt_digest_sign(buf, sizeof buf, &dummy, &d, k),
	    SPIRT_EINVAL);
	fill(&d, 1);
	snprintf(d.got[0].id, sizeof d.got[0].id, "-x");
	CHECK_EQ_RC(spirt_digest_sign(buf, sizeof buf, &dummy, &d, k),
	    SPIRT_EINVAL);
	fill(&d, 1);
	CHECK_EQ_RC(spirt_digest_sign(buf, 100, &dummy, &d, k), SPIRT_EINVAL);
	spirt_key_free(k);
}

static void
test_verify(void)
{
	struct spirt_key *k = seed_key(2), *g = seed_key(9), *o = seed_key(3);
	struct spirt_trust *tl = NULL, *tg = NULL;
	struct spirt_digest d, e;
	unsigned char buf[2048], pk[32], gpk[32], opk[32];
	size_t len;

	spirt_key_public(pk, k);
	spirt_key_public(gpk, g);
	spirt_key_public(opk, o);
	CHECK_RC(spirt_trust_new(&tl, "run1", NULL, 30 * SEC));
	CHECK_RC(spirt_trust_allow(tl, pk, "p2", SPIRT_ROLE_PEER));
	CHECK_RC(spirt_trust_allow(tl, opk, "f1", SPIRT_ROLE_FUNCTION));
	fill(&d, 1);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK_RC(spirt_digest_verify(&e, buf, len, "run1", "p2", 7, tl, T0));
	CHECK_RC(spirt_digest_verify(&e, buf, len, "run1", NULL, 7, tl, T0));
	CHECK_EQ_RC(spirt_digest_verify(&e, buf, len, "run2", "p2", 7, tl, T0),
	    SPIRT_ERUN);
	CHECK_EQ_RC(spirt_digest_verify(&e, buf, len, "run1", "p3", 7, tl, T0),
	    SPIRT_EADDR);
	CHECK_EQ_RC(spirt_digest_verify(&e, buf, len, "run1", "p2", 8, tl, T0),
	    SPIRT_ESTEP);
	/* signed by a key the allowlist has under another id and role */
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, o));
	CHECK_EQ_RC(spirt_digest_verify(&e, buf, len, "run1", "p2", 7, tl, T0),
	    SPIRT_EUNKNOWNKEY);
	/* with a token: the group key vouches; expired is refused */
	CHECK_RC(spirt_trust_new(&tg, "run1", gpk, 30 * SEC));
	CHECK_RC(spirt_token_make(d.token, g, "run1", "p2", pk,
	    SPIRT_ROLE_PEER, T0, T0 + HOUR));
	d.has_token = 1;
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK(len == spirt_digest_size(2, 1));
	CHECK_RC(spirt_digest_verify(&e, buf, len, "run1", "p2", 7, tg, T0));
	CHECK(e.has_token && memcmp(e.token, d.token, SPIRT_TOKEN_BYTES) == 0);
	CHECK_EQ_RC(spirt_digest_verify(&e, buf, len, "run1", "p2", 7, tg,
	    T0 + 2 * HOUR), SPIRT_EEXPIRED);
	/* a token for another key does not vouch for this signer */
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, o));
	CHECK_EQ_RC(spirt_digest_verify(&e, buf, len, "run1", "p2", 7, tg, T0),
	    SPIRT_EUNKNOWNKEY);
	spirt_trust_free(tl);
	spirt_trust_free(tg);
	spirt_key_free(k);
	spirt_key_free(g);
	spirt_key_free(o);
}

static void
test_conflict(void)
{
	struct spirt_key *k = seed_key(2), *o = seed_key(3);
	struct spirt_digest d, a, b;
	unsigned char buf[2048];
	char text[2048];
	size_t len, n;

	fill(&d, 1);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK_RC(spirt_digest_open(&a, buf, len));
	/* the same statement twice is no proof */
	CHECK_RC(spirt_digest_open(&b, buf, len));
	CHECK(spirt_digest_conflict(&a, &b) == 0);
	/* another aggregate for the same step: a proof */
	fill(&d, 2);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK_RC(spirt_digest_open(&b, buf, len));
	CHECK(spirt_digest_conflict(&a, &b) == 1);
	CHECK(spirt_digest_conflict(&b, &a) == 1);
	/* another model, same aggregate */
	fill(&d, 1);
	spirt_hash(d.model, "other", 5);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK_RC(spirt_digest_open(&b, buf, len));
	CHECK(spirt_digest_conflict(&a, &b) == 2);
	/* another step, or another signer: no proof against this peer */
	fill(&d, 2);
	d.step = 8;
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, k));
	CHECK_RC(spirt_digest_open(&b, buf, len));
	CHECK(spirt_digest_conflict(&a, &b) == 0);
	fill(&d, 2);
	CHECK_RC(spirt_digest_sign(buf, sizeof buf, &len, &d, o));
	CHECK_RC(spirt_digest_open(&b, buf, len));
	CHECK(spirt_digest_conflict(&a, &b) == 0);

	n = spirt_digest_format(text, sizeof text, &a);
	CHECK(n == strlen(text));
	CHECK(strncmp(text, "step=7\nrun=run1\nid=p2\nkey=", 26) == 0);
	CHECK(strstr(text, "\ngot=p1 ") && strstr(text, "\ngot=p3 "));
	CHECK(strstr(text, "\nsig=") && text[n - 1] == '\n');
	CHECK(spirt_digest_format(NULL, 0, &a) == n);
	CHECK(spirt_digest_format(text, 10, &a) == n && strlen(text) == 9);
	spirt_key_free(k);
	spirt_key_free(o);
}

/* a record of len bytes at buf: every byte flipped is refused; one
 * byte more, one less, no such kind, an index not below the parts */
static void
xpart_every_byte(const unsigned char *buf, size_t len)
{
	static struct spirt_xpart_rec e;
	unsigned char bad[2048];

	for (size_t i = 0; i < len; i++) {
		int rc;

		memcpy(bad, buf, len);
		bad[i] ^= 0x20;
		rc = spirt_xpart_rec_open(&e, bad, len);
		CHECK(rc != 0);
		if (rc == 0)
			fprintf(stderr, "xpart: byte %zu flipped: "
			    "accepted\n", i);
	}
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, buf, len - 1), SPIRT_ETRUNC);
	memcpy(bad, buf, len);
	bad[len] = 0;
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len + 1), SPIRT_EDATA);
	bad[5] = 4;             /* no such kind */
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EDATA);
	memcpy(bad, buf, len);
	bad[20] = 3;            /* index not below the parts */
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EDATA);
}

/* the partitioned exchange: parts tile the vector as documented; a
 * record's layout (version 3: an input record names a Merkle root, a
 * result the hash of the input records), every byte signed, its
 * refusals */
static void
test_xpart(void)
{
	struct spirt_key *k = seed_key(2);
	static struct spirt_xpart_rec r, e;
	unsigned char buf[2048], bad[2048], pk[32];
	uint64_t off, len64, at;
	size_t len, dummy;
	const char *ids[3] = { "p1", "p2", "p3" };

	/* floor(k n / P): 1001 in 3 is 333, 334, 334; n = 2^63 + 5 in 7
	 * does not overflow */
	spirt_xpart_span(1001, 3, 0, &off, &len64);
	CHECK(off == 0 && len64 == 333);
	spirt_xpart_span(1001, 3, 1, &off, &len64);
	CHECK(off == 333 && len64 == 334);
	spirt_xpart_span(1001, 3, 2, &off, &len64);
	CHECK(off == 667 && len64 == 334);
	at = 0;
	for (size_t i = 0; i < 7; i++) {
		spirt_xpart_span((1ull << 63) + 5, 7, i, &off, &len64);
		CHECK(off == at);
		at += len64;
	}
	CHECK(at == (1ull << 63) + 5);

	/* an input record (kind 1): the members' hash and the root of its
	 * slices, not P entries: 320 bytes whatever P */
	memset(&r, 0, sizeof r);
	r.kind = SPIRT_XPART_INPUTS;
	r.step = 7;
	r.parts = 3;
	r.index = 1;
	r.n = 1001;
	snprintf(r.run, sizeof r.run, "run1");
	snprintf(r.id, sizeof r.id, "p2");
	spirt_hash(r.model, "model@7", 7);
	spirt_hash(r.hash, "agg of p2", 9);
	{
		unsigned char mem[3 * 32], h[32];

		memset(mem, 0, sizeof mem);
		for (size_t i = 0; i < 3; i++)
			memcpy(mem + 32 * i, ids[i], 2);
		CHECK_RC(spirt_xpart_members(r.members, ids, 3));
		spirt_hash(h, mem, sizeof mem);
		CHECK(memcmp(h, r.members, 32) == 0);
	}
	spirt_hash(r.root, "a root", 6);
	CHECK_RC(spirt_xpart_rec_sign(buf, sizeof buf, &len, &r, k));
	CHECK(len == 320 && len == spirt_xpart_rec_size(SPIRT_XPART_INPUTS,
	    3, 0) && len == spirt_xpart_rec_size(SPIRT_XPART_INPUTS, 257, 0));
	CHECK(spirt_xpart_rec_size(SPIRT_XPART_INPUTS, 3, 1) == len + 216);
	CHECK(memcmp(buf, "SPXP\3\1\0\0", 8) == 0);
	CHECK(buf[8] == 7 && buf[16] == 3 && buf[20] == 1);
	CHECK(buf[120] == 0xe9 && buf[121] == 3);       /* 1001 */
	CHECK(memcmp(buf + 24, "run1\0", 5) == 0);
	CHECK(memcmp(buf + 56, "p2\0", 3) == 0);
	spirt_key_public(pk, k);
	CHECK(memcmp(buf + 88, pk, 32) == 0);
	CHECK(memcmp(buf + 128, r.model, 32) == 0 &&
	    memcmp(buf + 160, r.hash, 32) == 0 &&
	    memcmp(buf + 192, r.members, 32) == 0 &&
	    memcmp(buf + 224, r.root, 32) == 0);
	CHECK(crypto_sign_verify_detached(buf + len - 64, buf, len - 64, pk)
	    == 0);
	CHECK_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p2", 7, NULL,
	    T0));
	CHECK(e.kind == 1 && e.parts == 3 && e.index == 1 && e.n == 1001 &&
	    memcmp(e.hash, r.hash, 32) == 0 &&
	    memcmp(e.members, r.members, 32) == 0 &&
	    memcmp(e.root, r.root, 32) == 0 &&
	    memcmp(e.sig, buf + len - 64, 64) == 0);
	CHECK_EQ_RC(spirt_xpart_rec_verify(&e, buf, len, "run2", "p2", 7,
	    NULL, T0), SPIRT_ERUN);
	CHECK_EQ_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p3", 7,
	    NULL, T0), SPIRT_EADDR);
	CHECK_EQ_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p2", 8,
	    NULL, T0), SPIRT_ESTEP);
	xpart_every_byte(buf, len);
	memcpy(bad, buf, len);
	bad[4] = 2;             /* version 2: P entries */
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EVERSION);
	bad[4] = 4;
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EVERSION);
	/* a version-2 input record as it was, 192 + 64 P + 64 bytes */
	memset(bad, 0, sizeof bad);
	memcpy(bad, buf, 192);
	bad[4] = 2;
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, 192 + 3 * 64 + 64),
	    SPIRT_EVERSION);
	/* with a token: 536 bytes, the token at 256 */
	r.has_token = 1;
	memset(r.token, 0xab, sizeof r.token);
	CHECK_RC(spirt_xpart_rec_sign(buf, sizeof buf, &len, &r, k));
	CHECK(len == 536 && spirt_le_get16(buf + 6) == 216 &&
	    memcmp(buf + 256, r.token, 216) == 0);
	CHECK_RC(spirt_xpart_rec_open(&e, buf, len));
	CHECK(e.has_token && memcmp(e.token, r.token, 216) == 0);
	r.has_token = 0;

	/* a result record (kind 2): the members' hash and the inputs' hash,
	 * of the P input records' signatures in member order */
	{
		static struct spirt_xpart_rec in[3];
		unsigned char sigs[3 * 64], h[32];

		for (size_t i = 0; i < 3; i++) {
			memset(in[i].sig, (int)(0x10 + i), 64);
			memcpy(sigs + 64 * i, in[i].sig, 64);
		}
		CHECK_RC(spirt_xpart_inputs(r.inputs, in, 3));
		spirt_hash(h, sigs, sizeof sigs);
		CHECK(memcmp(h, r.inputs, 32) == 0);
		/* one member's record (its root) changed: another hash */
		in[2].sig[63] ^= 1;
		CHECK_RC(spirt_xpart_inputs(h, in, 3));
		CHECK(memcmp(h, r.inputs, 32) != 0);
	}
	r.kind = SPIRT_XPART_RESULT;
	spirt_hash(r.hash, "part 1", 6);
	CHECK_RC(spirt_xpart_rec_sign(buf, sizeof buf, &len, &r, k));
	CHECK(len == 320 && len == spirt_xpart_rec_size(SPIRT_XPART_RESULT,
	    3, 0) && len == spirt_xpart_rec_size(SPIRT_XPART_COVER, 257, 0));
	CHECK(spirt_xpart_rec_size(SPIRT_XPART_RESULT, 3, 1) == 320 + 216);
	CHECK(memcmp(buf, "SPXP\3\2\0\0", 8) == 0);
	CHECK(memcmp(buf + 160, r.hash, 32) == 0 &&
	    memcmp(buf + 192, r.members, 32) == 0 &&
	    memcmp(buf + 224, r.inputs, 32) == 0);
	CHECK(crypto_sign_verify_detached(buf + len - 64, buf, len - 64, pk)
	    == 0);
	CHECK_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p2", 7, NULL,
	    T0));
	CHECK(e.kind == 2 && e.index == 1 && memcmp(e.members, r.members,
	    32) == 0 && memcmp(e.inputs, r.inputs, 32) == 0);
	xpart_every_byte(buf, len);
	/* a version-2 result, of the same size: refused by version */
	memcpy(bad, buf, len);
	bad[4] = 2;
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EVERSION);
	/* a version-1 result, P entries of 64 bytes: refused by version */
	memset(bad, 0, sizeof bad);
	memcpy(bad, buf, 192);
	bad[4] = 1;
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, 192 + 3 * 64 + 64),
	    SPIRT_EVERSION);
	/* a cover: p2 covers part 0 (p1's); the signer's place in the ring
	 * is the round's to check (the record names the members' hash) */
	r.kind = SPIRT_XPART_COVER;
	r.index = 0;
	CHECK_RC(spirt_xpart_rec_sign(buf, sizeof buf, &len, &r, k));
	CHECK(buf[5] == 3 && buf[20] == 0 && len == 320);
	CHECK_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p2", 7, NULL,
	    T0));
	CHECK(e.kind == SPIRT_XPART_COVER && e.index == 0);
	r.parts = 1;            /* no cover with one member */
	CHECK_EQ_RC(spirt_xpart_rec_sign(buf, sizeof buf, &dummy, &r, k),
	    SPIRT_EINVAL);
	r.parts = 3;
	r.index = 3;            /* index not below the parts */
	CHECK_EQ_RC(spirt_xpart_rec_sign(buf, sizeof buf, &dummy, &r, k),
	    SPIRT_EINVAL);
	/* a verdict: the round's members line, then its bad part or none */
	{
#define VM "members=p1 p2 p3"
		long v;

		CHECK_RC(spirt_xpart_verdict_parse(VM "\nbad=2\n", 23, VM, 16,
		    &v, 3));
		CHECK(v == 2);
		CHECK_RC(spirt_xpart_verdict_parse(VM "\nbad=\n", 22, VM, 16,
		    &v, 3));
		CHECK(v == -1);
		CHECK_EQ_RC(spirt_xpart_verdict_parse(VM "\nbad=3\n", 23, VM,
		    16, &v, 3), SPIRT_EDATA);
		CHECK_EQ_RC(spirt_xpart_verdict_parse(VM "\nbad=02\n", 24, VM,
		    16, &v, 3), SPIRT_EDATA);
		CHECK_EQ_RC(spirt_xpart_verdict_parse(VM "\nbad=2", 22, VM, 16,
		    &v, 3), SPIRT_EDATA);
		/* a NUL after the digits, then anything (found by
		 * fuzz_xpart) */
		CHECK_EQ_RC(spirt_xpart_verdict_parse(VM "\nbad=1\0p2 p3\nb\n",
		    32, VM, 16, &v, 3), SPIRT_EDATA);
		CHECK_EQ_RC(spirt_xpart_verdict_parse("members=p1 p3\nbad=\n",
		    19, VM, 16, &v, 3), SPIRT_ERUN);
#undef VM
	}
	spirt_key_free(k);
}

/* H(0x01 || l || r), H(0x00 || id || h): built here from the layout */
static void
ref_node(unsigned char *out, const unsigned char *l, const unsigned char *r)
{
	unsigned char b[65];

	b[0] = 1;
	memcpy(b + 1, l, 32);
	memcpy(b + 33, r, 32);
	spirt_hash(out, b, sizeof b);
}

/* the root bottom up, as certificate transparency's logs build it:
 * adjacent nodes paired, an odd last one carried up as it is (the same
 * tree as RFC 6962's split, by another route) */
static void
ref_root(unsigned char *out, const unsigned char (*leaves)[32], size_t n)
{
	static unsigned char lv[300][32];

	memcpy(lv, leaves, n * 32);
	while (n > 1) {
		size_t m = 0;

		for (size_t i = 0; i + 1 < n; i += 2)
			ref_node(lv[m++], lv[i], lv[i + 1]);
		if (n % 2)
			memcpy(lv[m++], lv[n - 1], 32);
		n = m;
	}
	memcpy(out, lv[0], 32);
}

/* RFC 9162 2.1.3.2: an inclusion proof verified, iteratively */
static int
ref_verify(const unsigned char *leaf, size_t k, size_t n,
    const unsigned char *path, size_t plen, const unsigned char *root)
{
	unsigned char r[32];
	size_t fn = k, sn = n - 1;

	memcpy(r, leaf, 32);
	for (size_t i = 0; i < plen; i++) {
		const unsigned char *p = path + 32 * i;

		if (sn == 0)
			return 0;
		if ((fn & 1) || fn == sn) {
			ref_node(r, p, r);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			ref_node(r, r, p);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(r, root, 32) == 0;
}

/* a slice as served: the u8 record of its path then its tensor record
 * (a tensor of len floats, each v) */
static size_t
served(unsigned char *out, size_t cap, const unsigned char *path, size_t plen,
    unsigned char *rec, size_t *reclen, uint64_t len, float v)
{
	struct spirt_tensor t, u;
	float f[8];
	unsigned char body[4096];
	uint64_t dims[1];

	for (size_t i = 0; i < len; i++)
		f[i] = v;
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, &len));
	*reclen = spirt_tensor_reclen(&t);
	CHECK_RC(spirt_tensor_encode(rec, *reclen, &t, f));
	if (plen)
		memcpy(body, path, plen);
	memcpy(body + plen, rec, *reclen);
	dims[0] = plen + *reclen;
	CHECK_RC(spirt_tensor_init(&u, SPIRT_U8, 1, dims));
	CHECK(spirt_tensor_reclen(&u) <= cap);
	CHECK_RC(spirt_tensor_encode(out, cap, &u, body));
	return spirt_tensor_reclen(&u);
}

/* the input record's Merkle tree: the leaf's bytes, the root against
 * one built another way, every leaf's path of every count up to 70 and
 * of 128, 129, 257 against RFC 9162's verifier; a slice taken with its
 * path, and refused swapped, moved, of another member or cut short */
static void
test_merkle(void)
{
	static unsigned char leaves[257][32], path[9 * 32], root[32], ref[32];
	static unsigned char all[257 * 9 * 32];
	static const size_t more[] = { 128, 129, 256, 257 };
	unsigned char b[65], h[32], l[32];
	const char *ids[3] = { "p1", "p2", "p3" };

	/* leaf: H(0x00 || id (32, NUL-padded) || the slice's hash) */
	spirt_hash(h, "slice", 5);
	memset(b, 0, sizeof b);
	memcpy(b + 1, "p1", 2);
	memcpy(b + 33, h, 32);
	spirt_hash(l, b, sizeof b);
	spirt_xpart_leaf(leaves[0], "p1", h);
	CHECK(memcmp(l, leaves[0], 32) == 0);

	/* three leaves: root H(1 || H(1 || L0 || L1) || L2); paths L1 L2,
	 * L0 L2, and H(1 || L0 || L1) alone */
	for (size_t i = 0; i < 3; i++) {
		spirt_hash(h, ids[i], 2);
		spirt_xpart_leaf(leaves[i], ids[i], h);
	}
	ref_node(h, leaves[0], leaves[1]);
	ref_node(ref, h, leaves[2]);
	spirt_xpart_root(root, (const unsigned char (*)[32])leaves, 3);
	CHECK(memcmp(root, ref, 32) == 0);
	CHECK(spirt_xpart_path_len(0, 3) == 2 &&
	    spirt_xpart_path_len(1, 3) == 2 && spirt_xpart_path_len(2, 3) == 1);
	spirt_xpart_path(path, (const unsigned char (*)[32])leaves, 3, 0);
	CHECK(memcmp(path, leaves[1], 32) == 0 &&
	    memcmp(path + 32, leaves[2], 32) == 0);
	spirt_xpart_path(path, (const unsigned char (*)[32])leaves, 3, 2);
	CHECK(memcmp(path, h, 32) == 0);
	/* one leaf: the root is the leaf, no path */
	spirt_xpart_root(root, (const unsigned char (*)[32])leaves, 1);
	CHECK(memcmp(root, leaves[0], 32) == 0 &&
	    spirt_xpart_path_len(0, 1) == 0);

	for (size_t n = 1; n <= 70 + 4; n++) {
		size_t N = n <= 70 ? n : more[n - 71], lg = 0;

		while (((size_t)1 << lg) < N)
			lg++;
		for (size_t i = 0; i < N; i++) {
			char id[24];

			snprintf(id, sizeof id, "m%03zu", i);
			spirt_hash(h, id, strlen(id));
			spirt_xpart_leaf(leaves[i], id, h);
		}
		spirt_xpart_root(root, (const unsigned char (*)[32])leaves, N);
		ref_root(ref, (const unsigned char (*)[32])leaves, N);
		CHECK(memcmp(root, ref, 32) == 0);
		/* all the paths at once: the same root, the same paths */
		memset(all, 0xee, sizeof all);
		spirt_xpart_paths(h, all, 9 * 32, (const unsigned char (*)[32])
		    leaves, N);
		CHECK(memcmp(h, root, 32) == 0);
		for (size_t k = 0; k < N; k++) {
			size_t d = spirt_xpart_path_len(k, N);

			spirt_xpart_path(path, (const unsigned char (*)[32])
			    leaves, N, k);
			CHECK(memcmp(all + k * 9 * 32, path, 32 * d) == 0);
		}
		for (size_t k = 0; k < N; k++) {
			size_t d = spirt_xpart_path_len(k, N);

			CHECK(d <= lg);
			spirt_xpart_path(path, (const unsigned char (*)[32])
			    leaves, N, k);
			CHECK(ref_verify(leaves[k], k, N, path, d, root));
			CHECK_RC(spirt_xpart_climb(h, leaves[k], k, N, path,
			    d));
			CHECK(memcmp(h, root, 32) == 0);
			/* another leaf, or a hash of the path changed */
			if (N > 1) {
				CHECK_RC(spirt_xpart_climb(h, leaves[(k + 1) %
				    N], k, N, path, d));
				CHECK(memcmp(h, root, 32) != 0);
				path[32 * (d - 1)] ^= 1;
				CHECK_RC(spirt_xpart_climb(h, leaves[k], k, N,
				    path, d));
				CHECK(memcmp(h, root, 32) != 0);
			}
			CHECK_EQ_RC(spirt_xpart_climb(h, leaves[k], k, N, path,
			    d + 1), SPIRT_EDATA);
		}
		CHECK_EQ_RC(spirt_xpart_climb(h, leaves[0], N, N, path,
		    0), SPIRT_EDATA);
	}

	/* slices taken: four members' slices of a member's aggregate, each
	 * of 2 floats */
	{
		static unsigned char rec[4][256], sv[4][1024], p4[4][64];
		size_t rl[4], sl[4], tl;
		const char *m4[4] = { "p1", "p2", "p3", "p4" };
		const void *tv;

		for (size_t i = 0; i < 4; i++) {
			(void)served(sv[i], sizeof sv[i], NULL, 0, rec[i],
			    &rl[i], 2, (float)i);
			spirt_hash(h, rec[i], rl[i]);
			spirt_xpart_leaf(leaves[i], m4[i], h);
		}
		spirt_xpart_root(root, (const unsigned char (*)[32])leaves, 4);
		for (size_t i = 0; i < 4; i++) {
			CHECK(spirt_xpart_path_len(i, 4) == 2);
			spirt_xpart_path(p4[i], (const unsigned char (*)[32])
			    leaves, 4, i);
			sl[i] = served(sv[i], sizeof sv[i], p4[i], 64, rec[i],
			    &rl[i], 2, (float)i);
			CHECK_RC(spirt_xpart_slice_open(root, m4[i], i, 4,
			    sv[i], sl[i], &tv, &tl));
			CHECK(tl == rl[i] && memcmp(tv, rec[i], tl) == 0);
		}
		/* slice 1 served for part 2 (a swapped slice), slice 2 under
		 * p2's id, another root: none reaches it */
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 2, 4, sv[1],
		    sl[1], &tv, &tl), SPIRT_EMAC);
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[1], 2, 4, sv[2],
		    sl[2], &tv, &tl), SPIRT_EMAC);
		CHECK_EQ_RC(spirt_xpart_slice_open(ref, m4[2], 2, 4, sv[2],
		    sl[2], &tv, &tl), SPIRT_EMAC);
		/* slice 2 with slice 3's path; with another slice's floats */
		sl[0] = served(sv[0], sizeof sv[0], p4[3], 64, rec[0], &rl[0],
		    2, 2.0f);
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 2, 4, sv[0],
		    sl[0], &tv, &tl), SPIRT_EMAC);
		sl[0] = served(sv[0], sizeof sv[0], p4[2], 64, rec[0], &rl[0],
		    2, 7.0f);
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 2, 4, sv[0],
		    sl[0], &tv, &tl), SPIRT_EMAC);
		/* a u8 record shorter than the path (40 bytes of 64), and one
		 * cut short */
		{
			struct spirt_tensor u;
			uint64_t d40 = 40;

			CHECK_RC(spirt_tensor_init(&u, SPIRT_U8, 1, &d40));
			CHECK_RC(spirt_tensor_encode(sv[0], sizeof sv[0], &u,
			    p4[2]));
			CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 2, 4,
			    sv[0], spirt_tensor_reclen(&u), &tv, &tl),
			    SPIRT_EDATA);
		}
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 2, 4, sv[2],
		    sl[2] - 1, &tv, &tl), SPIRT_ETRUNC);
		/* not a u8 record: the tensor record alone */
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 2, 4, rec[2],
		    rl[2], &tv, &tl), SPIRT_EDATA);
		/* position not below the parts */
		CHECK_EQ_RC(spirt_xpart_slice_open(root, m4[2], 4, 4, sv[2],
		    sl[2], &tv, &tl), SPIRT_EDATA);
	}
}

int
main(void)
{
	if (spirt_crypto_init() != 0) {
		fprintf(stderr, "test_digest: cannot initialise libsodium\n");
		return 1;
	}
	test_layout();
	test_refusals();
	test_verify();
	test_conflict();
	test_xpart();
	test_merkle();
	return check_failed;
}
