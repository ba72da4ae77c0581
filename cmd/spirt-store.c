/* spirt-store.c - list, show, get, put, delete, export, import tensors;
 * serve a worker's minibatch; answer get, batch and put over a pipe */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "io.h"
#include "model.h"
#include "npy.h"
#include "opt.h"
#include "parse.h"
#include "serve.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

static struct {
	const char *store, *spec;
	int force, noover;
	uint64_t step;
	/* batch */
	const char *batch, *dataset, *out, *seed, *worker;
	int npy;
} o = { NULL, NULL, 0, 0, SPIRT_NOSTEP, NULL, NULL, NULL, NULL, NULL, 0 };

static const struct opt opts[] = {
	{ 'b', "batch", "N", "batch: samples per minibatch (default 64)" },
	{ 'd', "dataset", "NAME", "batch: data set (default train)" },
	{ 'f', "force", NULL, "write binary data to a terminal" },
	{ 'n', "no-overwrite", NULL, "fail if the key exists" },
	{ OPT_LONG('N'), "npy", NULL, "batch: NumPy .npy, not records" },
	{ 'o', "output", "P",
	    "batch: write files P.x and P.y (.npy with --npy)" },
	{ 'S', "seed", "N", "batch: minibatch seed (default 0)" },
	OPT_STORE,
	{ 't', "step", "N",
	    "step to record on import; prune below it;\nthe batch's step" },
	{ OPT_LONG('M'), "spec", "SPEC",
	    "import: a model of this spec, see spirt-model(5)" },
	{ 'w', "worker", "N", "batch: worker (default 0)" },
	OPT_QUIET,
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-store [-s store] ls [prefix]\n"
	"       spirt-store [-s store] show key ...\n"
	"       spirt-store [-s store] get [-f] key\n"
	"       spirt-store [-s store] put [-n] key [file]\n"
	"       spirt-store [-s store] rm key ...\n"
	"       spirt-store [-q] [-s store] persist [prefix ...]\n"
	"       spirt-store [-q] [-s store] prune -t step prefix ...\n"
	"       spirt-store [-s store] export [-f] key [file.npy]\n"
	"       spirt-store [-s store] import [-n] [-t step] "
	"[--spec spec] key\n"
	"                   file.npy\n"
	"       spirt-store [-s store] stat\n"
	"       spirt-store [-s store] batch [-f] [-b batch] [-d dataset]\n"
	"                   [-o prefix] [-S seed] [-w worker] [--npy] -t step\n"
	"       spirt-store [-s store] pipe [-f]\n"
	"       spirt-store inspect [file ...]\n",
	NULL, NULL, 21, 1, opts, NULL
};

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
		case 'b': o.batch = optarg; break;
		case 'd': o.dataset = optarg; break;
		case 'f': o.force = 1; break;
		case 'M': o.spec = optarg; break;
		case 'N': o.npy = 1; break;
		case 'n': o.noover = 1; break;
		case 'o': o.out = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'S': o.seed = optarg; break;
		case 's': o.store = optarg; break;
		case 'w': o.worker = optarg; break;
		case 't': o.step = eparse_u64("-t", optarg, 0, UINT64_MAX - 1);
			  break;
		case 'V': print_version();
		default: usage(1);
		}
}

static void
pshape(const struct spirt_tensor *t)
{
	if (!t->rank)
		fputs("scalar", stdout);
	for (unsigned i = 0; i < t->rank; i++)
		printf("%s%llu", i ? "x" : "", (unsigned long long)t->dims[i]);
}

static void
pu64(const char *k, uint64_t v, uint64_t unset)
{
	if (v == unset)
		printf("%s=-\n", k);
	else
		printf("%s=%llu\n", k, (unsigned long long)v);
}

/* key=value block: header and summary of one record */
static void
describe(const char *what, const struct spirt_tensor *t, const void *pl)
{
	struct spirt_tensor_stats st;

	spirt_tensor_stats(&st, t, pl);
	printf("%s\ndtype=%s\nshape=", what, spirt_dtype_name(t->dtype));
	pshape(t);
	printf("\nelements=%llu\nbytes=%llu\nname=%s\n",
	    (unsigned long long)t->nelem, (unsigned long long)t->nbytes,
	    t->name);
	pu64("step", t->step, SPIRT_NOSTEP);
	pu64("origin", t->origin, SPIRT_NOORIGIN);
	pu64("samples", t->samples, 0);
	pu64("count", t->count, 0);
	pu64("revision", t->revision, SPIRT_NOREVISION);
	if (isnan(t->loss))
		puts("loss=-");
	else
		printf("loss=%.9g\n", t->loss);
	printf("min=%.9g\nmax=%.9g\nmean=%.9g\nl2=%.9g\nnan=%llu\ninf=%llu\n"
	    "checksum=ok\n\n", st.min, st.max, st.mean, st.l2,
	    (unsigned long long)st.nan, (unsigned long long)st.inf);
}

