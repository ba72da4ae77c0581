/* session.c - sealed and streamed messages, the replay window (ISC licence) */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "le.h"
#include "prim.h"
#include "session.h"

/* docs/protocol.md, "Sealed messages", "Streamed messages", "Replay
 * rules" */
#define MSG_MAGIC "SPMS"
#define FMT_VERSION 1
#define MSG_DATA 1
#define WIN_WORDS 32                    /* replay bitmap: 2048 bits */

/* ---- sessions and the replay window ---- */

/*
 * The receiver's window (WireGuard's counter_validate, RFC 6479): top is
 * one past the newest counter accepted, bits a ring of 2048 bits of which
 * the newest SPIRT_REPLAY_WINDOW positions are meaningful.
 */
struct window {
	uint64_t top;
	uint64_t bits[WIN_WORDS];
};

struct spirt_session {
	unsigned char tx[32], rx[32];   /* send and receive keys */
	uint64_t txctr;
	struct window win;
	unsigned char run[SPIRT_ID_MAX];
	unsigned char self[SPIRT_ID_MAX];
	unsigned char peer[SPIRT_ID_MAX];
	struct spirt_member member;
	int confirmed;
};

static int
win_check(const struct window *w, uint64_t c)
{
	uint64_t c1;

	if (c >= UINT64_MAX - 1)        /* never sent */
		return SPIRT_EREPLAY;
	c1 = c + 1;
	if (c1 > w->top)
		return 0;
	if (w->top - c1 >= SPIRT_REPLAY_WINDOW)
		return SPIRT_EREPLAY;   /* too old to tell: refused */
	if ((w->bits[(c1 >> 6) & (WIN_WORDS - 1)] >> (c1 & 63)) & 1)
		return SPIRT_EREPLAY;
	return 0;
}

static void
win_commit(struct window *w, uint64_t c)
{
	uint64_t c1 = c + 1;

	if (c1 > w->top) {
		uint64_t cur = w->top >> 6, n = (c1 >> 6) - cur;
		if (n > WIN_WORDS)
			n = WIN_WORDS;
		for (uint64_t i = 1; i <= n; i++)
			w->bits[(cur + i) & (WIN_WORDS - 1)] = 0;
		w->top = c1;
	}
	w->bits[(c1 >> 6) & (WIN_WORDS - 1)] |= (uint64_t)1 << (c1 & 63);
}

int
spirt_session_new(struct spirt_session **out, int initiator,
    const unsigned char tx[32], const unsigned char rx[32], const char *run,
    const char *self, const char *peer, const struct spirt_member *m)
{
	struct spirt_session *s;

	if ((s = sodium_malloc(sizeof *s)) == NULL)
		return ENOMEM;
	memset(s, 0, sizeof *s);
	memcpy(s->tx, tx, sizeof s->tx);
	memcpy(s->rx, rx, sizeof s->rx);
	spirt_id_pack(s->run, run);
	spirt_id_pack(s->self, self);
	spirt_id_pack(s->peer, peer);
	s->member = *m;
	/* the answer's signature proved the responder; the other waits */
	s->confirmed = initiator;
	*out = s;
	return 0;
}

const struct spirt_member *
spirt_session_peer(const struct spirt_session *s)
{
	return &s->member;
}

int
spirt_session_confirmed(const struct spirt_session *s)
{
	return s->confirmed;
}

void
spirt_session_free(struct spirt_session *s)
{
	if (s != NULL)
		sodium_free(s);
}

/* ---- messages ---- */

/*
 * Message (128 bytes + key + payload + 16): magic "SPMS", version, type,
 * key length, counter, step, run[32], sender[32], receiver[32], payload
 * length, the store key, then the XChaCha20-Poly1305 ciphertext and tag.
 * The associated data is everything before the ciphertext; the nonce is
 * the counter, little-endian, padded with zeros to 24 bytes.
 */

