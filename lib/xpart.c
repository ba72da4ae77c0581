/* xpart.c - the partitioned exchange: parts, their signed records, a round */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggstore.h"
#include "exchange.h"
#include "keys.h"
#include "le.h"
#include "lineage.h"
#include "tensor.h"
#include "xpart.h"
#include "xpull.h"
#include "xrec.h"

#define XP_MAGIC "SPXP"
#define XP_VERSION 1

#define say(x, rc, ...) spirt_msgf((x)->msg, sizeof (x)->msg, (rc), \
	__VA_ARGS__)
#define ULL(v) ((unsigned long long)(v))

/* ---- the record ---- */

void
spirt_xpart_span(uint64_t n, size_t parts, size_t k, uint64_t *off,
    uint64_t *len)
{
	uint64_t q = n / parts, r = n % parts;
	uint64_t a = k * q + k * r / parts;
	uint64_t b = (k + 1) * q + (k + 1) * r / parts;

	*off = a;
	*len = b - a;
}

size_t
spirt_xpart_rec_size(size_t parts, int has_token)
{
	return SPIRT_XPART_HEAD + (has_token ? SPIRT_TOKEN_BYTES : 0) +
	    parts * SPIRT_XPART_ENTRY + SPIRT_SIG_BYTES;
}

/* r's bytes before the signature into out (cap checked by the caller);
 * returns their length */
static size_t
rec_pack(unsigned char *out, const struct spirt_xpart_rec *r)
{
	size_t off;

	memset(out, 0, SPIRT_XPART_HEAD);
	memcpy(out, XP_MAGIC, 4);
	out[4] = XP_VERSION;
	out[5] = (unsigned char)r->kind;
	spirt_le_put16(out + 6, r->has_token ? SPIRT_TOKEN_BYTES : 0);
	spirt_le_put64(out + 8, r->step);
	spirt_le_put32(out + 16, r->parts);
	spirt_le_put32(out + 20, r->index);
	spirt_wire_id_put(out + 24, r->run);
	spirt_wire_id_put(out + 56, r->id);
	memcpy(out + 88, r->pk, SPIRT_PK_BYTES);
	spirt_le_put64(out + 120, r->n);
	memcpy(out + 128, r->model, SPIRT_HASH_BYTES);
	memcpy(out + 160, r->hash, SPIRT_HASH_BYTES);
	off = SPIRT_XPART_HEAD;
	if (r->has_token) {
		memcpy(out + off, r->token, SPIRT_TOKEN_BYTES);
		off += SPIRT_TOKEN_BYTES;
	}
	for (size_t i = 0; i < r->parts; i++, off += SPIRT_XPART_ENTRY) {
		spirt_wire_id_put(out + off, r->e[i].id);
		memcpy(out + off + 32, r->e[i].hash, SPIRT_HASH_BYTES);
	}
	return off;
}

int
spirt_xpart_rec_sign(unsigned char *out, size_t cap, size_t *len,
    struct spirt_xpart_rec *r, const struct spirt_key *k)
{
	size_t need, off;

	*len = 0;
	if ((r->kind != SPIRT_XPART_INPUTS && r->kind != SPIRT_XPART_RESULT) ||
	    !spirt_id_valid(r->run) || !spirt_id_valid(r->id) ||
	    r->parts == 0 || r->parts > SPIRT_XPART_MAXPARTS ||
	    r->index >= r->parts || strcmp(r->e[r->index].id, r->id) != 0)
		return SPIRT_EINVAL;
	for (size_t i = 0; i < r->parts; i++)
		if (!spirt_id_valid(r->e[i].id) ||
		    (i && strcmp(r->e[i - 1].id, r->e[i].id) >= 0))
			return SPIRT_EINVAL;
	if (cap < (need = spirt_xpart_rec_size(r->parts, r->has_token)))
		return SPIRT_EINVAL;
	spirt_key_public(r->pk, k);
	off = rec_pack(out, r);
	spirt_key_sign(r->sig, k, out, off);
	memcpy(out + off, r->sig, SPIRT_SIG_BYTES);
	*len = need;
	return 0;
}

