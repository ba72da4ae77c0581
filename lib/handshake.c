/* handshake.c - two signed messages make a session (ISC licence) */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "handshake.h"
#include "le.h"

/* docs/protocol.md, "Handshake" */
#define HS_MAGIC "SPHS"
#define FMT_VERSION 1
#define HS_INIT 1
#define HS_RESP 2
#define HS_TOKEN 240                    /* offset of a handshake's token */

#define KDF_I2R "spirt-peer v1 i2r"
#define KDF_R2I "spirt-peer v1 r2i"

/* ---- handshake ---- */

/*
 * Handshake message (304 bytes + token): magic "SPHS", version, type,
 * token length, timestamp, run[32], sender[32], receiver[32], identity
 * pk[32], ephemeral pk[32], nonce[32], echo[32], token, then the sender's
 * Ed25519 signature of everything before it.
 */
struct hsmsg {
	uint64_t ts;
	const unsigned char *run, *sender, *receiver, *idpk, *epk, *echo;
	const unsigned char *tok, *sig;
	size_t len;
};

struct spirt_hs {
	unsigned char esk[crypto_kx_SECRETKEYBYTES];
	unsigned char epk[crypto_kx_PUBLICKEYBYTES];
	unsigned char msg[SPIRT_HS_MAX];
	size_t len;
	char self[SPIRT_ID_MAX + 1];
	char peer[SPIRT_ID_MAX + 1];
	int done;
};

static int
hs_parse(struct hsmsg *h, const unsigned char *m, size_t len, int type)
{
	size_t toklen;

	if (len < SPIRT_HS_BYTES)
		return SPIRT_ETRUNC;
	if (memcmp(m, HS_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (m[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (m[5] != type)
		return SPIRT_EDATA;
	toklen = spirt_le_get16(m + 6);
	if (toklen != 0 && toklen != SPIRT_TOKEN_BYTES)
		return SPIRT_EDATA;
	if (len != SPIRT_HS_BYTES + toklen)
		return len < SPIRT_HS_BYTES + toklen ? SPIRT_ETRUNC :
		    SPIRT_EDATA;
	h->ts = spirt_le_get64(m + 8);
	h->run = m + 16;
	h->sender = m + 48;
	h->receiver = m + 80;
	h->idpk = m + 112;
	h->epk = m + 144;
	h->echo = m + 208;
	h->tok = toklen ? m + HS_TOKEN : NULL;
	h->sig = m + HS_TOKEN + toklen;
	h->len = len;
	return 0;
}

/* Build and sign a handshake message into m; its length. */
static size_t
hs_build(unsigned char *m, int type, uint64_t ts, const char *run,
    const struct spirt_self *self, const char *peer,
    const unsigned char *epk, const unsigned char *echo)
{
	size_t toklen = self->token ? SPIRT_TOKEN_BYTES : 0;

	memcpy(m, HS_MAGIC, 4);
	m[4] = FMT_VERSION;
	m[5] = (unsigned char)type;
	spirt_le_put16(m + 6, (uint16_t)toklen);
	spirt_le_put64(m + 8, ts);
	spirt_id_pack(m + 16, run);
	spirt_id_pack(m + 48, self->id);
	spirt_id_pack(m + 80, peer);
	spirt_key_public(m + 112, self->key);
	memcpy(m + 144, epk, crypto_kx_PUBLICKEYBYTES);
	randombytes_buf(m + 176, 32);
	if (echo != NULL)
		memcpy(m + 208, echo, 32);
	else
		memset(m + 208, 0, 32);
	if (toklen)
		memcpy(m + HS_TOKEN, self->token, toklen);
	spirt_key_sign(m + HS_TOKEN + toklen, self->key, m, HS_TOKEN + toklen);
	return SPIRT_HS_BYTES + toklen;
}

/* Is self usable in this run: a valid id, a token for its key and id? */
static int
self_check(const struct spirt_self *self, const struct spirt_trust *t)
{
	unsigned char pk[SPIRT_PK_BYTES];
	struct spirt_member m;

	if (self->key == NULL || !spirt_id_valid(self->id))
		return SPIRT_EINVAL;
	spirt_key_public(pk, self->key);
	if (self->token != NULL &&
	    (spirt_token_decode(&m, self->token) != 0 ||
	    memcmp(m.pk, pk, SPIRT_PK_BYTES) != 0 ||
	    strcmp(m.id, self->id) != 0 ||
	    strcmp(m.run, spirt_trust_run(t)) != 0))
		return SPIRT_EINVAL;
	return 0;
}

/* Checks common to both messages, once the signature is good. */
static int
hs_check(struct spirt_member *m, const struct hsmsg *h,
    const struct spirt_trust *t, const char *self, uint64_t now, int roles)
{
	char sender[SPIRT_ID_MAX + 1];
	uint64_t window;
	int rc;

	if (!spirt_id_is(h->receiver, self))
		return SPIRT_EADDR;
	if (!spirt_id_is(h->run, spirt_trust_run(t)))
		return SPIRT_ERUN;
	if (spirt_id_unpack(sender, h->sender) != 0)
		return SPIRT_EDATA;
	if ((rc = spirt_trust_member(m, t, h->idpk, sender, h->tok, now,
	    roles)) != 0)
		return rc;
	window = spirt_trust_window(t);
	if (h->ts > now ? h->ts - now > window : now - h->ts > window)
		return SPIRT_ESTALE;
	return 0;
}

static void
hash32(unsigned char out[32], const unsigned char *a, size_t na,
    const unsigned char *b, size_t nb)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, a, na);
	if (b != NULL)
		crypto_generichash_update(&st, b, nb);
	crypto_generichash_final(&st, out, 32);
	sodium_memzero(&st, sizeof st);
}

/* K = BLAKE2b-256(key = th, label || k) */
static void
kdf(unsigned char out[32], const unsigned char th[32], const char *label,
    const unsigned char k[32])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, th, 32, 32);
	crypto_generichash_update(&st, (const unsigned char *)label,
	    strlen(label));
	crypto_generichash_update(&st, k, 32);
	crypto_generichash_final(&st, out, 32);
	sodium_memzero(&st, sizeof st);
}

