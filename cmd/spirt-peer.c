/* spirt-peer.c - serving the store, the exchange between peers (keys and
 * tokens are spirt-key's, cmd/key/keycmd.c: keygen and invite here are
 * their old spellings, kept for a release) */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "beat.h"
#include "crypto.h"
#include "exchange.h"
#include "io.h"
#include "key/keycmd.h"
#include "peer/catchup.h"
#include "peer/peers.h"
#include "keys.h"
#include "lineage.h"
#include "opt.h"
#include "parse.h"
#include "peersrv.h"
#include "prim.h"
#include "remote.h"
#include "serve.h"
#include "store.h"
#include "tool.h"
#include "xpart.h"

#define LISTEN_DEFAULT "127.0.0.1:7070"
#define ULL(x) ((unsigned long long)(x))

/* serve's limits (spirt-peer(1)): their defaults */
#define CONN_TIMEOUT_DEFAULT 60         /* s an idle connection stays */
#define MAX_CONNS_DEFAULT 256           /* connections at once */
#define PER_IP_DEFAULT 64               /* of them from one address */
#define RATE_DEFAULT 1000               /* requests/s from one member */
#define RETRY_PAUSE_MS 200              /* --retry: between two tries */

static struct {
	const char *group, *id, *run;
	const char *allow, *key, *listen, *maxbytes, *readyfd, *store, *token;
	const char *conntimeout, *maxconns, *perip, *rate, *retry;
} o;

enum { CONNTIMEOUT = 256, MAXCONNS, PERIP, RATE, RETRY };
enum { BYZ = 256, DEADLINE, ITERS, MAD, MINP, SELECT, TAU, TIMEOUT,
    TRIM, BEATS, PRUNE, KEEPDG, KEEPPL, PARTS, CHECK, CHECKP };
enum { PROOF = 256 };

#define USAGE \
"usage: spirt-peer serve [-qv] [-a allowfile] [-F fd] [-g group] [-i id]\n" \
"           [-k keyfile] [-l addr:port] [-M size] [-r run] [-s store]\n" \
"           [-T tokenfile] [--conn-timeout s] [--max-conns n] [--per-ip n]\n" \
"           [--rate r] [--retry ms]\n" \
"       spirt-peer exchange [-qv] [-a prefix] [-m model] [-P peers] [-r rule]\n" \
"           [-s store]\n" \
"           [--beats] [--byzantine f] [--check r] [--check-parts k]\n" \
"           [--deadline ms] [--iters L] [--keep-digests] [--keep-pulls]\n" \
"           [--min-peers n] [--prune lag] [--parts] [--select m] [--tau T]\n" \
"           [--timeout ms] [--trim F]\n" \
"           -i | -t step\n" \
"       spirt-peer verify [-a allowfile] [-g group] [-m model] [-r run]\n" \
"           [-s store] [--proof file]\n" \
"       spirt-peer catch-up [-q] [-m model] [-s store] [--deadline ms]\n" \
"           [--every h] [--last] -t step id source\n" \
"       spirt-peer catch-up [-m model] [--deadline ms] [--pace ms] [--wait]\n" \
"           -P peers --peer i\n" \
"       spirt-peer catch-up [-m model] [--after j] [--deadline ms] [--every h]\n" \
"           [--pace ms] [--seen step,ms] [--wait] --epoch s --join margin\n" \
"           -P peers --peer i\n" \
"       spirt-peer peers -P peers --peer i\n"

/* exchange's options: -h shows them after serve's */
static const struct opt xopts[] = {
	{ 0, NULL, "exchange", "one round with the other peers: pull, "
	    "combine into gagg/T" },
	{ 'a', "agg", "PREFIX", "the aggregates' prefix (default agg)" },
	{ 'i', "serve", NULL, "warm, one round per step line on stdin" },
	{ 'm', "model", "NAME", "the model" },
	{ 'P', "peers", "FILE", "the members, \"id url\" lines" },
	{ 'q', "quiet", NULL, NULL },
	{ 'r', "rule", "RULE", "how aggregates combine (as spirt-agg -r)" },
	{ 's', "store", "PATH", NULL },
	{ 't', "step", "N", "the step" },
	{ 'v', "verbose", NULL, NULL },
	{ BEATS, "beats", NULL, "the quorum of the store's watcher "
	    "(spirt-beat)" },
	{ BYZ, "byzantine", "F", "peers the rule must tolerate" },
	{ CHECK, "check", "R", "--parts: members checking each part "
	    "(default 1)" },
	{ CHECKP, "check-parts", "K", "--parts: parts checked each "
	    "round (default 1)" },
	{ DEADLINE, "deadline", "MS", "the round's deadline" },
	{ ITERS, "iters", "L", "cclip's, scclip's iterations" },
	{ KEEPDG, "keep-digests", NULL, "--prune keeps digest/" },
	{ KEEPPL, "keep-pulls", NULL, "store the aggregates pulled" },
	{ MAD, "mad", "K", NULL },
	{ MINP, "min-peers", "N", "fewest aggregates a round needs" },
	{ PARTS, "parts", NULL, "partitioned: each peer combines its part" },
	{ PRUNE, "prune", "LAG", "remove the rounds before step - LAG" },
	{ SELECT, "select", "M", "mkrum's m" },
	{ TAU, "tau", "T", "cclip's, scclip's radius, or auto" },
	{ TIMEOUT, "timeout", "MS", "each request's deadline" },
	{ TRIM, "trim", "F", "trim F of each end" },
	{ 'h', "help", NULL, NULL },
	{ 0 }
};

