/* xpeer.h - the members of an exchange: the peers file, each one's fate */
#ifndef SPIRT_XPEER_H
#define SPIRT_XPEER_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "digest.h"
#include "spirt.h"
#include "store.h"
#include "xnet.h"

/* the members of a round at most, self included */
#define SPIRT_XMEMBERS (SPIRT_DIGEST_MAXPEERS + 1)

enum spirt_xstate {
	SPIRT_XP_NONE = 0,
	SPIRT_XP_USED,          /* its aggregate is in gagg/<t> */
	SPIRT_XP_LATE,          /* no answer before the deadline */
	SPIRT_XP_REFUSED,       /* answered, but wrongly (rc, why) */
	SPIRT_XP_EQUIV,         /* equivocated: proof holds the proof */
	SPIRT_XP_MODEL          /* its model@t differs from the majority */
};

struct spirt_xpeer {
	/* in */
	char id[SPIRT_ID_MAX + 1];
	char url[512];
	const struct spirt_xnet *net;
	int spare;              /* its line says "spare": a slot that joins
				 * a running group (out while never seen) */
	/* kept across phases and rounds, closed by spirt_xpeers_free */
	void *h;                /* net's handle, opened at the first pull */
	int nowait;             /* its waits came back at once: ask again
				 * after naps (this round) */
	/* out (each round's; spirt_exchange_run clears them first) */
	int state;              /* enum spirt_xstate */
	int rc;                 /* the failure's code */
	char why[320];
	double ms;              /* time to its aggregate */
	unsigned char *agg;     /* the value xagg/<t>/<id> as received */
	size_t agglen;
	unsigned char hash[SPIRT_HASH_BYTES];   /* of agg */
	int has_digest;
	struct spirt_digest d;
	char *proof;            /* malloc'd text of two digests, or NULL */
	int asked;              /* beats: waited for in this round, its
				 * decision counted (-1: by its beats) */
};

/*
 * Read a peers file (spirt_peers_parse, lib/exchange.h) into *peers, *n
 * of them (appended to those there; realloc'd, the caller frees them with
 * spirt_xpeers_free), the line naming self (may be NULL) skipped.
 */
SPIRT_MUST_CHECK int spirt_xpeers_parse(struct spirt_xpeer **peers,
    size_t *n, const char *self, const char *text, size_t len,
    const struct spirt_xnet *net, size_t *line) SPIRT_NONNULL(1, 2, 4, 6);

/* Free what n peers hold, close their handles, free the array. */
void spirt_xpeers_free(struct spirt_xpeer *peers, size_t n);

/* What a round said of p goes (its handle and session stay). */
void spirt_xpeer_reset(struct spirt_xpeer *p) SPIRT_NONNULL(1);

/* p is out of the round (or used): its state, code, and why in words. */
void spirt_xpeer_out(struct spirt_xpeer *p, int state, int rc,
    const char *fmt, ...) SPIRT_PRINTF(4, 5) SPIRT_NONNULL(1, 4);

/*
 * Member id's health by the watcher's record in s (lib/beat.h): its
 * state, SPIRT_H_UNKNOWN without a record; its age in ms in *age (-1:
 * none); the watcher's suspect threshold in *suspect and the step its
 * newest beat names in *step (SPIRT_NOSTEP: none), each unless NULL.
 * host: this host's boot id.
 */
int spirt_xpeer_health(struct spirt_store *s, const char *id,
    const unsigned char *host, double *age, unsigned *suspect,
    uint64_t *step) SPIRT_NONNULL(1, 2, 3, 4);

/* "used", "late", "refused", "equivocated", "model differs" */
const char *spirt_xstate_name(int state);

#endif
