/* aggstore.c - gather a step's gradients (store, files), write agg/<t> */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "aggstore.h"
#include "assign.h"
#include "keys.h"

/* the message of a failure with code rc; returns rc */
#define say(s, rc, ...) spirt_msgf((s)->msg, sizeof (s)->msg, (rc), \
	__VA_ARGS__)
/* the same, "what: spirt_strerror(rc)" */
#define sayrc(s, rc, what) spirt_msgrc((s)->msg, sizeof (s)->msg, (rc), \
	"%s", (what))

void
spirt_aggset_init(struct spirt_aggset *s)
{
	/* field by field: in[] and ai[] (a quarter megabyte) are written
	 * slot by slot as inputs come, and zeroing them here would fault
	 * in every page of them in a one-shot process */
	spirt_agg_defaults(&s->p);
	s->step = SPIRT_NOSTEP;
	s->verify = s->replace = s->prune = s->keys_checked = 0;
	s->max_samples = s->batch = 0;
	s->out = NULL;
	s->seq_origin = 0;
	s->center = NULL;
	s->ncenter = 0;
	s->revcheck = 0;
	s->dataset = NULL;
	s->revision = SPIRT_NOREVISION;
	s->nstale = s->npast = s->first = 0;
	s->center_key = NULL;
	s->vals = NULL;
	s->publish = NULL;
	s->momentum = 0;
	s->slots = NULL;
	s->slot_model = NULL;
	s->nslots = 0;
	s->cown = NULL;
	s->mown = NULL;
	s->mom_new = 0;
	snprintf(s->cfrom, sizeof s->cfrom, "zero");
	s->w = s->used = 0;
	memset(&s->hdr, 0, sizeof s->hdr);
	s->work_ms = 0;
	s->published = 0;
	s->msg[0] = '\0';
}

void
spirt_aggset_reset(struct spirt_aggset *s)
{
	for (size_t i = 0; i < s->w; i++)
		free(s->in[i].own);
	s->w = 0;
	s->used = 0;
	s->revision = SPIRT_NOREVISION;
	s->nstale = s->npast = s->first = 0;
	free(s->cown);
	s->cown = NULL;
	free(s->mown);
	s->mown = NULL;
	s->mom_new = 0;
	s->nslots = 0;
	if (s->center == NULL)
		snprintf(s->cfrom, sizeof s->cfrom, "zero");
	s->work_ms = 0;
	s->published = 0;
	s->msg[0] = '\0';
}

/* Take one decoded record; copies the payload when it is misaligned. */
static int
add(struct spirt_aggset *s, const char *name, const struct spirt_tensor *t,
    const void *pl, void *own)
{
	struct spirt_aggset_in *in;

	if (s->w == SPIRT_AGG_MAXW) {
		free(own);
		return say(s, SPIRT_EINVAL, "%s: more than %d inputs", name,
		    SPIRT_AGG_MAXW);
	}
	in = &s->in[s->w++];
	snprintf(in->name, sizeof in->name, "%s", name);
	in->t = *t;
	in->own = own;
	in->pre = 0;
	in->bound = 0;
	if (t->dtype == SPIRT_F32 && !spirt_aligned(pl, SPIRT_F32)) {
		if ((in->own = malloc(t->nbytes ? t->nbytes : 1)) == NULL)
			return ENOMEM;
		memcpy(in->own, pl, t->nbytes);
		pl = in->own;
	}
	in->x = pl;
	return 0;
}

/*
 * A record under grad/<t>/<w> is worker w's: one of another origin is
 * refused (a function that wrote another worker's gradient in its slot;
 * spirt-function(7)).
 */
static int
owner(struct spirt_aggset *s, const char *key, const struct spirt_tensor *t)
{
	struct spirt_key_parts k;

	if (t->origin == SPIRT_NOORIGIN || spirt_key_parse(&k, key) != 0 ||
	    k.kind != SPIRT_KEY_GRAD || k.worker == t->origin)
		return 0;
	return say(s, SPIRT_EDATA, "%s: origin %u, not the key's worker %u",
	    key, (unsigned)t->origin, (unsigned)k.worker);
}

/*
 * The state a function measured beside its gradient, state/<t>/<w>
 * beside grad/<t>/<w> (spirt-model(5)): the input becomes the gradient
 * and the state end to end, in a buffer of its own (*own), so that the
 * rule combines both, coordinate by coordinate, and agg/<t> carries the
 * combined state after the gradient (spirt-update splits them, the
 * exchange and the digests treat the aggregate as ever).  No state
 * there (txn NULL, another key, no record): the gradient alone.
 */
static int
with_state(struct spirt_aggset *s, struct spirt_txn *txn, const char *key,
    struct spirt_tensor *t, const void **pl, void **own)
{
	struct spirt_key_parts k;
	struct spirt_tensor st, nt;
	char skey[SPIRT_KEY_MAX + 1];
	const void *spl;
	uint64_t n;
	unsigned char *b;
	int rc;