/* verify's */
static const struct opt vopts[] = {
	{ 0, NULL, "verify", "does the chain of signed digests hold; who "
	    "made each step" },
	{ 'a', "allow", "FILE", "allowlist of members" },
	{ 'g', "group", "FILE", "the group's public key (file or hex)" },
	{ 'm', "model", "NAME", "the model" },
	{ 'r', "run", "ID", "the run (default the first digest's)" },
	{ 's', "store", "PATH", NULL },
	{ PROOF, "proof", "FILE", "check a proof that a part's "
	    "owner lied (exchange --parts), not the chain" },
	{ 'h', "help", NULL, NULL },
	{ 0 }
};

/* serve's, and those before the command (-h, -V) */
static const struct opt opts[] = {
	{ 0, NULL, "serve", "serve the store to members over HTTP" },
	{ 'a', "allow", "FILE", "allowlist of members" },
	{ 'F', "ready-fd", "FD", "write addr:port to FD once listening" },
	{ 'g', "group", "FILE", "the group's public key (file or hex)" },
	{ 'i', "id", "ID", "our id, without -T" },
	{ 'k', "key", "FILE", "our identity key file" },
	{ 'l', "listen", "A:P", "address and port (default "
	    LISTEN_DEFAULT ")" },
	{ 'M', "max-bytes", "N", "largest value (default 1G)" },
	{ 'q', "quiet", NULL, "no log of refusals" },
	{ 'r', "run", "ID", "our run, without -T" },
	{ 's', "store", "PATH", "the store (default $SPIRT_STORE or "
	    "spirt.db)" },
	{ 'T', "token", "FILE", "our member token" },
	{ 'v', "verbose", NULL, "log every request" },
	{ CONNTIMEOUT, "conn-timeout", "S", "an idle connection closes "
	    "after S s (60)" },
	{ MAXCONNS, "max-conns", "N", "connections at once (256)" },
	{ PERIP, "per-ip", "N", "connections at once from one address "
	    "(64; 0 none)" },
	{ RATE, "rate", "R", "requests a second from one member "
	    "(1000; 0 none)" },
	{ RETRY, "retry", "MS", "an address in use: try again for MS ms" },
	{ 'h', "help", NULL, NULL },
	{ 'V', "version", NULL, NULL },
	{ 0 }
};

#define POST "keygen and invite are spirt-key's (spirt-key(1)); spirt-peer " \
    "keygen and\nspirt-peer invite still run them, for this release\n"

/* -h: the command's rows, the other's, then these */
static const struct opt hvopts[] = {
	OPT_HELP,
	{ 'V', "version", NULL, "print version and crypto" },
	{ 0 }
};
static const struct optset hvhelp = { USAGE, NULL, NULL, 21, 0, hvopts,
    NULL };
static const struct optset shelp = { USAGE, NULL, NULL, 21, 0, opts,
    &hvhelp };
static const struct optset phelp = { USAGE, NULL, NULL, 21, 0,
    peers_opts, &hvhelp };
static const struct optset chelp = { USAGE, NULL, NULL, 21, 0,
    catchup_opts, &phelp };
static const struct optset vhelp = { USAGE, NULL, NULL, 21, 0, vopts,
    &chelp };
static const struct optset xhelp = { USAGE, NULL, NULL, 21, 0, xopts,
    &vhelp };
/* what serve (and the words before a command) and exchange parse */
static const struct optset cli = { USAGE, NULL, POST, 21, 1, opts,
    &xhelp };
static const struct optset xcli = { USAGE, NULL, POST, 21, 0, xopts,
    &shelp };
static const struct optset vcli = { USAGE, NULL, POST, 21, 0, vopts,
    &shelp };
static const struct optset ccli = { USAGE, NULL, POST, 21, 0, catchup_opts,
    &shelp };
static const struct optset pcli = { USAGE, NULL, POST, 21, 0, peers_opts,
    &shelp };

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

static void
options(int argc, char **argv)
{
	int c;

	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'a': o.allow = optarg; break;
		case 'F': o.readyfd = optarg; break;
		case 'g': o.group = optarg; break;
		case 'i': o.id = optarg; break;
		case 'k': o.key = optarg; break;
		case 'l': o.listen = optarg; break;
		case 'M': o.maxbytes = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'r': o.run = optarg; break;
		case 's': o.store = optarg; break;
		case 'T': o.token = optarg; break;
		case 'v': spirt_verbose++; break;
		case 'V': key_version();
		case CONNTIMEOUT: o.conntimeout = optarg; break;
		case MAXCONNS: o.maxconns = optarg; break;
		case PERIP: o.perip = optarg; break;
		case RATE: o.rate = optarg; break;
		case RETRY: o.retry = optarg; break;
		default: usage(1);
		}
}

/* ---- serve ---- */

static void
srvlog(void *arg, int level, const char *line)
{
	(void)arg;
	if (level == 0 && !spirt_quiet)
		warnx_("%s", line);
	else if (level > 0 && spirt_verbose)
		warnx_("%s", line);
}

/*
 * Our own token, checked before we listen: expired, or not a peer's of
 * this run under the group key, it would have every member refused.
 */
