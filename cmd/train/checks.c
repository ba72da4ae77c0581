/*
 * checks.c - spirt-train's set-up before the first step, in its front:
 * what the loop once asked of the tools (spirt-peer peers, spirt-agg
 * --check-rule, spirt-attack, spirt-store ls and show, spirt-init as a dry
 * run, spirt-shard --stats), asked of the library they call, with their
 * words: each message is the tool's first line under spirt-train's name,
 * as the loop said it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agg.h"
#include "aggstore.h"
#include "attack.h"
#include "checks.h"
#include "grad.h"
#include "keys.h"
#include "model.h"
#include "parse.h"
#include "peer/peers.h"
#include "shard.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

/*
 * die with code and "pre: " then the tool's message fmt: its first line
 * only, as the loop said a tool's message ("tool ended, saying nothing"
 * when that line is empty)
 */
static _Noreturn void
die_first(int code, const char *pre, const char *tool, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static _Noreturn void
die_first(int code, const char *pre, const char *tool, const char *fmt,
    ...)
{
	char m[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	m[strcspn(m, "\n")] = '\0';
	if (m[0] == '\0')
		die(code, "%s%s ended, saying nothing", pre, tool);
	die(code, "%s%s", pre, m);
}

/* ---- the peers ---- */

/* the field of each line but self's, blank-separated (f 0: ID:LINE; 1:
 * its location; 2: its location, if http://), as spirt-peer peers
 * assigns them */
static char *
others(const struct peerline *pl, size_t n, size_t self, int f)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < n; i++)
		len += strlen(pl[i].id) + strlen(pl[i].loc) + 24;
	s = emalloc(len);
	len = 0;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (i == self || (f == 2 &&
		    strncmp(pl[i].loc, "http://", 7) != 0))
			continue;
		if (f == 0)
			len += (size_t)sprintf(s + len, "%s%s:%zu",
			    len ? " " : "", pl[i].id, i);
		else
			len += (size_t)sprintf(s + len, "%s%s",
			    len ? " " : "", pl[i].loc);
	}
	return s;
}

static char *
copy(const char *s)
{
	return strcpy(emalloc(strlen(s) + 1), s);
}

void
train_peers(struct train_peers *p, const char *path, long long peer)
{
	struct peerline *pl;
	char m[16384];
	size_t n;
	int code;

	// (spirt-peer peers' words, their first line)
	if ((code = peers_load("--peers", path, &pl, &n, m, sizeof m)) != 0)
		die_first(code, "", "spirt-peer", "%s", m);
	if (n == 0)
		die_first(SPIRT_EX_DATAERR, "", "spirt-peer", "--peers %s: no "
		    "peer in it", path);
	if ((size_t)peer >= n)
		die_first(SPIRT_EX_USAGE, "", "spirt-peer", "--peer %lld: %s "
		    "has %zu peers (0 to %zu)", peer, path, n, n - 1);
	p->np = (long long)n;
	p->self = copy(pl[peer].id);
	p->selfurl = copy(pl[peer].loc);
	p->others = others(pl, n, (size_t)peer, 1);
	p->urls = others(pl, n, (size_t)peer, 2);
	p->oids = others(pl, n, (size_t)peer, 0);
	p->spare = 0;
	for (size_t i = 0; i < n; i++)
		p->spare |= pl[i].spare;
	free(pl);
}

/* ---- the rules: spirt-agg --check-rule's parsing and check ---- */

/* spirt-agg's words for a value it refuses (cmd/tool.c's badopt) */
static _Noreturn void
badval(const char *what, const char *opt, const char *s, int rc)
{
	char *pre = emalloc(strlen(what) + 3);

	sprintf(pre, "%s: ", what);
	die_first(SPIRT_EX_USAGE, pre, "spirt-agg", "%s: %s \"%s\"", opt,
	    rc == ERANGE ? "value out of range" : "invalid value", s);
}

static uint64_t
u64(const char *what, const char *opt, const char *s, uint64_t lo,
    uint64_t hi)
{
	uint64_t v;
	int rc;

	if ((rc = spirt_parse_u64(&v, s, lo, hi)) != 0)
		badval(what, opt, s, rc);
	return v;
}

static double
dbl(const char *what, const char *opt, const char *s, double lo, double hi)
{
	double v;
	int rc;

	if ((rc = spirt_parse_double(&v, s, lo, hi)) != 0)
		badval(what, opt, s, rc);
	return v;
}

