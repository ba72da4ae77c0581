/* layers.c - conv-net layer kernels beyond blas.c and conv.c (batch
 * normalisation, pools, residual add, dropout), each with a naive twin */
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

/* ---- batch normalisation ---- */

/* run = (1 - m) * run + m * batch, torch's order of operations */
static void
bn_running(float *run_mean, float *run_var, size_t c, double mean,
    double var, size_t n, float momentum)
{
	double uvar = n > 1 ? var * (double)n / (double)(n - 1) : var;

	run_mean[c] = run_mean[c] * (1.0f - momentum) + (float)mean * momentum;
	run_var[c] = run_var[c] * (1.0f - momentum) + (float)uvar * momentum;
}

/*
 * Sums over 8 interleaved partial sums, added pairwise at the end: 8
 * independent chains the compiler can keep in vector registers (one
 * chain waited 4 cycles an addition), the same order every run.  Each
 * block of BN_BLOCK values is summed in float, and the blocks' sums in
 * double: 32 additions a lane in float lose nothing a batch statistic
 * keeps, and the conversions to double, a block's instead of a value's,
 * were most of the time (bn_sum 5.5% of resnet8's step, perf).
 */
#define BN_LANES 8
#define BN_BLOCK 256

static double
lanes_total(const double *p)
{
	return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] +
	    p[7]));
}

/* sum of x[i] - m, or of (x[i] - m)^2 when sq */
static double
bn_sum(const float *x, size_t n, float m, int sq)
{
	double p[BN_LANES] = { 0 }, d;
	float q[BN_LANES], e;
	size_t i, j, end;

	for (i = 0; i + BN_LANES <= n;) {
		end = n - n % BN_LANES;
		if (end > i + BN_BLOCK)
			end = i + BN_BLOCK;
		memset(q, 0, sizeof q);
		if (sq)         // two loops, no test in them: vectorised
			for (; i < end; i += BN_LANES)
				for (j = 0; j < BN_LANES; j++) {
					e = x[i + j] - m;
					q[j] += e * e;
				}
		else
			for (; i < end; i += BN_LANES)
				for (j = 0; j < BN_LANES; j++)
					q[j] += x[i + j] - m;
		for (j = 0; j < BN_LANES; j++)
			p[j] += q[j];
	}
	for (; i < n; i++) {
		d = (double)x[i] - m;
		p[0] += sq ? d * d : d;
	}
	return lanes_total(p);
}

/* spirt_bn_forward, and with relu the ReLU of its output in the same pass */
static void
bn_forward(float *out, float *mean, float *rstd, float *run_mean,
    float *run_var, const float *inp, const float *gamma, const float *beta,
    size_t C, size_t n, float momentum, float eps, int relu)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		const float *x = inp + c * n;
		float *y = out + c * n, m, sc, sh;
		double s, v;

		// two passes: the variance of a channel whose mean is large
		// is not lost to cancellation
		s = bn_sum(x, n, 0, 0) / (double)n;
		m = (float)s;
		v = bn_sum(x, n, m, 1) / (double)n;
		sc = (float)(1.0 / sqrt(v + eps));
		mean[c] = m, rstd[c] = sc;
		sh = beta[c];
		sc *= gamma[c];
		if (relu)       // spirt_relu_forward's select, in this pass
			for (i = 0; i < n; i++) {
				float e = (x[i] - m) * sc + sh;
				y[i] = e > 0.0f ? e : 0.0f;
			}
		else
			for (i = 0; i < n; i++)
				y[i] = (x[i] - m) * sc + sh;
		if (run_mean != NULL)
			bn_running(run_mean, run_var, c, s, v, n, momentum);
	}
}

void
spirt_bn_forward(float *out, float *mean, float *rstd, float *run_mean,
    float *run_var, const float *inp, const float *gamma, const float *beta,
    size_t C, size_t n, float momentum, float eps)
{
	bn_forward(out, mean, rstd, run_mean, run_var, inp, gamma, beta, C, n,
	    momentum, eps, 0);
}

void
spirt_bn_relu_forward(float *out, float *mean, float *rstd, float *run_mean,
    float *run_var, const float *inp, const float *gamma, const float *beta,
    size_t C, size_t n, float momentum, float eps)
{
	bn_forward(out, mean, rstd, run_mean, run_var, inp, gamma, beta, C, n,
	    momentum, eps, 1);
}

