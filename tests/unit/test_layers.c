/* test_layers.c - layer kernels: fast vs naive, PyTorch, finite differences */
/* ISC licence, see LICENSE */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "blas.h"
#include "io.h"
#include "layers.h"
#include "npy.h"
#include "rng.h"
#include "tool.h"

static struct spirt_sm64 rng;

enum kind { CONV, DWCONV, BN, BNEVAL, AVGPOOL, GAP, MAXPOOL, RESIDUAL, NKIND };
static const char *kinds[NKIND] = { "conv2d", "dwconv", "bn", "bneval",
	"avgpool", "gap", "maxpool", "residual" };

/* the arrays of a case, inputs first; the names of the fixture files */
enum { X, WT, BI, DOUT, GAMMA, BETA, RM, RV, X2, NIN = X2 + 1,
	OUT = NIN, DX, DW, DB, DGAMMA, DBETA, RM1, RV1, DX2, NARR };
static const char *arrname[NARR] = { "x", "w", "b", "dout", "gamma", "beta",
	"rm", "rv", "x2", "out", "dx", "dw", "db", "dgamma", "dbeta", "rm1",
	"rv1", "dx2" };

struct lcase {
	int kind;
	size_t sz[9];
	struct spirt_conv2d g;
	size_t n[NARR];
	float *a[NARR];
};

#define MOMENTUM 0.1f
#define EPS 1e-5f

/* Sizes of every array of c (0: not used); 0 or -1 (bad sizes). */
static int
sizes(struct lcase *c)
{
	size_t *z = c->sz, B = z[0], C = z[1], H = z[2], W = z[3];
	size_t n = B * C * H * W, i, o = 0;

	memset(c->n, 0, sizeof c->n);
	c->n[X] = c->n[DX] = n;
	switch (c->kind) {
	case CONV:
	case DWCONV:
		if (c->kind == CONV ? spirt_conv2d_shape(&c->g, B, C, H, W,
		    z[4], z[5], z[6], z[7]) : spirt_conv2d_shape(&c->g, B, C,
		    H, W, C, z[4], z[5], z[6]))
			return -1;
		c->n[WT] = c->n[DW] = (c->kind == CONV ? c->g.OC * C : C) *
		    c->g.k * c->g.k;
		if (z[c->kind == CONV ? 8 : 7])
			c->n[BI] = c->n[DB] = c->g.OC;
		o = c->g.OC * B * c->g.OH * c->g.OW;
		break;
	case BN:
		c->n[RM1] = c->n[RV1] = C;
		/* FALLTHROUGH */
	case BNEVAL:
		for (i = GAMMA; i <= RV; i++)
			c->n[i] = C;
		c->n[DGAMMA] = c->n[DBETA] = C;
		o = n;
		break;
	case AVGPOOL:
		o = B * C * (H / z[4]) * (W / z[4]);
		break;
	case GAP:
		o = B * C;
		break;
	case MAXPOOL:
		if (z[4] > H || z[4] > W)
			return -1;
		o = B * C * ((H - z[4]) / z[5] + 1) * ((W - z[4]) / z[5] + 1);
		break;
	case RESIDUAL:
		c->n[X2] = c->n[DX2] = n;
		o = n;
		break;
	}
	c->n[OUT] = c->n[DOUT] = o;
	return 0;
}

static float *
alloc(size_t n)
{
	float *x = calloc(n ? n : 1, sizeof *x);

	if (x == NULL) {
		perror("calloc");
		exit(70);
	}
	return x;
}

static void
alloc_outputs(struct lcase *c)
{
	int i;

	for (i = OUT; i < NARR; i++)
		c->a[i] = c->n[i] ? alloc(c->n[i]) : NULL;
}

static void
free_case(struct lcase *c, int from)
{
	int i;

	for (i = from; i < NARR; i++) {
		free(c->a[i]);
		c->a[i] = NULL;
	}
}

/*
 * The layer of c, forward then (unless fwd_only) backward of
 * sum(out * dout), with the fast or the naive kernels.
 */