int
spirt_xpart_rec_open(struct spirt_xpart_rec *r, const unsigned char *b,
    size_t len)
{
	size_t tl, parts, need, off;
	int rc;

	if (len < SPIRT_XPART_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(b, XP_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (b[4] != XP_VERSION)
		return SPIRT_EVERSION;
	tl = spirt_le_get16(b + 6);
	parts = spirt_le_get32(b + 16);
	if ((b[5] != SPIRT_XPART_INPUTS && b[5] != SPIRT_XPART_RESULT) ||
	    (tl != 0 && tl != SPIRT_TOKEN_BYTES) || parts == 0 ||
	    parts > SPIRT_XPART_MAXPARTS || spirt_le_get32(b + 20) >= parts)
		return SPIRT_EDATA;
	need = spirt_xpart_rec_size(parts, tl != 0);
	if (len < need)
		return SPIRT_ETRUNC;
	if (len > need)
		return SPIRT_EDATA;
	/* the signature first: from here on, every field is the signer's */
	if ((rc = spirt_sig_verify(b + need - SPIRT_SIG_BYTES, b + 88, b,
	    need - SPIRT_SIG_BYTES)))
		return rc;
	memset(r, 0, offsetof(struct spirt_xpart_rec, e));
	r->kind = b[5];
	r->step = spirt_le_get64(b + 8);
	r->parts = (uint32_t)parts;
	r->index = spirt_le_get32(b + 20);
	if ((rc = spirt_wire_id_get(r->run, b + 24)) ||
	    (rc = spirt_wire_id_get(r->id, b + 56)))
		return rc;
	memcpy(r->pk, b + 88, SPIRT_PK_BYTES);
	r->n = spirt_le_get64(b + 120);
	memcpy(r->model, b + 128, SPIRT_HASH_BYTES);
	memcpy(r->hash, b + 160, SPIRT_HASH_BYTES);
	off = SPIRT_XPART_HEAD;
	if ((r->has_token = tl != 0)) {
		memcpy(r->token, b + off, SPIRT_TOKEN_BYTES);
		off += SPIRT_TOKEN_BYTES;
	}
	for (size_t i = 0; i < parts; i++, off += SPIRT_XPART_ENTRY) {
		struct spirt_digest_entry *e = &r->e[i];

		if ((rc = spirt_wire_id_get(e->id, b + off)))
			return rc;
		if (i && strcmp(r->e[i - 1].id, e->id) >= 0)
			return SPIRT_EDATA;
		memcpy(e->hash, b + off + 32, SPIRT_HASH_BYTES);
	}
	if (strcmp(r->e[r->index].id, r->id) != 0)
		return SPIRT_EDATA;
	memcpy(r->sig, b + off, SPIRT_SIG_BYTES);
	return 0;
}

int
spirt_xpart_rec_verify(struct spirt_xpart_rec *r, const unsigned char *buf,
    size_t len, const char *run, const char *peer, uint64_t step,
    const struct spirt_trust *t, uint64_t now)
{
	int rc;

	if ((rc = spirt_xpart_rec_open(r, buf, len)))
		return rc;
	if (strcmp(r->run, run) != 0)
		return SPIRT_ERUN;
	if (strcmp(r->id, peer) != 0)
		return SPIRT_EADDR;
	if (r->step != step)
		return SPIRT_ESTEP;
	if (t == NULL)
		return 0;
	return spirt_trust_member(NULL, t, r->pk, r->id, r->has_token ?
	    r->token : NULL, now, SPIRT_ROLE_PEER);
}

/* ---- the round ---- */

/* the round's state: the members in id order, what each signed */
struct xr {
	struct spirt_exchange *x;
	size_t P, me;
	const char **ids;               /* P, ascending */
	struct spirt_xpart_rec *in;     /* P: input records */
	struct spirt_xpart_rec *res;    /* P: result records */
	struct spirt_tensor agg;        /* this peer's aggregate, header */
	uint64_t n;
	unsigned char **slice;          /* P: slice me of member i (owned) */
	size_t *slicelen;
	unsigned char **part;           /* P: part i (owned) */
	size_t *partlen;
	/* the transactions' own */
	unsigned char *buf;
	size_t buflen;
	char *round;
	size_t roundlen;
};

static int
byname(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t
pos_of(const struct xr *r, const char *id)
{
	for (size_t i = 0; i < r->P; i++)
		if (strcmp(r->ids[i], id) == 0)
			return i;
	return SIZE_MAX;
}

/* the keys (lib/xpull.h's spirt_xpull_key): xslice/<t> (a member's input
 * record), xslice/<t>/<id> (its slice for owner id), xpart/<t> (its
 * combined part) and xpart/<t>/signed (the result record) */
static int
key_inrec(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return spirt_key_xslice(buf, cap, step, NULL);
}

static int
key_slice(char *buf, size_t cap, uint64_t step, const char *id)
{
	return spirt_key_xslice(buf, cap, step, id);
}

static int
key_part(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return spirt_key_xpart(buf, cap, step, 0);
}

static int
key_resrec(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return spirt_key_xpart(buf, cap, step, 1);
}

/* a slice or a part: an f32 record of len floats for step t, checksum
 * checked; into *h */
static int
value_ok(const struct xr *r, const void *v, size_t len, uint64_t want,
    struct spirt_tensor *h)
{
	const void *pl;
	int rc;

	if ((rc = spirt_tensor_decode(h, &pl, v, len, 1)))
		return rc;
	if (h->dtype != SPIRT_F32 || h->rank != 1 || h->dims[0] != want ||
	    h->step != r->x->step || strcmp(h->name, r->agg.name) != 0)
		return SPIRT_EDATA;
	return 0;
}

/* slice k of the aggregate (header r->agg, payload pl) as a record in
 * r->buf (r->buflen bytes): the aggregate's header, its shape one dim */
static int
cut(struct xr *r, const void *pl, size_t k)
{
	struct spirt_tensor t;
	uint64_t off, len;
	int rc;

	spirt_xpart_span(r->n, r->P, k, &off, &len);
	if ((rc = spirt_tensor_init(&t, SPIRT_F32, 1, &len)) ||
	    (rc = spirt_tensor_set_name(&t, r->agg.name)))
		return rc;
	t.step = r->agg.step;
	t.samples = r->agg.samples;
	t.loss = r->agg.loss;
	t.origin = r->agg.origin;
	t.count = r->agg.count;
	spirt_tensor_set_revision(&t, r->agg.revision);
	free(r->buf);
	r->buflen = spirt_tensor_reclen(&t);
	if ((r->buf = malloc(r->buflen)) == NULL)
		return ENOMEM;
	return spirt_tensor_encode(r->buf, r->buflen, &t,
	    (const float *)pl + off);
}

static void
rec_head(struct xr *r, struct spirt_xpart_rec *rec, int kind)
{
	struct spirt_exchange *x = r->x;

	memset(rec, 0, offsetof(struct spirt_xpart_rec, e));
	rec->kind = kind;
	rec->step = x->step;
	rec->parts = (uint32_t)r->P;
	rec->index = (uint32_t)r->me;
	rec->n = r->n;
	snprintf(rec->run, sizeof rec->run, "%s", x->run);
	snprintf(rec->id, sizeof rec->id, "%s", x->self);
	memcpy(rec->model, x->modelhash, SPIRT_HASH_BYTES);
	if ((rec->has_token = x->token != NULL))
		memcpy(rec->token, x->token, SPIRT_TOKEN_BYTES);
	for (size_t i = 0; i < r->P; i++)
		snprintf(rec->e[i].id, sizeof rec->e[i].id, "%s", r->ids[i]);
}

/* sign rec into the u8 record at key */
static int
put_rec(struct xr *r, struct spirt_txn *t, const char *key,
    struct spirt_xpart_rec *rec)
{
	size_t cap = spirt_xpart_rec_size(r->P, rec->has_token), len;
	unsigned char *b;
	int rc;

	if ((b = malloc(cap)) == NULL)
		return ENOMEM;
	if ((rc = spirt_xpart_rec_sign(b, cap, &len, rec, r->x->key)) == 0)
		rc = spirt_store_put_bytes(t, key, b, len, r->x->step, 0);
	free(b);
	return rc;
}

/* a record of this store at key (the u8 record), opened into rec */
static int
get_rec(struct xr *r, struct spirt_txn *t, const char *key,
    struct spirt_xpart_rec *rec)
{
	const void *v, *b;
	size_t len, n;
	int rc;

	if ((rc = spirt_store_get(t, key, &v, &len)))
		return rc;
	if ((rc = spirt_store_get_bytes(v, len, &b, &n)) ||
	    (rc = spirt_xpart_rec_open(rec, b, n)))
		return say(r->x, rc, "%s: %s", key, spirt_strerror(rc));
	return 0;
}

/* step 1: the published aggregate cut into P slices, xslice/<t>/<id>,
 * and the input record xslice/<t>; a rerun reads the ones signed */
static int
cut_txn(struct spirt_txn *t, void *arg)
{
	struct xr *r = arg;
	struct spirt_exchange *x = r->x;
	struct spirt_xpart_rec *rec = &r->in[r->me];
	char key[SPIRT_KEY_MAX + 1], mk[SPIRT_KEY_MAX + 1];
	const void *v, *pl;
	size_t len;
	int rc;

	if ((rc = spirt_model_hash(x->modelhash, t, x->model, x->step, mk,
	    sizeof mk)))
		return say(x, rc, "%s: %s", mk, spirt_strerror(rc));
	if ((rc = spirt_key_xagg(key, sizeof key, x->step, x->self)) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return say(x, rc, "%s: %s", key, spirt_strerror(rc));
	spirt_hash(x->agghash, v, len);
	/* (publish checked its checksum) */
	if ((rc = spirt_tensor_decode(&r->agg, &pl, v, len, 0)))
		return say(x, rc, "%s: %s", key, spirt_strerror(rc));
	if (r->agg.dtype != SPIRT_F32 || r->agg.nelem < r->P)
		return say(x, SPIRT_EDATA, "%s: %llu values, fewer than the "
		    "%zu parts, or not f32", key, ULL(r->agg.nelem), r->P);
	r->n = r->agg.nelem;
	if ((rc = key_inrec(key, sizeof key, x->step, NULL)))
		return rc;
	if ((rc = get_rec(r, t, key, rec)) == 0) {
		if (rec->parts != r->P || rec->n != r->n ||
		    rec->index != r->me || memcmp(rec->hash, x->agghash,
		    SPIRT_HASH_BYTES))
			return say(x, SPIRT_EDATA, "%s: signed before for "
			    "another round (%u parts, %llu values)", key,
			    rec->parts, ULL(rec->n));
		return 0;
	}
	if (rc != SPIRT_ENOTFOUND)
		return rc;
	rec_head(r, rec, SPIRT_XPART_INPUTS);
	memcpy(rec->hash, x->agghash, SPIRT_HASH_BYTES);
	for (size_t k = 0; k < r->P; k++) {
		if ((rc = cut(r, pl, k)) ||
		    (rc = key_slice(key, sizeof key, x->step, r->ids[k])) ||
		    (rc = spirt_store_put(t, key, r->buf, r->buflen, 0)))
			return rc;
		spirt_hash(rec->e[k].hash, r->buf, r->buflen);
	}
	if ((rc = key_inrec(key, sizeof key, x->step, NULL)))
		return rc;
	return put_rec(r, t, key, rec);
}

/* pull key from every other member into u; one that did not come fails
 * the round (no member is left out: each owns a part) */
static int
pull(struct xr *r, struct spirt_xpull *u, spirt_xpull_key key,
    const char *id, const char *what)
{
	struct spirt_exchange *x = r->x;
	struct spirt_xlink l;
	int *want, rc;

	if ((want = calloc(x->n ? x->n : 1, sizeof *want)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < x->n; i++) {
		free(u[i].val);
		memset(&u[i], 0, sizeof u[i]);
		want[i] = 1;
	}
	spirt_exchange_link(&l, x, 0);
	rc = spirt_xpull_all(&l, u, key, id, want);
	free(want);
	if (rc)
		return rc == EINTR ? say(x, rc, "step %llu: stopped",
		    ULL(x->step)) : rc;
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];
		char k[SPIRT_KEY_MAX + 1];

		if (u[i].rc == 0)
			continue;
		(void)key(k, sizeof k, x->step, id ? id : p->id);
		if (spirt_xpull_refusal(u[i].rc)) {
			spirt_xpeer_out(p, SPIRT_XP_REFUSED, u[i].rc,
			    "%s: %s", k, u[i].why[0] ? u[i].why :
			    spirt_strerror(u[i].rc));
			return say(x, u[i].rc, "step %llu: %s of %s refused: "
			    "%s: %s", ULL(x->step), what, p->id, k,
			    p->why);
		}
		spirt_xpeer_out(p, SPIRT_XP_LATE, u[i].rc, "%s: %s (no "
		    "answer in %u ms)", k, u[i].why[0] ? u[i].why :
		    spirt_strerror(u[i].rc), x->deadline_ms);
		return say(x, SPIRT_EBUSY, "step %llu: %s of %s not there "
		    "before the deadline (%u ms), nothing combined: %s: %s",
		    ULL(x->step), what, p->id, x->deadline_ms, k,
		    u[i].why[0] ? u[i].why : spirt_strerror(u[i].rc));
	}
	return 0;
}

/* a record pulled from member i (u, a u8 record): signed by it for this
 * round, of kind, naming the members in order and our model */
static int
rec_ok(struct xr *r, size_t i, struct spirt_xpull *u, int kind,
    struct spirt_xpart_rec *rec, const char *what)
{
	struct spirt_exchange *x = r->x;
	const char *id = r->ids[i];
	const void *b;
	size_t n;
	int rc;

	if ((rc = spirt_store_get_bytes(u->val, u->len, &b, &n)) ||
	    (rc = spirt_xpart_rec_verify(rec, b, n, x->run, id, x->step,
	    x->trust, spirt_crypto_now())))
		return say(x, rc, "step %llu: %s's %s: %s", ULL(x->step), id,
		    what, spirt_strerror(rc));
	if (rec->kind != kind || rec->parts != r->P || rec->n != r->n ||
	    rec->index != i)
		return say(x, SPIRT_EDATA, "step %llu: %s's %s is not one "
		    "of this round (kind %d, part %u of %u, %llu values; "
		    "here part %zu of %zu, %llu values)", ULL(x->step), id,
		    what, rec->kind, rec->index, rec->parts, ULL(rec->n), i,
		    r->P, ULL(r->n));
	for (size_t k = 0; k < r->P; k++)
		if (strcmp(rec->e[k].id, r->ids[k]) != 0)
			return say(x, SPIRT_EDATA, "step %llu: %s's %s names "
			    "member %s where this round has %s", ULL(x->step),
			    id, what, rec->e[k].id, r->ids[k]);
	if (memcmp(rec->model, x->modelhash, SPIRT_HASH_BYTES))
		return say(x, SPIRT_EMODEL, "step %llu: %s's model/%s@%llu "
		    "differs from this peer's", ULL(x->step), id, x->model,
		    ULL(x->step));
	return 0;
}

/* step 2: every member's input record, and its slice of our part, each
 * held to the record */
static int
inputs(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	struct spirt_tensor h;
	unsigned char hash[SPIRT_HASH_BYTES];
	int rc;

	if ((rc = pull(r, u, key_inrec, NULL, "the input record")))
		return rc;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = pos_of(r, x->peers[j].id);

		if ((rc = rec_ok(r, i, &u[j], SPIRT_XPART_INPUTS, &r->in[i],
		    "input record xslice/<t>")))
			return rc;
	}
	if ((rc = pull(r, u, key_slice, x->self, "the slice")))
		return rc;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = pos_of(r, x->peers[j].id);
		uint64_t off, len;

		spirt_hash(hash, u[j].val, u[j].len);
		if (memcmp(hash, r->in[i].e[r->me].hash, SPIRT_HASH_BYTES))
			return say(x, SPIRT_EMAC, "step %llu: xslice/%llu/%s "
			    "from %s is not the slice its signed record names",
			    ULL(x->step), ULL(x->step), x->self, r->ids[i]);
		spirt_xpart_span(r->n, r->P, r->me, &off, &len);
		if ((rc = value_ok(r, u[j].val, u[j].len, len, &h)))
			return say(x, rc, "step %llu: xslice/%llu/%s from %s: "
			    "not a slice of %llu values of model \"%s\": %s",
			    ULL(x->step), ULL(x->step), x->self, r->ids[i],
			    ULL(len), r->agg.name, spirt_strerror(rc));
		r->slice[i] = u[j].val;
		r->slicelen[i] = u[j].len;
		u[j].val = NULL;
	}
	return 0;
}

/* the aggregation of a part, the owner's and its checkers' alike: the P
 * slices in vals (or the store's), checked as they came, in member order
 * (origins their positions), into xpart/<t> */
static void
part_aggset(struct spirt_aggset *s, const struct spirt_exchange *x,
    const struct spirt_aggval *vals)
{
	spirt_aggset_init(s);
	s->vals = vals;
	s->p = x->p;
	s->step = x->step;
	s->verify = 1;
	s->keys_checked = 1;
	s->replace = 1;
	s->out = "xpart";
	s->seq_origin = 1;
}

/* step 3: our part, the P slices combined (in id order, as the
 * all-to-all exchange combines whole aggregates), xpart/<t>, and the
 * result record xpart/<t>/signed naming its inputs and its hash */
struct combine {
	struct xr *r;
	struct spirt_aggset *s;
	char **keys;
	struct spirt_aggval *vals;
	unsigned char got[SPIRT_HASH_BYTES];    /* a check's result */
};

/* the test hook x->lie: the combined part at key, its first float plus
 * 1 (a new checksum), before its owner signs it */
static int
lie(struct spirt_txn *t, const char *key)
{
	struct spirt_tensor h;
	const void *v, *pl;
	unsigned char *b;
	float *f;
	size_t len;
	int rc;

	if ((rc = spirt_store_get(t, key, &v, &len)) ||
	    (rc = spirt_tensor_decode(&h, &pl, v, len, 0)))
		return rc;
	b = malloc(len);
	f = malloc(h.nbytes ? h.nbytes : 1);
	if (b && f) {
		memcpy(f, pl, h.nbytes);
		if (h.nelem)
			f[0] += 1;
		if ((rc = spirt_tensor_encode(b, len, &h, f)) == 0)
			rc = spirt_store_put(t, key, b, len, 0);
	} else {
		rc = ENOMEM;
	}
	free(b);
	free(f);
	return rc;
}

static int
combine_txn(struct spirt_txn *t, void *arg)
{
	struct combine *c = arg;
	struct xr *r = c->r;
	struct spirt_exchange *x = r->x;
	struct spirt_xpart_rec *rec = &r->res[r->me];
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	if ((rc = key_resrec(key, sizeof key, x->step, NULL)))
		return rc;
	/* combined and signed before (a rerun): it stands */
	if ((rc = get_rec(r, t, key, rec)) == 0)
		return 0;
	if (rc != SPIRT_ENOTFOUND)
		return rc;
	if ((rc = spirt_agg_store_step(c->s, t, c->keys, r->P)))
		return rc;
	if ((rc = key_part(key, sizeof key, x->step, NULL)) ||
	    (x->lie && (rc = lie(t, key))) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return rc;
	rec_head(r, rec, SPIRT_XPART_RESULT);
	spirt_hash(rec->hash, v, len);
	for (size_t i = 0; i < r->P; i++)
		memcpy(rec->e[i].hash, r->in[i].e[r->me].hash,
		    SPIRT_HASH_BYTES);
	if ((rc = key_resrec(key, sizeof key, x->step, NULL)))
		return rc;
	return put_rec(r, t, key, rec);
}

static int
combine(struct xr *r)
{
	struct spirt_exchange *x = r->x;
	struct combine c = { r, NULL, NULL, NULL, { 0 } };
	char own[SPIRT_KEY_MAX + 1];
	int rc = ENOMEM;

	c.keys = calloc(r->P, sizeof *c.keys);
	c.vals = calloc(r->P, sizeof *c.vals);
	if (c.keys == NULL || c.vals == NULL ||
	    (c.s = malloc(sizeof *c.s)) == NULL)
		goto out;
	for (size_t i = 0; i < r->P; i++) {
		if ((c.keys[i] = malloc(SPIRT_KEY_MAX + 1)) == NULL)
			goto out;
		/* (the slices' names in messages; ours is in the store) */
		if ((rc = key_slice(c.keys[i], SPIRT_KEY_MAX + 1, x->step,
		    i == r->me ? x->self : r->ids[i])))
			goto out;
		if (i != r->me) {
			snprintf(c.keys[i], SPIRT_KEY_MAX + 1, "xslice/%llu/"
			    "%s from %s", ULL(x->step), x->self, r->ids[i]);
			c.vals[i].v = r->slice[i];
			c.vals[i].len = r->slicelen[i];
		}
	}
	part_aggset(c.s, x, c.vals);
	/* self-centred clipping: the owner's own slice is the centre (so
	 * every member assembles the same vector; it is not the
	 * all-to-all's, where each peer centres on its own aggregate) */
	if (x->p.rule == SPIRT_AGG_SCCLIP) {
		if ((rc = key_slice(own, sizeof own, x->step, x->self)))
			goto out;
		c.s->center_key = own;
	}
	if ((rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, combine_txn,
	    &c)) && c.s->msg[0])
		say(x, rc, "step %llu: part %zu: %s", ULL(x->step), r->me,
		    c.s->msg);
	spirt_aggset_reset(c.s);
out:
	for (size_t i = 0; c.keys && i < r->P; i++)
		free(c.keys[i]);
	free(c.keys);
	free(c.vals);
	free(c.s);
	return rc;
}

/* step 4: every other owner's part, held to its result record, and the
 * record to the inputs' records (the owner combined what each member
 * signed it sent, nothing else) */
static int
parts(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	struct spirt_tensor h;
	unsigned char hash[SPIRT_HASH_BYTES];
	int rc;

	if ((rc = pull(r, u, key_resrec, NULL, "the part's record")))
		return rc;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = pos_of(r, x->peers[j].id);
		struct spirt_xpart_rec *rec = &r->res[i];

		if ((rc = rec_ok(r, i, &u[j], SPIRT_XPART_RESULT, rec,
		    "part record xpart/<t>/signed")))
			return rc;
		for (size_t k = 0; k < r->P; k++)
			if (memcmp(rec->e[k].hash, r->in[k].e[i].hash,
			    SPIRT_HASH_BYTES))
				return say(x, SPIRT_EMAC, "step %llu: %s, the "
				    "owner of part %zu, signed it combined an "
				    "input of %s that %s did not sign it sent",
				    ULL(x->step), r->ids[i], i, r->ids[k],
				    r->ids[k]);
	}
	if ((rc = pull(r, u, key_part, NULL, "the combined part")))
		return rc;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = pos_of(r, x->peers[j].id);
		uint64_t off, len;

		spirt_hash(hash, u[j].val, u[j].len);
		if (memcmp(hash, r->res[i].hash, SPIRT_HASH_BYTES))
			return say(x, SPIRT_EMAC, "step %llu: xpart/%llu from "
			    "%s, the owner of part %zu of %zu, is not the part "
			    "its signed record names", ULL(x->step),
			    ULL(x->step), r->ids[i], i, r->P);
		spirt_xpart_span(r->n, r->P, i, &off, &len);
		if ((rc = value_ok(r, u[j].val, u[j].len, len, &h)))
			return say(x, rc, "step %llu: xpart/%llu from %s: not "
			    "a part of %llu values of model \"%s\": %s",
			    ULL(x->step), ULL(x->step), r->ids[i], ULL(len),
			    r->agg.name, spirt_strerror(rc));
		r->part[i] = u[j].val;
		r->partlen[i] = u[j].len;
		u[j].val = NULL;
		x->peers[j].state = SPIRT_XP_USED;
	}
	return 0;
}

