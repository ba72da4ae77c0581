/* grad.c - gradients of a stored model on stored data */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grad.h"
#include "gradctx.h"
#include "keys.h"
#include "assign.h"
#include "batch.h"
#include "vec.h"
#include "model.h"

int
spirt_grad_ctx_new(struct spirt_grad_ctx **out, unsigned flags)
{
	if ((*out = calloc(1, sizeof **out)) == NULL)
		return ENOMEM;
	(*out)->flags = flags;
	return 0;
}

static void
free_pairs(struct spirt_grad_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nfp; i++) {
		free(c->fp[i].x);
		free(c->fp[i].y);
	}
	free(c->fp);
	c->fp = NULL;
	c->nfp = 0;
}

void
spirt_grad_ctx_free(struct spirt_grad_ctx *c)
{
	if (c == NULL)
		return;
	spirt_ws_free(c->ws);
	free(c->grad);
	free(c->pcopy);
	free(c->perm);
	free(c->r);
	spirt_batch_free(&c->sel);
	free(c->bat);
	free(c->brange);
	free(c->pred);
	free(c->mpath);
	free(c->mparams);
	free(c->dpath);
	free_pairs(c);
	free(c);
}

const char *
spirt_grad_where(const struct spirt_grad_ctx *c)
{
	return c->where;
}


/* ---- the latest model version ---- */

struct latest {
	size_t plen;
	uint64_t step;
	int found;
};

static int
latest_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct latest *l = arg;
	const char *s = key + l->plen;
	uint64_t v = 0;

	(void)val;
	(void)len;
	if (*s == '\0' || (*s == '0' && s[1] != '\0'))
		return 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s != '\0')
		return 0;
	if (!l->found || v > l->step)
		l->step = v;
	l->found = 1;
	return 0;
}

int
spirt_model_latest(struct spirt_txn *txn, const char *name, uint64_t *step)
{
	char prefix[SPIRT_KEY_MAX + 1];
	struct latest l = { 0, 0, 0 };
	int rc;

	if ((rc = spirt_key_model_prefix(prefix, sizeof prefix, name)) != 0)
		return rc;
	l.plen = strlen(prefix);
	if ((rc = spirt_store_list(txn, prefix, latest_fn, &l)) != 0)
		return rc;
	if (!l.found)
		return SPIRT_ENOTFOUND;
	*step = l.step;
	return 0;
}

/* ---- model ---- */

/* Workspace for m's spec, batches up to B, with backward if train. */
int
spirt_grad_ensure_ws(struct spirt_grad_ctx *c, const struct spirt_model *m,
    size_t B, int train)
{
	unsigned fl = (train ? SPIRT_WS_TRAIN : 0) |
	    (c->flags & SPIRT_GRAD_NAIVE ? SPIRT_WS_NAIVE : 0);
	int rc;

	// batch normalisation's and dropout's mode is the workspace's: a
	// layer list needs one of its own kind
	if (c->ws != NULL && strcmp(c->wsspec, m->spec) == 0 &&
	    c->wsB >= B && (c->wstrain == train || (c->wstrain &&
	    m->kind != SPIRT_NET)))
		return 0;
	spirt_ws_free(c->ws);
	c->ws = NULL;
	if ((rc = spirt_ws_new(&c->ws, m, B, fl)) != 0)
		return rc;
	memcpy(c->wsspec, m->spec, sizeof c->wsspec);
	c->wsB = B;
	c->wstrain = train;
	return 0;
}

