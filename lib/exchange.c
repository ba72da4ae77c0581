/* exchange.c - one round between peers: publish, pull, check, combine */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "aggstore.h"
#include "beat.h"
#include "exchange.h"
#include "io.h"
#include "keys.h"
#include "quorum.h"
#include "tensor.h"

/* the message of a failure with code rc; returns rc */
#define say(x, rc, ...) spirt_msgf((x)->msg, sizeof (x)->msg, (rc), \
	__VA_ARGS__)

#define ULL(x) ((unsigned long long)(x))

/* ---- the store as a peer's URL ---- */

/* a peer's store by path, and inotify on its directories for waits */
struct sthandle {
	struct spirt_store *s;
	int ifd;                /* -1 until a wait needs it, or none */
	int tried, wsub;        /* wsub: scratch/ is watched too */
	int (*cancelled)(void);
	char path[512];
	struct stat boot;       /* its scratch/boot when opened (or none) */
};

/* what <store>/scratch/boot is now: a reader opened without it, or with
 * another boot's, does not see the scratch environment made since */
static void
st_boot(const struct sthandle *sh, struct stat *st)
{
	char f[600];

	memset(st, 0, sizeof *st);
	snprintf(f, sizeof f, "%s/scratch/boot", sh->path);
	if (stat(f, st) != 0)
		memset(st, 0, sizeof *st);
}

static int
st_open(void **h, const char *url, void *arg, unsigned timeout_ms)
{
	struct sthandle *sh;
	int rc;

	(void)arg;
	(void)timeout_ms;
	if ((sh = calloc(1, sizeof *sh)) == NULL)
		return ENOMEM;
	sh->ifd = -1;
	snprintf(sh->path, sizeof sh->path, "%s", url);
	st_boot(sh, &sh->boot);
	if ((rc = spirt_store_open(&sh->s, url, SPIRT_STORE_RDONLY))) {
		free(sh);
		return rc;
	}
	*h = sh;
	return 0;
}

/* open the store again if its scratch environment is not the one the
 * handle saw (made, or made anew for this boot, since): 1 if it did */
static int
st_reopen(struct sthandle *sh)
{
	struct stat now;
	struct spirt_store *s;

	st_boot(sh, &now);
	if (now.st_ino == sh->boot.st_ino && now.st_dev == sh->boot.st_dev &&
	    now.st_mtime == sh->boot.st_mtime && now.st_size == sh->boot.st_size)
		return 0;
	if (spirt_store_open(&s, sh->path, SPIRT_STORE_RDONLY))
		return 0;
	/* (no thread holds a reader of the old one: see st_get1) */
	spirt_store_close(sh->s);
	sh->s = s;
	sh->boot = now;
	return 1;
}

struct stget {
	struct sthandle *sh;
	const char *key;
	void **val;
	size_t *len;
	int rc;
};

static void *
st_get_main(void *arg)
{
	struct stget *g = arg;
	struct spirt_txn *t;
	const void *v;

	if ((g->rc = spirt_txn_begin(&t, g->sh->s, SPIRT_TXN_RDONLY)))
		return NULL;
	if ((g->rc = spirt_store_get(t, g->key, &v, g->len)) == 0) {
		if ((*g->val = malloc(*g->len ? *g->len : 1)) == NULL)
			g->rc = ENOMEM;
		else
			memcpy(*g->val, v, *g->len);
	}
	spirt_txn_abort(t);
	return NULL;
}

/*
 * One read of the peer's store, in a thread of its own that ends with
 * it.  LMDB ties a reader to its thread (no MDB_NOTLS) until the thread
 * ends: a handle kept for the run and read from long-lived threads could
 * then never be closed and opened again (its thread key is reused, and
 * the old reader is found: MDB_BAD_RSLOT), and st_reopen must be able to
 * (the peer's scratch environment made after the handle was opened).
 */
static int
st_get1(struct sthandle *sh, const char *key, void **val, size_t *len)
{
	struct stget g = { sh, key, val, len, 0 };
	pthread_t th;

	if (pthread_create(&th, NULL, st_get_main, &g) != 0)
		return EAGAIN;
	pthread_join(th, NULL);
	return g.rc;
}

static int
st_get(void *h, uint64_t step, const char *key, void **val, size_t *len)
{
	struct sthandle *sh = h;
	int rc;

	(void)step;
	if ((rc = st_get1(sh, key, val, len)) == SPIRT_ENOTFOUND &&
	    st_reopen(sh))
		rc = st_get1(sh, key, val, len);
	return rc;
}

/*
 * A key not there yet, waited for: asked again each time the store's
 * files change (LMDB writes the meta page of a commit last, so a commit
 * that made the key is always followed by an event), and every 50 ms in
 * case one was missed; every 2 ms where inotify cannot be had.
 */
static int
st_wait(void *h, uint64_t step, const char *key, unsigned wait_ms,
    void **val, size_t *len)
{
	struct sthandle *sh = h;
	double end = spirt_clock() + wait_ms / 1e3;
	uint32_t mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE;
	char sub[600], buf[4096];
	int rc;

	if (!sh->tried) {
		sh->tried = 1;
		if ((sh->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) >= 0 &&
		    inotify_add_watch(sh->ifd, sh->path, mask) < 0) {
			close(sh->ifd);
			sh->ifd = -1;
		}
	}
	for (;;) {
		struct pollfd pf = { sh->ifd, POLLIN, 0 };
		double left;
		int ms;

		/* scratch/, where xagg/ lives, as soon as it is there */
		snprintf(sub, sizeof sub, "%s/scratch", sh->path);
		if (sh->ifd >= 0 && !sh->wsub &&
		    inotify_add_watch(sh->ifd, sub, mask) >= 0)
			sh->wsub = 1;
		/* drained before asking: a change after the ask wakes us */
		if (sh->ifd >= 0)
			while (read(sh->ifd, buf, sizeof buf) > 0)
				;
		if ((rc = st_get(h, step, key, val, len)) != SPIRT_ENOTFOUND)
			return rc;
		if ((left = end - spirt_clock()) <= 0)
			return rc;
		if (sh->cancelled && sh->cancelled())
			return EINTR;
		ms = (int)(left * 1e3) + 1;
		if (ms > (sh->ifd >= 0 ? 50 : 2))
			ms = sh->ifd >= 0 ? 50 : 2;
		if (sh->ifd >= 0)
			poll(&pf, 1, ms);
		else
			nanosleep(&(struct timespec){ 0, ms * 1000000L }, NULL);
	}
}

static void
st_cancel(void *h, int (*cancelled)(void))
{
	((struct sthandle *)h)->cancelled = cancelled;
}

static void
st_close(void *h)
{
	struct sthandle *sh = h;

	if (sh->ifd >= 0)
		close(sh->ifd);
	spirt_store_close(sh->s);
	free(sh);
}

static const char *
st_msg(void *h)
{
	(void)h;
	return "";
}

const struct spirt_xnet spirt_xnet_store = {
	st_open, st_get, st_close, st_msg, NULL, NULL, st_wait, st_cancel, NULL
};

/* ---- a peer over HTTP (lib/remote.h) ---- */

static int
ht_open(void **h, const char *url, void *arg, unsigned timeout_ms)
{
	return spirt_remote_open((struct spirt_remote **)h, url, arg,
	    timeout_ms);
}

static int
ht_get(void *h, uint64_t step, const char *key, void **val, size_t *len)
{
	return spirt_remote_get(h, step, key, val, len);
}

static void
ht_close(void *h)
{
	spirt_remote_close(h);
}

static const char *
ht_msg(void *h)
{
	return spirt_remote_msg(h);
}

static void
ht_timeout(void *h, unsigned timeout_ms)
{
	spirt_remote_set_timeout(h, timeout_ms);
}

static int
ht_wait(void *h, uint64_t step, const char *key, unsigned wait_ms,
    void **val, size_t *len)
{
	return spirt_remote_get_wait(h, step, key, wait_ms, val, len);
}

static void
ht_cancel(void *h, int (*cancelled)(void))
{
	spirt_remote_set_cancel(h, cancelled);
}

static void
ht_giveup(void *h, int (*given_up)(void *), void *arg)
{
	spirt_remote_set_abort(h, given_up, arg);
}

void
spirt_xnet_http(struct spirt_xnet *net, const struct spirt_cred *c)
{
	memset(net, 0, sizeof *net);
	net->open = ht_open;
	net->get = ht_get;
	net->close = ht_close;
	net->msg = ht_msg;
	/* the handles only read the credentials */
	net->arg = (void *)(uintptr_t)c;
	net->timeout = ht_timeout;
	net->wait = ht_wait;
	net->cancel = ht_cancel;
	net->giveup = ht_giveup;
}

