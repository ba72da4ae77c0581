/* store_http.c - the store backend for a peer's URL (ISC licence) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "parse.h"
#include "keys.h"
#include "remote.h"
#include "store.h"

/*
 * Values are copies: a get returns a buffer the transaction owns until it
 * ends (fetched once: a second get of the key in the transaction returns
 * the same copy, a snapshot as LMDB's readers have); puts, reserves and
 * deletes are kept in order and sent at commit
 * (a failure stops there: what was sent stays, as with separate commits);
 * a listing asks the server for its keys, then for each value, which is
 * valid during the callback only.  Credentials come from the store
 * configuration's remote (spirt_cred_load), the deadline of each request
 * from its timeout ($SPIRT_TIMEOUT: spirt_store_setconf()).
 */

struct hstore {
	struct spirt_cred *c;
	struct spirt_remote *r;
	unsigned flags;
};

struct pend {
	struct pend *next;
	int op;                 /* SPIRT_OP_PUT or SPIRT_OP_DEL */
	unsigned flags;
	char *key;
	void *val;
	size_t len;
};

struct copy {
	struct copy *next;
	void *p;
	size_t len;
	char *key;              /* a value got: asked again, given again */
};

struct htxn {
	struct hstore *h;
	int rdonly;
	struct pend *head, **tail;
	struct copy *copies;
};

static char lastwhy[700];
static int lastrc;

static int
fail(struct hstore *h, int rc)
{
	if (rc) {
		snprintf(lastwhy, sizeof lastwhy, "%s",
		    spirt_remote_msg(h->r));
		lastrc = rc;
	}
	return rc;
}

static const char *
why(int rc)
{
	/* (not consumed: a tool may say a failure twice, e.g. spirt-grad
	 * -F's answer and its message line) */
	if (!lastrc || rc != lastrc || !*lastwhy)
		return NULL;
	return lastwhy;
}

static int
h_open(void **out, const char *loc, unsigned flags)
{
	static const struct spirt_remote_conf none;
	const struct spirt_store_conf *conf = spirt_store_getconf();
	const char *t = conf->timeout;
	double secs = SPIRT_REMOTE_TIMEOUT_MS / 1000.0;
	struct hstore *h;
	char msg[600];
	int rc;

	*out = NULL;
	if (t && *t && spirt_parse_duration(&secs, t, 0.001, 86400)) {
		snprintf(lastwhy, sizeof lastwhy, "SPIRT_TIMEOUT: \"%s\" is "
		    "not a duration from 1ms to 24h", t);
		lastrc = SPIRT_EENV;
		return SPIRT_EENV;
	}
	if (!(h = calloc(1, sizeof *h)))
		return ENOMEM;
	h->flags = flags;
	msg[0] = '\0';
	if ((rc = spirt_remote_global_init()))
		snprintf(msg, sizeof msg, "%s", spirt_remote_global_error());
	if (rc || (rc = spirt_cred_load(&h->c, conf->remote ? conf->remote :
	    &none, 0, msg, sizeof msg))) {
		if (*msg) {
			snprintf(lastwhy, sizeof lastwhy, "%s", msg);
			lastrc = rc;
		}
		goto fail;
	}
	if ((rc = spirt_remote_open(&h->r, loc, h->c,
	    (unsigned)(secs * 1000 + 0.5))))
		goto fail;
	*out = h;
	return 0;
fail:
	spirt_cred_free(h->c);
	free(h);
	return rc;
}

static void
h_close(void *bs)
{
	struct hstore *h = bs;

	if (!h)
		return;
	spirt_remote_close(h->r);
	spirt_cred_free(h->c);
	free(h);
}

static int
h_begin(void **out, void *bs, unsigned flags)
{
	struct hstore *h = bs;
	struct htxn *t;

	*out = NULL;
	if (!(flags & SPIRT_TXN_RDONLY) && (h->flags & SPIRT_STORE_RDONLY))
		return EROFS;
	if (!(t = calloc(1, sizeof *t)))
		return ENOMEM;
	t->h = h;
	t->rdonly = flags & SPIRT_TXN_RDONLY;
	t->tail = &t->head;
	*out = t;
	return 0;
}

static void
h_abort(void *bt)
{
	struct htxn *t = bt;

	if (!t)
		return;
	for (struct pend *p = t->head, *n; p; p = n) {
		n = p->next;
		free(p->key);
		free(p->val);
		free(p);
	}
	for (struct copy *c = t->copies, *n; c; c = n) {
		n = c->next;
		free(c->p);
		free(c->key);
		free(c);
	}
	free(t);
}

