/* fuzz_remote.c - the client of a peer's store (lib/remote.c): what it
 * makes of the answers a peer sends, honest or not */
#include <stdarg.h>

#include "fuzz_crypto.h"
#include "keys.h"
#include "le.h"
#include "remote.h"
#include "curldl.h"

/*
 * lib/remote.c speaks HTTP through lib/curldl.h's table of libcurl calls;
 * this harness defines spirt_curl_load() with a table of its own, whose
 * easy_perform() hands each request to a peer p1 played here: it
 * handshakes and seals as a peer does (the session is real), from a small
 * store, and then, as the input says for each request, answers honestly,
 * changes a byte of its answer, cuts it short, lies about its
 * Content-Length, sends raw bytes with any status, seals lies (any
 * status, op, counter, listing entries, value; as a message or a
 * stream), or fails as libcurl does (no connection, no answer in time).
 * The body reaches the client's write callback in pieces the input sizes.
 *
 * The client f1 then gets, waits for, lists, puts and deletes.  Beyond
 * "no crash": over honest answers every call gives what the store holds
 * (a value byte for byte, not found, a listing in order); over any
 * answers, a listing is under its prefix and strictly ascending and a
 * value no larger than the client's bound; a refusal is a code.
 */
#define MAXV 100000             /* the client's --max-bytes */

/* ---- the input, read by the client's requests as they come ---- */

static struct fuzz_in in;

/* ---- the store p1 serves ---- */

struct val {
	const char *key;
	size_t len;
};

static const struct val store[] = {      /* in key order */
	{ "data/d/0/x", 300 },
	{ "data/d/info", 32 },
	{ "model/m@0", 100 },
	{ "model/m@1", 70000 },         /* two frames when streamed */
	{ "model/m@2", 0 },
};
#define NSTORE (sizeof store / sizeof *store)

static unsigned char *vals[NSTORE];

static int
find(const char *key)
{
	for (size_t i = 0; i < NSTORE; i++)
		if (!strcmp(store[i].key, key))
			return (int)i;
	return -1;
}

/* ---- p1 ---- */

static struct spirt_trust *ptrust;     /* p1's */
static struct spirt_session *psess;     /* its session with f1 */
static unsigned char psid[16];

static const char *const refusals[] = {
	"ETRUNC: truncated record\n", "ESESSION: unknown\n", "EMAC: x\n",
	"ERATE: slow down\n", "EBUSY: busy\n", "ETOOBIG: big\n",
	"EPROTO: no\n", "not a refusal\n", "",
};
static const long statuses[] = { 200, 400, 401, 403, 404, 413, 429, 500,
	503, 302 };

struct answer {
	long status;
	unsigned char *b;
	size_t n;
	curl_off_t clen;        /* -1: none */
	CURLcode cc;            /* a transfer error instead */
	int honest;
};

static void
set(struct answer *a, long status, const void *b, size_t n)
{
	a->status = status;
	FUZZ_ASSERT((a->b = malloc(n ? n : 1)) != NULL);
	memcpy(a->b, b, n);
	a->n = n;
	a->clen = (curl_off_t)n;
}

static void
refuse(struct answer *a, long status, const char *line)
{
	set(a, status, line, strlen(line));
}

/* seal plaintext pt[0..n) for step and key, as a stream or a message */
static void
seal(struct answer *a, int stream, uint64_t step, const char *key,
    const unsigned char *pt, size_t n)
{
	size_t cap = stream ? spirt_stream_size(key, n) :
	    spirt_msg_size(key, n), len;
	unsigned char *out;

	FUZZ_ASSERT(cap && (out = malloc(cap)) != NULL);
	FUZZ_ASSERT((stream ? spirt_stream_seal(psess, out, cap, &len, step,
	    key, pt, n) : spirt_session_seal(psess, out, cap, &len, step, key,
	    pt, n)) == 0);
	a->status = 200;
	a->b = out;
	a->n = len;
	a->clen = (curl_off_t)len;
}

