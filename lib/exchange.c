/* exchange.c - one round between peers: publish, pull, check, combine */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggstore.h"
#include "exchange.h"
#include "keys.h"
#include "lineage.h"
#include "quorum.h"
#include "tensor.h"
#include "xdecide.h"
#include "xpull.h"
#include "xquorum.h"
#include "xrec.h"

/* the message of a failure with code rc; returns rc */
#define say(x, rc, ...) spirt_msgf((x)->msg, sizeof (x)->msg, (rc), \
	__VA_ARGS__)

#define ULL(x) ((unsigned long long)(x))

void
spirt_exchange_link(struct spirt_xlink *l, const struct spirt_exchange *x,
    int cut)
{
	memset(l, 0, sizeof *l);
	l->peers = x->peers;
	l->n = x->n;
	l->step = x->step;
	l->deadline_ms = x->deadline_ms;
	l->timeout_ms = x->timeout_ms;
	l->cancelled = x->cancelled;
	l->drop = x->drop;
	l->beats = x->beats;
	l->store = x->store;
	if (cut && x->last) {
		l->cut.last = (const char (*)[SPIRT_QUORUM_ID])x->last;
		l->cut.nlast = x->nlast;
		l->cut.self = x->self;
		l->cut.min_peers = x->min_peers;
		l->cut.ms = x->straggler_ms;
	}
}

/* ---- set-up ---- */

void
spirt_exchange_init(struct spirt_exchange *x)
{
	memset(x, 0, sizeof *x);
	spirt_agg_defaults(&x->p);
	x->deadline_ms = 30000;
	x->timeout_ms = 10000;
	x->check = 1;
	x->check_parts = 1;
}

int
spirt_peers_parse(struct spirt_exchange *x, const char *text, size_t len,
    const struct spirt_xnet *net, size_t *line)
{
	return spirt_xpeers_parse(&x->peers, &x->n, x->self, text, len, net,
	    line);
}

void
spirt_exchange_free(struct spirt_exchange *x)
{
	spirt_xpeers_free(x->peers, x->n);
	x->peers = NULL;
	x->n = 0;
}

/* ---- the round ---- */

struct pub {
	struct spirt_exchange *x;
	int stage;              /* 0: publish, 1: digest and pulled aggs */
	const unsigned char *dg;
	size_t dglen;
};

/* --prune: the rounds before step - prune, spent (a peer a round behind
 * still finds the last one); each step then reuses the pages they free,
 * and the scratch environment stays a few rounds large */
static int
prune_spent(struct spirt_txn *t, const struct spirt_exchange *x)
{
	uint64_t below;
	int rc;

	if (x->prune == 0 || x->step < x->prune)
		return 0;
	below = x->step - x->prune;
	if ((rc = spirt_store_del_steps(t, SPIRT_KEY_XAGG_ROOT, below,
	    NULL)) || (rc = spirt_store_del_steps(t, SPIRT_KEY_GAGG_ROOT,
	    below, NULL)) || (rc = spirt_store_del_steps(t, "xslice/", below,
	    NULL)) || (rc = spirt_store_del_steps(t, "xpart/", below, NULL)))
		return rc;
	return x->keep_digests ? 0 : spirt_store_del_steps(t,
	    SPIRT_KEY_DIGEST_ROOT, below, NULL);
}

/* publish agg/<t> as xagg/<t>/<self> (model@t must be there); the
 * two are hashed after the commit, while the others pull (own_hashes).
 * What is published has its payload's checksum checked here, once: a
 * corrupt aggregate is never published, and the combination need not
 * check it again (combine) */
static int
publish(struct spirt_txn *t, void *arg)
{
	struct spirt_exchange *x = ((struct pub *)arg)->x;
	char key[SPIRT_KEY_MAX + 1], xkey[SPIRT_KEY_MAX + 1];
	struct spirt_tensor h;
	const void *v, *o, *pl;
	size_t len, olen;
	int rc;

	if ((rc = spirt_key_model(key, sizeof key, x->model, x->step)) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return spirt_msgrc(x->msg, sizeof x->msg, rc, "%s", key);
	if ((rc = spirt_key_xagg(xkey, sizeof xkey, x->step, x->self)) ||
	    (rc = prune_spent(t, x)))
		return rc;
	/* (there already: a rerun, or spirt-agg --publish wrote it) */
	if ((rc = spirt_store_get(t, xkey, &o, &olen)) == 0) {
		/* a rerun: published already.  agg/<t> may differ from it
		 * now (the data assignment changed between the two runs: a
		 * dead peer's shards spread over this peer's functions); the
		 * one published stands, since the others may hold it and a
		 * second aggregate for one step would be equivocation, so
		 * the one hashed and signed is xagg/<t>/<self>, always */
		if ((rc = spirt_tensor_decode(&h, &pl, o, olen, 1)))
			return spirt_msgrc(x->msg, sizeof x->msg, rc, "%s",
			    xkey);
		return 0;
	}
	if (rc != SPIRT_ENOTFOUND)
		return rc;
	if ((rc = spirt_key_aggroot(key, sizeof key, x->src, x->step)) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return spirt_msgrc(x->msg, sizeof x->msg, rc, "%s", key);
	if ((rc = spirt_tensor_decode(&h, &pl, v, len, 1)))
		return spirt_msgrc(x->msg, sizeof x->msg, rc, "%s", key);
	return spirt_store_put(t, xkey, v, len, SPIRT_PUT_NOOVERWRITE);
}

struct own_hashes {
	struct spirt_exchange *x;
	int rc;
	char key[SPIRT_KEY_MAX + 1];    /* the one that failed */
};

/* hash model@t (with mstate@t, if any) and what this peer published,
 * xagg/<t>/<self>, into x->modelhash and x->agghash (in a thread of its
 * own: the message, naming oh->key, is made by the caller) */
static void *
own_hashes_main(void *arg)
{
	struct own_hashes *oh = arg;
	struct spirt_exchange *x = oh->x;
	struct spirt_txn *t;
	const void *v;
	size_t len;

	snprintf(oh->key, sizeof oh->key, "a read of the store");
	if ((oh->rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY)))
		return NULL;
	if ((oh->rc = spirt_model_hash(x->modelhash, t, x->model, x->step,
	    oh->key, sizeof oh->key)))
		goto out;
	if ((oh->rc = spirt_key_xagg(oh->key, sizeof oh->key, x->step,
	    x->self)) || (oh->rc = spirt_store_get(t, oh->key, &v, &len)))
		goto out;
	spirt_hash(x->agghash, v, len);
out:
	spirt_txn_abort(t);
	return NULL;
}

/* the aggregates pulled are stored with keep_pulls, and with beats: a
 * peer that died mid-round and runs it again must not depend on members
 * that may have died too, or gone on and pruned the round (reload) */
static int
keeps_pulls(const struct spirt_exchange *x)
{
	return x->keep_pulls || x->beats;
}

/* our digest, and (keeps_pulls) the aggregates pulled; else they stay in
 * memory for the round, and a rerun pulls them again (reload) */
static int
record(struct spirt_txn *t, void *arg)
{
	struct pub *a = arg;
	struct spirt_exchange *x = a->x;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (p->state != SPIRT_XP_USED || !keeps_pulls(x))
			continue;
		if ((rc = spirt_key_xagg(key, sizeof key, x->step, p->id)))
			return rc;
		if ((rc = spirt_store_put(t, key, p->agg, p->agglen,
		    SPIRT_PUT_NOOVERWRITE)) && rc != SPIRT_EEXIST)
			return rc;
	}
	if ((rc = spirt_key_digest(key, sizeof key, x->step, x->self)))
		return rc;
	return spirt_store_put_bytes(t, key, a->dg, a->dglen, x->step,
	    SPIRT_PUT_NOOVERWRITE);
}

