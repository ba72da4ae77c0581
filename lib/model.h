/* model.h - model specs, flat parameter vectors, forward and backward */
#ifndef SPIRT_MODEL_H
#define SPIRT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"
#include "spirt.h"

/*
 * A model is named by a short spec string, stored as the name of its
 * parameter record (spirt-model(5)):
 *
 *   softmax:D:K             multinomial logistic regression, D -> K
 *   mlp:D-H1-...-Hn-K       dense layers, ReLU between them
 *   cnn:CxHxW-C1-C2-K       conv5x5(C->C1) ReLU maxpool2
 *                           conv5x5(C1->C2) ReLU maxpool2 dense(->K)
 *   net:CxHxW:L,L,...       a layer list (spirt-model(5)): conv, depthwise,
 *                           bn, relu, pools, gap, flatten, dense, dropout
 *                           and residual blocks res(BODY|SHORTCUT)
 *   resnet8:CxHxW-K         the preset net of He et al.'s CIFAR ResNet-8
 *
 * All parameters live in one flat float32 vector: for each layer in order,
 * its weight then its bias, in PyTorch's layouts (Linear (out,in), Conv2d
 * (out,in,5,5)); a dense layer after the convolutions reads the pooled
 * maps flattened in (C,H,W) order as torch.flatten does.  The loss is the
 * mean softmax cross-entropy over the batch and gradients are of that mean.
 */

#define SPIRT_SPEC_MAX      255
#define SPIRT_MODEL_LAYERS  16
#define SPIRT_CONV_K        5
#define SPIRT_NET_NODES     128         /* nodes of a layer list */
#define SPIRT_BN_MOMENTUM   0.1f        /* torch.nn.BatchNorm2d's */
#define SPIRT_BN_EPS        1e-5f

enum spirt_model_kind { SPIRT_SOFTMAX = 1, SPIRT_MLP, SPIRT_CNN, SPIRT_NET };
enum spirt_layer_kind { SPIRT_LAYER_DENSE = 1, SPIRT_LAYER_CONV };

struct spirt_layer {
	int kind;               /* enum spirt_layer_kind */
	int relu;               /* ReLU after it */
	int pool;               /* conv: 2x2 max-pool after the ReLU */
	char name[16];          /* "fc1", "conv2", ... */
	size_t in, out;         /* dense: features; conv: C*H*W, OC*PH*PW */
	size_t C, H, W, OC, k;  /* conv: input (C,H,W), OC kernels k x k */
	size_t OH, OW, PH, PW;  /* conv output and pooled sizes */
	size_t woff, wlen;      /* weight offset and count in the vector */
	size_t boff, blen;      /* bias */
};

/*
 * A node of a layer list (SPIRT_NET).  Activations are buffers, each
 * node's output a buffer of its own but an in-place ReLU's; buffer 0 is
 * the input, as (C,B,H,W) planes.  Maps are CBHW, flat values (after
 * flatten or gap) (B,F) row-major.
 */
enum spirt_node_kind {
	SPIRT_N_CONV = 1, SPIRT_N_DW, SPIRT_N_BN, SPIRT_N_RELU,
	SPIRT_N_MAXPOOL, SPIRT_N_AVGPOOL, SPIRT_N_GAP, SPIRT_N_FLATTEN,
	SPIRT_N_DENSE, SPIRT_N_ADD, SPIRT_N_DROPOUT
};

struct spirt_node {
	int kind;               /* enum spirt_node_kind */
	int bias;               /* conv, dw: a bias (none before a bn) */
	int accum;              /* a residual body's first node: its input
				   gradient adds to the shortcut's */
	int in, in2, out;       /* buffers; in2: add's shortcut */
	size_t C, H, W;         /* input per sample (flat: C, 1, 1) */
	size_t OC, OH, OW;      /* output */
	size_t k, s, p;         /* kernel, stride, padding; dropout: k is
				   the percentage dropped */
	size_t woff, wlen;      /* weight (bn: gamma) */
	size_t boff, blen;      /* bias (bn: beta) */
	size_t soff;            /* bn: running mean at soff, var at +C */
};

