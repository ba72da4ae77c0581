/* update.h - one optimiser step of a model: in the store, exactly once, or
 * from file to file */
#ifndef SPIRT_UPDATE_H
#define SPIRT_UPDATE_H

#include <stddef.h>
#include <stdint.h>

#include "aggstore.h"
#include "optim.h"
#include "spirt.h"
#include "store.h"
#include "tensor.h"

/*
 * The state of spirt-update.  The caller sets the "in" fields; the
 * functions below set the "out" fields on every call, so one struct may
 * serve many steps (spirt-update --serve): nothing carries over from one
 * step to the next.
 *
 * On failure a function returns the code and leaves a one-line message
 * without the program name in msg ("agg/3: no such key"); msg is empty
 * when there is nothing to add to the code.
 */
struct spirt_update {
	/* in */
	struct spirt_optim op;
	const char *model;      /* store keys model/<model>@t, opt/<model>@t */
	uint64_t keep;          /* store: keep the last keep versions, 0 all */
	uint64_t checkpoint;    /* store: durable every n versions, 0/1 all */
	uint64_t step;          /* t, SPIRT_NOSTEP: unknown (out: as found) */
	/* the store's aggregate: <agg>/<t> (NULL: "agg"; a peer applies
	 * the global aggregate of spirt-peer exchange, "gagg") */
	const char *agg;
	/* the aggregate when it comes from a file (apl NULL: agg/<t>) */
	struct spirt_tensor at;
	void *apl;              /* owned: spirt_update_free() frees it */
	char aname[64];
	/* every-H exchanges (spirt-train --every): SPIRT_NOSTEP, or S: step
	 * t writes delta/<S> = model@S - model@t+1 (the model change since
	 * S, a record named and stepped like an aggregate of step S) and
	 * opt@t+1, not model@t+1; delta/<S> is its proof of being applied */
	uint64_t delta;
	/* 0, or n: the outer step, model@t+n = model@t - <agg>/t (SGD with
	 * lr 1: with the mean of the peers' deltas, model averaging); no
	 * optimiser state is read or written */
	uint64_t outer;
	/* NULL, or the fused step (spirt-update's warm word mean=grad): the
	 * aggregate is not read from <agg>/<t> but made in the step's own
	 * transaction from grad/<t>/<w> by this set (aggstore.h's
	 * spirt_agg_mem_step(), its in fields the caller's, its step set to
	 * t), and stored nowhere; not with delta or outer.  Its hdr is the
	 * aggregate's header after the step (loss, count) */
	struct spirt_aggset *grads;
	/* out */
	uint64_t k;             /* steps the optimiser state had seen */
	int done;               /* store: step t was applied before */
	double work_ms;         /* time in the step itself */
	char msg[SPIRT_KEY_MAX + 160];
};

/* Initialise u: in fields at their defaults (spirt_optim_defaults()). */
void spirt_update_init(struct spirt_update *u) SPIRT_NONNULL(1);
/* Free what u owns (the aggregate read from a file). */
void spirt_update_free(struct spirt_update *u) SPIRT_NONNULL(1);

/*
 * Read the aggregate from path ("-": stdin): exactly one record, into
 * u->at, u->apl, u->aname.  Returns 0, errno, record errors, SPIRT_ETRUNC
 * (empty), SPIRT_EDATA (more than one record).
 */
SPIRT_MUST_CHECK int spirt_update_read_agg(struct spirt_update *u,
    const char *path) SPIRT_NONNULL(1, 2);

/*
 * Set u->step to the newest t of model/<u->model>@t.  Returns 0,
 * SPIRT_ENOTFOUND (no version), store errors.
 */
SPIRT_MUST_CHECK int spirt_update_latest(struct spirt_update *u,
    struct spirt_txn *txn) SPIRT_NONNULL(1, 2);

/*
 * 1 if model@t+1 (t = u->step) must be written durably: u->checkpoint is
 * 0 or 1, t+1 is a multiple of it, or t+1 is the last step of the cosine
 * schedule (--lr-total); else 0, and the caller writes it in a volatile transaction
 * (SPIRT_TXN_VOLATILE).
 */
int spirt_update_durable(const struct spirt_update *u) SPIRT_NONNULL(1);

/*
 * The in-store update, as the body of a write transaction (it may run
 * again from scratch after the map grows): read model@t, the aggregate
 * (u->apl, else made from grad/<t>/<w> with u->grads, else agg/<t>) and
 * opt@t if any; write model@t+1 and opt@t+1
 * (built in place in the map); remove versions beyond u->keep.  Returns
 * 0; SPIRT_EDONE with u->done set when model@t+1 exists (nothing done,
 * nothing aggregated);
 * SPIRT_ENOTFOUND, SPIRT_EDTYPE, SPIRT_ESHAPE, SPIRT_ESTEP, SPIRT_EMODEL,
 * SPIRT_EDATA (state of another optimiser), SPIRT_ENAN, SPIRT_EEXIST
 * (opt@t+1 without model@t+1), SPIRT_EINVAL (grads with delta or
 * outer), spirt_agg_mem_step()'s codes (its message in msg), store
 * errors, ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_update_store_step(struct spirt_update *u,
    struct spirt_txn *txn) SPIRT_NONNULL(1, 2);

/*
 * The store-free update: model t (and its optimiser state, if present)
 * from the model file params, the aggregate from u->apl; model t+1 (and,
 * for optimisers with state, its state) as a record stream to out ("-":
 * stdout; otherwise published atomically, so out may be params).  u->step,
 * if set, must be the model's step; it is set to it.  Returns 0, the codes
 * of spirt_update_store_step() but SPIRT_EDONE, record and file errors.
 */
SPIRT_MUST_CHECK int spirt_update_file_step(struct spirt_update *u,
    const char *params, const char *out) SPIRT_NONNULL(1, 2, 3);

#endif