static void
owntoken(const struct spirt_cred *c)
{
	const char *path = getenv("SPIRT_TOKEN");
	unsigned char pk[SPIRT_PK_BYTES];
	struct spirt_member m;
	char when[32];
	time_t secs;
	struct tm tm;
	uint64_t now = spirt_crypto_now();
	int rc;

	if (!c->has_token)
		return;
	if ((rc = spirt_token_decode(&m, c->token)) != 0)
		dierc(rc, "%s", path);
	if (now >= m.expires) {
		secs = (time_t)(m.expires / 1000000000u);
		if (!gmtime_r(&secs, &tm) || !strftime(when, sizeof when,
		    "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(when, sizeof when, "?");
		die(SPIRT_EX_DATAERR, "%s: member token expired at %s (%.0f s "
		    "ago): invite this peer again", path, when,
		    (double)(now - m.expires) / 1e9);
	}
	if (getenv("SPIRT_GROUP") == NULL || !*getenv("SPIRT_GROUP"))
		return;         /* an allowlist peer's token: not ours to judge */
	spirt_key_public(pk, c->key);
	if ((rc = spirt_trust_member(&m, c->trust, pk, c->id, c->token, now,
	    SPIRT_ROLE_PEER)) != 0)
		dierc(rc, "%s", path);
}

/* an option overrides its SPIRT_* variable (remote_env() reads them) */
static void
optenv(const char *var, const char *val)
{
	if (val != NULL && setenv(var, val, 1) != 0)
		die(SPIRT_EX_OSERR, "setenv %s:", var);
}

/*
 * spirt_cred_load's messages name the SPIRT_* variable a credential came
 * from; serve sets the variable from its option, so name the option where
 * one was given: "-g: group.pub: No such file or directory".
 */
static void
optnames(char *msg, size_t cap)
{
	const struct { const char *var, *opt, *val; } map[] = {
		{ "SPIRT_ALLOW", "-a", o.allow }, { "SPIRT_GROUP", "-g", o.group },
		{ "SPIRT_ID", "-i", o.id }, { "SPIRT_KEY", "-k", o.key },
		{ "SPIRT_RUN", "-r", o.run }, { "SPIRT_TOKEN", "-T", o.token },
	};
	char out[700];
	size_t n = 0, i, len;
	const char *p = msg;

	while (*p && n + 1 < sizeof out) {
		for (i = 0; i < sizeof map / sizeof map[0]; i++) {
			len = strlen(map[i].var);
			if (map[i].val && !strncmp(p, map[i].var, len) &&
			    !(p[len] == '_' || (p[len] >= 'A' && p[len] <= 'Z')))
				break;
		}
		if (i == sizeof map / sizeof map[0]) {
			out[n++] = *p++;
			continue;
		}
		n += (size_t)snprintf(out + n, sizeof out - n, "%s",
		    map[i].opt);
		if (n >= sizeof out)
			n = sizeof out - 1;
		p += len;
	}
	out[n] = '\0';
	snprintf(msg, cap, "%s", out);
}

/*
 * Listen; with --retry MS, an address in use (the server of a run before,
 * which answers the long polls it holds before it lets go of its port,
 * for up to 5 s) is tried again every RETRY_PAUSE_MS for MS ms, unless a
 * signal of set comes meanwhile.  The last try's code and message.
 */
static int
listen_retry(struct spirt_peersrv **srv, const struct spirt_peersrv_conf *conf,
    const sigset_t *set, uint64_t retry_ms, char *msg, size_t cap)
{
	const struct timespec ts = { 0, RETRY_PAUSE_MS * 1000000L };
	uint64_t end = spirt_mono_ns() + retry_ms * 1000000u;
	int rc;

	while ((rc = spirt_peersrv_start(srv, conf, msg, cap)) == EADDRINUSE &&
	    spirt_mono_ns() < end && sigtimedwait(set, NULL, &ts) < 0 &&
	    (errno == EAGAIN || errno == EINTR))
		;
	return rc;
}

static int
serve(void)
{
	struct spirt_peersrv_conf conf = { 0 };
	struct spirt_peersrv_stats st;
	struct spirt_peersrv *srv;
	struct spirt_store *s;
	struct spirt_cred *cred;
	struct spirt_remote_conf rconf;
	const char *store = o.store ? o.store : store_default();
	uint64_t maxb = SPIRT_REMOTE_MAX_BYTES, retry = 0;
	char msg[700];
	sigset_t set;
	int rc, sig, fd = -1;

	if (o.maxbytes != NULL && spirt_parse_size(&maxb, o.maxbytes, 1,
	    (uint64_t)1 << 40))
		die(SPIRT_EX_USAGE, "-M: invalid size \"%s\" (1 to 1T)",
		    o.maxbytes);
	/* (1: the standard output, a supervisor's pipe; never stderr) */
	if (o.readyfd != NULL)
		fd = (int)eparse_i64("-F", o.readyfd, 1, 1 << 20);
	if (fd == 2)
		die(SPIRT_EX_USAGE, "-F 2: the standard error; 1, or 3 or more");
	conf.conn_timeout_s = o.conntimeout ? (unsigned)eparse_i64(
	    "--conn-timeout", o.conntimeout, 1, 86400) : CONN_TIMEOUT_DEFAULT;
	conf.max_conns = o.maxconns ? (unsigned)eparse_i64("--max-conns",
	    o.maxconns, 1, 65536) : MAX_CONNS_DEFAULT;
	conf.per_ip = o.perip ? (unsigned)eparse_i64("--per-ip", o.perip, 0,
	    65536) : PER_IP_DEFAULT;
	conf.rate = o.rate ? eparse_double("--rate", o.rate, 0, 1e9) :
	    RATE_DEFAULT;
	if (o.retry != NULL)
		retry = eparse_u64("--retry", o.retry, 0, 86400000);
	if (spirt_store_is_url(store))
		die(SPIRT_EX_USAGE, "%s: serve serves a local store", store);
	optenv("SPIRT_KEY", o.key);
	optenv("SPIRT_TOKEN", o.token);
	optenv("SPIRT_GROUP", o.group);
	optenv("SPIRT_ALLOW", o.allow);
	optenv("SPIRT_ID", o.id);
	optenv("SPIRT_RUN", o.run);
	if ((rc = spirt_cred_load(&cred, remote_env(&rconf), 0, msg,
	    sizeof msg)) != 0) {
		optnames(msg, sizeof msg);
		if (*msg)
			die(spirt_exit(rc), "%s", msg);
		dierc(rc, "credentials");
	}
	owntoken(cred);
	if ((rc = spirt_store_open(&s, store, 0)) != 0)
		dierc(rc, "%s", store);

	/* the server's thread inherits the mask: signals come to sigwait */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	conf.store = s;
	conf.path = store;
	conf.cred = cred;
	conf.listen = o.listen ? o.listen : LISTEN_DEFAULT;
	conf.max_bytes = maxb;
	conf.max_sessions = 1024;
	conf.idle_s = 600;
	conf.log = srvlog;
	if ((rc = listen_retry(&srv, &conf, &set, retry, msg, sizeof msg)) != 0)
		die(spirt_exit(rc) == SPIRT_EX_USAGE ? SPIRT_EX_USAGE :
		    SPIRT_EX_UNAVAILABLE, "%s", msg);
	info("listening on %s as %s (run %s)", spirt_peersrv_addr(srv),
	    cred->id, cred->run);
	if (fd >= 0) {
		char line[100];
		int n = snprintf(line, sizeof line, "%s\n",
		    spirt_peersrv_addr(srv));

		if (spirt_writeall(fd, line, (size_t)n) != 0 || close(fd) != 0)
			warning("-F %d: cannot write the address", fd);
	}
	do {
		if (sigwait(&set, &sig) != 0)
			sig = SIGTERM;
	} while (sig != SIGTERM && sig != SIGINT && sig != SIGHUP);

	spirt_peersrv_stop(srv, &st);
	info("stopped: %llu served, %llu refused",
	    (unsigned long long)st.served, (unsigned long long)st.refused);
	for (int i = 0; i < SPIRT_ELAST - SPIRT_EOF; i++)
		if (st.by_code[i])
			info("refused %s: %llu", spirt_errname(SPIRT_EOF + i),
			    (unsigned long long)st.by_code[i]);
	spirt_store_close(s);
	spirt_cred_free(cred);
	return 0;
}

/* ---- exchange: one round with the other peers (lib/exchange.h) ---- */

/*
 * Who we are and whom we trust, from the environment (cmd/tool.h's
 * remote_env, lib/remote.h's spirt_cred_load): SPIRT_KEY, SPIRT_TOKEN or
 * SPIRT_ID and SPIRT_RUN, SPIRT_GROUP and/or SPIRT_ALLOW.  Peers reached
 * through store paths may go without the last two: their digests are
 * checked by signature only.
 */
static struct spirt_cred *
xcreds(void)
{
	struct spirt_remote_conf rconf;
	struct spirt_cred *c;
	char msg[700];
	int rc;

	if ((rc = spirt_cred_load(&c, remote_env(&rconf),
	    SPIRT_CRED_TRUST_OPTIONAL, msg, sizeof msg)) == 0)
		return c;
	if (*msg)
		warnx_("%s", msg);
	else
		warnrc(rc, "credentials");
	if (rc == SPIRT_EKEYPERM)
		info("hint: chmod 600 %s", getenv("SPIRT_KEY"));
	exit(spirt_exit(rc));
}

/*
 * The peers file: "id url" lines ("id url spare": a slot that joins a
 * running group).  An http:// URL is a peer's server,
 * pinned to the id the line gives (http://ID@host:port); anything else
 * is a store path (peers on one machine).
 */
static void
xpeers(struct spirt_exchange *x, const char *path, struct spirt_xnet *http,
    const struct spirt_cred *c)
{
	void *buf;
	size_t n, line = 0;
	int rc, remote = 0;

	if ((rc = spirt_readfile(path, &buf, &n)) != 0)
		dierc(rc, "%s", path);
	rc = spirt_peers_parse(x, buf, n, &spirt_xnet_store, &line);
	free(buf);
	if (rc == SPIRT_EDATA)
		die(SPIRT_EX_DATAERR, "%s:%zu: expected \"id url\" with a new "
		    "valid id", path, line);
	if (rc != 0)
		dierc(rc, "%s", path);
	spirt_xnet_http(http, c);
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];
		const char *rest = p->url + 7;
		char url[sizeof p->url];

		if (!spirt_store_is_url(p->url))
			continue;
		if (strncmp(p->url, "http://", 7) != 0)
			die(SPIRT_EX_UNAVAILABLE, "%s: %s: %s", path, p->id,
			    spirt_strerror(SPIRT_ENOTSUP));
		p->net = http;
		remote = 1;
		if (strcspn(rest, "@/") < strlen(rest) && rest[strcspn(rest,
		    "@/")] == '@')
			continue;       /* pinned already */
		if ((size_t)snprintf(url, sizeof url, "http://%s@%s", p->id,
		    rest) >= sizeof url)
			die(SPIRT_EX_DATAERR, "%s: %s: URL too long", path,
			    p->id);
		memcpy(p->url, url, strlen(url) + 1);
	}
	if (remote && c->trust == NULL)
		die(SPIRT_EX_USAGE, "SPIRT_GROUP, SPIRT_ALLOW: neither is set "
		    "(whom to trust: %s names peers' URLs)", path);
}

