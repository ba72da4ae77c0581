/* agg.h - gradient aggregation rules: mean, trimmed mean, median, Krum */
#ifndef SPIRT_AGG_H
#define SPIRT_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * W gradient vectors of N float32 each (pointers straight into the store's
 * map, or stream buffers) are reduced to one output vector of N floats.
 *
 * The work is one streaming pass over the inputs, blocked over coordinates
 * in tiles small enough that the W slices of a tile stay in cache; nothing
 * is allocated per coordinate.  The trimmed mean and the median sort the W
 * values of each coordinate with a Batcher odd-even merge network applied
 * to whole tile rows (compare-exchange of two rows is a min/max over the
 * tile, so it vectorises), never with a general sort.
 *
 * Order independence: inputs are first put in a canonical order (origin,
 * then sample count, then payload bytes) and every sum runs in that fixed
 * order, so the same set of gradients gives a bit-identical result whatever
 * order the caller passes them in.
 *
 * Inputs holding NaN or Inf are excluded (reason SPIRT_AGG_XNONFINITE) and
 * never reach the output.
 */

#define SPIRT_AGG_MAXW 256      /* most inputs one aggregation takes */

enum spirt_agg_rule {
	SPIRT_AGG_MEAN = 1,     /* arithmetic mean */
	SPIRT_AGG_WMEAN,        /* mean weighted by each input's sample count */
	SPIRT_AGG_TRIM,         /* per coordinate: drop k = floor(trim*W)
				   lowest and highest, mean of the rest */
	SPIRT_AGG_MEDIAN,       /* per coordinate median (mean of the two
				   middle values for even W) */
	SPIRT_AGG_NORM,         /* drop inputs whose L2 norm is an outlier
				   (median absolute deviation), then mean */
	SPIRT_AGG_KRUM,         /* Krum: the input closest to its W-f-2
				   nearest neighbours */
	SPIRT_AGG_MKRUM,        /* multi-Krum: mean of the m best by Krum
				   score */
	SPIRT_AGG_CCLIP,        /* centred clipping (Karimireddy, He,
				   Jaggi 2021): iters times, v += mean of
				   (x_i - v) min(1, tau / |x_i - v|),
				   from v = center */
	SPIRT_AGG_SCCLIP        /* self-centred clipping (He, Karimireddy,
				   Jaggi 2022): CCLIP from v = center, the
				   caller's own input, which is required */
};

/* Why an input was excluded (the reason column of agg/<t>/excluded). */
enum spirt_agg_reason {
	SPIRT_AGG_XNONE = 0,
	SPIRT_AGG_XNONFINITE = 1,       /* holds NaN or Inf */
	SPIRT_AGG_XNORM = 2,            /* L2 norm outlier */
	SPIRT_AGG_XKRUM = 3,            /* not selected by (multi-)Krum */
	/* set before any rule runs (lib/aggstore.c), never by one: */
	SPIRT_AGG_XSTALE = 4,           /* computed under another revision
					   of the assignment than the one
					   in force (a straggler) */
	SPIRT_AGG_XPAST = 5             /* a gradient of a past step */
};

struct spirt_agg_params {
	int rule;               /* enum spirt_agg_rule */
	double trim;            /* SPIRT_AGG_TRIM: fraction cut per side */
	unsigned f;             /* Krum: Byzantine inputs tolerated */
	unsigned m;             /* multi-Krum: inputs averaged, 0 = W - f */
	double mad;             /* SPIRT_AGG_NORM: threshold in (scaled) MADs */
	double tau;             /* CCLIP, SCCLIP: clipping radius */
	/* CCLIP, SCCLIP: the radius of each iteration is the (f+1)-th
	 * largest distance |x_i - v| of the finite inputs to the centre (f
	 * = p->f; He et al. 2022's adaptive choice: the f farthest are
	 * clipped to the next one's distance); tau is then unused */
	int tau_auto;
	unsigned iters;         /* CCLIP, SCCLIP: iterations (L) */
	const float *center;    /* CCLIP: the starting point, n floats (the
				   previous aggregate), NULL: zero; SCCLIP:
				   the caller's own input, never NULL */
	/* bucketing (Karimireddy, He, Jaggi 2022) in front of any rule:
	 * with bucket s > 1, the finite inputs in canonical order are
	 * permuted by a Fisher-Yates shuffle drawn from splitmix64 seeded
	 * with spirt_seed_mix(seed, step, 0), cut into ceil(a/s) buckets of
	 * s consecutive ones (the last maybe smaller), and the rule runs on
	 * the buckets' means; an excluded bucket excludes its inputs.  The
	 * rule's conditions then hold for the number of buckets. */
	unsigned bucket;        /* 0 or 1: none */
	uint64_t seed, step;    /* bucketing's permutation */
};

