/* spirt-run.c - supervise warm tools: start, feed, time and reap them */
#define _XOPEN_SOURCE 700      /* nftw, FTW_DEPTH, FTW_PHYS */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keys.h"
#include "opt.h"
#include "supervise.h"
#include "tool.h"

/* a child still there this long after SIGTERM gets SIGKILL */
#define GRACE_MS 1000
/* at most this many words in a start request, names in a fan */
#define MAXARGS 256

static const struct opt opts[] = {
	{ 'd', "deadline", "MS", "a send's deadline (default 30000)" },
	{ 'D', "dir", "DIR", "remove DIR, and what it holds, at the end" },
	{ 'c', "clock", NULL, "print the monotonic clock, in ms" },
	{ 'r', "read", NULL, "copy one line of stdin, by -u" },
	{ 'u', "until", "END", "a budget's end, a time -c printed" },
	{ 'w', "wait", "MS", "wait MS, or until -u's END (75)" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-run [-d ms] [-D dir]\n"
	"       spirt-run -c\n"
	"       spirt-run -w ms [-u end]\n"
	"       spirt-run -r -u end\n",
	NULL,
	"\n"
	"requests on stdin, one a line:\n"
	"  start NAME CMD [ARG ...]  start child NAME\n"
	"  run NAME CMD [ARG ...]    the same, to end within -d\n"
	"  send NAME TEXT            TEXT to NAME, answered within -d\n"
	"  post NAME TEXT            the same without a deadline\n"
	"  guard NAME                its end also sends SIGUSR1 to the parent\n"
	"  stop NAME                 SIGTERM to NAME, its end told, unguarded\n"
	"  kill NAME                 killed at once, its end not told\n"
	"  fan NAME,... TEXT [then NAME2 TEXT2]\n"
	"                            TEXT to each NAME, each within -d; once\n"
	"                            all answered well, TEXT2 to NAME2\n"
	"on stdout: answer NAME LINE, died NAME pid=P status=S|signal=N,\n"
	"  late NAME pid=P ms=M (killed), refused CODE REQUEST: WHY,\n"
	"  fanned N, stepped NAME2 LINE (a fan's answers all well)\n"
	"SPIRT_RUN_LOG=FILE: each request line appended to FILE\n",
	21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

/* one line on stdout, flushed: the driver waits for it */
static int
out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	return fflush(stdout) == EOF || ferror(stdout) ? SPIRT_EX_IOERR : 0;
}

/* -w MS: wait MS on CLOCK_MONOTONIC, or until END (a time -c printed),
 * whichever comes first: 0, or 75 (late) once END is there */
static int
wait_ms(uint64_t ms, uint64_t end)
{
	uint64_t now = spirt_sup_now(), to = now + ms;
	struct timespec ts;

	if (end != 0 && end <= to)
		to = end;
	/* (spirt_sup_now is CLOCK_MONOTONIC's ms: the same clock) */
	ts.tv_sec = (time_t)(to / 1000);
	ts.tv_nsec = (long)(to % 1000) * 1000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR)
		;
	return end != 0 && to == end ? SPIRT_EX_TEMPFAIL : 0;
}

/* -r: one line of stdin on stdout, read by END: 0; 66 at the end of input
 * with none; 75 late; 65 a line too long.  One byte a read, so that what
 * follows the line stays there for the next reader */
static int
read_line(uint64_t end)
{
	char line[SPIRT_SUP_LINE + 2];
	struct pollfd p = { .fd = 0, .events = POLLIN };
	uint64_t now;
	size_t n = 0;
	ssize_t r;
	int rc;

	for (;;) {
		if ((now = spirt_sup_now()) >= end)
			return SPIRT_EX_TEMPFAIL;
		rc = poll(&p, 1, end - now > 60000 ? 60000 : (int)(end - now));
		if (rc < 0 && errno != EINTR)
			die(SPIRT_EX_IOERR, "stdin: %s", strerror(errno));
		if (rc <= 0)
			continue;
		r = read(0, line + n, 1);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			die(SPIRT_EX_IOERR, "stdin: %s", strerror(errno));
		if (r == 0 && n == 0)
			return SPIRT_EX_NOINPUT;
		if (r == 0 || line[n] == '\n')
			break;
		if (++n > SPIRT_SUP_LINE)
			die(SPIRT_EX_DATAERR, "stdin: a line longer than %d "
			    "bytes", SPIRT_SUP_LINE);
	}
	line[n] = '\0';
	return out("%s\n", line) ? SPIRT_EX_IOERR : fshut_stdout(0);
}

