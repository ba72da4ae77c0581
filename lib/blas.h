/* blas.h - OpenBLAS loading and the model kernels, each with a naive twin */
#ifndef SPIRT_BLAS_H
#define SPIRT_BLAS_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * OpenBLAS is not linked: spirt_blas_init() dlopen()s it, so tools that
 * never multiply matrices do not pay its load time, and so the core type
 * can be chosen before the library's load-time constructor reads
 * OPENBLAS_CORETYPE.  Debian 12's OpenBLAS 0.3.21 falls back to its slow
 * Prescott kernels on CPUs it does not know; the tool (blas_load(),
 * cmd/toolblas.c) sets OPENBLAS_CORETYPE to spirt_blas_cpu_core()'s
 * choice, SkylakeX (AVX-512 F/BW/DQ/VL usable) or Haswell (AVX2 and FMA
 * usable), when the environment does not set it, and OPENBLAS_NUM_THREADS,
 * before it calls spirt_blas_init().  An explicit OPENBLAS_CORETYPE always
 * wins.  This library reads and sets no environment variable.
 *
 * Until spirt_blas_init() succeeds, spirt_sgemm() runs the naive reference
 * multiply, so every kernel below works without OpenBLAS, only slower.
 */

/* Where the OpenBLAS core type came from. */
enum spirt_blas_source {
	SPIRT_BLAS_UNLOADED = 0,        /* not loaded: naive kernels */
	SPIRT_BLAS_ENV,                 /* OPENBLAS_CORETYPE was set */
	SPIRT_BLAS_AUTO,                /* spirt chose it from the CPU */
	SPIRT_BLAS_DETECT               /* left to OpenBLAS's own detection */
};

/* What the tool resolved before the load. */
struct spirt_blas_conf {
	const char *lib;        /* library to load; NULL or "":
				 * libopenblas.so.0 ($SPIRT_BLAS_LIB) */
	int threads;            /* BLAS threads (>= 1) */
	int source;             /* where the core type came from:
				 * SPIRT_BLAS_ENV, _AUTO or _DETECT */
};

/*
 * Load OpenBLAS (c->lib) with c->threads BLAS threads.  Idempotent: later
 * calls only change the thread count.  Returns 0 or SPIRT_ENOTSUP
 * (library or symbol missing; spirt_blas_error() says why).
 */
SPIRT_MUST_CHECK int spirt_blas_init(const struct spirt_blas_conf *c)
    SPIRT_NONNULL(1);
/* Why the last spirt_blas_init() failed ("" if it did not). */
const char *spirt_blas_error(void);
/* Core OpenBLAS runs ("Haswell", "SkylakeX", ...), or "none" (naive). */
const char *spirt_blas_corename(void);
/* Source of the core type, one of enum spirt_blas_source. */
int spirt_blas_source(void);
/* "env", "auto", "detect" or "none". */
const char *spirt_blas_source_name(void);
/* openblas_get_config() ("OpenBLAS 0.3.21 DYNAMIC_ARCH ..."), or "none". */
const char *spirt_blas_config(void);
/* OpenBLAS's version from its config ("0.3.21"), or "none" (naive). */
const char *spirt_blas_version(void);
/* The core type spirt would choose for this CPU, or NULL (leave it). */
const char *spirt_blas_cpu_core(void);

/*
 * Row-major C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T when
 * ta/tb is non-zero.  op(A) is (M,K), op(B) is (K,N), C is (M,N).
 */
void spirt_sgemm(int ta, int tb, size_t M, size_t N, size_t K, float alpha,
    const float *A, size_t lda, const float *B, size_t ldb, float beta,
    float *C, size_t ldc);
void spirt_sgemm_naive(int ta, int tb, size_t M, size_t N, size_t K,
    float alpha, const float *A, size_t lda, const float *B, size_t ldb,
    float beta, float *C, size_t ldc);

/*
 * Kernels, llm.c style: X_forward / X_backward, with X_..._naive beside each
 * BLAS-backed one as the reference the tests compare against.  Backward
 * kernels overwrite (never accumulate into) parameter gradients, since every
 * parameter is used once per model.
 */

/* ---- dense (fully connected) ---- */

/* inp is (B,C), weight is (OC,C) as torch.nn.Linear, bias (OC), out (B,OC) */
void spirt_dense_forward(float *out, const float *inp, const float *weight,
    const float *bias, size_t B, size_t C, size_t OC);
void spirt_dense_forward_naive(float *out, const float *inp,
    const float *weight, const float *bias, size_t B, size_t C, size_t OC);
/*
 * dout is (B,OC); dinp (B,C) may be NULL (first layer); dweight (OC,C) and
 * dbias (OC) are overwritten.
 */
void spirt_dense_backward(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight, size_t B,
    size_t C, size_t OC);