/* ---- set-up ---- */

void
spirt_exchange_init(struct spirt_exchange *x)
{
	memset(x, 0, sizeof *x);
	spirt_agg_defaults(&x->p);
	x->deadline_ms = 30000;
	x->timeout_ms = 10000;
}

void
spirt_exchange_free(struct spirt_exchange *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->peers[i].agg);
		free(x->peers[i].proof);
		if (x->peers[i].h)
			x->peers[i].net->close(x->peers[i].h);
	}
	free(x->peers);
	x->peers = NULL;
	x->n = 0;
}

const char *
spirt_xstate_name(int state)
{
	switch (state) {
	case SPIRT_XP_USED: return "used";
	case SPIRT_XP_LATE: return "late";
	case SPIRT_XP_REFUSED: return "refused";
	case SPIRT_XP_EQUIV: return "equivocated";
	case SPIRT_XP_MODEL: return "model differs";
	default: return "none";
	}
}

int
spirt_peers_parse(struct spirt_exchange *x, const char *text, size_t len,
    const struct spirt_xnet *net, size_t *line)
{
	size_t ln = 0, i = 0;

	while (i < len) {
		char buf[1024], id[64], url[600], extra[8];
		size_t e = i, k;
		struct spirt_xpeer *p;
		int f;

		while (e < len && text[e] != '\n')
			e++;
		ln++;
		k = e - i < sizeof buf - 1 ? e - i : sizeof buf - 1;
		memcpy(buf, text + i, k);
		buf[k] = '\0';
		/* a longer line is refused whole, not read cut short (what
		 * follows its first 1023 bytes was once dropped unseen) */
		f = e - i > sizeof buf - 1;
		if (line)
			*line = ln;
		if (f) {
			/* the first word may start past byte 1023 */
			size_t w = i;

			while (w < e && isspace((unsigned char)text[w]))
				w++;
			if (w < e && text[w] != '#')
				return SPIRT_EDATA;
		}
		i = e + 1;
		f = sscanf(buf, "%63s %599s %7s", id, url, extra);
		if (f <= 0 || id[0] == '#')
			continue;
		if (f != 2 || !spirt_id_valid(id) ||
		    strlen(url) >= sizeof p->url)
			return SPIRT_EDATA;
		if (x->self && strcmp(id, x->self) == 0)
			continue;
		for (size_t j = 0; j < x->n; j++)
			if (strcmp(x->peers[j].id, id) == 0)
				return SPIRT_EDATA;
		if (x->n == SPIRT_DIGEST_MAXPEERS)
			return SPIRT_EDATA;
		if ((p = realloc(x->peers, (x->n + 1) * sizeof *p)) == NULL)
			return ENOMEM;
		x->peers = p;
		p = &x->peers[x->n++];
		memset(p, 0, offsetof(struct spirt_xpeer, d));
		p->has_digest = 0;
		p->proof = NULL;
		memcpy(p->id, id, strlen(id) + 1);      /* valid: fits */
		memcpy(p->url, url, strlen(url) + 1);
		p->net = net;
	}
	return 0;
}

/* ---- pulls: one thread per peer, one deadline ---- */

static double
now_ms(void)
{
	return 1e3 * spirt_clock();
}

/* a refusal: asking again gives the same answer */
static int
refusal(int rc)
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
struct wake {
	pthread_mutex_t m;
	pthread_cond_t c;       /* on CLOCK_MONOTONIC */
	unsigned n;             /* pulls finished */
};

struct pull {
	const struct spirt_exchange *x;
	struct wake *wake;      /* NULL: no one watches */
	struct spirt_xpeer *p;
	const char *url;
	char key[SPIRT_KEY_MAX + 1];
	double end;             /* the deadline, now_ms() */
	atomic_int cancel;      /* the peer was declared dead: give up */
	atomic_int finished;
	/* out */
	int rc;
	void *val;
	size_t len;
	double ms;
	char why[256];
	int hash;               /* hash what came into h, in the thread */
	unsigned char h[SPIRT_HASH_BYTES];
};

/* the pull was given up (its peer declared dead, or cut as a straggler):
 * a transfer under way stops at once (a death cancels the transfers in
 * flight), not at the round's deadline */
static int
pull_aborted(void *arg)
{
	return atomic_load(&((struct pull *)arg)->cancel) != 0;
}

static void
nap(double ms)
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

