/* digest.c - signed per-step digests of peers (ISC licence) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "le.h"

#define DG_MAGIC "SPDG"
#define DG_VERSION 3          /* 1: BLAKE2b-256, 2: SHA-256 of the whole value */

size_t
spirt_digest_size(size_t n, int has_token)
{
	return SPIRT_DIGEST_HEAD + (has_token ? SPIRT_TOKEN_BYTES : 0) +
	    n * SPIRT_DIGEST_ENTRY + SPIRT_SIG_BYTES;
}

void
spirt_wire_id_put(unsigned char *p, const char *id)
{
	memset(p, 0, SPIRT_ID_MAX);
	memcpy(p, id, strlen(id));
}

int
spirt_wire_id_get(char *id, const unsigned char *p)
{
	size_t n = 0;

	while (n < SPIRT_ID_MAX && p[n])
		n++;
	for (size_t i = n; i < SPIRT_ID_MAX; i++)
		if (p[i])
			return SPIRT_EDATA;
	memcpy(id, p, n);
	id[n] = '\0';
	return spirt_id_valid(id) ? 0 : SPIRT_EDATA;
}

static int
bygot(const void *a, const void *b)
{
	return strcmp(((const struct spirt_digest_entry *)a)->id,
	    ((const struct spirt_digest_entry *)b)->id);
}

int
spirt_digest_sign(unsigned char *out, size_t cap, size_t *len,
    struct spirt_digest *d, const struct spirt_key *k)
{
	size_t need, off;

	*len = 0;
	if (!spirt_id_valid(d->run) || !spirt_id_valid(d->id) ||
	    d->n > SPIRT_DIGEST_MAXPEERS)
		return SPIRT_EINVAL;
	qsort(d->got, d->n, sizeof d->got[0], bygot);
	for (size_t i = 0; i < d->n; i++)
		if (!spirt_id_valid(d->got[i].id) ||
		    strcmp(d->got[i].id, d->id) == 0 ||
		    (i && strcmp(d->got[i - 1].id, d->got[i].id) == 0))
			return SPIRT_EINVAL;
	if (cap < (need = spirt_digest_size(d->n, d->has_token)))
		return SPIRT_EINVAL;
	spirt_key_public(d->pk, k);
	memset(out, 0, SPIRT_DIGEST_HEAD);
	memcpy(out, DG_MAGIC, 4);
	out[4] = DG_VERSION;
	spirt_le_put16(out + 6, d->has_token ? SPIRT_TOKEN_BYTES : 0);
	spirt_le_put64(out + 8, d->step);
	spirt_le_put32(out + 16, (uint32_t)d->n);
	spirt_wire_id_put(out + 24, d->run);
	spirt_wire_id_put(out + 56, d->id);
	memcpy(out + 88, d->pk, SPIRT_PK_BYTES);
	memcpy(out + 120, d->agg, SPIRT_HASH_BYTES);
	memcpy(out + 152, d->model, SPIRT_HASH_BYTES);
	off = SPIRT_DIGEST_HEAD + spirt_sigrec_put_tail(out + SPIRT_DIGEST_HEAD,
	    d->has_token ? d->token : NULL, d->got, d->n);
	spirt_key_sign(d->sig, k, out, off);
	memcpy(out + off, d->sig, SPIRT_SIG_BYTES);
	*len = need;
	return 0;
}

