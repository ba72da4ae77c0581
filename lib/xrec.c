/* xrec.c - the exchange's records: u8 values, the round's record */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor.h"
#include "xrec.h"

#define ULL(x) ((unsigned long long)(x))

int
spirt_xrec_put(struct spirt_txn *t, const char *key, const void *b,
    size_t len, uint64_t step, unsigned flags)
{
	struct spirt_tensor h;
	uint64_t dims[1] = { len };
	int rc;

	if ((rc = spirt_tensor_init(&h, SPIRT_U8, 1, dims)))
		return rc;
	h.step = step;
	return spirt_store_put_tensor(t, key, &h, b, flags);
}

int
spirt_xrec_bytes(const void *val, size_t len, const void **b, size_t *n)
{
	struct spirt_tensor h;
	int rc;

	if ((rc = spirt_tensor_decode(&h, b, val, len, 1)))
		return rc;
	if (h.dtype != SPIRT_U8 || h.rank != 1)
		return SPIRT_EDTYPE;
	*n = h.nbytes;
	return 0;
}

char *
spirt_xrec_round(const struct spirt_xrec *x, size_t *len)
{
	size_t cap = 256 + x->n * 512, n;
	char *r = malloc(cap);

	if (r == NULL)
		return NULL;
	n = (size_t)snprintf(r, cap, "VERSION=1\nTYPE=spirt-round\nstep=%llu"
	    "\nrule=%s\npeer=%s %s\n", ULL(x->step), x->rule, x->self,
	    x->self_out ? "out" : "self");
	for (size_t i = 0; i < x->n && n < cap; i++) {
		const struct spirt_xpeer *p = &x->peers[i];

		n += (size_t)snprintf(r + n, cap - n, "peer=%s %s%s%s\n",
		    p->id, spirt_xstate_name(p->state),
		    p->state == SPIRT_XP_USED ? "" : ": ",
		    p->state == SPIRT_XP_USED ? "" : p->why);
	}
	if (n < cap) {
		double xms = 0;

		for (size_t i = 0; i < x->n; i++)
			if (x->peers[i].state == SPIRT_XP_USED &&
			    x->peers[i].ms > xms)
				xms = x->peers[i].ms;
		n += (size_t)snprintf(r + n, cap - n, "xms=%.1f\n", xms);
	}
	if (n < cap && x->beats)
		n += (size_t)snprintf(r + n, cap - n, "quorum=%s\n",
		    x->reused ? "reused" : "changed");
	if (n < cap && x->adopted && x->adopted[0])
		n += (size_t)snprintf(r + n, cap - n, "adopted=%s\n",
		    x->adopted);
	if (n < cap && x->beats) {
		char h[2 * SPIRT_HASH_BYTES + 1];

		spirt_hash_hex(h, x->gagghash);
		n += (size_t)snprintf(r + n, cap - n, "gagg=%s\n", h);
	}
	if (n < cap)
		n += (size_t)snprintf(r + n, cap - n, "END\n");
	*len = n < cap ? n : cap;
	return r;
}

int
spirt_xrec_with_state(char **r, size_t *len, const char *state)
{
	size_t n = *len, k = strlen(state);
	char *b;

	if (n < 4 || memcmp(*r + n - 4, "END\n", 4))
		return SPIRT_EDATA;
	if ((b = realloc(*r, n + k + 8)) == NULL)
		return ENOMEM;
	n -= 4;
	n += (size_t)snprintf(b + n, k + 12, "state=%s\nEND\n", state);
	*r = b;
	*len = n;
	return 0;
}