	*own = NULL;
	if (txn == NULL || spirt_key_parse(&k, key) != 0 ||
	    k.kind != SPIRT_KEY_GRAD)
		return 0;
	if ((rc = spirt_key_state(skey, sizeof skey, k.step, k.worker)))
		return sayrc(s, rc, key);
	if ((rc = spirt_store_get_tensor(txn, skey, &st, &spl, s->verify)) ==
	    SPIRT_ENOTFOUND)
		return 0;
	if (rc)
		return sayrc(s, rc, skey);
	if (st.dtype != SPIRT_F32 || t->dtype != SPIRT_F32)
		return say(s, SPIRT_EDTYPE, "%s: dtype %s, not f32", skey,
		    spirt_dtype_name(st.dtype != SPIRT_F32 ? st.dtype :
		    t->dtype));
	if (st.step != t->step || (st.origin != SPIRT_NOORIGIN &&
	    st.origin != k.worker))
		return say(s, SPIRT_EDATA, "%s: step %lld origin %lld, not "
		    "those of %s", skey, (long long)st.step,
		    st.origin == SPIRT_NOORIGIN ? -1LL : (long long)st.origin,
		    key);
	n = t->nelem + st.nelem;
	if ((rc = spirt_tensor_init(&nt, SPIRT_F32, 1, &n)) ||
	    (rc = spirt_tensor_set_name(&nt, t->name)))
		return sayrc(s, rc, key);
	nt.step = t->step;
	nt.samples = t->samples;
	nt.loss = t->loss;
	nt.origin = t->origin;
	nt.count = t->count;
	if (t->flags & SPIRT_TF_REVISION)
		spirt_tensor_set_revision(&nt, t->revision);
	if ((b = malloc(nt.nbytes ? nt.nbytes : 1)) == NULL)
		return ENOMEM;
	memcpy(b, *pl, t->nbytes);
	memcpy(b + t->nbytes, spl, st.nbytes);
	*t = nt;
	*pl = b;
	*own = b;
	return 0;
}

/* key's record, from the store (txn) or given in memory (vals, txn
 * NULL) */
static int
add_rec(struct spirt_aggset *s, struct spirt_txn *txn, const char *key,
    const void *val, size_t len)
{
	struct spirt_tensor t;
	const void *pl;
	void *own;
	int rc;

	if ((rc = spirt_tensor_decode(&t, &pl, val, len, s->verify &&
	    !s->keys_checked)))
		return sayrc(s, rc, key);
	if ((rc = owner(s, key, &t)) ||
	    (rc = with_state(s, txn, key, &t, &pl, &own)))
		return rc;
	return add(s, key, &t, pl, own);
}

int
spirt_aggset_add_key(struct spirt_aggset *s, struct spirt_txn *txn,
    const char *key)
{
	const void *v;
	size_t len;
	int rc;

	if ((rc = spirt_store_get(txn, key, &v, &len)))
		return sayrc(s, rc, key);
	return add_rec(s, txn, key, v, len);
}

struct listarg {
	struct spirt_aggset *s;
	struct spirt_txn *txn;
	size_t plen;
};

static int
listone(void *arg, const char *key, const void *val, size_t len)
{
	struct listarg *a = arg;
	struct spirt_tensor t;
	const void *pl;
	void *own;
	int rc;

	if (strchr(key + a->plen, '/'))
		return 0;               /* grad/<t>/<w>/... is not a gradient */
	if ((rc = spirt_tensor_decode(&t, &pl, val, len, a->s->verify)))
		return sayrc(a->s, rc, key);
	if ((rc = owner(a->s, key, &t)) ||
	    (rc = with_state(a->s, a->txn, key, &t, &pl, &own)))
		return rc;
	return add(a->s, key, &t, pl, own);
}

int
spirt_aggset_add_step(struct spirt_aggset *s, struct spirt_txn *txn,
    uint64_t step)
{
	char prefix[SPIRT_KEY_MAX + 1];
	struct listarg a = { s, txn, 0 };
	int rc;

	if ((rc = spirt_key_grad_prefix(prefix, sizeof prefix, step)))
		return say(s, rc, "step %llu", (unsigned long long)step);
	a.plen = strlen(prefix);
	return spirt_store_list(txn, prefix, listone, &a);
}

