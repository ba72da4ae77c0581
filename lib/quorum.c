/* quorum.c - who closes a step: the quorum and the straggler deadline */
/* ISC licence, see LICENSE */
#include <stdlib.h>
#include <string.h>

#include "kv.h"
#include "parse.h"
#include "quorum.h"

static int
has(const char *const *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], id) == 0)
			return 1;
	return 0;
}

static int
unique(const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (has(v, i, v[i]))
			return 0;
	return 1;
}

int
spirt_quorum_decide(struct spirt_quorum *q)
{
	size_t k = 0;

	q->in_last = 0;
	q->reused = 0;
	q->minority = 0;
	if (!unique(q->last, q->nlast) || !unique(q->alive, q->nalive))
		return SPIRT_EINVAL;
	for (size_t i = 0; i < q->nalive; i++)
		k += has(q->last, q->nlast, q->alive[i]);
	q->in_last = k;
	q->reused = k == q->nlast && q->nalive == q->nlast;
	if (2 * k <= q->nlast) {
		q->minority = 1;
		return SPIRT_EBUSY;
	}
	return q->nalive < q->min_peers ? SPIRT_EBUSY : 0;
}

int
spirt_quorum_joins(uint64_t t, uint64_t join, int in_last)
{
	if (join == UINT64_MAX || t < join)
		return SPIRT_JOIN_LATER;
	if (t == join || in_last)
		return SPIRT_JOIN_IN;
	return SPIRT_JOIN_MISSED;
}

unsigned
spirt_quorum_deadline(double measured_ms, unsigned floor_ms, unsigned cap_ms)
{
	double d = 2 * measured_ms;

	if (measured_ms <= 0 || d >= cap_ms)
		return cap_ms;
	if (d < floor_ms)
		return floor_ms < cap_ms ? floor_ms : cap_ms;
	return (unsigned)d + 1;
}

/* a peer= value "<id> self" or "<id> used": the id into ids[*n] */
static int
round_peer(char (*ids)[SPIRT_QUORUM_ID], size_t max, size_t *n,
    const char *v, size_t vn)
{
	const char *sp = memchr(v, ' ', vn);
	size_t l;

	if (sp == NULL || (size_t)(v + vn - sp) != 5 || (memcmp(sp + 1,
	    "self", 4) && memcmp(sp + 1, "used", 4)))
		return 0;
	if ((l = (size_t)(sp - v)) == 0 || l >= SPIRT_QUORUM_ID ||
	    *n == max)
		return SPIRT_EDATA;
	memcpy(ids[*n], v, l);
	ids[(*n)++][l] = '\0';
	return 0;
}

int
spirt_quorum_round_parse(char (*ids)[SPIRT_QUORUM_ID], size_t max, size_t *n,
    double *xms, const char *text, size_t len)
{
	static const char *const multi[] = { "peer", NULL };
	struct spirt_kvr r;
	char v[64];
	int rc;

	*n = 0;
	*xms = -1;
	if (spirt_kvr_open(&r, text, len, "spirt-round", multi, 0))
		return SPIRT_EDATA;
	while ((rc = spirt_kvr_next(&r)) == 0) {
		if (spirt_kvr_is(&r, "peer")) {
			if (round_peer(ids, max, n, r.val, r.vlen))
				return SPIRT_EDATA;
		} else if (spirt_kvr_is(&r, "xms") && (spirt_kvr_str(&r, v,
		    sizeof v) || spirt_parse_double(xms, v, 0, 1e12))) {
			return SPIRT_EDATA;
		}
	}
	return rc == SPIRT_EOF ? 0 : SPIRT_EDATA;
}
