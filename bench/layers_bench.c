/* layers_bench.c - the layer kernels' forward+backward time, one thread */
/* ISC licence, see LICENSE */
/*
 *   layers_bench [reps]                 the conv shapes of resnet8
 *   layers_bench --net SPEC [batch]     each node of a layer list, its
 *                                       forward and backward kernels, by
 *                                       kind, beside the whole step
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "layers.h"
#include "model.h"
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

/* ---- --net SPEC [batch]: each node's kernels, and the step ---- */

/* node i a ReLU in place on node i-1's output, a bn or an add (model.c) */
static int
fusedrelu(const struct spirt_model *m, int i)
{
	const struct spirt_node *d, *p;

	if (i <= 0 || i >= m->nnodes)
		return 0;
	d = &m->node[i], p = &m->node[i - 1];
	return d->kind == SPIRT_N_RELU && d->in == d->out && !d->accum &&
	    p->out == d->in && (p->kind == SPIRT_N_BN ||
	    p->kind == SPIRT_N_ADD);
}

#define NKINDS 16
struct kind {
	char name[24];
	double fwd, bwd;
	int n;
};

/*
 * The kernels of node i (the fast ones, as lib/model.c's layer list
 * calls them, a fused ReLU with its bn or add) forward (bwd 0) or
 * backward, on buffers of the right sizes
 */
static void
node_run(const struct spirt_model *m, int i, size_t B, int bwd, float **a,
    float *col, uint32_t *idx)
{
	const struct spirt_node *d = &m->node[i];
	size_t n = B * d->C * d->H * d->W, no = B * d->OC * d->OH * d->OW;
	float *x = a[0], *y = a[1], *dy = a[2], *dx = a[3], *w = a[4];
	float *gw = a[5], *mu = a[6], *rs = a[7], *x2 = a[8];
	int relu = fusedrelu(m, i + 1);
	struct spirt_conv2d g;

	switch (d->kind) {
	case SPIRT_N_CONV:
	case SPIRT_N_DW:
		if (spirt_conv2d_shape(&g, B, d->C, d->H, d->W, d->OC, d->k,
		    d->s, d->p) != 0)
			exit(70);
		if (d->kind == SPIRT_N_DW)
			bwd ? spirt_dwconv2d_backward(dx, gw, NULL, dy, x, w,
			    &g) : spirt_dwconv2d_forward(y, x, w, NULL, &g);
		else
			bwd ? spirt_conv2d_backward(dx, gw, NULL, col, dy, x,
			    w, &g) : spirt_conv2d_forward(y, col, x, w, NULL,
			    &g);
		break;
	case SPIRT_N_BN:
		if (bwd)
			relu ? spirt_bn_relu_backward(dx, gw, gw + d->C, dy, y,
			    x, mu, rs, w, d->C, B * d->H * d->W) :
			    spirt_bn_backward(dx, gw, gw + d->C, dy, x, mu, rs,
			    w, d->C, B * d->H * d->W);
		else
			(relu ? spirt_bn_relu_forward : spirt_bn_forward)(y,
			    mu, rs, NULL, NULL, x, w, w, d->C,
			    B * d->H * d->W, 0.1f, 1e-5f);
		break;
	case SPIRT_N_RELU:
		if (fusedrelu(m, i))
			break;
		bwd ? spirt_relu_backward(dy, dy, y, n) :
		    spirt_relu_forward(y, y, n);
		break;
	case SPIRT_N_ADD:
		if (bwd)
			relu ? spirt_residual_relu_backward(dx, x2, dy, y, n) :
			    spirt_residual_backward(dx, x2, dy, n);
		else
			(relu ? spirt_residual_relu_forward :
			    spirt_residual_forward)(y, x, x2, n);
		break;
	case SPIRT_N_GAP:
		bwd ? spirt_gap_backward(dx, dy, d->C * B, d->H * d->W) :
		    spirt_gap_forward(y, x, d->C * B, d->H * d->W);
		break;
	case SPIRT_N_DENSE:
		bwd ? spirt_dense_backward(dx, gw, gw + d->C * d->OC, dy, x,
		    w, B, d->C, d->OC) : spirt_dense_forward(y, x, w, w, B,
		    d->C, d->OC);
		break;
	case SPIRT_N_MAXPOOL:
		bwd ? spirt_maxpool2d_backward(dx, dy, idx, d->C * B, d->H,
		    d->W, d->k, d->s) : spirt_maxpool2d_forward(y, idx, x,
		    d->C * B, d->H, d->W, d->k, d->s);
		break;
	case SPIRT_N_AVGPOOL:
		bwd ? spirt_avgpool_backward(dx, dy, d->C * B, d->H, d->W,
		    d->k) : spirt_avgpool_forward(y, x, d->C * B, d->H, d->W,
		    d->k);
		break;
	default:                // flatten, dropout: copies
		memcpy(bwd ? dx : y, bwd ? dy : x, (n < no ? n : no) *
		    sizeof *x);
		break;
	}
}

/* the label node i's time adds to */
static void
node_kind(char *s, size_t len, const struct spirt_model *m, int i)
{
	static const char *names[] = { "", "conv", "dw", "bn", "relu",
		"maxpool", "avgpool", "gap", "flatten", "dense", "add",
		"dropout" };
	const struct spirt_node *d = &m->node[i];

	if (d->kind == SPIRT_N_CONV || d->kind == SPIRT_N_DW)
		snprintf(s, len, "%s%zux%zu s%zu", names[d->kind], d->k, d->k,
		    d->s);
	else
		snprintf(s, len, "%s%s", names[d->kind], fusedrelu(m, i + 1) ?
		    "+relu" : fusedrelu(m, i) ? " (fused)" : "");
}