/* the test hook x->drop names this pull: "KEY@ID" among its words */
static int
dropped(const struct pull *u)
{
	const char *d = u->x->drop;
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

static void *
pull_main(void *arg)
{
	struct pull *u = arg;
	struct spirt_xpeer *p = u->p;
	const struct spirt_xnet *net = p->net;
	double t0 = now_ms(), nap_ms = 2, left, asked;
	unsigned wait;
	int rc;

	u->rc = SPIRT_ENOTFOUND;
	for (;;) {
		left = u->end - now_ms();
		if (left <= 0)
			break;
		if (atomic_load(&u->cancel)) {
			u->rc = SPIRT_ETIMEDOUT;
			if (atomic_load(&u->cancel) == 1)
				snprintf(u->why, sizeof u->why, "given up: "
				    "declared dead while the round waited for "
				    "it");
			else
				snprintf(u->why, sizeof u->why, "a straggler: "
				    "no answer in %u ms (about twice the last "
				    "round's time), and the round had its "
				    "quorum without it", u->x->straggler_ms);
			break;
		}
		if (u->x->cancelled && u->x->cancelled()) {
			u->rc = EINTR;
			snprintf(u->why, sizeof u->why, "stopped");
			break;
		}
		if (dropped(u)) {
			/* (lost on the way: asked again, never answered) */
			nap(left < 20 ? left : 20);
			continue;
		}
		if (p->h == NULL) {
			/* the peer's handle (its session) is kept for every
			 * later pull */
			rc = net->open(&p->h, u->url, net->arg,
			    bound(left, 0, u->x->timeout_ms));
			if (rc)
				p->h = NULL;
			else if (net->cancel && u->x->cancelled)
				net->cancel(p->h, u->x->cancelled);
			if (rc == 0 && net->giveup)
				net->giveup(p->h, pull_aborted, u);
		} else {
			/* waited for on the other side, to the deadline
			 * (less a margin for the answer to come); the
			 * whole request bounded by what is left */
			wait = net->wait && !p->nowait && left > 20 ?
			    (unsigned)(left - (left > 400 ? 200 : left / 2)) :
			    0;
			if (wait > SPIRT_WAIT_MAX_MS)
				wait = SPIRT_WAIT_MAX_MS;       /* again after */
			/* (beats: back often enough to give up on a peer
			 * declared dead, or cut as a straggler) */
			if (u->x->beats && wait > 250)
				wait = 250;
			if (net->timeout)
				net->timeout(p->h, bound(left, wait,
				    u->x->timeout_ms));
			if (net->giveup)
				net->giveup(p->h, pull_aborted, u);
			asked = now_ms();
			rc = wait ? net->wait(p->h, u->x->step, u->key, wait,
			    &u->val, &u->len) : net->get(p->h, u->x->step,
			    u->key, &u->val, &u->len);
			if (rc == 0) {
				u->rc = 0;
				break;
			}
			/* a server that does not wait answers at once:
			 * ask it again after a nap, as before */
			if (wait && rc == SPIRT_ENOTFOUND && wait > 100 &&
			    now_ms() - asked < wait / 2.0)
				p->nowait = 1;
		}
		if (rc && atomic_load(&u->cancel))
			continue;       /* given up under way: said above */
		if (rc) {
			u->rc = rc;
			snprintf(u->why, sizeof u->why, "%s%s%s",
			    spirt_strerror(rc), p->h && *net->msg(p->h) ?
			    ": " : "", p->h ? net->msg(p->h) : "");
			if (refusal(rc))
				break;
		}
		if (rc == 0)
			continue;       /* opened: ask at once */
		if (rc == SPIRT_ENOTFOUND && p->h && net->wait && !p->nowait)
			continue;       /* the wait is over: again */
		/* not there yet: ask again soon, never past the deadline */
		left = u->end - now_ms();
		nap(nap_ms < left ? nap_ms : left > 0 ? left : 0);
		if (nap_ms < 50)
			nap_ms *= 2;
	}
	/* (the handle outlives this pull: it asks it no more) */
	if (p->h && net->giveup)
		net->giveup(p->h, NULL, NULL);
	u->ms = now_ms() - t0;
	/* (here, each pull's in its own thread, at once: not one after
	 * another once the last has come) */
	if (u->rc == 0 && u->hash)
		spirt_hash(u->h, u->val, u->len);
	atomic_store(&u->finished, 1);
	if (u->wake) {
		pthread_mutex_lock(&u->wake->m);
		u->wake->n++;
		pthread_cond_signal(&u->wake->c);
		pthread_mutex_unlock(&u->wake->m);
	}
	return NULL;
}

/* enough(arg, u, started): the pulls so far are all a phase needs */
typedef int (*pull_enough)(void *arg, struct pull *u, const int *started);

static void watch_pulls(const struct spirt_exchange *x, struct pull *u,
    const int *started, pull_enough enough, void *arg, struct wake *w);

/* what a round said of peer p goes; its handle stays */
static void
round_reset_one(struct spirt_xpeer *p)
{
	free(p->agg);
	free(p->proof);
	p->agg = NULL;
	p->proof = NULL;
	p->agglen = 0;
	p->state = SPIRT_XP_NONE;
	p->rc = 0;
	p->why[0] = '\0';
	p->ms = 0;
	p->has_digest = 0;
	p->nowait = 0;          /* its server may wait now */
	memset(p->hash, 0, sizeof p->hash);
	memset(&p->d, 0, sizeof p->d);
}

/*
 * Pull key (built with the step and the peer id, or fixed) from the
 * peers whose flag is set, all at once, until deadline_ms from now, or
 * (with beats) until enough(arg, ...) says the phase has what it needs:
 * the pulls still under way are then given up.  u[i] holds the outcome
 * of peer i.  Returns 0 or a thread error.
 */
/* whether i is the last peer want names */
static int
last_wanted(const struct spirt_exchange *x, const int *want, size_t i)
{
	for (size_t j = i + 1; j < x->n; j++)
		if (want[j])
			return 0;
	return 1;
}

static int
pull_until(const struct spirt_exchange *x, struct pull *u,
    int (*key)(char *, size_t, uint64_t, const char *), const char *id,
    const int *want, pull_enough enough, void *arg, int hash)
{
	pthread_t *th;
	pthread_condattr_t ca;
	struct wake w = { .n = 0 }, *wp = NULL;
	int *started, rc = 0;
	size_t here = 0;                /* 1 + the pull run here, or 0 */
	double end = now_ms() + x->deadline_ms;

	if ((th = calloc(x->n ? x->n : 1, sizeof *th)) == NULL ||
	    (started = calloc(x->n ? x->n : 1, sizeof *started)) == NULL) {
		free(th);
		return ENOMEM;
	}
	/* (with beats a watcher looks at the pulls as each one ends) */
	if (x->beats && pthread_condattr_init(&ca) == 0) {
		if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
		    pthread_cond_init(&w.c, &ca) == 0) {
			if (pthread_mutex_init(&w.m, NULL) == 0)
				wp = &w;
			else
				pthread_cond_destroy(&w.c);
		}
		pthread_condattr_destroy(&ca);
	}
	for (size_t i = 0; i < x->n; i++) {
		memset(&u[i], 0, sizeof u[i]);
		atomic_init(&u[i].cancel, 0);
		atomic_init(&u[i].finished, 0);
		u[i].x = x;
		u[i].wake = wp;
		u[i].p = &x->peers[i];
		u[i].url = x->peers[i].url;
		u[i].end = end;
		u[i].hash = hash;
		if ((u[i].rc = key(u[i].key, sizeof u[i].key, x->step,
		    id ? id : x->peers[i].id))) {
			snprintf(u[i].why, sizeof u[i].why, "%s",
			    spirt_strerror(u[i].rc));
			continue;
		}
		u[i].rc = SPIRT_ENOTFOUND;
		if (!want[i])
			continue;
		/* without beats no watcher: the last pull runs here, one
		 * thread fewer a round (a new thread costs 15-25 us) */
		if (!x->beats && last_wanted(x, want, i)) {
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
	if (rc == 0 && x->beats)
		watch_pulls(x, u, started, enough, arg, wp);
	for (size_t i = 0; i < x->n; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	for (size_t i = 0; i < x->n; i++)
		u[i].wake = NULL;
	if (wp) {
		pthread_cond_destroy(&w.c);
		pthread_mutex_destroy(&w.m);
	}
	free(th);
	free(started);
	/* stopped: what came is not a round's (nothing is signed of it) */
	if (rc == 0 && x->cancelled && x->cancelled())
		rc = EINTR;
	return rc;
}

static int
pull_all(const struct spirt_exchange *x, struct pull *u,
    int (*key)(char *, size_t, uint64_t, const char *), const char *id,
    const int *want)
{
	return pull_until(x, u, key, id, want, NULL, NULL, 0);
}

/* the members' aggregates of the step, each hashed as it comes (u->h) */
static int
pull_aggs(const struct spirt_exchange *x, struct pull *u, const int *want)
{
	return pull_until(x, u, spirt_key_xagg, NULL, want, NULL, NULL, 1);
}

/* ---- the round ---- */

static void
peer_out(struct spirt_xpeer *p, int state, int rc, const char *fmt, ...)
    SPIRT_PRINTF(4, 5);

static void
peer_out(struct spirt_xpeer *p, int state, int rc, const char *fmt, ...)
{
	va_list ap;

	p->state = state;
	p->rc = rc;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof p->why, fmt, ap);
	va_end(ap);
}

/* a u8 record of len bytes: digests and the round's record in the store */
static int
put_bytes(struct spirt_txn *t, const char *key, const void *b, size_t len,
    uint64_t step, unsigned flags)
{
	struct spirt_tensor h;
	uint64_t dims[1] = { len };
	int rc;

	if ((rc = spirt_tensor_init(&h, SPIRT_U8, 1, dims)))
		return rc;
	h.step = step;
	return spirt_store_put_tensor(t, key, &h, b, flags);
}

static int
get_bytes(const void *val, size_t len, const void **b, size_t *n)
{
	struct spirt_tensor h;
	int rc;

	if ((rc = spirt_tensor_decode(&h, b, val, len, 1)))
		return rc;
	if (h.dtype != SPIRT_U8 || h.rank != 1)
		return SPIRT_EDTYPE;
	*n = h.nbytes;
	return 0;
}

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
	    below, NULL)))
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

/* hash model@t and what this peer published, xagg/<t>/<self>, into
 * x->modelhash and x->agghash (in a thread of its own: the message,
 * naming oh->key, is made by the caller) */
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
	if ((oh->rc = spirt_key_model(oh->key, sizeof oh->key, x->model,
	    x->step)) || (oh->rc = spirt_store_get(t, oh->key, &v, &len)))
		goto out;
	spirt_hash(x->modelhash, v, len);
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
	return put_bytes(t, key, a->dg, a->dglen, x->step,
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
		peer_out(p, SPIRT_XP_REFUSED, rc, "its aggregate: %s",
		    spirt_strerror(rc));
		return 0;
	}
	if (h.dtype != SPIRT_F32 || h.nelem != mine->nelem ||
	    strcmp(h.name, mine->name) || h.step != x->step) {
		peer_out(p, SPIRT_XP_REFUSED, SPIRT_EDATA, "its aggregate is "
		    "not one of model \"%s\" for step %llu with %llu values",
		    mine->name, ULL(x->step), ULL(mine->nelem));
		return 0;
	}
	return 1;
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
repull(struct spirt_exchange *x, struct pull *u, const int *want,
    const struct spirt_digest *d)
{
	struct spirt_tensor mine;
	int rc;

	if ((rc = own_header(x, &mine)) || (rc = pull_aggs(x, u, want)))
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
		p->agg = u[i].val;
		p->agglen = u[i].len;
		u[i].val = NULL;
		if (!agg_ok(x, p, &mine))
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
    struct pull *u, int *want)
{
	struct spirt_digest *d;
	struct spirt_txn *t;
	const void *b, *v;
	size_t n, len, again = 0;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if ((d = malloc(sizeof *d)) == NULL)
		return ENOMEM;
	if ((rc = get_bytes(dv, dvlen, &b, &n)) ||
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
			peer_out(p, SPIRT_XP_LATE, SPIRT_ENOTFOUND, "not in "
			    "this peer's digest of step %llu (an earlier run "
			    "of the round)", ULL(x->step));
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
    struct pull *u, int *want)
{
	struct own_hashes oh = { x, 0, "" };

