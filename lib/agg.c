/* agg.c - gradient aggregation rules: mean, trimmed mean, median, Krum */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "parse.h"
#include "rng.h"
#include "vec.h"
#include "tensor.h"

/*
 * Inner loops work on 4 or 8 floats at a time through GCC/Clang vector types,
 * so they vectorise at any -O level without -O3 or -ffast-math; other
 * compilers get the scalar loops (same results: lane-wise operations only,
 * no reassociation).  The passes are compiled per x86-64 level
 * (SPIRT_DISPATCH, vec.h), with the same results on each.
 *
 * Non-finite detection is fused into the loops: for the bit pattern b of a
 * float, (b & 0x7f800000) + 0x00800000 has bit 31 set exactly when the
 * exponent is all ones (Inf or NaN); OR-ing those over a slice costs one
 * integer op per element and needs no float compare.
 */

#ifndef TILESORT
#define TILESORT 1024
#endif

/* o = c * x (init) or o += c * x */
SPIRT_KERNEL uint32_t
v_axpy(float *o, float c, const float *x, size_t n, int init)
{
	uint32_t bad = 0;
	size_t j = 0;

#ifdef SPIRT_VEC
	vu vb = {0, 0, 0, 0};
	vf cv = {c, c, c, c};

	for (; j + VL <= n; j += VL) {
		vf a = ldv(x + j);
		vb |= ((vu)a & EXPMASK) + EXPONE;
		stv(o + j, init ? cv * a : ldv(o + j) + cv * a);
	}
	bad = orv(vb);
#endif
	for (; j < n; j++) {
		bad |= badbits(x[j]);
		o[j] = init ? c * x[j] : o[j] + c * x[j];
	}
	return bad;
}

/*
 * o = (x[0] + x[1] + ... + x[a-1]) / a over [j0, j0 + n), summed in that
 * order, so each element equals copying x[0], adding the others one by one
 * and dividing, bit for bit, in one pass: a loads and one store per vector
 * instead of a loads, a - 1 reloads of o and a + 1 stores.  Returns the
 * non-finite bits of the x.
 */
SPIRT_KERNEL uint32_t
v_mean(float *o, const float *const *x, size_t a, size_t j0, size_t n)
{
	uint32_t bad = 0;
	float d = (float)a;
	size_t i, j = 0;

#ifdef SPIRT_VEC
	vu8 vb = {0, 0, 0, 0, 0, 0, 0, 0};
	vf8 dv = SPLAT8(d);

	for (; j + 2 * VL8 <= n; j += 2 * VL8) {
		vf8 s0, s1;

		LD8(s0, x[0] + j0 + j);
		LD8(s1, x[0] + j0 + j + VL8);
		vb |= BAD8(s0) | BAD8(s1);
		for (i = 1; i < a; i++) {
			vf8 p, q;

			LD8(p, x[i] + j0 + j);
			LD8(q, x[i] + j0 + j + VL8);
			vb |= BAD8(p) | BAD8(q);
			s0 += p;
			s1 += q;
		}
		if (a > 1) {
			s0 /= dv;
			s1 /= dv;
		}
		ST8(o + j, s0);
		ST8(o + j + VL8, s1);
	}
	bad = OR8(vb);
#endif
	for (; j < n; j++) {
		float s = x[0][j0 + j];

		bad |= badbits(s);
		for (i = 1; i < a; i++) {
			bad |= badbits(x[i][j0 + j]);
			s += x[i][j0 + j];
		}
		o[j] = a > 1 ? s / d : s;
	}
	return bad;
}

/*
 * The sorting network's rows on 8 lanes: one AVX register in the AVX2 and
 * AVX-512 copies.  A compare-exchange is a compare and two selects, with
 * the scalar loop's exact semantics (x < y ? x : y and x < y ? y : x).
 */
SPIRT_KERNEL void
v_cmpx8(float *a, float *b, size_t n)
{
	size_t j = 0;

#ifdef SPIRT_VEC
	for (; j + VL8 <= n; j += VL8) {
		vf8 x, y;
		vu8 m, xi, yi, lo, hi;

		LD8(x, a + j);
		LD8(y, b + j);
		m = (vu8)(x < y);
		xi = (vu8)x;
		yi = (vu8)y;
		lo = (m & xi) | (~m & yi);
		hi = (m & yi) | (~m & xi);
		ST8(a + j, lo);
		ST8(b + j, hi);
	}
#endif
	for (; j < n; j++) {
		float x = a[j], y = b[j];

		a[j] = x < y ? x : y;
		b[j] = x < y ? y : x;
	}
}

