/* layers.h - conv-net layer kernels beyond blas.h, each with a naive twin */
#ifndef SPIRT_LAYERS_H
#define SPIRT_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * Kernels, llm.c style as in blas.h: X_forward / X_backward, with
 * X_..._naive beside each as the reference the tests compare against (the
 * naive ones loop directly and accumulate in double).  Activations are
 * "CBHW": channel-major planes (C,B,H,W), contiguous, so a channel's
 * values over the batch are one run of B*H*W floats.  Backward kernels
 * overwrite (never accumulate into) their outputs.  No kernel allocates
 * and none reads the environment; the fast ones run OpenBLAS's threads
 * only through spirt_sgemm().
 */

/* ---- conv2d: k x k kernel, stride s, zero padding p ---- */

/*
 * The shape of a convolution: input (C,B,H,W), weight (OC,C,k,k) as
 * torch.nn.Conv2d, output (OC,B,OH,OW) with OH = (H + 2p - k) / s + 1
 * (floor), OW likewise.  For a depthwise convolution OC = C and the
 * weight is (C,1,k,k) (torch's groups = C).
 */
struct spirt_conv2d {
	size_t B, C, H, W, OC, k, s, p;
	size_t OH, OW;          /* set by spirt_conv2d_shape() */
};

/*
 * Fill g and its output size.  Returns 0, or SPIRT_EINVAL if a size is 0
 * or the padded input is smaller than the kernel.
 */
SPIRT_MUST_CHECK int spirt_conv2d_shape(struct spirt_conv2d *g, size_t B,
    size_t C, size_t H, size_t W, size_t OC, size_t k, size_t s, size_t p)
    SPIRT_NONNULL(1);
/*
 * floats of the im2col workspace: C*k*k rows of the output pixels of a
 * chunk of samples (as many as fit 512 KB, one at least), so that it
 * stays in the cache, then C*k*k*OC for backward's transposed weight
 * gradient
 */
size_t spirt_conv2d_colsize(const struct spirt_conv2d *g);

/*
 * col (C*k*k, nb*OH*OW) gets, in row (c,ky,kx), the input pixel that tap
 * multiplies for each output pixel (b,oy,ox) of samples b0 .. b0+nb-1, 0
 * where it falls in the padding; col2im is its adjoint (the planes of
 * those samples in dinp overwritten).
 */
void spirt_im2col_sp(float *col, const float *inp,
    const struct spirt_conv2d *g, size_t b0, size_t nb);
void spirt_col2im_sp(float *dinp, const float *dcol,
    const struct spirt_conv2d *g, size_t b0, size_t nb);

/*
 * out = conv(inp, weight) + bias; bias may be NULL (a convolution before
 * batch normalisation has none).  The fast one is im2col + spirt_sgemm,
 * a chunk of samples at a time in col (spirt_conv2d_colsize() floats,
 * scratch: backward builds it again from inp); a 1x1 convolution of
 * stride 1 without padding multiplies the chunk of inp itself.
 */
void spirt_conv2d_forward(float *out, float *col, const float *inp,
    const float *weight, const float *bias, const struct spirt_conv2d *g);
void spirt_conv2d_forward_naive(float *out, const float *inp,
    const float *weight, const float *bias, const struct spirt_conv2d *g);
/*
 * dout (OC,B,OH,OW); dweight (OC,C,k,k) overwritten; dbias (OC) and dinp
 * (C,B,H,W) may be NULL (no bias; the first layer).
 */
void spirt_conv2d_backward(float *dinp, float *dweight, float *dbias,
    float *col, const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g);
void spirt_conv2d_backward_naive(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g);

/*
 * Depthwise: channel c of the output is channel c of the input convolved
 * with weight[c] (C,1,k,k); g->OC must equal g->C.  Direct loops, no
 * workspace; bias, dbias and dinp may be NULL as above.
 */
void spirt_dwconv2d_forward(float *out, const float *inp,
    const float *weight, const float *bias, const struct spirt_conv2d *g);
void spirt_dwconv2d_forward_naive(float *out, const float *inp,
    const float *weight, const float *bias, const struct spirt_conv2d *g);
