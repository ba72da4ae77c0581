/* assign.c - the assignment: batch rule, deterministic reassignment */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "keys.h"

#define C SPIRT_AS_COLS


uint64_t
spirt_epoch_steps(uint64_t nsamples, uint64_t nshards, uint64_t batch)
{
	uint64_t n;

	if (nshards == 0 || batch == 0)
		return 0;
	n = nsamples / nshards;
	return n / batch + (n % batch != 0);
}

void
spirt_batch_span(uint64_t *lo, uint64_t *hi, uint64_t n, uint64_t r,
    uint64_t b, uint64_t i)
{
	if (r == 0 || i >= r) {
		*lo = *hi = n;
	} else if (n / b + (n % b != 0) <= r) {  /* n <= r * b */
		*lo = i * b < n ? i * b : n;
		*hi = (i + 1) * b < n ? (i + 1) * b : n;
	} else {        /* n, r <= 2^32: the products fit */
		*lo = i * n / r;
		*hi = (i + 1) * n / r;
	}
}

void
spirt_assign_free(struct spirt_assign *a)
{
	free(a->rows);
	memset(a, 0, sizeof(*a));
}

/* (epoch, step, worker, shard, start): the record's order */
static int
rowcmp(const void *a, const void *b)
{
	static const int key[5] = { SPIRT_AS_EPOCH, SPIRT_AS_STEP,
		SPIRT_AS_WORKER, SPIRT_AS_SHARD, SPIRT_AS_START };
	const int64_t *x = a, *y = b;
	int i;

	for (i = 0; i < 5; i++)
		if (x[key[i]] != y[key[i]])
			return x[key[i]] < y[key[i]] ? -1 : 1;
	return 0;
}

static int
samepart(const int64_t *x, const int64_t *y)
{
	return x[SPIRT_AS_EPOCH] == y[SPIRT_AS_EPOCH] &&
	    x[SPIRT_AS_STEP] == y[SPIRT_AS_STEP] &&
	    x[SPIRT_AS_BATCH] == y[SPIRT_AS_BATCH];
}

int
spirt_assign_parse(struct spirt_assign *a, const struct spirt_tensor *t,
    const void *payload)
{
	const unsigned char *p = payload;
	size_t m, w, i, j, nparts = 1;
	int64_t *r;

	memset(a, 0, sizeof(*a));
	if (t->dtype != SPIRT_I64)
		return SPIRT_EDTYPE;
	if (t->rank != 2 || (t->dims[1] != 4 && t->dims[1] != C) ||
	    t->dims[0] == 0 || t->dims[0] > SIZE_MAX / (8 * C))
		return SPIRT_ESHAPE;
	m = (size_t)t->dims[0];
	w = (size_t)t->dims[1];
	if ((r = calloc(m * C, sizeof(*r))) == NULL)
		return ENOMEM;
	for (i = 0; i < m; i++)         /* the map may be unaligned */
		memcpy(r + C * i, p + 8 * w * i, 8 * w);
	for (i = 0; i < m; i++) {
		for (j = 0; j < C; j++)
			if (r[C * i + j] < 0)
				goto bad;
		if (i > 0 && rowcmp(r + C * (i - 1), r + C * i) >= 0)
			goto bad;
		if (i > 0 && !samepart(r + C * (i - 1), r + C * i)) {
			if (++nparts > 2)
				goto bad;
			a->nrest = i;
		}
	}
	/* the last part is the full one; a rest part before it holds what
	 * was left of the epoch just before the full part's */
	if (r[C * (m - 1) + SPIRT_AS_STEP] != 0 ||
	    r[C * (m - 1) + SPIRT_AS_BATCH] != 0)
		goto bad;
	a->epoch = (uint64_t)r[C * (m - 1) + SPIRT_AS_EPOCH];
	if (a->nrest) {
		a->rest_epoch = (uint64_t)r[SPIRT_AS_EPOCH];
		a->rest_step = (uint64_t)r[SPIRT_AS_STEP];
		a->rest_batch = (uint64_t)r[SPIRT_AS_BATCH];
		if (a->rest_step == 0 || a->rest_batch == 0 ||
		    a->rest_epoch + 1 != a->epoch)
			goto bad;
	}
	a->rows = r;
	a->nrows = m;
	a->revision = t->step == SPIRT_NOSTEP ? 0 : t->step;
	return 0;
bad:
	free(r);
	memset(a, 0, sizeof(*a));
	return SPIRT_EDATA;
}

