/* update.c - one optimiser step of a model: in the store, exactly once, or
 * from file to file */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "keys.h"
#include "update.h"

/* coordinates per tile of the update pass: Adam's 7 streams of 64 KiB
 * stay in L2 until their checksums have read them */
#define UPDATE_TILE 16384


/* the message of a failure; with spirt_strerror(rc) appended */
#define tellx(u, ...) (void)spirt_msgf((u)->msg, sizeof (u)->msg, 0, \
	__VA_ARGS__)
#define tellrc(u, rc, ...) (void)spirt_msgrc((u)->msg, sizeof (u)->msg, \
	(rc), __VA_ARGS__)

void
spirt_update_init(struct spirt_update *u)
{
	memset(u, 0, sizeof *u);
	spirt_optim_defaults(&u->op);
	u->step = SPIRT_NOSTEP;
	u->delta = SPIRT_NOSTEP;
}

void
spirt_update_free(struct spirt_update *u)
{
	free(u->apl);
	u->apl = NULL;
}

/* the highest step of model/<name>@<step> (listed under that prefix) */
static int
latest(void *arg, const char *key, const void *val, size_t len)
{
	struct spirt_key_parts k;
	uint64_t *step = arg;

	(void)val;
	(void)len;
	if (spirt_key_parse(&k, key) == 0 && k.kind == SPIRT_KEY_MODEL &&
	    (*step == SPIRT_NOSTEP || k.step > *step))
		*step = k.step;
	return 0;
}

int
spirt_update_latest(struct spirt_update *u, struct spirt_txn *txn)
{
	char prefix[SPIRT_KEY_MAX + 1];
	int rc;

	u->msg[0] = '\0';
	u->step = SPIRT_NOSTEP;
	if ((rc = spirt_key_model_prefix(prefix, sizeof prefix, u->model))) {
		tellrc(u, rc, "model name \"%.40s\"", u->model);
		return rc;
	}
	if ((rc = spirt_store_list(txn, prefix, latest, &u->step)))
		return rc;
	if (u->step == SPIRT_NOSTEP) {
		tellrc(u, SPIRT_ENOTFOUND, "%s", prefix);
		return SPIRT_ENOTFOUND;
	}
	return 0;
}

/* remove model, optimiser and state versions before newest + 1 - keep */
static int
prune(struct spirt_update *u, struct spirt_txn *txn, uint64_t newest)
{
	char prefix[SPIRT_KEY_MAX + 1];
	int rc;

	if (u->keep == 0 || newest + 1 <= u->keep)
		return 0;
	if ((rc = spirt_key_model_prefix(prefix, sizeof prefix, u->model)) ||
	    (rc = spirt_store_del_steps(txn, prefix, newest + 1 - u->keep,
	    NULL)) ||
	    (rc = spirt_key_opt_prefix(prefix, sizeof prefix, u->model)) ||
	    (rc = spirt_store_del_steps(txn, prefix, newest + 1 - u->keep,
	    NULL)) ||
	    (rc = spirt_key_mstate_prefix(prefix, sizeof prefix, u->model)))
		return rc;
	return spirt_store_del_steps(txn, prefix, newest + 1 - u->keep, NULL);
}

int
spirt_update_durable(const struct spirt_update *u)
{
	uint64_t n = u->step + 1;

	return u->checkpoint <= 1 || n % u->checkpoint == 0 ||
	    (u->op.schedule == SPIRT_SCHED_COSINE && n == u->op.total);
}

/* *p as an aligned float pointer: itself, or a copy in *own */
static int
view(const void **p, size_t n, void **own)
{
	if (spirt_aligned(*p, SPIRT_F32))
		return 0;
	if ((*own = malloc(n ? n : 1)) == NULL)
		return ENOMEM;
	memcpy(*own, *p, n);
	*p = *own;
	return 0;
}

/* ---- the in-store step: read and check, compute, write ---- */