/* Check a model record t, p (what names it) and point *params at it. */
static int
check_model(struct spirt_grad_ctx *c, const char *what,
    const struct spirt_tensor *t, const void *p, uint64_t step,
    const float **params)
{
	struct spirt_model m;
	size_t bad;
	int rc;

	if (t->dtype != SPIRT_F32)
		return where(c, SPIRT_EDTYPE, "%s: dtype %s, want f32", what,
		    spirt_dtype_name(t->dtype));
	if ((rc = spirt_model_parse(&m, t->name)) != 0)
		return where(c, rc, "%s: spec \"%s\"", what, t->name);
	if (t->rank != 1 || t->nelem != m.nparams)
		return where(c, SPIRT_ESHAPE, "%s: %" PRIu64 " values of rank "
		    "%u, spec %s needs %zu", what, t->nelem,
		    (unsigned)t->rank, m.spec, m.nparams);
	if (t->step != step)
		return where(c, SPIRT_ESTEP, "%s: record says step %" PRIu64
		    ", want %" PRIu64, what, t->step, step);
	if (!spirt_aligned(p, SPIRT_F32)) {
		if (c->pcap < m.nparams) {
			free(c->pcopy);
			if ((c->pcopy = malloc(m.nparams * 4)) == NULL) {
				c->pcap = 0;
				return ENOMEM;
			}
			c->pcap = m.nparams;
		}
		memcpy(c->pcopy, p, m.nparams * 4);
		p = c->pcopy;
	}
	if ((bad = spirt_count_nonfinite_f32(p, m.nparams)) != 0)
		return where(c, SPIRT_ENAN, "%s: %zu non-finite parameters",
		    what, bad);
	c->m = m;
	*params = p;
	return 0;
}

/*
 * The model of name at step into c->m and *params: from the model file
 * if one is set, else model/<name>@<step> (zero-copy if aligned).
 */
int
spirt_grad_load_model(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const char *name, uint64_t step, const float **params)
{
	struct spirt_tensor t;
	const void *p;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if (c->mparams != NULL)
		return check_model(c, c->mpath, &c->mhdr, c->mparams, step,
		    params);
	if (txn == NULL)
		return SPIRT_EBUG;
	if ((rc = spirt_key_model(key, sizeof key, name, step)) != 0)
		return where(c, rc, "model name \"%s\"", name);
	if ((rc = spirt_store_get_tensor(txn, key, &t, &p, 1)) != 0)
		return where(c, rc, "%s", key);
	return check_model(c, key, &t, p, step, params);
}

/*
 * The state of model name at step (mstate/<name>@<step>) into the
 * workspace, checked; a fresh one when the model comes from a file or
 * there is no store.  Nothing for a model without state.
 */
int
spirt_grad_load_state(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const char *name, uint64_t step)
{
	struct spirt_tensor t;
	const void *p;
	char key[SPIRT_KEY_MAX + 1];
	size_t bad;
	int rc;

	if (c->m.nstate == 0)
		return 0;
	if (c->mparams != NULL || txn == NULL) {
		spirt_model_state_init(&c->m, spirt_ws_state(c->ws));
		return 0;
	}
	if ((rc = spirt_key_mstate(key, sizeof key, name, step)) != 0)
		return where(c, rc, "model name \"%s\"", name);
	if ((rc = spirt_store_get_tensor(txn, key, &t, &p, 0)) != 0)
		return where(c, rc, "%s", key);
	if (t.dtype != SPIRT_F32 || t.rank != 1 || t.nelem != c->m.nstate)
		return where(c, t.dtype != SPIRT_F32 ? SPIRT_EDTYPE :
		    SPIRT_ESHAPE, "%s: not f32 [%zu], the state of %s", key,
		    c->m.nstate, c->m.spec);
	if (t.step != step)
		return where(c, SPIRT_ESTEP, "%s: record says step %" PRIu64
		    ", want %" PRIu64, key, t.step, step);
	memcpy(spirt_ws_state(c->ws), p, c->m.nstate * 4);   // may be unaligned
	if ((bad = spirt_count_nonfinite_f32(spirt_ws_state(c->ws),
	    c->m.nstate)) != 0)
		return where(c, SPIRT_ENAN, "%s: %zu non-finite values", key,
		    bad);
	return 0;
}

const float *
spirt_grad_state(const struct spirt_grad_ctx *c, size_t *n)
{
	*n = c->nstate;
	return c->nstate ? spirt_ws_state(c->ws) : NULL;
}

/* ---- files instead of the store ---- */

static int
open_in(const char *path)
{
	return strcmp(path, "-") == 0 ? STDIN_FILENO :
	    open(path, O_RDONLY | O_CLOEXEC);
}

