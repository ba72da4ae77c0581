/* bench/bench.h - what the C benches share: a monotonic clock in seconds
 * and a comparison of doubles for qsort (medians) */
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

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