/* o = x (8 lanes); returns the non-finite bits of x */
SPIRT_KERNEL uint32_t
v_copy8(float *o, const float *x, size_t n)
{
	uint32_t bad = 0;
	size_t j = 0;

#ifdef SPIRT_VEC
	vu8 vb = {0, 0, 0, 0, 0, 0, 0, 0};

	for (; j + VL8 <= n; j += VL8) {
		vf8 a;

		LD8(a, x + j);
		vb |= BAD8(a);
		ST8(o + j, a);
	}
	bad = OR8(vb);
#endif
	for (; j < n; j++) {
		bad |= badbits(x[j]);
		o[j] = x[j];
	}
	return bad;
}

/* o = (r[0] + r[S] + ... + r[(k-1)S]) / k, rows summed in order (8
 * lanes, one pass) */
SPIRT_KERNEL void
v_rowmean8(float *o, const float *r, size_t S, size_t k, size_t n)
{
	float d = (float)k;
	size_t j = 0, i;

#ifdef SPIRT_VEC
	vf8 dv = SPLAT8(d);

	for (; j + VL8 <= n; j += VL8) {
		vf8 s, p;

		LD8(s, r + j);
		for (i = 1; i < k; i++) {
			LD8(p, r + i * S + j);
			s += p;
		}
		if (k > 1)
			s /= dv;
		ST8(o + j, s);
	}
#endif
	for (; j < n; j++) {
		float s = r[j];

		for (i = 1; i < k; i++)
			s += r[i * S + j];
		o[j] = k > 1 ? s / d : s;
	}
}

/* sum of squares of x, or of x - y when y is not NULL */
SPIRT_KERNEL double
v_sumsq(const float *x, const float *y, size_t n, uint32_t *badp)
{
	uint32_t bad = 0;
	double s;
	size_t j = 0;

#ifdef SPIRT_VEC
	vf acc0 = {0, 0, 0, 0}, acc1 = {0, 0, 0, 0};
	vu vb = {0, 0, 0, 0};

	for (; j + 2 * VL <= n; j += 2 * VL) {
		vf a = ldv(x + j), b = ldv(x + j + VL);
		if (y) {
			a -= ldv(y + j);
			b -= ldv(y + j + VL);
		}
		vb |= (((vu)a & EXPMASK) + EXPONE) | (((vu)b & EXPMASK) + EXPONE);
		acc0 += a * a;
		acc1 += b * b;
	}
	acc0 += acc1;
	s = ((double)acc0[0] + acc0[1]) + ((double)acc0[2] + acc0[3]);
	bad = orv(vb);
#else
	s = 0;
#endif
	for (; j < n; j++) {
		float d = y ? x[j] - y[j] : x[j];

		bad |= badbits(d);
		s += (double)d * d;
	}
	*badp |= bad;
	return s;
}

/* ---- parameters ---- */

static const char *const rulenames[] = {
	[SPIRT_AGG_MEAN] = "mean",
	[SPIRT_AGG_WMEAN] = "wmean",
	[SPIRT_AGG_TRIM] = "trim",
	[SPIRT_AGG_MEDIAN] = "median",
	[SPIRT_AGG_NORM] = "norm",
	[SPIRT_AGG_KRUM] = "krum",
	[SPIRT_AGG_MKRUM] = "mkrum",
	[SPIRT_AGG_CCLIP] = "cclip",
	[SPIRT_AGG_SCCLIP] = "scclip",
};
#define NRULES (sizeof rulenames / sizeof rulenames[0])

void
spirt_agg_defaults(struct spirt_agg_params *p)
{
	memset(p, 0, sizeof *p);
	p->rule = SPIRT_AGG_MEAN;
	p->trim = 0.1;
	p->f = 0;
	p->m = 0;
	p->mad = 3.0;
	p->tau = 1.0;
	p->tau_auto = 0;
	p->iters = 1;
	p->center = NULL;
	p->bucket = 0;
	p->seed = p->step = 0;
}

size_t
spirt_agg_nbuckets(const struct spirt_agg_params *p, size_t w)
{
	return p->bucket > 1 ? (w + p->bucket - 1) / p->bucket : w;
}