/* What one in-store step reads and writes. */
struct stepio {
	struct spirt_tensor mt, at, st;         /* model@t, aggregate, opt@t */
	const void *mpl, *apl, *spl;            /* spl NULL: a fresh state */
	struct spirt_tensor bt;                 /* mstate@t, the buffers */
	const void *bpl;                        /* NULL: a model without */
	struct spirt_tensor nt, ot;             /* model@t+1, opt@t+1 */
	unsigned char *dst, *ndst;              /* opt@t+1, model@t+1 records */
	float *theta, *state;                   /* where the pass writes */
	int both;                               /* model@t+1 reserved too */
	char mkey[SPIRT_KEY_MAX + 1], nkey[SPIRT_KEY_MAX + 1];
	char akey[SPIRT_KEY_MAX + 1], skey[SPIRT_KEY_MAX + 1];
	char okey[SPIRT_KEY_MAX + 1], dkey[SPIRT_KEY_MAX + 1];
	char bkey[SPIRT_KEY_MAX + 1], b1key[SPIRT_KEY_MAX + 1];
	const char *aname, *oname;              /* the aggregate, the optimiser */
	unsigned ns;                            /* rows of optimiser state */
	void *own[6];                           /* copies, freed at the end */
};

/* The keys of step t: model@t, model@t+1, opt@t, opt@t+1, agg/t. */
static int
step_keys(struct spirt_update *u, struct stepio *io)
{
	uint64_t t = u->step;
	int rc;

	if ((rc = spirt_name_check(u->model))) {
		tellrc(u, rc, "model name \"%.40s\"", u->model);
		return rc;
	}
	if ((rc = spirt_key_model(io->mkey, sizeof io->mkey, u->model, t)) ||
	    (rc = spirt_key_model(io->nkey, sizeof io->nkey, u->model,
	    t + 1)) ||
	    (rc = spirt_key_opt(io->skey, sizeof io->skey, u->model, t)) ||
	    (rc = spirt_key_opt(io->okey, sizeof io->okey, u->model, t + 1)) ||
	    (rc = spirt_key_mstate(io->bkey, sizeof io->bkey, u->model, t)) ||
	    (rc = spirt_key_mstate(io->b1key, sizeof io->b1key, u->model,
	    t + 1)) ||
	    (rc = spirt_key_aggroot(io->akey, sizeof io->akey, u->agg, t))) {
		tellrc(u, SPIRT_ESTEP, "step %llu: no step after it",
		    (unsigned long long)t);
		return SPIRT_ESTEP;
	}
	if (u->delta != SPIRT_NOSTEP) {
		/* the step's result is the change since model@S */
		if (u->delta > t) {
			tellx(u, "--delta %llu: after step %llu",
			    (unsigned long long)u->delta,
			    (unsigned long long)t);
			return SPIRT_ESTEP;
		}
		if ((rc = spirt_key_aggroot(io->nkey, sizeof io->nkey,
		    "delta", u->delta)) ||
		    (rc = spirt_key_model(io->dkey, sizeof io->dkey,
		    u->model, u->delta)))
			return rc;
	}
	if (u->outer && (t > SPIRT_NOSTEP - 2 - u->outer ||
	    spirt_key_model(io->nkey, sizeof io->nkey, u->model,
	    t + u->outer) || spirt_key_mstate(io->b1key, sizeof io->b1key,
	    u->model, t + u->outer))) {
		tellx(u, "step %llu: no step %llu after it",
		    (unsigned long long)t, (unsigned long long)u->outer);
		return SPIRT_ESTEP;
	}
	io->aname = io->akey;
	io->oname = spirt_optim_name(u->op.kind);
	io->ns = spirt_optim_nstate(u->op.kind);
	return 0;
}