int
spirt_grad_model_file(struct spirt_grad_ctx *c, const char *path,
    uint64_t *step)
{
	struct spirt_tensor t;
	void *p = NULL;
	int rc;

	c->where[0] = '\0';
	/* the state record spirt-update -o may add is checked, then dropped */
	if ((rc = spirt_model_file_read(path, &t, &p, NULL, NULL, c->where,
	    sizeof c->where)) != 0)
		return rc;
	free(c->mparams);
	free(c->mpath);
	c->mparams = p;
	c->mhdr = t;
	if ((c->mpath = strdup(path)) == NULL) {
		free(c->mparams);
		c->mparams = NULL;
		return ENOMEM;
	}
	*step = t.step;
	return 0;
}

int
spirt_grad_data_file(struct spirt_grad_ctx *c, const char *path)
{
	struct fpair *fp = NULL, *nfp;
	struct spirt_tensor t;
	size_t n = 0, cap = 0, i;
	uint64_t rec = 0;
	void *p;
	int fd, rc;

	c->where[0] = '\0';
	if ((fd = open_in(path)) < 0)
		return where(c, errno, "%s", path);
	for (;; rec++) {
		if ((rc = spirt_tensor_read(fd, &t, &p, 0)) != 0)
			break;
		if (rec % 2 == 0) {
			if (n == cap) {
				cap = cap ? 2 * cap : 4;
				if ((nfp = realloc(fp, cap * sizeof *fp)) ==
				    NULL) {
					free(p);
					rc = ENOMEM;
					break;
				}
				fp = nfp;
			}
			fp[n].tx = t;
			fp[n].x = p;
			fp[n].y = NULL;
			n++;
		} else {
			fp[n - 1].ty = t;
			fp[n - 1].y = p;
		}
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc == SPIRT_EOF && (rec == 0 || rec % 2 != 0)) {
		rc = where(c, SPIRT_ETRUNC, "%s: record %" PRIu64 ": %s", path,
		    rec, rec ? "labels (y) missing" : "no records");
	} else if (rc == SPIRT_EOF) {
		rc = 0;
	} else if (rc != ENOMEM) {
		where(c, rc, "%s: record %" PRIu64, path, rec);
	}
	if (rc != 0) {
		for (i = 0; i < n; i++) {
			free(fp[i].x);
			free(fp[i].y);
		}
		free(fp);
		return rc;
	}
	free_pairs(c);
	free(c->dpath);
	c->fp = fp;
	c->nfp = n;
	if ((c->dpath = strdup(path)) == NULL) {
		free_pairs(c);
		return ENOMEM;
	}
	return 0;
}

/* ---- data ---- */

static int
get_i64(struct spirt_grad_ctx *c, struct spirt_txn *txn, const char *key,
    struct spirt_tensor *t, const int64_t **v)
{
	const void *p;
	int rc;

	if ((rc = spirt_store_get_tensor(txn, key, t, &p, 1)) != 0)
		return where(c, rc, "%s", key);
	if (t->dtype != SPIRT_I64)
		return where(c, SPIRT_EDTYPE, "%s: dtype %s, want i64", key,
		    spirt_dtype_name(t->dtype));
	*v = p;
	return 0;
}

/* info: nshards, nsamples, nclasses, features; checked against c->m */
int
spirt_grad_load_info(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const char *ds, int64_t info[4])
{
	struct spirt_tensor t;
	const int64_t *v = NULL;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if (spirt_key_data_info(key, sizeof key, ds) != 0)
		return where(c, SPIRT_EKEY, "data set name \"%s\"", ds);
	if ((rc = get_i64(c, txn, key, &t, &v)) != 0)
		return rc;
	if (t.nelem != 4)
		return where(c, SPIRT_ESHAPE, "%s: %" PRIu64 " values, want 4",
		    key, t.nelem);
	memcpy(info, v, 4 * sizeof *info);      // may be unaligned
	if (info[0] < 1 || info[1] < 0 || info[2] < 1 || info[3] < 1)
		return where(c, SPIRT_EDATA, "%s: bad values", key);
	if ((uint64_t)info[3] != c->m.nin)
		return where(c, SPIRT_ESHAPE, "data set %s has %" PRId64
		    " features per sample, model %s takes %zu", ds, info[3],
		    c->m.spec, c->m.nin);
	if ((uint64_t)info[2] > c->m.nclass)
		return where(c, SPIRT_ESHAPE, "data set %s has %" PRId64
		    " classes, model %s has %zu", ds, info[2], c->m.spec,
		    c->m.nclass);
	return 0;
}

