/* shard.c - data sets in the store: shuffle, shards, the assignment */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "rng.h"
#include "shard.h"

/* ---- standardisation read back ---- */

int
spirt_data_scale_get(float **scale, struct spirt_store *s, const char *name,
    size_t feat)
{
	struct spirt_txn *txn;
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	const void *p;
	float *sc = NULL;
	size_t j;
	int rc;

	*scale = NULL;
	if (spirt_data_name_check(name))
		return SPIRT_EINVAL;
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_key_data_scale(key, sizeof(key), name)) ||
	    (rc = spirt_store_get_tensor(txn, key, &t, &p, 1)))
		goto out;
	if (t.dtype != SPIRT_F32) {
		rc = SPIRT_EDTYPE;
		goto out;
	}
	if (t.rank != 2 || t.dims[0] != 2 || t.dims[1] != feat) {
		rc = SPIRT_ESHAPE;
		goto out;
	}
	if ((sc = malloc(t.nbytes ? t.nbytes : 1)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	memcpy(sc, p, t.nbytes);        /* the map may be unaligned */
	for (j = 0; j < feat; j++)
		if (!isfinite(sc[j]) || !isfinite(sc[feat + j]) ||
		    !(sc[feat + j] > 0)) {
			rc = SPIRT_ENAN;
			goto out;
		}
	*scale = sc;
	sc = NULL;
out:
	spirt_txn_abort(txn);
	free(sc);
	return rc;
}

/* ---- class names read back ---- */

int
spirt_data_names_get(char **names, size_t *len, struct spirt_store *s,
    const char *name)
{
	struct spirt_txn *txn;
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1], *b = NULL;
	const void *p;
	size_t k;
	int rc;

	*names = NULL;
	*len = 0;
	if (spirt_data_name_check(name))
		return SPIRT_EINVAL;
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_key_data_classes(key, sizeof(key), name)) ||
	    (rc = spirt_store_get_tensor(txn, key, &t, &p, 1)))
		goto out;
	if (t.dtype != SPIRT_U8) {
		rc = SPIRT_EDTYPE;
		goto out;
	}
	if (t.rank != 1) {
		rc = SPIRT_ESHAPE;
		goto out;
	}
	if ((rc = spirt_data_names_check(p, t.nbytes, &k)))
		goto out;
	if ((b = malloc(t.nbytes ? t.nbytes : 1)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	memcpy(b, p, t.nbytes);
	*names = b;
	*len = t.nbytes;
out:
	spirt_txn_abort(txn);
	return rc;
}

/* ---- shuffle and split ---- */

/* swap two disjoint rows of n bytes through a small stack buffer */
static void
swaprows(unsigned char *a, unsigned char *b, size_t n)
{
	unsigned char t[256];
	size_t k;

	while (n) {
		k = n < sizeof(t) ? n : sizeof(t);
		memcpy(t, a, k);
		memcpy(a, b, k);
		memcpy(b, t, k);
		a += k;
		b += k;
		n -= k;
	}
}

void
spirt_data_shuffle(struct spirt_dataset *ds, uint64_t seed)
{
	struct spirt_rng r;
	size_t row = ds->feat * spirt_dtype_size(ds->xdtype), i, j;
	unsigned char *x = ds->x;
	int32_t t;

	spirt_rng_seed(&r, seed);
	for (i = ds->n; i > 1; i--) {
		j = (size_t)spirt_rng_below(&r, i);
		if (j == i - 1)
			continue;
		swaprows(x + (i - 1) * row, x + j * row, row);
		t = ds->y[i - 1];
		ds->y[i - 1] = ds->y[j];
		ds->y[j] = t;
	}
}

void
spirt_data_split(size_t *counts, size_t n, size_t nshards)
{
	size_t k;

	for (k = 0; k < nshards; k++)
		counts[k] = n / nshards + (k < n % nshards);
}

/* ---- store ---- */

struct keylist {
	const char *prefix;
	char **keys;
	size_t n, cap;
};

static int
collect(void *arg, const char *key, const void *val, size_t len)
{
	struct keylist *kl = arg;
	char **nk;

	(void)val;
	(void)len;
	if (strncmp(key, kl->prefix, strlen(kl->prefix)) != 0)
		return 0;
	if (kl->n == kl->cap) {
		size_t cap = kl->cap ? kl->cap * 2 : 64;
		if ((nk = realloc(kl->keys, cap * sizeof(*nk))) == NULL)
			return ENOMEM;
		kl->keys = nk;
		kl->cap = cap;
	}
	if ((kl->keys[kl->n] = strdup(key)) == NULL)
		return ENOMEM;
	kl->n++;
	return 0;
}

/* delete every key under prefix */
static int
delete_prefix(struct spirt_txn *txn, const char *prefix)
{
	struct keylist kl;
	size_t i;
	int rc;

	memset(&kl, 0, sizeof(kl));
	kl.prefix = prefix;
	rc = spirt_store_list(txn, prefix, collect, &kl);
	for (i = 0; i < kl.n; i++) {
		if (rc == 0)
			rc = spirt_store_del(txn, kl.keys[i]);
		free(kl.keys[i]);
	}
	free(kl.keys);
	return rc;
}

static int
put(struct spirt_txn *txn, const char *key, struct spirt_tensor *t,
    const void *payload)
{
	return spirt_store_put_tensor(txn, key, t, payload, 0);
}

struct store_arg {
	const char *name;
	const struct spirt_dataset *ds;
	size_t nshards;
	const size_t *counts;
	int64_t *assign;                /* [nshards * SPIRT_AS_COLS] */
};

static int
store_fn(struct spirt_txn *txn, void *arg)
{
	const struct store_arg *a = arg;
	const struct spirt_dataset *ds = a->ds;
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	const unsigned char *x = ds->x;
	size_t row = ds->feat * spirt_dtype_size(ds->xdtype), off = 0, k;
	uint64_t dims[SPIRT_MAXRANK];
	int64_t info[4];
	int rc;

	if ((rc = spirt_key_data_prefix(key, sizeof(key), a->name)) ||
	    (rc = delete_prefix(txn, key)))
		return rc;

	info[0] = (int64_t)a->nshards;
	info[1] = (int64_t)ds->n;
	info[2] = ds->nclasses;
	info[3] = (int64_t)ds->feat;
	dims[0] = 4;
	if ((rc = spirt_key_data_info(key, sizeof(key), a->name)) ||
	    (rc = spirt_tensor_init(&t, SPIRT_I64, 1, dims)) ||
	    (rc = spirt_tensor_set_name(&t, a->name)) ||
	    (rc = put(txn, key, &t, info)))
		return rc;

	memcpy(dims, ds->dims, sizeof(dims));
	for (k = 0; k < a->nshards; k++) {
		dims[0] = a->counts[k];
		if ((rc = spirt_key_data_x(key, sizeof(key), a->name, k)) ||
		    (rc = spirt_tensor_init(&t, ds->xdtype, ds->rank, dims)) ||
		    (rc = spirt_tensor_set_name(&t, a->name)))
			return rc;
		t.samples = a->counts[k];
		if ((rc = put(txn, key, &t, x + off * row)))
			return rc;
		if ((rc = spirt_key_data_y(key, sizeof(key), a->name, k)) ||
		    (rc = spirt_tensor_init(&t, SPIRT_I32, 1, dims)) ||
		    (rc = spirt_tensor_set_name(&t, a->name)))
			return rc;
		t.samples = a->counts[k];
		if ((rc = put(txn, key, &t, ds->y + off)))
			return rc;
		off += a->counts[k];
	}

	if (ds->names) {
		dims[0] = ds->names_len;
		if ((rc = spirt_key_data_classes(key, sizeof(key), a->name)) ||
		    (rc = spirt_tensor_init(&t, SPIRT_U8, 1, dims)) ||
		    (rc = spirt_tensor_set_name(&t, a->name)) ||
		    (rc = put(txn, key, &t, ds->names)))
			return rc;
	}

	if (ds->scale) {
		dims[0] = 2;
		dims[1] = ds->feat;
		if ((rc = spirt_key_data_scale(key, sizeof(key), a->name)) ||
		    (rc = spirt_tensor_init(&t, SPIRT_F32, 2, dims)) ||
		    (rc = spirt_tensor_set_name(&t, ds->scale_from)) ||
		    (rc = put(txn, key, &t, ds->scale)))
			return rc;
	}

	dims[0] = a->nshards;
	dims[1] = SPIRT_AS_COLS;
	if ((rc = spirt_key_data_assign(key, sizeof(key), a->name)) ||
	    (rc = spirt_tensor_init(&t, SPIRT_I64, 2, dims)))
		return rc;
	t.step = 0;
	return put(txn, key, &t, a->assign);
}

int
spirt_data_store(struct spirt_store *s, const char *name,
    const struct spirt_dataset *ds, size_t nshards)
{
	struct store_arg a;
	size_t *counts, k;
	int64_t *assign;
	int rc;

	if (spirt_data_name_check(name) || nshards == 0 || nshards > ds->n ||
	    nshards > SPIRT_DATA_MAXSHARDS)
		return SPIRT_EINVAL;
	counts = calloc(nshards, sizeof(*counts));
	assign = calloc(nshards * SPIRT_AS_COLS, sizeof(*assign));
	if (counts == NULL || assign == NULL) {
		rc = ENOMEM;
		goto out;
	}
	spirt_data_split(counts, ds->n, nshards);
	for (k = 0; k < nshards; k++) {        /* epoch 0, step 0, batch 0 */
		int64_t *r = assign + SPIRT_AS_COLS * k;
		r[SPIRT_AS_WORKER] = (int64_t)k;
		r[SPIRT_AS_SHARD] = (int64_t)k;
		r[SPIRT_AS_COUNT] = (int64_t)counts[k];
	}
	a.name = name;
	a.ds = ds;
	a.nshards = nshards;
	a.counts = counts;
	a.assign = assign;
	rc = spirt_store_write(s, store_fn, &a);
out:
	free(counts);
	free(assign);
	return rc;
}

int
spirt_data_write(int fd, const char *name, const struct spirt_dataset *ds,
    size_t nshards)
{
	struct spirt_tensor t;
	const unsigned char *x = ds->x;
	size_t row = ds->feat * spirt_dtype_size(ds->xdtype), off = 0, k;
	size_t *counts;
	uint64_t dims[SPIRT_MAXRANK];
	int rc = 0;

	if (spirt_data_name_check(name) || nshards == 0 || nshards > ds->n)
		return SPIRT_EINVAL;
	if ((counts = calloc(nshards, sizeof(*counts))) == NULL)
		return ENOMEM;
	spirt_data_split(counts, ds->n, nshards);
	memcpy(dims, ds->dims, sizeof(dims));
	for (k = 0; k < nshards && rc == 0; k++) {
		dims[0] = counts[k];
		if ((rc = spirt_tensor_init(&t, ds->xdtype, ds->rank, dims)) ||
		    (rc = spirt_tensor_set_name(&t, name)))
			break;
		t.samples = counts[k];
		if ((rc = spirt_tensor_write(fd, &t, x + off * row)))
			break;
		if ((rc = spirt_tensor_init(&t, SPIRT_I32, 1, dims)) ||
		    (rc = spirt_tensor_set_name(&t, name)))
			break;
		t.samples = counts[k];
		rc = spirt_tensor_write(fd, &t, ds->y + off);
		off += counts[k];
	}
	free(counts);
	return rc;
}

/* ---- the assignment in the store ---- */

#define C SPIRT_AS_COLS

/* Copy a tensor payload that may be unaligned in the map. */
static int
get_i64(struct spirt_txn *txn, const char *key, struct spirt_tensor *t,
    int64_t **out)
{
	const void *p;
	int rc;

	*out = NULL;
	if ((rc = spirt_store_get_tensor(txn, key, t, &p, 1)))
		return rc;
	if (t->dtype != SPIRT_I64)
		return SPIRT_EDTYPE;
	if ((*out = malloc(t->nbytes ? t->nbytes : 1)) == NULL)
		return ENOMEM;
	memcpy(*out, p, t->nbytes);
	return 0;
}

/* the shard sizes of data set name (info says how many) */
static int
shard_counts(struct spirt_txn *txn, const char *name, int64_t **counts,
    size_t *nshards, uint64_t *nsamples)
{
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	const void *p;
	int64_t *info = NULL, *c = NULL;
	size_t k;
	int rc;

	*counts = NULL;
	if ((rc = spirt_key_data_info(key, sizeof(key), name)) ||
	    (rc = get_i64(txn, key, &t, &info)))
		goto out;
	if (t.nelem != 4 || info[0] < 1 || info[0] > SPIRT_DATA_MAXSHARDS ||
	    info[1] < info[0]) {
		rc = SPIRT_EDATA;
		goto out;
	}
	if ((c = malloc((size_t)info[0] * sizeof(*c))) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	for (k = 0; k < (size_t)info[0]; k++) {
		if ((rc = spirt_key_data_y(key, sizeof(key), name, k)) ||
		    (rc = spirt_store_get_tensor(txn, key, &t, &p, 0))) {
			if (rc == SPIRT_ENOTFOUND)      /* info says it is */
				rc = SPIRT_EDATA;
			goto out;
		}
		if (t.rank != 1) {
			rc = SPIRT_ESHAPE;
			goto out;
		}
		c[k] = (int64_t)t.dims[0];
	}
	*nshards = (size_t)info[0];
	*nsamples = (uint64_t)info[1];
	*counts = c;
	c = NULL;
out:
	free(info);
	free(c);
	return rc;
}

struct reassign_arg {
	const char *name;
	struct spirt_reassign *r;
};

/* SPIRT_EINVAL, r->msg: cur's rest part counts in another batch than r's */
static int
otherbatch(struct spirt_reassign *r, const struct spirt_assign *cur)
{
	return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_EINVAL, "revision "
	    "%llu counts epoch %llu from step %llu in batches of %llu, not "
	    "%llu", (unsigned long long)cur->revision,
	    (unsigned long long)cur->rest_epoch,
	    (unsigned long long)cur->rest_step,
	    (unsigned long long)cur->rest_batch,
	    (unsigned long long)r->batch);
}

/*
 * The conditions spirt_assign_next() refuses, with a message in r->msg:
 * the live set (r's, else live[]), where it takes effect.
 */
static int
reassign_why(struct spirt_reassign *r, const struct spirt_assign *cur,
    size_t nshards, const int64_t *live, size_t nlive)
{
	const int64_t *l = r->live ? r->live : live;
	size_t n = r->live ? r->nlive : nlive, i, first, np;
	uint64_t j0;
	int rc;

	if (n == 0)
		return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_EINVAL,
		    "no live worker would remain");
	for (i = 0; i < n; i++)
		if (l[i] < 0 || (uint64_t)l[i] >= nshards)
			return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_EINVAL,
			    "worker %lld has no shard: %zu shards",
			    (long long)l[i], nshards);
	if (r->at_step == 0) {
		if (r->at_epoch < cur->epoch)
			return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_ESTEP,
			    "epoch %llu comes before revision %llu (from "
			    "epoch %llu)", (unsigned long long)r->at_epoch,
			    (unsigned long long)cur->revision,
			    (unsigned long long)(cur->nrest ? cur->rest_epoch :
			    cur->epoch));
		return 0;
	}
	rc = spirt_assign_part(cur, r->at_epoch, r->at_step, r->batch, &first,
	    &np, &j0);
	if (rc == SPIRT_EINVAL)
		return otherbatch(r, cur);
	if (rc == SPIRT_ESTEP)
		return spirt_msgf(r->msg, sizeof(r->msg), rc, "step %llu "
		    "(epoch %llu step %llu) comes before revision %llu",
		    (unsigned long long)r->step,
		    (unsigned long long)r->at_epoch,
		    (unsigned long long)r->at_step,
		    (unsigned long long)cur->revision);
	if (rc)
		return rc;
	if (r->at_since < j0)
		return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_ESTEP, "step "
		    "%llu (--since) comes before revision %llu (from step "
		    "%llu of epoch %llu)", (unsigned long long)r->since,
		    (unsigned long long)cur->revision,
		    (unsigned long long)j0, (unsigned long long)r->at_epoch);
	/* a live worker that holds a list takes any tail; without one,
	 * each holder that is gone needs a live worker of its group (one
	 * that returned takes it, spirt_assign_next) */
	for (i = first; i < first + np; i++) {
		int64_t w = cur->rows[SPIRT_AS_COLS * i + SPIRT_AS_WORKER];
		size_t k;

		for (k = 0; k < n; k++)
			if (l[k] == w)
				return 0;
	}
	for (i = first; i < first + np; i++) {
		uint64_t g = r->group ? r->group : UINT64_MAX, w = (uint64_t)
		    cur->rows[SPIRT_AS_COLS * i + SPIRT_AS_WORKER];
		size_t k;

		for (k = 0; k < n && (uint64_t)l[k] / g != w / g; k++)
			;
		if (k == n)
			return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_EINVAL,
			    "no live worker would remain in epoch %llu",
			    (unsigned long long)r->at_epoch);
	}
	return 0;
}

