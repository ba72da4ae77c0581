/* xrec.c - the exchange's records: the round's record */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv.h"
#include "xrec.h"

#define ULL(x) ((unsigned long long)(x))

char *
spirt_xrec_round(const struct spirt_xrec *x, size_t *len)
{
	struct spirt_kvw w;
	double xms = 0;

	spirt_kvw_init(&w, NULL, 0, "spirt-round");
	spirt_kvw_putf(&w, "step", "%llu", ULL(x->step));
	spirt_kvw_put(&w, "rule", x->rule);
	spirt_kvw_putf(&w, "peer", "%s %s", x->self, x->self_out ? "out" :
	    "self");
	for (size_t i = 0; i < x->n; i++) {
		const struct spirt_xpeer *p = &x->peers[i];

		if (p->state == SPIRT_XP_USED)
			spirt_kvw_putf(&w, "peer", "%s used", p->id);
		else
			spirt_kvw_putf(&w, "peer", "%s %s: %s", p->id,
			    spirt_xstate_name(p->state), p->why);
		if (p->state == SPIRT_XP_USED && p->ms > xms)
			xms = p->ms;
	}
	spirt_kvw_putf(&w, "xms", "%.1f", xms);
	if (x->phases)
		spirt_kvw_put(&w, "phases", x->phases);
	if (x->checked)
		spirt_kvw_put(&w, "checked", x->checked);
	if (x->beats)
		spirt_kvw_put(&w, "quorum", x->reused ? "reused" : "changed");
	if (x->adopted && x->adopted[0])
		spirt_kvw_put(&w, "adopted", x->adopted);
	if (x->beats) {
		char h[2 * SPIRT_HASH_BYTES + 1];

		spirt_hash_hex(h, x->gagghash);
		spirt_kvw_put(&w, "gagg", h);
	}
	if (spirt_kvw_end(&w, len)) {
		free(w.buf);
		return NULL;
	}
	return w.buf;
}

int
spirt_xrec_with_state(char **out, size_t *len, const void *rec, size_t n,
    const char *state)
{
	static const char *const multi[] = { "peer", NULL };
	struct spirt_kvr r;
	struct spirt_kvw w;
	char name[32];
	int rc;

	*out = NULL;
	if ((rc = spirt_kvr_open(&r, rec, n, "spirt-round", multi, 0)))
		return rc == SPIRT_EVERSION ? rc : SPIRT_EDATA;
	spirt_kvw_init(&w, NULL, 0, "spirt-round");
	while ((rc = spirt_kvr_next(&r)) == 0) {
		if (r.nlen >= sizeof name) {
			rc = SPIRT_EDATA;
			break;
		}
		memcpy(name, r.name, r.nlen);
		name[r.nlen] = '\0';
		if (strcmp(name, "state"))
			spirt_kvw_putf(&w, name, "%.*s", (int)r.vlen, r.val);
	}
	spirt_kvw_put(&w, "state", state);
	if (rc != SPIRT_EOF || (rc = spirt_kvw_end(&w, len))) {
		free(w.buf);
		return rc == SPIRT_EOF ? SPIRT_EDATA : rc;
	}
	*out = w.buf;
	return 0;
}
