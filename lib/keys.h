/* keys.h - the store's key namespace: build, parse, validate, route */
#ifndef SPIRT_KEYS_H
#define SPIRT_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * Every store key is built, parsed and validated here, and nowhere else
 * (spirt-store(5) lists them; docs/contracts.md says what they hold):
 *
 *   model/<name>@<t>       a model version      opt/<name>@<t>  its state
 *   mstate/<name>@<t>      the model's buffers at t (spirt-model(5))
 *   grad/<t>/<w>           a function's gradient (w: decimal worker)
 *   state/<t>/<w>          the buffers its forward pass measured
 *   agg/<t>                this peer's aggregate  agg/<t>/excluded
 *   xagg/<t>/<peer>        peer <peer>'s aggregate, published or pulled
 *   gagg/<t>               the global aggregate, combined across peers
 *   digest/<t>/<peer>      peer <peer>'s signed digest of step t
 *   data/<ds>/info, data/<ds>/assign, data/<ds>/assign/<r>,
 *   data/<ds>/scale,
 *   data/<ds>/classes, data/<ds>/<k>/x, data/<ds>/<k>/y
 *                          a data set and its shard k
 *   beat/<member>          a member's heartbeat
 *   health/<member>        the watcher's view of it (spirt-beat(1))
 *
 * Steps and shard numbers are unpadded decimal ("0", never "007"), at
 * most SPIRT_KEY_STEP_MAX.  Names (<name>, <ds>) pass spirt_name_check();
 * peer and member ids pass spirt_key_id_check().
 *
 * Builders write the key into buf (cap bytes with the NUL) and return 0,
 * or SPIRT_EKEY for a bad part or a key that does not fit: never a
 * truncated key.  A buffer of SPIRT_KEY_MAX + 1 bytes holds every key.
 */

#define SPIRT_KEY_MAX 511               /* LMDB's default max key size */
#define SPIRT_NAME_PART_MAX 255         /* model and data set names */
#define SPIRT_KEY_ID_MAX 32             /* peer and member ids */
#define SPIRT_KEY_STEP_MAX (UINT64_MAX - 1)     /* UINT64_MAX: no step */

/* the roots of the step-versioned families, for listing and pruning */
#define SPIRT_KEY_GRAD_ROOT "grad/"
#define SPIRT_KEY_AGG_ROOT "agg/"
#define SPIRT_KEY_MOM_ROOT "mom/"
#define SPIRT_KEY_STATE_ROOT "state/"
#define SPIRT_KEY_XAGG_ROOT "xagg/"
#define SPIRT_KEY_GAGG_ROOT "gagg/"
#define SPIRT_KEY_DIGEST_ROOT "digest/"

/* Validate a key: 1..SPIRT_KEY_MAX printable ASCII bytes, no spaces. */
SPIRT_MUST_CHECK int spirt_key_check(const char *key);

/*
 * A model or data set name, as keys hold it (model/<name>@<t>,
 * data/<name>/...): 1..SPIRT_NAME_PART_MAX letters, digits, '.', '_' or
 * '-', not starting with '.' (so never "." or "..").  The one check every
 * tool's -m goes through.  Returns 0 or SPIRT_EKEY.
 */
SPIRT_MUST_CHECK int spirt_name_check(const char *name) SPIRT_NONNULL(1);

/*
 * A peer, function or run id: 1..SPIRT_KEY_ID_MAX letters, digits, '.',
 * '_' or '-', starting with a letter or digit (spirt_id_valid() in
 * crypto.h is this rule).  Returns 0 or SPIRT_EKEY.
 */
SPIRT_MUST_CHECK int spirt_key_id_check(const char *id) SPIRT_NONNULL(1);

/*
 * Split a model version's key "model/<name>@<t>": the name (checked by
 * spirt_name_check()) into name (cap bytes), the step into *step.
 * Returns 0 or SPIRT_EKEY.
 */
SPIRT_MUST_CHECK int spirt_model_key_parse(const char *key, char *name,
    size_t cap, uint64_t *step) SPIRT_NONNULL(1, 2, 4);

/*
 * A function's binding, read from its member id (docs/protocol.md,
 * "Authorisation"): "<peer>.w<first>" or "<peer>.w<first>-<last>", split
 * at the last '.', binds the function to workers first .. last of peer
 * <peer> (an id), the only gradient slots grad/<t>/<w> it may write there.
 * The numbers are unpadded decimal below 2^32, first <= last.  On success
 * the peer's id goes into peer (cap bytes), the workers into *first and
 * *last.  Returns 0, or SPIRT_EKEY for an id without a binding ("f1") or
 * not an id at all.
 */