/* whether a holds at step j of epoch (batch): its part in force there
 * begins at or before it; 0, SPIRT_ESTEP, SPIRT_EINVAL (another batch) */
static int
holds_at(const struct spirt_assign *a, const struct spirt_reassign *r)
{
	size_t first, n;
	uint64_t j0;

	return spirt_assign_part(a, r->at_epoch, r->at_step, r->batch, &first,
	    &n, &j0);
}

/*
 * SPIRT_RA_REDO: the rows to write (*out, *nout rows, malloc'ed) for r's
 * step done again: those of the newest kept revision that holds there,
 * checked against the shards; SPIRT_EDONE when cur does.
 */
static int
redo_rows(struct spirt_txn *txn, const char *name, struct spirt_reassign *r,
    const struct spirt_assign *cur, const int64_t *counts, size_t nshards,
    int64_t **out, size_t *nout)
{
	char key[SPIRT_KEY_MAX + 1];
	uint64_t rev;
	int rc = holds_at(cur, r);

	if (rc == 0) {
		r->from_revision = cur->revision;
		return SPIRT_EDONE;
	}
	if (rc != SPIRT_ESTEP)
		return otherbatch(r, cur);
	for (rev = cur->revision; rev-- > 0 &&
	    cur->revision - rev <= SPIRT_ASSIGN_KEEP;) {
		struct spirt_assign a;
		struct spirt_tensor t;
		const void *p;

		if ((rc = spirt_key_data_assign_rev(key, sizeof(key), name,
		    rev)))
			return rc;
		rc = spirt_store_get_tensor(txn, key, &t, &p, 1);
		if (rc == SPIRT_ENOTFOUND)
			continue;
		if (rc || (rc = spirt_assign_parse(&a, &t, p)))
			return rc;
		if (a.revision != rev ||
		    spirt_assign_check(&a, counts, nshards)) {
			spirt_assign_free(&a);
			return SPIRT_EDATA;
		}
		if (holds_at(&a, r) == 0) {
			r->from_revision = rev;
			*out = a.rows;
			*nout = a.nrows;
			return 0;
		}
		spirt_assign_free(&a);
	}
	return spirt_msgf(r->msg, sizeof(r->msg), SPIRT_ESTEP, "no kept "
	    "revision holds at step %llu (epoch %llu step %llu): revision "
	    "%llu begins after it", (unsigned long long)r->step,
	    (unsigned long long)r->at_epoch, (unsigned long long)r->at_step,
	    (unsigned long long)cur->revision);
}