struct spirt_model {
	int kind;               /* enum spirt_model_kind */
	char spec[SPIRT_SPEC_MAX + 1];  /* canonical spec */
	size_t C, H, W;         /* input shape (flat inputs: D,1,1) */
	size_t nin;             /* features per sample, C*H*W */
	size_t nclass;
	size_t nparams;
	size_t flops;           /* multiply-adds x2 per sample, forward */
	int nlayers;
	struct spirt_layer layer[SPIRT_MODEL_LAYERS];
	/* SPIRT_NET only */
	size_t nstate;          /* floats of state: bn running statistics */
	int nnodes, nbuf;
	struct spirt_node node[SPIRT_NET_NODES];
	size_t bufsz[SPIRT_NET_NODES + 1];      /* floats per sample */
};

/*
 * Parse spec into m (layer sizes, parameter offsets, canonical spec).
 * Returns 0 or SPIRT_EMODEL (malformed, sizes out of range, image too
 * small for the convolutions).
 */
SPIRT_MUST_CHECK int spirt_model_parse(struct spirt_model *m,
    const char *spec);

/*
 * The models spirt-train names (-m NAME): the spec of each and its
 * default peak learning rate (Adam's, spirt-train's defaults), as text
 * exactly as documented in spirt-model(5).  NULL for another name.
 */
struct spirt_preset {
	const char *name, *spec, *lr;
};
const struct spirt_preset *spirt_model_preset(const char *name);
/* the i-th preset (0, 1, ...), NULL past the last */
const struct spirt_preset *spirt_model_preset_at(size_t i);

/*
 * Seeded initialisation of params (m->nparams floats): He normal for
 * layers followed by a ReLU, Glorot uniform for the last, zero biases.
 */
void spirt_model_init(const struct spirt_model *m, float *params,
    uint64_t seed);

/*
 * A fresh model's state (m->nstate floats): running means 0, variances
 * 1, as torch.nn.BatchNorm2d starts.
 */
void spirt_model_state_init(const struct spirt_model *m, float *state);

/* ---- batch workspace: allocated once, reused for every batch ---- */

struct spirt_ws;

#define SPIRT_WS_TRAIN 0x1      /* also allocate what backward needs;
				   batch normalisation in training mode */
#define SPIRT_WS_NAIVE 0x2      /* use the naive reference kernels */

/* Workspace for batches of up to maxbatch samples.  0 or ENOMEM. */
SPIRT_MUST_CHECK int spirt_ws_new(struct spirt_ws **out,
    const struct spirt_model *m, size_t maxbatch, unsigned flags);
void spirt_ws_free(struct spirt_ws *ws);
/* Where the caller puts a batch: inputs (maxbatch, nin), labels (maxbatch). */
float *spirt_ws_input(struct spirt_ws *ws);
int32_t *spirt_ws_labels(struct spirt_ws *ws);
/* Softmax outputs of the last forward, (B, nclass). */
const float *spirt_ws_probs(const struct spirt_ws *ws);
/* Per-sample losses of the last forward, (B). */
const float *spirt_ws_losses(const struct spirt_ws *ws);
/*
 * The model's state (m->nstate floats, a fresh model's at first): an
 * evaluation forward normalises with it, a training one (SPIRT_WS_TRAIN)
 * updates it with its batch's statistics (momentum SPIRT_BN_MOMENTUM).
 */
float *spirt_ws_state(struct spirt_ws *ws);
/*
 * The seed of a training forward's dropout masks (0 at first): node i of
 * the list draws from spirt_seed_mix(seed, i, 0) (layers.h).  spirt-grad
 * sets spirt_seed_mix(seed, step, worker): reruns draw the same masks.
 */
void spirt_ws_seed(struct spirt_ws *ws, uint64_t seed);

/*
 * Forward B (<= maxbatch) samples from the workspace's input and labels
 * through the model; returns the mean loss.  Labels must be in
 * [0, nclass) (spirt_labels_check).
 */
double spirt_model_forward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, size_t B);
/*
 * Gradient of the last forward's mean loss into grads (nparams floats,
 * overwritten).  The workspace must have SPIRT_WS_TRAIN.
 */
void spirt_model_backward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, float *grads, size_t B);

/* Index of the largest probability of each sample into pred (B). */
void spirt_model_predict(int32_t *pred, const struct spirt_ws *ws,
    const struct spirt_model *m, size_t B);

/* SPIRT_EDATA if a label is outside [0, nclass), else 0. */
SPIRT_MUST_CHECK int spirt_labels_check(const int32_t *y, size_t n,
    size_t nclass);


#endif