SPIRT_MUST_CHECK int spirt_fn_binding(const char *id, char *peer,
    size_t cap, uint32_t *first, uint32_t *last) SPIRT_NONNULL(1, 2, 4, 5);

/* ---- builders ---- */

SPIRT_MUST_CHECK int spirt_key_model(char *buf, size_t cap, const char *name,
    uint64_t step) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_opt(char *buf, size_t cap, const char *name,
    uint64_t step) SPIRT_NONNULL(1, 3);
/* "model/<name>@", "opt/<name>@": the prefix of every version */
SPIRT_MUST_CHECK int spirt_key_model_prefix(char *buf, size_t cap,
    const char *name) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_opt_prefix(char *buf, size_t cap,
    const char *name) SPIRT_NONNULL(1, 3);
/* "mstate/<name>@<t>": the model's state (its buffers) at t, and the
 * prefix of every version */
SPIRT_MUST_CHECK int spirt_key_mstate(char *buf, size_t cap,
    const char *name, uint64_t step) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_mstate_prefix(char *buf, size_t cap,
    const char *name) SPIRT_NONNULL(1, 3);

SPIRT_MUST_CHECK int spirt_key_grad(char *buf, size_t cap, uint64_t step,
    uint32_t worker) SPIRT_NONNULL(1);
/* "grad/<t>/": the prefix of step t's gradients */
SPIRT_MUST_CHECK int spirt_key_grad_prefix(char *buf, size_t cap,
    uint64_t step) SPIRT_NONNULL(1);
/* "mom/<t>/<w>": worker w's momentum of step t (spirt-agg
 * --worker-momentum) */
SPIRT_MUST_CHECK int spirt_key_mom(char *buf, size_t cap, uint64_t step,
    uint32_t worker) SPIRT_NONNULL(1);
/* "state/<t>/<w>": the buffers worker w's function measured at step t,
 * beside its gradient (spirt-function(7)) */
SPIRT_MUST_CHECK int spirt_key_state(char *buf, size_t cap, uint64_t step,
    uint32_t worker) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_key_agg(char *buf, size_t cap, uint64_t step)
    SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_key_agg_excluded(char *buf, size_t cap,
    uint64_t step) SPIRT_NONNULL(1);
/*
 * "<root>/<t>" and "<root>/<t>/excluded": an aggregate under another root
 * than agg (gagg: a peer's global aggregate, spirt-update -a); root NULL
 * is agg, any other root must pass spirt_name_check().
 */
SPIRT_MUST_CHECK int spirt_key_aggroot(char *buf, size_t cap,
    const char *root, uint64_t step) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_key_aggroot_excluded(char *buf, size_t cap,
    const char *root, uint64_t step) SPIRT_NONNULL(1);

/* peers */
SPIRT_MUST_CHECK int spirt_key_xagg(char *buf, size_t cap, uint64_t step,
    const char *peer) SPIRT_NONNULL(1, 4);
SPIRT_MUST_CHECK int spirt_key_gagg(char *buf, size_t cap, uint64_t step)
    SPIRT_NONNULL(1);
/* "gagg/<t>/round": the record of step t's round (who was in, and why) */
SPIRT_MUST_CHECK int spirt_key_gagg_round(char *buf, size_t cap,
    uint64_t step) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_key_digest(char *buf, size_t cap, uint64_t step,
    const char *peer) SPIRT_NONNULL(1, 4);
/* the partitioned exchange's (lib/xpart.h): "xslice/<t>/<owner>", this
 * peer's slice of step t for the owner of a part, or with owner NULL
 * "xslice/<t>", its signed input record; "xpart/<t>", the part it owns,
 * combined, or with sig "xpart/<t>/signed", its signed result record */
SPIRT_MUST_CHECK int spirt_key_xslice(char *buf, size_t cap, uint64_t step,
    const char *owner) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_key_xpart(char *buf, size_t cap, uint64_t step,
    int sig) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_key_beat(char *buf, size_t cap,
    const char *member) SPIRT_NONNULL(1, 3);
/* "health/<member>": what this store's watcher saw of beat/<member> */
SPIRT_MUST_CHECK int spirt_key_health(char *buf, size_t cap,
    const char *member) SPIRT_NONNULL(1, 3);

