/* bench/bench.h - what the C benches share: a monotonic clock in seconds,
 * the thread's CPU time, and a comparison of doubles for qsort (medians) */
#ifndef SPIRT_BENCH_H
#define SPIRT_BENCH_H

#include <time.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* this thread's CPU time: other processes' load not counted */
static double
cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
