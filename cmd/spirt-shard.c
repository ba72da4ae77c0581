/* spirt-shard.c - split a data set into shards in the store */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "io.h"
#include "opt.h"
#include "shard.h"
#include "store.h"
#include "tool.h"

enum { O_CLASSES = 256, O_DEAD, O_DIM, O_EPOCH, O_FORCE, O_GROUP, O_LABEL,
    O_LIST, O_LIVE, O_NOSHUF, O_SEED, O_STATS, O_STD, O_STDFROM, O_COLS,
    O_NAMES, O_NAMESFROM, O_SINCE, O_REDO, O_ARRAYS, O_HOLDERS };

#define MAXDEAD 1024
#define MAXLIVE SPIRT_DATA_MAXSHARDS

static const char *const hints[] = {
	[SPIRT_DATA_HINT_DIM] = "give the number of features with --dim",
	[SPIRT_DATA_HINT_CLASSES] = "give the number of classes with "
	    "--classes",
	[SPIRT_DATA_HINT_HEADER] = "skip a title line with -H",
	[SPIRT_DATA_HINT_FORMAT] = "name the format with -f",
	[SPIRT_DATA_HINT_COLUMNS] = "read only the columns of numbers with "
	    "--columns (e.g. --columns 2-5)",
	[SPIRT_DATA_HINT_NAMES] = "labels that are names need --label-names"
};

static struct {
	const char *store, *name, *out, *scale_from, *names_from;
	struct spirt_data_opts d;
	size_t nshards;
	uint64_t seed;
	int stats, list, force, noshuffle, seeded, standardise, redo;
	int64_t hfirst, hcount;         /* --holders W,M; hcount 0: none */
	int64_t dead[MAXDEAD];
	size_t ndead;
	int64_t *live;          /* --live LIST */
	size_t nlive;
	const char *batch, *step, *epoch, *since;
	struct spirt_reassign ra;       /* --live, --dead */
	uint32_t *cols;                 /* --columns, for d.cols */
	char *names;                    /* --label-names-from's, d.names_from */
} o = { .name = "train", .nshards = 1 };