/* the next blank-separated word of *p into w (room for cap), or 0 */
static int
word(char *w, size_t cap, const char **p)
{
	size_t n;

	*p += strspn(*p, " ");
	if ((n = strcspn(*p, " ")) == 0)
		return 0;
	snprintf(w, cap, "%.*s", (int)n, *p);
	*p += n;
	return 1;
}

void
train_rule(const char *what, const char *args, unsigned long long w)
{
	static struct spirt_aggset a;   /* (a quarter megabyte) */
	size_t n = strlen(args) + 1;
	char *o = emalloc(n), *v = emalloc(n), *rule = emalloc(n), *pre;
	const char *p = args;

	strcpy(rule, "mean");
	spirt_aggset_init(&a);
	// the options in their order, each value parsed as spirt-agg
	// parses it; the rule's name after them, as there
	while (word(o, n, &p)) {
		if (!word(v, n, &p))
			die(SPIRT_EX_SOFTWARE, "%s: %s: no value", what, o);
		if (strcmp(o, "-r") == 0)
			strcpy(rule, v);
		else if (strcmp(o, "--trim") == 0)
			a.p.trim = dbl(what, o, v, 0, 0.49999);
		else if (strcmp(o, "--byzantine") == 0)
			a.p.f = (unsigned)u64(what, o, v, 0, SPIRT_AGG_MAXW);
		else if (strcmp(o, "--select") == 0)
			a.p.m = (unsigned)u64(what, o, v, 1, SPIRT_AGG_MAXW);
		else if (strcmp(o, "--tau") == 0 && strcmp(v, "auto") == 0)
			a.p.tau_auto = 1;
		else if (strcmp(o, "--tau") == 0)
			a.p.tau = dbl(what, o, v, 1e-30, 1e30);
		else if (strcmp(o, "--iters") == 0)
			a.p.iters = (unsigned)u64(what, o, v, 1, 1000);
		else if (strcmp(o, "--bucket") == 0)
			a.p.bucket = (unsigned)u64(what, o, v, 1,
			    SPIRT_AGG_MAXW);
		else if (strcmp(o, "--seed") == 0)
			a.p.seed = u64(what, o, v, 0, UINT64_MAX);
		else if (strcmp(o, "--worker-momentum") == 0)
			a.momentum = dbl(what, o, v, 0, 0.999999);
		else
			die(SPIRT_EX_SOFTWARE, "%s: %s: not an option of the "
			    "rule", what, o);
	}
	// (spirt-agg reads its batch's variable in any case)
	u64(what, "SPIRT_BATCH", opt_env(NULL, "SPIRT_BATCH", "64"), 1,
	    1 << 20);
	pre = emalloc(strlen(what) + 3);
	sprintf(pre, "%s: ", what);
	if (!(a.p.rule = spirt_agg_rule_parse(rule)))
		die_first(SPIRT_EX_USAGE, pre, "spirt-agg", "-r: unknown rule "
		    "\"%s\"", rule);
	if (spirt_aggset_rule_check(&a, (size_t)w))
		die_first(SPIRT_EX_USAGE, pre, "spirt-agg", "%s", a.msg);
	free(pre);
	free(o);
	free(v);
	free(rule);
}

void
train_attack(const char *byz, const char *attack)
{
	struct spirt_attack a;

	if (*attack == '\0' || strcmp(attack, "labelflip") == 0)
		return;
	if (spirt_attack_parse(&a, attack) != 0)
		die(SPIRT_EX_USAGE, "--byzantine %s: unknown or malformed attack "
		    "\"%s\"", byz, attack);
}

/* ---- the model ---- */

/* the first key of the walk */
static int
first_key(void *arg, const char *key, const void *val, size_t len)
{
	(void)val;
	(void)len;
	snprintf(arg, SPIRT_KEY_MAX + 1, "%s", key);
	return 1;
}

/* store's read transaction in *t (*s its handle), or nonzero: a store
 * that does not exist or cannot be read holds nothing */
static int
store_read(struct spirt_store **s, struct spirt_txn **t, const char *store)
{
	if (spirt_store_open(s, store, SPIRT_STORE_RDONLY) != 0)
		return -1;
	if (spirt_txn_begin(t, *s, SPIRT_TXN_RDONLY) != 0) {
		spirt_store_close(*s);
		return -1;
	}
	return 0;
}

