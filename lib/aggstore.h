/* aggstore.h - gather a step's gradients (store, files), write agg/<t> */
#ifndef SPIRT_AGGSTORE_H
#define SPIRT_AGGSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "agg.h"
#include "slot.h"
#include "spirt.h"
#include "store.h"
#include "tensor.h"

/*
 * A gradient set: up to SPIRT_AGG_MAXW gradient records, read zero-copy
 * from the store (payloads point into the map and are valid until the
 * transaction ends) or from record streams (owned buffers), checked for
 * agreement, then aggregated with spirt_agg_run().
 *
 * The caller fills the "in" fields once; every other field is reset by
 * spirt_aggset_reset(), so a set may serve many steps (spirt-agg
 * --serve) without carrying anything over from one to the next.
 *
 * On failure a function returns the code and leaves a one-line message
 * without the program name in msg ("grad/3/7: no such key"); msg is empty
 * when there is nothing to add to the code.
 */
struct spirt_aggset_in {
	char name[SPIRT_KEY_MAX + 32];  /* key, or "file:record N" */
	struct spirt_tensor t;
	const float *x;                 /* payload, 4-byte aligned */
	void *own;                      /* buffer to free, or NULL */
	int pre;                        /* left out before the rule:
					   SPIRT_AGG_XSTALE, _XPAST, or 0 */
	uint64_t bound;                 /* the samples the assignment in
					   force gives it (spirt_aggset_filter
					   with batch), or 0: max_samples */
};

/* a record given in memory, not read from the store */
struct spirt_aggval {
	const void *v;          /* NULL: read the key from the store */
	size_t len;
};

struct spirt_aggset {
	/* in */
	struct spirt_agg_params p;
	uint64_t step;          /* every input's step; SPIRT_NOSTEP: any */
	int verify;             /* check payload checksums of store values */
	/* ... but not of the keys spirt_agg_store_step is given: their
	 * values were checked by the caller (spirt-peer exchange: each as
	 * it came); the centre's and the momenta's still are */
	int keys_checked;
	/* spirt_agg_store_step: NULL, or vals[i].v is keys[i]'s record,
	 * given in memory (spirt-peer exchange: the aggregates it pulled
	 * and does not store), decoded and checked as the store's would be
	 * (verify, keys_checked); named keys[i] in messages; valid for the
	 * call (the in-memory payload is read in place) */
	const struct spirt_aggval *vals;
	int replace;            /* spirt_agg_store_step: replace agg/<t> */
	int prune;              /* ... and remove spent steps (< t - 1) */
	/* the most samples one gradient can have used (its batch): a count
	 * above an input's bound counts as that bound, for wmean's weights
	 * and the result's samples; the bound is in->bound where the
	 * assignment sets one, else max_samples; 0: no bound */
	uint64_t max_samples;
	/* the functions' batch (spirt-grad -b), or 0: with revcheck and an
	 * assignment in force (data/<dataset>/assign and info in txn),
	 * spirt_aggset_filter bounds each input by the samples it gives the
	 * input's worker (its origin) at its step, with this batch
	 * (spirt_assign_samples): more than the batch after a dead worker's
	 * were reassigned, fewer at an epoch's short last step */
	uint64_t batch;
	/* spirt_agg_store_step writes <out>/<t> and <out>/<t>/excluded
	 * (NULL: "agg"; spirt-peer exchange: "gagg") */
	const char *out;
	/* spirt_agg_store_step: NULL, or a peer id: the aggregate is
	 * written as that peer's published one, xagg/<t>/<publish>
	 * (spirt-peer(1) exchange publishes it as it is, without a copy);
	 * <out>/<t>/excluded as ever.  One there already stands, even with
	 * replace (a peer publishes one aggregate a step: a second would
	 * be equivocation): nothing is written, published is set, and hdr
	 * is its header.  cclip's centre is then xagg/<t-1>/<publish> */
	const char *publish;
	int published;          /* out: xagg/<t>/<publish> stood */
	/* spirt_agg_store_step: the inputs' origins are their positions in
	 * keys (peers' aggregates, keys in peer id order, carry none) */
	int seq_origin;
	/* cclip's or scclip's centre, ncenter floats (e.g. from a file), not
	 * owned; NULL: center_key, else for cclip agg/<t-1> in the store
	 * (spirt_agg_store_step), else 0 */
	const float *center;
	size_t ncenter;
	/* leave out gradients of another assignment revision than the one in
	 * force (spirt_aggset_filter); dataset names data/<ds>/assign */
	int revcheck;
	const char *dataset;
	/* spirt_agg_store_step: the centre is this store key, f32 of the
	 * inputs' shape (spirt-peer exchange's scclip: the peer's own
	 * xagg/<t>/<self>); NULL: none */
	const char *center_key;
	/*
	 * Worker momentum (Karimireddy, He and Jaggi 2021), beta in [0, 1);
	 * 0: none.  spirt_agg_store_step on the step's gradients (no keys)
	 * then aggregates the workers' momenta instead of their gradients:
	 * worker w's is m = (1 - beta) g + beta m', g = grad/<t>/<w>, m' =
	 * mom/<t-1>/<w>, or m = g without m' (its first step, or after a
	 * step it missed), and is written as mom/<t>/<w> in the same
	 * transaction as agg/<t> (unless it holds NaN or Inf: that worker
	 * starts again from its next gradient).  mom/<t>/<w> depends only
	 * on grad/<t>/<w> and mom/<t-1>/<w>, so a rerun (replace) writes the
	 * same values: each step's momenta are made once.  Stragglers
	 * (spirt_aggset_filter) have none.
	 */
	double momentum;
	/* spirt_agg_mem_step and spirt_agg_store_step (no keys): NULL, or
	 * the gradient slots (slot.h) to take
	 * beside grad/<t>/<w>: each holding a gradient of step t computed
	 * from model/<slot_model>@<t> as the store has it (its record's
	 * payload checksum), of a worker with no grad/<t>/<w> */
	struct spirt_slotset *slots;
	const char *slot_model;
	size_t nslots;          /* out: slots taken */
	/* out */
	uint64_t revision;      /* in force, SPIRT_NOREVISION if none */
	size_t nstale, npast;   /* inputs left out as stale, of a past step */
	size_t first;           /* the first input not left out */
	float *cown;            /* the centre as read from the store, or NULL */
	float *mown;            /* the momenta, w * nelem, or NULL */
	size_t mom_new;         /* momenta started from the gradient */
	char cfrom[SPIRT_KEY_MAX + 1]; /* where cclip's centre came from */
	size_t w;
	struct spirt_aggset_in in[SPIRT_AGG_MAXW];
	struct spirt_agg_input ai[SPIRT_AGG_MAXW];     /* as run sorted them */
	size_t used;            /* inputs in the result */
	struct spirt_tensor hdr;        /* header of the result */
	double work_ms;         /* time spent reading and aggregating */
	char msg[SPIRT_KEY_MAX + 160];
};

