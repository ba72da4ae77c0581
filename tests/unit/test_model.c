/* test_model.c - specs, init, whole-model gradients vs naive, fd, PyTorch */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "blas.h"
#include "io.h"
#include "layers.h"
#include "model.h"
#include "npy.h"
#include "tensor.h"
#include "tool.h"

static struct spirt_sm64 rng;

static void
test_parse(void)
{
	static const char *bad[] = {
		"", "softmax", "softmax:784", "softmax:784:1", "softmax:0:10",
		"softmax:784:10:", "mlp:", "mlp:784", "mlp:784-", "mlp:784--10",
		"mlp:784-256-1", "mlp:0784-10", "mlp:784-x", "cnn:1x28x28-32-64",
		"cnn:1x12x12-2-3-4", "cnn:28x28-32-64-10", "cnn:1x28x28-32-64-10-",
		"lenet:1x28x28", "mlp:784-99999999-10",
		"mlp:2-2-2-2-2-2-2-2-2-2-2-2-2-2-2-2-2-2-2",
	};
	struct spirt_model m;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = spirt_model_parse(&m, bad[i]);
		if (rc != SPIRT_EMODEL) {
			fprintf(stderr, "spec \"%s\" accepted\n", bad[i]);
			check_failed = 1;
		}
	}
	CHECK_RC(spirt_model_parse(&m, "softmax:784:10"));
	CHECK(m.nparams == 7850 && m.nlayers == 1 && m.nclass == 10);
	CHECK_RC(spirt_model_parse(&m, "mlp:784-256-128-10"));
	CHECK(m.nparams == 235146 && m.nlayers == 3 && m.layer[0].relu &&
	    !m.layer[2].relu && strcmp(m.layer[2].name, "fc3") == 0);
	CHECK(strcmp(m.spec, "mlp:784-256-128-10") == 0);
	CHECK_RC(spirt_model_parse(&m, "cnn:1x28x28-32-64-10"));
	CHECK(m.nparams == 62346 && m.layer[2].in == 1024 && m.nin == 784);
	CHECK(m.layer[1].woff == 832 && m.layer[2].boff == 62336);
	CHECK_RC(spirt_model_parse(&m, "cnn:3x32x32-32-64-10"));
	CHECK(m.nparams == 69706 && m.layer[2].in == 1600 && m.nin == 3072);
}

static void
test_init(void)
{
	struct spirt_model m;
	float *a, *b;
	double s = 0, s2 = 0;
	size_t i, n;

	CHECK_RC(spirt_model_parse(&m, "mlp:784-256-128-10"));
	a = malloc(m.nparams * 4);
	b = malloc(m.nparams * 4);
	spirt_model_init(&m, a, 7);
	spirt_model_init(&m, b, 7);
	CHECK(memcmp(a, b, m.nparams * 4) == 0);
	spirt_model_init(&m, b, 8);
	CHECK(memcmp(a, b, m.nparams * 4) != 0);
	// He: fc1 weights have sd sqrt(2/784); biases are zero
	n = m.layer[0].wlen;
	for (i = 0; i < n; i++) {
		s += a[i];
		s2 += (double)a[i] * a[i];
	}
	CHECK(fabs(s / n) < 0.002);
	CHECK(fabs(sqrt(s2 / n) / sqrt(2.0 / 784) - 1) < 0.02);
	CHECK(a[m.layer[0].boff] == 0 && a[m.nparams - 1] == 0);
	// Glorot uniform: fc3 within sqrt(6/138)
	for (i = 0; i < m.layer[2].wlen; i++)
		CHECK(fabsf(a[m.layer[2].woff + i]) <= sqrtf(6.0f / 138));
	free(a), free(b);
}

/* a batch of B random samples for m into ws */
static void
fill_batch(struct spirt_ws *ws, const struct spirt_model *m, size_t B)
{
	float *x = spirt_ws_input(ws);
	int32_t *y = spirt_ws_labels(ws);
	size_t i;

	for (i = 0; i < B * m->nin; i++)
		x[i] = (float)spirt_sm64_uniform(&rng);
	for (i = 0; i < B; i++)
		y[i] = (int32_t)spirt_sm64_below(&rng, m->nclass);
}