/* check a received aggregate against ours: a record of the same kind */
static int
agg_ok(struct spirt_exchange *x, struct spirt_xpeer *p,
    const struct spirt_tensor *mine)
{
	struct spirt_tensor h;
	const void *pl;
	int rc;

	if ((rc = spirt_tensor_decode(&h, &pl, p->agg, p->agglen, 1))) {
		spirt_xpeer_out(p, SPIRT_XP_REFUSED, rc, "its aggregate: %s",
		    spirt_strerror(rc));
		return 0;
	}
	if (h.dtype != SPIRT_F32 || h.nelem != mine->nelem ||
	    strcmp(h.name, mine->name) || h.step != x->step) {
		spirt_xpeer_out(p, SPIRT_XP_REFUSED, SPIRT_EDATA, "its "
		    "aggregate is not one of model \"%s\" for step %llu with "
		    "%llu values", mine->name, ULL(x->step), ULL(mine->nelem));
		return 0;
	}
	return 1;
}

/* what came from p (u) is its aggregate, checked against ours (agg_ok) */
static int
took(struct spirt_exchange *x, struct spirt_xpeer *p, struct spirt_xpull *u,
    const struct spirt_tensor *mine)
{
	p->agg = u->val;
	p->agglen = u->len;
	u->val = NULL;
	return agg_ok(x, p, mine);
}

/* the header of what we published, xagg/<t>/<self> (for agg_ok) */
static int
own_header(struct spirt_exchange *x, struct spirt_tensor *h)
{
	struct spirt_txn *t;
	char key[SPIRT_KEY_MAX + 1];
	const void *pl;
	int rc;

	if ((rc = spirt_key_xagg(key, sizeof key, x->step, x->self)) ||
	    (rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_store_get_tensor(t, key, h, &pl, 0)))
		spirt_msgrc(x->msg, sizeof x->msg, rc, "%s", key);
	spirt_txn_abort(t);
	return rc;
}

/* the aggregates our digest names that the store did not hold (want):
 * pulled again, each held to the hash the digest signed */
static int
repull(struct spirt_exchange *x, struct spirt_xpull *u, const int *want,
    const struct spirt_digest *d)
{
	struct spirt_tensor mine;
	struct spirt_xlink l;
	int rc;

	spirt_exchange_link(&l, x, 1);
	if ((rc = own_header(x, &mine)) || (rc = spirt_xpull_aggs(&l, u, want)))
		return rc;
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (u[i].rc)
			return say(x, SPIRT_EBUSY, "step %llu: run again, the "
			    "round needs %s's aggregate, which this peer's "
			    "digest names and its store does not keep "
			    "(--keep-pulls); pulled again: xagg/%llu/%s: %s",
			    ULL(x->step), p->id, ULL(x->step), p->id,
			    u[i].why[0] ? u[i].why : spirt_strerror(u[i].rc));
		if (!took(x, p, &u[i], &mine))
			return say(x, SPIRT_EDATA, "step %llu: xagg/%llu/%s "
			    "pulled again: %s", ULL(x->step), ULL(x->step),
			    p->id, p->why);
		if (memcmp(u[i].h, spirt_digest_hash_of(d, p->id),
		    SPIRT_HASH_BYTES))
			return say(x, SPIRT_EDATA, "step %llu: xagg/%llu/%s "
			    "pulled again is not the aggregate this peer's "
			    "digest signed it received", ULL(x->step),
			    ULL(x->step), p->id);
		memcpy(p->hash, u[i].h, SPIRT_HASH_BYTES);
		p->state = SPIRT_XP_USED;
	}
	return 0;
}

/* a rerun: our digest and the aggregates it lists, each held to the hash
 * it signed: from the store (keep_pulls), else pulled again (repull;
 * the others keep their rounds until --prune removes them) */