/* the next blank-separated word of *p, NUL-ended in place; NULL none */
static char *
word(char **p)
{
	char *w = *p + strspn(*p, " \t");

	if (*w == '\0')
		return NULL;
	*p = w + strcspn(w, " \t");
	if (**p != '\0')
		*(*p)++ = '\0';
	return w;
}

/*
 * A fan under way (spirt-run(1), fan): its children, the answers they
 * gave while all is well (held, in the order they came), and the request
 * chained after them.  An answer is well when its first word is step=W,
 * W the request's first word, and it holds no error=.  Anything else of
 * a child of the fan (an answer not well, its end, late) ends the fan:
 * the answers held are told as they came, then that event, as if each
 * had been a send; the chained request is not sent.
 */
static struct {
	int on;                 /* 0 none, 1 gathering, 2 the chained one's */
	size_t n, got;          /* children, answers held */
	char name[MAXARGS][SPIRT_SUP_NAME + 1];
	char *held[MAXARGS];    /* child i's answer, NULL none yet */
	size_t order[MAXARGS];  /* the children of the held answers */
	char *text, *then;      /* the request; the chained one's, NULL none */
	char tname[SPIRT_SUP_NAME + 1];
} fan;

/* whether line answers a request whose first word is that of rq */
static int
well(const char *line, const char *rq)
{
	size_t n = strcspn(rq, " \t");

	return strncmp(line, "step=", 5) == 0 &&
	    strncmp(line + 5, rq, n) == 0 &&
	    (line[5 + n] == ' ' || line[5 + n] == '\0') &&
	    strstr(line, "error=") == NULL;
}

/* the fan over: nothing held, nothing chained */
static void
fan_end(void)
{
	for (size_t i = 0; i < fan.n; i++) {
		free(fan.held[i]);
		fan.held[i] = NULL;
	}
	free(fan.text);
	free(fan.then);
	fan.text = fan.then = NULL;
	fan.on = 0;
}

/* the fan ended by something else than its answers: what it holds told,
 * the answers as they came (gathering), or its line (the chained one's
 * awaited, whose lines follow as a send's) */
static int
fan_break(void)
{
	int ex = 0;

	if (fan.on == 2)
		ex = out("fanned %zu\n", fan.n);
	for (size_t k = 0; fan.on == 1 && k < fan.got && ex == 0; k++)
		ex = out("answer %s %s\n", fan.name[fan.order[k]],
		    fan.held[fan.order[k]]);
	fan_end();
	return ex;
}

/* whether name is a child of the fan, or its chained one once sent */
static int
fan_has(const char *name)
{
	size_t i;

	for (i = 0; i < fan.n && strcmp(name, fan.name[i]) != 0; i++)
		;
	return i < fan.n || (fan.on == 2 && strcmp(name, fan.tname) == 0);
}

/* the refusal of a send of rc; 0 when there is none */
static int
refuse_send(const char *verb, const char *name, int rc)
{
	if (rc == ESRCH)
		return out("refused 69 %s %s: not running\n", verb, name);
	if (rc == EAGAIN)
		return out("refused 75 %s %s: its input is full\n", verb, name);
	if (rc != 0)
		return out("refused 71 %s %s: %s\n", verb, name, strerror(rc));
	return 0;
}