void
spirt_bn_forward_naive(float *out, float *mean, float *rstd, float *run_mean,
    float *run_var, const float *inp, const float *gamma, const float *beta,
    size_t C, size_t n, float momentum, float eps)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		double s = 0, v = 0, r;
		for (i = 0; i < n; i++)
			s += inp[c * n + i];
		s /= (double)n;
		for (i = 0; i < n; i++)
			v += (inp[c * n + i] - s) * (inp[c * n + i] - s);
		v /= (double)n;
		r = 1.0 / sqrt(v + eps);
		for (i = 0; i < n; i++)
			out[c * n + i] = (float)(gamma[c] * (inp[c * n + i] -
			    s) * r + beta[c]);
		mean[c] = (float)s, rstd[c] = (float)r;
		if (run_mean != NULL)
			bn_running(run_mean, run_var, c, s, v, n, momentum);
	}
}

/*
 * dy (n) where the forward's ReLU output o is > 0, else 0, written back
 * to dy: spirt_relu_backward in place, a block at a time, before bn's
 * sums read it from the cache
 */
static void
relu_mask(float *dy, const float *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float d = dy[i], v = o[i];
		dy[i] = v > 0.0f ? d : 0.0f;
	}
}

/*
 * spirt_bn_backward; with relu (not NULL: the forward's output after its
 * ReLU) the ReLU's gradient first, into dmask (dout, in place)
 */
static void
bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout,
    float *dmask, const float *relu, const float *inp, const float *mean,
    const float *rstd, const float *gamma, size_t C, size_t n)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		const float *x = inp + c * n, *dy = dout + c * n;
		float m = mean[c], r = rstd[c], a, b, k;
		double py[BN_LANES] = { 0 }, px[BN_LANES] = { 0 }, sdy, sdx;
		float qy[BN_LANES], qx[BN_LANES];
		size_t j, end;

		// in float by blocks, as bn_sum
		for (i = 0; i + BN_LANES <= n;) {
			end = n - n % BN_LANES;
			if (end > i + BN_BLOCK)
				end = i + BN_BLOCK;
			if (relu != NULL)
				relu_mask(dmask + c * n + i, relu + c * n + i,
				    end - i);
			memset(qy, 0, sizeof qy);
			memset(qx, 0, sizeof qx);
			for (; i < end; i += BN_LANES)
				for (j = 0; j < BN_LANES; j++) {
					qy[j] += dy[i + j];
					qx[j] += dy[i + j] * ((x[i + j] - m) *
					    r);
				}
			for (j = 0; j < BN_LANES; j++)
				py[j] += qy[j], px[j] += qx[j];
		}
		if (relu != NULL && i < n)
			relu_mask(dmask + c * n + i, relu + c * n + i, n - i);
		for (; i < n; i++) {
			py[0] += dy[i];
			px[0] += (double)dy[i] * ((x[i] - m) * r);
		}
		sdy = lanes_total(py);
		sdx = lanes_total(px);
		dgamma[c] = (float)sdx, dbeta[c] = (float)sdy;
		if (dinp == NULL)
			continue;
		// dx = gamma*rstd * (dy - mean(dy) - xhat * mean(dy*xhat))
		k = gamma[c] * r;
		a = (float)(sdy / (double)n);
		b = (float)(sdx / (double)n);
		for (i = 0; i < n; i++)
			dinp[c * n + i] = k * (dy[i] - a - (x[i] - m) * r * b);
	}
}

void
spirt_bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout,
    const float *inp, const float *mean, const float *rstd,
    const float *gamma, size_t C, size_t n)
{
	bn_backward(dinp, dgamma, dbeta, dout, NULL, NULL, inp, mean, rstd,
	    gamma, C, n);
}

void
spirt_bn_relu_backward(float *dinp, float *dgamma, float *dbeta, float *dout,
    const float *out, const float *inp, const float *mean, const float *rstd,
    const float *gamma, size_t C, size_t n)
{
	bn_backward(dinp, dgamma, dbeta, dout, dout, out, inp, mean, rstd,
	    gamma, C, n);
}

void
spirt_bn_backward_naive(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *mean, const float *rstd,
    const float *gamma, size_t C, size_t n)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		double sdy = 0, sdx = 0, xh;
		for (i = 0; i < n; i++) {
			xh = (inp[c * n + i] - (double)mean[c]) * rstd[c];
			sdy += dout[c * n + i];
			sdx += dout[c * n + i] * xh;
		}
		dgamma[c] = (float)sdx, dbeta[c] = (float)sdy;
		if (dinp == NULL)
			continue;
		for (i = 0; i < n; i++) {
			xh = (inp[c * n + i] - (double)mean[c]) * rstd[c];
			dinp[c * n + i] = (float)((double)gamma[c] * rstd[c] /
			    (double)n * ((double)n * dout[c * n + i] - sdy -
			    xh * sdx));
		}
	}
}