static void
run(struct lcase *c, int naive, int fwd_only)
{
	float **a = c->a, *col, *mean, *rstd;
	const struct spirt_conv2d *g = &c->g;
	size_t *z = c->sz, B = z[0], C = z[1], H = z[2], W = z[3];
	size_t n = B * H * W;
	uint32_t *idx;

	switch (c->kind) {
	case CONV:
		if (naive) {
			spirt_conv2d_forward_naive(a[OUT], a[X], a[WT], a[BI],
			    g);
			if (!fwd_only)
				spirt_conv2d_backward_naive(a[DX], a[DW],
				    a[DB], a[DOUT], a[X], a[WT], g);
			break;
		}
		col = alloc(spirt_conv2d_colsize(g));
		spirt_conv2d_forward(a[OUT], col, a[X], a[WT], a[BI], g);
		if (!fwd_only)
			spirt_conv2d_backward(a[DX], a[DW], a[DB], col,
			    a[DOUT], a[X], a[WT], g);
		free(col);
		break;
	case DWCONV:
		(naive ? spirt_dwconv2d_forward_naive :
		    spirt_dwconv2d_forward)(a[OUT], a[X], a[WT], a[BI], g);
		if (!fwd_only)
			(naive ? spirt_dwconv2d_backward_naive :
			    spirt_dwconv2d_backward)(a[DX], a[DW], a[DB],
			    a[DOUT], a[X], a[WT], g);
		break;
	case BN:
		mean = alloc(C), rstd = alloc(C);
		memcpy(a[RM1], a[RM], C * sizeof *a[RM]);
		memcpy(a[RV1], a[RV], C * sizeof *a[RV]);
		(naive ? spirt_bn_forward_naive : spirt_bn_forward)(a[OUT],
		    mean, rstd, a[RM1], a[RV1], a[X], a[GAMMA], a[BETA], C, n,
		    MOMENTUM, EPS);
		if (!fwd_only)
			(naive ? spirt_bn_backward_naive : spirt_bn_backward)(
			    a[DX], a[DGAMMA], a[DBETA], a[DOUT], a[X], mean,
			    rstd, a[GAMMA], C, n);
		free(mean), free(rstd);
		break;
	case BNEVAL:
		(naive ? spirt_bn_eval_forward_naive : spirt_bn_eval_forward)(
		    a[OUT], a[X], a[GAMMA], a[BETA], a[RM], a[RV], C, n, EPS);
		if (!fwd_only)
			(naive ? spirt_bn_eval_backward_naive :
			    spirt_bn_eval_backward)(a[DX], a[DGAMMA], a[DBETA],
			    a[DOUT], a[X], a[GAMMA], a[RM], a[RV], C, n, EPS);
		break;
	case AVGPOOL:
		(naive ? spirt_avgpool_forward_naive : spirt_avgpool_forward)(
		    a[OUT], a[X], C * B, H, W, z[4]);
		if (!fwd_only)
			(naive ? spirt_avgpool_backward_naive :
			    spirt_avgpool_backward)(a[DX], a[DOUT], C * B, H,
			    W, z[4]);
		break;
	case GAP:
		(naive ? spirt_gap_forward_naive : spirt_gap_forward)(a[OUT],
		    a[X], C * B, H * W);
		if (!fwd_only)
			(naive ? spirt_gap_backward_naive :
			    spirt_gap_backward)(a[DX], a[DOUT], C * B, H * W);
		break;
	case MAXPOOL:
		if (naive) {
			spirt_maxpool2d_forward_naive(a[OUT], a[X], C * B, H,
			    W, z[4], z[5]);
			if (!fwd_only)
				spirt_maxpool2d_backward_naive(a[DX], a[DOUT],
				    a[X], C * B, H, W, z[4], z[5]);
			break;
		}
		idx = malloc((c->n[OUT] ? c->n[OUT] : 1) * sizeof *idx);
		if (idx == NULL) {
			perror("malloc");
			exit(70);
		}
		spirt_maxpool2d_forward(a[OUT], idx, a[X], C * B, H, W, z[4],
		    z[5]);
		if (!fwd_only)
			spirt_maxpool2d_backward(a[DX], a[DOUT], idx, C * B,
			    H, W, z[4], z[5]);
		free(idx);
		break;
	case RESIDUAL:
		spirt_residual_forward(a[OUT], a[X], a[X2], c->n[X]);
		if (!fwd_only)
			spirt_residual_backward(a[DX], a[DX2], a[DOUT],
			    c->n[X]);
		break;
	}
}

