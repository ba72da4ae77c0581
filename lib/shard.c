/* shard.c - data sets in the store: shuffle, shards, assignment, rebalance */
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
	int64_t *assign;                /* [nshards * 4] */
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
	dims[1] = 4;
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
	assign = calloc(nshards * 4, sizeof(*assign));
	if (counts == NULL || assign == NULL) {
		rc = ENOMEM;
		goto out;
	}
	spirt_data_split(counts, ds->n, nshards);
	for (k = 0; k < nshards; k++) {
		assign[4 * k] = (int64_t)k;
		assign[4 * k + 1] = (int64_t)k;
		assign[4 * k + 2] = 0;
		assign[4 * k + 3] = (int64_t)counts[k];
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

/* ---- assignment ---- */

static int
rowcmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	int i;

	for (i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static int
i64cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
isdead(int64_t w, const int64_t *dead, size_t ndead)
{
	size_t i;

	for (i = 0; i < ndead; i++)
		if (dead[i] == w)
			return 1;
	return 0;
}

int
spirt_assign_rebalance(int64_t **out, size_t *nout, const int64_t *rows,
    size_t nrows, const int64_t *dead, size_t ndead)
{
	int64_t *live = NULL, *o = NULL;
	size_t nlive = 0, nd = 0, no = 0, i, j, rot = 0, cap;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	for (i = 0; i < nrows; i++) {
		const int64_t *r = rows + 4 * i;
		if (r[0] < 0 || r[1] < 0 || r[2] < 0 || r[3] < 0)
			return SPIRT_EDATA;
		nd += isdead(r[0], dead, ndead);
	}
	if (nd == 0)
		return SPIRT_EDONE;
	if ((live = malloc((nrows ? nrows : 1) * sizeof(*live))) == NULL)
		return ENOMEM;
	for (i = 0; i < nrows; i++)
		if (!isdead(rows[4 * i], dead, ndead))
			live[nlive++] = rows[4 * i];
	qsort(live, nlive, sizeof(*live), i64cmp);
	for (i = j = 0; i < nlive; i++)
		if (j == 0 || live[j - 1] != live[i])
			live[j++] = live[i];
	nlive = j;
	if (nlive == 0) {
		rc = SPIRT_EINVAL;
		goto out;
	}
	/* live rows stay; a dead row of count c becomes min(c, nlive)
	 * pieces: room for what is written, not for nd * nlive rows */
	for (i = 0, cap = nrows - nd; i < nrows; i++)
		if (isdead(rows[4 * i], dead, ndead)) {
			uint64_t c = (uint64_t)rows[4 * i + 3];
			cap += c < nlive ? (size_t)c : nlive;
			if (cap > SIZE_MAX / 32) {
				rc = ENOMEM;
				goto out;
			}
		}
	if ((o = malloc((cap ? cap : 1) * 4 * sizeof(*o))) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	for (i = 0; i < nrows; i++) {
		const int64_t *r = rows + 4 * i;
		int64_t base, rem, start;

		if (!isdead(r[0], dead, ndead)) {
			memcpy(o + 4 * no++, r, 4 * sizeof(*o));
			continue;
		}
		base = r[3] / (int64_t)nlive;
		rem = r[3] % (int64_t)nlive;
		start = r[2];
		for (j = 0; j < nlive; j++) {
			int64_t c = base + ((int64_t)j < rem);
			if (c == 0)
				continue;
			o[4 * no] = live[(rot + j) % nlive];
			o[4 * no + 1] = r[1];
			o[4 * no + 2] = start;
			o[4 * no + 3] = c;
			no++;
			start += c;
		}
		rot = (rot + (size_t)rem) % nlive;
	}
	qsort(o, no, 4 * sizeof(*o), rowcmp);
	for (i = j = 0; i < no; i++) {
		int64_t *p = o + 4 * (j - 1), *r = o + 4 * i;
		if (j > 0 && p[0] == r[0] && p[1] == r[1] &&
		    p[2] + p[3] == r[2])
			p[3] += r[3];
		else
			memmove(o + 4 * j++, r, 4 * sizeof(*o));
	}
	*out = o;
	*nout = j;
	o = NULL;
out:
	free(live);
	free(o);
	return rc;
}

struct rebal_arg {
	const char *name;
	const int64_t *dead;
	size_t ndead;
	uint64_t revision;
};

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

static int
rebal_fn(struct spirt_txn *txn, void *arg)
{
	struct rebal_arg *a = arg;
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	int64_t *rows = NULL, *o = NULL;
	size_t no;
	uint64_t dims[2];
	int rc;

	if ((rc = spirt_key_data_assign(key, sizeof(key), a->name)) ||
	    (rc = get_i64(txn, key, &t, &rows)))
		goto out;
	if (t.rank != 2 || t.dims[1] != 4) {
		rc = SPIRT_ESHAPE;
		goto out;
	}
	a->revision = (t.step == SPIRT_NOSTEP ? 0 : t.step) + 1;
	if ((rc = spirt_assign_rebalance(&o, &no, rows, (size_t)t.dims[0],
	    a->dead, a->ndead)))
		goto out;
	dims[0] = no;
	dims[1] = 4;
	if ((rc = spirt_tensor_init(&t, SPIRT_I64, 2, dims)))
		goto out;
	t.step = a->revision;
	rc = put(txn, key, &t, o);
out:
	free(rows);
	free(o);
	return rc;
}

int
spirt_data_rebalance(struct spirt_store *s, const char *name,
    const int64_t *dead, size_t ndead, uint64_t *revision)
{
	struct rebal_arg a;
	int rc;

	if (spirt_data_name_check(name))
		return SPIRT_EINVAL;
	a.name = name;
	a.dead = dead;
	a.ndead = ndead;
	a.revision = 0;
	rc = spirt_store_write(s, rebal_fn, &a);
	*revision = a.revision;
	return rc;
}

/* ---- stats ---- */

void
spirt_data_stats_free(struct spirt_data_stats *st)
{
	free(st->counts);
	free(st->hist);
	free(st->assign);
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
	if ((rc = spirt_key_data_assign(key, sizeof(key), name)) ||
	    (rc = get_i64(txn, key, &t, &st->assign)))
		goto out;
	if (t.rank != 2 || t.dims[1] != 4) {
		rc = SPIRT_ESHAPE;
		goto out;
	}
	st->nassign = (size_t)t.dims[0];
	st->revision = t.step == SPIRT_NOSTEP ? 0 : t.step;
out:
	spirt_txn_abort(txn);
	free(info);
	if (rc)
		spirt_data_stats_free(st);
	return rc;
}
