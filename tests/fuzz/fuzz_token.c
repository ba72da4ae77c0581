/* fuzz_token.c - member tokens and token files (lib/token.c,
 * docs/protocol.md "Member token", "Token file") */
#include "fuzz_crypto.h"

/*
 * The first byte picks: 0 a token file's text; 1 a raw token; 2 a raw
 * token re-signed by the group key (so its fields, behind the signature,
 * are what is fuzzed).  The next byte moves the clock.  Beyond "no
 * crash": a token file parsed is written back to the same token, and a
 * token verified names our run, a valid id and role, and has not expired.
 */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	unsigned mode = fuzz_u8(&in), roles = fuzz_u8(&in) % 3 + 1;
	uint64_t now = FUZZ_NOW + ((uint64_t)fuzz_u8(&in) << 40) -
	    ((uint64_t)128 << 40);
	unsigned char tok[SPIRT_TOKEN_BYTES], tok2[SPIRT_TOKEN_BYTES], *raw;
	struct spirt_member m;
	char text[600];
	size_t len, tn;
	int rc;

	if (mode % 3 == 0) {
		if (spirt_token_parse(tok, (const char *)in.p, in.n) != 0)
			return 0;
		FUZZ_ASSERT(spirt_token_format(text, sizeof text, &len, tok) ==
		    0 && len == strlen(text));
		FUZZ_ASSERT(spirt_token_parse(tok2, text, len) == 0);
		FUZZ_ASSERT(memcmp(tok, tok2, sizeof tok) == 0);
		raw = tok;
		tn = sizeof tok;
	} else {
		tn = in.n;
		FUZZ_ASSERT((raw = malloc(tn ? tn : 1)) != NULL);
		memcpy(raw, in.p, tn);
		if (mode % 3 == 2 && tn >= SPIRT_TOKEN_BYTES) {
			memcpy(raw + 120, fz.pk[FZ_G], SPIRT_PK_BYTES);
			crypto_sign_detached(raw + 152, NULL, raw, 152,
			    fz.sk[FZ_G]);
		}
	}
	rc = spirt_token_verify(&m, raw, tn, fz.pk[FZ_G], FUZZ_RUN, now,
	    (int)roles);
	if (rc == 0) {
		FUZZ_ASSERT(tn == SPIRT_TOKEN_BYTES);
		FUZZ_ASSERT(strcmp(m.run, FUZZ_RUN) == 0);
		FUZZ_ASSERT(spirt_id_valid(m.id));
		FUZZ_ASSERT(m.role & (int)roles);
		FUZZ_ASSERT(now < m.expires);
		FUZZ_ASSERT(memcmp(raw + 88, m.pk, SPIRT_PK_BYTES) == 0);
	}
	if (tn == SPIRT_TOKEN_BYTES && spirt_token_decode(&m, raw) == 0) {
		FUZZ_ASSERT(spirt_id_valid(m.id) && spirt_id_valid(m.run));
		FUZZ_ASSERT(m.role == SPIRT_ROLE_PEER ||
		    m.role == SPIRT_ROLE_FUNCTION);
	}
	if (raw != tok)
		free(raw);
	return 0;
}
