/* xdecide.c - the decision: a step applied only as no other can be */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beat.h"
#include "crypto.h"
#include "keys.h"
#include "kv.h"
#include "quorum.h"
#include "xdecide.h"
#include "xrec.h"

/* the message of a failure with code rc; returns rc */
#define say(x, rc, ...) spirt_msgf((x)->msg, sizeof (x)->msg, (rc), \
	__VA_ARGS__)

#define ULL(x) ((unsigned long long)(x))

/* the round's record as this member's decision makes it (lib/xrec.h) */
static char *
round_text(const struct spirt_xdecide *dc, size_t *len)
{
	struct spirt_xrec r = {
		.step = dc->l.step, .rule = dc->rule, .self = dc->self,
		.self_out = dc->self_out, .peers = dc->l.peers, .n = dc->l.n,
		.beats = 1, .reused = dc->reused, .adopted = dc->adopted,
		.gagghash = dc->gagghash
	};

	return spirt_xrec_round(&r, len);
}

/*
 * All or nothing across the members (beats): the decision.
 *
 * The digests make most rounds agree, but not every one: two members that
 * each saw a third's aggregate and not the other's (one cut as a
 * straggler, or declared dead, by one of them only) combine two sets,
 * each a majority, and their models part.  So a member applies step t
 * only once it knows that no other member can apply another: its round's
 * record names its decision (gagg=, the hash of its gagg/<t>) and a state
 * (state=), and
 *
 *   - a member LOCKS a decision (state=lock) when it sees more than half
 *     of all the members (the peers file's P) hold it, or another member
 *     lock it, or, in doubt, by the tie rule; a lock is never left but
 *     for a decision applied (state=decided) elsewhere;
 *   - a member APPLIES a decision (state=decided) when more than half of
 *     the members have locked it, or every member holds it, or another
 *     member applied it.
 *
 * Two sets of more than half share a member, and a locked member holds
 * one decision, so two decisions are never both locked by more than
 * half; one that every member holds is the only one any of them can
 * lock (no member can be in doubt then).  A member that is not locked
 * leaves its decision only to lock another (adopting it: its gagg/<t>,
 * checked against the hash, and its set, in the transaction that locks);
 * its leaving is safe as no one applied on its word, and a record's
 * decision changes at most twice: locked, then applied.
 * The lock costs a second look at the records only when some member is
 * out or holds another decision.  (Decisions live in the scratch
 * environment: a reboot forgets them, as it does the digests.)
 */

/* a member's decision, from its round's record */
struct dec {
	int known, out;
	int st;                 /* its state= line: 0, DEC_DOUBT, DEC_LOCK,
				 * DEC_DONE */
	unsigned char hash[SPIRT_HASH_BYTES];
	void *rec;              /* the record as pulled (a u8 tensor) */
	size_t reclen;
};
enum { DEC_DOUBT = 1, DEC_LOCK = 2, DEC_DONE = 3 };

/* a gagg= value: 2 * SPIRT_HASH_BYTES lower-case hex digits */
static int
gagg_hex(unsigned char h[SPIRT_HASH_BYTES], const char *v, size_t n)
{
	if (n != 2 * SPIRT_HASH_BYTES)
		return SPIRT_EDATA;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		unsigned x;

		if (c >= '0' && c <= '9')
			x = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = (unsigned)(c - 'a' + 10);
		else
			return SPIRT_EDATA;
		h[i / 2] = (unsigned char)(i % 2 ? h[i / 2] << 4 | x : x);
	}
	return 0;
}

/* a state= value: DEC_DOUBT, DEC_LOCK, DEC_DONE, or 0 */
static int
state_parse(const char *v, size_t n)
{
	static const char *const name[] = { "doubt", "lock", "decided" };

	for (int i = 0; i < 3; i++)
		if (n == strlen(name[i]) && memcmp(v, name[i], n) == 0)
			return i + 1;
	return 0;
}

