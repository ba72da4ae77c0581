/* fuzz_allow.c - allowlist files (lib/trust.c, docs/protocol.md
 * "Allowlist file") */
#include "fuzz_crypto.h"

/*
 * Beyond "no crash": every MEMBER line of an allowlist accepted is then a
 * member, under its id and in its role, and nobody else is; a refusal
 * names a line of the file (or the one after its last).
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
	const char *s = (const char *)d, *end = s + n, *l;
	struct spirt_trust *t;
	struct spirt_member m;
	size_t line = 0, lines = 0, members = 0;
	int rc;

	FUZZ_ASSERT(spirt_trust_new(&t, FUZZ_RUN, NULL, FUZZ_WINDOW) == 0);
	rc = spirt_trust_allow_parse(t, s, n, &line);
	for (l = s; l < end; l++)
		lines += *l == '\n';
	if (rc != 0) {
		FUZZ_ASSERT(rc == SPIRT_EKEYFILE || rc == SPIRT_EVERSION);
		FUZZ_ASSERT(line >= 1 && line <= lines + 1);
		spirt_trust_free(t);
		return 0;
	}
	FUZZ_ASSERT(line == 0);
	for (l = s; l < end; ) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t len = (size_t)(nl - l);

		FUZZ_ASSERT(nl != NULL);
		if (len > 7 && memcmp(l, "MEMBER=", 7) == 0) {
			unsigned char pk[SPIRT_PK_BYTES];
			char hex[SPIRT_PK_HEX], id[SPIRT_ID_MAX + 1];
			const char *sp = memchr(l + 72, ' ', len - 72);
			int role = l[72] == 'p' ? SPIRT_ROLE_PEER :
			    SPIRT_ROLE_FUNCTION;

			FUZZ_ASSERT(len > 72 && l[71] == ' ' && sp != NULL);
			memcpy(hex, l + 7, 64);
			hex[64] = '\0';
			FUZZ_ASSERT(spirt_pubkey_parse(pk, hex) == 0);
			FUZZ_ASSERT((size_t)(nl - sp - 1) <= SPIRT_ID_MAX);
			memcpy(id, sp + 1, (size_t)(nl - sp - 1));
			id[nl - sp - 1] = '\0';
			FUZZ_ASSERT(spirt_trust_member(&m, t, pk, id, NULL,
			    FUZZ_NOW, role) == 0);
			FUZZ_ASSERT(m.role == role && strcmp(m.id, id) == 0);
			FUZZ_ASSERT(spirt_trust_member(&m, t, pk, id, NULL,
			    FUZZ_NOW, 3 - role) == SPIRT_EROLE);
			members++;
		}
		l = nl + 1;
	}
	/* a key that is no line's */
	FUZZ_ASSERT(spirt_trust_member(&m, t, fz.pk[FZ_G], "group", NULL,
	    FUZZ_NOW, 3) == SPIRT_EUNKNOWNKEY || members > 0);
	spirt_trust_free(t);
	return 0;
}
