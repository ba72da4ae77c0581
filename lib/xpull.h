/* xpull.h - pulls from the members: one thread each, one deadline */
#ifndef SPIRT_XPULL_H
#define SPIRT_XPULL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "keys.h"
#include "quorum.h"
#include "spirt.h"
#include "store.h"
#include "xpeer.h"

/*
 * A phase of the exchange (lib/exchange.h) pulls one key from some of
 * its members at once, each pull in a thread of its own, asking again
 * while the key is not there yet, until one deadline for all.  With
 * beats a watcher looks at the pulls under way: it gives up the pull of
 * a member this store's watcher declares dead (lib/beat.h) and, with a
 * cut, every pull still under way once the stragglers' time is over and
 * the round has its quorum without them.
 */

/* the stragglers' cut: once ms have gone by and more than half of the
 * last round's members (nlast of them, self among them) and min_peers
 * delivered, the pulls still under way are given up */
struct spirt_xcut {
	const char (*last)[SPIRT_QUORUM_ID];    /* NULL: no cut */
	size_t nlast;
	const char *self;
	size_t min_peers;
	unsigned ms;
};

/* what every pull of a phase shares */
struct spirt_xlink {
	struct spirt_xpeer *peers;      /* n of them; their handles kept */
	size_t n;
	uint64_t step;
	unsigned deadline_ms;           /* the phase's, from its start */
	unsigned timeout_ms;            /* each request's, after its wait */
	/* optional: non-zero once the round must stop: pulls end (EINTR) */
	int (*cancelled)(void);
	/* optional, for tests (SPIRT_XDROP, spirt-peer(1)): "KEY@ID ...": a
	 * pull of KEY from peer ID is never answered, as if the link lost
	 * it, until the peer is declared dead or the deadline */
	const char *drop;
	/* beats: the watcher, reading this store's view of the members */
	int beats;
	struct spirt_store *store;
	struct spirt_xcut cut;
};

/* one pull's outcome */
struct spirt_xpull {
	const struct spirt_xlink *l;
	struct spirt_xwake *wake;       /* NULL: no one watches */
	struct spirt_xpeer *p;
	const char *url;
	char key[SPIRT_KEY_MAX + 1];
	double end;             /* the deadline, spirt_xnow_ms() */
	atomic_int cancel;      /* given up: 1 declared dead, 2 a straggler */
	atomic_int finished;
	/* out */
	int rc;
	void *val;              /* malloc'd: the caller frees it */
	size_t len;
	double ms;
	char why[256];
	int hash;               /* hash what came into h, in the thread */
	unsigned char h[SPIRT_HASH_BYTES];
};

/* enough(arg, u, started): the pulls so far are all a phase needs */
typedef int (*spirt_xpull_enough)(void *arg, struct spirt_xpull *u,
    const int *started);

/* a key of step (and peer id) into buf */
typedef int (*spirt_xpull_key)(char *buf, size_t cap, uint64_t step,
    const char *id);

/*
 * Pull key (built with the step and the peer id, or id if not NULL)
 * from the peers of l whose want is set, all at once, until l's deadline
 * from now, or (with beats) until enough(arg, ...) says the phase has
 * what it needs: the pulls still under way are then given up.  u[i] (l->n
 * of them) holds the outcome of peer i, the value hashed into u[i].h if
 * hash.  Returns 0, EINTR (l->cancelled) or a thread error.
 */
SPIRT_MUST_CHECK int spirt_xpull_until(const struct spirt_xlink *l,
    struct spirt_xpull *u, spirt_xpull_key key, const char *id,
    const int *want, spirt_xpull_enough enough, void *arg, int hash)
    SPIRT_NONNULL(1, 2, 3, 5);

/* spirt_xpull_until without enough, nor hash */
SPIRT_MUST_CHECK int spirt_xpull_all(const struct spirt_xlink *l,
    struct spirt_xpull *u, spirt_xpull_key key, const char *id,
    const int *want) SPIRT_NONNULL(1, 2, 3, 5);

/* the members' aggregates of the step, xagg/<t>/<id>, each hashed as it
 * comes (u->h) */
SPIRT_MUST_CHECK int spirt_xpull_aggs(const struct spirt_xlink *l,
    struct spirt_xpull *u, const int *want) SPIRT_NONNULL(1, 2, 3);

/* rc is a refusal: asking again gives the same answer */
int spirt_xpull_refusal(int rc);

/* now in ms (spirt_clock), and a nap of ms */
double spirt_xnow_ms(void);
void spirt_xnap(double ms);

#endif
