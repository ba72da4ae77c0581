/* conv.c - the convolutions: conv2d (im2col or phase planes + sgemm, or
 * a direct 3x3 kernel) and depthwise, each with its naive twin
 * (layers.h); the other layers are layers.c's */
/* ISC licence, see LICENSE */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "layers.h"
#include "rng.h"
#include "vec.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* ---- conv2d ---- */

int
spirt_conv2d_shape(struct spirt_conv2d *g, size_t B, size_t C, size_t H,
    size_t W, size_t OC, size_t k, size_t s, size_t p)
{
	if (B == 0 || C == 0 || H == 0 || W == 0 || OC == 0 || k == 0 ||
	    s == 0 || H + 2 * p < k || W + 2 * p < k)
		return SPIRT_EINVAL;
	g->B = B, g->C = C, g->H = H, g->W = W, g->OC = OC;
	g->k = k, g->s = s, g->p = p;
	g->OH = (H + 2 * p - k) / s + 1;
	g->OW = (W + 2 * p - k) / s + 1;
	return 0;
}

/*
 * The im2col matrix of the whole batch (C*k*k rows of B*OH*OW) is tens of
 * MB for a batch of 64; built, multiplied and scattered a chunk of
 * samples at a time it stays in the L2 cache (bench/layers_bench: the
 * 3x3 16x28x28 convolution at batch 64, 23 ms with the whole matrix).
 * A chunk holds COLCHUNK floats at most, one sample at least; but the
 * narrow maps' chunks (14x14, 7x7: 2 and 4 samples of 512 KB) made
 * products too short for OpenBLAS, whose packing and the beta pass over
 * the weight gradient came with each chunk: those take MINCOLS output
 * pixels a chunk at least (32 samples of 7x7, 8 of 14x14; resnet8's
 * workspace 0.6 -> 3.8 MB).  bench/layers_bench --net, 3 rounds at load
 * 14-21: the 64x7x7 layer's forward 3.5-4.0 -> 3.3-3.4 ms, the 32x14x14
 * stride-2 layer's backward 4.0-4.5 -> 3.5-3.7, the others within their
 * noise.  The weight gradient's sum over the chunks is in another order:
 * other bits than before.
 */
#define COLCHUNK (128 * 1024)
#define MINCOLS 1568

/*
 * Of stride 1, and when the padded width Wp = W + 2p exceeds OW by 10% at
 * most, im2col's rows are copied whole from a padded copy of the chunk's
 * input (C, nb, Hp, Wp): over the output grid OH x Wp, whose columns
 * OW .. Wp-1 are junk, computed and dropped, tap (ky,kx) of pixel j =
 * oy*Wp + ox reads the padded plane at j + ky*Wp + kx, so a row of
 * im2col is one run of OH*Wp floats instead of OH runs of OW with their
 * padding.  The gradient takes the same road back: dout's rows widened
 * with zeros in the junk columns, whose products are then exactly 0
 * wherever col2im adds them.  bench/layers_bench: resnet8's 3x3
 * convolutions on 28x28 maps (Wp/OW = 30/28) about 10% faster; on 14x14
 * (16/14) and 7x7 (9/7) the wider products cost what the copies gain.
 */
static int
wide(const struct spirt_conv2d *g)
{
	size_t Wp = g->W + 2 * g->p;

	return g->s == 1 && g->k > 1 && 10 * (Wp - g->OW) <= g->OW;
}

/* floats of a sample's im2col columns: OH * (Wp or OW) */
static size_t
cols(const struct spirt_conv2d *g)
{
	return g->OH * (wide(g) ? g->W + 2 * g->p : g->OW);
}

static size_t
chunk(const struct spirt_conv2d *g)
{
	size_t per = g->C * g->k * g->k * cols(g), nb;

	nb = COLCHUNK / per;
	if (!wide(g) && nb * cols(g) < MINCOLS)
		nb = (MINCOLS + cols(g) - 1) / cols(g);
	return nb < 1 ? 1 : nb > g->B ? g->B : nb;
}

/* of a stride s > 1: the width of a phase plane, ceil(W / s) */
static size_t
phw(const struct spirt_conv2d *g)
{
	return (g->W + g->s - 1) / g->s;
}

/* the phase planes (sim2col) pay where the taps read every phase */
static int
phased(const struct spirt_conv2d *g)
{
	return g->s > 1 && g->k >= g->s;
}

/*
 * The workspace of a chunk of nb samples, in floats: im2col (K, nb*Q),
 * the wide path's padded input (C, nb, Hp, Wp) and k floats of slack (the
 * junk columns of the last row read past it) and its product on the wide
 * grid (OC, nb*Q), or a stride's phase planes (C, nb, s, H, ceil(W/s)),
 * then backward's transposed weight gradient (K, OC).
 */
struct convws {
	size_t nb, Q, K, Hp, Wp;
	float *col, *xp, *y, *dwt;
};

static size_t
convws(struct convws *w, float *col, const struct spirt_conv2d *g)
{
	size_t xp, y, dwt;

	w->nb = chunk(g);
	w->Q = cols(g);
	w->K = g->C * g->k * g->k;
	w->Hp = g->H + 2 * g->p, w->Wp = g->W + 2 * g->p;
	xp = y = dwt = w->K * w->nb * w->Q;
	if (wide(g)) {
		y = xp + g->C * w->nb * w->Hp * w->Wp + g->k;
		dwt = y + g->OC * w->nb * w->Q;
	} else if (phased(g)) {
		dwt = xp + g->C * w->nb * g->s * g->s * ((g->H + g->s - 1) /
		    g->s) * phw(g);
	}
	if (col != NULL) {
		w->col = col, w->xp = col + xp;
		w->y = col + y, w->dwt = col + dwt;
	}
	return dwt + w->K * g->OC;
}

static size_t dsize(const struct spirt_conv2d *);
static int direct(const struct spirt_conv2d *);

/* the direct 3x3 path's (its reordered weights (K, OC), then dsize())
 * or im2col's for the weight gradient, whichever is larger */
size_t
spirt_conv2d_colsize(const struct spirt_conv2d *g)
{
	struct convws w;

	size_t n = convws(&w, NULL, g);

	if (direct(g) && 9 * g->C * g->OC + dsize(g) > n)
		return 9 * g->C * g->OC + dsize(g);
	return n;
}

/*
 * The outputs o in [*lo, *hi) of n whose tap t lands inside [0, len):
 * 0 <= o*s + t - p < len.
 */
static void
span(size_t *lo, size_t *hi, size_t n, size_t t, size_t s, size_t p,
    size_t len)
{
	size_t l = 0, h;

	if (p > t)
		l = (p - t + s - 1) / s;
	if (len + p <= t)
		h = 0;
	else
		h = (len + p - t - 1) / s + 1;
	if (h > n)
		h = n;
	if (l > h)
		l = h;
	*lo = l, *hi = h;
}

