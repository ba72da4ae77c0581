/* supervise.c - start, feed, time and reap long-lived child processes */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "supervise.h"

/* a line buffer: bytes read, and whether a cut line's rest is dropped */
struct lbuf {
	char b[SPIRT_SUP_LINE];
	size_t len;
	int skip;
};

enum { C_FREE, C_RUN, C_DEAD, C_KILLED };

struct child {
	char name[SPIRT_SUP_NAME + 1];
	pid_t pid;
	int state;
	int in, out;            /* -1 once closed */
	int status;             /* C_DEAD: exit status or -signal */
	int guarded;            /* its end is told as guarded */
	struct lbuf lb;
	uint64_t life;          /* the deadline of its life, 0 none */
	uint64_t *dl;           /* the pending requests' deadlines, 0 none */
	size_t dhead, dn, dcap;
};

struct spirt_sup {
	int infd, ineof, insent;
	struct lbuf in;
	int sigfd;              /* the caller's self-pipe, read end */
	int sig;                /* a SIGTERM, SIGINT or SIGHUP not told yet */
	struct child *c;
	size_t nc;
	char line[SPIRT_SUP_LINE + 1];
	char name[SPIRT_SUP_NAME + 1];
};

uint64_t
spirt_sup_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
fdflags(int fd, int nonblock)
{
	int fl;

	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return errno;
	if (!nonblock)
		return 0;
	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	return 0;
}

int
spirt_sup_open(struct spirt_sup **out, int infd, int sigfd)
{
	struct spirt_sup *s;

	if ((s = calloc(1, sizeof *s)) == NULL)
		return ENOMEM;
	s->infd = infd;
	s->sigfd = sigfd;
	*out = s;
	return 0;
}

static struct child *
find(struct spirt_sup *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nc; i++)
		if (s->c[i].state == C_RUN && strcmp(s->c[i].name, name) == 0)
			return &s->c[i];
	return NULL;
}

static void
cfree(struct child *c)
{
	if (c->in >= 0)
		close(c->in);
	if (c->out >= 0)
		close(c->out);
	free(c->dl);
	memset(c, 0, sizeof *c);
	c->state = C_FREE;
	c->in = c->out = -1;
}

/* the child's side of the fork: never returns */
static _Noreturn void
child_exec(int in, int out, int ep, char *const argv[])
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP,
	    SIGPIPE };
	pid_t pp = getppid();
	size_t i;
	int e;

	/*
	 * The one signal call in lib/, between fork and exec in the child:
	 * the program it starts gets the default dispositions back, not the
	 * supervisor's (cmd/tool.c's sigpipe_open); it installs no handler.
	 */
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);
#ifdef __linux__
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != pp)
		_exit(127);
#else
	(void)pp;
#endif
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0)
		_exit(127);
	execvp(argv[0], argv);
	e = errno;
	if (write(ep, &e, sizeof e) < 0)
		_exit(127);
	_exit(127);
}

int
spirt_sup_start(struct spirt_sup *s, const char *name, char *const argv[],
    uint64_t ms)
{
	struct child *c = NULL, *nc;
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int rc = 0, e = 0;
	ssize_t r;
	size_t i;
	pid_t pid;

	if (strlen(name) > SPIRT_SUP_NAME || argv[0] == NULL)
		return EINVAL;
	if (find(s, name) != NULL)
		return EEXIST;
	for (i = 0; i < s->nc && c == NULL; i++)
		if (s->c[i].state == C_FREE)
			c = &s->c[i];
	if (c == NULL) {
		nc = realloc(s->c, (s->nc + 1) * sizeof *nc);
		if (nc == NULL)
			return ENOMEM;
		s->c = nc;
		c = &s->c[s->nc++];
		memset(c, 0, sizeof *c);
		c->state = C_FREE;
		c->in = c->out = -1;
	}
	if (pipe(pin) < 0 || pipe(pout) < 0 || pipe(ep) < 0) {
		rc = errno;
		goto out;
	}
	/* ours CLOEXEC (no child holds another's pipe); the child's ends
	 * become its 0 and 1 through dup2, which clears the flag */
	if ((rc = fdflags(pin[0], 0)) || (rc = fdflags(pin[1], 1)) ||
	    (rc = fdflags(pout[0], 1)) || (rc = fdflags(pout[1], 0)) ||
	    (rc = fdflags(ep[0], 0)) || (rc = fdflags(ep[1], 0)))
		goto out;
	if ((pid = fork()) < 0) {
		rc = errno;
		goto out;
	}
	if (pid == 0)
		child_exec(pin[0], pout[1], ep[1], argv);
	close(ep[1]);
	ep[1] = -1;
	/* the exec's errno, or nothing once the exec closed the pipe */
	do
		r = read(ep[0], &e, sizeof e);
	while (r < 0 && errno == EINTR);
	if (r == (ssize_t)sizeof e) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		rc = e ? e : ENOEXEC;
		goto out;
	}
	snprintf(c->name, sizeof c->name, "%s", name);
	c->pid = pid;
	c->state = C_RUN;
	c->life = ms ? spirt_sup_now() + ms : 0;
	c->in = pin[1];
	c->out = pout[0];
	pin[1] = pout[0] = -1;