/*
 * For spec: OpenBLAS and naive kernels agree on loss and gradient, and
 * the gradient matches central differences of the loss on a sample of
 * coordinates of every weight and bias.
 */
static void
test_model(const char *spec, size_t B)
{
	struct spirt_model m;
	struct spirt_ws *ws, *wn;
	float *p, *g, *gn;
	double l1, l2;
	size_t i, j, bad = 0, tried = 0;
	char what[128];

	CHECK_RC(spirt_model_parse(&m, spec));
	CHECK_RC(spirt_ws_new(&ws, &m, B, SPIRT_WS_TRAIN));
	CHECK_RC(spirt_ws_new(&wn, &m, B, SPIRT_WS_TRAIN | SPIRT_WS_NAIVE));
	p = malloc(m.nparams * 4);
	g = malloc(m.nparams * 4);
	gn = malloc(m.nparams * 4);
	spirt_model_init(&m, p, 3);
	for (i = 0; i < m.nparams; i++)         // non-zero biases too
		p[i] += 0.05f * (float)(spirt_sm64_uniform(&rng) - 0.5);
	fill_batch(ws, &m, B);
	memcpy(spirt_ws_input(wn), spirt_ws_input(ws), B * m.nin * 4);
	memcpy(spirt_ws_labels(wn), spirt_ws_labels(ws), B * 4);

	l1 = spirt_model_forward(ws, &m, p, B);
	spirt_model_backward(ws, &m, p, g, B);
	l2 = spirt_model_forward(wn, &m, p, B);
	spirt_model_backward(wn, &m, p, gn, B);
	CHECK(fabs(l1 - l2) < 1e-5 * fabs(l2) + 1e-6);
	snprintf(what, sizeof what, "%s blas vs naive", spec);
	check_close(what, g, gn, m.nparams, 1e-3, 1e-6);

	for (i = 0; i < (size_t)m.nlayers; i++) {
		const struct spirt_layer *l = &m.layer[i];
		size_t offs[2] = { l->woff, l->boff }, lens[2] = { l->wlen,
		    l->blen }, t;
		for (t = 0; t < 2; t++) {
			for (j = 0; j < 12 && j < lens[t]; j++) {
				size_t at = offs[t] + spirt_sm64_below(&rng,
				    lens[t]);
				float save = p[at], eps = 1e-3f;
				double lp, lm, num;
				p[at] = save + eps;
				lp = spirt_model_forward(wn, &m, p, B);
				p[at] = save - eps;
				lm = spirt_model_forward(wn, &m, p, B);
				p[at] = save;
				num = (lp - lm) / (2.0 * eps);
				tried++;
				if (fabs(num - gn[at]) > 2e-4 + 2e-2 *
				    fmax(fabs(num), fabs(gn[at]))) {
					bad++;
					fprintf(stderr, "%s: %s.%s[%zu]: fd %g "
					    "vs %g\n", spec, l->name, t ?
					    "bias" : "weight", at - offs[t],
					    num, (double)gn[at]);
				}
			}
		}
	}
	// a kink (ReLU at 0, a max-pool switch) may sit within eps of one
	// coordinate; more than one miss is a bug
	if (bad > 1) {
		fprintf(stderr, "%s: %zu of %zu fd checks off\n", spec, bad,
		    tried);
		check_failed = 1;
	}
	spirt_ws_free(ws);
	spirt_ws_free(wn);
	free(p), free(g), free(gn);
}

/* ---- PyTorch fixtures (contrib/python/make_grad_fixtures.py) ---- */

static void *
load_npy(const char *dir, const char *name, const char *what, int dtype,
    size_t n, void **buf)
{
	struct spirt_tensor t;
	const void *data;
	char path[512];
	size_t len;
	int rc;

	snprintf(path, sizeof path, "%s/%s.%s.npy", dir, name, what);
	if ((rc = spirt_readfile(path, buf, &len)) != 0 ||
	    (rc = spirt_npy_parse(&t, &data, *buf, len)) != 0) {
		fprintf(stderr, "%s: %s\n", path, spirt_strerror(rc));
		check_failed = 1;
		return NULL;
	}
	if (t.dtype != dtype || t.nelem != n) {
		fprintf(stderr, "%s: dtype %d, %llu elements, want %zu\n",
		    path, t.dtype, (unsigned long long)t.nelem, n);
		check_failed = 1;
		return NULL;
	}
	return (void *)(uintptr_t)data;
}