/* the gagg= and state= lines of a round's record: 0, or SPIRT_EDATA
 * without a gagg= line */
static int
dec_parse(struct dec *d, const void *val, size_t len)
{
	static const char *const multi[] = { "peer", NULL };
	struct spirt_kvr r;
	const void *b;
	size_t n;
	int rc;

	d->known = 0;
	d->st = 0;
	if ((rc = spirt_store_get_bytes(val, len, &b, &n)))
		return rc;
	if (spirt_kvr_open(&r, b, n, "spirt-round", multi, 0))
		return SPIRT_EDATA;
	while ((rc = spirt_kvr_next(&r)) == 0) {
		if (spirt_kvr_is(&r, "gagg")) {
			if (gagg_hex(d->hash, r.val, r.vlen))
				return SPIRT_EDATA;
			d->known = 1;
		} else if (spirt_kvr_is(&r, "state")) {
			d->st = state_parse(r.val, r.vlen);
		}
	}
	return rc == SPIRT_EOF && d->known ? 0 : SPIRT_EDATA;
}

struct cfm {
	struct spirt_xdecide *dc;
	struct dec *d;          /* dc->l.n of them; own is dc->gagghash */
	int st;                 /* own state */
	int pick;               /* -1: own; i: adopt peer i's */
	double relook;          /* when a look that waits looks again */
};

/* what the records say to do next (next_move) */
enum {
	MV_WAIT,        /* a member neither known nor out: pull on */
	MV_APPLY,       /* apply c->pick (state=decided) */
	MV_LOCK,        /* lock c->pick, then look again */
	MV_AGAIN,       /* locked: look again for the others' locks */
	MV_DOUBT,       /* every member known or out, none with more than
			 * half: in doubt */
	MV_FEW          /* too few seen to be in doubt */
};

/* the members, this one included, whose record names hash h with a
 * state of at least st (0: every holder) */
static size_t
count(const struct cfm *c, const unsigned char *h, int st)
{
	size_t k = c->st >= st && !memcmp(h, c->dc->gagghash, SPIRT_HASH_BYTES);

	for (size_t i = 0; i < c->dc->l.n; i++)
		k += c->d[i].known && c->d[i].st >= st &&
		    !memcmp(c->d[i].hash, h, SPIRT_HASH_BYTES);
	return k;
}

/* the lowest id among the members whose record names hash h with a
 * state of at least st */
static const char *
first_holder(const struct cfm *c, const unsigned char *h, int st)
{
	const char *id = NULL;

	if (c->st >= st && !memcmp(h, c->dc->gagghash, SPIRT_HASH_BYTES))
		id = c->dc->self;
	for (size_t i = 0; i < c->dc->l.n; i++)
		if (c->d[i].known && c->d[i].st >= st &&
		    !memcmp(c->d[i].hash, h, SPIRT_HASH_BYTES) && (id == NULL ||
		    strcmp(c->dc->l.peers[i].id, id) < 0))
			id = c->dc->l.peers[i].id;
	return id;
}

/* pick the decision that most members name with a state of at least st,
 * a tie to the one whose first such member has the lowest id: c->pick
 * (-1: own) and that count */
static size_t
best_pick(struct cfm *c, int st)
{
	size_t best = count(c, c->dc->gagghash, st), k;
	int bi = -1;

	for (size_t i = 0; i < c->dc->l.n; i++) {
		const unsigned char *h = c->d[i].hash;
		const char *a, *b;

		if (!c->d[i].known || c->d[i].st < st)
			continue;
		k = count(c, h, st);
		if (k < best)
			continue;
		a = first_holder(c, h, st);
		b = first_holder(c, bi < 0 ? c->dc->gagghash : c->d[bi].hash, st);
		if (k > best || b == NULL || strcmp(a, b) < 0) {
			best = k;
			bi = (int)i;
		}
	}
	c->pick = bi >= 0 && memcmp(c->d[bi].hash, c->dc->gagghash,
	    SPIRT_HASH_BYTES) ? bi : -1;
	return best;
}