int
spirt_agg_rule_parse(const char *name)
{
	return spirt_parse_name(name, rulenames, NRULES);
}

const char *
spirt_agg_rule_name(int rule)
{
	if (rule <= 0 || (size_t)rule >= NRULES)
		return NULL;
	return rulenames[rule];
}

const char *
spirt_agg_reason_name(int reason)
{
	switch (reason) {
	case SPIRT_AGG_XNONE: return "used";
	case SPIRT_AGG_XNONFINITE: return "NaN or Inf values";
	case SPIRT_AGG_XNORM: return "L2 norm outlier";
	case SPIRT_AGG_XKRUM: return "not selected by Krum";
	case SPIRT_AGG_XSTALE: return "stale: another assignment revision";
	case SPIRT_AGG_XPAST: return "a gradient of a past step";
	default: return "unknown reason";
	}
}

static size_t
trimk(double trim, size_t w)
{
	return (size_t)floor(trim * (double)w + 1e-9);
}

/* A trim must drop at least one value per side (else it filters nothing
 * and hides a mistake) and leave at least one. */
static int
trimok(double trim, size_t w)
{
	size_t k;

	if (!(trim >= 0 && trim < 0.5))
		return 0;
	k = trimk(trim, w);
	return (trim == 0 || k > 0) && 2 * k < w;
}

int
spirt_agg_check(const struct spirt_agg_params *p, size_t w)
{
	if (w == 0 || w > SPIRT_AGG_MAXW)
		return SPIRT_EINVAL;
	w = spirt_agg_nbuckets(p, w);
	switch (p->rule) {
	case SPIRT_AGG_MEAN: case SPIRT_AGG_WMEAN: case SPIRT_AGG_MEDIAN:
		return 0;
	case SPIRT_AGG_TRIM:
		return trimok(p->trim, w) ? 0 : SPIRT_EINVAL;
	case SPIRT_AGG_NORM:
		return p->mad > 0 ? 0 : SPIRT_EINVAL;
	case SPIRT_AGG_CCLIP: case SPIRT_AGG_SCCLIP:
		return (p->tau_auto || p->tau > 0) && p->iters >= 1 ? 0 :
		    SPIRT_EINVAL;
	case SPIRT_AGG_KRUM:
		return w > 2 * (size_t)p->f + 2 ? 0 : SPIRT_EINVAL;
	case SPIRT_AGG_MKRUM:
		if (w <= 2 * (size_t)p->f + 2)
			return SPIRT_EINVAL;
		return p->m <= w - p->f ? 0 : SPIRT_EINVAL;
	default:
		return SPIRT_EINVAL;
	}
}

int
spirt_agg_tolerates(const struct spirt_agg_params *p, size_t w)
{
	size_t f = p->f;

	if (spirt_agg_check(p, w) != 0)
		return SPIRT_EINVAL;
	w = spirt_agg_nbuckets(p, w);
	switch (p->rule) {
	case SPIRT_AGG_MEAN: case SPIRT_AGG_WMEAN:
		return f == 0 ? 0 : SPIRT_EINVAL;
	case SPIRT_AGG_TRIM:
		return trimk(p->trim, w) >= f ? 0 : SPIRT_EINVAL;
	case SPIRT_AGG_MEDIAN: case SPIRT_AGG_NORM: case SPIRT_AGG_CCLIP:
	case SPIRT_AGG_SCCLIP:
		return w > 2 * f ? 0 : SPIRT_EINVAL;
	default:        /* Krum: spirt_agg_check() holds f already */
		return 0;
	}
}

/* ---- canonical order ---- */

static int
incmp(const struct spirt_agg_input *a, const struct spirt_agg_input *b,
    size_t n)
{
	if (a->origin != b->origin)
		return a->origin < b->origin ? -1 : 1;
	if (a->samples != b->samples)
		return a->samples < b->samples ? -1 : 1;
	if (a->x == b->x)
		return 0;
	return memcmp(a->x, b->x, n * sizeof(float));
}

void
spirt_agg_sort(struct spirt_agg_input *in, size_t w, size_t n)
{
	size_t i, j;

	/* insertion sort: w is small and the comparison usually stops at
	 * the origin */
	for (i = 1; i < w; i++) {
		struct spirt_agg_input t = in[i];

		for (j = i; j > 0 && incmp(&in[j - 1], &t, n) > 0; j--)
			in[j] = in[j - 1];
		in[j] = t;
	}
}

