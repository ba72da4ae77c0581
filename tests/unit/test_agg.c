/* test_agg.c - aggregation rules against naive references in double */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "check.h"
#include "isa.h"
#include "tensor.h"

static uint64_t rng = 88172645463325252ull;
#define urand() check_urand(&rng)

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* naive reference: per coordinate, qsort the w values in double */
static void
ref_sorted(double *out, float *const *x, size_t w, size_t n, size_t lo,
    size_t hi, int median)
{
	double *v = malloc(w * sizeof *v);

	for (size_t j = 0; j < n; j++) {
		for (size_t i = 0; i < w; i++)
			v[i] = x[i][j];
		qsort(v, w, sizeof *v, cmpd);
		if (median) {
			out[j] = w & 1 ? v[w / 2] : (v[w / 2 - 1] + v[w / 2]) / 2;
		} else {
			double s = 0;

			for (size_t i = lo; i < hi; i++)
				s += v[i];
			out[j] = s / (double)(hi - lo);
		}
	}
	free(v);
}

static void
ref_mean(double *out, float *const *x, const double *wt, size_t w,
    size_t n)
{
	double sw = 0;

	for (size_t i = 0; i < w; i++)
		sw += wt ? wt[i] : 1;
	for (size_t j = 0; j < n; j++) {
		double s = 0;

		for (size_t i = 0; i < w; i++)
			s += (wt ? wt[i] : 1) * x[i][j];
		out[j] = s / sw;
	}
}

static int
close_to(const char *what, const float *got, const double *want, size_t n)
{
	float *w = malloc(n * sizeof *w);
	int ok;

	for (size_t j = 0; j < n; j++)
		w[j] = (float)want[j];
	ok = check_close(what, got, w, n, 2e-5, 2e-6);
	free(w);
	return ok;
}

static float **
mkinputs(size_t w, size_t n)
{
	float **x = malloc(w * sizeof *x);

	for (size_t i = 0; i < w; i++) {
		x[i] = malloc((n ? n : 1) * sizeof **x);
		for (size_t j = 0; j < n; j++)
			x[i][j] = (float)(urand() * 2 - 1);
	}
	return x;
}

static void
freeinputs(float **x, size_t w)
{
	for (size_t i = 0; i < w; i++)
		free(x[i]);
	free(x);
}

static int
run(float *out, float *const *x, size_t w, size_t n,
    const struct spirt_agg_params *p, struct spirt_agg_input *in,
    const size_t *perm, size_t *used)
{
	for (size_t i = 0; i < w; i++) {
		size_t k = perm ? perm[i] : i;

		in[i].x = x[k];
		in[i].origin = (uint32_t)k;
		in[i].samples = 10 + k;
		in[i].id = k;
	}
	return spirt_agg_run(out, in, w, n, p, used);
}

/* every rule against its reference, for many w and n crossing tiles */
static void
against_reference(void)
{
	static const size_t ns[] = { 1, 3, 17, 1000, 10007 };
	struct spirt_agg_input in[40];
	struct spirt_agg_params p;

	for (size_t w = 1; w <= 40; w += (w < 18 ? 1 : 11)) {
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
			size_t n = ns[ni], used;
			float **x = mkinputs(w, n);
			float *out = malloc(n * sizeof *out);
			double *ref = malloc(n * sizeof *ref);
			double wt[40];
			char what[64];

			spirt_agg_defaults(&p);
			CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
			CHECK(used == w);
			ref_mean(ref, x, NULL, w, n);
			snprintf(what, sizeof what, "mean w=%zu n=%zu", w, n);
			close_to(what, out, ref, n);
			/* bit for bit the plain float loop in canonical order
			 * (the vector body and the scalar tail alike) */
			for (size_t j = 0; j < n; j++) {
				float s = in[0].x[j];

				for (size_t i = 1; i < w; i++)
					s += in[i].x[j];
				if (w > 1)
					s /= (float)w;
				if (memcmp(&s, &out[j], sizeof s) != 0) {
					CHECK(!"mean equals the float loop");
					break;
				}
			}

			p.rule = SPIRT_AGG_WMEAN;
			CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
			for (size_t i = 0; i < w; i++)
				wt[i] = 10.0 + (double)i;
			ref_mean(ref, x, wt, w, n);
			snprintf(what, sizeof what, "wmean w=%zu n=%zu", w, n);
			close_to(what, out, ref, n);

			p.rule = SPIRT_AGG_MEDIAN;
			CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
			ref_sorted(ref, x, w, n, 0, 0, 1);
			snprintf(what, sizeof what, "median w=%zu n=%zu", w, n);
			close_to(what, out, ref, n);

			p.rule = SPIRT_AGG_TRIM;
			for (double tr = 0; tr < 0.5; tr += 0.15) {
				size_t k = (size_t)floor(tr * (double)w + 1e-9);

				p.trim = tr;
				if ((tr > 0 && k == 0) || 2 * k >= w) {
					CHECK_EQ_RC(spirt_agg_check(&p, w),
					    SPIRT_EINVAL);
					continue;
				}
				CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
				ref_sorted(ref, x, w, n, k, w - k, 0);
				snprintf(what, sizeof what,
				    "trim %.2f w=%zu n=%zu", tr, w, n);
				close_to(what, out, ref, n);
			}
			free(out);
			free(ref);
			freeinputs(x, w);
		}
	}
}