/* (shard, start) order, for the coverage check */
static int
segcmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/*
 * rows[0..n) read each shard's positions at most once and none beyond
 * the shard; with full, every position of every shard exactly once.
 */
static int
check_part(const int64_t *rows, size_t n, const int64_t *counts,
    size_t nshards, int full)
{
	int64_t *sg, next = 0;
	size_t i, k = 0;
	int rc = 0;

	if ((sg = malloc((n ? n : 1) * 3 * sizeof(*sg))) == NULL)
		return ENOMEM;
	for (i = 0; i < n; i++) {
		const int64_t *r = rows + C * i;

		sg[3 * i] = r[SPIRT_AS_SHARD];
		sg[3 * i + 1] = r[SPIRT_AS_START];
		sg[3 * i + 2] = r[SPIRT_AS_COUNT];
		if ((uint64_t)r[SPIRT_AS_SHARD] >= nshards ||
		    r[SPIRT_AS_START] > counts[r[SPIRT_AS_SHARD]] ||
		    r[SPIRT_AS_COUNT] > counts[r[SPIRT_AS_SHARD]] -
		    r[SPIRT_AS_START])
			rc = SPIRT_EDATA;
	}
	qsort(sg, n, 3 * sizeof(*sg), segcmp);
	/* walk the shards in order, each run where the last one ended */
	for (i = 0; i < n && rc == 0; i++) {
		for (; (int64_t)k < sg[3 * i]; k++, next = 0)
			if (full && next != counts[k])
				rc = SPIRT_EDATA;
		if (full ? sg[3 * i + 1] != next : sg[3 * i + 1] < next)
			rc = SPIRT_EDATA;
		next = sg[3 * i + 1] + sg[3 * i + 2];
	}
	for (; rc == 0 && full && k < nshards; k++, next = 0)
		if (next != counts[k])
			rc = SPIRT_EDATA;
	free(sg);
	return rc;
}

int
spirt_assign_check(const struct spirt_assign *a, const int64_t *counts,
    size_t nshards)
{
	int rc;

	if (a->nrest && (rc = check_part(a->rows, a->nrest, counts, nshards,
	    0)))
		return rc;
	return check_part(a->rows + C * a->nrest, a->nrows - a->nrest, counts,
	    nshards, 1);
}

int
spirt_assign_part(const struct spirt_assign *a, uint64_t epoch, uint64_t j,
    uint64_t batch, size_t *first, size_t *n, uint64_t *j0)
{
	if (a->nrest && epoch == a->rest_epoch && j >= a->rest_step) {
		if (batch != a->rest_batch)
			return SPIRT_EINVAL;
		*first = 0;
		*n = a->nrest;
		*j0 = a->rest_step;
		return 0;
	}
	if (epoch < a->epoch)
		return SPIRT_ESTEP;
	*first = a->nrest;
	*n = a->nrows - a->nrest;
	*j0 = 0;
	return 0;
}

int
spirt_assign_select(struct spirt_assign_sel *sel,
    const struct spirt_assign *a, uint64_t worker, uint64_t step,
    uint64_t S, uint64_t batch)
{
	size_t first, n, i;
	uint64_t j;
	int rc;

	memset(sel, 0, sizeof(*sel));
	if (S == 0 || batch == 0)
		return SPIRT_EINVAL;
	sel->epoch = step / S;
	j = step % S;
	if ((rc = spirt_assign_part(a, sel->epoch, j, batch, &first, &n,
	    &sel->first)))
		return rc;
	for (i = first; i < first + n; i++) {
		const int64_t *r = a->rows + C * i;

		if ((uint64_t)r[SPIRT_AS_WORKER] != worker) {
			if (sel->nrows)
				break;
			continue;
		}
		if (sel->nrows++ == 0)
			sel->rows = r;
		sel->n += (uint64_t)r[SPIRT_AS_COUNT];
	}
	if (sel->n > UINT32_MAX || S > UINT32_MAX)
		return SPIRT_EINVAL;
	spirt_batch_span(&sel->lo, &sel->hi, sel->n, S - sel->first, batch,
	    j - sel->first);
	return sel->hi > sel->lo ? 0 : SPIRT_ENOTFOUND;
}