	own_hashes_main(&oh);
	if (oh.rc)
		return spirt_msgrc(x->msg, sizeof x->msg, oh.rc, "%s", oh.key);
	return reload(x, dv, dvlen, u, want);
}

/* phase 1: pull the aggregates; sign and store our digest */
static int
phase1(struct spirt_exchange *x, struct pull *u, int *want)
{
	struct spirt_tensor mine;
	struct spirt_digest *d;
	struct pub a = { x, 1, NULL, 0 };
	struct own_hashes oh = { x, 0, "" };
	pthread_t ohth;
	unsigned char *buf;
	size_t k = 0;
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
	rc = pull_aggs(x, u, want);
	if (th == 0)
		pthread_join(ohth, NULL);
	if (rc == 0 && oh.rc)
		rc = spirt_msgrc(x->msg, sizeof x->msg, oh.rc, "%s", oh.key);
	if (rc)
		return rc;
	if ((d = calloc(1, sizeof *d)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		p->ms = u[i].ms;
		if (u[i].rc) {
			peer_out(p, refusal(u[i].rc) ? SPIRT_XP_REFUSED :
			    SPIRT_XP_LATE, u[i].rc, "xagg/%llu/%s: %s",
			    ULL(x->step), p->id, u[i].why[0] ? u[i].why :
			    spirt_strerror(u[i].rc));
			if (p->state == SPIRT_XP_LATE &&
			    !atomic_load(&u[i].cancel))
				snprintf(p->why + strlen(p->why),
				    sizeof p->why - strlen(p->why),
				    " (no answer in %u ms)", x->deadline_ms);
			continue;
		}
		p->agg = u[i].val;
		p->agglen = u[i].len;
		u[i].val = NULL;
		if (!agg_ok(x, p, &mine))
			continue;
		memcpy(p->hash, u[i].h, SPIRT_HASH_BYTES);
		p->state = SPIRT_XP_USED;
		snprintf(d->got[k].id, sizeof d->got[k].id, "%s", p->id);
		memcpy(d->got[k++].hash, p->hash, SPIRT_HASH_BYTES);
	}
	/* with beats, too few came (members died or restarted during the
	 * pulls): no digest is signed, so the round run again pulls anew
	 * (a digest is never signed twice: one that named too few would
	 * hold every later run of the step to it) */
	if (x->beats && k + 1 < x->min_peers) {
		free(d);
		return say(x, SPIRT_EBUSY, "step %llu: %zu of %zu members' "
		    "aggregates came, --min-peers is %zu: no digest signed; "
		    "run it again", ULL(x->step), k + 1, x->n + 1,
		    x->min_peers);
	}
	d->n = k;
	d->step = x->step;
	snprintf(d->run, sizeof d->run, "%s", x->run);
	snprintf(d->id, sizeof d->id, "%s", x->self);
	memcpy(d->agg, x->agghash, SPIRT_HASH_BYTES);
	memcpy(d->model, x->modelhash, SPIRT_HASH_BYTES);
	if ((d->has_token = x->token != NULL))
		memcpy(d->token, x->token, SPIRT_TOKEN_BYTES);
	a.dglen = spirt_digest_size(d->n, d->has_token);
	if ((buf = malloc(a.dglen)) == NULL) {
		free(d);
		return ENOMEM;
	}
	if ((rc = spirt_digest_sign(buf, a.dglen, &a.dglen, d, x->key)) == 0) {
		a.dg = buf;
		/* volatile: no synced commit on the round's path
		 * (docs/protocol.md, "Signed digests") */
		rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, record,
		    &a);
	}
	free(buf);
	free(d);
	return rc;
}

/* peer q says it got hash h from peer r, whose aggregate we have with
 * another hash: pull r's digest as q got it; two signatures are a proof */
static void
conflict(struct spirt_exchange *x, struct spirt_xpeer *q,
    struct spirt_xpeer *r)
{
	struct spirt_exchange one = *x;
	struct pull u;
	struct spirt_digest *d;
	const void *b;
	size_t n, l1, l2;
	int want = 1, rc;

