/* token.c - member tokens: made, verified, their files (ISC licence) */
#include <string.h>

#include <sodium.h>

#include "kv.h"
#include "le.h"
#include "token.h"

/* docs/protocol.md, "Member token"; a token file is a key file's text */
#define TOK_MAGIC "SPTK"
#define FMT_VERSION 1
#define TOK_SIGNED 152                  /* token bytes under the signature */

/* ---- member tokens ---- */

/*
 * Token layout (216 bytes): magic "SPTK", version, role, 2 zero bytes,
 * issued, expires, run[32], id[32], member pk[32], group pk[32], then the
 * group key's Ed25519 signature of those 152 bytes.
 */

int
spirt_token_make(unsigned char tok[SPIRT_TOKEN_BYTES],
    const struct spirt_key *group, const char *run, const char *id,
    const unsigned char pk[SPIRT_PK_BYTES], int role, uint64_t issued,
    uint64_t expires)
{
	if (!spirt_id_valid(run) || !spirt_id_valid(id) || !spirt_role_valid(role) ||
	    expires <= issued)
		return SPIRT_EINVAL;
	memcpy(tok, TOK_MAGIC, 4);
	tok[4] = FMT_VERSION;
	tok[5] = (unsigned char)role;
	spirt_le_put16(tok + 6, 0);
	spirt_le_put64(tok + 8, issued);
	spirt_le_put64(tok + 16, expires);
	spirt_id_pack(tok + 24, run);
	spirt_id_pack(tok + 56, id);
	memcpy(tok + 88, pk, SPIRT_PK_BYTES);
	spirt_key_public(tok + 120, group);
	spirt_key_sign(tok + TOK_SIGNED, group, tok, TOK_SIGNED);
	return 0;
}

int
spirt_token_decode(struct spirt_member *m,
    const unsigned char tok[SPIRT_TOKEN_BYTES])
{
	if (memcmp(tok, TOK_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (tok[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (!spirt_role_valid(tok[5]) || spirt_le_get16(tok + 6) != 0 ||
	    spirt_id_unpack(m->run, tok + 24) || spirt_id_unpack(m->id, tok + 56))
		return SPIRT_EDATA;
	m->role = tok[5];
	m->issued = spirt_le_get64(tok + 8);
	m->expires = spirt_le_get64(tok + 16);
	memcpy(m->pk, tok + 88, SPIRT_PK_BYTES);
	return 0;
}

int
spirt_token_check(struct spirt_member *m, const unsigned char *tok, size_t len,
    const unsigned char group_pk[SPIRT_PK_BYTES], const char *run,
    uint64_t now, int roles, int sig)
{
	struct spirt_member mm;
	int rc;

	if (len != SPIRT_TOKEN_BYTES)
		return len < SPIRT_TOKEN_BYTES ? SPIRT_ETRUNC : SPIRT_EDATA;
	if (memcmp(tok, TOK_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (tok[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (memcmp(tok + 120, group_pk, SPIRT_PK_BYTES) != 0)
		return SPIRT_EUNKNOWNKEY;
	if (sig && crypto_sign_verify_detached(tok + TOK_SIGNED, tok,
	    TOK_SIGNED, group_pk) != 0)
		return SPIRT_EMAC;
	if ((rc = spirt_token_decode(&mm, tok)) != 0)
		return rc;
	if (strcmp(mm.run, run) != 0)
		return SPIRT_ERUN;
	if (now >= mm.expires)
		return SPIRT_EEXPIRED;
	if (!(mm.role & roles))
		return SPIRT_EROLE;
	if (m != NULL)
		*m = mm;
	return 0;
}

int
spirt_token_verify(struct spirt_member *m, const unsigned char *tok,
    size_t len, const unsigned char group_pk[SPIRT_PK_BYTES],
    const char *run, uint64_t now, int roles)
{
	return spirt_token_check(m, tok, len, group_pk, run, now, roles, 1);
}

int
spirt_token_format(char *buf, size_t cap, size_t *len,
    const unsigned char tok[SPIRT_TOKEN_BYTES])
{
	struct spirt_kvw w;

	spirt_kvw_init(&w, buf, cap, "spirt-token");
	spirt_kvw_hex(&w, "TOKEN", tok, SPIRT_TOKEN_BYTES);
	return spirt_kvw_end(&w, len) ? SPIRT_EINVAL : 0;
}

int
spirt_token_parse(unsigned char tok[SPIRT_TOKEN_BYTES], const char *text,
    size_t len)
{
	struct spirt_kvr r;
	int rc;

	if ((rc = spirt_kvr_open(&r, text, len, "spirt-token", NULL, 0)))
		return rc == SPIRT_EVERSION ? rc : SPIRT_EKEYFILE;
	if (spirt_kvr_want(&r, "TOKEN") ||
	    spirt_text_hex(tok, SPIRT_TOKEN_BYTES, r.val, r.vlen) ||
	    spirt_kvr_end(&r))
		return SPIRT_EKEYFILE;
	return 0;
}
