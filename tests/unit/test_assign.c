/* test_assign.c - the assignment: batch rule, reassignment, coverage */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "assign.h"

#define C SPIRT_AS_COLS

/* ---- the batch rule ---- */

static void
test_span(void)
{
	uint64_t s = 11, lo, hi, n, r, b, i, prev;

	/* the old rule while the list fits: runs of b, the last short */
	spirt_batch_span(&lo, &hi, 20, 3, 8, 2);
	CHECK(lo == 16 && hi == 20);
	spirt_batch_span(&lo, &hi, 20, 3, 8, 0);
	CHECK(lo == 0 && hi == 8);
	/* a longer list still ends with the epoch: 3 runs of 9 or 10 */
	spirt_batch_span(&lo, &hi, 29, 3, 8, 0);
	CHECK(lo == 0 && hi == 9);
	spirt_batch_span(&lo, &hi, 29, 3, 8, 2);
	CHECK(lo == 19 && hi == 29);
	/* beyond the steps: nothing */
	spirt_batch_span(&lo, &hi, 29, 3, 8, 3);
	CHECK(lo == hi);
	CHECK(spirt_epoch_steps(60000, 4, 32) == 469);
	CHECK(spirt_epoch_steps(10, 4, 1) == 2);
	CHECK(spirt_epoch_steps(10, 4, 3) == 1);
	CHECK(spirt_epoch_steps(10, 0, 3) == 0);

	/* every list is cut into r consecutive runs covering it */
	for (int k = 0; k < 2000; k++) {
		n = 1 + (uint64_t)(check_urand(&s) * 200);
		r = 1 + (uint64_t)(check_urand(&s) * 40);
		b = 1 + (uint64_t)(check_urand(&s) * 12);
		prev = 0;
		for (i = 0; i < r; i++) {
			spirt_batch_span(&lo, &hi, n, r, b, i);
			CHECK(lo == prev && hi >= lo && hi <= n);
			if (n <= r * b)
				CHECK(hi - lo <= b && lo == (i * b < n ? i * b :
				    n));
			else
				CHECK(hi - lo == n / r || hi - lo == n / r + 1);
			prev = hi;
		}
		CHECK(prev == n);
	}
}

/* ---- records ---- */

/* an assignment record of m rows (w columns) parsed into a */
static int
parse(struct spirt_assign *a, const int64_t *rows, size_t m, size_t w,
    uint64_t rev)
{
	struct spirt_tensor t;
	uint64_t dims[2] = { m, w };
	int rc;

	if ((rc = spirt_tensor_init(&t, SPIRT_I64, 2, dims)))
		return rc;
	t.step = rev;
	return spirt_assign_parse(a, &t, rows);
}

