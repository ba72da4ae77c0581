/* xcheck.c - the partitioned exchange's checked owners: the checkers
 * drawn, a part recombined from the signed slices, the proof of a lie,
 * the verdicts every member publishes (docs/protocol.md, "Checked
 * owners") */
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

/* the parts checked this round, into drawn (P): the K = min(check_parts,
 * P) parts of the smallest draws, part k's draw the first 8 bytes (LE) of
 * the hash of the seed, k (u32 LE) and the byte 1 (ties: the lower k); a
 * uniform draw of K parts of P, the same on every member, another each
 * round */
static void
draw_parts(const struct xr *r, const unsigned char *seed, int *drawn)
{
	unsigned char b[SPIRT_HASH_BYTES + 5], h[SPIRT_HASH_BYTES];
	size_t K = r->x->check_parts < r->P ? r->x->check_parts : r->P;
	uint64_t *v;

	if ((v = malloc(r->P * sizeof *v)) == NULL) {
		/* (no memory for the draw: every part, never fewer) */
		for (size_t k = 0; k < r->P; k++)
			drawn[k] = 1;
		return;
	}
	memcpy(b, seed, SPIRT_HASH_BYTES);
	b[SPIRT_HASH_BYTES + 4] = 1;
	for (size_t k = 0; k < r->P; k++) {
		spirt_le_put32(b + SPIRT_HASH_BYTES, (uint32_t)k);
		spirt_hash(h, b, sizeof b);
		v[k] = spirt_le_get64(h);
	}
	for (size_t k = 0; k < r->P; k++) {
		size_t rank = 0;

		for (size_t j = 0; j < r->P; j++)
			rank += v[j] < v[k] || (v[j] == v[k] && j < k);
		drawn[k] = rank < K;
	}
	free(v);
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
	    (rc = xp_key_part(key, sizeof key, c->r->x->step, NULL)) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return rc;
	spirt_hash(c->got, v, len);
	if (c->keep) {
		if ((c->val = malloc(len ? len : 1)) == NULL)
			return ENOMEM;
		memcpy(c->val, v, len);
		c->vlen = len;
	}
	return XP_UNDO;
}

/* append a comment line what and a line of text (hex of len bytes b if
 * hex, else b as it is) to the proof at *p (*n of it) */
static int
proof_line(char **p, size_t *n, const char *what, const void *b, size_t len,
    int hex)
{
	size_t need = *n + strlen(what) + (hex ? 2 : 1) * len + 3;
	const unsigned char *v = b;
	char *q;

	if ((q = realloc(*p, need + 1)) == NULL)
		return ENOMEM;
	*p = q;
	*n += (size_t)snprintf(q + *n, need + 1 - *n, "%s\n", what);
	for (size_t i = 0; i < len; i++)
		if (hex)
			*n += (size_t)snprintf(q + *n, need + 1 - *n, "%02x",
			    v[i]);
		else
			q[(*n)++] = (char)v[i];
	q[(*n)++] = '\n';
	q[*n] = '\0';
	return 0;
}

/* append the hex of rec's bytes, after the line what */
static int
proof_rec(char **p, size_t *n, const struct spirt_xpart_rec *rec,
    const char *what)
{
	size_t len = spirt_xpart_rec_size(rec->kind, rec->parts,
	    rec->has_token), off;
	unsigned char *b;
	int rc;

	if ((b = malloc(len)) == NULL)
		return ENOMEM;
	off = xp_rec_pack(b, rec);
	memcpy(b + off, rec->sig, SPIRT_SIG_BYTES);
	rc = proof_line(p, n, what, b, len, 1);
	free(b);
	return rc;
}