/*
 * The next move by the records seen (the comment above): apply one that
 * more than half locked, or that every member holds; not locked, lock one
 * that more than half hold; else apply one that a member applied; else
 * wait for the records still missing; then, not locked, lock one locked;
 * else look again, or be in doubt.  (A majority comes first: one member's
 * record alone, which a member peer can forge, moves only members that
 * see no majority, docs/protocol.md, "Threat model".)
 */
static int
next_move(struct cfm *c)
{
	struct spirt_xdecide *dc = c->dc;
	size_t p = dc->l.n + 1, all = 1, seen = 1, same = 1;

	if (2 * best_pick(c, DEC_LOCK) > p)
		return MV_APPLY;
	for (size_t i = 0; i < dc->l.n; i++) {
		if (c->d[i].out)
			all++;
		if (!c->d[i].known)
			continue;
		all++;
		seen++;
		same += !memcmp(c->d[i].hash, dc->gagghash, SPIRT_HASH_BYTES);
	}
	if (same == p) {
		c->pick = -1;
		return MV_APPLY;
	}
	if (c->st < DEC_LOCK && 2 * best_pick(c, 0) > p)
		return MV_LOCK;
	for (size_t i = 0; i < dc->l.n; i++)
		if (c->d[i].known && c->d[i].st == DEC_DONE) {
			c->pick = memcmp(c->d[i].hash, dc->gagghash,
			    SPIRT_HASH_BYTES) ? (int)i : -1;
			return MV_APPLY;
		}
	if (all < p)
		return MV_WAIT;
	/* (in doubt only with more than half of the members seen: one
	 * that sees too few, the others out, waits for them to be back) */
	if (2 * seen <= p)
		return MV_FEW;
	if (c->st < DEC_LOCK && best_pick(c, DEC_LOCK) > 0)
		return MV_LOCK;
	return c->st >= DEC_LOCK ? MV_AGAIN : MV_DOUBT;
}

static int
cfm_enough(void *arg, struct spirt_xpull *u, const int *started)
{
	struct cfm *c = arg;

	for (size_t i = 0; i < c->dc->l.n; i++) {
		struct dec *d = &c->d[i];

		if (d->known || d->out)
			continue;
		if (!started[i]) {
			d->out = 1;     /* not waited for in this round */
			continue;
		}
		if (!atomic_load(&u[i].finished))
			continue;
		if (u[i].rc) {
			/* declared dead while this peer waited: out; else
			 * (the deadline) unknown */
			if (atomic_load(&u[i].cancel) == 1)
				d->out = 1;
			continue;
		}
		if (dec_parse(d, u[i].val, u[i].len))
			d->out = 1;     /* no decision in it: not counted */
		else {
			d->rec = u[i].val;
			d->reclen = u[i].len;
			u[i].val = NULL;
		}
	}
	if (next_move(c) != MV_WAIT)
		return 1;
	/* (waiting for a record: those seen are looked at again, as their
	 * states change: a lock is seen while a member is still missing) */
	for (size_t i = 0; i < c->dc->l.n; i++)
		if (c->d[i].known)
			return spirt_xnow_ms() >= c->relook;
	return 0;
}

struct adopt {
	struct spirt_xdecide *dc;
	const void *agg, *excl;
	size_t agglen, excllen;
	char *round;
	size_t roundlen;
};

static int
adopt_txn(struct spirt_txn *t, void *arg)
{
	struct adopt *a = arg;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if ((rc = spirt_key_gagg(key, sizeof key, a->dc->l.step)) ||
	    (rc = spirt_store_put(t, key, a->agg, a->agglen, 0)))
		return rc;
	if ((rc = spirt_key_aggroot_excluded(key, sizeof key, "gagg",
	    a->dc->l.step)))
		return rc;
	if (a->excl)
		rc = spirt_store_put(t, key, a->excl, a->excllen, 0);
	else if ((rc = spirt_store_del(t, key)) == SPIRT_ENOTFOUND)
		rc = 0;
	if (rc || (rc = spirt_key_gagg_round(key, sizeof key, a->dc->l.step)))
		return rc;
	return spirt_store_put_bytes(t, key, a->round, a->roundlen,
	    a->dc->l.step, 0);
}