/* ---- work area ---- */

struct work {
	size_t tile;            /* coordinates per tile */
	size_t stride;          /* floats between buf rows: tile + pad */
	size_t na;              /* active inputs */
	const float **x;        /* active inputs' data, canonical order */
	float *c;               /* WMEAN coefficients */
	float *buf;             /* na * tile floats (TRIM, MEDIAN) */
	uint16_t (*net)[2];     /* sorting network comparators */
	size_t nnet;
	double *d;              /* Krum pair distances, w * w */
};

/* Tile: the W slices of a tile together about 128 KiB (in L2); for the
 * sorting network, which rereads its rows, 4 KiB (measured: larger tiles
 * run slower, W input streams read in short bursts). */
static size_t
tilesize(size_t w, int sorted)
{
	size_t t = (sorted ? TILESORT : 32768) / (w ? w : 1);

	if (t < (sorted ? 64 : 256))
		t = sorted ? 64 : 256;
	if (t > 8192)
		t = 8192;
	return t & ~(size_t)15;
}

/*
 * Batcher's odd-even merge sort network for any n (Knuth 5.3.4; comparators
 * beyond n dropped).  O(n log^2 n) comparators: 5 for 4, 19 for 8, 63 for
 * 16.  Returns the count written to net (NULL: only count).
 */
static size_t
network(uint16_t (*net)[2], size_t n)
{
	size_t p, k, j, i, c = 0;

	for (p = 1; p < n; p <<= 1)
		for (k = p; k >= 1; k >>= 1)
			for (j = k % p; j + k < n; j += 2 * k)
				for (i = 0; i < k && i + j + k < n; i++)
					if ((i + j) / (2 * p) ==
					    (i + j + k) / (2 * p)) {
						if (net) {
							net[c][0] = (uint16_t)(i + j);
							net[c][1] = (uint16_t)(i + j + k);
						}
						c++;
					}
	return c;
}

/* Collect the active inputs into wk->x; returns their count. */
static size_t
activate(struct work *wk, const struct spirt_agg_input *in, size_t w)
{
	size_t i, a = 0;

	for (i = 0; i < w; i++)
		if (!in[i].excluded)
			wk->x[a++] = in[i].x;
	wk->na = a;
	return a;
}

/* Full scan: mark every input holding NaN/Inf. */
static void
markbad(struct spirt_agg_input *in, size_t w, size_t n)
{
	size_t i;

	for (i = 0; i < w; i++)
		if (!in[i].excluded && spirt_count_nonfinite_f32(in[i].x, n))
			in[i].excluded = SPIRT_AGG_XNONFINITE;
}

/*
 * One pass: out = mean (or weighted sum when wk->c) of the active inputs.
 * Returns 1 when a non-finite value was met (out then garbage), else 0.
 */
SPIRT_KERNEL int
pass_mean_k(float *out, struct work *wk, size_t n,
    const struct spirt_agg_watch *wt)
{
	size_t j0, i, a = wk->na;

	for (j0 = 0; j0 < n; j0 += wk->tile) {
		size_t len = n - j0 < wk->tile ? n - j0 : wk->tile;
		float *o = out + j0;
		uint32_t bad;

		if (wk->c) {
			bad = v_axpy(o, wk->c[0], wk->x[0] + j0, len, 1);
			for (i = 1; i < a; i++)
				bad |= v_axpy(o, wk->c[i], wk->x[i] + j0,
				    len, 0);
		} else {
			bad = v_mean(o, wk->x, a, j0, len);
		}
		if (bad & BADBIT)
			return 1;
		if (wt)
			wt->tile(wt->arg, o, len);
	}
	return 0;
}

SPIRT_DISPATCH(static, int, pass_mean, (float *out, struct work *wk,
    size_t n, const struct spirt_agg_watch *wt), (out, wk, n, wt))

