/* model.c - model specs, flat parameter vectors, forward and backward */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "layers.h"
#include "model.h"

#define DIM_MAX   (1u << 20)            /* any one size in a spec */
#define PARAM_MAX ((size_t)1 << 31)     /* floats in a parameter vector */
#define WS_MAXMEM 512

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

/* ---- layer lists (net:) ---- */

/* The parser's place in a layer list: the current activation's shape. */
#define NET_LIST_MAX 2048       /* a preset's list, written out */

struct np {
	struct spirt_model *m;
	const char *p;
	size_t C, H, W;         /* current activation per sample */
	int flat;               /* (B,F) values, F = C, rather than maps */
	int cur;                /* its buffer */
	int shared;             /* cur is read by another node too (the
				   input of a residual block) */
	char spec[NET_LIST_MAX]; /* the canonical spec so far */
	int len;
};

static int
spec_add(struct np *n, const char *fmt, size_t v)
{
	int r;

	if (n->len < 0 || (size_t)n->len >= sizeof n->spec)
		return SPIRT_EMODEL;
	r = snprintf(n->spec + n->len, sizeof n->spec - (size_t)n->len, fmt,
	    v);
	if (r < 0 || (size_t)r >= sizeof n->spec - (size_t)n->len)
		return SPIRT_EMODEL;
	n->len += r;
	return 0;
}

/* A new node reading cur into a new buffer of OC x OH x OW per sample. */
static struct spirt_node *
node_new(struct np *n, int kind, size_t OC, size_t OH, size_t OW)
{
	struct spirt_model *m = n->m;
	struct spirt_node *d;

	if (m->nnodes >= SPIRT_NET_NODES || m->nbuf > SPIRT_NET_NODES ||
	    OC > PARAM_MAX / OH / OW)
		return NULL;
	d = &m->node[m->nnodes++];
	memset(d, 0, sizeof *d);
	d->kind = kind;
	d->in = n->cur;
	d->C = n->C;
	d->H = n->H;
	d->W = n->W;
	d->OC = OC;
	d->OH = OH;
	d->OW = OW;
	d->out = m->nbuf++;
	m->bufsz[d->out] = OC * OH * OW;
	n->cur = d->out;
	n->C = OC;
	n->H = OH;
	n->W = OW;
	n->shared = 0;
	return d;
}

/* [sS][pP] after a kernel size k: stride (default 1), padding (k-1)/2 */
static int
stride_pad(struct np *n, size_t k, size_t *s, size_t *p, int pad)
{
	*s = 1;
	*p = pad ? (k - 1) / 2 : 0;
	if (*n->p == 's' && (n->p++, num(&n->p, s)) != 0)
		return SPIRT_EMODEL;
	if (pad && *n->p == 'p') {
		n->p++;
		if (*n->p == '0' && (n->p[1] < '0' || n->p[1] > '9')) {
			n->p++;
			*p = 0;
		} else if (num(&n->p, p) != 0) {
			return SPIRT_EMODEL;
		}
	}
	if (*p >= k)
		return SPIRT_EMODEL;
	return 0;
}

/* One conv or dw layer at n->p (after its name); dw: depthwise. */
static int
net_conv(struct np *n, int dw)
{
	struct spirt_node *d;
	size_t k, s, p, OC, OH, OW;
	int rc;

	OC = n->C;
	if (n->flat || num(&n->p, &k) != 0 || (!dw && (expect(&n->p, '-') ||
	    num(&n->p, &OC))) || stride_pad(n, k, &s, &p, 1) != 0)
		return SPIRT_EMODEL;
	// the padded image holds the kernel; the weight fits a vector
	if (n->H + 2 * p < k || n->W + 2 * p < k || k > DIM_MAX / k ||
	    (dw ? 1 : n->C) > PARAM_MAX / (k * k) ||
	    OC > PARAM_MAX / ((dw ? 1 : n->C) * k * k))
		return SPIRT_EMODEL;
	OH = (n->H + 2 * p - k) / s + 1;
	OW = (n->W + 2 * p - k) / s + 1;
	if ((rc = spec_add(n, dw ? "dw%zu" : "conv%zu", k)) ||
	    (!dw && (rc = spec_add(n, "-%zu", OC))) ||
	    (s != 1 && (rc = spec_add(n, "s%zu", s))) ||
	    (p != (k - 1) / 2 && (rc = spec_add(n, "p%zu", p))))
		return rc;
	if ((d = node_new(n, dw ? SPIRT_N_DW : SPIRT_N_CONV, OC, OH, OW)) ==
	    NULL)
		return SPIRT_EMODEL;
	d->k = k;
	d->s = s;
	d->p = p;
	d->wlen = OC * (dw ? 1 : d->C) * k * k;
	// no bias before a batch normalisation (torch's bias=False)
	d->bias = strncmp(n->p, ",bn", 3) != 0 || (n->p[3] != ',' &&
	    n->p[3] != ')' && n->p[3] != '|' && n->p[3] != '\0');
	d->blen = d->bias ? OC : 0;
	n->m->flops += 2 * OC * OH * OW * (dw ? 1 : d->C) * k * k;
	return 0;
}