/* Check an x, y pair fits the model; fills r->x, y, xdtype and *n. */
static int
check_xy(struct spirt_grad_ctx *c, const char *kx, const char *ky,
    const struct spirt_tensor *tx, const struct spirt_tensor *ty,
    struct range *r, uint64_t *n)
{
	if (tx->dtype != SPIRT_U8 && tx->dtype != SPIRT_F32)
		return where(c, SPIRT_EDTYPE, "%s: dtype %s, want u8 or f32",
		    kx, spirt_dtype_name(tx->dtype));
	if (tx->rank < 1 || tx->nelem != tx->dims[0] * c->m.nin)
		return where(c, SPIRT_ESHAPE, "%s: %" PRIu64 " values for %"
		    PRIu64 " samples of %zu features", kx, tx->nelem,
		    tx->rank ? tx->dims[0] : 0, c->m.nin);
	r->xdtype = tx->dtype;
	if (ty->dtype != SPIRT_I32)
		return where(c, SPIRT_EDTYPE, "%s: dtype %s, want i32", ky,
		    spirt_dtype_name(ty->dtype));
	if (ty->nelem != tx->dims[0])
		return where(c, SPIRT_ESHAPE, "%s: %" PRIu64 " labels for %"
		    PRIu64 " samples", ky, ty->nelem, tx->dims[0]);
	*n = tx->dims[0];
	return 0;
}

/* Pair k of the data file (record 2k and 2k+1), checked. */
int
spirt_grad_file_pair(struct spirt_grad_ctx *c, size_t k, struct range *r,
    uint64_t *n)
{
	char kx[SPIRT_KEY_MAX + 64], ky[SPIRT_KEY_MAX + 64];

	snprintf(kx, sizeof kx, "%.*s: record %zu", SPIRT_KEY_MAX, c->dpath,
	    2 * k);
	snprintf(ky, sizeof ky, "%.*s: record %zu", SPIRT_KEY_MAX, c->dpath,
	    2 * k + 1);
	r->x = c->fp[k].x;
	r->y = c->fp[k].y;
	return check_xy(c, kx, ky, &c->fp[k].tx, &c->fp[k].ty, r, n);
}

/* Shard k's samples (zero-copy) after checking they fit the model. */
int
spirt_grad_load_shard(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const char *ds, uint64_t k, struct range *r, uint64_t *n)
{
	struct spirt_tensor tx, ty;
	char kx[SPIRT_KEY_MAX + 1], ky[SPIRT_KEY_MAX + 1];
	int rc;

	if ((rc = spirt_key_data_x(kx, sizeof kx, ds, k)) != 0 ||
	    (rc = spirt_key_data_y(ky, sizeof ky, ds, k)) != 0)
		return where(c, rc, "data set name \"%s\"", ds);
	if ((rc = spirt_store_get_tensor(txn, kx, &tx, &r->x, 0)) != 0)
		return where(c, rc, "%s", kx);
	if ((rc = spirt_store_get_tensor(txn, ky, &ty, &r->y, 0)) != 0)
		return where(c, rc, "%s", ky);
	return check_xy(c, kx, ky, &tx, &ty, r, n);
}

/* The range of c holding worker position pos; *row (out): its row there. */
static const struct range *
locate(const struct spirt_grad_ctx *c, uint64_t pos, uint64_t *row)
{
	const struct range *r = c->r;

	for (; pos >= r->count; r++)
		pos -= r->count;
	*row = r->start + pos;
	return r;
}

/* Ask the cache for row `row` of range r (nin features). */
static void
prefetch_row(const struct range *r, uint64_t row, size_t nin)
{
#if defined(__GNUC__)
	size_t n = nin * (r->xdtype == SPIRT_U8 ? 1 : 4);

	for (size_t j = 0; j < n; j += 64)
		__builtin_prefetch((const char *)r->x + row * n + j, 0, 0);
#else
	(void)r;
	(void)row;
	(void)nin;
#endif
}