/* the test hook SPIRT_XSTOP=PHASE[@STEP]: this peer stops (SIGSTOP) as
 * the phase of its partitioned round begins (of step STEP only, if
 * named), an owner stopped mid-round (spirt-peer(1)) */
static void
xstop(const struct spirt_exchange *x, const char *name)
{
	const char *v = getenv("SPIRT_XSTOP"), *at;
	size_t n;

	if (v == NULL || *v == '\0')
		return;
	n = (at = strchr(v, '@')) ? (size_t)(at - v) : strlen(v);
	if (strlen(name) != n || strncmp(v, name, n) != 0 ||
	    (at && strtoull(at + 1, NULL, 10) != x->step))
		return;
	raise(SIGSTOP);
}

/*
 * What a round says: each peer left out and why (a warning), a proof of
 * equivocation (on out), the round's failure.  Returns its exit code.
 */
static int
xreport(struct spirt_exchange *x, int rc, FILE *out)
{
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];

		/* (the partitioned exchange: a part covered for its owner) */
		if (x->parts && p->state == SPIRT_XP_USED && p->why[0])
			warning("step %llu: peer %s: %s",
			    (unsigned long long)x->step, p->id, p->why);
		if (p->state == SPIRT_XP_NONE || p->state == SPIRT_XP_USED)
			continue;
		warning("step %llu: peer %s left out: %s: %s",
		    (unsigned long long)x->step, p->id,
		    spirt_xstate_name(p->state), p->why);
		if (p->proof)
			fputs(p->proof, out);
	}
	if (rc != 0) {
		if (x->msg[0])
			warnx_("%s", x->msg);
		else
			warnrc(rc, "exchange");
	} else if (x->done) {
		info("gagg/%llu exists: step %llu exchanged already, nothing "
		    "done", (unsigned long long)x->step,
		    (unsigned long long)x->step);
	} else if (spirt_verbose) {
		fprintf(stderr, "%s: step %llu: %zu of %zu aggregates, %s, "
		    "%.3f ms\n", progname, (unsigned long long)x->step,
		    x->used, x->n + 1, spirt_agg_rule_name(x->p.rule), x->ms);
	}
	return spirt_exit(rc);
}