static const struct opt opts[] = {
	{ 'b', "batch", "N",
	    "with -t: the steps' batch (default $SPIRT_BATCH\nor 64)" },
	{ 'd', "dataset", "NAME", "data set name (default train)" },
	{ 'f', "format", "FMT",
	    "idx, csv, libsvm, npy or npz (default: by name)" },
	{ 'H', "header", NULL, "skip the first line (CSV, LIBSVM)" },
	{ 'n', "shards", "N", "number of shards (default 1)" },
	{ 'o', "output", "FILE",
	    "write a data file, not the store (- stdout)" },
	OPT_STORE,
	{ 't', "step", "T", "the reassignment holds from step T on" },
	{ O_ARRAYS, "arrays", "X,Y",
	    ".npz: the samples' and labels' arrays (default\n"
	    "X or x, y or Y)" },
	{ O_CLASSES, "classes", "K",
	    "labels lie in 0..K-1 (default: largest + 1)" },
	{ O_COLS, "columns", "LIST",
	    "CSV feature columns, 1-based, as 2-5,7 (default:\n"
	    "all but the label's)" },
	{ O_DEAD, "dead", "W",
	    "worker W is dead: its samples go to the others" },
	{ O_DIM, "dim", "D", "features per sample (LIBSVM: densify to D)" },
	{ O_EPOCH, "epoch", "E", "the reassignment holds from epoch E on" },
	{ O_FORCE, "force", NULL, "write binary data to a terminal" },
	{ O_GROUP, "group", "M", "workers per peer (default: all one peer)" },
	{ O_HOLDERS, "holders", "W,M", "\n"
	    "print the revision, which of workers W..W+M-1\n"
	    "hold samples, the others the full part holds\n"
	    "and those it leaves out" },
	{ O_LABEL, "label-col", "COL",
	    "CSV label column, 1-based or last (default 1)" },
	{ O_NAMES, "label-names", NULL,
	    "CSV labels are class names: classes in name order" },
	{ O_NAMESFROM, "label-names-from", "TRAIN", "\n"
	    "the class names of data set TRAIN" },
	{ O_LIST, "list", NULL, "print the assignment's revision and rows" },
	{ O_LIVE, "live", "LIST", "the live workers, e.g. 0,2-3: reassign" },
	{ O_NOSHUF, "no-shuffle", NULL, "keep the samples in file order" },
	{ O_REDO, "redo", NULL,
	    "with -t: steps from T are done again: the revision\n"
	    "that held at step T holds again" },
	{ O_SEED, "seed", "N", "shuffle seed (default 0)" },
	{ O_SINCE, "since", "D",
	    "with -t: the dead took nothing from step D on" },
	{ O_STD, "standardise", NULL, "each feature to mean 0, deviation 1" },
	{ O_STDFROM, "standardise-from", "TRAIN", "\n"
	    "with the mean and deviation of data set TRAIN" },
	{ O_STATS, "stats", NULL,
	    "print shard sizes, class counts and the\nassignment" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "report progress and timings" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-shard [-Hqv] [-d name] [-f format] [-n shards] "
	"[-o file]\n"
	"                   [-s store] [--arrays x,y] [--classes k]\n"
	"                   [--columns list] [--dim d] [--force] "
	"[--label-col col]\n"
	"                   [--label-names]\n"
	"                   [--label-names-from train] [--no-shuffle] "
	"[--seed n]\n"
	"                   [--standardise] [--standardise-from train] "
	"[--stats]\n"
	"                   file [labels]\n"
	"       spirt-shard [-qv] [-b batch] [-d name] [-s store] [-t step]\n"
	"                   [--epoch e] [--group m] [--holders w,m] [--list]\n"
	"                   [--since d] [--stats]\n"
	"                   --live list\n"
	"       spirt-shard [-qv] [-b batch] [-d name] [-s store] [-t step]\n"
	"                   [--epoch e] [--group m] [--holders w,m] [--list]\n"
	"                   [--since d] [--stats]\n"
	"                   --dead worker ...\n"
	"       spirt-shard [-qv] [-b batch] [-d name] [-s store]\n"
	"                   [--holders w,m] [--list] [--stats] -t step --redo\n"
	"       spirt-shard [-qv] [-d name] [-s store]\n"
	"                   --holders w,m | --list | --stats\n",
	NULL, NULL, 23, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

/* one entry p..e of --live arg: a worker, or a range a-b */
static void
live_entry(char *p, char *e, int64_t *a, int64_t *b, const char *arg)
{
	char save = *e, *dash;

	*e = '\0';
	if ((dash = strchr(p, '-')) != NULL) {
		*dash = '\0';
		*a = eparse_i64("--live", p, 0, SPIRT_DATA_MAXSHARDS - 1);
		*b = eparse_i64("--live", dash + 1, 0, SPIRT_DATA_MAXSHARDS - 1);
		if (*b < *a)
			die(SPIRT_EX_USAGE, "--live %s: range %s-%s is empty",
			    arg, p, dash + 1);
	} else {
		*a = *b = eparse_i64("--live", p, 0, SPIRT_DATA_MAXSHARDS - 1);
	}
	*e = save;
}

/* --live LIST: workers and ranges a-b, comma-separated, into o.live */
static void
parse_live(const char *arg)
{
	char *copy = emalloc(strlen(arg) + 1), *p = copy, *e;
	int64_t a, b;

	memcpy(copy, arg, strlen(arg) + 1);
	o.live = ecalloc(MAXLIVE, sizeof(*o.live));
	for (;;) {
		e = p + strcspn(p, ",");
		if (e == p)
			die(SPIRT_EX_USAGE, "--live %s: an empty entry", arg);
		live_entry(p, e, &a, &b, arg);
		for (; a <= b; a++) {
			if (o.nlive == MAXLIVE)
				die(SPIRT_EX_USAGE, "--live: more than %d",
				    MAXLIVE);
			o.live[o.nlive++] = a;
		}
		if (*e == '\0')
			break;
		p = e + 1;
	}
	free(copy);
}

/* --holders W,M: the first worker and the count */
static void
parse_holders(const char *arg)
{
	const char *comma = strchr(arg, ',');
	char first[24];

	if (!comma || (size_t)(comma - arg) >= sizeof first)
		die(SPIRT_EX_USAGE, "--holders %s: not W,M (the first worker "
		    "and how many)", arg);
	memcpy(first, arg, (size_t)(comma - arg));
	first[comma - arg] = '\0';
	o.hfirst = eparse_i64("--holders", first, 0, SPIRT_DATA_MAXSHARDS - 1);
	o.hcount = eparse_i64("--holders", comma + 1, 1,
	    SPIRT_DATA_MAXSHARDS);
}

/* --arrays X,Y: the .npz members X.npy and Y.npy */
static void
parse_arrays(const char *arg)
{
	static char buf[2 * SPIRT_DATA_ARRAY_MAX + 2];
	char *comma;

	if (strlen(arg) >= sizeof buf || (comma = strchr(
	    memcpy(buf, arg, strlen(arg) + 1), ',')) == NULL ||
	    comma == buf || comma[1] == '\0' || strchr(comma + 1, ',') ||
	    comma - buf > SPIRT_DATA_ARRAY_MAX)
		die(SPIRT_EX_USAGE, "--arrays %s: not two array names, as "
		    "X,y", arg);
	*comma = '\0';
	o.d.npz_x = buf;
	o.d.npz_y = comma + 1;
}

static void
options(int argc, char **argv)
{
	int c, rc;

	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'b': o.batch = optarg; break;
		case 'd': o.name = optarg; break;
		case 'f':
			if (!(o.d.format = spirt_data_format_parse(optarg)))
				die(SPIRT_EX_USAGE, "-f: unknown format \"%s\" "
				    "(idx, csv, libsvm, npy, npz)", optarg);
			break;
		case 'H': o.d.header = 1; break;
		case 'n': o.nshards = eparse_u64("-n", optarg, 1,
			  SPIRT_DATA_MAXSHARDS); break;
		case 'o': o.out = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 's': o.store = optarg; break;
		case 't': o.step = optarg; break;
		case 'v': spirt_verbose++; break;
		case 'V': print_version();
		case O_CLASSES: o.d.classes = (int32_t)eparse_i64("--classes",
			  optarg, 2, SPIRT_DATA_MAXCLASSES); break;
		case O_DEAD:
			if (o.ndead == MAXDEAD)
				die(SPIRT_EX_USAGE, "--dead: more than %d",
				    MAXDEAD);
			o.dead[o.ndead++] = eparse_i64("--dead", optarg, 0,
			    INT64_MAX);
			break;
		case O_EPOCH: o.epoch = optarg; break;
		case O_SINCE: o.since = optarg; break;
		case O_REDO: o.redo = 1; break;
		case O_FORCE: o.force = 1; break;
		case O_GROUP: o.ra.group = eparse_u64("--group", optarg, 1,
			  SPIRT_DATA_MAXSHARDS); break;
		case O_LIVE:
			if (o.live)
				die(SPIRT_EX_USAGE, "--live: give it once");
			parse_live(optarg);
			break;
		case O_DIM: o.d.dim = eparse_u64("--dim", optarg, 1,
			  UINT32_MAX); break;
		case O_LABEL:
			o.d.label_col = strcmp(optarg, "last") == 0 ?
			    SPIRT_LABEL_LAST : (int)eparse_i64("--label-col",
			    optarg, 1, 1 << 24) - 1;
			break;
		case O_NOSHUF: o.noshuffle = 1; break;
		case O_SEED: o.seed = eparse_u64("--seed", optarg, 0,
			  UINT64_MAX); o.seeded = 1; break;
		case O_LIST: o.list = 1; break;
		case O_HOLDERS: parse_holders(optarg); break;
		case O_STATS: o.stats = 1; break;
		case O_STD: o.standardise = 1; break;
		case O_STDFROM: o.scale_from = optarg; break;
		case O_COLS:
			free(o.cols);
			if ((rc = spirt_data_cols_parse(&o.cols, &o.d.ncols,
			    optarg)) == ENOMEM)
				die(spirt_exit(rc), "--columns: %s",
				    spirt_strerror(rc));
			else if (rc)
				die(SPIRT_EX_USAGE, "--columns: \"%s\": not "
				    "a list of columns (1-based, as 2-5,7, "
				    "each once)", optarg);
			o.d.cols = o.cols;
			break;
		case O_ARRAYS: parse_arrays(optarg); break;
		case O_NAMES: o.d.label_names = 1; break;
		case O_NAMESFROM: o.names_from = optarg; break;
		default: usage(1);
		}
}

/* --holders' part of a row: 0 the driver's workers' rest part, 1 their
 * full part, 2 another worker's full part, -1 none (another's rest) */
static int
holder_part(const int64_t *a)
{
	int mine = a[SPIRT_AS_WORKER] >= o.hfirst &&
	    a[SPIRT_AS_WORKER] < o.hfirst + o.hcount;

	if (a[SPIRT_AS_STEP] > 0)
		return mine ? 0 : -1;
	return mine ? 1 : 2;
}

/* the assignment's rows, one "assign" line each */
static void
print_assign(const struct spirt_assign *as)
{
	size_t i;

	for (i = 0; i < as->nrows; i++) {
		const int64_t *a = as->rows + SPIRT_AS_COLS * i;

		printf("assign worker %lld shard %lld start %lld count %lld "
		    "epoch %lld step %lld", (long long)a[SPIRT_AS_WORKER],
		    (long long)a[SPIRT_AS_SHARD], (long long)a[SPIRT_AS_START],
		    (long long)a[SPIRT_AS_COUNT], (long long)a[SPIRT_AS_EPOCH],
		    (long long)a[SPIRT_AS_STEP]);
		if (a[SPIRT_AS_BATCH])
			printf(" batch %lld", (long long)a[SPIRT_AS_BATCH]);
		putchar('\n');
	}
}

/*
 * --holders: "R:E:J:F:REST:FULL:OTHERS:OUT", the assignment as a driver
 * of workers W..W+M-1 keeps it (spirt-train): revision R; those of its
 * workers, as 0..M-1, that the rest part holds (from epoch E's step J; J
 * 0: no rest part) and the full part (from epoch F); the other workers
 * the full part holds, and those it leaves out, as they are.  The lists
 * are space-separated, each worker once, in the rows' order (OUT: in
 * ascending order).
 */
static void
print_holders(const struct spirt_assign *as)
{
	int64_t e = 0, j = 0, f = 0, n = 0, x;
	int part;

	for (size_t i = 0; i < as->nrows; i++) {
		const int64_t *a = as->rows + SPIRT_AS_COLS * i;

		if (a[SPIRT_AS_SHARD] >= n)
			n = a[SPIRT_AS_SHARD] + 1;
		if (a[SPIRT_AS_WORKER] < o.hfirst ||
		    a[SPIRT_AS_WORKER] >= o.hfirst + o.hcount)
			continue;
		if (a[SPIRT_AS_STEP] > 0) {
			e = a[SPIRT_AS_EPOCH];
			j = a[SPIRT_AS_STEP];
		} else {
			f = a[SPIRT_AS_EPOCH];
		}
	}
	printf("%llu:%lld:%lld:%lld", (unsigned long long)as->revision,
	    (long long)e, (long long)j, (long long)f);
	/* part 0: this driver's in the rest part, 1: in the full part,
	 * 2: the others' in the full part */
	for (part = 0; part < 3; part++) {
		putchar(':');
		for (size_t i = 0; i < as->nrows; i++) {
			const int64_t *a = as->rows + SPIRT_AS_COLS * i;
			int64_t w = a[SPIRT_AS_WORKER];
			size_t k;

			if (holder_part(a) != part)
				continue;
			for (k = 0; k < i; k++)
				if (as->rows[SPIRT_AS_COLS * k +
				    SPIRT_AS_WORKER] == w && holder_part(
				    as->rows + SPIRT_AS_COLS * k) == part)
					break;
			if (k == i)
				printf(" %lld", (long long)(part < 2 ?
				    w - o.hfirst : w));
		}
	}
	/* the others' left out of the full part: every worker is a shard's
	 * (0..n-1), and the full part holds every shard */
	putchar(':');
	for (x = 0; x < n; x++) {
		size_t i;

		if (x >= o.hfirst && x < o.hfirst + o.hcount)
			continue;
		for (i = as->nrest; i < as->nrows; i++)
			if (as->rows[SPIRT_AS_COLS * i + SPIRT_AS_WORKER] == x)
				break;
		if (i == as->nrows)
			printf(" %lld", (long long)x);
	}
	putchar('\n');
}

/* --list: the revision, then the rows; --holders: its line; nothing else
 * is read */
static int
print_list(struct spirt_store *s)
{
	struct spirt_txn *txn;
	struct spirt_assign as;
	int rc;

	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_data_assign_get(&as, txn, o.name)) == 0) {
		if (o.list) {
			printf("revision %llu\n",
			    (unsigned long long)as.revision);
			print_assign(&as);
		}
		if (o.hcount)
			print_holders(&as);
		spirt_assign_free(&as);
	}
	spirt_txn_abort(txn);
	return rc;
}