static int last_part(struct xr *, size_t, uint64_t, float **);

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

	/* the signer: the owner, or the member that covered it */
	for (size_t j = 0; j < x->n; j++)
		if (strcmp(x->peers[j].id, r->res[k].id) == 0)
			p = &x->peers[j];
	if (p == NULL)
		return SPIRT_EINVAL;
	spirt_hash_hex(hs, r->res[k].hash);
	spirt_hash_hex(hg, got);
	snprintf(line, sizeof line, "# step %llu: part %zu of %zu combined "
	    "wrongly by %s (checked by %s): its signed record names "
	    "xpart/%llu = %s, the slices its record names combine to %s",
	    ULL(x->step), k, r->P, r->res[k].id, x->self, ULL(x->step), hs,
	    hg);
	if ((rc = proof_rec(&proof, &n, &r->res[k], line)))
		goto out;
	for (size_t i = 0; i < r->P && rc == 0; i++) {
		snprintf(line, sizeof line, "# xslice/%llu of %s (its slice "
		    "xslice/%llu/%s: leaf %zu)", ULL(x->step), r->ids[i],
		    ULL(x->step), r->ids[k], k);
		rc = proof_rec(&proof, &n, &r->in[i], line);
	}
	if (rc)
		goto out;
	/* what makes it checkable alone (spirt-peer verify --proof): the
	 * rule, cclip's centre (this member's part k of gagg/<t-1>), the P
	 * slices as they came */
	spirt_xpart_params_text(line, sizeof line, &x->p);
	if ((rc = proof_line(&proof, &n, "# the rule", line, strlen(line),
	    0)))
		goto out;
	{
		uint64_t off, len;
		float *cen = NULL;

		spirt_xpart_span(r->n, r->P, k, &off, &len);
		if (x->p.rule == SPIRT_AGG_CCLIP &&
		    (rc = last_part(r, k, len, &cen)))
			goto out;
		rc = proof_line(&proof, &n, "# the centre (cclip: part k of "
		    "gagg/<t-1>)", cen, cen ? len * sizeof *cen : 0, 1);
		free(cen);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < r->P && rc == 0; i++) {
		snprintf(line, sizeof line, "# xslice/%llu/%s from %s (its "
		    "path, then its record)", ULL(x->step), r->ids[k],
		    r->ids[i]);
		rc = r->ksl ? proof_line(&proof, &n, line, r->ksl[i],
		    r->ksllen[i], 1) : SPIRT_EBUG;
	}
	if (rc)
		goto out;
	spirt_xpeer_out(p, SPIRT_XP_REFUSED, SPIRT_EMAC, "part %zu of %zu "
	    "combined wrongly: xpart/%llu is not the combination of the "
	    "slices its signed record names", k, r->P, ULL(x->step));
	snprintf(x->caught, sizeof x->caught, "%s", p->id);
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

/* part k combined again here from its P slices, each held to its
 * member's input record, with the round's rule, in a transaction undone:
 * the hash of the result into got (unless NULL), its bytes into *val
 * (unless NULL; the caller frees them).  The slices: this member's from
 * its store, the others' from them, the owner's own one from the owner;
 * the owner late, from the owner still (its server may answer where its
 * round did not), else from the member after it, which pulled it to cover
 * the part (r->pred, kept, when this member is that one) */
