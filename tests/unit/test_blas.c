/* test_blas.c - kernels: OpenBLAS vs naive, finite-difference gradients */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "blas.h"
#include "model.h"
#include "tool.h"

static struct spirt_sm64 rng;

static float *
rnd(size_t n, float scale)
{
	float *x = malloc((n ? n : 1) * sizeof *x);
	size_t i;

	if (x == NULL) {
		perror("malloc");
		exit(70);
	}
	for (i = 0; i < n; i++)
		x[i] = scale * (float)(2.0 * spirt_sm64_uniform(&rng) - 1.0);
	return x;
}

static double
dot(const float *a, const float *b, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

/*
 * Central differences of f with respect to x[0..n) against grad.  f must
 * compute its loss with the naive (double-accumulating) kernels.
 */
static void
fdcheck(const char *what, float *x, size_t n, const float *grad,
    double (*f)(void *), void *ctx, double eps)
{
	size_t i, bad = 0, at = 0;
	double worst = 0;

	for (i = 0; i < n; i++) {
		float save = x[i];
		double lp, lm, num, d;

		x[i] = save + (float)eps;
		lp = f(ctx);
		x[i] = save - (float)eps;
		lm = f(ctx);
		x[i] = save;
		num = (lp - lm) / (2 * eps);
		d = fabs(num - grad[i]);
		if (d > worst) {
			worst = d;
			at = i;
		}
		if (d > 1e-3 + 1e-2 * fmax(fabs(num), fabs(grad[i])))
			bad++;
	}
	if (bad) {
		fprintf(stderr, "%s: %zu of %zu off, worst %g at %zu\n", what,
		    bad, n, worst, at);
		check_failed = 1;
	}
}

static void
test_sgemm(void)
{
	size_t M = 37, N = 29, K = 53;
	int ta, tb;

	for (ta = 0; ta < 2; ta++) {
		for (tb = 0; tb < 2; tb++) {
			float *A = rnd(M * K, 1), *B = rnd(K * N, 1);
			float *C1 = rnd(M * N, 1), *C2 = malloc(M * N * 4);
			memcpy(C2, C1, M * N * 4);
			spirt_sgemm(ta, tb, M, N, K, 1.5f, A, ta ? M : K, B,
			    tb ? K : N, 0.5f, C1, N);
			spirt_sgemm_naive(ta, tb, M, N, K, 1.5f, A, ta ? M : K,
			    B, tb ? K : N, 0.5f, C2, N);
			check_close("sgemm", C1, C2, M * N, 1e-4, 1e-4);
			free(A), free(B), free(C1), free(C2);
		}
	}
}

/* ---- dense ---- */

struct densectx {
	float *inp, *w, *b, *out, *R;
	size_t B, C, OC;
};

static double
dense_loss(void *p)
{
	struct densectx *c = p;

	spirt_dense_forward_naive(c->out, c->inp, c->w, c->b, c->B, c->C,
	    c->OC);
	return dot(c->out, c->R, c->B * c->OC);
}

static void
test_dense(void)
{
	struct densectx c = { .B = 7, .C = 13, .OC = 5 };
	size_t B = c.B, C = c.C, OC = c.OC;
	float *out2 = malloc(B * OC * 4);
	float *di = malloc(B * C * 4), *dw = malloc(OC * C * 4);
	float *db = malloc(OC * 4), *di2 = malloc(B * C * 4);
	float *dw2 = malloc(OC * C * 4), *db2 = malloc(OC * 4);

	c.inp = rnd(B * C, 1);
	c.w = rnd(OC * C, 1);
	c.b = rnd(OC, 1);
	c.R = rnd(B * OC, 1);
	c.out = malloc(B * OC * 4);
	spirt_dense_forward(out2, c.inp, c.w, c.b, B, C, OC);
	dense_loss(&c);
	check_close("dense_forward", out2, c.out, B * OC, 1e-5, 1e-5);
	spirt_dense_backward(di, dw, db, c.R, c.inp, c.w, B, C, OC);
	spirt_dense_backward_naive(di2, dw2, db2, c.R, c.inp, c.w, B, C, OC);
	check_close("dense_backward dinp", di, di2, B * C, 1e-5, 1e-5);
	check_close("dense_backward dweight", dw, dw2, OC * C, 1e-5, 1e-5);
	check_close("dense_backward dbias", db, db2, OC, 1e-5, 1e-5);
	fdcheck("dense fd inp", c.inp, B * C, di2, dense_loss, &c, 1e-2);
	fdcheck("dense fd weight", c.w, OC * C, dw2, dense_loss, &c, 1e-2);
	fdcheck("dense fd bias", c.b, OC, db2, dense_loss, &c, 1e-2);
	free(c.inp), free(c.w), free(c.b), free(c.R), free(c.out), free(out2);
	free(di), free(dw), free(db), free(di2), free(dw2), free(db2);
}

/* ---- relu ---- */

struct reluctx {
	float *inp, *out, *R;
	size_t n;
};

static double
relu_loss(void *p)
{
	struct reluctx *c = p;

	spirt_relu_forward(c->out, c->inp, c->n);
	return dot(c->out, c->R, c->n);
}

static void
test_relu(void)
{
	struct reluctx c = { .n = 50 };
	float *d = malloc(50 * 4);
	size_t i;

	c.inp = rnd(50, 1);
	for (i = 0; i < 50; i++)        // keep away from the kink
		if (fabsf(c.inp[i]) < 0.05f)
			c.inp[i] = 0.5f;
	c.R = rnd(50, 1);
	c.out = malloc(50 * 4);
	relu_loss(&c);
	spirt_relu_backward(d, c.R, c.out, 50);
	fdcheck("relu fd", c.inp, 50, d, relu_loss, &c, 1e-2);
	free(c.inp), free(c.R), free(c.out), free(d);
}

/* ---- conv ---- */

struct convctx {
	float *inp, *w, *b, *out, *R;
	size_t sc, sb, B, C, H, W, OC, k;
};

static double
conv_loss(void *p)
{
	struct convctx *c = p;
	size_t n = c->OC * c->B * (c->H - c->k + 1) * (c->W - c->k + 1);

	spirt_conv_forward_naive(c->out, c->inp, c->sc, c->sb, c->w, c->b,
	    c->B, c->C, c->H, c->W, c->OC, c->k);
	return dot(c->out, c->R, n);
}

static void
test_conv(int cbhw)
{
	struct convctx c = { .B = 3, .C = 2, .H = 9, .W = 8, .OC = 3, .k = 5 };
	size_t B = c.B, C = c.C, H = c.H, W = c.W, OC = c.OC, k = c.k;
	size_t OH = H - k + 1, OW = W - k + 1, n = OC * B * OH * OW;
	size_t nin = B * C * H * W, nw = OC * C * k * k;
	float *out2 = malloc(n * 4), *col = malloc(C * k * k * B * OH * OW * 4);
	float *di = malloc(nin * 4), *dw = malloc(nw * 4), *db = malloc(OC * 4);
	float *di2 = malloc(nin * 4), *dw2 = malloc(nw * 4);
	float *db2 = malloc(OC * 4);
	const char *tag = cbhw ? "conv(CBHW)" : "conv(BCHW)";
	char what[64];

	c.sc = cbhw ? B * H * W : H * W;
	c.sb = cbhw ? H * W : C * H * W;
	c.inp = rnd(nin, 1);
	c.w = rnd(nw, 0.5f);
	c.b = rnd(OC, 1);
	c.R = rnd(n, 1);
	c.out = malloc(n * 4);
	conv_loss(&c);
	spirt_conv_forward(out2, col, c.inp, c.sc, c.sb, c.w, c.b, B, C, H, W,
	    OC, k);
	snprintf(what, sizeof what, "%s forward", tag);
	check_close(what, out2, c.out, n, 1e-5, 1e-5);
	spirt_conv_backward(di, dw, db, col, c.R, c.w, c.sc, c.sb, B, C, H, W,
	    OC, k);
	spirt_conv_backward_naive(di2, dw2, db2, c.R, c.inp, c.w, c.sc, c.sb,
	    B, C, H, W, OC, k);
	snprintf(what, sizeof what, "%s backward dinp", tag);
	check_close(what, di, di2, nin, 1e-4, 1e-5);
	snprintf(what, sizeof what, "%s backward dweight", tag);
	check_close(what, dw, dw2, nw, 1e-4, 1e-5);
	snprintf(what, sizeof what, "%s backward dbias", tag);
	check_close(what, db, db2, OC, 1e-4, 1e-5);
	snprintf(what, sizeof what, "%s fd", tag);
	fdcheck(what, c.inp, nin, di2, conv_loss, &c, 1e-2);
	fdcheck(what, c.w, nw, dw2, conv_loss, &c, 1e-2);
	fdcheck(what, c.b, OC, db2, conv_loss, &c, 1e-2);
	free(c.inp), free(c.w), free(c.b), free(c.R), free(c.out), free(out2);
	free(col), free(di), free(dw), free(db), free(di2), free(dw2),
	    free(db2);
}

/* ---- max-pool ---- */

struct poolctx {
	float *inp, *out, *R;
	uint32_t *idx;
	size_t P, H, W;
};

static double
pool_loss(void *p)
{
	struct poolctx *c = p;

	spirt_maxpool_forward(c->out, c->idx, c->inp, c->P, c->H, c->W);
	return dot(c->out, c->R, c->P * (c->H / 2) * (c->W / 2));
}

static void
test_pool(void)
{
	struct poolctx c = { .P = 4, .H = 6, .W = 5 };
	size_t n = 4 * 3 * 2, nin = 4 * 6 * 5, i;
	float *d = malloc(nin * 4), t[4] = { 1, 3, 3, 2 }, o[1];
	uint32_t ix[1];

	c.inp = malloc(nin * 4);
	for (i = 0; i < nin; i++)       // distinct values: no ties
		c.inp[i] = (float)((i * 37) % nin) * 0.1f;
	c.R = rnd(n, 1);
	c.out = malloc(n * 4);
	c.idx = malloc(n * 4);
	pool_loss(&c);
	spirt_maxpool_backward(d, c.R, c.idx, c.P, c.H, c.W);
	fdcheck("maxpool fd", c.inp, nin, d, pool_loss, &c, 1e-3);
	// ties go to the first maximum, as in torch
	spirt_maxpool_forward(o, ix, t, 1, 2, 2);
	CHECK(o[0] == 3 && ix[0] == 1);
	free(c.inp), free(c.R), free(c.out), free(c.idx), free(d);
}

/* fused bias + ReLU + max-pool equals the three kernels one after another */
static void
test_poolrelu(void)
{
	size_t C = 3, B = 2, H = 6, W = 7, n = C * B * H * W;
	size_t m = C * B * 3 * 3, i, c;
	float *x = rnd(n, 1), *bias = rnd(C, 0.5f), *xb = malloc(n * 4);
	float *o1 = malloc(m * 4), *o2 = malloc(m * 4), *g = rnd(m, 1);
	float *d1 = malloc(n * 4), *d2 = malloc(n * 4);
	uint32_t *i1 = malloc(m * 4), *i2 = malloc(m * 4);

	for (i = 0; i < n; i++) {
		c = i / (B * H * W);
		xb[i] = x[i] + bias[c];
	}
	spirt_relu_forward(xb, xb, n);
	spirt_maxpool_forward(o1, i1, xb, C * B, H, W);
	spirt_poolrelu_forward(o2, i2, x, bias, C, B, H, W);
	check_close("poolrelu forward", o2, o1, m, 1e-6, 1e-7);
	spirt_maxpool_backward(d1, g, i1, C * B, H, W);
	spirt_relu_backward(d1, d1, xb, n);
	spirt_poolrelu_backward(d2, g, o2, i2, C, B, H, W);
	check_close("poolrelu backward", d2, d1, n, 1e-6, 1e-7);
	free(x), free(bias), free(xb), free(o1), free(o2), free(g);
	free(d1), free(d2), free(i1), free(i2);
}

/* ---- softmax cross-entropy ---- */

struct xentctx {
	float *z, *p;
	int32_t *y;
	size_t B, K;
};

static double
xent_loss(void *p)
{
	struct xentctx *c = p;

	return spirt_xent_forward(c->p, NULL, c->z, c->y, c->B, c->K);
}

static void
test_xent(void)
{
	struct xentctx c = { .B = 5, .K = 7 };
	int32_t y[5] = { 0, 6, 3, 3, 1 }, y1[1] = { 1 };
	float d[35], z[2] = { 1000.0f, -1000.0f }, p[2], l;
	double loss, s;
	size_t b, j;

	c.y = y;
	c.z = rnd(35, 3);
	c.p = malloc(35 * 4);
	xent_loss(&c);
	for (b = 0; b < 5; b++) {
		for (s = 0, j = 0; j < 7; j++)
			s += c.p[b * 7 + j];
		CHECK(fabs(s - 1) < 1e-6);
	}
	spirt_xent_backward(d, c.p, c.y, 5, 7);
	fdcheck("xent fd", c.z, 35, d, xent_loss, &c, 1e-3);
	// huge logits stay finite (stable log-sum-exp)
	loss = spirt_xent_forward(p, &l, z, y1, 1, 2);
	CHECK(isfinite(loss) && fabs(loss - 2000) < 1e-3 && p[0] == 1.0f);
	free(c.z), free(c.p);
}

int
main(void)
{
	int rc;

	spirt_sm64_seed(&rng, 42);
	if (getenv("SPIRT_TEST_NOBLAS") == NULL) {
		rc = blas_load(1);
		if (rc != 0) {
			fprintf(stderr, "OpenBLAS: %s\n", spirt_blas_error());
			return 1;
		}
		fprintf(stderr, "OpenBLAS core %s (%s)\n",
		    spirt_blas_corename(), spirt_blas_source_name());
	}
	test_sgemm();
	test_dense();
	test_relu();
	test_conv(0);
	test_conv(1);
	test_pool();
	test_poolrelu();
	test_xent();
	CHECK_DONE();
}