/* permuting the inputs gives a bit-identical result, for every rule */
static void
order_independent(void)
{
	size_t w = 9, n = 20011, perm[9], used;
	struct spirt_agg_input in[9];
	struct spirt_agg_params p;
	float **x = mkinputs(w, n);
	float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);

	for (int rule = SPIRT_AGG_MEAN; rule <= SPIRT_AGG_MKRUM; rule++) {
		spirt_agg_defaults(&p);
		p.rule = rule;
		p.trim = 0.25;
		p.f = 2;
		CHECK_RC(run(a, x, w, n, &p, in, NULL, &used));
		for (int trial = 0; trial < 5; trial++) {
			for (size_t i = 0; i < w; i++)
				perm[i] = i;
			for (size_t i = w - 1; i > 0; i--) {
				size_t k = (size_t)(urand() * (double)(i + 1));
				size_t t = perm[i];

				perm[i] = perm[k];
				perm[k] = t;
			}
			CHECK_RC(run(b, x, w, n, &p, in, perm, &used));
			if (memcmp(a, b, n * sizeof *a) != 0) {
				fprintf(stderr, "rule %s: order changes the "
				    "result\n", spirt_agg_rule_name(rule));
				check_failed = 1;
			}
			/* canonical order: by origin */
			for (size_t i = 0; i < w; i++)
				CHECK(in[i].origin == i && in[i].id == i);
		}
	}
	/* same origin twice: ties broken by content */
	{
		struct spirt_agg_input t[3];

		t[0].x = x[2]; t[1].x = x[1]; t[2].x = x[0];
		for (int i = 0; i < 3; i++) {
			t[i].origin = SPIRT_NOORIGIN;
			t[i].samples = 0;
			t[i].id = (size_t)i;
		}
		spirt_agg_sort(t, 3, n);
		CHECK(memcmp(t[0].x, t[1].x, n * sizeof(float)) < 0);
		CHECK(memcmp(t[1].x, t[2].x, n * sizeof(float)) < 0);
	}
	free(a);
	free(b);
	freeinputs(x, w);
}

