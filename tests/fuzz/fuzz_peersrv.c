/* fuzz_peersrv.c - the peer server's request handling (lib/peersrv.c,
 * docs/protocol.md "HTTP transport"), without a socket */
#include <errno.h>
#include <stdarg.h>

#include "fuzz_crypto.h"
#include "assign.h"
#include "keys.h"
#include "le.h"
#include "mhd_stub.h"
#include "peersrv.h"
#include "remote.h"
#include "store.h"

/*
 * lib/peersrv.c runs over tests/fuzz/mhd_stub.c, which calls its handler
 * as libmicrohttpd would.  Each input starts the server (p1, a store with
 * a model, data and a gradient) and runs a program, one byte an operation:
 *
 *   0  handshake as a member (f1, p2, p3, f2) or as an outsider key;
 *   1  a sealed request in one of those sessions: op, flags (no
 *      overwrite, a streamed answer, a short wait for a missing key), key
 *      and value from the input, sent whole or in pieces;
 *   2  a raw request: method, URL, session header and body from the input;
 *   3  the last sealed request again (a replay);
 *   4  the last sealed request with one byte changed;
 *   5  a body larger than the server takes, its Content-Length true or not.
 *
 * Beyond "no crash": every request is answered or its connection closed;
 * a refusal is one line of text with a status; a sealed answer opens in
 * the client's session, echoes its op and counter, and says what the
 * role rules (spirt_peersrv_member_allowed) allow; a replayed or changed
 * request is refused; a body over the limit is refused before it is
 * read.
 */
#define MAXB 4096               /* the server's --max-bytes */
#define NSESS 4

static struct spirt_store *store;
static struct spirt_cred cred;
static char dir[64];

struct csess {
	struct spirt_session *s;
	char sid[33];
	int who;                /* FZ_*, or -1 for the outsider */
	int role;
};

static void
srvlog(void *arg, int level, const char *line)
{
	(void)arg;
	FUZZ_ASSERT(strchr(line, '\n') == NULL);
	if (getenv("FUZZ_VERBOSE"))     /* the server's log, when asked */
		fprintf(stderr, "peersrv %d: %s\n", level, line);
}

static int
seed_fn(struct spirt_txn *t, void *arg)
{
	static const char *const keys[] = {
		"model/m@0", "model/m@1", "data/d/info", "data/d/0/x",
		"data/d/0/y", "grad/0/1", "agg/0", "xagg/0/p1", "digest/0/p1",
		"opt/m@0", "beat/p2", "user-key",
	};
	/* workers 0 and 1 read shard 0: p1.w1's slot grad/1/1 at step 1
	 * (the newest model) can be written, grad/0/1 no longer */
	static const int64_t rows[2 * SPIRT_AS_COLS] = {
		0, 0, 0, 5, 0, 0, 0,
		1, 0, 5, 5, 0, 0, 0,
	};
	uint64_t dims[2] = { 2, SPIRT_AS_COLS };
	struct spirt_tensor h;
	char v[32];
	int rc;

	(void)arg;
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		snprintf(v, sizeof v, "value of %s", keys[i]);
		if ((rc = spirt_store_put(t, keys[i], v, strlen(v), 0)))
			return rc;
	}
	if (spirt_tensor_init(&h, SPIRT_I64, 2, dims))
		return SPIRT_EBUG;
	return spirt_store_put_tensor(t, "data/d/assign", &h, rows, 0);
}

/* every key, gone; then the seed's again: each input finds one store */
struct keylist {
	char **k;
	size_t n, cap;
};

static int
collect(void *arg, const char *key, const void *val, size_t len)
{
	struct keylist *l = arg;

	(void)val;
	(void)len;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		char **k = realloc(l->k, cap * sizeof *k);

		if (k == NULL)
			return ENOMEM;
		l->k = k;
		l->cap = cap;
	}
	if ((l->k[l->n] = strdup(key)) == NULL)
		return ENOMEM;
	l->n++;
	return 0;
}