/*
 * A session from the crypto_kx keys (tx_i: the initiator's send key, the
 * responder's receive key) and the transcript init || resp.
 */
static int
session_make(struct spirt_session **out, int initiator,
    const unsigned char tx_i[32], const unsigned char rx_i[32],
    const unsigned char *init, size_t ni, const unsigned char *resp,
    size_t nr, const char *run, const char *self, const char *peer,
    const struct spirt_member *m)
{
	unsigned char th[32], i2r[32], r2i[32];
	int rc;

	hash32(th, init, ni, resp, nr);
	kdf(i2r, th, KDF_I2R, tx_i);
	kdf(r2i, th, KDF_R2I, rx_i);
	rc = spirt_session_new(out, initiator, initiator ? i2r : r2i,
	    initiator ? r2i : i2r, run, self, peer, m);
	sodium_memzero(th, sizeof th);
	sodium_memzero(i2r, sizeof i2r);
	sodium_memzero(r2i, sizeof r2i);
	return rc;
}

int
spirt_hs_init(struct spirt_hs **out, unsigned char *msg, size_t cap,
    size_t *len, const struct spirt_self *self, const struct spirt_trust *t,
    const char *peer, uint64_t now)
{
	struct spirt_hs *hs;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return SPIRT_EBUG;
	if ((rc = self_check(self, t)) != 0)
		return rc;
	if (!spirt_id_valid(peer) || cap < SPIRT_HS_MAX)
		return SPIRT_EINVAL;
	if ((hs = sodium_malloc(sizeof *hs)) == NULL)
		return ENOMEM;
	memset(hs, 0, sizeof *hs);
	crypto_kx_keypair(hs->epk, hs->esk);
	hs->len = hs_build(hs->msg, HS_INIT, now, spirt_trust_run(t), self,
	    peer, hs->epk, NULL);
	memcpy(hs->self, self->id, strlen(self->id) + 1);
	memcpy(hs->peer, peer, strlen(peer) + 1);
	memcpy(msg, hs->msg, hs->len);
	*len = hs->len;
	*out = hs;
	return 0;
}