int
spirt_assign_samples(uint64_t *n, const struct spirt_assign *a,
    uint64_t worker, uint64_t step, uint64_t S, uint64_t batch)
{
	struct spirt_assign_sel sel;
	int rc = spirt_assign_select(&sel, a, worker, step, S, batch);

	*n = sel.hi - sel.lo;
	return rc == SPIRT_ENOTFOUND ? 0 : rc;
}

/* ---- the deterministic reassignment ---- */

/* rows under construction */
struct rowbuf {
	int64_t *r;
	size_t n, cap;
};

static int
emit(struct rowbuf *b, int64_t worker, int64_t shard, int64_t start,
    int64_t count, uint64_t epoch, uint64_t step, uint64_t batch)
{
	int64_t *r;

	if (count == 0)
		return 0;
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		if (cap > SIZE_MAX / (C * sizeof(*r)) ||
		    (r = realloc(b->r, cap * C * sizeof(*r))) == NULL)
			return ENOMEM;
		b->r = r;
		b->cap = cap;
	}
	r = b->r + C * b->n++;
	r[SPIRT_AS_WORKER] = worker;
	r[SPIRT_AS_SHARD] = shard;
	r[SPIRT_AS_START] = start;
	r[SPIRT_AS_COUNT] = count;
	r[SPIRT_AS_EPOCH] = (int64_t)epoch;
	r[SPIRT_AS_STEP] = (int64_t)step;
	r[SPIRT_AS_BATCH] = (int64_t)batch;
	return 0;
}

/* sort, then merge a worker's adjacent runs of one shard and part */
static void
finish(struct rowbuf *b)
{
	size_t i, j;

	if (b->n == 0)
		return;         /* b->r may be NULL: not qsort()'s to take */
	qsort(b->r, b->n, C * sizeof(*b->r), rowcmp);
	for (i = j = 0; i < b->n; i++) {
		/* the last row kept; none before the first (a pointer
		 * before the array is undefined even unread: UBSan's
		 * pointer-overflow, found by tests/fuzz/fuzz_assign) */
		int64_t *p = j > 0 ? b->r + C * (j - 1) : NULL;
		int64_t *r = b->r + C * i;

		if (p && samepart(p, r) &&
		    p[SPIRT_AS_WORKER] == r[SPIRT_AS_WORKER] &&
		    p[SPIRT_AS_SHARD] == r[SPIRT_AS_SHARD] &&
		    p[SPIRT_AS_START] + p[SPIRT_AS_COUNT] == r[SPIRT_AS_START])
			p[SPIRT_AS_COUNT] += r[SPIRT_AS_COUNT];
		else
			memmove(b->r + C * j++, r, C * sizeof(*r));
	}
	b->n = j;
}

/*
 * Who takes over a dead worker's samples.  live[] is sorted; groups are
 * ranges of it (workers w with the same w / group).  rot[] holds one
 * rotation per group and one more (index ngroups) for the split between
 * groups, so that each split starts where the last one left off.
 */
struct heirs {
	const int64_t *live;
	size_t nlive;
	uint64_t group;
	size_t *gfirst, *gn;    /* per group of the live: first, count */
	size_t ngroups;         /* groups with a live worker */
	uint64_t *gid;          /* their group numbers */
	size_t *rot;            /* [ngroups + 1] */
};

static void
heirs_free(struct heirs *h)
{
	free(h->gfirst);
	free(h->gn);
	free(h->gid);
	free(h->rot);
}

static int
heirs_init(struct heirs *h, const int64_t *live, size_t nlive,
    uint64_t group)
{
	size_t i;

	memset(h, 0, sizeof(*h));
	h->live = live;
	h->nlive = nlive;
	h->group = group ? group : UINT64_MAX;
	h->gfirst = calloc(nlive + 1, sizeof(*h->gfirst));
	h->gn = calloc(nlive + 1, sizeof(*h->gn));
	h->gid = calloc(nlive + 1, sizeof(*h->gid));
	h->rot = calloc(nlive + 2, sizeof(*h->rot));
	if (!h->gfirst || !h->gn || !h->gid || !h->rot) {
		heirs_free(h);
		return ENOMEM;
	}
	for (i = 0; i < nlive; i++) {
		uint64_t g = (uint64_t)live[i] / h->group;
		if (h->ngroups == 0 || h->gid[h->ngroups - 1] != g) {
			h->gid[h->ngroups] = g;
			h->gfirst[h->ngroups++] = i;
		}
		h->gn[h->ngroups - 1]++;
	}
	return 0;
}

