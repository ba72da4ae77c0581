/* xrec.h - the exchange's records: the round's record */
#ifndef SPIRT_XREC_H
#define SPIRT_XREC_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "store.h"
#include "xpeer.h"

/*
 * A signed digest and a round's record (gagg/<t>/round) are stored as
 * u8 records (spirt-tensor(5), spirt_store_put_bytes) of their bytes.
 * The record is text (spirt-store(5), kv.h): VERSION=1,
 * TYPE=spirt-round, step=, rule=, a peer= line for this member and one
 * for each other ("<id> <state>[: why]"), xms= (the slowest used
 * member's time), phases= (the partitioned exchange's: each phase's
 * "<name>:<ms>"), checked= (its parts drawn for checks, "<k> ...", or
 * "none" without checks), then with beats quorum=, adopted= (if any) and gagg=
 * (the decision), and END; the decision adds its state= line before END.
 */

/* what a round's record says */
struct spirt_xrec {
	uint64_t step;
	const char *rule;               /* the aggregation rule's name */
	const char *self;
	int self_out;                   /* this member's aggregate is out */
	const struct spirt_xpeer *peers;        /* n: each one's fate */
	size_t n;
	int beats;                      /* quorum= and gagg= lines */
	int reused;                     /* the last round's set again */
	const char *adopted;            /* NULL, "" or the member adopted */
	const unsigned char *gagghash;  /* with beats: the decision */
	/* NULL, or the partitioned exchange's phases= line: "<name>:<ms>"
	 * words, one a phase (lib/xpart.c) */
	const char *phases;
	/* NULL, or the partitioned exchange's checked= line: the parts
	 * drawn for checks, "<k> ..." ("none": no checks) */
	const char *checked;
};

/* The record's text, malloc'd (*len bytes, not NUL-terminated), or
 * NULL (no memory). */
char *spirt_xrec_round(const struct spirt_xrec *r, size_t *len)
    SPIRT_NONNULL(1, 2);

/* The record rec (n bytes) with its state= line, the one before
 * replaced (lines in the same order, state= last before END): *out,
 * malloc'd, *len bytes.  Returns 0, SPIRT_EDATA (not a round's record,
 * or a state that is not a value), SPIRT_EVERSION or ENOMEM. */
SPIRT_MUST_CHECK int spirt_xrec_with_state(char **out, size_t *len,
    const void *rec, size_t n, const char *state) SPIRT_NONNULL(1, 2, 5);

#endif