	one.n = 1;
	one.peers = q;
	if (pull_all(&one, &u, spirt_key_digest, r->id, &want) || u.rc) {
		peer_out(q, SPIRT_XP_REFUSED, SPIRT_EDATA, "says it received "
		    "another aggregate from %s, and does not show %s's digest "
		    "of it (%s)", r->id, r->id, spirt_strerror(u.rc));
		free(u.val);
		return;
	}
	if ((d = malloc(sizeof *d)) == NULL) {
		free(u.val);
		return;
	}
	rc = get_bytes(u.val, u.len, &b, &n);
	if (rc == 0)
		rc = spirt_digest_verify(d, b, n, x->run, r->id, x->step,
		    x->trust, spirt_crypto_now());
	if (rc || !spirt_digest_conflict(d, &r->d)) {
		peer_out(q, SPIRT_XP_REFUSED, rc ? rc : SPIRT_EDATA, "says it "
		    "received another aggregate from %s, and shows no digest "
		    "by %s that says so%s%s", r->id, r->id, rc ? ": " : "",
		    rc ? spirt_strerror(rc) : "");
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
		peer_out(r, SPIRT_XP_EQUIV, SPIRT_EMAC, "two digests it signed for step %llu name different "
		    "aggregates (one to %s, one to %s)", ULL(x->step), x->self,
		    q->id);
	}
	free(d);
	free(u.val);
}

/* store the digests pulled (others ask us for them in a conflict) */
struct dgput {
	struct spirt_exchange *x;
	struct pull *u;
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
phase2(struct spirt_exchange *x, struct pull *u, int *want)
{
	struct dgput a = { x, u };
	char (*last)[SPIRT_QUORUM_ID];
	const void *b;
	size_t n;
	int rc;

	for (size_t i = 0; i < x->n; i++)
		want[i] = x->peers[i].state == SPIRT_XP_USED;
	/* no straggler is cut here: this peer signed that it received
	 * their aggregates, so the members count them in unless they see
	 * their digests; a peer declared dead is still given up */
	last = x->last;
	x->last = NULL;
	rc = pull_all(x, u, spirt_key_digest, NULL, want);
	x->last = last;
	if (rc)
		return rc;
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (u[i].rc) {
			peer_out(p, refusal(u[i].rc) ? SPIRT_XP_REFUSED :
			    SPIRT_XP_LATE, u[i].rc, "digest/%llu/%s: %s%s",
			    ULL(x->step), p->id, u[i].why[0] ? u[i].why :
			    spirt_strerror(u[i].rc), refusal(u[i].rc) ? "" :
			    " (no digest before the deadline)");
			continue;
		}
		if ((rc = get_bytes(u[i].val, u[i].len, &b, &n)) ||
		    (rc = spirt_digest_verify(&p->d, b, n, x->run, p->id,
		    x->step, x->trust, spirt_crypto_now()))) {
			peer_out(p, SPIRT_XP_REFUSED, rc, "digest/%llu/%s: %s",
			    ULL(x->step), p->id, spirt_strerror(rc));
			continue;
		}
		p->has_digest = 1;
		if (memcmp(p->d.agg, p->hash, SPIRT_HASH_BYTES)) {
			peer_out(p, SPIRT_XP_REFUSED, SPIRT_EMAC, "its digest "
			    "does not sign the aggregate it sent");
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
					peer_out(q, SPIRT_XP_REFUSED,
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
			peer_out(p, SPIRT_XP_MODEL, SPIRT_EMODEL, "its model/"
			    "%s@%llu differs from this peer's and the "
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

static char *round_text(struct spirt_exchange *x, size_t *len);

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
	return put_bytes(t, key, c->round, c->roundlen, c->x->step,
	    SPIRT_PUT_NOOVERWRITE);
}

static int
byid(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 64, *(char *const *)b + 64);
}

/* the round's record: who was in, who was not and why */
static char *
round_text(struct spirt_exchange *x, size_t *len)
{
	size_t cap = 256 + x->n * 512, n;
	char *r = malloc(cap);

	if (r == NULL)
		return NULL;
	n = (size_t)snprintf(r, cap, "VERSION=1\nTYPE=spirt-round\nstep=%llu"
	    "\nrule=%s\npeer=%s %s\n", ULL(x->step),
	    spirt_agg_rule_name(x->p.rule), x->self, x->self_out ? "out" :
	    "self");
	for (size_t i = 0; i < x->n && n < cap; i++) {
		const struct spirt_xpeer *p = &x->peers[i];

		n += (size_t)snprintf(r + n, cap - n, "peer=%s %s%s%s\n",
		    p->id, spirt_xstate_name(p->state),
		    p->state == SPIRT_XP_USED ? "" : ": ",
		    p->state == SPIRT_XP_USED ? "" : p->why);
	}
	if (n < cap) {
		double xms = 0;

		for (size_t i = 0; i < x->n; i++)
			if (x->peers[i].state == SPIRT_XP_USED &&
			    x->peers[i].ms > xms)
				xms = x->peers[i].ms;
		n += (size_t)snprintf(r + n, cap - n, "xms=%.1f\n", xms);
	}
	if (n < cap && x->beats)
		n += (size_t)snprintf(r + n, cap - n, "quorum=%s\n",
		    x->reused ? "reused" : "changed");
	if (n < cap && x->adopted[0])
		n += (size_t)snprintf(r + n, cap - n, "adopted=%s\n",
		    x->adopted);
	if (n < cap && x->beats) {
		char h[2 * SPIRT_HASH_BYTES + 1];

		spirt_hash_hex(h, x->gagghash);
		n += (size_t)snprintf(r + n, cap - n, "gagg=%s\n", h);
	}
	if (n < cap)
		n += (size_t)snprintf(r + n, cap - n, "END\n");
	*len = n < cap ? n : cap;
	return r;
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
	/* each key buffer: the key at 0, the peer id at 64 (to sort) */
	if ((c.keys = calloc(m, sizeof *c.keys)) == NULL ||
	    (c.vals = calloc(m, sizeof *c.vals)) == NULL ||
	    (c.s = malloc(sizeof *c.s)) == NULL) {
		free(c.keys);
		free(c.vals);
		return ENOMEM;
	}
	rc = 0;
	for (size_t i = 0, k = 0; i <= x->n; i++) {
		const char *id = i == x->n ? x->self : x->peers[i].id;

		if (i < x->n && x->peers[i].state != SPIRT_XP_USED)
			continue;
		if (i == x->n && x->self_out)
			continue;
		if ((c.keys[k] = malloc(64 + SPIRT_ID_MAX + 1)) == NULL) {
			rc = ENOMEM;
			break;
		}
		if ((rc = spirt_key_xagg(c.keys[k], 64, x->step, id))) {
			free(c.keys[k]);
			break;
		}
		snprintf(c.keys[k] + 64, SPIRT_ID_MAX + 1, "%s", id);
		c.nkeys = ++k;
	}
	if (rc == 0) {
		qsort(c.keys, c.nkeys, sizeof *c.keys, byid);
		/* the others' aggregates from memory, where they came (none
		 * stored without keep_pulls); this peer's from the store */
		for (size_t k = 0; k < c.nkeys; k++)
			for (size_t i = 0; i < x->n; i++) {
				const struct spirt_xpeer *p = &x->peers[i];

				if (p->state == SPIRT_XP_USED && p->agg &&
				    strcmp(p->id, c.keys[k] + 64) == 0) {
					c.vals[k].v = p->agg;
					c.vals[k].len = p->agglen;
					break;
				}
			}
		spirt_aggset_init(c.s);
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
	if (c.s)
		spirt_aggset_reset(c.s);
	for (size_t k = 0; k < c.nkeys; k++)
		free(c.keys[k]);
	free(c.keys);
	free(c.vals);
	free(c.s);
	free(c.round);
	return rc;
}

/* ---- the quorum, from this store's watcher (lib/beat.h, quorum.h) ---- */

#define QMAX (SPIRT_DIGEST_MAXPEERS + 1)

/* peer id's health: its state; SPIRT_H_UNKNOWN without a record; the
 * step its newest beat names in *step (may be NULL; SPIRT_NOSTEP: none) */
static int
peer_health(const struct spirt_exchange *x, const char *id,
    const unsigned char *host, double *age, unsigned *suspect,
    uint64_t *step)
{
	struct spirt_health h;

	*age = -1;
	if (step)
		*step = SPIRT_NOSTEP;
	if (spirt_health_get(x->store, id, &h) != 0)
		return SPIRT_H_UNKNOWN;
	if (suspect)
		*suspect = h.suspect_ms;
	if (step)
		*step = h.b.step;
	return spirt_health_state(&h, host, spirt_mono_ns(), NULL, age);
}

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
last_round(struct spirt_exchange *x, char (*ids)[SPIRT_QUORUM_ID],
    size_t *n, double *xms)
{
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
	    ((rc = get_bytes(v, len, &b, &bl)) || (rc =
	    spirt_quorum_round_parse(ids, QMAX, n, xms, b, bl))))
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
quorum_of(struct spirt_exchange *x, char (*ids)[SPIRT_QUORUM_ID], size_t nl,
    int used, const char *when)
{
	const char *last[QMAX], *alive[QMAX];
	struct spirt_quorum q;
	char who[400] = "";
	size_t na = 0;
	int rc;

	for (size_t i = 0; i < nl; i++)
		last[i] = ids[i];
	if (!(used && x->self_out))
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
	x->nlast = nl;
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

/*
 * Before the pulls: leave out the members this store's watcher does not
 * hold alive, check the quorum, and cut the round's deadline to the
 * stragglers' (about twice the last round's slowest member).
 */
static int
quorum_before(struct spirt_exchange *x, char (*ids)[SPIRT_QUORUM_ID],
    size_t *nl)
{
	unsigned char host[SPIRT_BEAT_BOOT];
	unsigned suspect = SPIRT_BEAT_SUSPECT * SPIRT_BEAT_MS;
	double xms, age, t0 = now_ms();
	int rc;

	if ((rc = spirt_host_boot(host)))
		return say(x, rc, "the host's boot id: %s", spirt_strerror(rc));
	if ((rc = last_round(x, ids, nl, &xms)))
		return rc;
again:
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];
		uint64_t join;
		int st = peer_health(x, p->id, host, &age, &suspect, &join);

		/* (one never seen may be starting: no sign of death, so it
		 * is waited for as the live are) */
		if (st == SPIRT_H_LIVE || st == SPIRT_H_SUSPECT ||
		    st == SPIRT_H_UNKNOWN)
			continue;
		if (st != SPIRT_H_JOINING) {
			peer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT, "dead: no "
			    "beat for %.1f s", age / 1e3);
			continue;
		}
		/* one that catches up is a member from the step its beat
		 * names: waited for then as the live are */
		switch (spirt_quorum_joins(x->step, join, in_ids(ids, *nl,
		    p->id))) {
		case SPIRT_JOIN_IN:
			break;
		case SPIRT_JOIN_LATER:
			if (join == SPIRT_NOSTEP)
				peer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
				    "joining: it catches up");
			else
				peer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT,
				    "joining: it joins at step %llu",
				    ULL(join));
			break;
		default:
			peer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT, "joining: "
			    "the step it named, %llu, went by without it",
			    ULL(join));
			break;
		}
	}
	/* a minority alive waits for the others a while (four times the
	 * watcher's suspect threshold, at least 2 s, at most the deadline):
	 * a member that restarts (its last beat said it stops) is back in a
	 * moment, and two that each stopped on seeing the other gone, and
	 * were each restarted, would else go on missing each other */
	if ((rc = quorum_of(x, ids, *nl, 0, "alive")) == SPIRT_EBUSY &&
	    now_ms() - t0 < (4.0 * suspect > 2000 ? 4.0 * suspect : 2000) &&
	    now_ms() - t0 < x->deadline_ms &&
	    !(x->cancelled && x->cancelled())) {
		nap(50);
		for (size_t i = 0; i < x->n; i++)
			round_reset_one(&x->peers[i]);
		goto again;
	}
	if (rc)
		return rc;
	/* stragglers are cut then, once the round has its quorum; until
	 * it has, the live are waited for up to the round's deadline.  A
	 * peer that catches up (its own beat says so) cuts nobody: it
	 * takes the step the others make, and waits for all of them */
	x->last = peer_health(x, x->self, host, &age, NULL, NULL) ==
	    SPIRT_H_JOINING ? NULL : ids;
	x->straggler_ms = spirt_quorum_deadline(xms, suspect,
	    x->deadline_ms);
	return 0;
}

/* the pulls so far give the round its quorum: more than half of the
 * last round's members (self among them) and min_peers delivered */
static int
quorum_now(const struct spirt_exchange *x, struct pull *u,
    const int *started)
{
	size_t in = 0, got = 1;

	for (size_t k = 0; k < x->nlast; k++)
		in += strcmp(x->last[k], x->self) == 0;
	for (size_t i = 0; i < x->n; i++) {
		if (!started[i] || !atomic_load(&u[i].finished) || u[i].rc)
			continue;
		got++;
		for (size_t k = 0; k < x->nlast; k++)
			in += strcmp(x->last[k], x->peers[i].id) == 0;
	}
	return 2 * in > x->nlast && got >= x->min_peers;
}

/*
 * All or nothing: the step's members are those that every member says,
 * in its signed digest, it received: the intersection of {q} and what q
 * received, over this peer and every peer q used.  Every peer that sees
 * the same digests combines the same aggregates, so a peer one member
 * cut as a straggler, or one that joins late, is out of the step for all;
 * one whose own aggregate is out (self_out) combines the others' without
 * it, and its model stays theirs.
 */
