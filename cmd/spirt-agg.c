/* spirt-agg.c - aggregate gradient records: mean, trimmed mean, median, Krum */
#define _DEFAULT_SOURCE         /* madvise, MADV_HUGEPAGE */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agg.h"
#include "io.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

#define USAGE \
"usage: spirt-agg [-cfqRv] [-r rule] [--trim F] [--byzantine f]\n" \
"                 [--select m] [--mad K] [-s store] [-t step] [-o file]\n" \
"                 [-k key ... | file ...]\n"

struct in {
	char name[SPIRT_KEY_MAX + 32];  /* key, or file:record N */
	struct spirt_tensor t;
	const float *x;
	void *own;                      /* copy or stream buffer to free */
};

static struct {
	struct spirt_agg_params p;
	const char *store, *out;
	uint64_t step;
	int force, replace, verify, told;
	char **keys;
	size_t nkeys;
	/* per run, reset by collect() */
	struct in in[SPIRT_AGG_MAXW];
	size_t w;
	struct spirt_agg_input ai[SPIRT_AGG_MAXW];
	size_t used;
	double work_ms;
} o = { .step = SPIRT_NOSTEP };

/* a helper that reports its own failure says so, so main() does not
 * report it twice */
#define TELLX(...) (o.told = 1, warnx_(__VA_ARGS__))
#define TELL(...) (o.told = 1, warn_(__VA_ARGS__))
#define TELLRC(...) (o.told = 1, warnrc(__VA_ARGS__))

static _Noreturn void
usage(int code)
{
	fputs(USAGE, code ? stderr : stdout);
	if (!code)
		fputs("\n"
		    "  -c, --verify        check payload checksums of store "
		    "records\n"
		    "  -f, --force         write binary data to a terminal\n"
		    "  -k, --key KEY       aggregate this store key (repeat)\n"
		    "  -o, --output FILE   write the record to FILE (- = "
		    "stdout)\n"
		    "  -q, --quiet         no notes about excluded inputs\n"
		    "  -R, --replace       replace an existing agg/<step>\n"
		    "  -r, --rule RULE     mean wmean trim median norm krum "
		    "mkrum\n"
		    "  -s, --store PATH    store (default $SPIRT_STORE or "
		    "./spirt.db)\n"
		    "  -t, --step N        aggregate grad/N/* of the store\n"
		    "  -v, --verbose       report timings\n"
		    "      --trim F        trimmed mean, cut F per side\n"
		    "      --byzantine f   Krum: inputs assumed Byzantine\n"
		    "      --select m      multi-Krum: inputs averaged\n"
		    "      --mad K         norm rule: threshold in MADs\n"
		    "  -h, --help          this help\n"
		    "  -V, --version       print version\n", stdout);
	exit(code ? SPIRT_EX_USAGE : fshut_stdout(0));
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
reset(void)
{
	for (size_t i = 0; i < o.w; i++)
		free(o.in[i].own);
	o.w = 0;
}

/* Take one decoded record; copies the payload when it is misaligned. */
static int
add(const char *name, const struct spirt_tensor *t, const void *pl,
    void *own)
{
	struct in *in;

	if (o.w == SPIRT_AGG_MAXW) {
		free(own);
		TELLX("%s: more than %d inputs", name, SPIRT_AGG_MAXW);
		return SPIRT_EINVAL;
	}
	in = &o.in[o.w++];
	snprintf(in->name, sizeof in->name, "%s", name);
	in->t = *t;
	in->own = own;
	if (t->dtype == SPIRT_F32 && !spirt_aligned(pl, SPIRT_F32)) {
		if ((in->own = malloc(t->nbytes ? t->nbytes : 1)) == NULL)
			return ENOMEM;
		memcpy(in->own, pl, t->nbytes);
		pl = in->own;
	}
	in->x = pl;
	return 0;
}

static int
getkey(struct spirt_txn *txn, const char *key)
{
	struct spirt_tensor t;
	const void *pl;
	int rc;

	if ((rc = spirt_store_get_tensor(txn, key, &t, &pl, o.verify))) {
		TELLRC(rc, "%s", key);
		return rc;
	}
	return add(key, &t, pl, NULL);
}

static int
listone(void *arg, const char *key, const void *val, size_t len)
{
	struct spirt_tensor t;
	const void *pl;
	int rc;

	(void)arg;
	if (strchr(key + strlen((char *)arg), '/'))
		return 0;               /* grad/<t>/<w>/... is not a gradient */
	if ((rc = spirt_tensor_decode(&t, &pl, val, len, o.verify))) {
		TELLRC(rc, "%s", key);
		return rc;
	}
	return add(key, &t, pl, NULL);
}

static int
readfile(const char *path)
{
	int fd = 0, rc;
	unsigned rec = 0;
	char name[SPIRT_KEY_MAX + 32];

	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) < 0) {
		rc = errno;
		TELL("open %s:", path);
		return rc;
	}
	for (;;) {
		struct spirt_tensor t;
		void *pl;

		snprintf(name, sizeof name, "%s:record %u",
		    strcmp(path, "-") ? path : "stdin", ++rec);
		if ((rc = spirt_tensor_read(fd, &t, &pl, 0)) == SPIRT_EOF) {
			rc = rec == 1 ? SPIRT_ETRUNC : 0;
			if (rc)
				TELLX("%s: empty input",
				    strcmp(path, "-") ? path : "stdin");
			break;
		}
		if (rc) {
			TELLRC(rc, "%s", name);
			break;
		}
		if ((rc = add(name, &t, pl, pl)))
			break;
	}
	if (fd > 0)
		close(fd);
	return rc;
}

