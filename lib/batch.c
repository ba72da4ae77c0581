/* batch.c - the minibatch of (step, worker) from a data set in the store */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* XXH3_state_t's layout, for a state on the caller's stack */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
/* XXH3 with the widest vectors the CPU has, chosen at run time */
#include <xxh_x86dispatch.h>
#endif

#include "batch.h"
#include "data.h"
#include "keys.h"
#include "model.h"
#include "rng.h"

void
spirt_perm_fill(uint32_t *perm, uint64_t n, uint64_t seed, uint32_t k,
    uint64_t epoch)
{
	struct spirt_sm64 r;
	uint64_t i, j;
	uint32_t tmp;

	if (n == 0)
		return;
	for (i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	spirt_sm64_seed(&r, spirt_seed_mix(seed, k, epoch));
	for (i = n - 1; i > 0; i--) {
		j = spirt_sm64_below(&r, i + 1);
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
}

void
spirt_batch_free(struct spirt_batch *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->nso; i++)
		free(b->so[i].p);
	free(b->so);
	for (size_t i = 0; i < b->nsum; i++)
		free(b->sum[i].h);
	free(b->sum);
	free(b->s);
	free(b->row);
	memset(b, 0, sizeof *b);
}

/*
 * Shard's order of epoch: the permutation of its n samples seeded from
 * (seed, shard, epoch), cached while the rows use it.
 */
static int
shard_order(struct spirt_batch *b, uint64_t seed, uint64_t shard,
    uint64_t epoch, uint64_t n, const uint32_t **p)
{
	struct spirt_border *o = NULL;
	size_t i;

	for (i = 0; i < b->nso; i++)
		if (b->so[i].key[0] == seed && b->so[i].key[1] == shard &&
		    b->so[i].key[2] == epoch && b->so[i].key[3] == n) {
			b->so[i].used = 1;
			*p = b->so[i].p;
			return 0;
		}
	if (n == 0 || n > UINT32_MAX)
		return SPIRT_EINVAL;
	/* reuse a slot no row of this call uses, else add one */
	for (i = 0; i < b->nso && o == NULL; i++)
		if (!b->so[i].used)
			o = &b->so[i];
	if (o == NULL) {
		if (b->nso == b->socap) {
			size_t cap = b->socap ? 2 * b->socap : 4;
			struct spirt_border *ns = realloc(b->so,
			    cap * sizeof *ns);
			if (ns == NULL)
				return ENOMEM;
			b->so = ns;
			b->socap = cap;
		}
		o = &b->so[b->nso++];
		o->p = NULL;
	}
	free(o->p);
	o->used = 0;
	o->key[0] = o->key[1] = o->key[2] = o->key[3] = UINT64_MAX;
	if ((o->p = malloc(n * sizeof *o->p)) == NULL)
		return ENOMEM;
	/* the shard's number in the worker's place: a worker that reads its
	 * own whole shard k = w sees what the per-worker rule gave it */
	spirt_perm_fill(o->p, n, seed, (uint32_t)shard, epoch);
	o->key[0] = seed;
	o->key[1] = shard;
	o->key[2] = epoch;
	o->key[3] = n;
	o->used = 1;
	*p = o->p;
	return 0;
}

/* room for n samples in b */
static int
sample_room(struct spirt_batch *b, size_t n)
{
	struct spirt_sample *ns;
	size_t *nr;

	if (n <= b->cap)
		return 0;
	if ((ns = realloc(b->s, n * sizeof *ns)) == NULL)
		return ENOMEM;
	b->s = ns;
	if ((nr = realloc(b->row, n * sizeof *nr)) == NULL)
		return ENOMEM;
	b->row = nr;
	b->cap = n;
	return 0;
}

#define msg(b, rc, ...) spirt_msgf((b)->msg, sizeof (b)->msg, (rc), \
	__VA_ARGS__)