/* ---- against float64 PyTorch (contrib/python/make_layer_fixtures.py) ---- */

static float *
load(const char *dir, const char *name, int arr, size_t n)
{
	struct spirt_tensor t;
	const void *data;
	void *buf = NULL;
	char path[512];
	size_t len;
	float *x = NULL;
	int rc;

	snprintf(path, sizeof path, "%s/%s.%s.npy", dir, name, arrname[arr]);
	if ((rc = spirt_readfile(path, &buf, &len)) != 0 ||
	    (rc = spirt_npy_parse(&t, &data, buf, len)) != 0) {
		fprintf(stderr, "%s: %s\n", path, spirt_strerror(rc));
		check_failed = 1;
	} else if (t.dtype != SPIRT_F32 || t.nelem != n) {
		fprintf(stderr, "%s: dtype %d, %llu elements, want f32 %zu\n",
		    path, t.dtype, (unsigned long long)t.nelem, n);
		check_failed = 1;
	} else {
		x = alloc(n);
		memcpy(x, data, n * sizeof *x);
	}
	free(buf);
	return x;
}

/* float32 PyTorch's error for array arr of case name, from tols */
static double
torch_err(const char *dir, const char *name, int arr)
{
	char path[512], line[256], nm[128], an[32];
	double e, err = -1;
	FILE *f;

	snprintf(path, sizeof path, "%s/tols", dir);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "%127s %31s %lf", nm, an, &e) == 3 &&
		    strcmp(nm, name) == 0 && strcmp(an, arrname[arr]) == 0)
			err = e;
	fclose(f);
	return err;
}

static double
maxdiff(const float *a, const float *b, size_t n)
{
	double m = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (!(fabs((double)a[i] - b[i]) <= m))
			m = fabs((double)a[i] - b[i]);
	return m;
}

static void
test_fixture(const char *dir, const char *name, struct lcase *c)
{
	float *want[NARR] = { 0 };
	int i, naive, nout = 0;

	for (i = 0; i < NARR; i++) {
		c->a[i] = NULL;
		if (c->n[i] == 0)
			continue;
		if (i < NIN)
			c->a[i] = load(dir, name, i, c->n[i]);
		else
			want[i] = load(dir, name, i, c->n[i]);
		if (c->a[i] == NULL && want[i] == NULL)
			goto out;
	}
	for (naive = 0; naive < 2; naive++) {
		alloc_outputs(c);
		run(c, naive, 0);
		for (i = OUT; i < NARR; i++) {
			double err, tol, d;
			if (want[i] == NULL)
				continue;
			if ((err = torch_err(dir, name, i)) < 0) {
				fprintf(stderr, "%s.%s: not in tols\n", name,
				    arrname[i]);
				check_failed = 1;
				continue;
			}
			tol = fmax(1e-4, 1.1 * err);
			d = maxdiff(c->a[i], want[i], c->n[i]);
			if (!(d <= tol)) {
				fprintf(stderr, "%s.%s (%s): maxdiff %g, "
				    "allowed %g\n", name, arrname[i],
				    naive ? "naive" : "fast", d, tol);
				check_failed = 1;
			}
			nout++;
		}
		free_case(c, OUT);
	}
	CHECK(nout >= 4);
out:
	free_case(c, 0);
	for (i = 0; i < NARR; i++)
		free(want[i]);
}

static void
test_fixtures(void)
{
	const char *dir = getenv("SPIRT_LAYER_FIXTURES");
	char path[512], line[512], name[128], kind[32];
	struct lcase c;
	int n = 0, seen[NKIND] = { 0 }, k, m, off, used;
	FILE *f;

	if (dir == NULL)
		dir = "tests/data/layers";
	snprintf(path, sizeof path, "%s/cases", dir);
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "%s: no fixtures\n", path);
		check_failed = 1;
		return;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		memset(&c, 0, sizeof c);
		if (sscanf(line, "%127s %31s%n", name, kind, &off) != 2)
			goto bad;
		for (k = 0; k < NKIND && strcmp(kinds[k], kind) != 0; k++)
			;
		if (k == NKIND)
			goto bad;
		c.kind = k;
		for (m = 0; m < 9 && sscanf(line + off, "%zu%n", &c.sz[m],
		    &used) == 1; m++)
			off += used;
		if (m < 4 || sizes(&c) != 0)
			goto bad;
		test_fixture(dir, name, &c);
		seen[k] = 1;
		n++;
		continue;