static int
reload(struct spirt_exchange *x, const void *dv, size_t dvlen,
    struct spirt_xpull *u, int *want)
{
	struct spirt_digest *d;
	struct spirt_txn *t;
	const void *b, *v;
	size_t n, len, again = 0;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if ((d = malloc(sizeof *d)) == NULL)
		return ENOMEM;
	if ((rc = spirt_store_get_bytes(dv, dvlen, &b, &n)) ||
	    (rc = spirt_digest_open(d, b, n))) {
		free(d);
		return say(x, rc, "digest/%llu/%s: %s", ULL(x->step), x->self,
		    spirt_strerror(rc));
	}
	if ((rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY))) {
		free(d);
		return rc;
	}
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];
		const unsigned char *h = spirt_digest_hash_of(d, p->id);

		want[i] = 0;
		if (h == NULL) {
			spirt_xpeer_out(p, SPIRT_XP_LATE, SPIRT_ENOTFOUND,
			    "not in this peer's digest of step %llu (an "
			    "earlier run of the round)", ULL(x->step));
			continue;
		}
		if ((rc = spirt_key_xagg(key, sizeof key, x->step, p->id)))
			break;
		if ((rc = spirt_store_get(t, key, &v, &len)) ==
		    SPIRT_ENOTFOUND) {
			want[i] = 1;
			again++;
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if ((p->agg = malloc(len ? len : 1)) == NULL) {
			rc = ENOMEM;
			break;
		}
		memcpy(p->agg, v, len);
		p->agglen = len;
		spirt_hash(p->hash, v, len);
		if (memcmp(p->hash, h, SPIRT_HASH_BYTES)) {
			rc = say(x, SPIRT_EDATA, "%s: not the aggregate this "
			    "peer's digest signed it received", key);
			break;
		}
		p->state = SPIRT_XP_USED;
	}
	spirt_txn_abort(t);
	if (rc == 0 && again)
		rc = repull(x, u, want, d);
	free(d);
	return rc;
}

/* a round signed before: this peer's own hashes, then what it holds */
static int
reload_hashed(struct spirt_exchange *x, const void *dv, size_t dvlen,
    struct spirt_xpull *u, int *want)
{
	struct own_hashes oh = { x, 0, "" };

	own_hashes_main(&oh);
	if (oh.rc)
		return spirt_msgrc(x->msg, sizeof x->msg, oh.rc, "%s", oh.key);
	return reload(x, dv, dvlen, u, want);
}

/* phase 1: what came from each peer wanted (u), checked, into its state
 * and the digest's entries (d->got, d->n of them) */
static void
received(struct spirt_exchange *x, struct spirt_xpull *u, const int *want,
    const struct spirt_tensor *mine, struct spirt_digest *d)
{
	size_t k = 0;

	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		p->ms = u[i].ms;
		if (u[i].rc) {
			spirt_xpeer_out(p, spirt_xpull_refusal(u[i].rc) ?
			    SPIRT_XP_REFUSED : SPIRT_XP_LATE, u[i].rc,
			    "xagg/%llu/%s: %s", ULL(x->step), p->id,
			    u[i].why[0] ? u[i].why : spirt_strerror(u[i].rc));
			if (p->state == SPIRT_XP_LATE &&
			    !atomic_load(&u[i].cancel))
				snprintf(p->why + strlen(p->why),
				    sizeof p->why - strlen(p->why),
				    " (no answer in %u ms)", x->deadline_ms);
			continue;
		}
		if (!took(x, p, &u[i], mine))
			continue;
		memcpy(p->hash, u[i].h, SPIRT_HASH_BYTES);
		p->state = SPIRT_XP_USED;
		snprintf(d->got[k].id, sizeof d->got[k].id, "%s", p->id);
		memcpy(d->got[k++].hash, p->hash, SPIRT_HASH_BYTES);
	}
	d->n = k;
}

void
spirt_exchange_digest_head(const struct spirt_exchange *x,
    struct spirt_digest *d)
{
	d->step = x->step;
	snprintf(d->run, sizeof d->run, "%s", x->run);
	snprintf(d->id, sizeof d->id, "%s", x->self);
	memcpy(d->agg, x->agghash, SPIRT_HASH_BYTES);
	memcpy(d->model, x->modelhash, SPIRT_HASH_BYTES);
	if ((d->has_token = x->token != NULL))
		memcpy(d->token, x->token, SPIRT_TOKEN_BYTES);
}

/* phase 1: this peer's digest of the step (d->got filled), signed and
 * stored with what record keeps */
static int
sign(struct spirt_exchange *x, struct spirt_digest *d)
{
	struct pub a = { x, 1, NULL, 0 };
	unsigned char *buf;
	int rc;

	spirt_exchange_digest_head(x, d);
	a.dglen = spirt_digest_size(d->n, d->has_token);
	if ((buf = malloc(a.dglen)) == NULL)
		return ENOMEM;
	if ((rc = spirt_digest_sign(buf, a.dglen, &a.dglen, d, x->key)) == 0) {
		a.dg = buf;
		/* volatile: no synced commit on the round's path
		 * (docs/protocol.md, "Signed digests") */
		rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, record,
		    &a);
	}
	free(buf);
	return rc;
}