static void
test_parse(void)
{
	static const int64_t v1[] = { 0, 0, 0, 3,  1, 1, 0, 2 };
	static const int64_t two[] = {
		0, 0, 2, 1, 4, 3, 8,  1, 1, 1, 1, 4, 3, 8,
		0, 0, 0, 3, 5, 0, 0,  1, 1, 0, 2, 5, 0, 0 };
	static const int64_t unsorted[] = {
		1, 1, 0, 2, 0, 0, 0,  0, 0, 0, 3, 0, 0, 0 };
	static const int64_t norest[] = { 0, 0, 0, 3, 2, 1, 8 };
	static const int64_t gap[] = {
		0, 0, 2, 1, 4, 3, 8,  0, 0, 0, 3, 6, 0, 0 };
	static const int64_t nobatch[] = {
		0, 0, 2, 1, 4, 3, 0,  0, 0, 0, 3, 5, 0, 0 };
	static const int64_t neg[] = { 0, 0, -1, 3, 0, 0, 0 };
	static const int64_t three[] = {
		0, 0, 0, 1, 3, 1, 8,  0, 0, 1, 1, 4, 3, 8,
		0, 0, 0, 3, 5, 0, 0 };
	static const int64_t counts[] = { 3, 2 };
	struct spirt_assign a;
	struct spirt_tensor t;
	uint64_t dims[2] = { 2, 5 };

	CHECK_RC(parse(&a, v1, 2, 4, SPIRT_NOSTEP));
	CHECK(a.nrows == 2 && a.nrest == 0 && a.epoch == 0 && a.revision == 0);
	CHECK(a.rows[C + SPIRT_AS_COUNT] == 2 &&
	    a.rows[C + SPIRT_AS_EPOCH] == 0);
	CHECK_RC(spirt_assign_check(&a, counts, 2));
	spirt_assign_free(&a);

	CHECK_RC(parse(&a, two, 4, C, 7));
	CHECK(a.revision == 7 && a.nrest == 2 && a.epoch == 5);
	CHECK(a.rest_epoch == 4 && a.rest_step == 3 && a.rest_batch == 8);
	CHECK_RC(spirt_assign_check(&a, counts, 2));
	spirt_assign_free(&a);

	CHECK_EQ_RC(parse(&a, unsorted, 2, C, 1), SPIRT_EDATA);
	CHECK_EQ_RC(parse(&a, norest, 1, C, 1), SPIRT_EDATA);
	CHECK_EQ_RC(parse(&a, gap, 2, C, 1), SPIRT_EDATA);
	CHECK_EQ_RC(parse(&a, nobatch, 2, C, 1), SPIRT_EDATA);
	CHECK_EQ_RC(parse(&a, neg, 1, C, 1), SPIRT_EDATA);
	CHECK_EQ_RC(parse(&a, three, 3, C, 1), SPIRT_EDATA);
	CHECK(a.rows == NULL);
	CHECK_EQ_RC(parse(&a, v1, 0, 4, 1), SPIRT_ESHAPE);
	CHECK_RC(spirt_tensor_init(&t, SPIRT_I64, 2, dims));
	CHECK_EQ_RC(spirt_assign_parse(&a, &t, v1), SPIRT_ESHAPE);
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F64, 2, dims));
	CHECK_EQ_RC(spirt_assign_parse(&a, &t, v1), SPIRT_EDTYPE);

	/* a full part that misses a sample, or reads one twice */
	{
		static const int64_t miss[] = { 0, 0, 0, 2,  1, 1, 0, 2 };
		static const int64_t twice[] = { 0, 0, 0, 3,  1, 0, 2, 1,
			1, 1, 0, 2 };
		CHECK_RC(parse(&a, miss, 2, 4, 0));
		CHECK_EQ_RC(spirt_assign_check(&a, counts, 2), SPIRT_EDATA);
		spirt_assign_free(&a);
		CHECK_RC(parse(&a, twice, 3, 4, 0));
		CHECK_EQ_RC(spirt_assign_check(&a, counts, 2), SPIRT_EDATA);
		spirt_assign_free(&a);
		CHECK_RC(parse(&a, v1, 2, 4, 0));
		CHECK_EQ_RC(spirt_assign_check(&a, counts, 1), SPIRT_EDATA);
		spirt_assign_free(&a);
	}
}

/* ---- the map ---- */

/* rows (C columns) as (worker, shard, start, count) quadruples */
static int
rows_eq(const int64_t *got, size_t n, const int64_t *want, size_t m)
{
	if (n != m)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (memcmp(got + C * i, want + 4 * i, 4 * sizeof(*got)))
			return 0;
	return 1;
}

