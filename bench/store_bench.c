/* store_bench.c - tensor store put/get throughput, zero-copy read rate */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"
#include "tool.h"

#define REPS 15

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* 16 independent partial sums: the same vectorisable loop for both sides */
__attribute__((noinline)) static float
sum(const float *x, size_t n)
{
	float acc[16] = { 0 }, s = 0;
	size_t m = n - n % 16;

	for (size_t i = 0; i < m; i += 16)
		for (int j = 0; j < 16; j++)
			acc[j] += x[i + j];
	for (size_t i = m; i < n; i++)
		s += x[i];
	for (int j = 0; j < 16; j++)
		s += acc[j];
	return s;
}

struct putarg {
	const char *key;
	struct spirt_tensor *t;
	const float *x;
};

static int
put(struct spirt_txn *txn, void *arg)
{
	struct putarg *a = arg;

	return spirt_store_put_tensor(txn, a->key, a->t, a->x, 0);
}

static void
bench_size(struct spirt_store *s, struct spirt_store *ns, size_t bytes)
{
	uint64_t dims[1] = { bytes / 4 };
	struct spirt_tensor t, u;
	float *x = emalloc(bytes);
	double tp[REPS], tn[REPS], tg[REPS], tv[REPS];
	struct putarg a = { "bench/x", &t, x };
	const void *pl;
	int rc;

	for (size_t i = 0; i < bytes / 4; i++)
		x[i] = (float)(i % 1000) * 1e-3f;
	if ((rc = spirt_tensor_init(&t, SPIRT_F32, 1, dims)))
		dierc(rc, "init");
	for (int r = 0; r < REPS; r++) {
		struct spirt_txn *txn;
		double t0 = now();
		if ((rc = spirt_store_write(s, put, &a)))
			dierc(rc, "put");
		tp[r] = now() - t0;
		t0 = now();
		if ((rc = spirt_store_write(ns, put, &a)))
			dierc(rc, "put nosync");
		tn[r] = now() - t0;
		t0 = now();
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) ||
		    (rc = spirt_store_get_tensor(txn, "bench/x", &u, &pl, 1)))
			dierc(rc, "get");
		spirt_txn_abort(txn);
		tv[r] = now() - t0;
		t0 = now();
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) ||
		    (rc = spirt_store_get_tensor(txn, "bench/x", &u, &pl, 0)))
			dierc(rc, "get");
		spirt_txn_abort(txn);
		tg[r] = now() - t0;
	}
	printf("%6zu MiB put (fsync commit)      %9.1f MB/s  median %.3f ms\n",
	    bytes >> 20, bytes / 1e6 / median(tp, REPS), median(tp, REPS) * 1e3);
	printf("%6zu MiB put (MDB_NOSYNC)        %9.1f MB/s  median %.3f ms\n",
	    bytes >> 20, bytes / 1e6 / median(tn, REPS), median(tn, REPS) * 1e3);
	printf("%6zu MiB get + verify checksum   %9.1f MB/s  median %.3f ms\n",
	    bytes >> 20, bytes / 1e6 / median(tv, REPS), median(tv, REPS) * 1e3);
	printf("%6zu MiB get zero-copy (no pass)  median %.1f us "
	    "(txn + lookup; independent of size)\n",
	    bytes >> 20, median(tg, REPS) * 1e6);
	free(x);
}

static void
bench_sum(struct spirt_store *s, size_t bytes)
{
	uint64_t dims[1] = { bytes / 4 };
	struct spirt_tensor t, u;
	struct putarg a = { "bench/sum", &t, NULL };
	float *x = emalloc(bytes), *m;
	double ts[2 * REPS + 1], tm[2 * REPS + 1], ratio[2 * REPS + 1];
	volatile float sink = 0;
	struct spirt_txn *txn;
	const void *pl;
	int rc, n = 2 * REPS + 1;

	for (size_t i = 0; i < bytes / 4; i++)
		x[i] = (float)(i % 1000) * 1e-3f;
	a.x = x;
	if ((rc = spirt_tensor_init(&t, SPIRT_F32, 1, dims)) ||
	    (rc = spirt_store_write(s, put, &a)))
		dierc(rc, "put");
	if (posix_memalign((void **)&m, 64, bytes))
		die(SPIRT_EX_OSERR, "malloc:");
	memcpy(m, x, bytes);
	free(x);
	/* alternate the two, so drift on a noisy machine hits both alike */
	for (int r = 0; r < n; r++) {
		double t0 = now();
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) ||
		    (rc = spirt_store_get_tensor(txn, "bench/sum", &u, &pl, 0)))
			dierc(rc, "get");
		if (!spirt_aligned(pl, SPIRT_F32))
			die(SPIRT_EX_SOFTWARE, "stored payload misaligned");
		sink += sum(pl, bytes / 4);
		spirt_txn_abort(txn);
		ts[r] = now() - t0;
		t0 = now();
		sink += sum(m, bytes / 4);
		tm[r] = now() - t0;
		ratio[r] = tm[r] / ts[r];
	}
	(void)sink;
	printf("%6zu MiB sum in store (txn+get+sum) %6.2f GB/s  median %.3f ms\n",
	    bytes >> 20, bytes / 1e9 / median(ts, n), median(ts, n) * 1e3);
	printf("%6zu MiB sum in malloc'ed memory    %6.2f GB/s  median %.3f ms\n",
	    bytes >> 20, bytes / 1e9 / median(tm, n), median(tm, n) * 1e3);
	printf("          zero-copy read rate / malloc read rate = %.3f "
	    "(median of %d paired runs; target >= 0.9)\n", median(ratio, n), n);
	free(m);
}

int
main(int argc, char **argv)
{
	struct spirt_store *s, *ns;
	char dir[] = "/tmp/spirt-bench.XXXXXX", a[64], b[64];
	int rc;

	progname = "store_bench";
	if (argc > 1)
		die(SPIRT_EX_USAGE, "usage: store_bench");
	(void)argv;
	if (!mkdtemp(dir))
		die(SPIRT_EX_CANTCREAT, "mkdtemp:");
	snprintf(a, sizeof a, "%s/sync.db", dir);
	snprintf(b, sizeof b, "%s/nosync.db", dir);
	if ((rc = spirt_store_open(&s, a, SPIRT_STORE_CREATE)) ||
	    (rc = spirt_store_open(&ns, b, SPIRT_STORE_CREATE |
	    SPIRT_STORE_NOSYNC)))
		dierc(rc, "open %s", dir);
	printf("bench/store: %d repetitions each, medians; store in %s\n",
	    REPS, dir);
	bench_size(s, ns, 1 << 20);
	bench_size(s, ns, 40 << 20);
	bench_sum(s, 40 << 20);
	spirt_store_close(s);
	spirt_store_close(ns);
	snprintf(a, sizeof a, "rm -rf %s", dir);
	return system(a) ? 1 : 0;
}