/* The aggregate against model@t: dtype, size, step, model. */
static int
step_check(struct spirt_update *u, const struct stepio *io)
{
	const struct spirt_tensor *mt = &io->mt, *at = &io->at;
	uint64_t t = u->step;

	if (mt->dtype != SPIRT_F32 || at->dtype != SPIRT_F32) {
		tellx(u, "%s: dtype %s, not f32", mt->dtype != SPIRT_F32 ?
		    io->mkey : io->aname, spirt_dtype_name(mt->dtype !=
		    SPIRT_F32 ? mt->dtype : at->dtype));
		return SPIRT_EDTYPE;
	}
	/* (the model's state after the gradient: with_state() in
	 * lib/aggstore.c; after the change in a delta, delta()) */
	if (at->nelem != mt->nelem && (io->bpl == NULL ||
	    at->nelem < mt->nelem || at->nelem - mt->nelem != io->bt.nelem)) {
		tellx(u, "%s: %llu values, %s has %llu%s: shapes differ",
		    io->aname, (unsigned long long)at->nelem, io->mkey,
		    (unsigned long long)mt->nelem, io->bpl == NULL ? "" :
		    " and its state more");
		return SPIRT_ESHAPE;
	}
	if (at->step != SPIRT_NOSTEP && at->step != t) {
		tellx(u, "%s: step %llu, not %llu", io->aname,
		    (unsigned long long)at->step, (unsigned long long)t);
		return SPIRT_ESTEP;
	}
	if (strcmp(at->name, mt->name) != 0) {
		tellx(u, "%s: model \"%s\", %s is \"%s\"", io->aname,
		    at->name, io->mkey, mt->name);
		return SPIRT_EMODEL;
	}
	return 0;
}

/* The optimiser state at t, if any (io->spl NULL: a fresh state). */
static int
step_state(struct spirt_update *u, struct spirt_txn *txn, struct stepio *io)
{
	int rc;

	u->k = 0;
	rc = spirt_store_get_tensor(txn, io->skey, &io->st, &io->spl, 0);
	if (rc == 0) {
		if (strcmp(io->st.name, io->oname) != 0) {
			tellx(u, "%s: %s state, not %s", io->skey, io->st.name,
			    io->oname);
			return SPIRT_EDATA;
		}
		if (io->st.dtype != SPIRT_F32 || io->st.rank != 2 ||
		    io->st.dims[0] != io->ns ||
		    io->st.dims[1] != io->mt.nelem) {
			tellx(u, "%s: shape does not fit %s", io->skey,
			    io->mkey);
			return SPIRT_ESHAPE;
		}
		u->k = io->st.count;
	} else if (rc == SPIRT_ENOTFOUND) {
		io->spl = NULL;
	} else {
		tellrc(u, rc, "%s", io->skey);
		return rc;
	}
	return 0;
}

/*
 * The fused step's aggregate: grad/<t>/<w> aggregated by u->grads into
 * memory (io->own[5]), stored nowhere, named grad/<t> in messages.
 */
static int
step_grads(struct spirt_update *u, struct spirt_txn *txn, struct stepio *io)
{
	struct spirt_aggset *s = u->grads;
	float *out;
	int rc;

	if (u->delta != SPIRT_NOSTEP || u->outer) {
		tellx(u, "the gradients' mean is a step's aggregate: not with "
		    "a delta or an outer step");
		return SPIRT_EINVAL;
	}
	(void)snprintf(io->akey, sizeof io->akey, "grad/%llu",
	    (unsigned long long)u->step);
	s->step = u->step;
	rc = spirt_agg_mem_step(s, txn, &out);
	io->own[5] = out;
	if (rc) {
		if (s->msg[0])
			tellx(u, "%s", s->msg);
		return rc;
	}
	io->at = s->hdr;
	io->apl = out;
	return 0;
}

/*
 * Read the inputs of step t and check them: SPIRT_EDONE when model@t+1
 * exists (exactly once: it is the proof that step t was applied).
 */
