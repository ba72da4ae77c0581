/* blas.c - OpenBLAS loading and the model kernels, each with a naive twin */
/* ISC licence, see LICENSE */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

/*
 * The elementwise loops below must not branch on the data (a ReLU on
 * random signs mispredicts half the time) and should use SIMD; -O2 alone
 * vectorises neither, so ask GCC for it here rather than in the build.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("tree-vectorize", "vect-cost-model=dynamic")
#endif

#ifndef SPIRT_BLAS_SONAME
#define SPIRT_BLAS_SONAME "libopenblas.so.0"
#endif

/* CBLAS enum values (cblas.h), so no OpenBLAS header is needed */
#define CBLAS_ROWMAJOR 101
#define CBLAS_NOTRANS  111
#define CBLAS_TRANS    112

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *,
    int, const float *, int, float, float *, int);
typedef void (*setthreads_fn)(int);
typedef char *(*getstr_fn)(void);

static struct {
	void *dl;
	sgemm_fn sgemm;
	setthreads_fn set_threads;
	getstr_fn corename, config;
	int source;
	char err[256];
} blas;

/* ---- loading ---- */

const char *
spirt_blas_cpu_core(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
	/* libgcc's checks include the OS saving the wide registers (XCR0) */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512vl"))
		return "SkylakeX";
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "Haswell";
#endif
	return NULL;
}

static int
sym(void **out, const char *name)
{
	*out = dlsym(blas.dl, name);
	if (*out == NULL) {
		snprintf(blas.err, sizeof blas.err, "%s: no symbol %s",
		    SPIRT_BLAS_SONAME, name);
		return SPIRT_ENOTSUP;
	}
	return 0;
}

int
spirt_blas_init(const struct spirt_blas_conf *c)
{
	const char *lib = c->lib != NULL && *c->lib != '\0' ? c->lib :
	    SPIRT_BLAS_SONAME;
	int threads = c->threads < 1 ? 1 : c->threads;
	void *p;
	int rc;

	if (blas.dl != NULL) {
		blas.set_threads(threads);
		return 0;
	}
	blas.err[0] = '\0';

	blas.dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (blas.dl == NULL) {
		snprintf(blas.err, sizeof blas.err, "%s", dlerror());
		return SPIRT_ENOTSUP;
	}
	if ((rc = sym(&p, "cblas_sgemm")) != 0)
		goto fail;
	memcpy(&blas.sgemm, &p, sizeof p);
	if ((rc = sym(&p, "openblas_set_num_threads")) != 0)
		goto fail;
	memcpy(&blas.set_threads, &p, sizeof p);
	if ((rc = sym(&p, "openblas_get_corename")) != 0)
		goto fail;
	memcpy(&blas.corename, &p, sizeof p);
	if ((rc = sym(&p, "openblas_get_config")) != 0)
		goto fail;
	memcpy(&blas.config, &p, sizeof p);
	blas.set_threads(threads);
	blas.source = c->source;
	return 0;
fail:
	dlclose(blas.dl);
	memset(&blas, 0, sizeof blas - sizeof blas.err);
	return rc;
}

const char *
spirt_blas_error(void)
{
	return blas.err;
}

const char *
spirt_blas_corename(void)
{
	const char *s;

	if (blas.dl == NULL || (s = blas.corename()) == NULL)
		return "none";
	return s;
}

const char *
spirt_blas_config(void)
{
	const char *s;

	if (blas.dl == NULL || (s = blas.config()) == NULL)
		return "none";
	return s;
}

const char *
spirt_blas_version(void)
{
	static char v[32];
	const char *s = spirt_blas_config();
	size_t n;

	if (strncmp(s, "OpenBLAS ", 9) != 0)
		return "none";
	s += 9;
	n = strcspn(s, " ");
	if (n == 0 || n >= sizeof v)
		return "none";
	memcpy(v, s, n);
	v[n] = '\0';
	return v;
}

int
spirt_blas_source(void)
{
	return blas.source;
}

const char *
spirt_blas_source_name(void)
{
	switch (blas.source) {
	case SPIRT_BLAS_ENV: return "env";
	case SPIRT_BLAS_AUTO: return "auto";
	case SPIRT_BLAS_DETECT: return "detect";
	default: return "none";
	}
}