void spirt_dwconv2d_backward(float *dinp, float *dweight, float *dbias,
    const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g);
void spirt_dwconv2d_backward_naive(float *dinp, float *dweight,
    float *dbias, const float *dout, const float *inp, const float *weight,
    const struct spirt_conv2d *g);

/* ---- batch normalisation over (C, B*H*W) ---- */

/*
 * Training mode, as torch.nn.BatchNorm2d: each channel c of inp (C runs
 * of n = B*H*W values) is normalised with its batch mean and biased
 * variance, out = gamma[c] * (x - mean) / sqrt(var + eps) + beta[c].
 * mean and rstd (C each; rstd = 1/sqrt(var + eps)) are saved for the
 * backward pass.  The running statistics (C each) are updated in place
 * when run_mean is not NULL: run = (1 - momentum) * run + momentum *
 * batch, with the UNBIASED variance var * n / (n - 1) (var itself when
 * n = 1), as torch does.
 */
void spirt_bn_forward(float *out, float *mean, float *rstd, float *run_mean,
    float *run_var, const float *inp, const float *gamma, const float *beta,
    size_t C, size_t n, float momentum, float eps);
void spirt_bn_forward_naive(float *out, float *mean, float *rstd,
    float *run_mean, float *run_var, const float *inp, const float *gamma,
    const float *beta, size_t C, size_t n, float momentum, float eps);
/*
 * The gradient of training mode (through the batch statistics): dinp
 * (C,n) may be NULL; dgamma and dbeta (C) overwritten.  mean and rstd as
 * the forward pass saved them.
 */
void spirt_bn_backward(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *mean, const float *rstd,
    const float *gamma, size_t C, size_t n);
void spirt_bn_backward_naive(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *mean, const float *rstd,
    const float *gamma, size_t C, size_t n);

/*
 * Batch normalisation (training mode) followed by a ReLU, fused: out =
 * max(0, bn(inp)), the same bits as spirt_bn_forward then
 * spirt_relu_forward in place, in one pass over out.  Its backward takes
 * the forward's out (after the ReLU) and writes the ReLU's gradient into
 * dout (dout where out > 0, else 0: spirt_relu_backward in place), a
 * block at a time as its sums read it, then bn's gradient as
 * spirt_bn_backward: the same bits as the two kernels one after the
 * other.  The naive twins are those two naive passes.
 */
void spirt_bn_relu_forward(float *out, float *mean, float *rstd,
    float *run_mean, float *run_var, const float *inp, const float *gamma,
    const float *beta, size_t C, size_t n, float momentum, float eps);
void spirt_bn_relu_forward_naive(float *out, float *mean, float *rstd,
    float *run_mean, float *run_var, const float *inp, const float *gamma,
    const float *beta, size_t C, size_t n, float momentum, float eps);
void spirt_bn_relu_backward(float *dinp, float *dgamma, float *dbeta,
    float *dout, const float *out, const float *inp, const float *mean,
    const float *rstd, const float *gamma, size_t C, size_t n);
void spirt_bn_relu_backward_naive(float *dinp, float *dgamma, float *dbeta,
    float *dout, const float *out, const float *inp, const float *mean,
    const float *rstd, const float *gamma, size_t C, size_t n);

/*
 * Evaluation mode: the running statistics normalise, nothing is updated.
 * Its backward treats them as constants: dinp = dout * gamma * rstd.
 */
void spirt_bn_eval_forward(float *out, const float *inp, const float *gamma,
    const float *beta, const float *run_mean, const float *run_var,
    size_t C, size_t n, float eps);
void spirt_bn_eval_forward_naive(float *out, const float *inp,
    const float *gamma, const float *beta, const float *run_mean,
    const float *run_var, size_t C, size_t n, float eps);
void spirt_bn_eval_backward(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *gamma,
    const float *run_mean, const float *run_var, size_t C, size_t n,
    float eps);
void spirt_bn_eval_backward_naive(float *dinp, float *dgamma, float *dbeta,
    const float *dout, const float *inp, const float *gamma,
    const float *run_mean, const float *run_var, size_t C, size_t n,
    float eps);