static int
step_read(struct spirt_update *u, struct spirt_txn *txn, struct stepio *io)
{
	const void *v;
	size_t len;
	int rc;

	if (spirt_store_get(txn, io->nkey, &v, &len) == 0) {
		u->done = 1;
		return SPIRT_EDONE;
	}
	/* first, as its pruning may move small values read before it */
	if (u->grads && (rc = step_grads(u, txn, io)))
		return rc;
	if ((rc = spirt_store_get_tensor(txn, io->mkey, &io->mt, &io->mpl,
	    0))) {
		tellrc(u, rc, "%s", io->mkey);
		return rc;
	}
	if (u->grads) {
		/* made by step_grads() */
	} else if (u->apl) {
		io->at = u->at;
		io->apl = u->apl;
		io->aname = u->aname;
	} else if ((rc = spirt_store_get_tensor(txn, io->akey, &io->at,
	    &io->apl, 0))) {
		tellrc(u, rc, "%s", io->akey);
		return rc;
	}
	if ((rc = spirt_store_get_tensor(txn, io->bkey, &io->bt, &io->bpl,
	    0)) == SPIRT_ENOTFOUND) {
		io->bpl = NULL;
	} else if (rc) {
		tellrc(u, rc, "%s", io->bkey);
		return rc;
	} else if (io->bt.dtype != SPIRT_F32) {
		tellx(u, "%s: dtype %s, not f32", io->bkey,
		    spirt_dtype_name(io->bt.dtype));
		return SPIRT_EDTYPE;
	}
	if ((rc = step_check(u, io)))
		return rc;
	return u->outer ? 0 : step_state(u, txn, io);
}

/*
 * opt@t+1 and model@t+1 are reserved in the map and filled in one
 * pass.  LMDB wants a reserved value filled before the next update;
 * a value larger than a page sits on its own overflow pages, which a
 * later put does not move, and this txn's dirty pages stay in memory
 * while it stays well below LMDB's dirty-page limit (2^17 pages).  So
 * two large values are reserved together when they total less than
 * 256 MiB; otherwise theta' goes through a buffer and a put.  A
 * small state (sgd: none) is finished before model@t+1 is reserved.
 */
static int
step_reserve(struct spirt_update *u, struct spirt_txn *txn, struct stepio *io)
{
	const struct spirt_tensor *mt = &io->mt;
	uint64_t t = u->step, dims[2];
	size_t len, nlen;
	int rc;

	dims[0] = io->ns;
	dims[1] = mt->nelem;
	if ((rc = spirt_tensor_init(&io->ot, SPIRT_F32, 2, dims)) ||
	    (rc = spirt_tensor_set_name(&io->ot, io->oname)))
		return rc;
	io->ot.step = t + 1;
	io->ot.count = (uint32_t)(u->k + 1);
	io->nt = *mt;
	io->nt.step = t + 1;
	io->nt.count = 0;
	len = spirt_tensor_reclen(&io->ot);
	nlen = spirt_tensor_reclen(&io->nt);
	io->both = io->ot.nbytes > 8192 && mt->nbytes > 8192 &&
	    len + nlen < ((size_t)256 << 20);
	if ((rc = spirt_store_reserve(txn, io->okey, len, (void **)&io->dst,
	    SPIRT_PUT_NOOVERWRITE)) ||
	    (rc = spirt_tensor_pack_header(io->dst, len, &io->ot)))
		return rc;
	io->state = (float *)(void *)(io->dst + io->ot.hdrlen);
	if (io->ns == 0) {
		spirt_tensor_pack_trailer(io->dst + io->ot.hdrlen, &io->ot,
		    io->state);
		io->both = mt->nbytes > 8192;
	} else if (!spirt_aligned(io->state, SPIRT_F32) &&
	    (io->state = io->own[3] = malloc(io->ot.nbytes)) == NULL) {
		return ENOMEM;
	}
	io->theta = NULL;
	if (u->delta != SPIRT_NOSTEP)
		io->both = 0;
	if (io->both) {
		if ((rc = spirt_store_reserve(txn, io->nkey, nlen,
		    (void **)&io->ndst, SPIRT_PUT_NOOVERWRITE)) ||
		    (rc = spirt_tensor_pack_header(io->ndst, nlen, &io->nt)))
			return rc;
		io->theta = (float *)(void *)(io->ndst + io->nt.hdrlen);
		if (!spirt_aligned(io->theta, SPIRT_F32))
			io->theta = NULL;
	}
	/* (a delta carries the state after the change: delta()) */
	if (io->theta == NULL && (io->theta = io->own[4] =
	    malloc(mt->nbytes + (u->delta != SPIRT_NOSTEP && io->bpl ?
	    io->bt.nbytes : 0) + 1)) == NULL)
		return ENOMEM;
	return 0;
}