int
spirt_aggset_add_slots(struct spirt_aggset *s, struct spirt_txn *txn,
    uint64_t step)
{
	char name[SPIRT_KEY_MAX + 32], why[160];
	const struct spirt_slotmap *m;
	struct spirt_tensor t;
	const float *pl;
	const void *v;
	uint64_t model, want;
	size_t i, j, len, have = s->w;
	int rc;

	if (s->slot_model == NULL)
		return say(s, SPIRT_EBUG, "slots: no model named");
	if ((rc = spirt_key_model(name, sizeof name, s->slot_model, step)))
		return sayrc(s, rc, s->slot_model);
	if ((rc = spirt_store_get(txn, name, &v, &len)))
		return sayrc(s, rc, name);
	want = spirt_slot_record_sum(v, len);
	if ((rc = spirt_slotset_scan(s->slots, s->msg, sizeof s->msg)))
		return rc;
	for (i = 0; i < s->slots->n; i++) {
		m = &s->slots->m[i];
		snprintf(name, sizeof name, "scratch/slot.%lu",
		    (unsigned long)m->worker);
		rc = spirt_slot_parse(&t, &model, &pl, m->map, m->len,
		    m->worker, why, sizeof why);
		if (rc == SPIRT_ENOTFOUND)
			continue;
		if (rc)
			return say(s, rc, "%s: %s", name, why);
		if (t.step != step || model != want)
			continue;
		for (j = 0; j < have && s->in[j].t.origin != m->worker; j++)
			;
		if (j < have)
			continue;       /* grad/<t>/<w> stands: the store's */
		if ((rc = add(s, name, &t, pl, NULL)))
			return rc;
		s->nslots++;
	}
	return 0;
}

int
spirt_aggset_add_file(struct spirt_aggset *s, const char *path)
{
	const char *nm = strcmp(path, "-") ? path : "stdin";
	char name[SPIRT_KEY_MAX + 32];
	unsigned rec = 0;
	int fd = 0, rc;

	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) < 0)
		return say(s, errno, "open %s: %s", path, strerror(errno));
	for (;;) {
		struct spirt_tensor t;
		void *pl;

		/* records count from 0, as everywhere (spirt-tensor(5)) */
		snprintf(name, sizeof name, "%s: record %u", nm, rec++);
		if ((rc = spirt_tensor_read(fd, &t, &pl, 0)) == SPIRT_EOF) {
			rc = rec == 1 ? say(s, SPIRT_ETRUNC, "%s: empty input",
			    nm) : 0;
			break;
		}
		if (rc) {
			sayrc(s, rc, name);
			break;
		}
		if ((rc = add(s, name, &t, pl, pl)))
			break;
	}
	if (fd > 0)
		close(fd);
	return rc;
}

/*
 * Each input of the revision in force a's bound: the samples a gives its
 * worker at its step with s->batch (none where a says nothing)
 */
static int
bounds(struct spirt_aggset *s, struct spirt_txn *txn,
    const struct spirt_assign *a)
{
	uint64_t S, n;
	int rc;

	if ((rc = spirt_data_epoch_steps(&S, txn, s->dataset, s->batch)))
		return rc == SPIRT_ENOTFOUND ? 0 : say(s, rc, "data/%s/info: "
		    "%s", s->dataset, spirt_strerror(rc));
	for (size_t i = 0; i < s->w; i++) {
		struct spirt_aggset_in *in = &s->in[i];

		if (in->pre || in->t.origin == SPIRT_NOORIGIN ||
		    in->t.step == SPIRT_NOSTEP)
			continue;
		if (spirt_assign_samples(&n, a, in->t.origin, in->t.step, S,
		    s->batch) == 0)
			in->bound = n;
	}
	return 0;
}

int
spirt_aggset_filter(struct spirt_aggset *s, struct spirt_txn *txn)
{
	struct spirt_assign a;
	uint64_t rev = SPIRT_NOREVISION;
	size_t i;
	int rc, have = 0;

	s->nstale = s->npast = 0;
	s->revision = SPIRT_NOREVISION;
	for (i = 0; i < s->w; i++) {
		struct spirt_aggset_in *in = &s->in[i];

		in->pre = 0;
		in->bound = 0;
		if (s->step != SPIRT_NOSTEP && in->t.step < s->step) {
			in->pre = SPIRT_AGG_XPAST;
			s->npast++;
		}
	}
	if (!s->revcheck)
		return 0;
	if (txn != NULL && s->dataset != NULL) {
		rc = spirt_data_assign_get(&a, txn, s->dataset);
		if (rc == 0) {
			rev = a.revision;
			have = 1;
		} else {
			spirt_assign_free(&a);
		}
		if (rc != 0 && rc != SPIRT_ENOTFOUND)
			return say(s, rc, "data/%s/assign: %s", s->dataset,
			    spirt_strerror(rc));
	}
	/* no assignment to ask: the newest revision the inputs carry */
	if (rev == SPIRT_NOREVISION)
		for (i = 0; i < s->w; i++)
			if (!s->in[i].pre &&
			    s->in[i].t.revision != SPIRT_NOREVISION &&
			    (rev == SPIRT_NOREVISION ||
			    s->in[i].t.revision > rev))
				rev = s->in[i].t.revision;
	s->revision = rev;
	for (i = 0; i < s->w; i++) {
		struct spirt_aggset_in *in = &s->in[i];

		if (!in->pre && in->t.revision != SPIRT_NOREVISION &&
		    in->t.revision != rev) {
			in->pre = SPIRT_AGG_XSTALE;
			s->nstale++;
		}
	}
	if (!have)
		return 0;
	rc = s->batch ? bounds(s, txn, &a) : 0;
	spirt_assign_free(&a);
	return rc;
}