static int
reset_fn(struct spirt_txn *t, void *arg)
{
	struct keylist l = { NULL, 0, 0 };
	int rc;

	(void)arg;
	rc = spirt_store_list(t, "", collect, &l);
	for (size_t i = 0; i < l.n; i++) {
		if (rc == 0)
			rc = spirt_store_del(t, l.k[i]);
		free(l.k[i]);
	}
	free(l.k);
	return rc ? rc : seed_fn(t, NULL);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	snprintf(dir, sizeof dir, "%s/fuzz-peersrv.XXXXXX", tmp && *tmp &&
	    strlen(tmp) < 32 ? tmp : "/tmp");
	FUZZ_ASSERT(mkdtemp(dir) != NULL);
	FUZZ_ASSERT(spirt_store_open(&store, dir,
	    SPIRT_STORE_CREATE | SPIRT_STORE_NOSYNC) == 0);
	FUZZ_ASSERT(spirt_store_write(store, reset_fn, NULL) == 0);
	cred.key = fz.k[FZ_P1];
	snprintf(cred.id, sizeof cred.id, "p1");
	snprintf(cred.run, sizeof cred.run, FUZZ_RUN);
	memcpy(cred.token, fz.tok[FZ_P1], SPIRT_TOKEN_BYTES);
	cred.has_token = 1;
	return 0;
}

/* a refusal: a status and one line "CODE: message" */
static void
refusal(const struct mhd_stub_answer *a)
{
	FUZZ_ASSERT(a->queued && a->status >= 400 && a->status < 600);
	FUZZ_ASSERT(strncmp(a->type, "text/plain", 10) == 0);
	FUZZ_ASSERT(a->len > 2 && a->body[a->len - 1] == '\n' &&
	    memchr(a->body, '\n', a->len) == a->body + a->len - 1);
}

static void
post(struct mhd_stub_answer *a, const char *url, const char *sid,
    const unsigned char *b, size_t n, size_t piece, int cl)
{
	struct mhd_stub_header h[2];
	char len[32];
	size_t k = 0;

	snprintf(len, sizeof len, "%zu", n);
	if (cl) {
		h[k].name = "Content-Length";
		h[k++].value = len;
	}
	if (sid) {
		h[k].name = "Spirt-Session";
		h[k++].value = sid;
	}
	mhd_stub_request(a, "POST", url, h, k, b, n, piece);
}

/* op 0: a handshake as member who (or an outsider's key) */
static void
handshake(struct csess *c, int who)
{
	struct spirt_self me = fuzz_self(who >= 0 ? who : FZ_F1);
	struct spirt_trust *t = fuzz_trust();
	struct spirt_key *out = NULL;
	struct mhd_stub_answer a;
	struct spirt_hs *hs;
	unsigned char m1[SPIRT_HS_MAX], seed[32];
	size_t n1;
	int rc;

	if (who < 0) {
		memset(seed, 0x77, sizeof seed);
		FUZZ_ASSERT(spirt_key_from_seed(&out, seed) == 0);
		me.key = out;
		me.token = NULL;
	}
	FUZZ_ASSERT(spirt_hs_init(&hs, m1, sizeof m1, &n1, &me, t, "p1",
	    spirt_crypto_now()) == 0);
	post(&a, "/v1/hs", NULL, m1, n1, 0, 1);
	FUZZ_ASSERT(!a.dropped);
	if (who < 0) {
		/* not a member: refused, as EUNKNOWNKEY */
		refusal(&a);
		FUZZ_ASSERT(a.status == 403 &&
		    memcmp(a.body, "EUNKNOWNKEY:", 12) == 0);
	} else {
		FUZZ_ASSERT(a.queued && a.status == 200 && a.len > 16);
		spirt_session_free(c->s);
		c->s = NULL;
		rc = spirt_hs_finish(&c->s, hs, t, a.body + 16, a.len - 16,
		    spirt_crypto_now(), SPIRT_ROLE_PEER);
		FUZZ_ASSERT(rc == 0);
		for (int i = 0; i < 16; i++)
			snprintf(c->sid + 2 * i, 3, "%02x", a.body[i]);
		c->who = who;
		c->role = fuzz_roles[who];
	}
	free(a.body);
	spirt_hs_free(hs);
	spirt_key_free(out);
	spirt_trust_free(t);
}

