/* model.c - model specs, flat parameter vectors, forward and backward */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "model.h"

#define DIM_MAX   (1u << 20)            /* any one size in a spec */
#define PARAM_MAX ((size_t)1 << 31)     /* floats in a parameter vector */
#define WS_MAXMEM 64

/* ---- specs ---- */

/* Parse a decimal in [1, DIM_MAX] at *p, advancing *p. */
static int
num(const char **p, size_t *v)
{
	const char *s = *p;
	size_t x = 0;

	if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
		return SPIRT_EMODEL;
	for (; *s >= '0' && *s <= '9'; s++) {
		x = x * 10 + (size_t)(*s - '0');
		if (x > DIM_MAX)
			return SPIRT_EMODEL;
	}
	if (x == 0)
		return SPIRT_EMODEL;
	*v = x;
	*p = s;
	return 0;
}

static int
expect(const char **p, char c)
{
	if (**p != c)
		return SPIRT_EMODEL;
	(*p)++;
	return 0;
}

static int
add_dense(struct spirt_model *m, size_t in, size_t out, int relu, int n)
{
	struct spirt_layer *l;

	if (m->nlayers >= SPIRT_MODEL_LAYERS)
		return SPIRT_EMODEL;
	l = &m->layer[m->nlayers++];
	memset(l, 0, sizeof *l);
	l->kind = SPIRT_LAYER_DENSE;
	l->relu = relu;
	snprintf(l->name, sizeof l->name, "fc%d", n);
	l->in = in;
	l->out = out;
	l->wlen = in * out;
	l->blen = out;
	m->flops += 2 * in * out;
	return 0;
}

static int
add_conv(struct spirt_model *m, size_t C, size_t H, size_t W, size_t OC,
    int n)
{
	struct spirt_layer *l;
	size_t k = SPIRT_CONV_K;

	if (H < k + 1 || W < k + 1 || m->nlayers >= SPIRT_MODEL_LAYERS)
		return SPIRT_EMODEL;            // pooled output would be empty
	l = &m->layer[m->nlayers++];
	memset(l, 0, sizeof *l);
	l->kind = SPIRT_LAYER_CONV;
	l->relu = 1;
	l->pool = 1;
	snprintf(l->name, sizeof l->name, "conv%d", n);
	l->C = C;
	l->H = H;
	l->W = W;
	l->OC = OC;
	l->k = k;
	l->OH = H - k + 1;
	l->OW = W - k + 1;
	l->PH = l->OH / 2;
	l->PW = l->OW / 2;
	l->in = C * H * W;
	l->out = OC * l->PH * l->PW;
	l->wlen = OC * C * k * k;
	l->blen = OC;
	m->flops += 2 * OC * l->OH * l->OW * C * k * k;
	return 0;
}