bad:
		fprintf(stderr, "%s: bad line: %s", path, line);
		check_failed = 1;
	}
	fclose(f);
	for (k = 0; k < NKIND; k++)
		if (!seen[k]) {
			fprintf(stderr, "%s: no %s case\n", path, kinds[k]);
			check_failed = 1;
		}
	CHECK(n > 0);
}

/* ---- fast against naive on random shapes; bit-identical reruns ---- */

static size_t
pick(size_t lo, size_t hi)
{
	return lo + (size_t)spirt_sm64_below(&rng, hi - lo + 1);
}

static void
fill(float *x, size_t n, float scale, float shift)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = shift + scale * (float)(2.0 *
		    spirt_sm64_uniform(&rng) - 1.0);
}

/* the inputs of c, uniform in [-1, 1) */
static void
inputs(struct lcase *c)
{
	int i;

	for (i = 0; i < NIN; i++) {
		if (c->n[i] == 0)
			continue;
		c->a[i] = alloc(c->n[i]);
		fill(c->a[i], c->n[i], 1.0f, 0.0f);
	}
}

/* a random case of kind k: inputs filled, outputs not allocated */
static void
random_case(struct lcase *c, int k, int tiny)
{
	size_t *z = c->sz;

	do {
		memset(c, 0, sizeof *c);
		c->kind = k;
		z[0] = pick(1, tiny ? 2 : 5);
		z[1] = pick(1, tiny ? 3 : 16);
		z[2] = pick(1, tiny ? 6 : 13);
		z[3] = pick(1, tiny ? 6 : 13);
		switch (k) {
		case CONV:
			z[4] = pick(1, tiny ? 3 : 16);
			z[5] = 2 * pick(0, 2) + 1;
			z[6] = pick(1, 2), z[7] = pick(0, 2), z[8] = pick(0, 1);
			break;
		case DWCONV:
			z[4] = 2 * pick(0, 2) + 1;
			z[5] = pick(1, 2), z[6] = pick(0, 2), z[7] = pick(0, 1);
			break;
		case AVGPOOL:
			z[4] = pick(1, 3);
			break;
		case MAXPOOL:
			z[4] = pick(1, 3), z[5] = pick(1, 3);
			break;
		}
	} while (sizes(c) != 0 || c->n[OUT] == 0 ||
	    (k == BN && c->n[X] / z[1] < 2));
	inputs(c);
	if (k == MAXPOOL && !tiny && spirt_sm64_below(&rng, 2)) {
		size_t j;
		// values in {-1,0,1}: equal maxima, the first one wins (not
		// for finite differences: a tie has no derivative)
		for (j = 0; j < c->n[X]; j++)
			c->a[X][j] = (float)spirt_sm64_below(&rng, 3) - 1.0f;
	}
	if (k == BN || k == BNEVAL) {
		fill(c->a[X], c->n[X], 2.0f, 3.0f);
		fill(c->a[GAMMA], z[1], 0.3f, 1.0f);
		fill(c->a[RM], z[1], 0.5f, 3.0f);
		fill(c->a[RV], z[1], 0.5f, 2.0f);
	}
}

/*
 * The fast convolution works a chunk of samples at a time (the col that
 * fits 512 KB, or 1568 output pixels on narrow maps): its last two shapes
 * take several, one sample a chunk (3 chunks), then four (4 and 1); the
 * depthwise one gets larger planes.
 */
static const size_t chunky[][2][9] = {
	{ { 3, 16, 24, 23, 4, 3, 1, 1, 1 }, { 5, 16, 40, 41, 3, 3, 2, 1, 0 } },
	{ { 3, 64, 24, 23, 3, 1, 1, 0 }, { 5, 96, 40, 41, 1, 2, 0, 1 } },
};