static int
ls_one(void *arg, const char *key, const void *val, size_t len)
{
	struct spirt_tensor t;
	const void *pl;
	int rc = spirt_tensor_decode(&t, &pl, val, len, 0);

	if (rc) {
		warnrc(rc, "%s", key);
		*(int *)arg = rc;
		return 0;
	}
	printf("%s\t%s\t", key, spirt_dtype_name(t.dtype));
	pshape(&t);
	printf("\t%llu\t", (unsigned long long)t.nbytes);
	if (t.step == SPIRT_NOSTEP)
		fputs("-\t", stdout);
	else
		printf("%llu\t", (unsigned long long)t.step);
	if (t.origin == SPIRT_NOORIGIN)
		puts("-");
	else
		printf("%lu\n", (unsigned long)t.origin);
	return 0;
}

/* records back to back in a file or on stdin */
static int
inspect(const char *path)
{
	struct spirt_tensor t;
	void *pl;
	char what[64];
	int fd = 0, rc;
	unsigned long n = 0;

	if (strcmp(path, "-") && (fd = open(path, O_RDONLY)) < 0) {
		warnx_("open %s:", path);
		return errno;
	}
	while ((rc = spirt_tensor_read(fd, &t, &pl, 0)) == 0) {
		snprintf(what, sizeof what, "record=%lu", n++);
		describe(what, &t, pl);
		free(pl);
	}
	if (rc == SPIRT_EOF && n == 0)
		rc = SPIRT_ETRUNC;      /* an empty input holds no record */
	if (rc != SPIRT_EOF)
		warnrc(rc, "%s: record %lu", path, n);
	if (fd > 0)
		close(fd);
	return rc == SPIRT_EOF ? 0 : rc;
}

/* ---- the commands: each gets its operands and the open store ---- */

/* state shared by a command's prep (before the store opens) and run */
static struct {
	struct spirt_tensor t;
	const void *pl;
	void *buf;              /* what pl points into, to free */
	const char *bad;        /* the key rm failed on */
	char **keys;
	int nkeys;
} in;

static int
put_txn(struct spirt_txn *txn, void *arg)
{
	return spirt_store_put_tensor(txn, arg, &in.t, in.pl,
	    o.noover ? SPIRT_PUT_NOOVERWRITE : 0);
}

static int
rm_txn(struct spirt_txn *txn, void *arg)
{
	int rc;

	(void)arg;
	for (int i = 0; i < in.nkeys; i++)
		if ((rc = spirt_store_del(txn, in.keys[i]))) {
			in.bad = in.keys[i];
			return rc;
		}
	return 0;
}

/* put: exactly one record, read and verified before the store opens */
static int
put_prep(int argc, char **argv, const char **act)
{
	struct spirt_tensor t2;
	void *extra = NULL;
	const char *file = argc > 1 ? argv[1] : "-";
	int fd = strcmp(file, "-") ? open(file, O_RDONLY) : 0, rc;

	if (fd < 0)
		dierc(errno, "open %s", file);
	*act = file;
	if ((rc = spirt_tensor_read(fd, &in.t, &in.buf, 0)))
		return rc == SPIRT_EOF ? SPIRT_ETRUNC : rc;  /* empty: none */
	in.pl = in.buf;
	rc = spirt_tensor_read(fd, &t2, &extra, 0);
	free(extra);
	if (rc == 0)
		die(SPIRT_EX_DATAERR, "%s: more than one record", file);
	if (fd > 0)
		close(fd);
	return rc == SPIRT_EOF ? 0 : rc;
}

/*
 * import --spec: the array becomes model/<name>@<t>, a model the other
 * tools take: float32 [P] (float64 rounded), P the spec's parameter count,
 * named by the canonical spec, step t.  A version is never overwritten.
 */
