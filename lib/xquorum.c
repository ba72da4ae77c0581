/* xquorum.c - the quorum of a round, from this store's watcher */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beat.h"
#include "keys.h"
#include "tensor.h"
#include "xquorum.h"
#include "xrec.h"

/* the message of a failure with code rc; returns rc */
#define say(x, rc, ...) spirt_msgf((x)->msg, sizeof (x)->msg, (rc), \
	__VA_ARGS__)

#define ULL(x) ((unsigned long long)(x))

static int
in_ids(char (*ids)[SPIRT_QUORUM_ID], size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i], id) == 0)
			return 1;
	return 0;
}

struct lastr {
	uint64_t below, best;
	int found;
};

static int
last_one(void *arg, const char *key, const void *val, size_t len)
{
	struct lastr *l = arg;
	uint64_t t;
	const char *p = key + 5, *end;

	(void)val;
	(void)len;
	/* gagg/<t>/round */
	end = strchr(p, '/');
	if (end == NULL || strcmp(end, "/round") != 0 || end == p)
		return 0;
	t = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || t > (UINT64_MAX - 9) / 10)
			return 0;
		t = 10 * t + (uint64_t)(*p - '0');
	}
	if (t < l->below && (!l->found || t > l->best)) {
		l->best = t;
		l->found = 1;
	}
	return 0;
}

/* the last round's members (self included) and measured time: from the
 * newest gagg/<t'>/round with t' < t, else every member and none */
static int
last_round(struct spirt_xquorum *x, double *xms)
{
	char (*ids)[SPIRT_QUORUM_ID] = x->ids;
	size_t *n = &x->nlast;
	struct lastr l = { x->step, 0, 0 };
	struct spirt_txn *t;
	char key[SPIRT_KEY_MAX + 1];
	const void *v, *b;
	size_t len, bl;
	int rc;

	if ((rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY)))
		return rc;
	rc = spirt_store_list(t, "gagg/", last_one, &l);
	if (rc == 0 && l.found && (rc = spirt_key_gagg_round(key, sizeof key,
	    l.best)) == 0 && (rc = spirt_store_get(t, key, &v, &len)) == 0 &&
	    ((rc = spirt_store_get_bytes(v, len, &b, &bl)) || (rc =
	    spirt_quorum_round_parse(ids, SPIRT_XMEMBERS, n, xms, b, bl))))
		say(x, rc, "%s: not a round record", key);
	spirt_txn_abort(t);
	if (rc || l.found)
		return rc;
	*xms = -1;
	*n = 0;
	snprintf(ids[(*n)++], SPIRT_QUORUM_ID, "%s", x->self);
	for (size_t i = 0; i < x->n; i++)
		snprintf(ids[(*n)++], SPIRT_QUORUM_ID, "%s", x->peers[i].id);
	return 0;
}

/* the members alive and the last set: a quorum, or SPIRT_EBUSY */
static int
quorum_of(struct spirt_xquorum *x, int used, int self_out, const char *when)
{
	size_t nl = x->nlast;
	const char *last[SPIRT_XMEMBERS], *alive[SPIRT_XMEMBERS];
	struct spirt_quorum q;
	char who[400] = "";
	size_t na = 0;
	int rc;

	for (size_t i = 0; i < nl; i++)
		last[i] = x->ids[i];
	if (!(used && self_out))
		alive[na++] = x->self;
	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *p = &x->peers[i];

		if (used ? p->state == SPIRT_XP_USED : p->state ==
		    SPIRT_XP_NONE)
			alive[na++] = p->id;
	}
	for (size_t i = 0; i < na; i++)
		if (strlen(who) + strlen(alive[i]) + 2 < sizeof who)
			snprintf(who + strlen(who), sizeof who - strlen(who),
			    "%s%s", i ? "," : "", alive[i]);
	memset(&q, 0, sizeof q);
	q.last = last;
	q.nlast = nl;
	q.alive = alive;
	q.nalive = na;
	q.min_peers = x->min_peers;
	rc = spirt_quorum_decide(&q);
	x->reused = q.reused;
	if (rc == SPIRT_EBUSY && q.minority)
		return say(x, rc, "step %llu: a minority %s: %zu of the last "
		    "round's %zu members (%s), and more than half are needed: "
		    "this peer stops (run it again once the others are back)",
		    ULL(x->step), when, q.in_last, nl, who);
	if (rc == SPIRT_EBUSY)
		return say(x, rc, "step %llu: %zu members %s (%s), --min-peers "
		    "is %zu", ULL(x->step), na, when, who, x->min_peers);
	return rc ? say(x, rc, "step %llu: the last round names a member "
	    "twice", ULL(x->step)) : 0;
}

/* the members this store's watcher does not hold alive are out of the
 * round (one that catches up is a member from the step its beat names);
 * the watcher's suspect threshold into *suspect */
