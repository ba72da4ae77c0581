/* exchange.h - one round between peers: publish, pull, check, combine */
#ifndef SPIRT_EXCHANGE_H
#define SPIRT_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "agg.h"
#include "crypto.h"
#include "digest.h"
#include "remote.h"
#include "spirt.h"
#include "store.h"
#include "xnet.h"
#include "xpeer.h"

struct spirt_xlink;

/*
 * The exchange of step t (spirt-peer(1), "exchange"), on the peer that
 * owns store:
 *
 *  1. publish: agg/<t> is copied to xagg/<t>/<self> (once: one published
 *     before stands, since two for one step would be equivocation);
 *  2. pull xagg/<t>/<p> from every other member, each in its own thread,
 *     retrying while it is not there yet, until one deadline for all;
 *  3. write what came (xagg/<t>/<p>) and this peer's signed digest
 *     digest/<t>/<self> (lib/digest.h) in one write transaction, a
 *     volatile one (the store's scratch environment, never synced: see
 *     docs/protocol.md, "Signed digests"), as the pulled digests are;
 *  4. pull digest/<t>/<p> from the peers whose aggregate came, with a
 *     deadline of its own, store them, and check each: signature,
 *     membership, that it signs the aggregate the peer sent, that its
 *     model@t hashes like ours, and that what it says it received from a
 *     third peer is what we received (if not, that peer's digest as the
 *     other received it is pulled: two signatures are a proof);
 *  5. combine the aggregates of self and the peers that passed, in peer
 *     id order, with the rules of spirt-agg, into gagg/<t>, with
 *     gagg/<t>/excluded and the round's record gagg/<t>/round, in one
 *     write transaction.  Under scclip (self-centred clipping, He et al.
 *     2022) the centre is this peer's own xagg/<t>/<self>: peers then
 *     combine different centres, their models differ by design (as in
 *     decentralised learning), and step 4's model check is not made.
 *  6. with beats (not under scclip): the decision.  The record names the
 *     hash of gagg/<t>; the records of the members the round waited for
 *     are pulled, and the step stands only with a combination more than
 *     half of all the members hold; in doubt (every one known or out,
 *     none with more than half) one another member decided, else the
 *     lowest id in doubt decides (the one most hold, a tie to the
 *     lowest holder id); one that is not this peer's is adopted
 *     (docs/protocol.md, "The decision").
 *
 * Nothing is ever deleted.  Pulls are idempotent GETs: a round run again
 * after a crash reuses its digest and what it stored, and a round whose
 * gagg/<t> exists is done.
 *
 * The library never prints: each peer's fate is in its state and why, a
 * proof of equivocation in proof, a failure of the round in msg.
 *
 * The round (lib/exchange.c: publish, record, check, combine) stands on
 * its rooms, each below the one that uses it: lib/xnet.h (how a peer is
 * reached), xpeer.h (the peers file, each one's fate), xpull.h (pulls,
 * their deadlines, the watcher), xrec.h (the records), xquorum.h (the
 * quorum, with beats) and xdecide.h (the decision, with beats).
 */

