/* trust.c - whom a peer trusts: group key, allowlist, handshakes (ISC) */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kv.h"
#include "trust.h"

#define SEEN_MAX 65536                  /* identities with a timestamp */
#define SEEN_RING 64                    /* handshakes remembered each */

/* ---- trust: group key, allowlist, newest timestamps ---- */

struct allowed {
	unsigned char pk[SPIRT_PK_BYTES];
	char id[SPIRT_ID_MAX + 1];
	int role;
};

/*
 * What a responder remembers of an identity's handshakes: the newest
 * timestamp accepted, and the last SEEN_RING first messages accepted
 * (timestamp and the first 16 bytes of their BLAKE2b-256), so that an
 * older first message is accepted once if it was never seen (the
 * instances of one function start together and their first messages
 * arrive in any order) while a replayed one is refused.  floor is the
 * newest timestamp that left the ring: at or below it nobody can tell,
 * and the message is refused.
 */
struct seen {
	unsigned char pk[SPIRT_PK_BYTES];
	uint64_t ts, floor;
	unsigned n, next;
	struct {
		uint64_t ts;
		unsigned char h[16];
	} ring[SEEN_RING];
};

/* tokens whose group signature held, kept byte for byte: each member's
 * digest carries its token every step, and an Ed25519 check is 30-40 us
 * (the rest of a token's checks, expiry first, are made every time) */
#define TOKOK 16

struct spirt_trust {
	char run[SPIRT_ID_MAX + 1];
	int has_group;
	unsigned char group_pk[SPIRT_PK_BYTES];
	uint64_t window;
	struct allowed *allow;
	size_t nallow, capallow;
	struct seen *seen;
	size_t nseen, capseen;
	/* the only state a lookup changes, under its own lock: lookups run
	 * in the exchange's pulling threads at once (handshakes) */
	pthread_mutex_t toklock;
	unsigned char tokok[TOKOK][SPIRT_TOKEN_BYTES];
	size_t ntokok, nexttok;
};

int
spirt_trust_new(struct spirt_trust **t, const char *run,
    const unsigned char *group_pk, uint64_t window)
{
	struct spirt_trust *p;

	*t = NULL;
	if (!spirt_id_valid(run))
		return SPIRT_EINVAL;
	if ((p = calloc(1, sizeof *p)) == NULL)
		return ENOMEM;
	if (pthread_mutex_init(&p->toklock, NULL) != 0) {
		free(p);
		return ENOMEM;
	}
	memcpy(p->run, run, strlen(run) + 1);
	if (group_pk != NULL) {
		p->has_group = 1;
		memcpy(p->group_pk, group_pk, SPIRT_PK_BYTES);
	}
	p->window = window;
	*t = p;
	return 0;
}

void
spirt_trust_free(struct spirt_trust *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->toklock);
	free(t->allow);
	free(t->seen);
	free(t);
}

static const struct allowed *
allow_find(const struct spirt_trust *t, const unsigned char *pk)
{
	for (size_t i = 0; i < t->nallow; i++)
		if (memcmp(t->allow[i].pk, pk, SPIRT_PK_BYTES) == 0)
			return &t->allow[i];
	return NULL;
}

int
spirt_trust_allow(struct spirt_trust *t,
    const unsigned char pk[SPIRT_PK_BYTES], const char *id, int role)
{
	struct allowed *a;

	if (!spirt_id_valid(id) || !spirt_role_valid(role) || allow_find(t, pk))
		return SPIRT_EINVAL;
	for (size_t i = 0; i < t->nallow; i++)
		if (strcmp(t->allow[i].id, id) == 0)
			return SPIRT_EINVAL;
	if (t->nallow == t->capallow) {
		size_t cap = t->capallow ? 2 * t->capallow : 16;
		if ((a = realloc(t->allow, cap * sizeof *a)) == NULL)
			return ENOMEM;
		t->allow = a;
		t->capallow = cap;
	}
	a = &t->allow[t->nallow++];
	memcpy(a->pk, pk, SPIRT_PK_BYTES);
	memcpy(a->id, id, strlen(id) + 1);
	a->role = role;
	return 0;
}

/* "MEMBER=<64 hex> <role> <id>" */
static int
allow_line(struct spirt_trust *t, const char *v, size_t vn)
{
	unsigned char pk[SPIRT_PK_BYTES];
	char role[16], id[SPIRT_ID_MAX + 1];
	const char *sp1, *sp2, *end = v + vn;
	size_t rn, in;
	int r;

	if (vn < 2 * SPIRT_PK_BYTES + 1 || v[2 * SPIRT_PK_BYTES] != ' ' ||
	    spirt_text_hex(pk, sizeof pk, v, 2 * SPIRT_PK_BYTES))
		return SPIRT_EKEYFILE;
	sp1 = v + 2 * SPIRT_PK_BYTES;
	if ((sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))) == NULL)
		return SPIRT_EKEYFILE;
	rn = (size_t)(sp2 - sp1 - 1);
	in = (size_t)(end - sp2 - 1);
	if (rn >= sizeof role || in >= sizeof id)
		return SPIRT_EKEYFILE;
	memcpy(role, sp1 + 1, rn);
	role[rn] = '\0';
	memcpy(id, sp2 + 1, in);
	id[in] = '\0';
	if ((r = spirt_role_parse(role)) == 0 || !spirt_id_valid(id))
		return SPIRT_EKEYFILE;
	return spirt_trust_allow(t, pk, id, r) == 0 ? 0 : SPIRT_EKEYFILE;
}

