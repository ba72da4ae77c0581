/* quorum.h - who closes a step: the quorum and the straggler deadline */
#ifndef SPIRT_QUORUM_H
#define SPIRT_QUORUM_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * The rules of ARCHITECTURE.md ("A quorum per step"), as pure functions
 * of sets of member ids, so that every peer that sees the same sets
 * decides the same:
 *
 *  - the last healthy set is the members whose aggregates the last round
 *    combined (gagg/<t'>/round of the newest t' < t, self included;
 *    every member of the peers file before the first round);
 *  - a step may close only with at least min_peers members alive and
 *    more than half of the last healthy set among them: two sides of a
 *    partition can never both close it (no split brain);
 *  - while the alive set equals the last healthy set it is reused as it
 *    is; otherwise it becomes the set of this round;
 *  - stragglers get about twice the measured exchange time.
 */

struct spirt_quorum {
	/* in */
	const char *const *last;        /* the last healthy set, nlast ids */
	size_t nlast;
	const char *const *alive;       /* alive now (self included) */
	size_t nalive;
	size_t min_peers;
	/* out */
	size_t in_last;                 /* alive members of the last set */
	int reused;                     /* alive is the last set */
	int minority;                   /* in_last <= nlast / 2 */
};

/*
 * Decide q.  Returns 0 (a quorum), SPIRT_EBUSY (no quorum: q->minority
 * says whether the majority of the last set is missing, else fewer than
 * min_peers are alive), SPIRT_EINVAL (an id twice in a set).
 */
SPIRT_MUST_CHECK int spirt_quorum_decide(struct spirt_quorum *q)
    SPIRT_NONNULL(1);

/*
 * A member that catches up (its beat's status is catchup) names in its
 * beat the step it joins at, join (UINT64_MAX: none chosen yet).  At
 * step t it is a member of the step, waited for as the live are, when t
 * is that step, or when it joined before (join < t) and the last round
 * combined it (in_last: its live beats may not have come yet).  Returns
 * SPIRT_JOIN_IN, SPIRT_JOIN_LATER (t < join, or no join step: it is left
 * out, not yet a member) or SPIRT_JOIN_MISSED (join < t and the last
 * round did not combine it: the step it named went by without it, and
 * it names another).
 */
enum { SPIRT_JOIN_IN, SPIRT_JOIN_LATER, SPIRT_JOIN_MISSED };
int spirt_quorum_joins(uint64_t t, uint64_t join, int in_last);

/*
 * The straggler deadline in ms: twice measured_ms (the time the last
 * round's slowest member took to deliver), at least floor_ms, at most
 * cap_ms; cap_ms when nothing was measured (measured_ms <= 0).
 */
unsigned spirt_quorum_deadline(double measured_ms, unsigned floor_ms,
    unsigned cap_ms);

/*
 * Read the round record's text (gagg/<t>/round, written by the exchange):
 * the members it combined ("peer=<id> self" and "peer=<id> used" lines)
 * into ids (room for max, each SPIRT_QUORUM_ID bytes), *n of them, and
 * the measured time ("xms=<ms>", -1 if the record has none) into *xms.
 * Returns 0 or SPIRT_EDATA (not a round record, kv.h's reader being
 * strict; more than max).
 */
#define SPIRT_QUORUM_ID 33
SPIRT_MUST_CHECK int spirt_quorum_round_parse(char (*ids)[SPIRT_QUORUM_ID],
    size_t max, size_t *n, double *xms, const char *text, size_t len)
    SPIRT_NONNULL(1, 3, 4, 5);

#endif