/*
 * Delta mode: theta (model@t+1, made in a buffer) becomes model@S - theta
 * in place, and its record the one of an aggregate of step S: the
 * model's name, step S, the samples of agg/t.  A model with state: the
 * state of t+1 follows (as a step's aggregate carries it), so that the
 * peers combine their states with their deltas and the outer step
 * writes the combination (mstate_put()).
 */
static int
delta(struct spirt_update *u, struct spirt_txn *txn, struct stepio *io,
    float *theta)
{
	struct spirt_tensor st;
	const void *spl;
	void *own = NULL;
	int rc;

	if ((rc = spirt_store_get_tensor(txn, io->dkey, &st, &spl, 0))) {
		tellrc(u, rc, "%s", io->dkey);
		return rc;
	}
	if (st.dtype != SPIRT_F32 || st.nelem != io->mt.nelem ||
	    strcmp(st.name, io->mt.name) != 0) {
		tellx(u, "%s: not the model of %s", io->dkey, io->mkey);
		return SPIRT_ESHAPE;
	}
	if ((rc = view(&spl, st.nbytes, &own)))
		return rc;
	for (size_t j = 0; j < st.nelem; j++)
		theta[j] = ((const float *)spl)[j] - theta[j];
	free(own);
	if (io->bpl) {
		uint64_t n = io->mt.nelem + io->bt.nelem;

		memcpy(theta + io->mt.nelem, io->at.nelem > io->mt.nelem ?
		    (const float *)io->apl + io->mt.nelem : io->bpl,
		    io->bt.nbytes);
		if (spirt_count_nonfinite_f32(theta + io->mt.nelem,
		    io->bt.nelem)) {
			tellx(u, "%s: NaN or Inf in the model's state",
			    io->aname);
			return SPIRT_ENAN;
		}
		if ((rc = spirt_tensor_init(&io->nt, SPIRT_F32, 1, &n)) ||
		    (rc = spirt_tensor_set_name(&io->nt, io->mt.name)))
			return rc;
	}
	io->nt.step = u->delta;
	io->nt.samples = io->at.samples;
	io->nt.loss = io->at.loss;
	io->nt.count = io->at.count;
	return 0;
}

/*
 * The optimiser pass, tile by tile, each tile of theta' and of the
 * state's first row checksummed right after it is made, while it is in
 * cache (Adam's second row follows the first in its record, so it is
 * checksummed after the pass).  Adam at N = 1e7: 20.8 -> 17.3 ms.  Then
 * the records are finished, model@t+1 put when it was not reserved.
 */
static int
step_compute(struct spirt_update *u, struct spirt_txn *txn,
    struct stepio *io)
{
	const struct spirt_tensor *mt = &io->mt;
	struct spirt_tensor_sum osum, nsum;
	float *theta = io->theta, *state = io->state;
	size_t j0;
	int rc = 0;

