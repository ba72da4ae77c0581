/* xdecide.h - the decision: a step applied only as no other can be */
#ifndef SPIRT_XDECIDE_H
#define SPIRT_XDECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "keys.h"
#include "quorum.h"
#include "spirt.h"
#include "xpull.h"

/*
 * With beats, once a round combined gagg/<t> (docs/protocol.md, "The
 * decision"): the records of the members the round waited for
 * (spirt_xpeer.asked) are pulled until more than half of all the
 * members hold one combination, or, in doubt, the lowest id decides;
 * one that is not this member's is adopted: its gagg/<t>, checked
 * against its hash, its excluded list and its set, with this member's
 * record, in one transaction.
 */
struct spirt_xdecide {
	/* in: the members, the store and the deadline of the looks (every
	 * decision counts: no straggler cut) */
	struct spirt_xlink l;
	const char *self;
	const char *rule;               /* the record's rule= */
	int reused;                     /* the record's quorum= */
	/* in and out: this member's decision (its gagg/<t>'s hash), whether
	 * its aggregate is out, how many the step combined, and whose
	 * decision it adopted ("" its own); the peers' states follow an
	 * adopted set */
	unsigned char gagghash[SPIRT_HASH_BYTES];
	int self_out;
	size_t used;
	char adopted[SPIRT_QUORUM_ID];
	/* out */
	char msg[SPIRT_KEY_MAX + 400];
};

/*
 * Decide step l.step: returns 0 once the step is applied (its record's
 * state=decided; at once if it was before), SPIRT_EBUSY (no decision
 * more than half of the members locked before the deadline, or too few
 * seen: the step is not applied), store errors, ENOMEM; msg says what.
 */
SPIRT_MUST_CHECK int spirt_xdecide_run(struct spirt_xdecide *dc)
    SPIRT_NONNULL(1);

#endif
