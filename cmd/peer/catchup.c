/*
 * catchup.c - spirt-peer catch-up: a peer behind the others (restarted
 * after it died, or cut off by a partition) fetches from one of them the
 * model of the step it joins at, with its optimiser state and model state
 * (spirt-peer(1), spirt-model(5)); or, first, says which of the others
 * is the most advanced (-P).  spirt-train's rejoin (--beat) names the
 * step from it; the model is checked against the others' signed digests
 * in that step's round, as every member's is.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "beat.h"
#include "catchup.h"
#include "crypto.h"
#include "io.h"
#include "keys.h"
#include "opt.h"
#include "peers.h"
#include "remote.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

#define DEADLINE_DEFAULT 30000u /* ms the source may make no step */
#define POLL_MS 50              /* between two asks of the source */
#define PAST_EVERY 10           /* asks between two looks at its beats */
#define ASK_TIMEOUT "10s"       /* -P: a peer's deadline to answer */
#define ASK_AGAIN_MS 1000       /* -P --wait: between two rounds of asks */
#define STILL_MS 2000           /* --join: the same step this long: still */
#define MARGIN_MAX (1ull << 40) /* --join's margin, --epoch */
#define STEP_MAX (1ull << 62)   /* --join: a step the sums take */
#define PACE_STEPS (1 << 20)    /* --join 0: steps counted in a pause */

enum { AFTER = 256, DEADLINE, EPOCH, EVERY, JOIN, LAST, PACE, PEER, SEEN,
    WAIT };

const struct opt catchup_opts[] = {
	{ 0, NULL, "catch-up", "fetch model@T and its state from peer ID "
	    "at SOURCE" },
	{ 'm', "model", "NAME", "the model" },
	{ 'q', "quiet", NULL, NULL },
	{ 's', "store", "PATH", NULL },
	{ 'P', "peers", "FILE", "say which other peer is the most advanced" },
	{ 't', "step", "T", "the step this peer joins at" },
	{ AFTER, "after", "J", "--join: the step named last time" },
	{ DEADLINE, "deadline", "MS", "longest the source may make no step" },
	{ EPOCH, "epoch", "S", "--join: the steps of an epoch" },
	{ EVERY, "every", "H", "the source's rounds are H steps" },
	{ JOIN, "join", "MARGIN", "-P: and the step to join at, MARGIN "
	    "ahead (0: by --pace)" },
	{ LAST, "last", NULL, "T is the run's last step: no round follows" },
	{ PACE, "pace", "MS", "-P: and that peer's step MS later" },
	{ PEER, "peer", "I", "-P: this peer is line I of FILE" },
	{ SEEN, "seen", "STEP,MS", "--join: the newest step last time, and "
	    "when" },
	{ WAIT, "wait", NULL, "-P: until one answers, up to --deadline" },
	{ 'h', "help", NULL, NULL },
	{ 0 }
};

/* the records, in the order they are stored: a model's newest version is
 * whole (its state first) */
enum { OPT, MSTATE, MODEL, NREC };
static const char *const prefix[NREC] = { "opt", "mstate", "model" };

struct catchup {
	const char *model, *id, *source;
	const char *peers;              /* -P */
	int64_t peer;                   /* --peer; -1: none */
	int wait;                       /* --wait */
	int last;                       /* --last: no round after step */
	uint64_t pace;                  /* --pace ms; 0: none */
	uint64_t step, every;
	int everygiven;                 /* --every: the run has rounds */
	int join;                       /* --join */
	uint64_t margin, epoch;         /* --join, --epoch */
	int64_t after;                  /* --after; -1: none */
	int seen;                       /* --seen STEP,MS given */
	uint64_t seenstep, seenms;
	uint64_t deadline_ns;
	unsigned char host[SPIRT_BEAT_BOOT];
	int hashost;
	char key[NREC][SPIRT_KEY_MAX + 1];
	struct spirt_tensor t[NREC];    /* the records fetched, their */
	const void *pl[NREC];           /* payloads in the source's txn */
	int has[NREC];
	int had;                        /* the store had model@T already */
};