static int
key_gagg(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return spirt_key_gagg(buf, cap, step);
}

static int
key_gagg_excluded(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return spirt_key_aggroot_excluded(buf, cap, "gagg", step);
}

static int
key_gagg_round(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return spirt_key_gagg_round(buf, cap, step);
}

/* adopt(): peer i's set (ids, nids of them) and decision d become this
 * member's: who is in, who is out */
static void
adopt_set(struct spirt_xdecide *dc, size_t i, const struct dec *d,
    char (*ids)[SPIRT_QUORUM_ID], size_t nids)
{
	dc->self_out = 1;
	for (size_t k = 0; k < nids; k++)
		if (strcmp(ids[k], dc->self) == 0)
			dc->self_out = 0;
	dc->used = nids;
	for (size_t j = 0; j < dc->l.n; j++) {
		struct spirt_xpeer *p = &dc->l.peers[j];
		int in = 0;

		for (size_t k = 0; k < nids; k++)
			in |= strcmp(ids[k], p->id) == 0;
		if (in) {
			p->state = SPIRT_XP_USED;
			p->why[0] = '\0';
		} else if (p->state == SPIRT_XP_USED || p->state ==
		    SPIRT_XP_NONE) {
			spirt_xpeer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
			    "not in the step as more than half of the members "
			    "decided it (adopted from %s)", dc->l.peers[i].id);
		}
		p->ms = 0;
	}
	memcpy(dc->gagghash, d->hash, SPIRT_HASH_BYTES);
	snprintf(dc->adopted, sizeof dc->adopted, "%s", dc->l.peers[i].id);
}

/* take peer i's decision: its gagg/<t> (its hash checked), its
 * excluded list, and its set, as this member's, with the state given
 * (one transaction: an adopted decision is never without it); *soft:
 * the failure was peer i's (gone, or what it sent), not this store's */
static int
adopt(struct spirt_xdecide *dc, size_t i, const struct dec *d,
    const char *state, int *soft)
{
	struct spirt_xlink one = dc->l;
	struct spirt_xpull u, e;
	struct adopt a = { dc, NULL, NULL, 0, 0, NULL, 0 };
	char (*ids)[SPIRT_QUORUM_ID], *r = NULL;
	unsigned char h[SPIRT_HASH_BYTES];
	const void *b;
	size_t n, rn, nids = 0;
	double xms;
	int want = 1, rc;

	one.n = 1;
	one.peers = &dc->l.peers[i];
	*soft = 0;
	if ((ids = calloc(SPIRT_XMEMBERS, sizeof *ids)) == NULL)
		return ENOMEM;
	memset(&e, 0, sizeof e);
	if ((rc = spirt_xpull_all(&one, &u, key_gagg, NULL, &want)) ||
	    (rc = u.rc)) {
		*soft = rc == u.rc;
		say(dc, rc, "step %llu: gagg/%llu of %s, whose combination "
		    "this peer adopts: %s", ULL(dc->l.step), ULL(dc->l.step),
		    dc->l.peers[i].id, u.why[0] ? u.why : spirt_strerror(rc));
		goto out;
	}
	spirt_hash(h, u.val, u.len);
	if (memcmp(h, d->hash, SPIRT_HASH_BYTES)) {
		*soft = 1;
		rc = say(dc, SPIRT_EMAC, "step %llu: gagg/%llu of %s does not "
		    "hash as its round's record says", ULL(dc->l.step),
		    ULL(dc->l.step), dc->l.peers[i].id);
		goto out;
	}
	if ((rc = spirt_store_get_bytes(d->rec, d->reclen, &b, &n)) ||
	    (rc = spirt_quorum_round_parse(ids, SPIRT_XMEMBERS, &nids, &xms,
	    b, n))) {
		*soft = 1;
		say(dc, rc, "gagg/%llu/round of %s: not a round record",
		    ULL(dc->l.step), dc->l.peers[i].id);
		goto out;
	}
	if (spirt_xpull_all(&one, &e, key_gagg_excluded, NULL, &want) == 0 &&
	    e.rc == 0) {
		a.excl = e.val;
		a.excllen = e.len;
	}
	adopt_set(dc, i, d, ids, nids);
	a.agg = u.val;
	a.agglen = u.len;
	if ((r = round_text(dc, &rn)) == NULL)
		rc = ENOMEM;
	else if ((rc = spirt_xrec_with_state(&a.round, &a.roundlen, r, rn,
	    state)) == 0)
		rc = spirt_store_write(dc->l.store, adopt_txn, &a);
out:
	free(r);
	free(a.round);
	free(u.val);
	free(e.val);
	free(ids);
	return rc;
}