out:
	for (i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	return rc;
}

int
spirt_sup_send(struct spirt_sup *s, const char *name, const char *text,
    uint64_t ms)
{
	struct child *c = find(s, name);
	size_t n = strlen(text), cap;
	uint64_t *dl;
	char *b;
	ssize_t w;

	if (c == NULL)
		return ESRCH;
	if ((b = malloc(n + 1)) == NULL)
		return ENOMEM;
	memcpy(b, text, n);
	b[n] = '\n';
	if (c->dn == c->dcap) {
		cap = c->dcap ? 2 * c->dcap : 8;
		if ((dl = malloc(cap * sizeof *dl)) == NULL) {
			free(b);
			return ENOMEM;
		}
		for (size_t i = 0; i < c->dn; i++)
			dl[i] = c->dl[(c->dhead + i) % c->dcap];
		free(c->dl);
		c->dl = dl;
		c->dhead = 0;
		c->dcap = cap;
	}
	/* a line is at most PIPE_BUF bytes in practice: whole or nothing */
	do
		w = write(c->in, b, n + 1);
	while (w < 0 && errno == EINTR);
	free(b);
	if (w < 0 && errno == EAGAIN)
		return EAGAIN;
	/* (EPIPE: gone; its end is reaped and told, the request with it) */
	c->dl[(c->dhead + c->dn++) % c->dcap] = ms ? spirt_sup_now() + ms : 0;
	return 0;
}

/* a line of lb into out (NUL-ended): 1 if one was there, *cut if it was
 * longer than the buffer (its first bytes in out, the rest dropped) */
static int
lbuf_line(struct lbuf *lb, char *out, int flush, int *cut)
{
	char *nl;
	size_t n;

	*cut = 0;
	while (lb->skip && lb->len > 0) {
		nl = memchr(lb->b, '\n', lb->len);
		if (nl == NULL) {
			lb->len = 0;
			return 0;
		}
		n = (size_t)(nl - lb->b) + 1;
		memmove(lb->b, lb->b + n, lb->len - n);
		lb->len -= n;
		lb->skip = 0;
	}
	nl = memchr(lb->b, '\n', lb->len);
	if (nl != NULL) {
		n = (size_t)(nl - lb->b);
		memcpy(out, lb->b, n);
		out[n] = '\0';
		memmove(lb->b, nl + 1, lb->len - n - 1);
		lb->len -= n + 1;
		return 1;
	}
	if (lb->len == sizeof lb->b || (flush && lb->len > 0)) {
		memcpy(out, lb->b, lb->len);
		out[lb->len] = '\0';
		*cut = lb->len == sizeof lb->b;
		lb->skip = *cut;
		lb->len = 0;
		return 1;
	}
	return 0;
}

/* read what fd has into lb: 0 data or nothing yet, 1 end, or -errno */
static int
lbuf_fill(struct lbuf *lb, int fd)
{
	ssize_t r;

	if (lb->len == sizeof lb->b)
		return 0;
	r = read(fd, lb->b + lb->len, sizeof lb->b - lb->len);
	if (r > 0) {
		lb->len += (size_t)r;
		return 0;
	}
	if (r == 0)
		return 1;
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	return -errno;
}