/* the samples of the step's positions sel->lo .. hi-1 of the list */
static int
fill(struct spirt_batch *b, const struct spirt_assign_sel *sel,
    const uint32_t **order)
{
	uint64_t pos = sel->lo, skip = 0;
	size_t r = 0, i;
	int rc;

	if ((rc = sample_room(b, (size_t)(sel->hi - sel->lo))) != 0)
		return rc;
	for (i = 0; pos < sel->hi; i++, pos++) {
		const int64_t *row;

		/* the row holding list position pos */
		while (pos - skip >= (uint64_t)sel->rows[SPIRT_AS_COLS * r +
		    SPIRT_AS_COUNT]) {
			skip += (uint64_t)sel->rows[SPIRT_AS_COLS * r +
			    SPIRT_AS_COUNT];
			r++;
		}
		row = sel->rows + SPIRT_AS_COLS * r;
		b->s[i].shard = (uint64_t)row[SPIRT_AS_SHARD];
		b->s[i].index = order[r][(uint64_t)row[SPIRT_AS_START] +
		    pos - skip];
		b->row[i] = r;
	}
	b->n = i;
	return 0;
}

int
spirt_batch_select(struct spirt_batch *b, struct spirt_txn *txn,
    const char *ds, uint64_t nshards, uint64_t nsamples, uint64_t worker,
    uint64_t step, uint64_t batch, uint64_t seed, spirt_batch_shard_fn *shard,
    void *arg)
{
	struct spirt_assign a;
	struct spirt_assign_sel sel;
	const uint32_t **order = NULL;
	char key[SPIRT_KEY_MAX + 1];
	uint64_t S, n, i;
	int rc;

	b->msg[0] = '\0';
	b->n = b->nrows = 0;
	b->revision = SPIRT_NOREVISION;
	for (i = 0; i < b->nso; i++)
		b->so[i].used = 0;
	if (batch == 0)
		return SPIRT_EINVAL;
	if ((rc = spirt_key_data_assign(key, sizeof key, ds)) != 0)
		return msg(b, rc, "data set name \"%s\"", ds);
	if ((rc = spirt_data_assign_get(&a, txn, ds)) != 0)
		return rc == SPIRT_EDATA || rc == SPIRT_ESHAPE ||
		    rc == SPIRT_EDTYPE ? msg(b, rc, "%s: not an assignment "
		    "(spirt-shard(1))", key) : msg(b, rc, "%s", key);
	S = spirt_epoch_steps(nsamples, nshards, batch);
	rc = spirt_assign_select(&sel, &a, worker, step, S, batch);
	b->revision = a.revision;
	b->epoch = sel.epoch;
	b->S = S;
	if (rc == SPIRT_ESTEP)
		rc = msg(b, rc, "%s: step %" PRIu64 " (epoch %" PRIu64
		    " step %" PRIu64 ") comes before revision %" PRIu64
		    " (from epoch %" PRIu64 " step %" PRIu64 ")", key, step,
		    sel.epoch, S ? step % S : 0, a.revision, a.nrest ?
		    a.rest_epoch : a.epoch, a.nrest ? a.rest_step : 0);
	else if (rc == SPIRT_EINVAL)
		rc = msg(b, rc, "%s: revision %" PRIu64 " counts epoch %"
		    PRIu64 " from step %" PRIu64 " in batches of %" PRIu64
		    ", not %" PRIu64, key, a.revision, a.rest_epoch,
		    a.rest_step, a.rest_batch, batch);
	else if (rc == SPIRT_ENOTFOUND)
		rc = msg(b, rc, "%s: no samples for worker %" PRIu64 " at "
		    "step %" PRIu64 " (revision %" PRIu64 ")", key, worker,
		    step, a.revision);
	if (rc != 0)
		goto out;
	if ((order = calloc(sel.nrows ? sel.nrows : 1, sizeof *order)) ==
	    NULL) {
		rc = ENOMEM;
		goto out;
	}
	for (i = 0; i < sel.nrows; i++) {
		const int64_t *row = sel.rows + SPIRT_AS_COLS * i;
		uint64_t k = (uint64_t)row[SPIRT_AS_SHARD];
		uint64_t start = (uint64_t)row[SPIRT_AS_START];
		uint64_t count = (uint64_t)row[SPIRT_AS_COUNT];

		if (k >= nshards) {
			rc = msg(b, SPIRT_EDATA, "%s: worker %" PRIu64
			    ": shard %" PRIu64 " of %" PRIu64, key, worker, k,
			    nshards);
			goto out;
		}
		if ((rc = shard(arg, (size_t)i, k, &n)) != 0)
			goto out;
		if (start > n || count > n - start) {
			rc = msg(b, SPIRT_EDATA, "%s: worker %" PRIu64 ": "
			    "positions %" PRIu64 "..%" PRIu64 " outside shard %"
			    PRIu64 " of %" PRIu64, key, worker, start,
			    start + count, k, n);
			goto out;
		}
		if ((rc = shard_order(b, seed, k, sel.epoch, n,
		    &order[i])) != 0)
			goto out;
	}
	b->nrows = sel.nrows;
	rc = fill(b, &sel, order);
out:
	free(order);
	spirt_assign_free(&a);
	return rc;
}