static void
put_out(struct spirt_xquorum *x, const unsigned char *host,
    unsigned *suspect)
{
	double age;

	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];
		uint64_t join;
		int st = spirt_xpeer_health(x->store, p->id, host, &age,
		    suspect, &join);

		/* (one never seen may be starting: no sign of death, so it
		 * is waited for as the live are; but a spare slot, which
		 * joins a running group, is out until it beats: it joins
		 * as a rejoiner does, at the step its beat names) */
		if (st == SPIRT_H_UNKNOWN && p->spare) {
			spirt_xpeer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
			    "spare: it has not joined");
			continue;
		}
		if (st == SPIRT_H_LIVE || st == SPIRT_H_SUSPECT ||
		    st == SPIRT_H_UNKNOWN)
			continue;
		if (st != SPIRT_H_JOINING) {
			spirt_xpeer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
			    "dead: no beat for %.1f s", age / 1e3);
			continue;
		}
		/* one that catches up is a member from the step its beat
		 * names: waited for then as the live are */
		switch (spirt_quorum_joins(x->step, join, in_ids(x->ids,
		    x->nlast, p->id))) {
		case SPIRT_JOIN_IN:
			break;
		case SPIRT_JOIN_LATER:
			if (join == SPIRT_NOSTEP)
				spirt_xpeer_out(p, SPIRT_XP_LATE,
				    SPIRT_ETIMEDOUT, "joining: it catches up");
			else
				spirt_xpeer_out(p, SPIRT_XP_LATE,
				    SPIRT_ETIMEDOUT, "joining: it joins at "
				    "step %llu", ULL(join));
			break;
		default:
			spirt_xpeer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
			    "joining: the step it named, %llu, went by "
			    "without it", ULL(join));
			break;
		}
	}
}

int
spirt_xquorum_before(struct spirt_xquorum *x)
{
	unsigned char host[SPIRT_BEAT_BOOT];
	unsigned suspect = SPIRT_BEAT_SUSPECT * SPIRT_BEAT_MS;
	double xms, age, t0 = spirt_xnow_ms();
	int rc;

	if ((rc = spirt_host_boot(host)))
		return say(x, rc, "the host's boot id: %s", spirt_strerror(rc));
	if ((rc = last_round(x, &xms)))
		return rc;
again:
	put_out(x, host, &suspect);
	/* a minority alive waits for the others a while (four times the
	 * watcher's suspect threshold, at least 2 s, at most the deadline):
	 * a member that restarts (its last beat said it stops) is back in a
	 * moment, and two that each stopped on seeing the other gone, and
	 * were each restarted, would else go on missing each other */
	if ((rc = quorum_of(x, 0, 0, "alive")) == SPIRT_EBUSY &&
	    spirt_xnow_ms() - t0 < (4.0 * suspect > 2000 ? 4.0 * suspect :
	    2000) && spirt_xnow_ms() - t0 < x->deadline_ms &&
	    !(x->cancelled && x->cancelled())) {
		spirt_xnap(50);
		for (size_t i = 0; i < x->n; i++)
			spirt_xpeer_reset(&x->peers[i]);
		goto again;
	}
	if (rc)
		return rc;
	/* stragglers are cut then, once the round has its quorum; until
	 * it has, the live are waited for up to the round's deadline.  A
	 * peer that catches up (its own beat says so) cuts nobody: it
	 * takes the step the others make, and waits for all of them */
	x->cut = spirt_xpeer_health(x->store, x->self, host, &age, NULL,
	    NULL) != SPIRT_H_JOINING;
	x->straggler_ms = spirt_quorum_deadline(xms, suspect,
	    x->deadline_ms);
	return 0;
}

int
spirt_xquorum_delivered(struct spirt_xquorum *x, int self_out)
{
	return quorum_of(x, 1, self_out, "delivered");
}

void
spirt_xquorum_agree(struct spirt_xpeer *peers, size_t n, const char *self,
    int *self_out)
{
	int was[SPIRT_XMEMBERS];

	for (size_t i = 0; i < n; i++)
		was[i] = peers[i].state == SPIRT_XP_USED &&
		    peers[i].has_digest;
	for (size_t i = 0; i < n; i++) {
		const struct spirt_xpeer *q = &peers[i];

		if (!was[i])
			continue;
		if (spirt_digest_hash_of(&q->d, self) == NULL)
			*self_out = 1;
		for (size_t j = 0; j < n; j++) {
			struct spirt_xpeer *r = &peers[j];

			if (j == i || r->state != SPIRT_XP_USED ||
			    spirt_digest_hash_of(&q->d, r->id) != NULL)
				continue;
			spirt_xpeer_out(r, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
			    "not received by %s: out of the step for every "
			    "member", q->id);
		}
	}
}