/* cur kept as data/<name>/assign/<its revision>; the one
 * SPIRT_ASSIGN_KEEP before it goes */
static int
keep_revision(struct spirt_txn *txn, const char *name,
    const struct spirt_assign *cur)
{
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	uint64_t dims[2] = { cur->nrows, C };
	int rc;

	if ((rc = spirt_key_data_assign_rev(key, sizeof(key), name,
	    cur->revision)) ||
	    (rc = spirt_tensor_init(&t, SPIRT_I64, 2, dims)))
		return rc;
	t.step = cur->revision;
	if ((rc = put(txn, key, &t, cur->rows)) ||
	    cur->revision < SPIRT_ASSIGN_KEEP)
		return rc;
	if ((rc = spirt_key_data_assign_rev(key, sizeof(key), name,
	    cur->revision - SPIRT_ASSIGN_KEEP)))
		return rc;
	rc = spirt_store_del(txn, key);
	return rc == SPIRT_ENOTFOUND ? 0 : rc;
}

static int
reassign_fn(struct spirt_txn *txn, void *arg)
{
	struct reassign_arg *ra = arg;
	struct spirt_reassign *r = ra->r;
	struct spirt_assign cur;
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	int64_t *counts = NULL, *o = NULL, *live = NULL;
	size_t nshards = 0, no, nlive = 0, i;
	uint64_t nsamples = 0, S = 0, dims[2];
	int rc;

	memset(&cur, 0, sizeof(cur));
	r->msg[0] = '\0';
	if ((rc = spirt_data_assign_get(&cur, txn, ra->name)) ||
	    (rc = shard_counts(txn, ra->name, &counts, &nshards, &nsamples)))
		goto out;
	if (r->live == NULL && r->when != SPIRT_RA_REDO) {
		/* the workers of the current full part, less the dead */
		int any = 0;
		if ((live = malloc((cur.nrows + 1) * sizeof(*live))) == NULL) {
			rc = ENOMEM;
			goto out;
		}
		for (i = cur.nrest; i < cur.nrows; i++) {
			int64_t w = cur.rows[C * i + SPIRT_AS_WORKER];
			size_t d;

			for (d = 0; d < r->ndead && r->dead[d] != w; d++)
				;
			if (d < r->ndead) {
				any = 1;
				continue;
			}
			if (nlive == 0 || live[nlive - 1] != w)
				live[nlive++] = w;
		}
		if (!any) {
			rc = SPIRT_EDONE;
			goto out;
		}
	}
	r->at_step = r->at_since = 0;
	switch (r->when) {
	case SPIRT_RA_EPOCH:
		r->at_epoch = r->epoch;
		break;
	case SPIRT_RA_STEP:
	case SPIRT_RA_REDO:
		S = spirt_epoch_steps(nsamples, nshards, r->batch);
		if (S == 0 || S > UINT32_MAX) {
			rc = spirt_msgf(r->msg, sizeof(r->msg), SPIRT_EINVAL,
			    "batch %llu: no whole epoch",
			    (unsigned long long)r->batch);
			goto out;
		}
		r->at_epoch = r->step / S;
		r->at_step = r->step % S;
		r->at_since = r->at_step;
		if (r->has_since && (r->since > r->step ||
		    r->since / S != r->at_epoch)) {
			rc = spirt_msgf(r->msg, sizeof(r->msg), SPIRT_EINVAL,
			    "step %llu is not in step %llu's epoch %llu up to "
			    "it", (unsigned long long)r->since,
			    (unsigned long long)r->step,
			    (unsigned long long)r->at_epoch);
			goto out;
		}
		if (r->has_since)
			r->at_since = r->since % S;
		break;
	default:
		r->at_epoch = cur.epoch;
		break;
	}
	if (r->when == SPIRT_RA_REDO) {
		if ((rc = redo_rows(txn, ra->name, r, &cur, counts, nshards,
		    &o, &no)))
			goto out;
	} else if ((rc = reassign_why(r, &cur, nshards, live, nlive)) ||
	    (rc = spirt_assign_next_since(&o, &no, &cur, counts, nshards,
	    r->group, r->live ? r->live : live, r->live ? r->nlive : nlive,
	    r->at_epoch, r->at_step, r->at_since, S ? S : 1,
	    r->batch ? r->batch : 1)))
		goto out;
	if ((rc = keep_revision(txn, ra->name, &cur)))
		goto out;
	r->revision = cur.revision + 1;
	dims[0] = no;
	dims[1] = C;
	if ((rc = spirt_key_data_assign(key, sizeof(key), ra->name)) ||
	    (rc = spirt_tensor_init(&t, SPIRT_I64, 2, dims)))
		goto out;
	t.step = r->revision;
	rc = put(txn, key, &t, o);
out:
	spirt_assign_free(&cur);
	free(counts);
	free(o);
	free(live);
	return rc;
}