/* NaN/Inf inputs are excluded: same result as without them */
static void
nonfinite(void)
{
	size_t w = 6, n = 30000, used;
	struct spirt_agg_input in[6];
	struct spirt_agg_params p;
	float **x = mkinputs(w, n);
	float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);

	for (int rule = SPIRT_AGG_MEAN; rule <= SPIRT_AGG_MKRUM; rule++) {
		spirt_agg_defaults(&p);
		p.rule = rule;
		p.trim = 0.25;
		p.f = 0;
		p.mad = 1e9;    /* norm: exclude nothing else */
		/* reference: the 4 clean inputs alone (origins 1, 2, 4, 5) */
		{
			float *clean[4] = { x[1], x[2], x[4], x[5] };
			struct spirt_agg_input ci[4];

			for (size_t i = 0; i < 4; i++) {
				ci[i].x = clean[i];
				ci[i].origin = (uint32_t)(i < 2 ? i + 1 : i + 2);
				ci[i].samples = 10 + ci[i].origin;
				ci[i].id = i;
			}
			CHECK_RC(spirt_agg_run(b, ci, 4, n, &p, &used));
		}
		x[0][n - 3] = NAN;
		x[3][12345] = -INFINITY;
		CHECK_RC(run(a, x, w, n, &p, in, NULL, &used));
		CHECK(used == 4 || rule == SPIRT_AGG_KRUM ||
		    rule == SPIRT_AGG_MKRUM);
		CHECK(in[0].excluded == SPIRT_AGG_XNONFINITE);
		CHECK(in[3].excluded == SPIRT_AGG_XNONFINITE);
		CHECK(spirt_count_nonfinite_f32(a, n) == 0);
		if (memcmp(a, b, n * sizeof *a) != 0) {
			fprintf(stderr, "rule %s: NaN input changes result\n",
			    spirt_agg_rule_name(rule));
			check_failed = 1;
		}
		x[0][n - 3] = 0.5f;
		x[3][12345] = 0.25f;
	}
	/* every input bad */
	spirt_agg_defaults(&p);
	for (size_t i = 0; i < w; i++)
		x[i][7] = NAN;
	CHECK_EQ_RC(run(a, x, w, n, &p, in, NULL, &used), SPIRT_ENAN);
	/* too few left for the trim */
	p.rule = SPIRT_AGG_TRIM;
	p.trim = 0.34;
	for (size_t i = 0; i < w; i++)
		x[i][7] = i < 4 ? NAN : 1.0f;
	CHECK_EQ_RC(run(a, x, w, n, &p, in, NULL, &used), SPIRT_EDATA);
	free(a);
	free(b);
	freeinputs(x, w);
}

static void
params(void)
{
	struct spirt_agg_params p;

	spirt_agg_defaults(&p);
	CHECK(p.rule == SPIRT_AGG_MEAN);
	CHECK_EQ_RC(spirt_agg_check(&p, 0), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_agg_check(&p, SPIRT_AGG_MAXW + 1), SPIRT_EINVAL);
	CHECK_RC(spirt_agg_check(&p, SPIRT_AGG_MAXW));
	p.rule = SPIRT_AGG_TRIM;
	p.trim = 0.25;
	CHECK_RC(spirt_agg_check(&p, 4));       /* drops 1 + 1 of 4 */
	CHECK_EQ_RC(spirt_agg_check(&p, 2), SPIRT_EINVAL) ;
	p.trim = 0.5;
	CHECK_EQ_RC(spirt_agg_check(&p, 100), SPIRT_EINVAL);
	p.trim = -0.1;
	CHECK_EQ_RC(spirt_agg_check(&p, 100), SPIRT_EINVAL);
	p.rule = SPIRT_AGG_KRUM;
	p.f = 1;
	CHECK_EQ_RC(spirt_agg_check(&p, 4), SPIRT_EINVAL);
	CHECK_RC(spirt_agg_check(&p, 5));
	p.rule = SPIRT_AGG_MKRUM;
	p.m = 4;
	CHECK_RC(spirt_agg_check(&p, 5));
	p.m = 5;
	CHECK_EQ_RC(spirt_agg_check(&p, 5), SPIRT_EINVAL);
	p.rule = 99;
	CHECK_EQ_RC(spirt_agg_check(&p, 5), SPIRT_EINVAL);
	for (int r = SPIRT_AGG_MEAN; r <= SPIRT_AGG_MKRUM; r++)
		CHECK(spirt_agg_rule_parse(spirt_agg_rule_name(r)) == r);
	CHECK(spirt_agg_rule_parse("bogus") == 0);
	CHECK(spirt_agg_rule_name(0) == NULL);
}