/* ---- the values: spirt_batch_read ---- */

/*
 * A long-lived reader (b->keep: spirt-store pipe, a warm function's store)
 * would hash each shard whole at each request to serve a few of its
 * samples: 0.3 ms of a batch's 0.31 for Fashion-MNIST's 11.7 MB shards.
 * So it verifies a shard record's payload checksum whole the first time
 * it reads it, hashing each block (BLOCK bytes or one sample, whole
 * samples) in the same pass, and from then on checks only the blocks
 * holding the samples a minibatch takes against those hashes, before
 * their bytes are copied.  Every byte served is thus a byte that passed
 * the record's whole checksum, whatever happened to the store since: a
 * byte changed in place (the file written behind LMDB's back, a bad disk)
 * is refused when a batch would serve it, SPIRT_ECHECKSUM as before, and
 * bytes no batch serves need no check.  Why keeping them is safe: the
 * hashes are found by the key and the record as it lies in the map (its
 * address, length, header checksum and trailer), and a record LMDB holds
 * does not change under it: LMDB writes copy-on-write, never over the
 * pages of a committed record, so a put is a new record, verified again,
 * unless it lands on reused pages with the same length, header and
 * payload checksum; even a record matched by mistake only has its served
 * bytes compared with hashes of bytes that passed a whole checksum, which
 * refuses what differs and can pass nothing else.  The header checksum
 * is checked at each read, as without keep.
 */
#define BLOCK 512               /* a block's bytes at least */
#define KEEP 64                 /* records kept, unless a call uses more */

/* block j of payload pl: its first byte, its bytes in *n */
static const unsigned char *
block(const struct spirt_bsum *e, const struct spirt_tensor *t,
    const void *pl, size_t j, size_t rowbytes, size_t *n)
{
	size_t off = j * e->rows * rowbytes;

	*n = e->rows * rowbytes;
	if (*n > t->nbytes - off)
		*n = (size_t)t->nbytes - off;
	return (const unsigned char *)pl + off;
}

/* a sample's bytes in a record: its first dimension's */
static size_t
row_bytes(const struct spirt_tensor *t)
{
	return t->rank && t->dims[0] ? (size_t)(t->nbytes / t->dims[0]) :
	    (size_t)t->nbytes;
}

/*
 * An entry for key's record: its former record's (rewritten since), else
 * the least recently used one no row of this call uses once KEEP are
 * kept, else a new one.
 */
static struct spirt_bsum *
sum_slot(struct spirt_batch *b, const char *key)
{
	struct spirt_bsum *e = NULL, *ns;

	for (size_t i = 0; i < b->nsum; i++)
		if (b->sum[i].used != b->tick && strcmp(b->sum[i].key,
		    key) == 0)
			return &b->sum[i];
	for (size_t i = 0; i < b->nsum; i++)
		if (b->sum[i].used != b->tick && (e == NULL ||
		    b->sum[i].used < e->used))
			e = &b->sum[i];
	if (e != NULL && b->nsum >= KEEP)
		return e;
	if ((ns = realloc(b->sum, (b->nsum + 1) * sizeof *ns)) == NULL)
		return NULL;
	b->sum = ns;
	e = &b->sum[b->nsum++];
	memset(e, 0, sizeof *e);
	return e;
}

/*
 * Record key from txn into *t and *pl, its payload checksum verified
 * whole, or (b->keep) once while its blocks' hashes are kept: then *e is
 * the entry's index, the hashes to check its samples against.
 */
static int
get_shard(struct spirt_batch *b, struct spirt_txn *txn, const char *key,
    struct spirt_tensor *t, const void **pl, size_t *e)
{
	struct spirt_tensor_sum s;
	struct spirt_bsum *m;
	const unsigned char *tr;
	unsigned char sum[SPIRT_TENSOR_TRAILER];
	const void *rec;
	size_t len, i, rowbytes;
	int rc;