int
spirt_model_parse(struct spirt_model *m, const char *spec)
{
	const char *p = spec;
	size_t v[SPIRT_MODEL_LAYERS + 1], n = 0, off, i;
	struct spirt_layer *l;
	int rc, len;

	memset(m, 0, sizeof *m);
	if (strlen(spec) > SPIRT_SPEC_MAX)
		return SPIRT_EMODEL;
	if (strncmp(p, "softmax:", 8) == 0) {
		p += 8;
		m->kind = SPIRT_SOFTMAX;
		if ((rc = num(&p, &v[0])) || (rc = expect(&p, ':')) ||
		    (rc = num(&p, &v[1])))
			return rc;
		if (*p != '\0' || v[1] < 2)
			return SPIRT_EMODEL;
		m->C = v[0];
		m->H = m->W = 1;
		m->nclass = v[1];
		if ((rc = add_dense(m, v[0], v[1], 0, 1)) != 0)
			return rc;
		len = snprintf(m->spec, sizeof m->spec, "softmax:%zu:%zu",
		    v[0], v[1]);
	} else if (strncmp(p, "mlp:", 4) == 0) {
		p += 4;
		m->kind = SPIRT_MLP;
		for (;;) {
			if (n > SPIRT_MODEL_LAYERS)
				return SPIRT_EMODEL;
			if ((rc = num(&p, &v[n++])) != 0)
				return rc;
			if (*p == '\0')
				break;
			if ((rc = expect(&p, '-')) != 0)
				return rc;
		}
		if (n < 2 || v[n - 1] < 2)
			return SPIRT_EMODEL;
		m->C = v[0];
		m->H = m->W = 1;
		m->nclass = v[n - 1];
		len = snprintf(m->spec, sizeof m->spec, "mlp:%zu", v[0]);
		for (i = 1; i < n; i++) {
			if ((rc = add_dense(m, v[i - 1], v[i], i + 1 < n,
			    (int)i)) != 0)
				return rc;
			if (len > 0 && (size_t)len < sizeof m->spec)
				len += snprintf(m->spec + len,
				    sizeof m->spec - (size_t)len, "-%zu", v[i]);
		}
	} else if (strncmp(p, "cnn:", 4) == 0) {
		p += 4;
		m->kind = SPIRT_CNN;
		// CxHxW-C1-C2-K
		if ((rc = num(&p, &m->C)) || (rc = expect(&p, 'x')) ||
		    (rc = num(&p, &m->H)) || (rc = expect(&p, 'x')) ||
		    (rc = num(&p, &m->W)))
			return rc;
		for (n = 0; n < 3; n++)
			if ((rc = expect(&p, '-')) || (rc = num(&p, &v[n])))
				return rc;
		if (*p != '\0' || v[2] < 2)
			return SPIRT_EMODEL;
		m->nclass = v[2];
		if ((rc = add_conv(m, m->C, m->H, m->W, v[0], 1)) != 0)
			return rc;
		l = &m->layer[0];
		if ((rc = add_conv(m, v[0], l->PH, l->PW, v[1], 2)) != 0)
			return rc;
		l = &m->layer[1];
		if ((rc = add_dense(m, l->out, v[2], 0, 1)) != 0)
			return rc;
		len = snprintf(m->spec, sizeof m->spec, "cnn:%zux%zux%zu-%zu-"
		    "%zu-%zu", m->C, m->H, m->W, v[0], v[1], v[2]);
	} else {
		return SPIRT_EMODEL;
	}
	if (len < 0 || (size_t)len >= sizeof m->spec)
		return SPIRT_EMODEL;
	m->nin = m->C * m->H * m->W;
	if (m->nin > PARAM_MAX)
		return SPIRT_EMODEL;
	for (off = 0, i = 0; i < (size_t)m->nlayers; i++) {
		l = &m->layer[i];
		l->woff = off;
		off += l->wlen;
		l->boff = off;
		off += l->blen;
		if (l->wlen > PARAM_MAX || off > PARAM_MAX)
			return SPIRT_EMODEL;
	}
	m->nparams = off;
	return 0;
}

/* ---- initialisation ---- */