/* this member's decision: the hash of its gagg/<t>, and its record's
 * state= (*st) */
static int
own_decision(struct spirt_xdecide *dc, int *st)
{
	struct spirt_txn *t;
	struct dec d;
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	*st = 0;
	if ((rc = spirt_txn_begin(&t, dc->l.store, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_key_gagg(key, sizeof key, dc->l.step)) == 0 &&
	    (rc = spirt_store_get(t, key, &v, &len)) == 0)
		spirt_hash(dc->gagghash, v, len);
	if (rc == 0 && spirt_key_gagg_round(key, sizeof key, dc->l.step) == 0 &&
	    spirt_store_get(t, key, &v, &len) == 0 &&
	    dec_parse(&d, v, len) == 0)
		*st = d.st;
	spirt_txn_abort(t);
	return rc;
}

struct sst {
	struct spirt_xdecide *dc;
	const char *state;
};

/* its record's state= line, the one before replaced */
static int
state_txn(struct spirt_txn *t, void *arg)
{
	struct sst *a = arg;
	char key[SPIRT_KEY_MAX + 1], *r;
	const void *v, *b;
	size_t len, n, k;
	int rc;

	if ((rc = spirt_key_gagg_round(key, sizeof key, a->dc->l.step)) ||
	    (rc = spirt_store_get(t, key, &v, &len)) ||
	    (rc = spirt_store_get_bytes(v, len, &b, &n)) ||
	    (rc = spirt_xrec_with_state(&r, &k, b, n, a->state)))
		return rc;
	rc = spirt_store_put_bytes(t, key, r, k, a->dc->l.step, 0);
	free(r);
	return rc;
}

static int
set_state(struct spirt_xdecide *dc, const char *state)
{
	struct sst a = { dc, state };

	return spirt_store_write(dc->l.store, state_txn, &a);
}

/* the lowest id among this member and the members whose decision is
 * known: this one's? */
static int
lowest_known(const struct cfm *c)
{
	for (size_t i = 0; i < c->dc->l.n; i++)
		if (c->d[i].known &&
		    strcmp(c->dc->l.peers[i].id, c->dc->self) < 0)
			return 0;
	return 1;
}

/* this member's decision becomes c->pick's (-1: its own) with the state
 * given */
static int
take(struct cfm *c, const char *state, int *soft)
{
	*soft = 0;
	if (c->pick < 0)
		return set_state(c->dc, state);
	return adopt(c->dc, (size_t)c->pick, &c->d[c->pick], state, soft);
}

/* what spirt_xdecide_run does after a look: look again at once, or
 * after a nap, or end (the step applied, or no decision yet), or fail */
enum { GO_AGAIN, GO_LATER, GO_END, GO_FAIL };

/* the members this round waited for; in a round run again, those its
 * beats do not hold dead, nor joining at a later step (want); the
 * watcher's suspect threshold into *suspect */
static void
members(const struct spirt_xdecide *dc, const unsigned char *host,
    int *want, unsigned *suspect)
{
	for (size_t i = 0; i < dc->l.n; i++) {
		const struct spirt_xpeer *p = &dc->l.peers[i];
		uint64_t join;
		double age;
		int st = spirt_xpeer_health(dc->l.store, p->id, host, &age,
		    suspect, &join);

		if (p->asked >= 0)
			want[i] = p->asked;
		else
			want[i] = st != SPIRT_H_JOINING || join == dc->l.step;
	}
}

/* one look at the records of the members want names (they change; a
 * member out for its death is asked again: it may be back) */
static int
look(struct cfm *c, struct spirt_xpull *u, const int *want, int *ask)
{
	struct spirt_xdecide *dc = c->dc;
	int rc;

	for (size_t i = 0; i < dc->l.n; i++) {
		ask[i] = want[i];
		c->d[i].out = !want[i];
		c->d[i].known = 0;
		free(c->d[i].rec);
		c->d[i].rec = NULL;
		free(u[i].val);
		memset(&u[i], 0, sizeof u[i]);
	}
	c->relook = spirt_xnow_ms() + 200;
	if ((rc = spirt_xpull_until(&dc->l, u, key_gagg_round, NULL, ask,
	    cfm_enough, c, 0)))
		return rc;
	cfm_enough(c, u, ask);
	return 0;
}

/* lock c->pick (a decision more than half hold, or one locked) */
static int
lock(struct cfm *c, int *rc)
{
	int soft;

	if ((*rc = take(c, "lock", &soft)) && soft)
		return GO_LATER;        /* (its holder gone: look again) */
	if (*rc)
		return GO_FAIL;
	c->st = DEC_LOCK;
	return GO_AGAIN;
}

/* in doubt: say so; the lowest id among the members known, once they
 * all say doubt, locks the one most of them hold */
static int
doubt(struct cfm *c, int *rc)
{
	if (c->st < DEC_DOUBT) {
		if ((*rc = set_state(c->dc, "doubt")))
			return GO_FAIL;
		c->st = DEC_DOUBT;
	}
	if (!lowest_known(c))
		return GO_LATER;
	for (size_t i = 0; i < c->dc->l.n; i++)
		if (c->d[i].known && c->d[i].st == 0)
			return GO_LATER;
	best_pick(c, 0);
	return lock(c, rc);
}

/* take the move *mv the records say; seeing too few (the others out)
 * for fewms since *few ends the wait */
static int
move(struct cfm *c, int *mv, double *few, double fewms, int *rc)
{
	int soft;

	switch (*mv) {
	case MV_APPLY:
		if ((*rc = take(c, "decided", &soft)) == 0 || !soft)
			return GO_END;
		*mv = MV_WAIT;
		return GO_LATER;
	case MV_WAIT:
		return GO_LATER;        /* (a look again, or the deadline) */
	case MV_LOCK:
		return lock(c, rc);
	case MV_FEW:
		if (*few == 0)
			*few = spirt_xnow_ms();
		return spirt_xnow_ms() - *few >= fewms ? GO_END : GO_LATER;
	default:
		break;
	}
	*few = 0;
	return *mv == MV_AGAIN ? GO_LATER : doubt(c, rc);
}

/* the step is not applied: seeing too few (MV_FEW), or no decision
 * locked by more than half yet; says which */
static int
undecided(const struct cfm *c, int mv)
{
	const struct spirt_xdecide *dc = c->dc;
	char h[2 * SPIRT_HASH_BYTES + 1], who[600];
	size_t seen = 1;

	if (mv == MV_FEW) {
		for (size_t i = 0; i < dc->l.n; i++)
			seen += c->d[i].known;
		return say(c->dc, SPIRT_EBUSY, "step %llu: a minority decided: "
		    "this peer sees %zu of the %zu members' combinations, the "
		    "others out, and more than half are needed: this peer "
		    "stops (run it again once the others are back)",
		    ULL(dc->l.step), seen, dc->l.n + 1);
	}
	spirt_hash_hex(h, dc->gagghash);
	snprintf(who, sizeof who, "%s %.12s%s", dc->self, h,
	    c->st == DEC_LOCK ? " locked" : "");
	for (size_t i = 0; i < dc->l.n; i++) {
		size_t l = strlen(who);

		if (c->d[i].known)
			spirt_hash_hex(h, c->d[i].hash);
		snprintf(who + l, sizeof who - l, ", %s %.12s%s",
		    dc->l.peers[i].id, c->d[i].known ? h : c->d[i].out ?
		    "(out)" : "(none)", c->d[i].known &&
		    c->d[i].st == DEC_LOCK ? " locked" : "");
	}
	return say(c->dc, SPIRT_EBUSY, "step %llu: no combination is locked "
	    "by more than half of the %zu members yet (%s): this peer does "
	    "not apply the step (run it again once they have decided)",
	    ULL(dc->l.step), dc->l.n + 1, who);
}

/*
 * Apply step t only with a decision no other member can apply another
 * against (the comment above "struct dec"): applied elsewhere, locked by
 * more than half, or held by every member.  In doubt (every member known
 * or out, none with more than half, none locked) the lowest id among
 * this member and those it sees, once they all say doubt, locks the one
 * most of them hold (a tie: the lowest holder's); the others in doubt
 * see its lock and lock it too (docs/protocol.md, "The decision").
 */
int
spirt_xdecide_run(struct spirt_xdecide *dc)
{
	struct cfm c = { dc, NULL, 0, -1, 0 };
	unsigned char host[SPIRT_BEAT_BOOT];
	struct spirt_xpull *u;
	int *want, *ask, rc, mv = MV_WAIT, go;
	unsigned suspect = SPIRT_BEAT_SUSPECT * SPIRT_BEAT_MS;
	double t0 = spirt_xnow_ms(), few = 0, fewms;

	if (dc->l.n == 0)
		return 0;
	if ((rc = own_decision(dc, &c.st)))
		return say(dc, rc, "gagg/%llu: %s", ULL(dc->l.step),
		    spirt_strerror(rc));
	if (c.st == DEC_DONE)
		return 0;       /* decided before (a round run again) */
	u = calloc(dc->l.n, sizeof *u);
	want = calloc(dc->l.n, sizeof *want);
	ask = calloc(dc->l.n, sizeof *ask);
	c.d = calloc(dc->l.n, sizeof *c.d);
	if (u == NULL || want == NULL || ask == NULL || c.d == NULL) {
		rc = ENOMEM;
		goto out;
	}
	if ((rc = spirt_host_boot(host))) {
		rc = say(dc, rc, "the host's boot id: %s", spirt_strerror(rc));
		goto out;
	}
	members(dc, host, want, &suspect);
	/* seeing too few, the others out: they are waited for as a
	 * minority alive is (before the pulls), then it stops */
	fewms = 4.0 * suspect > 2000 ? 4.0 * suspect : 2000;
	for (;;) {
		if ((rc = look(&c, u, want, ask)))
			goto out;
		mv = next_move(&c);
		if ((go = move(&c, &mv, &few, fewms, &rc)) == GO_FAIL)
			goto out;
		if (go == GO_END)
			break;
		if (go == GO_AGAIN)
			continue;
		if (spirt_xnow_ms() - t0 >= dc->l.deadline_ms) {
			mv = MV_WAIT;
			break;
		}
		spirt_xnap(c.st >= DEC_LOCK ? 10 : 30);
	}
	if (mv != MV_APPLY)
		rc = undecided(&c, mv);         /* (applied: taken above) */
out:
	for (size_t i = 0; u && i < dc->l.n; i++)
		free(u[i].val);
	for (size_t i = 0; c.d && i < dc->l.n; i++)
		free(c.d[i].rec);
	free(c.d);
	free(u);
	free(want);
	free(ask);
	return rc;
}