/* the honest answer to a sealed request, into a */
static void
honest_msg(struct answer *a, const unsigned char *body, size_t n,
    const char *sid)
{
	struct spirt_msg_info info;
	unsigned char *pt, *ans;
	size_t pn, vlen = 0, an;
	uint64_t step;
	int op, i, st = SPIRT_ST_OK, more = 0;

	if (!psess || !sid || strlen(sid) != 32) {
		refuse(a, 401, "ESESSION: unknown or expired session\n");
		return;
	}
	if (spirt_msg_info(&info, body, n)) {
		refuse(a, 400, "EDATA: malformed input data\n");
		return;
	}
	step = spirt_key_wirestep(info.key);
	FUZZ_ASSERT((pt = malloc(n)) != NULL);
	if (spirt_session_open(psess, pt, n, &pn, step, info.key, body, n)) {
		refuse(a, 403, "EMAC: authentication failed\n");
		free(pt);
		return;
	}
	op = pn >= SPIRT_REQ_HEAD ? pt[0] : 0;
	FUZZ_ASSERT((ans = calloc(1, SPIRT_ANS_HEAD + 200000)) != NULL);
	an = SPIRT_ANS_HEAD;
	if (op == SPIRT_OP_GET) {
		if ((i = find(info.key)) < 0) {
			st = SPIRT_ST_NOTFOUND;
		} else {
			vlen = store[i].len;
			memcpy(ans + an, vals[i], vlen);
			an += vlen;
		}
	} else if (op == SPIRT_OP_LIST) {
		size_t kl = strlen(info.key) - 1;

		for (size_t j = 0; j < NSTORE; j++) {
			size_t k = strlen(store[j].key);

			if (strncmp(store[j].key, info.key, kl))
				continue;
			memset(ans + an, 0, SPIRT_LIST_ENTRY);
			spirt_le_put16(ans + an, (uint16_t)k);
			spirt_le_put64(ans + an + 4, store[j].len);
			memcpy(ans + an + SPIRT_LIST_ENTRY, store[j].key, k);
			an += SPIRT_LIST_ENTRY + k;
		}
	} else if (op == SPIRT_OP_PUT || op == SPIRT_OP_DEL) {
		st = SPIRT_ST_ROLE;     /* this store takes nothing */
	} else {
		free(pt);
		free(ans);
		refuse(a, 400, "EDATA: malformed input data\n");
		return;
	}
	ans[0] = (unsigned char)op;
	ans[1] = more ? SPIRT_ANS_MORE : 0;
	spirt_le_put16(ans + 2, (uint16_t)st);
	spirt_le_put64(ans + 8, info.counter);
	seal(a, op == SPIRT_OP_GET && st == SPIRT_ST_OK &&
	    (pt[1] & SPIRT_REQ_STREAM), step, info.key, ans, an);
	a->honest = 1;
	free(pt);
	free(ans);
}