/* Byzantine inputs: Krum, multi-Krum and the norm rule drop them */
static void
byzantine(void)
{
	size_t w = 7, n = 5000, used, i, j;
	struct spirt_agg_input in[7];
	struct spirt_agg_params p;
	float **x = mkinputs(w, n);
	float *out = malloc(n * sizeof *out);
	double *ref = malloc(n * sizeof *ref);

	/* honest: 1 + small noise; origins 5 and 6 attack */
	for (i = 0; i < w; i++)
		for (j = 0; j < n; j++)
			x[i][j] = 1.0f + 0.01f * x[i][j];
	for (j = 0; j < n; j++) {
		x[5][j] = -x[5][j] * 20;        /* scaled sign flip */
		x[6][j] += (float)(urand() * 10);       /* large noise */
	}
	spirt_agg_defaults(&p);
	p.rule = SPIRT_AGG_KRUM;
	p.f = 2;
	CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
	CHECK(used == 1);
	CHECK(in[5].excluded == SPIRT_AGG_XKRUM);
	CHECK(in[6].excluded == SPIRT_AGG_XKRUM);
	for (i = 0; i < w; i++)
		if (!in[i].excluded)
			CHECK(memcmp(out, x[i], n * sizeof *out) == 0);

	/* naive Krum score of input 0 */
	{
		double d[7], s = 0;
		size_t c = 0;

		for (i = 1; i < w; i++) {
			d[c] = 0;
			for (j = 0; j < n; j++)
				d[c] += ((double)x[0][j] - x[i][j]) *
				    ((double)x[0][j] - x[i][j]);
			c++;
		}
		qsort(d, c, sizeof *d, cmpd);
		for (i = 0; i < w - p.f - 2; i++)
			s += d[i];
		CHECK(fabs(in[0].score - s) <= 1e-4 * s);
	}

	p.rule = SPIRT_AGG_MKRUM;
	p.m = 0;                /* w - f = 5 */
	CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
	CHECK(used == 5);
	CHECK(in[5].excluded == SPIRT_AGG_XKRUM);
	CHECK(in[6].excluded == SPIRT_AGG_XKRUM);
	ref_mean(ref, x, NULL, 5, n);
	close_to("mkrum", out, ref, n);

	p.rule = SPIRT_AGG_NORM;
	CHECK_RC(run(out, x, w, n, &p, in, NULL, &used));
	CHECK(used == 5);
	CHECK(in[5].excluded == SPIRT_AGG_XNORM);
	CHECK(in[6].excluded == SPIRT_AGG_XNORM);
	for (i = 0; i < 5; i++)
		CHECK(in[i].excluded == 0);
	close_to("norm", out, ref, n);

	/* weighted mean needs sample counts */
	p.rule = SPIRT_AGG_WMEAN;
	for (i = 0; i < w; i++) {
		in[i].x = x[i];
		in[i].origin = (uint32_t)i;
		in[i].samples = 0;
	}
	CHECK_EQ_RC(spirt_agg_run(out, in, w, n, &p, &used), SPIRT_EDATA);
	free(out);
	free(ref);
	freeinputs(x, w);
}

/* a watcher that collects the tiles of the last attempt, in order */
struct seen {
	float *got;
	size_t n, at, starts, bad;
};

static void
seen_start(void *arg, const struct spirt_agg_input *in, size_t w)
{
	struct seen *s = arg;

	(void)in;
	(void)w;
	s->starts++;
	s->at = 0;
}

static void
seen_tile(void *arg, const float *out, size_t len)
{
	struct seen *s = arg;

	if (s->at + len > s->n) {
		s->bad = 1;
		return;
	}
	memcpy(s->got + s->at, out, len * sizeof *out);
	s->at += len;
}

static void
watched(void)
{
	size_t w = 5, n = 70001, used;
	float **x = mkinputs(w, n);
	float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	struct seen sn = { b, n, 0, 0, 0 };
	struct spirt_agg_watch wt = { seen_start, seen_tile, &sn };
	struct spirt_agg_input in[5];
	struct spirt_agg_params p;

	for (int rule = SPIRT_AGG_MEAN; rule <= SPIRT_AGG_MEDIAN; rule++) {
		for (int nan = 0; nan < 2; nan++) {
			spirt_agg_defaults(&p);
			p.rule = rule;
			p.trim = 0.25;
			for (size_t i = 0; i < w; i++) {
				in[i].x = x[i];
				in[i].origin = (uint32_t)i;
				in[i].samples = 10 + i;
				in[i].id = i;
			}
			/* a NaN near the end: the first pass is given up
			 * late and started over without that input */
			x[2][n - 5] = nan ? NAN : 0.5f;
			sn.starts = sn.at = sn.bad = 0;
			memset(b, 0, n * sizeof *b);
			CHECK_RC(spirt_agg_run_watched(a, in, w, n, &p, &used,
			    &wt));
			CHECK(sn.starts == (size_t)(nan ? 2 : 1));
			CHECK(!sn.bad && sn.at == n);
			CHECK(memcmp(a, b, n * sizeof *a) == 0);
		}
	}
	free(a);
	free(b);
	freeinputs(x, w);
}

/*
 * Every x86-64 level the CPU has gives the bits of the baseline, for every
 * rule: peers on different CPUs must end with the same model.  Values of
 * mixed magnitudes, so that any reassociation or fused multiply-add would
 * round differently; n crosses tiles, 16- and 8-lane bodies and tails.
 */
