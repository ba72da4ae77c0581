/* supervise.h - start, feed, time and reap long-lived child processes */
#ifndef SPIRT_SUPERVISE_H
#define SPIRT_SUPERVISE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spirt.h"

/* longest line read from the input or a child; longer ones are cut */
#define SPIRT_SUP_LINE 4096
/* longest child name */
#define SPIRT_SUP_NAME 32

/*
 * A supervisor: named children, each started with a pipe to its stdin
 * and one from its stdout (its stderr is ours), fed one request line at
 * a time and answering one line per request, in order.  Each request
 * may have a deadline on CLOCK_MONOTONIC; a child that misses one is
 * killed (SIGKILL).  Children are reaped on SIGCHLD through a self-pipe,
 * so no signal is lost; SIGTERM, SIGINT and SIGHUP are events too.  One
 * supervisor per process (it owns those signals' handlers).
 */
struct spirt_sup;

enum spirt_sup_kind {
	SPIRT_SUP_INPUT,        /* line: a line of the input fd */
	SPIRT_SUP_LONG,         /* a line of the input fd that was too long */
	SPIRT_SUP_EOF,          /* the input fd ended */
	SPIRT_SUP_ANSWER,       /* name, pid, line: a child's line */
	SPIRT_SUP_DIED,         /* name, pid, status: a child ended */
	SPIRT_SUP_LATE,         /* name, pid: killed past a deadline */
	SPIRT_SUP_SIGNAL        /* signo: SIGTERM, SIGINT or SIGHUP came */
};

struct spirt_sup_event {
	enum spirt_sup_kind kind;
	const char *name;       /* valid until the next spirt_sup_next() */
	const char *line;       /* without its newline; likewise */
	pid_t pid;
	int status;             /* DIED: exit status 0..255, or -signal */
	int guarded;            /* DIED: a child spirt_sup_guard() named */
	int signo;
};

/*
 * Make a supervisor reading request lines from infd (not closed), told
 * of signals by sigfd (not closed): the non-blocking read end of a
 * self-pipe to which the caller's handlers of SIGCHLD, SIGTERM, SIGINT
 * and SIGHUP write the signal's number, a byte each (spirt_tool_sigpipe()
 * in the tool layer makes one; lib installs no handler).  @param out
 * (out) the supervisor, free with spirt_sup_close().  Returns 0 or an
 * errno.
 */
int spirt_sup_open(struct spirt_sup **out, int infd, int sigfd)
    SPIRT_MUST_CHECK;

/*
 * Start child name running argv (PATH searched), its stdin and stdout
 * pipes to us, its other fds ours but those the supervisor holds; on
 * Linux it gets SIGTERM when this process ends (PR_SET_PDEATHSIG).
 * ms > 0: a deadline on its whole life, ms from now (a one-shot
 * command), as a request's.  Returns 0; EEXIST if a child of that name
 * runs; the errno of a failed pipe, fork or exec (ENOENT: no such
 * command), nothing left running.
 */
int spirt_sup_start(struct spirt_sup *s, const char *name,
    char *const argv[], uint64_t ms) SPIRT_MUST_CHECK;

/*
 * Write text and a newline to child name's stdin: a request, answered
 * by its next line.  ms > 0: its deadline, ms from now on
 * CLOCK_MONOTONIC.  Returns 0; ESRCH if no child of that name runs;
 * EAGAIN if its pipe is full (nothing written).  A child gone since
 * its last reaping is no error: its end is an event.
 */
int spirt_sup_send(struct spirt_sup *s, const char *name, const char *text,
    uint64_t ms) SPIRT_MUST_CHECK;

/*
 * Kill child name (SIGKILL) and reap it: its pending requests and unread
 * lines are dropped, its end is no event, and the name is free for a
 * new child, the old one gone.  Returns 0, or ESRCH if no child of that
 * name runs.
 */
int spirt_sup_kill(struct spirt_sup *s, const char *name) SPIRT_MUST_CHECK;

/*
 * Ask child name to end (SIGTERM), no longer guarded: its end is told
 * as any other's.  Returns 0, or ESRCH if no child of that name runs.
 */
int spirt_sup_term(struct spirt_sup *s, const char *name) SPIRT_MUST_CHECK;

/*
 * Mark child name guarded: the event of its end says so (a child the
 * caller must not outlive quietly).  Returns 0, or ESRCH if no child of
 * that name runs.
 */
int spirt_sup_guard(struct spirt_sup *s, const char *name) SPIRT_MUST_CHECK;

/*
 * Wait for the next event; its strings stay valid until the next call.
 * A child's answers come before the event of its end.  Returns 0 or an
 * errno (poll or read failed).
 */
int spirt_sup_next(struct spirt_sup *s, struct spirt_sup_event *ev)
    SPIRT_MUST_CHECK;

/*
 * End every child: SIGTERM, then SIGKILL to those still there after
 * grace_ms, and reap them all.  Their ends are no events.
 */
void spirt_sup_stop(struct spirt_sup *s, uint64_t grace_ms);

/* Free s (after spirt_sup_stop(): a running child is left running). */
void spirt_sup_close(struct spirt_sup *s);

/* CLOCK_MONOTONIC in ms */
uint64_t spirt_sup_now(void);

#endif