static void
reap(struct spirt_sup *s)
{
	struct child *c;
	size_t i;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (i = 0, c = NULL; i < s->nc && c == NULL; i++)
			if (s->c[i].pid == pid && s->c[i].state != C_FREE)
				c = &s->c[i];
		if (c == NULL)
			continue;
		if (c->state == C_KILLED) {
			cfree(c);
			continue;
		}
		c->state = C_DEAD;
		c->status = WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st);
	}
}

/* an event of a child's, if one is due: 1 */
static int
child_event(struct spirt_sup *s, struct child *c, struct spirt_sup_event *ev)
{
	int cut, r;

	for (;;) {
		if (lbuf_line(&c->lb, s->line, 0, &cut)) {
			if (c->dn > 0) {
				c->dhead = (c->dhead + 1) % c->dcap;
				c->dn--;
			}
			ev->kind = SPIRT_SUP_ANSWER;
			ev->line = s->line;
			break;
		}
		if (c->state != C_DEAD)
			return 0;
		/* what it wrote before it ended is in the pipe: drained,
		 * then its end (a torn last line dropped) */
		r = c->out >= 0 ? lbuf_fill(&c->lb, c->out) : 1;
		if (r == 0 && c->lb.len > 0)
			continue;
		ev->kind = SPIRT_SUP_DIED;
		ev->status = c->status;
		break;
	}
	memcpy(s->name, c->name, sizeof s->name);
	ev->name = s->name;
	ev->pid = c->pid;
	ev->guarded = ev->kind == SPIRT_SUP_DIED && c->guarded;
	if (ev->kind == SPIRT_SUP_DIED)
		cfree(c);
	return 1;
}

/* the earliest pending deadline of c, 0 none */
static uint64_t
child_deadline(const struct child *c)
{
	uint64_t d = c->life, x;
	size_t i;

	if (c->state != C_RUN)
		return 0;
	for (i = 0; i < c->dn; i++) {
		x = c->dl[(c->dhead + i) % c->dcap];
		if (x && (d == 0 || x < d))
			d = x;
	}
	return d;
}

/* c killed (SIGKILL), its end no event: its pending requests and
 * unread lines go with it */
static void
killed(struct child *c)
{
	kill(c->pid, SIGKILL);
	c->state = C_KILLED;
	c->dn = 0;
	c->lb.len = 0;
	if (c->out >= 0)
		close(c->out);
	c->out = -1;
}

int
spirt_sup_kill(struct spirt_sup *s, const char *name)
{
	struct child *c = find(s, name);
	int st;

	if (c == NULL)
		return ESRCH;
	/* reaped here: gone before the caller starts another in its place */
	killed(c);
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	cfree(c);
	return 0;
}

int
spirt_sup_term(struct spirt_sup *s, const char *name)
{
	struct child *c = find(s, name);

	if (c == NULL)
		return ESRCH;
	c->guarded = 0;
	kill(c->pid, SIGTERM);
	return 0;
}

int
spirt_sup_guard(struct spirt_sup *s, const char *name)
{
	struct child *c = find(s, name);

	if (c == NULL)
		return ESRCH;
	c->guarded = 1;
	return 0;
}

static int
due(struct spirt_sup *s, struct spirt_sup_event *ev, uint64_t now,
    uint64_t *next)
{
	struct child *c;
	uint64_t d;
	size_t i;

	*next = 0;
	for (i = 0; i < s->nc; i++) {
		c = &s->c[i];
		if ((d = child_deadline(c)) == 0)
			continue;
		if (d > now) {
			if (*next == 0 || d < *next)
				*next = d;
			continue;
		}
		/* late: killed (a stopped one too) */
		killed(c);
		memcpy(s->name, c->name, sizeof s->name);
		ev->kind = SPIRT_SUP_LATE;
		ev->name = s->name;
		ev->pid = c->pid;
		return 1;
	}
	return 0;
}

