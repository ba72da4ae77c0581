/* fuzz_xpart.c - the partitioned exchange's signed records a peer pulls
 * from the others (lib/xpart.c, docs/protocol.md "The partitioned
 * exchange") */
#include "store.h"
#include "xpart.h"
#include "fuzz_crypto.h"

/*
 * The first byte picks: the input as it is, or (bit 0) signed by a
 * member whose key is put in (bits 1-2: p1, p2, p3, f1; bit 3: and its
 * token made for that key by the group), so the fields behind the
 * signature are fuzzed; the next 8 bytes are the n and the part count
 * (byte 9, plus one) spirt_xpart_span cuts.  Beyond "no crash": a record
 * opened is of version 3 and signs again to the same bytes; its size is
 * the same for any P and kind (two hashes, no entries); one verified is
 * for our run, by a member in role peer; the spans of any n and count
 * tile [0, n) in order, each floor(n / count) or one more.  First byte
 * 0x10: the rest after the 8 bytes is a member's verdict instead
 * (verdict() below); 0x20: a proof (proof() below); 0x30: a slice as
 * served, with its path (slice() below).
 */
static struct spirt_trust *trust;
static struct spirt_store *store;       /* empty: a proof's check undoes */
static char dir[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	trust = fuzz_trust();
	snprintf(dir, sizeof dir, "%s/fuzz-xpart.XXXXXX", tmp && *tmp &&
	    strlen(tmp) < 32 ? tmp : "/tmp");
	FUZZ_ASSERT(mkdtemp(dir) != NULL);
	FUZZ_ASSERT(spirt_store_open(&store, dir,
	    SPIRT_STORE_CREATE | SPIRT_STORE_NOSYNC) == 0);
	return 0;
}

static int
anykey(void *arg, const char *key, const void *val, size_t len)
{
	(void)arg, (void)key, (void)val, (void)len;
	return 1;
}

/* mode 0x20: the input is a proof (spirt_xpart_proof_check): whatever it
 * says, the store it combines in is left as it was (empty), and a proof
 * that holds says so */
static void
proof(const uint8_t *d, size_t n)
{
	struct spirt_txn *t;
	char msg[600];
	int rc;

	rc = spirt_xpart_proof_check(store, (const char *)d, n, trust,
	    FUZZ_NOW, msg, sizeof msg);
	FUZZ_ASSERT(rc != 0 || strstr(msg, " signed xpart/") != NULL);
	FUZZ_ASSERT(spirt_txn_begin(&t, store, SPIRT_TXN_RDONLY) == 0);
	FUZZ_ASSERT(spirt_store_list(t, "", anykey, NULL) == 0);
	spirt_txn_abort(t);
}

/* mode 0x30: a root (32 bytes), the part k and parts - 1 (a byte each),
 * then a slice as served (spirt_xpart_slice_open): one taken is a record
 * inside the value, whose leaf (of member "p<k + 1>") climbs its path, the
 * bytes before the record, to the root */
static void
slice(const uint8_t *d, size_t n)
{
	unsigned char root[SPIRT_HASH_BYTES], h[SPIRT_HASH_BYTES];
	unsigned char leaf[SPIRT_HASH_BYTES];
	const unsigned char *path;
	const void *rec, *b;
	size_t k, parts, reclen, bn, plen;
	char id[16];

	if (n < SPIRT_HASH_BYTES + 2)
		return;
	memcpy(root, d, SPIRT_HASH_BYTES);
	k = d[SPIRT_HASH_BYTES];
	parts = (size_t)d[SPIRT_HASH_BYTES + 1] + 1;
	snprintf(id, sizeof id, "p%zu", k + 1);
	d += SPIRT_HASH_BYTES + 2;
	n -= SPIRT_HASH_BYTES + 2;
	if (spirt_xpart_slice_open(root, id, k, parts, d, n, &rec,
	    &reclen) != 0)
		return;
	FUZZ_ASSERT(k < parts);
	FUZZ_ASSERT(spirt_store_get_bytes(d, n, &b, &bn) == 0);
	path = b;
	plen = spirt_xpart_path_len(k, parts);
	FUZZ_ASSERT((const unsigned char *)rec == path + plen *
	    SPIRT_HASH_BYTES && reclen == bn - plen * SPIRT_HASH_BYTES);
	spirt_hash(h, rec, reclen);
	spirt_xpart_leaf(leaf, id, h);
	FUZZ_ASSERT(spirt_xpart_climb(h, leaf, k, parts, path, plen) == 0 &&
	    memcmp(h, root, SPIRT_HASH_BYTES) == 0);
}

static const int signers[4] = { FZ_P1, FZ_P2, FZ_P3, FZ_F1 };

static void
spans(struct fuzz_in *in)
{
	uint64_t n = 0, off, len, at = 0;
	size_t parts;

	for (int i = 0; i < 7; i++)
		n = n << 8 | fuzz_u8(in);
	parts = (size_t)fuzz_u8(in) + 1;
	for (size_t k = 0; k < parts; k++) {
		spirt_xpart_span(n, parts, k, &off, &len);
		FUZZ_ASSERT(off == at);
		FUZZ_ASSERT(len == n / parts || len == n / parts + 1);
		at += len;
	}
	FUZZ_ASSERT(at == n);
}