static int
as_model(const char *key, const char *file)
{
	struct spirt_model m;
	char name[SPIRT_NAME_PART_MAX + 1];
	uint64_t t, dims[1];
	float *p;
	int rc;

	if ((rc = spirt_model_parse(&m, o.spec)))
		die(SPIRT_EX_USAGE, "--spec: %s: %s (see spirt-model(5))",
		    o.spec, spirt_strerror(rc));
	if (spirt_model_key_parse(key, name, sizeof name, &t))
		die(SPIRT_EX_USAGE, "import --spec: key \"%s\" is not "
		    "model/<name>@<step>", key);
	if (o.step != SPIRT_NOSTEP && o.step != t)
		die(SPIRT_EX_USAGE, "import --spec: -t %llu, but the key says "
		    "step %llu", (unsigned long long)o.step,
		    (unsigned long long)t);
	if (in.t.dtype != SPIRT_F32 && in.t.dtype != SPIRT_F64)
		die(SPIRT_EX_DATAERR, "%s: dtype %s: model parameters are "
		    "float32 (float64 is rounded)", file,
		    spirt_dtype_name(in.t.dtype));
	if (in.t.nelem != m.nparams)
		die(SPIRT_EX_DATAERR, "%s: %llu values, %s has %zu parameters",
		    file, (unsigned long long)in.t.nelem, m.spec, m.nparams);
	p = emalloc(m.nparams ? m.nparams * sizeof *p : 1);
	for (size_t i = 0; i < m.nparams; i++) {
		double d;
		if (in.t.dtype == SPIRT_F32) {
			memcpy(&p[i], (const float *)in.pl + i, sizeof *p);
			continue;
		}
		memcpy(&d, (const double *)in.pl + i, sizeof d);
		p[i] = (float)d;
	}
	if (spirt_count_nonfinite_f32(p, m.nparams))
		die(SPIRT_EX_DATAERR, "%s: NaN or Inf among the parameters",
		    file);
	free(in.buf);
	in.buf = p;
	in.pl = p;
	dims[0] = m.nparams;
	if ((rc = spirt_tensor_init(&in.t, SPIRT_F32, 1, dims)) ||
	    (rc = spirt_tensor_set_name(&in.t, m.spec)))
		return rc;
	in.t.step = t;
	o.noover = 1;
	return 0;
}

static int
import_prep(int argc, char **argv, const char **act)
{
	size_t len;
	int rc;

	(void)argc;
	*act = argv[1];
	if ((rc = spirt_readfile(argv[1], &in.buf, &len)) ||
	    (rc = spirt_npy_parse(&in.t, &in.pl, in.buf, len)))
		return rc;
	if (o.spec)
		return as_model(argv[0], argv[1]);
	in.t.step = o.step;
	return 0;
}

static int
put_run(struct spirt_store *s, int argc, char **argv, const char **act)
{
	(void)argc;
	*act = argv[0];
	return spirt_store_write(s, put_txn, argv[0]);
}

static int
rm_run(struct spirt_store *s, int argc, char **argv, const char **act)
{
	int rc;

	in.keys = argv;
	in.nkeys = argc;
	rc = spirt_store_write(s, rm_txn, NULL);
	*act = in.bad ? in.bad : s ? spirt_store_location(s) : "";
	return rc;
}

static int
stat_run(struct spirt_store *s, int argc, char **argv, const char **act)
{
	struct spirt_store_info i;
	int rc;

	(void)argc;
	(void)argv;
	*act = spirt_store_location(s);
	if ((rc = spirt_store_info(s, &i)))
		return rc;
	printf("store=%s\nentries=%llu\npage_size=%u\nused_bytes=%llu\n"
	    "map_size=%llu\nreaders=%llu\nmax_readers=%llu\n",
	    spirt_store_location(s), (unsigned long long)i.entries, i.psize,
	    (unsigned long long)i.used, (unsigned long long)i.mapsize,
	    (unsigned long long)i.readers, (unsigned long long)i.maxreaders);
	return 0;
}

/* the read-only commands share one read transaction */
static int
read_run(struct spirt_store *s, int argc, char **argv, const char **act,
    int (*fn)(struct spirt_txn *, int, char **, const char **))
{
	struct spirt_txn *txn;
	int rc;

	*act = spirt_store_location(s);
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return rc;
	rc = fn(txn, argc, argv, act);
	spirt_txn_abort(txn);
	return rc;
}

static int
ls_txn(struct spirt_txn *txn, int argc, char **argv, const char **act)
{
	int err = 0, rc;

	rc = spirt_store_list(txn, argc ? argv[0] : "", ls_one, &err);
	if (rc)
		return rc;
	*act = NULL;            /* bad values were reported one by one */
	return err;
}

static int
show_txn(struct spirt_txn *txn, int argc, char **argv, const char **act)
{
	char what[SPIRT_KEY_MAX + 8];
	const void *pl;
	int err = 0, rc;

	for (int i = 0; i < argc; i++) {
		if ((rc = spirt_store_get_tensor(txn, argv[i], &in.t, &pl, 1))) {
			warnrc(rc, "%s", argv[i]);
			err = err ? err : rc;
			continue;
		}
		snprintf(what, sizeof what, "key=%s", argv[i]);
		describe(what, &in.t, pl);
	}
	*act = NULL;
	return err;
}

