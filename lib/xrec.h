/* xrec.h - the exchange's records: u8 values, the round's record */
#ifndef SPIRT_XREC_H
#define SPIRT_XREC_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "store.h"
#include "xpeer.h"

/*
 * A signed digest and a round's record (gagg/<t>/round) are stored as
 * u8 records (spirt-tensor(5)) of their bytes.  The record is text
 * (spirt-store(5)): VERSION=1, TYPE=spirt-round, step=, rule=, a peer=
 * line for this member and one for each other ("<id> <state>[: why]"),
 * xms= (the slowest used member's time), then with beats quorum=,
 * adopted= (if any) and gagg= (the decision), and END; the decision
 * adds its state= line before END.
 */

/* Put b (len bytes) at key as a u8 record of step, with flags. */
SPIRT_MUST_CHECK int spirt_xrec_put(struct spirt_txn *t, const char *key,
    const void *b, size_t len, uint64_t step, unsigned flags)
    SPIRT_NONNULL(1, 2);

/* The bytes of the u8 record val (len bytes): *b, *n of them (pointing
 * into val).  Returns 0, the record's decoding errors or SPIRT_EDTYPE. */
SPIRT_MUST_CHECK int spirt_xrec_bytes(const void *val, size_t len,
    const void **b, size_t *n) SPIRT_NONNULL(3, 4);

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
};

/* The record's text, malloc'd (*len bytes, not NUL-terminated), or
 * NULL (no memory). */
char *spirt_xrec_round(const struct spirt_xrec *r, size_t *len)
    SPIRT_NONNULL(1, 2);

/* A record's text *r (*len bytes, malloc'd: realloc'd) with a state=
 * line before its END.  Returns 0, SPIRT_EDATA (no END) or ENOMEM. */
SPIRT_MUST_CHECK int spirt_xrec_with_state(char **r, size_t *len,
    const char *state) SPIRT_NONNULL(1, 2, 3);

#endif
