/* peersrv.c - a peer's store served over HTTP (ISC licence) */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <microhttpd.h>
#include <sodium.h>

#include "assign.h"
#include "io.h"
#include "keys.h"
#include "kv.h"
#include "le.h"
#include "peersrv.h"
#include "peerwait.h"

#define SID_BYTES 16
#define LIST_MAX 1024                   /* entries per listing answer */
#define LIST_BYTES (1u << 20)           /* bytes per listing answer */
#define MSG_SLACK (SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX + SPIRT_MSG_TAG + \
	SPIRT_ANS_HEAD)

struct sess {
	unsigned char sid[SID_BYTES];
	struct spirt_session *s;
	double last;                    /* monotonic seconds */
	unsigned busy;                  /* answers streaming under it */
};

/* a member's token bucket (conf.rate) */
struct bucket {
	char id[SPIRT_ID_MAX + 1];
	double tokens, last;
};

struct req;

struct spirt_peersrv {
	struct spirt_peersrv_conf conf;
	struct MHD_Daemon *d;
	struct sess *tab;
	struct bucket *rates;           /* nrates of them, or NULL */
	unsigned nrates;
	char addr[80];
	struct spirt_peersrv_stats st;
	struct spirt_peerwait wait;     /* gets waiting for their key */
	/* open connections, for the slowest to go when they fill up */
	struct conn *conns;
	unsigned nconns;
};

/* an open connection: how fast its request comes ("slow connections") */
struct conn {
	struct conn *prev, *next;
	struct MHD_Connection *c;
	double t0;                      /* connected, or last answered */
	uint64_t got;                   /* body bytes since */
	int busy;                       /* its request in, being answered */
};

/* one request's state across the handler's calls */
struct req {
	int kind;                       /* 1 id, 2 hs, 3 msg, 0 refused,
					 * 4 a get waiting for its key */
	int state;                      /* REQ_LINE, REQ_BODY, REQ_DONE */
	unsigned char *buf;
	size_t len, cap, max;
	char from[80];
	/* a waiting get: parked until when, what it asked, under which
	 * session */
	struct spirt_waiter w;
	unsigned char sid[SID_BYTES];
	struct spirt_msg_info info;
	uint64_t step;
	unsigned flags;
	double until;
	char what[SPIRT_MSG_KEY_MAX + 64];
};

/* how far the server took a request: its line seen (MHD_OPTION_URI_LOG_
 * CALLBACK), its headers (the handler's first call), answered or refused */
enum { REQ_LINE, REQ_BODY, REQ_DONE };

/* ---- answers ---- */

static void
logf_(struct spirt_peersrv *p, int level, const char *fmt, ...)
    SPIRT_PRINTF(3, 4);

static void
logf_(struct spirt_peersrv *p, int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!p->conf.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	p->conf.log(p->conf.logarg, level, line);
}