/* fan NAME,... TEXT [then NAME TEXT2]: TEXT sent to each, within ms */
static int
fan_start(struct spirt_sup *s, const char *what, char *list, char *p,
    uint64_t ms)
{
	char *t = p, *nm, *then = NULL;
	size_t i, j, n = 0;
	int rc, ex = 0;

	if (fan.on)
		return out("refused 64 %s: a fan under way\n", what);
	/* the word then, if any, ends TEXT */
	while ((t = strstr(t, "then")) != NULL) {
		if ((t == p || t[-1] == ' ' || t[-1] == '\t') &&
		    strchr(" \t", t[4]) != NULL) {
			then = t + 4;
			while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
				t--;
			*t = '\0';
			break;
		}
		t += 4;
	}
	for (nm = list; nm != NULL && n < MAXARGS; n++) {
		fan.name[n][0] = '\0';
		t = strchr(nm, ',');
		if (t != NULL)
			*t++ = '\0';
		if (spirt_key_id_check(nm) != 0)
			break;
		memcpy(fan.name[n], nm, strlen(nm) + 1);
		nm = t;
	}
	if (list == NULL || nm != NULL)
		return out("refused 64 %s: %s\n", what, nm != NULL &&
		    n == MAXARGS ? "more than 256 names" :
		    "not a name (1-32 letters, digits, '.', '_', '-')");
	if (then != NULL && ((nm = word(&then)) == NULL ||
	    spirt_key_id_check(nm) != 0))
		return out("refused 64 %s: then: not a name\n", what);
	if (then != NULL && *then == '\0')
		return out("refused 64 %s: then: no text\n", what);
	for (i = 0; i < n; i++)
		for (j = i + 1; j <= n; j++)
			if (strcmp(fan.name[i], j < n ? fan.name[j] :
			    then != NULL ? nm : "") == 0)
				return out("refused 64 %s: %s twice\n", what,
				    fan.name[i]);
	if (*p == '\0')
		return out("refused 64 %s: no text\n", what);
	if ((fan.text = strdup(p)) == NULL || (then != NULL &&
	    (fan.then = strdup(then)) == NULL)) {
		fan_end();
		return out("refused 71 %s: %s\n", what, strerror(ENOMEM));
	}
	if (then != NULL)
		memcpy(fan.tname, nm, strlen(nm) + 1);
	fan.n = n;
	fan.got = 0;
	fan.on = 1;
	/* a child that cannot take it: the fan is sends, each told */
	for (i = 0; i < n; i++) {
		rc = spirt_sup_send(s, fan.name[i], p, ms);
		if (rc != 0) {
			fan.on = 0;
			if ((ex = refuse_send("send", fan.name[i], rc)) != 0)
				break;
		}
	}
	if (!fan.on)
		fan_end();
	return ex;
}

/* one request line; its refusal, if any, on stdout */
static int
request(struct spirt_sup *s, char *line, uint64_t ms)
{
	char *argv[MAXARGS + 1], *p = line, *verb, *name, *a;
	char what[80];
	size_t n = 0;
	int rc;

	snprintf(what, sizeof what, "%.60s", line);
	what[strcspn(what, "\t")] = '\0';
	verb = word(&p);
	if (verb == NULL)
		return out("refused 64 (empty): no request\n");
	name = word(&p);
	if (strcmp(verb, "fan") == 0)
		return fan_start(s, what, name, p, ms);
	if (strcmp(verb, "start") != 0 && strcmp(verb, "run") != 0 &&
	    strcmp(verb, "send") != 0 && strcmp(verb, "post") != 0 &&
	    strcmp(verb, "guard") != 0 && strcmp(verb, "stop") != 0 &&
	    strcmp(verb, "kill") != 0)
		return out("refused 64 %s: unknown request\n", what);
	if (name == NULL || spirt_key_id_check(name) != 0)
		return out("refused 64 %s: not a name (1-32 letters, digits, "
		    "'.', '_', '-')\n", what);
	if (verb[0] == 'g' || verb[0] == 'k' || strcmp(verb, "stop") == 0) {
		if (word(&p) != NULL)
			return out("refused 64 %s: a word after the name\n",
			    what);
		rc = verb[0] == 'g' ? spirt_sup_guard(s, name) :
		    verb[0] == 'k' ? spirt_sup_kill(s, name) :
		    spirt_sup_term(s, name);
		/* (a child of a fan killed: its request dropped, the fan
		 * with it) */
		if (rc == 0 && verb[0] == 'k' && fan.on && fan_has(name))
			return fan_break();
		return rc == 0 ? 0 : out("refused 69 %s %s: not running\n",
		    verb, name);
	}
	if (strcmp(verb, "send") == 0 || strcmp(verb, "post") == 0) {
		/* the rest of the line as it came, after one blank */
		rc = spirt_sup_send(s, name, p, verb[1] == 'e' ? ms : 0);
		return refuse_send(verb, name, rc);
	}
	while ((a = word(&p)) != NULL && n < MAXARGS)
		argv[n++] = a;
	argv[n] = NULL;
	if (n == 0 || a != NULL)
		return out("refused 64 %s %s: %s\n", verb, name, n ?
		    "more than 256 words" : "no command");
	/* run: a one-shot command, its whole life bounded as a send is */
	rc = spirt_sup_start(s, name, argv, verb[0] == 'r' ? ms : 0);
	if (rc == EEXIST)
		return out("refused 64 %s %s: running already\n", verb, name);
	if (rc != 0)
		return out("refused %d %s %s: %s: %s\n", rc == ENOENT ||
		    rc == EACCES || rc == ENOEXEC ? SPIRT_EX_UNAVAILABLE :
		    SPIRT_EX_OSERR, verb, name, argv[0], strerror(rc));
	return 0;
}

