/* fuzz_hs.c - the handshake messages (lib/handshake.c, docs/protocol.md
 * "Handshake") */
#include "fuzz_crypto.h"

/*
 * A mutated message stops at the signature, so the harness also signs
 * what the fuzzer made, as a member would: the first byte picks
 *
 *   0  the input, as it is, to the responder p1;
 *   1  a first message from a member (bits 2-4: p2, f1, p3, f2, p1): the
 *      input with the member's identity key put in (bit 0x80: its token
 *      made to name that key and signed by the group), signed;
 *   2  an answer to a real first message of f1: the input (bit 4: with
 *      p1's key and the echo of that message put in, signed by p1; bit
 *      0x80 as above);
 *   3  a real handshake between a member and p1, with bytes of either
 *      message changed in flight (then nothing but a refusal is right).
 *
 * In modes 1 and 2, bit 0x40 makes the message's timestamp the
 * receiver's now; the second byte moves that clock.
 *
 * Beyond "no crash": a first message accepted once is refused the second
 * time (EREPLAY), a finished handshake takes no second answer, an
 * untouched handshake yields sessions that talk both ways, and a changed
 * byte of a signed message is always refused.
 */
static struct spirt_trust *trust_init;          /* f1's: the group key */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	FUZZ_ASSERT(spirt_trust_new(&trust_init, FUZZ_RUN, fz.pk[FZ_G],
	    FUZZ_WINDOW) == 0);
	FUZZ_ASSERT(spirt_trust_allow(trust_init, fz.pk[FZ_P1], "p1",
	    SPIRT_ROLE_PEER) == 0);
	return 0;
}

/* member i signs m[0..len) as its handshake message */
static void
resign(unsigned char *m, size_t len, int i, int tokfix)
{
	size_t toklen;

	if (len < SPIRT_HS_BYTES)
		return;
	memcpy(m + 112, fz.pk[i], SPIRT_PK_BYTES);
	toklen = (size_t)m[6] | (size_t)m[7] << 8;
	if (tokfix && toklen == SPIRT_TOKEN_BYTES &&
	    len >= 240 + SPIRT_TOKEN_BYTES) {
		/* the token names the key and is the group's */
		memcpy(m + 240 + 88, fz.pk[i], SPIRT_PK_BYTES);
		memcpy(m + 240 + 120, fz.pk[FZ_G], SPIRT_PK_BYTES);
		crypto_sign_detached(m + 240 + 152, NULL, m + 240, 152,
		    fz.sk[FZ_G]);
	}
	crypto_sign_detached(m + len - 64, NULL, m, len - 64, fz.sk[i]);
}

