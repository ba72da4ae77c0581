/* test_digest.c - signed digests: layout, refusals, equivocation proofs;
 * the partitioned exchange's records and parts (lib/xpart.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "check.h"
#include "digest.h"
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
 * record's layout (version 2: a result names one hash of its inputs),
 * every byte signed, its refusals */
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

	/* an input record (kind 1): its P entries, the signer's at index */
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
	for (size_t i = 0; i < 3; i++) {
		snprintf(r.e[i].id, sizeof r.e[i].id, "%s", ids[i]);
		spirt_hash(r.e[i].hash, ids[i], 2);
	}
	CHECK_RC(spirt_xpart_rec_sign(buf, sizeof buf, &len, &r, k));
	CHECK(len == 192 + 3 * 64 + 64 &&
	    len == spirt_xpart_rec_size(SPIRT_XPART_INPUTS, 3, 0));
	CHECK(spirt_xpart_rec_size(SPIRT_XPART_INPUTS, 3, 1) == len + 216);
	CHECK(memcmp(buf, "SPXP\2\1\0\0", 8) == 0);
	CHECK(buf[8] == 7 && buf[16] == 3 && buf[20] == 1);
	CHECK(buf[120] == 0xe9 && buf[121] == 3);       /* 1001 */
	CHECK(memcmp(buf + 56, "p2\0", 3) == 0);
	CHECK(memcmp(buf + 192 + 64, "p2\0", 3) == 0);
	CHECK(memcmp(buf + 192 + 64 + 32, r.e[1].hash, 32) == 0);
	spirt_key_public(pk, k);
	CHECK(crypto_sign_verify_detached(buf + len - 64, buf, len - 64, pk)
	    == 0);
	CHECK_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p2", 7, NULL,
	    T0));
	CHECK(e.kind == 1 && e.parts == 3 && e.index == 1 && e.n == 1001 &&
	    memcmp(e.hash, r.hash, 32) == 0 &&
	    memcmp(e.e[2].hash, r.e[2].hash, 32) == 0);
	CHECK_EQ_RC(spirt_xpart_rec_verify(&e, buf, len, "run2", "p2", 7,
	    NULL, T0), SPIRT_ERUN);
	CHECK_EQ_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p3", 7,
	    NULL, T0), SPIRT_EADDR);
	CHECK_EQ_RC(spirt_xpart_rec_verify(&e, buf, len, "run1", "p2", 8,
	    NULL, T0), SPIRT_ESTEP);
	xpart_every_byte(buf, len);
	memcpy(bad, buf, len);
	bad[4] = 1;             /* version 1, before the inputs' hash */
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EVERSION);
	bad[4] = 3;
	CHECK_EQ_RC(spirt_xpart_rec_open(&e, bad, len), SPIRT_EVERSION);
	/* the signer at its index, the ids ascending */
	r.index = 0;
	CHECK_EQ_RC(spirt_xpart_rec_sign(buf, sizeof buf, &dummy, &r, k),
	    SPIRT_EINVAL);
	r.index = 1;
	snprintf(r.e[2].id, sizeof r.e[2].id, "p0");
	CHECK_EQ_RC(spirt_xpart_rec_sign(buf, sizeof buf, &dummy, &r, k),
	    SPIRT_EINVAL);
	snprintf(r.e[2].id, sizeof r.e[2].id, "p3");

	/* a result record (kind 2): one hash of the members and one of the
	 * inputs, not their P entries: 320 bytes whatever P */
	{
		unsigned char ent[3 * 64], mem[3 * 32], h[32];

		memset(ent, 0, sizeof ent);
		memset(mem, 0, sizeof mem);
		for (size_t i = 0; i < 3; i++) {
			memcpy(mem + 32 * i, ids[i], 2);
			memcpy(ent + 64 * i, ids[i], 2);
			memcpy(ent + 64 * i + 32, r.e[i].hash, 32);
		}
		CHECK_RC(spirt_xpart_members(r.members, ids, 3));
		spirt_hash(h, mem, sizeof mem);
		CHECK(memcmp(h, r.members, 32) == 0);
		CHECK_RC(spirt_xpart_inputs(r.inputs, r.e, 3));
		spirt_hash(h, ent, sizeof ent);
		CHECK(memcmp(h, r.inputs, 32) == 0);
		/* one slice's hash changed: another inputs' hash */
		r.e[0].hash[0] ^= 1;
		CHECK_RC(spirt_xpart_inputs(h, r.e, 3));
		CHECK(memcmp(h, r.inputs, 32) != 0);
		r.e[0].hash[0] ^= 1;
	}
	r.kind = SPIRT_XPART_RESULT;
	spirt_hash(r.hash, "part 1", 6);
	memset(r.e, 0, sizeof r.e);     /* (unused in kinds 2 and 3) */
	CHECK_RC(spirt_xpart_rec_sign(buf, sizeof buf, &len, &r, k));
	CHECK(len == 320 && len == spirt_xpart_rec_size(SPIRT_XPART_RESULT,
	    3, 0) && len == spirt_xpart_rec_size(SPIRT_XPART_COVER, 257, 0));
	CHECK(spirt_xpart_rec_size(SPIRT_XPART_RESULT, 3, 1) == 320 + 216);
	CHECK(memcmp(buf, "SPXP\2\2\0\0", 8) == 0);
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
		CHECK_EQ_RC(spirt_xpart_verdict_parse("members=p1 p3\nbad=\n",
		    19, VM, 16, &v, 3), SPIRT_ERUN);
#undef VM
	}
	spirt_key_free(k);
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
	return check_failed;
}
