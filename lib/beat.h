/* beat.h - heartbeats: the beat record, the watcher's view, one budget */
#ifndef SPIRT_BEAT_H
#define SPIRT_BEAT_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "spirt.h"
#include "store.h"

/*
 * A member (a peer or a function) beats: every interval it writes its
 * beat record to beat/<member> in its peer's store, directly or through
 * the peer's URL (spirt-peer serve lets a member put its own beat/<id>
 * only).  A watcher on the store's host reads the beats and keeps, per
 * member, the watcher's CLOCK_MONOTONIC time at which the member's
 * sequence number last changed: health/<member>.  Nothing compares wall
 * clocks, and no clock of another host is read: the age of a beat is
 * "now on this host minus when this host saw it change".
 *
 * Both records are u8 records (spirt-tensor(5)) whose payload is text,
 * one NAME=value a line, VERSION=1 first, END last (spirt-store(5) lists
 * the fields).  The record's step is the member's step.
 *
 * One budget sets every threshold (ARCHITECTURE.md): a beat every
 * beat_ms (default 1 s), suspect after 3 beats missed, dead after 10.
 */

#define SPIRT_BEAT_MS 1000u             /* the default beat interval */
#define SPIRT_BEAT_SUSPECT 3u           /* suspect after this many beats */
#define SPIRT_BEAT_DEAD 10u             /* dead after this many */
#define SPIRT_BEAT_BOOT 16              /* bytes of a boot id */

struct spirt_beat_budget {
	unsigned beat_ms, suspect_ms, dead_ms;
};

/* b from one number: beat_ms, suspect 3 x, dead 10 x. */
void spirt_beat_budget_init(struct spirt_beat_budget *b, unsigned beat_ms)
    SPIRT_NONNULL(1);
/* 0 if 0 < beat_ms < suspect_ms < dead_ms, else SPIRT_EINVAL. */
SPIRT_MUST_CHECK int spirt_beat_budget_check(
    const struct spirt_beat_budget *b) SPIRT_NONNULL(1);

enum spirt_beat_role { SPIRT_BEAT_PEER = 1, SPIRT_BEAT_FUNCTION = 2 };
enum spirt_beat_status {
	SPIRT_BEAT_LIVE = 1,    /* working: counts for the quorum */
	SPIRT_BEAT_CATCHUP,     /* alive, catching up: not yet a member */
	SPIRT_BEAT_STOP         /* left on purpose: dead at once */
};

/* A beat record. */
struct spirt_beat {
	char member[SPIRT_KEY_ID_MAX + 1];
	int role;                       /* enum spirt_beat_role */
	int status;                     /* enum spirt_beat_status */
	uint64_t step;                  /* SPIRT_NOSTEP: none */
	uint64_t seq;                   /* 0, 1, 2, ... per boot */
	unsigned char boot[SPIRT_BEAT_BOOT];    /* random, per beater start */
	unsigned interval_ms;
};

const char *spirt_beat_role_name(int role);
int spirt_beat_role_parse(const char *s);       /* 0: unknown */
const char *spirt_beat_status_name(int status);

/*
 * The text of b into buf (cap bytes), its length in *len.  Returns 0,
 * SPIRT_EINVAL (a bad field), ENOSPC.
 */
SPIRT_MUST_CHECK int spirt_beat_format(char *buf, size_t cap, size_t *len,
    const struct spirt_beat *b) SPIRT_NONNULL(1, 3, 4);
/*
 * Parse a beat's text, strictly: every field once, in order, nothing
 * else.  Returns 0, SPIRT_EVERSION, SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_beat_parse(struct spirt_beat *b, const void *text,
    size_t len) SPIRT_NONNULL(1, 2);

/* Put b as beat/<member> (a u8 record).  Store errors, SPIRT_EINVAL. */
SPIRT_MUST_CHECK int spirt_beat_put(struct spirt_txn *t,
    const struct spirt_beat *b) SPIRT_NONNULL(1, 2);
/*
 * Decode a stored beat value (the record under beat/<member>) into b and
 * check it names member.  Returns 0, record errors, SPIRT_EDATA,
 * SPIRT_EADDR (another member's beat).
 */
SPIRT_MUST_CHECK int spirt_beat_decode(struct spirt_beat *b,
    const char *member, const void *val, size_t len) SPIRT_NONNULL(1, 2, 3);

/* ---- the watcher's view ---- */

enum spirt_health_state {
	SPIRT_H_UNKNOWN = 0,    /* never seen, or seen on another boot */
	SPIRT_H_LIVE,           /* its last beat is newer than suspect_ms */
	SPIRT_H_SUSPECT,        /* newer than dead_ms */
	SPIRT_H_DEAD,           /* older, or it stopped */
	SPIRT_H_JOINING         /* alive but catching up (status catchup) */
};
const char *spirt_health_state_name(int state);