/*
 * The source's step as this store's watcher saw its beats (health/<id>):
 * 1 and *step (SPIRT_NOSTEP: none), or 2 if it is dead, or 0 if the
 * watcher has no word of it.
 */
static int
beat_step(struct spirt_store *s, const struct catchup *c, uint64_t *step)
{
	struct spirt_health h;

	if (!c->hashost || spirt_health_get(s, c->id, &h) != 0)
		return 0;
	if (spirt_health_state(&h, c->host, spirt_mono_ns(), NULL, NULL) ==
	    SPIRT_H_DEAD)
		return 2;
	*step = h.b.step;
	return 1;
}

/*
 * 1 if the source is dead or past step T's round (its beats name a step
 * of a later round: it will not serve T again); a step it moved to puts
 * the deadline *pend off again (*seen the step seen last)
 */
static int
past(struct spirt_store *s, const struct catchup *c, uint64_t *seen,
    uint64_t *pend)
{
	uint64_t step;
	int st = beat_step(s, c, &step);

	if (st == 2)
		return 1;
	if (st == 0 || step == SPIRT_NOSTEP)
		return 0;
	if (step >= c->step + c->every)
		return 1;
	if (step != *seen) {
		*seen = step;
		*pend = spirt_mono_ns() + c->deadline_ns;
	}
	return 0;
}

/* the records of step T in the source's transaction: 0 if model@T is
 * there, else its code (not there yet, or the source does not answer) */
static int
fetch_model(struct spirt_txn *t, struct catchup *c)
{
	return spirt_store_get_tensor(t, c->key[MODEL], &c->t[MODEL],
	    &c->pl[MODEL], 1);
}

/* the state that goes with model@T: 0, or 1 if the join missed (opt@T
 * not there, or the source went past T meanwhile) */
static int
fetch_state(struct spirt_txn *t, struct catchup *c)
{
	int rc;

	if (spirt_store_get_tensor(t, c->key[OPT], &c->t[OPT], &c->pl[OPT],
	    1) != 0)
		return 1;
	rc = spirt_store_get_tensor(t, c->key[MSTATE], &c->t[MSTATE],
	    &c->pl[MSTATE], 1);
	if (rc != 0 && rc != SPIRT_ENOTFOUND)
		return 1;
	c->has[MSTATE] = rc == 0;
	c->has[OPT] = c->has[MODEL] = 1;
	return 0;
}

/* the records into this store in one transaction, unless it has model@T */
static int
put_txn(struct spirt_txn *t, void *arg)
{
	struct catchup *c = arg;
	const void *v;
	size_t n;
	int rc;

	c->had = 0;
	if ((rc = spirt_store_get(t, c->key[MODEL], &v, &n)) == 0) {
		c->had = 1;
		return 0;
	}
	if (rc != SPIRT_ENOTFOUND)
		return rc;
	for (int i = 0; i < NREC; i++)
		if (c->has[i] && (rc = spirt_store_put_tensor(t, c->key[i],
		    &c->t[i], c->pl[i], 0)) != 0)
			return rc;
	return 0;
}

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Ask the source for model@T every POLL_MS until it has it (then its
 * state: SPIRT_EX_OK, the transaction *t left open), until the join
 * missed (SPIRT_EX_UNAVAILABLE), or die with 75 once the source made no
 * step for the deadline.
 */
static int
wait_source(struct spirt_store *self, struct spirt_store **src,
    struct spirt_txn **t, struct catchup *c)
{
	uint64_t seen = SPIRT_NOSTEP, pend;
	unsigned i = 0;
	int rc;