static int net_list(struct np *n, int inres);

/* res(BODY[|SHORTCUT]) at n->p, after "res(" */
static int
net_res(struct np *n)
{
	struct spirt_model *m = n->m;
	struct spirt_node *d;
	size_t C = n->C, H = n->H, W = n->W;
	int x = n->cur, body, first, rc;

	if (n->flat || (rc = spec_add(n, "res(", 0)) != 0)
		return SPIRT_EMODEL;
	first = m->nnodes;
	n->shared = 1;
	if ((rc = net_list(n, 1)) != 0)
		return rc;
	body = n->cur;
	if (n->flat || body == x)
		return SPIRT_EMODEL;
	m->node[first].accum = 1;
	if (*n->p == '|') {
		n->p++;
		if ((rc = spec_add(n, "|", 0)) != 0)
			return rc;
		size_t bC = n->C, bH = n->H, bW = n->W;
		n->cur = x;
		n->C = C, n->H = H, n->W = W;
		n->shared = 1;
		if ((rc = net_list(n, 1)) != 0)
			return rc;
		if (n->flat || n->cur == x)
			return SPIRT_EMODEL;
		C = bC, H = bH, W = bW;         // the body's, to compare
	} else {
		n->cur = x;
	}
	if (expect(&n->p, ')') != 0 || (rc = spec_add(n, ")", 0)) != 0 ||
	    C != n->C || H != n->H || W != n->W)
		return SPIRT_EMODEL;
	int sc = n->cur;
	n->cur = body;
	if ((d = node_new(n, SPIRT_N_ADD, C, H, W)) == NULL)
		return SPIRT_EMODEL;
	d->in2 = sc;
	return 0;
}