/*
 * Split c samples into nt pieces: piece j has c / nt, plus one for the
 * first c % nt of them counted from *rot, which then moves on by c % nt.
 * cnt[j] gets piece j's size.
 */
static void
split(uint64_t *cnt, uint64_t c, size_t nt, size_t *rot)
{
	size_t j, rem = (size_t)(c % nt);

	for (j = 0; j < nt; j++)
		cnt[j] = c / nt + ((j + nt - *rot) % nt < rem);
	*rot = (*rot + rem) % nt;
}

/*
 * A run of a list: positions [from, from + len) of the list segs (nseg
 * rows of (shard, start, count) in C columns) as rows of worker.
 */
static int
emit_run(struct rowbuf *b, const int64_t *segs, size_t nseg, uint64_t from,
    uint64_t len, int64_t worker, uint64_t epoch, uint64_t step,
    uint64_t batch)
{
	size_t i;
	int rc;

	for (i = 0; i < nseg && len > 0; i++) {
		const int64_t *g = segs + C * i;
		uint64_t c = (uint64_t)g[SPIRT_AS_COUNT], k;

		if (from >= c) {
			from -= c;
			continue;
		}
		k = c - from < len ? c - from : len;
		if ((rc = emit(b, worker, g[SPIRT_AS_SHARD],
		    g[SPIRT_AS_START] + (int64_t)from, (int64_t)k, epoch, step,
		    batch)))
			return rc;
		len -= k;
		from = 0;
	}
	return 0;
}

/*
 * Give the run [from, from + len) of the list segs of dead worker d to
 * the heirs: d's own group's live workers that hold a list (h) if any;
 * else its group's live workers that returned (ret: they hold no list,
 * and get work back now rather than at the next epoch, so that what a
 * peer's dead functions leave stays with that peer, which the other
 * peers know nothing of); else every group with a live worker that holds
 * a list, then within each.  SPIRT_EINVAL if there is none.
 */