	/* (the step the source stands at now: the deadline runs from it) */
	if (beat_step(self, c, &seen) != 1)
		seen = SPIRT_NOSTEP;
	pend = spirt_mono_ns() + c->deadline_ns;
	for (;;) {
		/* (a path that is no store yet is asked again; a URL's
		 * credentials are checked at once) */
		if (!*src && (rc = spirt_store_open(src, c->source,
		    SPIRT_STORE_RDONLY)) != 0 &&
		    (spirt_store_is_url(c->source) || rc != ENOENT))
			dierc(rc, "catch-up: %s", c->source);
		if (*src && spirt_txn_begin(t, *src, SPIRT_TXN_RDONLY) == 0) {
			if (fetch_model(*t, c) == 0) {
				/* (the run's last model is final: a source
				 * that ended since, dead to the watcher,
				 * still holds it) */
				if (fetch_state(*t, c) == 0 && (c->last ||
				    !past(self, c, &seen, &pend)))
					return SPIRT_EX_OK;
				spirt_txn_abort(*t);
				return SPIRT_EX_UNAVAILABLE;
			}
			spirt_txn_abort(*t);
		}
		if (++i % PAST_EVERY == 0) {
			if (!c->last && past(self, c, &seen, &pend))
				return SPIRT_EX_UNAVAILABLE;
			if (spirt_mono_ns() >= pend)
				die(SPIRT_EX_TEMPFAIL, "catch-up: %s did not "
				    "go on in %llu ms (--deadline)", c->id,
				    (unsigned long long)(c->deadline_ns /
				    1000000));
		}
		pause_ms(POLL_MS);
	}
}

/* --seen STEP,MS */
static void
seen(struct catchup *c, const char *arg)
{
	char buf[64], *comma;

	if (strlen(arg) >= sizeof buf || !(comma = strchr(strcpy(buf, arg),
	    ',')))
		die(SPIRT_EX_USAGE, "--seen %s: not STEP,MS", arg);
	*comma = '\0';
	c->seenstep = eparse_u64("--seen", buf, 0, STEP_MAX);
	c->seenms = eparse_u64("--seen", comma + 1, 0, STEP_MAX);
	c->seen = 1;
}

static void
options(const struct optset *cli, int argc, char **argv, struct catchup *c,
    const char **store)
{
	int ch, havestep = 0;

	optind = 1;
	while ((ch = opt_next(cli, argc, argv)) != -1)
		switch (ch) {
		case 'm': c->model = optarg; break;
		case 'P': c->peers = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 's': *store = optarg; break;
		case 't': c->step = eparse_u64("-t", optarg, 0,
			  SPIRT_NOSTEP - 2); havestep = 1; break;
		case DEADLINE: c->deadline_ns = 1000000 * eparse_u64(
			    "--deadline", optarg, 1, 86400000); break;
		case EVERY: c->every = eparse_u64("--every", optarg, 1,
			    1000000); c->everygiven = 1; break;
		case AFTER: c->after = eparse_i64("--after", optarg, -1,
			    STEP_MAX); break;
		case EPOCH: c->epoch = eparse_u64("--epoch", optarg, 1,
			    MARGIN_MAX); break;
		case JOIN: c->margin = eparse_u64("--join", optarg, 0,
			    MARGIN_MAX); c->join = 1; break;
		case SEEN: seen(c, optarg); break;
		case PEER: c->peer = eparse_i64("--peer", optarg, 0,
			    1 << 20); break;
		case PACE: c->pace = eparse_u64("--pace", optarg, 1,
			    86400000); break;
		case WAIT: c->wait = 1; break;
		case LAST: c->last = 1; break;
		default: opt_usage(cli, SPIRT_EX_USAGE);
		}
	if (c->peers ? argc != optind || havestep || c->peer < 0 || c->last :
	    argc - optind != 2 || !havestep || c->peer >= 0 || c->wait ||
	    c->pace || c->join)
		opt_usage(cli, SPIRT_EX_USAGE);
	/* (--join names a step: the epoch's; --join 0 measures the pace) */
	if (c->join ? !c->epoch || (c->margin == 0 && !c->pace) :
	    c->epoch || c->after >= 0 || c->seen || (c->peers &&
	    c->everygiven))
		opt_usage(cli, SPIRT_EX_USAGE);
	if (!c->peers) {
		c->id = argv[optind];
		c->source = argv[optind + 1];
	}
	if (c->id && spirt_key_id_check(c->id) != 0) {
		warnx_("catch-up: invalid peer id \"%s\"", c->id);
		opt_usage(cli, SPIRT_EX_USAGE);
	}
	if ((c->model = opt_env(c->model, "SPIRT_MODEL", NULL)) == NULL) {
		warnx_("no model (-m or SPIRT_MODEL)");
		opt_usage(cli, SPIRT_EX_USAGE);
	}
	echeck_model("-m", c->model);
	for (int i = 0; i < NREC; i++)
		snprintf(c->key[i], sizeof c->key[i], "%s/%s@%llu",
		    prefix[i], c->model, (unsigned long long)c->step);
}

