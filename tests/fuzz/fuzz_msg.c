/* fuzz_msg.c - sealed messages, streams of frames and the replay window
 * (lib/session.c, docs/protocol.md "Sealed messages", "Streamed messages",
 * "Replay rules") */
#include "fuzz_crypto.h"

/*
 * Each input starts a real session between f1 (sender) and p1, then runs
 * a program of operations, one byte each with its arguments:
 *
 *   0  seal a message (step, key, payload from the input) and keep it;
 *   1  deliver kept message i as it is;
 *   2  deliver kept message i with one byte changed;
 *   3  deliver kept message i opened for another step or key;
 *   4  deliver raw bytes from the input;
 *   5  seal and keep nothing, k times (the counter moves on);
 *   6  seal a stream (of up to 3 frames and more) and keep it; op 1
 *      delivers it whole or frame by frame;
 *   7  deliver kept stream i cut short, or with two frames swapped.
 *
 * A model of the window (docs/protocol.md: refused when seen, or more than
 * 1983 behind the newest accepted) says what each delivery of an intact
 * message or stream must do; a changed byte, a cut or reordered stream or
 * a raw message is always refused (and spends no counter), and what opens
 * gives back exactly what was sealed.
 */
#define KEEP 64

struct kept {
	unsigned char *m;
	size_t len;
	uint64_t ctr, step;
	char key[64];
	unsigned char *pt;      /* what was sealed, n bytes */
	size_t n;
	int stream;
};

#define MAXSTREAM (3 * SPIRT_FRAME_BYTES + 1000)

/* the bytes of a stream of n: the input's, over and over, or a count */
static void
fill(unsigned char *b, size_t n, const uint8_t *p, size_t pn)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pn ? p[i % pn] : (unsigned char)(i * 7);
}

/* open kept stream e: whole, or frame by frame (by) */
static int
sopen(struct spirt_session *rx, const struct kept *e, unsigned char *out,
    size_t cap, size_t *got, uint64_t step, const char *key, int by)
{
	struct spirt_stream r;
	size_t hlen, off, n;
	uint64_t total;
	int type, rc;

	if (!by)
		return spirt_stream_open(rx, out, cap, got, step, key, e->m,
		    e->len);
	/* the header may be changed (op 2): what it says is followed, as a
	 * receiver would, until the frames' tags refuse it */
	if ((rc = spirt_msg_peek(e->m, e->len, &type, &hlen, &total)))
		return rc;
	if (type != SPIRT_MSG_STREAM || total != e->len)
		return SPIRT_EDATA;     /* a receiver would read no stream */
	if ((rc = spirt_stream_open_begin(&r, rx, e->m, hlen, step, key, &n)))
		return rc;
	if (n > cap)
		return SPIRT_ETOOBIG;
	off = hlen;
	*got = 0;
	/* every frame, the empty one of an empty stream too (whose
	 * spirt_stream_frame_len() is 0, as after the last) */
	for (uint64_t f = 0, fs = spirt_stream_frames(n); f < fs; f++) {
		size_t fl = spirt_stream_frame_len(&r);

		if (off + fl + SPIRT_MSG_TAG > e->len)
			return SPIRT_ETRUNC;
		if ((rc = spirt_stream_open_frame(&r, out + *got, e->m + off,
		    fl + SPIRT_MSG_TAG)))
			return rc;
		off += fl + SPIRT_MSG_TAG;
		*got += fl;
	}
	FUZZ_ASSERT(off == e->len && spirt_stream_frame_len(&r) == 0);
	return spirt_stream_open_end(&r);
}

static const char *const keys[] = {
	"agg/7/p1", "model/m@7", "grad/7/3", "data/d/0/x", "beat/f1", "x*",
	"grad/*",
};

/* the reference window: counters accepted, newest */
struct ref {
	unsigned char *seen;    /* a bit per counter sealed */
	uint64_t newest;
	int any;
};

static int
ref_ok(const struct ref *r, uint64_t c)
{
	if (r->seen[c >> 3] >> (c & 7) & 1)
		return 0;
	return !r->any || c > r->newest || r->newest - c < SPIRT_REPLAY_WINDOW;
}

static void
ref_take(struct ref *r, uint64_t c)
{
	r->seen[c >> 3] |= (unsigned char)(1u << (c & 7));
	if (!r->any || c > r->newest)
		r->newest = c;
	r->any = 1;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	return 0;
}