/* step 5: gagg/<t>, the parts end to end under part 0's header with the
 * aggregate's shape, and the round's record */
static int
assemble_txn(struct spirt_txn *t, void *arg)
{
	struct xr *r = arg;
	struct spirt_exchange *x = r->x;
	struct spirt_tensor h, g;
	struct spirt_tensor_sum sum;
	char key[SPIRT_KEY_MAX + 1];
	const void *pl;
	unsigned char *dst;
	size_t len;
	int rc;

	if ((rc = spirt_tensor_decode(&h, &pl, r->part[0], r->partlen[0], 0)))
		return rc;
	g = h;
	g.rank = r->agg.rank;
	memcpy(g.dims, r->agg.dims, sizeof g.dims);
	g.nelem = r->agg.nelem;
	g.nbytes = r->agg.nbytes;
	spirt_tensor_hdrlen(&g);
	len = spirt_tensor_reclen(&g);
	if ((rc = spirt_key_gagg(key, sizeof key, x->step)) ||
	    (rc = spirt_store_reserve(t, key, len, (void **)&dst, 0)) ||
	    (rc = spirt_tensor_pack_header(dst, len, &g)))
		return rc;
	spirt_tensor_sum_init(&sum, &g);
	len = g.hdrlen;
	for (size_t i = 0; i < r->P; i++) {
		if ((rc = spirt_tensor_decode(&h, &pl, r->part[i],
		    r->partlen[i], 0)))
			return rc;
		memcpy(dst + len, pl, h.nbytes);
		spirt_tensor_sum_add(&sum, pl, h.nbytes);
		len += h.nbytes;
	}
	spirt_tensor_sum_trailer(dst + len, &sum);
	spirt_hash(x->gagghash, dst, len + SPIRT_TENSOR_TRAILER);
	free(r->round);
	{
		struct spirt_xrec rr = {
			.step = x->step, .rule = spirt_agg_rule_name(x->p.rule),
			.self = x->self, .peers = x->peers, .n = x->n,
			.adopted = x->adopted, .gagghash = x->gagghash
		};

		if ((r->round = spirt_xrec_round(&rr, &r->roundlen)) == NULL)
			return ENOMEM;
	}
	if ((rc = spirt_key_gagg_round(key, sizeof key, x->step)))
		return rc;
	return spirt_store_put_bytes(t, key, r->round, r->roundlen, x->step,
	    SPIRT_PUT_NOOVERWRITE);
}