/* the newest step of the model list's keys */
static int
newest_key(void *arg, const char *key, const void *val, size_t len)
{
	uint64_t *best = arg, t;
	const char *at = strrchr(key, '@');
	char *end;

	(void)val;
	(void)len;
	if (!at || !isdigit((unsigned char)at[1]))
		return 0;
	errno = 0;
	t = strtoull(at + 1, &end, 10);
	if (*end == '\0' && errno == 0 && (*best == SPIRT_NOSTEP || t > *best))
		*best = t;
	return 0;
}

/* the newest model step in the store at loc: 0 and *step (SPIRT_NOSTEP:
 * it has none), or the code of a store that does not answer */
static int
newest_at(const char *loc, const char *model, uint64_t *step)
{
	struct spirt_store *s;
	struct spirt_txn *t;
	char pre[SPIRT_KEY_MAX + 1];
	int rc;

	snprintf(pre, sizeof pre, "model/%s@", model);
	*step = SPIRT_NOSTEP;
	if ((rc = spirt_store_open(&s, loc, SPIRT_STORE_RDONLY)) != 0)
		return rc;
	if ((rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)) == 0) {
		rc = spirt_store_list(t, pre, newest_key, step);
		spirt_txn_abort(t);
	}
	spirt_store_close(s);
	return rc;
}

/* what -P found: the newest model step (SPIRT_NOSTEP: none) and its
 * line; with --pace that peer's step later and the ms to it */
struct found {
	uint64_t step, later, ms;
	size_t i;
};

/*
 * -P: the other peer of the peers file whose store has the newest model
 * step (the first in the file of those as far).  --wait: while none
 * answers, ask again every second, up to --deadline.  --pace MS: then
 * that peer's newest step MS later (the same if it does not answer) and
 * the ms from before the pause to its answer: how fast the others go.
 * When none answers and one's server refused this peer (its key, token,
 * run or role: 65, as a newcomer with a token of another group), that is
 * the end: 65, naming it.
 */
static void
newest(const struct catchup *c, const struct peerline *pl, size_t n,
    struct found *f)
{
	uint64_t end = spirt_mono_ns() + c->deadline_ns, step, t0;
	int answered, rc, refused = 0;
	char why[512];
	size_t by = 0;

	f->i = 0;
	for (;;) {
		answered = 0;
		f->step = SPIRT_NOSTEP;
		for (size_t i = 0; i < n; i++) {
			/* (this peer's own line is not asked) */
			if ((int64_t)i == c->peer)
				continue;
			if ((rc = newest_at(pl[i].loc, c->model, &step))) {
				/* (its cause now: the next store's failure
				 * says its own) */
				if (!refused && spirt_exit(rc) ==
				    SPIRT_EX_DATAERR && strncmp(pl[i].loc,
				    "http://", 7) == 0) {
					refused = rc;
					by = i;
					snprintf(why, sizeof why, "%s",
					    errcause(rc));
				}
				continue;
			}
			answered = 1;
			if (step != SPIRT_NOSTEP && (f->step == SPIRT_NOSTEP ||
			    step > f->step)) {
				f->step = step;
				f->i = i;
			}
		}
		if (!answered && refused)
			die(spirt_exit(refused), "--peers %s: %s at %s "
			    "refused this peer: %s", c->peers, pl[by].id,
			    pl[by].loc, why);
		if (answered || !c->wait || spirt_mono_ns() >= end)
			break;
		pause_ms(ASK_AGAIN_MS);
	}
	f->later = f->step;
	f->ms = 0;
	if (f->step == SPIRT_NOSTEP || !c->pace)
		return;
	t0 = spirt_mono_ns();
	pause_ms((long)c->pace);
	if (newest_at(pl[f->i].loc, c->model, &f->later) != 0 ||
	    f->later == SPIRT_NOSTEP)
		f->later = f->step;
	f->ms = (spirt_mono_ns() - t0) / 1000000;
}