static enum MHD_Result
answer(struct MHD_Connection *c, unsigned status, void *body, size_t n,
    const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ok;

	r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static unsigned
httpstatus(int rc)
{
	switch (rc) {
	case SPIRT_ETRUNC: case SPIRT_EMAGIC: case SPIRT_EVERSION:
	case SPIRT_EDATA: case SPIRT_EKEY:
		return MHD_HTTP_BAD_REQUEST;
	case SPIRT_ESESSION:
		return MHD_HTTP_UNAUTHORIZED;
	case SPIRT_EPROTO:
		return MHD_HTTP_NOT_FOUND;
	case SPIRT_ETOOBIG:
		return 413;
	case SPIRT_EBUSY:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	case SPIRT_ERATE:
		return 429;             /* Too Many Requests */
	default:
		return MHD_HTTP_FORBIDDEN;
	}
}

/* a refusal counted and logged; its code (EDATA for one not ours) */
static int
noted(struct spirt_peersrv *p, const char *from, const char *what, int rc)
{
	if (!spirt_errname(rc))
		rc = SPIRT_EDATA;
	p->st.refused++;
	p->st.by_code[rc - SPIRT_EOF]++;
	logf_(p, 0, "refused %s: %s: %s", from, what, spirt_errname(rc));
	return rc;
}

/* a refusal: counted, logged, answered with a status and one line */
static enum MHD_Result
refuse(struct spirt_peersrv *p, struct MHD_Connection *c, const char *from,
    const char *what, int rc)
{
	const char *name;
	char *line;
	size_t n;

	rc = noted(p, from, what, rc);
	name = spirt_errname(rc);
	n = strlen(name) + strlen(spirt_strerror(rc)) + 4;
	if (!(line = malloc(n)))
		return MHD_NO;
	snprintf(line, n, "%s: %s\n", name, spirt_strerror(rc));
	return answer(c, httpstatus(rc), line, strlen(line),
	    "text/plain; charset=us-ascii");
}

/* a member's sealed request refused (it is answered sealed): counted and
 * logged with the member's role */
static void
member_refused(struct spirt_peersrv *p, const char *from, const char *what,
    int role, int rc)
{
	p->st.refused++;
	p->st.by_code[rc - SPIRT_EOF]++;
	logf_(p, 0, "refused %s: %s (%s): %s", from, what,
	    spirt_role_name(role), spirt_errname(rc));
}

/* ---- sessions ---- */

static void
sess_drop(struct sess *e)
{
	spirt_session_free(e->s);
	memset(e, 0, sizeof *e);
}

/* the session of sid, or NULL; idle ones end here */
static struct sess *
sess_find(struct spirt_peersrv *p, const unsigned char *sid, double now)
{
	struct sess *hit = NULL;

	for (unsigned i = 0; i < p->conf.max_sessions; i++) {
		struct sess *e = &p->tab[i];

		if (!e->s)
			continue;
		if (now - e->last > p->conf.idle_s && !e->busy)
			sess_drop(e);
		else if (sodium_memcmp(e->sid, sid, SID_BYTES) == 0)
			hit = e;
	}
	return hit;
}

/*
 * A free slot: an empty or idle one, else the least recently used that
 * never proved itself, else the least recently used.  Its member, if it
 * comes back, is told SPIRT_ESESSION and handshakes again.
 */
static struct sess *
sess_slot(struct spirt_peersrv *p, double now)
{
	struct sess *lru = NULL, *unconf = NULL;

	for (unsigned i = 0; i < p->conf.max_sessions; i++) {
		struct sess *e = &p->tab[i];

		if (e->s && now - e->last > p->conf.idle_s && !e->busy)
			sess_drop(e);
		if (!e->s)
			return e;
		if (e->busy)
			continue;       /* its keys seal an answer in flight */
		if (!spirt_session_confirmed(e->s) &&
		    (!unconf || e->last < unconf->last))
			unconf = e;
		if (!lru || e->last < lru->last)
			lru = e;
	}
	if (unconf)
		lru = unconf;
	if (lru)
		sess_drop(lru);
	return lru;
}

/* ---- request rates ---- */

/*
 * One request of member id at now: 0, or SPIRT_ERATE when its bucket is
 * empty.  A bucket holds 2 * rate (at least 2) and fills at rate a
 * second.  Members beyond the table take the bucket unused longest: it
 * is full again by then, or nearly, so little is forgotten.
 */
static int
rate_take(struct spirt_peersrv *p, const char *id, double now)
{
	double cap = 2 * p->conf.rate > 2 ? 2 * p->conf.rate : 2;
	struct bucket *b = NULL, *old = NULL;

	if (!p->rates)
		return 0;
	for (unsigned i = 0; i < p->nrates && !b; i++) {
		struct bucket *e = &p->rates[i];

		if (!strcmp(e->id, id))
			b = e;
		else if (!old || !e->id[0] || (old->id[0] &&
		    e->last < old->last))
			old = e;
	}
	if (!b) {
		if (!(b = old))
			return 0;
		snprintf(b->id, sizeof b->id, "%s", id);
		b->tokens = cap;
		b->last = now;
	}
	b->tokens += (now - b->last) * p->conf.rate;
	if (b->tokens > cap)
		b->tokens = cap;
	b->last = now;
	if (b->tokens < 1)
		return SPIRT_ERATE;
	b->tokens -= 1;
	return 0;
}

/* ---- endpoints ---- */

static enum MHD_Result
do_id(struct spirt_peersrv *p, struct MHD_Connection *c)
{
	struct spirt_kvw w;
	char *text;
	size_t n;

	if (!(text = malloc(128)))
		return MHD_NO;
	spirt_kvw_init(&w, text, 128, "spirt-peer");
	spirt_kvw_put(&w, "ID", p->conf.cred->id);
	spirt_kvw_put(&w, "RUN", p->conf.cred->run);
	if (spirt_kvw_end(&w, &n)) {
		free(text);
		return MHD_NO;
	}
	p->st.served++;
	return answer(c, MHD_HTTP_OK, text, n,
	    "text/plain; charset=us-ascii");
}

static enum MHD_Result
do_hs(struct spirt_peersrv *p, struct MHD_Connection *c, struct req *q)
{
	const struct spirt_cred *cr = p->conf.cred;
	struct spirt_self self = { cr->key, cr->id,
	    cr->has_token ? cr->token : NULL };
	struct spirt_session *s;
	unsigned char *out;
	struct sess *e;
	size_t n;
	int rc;

	if (!(out = malloc(SID_BYTES + SPIRT_HS_MAX)))
		return MHD_NO;
	rc = spirt_hs_respond(&s, out + SID_BYTES, SPIRT_HS_MAX, &n, &self,
	    cr->trust, q->buf, q->len, spirt_crypto_now(),
	    SPIRT_ROLE_PEER | SPIRT_ROLE_FUNCTION);
	if (rc) {
		free(out);
		return refuse(p, c, q->from, "handshake", rc);
	}
	if (!(e = sess_slot(p, spirt_clock()))) {
		spirt_session_free(s);
		free(out);
		return refuse(p, c, q->from, "handshake (sessions full)",
		    SPIRT_EBUSY);
	}
	e->s = s;
	e->last = spirt_clock();
	randombytes_buf(e->sid, SID_BYTES);
	memcpy(out, e->sid, SID_BYTES);
	logf_(p, 1, "%s: %s (%s): session", q->from, spirt_session_peer(s)->id,
	    spirt_role_name(spirt_session_peer(s)->role));
	p->st.served++;
	return answer(c, MHD_HTTP_OK, out, SID_BYTES + n,
	    "application/octet-stream");
}

/* ---- store operations, under the request's key ---- */

struct op {
	const char *key;
	const unsigned char *val;
	size_t len;
	int noover;
	/* a function's gradient or state: its slot is checked (peerauth.c) */
	int slot;
	uint64_t step;
	uint32_t worker;
	/* listing */
	const char *after;
	unsigned char *ent;             /* entries */
	size_t elen, ecap, count;
	int more;
};

static int
put_fn(struct spirt_txn *t, void *arg)
{
	struct op *o = arg;
	const void *old;
	size_t n;
	int rc;

	if (o->slot && (rc = spirt_peersrv_slot_check(t, o->step, o->worker)) != 0)
		return rc;
	if (o->noover && (rc = spirt_store_get(t, o->key, &old, &n)) !=
	    SPIRT_ENOTFOUND) {
		if (rc)
			return rc;
		/* a retried function's same gradient is fine */
		return n == o->len && memcmp(old, o->val, n) == 0 ? 0 :
		    SPIRT_EEXIST;
	}
	return spirt_store_put(t, o->key, o->val, o->len, 0);
}

static int
del_fn(struct spirt_txn *t, void *arg)
{
	return spirt_store_del(t, ((struct op *)arg)->key);
}

static int
list_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct op *o = arg;
	size_t k = strlen(key);

	(void)val;
	if (strcmp(key, o->after) <= 0)
		return 0;
	if (o->count == LIST_MAX || o->elen + SPIRT_LIST_ENTRY + k >
	    LIST_BYTES) {
		o->more = 1;
		return 1;
	}
	if (o->elen + SPIRT_LIST_ENTRY + k > o->ecap) {
		size_t cap = o->ecap ? 2 * o->ecap : 4096;
		unsigned char *b;

		while (cap < o->elen + SPIRT_LIST_ENTRY + k)
			cap *= 2;
		if (!(b = realloc(o->ent, cap)))
			return ENOMEM;
		o->ent = b;
		o->ecap = cap;
	}
	memset(o->ent + o->elen, 0, SPIRT_LIST_ENTRY);
	spirt_le_put16(o->ent + o->elen, (uint16_t)k);
	spirt_le_put64(o->ent + o->elen + 4, len);
	memcpy(o->ent + o->elen + SPIRT_LIST_ENTRY, key, k);
	o->elen += SPIRT_LIST_ENTRY + k;
	o->count++;
	return 0;
}