int
spirt_sup_next(struct spirt_sup *s, struct spirt_sup_event *ev)
{
	struct pollfd *pf;
	struct child **who;
	unsigned char b[64];
	uint64_t now, next;
	size_t i, n;
	ssize_t r;
	int cut, rc, tmo;

	memset(ev, 0, sizeof *ev);
	for (;;) {
		if (s->sig) {
			ev->kind = SPIRT_SUP_SIGNAL;
			ev->signo = s->sig;
			s->sig = 0;
			return 0;
		}
		for (i = 0; i < s->nc; i++)
			if (s->c[i].state == C_RUN || s->c[i].state == C_DEAD)
				if (child_event(s, &s->c[i], ev))
					return 0;
		if (lbuf_line(&s->in, s->line, s->ineof, &cut)) {
			ev->kind = cut ? SPIRT_SUP_LONG : SPIRT_SUP_INPUT;
			ev->line = s->line;
			return 0;
		}
		if (s->ineof && !s->insent) {
			s->insent = 1;
			ev->kind = SPIRT_SUP_EOF;
			return 0;
		}
		now = spirt_sup_now();
		if (due(s, ev, now, &next))
			return 0;

		n = 2 + s->nc;
		if ((pf = calloc(n, sizeof *pf)) == NULL ||
		    (who = calloc(n, sizeof *who)) == NULL) {
			free(pf);
			return ENOMEM;
		}
		pf[0].fd = s->sigfd;
		pf[0].events = POLLIN;
		pf[1].fd = s->ineof ? -1 : s->infd;
		pf[1].events = POLLIN;
		for (i = 0; i < s->nc; i++) {
			who[2 + i] = &s->c[i];
			pf[2 + i].fd = s->c[i].state == C_RUN ? s->c[i].out : -1;
			pf[2 + i].events = POLLIN;
		}
		tmo = -1;
		if (next)
			tmo = next - now > 60000 ? 60000 : (int)(next - now);
		rc = 0;
		if (poll(pf, n, tmo) < 0 && errno != EINTR)
			rc = errno;
		if (rc == 0 && (pf[0].revents & POLLIN)) {
			while ((r = read(s->sigfd, b, sizeof b)) > 0)
				for (i = 0; i < (size_t)r; i++)
					if (b[i] != SIGCHLD)
						s->sig = b[i];
			reap(s);
		}
		if (rc == 0 && pf[1].revents) {
			rc = lbuf_fill(&s->in, s->infd);
			if (rc == 1)
				s->ineof = 1;
			rc = rc < 0 ? -rc : 0;
		}
		for (i = 2; rc == 0 && i < n; i++) {
			if (!pf[i].revents || pf[i].fd < 0)
				continue;
			/* its stdout closed (it may live on): no more lines */
			if (lbuf_fill(&who[i]->lb, who[i]->out) != 0) {
				close(who[i]->out);
				who[i]->out = -1;
			}
		}
		free(pf);
		free(who);
		if (rc)
			return rc;
	}
}

void
spirt_sup_stop(struct spirt_sup *s, uint64_t grace_ms)
{
	uint64_t end = spirt_sup_now() + grace_ms;
	struct pollfd pf;
	unsigned char b[64];
	size_t i, left;
	int st;

	for (i = 0; i < s->nc; i++)
		if (s->c[i].state == C_RUN)
			kill(s->c[i].pid, SIGTERM);
	for (;;) {
		reap(s);
		for (i = 0, left = 0; i < s->nc; i++) {
			if (s->c[i].state == C_DEAD)
				cfree(&s->c[i]);
			left += s->c[i].state != C_FREE;
		}
		if (left == 0 || spirt_sup_now() >= end)
			break;
		pf.fd = s->sigfd;
		pf.events = POLLIN;
		if (poll(&pf, 1, (int)(end - spirt_sup_now())) > 0)
			while (read(s->sigfd, b, sizeof b) > 0)
				;
	}
	for (i = 0; i < s->nc; i++) {
		if (s->c[i].state == C_FREE)
			continue;
		kill(s->c[i].pid, SIGKILL);
		while (waitpid(s->c[i].pid, &st, 0) < 0 && errno == EINTR)
			;
		cfree(&s->c[i]);
	}
}

void
spirt_sup_close(struct spirt_sup *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nc; i++)
		if (s->c[i].state != C_FREE)
			cfree(&s->c[i]);
	free(s->c);
	free(s);
}