/* 1 if the record gagg/<step>/round of the store at loc has the line
 * "peer=<id> used": that round combined peer id's aggregate */
static int
combined(const char *loc, uint64_t step, const char *id)
{
	char key[SPIRT_KEY_MAX + 1], line[SPIRT_KEY_ID_MAX + 16];
	struct spirt_store *s;
	struct spirt_txn *t;
	const char *p, *e, *nl;
	const void *v;
	size_t n, len;
	int yes = 0;

	snprintf(key, sizeof key, "gagg/%llu/round", (unsigned long long)step);
	len = (size_t)snprintf(line, sizeof line, "peer=%s used", id);
	if (spirt_store_open(&s, loc, SPIRT_STORE_RDONLY) != 0)
		return 0;
	if (spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY) == 0) {
		if (spirt_store_get(t, key, &v, &n) == 0)
			for (p = v, e = p + n; p < e && !yes; p = nl + 1) {
				if (!(nl = memchr(p, '\n', (size_t)(e - p))))
					nl = e;
				yes = (size_t)(nl - p) == len &&
				    memcmp(p, line, len) == 0;
			}
		spirt_txn_abort(t);
	}
	spirt_store_close(s);
	return yes;
}

/*
 * --join: the step J this peer joins at, from what -P found (f), for
 * spirt-train's rejoin (spirt-peer(1), catch-up --join).  J is the
 * newest step plus the margin, past --after, rounded up to the epoch's
 * first step (and a round's with --every, lcm of the two); the first
 * margin (0) is the steps the others make in two beats (--pace) and
 * half a second.  When the others make no step (in the pace's pause, or
 * at the same step as --seen STEP,MS said STILL_MS or more ago) they may
 * wait for this peer, a member of the last round a minority cannot go on
 * without: without --every it joins at their step, mid-epoch, if the
 * round before it combined this peer (its share of the data is still
 * its own there: no peer reassigned it), else at the next epoch's first
 * step.  (Rounded up to the epoch's first step, it would wait for them
 * there while they wait for it at theirs: each launch of theirs would
 * end 75, a minority alive, and the run would never end.)
 * "J STEP ID LOCATION MARGIN SEEN", SEEN the --seen for the next ask.
 */
static void
join(struct catchup *c, const struct peerline *pl, const struct found *f)
{
	int64_t best = (int64_t)f->step, margin = (int64_t)c->margin, j, jr;
	int64_t a = (int64_t)c->epoch, b = c->everygiven ?
	    (int64_t)c->every : 0, r;
	uint64_t now = spirt_mono_ns() / 1000000;
	int still = 0;

	/* (a peer's store names the steps: none past what the sums take) */
	if (f->step > STEP_MAX || f->later > STEP_MAX)
		die(SPIRT_EX_DATAERR, "catch-up: %s: model step %llu is out "
		    "of range", pl[f->i].id, (unsigned long long)(f->step >
		    STEP_MAX ? f->step : f->later));
	if (margin == 0) {
		int64_t d = (int64_t)f->later - best;

		d = d > PACE_STEPS ? PACE_STEPS : d < -PACE_STEPS ?
		    -PACE_STEPS : d;
		margin = d * (2 * (int64_t)c->pace + 500) /
		    ((int64_t)f->ms + 1) + 2;
		still = f->later == f->step;
		best = (int64_t)f->later;
	}
	j = best + margin;
	if (c->seen && (uint64_t)best == c->seenstep &&
	    now >= c->seenms + STILL_MS)
		still = 1;
	if (!c->seen || (uint64_t)best != c->seenstep) {
		c->seenstep = (uint64_t)best;
		c->seenms = now;
	}
	if (still && !c->everygiven)
		j = best;
	if (j <= c->after && !still)
		j = c->after + 1;
	/* (jr: the epoch's steps, or their lcm with the rounds') */
	jr = a;
	if (b) {
		while (b > 0) {
			r = a % b;
			a = b;
			b = r;
		}
		jr = (int64_t)c->epoch / a * (int64_t)c->every;
	}
	if (!(still && !c->everygiven && best > 0 &&
	    combined(pl[f->i].loc, (uint64_t)best - 1, pl[c->peer].id)))
		j = (j + jr - 1) / jr * jr;
	printf("%lld %lld %s %s %lld %llu,%llu\n", (long long)j,
	    (long long)best, pl[f->i].id, pl[f->i].loc, (long long)margin,
	    (unsigned long long)c->seenstep, (unsigned long long)c->seenms);
}

