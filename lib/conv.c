/* conv.c - the convolutions: conv2d (im2col or phase planes + sgemm) and
 * depthwise, each with its naive twin (layers.h); the other layers are
 * layers.c's */
/* ISC licence, see LICENSE */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "layers.h"
#include "rng.h"

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

size_t
spirt_conv2d_colsize(const struct spirt_conv2d *g)
{
	struct convws w;

	return convws(&w, NULL, g);
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
	size_t OC = g->OC, b0, n, o, j, b, oy;
	struct convws w;

	(void)convws(&w, col, g);
	if (dbias != NULL) {
		for (o = 0; o < OC; o++) {
			const float *d = dout + o * N;
			float a = 0;
			for (j = 0; j < N; j++)
				a += d[j];
			dbias[o] = a;
		}
	}
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