static void
test_map(void)
{
	static const int64_t counts[] = { 10, 10, 9, 11 };
	static const int64_t l023[] = { 3, 0, 2, 0 }, l02[] = { 0, 2 };
	/* shard 1's 10 over 0, 2, 3: 4, 3, 3 */
	static const int64_t want1[] = {
		0, 0, 0, 10,  0, 1, 0, 4,
		2, 1, 4, 3,  2, 2, 0, 9,
		3, 1, 7, 3,  3, 3, 0, 11 };
	/* shards 1 and 3 over 0 and 2: the remainder of 11 goes on to 0 */
	static const int64_t want13[] = {
		0, 0, 0, 10,  0, 1, 0, 5,  0, 3, 0, 6,
		2, 1, 5, 5,  2, 2, 0, 9,  2, 3, 6, 5 };
	/* the extra samples of successive shards go to successive workers */
	static const int64_t ones[] = { 1, 1, 1, 1 }, l23[] = { 2, 3 };
	static const int64_t wanto[] = { 2, 0, 0, 1,  2, 2, 0, 1,
		3, 1, 0, 1,  3, 3, 0, 1 };
	static const int64_t bad[] = { 4 }, all[] = { 0, 1, 2, 3 };
	int64_t *out;
	size_t n;

	CHECK_RC(spirt_assign_map(&out, &n, counts, 4, 0, l023, 4, 2));
	CHECK(rows_eq(out, n, want1, 6));
	CHECK(out[SPIRT_AS_EPOCH] == 2 && out[SPIRT_AS_STEP] == 0 &&
	    out[SPIRT_AS_BATCH] == 0);
	free(out);
	CHECK_RC(spirt_assign_map(&out, &n, counts, 4, 0, l02, 2, 0));
	CHECK(rows_eq(out, n, want13, 6));
	free(out);
	CHECK_RC(spirt_assign_map(&out, &n, ones, 4, 0, l23, 2, 0));
	CHECK(rows_eq(out, n, wanto, 4));
	free(out);
	/* everyone live: each reads its own shard */
	CHECK_RC(spirt_assign_map(&out, &n, counts, 4, 2, all, 4, 0));
	CHECK(n == 4 && out[C * 3 + SPIRT_AS_SHARD] == 3 &&
	    out[C * 3 + SPIRT_AS_COUNT] == 11);
	free(out);
	CHECK_EQ_RC(spirt_assign_map(&out, &n, counts, 4, 0, l02, 0, 0),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_assign_map(&out, &n, counts, 4, 0, bad, 1, 0),
	    SPIRT_EINVAL);
	CHECK(out == NULL && n == 0);
	/* every shard empty: no rows, and none sorted (qsort() of a NULL
	 * base, undefined; found by tests/fuzz/fuzz_assign) */
	{
		static const int64_t zero[] = { 0, 0, 0, 0 };
		CHECK_RC(spirt_assign_map(&out, &n, zero, 4, 0, l02, 2, 0));
		CHECK(n == 0);
		free(out);
	}

	/* groups: a dead worker's shard stays within its group */
	{
		static const int64_t c6[] = { 6, 6, 6, 6, 6, 6 };
		static const int64_t l[] = { 0, 2, 3, 4, 5 };
		CHECK_RC(spirt_assign_map(&out, &n, c6, 6, 2, l, 5, 0));
		/* worker 1 (group 0 = {0, 1}) dead: all of shard 1 to 0 */
		for (size_t i = 0; i < n; i++)
			if (out[C * i + SPIRT_AS_SHARD] == 1)
				CHECK(out[C * i + SPIRT_AS_WORKER] == 0 &&
				    out[C * i + SPIRT_AS_COUNT] == 6);
		free(out);
	}
}

/*
 * A whole group (peer) dead: its shards go to every live group evenly,
 * and which positions a group gets does not depend on which of its own
 * workers are dead, so peers that each know only their own dead agree.
 */
static void
test_groups(void)
{
	int64_t counts[9], *out;
	/* groups {0,1,2} {3,4,5} {6,7,8}; group 1 dead */
	static const int64_t la[] = { 1, 2, 6, 7, 8 };    /* 0 also dead */
	static const int64_t lb[] = { 0, 1, 2, 6, 8 };    /* 7 also dead */
	static const int64_t *ls[2] = { la, lb };
	/* per variant, per group: positions of shards 3..5 it got */
	unsigned char got[2][3][3][40];
	size_t n, v, i;
	int g, k;

	for (k = 0; k < 9; k++)
		counts[k] = 37 + k % 2;
	memset(got, 0, sizeof(got));
	for (v = 0; v < 2; v++) {
		CHECK_RC(spirt_assign_map(&out, &n, counts, 9, 3, ls[v], 5, 0));
		for (i = 0; i < n; i++) {
			const int64_t *r = out + C * i;
			int64_t sh = r[SPIRT_AS_SHARD];

			CHECK(r[SPIRT_AS_WORKER] / 3 != 1);
			if (sh < 3 || sh > 5)
				continue;
			for (int64_t p = 0; p < r[SPIRT_AS_COUNT]; p++)
				got[v][r[SPIRT_AS_WORKER] / 3][sh - 3]
				    [r[SPIRT_AS_START] + p]++;
		}
		/* each group gets half a dead shard, give or take one */
		for (k = 0; k < 3; k++) {
			int a = 0, b = 0;
			for (int p = 0; p < 40; p++) {
				a += got[v][0][k][p];
				b += got[v][2][k][p];
			}
			CHECK(a + b == counts[3 + k] && abs(a - b) <= 1);
		}
		free(out);
	}
	for (g = 0; g < 3; g += 2)
		CHECK(memcmp(got[0][g], got[1][g], sizeof(got[0][g])) == 0);
}