/* One layer at n->p. */
static int
net_layer(struct np *n, int inres)
{
	struct spirt_model *m = n->m;
	struct spirt_node *d;
	size_t k, s, v;
	int rc;

	if (strncmp(n->p, "conv", 4) == 0) {
		n->p += 4;
		return net_conv(n, 0);
	}
	if (strncmp(n->p, "dw", 2) == 0) {
		n->p += 2;
		return net_conv(n, 1);
	}
	if (strncmp(n->p, "res(", 4) == 0) {
		n->p += 4;
		return inres ? SPIRT_EMODEL : net_res(n);
	}
	if (strncmp(n->p, "bn", 2) == 0) {
		n->p += 2;
		if (n->flat || (rc = spec_add(n, "bn", 0)) != 0 ||
		    (d = node_new(n, SPIRT_N_BN, n->C, n->H, n->W)) == NULL)
			return SPIRT_EMODEL;
		d->wlen = d->blen = d->C;
		d->soff = m->nstate;
		m->nstate += 2 * d->C;
		return m->nstate > PARAM_MAX ? SPIRT_EMODEL : 0;
	}
	if (strncmp(n->p, "relu", 4) == 0) {
		n->p += 4;
		if ((rc = spec_add(n, "relu", 0)) != 0)
			return rc;
		if (!n->shared) {               // in place
			if (m->nnodes >= SPIRT_NET_NODES)
				return SPIRT_EMODEL;
			d = &m->node[m->nnodes++];
			memset(d, 0, sizeof *d);
			d->kind = SPIRT_N_RELU;
			d->in = d->out = n->cur;
			d->C = d->OC = n->C;
			d->H = d->OH = n->H;
			d->W = d->OW = n->W;
			return 0;
		}
		return node_new(n, SPIRT_N_RELU, n->C, n->H, n->W) ? 0 :
		    SPIRT_EMODEL;
	}
	if (strncmp(n->p, "maxpool", 7) == 0 ||
	    strncmp(n->p, "avgpool", 7) == 0) {
		int avg = n->p[0] == 'a';
		n->p += 7;
		if (n->flat || num(&n->p, &k) != 0)
			return SPIRT_EMODEL;
		s = k;
		if (!avg && *n->p == 's' && (n->p++, num(&n->p, &s)) != 0)
			return SPIRT_EMODEL;
		if (k > n->H || k > n->W ||
		    (rc = spec_add(n, avg ? "avgpool%zu" : "maxpool%zu", k)) ||
		    (s != k && (rc = spec_add(n, "s%zu", s))))
			return SPIRT_EMODEL;
		if ((d = node_new(n, avg ? SPIRT_N_AVGPOOL : SPIRT_N_MAXPOOL,
		    n->C, (n->H - k) / s + 1, (n->W - k) / s + 1)) == NULL)
			return SPIRT_EMODEL;
		d->k = k;
		d->s = s;
		return 0;
	}
	if (strncmp(n->p, "gap", 3) == 0 || strncmp(n->p, "flatten", 7) == 0) {
		int gap = n->p[0] == 'g';
		n->p += gap ? 3 : 7;
		v = gap ? n->C : n->C * n->H * n->W;
		if (n->flat || (rc = spec_add(n, gap ? "gap" : "flatten", 0)) ||
		    (d = node_new(n, gap ? SPIRT_N_GAP : SPIRT_N_FLATTEN, v, 1,
		    1)) == NULL)
			return SPIRT_EMODEL;
		n->flat = 1;
		return 0;
	}
	if (strncmp(n->p, "dropout", 7) == 0) {
		n->p += 7;
		if (num(&n->p, &v) != 0 || v > 99 ||
		    (rc = spec_add(n, "dropout%zu", v)) != 0 ||
		    (d = node_new(n, SPIRT_N_DROPOUT, n->C, n->H, n->W)) ==
		    NULL)
			return SPIRT_EMODEL;
		d->k = v;
		return 0;
	}
	if (strncmp(n->p, "dense-", 6) == 0) {
		n->p += 6;
		if (!n->flat || num(&n->p, &v) != 0 ||
		    (rc = spec_add(n, "dense-%zu", v)) != 0 ||
		    (d = node_new(n, SPIRT_N_DENSE, v, 1, 1)) == NULL ||
		    v > PARAM_MAX / d->C)
			return SPIRT_EMODEL;
		d->wlen = v * d->C;
		d->blen = v;
		d->bias = 1;
		m->flops += 2 * v * d->C;
		return 0;
	}
	return SPIRT_EMODEL;
}

/* Layers separated by ',' up to '|', ')' (inres) or the end. */
static int
net_list(struct np *n, int inres)
{
	int rc;

	for (;;) {
		if ((rc = net_layer(n, inres)) != 0)
			return rc;
		if (*n->p != ',')
			break;
		n->p++;
		if ((rc = spec_add(n, ",", 0)) != 0)
			return rc;
	}
	if (inres ? *n->p != '|' && *n->p != ')' : *n->p != '\0')
		return SPIRT_EMODEL;
	return 0;
}

/*
 * "CxHxW:list" at p into m: nodes, buffers, parameter and state offsets,
 * the canonical spec (defaults left out).
 */
static int
parse_net(struct spirt_model *m, const char *p)
{
	struct np n;
	struct spirt_node *d;
	size_t off = 0;
	int i, rc;

	memset(&n, 0, sizeof n);
	n.m = m;
	n.p = p;
	m->kind = SPIRT_NET;
	if ((rc = num(&n.p, &m->C)) || (rc = expect(&n.p, 'x')) ||
	    (rc = num(&n.p, &m->H)) || (rc = expect(&n.p, 'x')) ||
	    (rc = num(&n.p, &m->W)) || (rc = expect(&n.p, ':')))
		return rc;
	if (m->C > PARAM_MAX / m->H / m->W)
		return SPIRT_EMODEL;
	n.C = m->C, n.H = m->H, n.W = m->W;
	m->nbuf = 1;
	m->bufsz[0] = m->C * m->H * m->W;
	n.len = snprintf(n.spec, sizeof n.spec, "net:%zux%zux%zu:", m->C,
	    m->H, m->W);
	if ((rc = net_list(&n, 0)) != 0)
		return rc;
	if (m->nnodes == 0)
		return SPIRT_EMODEL;
	d = &m->node[m->nnodes - 1];
	if (d->kind != SPIRT_N_DENSE || d->OC < 2)
		return SPIRT_EMODEL;    // the classifier comes last
	m->nclass = d->OC;
	for (i = 0; i < m->nnodes; i++) {
		d = &m->node[i];
		d->woff = off;
		off += d->wlen;
		d->boff = off;
		off += d->blen;
		if (off > PARAM_MAX)
			return SPIRT_EMODEL;
	}
	m->nparams = off;
	// the canonical list, if it fits a record's name (a preset's name
	// replaces it)
	if (strlen(n.spec) < sizeof m->spec)
		memcpy(m->spec, n.spec, strlen(n.spec) + 1);
	return 0;
}