/*
 * 1x1 convolutions: of stride 1 without padding the products read inp
 * itself, no im2col (with a bias and without, a batch of 64 in chunks);
 * of stride 2 the gather of im2col
 */
static const size_t onebyone[][9] = {
	{ 4, 24, 9, 11, 40, 1, 1, 0, 1 }, { 64, 16, 14, 14, 32, 1, 1, 0, 0 },
	{ 3, 8, 9, 8, 16, 1, 2, 0, 0 },
};

/*
 * 3x3 and 5x5 convolutions of stride 1 on maps wide enough for the wide
 * im2col (lib/conv.c: padded width within 10% of the output's):
 * several samples a chunk and a last short one, no padding, a padding
 * wider than the kernel's half (taps that read only zeros), 5x5
 */
static const size_t widecases[][9] = {
	{ 10, 2, 28, 28, 5, 3, 1, 1, 0 }, { 3, 4, 22, 24, 6, 3, 1, 0, 1 },
	{ 2, 3, 44, 41, 5, 5, 1, 2, 0 }, { 2, 3, 30, 30, 4, 3, 1, 2, 1 },
};

/*
 * Strided convolutions through the phase planes (k >= s > 1): a tap's
 * rows as one run (OW = ceil(W/s)), row by row (9x9, stride 2, no
 * padding: OW 4, the planes 5 wide), sizes not a multiple of the
 * stride, stride 3 with a 5x5 kernel
 */
static const size_t stridecases[][9] = {
	{ 3, 4, 9, 9, 5, 3, 2, 0, 1 }, { 2, 3, 28, 28, 8, 3, 2, 1, 0 },
	{ 2, 2, 11, 10, 3, 5, 3, 2, 1 },
};

static void
test_random(void)
{
	struct lcase f, nv;
	char what[128];
	int k, r, i;

	for (k = 0; k < NKIND; k++) {
		for (r = 0; r < (k == CONV ? 37 : 27); r++) {
			random_case(&f, k, 0);
			if ((k == CONV || k == DWCONV) && r >= 25) {
				memcpy(f.sz, r < 27 ? chunky[k][r - 25] :
				    r < 30 ? onebyone[r - 27] :
				    r < 34 ? widecases[r - 30] :
				    stridecases[r - 34], sizeof f.sz);
				free_case(&f, 0);
				CHECK(sizes(&f) == 0);
				inputs(&f);
			}
			nv = f;
			alloc_outputs(&f);
			alloc_outputs(&nv);
			run(&f, 0, 0);
			run(&nv, 1, 0);
			for (i = OUT; i < NARR; i++) {
				double m = 1, d;
				size_t j;
				if (f.n[i] == 0)
					continue;
				for (j = 0; j < f.n[i]; j++)
					m = fmax(m, fabs(nv.a[i][j]));
				d = maxdiff(f.a[i], nv.a[i], f.n[i]);
				if (!(d <= 1e-5 * m)) {
					snprintf(what, sizeof what, "%s %zu %zu"
					    " %zu %zu %zu %zu %zu %zu %zu",
					    kinds[k], f.sz[0], f.sz[1],
					    f.sz[2], f.sz[3], f.sz[4], f.sz[5],
					    f.sz[6], f.sz[7], f.sz[8]);
					fprintf(stderr, "%s: %s fast vs naive: "
					    "maxdiff %g of %g\n", what,
					    arrname[i], d, m);
					check_failed = 1;
				}
			}
			// the same inputs again: the same bytes
			free_case(&nv, OUT);
			alloc_outputs(&nv);
			run(&nv, 0, 0);
			for (i = OUT; i < NARR; i++)
				if (f.n[i] && memcmp(f.a[i], nv.a[i],
				    f.n[i] * sizeof *f.a[i]) != 0) {
					fprintf(stderr, "%s: %s differs on a "
					    "rerun\n", kinds[k], arrname[i]);
					check_failed = 1;
				}
			free_case(&nv, OUT);
			free_case(&f, 0);
		}
	}
}

/* ---- finite differences of each backward, on tiny shapes ---- */