/* ---- coverage over epochs with deaths and returns ---- */

/* one run: who is live from which step */
struct event {
	uint64_t step;
	int64_t live[16];
	size_t nlive;
	uint64_t since;         /* the dead's reads stop counting (0: step) */
};

/* worker w is dead by an event still to come whose since has passed: what
 * it reads is not applied (a peer left out of the rounds since then) */
static int
gone(const struct event *ev, size_t x, size_t nev, uint64_t t, size_t w)
{
	for (; x < nev; x++) {
		size_t k;

		if (!ev[x].since || ev[x].since > t || t >= ev[x].step)
			continue;
		for (k = 0; k < ev[x].nlive && ev[x].live[k] != (int64_t)w;
		    k++)
			;
		if (k == ev[x].nlive)
			return 1;
	}
	return 0;
}

/*
 * Run E epochs of K workers over the shards counts[], batch B, with the
 * reassignments of ev[] (each at its step, mid-epoch or at a boundary);
 * check that each epoch reads every position of every shard exactly once,
 * that only live workers read, and that a worker that returns mid-epoch
 * reads nothing until the next epoch.  Returns the number of failures.
 */
static int
run(const int64_t *counts, size_t K, uint64_t group, uint64_t B,
    const struct event *ev, size_t nev, uint64_t E)
{
	struct spirt_assign a;
	int64_t *rows, base[16 * C];
	uint64_t nsamples = 0, S, t, e, maxn = 0;
	unsigned *seen;
	int live[16], got[16], back[16], fails = 0;
	size_t k, w, x = 0, nr;

	for (k = 0; k < K; k++) {
		nsamples += (uint64_t)counts[k];
		maxn = (uint64_t)counts[k] > maxn ? (uint64_t)counts[k] : maxn;
		memset(base + C * k, 0, C * sizeof(*base));
		base[C * k + SPIRT_AS_WORKER] = (int64_t)k;
		base[C * k + SPIRT_AS_SHARD] = (int64_t)k;
		base[C * k + SPIRT_AS_COUNT] = counts[k];
		live[k] = got[k] = 1;
	}
	S = spirt_epoch_steps(nsamples, K, B);
	if (parse(&a, base, K, C, 0))
		return 1;
	seen = calloc(K * maxn, sizeof(*seen));
	for (t = 0; t < E * S; t++) {
		e = t / S;
		if (t % S == 0)
			for (k = 0; k < K; k++)
				got[k] = live[k];
		while (x < nev && ev[x].step == t) {
			uint64_t d = ev[x].since ? ev[x].since : t;
			int rc = spirt_assign_next_since(&rows, &nr, &a, counts,
			    K, group, ev[x].live, ev[x].nlive, e, t % S, d % S,
			    S, B);
			CHECK_RC(rc);
			if (rc)
				goto out;
			spirt_assign_free(&a);
			CHECK_RC(parse(&a, rows, nr, C, x + 1));
			CHECK_RC(spirt_assign_check(&a, counts, K));
			free(rows);
			for (k = 0; k < K; k++)
				live[k] = 0;
			for (k = 0; k < ev[x].nlive; k++)
				live[ev[x].live[k]] = 1;
			/* the dead stop now; the returned start next epoch,
			 * unless every worker of their group that read is
			 * dead: then they take its tails now (2: they may
			 * find nothing left at a step) */
			for (k = 0; k < K; k++) {
				size_t g = group ? k / group : 0, q;
				int heir = 0, gone = 0;

				back[k] = 0;
				if (!live[k] || got[k] || t % S == 0)
					continue;
				for (q = 0; q < K; q++) {
					if ((group ? q / group : 0) != g ||
					    !got[q])
						continue;
					heir |= live[q];
					gone |= !live[q];
				}
				back[k] = !heir && gone;
			}
			for (k = 0; k < K; k++)
				if (back[k])
					got[k] = 2;
			for (k = 0; k < K; k++)
				if (!live[k])
					got[k] = 0;
			if (t % S == 0)
				for (k = 0; k < K; k++)
					got[k] = live[k];
			x++;
		}
		for (w = 0; w < K; w++) {
			struct spirt_assign_sel sel;
			int rc;

			if (gone(ev, x, nev, t, w))
				continue;
			rc = spirt_assign_select(&sel, &a, w, t, S, B);

			if (rc == SPIRT_ENOTFOUND && got[w] != 1)
				continue;
			if (rc || !got[w]) {
				fprintf(stderr, "step %llu worker %zu: rc %d "
				    "live %d\n", (unsigned long long)t, w, rc,
				    got[w]);
				fails++;
				continue;
			}
			/* positions lo..hi-1 of the worker's list */
			for (uint64_t p = sel.lo; p < sel.hi; p++) {
				uint64_t q = p;
				size_t i;
				for (i = 0; i < sel.nrows; i++) {
					uint64_t c = (uint64_t)sel.rows[C * i +
					    SPIRT_AS_COUNT];
					if (q < c)
						break;
					q -= c;
				}
				seen[(size_t)sel.rows[C * i + SPIRT_AS_SHARD] *
				    maxn + (size_t)sel.rows[C * i +
				    SPIRT_AS_START] + q]++;
			}
		}
		if (t % S == S - 1) {
			for (k = 0; k < K; k++)
				for (uint64_t p = 0; p < maxn; p++) {
					unsigned want = p < (uint64_t)counts[k];
					if (seen[k * maxn + p] != want) {
						fprintf(stderr, "epoch %llu "
						    "shard %zu position %llu "
						    "seen %u times\n",
						    (unsigned long long)e, k,
						    (unsigned long long)p,
						    seen[k * maxn + p]);
						fails++;
					}
				}
			memset(seen, 0, K * maxn * sizeof(*seen));
		}
	}
out:
	free(seen);
	spirt_assign_free(&a);
	return fails;
}