int
spirt_aggset_check(struct spirt_aggset *s)
{
	const struct spirt_tensor *a;
	const char *n0;
	size_t f;

	for (f = 0; f < s->w && s->in[f].pre; f++)
		;
	s->first = f;
	if (s->w == 0)
		return say(s, SPIRT_ENOTFOUND, "no gradients for step %llu",
		    (unsigned long long)s->step);
	if (f == s->w)
		return say(s, SPIRT_ENOTFOUND, "no gradients for step %llu "
		    "left: %zu of a past step, %zu of another assignment "
		    "revision", (unsigned long long)s->step, s->npast,
		    s->nstale);
	a = &s->in[f].t;
	n0 = s->in[f].name;
	for (size_t i = f; i < s->w; i++) {
		const struct spirt_tensor *b = &s->in[i].t;
		const char *n = s->in[i].name;

		if (s->in[i].pre)
			continue;
		if (b->dtype != SPIRT_F32)
			return say(s, SPIRT_EDTYPE, "%s: dtype %s, not f32", n,
			    spirt_dtype_name(b->dtype));
		if (b->nelem != a->nelem || b->rank != a->rank ||
		    memcmp(b->dims, a->dims, a->rank * sizeof *a->dims))
			return say(s, SPIRT_ESHAPE, "%s: %llu values, %s has "
			    "%llu: shapes differ", n,
			    (unsigned long long)b->nelem, n0,
			    (unsigned long long)a->nelem);
		if (s->step != SPIRT_NOSTEP ? b->step != s->step :
		    b->step != a->step)
			return say(s, SPIRT_ESTEP, "%s: step %lld, not %lld", n,
			    (long long)b->step, (long long)(s->step !=
			    SPIRT_NOSTEP ? s->step : a->step));
		if (strcmp(b->name, a->name) != 0)
			return say(s, SPIRT_EMODEL, "%s: model \"%s\", %s has "
			    "\"%s\"", n, b->name, n0, a->name);
		for (size_t k = f; k < i; k++)
			if (!s->in[k].pre && b->origin != SPIRT_NOORIGIN &&
			    b->origin == s->in[k].t.origin)
				return say(s, SPIRT_EDATA, "%s: origin %u "
				    "again (%s)", n, (unsigned)b->origin,
				    s->in[k].name);
	}
	return 0;
}

/* s->hdr for the inputs s->ai not excluded (so far) */
static void
header(struct spirt_aggset *s)
{
	struct spirt_tensor *t = &s->hdr;
	double loss = 0;
	uint64_t samples = 0;
	size_t nl = 0, used = 0;

	*t = s->in[s->first].t;
	t->origin = SPIRT_NOORIGIN;
	/* an aggregate is no function's: no revision (version 1 bytes) */
	spirt_tensor_set_revision(t, SPIRT_NOREVISION);
	for (size_t i = 0; i < s->w; i++) {
		const struct spirt_tensor *b = &s->in[s->ai[i].id].t;

		if (s->ai[i].excluded)
			continue;
		used++;
		samples += s->ai[i].samples;    /* as counted: bounded */
		if (!isnan(b->loss)) {
			loss += b->loss;
			nl++;
		}
	}
	t->count = (uint32_t)used;
	t->samples = samples;
	t->loss = nl ? loss / (double)nl : NAN;
}

/* Checksumming the result as the pass makes it (into a store value). */
struct sumwatch {
	struct spirt_aggset *s;
	unsigned char *dst;             /* the record: header packed here */
	size_t len;
	struct spirt_tensor_sum sum;
	int rc;
};

static void
sw_start(void *arg, const struct spirt_agg_input *in, size_t w)
{
	struct sumwatch *x = arg;

	(void)in;               /* the same array as x->s->ai */
	(void)w;
	header(x->s);
	if ((x->rc = spirt_tensor_pack_header(x->dst, x->len, &x->s->hdr)) ==
	    0)
		spirt_tensor_sum_init(&x->sum, &x->s->hdr);
}

static void
sw_tile(void *arg, const float *out, size_t n)
{
	struct sumwatch *x = arg;

	if (x->rc == 0)         /* no header, no sum: run() fails */
		spirt_tensor_sum_add(&x->sum, out, n * sizeof *out);
}