static void
test_fixture(const char *dir, const char *name, const char *spec, size_t B)
{
	struct spirt_model m;
	struct spirt_ws *ws;
	void *bp = NULL, *bx = NULL, *by = NULL, *bg = NULL, *bl = NULL;
	float *p, *x, *g, *got;
	int32_t *y;
	double *loss, l;
	char what[512];

	CHECK_RC(spirt_model_parse(&m, spec));
	if (check_failed)
		return;
	p = load_npy(dir, name, "params", SPIRT_F32, m.nparams, &bp);
	x = load_npy(dir, name, "x", SPIRT_F32, B * m.nin, &bx);
	y = load_npy(dir, name, "y", SPIRT_I32, B, &by);
	g = load_npy(dir, name, "grad", SPIRT_F32, m.nparams, &bg);
	loss = load_npy(dir, name, "loss", SPIRT_F64, 1, &bl);
	if (p && x && y && g && loss) {
		CHECK_RC(spirt_ws_new(&ws, &m, B, SPIRT_WS_TRAIN));
		got = malloc(m.nparams * 4);
		memcpy(spirt_ws_input(ws), x, B * m.nin * 4);
		memcpy(spirt_ws_labels(ws), y, B * 4);
		l = spirt_model_forward(ws, &m, p, B);
		spirt_model_backward(ws, &m, p, got, B);
		if (fabs(l - loss[0]) > 1e-4 * fabs(loss[0])) {
			fprintf(stderr, "%s: loss %.8g, torch %.8g\n", name, l,
			    loss[0]);
			check_failed = 1;
		}
		snprintf(what, sizeof what, "%s (%s) vs torch", name, spec);
		check_close(what, got, g, m.nparams, 1e-4, 1e-6);
		free(got);
		spirt_ws_free(ws);
	}
	free(bp), free(bx), free(by), free(bg), free(bl);
}

/* Each line "NAME SPEC BATCH" of the fixtures' list file into fn. */
static int
each_fixture(const char *list, void (*fn)(const char *, const char *,
    const char *, size_t))
{
	const char *dir = getenv("SPIRT_GRAD_FIXTURES");
	char path[512], line[512], name[128], spec[256];
	unsigned long B;
	FILE *f;
	int n = 0;

	if (dir == NULL)
		dir = "tests/data/grad";
	snprintf(path, sizeof path, "%s/%s", dir, list);
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "%s: no fixtures\n", path);
		check_failed = 1;
		return 0;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%127s %255s %lu", name, spec, &B) != 3) {
			fprintf(stderr, "%s: bad line: %s", path, line);
			check_failed = 1;
			continue;
		}
		fn(dir, name, spec, B);
		n++;
	}
	fclose(f);
	return n;
}

static void
test_fixtures(void)
{
	CHECK(each_fixture("cases", test_fixture) > 0);
}

/* ---- layer lists (net:, resnet8:) against PyTorch float64 ---- */