/*
 * Warm (-i): one round per request line (lib/serve.h), the store, the
 * credentials and each peer's session kept from one to the next; proofs
 * go to stderr, stdout is the answers'.
 */
static int
xserve_one(void *arg, const struct spirt_serve_req *req, char *ans,
    size_t cap)
{
	struct spirt_exchange *x = arg;
	int code;

	x->step = req->step;
	code = xreport(x, spirt_exchange_run(x), stderr);
	if (code && x->caught[0])
		/* (a part's owner proven to lie: spirt-train excludes it) */
		snprintf(ans, cap, "step=%llu caught=%s error=%d",
		    (unsigned long long)x->step, x->caught, code);
	else if (code)
		snprintf(ans, cap, "step=%llu error=%d",
		    (unsigned long long)x->step, code);
	else if (x->done)
		snprintf(ans, cap, "step=%llu exchanged=already",
		    (unsigned long long)x->step);
	else
		snprintf(ans, cap, "step=%llu used=%zu peers=%zu ms=%.3f",
		    (unsigned long long)x->step, x->used, x->n + 1, x->ms);
	return code;
}

static int
xserve(struct spirt_exchange *x)
{
	struct spirt_serve sv = {
		.name = "stdin", .maxstep = SPIRT_NOSTEP - 2,
		.run = xserve_one, .arg = x, .warn = warnx_,
	};
	int rc;

	serve_setup();
	/* aggregates of any size come back every round: their blocks stay
	 * in the heap for the next one (no mmap, no page faults) */
	mallopt(M_MMAP_MAX, 0);
	/* SIGTERM: the round under way stops within a second, unsigned */
	x->cancelled = spirt_serve_stopped;
	if ((rc = spirt_serve_loop(&sv, stdin, stdout)) != 0) {
		warnrc(rc, "%s", ferror(stdin) ? "stdin" : "stdout");
		return SPIRT_EX_IOERR;
	}
	return sv.worst;
}