/* "class K NAME" for each class of a data set with class names */
static int
class_names(struct spirt_store *s)
{
	const char *p, *e;
	char *names;
	size_t len, k = 0;
	int rc;

	if ((rc = spirt_data_names_get(&names, &len, s, o.name)))
		return rc == SPIRT_ENOTFOUND ? 0 : rc;
	for (p = names; p < names + len; p = e + 1, k++) {
		e = memchr(p, '\n', (size_t)(names + len - p));
		printf("class %zu %.*s\n", k, (int)(e - p), p);
	}
	free(names);
	return 0;
}

/* per-shard sample counts and class histograms, then the assignment */
static int
print_stats(struct spirt_store *s)
{
	struct spirt_data_stats st;
	int64_t k, c, *tot;
	unsigned r;
	int rc;

	if ((rc = spirt_data_stats(&st, s, o.name)))
		return rc;
	printf("dataset %s samples %lld classes %lld features %lld "
	    "dtype %s shape ", o.name, (long long)st.nsamples,
	    (long long)st.nclasses, (long long)st.features,
	    spirt_dtype_name(st.xdtype));
	for (r = 1; r < st.xrank; r++)
		printf("%s%llu", r > 1 ? "x" : "",
		    (unsigned long long)st.xdims[r]);
	printf(" shards %lld revision %llu\n", (long long)st.nshards,
	    (unsigned long long)st.as.revision);
	tot = ecalloc((size_t)st.nclasses, sizeof(*tot));
	for (k = 0; k < st.nshards; k++) {
		const int64_t *h = st.hist + k * st.nclasses;

		printf("shard %lld samples %lld hist", (long long)k,
		    (long long)st.counts[k]);
		for (c = 0; c < st.nclasses; c++) {
			tot[c] += h[c];
			printf(" %lld", (long long)h[c]);
		}
		putchar('\n');
	}
	printf("total samples %lld hist", (long long)st.nsamples);
	for (c = 0; c < st.nclasses; c++)
		printf(" %lld", (long long)tot[c]);
	putchar('\n');
	if ((rc = class_names(s)))
		goto out;
	print_assign(&st.as);
out:
	free(tot);
	spirt_data_stats_free(&st);
	return rc;
}