static size_t
key_len(const char *key)
{
	size_t n;

	for (n = 0; key[n]; n++)
		if (n == SPIRT_MSG_KEY_MAX || key[n] <= ' ' || key[n] > '~')
			return 0;
	return n;
}

size_t
spirt_msg_size(const char *key, size_t n)
{
	size_t k = key_len(key);

	if (k == 0 || n > crypto_aead_xchacha20poly1305_ietf_MESSAGEBYTES_MAX ||
	    n > SIZE_MAX - SPIRT_MSG_HEAD - k - SPIRT_MSG_TAG)
		return 0;
	return SPIRT_MSG_HEAD + k + n + SPIRT_MSG_TAG;
}

/* Header checks that need no key: sizes, magic, version, type, lengths. */
static int
msg_parse(const unsigned char *m, size_t len, size_t *k, size_t *n)
{
	uint64_t pn;

	if (len < SPIRT_MSG_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(m, MSG_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (m[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (m[5] != MSG_DATA)
		return SPIRT_EDATA;
	*k = spirt_le_get16(m + 6);
	if (*k == 0 || *k > SPIRT_MSG_KEY_MAX)
		return SPIRT_EDATA;
	if (len < SPIRT_MSG_HEAD + *k + SPIRT_MSG_TAG)
		return SPIRT_ETRUNC;
	pn = spirt_le_get64(m + 120);
	if (pn != len - SPIRT_MSG_HEAD - *k - SPIRT_MSG_TAG)
		return pn > len - SPIRT_MSG_HEAD - *k - SPIRT_MSG_TAG ?
		    SPIRT_ETRUNC : SPIRT_EDATA;
	*n = (size_t)pn;
	return 0;
}

int
spirt_msg_info(struct spirt_msg_info *info, const unsigned char *m,
    size_t len)
{
	size_t k, n;
	int rc;

	if ((rc = msg_parse(m, len, &k, &n)) != 0)
		return rc;
	memcpy(info->key, m + SPIRT_MSG_HEAD, k);
	info->key[k] = '\0';
	if (key_len(info->key) != k || spirt_id_unpack(info->run, m + 24) ||
	    spirt_id_unpack(info->sender, m + 56) ||
	    spirt_id_unpack(info->receiver, m + 88))
		return SPIRT_EDATA;
	info->counter = spirt_le_get64(m + 8);
	info->step = spirt_le_get64(m + 16);
	info->n = n;
	return 0;
}

static void
nonce_of(unsigned char nonce[24], uint64_t counter)
{
	memset(nonce, 0, 24);
	spirt_le_put64(nonce, counter);
}

/* the clear header of a message of type (one of the session's counters) */
static void
head_build(unsigned char *out, int type, const struct spirt_session *s,
    uint64_t step, const char *key, size_t k, uint64_t n)
{
	memcpy(out, MSG_MAGIC, 4);
	out[4] = FMT_VERSION;
	out[5] = (unsigned char)type;
	spirt_le_put16(out + 6, (uint16_t)k);
	spirt_le_put64(out + 8, s->txctr);
	spirt_le_put64(out + 16, step);
	memcpy(out + 24, s->run, SPIRT_ID_MAX);
	memcpy(out + 56, s->self, SPIRT_ID_MAX);
	memcpy(out + 88, s->peer, SPIRT_ID_MAX);
	spirt_le_put64(out + 120, n);
	memcpy(out + SPIRT_MSG_HEAD, key, k);
}

/*
 * What a receiver compares before it decrypts (docs/protocol.md, steps 2
 * and 3): run, sender and receiver, step, store key, then the counter.
 */
static int
head_check(const struct spirt_session *s, const unsigned char *m, size_t k,
    uint64_t step, const char *key)
{
	if (memcmp(m + 24, s->run, SPIRT_ID_MAX) != 0)
		return SPIRT_ERUN;
	if (memcmp(m + 56, s->peer, SPIRT_ID_MAX) != 0 ||
	    memcmp(m + 88, s->self, SPIRT_ID_MAX) != 0)
		return SPIRT_EADDR;
	if (spirt_le_get64(m + 16) != step)
		return SPIRT_ESTEP;
	if (k != strlen(key) || memcmp(m + SPIRT_MSG_HEAD, key, k) != 0)
		return SPIRT_EWRONGKEY;
	return win_check(&s->win, spirt_le_get64(m + 8));
}

int
spirt_session_seal(struct spirt_session *s, unsigned char *out, size_t cap,
    size_t *len, uint64_t step, const char *key, const void *pt, size_t n)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t k = key_len(key), need = spirt_msg_size(key, n);
	int rc;

	if (k == 0)
		return SPIRT_EINVAL;
	if (need == 0)
		return EOVERFLOW;
	if (cap < need)
		return SPIRT_EINVAL;
	if (s->txctr >= UINT64_MAX - 1)
		return EOVERFLOW;       /* a new handshake is needed */
	head_build(out, MSG_DATA, s, step, key, k, n);
	nonce_of(nonce, s->txctr);
	if ((rc = spirt_aead_seal(out + SPIRT_MSG_HEAD + k, out +
	    SPIRT_MSG_HEAD + k + n, pt, n, out, SPIRT_MSG_HEAD + k, nonce,
	    s->tx)) != 0)
		return rc;
	s->txctr++;
	*len = need;
	return 0;
}

int
spirt_session_open(struct spirt_session *s, void *pt, size_t cap, size_t *n,
    uint64_t step, const char *key, const unsigned char *m, size_t len)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t k, pn;
	uint64_t ctr;
	int rc;

	if ((rc = msg_parse(m, len, &k, &pn)) != 0)
		return rc;
	if ((rc = head_check(s, m, k, step, key)) != 0)
		return rc;
	ctr = spirt_le_get64(m + 8);
	if (cap < pn)
		return SPIRT_EINVAL;
	nonce_of(nonce, ctr);
	if ((rc = spirt_aead_open(pt, m + SPIRT_MSG_HEAD + k, pn, m +
	    SPIRT_MSG_HEAD + k + pn, m, SPIRT_MSG_HEAD + k, nonce, s->rx)) != 0)
		return rc;
	win_commit(&s->win, ctr);
	s->confirmed = 1;
	*n = pn;
	return 0;
}

/* ---- streamed messages ---- */

/*
 * Stream (type 2): the header and key as a message's, then frames of
 * SPIRT_FRAME_BYTES plaintext bytes (the last one n mod that, or a whole
 * one; a single empty frame when n = 0), each its ciphertext and tag.
 * Frame i: nonce counter (8 LE), i (8 LE), 1, seven zero bytes (a type 1
 * nonce has a zero there); associated data the header and key, i (8 LE),
 * and 1 for the last frame, else 0.
 */
#define MSG_STREAM SPIRT_MSG_STREAM

_Static_assert(MSG_DATA == SPIRT_MSG_SINGLE, "one message type");

uint64_t
spirt_stream_frames(uint64_t n)
{
	return n == 0 ? 1 : n / SPIRT_FRAME_BYTES +
	    (n % SPIRT_FRAME_BYTES != 0);
}

/* 128 + k + n + 16 F, or 0 if it overflows */
static uint64_t
stream_total(size_t k, uint64_t n)
{
	uint64_t f = spirt_stream_frames(n), fixed = SPIRT_MSG_HEAD + k;

	if (n > crypto_aead_xchacha20poly1305_ietf_MESSAGEBYTES_MAX ||
	    n > UINT64_MAX / 2 || f > (UINT64_MAX / 2 - n - fixed) /
	    SPIRT_MSG_TAG)
		return 0;
	return fixed + n + f * SPIRT_MSG_TAG;
}

size_t
spirt_stream_size(const char *key, size_t n)
{
	size_t k = key_len(key);
	uint64_t t = k ? stream_total(k, n) : 0;

	return t > SIZE_MAX ? 0 : (size_t)t;
}

size_t
spirt_stream_frame_len(const struct spirt_stream *w)
{
	uint64_t off = w->next * SPIRT_FRAME_BYTES;

	if (w->next >= w->frames)
		return 0;
	return (size_t)(w->n - off < SPIRT_FRAME_BYTES ? w->n - off :
	    SPIRT_FRAME_BYTES);
}

int
spirt_msg_peek(const unsigned char *m, size_t len, int *type, size_t *hlen,
    uint64_t *total)
{
	size_t k;
	uint64_t n;

	if (len < SPIRT_MSG_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(m, MSG_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (m[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (m[5] != MSG_DATA && m[5] != MSG_STREAM)
		return SPIRT_EDATA;
	k = spirt_le_get16(m + 6);
	n = spirt_le_get64(m + 120);
	if (k == 0 || k > SPIRT_MSG_KEY_MAX)
		return SPIRT_EDATA;
	*type = m[5];
	*hlen = SPIRT_MSG_HEAD + k;
	if (m[5] == MSG_DATA)
		*total = n > UINT64_MAX / 2 ? 0 : SPIRT_MSG_HEAD + k + n +
		    SPIRT_MSG_TAG;
	else
		*total = stream_total(k, n);
	return *total == 0 ? SPIRT_EDATA : 0;
}

static void
frame_nonce(unsigned char nonce[24], uint64_t counter, uint64_t i)
{
	memset(nonce, 0, 24);
	spirt_le_put64(nonce, counter);
	spirt_le_put64(nonce + 8, i);
	nonce[16] = 1;
}

/* the associated data of frame w->next: header, key, number, last flag */
static size_t
frame_ad(struct spirt_stream *w)
{
	spirt_le_put64(w->ad + w->hlen, w->next);
	w->ad[w->hlen + 8] = w->next + 1 == w->frames;
	return w->hlen + 9;
}

int
spirt_stream_seal_begin(struct spirt_stream *w, struct spirt_session *s,
    unsigned char *head, size_t cap, size_t *hlen, uint64_t step,
    const char *key, size_t n)
{
	size_t k = key_len(key);

	memset(w, 0, sizeof *w);
	if (k == 0 || cap < SPIRT_MSG_HEAD + k)
		return SPIRT_EINVAL;
	if (stream_total(k, n) == 0 || s->txctr >= UINT64_MAX - 1)
		return EOVERFLOW;
	head_build(head, MSG_STREAM, s, step, key, k, n);
	w->s = s;
	w->hlen = SPIRT_MSG_HEAD + k;
	memcpy(w->ad, head, w->hlen);
	w->counter = s->txctr++;
	w->n = n;
	w->frames = spirt_stream_frames(n);
	*hlen = w->hlen;
	return 0;
}

int
spirt_stream_seal_frame(struct spirt_stream *w, unsigned char *out,
    const void *pt, size_t len)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t adlen;
	int rc;

	if (w->open || w->s == NULL || w->next >= w->frames ||
	    len != spirt_stream_frame_len(w))
		return SPIRT_EINVAL;
	adlen = frame_ad(w);
	frame_nonce(nonce, w->counter, w->next);
	if ((rc = spirt_aead_seal(out, out + len, pt, len, w->ad, adlen, nonce,
	    w->s->tx)) != 0)
		return rc;
	w->next++;
	return 0;
}

int
spirt_stream_open_begin(struct spirt_stream *r, struct spirt_session *s,
    const unsigned char *head, size_t hlen, uint64_t step, const char *key,
    size_t *n)
{
	uint64_t total;
	size_t hl;
	int rc, type;

	memset(r, 0, sizeof *r);
	if ((rc = spirt_msg_peek(head, hlen, &type, &hl, &total)) != 0)
		return rc;
	if (type != MSG_STREAM)
		return SPIRT_EDATA;
	if (hlen < hl)
		return SPIRT_ETRUNC;
	if (hlen > hl)
		return SPIRT_EDATA;
	if ((rc = head_check(s, head, hl - SPIRT_MSG_HEAD, step, key)) != 0)
		return rc;
	r->n = spirt_le_get64(head + 120);
	if (r->n > SIZE_MAX)
		return SPIRT_EDATA;
	r->s = s;
	r->open = 1;
	r->hlen = hl;
	memcpy(r->ad, head, hl);
	r->counter = spirt_le_get64(head + 8);
	r->frames = spirt_stream_frames(r->n);
	*n = (size_t)r->n;
	return 0;
}

int
spirt_stream_open_frame(struct spirt_stream *r, void *pt,
    const unsigned char *in, size_t inlen)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t len = spirt_stream_frame_len(r), adlen;
	int rc;

	if (!r->open || r->s == NULL)
		return SPIRT_EINVAL;
	if (r->next >= r->frames)
		return SPIRT_EDATA;             /* more than the header said */
	if (inlen != len + SPIRT_MSG_TAG)
		return inlen < len + SPIRT_MSG_TAG ? SPIRT_ETRUNC : SPIRT_EDATA;
	adlen = frame_ad(r);
	frame_nonce(nonce, r->counter, r->next);
	if ((rc = spirt_aead_open(pt, in, len, in + len, r->ad, adlen, nonce,
	    r->s->rx)) != 0)
		return rc;
	r->next++;
	return 0;
}

int
spirt_stream_open_end(struct spirt_stream *r)
{
	int rc;

	if (!r->open || r->s == NULL)
		return SPIRT_EINVAL;
	if (r->next < r->frames)
		return SPIRT_ETRUNC;
	/* one answer per counter: checked again, as another stream of the
	 * session may have been opened since this one began */
	if ((rc = win_check(&r->s->win, r->counter)) != 0)
		return rc;
	win_commit(&r->s->win, r->counter);
	r->s->confirmed = 1;
	r->s = NULL;
	return 0;
}

int
spirt_stream_seal(struct spirt_session *s, unsigned char *out, size_t cap,
    size_t *len, uint64_t step, const char *key, const void *pt, size_t n)
{
	struct spirt_stream w;
	size_t need = spirt_stream_size(key, n), hl, fl, off = 0;
	unsigned char *p;
	int rc;

	if (key_len(key) == 0)
		return SPIRT_EINVAL;
	if (need == 0)
		return EOVERFLOW;
	if (cap < need)
		return SPIRT_EINVAL;
	if ((rc = spirt_stream_seal_begin(&w, s, out, cap, &hl, step, key, n)))
		return rc;
	p = out + hl;
	while (w.next < w.frames) {
		fl = spirt_stream_frame_len(&w);
		if ((rc = spirt_stream_seal_frame(&w, p, (const unsigned char *)
		    pt + off, fl)) != 0)
			return rc;
		p += fl + SPIRT_MSG_TAG;
		off += fl;
	}
	*len = need;
	return 0;
}

int
spirt_stream_open(struct spirt_session *s, void *pt, size_t cap, size_t *n,
    uint64_t step, const char *key, const unsigned char *m, size_t len)
{
	struct spirt_stream r;
	uint64_t total;
	size_t hl, fl, off = 0;
	const unsigned char *p;
	int rc, type;

	if ((rc = spirt_msg_peek(m, len, &type, &hl, &total)) != 0)
		return rc;
	if (type != MSG_STREAM)
		return SPIRT_EDATA;
	if (len != total)
		return len < total ? SPIRT_ETRUNC : SPIRT_EDATA;
	if ((rc = spirt_stream_open_begin(&r, s, m, hl, step, key, n)) != 0)
		return rc;
	if (cap < *n)
		return SPIRT_EINVAL;
	p = m + hl;
	while (r.next < r.frames) {
		fl = spirt_stream_frame_len(&r);
		if ((rc = spirt_stream_open_frame(&r, (unsigned char *)pt + off,
		    p, fl + SPIRT_MSG_TAG)) != 0)
			return rc;
		p += fl + SPIRT_MSG_TAG;
		off += fl;
	}
	return spirt_stream_open_end(&r);
}
