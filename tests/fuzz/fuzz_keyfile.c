/* fuzz_keyfile.c - secret and public key files (lib/keyfile.c,
 * docs/protocol.md "Files") */
#include "fuzz_crypto.h"

/*
 * The first byte picks the file kind (secret, public, a public key as hex
 * on a command line) and, for a secret, the file's mode.  Beyond "no
 * crash": a secret file that group or others may touch is refused unread
 * (EKEYPERM) whatever it holds; a secret loaded has the public key its
 * file names; a public key file is only accepted exactly as written.
 */
static struct fuzz_file file;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	fuzz_file_init(&file, "key");
	return 0;
}

static const int modes[8] = { 0600, 0400, 0640, 0604, 0660, 0606, 0700,
	0610 };

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	unsigned mode = fuzz_u8(&in);
	unsigned char pk[SPIRT_PK_BYTES], pk2[SPIRT_PK_BYTES];
	char hex[SPIRT_PK_HEX], *s;
	struct spirt_key *k;
	const char *path;
	int rc, fm;

	switch (mode % 3) {
	case 0:
		fm = modes[mode >> 2 & 7];
		path = fuzz_file_set(&file, in.p, in.n, fm);
		rc = spirt_key_load(&k, path);
		if (fm & 077) {
			FUZZ_ASSERT(rc == SPIRT_EKEYPERM && k == NULL);
			break;
		}
		if (rc != 0) {
			FUZZ_ASSERT(k == NULL);
			break;
		}
		/* PUBLIC= is the key the secret makes */
		spirt_key_public(pk, k);
		spirt_pubkey_format(hex, pk);
		FUZZ_ASSERT(in.n == 43 + 64 + 8 + 64 + 5 &&
		    strncasecmp((const char *)in.p + 43, hex, 64) == 0);
		spirt_key_free(k);
		break;
	case 1:
		path = fuzz_file_set(&file, in.p, in.n, 0644);
		if (spirt_pubkey_load(pk, path) != 0)
			break;
		spirt_pubkey_format(hex, pk);
		FUZZ_ASSERT(in.n == 36 + 7 + 64 + 5 &&
		    strncasecmp((const char *)in.p + 43, hex, 64) == 0);
		break;
	default:
		FUZZ_ASSERT((s = malloc(in.n + 1)) != NULL);
		memcpy(s, in.p, in.n);
		s[in.n] = '\0';
		if (spirt_pubkey_parse(pk, s) == 0) {
			spirt_pubkey_format(hex, pk);
			FUZZ_ASSERT(strcasecmp(s, hex) == 0);
			FUZZ_ASSERT(spirt_pubkey_parse(pk2, hex) == 0 &&
			    memcmp(pk, pk2, sizeof pk) == 0);
		}
		free(s);
		break;
	}
	return 0;
}