/*
 * A "same" convolution of stride 1 (W == OW): the rows oy in [ylo, yhi)
 * of tap (ky,kx) in a sample's plane are one run of the input, shifted
 * by (ky-p)*W + kx-p, but for the columns outside [xlo, xhi), which read
 * the neighbouring rows' edge pixels there and are zeroed after: one
 * copy instead of a loop per row of 14 or 7 pixels (resnet8's 14x14 and
 * 7x7 maps, narrower than the wide path pays for).
 */
static int
same(const struct spirt_conv2d *g)
{
	return g->s == 1 && g->OW == g->W;
}

static void
block(float *d, const float *pl, const struct spirt_conv2d *g, size_t ky,
    size_t kx, size_t ylo, size_t yhi, size_t xlo, size_t xhi)
{
	size_t W = g->W, OH = g->OH, a = ylo * W + xlo, e = (yhi - 1) * W + xhi;
	size_t off = a + ky * W + kx - g->p * W - g->p, oy, ox;

	memset(d, 0, a * sizeof *d);
	// d[j] = pl[j + (ky-p)*W + kx-p] for j in [a, e), all inside pl
	memcpy(d + a, pl + off, (e - a) * sizeof *d);
	memset(d + e, 0, (OH * W - e) * sizeof *d);
	for (oy = ylo; oy < yhi; oy++) {
		for (ox = 0; ox < xlo; ox++)
			d[oy * W + ox] = 0.0f;
		for (ox = xhi; ox < W; ox++)
			d[oy * W + ox] = 0.0f;
	}
}

void
spirt_im2col_sp(float *col, const float *inp, const struct spirt_conv2d *g,
    size_t b0, size_t nb)
{
	size_t k = g->k, s = g->s, p = g->p, H = g->H, W = g->W;
	size_t OH = g->OH, OW = g->OW, N = nb * OH * OW;
	size_t c, ky, kx, b, oy, ox, ylo, yhi, xlo, xhi;

	for (c = 0; c < g->C; c++)
	for (ky = 0; ky < k; ky++) {
		span(&ylo, &yhi, OH, ky, s, p, H);
		for (kx = 0; kx < k; kx++) {
			float *d = col + ((c * k + ky) * k + kx) * N;
			span(&xlo, &xhi, OW, kx, s, p, W);
			for (b = b0; b < b0 + nb; b++) {
				const float *pl = inp + (c * g->B + b) * H * W;
				if (same(g) && xlo < xhi && ylo < yhi) {
					block(d, pl, g, ky, kx, ylo, yhi, xlo,
					    xhi);
					d += OH * OW;
					continue;
				}
				for (oy = 0; oy < OH; oy++, d += OW) {
					const float *r;
					if (oy < ylo || oy >= yhi ||
					    xlo == xhi) {
						memset(d, 0, OW * sizeof *d);
						continue;
					}
					r = pl + (oy * s + ky - p) * W + kx - p;
					for (ox = 0; ox < xlo; ox++)
						d[ox] = 0.0f;
					if (s == 1)
						for (ox = xlo; ox < xhi; ox++)
							d[ox] = r[ox];
					else
						for (ox = xlo; ox < xhi; ox++)
							d[ox] = r[ox * s];
					for (ox = xhi; ox < OW; ox++)
						d[ox] = 0.0f;
				}
			}
		}
	}
}

void
spirt_col2im_sp(float *dinp, const float *dcol, const struct spirt_conv2d *g,
    size_t b0, size_t nb)
{
	size_t k = g->k, s = g->s, p = g->p, H = g->H, W = g->W;
	size_t OH = g->OH, OW = g->OW, N = nb * OH * OW;
	size_t c, ky, kx, b, oy, ox, ylo, yhi, xlo, xhi;

	for (c = 0; c < g->C; c++)
		memset(dinp + (c * g->B + b0) * H * W, 0,
		    nb * H * W * sizeof *dinp);
	for (c = 0; c < g->C; c++)
	for (ky = 0; ky < k; ky++) {
		span(&ylo, &yhi, OH, ky, s, p, H);
		for (kx = 0; kx < k; kx++) {
			const float *d = dcol + ((c * k + ky) * k + kx) * N;
			span(&xlo, &xhi, OW, kx, s, p, W);
			for (b = 0; b < nb; b++) {
				float *pl = dinp + (c * g->B + b0 + b) * H * W;
				for (oy = ylo; oy < yhi; oy++) {
					const float *q = d + (b * OH + oy) * OW;
					float *r = pl + (oy * s + ky - p) * W +
					    kx - p;
					if (s == 1)
						for (ox = xlo; ox < xhi; ox++)
							r[ox] += q[ox];
					else
						for (ox = xlo; ox < xhi; ox++)
							r[ox * s] += q[ox];
				}
			}
		}
	}
}

/*
 * A stride s > 1 (and k >= s, so that the taps read every phase): each
 * plane dealt into s*s phase planes first, pixel (y,x) to plane (y % s,
 * x % s) at (y/s, x/s), of Hh = ceil(H/s) rows of Wh = ceil(W/s).  Tap
 * (ky,kx) of output pixel (oy,ox) then reads one phase plane at (oy +
 * shy, ox + shx), a shift of the whole plane, not a gather of stride s:
 * where OW == Wh (resnet8's stride-2 layers) a tap's rows in a sample are
 * one copy, the columns that wrapped onto the neighbouring rows zeroed
 * after, as block() does for stride 1.  The same values as
 * spirt_im2col_sp; the adjoint adds into the phase planes in
 * spirt_col2im_sp's order (c, ky, kx, b, oy) before they are dealt back,
 * so that each pixel gets the same sum, bit for bit.
 */
static size_t
phh(const struct spirt_conv2d *g)
{
	return (g->H + g->s - 1) / g->s;
}

static float *
phase(const struct convws *w, const struct spirt_conv2d *g, size_t c,
    size_t b, size_t py, size_t px)
{
	return w->xp + (((c * w->nb + b) * g->s + py) * g->s + px) * phh(g) *
	    phw(g);
}

/* tap t: its phase, and the shift of o in that phase (floor) */
static void
phtap(size_t *ph, ptrdiff_t *sh, const struct spirt_conv2d *g, size_t t)
{
	ptrdiff_t d = (ptrdiff_t)t - (ptrdiff_t)g->p, s = (ptrdiff_t)g->s;

	*ph = (size_t)(((d % s) + s) % s);
	*sh = (d - (ptrdiff_t)*ph) / s;
}

/*
 * deal the planes of samples b0 .. b0+nb-1 of inp into the phase planes,
 * or (inp NULL) gather the phase planes back into those of out
 */
static void
deal(float *out, const float *inp, const struct convws *w,
    const struct spirt_conv2d *g, size_t b0, size_t nb)
{
	size_t s = g->s, H = g->H, W = g->W, Wh = phw(g), c, b, py, px, y, i;

	if (inp != NULL && (H % s != 0 || W % s != 0))  // the edges read
		memset(w->xp, 0, g->C * w->nb * s * s * phh(g) * Wh *
		    sizeof *w->xp);                     // (zeroed after)
	for (c = 0; c < g->C; c++)
	for (b = 0; b < nb; b++) {
		size_t o = (c * g->B + b0 + b) * H * W;
		for (py = 0; py < s && py < H; py++)
		for (px = 0; px < s && px < W; px++) {
			float *q = phase(w, g, c, b, py, px);
			size_t nx = (W - px + s - 1) / s;
			for (y = py; y < H; y += s, q += Wh) {
				size_t r = o + y * W + px;
				if (inp != NULL)
					for (i = 0; i < nx; i++)
						q[i] = inp[r + i * s];
				else
					for (i = 0; i < nx; i++)
						out[r + i * s] = q[i];
			}
		}
	}
}