void
spirt_hs_free(struct spirt_hs *hs)
{
	if (hs != NULL)
		sodium_free(hs);
}

int
spirt_hs_respond(struct spirt_session **out, unsigned char *msg, size_t cap,
    size_t *len, const struct spirt_self *self, struct spirt_trust *t,
    const unsigned char *in, size_t inlen, uint64_t now, int roles)
{
	unsigned char esk[crypto_kx_SECRETKEYBYTES];
	unsigned char epk[crypto_kx_PUBLICKEYBYTES];
	unsigned char rx[32], tx[32], echo[32];
	struct spirt_member m;
	struct hsmsg h;
	size_t n;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return SPIRT_EBUG;
	if ((rc = self_check(self, t)) != 0)
		return rc;
	if (cap < SPIRT_HS_MAX)
		return SPIRT_EINVAL;
	if ((rc = hs_parse(&h, in, inlen, HS_INIT)) != 0)
		return rc;
	if (crypto_sign_verify_detached(h.sig, in, inlen - 64, h.idpk) != 0)
		return SPIRT_EMAC;
	if (!sodium_is_zero(h.echo, 32))
		return SPIRT_EDATA;
	if ((rc = hs_check(&m, &h, t, self->id, now, roles)) != 0)
		return rc;
	hash32(echo, in, inlen, NULL, 0);
	if (!spirt_trust_fresh(t, h.idpk, h.ts, echo))
		return SPIRT_EREPLAY;

	crypto_kx_keypair(epk, esk);
	n = hs_build(msg, HS_RESP, now, spirt_trust_run(t), self, m.id, epk,
	    echo);
	/* responder = crypto_kx server: its rx is the initiator's tx */
	if (crypto_kx_server_session_keys(rx, tx, epk, esk, h.epk) != 0)
		rc = SPIRT_EDATA;       /* a weak point, signed by a member */
	else
		rc = session_make(out, 0, rx, tx, in, inlen, msg, n,
		    spirt_trust_run(t), self->id, m.id, &m);
	if (rc == 0 && (rc = spirt_trust_record(t, h.idpk, h.ts, echo)) != 0) {
		spirt_session_free(*out);
		*out = NULL;
	}
	if (rc == 0)
		*len = n;
	sodium_memzero(esk, sizeof esk);
	sodium_memzero(rx, sizeof rx);
	sodium_memzero(tx, sizeof tx);
	return rc;
}

int
spirt_hs_finish(struct spirt_session **out, struct spirt_hs *hs,
    const struct spirt_trust *t, const unsigned char *in, size_t inlen,
    uint64_t now, int roles)
{
	unsigned char rx[32], tx[32], echo[32];
	struct spirt_member m;
	struct hsmsg h;
	int rc;

	*out = NULL;
	if (hs->done)
		return SPIRT_EREPLAY;
	if ((rc = hs_parse(&h, in, inlen, HS_RESP)) != 0)
		return rc;
	if (crypto_sign_verify_detached(h.sig, in, inlen - 64, h.idpk) != 0)
		return SPIRT_EMAC;
	/* a genuine answer to another handshake is a replay */
	hash32(echo, hs->msg, hs->len, NULL, 0);
	if (sodium_memcmp(echo, h.echo, 32) != 0)
		return SPIRT_EREPLAY;
	if (!spirt_id_is(h.sender, hs->peer))
		return SPIRT_EADDR;
	if ((rc = hs_check(&m, &h, t, hs->self, now, roles)) != 0)
		return rc;
	if (crypto_kx_client_session_keys(rx, tx, hs->epk, hs->esk, h.epk) !=
	    0)
		rc = SPIRT_EDATA;
	else
		rc = session_make(out, 1, tx, rx, hs->msg, hs->len, in, inlen,
		    spirt_trust_run(t), hs->self, hs->peer, &m);
	if (rc == 0) {
		hs->done = 1;
		sodium_memzero(hs->esk, sizeof hs->esk);
	}
	sodium_memzero(rx, sizeof rx);
	sodium_memzero(tx, sizeof tx);
	return rc;
}
