/* peerauth.c - what a member may do at a peer: its role's rules, a
 * function's binding, and the gradient slot it writes (spirt-peer serve) */
#include <stdint.h>
#include <string.h>

#include "assign.h"
#include "keys.h"
#include "peersrv.h"

/* ---- authorisation ---- */

static int
startswith(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* the rules of spirt-peer(1), on keys as lib/keys.h takes them apart */
int
spirt_peersrv_allowed(int role, int op, const char *key, int *noover)
{
	struct spirt_key_parts k;
	int kind = spirt_key_parse(&k, key) == 0 ? k.kind : SPIRT_KEY_NONE;

	*noover = 0;
	switch (op) {
	case SPIRT_OP_GET:
		if (role == SPIRT_ROLE_PEER)
			return 0;
		return role == SPIRT_ROLE_FUNCTION && (kind ==
		    SPIRT_KEY_MODEL || kind == SPIRT_KEY_MSTATE ||
		    kind == SPIRT_KEY_DATA_INFO ||
		    kind == SPIRT_KEY_DATA_ASSIGN || kind ==
		    SPIRT_KEY_DATA_SCALE || kind == SPIRT_KEY_DATA_X ||
		    kind == SPIRT_KEY_DATA_Y) ? 0 : SPIRT_EROLE;
	case SPIRT_OP_LIST:     /* key: the prefix listed */
		if (role == SPIRT_ROLE_PEER)
			return 0;
		return role == SPIRT_ROLE_FUNCTION &&
		    (startswith(key, SPIRT_KEY_MODEL_ROOT) ||
		    startswith(key, SPIRT_KEY_DATA_ROOT)) ? 0 : SPIRT_EROLE;
	case SPIRT_OP_PUT:
		if (kind == SPIRT_KEY_BEAT)
			return 0;
		if (role == SPIRT_ROLE_FUNCTION && (kind == SPIRT_KEY_GRAD ||
		    kind == SPIRT_KEY_STATE)) {
			*noover = 1;
			return 0;
		}
		return SPIRT_EROLE;
	default:                /* nobody deletes through a peer */
		return SPIRT_EROLE;
	}
}

int
spirt_peersrv_member_allowed(int role, const char *self, const char *id,
    int op, const char *key, int *noover)
{
	struct spirt_key_parts k;
	char peer[SPIRT_ID_MAX + 1];
	uint32_t first, last;
	int rc = spirt_peersrv_allowed(role, op, key, noover);

	if (rc || op != SPIRT_OP_PUT || spirt_key_parse(&k, key) != 0)
		return rc;
	if (k.kind == SPIRT_KEY_BEAT && strcmp(k.peer, id) != 0)
		return SPIRT_EROLE;
	/* a function writes the slots its id binds at this peer, no other
	 * (its gradient's and its state's) */
	if ((k.kind == SPIRT_KEY_GRAD || k.kind == SPIRT_KEY_STATE) &&
	    (spirt_fn_binding(id, peer,
	    sizeof peer, &first, &last) != 0 || strcmp(peer, self) != 0 ||
	    k.worker < first || k.worker > last))
		return SPIRT_EADDR;
	return 0;
}

/* ---- a gradient slot: the step computed, a worker of the assignment */

/* the newest version of each model name; whether one of them is at step */
struct newest {
	uint64_t step;
	char name[SPIRT_NAME_PART_MAX + 1];
	uint64_t max;
	int any, hit;
};

static int
newest_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct newest *w = arg;
	char name[SPIRT_NAME_PART_MAX + 1];
	uint64_t t;

	(void)val;
	(void)len;
	if (spirt_model_key_parse(key, name, sizeof name, &t) != 0)
		return 0;
	/* one name's versions are adjacent: no name holds '@' */
	if (w->any && strcmp(name, w->name) != 0) {
		w->hit |= w->max == w->step;
		w->any = 0;
	}
	if (!w->any || t > w->max)
		w->max = t;
	if (!w->any)
		memcpy(w->name, name, sizeof name);
	w->any = 1;
	return 0;
}

/* a worker at a step, looked for in each data set's assignment */
struct live {
	struct spirt_txn *txn;
	uint64_t step;
	uint32_t worker;
	int rc, yes;
};

static int
part_has(const struct spirt_assign *a, size_t first, size_t n, uint32_t w)
{
	for (size_t i = first; i < first + n; i++)
		if (a->rows[i * SPIRT_AS_COLS + SPIRT_AS_WORKER] == (int64_t)w)
			return 1;
	return 0;
}

/* for data/<ds>/assign: 1 if the worker reads samples under it at the
 * step (l->yes), 0 to look on, or 1 with l->rc a store error */
static int
live_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct live *l = arg;
	struct spirt_key_parts k;
	struct spirt_assign a;
	int64_t info[4];
	struct spirt_tensor h;
	const void *pl;
	char ik[SPIRT_KEY_MAX + 1];
	uint64_t S;
	int full = 1;

	(void)val;
	(void)len;
	if (spirt_key_parse(&k, key) != 0 || k.kind != SPIRT_KEY_DATA_ASSIGN)
		return 0;
	if ((l->rc = spirt_data_assign_get(&a, l->txn, k.name)) != 0) {
		/* none, or not one: no worker of this data set */
		if (l->rc == SPIRT_ENOTFOUND || l->rc == SPIRT_EDATA ||
		    l->rc == SPIRT_ESHAPE || l->rc == SPIRT_EDTYPE)
			l->rc = 0;
		return l->rc != 0;
	}
	/*
	 * The part in force at the step: a rest part names its batch, and
	 * data/<ds>/info the steps per epoch; the full part holds after it.
	 * (Without a rest part the full part is all a worker may read.)
	 */
	if (a.nrest && spirt_key_data_info(ik, sizeof ik, k.name) == 0 &&
	    spirt_store_get_tensor(l->txn, ik, &h, &pl, 0) == 0 &&
	    h.dtype == SPIRT_I64 && h.nelem == 4) {
		memcpy(info, pl, sizeof info);  /* may be unaligned */
		S = info[0] > 0 && info[1] > 0 ? spirt_epoch_steps(
		    (uint64_t)info[1], (uint64_t)info[0], a.rest_batch) : 0;
		if (S && l->step / S == a.rest_epoch &&
		    l->step % S >= a.rest_step)
			full = 0;
	}
	l->yes = full ? part_has(&a, a.nrest, a.nrows - a.nrest, l->worker) :
	    part_has(&a, 0, a.nrest, l->worker);
	spirt_assign_free(&a);
	return l->yes;
}

/*
 * May a function's gradient for worker w of step t be written?  t must
 * be the newest version of a model in the store (the step computed now:
 * not one spent, not one to come), and w a worker that reads samples
 * under the assignment of a data set of the store (not a dead one, not
 * one beyond the workers).  0, SPIRT_ESTEP, SPIRT_EADDR, store errors.
 */
int
spirt_peersrv_slot_check(struct spirt_txn *txn, uint64_t t, uint32_t w)
{
	struct newest nw = { .step = t };
	struct live l = { txn, t, w, 0, 0 };
	int rc;

	if ((rc = spirt_store_list(txn, SPIRT_KEY_MODEL_ROOT, newest_fn,
	    &nw)) != 0)
		return rc;
	if (!(nw.hit || (nw.any && nw.max == t)))
		return SPIRT_ESTEP;
	rc = spirt_store_list(txn, SPIRT_KEY_DATA_ROOT, live_fn, &l);
	if (l.rc)
		return l.rc;
	if (rc != 0 && rc != 1)
		return rc;
	return l.yes ? 0 : SPIRT_EADDR;
}