/* the answer to a sealed request of c, counter ctr, op, key */
static void
sealed_answer(struct csess *c, const struct mhd_stub_answer *a,
    uint64_t ctr, int op, unsigned flags, const char *key, size_t vlen)
{
	unsigned char *pt;
	size_t n, hlen;
	uint64_t total;
	int type;
	int noover, allowed;
	unsigned st;

	FUZZ_ASSERT(!a->dropped);
	if (a->status != 200) {
		refusal(a);
		return;
	}
	FUZZ_ASSERT(strcmp(a->type, "application/octet-stream") == 0);
	FUZZ_ASSERT((pt = malloc(a->len)) != NULL);
	/* a message, or a stream of frames when the get asked for one */
	FUZZ_ASSERT(spirt_msg_peek(a->body, a->len, &type, &hlen, &total) ==
	    0 && total == a->len);
	if (type == SPIRT_MSG_STREAM) {
		FUZZ_ASSERT(op == SPIRT_OP_GET && (flags & SPIRT_REQ_STREAM));
		FUZZ_ASSERT(spirt_stream_open(c->s, pt, a->len, &n,
		    spirt_key_wirestep(key), key, a->body, a->len) == 0);
	} else {
		FUZZ_ASSERT(spirt_session_open(c->s, pt, a->len, &n,
		    spirt_key_wirestep(key), key, a->body, a->len) == 0);
	}
	FUZZ_ASSERT(n >= SPIRT_ANS_HEAD && pt[0] == op);
	FUZZ_ASSERT(spirt_le_get64(pt + 8) == ctr);
	st = spirt_le_get16(pt + 2);
	FUZZ_ASSERT(st < SPIRT_ST_LAST);
	if (op == SPIRT_OP_LIST) {
		char prefix[SPIRT_MSG_KEY_MAX + 1];
		size_t kl = strlen(key);

		memcpy(prefix, key, kl - 1);
		prefix[kl - 1] = '\0';
		allowed = spirt_peersrv_member_allowed(c->role, "p1",
		    fuzz_ids[c->who], op, prefix, &noover);
	} else {
		allowed = spirt_peersrv_member_allowed(c->role, "p1",
		    fuzz_ids[c->who], op, key, &noover);
	}
	/* refused by the rules with their code; a put they allow may still
	 * find its gradient slot not the member's to write */
	if (allowed)
		FUZZ_ASSERT(st == (unsigned)spirt_code_status(allowed));
	else
		FUZZ_ASSERT(st != SPIRT_ST_ROLE);
	if (st != SPIRT_ST_OK)
		FUZZ_ASSERT(n == SPIRT_ANS_HEAD);
	if (op == SPIRT_OP_PUT && st == SPIRT_ST_OK)
		FUZZ_ASSERT(n == SPIRT_ANS_HEAD && vlen <= MAXB);
	if (op == SPIRT_OP_LIST && st == SPIRT_ST_OK) {
		/* entries: lengths that add up, keys under the prefix */
		size_t off = SPIRT_ANS_HEAD;

		while (off < n) {
			size_t kl;

			FUZZ_ASSERT(n - off >= SPIRT_LIST_ENTRY);
			kl = spirt_le_get16(pt + off);
			FUZZ_ASSERT(n - off - SPIRT_LIST_ENTRY >= kl);
			FUZZ_ASSERT(memcmp(pt + off + SPIRT_LIST_ENTRY, key,
			    strlen(key) - 1) == 0);
			off += SPIRT_LIST_ENTRY + kl;
		}
	}
	free(pt);
}

