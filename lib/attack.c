/* attack.c - Byzantine gradient attacks, for evaluating robust rules only */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attack.h"
#include "parse.h"
#include "rng.h"
#include "tensor.h"

static const char *const names[] = {
	[SPIRT_ATTACK_SIGNFLIP] = "signflip",
	[SPIRT_ATTACK_GAUSS] = "gauss",
	[SPIRT_ATTACK_SCALE] = "scale",
	[SPIRT_ATTACK_ALIE] = "alie",
	[SPIRT_ATTACK_IPM] = "ipm",
};
#define NNAMES (sizeof names / sizeof names[0])

const char *
spirt_attack_name(int kind)
{
	if (kind <= 0 || (size_t)kind >= NNAMES)
		return NULL;
	return names[kind];
}

int
spirt_attack_parse(struct spirt_attack *a, const char *spec)
{
	const char *colon = strchr(spec, ':');
	char name[16], *end;
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	double v = 0;

	memset(a, 0, sizeof *a);
	if (len == 0 || len >= sizeof name)
		return SPIRT_EINVAL;
	memcpy(name, spec, len);
	name[len] = '\0';
	if ((a->kind = spirt_parse_name(name, names, NNAMES)) == 0)
		return SPIRT_EINVAL;
	if (colon) {
		const char *p = colon + 1;

		if (*p == '\0' || *p == ' ' || *p == '\t')
			return SPIRT_EINVAL;
		v = strtod(p, &end);
		if (*end != '\0' || !isfinite(v))
			return SPIRT_EINVAL;
	}
	switch (a->kind) {
	case SPIRT_ATTACK_SIGNFLIP:
		a->a = colon ? v : 10;
		break;
	case SPIRT_ATTACK_GAUSS:
		a->a = colon ? v : 100;
		if (!(a->a > 0))
			return SPIRT_EINVAL;
		break;
	case SPIRT_ATTACK_SCALE:
		if (!colon)
			return SPIRT_EINVAL;
		a->a = v;
		break;
	case SPIRT_ATTACK_ALIE:
		a->a = v;
		a->zset = colon != NULL;
		break;
	case SPIRT_ATTACK_IPM:
		a->a = colon ? v : 0.1;
		if (!(a->a > 0))
			return SPIRT_EINVAL;
		break;
	}
	return 0;
}

/* Phi^-1(p) for 0 < p < 1, by bisection on erfc: slow, exact enough */
static double
probit(double p)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200 && hi - lo > 1e-15; i++) {
		double mid = 0.5 * (lo + hi);

		if (0.5 * erfc(-mid / sqrt(2.0)) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

double
spirt_attack_alie_z(size_t n, size_t f)
{
	long s = (long)(n / 2 + 1) - (long)f;
	double p;

	if (n == 0 || f == 0 || s < 1 || (size_t)s >= n)
		return NAN;
	p = (double)(n - (size_t)s) / (double)n;
	return probit(p);
}

/* N(0, sigma^2) from the stream of (seed, step, origin): Box-Muller over
 * pairs of splitmix64 uniforms, u1 in (0, 1] */
static void
gauss(float *o, size_t n, double sigma, uint64_t seed, uint64_t step,
    uint32_t origin)
{
	struct spirt_sm64 r;
	const double tau = 6.283185307179586;

	spirt_sm64_seed(&r, spirt_seed_mix(seed, step, origin));
	for (size_t j = 0; j < n; j += 2) {
		double u1 = 1.0 - spirt_sm64_uniform(&r);
		double u2 = spirt_sm64_uniform(&r);
		double m = sigma * sqrt(-2.0 * log(u1));

		o[j] = (float)(m * cos(tau * u2));
		if (j + 1 < n)
			o[j + 1] = (float)(m * sin(tau * u2));
	}
}

int
spirt_attack_apply(float *const *out, const float *const *x,
    const unsigned char *mal, const uint32_t *origin, uint64_t step,
    size_t w, size_t n, const struct spirt_attack *a)
{
	size_t i, j, f = 0;
	double z = a->a;

	for (i = 0; i < w; i++)
		f += mal[i] != 0;
	if (a->kind == SPIRT_ATTACK_ALIE && !a->zset &&
	    !isfinite(z = spirt_attack_alie_z(w, f)))
		return SPIRT_EINVAL;
	switch (a->kind) {
	case SPIRT_ATTACK_SIGNFLIP:
	case SPIRT_ATTACK_SCALE: {
		float c = (float)(a->kind == SPIRT_ATTACK_SIGNFLIP ? -a->a :
		    a->a);

		for (i = 0; i < w; i++)
			if (mal[i])
				for (j = 0; j < n; j++)
					out[i][j] = c * x[i][j];
		return 0;
	}
	case SPIRT_ATTACK_GAUSS:
		for (i = 0; i < w; i++)
			if (mal[i])
				gauss(out[i], n, a->a, a->seed, step,
				    origin[i]);
		return 0;
	case SPIRT_ATTACK_ALIE:
	case SPIRT_ATTACK_IPM:
		for (j = 0; j < n; j++) {
			double mu = 0, var = 0, v;

			for (i = 0; i < w; i++)
				mu += x[i][j];
			mu /= (double)w;
			if (a->kind == SPIRT_ATTACK_IPM) {
				v = -a->a * mu;
			} else {
				for (i = 0; i < w; i++)
					var += (x[i][j] - mu) * (x[i][j] - mu);
				var = w > 1 ? var / (double)(w - 1) : 0;
				v = mu - z * sqrt(var);
			}
			for (i = 0; i < w; i++)
				if (mal[i])
					out[i][j] = (float)v;
		}
		return 0;
	default:
		return SPIRT_EINVAL;
	}
}

int
spirt_attack_aggregate(float *out, const float *y, const float *const *x,
    size_t w, size_t n, uint64_t step, const struct spirt_attack *a)
{
	double z = a->zset ? a->a : SPIRT_ATTACK_AGG_Z;
	size_t i, j;

	switch (a->kind) {
	case SPIRT_ATTACK_SIGNFLIP:
	case SPIRT_ATTACK_SCALE:
	case SPIRT_ATTACK_IPM: {
		float c = (float)(a->kind == SPIRT_ATTACK_SCALE ? a->a : -a->a);

		for (j = 0; j < n; j++)
			out[j] = c * y[j];
		return 0;
	}
	case SPIRT_ATTACK_GAUSS:
		gauss(out, n, a->a, a->seed, step, SPIRT_NOORIGIN);
		return 0;
	case SPIRT_ATTACK_ALIE:
		if (x == NULL || w < 2)
			return SPIRT_EINVAL;
		for (j = 0; j < n; j++) {
			double mu = 0, var = 0;

			for (i = 0; i < w; i++)
				mu += x[i][j];
			mu /= (double)w;
			for (i = 0; i < w; i++)
				var += (x[i][j] - mu) * (x[i][j] - mu);
			var /= (double)(w - 1);
			out[j] = (float)(y[j] - z * sqrt(var / (double)w));
		}
		return 0;
	default:
		return SPIRT_EINVAL;
	}
}