/* ---- streamed answers: sealed frame by frame as the socket takes them */

#define FRAME_WIRE (SPIRT_FRAME_BYTES + SPIRT_MSG_TAG)
#define STREAM_BLOCK (4 * FRAME_WIRE)   /* MHD's buffer: four frames */

/*
 * A streamed answer copies nothing but its first frame out of the store:
 * each later frame is sealed from the store's map straight into
 * libmicrohttpd's buffer, in a read transaction of that call alone.  (A
 * transaction held for the whole answer would pin its pointers across
 * other requests, which a map that another process grew must not: LMDB
 * remaps it at the next transaction's start.)  The value is looked up
 * again by its key each time and must be as long as when the answer
 * began; the keys served are never rewritten in place (a version, a
 * step's aggregate or gradient: written once, deleted when spent), and
 * a value deleted under an answer cuts the answer short, which its
 * reader refuses (SPIRT_ETRUNC).  A 40 MB value cost a copy of 4-8 ms
 * before its first byte went out, serial with everything else
 * (docs/performance.md, "Peers").
 */
struct sresp {
	struct spirt_peersrv *srv;
	struct sess *e;                 /* whose keys seal it (busy) */
	struct spirt_session *s;
	struct spirt_stream w;
	char key[SPIRT_MSG_KEY_MAX + 1];
	size_t vlen;
	unsigned char *f0;              /* frame 0: the head, the value's start */
	unsigned char head[SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX];
	size_t hlen;
	unsigned char *stage;           /* a frame that did not fit */
	uint64_t stage_at;              /* its offset after the header */
	size_t stage_len;
	int why;                        /* why the answer was cut, or 0 */
};

/* seal frame w.next of a into out; *t is the call's read transaction,
 * begun on first need */
static int
seal_next(struct sresp *a, unsigned char *out, struct spirt_txn **t,
    const unsigned char **val)
{
	size_t fl = spirt_stream_frame_len(&a->w), vl;
	uint64_t at = a->w.next * (uint64_t)SPIRT_FRAME_BYTES;
	const void *v;
	int rc;

	if (a->w.next == 0)
		return spirt_stream_seal_frame(&a->w, out, a->f0, fl);
	if (*val == NULL) {
		if ((rc = spirt_txn_begin(t, a->srv->conf.store,
		    SPIRT_TXN_RDONLY)) ||
		    (rc = spirt_store_get(*t, a->key, &v, &vl)))
			return rc;
		if (vl != a->vlen)
			return SPIRT_ENOTFOUND; /* another value now */
		*val = v;
	}
	return spirt_stream_seal_frame(&a->w, out, *val + (at -
	    SPIRT_ANS_HEAD), fl);
}