int
spirt_aggset_straggler(const struct spirt_aggset *s, size_t i, char *buf,
    size_t cap)
{
	const struct spirt_aggset_in *in = &s->in[i];

	if (in->pre == SPIRT_AGG_XSTALE)
		snprintf(buf, cap, "%s: not applied: assignment revision %llu, "
		    "not %llu (stale)", in->name,
		    (unsigned long long)in->t.revision,
		    (unsigned long long)s->revision);
	else if (in->pre == SPIRT_AGG_XPAST)
		snprintf(buf, cap, "%s: not applied: step %llu, a past step "
		    "(not %llu)", in->name, (unsigned long long)in->t.step,
		    (unsigned long long)s->step);
	else
		return 0;
	return 1;
}

int
spirt_aggset_rule_check(struct spirt_aggset *s, size_t w)
{
	const struct spirt_agg_params *p = &s->p;
	const char *rule = spirt_agg_rule_name(p->rule);
	size_t nb = spirt_agg_nbuckets(p, w), f = p->f;
	char in[96];

	if (spirt_agg_tolerates(p, w) == 0)
		return 0;
	if (rule == NULL)
		return say(s, SPIRT_EINVAL, "unknown rule %d", p->rule);
	if (w == 0 || w > SPIRT_AGG_MAXW)
		return say(s, SPIRT_EINVAL, "rule %s: %zu inputs, not 1 to %d",
		    rule, w, SPIRT_AGG_MAXW);
	// what the rule sees: W inputs, or the buckets they make
	if (p->bucket > 1)
		snprintf(in, sizeof in, "%zu buckets of %u from %zu inputs",
		    nb, p->bucket, w);
	else
		snprintf(in, sizeof in, "%zu inputs", w);
	switch (p->rule) {
	case SPIRT_AGG_MEAN:
	case SPIRT_AGG_WMEAN:
		return say(s, SPIRT_EINVAL, "rule %s: tolerates no Byzantine "
		    "input, not --byzantine %zu: use trim, median, krum or "
		    "cclip", rule, f);
	case SPIRT_AGG_TRIM:
		if (!(p->trim >= 0 && p->trim < 0.5) ||
		    floor(p->trim * (double)nb + 1e-9) < 1 ||
		    2 * (size_t)floor(p->trim * (double)nb + 1e-9) >= nb)
			return say(s, SPIRT_EINVAL, "rule trim: --trim %g of %s "
			    "must cut at least one per side and keep one "
			    "(trim x W >= 1, trim < 0.5)", p->trim, in);
		return say(s, SPIRT_EINVAL, "rule trim: --trim %g of %s cuts "
		    "%zu per side, fewer than --byzantine %zu: needs "
		    "floor(trim x W) >= f", p->trim, in,
		    (size_t)floor(p->trim * (double)nb + 1e-9), f);
	case SPIRT_AGG_KRUM:
	case SPIRT_AGG_MKRUM:
		if (nb <= 2 * f + 2)
			return say(s, SPIRT_EINVAL, "rule %s: %s with "
			    "--byzantine %zu: Krum needs W > 2f+2 = %zu", rule,
			    in, f, 2 * f + 2);
		return say(s, SPIRT_EINVAL, "rule mkrum: --select %u of %s "
		    "with --byzantine %zu: needs m <= W - f = %zu",
		    p->m, in, f, nb - f);
	case SPIRT_AGG_MEDIAN:
	case SPIRT_AGG_NORM:
	case SPIRT_AGG_CCLIP:
	case SPIRT_AGG_SCCLIP:
		if (nb <= 2 * f)
			return say(s, SPIRT_EINVAL, "rule %s: %s with "
			    "--byzantine %zu: needs W > 2f = %zu", rule, in,
			    f, 2 * f);
		/* FALLTHROUGH */
	default:
		return say(s, SPIRT_EINVAL, "rule %s makes no sense for %s",
		    rule, in);
	}
}

/* the rules that start from a centre */
static int
clipping(int rule)
{
	return rule == SPIRT_AGG_CCLIP || rule == SPIRT_AGG_SCCLIP;
}