static int
net_bench(const char *spec, size_t B, int reps)
{
	struct spirt_model m;
	struct spirt_ws *ws;
	struct spirt_sm64 r;
	struct kind k[NKINDS];
	struct spirt_conv2d g;
	size_t big = 0, wbig = 0, cbig = 1, i;
	float *a[9], *col, *p, *gr;
	uint32_t *idx;
	double sum = 0, step = 1e9, t0;
	int nk = 0, j, q, bwd, rep;

	if (spirt_model_parse(&m, spec) != 0 || m.kind != SPIRT_NET) {
		fprintf(stderr, "layers_bench: %s: not a layer list\n", spec);
		return 64;
	}
	for (j = 0; j < m.nnodes; j++) {
		const struct spirt_node *d = &m.node[j];
		size_t n = d->C * d->H * d->W, o = d->OC * d->OH * d->OW;
		big = n > big ? n : big, big = o > big ? o : big;
		wbig = d->wlen + d->blen + d->C > wbig ? d->wlen + d->blen +
		    d->C : wbig;
		if (d->kind == SPIRT_N_CONV && spirt_conv2d_shape(&g, B, d->C,
		    d->H, d->W, d->OC, d->k, d->s, d->p) == 0 &&
		    spirt_conv2d_colsize(&g) > cbig)
			cbig = spirt_conv2d_colsize(&g);
	}
	spirt_sm64_seed(&r, 37);
	for (q = 0; q < 9; q++)
		a[q] = rnd(&r, q == 4 || q == 5 ? wbig : B * big);
	for (i = 0; i < B * big; i++)   // rstd, and a variance > 0
		a[7][i] = 1.0f + a[7][i] * a[7][i];
	col = rnd(&r, cbig);
	idx = calloc(B * big, sizeof *idx);
	memset(k, 0, sizeof k);
	printf("%s batch=%zu, thread CPU ms, the least of %d runs\n", spec,
	    B, reps);
	for (j = 0; j < m.nnodes; j++) {
		char name[24];
		double t[2];
		for (bwd = 0; bwd < 2; bwd++) {
			t[bwd] = 1e9;
			for (rep = 0; rep < reps + 1; rep++) {
				t0 = cpu();
				node_run(&m, j, B, bwd, a, col, idx);
				t0 = cpu() - t0;
				if (rep > 0 && t0 < t[bwd])
					t[bwd] = t0;
			}
		}
		node_kind(name, sizeof name, &m, j);
		for (q = 0; q < nk && strcmp(k[q].name, name) != 0; q++)
			;
		if (q == nk && nk < NKINDS)
			snprintf(k[nk++].name, sizeof k[0].name, "%s", name);
		if (q < nk)
			k[q].fwd += t[0], k[q].bwd += t[1], k[q].n++;
		sum += t[0] + t[1];
		printf("node %2d %-14s %3zux%2zux%-2zu -> %3zux%2zux%-2zu "
		    "fwd %7.3f bwd %7.3f\n", j, name, m.node[j].C,
		    m.node[j].H, m.node[j].W, m.node[j].OC, m.node[j].OH,
		    m.node[j].OW, 1e3 * t[0], 1e3 * t[1]);
	}
	printf("\n%-16s %5s %8s %8s %8s %6s\n", "kind", "nodes", "fwd", "bwd",
	    "total", "share");
	for (q = 0; q < nk; q++)
		printf("%-16s %5d %8.3f %8.3f %8.3f %5.1f%%\n", k[q].name,
		    k[q].n, 1e3 * k[q].fwd, 1e3 * k[q].bwd,
		    1e3 * (k[q].fwd + k[q].bwd),
		    100 * (k[q].fwd + k[q].bwd) / sum);
	// the whole step, as bench/grad_bench times it (thread CPU time)
	if (spirt_ws_new(&ws, &m, B, SPIRT_WS_TRAIN) != 0)
		return 70;
	p = malloc(m.nparams * sizeof *p), gr = malloc(m.nparams * sizeof *gr);
	if (p == NULL || gr == NULL)
		return 70;
	spirt_model_init(&m, p, 1);
	for (i = 0; i < B * m.nin; i++)
		spirt_ws_input(ws)[i] = (float)spirt_sm64_uniform(&r);
	for (i = 0; i < B; i++)
		spirt_ws_labels(ws)[i] = (int32_t)spirt_sm64_below(&r,
		    m.nclass);
	for (rep = 0; rep < reps + 1; rep++) {
		t0 = cpu();
		spirt_model_forward(ws, &m, p, B);
		spirt_model_backward(ws, &m, p, gr, B);
		t0 = cpu() - t0;
		if (rep > 0 && t0 < step)
			step = t0;
	}
	printf("sum of the nodes' kernels %.3f ms; the step "
	    "(spirt_model_forward + _backward) %.3f\n", 1e3 * sum, 1e3 * step);
	spirt_ws_free(ws);
	for (q = 0; q < 9; q++)
		free(a[q]);
	free(col), free(idx), free(p), free(gr);
	return 0;
}

int
main(int argc, char **argv)
{
	int net = argc > 2 && strcmp(argv[1], "--net") == 0;
	int reps = !net && argc > 1 ? atoi(argv[1]) : net ? 15 : 50;

	if (reps < 1)
		reps = 1;
	if (blas_load(1) != 0) {
		fprintf(stderr, "layers_bench: OpenBLAS: %s\n",
		    spirt_blas_error());
		return 69;
	}
	if (net)        // --net SPEC [batch]
		return net_bench(argv[2], argc > 3 ? (size_t)atoi(argv[3]) :
		    64, reps);
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