/*
 * Standardise ds (read from file) with a scale fitted on it (s NULL) or
 * with data/<from>/scale from store s at loc.  Failures are reported here.
 */
static int
standardise(struct spirt_dataset *ds, struct spirt_store *s,
    const char *file, const char *loc)
{
	struct spirt_data_err err;
	char msg[512];
	float *sc;
	int rc;

	memset(&err, 0, sizeof(err));
	err.file = file;
	if (s == NULL)
		rc = spirt_data_scale_fit(&sc, ds);
	else if ((rc = spirt_data_scale_get(&sc, s, o.scale_from,
	    ds->feat))) {
		if (rc == SPIRT_ESHAPE)
			warnx_("%s: data/%s/scale: not the mean and deviation "
			    "of %zu features", loc, o.scale_from, ds->feat);
		else
			warnrc(rc, "%s: data/%s/scale", loc, o.scale_from);
		if (rc == SPIRT_ENOTFOUND)
			warnx_("hint: shard %s with --standardise first",
			    o.scale_from);
		return rc;
	}
	if (rc == 0) {
		rc = spirt_data_scale_apply(ds, &err, sc, s ? o.scale_from :
		    o.name);
		free(sc);
	}
	if (rc == SPIRT_ENAN)
		warnx_("%s", spirt_data_errstr(msg, sizeof(msg), &err, rc));
	else if (rc)
		warnrc(rc, "%s: standardise", file);
	else if (spirt_verbose)
		info("standardised with the mean and deviation of %s",
		    s ? o.scale_from : o.name);
	return rc;
}