/* Inputs must agree: f32, shape, step, model spec; origins distinct. */
static int
consistent(void)
{
	const struct spirt_tensor *a = &o.in[0].t;

	if (o.w == 0) {
		TELLX("no gradients for step %llu",
		    (unsigned long long)o.step);
		return SPIRT_ENOTFOUND;
	}
	for (size_t i = 0; i < o.w; i++) {
		const struct spirt_tensor *b = &o.in[i].t;
		const char *n = o.in[i].name, *n0 = o.in[0].name;

		if (b->dtype != SPIRT_F32) {
			TELLX("%s: dtype %s, not f32", n,
			    spirt_dtype_name(b->dtype));
			return SPIRT_EDTYPE;
		}
		if (b->nelem != a->nelem || b->rank != a->rank ||
		    memcmp(b->dims, a->dims, a->rank * sizeof *a->dims)) {
			TELLX("%s: %llu values, %s has %llu: shapes differ",
			    n, (unsigned long long)b->nelem, n0,
			    (unsigned long long)a->nelem);
			return SPIRT_ESHAPE;
		}
		if (o.step != SPIRT_NOSTEP ? b->step != o.step :
		    b->step != a->step) {
			TELLX("%s: step %lld, not %lld", n, (long long)b->step,
			    (long long)(o.step != SPIRT_NOSTEP ? o.step :
			    a->step));
			return SPIRT_ESTEP;
		}
		if (strcmp(b->name, a->name) != 0) {
			TELLX("%s: model \"%s\", %s has \"%s\"", n, b->name,
			    n0, a->name);
			return SPIRT_EMODEL;
		}
		for (size_t k = 0; k < i; k++)
			if (b->origin != SPIRT_NOORIGIN &&
			    b->origin == o.in[k].t.origin) {
				TELLX("%s: origin %u again (%s)", n,
				    (unsigned)b->origin, o.in[k].name);
				return SPIRT_EDATA;
			}
	}
	return 0;
}

/* Aggregate o.in into out and fill the output header t. */
static int
aggregate(float *out, struct spirt_tensor *t)
{
	double loss = 0;
	uint64_t samples = 0;
	size_t nl = 0, i;
	int rc;

	for (i = 0; i < o.w; i++) {
		o.ai[i].x = o.in[i].x;
		o.ai[i].origin = o.in[i].t.origin;
		o.ai[i].samples = o.in[i].t.samples;
		o.ai[i].id = i;
	}
	if (spirt_agg_check(&o.p, o.w)) {
		TELLX("rule %s makes no sense for %zu inputs",
		    spirt_agg_rule_name(o.p.rule), o.w);
		return SPIRT_EINVAL;
	}
	rc = spirt_agg_run(out, o.ai, o.w, o.in[0].t.nelem, &o.p, &o.used);
	if (rc == SPIRT_ENAN || rc == SPIRT_EDATA)
		TELLX("%s: too few usable inputs for rule %s",
		    o.in[0].name, spirt_agg_rule_name(o.p.rule));
	if (rc)
		return rc;
	*t = o.in[0].t;
	t->origin = SPIRT_NOORIGIN;
	t->count = (uint32_t)o.used;
	for (i = 0; i < o.w; i++) {
		const struct spirt_tensor *b = &o.in[o.ai[i].id].t;

		if (o.ai[i].excluded)
			continue;
		samples += b->samples;
		if (!isnan(b->loss)) {
			loss += b->loss;
			nl++;
		}
	}
	t->samples = samples;
	t->loss = nl ? loss / (double)nl : NAN;
	return 0;
}