static void
sim2col(float *col, const struct convws *w, const float *inp,
    const struct spirt_conv2d *g, size_t b0, size_t nb)
{
	size_t k = g->k, s = g->s, p = g->p, Wh = phw(g);
	size_t OH = g->OH, OW = g->OW, N = nb * OH * OW;
	size_t c, ky, kx, b, oy, ox, py, px, ylo, yhi, xlo, xhi;
	ptrdiff_t shy, shx;

	deal(NULL, inp, w, g, b0, nb);
	for (c = 0; c < g->C; c++)
	for (ky = 0; ky < k; ky++) {
		span(&ylo, &yhi, OH, ky, s, p, g->H);
		phtap(&py, &shy, g, ky);
		for (kx = 0; kx < k; kx++) {
			float *d = col + ((c * k + ky) * k + kx) * N;
			span(&xlo, &xhi, OW, kx, s, p, g->W);
			phtap(&px, &shx, g, kx);
			for (b = 0; b < nb; b++, d += OH * OW) {
				const float *pl = phase(w, g, c, b, py, px);
				size_t a = ylo * OW + xlo, e;
				if (ylo >= yhi || xlo >= xhi) {
					memset(d, 0, OH * OW * sizeof *d);
					continue;
				}
				if (OW == Wh) {         // one run, as block()
					e = (yhi - 1) * OW + xhi;
					memset(d, 0, a * sizeof *d);
					memcpy(d + a, pl + ((ptrdiff_t)a + shy *
					    (ptrdiff_t)Wh + shx), (e - a) *
					    sizeof *d);
					memset(d + e, 0, (OH * OW - e) *
					    sizeof *d);
					for (oy = ylo; oy < yhi; oy++) {
						for (ox = 0; ox < xlo; ox++)
							d[oy * OW + ox] = 0.0f;
						for (ox = xhi; ox < OW; ox++)
							d[oy * OW + ox] = 0.0f;
					}
					continue;
				}
				for (oy = 0; oy < OH; oy++) {
					float *q = d + oy * OW;
					const float *r;
					if (oy < ylo || oy >= yhi) {
						for (ox = 0; ox < OW; ox++)
							q[ox] = 0.0f;
						continue;
					}
					// (oy + shy, xlo + shx), inside pl
					r = pl + ((ptrdiff_t)(oy * Wh + xlo) +
					    shy * (ptrdiff_t)Wh + shx);
					for (ox = 0; ox < xlo; ox++)
						q[ox] = 0.0f;
					for (ox = xlo; ox < xhi; ox++)
						q[ox] = r[ox - xlo];
					for (ox = xhi; ox < OW; ox++)
						q[ox] = 0.0f;
				}
			}
		}
	}
}

static void
scol2im(float *dinp, const struct convws *w, const float *dcol,
    const struct spirt_conv2d *g, size_t b0, size_t nb)
{
	size_t k = g->k, s = g->s, p = g->p, Wh = phw(g);
	size_t OH = g->OH, OW = g->OW, N = nb * OH * OW;
	size_t c, ky, kx, b, oy, ox, py, px, ylo, yhi, xlo, xhi;
	ptrdiff_t shy, shx;

	memset(w->xp, 0, g->C * w->nb * s * s * phh(g) * Wh * sizeof *w->xp);
	for (c = 0; c < g->C; c++)
	for (ky = 0; ky < k; ky++) {
		span(&ylo, &yhi, OH, ky, s, p, g->H);
		phtap(&py, &shy, g, ky);
		for (kx = 0; kx < k; kx++) {
			const float *d = dcol + ((c * k + ky) * k + kx) * N;
			span(&xlo, &xhi, OW, kx, s, p, g->W);
			phtap(&px, &shx, g, kx);
			for (b = 0; b < nb; b++) {
				float *pl = phase(w, g, c, b, py, px);
				for (oy = ylo; oy < yhi; oy++) {
					const float *q = d + (b * OH + oy) * OW;
					float *r = pl + ((ptrdiff_t)(oy * Wh +
					    xlo) + shy * (ptrdiff_t)Wh + shx);
					for (ox = xlo; ox < xhi; ox++)
						r[ox - xlo] += q[ox];
				}
			}
		}
	}
	deal(dinp, NULL, w, g, b0, nb);
}

/* the wide path: xp gets the padded planes of samples b0 .. b0+nb-1 */
static void
wpack(const struct convws *w, const float *inp, const struct spirt_conv2d *g,
    size_t b0, size_t nb)
{
	size_t p = g->p, H = g->H, W = g->W, pl = w->Hp * w->Wp, c, b, y;

	memset(w->xp, 0, (g->C * nb * pl + g->k) * sizeof *w->xp);
	for (c = 0; c < g->C; c++)
	for (b = 0; b < nb; b++) {
		const float *in = inp + (c * g->B + b0 + b) * H * W;
		float *d = w->xp + (c * nb + b) * pl + p * w->Wp + p;
		for (y = 0; y < H; y++)
			memcpy(d + y * w->Wp, in + y * W, W * sizeof *d);
	}
}

/* its adjoint: dinp's planes of those samples overwritten */
static void
wunpack(float *dinp, const struct convws *w, const struct spirt_conv2d *g,
    size_t b0, size_t nb)
{
	size_t p = g->p, H = g->H, W = g->W, pl = w->Hp * w->Wp, c, b, y;

	for (c = 0; c < g->C; c++)
	for (b = 0; b < nb; b++) {
		float *d = dinp + (c * g->B + b0 + b) * H * W;
		const float *q = w->xp + (c * nb + b) * pl + p * w->Wp + p;
		for (y = 0; y < H; y++)
			memcpy(d + y * W, q + y * w->Wp, W * sizeof *d);
	}
}

/* col (K, nb*Q): row (c,ky,kx) of sample b, the plane's run from tap */
static void
wim2col(const struct convws *w, const struct spirt_conv2d *g, size_t nb)
{
	size_t k = g->k, pl = w->Hp * w->Wp, c, ky, kx, b;
	float *d = w->col;

	for (c = 0; c < g->C; c++)
	for (ky = 0; ky < k; ky++)
	for (kx = 0; kx < k; kx++)
	for (b = 0; b < nb; b++, d += w->Q)
		memcpy(d, w->xp + (c * nb + b) * pl + ky * w->Wp + kx,
		    w->Q * sizeof *d);
}

