/* spirt-update.c - apply an aggregated gradient to model@t: model@t+1, once */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "opt.h"
#include "serve.h"
#include "store.h"
#include "tool.h"
#include "update.h"

static struct {
	struct spirt_update u;
	const char *store, *params, *out;
	int serve;
	struct spirt_aggset mean;       /* the warm word mean=grad's */
	struct spirt_slotset slots;     /* mean=slots: the gradient slots */
} o;

/* the hyperparameters' values, in val[]; what the long-only options return */
enum { LR, MOM, B1, B2, EPS, WD, EVERY, GAMMA, TOTAL, LRMIN, KEEP, CKPT,
    NHYPER, OPT = 256, NESTEROV, SCHED, DELTA, OUTER };

static const struct opt opts[] = {
	{ 'a', "agg", "PREFIX",
	    "apply <PREFIX>/<step> (default agg; gagg: a peer's\n"
	    "global aggregate)" },
	{ 'i', "serve", NULL,
	    "warm: one -t run per step line on stdin (its words:\n"
	    "delta=S outer=N agg=PREFIX mean=grad|slots rule=R ...)" },
	{ 'k', "keep", "K", "keep the last K model versions (0: all)" },
	{ 'm', "model", "NAME", "model/NAME@<step> in the store" },
	{ 'o', "output", "FILE",
	    "with -p: write the new model file there (- = stdout)" },
	{ 'p', "params", "FILE", "take model@t (and state) from a model file" },
	{ 'q', "quiet", NULL, "no notes" },
	{ 'r', "lr", "LR", "learning rate" },
	OPT_STORE,
	{ 't', "step", "N", "update model@N with agg/N" },
	{ 'v', "verbose", NULL, "report timings" },
	{ 256 + 16 + CKPT, "checkpoint", "N",
	    "durable every N versions, volatile between" },
	{ DELTA, "delta", "S",
	    "write delta/S = model@S - the new model, not model@t+1" },
	{ OUTER, "outer", "N",
	    "model@t+N = model@t - <PREFIX>/t (outer SGD, lr 1)" },
	{ OPT, "opt", "NAME", "sgd momentum adam adamw" },
	{ 256 + 16 + MOM, "momentum", "MU", "momentum factor" },
	{ NESTEROV, "nesterov", NULL, "Nesterov momentum" },
	{ 256 + 16 + B1, "beta1", "B", "Adam first-moment decay" },
	{ 256 + 16 + B2, "beta2", "B", "Adam second-moment decay" },
	{ 256 + 16 + EPS, "eps", "E", "Adam denominator term" },
	{ 256 + 16 + WD, "wd", "W", "weight decay" },
	{ SCHED, "schedule", "S", "constant step cosine" },
	{ 256 + 16 + EVERY, "lr-every", "N", "step schedule: decay period" },
	{ 256 + 16 + GAMMA, "lr-gamma", "G", "step schedule: decay factor" },
	{ 256 + 16 + TOTAL, "lr-total", "N",
	    "cosine schedule: steps to --lr-min" },
	{ 256 + 16 + LRMIN, "lr-min", "LR", "cosine schedule: final lr" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-update [-iqv] [-a prefix] [-k keep] [-m model] "
	"[-o file]\n"
	"                    [-p file] [-r lr] [-s store] [-t step]\n"
	"                    [--checkpoint n] [--delta step] [--outer n]\n"
	"                    [--opt name]\n"
	"                    [--momentum mu] [--nesterov] [--beta1 b] "
	"[--beta2 b]\n"
	"                    [--eps e] [--wd w]\n"
	"                    [--schedule name] [--lr-every n] [--lr-gamma g]\n"
	"                    [--lr-total n] [--lr-min lr] [file]\n",
	NULL, NULL, 22, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

static int
instore(struct spirt_txn *txn, void *arg)
{
	(void)arg;
	return spirt_update_store_step(&o.u, txn);
}

/* one update: durable, or volatile between checkpoints */
static int
update(struct spirt_store *s)
{
	return spirt_store_writef(s, spirt_update_durable(&o.u) ? 0 :
	    SPIRT_TXN_VOLATILE, instore, NULL);
}

/* The failure's message: the library's, else act with the cause. */
static void
tell(int rc, const char *act)
{
	if (o.u.msg[0])
		warnx_("%s", o.u.msg);
	else if (rc != EPIPE)
		warnrc(rc, "%s", act);
}

static void
applied(void)
{
	info("model/%s@%llu exists: step %llu already applied, nothing done",
	    o.u.model, (unsigned long long)o.u.step + 1,
	    (unsigned long long)o.u.step);
}

/* -v: what was written, with timings */
static void
timings(double t0)
{
	if (spirt_verbose)
		fprintf(stderr, "%s: %s%s%s%llu: %s, lr %g, state step %llu:"
		    " work %.3f ms, total %.3f ms\n", progname,
		    o.params ? "" : "model/", o.params ? o.out : o.u.model,
		    o.params ? ": step " : "@",
		    (unsigned long long)o.u.step + 1,
		    spirt_optim_name(o.u.op.kind),
		    spirt_optim_lr(&o.u.op, o.u.step),
		    (unsigned long long)o.u.k + 1, o.u.work_ms,
		    1e3 * spirt_clock() - t0);
}

/*
 * mean=grad: its stragglers named, even with -q, as spirt-agg names them
 * (a late or moved function's, not the rule's doing)
 */
static void
stragglers(void)
{
	char b[SPIRT_KEY_MAX + 128];

	for (size_t i = 0; o.u.grads && i < o.mean.w; i++)
		if (spirt_aggset_straggler(&o.mean, i, b, sizeof b))
			fprintf(stderr, "%s: %s\n", progname, b);
}

/* the words a warm request may carry: --delta, --outer and -a's, and
 * mean=grad (the fused step: the mean of grad/<t>/<w>, not agg/<t>), or
 * mean=slots (the same with the functions' gradient slots beside them);
 * with either, spirt-agg's rule and its parameters instead of the mean:
 * rule=, trim=, byzantine=, select=, batch= (-r, --trim, --byzantine,
 * --select, --batch) */
static const char *const serve_keys[] = { "agg", "batch", "byzantine",
    "delta", "mean", "outer", "rule", "select", "trim", NULL };

/*
 * A fused step's rule word (rule=, trim=, byzantine=, select=, batch=)
 * into o.mean; NULL, or why it is refused.
 */
static const char *
rule_word(const struct spirt_serve_word *w)
{
	char v[SPIRT_SERVE_LINE], *end;
	uint64_t n;

	memcpy(v, w->val, w->nval);
	v[w->nval] = '\0';
	switch (w->key[0]) {
	case 'r':
		o.mean.p.rule = spirt_agg_rule_parse(v);
		if (o.mean.p.rule == SPIRT_AGG_CCLIP ||
		    o.mean.p.rule == SPIRT_AGG_SCCLIP || o.mean.p.rule == 0)
			return "rule=: mean, wmean, trim, median, norm, krum "
			    "or mkrum (cclip's centre is agg/<t-1>: spirt-agg)";
		return NULL;
	case 't':
		errno = 0;
		o.mean.p.trim = strtod(v, &end);
		if (*end || errno || !(o.mean.p.trim >= 0 &&
		    o.mean.p.trim <= 0.49999))
			return "trim=: a fraction from 0 to 0.49999";
		return NULL;
	case 'b':
		if (w->key[1] == 'a') {
			if (spirt_serve_word_u64(w, 1, 1 << 20, &n))
				return "batch=: a batch from 1 to 1048576";
			o.mean.batch = o.mean.max_samples = n;
			return NULL;
		}
		if (spirt_serve_word_u64(w, 0, SPIRT_AGG_MAXW, &n))
			return "byzantine=: a count from 0";
		o.mean.p.f = (unsigned)n;
		return NULL;
	default:
		if (spirt_serve_word_u64(w, 1, SPIRT_AGG_MAXW, &n))
			return "select=: a count from 1";
		o.mean.p.m = (unsigned)n;
		return NULL;
	}
}

/*
 * A warm request's words into o.u (from the command line's values when
 * absent); 0, or SPIRT_EX_USAGE with a message (nothing run).
 */
static int
serve_words(const struct spirt_serve_req *req, const char *agg)
{
	static char name[SPIRT_SERVE_LINE];
	const struct spirt_serve_word *w;
	const char *why = NULL;
	uint64_t v;
	int rules = 0;

	o.u.agg = agg;
	o.u.delta = SPIRT_NOSTEP;
	o.u.outer = 0;
	o.u.grads = NULL;
	/* the fused step's rule: the mean unless its words say */
	spirt_agg_defaults(&o.mean.p);
	o.mean.batch = o.mean.max_samples = 0;
	for (int i = 0; i < req->nwords && !why; i++) {
		w = &req->word[i];
		if (w->key[0] == 'r' || w->key[0] == 't' || w->key[0] == 's' ||
		    (w->key[0] == 'b')) {
			rules++;
			why = rule_word(w);
		} else if (w->key[0] == 'm') {
			/* slots: the functions' slots beside grad/<t> */
			o.mean.slots = w->nval == 5 && memcmp(w->val,
			    "slots", 5) == 0 ? &o.slots : NULL;
			if (!o.mean.slots && (w->nval != 4 ||
			    memcmp(w->val, "grad", 4) != 0))
				why = "mean=: grad or slots, the step's "
				    "gradients";
			o.u.grads = &o.mean;
		} else if (w->key[0] == 'a') {
			memcpy(name, w->val, w->nval);
			name[w->nval] = '\0';
			if (spirt_name_check(name) != 0)
				why = "agg=: not a key prefix";
			o.u.agg = name;
		} else if (spirt_serve_word_u64(w, w->key[0] == 'o', SPIRT_NOSTEP
		    - 2, &v)) {
			why = w->key[0] == 'o' ? "outer=: a count 1 to "
			    "18446744073709551613" : "delta=: a step";
		} else if (w->key[0] == 'o') {
			o.u.outer = v;
		} else {
			o.u.delta = v;
		}
	}
	if (!why && o.u.delta != SPIRT_NOSTEP && o.u.outer)
		why = "delta= and outer= are two steps: one at a time";
	if (!why && rules && !o.u.grads)
		why = "rule=, trim=, byzantine=, select=, batch=: the fused "
		    "step's, with mean=";
	if (!why && o.u.grads && (o.u.delta != SPIRT_NOSTEP || o.u.outer ||
	    o.u.agg != agg))
		why = "mean= is the step's aggregate: not with agg=, "
		    "delta= or outer=";
	if (!why)
		return 0;
	warnx_("stdin:%llu: %s", (unsigned long long)req->line, why);
	return SPIRT_EX_USAGE;
}

/*
 * Warm mode: each request line on stdin (serve.h) is one run with -t step
 * (and --delta, --outer, -a as its words say), in its own write
 * transaction; one answer line each.  Nothing but the open store carries
 * over between steps.
 */
static int
serve_one(void *arg, const struct spirt_serve_req *req, char *ans,
    size_t cap)
{
	static const char *agg;
	static int once;
	unsigned long long t = req->step;
	int rc, code;

	if (!once) {
		agg = o.u.agg;
		once = 1;
	}
	if ((code = serve_words(req, agg)) != 0) {
		snprintf(ans, cap, "step=%llu error=%d", t, code);
		return code;
	}
	o.u.step = req->step;
	rc = update(arg);
	stragglers();
	if (rc == SPIRT_EDONE && o.u.done) {
		applied();
		snprintf(ans, cap, "step=%llu applied=already", t);
		return 0;
	}
	if ((code = spirt_exit(rc)) != 0) {
		tell(rc, "update");
		snprintf(ans, cap, "step=%llu error=%d", t, code);
		return code;
	}
	if (o.u.grads)
		snprintf(ans, cap, "step=%llu lr=%.9g count=%lu loss=%.9g", t,
		    spirt_optim_lr(&o.u.op, t),
		    (unsigned long)o.u.grads->hdr.count,
		    o.u.grads->hdr.loss);
	else
		snprintf(ans, cap, "step=%llu lr=%.9g", t,
		    spirt_optim_lr(&o.u.op, t));
	return 0;
}

/* Returns the worst exit code. */
static int
serve(struct spirt_store *s)
{
	struct spirt_serve sv = {
		.name = "stdin", .maxstep = SPIRT_NOSTEP - 2,
		.keys = serve_keys, .run = serve_one, .arg = s,
		.warn = warnx_,
	};
	char path[4096];
	int rc;

	serve_setup();
	/* mean=grad: spirt-agg -r mean -P's inputs, with spirt-grad's data
	 * set's assignment in force (stragglers left out); no sample bound
	 * (the mean has no weights) */
	spirt_aggset_init(&o.mean);
	o.mean.dataset = opt_env(NULL, "SPIRT_DATASET", "train");
	o.mean.revcheck = 1;
	o.mean.prune = 1;
	/* mean=slots: the warm functions' slots (slot.h), model@t's */
	snprintf(path, sizeof path, "%s/scratch", spirt_store_location(s));
	spirt_slotset_init(&o.slots, path);
	o.mean.slot_model = o.u.model;
	rc = spirt_serve_loop(&sv, stdin, stdout);
	spirt_aggset_reset(&o.mean);
	spirt_slotset_free(&o.slots);
	if (rc != 0) {
		warnrc(rc, "%s", ferror(stdin) ? "stdin" : "stdout");
		return SPIRT_EX_IOERR;
	}
	return sv.worst;
}

/* hyperparameters: option, else $SPIRT_*, else default */
static void
hyper(const char *const *val)
{
	struct {
		const char *opt, *env;
		double *d;
		uint64_t *u;
		double min, max;
	} h[] = {
		{ "--lr", "SPIRT_LR", &o.u.op.lr, NULL, 0, 1e6 },
		{ "--momentum", "SPIRT_MOMENTUM", &o.u.op.momentum, NULL, 0,
		    0.999999 },
		{ "--beta1", "SPIRT_BETA1", &o.u.op.beta1, NULL, 0, 0.999999 },
		{ "--beta2", "SPIRT_BETA2", &o.u.op.beta2, NULL, 0,
		    0.999999999 },
		{ "--eps", "SPIRT_EPS", &o.u.op.eps, NULL, 1e-30, 1 },
		{ "--wd", "SPIRT_WD", &o.u.op.wd, NULL, 0, 1e6 },
		{ "--lr-every", "SPIRT_LR_EVERY", NULL, &o.u.op.every, 1,
		    1e18 },
		{ "--lr-gamma", "SPIRT_LR_GAMMA", &o.u.op.gamma, NULL, 1e-12,
		    1 },
		{ "--lr-total", "SPIRT_LR_TOTAL", NULL, &o.u.op.total, 1,
		    1e18 },
		{ "--lr-min", "SPIRT_LR_MIN", &o.u.op.lr_min, NULL, 0, 1e6 },
		{ "--keep", "SPIRT_KEEP", NULL, &o.u.keep, 0, 1e18 },
		{ "--checkpoint", "SPIRT_CHECKPOINT", NULL, &o.u.checkpoint, 0,
		    1e18 },
	};
	const char *v;

	for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
		if ((v = opt_env(val[i], h[i].env, NULL)) == NULL)
			continue;
		if (h[i].d)
			*h[i].d = eparse_double(h[i].opt, v, h[i].min,
			    h[i].max);
		else
			*h[i].u = eparse_u64(h[i].opt, v, (uint64_t)h[i].min,
			    (uint64_t)h[i].max);
	}
}

static void
options(int argc, char **argv)
{
	const char *val[NHYPER] = { NULL }, *kind = NULL, *sched = NULL, *v;
	int c, nesterov = 0;

	spirt_update_init(&o.u);
	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'a': o.u.agg = optarg; break;
		case 'i': o.serve = 1; break;
		case 'k': val[KEEP] = optarg; break;
		case 'm': o.u.model = optarg; break;
		case 'o': o.out = optarg; break;
		case 'p': o.params = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'r': val[LR] = optarg; break;
		case 's': o.store = optarg; break;
		case 't': o.u.step = eparse_u64("-t", optarg, 0,
			    SPIRT_NOSTEP - 2); break;
		case 'v': spirt_verbose++; break;
		case 'V': print_version();
		case OPT: kind = optarg; break;
		case NESTEROV: nesterov = 1; break;
		case SCHED: sched = optarg; break;
		case DELTA: o.u.delta = eparse_u64("--delta", optarg, 0,
			    SPIRT_NOSTEP - 2); break;
		case OUTER: o.u.outer = eparse_u64("--outer", optarg, 1,
			    SPIRT_NOSTEP - 2); break;
		default:
			if (c >= 256 + 16 && c < 256 + 16 + NHYPER) {
				val[c - 256 - 16] = optarg;
				break;
			}
			usage(1);
		}
	hyper(val);
	kind = opt_env(kind, "SPIRT_OPT", "sgd");
	if (!(o.u.op.kind = spirt_optim_parse(kind))) {
		warnx_("--opt: unknown optimiser \"%s\"", kind);
		usage(1);
	}
	sched = opt_env(sched, "SPIRT_SCHEDULE", "constant");
	if (!(o.u.op.schedule = spirt_optim_schedule_parse(sched))) {
		warnx_("--schedule: unknown schedule \"%s\"", sched);
		usage(1);
	}
	if ((v = getenv("SPIRT_NESTEROV")) && *v && strcmp(v, "0"))
		nesterov = 1;
	o.u.op.nesterov = nesterov;
	if (o.u.op.nesterov && o.u.op.kind == SPIRT_OPT_SGD)
		o.u.op.kind = SPIRT_OPT_MOMENTUM;
	if (spirt_optim_check(&o.u.op)) {
		warnx_("%s: inconsistent hyperparameters (--nesterov needs "
		    "momentum, --lr-min at most --lr)", kind);
		usage(1);
	}
	if ((o.u.model = opt_env(o.u.model, "SPIRT_MODEL", NULL)) == NULL &&
	    o.params == NULL) {
		warnx_("no model (-m or SPIRT_MODEL)");
		usage(1);
	}
	if (o.u.model != NULL && o.params == NULL)
		echeck_model("-m", o.u.model);
	if (o.u.agg != NULL && spirt_name_check(o.u.agg) != 0) {
		warnx_("-a: invalid key prefix \"%s\" (a name: letters, "
		    "digits, . _ -)", o.u.agg);
		usage(1);
	}
}