/* phase 1: pull the aggregates; sign and store our digest */
static int
phase1(struct spirt_exchange *x, struct spirt_xpull *u, int *want)
{
	struct spirt_tensor mine;
	struct spirt_digest *d;
	struct own_hashes oh = { x, 0, "" };
	struct spirt_xlink l;
	pthread_t ohth;
	int rc, th;

	if ((rc = own_header(x, &mine)))
		return rc;
	/* (with beats, those declared dead are left out already) */
	for (size_t i = 0; i < x->n; i++)
		want[i] = x->peers[i].state == SPIRT_XP_NONE;
	/* this peer's own two hashes (for the digest) while the others'
	 * aggregates come: off the round's path, as publish no longer
	 * waits for them (one thread, or here if none can start) */
	if ((th = pthread_create(&ohth, NULL, own_hashes_main, &oh)) != 0)
		own_hashes_main(&oh);
	spirt_exchange_link(&l, x, 1);
	rc = spirt_xpull_aggs(&l, u, want);
	if (th == 0)
		pthread_join(ohth, NULL);
	if (rc == 0 && oh.rc)
		rc = spirt_msgrc(x->msg, sizeof x->msg, oh.rc, "%s", oh.key);
	if (rc)
		return rc;
	if ((d = calloc(1, sizeof *d)) == NULL)
		return ENOMEM;
	received(x, u, want, &mine, d);
	/* with beats, too few came (members died or restarted during the
	 * pulls): no digest is signed, so the round run again pulls anew
	 * (a digest is never signed twice: one that named too few would
	 * hold every later run of the step to it) */
	if (x->beats && d->n + 1 < x->min_peers)
		rc = say(x, SPIRT_EBUSY, "step %llu: %zu of %zu members' "
		    "aggregates came, --min-peers is %zu: no digest signed; "
		    "run it again", ULL(x->step), d->n + 1, x->n + 1,
		    x->min_peers);
	else
		rc = sign(x, d);
	free(d);
	return rc;
}

/* peer q says it got hash h from peer r, whose aggregate we have with
 * another hash: pull r's digest as q got it; two signatures are a proof */
static void
conflict(struct spirt_exchange *x, struct spirt_xpeer *q,
    struct spirt_xpeer *r)
{
	struct spirt_xlink one;
	struct spirt_xpull u;
	struct spirt_digest *d;
	const void *b;
	size_t n, l1, l2;
	int want = 1, rc;

	spirt_exchange_link(&one, x, 1);
	one.n = 1;
	one.peers = q;
	if (spirt_xpull_all(&one, &u, spirt_key_digest, r->id, &want) ||
	    u.rc) {
		spirt_xpeer_out(q, SPIRT_XP_REFUSED, SPIRT_EDATA, "says it "
		    "received another aggregate from %s, and does not show "
		    "%s's digest of it (%s)", r->id, r->id,
		    spirt_strerror(u.rc));
		free(u.val);
		return;
	}
	if ((d = malloc(sizeof *d)) == NULL) {
		free(u.val);
		return;
	}
	rc = spirt_store_get_bytes(u.val, u.len, &b, &n);
	if (rc == 0)
		rc = spirt_digest_verify(d, b, n, x->run, r->id, x->step,
		    x->trust, spirt_crypto_now());
	if (rc || !spirt_digest_conflict(d, &r->d)) {
		spirt_xpeer_out(q, SPIRT_XP_REFUSED, rc ? rc : SPIRT_EDATA,
		    "says it received another aggregate from %s, and shows no "
		    "digest by %s that says so%s%s", r->id, r->id,
		    rc ? ": " : "", rc ? spirt_strerror(rc) : "");
	} else {
		l1 = spirt_digest_format(NULL, 0, &r->d);
		l2 = spirt_digest_format(NULL, 0, d);
		free(r->proof);
		if ((r->proof = malloc(l1 + l2 + 128)) != NULL) {
			n = (size_t)snprintf(r->proof, 128, "# as %s received "
			    "it\n", x->self);
			n += spirt_digest_format(r->proof + n, l1 + 1, &r->d);
			n += (size_t)snprintf(r->proof + n, 128, "# as %s "
			    "received it\n", q->id);
			spirt_digest_format(r->proof + n, l2 + 1, d);
		}
		spirt_xpeer_out(r, SPIRT_XP_EQUIV, SPIRT_EMAC, "two digests "
		    "it signed for step %llu name different aggregates (one "
		    "to %s, one to %s)", ULL(x->step), x->self, q->id);
	}
	free(d);
	free(u.val);
}

/* store the digests pulled (others ask us for them in a conflict) */
struct dgput {
	struct spirt_exchange *x;
	struct spirt_xpull *u;
};

static int
store_digests(struct spirt_txn *t, void *arg)
{
	struct dgput *a = arg;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	for (size_t i = 0; i < a->x->n; i++) {
		if (a->u[i].rc || a->u[i].val == NULL)
			continue;
		if ((rc = spirt_key_digest(key, sizeof key, a->x->step,
		    a->x->peers[i].id)))
			return rc;
		/* as it came: a record; a peer that sent garbage is refused
		 * below and its value is not kept */
		if (!a->x->peers[i].has_digest)
			continue;
		rc = spirt_store_put(t, key, a->u[i].val, a->u[i].len,
		    SPIRT_PUT_NOOVERWRITE);
		if (rc && rc != SPIRT_EEXIST)
			return rc;
	}
	return 0;
}

