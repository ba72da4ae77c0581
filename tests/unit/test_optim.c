/* test_optim.c - optimisers and schedules against references in double */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "isa.h"
#include "optim.h"

static uint64_t rng = 2463534242ull;
#define urand() check_urand(&rng)

/* one step written out in double; s holds the state rows */
static void
ref_step(double *th, double *s, const float *g, size_t n,
    const struct spirt_optim *o, uint64_t t, uint64_t k)
{
	double lr = o->lr, x;

	if (o->schedule == SPIRT_SCHED_STEP)
		lr = o->lr * pow(o->gamma, floor((double)t / (double)o->every));
	if (o->schedule == SPIRT_SCHED_COSINE) {
		x = (double)(t < o->total ? t : o->total) / (double)o->total;
		lr = o->lr_min + (o->lr - o->lr_min) * 0.5 *
		    (1 + cos(3.14159265358979323846 * x));
	}
	for (size_t j = 0; j < n; j++) {
		double gg = g[j], m, v;

		if (o->kind != SPIRT_OPT_ADAMW)
			gg += o->wd * th[j];
		switch (o->kind) {
		case SPIRT_OPT_SGD:
			th[j] -= lr * gg;
			break;
		case SPIRT_OPT_MOMENTUM:
			s[j] = o->momentum * s[j] + gg;
			th[j] -= lr * (o->nesterov ? gg + o->momentum * s[j] :
			    s[j]);
			break;
		default:
			m = s[j] = o->beta1 * s[j] + (1 - o->beta1) * gg;
			v = s[n + j] = o->beta2 * s[n + j] +
			    (1 - o->beta2) * gg * gg;
			m /= 1 - pow(o->beta1, (double)(k + 1));
			v /= 1 - pow(o->beta2, (double)(k + 1));
			th[j] -= lr * m / (sqrt(v) + o->eps) +
			    (o->kind == SPIRT_OPT_ADAMW ? lr * o->wd * th[j] :
			    0);
			break;
		}
	}
}

static void
against_reference(int kind, int nesterov, int sched, double wd)
{
	size_t n = 1003, ns, steps = 6;
	struct spirt_optim o;
	float *th = malloc(n * sizeof *th), *th1 = malloc(n * sizeof *th1);
	float *st = calloc(2 * n, sizeof *st), *st1 = malloc(2 * n * sizeof *st1);
	float *g = malloc(n * sizeof *g), *got = malloc(n * sizeof *got);
	double *rth = malloc(n * sizeof *rth), *rs = calloc(2 * n, sizeof *rs);
	char what[80];

	spirt_optim_defaults(&o);
	o.kind = kind;
	o.nesterov = nesterov;
	o.schedule = sched;
	o.wd = wd;
	o.lr = 0.05;
	o.every = 2;
	o.gamma = 0.5;
	o.total = 4;
	o.lr_min = 0.001;
	CHECK_RC(spirt_optim_check(&o));
	ns = spirt_optim_nstate(kind);
	for (size_t j = 0; j < n; j++)
		rth[j] = th[j] = (float)(urand() * 2 - 1);
	for (uint64_t k = 0; k < steps; k++) {
		uint64_t t = 10 + k;

		for (size_t j = 0; j < n; j++)
			g[j] = (float)(urand() * 2 - 1);
		/* first step from no state at all */
		CHECK_RC(spirt_optim_step(th1, st1, th, k ? st : NULL, g, n,
		    &o, t, k));
		ref_step(rth, rs, g, n, &o, t, k);
		memcpy(th, th1, n * sizeof *th);
		memcpy(st, st1, ns * n * sizeof *st);
	}
	for (size_t j = 0; j < n; j++)
		got[j] = (float)rth[j];
	snprintf(what, sizeof what, "%s%s %s wd=%g",
	    spirt_optim_name(kind), nesterov ? "+nesterov" : "",
	    spirt_optim_schedule_name(sched), wd);
	check_close(what, th, got, n, 1e-4, 1e-5);
	/* in place gives the same bits as out of place */
	for (size_t j = 0; j < n; j++)
		g[j] = (float)(urand() - 0.5);
	CHECK_RC(spirt_optim_step(th1, st1, th, st, g, n, &o, 20, steps));
	CHECK_RC(spirt_optim_step(th, st, th, st, g, n, &o, 20, steps));
	CHECK(memcmp(th, th1, n * sizeof *th) == 0);
	CHECK(memcmp(st, st1, ns * n * sizeof *st) == 0);
	/* in uneven ranges (vector bodies and scalar tails cut anywhere)
	 * gives the same bits as the whole */
	{
		float *rt = malloc(n * sizeof *rt), *rst = malloc(2 * n *
		    sizeof *rst);
		static const size_t cut[] = { 0, 5, 16, 17, 500, 999, 1003 };

		for (size_t c = 0; c + 1 < sizeof cut / sizeof *cut; c++)
			CHECK_RC(spirt_optim_step_range(rt, rst, th, st, g, n,
			    cut[c], cut[c + 1] - cut[c], &o, 21, steps + 1));
		CHECK_RC(spirt_optim_step(th1, st1, th, st, g, n, &o, 21,
		    steps + 1));
		CHECK(memcmp(rt, th1, n * sizeof *th) == 0);
		CHECK(memcmp(rst, st1, ns * n * sizeof *st) == 0);
		CHECK_EQ_RC(spirt_optim_step_range(rt, rst, th, st, g, n,
		    1000, 4, &o, 21, 1), SPIRT_EINVAL);
		free(rt);
		free(rst);
	}
	free(th); free(th1); free(st); free(st1); free(g); free(got);
	free(rth); free(rs);
}