void
spirt_bn_relu_forward_naive(float *out, float *mean, float *rstd,
    float *run_mean, float *run_var, const float *inp, const float *gamma,
    const float *beta, size_t C, size_t n, float momentum, float eps)
{
	spirt_bn_forward_naive(out, mean, rstd, run_mean, run_var, inp, gamma,
	    beta, C, n, momentum, eps);
	spirt_relu_forward(out, out, C * n);
}

void
spirt_bn_relu_backward_naive(float *dinp, float *dgamma, float *dbeta,
    float *dout, const float *out, const float *inp, const float *mean,
    const float *rstd, const float *gamma, size_t C, size_t n)
{
	spirt_relu_backward(dout, dout, out, C * n);
	spirt_bn_backward_naive(dinp, dgamma, dbeta, dout, inp, mean, rstd,
	    gamma, C, n);
}

void
spirt_bn_eval_forward(float *out, const float *inp, const float *gamma,
    const float *beta, const float *run_mean, const float *run_var,
    size_t C, size_t n, float eps)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		const float *x = inp + c * n;
		float *y = out + c * n, m = run_mean[c], sh = beta[c];
		float sc = (float)(1.0 / sqrt((double)run_var[c] + eps)) *
		    gamma[c];
		for (i = 0; i < n; i++)
			y[i] = (x[i] - m) * sc + sh;
	}
}

void
spirt_bn_eval_forward_naive(float *out, const float *inp, const float *gamma,
    const float *beta, const float *run_mean, const float *run_var,
    size_t C, size_t n, float eps)
{
	size_t c, i;

	for (c = 0; c < C; c++)
		for (i = 0; i < n; i++)
			out[c * n + i] = (float)(gamma[c] * ((double)inp[c *
			    n + i] - run_mean[c]) / sqrt((double)run_var[c] +
			    eps) + beta[c]);
}

void
spirt_bn_eval_backward(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *gamma,
    const float *run_mean, const float *run_var, size_t C, size_t n,
    float eps)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		const float *x = inp + c * n, *dy = dout + c * n;
		float m = run_mean[c];
		float r = (float)(1.0 / sqrt((double)run_var[c] + eps));
		float k = gamma[c] * r;
		double sdy = 0, sdx = 0;

		for (i = 0; i < n; i++) {
			sdy += dy[i];
			sdx += (double)dy[i] * ((x[i] - m) * r);
		}
		dgamma[c] = (float)sdx, dbeta[c] = (float)sdy;
		if (dinp != NULL)
			for (i = 0; i < n; i++)
				dinp[c * n + i] = k * dy[i];
	}
}

void
spirt_bn_eval_backward_naive(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *gamma,
    const float *run_mean, const float *run_var, size_t C, size_t n,
    float eps)
{
	size_t c, i;

	for (c = 0; c < C; c++) {
		double r = 1.0 / sqrt((double)run_var[c] + eps);
		double sdy = 0, sdx = 0;
		for (i = 0; i < n; i++) {
			sdy += dout[c * n + i];
			sdx += dout[c * n + i] * ((inp[c * n + i] -
			    (double)run_mean[c]) * r);
			if (dinp != NULL)
				dinp[c * n + i] = (float)(dout[c * n + i] *
				    (double)gamma[c] * r);
		}
		dgamma[c] = (float)sdx, dbeta[c] = (float)sdy;
	}
}

/* ---- pooling ---- */

void
spirt_avgpool_forward(float *out, const float *inp, size_t P, size_t H,
    size_t W, size_t k)
{
	size_t OH = H / k, OW = W / k, p, oy, ox, ky, kx;
	float f = 1.0f / (float)(k * k);

	for (p = 0; p < P; p++)
	for (oy = 0; oy < OH; oy++) {
		float *o = out + (p * OH + oy) * OW;
		for (ox = 0; ox < OW; ox++)
			o[ox] = 0.0f;
		for (ky = 0; ky < k; ky++) {
			const float *r = inp + (p * H + oy * k + ky) * W;
			for (ox = 0; ox < OW; ox++)
				for (kx = 0; kx < k; kx++)
					o[ox] += r[ox * k + kx];
		}
		for (ox = 0; ox < OW; ox++)
			o[ox] *= f;
	}
}