/* One pass: trimmed mean keeping sorted rows [lo, hi), or median. */
SPIRT_KERNEL int
pass_sorted_k(float *out, struct work *wk, size_t n, size_t lo, size_t hi,
    int median, const struct spirt_agg_watch *wt)
{
	size_t j0, i, a = wk->na, T = wk->tile, S = wk->stride;

	for (j0 = 0; j0 < n; j0 += T) {
		size_t len = n - j0 < T ? n - j0 : T;
		float *o = out + j0;
		uint32_t bad = 0;

		for (i = 0; i < a; i++)
			bad |= v_copy8(wk->buf + i * S, wk->x[i] + j0, len);
		if (bad & BADBIT)
			return 1;
		for (i = 0; i < wk->nnet; i++)
			v_cmpx8(wk->buf + wk->net[i][0] * S,
			    wk->buf + wk->net[i][1] * S, len);
		if (median)
			v_rowmean8(o, wk->buf + (a - 1) / 2 * S, S,
			    a & 1 ? 1 : 2, len);
		else
			v_rowmean8(o, wk->buf + lo * S, S, hi - lo, len);
		if (wt)
			wt->tile(wt->arg, o, len);
	}
	return 0;
}

SPIRT_DISPATCH(static, int, pass_sorted, (float *out, struct work *wk,
    size_t n, size_t lo, size_t hi, int median,
    const struct spirt_agg_watch *wt), (out, wk, n, lo, hi, median, wt))

