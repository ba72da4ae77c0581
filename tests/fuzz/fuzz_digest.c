/* fuzz_digest.c - signed digests a peer pulls from the others (lib/digest.c,
 * docs/protocol.md "Signed digests") */
#include "digest.h"
#include "fuzz_crypto.h"

/*
 * The first byte picks: the input as it is, or (bit 0) signed by a
 * member whose key is put in (bits 1-2: p1, p2, p3, f1; bit 3: and its
 * token made for that key by the group), so the fields behind the
 * signature are fuzzed.  Beyond "no crash": a digest opened signs again
 * to the same bytes, its entries are ascending and never the signer, and
 * one verified is for our run, by a member in role peer.
 */
static struct spirt_trust *trust;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	trust = fuzz_trust();
	return 0;
}

static const int signers[4] = { FZ_P1, FZ_P2, FZ_P3, FZ_F1 };

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct spirt_digest dg, dg2;
	struct fuzz_in in = { d, n };
	unsigned mode = fuzz_u8(&in);
	unsigned char *b, *b2;
	size_t len = in.n, need, len2;
	char text[64 * 1024];
	int who = signers[mode >> 1 & 3], rc;

	FUZZ_ASSERT((b = malloc(len ? len : 1)) != NULL);
	memcpy(b, in.p, len);
	if ((mode & 1) && len >= SPIRT_DIGEST_HEAD + SPIRT_SIG_BYTES) {
		memcpy(b + 88, fz.pk[who], SPIRT_PK_BYTES);
		if ((mode & 8) && b[6] == 216 && b[7] == 0 &&
		    len >= SPIRT_DIGEST_HEAD + 216 + SPIRT_SIG_BYTES) {
			/* its token: for that key, by the group */
			memcpy(b + 184 + 88, fz.pk[who], SPIRT_PK_BYTES);
			memcpy(b + 184 + 120, fz.pk[FZ_G], SPIRT_PK_BYTES);
			crypto_sign_detached(b + 184 + 152, NULL, b + 184, 152,
			    fz.sk[FZ_G]);
		}
		crypto_sign_detached(b + len - 64, NULL, b, len - 64,
		    fz.sk[who]);
	}
	rc = spirt_digest_open(&dg, b, len);
	if (rc == 0) {
		FUZZ_ASSERT(len == spirt_digest_size(dg.n, dg.has_token));
		for (size_t i = 0; i < dg.n; i++) {
			FUZZ_ASSERT(strcmp(dg.got[i].id, dg.id) != 0);
			FUZZ_ASSERT(i == 0 ||
			    strcmp(dg.got[i - 1].id, dg.got[i].id) < 0);
			FUZZ_ASSERT(spirt_digest_hash_of(&dg, dg.got[i].id) ==
			    dg.got[i].hash);
		}
		FUZZ_ASSERT(spirt_digest_format(text, sizeof text, &dg) <
		    sizeof text);
		/* the signer's own key signs the same bytes again */
		if (memcmp(dg.pk, fz.pk[who], SPIRT_PK_BYTES) == 0) {
			dg2 = dg;
			need = spirt_digest_size(dg.n, dg.has_token);
			FUZZ_ASSERT((b2 = malloc(need)) != NULL);
			FUZZ_ASSERT(spirt_digest_sign(b2, need, &len2, &dg2,
			    fz.k[who]) == 0 && len2 == len);
			FUZZ_ASSERT(memcmp(b2, b, len) == 0);
			FUZZ_ASSERT(!spirt_digest_conflict(&dg, &dg2));
			free(b2);
		}
		rc = spirt_digest_verify(&dg2, b, len, FUZZ_RUN, NULL, dg.step,
		    trust, FUZZ_NOW);
		if (rc == 0) {
			struct spirt_member m;

			FUZZ_ASSERT(strcmp(dg2.run, FUZZ_RUN) == 0);
			/* a member: on the allowlist (p3), or by a token
			 * for its key and id, which only the harness signs
			 * for the group (bits 0 and 3) */
			if (dg2.has_token && (mode & 9) == 9) {
				FUZZ_ASSERT(spirt_token_decode(&m, dg2.token) ==
				    0 && strcmp(m.id, dg2.id) == 0 &&
				    memcmp(m.pk, dg2.pk, SPIRT_PK_BYTES) == 0 &&
				    m.role == SPIRT_ROLE_PEER);
			} else {
				FUZZ_ASSERT(strcmp(dg2.id, "p3") == 0 &&
				    memcmp(dg2.pk, fz.pk[FZ_P3],
				    SPIRT_PK_BYTES) == 0);
			}
		}
	} else {
		FUZZ_ASSERT(spirt_digest_verify(&dg2, b, len, FUZZ_RUN, NULL,
		    0, trust, FUZZ_NOW) == rc);
	}
	free(b);
	return 0;
}