int
main(int argc, char **argv)
{
	struct spirt_store *s = NULL;
	struct spirt_txn *txn = NULL;
	const char *act = "open store";
	double t0 = 1e3 * spirt_clock();
	int rc, code = -1;

	progname = "spirt-update";
	checkfds();
	parent_watch();
	store_env();
	options(argc, argv);
	argc -= optind;
	argv += optind;
	isa_setup();
	if (argc > 1)
		usage(1);
	if (o.params && o.serve) {
		warnx_("--serve works in the store: no -p");
		usage(1);
	}
	if ((o.u.delta != SPIRT_NOSTEP || o.u.outer) &&
	    (o.params || o.serve || o.u.step == SPIRT_NOSTEP)) {
		warnx_("--delta and --outer need -t and the store: no -p, no "
		    "--serve");
		usage(1);
	}
	if (o.u.delta != SPIRT_NOSTEP && o.u.outer) {
		warnx_("--delta and --outer are two steps: one at a time");
		usage(1);
	}
	if (o.out && !o.params) {
		warnx_("-o writes a model file: it needs -p");
		usage(1);
	}
	if (o.serve && argc) {
		warnx_("--serve reads agg/<step> from the store: no file "
		    "operand");
		usage(1);
	}
	if (o.params) {
		if (!o.out)
			o.out = "-";
		if (strcmp(o.out, "-") == 0 && isterm(1))
			die(SPIRT_EX_USAGE, "stdout is a terminal (use -o)");
		act = o.params;
		if ((rc = spirt_update_read_agg(&o.u, argc ? argv[0] : "-")) ||
		    (rc = spirt_update_file_step(&o.u, o.params, o.out)))
			goto fail;
		timings(t0);
		goto done;
	}

	act = "read";
	if (argc && (rc = spirt_update_read_agg(&o.u, argv[0])))
		goto fail;
	if (o.u.step == SPIRT_NOSTEP && o.u.apl && o.u.at.step != SPIRT_NOSTEP)
		o.u.step = o.u.at.step;
	act = o.store ? o.store : store_default();
	if (spirt_store_is_url(act))
		die(SPIRT_EX_USAGE, "%s: updates run on the peer that owns the "
		    "store", act);
	if ((rc = spirt_store_open(&s, act, 0)))
		goto fail;
	if (o.serve) {
		code = serve(s);
		goto done;
	}
	if (o.u.step == SPIRT_NOSTEP) {
		/* no step given: the newest model version; the read txn ends
		 * before the write, which may grow the map (store.h) */
		act = "find model";
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) == 0)
			rc = spirt_update_latest(&o.u, txn);
		spirt_txn_abort(txn);
		txn = NULL;
		if (rc)
			goto fail;
	}
	act = "update";
	rc = update(s);
	if (rc == SPIRT_EDONE && o.u.done) {
		applied();
		rc = 0;
	} else if (rc) {
		goto fail;
	} else {
		timings(t0);
	}
	goto done;
fail:
	tell(rc, act);
done:
	spirt_txn_abort(txn);
	spirt_store_close(s);
	spirt_update_free(&o.u);
	return fshut_stdout(code >= 0 ? code : spirt_exit(rc));
}