	*e = SIZE_MAX;
	if (!b->keep)
		return spirt_store_get_tensor(txn, key, t, pl, 1);
	if ((rc = spirt_store_get(txn, key, &rec, &len)) ||
	    (rc = spirt_tensor_decode(t, pl, rec, len, 0)))
		return rc;
	tr = (const unsigned char *)*pl + t->nbytes;
	for (i = 0; i < b->nsum; i++) {
		m = &b->sum[i];
		if (m->rec == rec && m->len == len && m->hsum == t->hsum &&
		    memcmp(m->tr, tr, sizeof m->tr) == 0 &&
		    strcmp(m->key, key) == 0) {
			m->used = b->tick;
			*e = i;
			return 0;
		}
	}
	if ((m = sum_slot(b, key)) == NULL)
		return ENOMEM;
	free(m->h);
	m->h = NULL;
	m->rec = NULL;          /* no match until it is verified */
	m->key[0] = '\0';
	m->used = 0;
	rowbytes = row_bytes(t);
	m->rows = rowbytes >= BLOCK || rowbytes == 0 ? 1 :
	    (BLOCK + rowbytes - 1) / rowbytes;
	m->nh = rowbytes ? (size_t)((t->nbytes + m->rows * rowbytes - 1) /
	    (m->rows * rowbytes)) : 0;
	if ((m->h = malloc((m->nh ? m->nh : 1) * sizeof *m->h)) == NULL)
		return ENOMEM;
	/* one pass: each block hashed, then added to the whole checksum
	 * while in cache; a byte changed between the two reads fails it */
	spirt_tensor_sum_init(&s, t);
	for (i = 0; i < m->nh; i++) {
		size_t n;
		const unsigned char *p = block(m, t, *pl, i, rowbytes, &n);

		m->h[i] = XXH3_64bits(p, n);
		spirt_tensor_sum_add(&s, p, n);
	}
	spirt_tensor_sum_trailer(sum, &s);
	if (memcmp(sum, tr, sizeof sum) != 0)
		return SPIRT_ECHECKSUM;
	snprintf(m->key, sizeof m->key, "%s", key);
	m->rec = rec;
	m->len = len;
	m->hsum = t->hsum;
	memcpy(m->tr, tr, sizeof m->tr);
	m->used = b->tick;
	*e = (size_t)(m - b->sum);
	return 0;
}

/* sample index of a record whose hashes entry e keeps: 0 or ECHECKSUM */
static int
check_sample(const struct spirt_batch *b, size_t e,
    const struct spirt_tensor *t, const void *pl, uint64_t index)
{
	const struct spirt_bsum *m;
	const unsigned char *p;
	size_t j, n;

	if (e == SIZE_MAX)
		return 0;
	m = &b->sum[e];
	j = (size_t)(index / m->rows);
	if (j >= m->nh)
		return SPIRT_ECHECKSUM;
	p = block(m, t, pl, j, row_bytes(t), &n);
	return XXH3_64bits(p, n) == m->h[j] ? 0 : SPIRT_ECHECKSUM;
}

/* a shard of the data set as read (zero-copy, valid during txn) */
struct rshard {
	const void *x, *y;
	struct spirt_tensor tx, ty;
	size_t ex, ey;          /* their hashes' entries (get_shard) */
	int xdtype;
};

struct rctx {
	struct spirt_batch *b;
	struct spirt_txn *txn;
	const char *ds;
	uint64_t feat;
	struct spirt_tensor first;      /* the first shard's x: its shape */
	int have;
	struct rshard *sh;              /* one per row */
	size_t nsh, cap;
};

