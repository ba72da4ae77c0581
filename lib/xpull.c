/* xpull.c - pulls from the members: one thread each, one deadline */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "beat.h"
#include "io.h"
#include "remote.h"
#include "xpull.h"

double
spirt_xnow_ms(void)
{
	return 1e3 * spirt_clock();
}

int
spirt_xpull_refusal(int rc)
{
	switch (rc) {
	case SPIRT_EMAC: case SPIRT_EREPLAY: case SPIRT_ESTALE:
	case SPIRT_EEXPIRED: case SPIRT_EUNKNOWNKEY: case SPIRT_ERUN:
	case SPIRT_EROLE: case SPIRT_EADDR: case SPIRT_EWRONGKEY:
	case SPIRT_ESTEP: case SPIRT_EKEYPERM: case SPIRT_EKEYFILE:
	case SPIRT_EURL: case ENOMEM: case EINTR:
		return 1;
	default:
		return 0;
	}
}

/* a phase's pulls tell its watcher each time one of them finishes (the
 * watcher then looks at once, not at its next nap: a 20 ms nap a phase
 * was 60 ms of a --beat step, three phases, whatever the model) */
struct spirt_xwake {
	pthread_mutex_t m;
	pthread_cond_t c;       /* on CLOCK_MONOTONIC */
	unsigned n;             /* pulls finished */
};

/* the pull was given up (its peer declared dead, or cut as a straggler):
 * a transfer under way stops at once (a death cancels the transfers in
 * flight), not at the round's deadline */
static int
pull_aborted(void *arg)
{
	return atomic_load(&((struct spirt_xpull *)arg)->cancel) != 0;
}

void
spirt_xnap(double ms)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ms / 1e3);
	ts.tv_nsec = (long)((ms - 1e3 * (double)ts.tv_sec) * 1e6);
	nanosleep(&ts, NULL);
}

/* a request's deadline: what it may wait, plus timeout_ms, within left */
static unsigned
bound(double left, unsigned wait, unsigned timeout_ms)
{
	double t = (double)wait + timeout_ms;

	return t < left ? (unsigned)t : (unsigned)left + 1;
}

/* the test hook l->drop names this pull: "KEY@ID" among its words */
static int
dropped(const struct spirt_xpull *u)
{
	const char *d = u->l->drop;
	size_t kl = strlen(u->key), il = strlen(u->p->id);

	while (d && *d) {
		size_t n;

		d += strspn(d, " \t\n");
		n = strcspn(d, " \t\n");
		if (n == kl + 1 + il && memcmp(d, u->key, kl) == 0 &&
		    d[kl] == '@' && memcmp(d + kl + 1, u->p->id, il) == 0)
			return 1;
		d += n;
	}
	return 0;
}

/* the pull is over before its answer: given up (its peer declared dead,
 * or cut as a straggler), or the round stopped; says why */
static int
pull_stopped(struct spirt_xpull *u)
{
	if (atomic_load(&u->cancel)) {
		u->rc = SPIRT_ETIMEDOUT;
		if (atomic_load(&u->cancel) == 1)
			snprintf(u->why, sizeof u->why, "given up: declared "
			    "dead while the round waited for it");
		else
			snprintf(u->why, sizeof u->why, "a straggler: no "
			    "answer in %u ms (about twice the last round's "
			    "time), and the round had its quorum without it",
			    u->l->cut.ms);
		return 1;
	}
	if (u->l->cancelled && u->l->cancelled()) {
		u->rc = EINTR;
		snprintf(u->why, sizeof u->why, "stopped");
		return 1;
	}
	return 0;
}

/* the peer's handle (its session) is kept for every later pull */
static int
pull_open(struct spirt_xpull *u, double left)
{
	struct spirt_xpeer *p = u->p;
	const struct spirt_xnet *net = p->net;
	int rc;

	rc = net->open(&p->h, u->url, net->arg, bound(left, 0,
	    u->l->timeout_ms));
	if (rc)
		p->h = NULL;
	else if (net->cancel && u->l->cancelled)
		net->cancel(p->h, u->l->cancelled);
	if (rc == 0 && net->giveup)
		net->giveup(p->h, pull_aborted, u);
	return rc;
}

/* ask once: waited for on the other side, to the deadline (less a
 * margin for the answer to come); the whole request bounded by what is
 * left */
static int
pull_ask(struct spirt_xpull *u, double left)
{
	struct spirt_xpeer *p = u->p;
	const struct spirt_xnet *net = p->net;
	double asked;
	unsigned wait;
	int rc;

	wait = net->wait && !p->nowait && left > 20 ?
	    (unsigned)(left - (left > 400 ? 200 : left / 2)) : 0;
	if (wait > SPIRT_WAIT_MAX_MS)
		wait = SPIRT_WAIT_MAX_MS;       /* again after */
	/* (beats: back often enough to give up on a peer declared dead,
	 * or cut as a straggler) */
	if (u->l->beats && wait > 250)
		wait = 250;
	if (net->timeout)
		net->timeout(p->h, bound(left, wait, u->l->timeout_ms));
	if (net->giveup)
		net->giveup(p->h, pull_aborted, u);
	asked = spirt_xnow_ms();
	rc = wait ? net->wait(p->h, u->l->step, u->key, wait, &u->val,
	    &u->len) : net->get(p->h, u->l->step, u->key, &u->val, &u->len);
	/* a server that does not wait answers at once: ask it again after
	 * a nap, as before */
	if (wait && rc == SPIRT_ENOTFOUND && wait > 100 &&
	    spirt_xnow_ms() - asked < wait / 2.0)
		p->nowait = 1;
	return rc;
}

