/* fuzz_assign.c - the assignment records of data/<ds>/assign and the
 * reassignment (lib/assign.c, spirt-shard(1), docs/contracts.md) */
#include <errno.h>

#include "assign.h"
#include "fuzz.h"

/*
 * An input is a set-up, then rows:
 *
 *   nshards (1 + b % 8), counts[nshards] (b % 64), group (b % 4), live
 *   mask (bit w: worker w live), worker, step (16 bits), S (1 + b % 8),
 *   batch (1 + b % 4), j, revision, mode (bit 0: 4 columns, version 1;
 *   bit 1: each field 8 bytes little-endian, else one byte)
 *
 * Beyond "no crash": an assignment spirt_assign_check() passes is one:
 * its full part covers every position of every shard exactly once, its
 * rest part none twice and none beyond its shard (and without rows of
 * count 0, what those cover is all it takes to pass); a worker's
 * selection is within its list; and a reassignment of any live set is
 * itself a record that parses and passes, what it changes held by live
 * workers only.
 */
#define SHARDS 8
#define CMAX 64

struct set {
	size_t nshards;
	int64_t counts[SHARDS];
	uint64_t group, worker, step, S, batch, j, rev;
	int64_t live[SHARDS];
	size_t nlive;
	unsigned mode;
};

/* what rows[0..n) cover of each shard, independently of lib/assign.c:
 * 1 when no position is covered twice or lies beyond its shard (full:
 * and every position once); *zero set when a row has count 0 */
static int
covers(const int64_t *rows, size_t n, const struct set *s, int full,
    int *zero)
{
	unsigned char seen[SHARDS][CMAX];

	memset(seen, 0, sizeof seen);
	for (size_t i = 0; i < n; i++) {
		const int64_t *r = rows + SPIRT_AS_COLS * i;
		int64_t k = r[SPIRT_AS_SHARD], a = r[SPIRT_AS_START];
		int64_t c = r[SPIRT_AS_COUNT];

		if (c == 0)
			*zero = 1;
		if (k < 0 || (uint64_t)k >= s->nshards || a < 0 || c < 0 ||
		    a > s->counts[k] || c > s->counts[k] - a)
			return 0;
		for (int64_t p = a; p < a + c; p++)
			if (seen[k][p]++)
				return 0;
	}
	if (full)
		for (size_t k = 0; k < s->nshards; k++)
			for (int64_t p = 0; p < s->counts[k]; p++)
				if (!seen[k][p])
					return 0;
	return 1;
}

static int
is_live(const struct set *s, int64_t w)
{
	for (size_t i = 0; i < s->nlive; i++)
		if (s->live[i] == w)
			return 1;
	return 0;
}

/* a's structure, and check's verdict against covers() */
static void
verify(const struct spirt_assign *a, const struct set *s, int *passed)
{
	int zr = 0, zf = 0, rc, okr, okf;

	FUZZ_ASSERT(a->nrest <= a->nrows);
	for (size_t i = 0; i < a->nrows * SPIRT_AS_COLS; i++)
		FUZZ_ASSERT(a->rows[i] >= 0);
	rc = spirt_assign_check(a, s->counts, s->nshards);
	FUZZ_ASSERT(rc == 0 || rc == SPIRT_EDATA || rc == ENOMEM);
	okr = covers(a->rows, a->nrest, s, 0, &zr);
	okf = covers(a->rows + SPIRT_AS_COLS * a->nrest, a->nrows - a->nrest,
	    s, 1, &zf);
	if (rc == 0)
		FUZZ_ASSERT(okr && okf);
	else if (rc == SPIRT_EDATA && !zr && !zf)
		FUZZ_ASSERT(!(okr && okf));
	*passed = rc == 0;
}

/* worker's selection at step: within its list, its rows its own */
static void
select_one(const struct spirt_assign *a, const struct set *s)
{
	struct spirt_assign_sel sel;
	uint64_t n = 0;
	int rc;

	rc = spirt_assign_select(&sel, a, s->worker, s->step, s->S, s->batch);
	FUZZ_ASSERT(rc == 0 || rc == SPIRT_ENOTFOUND || rc == SPIRT_ESTEP ||
	    rc == SPIRT_EINVAL);
	if (rc != 0 && rc != SPIRT_ENOTFOUND)
		return;
	FUZZ_ASSERT(sel.epoch == s->step / s->S);
	FUZZ_ASSERT(sel.nrows == 0 || (sel.rows >= a->rows &&
	    sel.rows + SPIRT_AS_COLS * sel.nrows <= a->rows +
	    SPIRT_AS_COLS * a->nrows));
	for (size_t i = 0; i < sel.nrows; i++) {
		FUZZ_ASSERT((uint64_t)sel.rows[SPIRT_AS_COLS * i +
		    SPIRT_AS_WORKER] == s->worker);
		n += (uint64_t)sel.rows[SPIRT_AS_COLS * i + SPIRT_AS_COUNT];
	}
	FUZZ_ASSERT(n == sel.n);
	if (rc == 0)
		FUZZ_ASSERT(sel.lo <= sel.hi && sel.hi <= sel.n);
}

/* rows out[0..n) (revision rev) as a record parses and passes, and the
 * workers of its full part are live; with rest, those of its rest part
 * too (j = 0 keeps the rest part of the epoch before, as it was) */