/*
 * Sample row of range r into x (nin floats) and its label into *y.  Bytes
 * become floats 8 at a time (the same conversion and product per element
 * as the scalar tail, so the same bits); compiled per x86-64 level like
 * the other hot loops (SPIRT_DISPATCH, vec.h).
 */
SPIRT_KERNEL void
spirt_grad_fetch_k(float *x, int32_t *y, const struct range *r, uint64_t row,
    size_t nin)
{
	size_t i = 0;

	if (r->xdtype == SPIRT_U8) {
		const unsigned char *s = (const unsigned char *)r->x +
		    row * nin;
#ifdef SPIRT_VEC
		typedef unsigned char vb8 __attribute__((vector_size(8)));
		const vf8 k = SPLAT8(1.0f / 255.0f);

		for (; i + VL8 <= nin; i += VL8) {
			vb8 b;
			vf8 f;

			memcpy(&b, s + i, sizeof b);
			f = __builtin_convertvector(b, vf8) * k;
			ST8(x + i, f);
		}
#endif
		for (; i < nin; i++)
			x[i] = (float)s[i] * (1.0f / 255.0f);
	} else {
		memcpy(x, (const unsigned char *)r->x + row * nin * 4,
		    nin * 4);
	}
	memcpy(y, (const unsigned char *)r->y + row * 4, 4);
}

SPIRT_DISPATCH_VOID(, spirt_grad_fetch, (float *x, int32_t *y,
    const struct range *r, uint64_t row, size_t nin), (x, y, r, row, nin))

/* room for a range more in c->r */
static int
range_room(struct spirt_grad_ctx *c)
{
	size_t cap;
	struct range *nr;

	if (c->nr < c->rcap)
		return 0;
	cap = c->rcap ? 2 * c->rcap : 8;
	if ((nr = realloc(c->r, cap * sizeof *nr)) == NULL)
		return ENOMEM;
	c->r = nr;
	c->rcap = cap;
	return 0;
}

/* spirt_batch_select's callback: row i of the worker's is shard k */
struct load_arg {
	struct spirt_grad_ctx *c;
	struct spirt_txn *txn;
	const char *ds;
};

static int
load_row(void *arg, size_t i, uint64_t k, uint64_t *n)
{
	struct load_arg *l = arg;
	struct spirt_grad_ctx *c = l->c;
	int rc;

	if ((rc = range_room(c)) != 0)
		return rc;
	c->r[i].shard = k;
	if ((rc = spirt_grad_load_shard(c, l->txn, l->ds, k, &c->r[i], n)) !=
	    0)
		return rc;
	c->nr = i + 1;
	return 0;
}

/*
 * The worker's samples at job's step by the store's rule (batch.h), their
 * shards loaded into c->r: c->sel, *B of them; *rev the revision.
 */
static int
store_ranges(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const struct spirt_grad_job *job, const int64_t info[4], uint64_t *B,
    uint64_t *rev)
{
	struct load_arg l = { c, txn, job->dataset };
	int rc;

	c->nr = 0;
	rc = spirt_batch_select(&c->sel, txn, job->dataset, (uint64_t)info[0],
	    (uint64_t)info[1], job->worker, job->step, job->batch, job->seed,
	    load_row, &l);
	*rev = c->sel.revision;
	if (rc != 0)
		return c->sel.msg[0] ? where(c, rc, "%s", c->sel.msg) : rc;
	*B = c->sel.n;
	return 0;
}

/* ---- the minibatch rule ---- */

/* Epoch, first position and size of step's batch among N samples. */
static void
batch_place(uint64_t *epoch, uint64_t *lo, uint64_t *B, uint64_t step,
    uint64_t N, uint64_t batch)
{
	uint64_t S = N / batch + (N % batch != 0);

	*epoch = step / S;
	*lo = (step % S) * batch;
	*B = N - *lo < batch ? N - *lo : batch;
}