void
spirt_avgpool_forward_naive(float *out, const float *inp, size_t P,
    size_t H, size_t W, size_t k)
{
	size_t OH = H / k, OW = W / k, p, oy, ox, ky, kx;

	for (p = 0; p < P; p++)
	for (oy = 0; oy < OH; oy++)
	for (ox = 0; ox < OW; ox++) {
		double a = 0;
		for (ky = 0; ky < k; ky++)
			for (kx = 0; kx < k; kx++)
				a += inp[(p * H + oy * k + ky) * W + ox * k +
				    kx];
		out[(p * OH + oy) * OW + ox] = (float)(a / (double)(k * k));
	}
}

void
spirt_avgpool_backward(float *dinp, const float *dout, size_t P, size_t H,
    size_t W, size_t k)
{
	size_t OH = H / k, OW = W / k, p, oy, ox, ky, kx;
	float f = 1.0f / (float)(k * k);

	memset(dinp, 0, P * H * W * sizeof *dinp);
	for (p = 0; p < P; p++)
	for (oy = 0; oy < OH; oy++) {
		const float *d = dout + (p * OH + oy) * OW;
		for (ky = 0; ky < k; ky++) {
			float *r = dinp + (p * H + oy * k + ky) * W;
			for (ox = 0; ox < OW; ox++)
				for (kx = 0; kx < k; kx++)
					r[ox * k + kx] = d[ox] * f;
		}
	}
}

void
spirt_avgpool_backward_naive(float *dinp, const float *dout, size_t P,
    size_t H, size_t W, size_t k)
{
	size_t OH = H / k, OW = W / k, p, y, x;

	for (p = 0; p < P; p++)
	for (y = 0; y < H; y++)
	for (x = 0; x < W; x++) {
		double v = 0;
		if (y / k < OH && x / k < OW)
			v = dout[(p * OH + y / k) * OW + x / k] /
			    (double)(k * k);
		dinp[(p * H + y) * W + x] = (float)v;
	}
}

void
spirt_gap_forward(float *out, const float *inp, size_t P, size_t HW)
{
	size_t p, i;
	float f = 1.0f / (float)HW;

	for (p = 0; p < P; p++) {
		const float *x = inp + p * HW;
		float a = 0;
		for (i = 0; i < HW; i++)
			a += x[i];
		out[p] = a * f;
	}
}

void
spirt_gap_forward_naive(float *out, const float *inp, size_t P, size_t HW)
{
	size_t p, i;

	for (p = 0; p < P; p++) {
		double a = 0;
		for (i = 0; i < HW; i++)
			a += inp[p * HW + i];
		out[p] = (float)(a / (double)HW);
	}
}

void
spirt_gap_backward(float *dinp, const float *dout, size_t P, size_t HW)
{
	size_t p, i;
	float f = 1.0f / (float)HW;

	for (p = 0; p < P; p++) {
		float v = dout[p] * f;
		for (i = 0; i < HW; i++)
			dinp[p * HW + i] = v;
	}
}

void
spirt_gap_backward_naive(float *dinp, const float *dout, size_t P,
    size_t HW)
{
	size_t p, i;

	for (p = 0; p < P; p++)
		for (i = 0; i < HW; i++)
			dinp[p * HW + i] = (float)(dout[p] / (double)HW);
}

void
spirt_maxpool2d_forward(float *out, uint32_t *idx, const float *inp,
    size_t P, size_t H, size_t W, size_t k, size_t s)
{
	size_t OH = (H - k) / s + 1, OW = (W - k) / s + 1;
	size_t p, oy, ox, ky, kx;

	for (p = 0; p < P; p++)
	for (oy = 0; oy < OH; oy++) {
		const float *pl = inp + p * H * W;
		float *o = out + (p * OH + oy) * OW;
		uint32_t *ix = idx + (p * OH + oy) * OW;
		for (ox = 0; ox < OW; ox++) {
			uint32_t at = (uint32_t)(oy * s * W + ox * s);
			o[ox] = pl[at], ix[ox] = at;
		}
		// tap by tap over the row, selects not branches; ">" keeps
		// the first of equal maxima in window order, as torch
		for (ky = 0; ky < k; ky++)
			for (kx = 0; kx < k; kx++) {
				size_t base = (oy * s + ky) * W + kx;
				const float *r = pl + base;
				for (ox = 0; ox < OW; ox++) {
					float v = r[ox * s];
					uint32_t at = (uint32_t)(base + ox * s);
					ix[ox] = v > o[ox] ? at : ix[ox];
					o[ox] = v > o[ox] ? v : o[ox];
				}
			}
	}
}