static void
store_done(struct spirt_store *s, struct spirt_txn *t)
{
	spirt_txn_abort(t);
	spirt_store_close(s);
}

/* the first model/<model>@ key of store into k (room for SPIRT_KEY_MAX
 * + 1), or "" */
static void
first_version(char *k, const char *store, const char *model)
{
	char prefix[SPIRT_KEY_MAX + 1];
	struct spirt_store *s;
	struct spirt_txn *t;

	k[0] = '\0';
	if (spirt_key_model_prefix(prefix, sizeof prefix, model) != 0 ||
	    store_read(&s, &t, store) != 0)
		return;
	if (spirt_store_list(t, prefix, first_key, k) != 1)
		k[0] = '\0';
	store_done(s, t);
}

void
train_spec(const char **spec, const char *store, const char *model)
{
	static char name[SPIRT_NAME_MAX + 1];
	char k[SPIRT_KEY_MAX + 1], sk[SPIRT_KEY_MAX + 1];
	struct spirt_model m;
	struct spirt_tensor hdr;
	uint64_t dims[1];
	int rc;

	if (**spec == '\0') {
		struct spirt_store *s;
		struct spirt_txn *t;
		const void *pl;

		first_version(k, store, model);
		if (k[0] == '\0')
			die(SPIRT_EX_USAGE, "model %s: not in %s, and no "
			    "--spec: make its model@0 first (spirt-torch init "
			    "-m %s, spirt-init -m %s SPEC) or give --spec",
			    model, store, model, model);
		name[0] = '\0';
		if (store_read(&s, &t, store) == 0) {
			if ((rc = spirt_store_get_tensor(t, k, &hdr, &pl,
			    0)) != 0)
				warnrc(rc, "%s", k);
			else
				snprintf(name, sizeof name, "%s", hdr.name);
			store_done(s, t);
		}
		if (name[0] == '\0')
			die(SPIRT_EX_DATAERR, "%s: no name in its record", k);
		*spec = name;
		return;
	}
	// spirt-init -m MODEL SPEC's checks, writing nothing
	// (spirt-init's words, their first line)
	if ((rc = spirt_model_parse(&m, *spec)) != 0)
		die_first(SPIRT_EX_USAGE, "", "spirt-init", "%s: %s (see "
		    "spirt-model(5))", *spec, spirt_strerror(rc));
	if (spirt_name_check(model))
		die_first(SPIRT_EX_USAGE, "", "spirt-init", "-m: invalid model "
		    "name \"%.40s%s\" (1 to %d of A-Z a-z 0-9 . _ -, not "
		    "starting with .)", model, strlen(model) > 40 ? "..." : "",
		    SPIRT_NAME_PART_MAX);
	if ((rc = spirt_key_model(k, sizeof k, model, 0)) != 0 ||
	    (rc = spirt_key_mstate(sk, sizeof sk, model, 0)) != 0)
		die_first(spirt_exit(rc), "", "spirt-init", "model/%s@0: %s",
		    model, errcause(rc));
	dims[0] = m.nparams;
	if ((rc = spirt_tensor_init(&hdr, SPIRT_F32, 1, dims)) != 0 ||
	    (rc = spirt_tensor_set_name(&hdr, m.spec)) != 0)
		die_first(spirt_exit(rc), "", "spirt-init", "%s: %s", m.spec,
		    errcause(rc));
}

/* ---- the data ---- */

static int
any_key(void *arg, const char *key, const void *val, size_t len)
{
	(void)arg;
	(void)key;
	(void)val;
	(void)len;
	return 1;
}

/* store holds data set ds (a key data/<ds>/info...) */
static int
has_ds(const char *store, const char *ds)
{
	char prefix[SPIRT_KEY_MAX + 1];
	struct spirt_store *s;
	struct spirt_txn *t;
	int r;

	snprintf(prefix, sizeof prefix, "data/%s/info", ds);
	if (store_read(&s, &t, store) != 0)
		return 0;
	r = spirt_store_list(t, prefix, any_key, NULL) == 1;
	store_done(s, t);
	return r;
}

/*
 * The samples of the IDX file path (gzip or plain, as spirt-shard reads
 * it): its first dimension; 0 when its header cannot be read (spirt-shard
 * then refuses it in the loop, before the counts are used).
 */