/* data sets: "data/<ds>/" and the keys under it */
SPIRT_MUST_CHECK int spirt_key_data_prefix(char *buf, size_t cap,
    const char *ds) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_data_info(char *buf, size_t cap,
    const char *ds) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_data_assign(char *buf, size_t cap,
    const char *ds) SPIRT_NONNULL(1, 3);
/* "data/<ds>/assign/<r>": revision r of the assignment, kept (history) */
SPIRT_MUST_CHECK int spirt_key_data_assign_rev(char *buf, size_t cap,
    const char *ds, uint64_t rev) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_data_scale(char *buf, size_t cap,
    const char *ds) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_data_classes(char *buf, size_t cap,
    const char *ds) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_data_x(char *buf, size_t cap, const char *ds,
    uint64_t k) SPIRT_NONNULL(1, 3);
SPIRT_MUST_CHECK int spirt_key_data_y(char *buf, size_t cap, const char *ds,
    uint64_t k) SPIRT_NONNULL(1, 3);

/* ---- parser ---- */

enum spirt_key_kind {
	SPIRT_KEY_NONE = 0,     /* not a key of the namespace */
	SPIRT_KEY_MODEL,        /* name, step */
	SPIRT_KEY_OPT,          /* name, step */
	SPIRT_KEY_GRAD,         /* step, worker */
	SPIRT_KEY_AGG,          /* step */
	SPIRT_KEY_AGG_EXCLUDED, /* step */
	SPIRT_KEY_XAGG,         /* step, peer */
	SPIRT_KEY_GAGG,         /* step */
	SPIRT_KEY_DIGEST,       /* step, peer */
	SPIRT_KEY_BEAT,         /* peer (the member) */
	SPIRT_KEY_DATA_INFO,    /* name */
	SPIRT_KEY_DATA_ASSIGN,  /* name */
	SPIRT_KEY_DATA_SCALE,   /* name */
	SPIRT_KEY_DATA_X,       /* name, shard */
	SPIRT_KEY_DATA_Y,       /* name, shard */
	SPIRT_KEY_DATA_CLASSES, /* name */
	SPIRT_KEY_MOM,          /* step, worker */
	SPIRT_KEY_HEALTH,       /* peer (the member watched) */
	SPIRT_KEY_DATA_ASSIGN_REV,      /* name, step (the revision) */
	SPIRT_KEY_MSTATE,       /* name, step */
	SPIRT_KEY_STATE         /* step, worker */
};

/* A key taken apart; the fields its kind does not use are zero. */
struct spirt_key_parts {
	int kind;                               /* enum spirt_key_kind */
	char name[SPIRT_NAME_PART_MAX + 1];     /* model or data set */
	char peer[SPIRT_KEY_ID_MAX + 1];        /* peer or member id */
	uint64_t step;
	uint64_t shard;
	uint32_t worker;
};

/*
 * Parse key into k.  Returns 0, or SPIRT_EKEY with k->kind SPIRT_KEY_NONE
 * when key is not exactly one of the forms above (a key spirt-store put
 * may still hold: such keys are the user's).
 */
SPIRT_MUST_CHECK int spirt_key_parse(struct spirt_key_parts *k, const char *key)
    SPIRT_NONNULL(1, 2);

/*
 * The step a key is bound to on the wire (docs/protocol.md, "HTTP
 * transport"): t of model/<name>@<t>, mstate/<name>@<t> and of the step
 * families grad/<t>, state/<t>, mom/<t>, agg/<t>, xagg/<t>, gagg/<t> and digest/<t>, with whatever
 * follows the step ("grad/7/3", "gagg/7/round", a listing of step 7's
 * gradients), and of xslice/<t> and xpart/<t> (lib/xpart.h) with or
 * without what follows; 0 for any other key (opt/, data/, beat/, the
 * user's keys).
 */
uint64_t spirt_key_wirestep(const char *key) SPIRT_NONNULL(1);

/* the roots a member of role function may read (spirt-peer(1)) */
#define SPIRT_KEY_MODEL_ROOT "model/"
#define SPIRT_KEY_DATA_ROOT "data/"

/*
 * 1 if the key (len bytes, not necessarily NUL-terminated) lives in the
 * store's scratch environment (spirt-store(5)): values recomputed or
 * refetched each step, never synced: grad/, mom/, agg/, xagg/, gagg/,
 * beat/, health/ (a watcher's monotonic times mean nothing after a
 * reboot).
 * Model versions, optimiser state, data and digests are durable.
 */
int spirt_key_volatile(const char *key, size_t len) SPIRT_NONNULL(1);

#endif
