/* lineage.c - a store's signed digests, step by step (ISC licence) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "keyfile.h"
#include "keys.h"
#include "lineage.h"
#include "token.h"

/* handshakes are not checked here: any window */
#define LN_WINDOW ((uint64_t)60 * 1000000000u)

int
spirt_model_hash(unsigned char h[SPIRT_HASH_BYTES], struct spirt_txn *t,
    const char *model, uint64_t step, char *key, size_t cap)
{
	unsigned char two[2 * SPIRT_HASH_BYTES];
	const void *v;
	size_t len;
	int rc;

	if ((rc = spirt_key_model(key, cap, model, step)) ||
	    (rc = spirt_store_get(t, key, &v, &len)))
		return rc;
	spirt_hash(h, v, len);
	/* a model with state: the hash of the two hashes, so that peers
	 * whose states differ hold different models */
	if ((rc = spirt_key_mstate(key, cap, model, step)))
		return rc;
	if ((rc = spirt_store_get(t, key, &v, &len)) == SPIRT_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	memcpy(two, h, SPIRT_HASH_BYTES);
	spirt_hash(two + SPIRT_HASH_BYTES, v, len);
	spirt_hash(h, two, sizeof two);
	return 0;
}

/* a group key: a key file, 64 hex digits, or a file of them (as keygen
 * prints); 0 or an error */
static int
group_key(unsigned char pk[SPIRT_PK_BYTES], const char *group)
{
	char *text;
	size_t len;
	int rc;

	if (strlen(group) == 2 * SPIRT_PK_BYTES &&
	    spirt_pubkey_parse(pk, group) == 0)
		return 0;
	if ((rc = spirt_pubkey_load(pk, group)) != SPIRT_EKEYFILE)
		return rc;
	if (spirt_readfile(group, (void **)&text, &len))
		return rc;
	if (len == 2 * SPIRT_PK_BYTES + 1 && text[len - 1] == '\n') {
		text[len - 1] = '\0';
		if (spirt_pubkey_parse(pk, text) == 0)
			rc = 0;
	}
	free(text);
	return rc;
}

int
spirt_lineage_trust(struct spirt_trust **t, const char *run,
    const char *group, const char *allow, char *msg, size_t cap)
{
	unsigned char gpk[SPIRT_PK_BYTES];
	void *text;
	size_t len, line = 0;
	int rc;

	*t = NULL;
	if ((!group || !*group) && (!allow || !*allow))
		return spirt_msgf(msg, cap, SPIRT_EINVAL, "neither a group key "
		    "nor an allowlist (whom to trust)");
	if (group && *group && (rc = group_key(gpk, group)))
		return spirt_msgrc(msg, cap, rc, "%s", group);
	if ((rc = spirt_trust_new(t, run, group && *group ? gpk : NULL,
	    LN_WINDOW)))
		return spirt_msgrc(msg, cap, rc, "run %s", run);
	if (!allow || !*allow)
		return 0;
	if ((rc = spirt_readfile(allow, &text, &len)) == 0) {
		rc = spirt_trust_allow_parse(*t, text, len, &line);
		free(text);
	}
	if (rc) {
		spirt_trust_free(*t);
		*t = NULL;
		if (line)
			return spirt_msgrc(msg, cap, rc, "%s:%zu", allow, line);
		return spirt_msgrc(msg, cap, rc, "%s", allow);
	}
	return 0;
}

/* ---- the walk ---- */

struct ln_dg {
	uint64_t step;
	char peer[SPIRT_ID_MAX + 1];
	const void *val;        /* the record, valid while the txn lasts */
	size_t len;
};

struct ln_list {
	struct ln_dg *v;
	size_t n, cap;
};

static int
collect(void *arg, const char *key, const void *val, size_t len)
{
	struct ln_list *l = arg;
	struct spirt_key_parts k;

	if (spirt_key_parse(&k, key) || k.kind != SPIRT_KEY_DIGEST)
		return 0;       /* not a digest's key: not ours to judge */
	if (l->n == l->cap) {
		size_t c = l->cap ? 2 * l->cap : 64;
		struct ln_dg *v = realloc(l->v, c * sizeof *v);

		if (!v)
			return ENOMEM;
		l->v = v;
		l->cap = c;
	}
	l->v[l->n].step = k.step;
	snprintf(l->v[l->n].peer, sizeof l->v[0].peer, "%s", k.peer);
	l->v[l->n].val = val;
	l->v[l->n].len = len;
	l->n++;
	return 0;
}

static int
bystep(const void *a, const void *b)
{
	const struct ln_dg *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return strcmp(x->peer, y->peer);
}

static int
bywho(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int
list(struct spirt_txn *t, struct ln_list *l)
{
	int rc;

	memset(l, 0, sizeof *l);
	if ((rc = spirt_store_list(t, SPIRT_KEY_DIGEST_ROOT, collect, l)))
		return rc;
	if (l->n == 0)
		return SPIRT_ENOTFOUND;
	qsort(l->v, l->n, sizeof l->v[0], bystep);
	return 0;
}

int
spirt_lineage_run(struct spirt_store *s, char run[SPIRT_ID_MAX + 1])
{
	struct spirt_digest *d = NULL;
	struct spirt_txn *t;
	struct ln_list l;
	const void *b;
	size_t n;
	int rc;

	if ((rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = list(t, &l)) == 0 &&
	    (rc = spirt_store_get_bytes(l.v[0].val, l.v[0].len, &b, &n)) ==
	    0) {
		if (!(d = malloc(sizeof *d)))
			rc = ENOMEM;
		else if ((rc = spirt_digest_open(d, b, n)) == 0)
			snprintf(run, SPIRT_ID_MAX + 1, "%s", d->run);
	}
	free(d);
	free(l.v);
	spirt_txn_abort(t);
	return rc;
}

/* step st's contributors: its signers and whom they list */
static void
contributors(struct spirt_lineage_step *st, const struct spirt_digest *d,
    const int *ok, size_t nd)
{
	size_t i, j, k;

	st->n = 0;
	for (i = 0; i < nd; i++) {
		if (!ok[i])
			continue;
		for (j = 0; j <= d[i].n; j++) {
			const char *id = j == d[i].n ? d[i].id : d[i].got[j].id;

			for (k = 0; k < st->n; k++)
				if (!strcmp(st->who[k], id))
					break;
			if (k == st->n) {
				if (st->n == SPIRT_DIGEST_MAXPEERS)
					continue;
				snprintf(st->who[st->n++], sizeof st->who[0],
				    "%s", id);
			}
		}
	}
	qsort(st->who, st->n, sizeof st->who[0], bywho);
	for (k = 0; k < st->n; k++) {
		st->signer[k] = 0;
		for (i = 0; i < nd; i++)
			if (ok[i] && !strcmp(d[i].id, st->who[k]))
				st->signer[k] = 1;
	}
}

/* check step st->step's nd digests (from e), into st */
static void
step_check(struct spirt_lineage_step *st, struct spirt_txn *t,
    const struct ln_dg *e, size_t nd, struct spirt_digest *d, int *ok,
    const char *model, const char *run, const struct spirt_trust *tr)
{
	const struct spirt_digest *ref = NULL;
	char key[SPIRT_KEY_MAX + 1];
	struct spirt_member m;
	const void *b;
	size_t i, j, k, n;
	uint64_t now;
	int rc;

	st->nsigned = nd;
	for (i = 0; i < nd; i++) {
		ok[i] = 0;
		if ((rc = spirt_store_get_bytes(e[i].val, e[i].len, &b, &n)) ||
		    (rc = spirt_digest_open(&d[i], b, n))) {
			goto bad;
		}
		/* a token as at its issue: whether it was a member's when
		 * it signed (the digest carries no time of its own) */
		now = 0;
		if (d[i].has_token && spirt_token_decode(&m, d[i].token) == 0)
			now = m.issued;
		if ((rc = spirt_digest_verify(&d[i], b, n, run, e[i].peer,
		    st->step, tr, now)))
			goto bad;
		ok[i] = 1;
		continue;
bad:
		if (!st->broken) {
			st->broken = SPIRT_LN_DIGEST;
			st->rc = rc;
			snprintf(st->peer, sizeof st->peer, "%s", e[i].peer);
			if (spirt_key_digest(st->key, sizeof st->key,
			    st->step, e[i].peer))
				st->key[0] = '\0';
		}
	}
	contributors(st, d, ok, nd);
	for (i = 0; i < nd; i++) {
		if (!ok[i])
			continue;
		if (!ref) {
			ref = &d[i];
			memcpy(st->model, ref->model, SPIRT_HASH_BYTES);
		} else if (memcmp(d[i].model, ref->model, SPIRT_HASH_BYTES) &&
		    !st->broken) {
			st->broken = SPIRT_LN_MODELS;
			snprintf(st->peer, sizeof st->peer, "%s", d[i].id);
			snprintf(st->other, sizeof st->other, "%s", ref->id);
		}
		for (j = 0; j < d[i].n; j++)
			for (k = 0; k < nd; k++)
				if (ok[k] && !strcmp(d[k].id, d[i].got[j].id) &&
				    memcmp(d[k].agg, d[i].got[j].hash,
				    SPIRT_HASH_BYTES) && !st->broken) {
					st->broken = SPIRT_LN_RECEIVED;
					snprintf(st->peer, sizeof st->peer,
					    "%s", d[i].id);
					snprintf(st->other, sizeof st->other,
					    "%s", d[k].id);
				}
	}
	rc = spirt_model_hash(st->stored, t, model, st->step, key, sizeof key);
	if (rc == 0) {
		st->kept = 1;
		if (ref && memcmp(st->stored, st->model, SPIRT_HASH_BYTES) &&
		    !st->broken) {
			st->broken = SPIRT_LN_STORED;
			if (spirt_key_model(st->key, sizeof st->key, model,
			    st->step))
				st->key[0] = '\0';
		}
	} else if (rc != SPIRT_ENOTFOUND && !st->broken) {
		st->broken = SPIRT_LN_STORE;
		st->rc = rc;
		snprintf(st->key, sizeof st->key, "%s", key);
	}
}

int
spirt_lineage_walk(struct spirt_store *s, const char *model, const char *run,
    const struct spirt_trust *tr,
    int (*fn)(void *arg, const struct spirt_lineage_step *st), void *arg,
    uint64_t *last, uint64_t *broken)
{
	struct spirt_lineage_step *st = NULL;
	struct spirt_digest *d = NULL;
	struct spirt_txn *t;
	struct ln_list l;
	size_t i, j, most = 0;
	uint64_t step;
	int *ok = NULL, rc;

	*last = 0;
	*broken = 0;
	if ((rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = list(t, &l)))
		goto out;
	for (i = 0; i < l.n; i = j) {
		for (j = i; j < l.n && l.v[j].step == l.v[i].step; j++)
			;
		if (j - i > most)
			most = j - i;
	}
	*last = l.v[l.n - 1].step;
	if (!(st = malloc(sizeof *st)) || !(d = calloc(most, sizeof *d)) ||
	    !(ok = calloc(most, sizeof *ok))) {
		rc = ENOMEM;
		goto out;
	}
	for (i = 0, step = 0; ; step++) {
		memset(st, 0, sizeof *st);
		st->step = step;
		for (j = i; j < l.n && l.v[j].step == step; j++)
			;
		st->to = step;
		if (j == i) {
			/* a gap, up to the next step with digests: one
			 * break, however long (a step far on is no loop) */
			st->broken = SPIRT_LN_MISSING;
			st->to = l.v[i].step - 1;
			snprintf(st->key, sizeof st->key, "%s%llu/",
			    SPIRT_KEY_DIGEST_ROOT, (unsigned long long)step);
		} else {
			step_check(st, t, l.v + i, j - i, d, ok, model, run,
			    tr);
		}
		i = j;
		if (st->broken)
			*broken += st->to - step + 1;
		if ((rc = fn(arg, st)) || st->to == *last)
			break;
		step = st->to;
	}
out:
	free(ok);
	free(d);
	free(st);
	free(l.v);
	spirt_txn_abort(t);
	return rc;
}
