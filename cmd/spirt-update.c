/* spirt-update.c - apply an aggregated gradient to model@t: model@t+1, once */
#define _DEFAULT_SOURCE         /* madvise, MADV_HUGEPAGE */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "io.h"
#include "optim.h"
#include "parse.h"
#include "serve.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

#define USAGE \
"usage: spirt-update [-iqv] [-k keep] [-m model] [-o file] [-p file]\n" \
"                    [-r lr] [-s store] [-t step] [--opt name]\n" \
"                    [--momentum mu] [--nesterov] [--beta1 b] [--beta2 b]\n" \
"                    [--eps e] [--wd w]\n" \
"                    [--schedule name] [--lr-every n] [--lr-gamma g]\n" \
"                    [--lr-total n] [--lr-min lr] [file]\n"

#define MAXDEL 4096     /* old versions removed by one --keep */

static struct {
	struct spirt_optim op;
	const char *store, *model, *file, *params, *out;
	uint64_t step, keep;
	int told, done, serve;
	char (*del)[SPIRT_KEY_MAX + 1];  /* prune(): kept for reuse */
	/* the aggregate when it comes from a file or stdin */
	struct spirt_tensor at;
	void *apl;
	char aname[64];
	double work_ms;
	uint64_t k;
} o = { .step = SPIRT_NOSTEP };

#define TELLX(...) (o.told = 1, warnx_(__VA_ARGS__))
#define TELLRC(...) (o.told = 1, warnrc(__VA_ARGS__))