static void
nonfinite(void)
{
	struct spirt_optim o;
	float th[9], out[9], st[18], g[9];

	for (int kind = SPIRT_OPT_SGD; kind <= SPIRT_OPT_ADAMW; kind++) {
		spirt_optim_defaults(&o);
		o.kind = kind;
		for (int j = 0; j < 9; j++) {
			th[j] = 1;
			g[j] = 0.5f;
		}
		g[8] = NAN;     /* in the scalar tail */
		CHECK_EQ_RC(spirt_optim_step(out, st, th, NULL, g, 9, &o, 0,
		    0), SPIRT_ENAN);
		g[8] = 0;
		g[1] = INFINITY;        /* in the vector part */
		CHECK_EQ_RC(spirt_optim_step(out, st, th, NULL, g, 9, &o, 0,
		    0), SPIRT_ENAN);
		g[1] = 0;
		CHECK_RC(spirt_optim_step(out, st, th, NULL, g, 9, &o, 0, 0));
		/* an overflowing step is caught too */
		o.lr = 1e30;
		g[2] = 1e30f;
		if (kind == SPIRT_OPT_SGD || kind == SPIRT_OPT_MOMENTUM)
			CHECK_EQ_RC(spirt_optim_step(out, st, th, NULL, g, 9,
			    &o, 0, 0), SPIRT_ENAN);
	}
}

static void
params(void)
{
	struct spirt_optim o;

	spirt_optim_defaults(&o);
	CHECK_RC(spirt_optim_check(&o));
	CHECK(spirt_optim_nstate(SPIRT_OPT_SGD) == 0);
	CHECK(spirt_optim_nstate(SPIRT_OPT_MOMENTUM) == 1);
	CHECK(spirt_optim_nstate(SPIRT_OPT_ADAM) == 2);
	CHECK(spirt_optim_parse("adam") == SPIRT_OPT_ADAM);
	CHECK(spirt_optim_parse("rmsprop") == 0);
	CHECK(spirt_optim_schedule_parse("cosine") == SPIRT_SCHED_COSINE);
	CHECK(spirt_optim_schedule_parse("linear") == 0);
	o.nesterov = 1;         /* needs momentum */
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);
	o.kind = SPIRT_OPT_MOMENTUM;
	CHECK_RC(spirt_optim_check(&o));
	o.momentum = 1;
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);
	spirt_optim_defaults(&o);
	o.beta2 = 1;
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);
	spirt_optim_defaults(&o);
	o.eps = 0;
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);
	spirt_optim_defaults(&o);
	o.lr = -1;
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);
	spirt_optim_defaults(&o);
	o.gamma = 0;
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);
	spirt_optim_defaults(&o);
	o.schedule = 9;
	CHECK_EQ_RC(spirt_optim_check(&o), SPIRT_EINVAL);

	/* schedules */
	spirt_optim_defaults(&o);
	o.lr = 1;
	CHECK(spirt_optim_lr(&o, 12345) == 1);
	o.schedule = SPIRT_SCHED_STEP;
	o.every = 10;
	o.gamma = 0.5;
	CHECK(spirt_optim_lr(&o, 9) == 1);
	CHECK(spirt_optim_lr(&o, 10) == 0.5);
	CHECK(spirt_optim_lr(&o, 25) == 0.25);
	o.schedule = SPIRT_SCHED_COSINE;
	o.total = 100;
	o.lr_min = 0.1;
	CHECK(spirt_optim_lr(&o, 0) == 1);
	CHECK(fabs(spirt_optim_lr(&o, 50) - 0.55) < 1e-12);
	CHECK(fabs(spirt_optim_lr(&o, 100) - 0.1) < 1e-12);
	CHECK(fabs(spirt_optim_lr(&o, 1000) - 0.1) < 1e-12);
}

