/* quorum.c - who closes a step: the quorum and the straggler deadline */
/* ISC licence, see LICENSE */
#include <stdlib.h>
#include <string.h>

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

int
spirt_quorum_round_parse(char (*ids)[SPIRT_QUORUM_ID], size_t max, size_t *n,
    double *xms, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	static const char head[] = "VERSION=1\nTYPE=spirt-round\n";

	*n = 0;
	*xms = -1;
	if (len < sizeof head - 1 || memcmp(text, head, sizeof head - 1))
		return SPIRT_EDATA;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[400];

		if (k < sizeof line) {
			memcpy(line, p, k);
			line[k] = '\0';
			if (strncmp(line, "peer=", 5) == 0) {
				char *sp = strchr(line + 5, ' ');

				if (sp && (strcmp(sp + 1, "self") == 0 ||
				    strcmp(sp + 1, "used") == 0)) {
					size_t l = (size_t)(sp - line - 5);

					if (l == 0 || l >= SPIRT_QUORUM_ID)
						return SPIRT_EDATA;
					if (*n == max)
						return SPIRT_EDATA;
					memcpy(ids[*n], line + 5, l);
					ids[(*n)++][l] = '\0';
				}
			} else if (strncmp(line, "xms=", 4) == 0 &&
			    spirt_parse_double(xms, line + 4, 0, 1e12)) {
				return SPIRT_EDATA;
			}
		}
		p += k + 1;
	}
	return 0;
}