static const char *const keys[] = {
	"model/m@0", "model/m@9", "data/d/info", "data/d/0/x", "grad/0/1",
	"grad/1/1", "grad/1/0", "grad/3/2", "data/d/assign", "agg/0", "xagg/0/p1", "digest/0/p1", "opt/m@0",
	"beat/p1.w1", "beat/p2", "user-key", "model/*", "data/*", "grad/*",
	"*", "xagg/0/*",
};

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	struct spirt_peersrv_conf conf = { 0 };
	struct spirt_peersrv_stats st;
	struct spirt_peersrv *srv;
	struct csess cs[NSESS];
	struct mhd_stub_answer a;
	unsigned char *last = NULL, *m;
	size_t lastn = 0, ops = 0;
	char msg[256], lastsid[33] = "", lastkey[SPIRT_MSG_KEY_MAX + 1];
	uint64_t lastctr = 0;
	int lastop = 0, lastcs = -1, dirty = 0;
	unsigned waited = 0;

	fuzz_crypto_reset();
	cred.trust = fuzz_trust();
	conf.store = store;
	conf.cred = &cred;
	conf.listen = "127.0.0.1:0";
	conf.max_bytes = MAXB;
	conf.max_sessions = 3;  /* fewer than the clients: slots are reused */
	conf.idle_s = 600;
	conf.max_conns = 16;
	conf.rate = 8;          /* bursts of 16: a program can pass them */
	conf.log = srvlog;
	FUZZ_ASSERT(spirt_peersrv_start(&srv, &conf, msg, sizeof msg) == 0);
	memset(cs, 0, sizeof cs);
	while (in.n && ops++ < 64) {
		unsigned op = fuzz_u8(&in) % 6, i, x;
		struct csess *c;

		switch (op) {
		case 0:
			x = fuzz_u8(&in);
			c = &cs[x % NSESS];
			handshake(c, (x >> 2) % 5 == 4 ? -1 :
			    FZ_P2 + (int)((x >> 2) % 5));
			break;
		case 1: {
			unsigned char pt[SPIRT_REQ_HEAD + MAXB + 64];
			char key[SPIRT_MSG_KEY_MAX + 1];
			const uint8_t *v;
			size_t vn, cap, len, piece;
			uint64_t ctr;
			unsigned fl;
			int rop;

			c = &cs[fuzz_u8(&in) % NSESS];
			if (!c->s)
				break;
			x = fuzz_u8(&in);
			rop = x % 5 == 0 ? (int)fuzz_u8(&in) : (int)(x % 5);
			i = fuzz_u8(&in);
			if (i < 200) {
				snprintf(key, sizeof key, "%s",
				    keys[i % (sizeof keys / sizeof *keys)]);
			} else {
				v = fuzz_take(&in, fuzz_u8(&in), &vn);
				memcpy(key, v, vn);
				key[vn] = '\0';
				if (spirt_msg_size(key, 0) == 0)
					break;
			}
			v = fuzz_take(&in, fuzz_u16(&in) % (MAXB + 32), &vn);
			memset(pt, 0, SPIRT_REQ_HEAD);
			pt[0] = (unsigned char)rop;
			/* flags: no overwrite, a streamed answer, a wait of
			 * up to 248 ms for a missing key (1.5 s an input) */
			fl = fuzz_u8(&in);
			pt[1] = (unsigned char)(fl & 7);
			if ((fl & 4) && waited + (fl >> 3) * 8 <= 1500) {
				waited += (fl >> 3) * 8;
				spirt_le_put32(pt + 4, (fl >> 3) * 8);
			} else {
				pt[1] &= ~4u;
			}
			memcpy(pt + SPIRT_REQ_HEAD, v, vn);
			cap = spirt_msg_size(key, SPIRT_REQ_HEAD + vn);
			FUZZ_ASSERT((m = malloc(cap)) != NULL);
			/* the counter this seal takes: the answer's echo */
			FUZZ_ASSERT(spirt_session_seal(c->s, m, cap, &len,
			    spirt_key_wirestep(key), key, pt,
			    SPIRT_REQ_HEAD + vn) == 0);
			ctr = spirt_le_get64(m + 8);
			piece = x & 0x80 ? (size_t)fuzz_u8(&in) + 1 : 0;
			post(&a, "/v1/msg", c->sid, m, len, piece, !(x & 0x40));
			if (a.dropped) {
				/* only a body over the bound, with no length */
				FUZZ_ASSERT((x & 0x40) && len > MAXB +
				    SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX +
				    SPIRT_MSG_TAG + SPIRT_ANS_HEAD);
				free(a.body);
				free(m);
				break;
			}
			if (a.status == 401) {
				/* its slot went to a newer handshake */
				refusal(&a);
			} else if (len > MAXB + SPIRT_MSG_HEAD +
			    SPIRT_MSG_KEY_MAX + SPIRT_MSG_TAG +
			    SPIRT_ANS_HEAD) {
				FUZZ_ASSERT((x & 0x40) ? a.dropped :
				    a.status == 413);
				free(m);
				break;
			} else if (rop < SPIRT_OP_GET || rop > SPIRT_OP_LIST ||
			    (rop == SPIRT_OP_LIST &&
			    key[strlen(key) - 1] != '*')) {
				refusal(&a);
				FUZZ_ASSERT(a.status == 400 || a.status == 429);
			} else {
				sealed_answer(c, &a, ctr, rop, pt[1], key, vn);
				/* a put or delete may have changed the store */
				dirty |= rop == SPIRT_OP_PUT ||
				    rop == SPIRT_OP_DEL;
			}
			free(a.body);
			free(last);
			last = m;
			lastn = len;
			lastctr = ctr;
			lastop = rop;
			lastcs = (int)(c - cs);
			memcpy(lastsid, c->sid, sizeof lastsid);
			memcpy(lastkey, key, sizeof lastkey);
			break;
		}
		case 2: {
			static const char *const urls[] = {
				"/v1/id", "/v1/hs", "/v1/msg", "/", "/v1/",
				"/v1/msg/", "/v1/id?x=1", "//v1/id",
			};
			static const char *const methods[] = {
				"GET", "POST", "PUT", "HEAD", "DELETE", "",
			};
			struct mhd_stub_header h[3];
			char sid[40], url[64], cl[24];
			const uint8_t *b;
			size_t bn, k = 0, hk = 0;

			x = fuzz_u8(&in);
			i = fuzz_u8(&in);
			if (i & 1) {
				b = fuzz_take(&in, fuzz_u8(&in) % 40, &k);
				memcpy(sid, b, k);
				sid[k] = '\0';
				h[hk].name = "Spirt-Session";
				h[hk++].value = sid;
			} else if (i & 2 && cs[i >> 2 & 3].s) {
				h[hk].name = "Spirt-Session";
				h[hk++].value = cs[i >> 2 & 3].sid;
			}
			b = fuzz_take(&in, fuzz_u16(&in) % (MAXB + 1024), &bn);
			if (!(i & 16)) {
				snprintf(cl, sizeof cl, "%zu", bn);
				h[hk].name = "Content-Length";
				h[hk++].value = cl;
			} else if (i & 32) {
				h[hk].name = "Content-Length";
				h[hk++].value = i & 64 ? "-1" : "12x";
			}
			snprintf(url, sizeof url, "%s", urls[x % 8]);
			mhd_stub_request(&a, methods[(x >> 3) % 6], url, h, hk,
			    b, bn, i & 128 ? 7 : 0);
			if (a.dropped) {
				/* a body with no length, past its bound */
				FUZZ_ASSERT((i & 48) == 16 && !a.queued);
				FUZZ_ASSERT(bn > (strcmp(url, "/v1/hs") ? 0 :
				    SPIRT_HS_MAX));
				free(a.body);
				break;
			}
			FUZZ_ASSERT(a.queued);
			/* nothing but the id is answered without a session */
			if (a.status == 200)
				FUZZ_ASSERT(strcmp(url, "/v1/id") == 0 &&
				    (x >> 3) % 6 == 0 && bn == 0);
			else
				refusal(&a);
			free(a.body);
			break;
		}
		case 3:
		case 4:
			if (!last)
				break;
			if (op == 4) {
				i = fuzz_u16(&in) % lastn;
				last[i] ^= (unsigned char)(fuzz_u8(&in) | 1);
			}
			post(&a, "/v1/msg", lastsid, last, lastn, 0, 1);
			FUZZ_ASSERT(!a.dropped && a.status != 200);
			refusal(&a);
			free(a.body);
			(void)lastctr;
			(void)lastop;
			(void)lastcs;
			(void)lastkey;
			break;
		default: {
			/* more than the largest value and its framing */
			size_t big = MAXB + SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX +
			    SPIRT_MSG_TAG + SPIRT_ANS_HEAD + 1 + fuzz_u8(&in);
			unsigned char *b = calloc(1, big);

			x = fuzz_u8(&in);
			FUZZ_ASSERT(b != NULL);
			post(&a, x & 1 ? "/v1/hs" : "/v1/msg", NULL, b, big,
			    x & 2 ? 100 : 0, !(x & 4));
			if (!(x & 4)) {
				/* by its Content-Length: 413, nothing read */
				FUZZ_ASSERT(!a.dropped && a.status == 413);
				refusal(&a);
				FUZZ_ASSERT(a.body_read == 0);
			} else {
				/* without: closed by the piece that passes
				 * the bound, the rest never read */
				size_t bound = x & 1 ? SPIRT_HS_MAX : MAXB +
				    SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX +
				    SPIRT_MSG_TAG + SPIRT_ANS_HEAD;

				FUZZ_ASSERT(a.dropped && !a.queued);
				if (x & 2)
					FUZZ_ASSERT((size_t)a.body_read <=
					    bound + 100);
			}
			free(a.body);
			free(b);
			break;
		}
		}
	}
	spirt_peersrv_stop(srv, &st);
	FUZZ_ASSERT(!mhd_stub_opts.running);
	if (dirty)
		FUZZ_ASSERT(spirt_store_write(store, reset_fn, NULL) == 0);
	for (int j = 0; j < NSESS; j++)
		spirt_session_free(cs[j].s);
	free(last);
	spirt_trust_free(cred.trust);
	return 0;
}