/* its adjoint: the padded planes (zeroed first) get col's rows added */
static void
wcol2im(const struct convws *w, const struct spirt_conv2d *g, size_t nb)
{
	size_t k = g->k, pl = w->Hp * w->Wp, c, ky, kx, b, i;
	const float *d = w->col;

	memset(w->xp, 0, (g->C * nb * pl + k) * sizeof *w->xp);
	for (c = 0; c < g->C; c++)
	for (ky = 0; ky < k; ky++)
	for (kx = 0; kx < k; kx++)
	for (b = 0; b < nb; b++, d += w->Q) {
		float *q = w->xp + (c * nb + b) * pl + ky * w->Wp + kx;
		for (i = 0; i < w->Q; i++)
			q[i] += d[i];
	}
}

/*
 * A direct 3x3 convolution of stride 1 and padding 1, without im2col or
 * sgemm, for the forward pass and the input's gradient: OpenBLAS runs
 * resnet8's products (M = OC = 16 .. 64 rows, K = 9C) at 43-87 GFLOP/s,
 * packing the long im2col matrix each call, where this kernel keeps 4
 * output channels x 64 pixels in registers (AVX-512: 16 accumulators)
 * and reads each input vector once for 4 products (tiles of 8 x 32,
 * 5 x 48, 3 x 80 and 2 x 128 measured slower here).  A sample's planes
 * are padded into rows of Wp = W + 1 (the one zero column is the right
 * pad of a row and the left pad of the next) between a zero row above
 * and below, one zero float before: over the output grid OH x Wp (its
 * last column junk, dropped), tap (ky,kx) of pixel j = oy*Wp + ox reads
 * the padded plane at j + ky*Wp + kx, a run of floats, so that a tile of
 * pixels is a plain vector load a tap.  Each output is 0 + the products
 * in (c, ky, kx) order, the bias added last, lane by lane, without FMA
 * (config.mk): the same bits whatever the tile or the x86-64 level
 * (test_layers compares the levels' bytes).  The input's gradient is the
 * same convolution of dout, the weights' taps flipped and their channels
 * swapped.  The weight gradient stays im2col + sgemm but for a small C
 * (dsmall()).  bench/layers_bench --net resnet8:1x28x28-10 (thread CPU
 * time, the least of 3 x 15 runs, load 19-27): the 16x28x28 layers'
 * forward 4.07 -> 3.21 ms, input gradient 4.4 -> 3.4; 32x14x14 forward
 * 3.69 -> 3.36; the stem (1 -> 16) forward 0.43 -> 0.33, backward 0.63
 * -> 0.42; 64x7x7 within the noise (docs/performance.md).  An earlier
 * try with im2col's padded rows, tiles of 48 pixels and the chunked
 * workspace had lost on 7x7 maps.
 */
#define DTILE 16        // the grid's pixels a multiple of this

static int
direct(const struct spirt_conv2d *g)
{
#ifdef SPIRT_VEC
	return g->k == 3 && g->s == 1 && g->p == 1;
#else
	return 0;
#endif
}

/*
 * Its weight gradient only for a small C (resnet8's stem: 0.37 against
 * im2col + sgemm's 0.65 ms at batch 64): from 16 channels on, 16x28x28
 * 5.0-5.4 against 4.2-5.0, 32x14x14 6.7 against 3.7-4.3, 64x7x7 13.0
 * against 3.4-3.6 (bench/layers_bench --net, 3 rounds, load 17-19),
 * sgemm's blocking beats the kernel's 18 accumulators and the lanes
 * summed per sample.
 */
static int
dsmall(const struct spirt_conv2d *g)
{
	return direct(g) && g->C <= 3;
}

/* the direct path's padded plane: Wp, and its output grid rounded up */
static size_t
dwp(const struct spirt_conv2d *g)
{
	return g->W + 1;
}

static size_t
dgrid(const struct spirt_conv2d *g)
{
	return (g->OH * dwp(g) + DTILE - 1) / DTILE * DTILE;
}

/* floats of a padded plane: the grid's last tile reads 2 rows + 2 past */
static size_t
dplane(const struct spirt_conv2d *g)
{
	size_t a = 1 + (g->H + 2) * dwp(g), b = dgrid(g) + 2 * dwp(g) + 2;

	return ((a > b ? a : b) + 15) / 16 * 16;
}

/* its workspace: the reordered weights, a sample's planes, its grid */
static size_t
dsize(const struct spirt_conv2d *g)
{
	size_t ch = g->C > g->OC ? g->C : g->OC;

	return 9 * g->C * g->OC + ch * (dplane(g) + dgrid(g));
}

#ifdef SPIRT_VEC
typedef float vf16 __attribute__((vector_size(64)));

/*
 * Output channels [o0, o0 + OB) of the pixels [j, j + PX) of y (OC, Q),
 * from the padded planes xp (C, ps) and the weights wt (C, 9, OC).
 */
#define DLD(v, p) memcpy(&(v), (p), sizeof(v))
#define UNROLL _Pragma("GCC unroll 9")
SPIRT_KERNEL void
dtile(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t o0, size_t j, size_t OB,
    size_t PX)
{
	static const unsigned char ky[9] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
	vf16 a[4][4], x[4];
	size_t c, t, q, v, nv = PX / 16;

	// unrolled whole, so that the accumulators live in registers
	UNROLL
	for (q = 0; q < OB; q++)
		UNROLL
		for (v = 0; v < nv; v++)
			a[q][v] = (vf16){ 0 };
	for (c = 0; c < C; c++) {
		const float *xc = xp + c * ps + j, *wc = wt + c * 9 * OC + o0;
		for (t = 0; t < 9; t++) {
			const float *xt = xc + ky[t] * Wp + t % 3;
			const float *w = wc + t * OC;
			UNROLL
			for (v = 0; v < nv; v++)
				DLD(x[v], xt + 16 * v);
			UNROLL
			for (q = 0; q < OB; q++)
				UNROLL
				for (v = 0; v < nv; v++)
					a[q][v] += w[q] * x[v];
		}
	}
	UNROLL
	for (q = 0; q < OB; q++)
		UNROLL
		for (v = 0; v < nv; v++)
			memcpy(y + (o0 + q) * Q + j + 16 * v, &a[q][v],
			    sizeof a[q][v]);
}

/*
 * y (OC, Q) of one sample's padded planes; tiles of OB channels x PX
 * pixels, the channels that do not fill a tile one at a time
 */
SPIRT_KERNEL void
dconv_k(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t OB, size_t PX)
{
	size_t o, j, ob;

	for (o = 0; o < OC; o += ob) {
		ob = o + OB <= OC ? OB : 1;
		for (j = 0; j + PX <= Q; j += PX)
			if (ob == OB)
				dtile(y, Q, xp, ps, wt, C, OC, Wp, o, j, OB,
				    PX);
			else
				dtile(y, Q, xp, ps, wt, C, OC, Wp, o, j, 1,
				    PX);
		// the grid's last 16 .. PX - 16 pixels (Q a multiple of 16)
		for (; j < Q; j += 16)
			if (ob == OB)
				dtile(y, Q, xp, ps, wt, C, OC, Wp, o, j, OB,
				    16);
			else
				dtile(y, Q, xp, ps, wt, C, OC, Wp, o, j, 1,
				    16);
	}
}