static _Noreturn void
usage(int code)
{
	fputs(USAGE, code ? stderr : stdout);
	if (!code)
		fputs("\n"
		    "  -i, --serve         warm: one -t run per step line on "
		    "stdin\n"
		    "  -k, --keep K        keep the last K model versions "
		    "(0: all)\n"
		    "  -m, --model NAME    model/NAME@<step> in the store\n"
		    "  -o, --output FILE   with -p: write the new model file "
		    "there (- = stdout)\n"
		    "  -p, --params FILE   take model@t (and state) from a "
		    "model file\n"
		    "  -q, --quiet         no notes\n"
		    "  -r, --lr LR         learning rate\n"
		    "  -s, --store PATH    store (default $SPIRT_STORE or "
		    "./spirt.db)\n"
		    "  -t, --step N        update model@N with agg/N\n"
		    "  -v, --verbose       report timings\n"
		    "      --opt NAME      sgd momentum adam adamw\n"
		    "      --momentum MU   momentum factor\n"
		    "      --nesterov      Nesterov momentum\n"
		    "      --beta1 B       Adam first-moment decay\n"
		    "      --beta2 B       Adam second-moment decay\n"
		    "      --eps E         Adam denominator term\n"
		    "      --wd W          weight decay\n"
		    "      --schedule S    constant step cosine\n"
		    "      --lr-every N    step schedule: decay period\n"
		    "      --lr-gamma G    step schedule: decay factor\n"
		    "      --lr-total N    cosine schedule: steps to --lr-min\n"
		    "      --lr-min LR     cosine schedule: final lr\n"
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

/* the highest step of model/<name>@<step> */
static int
latest(void *arg, const char *key, const void *val, size_t len)
{
	uint64_t t;

	(void)val;
	(void)len;
	if (spirt_parse_u64(&t, strrchr(key, '@') + 1, 0, SPIRT_NOSTEP - 1)
	    == 0 && (o.step == SPIRT_NOSTEP || t > o.step))
		o.step = t;
	(void)arg;
	return 0;
}

struct old {
	char (*keys)[SPIRT_KEY_MAX + 1];
	size_t n;
	uint64_t below;
};

/* collect <prefix><step> keys with step < below */
static int
oldone(void *arg, const char *key, const void *val, size_t len)
{
	struct old *d = arg;
	uint64_t t;

	(void)val;
	(void)len;
	if (spirt_parse_u64(&t, strrchr(key, '@') + 1, 0, SPIRT_NOSTEP - 1)
	    || t >= d->below)
		return 0;
	if (d->n == MAXDEL)
		return 0;       /* the rest goes next time */
	snprintf(d->keys[d->n++], sizeof d->keys[0], "%s", key);
	return 0;
}

static int
prune(struct spirt_txn *txn, uint64_t newest)
{
	struct old d;
	char prefix[SPIRT_KEY_MAX + 1];
	const char *ns[2] = { "model", "opt" };
	int rc = 0;

	if (o.keep == 0 || newest + 1 <= o.keep)
		return 0;
	/* a warm process reuses the list: not 2 MiB malloc'ed per step */
	if (o.del == NULL && (o.del = malloc(MAXDEL * sizeof *o.del)) == NULL)
		return ENOMEM;
	d.keys = o.del;
	d.below = newest + 1 - o.keep;
	for (int i = 0; i < 2 && !rc; i++) {
		d.n = 0;
		snprintf(prefix, sizeof prefix, "%s/%s@", ns[i], o.model);
		rc = spirt_store_list(txn, prefix, oldone, &d);
		for (size_t k = 0; k < d.n && !rc; k++)
			rc = spirt_store_del(txn, d.keys[k]);
	}
	return rc;
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

/* *p as an aligned float pointer: itself, or a copy in *own */
static int
view(const void **p, size_t n, void **own)
{
	if (spirt_aligned(*p, SPIRT_F32))
		return 0;
	if ((*own = malloc(n ? n : 1)) == NULL)
		return ENOMEM;
	memcpy(*own, *p, n);
	*p = *own;
	return 0;
}

/* One write transaction: model@t, agg/t, opt@t in; model@t+1, opt@t+1
 * out; old versions pruned.  Rerun from scratch when the map grows. */
static int
update(struct spirt_txn *txn, void *arg)
{
	struct spirt_tensor mt, at, st, nt, ot;
	const void *mpl, *apl, *spl = NULL, *v;
	char mkey[SPIRT_KEY_MAX + 1], nkey[SPIRT_KEY_MAX + 1];
	char akey[64], skey[SPIRT_KEY_MAX + 1], okey[SPIRT_KEY_MAX + 1];
	const char *aname = akey, *oname = spirt_optim_name(o.op.kind);
	unsigned ns = spirt_optim_nstate(o.op.kind);
	unsigned char *dst, *ndst;
	float *theta, *state;
	size_t nlen;
	int both;
	void *own[5] = { NULL };
	uint64_t t = o.step, dims[2];
	size_t len;
	double t0 = now_ms();
	int rc;

	(void)arg;
	o.done = 0;
	snprintf(mkey, sizeof mkey, "model/%s@%llu", o.model,
	    (unsigned long long)t);
	snprintf(nkey, sizeof nkey, "model/%s@%llu", o.model,
	    (unsigned long long)t + 1);
	snprintf(skey, sizeof skey, "opt/%s@%llu", o.model,
	    (unsigned long long)t);
	snprintf(okey, sizeof okey, "opt/%s@%llu", o.model,
	    (unsigned long long)t + 1);
	snprintf(akey, sizeof akey, "agg/%llu", (unsigned long long)t);

	/* exactly once: model@t+1 is the proof that step t was applied */
	if (spirt_store_get(txn, nkey, &v, &len) == 0) {
		o.done = 1;
		return SPIRT_EDONE;
	}
	if ((rc = spirt_store_get_tensor(txn, mkey, &mt, &mpl, 0))) {
		TELLRC(rc, "%s", mkey);
		return rc;
	}
	if (o.apl) {
		at = o.at;
		apl = o.apl;
		aname = o.aname;
	} else if ((rc = spirt_store_get_tensor(txn, akey, &at, &apl, 0))) {
		TELLRC(rc, "%s", akey);
		return rc;
	}
	if (mt.dtype != SPIRT_F32 || at.dtype != SPIRT_F32) {
		TELLX("%s: dtype %s, not f32", mt.dtype != SPIRT_F32 ? mkey :
		    aname, spirt_dtype_name(mt.dtype != SPIRT_F32 ? mt.dtype :
		    at.dtype));
		return SPIRT_EDTYPE;
	}
	if (at.nelem != mt.nelem) {
		TELLX("%s: %llu values, %s has %llu: shapes differ", aname,
		    (unsigned long long)at.nelem, mkey,
		    (unsigned long long)mt.nelem);
		return SPIRT_ESHAPE;
	}
	if (at.step != SPIRT_NOSTEP && at.step != t) {
		TELLX("%s: step %llu, not %llu", aname,
		    (unsigned long long)at.step, (unsigned long long)t);
		return SPIRT_ESTEP;
	}
	if (strcmp(at.name, mt.name) != 0) {
		TELLX("%s: model \"%s\", %s is \"%s\"", aname, at.name, mkey,
		    mt.name);
		return SPIRT_EMODEL;
	}
	/* optimiser state at t, if any (a fresh state otherwise) */
	o.k = 0;
	rc = spirt_store_get_tensor(txn, skey, &st, &spl, 0);
	if (rc == 0) {
		if (strcmp(st.name, oname) != 0) {
			TELLX("%s: %s state, not %s", skey, st.name, oname);
			return SPIRT_EDATA;
		}
		if (st.dtype != SPIRT_F32 || st.rank != 2 ||
		    st.dims[0] != ns || st.dims[1] != mt.nelem) {
			TELLX("%s: shape does not fit %s", skey, mkey);
			return SPIRT_ESHAPE;
		}
		o.k = st.count;
	} else if (rc == SPIRT_ENOTFOUND) {
		spl = NULL;
	} else {
		TELLRC(rc, "%s", skey);
		return rc;
	}

	/* small values sit at 2-byte offsets in LMDB leaves: copy those */
	if ((rc = view(&mpl, mt.nbytes, &own[0])) ||
	    (rc = view(&apl, at.nbytes, &own[1])) ||
	    (spl && (rc = view(&spl, st.nbytes, &own[2]))))
		goto fail;

	/*
	 * opt@t+1 and model@t+1 are reserved in the map and filled in one
	 * pass.  LMDB wants a reserved value filled before the next update;
	 * a value larger than a page sits on its own overflow pages, which a
	 * later put does not move, and this txn's dirty pages stay in memory
	 * while it stays well below LMDB's dirty-page limit (2^17 pages).  So
	 * two large values are reserved together when they total less than
	 * 256 MiB; otherwise theta' goes through a buffer and a put.  A
	 * small state (sgd: none) is finished before model@t+1 is reserved.
	 */
	dims[0] = ns;
	dims[1] = mt.nelem;
	if ((rc = spirt_tensor_init(&ot, SPIRT_F32, 2, dims)) ||
	    (rc = spirt_tensor_set_name(&ot, oname)))
		goto fail;
	ot.step = t + 1;
	ot.count = (uint32_t)(o.k + 1);
	nt = mt;
	nt.step = t + 1;
	nt.count = 0;
	len = spirt_tensor_reclen(&ot);
	nlen = spirt_tensor_reclen(&nt);
	both = ot.nbytes > 8192 && mt.nbytes > 8192 &&
	    len + nlen < ((size_t)256 << 20);
	if ((rc = spirt_store_reserve(txn, okey, len, (void **)&dst,
	    SPIRT_PUT_NOOVERWRITE)) ||
	    (rc = spirt_tensor_pack_header(dst, len, &ot)))
		goto fail;
	hugepages(dst, len);
	state = (float *)(void *)(dst + ot.hdrlen);
	if (ns == 0) {
		spirt_tensor_pack_trailer(dst + ot.hdrlen, &ot, state);
		both = mt.nbytes > 8192;
	} else if (!spirt_aligned(state, SPIRT_F32) && (state = own[3] =
	    malloc(ot.nbytes)) == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	theta = NULL;
	if (both) {
		if ((rc = spirt_store_reserve(txn, nkey, nlen, (void **)&ndst,
		    SPIRT_PUT_NOOVERWRITE)) ||
		    (rc = spirt_tensor_pack_header(ndst, nlen, &nt)))
			goto fail;
		hugepages(ndst, nlen);
		theta = (float *)(void *)(ndst + nt.hdrlen);
		if (!spirt_aligned(theta, SPIRT_F32))
			theta = NULL;
	}
	if (theta == NULL && (theta = own[4] = malloc(mt.nbytes ?
	    mt.nbytes : 1)) == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	rc = spirt_optim_step(theta, state, mpl, spl, apl, mt.nelem, &o.op,
	    t, o.k);
	if (rc == SPIRT_ENAN) {
		TELLX("%s: NaN or Inf in the gradient or the new model",
		    aname);
		goto fail;
	}
	if (ns) {
		if (state != (void *)(dst + ot.hdrlen))
			memcpy(dst + ot.hdrlen, state, ot.nbytes);
		spirt_tensor_pack_trailer(dst + ot.hdrlen + ot.nbytes, &ot,
		    dst + ot.hdrlen);
	}
	if (both) {
		if (theta != (void *)(ndst + nt.hdrlen))
			memcpy(ndst + nt.hdrlen, theta, nt.nbytes);
		spirt_tensor_pack_trailer(ndst + nt.hdrlen + nt.nbytes, &nt,
		    ndst + nt.hdrlen);
	} else if ((rc = spirt_store_put_tensor(txn, nkey, &nt, theta,
	    SPIRT_PUT_NOOVERWRITE))) {
		goto fail;
	}
	if ((rc = prune(txn, t + 1)))
		goto fail;
	o.work_ms = now_ms() - t0;
fail:
	for (int i = 0; i < 5; i++)
		free(own[i]);
	if (rc && rc != MDB_MAP_FULL && !o.told)
		TELLRC(rc, "%s", nkey);
	return rc;
}

/* read the aggregate record from file ("-": stdin): exactly one record */
static int
readagg(const char *path)
{
	struct spirt_tensor extra;
	void *pl;
	int fd = 0, rc;

	const char *nm = strcmp(path, "-") ? path : "stdin";
	size_t n = strlen(nm);

	/* not snprintf: gcc -O1 sees a NULL %s argument that cannot be */
	if (n >= sizeof o.aname)
		n = sizeof o.aname - 1;
	memcpy(o.aname, nm, n);
	o.aname[n] = 0;
	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) < 0) {
		rc = errno;
		TELLRC(rc, "open %s", path);
		return rc;
	}
	rc = spirt_tensor_read(fd, &o.at, &o.apl, 0);
	if (rc == SPIRT_EOF) {
		TELLX("%s: empty input", o.aname);
		rc = SPIRT_ETRUNC;
	} else if (rc) {
		TELLRC(rc, "%s", o.aname);
	} else if ((rc = spirt_tensor_read(fd, &extra, &pl, 0)) == SPIRT_EOF) {
		rc = 0;
	} else {
		if (rc == 0)
			free(pl);
		TELLX("%s: more than one record", o.aname);
		rc = SPIRT_EDATA;
	}
	if (fd > 0)
		close(fd);
	return rc;
}

/* -v: what was written, with timings */
static void
timings(double t0)
{
	if (spirt_verbose)
		fprintf(stderr, "%s: %s%s%s%llu: %s, lr %g, state step %llu:"
		    " work %.3f ms, total %.3f ms\n", progname,
		    o.params ? "" : "model/", o.params ? o.out : o.model,
		    o.params ? ": step " : "@", (unsigned long long)o.step + 1,
		    spirt_optim_name(o.op.kind), spirt_optim_lr(&o.op, o.step),
		    (unsigned long long)o.k + 1, o.work_ms, now_ms() - t0);
}

/* ---- files instead of the store (-p, -o) ---- */

/*
 * Read the model file: the model record, then optionally the optimiser
 * state; nothing else.  m, st (out) get the headers, *mpl, *spl fresh buffers
 * (*spl NULL when there is no state).
 */
static int
readparams(const char *path, struct spirt_tensor *m, void **mpl,
    struct spirt_tensor *st, void **spl)
{
	struct spirt_tensor extra;
	void *pl;
	int fd = 0, rc;

	*mpl = *spl = NULL;
	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) < 0) {
		rc = errno;
		TELLRC(rc, "open %s", path);
		return rc;
	}
	if ((rc = spirt_tensor_read(fd, m, mpl, 0)) == SPIRT_EOF) {
		TELLX("%s: empty input", path);
		rc = SPIRT_ETRUNC;
	} else if (rc) {
		TELLRC(rc, "%s: record 1", path);
	} else if ((rc = spirt_tensor_read(fd, st, spl, 0)) == SPIRT_EOF) {
		rc = 0;
	} else if (rc) {
		TELLRC(rc, "%s: record 2", path);
	} else if ((rc = spirt_tensor_read(fd, &extra, &pl, 0)) ==
	    SPIRT_EOF) {
		rc = 0;
	} else {
		if (rc == 0)
			free(pl);
		TELLX("%s: more than two records (model, state)", path);
		rc = SPIRT_EDATA;
	}
	if (fd > 0)
		close(fd);
	return rc;
}

/*
 * Store-free update: model (and state) from -p, the aggregate from the
 * operand or stdin, model@t+1 (and state) as a record stream to -o.
 */
static int
filemode(void)
{
	struct spirt_tensor mt, st, ot;
	struct spirt_publish pub;
	void *mpl = NULL, *spl = NULL, *state = NULL;
	const char *oname = spirt_optim_name(o.op.kind);
	const char *mname = strcmp(o.params, "-") ? o.params : "stdin";
	unsigned ns = spirt_optim_nstate(o.op.kind);
	uint64_t dims[2], t;
	double t0 = now_ms();
	int rc, fd = 1;

	if ((rc = readparams(o.params, &mt, &mpl, &st, &spl)))
		goto out;
	t = mt.step;
	rc = SPIRT_EDTYPE;
	if (mt.dtype != SPIRT_F32 || o.at.dtype != SPIRT_F32) {
		TELLX("%s: dtype %s, not f32", mt.dtype != SPIRT_F32 ? mname :
		    o.aname, spirt_dtype_name(mt.dtype != SPIRT_F32 ?
		    mt.dtype : o.at.dtype));
		goto out;
	}
	rc = SPIRT_ESTEP;
	if (t == SPIRT_NOSTEP || t >= SPIRT_NOSTEP - 1 ||
	    (o.step != SPIRT_NOSTEP && t != o.step)) {
		TELLX("%s: model step %lld, not %lld", mname, (long long)t,
		    (long long)o.step);
		goto out;
	}
	if (o.at.step != SPIRT_NOSTEP && o.at.step != t) {
		TELLX("%s: step %llu, not %llu", o.aname,
		    (unsigned long long)o.at.step, (unsigned long long)t);
		goto out;
	}
	rc = SPIRT_ESHAPE;
	if (o.at.nelem != mt.nelem) {
		TELLX("%s: %llu values, %s has %llu: shapes differ", o.aname,
		    (unsigned long long)o.at.nelem, mname,
		    (unsigned long long)mt.nelem);
		goto out;
	}
	rc = SPIRT_EMODEL;
	if (strcmp(o.at.name, mt.name) != 0) {
		TELLX("%s: model \"%s\", %s is \"%s\"", o.aname, o.at.name,
		    mname, mt.name);
		goto out;
	}
	o.k = 0;
	if (spl) {
		rc = SPIRT_EDATA;
		if (strcmp(st.name, oname) != 0) {
			TELLX("%s: record 2: %s state, not %s", mname, st.name,
			    oname);
			goto out;
		}
		rc = SPIRT_ESHAPE;
		if (st.dtype != SPIRT_F32 || st.rank != 2 ||
		    st.dims[0] != ns || st.dims[1] != mt.nelem) {
			TELLX("%s: record 2: shape does not fit the model",
			    mname);
			goto out;
		}
		o.k = st.count;
	}
	dims[0] = ns;
	dims[1] = mt.nelem;
	if ((rc = spirt_tensor_init(&ot, SPIRT_F32, 2, dims)) ||
	    (rc = spirt_tensor_set_name(&ot, oname)))
		goto out;
	ot.step = t + 1;
	ot.count = (uint32_t)(o.k + 1);
	/* in place: the buffers read are the buffers written */
	state = spl;
	if (ns && state == NULL && (state = calloc(ot.nelem, 4)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	rc = spirt_optim_step(mpl, state, mpl, state, o.apl, mt.nelem, &o.op,
	    t, o.k);
	if (rc == SPIRT_ENAN) {
		TELLX("%s: NaN or Inf in the gradient or the new model",
		    o.aname);
		goto out;
	}
	o.step = t;
	mt.step = t + 1;
	mt.count = 0;
	o.work_ms = now_ms() - t0;
	if (strcmp(o.out, "-") != 0) {
		if ((rc = spirt_publish_open(&pub, o.out, 0644))) {
			TELLRC(rc, "%s", o.out);
			goto out;
		}
		fd = pub.fd;
	}
	if (!(rc = spirt_tensor_write(fd, &mt, mpl)) && ns)
		rc = spirt_tensor_write(fd, &ot, state);
	if (fd != 1)
		rc = rc ? (spirt_publish_abort(&pub), rc) :
		    spirt_publish_commit(&pub);
	if (rc && rc != EPIPE)
		TELLRC(rc, "%s", strcmp(o.out, "-") ? o.out : "stdout");
out:
	if (state != spl)
		free(state);
	free(spl);
	free(mpl);
	return rc;
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
		{ "--lr", "SPIRT_LR", &o.op.lr, NULL, 0, 1e6 },
		{ "--momentum", "SPIRT_MOMENTUM", &o.op.momentum, NULL, 0,
		    0.999999 },
		{ "--beta1", "SPIRT_BETA1", &o.op.beta1, NULL, 0, 0.999999 },
		{ "--beta2", "SPIRT_BETA2", &o.op.beta2, NULL, 0, 0.999999999 },
		{ "--eps", "SPIRT_EPS", &o.op.eps, NULL, 1e-30, 1 },
		{ "--wd", "SPIRT_WD", &o.op.wd, NULL, 0, 1e6 },
		{ "--lr-every", "SPIRT_LR_EVERY", NULL, &o.op.every, 1,
		    1e18 },
		{ "--lr-gamma", "SPIRT_LR_GAMMA", &o.op.gamma, NULL, 1e-12,
		    1 },
		{ "--lr-total", "SPIRT_LR_TOTAL", NULL, &o.op.total, 1,
		    1e18 },
		{ "--lr-min", "SPIRT_LR_MIN", &o.op.lr_min, NULL, 0, 1e6 },
		{ "--keep", "SPIRT_KEEP", NULL, &o.keep, 0, 1e18 },
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
	enum { LR, MOM, B1, B2, EPS, WD, EVERY, GAMMA, TOTAL, LRMIN, KEEP,
	    NHYPER, OPT = 256, NESTEROV, SCHED };
	static const struct option lo[] = {
		{ "beta1", required_argument, NULL, 256 + 16 + B1 },
		{ "beta2", required_argument, NULL, 256 + 16 + B2 },
		{ "eps", required_argument, NULL, 256 + 16 + EPS },
		{ "help", no_argument, NULL, 'h' },
		{ "keep", required_argument, NULL, 'k' },
		{ "lr", required_argument, NULL, 'r' },
		{ "lr-every", required_argument, NULL, 256 + 16 + EVERY },
		{ "lr-gamma", required_argument, NULL, 256 + 16 + GAMMA },
		{ "lr-min", required_argument, NULL, 256 + 16 + LRMIN },
		{ "lr-total", required_argument, NULL, 256 + 16 + TOTAL },
		{ "model", required_argument, NULL, 'm' },
		{ "momentum", required_argument, NULL, 256 + 16 + MOM },
		{ "nesterov", no_argument, NULL, NESTEROV },
		{ "opt", required_argument, NULL, OPT },
		{ "output", required_argument, NULL, 'o' },
		{ "params", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "schedule", required_argument, NULL, SCHED },
		{ "serve", no_argument, NULL, 'i' },
		{ "step", required_argument, NULL, 't' },
		{ "store", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "wd", required_argument, NULL, 256 + 16 + WD },
		{ NULL, 0, NULL, 0 }
	};
	const char *val[NHYPER] = { NULL }, *kind = NULL, *sched = NULL, *v;
	int c, nesterov = 0;

	spirt_optim_defaults(&o.op);
	while ((c = getopt_long(argc, argv, "hik:m:o:p:qr:s:t:vV", lo, NULL))
	    != -1)
		switch (c) {
		case 'h': usage(0);
		case 'i': o.serve = 1; break;
		case 'k': val[KEEP] = optarg; break;
		case 'm': o.model = optarg; break;
		case 'o': o.out = optarg; break;
		case 'p': o.params = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'r': val[LR] = optarg; break;
		case 's': o.store = optarg; break;
		case 't': o.step = eparse_u64("-t", optarg, 0,
			    SPIRT_NOSTEP - 2); break;
		case 'v': spirt_verbose++; break;
		case 'V': print_version();
		case OPT: kind = optarg; break;
		case NESTEROV: nesterov = 1; break;
		case SCHED: sched = optarg; break;
		default:
			if (c >= 256 + 16 && c < 256 + 16 + NHYPER) {
				val[c - 256 - 16] = optarg;
				break;
			}
			usage(1);
		}
	hyper(val);
	kind = opt_env(kind, "SPIRT_OPT", "sgd");
	if (!(o.op.kind = spirt_optim_parse(kind))) {
		warnx_("--opt: unknown optimiser \"%s\"", kind);
		usage(1);
	}
	sched = opt_env(sched, "SPIRT_SCHEDULE", "constant");
	if (!(o.op.schedule = spirt_optim_schedule_parse(sched))) {
		warnx_("--schedule: unknown schedule \"%s\"", sched);
		usage(1);
	}
	if ((v = getenv("SPIRT_NESTEROV")) && *v && strcmp(v, "0"))
		nesterov = 1;
	o.op.nesterov = nesterov;
	if (o.op.nesterov && o.op.kind == SPIRT_OPT_SGD)
		o.op.kind = SPIRT_OPT_MOMENTUM;
	if (spirt_optim_check(&o.op)) {
		warnx_("%s: inconsistent hyperparameters (--nesterov needs "
		    "momentum, --lr-min at most --lr)", kind);
		usage(1);
	}
	if ((o.model = opt_env(o.model, "SPIRT_MODEL", NULL)) == NULL &&
	    o.params == NULL) {
		warnx_("no model (-m or SPIRT_MODEL)");
		usage(1);
	}
}

/*
 * Warm mode: each step line on stdin is one run with -t step, in its own
 * write transaction; one answer line each.  Nothing but the open store
 * (and a scratch list) carries over between steps.  Returns the worst
 * exit code.
 */
static int
serve(struct spirt_store *s)
{
	char line[SPIRT_SERVE_LINE];
	unsigned long long t;
	int rc, code, worst = 0;

	while ((rc = spirt_serve_next(stdin, &o.step, line, sizeof line,
	    SPIRT_NOSTEP - 2)) != SPIRT_EOF) {
		t = o.step;
		if (rc == SPIRT_EINVAL || rc == ERANGE) {
			warnx_("stdin: bad step \"%s\"", line);
			code = SPIRT_EX_USAGE;
			printf("error=%d\n", code);
		} else if (rc) {
			warnrc(rc, "stdin");
			return SPIRT_EX_IOERR;
		} else if ((rc = spirt_store_write(s, update, NULL)) ==
		    SPIRT_EDONE && o.done) {
			code = 0;
			info("model/%s@%llu exists: step %llu already applied, "
			    "nothing done", o.model, t + 1, t);
			printf("step=%llu applied=already\n", t);
		} else if ((code = spirt_exit(rc)) != 0) {
			if (!o.told)
				warnrc(rc, "update");
			printf("step=%llu error=%d\n", t, code);
		} else {
			printf("step=%llu lr=%.9g\n", t,
			    spirt_optim_lr(&o.op, t));
		}
		o.told = 0;
		if (code > worst)
			worst = code;
		if (fflush(stdout) == EOF)
			return SPIRT_EX_IOERR;
	}
	return worst;
}

int
main(int argc, char **argv)
{
	struct spirt_store *s = NULL;
	struct spirt_txn *txn = NULL;
	char prefix[SPIRT_KEY_MAX + 1];
	const char *act = "open store";
	double t0 = now_ms();
	int rc, code = -1;

	progname = "spirt-update";
	checkfds();
	options(argc, argv);
	argc -= optind;
	argv += optind;
	if (argc > 1)
		usage(1);
	if (o.params && o.serve) {
		warnx_("--serve works in the store: no -p");
		usage(1);
	}
	if (o.out && !o.params) {
		warnx_("-o writes a model file: it needs -p");
		usage(1);
	}
	if (o.params) {
		if (!o.out)
			o.out = "-";
		if (strcmp(o.out, "-") == 0 && isterm(1))
			die(SPIRT_EX_USAGE, "stdout is a terminal (use -o)");
		if ((rc = readagg(argc ? argv[0] : "-")) ||
		    (rc = filemode()))
			goto fail;
		timings(t0);
		goto done;
	}
	if (o.serve && argc) {
		warnx_("--serve reads agg/<step> from the store: no file "
		    "operand");
		usage(1);
	}

	if (argc && (rc = readagg(argv[0])))
		goto fail;
	if (o.step == SPIRT_NOSTEP && o.apl && o.at.step != SPIRT_NOSTEP)
		o.step = o.at.step;
	if ((rc = spirt_store_open(&s, o.store ? o.store :
	    spirt_store_default(), 0)))
		goto fail;
	if (o.serve) {
		rc = 0;
		code = serve(s);
		goto done;
	}
	if (o.step == SPIRT_NOSTEP) {
		/* no step given: the newest model version */
		act = "find model";
		snprintf(prefix, sizeof prefix, "model/%s@", o.model);
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) ||
		    (rc = spirt_store_list(txn, prefix, latest, NULL)))
			goto fail;
		spirt_txn_abort(txn);
		txn = NULL;
		if (o.step == SPIRT_NOSTEP) {
			rc = SPIRT_ENOTFOUND;
			act = prefix;
			goto fail;
		}
	}
	act = "update";
	rc = spirt_store_write(s, update, NULL);
	if (rc == SPIRT_EDONE && o.done) {
		info("model/%s@%llu exists: step %llu already applied, "
		    "nothing done", o.model, (unsigned long long)o.step + 1,
		    (unsigned long long)o.step);
		rc = 0;
	} else if (rc) {
		goto fail;
	} else {
		timings(t0);
	}
	goto done;
fail:
	if (!o.told)
		warnrc(rc, "%s", act);
done:
	spirt_txn_abort(txn);
	spirt_store_close(s);
	free(o.apl);
	free(o.del);
	return fshut_stdout(code >= 0 ? code : spirt_exit(rc));
}
