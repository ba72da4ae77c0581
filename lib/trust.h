/* trust.h - whom a peer trusts: group key, allowlist, handshakes (ISC) */
#ifndef SPIRT_TRUST_H
#define SPIRT_TRUST_H

#include <stddef.h>
#include <stdint.h>

#include "token.h"


/*
 * What a peer trusts: its run, the group public key (NULL: tokens are not
 * accepted), an allowlist of public keys, the handshake window, and the
 * newest handshake timestamp accepted from each identity.
 */
struct spirt_trust;

/* @param window timestamps further than this from now are stale (ns) */
SPIRT_MUST_CHECK int spirt_trust_new(struct spirt_trust **t, const char *run,
    const unsigned char *group_pk, uint64_t window) SPIRT_NONNULL(1, 2);
void spirt_trust_free(struct spirt_trust *t);
/* Allow pk as id with role; SPIRT_EINVAL if pk or id is already there. */
SPIRT_MUST_CHECK int spirt_trust_allow(struct spirt_trust *t,
    const unsigned char pk[SPIRT_PK_BYTES], const char *id, int role)
    SPIRT_NONNULL(1, 2, 3);
/*
 * Add an allowlist file's members (docs/protocol.md, "Allowlist").  On
 * SPIRT_EKEYFILE or SPIRT_EVERSION, *line (if not NULL) is the 1-based
 * line at fault.
 */
SPIRT_MUST_CHECK int spirt_trust_allow_parse(struct spirt_trust *t,
    const char *text, size_t len, size_t *line) SPIRT_NONNULL(1, 2);
/*
 * Is the holder of pk, calling itself id, a member in role mask roles at
 * time now?  With a group key and a token (tok != NULL), the token decides
 * (spirt_token_verify, then it must name pk and id: SPIRT_EUNKNOWNKEY);
 * otherwise the allowlist does (SPIRT_EUNKNOWNKEY, SPIRT_EROLE).
 */
SPIRT_MUST_CHECK int spirt_trust_member(struct spirt_member *m,
    const struct spirt_trust *t, const unsigned char pk[SPIRT_PK_BYTES],
    const char *id, const unsigned char *tok, uint64_t now, int roles)
    SPIRT_NONNULL(2, 3, 4);

/* ---- lib-internal: for the other modules of crypto.h ---- */

/* the trust's run id and handshake window (ns) */
const char *spirt_trust_run(const struct spirt_trust *t) SPIRT_NONNULL(1);
uint64_t spirt_trust_window(const struct spirt_trust *t) SPIRT_NONNULL(1);
/*
 * Whether a first handshake message of timestamp ts and BLAKE2b-256 h
 * from identity pk may be accepted: newer than the newest accepted, or
 * older but not among the last ones remembered nor below them (1), else
 * 0.  spirt_trust_record remembers it: 0, or ENOMEM (too many
 * identities).
 */
int spirt_trust_fresh(const struct spirt_trust *t, const unsigned char *pk,
    uint64_t ts, const unsigned char h[32]) SPIRT_NONNULL(1, 2, 4);
SPIRT_MUST_CHECK int spirt_trust_record(struct spirt_trust *t,
    const unsigned char *pk, uint64_t ts, const unsigned char h[32])
    SPIRT_NONNULL(1, 2, 4);

#endif