/*
 * Every x86-64 level the CPU has gives the bits of the baseline, for every
 * optimiser, from a fresh state and from a used one: peers on different
 * CPUs must end with the same model.  Mixed magnitudes, so that a fused
 * multiply-add would round differently; n crosses vector bodies and tails.
 */
static void
isa_levels(void)
{
	static const struct {
		int kind, nesterov;
		double wd;
	} cs[] = {
		{ SPIRT_OPT_SGD, 0, 0.01 },
		{ SPIRT_OPT_MOMENTUM, 0, 0.01 },
		{ SPIRT_OPT_MOMENTUM, 1, 0.01 },
		{ SPIRT_OPT_ADAM, 0, 0.01 },
		{ SPIRT_OPT_ADAMW, 0, 0.1 },
	};
	size_t n = 10007, ns, c, j;
	struct spirt_optim o;
	float *th = malloc(n * sizeof *th), *g = malloc(n * sizeof *g);
	float *st = malloc(2 * n * sizeof *st);
	float *th0 = malloc(n * sizeof *th0), *st0 = malloc(2 * n *
	    sizeof *st0);
	float *th1 = malloc(n * sizeof *th1), *st1 = malloc(2 * n *
	    sizeof *st1);
	int best = spirt_isa_best(), l, fresh;

	for (l = best + 1; l < SPIRT_ISA_NLEVELS; l++)
		fprintf(stderr, "test_optim: this CPU lacks %s: that level is "
		    "not compared\n", spirt_isa_name(l));
	for (j = 0; j < n; j++) {
		th[j] = ldexpf((float)(urand() * 2 - 1),
		    (int)(urand() * 16) - 8);
		g[j] = ldexpf((float)(urand() * 2 - 1),
		    (int)(urand() * 24) - 12);
		st[j] = ldexpf((float)(urand() * 2 - 1),
		    (int)(urand() * 16) - 8);
		st[n + j] = ldexpf((float)urand(), (int)(urand() * 24) - 20);
	}
	for (c = 0; c < sizeof cs / sizeof *cs; c++)
		for (fresh = 0; fresh < 2; fresh++) {
			spirt_optim_defaults(&o);
			o.kind = cs[c].kind;
			o.nesterov = cs[c].nesterov;
			o.wd = cs[c].wd;
			o.lr = 0.037;
			o.schedule = SPIRT_SCHED_COSINE;
			o.total = 100;
			ns = spirt_optim_nstate(o.kind);
			CHECK_RC(spirt_isa_set(SPIRT_ISA_BASE));
			CHECK_RC(spirt_optim_step(th0, st0, th, fresh ? NULL :
			    st, g, n, &o, 17, fresh ? 0 : 3));
			for (l = SPIRT_ISA_BASE + 1; l <= best; l++) {
				CHECK_RC(spirt_isa_set(l));
				CHECK_RC(spirt_optim_step(th1, st1, th, fresh ?
				    NULL : st, g, n, &o, 17, fresh ? 0 : 3));
				if (memcmp(th1, th0, n * sizeof *th) == 0 &&
				    memcmp(st1, st0, ns * n * sizeof *st) == 0)
					continue;
				fprintf(stderr, "test_optim: %s%s%s: %s "
				    "differs from base\n",
				    spirt_optim_name(o.kind),
				    o.nesterov ? "+nesterov" : "",
				    fresh ? " (fresh state)" : "",
				    spirt_isa_name(l));
				check_failed = 1;
			}
		}
	CHECK_RC(spirt_isa_set(best));
	free(th); free(g); free(st); free(th0); free(st0); free(th1);
	free(st1);
}

int
main(void)
{
	params();
	for (int s = SPIRT_SCHED_CONSTANT; s <= SPIRT_SCHED_COSINE; s++) {
		against_reference(SPIRT_OPT_SGD, 0, s, 0);
		against_reference(SPIRT_OPT_MOMENTUM, 0, s, 0);
		against_reference(SPIRT_OPT_MOMENTUM, 1, s, 0);
		against_reference(SPIRT_OPT_ADAM, 0, s, 0);
		against_reference(SPIRT_OPT_ADAMW, 0, s, 0);
	}
	against_reference(SPIRT_OPT_SGD, 0, SPIRT_SCHED_CONSTANT, 0.01);
	against_reference(SPIRT_OPT_MOMENTUM, 1, SPIRT_SCHED_STEP, 0.01);
	against_reference(SPIRT_OPT_ADAM, 0, SPIRT_SCHED_COSINE, 0.01);
	against_reference(SPIRT_OPT_ADAMW, 0, SPIRT_SCHED_CONSTANT, 0.1);
	nonfinite();
	isa_levels();
	CHECK_DONE();
}