#define MAXCTR 8192             /* counters one input may use */

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	struct spirt_self f1 = fuzz_self(FZ_F1), p1 = fuzz_self(FZ_P1);
	struct spirt_trust *t = fuzz_trust(), *ti;
	struct spirt_session *tx, *rx;
	struct spirt_msg_info info;
	struct spirt_hs *hs;
	struct kept kept[KEEP];
	struct ref ref = { NULL, 0, 0 };
	unsigned char m1[SPIRT_HS_MAX], m2[SPIRT_HS_MAX];
	unsigned char *buf, *pt;
	size_t n1, n2, nk = 0, got, k, plen;
	unsigned char *pt2;
	uint64_t ctr = 0;
	const uint8_t *p;
	int rc;

	fuzz_crypto_reset();
	FUZZ_ASSERT(spirt_trust_new(&ti, FUZZ_RUN, fz.pk[FZ_G],
	    FUZZ_WINDOW) == 0);
	FUZZ_ASSERT(spirt_hs_init(&hs, m1, sizeof m1, &n1, &f1, ti, "p1",
	    FUZZ_NOW) == 0);
	FUZZ_ASSERT(spirt_hs_respond(&rx, m2, sizeof m2, &n2, &p1, t, m1, n1,
	    FUZZ_NOW, SPIRT_ROLE_FUNCTION) == 0);
	FUZZ_ASSERT(spirt_hs_finish(&tx, hs, ti, m2, n2, FUZZ_NOW,
	    SPIRT_ROLE_PEER) == 0);
	FUZZ_ASSERT((ref.seen = calloc(MAXCTR / 8, 1)) != NULL);
	FUZZ_ASSERT((pt = malloc(MAXSTREAM)) != NULL);

	while (in.n && ctr < MAXCTR - 300) {
		unsigned op = fuzz_u8(&in) % 8, i, x;
		struct kept *e;
		uint64_t step;
		const char *key;

		switch (op) {
		case 0:
		case 5:
			step = fuzz_u8(&in) % 9;
			key = keys[fuzz_u8(&in) % (sizeof keys / sizeof *keys)];
			p = fuzz_take(&in, fuzz_u8(&in) * 2u, &plen);
			k = op == 5 ? fuzz_u8(&in) + 1 : 1;
			for (size_t j = 0; j < k; j++) {
				size_t cap = spirt_msg_size(key, plen);

				FUZZ_ASSERT(cap > 0 && (buf = malloc(cap)));
				FUZZ_ASSERT(spirt_session_seal(tx, buf, cap,
				    &got, step, key, p, plen) == 0 &&
				    got == cap);
				FUZZ_ASSERT(spirt_msg_info(&info, buf, got) ==
				    0);
				FUZZ_ASSERT(info.counter == ctr &&
				    info.step == step && info.n == plen &&
				    strcmp(info.key, key) == 0 &&
				    strcmp(info.sender, fuzz_ids[FZ_F1]) == 0 &&
				    strcmp(info.receiver, "p1") == 0);
				if (op == 5 || nk == KEEP) {
					free(buf);
				} else {
					e = &kept[nk++];
					e->m = buf;
					e->len = got;
					e->ctr = ctr;
					e->step = step;
					snprintf(e->key, sizeof e->key, "%s",
					    key);
					FUZZ_ASSERT((e->pt = malloc(plen +
					    1)) != NULL);
					memcpy(e->pt, p, plen);
					e->n = plen;
					e->stream = 0;
				}
				ctr++;
			}
			break;
		case 1:
		case 2:
		case 3:
			if (nk == 0)
				break;
			e = &kept[fuzz_u8(&in) % nk];
			if (op == 1) {
				int ok = ref_ok(&ref, e->ctr);

				rc = e->stream ? sopen(rx, e, pt, MAXSTREAM,
				    &got, e->step, e->key, fuzz_u8(&in) & 1) :
				    spirt_session_open(rx, pt, MAXSTREAM, &got,
				    e->step, e->key, e->m, e->len);
				if (ok) {
					FUZZ_ASSERT(rc == 0 && got == e->n &&
					    memcmp(pt, e->pt, e->n) == 0);
					FUZZ_ASSERT(
					    spirt_session_confirmed(rx));
					ref_take(&ref, e->ctr);
				} else {
					FUZZ_ASSERT(rc == SPIRT_EREPLAY);
				}
			} else if (op == 2) {
				i = fuzz_u16(&in) % e->len;
				x = fuzz_u8(&in) | 1;
				e->m[i] ^= (unsigned char)x;
				rc = e->stream ? sopen(rx, e, pt, MAXSTREAM,
				    &got, e->step, e->key, x & 2) :
				    spirt_session_open(rx, pt, MAXSTREAM, &got,
				    e->step, e->key, e->m, e->len);
				e->m[i] ^= (unsigned char)x;
				FUZZ_ASSERT(rc != 0);
			} else {
				x = fuzz_u8(&in);
				step = x & 1 ? e->step + 1 : e->step;
				key = x & 2 ? "agg/7/p2" : e->key;
				if (step == e->step && key == e->key)
					key = "gagg/7";
				rc = e->stream ? sopen(rx, e, pt, MAXSTREAM,
				    &got, step, key, x & 4) :
				    spirt_session_open(rx, pt, MAXSTREAM, &got,
				    step, key, e->m, e->len);
				FUZZ_ASSERT(rc == (step != e->step ?
				    SPIRT_ESTEP : SPIRT_EWRONGKEY));
			}
			break;
		case 6:
			step = fuzz_u8(&in) % 9;
			key = keys[fuzz_u8(&in) % (sizeof keys / sizeof *keys)];
			k = (size_t)fuzz_u16(&in) * 4 % MAXSTREAM;
			p = fuzz_take(&in, fuzz_u8(&in), &plen);
			{
				size_t cap = spirt_stream_size(key, k);

				FUZZ_ASSERT(cap > 0 && (buf = malloc(cap)));
				e = nk < KEEP ? &kept[nk] : NULL;
				FUZZ_ASSERT((pt2 = malloc(k + 1)) != NULL);
				fill(pt2, k, p, plen);
				FUZZ_ASSERT(spirt_stream_seal(tx, buf, cap,
				    &got, step, key, pt2, k) == 0 &&
				    got == cap);
				if (!e) {
					free(buf);
					free(pt2);
				} else {
					nk++;
					e->m = buf;
					e->len = got;
					e->ctr = ctr;
					e->step = step;
					snprintf(e->key, sizeof e->key, "%s",
					    key);
					e->pt = pt2;
					e->n = k;
					e->stream = 1;
				}
				ctr++;
			}
			break;
		case 7:
			if (nk == 0)
				break;
			e = &kept[fuzz_u8(&in) % nk];
			if (!e->stream)
				break;
			x = fuzz_u8(&in);
			if (x & 1) {
				/* cut short by 1..256 bytes */
				k = (size_t)fuzz_u8(&in) + 1;
				if (k >= e->len)
					k = e->len - 1;
				rc = spirt_stream_open(rx, pt, MAXSTREAM, &got,
				    e->step, e->key, e->m, e->len - k);
				FUZZ_ASSERT(rc != 0);
			} else if (e->n > SPIRT_FRAME_BYTES) {
				/* two whole frames swapped: the first two */
				size_t fw = SPIRT_FRAME_BYTES + SPIRT_MSG_TAG;
				size_t h = e->len - (e->n + SPIRT_MSG_TAG *
				    spirt_stream_frames(e->n));
				unsigned char *c = malloc(e->len);

				FUZZ_ASSERT(c != NULL);
				memcpy(c, e->m, e->len);
				if (e->n >= 2 * SPIRT_FRAME_BYTES) {
					memcpy(c + h, e->m + h + fw, fw);
					memcpy(c + h + fw, e->m + h, fw);
					rc = spirt_stream_open(rx, pt,
					    MAXSTREAM, &got, e->step, e->key,
					    c, e->len);
					FUZZ_ASSERT(rc != 0);
				}
				free(c);
			}
			/* a refusal spends nothing: the stream itself still
			 * opens, if the window lets it */
			if (ref_ok(&ref, e->ctr)) {
				FUZZ_ASSERT(sopen(rx, e, pt, MAXSTREAM, &got,
				    e->step, e->key, x & 2) == 0 &&
				    got == e->n && memcmp(pt, e->pt, e->n) ==
				    0);
				ref_take(&ref, e->ctr);
			}
			break;
		default:
			p = fuzz_take(&in, fuzz_u16(&in) % 2048, &plen);
			if (spirt_msg_info(&info, p, plen) == 0) {
				FUZZ_ASSERT(info.n + SPIRT_MSG_HEAD +
				    strlen(info.key) + SPIRT_MSG_TAG == plen);
				rc = spirt_session_open(rx, pt, MAXSTREAM, &got,
				    info.step, info.key, p, plen);
			} else {
				rc = spirt_session_open(rx, pt, MAXSTREAM, &got,
				    7, "agg/7/p1", p, plen);
			}
			FUZZ_ASSERT(rc != 0);
			/* and as a stream */
			FUZZ_ASSERT(spirt_stream_open(rx, pt, MAXSTREAM, &got,
			    7, "agg/7/p1", p, plen) != 0);
			break;
		}
	}
	for (size_t j = 0; j < nk; j++) {
		free(kept[j].m);
		free(kept[j].pt);
	}
	free(pt);
	free(ref.seen);
	spirt_session_free(tx);
	spirt_session_free(rx);
	spirt_hs_free(hs);
	spirt_trust_free(t);
	spirt_trust_free(ti);
	return 0;
}