static double
normal(struct spirt_sm64 *r)
{
	double u1 = spirt_sm64_uniform(r), u2 = spirt_sm64_uniform(r);

	// Box-Muller; 1 - u1 is in (0, 1]
	return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

void
spirt_model_init(const struct spirt_model *m, float *params, uint64_t seed)
{
	struct spirt_sm64 r;
	size_t i, j, fan_in, fan_out;

	spirt_sm64_seed(&r, seed);
	for (i = 0; i < (size_t)m->nlayers; i++) {
		const struct spirt_layer *l = &m->layer[i];
		float *w = params + l->woff;

		if (l->kind == SPIRT_LAYER_CONV) {
			fan_in = l->C * l->k * l->k;
			fan_out = l->OC * l->k * l->k;
		} else {
			fan_in = l->in;
			fan_out = l->out;
		}
		if (l->relu) {
			double sd = sqrt(2.0 / (double)fan_in);       // He
			for (j = 0; j < l->wlen; j++)
				w[j] = (float)(sd * normal(&r));
		} else {
			double a = sqrt(6.0 / (double)(fan_in + fan_out));
			for (j = 0; j < l->wlen; j++)                  // Glorot
				w[j] = (float)(a * (2.0 *
				    spirt_sm64_uniform(&r) - 1.0));
		}
		memset(params + l->boff, 0, l->blen * sizeof *params);
	}
}

/* ---- workspace ---- */

struct spirt_ws {
	size_t maxB;
	unsigned flags;
	float *x;
	int32_t *y;
	float *out[SPIRT_MODEL_LAYERS];         /* dense (B,out); conv CBHW */
	float *pool[SPIRT_MODEL_LAYERS];        /* conv (OC,B,PH,PW) */
	uint32_t *idx[SPIRT_MODEL_LAYERS];
	float *col[SPIRT_MODEL_LAYERS];
	float *dout[SPIRT_MODEL_LAYERS];
	float *dpool[SPIRT_MODEL_LAYERS];
	float *flat, *dflat;                    /* (B, F) after the convs */
	float *probs, *losses;
	void *mem[WS_MAXMEM];
	int nmem;
};

static void *
wsalloc(struct spirt_ws *ws, size_t n, size_t size)
{
	void *p;

	if (n == 0)
		n = 1;
	if (ws->nmem >= WS_MAXMEM || n > SIZE_MAX / size / 2)
		return NULL;
	if (posix_memalign(&p, 64, n * size) != 0)
		return NULL;
	ws->mem[ws->nmem++] = p;
	return p;
}

int
spirt_ws_new(struct spirt_ws **out, const struct spirt_model *m,
    size_t maxbatch, unsigned flags)
{
	struct spirt_ws *ws;
	size_t B = maxbatch, i, F = 0;
	int train = (flags & SPIRT_WS_TRAIN) != 0;
	int naive = (flags & SPIRT_WS_NAIVE) != 0;

	*out = NULL;
	if (B == 0)
		return SPIRT_EINVAL;
	if ((ws = calloc(1, sizeof *ws)) == NULL)
		return ENOMEM;
	ws->maxB = B;
	ws->flags = flags;
	if ((ws->x = wsalloc(ws, B * m->nin, sizeof(float))) == NULL ||
	    (ws->y = wsalloc(ws, B, sizeof(int32_t))) == NULL ||
	    (ws->probs = wsalloc(ws, B * m->nclass, sizeof(float))) == NULL ||
	    (ws->losses = wsalloc(ws, B, sizeof(float))) == NULL)
		goto nomem;
	for (i = 0; i < (size_t)m->nlayers; i++) {
		const struct spirt_layer *l = &m->layer[i];

		if (l->kind == SPIRT_LAYER_DENSE) {
			if ((ws->out[i] = wsalloc(ws, B * l->out,
			    sizeof(float))) == NULL)
				goto nomem;
			if (train && (ws->dout[i] = wsalloc(ws, B * l->out,
			    sizeof(float))) == NULL)
				goto nomem;
			continue;
		}
		size_t n = B * l->OC * l->OH * l->OW;
		size_t np = B * l->out;
		if ((ws->out[i] = wsalloc(ws, n, sizeof(float))) == NULL ||
		    (ws->pool[i] = wsalloc(ws, np, sizeof(float))) == NULL ||
		    (ws->idx[i] = wsalloc(ws, np, sizeof(uint32_t))) == NULL)
			goto nomem;
		if (!naive && (ws->col[i] = wsalloc(ws, B * l->C * l->k *
		    l->k * l->OH * l->OW, sizeof(float))) == NULL)
			goto nomem;
		if (train && ((ws->dout[i] = wsalloc(ws, n,
		    sizeof(float))) == NULL || (ws->dpool[i] = wsalloc(ws,
		    np, sizeof(float))) == NULL))
			goto nomem;
		F = l->out;
	}
	if (F != 0) {
		if ((ws->flat = wsalloc(ws, B * F, sizeof(float))) == NULL ||
		    (train && (ws->dflat = wsalloc(ws, B * F,
		    sizeof(float))) == NULL))
			goto nomem;
	}
	*out = ws;
	return 0;
nomem:
	spirt_ws_free(ws);
	return ENOMEM;
}

void
spirt_ws_free(struct spirt_ws *ws)
{
	int i;

	if (ws == NULL)
		return;
	for (i = 0; i < ws->nmem; i++)
		free(ws->mem[i]);
	free(ws);
}

float *
spirt_ws_input(struct spirt_ws *ws)
{
	return ws->x;
}

int32_t *
spirt_ws_labels(struct spirt_ws *ws)
{
	return ws->y;
}

const float *
spirt_ws_probs(const struct spirt_ws *ws)
{
	return ws->probs;
}

const float *
spirt_ws_losses(const struct spirt_ws *ws)
{
	return ws->losses;
}

/* ---- forward and backward ---- */

/* flat (B, C*PHW) in torch.flatten order from pooled maps (C,B,PHW) */
static void
flatten(float *flat, const float *pool, size_t B, size_t C, size_t PHW)
{
	size_t b, c;

	for (c = 0; c < C; c++)
		for (b = 0; b < B; b++)
			memcpy(flat + (b * C + c) * PHW,
			    pool + (c * B + b) * PHW, PHW * sizeof *flat);
}

static void
unflatten(float *pool, const float *flat, size_t B, size_t C, size_t PHW)
{
	size_t b, c;

	for (c = 0; c < C; c++)
		for (b = 0; b < B; b++)
			memcpy(pool + (c * B + b) * PHW,
			    flat + (b * C + c) * PHW, PHW * sizeof *pool);
}

/* Input of layer i for batch B, with its plane strides (conv layers). */
static const float *
layer_input(const struct spirt_ws *ws, const struct spirt_model *m,
    size_t i, size_t B, size_t *sc, size_t *sb)
{
	const struct spirt_layer *l = &m->layer[i], *pl;

	if (i == 0) {
		*sc = l->H * l->W;              // BCHW as stored
		*sb = l->C * l->H * l->W;
		return ws->x;
	}
	pl = &m->layer[i - 1];
	if (pl->kind == SPIRT_LAYER_DENSE)
		return ws->out[i - 1];
	if (l->kind == SPIRT_LAYER_DENSE)
		return ws->flat;
	*sc = B * pl->PH * pl->PW;              // CBHW between convs
	*sb = pl->PH * pl->PW;
	return ws->pool[i - 1];
}

double
spirt_model_forward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, size_t B)
{
	int naive = (ws->flags & SPIRT_WS_NAIVE) != 0;
	size_t i, sc = 0, sb = 0, last = (size_t)m->nlayers - 1;

	for (i = 0; i < (size_t)m->nlayers; i++) {
		const struct spirt_layer *l = &m->layer[i];
		const float *w = params + l->woff, *bias = params + l->boff;
		const float *in;

		if (l->kind == SPIRT_LAYER_DENSE && i > 0 &&
		    m->layer[i - 1].kind == SPIRT_LAYER_CONV) {
			const struct spirt_layer *pl = &m->layer[i - 1];
			flatten(ws->flat, ws->pool[i - 1], B, pl->OC,
			    pl->PH * pl->PW);
		}
		in = layer_input(ws, m, i, B, &sc, &sb);
		if (l->kind == SPIRT_LAYER_DENSE) {
			if (naive)
				spirt_dense_forward_naive(ws->out[i], in, w,
				    bias, B, l->in, l->out);
			else
				spirt_dense_forward(ws->out[i], in, w, bias,
				    B, l->in, l->out);
			if (l->relu)
				spirt_relu_forward(ws->out[i], ws->out[i],
				    B * l->out);
			continue;
		}
		// the bias is added after pooling (spirt_poolrelu_forward)
		if (naive) {
			spirt_conv_forward_naive(ws->out[i], in, sc, sb, w,
			    bias, B, l->C, l->H, l->W, l->OC, l->k);
			spirt_relu_forward(ws->out[i], ws->out[i],
			    B * l->OC * l->OH * l->OW);
			spirt_maxpool_forward(ws->pool[i], ws->idx[i],
			    ws->out[i], l->OC * B, l->OH, l->OW);
		} else {
			spirt_conv_forward(ws->out[i], ws->col[i], in, sc, sb,
			    w, NULL, B, l->C, l->H, l->W, l->OC, l->k);
			spirt_poolrelu_forward(ws->pool[i], ws->idx[i],
			    ws->out[i], bias, l->OC, B, l->OH, l->OW);
		}
	}
	return spirt_xent_forward(ws->probs, ws->losses, ws->out[last], ws->y,
	    B, m->nclass);
}