/*
 * Open the store at loc (it must exist) into *s and take the class names
 * of data set --label-names-from for the reader.  Failures are reported
 * here.
 */
static int
names_from(struct spirt_store **s, const char *loc)
{
	int rc;

	if ((rc = spirt_store_open(s, loc, 0))) {
		warnrc(rc, "%s", loc);
		return rc;
	}
	if ((rc = spirt_data_names_get(&o.names, &o.d.names_from_len, *s,
	    o.names_from))) {
		warnrc(rc, "%s: data/%s/classes", loc, o.names_from);
		if (rc == SPIRT_ENOTFOUND)
			warnx_("hint: shard %s with --label-names first",
			    o.names_from);
		return rc;
	}
	o.d.names_from = o.names;
	o.d.label_names = 1;
	return 0;
}

/* the shards as a data file on path ("-" stdout), published atomically */
static int
write_file(const char *path, const struct spirt_dataset *ds)
{
	struct spirt_publish pub;
	int rc;

	if (strcmp(path, "-") == 0)
		return spirt_data_write(STDOUT_FILENO, o.name, ds, o.nshards);
	if ((rc = spirt_publish_open(&pub, path, 0644)))
		return rc;
	if ((rc = spirt_data_write(pub.fd, o.name, ds, o.nshards))) {
		spirt_publish_abort(&pub);
		return rc;
	}
	return spirt_publish_commit(&pub);
}

