/* xpart.c - the partitioned exchange's round: slices cut and signed, pulled,
 * combined, the parts pulled and covered, gagg assembled (its records,
 * their tree and paths: xprec.c) */
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
#include "xpartin.h"
#include "xpull.h"
#include "xrec.h"

#define XP_VERSION SPIRT_XPART_VERSION
/* the most bytes of a path: ceil(log2 SPIRT_XPART_MAXPARTS) hashes */
#define XP_PATHMAX (9 * SPIRT_HASH_BYTES)

/* ---- the round ---- */

/* the phases of a round, as x->phase and the round's record name them:
 * inputs (the pulls of the input records and slices), combine (this
 * member's part), parts (the pulls of the others' parts, the covers),
 * check (the checks and verdicts), assemble; cut (the slices signed)
 * before them */
static const char *const phases[] = {
	"cut", "inputs", "combine", "parts", "check", "assemble"
};

static int
byname(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t
xp_pos_of(const struct xr *r, const char *id)
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

int
xp_key_slice(char *buf, size_t cap, uint64_t step, const char *id)
{
	return spirt_key_xslice(buf, cap, step, id);
}

int
xp_key_part(char *buf, size_t cap, uint64_t step, const char *id)
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

/* this member's cover of the member before it in the ring (docs/
 * protocol.md): xpart/<t>/cover, the part; xpart/<t>/cover/signed, its
 * record (the owner's result record relayed, or this member's cover
 * record); xpart/<t>/cover/slice, the owner's own slice of it */
static int
key_cover(char *buf, size_t cap, uint64_t step, const char *id)
{
	int n = snprintf(buf, cap, "xpart/%llu/cover%s", ULL(step),
	    id ? id : "");

	return n < 0 || (size_t)n >= cap ? SPIRT_EINVAL : 0;
}

static int
key_coverpart(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return key_cover(buf, cap, step, NULL);
}

static int
key_coverrec(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return key_cover(buf, cap, step, "/signed");
}

int
xp_key_coverslice(char *buf, size_t cap, uint64_t step, const char *id)
{
	(void)id;
	return key_cover(buf, cap, step, "/slice");
}

/* a slice or a part: an f32 record of len floats for step t, checksum
 * checked; into *h */
int
xp_value_ok(const struct xr *r, const void *v, size_t len, uint64_t want,
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
 * r->buf after pre bytes (r->buflen bytes in all, its path's room): the
 * aggregate's header, its shape one dim */
static int
cut(struct xr *r, const void *pl, size_t k, size_t pre)
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
	r->buflen = pre + spirt_tensor_reclen(&t);
	if ((r->buf = malloc(r->buflen)) == NULL)
		return ENOMEM;
	return spirt_tensor_encode(r->buf + pre, r->buflen - pre, &t,
	    (const float *)pl + off);
}

static void
rec_head(struct xr *r, struct spirt_xpart_rec *rec, int kind)
{
	struct spirt_exchange *x = r->x;

	memset(rec, 0, sizeof *rec);
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
	memcpy(rec->members, r->members, SPIRT_HASH_BYTES);
}

/* rec is of this round's members, in their order (every record names
 * their hash) */
static int
of_members(const struct xr *r, const struct spirt_xpart_rec *rec)
{
	return rec->parts == r->P && memcmp(rec->members, r->members,
	    SPIRT_HASH_BYTES) == 0;
}

/* rec names this round's members, in their order, this one at its index */
static int
same_members(const struct xr *r, const struct spirt_xpart_rec *rec)
{
	return rec->index == r->me && of_members(r, rec);
}

/* the inputs' hash a result or cover record must name: of the P input
 * records' signatures in member order (spirt_xpart_inputs(), the draw's
 * seed): it binds each member's root, and with part k's position each
 * slice of it; every member holds the P input records after step 2 */
static int
inputs_of(const struct xr *r, size_t k, unsigned char out[SPIRT_HASH_BYTES])
{
	(void)k;
	return spirt_xpart_inputs(out, r->in, r->P);
}

/* the slice of part k that member i served (v, len bytes: the u8 record
 * of its path and its tensor record), climbed to member i's signed root:
 * its tensor record at *sl, *sllen (into v); from names who served it.
 * SPIRT_EMAC: not the slice member i's root binds at position k */
int
xp_slice_take(struct xr *r, size_t i, size_t k, const char *from,
    const void *v, size_t len, const void **sl, size_t *sllen)
{
	struct spirt_exchange *x = r->x;
	int rc;

	if ((rc = spirt_xpart_slice_open(r->in[i].root, r->ids[k], k, r->P,
	    v, len, sl, sllen)) == SPIRT_EMAC)
		return say(x, rc, "step %llu: xslice/%llu/%s from %s is not "
		    "the slice its signed record names (its path does not "
		    "reach %s's root)", ULL(x->step), ULL(x->step), r->ids[k],
		    from, r->ids[i]);
	if (rc)
		return say(x, rc, "step %llu: xslice/%llu/%s from %s: not a "
		    "slice with its path: %s", ULL(x->step), ULL(x->step),
		    r->ids[k], from, spirt_strerror(rc));
	return 0;
}

/* sign rec into the u8 record at key */
static int
put_rec(struct xr *r, struct spirt_txn *t, const char *key,
    struct spirt_xpart_rec *rec)
{
	size_t cap = spirt_xpart_rec_size(rec->kind, r->P, rec->has_token);
	size_t len;
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
	unsigned char (*leaves)[SPIRT_HASH_BYTES], *paths = NULL;
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
		if (rec->n != r->n || memcmp(rec->hash, x->agghash,
		    SPIRT_HASH_BYTES))
			return say(x, SPIRT_EDATA, "%s: signed before for "
			    "another round (%u parts, %llu values)", key,
			    rec->parts, ULL(rec->n));
		/* signed for the same members: it stands; for others (a
		 * member excluded since), the slices are cut again */
		if (same_members(r, rec))
			return 0;
	} else if (rc != SPIRT_ENOTFOUND) {
		return rc;
	}
	rec_head(r, rec, SPIRT_XPART_INPUTS);
	memcpy(rec->hash, x->agghash, SPIRT_HASH_BYTES);
	/* the leaves first (each slice's hash), then each slice with its
	 * path, which needs them all: the slices are cut twice, rather
	 * than S more bytes held */
	if ((leaves = malloc(r->P * sizeof *leaves)) == NULL)
		return ENOMEM;
	for (size_t k = 0; k < r->P; k++) {
		unsigned char h[SPIRT_HASH_BYTES];

		if ((rc = cut(r, pl, k, 0)))
			goto out;
		spirt_hash(h, r->buf, r->buflen);
		spirt_xpart_leaf(leaves[k], r->ids[k], h);
	}
	/* (a path is at most ceil(log2 257) = 9 hashes) */
	if ((paths = malloc(r->P * XP_PATHMAX)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	spirt_xpart_paths(rec->root, paths, XP_PATHMAX, (const unsigned char
	    (*)[SPIRT_HASH_BYTES])leaves, r->P);
	for (size_t k = 0; k < r->P; k++) {
		size_t pre = spirt_xpart_path_len(k, r->P) * SPIRT_HASH_BYTES;

		if ((rc = cut(r, pl, k, pre)))
			goto out;
		memcpy(r->buf, paths + k * XP_PATHMAX, pre);
		if ((rc = xp_key_slice(key, sizeof key, x->step, r->ids[k])) ||
		    (rc = spirt_store_put_bytes(t, key, r->buf, r->buflen,
		    x->step, 0)))
			goto out;
	}
	if ((rc = key_inrec(key, sizeof key, x->step, NULL)) == 0)
		rc = put_rec(r, t, key, rec);
out:
	free(leaves);
	free(paths);
	return rc;
}

/* pull key from the other members whose position is in want (NULL:
 * every one) into u (the others' entries left as they are); one that did
 * not come fails the round (no member is left out: each owns a part),
 * unless late is not NULL: then late[i] is set for member i, its state
 * late, and the round goes on.  A value stale() says is of another round
 * is asked again, 20 ms apart, until the deadline; then its error fails
 * the round */
int
xp_pull_some(struct xr *r, struct spirt_xpull *u, spirt_xpull_key key,
    const char *id, const char *what, const int *want, int *late,
    stale_fn stale)
{
	struct spirt_exchange *x = r->x;
	struct spirt_xlink l;
	struct spirt_xpull *keep;
	double start = spirt_xnow_ms(), left;
	int *w, rc, again, round = 0;

	w = calloc(x->n ? x->n : 1, sizeof *w);
	keep = calloc(x->n ? x->n : 1, sizeof *keep);
	if (w == NULL || keep == NULL) {
		free(w);
		free(keep);
		return ENOMEM;
	}
	for (size_t i = 0; i < x->n; i++)
		w[i] = want == NULL || want[xp_pos_of(r, x->peers[i].id)];
	spirt_exchange_link(&l, x, 0);
	do {
		for (size_t i = 0; i < x->n; i++)
			if (w[i]) {
				free(u[i].val);
				memset(&u[i], 0, sizeof u[i]);
			} else if (round) {
				/* (done in an earlier pass: spirt_xpull_all
				 * resets every entry, so that asking the
				 * stale ones again would lose the others'
				 * values, "no such key" at the deadline) */
				memcpy(&keep[i], &u[i], sizeof u[i]);
			}
		rc = spirt_xpull_all(&l, u, key, id, w);
		for (size_t i = 0; round && i < x->n; i++)
			if (!w[i])
				memcpy(&u[i], &keep[i], sizeof u[i]);
		round++;
		if (rc) {
			free(w);
			free(keep);
			return rc == EINTR ? say(x, rc, "step %llu: stopped",
			    ULL(x->step)) : rc;
		}
		again = 0;
		left = x->deadline_ms - (spirt_xnow_ms() - start);
		for (size_t i = 0; i < x->n; i++) {
			size_t at = xp_pos_of(r, x->peers[i].id);
			int e;

			if (!w[i] || stale == NULL)
				continue;
			if (u[i].rc) {
				w[i] = 0;
				continue;
			}
			if ((e = stale(r, at, &u[i])) == 0) {
				w[i] = 0;
				continue;
			}
			if (left > 20)
				again = 1;
			else {
				free(w);
				free(keep);
				return e;
			}
		}
		if (again) {
			spirt_xnap(20);
			l.deadline_ms = (unsigned)(left - 20);
		}
	} while (again);
	for (size_t i = 0; i < x->n; i++) {
		struct spirt_xpeer *p = &x->peers[i];
		char k[SPIRT_KEY_MAX + 1];

		if (want && !want[xp_pos_of(r, p->id)])
			continue;
		if (u[i].rc == 0)
			continue;
		(void)key(k, sizeof k, x->step, id ? id : p->id);
		if (spirt_xpull_refusal(u[i].rc)) {
			spirt_xpeer_out(p, SPIRT_XP_REFUSED, u[i].rc,
			    "%s: %s", k, u[i].why[0] ? u[i].why :
			    spirt_strerror(u[i].rc));
			free(w);
			free(keep);
			return say(x, u[i].rc, "step %llu: %s of %s refused: "
			    "%s: %s", ULL(x->step), what, p->id, k,
			    p->why);
		}
		spirt_xpeer_out(p, SPIRT_XP_LATE, u[i].rc, "%s: %s (no "
		    "answer in %u ms)", k, u[i].why[0] ? u[i].why :
		    spirt_strerror(u[i].rc), x->deadline_ms);
		if (late) {
			late[xp_pos_of(r, p->id)] = 1;
			continue;
		}
		free(w);
		free(keep);
		return say(x, SPIRT_EBUSY, "step %llu: %s of %s not there "
		    "before the deadline (%u ms), nothing combined: %s: %s",
		    ULL(x->step), what, p->id, x->deadline_ms, k,
		    u[i].why[0] ? u[i].why : spirt_strerror(u[i].rc));
	}
	free(w);
	free(keep);
	return 0;
}

/* a record (u8) of member i signed for other members than this round's:
 * of the round before the members changed (a member excluded) */
static int
stale_rec(struct xr *r, size_t i, const struct spirt_xpull *u)
{
	struct spirt_xpart_rec *rec;
	const void *b;
	size_t n;
	unsigned parts = 0;
	int rc = 0;

	if (spirt_store_get_bytes(u->val, u->len, &b, &n) != 0)
		return 0;       /* (its check says what is wrong) */
	if ((rec = malloc(sizeof *rec)) == NULL)
		return ENOMEM;
	if (spirt_xpart_rec_open(rec, b, n) == 0) {
		parts = rec->parts;
		if (!of_members(r, rec))
			rc = SPIRT_EDATA;
	}
	free(rec);
	return rc ? say(r->x, rc, "step %llu: %s's record names other "
	    "members than this round's (%u of them; here %zu), still at the "
	    "deadline", ULL(r->x->step), r->ids[i], parts, r->P) : 0;
}

static int
pull(struct xr *r, struct spirt_xpull *u, spirt_xpull_key key,
    const char *id, const char *what)
{
	return xp_pull_some(r, u, key, id, what, NULL, NULL, NULL);
}

/* pull a record from every other member, one of another round asked
 * again */
static int
pull_recs(struct xr *r, struct spirt_xpull *u, spirt_xpull_key key,
    const char *what, const int *want, int *late)
{
	return xp_pull_some(r, u, key, NULL, what, want, late, stale_rec);
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

	if ((rc = spirt_store_get_bytes(u->val, u->len, &b, &n)) == 0 &&
	    (rc = spirt_xpart_rec_verify(rec, b, n, x->run, id, x->step,
	    x->trust, spirt_crypto_now())) == SPIRT_EVERSION)
		return say(x, rc, "step %llu: %s's %s: record version %u, "
		    "this peer reads version %d (a peer of another spirt: "
		    "docs/protocol.md, \"The partitioned exchange\"): %s",
		    ULL(x->step), id, what,
		    (unsigned)((const unsigned char *)b)[4], XP_VERSION,
		    spirt_strerror(rc));
	if (rc)
		return say(x, rc, "step %llu: %s's %s: %s", ULL(x->step), id,
		    what, spirt_strerror(rc));
	if (rec->kind != kind || rec->parts != r->P || rec->n != r->n ||
	    rec->index != (kind == SPIRT_XPART_COVER ? (i + r->P - 1) % r->P :
	    i))
		return say(x, SPIRT_EDATA, "step %llu: %s's %s is not one "
		    "of this round (kind %d, part %u of %u, %llu values; "
		    "here part %zu of %zu, %llu values)", ULL(x->step), id,
		    what, rec->kind, rec->index, rec->parts, ULL(rec->n), i,
		    r->P, ULL(r->n));
	if (!of_members(r, rec))
		return say(x, SPIRT_EDATA, "step %llu: %s's %s names other "
		    "members than this round's (its members' hash)",
		    ULL(x->step), id, what);
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
	int rc;

	if ((rc = pull_recs(r, u, key_inrec, "the input record", NULL, NULL)))
		return rc;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = xp_pos_of(r, x->peers[j].id);

		if ((rc = rec_ok(r, i, &u[j], SPIRT_XPART_INPUTS, &r->in[i],
		    "input record xslice/<t>")))
			return rc;
	}
	if ((rc = pull(r, u, xp_key_slice, x->self, "the slice")))
		return rc;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = xp_pos_of(r, x->peers[j].id), tl;
		uint64_t off, len;
		const void *tv;

		/* climbed to i's root, then the tensor record alone kept
		 * (the combination's input) */
		if ((rc = xp_slice_take(r, i, r->me, r->ids[i], u[j].val,
		    u[j].len, &tv, &tl)))
			return rc;
		memmove(u[j].val, tv, tl);
		u[j].len = tl;
		spirt_xpart_span(r->n, r->P, r->me, &off, &len);
		if ((rc = xp_value_ok(r, u[j].val, u[j].len, len, &h)))
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
void
xp_part_aggset(struct spirt_aggset *s, const struct spirt_exchange *x,
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
	/* combined and signed before (a rerun): it stands, unless it was
	 * for other members (one excluded since) */
	if ((rc = get_rec(r, t, key, rec)) == 0 && same_members(r, rec))
		return 0;
	if (rc && rc != SPIRT_ENOTFOUND)
		return rc;
	if ((rc = spirt_agg_store_step(c->s, t, c->keys, r->P)))
		return rc;
	if ((rc = xp_key_part(key, sizeof key, x->step, NULL)) ||
	    (x->lie && x->step >= x->lie_from && (rc = lie(t, key))) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return rc;
	rec_head(r, rec, SPIRT_XPART_RESULT);
	spirt_hash(rec->hash, v, len);
	if ((rc = inputs_of(r, r->me, rec->inputs)) ||
	    (rc = key_resrec(key, sizeof key, x->step, NULL)))
		return rc;
	return put_rec(r, t, key, rec);
}

static int
combine(struct xr *r)
{
	struct spirt_exchange *x = r->x;
	struct combine c = { r, NULL, NULL, NULL, { 0 }, NULL, 0, 0 };
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
		if ((rc = xp_key_slice(c.keys[i], SPIRT_KEY_MAX + 1, x->step,
		    i == r->me ? x->self : r->ids[i])))
			goto out;
		if (i != r->me)
			snprintf(c.keys[i], SPIRT_KEY_MAX + 1, "xslice/%llu/"
			    "%s from %s", ULL(x->step), x->self, r->ids[i]);
		/* (ours too: the store's value is its path and record) */
		c.vals[i].v = r->slice[i];
		c.vals[i].len = r->slicelen[i];
	}
	xp_part_aggset(c.s, x, c.vals);
	/* self-centred clipping: the owner's own slice is the centre (so
	 * every member assembles the same vector; it is not the
	 * all-to-all's, where each peer centres on its own aggregate) */
	if (x->p.rule == SPIRT_AGG_SCCLIP) {
		struct spirt_tensor h;
		const void *pl;

		if ((rc = spirt_tensor_decode(&h, &pl, r->slice[r->me],
		    r->slicelen[r->me], 0)))
			goto out;
		c.s->center = pl;
		c.s->ncenter = h.nelem;
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

/* the inputs' hash of rec, the result (or cover) record of part k: of
 * the slices each member signed it sent for part k (the combination
 * takes what each member signed it sent, nothing else) */
static int
entries_ok(struct xr *r, size_t k, const struct spirt_xpart_rec *rec)
{
	struct spirt_exchange *x = r->x;
	unsigned char want[SPIRT_HASH_BYTES];
	int rc;

	if ((rc = inputs_of(r, k, want)))
		return rc;
	if (memcmp(rec->inputs, want, SPIRT_HASH_BYTES))
		return say(x, SPIRT_EMAC, "step %llu: %s, %s part %zu, "
		    "signed it combined inputs other than the slices the "
		    "members' input records name (its inputs' hash)",
		    ULL(x->step), rec->id, strcmp(rec->id, r->ids[k]) ?
		    "covering" : "the owner of", k);
	return 0;
}

/* a part pulled (u) for part k: held to res[k], whose signer is who,
 * and of the round */
static int
part_ok(struct xr *r, size_t k, struct spirt_xpull *u, const char *key)
{
	struct spirt_exchange *x = r->x;
	struct spirt_tensor h;
	unsigned char hash[SPIRT_HASH_BYTES];
	uint64_t off, len;
	int rc;

	spirt_hash(hash, u->val, u->len);
	if (memcmp(hash, r->res[k].hash, SPIRT_HASH_BYTES))
		return say(x, SPIRT_EMAC, "step %llu: %s from %s, %s part "
		    "%zu of %zu, is not the part its signed record names",
		    ULL(x->step), key, r->res[k].id, strcmp(r->res[k].id,
		    r->ids[k]) ? "covering" : "the owner of", k, r->P);
	spirt_xpart_span(r->n, r->P, k, &off, &len);
	if ((rc = xp_value_ok(r, u->val, u->len, len, &h)))
		return say(x, rc, "step %llu: %s from %s: not a part of %llu "
		    "values of model \"%s\": %s", ULL(x->step), key,
		    r->res[k].id, ULL(len), r->agg.name, spirt_strerror(rc));
	r->part[k] = u->val;
	r->partlen[k] = u->len;
	u->val = NULL;
	return 0;
}

static struct spirt_xpeer *
xpeer_of(struct xr *r, size_t i)
{
	for (size_t j = 0; j < r->x->n; j++)
		if (strcmp(r->x->peers[j].id, r->ids[i]) == 0)
			return &r->x->peers[j];
	return NULL;
}

/* the slices a check kept, gone */
void
xp_drop_kept(struct xr *r)
{
	for (size_t i = 0; r->ksl && i < r->P; i++)
		free(r->ksl[i]);
	free(r->ksl);
	free(r->ksllen);
	r->ksl = NULL;
	r->ksllen = NULL;
}

/* what cover_txn writes */
struct cover {
	struct xr *r;
	const void *part, *rec, *slice;
	size_t partlen, reclen, slicelen;
};

static int
cover_txn(struct spirt_txn *t, void *arg)
{
	struct cover *c = arg;
	uint64_t step = c->r->x->step;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if ((rc = key_coverpart(key, sizeof key, step, NULL)) ||
	    (rc = spirt_store_put(t, key, c->part, c->partlen, 0)) ||
	    (c->slice && ((rc = xp_key_coverslice(key, sizeof key, step,
	    NULL)) || (rc = spirt_store_put(t, key, c->slice, c->slicelen,
	    0)))) || (rc = key_coverrec(key, sizeof key, step, NULL)))
		return rc;
	return spirt_store_put_bytes(t, key, c->rec, c->reclen, step, 0);
}

/* step 4b: this member's cover of the member before it in the ring: the
 * owner's result record and part relayed as they came, or, when they
 * did not come before the deadline, the part combined here from the
 * signed slices (the owner's own one pulled from it now, xp_again) under
 * a cover record, with that slice; either way the same bytes, for the
 * members they did not reach */
static int
cover_own(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	struct spirt_xpart_rec *rec = &r->res[r->pr];
	struct spirt_xpeer *p = xpeer_of(r, r->pr);
	struct cover c = { r, NULL, NULL, r->pred, 0, 0, r->predlen };
	unsigned char *val = NULL, *b = NULL;
	size_t vlen = 0, cap, blen;
	int rc;

	if (r->P < 2)
		return 0;
	if (!r->late[r->pr]) {
		/* (a relay: no slice, none pulled; a member late for the
		 * owner takes its slice from the owner) */
		c.slice = NULL;
		c.part = r->part[r->pr];
		c.partlen = r->partlen[r->pr];
		if ((rc = spirt_store_get_bytes(r->predrec, r->predreclen,
		    &c.rec, &c.reclen)))
			return rc;
		return spirt_store_writef(x->store, SPIRT_TXN_VOLATILE,
		    cover_txn, &c);
	}
	if ((rc = xp_again(r, u, r->pr, NULL, &val, &vlen)))
		return rc;
	c.slice = r->pred;
	c.slicelen = r->predlen;
	rec_head(r, rec, SPIRT_XPART_COVER);
	rec->index = (uint32_t)r->pr;
	spirt_hash(rec->hash, val, vlen);
	cap = spirt_xpart_rec_size(rec->kind, r->P, rec->has_token);
	if ((rc = inputs_of(r, r->pr, rec->inputs)) ||
	    (b = malloc(cap)) == NULL) {
		free(val);
		return rc ? rc : ENOMEM;
	}
	if ((rc = spirt_xpart_rec_sign(b, cap, &blen, rec, x->key)) == 0) {
		c.part = val;
		c.partlen = vlen;
		c.rec = b;
		c.reclen = blen;
		rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE,
		    cover_txn, &c);
	}
	free(b);
	if (rc) {
		free(val);
		return rc;
	}
	free(r->part[r->pr]);
	r->part[r->pr] = val;
	r->partlen[r->pr] = vlen;
	if (p)
		spirt_xpeer_out(p, SPIRT_XP_USED, 0, "part %zu of %zu "
		    "covered by %s (its part not there before the deadline)",
		    r->pr, r->P, x->self);
	return 0;
}

/* a cover that did not come (late[c]): the round fails, naming the
 * owner and the member that covers it */
static int
cover_late(struct xr *r, const int *late)
{
	for (size_t c = 0; c < r->P; c++)
		if (late[c])
			return say(r->x, SPIRT_EBUSY, "step %llu: the combined "
			    "part of %s not there before the deadline (%u ms), "
			    "nor its cover by %s, nothing combined",
			    ULL(r->x->step), r->ids[(c + r->P - 1) % r->P],
			    r->x->deadline_ms, r->ids[c]);
	return 0;
}

/* step 4c: the parts whose owner's result did not come, each from the
 * member after the owner in the ring: relayed or covered */
static int
covers(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	char key[SPIRT_KEY_MAX + 1];
	int *want, *clate, rc = 0, any = 0;

	want = calloc(r->P, sizeof *want);
	if ((clate = calloc(r->P, sizeof *clate)) == NULL || want == NULL) {
		free(want);
		free(clate);
		return ENOMEM;
	}
	for (size_t k = 0; k < r->P; k++) {
		size_t c = (k + 1) % r->P;

		if (!r->late[k] || c == r->me)
			continue;
		if (r->late[c]) {
			rc = say(x, SPIRT_EBUSY, "step %llu: the combined part "
			    "of %s not there before the deadline (%u ms), nor "
			    "its cover by %s, nothing combined", ULL(x->step),
			    r->ids[k], x->deadline_ms, r->ids[c]);
			goto out;
		}
		want[c] = any = 1;
	}
	if (!any)
		goto out;
	if ((rc = pull_recs(r, u, key_coverrec, "the cover's record", want,
	    clate)) || (rc = cover_late(r, clate)))
		goto out;
	for (size_t j = 0; j < x->n; j++) {
		size_t c = xp_pos_of(r, x->peers[j].id), k;
		struct spirt_xpart_rec probe;
		const void *b;
		size_t n;

		if (!want[c])
			continue;
		k = (c + r->P - 1) % r->P;
		/* a relay is the owner's own record; a cover, c's */
		if (spirt_store_get_bytes(u[j].val, u[j].len, &b, &n) == 0 &&
		    spirt_xpart_rec_open(&probe, b, n) == 0 &&
		    probe.kind == SPIRT_XPART_RESULT)
			rc = rec_ok(r, k, &u[j], SPIRT_XPART_RESULT,
			    &r->res[k], "relayed part record xpart/<t>/"
			    "cover/signed");
		else
			rc = rec_ok(r, c, &u[j], SPIRT_XPART_COVER,
			    &r->res[k], "cover record xpart/<t>/cover/"
			    "signed");
		if (rc || (rc = entries_ok(r, k, &r->res[k])))
			goto out;
	}
	if ((rc = xp_pull_some(r, u, key_coverpart, NULL, "the cover", want,
	    clate, NULL)) || (rc = cover_late(r, clate)))
		goto out;
	for (size_t j = 0; j < x->n; j++) {
		size_t c = xp_pos_of(r, x->peers[j].id), k;
		struct spirt_xpeer *p;

		if (!want[c])
			continue;
		k = (c + r->P - 1) % r->P;
		(void)key_coverpart(key, sizeof key, x->step, NULL);
		if ((rc = part_ok(r, k, &u[j], key)))
			goto out;
		if ((p = xpeer_of(r, k)) != NULL)
			spirt_xpeer_out(p, SPIRT_XP_USED, 0, "part %zu of %zu "
			    "%s by %s (its part not there before the "
			    "deadline)", k, r->P, r->res[k].kind ==
			    SPIRT_XPART_COVER ? "covered" : "relayed",
			    r->ids[c]);
	}
out:
	free(want);
	free(clate);
	return rc;
}

/* step 4: every other owner's part, held to its result record, and the
 * record to the inputs' records (the owner combined what each member
 * signed it sent, nothing else); an owner whose record or part does not
 * come is covered by the member after it in the ring */
static int
parts(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	char key[SPIRT_KEY_MAX + 1];
	int *want, rc;

	if ((want = calloc(r->P, sizeof *want)) == NULL)
		return ENOMEM;
	if ((rc = pull_recs(r, u, key_resrec, "the part's record", NULL,
	    r->late)))
		goto out;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = xp_pos_of(r, x->peers[j].id);

		if (r->late[i])
			continue;
		want[i] = 1;
		if ((rc = rec_ok(r, i, &u[j], SPIRT_XPART_RESULT, &r->res[i],
		    "part record xpart/<t>/signed")) ||
		    (rc = entries_ok(r, i, &r->res[i])))
			goto out;
		if (i == r->pr) {
			r->predrec = u[j].val;
			r->predreclen = u[j].len;
			u[j].val = NULL;
		}
	}
	if ((rc = xp_pull_some(r, u, xp_key_part, NULL, "the combined part", want,
	    r->late, NULL)))
		goto out;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = xp_pos_of(r, x->peers[j].id);

		if (!want[i] || r->late[i])
			continue;
		(void)xp_key_part(key, sizeof key, x->step, NULL);
		if ((rc = part_ok(r, i, &u[j], key)))
			goto out;
		x->peers[j].state = SPIRT_XP_USED;
	}
	if ((rc = cover_own(r, u)) == 0)
		rc = covers(r, u);
out:
	free(want);
	return rc;
}

/* step 5 too: this member's signed digest of the step, digest/<t>/<self>
 * (lib/digest.h), as all to all signs it: its own aggregate's hash, its
 * model's, and for every other member the hash of the whole aggregate
 * that member's signed input record says it cut (the aggregates every
 * part combined a slice of), so that spirt-peer verify walks a run with
 * parts as one all to all */
static int
digest_put(struct xr *r, struct spirt_txn *t)
{
	struct spirt_exchange *x = r->x;
	struct spirt_digest *d;
	char key[SPIRT_KEY_MAX + 1];
	unsigned char *b = NULL;
	size_t len;
	int rc = ENOMEM;

	if ((d = calloc(1, sizeof *d)) == NULL)
		return ENOMEM;
	spirt_exchange_digest_head(x, d);
	for (size_t i = 0; i < r->P; i++) {
		if (i == r->me)
			continue;
		snprintf(d->got[d->n].id, sizeof d->got[d->n].id, "%s",
		    r->ids[i]);
		memcpy(d->got[d->n++].hash, r->in[i].hash, SPIRT_HASH_BYTES);
	}
	len = spirt_digest_size(d->n, d->has_token);
	if ((b = malloc(len)) != NULL &&
	    (rc = spirt_digest_sign(b, len, &len, d, x->key)) == 0 &&
	    (rc = spirt_key_digest(key, sizeof key, x->step, x->self)) == 0)
		rc = spirt_store_put_bytes(t, key, b, len, x->step, 0);
	free(b);
	free(d);
	return rc;
}

/* step 5: gagg/<t>, the parts end to end under part 0's header with the
 * aggregate's shape, the round's record and this member's digest */
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
	if ((rc = digest_put(r, t)))
		return rc;
	free(r->round);
	{
		char ph[200], *ck;
		size_t n = 0;
		struct spirt_xrec rr = {
			.step = x->step, .rule = spirt_agg_rule_name(x->p.rule),
			.self = x->self, .peers = x->peers, .n = x->n,
			.adopted = x->adopted, .gagghash = x->gagghash,
			.phases = ph
		};

		/* the parts drawn for checks: "<k> ...", or none */
		if ((ck = malloc(r->P * 4 + 8)) == NULL)
			return ENOMEM;
		rr.checked = ck;
		strcpy(ck, "none");
		for (size_t k = 0, m = 0; r->drawn && k < r->P; k++)
			if (r->drawn[k])
				m += (size_t)sprintf(ck + m, "%s%zu", m ? " " :
				    "", k);

		/* (the ones before this one, the assembly: its own time is
		 * the round's, less theirs) */
		ph[0] = '\0';
		for (size_t i = 0; i + 1 < sizeof phases / sizeof phases[0];
		    i++)
			n += (size_t)snprintf(ph + n, sizeof ph - n, "%s%s:%.1f",
			    i ? " " : "", phases[i], r->ms[i]);

		r->round = spirt_xrec_round(&rr, &r->roundlen);
		free(ck);
		if (r->round == NULL)
			return ENOMEM;
	}
	if ((rc = spirt_key_gagg_round(key, sizeof key, x->step)))
		return rc;
	return spirt_store_put_bytes(t, key, r->round, r->roundlen, x->step,
	    SPIRT_PUT_NOOVERWRITE);
}

/* a copy of this store's value at key (built by fn for id), as a pulled
 * one */
int
xp_copy_id(struct xr *r, spirt_xpull_key fn, const char *id, unsigned char **out,
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
	return xp_copy_id(r, fn, r->x->self, out, len);
}

/* phase i begins: the time of the one before into r->ms */
static void
phase(struct xr *r, size_t i)
{
	double now = spirt_xnow_ms();

	if (i > 0)
		r->ms[i - 1] = now - r->t0;
	r->t0 = now;
	if (i > 0 && r->x->phase)
		r->x->phase(r->x, phases[i]);
}

static int
round_run(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	int rc;

	phase(r, 0);
	if ((rc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE, cut_txn,
	    r)))
		return rc;
	/* our own slice of our part, as the others', climbed to our root
	 * too (the path written is the one the others climb) */
	if ((rc = copy_own(r, xp_key_slice, &r->slice[r->me],
	    &r->slicelen[r->me])))
		return rc;
	{
		const void *tv;
		size_t tl;

		if ((rc = xp_slice_take(r, r->me, r->me, x->self,
		    r->slice[r->me], r->slicelen[r->me], &tv, &tl)))
			return rc;
		memmove(r->slice[r->me], tv, tl);
		r->slicelen[r->me] = tl;
	}
	phase(r, 1);
	if ((rc = inputs(r, u)))
		return rc;
	phase(r, 2);
	if ((rc = combine(r)) ||
	    (rc = copy_own(r, xp_key_part, &r->part[r->me], &r->partlen[r->me])))
		return rc;
	phase(r, 3);
	if ((rc = parts(r, u)))
		return rc;
	phase(r, 4);
	if ((rc = xp_check(r, u)))
		return rc;
	phase(r, 5);
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
	x->caught[0] = '\0';
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
	r.late = calloc(r.P, sizeof *r.late);
	if (u && r.ids && r.in && r.res && r.slice && r.slicelen &&
	    r.part && r.partlen && r.late) {
		r.ids[0] = x->self;
		for (size_t i = 0; i < x->n; i++)
			r.ids[i + 1] = x->peers[i].id;
		qsort(r.ids, r.P, sizeof *r.ids, byname);
		r.me = xp_pos_of(&r, x->self);
		r.pr = (r.me + r.P - 1) % r.P;
		if ((rc = spirt_xpart_members(r.members, r.ids, r.P)) == 0)
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
	free(r.late);
	xp_drop_kept(&r);
	free(r.drawn);
	free(r.pred);
	free(r.predrec);
	free(r.buf);
	free(r.round);
	return rc;
}

