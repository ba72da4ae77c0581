/* grad.h - gradients of a stored model on stored data */
#ifndef SPIRT_GRAD_H
#define SPIRT_GRAD_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "store.h"
#include "tensor.h"

/*
 * The serverless function's work, over the store layout of
 * docs/contracts.md and spirt-store(5):
 *
 *   model/<name>@<t>     f32 [P], name = spec, step = t
 *   data/<ds>/info       i64 [4]: nshards, nsamples, nclasses, features
 *   data/<ds>/<k>/x, y   u8 (value/255) or f32 samples; i32 labels
 *   data/<ds>/assign     i64 [m, 4]: (worker, shard, start, count)
 *
 * The minibatch of (seed, step t, worker w) from the store: an epoch is
 * S = spirt_epoch_steps() steps of batch B, step t is step j = t mod S of
 * epoch e = t / S; the revision of data/<ds>/assign in force there gives
 * the worker a list (shard.h: its rows of the part for (e, j), positions
 * in each shard's order of epoch e, the permutation of its samples seeded
 * from (seed, shard, e)), and the step takes its run of the list by
 * spirt_batch_span().  Every sample is thus seen exactly once per epoch,
 * across reassignments too (docs/contracts.md).  Nothing else enters, so
 * a retried or moved invocation computes identical bytes; the gradient
 * carries the revision it was computed under.
 *
 * Files may stand in for the store (spirt-grad -p, -D): a model file is a
 * record stream whose first record is the model (f32 [P], name = spec,
 * step = t; a second record, the optimiser state, is ignored); a data file
 * is a stream of x, y record pairs as data/<ds>/<k>/x and y hold, one pair
 * per shard.  With a data file, worker w takes pair w when there are
 * several, else the only pair, N samples: with S = ceil(N / B) steps per
 * epoch, step t takes positions (t mod S) * B ... of a Fisher-Yates
 * permutation of 0..N-1 seeded from (seed, w, t / S), the last batch of an
 * epoch short when B does not divide N; spirt_minibatch() lists them.
 * (For a worker that reads its own whole shard k = w of the store, both
 * rules give the same samples.)
 *
 * A context caches what is a pure function of its inputs (the parsed spec,
 * the batch workspace, the current epoch's permutation), so one process
 * may serve many invocations ("warm") without keeping state that is not
 * in the store.
 */

struct spirt_grad_ctx;

/* spirt_grad_ctx_new flags */
#define SPIRT_GRAD_NAIVE 0x1    /* naive reference kernels (tests) */

SPIRT_MUST_CHECK int spirt_grad_ctx_new(struct spirt_grad_ctx **out,
    unsigned flags);
void spirt_grad_ctx_free(struct spirt_grad_ctx *c);

/*
 * What the last failing call was reading, for messages: a store key and
 * detail, e.g. "model/mlp@7: 235146 values, spec mlp:784-10 needs 7850".
 * Empty when the failure has no better context than the call itself.
 */
const char *spirt_grad_where(const struct spirt_grad_ctx *c);

struct spirt_grad_job {
	const char *model;      /* model name: key model/<name>@<step> */
	uint64_t step;
	uint32_t worker;
	size_t batch;
	uint64_t seed;
	const char *dataset;    /* data set name, e.g. "train" */
	int label_flip;         /* evaluation of robust rules only: train
				   on label K-1-y for y (K classes), as a
				   Byzantine function would */
};

/*
 * Use the model file at path ("-" stdin) instead of the store: it is read
 * now, and later calls take the model from it (job->model and name are
 * then ignored, and the step asked for must be the record's).  *step gets
 * the record's step.  Returns 0, errno (cannot open or read), record errors
 * (SPIRT_ETRUNC for an empty file), SPIRT_ESTEP (no step in the record),
 * ENOMEM.  On error the context is unchanged.
 */
SPIRT_MUST_CHECK int spirt_grad_model_file(struct spirt_grad_ctx *c,
    const char *path, uint64_t *step);