static int
run(struct spirt_aggset *s, float *out, struct sumwatch *x)
{
	struct spirt_agg_watch wt = { sw_start, sw_tile, x };
	const struct spirt_aggset_in *in0 = &s->in[s->first];
	size_t i, k, nv = 0;
	uint64_t b;
	int rc;

	/* the rule sees the inputs not left out; those come after it */
	for (i = 0; i < s->w; i++) {
		if (s->in[i].pre)
			continue;
		s->ai[nv].x = s->in[i].x;
		s->ai[nv].origin = s->in[i].t.origin;
		/* a worker's claim is bounded by what its step can use (the
		 * assignment's minibatch, else the batch), so a liar weighs
		 * no more than its honest minibatch in wmean */
		s->ai[nv].samples = s->in[i].t.samples;
		b = s->in[i].bound ? s->in[i].bound : s->max_samples;
		if (b && s->ai[nv].samples > b)
			s->ai[nv].samples = b;
		s->ai[nv].id = i;
		s->ai[nv].excluded = 0;
		nv++;
	}
	if ((rc = spirt_aggset_rule_check(s, nv)))
		return rc;
	s->p.step = in0->t.step;
	s->p.center = NULL;
	if (clipping(s->p.rule) && s->center) {
		if (s->ncenter != in0->t.nelem)
			return say(s, SPIRT_ESHAPE, "%s: centre of %zu "
			    "values, %s has %llu",
			    spirt_agg_rule_name(s->p.rule), s->ncenter,
			    in0->name, (unsigned long long)in0->t.nelem);
		s->p.center = s->center;
	} else if (clipping(s->p.rule)) {
		s->p.center = s->cown;
	}
	if (s->p.rule == SPIRT_AGG_SCCLIP && s->p.center == NULL)
		return say(s, SPIRT_EINVAL, "scclip: no centre: it is the "
		    "peer's own aggregate (spirt-peer exchange) or --center "
		    "file");
	/* header() reads every slot: the left out ones go after the rule's */
	for (i = 0, k = nv; i < s->w; i++)
		if (s->in[i].pre) {
			s->ai[k].x = s->in[i].x;
			s->ai[k].origin = s->in[i].t.origin;
			s->ai[k].samples = 0;
			s->ai[k].id = i;
			s->ai[k].excluded = s->in[i].pre;
			k++;
		}
	rc = spirt_agg_run_watched(out, s->ai, nv, in0->t.nelem, &s->p,
	    &s->used, x ? &wt : NULL);
	if (rc == SPIRT_EDATA && (s->p.rule == SPIRT_AGG_KRUM ||
	    s->p.rule == SPIRT_AGG_MKRUM))
		say(s, rc, "%s: too few usable inputs for rule %s: Krum needs "
		    "more than 2f+2 = %u finite inputs", in0->name,
		    spirt_agg_rule_name(s->p.rule), 2 * s->p.f + 2);
	else if (rc == SPIRT_ENAN || rc == SPIRT_EDATA)
		say(s, rc, "%s: too few usable inputs for rule %s",
		    in0->name, spirt_agg_rule_name(s->p.rule));
	if (rc)
		return rc;
	if (x && x->rc)
		return x->rc;
	header(s);
	return 0;
}

int
spirt_aggset_run(struct spirt_aggset *s, float *out)
{
	return run(s, out, NULL);
}

/* agg/<t>/excluded: i64 [k, 2] of (origin, reason), k may be 0 */
static int
putexcluded(struct spirt_aggset *s, struct spirt_txn *txn)
{
	struct spirt_tensor x;
	int64_t ex[2 * SPIRT_AGG_MAXW];
	uint64_t dims[2] = { 0, 2 };
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	for (size_t i = 0; i < s->w; i++)
		if (s->ai[i].excluded) {
			ex[2 * dims[0]] = s->ai[i].origin == SPIRT_NOORIGIN ?
			    -1 : (int64_t)s->ai[i].origin;
			ex[2 * dims[0]++ + 1] = s->ai[i].excluded;
		}
	if ((rc = spirt_key_aggroot_excluded(key, sizeof key, s->out,
	    s->hdr.step)) ||
	    (rc = spirt_tensor_init(&x, SPIRT_I64, 2, dims)))
		return rc;
	x.step = s->hdr.step;
	return spirt_store_put_tensor(txn, key, &x, ex, 0);
}

/* remove grad/, state/, mom/ and agg/ keys of steps before below */
static int
prune_spent(struct spirt_txn *txn, uint64_t below)
{
	int rc = spirt_store_del_steps(txn, SPIRT_KEY_GRAD_ROOT, below, NULL);

	if (rc == 0)
		rc = spirt_store_del_steps(txn, SPIRT_KEY_STATE_ROOT, below,
		    NULL);
	if (rc == 0)
		rc = spirt_store_del_steps(txn, SPIRT_KEY_MOM_ROOT, below, NULL);
	return rc ? rc : spirt_store_del_steps(txn, SPIRT_KEY_AGG_ROOT, below,
	    NULL);
}

/* cclip's centre: agg/<t-1>, or scclip's s->center_key, copied (the map
 * may move as we write); a missing agg/<t-1> is no centre */