/* phase 2: pull the digests, store them, check them */
static int
phase2(struct spirt_exchange *x, struct spirt_xpull *u, int *want)
{
	struct dgput a = { x, u };
	struct spirt_xlink l;
	const void *b;
	size_t n;
	int rc;

	for (size_t i = 0; i < x->n; i++)
		want[i] = x->peers[i].state == SPIRT_XP_USED;
	/* no straggler is cut here: this peer signed that it received
	 * their aggregates, so the members count them in unless they see
	 * their digests; a peer declared dead is still given up */
	spirt_exchange_link(&l, x, 0);
	if ((rc = spirt_xpull_all(&l, u, spirt_key_digest, NULL, want)))
		return rc;
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (u[i].rc) {
			int ref = spirt_xpull_refusal(u[i].rc);

			spirt_xpeer_out(p, ref ? SPIRT_XP_REFUSED :
			    SPIRT_XP_LATE, u[i].rc, "digest/%llu/%s: %s%s",
			    ULL(x->step), p->id, u[i].why[0] ? u[i].why :
			    spirt_strerror(u[i].rc), ref ? "" :
			    " (no digest before the deadline)");
			continue;
		}
		if ((rc = spirt_store_get_bytes(u[i].val, u[i].len, &b, &n)) ||
		    (rc = spirt_digest_verify(&p->d, b, n, x->run, p->id,
		    x->step, x->trust, spirt_crypto_now()))) {
			spirt_xpeer_out(p, SPIRT_XP_REFUSED, rc,
			    "digest/%llu/%s: %s", ULL(x->step), p->id,
			    spirt_strerror(rc));
			continue;
		}
		p->has_digest = 1;
		if (memcmp(p->d.agg, p->hash, SPIRT_HASH_BYTES)) {
			spirt_xpeer_out(p, SPIRT_XP_REFUSED, SPIRT_EMAC, "its "
			    "digest does not sign the aggregate it sent");
			continue;
		}
	}
	rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, store_digests,
	    &a);
	for (size_t i = 0; i < x->n; i++) {
		free(u[i].val);
		u[i].val = NULL;
	}
	return rc;
}

/* what each peer says it got from the others, against what we got */
static void
crosscheck(struct spirt_exchange *x)
{
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *q = &x->peers[i];

		if (q->state != SPIRT_XP_USED)
			continue;
		for (size_t e = 0; e < q->d.n; e++) {
			const struct spirt_digest_entry *g = &q->d.got[e];

			if (strcmp(g->id, x->self) == 0) {
				if (memcmp(g->hash, x->agghash,
				    SPIRT_HASH_BYTES))
					spirt_xpeer_out(q, SPIRT_XP_REFUSED,
					    SPIRT_EDATA, "says it received "
					    "from %s an aggregate %s did not "
					    "publish", x->self, x->self);
				continue;
			}
			for (size_t j = 0; j < x->n; j++) {
				struct spirt_xpeer *r = &x->peers[j];

				if (strcmp(r->id, g->id) || !r->has_digest ||
				    r->state == SPIRT_XP_EQUIV ||
				    !memcmp(g->hash, r->hash,
				    SPIRT_HASH_BYTES))
					continue;
				conflict(x, q, r);
			}
		}
	}
}

/* model@t: the majority's hash; we stop if ours is not it */
static int
models(struct spirt_exchange *x)
{
	size_t same = 1, best = 0, k;
	const unsigned char *bh = NULL;
	char other[400] = "";

	for (size_t i = 0; i < x->n; i++)
		if (x->peers[i].state == SPIRT_XP_USED &&
		    !memcmp(x->peers[i].d.model, x->modelhash,
		    SPIRT_HASH_BYTES))
			same++;
	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *p = &x->peers[i];

		if (p->state != SPIRT_XP_USED ||
		    !memcmp(p->d.model, x->modelhash, SPIRT_HASH_BYTES))
			continue;
		k = 0;
		for (size_t j = 0; j < x->n; j++)
			if (x->peers[j].state == SPIRT_XP_USED &&
			    !memcmp(x->peers[j].d.model, p->d.model,
			    SPIRT_HASH_BYTES))
				k++;
		if (k > best) {
			best = k;
			bh = p->d.model;
		}
		if (strlen(other) + strlen(p->id) + 2 < sizeof other) {
			if (other[0])
				strcat(other, ",");
			strcat(other, p->id);
		}
	}
	if (bh != NULL && best >= same) {
		char a[2 * SPIRT_HASH_BYTES + 1], b[sizeof a];

		spirt_hash_hex(a, x->modelhash);
		spirt_hash_hex(b, bh);
		return say(x, SPIRT_EMODEL, "model/%s@%llu: this peer's model "
		    "(hash %.16s...) differs from %zu peer(s)' (%.16s..., "
		    "held by %s): it stops", x->model, ULL(x->step), a, best,
		    b, other);
	}
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (p->state == SPIRT_XP_USED &&
		    memcmp(p->d.model, x->modelhash, SPIRT_HASH_BYTES))
			spirt_xpeer_out(p, SPIRT_XP_MODEL, SPIRT_EMODEL, "its "
			    "model/%s@%llu differs from this peer's and the "
			    "majority's", x->model, ULL(x->step));
	}
	return 0;
}

struct comb {
	struct spirt_exchange *x;
	struct spirt_aggset *s;
	char **keys;
	struct spirt_aggval *vals;      /* the pulled ones, in memory */
	size_t nkeys;
	char *round;
	size_t roundlen;
};

/* the round's record: who was in, who was not and why (lib/xrec.h) */
static char *
round_text(const struct spirt_exchange *x, size_t *len)
{
	struct spirt_xrec r = {
		.step = x->step, .rule = spirt_agg_rule_name(x->p.rule),
		.self = x->self, .self_out = x->self_out, .peers = x->peers,
		.n = x->n, .beats = x->beats, .reused = x->reused,
		.adopted = x->adopted, .gagghash = x->gagghash
	};

	return spirt_xrec_round(&r, len);
}