/* sum(out * dout) by the naive forward pass, in double */
static double
loss(struct lcase *c)
{
	double s = 0;
	size_t i;

	run(c, 1, 1);
	for (i = 0; i < c->n[OUT]; i++)
		s += (double)c->a[OUT][i] * c->a[DOUT][i];
	return s;
}

static void
test_fd(void)
{
	static const int param[][2] = { { X, DX }, { WT, DW }, { BI, DB },
		{ GAMMA, DGAMMA }, { BETA, DBETA }, { X2, DX2 } };
	struct lcase c;
	float *grad;
	int k, r, j;

	for (k = 0; k < NKIND; k++)
	for (r = 0; r < 3; r++) {
		double eps = k == MAXPOOL ? 1e-3 : 1e-2;
		random_case(&c, k, 1);
		alloc_outputs(&c);
		run(&c, 0, 0);
		for (j = 0; j < 6; j++) {
			int in = param[j][0], gi = param[j][1];
			size_t i, bad = 0;
			double worst = 0;
			if (c.n[in] == 0)
				continue;
			grad = alloc(c.n[in]);
			memcpy(grad, c.a[gi], c.n[in] * sizeof *grad);
			for (i = 0; i < c.n[in]; i++) {
				float save = c.a[in][i];
				double lp, lm, num, d;
				c.a[in][i] = save + (float)eps;
				lp = loss(&c);
				c.a[in][i] = save - (float)eps;
				lm = loss(&c);
				c.a[in][i] = save;
				num = (lp - lm) / (2 * eps);
				d = fabs(num - grad[i]);
				worst = fmax(worst, d);
				if (!(d <= 1e-3 + 1e-2 * fmax(fabs(num),
				    fabs(grad[i]))))
					bad++;
			}
			if (bad) {
				fprintf(stderr, "%s: d%s: %zu of %zu off "
				    "finite differences, worst %g\n",
				    kinds[k], arrname[in], bad, c.n[in],
				    worst);
				check_failed = 1;
			}
			free(grad);
		}
		free_case(&c, 0);
	}
}

/*
 * The fused kernels (bn + relu, add + relu) against the two kernels they
 * replace, run one after the other: the same bits, outputs and
 * gradients, the masked gradient left in dout included; and the fused
 * bn against its naive twin.  n not a multiple of the lanes or a block,
 * some channels all negative (the ReLU passes nothing).
 */