/* two sessions of one handshake talk both ways */
static void
talk(struct spirt_session *a, struct spirt_session *b)
{
	unsigned char out[256], pt[64];
	size_t len, n;

	FUZZ_ASSERT(spirt_session_seal(a, out, sizeof out, &len, 7,
	    "agg/7/p1", "ping", 4) == 0);
	FUZZ_ASSERT(spirt_session_open(b, pt, sizeof pt, &n, 7, "agg/7/p1",
	    out, len) == 0 && n == 4 && memcmp(pt, "ping", 4) == 0);
	FUZZ_ASSERT(spirt_session_open(b, pt, sizeof pt, &n, 7, "agg/7/p1",
	    out, len) == SPIRT_EREPLAY);
	FUZZ_ASSERT(spirt_session_seal(b, out, sizeof out, &len, 7,
	    "agg/7/p1", "pong", 4) == 0);
	FUZZ_ASSERT(spirt_session_open(a, pt, sizeof pt, &n, 7, "agg/7/p1",
	    out, len) == 0 && n == 4 && memcmp(pt, "pong", 4) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	struct spirt_self p1 = fuzz_self(FZ_P1), f1 = fuzz_self(FZ_F1), me;
	struct spirt_session *s = NULL, *s2 = NULL;
	struct spirt_trust *t = fuzz_trust();
	struct spirt_hs *hs = NULL;
	unsigned char m1[SPIRT_HS_MAX], m2[SPIRT_HS_MAX], *m;
	unsigned char orig[SPIRT_HS_MAX];
	size_t n1, n2, len, k;
	const uint8_t *p;
	uint64_t now;
	unsigned mode = fuzz_u8(&in), who;
	int rc, roles = SPIRT_ROLE_PEER | SPIRT_ROLE_FUNCTION;

	fuzz_crypto_reset();
	/* the clock: now, or up to about a minute either side */
	now = FUZZ_NOW + ((uint64_t)fuzz_u8(&in) - 128) * 500000000u;
	p = fuzz_take(&in, SPIRT_HS_MAX + 64, &len);
	FUZZ_ASSERT((m = malloc(len ? len : 1)) != NULL);
	memcpy(m, p, len);
	if ((mode & 0x40) && len >= 16 && (mode & 3) != 3) {
		/* sent at the receiver's now */
		for (int b = 0; b < 8; b++)
			m[8 + b] = (unsigned char)(now >> (8 * b));
	}
	switch (mode & 3) {
	case 0:
	case 1:
		/* the member whose key signs it: p2, f1, p3, f2 or p1 */
		who = FZ_P2 + (mode >> 2 & 7) % 5;
		if (who == FZ_NKEYS)
			who = FZ_P1;
		if ((mode & 3) == 1)
			resign(m, len, (int)who, mode & 0x80);
		rc = spirt_hs_respond(&s, m2, sizeof m2, &n2, &p1, t, m, len,
		    now, roles);
		if (rc == 0) {
			FUZZ_ASSERT(s != NULL && n2 >= SPIRT_HS_BYTES);
			FUZZ_ASSERT(!spirt_session_confirmed(s));
			FUZZ_ASSERT(spirt_session_peer(s)->role & roles);
			spirt_session_free(s);
			FUZZ_ASSERT(spirt_hs_respond(&s, m2, sizeof m2, &n2,
			    &p1, t, m, len, now, roles) == SPIRT_EREPLAY);
		}
		FUZZ_ASSERT(s == NULL);
		break;
	case 2:
		FUZZ_ASSERT(spirt_hs_init(&hs, m1, sizeof m1, &n1, &f1,
		    trust_init, "p1", FUZZ_NOW) == 0);
		if (len >= SPIRT_HS_BYTES && (mode & 4)) {
			crypto_generichash(m + 208, 32, m1, n1, NULL, 0);
			resign(m, len, FZ_P1, mode & 0x80);
		}
		rc = spirt_hs_finish(&s, hs, trust_init, m, len, now,
		    SPIRT_ROLE_PEER);
		if (rc == 0) {
			FUZZ_ASSERT(s != NULL && spirt_session_confirmed(s));
			FUZZ_ASSERT(strcmp(spirt_session_peer(s)->id, "p1") ==
			    0);
			spirt_session_free(s);
			s = NULL;
			FUZZ_ASSERT(spirt_hs_finish(&s, hs, trust_init, m, len,
			    now, SPIRT_ROLE_PEER) == SPIRT_EREPLAY);
		}
		FUZZ_ASSERT(s == NULL);
		spirt_hs_free(hs);
		break;
	default:
		/* f1 or p3 to p1; changes: (offset, xor) from the input */
		who = mode & 4 ? FZ_P3 : FZ_F1;
		me = fuzz_self((int)who);
		FUZZ_ASSERT(spirt_hs_init(&hs, m1, sizeof m1, &n1, &me,
		    trust_init, "p1", FUZZ_NOW) == 0);
		memcpy(orig, m1, n1);
		for (size_t i = 0; i + 2 < len && !(mode & 8); i += 3) {
			size_t off = (size_t)m[i] | (size_t)m[i + 1] << 8;

			if (off < n1)
				m1[off] ^= m[i + 2];
		}
		/* two changes of one byte may undo each other */
		k = memcmp(orig, m1, n1) != 0;
		rc = spirt_hs_respond(&s2, m2, sizeof m2, &n2, &p1, t, m1, n1,
		    FUZZ_NOW, roles);
		if (k) {
			FUZZ_ASSERT(rc != 0 && s2 == NULL);
		} else {
			FUZZ_ASSERT(rc == 0);
			memcpy(orig, m2, n2);
			for (size_t i = 0; i + 2 < len; i += 3) {
				size_t off = (size_t)m[i] |
				    (size_t)m[i + 1] << 8;

				if (off < n2)
					m2[off] ^= m[i + 2];
			}
			k = memcmp(orig, m2, n2) != 0;
			rc = spirt_hs_finish(&s, hs, trust_init, m2, n2,
			    FUZZ_NOW, SPIRT_ROLE_PEER);
			if (k) {
				FUZZ_ASSERT(rc != 0 && s == NULL);
			} else {
				FUZZ_ASSERT(rc == 0);
				talk(s, s2);
			}
		}
		spirt_session_free(s);
		spirt_session_free(s2);
		spirt_hs_free(hs);
		break;
	}
	free(m);
	spirt_trust_free(t);
	return 0;
}