/* the tile's size by level: its accumulators fill the registers */
static void
dconv_base(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp)
{
	dconv_k(y, Q, xp, ps, wt, C, OC, Wp, 2, 16);
}

SPIRT_AVX2 static void
dconv_avx2(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp)
{
	dconv_k(y, Q, xp, ps, wt, C, OC, Wp, 4, 16);
}

SPIRT_AVX512 static void
dconv_avx512(float *y, size_t Q, const float *xp, size_t ps,
    const float *wt, size_t C, size_t OC, size_t Wp)
{
	dconv_k(y, Q, xp, ps, wt, C, OC, Wp, 4, 64);
}

/*
 * The same sums with the vectors across output channels instead: a tile
 * is PT pixels of an output row x OV vectors of 16 channels, a tap a
 * vector load of the weights (wt's rows are channels-last) and a
 * broadcast of each pixel; no lane computes a junk pixel, which on 7x7
 * maps are 15 of the pixel tiles' 64 (OC a multiple of 16).  The
 * products and their order are those of dtile(): the same bits.
 */
SPIRT_KERNEL void
ctile(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t o0, size_t j, size_t OV,
    size_t PT)
{
	static const unsigned char ky[9] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
	vf16 a[2][7], w[2];
	float f[16];
	size_t c, t, p, v, l;

	UNROLL
	for (v = 0; v < OV; v++)
		UNROLL
		for (p = 0; p < PT; p++)
			a[v][p] = (vf16){ 0 };
	for (c = 0; c < C; c++) {
		const float *xc = xp + c * ps + j, *wc = wt + c * 9 * OC + o0;
		for (t = 0; t < 9; t++) {
			const float *xt = xc + ky[t] * Wp + t % 3;
			UNROLL
			for (v = 0; v < OV; v++)
				DLD(w[v], wc + t * OC + 16 * v);
			UNROLL
			for (p = 0; p < PT; p++)
				UNROLL
				for (v = 0; v < OV; v++)
					a[v][p] += w[v] * xt[p];
		}
	}
	for (v = 0; v < OV; v++)
		for (p = 0; p < PT; p++) {
			memcpy(f, &a[v][p], sizeof f);
			for (l = 0; l < 16; l++)
				y[(o0 + 16 * v + l) * Q + j + p] = f[l];
		}
}

/* y (OC, Q) of one sample, OC a multiple of 16, OH rows of W pixels */
SPIRT_KERNEL void
cconv_k(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t OH, size_t OV, size_t PT)
{
	size_t o, oy, x, ov;

	for (o = 0; o < OC; o += 16 * ov) {
		ov = o + 16 * OV <= OC ? OV : 1;
		for (oy = 0; oy < OH; oy++) {
			size_t j = oy * Wp;
			for (x = 0; x + PT <= Wp - 1; x += PT)
				if (ov == OV)
					ctile(y, Q, xp, ps, wt, C, OC, Wp, o,
					    j + x, OV, PT);
				else
					ctile(y, Q, xp, ps, wt, C, OC, Wp, o,
					    j + x, 1, PT);
			for (; x < Wp - 1; x++)         // the row's rest
				if (ov == OV)
					ctile(y, Q, xp, ps, wt, C, OC, Wp, o,
					    j + x, OV, 1);
				else
					ctile(y, Q, xp, ps, wt, C, OC, Wp, o,
					    j + x, 1, 1);
		}
	}
}

static void
cconv_base(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t OH)
{
	cconv_k(y, Q, xp, ps, wt, C, OC, Wp, OH, 1, 2);
}

SPIRT_AVX2 static void
cconv_avx2(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t OH)
{
	cconv_k(y, Q, xp, ps, wt, C, OC, Wp, OH, 1, 4);
}

SPIRT_AVX512 static void
cconv_avx512(float *y, size_t Q, const float *xp, size_t ps,
    const float *wt, size_t C, size_t OC, size_t Wp, size_t OH)
{
	cconv_k(y, Q, xp, ps, wt, C, OC, Wp, OH, 2, 7);
}

/*
 * By pixels, or by channels where the pixel tiles would waste more than
 * a fifth of their lanes (OC a multiple of 16): bench/layers_bench --net
 * resnet8 (3 interleaved rounds, load 22-26), 64x7x7 (15 of 64 lanes
 * junk) forward 3.33-3.78 ms by channels against 3.71-3.91 by pixels,
 * its input's gradient 3.27-3.35 against 3.99-5.1; 32x14x14 (28 of 224)
 * 3.6-3.7 against 3.3-3.5 the other way; 16x28x28 even; the stem (16
 * output channels from 1) 0.59-0.73 against 0.28.
 */
static void
dconv(float *y, size_t Q, const float *xp, size_t ps, const float *wt,
    size_t C, size_t OC, size_t Wp, size_t OH)
{
	if (OC % 16 == 0 && 5 * (Q - OH * (Wp - 1)) > Q) {
		switch (spirt_isa()) {
		case SPIRT_ISA_AVX512:
			cconv_avx512(y, Q, xp, ps, wt, C, OC, Wp, OH);
			break;
		case SPIRT_ISA_AVX2:
			cconv_avx2(y, Q, xp, ps, wt, C, OC, Wp, OH);
			break;
		default:
			cconv_base(y, Q, xp, ps, wt, C, OC, Wp, OH);
			break;
		}
		return;
	}
	switch (spirt_isa()) {
	case SPIRT_ISA_AVX512: dconv_avx512(y, Q, xp, ps, wt, C, OC, Wp); break;
	case SPIRT_ISA_AVX2: dconv_avx2(y, Q, xp, ps, wt, C, OC, Wp); break;
	default: dconv_base(y, Q, xp, ps, wt, C, OC, Wp); break;
	}
}

/*
 * The weight gradient of one sample, added to dweight (OC, C, 9) (set if
 * first): dweight[o][c][t] += the sum over the grid's pixels j of dy[o][j]
 * * xp[c][j + tap t's shift], dy (OC, Q) dout on the grid with 0 in the
 * junk column and past it.  A tile: OB output channels x the 9 taps of
 * one input channel, 16 pixels a step, so that a step loads OB + 9
 * vectors for 9 OB products; each lane sums its pixels in order, then
 * the 16 lanes are added in order, then the samples in order: the same
 * bits at every level.
 */
SPIRT_KERNEL void
dwtile(float *dweight, const float *dy, size_t Q, const float *xp,
    size_t ps, size_t C, size_t Wp, size_t o0, size_t c, size_t OB,
    int first)
{
	static const unsigned char ky[9] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
	vf16 a[2][9], d[2], x;
	size_t q, t, j, l;

	UNROLL
	for (q = 0; q < OB; q++)
		UNROLL
		for (t = 0; t < 9; t++)
			a[q][t] = (vf16){ 0 };
	for (j = 0; j < Q; j += 16) {
		const float *xc = xp + c * ps + j;
		UNROLL
		for (q = 0; q < OB; q++)
			DLD(d[q], dy + (o0 + q) * Q + j);
		UNROLL
		for (t = 0; t < 9; t++) {
			DLD(x, xc + ky[t] * Wp + t % 3);
			UNROLL
			for (q = 0; q < OB; q++)
				a[q][t] += d[q] * x;
		}
	}
	for (q = 0; q < OB; q++)
		for (t = 0; t < 9; t++) {
			float *w = dweight + ((o0 + q) * C + c) * 9 + t, h = 0;
			for (l = 0; l < 16; l++)
				h += a[q][t][l];
			*w = first ? h : *w + h;
		}
}