static int
h_commit(void *bt)
{
	struct htxn *t = bt;
	int rc = 0;

	for (struct pend *p = t->head; p && !rc; p = p->next) {
		uint64_t step = spirt_key_wirestep(p->key);

		rc = p->op == SPIRT_OP_PUT ?
		    spirt_remote_put(t->h->r, step, p->key, p->val, p->len,
		    p->flags) : spirt_remote_del(t->h->r, step, p->key);
		fail(t->h, rc);
	}
	h_abort(t);
	return rc;
}

/* the last buffered operation on key, or NULL */
static struct pend *
pending(struct htxn *t, const char *key)
{
	struct pend *hit = NULL;

	for (struct pend *p = t->head; p; p = p->next)
		if (!strcmp(p->key, key))
			hit = p;
	return hit;
}

static int
h_get(void *bt, const char *key, const void **val, size_t *len)
{
	struct htxn *t = bt;
	struct pend *p = pending(t, key);
	struct copy *c;
	void *v;
	int rc;

	if (p) {
		if (p->op == SPIRT_OP_DEL)
			return SPIRT_ENOTFOUND;
		*val = p->val;
		*len = p->len;
		return 0;
	}
	/* one transaction, one answer per key: a reader that checks a
	 * record and then reads it (spirt-store get) fetches it once */
	for (c = t->copies; c; c = c->next)
		if (!strcmp(c->key, key)) {
			*val = c->p;
			*len = c->len;
			return 0;
		}
	if (!(c = calloc(1, sizeof *c)) || !(c->key = strdup(key))) {
		free(c);
		return ENOMEM;
	}
	if ((rc = spirt_remote_get(t->h->r, spirt_key_wirestep(key), key,
	    &v, len))) {
		free(c->key);
		free(c);
		return fail(t->h, rc);
	}
	c->p = v;
	c->len = *len;
	c->next = t->copies;
	t->copies = c;
	*val = v;
	return 0;
}

static int
queue(struct htxn *t, int op, const char *key, size_t len, unsigned flags,
    struct pend **out)
{
	struct pend *p;

	if (t->rdonly)
		return EROFS;
	if (!(p = calloc(1, sizeof *p)) || !(p->key = strdup(key)) ||
	    (op == SPIRT_OP_PUT && !(p->val = malloc(len ? len : 1)))) {
		if (p)
			free(p->key);
		free(p);
		return ENOMEM;
	}
	p->op = op;
	p->flags = flags;
	p->len = len;
	*t->tail = p;
	t->tail = &p->next;
	*out = p;
	return 0;
}

static int
h_reserve(void *bt, const char *key, size_t len, void **dst, unsigned flags)
{
	struct pend *p;
	int rc;

	if ((rc = queue(bt, SPIRT_OP_PUT, key, len, flags, &p)))
		return rc;
	*dst = p->val;
	return 0;
}

static int
h_del(void *bt, const char *key)
{
	struct pend *p;

	return queue(bt, SPIRT_OP_DEL, key, 0, 0, &p);
}

struct keys {
	char **k;
	size_t n, cap;
};

static int
collect(void *arg, const char *key, size_t len)
{
	struct keys *ks = arg;

	(void)len;
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 64;
		char **k = realloc(ks->k, cap * sizeof *k);

		if (!k)
			return ENOMEM;
		ks->k = k;
		ks->cap = cap;
	}
	if (!(ks->k[ks->n] = strdup(key)))
		return ENOMEM;
	ks->n++;
	return 0;
}

static int
h_list(void *bt, const char *prefix,
    int (*fn)(void *arg, const char *key, const void *val, size_t len),
    void *arg)
{
	struct htxn *t = bt;
	struct keys ks = { NULL, 0, 0 };
	int rc;

	/* the keys first: the answer's buffer is the next request's */
	rc = fail(t->h, spirt_remote_list(t->h->r, prefix, collect, &ks));
	for (size_t i = 0; !rc && i < ks.n; i++) {
		void *v;
		size_t len;

		rc = spirt_remote_get(t->h->r, spirt_key_wirestep(ks.k[i]),
		    ks.k[i], &v, &len);
		if (rc == SPIRT_ENOTFOUND) {    /* gone since: skip it */
			rc = 0;
			continue;
		}
		if (rc) {
			fail(t->h, rc);
			break;
		}
		rc = fn(arg, ks.k[i], v, len);
		free(v);
	}
	for (size_t i = 0; i < ks.n; i++)
		free(ks.k[i]);
	free(ks.k);
	return rc;
}

const struct spirt_backend spirt_backend_http = {
	"http", h_open, h_close, h_begin, h_commit, h_abort, h_get,
	h_reserve, h_del, h_list, why
};