/* the parent a guarded child's end is told to (SIGUSR1) */
static pid_t pp;

/* a child's answer, end or lateness on stdout */
static int
tell(const struct spirt_sup_event *ev, uint64_t ms)
{
	int ex;

	if (ev->kind == SPIRT_SUP_ANSWER)
		return out("answer %s %s\n", ev->name, ev->line);
	if (ev->kind == SPIRT_SUP_LATE)
		return out("late %s pid=%ld ms=%llu\n", ev->name,
		    (long)ev->pid, (unsigned long long)ms);
	ex = out("died %s pid=%ld %s=%d\n", ev->name, (long)ev->pid,
	    ev->status < 0 ? "signal" : "status",
	    ev->status < 0 ? -ev->status : ev->status);
	/* (its line first: the parent reads why; a parent gone, init or a
	 * reaper now, is told nothing) */
	if (ev->guarded && ex == 0 && pp > 1 && getppid() == pp)
		kill(pp, SIGUSR1);
	return ex;
}

/* an event while a fan is under way: held, or told (and the fan over) */
static int
fan_event(struct spirt_sup *s, const struct spirt_sup_event *ev,
    uint64_t ms)
{
	size_t i;
	int ex = 0, rc;

	if (fan.on == 2) {
		/* the chained request's answer, well: the one line */
		if (ev->kind == SPIRT_SUP_ANSWER &&
		    strcmp(ev->name, fan.tname) == 0 &&
		    well(ev->line, fan.then)) {
			fan_end();
			return out("stepped %s %s\n", ev->name, ev->line);
		}
		/* else the fan's news first, then this as it is */
		return (ex = fan_break()) ? ex : tell(ev, ms);
	}
	for (i = 0; i < fan.n && strcmp(ev->name, fan.name[i]) != 0; i++)
		;
	/* another child's, or an answer more of one that answered */
	if (i == fan.n || (ev->kind == SPIRT_SUP_ANSWER && fan.held[i]))
		return tell(ev, ms);
	if (ev->kind == SPIRT_SUP_ANSWER && well(ev->line, fan.text) &&
	    (fan.held[i] = strdup(ev->line)) != NULL) {
		fan.order[fan.got++] = i;
		if (fan.got < fan.n)
			return 0;
		/* all well: the chained request, or the fan's line */
		if (fan.then == NULL) {
			fan_end();
			return out("fanned %zu\n", fan.n);
		}
		if ((rc = spirt_sup_send(s, fan.tname, fan.then, ms)) == 0) {
			fan.on = 2;
			return 0;
		}
		fan_end();
		return (ex = out("fanned %zu\n", fan.n)) ? ex :
		    refuse_send("send", fan.tname, rc);
	}
	/* not well: the answers held, as they came, then this */
	return (ex = fan_break()) ? ex : tell(ev, ms);
}

/* SPIRT_RUN_LOG: the requests, each line as it came, appended to a file
 * (one write each, O_APPEND): a trace a user or a test reads to see what
 * a driver asked, e.g. that a warm step of spirt-train is one fan; -1
 * none */
static int logfd = -1;