/*
 * He et al.'s CIFAR ResNet of 6n+2 layers (resnet8: n = 1, resnet20:
 * n = 3), its layer list for "CxHxW-K" at p; its name stays the spec.
 */
static int
resnet(struct spirt_model *m, const char *p, const char *name, int nb)
{
	char list[NET_LIST_MAX], spec[SPIRT_SPEC_MAX + 1];
	size_t C, H, W, K, len;
	int rc, stage, b;

	if ((rc = num(&p, &C)) || (rc = expect(&p, 'x')) ||
	    (rc = num(&p, &H)) || (rc = expect(&p, 'x')) ||
	    (rc = num(&p, &W)) || (rc = expect(&p, '-')) ||
	    (rc = num(&p, &K)) || *p != '\0')
		return SPIRT_EMODEL;
	len = (size_t)snprintf(list, sizeof list, "%zux%zux%zu:conv3-16,bn,"
	    "relu", C, H, W);
	for (stage = 0; stage < 3; stage++) {
		unsigned w = 16u << stage;
		for (b = 0; b < nb; b++) {
			// the first block of stages 2 and 3 halves the size:
			// stride 2, and a 1x1 convolution as its shortcut
			int down = stage > 0 && b == 0;
			len += (size_t)snprintf(list + len, sizeof list - len,
			    down ? ",res(conv3-%us2,bn,relu,conv3-%u,bn|"
			    "conv1-%us2,bn),relu" : ",res(conv3-%u,bn,relu,"
			    "conv3-%u,bn),relu", w, w, w);
		}
	}
	snprintf(list + len, sizeof list - len, ",gap,dense-%zu", K);
	if ((rc = parse_net(m, list)) != 0)
		return rc;
	snprintf(spec, sizeof spec, "%s:%zux%zux%zu-%zu", name, C, H, W, K);
	memcpy(m->spec, spec, sizeof spec);
	return 0;
}

/*
 * A MobileNet-style net for "CxHxW-K[-wN]" at p: a 3x3 convolution to N
 * channels (default 16), five depthwise-separable blocks (3x3 depthwise,
 * bn, relu, 1x1 pointwise, bn, relu) of N, 2N, 2N, 4N and 4N channels,
 * stride 2 where the width grows, global average pool, dense to K; its
 * name stays the spec.
 */
static int
mobilenet(struct spirt_model *m, const char *p)
{
	static const unsigned mul[] = { 1, 2, 2, 4, 4 };
	char list[NET_LIST_MAX], spec[SPIRT_SPEC_MAX + 1];
	size_t C, H, W, K, N = 16, len;
	int rc, b;

	if ((rc = num(&p, &C)) || (rc = expect(&p, 'x')) ||
	    (rc = num(&p, &H)) || (rc = expect(&p, 'x')) ||
	    (rc = num(&p, &W)) || (rc = expect(&p, '-')) ||
	    (rc = num(&p, &K)))
		return rc;
	if (*p == '-' && p[1] == 'w' && (p += 2, num(&p, &N)) != 0)
		return SPIRT_EMODEL;
	if (*p != '\0')
		return SPIRT_EMODEL;
	len = (size_t)snprintf(list, sizeof list, "%zux%zux%zu:conv3-%zu,"
	    "bn,relu", C, H, W, N);
	for (b = 0; b < 5; b++)
		len += (size_t)snprintf(list + len, sizeof list - len,
		    ",dw3%s,bn,relu,conv1-%zu,bn,relu",
		    b > 0 && mul[b] > mul[b - 1] ? "s2" : "", N * mul[b]);
	snprintf(list + len, sizeof list - len, ",gap,dense-%zu", K);
	if ((rc = parse_net(m, list)) != 0)
		return rc;
	len = (size_t)snprintf(spec, sizeof spec, "mobilenet:%zux%zux%zu-%zu",
	    C, H, W, K);
	if (N != 16)
		snprintf(spec + len, sizeof spec - len, "-w%zu", N);
	memcpy(m->spec, spec, sizeof spec);
	return 0;
}