int
spirt_data_reassign(struct spirt_store *s, const char *name,
    struct spirt_reassign *r)
{
	struct reassign_arg a = { name, r };

	if (spirt_data_name_check(name))
		return SPIRT_EINVAL;
	r->revision = 0;
	return spirt_store_write(s, reassign_fn, &a);
}

#undef C

/* ---- stats ---- */

void
spirt_data_stats_free(struct spirt_data_stats *st)
{
	free(st->counts);
	free(st->hist);
	spirt_assign_free(&st->as);
	memset(st, 0, sizeof(*st));
}

static int
stats_shard(struct spirt_data_stats *st, struct spirt_txn *txn,
    const char *name, int64_t k)
{
	struct spirt_tensor tx, ty;
	const void *px, *py;
	const unsigned char *y;
	char key[SPIRT_KEY_MAX + 1];
	int64_t *h = st->hist + k * st->nclasses;
	uint64_t i;
	int rc;

	if ((rc = spirt_key_data_x(key, sizeof(key), name, (uint64_t)k)) ||
	    (rc = spirt_store_get_tensor(txn, key, &tx, &px, 1)))
		return rc;
	if ((rc = spirt_key_data_y(key, sizeof(key), name, (uint64_t)k)) ||
	    (rc = spirt_store_get_tensor(txn, key, &ty, &py, 1)))
		return rc;
	if (ty.dtype != SPIRT_I32 || (tx.dtype != SPIRT_U8 &&
	    tx.dtype != SPIRT_F32))
		return SPIRT_EDTYPE;
	if (ty.rank != 1 || tx.rank < 2 || tx.dims[0] != ty.dims[0] ||
	    tx.nelem / (tx.dims[0] ? tx.dims[0] : 1) != (uint64_t)st->features)
		return SPIRT_ESHAPE;
	if (k == 0) {
		st->xdtype = tx.dtype;
		st->xrank = tx.rank;
		memcpy(st->xdims, tx.dims, sizeof(st->xdims));
	} else if (tx.dtype != st->xdtype || tx.rank != st->xrank ||
	    memcmp(tx.dims + 1, st->xdims + 1,
	    (tx.rank - 1) * sizeof(uint64_t)))
		return SPIRT_ESHAPE;
	st->counts[k] = (int64_t)ty.dims[0];
	y = py;
	for (i = 0; i < ty.dims[0]; i++) {
		int32_t v;
		memcpy(&v, y + 4 * i, 4);
		if (v < 0 || v >= st->nclasses)
			return SPIRT_EDATA;
		h[v]++;
	}
	return 0;
}