static void
reparse(const int64_t *out, size_t n, uint64_t rev, const struct set *s,
    int rest)
{
	struct spirt_tensor t;
	struct spirt_assign b;
	uint64_t dims[2] = { n, SPIRT_AS_COLS };
	int passed, rc;

	/* no rows (every shard empty): no record to make of them */
	if (n == 0)
		return;
	FUZZ_ASSERT(spirt_tensor_init(&t, SPIRT_I64, 2, dims) == 0);
	t.step = rev;
	rc = spirt_assign_parse(&b, &t, out);
	FUZZ_ASSERT(rc == 0 || rc == ENOMEM);
	if (rc)
		return;
	FUZZ_ASSERT(b.revision == rev);
	verify(&b, s, &passed);
	FUZZ_ASSERT(passed);
	for (size_t i = rest ? 0 : b.nrest; i < b.nrows; i++)
		FUZZ_ASSERT(is_live(s, b.rows[SPIRT_AS_COLS * i +
		    SPIRT_AS_WORKER]));
	spirt_assign_free(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	struct set s = { 0 };
	struct spirt_tensor t;
	struct spirt_assign a;
	int64_t *rows, *out = NULL;
	size_t w, m, nout = 0;
	uint64_t dims[2];
	unsigned live;
	int rc, passed;

	s.nshards = 1 + fuzz_u8(&in) % SHARDS;
	for (size_t k = 0; k < s.nshards; k++)
		s.counts[k] = fuzz_u8(&in) % CMAX;
	s.group = fuzz_u8(&in) % 4;
	live = fuzz_u8(&in);
	s.worker = fuzz_u8(&in);
	s.step = fuzz_u8(&in) | (uint64_t)fuzz_u8(&in) << 8;
	s.S = 1 + fuzz_u8(&in) % 8;
	s.batch = 1 + fuzz_u8(&in) % 4;
	s.j = fuzz_u8(&in);
	s.rev = fuzz_u8(&in);
	s.mode = fuzz_u8(&in);
	for (unsigned k = 0; k < SHARDS; k++)
		if (live >> k & 1)
			s.live[s.nlive++] = k;
	w = s.mode & 1 ? 4 : SPIRT_AS_COLS;
	m = in.n / ((s.mode & 2 ? 8 : 1) * w);
	if (m > 256)
		m = 256;
	FUZZ_ASSERT((rows = malloc((m ? m : 1) * w * sizeof(*rows))) != NULL);
	for (size_t i = 0; i < m * w; i++) {
		uint64_t v = 0;

		if (s.mode & 2)
			for (int b = 0; b < 8; b++)
				v |= (uint64_t)fuzz_u8(&in) << 8 * b;
		else
			v = fuzz_u8(&in);
		rows[i] = (int64_t)v;
	}
	dims[0] = m;
	dims[1] = w;
	FUZZ_ASSERT(spirt_tensor_init(&t, SPIRT_I64, 2, dims) == 0);
	t.step = s.rev;
	rc = spirt_assign_parse(&a, &t, rows);
	FUZZ_ASSERT(rc == 0 || rc == SPIRT_EDATA || rc == SPIRT_ESHAPE ||
	    rc == ENOMEM);
	if (rc == 0) {
		FUZZ_ASSERT(a.revision == s.rev);
		FUZZ_ASSERT(a.nrows == m);
		if (w == 4)
			FUZZ_ASSERT(a.nrest == 0 && a.epoch == 0);
		verify(&a, &s, &passed);
		select_one(&a, &s);
		/* the next revision, at step j of the step's epoch */
		if (passed) {
			rc = spirt_assign_next(&out, &nout, &a, s.counts,
			    s.nshards, s.group, s.live, s.nlive, s.step / s.S,
			    s.j % s.S, s.S, s.batch);
			FUZZ_ASSERT(rc == 0 || rc == SPIRT_EINVAL ||
			    rc == SPIRT_ESTEP || rc == ENOMEM);
			if (rc == 0)
				reparse(out, nout, s.rev + 1, &s,
				    s.j % s.S > 0);
			free(out);
			out = NULL;
		}
		spirt_assign_free(&a);
	}
	/* the full part of the live set, from the step's epoch */
	rc = spirt_assign_map(&out, &nout, s.counts, s.nshards, s.group,
	    s.live, s.nlive, s.step / s.S);
	FUZZ_ASSERT(rc == 0 || rc == SPIRT_EINVAL || rc == ENOMEM);
	if (rc == 0) {
		int zero = 0;

		FUZZ_ASSERT(s.nlive > 0);
		FUZZ_ASSERT(covers(out, nout, &s, 1, &zero));
		for (size_t i = 0; i < nout; i++) {
			const int64_t *r = out + SPIRT_AS_COLS * i;

			FUZZ_ASSERT(is_live(&s, r[SPIRT_AS_WORKER]));
			FUZZ_ASSERT((uint64_t)r[SPIRT_AS_EPOCH] ==
			    s.step / s.S);
			FUZZ_ASSERT(r[SPIRT_AS_STEP] == 0 &&
			    r[SPIRT_AS_BATCH] == 0);
			/* a live worker reads its own shard, whole */
			if (is_live(&s, r[SPIRT_AS_SHARD]))
				FUZZ_ASSERT(r[SPIRT_AS_WORKER] ==
				    r[SPIRT_AS_SHARD]);
		}
		reparse(out, nout, s.rev + 1, &s, 1);
	}
	free(out);
	free(rows);
	return 0;
}