	if (io->ns)
		spirt_tensor_sum_init(&osum, &io->ot);
	if (io->both)
		spirt_tensor_sum_init(&nsum, &io->nt);
	for (j0 = 0; j0 < mt->nelem; j0 += UPDATE_TILE) {
		size_t tl = mt->nelem - j0 < UPDATE_TILE ? mt->nelem - j0 :
		    UPDATE_TILE;

		if ((rc = spirt_optim_step_range(theta, state, io->mpl,
		    io->spl, io->apl, mt->nelem, j0, tl, &u->op, u->step,
		    u->k)))
			break;
		if (io->ns)
			spirt_tensor_sum_add(&osum, state + j0, tl * 4);
		if (io->both)
			spirt_tensor_sum_add(&nsum, theta + j0, tl * 4);
	}
	if (rc == SPIRT_ENAN) {
		tellx(u, "%s: NaN or Inf in the gradient or the new model",
		    io->aname);
		return rc;
	}
	if (rc)
		return rc;
	if (io->ns) {
		for (unsigned r = 1; r < io->ns; r++)
			spirt_tensor_sum_add(&osum, state + r * mt->nelem,
			    mt->nbytes);
		if (state != (void *)(io->dst + io->ot.hdrlen))
			memcpy(io->dst + io->ot.hdrlen, state, io->ot.nbytes);
		spirt_tensor_sum_trailer(io->dst + io->ot.hdrlen +
		    io->ot.nbytes, &osum);
	}
	if (io->both) {
		if (theta != (void *)(io->ndst + io->nt.hdrlen))
			memcpy(io->ndst + io->nt.hdrlen, theta, io->nt.nbytes);
		spirt_tensor_sum_trailer(io->ndst + io->nt.hdrlen +
		    io->nt.nbytes, &nsum);
		return 0;
	}
	if (u->delta != SPIRT_NOSTEP && (rc = delta(u, txn, io, theta)))
		return rc;
	return spirt_store_put_tensor(txn, io->nkey, &io->nt, theta,
	    SPIRT_PUT_NOOVERWRITE);
}

/*
 * The outer step: model@t+n = model@t - <agg>/t, coordinate by
 * coordinate (every peer that applies the same aggregate to the same
 * model gets the same bits).
 */
static int
outer_compute(struct spirt_update *u, struct spirt_txn *txn,
    struct stepio *io)
{
	const float *m = io->mpl, *a = io->apl;
	float *theta;
	size_t n = io->mt.nelem;

	if ((theta = io->own[4] = malloc(io->mt.nbytes ? io->mt.nbytes :
	    1)) == NULL)
		return ENOMEM;
	for (size_t j = 0; j < n; j++) {
		theta[j] = m[j] - a[j];
		if (!isfinite(theta[j])) {
			tellx(u, "%s: NaN or Inf in the new model", io->aname);
			return SPIRT_ENAN;
		}
	}
	io->nt = io->mt;
	io->nt.step = u->step + u->outer;
	io->nt.count = 0;
	return spirt_store_put_tensor(txn, io->nkey, &io->nt, theta,
	    SPIRT_PUT_NOOVERWRITE);
}

/*
 * The model's state of the new version (spirt-model(5)), in the step's
 * transaction: the state combined with the aggregate, after its
 * gradient (lib/aggstore.c with_state()), else mstate@t as it was; none
 * for a model without state.  A delta step (--every) writes none: its
 * delta carries the state (delta()), and the outer step writes the
 * peers' combination of them, the same on every peer.
 */
static int
mstate_put(struct spirt_update *u, struct spirt_txn *txn, struct stepio *io)
{
	struct spirt_tensor h;
	const void *pl = io->bpl;
	size_t p = io->mt.nelem;

	if (io->bpl == NULL || u->delta != SPIRT_NOSTEP)
		return 0;
	h = io->bt;
	h.step = u->step + (u->outer ? u->outer : 1);
	if (io->at.nelem > p) {
		pl = (const float *)io->apl + p;
		if (spirt_count_nonfinite_f32(pl, io->bt.nelem)) {
			tellx(u, "%s: NaN or Inf in the model's state",
			    io->aname);
			return SPIRT_ENAN;
		}
		h.samples = io->at.samples;
		h.count = io->at.count;
	}
	return spirt_store_put_tensor(txn, io->b1key, &h, pl, 0);
}

/* One write transaction: model@t, agg/t, opt@t, mstate@t in; model@t+1,
 * opt@t+1, mstate@t+1 out; old versions pruned.  Rerun from scratch when
 * the map grows. */