/* a copy of this store's value at key (built by fn for id), as a pulled
 * one */
static int
copy_id(struct xr *r, spirt_xpull_key fn, const char *id, unsigned char **out,
    size_t *len)
{
	struct spirt_txn *t;
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	int rc;

	if ((rc = fn(key, sizeof key, r->x->step, id)) ||
	    (rc = spirt_txn_begin(&t, r->x->store, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_store_get(t, key, &v, len)) == 0 &&
	    (*out = malloc(*len ? *len : 1)) == NULL)
		rc = ENOMEM;
	else if (rc == 0)
		memcpy(*out, v, *len);
	spirt_txn_abort(t);
	return rc ? say(r->x, rc, "%s: %s", key, spirt_strerror(rc)) : 0;
}

static int
copy_own(struct xr *r, spirt_xpull_key fn, unsigned char **out, size_t *len)
{
	return copy_id(r, fn, r->x->self, out, len);
}

/* ---- checked owners ---- */

/* the round's draw: the hash of the P input records' signatures in
 * member order (every member holds them all after step 2, and no member
 * chose the others') */
static int
draw_seed(const struct xr *r, unsigned char seed[SPIRT_HASH_BYTES])
{
	unsigned char *b;

	if ((b = malloc(r->P * SPIRT_SIG_BYTES)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < r->P; i++)
		memcpy(b + i * SPIRT_SIG_BYTES, r->in[i].sig, SPIRT_SIG_BYTES);
	spirt_hash(seed, b, r->P * SPIRT_SIG_BYTES);
	free(b);
	return 0;
}

/* whether member c checks part k: the checkers of part k are the R =
 * min(check, P - 1) members at distances o, o + 1, ... o + R - 1 (mod
 * P - 1) after k in the ring of members, o the first 8 bytes (LE) of
 * the hash of the seed and k (u32 LE), modulo P - 1 */
static int
is_checker(const struct xr *r, const unsigned char *seed, size_t k, size_t c)
{
	unsigned char b[SPIRT_HASH_BYTES + 4], h[SPIRT_HASH_BYTES];
	size_t R = r->x->check < r->P - 1 ? r->x->check : r->P - 1;
	uint64_t o, d;

	if (c == k || R == 0)
		return 0;
	memcpy(b, seed, SPIRT_HASH_BYTES);
	spirt_le_put32(b + SPIRT_HASH_BYTES, (uint32_t)k);
	spirt_hash(h, b, sizeof b);
	o = spirt_le_get64(h) % (r->P - 1);
	d = (c + r->P - k - 1) % r->P;          /* 0 .. P - 2 */
	return (d + (r->P - 1) - o) % (r->P - 1) < R;
}

#define XP_UNDO 0x58504e44      /* recheck_txn's "undo it all" */

/* part k combined again, in a transaction undone: the hash of the
 * xpart/<t> it would write */
static int
recheck_txn(struct spirt_txn *t, void *arg)
{
	struct combine *c = arg;
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	if ((rc = spirt_agg_store_step(c->s, t, c->keys, c->r->P)) ||
	    (rc = key_part(key, sizeof key, c->r->x->step, NULL)) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return rc;
	spirt_hash(c->got, v, len);
	return XP_UNDO;
}

/* append the hex of rec's bytes, a line, to the proof at *p (*n of it) */
static int
proof_rec(char **p, size_t *n, const struct spirt_xpart_rec *rec,
    const char *what)
{
	size_t len = spirt_xpart_rec_size(rec->parts, rec->has_token), off;
	size_t need = *n + strlen(what) + 2 * len + 3;
	unsigned char *b;
	char *q;

	if ((b = malloc(len)) == NULL ||
	    (q = realloc(*p, need + 1)) == NULL) {
		free(b);
		return ENOMEM;
	}
	*p = q;
	off = rec_pack(b, rec);
	memcpy(b + off, rec->sig, SPIRT_SIG_BYTES);
	*n += (size_t)snprintf(q + *n, need + 1 - *n, "%s\n", what);
	for (size_t i = 0; i < len; i++)
		*n += (size_t)snprintf(q + *n, need + 1 - *n, "%02x", b[i]);
	q[(*n)++] = '\n';
	q[*n] = '\0';
	free(b);
	return 0;
}

/* the proof that the owner of part k signed another combination than its
 * signed inputs make, to its xpeer (the round's report prints it) */
static int
accuse(struct xr *r, size_t k, const unsigned char *got)
{
	struct spirt_exchange *x = r->x;
	struct spirt_xpeer *p = NULL;
	char hs[2 * SPIRT_HASH_BYTES + 1], hg[2 * SPIRT_HASH_BYTES + 1];
	char line[SPIRT_KEY_MAX + 400], *proof = NULL;
	size_t n = 0;
	int rc = 0;

	for (size_t j = 0; j < x->n; j++)
		if (strcmp(x->peers[j].id, r->ids[k]) == 0)
			p = &x->peers[j];
	if (p == NULL)
		return SPIRT_EINVAL;
	spirt_hash_hex(hs, r->res[k].hash);
	spirt_hash_hex(hg, got);
	snprintf(line, sizeof line, "# step %llu: part %zu of %zu combined "
	    "wrongly by %s (checked by %s): its signed record names "
	    "xpart/%llu = %s, the slices its record names combine to %s",
	    ULL(x->step), k, r->P, r->ids[k], x->self, ULL(x->step), hs, hg);
	if ((rc = proof_rec(&proof, &n, &r->res[k], line)))
		goto out;
	for (size_t i = 0; i < r->P && rc == 0; i++) {
		snprintf(line, sizeof line, "# xslice/%llu of %s (its slice "
		    "xslice/%llu/%s: entry %zu)", ULL(x->step), r->ids[i],
		    ULL(x->step), r->ids[k], k);
		rc = proof_rec(&proof, &n, &r->in[i], line);
	}
	if (rc)
		goto out;
	spirt_xpeer_out(p, SPIRT_XP_REFUSED, SPIRT_EMAC, "part %zu of %zu "
	    "combined wrongly: xpart/%llu is not the combination of the "
	    "slices its signed record names", k, r->P, ULL(x->step));
	free(p->proof);
	p->proof = proof;
	proof = NULL;
out:
	free(proof);
	return rc;
}

/* cclip's centre of part k (len floats) into *out: its floats of this
 * store's gagg/<t-1>, zero without one (the owner's xpart/<t-1> is that
 * part, when the members were the same; none: no centre, zero) */
static int
last_part(struct xr *r, size_t k, uint64_t len, float **out)
{
	struct spirt_exchange *x = r->x;
	struct spirt_txn *t;
	struct spirt_tensor h;
	char key[SPIRT_KEY_MAX + 1];
	const void *pl;
	uint64_t off, l;
	int rc;

	if ((*out = calloc(len ? len : 1, sizeof **out)) == NULL)
		return ENOMEM;
	if (x->step == 0)
		return 0;
	if ((rc = spirt_key_gagg(key, sizeof key, x->step - 1)) ||
	    (rc = spirt_txn_begin(&t, x->store, SPIRT_TXN_RDONLY)))
		return rc;
	rc = spirt_store_get_tensor(t, key, &h, &pl, 1);
	if (rc == 0 && h.dtype == SPIRT_F32 && h.nelem == r->n) {
		spirt_xpart_span(r->n, r->P, k, &off, &l);
		memcpy(*out, (const float *)pl + off, l * sizeof **out);
	}
	spirt_txn_abort(t);
	return rc == SPIRT_ENOTFOUND ? 0 : rc;
}

/* check part k: pull its P slices, each held to its member's input
 * record, combine them again with the round's rule and compare with
 * the owner's signed result */
static int
check_part(struct xr *r, struct spirt_xpull *u, size_t k)
{
	struct spirt_exchange *x = r->x;
	struct combine c;
	struct spirt_tensor h;
	unsigned char **sl = NULL, hash[SPIRT_HASH_BYTES];
	size_t *sllen = NULL;
	uint64_t off, len;
	const void *pl;
	float *cen = NULL;
	int rc = ENOMEM;

	memset(&c, 0, sizeof c);
	c.r = r;
	sl = calloc(r->P, sizeof *sl);
	sllen = calloc(r->P, sizeof *sllen);
	c.keys = calloc(r->P, sizeof *c.keys);
	c.vals = calloc(r->P, sizeof *c.vals);
	if (sl == NULL || sllen == NULL || c.keys == NULL || c.vals == NULL ||
	    (c.s = malloc(sizeof *c.s)) == NULL)
		goto out;
	if ((rc = pull(r, u, key_slice, r->ids[k], "the slice to check")) ||
	    (rc = copy_id(r, key_slice, r->ids[k], &sl[r->me],
	    &sllen[r->me])))
		goto out;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = pos_of(r, x->peers[j].id);

		sl[i] = u[j].val;
		sllen[i] = u[j].len;
		u[j].val = NULL;
	}
	spirt_xpart_span(r->n, r->P, k, &off, &len);
	for (size_t i = 0; i < r->P; i++) {
		spirt_hash(hash, sl[i], sllen[i]);
		if (memcmp(hash, r->in[i].e[k].hash, SPIRT_HASH_BYTES)) {
			rc = say(x, SPIRT_EMAC, "step %llu: xslice/%llu/%s "
			    "from %s is not the slice its signed record names",
			    ULL(x->step), ULL(x->step), r->ids[k], r->ids[i]);
			goto out;
		}
		if ((rc = value_ok(r, sl[i], sllen[i], len, &h))) {
			say(x, rc, "step %llu: xslice/%llu/%s from %s: not a "
			    "slice of %llu values of model \"%s\": %s",
			    ULL(x->step), ULL(x->step), r->ids[k], r->ids[i],
			    ULL(len), r->agg.name, spirt_strerror(rc));
			goto out;
		}
		rc = ENOMEM;
		if ((c.keys[i] = malloc(SPIRT_KEY_MAX + 1)) == NULL)
			goto out;
		snprintf(c.keys[i], SPIRT_KEY_MAX + 1, "xslice/%llu/%s from %s",
		    ULL(x->step), r->ids[k], r->ids[i]);
		c.vals[i].v = sl[i];
		c.vals[i].len = sllen[i];
	}
	part_aggset(c.s, x, c.vals);
	/* scclip: the owner's own slice is the centre, as it combined;
	 * cclip: the owner's part of the last round (its xpart/<t-1>, the
	 * centre it read), as this peer assembled it in gagg/<t-1> */
	if (x->p.rule == SPIRT_AGG_SCCLIP) {
		if ((rc = spirt_tensor_decode(&h, &pl, sl[k], sllen[k], 0)))
			goto out;
		c.s->center = pl;
		c.s->ncenter = h.nelem;
	} else if (x->p.rule == SPIRT_AGG_CCLIP) {
		if ((rc = last_part(r, k, len, &cen)))
			goto out;
		c.s->center = cen;
		c.s->ncenter = len;
	}
	rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, recheck_txn, &c);
	if (rc == XP_UNDO)
		rc = 0;
	else if (rc && c.s->msg[0])
		say(x, rc, "step %llu: checking part %zu of %s: %s",
		    ULL(x->step), k, r->ids[k], c.s->msg);
	spirt_aggset_reset(c.s);
	if (rc == 0 && memcmp(c.got, r->res[k].hash, SPIRT_HASH_BYTES)) {
		if ((rc = accuse(r, k, c.got)) == 0)
			rc = say(x, SPIRT_EMAC, "step %llu: %s, the owner of "
			    "part %zu of %zu, signed a combination its signed "
			    "inputs do not make (the proof on stdout), "
			    "nothing combined", ULL(x->step), r->ids[k], k,
			    r->P);
	}
out:
	for (size_t i = 0; i < r->P; i++) {
		free(sl ? sl[i] : NULL);
		free(c.keys ? c.keys[i] : NULL);
	}
	free(sl);
	free(sllen);
	free(c.keys);
	free(c.vals);
	free(c.s);
	free(cen);
	return rc;
}

/* step 4b: the parts this member was drawn to check */
static int
check(struct xr *r, struct spirt_xpull *u)
{
	unsigned char seed[SPIRT_HASH_BYTES];
	int rc;

	if (r->x->check == 0 || r->P < 2)
		return 0;
	if ((rc = draw_seed(r, seed)))
		return rc;
	for (size_t k = 0; k < r->P; k++)
		if (is_checker(r, seed, k, r->me) &&
		    (rc = check_part(r, u, k)))
			return rc;
	return 0;
}

static int
round_run(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	int rc;

	if ((rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, cut_txn,
	    r)))
		return rc;
	/* our own slice of our part, as the others' */
	if ((rc = copy_own(r, key_slice, &r->slice[r->me],
	    &r->slicelen[r->me])))
		return rc;
	if ((rc = inputs(r, u)) || (rc = combine(r)) ||
	    (rc = copy_own(r, key_part, &r->part[r->me], &r->partlen[r->me])) ||
	    (rc = parts(r, u)) || (rc = check(r, u)))
		return rc;
	x->used = r->P;
	return spirt_store_write(x->store, assemble_txn, r);
}