/* the pull is over: its time, its value hashed (here, each pull's in
 * its own thread, at once: not one after another once the last has
 * come), and its watcher told */
static void
pull_done(struct spirt_xpull *u, double t0)
{
	struct spirt_xpeer *p = u->p;

	/* (the handle outlives this pull: it asks it no more) */
	if (p->h && p->net->giveup)
		p->net->giveup(p->h, NULL, NULL);
	u->ms = spirt_xnow_ms() - t0;
	if (u->rc == 0 && u->hash)
		spirt_hash(u->h, u->val, u->len);
	atomic_store(&u->finished, 1);
	if (u->wake) {
		pthread_mutex_lock(&u->wake->m);
		u->wake->n++;
		pthread_cond_signal(&u->wake->c);
		pthread_mutex_unlock(&u->wake->m);
	}
}

/* one pull, asked again while its key is not there yet, to its end */
static void *
pull_main(void *arg)
{
	struct spirt_xpull *u = arg;
	struct spirt_xpeer *p = u->p;
	const struct spirt_xnet *net = p->net;
	double t0 = spirt_xnow_ms(), nap_ms = 2, left;
	int rc;

	u->rc = SPIRT_ENOTFOUND;
	for (;;) {
		left = u->end - spirt_xnow_ms();
		if (left <= 0 || pull_stopped(u))
			break;
		if (dropped(u)) {
			/* (lost on the way: asked again, never answered) */
			spirt_xnap(left < 20 ? left : 20);
			continue;
		}
		if (p->h == NULL) {
			rc = pull_open(u, left);
		} else if ((rc = pull_ask(u, left)) == 0) {
			u->rc = 0;
			break;
		}
		if (rc && atomic_load(&u->cancel))
			continue;       /* given up under way: said above */
		if (rc) {
			u->rc = rc;
			snprintf(u->why, sizeof u->why, "%s%s%s",
			    spirt_strerror(rc), p->h && *net->msg(p->h) ?
			    ": " : "", p->h ? net->msg(p->h) : "");
			if (spirt_xpull_refusal(rc))
				break;
		}
		if (rc == 0)
			continue;       /* opened: ask at once */
		if (rc == SPIRT_ENOTFOUND && p->h && net->wait && !p->nowait)
			continue;       /* the wait is over: again */
		/* not there yet: ask again soon, never past the deadline */
		left = u->end - spirt_xnow_ms();
		spirt_xnap(nap_ms < left ? nap_ms : left > 0 ? left : 0);
		if (nap_ms < 50)
			nap_ms *= 2;
	}
	pull_done(u, t0);
	return NULL;
}

static void watch_pulls(const struct spirt_xlink *l, struct spirt_xpull *u,
    const int *started, spirt_xpull_enough enough, void *arg,
    struct spirt_xwake *w);

/* whether i is the last peer want names */
static int
last_wanted(const struct spirt_xlink *l, const int *want, size_t i)
{
	for (size_t j = i + 1; j < l->n; j++)
		if (want[j])
			return 0;
	return 1;
}