/* what p1 answers to one request; malice from the input */
static void
serve(struct answer *a, const char *path, const unsigned char *body,
    size_t n, const char *sid)
{
	unsigned mode = fuzz_u8(&in) % 8;

	memset(a, 0, sizeof *a);
	a->clen = -1;
	if (mode == 5) {                /* libcurl's failures */
		a->cc = fuzz_u8(&in) & 1 ? CURLE_OPERATION_TIMEDOUT :
		    CURLE_COULDNT_CONNECT;
		return;
	}
	if (mode == 3) {                /* raw bytes, any status */
		size_t k;
		const uint8_t *p;
		unsigned x = fuzz_u8(&in);

		if (x & 1) {
			refuse(a, statuses[x >> 1 & 7], refusals[(x >> 4) % 9]);
		} else {
			p = fuzz_take(&in, fuzz_u16(&in) % 4096, &k);
			set(a, statuses[x >> 1 & 7], p, k);
		}
		return;
	}
	if (!strcmp(path, "/v1/id")) {
		const char *t = "VERSION=1\nTYPE=spirt-peer\nID=p1\nRUN=r1\nEND\n";

		set(a, 200, t, strlen(t));
		a->honest = 1;
	} else if (!strcmp(path, "/v1/hs")) {
		struct spirt_self me = fuzz_self(FZ_P1);
		unsigned char out[16 + SPIRT_HS_MAX];
		size_t k;
		int rc;

		spirt_session_free(psess);
		psess = NULL;
		rc = spirt_hs_respond(&psess, out + 16, SPIRT_HS_MAX, &k, &me,
		    ptrust, body, n, spirt_crypto_now(), SPIRT_ROLE_PEER |
		    SPIRT_ROLE_FUNCTION);
		if (rc) {
			/* f1's are genuine, but it may address another id
			 * a changed /v1/id gave it */
			char line[80];

			snprintf(line, sizeof line, "%s: refused\n",
			    spirt_errname(rc) ? spirt_errname(rc) : "EDATA");
			refuse(a, 403, line);
			return;
		}
		randombytes_buf(psid, sizeof psid);
		memcpy(out, psid, 16);
		set(a, 200, out, 16 + k);
		a->honest = 1;
	} else if (!strcmp(path, "/v1/msg")) {
		if (mode == 4) {
			/* sealed lies: a plaintext from the input, under the
			 * request's own step and key */
			struct spirt_msg_info info;
			unsigned char pt[8192];
			const uint8_t *p;
			size_t k;
			unsigned x = fuzz_u8(&in);

			if (!psess || spirt_msg_info(&info, body, n)) {
				refuse(a, 401, "ESESSION: x\n");
				return;
			}
			p = fuzz_take(&in, fuzz_u16(&in) % sizeof pt, &k);
			memcpy(pt, p, k);
			/* keep the echo right (bit 1) so that the client reads
			 * on into the content */
			if ((x & 2) && k >= SPIRT_ANS_HEAD)
				spirt_le_put64(pt + 8, info.counter);
			seal(a, x & 1, spirt_key_wirestep(info.key),
			    info.key, pt, k);
			return;
		}
		honest_msg(a, body, n, sid);
	} else {
		refuse(a, 404, "EPROTO: no such endpoint\n");
	}
	if (mode == 1 && a->n) {        /* a byte changed in flight */
		a->b[fuzz_u16(&in) % a->n] ^= (unsigned char)(fuzz_u8(&in) | 1);
		a->honest = 0;
	} else if (mode == 2 && a->n) { /* cut short */
		a->n -= 1 + fuzz_u16(&in) % a->n;
		a->honest = 0;
		if (fuzz_u8(&in) & 1)
			a->clen = (curl_off_t)a->n;
	} else if (mode == 6) {         /* a lying Content-Length */
		a->clen = fuzz_u8(&in) & 1 ? -1 : (curl_off_t)fuzz_u64(&in);
		a->honest = 0;
	}
}

/* ---- libcurl, played ---- */

struct curl_fake {
	char url[1024];
	char sid[64];
	const unsigned char *post;
	curl_off_t postn;
	curl_write_callback wf;
	void *wd;
	curl_xferinfo_callback xf;
	void *xd;
	long code;
	curl_off_t clen;
};

static int honest = 1;          /* every answer of the operation was */

static CURL *
f_init(void)
{
	return calloc(1, sizeof(struct curl_fake));
}

static void
f_cleanup(CURL *c)
{
	free(c);
}

static void
f_reset(CURL *c)
{
	memset(c, 0, sizeof(struct curl_fake));
}

/* libcurl's option types by number: long, object, function, off_t */
static CURLcode
f_setopt(CURL *c, CURLoption o, ...)
{
	struct curl_fake *f = c;
	va_list ap;

	va_start(ap, o);
	if (o < CURLOPTTYPE_OBJECTPOINT) {
		(void)va_arg(ap, long);
	} else if (o >= CURLOPTTYPE_OFF_T) {
		curl_off_t v = va_arg(ap, curl_off_t);

		if (o == CURLOPT_POSTFIELDSIZE_LARGE)
			f->postn = v;
	} else if (o == CURLOPT_WRITEFUNCTION) {
		f->wf = va_arg(ap, curl_write_callback);
	} else if (o == CURLOPT_XFERINFOFUNCTION) {
		f->xf = va_arg(ap, curl_xferinfo_callback);
	} else {
		void *v = va_arg(ap, void *);

		switch (o) {
		case CURLOPT_URL:
			snprintf(f->url, sizeof f->url, "%s", (char *)v);
			break;
		case CURLOPT_POSTFIELDS:
			f->post = v;
			break;
		case CURLOPT_WRITEDATA:
			f->wd = v;
			break;
		case CURLOPT_XFERINFODATA:
			f->xd = v;
			break;
		case CURLOPT_HTTPHEADER:
			f->sid[0] = '\0';
			for (struct curl_slist *h = v; h; h = h->next)
				if (!strncmp(h->data, "Spirt-Session: ", 15))
					snprintf(f->sid, sizeof f->sid, "%s",
					    h->data + 15);
			break;
		default:
			break;
		}
	}
	va_end(ap);
	return CURLE_OK;
}