/* the maximum of window (oy,ox) of plane pl, the first on ties */
static size_t
argmax(const float *pl, size_t W, size_t k, size_t s, size_t oy, size_t ox)
{
	size_t ky, kx, at = oy * s * W + ox * s;

	for (ky = 0; ky < k; ky++)
		for (kx = 0; kx < k; kx++) {
			size_t i = (oy * s + ky) * W + ox * s + kx;
			if (pl[i] > pl[at])
				at = i;
		}
	return at;
}

void
spirt_maxpool2d_forward_naive(float *out, const float *inp, size_t P,
    size_t H, size_t W, size_t k, size_t s)
{
	size_t OH = (H - k) / s + 1, OW = (W - k) / s + 1, p, oy, ox;

	for (p = 0; p < P; p++)
		for (oy = 0; oy < OH; oy++)
			for (ox = 0; ox < OW; ox++)
				out[(p * OH + oy) * OW + ox] = inp[p * H * W +
				    argmax(inp + p * H * W, W, k, s, oy, ox)];
}

void
spirt_maxpool2d_backward(float *dinp, const float *dout, const uint32_t *idx,
    size_t P, size_t H, size_t W, size_t k, size_t s)
{
	size_t OH = (H - k) / s + 1, OW = (W - k) / s + 1, p, i;

	memset(dinp, 0, P * H * W * sizeof *dinp);
	for (p = 0; p < P; p++) {
		float *d = dinp + p * H * W;
		for (i = 0; i < OH * OW; i++)
			d[idx[p * OH * OW + i]] += dout[p * OH * OW + i];
	}
}

void
spirt_maxpool2d_backward_naive(float *dinp, const float *dout,
    const float *inp, size_t P, size_t H, size_t W, size_t k, size_t s)
{
	size_t OH = (H - k) / s + 1, OW = (W - k) / s + 1, p, oy, ox, y, x;

	// gather: each input pixel sums the windows whose maximum it is
	for (p = 0; p < P; p++)
	for (y = 0; y < H; y++)
	for (x = 0; x < W; x++) {
		double a = 0;
		for (oy = 0; oy < OH; oy++)
			for (ox = 0; ox < OW; ox++)
				if (argmax(inp + p * H * W, W, k, s, oy, ox) ==
				    y * W + x)
					a += dout[(p * OH + oy) * OW + ox];
		dinp[(p * H + y) * W + x] = (float)a;
	}
}

/* ---- residual add ---- */

void
spirt_residual_forward(float *out, const float *a, const float *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

void
spirt_residual_backward(float *da, float *db, const float *dout, size_t n)
{
	if (da != NULL && da != dout)
		memcpy(da, dout, n * sizeof *da);
	if (db != NULL && db != dout)
		memcpy(db, dout, n * sizeof *db);
}

void
spirt_residual_relu_forward(float *out, const float *a, const float *b,
    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float v = a[i] + b[i];
		out[i] = v > 0.0f ? v : 0.0f;
	}
}

void
spirt_residual_relu_backward(float *da, float *db, const float *dout,
    const float *out, size_t n)
{
	size_t i;

	if (da == NULL && db == NULL)
		return;
	if (da == NULL || db == NULL) {
		float *d = da != NULL ? da : db;
		for (i = 0; i < n; i++) {
			float g = dout[i], v = out[i];
			d[i] = v > 0.0f ? g : 0.0f;
		}
		return;
	}
	for (i = 0; i < n; i++) {
		float g = dout[i], v = out[i];
		da[i] = db[i] = v > 0.0f ? g : 0.0f;
	}
}

/* ---- dropout ---- */

static float
dropout_scale(unsigned pct)
{
	return (float)(100.0 / (double)(100 - pct));
}

void
spirt_dropout_forward(float *out, uint8_t *mask, const float *inp,
    size_t n, unsigned pct, uint64_t seed)
{
	struct spirt_sm64 r;
	uint64_t keep = ((uint64_t)(100 - pct) << 24) / 100;
	float scale = dropout_scale(pct);
	size_t i;

	spirt_sm64_seed(&r, seed);
	for (i = 0; i < n; i++) {
		mask[i] = (spirt_sm64_next(&r) >> 40) < keep;
		out[i] = mask[i] ? inp[i] * scale : 0.0f;
	}
}

void
spirt_dropout_backward(float *dinp, const float *dout, const uint8_t *mask,
    size_t n, unsigned pct)
{
	float scale = dropout_scale(pct);
	size_t i;

	for (i = 0; i < n; i++)
		dinp[i] = mask[i] ? dout[i] * scale : 0.0f;
}
