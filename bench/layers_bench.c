/* layers_bench.c - the layer kernels' forward+backward time, one thread */
/* ISC licence, see LICENSE */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "blas.h"
#include "layers.h"
#include "rng.h"
#include "tool.h"
#include "bench.h"

static float *
rnd(struct spirt_sm64 *r, size_t n)
{
	float *x = malloc(n * sizeof *x);
	size_t i;

	if (x == NULL) {
		perror("layers_bench: malloc");
		exit(70);
	}
	for (i = 0; i < n; i++)
		x[i] = (float)(2.0 * spirt_sm64_uniform(r) - 1.0);
	return x;
}

/*
 * conv2d (dw = 0) or depthwise (dw = 1) k x k, stride s, padding k/2,
 * C -> OC channels on (C,B,H,W): the median of reps forward+backward
 * passes (dinp included), in ms
 */
static void
benchs(int dw, size_t B, size_t C, size_t OC, size_t H, size_t k, size_t s,
    int reps)
{
	struct spirt_conv2d g;
	struct spirt_sm64 r;
	float *x, *w, *b, *out, *dout, *dx, *dw_, *db, *col = NULL;
	double *t;
	int i;

	if (spirt_conv2d_shape(&g, B, C, H, H, OC, k, s, k / 2) != 0) {
		fprintf(stderr, "layers_bench: bad shape\n");
		exit(70);
	}
	spirt_sm64_seed(&r, 37);
	x = rnd(&r, C * B * H * H), dx = rnd(&r, C * B * H * H);
	w = rnd(&r, OC * (dw ? 1 : C) * k * k);
	dw_ = rnd(&r, OC * (dw ? 1 : C) * k * k);
	b = rnd(&r, OC), db = rnd(&r, OC);
	out = rnd(&r, OC * B * g.OH * g.OW);
	dout = rnd(&r, OC * B * g.OH * g.OW);
	if (!dw)
		col = rnd(&r, spirt_conv2d_colsize(&g));
	if ((t = malloc((size_t)reps * sizeof *t)) == NULL)
		exit(70);
	for (i = -3; i < reps; i++) {
		double t0 = now();
		if (dw) {
			spirt_dwconv2d_forward(out, x, w, b, &g);
			spirt_dwconv2d_backward(dx, dw_, db, dout, x, w, &g);
		} else {
			spirt_conv2d_forward(out, col, x, w, b, &g);
			spirt_conv2d_backward(dx, dw_, db, col, dout, x, w,
			    &g);
		}
		if (i >= 0)
			t[i] = now() - t0;
	}
	qsort(t, (size_t)reps, sizeof *t, cmpd);
	printf("spirt %s%zux%zu %zux%zux%zu", dw ? "dwconv" : "conv", k, k, C,
	    H, H);
	if (OC != C || s != 1)
		printf("-%zu/%zu", OC, s);
	printf(" batch=%zu fwdbwd_ms=%.4f\n", B, 1e3 * t[reps / 2]);
	free(x), free(dx), free(w), free(dw_), free(b), free(db);
	free(out), free(dout), free(col), free(t);
}

static void
bench(int dw, size_t B, size_t C, size_t H, size_t k, int reps)
{
	benchs(dw, B, C, C, H, k, 1, reps);
}

int
main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 50;

	if (reps < 1)
		reps = 1;
	if (blas_load(1) != 0) {
		fprintf(stderr, "layers_bench: OpenBLAS: %s\n",
		    spirt_blas_error());
		return 69;
	}
	bench(0, 64, 16, 28, 3, reps);
	bench(1, 64, 16, 28, 3, reps);
	bench(0, 64, 32, 14, 3, reps);
	bench(0, 64, 16, 28, 1, reps);  // pointwise: one sgemm, no im2col
	bench(0, 64, 32, 14, 1, reps);
	// the rest of resnet8's: "-OC/s" where they differ from C, 1
	benchs(0, 64, 1, 16, 28, 3, 1, reps);
	benchs(0, 64, 16, 32, 28, 3, 2, reps);
	benchs(0, 64, 16, 32, 28, 1, 2, reps);
	benchs(0, 64, 32, 64, 14, 3, 2, reps);
	benchs(0, 64, 32, 64, 14, 1, 2, reps);
	bench(0, 64, 64, 7, 3, reps);
	return 0;
}