void
spirt_model_backward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, float *grads, size_t B)
{
	int naive = (ws->flags & SPIRT_WS_NAIVE) != 0;
	size_t i, sc = 0, sb = 0, last = (size_t)m->nlayers - 1;

	spirt_xent_backward(ws->dout[last], ws->probs, ws->y, B, m->nclass);
	for (i = last + 1; i-- > 0;) {
		const struct spirt_layer *l = &m->layer[i];
		const float *w = params + l->woff, *in;
		float *gw = grads + l->woff, *gb = grads + l->boff;
		float *dinp = NULL;
		int prevconv = i > 0 &&
		    m->layer[i - 1].kind == SPIRT_LAYER_CONV;

		in = layer_input(ws, m, i, B, &sc, &sb);
		if (l->kind == SPIRT_LAYER_DENSE) {
			if (l->relu)
				spirt_relu_backward(ws->dout[i], ws->dout[i],
				    ws->out[i], B * l->out);
			if (i > 0)
				dinp = prevconv ? ws->dflat : ws->dout[i - 1];
			if (naive)
				spirt_dense_backward_naive(dinp, gw, gb,
				    ws->dout[i], in, w, B, l->in, l->out);
			else
				spirt_dense_backward(dinp, gw, gb, ws->dout[i],
				    in, w, B, l->in, l->out);
			if (prevconv) {
				const struct spirt_layer *pl = &m->layer[i - 1];
				unflatten(ws->dpool[i - 1], ws->dflat, B,
				    pl->OC, pl->PH * pl->PW);
			}
			continue;
		}
		if (naive) {
			spirt_maxpool_backward(ws->dout[i], ws->dpool[i],
			    ws->idx[i], l->OC * B, l->OH, l->OW);
			spirt_relu_backward(ws->dout[i], ws->dout[i],
			    ws->out[i], B * l->OC * l->OH * l->OW);
		} else {
			spirt_poolrelu_backward(ws->dout[i], ws->dpool[i],
			    ws->pool[i], ws->idx[i], l->OC, B, l->OH, l->OW);
		}
		if (i > 0)
			dinp = ws->dpool[i - 1];
		if (naive)
			spirt_conv_backward_naive(dinp, gw, gb, ws->dout[i], in,
			    w, sc, sb, B, l->C, l->H, l->W, l->OC, l->k);
		else
			spirt_conv_backward(dinp, gw, gb, ws->col[i],
			    ws->dout[i], w, sc, sb, B, l->C, l->H, l->W, l->OC,
			    l->k);
	}
}

void
spirt_model_predict(int32_t *pred, const struct spirt_ws *ws,
    const struct spirt_model *m, size_t B)
{
	size_t b, j, K = m->nclass;

	for (b = 0; b < B; b++) {
		const float *p = ws->probs + b * K;
		size_t best = 0;
		for (j = 1; j < K; j++)
			if (p[j] > p[best])
				best = j;
		pred[b] = (int32_t)best;
	}
}

int
spirt_labels_check(const int32_t *y, size_t n, size_t nclass)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (y[i] < 0 || (size_t)y[i] >= nclass)
			return SPIRT_EDATA;
	return 0;
}