static long long
idx_count(const char *path)
{
	unsigned char h[8];
	gzFile f;
	int n;

	if ((f = gzopen(path, "rb")) == NULL)
		return 0;
	n = gzread(f, h, sizeof h);
	gzclose(f);
	if (n != (int)sizeof h || h[0] != 0 || h[1] != 0 || h[3] < 1)
		return 0;
	return (long long)h[4] << 24 | h[5] << 16 | h[6] << 8 | h[7];
}

void
train_data(struct train_data *d)
{
	struct spirt_data_stats st;
	struct spirt_store *s;
	struct spirt_txn *t;
	long long nsam, nsh;
	uint64_t last;
	char e[96] = "", path[4200];
	int rc;

	// --data's demo sets, when neither --train nor --test names one:
	// sharded by the loop when missing (the training set over the nw
	// functions: as many shards, all the file's samples)
	d->shtrain = !d->dsopt && !has_ds(d->store, d->train);
	d->shtest = !d->dsopt && !has_ds(d->store, d->test);
	if (!d->shtrain && !has_ds(d->store, d->train))
		die(SPIRT_EX_NOINPUT, "--train %s: store %s has no data set %s; "
		    "make it: spirt-shard -s %s -d %s -n %lld FILE [LABELS]",
		    d->train, d->store, d->train, d->store, d->train, d->nw);
	if (!d->shtest && !has_ds(d->store, d->test))
		die(SPIRT_EX_NOINPUT, "--test %s: store %s has no data set %s; "
		    "make it: spirt-shard -s %s -d %s FILE [LABELS]", d->test,
		    d->store, d->test, d->store, d->test);
	d->last[0] = '\0';
	if (d->shtrain) {
		// (all the file's samples, in nw shards)
		snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz",
		    d->data);
		nsam = idx_count(path);
		nsh = d->nw;
	} else {
		// the steps per epoch: the smallest shard's samples in
		// batches, as spirt-grad and spirt-shard count them
		// (spirt-shard(1), The assignment)
		if ((rc = spirt_store_open(&s, d->store,
		    SPIRT_STORE_RDONLY)) != 0)
			s = NULL;
		else if ((rc = spirt_data_stats(&st, s, d->train)) != 0)
			warnrc(rc, "%s: stats data/%s", d->store, d->train);
		if (rc != 0)
			die(SPIRT_EX_DATAERR, "--train %s: spirt-shard -d %s "
			    "--stats: no shards in store %s", d->train,
			    d->train, d->store);
		nsam = st.nsamples;
		nsh = st.nshards;
		spirt_data_stats_free(&st);
		spirt_store_close(s);
	}
	// the newest version of the model, whence the run resumes
	if (store_read(&s, &t, d->store) == 0) {
		if (spirt_model_latest(t, d->model, &last) == 0)
			snprintf(d->last, sizeof d->last, "%llu",
			    (unsigned long long)last);
		store_done(s, t);
	}
	if (d->shtrain && nsam == 0) {  // (the loop's spirt-shard refuses it)
		d->per = d->spe = d->total = d->stop = 0;
		return;
	}
	// (a shard for each of the P x M functions; -n K/P fits K shards)
	if (nsh != d->nw) {
		if (nsh % d->np == 0)
			snprintf(e, sizeof e, ", or train with -n %lld",
			    nsh / d->np);
		if (d->np != 1)
			snprintf(e + strlen(e), sizeof e - strlen(e),
			    " (%lld peers)", d->np);
		die(SPIRT_EX_DATAERR, "--train %s: store %s has data for %lld "
		    "workers, not %lld; shard it again: spirt-shard -s %s -d "
		    "%s -n %lld FILE [LABELS]%s", d->train, d->store, nsh,
		    d->nw, d->store, d->train, d->nw, e);
	}
	d->per = nsam / nsh;
	if (d->batch > d->per)
		die(SPIRT_EX_USAGE, "batch %lld is larger than a worker's %lld "
		    "samples", d->batch, d->per);
	d->spe = (d->per + d->batch - 1) / d->batch;
	d->total = d->spe * d->epochs;
	// --steps ends the run early; the schedule still spans the epochs
	d->stop = d->steps != 0 && d->steps < d->total ? d->steps : d->total;
	if (d->every == 0)
		d->every = d->spe;
}