/* --live or --dead: where the reassignment takes effect, checked */
static void
reassign_opts(void)
{
	struct spirt_reassign *r = &o.ra;

	if (o.ndead && o.live)
		die(SPIRT_EX_USAGE, "--dead and --live: give one of them");
	if (o.redo && (o.ndead || o.live || o.epoch || o.since || r->group))
		die(SPIRT_EX_USAGE, "--redo: the revision of a step already "
		    "taken holds again: no --live, --dead, --epoch, --since "
		    "or --group");
	if (o.redo && !o.step)
		die(SPIRT_EX_USAGE, "--redo: give the step done again with -t");
	if (o.step && o.epoch)
		die(SPIRT_EX_USAGE, "-t and --epoch: give one of them");
	if (o.batch && !o.step)
		die(SPIRT_EX_USAGE, "-b is the batch of -t's steps: give -t");
	if (o.since && !o.step)
		die(SPIRT_EX_USAGE, "--since is a step before -t's: give -t");
	r->live = o.live;
	r->nlive = o.nlive;
	r->dead = o.dead;
	r->ndead = o.ndead;
	if (o.step) {
		r->when = o.redo ? SPIRT_RA_REDO : SPIRT_RA_STEP;
		r->step = eparse_u64("-t", o.step, 0, SPIRT_NOSTEP - 1);
		/* spirt-grad's batch: its -b range, variable and default */
		r->batch = eparse_u64(o.batch ? "-b" : "SPIRT_BATCH",
		    opt_env(o.batch, "SPIRT_BATCH", "64"), 1, 1 << 20);
		r->has_since = o.since != NULL;
		if (o.since)
			r->since = eparse_u64("--since", o.since, 0, r->step);
	} else if (o.epoch) {
		r->when = SPIRT_RA_EPOCH;
		r->epoch = eparse_u64("--epoch", o.epoch, 0, SPIRT_NOSTEP - 1);
	}
}