/*
 * -P: "STEP ID LOCATION" of the newest (newest()), with --pace two more
 * fields, "LATER ELAPSED"; with --join the step to join at (join());
 * nothing if no other peer that answers has a model.
 */
static int
where(struct catchup *c)
{
	struct spirt_store_conf conf = *spirt_store_getconf();
	struct peerline *pl;
	struct found f;
	size_t n;

	/* (a peer that does not answer in 10 s is passed over) */
	conf.timeout = ASK_TIMEOUT;
	spirt_store_setconf(&conf);
	peers_read("--peers", c->peers, &pl, &n);
	if (c->join && (size_t)c->peer >= n)
		die(SPIRT_EX_USAGE, "--peer %lld: %s has %zu peers (0 to "
		    "%zu)", (long long)c->peer, c->peers, n, n ? n - 1 : 0);
	newest(c, pl, n, &f);
	if (f.step == SPIRT_NOSTEP)
		;
	else if (c->join)
		join(c, pl, &f);
	else if (c->pace)
		printf("%llu %s %s %llu %llu\n", (unsigned long long)f.step,
		    pl[f.i].id, pl[f.i].loc, (unsigned long long)f.later,
		    (unsigned long long)f.ms);
	else
		printf("%llu %s %s\n", (unsigned long long)f.step, pl[f.i].id,
		    pl[f.i].loc);
	free(pl);
	return SPIRT_EX_OK;
}

int
catchup_main(const struct optset *cli, int argc, char **argv)
{
	static struct catchup c;
	struct spirt_store *self = NULL, *src = NULL;
	struct spirt_txn *t = NULL;
	const char *store = NULL;
	int rc, code, curl;

	c.every = 1;
	c.peer = -1;
	c.after = -1;
	c.deadline_ns = 1000000ull * DEADLINE_DEFAULT;
	options(cli, argc, argv, &c, &store);
	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	/* (a URL needs libcurl; a path does not) */
	if ((curl = spirt_remote_global_init()) != 0 && !c.peers &&
	    spirt_store_is_url(c.source))
		die(spirt_exit(curl), "libcurl: %s",
		    spirt_remote_global_error());
	if (c.peers) {
		code = where(&c);
		if (curl == 0)
			spirt_remote_global_cleanup();
		return fshut_stdout(code);
	}
	store = store ? store : store_default();
	if ((rc = spirt_store_open(&self, store, 0)) != 0)
		dierc(rc, "%s", store);
	c.hashost = spirt_host_boot(c.host) == 0;
	code = wait_source(self, &src, &t, &c);
	if (code == SPIRT_EX_OK) {
		if ((rc = spirt_store_write(self, put_txn, &c)) != 0)
			die(SPIRT_EX_IOERR, "catch-up: %s: could not store %s: "
			    "%s", store, c.key[MODEL], errcause(rc));
		spirt_txn_abort(t);
		if (!c.had)
			printf("%s\n", c.key[MODEL]);
	} else {
		warnx_("catch-up: %s went past step %llu, or died, before "
		    "this peer had %s", c.id, (unsigned long long)c.step,
		    c.key[MODEL]);
	}
	spirt_store_close(src);
	spirt_store_close(self);
	if (curl == 0)
		spirt_remote_global_cleanup();
	return fshut_stdout(code);
}