/* Initialise s (in fields at their defaults: mean, any step). */
void spirt_aggset_init(struct spirt_aggset *s) SPIRT_NONNULL(1);
/* Free what the inputs own and forget them (in fields kept). */
void spirt_aggset_reset(struct spirt_aggset *s) SPIRT_NONNULL(1);

/*
 * Add the store value at key, or every grad/<step>/<w> (in key order), or
 * every record of the stream at path ("-": stdin).  Returns 0, record and
 * store errors, SPIRT_EINVAL (more than SPIRT_AGG_MAXW inputs), SPIRT_ETRUNC
 * (an empty stream), ENOMEM, errno.
 */
SPIRT_MUST_CHECK int spirt_aggset_add_key(struct spirt_aggset *s,
    struct spirt_txn *txn, const char *key) SPIRT_NONNULL(1, 2, 3);
SPIRT_MUST_CHECK int spirt_aggset_add_step(struct spirt_aggset *s,
    struct spirt_txn *txn, uint64_t step) SPIRT_NONNULL(1, 2);
/*
 * Add, from s->slots (scanned here), every slot holding a gradient of
 * step computed from model/<s->slot_model>@<step> in txn (the model
 * field is that record's payload checksum), of a worker no input has yet,
 * its payload read in place in the slot's map; a slot of another step or
 * model, or holding none, is passed over.  Returns 0, SPIRT_EINVAL (more
 * than SPIRT_AGG_MAXW inputs), the model's store errors,
 * spirt_slot_parse()'s codes for a truncated or corrupt slot and
 * spirt_slotset_scan()'s.
 */
SPIRT_MUST_CHECK int spirt_aggset_add_slots(struct spirt_aggset *s,
    struct spirt_txn *txn, uint64_t step) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_aggset_add_file(struct spirt_aggset *s,
    const char *path) SPIRT_NONNULL(1, 2);

/*
 * Leave out, before any rule runs, the stragglers (docs/contracts.md "The
 * assignment"): with s->step set, inputs of an earlier step
 * (SPIRT_AGG_XPAST); with s->revcheck, inputs that carry an assignment
 * revision other than the one in force: that of data/<s->dataset>/assign
 * in txn (when txn and dataset are set and the key exists), else the
 * newest among the inputs (SPIRT_AGG_XSTALE).  Inputs without a revision
 * are not checked.  They stay in the set, counted (s->nstale, s->npast)
 * and in agg/<t>/excluded, never in the result.  With s->batch and that
 * assignment, each input of the revision in force with an origin gets
 * its bound (in->bound; none when the assignment gives its worker
 * nothing at its step, or does not hold for s->batch).
 * spirt_agg_store_step() calls it.  Returns 0, spirt_data_assign_get()'s and
 * spirt_data_epoch_steps()'s codes but SPIRT_ENOTFOUND.
 */