/*
 * spirt-train's models: the table spirt-model(5) prints.  The learning
 * rates are Adam's peaks under spirt-train's defaults (4 functions x 32,
 * warm-up then cosine decay); mlp, cnn and resnet8 reach the README's
 * bars with theirs.
 */
static const struct spirt_preset presets[] = {
	{ "mlp", "mlp:784-256-128-10", "0.002" },
	{ "cnn", "cnn:1x28x28-32-64-10", "0.002" },
	{ "resnet8", "resnet8:1x28x28-10", "0.002" },
	{ "resnet20", "resnet20:1x28x28-10", "0.002" },
	{ "mobilenet", "mobilenet:1x28x28-10", "0.002" },
	{ "softmax", "softmax:784:10", "0.01" },
};

const struct spirt_preset *
spirt_model_preset_at(size_t i)
{
	return i < sizeof presets / sizeof presets[0] ? &presets[i] : NULL;
}

const struct spirt_preset *
spirt_model_preset(const char *name)
{
	const struct spirt_preset *p;
	size_t i;

	for (i = 0; (p = spirt_model_preset_at(i)) != NULL; i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
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
	} else if (strncmp(p, "net:", 4) == 0) {
		if ((rc = parse_net(m, p + 4)) != 0 || m->spec[0] == '\0')
			return SPIRT_EMODEL;
		len = (int)strlen(m->spec);
	} else if (strncmp(p, "resnet8:", 8) == 0) {
		if ((rc = resnet(m, p + 8, "resnet8", 1)) != 0)
			return rc;
		len = (int)strlen(m->spec);
	} else if (strncmp(p, "resnet20:", 9) == 0) {
		if ((rc = resnet(m, p + 9, "resnet20", 3)) != 0)
			return rc;
		len = (int)strlen(m->spec);
	} else if (strncmp(p, "mobilenet:", 10) == 0) {
		if ((rc = mobilenet(m, p + 10)) != 0)
			return rc;
		len = (int)strlen(m->spec);
	} else {
		return SPIRT_EMODEL;
	}
	if (len < 0 || (size_t)len >= sizeof m->spec)
		return SPIRT_EMODEL;
	m->nin = m->C * m->H * m->W;
	if (m->nin > PARAM_MAX)
		return SPIRT_EMODEL;
	if (m->kind == SPIRT_NET)
		return 0;
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
	for (i = 0; i < (size_t)m->nnodes; i++) {
		const struct spirt_node *d = &m->node[i];
		float *w = params + d->woff;

		if (d->kind == SPIRT_N_BN) {
			for (j = 0; j < d->wlen; j++)
				w[j] = 1;
		} else if (d->kind == SPIRT_N_DENSE &&
		    (int)i == m->nnodes - 1) {
			double a = sqrt(6.0 / (double)(d->C + d->OC));
			for (j = 0; j < d->wlen; j++)                  // Glorot
				w[j] = (float)(a * (2.0 *
				    spirt_sm64_uniform(&r) - 1.0));
		} else if (d->wlen != 0) {
			// conv, dw, hidden dense: He normal over the fan-in
			fan_in = d->kind == SPIRT_N_DENSE ? d->C :
			    (d->kind == SPIRT_N_DW ? 1 : d->C) * d->k * d->k;
			double sd = sqrt(2.0 / (double)fan_in);
			for (j = 0; j < d->wlen; j++)
				w[j] = (float)(sd * normal(&r));
		}
		memset(params + d->boff, 0, d->blen * sizeof *params);
	}
}