static int
xmain(int argc, char **argv)
{
	struct spirt_exchange x;
	const char *peers = NULL, *store = NULL, *rule = NULL, *minp = NULL;
	const char *act, *lie;
	struct spirt_store *s = NULL;
	struct spirt_cred *cred;
	struct spirt_xnet http;
	int c, rc, code, trim = 0, havestep = 0, warm = 0, check = 0;
	int checkp = 0;

	spirt_exchange_init(&x);
	optind = 1;
	while ((c = opt_next(&xcli, argc, argv)) != -1)
		switch (c) {
		case 'a': x.src = optarg; break;
		case 'i': warm = 1; break;
		case 'm': x.model = optarg; break;
		case 'P': peers = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'r': rule = optarg; break;
		case 's': store = optarg; break;
		case 't': x.step = eparse_u64("-t", optarg, 0, SPIRT_NOSTEP - 2);
			  havestep = 1; break;
		case 'v': spirt_verbose++; break;
		case BEATS: x.beats = 1; break;
		case BYZ: x.p.f = (unsigned)eparse_u64("--byzantine", optarg,
			    0, SPIRT_AGG_MAXW); break;
		case DEADLINE: x.deadline_ms = (unsigned)eparse_u64(
			    "--deadline", optarg, 1, 86400000); break;
		case KEEPDG: x.keep_digests = 1; break;
		case KEEPPL: x.keep_pulls = 1; break;
		case PARTS: x.parts = 1; x.round = spirt_xpart_round; break;
		case CHECK: x.check = (unsigned)eparse_u64("--check", optarg,
			    0, SPIRT_XPART_MAXPARTS);
			  check = 1; break;
		case CHECKP: x.check_parts = (unsigned)eparse_u64(
			    "--check-parts", optarg, 1, SPIRT_XPART_MAXPARTS);
			  checkp = 1; break;
		case PRUNE: x.prune = eparse_u64("--prune", optarg, 1,
			    SPIRT_NOSTEP - 2); break;
		case ITERS: x.p.iters = (unsigned)eparse_u64("--iters", optarg,
			    1, 1000); break;
		case MAD: x.p.mad = eparse_double("--mad", optarg, 1e-9, 1e9);
			  break;
		case TAU: if (strcmp(optarg, "auto") == 0)
				x.p.tau_auto = 1;
			  else
				x.p.tau = eparse_double("--tau", optarg, 1e-30,
				    1e30);
			  break;
		case MINP: minp = optarg; break;
		case SELECT: x.p.m = (unsigned)eparse_u64("--select", optarg, 1,
			    SPIRT_AGG_MAXW); break;
		case TIMEOUT: x.timeout_ms = (unsigned)eparse_u64("--timeout",
			    optarg, 1, 86400000); break;
		case TRIM: x.p.trim = eparse_double("--trim", optarg, 0,
			    0.49999);
			  trim = 1; break;
		default: usage(1);
		}
	if (optind != argc || havestep == warm)
		usage(1);       /* -t step, or -i: steps on stdin */
	if (x.keep_digests && !x.prune) {
		warnx_("--keep-digests: only with --prune (without it nothing "
		    "is removed)");
		usage(1);
	}
	if (x.parts && (x.beats || x.keep_pulls || minp)) {
		warnx_("--parts: not with --beats, --keep-pulls or "
		    "--min-peers (every member owns a part)");
		usage(1);
	}
	if (!check && x.parts && (lie = getenv("SPIRT_CHECK")) && *lie)
		x.check = (unsigned)eparse_u64("SPIRT_CHECK", lie, 0,
		    SPIRT_XPART_MAXPARTS);
	if (!checkp && x.parts && (lie = getenv("SPIRT_CHECK_PARTS")) &&
	    *lie)
		x.check_parts = (unsigned)eparse_u64("SPIRT_CHECK_PARTS", lie,
		    1, SPIRT_XPART_MAXPARTS);
	if ((check || checkp) && !x.parts) {
		warnx_("--check%s: only with --parts (it checks the parts' "
		    "owners)", check ? "" : "-parts");
		usage(1);
	}
	if (!rule && trim)
		rule = "trim";
	if ((rule = opt_env(rule, "SPIRT_AGG_RULE", "mean")) &&
	    !(x.p.rule = spirt_agg_rule_parse(rule))) {
		warnx_("-r: unknown rule \"%s\"", rule);
		usage(1);
	}
	if ((x.model = opt_env(x.model, "SPIRT_MODEL", NULL)) == NULL) {
		warnx_("no model (-m or SPIRT_MODEL)");
		usage(1);
	}
	echeck_model("-m", x.model);
	if (x.src && spirt_name_check(x.src) != 0) {
		warnx_("-a: invalid key prefix \"%s\" (a name: letters, "
		    "digits, . _ -)", x.src);
		usage(1);
	}
	if ((peers = opt_env(peers, "SPIRT_PEERS", NULL)) == NULL) {
		warnx_("no peers file (-P or SPIRT_PEERS)");
		usage(1);
	}
	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	isa_setup();
	if ((rc = spirt_remote_global_init()) != 0)
		dierc(rc, "libcurl");
	cred = xcreds();
	x.self = cred->id;
	x.run = cred->run;
	x.key = cred->key;
	x.token = cred->has_token ? cred->token : NULL;
	x.trust = cred->trust;
	xpeers(&x, peers, &http, cred);
	/* (a test hook: pulls lost on the way, spirt-peer(1)) */
	x.drop = getenv("SPIRT_XDROP");
	/* (and one: this peer signs a wrong combination of its part; from
	 * step S on with "@S") */
	x.lie = (lie = getenv("SPIRT_XLIE")) != NULL && *lie;
	if (x.lie && *lie == '@')
		x.lie_from = eparse_u64("SPIRT_XLIE", lie + 1, 0,
		    SPIRT_NOSTEP - 1);
	/* (and one: this peer stops itself at a phase of its round) */
	x.phase = xstop;
	/* default quorum: more than half of the members, self included */
	x.min_peers = minp ? eparse_u64("--min-peers", minp, 1, x.n + 1) :
	    x.parts ? x.n + 1 : (x.n + 1) / 2 + 1;
	if (spirt_agg_check(&x.p, x.min_peers) != 0) {
		warnx_("-r %s: does not fit %zu peers (--min-peers)", rule,
		    x.min_peers);
		usage(1);
	}

	act = store ? store : store_default();
	if ((rc = spirt_store_open(&s, act, 0)) != 0) {
		warnrc(rc, "%s", act);
		code = spirt_exit(rc);
	} else {
		x.store = s;
		code = warm ? xserve(&x) :
		    xreport(&x, spirt_exchange_run(&x), stdout);
	}
	spirt_store_close(s);
	spirt_exchange_free(&x);
	spirt_cred_free(cred);
	spirt_remote_global_cleanup();
	return fshut_stdout(code);
}

/* ---- verify ---- */

struct vwalk {
	const char *model;
	int first;              /* the first break is said on stderr too */
	char peers[SPIRT_DIGEST_MAXPEERS][SPIRT_ID_MAX + 1];
	size_t npeers;
};