SPIRT_MUST_CHECK int spirt_aggset_filter(struct spirt_aggset *s,
    struct spirt_txn *txn) SPIRT_NONNULL(1);

/*
 * Whether the inputs not left out agree: at least one, all f32 of one
 * shape, step (s->step if set) and model spec, origins distinct; sets
 * s->first.  Returns 0, SPIRT_ENOTFOUND (none, or none left), SPIRT_EDTYPE,
 * SPIRT_ESHAPE, SPIRT_ESTEP, SPIRT_EMODEL, SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_aggset_check(struct spirt_aggset *s)
    SPIRT_NONNULL(1);

/*
 * Input i (< s->w) left out before the rule, a straggler (in->pre), in
 * words for the tools' notes, into buf (cap bytes): "grad/3/1: not
 * applied: assignment revision 2, not 3 (stale)", or "...: step 2, a past
 * step (not 3)".  Returns 1, or 0 when it is no straggler (buf untouched).
 */
int spirt_aggset_straggler(const struct spirt_aggset *s, size_t i,
    char *buf, size_t cap) SPIRT_NONNULL(1, 3);

/*
 * Whether s's rule and parameters make sense for w inputs and tolerate
 * its declared Byzantine ones (spirt_agg_tolerates); if not, msg says
 * which condition fails (Krum: "W > 2f+2").  Returns 0 or SPIRT_EINVAL.
 */
SPIRT_MUST_CHECK int spirt_aggset_rule_check(struct spirt_aggset *s,
    size_t w) SPIRT_NONNULL(1);

/*
 * Aggregate the (checked) inputs into out (nelem floats) and fill s->hdr,
 * s->used and s->ai.  Bucketing's step is the inputs'; cclip and scclip
 * start from s->center (which must have nelem values: else SPIRT_ESHAPE),
 * else the centre spirt_agg_store_step read (center_key, or cclip's
 * previous aggregate), else cclip from 0; scclip without a centre is
 * SPIRT_EINVAL.  Returns spirt_agg_run()'s codes, SPIRT_ESHAPE.
 */
SPIRT_MUST_CHECK int spirt_aggset_run(struct spirt_aggset *s, float *out)
    SPIRT_NONNULL(1, 2);

/*
 * The in-store aggregation, as the body of a write transaction: read the
 * nkeys keys, or grad/<s->step>/<w> (and with s->slots the slots beside
 * them: spirt_aggset_add_slots) when nkeys is 0; filter
 * (spirt_aggset_filter); check; write agg/<t>
 * (built in place in the map) and agg/<t>/excluded, an i64 [k, 2] of
 * (origin or -1, enum spirt_agg_reason) rows, k possibly 0; with
 * s->momentum, the momenta mom/<t>/<w> first (above); for the rules
 * cclip and scclip without s->center, s->center_key, else for cclip
 * agg/<t-1> (if t > 0 and it exists: f32 of the inputs' shape, else
 * SPIRT_ESHAPE) is the centre; with s->prune, also remove the grad/,
 * mom/ and agg/ keys of steps before t - 1, spent once their updates were
 * applied.  Starts with
 * spirt_aggset_reset(), so it may run again after the map grows.  Returns
 * the codes above, SPIRT_EEXIST (agg/<t> exists and not s->replace), store
 * errors.
 */
SPIRT_MUST_CHECK int spirt_agg_store_step(struct spirt_aggset *s,
    struct spirt_txn *txn, char *const *keys, size_t nkeys)
    SPIRT_NONNULL(1, 2);

/*
 * The aggregation of grad/<s->step>/<w> exactly as spirt_agg_store_step()
 * makes it (the same inputs, filter, check, rule and summation order, so
 * the same bits), into *out, malloc'd here, s->hdr.nelem floats that the
 * caller frees (also on failure), with s->hdr the header agg/<t> would
 * have; nothing written but <out>/<t>/excluded (as there: the inputs left out
 * and why), the momenta (s->momentum) and, with s->prune, the spent
 * steps removed after the pass.  For spirt-update's fused step
 * (update.h's grads): no agg/<t>.  cclip's centre, without s->center and
 * s->center_key, is agg/<t-1> as there.  Returns the codes of
 * spirt_agg_store_step() but SPIRT_EEXIST.
 */
SPIRT_MUST_CHECK int spirt_agg_mem_step(struct spirt_aggset *s,
    struct spirt_txn *txn, float **out) SPIRT_NONNULL(1, 2, 3);

#endif
