/* batch.h - the minibatch of (step, worker) from a data set in the store */
#ifndef SPIRT_BATCH_H
#define SPIRT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "assign.h"
#include "store.h"
#include "tensor.h"

/*
 * The one minibatch rule for a data set in the store (docs/contracts.md
 * "The minibatch"), which spirt-grad computes with and spirt-store batch
 * serves to functions that bring their own code: an epoch is S =
 * spirt_epoch_steps(nsamples, nshards, batch) steps, step t is step j =
 * t mod S of epoch e = t / S; the revision of data/<ds>/assign in force
 * there gives the worker its rows (spirt_assign_select), each a run of
 * positions in shard k's order of epoch e, spirt_perm_fill(n_k, seed, k,
 * e); the step takes positions lo .. hi-1 of the worker's list.
 */

/* One sample: its shard and its row there. */
struct spirt_sample {
	uint64_t shard, index;
};

/*
 * perm = the permutation of 0..n-1 for (seed, k, epoch): Fisher-Yates from
 * the last element down, swapping i with spirt_sm64_below(r, i + 1) of the
 * splitmix64 stream seeded by spirt_seed_mix(seed, k, epoch) (rng.h).  k
 * is a shard (the store's rule) or a worker (a data file's, grad.h).
 */
void spirt_perm_fill(uint32_t *perm, uint64_t n, uint64_t seed, uint32_t k,
    uint64_t epoch);

/* A shard's order of an epoch, cached by spirt_batch_select. */
struct spirt_border {
	uint64_t key[4];        /* seed, shard, epoch, n */
	uint32_t *p;
	int used;
};

/* A shard record verified whole once, and its blocks' hashes (batch.c) */
struct spirt_bsum {
	char key[SPIRT_KEY_MAX + 1];
	const void *rec;        /* where it lay: compared, never read */
	size_t len;             /* its bytes */
	uint64_t hsum;          /* its header checksum */
	unsigned char tr[SPIRT_TENSOR_TRAILER]; /* its trailer */
	size_t rows;            /* samples a block */
	uint64_t *h;            /* XXH3-64 of each block of the payload */
	size_t nh;
	uint64_t used;          /* the last call's tick that used it */
};

/*
 * A selection (zero it before the first call; spirt_batch_free()).  It
 * caches the shard orders its last call used, so a warm function makes
 * each once an epoch.  With keep set, spirt_batch_read verifies a shard's
 * payload checksum whole the first time it reads the record and after
 * that only the blocks of it a minibatch takes (a long-lived reader of
 * one open store: spirt-store pipe).
 */
struct spirt_batch {
	/* out: the samples, in batch order */
	struct spirt_sample *s;
	size_t *row;            /* row[i]: sample i's row of the worker's */
	size_t n;
	size_t nrows;           /* the worker's rows at the step */
	uint64_t revision;      /* of the assignment in force */
	uint64_t epoch, S;      /* the step's epoch; steps per epoch */
	char msg[320];          /* on failure: why, naming the key; empty
				   when the shard callback failed */
	int keep;               /* in: keep the shards' block hashes */
	/* private */
	size_t cap;
	struct spirt_border *so;
	size_t nso, socap;
	struct spirt_bsum *sum; /* with keep: the shards verified */
	size_t nsum;
	uint64_t tick;          /* calls of spirt_batch_read */
};

/*
 * Called by spirt_batch_select for row i (0, 1, ... in order) of the
 * worker's rows: shard's samples are *n; the caller may load the shard
 * for its own use.  Returns 0 or a code that stops the selection.
 */
typedef int spirt_batch_shard_fn(void *arg, size_t i, uint64_t shard,
    uint64_t *n);

/*
 * Select worker's minibatch at step (batch samples a step, shuffle seed)
 * of data set ds in txn, whose data/<ds>/info says nshards shards and
 * nsamples samples: read data/<ds>/assign, take the part in force, call
 * shard for each of the worker's rows and check the row fits the shard.
 * Returns 0, SPIRT_ENOTFOUND (no assignment; no samples for the worker at
 * the step), SPIRT_ESTEP (the step comes before the revision's first),
 * SPIRT_EINVAL (batch 0; the revision counts the epoch in another batch),
 * SPIRT_EDATA/ESHAPE/EDTYPE (a malformed assignment, a row outside its
 * shard), ENOMEM, store errors and shard's codes.  b->msg says why.
 */
SPIRT_MUST_CHECK int spirt_batch_select(struct spirt_batch *b,
    struct spirt_txn *txn, const char *ds, uint64_t nshards,
    uint64_t nsamples, uint64_t worker, uint64_t step, uint64_t batch,
    uint64_t seed, spirt_batch_shard_fn *shard, void *arg)
    SPIRT_NONNULL(1, 2, 3, 10);

void spirt_batch_free(struct spirt_batch *b);

/*
 * A minibatch's values, as spirt-store batch serves them: x f32 [B, sample
 * shape] (u8 samples as value / 255, the float spirt-grad computes with),
 * y i32 [B]; both records named ds, with step, origin = worker, samples =
 * B and the assignment's revision.  Owned: spirt_batch_data_free().
 */
struct spirt_batch_data {
	struct spirt_tensor tx, ty;
	float *x;
	int32_t *y;
	int64_t info[4];        /* data/<ds>/info */
};

/*
 * Read worker's minibatch at step of ds from txn (any store: a URL's
 * transaction reads what a function may GET) into d, by
 * spirt_batch_select.  Returns 0, SPIRT_ENOTFOUND (no such data set; no
 * samples for the worker at the step), SPIRT_EINVAL (ds not a name, batch
 * 0, worker has no shard of its own: worker >= nshards; the epoch counted
 * in another batch), SPIRT_ESTEP, SPIRT_EDATA/ESHAPE/EDTYPE (inconsistent
 * shards or assignment, a label outside 0..nclasses-1), ENOMEM, store
 * errors; b->msg says why.
 */
SPIRT_MUST_CHECK int spirt_batch_read(struct spirt_batch *b,
    struct spirt_batch_data *d, struct spirt_txn *txn, const char *ds,
    uint64_t worker, uint64_t step, uint64_t batch, uint64_t seed)
    SPIRT_NONNULL(1, 2, 3, 4);

void spirt_batch_data_free(struct spirt_batch_data *d);

#endif