static void
test_coverage(void)
{
	/* 4 workers of 10, 10, 9, 9 samples, batch 3: S = 3 */
	static const int64_t c4[] = { 10, 10, 9, 9 };
	/* worker 1 dies at step 1 (mid-epoch 0), 3 at step 5 (the last
	 * of epoch 1), 1 returns at step 7 (mid-epoch 2: nothing till 3),
	 * everyone at step 9 (epoch 3) */
	struct event ev[] = {
		{ 1, { 0, 2, 3 }, 3, 0 },
		{ 5, { 0, 2 }, 2, 0 },
		{ 7, { 0, 1, 2 }, 3, 0 },
		{ 9, { 0, 1, 2, 3 }, 4, 0 },
	};
	uint64_t s = 5;

	CHECK(run(c4, 4, 0, 3, ev, 4, 5) == 0);
	/* two deaths in one step, another later in the same epoch */
	{
		struct event e2[] = {
			{ 1, { 0, 3 }, 2, 0 },
			{ 2, { 3 }, 1, 0 },
		};
		CHECK(run(c4, 4, 0, 2, e2, 2, 3) == 0);
	}
	/* batch 1: one sample a step; a death at every step of an epoch */
	{
		static const int64_t c5[] = { 4, 4, 4, 4, 4 };
		struct event e3[] = {
			{ 1, { 0, 1, 2, 3 }, 4, 0 },
			{ 2, { 0, 1, 2 }, 3, 0 },
			{ 3, { 0, 1 }, 2, 0 },
			{ 4, { 0, 1, 2, 3, 4 }, 5, 0 },
		};
		CHECK(run(c5, 5, 0, 1, e3, 4, 3) == 0);
	}
	/* groups of 3: a function, then a whole peer */
	{
		static const int64_t c9[] = { 7, 7, 7, 7, 7, 7, 7, 6, 6 };
		struct event e4[] = {
			{ 2, { 0, 1, 2, 3, 5, 6, 7, 8 }, 8, 0 },
			{ 4, { 0, 1, 2, 6, 7, 8 }, 6, 0 },
			{ 9, { 0, 1, 2, 3, 4, 5, 6, 7, 8 }, 9, 0 },
		};
		CHECK(run(c9, 9, 3, 2, e4, 3, 4) == 0);
	}
	/* a peer's rounds closed without it since step 1; the others learn
	 * it at step 3 and take what it had from step 1 (batch 2: S = 5) */
	{
		struct event e5[] = {
			{ 3, { 0, 2, 3 }, 3, 1 },
			{ 5, { 0, 1, 2, 3 }, 4, 0 },
		};
		CHECK(run(c4, 4, 0, 2, e5, 2, 3) == 0);
	}
	/* groups of 3: peer 1 (workers 3..5) out since step 1, learnt at
	 * step 2 (S = 3), back at the next epoch; then out since the
	 * epoch's first step, learnt at its second */
	{
		static const int64_t c9[] = { 7, 7, 7, 7, 7, 7, 7, 6, 6 };
		struct event e6[] = {
			{ 2, { 0, 1, 2, 6, 7, 8 }, 6, 1 },
			{ 3, { 0, 1, 2, 3, 4, 5, 6, 7, 8 }, 9, 0 },
			{ 4, { 0, 1, 2, 6, 7, 8 }, 6, 3 },
		};
		CHECK(run(c9, 9, 3, 2, e6, 3, 3) == 0);
	}
	/* random schedules */
	for (int k = 0; k < 300; k++) {
		int64_t c[16];
		struct event er[6];
		size_t K = 1 + (size_t)(check_urand(&s) * 8), ne = 0, i;
		uint64_t B = 1 + (uint64_t)(check_urand(&s) * 5), n0, S, t = 0;
		uint64_t n1, S1;
		uint64_t group = (uint64_t)(check_urand(&s) * 4);

		n0 = 1 + (uint64_t)(check_urand(&s) * 20);
		for (i = 0; i < K; i++)
			c[i] = (int64_t)(n0 + (check_urand(&s) < 0.3));
		S = spirt_epoch_steps(n0 * K, K, B);
		for (ne = 0; ne < 6; ne++) {
			t += (uint64_t)(check_urand(&s) * 2.5 * (double)S);
			er[ne].step = t;
			er[ne].nlive = 0;
			for (i = 0; i < K; i++)
				if (check_urand(&s) < 0.7)
					er[ne].live[er[ne].nlive++] =
					    (int64_t)i;
			if (er[ne].nlive == 0)
				er[ne].live[er[ne].nlive++] = 0;
			if (ne > 0 && er[ne].step == er[ne - 1].step)
				er[ne].step++, t++;
		}
		/* a live set with no worker that holds a list is refused:
		 * keep worker 0 live throughout, so every event is valid */
		for (ne = 0; ne < 6; ne++)
			if (er[ne].live[0] != 0) {
				memmove(er[ne].live + 1, er[ne].live,
				    er[ne].nlive * sizeof(int64_t));
				er[ne].live[0] = 0;
				er[ne].nlive++;
			}
		/* half the mid-epoch ones learnt late: the dead's reads stop
		 * counting since a step at or after the one before (and the
		 * epoch's first) */
		n1 = 0;         /* (run()'s epoch, of the shards as they are) */
		for (i = 0; i < K; i++)
			n1 += (uint64_t)c[i];
		S1 = spirt_epoch_steps(n1, K, B);
		for (ne = 0; ne < 6; ne++) {
			uint64_t lo = er[ne].step / S1 * S1;

			er[ne].since = 0;
			if (er[ne].step % S1 == 0 || check_urand(&s) < 0.5)
				continue;
			if (ne > 0 && er[ne - 1].step > lo)
				lo = er[ne - 1].step;
			er[ne].since = lo + (uint64_t)(check_urand(&s) *
			    (double)(er[ne].step - lo + 1));
			if (er[ne].since > er[ne].step)
				er[ne].since = er[ne].step;
		}
		if (run(c, K, group, B, er, 6, t / S + 2) != 0) {
			fprintf(stderr, "random case %d: K %zu B %llu group "
			    "%llu\n", k, K, (unsigned long long)B,
			    (unsigned long long)group);
			check_failed = 1;
		}
	}
}