int
spirt_minibatch(uint32_t *idx, size_t *count, uint64_t seed,
    uint32_t worker, uint64_t step, uint64_t n, size_t batch)
{
	uint64_t epoch, lo, B;
	uint32_t *perm;

	if (n == 0 || n > UINT32_MAX || batch == 0)
		return SPIRT_EINVAL;
	if ((perm = malloc(n * sizeof *perm)) == NULL)
		return ENOMEM;
	batch_place(&epoch, &lo, &B, step, n, batch);
	spirt_perm_fill(perm, n, seed, worker, epoch);
	memcpy(idx, perm + lo, B * sizeof *idx);
	*count = (size_t)B;
	free(perm);
	return 0;
}

/* c->perm = the permutation of 0..N-1 for (seed, worker, epoch), cached. */
static int
permutation(struct spirt_grad_ctx *c, uint64_t seed, uint32_t worker,
    uint64_t epoch, uint64_t N)
{
	if (c->permvalid && c->permN == N && c->permkey[0] == seed &&
	    c->permkey[1] == worker && c->permkey[2] == epoch)
		return 0;
	if (N > UINT32_MAX)
		return SPIRT_EINVAL;
	c->permvalid = 0;
	free(c->perm);
	if ((c->perm = malloc(N * sizeof *c->perm)) == NULL)
		return ENOMEM;
	spirt_perm_fill(c->perm, N, seed, worker, epoch);
	c->permN = N;
	c->permkey[0] = seed;
	c->permkey[1] = worker;
	c->permkey[2] = epoch;
	c->permvalid = 1;
	return 0;
}

const struct spirt_grad_sample *
spirt_grad_batch(const struct spirt_grad_ctx *c, size_t *n)
{
	*n = c->nbat;
	return c->bat;
}

/* room for B samples in c->bat, c->brange */
static int
batch_room(struct spirt_grad_ctx *c, size_t B)
{
	struct spirt_grad_sample *nb;
	const struct range **nr;

	if (B <= c->batcap)
		return 0;
	if ((nb = realloc(c->bat, B * sizeof *nb)) == NULL)
		return ENOMEM;
	c->bat = nb;
	if ((nr = realloc(c->brange, B * sizeof *nr)) == NULL)
		return ENOMEM;
	c->brange = nr;
	c->batcap = B;
	return 0;
}

/* The worker's samples from the data file: pair worker, or the only one. */
static int
file_ranges(struct spirt_grad_ctx *c, uint32_t worker, uint64_t *N)
{
	size_t k = c->nfp == 1 ? 0 : worker;
	int rc;

	if (k >= c->nfp)
		return where(c, SPIRT_ENOTFOUND, "%s: %zu x, y pairs, none for "
		    "worker %" PRIu32, c->dpath, c->nfp, worker);
	if (c->rcap == 0) {
		if ((c->r = malloc(sizeof *c->r)) == NULL)
			return ENOMEM;
		c->rcap = 1;
	}
	c->nr = 1;
	c->r[0].shard = k;
	c->r[0].start = 0;
	if ((rc = spirt_grad_file_pair(c, k, &c->r[0], N)) != 0)
		return rc;
	c->r[0].count = *N;
	if (*N == 0)
		return where(c, SPIRT_ENOTFOUND, "%s: record %zu: no samples "
		    "for worker %" PRIu32, c->dpath, 2 * k, worker);
	return 0;
}

/* ---- gradient ---- */