/* the first 12 hex digits of a hash, enough to tell two apart */
static const char *
short_hash(char buf[13], const unsigned char h[SPIRT_HASH_BYTES])
{
	char hex[2 * SPIRT_HASH_BYTES + 1];

	spirt_hash_hex(hex, h);
	memcpy(buf, hex, 12);
	buf[12] = '\0';
	return buf;
}

/* what broke step st, into why */
static void
vwhy(char *why, size_t cap, const struct spirt_lineage_step *st,
    const char *model)
{
	char a[13], b[13];

	switch (st->broken) {
	case SPIRT_LN_MISSING:
		if (st->to == st->step)
			snprintf(why, cap, "no digest (%s is empty)", st->key);
		else
			snprintf(why, cap, "no digest (%s to digest/%llu/ are "
			    "empty)", st->key, ULL(st->to));
		break;
	case SPIRT_LN_DIGEST:
		snprintf(why, cap, "%s: %s (%s)", st->key,
		    spirt_strerror(st->rc), spirt_errname(st->rc));
		break;
	case SPIRT_LN_MODELS:
		snprintf(why, cap, "%s's digest names another model than %s's",
		    st->peer, st->other);
		break;
	case SPIRT_LN_RECEIVED:
		snprintf(why, cap, "%s's digest lists from %s another "
		    "aggregate than %s signed", st->peer, st->other, st->other);
		break;
	case SPIRT_LN_STORED:
		snprintf(why, cap, "%s hashes %s, the digests name %s@%llu = %s",
		    st->key, short_hash(a, st->stored), model, ULL(st->step),
		    short_hash(b, st->model));
		break;
	default:
		snprintf(why, cap, "%s: %s", st->key, spirt_strerror(st->rc));
	}
}

static int
vstep(void *arg, const struct spirt_lineage_step *st)
{
	struct vwalk *w = arg;
	char hex[2 * SPIRT_HASH_BYTES + 1], why[SPIRT_KEY_MAX + 200];
	char steps[64];
	size_t i, k;

	for (i = 0; i < st->n; i++) {
		for (k = 0; k < w->npeers; k++)
			if (!strcmp(w->peers[k], st->who[i]))
				break;
		if (k == w->npeers && k < SPIRT_DIGEST_MAXPEERS)
			snprintf(w->peers[w->npeers++], sizeof w->peers[0],
			    "%s", st->who[i]);
	}
	if (st->broken) {
		vwhy(why, sizeof why, st, w->model);
		if (st->to == st->step)
			snprintf(steps, sizeof steps, "step %llu",
			    ULL(st->step));
		else
			snprintf(steps, sizeof steps, "steps %llu..%llu",
			    ULL(st->step), ULL(st->to));
		printf("%s: broken: %s\n", steps, why);
		if (w->first) {
			warnx_("verify: %s: %s", steps, why);
			w->first = 0;
		}
		return 0;
	}
	spirt_hash_hex(hex, st->model);
	printf("step %llu: holds: model %s (%s):", ULL(st->step), hex,
	    st->kept ? "kept" : "not kept");
	for (i = 0; i < st->n; i++)
		printf(" %s%s", st->who[i], st->signer[i] ? "" :
		    " (no digest)");
	putchar('\n');
	return 0;
}

