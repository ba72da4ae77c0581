/* check.h - CHECK macros for unit tests (LMDB mtest style) */
#ifndef SPIRT_CHECK_H
#define SPIRT_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spirt.h"

static int check_failed;

/* Reproducible test data: xorshift64 state *s, a double in [0, 1). */
static inline double
check_urand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (double)(*s >> 11) / 9007199254740992.0;
}

/* expr is a library call returning 0 on success */
#define CHECK_RC(expr) do { \
	int rc_ = (expr); \
	if (rc_) { \
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
		    spirt_strerror(rc_)); \
		check_failed = 1; \
	} \
} while (0)

/* expr must be true */
#define CHECK(expr) do { \
	if (!(expr)) { \
		fprintf(stderr, "%s:%d: %s: false\n", __FILE__, __LINE__, \
		    #expr); \
		check_failed = 1; \
	} \
} while (0)

/* library call must return exactly want */
#define CHECK_EQ_RC(expr, want) do { \
	int rc_ = (expr); \
	if (rc_ != (want)) { \
		fprintf(stderr, "%s:%d: %s: got \"%s\", want \"%s\"\n", \
		    __FILE__, __LINE__, #expr, spirt_strerror(rc_), \
		    spirt_strerror(want)); \
		check_failed = 1; \
	} \
} while (0)

/*
 * Compare float vectors within a relative tolerance; print maxdiff
 * (llm.c check_tensor).  Returns 1 if they match.
 */
static inline int
check_close(const char *what, const float *got, const float *want,
    size_t n, double rtol, double atol)
{
	double maxdiff = 0;
	size_t bad = 0, at = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]);
		double tol = atol + rtol * fabs((double)want[i]);
		if (d > maxdiff) {
			maxdiff = d;
			at = i;
		}
		if (!(d <= tol))
			bad++;
	}
	if (bad) {
		fprintf(stderr, "%s: %zu of %zu differ, maxdiff %g at %zu "
		    "(got %g want %g)\n", what, bad, n, maxdiff, at,
		    (double)got[at], (double)want[at]);
		check_failed = 1;
	}
	return bad == 0;
}

#define CHECK_DONE() return check_failed ? 1 : 0

#endif