static void
log_request(const char *line)
{
	size_t n = strlen(line);
	char buf[SPIRT_SUP_LINE + 2];

	if (logfd < 0)
		return;
	memcpy(buf, line, n);
	buf[n] = '\n';
	/* (a trace that cannot be written is dropped, said once: the run
	 * it watches goes on) */
	if (write(logfd, buf, n + 1) != (ssize_t)(n + 1)) {
		warnx_("SPIRT_RUN_LOG: cannot write:");
		close(logfd);
		logfd = -1;
	}
}

/* -D: one entry of the directory's tree removed, the deepest first */
static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	if (remove(path) != 0 && errno != ENOENT)
		warnx_("-D: cannot remove %s:", path);
	return 0;
}

int
main(int argc, char **argv)
{
	struct spirt_sup_event ev;
	struct spirt_sup *s;
	uint64_t ms = 30000, wms = 0, end = 0;
	const char *act, *dir = NULL;
	int c, rc = 0, ex = 0, sfd, dflag = 0, clk = 0, rd = 0;

	progname = "spirt-run";
	pp = getppid();
	checkfds();
	parent_watch();

	while ((c = opt_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case 'c': clk = 1; break;
		case 'D': dir = optarg; break;
		case 'd':
			ms = eparse_u64("-d", optarg, 1, 86400000);
			dflag = 1;
			break;
		case 'r': rd = 1; break;
		case 'u': end = eparse_u64("-u", optarg, 1, UINT64_MAX / 2); break;
		case 'w': wms = eparse_u64("-w", optarg, 0, 86400000) + 1; break;
		case 'V': print_version();
		default: usage(1);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0 || clk + rd + (wms != 0) + (dflag || dir) > 1 ||
	    (end != 0 && !rd && wms == 0) || (rd && end == 0))
		usage(1);
	if (clk)
		return out("%llu\n", (unsigned long long)spirt_sup_now()) ?
		    SPIRT_EX_IOERR : fshut_stdout(0);
	if (wms != 0)
		return wait_ms(wms - 1, end);
	if (rd)
		return read_line(end);

	if ((act = getenv("SPIRT_RUN_LOG")) != NULL && *act != '\0' &&
	    (logfd = open(act, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) < 0)
		die(SPIRT_EX_CANTCREAT, "SPIRT_RUN_LOG: %s: %s", act,
		    strerror(errno));
	if ((rc = sigpipe_open(&sfd)) != 0 ||
	    (rc = spirt_sup_open(&s, 0, sfd)) != 0)
		die(SPIRT_EX_OSERR, "cannot supervise: %s", strerror(rc));

	for (;;) {
		act = "read a request or an answer";
		if ((rc = spirt_sup_next(s, &ev)) != 0) {
			warnx_("%s: %s", act, strerror(rc));
			ex = SPIRT_EX_IOERR;
			break;
		}
		act = "write stdout";
		switch (ev.kind) {
		case SPIRT_SUP_INPUT:
			log_request(ev.line);
			ex = request(s, (char *)ev.line, ms);
			break;
		case SPIRT_SUP_LONG:
			ex = out("refused 64 %.40s: longer than %d bytes\n",
			    ev.line, SPIRT_SUP_LINE);
			break;
		case SPIRT_SUP_ANSWER:
		case SPIRT_SUP_DIED:
		case SPIRT_SUP_LATE:
			ex = fan.on ? fan_event(s, &ev, ms) : tell(&ev, ms);
			break;
		case SPIRT_SUP_EOF:
			break;
		case SPIRT_SUP_SIGNAL:
			ex = SPIRT_EX_TEMPFAIL;
			break;
		}
		if (ev.kind == SPIRT_SUP_EOF || ev.kind == SPIRT_SUP_SIGNAL)
			break;
		if (ex != 0) {
			/* the driver gone (EPIPE, SIGPIPE ignored): quietly */
			if (errno != EPIPE)
				warnx_("%s:", act);
			break;
		}
	}

	fan_end();
	spirt_sup_stop(s, GRACE_MS);
	spirt_sup_close(s);
	if (dir != NULL)
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (ex == SPIRT_EX_IOERR)
		return ex;
	return fshut_stdout(ex);
}
