/* xnet.c - how a peer is reached: a store by path, or a peer's URL */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "io.h"
#include "remote.h"
#include "store.h"
#include "xnet.h"

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
