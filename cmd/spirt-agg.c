/* spirt-agg.c - aggregate gradient records: mean, trimmed mean, median,
 * Krum, centred clipping */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggstore.h"
#include "io.h"
#include "keys.h"
#include "opt.h"
#include "serve.h"
#include "slot.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

static struct {
	struct spirt_aggset a;
	const char *store, *out;
	int force, serve;
	size_t checkw;          /* --check-rule W */
	const char *center;     /* --center FILE */
	void *cbuf;
	char **keys;
	size_t nkeys;
	const char *slotm;      /* --slots MODEL */
	struct spirt_slotset slots;
} o;

static const struct opt opts[] = {
	{ 'c', "verify", NULL, "check payload checksums of store records" },
	{ 'd', "dataset", "NAME",
	    "its assignment's revision is in force (default\n"
	    "$SPIRT_DATASET or train)" },
	{ 'f', "force", NULL, "write binary data to a terminal" },
	{ 'i', "serve", NULL, "warm: one -t run per step line on stdin" },
	{ 'k', "key", "KEY", "aggregate this store key (repeat)" },
	{ 'o', "output", "FILE", "write the record to FILE (- = stdout)" },
	{ 'P', "prune", NULL,
	    "remove spent steps (before t-1) from the store" },
	{ 'q', "quiet", NULL, "no notes about excluded or bounded inputs" },
	{ 'R', "replace", NULL, "replace an existing agg/<step>" },
	{ 'r', "rule", "RULE",
	    "mean wmean trim median norm krum mkrum cclip\nscclip" },
	OPT_STORE,
	{ 't', "step", "N", "aggregate grad/N/* of the store" },
	{ 'v', "verbose", NULL, "report timings" },
	{ OPT_LONG('T'), "trim", "F", "trimmed mean, cut F per side" },
	{ OPT_LONG('b'), "byzantine", "f",
	    "inputs assumed Byzantine (Krum, tau auto)" },
	{ OPT_LONG('W'), "check-rule", "W",
	    "check the rule for W inputs, and exit" },
	{ OPT_LONG('S'), "select", "m", "multi-Krum: inputs averaged" },
	{ OPT_LONG('M'), "mad", "K", "norm rule: threshold in MADs" },
	{ OPT_LONG('U'), "tau", "T",
	    "cclip, scclip: clipping radius (default 1);\n"
	    "auto: the (f+1)-th largest distance" },
	{ OPT_LONG('L'), "iters", "L",
	    "cclip, scclip: iterations (default 1)" },
	{ OPT_LONG('C'), "center", "FILE",
	    "cclip: start from this record (default\n"
	    "agg/<t-1> in the store, else 0); scclip:\n"
	    "its centre, the peer's own aggregate" },
	{ OPT_LONG('O'), "worker-momentum", "B",
	    "aggregate the workers' momenta\n"
	    "(1-B) g + B mom/<t-1>/<w>, kept as mom/<t>/<w>" },
	{ OPT_LONG('B'), "bucket", "s",
	    "average buckets of s inputs before the rule" },
	{ OPT_LONG('E'), "seed", "N",
	    "bucketing's permutation seed (default 0)" },
	{ OPT_LONG('G'), "batch", "N",
	    "the functions' batch (default $SPIRT_BATCH or 64):\n"
	    "a gradient counts at most the samples the\n"
	    "assignment gives its worker at its step" },
	{ OPT_LONG('N'), "max-samples", "N",
	    "instead, at most N samples each" },
	{ OPT_LONG('Z'), "slots", "MODEL",
	    "also the warm functions' gradient slots of\n"
	    "model/MODEL@<t> (spirt-grad's to=slot)" },
	{ OPT_LONG('Q'), "publish", "ID",
	    "write it as peer ID's published aggregate,\n"
	    "xagg/<t>/ID (never replaced), not agg/<t>" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-agg [-cfiPqRv] [-r rule] [--trim F] [--byzantine f]\n"
	"                 [--select m] [--mad K] [--tau T] [--iters L]\n"
	"                 [--center file] [--worker-momentum b] [--bucket s]\n"
	"                 [--seed n] [--batch n] [--max-samples n] "
	"[--publish id]\n"
	"                 [--slots model] [-d dataset] [-s store] [-t step]\n"
	"                 [-o file] [-k key ... | file ...]\n"
	"       spirt-agg [-r rule] [--trim F] [--byzantine f] [--select m]\n"
	"                 [--mad K] [--tau T] [--iters L] [--bucket s]\n"
	"                 --check-rule W\n",
	NULL, NULL, 22, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

/*
 * The stragglers left out, named even with -q: they are no rule's doing
 * but a late or moved function's (counted in agg/<t>/excluded too).
 */
static void
stragglers(void)
{
	char b[SPIRT_KEY_MAX + 128];

	for (size_t i = 0; i < o.a.w; i++)
		if (spirt_aggset_straggler(&o.a, i, b, sizeof b))
			fprintf(stderr, "%s: %s\n", progname, b);
}

/* The failure's message: the library's, else act with the cause. */
static void
tell(int rc, const char *act)
{
	stragglers();
	if (o.a.msg[0])
		warnx_("%s", o.a.msg);
	else if (rc != EPIPE)
		warnrc(rc, "%s", act);
	if (rc == SPIRT_EEXIST)
		info("hint: -R replaces it");
}

static int
instore(struct spirt_txn *txn, void *arg)
{
	(void)arg;
	return spirt_agg_store_step(&o.a, txn, o.keys, o.nkeys);
}

/* Write the record to -o FILE (atomically) or stdout. */
static int
emit(struct spirt_tensor *t, const float *out)
{
	struct spirt_publish pub;
	int rc;

	if (strcmp(o.out, "-") == 0)
		return spirt_tensor_write(1, t, out);
	if ((rc = spirt_publish_open(&pub, o.out, 0644)))
		return rc;
	if ((rc = spirt_tensor_write(pub.fd, t, out)) ||
	    (rc = spirt_publish_commit(&pub)))
		spirt_publish_abort(&pub);
	return rc;
}

/* what bounds in's sample count, for a message */
static const char *
bound_name(const struct spirt_aggset_in *in)
{
	static char b[96];

	if (in->bound)
		snprintf(b, sizeof b, "the %llu its assignment gives worker "
		    "%lu at step %llu", (unsigned long long)in->bound,
		    (unsigned long)in->t.origin,
		    (unsigned long long)in->t.step);
	else if (o.a.batch)
		snprintf(b, sizeof b, "the batch, %llu",
		    (unsigned long long)o.a.max_samples);
	else
		snprintf(b, sizeof b, "--max-samples %llu",
		    (unsigned long long)o.a.max_samples);
	return b;
}

/* Excluded inputs to stderr (unless -q); timings with -v.  A step
 * published already (--publish) was not aggregated: a note. */
static void
report(double t0)
{
	const struct spirt_aggset *a = &o.a;

	if (a->published) {
		info("xagg/%llu/%s: published already, it stands (nothing "
		    "written)", (unsigned long long)a->hdr.step, a->publish);
		return;
	}
	stragglers();
	for (size_t i = 0; i < a->w; i++) {
		const struct spirt_aggset_in *in = &a->in[a->ai[i].id];

		if (in->pre)
			continue;       /* stragglers(): said already */
		if (a->ai[i].excluded)
			info("%s: excluded: %s", in->name,
			    spirt_agg_reason_name(a->ai[i].excluded));
		else if (a->ai[i].samples < in->t.samples)
			info("%s: %llu samples claimed, above %s: counted as "
			    "%llu", in->name, (unsigned long long)in->t.samples,
			    bound_name(in), (unsigned long long)a->ai[i].samples);
	}
	if (spirt_verbose && (a->p.rule == SPIRT_AGG_CCLIP ||
	    a->p.rule == SPIRT_AGG_SCCLIP)) {
		char tau[32];

		if (a->p.tau_auto)
			snprintf(tau, sizeof tau, "auto (f = %u)", a->p.f);
		else
			snprintf(tau, sizeof tau, "%g", a->p.tau);
		info("%s: centre %s, tau %s, %u iterations",
		    spirt_agg_rule_name(a->p.rule), a->cfrom, tau, a->p.iters);
	}
	if (spirt_verbose && a->momentum > 0)
		info("worker momentum %g: %zu of %zu started from the "
		    "gradient", a->momentum, a->mom_new, a->w);
	if (spirt_verbose)
		fprintf(stderr, "%s: %s of %zu inputs (%zu used), %llu values:"
		    " work %.3f ms, total %.3f ms\n", progname,
		    spirt_agg_rule_name(a->p.rule), a->w, a->used,
		    (unsigned long long)a->in[a->first].t.nelem, a->work_ms,
		    1e3 * spirt_clock() - t0);
}

/*
 * Warm mode: each request line on stdin (serve.h) is one run with -t step,
 * in its own write transaction; one answer line each.  Nothing but the
 * open store carries over from one step to the next.
 */
static int
serve_one(void *arg, const struct spirt_serve_req *req, char *ans,
    size_t cap)
{
	double t0 = 1e3 * spirt_clock();
	int rc, code;

	o.a.step = req->step;
	rc = spirt_store_write(arg, instore, NULL);
	if ((code = spirt_exit(rc)) == 0) {
		report(t0);
		snprintf(ans, cap, "step=%llu count=%lu loss=%.9g",
		    (unsigned long long)o.a.step,
		    (unsigned long)o.a.hdr.count, o.a.hdr.loss);
	} else {
		tell(rc, "write store");
		snprintf(ans, cap, "step=%llu error=%d",
		    (unsigned long long)o.a.step, code);
	}
	spirt_aggset_reset(&o.a);
	return code;
}

/* Returns the worst exit code. */
static int
serve(struct spirt_store *s)
{
	struct spirt_serve sv = {
		.name = "stdin", .maxstep = SPIRT_NOSTEP - 1,
		.run = serve_one, .arg = s, .warn = warnx_,
	};
	int rc;

	serve_setup();
	if ((rc = spirt_serve_loop(&sv, stdin, stdout)) != 0) {
		warnrc(rc, "%s", ferror(stdin) ? "stdin" : "stdout");
		return SPIRT_EX_IOERR;
	}
	return sv.worst;
}

/* --center FILE: its first record, f32, is cclip's starting point */
static void
load_center(void)
{
	struct spirt_tensor t;
	int fd, rc;

	if ((fd = open(o.center, O_RDONLY)) < 0)
		die(SPIRT_EX_NOINPUT, "--center %s: %s", o.center,
		    strerror(errno));
	rc = spirt_tensor_read(fd, &t, &o.cbuf, 0);
	close(fd);
	if (rc == SPIRT_EOF)
		rc = SPIRT_ETRUNC;
	if (rc)
		dierc(rc, "--center %s: record 0", o.center);
	if (t.dtype != SPIRT_F32)
		die(SPIRT_EX_DATAERR, "--center %s: record 0: dtype %s, not "
		    "f32", o.center, spirt_dtype_name(t.dtype));
	o.a.center = o.cbuf;
	o.a.ncenter = t.nelem;
	snprintf(o.a.cfrom, sizeof o.a.cfrom, "%.63s", o.center);
}

static void
options(int argc, char **argv)
{
	const char *rule = NULL, *maxs = NULL, *ds = NULL, *batch = NULL;
	int c, trim = 0;

	spirt_aggset_init(&o.a);
	o.keys = emalloc(argc * sizeof *o.keys);
	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'b': o.a.p.f = (unsigned)eparse_u64("--byzantine", optarg,
			    0, SPIRT_AGG_MAXW); break;
		case 'B': o.a.p.bucket = (unsigned)eparse_u64("--bucket",
			    optarg, 1, SPIRT_AGG_MAXW); break;
		case 'C': o.center = optarg; break;
		case 'c': o.a.verify = 1; break;
		case 'd': ds = optarg; break;
		case 'G': batch = optarg; break;
		case 'E': o.a.p.seed = eparse_u64("--seed", optarg, 0,
			    UINT64_MAX); break;
		case 'L': o.a.p.iters = (unsigned)eparse_u64("--iters", optarg,
			    1, 1000); break;
		case 'O': o.a.momentum = eparse_double("--worker-momentum",
			    optarg, 0, 0.999999); break;
		case 'U': if (strcmp(optarg, "auto") == 0)
				o.a.p.tau_auto = 1;
			  else
				o.a.p.tau = eparse_double("--tau", optarg,
				    1e-30, 1e30);
			  break;
		case 'f': o.force = 1; break;
		case 'i': o.serve = 1; break;
		case 'k': o.keys[o.nkeys++] = optarg; break;
		case 'M': o.a.p.mad = eparse_double("--mad", optarg, 1e-9, 1e9);
			  break;
		case 'N': maxs = optarg; break;
		case 'o': o.out = optarg; break;
		case 'P': o.a.prune = 1; break;
		case 'Q': {
			char k[SPIRT_KEY_MAX + 1];

			if (spirt_key_xagg(k, sizeof k, 0, optarg)) {
				warnx_("--publish: \"%s\" is not a peer id",
				    optarg);
				usage(1);
			}
			o.a.publish = optarg;
			break;
		}
		case 'Z': {
			char k[SPIRT_KEY_MAX + 1];

			if (spirt_key_model(k, sizeof k, optarg, 0)) {
				warnx_("--slots: \"%s\" is not a model name",
				    optarg);
				usage(1);
			}
			o.slotm = optarg;
			break;
		}
		case 'q': spirt_quiet = 1; break;
		case 'R': o.a.replace = 1; break;
		case 'r': rule = optarg; break;
		case 'S': o.a.p.m = (unsigned)eparse_u64("--select", optarg, 1,
			    SPIRT_AGG_MAXW); break;
		case 's': o.store = optarg; break;
		case 't': o.a.step = eparse_u64("-t", optarg, 0,
			    SPIRT_NOSTEP - 1); break;
		case 'T': o.a.p.trim = eparse_double("--trim", optarg, 0,
			    0.49999);
			  trim = 1; break;
		case 'v': spirt_verbose++; break;
		case 'V': print_version();
		case 'W': o.checkw = (size_t)eparse_u64("--check-rule",
			    optarg, 1, SPIRT_AGG_MAXW); break;
		default: usage(1);
		}
	/* spirt-grad's data set, whose assignment revision is in force */
	o.a.dataset = opt_env(ds, "SPIRT_DATASET", "train");
	o.a.revcheck = 1;
	/* spirt-grad's batch: its -b range, its variable, its default; a
	 * gradient's bound is what the assignment gives its worker with it,
	 * the batch where none does; --max-samples: that bound for all */
	if (batch || !maxs)
		o.a.batch = eparse_u64(batch ? "--batch" : "SPIRT_BATCH",
		    opt_env(batch, "SPIRT_BATCH", "64"), 1, 1 << 20);
	o.a.max_samples = o.a.batch;
	if (maxs) {
		o.a.max_samples = eparse_u64("--max-samples", maxs, 1,
		    1 << 20);
		o.a.batch = 0;
	}
	if (!rule && trim)
		rule = "trim";
	if ((rule = opt_env(rule, "SPIRT_AGG_RULE", "mean")) &&
	    !(o.a.p.rule = spirt_agg_rule_parse(rule))) {
		warnx_("-r: unknown rule \"%s\"", rule);
		usage(1);
	}
}

int
main(int argc, char **argv)
{
	struct spirt_store *s = NULL;
	struct spirt_txn *txn = NULL;
	float *out = NULL;
	const char *act = "read";
	double t0 = 1e3 * spirt_clock(), t1;
	int rc = 0, code = -1, fromstore, tostore;

	progname = "spirt-agg";
	checkfds();
	parent_watch();
	store_env();
	options(argc, argv);
	argc -= optind;
	argv += optind;
	if (o.checkw) {
		/* a dry run: the rule's parameters for W inputs, no input */
		if (argc || o.nkeys || o.serve || o.out || o.a.prune ||
		    o.a.step != SPIRT_NOSTEP)
			usage(1);
		if (spirt_aggset_rule_check(&o.a, o.checkw))
			die(SPIRT_EX_USAGE, "%s", o.a.msg);
		return fshut_stdout(0);
	}
	isa_setup();
	if (o.center && o.a.p.rule != SPIRT_AGG_CCLIP &&
	    o.a.p.rule != SPIRT_AGG_SCCLIP) {
		warnx_("--center is the centre of rules cclip and scclip, not "
		    "of %s", spirt_agg_rule_name(o.a.p.rule));
		usage(1);
	}
	if (o.a.p.rule == SPIRT_AGG_SCCLIP && !o.center) {
		warnx_("rule scclip needs its centre: --center file (spirt-peer "
		    "exchange -r scclip centres on the peer's own aggregate)");
		usage(1);
	}
	if (o.center)
		load_center();
	if (argc && o.nkeys) {
		warnx_("give store keys or files, not both");
		usage(1);
	}
	if (o.serve && (argc || o.out)) {
		warnx_("--serve writes to the store: no -o, no file operands");
		usage(1);
	}
	fromstore = o.serve || o.nkeys || (!argc && o.a.step != SPIRT_NOSTEP);
	tostore = fromstore && !o.out;
	if (o.a.momentum > 0 && (!tostore || o.nkeys)) {
		warnx_("--worker-momentum keeps each worker's momentum in the "
		    "store: -t step (or -i), no -k, -o or file operands");
		usage(1);
	}
	if (o.a.publish && !tostore) {
		warnx_("--publish writes xagg/<step>/<id> in the store: not "
		    "with -o or file operands");
		usage(1);
	}
	if (o.slotm && (!fromstore || o.nkeys)) {
		warnx_("--slots takes the slots beside grad/<step> in the "
		    "store: -t step (or -i), no -k or file operands");
		usage(1);
	}
	if (o.a.prune && !tostore) {
		warnx_("-P prunes the store after writing agg/<step>: not with "
		    "-o or file operands");
		usage(1);
	}
	if (!o.out)
		o.out = "-";
	if (!tostore && strcmp(o.out, "-") == 0 && !o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal (use -f or -o)");

	if (fromstore) {
		act = o.store ? o.store : store_default();
		if (tostore && spirt_store_is_url(act))
			die(SPIRT_EX_USAGE, "%s: aggregation into a store runs "
			    "on the peer that owns it (or give -o file)", act);
		if (o.slotm && spirt_store_is_url(act))
			die(SPIRT_EX_USAGE, "%s: --slots maps the functions' "
			    "slots beside the store: the peer's own", act);
		if ((rc = spirt_store_open(&s, act, tostore ? 0 :
		    SPIRT_STORE_RDONLY)))
			goto fail;
		if (o.slotm) {
			char path[4096];

			snprintf(path, sizeof path, "%s/scratch",
			    spirt_store_location(s));
			spirt_slotset_init(&o.slots, path);
			o.a.slots = &o.slots;
			o.a.slot_model = o.slotm;
		}
		if (o.serve) {
			code = serve(s);
			goto done;
		}
		act = "write store";
		if (tostore) {
			if ((rc = spirt_store_write(s, instore, NULL)))
				goto fail;
			report(t0);
			goto done;
		}
		act = "read store";
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
			goto fail;
		for (size_t i = 0; i < o.nkeys; i++)
			if ((rc = spirt_aggset_add_key(&o.a, txn, o.keys[i])))
				goto fail;
		if (!o.nkeys &&
		    (rc = spirt_aggset_add_step(&o.a, txn, o.a.step)))
			goto fail;
		if (o.a.slots &&
		    (rc = spirt_aggset_add_slots(&o.a, txn, o.a.step)))
			goto fail;
	} else {
		for (int i = 0; i < (argc ? argc : 1); i++)
			if ((rc = spirt_aggset_add_file(&o.a, argc ? argv[i] :
			    "-")))
				goto fail;
	}
	if ((rc = spirt_aggset_filter(&o.a, txn)) ||
	    (rc = spirt_aggset_check(&o.a)))
		goto fail;

	t1 = 1e3 * spirt_clock();
	out = emalloc(o.a.in[o.a.first].t.nbytes ? o.a.in[o.a.first].t.nbytes :
	    1);
	if ((rc = spirt_aggset_run(&o.a, out)))
		goto fail;
	o.a.work_ms = 1e3 * spirt_clock() - t1;
	act = strcmp(o.out, "-") ? o.out : "stdout";
	if ((rc = emit(&o.a.hdr, out)))
		goto fail;
	report(t0);
	goto done;
fail:
	tell(rc, act);
done:
	spirt_txn_abort(txn);
	spirt_store_close(s);
	spirt_aggset_reset(&o.a);
	if (o.a.slots)
		spirt_slotset_free(&o.slots);
	free(out);
	free(o.keys);
	free(o.cbuf);
	return fshut_stdout(code >= 0 ? code : spirt_exit(rc));
}
