/* assign.h - the assignment of samples to workers: batch rule, reassignment */
#ifndef SPIRT_ASSIGN_H
#define SPIRT_ASSIGN_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "store.h"
#include "tensor.h"

/* ---- the assignment: which worker reads what, from which step ---- */

/*
 * data/<name>/assign holds revision r of the assignment (docs/contracts.md
 * "The assignment" is the reference): i64 rows of SPIRT_AS_COLS fields,
 *
 *   (worker, shard, start, count, epoch, step, batch)
 *
 * "worker reads positions start .. start+count-1 of shard's order of the
 * epoch", where shard k's order of epoch e is the Fisher-Yates permutation
 * of its n_k samples drawn from splitmix64 seeded by mix(seed, k, e).  A
 * worker's list is its rows of one part, in row order, and its steps take
 * consecutive runs of it (spirt_batch_span).  Rows of one (epoch, step,
 * batch) form a part:
 *
 *   the full part, step 0, batch 0: from epoch `epoch` on, every epoch;
 *   a rest part, step j > 0, batch B: steps j .. S-1 of epoch `epoch`
 *     only (S = spirt_epoch_steps() of batch B), what is left of that
 *     epoch when the assignment changed at its step j; the full part then
 *     starts at the next epoch.
 *
 * A record has one full part, after at most one rest part; rows are
 * sorted by (epoch, step, worker, shard, start).  Version 1 records, i64
 * [m, 4] (worker, shard, start, count), are a full part from epoch 0.
 * The record's step field is the revision.
 */
enum { SPIRT_AS_WORKER, SPIRT_AS_SHARD, SPIRT_AS_START, SPIRT_AS_COUNT,
	SPIRT_AS_EPOCH, SPIRT_AS_STEP, SPIRT_AS_BATCH, SPIRT_AS_COLS };

/*
 * Steps per epoch with batch B: ceil(floor(nsamples / nshards) / B), the
 * steps the smallest shard fills; 0 when an argument is 0.
 */
uint64_t spirt_epoch_steps(uint64_t nsamples, uint64_t nshards,
    uint64_t batch);

/*
 * The batch rule: a list of n samples taken over r steps of batch b.
 * Step i (i < r) takes positions [*lo, *hi): while the list fits (n <=
 * r*b) runs of b, the last one short, as the old rule; a longer list
 * (more samples than a worker had, after a reassignment) is cut into r
 * runs of floor(n/r) or one more, so that it still ends with the epoch.
 * n and r at most 2^32.
 */
void spirt_batch_span(uint64_t *lo, uint64_t *hi, uint64_t n, uint64_t r,
    uint64_t b, uint64_t i) SPIRT_NONNULL(1, 2);

/* A parsed assignment record. */
struct spirt_assign {
	uint64_t revision;
	int64_t *rows;          /* nrows * SPIRT_AS_COLS, malloc'ed */
	size_t nrows;
	size_t nrest;           /* rows[0 .. nrest): the rest part, if any */
	uint64_t epoch;         /* the full part holds from this epoch on */
	uint64_t rest_epoch, rest_step, rest_batch;     /* when nrest > 0 */
};

/*
 * Parse and check the record (t, payload: i64 [m, 7], or [m, 4] of
 * version 1) into a (spirt_assign_free()).  Returns 0, SPIRT_EDTYPE,
 * SPIRT_ESHAPE, SPIRT_EDATA (a negative field, rows out of order, parts
 * that do not follow the layout above), ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_assign_parse(struct spirt_assign *a,
    const struct spirt_tensor *t, const void *payload) SPIRT_NONNULL(1, 2);
void spirt_assign_free(struct spirt_assign *a);

/*
 * Whether each part of a partitions every shard: positions 0..counts[k]-1
 * of shard k in exactly one row (a rest part: the positions not consumed
 * before it are not known here, so only that no position is in two rows
 * and none is beyond the shard).  Returns 0 or SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_assign_check(const struct spirt_assign *a,
    const int64_t *counts, size_t nshards) SPIRT_NONNULL(1);

/*
 * The part of a in force at step j of epoch, for steps of batch: rows
 * [*first, *first + *n) of a->rows, its first step *j0 in the epoch (0
 * for the full part).  Returns 0, SPIRT_ESTEP (the step comes before the
 * revision's first), SPIRT_EINVAL (a rest part made for another batch).
 */
SPIRT_MUST_CHECK int spirt_assign_part(const struct spirt_assign *a,
    uint64_t epoch, uint64_t j, uint64_t batch, size_t *first, size_t *n,
    uint64_t *j0) SPIRT_NONNULL(1, 5, 6, 7);

/* What worker reads at a step: its rows of the part in force, and where. */
struct spirt_assign_sel {
	const int64_t *rows;    /* nrows rows of a (the worker's, in order) */
	size_t nrows;
	uint64_t n;             /* samples in the worker's list */
	uint64_t lo, hi;        /* the step's positions in the list */
	uint64_t epoch, first;  /* the step's epoch; the part's first step
				   in it (0 for the full part) */
};