/* ---- sgemm ---- */

void
spirt_sgemm_naive(int ta, int tb, size_t M, size_t N, size_t K, float alpha,
    const float *A, size_t lda, const float *B, size_t ldb, float beta,
    float *C, size_t ldc)
{
	size_t i, j, p;

	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			double s = 0;
			for (p = 0; p < K; p++) {
				float a = ta ? A[p * lda + i] : A[i * lda + p];
				float b = tb ? B[j * ldb + p] : B[p * ldb + j];
				s += (double)a * b;
			}
			C[i * ldc + j] = beta == 0.0f ? alpha * (float)s :
			    alpha * (float)s + beta * C[i * ldc + j];
		}
	}
}

void
spirt_sgemm(int ta, int tb, size_t M, size_t N, size_t K, float alpha,
    const float *A, size_t lda, const float *B, size_t ldb, float beta,
    float *C, size_t ldc)
{
	if (M == 0 || N == 0)
		return;
	if (blas.sgemm == NULL || M > INT_MAX || N > INT_MAX || K > INT_MAX ||
	    lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
		spirt_sgemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta,
		    C, ldc);
		return;
	}
	blas.sgemm(CBLAS_ROWMAJOR, ta ? CBLAS_TRANS : CBLAS_NOTRANS,
	    tb ? CBLAS_TRANS : CBLAS_NOTRANS, (int)M, (int)N, (int)K, alpha,
	    A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* ---- dense ---- */

void
spirt_dense_forward(float *out, const float *inp, const float *weight,
    const float *bias, size_t B, size_t C, size_t OC)
{
	size_t b;

	// out = bias broadcast, then out += inp (B,C) . weight^T (C,OC)
	for (b = 0; b < B; b++)
		memcpy(out + b * OC, bias, OC * sizeof *out);
	spirt_sgemm(0, 1, B, OC, C, 1.0f, inp, C, weight, C, 1.0f, out, OC);
}

void
spirt_dense_forward_naive(float *out, const float *inp, const float *weight,
    const float *bias, size_t B, size_t C, size_t OC)
{
	size_t b, o, i;

	for (b = 0; b < B; b++) {
		for (o = 0; o < OC; o++) {
			double s = bias[o];
			for (i = 0; i < C; i++)
				s += (double)inp[b * C + i] * weight[o * C + i];
			out[b * OC + o] = (float)s;
		}
	}
}

static void
colsum(float *dst, const float *src, size_t rows, size_t cols)
{
	size_t r, c;

	// dst (cols) = sum over rows of src (rows,cols)
	memset(dst, 0, cols * sizeof *dst);
	for (r = 0; r < rows; r++)
		for (c = 0; c < cols; c++)
			dst[c] += src[r * cols + c];
}

static void
rowsum(float *dst, const float *src, size_t rows, size_t cols)
{
	size_t r, c;

	// dst (rows) = sum over columns of src (rows,cols)
	for (r = 0; r < rows; r++) {
		const float *s = src + r * cols;
		float acc = 0;
		for (c = 0; c < cols; c++)
			acc += s[c];
		dst[r] = acc;
	}
}

void
spirt_dense_backward(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight, size_t B,
    size_t C, size_t OC)
{
	// dweight (OC,C) = dout^T (OC,B) . inp (B,C)
	spirt_sgemm(1, 0, OC, C, B, 1.0f, dout, OC, inp, C, 0.0f, dweight, C);
	colsum(dbias, dout, B, OC);
	// dinp (B,C) = dout (B,OC) . weight (OC,C)
	if (dinp != NULL)
		spirt_sgemm(0, 0, B, C, OC, 1.0f, dout, OC, weight, C, 0.0f,
		    dinp, C);
}

void
spirt_dense_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight, size_t B,
    size_t C, size_t OC)
{
	size_t b, o, i;

	for (o = 0; o < OC; o++) {
		double sb = 0;
		for (b = 0; b < B; b++)
			sb += dout[b * OC + o];
		dbias[o] = (float)sb;
		for (i = 0; i < C; i++) {
			double s = 0;
			for (b = 0; b < B; b++)
				s += (double)dout[b * OC + o] * inp[b * C + i];
			dweight[o * C + i] = (float)s;
		}
	}
	if (dinp == NULL)
		return;
	for (b = 0; b < B; b++) {
		for (i = 0; i < C; i++) {
			double s = 0;
			for (o = 0; o < OC; o++)
				s += (double)dout[b * OC + o] * weight[o * C + i];
			dinp[b * C + i] = (float)s;
		}
	}
}