/* health/<member>: what the watcher of this store saw of a member. */
struct spirt_health {
	struct spirt_beat b;            /* the newest beat seen */
	unsigned char host[SPIRT_BEAT_BOOT];    /* the watcher's host boot */
	uint64_t first_ns;              /* first seen, CLOCK_MONOTONIC */
	uint64_t seen_ns;               /* when b.seq or b.boot last changed */
	unsigned suspect_ms, dead_ms;   /* the watcher's budget */
	int dead_run;                   /* declared dead (--on-dead ran) */
};

/* This host's boot id (/proc/sys/kernel/random/boot_id), or errno. */
SPIRT_MUST_CHECK int spirt_host_boot(unsigned char host[SPIRT_BEAT_BOOT]);
/* A fresh random boot id for a beater (/dev/urandom), or errno. */
SPIRT_MUST_CHECK int spirt_beat_boot_new(unsigned char boot[SPIRT_BEAT_BOOT]);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t spirt_mono_ns(void);

SPIRT_MUST_CHECK int spirt_health_format(char *buf, size_t cap, size_t *len,
    const struct spirt_health *h) SPIRT_NONNULL(1, 3, 4);
SPIRT_MUST_CHECK int spirt_health_parse(struct spirt_health *h,
    const void *text, size_t len) SPIRT_NONNULL(1, 2);

/*
 * The watcher saw beat b (have = 1) or no beat (have = 0) at now_ns on
 * host: h (in/out; zeroed for a member never seen) moves seen_ns to now
 * when the sequence or the boot changed, or when h is not of this host's
 * boot; a new boot clears dead_run.  Returns 1 if h changed.
 */
int spirt_health_observe(struct spirt_health *h, const struct spirt_beat *b,
    const unsigned char host[SPIRT_BEAT_BOOT], uint64_t now_ns)
    SPIRT_NONNULL(1, 2, 3);

/*
 * The state of h at now_ns on host, under budget b (NULL: the watcher's,
 * in h); *age_ms (may be NULL) the time since seen_ns.  A record of
 * another boot is SPIRT_H_UNKNOWN.
 */
int spirt_health_state(const struct spirt_health *h,
    const unsigned char host[SPIRT_BEAT_BOOT], uint64_t now_ns,
    const struct spirt_beat_budget *b, double *age_ms) SPIRT_NONNULL(1, 2);

/*
 * Read health/<member> from s.  Returns 0, SPIRT_ENOTFOUND, record
 * errors, SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_health_get(struct spirt_store *s,
    const char *member, struct spirt_health *h) SPIRT_NONNULL(1, 2, 3);

/*
 * Every health/ record of s, in member order, into *out (malloc'd,
 * free()), *n of them; malformed ones are skipped.  Returns 0, ENOMEM,
 * store errors.
 */
SPIRT_MUST_CHECK int spirt_health_list(struct spirt_store *s,
    struct spirt_health **out, size_t *n) SPIRT_NONNULL(1, 2, 3);

/*
 * One pass of the watcher over store s at now_ns: read every beat/ record,
 * observe it in health/<member>, and mark dead the members whose state is
 * SPIRT_H_DEAD and were not yet, all in one write transaction.  A member
 * declared dead whose beat changes again (a partition healed) is alive
 * and may be declared again.  The ids
 * of the newly dead go to dead (room for max, *ndead of them; a member
 * past max is declared in a later pass) with their health in dh (max, may
 * be NULL).  Malformed beats are skipped and counted in *bad (may be
 * NULL).  Returns 0 or store errors.
 */
SPIRT_MUST_CHECK int spirt_watch_pass(struct spirt_store *s,
    const struct spirt_beat_budget *b, uint64_t now_ns,
    const unsigned char host[SPIRT_BEAT_BOOT], struct spirt_health *dh,
    size_t max, size_t *ndead, size_t *bad) SPIRT_NONNULL(1, 2, 4, 7);

/*
 * A watcher that starts gives every member it knows the benefit of the
 * doubt: what an earlier watcher saw may be old (this peer was down, or
 * cut off), so each health/ record of s counts from now_ns as if its
 * beat had just changed (a declared death stays declared).  Returns 0 or
 * store errors.
 */
SPIRT_MUST_CHECK int spirt_watch_start(struct spirt_store *s,
    uint64_t now_ns, const unsigned char host[SPIRT_BEAT_BOOT])
    SPIRT_NONNULL(1, 3);

#endif