static void
test_net_parse(void)
{
	static const char *bad[] = {
		"net:", "net:1x8x8", "net:1x8x8:", "net:1x8x8:relu",
		"net:1x8x8:conv3-4", "net:1x8x8:dense-10",      // maps
		"net:1x8x8:flatten,dense-1", "net:1x8x8:flatten,conv3-2",
		"net:1x8x8:conv3-4,,flatten,dense-3",
		"net:1x8x8:conv3-4p3,flatten,dense-3",          // p >= k
		"net:1x8x8:conv9-4p0,flatten,dense-3",          // too big
		"net:1x8x8:res(conv3-2),flatten,dense-3",       // 2 != 1
		"net:1x8x8:res(conv3-1|),flatten,dense-3",
		"net:1x8x8:res(conv3-1s2|conv1-1),flatten,dense-3",
		"net:1x8x8:res(res(conv3-1)),flatten,dense-3",  // nested
		"net:1x8x8:res(conv3-1,gap),dense-3",
		"net:1x8x8:gap,dense-3,flatten,dense-3",
		"net:1x8x8:maxpool9,flatten,dense-3",
		"net:1x8x8:conv3-4,flatten,dense-3,", "net:1x8x8:bogus,dense-3",
		"net:1x8x8:flatten,dense-3)", "resnet8", "resnet8:1x28x28",
		"resnet8:1x28x28-10-", "resnet8:28x28-10",
		"mobilenet:1x28x28-10-", "mobilenet:1x28x28-10-w",
		"mobilenet:1x28x28-10-w0", "mobilenet:1x28x28-10w16",
		"mobilenet:1x28x28", "mobilenet:1x28x28-10-w16-",
	};
	struct spirt_model m;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (spirt_model_parse(&m, bad[i]) != SPIRT_EMODEL) {
			fprintf(stderr, "spec \"%s\" accepted\n", bad[i]);
			check_failed = 1;
		}
	// canonical: defaults left out; a conv before a bn has no bias
	CHECK_RC(spirt_model_parse(&m, "net:1x8x8:conv3-4s1p1,bn,relu,"
	    "maxpool2s2,conv1-4p0,flatten,dense-3"));
	CHECK(strcmp(m.spec, "net:1x8x8:conv3-4,bn,relu,maxpool2,conv1-4,"
	    "flatten,dense-3") == 0);
	CHECK(m.nparams == 36 + 8 + 16 + 4 + 3 * 64 + 3);
	CHECK(m.nstate == 8 && m.nclass == 3 && m.nin == 64);
	CHECK_RC(spirt_model_parse(&m, "resnet8:1x28x28-10"));
	CHECK(strcmp(m.spec, "resnet8:1x28x28-10") == 0);
	CHECK(m.nparams == 77754 && m.nstate == 2 * (16 * 3 + 32 * 3 +
	    64 * 3));
	CHECK_RC(spirt_model_parse(&m, "resnet8:3x32x32-100"));
	CHECK(m.nparams == 77754 + 2 * 16 * 9 + 65 * 90);
	// torch's count for the same module (make_grad_fixtures' LayerNet)
	CHECK_RC(spirt_model_parse(&m, "resnet20:3x32x32-10"));
	CHECK(strcmp(m.spec, "resnet20:3x32x32-10") == 0);
	CHECK(m.nparams == 272474 && m.nstate == 1568 && m.nnodes == 72);
	CHECK(spirt_model_parse(&m, "resnet20:3x32x32") == SPIRT_EMODEL);
	// torch's count for the same module (make_grad_fixtures' mobilenet)
	CHECK_RC(spirt_model_parse(&m, "mobilenet:1x28x28-10"));
	CHECK(strcmp(m.spec, "mobilenet:1x28x28-10") == 0);
	CHECK(m.nparams == 10938 && m.nstate == 768 && m.nnodes == 35);
	CHECK_RC(spirt_model_parse(&m, "mobilenet:1x28x28-10-w16"));
	CHECK(strcmp(m.spec, "mobilenet:1x28x28-10") == 0);
	CHECK_RC(spirt_model_parse(&m, "mobilenet:3x32x32-10-w32"));
	CHECK(strcmp(m.spec, "mobilenet:3x32x32-10-w32") == 0);
	CHECK(m.nparams == 37738 + 2 * 32 * 9 && m.nstate == 1536);
}

/*
 * Specs one character off valid ones: parsed without harm (a record's
 * name is an outsider's string); those accepted and small run forward
 * and backward (under the sanitizers, CI's: no access out of bounds).
 */
