/* spirt-train.c - spirt-train's front: its options, option then
 * environment then default, every check that runs no tool, the tools
 * found; then the training loop, spirt-train.sh, with that configuration */
#define _XOPEN_SOURCE 700      /* realpath */
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "opt.h"
#include "tool.h"
#include "train/checks.h"

/* the long options without a letter (past 255: no letter's value) */
enum {
	O_BEAT = 256, O_BUCKET, O_BYZ, O_CKPT, O_COLD, O_DATA, O_DEADLINE,
	O_EVEVERY, O_EVALUATE, O_EVERY, O_EXCHANGE, O_FUNCTION, O_KEEPDG,
	O_KEEPPL, O_LEAVE, O_PEER, O_PRULE, O_PEERS, O_SCHEDULE, O_SPEC, O_STEPS,
	O_SYNC, O_TARGET, O_TEST, O_TRAIN, O_WMOM
};

static const struct opt opts[] = {
	{ 'a', "rule", "RULE",
	    "aggregation: mean wmean median trim:F norm krum:f\n"
	    "mkrum:f:m cclip:T[:L] (default mean)" },
	{ 'b', "batch", "N", "samples per function per step (default 32)" },
	{ 'e', "epochs", "N", "epochs to train (default 5)" },
	{ 'l', "lr", "LR",
	    "peak learning rate (default: per model, see man page)" },
	{ 'm', "model", "NAME",
	    "mlp, cnn, resnet8, resnet20, mobilenet or softmax\n(default mlp); the store key" },
	{ 'n', "functions", "M", "gradient functions per step (default 4)" },
	{ 'o', "opt", "NAME",
	    "sgd, momentum, nesterov or adam (default adam)" },
	{ 'S', "seed", "N",
	    "seed for data order and initialisation (default 1)" },
	OPT_STORE,
	{ O_BEAT, "beat", "MS",
	    "peers: beat every MS to the others, watch their\n"
	    "beats, close each step by the quorum (spirt-beat)" },
	{ O_BUCKET, "bucket", "S",
	    "average buckets of S gradients before the rule" },
	{ O_BYZ, "byzantine", "L:A",
	    "evaluation only: functions L (e.g. 1,3) are\n"
	    "malicious with attack A: labelflip or one of\n"
	    "spirt-attack(1)'s (e.g. 1,3:signflip:10);\n"
	    "peer:A: with --peers, this whole peer is\n"
	    "(labelflip, an attack on its aggregate, or\n"
	    "equivocate:A: A to the pullers of STORE.fork;\n"
	    "over HTTP equivocate@HOST:PORT:A, STORE.fork\n"
	    "served there)" },
	{ O_CKPT, "checkpoint", "N",
	    "a durable model version every N steps, volatile\n"
	    "ones between (default 100; 1: every step)" },
	{ O_COLD, "cold", NULL,
	    "start one process per function invocation" },
	{ O_DATA, "data", "DIR",
	    "Fashion-MNIST IDX files, sharded into the store\n"
	    "when it has no data set train\n"
	    "(default /usr/share/datasets/fashion-mnist)" },
	{ O_DEADLINE, "deadline", "MS",
	    "each wait for a step's functions, the aggregation,\n"
	    "the update, an exchange, in ms (default 30000)" },
	{ O_EVEVERY, "eval-every", "N",
	    "evaluate every N steps (default: each epoch)" },
	{ O_EVALUATE, "evaluate", "CMD",
	    "the evaluation function, in spirt-eval's place\n"
	    "(words split at blanks; default $SPIRT_EVALUATE\n"
	    "or spirt-eval; spirt-function(7))" },
	{ O_EVERY, "every", "H",
	    "peers: H local steps, then exchange the model change\n"
	    "and average it (default: every step, the gradient)" },
	{ O_EXCHANGE, "exchange", "MODE",
	    "peers: all (each pulls every aggregate, the default)\n"
	    "or parts (each combines a part of the vector from\n"
	    "every peer and serves it; spirt-peer(1), parts)" },
	{ O_FUNCTION, "function", "CMD",
	    "the gradient function, in spirt-grad's place, warm\n"
	    "or --cold (words split at blanks; default\n"
	    "$SPIRT_FUNCTION or spirt-grad; spirt-function(7))" },
	{ O_KEEPDG, "keep-digests", NULL,
	    "peers: keep every step's signed digests (default:\n"
	    "spent rounds are pruned, digests too)" },
	{ O_KEEPPL, "keep-pulls", NULL,
	    "peers: also store the aggregates pulled from the\n"
	    "others, xagg/T/ID (default: kept in memory)" },
	{ O_LEAVE, "leave", NULL,
	    "ask the run training in the store to leave its\n"
	    "group at its next epoch's first step, then exit" },
	{ O_PEER, "peer", "I",
	    "peers: this peer's share of the data, 0 to P-1" },
	{ O_PRULE, "peer-rule", "RULE",
	    "peers: how the exchange combines aggregates: mean\n"
	    "median trim:F norm cclip:T[:L] scclip:T[:L] (T a\n"
	    "radius or auto; default mean)" },
	{ O_PEERS, "peers", "FILE",
	    "train as one of the P peers of FILE (id url lines,\n"
	    "id url spare a slot that joins later):\n"
	    "spirt-peer exchange every step, apply gagg" },
	{ O_SCHEDULE, "schedule", "NAME",
	    "learning rate over the epochs: cosine or constant\n"
	    "(default cosine)" },
	{ O_SPEC, "spec", "SPEC",
	    "model spec (default: by model name, or its\n"
	    "model@ in the store)" },
	{ O_STEPS, "steps", "N",
	    "stop after N steps in all (default: epochs' worth)" },
	{ O_SYNC, "sync", "MODE",
	    "full, meta or none (default meta; see man page)" },
	{ O_TARGET, "target", "ACC",
	    "stop once test accuracy reaches ACC (0 to 1)" },
	{ O_TEST, "test", "DS",
	    "evaluate on data set DS of the store (spirt-shard\n"
	    "-d DS; default test)" },
	{ O_TRAIN, "train", "DS",
	    "train on data set DS of the store, sharded for\n"
	    "every function (spirt-shard -d DS -n P*M; default\n"
	    "train, or --data's)" },
	{ O_WMOM, "worker-momentum", "B",
	    "aggregate the functions' momenta (spirt-agg(1))" },
	{ 'q', "quiet", NULL, "no progress lines" },
	{ 'v', "verbose", NULL, "print each command" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	.usage =
	"usage: spirt-train [-qv] [-a rule] [-b batch] [-e epochs] [-l lr]\n"
	"                   [-m model] [-n functions] [-o optimiser] "
	"[-S seed]\n"
	"                   [-s store] [--beat ms] [--bucket s]\n"
	"                   [--byzantine list:attack]\n"
	"                   [--checkpoint n] [--cold] [--data dir] "
	"[--deadline ms]\n"
	"                   [--eval-every steps] [--evaluate cmd] "
	"[--every h]\n"
	"                   [--exchange mode] [--function cmd] "
	"[--keep-digests]\n"
	"                   [--keep-pulls] [--peer i] [--peer-rule rule] "
	"[--peers file]\n"
	"                   [--schedule name] [--spec spec] [--steps n]\n"
	"                   [--sync mode] [--target accuracy] [--test ds]\n"
	"                   [--train ds] [--worker-momentum b]\n"
	"       spirt-train [-s store] --leave\n",
	.width = 23,
	.flags = OPT_ARGMSG,
	.opt = opts,
};

/*
 * The models -m names, each with the spec and the peak learning rate it
 * starts from, chosen so that a user reaches the bars untuned, are
 * lib/model.c's presets (spirt_model_preset: the one list, which
 * spirt-init --spec-of and spirt-model(5) print too).  Any other name:
 * --spec, else the spec its model@ in the store names, and a rate of
 * 0.001.
 */

/* the tools the loop runs, found beside spirt-train or on PATH */
static const char *const tools[] = {
	"spirt-store", "spirt-shard", "spirt-init", "spirt-grad", "spirt-agg",
	"spirt-update", "spirt-eval", "spirt-attack", "spirt-peer",
	"spirt-beat", "spirt-run", NULL
};

/* the configuration, as the loop's variables: NAME=VALUE arguments */
#define NVARS 96
static char *vars[NVARS];
static int nvars;

static void
set(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
set(const char *name, const char *fmt, ...)
{
	va_list ap;
	char *v;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || nvars == NVARS)
		die(SPIRT_EX_SOFTWARE, "%s: cannot pass it to the loop", name);
	v = emalloc(strlen(name) + (size_t)n + 2);
	va_start(ap, fmt);
	vsnprintf(v + sprintf(v, "%s=", name), (size_t)n + 1, fmt, ap);
	va_end(ap);
	vars[nvars++] = v;
}

/* s matches the sh pattern pat (case's: * ? [!...]) */
static int
like(const char *s, const char *pat)
{
	return fnmatch(pat, s, 0) == 0;
}

/*
 * OPT's value *v a decimal integer in [lo, hi], leading zeros dropped
 * (08 is 8, never octal), at most 18 digits; *v becomes that form.
 */
static void
integer(const char *opt, const char **v, long long lo, long long hi)
{
	const char *x = *v, *y = x;
	size_t n;

	if (*x == '\0' || x[strspn(x, "0123456789")] != '\0')
		die(SPIRT_EX_USAGE, "%s: invalid number \"%s\"", opt, x);
	y += strspn(y, "0");
	n = strlen(y);
	if (n > 18 || atoll(y) < lo || atoll(y) > hi)
		die(SPIRT_EX_USAGE, "%s: %s is out of range (%lld to %lld)",
		    opt, x, lo, hi);
	*v = n ? y : "0";
}

/* OPT's value x a decimal number, no sign, in [lo, hi]: digits with at
 * most one point, a digit after it, an exponent after them */
static void
real(const char *opt, const char *x, const char *lo, const char *hi)
{
	const char *p = x;
	double d;
	size_t i;

	i = strspn(p, "0123456789");
	p += i;
	if (*p == '.') {
		p++;
		i = strspn(p, "0123456789");
		p += i;
	}
	if (i > 0 && (*p == 'e' || *p == 'E')) {
		p += 1 + (p[1] == '+' || p[1] == '-');
		i = strspn(p, "0123456789");
		p += i;
	}
	d = strtod(x, NULL);
	if (i == 0 || *p != '\0' || d < strtod(lo, NULL) ||
	    d > strtod(hi, NULL))
		die(SPIRT_EX_USAGE, "%s: \"%s\" is not a number from %s to %s",
		    opt, x, lo, hi);
}

/* a data set name as spirt-shard takes it, for OPT */
static void
dsname(const char *opt, const char *ds)
{
	if (*ds == '\0' || *ds == '.' || like(ds, "*[!a-zA-Z0-9._-]*"))
		die(SPIRT_EX_USAGE, "%s %s: invalid data set name (letters, "
		    "digits, . _ -, not first .)", opt, ds);
	if (strlen(ds) > 64)
		die(SPIRT_EX_USAGE, "%s %s: a data set name is at most 64 "
		    "bytes", opt, ds);
}

/* p an executable file, not a directory */
static int
executable(const char *p)
{
	struct stat st;

	return access(p, X_OK) == 0 && stat(p, &st) == 0 &&
	    !S_ISDIR(st.st_mode);
}

/*
 * name's path as sh's command -v finds it: name itself when it holds a
 * slash, else the first of PATH's directories (an empty one: .) that
 * holds it executable; NULL none.  The result is the caller's to free.
 */
static char *
lookup(const char *name)
{
	const char *path = getenv("PATH"), *d, *e;
	char *p;
	size_t n;

	if (strchr(name, '/'))
		return executable(name) ? strcpy(emalloc(strlen(name) + 1),
		    name) : NULL;
	for (d = path ? path : ""; ; d = e + 1) {
		e = strchr(d, ':');
		n = e ? (size_t)(e - d) : strlen(d);
		p = emalloc(n + strlen(name) + 3);
		sprintf(p, "%.*s/%s", (int)(n ? n : 1), n ? d : ".", name);
		if (executable(p))
			return p;
		free(p);
		if (e == NULL)
			return NULL;
	}
}

/* spirt-train's path: argv0 when it holds a slash, else as PATH finds it;
 * NULL none.  The caller's to free */
static char *
self_path(const char *argv0)
{
	if (strchr(argv0, '/'))
		return strcpy(emalloc(strlen(argv0) + 1), argv0);
	return lookup(argv0);
}

/*
 * here: the directory spirt-train was run from (its argv[0]'s, or the
 * one of PATH that holds it), symlinks resolved.  A spirt-train run by
 * its path (a build tree's top, an installed bin) runs the tools of that
 * directory when it holds them: it goes first in PATH (for the tools that
 * run others too), unless PATH holds it already, whose order then stands
 * (a wrapper or a stub put before it is run).  A tool found nowhere is
 * 69, named.
 */
static char *
tools_path(const char *argv0)
{
	static char here[PATH_MAX];
	char *p, *d, *s, *path, *e;
	const char *old;
	int onpath = 0;

	p = self_path(argv0);
	if (p && (d = strrchr(p, '/')) != NULL)
		d[d == p] = '\0';
	if (realpath(p ? p : ".", here) == NULL)
		snprintf(here, sizeof here, "%s", p ? p : ".");
	free(p);
	s = emalloc(strlen(here) + sizeof "/spirt-grad");
	sprintf(s, "%s/spirt-grad", here);
	old = getenv("PATH");
	if (executable(s)) {
		path = strcpy(emalloc(strlen(old ? old : "") + 1),
		    old ? old : "");
		for (d = path; d && !onpath; d = e) {
			char r[PATH_MAX];

			if ((e = strchr(d, ':')) != NULL)
				*e++ = '\0';
			onpath = realpath(*d ? d : ".", r) &&
			    strcmp(r, here) == 0;
		}
		free(path);
		if (!onpath) {
			path = emalloc(strlen(here) + strlen(old ? old : "") +
			    2);
			sprintf(path, "%s:%s", here, old ? old : "");
			if (setenv("PATH", path, 1) != 0)
				die(SPIRT_EX_OSERR, "PATH:");
			free(path);
		}
	}
	free(s);
	for (int i = 0; tools[i]; i++) {
		if ((s = lookup(tools[i])) == NULL)
			die(SPIRT_EX_UNAVAILABLE, "%s: not found beside "
			    "spirt-train (%s) or on PATH", tools[i], here);
		free(s);
	}
	return here;
}

/*
 * --function and --evaluate (spirt-function(7)): a command line split at
 * blanks, never globbed nor read by a shell; its first word is looked
 * for as the tools are (the function's only when look: SPIRT_FANOUT runs
 * it elsewhere).  A blank command is 64, one not found 69.
 */
static void
fnword(const char *opt, const char *cmd, const char *here, int look)
{
	size_t a = strspn(cmd, " \t\n"), n = strcspn(cmd + a, " \t\n");
	char *w, *p;

	if (n == 0)
		die(SPIRT_EX_USAGE, "%s: an empty command", opt);
	w = emalloc(n + 1);
	memcpy(w, cmd + a, n);
	w[n] = '\0';
	if (look && (p = lookup(w)) == NULL)
		die(SPIRT_EX_UNAVAILABLE, "%s %s: %s: not found beside "
		    "spirt-train (%s) or on PATH", opt, cmd, w, here);
	if (look)
		free(p);
	free(w);
}

/* -a RULE: spirt-agg's options, or NULL for a rule it is not; only
 * numbers reach its argv */
static char *
agg_args(const char *rule)
{
	const char *r = strchr(rule, ':');
	char *a = emalloc(strlen(rule) + 64);

	r = r ? r + 1 : "";     /* what follows the rule's name */

	if (like(rule, "mean") || like(rule, "wmean") ||
	    like(rule, "median") || like(rule, "norm"))
		sprintf(a, "-r %s", rule);
	else if (like(rule, "trim:*[!0-9.]*") ||
	    like(rule, "krum:*[!0-9]*") || like(rule, "mkrum:*[!0-9:]*") ||
	    like(rule, "mkrum:*:*:*"))
		*a = '\0';
	else if (like(rule, "trim:?*"))
		sprintf(a, "-r trim --trim %s", r);
	else if (like(rule, "krum:?*"))
		sprintf(a, "-r krum --byzantine %s", r);
	else if (like(rule, "mkrum:?*:?*"))
		sprintf(a, "-r mkrum --byzantine %.*s --select %s",
		    (int)strcspn(r, ":"), r, strchr(r, ':') + 1);
	else if (like(rule, "cclip:*[!0-9.eE:-]*") ||
	    like(rule, "cclip:*:*:*"))
		*a = '\0';
	else if (like(rule, "cclip:?*:?*"))
		sprintf(a, "-r cclip --tau %.*s --iters %s",
		    (int)strcspn(r, ":"), r, strchr(r, ':') + 1);
	else if (like(rule, "cclip:?*"))
		sprintf(a, "-r cclip --tau %s", r);
	else
		*a = '\0';
	if (*a == '\0') {
		free(a);
		return NULL;
	}
	return a;
}

/*
 * --peer-rule RULE: spirt-peer exchange's options, or NULL for a rule it
 * is not; only numbers reach its argv.  A radius "auto" (*xauto) is the
 * (f+1)-th largest distance, f the most a round of the quorum tolerates:
 * the loop adds --byzantine f once it knows the peers
 */
static char *
peer_rule_args(const char *rule, int *xauto)
{
	const char *pa, *pl = "1";
	char *a = emalloc(strlen(rule) + 64);
	int pt;

	*xauto = 0;
	if (like(rule, "mean") || like(rule, "median") || like(rule, "norm"))
		sprintf(a, "-r %s", rule);
	else if (like(rule, "trim:*[!0-9.]*") || like(rule, "trim:"))
		*a = '\0';
	else if (like(rule, "trim:*"))
		sprintf(a, "-r trim --trim %s", strchr(rule, ':') + 1);
	else if (like(rule, "cclip:?*") || like(rule, "scclip:?*")) {
		pa = strchr(rule, ':') + 1;
		pt = (int)strcspn(pa, ":");
		if (pa[pt] == ':')
			pl = pa + pt + 1;
		if (*pl == '\0' || like(pl, "*[!0-9]*"))
			*a = '\0';
		else if (pt == 4 && strncmp(pa, "auto", 4) == 0) {
			sprintf(a, "-r %.*s --tau auto --iters %s",
			    (int)(pa - 1 - rule), rule, pl);
			*xauto = 1;
		} else if (pt == 0 || strspn(pa, "0123456789.eE-") <
		    (size_t)pt)
			*a = '\0';
		else
			sprintf(a, "-r %.*s --tau %.*s --iters %s",
			    (int)(pa - 1 - rule), rule, pt, pa, pl);
	} else
		*a = '\0';
	if (*a == '\0') {
		free(a);
		return NULL;
	}
	return a;
}

/*
 * --byzantine LIST:ATTACK (evaluation only): the malicious functions,
 * each once, 0 to fns-1, and spirt-attack's attack or labelflip (which
 * the loop asks spirt-attack about): "bad", " 1 3 ", the store's worker
 * numbers "list", w0 + each, and "attack"
 */
static void
byzantine(const char *byz, long long fns, long long w0)
{
	const char *c = strchr(byz, ':'), *w, *e;
	char *bad, *list, *b, *l;
	size_t n = c ? (size_t)(c - byz) : strlen(byz);

	if (n == 0 || byz[0] == ',' || byz[n - 1] == ',' ||
	    strspn(byz, "0123456789,") < n ||
	    (strstr(byz, ",,") && strstr(byz, ",,") < byz + n))
		die(SPIRT_EX_USAGE, "--byzantine %s: expected functions, e.g. "
		    "1,3:signflip", byz);
	if (c == NULL || c[1] == '\0')
		die(SPIRT_EX_USAGE, "--byzantine %s: no attack after the "
		    "functions", byz);
	b = bad = emalloc(4 * n + 3);
	l = list = emalloc(4 * n + 24 * n + 2);
	b += sprintf(b, " ");
	for (w = byz; w < c; w = e + 1) {
		char one[32], pat[40];
		const char *v = one;

		e = w + strcspn(w, ",:");
		snprintf(one, sizeof one, "%.*s", (int)(e - w), w);
		integer("--byzantine", &v, 0, fns - 1);
		snprintf(pat, sizeof pat, "* %s *", v);
		if (like(bad, pat))
			die(SPIRT_EX_USAGE, "--byzantine %s: function %s "
			    "twice", byz, v);
		b += sprintf(b, "%s ", v);
		l += sprintf(l, "%s%lld", l == list ? "" : ",",
		    w0 + atoll(v));
	}
	set("bad", "%s", bad);
	set("list", "%s", list);
	set("attack", "%s", c + 1);
	free(bad);
	free(list);
}

/* the loop, spirt-train.sh: beside spirt-train (a build tree), in
 * ../libexec/spirt (installed), of here or of spirt-train's own file */
static char *
loop_path(const char *here, const char *argv0)
{
	static char p[PATH_MAX + 64];
	char self[PATH_MAX], *d, *f;
	const char *dirs[2] = { here, NULL };

	f = self_path(argv0);
	if (f && realpath(f, self) && (d = strrchr(self, '/')) != NULL) {
		*d = '\0';
		dirs[1] = self;
	}
	free(f);
	for (int i = 0; i < 2 && dirs[i]; i++) {
		snprintf(p, sizeof p, "%s/spirt-train.sh", dirs[i]);
		if (executable(p))
			return p;
		snprintf(p, sizeof p, "%s/../libexec/spirt/spirt-train.sh",
		    dirs[i]);
		if (executable(p))
			return p;
	}
	die(SPIRT_EX_UNAVAILABLE, "spirt-train.sh, its training loop: not "
	    "found beside spirt-train (%s) or in %s/../libexec/spirt", here,
	    here);
}

/*
 * --leave: ask the run training in store to leave its group at its next
 * epoch's first step: the empty file STORE.leave, which its loop looks
 * for before each epoch's first step and removes as it leaves
 * (spirt-train(1), "Joining and leaving a running group")
 */
static int
leave_ask(const char *store)
{
	char path[PATH_MAX];
	struct stat st;
	FILE *f;

	if (stat(store, &st) != 0)
		die(SPIRT_EX_NOINPUT, "--leave: store %s:", store);
	if (snprintf(path, sizeof path, "%s.leave", store) >=
	    (int)sizeof path)
		die(SPIRT_EX_USAGE, "--leave: store %s: path too long", store);
	if ((f = fopen(path, "w")) == NULL || fclose(f) != 0)
		die(SPIRT_EX_CANTCREAT, "--leave: %s:", path);
	return SPIRT_EX_OK;
}

int
main(int argc, char **argv)
{
	const char *rule = "mean", *batch = "32", *epochs = "5", *lr = NULL,
	    *model = "mlp", *fns = "4", *opt = "adam", *seed = "1",
	    *store = store_default(), *data =
	    "/usr/share/datasets/fashion-mnist", *every = "0",
	    *sched = "cosine", *spec = "", *steps = "0", *sync = "meta",
	    *target = "0", *ckpt = "100", *peers = "", *peer = "0",
	    *deadline = "30000", *bucket = "1", *byz = "", *xh = "0",
	    *beat = "0", *xmode = "all", *prule = "mean", *wmom = "",
	    *train = "train", *test = "test", *optargs, *fanout, *th,
	    *fncmd = opt_env(NULL, "SPIRT_FUNCTION", "spirt-grad"),
	    *evcmd = opt_env(NULL, "SPIRT_EVALUATE", "spirt-eval"),
	    *fnopt = "SPIRT_FUNCTION", *evopt = "SPIRT_EVALUATE";
	int c, cold = 0, quiet = 0, verbose = 0, keepdg = 0, keeppl = 0,
	    dsopt = 0, datagiven = 0, xauto = 0, leave = 0, lflip, bpeer;
	const struct spirt_preset *pre;
	struct train_peers pp;
	struct train_data td;
	long long xq;
	char *here, *aggargs, *xargs_, *agg, *x, *what, **av;

	progname = "spirt-train";
	checkfds();
	parent_watch();

	while ((c = opt_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case 'a': rule = optarg; break;
		case 'b': batch = optarg; break;
		case 'e': epochs = optarg; break;
		case 'l': lr = optarg; break;
		case 'm': model = optarg; break;
		case 'n': fns = optarg; break;
		case 'o': opt = optarg; break;
		case 'S': seed = optarg; break;
		case 's': store = optarg; break;
		case 'q': quiet = 1; break;
		case 'v': verbose = 1; break;
		case O_BEAT: beat = optarg; break;
		case O_BUCKET: bucket = optarg; break;
		case O_BYZ: byz = optarg; break;
		case O_CKPT: ckpt = optarg; break;
		case O_COLD: cold = 1; break;
		case O_DATA: data = optarg; datagiven = 1; break;
		case O_DEADLINE: deadline = optarg; break;
		case O_EVEVERY: every = optarg; break;
		case O_EVALUATE: evcmd = optarg; evopt = "--evaluate"; break;
		case O_EVERY: xh = optarg; break;
		case O_EXCHANGE: xmode = optarg; break;
		case O_FUNCTION: fncmd = optarg; fnopt = "--function"; break;
		case O_KEEPDG: keepdg = 1; break;
		case O_KEEPPL: keeppl = 1; break;
		case O_LEAVE: leave = 1; break;
		case O_PEER: peer = optarg; break;
		case O_PRULE: prule = optarg; break;
		case O_PEERS: peers = optarg; break;
		case O_SCHEDULE: sched = optarg; break;
		case O_SPEC: spec = optarg; break;
		case O_STEPS: steps = optarg; break;
		case O_SYNC: sync = optarg; break;
		case O_TARGET: target = optarg; break;
		case O_TEST: test = optarg; dsopt = 1; break;
		case O_TRAIN: train = optarg; dsopt = 1; break;
		case O_WMOM: wmom = optarg; break;
		case 'V': print_version();
		default: opt_usage(&cli, 1);
		}
	}
	if (optind != argc)
		opt_usage(&cli, 1);
	if (leave) {
		if (*store == '\0')
			die(SPIRT_EX_USAGE, "-s: empty store path");
		return leave_ask(store);
	}
	here = tools_path(argv[0]);

	/* every option checked before any work: a bad one is 64 at once */
	integer("-b", &batch, 1, 1048576);
	integer("-e", &epochs, 1, 1000000);
	integer("-n", &fns, 1, 256);
	integer("-S", &seed, 0, 999999999999999999LL);
	integer("--eval-every", &every, 0, 999999999999999999LL);
	integer("--steps", &steps, 0, 999999999999999999LL);
	integer("--checkpoint", &ckpt, 0, 999999999999999999LL);
	integer("--deadline", &deadline, 1, 86400000);
	integer("--peer", &peer, 0, 255);
	integer("--every", &xh, 0, 999999999999999999LL);
	integer("--beat", &beat, 0, 86400000);
	if (strcmp(beat, "0") != 0 && *peers == '\0')
		die(SPIRT_EX_USAGE, "--beat %s: it needs --peers", beat);
	if (strcmp(xh, "0") != 0 && *peers == '\0')
		die(SPIRT_EX_USAGE, "--every %s: it needs --peers", xh);
	if (strcmp(xmode, "parts") == 0) {
		if (*peers == '\0')
			die(SPIRT_EX_USAGE, "--exchange parts: it needs "
			    "--peers");
		/* (every member owns a part: no quorum to close a round
		 * without one) */
		if (strcmp(beat, "0") != 0 || keeppl)
			die(SPIRT_EX_USAGE, "--exchange parts: not with "
			    "--beat or --keep-pulls");
	} else if (strcmp(xmode, "all") != 0)
		die(SPIRT_EX_USAGE, "--exchange %s: all or parts", xmode);
	integer("--bucket", &bucket, 1, 256);
	real("--target", target, "0", "1");
	if (*store == '\0')
		die(SPIRT_EX_USAGE, "-s: empty store path");
	/* --train, --test: data set names as spirt-shard takes them; --data
	 * shards Fashion-MNIST as train and test, the demo's shortcut */
	dsname("--train", train);
	dsname("--test", test);
	if (datagiven && dsopt)
		die(SPIRT_EX_USAGE, "--data %s: it shards train and test; "
		    "with --train or --test, shard with spirt-shard -d", data);

	pre = spirt_model_preset(model);
	if (*spec == '\0')
		spec = pre ? pre->spec : "";
	if (lr == NULL)
		lr = pre ? pre->lr : "0.001";
	real("-l", lr, "0", "1000000");
	if (strcmp(opt, "sgd") == 0)
		optargs = "--opt sgd";
	else if (strcmp(opt, "momentum") == 0)
		optargs = "--opt momentum --momentum 0.9";
	else if (strcmp(opt, "nesterov") == 0)
		optargs = "--opt momentum --momentum 0.9 --nesterov";
	else if (strcmp(opt, "adam") == 0)
		optargs = "--opt adam";
	else
		die(SPIRT_EX_USAGE, "optimiser %s: expected sgd, momentum, "
		    "nesterov or adam", opt);

	if ((aggargs = agg_args(rule)) == NULL)
		die(SPIRT_EX_USAGE, "-a %s: expected mean, wmean, median, "
		    "trim:F, norm, krum:f, mkrum:f:m or cclip:T[:L]", rule);
	if (*wmom)
		real("--worker-momentum", wmom, "0", "0.999999");
	agg = emalloc(strlen(aggargs) + strlen(bucket) + strlen(seed) +
	    strlen(wmom) + 64);
	sprintf(agg, "%s%s%s%s%s%s%s", aggargs,
	    strcmp(bucket, "1") ? " --bucket " : "",
	    strcmp(bucket, "1") ? bucket : "",
	    strcmp(bucket, "1") ? " --seed " : "",
	    strcmp(bucket, "1") ? seed : "",
	    *wmom ? " --worker-momentum " : "", wmom);
	set("aggargs", "%s", agg);
	free(aggargs);
	/* the exchange's rule across the peers */
	if (strcmp(prule, "mean") != 0 && *peers == '\0')
		die(SPIRT_EX_USAGE, "--peer-rule %s: it needs --peers", prule);
	if ((xargs_ = peer_rule_args(prule, &xauto)) == NULL)
		die(SPIRT_EX_USAGE, "--peer-rule %s: expected mean, median, "
		    "trim:F, norm, cclip:T[:L] or scclip:T[:L] (T a radius "
		    "or auto)", prule);

	fnword(evopt, evcmd, here, 1);
	fanout = getenv("SPIRT_FANOUT");
	if (fanout && *fanout == '\0')
		fanout = NULL;
	fnword(fnopt, fncmd, here, fanout == NULL);
	/* --byzantine peer:ATTACK is the loop's evaluation part's; labelflip
	 * there is every function's */
	lflip = strcmp(byz, "peer:labelflip") == 0;
	if (*byz && strncmp(byz, "peer:", 5) != 0) {
		byzantine(byz, atoll(fns), atoll(peer) * atoll(fns));
		lflip = like(byz, "*:labelflip");
	}
	if (lflip && strcmp(fncmd, "spirt-grad") != 0)
		die(SPIRT_EX_USAGE, "--byzantine %s: labelflip is "
		    "spirt-grad's --label-flip, not %s %s's", byz, fnopt,
		    fncmd);
	/* SPIRT_FANOUT: with --cold, the command that runs a step's
	 * functions in place of one local process each (spirt-train(1)) */
	if (fanout && !cold)
		die(SPIRT_EX_USAGE, "SPIRT_FANOUT: it runs cold functions; "
		    "give --cold");
	if (fanout && lflip)
		die(SPIRT_EX_USAGE, "SPIRT_FANOUT: --byzantine %s starts its "
		    "functions itself", byz);
	if (strcmp(sched, "cosine") != 0 && strcmp(sched, "constant") != 0)
		die(SPIRT_EX_USAGE, "schedule %s: expected cosine or constant",
		    sched);
	if (strcmp(sync, "full") != 0 && strcmp(sync, "meta") != 0 &&
	    strcmp(sync, "none") != 0)
		die(SPIRT_EX_USAGE, "sync %s: expected full, meta or none",
		    sync);

	/* the peers: this one's share, the others; the data set is sharded
	 * over all P x M functions, this peer's are w0 .. w0+M-1.  Spare
	 * slots join the running group later, as a rejoiner does, out of
	 * the map until then: the others learn of one from its beats */
	memset(&pp, 0, sizeof pp);
	pp.np = 1;
	if (*peers) {
		train_peers(&pp, peers, atoll(peer));
		if (pp.spare && strcmp(beat, "0") == 0)
			die(SPIRT_EX_USAGE, "--peers %s: spare slots (the lines "
			    "that say spare) join a running group by their "
			    "beats: give --beat", peers);
	}
	td.nw = pp.np * atoll(fns);
	/* the exchange's quorum, more than half of the P peers; a radius
	 * "auto" is the (f+1)-th largest distance, f = (Q-1)/2 the most a
	 * round of Q tolerates (1 of 4 peers) */
	xq = pp.np / 2 + 1;
	x = emalloc(strlen(xargs_) + 48);
	sprintf(x, "%s", xargs_);
	if (xauto)
		sprintf(x + strlen(x), " --byzantine %lld", (xq - 1) / 2);
	free(xargs_);
	set("self", "%s", pp.self ? pp.self : "");
	set("selfurl", "%s", pp.selfurl ? pp.selfurl : "");
	set("others", "%s", pp.others ? pp.others : "");
	set("urls", "%s", pp.urls ? pp.urls : "");
	set("oids", "%s", pp.oids ? pp.oids : "");
	set("w0", "%lld", atoll(peer) * atoll(fns));
	set("nw", "%lld", td.nw);
	set("xargs_", "%s", x);

	/* the attack, the rules for M inputs (and the exchange's for the
	 * quorum), the model's spec: each as its tool would take it, before
	 * any work */
	if (*byz && strncmp(byz, "peer:", 5) != 0)
		train_attack(byz, strchr(byz, ':') + 1);
	what = emalloc(strlen(rule) + strlen(prule) + 16);
	sprintf(what, "-a %s", rule);
	train_rule(what, agg, (unsigned long long)atoll(fns));
	if (*peers) {
		sprintf(what, "--peer-rule %s", prule);
		train_rule(what, x, (unsigned long long)xq);
	}
	free(what);
	free(agg);
	free(x);
	train_spec(&spec, store, model);

	/* the tools' environment: the store, its sync, the data sets by
	 * name (spirt-grad, spirt-agg, spirt-store batch, spirt-eval;
	 * spirt-function(7)); many functions share two cores: one BLAS
	 * thread each */
	if (setenv("SPIRT_SYNC", sync, 1) || setenv("SPIRT_STORE", store, 1) ||
	    setenv("SPIRT_DATASET", train, 1) ||
	    setenv("SPIRT_DATASET_TEST", test, 1) ||
	    (!(th = getenv("SPIRT_THREADS")) || *th == '\0' ?
	    setenv("SPIRT_THREADS", "1", 1) : 0))
		die(SPIRT_EX_OSERR, "setenv:");
	store_env();

	/* the data sets and the steps: per, a worker's samples; spe, the
	 * steps per epoch; total, the schedule's; stop, where the run ends;
	 * every, the evaluations' period; last, the newest model step */
	td.store = store;
	td.data = data;
	td.train = train;
	td.test = test;
	td.model = model;
	td.dsopt = dsopt;
	td.np = pp.np;
	td.batch = atoll(batch);
	td.epochs = atoll(epochs);
	td.steps = atoll(steps);
	td.every = atoll(every);
	train_data(&td);
	set("shtrain", "%d", td.shtrain);
	set("shtest", "%d", td.shtest);
	set("per", "%lld", td.per);
	set("spe", "%lld", td.spe);
	set("total", "%lld", td.total);
	set("stop", "%lld", td.stop);
	set("last", "%s", td.last);
	free(pp.self);
	free(pp.selfurl);
	free(pp.others);
	free(pp.urls);
	free(pp.oids);

	/* what the loop's parts set once from the options: xu, the steps of
	 * a rejoiner's source's rounds (--every's, else 1); keep, the model
	 * versions spirt-update keeps (--every H: H + 1, model@s0 of the
	 * round stays until its outer step); spent, what --every's rounds
	 * prune besides (digests unless kept); aggkey, where a step's
	 * aggregate goes (peers a round a step: xagg/<t>/<self>, published
	 * as it is, unless this peer lies: it crafts agg/<t>); slots, warm
	 * spirt-grad functions with no attack on the stored gradients
	 * writing their gradients into slots (docs/contracts.md, "Gradient
	 * slots"); the log and plot, the model's */
	bpeer = strncmp(byz, "peer:", 5) == 0;
	set("xu", "%s", strcmp(xh, "0") ? xh : "1");
	set("keep", "%lld", atoll(xh) < 2 ? 2 : atoll(xh) + 1);
	set("spent", "%s", keepdg ? "" : "digest/");
	set("aggkey", "%s", *peers && strcmp(xh, "0") == 0 && !bpeer ?
	    "xagg" : "agg");
	set("slots", "%d", !cold && strcmp(fncmd, "spirt-grad") == 0 &&
	    !bpeer && (*byz == '\0' ||
	    strcmp(strchr(byz, ':') + 1, "labelflip") == 0));
	set("log", "%s.train-%s.tsv", store, model);
	set("plot", "%s.train-%s.png", store, model);

	set("rule", "%s", rule);
	set("batch", "%s", batch);
	set("epochs", "%s", epochs);
	set("lr", "%s", lr);
	set("model", "%s", model);
	set("fns", "%s", fns);
	set("opt", "%s", opt);
	set("optargs", "%s", optargs);
	set("seed", "%s", seed);
	set("store", "%s", store);
	set("cold", "%d", cold);
	set("data", "%s", data);
	set("every", "%lld", td.every);
	set("sched", "%s", sched);
	set("spec", "%s", spec);
	set("steps", "%s", steps);
	set("sync", "%s", sync);
	set("target", "%s", target);
	set("quiet", "%d", quiet);
	set("verbose", "%d", verbose);
	set("ckpt", "%s", ckpt);
	set("peers", "%s", peers);
	set("peer", "%s", peer);
	set("deadline", "%s", deadline);
	set("keepdg", "%d", keepdg);
	set("keeppl", "%d", keeppl);
	set("bucket", "%s", bucket);
	set("byz", "%s", byz);
	set("xh", "%s", xh);
	set("beat", "%s", beat);
	set("xmode", "%s", xmode);
	set("prule", "%s", prule);
	set("wmom", "%s", wmom);
	set("fncmd", "%s", fncmd);
	set("fnopt", "%s", fnopt);
	set("evcmd", "%s", evcmd);
	set("evopt", "%s", evopt);
	set("fanout", "%s", fanout ? fanout : "");
	set("train", "%s", train);
	set("test", "%s", test);
	set("here", "%s", here);

	/* the loop: its argv, the front's mark then NAME=VALUE each (sh
	 * assigns them as they are, never reading them as code) */
	av = emalloc((size_t)(nvars + 3) * sizeof *av);
	av[0] = loop_path(here, argv[0]);
	av[1] = "--front=" SPIRT_VERSION_MK;
	memcpy(av + 2, vars, (size_t)nvars * sizeof *av);
	av[nvars + 2] = NULL;
	fflush(NULL);
	execv(av[0], av);
	die(SPIRT_EX_UNAVAILABLE, "%s:", av[0]);
}
