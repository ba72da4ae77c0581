/* xquorum.h - the quorum of a round, from this store's watcher */
#ifndef SPIRT_XQUORUM_H
#define SPIRT_XQUORUM_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "quorum.h"
#include "spirt.h"
#include "store.h"
#include "xpeer.h"
#include "xpull.h"

/*
 * With beats, the rules of lib/quorum.h applied to a round of the
 * exchange (lib/exchange.h): who is waited for, whether the round may
 * close, and the stragglers' deadline.
 */
struct spirt_xquorum {
	/* in */
	struct spirt_store *store;      /* its watcher's view; its rounds */
	const char *self;
	uint64_t step;
	struct spirt_xpeer *peers;      /* n: those not alive are put out */
	size_t n;
	size_t min_peers;
	unsigned deadline_ms;           /* a minority waits no longer */
	int (*cancelled)(void);         /* optional: the round must stop */
	/* out: the last round's members (nlast of them, self included) */
	char ids[SPIRT_XMEMBERS][SPIRT_QUORUM_ID];
	size_t nlast;
	int reused;                     /* the alive are the last set */
	int cut;                        /* stragglers are cut (this peer
					 * does not catch up) */
	unsigned straggler_ms;          /* about twice the last round's */
	char msg[SPIRT_KEY_MAX + 400];
};

/*
 * Before the pulls: the last round's members (gagg/<t'>/round of the
 * newest t' < t, else every member), the members this store's watcher
 * does not hold alive put out (SPIRT_XP_LATE; one that catches up is a
 * member from the step its beat names), the quorum checked (a minority
 * alive waits for the others a while first), and the stragglers'
 * deadline.  Returns 0, SPIRT_EBUSY (no quorum), SPIRT_EDATA (a round
 * record that does not parse), store errors; msg says what.
 */
SPIRT_MUST_CHECK int spirt_xquorum_before(struct spirt_xquorum *q)
    SPIRT_NONNULL(1);

/*
 * After the pulls: more than half of the last round's members, and
 * min_peers, delivered (the peers used, self unless self_out).  Returns
 * 0 or SPIRT_EBUSY; msg says what.
 */
SPIRT_MUST_CHECK int spirt_xquorum_delivered(struct spirt_xquorum *q,
    int self_out) SPIRT_NONNULL(1);

/*
 * All or nothing: the step's members are those that every member says,
 * in its signed digest, it received: the intersection of {q} and what q
 * received, over this peer and every peer q used.  Every peer that sees
 * the same digests combines the same aggregates, so a peer one member
 * cut as a straggler, or one that joins late, is out of the step for all
 * (SPIRT_XP_LATE); one whose own aggregate is out (*self_out set)
 * combines the others' without it, and its model stays theirs.
 */
void spirt_xquorum_agree(struct spirt_xpeer *peers, size_t n,
    const char *self, int *self_out) SPIRT_NONNULL(3, 4);

#endif