static int
combine_txn(struct spirt_txn *t, void *arg)
{
	struct comb *c = arg;
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	if ((rc = spirt_agg_store_step(c->s, t, c->keys, c->nkeys)))
		return rc;
	/* the decision (with beats: docs/protocol.md, "The decision"), in
	 * the round's record: what it combined, hashed; without beats no
	 * one reads it, and the models' digests say the same a step on */
	if (c->x->beats) {
		if ((rc = spirt_key_gagg(key, sizeof key, c->x->step)) ||
		    (rc = spirt_store_get(t, key, &v, &len)))
			return rc;
		spirt_hash(c->x->gagghash, v, len);
	}
	free(c->round);
	if ((c->round = round_text(c->x, &c->roundlen)) == NULL)
		return ENOMEM;
	if ((rc = spirt_key_gagg_round(key, sizeof key, c->x->step)))
		return rc;
	return spirt_store_put_bytes(t, key, c->round, c->roundlen, c->x->step,
	    SPIRT_PUT_NOOVERWRITE);
}

static int
byid(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 64, *(char *const *)b + 64);
}

/* combine(): the keys of the aggregates combined, in peer id order (each
 * key buffer: the key at 0, the peer id at 64, to sort), and the others'
 * values from memory, where they came (none stored without keep_pulls);
 * this peer's is read from the store */
static int
combine_keys(const struct spirt_exchange *x, struct comb *c)
{
	for (size_t i = 0, k = 0; i <= x->n; i++) {
		const char *id = i == x->n ? x->self : x->peers[i].id;
		int rc;

		if (i < x->n && x->peers[i].state != SPIRT_XP_USED)
			continue;
		if (i == x->n && x->self_out)
			continue;
		if ((c->keys[k] = malloc(64 + SPIRT_ID_MAX + 1)) == NULL)
			return ENOMEM;
		if ((rc = spirt_key_xagg(c->keys[k], 64, x->step, id))) {
			free(c->keys[k]);
			return rc;
		}
		snprintf(c->keys[k] + 64, SPIRT_ID_MAX + 1, "%s", id);
		c->nkeys = ++k;
	}
	qsort(c->keys, c->nkeys, sizeof *c->keys, byid);
	for (size_t k = 0; k < c->nkeys; k++)
		for (size_t i = 0; i < x->n; i++) {
			const struct spirt_xpeer *p = &x->peers[i];

			if (p->state == SPIRT_XP_USED && p->agg &&
			    strcmp(p->id, c->keys[k] + 64) == 0) {
				c->vals[k].v = p->agg;
				c->vals[k].len = p->agglen;
				break;
			}
		}
	return 0;
}

/* the combination of the round into gagg/<t>.  checked: the inputs'
 * checksums were checked this round already (publish checked ours;
 * agg_ok each pulled one, in memory, before record stored it), so
 * they are not checked again as they are read; 0 when a rerun took
 * them from the store (reload) */
static int
combine(struct spirt_exchange *x, int checked)
{
	struct comb c = { x, NULL, NULL, NULL, 0, NULL, 0 };
	char own[SPIRT_KEY_MAX + 1];
	size_t m = !x->self_out;
	int rc;

	for (size_t i = 0; i < x->n; i++)
		m += x->peers[i].state == SPIRT_XP_USED;
	x->used = m;
	if (m < x->min_peers)
		return say(x, SPIRT_EBUSY, "step %llu: %zu of %zu members' "
		    "aggregates, --min-peers is %zu", ULL(x->step), m, x->n + 1,
		    x->min_peers);
	if ((c.keys = calloc(m, sizeof *c.keys)) == NULL ||
	    (c.vals = calloc(m, sizeof *c.vals)) == NULL ||
	    (c.s = malloc(sizeof *c.s)) == NULL) {
		free(c.keys);
		free(c.vals);
		return ENOMEM;
	}
	spirt_aggset_init(c.s);
	if ((rc = combine_keys(x, &c)) == 0) {
		c.s->vals = c.vals;
		c.s->p = x->p;
		c.s->step = x->step;
		c.s->verify = 1;
		c.s->keys_checked = checked;
		c.s->out = "gagg";
		c.s->seq_origin = 1;
		/* self-centred: each peer clips the others around its own */
		if (x->p.rule == SPIRT_AGG_SCCLIP &&
		    (rc = spirt_key_xagg(own, sizeof own, x->step, x->self)) ==
		    0)
			c.s->center_key = own;
	}
	if (rc == 0 && (rc = spirt_store_write(x->store, combine_txn, &c)) &&
	    c.s->msg[0])
		say(x, rc, "%s", c.s->msg);
	spirt_aggset_reset(c.s);
	for (size_t k = 0; k < c.nkeys; k++)
		free(c.keys[k]);
	free(c.keys);
	free(c.vals);
	free(c.s);
	free(c.round);
	return rc;
}

/* follow(): what it pulled, into the store as the round's other pulls */
struct fput {
	struct spirt_exchange *x;
	const int *want;
	struct spirt_xpull *dg;
};

static int
follow_put(struct spirt_txn *t, void *arg)
{
	struct fput *a = arg;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	for (size_t i = 0; i < a->x->n; i++) {
		struct spirt_xpeer *p = &a->x->peers[i];

		if (!a->want[i] || p->state != SPIRT_XP_USED)
			continue;
		if (keeps_pulls(a->x) &&
		    ((rc = spirt_key_xagg(key, sizeof key, a->x->step,
		    p->id)) || ((rc = spirt_store_put(t, key, p->agg,
		    p->agglen, SPIRT_PUT_NOOVERWRITE)) && rc != SPIRT_EEXIST)))
			return rc;
		if ((rc = spirt_key_digest(key, sizeof key, a->x->step,
		    p->id)) || ((rc = spirt_store_put(t, key, a->dg[i].val,
		    a->dg[i].len, SPIRT_PUT_NOOVERWRITE)) && rc != SPIRT_EEXIST))
			return rc;
	}
	return 0;
}

/* follow(): the members it did not use that a member it used says it
 * received; how many */