/*
 * Use the data file at path ("-" stdin) instead of the data set in the
 * store: all its x, y pairs are read now and kept in c.  Returns 0, errno,
 * record errors, SPIRT_ETRUNC (no records, or an x without its y), ENOMEM.
 * Their dtypes and shapes are checked against the model at each call.
 */
SPIRT_MUST_CHECK int spirt_grad_data_file(struct spirt_grad_ctx *c,
    const char *path);

/*
 * The minibatch rule above: positions (in 0..n-1, into the worker's n
 * samples) of the samples step's minibatch takes, into idx (room for
 * batch entries), their number into *count.  Returns 0, SPIRT_EINVAL (n is
 * 0 or above 2^32 - 1, batch is 0), ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_minibatch(uint32_t *idx, size_t *count,
    uint64_t seed, uint32_t worker, uint64_t step, uint64_t n, size_t batch);

/*
 * Compute the gradient of job in txn (read-only is enough; NULL when both
 * a model file and a data file are set).  On success
 * hdr describes the gradient record (f32 [P], name = spec, step, origin =
 * worker, samples = batch size used, loss = mean loss, revision = the
 * assignment's, from the store) and *grad points to the values, owned by
 * c, valid until the next call (they outlive txn).
 * Returns 0, SPIRT_ENOTFOUND (no model at that step, no data set, no
 * samples for the worker at that step), SPIRT_EMODEL (bad spec in the
 * record), SPIRT_EDTYPE, SPIRT_ESHAPE (record does not fit its spec or the
 * data), SPIRT_ESTEP (record's step field differs from its key, or the
 * step comes before the assignment revision's first), SPIRT_EINVAL (the
 * revision counts the step's epoch in another batch), SPIRT_EDATA
 * (label out of range, inconsistent shards or assignment), SPIRT_ENAN
 * (non-finite parameters, gradient or state), ENOMEM, store and record
 * errors; for a model with state (spirt-model(5)) also those of reading
 * mstate/<name>@<step> (SPIRT_ENOTFOUND when it is missing).
 */
SPIRT_MUST_CHECK int spirt_grad_compute(struct spirt_grad_ctx *c,
    struct spirt_txn *txn, const struct spirt_grad_job *job,
    struct spirt_tensor *hdr, const float **grad);

/*
 * Where the next spirt_grad_compute()s put the gradient: out, when the
 * model's gradient fits its cap floats (else, and with out NULL, c's own
 * buffer).  *grad then points to out.  spirt-grad's slot (slot.h): the
 * gradient computed straight into the mapped file, no copy.
 */
void spirt_grad_set_out(struct spirt_grad_ctx *c, float *out, size_t cap)
    SPIRT_NONNULL(1);

/*
 * The model's state after the last successful spirt_grad_compute()'s
 * forward pass (batch normalisation in training mode moved the running
 * statistics of mstate/<name>@<step>, or of a fresh state with a model
 * file), *n floats, owned by c, valid until the next call; NULL and 0
 * for a model without state.  spirt-grad writes it as state/<t>/<w>.
 */
const float *spirt_grad_state(const struct spirt_grad_ctx *c, size_t *n)
    SPIRT_NONNULL(1, 2);

/* One sample of a batch: its shard (data file: pair) and row there. */
struct spirt_grad_sample {
	uint64_t shard, index;
};

/*
 * The samples of the last batch spirt_grad_compute() computed (also when
 * the gradient itself then failed), *n of them, owned by c: valid until
 * the next call.
 */
const struct spirt_grad_sample *spirt_grad_batch(
    const struct spirt_grad_ctx *c, size_t *n) SPIRT_NONNULL(1, 2);

/* Latest step t with a key model/<name>@<t>; SPIRT_ENOTFOUND if none. */
SPIRT_MUST_CHECK int spirt_model_latest(struct spirt_txn *txn,
    const char *name, uint64_t *step);

#endif
