/* xproof.c - a proof that a part's owner lied, checked alone (spirt-peer
 * verify --proof; the proof spirt-peer exchange --parts prints, lib/xpart.c) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggstore.h"
#include "keys.h"
#include "xpart.h"

#define ULL(v) ((unsigned long long)(v))
#define XP_UNDO 0x58504e44      /* proof_txn's "undo it all" */

/* the rule's parameters as a proof names them (spirt-peer verify --proof
 * reads them back: spirt_xpart_proof_check) */
void
spirt_xpart_params_text(char *b, size_t cap,
    const struct spirt_agg_params *p)
{
	snprintf(b, cap, "rule=%s trim=%.17g f=%u m=%u mad=%.17g tau=%.17g "
	    "tau_auto=%d iters=%u bucket=%u seed=%llu",
	    spirt_agg_rule_name(p->rule), p->trim, p->f, p->m, p->mad, p->tau,
	    p->tau_auto, p->iters, p->bucket, ULL(p->seed));
}

struct pline {
	const char *p;
	size_t n;
};

/* hex of l into a malloc'd *out (*len bytes) */
static int
unhex(const struct pline *l, unsigned char **out, size_t *len)
{
	unsigned char *b;

	*out = NULL;
	if (l->n % 2)
		return SPIRT_EDATA;
	if ((b = malloc(l->n / 2 + 1)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < l->n / 2; i++) {
		int v = 0;

		for (int j = 0; j < 2; j++) {
			char c = l->p[2 * i + (size_t)j];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= c - '0';
			else if (c >= 'a' && c <= 'f')
				v |= c - 'a' + 10;
			else {
				free(b);
				return SPIRT_EDATA;
			}
		}
		b[i] = (unsigned char)v;
	}
	*out = b;
	*len = l->n / 2;
	return 0;
}

/* the rule's parameters from params_text()'s line */
static int
params_parse(struct spirt_agg_params *p, const struct pline *l, size_t P)
{
	char buf[400], rule[16];
	unsigned long long seed;
	int used = 0;

	if (l->n >= sizeof buf)
		return SPIRT_EDATA;
	memcpy(buf, l->p, l->n);
	buf[l->n] = '\0';
	spirt_agg_defaults(p);
	if (sscanf(buf, "rule=%15s trim=%lf f=%u m=%u mad=%lf tau=%lf "
	    "tau_auto=%d iters=%u bucket=%u seed=%llu%n", rule, &p->trim,
	    &p->f, &p->m, &p->mad, &p->tau, &p->tau_auto, &p->iters,
	    &p->bucket, &seed, &used) != 10 || (size_t)used != l->n ||
	    (p->rule = spirt_agg_rule_parse(rule)) == 0 ||
	    spirt_agg_check(p, P) != 0)
		return SPIRT_EDATA;
	p->seed = seed;
	return 0;
}

struct proof {
	struct spirt_xpart_rec res, *in;
	struct spirt_digest_entry *ids;         /* P: the members, in order */
	size_t P, k;
	char why[200];
	unsigned char **sl;             /* P: as they came, path and record */
	size_t *sllen;
	const void **tv;                /* P: their records (into sl) */
	size_t *tl;
	float *cen;
	uint64_t ncen;
	struct spirt_agg_params p;
	unsigned char got[SPIRT_HASH_BYTES];
};

/* the result record f->res against the P input records f->in: its
 * members' hash theirs (and each input record's), its signer the member
 * at its index (a cover's, the one after), its inputs' hash that of the
 * P input records' signatures; 0, or SPIRT_EDATA or ENOMEM with f->why */
static int
same_members(const struct proof *f, const unsigned char *h)
{
	for (size_t i = 0; i < f->P; i++)
		if (memcmp(f->in[i].members, h, SPIRT_HASH_BYTES))
			return 0;
	return 1;
}

static int
inputs_check(struct proof *f)
{
	const char **ids;
	unsigned char h[SPIRT_HASH_BYTES];
	size_t at = f->res.kind == SPIRT_XPART_COVER ? (f->k + 1) % f->P :
	    f->k;
	int rc = ENOMEM;

	ids = malloc(f->P * sizeof *ids);
	if (ids == NULL)
		goto out;
	for (size_t i = 0; i < f->P; i++)
		ids[i] = f->ids[i].id;
	rc = SPIRT_EDATA;
	if (spirt_xpart_members(h, ids, f->P) != 0)
		rc = ENOMEM;
	else if (memcmp(h, f->res.members, SPIRT_HASH_BYTES))
		snprintf(f->why, sizeof f->why, "line 2: %s's result record "
		    "names other members than the input records",
		    f->res.id);
	else if (!same_members(f, h))
		snprintf(f->why, sizeof f->why, "an input record names other "
		    "members than its signers");
	else if (strcmp(f->res.id, ids[at]))
		snprintf(f->why, sizeof f->why, "line 2: the result record "
		    "of part %zu signed by %s, not by %s", f->k, f->res.id,
		    ids[at]);
	else if (spirt_xpart_inputs(h, f->in, f->P) != 0)
		rc = ENOMEM;
	else if (memcmp(h, f->res.inputs, SPIRT_HASH_BYTES))
		snprintf(f->why, sizeof f->why, "%s's result record names "
		    "other slices than the members signed they sent",
		    f->res.id);
	else
		rc = 0;
out:
	if (rc == ENOMEM)
		snprintf(f->why, sizeof f->why, "%s", strerror(ENOMEM));
	free(ids);
	return rc;
}

/* combined again, in s, in a transaction undone */
static int
proof_txn(struct spirt_txn *t, void *arg)
{
	struct proof *f = arg;
	struct spirt_aggset *s;
	struct spirt_aggval *vals;
	char **keys, key[SPIRT_KEY_MAX + 1];
	struct spirt_tensor h;
	const void *v, *pl;
	size_t len;
	int rc = ENOMEM;

	s = malloc(sizeof *s);
	vals = calloc(f->P, sizeof *vals);
	keys = calloc(f->P, sizeof *keys);
	if (s == NULL || vals == NULL || keys == NULL)
		goto out;
	for (size_t i = 0; i < f->P; i++) {
		if ((keys[i] = malloc(SPIRT_KEY_MAX + 1)) == NULL)
			goto out;
		snprintf(keys[i], SPIRT_KEY_MAX + 1, "xslice/%llu/%s from %s",
		    ULL(f->res.step), f->ids[f->k].id, f->ids[i].id);
		vals[i].v = f->tv[i];
		vals[i].len = f->tl[i];
	}
	spirt_aggset_init(s);
	s->vals = vals;
	s->p = f->p;
	s->step = f->res.step;
	s->verify = 1;
	s->keys_checked = 1;
	s->replace = 1;
	s->out = "xpart";
	s->seq_origin = 1;
	if (f->p.rule == SPIRT_AGG_SCCLIP) {
		if ((rc = spirt_tensor_decode(&h, &pl, f->tv[f->k],
		    f->tl[f->k], 0)))
			goto out;
		s->center = pl;
		s->ncenter = h.nelem;
	} else if (f->p.rule == SPIRT_AGG_CCLIP) {
		s->center = f->cen;
		s->ncenter = f->ncen;
	}
	if ((rc = spirt_agg_store_step(s, t, keys, f->P)) == 0 &&
	    (rc = spirt_key_xpart(key, sizeof key, f->res.step, 0)) == 0 &&
	    (rc = spirt_store_get(t, key, &v, &len)) == 0) {
		spirt_hash(f->got, v, len);
		rc = XP_UNDO;
	}
	spirt_aggset_reset(s);
out:
	for (size_t i = 0; keys && i < f->P; i++)
		free(keys[i]);
	free(keys);
	free(vals);
	free(s);
	return rc;
}

int
spirt_xpart_proof_check(struct spirt_store *st, const char *text,
    size_t len, const struct spirt_trust *tr, uint64_t now, char *msg,
    size_t cap)
{
	struct pline *l = NULL;
	struct proof f;
	unsigned char *b = NULL;
	size_t nl = 0, bl = 0, P = 0;
	uint64_t off, plen;
	int rc = SPIRT_EDATA;

	memset(&f, 0, sizeof f);
	msg[0] = '\0';
	/* the lines */
	for (size_t i = 0; i < len; i++)
		nl += text[i] == '\n';
	if ((l = calloc(nl + 2, sizeof *l)) == NULL)
		return ENOMEM;
	nl = 0;
	for (size_t i = 0, a = 0; i <= len; i++)
		if (i == len || text[i] == '\n') {
			if (i == len && a == len)
				break;
			l[nl].p = text + a;
			l[nl++].n = i - a;
			a = i + 1;
		}
#define BAD(code, ...) do { \
		rc = spirt_msgf(msg, cap, (code), __VA_ARGS__); \
		goto out; \
	} while (0)
	if (nl < 2 || l[0].n < 7 || memcmp(l[0].p, "# step ", 7) != 0)
		BAD(SPIRT_EDATA, "not a proof (its first line is not \"# step "
		    "...\")");
	if ((rc = unhex(&l[1], &b, &bl)) ||
	    (rc = spirt_xpart_rec_open(&f.res, b, bl)))
		BAD(rc, "line 2: not a result record: %s", spirt_strerror(rc));
	if (f.res.kind == SPIRT_XPART_INPUTS)
		BAD(SPIRT_EDATA, "line 2: an input record, not a result");
	free(b);
	b = NULL;
	if (tr && (rc = spirt_trust_member(NULL, tr, f.res.pk, f.res.id,
	    f.res.has_token ? f.res.token : NULL, now, SPIRT_ROLE_PEER)))
		BAD(rc, "line 2: %s's record: %s", f.res.id,
		    spirt_strerror(rc));
	f.P = P = f.res.parts;
	f.k = f.res.index;
	if (nl != 2 + 2 * P + 4 + 2 * P)
		BAD(SPIRT_EDATA, "%zu lines, not the %zu of a proof of %zu "
		    "parts", nl, 2 + 4 * P + 4, P);
	f.in = calloc(P, sizeof *f.in);
	f.sl = calloc(P, sizeof *f.sl);
	f.sllen = calloc(P, sizeof *f.sllen);
	f.tv = calloc(P, sizeof *f.tv);
	f.tl = calloc(P, sizeof *f.tl);
	f.ids = calloc(P, sizeof *f.ids);
	rc = ENOMEM;
	if (f.in == NULL || f.sl == NULL || f.sllen == NULL || f.tv == NULL ||
	    f.tl == NULL || f.ids == NULL)
		goto out;
	spirt_xpart_span(f.res.n, P, f.k, &off, &plen);
	/* the members: the input records' signers, in order (a record
	 * names only their hash, which inputs_check holds each to) */
	for (size_t i = 0; i < P; i++) {
		struct spirt_xpart_rec *in = &f.in[i];

		if ((rc = unhex(&l[3 + 2 * i], &b, &bl)) ||
		    (rc = spirt_xpart_rec_open(in, b, bl)))
			BAD(rc, "line %zu: not an input record: %s", 4 + 2 * i,
			    spirt_strerror(rc));
		if ((rc = spirt_xpart_rec_verify(in, b, bl, f.res.run, in->id,
		    f.res.step, tr, now)))
			BAD(rc, "line %zu: %s's input record: %s", 4 + 2 * i,
			    in->id, spirt_strerror(rc));
		free(b);
		b = NULL;
		if (in->kind != SPIRT_XPART_INPUTS || in->parts != P ||
		    in->index != i || in->n != f.res.n ||
		    memcmp(in->model, f.res.model, SPIRT_HASH_BYTES) ||
		    (i && strcmp(f.ids[i - 1].id, in->id) >= 0))
			BAD(SPIRT_EDATA, "line %zu: %s's input record is not "
			    "of the result's round", 4 + 2 * i, in->id);
		snprintf(f.ids[i].id, sizeof f.ids[i].id, "%s", in->id);
	}
	for (size_t i = 0; i < P; i++) {
		struct spirt_xpart_rec *in = &f.in[i];
		struct spirt_tensor th;
		const void *pl;
		size_t at = 2 + 2 * P + 4 + 2 * i + 2;

		/* its slice, with its path to the member's root */
		if ((rc = unhex(&l[at - 1], &f.sl[i], &f.sllen[i])))
			BAD(rc, "line %zu: not hex", at);
		if ((rc = spirt_xpart_slice_open(in->root, f.ids[f.k].id, f.k,
		    P, f.sl[i], f.sllen[i], &f.tv[i], &f.tl[i])) == SPIRT_EMAC)
			BAD(SPIRT_EMAC, "line %zu: the slice of %s is not the "
			    "one its record names (its path does not reach its "
			    "root)", at, in->id);
		if (rc)
			BAD(rc, "line %zu: the slice of %s: not a slice with "
			    "its path: %s", at, in->id, spirt_strerror(rc));
		if ((rc = spirt_tensor_decode(&th, &pl, f.tv[i], f.tl[i],
		    1)) || th.dtype != SPIRT_F32 || th.rank != 1 ||
		    th.dims[0] != plen || th.step != f.res.step)
			BAD(rc ? rc : SPIRT_EDATA, "line %zu: the slice of %s: "
			    "not %llu values of step %llu", at, in->id,
			    ULL(plen), ULL(f.res.step));
	}
	/* the result record: of these members, signed by the one at its
	 * index (a cover's: the one after it), and naming the inputs'
	 * hash of the slices of part k each member signed it sent */
	if ((rc = inputs_check(&f)))
		BAD(rc, "%s", f.why);
	if ((rc = params_parse(&f.p, &l[2 + 2 * P + 1], P)))
		BAD(rc, "line %zu: not the rule's parameters", 2 + 2 * P + 2);
	f.p.step = f.res.step;
	if ((rc = unhex(&l[2 + 2 * P + 3], &b, &bl)))
		BAD(rc, "line %zu: not hex", 2 + 2 * P + 4);
	if (bl) {
		if (bl != plen * sizeof *f.cen)
			BAD(SPIRT_EDATA, "line %zu: a centre of %zu bytes, not "
			    "%llu floats", 2 + 2 * P + 4, bl, ULL(plen));
		if ((f.cen = malloc(bl)) == NULL) {
			rc = ENOMEM;
			goto out;
		}
		memcpy(f.cen, b, bl);
		f.ncen = plen;
	}
	rc = spirt_store_writef(st, SPIRT_TXN_VOLATILE, proof_txn, &f);
	if (rc != XP_UNDO)
		BAD(rc, "the slices do not combine: %s", spirt_strerror(rc));
	{
		char hs[2 * SPIRT_HASH_BYTES + 1], hg[2 * SPIRT_HASH_BYTES + 1];

		spirt_hash_hex(hs, f.res.hash);
		spirt_hash_hex(hg, f.got);
		if (memcmp(f.got, f.res.hash, SPIRT_HASH_BYTES) == 0)
			BAD(SPIRT_EDATA, "not a proof: the slices %s's record "
			    "names combine to the part it signed (%s)",
			    f.res.id, hs);
		rc = 0;
		snprintf(msg, cap, "step %llu: %s, %s part %u of %zu, signed "
		    "xpart/%llu = %s; the slices its record names combine to "
		    "%s", ULL(f.res.step), f.res.id, f.res.kind ==
		    SPIRT_XPART_COVER ? "covering" : "the owner of", f.res.index,
		    P, ULL(f.res.step), hs, hg);
	}
#undef BAD
out:
	free(b);
	for (size_t i = 0; f.sl && i < P; i++)
		free(f.sl[i]);
	free(f.sl);
	free(f.sllen);
	free(f.tv);
	free(f.tl);
	free(f.in);
	free(f.ids);
	free(f.cen);
	free(l);
	return rc;
}