static int
read_shard(void *arg, size_t i, uint64_t k, uint64_t *n)
{
	struct rctx *c = arg;
	struct spirt_batch *b = c->b;
	struct spirt_tensor tx, ty;
	char kx[SPIRT_KEY_MAX + 1], ky[SPIRT_KEY_MAX + 1];
	struct rshard *r;
	int rc;

	if (i >= c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct rshard *ns = realloc(c->sh, cap * sizeof *ns);

		if (ns == NULL)
			return ENOMEM;
		c->sh = ns;
		c->cap = cap;
	}
	r = &c->sh[i];
	c->nsh = i + 1;
	if ((rc = spirt_key_data_x(kx, sizeof kx, c->ds, k)) != 0 ||
	    (rc = spirt_key_data_y(ky, sizeof ky, c->ds, k)) != 0)
		return msg(b, rc, "data set name \"%s\"", c->ds);
	if ((rc = get_shard(b, c->txn, kx, &tx, &r->x, &r->ex)) != 0)
		return msg(b, rc == SPIRT_ENOTFOUND ? SPIRT_EDATA : rc,
		    "%s%s", kx, rc == SPIRT_ENOTFOUND ? ": missing" : "");
	if ((rc = get_shard(b, c->txn, ky, &ty, &r->y, &r->ey)) != 0)
		return msg(b, rc == SPIRT_ENOTFOUND ? SPIRT_EDATA : rc,
		    "%s%s", ky, rc == SPIRT_ENOTFOUND ? ": missing" : "");
	if (tx.dtype != SPIRT_U8 && tx.dtype != SPIRT_F32)
		return msg(b, SPIRT_EDTYPE, "%s: dtype %s, want u8 or f32",
		    kx, spirt_dtype_name(tx.dtype));
	if (tx.rank < 1 || tx.nelem != tx.dims[0] * c->feat)
		return msg(b, SPIRT_ESHAPE, "%s: %" PRIu64 " values for %"
		    PRIu64 " samples of %" PRIu64 " features", kx, tx.nelem,
		    tx.rank ? tx.dims[0] : 0, c->feat);
	if (!c->have) {
		c->first = tx;
		c->have = 1;
	} else if (tx.dtype != c->first.dtype || tx.rank != c->first.rank ||
	    memcmp(tx.dims + 1, c->first.dims + 1, (tx.rank - 1) *
	    sizeof *tx.dims) != 0) {
		return msg(b, SPIRT_ESHAPE, "%s: samples of another dtype or "
		    "shape than the other shards'", kx);
	}
	if (ty.dtype != SPIRT_I32)
		return msg(b, SPIRT_EDTYPE, "%s: dtype %s, want i32", ky,
		    spirt_dtype_name(ty.dtype));
	if (ty.nelem != tx.dims[0])
		return msg(b, SPIRT_ESHAPE, "%s: %" PRIu64 " labels for %"
		    PRIu64 " samples", ky, ty.nelem, tx.dims[0]);
	r->xdtype = tx.dtype;
	r->tx = tx;
	r->ty = ty;
	*n = tx.dims[0];
	return 0;
}

void
spirt_batch_data_free(struct spirt_batch_data *d)
{
	if (d == NULL)
		return;
	free(d->x);
	free(d->y);
	d->x = NULL;
	d->y = NULL;
}

/* data/<ds>/info into d->info, checked */
static int
read_info(struct spirt_batch *b, struct spirt_batch_data *d,
    struct spirt_txn *txn, const char *ds)
{
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	const void *p;
	int rc;

	if ((rc = spirt_key_data_info(key, sizeof key, ds)) != 0)
		return msg(b, SPIRT_EINVAL, "data set name \"%s\"", ds);
	if ((rc = spirt_store_get_tensor(txn, key, &t, &p, 1)) != 0)
		return msg(b, rc, "data set %s: %s", ds, key);
	if (t.dtype != SPIRT_I64 || t.nelem != 4)
		return msg(b, t.dtype != SPIRT_I64 ? SPIRT_EDTYPE :
		    SPIRT_ESHAPE, "%s: not i64 [4]", key);
	memcpy(d->info, p, sizeof d->info);     /* may be unaligned */
	if (d->info[0] < 1 || d->info[0] > SPIRT_DATA_MAXSHARDS ||
	    d->info[1] < d->info[0] || d->info[2] < 1 ||
	    d->info[2] > SPIRT_DATA_MAXCLASSES || d->info[3] < 1)
		return msg(b, SPIRT_EDATA, "%s: bad values", key);
	return 0;
}

/*
 * A sample's bytes as floats in [0, 1]: each byte times 1/255, as it was
 * one at a time.  Sixteen at a time with nothing aliased, so that -O2
 * vectorises it (SSE2 and up): a value at a time, 32 samples of 784
 * bytes took half of a batch request's 155 us in spirt-store pipe (perf).
 */