int
spirt_update_store_step(struct spirt_update *u, struct spirt_txn *txn)
{
	struct stepio io;
	double t0 = 1e3 * spirt_clock();
	int rc;

	memset(&io, 0, sizeof io);
	u->done = 0;
	u->msg[0] = '\0';
	if ((rc = step_keys(u, &io)) || (rc = step_read(u, txn, &io)))
		return rc;
	/* small values sit at 2-byte offsets in LMDB leaves: copy those */
	if ((rc = view(&io.mpl, io.mt.nbytes, &io.own[0])) ||
	    (rc = view(&io.apl, io.at.nbytes, &io.own[1])))
		goto fail;
	if (u->outer) {
		if ((rc = outer_compute(u, txn, &io)) ||
		    (rc = mstate_put(u, txn, &io)) ||
		    (rc = prune(u, txn, u->step + u->outer)))
			goto fail;
	} else if ((io.spl && (rc = view(&io.spl, io.st.nbytes,
	    &io.own[2]))) ||
	    (rc = step_reserve(u, txn, &io)) ||
	    (rc = step_compute(u, txn, &io)) ||
	    (rc = mstate_put(u, txn, &io)) ||
	    (rc = prune(u, txn, u->delta != SPIRT_NOSTEP ? u->step :
	    u->step + 1))) {
		goto fail;
	}
	u->work_ms = 1e3 * spirt_clock() - t0;
fail:
	for (int i = 0; i < 6; i++)
		free(io.own[i]);
	/* a full map is no failure of this step: the store grows it and
	 * runs the step again */
	if (rc && rc != SPIRT_EFULL && !u->msg[0])
		tellrc(u, rc, "%s", io.nkey);
	return rc;
}

/* read the aggregate record from file ("-": stdin): exactly one record */
int
spirt_update_read_agg(struct spirt_update *u, const char *path)
{
	struct spirt_tensor extra;
	void *pl;
	int fd = 0, rc;

	const char *nm = strcmp(path, "-") ? path : "stdin";
	size_t n = strlen(nm);

	/* not snprintf: gcc -O1 sees a NULL %s argument that cannot be */
	if (n >= sizeof u->aname)
		n = sizeof u->aname - 1;
	memcpy(u->aname, nm, n);
	u->aname[n] = 0;
	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) < 0) {
		rc = errno;
		tellrc(u, rc, "open %s", path);
		return rc;
	}
	rc = spirt_tensor_read(fd, &u->at, &u->apl, 0);
	if (rc == SPIRT_EOF) {
		tellx(u, "%s: empty input", u->aname);
		rc = SPIRT_ETRUNC;
	} else if (rc) {
		tellrc(u, rc, "%s", u->aname);
	} else if ((rc = spirt_tensor_read(fd, &extra, &pl, 0)) == SPIRT_EOF) {
		rc = 0;
	} else {
		if (rc == 0)
			free(pl);
		tellx(u, "%s: more than one record", u->aname);
		rc = SPIRT_EDATA;
	}
	if (fd > 0)
		close(fd);
	return rc;
}

/* ---- files instead of the store (-p, -o) ---- */

/* the model file: spirt_model_file_read(), its message with the cause */
static int
readparams(struct spirt_update *u, const char *path, struct spirt_tensor *m,
    void **mpl, struct spirt_tensor *st, void **spl)
{
	char where[sizeof u->msg - 64];
	int rc;

	if ((rc = spirt_model_file_read(path, m, mpl, st, spl, where,
	    sizeof where)) != 0)
		tellrc(u, rc, "%s", where);
	return rc;
}

/*
 * Store-free update: model (and state) from -p, the aggregate from the
 * operand or stdin, model@t+1 (and state) as a record stream to -o.
 */