static void
test_net_mutations(void)
{
	static const char *base[] = {
		"net:2x9x9:conv3-4s2p0,bn,relu,res(dw3,bn,relu,conv1-4|"
		    "conv1-4,bn),relu,maxpool2s1,avgpool2,flatten,dense-5,"
		    "relu,dense-3",
		"net:1x8x8:res(relu,conv3-1),gap,dense-2",
		"resnet8:1x8x8-4",
		"mobilenet:1x8x8-4-w2",
	};
	static const char alpha[] = "0123456789x:-,()|spbnrelugapdwcov";
	struct spirt_model m;
	struct spirt_ws *ws;
	char spec[300];
	float *p, *g;
	size_t i, j, len, B = 2, big;
	int k, ok = 0;

	for (i = 0; i < 1200; i++) {
		const char *b = base[i % 3];
		len = strlen(b);
		memcpy(spec, b, len + 1);
		j = spirt_sm64_below(&rng, len);
		switch (spirt_sm64_below(&rng, 3)) {
		case 0:         // change a character
			spec[j] = alpha[spirt_sm64_below(&rng,
			    sizeof alpha - 1)];
			break;
		case 1:         // drop one
			memmove(spec + j, spec + j + 1, len - j);
			break;
		default:        // insert one
			memmove(spec + j + 1, spec + j, len - j + 1);
			spec[j] = alpha[spirt_sm64_below(&rng,
			    sizeof alpha - 1)];
		}
		if (spirt_model_parse(&m, spec) != 0)
			continue;
		for (big = 0, k = 0; k < m.nbuf; k++)
			big += m.bufsz[k];
		if (big > 100000 || m.nparams > 1000000)
			continue;
		ok++;
		CHECK(m.nnodes > 0 && m.nclass >= 2);
		if (spirt_ws_new(&ws, &m, B, SPIRT_WS_TRAIN) != 0) {
			CHECK(0);
			continue;
		}
		p = malloc(m.nparams * 4);
		g = malloc(m.nparams * 4);
		spirt_model_init(&m, p, i);
		for (j = 0; j < B * m.nin; j++)
			spirt_ws_input(ws)[j] = (float)spirt_sm64_uniform(&rng);
		for (j = 0; j < B; j++)
			spirt_ws_labels(ws)[j] = (int32_t)(j % m.nclass);
		spirt_model_forward(ws, &m, p, B);
		spirt_model_backward(ws, &m, p, g, B);
		free(p), free(g);
		spirt_ws_free(ws);
	}
	CHECK(ok > 40);
}

/* One forward (and backward, training) of spec on fixed data. */
static double
drop_run(const struct spirt_model *m, unsigned fl, const float *p,
    uint64_t seed, float *g)
{
	struct spirt_ws *ws;
	struct spirt_sm64 r;
	size_t j, B = 8;
	double l;

	if (spirt_ws_new(&ws, m, B, fl) != 0) {
		check_failed = 1;
		return NAN;
	}
	spirt_sm64_seed(&r, 99);
	for (j = 0; j < B * m->nin; j++)
		spirt_ws_input(ws)[j] = (float)spirt_sm64_uniform(&r);
	for (j = 0; j < B; j++)
		spirt_ws_labels(ws)[j] = (int32_t)(j % m->nclass);
	spirt_ws_seed(ws, seed);
	l = spirt_model_forward(ws, m, p, B);
	if (g != NULL)
		spirt_model_backward(ws, m, p, g, B);
	spirt_ws_free(ws);
	return l;
}