/* Write the next revision; 0, or a code whose message is said */
static int
reassign(struct spirt_store *s, const char *loc)
{
	struct spirt_reassign *r = &o.ra;
	int rc = spirt_data_reassign(s, o.name, r);

	if (rc == SPIRT_EDONE && r->when == SPIRT_RA_REDO) {
		if (spirt_verbose)
			info("data/%s/assign: revision %llu holds at step "
			    "%llu: nothing to do", o.name,
			    (unsigned long long)r->from_revision,
			    (unsigned long long)r->step);
		return 0;
	}
	if (rc == SPIRT_EDONE) {
		warning("data/%s/assign: no dead worker is live: nothing to do",
		    o.name);
		return 0;
	}
	if (rc && r->msg[0])
		warnx_("data/%s/assign: cannot reassign: %s", o.name, r->msg);
	else if (rc)
		warnrc(rc, "%s: reassign data/%s", loc, o.name);
	else if (r->when == SPIRT_RA_REDO)
		warning("data/%s/assign: step %llu is done again: revision "
		    "%llu, as revision %llu held there", o.name,
		    (unsigned long long)r->step,
		    (unsigned long long)r->revision,
		    (unsigned long long)r->from_revision);
	else if (spirt_verbose)
		info("data/%s/assign: revision %llu from epoch %llu step %llu",
		    o.name, (unsigned long long)r->revision,
		    (unsigned long long)r->at_epoch,
		    (unsigned long long)r->at_step);
	return rc;
}