static void
agree(struct spirt_exchange *x)
{
	int was[QMAX];

	for (size_t i = 0; i < x->n; i++)
		was[i] = x->peers[i].state == SPIRT_XP_USED &&
		    x->peers[i].has_digest;
	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *q = &x->peers[i];

		if (!was[i])
			continue;
		if (spirt_digest_hash_of(&q->d, x->self) == NULL)
			x->self_out = 1;
		for (size_t j = 0; j < x->n; j++) {
			struct spirt_xpeer *r = &x->peers[j];

			if (j == i || r->state != SPIRT_XP_USED ||
			    spirt_digest_hash_of(&q->d, r->id) != NULL)
				continue;
			peer_out(r, SPIRT_XP_LATE, SPIRT_ETIMEDOUT, "not "
			    "received by %s: out of the step for every "
			    "member", q->id);
		}
	}
}

/* follow(): what it pulled, into the store as the round's other pulls */
struct fput {
	struct spirt_exchange *x;
	const int *want;
	struct pull *dg;
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
	struct pull *u = NULL, *v = NULL;
	struct fput a = { x, NULL, NULL };
	char (*last)[SPIRT_QUORUM_ID] = x->last;
	int *want, rc = 0;
	const void *b;
	size_t len;

	*n = 0;
	if ((want = calloc(x->n ? x->n : 1, sizeof *want)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *q = &x->peers[i];

		if (q->state != SPIRT_XP_USED || !q->has_digest)
			continue;
		for (size_t j = 0; j < x->n; j++) {
			const struct spirt_xpeer *r = &x->peers[j];

			if (r->state == SPIRT_XP_LATE && !want[j] &&
			    spirt_digest_hash_of(&q->d, r->id) != NULL) {
				want[j] = 1;
				(*n)++;
			}
		}
	}
	if (*n == 0)
		goto out;
	if ((rc = own_header(x, &mine)))
		goto out;
	if ((u = calloc(x->n, sizeof *u)) == NULL ||
	    (v = calloc(x->n, sizeof *v)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	x->last = NULL;         /* no straggler cut */
	for (size_t i = 0; i < x->n; i++)
		if (want[i])
			round_reset_one(&x->peers[i]);
	if ((rc = pull_aggs(x, u, want)))
		goto out;
	for (size_t i = 0; i < x->n && rc == 0; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (u[i].rc) {
			rc = say(x, SPIRT_EBUSY, "step %llu: the members left "
			    "this peer out, and combined %s's aggregate, which "
			    "it does not have: xagg/%llu/%s: %s", ULL(x->step),
			    p->id, ULL(x->step), p->id, u[i].why[0] ? u[i].why :
			    spirt_strerror(u[i].rc));
			break;
		}
		p->agg = u[i].val;
		p->agglen = u[i].len;
		u[i].val = NULL;
		p->ms = u[i].ms;
		if (!agg_ok(x, p, &mine)) {
			rc = say(x, SPIRT_EBUSY, "step %llu: the members left "
			    "this peer out, and combined %s's aggregate, "
			    "which it refuses: %s", ULL(x->step), p->id,
			    p->why);
			break;
		}
		memcpy(p->hash, u[i].h, SPIRT_HASH_BYTES);
	}
	if (rc == 0)
		rc = pull_all(x, v, spirt_key_digest, NULL, want);
	for (size_t i = 0; i < x->n && rc == 0; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		if (!want[i])
			continue;
		if (v[i].rc || get_bytes(v[i].val, v[i].len, &b, &len) ||
		    spirt_digest_verify(&p->d, b, len, x->run, p->id, x->step,
		    x->trust, spirt_crypto_now()) ||
		    memcmp(p->d.agg, p->hash, SPIRT_HASH_BYTES)) {
			rc = say(x, SPIRT_EBUSY, "step %llu: the members left "
			    "this peer out, and combined %s's aggregate, whose "
			    "digest it cannot have or check: digest/%llu/%s%s%s",
			    ULL(x->step), p->id, ULL(x->step), p->id,
			    v[i].rc ? ": " : "", v[i].rc ? (v[i].why[0] ?
			    v[i].why : spirt_strerror(v[i].rc)) : "");
			break;
		}
		p->has_digest = 1;
		p->state = SPIRT_XP_USED;
	}
	if (rc == 0) {
		a.want = want;
		a.dg = v;
		rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE,
		    follow_put, &a);
	}
out:
	x->last = last;
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

/* wait on w (NULL: nap) until a pull ends after the n-th, or ms */
static void
wake_wait(struct wake *w, unsigned n, unsigned ms)
{
	struct timespec ts;

	if (w == NULL) {
		nap(ms);
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
wake_count(struct wake *w)
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
watch_pulls(const struct spirt_exchange *x, struct pull *u,
    const int *started, pull_enough enough, void *arg, struct wake *w)
{
	unsigned char host[SPIRT_BEAT_BOOT];
	double age, t0 = now_ms();
	unsigned seen;

	if (spirt_host_boot(host))
		return;
	for (;;) {
		/* (counted before the look: a pull that ends during it
		 * wakes the wait below at once) */
		seen = wake_count(w);
		int busy = 0, late = x->last && now_ms() - t0 >=
		    x->straggler_ms && quorum_now(x, u, started);

		if (enough && enough(arg, u, started))
			late = 1;

		for (size_t i = 0; i < x->n; i++) {
			if (!started[i] || atomic_load(&u[i].finished) ||
			    atomic_load(&u[i].cancel))
				continue;
			busy = 1;
			if (peer_health(x, u[i].p->id, host, &age, NULL,
			    NULL) == SPIRT_H_DEAD)
				atomic_store(&u[i].cancel, 1);
			else if (late)
				atomic_store(&u[i].cancel, 2);
		}
		if (!busy)
			return;
		wake_wait(w, seen, 20);
	}
}

/*
 * ---- all or nothing across the members (beats): the decision ----
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

/* the gagg= and state= lines of a round's record: 0, or SPIRT_EDATA
 * without a gagg= line */
static int
dec_parse(struct dec *d, const void *val, size_t len)
{
	const void *b;
	const char *p, *end;
	size_t n;
	int rc;

	d->known = 0;
	d->st = 0;
	if ((rc = get_bytes(val, len, &b, &n)))
		return rc;
	for (p = b, end = p + n; p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (k == 5 + 2 * SPIRT_HASH_BYTES && memcmp(p, "gagg=", 5) == 0) {
			int bad = 0;

			for (size_t i = 0; i < SPIRT_HASH_BYTES; i++) {
				unsigned v = 0;

				for (int j = 0; j < 2; j++) {
					char c = p[5 + 2 * i + (size_t)j];

					v <<= 4;
					if (c >= '0' && c <= '9')
						v |= (unsigned)(c - '0');
					else if (c >= 'a' && c <= 'f')
						v |= (unsigned)(c - 'a' + 10);
					else
						bad = 1;
				}
				d->hash[i] = (unsigned char)v;
			}
			if (bad)
				return SPIRT_EDATA;
			d->known = 1;
		} else if (k == 11 && memcmp(p, "state=doubt", 11) == 0) {
			d->st = DEC_DOUBT;
		} else if (k == 10 && memcmp(p, "state=lock", 10) == 0) {
			d->st = DEC_LOCK;
		} else if (k == 13 && memcmp(p, "state=decided", 13) == 0) {
			d->st = DEC_DONE;
		}
		p += k + 1;
	}
	return d->known ? 0 : SPIRT_EDATA;
}

struct cfm {
	struct spirt_exchange *x;
	struct dec *d;          /* x->n of them; own is x->gagghash */
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
	size_t k = c->st >= st && !memcmp(h, c->x->gagghash, SPIRT_HASH_BYTES);

	for (size_t i = 0; i < c->x->n; i++)
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

	if (c->st >= st && !memcmp(h, c->x->gagghash, SPIRT_HASH_BYTES))
		id = c->x->self;
	for (size_t i = 0; i < c->x->n; i++)
		if (c->d[i].known && c->d[i].st >= st &&
		    !memcmp(c->d[i].hash, h, SPIRT_HASH_BYTES) && (id == NULL ||
		    strcmp(c->x->peers[i].id, id) < 0))
			id = c->x->peers[i].id;
	return id;
}

/* pick the decision that most members name with a state of at least st,
 * a tie to the one whose first such member has the lowest id: c->pick
 * (-1: own) and that count */
static size_t
best_pick(struct cfm *c, int st)
{
	size_t best = count(c, c->x->gagghash, st), k;
	int bi = -1;

	for (size_t i = 0; i < c->x->n; i++) {
		const unsigned char *h = c->d[i].hash;
		const char *a, *b;

		if (!c->d[i].known || c->d[i].st < st)
			continue;
		k = count(c, h, st);
		if (k < best)
			continue;
		a = first_holder(c, h, st);
		b = first_holder(c, bi < 0 ? c->x->gagghash : c->d[bi].hash, st);
		if (k > best || b == NULL || strcmp(a, b) < 0) {
			best = k;
			bi = (int)i;
		}
	}
	c->pick = bi >= 0 && memcmp(c->d[bi].hash, c->x->gagghash,
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
	struct spirt_exchange *x = c->x;
	size_t p = x->n + 1, all = 1, seen = 1, same = 1;

	if (2 * best_pick(c, DEC_LOCK) > p)
		return MV_APPLY;
	for (size_t i = 0; i < x->n; i++) {
		if (c->d[i].out)
			all++;
		if (!c->d[i].known)
			continue;
		all++;
		seen++;
		same += !memcmp(c->d[i].hash, x->gagghash, SPIRT_HASH_BYTES);
	}
	if (same == p) {
		c->pick = -1;
		return MV_APPLY;
	}
	if (c->st < DEC_LOCK && 2 * best_pick(c, 0) > p)
		return MV_LOCK;
	for (size_t i = 0; i < x->n; i++)
		if (c->d[i].known && c->d[i].st == DEC_DONE) {
			c->pick = memcmp(c->d[i].hash, x->gagghash,
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
cfm_enough(void *arg, struct pull *u, const int *started)
{
	struct cfm *c = arg;

	for (size_t i = 0; i < c->x->n; i++) {
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
	for (size_t i = 0; i < c->x->n; i++)
		if (c->d[i].known)
			return now_ms() >= c->relook;
	return 0;
}

struct adopt {
	struct spirt_exchange *x;
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

	if ((rc = spirt_key_gagg(key, sizeof key, a->x->step)) ||
	    (rc = spirt_store_put(t, key, a->agg, a->agglen, 0)))
		return rc;
	if ((rc = spirt_key_aggroot_excluded(key, sizeof key, "gagg",
	    a->x->step)))
		return rc;
	if (a->excl)
		rc = spirt_store_put(t, key, a->excl, a->excllen, 0);
	else if ((rc = spirt_store_del(t, key)) == SPIRT_ENOTFOUND)
		rc = 0;
	if (rc || (rc = spirt_key_gagg_round(key, sizeof key, a->x->step)))
		return rc;
	return put_bytes(t, key, a->round, a->roundlen, a->x->step, 0);
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

/* a round's record text (round_text) with a state= line before its END */
static int
with_state(char **r, size_t *len, const char *state)
{
	size_t n = *len, k = strlen(state);
	char *b;

	if (n < 4 || memcmp(*r + n - 4, "END\n", 4))
		return SPIRT_EDATA;
	if ((b = realloc(*r, n + k + 8)) == NULL)
		return ENOMEM;
	n -= 4;
	n += (size_t)snprintf(b + n, k + 12, "state=%s\nEND\n", state);
	*r = b;
	*len = n;
	return 0;
}

/* take peer i's decision: its gagg/<t> (its hash checked), its
 * excluded list, and its set, as this member's, with the state given
 * (one transaction: an adopted decision is never without it); *soft:
 * the failure was peer i's (gone, or what it sent), not this store's */
static int
adopt(struct spirt_exchange *x, size_t i, const struct dec *d,
    const char *state, int *soft)
{
	struct spirt_exchange one = *x;
	struct pull u, e;
	struct adopt a = { x, NULL, NULL, 0, 0, NULL, 0 };
	char (*ids)[SPIRT_QUORUM_ID];
	unsigned char h[SPIRT_HASH_BYTES];
	const void *b;
	size_t n, nids = 0;
	double xms;
	int want = 1, rc;

	one.n = 1;
	one.peers = &x->peers[i];
	one.last = NULL;
	*soft = 0;
	if ((ids = calloc(QMAX, sizeof *ids)) == NULL)
		return ENOMEM;
	memset(&e, 0, sizeof e);
	if ((rc = pull_all(&one, &u, key_gagg, NULL, &want)) || (rc = u.rc)) {
		*soft = rc == u.rc;
		say(x, rc, "step %llu: gagg/%llu of %s, whose combination "
		    "this peer adopts: %s", ULL(x->step), ULL(x->step),
		    x->peers[i].id, u.why[0] ? u.why : spirt_strerror(rc));
		goto out;
	}
	spirt_hash(h, u.val, u.len);
	if (memcmp(h, d->hash, SPIRT_HASH_BYTES)) {
		*soft = 1;
		rc = say(x, SPIRT_EMAC, "step %llu: gagg/%llu of %s does not "
		    "hash as its round's record says", ULL(x->step),
		    ULL(x->step), x->peers[i].id);
		goto out;
	}
	if ((rc = get_bytes(d->rec, d->reclen, &b, &n)) ||
	    (rc = spirt_quorum_round_parse(ids, QMAX, &nids, &xms, b, n))) {
		*soft = 1;
		say(x, rc, "gagg/%llu/round of %s: not a round record",
		    ULL(x->step), x->peers[i].id);
		goto out;
	}
	if (pull_all(&one, &e, key_gagg_excluded, NULL, &want) == 0 &&
	    e.rc == 0) {
		a.excl = e.val;
		a.excllen = e.len;
	}
	/* its set becomes this member's: who is in, who is out */
	x->self_out = 1;
	for (size_t k = 0; k < nids; k++)
		if (strcmp(ids[k], x->self) == 0)
			x->self_out = 0;
	x->used = nids;
	for (size_t j = 0; j < x->n; j++) {
		struct spirt_xpeer *p = &x->peers[j];
		int in = 0;

		for (size_t k = 0; k < nids; k++)
			in |= strcmp(ids[k], p->id) == 0;
		if (in) {
			p->state = SPIRT_XP_USED;
			p->why[0] = '\0';
		} else if (p->state == SPIRT_XP_USED || p->state ==
		    SPIRT_XP_NONE) {
			peer_out(p, SPIRT_XP_LATE, SPIRT_ETIMEDOUT, "not in the "
			    "step as more than half of the members decided it "
			    "(adopted from %s)", x->peers[i].id);
		}
		p->ms = 0;
	}
	memcpy(x->gagghash, d->hash, SPIRT_HASH_BYTES);
	snprintf(x->adopted, sizeof x->adopted, "%s", x->peers[i].id);
	a.agg = u.val;
	a.agglen = u.len;
	if ((a.round = round_text(x, &a.roundlen)) == NULL)
		rc = ENOMEM;
	else if ((rc = with_state(&a.round, &a.roundlen, state)) == 0)
		rc = spirt_store_write(x->store, adopt_txn, &a);
out:
	free(a.round);
	free(u.val);
	free(e.val);
	free(ids);
	return rc;
}

/* this member's decision: the hash of its gagg/<t>, and its record's
 * state= (*st) */
static int
own_decision(struct spirt_exchange *x, int *st)
{
	struct spirt_txn *t;
	struct dec d;
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	*st = 0;
	if ((rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_key_gagg(key, sizeof key, x->step)) == 0 &&
	    (rc = spirt_store_get(t, key, &v, &len)) == 0)
		spirt_hash(x->gagghash, v, len);
	if (rc == 0 && spirt_key_gagg_round(key, sizeof key, x->step) == 0 &&
	    spirt_store_get(t, key, &v, &len) == 0 &&
	    dec_parse(&d, v, len) == 0)
		*st = d.st;
	spirt_txn_abort(t);
	return rc;
}

struct sst {
	struct spirt_exchange *x;
	const char *state;
};

/* its record's state= line, the one before replaced */
static int
state_txn(struct spirt_txn *t, void *arg)
{
	struct sst *a = arg;
	char key[SPIRT_KEY_MAX + 1], *r;
	const void *v, *b;
	const char *p, *end;
	size_t len, n, k = 0;
	int rc;

	if ((rc = spirt_key_gagg_round(key, sizeof key, a->x->step)) ||
	    (rc = spirt_store_get(t, key, &v, &len)) ||
	    (rc = get_bytes(v, len, &b, &n)))
		return rc;
	if ((r = malloc(n + 32)) == NULL)
		return ENOMEM;
	for (p = b, end = p + n; p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (!(l >= 6 && memcmp(p, "state=", 6) == 0) &&
		    !(l == 3 && memcmp(p, "END", 3) == 0)) {
			memcpy(r + k, p, l);
			k += l;
			r[k++] = '\n';
		}
		p += l + 1;
	}
	k += (size_t)snprintf(r + k, n + 32 - k, "state=%s\nEND\n", a->state);
	rc = put_bytes(t, key, r, k, a->x->step, 0);
	free(r);
	return rc;
}

static int
set_state(struct spirt_exchange *x, const char *state)
{
	struct sst a = { x, state };

	return spirt_store_write(x->store, state_txn, &a);
}

/* the lowest id among this member and the members whose decision is
 * known: this one's? */
static int
lowest_known(const struct cfm *c)
{
	for (size_t i = 0; i < c->x->n; i++)
		if (c->d[i].known && strcmp(c->x->peers[i].id, c->x->self) < 0)
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
		return set_state(c->x, state);
	return adopt(c->x, (size_t)c->pick, &c->d[c->pick], state, soft);
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
static int
confirm(struct spirt_exchange *x)
{
	struct cfm c = { x, NULL, 0, -1, 0 };
	unsigned char host[SPIRT_BEAT_BOOT];
	struct pull *u;
	int *want, *ask, rc, mv = MV_WAIT, soft;
	unsigned suspect = SPIRT_BEAT_SUSPECT * SPIRT_BEAT_MS;
	double t0 = now_ms(), few = 0, fewms;
	char who[600] = "";

	if (x->n == 0)
		return 0;
	if ((rc = own_decision(x, &c.st)))
		return say(x, rc, "gagg/%llu: %s", ULL(x->step),
		    spirt_strerror(rc));
	if (c.st == DEC_DONE)
		return 0;       /* decided before (a round run again) */
	u = calloc(x->n, sizeof *u);
	want = calloc(x->n, sizeof *want);
	ask = calloc(x->n, sizeof *ask);
	c.d = calloc(x->n, sizeof *c.d);
	if (u == NULL || want == NULL || ask == NULL || c.d == NULL) {
		rc = ENOMEM;
		goto out;
	}
	if ((rc = spirt_host_boot(host))) {
		rc = say(x, rc, "the host's boot id: %s", spirt_strerror(rc));
		goto out;
	}
	/* the members this round waited for; in a round run again, those
	 * its beats do not hold dead, nor joining at a later step */
	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *p = &x->peers[i];
		uint64_t join;
		double age;
		int st = peer_health(x, p->id, host, &age, &suspect, &join);

		if (p->asked >= 0)
			want[i] = p->asked;
		else
			want[i] = st != SPIRT_H_JOINING || join == x->step;
	}
	/* seeing too few, the others out: they are waited for as a
	 * minority alive is (quorum_before), then it stops */
	fewms = 4.0 * suspect > 2000 ? 4.0 * suspect : 2000;
	x->last = NULL;         /* (no straggler cut: every decision counts) */
	for (;;) {
		/* (again: the records, which change; a member out for its
		 * death is asked again: it may be back) */
		for (size_t i = 0; i < x->n; i++) {
			ask[i] = want[i];
			c.d[i].out = !want[i];
			c.d[i].known = 0;
			free(c.d[i].rec);
			c.d[i].rec = NULL;
			free(u[i].val);
			memset(&u[i], 0, sizeof u[i]);
		}
		c.relook = now_ms() + 200;
		if ((rc = pull_until(x, u, key_gagg_round, NULL, ask,
		    cfm_enough, &c, 0)))
			goto out;
		cfm_enough(&c, u, ask);
		mv = next_move(&c);
		if (mv == MV_APPLY) {
			if ((rc = take(&c, "decided", &soft)) == 0 || !soft)
				break;
			mv = MV_WAIT;
			goto later;
		}
		if (mv == MV_WAIT)
			goto later;     /* (a look again, or the deadline) */
		if (mv == MV_LOCK) {
			/* (a decision more than half hold, or one locked) */
			if ((rc = take(&c, "lock", &soft)) && soft)
				goto later;     /* (its holder gone: look again) */
			if (rc)
				goto out;
			c.st = DEC_LOCK;
			continue;
		}
		if (mv == MV_FEW) {
			if (few == 0)
				few = now_ms();
			if (now_ms() - few >= fewms)
				break;
			goto later;
		}
		few = 0;
		if (mv == MV_AGAIN)
			goto later;
		/* in doubt */
		if (c.st < DEC_DOUBT) {
			if ((rc = set_state(x, "doubt")))
				goto out;
			c.st = DEC_DOUBT;
		}
		if (lowest_known(&c)) {
			int all = 1;

			for (size_t i = 0; i < x->n; i++)
				all &= !c.d[i].known || c.d[i].st != 0;
			if (all) {
				best_pick(&c, 0);
				if ((rc = take(&c, "lock", &soft)) && soft)
					goto later;
				if (rc)
					goto out;
				c.st = DEC_LOCK;
				continue;
			}
		}
later:
		if (now_ms() - t0 >= x->deadline_ms) {
			mv = MV_WAIT;
			break;
		}
		nap(c.st >= DEC_LOCK ? 10 : 30);
	}
	if (mv == MV_APPLY)
		goto out;       /* (taken above) */
	if (mv == MV_FEW) {
		size_t seen = 1;

		for (size_t i = 0; i < x->n; i++)
			seen += c.d[i].known;
		rc = say(x, SPIRT_EBUSY, "step %llu: a minority decided: this "
		    "peer sees %zu of the %zu members' combinations, the "
		    "others out, and more than half are needed: this peer "
		    "stops (run it again once the others are back)",
		    ULL(x->step), seen, x->n + 1);
		goto out;
	}
	if (mv != MV_APPLY) {
		char h[2 * SPIRT_HASH_BYTES + 1];

		spirt_hash_hex(h, x->gagghash);
		snprintf(who, sizeof who, "%s %.12s%s", x->self, h,
		    c.st == DEC_LOCK ? " locked" : "");
		for (size_t i = 0; i < x->n; i++) {
			size_t l = strlen(who);

			if (c.d[i].known)
				spirt_hash_hex(h, c.d[i].hash);
			snprintf(who + l, sizeof who - l, ", %s %.12s%s",
			    x->peers[i].id, c.d[i].known ? h : c.d[i].out ?
			    "(out)" : "(none)", c.d[i].known &&
			    c.d[i].st == DEC_LOCK ? " locked" : "");
		}
		rc = say(x, SPIRT_EBUSY, "step %llu: no combination is locked "
		    "by more than half of the %zu members yet (%s): this peer "
		    "does not apply the step (run it again once they have "
		    "decided)", ULL(x->step), x->n + 1, who);
		goto out;
	}
out:
	for (size_t i = 0; u && i < x->n; i++)
		free(u[i].val);
	for (size_t i = 0; c.d && i < x->n; i++)
		free(c.d[i].rec);
	free(c.d);
	free(u);
	free(want);
	free(ask);
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
		round_reset_one(&x->peers[i]);
		x->peers[i].asked = -1;
	}
}

int
spirt_exchange_run(struct spirt_exchange *x)
{
	struct pub a = { x, 0, NULL, 0 };
	struct pull *u;
	void *dg = NULL;
	char (*ids)[SPIRT_QUORUM_ID] = NULL;
	size_t dglen = 0, nl = 0;
	int *want, rc;
	double t0 = now_ms();

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
		x->ms = now_ms() - t0;
		return rc;
	}
	if ((rc = spirt_store_write(x->store, publish, &a)))
		goto out;
	if ((ids = calloc(QMAX, sizeof *ids)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	if (x->beats && !dg) {
		if ((rc = quorum_before(x, ids, &nl)))
			goto out;
		/* (the members waited for: their decisions count) */
		for (size_t i = 0; i < x->n; i++)
			x->peers[i].asked = x->peers[i].state == SPIRT_XP_NONE;
	}
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
	if (rc == 0) {
		crosscheck(x);
		/* under scclip each peer's model is its own (exchange.h) */
		if (x->p.rule != SPIRT_AGG_SCCLIP)
			rc = models(x);
	}
	/* with beats: all or nothing, and more than half of the last
	 * round's members delivered */
	if (rc == 0 && x->beats && !dg) {
		size_t nf = 0;

		agree(x);
		/* out of the step: what the members combined, all of it */
		if (x->self_out && (rc = follow(x, &nf)) == 0 && nf) {
			if (x->p.rule != SPIRT_AGG_SCCLIP)
				rc = models(x);
			agree(x);
		}
		if (rc == 0)
			rc = quorum_of(x, ids, nl, 1, "delivered");
	}
	if (rc == 0)
		rc = combine(x, dg == NULL);
	/* under scclip each peer's combination is its own */
	if (rc == 0 && x->beats && x->p.rule != SPIRT_AGG_SCCLIP)
		rc = confirm(x);
out:
	x->last = NULL;
	free(ids);
	free(dg);
	x->ms = now_ms() - t0;
	return rc;
}
