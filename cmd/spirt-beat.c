/* spirt-beat.c - heartbeats: members beat, a watcher declares the silent
 * ones dead and runs a command for each */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "beat.h"
#include "io.h"
#include "keys.h"
#include "opt.h"
#include "remote.h"
#include "store.h"
#include "tool.h"

#define MAXDEAD 64              /* deaths handled per pass */

static struct {
	const char *store, *model, *ondead, *check;
	struct spirt_beat_budget bu;
	int budget_set, status, role;
	uint64_t count, step;
	unsigned odtimeout;
} o;

static volatile sig_atomic_t stop;

/* what the long-only options return */
enum { CHECK = 256, DEAD, ONDEAD, ODTMO, STATUS, SUSPECT };

static const struct opt opts[] = {
	{ 0, NULL, "beat", "beat as member into the store and to each url" },
	{ 0, NULL, "watch",
	    "watch the store's beats, declare the silent dead" },
	{ 0, NULL, "ls", "members, state, age of the last beat, step" },
	{ 'B', "beat", "MS",
	    "the beat interval, the budget's base (default 1000)" },
	{ 'c', "count", "N", "beat or watch N times, then exit" },
	{ 'm', "model", "NAME",
	    "beat: the step is model NAME's newest in the store" },
	{ 'R', "role", "ROLE", "beat: peer (default) or function" },
	OPT_STORE,
	{ 't', "step", "N", "beat: the step to report" },
	{ CHECK, "check", "ID", "exit 0 if member ID is alive, 1 if not" },
	{ DEAD, "dead", "MS",
	    "dead after MS without a beat (default 10 beats)" },
	{ ONDEAD, "on-dead", "CMD",
	    "watch: run CMD for each death (%m member, %r role,\n"
	    "%s step, %% a %)" },
	{ ODTMO, "on-dead-timeout", "MS",
	    "watch: CMD's deadline (default --dead)" },
	{ STATUS, "status", "S", "beat: live (default) or catchup" },
	{ SUSPECT, "suspect", "MS",
	    "suspect after MS without a beat (default 3 beats)" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "watch: say when a member comes or recovers" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-beat [-q] [-B ms] [-c count] [-m model] [-R role] "
	"[-s store]\n"
	"           [-t step] [--status status] beat member [url ...]\n"
	"       spirt-beat [-qv] [-B ms] [-c count] [-s store] [--dead ms]\n"
	"           [--on-dead cmd] [--on-dead-timeout ms] "
	"[--suspect ms] watch\n"
	"       spirt-beat [-B ms] [-s store] [--dead ms] [--suspect ms] ls\n"
	"       spirt-beat [-B ms] [-s store] [--dead ms] [--suspect ms]\n"
	"           --check member\n",
	NULL, NULL, 21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

static unsigned
ems(const char *opt, const char *s)
{
	return (unsigned)eparse_u64(opt, s, 1, 86400000);
}

static void
options(int argc, char **argv)
{
	unsigned beat = 0, suspect = 0, dead = 0;
	int c;

	o.step = SPIRT_NOSTEP;
	o.status = SPIRT_BEAT_LIVE;
	o.role = SPIRT_BEAT_PEER;
	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'B': beat = ems("-B", optarg); break;
		case 'c': o.count = eparse_u64("-c", optarg, 1, UINT64_MAX);
			  break;
		case 'm': o.model = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'R':
			if (!(o.role = spirt_beat_role_parse(optarg))) {
				warnx_("-R: invalid role \"%s\" (peer or "
				    "function)", optarg);
				usage(1);
			}
			break;
		case 's': o.store = optarg; break;
		case 't': o.step = eparse_u64("-t", optarg, 0,
			    SPIRT_NOSTEP - 1); break;
		case 'v': spirt_verbose++; break;
		case 'V': print_version();
		case CHECK: o.check = optarg; break;
		case DEAD: dead = ems("--dead", optarg); break;
		case ONDEAD: o.ondead = optarg; break;
		case ODTMO: o.odtimeout = ems("--on-dead-timeout", optarg);
			    break;
		case STATUS:
			if (strcmp(optarg, "live") == 0)
				o.status = SPIRT_BEAT_LIVE;
			else if (strcmp(optarg, "catchup") == 0)
				o.status = SPIRT_BEAT_CATCHUP;
			else {
				warnx_("--status: invalid status \"%s\" "
				    "(live or catchup)", optarg);
				usage(1);
			}
			break;
		case SUSPECT: suspect = ems("--suspect", optarg); break;
		default: usage(1);
		}
	o.budget_set = beat || suspect || dead;
	if (!beat && getenv("SPIRT_BEAT") && *getenv("SPIRT_BEAT"))
		beat = ems("SPIRT_BEAT", getenv("SPIRT_BEAT"));
	spirt_beat_budget_init(&o.bu, beat ? beat : SPIRT_BEAT_MS);
	if (suspect)
		o.bu.suspect_ms = suspect;
	if (dead)
		o.bu.dead_ms = dead;
	if (spirt_beat_budget_check(&o.bu)) {
		warnx_("budget: beat %u ms, suspect %u ms, dead %u ms: each "
		    "must be longer than the one before", o.bu.beat_ms,
		    o.bu.suspect_ms, o.bu.dead_ms);
		usage(1);
	}
	if (!o.odtimeout)
		o.odtimeout = o.bu.dead_ms;
}

static void
onsig(int sig)
{
	(void)sig;
	stop = 1;
}

static void
catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = onsig;  /* no SA_RESTART: a nap ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void
nap_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	if (!stop)
		nanosleep(&ts, NULL);
}

static struct spirt_store *
open_store(unsigned flags)
{
	const char *loc = o.store ? o.store : store_default();
	struct spirt_store *s;
	int rc;

	if ((rc = spirt_store_open(&s, loc, flags)) != 0)
		dierc(rc, "%s", loc);
	return s;
}

/* ---- beat ---- */

/* a destination: the store, or a peer's URL in a thread of its own */
struct dest {
	const char *loc;
	struct spirt_store *s;
	pthread_t th;
	int failing, done;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;              /* on CLOCK_MONOTONIC */
static struct spirt_beat cur;           /* the newest beat, under mu */
static uint64_t gen;                    /* its number, under mu */
static int last;                        /* cur is the last, under mu */

static int
put_beat(struct spirt_txn *t, void *arg)
{
	return spirt_beat_put(t, arg);
}

static void
send_beat(struct dest *d, const struct spirt_beat *b)
{
	int rc = 0;

	/* another store on this host may not be there yet: open it late */
	if (d->s == NULL)
		rc = spirt_store_open(&d->s, d->loc, 0);
	if (rc == 0)
		rc = spirt_store_write(d->s, put_beat, (void *)b);

	if (rc && !d->failing)
		warning("%s: beat %llu failed: %s", d->loc,
		    (unsigned long long)b->seq, errcause(rc));
	else if (!rc && d->failing)
		warning("%s: beats arrive again (beat %llu)", d->loc,
		    (unsigned long long)b->seq);
	d->failing = rc != 0;
}

static void *
dest_main(void *arg)
{
	struct dest *d = arg;
	struct spirt_beat b;
	uint64_t seen = 0;
	int end;

	for (;;) {
		pthread_mutex_lock(&mu);
		while (gen == seen)
			pthread_cond_wait(&cv, &mu);
		b = cur;
		seen = gen;
		end = last;
		pthread_mutex_unlock(&mu);
		send_beat(d, &b);
		if (end)
			break;
	}
	pthread_mutex_lock(&mu);
	d->done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

struct newest {
	const char *model;
	uint64_t step;
};

static int
newest_one(void *arg, const char *key, const void *val, size_t len)
{
	struct newest *n = arg;
	char name[SPIRT_NAME_PART_MAX + 1];
	uint64_t t;

	(void)val;
	(void)len;
	if (spirt_model_key_parse(key, name, sizeof name, &t) == 0 &&
	    strcmp(name, n->model) == 0 && (n->step == SPIRT_NOSTEP ||
	    t > n->step))
		n->step = t;
	return 0;
}

/* the step of the newest model/<model>@t in s, or SPIRT_NOSTEP */
static uint64_t
newest(struct spirt_store *s)
{
	struct newest n = { o.model, SPIRT_NOSTEP };
	char prefix[SPIRT_KEY_MAX + 1];
	struct spirt_txn *t;

	if (spirt_key_model_prefix(prefix, sizeof prefix, o.model) ||
	    spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY))
		return SPIRT_NOSTEP;
	if (spirt_store_list(t, prefix, newest_one, &n))
		n.step = SPIRT_NOSTEP;
	spirt_txn_abort(t);
	return n.step;
}

static int
beat(int argc, char **argv)
{
	struct dest *d;
	struct spirt_store *local = NULL;
	struct timespec until;
	pthread_condattr_t ca;
	size_t nd = 0;
	uint64_t seq = 0;
	pid_t parent;
	int rc, all;

	if (argc < 1 || o.check || o.ondead)
		usage(1);
	if (spirt_key_id_check(argv[0])) {
		warnx_("%s: invalid member id (1-32 of A-Z a-z 0-9 . _ -)",
		    argv[0]);
		usage(1);
	}
	if (o.model && o.step != SPIRT_NOSTEP) {
		warnx_("-m and -t: one tells the step");
		usage(1);
	}
	if (o.model)
		echeck_model("-m", o.model);
	if ((rc = spirt_remote_global_init()) != 0)
		dierc(rc, "libcurl");
	d = ecalloc((size_t)argc, sizeof *d);
	/* the store, unless only urls were named */
	if (o.store || argc == 1 || o.model) {
		local = open_store(0);
		d[nd].loc = spirt_store_location(local);
		d[nd++].s = local;
	}
	for (int i = 1; i < argc; i++) {
		/* a URL's credentials are checked at once; a path is opened
		 * at its first beat */
		if (spirt_store_is_url(argv[i]) &&
		    (rc = spirt_store_open(&d[nd].s, argv[i], 0)) != 0)
			dierc(rc, "%s", argv[i]);
		d[nd++].loc = argv[i];
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &ca);
	catch_signals();
	memset(&cur, 0, sizeof cur);
	snprintf(cur.member, sizeof cur.member, "%s", argv[0]);
	cur.role = o.role;
	cur.status = o.status;
	cur.interval_ms = o.bu.beat_ms;
	if ((rc = spirt_beat_boot_new(cur.boot)) != 0)
		dierc(rc, "random boot id");
	for (size_t i = local ? 1 : 0; i < nd; i++)
		if ((rc = pthread_create(&d[i].th, NULL, dest_main, &d[i])))
			dierc(rc, "thread");
	parent = getppid();
	while (!stop) {
		struct spirt_beat b;

		/* the beats are the sign of life of the process that started
		 * the beater: when it is gone, so are they (no last word) */
		if (getppid() != parent)
			break;

		pthread_mutex_lock(&mu);
		cur.seq = seq++;
		cur.step = o.model ? newest(local) : o.step;
		last = o.count && seq >= o.count;
		b = cur;
		gen++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		if (local)
			send_beat(&d[0], &b);
		if (last)
			break;
		nap_ms(o.bu.beat_ms);
	}
	/* stopped by a signal: say so once, then leave within a beat */
	if (!last && getppid() != parent)
		return 0;       /* orphaned: fall silent at once */
	pthread_mutex_lock(&mu);
	if (!last) {
		cur.seq = seq++;
		cur.status = SPIRT_BEAT_STOP;
		last = 1;
		gen++;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	if (local && cur.status == SPIRT_BEAT_STOP)
		send_beat(&d[0], &cur);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 1 + o.bu.beat_ms / 1000;
	pthread_mutex_lock(&mu);
	do {
		all = 1;
		for (size_t i = local ? 1 : 0; i < nd; i++)
			all &= d[i].done;
	} while (!all && pthread_cond_timedwait(&cv, &mu, &until) == 0);
	pthread_mutex_unlock(&mu);
	if (!all)
		return 0;       /* a peer that does not answer: leave */
	for (size_t i = 0; i < nd; i++) {
		if (i > 0 || !local)
			pthread_join(d[i].th, NULL);
		if (d[i].s)
			spirt_store_close(d[i].s);
	}
	free(d);
	spirt_remote_global_cleanup();
	return 0;
}

/* ---- watch ---- */

/* --on-dead: "%m", "%r", "%s", "%%"; anything else after % is refused */
static int
template_ok(const char *t)
{
	for (; *t; t++)
		if (*t == '%' && (t[1] == 'm' || t[1] == 'r' || t[1] == 's' ||
		    t[1] == '%'))
			t++;
		else if (*t == '%')
			return 0;
	return 1;
}

/* the command for h's death: ids, roles and steps are [A-Za-z0-9._-],
 * so nothing they hold means anything to sh */
static char *
expand(const struct spirt_health *h)
{
	char step[24];
	size_t n = 1;
	char *out, *p;

	if (h->b.step == SPIRT_NOSTEP)
		snprintf(step, sizeof step, "none");
	else
		snprintf(step, sizeof step, "%llu",
		    (unsigned long long)h->b.step);
	for (const char *t = o.ondead; *t; t++)
		n += *t == '%' ? 40 : 1;
	p = out = emalloc(n);
	for (const char *t = o.ondead; *t; t++) {
		const char *v = NULL;

		if (*t != '%') {
			*p++ = *t;
			continue;
		}
		switch (*++t) {
		case 'm': v = h->b.member; break;
		case 'r': v = spirt_beat_role_name(h->b.role); break;
		case 's': v = step; break;
		default: v = "%"; break;
		}
		p += snprintf(p, n - (size_t)(p - out), "%s", v);
	}
	*p = '\0';
	return out;
}

struct child {
	pid_t pid;
	char member[SPIRT_KEY_ID_MAX + 1];
	uint64_t end, kill_at;          /* monotonic ns */
};

static struct child kids[MAXDEAD];

static void
run_ondead(const struct spirt_health *h, uint64_t now)
{
	struct child *k = NULL;
	char *cmd;
	pid_t pid;

	for (size_t i = 0; i < MAXDEAD && !k; i++)
		if (kids[i].pid == 0)
			k = &kids[i];
	if (k == NULL) {
		warning("%s: --on-dead not run: %d commands run already",
		    h->b.member, MAXDEAD);
		return;
	}
	cmd = expand(h);
	if (spirt_verbose)
		info("%s: running: %s", h->b.member, cmd);
	if ((pid = fork()) < 0) {
		warnx_("%s: --on-dead: fork:", h->b.member);
		free(cmd);
		return;
	}
	if (pid == 0) {
		char step[24];

		setpgid(0, 0);
		snprintf(step, sizeof step, "%llu",
		    (unsigned long long)h->b.step);
		setenv("SPIRT_DEAD_MEMBER", h->b.member, 1);
		setenv("SPIRT_DEAD_ROLE", spirt_beat_role_name(h->b.role), 1);
		setenv("SPIRT_DEAD_STEP", h->b.step == SPIRT_NOSTEP ? "none" :
		    step, 1);
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	free(cmd);
	k->pid = pid;
	memcpy(k->member, h->b.member, sizeof k->member);
	k->member[sizeof k->member - 1] = '\0';
	k->end = now + (uint64_t)o.odtimeout * 1000000u;
	k->kill_at = 0;
}

/* reap what ended; a command past its deadline gets SIGTERM, then
 * SIGKILL a second later */
static size_t
reap(uint64_t now)
{
	size_t running = 0;

	for (size_t i = 0; i < MAXDEAD; i++) {
		struct child *k = &kids[i];
		int st;
		pid_t r;

		if (k->pid == 0)
			continue;
		if ((r = waitpid(k->pid, &st, WNOHANG)) == k->pid) {
			if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
				warning("%s: --on-dead exited with status %d",
				    k->member, WEXITSTATUS(st));
			else if (WIFSIGNALED(st))
				warning("%s: --on-dead killed by signal %d",
				    k->member, WTERMSIG(st));
			k->pid = 0;
			continue;
		}
		running++;
		if (k->kill_at == 0 && now >= k->end) {
			warning("%s: --on-dead still running after %u ms: "
			    "stopped", k->member, o.odtimeout);
			kill(-k->pid, SIGTERM);
			k->kill_at = now + 1000000000u;
		} else if (k->kill_at && now >= k->kill_at) {
			kill(-k->pid, SIGKILL);
		}
	}
	return running;
}

/* what the watcher said last of each member, to speak of changes only */
struct said {
	char member[SPIRT_KEY_ID_MAX + 1];
	int state;
};

static void
report(struct spirt_store *s, const unsigned char *host, uint64_t now,
    struct said **said, size_t *nsaid)
{
	struct spirt_health *all;
	size_t n;

	if (spirt_health_list(s, &all, &n) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		double age;
		int st = spirt_health_state(&all[i], host, now, NULL, &age);
		struct said *w = NULL;

		for (size_t j = 0; j < *nsaid && !w; j++)
			if (!strcmp((*said)[j].member, all[i].b.member))
				w = &(*said)[j];
		if (w == NULL) {
			*said = realloc(*said, (*nsaid + 1) * sizeof **said);
			if (*said == NULL)
				die(SPIRT_EX_OSERR, "out of memory");
			w = &(*said)[(*nsaid)++];
			memcpy(w->member, all[i].b.member, sizeof w->member);
			w->member[sizeof w->member - 1] = '\0';
			w->state = SPIRT_H_UNKNOWN;
		}
		if (st == w->state)
			continue;
		if (st == SPIRT_H_SUSPECT)
			warning("%s: suspect: no beat for %.1f s", w->member,
			    age / 1e3);
		else if (st == SPIRT_H_DEAD)
			warning("%s: dead: %s", w->member,
			    all[i].b.status == SPIRT_BEAT_STOP ? "it stopped" :
			    "no beat for too long");
		else if (spirt_verbose || w->state == SPIRT_H_SUSPECT ||
		    w->state == SPIRT_H_DEAD)
			info("%s: %s", w->member, spirt_health_state_name(st));
		w->state = st;
	}
	free(all);
}

static int
watch(int argc)
{
	struct spirt_health dh[MAXDEAD];
	struct spirt_store *s;
	struct said *said = NULL;
	unsigned char host[SPIRT_BEAT_BOOT];
	size_t nsaid = 0, bad, nd;
	uint64_t passes = 0;
	pid_t parent;
	int rc;

	if (argc != 0 || o.check || o.model || o.step != SPIRT_NOSTEP)
		usage(1);
	if (o.ondead && !template_ok(o.ondead)) {
		warnx_("--on-dead: a %% other than %%m, %%r, %%s or %%%%");
		usage(1);
	}
	if ((rc = spirt_host_boot(host)) != 0)
		dierc(rc, "/proc/sys/kernel/random/boot_id");
	s = open_store(0);
	if (spirt_store_is_url(spirt_store_location(s)))
		die(SPIRT_EX_USAGE, "%s: a watcher watches a local store",
		    spirt_store_location(s));
	if ((rc = spirt_watch_start(s, spirt_mono_ns(), host)) != 0)
		dierc(rc, "%s", spirt_store_location(s));
	catch_signals();
	parent = getppid();
	/* (a watcher whose starter is gone stops too: a killed driver
	 * leaves nothing behind) */
	while (!stop && getppid() == parent) {
		uint64_t now = spirt_mono_ns();

		if ((rc = spirt_watch_pass(s, &o.bu, now, host, dh, MAXDEAD,
		    &nd, &bad)) != 0)
			dierc(rc, "%s", spirt_store_location(s));
		report(s, host, now, &said, &nsaid);
		for (size_t i = 0; o.ondead && i < nd; i++)
			run_ondead(&dh[i], now);
		reap(now);
		if (o.count && ++passes >= o.count)
			break;
		nap_ms(o.bu.beat_ms / 2 ? o.bu.beat_ms / 2 : 1);
	}
	/* the commands under way get their deadline */
	while (reap(spirt_mono_ns()))
		nap_ms(20);
	free(said);
	spirt_store_close(s);
	return fshut_stdout(0);
}

/* ---- ls and --check ---- */

static int
ls(int argc)
{
	struct spirt_health *all;
	struct spirt_store *s;
	unsigned char host[SPIRT_BEAT_BOOT];
	uint64_t now;
	size_t n;
	int rc;

	if (argc != 0 || o.check || o.ondead || o.model)
		usage(1);
	if ((rc = spirt_host_boot(host)) != 0)
		dierc(rc, "/proc/sys/kernel/random/boot_id");
	s = open_store(SPIRT_STORE_RDONLY);
	if ((rc = spirt_health_list(s, &all, &n)) != 0)
		dierc(rc, "%s", spirt_store_location(s));
	now = spirt_mono_ns();
	for (size_t i = 0; i < n; i++) {
		const struct spirt_health *h = &all[i];
		double age;
		int st = spirt_health_state(h, host, now, o.budget_set ?
		    &o.bu : NULL, &age);

		printf("%s\t%s\t%s\t", h->b.member,
		    spirt_beat_role_name(h->b.role),
		    spirt_health_state_name(st));
		if (age < 0)
			printf("-\t");
		else
			printf("%.1f\t", age / 1e3);
		if (h->b.step == SPIRT_NOSTEP)
			printf("-\t");
		else
			printf("%llu\t", (unsigned long long)h->b.step);
		printf("%llu\n", (unsigned long long)h->b.seq);
	}
	free(all);
	spirt_store_close(s);
	return fshut_stdout(0);
}

static int
check(int argc)
{
	struct spirt_health h;
	struct spirt_store *s;
	unsigned char host[SPIRT_BEAT_BOOT];
	int rc, st;

	if (argc != 0 || o.ondead || o.model)
		usage(1);
	if (spirt_key_id_check(o.check)) {
		warnx_("--check: invalid member id \"%s\"", o.check);
		usage(1);
	}
	if ((rc = spirt_host_boot(host)) != 0)
		dierc(rc, "/proc/sys/kernel/random/boot_id");
	s = open_store(SPIRT_STORE_RDONLY);
	rc = spirt_health_get(s, o.check, &h);
	spirt_store_close(s);
	if (rc == SPIRT_ENOTFOUND)
		return SPIRT_EX_NO;     /* never seen: no sign of life */
	if (rc != 0)
		dierc(rc, "health/%s", o.check);
	st = spirt_health_state(&h, host, spirt_mono_ns(), o.budget_set ?
	    &o.bu : NULL, NULL);
	return st == SPIRT_H_LIVE || st == SPIRT_H_SUSPECT ||
	    st == SPIRT_H_JOINING ? 0 : SPIRT_EX_NO;
}

int
main(int argc, char **argv)
{
	const char *cmd;

	progname = "spirt-beat";
	checkfds();
	parent_watch();
	store_env();

	options(argc, argv);
	argc -= optind;
	argv += optind;

	if (o.check)
		return check(argc);
	if (argc < 1)
		usage(1);
	cmd = argv[0];
	argc--;
	argv++;
	if (strcmp(cmd, "beat") == 0)
		return beat(argc, argv);
	if (strcmp(cmd, "watch") == 0)
		return watch(argc);
	if (strcmp(cmd, "ls") == 0)
		return ls(argc);
	warnx_("%s: unknown command (beat, watch or ls)", cmd);
	usage(1);
}