/* ---- ReLU ---- */

void
spirt_relu_forward(float *out, const float *inp, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float v = inp[i];
		out[i] = v > 0.0f ? v : 0.0f;
	}
}

void
spirt_relu_backward(float *dinp, const float *dout, const float *out,
    size_t n)
{
	size_t i;

	// both loads unconditional, so the select needs no branch
	for (i = 0; i < n; i++) {
		float d = dout[i], o = out[i];
		dinp[i] = o > 0.0f ? d : 0.0f;
	}
}

/* ---- convolution ---- */

void
spirt_im2col(float *col, const float *inp, size_t sc, size_t sb, size_t B,
    size_t C, size_t H, size_t W, size_t k)
{
	size_t OH = H - k + 1, OW = W - k + 1, N = B * OH * OW;
	size_t c, ky, kx, b, oy, ox;

	// row (c,ky,kx) of col (C*k*k, B*OH*OW) holds the input pixels that
	// kernel tap multiplies, for every output pixel (b,oy,ox)
	for (c = 0; c < C; c++) {
		for (ky = 0; ky < k; ky++) {
			for (kx = 0; kx < k; kx++) {
				float *d = col + ((c * k + ky) * k + kx) * N;
				for (b = 0; b < B; b++) {
					const float *s = inp + c * sc + b * sb +
					    ky * W + kx;
					for (oy = 0; oy < OH; oy++) {
						for (ox = 0; ox < OW; ox++)
							d[ox] = s[ox];
						d += OW;
						s += W;
					}
				}
			}
		}
	}
}

static void
zero_planes(float *x, size_t sc, size_t sb, size_t B, size_t C, size_t HW)
{
	size_t c, b;

	for (c = 0; c < C; c++)
		for (b = 0; b < B; b++)
			memset(x + c * sc + b * sb, 0, HW * sizeof *x);
}

void
spirt_col2im(float *dinp, const float *dcol, size_t sc, size_t sb, size_t B,
    size_t C, size_t H, size_t W, size_t k)
{
	size_t OH = H - k + 1, OW = W - k + 1, N = B * OH * OW;
	size_t c, ky, kx, b, oy, ox;

	zero_planes(dinp, sc, sb, B, C, H * W);
	for (c = 0; c < C; c++) {
		for (ky = 0; ky < k; ky++) {
			for (kx = 0; kx < k; kx++) {
				const float *s = dcol +
				    ((c * k + ky) * k + kx) * N;
				for (b = 0; b < B; b++) {
					float *d = dinp + c * sc + b * sb +
					    ky * W + kx;
					for (oy = 0; oy < OH; oy++) {
						for (ox = 0; ox < OW; ox++)
							d[ox] += s[ox];
						s += OW;
						d += W;
					}
				}
			}
		}
	}
}

void
spirt_conv_forward(float *out, float *col, const float *inp, size_t sc,
    size_t sb, const float *weight, const float *bias, size_t B, size_t C,
    size_t H, size_t W, size_t OC, size_t k)
{
	size_t N = B * (H - k + 1) * (W - k + 1), K = C * k * k, o, j;

	spirt_im2col(col, inp, sc, sb, B, C, H, W, k);
	if (bias != NULL)
		for (o = 0; o < OC; o++)
			for (j = 0; j < N; j++)
				out[o * N + j] = bias[o];
	// out (OC,N) += weight (OC,K) . col (K,N)
	spirt_sgemm(0, 0, OC, N, K, 1.0f, weight, K, col, N,
	    bias != NULL ? 1.0f : 0.0f, out, N);
}