int
spirt_grad_compute(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const struct spirt_grad_job *job, struct spirt_tensor *hdr,
    const float **grad)
{
	const float *params;
	int64_t info[4];
	uint64_t N, epoch, lo = 0, B = 0, i, dims[1], rev = SPIRT_NOREVISION;
	size_t bad;
	double loss;
	float *x, *g;
	int32_t *y;
	int rc;

	c->where[0] = '\0';
	c->nbat = 0;
	c->nstate = 0;
	if (job->batch == 0)
		return SPIRT_EINVAL;
	if ((rc = spirt_grad_load_model(c, txn, job->model, job->step, &params)) != 0)
		return rc;
	if (c->fp != NULL) {
		if ((rc = file_ranges(c, job->worker, &N)) != 0)
			return rc;
		batch_place(&epoch, &lo, &B, job->step, N, job->batch);
		rc = permutation(c, job->seed, job->worker, epoch, N);
	} else if (txn == NULL) {
		rc = SPIRT_EBUG;
	} else if ((rc = spirt_grad_load_info(c, txn, job->dataset, info)) ==
	    0) {
		rc = store_ranges(c, txn, job, info, &B, &rev);
	}
	/* a list longer than an epoch of batches has runs above the batch
	 * (spirt_batch_span): the workspace holds the run */
	if (rc != 0 || (rc = spirt_grad_ensure_ws(c, &c->m, B > job->batch ?
	    (size_t)B : job->batch, 1)) != 0 ||
	    (rc = spirt_grad_load_state(c, txn, job->model, job->step)) != 0 ||
	    (rc = batch_room(c, (size_t)B)) != 0)
		return rc;
	/* the batch's samples: a data file's by the worker's permutation of
	 * its pair, the store's by spirt_batch_select (batch.h) */
	for (i = 0; i < B; i++) {
		const struct range *r;
		uint64_t row;

		if (c->fp != NULL) {
			r = locate(c, c->perm[lo + i], &row);
		} else {
			r = &c->r[c->sel.row[i]];
			row = c->sel.s[i].index;
		}
		c->brange[i] = r;
		c->bat[i].shard = r->shard;
		c->bat[i].index = row;
	}
	c->nbat = (size_t)B;
	x = spirt_ws_input(c->ws);
	y = spirt_ws_labels(c->ws);
	/* the rows are scattered over the shard: ask for row i + 4 while
	 * converting row i (a batch gather waits on memory, not on math) */
	for (i = 0; i < B + 4; i++) {
		if (i < B)
			prefetch_row(c->brange[i], c->bat[i].index, c->m.nin);
		if (i >= 4)
			spirt_grad_fetch(x + (i - 4) * c->m.nin, y + i - 4,
			    c->brange[i - 4], c->bat[i - 4].index, c->m.nin);
	}
	if ((rc = spirt_labels_check(y, B, c->m.nclass)) != 0)
		return where(c, rc, "%s%s: label outside 0..%zu",
		    c->fp ? "" : "data set ", c->fp ? c->dpath : job->dataset,
		    c->m.nclass - 1);
	if (job->label_flip)
		for (i = 0; i < B; i++)
			y[i] = (int32_t)c->m.nclass - 1 - y[i];

	if (c->gcap < c->m.nparams) {
		free(c->grad);
		if ((c->grad = malloc(c->m.nparams * 4)) == NULL) {
			c->gcap = 0;
			return ENOMEM;
		}
		c->gcap = c->m.nparams;
	}
	/* straight into the caller's place when it has room (a slot) */
	g = c->out != NULL && c->ocap >= c->m.nparams ? c->out : c->grad;
	// dropout's masks: a function of (seed, step, worker) only
	spirt_ws_seed(c->ws, spirt_seed_mix(job->seed, job->step,
	    job->worker));
	loss = spirt_model_forward(c->ws, &c->m, params, B);
	spirt_model_backward(c->ws, &c->m, params, g, B);
	if (!isfinite(loss) ||
	    (bad = spirt_count_nonfinite_f32(g, c->m.nparams)) != 0 ||
	    spirt_count_nonfinite_f32(spirt_ws_state(c->ws), c->m.nstate))
		return c->mparams ? where(c, SPIRT_ENAN, "%s: loss %g: "
		    "gradient not finite", c->mpath, loss) :
		    where(c, SPIRT_ENAN, "model/%s@%" PRIu64 ": loss %g: "
		    "gradient not finite", job->model, job->step, loss);

	dims[0] = c->m.nparams;
	if ((rc = spirt_tensor_init(hdr, SPIRT_F32, 1, dims)) != 0 ||
	    (rc = spirt_tensor_set_name(hdr, c->m.spec)) != 0)
		return rc;
	hdr->step = job->step;
	hdr->origin = job->worker;
	hdr->samples = B;
	hdr->loss = loss;
	spirt_tensor_set_revision(hdr, rev);
	*grad = g;
	c->nstate = c->m.nstate;
	return 0;
}

void
spirt_grad_set_out(struct spirt_grad_ctx *c, float *out, size_t cap)
{
	c->out = out;
	c->ocap = out != NULL ? cap : 0;
}