static void
isa_levels(void)
{
	static const struct {
		int rule;
		double trim;
		unsigned f, m;
		size_t w;
		int nan;
	} cs[] = {
		{ SPIRT_AGG_MEAN, 0, 0, 0, 9, 0 },
		{ SPIRT_AGG_MEAN, 0, 0, 0, 9, 1 },
		{ SPIRT_AGG_WMEAN, 0, 0, 0, 9, 0 },
		{ SPIRT_AGG_TRIM, 0.25, 0, 0, 8, 0 },
		{ SPIRT_AGG_TRIM, 0.2, 0, 0, 11, 1 },
		{ SPIRT_AGG_MEDIAN, 0, 0, 0, 8, 0 },
		{ SPIRT_AGG_MEDIAN, 0, 0, 0, 9, 0 },
		{ SPIRT_AGG_NORM, 0, 0, 0, 9, 0 },
		{ SPIRT_AGG_KRUM, 0, 2, 0, 9, 0 },
		{ SPIRT_AGG_MKRUM, 0, 1, 0, 9, 1 },
	};
	size_t n = 10007, W = 11, used, used0, i, c;
	struct spirt_agg_input in[11], in0[11];
	struct spirt_agg_params p;
	float **x = mkinputs(W, n);
	float *out = malloc(n * sizeof *out), *out0 = malloc(n * sizeof *out);
	int best = spirt_isa_best(), l;

	/* the level API */
	CHECK(spirt_isa() == best);
	CHECK_EQ_RC(spirt_isa_set(SPIRT_ISA_NLEVELS), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_isa_set(-1), SPIRT_EINVAL);
	if (best < SPIRT_ISA_AVX512)
		CHECK_EQ_RC(spirt_isa_set(best + 1), SPIRT_ENOTSUP);
	CHECK(spirt_isa() == best);
	for (l = 0; l < SPIRT_ISA_NLEVELS; l++)
		CHECK(spirt_isa_parse(spirt_isa_name(l)) == l);
	CHECK(spirt_isa_parse("sse9") == -1);
	CHECK(spirt_isa_name(SPIRT_ISA_NLEVELS) == NULL);
	for (l = best + 1; l < SPIRT_ISA_NLEVELS; l++)
		fprintf(stderr, "test_agg: this CPU lacks %s: that level is "
		    "not compared\n", spirt_isa_name(l));

	for (i = 0; i < W; i++)
		for (size_t j = 0; j < n; j++)
			x[i][j] = ldexpf(x[i][j], (int)(urand() * 24) - 12);
	for (c = 0; c < sizeof cs / sizeof *cs; c++) {
		spirt_agg_defaults(&p);
		p.rule = cs[c].rule;
		p.trim = cs[c].trim;
		p.f = cs[c].f;
		p.m = cs[c].m;
		x[3][n / 2] = cs[c].nan ? NAN : 0.5f;
		CHECK_RC(spirt_isa_set(SPIRT_ISA_BASE));
		CHECK(spirt_isa() == SPIRT_ISA_BASE);
		CHECK_RC(run(out0, x, cs[c].w, n, &p, in0, NULL, &used0));
		CHECK(used0 > 0);
		for (l = SPIRT_ISA_BASE + 1; l <= best; l++) {
			CHECK_RC(spirt_isa_set(l));
			memset(out, 0, n * sizeof *out);
			CHECK_RC(run(out, x, cs[c].w, n, &p, in, NULL, &used));
			CHECK(used == used0);
			if (memcmp(out, out0, n * sizeof *out) != 0) {
				fprintf(stderr, "test_agg: %s w=%zu nan=%d: "
				    "%s differs from base\n",
				    spirt_agg_rule_name(p.rule), cs[c].w,
				    cs[c].nan, spirt_isa_name(l));
				check_failed = 1;
			}
			for (i = 0; i < cs[c].w; i++) {
				CHECK(in[i].excluded == in0[i].excluded);
				CHECK(memcmp(&in[i].score, &in0[i].score,
				    sizeof in[i].score) == 0);
			}
		}
	}
	CHECK_RC(spirt_isa_set(best));
	free(out);
	free(out0);
	freeinputs(x, W);
}

int
main(void)
{
	watched();
	params();
	against_reference();
	order_independent();
	nonfinite();
	byzantine();
	isa_levels();
	CHECK_DONE();
}