static size_t
follow_wanted(const struct spirt_exchange *x, int *want)
{
	size_t n = 0;

	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *q = &x->peers[i];

		if (q->state != SPIRT_XP_USED || !q->has_digest)
			continue;
		for (size_t j = 0; j < x->n; j++) {
			const struct spirt_xpeer *r = &x->peers[j];

			if (r->state == SPIRT_XP_LATE && !want[j] &&
			    spirt_digest_hash_of(&q->d, r->id) != NULL) {
				want[j] = 1;
				n++;
			}
		}
	}
	return n;
}

/* follow(): the aggregates pulled, each checked as in the round */
static int
follow_aggs(struct spirt_exchange *x, struct spirt_xpull *u,
    const int *want, const struct spirt_tensor *mine)
{
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (u[i].rc)
			return say(x, SPIRT_EBUSY, "step %llu: the members "
			    "left this peer out, and combined %s's aggregate, "
			    "which it does not have: xagg/%llu/%s: %s",
			    ULL(x->step), p->id, ULL(x->step), p->id,
			    u[i].why[0] ? u[i].why : spirt_strerror(u[i].rc));
		p->ms = u[i].ms;
		if (!took(x, p, &u[i], mine))
			return say(x, SPIRT_EBUSY, "step %llu: the members "
			    "left this peer out, and combined %s's aggregate, "
			    "which it refuses: %s", ULL(x->step), p->id,
			    p->why);
		memcpy(p->hash, u[i].h, SPIRT_HASH_BYTES);
	}
	return 0;
}

/* follow(): the digests pulled, each checked as in the round */
static int
follow_digests(struct spirt_exchange *x, struct spirt_xpull *v,
    const int *want)
{
	const void *b;
	size_t len;

	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (v[i].rc || spirt_store_get_bytes(v[i].val, v[i].len, &b,
		    &len) || spirt_digest_verify(&p->d, b, len, x->run, p->id,
		    x->step, x->trust, spirt_crypto_now()) ||
		    memcmp(p->d.agg, p->hash, SPIRT_HASH_BYTES))
			return say(x, SPIRT_EBUSY, "step %llu: the members "
			    "left this peer out, and combined %s's aggregate, "
			    "whose digest it cannot have or check: "
			    "digest/%llu/%s%s%s", ULL(x->step), p->id,
			    ULL(x->step), p->id, v[i].rc ? ": " : "",
			    v[i].rc ? (v[i].why[0] ? v[i].why :
			    spirt_strerror(v[i].rc)) : "");
		p->has_digest = 1;
		p->state = SPIRT_XP_USED;
	}
	return 0;
}

/*
 * A peer that the members left out of the step (self_out) combines what
 * they combined: every member that a member it used says it received.
 * One it did not use itself (it cut it as a straggler: it was stopped,
 * or slow, while the others went on) is pulled now, aggregate then
 * digest, to the round's deadline and with no straggler cut, and checked
 * as in the round; else this peer's gagg/<t> would not be theirs, and
 * its model would go its own way.  *n: how many were pulled.  Returns 0,
 * or SPIRT_EBUSY when one of them cannot be had.
 */