/* Dropout: the kernel's rate and scale, the masks' seed, its gradient. */
static void
test_net_dropout(void)
{
	const char *with = "net:1x6x6:conv3-4,relu,dropout50,flatten,dense-8,"
	    "relu,dropout25,dense-3";
	const char *without = "net:1x6x6:conv3-4,relu,flatten,dense-8,relu,"
	    "dense-3";
	struct spirt_model m, m0;
	size_t n = 100000, i, zero = 0, bad = 0, tried = 0;
	float *in = malloc(n * 4), *out = malloc(n * 4), *din = malloc(n * 4);
	float *p, *g, *g2;
	uint8_t *mask = malloc(n);
	double l, l2;

	for (i = 0; i < n; i++)
		in[i] = 1.0f + (float)(i % 7);
	spirt_dropout_forward(out, mask, in, n, 30, 5);
	for (i = 0; i < n; i++) {
		if (out[i] == 0)
			zero++;
		else if (out[i] != in[i] * (float)(100.0 / 70.0))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(zero > n * 29 / 100 && zero < n * 31 / 100);
	spirt_dropout_backward(din, in, mask, n, 30);
	CHECK(memcmp(din, out, n * 4) == 0);
	free(in), free(out), free(din), free(mask);

	CHECK_RC(spirt_model_parse(&m, with));
	CHECK(strcmp(m.spec, with) == 0);
	CHECK_RC(spirt_model_parse(&m0, without));
	CHECK(m.nparams == m0.nparams && m.nstate == 0);
	CHECK(spirt_model_parse(&m, "net:1x6x6:flatten,dropout100,dense-3")
	    == SPIRT_EMODEL);
	CHECK(spirt_model_parse(&m, "net:1x6x6:flatten,dropout0,dense-3")
	    == SPIRT_EMODEL);
	CHECK_RC(spirt_model_parse(&m, with));
	p = malloc(m.nparams * 4);
	g = malloc(m.nparams * 4);
	g2 = malloc(m.nparams * 4);
	spirt_model_init(&m, p, 3);
	// evaluation: the values pass through, as without the layers
	CHECK(drop_run(&m, 0, p, 1, NULL) == drop_run(&m0, 0, p, 1, NULL));
	// training: the seed's masks, the same bits again, others for
	// another seed
	l = drop_run(&m, SPIRT_WS_TRAIN, p, 1, g);
	l2 = drop_run(&m, SPIRT_WS_TRAIN, p, 1, g2);
	CHECK(l == l2 && memcmp(g, g2, m.nparams * 4) == 0);
	CHECK(drop_run(&m, SPIRT_WS_TRAIN, p, 2, g2) != l);
	CHECK(l != drop_run(&m0, SPIRT_WS_TRAIN, p, 1, NULL));
	// the gradient of the masked loss (fixed masks: the same seed)
	drop_run(&m, SPIRT_WS_TRAIN | SPIRT_WS_NAIVE, p, 1, g);
	for (i = 0; i < m.nparams; i += 7) {
		// small: dropout's scale 2 puts ReLU kinks within 1e-3
		float save = p[i], eps = 2e-4f;
		double lp, lm, num;
		p[i] = save + eps;
		lp = drop_run(&m, SPIRT_WS_TRAIN | SPIRT_WS_NAIVE, p, 1, NULL);
		p[i] = save - eps;
		lm = drop_run(&m, SPIRT_WS_TRAIN | SPIRT_WS_NAIVE, p, 1, NULL);
		p[i] = save;
		num = (lp - lm) / (2.0 * eps);
		tried++;
		if (fabs(num - g[i]) > 2e-4 + 2e-2 * fmax(fabs(num),
		    fabs(g[i]))) {
			bad++;
			fprintf(stderr, "dropout net: param %zu: fd %g vs %g\n",
			    i, num, (double)g[i]);
		}
	}
	// a ReLU kink within eps may cost one or two
	CHECK(tried > 40 && bad <= 2);
	free(p), free(g), free(g2);
}

static double
rel(double a, double b)
{
	return fabs(a - b) / fmax(1.0, fabs(b));
}

/* One run of case name: fast or naive; grads and state into g, st. */
static double
net_run(const struct spirt_model *m, unsigned fl, const float *p,
    const float *x, const int32_t *y, const float *st_in, size_t B,
    float *g, float *st)
{
	struct spirt_ws *ws;
	double l;

	if (spirt_ws_new(&ws, m, B, fl) != 0) {
		fprintf(stderr, "%s: workspace: no memory\n", m->spec);
		check_failed = 1;
		return NAN;
	}
	memcpy(spirt_ws_input(ws), x, B * m->nin * 4);
	memcpy(spirt_ws_labels(ws), y, B * 4);
	memcpy(spirt_ws_state(ws), st_in, m->nstate * 4);
	l = spirt_model_forward(ws, m, p, B);
	if (fl & SPIRT_WS_TRAIN)
		spirt_model_backward(ws, m, p, g, B);
	memcpy(st, spirt_ws_state(ws), m->nstate * 4);
	spirt_ws_free(ws);
	return l;
}

static void
test_net_fixture(const char *dir, const char *name, const char *spec,
    size_t B)
{
	struct spirt_model m;
	void *bp = NULL, *bx = NULL, *by = NULL, *bg = NULL, *bl = NULL;
	void *bt = NULL, *bsi = NULL, *bs = NULL, *be = NULL;
	float *p, *x, *g, *si, *sw, *got, *got2, *st, *st2;
	double *loss, *tol, *eloss, l, d;
	size_t j, T, t;
	int32_t *y;
	int naive;

	CHECK_RC(spirt_model_parse(&m, spec));
	if (check_failed)
		return;
	T = 0;
	for (j = 0; j < (size_t)m.nnodes; j++)
		T += (m.node[j].wlen != 0) + (m.node[j].blen != 0);
	p = load_npy(dir, name, "params", SPIRT_F32, m.nparams, &bp);
	x = load_npy(dir, name, "x", SPIRT_F32, B * m.nin, &bx);
	y = load_npy(dir, name, "y", SPIRT_I32, B, &by);
	g = load_npy(dir, name, "grad", SPIRT_F32, m.nparams, &bg);
	loss = load_npy(dir, name, "loss", SPIRT_F64, 1, &bl);
	tol = load_npy(dir, name, "tol", SPIRT_F64, 3 * T, &bt);
	si = load_npy(dir, name, "state_in", SPIRT_F32, m.nstate, &bsi);
	sw = load_npy(dir, name, "state", SPIRT_F32, m.nstate, &bs);
	eloss = load_npy(dir, name, "evalloss", SPIRT_F64, 1, &be);
	if (!(p && x && y && g && loss && tol && si && sw && eloss))
		goto out;
	got = malloc(m.nparams * 4);
	got2 = malloc(m.nparams * 4);
	st = malloc(m.nstate * 4 + 4);
	st2 = malloc(m.nstate * 4 + 4);
	for (naive = 0; naive < 2; naive++) {
		unsigned fl = SPIRT_WS_TRAIN | (naive ? SPIRT_WS_NAIVE : 0);
		const char *how = naive ? "naive" : "fast";

		l = net_run(&m, fl, p, x, y, si, B, got, st);
		if (!(rel(l, loss[0]) <= 1e-5)) {
			fprintf(stderr, "%s (%s): loss %.9g, torch %.9g\n",
			    name, how, l, loss[0]);
			check_failed = 1;
		}
		// every parameter tensor within its bound
		for (t = 0; t < T; t++) {
			size_t o = (size_t)tol[3 * t];
			size_t n = (size_t)tol[3 * t + 1];
			for (d = 0, j = o; j < o + n; j++)
				d = fmax(d, fabs((double)got[j] - g[j]));
			if (!(d <= tol[3 * t + 2])) {
				fprintf(stderr, "%s (%s): tensor %zu at %zu: "
				    "maxdiff %g, allowed %g\n", name, how, t, o,
				    d, tol[3 * t + 2]);
				check_failed = 1;
			}
		}
		// the running statistics as torch leaves them
		for (d = 0, j = 0; j < m.nstate; j++)
			d = fmax(d, rel(st[j], sw[j]));
		if (!(d <= 1e-5)) {
			fprintf(stderr, "%s (%s): state maxdiff %g\n", name,
			    how, d);
			check_failed = 1;
		}
		// bit-identical reruns (the fast kernels: the naive ones
		// have no threads nor blocking to vary)
		if (!naive) {
			net_run(&m, fl, p, x, y, si, B, got2, st2);
			CHECK(memcmp(got, got2, m.nparams * 4) == 0);
			CHECK(memcmp(st, st2, m.nstate * 4) == 0);
		}
		// evaluation mode: the statistics after the step normalise,
		// and nothing changes them
		l = net_run(&m, naive ? SPIRT_WS_NAIVE : 0, p, x, y, sw, B,
		    NULL, st2);
		if (!(rel(l, eloss[0]) <= 1e-5)) {
			fprintf(stderr, "%s (%s): eval loss %.9g, torch %.9g\n",
			    name, how, l, eloss[0]);
			check_failed = 1;
		}
		CHECK(memcmp(st2, sw, m.nstate * 4) == 0);
	}
	free(got), free(got2), free(st), free(st2);
out:
	free(bp), free(bx), free(by), free(bg), free(bl);
	free(bt), free(bsi), free(bs), free(be);
}

static void
test_net_fixtures(void)
{
	CHECK(each_fixture("nets", test_net_fixture) >= 3);
}

int
main(void)
{
	spirt_sm64_seed(&rng, 1234);
	if (getenv("SPIRT_TEST_NOBLAS") == NULL && blas_load(1) != 0) {
		fprintf(stderr, "OpenBLAS: %s\n", spirt_blas_error());
		return 1;
	}
	test_parse();
	test_init();
	test_model("softmax:6:3", 5);
	test_model("mlp:6-5-4-3", 5);
	test_model("mlp:10-7-3", 9);
	test_model("cnn:1x16x16-2-3-4", 3);
	test_model("cnn:3x17x18-2-3-4", 2);
	test_model("cnn:1x28x28-4-6-10", 2);
	test_fixtures();
	test_net_parse();
	test_net_mutations();
	test_net_dropout();
	test_net_fixtures();
	CHECK_DONE();
}