int
spirt_xpull_until(const struct spirt_xlink *l, struct spirt_xpull *u,
    spirt_xpull_key key, const char *id,
    const int *want, spirt_xpull_enough enough, void *arg, int hash)
{
	pthread_t *th;
	pthread_condattr_t ca;
	struct spirt_xwake w = { .n = 0 }, *wp = NULL;
	int *started, rc = 0;
	size_t here = 0;                /* 1 + the pull run here, or 0 */
	double end = spirt_xnow_ms() + l->deadline_ms;

	if ((th = calloc(l->n ? l->n : 1, sizeof *th)) == NULL ||
	    (started = calloc(l->n ? l->n : 1, sizeof *started)) == NULL) {
		free(th);
		return ENOMEM;
	}
	/* (with beats a watcher looks at the pulls as each one ends) */
	if (l->beats && pthread_condattr_init(&ca) == 0) {
		if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
		    pthread_cond_init(&w.c, &ca) == 0) {
			if (pthread_mutex_init(&w.m, NULL) == 0)
				wp = &w;
			else
				pthread_cond_destroy(&w.c);
		}
		pthread_condattr_destroy(&ca);
	}
	for (size_t i = 0; i < l->n; i++) {
		memset(&u[i], 0, sizeof u[i]);
		atomic_init(&u[i].cancel, 0);
		atomic_init(&u[i].finished, 0);
		u[i].l = l;
		u[i].wake = wp;
		u[i].p = &l->peers[i];
		u[i].url = l->peers[i].url;
		u[i].end = end;
		u[i].hash = hash;
		if ((u[i].rc = key(u[i].key, sizeof u[i].key, l->step,
		    id ? id : l->peers[i].id))) {
			snprintf(u[i].why, sizeof u[i].why, "%s",
			    spirt_strerror(u[i].rc));
			continue;
		}
		u[i].rc = SPIRT_ENOTFOUND;
		if (!want[i])
			continue;
		/* without beats no watcher: the last pull runs here, one
		 * thread fewer a round (a new thread costs 15-25 us) */
		if (!l->beats && last_wanted(l, want, i)) {
			here = i + 1;
			continue;
		}
		if ((rc = pthread_create(&th[i], NULL, pull_main, &u[i]))) {
			u[i].rc = rc;
			break;
		}
		started[i] = 1;
	}
	if (rc == 0 && here)
		pull_main(&u[here - 1]);
	if (rc == 0 && l->beats)
		watch_pulls(l, u, started, enough, arg, wp);
	for (size_t i = 0; i < l->n; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	for (size_t i = 0; i < l->n; i++)
		u[i].wake = NULL;
	if (wp) {
		pthread_cond_destroy(&w.c);
		pthread_mutex_destroy(&w.m);
	}
	free(th);
	free(started);
	/* stopped: what came is not a round's (nothing is signed of it) */
	if (rc == 0 && l->cancelled && l->cancelled())
		rc = EINTR;
	return rc;
}

int
spirt_xpull_all(const struct spirt_xlink *l, struct spirt_xpull *u,
    spirt_xpull_key key, const char *id, const int *want)
{
	return spirt_xpull_until(l, u, key, id, want, NULL, NULL, 0);
}

int
spirt_xpull_aggs(const struct spirt_xlink *l, struct spirt_xpull *u,
    const int *want)
{
	return spirt_xpull_until(l, u, spirt_key_xagg, NULL, want, NULL, NULL,
	    1);
}

/* the pulls so far give the round its quorum: more than half of the
 * last round's members (self among them) and min_peers delivered */
static int
quorum_now(const struct spirt_xlink *l, struct spirt_xpull *u,
    const int *started)
{
	size_t in = 0, got = 1;

	for (size_t k = 0; k < l->cut.nlast; k++)
		in += strcmp(l->cut.last[k], l->cut.self) == 0;
	for (size_t i = 0; i < l->n; i++) {
		if (!started[i] || !atomic_load(&u[i].finished) || u[i].rc)
			continue;
		got++;
		for (size_t k = 0; k < l->cut.nlast; k++)
			in += strcmp(l->cut.last[k], l->peers[i].id) == 0;
	}
	return 2 * in > l->cut.nlast && got >= l->cut.min_peers;
}

/* wait on w (NULL: nap) until a pull ends after the n-th, or ms */
static void
wake_wait(struct spirt_xwake *w, unsigned n, unsigned ms)
{
	struct timespec ts;

	if (w == NULL) {
		spirt_xnap(ms);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&w->m);
	while (w->n == n &&
	    pthread_cond_timedwait(&w->c, &w->m, &ts) == 0)
		;
	pthread_mutex_unlock(&w->m);
}

/* pulls finished so far (w NULL: 0) */
static unsigned
wake_count(struct spirt_xwake *w)
{
	unsigned n;

	if (w == NULL)
		return 0;
	pthread_mutex_lock(&w->m);
	n = w->n;
	pthread_mutex_unlock(&w->m);
	return n;
}

/* the pulls under way: give up on a peer as soon as it is declared dead
 * (a death cancels the transfers in flight), and on all of them once
 * the phase has enough; looked at every 20 ms, and each time a pull
 * ends (w) */
static void
watch_pulls(const struct spirt_xlink *l, struct spirt_xpull *u,
    const int *started, spirt_xpull_enough enough, void *arg,
    struct spirt_xwake *w)
{
	unsigned char host[SPIRT_BEAT_BOOT];
	double age, t0 = spirt_xnow_ms();
	unsigned seen;

	if (spirt_host_boot(host))
		return;
	for (;;) {
		/* (counted before the look: a pull that ends during it
		 * wakes the wait below at once) */
		seen = wake_count(w);
		int busy = 0, late = l->cut.last && spirt_xnow_ms() - t0 >=
		    l->cut.ms && quorum_now(l, u, started);

		if (enough && enough(arg, u, started))
			late = 1;

		for (size_t i = 0; i < l->n; i++) {
			if (!started[i] || atomic_load(&u[i].finished) ||
			    atomic_load(&u[i].cancel))
				continue;
			busy = 1;
			if (spirt_xpeer_health(l->store, u[i].p->id, host,
			    &age, NULL, NULL) == SPIRT_H_DEAD)
				atomic_store(&u[i].cancel, 1);
			else if (late)
				atomic_store(&u[i].cancel, 2);
		}
		if (!busy)
			return;
		wake_wait(w, seen, 20);
	}
}