SPIRT_KERNEL void
dwgrad_k(float *dweight, const float *dy, size_t Q, const float *xp,
    size_t ps, size_t C, size_t OC, size_t Wp, int first, size_t OB)
{
	size_t o, c;

	for (o = 0; o + OB <= OC; o += OB)
		for (c = 0; c < C; c++)
			dwtile(dweight, dy, Q, xp, ps, C, Wp, o, c, OB, first);
	for (; o < OC; o++)
		for (c = 0; c < C; c++)
			dwtile(dweight, dy, Q, xp, ps, C, Wp, o, c, 1, first);
}

static void
dwgrad_base(float *dweight, const float *dy, size_t Q, const float *xp,
    size_t ps, size_t C, size_t OC, size_t Wp, int first)
{
	dwgrad_k(dweight, dy, Q, xp, ps, C, OC, Wp, first, 1);
}

SPIRT_AVX2 static void
dwgrad_avx2(float *dweight, const float *dy, size_t Q, const float *xp,
    size_t ps, size_t C, size_t OC, size_t Wp, int first)
{
	dwgrad_k(dweight, dy, Q, xp, ps, C, OC, Wp, first, 1);
}

SPIRT_AVX512 static void
dwgrad_avx512(float *dweight, const float *dy, size_t Q, const float *xp,
    size_t ps, size_t C, size_t OC, size_t Wp, int first)
{
	dwgrad_k(dweight, dy, Q, xp, ps, C, OC, Wp, first, 2);
}

static void
dwgrad(float *dweight, const float *dy, size_t Q, const float *xp,
    size_t ps, size_t C, size_t OC, size_t Wp, int first)
{
	switch (spirt_isa()) {
	case SPIRT_ISA_AVX512:
		dwgrad_avx512(dweight, dy, Q, xp, ps, C, OC, Wp, first);
		break;
	case SPIRT_ISA_AVX2:
		dwgrad_avx2(dweight, dy, Q, xp, ps, C, OC, Wp, first);
		break;
	default:
		dwgrad_base(dweight, dy, Q, xp, ps, C, OC, Wp, first);
		break;
	}
}
#endif

#ifdef SPIRT_VEC
/* xp (C, ps) gets sample b's planes of inp (C, B, H, W), padded */
static void
dpack(float *xp, const float *inp, const struct spirt_conv2d *g, size_t C,
    size_t b)
{
	size_t H = g->H, W = g->W, Wp = dwp(g), ps = dplane(g), c, y, x;

	for (c = 0; c < C; c++) {
		const float *in = inp + (c * g->B + b) * H * W;
		float *d = xp + c * ps + 1 + Wp;
		for (y = 0; y < H; y++)         // no memcpy call a row
			for (x = 0; x < W; x++)
				d[y * Wp + x] = in[y * W + x];
	}
}
#endif

/*
 * dweight (OC, C, 3, 3) of the direct convolution, from dout (OC, B, H,
 * W) and inp; ws holds dsize(g) floats
 */
static void
dweights(float *dweight, float *ws, const float *dout, const float *inp,
    const struct spirt_conv2d *g)
{
#ifdef SPIRT_VEC
	size_t H = g->H, W = g->W, Wp = dwp(g), ps = dplane(g), Q = dgrid(g);
	size_t C = g->C, OC = g->OC, P = H * W, b, o, y;
	float *xp = ws, *dy = ws + C * ps;

	memset(xp, 0, C * ps * sizeof *xp);
	memset(dy, 0, OC * Q * sizeof *dy);
	for (b = 0; b < g->B; b++) {
		dpack(xp, inp, g, C, b);
		for (o = 0; o < OC; o++)
			for (y = 0; y < H; y++)
				memcpy(dy + o * Q + y * Wp, dout + (o * g->B +
				    b) * P + y * W, W * sizeof *dy);
		dwgrad(dweight, dy, Q, xp, ps, C, OC, Wp, b == 0);
	}
#else
	(void)dweight, (void)ws, (void)dout, (void)inp, (void)g;
#endif
}

/*
 * out (OC, B, H, W) = the direct convolution of inp (C, B, H, W) with wt
 * (C, 9, OC), bias added if not NULL; ws holds dsize(g) floats.
 */
static void
dforward(float *out, float *ws, const float *inp, const float *wt,
    const float *bias, const struct spirt_conv2d *g, size_t C, size_t OC)
{
#ifdef SPIRT_VEC
	size_t H = g->H, W = g->W, Wp = dwp(g), ps = dplane(g), Q = dgrid(g);
	size_t P = H * W, N = g->B * P, b, o, y, x;
	float *xp = ws, *yq = ws + (C > OC ? C : OC) * ps;

	memset(xp, 0, C * ps * sizeof *xp);
	for (b = 0; b < g->B; b++) {
		dpack(xp, inp, g, C, b);
		dconv(yq, Q, xp, ps, wt, C, OC, Wp, H);
		for (o = 0; o < OC; o++)
			for (y = 0; y < H; y++) {
				const float *q = yq + o * Q + y * Wp;
				float *d = out + o * N + b * P + y * W;
				if (bias == NULL)
					for (x = 0; x < W; x++)
						d[x] = q[x];
				else
					for (x = 0; x < W; x++)
						d[x] = bias[o] + q[x];
			}
	}
#else
	(void)out, (void)ws, (void)inp, (void)wt, (void)bias, (void)g;
	(void)C, (void)OC;
#endif
}

/*
 * A 1x1 convolution of stride 1 without padding: a chunk's im2col is the
 * chunk of inp itself, rows N apart; no copy.
 */
static int
pointwise(const struct spirt_conv2d *g)
{
	return g->k == 1 && g->s == 1 && g->p == 0;
}

