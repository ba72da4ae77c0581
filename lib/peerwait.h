/* peerwait.h - a peer server's gets that wait for their key (ISC licence)
 *
 * A get with SPIRT_REQ_WAIT and a wait in ms (docs/protocol.md) whose
 * key is not in the store is parked: its connection is suspended, and a
 * watcher thread resumes every parked get when the store's files change
 * (inotify on <store> and <store>/scratch, where LMDB writes its pages
 * and, last, the meta page of each commit), and each one whose wait is
 * over.  A resumed get asks the store again in the server's thread
 * (lib/peersrv.c), and is answered, or parked again.  So a pulling peer
 * has the value a few hundred microseconds after it is committed,
 * instead of asking again and again.  Without inotify the watcher
 * resumes them every SPIRT_WAIT_TICK ms.  At most SPIRT_WAIT_PARKED gets
 * wait at once; more are answered at once.
 */
#ifndef SPIRT_PEERWAIT_H
#define SPIRT_PEERWAIT_H

#include <pthread.h>

struct MHD_Connection;

/* a parked get: peersrv.c's request holds one */
struct spirt_waiter {
	struct spirt_waiter *next;
	struct MHD_Connection *conn;    /* suspended while parked */
	double until;                   /* its wait's end, spirt_clock() */
};

struct spirt_peerwait {
	pthread_mutex_t lock;
	struct spirt_waiter *waiters;   /* suspended, to be resumed */
	unsigned parked;                /* suspended or resuming */
	int stopping;
	int ifd;                        /* inotify on the store, or -1 */
	int wake[2];                    /* the watcher's pipe */
	pthread_t watcher;
	int watching;                   /* the watcher runs: gets may wait */
};

/* Watch the store in directory dir (NULL: no inotify, the tick only).
 * Without a thread or a pipe, w->watching stays 0: no get waits. */
void spirt_peerwait_start(struct spirt_peerwait *w, const char *dir);

/* Every parked get resumed (to be answered: not found, now), the
 * watcher ended, and the server's thread given time (bounded) to answer
 * them: libmicrohttpd must not stop with a connection suspended. */
void spirt_peerwait_stop(struct spirt_peerwait *w);

/* Park q (q->conn, q->until set): 1 if its connection is suspended, 0
 * if it must be answered now (stopping, too many parked, wait over). */
int spirt_peerwait_park(struct spirt_peerwait *w, struct spirt_waiter *q);

/* A parked get's handler runs again: it is no longer counted. */
void spirt_peerwait_resumed(struct spirt_peerwait *w);

#endif
