/* lineage.h - a store's signed digests, step by step: does the chain hold */
#ifndef SPIRT_LINEAGE_H
#define SPIRT_LINEAGE_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "store.h"
#include "trust.h"

/*
 * The hash a digest names for model <model>@<step> in t's store: the
 * values' hash of the whole value, or, for a model with state
 * (spirt-model(5)), the hash of that hash then mstate/<model>@<step>'s.
 * On an error, key (cap bytes) names the key that failed.  Returns 0,
 * SPIRT_ENOTFOUND (no model@step) or a store error.
 */
SPIRT_MUST_CHECK int spirt_model_hash(unsigned char h[SPIRT_HASH_BYTES],
    struct spirt_txn *t, const char *model, uint64_t step, char *key,
    size_t cap) SPIRT_NONNULL(1, 2, 3, 5);

/*
 * Whom a chain is checked against: run, and the group public key (a file,
 * or 64 hex digits, or a file of them) and/or an allowlist file.  Returns
 * 0, or an error with msg naming the file.
 */
SPIRT_MUST_CHECK int spirt_lineage_trust(struct spirt_trust **t,
    const char *run, const char *group, const char *allow, char *msg,
    size_t cap) SPIRT_NONNULL(1, 2, 5);

/* The run of the store's first digest: 0, SPIRT_ENOTFOUND (no digest),
 * or the digest's or the store's errors. */
SPIRT_MUST_CHECK int spirt_lineage_run(struct spirt_store *s,
    char run[SPIRT_ID_MAX + 1]) SPIRT_NONNULL(1, 2);

/* how a step's link breaks */
enum spirt_lineage_break {
	SPIRT_LN_HOLDS = 0,
	SPIRT_LN_MISSING,       /* no digest of the step */
	SPIRT_LN_DIGEST,        /* peer's digest does not verify (rc) */
	SPIRT_LN_MODELS,        /* peer's model hash is not other's */
	SPIRT_LN_RECEIVED,      /* peer lists for other another hash than
				 * other's own aggregate */
	SPIRT_LN_STORED,        /* the stored model@t hashes otherwise */
	SPIRT_LN_STORE          /* the store could not be read (rc) */
};

/* one step of the chain, as the walk hands it on */
struct spirt_lineage_step {
	uint64_t step;
	uint64_t to;                    /* _MISSING: the gap's last step;
					 * else step */
	int broken;                     /* enum spirt_lineage_break */
	int rc;                         /* SPIRT_LN_DIGEST, _STORE: why */
	char peer[SPIRT_ID_MAX + 1];    /* whose digest broke it */
	char other[SPIRT_ID_MAX + 1];   /* _MODELS, _RECEIVED: against whom */
	char key[SPIRT_KEY_MAX + 1];    /* the key at fault, if one */
	unsigned char model[SPIRT_HASH_BYTES];  /* the digests' model hash */
	int kept;                       /* model@t is in the store */
	unsigned char stored[SPIRT_HASH_BYTES]; /* its hash, if kept */
	size_t nsigned;                 /* digests of the step */
	size_t n;                       /* contributors, ascending ids */
	char who[SPIRT_DIGEST_MAXPEERS][SPIRT_ID_MAX + 1];
	int signer[SPIRT_DIGEST_MAXPEERS];      /* who[i] signed a digest */
};

/*
 * Walk the digests digest/<t>/<peer> of s from step 0 to the last step
 * any digest names, and call fn once a step, in order (once for a run of
 * steps without digests, st->step to st->to): each digest must
 * verify (spirt_digest_verify, for run and the peer its key names, with
 * tr: a token as at its issue, so that a chain outlives its tokens), the
 * step's digests must name one model hash, the one of the stored
 * model@t where it is kept (spirt_model_hash), and what each lists as
 * received from another signer must be that signer's own aggregate hash.
 * The contributors of a step are its signers and the peers they list.
 * fn returning non-zero stops the walk with that value.  *last (out):
 * the last step; *broken (out): how many steps broke.  Returns 0,
 * SPIRT_ENOTFOUND (no digest at all), ENOMEM, a store error or fn's.
 */
SPIRT_MUST_CHECK int spirt_lineage_walk(struct spirt_store *s,
    const char *model, const char *run, const struct spirt_trust *tr,
    int (*fn)(void *arg, const struct spirt_lineage_step *st), void *arg,
    uint64_t *last, uint64_t *broken) SPIRT_NONNULL(1, 2, 3, 4, 5, 7, 8);

#endif