int
spirt_data_stats(struct spirt_data_stats *st, struct spirt_store *s,
    const char *name)
{
	struct spirt_txn *txn;
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	int64_t *info = NULL, k, cap = 0, sum = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	if (spirt_data_name_check(name))
		return SPIRT_EINVAL;
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_key_data_info(key, sizeof(key), name)) ||
	    (rc = get_i64(txn, key, &t, &info)))
		goto out;
	if (t.nelem != 4 || info[0] < 1 || info[0] > SPIRT_DATA_MAXSHARDS ||
	    info[1] < info[0] || info[2] < 1 ||
	    info[2] > SPIRT_DATA_MAXCLASSES || info[3] < 1) {
		rc = SPIRT_EDATA;
		goto out;
	}
	st->nshards = info[0];
	st->nsamples = info[1];
	st->nclasses = info[2];
	st->features = info[3];
	/* grow with the shards found, not with the count info claims */
	for (k = 0; k < st->nshards; k++) {
		if (k == cap) {
			int64_t *nc, *nh;
			cap = cap ? 2 * cap : 1;
			if (cap > st->nshards)
				cap = st->nshards;
			if ((nc = realloc(st->counts, (size_t)cap *
			    sizeof(int64_t))) != NULL)
				st->counts = nc;
			if (nc == NULL || (nh = realloc(st->hist, (size_t)
			    (cap * st->nclasses) * sizeof(int64_t))) == NULL) {
				rc = ENOMEM;
				goto out;
			}
			st->hist = nh;
			memset(nh + k * st->nclasses, 0, (size_t)((cap - k) *
			    st->nclasses) * sizeof(int64_t));
		}
		if ((rc = stats_shard(st, txn, name, k))) {
			if (rc == SPIRT_ENOTFOUND)      /* info says it is */
				rc = SPIRT_EDATA;
			goto out;
		}
		sum += st->counts[k];
	}
	if (sum != st->nsamples) {
		rc = SPIRT_EDATA;
		goto out;
	}
	if ((rc = spirt_data_assign_get(&st->as, txn, name)))
		goto out;
	/* every part reads shards there are, and the full one each of
	 * their samples once */
	rc = spirt_assign_check(&st->as, st->counts, (size_t)st->nshards);
out:
	spirt_txn_abort(txn);
	free(info);
	if (rc)
		spirt_data_stats_free(st);
	return rc;
}