void
spirt_conv_forward_naive(float *out, const float *inp, size_t sc, size_t sb,
    const float *weight, const float *bias, size_t B, size_t C, size_t H,
    size_t W, size_t OC, size_t k)
{
	size_t OH = H - k + 1, OW = W - k + 1;
	size_t o, b, oy, ox, c, ky, kx;

	for (o = 0; o < OC; o++)
	for (b = 0; b < B; b++)
	for (oy = 0; oy < OH; oy++)
	for (ox = 0; ox < OW; ox++) {
		double s = bias[o];
		for (c = 0; c < C; c++)
			for (ky = 0; ky < k; ky++)
				for (kx = 0; kx < k; kx++)
					s += (double)weight[((o * C + c) * k +
					    ky) * k + kx] * inp[c * sc +
					    b * sb + (oy + ky) * W + ox + kx];
		out[((o * B + b) * OH + oy) * OW + ox] = (float)s;
	}
}

void
spirt_conv_backward(float *dinp, float *dweight, float *dbias, float *col,
    const float *dout, const float *weight, size_t sc, size_t sb, size_t B,
    size_t C, size_t H, size_t W, size_t OC, size_t k)
{
	size_t N = B * (H - k + 1) * (W - k + 1), K = C * k * k, o, j;
	float *dwt;

	rowsum(dbias, dout, OC, N);
	// dweight^T (K,OC) = col (K,N) . dout^T (N,OC), then transposed:
	// OpenBLAS runs this shape 15-20% faster than dweight (OC,K) =
	// dout . col^T (long inner dimension, few rows), see bench/grad.sh
	if ((dwt = malloc(K * OC * sizeof *dwt)) != NULL) {
		spirt_sgemm(0, 1, K, OC, N, 1.0f, col, N, dout, N, 0.0f, dwt,
		    OC);
		for (o = 0; o < OC; o++)
			for (j = 0; j < K; j++)
				dweight[o * K + j] = dwt[j * OC + o];
		free(dwt);
	} else {
		spirt_sgemm(0, 1, OC, K, N, 1.0f, dout, N, col, N, 0.0f,
		    dweight, K);
	}
	if (dinp == NULL)
		return;
	// dcol (K,N) = weight^T (K,OC) . dout (OC,N), into col's space
	spirt_sgemm(1, 0, K, N, OC, 1.0f, weight, K, dout, N, 0.0f, col, N);
	spirt_col2im(dinp, col, sc, sb, B, C, H, W, k);
}

void
spirt_conv_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight, size_t sc,
    size_t sb, size_t B, size_t C, size_t H, size_t W, size_t OC, size_t k)
{
	size_t OH = H - k + 1, OW = W - k + 1;
	size_t o, b, oy, ox, c, ky, kx, y, x;

	for (o = 0; o < OC; o++) {
		double s = 0;
		for (b = 0; b < B; b++)
			for (oy = 0; oy < OH * OW; oy++)
				s += dout[(o * B + b) * OH * OW + oy];
		dbias[o] = (float)s;
		for (c = 0; c < C; c++)
		for (ky = 0; ky < k; ky++)
		for (kx = 0; kx < k; kx++) {
			double g = 0;
			for (b = 0; b < B; b++)
				for (oy = 0; oy < OH; oy++)
					for (ox = 0; ox < OW; ox++)
						g += (double)dout[((o * B + b) *
						    OH + oy) * OW + ox] *
						    inp[c * sc + b * sb +
						    (oy + ky) * W + ox + kx];
			dweight[((o * C + c) * k + ky) * k + kx] = (float)g;
		}
	}
	if (dinp == NULL)
		return;
	// gather form: each input pixel sums the outputs it fed
	for (c = 0; c < C; c++)
	for (b = 0; b < B; b++)
	for (y = 0; y < H; y++)
	for (x = 0; x < W; x++) {
		double g = 0;
		for (o = 0; o < OC; o++)
			for (ky = 0; ky < k; ky++)
				for (kx = 0; kx < k; kx++) {
					if (y < ky || x < kx)
						continue;
					oy = y - ky;
					ox = x - kx;
					if (oy >= OH || ox >= OW)
						continue;
					g += (double)dout[((o * B + b) * OH +
					    oy) * OW + ox] * weight[((o * C +
					    c) * k + ky) * k + kx];
				}
		dinp[c * sc + b * sb + y * W + x] = (float)g;
	}
}

/* ---- max-pool ---- */