/* ---- pooling over P planes of (H,W) (P = C*B), no padding, floor ---- */

/*
 * Average pool k x k, stride k (torch.nn.AvgPool2d(k)): out (P, H/k,
 * W/k); rows and columns past the last whole window are dropped.
 */
void spirt_avgpool_forward(float *out, const float *inp, size_t P,
    size_t H, size_t W, size_t k);
void spirt_avgpool_forward_naive(float *out, const float *inp, size_t P,
    size_t H, size_t W, size_t k);
/* dinp (P,H,W) overwritten; 0 where no window reaches */
void spirt_avgpool_backward(float *dinp, const float *dout, size_t P,
    size_t H, size_t W, size_t k);
void spirt_avgpool_backward_naive(float *dinp, const float *dout, size_t P,
    size_t H, size_t W, size_t k);

/* Global average pool: out (P) the mean of each plane; (C,B) for CBHW. */
void spirt_gap_forward(float *out, const float *inp, size_t P, size_t HW);
void spirt_gap_forward_naive(float *out, const float *inp, size_t P,
    size_t HW);
void spirt_gap_backward(float *dinp, const float *dout, size_t P,
    size_t HW);
void spirt_gap_backward_naive(float *dinp, const float *dout, size_t P,
    size_t HW);

/*
 * Max-pool k x k, stride s (torch.nn.MaxPool2d(k, s)): out (P, OH, OW),
 * OH = (H - k) / s + 1, OW likewise (k <= H, W); idx the index within
 * its plane (y*W + x) of each maximum (the first on ties, as torch).
 * The naive backward finds the maxima again from inp.  With s < k
 * windows overlap and dinp sums what reaches a pixel.
 */
void spirt_maxpool2d_forward(float *out, uint32_t *idx, const float *inp,
    size_t P, size_t H, size_t W, size_t k, size_t s);
void spirt_maxpool2d_forward_naive(float *out, const float *inp, size_t P,
    size_t H, size_t W, size_t k, size_t s);
void spirt_maxpool2d_backward(float *dinp, const float *dout,
    const uint32_t *idx, size_t P, size_t H, size_t W, size_t k, size_t s);
void spirt_maxpool2d_backward_naive(float *dinp, const float *dout,
    const float *inp, size_t P, size_t H, size_t W, size_t k, size_t s);

/* ---- residual add (elementwise, n values) ---- */

/*
 * out = a + b (out may equal a or b).  Its backward passes dout to both
 * branches: da = db = dout (either may be NULL, or equal dout).  One
 * addition needs no naive twin.
 */
void spirt_residual_forward(float *out, const float *a, const float *b,
    size_t n);
void spirt_residual_backward(float *da, float *db, const float *dout,
    size_t n);
/*
 * The add followed by a ReLU (resnet's block end): out = max(0, a + b),
 * and its backward da = db = dout where out > 0, else 0 (either may be
 * NULL; neither may be dout, which is not changed).  The same bits as
 * the add, then spirt_relu_forward and spirt_relu_backward.
 */
void spirt_residual_relu_forward(float *out, const float *a, const float *b,
    size_t n);
void spirt_residual_relu_backward(float *da, float *db, const float *dout,
    const float *out, size_t n);

/* ---- dropout (training mode; evaluation passes values through) ---- */

/*
 * torch.nn.Dropout(pct / 100): each of n values kept with probability
 * 1 - pct/100 and scaled by 1 / (1 - pct/100), else 0; mask (n bytes)
 * records which.  Value i's draw is the top 24 bits of the (i+1)-th
 * splitmix64 output of seed, kept when below (100 - pct) * 2^24 / 100:
 * the same bits for the same seed anywhere.  pct in 1..99.  Its backward
 * scales dout by the same mask; two multiplications need no naive twin.
 */
void spirt_dropout_forward(float *out, uint8_t *mask, const float *inp,
    size_t n, unsigned pct, uint64_t seed);
void spirt_dropout_backward(float *dinp, const float *dout,
    const uint8_t *mask, size_t n, unsigned pct);

#endif