int
spirt_trust_allow_parse(struct spirt_trust *t, const char *text, size_t len,
    size_t *line)
{
	static const char *const multi[] = { "MEMBER", NULL };
	struct spirt_kvr r;
	int rc;

	if ((rc = spirt_kvr_open(&r, text, len, "spirt-allowlist", multi,
	    SPIRT_KV_NOTES)) != 0) {
		rc = rc == SPIRT_EVERSION ? rc : SPIRT_EKEYFILE;
		goto out;
	}
	while ((rc = spirt_kvr_next(&r)) == 0)
		if (!spirt_kvr_is(&r, "MEMBER") ||
		    (rc = allow_line(t, r.val, r.vlen)) != 0)
			break;
	rc = rc == SPIRT_EOF ? 0 : SPIRT_EKEYFILE;
out:
	if (line != NULL)
		*line = rc ? r.line : 0;
	return rc;
}

int
spirt_trust_member(struct spirt_member *m, const struct spirt_trust *t,
    const unsigned char pk[SPIRT_PK_BYTES], const char *id,
    const unsigned char *tok, uint64_t now, int roles)
{
	struct spirt_member mm;
	const struct allowed *a;
	int rc;

	if (tok != NULL && t->has_group) {
		/* (allocated writable: spirt_trust_new) */
		struct spirt_trust *w = (struct spirt_trust *)t;
		int known = 0;

		pthread_mutex_lock(&w->toklock);
		for (size_t i = 0; i < w->ntokok && !known; i++)
			known = memcmp(w->tokok[i], tok, SPIRT_TOKEN_BYTES) == 0;
		pthread_mutex_unlock(&w->toklock);
		if ((rc = spirt_token_check(&mm, tok, SPIRT_TOKEN_BYTES, t->group_pk,
		    t->run, now, roles, !known)) != 0)
			return rc;
		if (!known) {
			pthread_mutex_lock(&w->toklock);
			memcpy(w->tokok[w->nexttok], tok, SPIRT_TOKEN_BYTES);
			w->nexttok = (w->nexttok + 1) % TOKOK;
			if (w->ntokok < TOKOK)
				w->ntokok++;
			pthread_mutex_unlock(&w->toklock);
		}
		/* a token proves membership only for its own key and id */
		if (memcmp(mm.pk, pk, SPIRT_PK_BYTES) != 0 ||
		    strcmp(mm.id, id) != 0)
			return SPIRT_EUNKNOWNKEY;
	} else {
		if ((a = allow_find(t, pk)) == NULL || strcmp(a->id, id) != 0)
			return SPIRT_EUNKNOWNKEY;
		if (!(a->role & roles))
			return SPIRT_EROLE;
		memset(&mm, 0, sizeof mm);
		memcpy(mm.id, a->id, sizeof mm.id);
		memcpy(mm.run, t->run, sizeof mm.run);
		memcpy(mm.pk, pk, SPIRT_PK_BYTES);
		mm.role = a->role;
		mm.issued = 0;
		mm.expires = UINT64_MAX;
	}
	if (m != NULL)
		*m = mm;
	return 0;
}

/* What was seen of pk's handshakes (NULL: none yet). */
static struct seen *
seen_find(const struct spirt_trust *t, const unsigned char *pk)
{
	for (size_t i = 0; i < t->nseen; i++)
		if (memcmp(t->seen[i].pk, pk, SPIRT_PK_BYTES) == 0)
			return &t->seen[i];
	return NULL;
}

/* seen_fresh: whether a first message of timestamp ts and hash h from
 * the identity of s (NULL: never seen) may be accepted */
static int
seen_fresh(const struct seen *s, uint64_t ts, const unsigned char h[32])
{
	if (s == NULL || ts > s->ts)
		return 1;
	if (ts <= s->floor)
		return 0;       /* too old to tell */
	for (unsigned i = 0; i < s->n; i++)
		if (s->ring[i].ts == ts && memcmp(s->ring[i].h, h, 16) == 0)
			return 0;
	return 1;
}

int
spirt_trust_record(struct spirt_trust *t, const unsigned char *pk, uint64_t ts,
    const unsigned char h[32])
{
	struct seen *s = seen_find(t, pk);

	if (s == NULL) {
		if (t->nseen == SEEN_MAX)
			return ENOMEM;
		if (t->nseen == t->capseen) {
			size_t cap = t->capseen ? 2 * t->capseen : 16;
			if ((s = realloc(t->seen, cap * sizeof *s)) == NULL)
				return ENOMEM;
			t->seen = s;
			t->capseen = cap;
		}
		s = &t->seen[t->nseen++];
		memset(s, 0, sizeof *s);
		memcpy(s->pk, pk, SPIRT_PK_BYTES);
	}
	if (s->n == SEEN_RING) {
		if (s->ring[s->next].ts > s->floor)
			s->floor = s->ring[s->next].ts;
	} else {
		s->n++;
	}
	s->ring[s->next].ts = ts;
	memcpy(s->ring[s->next].h, h, 16);
	s->next = (s->next + 1) % SEEN_RING;
	if (ts > s->ts)
		s->ts = ts;
	return 0;
}

int
spirt_trust_fresh(const struct spirt_trust *t, const unsigned char *pk,
    uint64_t ts, const unsigned char h[32])
{
	return seen_fresh(seen_find(t, pk), ts, h);
}

const char *
spirt_trust_run(const struct spirt_trust *t)
{
	return t->run;
}

uint64_t
spirt_trust_window(const struct spirt_trust *t)
{
	return t->window;
}