void
spirt_model_state_init(const struct spirt_model *m, float *state)
{
	size_t j;
	int i;

	for (i = 0; i < m->nnodes; i++) {
		const struct spirt_node *d = &m->node[i];

		if (d->kind != SPIRT_N_BN)
			continue;
		for (j = 0; j < d->C; j++) {
			state[d->soff + j] = 0;
			state[d->soff + d->C + j] = 1;
		}
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
	/* layer lists: a buffer per activation, its gradient */
	float *act[SPIRT_NET_NODES + 1], *dact[SPIRT_NET_NODES + 1];
	float *mean[SPIRT_NET_NODES], *rstd[SPIRT_NET_NODES];
	uint32_t *nidx[SPIRT_NET_NODES];
	uint8_t *mask[SPIRT_NET_NODES];         /* dropout's */
	uint64_t seed;
	float *state;
	float *ncol;                            /* im2col, the largest */
	float *tmp, *tmp2;                      /* largest buffer each */
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

static void *wsalloc(struct spirt_ws *ws, size_t n, size_t size);

/* A layer list's buffers: activations, gradients, statistics, scratch. */
static int
net_ws(struct spirt_ws *ws, const struct spirt_model *m, size_t B, int train,
    int naive)
{
	struct spirt_conv2d g;
	size_t big = 0, col = 0;
	int i;

	for (i = 0; i < m->nbuf; i++) {
		if (m->bufsz[i] > big)
			big = m->bufsz[i];
		if ((ws->act[i] = wsalloc(ws, B * m->bufsz[i],
		    sizeof(float))) == NULL)
			return ENOMEM;
		if (train && i > 0 && (ws->dact[i] = wsalloc(ws,
		    B * m->bufsz[i], sizeof(float))) == NULL)
			return ENOMEM;
	}
	for (i = 0; i < m->nnodes; i++) {
		const struct spirt_node *d = &m->node[i];

		if (d->kind == SPIRT_N_BN && ((ws->mean[i] = wsalloc(ws, d->C,
		    sizeof(float))) == NULL || (ws->rstd[i] = wsalloc(ws,
		    d->C, sizeof(float))) == NULL))
			return ENOMEM;
		if (d->kind == SPIRT_N_MAXPOOL && (ws->nidx[i] = wsalloc(ws,
		    B * d->OC * d->OH * d->OW, sizeof(uint32_t))) == NULL)
			return ENOMEM;
		if (d->kind == SPIRT_N_DROPOUT && train && (ws->mask[i] =
		    wsalloc(ws, B * d->OC * d->OH * d->OW, 1)) == NULL)
			return ENOMEM;
		if (d->kind == SPIRT_N_CONV && !naive &&
		    spirt_conv2d_shape(&g, B, d->C, d->H, d->W, d->OC, d->k,
		    d->s, d->p) == 0 && spirt_conv2d_colsize(&g) > col)
			col = spirt_conv2d_colsize(&g);
	}
	if ((ws->state = wsalloc(ws, m->nstate, sizeof(float))) == NULL ||
	    (ws->ncol = wsalloc(ws, col, sizeof(float))) == NULL ||
	    (ws->tmp = wsalloc(ws, B * big, sizeof(float))) == NULL ||
	    (ws->tmp2 = wsalloc(ws, B * big, sizeof(float))) == NULL)
		return ENOMEM;
	spirt_model_state_init(m, ws->state);
	return 0;
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
	if (m->kind == SPIRT_NET && net_ws(ws, m, B, train, naive) != 0)
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

float *
spirt_ws_state(struct spirt_ws *ws)
{
	return ws->state;
}

void
spirt_ws_seed(struct spirt_ws *ws, uint64_t seed)
{
	ws->seed = seed;
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

/* ---- layer lists ---- */

/* x (B,C,HW) into planes (C,B,HW), and back */
static void
to_cbhw(float *out, const float *x, size_t B, size_t C, size_t HW)
{
	unflatten(out, x, B, C, HW);
}

/*
 * Node i is a ReLU in place on the output of node i - 1, a batch
 * normalisation (bn: training mode) or a residual add (add): the fast
 * kernels run the two as one (spirt_bn_relu_forward and _backward,
 * spirt_residual_relu_*, the same bits), node i itself then does
 * nothing.
 */
static int
fused(const struct spirt_model *m, int i, int bn)
{
	const struct spirt_node *d, *p;

	if (i <= 0 || i >= m->nnodes)
		return 0;
	d = &m->node[i], p = &m->node[i - 1];
	return d->kind == SPIRT_N_RELU && d->in == d->out && !d->accum &&
	    p->out == d->in && p->kind == (bn ? SPIRT_N_BN : SPIRT_N_ADD);
}

static double
net_forward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, size_t B)
{
	int naive = (ws->flags & SPIRT_WS_NAIVE) != 0;
	int train = (ws->flags & SPIRT_WS_TRAIN) != 0;
	struct spirt_conv2d g;
	int i;

	to_cbhw(ws->act[0], ws->x, B, m->C, m->H * m->W);
	for (i = 0; i < m->nnodes; i++) {
		const struct spirt_node *d = &m->node[i];
		const float *w = params + d->woff;
		const float *bias = d->blen ? params + d->boff : NULL;
		const float *in = ws->act[d->in];
		float *out = ws->act[d->out];
		size_t n = B * d->C * d->H * d->W;

		switch (d->kind) {
		case SPIRT_N_CONV:
		case SPIRT_N_DW:
			if (spirt_conv2d_shape(&g, B, d->C, d->H, d->W, d->OC,
			    d->k, d->s, d->p) != 0)
				return NAN;     // parse made it valid
			if (d->kind == SPIRT_N_DW)
				(naive ? spirt_dwconv2d_forward_naive :
				    spirt_dwconv2d_forward)(out, in, w, bias,
				    &g);
			else if (naive)
				spirt_conv2d_forward_naive(out, in, w, bias,
				    &g);
			else
				spirt_conv2d_forward(out, ws->ncol, in, w, bias,
				    &g);
			break;
		case SPIRT_N_BN:
			if (train)
				(naive ? spirt_bn_forward_naive : fused(m,
				    i + 1, 1) ? spirt_bn_relu_forward :
				    spirt_bn_forward)(out, ws->mean[i],
				    ws->rstd[i], ws->state + d->soff,
				    ws->state + d->soff + d->C, in, w, bias,
				    d->C, B * d->H * d->W, SPIRT_BN_MOMENTUM,
				    SPIRT_BN_EPS);
			else
				(naive ? spirt_bn_eval_forward_naive :
				    spirt_bn_eval_forward)(out, in, w, bias,
				    ws->state + d->soff,
				    ws->state + d->soff + d->C, d->C,
				    B * d->H * d->W, SPIRT_BN_EPS);
			break;
		case SPIRT_N_RELU:
			if (naive || !(fused(m, i, 0) || (train &&
			    fused(m, i, 1))))
				spirt_relu_forward(out, in, n);
			break;
		case SPIRT_N_MAXPOOL:
			if (naive)
				spirt_maxpool2d_forward_naive(out, in, d->C * B,
				    d->H, d->W, d->k, d->s);
			else
				spirt_maxpool2d_forward(out, ws->nidx[i], in,
				    d->C * B, d->H, d->W, d->k, d->s);
			break;
		case SPIRT_N_AVGPOOL:
			(naive ? spirt_avgpool_forward_naive :
			    spirt_avgpool_forward)(out, in, d->C * B, d->H,
			    d->W, d->k);
			break;
		case SPIRT_N_GAP:
			(naive ? spirt_gap_forward_naive : spirt_gap_forward)(
			    ws->tmp2, in, d->C * B, d->H * d->W);
			flatten(out, ws->tmp2, B, d->C, 1);
			break;
		case SPIRT_N_FLATTEN:
			flatten(out, in, B, d->C, d->H * d->W);
			break;
		case SPIRT_N_DENSE:
			(naive ? spirt_dense_forward_naive :
			    spirt_dense_forward)(out, in, w, bias, B, d->C,
			    d->OC);
			break;
		case SPIRT_N_ADD:
			(naive || !fused(m, i + 1, 0) ? spirt_residual_forward :
			    spirt_residual_relu_forward)(out, in,
			    ws->act[d->in2], n);
			break;
		case SPIRT_N_DROPOUT:
			if (train)
				spirt_dropout_forward(out, ws->mask[i], in, n,
				    (unsigned)d->k, spirt_seed_mix(ws->seed,
				    (uint64_t)i, 0));
			else
				memcpy(out, in, n * sizeof *out);
			break;
		}
	}
	return spirt_xent_forward(ws->probs, ws->losses,
	    ws->act[m->node[m->nnodes - 1].out], ws->y, B, m->nclass);
}

static void
net_backward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, float *grads, size_t B)
{
	int naive = (ws->flags & SPIRT_WS_NAIVE) != 0;
	struct spirt_conv2d g;
	size_t j;
	int i;

	spirt_xent_backward(ws->dact[m->node[m->nnodes - 1].out], ws->probs,
	    ws->y, B, m->nclass);
	for (i = m->nnodes; i-- > 0;) {
		const struct spirt_node *d = &m->node[i];
		const float *w = params + d->woff;
		float *gw = grads + d->woff;
		float *gb = d->blen ? grads + d->boff : NULL;
		const float *in = ws->act[d->in];
		const float *dout = ws->dact[d->out];
		float *dinp;
		size_t n = B * d->C * d->H * d->W;

		// the network's input needs no gradient; a residual body's
		// first node adds to what the shortcut's wrote
		dinp = d->in == 0 ? NULL : d->accum ? ws->tmp : ws->dact[d->in];
		switch (d->kind) {
		case SPIRT_N_CONV:
		case SPIRT_N_DW:
			if (spirt_conv2d_shape(&g, B, d->C, d->H, d->W, d->OC,
			    d->k, d->s, d->p) != 0)
				return;
			if (d->kind == SPIRT_N_DW)
				(naive ? spirt_dwconv2d_backward_naive :
				    spirt_dwconv2d_backward)(dinp, gw, gb,
				    dout, in, w, &g);
			else if (naive)
				spirt_conv2d_backward_naive(dinp, gw, gb, dout,
				    in, w, &g);
			else
				spirt_conv2d_backward(dinp, gw, gb, ws->ncol,
				    dout, in, w, &g);
			break;
		case SPIRT_N_BN:
			if (!naive && fused(m, i + 1, 1))
				spirt_bn_relu_backward(dinp, gw, gb,
				    ws->dact[d->out], ws->act[d->out], in,
				    ws->mean[i], ws->rstd[i], w, d->C,
				    B * d->H * d->W);
			else
				(naive ? spirt_bn_backward_naive :
				    spirt_bn_backward)(dinp, gw, gb, dout, in,
				    ws->mean[i], ws->rstd[i], w, d->C,
				    B * d->H * d->W);
			break;
		case SPIRT_N_RELU:
			// in place: out is in, and dinp may be dout; fused,
			// the node before it does its work
			if (dinp != NULL && (naive || !(fused(m, i, 0) ||
			    fused(m, i, 1))))
				spirt_relu_backward(dinp, dout,
				    ws->act[d->out], n);
			break;
		case SPIRT_N_MAXPOOL:
			if (dinp == NULL)
				break;
			if (naive)
				spirt_maxpool2d_backward_naive(dinp, dout, in,
				    d->C * B, d->H, d->W, d->k, d->s);
			else
				spirt_maxpool2d_backward(dinp, dout,
				    ws->nidx[i], d->C * B, d->H, d->W, d->k,
				    d->s);
			break;
		case SPIRT_N_AVGPOOL:
			if (dinp != NULL)
				(naive ? spirt_avgpool_backward_naive :
				    spirt_avgpool_backward)(dinp, dout,
				    d->C * B, d->H, d->W, d->k);
			break;
		case SPIRT_N_GAP:
			if (dinp == NULL)
				break;
			unflatten(ws->tmp2, dout, B, d->C, 1);
			(naive ? spirt_gap_backward_naive : spirt_gap_backward)(
			    dinp, ws->tmp2, d->C * B, d->H * d->W);
			break;
		case SPIRT_N_FLATTEN:
			if (dinp != NULL)
				unflatten(dinp, dout, B, d->C, d->H * d->W);
			break;
		case SPIRT_N_DENSE:
			(naive ? spirt_dense_backward_naive :
			    spirt_dense_backward)(dinp, gw, gb, dout, in, w, B,
			    d->C, d->OC);
			break;
		case SPIRT_N_ADD:
			if (!naive && fused(m, i + 1, 0))
				spirt_residual_relu_backward(dinp, d->in2 ==
				    0 ? NULL : ws->dact[d->in2], dout,
				    ws->act[d->out], n);
			else
				spirt_residual_backward(dinp, d->in2 == 0 ?
				    NULL : ws->dact[d->in2], dout, n);
			break;
		case SPIRT_N_DROPOUT:
			if (dinp != NULL)
				spirt_dropout_backward(dinp, dout, ws->mask[i],
				    n, (unsigned)d->k);
			break;
		}
		if (d->accum && dinp != NULL)
			for (j = 0; j < n; j++)
				ws->dact[d->in][j] += ws->tmp[j];
	}
}

double
spirt_model_forward(struct spirt_ws *ws, const struct spirt_model *m,
    const float *params, size_t B)
{
	int naive = (ws->flags & SPIRT_WS_NAIVE) != 0;
	size_t i, sc = 0, sb = 0, last = (size_t)m->nlayers - 1;

	if (m->kind == SPIRT_NET)
		return net_forward(ws, m, params, B);

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

	if (m->kind == SPIRT_NET) {
		net_backward(ws, m, params, grads, B);
		return;
	}
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