static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sresp *a = cls;
	struct spirt_txn *t = NULL;
	const unsigned char *val = NULL;
	size_t done = 0;
	int rc = 0;

	while (done < max) {
		uint64_t p = pos + done, off, at;
		size_t k, fl;

		if (p < a->hlen) {
			k = a->hlen - (size_t)p < max - done ?
			    a->hlen - (size_t)p : max - done;
			memcpy(buf + done, a->head + p, k);
			done += k;
			continue;
		}
		off = p - a->hlen;
		if (a->stage_len && off >= a->stage_at &&
		    off < a->stage_at + a->stage_len) {
			k = (size_t)(a->stage_at + a->stage_len - off);
			if (k > max - done)
				k = max - done;
			memcpy(buf + done, a->stage + (off - a->stage_at), k);
			done += k;
			continue;
		}
		if (a->w.next >= a->w.frames)
			break;
		at = a->w.next * (uint64_t)FRAME_WIRE;
		if (off != at || a->e->s != a->s) {
			rc = SPIRT_EBUG;
			break;
		}
		fl = spirt_stream_frame_len(&a->w);
		if (max - done >= fl + SPIRT_MSG_TAG) {
			if ((rc = seal_next(a, (unsigned char *)buf + done,
			    &t, &val)))
				break;
			done += fl + SPIRT_MSG_TAG;
			continue;
		}
		if (done)
			break;          /* the rest next time, whole */
		if (!a->stage && !(a->stage = malloc(FRAME_WIRE))) {
			rc = ENOMEM;
			break;
		}
		if ((rc = seal_next(a, a->stage, &t, &val)))
			break;
		a->stage_at = at;
		a->stage_len = fl + SPIRT_MSG_TAG;
	}
	spirt_txn_abort(t);
	if (rc) {
		a->why = rc;
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return done ? (ssize_t)done : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
stream_free(void *cls)
{
	struct sresp *a = cls;

	if (a->e->s == a->s && a->e->busy)
		a->e->busy--;
	if (a->why)
		logf_(a->srv, 0, "%s: answer cut short: %s", a->key,
		    spirt_strerror(a->why));
	free(a->f0);
	free(a->stage);
	free(a);
}

/*
 * Answer a get with a stream (docs/protocol.md, "Streamed messages"):
 * each frame is sealed when the connection can take it, so that sealing
 * overlaps sending and the member's opening; the value is read from the
 * store as each frame is sealed (struct sresp).
 */
static enum MHD_Result
stream_answer(struct spirt_peersrv *p, struct MHD_Connection *c,
    struct sess *e, uint64_t step,
    const char *key, const unsigned char head[SPIRT_ANS_HEAD],
    const void *val, size_t vlen)
{
	struct MHD_Response *r;
	struct sresp *a;
	enum MHD_Result ok;
	size_t n = SPIRT_ANS_HEAD + vlen;       /* answer head and value */
	size_t total = spirt_stream_size(key, n), f0;

	if (!total || strlen(key) > SPIRT_MSG_KEY_MAX ||
	    !(a = calloc(1, sizeof *a)))
		return MHD_NO;
	a->srv = p;
	a->vlen = vlen;
	snprintf(a->key, sizeof a->key, "%s", key);
	f0 = n < SPIRT_FRAME_BYTES ? n : SPIRT_FRAME_BYTES;
	if (!(a->f0 = malloc(f0))) {
		free(a);
		return MHD_NO;
	}
	memcpy(a->f0, head, SPIRT_ANS_HEAD);
	if (f0 > SPIRT_ANS_HEAD)
		memcpy(a->f0 + SPIRT_ANS_HEAD, val, f0 - SPIRT_ANS_HEAD);
	if (spirt_stream_seal_begin(&a->w, e->s, a->head, sizeof a->head,
	    &a->hlen, step, key, n)) {
		free(a->f0);
		free(a);
		return MHD_NO;
	}
	a->e = e;
	a->s = e->s;
	e->busy++;
	r = MHD_create_response_from_callback(total, STREAM_BLOCK,
	    stream_read, a, stream_free);
	if (!r) {
		stream_free(a);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "application/octet-stream");
	ok = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

static const char *const opname[] = { "?", "get", "put", "del", "list" };

/* the sealed answer to op (a stream for a get that asked for one) */
static enum MHD_Result
reply(struct spirt_peersrv *p, struct MHD_Connection *c, const char *from,
    struct sess *e, int op, int more, int st, uint64_t counter,
    uint64_t step, const char *key, unsigned flags, const void *val,
    size_t vlen, const char *what)
{
	unsigned char head[SPIRT_ANS_HEAD], *out;
	size_t klen = strlen(key), cap, olen;
	int rc;

	memset(head, 0, sizeof head);
	head[0] = (unsigned char)op;
	head[1] = more ? SPIRT_ANS_MORE : 0;
	spirt_le_put16(head + 2, (uint16_t)st);
	spirt_le_put64(head + 8, counter);
	if (op == SPIRT_OP_GET && st == SPIRT_ST_OK &&
	    (flags & SPIRT_REQ_STREAM)) {
		enum MHD_Result ok = stream_answer(p, c, e, step, key, head,
		    val, vlen);

		if (ok == MHD_YES)
			p->st.served++;
		else
			logf_(p, 0, "%s: %s: answer: %s", from, what,
			    spirt_strerror(ENOMEM));
		return ok;
	}
	cap = spirt_msg_size(key, SPIRT_ANS_HEAD + vlen);
	if (cap && (out = malloc(cap))) {
		unsigned char *dst = out + SPIRT_MSG_HEAD + klen;

		memcpy(dst, head, SPIRT_ANS_HEAD);
		if (vlen)
			memcpy(dst + SPIRT_ANS_HEAD, val, vlen);
		rc = spirt_session_seal(e->s, out, cap, &olen, step, key,
		    dst, SPIRT_ANS_HEAD + vlen);
	} else {
		out = NULL;
		rc = ENOMEM;
	}
	if (rc) {
		free(out);
		logf_(p, 0, "%s: %s: answer: %s", from, what,
		    spirt_strerror(rc));
		return MHD_NO;
	}
	p->st.served++;
	return answer(c, MHD_HTTP_OK, out, olen, "application/octet-stream");
}

/* ---- waits: a get for a key that is not there yet (peerwait.h) ---- */

static int
park(struct spirt_peersrv *p, struct MHD_Connection *c, struct req *q,
    const struct sess *e, const struct spirt_msg_info *info, uint64_t step,
    unsigned flags, uint32_t wait_ms, const char *what)
{
	if (wait_ms == 0 || !p->wait.watching)
		return 0;
	if (wait_ms > SPIRT_WAIT_MAX_MS)
		wait_ms = SPIRT_WAIT_MAX_MS;
	q->w.conn = c;
	memcpy(q->sid, e->sid, SID_BYTES);
	q->info = *info;
	q->step = step;
	q->flags = flags;
	q->w.until = spirt_clock() + wait_ms / 1e3;
	snprintf(q->what, sizeof q->what, "%s", what);
	if (!spirt_peerwait_park(&p->wait, &q->w))
		return 0;
	q->kind = 4;
	logf_(p, 1, "%s: %s: waiting (up to %u ms)", q->from, what, wait_ms);
	return 1;
}

/* a parked get, resumed: its key asked for again */
static enum MHD_Result
waited(struct spirt_peersrv *p, struct MHD_Connection *c, struct req *q)
{
	struct spirt_txn *t = NULL;
	const void *val = NULL;
	size_t vlen = 0;
	struct sess *e;
	enum MHD_Result ok;
	int rc;

	spirt_peerwait_resumed(&p->wait);
	q->kind = 0;
	if (!(e = sess_find(p, q->sid, spirt_clock())))
		return refuse(p, c, q->from, q->what, SPIRT_ESESSION);
	e->last = spirt_clock();
	if ((rc = spirt_txn_begin(&t, p->conf.store, SPIRT_TXN_RDONLY)) == 0 &&
	    (rc = spirt_store_get(t, q->info.key, &val, &vlen)) == 0 &&
	    vlen > p->conf.max_bytes)
		rc = SPIRT_ETOOBIG;
	if (rc == SPIRT_ENOTFOUND && spirt_peerwait_park(&p->wait, &q->w)) {
		q->kind = 4;
		spirt_txn_abort(t);
		return MHD_YES;
	}
	if (rc && rc != SPIRT_ENOTFOUND)
		logf_(p, 0, "%s: %s: %s", q->from, q->what, spirt_strerror(rc));
	if (rc)
		vlen = 0;
	else
		logf_(p, 1, "%s: %s: %zu bytes (waited)", q->from, q->what,
		    vlen);
	ok = reply(p, c, q->from, e, SPIRT_OP_GET, 0,
	    (int)spirt_code_status(rc), q->info.counter, q->step, q->info.key,
	    q->flags, val, vlen, q->what);
	spirt_txn_abort(t);
	return ok;
}

static enum MHD_Result
do_msg(struct spirt_peersrv *p, struct MHD_Connection *c, struct req *q)
{
	const char *hex = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "Spirt-Session");
	unsigned char sid[SID_BYTES], *pt;
	struct spirt_msg_info info;
	const struct spirt_member *m;
	struct spirt_key_parts kp;
	struct spirt_txn *t = NULL;
	const void *val = NULL;
	struct op o = { 0 };
	struct sess *e;
	uint64_t step;
	size_t n, klen, vlen = 0, bin;
	char what[SPIRT_MSG_KEY_MAX + 64], prefix[SPIRT_MSG_KEY_MAX + 1];
	enum MHD_Result ok;
	int rc, op, st = 0;

	if (!hex || strlen(hex) != 2 * SID_BYTES ||
	    sodium_hex2bin(sid, sizeof sid, hex, 2 * SID_BYTES, NULL, &bin,
	    NULL) || bin != SID_BYTES)
		return refuse(p, c, q->from, "message without a session",
		    SPIRT_ESESSION);
	if (!(e = sess_find(p, sid, spirt_clock())))
		return refuse(p, c, q->from, "message", SPIRT_ESESSION);
	if ((rc = spirt_msg_info(&info, q->buf, q->len)))
		return refuse(p, c, q->from, "message", rc);
	m = spirt_session_peer(e->s);
	snprintf(what, sizeof what, "%s: %s", m->id, info.key);
	klen = strlen(info.key);
	step = spirt_key_wirestep(info.key);
	pt = q->buf + SPIRT_MSG_HEAD + klen;
	if ((rc = spirt_session_open(e->s, pt, q->len - SPIRT_MSG_HEAD - klen,
	    &n, step, info.key, q->buf, q->len)))
		return refuse(p, c, q->from, what, rc);
	e->last = spirt_clock();
	/* counted once it opened: junk under a member's session id, which
	 * travels in the clear, costs that member nothing */
	if ((rc = rate_take(p, m->id, e->last)))
		return refuse(p, c, q->from, what, rc);
	op = n >= SPIRT_REQ_HEAD ? pt[0] : 0;
	if (op < SPIRT_OP_GET || op > SPIRT_OP_LIST)
		return refuse(p, c, q->from, what, SPIRT_EDATA);
	snprintf(what, sizeof what, "%s: %s %s", m->id, opname[op], info.key);
	o.key = info.key;
	if (op == SPIRT_OP_LIST) {
		if (info.key[klen - 1] != '*' || n - SPIRT_REQ_HEAD >
		    SPIRT_MSG_KEY_MAX)
			return refuse(p, c, q->from, what, SPIRT_EDATA);
		memcpy(prefix, info.key, klen - 1);
		prefix[klen - 1] = '\0';
		o.key = prefix;
		/* the key to list after, NUL-terminated in place of the tag */
		memmove(pt, pt + SPIRT_REQ_HEAD, n - SPIRT_REQ_HEAD);
		pt[n - SPIRT_REQ_HEAD] = '\0';
		o.after = (const char *)pt;
	} else {
		o.val = pt + SPIRT_REQ_HEAD;
		o.len = n - SPIRT_REQ_HEAD;
	}
	if ((rc = spirt_peersrv_member_allowed(m->role, p->conf.cred->id,
	    m->id, op, o.key, &o.noover))) {
		/* counted and logged, and answered sealed: the member learns
		 * it for sure */
		member_refused(p, q->from, what, m->role, rc);
		st = (int)spirt_code_status(rc);
		goto seal;
	}
	if (op == SPIRT_OP_PUT && (o.noover || (pt[1] &
	    SPIRT_REQ_NOOVERWRITE)))
		o.noover = 1;
	if (op == SPIRT_OP_PUT && m->role == SPIRT_ROLE_FUNCTION &&
	    spirt_key_parse(&kp, o.key) == 0 && (kp.kind == SPIRT_KEY_GRAD ||
	    kp.kind == SPIRT_KEY_STATE)) {
		o.slot = 1;
		o.step = kp.step;
		o.worker = kp.worker;
	}
	switch (op) {
	case SPIRT_OP_GET:
		if ((rc = spirt_txn_begin(&t, p->conf.store, SPIRT_TXN_RDONLY)))
			break;
		if (!(rc = spirt_store_get(t, o.key, &val, &vlen)) &&
		    vlen > p->conf.max_bytes)
			rc = SPIRT_ETOOBIG;
		/* not there yet: the member may wait for it */
		if (rc == SPIRT_ENOTFOUND && (pt[1] & SPIRT_REQ_WAIT) &&
		    park(p, c, q, e, &info, step, pt[1],
		    spirt_le_get32(pt + 4), what)) {
			spirt_txn_abort(t);
			return MHD_YES;
		}
		break;
	case SPIRT_OP_PUT:
		/* the body's bound has the message's slack on top: the
		 * value itself is held to the bound as a get's is */
		if (o.len > p->conf.max_bytes)
			rc = SPIRT_ETOOBIG;
		else
			rc = spirt_store_write(p->conf.store, put_fn, &o);
		break;
	case SPIRT_OP_DEL:
		rc = spirt_store_write(p->conf.store, del_fn, &o);
		break;
	case SPIRT_OP_LIST:
		if ((rc = spirt_txn_begin(&t, p->conf.store, SPIRT_TXN_RDONLY)))
			break;
		rc = spirt_store_list(t, o.key, list_fn, &o);
		if (rc == 1)
			rc = 0;
		val = o.ent;
		vlen = o.elen;
		break;
	}
	st = (int)spirt_code_status(rc);
	if (o.slot && (rc == SPIRT_ESTEP || rc == SPIRT_EADDR ||
	    rc == SPIRT_EEXIST))
		/* a function's gradient for a slot that is not its to write:
		 * a refusal like the role's */
		member_refused(p, q->from, what, m->role, rc);
	else if (rc && rc != SPIRT_ENOTFOUND && rc != SPIRT_EEXIST)
		logf_(p, 0, "%s: %s: %s", q->from, what, spirt_strerror(rc));
	if (rc)
		vlen = 0;
	else
		logf_(p, 1, "%s: %s: %zu bytes", q->from, what,
		    op == SPIRT_OP_PUT ? o.len : vlen);
seal:
	ok = reply(p, c, q->from, e, op, o.more, st, info.counter, step,
	    info.key, op == SPIRT_OP_GET ? pt[1] : 0, val, vlen, what);
	spirt_txn_abort(t);
	free(o.ent);
	return ok;
}

static void
peername(struct MHD_Connection *c, char *buf, size_t cap)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	char host[64], port[16];
	socklen_t sl;

	snprintf(buf, cap, "?");
	if (!sa)
		return;
	sl = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sizeof(struct sockaddr_in);
	if (getnameinfo(sa, sl, host, sizeof host, port, sizeof port,
	    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(buf, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" :
		    "%s:%s", host, port);
}

/* ---- slow connections ----
 *
 * libmicrohttpd's timeout closes an idle connection, and one that sends
 * a byte now and then is never idle: connections from enough addresses
 * could each hold a slot for as long as they liked, and every slot
 * taken, nobody else is accepted.  So when a connection takes the last
 * free slot, the one that has sent least of its request a second since
 * it began (a connection that is being answered is not a candidate)
 * is closed, counted and logged as an EBUSY refusal: a slot stays free
 * for the next one, which a client sending its request at once keeps.
 * (All of it runs in the server's one thread, as libmicrohttpd calls
 * back: no lock; and it shuts down a socket it notified open and not
 * yet closed, which libmicrohttpd closes only after saying so.) */

static struct conn *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void
conn_shed(struct spirt_peersrv *p, const struct conn *except)
{
	const union MHD_ConnectionInfo *ci;
	struct conn *k, *slow = NULL;
	double now = spirt_clock(), r, least = 0;
	char from[80], what[64];

	for (k = p->conns; k; k = k->next) {
		if (k == except || k->busy)
			continue;
		r = ((double)k->got + 1) / (now - k->t0 > 1e-3 ?
		    now - k->t0 : 1e-3);
		if (!slow || r < least)
			slow = k, least = r;
	}
	if (!slow || !(ci = MHD_get_connection_info(slow->c,
	    MHD_CONNECTION_INFO_CONNECTION_FD)))
		return;
	/* libmicrohttpd closes it when it next reads it */
	(void)shutdown(ci->connect_fd, SHUT_RDWR);
	slow->busy = 1;
	peername(slow->c, from, sizeof from);
	snprintf(what, sizeof what, "slowest of %u connections",
	    p->nconns);
	(void)noted(p, from, what, SPIRT_EBUSY);
}

static void
conn_notify(void *cls, struct MHD_Connection *c, void **sctx,
    enum MHD_ConnectionNotificationCode code)
{
	struct spirt_peersrv *p = cls;
	struct conn *k = *sctx;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!k)
			return;
		if (k->prev)
			k->prev->next = k->next;
		else
			p->conns = k->next;
		if (k->next)
			k->next->prev = k->prev;
		p->nconns--;
		free(k);
		*sctx = NULL;
		return;
	}
	if (!(k = calloc(1, sizeof *k)))
		return;         /* not a candidate: it cannot be shed */
	k->c = c;
	k->t0 = spirt_clock();
	k->next = p->conns;
	if (p->conns)
		p->conns->prev = k;
	p->conns = k;
	*sctx = k;
	if (++p->nconns >= p->conf.max_conns)
		conn_shed(p, k);
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upsize, void **ctx)
{
	struct spirt_peersrv *p = cls;
	struct req *q = *ctx;
	struct conn *k;
	char what[160];

	(void)version;
	if (!q || q->state == REQ_LINE) {
		const char *cl;
		uint64_t len = 0;

		if (!q && !(q = calloc(1, sizeof *q)))
			return MHD_NO;
		*ctx = q;
		q->state = REQ_DONE;    /* unless it passes what follows */
		peername(c, q->from, sizeof q->from);
		snprintf(what, sizeof what, "%.8s %.100s", method, url);
		for (char *s = what; *s; s++)
			if (*s < ' ' || *s > '~')
				*s = '?';
		if (!strcmp(url, "/v1/id") && !strcmp(method, "GET"))
			q->kind = 1, q->max = 0;
		else if (!strcmp(url, "/v1/hs") && !strcmp(method, "POST"))
			q->kind = 2, q->max = SPIRT_HS_MAX;
		else if (!strcmp(url, "/v1/msg") && !strcmp(method, "POST"))
			q->kind = 3, q->max = p->conf.max_bytes + MSG_SLACK;
		else
			return refuse(p, c, q->from, what, SPIRT_EPROTO);
		/* too large: refused before a byte of it is read */
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl) {
			char *end;

			errno = 0;
			len = strtoull(cl, &end, 10);
			if (errno || *end || end == cl)
				len = UINT64_MAX;
		}
		if (len > q->max) {
			q->kind = 0;
			return refuse(p, c, q->from, what, q->max ?
			    SPIRT_ETOOBIG : SPIRT_EDATA);
		}
		q->state = REQ_BODY;
		return MHD_YES;
	}
	if (q->kind != 0 && !*upsize)
		q->state = REQ_DONE;    /* answered now, or parked to be */
	if ((k = conn_of(c)) != NULL) {
		k->got += *upsize;
		k->busy |= !*upsize;
	}
	if (q->kind == 4)
		return waited(p, c, q);
	if (q->kind == 0)
		return MHD_YES;         /* refused: MHD drops the body */
	if (*upsize) {
		size_t n = *upsize;

		if (n > q->max - q->len) {
			/* a body without a Content-Length that passes the
			 * bound: libmicrohttpd takes no answer in the middle
			 * of a body, and reading the rest to answer after it
			 * would be to read what was refused; so counted,
			 * logged, and the connection closed */
			q->kind = 0;
			q->state = REQ_DONE;
			*upsize = 0;
			(void)noted(p, q->from, "body", SPIRT_ETOOBIG);
			return MHD_NO;
		}
		if (q->len + n > q->cap) {
			size_t cap = q->cap ? q->cap : 4096;
			unsigned char *b;

			while (cap < q->len + n)
				cap *= 2;
			if (cap > q->max)
				cap = q->max;
			if (!(b = realloc(q->buf, cap)))
				return MHD_NO;
			q->buf = b;
			q->cap = cap;
		}
		memcpy(q->buf + q->len, upload, n);
		q->len += n;
		*upsize = 0;
		return MHD_YES;
	}
	switch (q->kind) {
	case 1:
		q->kind = 0;
		return do_id(p, c);
	case 2:
		q->kind = 0;
		if (!q->buf)    /* no body: nothing to hand the handshake */
			return refuse(p, c, q->from, "handshake", SPIRT_ETRUNC);
		return do_hs(p, c, q);
	default:
		q->kind = 0;
		if (!q->buf)
			return refuse(p, c, q->from, "message", SPIRT_ETRUNC);
		return do_msg(p, c, q);
	}
}

