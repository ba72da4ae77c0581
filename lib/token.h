/* token.h - member tokens: made, verified, their files (ISC licence) */
#ifndef SPIRT_TOKEN_H
#define SPIRT_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "keyfile.h"

/*
 * A member token: the group key's signature of a member's run, id, public
 * key, role and validity (docs/protocol.md, "Member token").
 */

#define SPIRT_TOKEN_BYTES 216           /* a member token */

/* ---- membership ---- */

/* A member as a token or the allowlist vouches for it. */
struct spirt_member {
	char id[SPIRT_ID_MAX + 1];
	char run[SPIRT_ID_MAX + 1];
	unsigned char pk[SPIRT_PK_BYTES];
	int role;                       /* SPIRT_ROLE_* */
	uint64_t issued;                /* 0 from the allowlist */
	uint64_t expires;               /* UINT64_MAX from the allowlist */
};

/*
 * Make a member token: the group key signs run, id, the member's public
 * key, role and the validity [issued, expires).
 * @param tok out: SPIRT_TOKEN_BYTES bytes
 * Returns SPIRT_EINVAL for a bad id or role or expires <= issued.
 */
SPIRT_MUST_CHECK int spirt_token_make(unsigned char tok[SPIRT_TOKEN_BYTES],
    const struct spirt_key *group, const char *run, const char *id,
    const unsigned char pk[SPIRT_PK_BYTES], int role, uint64_t issued,
    uint64_t expires) SPIRT_NONNULL(1, 2, 3, 4, 5);
/*
 * Verify a token against the group public key, for run, at time now, for
 * one of the roles in the mask roles.  On success m (may be NULL) holds
 * what it vouches for.  Refusals: SPIRT_ETRUNC/EDATA (size), SPIRT_EMAGIC,
 * SPIRT_EVERSION, SPIRT_EUNKNOWNKEY (made by another group key),
 * SPIRT_EMAC (signature), SPIRT_ERUN, SPIRT_EEXPIRED, SPIRT_EROLE.
 */
SPIRT_MUST_CHECK int spirt_token_verify(struct spirt_member *m,
    const unsigned char *tok, size_t len,
    const unsigned char group_pk[SPIRT_PK_BYTES], const char *run,
    uint64_t now, int roles) SPIRT_NONNULL(2, 4, 5);
/* Token files (text, docs/protocol.md): format into buf, parse from text. */
SPIRT_MUST_CHECK int spirt_token_format(char *buf, size_t cap, size_t *len,
    const unsigned char tok[SPIRT_TOKEN_BYTES]) SPIRT_NONNULL(1, 3, 4);
SPIRT_MUST_CHECK int spirt_token_parse(unsigned char tok[SPIRT_TOKEN_BYTES],
    const char *text, size_t len) SPIRT_NONNULL(1, 2);
/* Decode a token's fields without verifying it (for display). */
SPIRT_MUST_CHECK int spirt_token_decode(struct spirt_member *m,
    const unsigned char tok[SPIRT_TOKEN_BYTES]) SPIRT_NONNULL(1, 2);

/* ---- lib-internal: for the other modules of crypto.h ---- */

/*
 * spirt_token_verify, with its group key's signature checked (sig 1) or
 * not (sig 0: the same bytes were checked before, spirt_trust_member).
 */
SPIRT_MUST_CHECK int spirt_token_check(struct spirt_member *m,
    const unsigned char *tok, size_t len,
    const unsigned char group_pk[SPIRT_PK_BYTES], const char *run,
    uint64_t now, int roles, int sig) SPIRT_NONNULL(2, 4, 5);

#endif