static int
bywho(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* spirt_store_list's fn: stop at the first key */
static int
anykey(void *arg, const char *key, const void *val, size_t len)
{
	(void)arg, (void)key, (void)val, (void)len;
	return 1;
}

/* verify --proof FILE: a proof that a part's owner signed a wrong
 * combination, checked alone (the slices combined again in a
 * transaction of the store, undone) */
static int
vproof(const char *path, const char *store, const char *run,
    const char *group, const char *allow)
{
	struct spirt_trust *tr = NULL;
	struct spirt_store *s = NULL;
	char msg[600];
	void *buf = NULL;
	const char *act;
	size_t n;
	int rc;

	if (run == NULL) {
		warnx_("--proof: no run (-r or SPIRT_RUN)");
		usage(1);
	}
	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	if ((rc = spirt_readfile(path, &buf, &n)) != 0)
		dierc(rc, "verify: %s", path);
	if ((rc = spirt_lineage_trust(&tr, run, group, allow, msg,
	    sizeof msg)) != 0) {
		free(buf);
		die(spirt_exit(rc) == SPIRT_EX_DATAERR ? SPIRT_EX_DATAERR :
		    SPIRT_EX_NOINPUT, "verify: %s", msg);
	}
	act = store ? store : store_default();
	if ((rc = spirt_store_open(&s, act, 0)) != 0) {
		warnrc(rc, "%s", act);
		rc = SPIRT_EX_NOINPUT;
	} else if ((rc = spirt_xpart_proof_check(s, buf, n, tr,
	    spirt_crypto_now(), msg, sizeof msg)) == 0) {
		printf("proof holds: %s\n", msg);
	} else {
		warnx_("verify: %s: %s", path, msg[0] ? msg :
		    spirt_strerror(rc));
		rc = spirt_exit(rc);
	}
	if (s)
		spirt_store_close(s);
	spirt_trust_free(tr);
	free(buf);
	return rc;
}

static int
vmain(int argc, char **argv)
{
	const char *store = NULL, *model = NULL, *run = NULL, *group = NULL;
	const char *allow = NULL, *act, *proof = NULL;
	char frun[SPIRT_ID_MAX + 1], msg[600];
	struct spirt_trust *tr = NULL;
	struct spirt_store *s = NULL;
	struct vwalk *w;
	uint64_t last = 0, broken = 0;
	int c, rc, code;

	optind = 1;
	while ((c = opt_next(&vcli, argc, argv)) != -1)
		switch (c) {
		case 'a': allow = optarg; break;
		case 'g': group = optarg; break;
		case 'm': model = optarg; break;
		case 'r': run = optarg; break;
		case 's': store = optarg; break;
		case PROOF: proof = optarg; break;
		default: usage(1);
		}
	if (optind != argc)
		usage(1);
	if (!proof && (model = opt_env(model, "SPIRT_MODEL", NULL)) == NULL) {
		warnx_("no model (-m or SPIRT_MODEL)");
		usage(1);
	}
	if (!proof)
		echeck_model("-m", model);
	group = opt_env(group, "SPIRT_GROUP", NULL);
	allow = opt_env(allow, "SPIRT_ALLOW", NULL);
	if ((!group || !*group) && (!allow || !*allow)) {
		warnx_("no group key and no allowlist (-g, -a, SPIRT_GROUP or "
		    "SPIRT_ALLOW): whom to trust");
		usage(1);
	}
	run = opt_env(run, "SPIRT_RUN", NULL);
	if (run && !spirt_id_valid(run)) {
		warnx_("-r: \"%s\" is not an id", run);
		usage(1);
	}
	if (proof)
		return vproof(proof, store, run, group, allow);
	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	act = store ? store : store_default();
	if ((rc = spirt_store_open(&s, act, SPIRT_STORE_RDONLY)) != 0) {
		warnrc(rc, "%s", act);
		return SPIRT_EX_NOINPUT;
	}
	{
		/* a name the store has no version of would otherwise show
		 * every step "not kept" and hold */
		struct spirt_txn *t;
		char key[300];

		if ((rc = spirt_key_model_prefix(key, sizeof key, model)) ==
		    0 && (rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)) == 0) {
			rc = spirt_store_list(t, key, anykey, NULL);
			spirt_txn_abort(t);
			rc = rc == 1 ? 0 : rc ? rc : SPIRT_ENOTFOUND;
		}
		if (rc) {
			spirt_store_close(s);
			if (rc == SPIRT_ENOTFOUND)
				die(SPIRT_EX_NOINPUT, "verify: %s: no %s<t> "
				    "(-m)", act, key);
			dierc(rc, "verify: %s: %s", act, key);
		}
	}
	if (!run) {
		if ((rc = spirt_lineage_run(s, frun)) != 0) {
			spirt_store_close(s);
			if (rc == SPIRT_ENOTFOUND)
				die(SPIRT_EX_NOINPUT, "verify: %s: no digest "
				    "(digest/<t>/<peer>; spirt-train "
				    "--keep-digests keeps them)", act);
			dierc(rc, "verify: %s: the first digest", act);
		}
		run = frun;
	}
	if ((rc = spirt_lineage_trust(&tr, run, group, allow, msg,
	    sizeof msg)) != 0) {
		spirt_store_close(s);
		die(spirt_exit(rc) == SPIRT_EX_DATAERR ? SPIRT_EX_DATAERR :
		    SPIRT_EX_NOINPUT, "verify: %s", msg);
	}
	if (!(w = calloc(1, sizeof *w)))
		die(SPIRT_EX_OSERR, "verify: out of memory");
	w->model = model;
	w->first = 1;
	rc = spirt_lineage_walk(s, model, run, tr, vstep, w, &last, &broken);
	if (rc == SPIRT_ENOTFOUND) {
		warnx_("verify: %s: no digest (digest/<t>/<peer>; spirt-train "
		    "--keep-digests keeps them)", act);
		code = SPIRT_EX_NOINPUT;
	} else if (rc) {
		warnrc(rc, "verify: %s", act);
		code = spirt_exit(rc);
	} else {
		qsort(w->peers, w->npeers, sizeof w->peers[0], bywho);
		printf("steps 0..%llu of run %s: ", ULL(last), run);
		if (broken)
			printf("broken at %llu of %llu steps\n", ULL(broken),
			    ULL(last + 1));
		else
			printf("the chain holds, %llu steps:", ULL(last + 1));
		for (size_t i = 0; !broken && i < w->npeers; i++)
			printf(" %s", w->peers[i]);
		if (!broken)
			putchar('\n');
		code = broken ? SPIRT_EX_DATAERR : 0;
	}
	free(w);
	spirt_trust_free(tr);
	spirt_store_close(s);
	return fshut_stdout(code);
}

int
main(int argc, char **argv)
{
	const char *cmd;
	int rc, optind_before_cmd;

	progname = "spirt-peer";
	checkfds();
	parent_watch();
	store_env();

	options(argc, argv);
	optind_before_cmd = optind > 1;
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(1);
	cmd = argv[0];
	optind = 1;
	/* the old spellings of spirt-key's commands, for this release */
	if (strcmp(cmd, "keygen") == 0 || strcmp(cmd, "invite") == 0) {
		if (optind_before_cmd)
			usage(1);
		return key_main(argc, argv);
	}
	if (strcmp(cmd, "exchange") == 0)
		return xmain(argc, argv);
	if (strcmp(cmd, "verify") == 0)
		return vmain(argc, argv);
	if (strcmp(cmd, "catch-up") == 0)
		return catchup_main(&ccli, argc, argv);
	if (strcmp(cmd, "peers") == 0)
		return peers_main(&pcli, argc, argv);
	options(argc, argv);
	argc -= optind;
	argv += optind;

	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	if (strcmp(cmd, "serve") == 0) {
		if (argc != 0)
			usage(1);
		return serve();
	}
	warnx_("%s: unknown command (serve, exchange, verify, catch-up or peers; "
	    "keygen and invite are spirt-key's)", cmd);
	usage(1);
}