int
spirt_xpart_round(struct spirt_exchange *x)
{
	struct xr r;
	struct spirt_xpull *u;
	int rc = ENOMEM;

	memset(&r, 0, sizeof r);
	r.x = x;
	r.P = x->n + 1;
	if (x->beats)
		return say(x, SPIRT_EINVAL, "the partitioned exchange has no "
		    "beats (each member owns a part)");
	u = calloc(x->n ? x->n : 1, sizeof *u);
	r.ids = calloc(r.P, sizeof *r.ids);
	r.in = calloc(r.P, sizeof *r.in);
	r.res = calloc(r.P, sizeof *r.res);
	r.slice = calloc(r.P, sizeof *r.slice);
	r.slicelen = calloc(r.P, sizeof *r.slicelen);
	r.part = calloc(r.P, sizeof *r.part);
	r.partlen = calloc(r.P, sizeof *r.partlen);
	if (u && r.ids && r.in && r.res && r.slice && r.slicelen &&
	    r.part && r.partlen) {
		r.ids[0] = x->self;
		for (size_t i = 0; i < x->n; i++)
			r.ids[i + 1] = x->peers[i].id;
		qsort(r.ids, r.P, sizeof *r.ids, byname);
		r.me = pos_of(&r, x->self);
		rc = round_run(&r, u);
	}
	for (size_t i = 0; u && i < x->n; i++)
		free(u[i].val);
	for (size_t i = 0; i < r.P; i++) {
		free(r.slice ? r.slice[i] : NULL);
		free(r.part ? r.part[i] : NULL);
	}
	free(u);
	free(r.ids);
	free(r.in);
	free(r.res);
	free(r.slice);
	free(r.slicelen);
	free(r.part);
	free(r.partlen);
	free(r.buf);
	free(r.round);
	return rc;
}