static CURLcode
f_getinfo(CURL *c, CURLINFO i, ...)
{
	struct curl_fake *f = c;
	va_list ap;

	va_start(ap, i);
	if (i == CURLINFO_RESPONSE_CODE)
		*va_arg(ap, long *) = f->code;
	else if (i == CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
		*va_arg(ap, curl_off_t *) = f->clen;
	va_end(ap);
	return CURLE_OK;
}

static CURLcode
f_perform(CURL *c)
{
	struct curl_fake *f = c;
	struct answer a;
	const char *path = strstr(f->url + 7, "/");
	size_t off = 0, piece = fuzz_u8(&in);
	CURLcode cc = CURLE_OK;

	FUZZ_ASSERT(path != NULL && f->wf != NULL);
	serve(&a, path, f->post, f->post ? (size_t)f->postn : 0,
	    f->sid[0] ? f->sid : NULL);
	honest &= a.honest;
	if (a.cc) {
		free(a.b);
		return a.cc;
	}
	f->code = a.status;
	f->clen = a.clen;
	/* in pieces of 1..255 bytes, or the whole body */
	while (off < a.n) {
		size_t k = piece && piece < a.n - off ? piece : a.n - off;

		if (f->xf && f->xf(f->xd, a.clen, (curl_off_t)off, 0, 0)) {
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (f->wf((char *)a.b + off, 1, k, f->wd) != k) {
			cc = CURLE_WRITE_ERROR;
			break;
		}
		off += k;
	}
	free(a.b);
	return cc;
}

static CURLcode
f_global_init(long flags)
{
	(void)flags;
	return CURLE_OK;
}

static void
f_global_cleanup(void)
{
}

static const char *
f_strerror(CURLcode cc)
{
	return cc == CURLE_OK ? "No error" : "a transfer error (played)";
}

static struct curl_slist *
f_slist_append(struct curl_slist *l, const char *s)
{
	struct curl_slist *n = calloc(1, sizeof *n), *t;

	if (!n || !(n->data = strdup(s))) {
		free(n);
		return NULL;
	}
	if (!l)
		return n;
	for (t = l; t->next; t = t->next)
		;
	t->next = n;
	return l;
}

static void
f_slist_free(struct curl_slist *l)
{
	while (l) {
		struct curl_slist *n = l->next;

		free(l->data);
		free(l);
		l = n;
	}
}

static const struct spirt_curl fake = {
	f_global_init, f_global_cleanup, f_init, f_setopt, f_perform,
	f_getinfo, f_reset, f_cleanup, f_strerror, f_slist_append,
	f_slist_free,
};

/* lib/curldl.c's two functions, in place of libcurl.so.4 */
int
spirt_curl_load(const struct spirt_curl **cu)
{
	*cu = &fake;
	return 0;
}

const char *
spirt_curl_error(void)
{
	return "";
}

/* ---- f1 ---- */

static struct spirt_cred cred;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_crypto_init();
	for (size_t i = 0; i < NSTORE; i++) {
		FUZZ_ASSERT((vals[i] = malloc(store[i].len + 1)) != NULL);
		for (size_t j = 0; j < store[i].len; j++)
			vals[i][j] = (unsigned char)(i * 31 + j * 7);
	}
	cred.key = fz.k[FZ_F1];
	snprintf(cred.id, sizeof cred.id, "%s", fuzz_ids[FZ_F1]);
	snprintf(cred.run, sizeof cred.run, FUZZ_RUN);
	memcpy(cred.token, fz.tok[FZ_F1], SPIRT_TOKEN_BYTES);
	cred.has_token = 1;
	FUZZ_ASSERT(spirt_remote_global_init() == 0);
	return 0;
}

struct seen {
	const char *prefix;
	char last[SPIRT_KEY_MAX + 1];
	size_t n;
	char keys[NSTORE + 8][SPIRT_KEY_MAX + 1];
	size_t lens[NSTORE + 8];
};

static int
onkey(void *arg, const char *key, size_t len)
{
	struct seen *s = arg;

	/* under the prefix, strictly ascending, whoever answered */
	FUZZ_ASSERT(strncmp(key, s->prefix, strlen(s->prefix)) == 0);
	FUZZ_ASSERT(s->n == 0 || strcmp(s->last, key) < 0);
	snprintf(s->last, sizeof s->last, "%s", key);
	if (s->n < NSTORE + 8) {
		snprintf(s->keys[s->n], sizeof s->keys[0], "%s", key);
		s->lens[s->n] = len;
	}
	s->n++;
	return 0;
}

static const char *const gkeys[] = {
	"model/m@0", "model/m@1", "model/m@2", "model/m@9", "data/d/info",
	"data/d/0/x", "agg/0",
};
static const char *const prefixes[] = { "model/", "data/", "", "model/m@" };

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct spirt_remote *r;
	int rc, ops = 0;

	in.p = d;
	in.n = n;
	fuzz_crypto_reset();
	ptrust = fuzz_trust();
	rc = spirt_remote_open(&r, fuzz_u8(&in) & 1 ?
	    "http://p1@127.0.0.1:7070" : "http://127.0.0.1:7070", &cred,
	    5000);
	FUZZ_ASSERT(rc == 0);
	cred.trust = fuzz_trust();
	spirt_remote_set_max(r, MAXV);
	while (in.n && ops++ < 16) {
		unsigned op = fuzz_u8(&in) % 4, k = fuzz_u8(&in);
		const char *key = gkeys[k % (sizeof gkeys / sizeof *gkeys)];
		int i = find(key);
		void *v = NULL;
		size_t len = 0;
		struct seen s;

		honest = 1;
		switch (op) {
		case 0:
		case 1:
			rc = op ? spirt_remote_get_wait(r, spirt_key_wirestep(key),
			    key, k >> 4, &v, &len) : spirt_remote_get(r,
			    spirt_key_wirestep(key), key, &v, &len);
			if (rc == 0)
				FUZZ_ASSERT(len <= MAXV);
			if (honest && rc != SPIRT_ETIMEDOUT) {
				if (i < 0) {
					FUZZ_ASSERT(rc == SPIRT_ENOTFOUND);
				} else {
					FUZZ_ASSERT(rc == 0 &&
					    len == store[i].len &&
					    (len == 0 ||
					    memcmp(v, vals[i], len) == 0));
				}
			}
			free(v);
			break;
		case 2:
			memset(&s, 0, sizeof s);
			s.prefix = prefixes[k % 4];
			rc = spirt_remote_list(r, s.prefix, onkey, &s);
			if (honest && rc == 0) {
				size_t m = 0;

				for (size_t j = 0; j < NSTORE; j++)
					if (!strncmp(store[j].key, s.prefix,
					    strlen(s.prefix))) {
						FUZZ_ASSERT(m < s.n &&
						    !strcmp(s.keys[m],
						    store[j].key) &&
						    s.lens[m] == store[j].len);
						m++;
					}
				FUZZ_ASSERT(m == s.n);
			}
			break;
		default:
			rc = spirt_remote_put(r, 3, "grad/3/1", "g", 1, 0);
			if (honest)
				FUZZ_ASSERT(rc == SPIRT_EROLE);
			break;
		}
		FUZZ_ASSERT(rc == 0 || spirt_errname(rc) != NULL || rc > 0);
		FUZZ_ASSERT(spirt_remote_msg(r) != NULL);
	}
	spirt_remote_close(r);
	spirt_session_free(psess);
	psess = NULL;
	spirt_trust_free(ptrust);
	spirt_trust_free(cred.trust);
	cred.trust = NULL;
	return 0;
}