/* ---- what is refused ---- */

static void
test_refused(void)
{
	static const int64_t c4[] = { 10, 10, 9, 9 };
	static const int64_t base[] = { 0, 0, 0, 10,  1, 1, 0, 10,
		2, 2, 0, 9,  3, 3, 0, 9 };
	static const int64_t l013[] = { 0, 1, 3 }, l2[] = { 2 };
	static const int64_t l01[] = { 0, 1 };
	struct spirt_assign a, b;
	struct spirt_assign_sel sel;
	int64_t *rows;
	size_t n;

	CHECK_RC(parse(&a, base, 4, 4, 0));
	/* batch 3: S = 3; revision 1 from epoch 2 step 1 */
	CHECK_RC(spirt_assign_next(&rows, &n, &a, c4, 4, 0, l013, 3, 2, 1, 3,
	    3));
	CHECK_RC(parse(&b, rows, n, C, 1));
	free(rows);
	CHECK(b.nrest > 0 && b.rest_epoch == 2 && b.rest_step == 1 &&
	    b.epoch == 3);
	/* steps before it have no assignment any more */
	CHECK_EQ_RC(spirt_assign_select(&sel, &b, 0, 6, 3, 3), SPIRT_ESTEP);
	CHECK_EQ_RC(spirt_assign_select(&sel, &b, 0, 5, 3, 3), SPIRT_ESTEP);
	CHECK_RC(spirt_assign_select(&sel, &b, 0, 7, 3, 3));
	/* the rest part was counted in batches of 3, not 2 */
	CHECK_EQ_RC(spirt_assign_select(&sel, &b, 0, 7, 3, 2), SPIRT_EINVAL);
	/* the dead worker reads nothing; in the next epoch neither */
	CHECK_EQ_RC(spirt_assign_select(&sel, &b, 2, 7, 3, 3),
	    SPIRT_ENOTFOUND);
	CHECK_EQ_RC(spirt_assign_select(&sel, &b, 2, 9, 3, 3),
	    SPIRT_ENOTFOUND);
	CHECK_RC(spirt_assign_select(&sel, &b, 0, 9, 3, 2));
	/* the samples of a step: its run's length; none for the dead one */
	{
		uint64_t k, m = 0;

		CHECK_RC(spirt_assign_select(&sel, &b, 0, 7, 3, 3));
		CHECK_RC(spirt_assign_samples(&m, &b, 0, 7, 3, 3));
		CHECK(m == sel.hi - sel.lo && m > 3);  /* more than a batch */
		CHECK_RC(spirt_assign_samples(&k, &b, 2, 7, 3, 3));
		CHECK(k == 0);
		CHECK_EQ_RC(spirt_assign_samples(&k, &b, 0, 5, 3, 3),
		    SPIRT_ESTEP);
		CHECK(k == 0);
		CHECK_EQ_RC(spirt_assign_samples(&k, &b, 0, 7, 3, 2),
		    SPIRT_EINVAL);
	}
	/* the same step again, or another batch, or no heir */
	CHECK_EQ_RC(spirt_assign_next(&rows, &n, &b, c4, 4, 0, l01, 2, 2, 0,
	    3, 3), SPIRT_ESTEP);
	CHECK_EQ_RC(spirt_assign_next(&rows, &n, &b, c4, 4, 0, l01, 2, 2, 2,
	    3, 2), SPIRT_EINVAL);
	/* only the returned worker is left: it takes the tails at once */
	CHECK_RC(spirt_assign_next(&rows, &n, &b, c4, 4, 0, l2, 1, 2, 2, 3,
	    3));
	{
		struct spirt_assign r2;

		CHECK_RC(parse(&r2, rows, n, C, 2));
		free(rows);
		CHECK_RC(spirt_assign_select(&sel, &r2, 2, 8, 3, 3));
		CHECK(sel.hi > sel.lo);
		spirt_assign_free(&r2);
	}
	CHECK_EQ_RC(spirt_assign_next(&rows, &n, &b, c4, 4, 0, l01, 2, 2, 3,
	    3, 3), SPIRT_EINVAL);
	CHECK(rows == NULL && n == 0);
	/* at the next epoch's start the returning worker is back, and the
	 * rest part of the epoch before still holds */
	CHECK_EQ_RC(spirt_assign_next(&rows, &n, &b, c4, 4, 0, base, 0, 3, 0,
	    3, 3), SPIRT_EINVAL);
	spirt_assign_free(&a);
	{
		static const int64_t l0123[] = { 0, 1, 2, 3 };
		CHECK_RC(spirt_assign_next(&rows, &n, &b, c4, 4, 0, l0123, 4,
		    3, 0, 3, 3));
		CHECK_RC(parse(&a, rows, n, C, 2));
		free(rows);
		CHECK(a.nrest == b.nrest && a.epoch == 3);
		CHECK_RC(spirt_assign_select(&sel, &a, 2, 9, 3, 3));
		CHECK_RC(spirt_assign_select(&sel, &a, 0, 7, 3, 3));
		spirt_assign_free(&a);
	}
	spirt_assign_free(&b);
}

int
main(void)
{
	test_span();
	test_parse();
	test_map();
	test_groups();
	test_coverage();
	test_refused();
	CHECK_DONE();
}