/* mode 0x10: the input is a member's verdict (spirt_xpart_verdict_parse)
 * of a round of p1 p2 p3: one taken is the text it says, byte for byte */
static void
verdict(const uint8_t *d, size_t n)
{
	static const char members[] = "members=p1 p2 p3";
	char again[64];
	long bad;
	int len;

	if (spirt_xpart_verdict_parse(d, n, members, sizeof members - 1, &bad,
	    3) != 0)
		return;
	FUZZ_ASSERT(bad >= -1 && bad < 3);
	len = bad < 0 ? snprintf(again, sizeof again, "%s\nbad=\n", members) :
	    snprintf(again, sizeof again, "%s\nbad=%ld\n", members, bad);
	FUZZ_ASSERT((size_t)len == n && memcmp(again, d, n) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct spirt_xpart_rec r, r2;
	struct fuzz_in in = { d, n };
	unsigned mode = fuzz_u8(&in);
	unsigned char *b, *b2;
	size_t len, need, len2;
	int who = signers[mode >> 1 & 3], rc;

	spans(&in);
	if (mode == 0x10) {
		verdict(in.p, in.n);
		return 0;
	}
	if (mode == 0x20) {
		proof(in.p, in.n);
		return 0;
	}
	if (mode == 0x30) {
		slice(in.p, in.n);
		return 0;
	}
	len = in.n;
	FUZZ_ASSERT((b = malloc(len ? len : 1)) != NULL);
	memcpy(b, in.p, len);
	if ((mode & 1) && len >= SPIRT_XPART_HEAD + SPIRT_SIG_BYTES) {
		/* (the token after the header's two hashes, at 256 in any
		 * kind) */
		size_t at = SPIRT_XPART_RESHEAD;

		memcpy(b + 88, fz.pk[who], SPIRT_PK_BYTES);
		if ((mode & 8) && b[6] == 216 && b[7] == 0 &&
		    len >= at + 216 + SPIRT_SIG_BYTES) {
			/* its token: for that key, by the group */
			memcpy(b + at + 88, fz.pk[who], SPIRT_PK_BYTES);
			memcpy(b + at + 120, fz.pk[FZ_G], SPIRT_PK_BYTES);
			crypto_sign_detached(b + at + 152, NULL, b + at, 152,
			    fz.sk[FZ_G]);
		}
		crypto_sign_detached(b + len - 64, NULL, b, len - 64,
		    fz.sk[who]);
	}
	rc = spirt_xpart_rec_open(&r, b, len);
	if (rc == 0) {
		FUZZ_ASSERT(b[4] == SPIRT_XPART_VERSION);
		FUZZ_ASSERT(len == spirt_xpart_rec_size(r.kind, r.parts,
		    r.has_token));
		FUZZ_ASSERT(r.kind == SPIRT_XPART_INPUTS ||
		    r.kind == SPIRT_XPART_RESULT ||
		    (r.kind == SPIRT_XPART_COVER && r.parts >= 2));
		FUZZ_ASSERT(r.index < r.parts);
		/* two hashes, not entries: its size does not grow with P;
		 * an input record's second is its root, a result's or
		 * cover's its inputs' hash */
		FUZZ_ASSERT(len == spirt_xpart_rec_size(r.kind, 1,
		    r.has_token));
		FUZZ_ASSERT(memcmp(r.members, b + 192, 32) == 0 &&
		    memcmp(r.kind == SPIRT_XPART_INPUTS ? r.root : r.inputs,
		    b + 224, 32) == 0);
		/* the signer's own key signs the same bytes again */
		if (memcmp(r.pk, fz.pk[who], SPIRT_PK_BYTES) == 0) {
			r2 = r;
			need = spirt_xpart_rec_size(r.kind, r.parts,
			    r.has_token);
			FUZZ_ASSERT((b2 = malloc(need)) != NULL);
			FUZZ_ASSERT(spirt_xpart_rec_sign(b2, need, &len2, &r2,
			    fz.k[who]) == 0 && len2 == len);
			FUZZ_ASSERT(memcmp(b2, b, len) == 0);
			free(b2);
		}
		rc = spirt_xpart_rec_verify(&r2, b, len, FUZZ_RUN, r.id,
		    r.step, trust, FUZZ_NOW);
		if (rc == 0) {
			struct spirt_member m;

			FUZZ_ASSERT(strcmp(r2.run, FUZZ_RUN) == 0);
			if (r2.has_token && (mode & 9) == 9) {
				FUZZ_ASSERT(spirt_token_decode(&m, r2.token) ==
				    0 && strcmp(m.id, r2.id) == 0 &&
				    memcmp(m.pk, r2.pk, SPIRT_PK_BYTES) == 0 &&
				    m.role == SPIRT_ROLE_PEER);
			} else {
				FUZZ_ASSERT(strcmp(r2.id, "p3") == 0 &&
				    memcmp(r2.pk, fz.pk[FZ_P3],
				    SPIRT_PK_BYTES) == 0);
			}
		}
	} else {
		FUZZ_ASSERT(spirt_xpart_rec_verify(&r2, b, len, FUZZ_RUN,
		    "p1", 0, trust, FUZZ_NOW) == rc);
	}
	free(b);
	return 0;
}