void
spirt_maxpool_forward(float *out, uint32_t *idx, const float *inp, size_t P,
    size_t H, size_t W)
{
	size_t PH = H / 2, PW = W / 2, p, y, x;

	for (p = 0; p < P; p++) {
		for (y = 0; y < PH; y++) {
			const float *r0 = inp + p * H * W + 2 * y * W;
			const float *r1 = r0 + W;
			float *o = out + (p * PH + y) * PW;
			uint32_t *ix = idx + (p * PH + y) * PW;
			uint32_t base = (uint32_t)(2 * y * W), w = (uint32_t)W;

			// selects, not branches (random data mispredicts),
			// in a loop the vectoriser takes; ">" keeps the first
			// of equal maxima, as torch does
			for (x = 0; x < PW; x++) {
				float a = r0[2 * x], b = r0[2 * x + 1];
				float c = r1[2 * x], d = r1[2 * x + 1], m = a;
				uint32_t i0 = base + 2 * (uint32_t)x, bi = i0;
				bi = b > m ? i0 + 1 : bi;
				m = b > m ? b : m;
				bi = c > m ? i0 + w : bi;
				m = c > m ? c : m;
				bi = d > m ? i0 + w + 1 : bi;
				m = d > m ? d : m;
				o[x] = m;
				ix[x] = bi;
			}
		}
	}
}

void
spirt_maxpool_backward(float *dinp, const float *dout, const uint32_t *idx,
    size_t P, size_t H, size_t W)
{
	size_t n = (H / 2) * (W / 2), p, i;

	memset(dinp, 0, P * H * W * sizeof *dinp);
	for (p = 0; p < P; p++)
		for (i = 0; i < n; i++)
			dinp[p * H * W + idx[p * n + i]] = dout[p * n + i];
}

void
spirt_poolrelu_forward(float *out, uint32_t *idx, const float *inp,
    const float *bias, size_t C, size_t B, size_t H, size_t W)
{
	size_t n = (H / 2) * (W / 2), c, i;

	spirt_maxpool_forward(out, idx, inp, C * B, H, W);
	for (c = 0; c < C; c++) {
		float *o = out + c * B * n, b = bias[c];
		for (i = 0; i < B * n; i++) {
			float v = o[i] + b;
			o[i] = v > 0.0f ? v : 0.0f;
		}
	}
}

void
spirt_poolrelu_backward(float *dinp, const float *dout, const float *out,
    const uint32_t *idx, size_t C, size_t B, size_t H, size_t W)
{
	size_t n = (H / 2) * (W / 2), p, i;

	memset(dinp, 0, C * B * H * W * sizeof *dinp);
	// a zero written where out <= 0 is harmless: dinp is zero there
	for (p = 0; p < C * B; p++)
		for (i = 0; i < n; i++) {
			float d = dout[p * n + i], o = out[p * n + i];
			dinp[p * H * W + idx[p * n + i]] = o > 0.0f ? d : 0.0f;
		}
}

/* ---- softmax cross-entropy ---- */

double
spirt_xent_forward(float *probs, float *losses, const float *logits,
    const int32_t *labels, size_t B, size_t K)
{
	double total = 0;
	size_t b, j;

	for (b = 0; b < B; b++) {
		const float *z = logits + b * K;
		float *p = probs + b * K;
		float m = z[0];
		double sum = 0, l;

		for (j = 1; j < K; j++)
			if (z[j] > m)
				m = z[j];
		for (j = 0; j < K; j++) {
			p[j] = expf(z[j] - m);
			sum += p[j];
		}
		for (j = 0; j < K; j++)
			p[j] = (float)(p[j] / sum);
		// -log softmax_y = log sum exp(z - m) - (z_y - m)
		l = log(sum) - ((double)z[labels[b]] - m);
		if (losses != NULL)
			losses[b] = (float)l;
		total += l;
	}
	return B > 0 ? total / (double)B : 0.0;
}

void
spirt_xent_backward(float *dlogits, const float *probs,
    const int32_t *labels, size_t B, size_t K)
{
	float inv = 1.0f / (float)B;
	size_t b, j;

	for (b = 0; b < B; b++) {
		for (j = 0; j < K; j++)
			dlogits[b * K + j] = probs[b * K + j] * inv;
		dlogits[b * K + labels[b]] -= inv;
	}
}