static void
sortd(double *v, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		double t = v[i];

		for (j = i; j > 0 && v[j - 1] > t; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

static double
mediand(double *v, size_t n)
{
	sortd(v, n);
	return n & 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* NORM: exclude inputs whose L2 norm is more than mad * 1.4826 * MAD from
 * the median norm (threshold at least 1e-6 of the median). */
SPIRT_KERNEL int
select_norm_k(struct spirt_agg_input *in, size_t w, size_t n, double k,
    double *tmp, size_t tile)
{
	size_t i, j0, a = 0;
	double med, mad, thr;

	for (i = 0; i < w; i++) {
		uint32_t bad = 0;
		double s = 0;

		for (j0 = 0; j0 < n; j0 += tile)
			s += v_sumsq(in[i].x + j0, NULL,
			    n - j0 < tile ? n - j0 : tile, &bad);
		in[i].score = sqrt(s);
		if (bad & BADBIT)
			in[i].excluded = SPIRT_AGG_XNONFINITE;
	}
	for (i = 0; i < w; i++)
		if (!in[i].excluded)
			tmp[a++] = in[i].score;
	if (a == 0)
		return SPIRT_ENAN;
	med = mediand(tmp, a);
	for (i = 0, a = 0; i < w; i++)
		if (!in[i].excluded)
			tmp[a++] = fabs(in[i].score - med);
	mad = mediand(tmp, a);
	thr = k * 1.4826 * mad;
	if (thr < 1e-6 * med)
		thr = 1e-6 * med;
	for (i = 0; i < w; i++)
		if (!in[i].excluded && fabs(in[i].score - med) > thr)
			in[i].excluded = SPIRT_AGG_XNORM;
	return 0;
}

SPIRT_DISPATCH(static, int, select_norm, (struct spirt_agg_input *in,
    size_t w, size_t n, double k, double *tmp, size_t tile),
    (in, w, n, k, tmp, tile))

/* KRUM/MKRUM: score each finite input by the sum of squared distances to
 * its a - f - 2 nearest finite neighbours; keep the m lowest. */
SPIRT_KERNEL int
select_krum_k(struct spirt_agg_input *in, size_t w, size_t n,
    const struct spirt_agg_params *p, struct work *wk)
{
	size_t i, k, j0, a = 0, nb, m, T = wk->tile;
	uint32_t *bad = (uint32_t *)wk->c;      /* w words of scratch */
	double *d = wk->d, *row = wk->d + w * w;

	memset(d, 0, w * w * sizeof *d);
	memset(bad, 0, w * sizeof *bad);
	for (j0 = 0; j0 < n; j0 += T) {
		size_t len = n - j0 < T ? n - j0 : T;

		for (i = 0; i < w; i++) {
			(void)v_sumsq(in[i].x + j0, NULL, len, &bad[i]);
			for (k = i + 1; k < w; k++) {
				uint32_t junk = 0;

				d[i * w + k] += v_sumsq(in[i].x + j0,
				    in[k].x + j0, len, &junk);
			}
		}
	}
	for (i = 0; i < w; i++) {
		if (bad[i] & BADBIT)
			in[i].excluded = SPIRT_AGG_XNONFINITE;
		else
			a++;
	}
	if (a == 0)
		return SPIRT_ENAN;
	if (a <= 2 * (size_t)p->f + 2)
		return SPIRT_EDATA;
	nb = a - p->f - 2;
	m = p->rule == SPIRT_AGG_KRUM ? 1 : p->m ? p->m : a - p->f;
	if (m > a)
		return SPIRT_EDATA;
	for (i = 0; i < w; i++) {
		size_t c = 0;

		if (in[i].excluded)
			continue;
		for (k = 0; k < w; k++)
			if (k != i && !in[k].excluded)
				row[c++] = i < k ? d[i * w + k] : d[k * w + i];
		sortd(row, c);
		in[i].score = 0;
		for (k = 0; k < nb; k++)
			in[i].score += row[k];
	}
	/* keep the m best scores; ties go to the canonical order */
	for (i = 0; i < w; i++) {
		size_t better = 0;

		bad[i] = 0;
		if (in[i].excluded)
			continue;
		for (k = 0; k < w; k++)
			if (!in[k].excluded && k != i &&
			    (in[k].score < in[i].score ||
			    (in[k].score == in[i].score && k < i)))
				better++;
		bad[i] = better >= m;
	}
	for (i = 0; i < w; i++)
		if (bad[i])
			in[i].excluded = SPIRT_AGG_XKRUM;
	return 0;
}

SPIRT_DISPATCH(static, int, select_krum, (struct spirt_agg_input *in,
    size_t w, size_t n, const struct spirt_agg_params *p, struct work *wk),
    (in, w, n, p, wk))

/* the (k+1)-th largest of d[0..a), a > 0 (k clipped to a - 1); sorts d */
static double
kth_largest(double *d, size_t a, size_t k)
{
	sortd(d, a);
	return d[a - 1 - (k < a ? k : a - 1)];
}

/*
 * CCLIP and SCCLIP over the finite inputs (the non-finite ones marked
 * already): out starts at p->center (or 0) and moves p->iters times by the
 * mean of the clipped differences.  Two passes per iteration: the
 * distances, then the move, coordinates in tiles; the watcher sees the
 * last move's tiles.  With tau_auto, each iteration's radius is the
 * (f+1)-th largest distance (dist: a doubles of scratch).
 */
static int
run_cclip(float *out, struct spirt_agg_input *in, size_t w, size_t n,
    const struct spirt_agg_params *p, struct work *wk,
    const struct spirt_agg_watch *watch)
{
	const struct spirt_agg_watch *wt = watch && watch->tile ? watch : NULL;
	float *c = wk->c;               /* each active input's factor */
	double *dist = wk->d, *srt = wk->d + w, tau = p->tau;
	size_t a = activate(wk, in, w), i, j, j0, T = wk->tile;
	unsigned it;

	if (a == 0)
		return SPIRT_ENAN;
	if (p->center)
		memcpy(out, p->center, n * sizeof *out);
	else
		memset(out, 0, n * sizeof *out);
	for (it = 0; it < p->iters; it++) {
		for (i = 0; i < a; i++) {
			uint32_t junk = 0;
			double d = 0;

			for (j0 = 0; j0 < n; j0 += T)
				d += v_sumsq(wk->x[i] + j0, out + j0,
				    n - j0 < T ? n - j0 : T, &junk);
			dist[i] = srt[i] = sqrt(d);
		}
		if (p->tau_auto)
			tau = kth_largest(srt, a, p->f);
		for (i = 0; i < a; i++)
			c[i] = dist[i] > tau ? (float)(tau / dist[i]) : 1.0f;
		if (it + 1 == p->iters) {
			size_t k = 0;

			for (i = 0; i < w; i++)
				if (!in[i].excluded)
					in[i].score = c[k++];
			if (watch && watch->start)
				watch->start(watch->arg, in, w);
		}
		for (j0 = 0; j0 < n; j0 += T) {
			size_t len = n - j0 < T ? n - j0 : T;
			float *o = out + j0;

			for (j = 0; j < len; j++) {
				float v = o[j], d = 0;

				for (i = 0; i < a; i++)
					d += c[i] * (wk->x[i][j0 + j] - v);
				o[j] = v + d / (float)a;
			}
			if (wt && it + 1 == p->iters)
				wt->tile(wt->arg, o, len);
		}
	}
	return 0;
}

/* the watcher of a bucketed run: exclusions of buckets to their inputs */
struct bwatch {
	struct spirt_agg_input *in;     /* the caller's inputs */
	size_t w;
	const size_t *fin;              /* bucket k: fin[k*s .. ) */
	size_t nfin, s;
	const struct spirt_agg_watch *outer;
};

static void
bmap(struct bwatch *b, const struct spirt_agg_input *bk, size_t nb)
{
	for (size_t i = 0; i < nb; i++) {
		size_t k = bk[i].id, m;

		for (m = k * b->s; m < (k + 1) * b->s && m < b->nfin; m++) {
			b->in[b->fin[m]].excluded = bk[i].excluded;
			b->in[b->fin[m]].score = bk[i].score;
		}
	}
}

static void
bw_start(void *arg, const struct spirt_agg_input *bk, size_t nb)
{
	struct bwatch *b = arg;

	bmap(b, bk, nb);
	if (b->outer && b->outer->start)
		b->outer->start(b->outer->arg, b->in, b->w);
}

static void
bw_tile(void *arg, const float *out, size_t len)
{
	struct bwatch *b = arg;

	if (b->outer && b->outer->tile)
		b->outer->tile(b->outer->arg, out, len);
}

/* Bucketing in front of p's rule (see agg.h). */
static int
run_bucketed(float *out, struct spirt_agg_input *in, size_t w, size_t n,
    const struct spirt_agg_params *p, size_t *used,
    const struct spirt_agg_watch *watch)
{
	struct spirt_agg_params q = *p;
	struct spirt_agg_input *bk;
	struct spirt_agg_watch bw;
	struct bwatch b;
	struct spirt_sm64 r;
	size_t *fin, a = 0, nb, i, k, m, s = p->bucket;
	float *mean;
	int rc;

	for (i = 0; i < w; i++) {
		in[i].excluded = SPIRT_AGG_XNONE;
		in[i].score = 0;
	}
	spirt_agg_sort(in, w, n);
	markbad(in, w, n);
	if ((fin = malloc(w * sizeof *fin)) == NULL)
		return ENOMEM;
	for (i = 0; i < w; i++)
		if (!in[i].excluded)
			fin[a++] = i;
	if (a == 0) {
		free(fin);
		return SPIRT_ENAN;
	}
	spirt_sm64_seed(&r, spirt_seed_mix(p->seed, p->step, 0));
	for (i = a - 1; i > 0; i--) {
		size_t j = (size_t)spirt_sm64_below(&r, i + 1), t = fin[i];

		fin[i] = fin[j];
		fin[j] = t;
	}
	nb = (a + s - 1) / s;
	bk = calloc(nb, sizeof *bk);
	mean = malloc(nb * n * sizeof *mean + 1);
	if (bk == NULL || mean == NULL) {
		rc = ENOMEM;
		goto out;
	}
	for (k = 0; k < nb; k++) {
		float *o = mean + k * n;
		size_t e = (k + 1) * s < a ? (k + 1) * s : a;

		memcpy(o, in[fin[k * s]].x, n * sizeof *o);
		bk[k].samples = in[fin[k * s]].samples;
		for (m = k * s + 1; m < e; m++) {
			for (i = 0; i < n; i++)
				o[i] += in[fin[m]].x[i];
			bk[k].samples += in[fin[m]].samples;
		}
		if (e - k * s > 1)
			for (i = 0; i < n; i++)
				o[i] /= (float)(e - k * s);
		bk[k].x = o;
		bk[k].origin = (uint32_t)k;
		bk[k].id = k;
	}
	b = (struct bwatch){ in, w, fin, a, s, watch };
	bw = (struct spirt_agg_watch){ bw_start, bw_tile, &b };
	q.bucket = 0;
	rc = spirt_agg_run_watched(out, bk, nb, n, &q, NULL, &bw);
	if (rc == 0) {
		bmap(&b, bk, nb);
		if (used)
			for (*used = 0, i = 0; i < w; i++)
				*used += !in[i].excluded;
	}
out:
	free(mean);
	free(bk);
	free(fin);
	return rc;
}

int
spirt_agg_run(float *out, struct spirt_agg_input *in, size_t w, size_t n,
    const struct spirt_agg_params *p, size_t *used)
{
	return spirt_agg_run_watched(out, in, w, n, p, used, NULL);
}

int
spirt_agg_run_watched(float *out, struct spirt_agg_input *in, size_t w,
    size_t n, const struct spirt_agg_params *p, size_t *used,
    const struct spirt_agg_watch *watch)
{
	struct work wk;
	const struct spirt_agg_watch *wt = watch && watch->tile ? watch : NULL;
	size_t i, a, lo = 0, hi = 0, sz;
	int rc = 0, sorted, again, bad;
	char *mem;

	if (used)
		*used = 0;
	if ((rc = spirt_agg_check(p, w)) != 0)
		return rc;
	if (p->bucket > 1)
		return run_bucketed(out, in, w, n, p, used, watch);
	for (i = 0; i < w; i++) {
		in[i].excluded = SPIRT_AGG_XNONE;
		in[i].score = 0;
	}
	spirt_agg_sort(in, w, n);

	memset(&wk, 0, sizeof wk);
	sorted = p->rule == SPIRT_AGG_TRIM || p->rule == SPIRT_AGG_MEDIAN;
	wk.tile = tilesize(w, sorted);
	/* rows a multiple of 4 KiB apart would share L1 sets */
	wk.stride = wk.tile + 16;
	/* one allocation: x[w] | c[w] | net | d[w*w + w] | buf[w*stride] */
	sz = w * sizeof *wk.x + w * sizeof *wk.c +
	    network(NULL, w) * sizeof *wk.net + (w * w + w) * sizeof(double);
	sz = (sz + 63) & ~(size_t)63;
	if (sorted)
		sz += w * wk.stride * sizeof(float);
	if ((mem = malloc(sz)) == NULL)
		return ENOMEM;
	wk.x = (const float **)(void *)mem;
	wk.d = (double *)(void *)(mem + w * sizeof *wk.x);
	wk.c = (float *)(void *)(wk.d + w * w + w);
	wk.net = (uint16_t (*)[2])(void *)(wk.c + w);
	if (sorted)
		wk.buf = (float *)(void *)(mem + (sz - w * wk.stride *
		    sizeof(float)));

	if (p->rule == SPIRT_AGG_SCCLIP && p->center == NULL) {
		rc = SPIRT_EINVAL;      /* self-centred: the centre is needed */
		goto out;
	}
	if (p->rule == SPIRT_AGG_CCLIP || p->rule == SPIRT_AGG_SCCLIP) {
		markbad(in, w, n);
		if ((rc = run_cclip(out, in, w, n, p, &wk, watch)) == 0 && used)
			*used = wk.na;
		goto out;
	}
	if (p->rule == SPIRT_AGG_NORM) {
		rc = select_norm(in, w, n, p->mad, wk.d, wk.tile);
	} else if (p->rule == SPIRT_AGG_KRUM || p->rule == SPIRT_AGG_MKRUM) {
		rc = select_krum(in, w, n, p, &wk);
	}
	if (rc != 0)
		goto out;

	for (again = 0; again < 2; again++) {
		if ((a = activate(&wk, in, w)) == 0) {
			rc = SPIRT_ENAN;
			goto out;
		}
		if (p->rule == SPIRT_AGG_WMEAN) {
			double s = 0;
			size_t k = 0;

			for (i = 0; i < w; i++)
				if (!in[i].excluded)
					s += (double)in[i].samples;
			if (s <= 0) {
				rc = SPIRT_EDATA;
				goto out;
			}
			for (i = 0; i < w; i++)
				if (!in[i].excluded)
					wk.c[k++] = (float)((double)in[i].samples
					    / s);
		} else {
			wk.c = NULL;
		}
		if (sorted) {
			size_t k = trimk(p->trim, a);

			if (p->rule == SPIRT_AGG_TRIM && !trimok(p->trim, a)) {
				rc = SPIRT_EDATA;
				goto out;
			}
			lo = k;
			hi = a - k;
			wk.nnet = network(wk.net, a);
		}
		if (watch && watch->start)
			watch->start(watch->arg, in, w);
		bad = sorted ? pass_sorted(out, &wk, n, lo, hi,
		    p->rule == SPIRT_AGG_MEDIAN, wt) : pass_mean(out, &wk, n, wt);
		if (!bad)
			break;
		markbad(in, w, n);
	}
	if (again == 2) {
		rc = SPIRT_EBUG;
		goto out;
	}
	if (used)
		*used = a;
out:
	free(mem);
	return rc;
}
