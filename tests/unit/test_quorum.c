/* test_quorum.c - the quorum of a step, the straggler deadline, the round */
#include <string.h>

#include "check.h"
#include "quorum.h"

static int
decide(const char *const *last, size_t nl, const char *const *alive,
    size_t na, size_t minp, struct spirt_quorum *q)
{
	memset(q, 0, sizeof *q);
	q->last = last;
	q->nlast = nl;
	q->alive = alive;
	q->nalive = na;
	q->min_peers = minp;
	return spirt_quorum_decide(q);
}

static void
quorum(void)
{
	static const char *const abc[] = { "a", "b", "c" };
	static const char *const ab[] = { "a", "b" };
	static const char *const c[] = { "c" };
	static const char *const bca[] = { "b", "c", "a" };
	static const char *const abd[] = { "a", "b", "d" };
	static const char *const abcd[] = { "a", "b", "c", "d" };
	static const char *const aa[] = { "a", "a" };
	struct spirt_quorum q;

	CHECK_RC(decide(abc, 3, bca, 3, 2, &q));
	CHECK(q.reused && q.in_last == 3 && !q.minority);
	/* one of three dead: the majority goes on, the set changes */
	CHECK_RC(decide(abc, 3, ab, 2, 2, &q));
	CHECK(!q.reused && q.in_last == 2);
	/* the other side of that partition: a minority, it stops */
	CHECK_EQ_RC(decide(abc, 3, c, 1, 1, &q), SPIRT_EBUSY);
	CHECK(q.minority && q.in_last == 1);
	/* two of two is the next step's healthy set: one more loss stops
	 * both sides, one of two is not more than half */
	CHECK_EQ_RC(decide(ab, 2, c, 1, 1, &q), SPIRT_EBUSY);
	CHECK_EQ_RC(decide(ab, 2, ab + 1, 1, 1, &q), SPIRT_EBUSY);
	CHECK(q.minority);
	/* a newcomer does not make a majority of the last set */
	CHECK_EQ_RC(decide(abcd, 4, abd + 1, 2, 1, &q), SPIRT_EBUSY);
	CHECK_RC(decide(abc, 3, abd, 3, 3, &q));
	CHECK(q.in_last == 2 && !q.reused);
	/* a majority, but fewer than --min-peers */
	CHECK_EQ_RC(decide(abc, 3, ab, 2, 3, &q), SPIRT_EBUSY);
	CHECK(!q.minority);
	/* no two sides of any split of abcd both have a quorum */
	for (unsigned m = 0; m < 16; m++) {
		const char *x[4], *y[4];
		size_t nx = 0, ny = 0;
		int okx, oky;

		for (unsigned i = 0; i < 4; i++)
			if (m >> i & 1)
				x[nx++] = abcd[i];
			else
				y[ny++] = abcd[i];
		okx = decide(abcd, 4, x, nx, 1, &q) == 0;
		oky = decide(abcd, 4, y, ny, 1, &q) == 0;
		CHECK(!(okx && oky));
	}
	CHECK_EQ_RC(decide(aa, 2, ab, 2, 1, &q), SPIRT_EINVAL);
	CHECK_EQ_RC(decide(abc, 3, aa, 2, 1, &q), SPIRT_EINVAL);
}

static void
deadline(void)
{
	CHECK(spirt_quorum_deadline(-1, 3000, 30000) == 30000);
	CHECK(spirt_quorum_deadline(0, 3000, 30000) == 30000);
	CHECK(spirt_quorum_deadline(100, 3000, 30000) == 3000);
	CHECK(spirt_quorum_deadline(2000, 3000, 30000) == 4001);
	CHECK(spirt_quorum_deadline(20000, 3000, 30000) == 30000);
	CHECK(spirt_quorum_deadline(100, 3000, 1000) == 1000);
}

static void
round_record(void)
{
	static const char r[] = "VERSION=1\nTYPE=spirt-round\nstep=4\n"
	    "rule=mean\npeer=p2 self\npeer=p1 used\npeer=p3 late: xagg/4/p3: "
	    "peer did not answer in time\npeer=p4 used\nxms=12.5\nEND\n";
	static const char old[] = "VERSION=1\nTYPE=spirt-round\nstep=4\n"
	    "rule=mean\npeer=p2 self\npeer=p1 used\npeer=p4 used\nEND\n";
	static const char twice[] = "VERSION=1\nTYPE=spirt-round\nstep=4\n"
	    "rule=mean\npeer=p2 self\nxms=1\nxms=2\nEND\n";
	char ids[4][SPIRT_QUORUM_ID];
	size_t n;
	double xms;

	CHECK_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, r, strlen(r)));
	CHECK(n == 3 && xms == 12.5);
	CHECK(n == 3 && !strcmp(ids[0], "p2") && !strcmp(ids[1], "p1") &&
	    !strcmp(ids[2], "p4"));
	CHECK_EQ_RC(spirt_quorum_round_parse(ids, 2, &n, &xms, r, strlen(r)),
	    SPIRT_EDATA);
	CHECK_EQ_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, r + 1,
	    strlen(r) - 1), SPIRT_EDATA);
	/* a record of before the measurement: no xms */
	CHECK_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, old,
	    strlen(old)));
	CHECK(n == 3 && xms == -1);
	/* the reader is strict: no END, a line after it, a name twice */
	CHECK_EQ_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, r, strstr(r,
	    "END") - r), SPIRT_EDATA);
	CHECK_EQ_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, twice,
	    strlen(twice)), SPIRT_EDATA);
	CHECK_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, r, strlen(r)));
	CHECK_EQ_RC(spirt_quorum_round_parse(ids, 4, &n, &xms, r,
	    sizeof r), SPIRT_EDATA);
}

/* a member that catches up is in at the step it names, and after it
 * only if the last round combined it */
static void
joins(void)
{
	CHECK(spirt_quorum_joins(5, UINT64_MAX, 0) == SPIRT_JOIN_LATER);
	CHECK(spirt_quorum_joins(5, UINT64_MAX, 1) == SPIRT_JOIN_LATER);
	CHECK(spirt_quorum_joins(5, 9, 0) == SPIRT_JOIN_LATER);
	CHECK(spirt_quorum_joins(5, 9, 1) == SPIRT_JOIN_LATER);
	CHECK(spirt_quorum_joins(9, 9, 0) == SPIRT_JOIN_IN);
	CHECK(spirt_quorum_joins(0, 0, 0) == SPIRT_JOIN_IN);
	CHECK(spirt_quorum_joins(10, 9, 1) == SPIRT_JOIN_IN);
	CHECK(spirt_quorum_joins(10, 9, 0) == SPIRT_JOIN_MISSED);
	CHECK(spirt_quorum_joins(UINT64_MAX - 1, 9, 0) == SPIRT_JOIN_MISSED);
}

int
main(void)
{
	quorum();
	joins();
	deadline();
	round_record();
	return check_failed;
}
