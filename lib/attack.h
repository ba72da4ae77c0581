/* attack.h - Byzantine gradient attacks, for evaluating robust rules only */
#ifndef SPIRT_ATTACK_H
#define SPIRT_ATTACK_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * For evaluation only: what a malicious gradient function would send in
 * place of its honest gradient, so that the robust rules of agg.h can be
 * measured (spirt-attack(1), bench/byzantine.sh).  Nothing in the
 * training path calls this.
 *
 * A step's W gradient vectors of N float32 each are given; those marked
 * malicious are replaced.  The "omniscient" attacks (ALIE, IPM) take their
 * statistics over all W inputs, that is over the honest gradients the
 * malicious functions computed before lying, as in the papers.
 */

enum spirt_attack_kind {
	SPIRT_ATTACK_SIGNFLIP = 1,      /* -a * g (a = 10: SPIRT's) */
	SPIRT_ATTACK_GAUSS,             /* N(0, a^2) per coordinate */
	SPIRT_ATTACK_SCALE,             /* a * g */
	SPIRT_ATTACK_ALIE,              /* mu - z * sigma (Baruch et al.) */
	SPIRT_ATTACK_IPM                /* -eps * mu (Xie et al.) */
};

struct spirt_attack {
	int kind;               /* enum spirt_attack_kind */
	double a;               /* the attack's parameter (see above) */
	int zset;               /* ALIE: a is z as given (else computed) */
	uint64_t seed;          /* GAUSS: seed of the noise */
};

/*
 * Parse "signflip[:S]", "gauss[:SIGMA]", "scale:S", "alie[:z]",
 * "ipm[:EPS]" into a (defaults: S 10, SIGMA 100, EPS 0.1, z from
 * spirt_attack_alie_z(); seed 0).  Returns 0 or SPIRT_EINVAL (unknown name,
 * missing or malformed parameter, SIGMA or EPS not above 0, a value not
 * finite).
 */
SPIRT_MUST_CHECK int spirt_attack_parse(struct spirt_attack *a,
    const char *spec) SPIRT_NONNULL(1, 2);

/* The name of kind ("signflip", ...), or NULL. */
const char *spirt_attack_name(int kind);

/*
 * ALIE's z for n workers of which f are malicious (Baruch, Baruch and
 * Goldberg 2019, "A little is enough"): s = floor(n/2 + 1) - f supporters
 * are needed, and z = Phi^-1((n - s) / n), Phi the standard normal CDF.
 * Returns z, or NAN when the formula has no finite answer (f = 0, s < 1).
 */
double spirt_attack_alie_z(size_t n, size_t f);

/*
 * Apply a to the inputs x[0..w) (n floats each, in): for each i with
 * mal[i] set, out[i] (n floats, out) receives the malicious vector; the
 * others' out[i] are untouched (may be NULL).  origin[i] and step seed the
 * Gaussian noise of input i (seed mixed with step and origin, so each
 * function's noise differs and a rerun draws the same).  ALIE and IPM use
 * the mean (and ALIE the standard deviation with n - 1 in the
 * denominator, 0 for w = 1) of every input, coordinate by coordinate; for
 * ALIE without a given z, z is spirt_attack_alie_z(w, number of malicious
 * inputs).  out[i] may be x[i] for the per-input attacks (signflip,
 * gauss, scale), never for ALIE and IPM.  Returns 0 or SPIRT_EINVAL (ALIE's
 * z has no finite value for these w and f).
 */
SPIRT_MUST_CHECK int spirt_attack_apply(float *const *out,
    const float *const *x, const unsigned char *mal, const uint32_t *origin,
    uint64_t step, size_t w, size_t n, const struct spirt_attack *a)
    SPIRT_NONNULL(1, 2, 3, 4, 8);

/* ALIE's z on a peer's aggregate when none is given (the formula's is 0
 * for 4 peers and 1 Byzantine: no shift at all) */
#define SPIRT_ATTACK_AGG_Z 1.0

/*
 * A Byzantine peer's crafted aggregate (spirt-train --byzantine
 * peer:ATTACK): out (n floats, out) from its honest aggregate y (n floats,
 * in; out may be y except for ALIE) and, for ALIE, the w gradients x of
 * the step it was made from (in; NULL and 0 for the others).  What the
 * peer knows is its own: signflip -S y, scale S y, gauss N(0, SIGMA^2)
 * (seeded with seed, step and SPIRT_NOORIGIN), IPM -EPS y (its aggregate
 * is its estimate of the honest mean), ALIE y - z sd / sqrt(w), sd the
 * standard deviation (n - 1 in the denominator) of the gradients per
 * coordinate, so sd / sqrt(w) estimates the spread of honest aggregates
 * of w gradients each; z is SPIRT_ATTACK_AGG_Z unless given.  Returns 0 or
 * SPIRT_EINVAL (ALIE with fewer than 2 gradients).
 */
SPIRT_MUST_CHECK int spirt_attack_aggregate(float *out, const float *y,
    const float *const *x, size_t w, size_t n, uint64_t step,
    const struct spirt_attack *a) SPIRT_NONNULL(1, 2, 7);

#endif