static void
u8_to_f32(float *restrict x, const unsigned char *restrict s, size_t n)
{
	size_t j = 0;

	for (; j + 16 <= n; j += 16)
		for (size_t k = 0; k < 16; k++)
			x[j + k] = (float)s[j + k] * (1.0f / 255.0f);
	for (; j < n; j++)
		x[j] = (float)s[j] * (1.0f / 255.0f);
}

int
spirt_batch_read(struct spirt_batch *b, struct spirt_batch_data *d,
    struct spirt_txn *txn, const char *ds, uint64_t worker, uint64_t step,
    uint64_t batch, uint64_t seed)
{
	struct rctx c;
	uint64_t dims[SPIRT_MAXRANK], feat;
	size_t i;
	int rc;

	memset(&c, 0, sizeof c);
	memset(d, 0, sizeof *d);
	b->msg[0] = '\0';
	b->n = 0;
	b->tick++;
	if (batch == 0)
		return msg(b, SPIRT_EINVAL, "batch 0");
	if ((rc = read_info(b, d, txn, ds)) != 0)
		return rc;
	if (worker >= (uint64_t)d->info[0])
		return msg(b, SPIRT_EINVAL, "worker %" PRIu64 ": no such "
		    "worker: data set %s has %" PRId64 " shards, workers 0..%"
		    PRId64, worker, ds, d->info[0], d->info[0] - 1);
	c.b = b;
	c.txn = txn;
	c.ds = ds;
	c.feat = feat = (uint64_t)d->info[3];
	if ((rc = spirt_batch_select(b, txn, ds, (uint64_t)d->info[0],
	    (uint64_t)d->info[1], worker, step, batch, seed, read_shard,
	    &c)) != 0)
		goto out;
	dims[0] = b->n;
	for (i = 1; i < c.first.rank; i++)
		dims[i] = c.first.dims[i];
	if ((rc = spirt_tensor_init(&d->tx, SPIRT_F32, c.first.rank, dims))
	    != 0 || (rc = spirt_tensor_init(&d->ty, SPIRT_I32, 1, dims)) != 0)
		goto out;
	if ((d->x = malloc(b->n * feat * sizeof *d->x + 1)) == NULL ||
	    (d->y = malloc(b->n * sizeof *d->y + 1)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	for (i = 0; i < b->n; i++) {
		const struct rshard *r = &c.sh[b->row[i]];
		float *x = d->x + i * feat;

		if (check_sample(b, r->ex, &r->tx, r->x, b->s[i].index)) {
			rc = msg(b, SPIRT_ECHECKSUM, "%s", b->sum[r->ex].key);
			goto out;
		}
		if (check_sample(b, r->ey, &r->ty, r->y, b->s[i].index)) {
			rc = msg(b, SPIRT_ECHECKSUM, "%s", b->sum[r->ey].key);
			goto out;
		}
		if (r->xdtype == SPIRT_U8) {
			u8_to_f32(x, (const unsigned char *)r->x +
			    b->s[i].index * feat, (size_t)feat);
		} else {
			memcpy(x, (const unsigned char *)r->x +
			    b->s[i].index * feat * 4, feat * 4);
		}
		memcpy(d->y + i, (const unsigned char *)r->y +
		    b->s[i].index * 4, 4);
	}
	if ((rc = spirt_labels_check(d->y, b->n, (size_t)d->info[2])) != 0) {
		rc = msg(b, rc, "data set %s: label outside 0..%" PRId64, ds,
		    d->info[2] - 1);
		goto out;
	}
	if ((rc = spirt_tensor_set_name(&d->tx, ds)) != 0 ||
	    (rc = spirt_tensor_set_name(&d->ty, ds)) != 0)
		goto out;
	d->tx.step = d->ty.step = step;
	d->tx.origin = d->ty.origin = worker;
	d->tx.samples = d->ty.samples = b->n;
	spirt_tensor_set_revision(&d->tx, b->revision);
	spirt_tensor_set_revision(&d->ty, b->revision);
out:
	free(c.sh);
	if (rc != 0)
		spirt_batch_data_free(d);
	return rc;
}
