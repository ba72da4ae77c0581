/* test_grad.c - the minibatch rule: every sample once per epoch */
/* ISC licence, see LICENSE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "batch.h"
#include "grad.h"
#include "keys.h"

/*
 * For worker w with n samples and batch b, the steps of each epoch must
 * list every position 0..n-1 exactly once, in batches of b but the last,
 * which holds n mod b when b does not divide n.
 */
static void
epochs(uint64_t n, size_t b, uint32_t w, uint64_t seed)
{
	uint64_t S = (n + b - 1) / b, e, t, i;
	uint32_t *idx = malloc(b * sizeof *idx);
	unsigned char *seen = malloc(n);
	size_t cnt;
	int rc;

	for (e = 0; e < 3; e++) {
		memset(seen, 0, n);
		for (t = e * S; t < (e + 1) * S; t++) {
			CHECK_RC(rc = spirt_minibatch(idx, &cnt, seed, w, t, n,
			    b));
			if (rc)
				break;
			if (t + 1 < (e + 1) * S || n % b == 0)
				CHECK(cnt == b);
			else
				CHECK(cnt == n % b);
			for (i = 0; i < cnt; i++) {
				CHECK(idx[i] < n);
				if (idx[i] < n) {
					CHECK(!seen[idx[i]]);
					seen[idx[i]] = 1;
				}
			}
		}
		for (i = 0; i < n; i++)
			CHECK(seen[i]);
	}
	free(idx);
	free(seen);
}

/* a data set "d" of NS shards of SN samples, worker k reading shard k */
enum { NS = 3, SN = 10 };

static int
put_set(struct spirt_txn *txn, void *arg)
{
	struct spirt_tensor t;
	char key[SPIRT_KEY_MAX + 1];
	int64_t info[4] = { NS, NS * SN, 2, 1 }, as[NS * SPIRT_AS_COLS];
	float x[SN];
	int32_t y[SN];
	uint64_t dims[2], k;
	int rc;

	(void)arg;
	dims[0] = 4;
	if ((rc = spirt_key_data_info(key, sizeof key, "d")) ||
	    (rc = spirt_tensor_init(&t, SPIRT_I64, 1, dims)) ||
	    (rc = spirt_store_put_tensor(txn, key, &t, info, 0)))
		return rc;
	memset(as, 0, sizeof as);
	for (k = 0; k < NS; k++) {
		as[k * SPIRT_AS_COLS + SPIRT_AS_WORKER] = (int64_t)k;
		as[k * SPIRT_AS_COLS + SPIRT_AS_SHARD] = (int64_t)k;
		as[k * SPIRT_AS_COLS + SPIRT_AS_COUNT] = SN;
		for (int i = 0; i < SN; i++) {
			x[i] = (float)(k * SN + (uint64_t)i);
			y[i] = i % 2;
		}
		dims[0] = SN;
		dims[1] = 1;
		if ((rc = spirt_key_data_x(key, sizeof key, "d", k)) ||
		    (rc = spirt_tensor_init(&t, SPIRT_F32, 2, dims)) ||
		    (rc = spirt_store_put_tensor(txn, key, &t, x, 0)) ||
		    (rc = spirt_key_data_y(key, sizeof key, "d", k)) ||
		    (rc = spirt_tensor_init(&t, SPIRT_I32, 1, dims)) ||
		    (rc = spirt_store_put_tensor(txn, key, &t, y, 0)))
			return rc;
	}
	dims[0] = NS;
	dims[1] = SPIRT_AS_COLS;
	if ((rc = spirt_key_data_assign(key, sizeof key, "d")) ||
	    (rc = spirt_tensor_init(&t, SPIRT_I64, 2, dims)))
		return rc;
	t.step = 0;
	return spirt_store_put_tensor(txn, key, &t, as, 0);
}