int
xp_again(struct xr *r, struct spirt_xpull *u, size_t k, unsigned char *got,
    unsigned char **val, size_t *vlen)
{
	struct spirt_exchange *x = r->x;
	struct combine c;
	struct spirt_tensor h;
	unsigned char **sl = NULL;
	const void **tv = NULL;
	size_t *sllen = NULL, *tl = NULL, succ = (k + 1) % r->P;
	uint64_t off, len;
	const void *pl;
	float *cen = NULL;
	int *want = NULL, *ol = NULL, rc = ENOMEM;

	memset(&c, 0, sizeof c);
	c.r = r;
	c.keep = val != NULL;
	sl = calloc(r->P, sizeof *sl);
	sllen = calloc(r->P, sizeof *sllen);
	want = calloc(r->P, sizeof *want);
	ol = calloc(r->P, sizeof *ol);
	tv = calloc(r->P, sizeof *tv);
	tl = calloc(r->P, sizeof *tl);
	c.keys = calloc(r->P, sizeof *c.keys);
	c.vals = calloc(r->P, sizeof *c.vals);
	if (sl == NULL || sllen == NULL || want == NULL || ol == NULL ||
	    tv == NULL || tl == NULL || c.keys == NULL ||
	    c.vals == NULL || (c.s = malloc(sizeof *c.s)) == NULL)
		goto out;
	for (size_t i = 0; i < r->P; i++)
		want[i] = i != r->me && (i != k || !r->late[k]);
	if ((rc = xp_pull_some(r, u, xp_key_slice, r->ids[k], "the slice to "
	    "check", want, NULL, NULL)) ||
	    (rc = xp_copy_id(r, xp_key_slice, r->ids[k], &sl[r->me],
	    &sllen[r->me])))
		goto out;
	for (size_t j = 0; j < x->n; j++) {
		size_t i = xp_pos_of(r, x->peers[j].id);

		if (!want[i])
			continue;
		sl[i] = u[j].val;
		sllen[i] = u[j].len;
		u[j].val = NULL;
	}
	if (r->late[k] && k != r->me) {
		/* the owner's own slice, only now: from the owner (late
		 * allowed), else from its cover */
		memset(want, 0, r->P * sizeof *want);
		want[k] = 1;
		if ((rc = xp_pull_some(r, u, xp_key_slice, r->ids[k], "the "
		    "owner's slice", want, ol, NULL)))
			goto out;
		for (size_t j = 0; j < x->n && !ol[k]; j++)
			if (xp_pos_of(r, x->peers[j].id) == k) {
				sl[k] = u[j].val;
				sllen[k] = u[j].len;
				u[j].val = NULL;
			}
		if (sl[k] == NULL && succ == r->me) {
			rc = say(x, SPIRT_EBUSY, "step %llu: xslice/%llu/%s, "
			    "the own slice of %s, not there before the "
			    "deadline (%u ms): part %zu of %zu not covered, "
			    "nothing combined", ULL(x->step), ULL(x->step),
			    r->ids[k], r->ids[k], x->deadline_ms, k, r->P);
			goto out;
		}
		if (sl[k] == NULL) {
			memset(want, 0, r->P * sizeof *want);
			want[succ] = 1;
			if ((rc = xp_pull_some(r, u, xp_key_coverslice, NULL,
			    "the owner's slice", want, NULL, NULL)))
				goto out;
			for (size_t j = 0; j < x->n; j++)
				if (xp_pos_of(r, x->peers[j].id) == succ) {
					sl[k] = u[j].val;
					sllen[k] = u[j].len;
					u[j].val = NULL;
				}
		}
	}
	spirt_xpart_span(r->n, r->P, k, &off, &len);
	for (size_t i = 0; i < r->P; i++) {
		rc = SPIRT_EMAC;
		if (sl[i] == NULL)
			goto out;
		/* climbed to member i's root (sl[i] kept whole, its path
		 * with it: a proof's and a cover's) */
		if ((rc = xp_slice_take(r, i, k, i == k && r->late[k] &&
		    ol[k] ? r->ids[succ] : r->ids[i], sl[i], sllen[i], &tv[i],
		    &tl[i])))
			goto out;
		if ((rc = xp_value_ok(r, tv[i], tl[i], len, &h))) {
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
		c.vals[i].v = tv[i];
		c.vals[i].len = tl[i];
	}
	xp_part_aggset(c.s, x, c.vals);
	/* scclip: the owner's own slice is the centre, as it combined;
	 * cclip: the owner's part of the last round (its xpart/<t-1>, the
	 * centre it read), as this peer assembled it in gagg/<t-1> */
	if (x->p.rule == SPIRT_AGG_SCCLIP) {
		if ((rc = spirt_tensor_decode(&h, &pl, tv[k], tl[k], 0)))
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
		say(x, rc, "step %llu: combining part %zu of %s again: %s",
		    ULL(x->step), k, r->ids[k], c.s->msg);
	spirt_aggset_reset(c.s);
	if (rc == 0 && got)
		memcpy(got, c.got, SPIRT_HASH_BYTES);
	if (rc == 0 && val) {
		*val = c.val;
		*vlen = c.vlen;
		c.val = NULL;
	}
	/* the owner's slice, for this member's cover of it (cover_own) */
	if (rc == 0 && k == r->pr && r->late[k] && r->pred == NULL) {
		if ((r->pred = malloc(sllen[k] ? sllen[k] : 1)) == NULL)
			rc = ENOMEM;
		else {
			memcpy(r->pred, sl[k], sllen[k]);
			r->predlen = sllen[k];
		}
	}
	if (rc == 0 && r->want_sl) {
		xp_drop_kept(r);
		r->ksl = sl;
		r->ksllen = sllen;
		sl = NULL;
		sllen = NULL;
	}
out:
	for (size_t i = 0; i < r->P; i++) {
		free(sl ? sl[i] : NULL);
		free(c.keys ? c.keys[i] : NULL);
	}
	free(c.val);
	free(sl);
	free(sllen);
	free(tv);
	free(tl);
	free(want);
	free(ol);
	free(c.keys);
	free(c.vals);
	free(c.s);
	free(cen);
	return rc;
}

/* check part k: combine it again and compare with the signed result of
 * its owner (or of the member that covered it) */
static int
check_part(struct xr *r, struct spirt_xpull *u, size_t k)
{
	struct spirt_exchange *x = r->x;
	unsigned char got[SPIRT_HASH_BYTES];
	int cov = strcmp(r->res[k].id, r->ids[k]) != 0, rc;

	if (strcmp(r->res[k].id, x->self) == 0)
		return 0;       /* this member's own cover */
	r->want_sl = 1;
	rc = xp_again(r, u, k, got, NULL, NULL);
	r->want_sl = 0;
	if (rc == 0 && memcmp(got, r->res[k].hash, SPIRT_HASH_BYTES) != 0)
		rc = accuse(r, k, got);
	else if (rc == 0)
		rc = -1;
	xp_drop_kept(r);
	if (rc)
		return rc == -1 ? 0 : rc;
	return say(x, SPIRT_EMAC, "step %llu: %s, %s part %zu of %zu, signed "
	    "a combination its signed inputs do not make (the proof on "
	    "stdout), nothing combined", ULL(x->step), r->res[k].id, cov ?
	    "covering" : "the owner of", k, r->P);
}

/* the verdict of this member's checks, xpart/<t>/verdict, a u8 record
 * of text: "members=<the round's ids, in order>\nbad=<k>\n" (bad= with
 * no part when every part it checked holds) */
static char *
verdict_text(const struct xr *r, long bad, size_t *len)
{
	size_t cap = 32 + r->P * (SPIRT_ID_MAX + 1), n;
	char *b;

	if ((b = malloc(cap)) == NULL)
		return NULL;
	n = (size_t)snprintf(b, cap, "members=");
	for (size_t i = 0; i < r->P; i++)
		n += (size_t)snprintf(b + n, cap - n, "%s%s", i ? " " : "",
		    r->ids[i]);
	if (bad >= 0)
		n += (size_t)snprintf(b + n, cap - n, "\nbad=%ld\n", bad);
	else
		n += (size_t)snprintf(b + n, cap - n, "\nbad=\n");
	*len = n;
	return b;
}

struct verdict {
	struct xr *r;
	const char *text;
	size_t len;
};

static int
key_verdict(char *buf, size_t cap, uint64_t step, const char *id)
{
	int n = snprintf(buf, cap, "xpart/%llu/verdict", ULL(step));

	(void)id;
	return n < 0 || (size_t)n >= cap ? SPIRT_EINVAL : 0;
}

static int
verdict_txn(struct spirt_txn *t, void *arg)
{
	struct verdict *v = arg;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if ((rc = key_verdict(key, sizeof key, v->r->x->step, NULL)))
		return rc;
	return spirt_store_put_bytes(t, key, v->text, v->len, v->r->x->step,
	    0);
}

int
spirt_xpart_verdict_parse(const void *buf, size_t n, const char *members,
    size_t mlen, long *bad, size_t parts)
{
	const char *p = buf, *q;
	size_t rest;
	unsigned long k;
	char num[16], *end;

	*bad = -1;
	if (n < mlen + 1 || memcmp(p, members, mlen) != 0 || p[mlen] != '\n')
		return SPIRT_ERUN;
	q = p + mlen + 1;
	rest = n - mlen - 1;
	if (rest == 5 && memcmp(q, "bad=\n", 5) == 0)
		return 0;
	if (rest < 6 || rest > 15 || memcmp(q, "bad=", 4) != 0 ||
	    q[rest - 1] != '\n' || q[4] < '0' || q[4] > '9' ||
	    (q[4] == '0' && rest > 6))
		return SPIRT_EDATA;
	memcpy(num, q + 4, rest - 5);
	num[rest - 5] = '\0';
	errno = 0;
	k = strtoul(num, &end, 10);
	/* (the digits to the newline: a NUL among them ends strtoul's) */
	if (errno || end != num + rest - 5 || k >= parts)
		return SPIRT_EDATA;
	*bad = (long)k;
	return 0;
}

/* a verdict (u8) of member i: its bad part (-1: none; -2: not a
 * verdict); *stale when it is of other members than this round's */
static long
verdict_bad(const struct xr *r, const struct spirt_xpull *u, int *stale)
{
	const void *b;
	size_t n, mlen;
	char *mine;
	long bad;
	int rc;

	*stale = 0;
	if (spirt_store_get_bytes(u->val, u->len, &b, &n) != 0 ||
	    (mine = verdict_text(r, -1, &mlen)) == NULL)
		return -2;
	/* (mine: "members=...\nbad=\n": its members line) */
	rc = spirt_xpart_verdict_parse(b, n, mine, mlen - 6, &bad, r->P);
	free(mine);
	*stale = rc == SPIRT_ERUN;
	return rc ? -2 : bad;
}

static int
stale_verdict(struct xr *r, size_t i, const struct spirt_xpull *u)
{
	int stale;

	(void)verdict_bad(r, u, &stale);
	return stale ? say(r->x, SPIRT_EDATA, "step %llu: %s's verdict "
	    "names other members than this round's, still at the deadline",
	    ULL(r->x->step), r->ids[i]) : 0;
}

/* part k checked here unless it was (checked[k]): a lie proven sets
 * *proven */
static int
check_once(struct xr *r, struct spirt_xpull *u, size_t k, int *checked)
{
	struct spirt_exchange *x = r->x;
	unsigned char got[SPIRT_HASH_BYTES];
	int rc;

	if (checked[k])
		return 0;
	checked[k] = 1;
	if (k != r->me)
		return check_part(r, u, k);
	/* this member's own part, said to be wrong: combined again */
	if ((rc = xp_again(r, u, k, got, NULL, NULL)))
		return rc;
	if (memcmp(got, r->res[k].hash, SPIRT_HASH_BYTES) == 0)
		return 0;
	snprintf(x->caught, sizeof x->caught, "%s", x->self);
	return say(x, SPIRT_EMAC, "step %llu: this peer, the owner of part "
	    "%zu of %zu, signed a combination its signed inputs do not make "
	    "(its checkers caught it), nothing combined", ULL(x->step), k,
	    r->P);
}

/* step 4d: the parts drawn this round (draw_parts) that this member
 * was drawn to check, its verdict published, then the verdicts of the
 * other checkers of the drawn parts: a part another checker found wrong
 * is checked here too (so that every member catches a lie that one
 * checker proved, and none combines it), and so are the drawn parts of a
 * checker whose verdict did not come */
int
xp_check(struct xr *r, struct spirt_xpull *u)
{
	struct spirt_exchange *x = r->x;
	unsigned char seed[SPIRT_HASH_BYTES];
	struct verdict v = { r, NULL, 0 };
	struct spirt_xpull *vu = NULL;
	struct spirt_xpeer *was = NULL;
	int *checked = NULL, *late = NULL, *want = NULL, rc, any = 0;
	long bad = -1;

	if (x->check == 0 || r->P < 2)
		return 0;
	if ((rc = draw_seed(r, seed)))
		return rc;
	checked = calloc(r->P, sizeof *checked);
	late = calloc(r->P, sizeof *late);
	want = calloc(r->P, sizeof *want);
	rc = ENOMEM;
	if (checked == NULL || late == NULL || want == NULL ||
	    (r->drawn == NULL &&
	    (r->drawn = calloc(r->P, sizeof *r->drawn)) == NULL))
		goto out;
	draw_parts(r, seed, r->drawn);
	rc = 0;
	for (size_t k = 0; k < r->P && rc == 0; k++)
		if (r->drawn[k] && is_checker(r, seed, k, r->me) &&
		    (rc = check_once(r, u, k, checked)) && x->caught[0])
			bad = (long)k;
	if (rc && bad < 0)
		goto out;
	/* the verdict, a lie or none, for the others */
	if ((v.text = verdict_text(r, bad, &v.len)) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	{
		int wrc = spirt_store_writef(x->store, SPIRT_TXN_VOLATILE,
		    verdict_txn, &v);

		if (rc || (rc = wrc))
			goto out;
	}
	/* whose verdicts: the other checkers of the drawn parts (a member
	 * drawn for none has checked nothing) */
	for (size_t c = 0; c < r->P; c++)
		for (size_t k = 0; k < r->P && c != r->me; k++)
			if (r->drawn[k] && is_checker(r, seed, k, c))
				want[c] = any = 1;
	if (!any)
		goto out;
	/* (the verdicts apart: the checks below pull into u; and what the
	 * round said of each member stands: a verdict is not its data) */
	rc = ENOMEM;
	if ((vu = calloc(x->n ? x->n : 1, sizeof *vu)) == NULL ||
	    (was = calloc(x->n ? x->n : 1, sizeof *was)) == NULL)
		goto out;
	for (size_t j = 0; j < x->n; j++)
		was[j] = x->peers[j];
	rc = xp_pull_some(r, vu, key_verdict, NULL, "the verdict", want, late,
	    stale_verdict);
	for (size_t j = 0; j < x->n; j++) {
		x->peers[j].state = was[j].state;
		x->peers[j].rc = was[j].rc;
		memcpy(x->peers[j].why, was[j].why, sizeof was[j].why);
	}
	if (rc)
		goto out;
	for (size_t j = 0; j < x->n && rc == 0; j++) {
		size_t c = xp_pos_of(r, x->peers[j].id);
		int stale;

		if (!want[c])
			continue;
		if (late[c]) {
			/* its checks, done here */
			for (size_t k = 0; k < r->P && rc == 0; k++)
				if (r->drawn[k] && is_checker(r, seed, k, c))
					rc = check_once(r, u, k, checked);
			continue;
		}
		if ((bad = verdict_bad(r, &vu[j], &stale)) >= 0)
			rc = check_once(r, u, (size_t)bad, checked);
	}
out:
	for (size_t j = 0; vu && j < x->n; j++)
		free(vu[j].val);
	free(vu);
	free(was);
	free((void *)v.text);
	free(checked);
	free(late);
	free(want);
	return rc;
}
