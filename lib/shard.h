/* shard.h - data sets in the store: shuffle, shards, the assignment */
#ifndef SPIRT_SHARD_H
#define SPIRT_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "spirt.h"
#include "assign.h"
#include "store.h"
#include "tensor.h"

/*
 * A data set read by data.h goes to the store as shards under
 * data/<name>/ (keys.h builds the keys; docs/contracts.md and
 * spirt-store(5) give the layout), with the assignment of samples to
 * workers that spirt-grad reads and a reassignment rewrites.
 */

/*
 * Read data/<name>/scale from the store for samples of feat features into
 * a malloc'ed *scale (free()).  Returns 0, SPIRT_ENOTFOUND (no such key:
 * name was not standardised), SPIRT_EDTYPE, SPIRT_ESHAPE (not [2, feat]),
 * SPIRT_ENAN (a value not finite, a deviation not above 0), ENOMEM, store
 * errors.
 */
SPIRT_MUST_CHECK int spirt_data_scale_get(float **scale,
    struct spirt_store *s, const char *name, size_t feat);

/*
 * Read data/<name>/classes, the class names of a data set sharded with
 * label names (as ds.names), into a malloc'ed *names of *len bytes
 * (free()).  Returns 0, SPIRT_ENOTFOUND (no such key: its labels were
 * numbers), SPIRT_EDTYPE, SPIRT_ESHAPE, SPIRT_EDATA (not a list of names),
 * ENOMEM, store errors.
 */
SPIRT_MUST_CHECK int spirt_data_names_get(char **names, size_t *len,
    struct spirt_store *s, const char *name);

/*
 * Shuffle the samples of ds in place (x rows and y together): Fisher-Yates
 * from the last sample down, swapping i with spirt_rng_below(r, i + 1) (rng.h).
 * The same seed gives the same order on every machine.
 */
void spirt_data_shuffle(struct spirt_dataset *ds, uint64_t seed);

/*
 * Even split: counts[k] (k < nshards) = n / nshards, plus one for the
 * first n % nshards shards.
 */
void spirt_data_split(size_t *counts, size_t n, size_t nshards);

/*
 * Write ds as nshards shards under data/<name>/ with the initial assignment
 * (worker k reads shard k whole, revision 0) and, when ds->scale is set,
 * data/<name>/scale, when ds->names is, data/<name>/classes (u8 [len]:
 * the names), all in one write transaction
 * that first deletes every earlier key under data/<name>/.  Shard k holds
 * the samples after those of shards 0..k-1 in ds order.  Returns 0,
 * SPIRT_EINVAL (bad name, nshards 0 or above n or MAXSHARDS), or a store
 * error; on error
 * the store is unchanged.
 */
SPIRT_MUST_CHECK int spirt_data_store(struct spirt_store *s,
    const char *name, const struct spirt_dataset *ds, size_t nshards);

/*
 * Write ds as nshards shards to fd as a data file: a record stream of the
 * x and y records data/<name>/<k>/x and y would hold, for k = 0, 1, ...
 * (no info, no assignment: worker k reads pair k, see spirt-grad(1)).
 * Returns 0, SPIRT_EINVAL (bad name, nshards 0 or above n), ENOMEM or the
 * errno of a failed write.
 */
SPIRT_MUST_CHECK int spirt_data_write(int fd, const char *name,
    const struct spirt_dataset *ds, size_t nshards);

/* A reassignment to write (spirt_data_reassign). */
struct spirt_reassign {
	const int64_t *live;    /* the live set, or NULL: the workers of */
	size_t nlive;           /* the current full part less dead[] */
	const int64_t *dead;
	size_t ndead;
	uint64_t group;         /* workers per peer, 0: one group */
	int when;               /* SPIRT_RA_*: where it takes effect */
	uint64_t epoch;         /* SPIRT_RA_EPOCH */
	uint64_t step, batch;   /* SPIRT_RA_STEP: a step of batch */
	int has_since;          /* SPIRT_RA_STEP: the dead took nothing */
	uint64_t since;         /* from step since (<= step, same epoch) */
	/* out */
	uint64_t revision;      /* the one written */
	uint64_t at_epoch, at_step;     /* where it takes effect */
	uint64_t at_since;              /* the dead's last, in the epoch */
	uint64_t from_revision;         /* SPIRT_RA_REDO: the one restored */
	char msg[192];          /* on SPIRT_EINVAL and SPIRT_ESTEP: why */
};
enum {
	SPIRT_RA_CURRENT,       /* at the current revision's full part */
	SPIRT_RA_EPOCH,         /* at the start of epoch */
	SPIRT_RA_STEP,          /* at step (any step, with its batch) */
	SPIRT_RA_REDO           /* step (with its batch) is done again */
};

/* revisions kept under data/<name>/assign/<r>, the newest ones */
#define SPIRT_ASSIGN_KEEP 64

/*
 * Write revision + 1 of data/<name>/assign for r in one write transaction
 * (read, spirt_assign_next, write); r->msg says why it cannot be, without
 * the key ("worker 9 has no shard: 4 shards").  The revision it replaces
 * is kept as data/<name>/assign/<r>, with the SPIRT_ASSIGN_KEEP - 1 before
 * it (older ones go).
 *
 * SPIRT_RA_REDO: the steps from r->step on are done again (the model
 * went back to that step: a resume from an older durable version, a
 * rejoin at the others' step): the parts of the current revision that
 * begin after it are of a discarded timeline.  When the current revision
 * holds at that step (its part in force there begins at or before it),
 * nothing is written (SPIRT_EDONE); else the newest kept revision that
 * holds there is written again as revision + 1 (r->from_revision), or
 * SPIRT_ESTEP when none is kept.
 *
 * Returns 0,
 * SPIRT_ENOTFOUND (no such
 * data set), SPIRT_EDONE (r->dead only, and none of them is live; or a
 * redo the current revision holds for: nothing to do, store unchanged),
 * spirt_assign_next()'s codes,
 * SPIRT_EDATA/ESHAPE/EDTYPE (a malformed record), store errors.
 */
SPIRT_MUST_CHECK int spirt_data_reassign(struct spirt_store *s,
    const char *name, struct spirt_reassign *r) SPIRT_NONNULL(1, 2, 3);

/* Per-shard facts read back from the store (spirt-shard --stats). */
struct spirt_data_stats {
	int64_t nshards, nsamples, nclasses, features;
	int xdtype;
	unsigned xrank;
	uint64_t xdims[SPIRT_MAXRANK];  /* shape of one sample: xdims[1..] */
	int64_t *counts;                /* [nshards] samples per shard */
	int64_t *hist;                  /* [nshards * nclasses] */
	struct spirt_assign as;         /* the assignment */
};

/*
 * Read info, every shard's y and the assignment of data set name, and
 * check they agree (shape, sample counts, labels in range).  Memory
 * follows the shards found, not the counts info claims.  Free with
 * spirt_data_stats_free().  Returns 0, SPIRT_ENOTFOUND (no such data set),
 * SPIRT_EDATA/ESHAPE/EDTYPE (inconsistent store: a shard info counts is
 * missing, say), ENOMEM, store errors.
 */
SPIRT_MUST_CHECK int spirt_data_stats(struct spirt_data_stats *st,
    struct spirt_store *s, const char *name);
void spirt_data_stats_free(struct spirt_data_stats *st);

#endif