/*
 * The store's rule (batch.h) for a worker reading its own whole shard
 * takes the samples the per-worker rule (spirt_minibatch) gives, in the
 * same order, and spirt_batch_read serves their values; with keep too
 * (each shard checksummed whole once, then the samples taken).
 */
static void
store_rule(const char *dir, int keep)
{
	struct spirt_store *s;
	struct spirt_txn *txn;
	struct spirt_batch b;
	struct spirt_batch_data d;
	uint32_t idx[4];
	size_t cnt, i;
	uint64_t t, w;

	memset(&b, 0, sizeof b);
	b.keep = keep;
	CHECK_RC(spirt_store_open(&s, dir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_store_write(s, put_set, NULL));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	for (w = 0; w < NS; w++)
		for (t = 0; t < 9; t++) {       /* 3 epochs of ceil(10/4) */
			CHECK_RC(spirt_minibatch(idx, &cnt, 5, (uint32_t)w, t,
			    SN, 4));
			CHECK_RC(spirt_batch_read(&b, &d, txn, "d", w, t, 4, 5));
			CHECK(b.n == cnt && b.revision == 0 && b.S == 3 &&
			    b.epoch == t / 3);
			CHECK(d.tx.dims[0] == cnt && d.tx.rank == 2 &&
			    d.ty.nelem == cnt);
			for (i = 0; i < cnt && i < b.n; i++) {
				CHECK(b.s[i].shard == w && b.s[i].index ==
				    idx[i]);
				CHECK(d.x[i] == (float)(w * SN + idx[i]));
				CHECK(d.y[i] == (int32_t)(idx[i] % 2));
			}
			spirt_batch_data_free(&d);
		}
	CHECK_EQ_RC(spirt_batch_read(&b, &d, txn, "d", NS, 0, 4, 5),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_batch_read(&b, &d, txn, "e", 0, 0, 4, 5),
	    SPIRT_ENOTFOUND);
	CHECK(strstr(b.msg, "data/e/info") != NULL);
	spirt_txn_abort(txn);
	spirt_batch_free(&b);
	spirt_store_close(s);
}

int
main(void)
{
	char tmpl[] = "/tmp/test_grad.XXXXXX", dir[64], cmd[96];
	uint32_t a[8], b[8];
	size_t na, nb;
	static const struct {
		uint64_t n;
		size_t b;
	} cases[] = {
		{ 1, 1 }, { 1, 64 }, { 10, 4 }, { 20, 8 }, { 64, 64 },
		{ 100, 7 }, { 15000, 64 }, { 15000, 256 }, { 7, 100 },
	};
	size_t i;
	uint32_t w;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (w = 0; w < 3; w++)
			epochs(cases[i].n, cases[i].b, w, 42 + w);

	/* a function of (seed, step, worker) only; epochs reshuffle */
	CHECK_RC(spirt_minibatch(a, &na, 1, 0, 3, 100, 8));
	CHECK_RC(spirt_minibatch(b, &nb, 1, 0, 3, 100, 8));
	CHECK(na == 8 && nb == 8 && memcmp(a, b, sizeof a) == 0);
	CHECK_RC(spirt_minibatch(b, &nb, 2, 0, 3, 100, 8));
	CHECK(memcmp(a, b, sizeof a) != 0);
	CHECK_RC(spirt_minibatch(b, &nb, 1, 1, 3, 100, 8));
	CHECK(memcmp(a, b, sizeof a) != 0);
	CHECK_RC(spirt_minibatch(b, &nb, 1, 0, 3 + 13, 100, 8));
	CHECK(memcmp(a, b, sizeof a) != 0);

	CHECK_EQ_RC(spirt_minibatch(a, &na, 0, 0, 0, 0, 8), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_minibatch(a, &na, 0, 0, 0, 10, 0), SPIRT_EINVAL);

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/db", tmpl);
	store_rule(dir, 0);
	store_rule(dir, 1);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		check_failed = 1;
	return check_failed;
}
