/* fuzz_msg.c - sealed messages and the replay window (lib/crypto.c,
 * docs/protocol.md "Sealed messages", "Replay rules") */
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
 *   5  seal and keep nothing, k times (the counter moves on).
 *
 * A model of the window (docs/protocol.md: refused when seen, or more than
 * 1983 behind the newest accepted) says what each delivery of an intact
 * message must do; a changed byte or a raw message is always refused, and
 * a message that opens gives back exactly what was sealed.
 */
#define KEEP 64
#define MAXPT 512

struct kept {
	unsigned char *m;
	size_t len;
	uint64_t ctr, step;
	char key[64];
	unsigned char pt[MAXPT];
	size_t n;
};

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
	unsigned char m1[SPIRT_HS_MAX], m2[SPIRT_HS_MAX], pt[MAXPT + 64];
	unsigned char *buf;
	size_t n1, n2, nk = 0, got, k, plen;
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

	while (in.n && ctr < MAXCTR - 300) {
		unsigned op = fuzz_u8(&in) % 6, i, x;
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
				    strcmp(info.sender, "f1") == 0 &&
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
					memcpy(e->pt, p, plen);
					e->n = plen;
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

				rc = spirt_session_open(rx, pt, sizeof pt, &got,
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
				rc = spirt_session_open(rx, pt, sizeof pt, &got,
				    e->step, e->key, e->m, e->len);
				e->m[i] ^= (unsigned char)x;
				FUZZ_ASSERT(rc != 0);
			} else {
				x = fuzz_u8(&in);
				step = x & 1 ? e->step + 1 : e->step;
				key = x & 2 ? "agg/7/p2" : e->key;
				if (step == e->step && key == e->key)
					key = "gagg/7";
				rc = spirt_session_open(rx, pt, sizeof pt, &got,
				    step, key, e->m, e->len);
				FUZZ_ASSERT(rc == (step != e->step ?
				    SPIRT_ESTEP : SPIRT_EWRONGKEY));
			}
			break;
		default:
			p = fuzz_take(&in, fuzz_u16(&in) % 2048, &plen);
			if (spirt_msg_info(&info, p, plen) == 0) {
				FUZZ_ASSERT(info.n + SPIRT_MSG_HEAD +
				    strlen(info.key) + SPIRT_MSG_TAG == plen);
				rc = spirt_session_open(rx, pt, sizeof pt, &got,
				    info.step, info.key, p, plen);
			} else {
				rc = spirt_session_open(rx, pt, sizeof pt, &got,
				    7, "agg/7/p1", p, plen);
			}
			FUZZ_ASSERT(rc != 0);
			break;
		}
	}
	for (size_t j = 0; j < nk; j++)
		free(kept[j].m);
	free(ref.seen);
	spirt_session_free(tx);
	spirt_session_free(rx);
	spirt_hs_free(hs);
	spirt_trust_free(t);
	spirt_trust_free(ti);
	return 0;
}