int
main(int argc, char **argv)
{
	struct spirt_dataset ds = { 0 };
	struct spirt_data_err err;
	struct spirt_store *s = NULL;
	const char *act = "open", *loc;
	char msg[512];
	double t0 = spirt_clock(), t1 = t0;
	int rc, re;

	progname = "spirt-shard";
	checkfds();
	parent_watch();
	store_env();

	options(argc, argv);
	argc -= optind;
	argv += optind;
	re = o.ndead || o.live || o.redo;
	if (re ? argc != 0 : argc > 2 || (argc == 0 && !o.stats && !o.list &&
	    !o.hcount))
		usage(1);
	if ((o.list || o.hcount) && argc > 0)
		die(SPIRT_EX_USAGE, "--list, --holders: the assignment of a "
		    "store's data set: no file");
	if (!re && (o.batch || o.step || o.epoch || o.ra.group || o.since))
		die(SPIRT_EX_USAGE, "-b, -t, --epoch, --group and --since go "
		    "with --live or --dead");
	if (re)
		reassign_opts();
	if (spirt_data_name_check(o.name))
		die(SPIRT_EX_USAGE, "-d: invalid data set name \"%s\"", o.name);
	if (o.noshuffle && o.seeded)
		die(SPIRT_EX_USAGE, "--seed: nothing to shuffle with "
		    "--no-shuffle");
	if (o.scale_from && spirt_data_name_check(o.scale_from))
		die(SPIRT_EX_USAGE, "--standardise-from: invalid data set "
		    "name \"%s\"", o.scale_from);
	if (o.standardise && o.scale_from)
		die(SPIRT_EX_USAGE, "--standardise-from: and --standardise?");
	if ((o.standardise || o.scale_from) && argc == 0)
		usage(1);
	if (o.names_from && spirt_data_name_check(o.names_from))
		die(SPIRT_EX_USAGE, "--label-names-from: invalid data set "
		    "name \"%s\"", o.names_from);
	if (o.d.label_names && o.names_from)
		die(SPIRT_EX_USAGE, "--label-names-from: and --label-names?");
	if ((o.d.label_names || o.names_from || o.cols) && argc == 0)
		usage(1);
	if (o.out && (o.stats || o.list || o.hcount || re || o.standardise ||
	    o.scale_from))
		die(SPIRT_EX_USAGE, "-o: --stats, --list, --holders, --dead, "
		    "--live and --standardise work on the store");
	if (o.out && (o.d.label_names || o.names_from))
		die(SPIRT_EX_USAGE, "-o: --label-names records the names in "
		    "the store");
	if (o.out && strcmp(o.out, "-") == 0 && !o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal: use --force to "
		    "write binary data there");
	loc = o.store ? o.store : store_default();

	/* the class names to map to, from the store they are in */
	if (o.names_from && (rc = names_from(&s, loc)))
		goto out;
	if (argc > 0) {         /* read everything before touching the store */
		if ((rc = spirt_data_read(&ds, &err, (const char *const *)argv,
		    (size_t)argc, &o.d))) {
			warnx_("%s", spirt_data_errstr(msg, sizeof(msg), &err,
			    rc));
			if (err.hint)
				warnx_("hint: %s", hints[err.hint]);
			goto out;       /* (a store --label-names-from opened) */
		}
		if (o.nshards > ds.n) {
			warnx_("%s: %zu shards for %zu samples", argv[0],
			    o.nshards, ds.n);
			rc = SPIRT_EINVAL;
			goto out;
		}
		t1 = spirt_clock();
		if (spirt_verbose)
			info("read %zu samples, %zu features, %ld classes "
			    "in %.3f s", ds.n, ds.feat, (long)ds.nclasses,
			    t1 - t0);
		/* in file order, so a record number means the file's;
		 * a store to standardise from must exist: it is not created */
		if (o.scale_from && s == NULL &&
		    (rc = spirt_store_open(&s, loc, 0)))
			goto fail;
		if ((o.standardise || o.scale_from) &&
		    (rc = standardise(&ds, s, argv[0], loc)))
			goto out;
		if (!o.noshuffle)
			spirt_data_shuffle(&ds, o.seed);
	}

	if (o.out) {
		if ((rc = write_file(o.out, &ds)))
			warnrc(rc, "%s", o.out);
		else if (spirt_verbose)
			info("wrote %zu shards to %s in %.3f s", o.nshards,
			    o.out, spirt_clock() - t1);
		goto out;
	}

	if (s == NULL && (rc = spirt_store_open(&s, loc, argc > 0 ?
	    SPIRT_STORE_CREATE : re ? 0 : SPIRT_STORE_RDONLY)))
		goto fail;

	if (argc > 0) {
		act = "write shards";
		if ((rc = spirt_data_store(s, o.name, &ds, o.nshards)))
			goto fail;
		if (spirt_verbose)
			info("wrote %zu shards of data/%s/ in %.3f s "
			    "(%.3f s in all)", o.nshards, o.name, spirt_clock() - t1,
			    spirt_clock() - t0);
	} else if (re && (rc = reassign(s, loc))) {
		goto out;
	}
	if (o.list || o.hcount) {
		act = "list";
		if ((rc = print_list(s)))
			goto fail;
	}
	if (o.stats) {
		act = "stats";
		if ((rc = print_stats(s)))
			goto fail;
	}
	goto out;

fail:
	warnrc(rc, "%s: %s data/%s", loc, act, o.name);
out:
	spirt_store_close(s);
	spirt_dataset_free(&ds);
	free(o.cols);
	free(o.names);
	return fshut_stdout(spirt_exit(rc));
}