int
spirt_update_file_step(struct spirt_update *u, const char *params,
    const char *out)
{
	struct spirt_tensor mt, st, ot;
	struct spirt_publish pub;
	void *mpl = NULL, *spl = NULL, *state = NULL;
	const char *oname = spirt_optim_name(u->op.kind);
	const char *mname = strcmp(params, "-") ? params : "stdin";
	unsigned ns = spirt_optim_nstate(u->op.kind);
	uint64_t dims[2], t;
	double t0 = 1e3 * spirt_clock();
	int rc, fd = 1;

	if ((rc = readparams(u, params, &mt, &mpl, &st, &spl)))
		goto end;
	t = mt.step;
	rc = SPIRT_EDTYPE;
	if (mt.dtype != SPIRT_F32 || u->at.dtype != SPIRT_F32) {
		tellx(u, "%s: dtype %s, not f32",
		    mt.dtype != SPIRT_F32 ? mname :
		    u->aname, spirt_dtype_name(mt.dtype != SPIRT_F32 ?
		    mt.dtype : u->at.dtype));
		goto end;
	}
	rc = SPIRT_ESTEP;
	if (t == SPIRT_NOSTEP || t >= SPIRT_NOSTEP - 1 ||
	    (u->step != SPIRT_NOSTEP && t != u->step)) {
		tellx(u, "%s: model step %lld, not %lld", mname, (long long)t,
		    (long long)u->step);
		goto end;
	}
	if (u->at.step != SPIRT_NOSTEP && u->at.step != t) {
		tellx(u, "%s: step %llu, not %llu", u->aname,
		    (unsigned long long)u->at.step, (unsigned long long)t);
		goto end;
	}
	rc = SPIRT_ESHAPE;
	if (u->at.nelem != mt.nelem) {
		tellx(u, "%s: %llu values, %s has %llu: shapes differ",
		    u->aname,
		    (unsigned long long)u->at.nelem, mname,
		    (unsigned long long)mt.nelem);
		goto end;
	}
	rc = SPIRT_EMODEL;
	if (strcmp(u->at.name, mt.name) != 0) {
		tellx(u, "%s: model \"%s\", %s is \"%s\"", u->aname, u->at.name,
		    mname, mt.name);
		goto end;
	}
	u->k = 0;
	if (spl) {
		rc = SPIRT_EDATA;
		if (strcmp(st.name, oname) != 0) {
			tellx(u, "%s: record 1: %s state, not %s", mname,
			    st.name,
			    oname);
			goto end;
		}
		rc = SPIRT_ESHAPE;
		if (st.dtype != SPIRT_F32 || st.rank != 2 ||
		    st.dims[0] != ns || st.dims[1] != mt.nelem) {
			tellx(u, "%s: record 1: shape does not fit the model",
			    mname);
			goto end;
		}
		u->k = st.count;
	}
	dims[0] = ns;
	dims[1] = mt.nelem;
	if ((rc = spirt_tensor_init(&ot, SPIRT_F32, 2, dims)) ||
	    (rc = spirt_tensor_set_name(&ot, oname)))
		goto end;
	ot.step = t + 1;
	ot.count = (uint32_t)(u->k + 1);
	/* in place: the buffers read are the buffers written */
	state = spl;
	if (ns && state == NULL && (state = calloc(ot.nelem, 4)) == NULL) {
		rc = ENOMEM;
		goto end;
	}
	rc = spirt_optim_step(mpl, state, mpl, state, u->apl, mt.nelem, &u->op,
	    t, u->k);
	if (rc == SPIRT_ENAN) {
		tellx(u, "%s: NaN or Inf in the gradient or the new model",
		    u->aname);
		goto end;
	}
	u->step = t;
	mt.step = t + 1;
	mt.count = 0;
	u->work_ms = 1e3 * spirt_clock() - t0;
	if (strcmp(out, "-") != 0) {
		if ((rc = spirt_publish_open(&pub, out, 0644))) {
			tellrc(u, rc, "%s", out);
			goto end;
		}
		fd = pub.fd;
	}
	if (!(rc = spirt_tensor_write(fd, &mt, mpl)) && ns)
		rc = spirt_tensor_write(fd, &ot, state);
	if (fd != 1)
		rc = rc ? (spirt_publish_abort(&pub), rc) :
		    spirt_publish_commit(&pub);
	if (rc && rc != EPIPE)
		tellrc(u, rc, "%s", strcmp(out, "-") ? out : "stdout");
end:
	if (state != spl)
		free(state);
	free(spl);
	free(mpl);
	return rc;
}