int
spirt_digest_open(struct spirt_digest *d, const unsigned char *b, size_t len)
{
	size_t tl, n, need;
	int rc;

	if (len < SPIRT_DIGEST_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(b, DG_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (b[4] != DG_VERSION)
		return SPIRT_EVERSION;
	tl = spirt_le_get16(b + 6);
	n = spirt_le_get32(b + 16);
	if (b[5] || (tl != 0 && tl != SPIRT_TOKEN_BYTES) ||
	    spirt_le_get32(b + 20) || n > SPIRT_DIGEST_MAXPEERS)
		return SPIRT_EDATA;
	need = spirt_digest_size(n, tl != 0);
	if (len < need)
		return SPIRT_ETRUNC;
	if (len > need)
		return SPIRT_EDATA;
	/* the signature first: from here on, every field is the signer's */
	if ((rc = spirt_sig_verify(b + need - SPIRT_SIG_BYTES, b + 88, b,
	    need - SPIRT_SIG_BYTES)))
		return rc;
	memset(d, 0, offsetof(struct spirt_digest, got));
	d->step = spirt_le_get64(b + 8);
	if ((rc = spirt_wire_id_get(d->run, b + 24)) ||
	    (rc = spirt_wire_id_get(d->id, b + 56)))
		return rc;
	memcpy(d->pk, b + 88, SPIRT_PK_BYTES);
	memcpy(d->agg, b + 120, SPIRT_HASH_BYTES);
	memcpy(d->model, b + 152, SPIRT_HASH_BYTES);
	if ((rc = spirt_sigrec_get_tail(b + SPIRT_DIGEST_HEAD,
	    (d->has_token = tl != 0), d->token, d->got, n, d->id, &d->n)))
		return rc;
	memcpy(d->sig, b + need - SPIRT_SIG_BYTES, SPIRT_SIG_BYTES);
	return 0;
}

int
spirt_digest_verify(struct spirt_digest *d, const unsigned char *buf,
    size_t len, const char *run, const char *peer, uint64_t step,
    const struct spirt_trust *t, uint64_t now)
{
	int rc;

	if ((rc = spirt_digest_open(d, buf, len)))
		return rc;
	return spirt_sigrec_check(d->run, d->id, d->step, d->pk,
	    d->has_token ? d->token : NULL, run, peer, step, t, now);
}

/* ---- what the signed records share (digests, lib/xpart.h's) ---- */

size_t
spirt_sigrec_put_tail(unsigned char *out, const unsigned char *token,
    const struct spirt_digest_entry *e, size_t n)
{
	size_t off = 0;

	if (token) {
		memcpy(out, token, SPIRT_TOKEN_BYTES);
		off += SPIRT_TOKEN_BYTES;
	}
	for (size_t i = 0; i < n; i++, off += SPIRT_DIGEST_ENTRY) {
		spirt_wire_id_put(out + off, e[i].id);
		memcpy(out + off + 32, e[i].hash, SPIRT_HASH_BYTES);
	}
	return off;
}

int
spirt_sigrec_get_tail(const unsigned char *b, int has_token,
    unsigned char *token, struct spirt_digest_entry *e, size_t n,
    const char *not_id, size_t *got)
{
	size_t off = 0;
	int rc;

	*got = 0;
	if (has_token) {
		memcpy(token, b, SPIRT_TOKEN_BYTES);
		off += SPIRT_TOKEN_BYTES;
	}
	for (size_t i = 0; i < n; i++, off += SPIRT_DIGEST_ENTRY) {
		if ((rc = spirt_wire_id_get(e[i].id, b + off)))
			return rc;
		if ((not_id && strcmp(e[i].id, not_id) == 0) ||
		    (i && strcmp(e[i - 1].id, e[i].id) >= 0))
			return SPIRT_EDATA;
		memcpy(e[i].hash, b + off + 32, SPIRT_HASH_BYTES);
		*got = i + 1;
	}
	return 0;
}

int
spirt_sigrec_check(const char *run, const char *id, uint64_t step,
    const unsigned char *pk, const unsigned char *token,
    const char *want_run, const char *want_peer, uint64_t want_step,
    const struct spirt_trust *t, uint64_t now)
{
	if (strcmp(run, want_run) != 0)
		return SPIRT_ERUN;
	if (want_peer != NULL && strcmp(id, want_peer) != 0)
		return SPIRT_EADDR;
	if (step != want_step)
		return SPIRT_ESTEP;
	if (t == NULL)
		return 0;
	return spirt_trust_member(NULL, t, pk, id, token, now,
	    SPIRT_ROLE_PEER);
}

const unsigned char *
spirt_digest_hash_of(const struct spirt_digest *d, const char *peer)
{
	if (strcmp(peer, d->id) == 0)
		return d->agg;
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->got[i].id, peer) == 0)
			return d->got[i].hash;
	return NULL;
}

int
spirt_digest_conflict(const struct spirt_digest *a,
    const struct spirt_digest *b)
{
	if (a->step != b->step || strcmp(a->run, b->run) ||
	    strcmp(a->id, b->id) || memcmp(a->pk, b->pk, SPIRT_PK_BYTES))
		return 0;
	if (memcmp(a->agg, b->agg, SPIRT_HASH_BYTES))
		return 1;
	if (memcmp(a->model, b->model, SPIRT_HASH_BYTES))
		return 2;
	return 0;
}

void
spirt_hash_hex(char hex[2 * SPIRT_HASH_BYTES + 1],
    const unsigned char h[SPIRT_HASH_BYTES])
{
	static const char x[] = "0123456789abcdef";

	for (size_t i = 0; i < SPIRT_HASH_BYTES; i++) {
		hex[2 * i] = x[h[i] >> 4];
		hex[2 * i + 1] = x[h[i] & 15];
	}
	hex[2 * SPIRT_HASH_BYTES] = '\0';
}

size_t
spirt_digest_format(char *buf, size_t cap, const struct spirt_digest *d)
{
	char a[2 * SPIRT_HASH_BYTES + 1], m[sizeof a], k[sizeof a];
	char s[2 * SPIRT_SIG_BYTES + 1];
	size_t n = 0;
	int w;

#define ADD(...) do { \
	w = snprintf(buf ? buf + (n < cap ? n : cap) : NULL, \
	    n < cap ? cap - n : 0, __VA_ARGS__); \
	n += w > 0 ? (size_t)w : 0; \
} while (0)
	spirt_hash_hex(a, d->agg);
	spirt_hash_hex(m, d->model);
	spirt_hash_hex(k, d->pk);
	spirt_hash_hex(s, d->sig);
	spirt_hash_hex(s + 64, d->sig + 32);
	ADD("step=%llu\nrun=%s\nid=%s\nkey=%s\nagg=%s\nmodel=%s\n",
	    (unsigned long long)d->step, d->run, d->id, k, a, m);
	for (size_t i = 0; i < d->n; i++) {
		spirt_hash_hex(a, d->got[i].hash);
		ADD("got=%s %s\n", d->got[i].id, a);
	}
	ADD("sig=%s\n", s);
#undef ADD
	return n;
}