static void
test_fused(void)
{
	static const size_t shapes[][2] = { { 3, 1 }, { 5, 777 },
		{ 2, 4099 } };
	size_t t, i;

	for (t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
		size_t C = shapes[t][0], n = shapes[t][1], N = C * n;
		float *x = alloc(N), *x2 = alloc(N), *dy = alloc(N);
		float *g = alloc(C), *b = alloc(C), *rm[3], *rv[3];
		float *o[3], *dx[3], *dg[3], *db[3], *d[3], *mu[3], *rs[3];
		float *x2b = alloc(N);
		int v;

		fill(x, N, 2.0f, 0.5f), fill(x2, N, 1.0f, 0.0f);
		fill(dy, N, 1.0f, 0.0f), fill(g, C, 1.0f, 0.0f);
		fill(b, C, 1.0f, 0.0f);
		b[0] = -100.0f;         // channel 0 all cut by the ReLU
		for (v = 0; v < 3; v++) {
			o[v] = alloc(N), dx[v] = alloc(N), d[v] = alloc(N);
			dg[v] = alloc(C), db[v] = alloc(C), mu[v] = alloc(C);
			rs[v] = alloc(C), rm[v] = alloc(C), rv[v] = alloc(C);
			memcpy(d[v], dy, N * sizeof *dy);
			for (i = 0; i < C; i++)
				rm[v][i] = 0.25f, rv[v][i] = 2.0f;
		}
		// 0: bn then relu, 1: fused, 2: fused naive
		spirt_bn_forward(o[0], mu[0], rs[0], rm[0], rv[0], x, g, b, C,
		    n, MOMENTUM, EPS);
		spirt_relu_forward(o[0], o[0], N);
		spirt_relu_backward(d[0], d[0], o[0], N);
		spirt_bn_backward(dx[0], dg[0], db[0], d[0], x, mu[0], rs[0],
		    g, C, n);
		spirt_bn_relu_forward(o[1], mu[1], rs[1], rm[1], rv[1], x, g,
		    b, C, n, MOMENTUM, EPS);
		spirt_bn_relu_backward(dx[1], dg[1], db[1], d[1], o[1], x,
		    mu[1], rs[1], g, C, n);
		spirt_bn_relu_forward_naive(o[2], mu[2], rs[2], rm[2], rv[2],
		    x, g, b, C, n, MOMENTUM, EPS);
		spirt_bn_relu_backward_naive(dx[2], dg[2], db[2], d[2], o[2],
		    x, mu[2], rs[2], g, C, n);
		CHECK(memcmp(o[0], o[1], N * sizeof *o[0]) == 0);
		CHECK(memcmp(d[0], d[1], N * sizeof *d[0]) == 0);
		CHECK(memcmp(dx[0], dx[1], N * sizeof *dx[0]) == 0);
		CHECK(memcmp(dg[0], dg[1], C * sizeof *dg[0]) == 0);
		CHECK(memcmp(db[0], db[1], C * sizeof *db[0]) == 0);
		CHECK(memcmp(rv[0], rv[1], C * sizeof *rv[0]) == 0);
		CHECK(dg[1][0] == 0.0f && db[1][0] == 0.0f);
		CHECK(maxdiff(o[1], o[2], N) <= 1e-4);
		CHECK(maxdiff(d[1], d[2], N) == 0);
		CHECK(maxdiff(dx[1], dx[2], N) <= 1e-4);
		CHECK(maxdiff(dg[1], dg[2], C) <= 1e-3);
		CHECK(maxdiff(db[1], db[2], C) <= 1e-3);
		CHECK(maxdiff(rm[1], rm[2], C) <= 1e-6);
		// add then relu, and fused
		spirt_residual_forward(o[0], x, x2, N);
		spirt_relu_forward(o[0], o[0], N);
		memcpy(d[0], dy, N * sizeof *dy);
		spirt_relu_backward(d[0], d[0], o[0], N);
		spirt_residual_backward(dx[0], x2b, d[0], N);
		spirt_residual_relu_forward(o[1], x, x2, N);
		spirt_residual_relu_backward(dx[1], d[1], dy, o[1], N);
		spirt_residual_relu_backward(NULL, d[2], dy, o[1], N);
		CHECK(memcmp(o[0], o[1], N * sizeof *o[0]) == 0);
		CHECK(memcmp(dx[0], dx[1], N * sizeof *dx[0]) == 0);
		CHECK(memcmp(x2b, d[1], N * sizeof *d[1]) == 0);
		CHECK(memcmp(d[0], d[2], N * sizeof *d[2]) == 0);
		for (v = 0; v < 3; v++) {
			free(o[v]), free(dx[v]), free(d[v]), free(dg[v]);
			free(db[v]), free(mu[v]), free(rs[v]), free(rm[v]);
			free(rv[v]);
		}
		free(x), free(x2), free(x2b), free(dy), free(g), free(b);
	}
}

static void
test_shape(void)
{
	struct spirt_conv2d g;

	CHECK_EQ_RC(spirt_conv2d_shape(&g, 1, 1, 2, 2, 1, 5, 1, 1),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_conv2d_shape(&g, 1, 1, 4, 4, 1, 3, 0, 1),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_conv2d_shape(&g, 0, 1, 4, 4, 1, 3, 1, 1),
	    SPIRT_EINVAL);
	CHECK_RC(spirt_conv2d_shape(&g, 2, 3, 28, 27, 4, 3, 2, 1));
	CHECK(g.OH == 14 && g.OW == 14);
	CHECK_RC(spirt_conv2d_shape(&g, 1, 1, 1, 1, 1, 3, 1, 1));
	CHECK(g.OH == 1 && g.OW == 1);
}

int
main(void)
{
	spirt_sm64_seed(&rng, 3737);
	if (getenv("SPIRT_TEST_NOBLAS") == NULL && blas_load(1) != 0) {
		fprintf(stderr, "OpenBLAS: %s\n", spirt_blas_error());
		return 1;
	}
	test_shape();
	test_fixtures();
	test_random();
	test_fd();
	test_fused();
	CHECK_DONE();
}
