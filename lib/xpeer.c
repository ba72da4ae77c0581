/* xpeer.c - the members of an exchange: the peers file, each one's fate */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beat.h"
#include "keys.h"
#include "tensor.h"
#include "xpeer.h"

int
spirt_xpeers_parse(struct spirt_xpeer **peers, size_t *n, const char *self,
    const char *text, size_t len, const struct spirt_xnet *net,
    size_t *line)
{
	size_t ln = 0, i = 0;

	while (i < len) {
		char buf[1024], id[64], url[600], extra[8], more[2];
		size_t e = i, k;
		struct spirt_xpeer *p;
		int f;

		while (e < len && text[e] != '\n')
			e++;
		ln++;
		k = e - i < sizeof buf - 1 ? e - i : sizeof buf - 1;
		memcpy(buf, text + i, k);
		buf[k] = '\0';
		/* a longer line is refused whole, not read cut short (what
		 * follows its first 1023 bytes was once dropped unseen) */
		f = e - i > sizeof buf - 1;
		if (line)
			*line = ln;
		if (f) {
			/* the first word may start past byte 1023 */
			size_t w = i;

			while (w < e && isspace((unsigned char)text[w]))
				w++;
			if (w < e && text[w] != '#')
				return SPIRT_EDATA;
		}
		i = e + 1;
		f = sscanf(buf, "%63s %599s %7s %1s", id, url, extra, more);
		if (f <= 0 || id[0] == '#')
			continue;
		/* (a third word: "spare", a slot that joins later) */
		if ((f != 2 && (f != 3 || strcmp(extra, "spare") != 0)) ||
		    !spirt_id_valid(id) || strlen(url) >= sizeof p->url)
			return SPIRT_EDATA;
		if (self && strcmp(id, self) == 0)
			continue;
		for (size_t j = 0; j < *n; j++)
			if (strcmp((*peers)[j].id, id) == 0)
				return SPIRT_EDATA;
		if (*n == SPIRT_DIGEST_MAXPEERS)
			return SPIRT_EDATA;
		if ((p = realloc(*peers, (*n + 1) * sizeof *p)) == NULL)
			return ENOMEM;
		*peers = p;
		p = &(*peers)[(*n)++];
		memset(p, 0, offsetof(struct spirt_xpeer, d));
		p->has_digest = 0;
		p->proof = NULL;
		memcpy(p->id, id, strlen(id) + 1);      /* valid: fits */
		memcpy(p->url, url, strlen(url) + 1);
		p->net = net;
		p->spare = f == 3;
	}
	return 0;
}

void
spirt_xpeers_free(struct spirt_xpeer *peers, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(peers[i].agg);
		free(peers[i].proof);
		if (peers[i].h)
			peers[i].net->close(peers[i].h);
	}
	free(peers);
}

void
spirt_xpeer_reset(struct spirt_xpeer *p)
{
	free(p->agg);
	free(p->proof);
	p->agg = NULL;
	p->proof = NULL;
	p->agglen = 0;
	p->state = SPIRT_XP_NONE;
	p->rc = 0;
	p->why[0] = '\0';
	p->ms = 0;
	p->has_digest = 0;
	p->nowait = 0;          /* its server may wait now */
	memset(p->hash, 0, sizeof p->hash);
	memset(&p->d, 0, sizeof p->d);
}

void
spirt_xpeer_out(struct spirt_xpeer *p, int state, int rc, const char *fmt, ...)
{
	va_list ap;

	p->state = state;
	p->rc = rc;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof p->why, fmt, ap);
	va_end(ap);
}

int
spirt_xpeer_health(struct spirt_store *s, const char *id,
    const unsigned char *host, double *age, unsigned *suspect,
    uint64_t *step)
{
	struct spirt_health h;

	*age = -1;
	if (step)
		*step = SPIRT_NOSTEP;
	if (spirt_health_get(s, id, &h) != 0)
		return SPIRT_H_UNKNOWN;
	if (suspect)
		*suspect = h.suspect_ms;
	if (step)
		*step = h.b.step;
	return spirt_health_state(&h, host, spirt_mono_ns(), NULL, age);
}

const char *
spirt_xstate_name(int state)
{
	switch (state) {
	case SPIRT_XP_USED: return "used";
	case SPIRT_XP_LATE: return "late";
	case SPIRT_XP_REFUSED: return "refused";
	case SPIRT_XP_EQUIV: return "equivocated";
	case SPIRT_XP_MODEL: return "model differs";
	default: return "none";
	}
}