static int
follow(struct spirt_exchange *x, size_t *n)
{
	struct spirt_tensor mine;
	struct spirt_xpull *u = NULL, *v = NULL;
	struct fput a = { x, NULL, NULL };
	struct spirt_xlink l;
	int *want, rc = 0;

	if ((want = calloc(x->n ? x->n : 1, sizeof *want)) == NULL) {
		*n = 0;
		return ENOMEM;
	}
	if ((*n = follow_wanted(x, want)) == 0)
		goto out;
	if ((rc = own_header(x, &mine)))
		goto out;
	if ((u = calloc(x->n, sizeof *u)) == NULL ||
	    (v = calloc(x->n, sizeof *v)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	spirt_exchange_link(&l, x, 0);  /* no straggler cut */
	for (size_t i = 0; i < x->n; i++)
		if (want[i])
			spirt_xpeer_reset(&x->peers[i]);
	if ((rc = spirt_xpull_aggs(&l, u, want)) ||
	    (rc = follow_aggs(x, u, want, &mine)) ||
	    (rc = spirt_xpull_all(&l, v, spirt_key_digest, NULL, want)) ||
	    (rc = follow_digests(x, v, want)))
		goto out;
	a.want = want;
	a.dg = v;
	rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, follow_put, &a);
out:
	for (size_t i = 0; i < x->n; i++) {
		if (u)
			free(u[i].val);
		if (v)
			free(v[i].val);
	}
	free(u);
	free(v);
	free(want);
	return rc;
}

/* the decision (lib/xdecide.h): this member's, or one adopted */
static int
confirm(struct spirt_exchange *x)
{
	struct spirt_xdecide *dc;
	int rc;

	if ((dc = calloc(1, sizeof *dc)) == NULL)
		return ENOMEM;
	spirt_exchange_link(&dc->l, x, 0);
	dc->self = x->self;
	dc->rule = spirt_agg_rule_name(x->p.rule);
	dc->reused = x->reused;
	memcpy(dc->gagghash, x->gagghash, sizeof dc->gagghash);
	dc->self_out = x->self_out;
	dc->used = x->used;
	memcpy(dc->adopted, x->adopted, sizeof dc->adopted);
	memcpy(dc->msg, x->msg, sizeof dc->msg);
	rc = spirt_xdecide_run(dc);
	memcpy(x->gagghash, dc->gagghash, sizeof x->gagghash);
	x->self_out = dc->self_out;
	x->used = dc->used;
	memcpy(x->adopted, dc->adopted, sizeof x->adopted);
	memcpy(x->msg, dc->msg, sizeof x->msg);
	free(dc);
	return rc;
}

/* gagg/<t> there already, and our digest if any (a rerun) */
static int
before(struct spirt_exchange *x, void **dg, size_t *dglen)
{
	struct spirt_txn *t;
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	*dg = NULL;
	if ((rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_key_gagg(key, sizeof key, x->step)) == 0 &&
	    spirt_store_get(t, key, &v, &len) == 0)
		x->done = 1;
	if (rc == 0 && !x->done && (rc = spirt_key_digest(key, sizeof key,
	    x->step, x->self)) == 0 && spirt_store_get(t, key, &v, &len) == 0) {
		if ((*dg = malloc(len)) == NULL)
			rc = ENOMEM;
		else
			memcpy(*dg, v, len);
		*dglen = len;
	}
	spirt_txn_abort(t);
	return rc;
}

/* what the last round said of each peer goes; its handle stays */
static void
round_reset(struct spirt_exchange *x)
{
	for (size_t i = 0; i < x->n; i++) {
		spirt_xpeer_reset(&x->peers[i]);
		x->peers[i].asked = -1;
	}
}

/* the quorum before the pulls (lib/xquorum.h): those not alive out, the
 * stragglers cut once the round has its quorum (x->last) */
static int
quorum_before(struct spirt_exchange *x, struct spirt_xquorum *q)
{
	int rc;

	q->store = x->store;
	q->self = x->self;
	q->step = x->step;
	q->peers = x->peers;
	q->n = x->n;
	q->min_peers = x->min_peers;
	q->deadline_ms = x->deadline_ms;
	q->cancelled = x->cancelled;
	q->reused = x->reused;
	memcpy(q->msg, x->msg, sizeof q->msg);
	rc = spirt_xquorum_before(q);
	x->reused = q->reused;
	x->nlast = q->nlast;
	memcpy(x->msg, q->msg, sizeof x->msg);
	if (rc)
		return rc;
	x->last = q->cut ? q->ids : NULL;
	x->straggler_ms = q->straggler_ms;
	/* (the members waited for: their decisions count) */
	for (size_t i = 0; i < x->n; i++)
		x->peers[i].asked = x->peers[i].state == SPIRT_XP_NONE;
	return 0;
}

/* with beats: all or nothing, and more than half of the last round's
 * members delivered */
static int
all_or_nothing(struct spirt_exchange *x, struct spirt_xquorum *q)
{
	size_t nf = 0;
	int rc = 0;

	spirt_xquorum_agree(x->peers, x->n, x->self, &x->self_out);
	/* out of the step: what the members combined, all of it */
	if (x->self_out && (rc = follow(x, &nf)) == 0 && nf) {
		if (x->p.rule != SPIRT_AGG_SCCLIP)
			rc = models(x);
		spirt_xquorum_agree(x->peers, x->n, x->self, &x->self_out);
	}
	if (rc)
		return rc;
	memcpy(q->msg, x->msg, sizeof q->msg);
	rc = spirt_xquorum_delivered(q, x->self_out);
	x->reused = q->reused;
	memcpy(x->msg, q->msg, sizeof x->msg);
	return rc;
}

/* the aggregates, this peer's digest and the others' (a rerun: what its
 * digest names), each checked */
static int
pull_and_check(struct spirt_exchange *x, const void *dg, size_t dglen)
{
	struct spirt_xpull *u;
	int *want, rc;

	u = calloc(x->n ? x->n : 1, sizeof *u);
	want = calloc(x->n ? x->n : 1, sizeof *want);
	if (u == NULL || want == NULL) {
		rc = ENOMEM;
	} else {
		rc = dg ? reload_hashed(x, dg, dglen, u, want) :
		    phase1(x, u, want);
		if (rc == 0)
			rc = phase2(x, u, want);
	}
	for (size_t i = 0; u && i < x->n; i++)
		free(u[i].val);
	free(u);
	free(want);
	if (rc)
		return rc;
	crosscheck(x);
	/* under scclip each peer's model is its own (exchange.h) */
	return x->p.rule != SPIRT_AGG_SCCLIP ? models(x) : 0;
}

int
spirt_exchange_run(struct spirt_exchange *x)
{
	struct pub a = { x, 0, NULL, 0 };
	struct spirt_xquorum *q = NULL;
	void *dg = NULL;
	size_t dglen = 0;
	int rc;
	double t0 = spirt_xnow_ms();

	x->msg[0] = '\0';
	x->done = 0;
	x->used = 0;
	x->self_out = 0;
	x->adopted[0] = '\0';
	x->last = NULL;
	x->straggler_ms = 0;
	round_reset(x);
	if (!spirt_id_valid(x->self) || !spirt_id_valid(x->run) ||
	    x->model == NULL)
		return say(x, SPIRT_EINVAL, "no valid id, run or model");
	if ((rc = before(x, &dg, &dglen)))
		return rc;
	if (x->done) {
		/* (decided before: applied only once more than half hold it) */
		if (x->beats && x->p.rule != SPIRT_AGG_SCCLIP)
			rc = confirm(x);
		x->ms = spirt_xnow_ms() - t0;
		return rc;
	}
	if ((rc = spirt_store_write(x->store, publish, &a)))
		goto out;
	if (x->parts) {
		rc = x->round ? x->round(x) : say(x, SPIRT_EBUG, "--parts "
		    "without its round");
		goto out;
	}
	if ((q = calloc(1, sizeof *q)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	if (x->beats && !dg && (rc = quorum_before(x, q)))
		goto out;
	rc = pull_and_check(x, dg, dglen);
	if (rc == 0 && x->beats && !dg)
		rc = all_or_nothing(x, q);
	if (rc == 0)
		rc = combine(x, dg == NULL);
	/* under scclip each peer's combination is its own */
	if (rc == 0 && x->beats && x->p.rule != SPIRT_AGG_SCCLIP)
		rc = confirm(x);
out:
	x->last = NULL;
	free(q);
	free(dg);
	x->ms = spirt_xnow_ms() - t0;
	return rc;
}