static int
prevagg(struct spirt_aggset *s, struct spirt_txn *txn)
{
	struct spirt_tensor t;
	char from[SPIRT_KEY_MAX + 1];
	const void *pl;
	const struct spirt_aggset_in *in0 = &s->in[s->first];
	uint64_t step = in0->t.step;
	int rc;

	if (!s->center_key && s->p.rule != SPIRT_AGG_CCLIP)
		return 0;       /* scclip's centre is never agg/<t-1> */
	if (s->center_key) {
		snprintf(from, sizeof from, "%s", s->center_key);
	} else {
		if (step == 0 || step == SPIRT_NOSTEP)
			return 0;
		if ((rc = s->publish ? spirt_key_xagg(from, sizeof from,
		    step - 1, s->publish) : spirt_key_aggroot(from,
		    sizeof from, s->out, step - 1)))
			return sayrc(s, rc, "previous aggregate");
	}
	if ((rc = spirt_store_get_tensor(txn, from, &t, &pl, s->verify)) ==
	    SPIRT_ENOTFOUND && !s->center_key)
		return 0;
	if (rc)
		return sayrc(s, rc, from);
	if (t.dtype != SPIRT_F32 || t.nelem != in0->t.nelem)
		return say(s, SPIRT_ESHAPE, "%s: %llu values of %s, %s has "
		    "%llu f32: cannot be %s's centre", from,
		    (unsigned long long)t.nelem, spirt_dtype_name(t.dtype),
		    in0->name, (unsigned long long)in0->t.nelem,
		    spirt_agg_rule_name(s->p.rule));
	if ((s->cown = malloc(t.nbytes ? t.nbytes : 1)) == NULL)
		return ENOMEM;
	memcpy(s->cown, pl, t.nbytes);
	snprintf(s->cfrom, sizeof s->cfrom, "%s", from);
	return 0;
}

/*
 * Worker momentum (aggstore.h): each input's momentum into s->mown, the
 * input then points there; mom/<t>/<w> written for the finite ones.
 */
static int
momenta(struct spirt_aggset *s, struct spirt_txn *txn, size_t nkeys)
{
	size_t n = s->in[s->first].t.nelem;
	uint64_t step = s->in[s->first].t.step;
	float b = (float)s->momentum, a = (float)(1.0 - s->momentum);
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if (nkeys || s->seq_origin)
		return say(s, SPIRT_EINVAL, "worker momentum: of a step's "
		    "gradients grad/<t>/<w> only, not of named keys");
	if ((s->mown = malloc(s->w * n * sizeof *s->mown + 1)) == NULL)
		return ENOMEM;
	s->mom_new = 0;
	for (size_t i = 0; i < s->w; i++) {
		struct spirt_aggset_in *in = &s->in[i];
		struct spirt_tensor t;
		const float *g = in->x;
		float *m = s->mown + i * n;
		const void *pl = NULL;

		if (in->pre)
			continue;       /* a straggler: no momentum of it */
		if (in->t.origin == SPIRT_NOORIGIN)
			return say(s, SPIRT_EDATA, "%s: no origin: whose "
			    "momentum is it?", in->name);
		if (step > 0) {
			if ((rc = spirt_key_mom(key, sizeof key, step - 1,
			    in->t.origin)))
				return sayrc(s, rc, in->name);
			rc = spirt_store_get_tensor(txn, key, &t, &pl,
			    s->verify);
			if (rc == SPIRT_ENOTFOUND)
				pl = NULL;
			else if (rc)
				return sayrc(s, rc, key);
			else if (t.dtype != SPIRT_F32 || t.nelem != n)
				return say(s, SPIRT_ESHAPE, "%s: %llu values "
				    "of %s, %s has %zu f32: not its momentum",
				    key, (unsigned long long)t.nelem,
				    spirt_dtype_name(t.dtype), in->name, n);
		}
		if (pl) {
			const float *mp = pl;

			if (!spirt_aligned(pl, SPIRT_F32)) {
				memcpy(m, pl, n * sizeof *m);
				mp = m;
			}
			for (size_t j = 0; j < n; j++)
				m[j] = a * g[j] + b * mp[j];
		} else {
			memcpy(m, g, n * sizeof *m);
			s->mom_new++;
		}
		in->x = m;
	}
	/* written once every input is read */
	for (size_t i = 0; i < s->w; i++) {
		struct spirt_aggset_in *in = &s->in[i];

		if (in->pre || spirt_count_nonfinite_f32(in->x, n))
			continue;       /* the rule excludes it; no history */
		if ((rc = spirt_key_mom(key, sizeof key, step, in->t.origin)) ||
		    (rc = spirt_store_put_tensor(txn, key, &in->t, in->x, 0)))
			return sayrc(s, rc, key);
	}
	return 0;
}