static int
get_txn(struct spirt_txn *txn, int argc, char **argv, const char **act)
{
	const void *rec, *pl;
	size_t len;
	int rc;

	(void)argc;
	*act = argv[0];
	if ((rc = spirt_store_get_tensor(txn, argv[0], &in.t, &pl, 1)) ||
	    (rc = spirt_store_get(txn, argv[0], &rec, &len)))
		return rc;
	if (!o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal; use -f to force");
	*act = "stdout";
	return spirt_writeall(1, rec, len);
}

/* export: a .npy file, published atomically, or stdout */
static int
export_txn(struct spirt_txn *txn, int argc, char **argv, const char **act)
{
	struct spirt_publish pub = { -1, NULL, NULL };
	const char *file = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
	const void *pl;
	char hdr[512];
	size_t len;
	int fd = 1, rc;

	*act = argv[0];
	if ((rc = spirt_store_get_tensor(txn, argv[0], &in.t, &pl, 1)))
		return rc;
	if (file && (rc = spirt_publish_open(&pub, file, 0644)))
		dierc(rc, "%s", file);
	if (file)
		fd = pub.fd;
	else if (!o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal; use -f to force");
	*act = file ? file : "stdout";
	if ((rc = spirt_npy_header(hdr, sizeof hdr, &len, &in.t)) ||
	    (rc = spirt_writeall(fd, hdr, len)) ||
	    (rc = spirt_writeall(fd, pl, in.t.nbytes))) {
		if (file)
			spirt_publish_abort(&pub);
		return rc;
	}
	return file ? spirt_publish_commit(&pub) : 0;
}

static int ls_run(struct spirt_store *s, int c, char **v, const char **a)
{ return read_run(s, c, v, a, ls_txn); }
static int show_run(struct spirt_store *s, int c, char **v, const char **a)
{ return read_run(s, c, v, a, show_txn); }
static int get_run(struct spirt_store *s, int c, char **v, const char **a)
{ return read_run(s, c, v, a, get_txn); }
static int export_run(struct spirt_store *s, int c, char **v, const char **a)
{ return read_run(s, c, v, a, export_txn); }

/* ---- batch: a worker's minibatch by the store's rule (batch.h) ---- */

static struct spirt_batch bsel;
static struct spirt_batch_data bdata;

static int
batch_prep(int argc, char **argv, const char **act)
{
	(void)argc;
	(void)argv;
	(void)act;
	if (o.step == SPIRT_NOSTEP) {
		const char *e = getenv("SPIRT_STEP");

		if (e == NULL || *e == '\0')
			die(SPIRT_EX_USAGE, "batch: which step? give -t step");
		o.step = eparse_u64("SPIRT_STEP", e, 0, UINT64_MAX - 1);
	}
	if (o.out == NULL && !o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal; use -f to force");
	return 0;
}

/* one array to fd: a record, or a .npy image with --npy */
static int
put_array(int fd, struct spirt_tensor *t, const void *p)
{
	char hdr[512];
	size_t len;
	int rc;

	if (!o.npy)
		return spirt_tensor_write(fd, t, p);
	if ((rc = spirt_npy_header(hdr, sizeof hdr, &len, t)) ||
	    (rc = spirt_writeall(fd, hdr, len)))
		return rc;
	return spirt_writeall(fd, p, t->nbytes);
}

/* -o P: P.x and P.y (.npy added with --npy), each published whole */
static int
batch_files(const char **act)
{
	static char fx[4096], fy[4096];
	struct spirt_publish px = { -1, NULL, NULL }, py = { -1, NULL, NULL };
	const char *ext = o.npy ? ".npy" : "";
	int rc;

	if ((size_t)snprintf(fx, sizeof fx, "%s.x%s", o.out, ext) >=
	    sizeof fx || (size_t)snprintf(fy, sizeof fy, "%s.y%s", o.out,
	    ext) >= sizeof fy)
		die(SPIRT_EX_USAGE, "-o %s: name too long", o.out);
	*act = fx;
	if ((rc = spirt_publish_open(&px, fx, 0644)))
		return rc;
	*act = fy;
	if ((rc = spirt_publish_open(&py, fy, 0644))) {
		spirt_publish_abort(&px);
		return rc;
	}
	*act = fx;
	if ((rc = put_array(px.fd, &bdata.tx, bdata.x)) == 0) {
		*act = fy;
		rc = put_array(py.fd, &bdata.ty, bdata.y);
	}
	if (rc) {
		spirt_publish_abort(&px);
		spirt_publish_abort(&py);
		return rc;
	}
	*act = fx;
	if ((rc = spirt_publish_commit(&px))) {
		spirt_publish_abort(&py);
		return rc;
	}
	*act = fy;
	return spirt_publish_commit(&py);
}

static int
batch_txn(struct spirt_txn *txn, int argc, char **argv, const char **act)
{
	const char *ds = opt_env(o.dataset, "SPIRT_DATASET", "train");
	uint64_t w, b, seed;
	int rc;

	(void)argc;
	(void)argv;
	w = eparse_u64("-w", opt_env(o.worker, "SPIRT_WORKER", "0"), 0,
	    UINT32_MAX - 1);
	b = eparse_u64("-b", opt_env(o.batch, "SPIRT_BATCH", "64"), 1,
	    1 << 20);
	seed = eparse_u64("-S", opt_env(o.seed, "SPIRT_SEED", "0"), 0,
	    UINT64_MAX);
	if ((rc = spirt_batch_read(&bsel, &bdata, txn, ds, w, o.step, b,
	    seed))) {
		*act = bsel.msg[0] ? bsel.msg : ds;
		return rc;
	}
	if (o.out)
		return batch_files(act);
	*act = "stdout";
	if ((rc = put_array(1, &bdata.tx, bdata.x)))
		return rc;
	return put_array(1, &bdata.ty, bdata.y);
}

static int batch_run(struct spirt_store *s, int c, char **v, const char **a)
{ return read_run(s, c, v, a, batch_txn); }

/*
 * ---- pipe: get, batch, put, putf32 as requests on stdin, one open store ----
 *
 * A warm function's store connection (spirt-torch(1)): no process to start
 * and no store to open a request.  A request is a line; an answer is the
 * line "code length" then length bytes (records), code 0 or spirt(7)'s
 * exit code, a failure's message on stderr.  Each request is its own
 * transaction: a read sees the store as it is then.
 */

#define PIPE_LINE 1024          /* a request line's bytes, LF included */

static int
answer(int code, size_t len)
{
	char l[48];
	int n = snprintf(l, sizeof l, "%d %zu\n", code, len);

	return spirt_writeall(1, l, (size_t)n);
}

/* a refused request: its message, its code, no bytes */
static int
refuse(int rc, const char *act)
{
	warnrc(rc, "%s", act);
	return answer(spirt_exit(rc), 0);
}

static int
pipe_get(struct spirt_store *s, const char *key)
{
	struct spirt_txn *txn;
	struct spirt_tensor t;
	const void *rec, *pl;
	size_t len;
	int rc;

	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return refuse(rc, spirt_store_location(s));
	if ((rc = spirt_store_get_tensor(txn, key, &t, &pl, 1)) ||
	    (rc = spirt_store_get(txn, key, &rec, &len))) {
		spirt_txn_abort(txn);
		return refuse(rc, key);
	}
	if ((rc = answer(0, len)) == 0)
		rc = spirt_writeall(1, rec, len);
	spirt_txn_abort(txn);
	return rc;
}

/* "batch step worker batch seed dataset" */
static int
pipe_batch(struct spirt_store *s, char **w)
{
	struct spirt_txn *txn;
	uint64_t v[4], max[4] = { UINT64_MAX - 1, UINT32_MAX - 1, 1 << 20,
	    UINT64_MAX };
	static const char *what[4] = { "step", "worker", "batch", "seed" };
	int rc;

	for (int i = 0; i < 4; i++)
		if ((rc = spirt_parse_u64(&v[i], w[i], i == 2, max[i]))) {
			warnx_("pipe: batch: %s \"%.40s\": not a number in "
			    "%d..%llu", what[i], w[i], i == 2,
			    (unsigned long long)max[i]);
			return answer(SPIRT_EX_USAGE, 0);
		}
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		return refuse(rc, spirt_store_location(s));
	spirt_batch_data_free(&bdata);
	rc = spirt_batch_read(&bsel, &bdata, txn, w[4], v[1], v[0], v[2],
	    v[3]);
	spirt_txn_abort(txn);
	if (rc)
		return refuse(rc, bsel.msg[0] ? bsel.msg : w[4]);
	if ((rc = answer(0, spirt_tensor_reclen(&bdata.tx) +
	    spirt_tensor_reclen(&bdata.ty))) ||
	    (rc = spirt_tensor_write(1, &bdata.tx, bdata.x)))
		return rc;
	return spirt_tensor_write(1, &bdata.ty, bdata.y);
}

/*
 * The bytes of request req (put, putf32) for key, n of them, read whole
 * into *buf (*len): 0, or the refusal answered (its rc), the pipe ended
 * (*end) when the next request cannot be found.
 */
static int
pipe_bytes(FILE *f, const char *req, const char *key, const char *n,
    int *end, void **buf, uint64_t *len)
{
	*buf = NULL;
	if (spirt_parse_u64(len, n, 0, (uint64_t)1 << 40)) {
		warnx_("pipe: %s %.40s: length \"%.40s\": not a number in "
		    "0..%llu", req, key, n, (unsigned long long)1 << 40);
		*end = SPIRT_EINVAL;    /* where the next request starts? */
		return answer(SPIRT_EX_USAGE, 0);
	}
	if ((*buf = malloc(*len ? *len : 1)) == NULL) {
		*end = ENOMEM;          /* its bytes are not read */
		return refuse(ENOMEM, key);
	}
	if (fread(*buf, 1, *len, f) != *len) {
		free(*buf);
		*buf = NULL;
		*end = ferror(f) ? EIO : SPIRT_ETRUNC;
		return refuse(*end, key);
	}
	return 0;
}

/* "put key length", then length bytes: one record, read whole first */
static int
pipe_put(struct spirt_store *s, FILE *f, const char *key, const char *n,
    int *end)
{
	uint64_t len;
	void *buf;
	int rc;

	if ((rc = pipe_bytes(f, "put", key, n, end, &buf, &len)) ||
	    buf == NULL)
		return rc;
	if ((rc = spirt_tensor_decode(&in.t, &in.pl, buf, len, 1)) == 0)
		rc = spirt_store_write(s, put_txn, (void *)key);
	free(buf);
	return rc ? refuse(rc, key) : answer(0, 0);
}

/*
 * "putf32 key length step origin samples loss revision name", then length
 * bytes: a vector of float32s (little-endian), stored as the record that
 * metadata makes, encoded and checksummed here (a gradient: the function
 * sends its raw bytes).  revision "-" for none; name the rest of the line.
 * The bytes are read before anything is checked but the length, so a
 * refusal leaves the next request where it starts.
 */
static int
pipe_putf32(struct spirt_store *s, FILE *f, char *line, int *end)
{
	static const char *what[6] = { "key", "length", "step", "origin",
	    "samples", "loss" };
	static const uint64_t max[3] = { SPIRT_NOSTEP - 1,
	    SPIRT_NOORIGIN - 1, UINT64_MAX };
	struct spirt_tensor t;
	uint64_t len, v[3], rev = SPIRT_NOREVISION, n;
	char *w[7], *name, *p = line;
	const char *bad = NULL;
	double loss = 0;
	void *vbuf;
	float *buf;
	int rc;

	for (int i = 0; i < 7; i++) {
		w[i] = p;
		if ((p = strchr(p, ' ')) == NULL) {
			warnx_("pipe: putf32: expected key length step origin "
			    "samples loss revision name");
			*end = SPIRT_EINVAL;    /* bytes may follow */
			return answer(SPIRT_EX_USAGE, 0);
		}
		*p++ = '\0';
	}
	name = p;
	if ((rc = pipe_bytes(f, "putf32", w[0], w[1], end, &vbuf, &len)) ||
	    vbuf == NULL)
		return rc;
	buf = vbuf;
	if (spirt_key_check(w[0]))
		bad = what[0];
	else if (len % 4)
		bad = what[1];
	for (int i = 0; !bad && i < 3; i++)
		if (spirt_parse_u64(&v[i], w[2 + i], 0, max[i]))
			bad = what[2 + i];
	if (!bad && spirt_parse_double(&loss, w[5], -DBL_MAX, DBL_MAX))
		bad = what[5];
	if (!bad && strcmp(w[6], "-") &&
	    spirt_parse_u64(&rev, w[6], 0, SPIRT_NOREVISION - 1))
		bad = "revision";
	n = len / 4;
	if (!bad && (spirt_tensor_init(&t, SPIRT_F32, 1, &n) ||
	    spirt_tensor_set_name(&t, name)))
		bad = "name";
	if (bad) {
		free(buf);
		warnx_("pipe: putf32 %.40s: invalid %s", w[0], bad);
		return answer(SPIRT_EX_USAGE, 0);
	}
	if (spirt_count_nonfinite_f32(buf, n)) {
		free(buf);
		warnx_("pipe: putf32 %s: values not finite", w[0]);
		return answer(SPIRT_EX_DATAERR, 0);
	}
	t.step = v[0];
	t.origin = (uint32_t)v[1];
	t.samples = v[2];
	t.loss = loss;
	spirt_tensor_set_revision(&t, rev);
	in.t = t;
	in.pl = buf;
	rc = spirt_store_write(s, put_txn, w[0]);
	free(buf);
	return rc ? refuse(rc, w[0]) : answer(0, 0);
}

/* one request line (no LF), split in place at its spaces */
static int
pipe_request(struct spirt_store *s, FILE *f, char *line, int *end)
{
	char *w[8];
	int n = 0, get, put;

	if (!strncmp(line, "putf32 ", 7))
		return pipe_putf32(s, f, line + 7, end);
	for (char *p = line; n < 8; n++) {
		w[n] = p;
		if ((p = strchr(p, ' ')) == NULL) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	get = n == 2 && !strcmp(w[0], "get");
	put = n == 3 && !strcmp(w[0], "put");
	if (n == 6 && !strcmp(w[0], "batch"))
		return pipe_batch(s, w + 1);
	if (!get && !put) {
		warnx_("pipe: \"%.40s\": expected get key, put key length or "
		    "batch step worker batch seed dataset", w[0]);
		if (!strcmp(w[0], "put"))       /* bytes may follow */
			*end = SPIRT_EINVAL;
		return answer(SPIRT_EX_USAGE, 0);
	}
	if (spirt_key_check(w[1])) {
		warnx_("pipe: %s: invalid key \"%.40s\"", w[0], w[1]);
		if (put)
			*end = SPIRT_EINVAL;
		return answer(SPIRT_EX_USAGE, 0);
	}
	return get ? pipe_get(s, w[1]) : pipe_put(s, f, w[1], w[2], end);
}

/*
 * Requests until the end of stdin: 0 then, whatever the answers' codes.
 * A put whose bytes cannot be read, or found, ends it with its code.
 */
static int
pipe_run(struct spirt_store *s, int argc, char **argv, const char **act)
{
	char line[PIPE_LINE + 1];
	int end = 0, rc = 0;

	(void)argc;
	(void)argv;
	if (!o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal; use -f to force");
	*act = "stdout";
	bsel.keep = 1;          /* a shard hashed whole once (batch.c) */
	/* a warm process: each request's blocks (the batch, the put's
	 * record, LMDB's pages of it) kept for the next, no page faults */
	spirt_serve_init();
	while (!end && rc == 0 && fgets(line, sizeof line, stdin)) {
		size_t len = strlen(line);

		if (len == 0 || line[len - 1] != '\n') {
			int c = 0;

			if (len < PIPE_LINE) {  /* the input's last bytes */
				warnx_("pipe: no newline at the end of input");
				rc = answer(SPIRT_EX_USAGE, 0);
				break;
			}
			while ((c = getchar()) != EOF && c != '\n')
				;
			warnx_("pipe: request longer than %d bytes",
			    PIPE_LINE - 1);
			rc = answer(SPIRT_EX_USAGE, 0);
			continue;
		}
		line[len - 1] = '\0';
		rc = pipe_request(s, stdin, line, &end);
	}
	if (rc == 0 && end) {
		*act = NULL;    /* said with the refusal */
		return end;
	}
	if (rc == 0 && ferror(stdin)) {
		*act = "stdin";
		return EIO;
	}
	return rc;
}

/* prune: <prefix><n> and <prefix><n>/... with n below -t, one txn */
static int
prune_txn(struct spirt_txn *txn, void *arg)
{
	size_t *total = arg, n;
	int rc;

	*total = 0;
	for (int i = 0; i < in.nkeys; i++) {
		if ((rc = spirt_store_del_steps(txn, in.keys[i], o.step, &n)))
			return rc;
		*total += n;
	}
	return 0;
}

static int
prune_prep(int argc, char **argv, const char **act)
{
	(void)argc;
	(void)argv;
	(void)act;
	if (o.step == SPIRT_NOSTEP)
		die(SPIRT_EX_USAGE, "prune: which steps? give -t step");
	return 0;
}

static int
prune_run(struct spirt_store *s, int argc, char **argv, const char **act)
{
	size_t n;
	int rc;

	in.keys = argv;
	in.nkeys = argc;
	*act = spirt_store_location(s);
	if ((rc = spirt_store_write(s, prune_txn, &n)) == 0)
		info("%zu key%s of steps below %llu removed", n,
		    n == 1 ? "" : "s", (unsigned long long)o.step);
	return rc;
}

/* persist: volatile values (spirt-update --checkpoint) made durable */
static int
persist_run(struct spirt_store *s, int argc, char **argv, const char **act)
{
	size_t n;
	int rc;

	for (int i = 0; i < (argc ? argc : 1); i++) {
		*act = argc ? argv[i] : "persist";
		if ((rc = spirt_store_persist(s, argc ? argv[i] : "", &n)))
			return rc;
		info("%s: %zu volatile value%s made durable",
		    argc ? argv[i] : "all keys", n, n == 1 ? "" : "s");
	}
	return 0;
}

#define ANY 1000
#define NOSTORE 0x100

static const struct cmd {
	const char *name;
	int min, max;           /* operands */
	int keys;               /* how many leading operands are keys */
	unsigned open;          /* spirt_store_open flags, or NOSTORE */
	int (*prep)(int, char **, const char **);
	int (*run)(struct spirt_store *, int, char **, const char **);
} cmds[] = {
	{ "batch", 0, 0, 0, SPIRT_STORE_RDONLY, batch_prep, batch_run },
	{ "export", 1, 2, 1, SPIRT_STORE_RDONLY, NULL, export_run },
	{ "get", 1, 1, 1, SPIRT_STORE_RDONLY, NULL, get_run },
	{ "import", 2, 2, 1, SPIRT_STORE_CREATE, import_prep, put_run },
	{ "inspect", 0, ANY, 0, NOSTORE, NULL, NULL },
	{ "ls", 0, 1, 0, SPIRT_STORE_RDONLY, NULL, ls_run },
	{ "persist", 0, ANY, 0, 0, NULL, persist_run },
	{ "pipe", 0, 0, 0, 0, NULL, pipe_run },
	{ "prune", 1, ANY, 0, 0, prune_prep, prune_run },
	{ "put", 1, 2, 1, SPIRT_STORE_CREATE, put_prep, put_run },
	{ "rm", 1, ANY, ANY, 0, NULL, rm_run },
	{ "show", 1, ANY, ANY, SPIRT_STORE_RDONLY, NULL, show_run },
	{ "stat", 0, 0, 0, SPIRT_STORE_RDONLY, NULL, stat_run },
};

int
main(int argc, char **argv)
{
	const struct cmd *c = NULL;
	struct spirt_store *s = NULL;
	const char *act = "";
	int rc = 0;

	progname = "spirt-store";
	checkfds();
	parent_watch();
	store_env();

	/* options before and after the command */
	options(argc, argv);
	argc -= optind;
	argv += optind;
	for (size_t i = 0; argc > 0 && i < sizeof cmds / sizeof *cmds; i++)
		if (!strcmp(argv[0], cmds[i].name))
			c = &cmds[i];
	if (!c)
		usage(1);
	optind = 1;
	options(argc, argv);
	argc -= optind;
	argv += optind;
	if (argc < c->min || argc > c->max)
		usage(1);
	if (o.spec && strcmp(c->name, "import") != 0) {
		warnx_("--spec makes a model on import only");
		usage(1);
	}
	if ((o.batch || o.dataset || o.out || o.seed || o.worker || o.npy) &&
	    strcmp(c->name, "batch") != 0) {
		warnx_("-b, -d, -o, -S, -w and --npy are batch's options");
		usage(1);
	}
	for (int i = 0; i < argc && i < c->keys; i++)
		if (spirt_key_check(argv[i]))
			die(SPIRT_EX_USAGE, "invalid key \"%s\"", argv[i]);
	o.store = opt_env(o.store, "SPIRT_STORE", "spirt.db");

	if (c->open == NOSTORE) {       /* inspect: record streams */
		int err = 0;
		for (int i = 0; i < (argc ? argc : 1); i++)
			if ((rc = inspect(argc ? argv[i] : "-")) && !err)
				err = rc;       /* reported; go on with the rest */
		return fshut_stdout(spirt_exit(err));
	}
	/* read inputs before touching the store: nothing half-written */
	if (c->prep && (rc = c->prep(argc, argv, &act)))
		goto out;
	act = o.store;
	if ((rc = spirt_store_open(&s, o.store, c->open)))
		goto out;
	rc = c->run(s, argc, argv, &act);

out:
	/* act may be the store's location: said before the store goes */
	if (rc && act)
		warnrc(rc, "%s", act);
	spirt_store_close(s);
	free(in.buf);
	spirt_batch_data_free(&bdata);
	spirt_batch_free(&bsel);
	if (rc == EPIPE)
		return SPIRT_EX_IOERR;
	return fshut_stdout(spirt_exit(rc));
}
