/* peerwait.c - a peer server's gets that wait for their key: the parked
 * connections and the watcher thread that resumes them (peerwait.h;
 * ISC licence) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "io.h"
#include "peerwait.h"

#define SPIRT_WAIT_PARKED 128
#define SPIRT_WAIT_TICK 100             /* resume all this often anyway */
#define SPIRT_WAIT_TICK_BLIND 2         /* ... and without inotify */

/* under w->lock: resume every parked get (its handler runs again) */
static void
resume_all(struct spirt_peerwait *w)
{
	for (struct spirt_waiter *q = w->waiters, *n; q; q = n) {
		n = q->next;
		q->next = NULL;
		MHD_resume_connection(q->conn);
	}
	w->waiters = NULL;
}

/* under w->lock: resume those whose wait is over */
static void
resume_due(struct spirt_peerwait *w, double now)
{
	for (struct spirt_waiter **qq = &w->waiters, *q; (q = *qq);) {
		if (q->until <= now) {
			*qq = q->next;
			q->next = NULL;
			MHD_resume_connection(q->conn);
		} else {
			qq = &q->next;
		}
	}
}

static void
poke(struct spirt_peerwait *w)
{
	char b = 'w';

	if (write(w->wake[1], &b, 1) < 0) {
		/* full: the watcher is awake anyway */
	}
}

int
spirt_peerwait_park(struct spirt_peerwait *w, struct spirt_waiter *q)
{
	int ok = 0;

	pthread_mutex_lock(&w->lock);
	if (!w->stopping && w->parked < SPIRT_WAIT_PARKED &&
	    spirt_clock() < q->until) {
		q->next = w->waiters;
		w->waiters = q;
		w->parked++;
		MHD_suspend_connection(q->conn);
		ok = 1;
	}
	pthread_mutex_unlock(&w->lock);
	if (ok)
		poke(w);
	return ok;
}

static void *
watch_main(void *arg)
{
	struct spirt_peerwait *w = arg;
	double last = spirt_clock();
	char buf[4096];

	for (;;) {
		struct pollfd pf[2] = { { w->wake[0], POLLIN, 0 },
		    { w->ifd, POLLIN, 0 } };
		double now = spirt_clock(), due = -1;
		int ms = -1, tick = w->ifd >= 0 ? SPIRT_WAIT_TICK :
		    SPIRT_WAIT_TICK_BLIND;
		nfds_t nf = 1;

		pthread_mutex_lock(&w->lock);
		if (w->stopping) {
			resume_all(w);
			pthread_mutex_unlock(&w->lock);
			break;
		}
		for (struct spirt_waiter *q = w->waiters; q; q = q->next)
			if (due < 0 || q->until < due)
				due = q->until;
		/*
		 * The store's changes matter only to parked gets: with none,
		 * this thread sleeps until one parks (repark pokes it), not
		 * woken by every write of the peer's own tools (2% of a
		 * 3-peer run's CPU).  The changes meanwhile wait in the
		 * inotify queue, so a write between a get's look and its
		 * parking still resumes it (at worst once for nothing).
		 */
		if (w->ifd >= 0 && w->waiters)
			nf = 2;
		pthread_mutex_unlock(&w->lock);
		if (due >= 0) {
			ms = (int)((due - now) * 1e3) + 1;
			if (ms > tick)
				ms = tick;
			if (ms < 1)
				ms = 1;
		}
		if (poll(pf, nf, ms) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN)
			while (read(w->wake[0], buf, sizeof buf) > 0)
				;
		now = spirt_clock();
		pthread_mutex_lock(&w->lock);
		if (w->ifd >= 0 && (pf[1].revents & POLLIN)) {
			/* the store changed: every parked get asks again */
			while (read(w->ifd, buf, sizeof buf) > 0)
				;
			resume_all(w);
			last = now;
		} else if (now - last >= tick / 1e3 && w->waiters) {
			resume_all(w);
			last = now;
		} else {
			resume_due(w, now);
		}
		pthread_mutex_unlock(&w->lock);
	}
	return NULL;
}

/* inotify on the store's directories; -1 where it cannot be had */
static int
watch_store(const char *dir)
{
	char sub[4096];
	int fd;
	uint32_t mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE;

	if (!dir || (fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -1;
	if (inotify_add_watch(fd, dir, mask) < 0) {
		close(fd);
		return -1;
	}
	snprintf(sub, sizeof sub, "%s/scratch", dir);
	(void)inotify_add_watch(fd, sub, mask);   /* where xagg/ lives */
	return fd;
}

void
spirt_peerwait_start(struct spirt_peerwait *w, const char *dir)
{
	int fl;

	pthread_mutex_init(&w->lock, NULL);
	w->ifd = watch_store(dir);
	if (pipe(w->wake) != 0) {
		w->wake[0] = w->wake[1] = -1;
		goto fail;
	}
	for (int i = 0; i < 2; i++)
		if ((fl = fcntl(w->wake[i], F_GETFL)) < 0 ||
		    fcntl(w->wake[i], F_SETFL, fl | O_NONBLOCK) < 0 ||
		    fcntl(w->wake[i], F_SETFD, FD_CLOEXEC) < 0)
			goto fail;
	if (pthread_create(&w->watcher, NULL, watch_main, w) != 0)
		goto fail;
	w->watching = 1;
	return;
fail:
	/* no waits then: gets are answered at once, as before */
	return;
}

void
spirt_peerwait_stop(struct spirt_peerwait *w)
{
	pthread_mutex_lock(&w->lock);
	w->stopping = 1;
	resume_all(w);
	pthread_mutex_unlock(&w->lock);
	if (w->watching) {
		poke(w);
		pthread_join(w->watcher, NULL);
	}
	/* MHD must not stop with a connection suspended: let the server's
	 * thread answer the resumed ones first (bounded) */
	for (int i = 0; i < 5000; i++) {
		unsigned n;

		pthread_mutex_lock(&w->lock);
		n = w->parked;
		pthread_mutex_unlock(&w->lock);
		if (n == 0)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (w->ifd >= 0)
		close(w->ifd);
	for (int i = 0; i < 2; i++)
		if (w->wake[i] >= 0)
			close(w->wake[i]);
	pthread_mutex_destroy(&w->lock);
}

void
spirt_peerwait_resumed(struct spirt_peerwait *w)
{
	pthread_mutex_lock(&w->lock);
	w->parked--;
	pthread_mutex_unlock(&w->lock);
}