/*
 * The part of a in force at step (epoch step / S, step mod S of it, S
 * steps per epoch of batch) and worker's rows in it.  Returns 0,
 * SPIRT_ESTEP (the step comes before the revision's first step),
 * SPIRT_EINVAL (a rest part made for another batch), SPIRT_ENOTFOUND (no
 * sample for worker at that step: *sel is still filled).
 */
SPIRT_MUST_CHECK int spirt_assign_select(struct spirt_assign_sel *sel,
    const struct spirt_assign *a, uint64_t worker, uint64_t step,
    uint64_t S, uint64_t batch) SPIRT_NONNULL(1, 2);

/*
 * The samples worker's gradient of step takes under a, S steps per epoch
 * of batch: the length of its run (spirt_assign_select), 0 when the part
 * in force gives it none at that step.  Returns 0, SPIRT_ESTEP,
 * SPIRT_EINVAL as spirt_assign_select.
 */
SPIRT_MUST_CHECK int spirt_assign_samples(uint64_t *n,
    const struct spirt_assign *a, uint64_t worker, uint64_t step,
    uint64_t S, uint64_t batch) SPIRT_NONNULL(1, 2);

/*
 * The deterministic reassignment: a pure function of the shard sizes
 * (counts[k] samples in shard k, worker k's own), group (workers per peer:
 * worker w is in group w / group; 0 means one group) and the live set,
 * so every process that computes it gets the same rows without asking
 * anyone.
 *
 * spirt_assign_map: the full part from epoch on.  A live worker reads its
 * own shard whole; a dead worker's shard is split evenly over the live
 * workers of its group, or when its whole group (a peer) is dead, first
 * evenly over the groups that have a live worker, then each piece over
 * that group's live workers.  Pieces go in worker order, remainders
 * rotating so the extra samples go to successive workers.  Rows as in the
 * record (epoch, step 0, batch 0), sorted, adjacent ones merged.
 *
 * spirt_assign_next: revision cur's successor taking effect at step j of
 * epoch (S steps per epoch of batch).  j = 0: spirt_assign_map(epoch).
 * j > 0: a rest part for steps j .. S-1 of the epoch, then the full part
 * from epoch + 1.  The rest part: each worker of the part in force holds
 * the tail of its list its steps before j did not take; the tails of
 * workers no longer live are split over the live ones that hold a list
 * (same groups rule), appended to their own tails.  A live worker that
 * had no list (it returned) gets work back at the next epoch, unless no
 * worker of its group that holds a list is live: then the group's tails
 * go to its returned ones at once, not to the other groups.  So the
 * steps of the epoch see each sample once, the same ones the first j
 * took and the rest after.
 *
 * *out is malloc'ed, *nout rows.  Returns 0, SPIRT_EINVAL (no live
 * worker would remain, a live worker with no shard of its own (w >=
 * nshards), S or batch 0, j >= S, a rest part made for another batch,
 * sizes beyond 2^32), SPIRT_ESTEP (the step is before cur's first),
 * ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_assign_map(int64_t **out, size_t *nout,
    const int64_t *counts, size_t nshards, uint64_t group,
    const int64_t *live, size_t nlive, uint64_t epoch);
SPIRT_MUST_CHECK int spirt_assign_next(int64_t **out, size_t *nout,
    const struct spirt_assign *cur, const int64_t *counts, size_t nshards,
    uint64_t group, const int64_t *live, size_t nlive, uint64_t epoch,
    uint64_t j, uint64_t S, uint64_t batch);
/*
 * spirt_assign_next_since: the same, but the workers no longer live took
 * nothing from step d of the epoch on (d <= j, at or after the first step
 * of the part in force, else SPIRT_ESTEP): their tails from step d are
 * split over the live ones for steps j .. S-1.  A peer that learns of a
 * death only once the round of step d is closed without it (the agreed
 * member set) takes its samples of steps d .. j-1 so, since no gradient of
 * them was applied.  d = j: spirt_assign_next.
 */
SPIRT_MUST_CHECK int spirt_assign_next_since(int64_t **out, size_t *nout,
    const struct spirt_assign *cur, const int64_t *counts, size_t nshards,
    uint64_t group, const int64_t *live, size_t nlive, uint64_t epoch,
    uint64_t j, uint64_t d, uint64_t S, uint64_t batch);

/*
 * Read and parse data/<name>/assign in txn.  Returns 0, SPIRT_ENOTFOUND,
 * spirt_assign_parse()'s codes, store errors.
 */
SPIRT_MUST_CHECK int spirt_data_assign_get(struct spirt_assign *a,
    struct spirt_txn *txn, const char *name) SPIRT_NONNULL(1, 2, 3);

/*
 * Steps per epoch of data set name in txn for batch: spirt_epoch_steps()
 * of data/<name>/info's sample and shard counts, into *S.  Returns 0,
 * SPIRT_ENOTFOUND, SPIRT_EDTYPE, SPIRT_ESHAPE, SPIRT_EDATA (counts out of
 * range), store errors.
 */
SPIRT_MUST_CHECK int spirt_data_epoch_steps(uint64_t *S,
    struct spirt_txn *txn, const char *name, uint64_t batch)
    SPIRT_NONNULL(1, 2, 3);

#endif