void
spirt_conv2d_forward(float *out, float *col, const float *inp,
    const float *weight, const float *bias, const struct spirt_conv2d *g)
{
	size_t P = g->OH * g->OW, N = g->B * P, K = g->C * g->k * g->k;
	size_t b0, n, o, j, b, oy;
	struct convws w;

	if (direct(g)) {        // wt (C, 9, OC) first
		float *wt = col;
		for (o = 0; o < g->OC; o++)
			for (j = 0; j < K; j++)
				wt[j * g->OC + o] = weight[o * K + j];
		dforward(out, wt + K * g->OC, inp, wt, bias, g, g->C, g->OC);
		return;
	}
	(void)convws(&w, col, g);
	if (bias != NULL && !wide(g))
		for (o = 0; o < g->OC; o++)
			for (j = 0; j < N; j++)
				out[o * N + j] = bias[o];
	for (b0 = 0; b0 < g->B; b0 += n) {
		const float *c = inp + b0 * P;
		size_t ld = N;
		n = g->B - b0 < w.nb ? g->B - b0 : w.nb;
		if (wide(g)) {
			wpack(&w, inp, g, b0, n);
			wim2col(&w, g, n);
			// y (OC, n*Q) = weight (OC,K) . col (K, n*Q), then
			// its rows without the junk columns, bias added
			spirt_sgemm(0, 0, g->OC, n * w.Q, K, 1.0f, weight, K,
			    w.col, n * w.Q, 0.0f, w.y, n * w.Q);
			for (o = 0; o < g->OC; o++)
			for (b = 0; b < n; b++)
			for (oy = 0; oy < g->OH; oy++) {
				const float *q = w.y + (o * n + b) * w.Q +
				    oy * w.Wp;
				float *d = out + o * N + (b0 + b) * P +
				    oy * g->OW;
				if (bias == NULL)
					memcpy(d, q, g->OW * sizeof *d);
				else
					for (j = 0; j < g->OW; j++)
						d[j] = bias[o] + q[j];
			}
			continue;
		}
		if (!pointwise(g)) {
			if (phased(g))
				sim2col(col, &w, inp, g, b0, n);
			else
				spirt_im2col_sp(col, inp, g, b0, n);
			c = col, ld = n * P;
		}
		// out[:, chunk] (OC,n*P) += weight (OC,K) . col (K,n*P)
		spirt_sgemm(0, 0, g->OC, n * P, K, 1.0f, weight, K, c, ld,
		    bias != NULL ? 1.0f : 0.0f, out + b0 * P, N);
	}
}

/* input pixel (c,b,y,x) with y, x offset by the padding; 0 outside */
static double
pix(const float *inp, const struct spirt_conv2d *g, size_t c, size_t b,
    size_t y, size_t x)
{
	if (y < g->p || x < g->p || y - g->p >= g->H || x - g->p >= g->W)
		return 0;
	return inp[((c * g->B + b) * g->H + y - g->p) * g->W + x - g->p];
}

void
spirt_conv2d_backward(float *dinp, float *dweight, float *dbias, float *col,
    const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g)
{
	size_t P = g->OH * g->OW, N = g->B * P, K = g->C * g->k * g->k;
	size_t OC = g->OC, b0, n, o, j, b, oy, ci, t;
	struct convws w;

	if (direct(g) && dinp != NULL) {
		// dinp = dout (OC channels) convolved with wt (OC, 9, C):
		// the weights' taps flipped and their channels swapped
		float *wt = col;
		for (o = 0; o < OC; o++)
			for (ci = 0; ci < g->C; ci++)
				for (t = 0; t < 9; t++)
					wt[(o * 9 + 8 - t) * g->C + ci] =
					    weight[(o * g->C + ci) * 9 + t];
		dforward(dinp, wt + K * OC, dout, wt, NULL, g, OC, g->C);
		dinp = NULL;            // below: the weight gradient alone
	}
	if (dbias != NULL) {
		for (o = 0; o < OC; o++) {
			const float *d = dout + o * N;
			float a = 0;
			for (j = 0; j < N; j++)
				a += d[j];
			dbias[o] = a;
		}
	}
	if (dsmall(g)) {
		dweights(dweight, col + K * OC, dout, inp, g);
		return;
	}
	(void)convws(&w, col, g);
	// dweight^T (K,OC) summed over the chunks, col (K,n*Q) . dout^T,
	// then transposed (the shape OpenBLAS runs faster, blas.c's
	// spirt_conv_backward), in the workspace's tail: nothing allocated
	for (b0 = 0; b0 < g->B; b0 += n) {
		float beta = b0 > 0 ? 1.0f : 0.0f;
		const float *dc = dout + b0 * P, *c = inp + b0 * P;
		size_t ld = N, lc = N;
		n = g->B - b0 < w.nb ? g->B - b0 : w.nb;
		if (wide(g)) {
			wpack(&w, inp, g, b0, n);
			wim2col(&w, g, n);
			// dout's rows on the wide grid, 0 in the junk columns
			for (o = 0; o < OC; o++)
			for (b = 0; b < n; b++)
			for (oy = 0; oy < g->OH; oy++) {
				float *q = w.y + (o * n + b) * w.Q +
				    oy * w.Wp;
				memcpy(q, dc + o * N + b * P + oy * g->OW,
				    g->OW * sizeof *q);
				for (j = g->OW; j < w.Wp; j++)
					q[j] = 0.0f;
			}
			c = w.col, lc = n * w.Q, dc = w.y, ld = n * w.Q;
		} else if (phased(g)) {
			sim2col(col, &w, inp, g, b0, n);
			c = col, lc = n * P;
		} else if (!pointwise(g)) {
			spirt_im2col_sp(col, inp, g, b0, n);
			c = col, lc = n * P;
		}
		spirt_sgemm(0, 1, K, OC, n * w.Q, 1.0f, c, lc, dc, ld, beta,
		    w.dwt, OC);
		if (dinp == NULL)
			continue;
		if (pointwise(g)) {     // dinp[:, chunk] itself
			spirt_sgemm(1, 0, K, n * P, OC, 1.0f, weight, K, dc, N,
			    0.0f, dinp + b0 * P, N);
			continue;
		}
		// dcol (K, n*Q) = weight^T (K,OC) . dout[:, chunk], into col,
		// then back to the planes
		spirt_sgemm(1, 0, K, n * w.Q, OC, 1.0f, weight, K, dc, ld,
		    0.0f, col, n * w.Q);
		if (wide(g)) {
			wcol2im(&w, g, n);
			wunpack(dinp, &w, g, b0, n);
		} else if (phased(g)) {
			scol2im(dinp, &w, col, g, b0, n);
		} else {
			spirt_col2im_sp(dinp, col, g, b0, n);
		}
	}
	for (o = 0; o < OC; o++)
		for (j = 0; j < K; j++)
			dweight[o * K + j] = w.dwt[j * OC + o];
}

/* ---- depthwise conv2d ---- */

void
spirt_dwconv2d_forward(float *out, const float *inp, const float *weight,
    const float *bias, const struct spirt_conv2d *g)
{
	size_t k = g->k, s = g->s, p = g->p, H = g->H, W = g->W;
	size_t OH = g->OH, OW = g->OW, c, b, ky, kx, oy, ox;
	size_t ylo, yhi, xlo, xhi;

	for (c = 0; c < g->C; c++)
	for (b = 0; b < g->B; b++) {
		const float *in = inp + (c * g->B + b) * H * W;
		float *o = out + (c * g->B + b) * OH * OW;
		float b0 = bias != NULL ? bias[c] : 0.0f;
		for (ox = 0; ox < OH * OW; ox++)
			o[ox] = b0;
		// one tap at a time over whole output rows
		for (ky = 0; ky < k; ky++) {
			span(&ylo, &yhi, OH, ky, s, p, H);
			for (kx = 0; kx < k; kx++) {
				float w = weight[(c * k + ky) * k + kx];
				span(&xlo, &xhi, OW, kx, s, p, W);
				for (oy = ylo; oy < yhi; oy++) {
					const float *r = in + (oy * s + ky -
					    p) * W + kx - p;
					float *q = o + oy * OW;
					for (ox = xlo; ox < xhi; ox++)
						q[ox] += w * r[ox * s];
				}
			}
		}
	}
}