void spirt_dense_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight, size_t B,
    size_t C, size_t OC);

/* ---- ReLU (elementwise, n values; out may equal inp) ---- */

void spirt_relu_forward(float *out, const float *inp, size_t n);
/* dinp = dout where out > 0, else 0 (dinp may equal dout) */
void spirt_relu_backward(float *dinp, const float *dout, const float *out,
    size_t n);

/* ---- convolution, stride 1, no padding, square k x k kernel ---- */

/*
 * Activations between conv layers are kept "CBHW": channel-major planes
 * (C,B,H,W), so one sgemm covers the whole batch and no transpose is
 * needed.  The input is described by strides instead: plane (c,b) of H*W
 * floats starts at inp + c*sc + b*sb (CBHW: sc = B*H*W, sb = H*W; the
 * usual BCHW: sc = H*W, sb = C*H*W).
 *
 * weight is (OC,C,k,k) as torch.nn.Conv2d, bias (OC), out is (OC,B,OH,OW)
 * with OH = H-k+1, OW = W-k+1; bias may be NULL (no bias, as when
 * spirt_poolrelu_forward adds it).  col is the im2col workspace,
 * (C*k*k, B*OH*OW); forward fills it and backward needs it unchanged (and
 * then reuses it as scratch).
 */
void spirt_im2col(float *col, const float *inp, size_t sc, size_t sb,
    size_t B, size_t C, size_t H, size_t W, size_t k);
/* the adjoint: dinp (strides as inp, zeroed here) += scatter of dcol */
void spirt_col2im(float *dinp, const float *dcol, size_t sc, size_t sb,
    size_t B, size_t C, size_t H, size_t W, size_t k);
void spirt_conv_forward(float *out, float *col, const float *inp, size_t sc,
    size_t sb, const float *weight, const float *bias, size_t B, size_t C,
    size_t H, size_t W, size_t OC, size_t k);
void spirt_conv_forward_naive(float *out, const float *inp, size_t sc,
    size_t sb, const float *weight, const float *bias, size_t B, size_t C,
    size_t H, size_t W, size_t OC, size_t k);
/*
 * dout is (OC,B,OH,OW); dweight (OC,C,k,k), dbias (OC) overwritten; dinp
 * (strides sc, sb) may be NULL for the first layer.  col holds the forward
 * im2col and is clobbered.
 */
void spirt_conv_backward(float *dinp, float *dweight, float *dbias,
    float *col, const float *dout, const float *weight, size_t sc,
    size_t sb, size_t B, size_t C, size_t H, size_t W, size_t OC, size_t k);
void spirt_conv_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight, size_t sc,
    size_t sb, size_t B, size_t C, size_t H, size_t W, size_t OC, size_t k);

/* ---- 2x2 max-pool, stride 2 (floor, as torch.nn.MaxPool2d(2)) ---- */

/*
 * inp is P planes of (H,W), out P planes of (H/2,W/2), idx (same count as
 * out) the flat index into inp of each maximum (first one on ties).
 */
void spirt_maxpool_forward(float *out, uint32_t *idx, const float *inp,
    size_t P, size_t H, size_t W);
/* dinp (P,H,W) zeroed, then each dout routed to its maximum */
void spirt_maxpool_backward(float *dinp, const float *dout,
    const uint32_t *idx, size_t P, size_t H, size_t W);

/*
 * What follows a convolution, fused into one pass over its output:
 * out = relu(maxpool2(inp) + bias[c]), which equals maxpool2(relu(inp +
 * bias[c])) because the bias is constant over a plane and ReLU is
 * monotonic.  inp is (C,B,H,W) without bias (spirt_conv_forward with
 * bias NULL), out and idx (C,B,H/2,W/2).
 */
void spirt_poolrelu_forward(float *out, uint32_t *idx, const float *inp,
    const float *bias, size_t C, size_t B, size_t H, size_t W);
/* dinp (C,B,H,W) zeroed, then dout where out > 0 routed to its maximum */
void spirt_poolrelu_backward(float *dinp, const float *dout,
    const float *out, const uint32_t *idx, size_t C, size_t B, size_t H,
    size_t W);

/* ---- softmax cross-entropy (numerically stable) ---- */

/*
 * logits (B,K), labels (B) in [0,K).  probs (B,K) receives the softmax;
 * losses (B) may be NULL.  Returns the mean loss over the batch.
 */
double spirt_xent_forward(float *probs, float *losses, const float *logits,
    const int32_t *labels, size_t B, size_t K);
/* dlogits (B,K) = (probs - onehot(labels)) / B: gradient of the mean loss */
void spirt_xent_backward(float *dlogits, const float *probs,
    const int32_t *labels, size_t B, size_t K);

#endif