static int
bequeath(struct rowbuf *b, struct heirs *h0, struct heirs *ret, int64_t d,
    const int64_t *segs, size_t nseg, uint64_t from, uint64_t len,
    uint64_t epoch, uint64_t step, uint64_t batch)
{
	struct heirs *h = h0;
	uint64_t g = (uint64_t)d / h->group, *gc = NULL, *wc = NULL;
	size_t i, j, gi;
	int rc = 0;

	for (gi = 0; gi < h->ngroups && h->gid[gi] != g; gi++)
		;
	if (gi == h->ngroups) {
		for (gi = 0; gi < ret->ngroups && ret->gid[gi] != g; gi++)
			;
		if (gi < ret->ngroups)
			h = ret;
		else
			gi = h->ngroups;
	}
	if (h->ngroups == 0)
		return len ? SPIRT_EINVAL : 0;
	if ((gc = malloc((h->ngroups + 1) * sizeof(*gc))) == NULL ||
	    (wc = malloc((h->nlive + 1) * sizeof(*wc))) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	if (gi < h->ngroups) {          /* its own peer survives */
		for (j = 0; j < h->ngroups; j++)
			gc[j] = j == gi ? len : 0;
	} else {                        /* the peer is dead: to the others */
		split(gc, len, h->ngroups, &h->rot[h->ngroups]);
	}
	for (j = 0; j < h->ngroups && rc == 0; j++) {
		if (gc[j] == 0)
			continue;
		split(wc, gc[j], h->gn[j], &h->rot[j]);
		for (i = 0; i < h->gn[j] && rc == 0; i++) {
			rc = emit_run(b, segs, nseg, from, wc[i],
			    h->live[h->gfirst[j] + i], epoch, step, batch);
			from += wc[i];
		}
	}
out:
	free(gc);
	free(wc);
	return rc;
}

static int
i64cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* live[] sorted, duplicates gone, into a fresh *out; checked */
static int
liveset(int64_t **out, size_t *nout, const int64_t *live, size_t nlive,
    size_t nshards)
{
	int64_t *l;
	size_t i, j;

	*out = NULL;
	*nout = 0;
	if (nlive == 0)
		return SPIRT_EINVAL;
	if ((l = malloc(nlive * sizeof(*l))) == NULL)
		return ENOMEM;
	memcpy(l, live, nlive * sizeof(*l));
	qsort(l, nlive, sizeof(*l), i64cmp);
	for (i = j = 0; i < nlive; i++) {
		if (l[i] < 0 || (uint64_t)l[i] >= nshards) {
			free(l);
			return SPIRT_EINVAL;
		}
		if (j == 0 || l[j - 1] != l[i])
			l[j++] = l[i];
	}
	*out = l;
	*nout = j;
	return 0;
}

static int
is_in(int64_t w, const int64_t *set, size_t n)
{
	return bsearch(&w, set, n, sizeof(*set), i64cmp) != NULL;
}

/* the full part for the (sorted) live set into b */
static int
map_into(struct rowbuf *b, const int64_t *counts, size_t nshards,
    uint64_t group, const int64_t *live, size_t nlive, uint64_t epoch)
{
	struct heirs h, none;
	int64_t seg[C];
	size_t k;
	int rc = 0;

	memset(&none, 0, sizeof(none));
	if ((rc = heirs_init(&h, live, nlive, group)))
		return rc;
	memset(seg, 0, sizeof(seg));
	for (k = 0; k < nshards && rc == 0; k++) {
		if (counts[k] < 0) {
			rc = SPIRT_EINVAL;
			break;
		}
		if (is_in((int64_t)k, live, nlive)) {
			rc = emit(b, (int64_t)k, (int64_t)k, 0, counts[k],
			    epoch, 0, 0);
			continue;
		}
		seg[SPIRT_AS_SHARD] = (int64_t)k;
		seg[SPIRT_AS_COUNT] = counts[k];
		rc = bequeath(b, &h, &none, (int64_t)k, seg, 1, 0,
		    (uint64_t)counts[k], epoch, 0, 0);
	}
	heirs_free(&h);
	return rc;
}

int
spirt_assign_map(int64_t **out, size_t *nout, const int64_t *counts,
    size_t nshards, uint64_t group, const int64_t *live, size_t nlive,
    uint64_t epoch)
{
	struct rowbuf b = { NULL, 0, 0 };
	int64_t *l;
	size_t nl;
	int rc;

	*out = NULL;
	*nout = 0;
	if ((rc = liveset(&l, &nl, live, nlive, nshards)))
		return rc;
	if ((rc = map_into(&b, counts, nshards, group, l, nl, epoch)) == 0) {
		finish(&b);
		*out = b.r;
		*nout = b.n;
		b.r = NULL;
	}
	free(b.r);
	free(l);
	return rc;
}

int
spirt_assign_next(int64_t **out, size_t *nout, const struct spirt_assign *cur,
    const int64_t *counts, size_t nshards, uint64_t group,
    const int64_t *live, size_t nlive, uint64_t epoch, uint64_t j,
    uint64_t S, uint64_t batch)
{
	return spirt_assign_next_since(out, nout, cur, counts, nshards, group,
	    live, nlive, epoch, j, j, S, batch);
}

int
spirt_assign_next_since(int64_t **out, size_t *nout,
    const struct spirt_assign *cur, const int64_t *counts, size_t nshards,
    uint64_t group, const int64_t *live, size_t nlive, uint64_t epoch,
    uint64_t j, uint64_t d, uint64_t S, uint64_t batch)
{
	struct rowbuf b = { NULL, 0, 0 };
	struct heirs h, hb;
	int64_t *l = NULL, *heir = NULL, *back = NULL;
	size_t nl, first, n, i, e, nh = 0, nb = 0;
	uint64_t j0;
	int rc;

	*out = NULL;
	*nout = 0;
	if (S == 0 || batch == 0 || j >= S || S > UINT32_MAX || d > j ||
	    (j == 0 && d != 0))
		return SPIRT_EINVAL;
	if ((rc = liveset(&l, &nl, live, nlive, nshards)))
		return rc;
	if (j == 0) {
		/* from an epoch's start on; a rest part of the epoch before
		 * still holds for the steps it names */
		if (epoch < cur->epoch) {
			rc = SPIRT_ESTEP;
			goto done;
		}
		for (i = 0; epoch == cur->epoch && i < cur->nrest && rc == 0;
		    i++) {
			const int64_t *r = cur->rows + C * i;
			rc = emit(&b, r[SPIRT_AS_WORKER], r[SPIRT_AS_SHARD],
			    r[SPIRT_AS_START], r[SPIRT_AS_COUNT],
			    cur->rest_epoch, cur->rest_step, cur->rest_batch);
		}
		if (rc == 0)
			rc = map_into(&b, counts, nshards, group, l, nl, epoch);
		goto done;
	}
	if ((rc = spirt_assign_part(cur, epoch, j, batch, &first, &n, &j0)))
		goto done;
	if (d < j0) {           /* before the part in force */
		rc = SPIRT_ESTEP;
		goto done;
	}
	/* the heirs: live workers that hold a list in the part in force;
	 * and the live that hold none (returned), in their own groups */
	if ((heir = malloc((nl ? nl : 1) * sizeof(*heir))) == NULL ||
	    (back = malloc((nl ? nl : 1) * sizeof(*back))) == NULL) {
		rc = ENOMEM;
		goto done;
	}
	for (i = first; i < first + n; i++) {
		int64_t w = cur->rows[C * i + SPIRT_AS_WORKER];
		if (is_in(w, l, nl) && (nh == 0 || heir[nh - 1] != w))
			heir[nh++] = w;
	}
	for (i = 0; i < nl; i++)
		if (!is_in(l[i], heir, nh))
			back[nb++] = l[i];
	if (nh == 0 && nb == 0) {
		rc = SPIRT_EINVAL;
		goto done;
	}
	if ((rc = heirs_init(&h, heir, nh, group)))
		goto done;
	if ((rc = heirs_init(&hb, back, nb, group))) {
		heirs_free(&h);
		goto done;
	}
	/* each worker's list in the part: rows [i, e) */
	for (i = first; i < first + n && rc == 0; i = e) {
		int64_t w = cur->rows[C * i + SPIRT_AS_WORKER];
		uint64_t N = 0, lo, hi;

		for (e = i; e < first + n &&
		    cur->rows[C * e + SPIRT_AS_WORKER] == w; e++)
			N += (uint64_t)cur->rows[C * e + SPIRT_AS_COUNT];
		if (N > UINT32_MAX) {
			rc = SPIRT_EINVAL;
			break;
		}
		/* what the steps j0 .. j-1 of the part took; of a worker
		 * no longer live, those before d only */
		if (is_in(w, heir, nh)) {
			spirt_batch_span(&lo, &hi, N, S - j0, batch, j - j0);
			rc = emit_run(&b, cur->rows + C * i, e - i, lo, N - lo,
			    w, epoch, j, batch);
		} else {
			spirt_batch_span(&lo, &hi, N, S - j0, batch, d - j0);
			rc = bequeath(&b, &h, &hb, w, cur->rows + C * i,
			    e - i, lo, N - lo, epoch, j, batch);
		}
	}
	heirs_free(&h);
	heirs_free(&hb);
	if (rc == 0)
		rc = map_into(&b, counts, nshards, group, l, nl, epoch + 1);
done:
	if (rc == 0) {
		finish(&b);
		*out = b.r;
		*nout = b.n;
		b.r = NULL;
	}
	free(b.r);
	free(l);
	free(heir);
	free(back);
	return rc;
}

/* ---- the record in the store ---- */

int
spirt_data_assign_get(struct spirt_assign *a, struct spirt_txn *txn,
    const char *name)
{
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	const void *p;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = spirt_key_data_assign(key, sizeof(key), name)) ||
	    (rc = spirt_store_get_tensor(txn, key, &t, &p, 1)))
		return rc;
	return spirt_assign_parse(a, &t, p);
}

int
spirt_data_epoch_steps(uint64_t *S, struct spirt_txn *txn, const char *name,
    uint64_t batch)
{
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	const void *p;
	int64_t info[4];
	int rc;

	*S = 0;
	if ((rc = spirt_key_data_info(key, sizeof(key), name)) ||
	    (rc = spirt_store_get_tensor(txn, key, &t, &p, 0)))
		return rc;
	if (t.dtype != SPIRT_I64)
		return SPIRT_EDTYPE;
	if (t.nelem != 4)
		return SPIRT_ESHAPE;
	memcpy(info, p, sizeof(info));          /* may be unaligned */
	if (info[0] < 1 || info[1] < info[0])
		return SPIRT_EDATA;
	*S = spirt_epoch_steps((uint64_t)info[1], (uint64_t)info[0], batch);
	return 0;
}