void
spirt_dwconv2d_backward(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g)
{
	size_t k = g->k, s = g->s, p = g->p, H = g->H, W = g->W, B = g->B;
	size_t OH = g->OH, OW = g->OW, c, b, ky, kx, oy, ox;
	size_t ylo, yhi, xlo, xhi;

	if (dinp != NULL)
		memset(dinp, 0, g->C * B * H * W * sizeof *dinp);
	for (c = 0; c < g->C; c++) {
		const float *d = dout + c * B * OH * OW;
		if (dbias != NULL) {
			float a = 0;
			for (ox = 0; ox < B * OH * OW; ox++)
				a += d[ox];
			dbias[c] = a;
		}
		for (ky = 0; ky < k; ky++) {
			span(&ylo, &yhi, OH, ky, s, p, H);
			for (kx = 0; kx < k; kx++) {
				float w = weight[(c * k + ky) * k + kx];
				float a = 0;
				span(&xlo, &xhi, OW, kx, s, p, W);
				for (b = 0; b < B; b++) {
					const float *in = inp + (c * B + b) *
					    H * W;
					float *di = dinp != NULL ? dinp +
					    (c * B + b) * H * W : NULL;
					for (oy = ylo; oy < yhi; oy++) {
						size_t off = (oy * s + ky - p) *
						    W + kx - p;
						const float *q = d + (b * OH +
						    oy) * OW;
						for (ox = xlo; ox < xhi; ox++)
							a += q[ox] *
							    in[off + ox * s];
						if (di != NULL)
							for (ox = xlo; ox < xhi;
							    ox++)
								di[off + ox *
								    s] += w *
								    q[ox];
					}
				}
				dweight[(c * k + ky) * k + kx] = a;
			}
		}
	}
}

/*
 * The naive twins of both convolutions: a grouped convolution, dw = 0 one
 * group (weight (OC,C,k,k)), dw = 1 a group a channel (weight (C,1,k,k)).
 * Output channel o reads the input channels [c0, c0 + cn).
 */
static void
group(size_t *c0, size_t *cn, const struct spirt_conv2d *g, int dw,
    size_t o)
{
	*c0 = dw ? o : 0;
	*cn = dw ? 1 : g->C;
}

static double
wt(const float *weight, const struct spirt_conv2d *g, int dw, size_t o,
    size_t c, size_t ky, size_t kx)
{
	size_t c0, cn;

	group(&c0, &cn, g, dw, o);
	return weight[((o * cn + c - c0) * g->k + ky) * g->k + kx];
}

static void
conv_naive_fwd(float *out, const float *inp, const float *weight,
    const float *bias, const struct spirt_conv2d *g, int dw)
{
	size_t k = g->k, o, b, oy, ox, c, c0, cn, ky, kx;

	for (o = 0; o < g->OC; o++)
	for (b = 0; b < g->B; b++)
	for (oy = 0; oy < g->OH; oy++)
	for (ox = 0; ox < g->OW; ox++) {
		double a = bias != NULL ? bias[o] : 0;
		group(&c0, &cn, g, dw, o);
		for (c = c0; c < c0 + cn; c++)
			for (ky = 0; ky < k; ky++)
				for (kx = 0; kx < k; kx++)
					a += wt(weight, g, dw, o, c, ky, kx) *
					    pix(inp, g, c, b, oy * g->s + ky,
					    ox * g->s + kx);
		out[((o * g->B + b) * g->OH + oy) * g->OW + ox] = (float)a;
	}
}

/*
 * The output o of n that tap t reaches from padded position y (y = o*s +
 * t), or n if none does.
 */
static size_t
tapout(size_t y, size_t t, size_t s, size_t n)
{
	if (y < t || (y - t) % s != 0 || (y - t) / s >= n)
		return n;
	return (y - t) / s;
}

static void
conv_naive_bwd(float *dinp, float *dweight, float *dbias, const float *dout,
    const float *inp, const float *weight, const struct spirt_conv2d *g,
    int dw)
{
	size_t k = g->k, B = g->B, OH = g->OH, OW = g->OW;
	size_t o, b, oy, ox, c, c0, cn, ky, kx, y, x;

	for (o = 0; o < g->OC; o++) {
		const float *d = dout + o * B * OH * OW;
		if (dbias != NULL) {
			double a = 0;
			for (ox = 0; ox < B * OH * OW; ox++)
				a += d[ox];
			dbias[o] = (float)a;
		}
		group(&c0, &cn, g, dw, o);
		for (c = c0; c < c0 + cn; c++)
		for (ky = 0; ky < k; ky++)
		for (kx = 0; kx < k; kx++) {
			double a = 0;
			for (b = 0; b < B; b++)
				for (oy = 0; oy < OH; oy++)
					for (ox = 0; ox < OW; ox++)
						a += (double)d[(b * OH + oy) *
						    OW + ox] * pix(inp, g, c, b,
						    oy * g->s + ky,
						    ox * g->s + kx);
			dweight[((o * cn + c - c0) * k + ky) * k + kx] =
			    (float)a;
		}
	}
	if (dinp == NULL)
		return;
	// gather: every (output, tap) pair that read input pixel (y,x)
	for (c = 0; c < g->C; c++)
	for (b = 0; b < B; b++)
	for (y = 0; y < g->H; y++)
	for (x = 0; x < g->W; x++) {
		double a = 0;
		for (o = dw ? c : 0; o < (dw ? c + 1 : g->OC); o++)
			for (ky = 0; ky < k; ky++) {
				oy = tapout(y + g->p, ky, g->s, OH);
				if (oy == OH)
					continue;
				for (kx = 0; kx < k; kx++) {
					ox = tapout(x + g->p, kx, g->s, OW);
					if (ox == OW)
						continue;
					a += wt(weight, g, dw, o, c, ky, kx) *
					    dout[((o * B + b) * OH + oy) * OW +
					    ox];
				}
			}
		dinp[((c * B + b) * g->H + y) * g->W + x] = (float)a;
	}
}

void
spirt_conv2d_forward_naive(float *out, const float *inp, const float *weight,
    const float *bias, const struct spirt_conv2d *g)
{
	conv_naive_fwd(out, inp, weight, bias, g, 0);
}

void
spirt_conv2d_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g)
{
	conv_naive_bwd(dinp, dweight, dbias, dout, inp, weight, g, 0);
}

void
spirt_dwconv2d_forward_naive(float *out, const float *inp,
    const float *weight, const float *bias, const struct spirt_conv2d *g)
{
	conv_naive_fwd(out, inp, weight, bias, g, 1);
}

void
spirt_dwconv2d_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g)
{
	conv_naive_bwd(dinp, dweight, dbias, dout, inp, weight, g, 1);
}