/* One input.  The caller fills the "in" fields; spirt_agg_run() reorders
 * the array into canonical order and fills the "out" fields. */
struct spirt_agg_input {
	const float *x;         /* in: N values, 4-byte aligned, not owned */
	uint32_t origin;        /* in: worker id (SPIRT_NOORIGIN if unset) */
	uint64_t samples;       /* in: sample count (weights for WMEAN) */
	size_t id;              /* in: caller's tag, left untouched */
	int excluded;           /* out: enum spirt_agg_reason */
	double score;           /* out: L2 norm (NORM) or Krum score */
};

/* Set defaults: mean, trim 0.1, f 0, m 0, mad 3, tau 1 (not auto),
 * iters 1, no center, no bucketing, seed 0, step 0. */
void spirt_agg_defaults(struct spirt_agg_params *p) SPIRT_NONNULL(1);

/* Rule for a name ("mean", "wmean", "trim", "median", "norm", "krum",
 * "mkrum", "cclip", "scclip"), or 0.  spirt_agg_rule_name is the inverse
 * (NULL if unknown). */
int spirt_agg_rule_parse(const char *name);
const char *spirt_agg_rule_name(int rule);
/* Short text for an exclusion reason ("nonfinite", "norm outlier", ...). */
const char *spirt_agg_reason_name(int reason);

/*
 * Whether parameters p make sense for w inputs.  Returns 0, or
 * SPIRT_EINVAL when the rule is unknown, w is 0 or above SPIRT_AGG_MAXW,
 * the trim is outside [0, 0.5) or, being above 0, drops no value
 * (floor(trim * w) = 0), Krum's f breaks w > 2f + 2, or multi-Krum's m is
 * above w - f; CCLIP's or SCCLIP's tau is not above 0 (and not auto)
 * or iters is 0.  With
 * bucketing, w is the number of buckets, spirt_agg_nbuckets(p, w).
 */
SPIRT_MUST_CHECK int spirt_agg_check(const struct spirt_agg_params *p,
    size_t w);

/*
 * spirt_agg_check(), and whether the rule tolerates the f = p->f
 * Byzantine inputs declared (the tools refuse to run otherwise): the mean
 * and wmean tolerate none; the trim must cut at least f per side
 * (floor(trim * w) >= f); the median, norm, cclip and scclip need
 * w > 2f; Krum's
 * w > 2f + 2 is spirt_agg_check()'s.  w counts buckets as above.
 * Returns 0 or SPIRT_EINVAL.
 */
SPIRT_MUST_CHECK int spirt_agg_tolerates(const struct spirt_agg_params *p,
    size_t w);

/* Inputs the rule sees for w inputs: ceil(w / bucket) with bucketing,
 * else w. */
size_t spirt_agg_nbuckets(const struct spirt_agg_params *p, size_t w)
    SPIRT_NONNULL(1);

/*
 * Put in[0..w) in canonical order: origin, then samples, then the payload
 * bytes (n floats) compared lexicographically.  Ties are identical inputs.
 */
void spirt_agg_sort(struct spirt_agg_input *in, size_t w, size_t n);

/*
 * Aggregate.  out (n floats, out) receives the result; in[0..w) (in/out)
 * is sorted canonically and gets excluded/score filled; *used (out, may be
 * NULL) is the number of inputs that went into the result.  out must not
 * overlap any input.  Allocates one tile buffer, freed before returning.
 * Returns 0; SPIRT_EINVAL if spirt_agg_check() fails; SPIRT_ENAN if every
 * input holds NaN/Inf; SPIRT_EDATA if too few finite inputs remain for the
 * rule, or WMEAN inputs carry no sample count; SPIRT_EINVAL for SCCLIP
 * without p->center; ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_agg_run(float *out, struct spirt_agg_input *in,
    size_t w, size_t n, const struct spirt_agg_params *p, size_t *used)
    SPIRT_NONNULL(1, 2, 5);

/*
 * A watcher of the pass.  start() is called before each attempt at the
 * pass with in[0..w) in canonical order and their exclusions so far (so
 * the result's header can be made then); tile() after each stretch of out
 * is final, in order, while it is still in cache (to checksum it).  A pass
 * that meets a non-finite value starts over: start() again, then the
 * tiles from the first.
 */
struct spirt_agg_watch {
	void (*start)(void *arg, const struct spirt_agg_input *in, size_t w);
	void (*tile)(void *arg, const float *out, size_t len);
	void *arg;
};

/* spirt_agg_run() with a watcher (NULL: none). */
SPIRT_MUST_CHECK int spirt_agg_run_watched(float *out,
    struct spirt_agg_input *in, size_t w, size_t n,
    const struct spirt_agg_params *p, size_t *used,
    const struct spirt_agg_watch *watch) SPIRT_NONNULL(1, 2, 5);

#endif
