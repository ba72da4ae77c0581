/* test_grad.c - the minibatch rule: every sample once per epoch */
/* ISC licence, see LICENSE */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grad.h"

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

int
main(void)
{
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
	return check_failed;
}