struct spirt_exchange {
	/* in */
	struct spirt_store *store;
	const char *model;              /* model/<model>@t */
	const char *src;                /* publish <src>/<t> (NULL: agg) */
	uint64_t step;
	const char *self, *run;
	const struct spirt_key *key;
	const unsigned char *token;     /* SPIRT_TOKEN_BYTES or NULL */
	const struct spirt_trust *trust;        /* NULL: no membership check */
	struct spirt_agg_params p;
	unsigned deadline_ms;           /* each pull phase's deadline */
	unsigned timeout_ms;            /* each request's, after its wait
					 * (never past the phase's deadline) */
	size_t min_peers;               /* aggregates needed, self included */
	/* 0, or the round of step t removes the spent rounds, those of
	 * steps before t - prune: xagg/, gagg/ and, unless keep_digests,
	 * digest/ (in the transaction that publishes its aggregate) */
	uint64_t prune;
	int keep_digests;
	/* store the aggregates pulled from the others as xagg/<t>/<id>
	 * with this peer's digest (an audit trail; a rerun then reads them
	 * there); always with beats (a peer that died mid-round must not
	 * depend on members that may have died or gone on).  0: they stay
	 * in memory for the round, a round run again after its digest was
	 * signed pulls them again, each held to the hash its digest signed
	 * (5% of a 3-peer step over loopback: two 0.94 MB writes a peer,
	 * docs/performance.md) */
	int keep_pulls;
	/* wait only for the members this store's watcher holds alive, and
	 * close the step by the quorum of lib/quorum.h: more than half of
	 * the last round's members, stragglers cut at about twice the last
	 * round's time (spirt-beat(1)) */
	int beats;
	/* the partitioned exchange (lib/xpart.h): each member owns a part
	 * of the vector, combines it from every member's slice and serves
	 * it; every member is needed (no beats, no min_peers) */
	int parts;
	/* with parts: the round after this peer published, which the tool
	 * sets to spirt_xpart_round (xpart.h is above this module, which
	 * so does not call it by name) */
	int (*round)(struct spirt_exchange *x);
	/* with parts: the members drawn to check each part, 0 to P - 1
	 * (more: every other member); each pulls the part's P signed
	 * slices, combines them again and compares (xpart.h) */
	unsigned check;
	/* with parts and check: the parts checked each round, 1 to P
	 * (more: every part), drawn from the same seed as their checkers
	 * (xpart.h); default 1 */
	unsigned check_parts;
	/* optional, for tests: this peer, as a part's owner, signs a wrong
	 * combination (its first float plus 1): a lying owner */
	int lie;
	uint64_t lie_from;              /* from this step on (0: every one) */
	/* optional: called as each phase of a partitioned round begins
	 * ("inputs", "combine", "parts", "check", "assemble"), with the
	 * name of the phase (the tool's test hook SPIRT_XSTOP stops there,
	 * as an owner stopped mid-round) */
	void (*phase)(const struct spirt_exchange *x, const char *name);
	/* optional: non-zero once the round must stop (a warm exchange's
	 * SIGTERM): pulls end, and the round returns EINTR, writing nothing
	 * after the pulls under way */
	int (*cancelled)(void);
	/* optional, for tests: "KEY@ID ..." (KEY with the step in it): a
	 * pull of KEY from peer ID is never answered, as if the link lost
	 * it, until the peer is declared dead or the deadline (handed to
	 * the pulls' link only, lib/xpull.h) */
	const char *drop;
	size_t n;
	struct spirt_xpeer *peers;      /* n, owned (spirt_exchange_free) */
	/* out */
	int done;                       /* gagg/<t> existed: nothing done */
	size_t used;                    /* aggregates combined, self too */
	unsigned char agghash[SPIRT_HASH_BYTES];
	unsigned char modelhash[SPIRT_HASH_BYTES];
	double ms;                      /* the round */
	int reused;                     /* beats: the last round's set again */
	/* beats: the members' signed digests leave this peer's aggregate
	 * out of the step (it joins late, or was cut as a straggler): it
	 * combines what they combined, without its own */
	int self_out;
	/* parts: the member proven to have signed a wrong combination this
	 * round (its proof with its xpeer; this peer's own id when its own
	 * part was), "" if none */
	char caught[SPIRT_ID_MAX + 1];
	/* beats, internal: the last round's members (nlast of them) and the
	 * straggler deadline, set by the round */
	char (*last)[33];
	unsigned straggler_ms;
	size_t nlast;                   /* beats: members of the last round */
	/* out: the hash of gagg/<t> (the round's decision), and, with beats,
	 * the member whose decision this peer adopted ("" for its own) */
	unsigned char gagghash[SPIRT_HASH_BYTES];
	char adopted[33];
	char msg[SPIRT_KEY_MAX + 400];
};

/* The link of x's pulls (lib/xpull.h); cut: stragglers are cut (with
 * beats, once the round has its quorum). */
void spirt_exchange_link(struct spirt_xlink *l,
    const struct spirt_exchange *x, int cut) SPIRT_NONNULL(1, 2);

/* d's head from x: this peer's step, run, id, aggregate and model hashes
 * and its token (what both exchanges sign; d->got is the caller's). */
void spirt_exchange_digest_head(const struct spirt_exchange *x,
    struct spirt_digest *d) SPIRT_NONNULL(1, 2);

/* x with defaults: mean, deadline 30 s, timeout 10 s, no peers, with
 * parts one checker a part. */
void spirt_exchange_init(struct spirt_exchange *x) SPIRT_NONNULL(1);
/* Free the peers and what they hold, and close their handles. */
void spirt_exchange_free(struct spirt_exchange *x) SPIRT_NONNULL(1);

/*
 * Read a peers file: "id url" a line, or "id url spare" (a slot that
 * joins a running group: out of a round with no wait while it has never
 * beaten), '#' comments and blank lines skipped; the line naming x->self
 * (if any) is skipped too, so that one file serves every member.  Each
 * peer gets net.  Returns 0, ENOMEM, or SPIRT_EDATA with *line the
 * 1-based line at fault (a bad id, no url, a third word other than
 * spare, an id twice, more than SPIRT_DIGEST_MAXPEERS).
 */
SPIRT_MUST_CHECK int spirt_peers_parse(struct spirt_exchange *x,
    const char *text, size_t len, const struct spirt_xnet *net,
    size_t *line) SPIRT_NONNULL(1, 2, 4);

/*
 * The round, as above.  x may run one round after another (a warm
 * exchange, x->step changed in between): each peer's handle, and so its
 * session, is kept, and what the last round said of it is cleared first.
 * Returns 0 (x->done if it had been done before);
 * SPIRT_ENOTFOUND (no agg/<t> or model@t), SPIRT_EEXIST (xagg/<t>/<self>
 * holds another aggregate), SPIRT_EBUSY (fewer than x->min_peers
 * aggregates; with beats also: not more than half of the last round's
 * members alive, before any pull, or delivered, after them),
 * SPIRT_EMODEL (this peer's model@t is not the majority's: it must stop),
 * EINTR (x->cancelled), the aggregation's codes, store errors, ENOMEM;
 * x->msg
 * says what.
 */
SPIRT_MUST_CHECK int spirt_exchange_run(struct spirt_exchange *x)
    SPIRT_NONNULL(1);

#endif