int
spirt_agg_store_step(struct spirt_aggset *s, struct spirt_txn *txn,
    char *const *keys, size_t nkeys)
{
	const struct spirt_aggset_in *in0;
	struct spirt_tensor t;
	struct sumwatch x;
	char key[SPIRT_KEY_MAX + 1];
	const void *old;
	unsigned char *dst;
	float *out;
	size_t len;
	double t0 = 1e3 * spirt_clock();
	int rc;

	spirt_aggset_reset(s);
	for (size_t i = 0; i < nkeys; i++)
		if ((rc = s->vals && s->vals[i].v ? add_rec(s, NULL, keys[i],
		    s->vals[i].v, s->vals[i].len) :
		    spirt_aggset_add_key(s, txn, keys[i])))
			return rc;
	if (s->seq_origin)
		for (size_t i = 0; i < s->w; i++)
			s->in[i].t.origin = (uint32_t)i;
	if ((!nkeys && (rc = spirt_aggset_add_step(s, txn, s->step))) ||
	    (!nkeys && s->slots &&
	    (rc = spirt_aggset_add_slots(s, txn, s->step))) ||
	    (rc = spirt_aggset_filter(s, txn)) ||
	    (rc = spirt_aggset_check(s)))
		return rc;
	in0 = &s->in[s->first];
	/* a record with no step names no agg/<t> */
	if ((rc = spirt_key_aggroot(key, sizeof key, s->out, in0->t.step)))
		return say(s, SPIRT_ESTEP, "%s: no step: no %s/<t> to write",
		    in0->name, s->out ? s->out : "agg");
	if (s->publish) {
		const void *pl;

		if ((rc = spirt_key_xagg(key, sizeof key, in0->t.step,
		    s->publish)))
			return sayrc(s, rc, s->publish);
		/* published already: it stands, nothing is written */
		if ((rc = spirt_store_get(txn, key, &old, &len)) == 0) {
			if ((rc = spirt_tensor_decode(&s->hdr, &pl, old, len,
			    0)))
				return sayrc(s, rc, key);
			s->published = 1;
			s->work_ms = 1e3 * spirt_clock() - t0;
			return 0;
		}
		if (rc != SPIRT_ENOTFOUND)
			return sayrc(s, rc, key);
	} else if (!s->replace && spirt_store_get(txn, key, &old, &len) == 0) {
		return say(s, SPIRT_EEXIST, "%s exists", key);
	}
	if (s->momentum > 0 && (rc = momenta(s, txn, nkeys)))
		return rc;
	if (clipping(s->p.rule) && !s->center && (rc = prevagg(s, txn)))
		return rc;
	/* the aggregate's header: the first input's without a revision */
	t = in0->t;
	spirt_tensor_set_revision(&t, SPIRT_NOREVISION);
	len = spirt_tensor_reclen(&t);
	if ((rc = spirt_store_reserve(txn, key, len, (void **)&dst, 0)))
		return rc;
	/* aggregate straight into the map when the payload is aligned */
	out = (float *)(void *)(dst + t.hdrlen);
	if (!spirt_aligned(out, SPIRT_F32) &&
	    (out = malloc(t.nbytes ? t.nbytes : 1)) == NULL)
		return ENOMEM;
	/* the header is packed and the payload checksummed tile by tile
	 * as the pass makes it (N = 1e7: no second read of 40 MB) */
	x.s = s;
	x.dst = dst;
	x.len = len;
	x.rc = 0;
	rc = run(s, out, &x);
	if ((void *)out != dst + t.hdrlen) {
		if (rc == 0)
			memcpy(dst + t.hdrlen, out, t.nbytes);
		free(out);
	}
	if (rc)
		return rc;
	spirt_tensor_sum_trailer(dst + s->hdr.hdrlen + s->hdr.nbytes, &x.sum);
	rc = putexcluded(s, txn);
	if (rc == 0 && s->prune && s->hdr.step != SPIRT_NOSTEP &&
	    s->hdr.step >= 2)
		rc = prune_spent(txn, s->hdr.step - 1);
	s->work_ms = 1e3 * spirt_clock() - t0;
	return rc;
}

int
spirt_agg_mem_step(struct spirt_aggset *s, struct spirt_txn *txn,
    float **out)
{
	const struct spirt_aggset_in *in0;
	double t0 = 1e3 * spirt_clock();
	int rc;

	*out = NULL;
	spirt_aggset_reset(s);
	if ((rc = spirt_aggset_add_step(s, txn, s->step)) ||
	    (s->slots && (rc = spirt_aggset_add_slots(s, txn, s->step))) ||
	    (rc = spirt_aggset_filter(s, txn)) ||
	    (rc = spirt_aggset_check(s)))
		return rc;
	in0 = &s->in[s->first];
	if (in0->t.step == SPIRT_NOSTEP)
		return say(s, SPIRT_ESTEP, "%s: no step", in0->name);
	if (s->momentum > 0 && (rc = momenta(s, txn, 0)))
		return rc;
	if (clipping(s->p.rule) && !s->center && (rc = prevagg(s, txn)))
		return rc;
	if ((*out = malloc(in0->t.nbytes ? in0->t.nbytes : 1)) == NULL)
		return ENOMEM;
	if ((rc = run(s, *out, NULL)) || (rc = putexcluded(s, txn)))
		return rc;
	/* the inputs are read: their steps' spent ones may go */
	if (s->prune && s->hdr.step >= 2)
		rc = prune_spent(txn, s->hdr.step - 1);
	s->work_ms = 1e3 * spirt_clock() - t0;
	return rc;
}