/*
 * A request's line: its state begins here, so that one libmicrohttpd
 * refuses itself is still counted and logged when it ends (completed()):
 * before the handler sees it (a Content-Length too large to parse,
 * headers over the connection's memory) or after (a malformed chunk).
 */
static void *
urilog(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct req *q = calloc(1, sizeof *q);

	(void)cls;
	if (q) {
		peername(c, q->from, sizeof q->from);
		snprintf(q->what, sizeof q->what, "%.100s", uri);
		for (char *s = q->what; *s; s++)
			if (*s < ' ' || *s > '~')
				*s = '?';
	}
	return q;
}

static void
completed(void *cls, struct MHD_Connection *c, void **ctx,
    enum MHD_RequestTerminationCode why)
{
	struct spirt_peersrv *p = cls;
	struct req *q = *ctx;
	struct conn *k = conn_of(c);
	char what[sizeof q->what + 32];

	if (q && q->state != REQ_DONE && why ==
	    MHD_REQUEST_TERMINATED_WITH_ERROR) {
		/* refused by libmicrohttpd: by its length if it had one */
		const char *cl = MHD_lookup_connection_value(c,
		    MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		int big = cl && *cl && strspn(cl, "0123456789") == strlen(cl);

		if (q->state == REQ_LINE)
			snprintf(what, sizeof what, "%s (headers)", q->what);
		else
			snprintf(what, sizeof what, "body");
		(void)noted(p, q->from, what, big || (q->state == REQ_BODY &&
		    q->len >= q->max) ? SPIRT_ETOOBIG : SPIRT_EDATA);
	}
	if (k) {                /* answered: its next request begins */
		k->busy = 0;
		k->got = 0;
		k->t0 = spirt_clock();
	}
	if (q) {
		free(q->buf);
		free(q);
		*ctx = NULL;
	}
}

static void
mhdlog(void *cls, const char *fmt, va_list ap)
{
	struct spirt_peersrv *p = cls;
	char line[512];
	size_t n;

	vsnprintf(line, sizeof line, fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (p->conf.log)
		p->conf.log(p->conf.logarg, 1, line);
}

int
spirt_peersrv_start(struct spirt_peersrv **out,
    const struct spirt_peersrv_conf *conf, char *msg, size_t cap)
{
	struct addrinfo hints, *ai = NULL;
	const union MHD_DaemonInfo *di;
	struct spirt_peersrv *p;
	char host[64];
	const char *port, *h = conf->listen;
	size_t hn;
	int rc;

	*out = NULL;
	msg[0] = '\0';
	/* addr:port or [v6]:port */
	if (*h == '[') {
		const char *rb = strchr(h, ']');

		if (!rb || rb[1] != ':')
			goto bad;
		hn = (size_t)(rb - h - 1);
		h++;
		port = rb + 2;
	} else {
		const char *colon = strrchr(h, ':');

		if (!colon)
			goto bad;
		hn = (size_t)(colon - h);
		port = colon + 1;
	}
	if (hn == 0 || hn >= sizeof host || !*port)
		goto bad;
	memcpy(host, h, hn);
	host[hn] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
		goto bad;
	if (!(p = calloc(1, sizeof *p)) ||
	    !(p->tab = calloc(conf->max_sessions, sizeof *p->tab)) ||
	    (conf->rate > 0 && !(p->rates = calloc(p->nrates =
	    conf->max_sessions ? conf->max_sessions : 1, sizeof *p->rates)))) {
		if (p)
			free(p->tab);
		free(p);
		freeaddrinfo(ai);
		return ENOMEM;
	}
	p->conf = *conf;
	errno = 0;
	spirt_peerwait_start(&p->wait, p->conf.path);
	p->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_AUTO | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME |
	    (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
	    0, NULL, NULL, handler, p,
	    MHD_OPTION_EXTERNAL_LOGGER, mhdlog, p,
	    MHD_OPTION_SOCK_ADDR, ai->ai_addr,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)conf->max_conns,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)conf->per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(conf->conn_timeout_s ?
	    conf->conn_timeout_s : 60),
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, p,
	    MHD_OPTION_URI_LOG_CALLBACK, urilog, p,
	    MHD_OPTION_NOTIFY_CONNECTION, conn_notify, p,
	    MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!p->d) {
		rc = errno ? errno : EADDRINUSE;
		spirt_peerwait_stop(&p->wait);
		free(p->rates);
		free(p->tab);
		free(p);
		return spirt_msgrc(msg, cap, rc, "%s: cannot listen",
		    conf->listen);
	}
	di = MHD_get_daemon_info(p->d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(p->addr, sizeof p->addr, *conf->listen == '[' ?
	    "[%s]:%u" : "%s:%u", host, di ? (unsigned)di->port : 0);
	*out = p;
	return 0;
bad:
	if (ai)
		freeaddrinfo(ai);
	return spirt_msgf(msg, cap, SPIRT_EINVAL, "%s: not addr:port (a "
	    "numeric address and port)", conf->listen);
}

const char *
spirt_peersrv_addr(const struct spirt_peersrv *p)
{
	return p->addr;
}

void
spirt_peersrv_stop(struct spirt_peersrv *p, struct spirt_peersrv_stats *st)
{
	if (!p)
		return;
	spirt_peerwait_stop(&p->wait);
	MHD_stop_daemon(p->d);
	if (st)
		*st = p->st;
	for (unsigned i = 0; i < p->conf.max_sessions; i++)
		sess_drop(&p->tab[i]);
	free(p->rates);
	free(p->tab);
	free(p);
}