/*
 * LMDB builds a large new value in freshly allocated memory, so the first
 * write to each 4 KiB page is a page fault; asking for huge pages on the
 * reserved range turns 512 of those into one.  Advisory only.
 */
static void
hugepages(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	uintptr_t a = ((uintptr_t)p + 0x1fffff) & ~(uintptr_t)0x1fffff;
	uintptr_t e = ((uintptr_t)p + n) & ~(uintptr_t)0x1fffff;

	if (e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

/* Read the inputs from the store: named keys or grad/<step>/<w>. */
static int
collect(struct spirt_txn *txn)
{
	char prefix[64];
	int rc;

	reset();
	if (o.nkeys) {
		for (size_t i = 0; i < o.nkeys; i++)
			if ((rc = getkey(txn, o.keys[i])))
				return rc;
		return consistent();
	}
	snprintf(prefix, sizeof prefix, "grad/%llu/",
	    (unsigned long long)o.step);
	if ((rc = spirt_store_list(txn, prefix, listone, prefix)))
		return rc;
	return consistent();
}

/* The in-store operation: read grads, write agg/<t> and its exclusions in
 * one write transaction.  Rerun from scratch when the map grows. */
static int
instore(struct spirt_txn *txn, void *arg)
{
	struct spirt_tensor t, x;
	char key[64];
	const void *old;
	unsigned char *dst;
	float *out;
	uint64_t dims[2];
	int64_t *ex;
	size_t len, k = 0, i;
	double t0 = now_ms();
	int rc;

	(void)arg;
	if ((rc = collect(txn)))
		return rc;
	snprintf(key, sizeof key, "agg/%llu",
	    (unsigned long long)o.in[0].t.step);
	if (!o.replace && spirt_store_get(txn, key, &old, &len) == 0) {
		TELLX("%s exists (use -R to replace)", key);
		return SPIRT_EEXIST;
	}
	t = o.in[0].t;
	len = spirt_tensor_reclen(&t);
	if ((rc = spirt_store_reserve(txn, key, len, (void **)&dst, 0)))
		return rc;
	hugepages(dst, len);
	/* aggregate straight into the map when the payload is aligned */
	out = (float *)(void *)(dst + t.hdrlen);
	if (!spirt_aligned(out, SPIRT_F32) &&
	    (out = malloc(t.nbytes ? t.nbytes : 1)) == NULL)
		return ENOMEM;
	rc = aggregate(out, &t);
	if ((void *)out != dst + t.hdrlen) {
		if (rc == 0)
			memcpy(dst + t.hdrlen, out, t.nbytes);
		free(out);
	}
	if (rc || (rc = spirt_tensor_pack_header(dst, len, &t)))
		return rc;
	spirt_tensor_pack_trailer(dst + t.hdrlen + t.nbytes, &t,
	    dst + t.hdrlen);

	/* agg/<t>/excluded: i64 [k, 2] of (origin, reason), k may be 0 */
	if ((ex = malloc(2 * o.w * sizeof *ex)) == NULL)
		return ENOMEM;
	for (i = 0; i < o.w; i++)
		if (o.ai[i].excluded) {
			ex[2 * k] = o.ai[i].origin == SPIRT_NOORIGIN ? -1 :
			    (int64_t)o.ai[i].origin;
			ex[2 * k++ + 1] = o.ai[i].excluded;
		}
	dims[0] = k;
	dims[1] = 2;
	snprintf(key, sizeof key, "agg/%llu/excluded",
	    (unsigned long long)t.step);
	if (!(rc = spirt_tensor_init(&x, SPIRT_I64, 2, dims))) {
		x.step = t.step;
		rc = spirt_store_put_tensor(txn, key, &x, ex, 0);
	}
	free(ex);
	o.work_ms = now_ms() - t0;
	return rc;
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

/* Excluded inputs to stderr (unless -q); timings with -v. */
static void
report(double t0)
{
	for (size_t i = 0; i < o.w; i++)
		if (o.ai[i].excluded)
			info("%s: excluded: %s", o.in[o.ai[i].id].name,
			    spirt_agg_reason_name(o.ai[i].excluded));
	if (spirt_verbose)
		fprintf(stderr, "%s: %s of %zu inputs (%zu used), %llu values:"
		    " work %.3f ms, total %.3f ms\n", progname,
		    spirt_agg_rule_name(o.p.rule), o.w, o.used,
		    (unsigned long long)o.in[0].t.nelem, o.work_ms,
		    now_ms() - t0);
}

static void
options(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "byzantine", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "key", required_argument, NULL, 'k' },
		{ "mad", required_argument, NULL, 'M' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "replace", no_argument, NULL, 'R' },
		{ "rule", required_argument, NULL, 'r' },
		{ "select", required_argument, NULL, 'S' },
		{ "step", required_argument, NULL, 't' },
		{ "store", required_argument, NULL, 's' },
		{ "trim", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "verify", no_argument, NULL, 'c' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *rule = NULL;
	int c, trim = 0;

	spirt_agg_defaults(&o.p);
	o.keys = emalloc(argc * sizeof *o.keys);
	while ((c = getopt_long(argc, argv, "cfhk:o:qRr:s:t:vV", lo, NULL))
	    != -1)
		switch (c) {
		case 'b': o.p.f = (unsigned)eparse_u64("--byzantine", optarg,
			    0, SPIRT_AGG_MAXW); break;
		case 'c': o.verify = 1; break;
		case 'f': o.force = 1; break;
		case 'h': usage(0);
		case 'k': o.keys[o.nkeys++] = optarg; break;
		case 'M': o.p.mad = eparse_double("--mad", optarg, 1e-9, 1e9);
			  break;
		case 'o': o.out = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'R': o.replace = 1; break;
		case 'r': rule = optarg; break;
		case 'S': o.p.m = (unsigned)eparse_u64("--select", optarg, 1,
			    SPIRT_AGG_MAXW); break;
		case 's': o.store = optarg; break;
		case 't': o.step = eparse_u64("-t", optarg, 0,
			    SPIRT_NOSTEP - 1); break;
		case 'T': o.p.trim = eparse_double("--trim", optarg, 0, 0.49999);
			  trim = 1; break;
		case 'v': spirt_verbose++; break;
		case 'V': print_version();
		default: usage(1);
		}
	if (!rule && trim)
		rule = "trim";
	if ((rule = opt_env(rule, "SPIRT_AGG_RULE", "mean")) &&
	    !(o.p.rule = spirt_agg_rule_parse(rule))) {
		warnx_("-r: unknown rule \"%s\"", rule);
		usage(1);
	}
}

int
main(int argc, char **argv)
{
	struct spirt_store *s = NULL;
	struct spirt_txn *txn = NULL;
	struct spirt_tensor t;
	float *out = NULL;
	const char *act = "read";
	double t0 = now_ms(), t1;
	int rc = 0, fromstore, tostore;

	progname = "spirt-agg";
	checkfds();
	options(argc, argv);
	argc -= optind;
	argv += optind;
	if (argc && o.nkeys) {
		warnx_("give store keys or files, not both");
		usage(1);
	}
	fromstore = o.nkeys || (!argc && o.step != SPIRT_NOSTEP);
	tostore = fromstore && !o.out;
	if (!o.out)
		o.out = "-";
	if (!tostore && strcmp(o.out, "-") == 0 && !o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal (use -f or -o)");

	if (fromstore) {
		act = "open store";
		if ((rc = spirt_store_open(&s, o.store ? o.store :
		    spirt_store_default(), tostore ? 0 : SPIRT_STORE_RDONLY)))
			goto fail;
		if (tostore) {
			act = "write store";
			if ((rc = spirt_store_write(s, instore, NULL)))
				goto fail;
			report(t0);
			goto done;
		}
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
			goto fail;
		if ((rc = collect(txn)))
			goto done;
	} else {
		for (int i = 0; i < (argc ? argc : 1); i++)
			if ((rc = readfile(argc ? argv[i] : "-")))
				goto done;
		if ((rc = consistent()))
			goto done;
	}

	t1 = now_ms();
	out = emalloc(o.in[0].t.nbytes ? o.in[0].t.nbytes : 1);
	if ((rc = aggregate(out, &t)))
		goto done;
	o.work_ms = now_ms() - t1;
	act = strcmp(o.out, "-") ? o.out : "stdout";
	if ((rc = emit(&t, out)))
		goto fail;
	report(t0);
	goto done;
fail:
	if (rc != EPIPE && !o.told)
		warnrc(rc, "%s", act);
done:
	spirt_txn_abort(txn);
	spirt_store_close(s);
	reset();
	free(out);
	free(o.keys);
	return fshut_stdout(spirt_exit(rc));
}
