/* remote.c - a peer's store over HTTP: credentials and the client (ISC) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curldl.h"
#include "io.h"
#include "kv.h"
#include "le.h"
#include "remote.h"
#include "store.h"

#define WINDOW_NS 30000000000u  /* handshake timestamps: 30 s of skew */
#define SID_BYTES 16
#define URL_MAX 300
#define RECV_BUF (256 * 1024)   /* curl's receive buffer */

/* ---- statuses ---- */

static const int stcodes[SPIRT_ST_LAST] = {
	[SPIRT_ST_OK] = 0,
	[SPIRT_ST_NOTFOUND] = SPIRT_ENOTFOUND,
	[SPIRT_ST_EXIST] = SPIRT_EEXIST,
	[SPIRT_ST_ROLE] = SPIRT_EROLE,
	[SPIRT_ST_KEY] = SPIRT_EKEY,
	[SPIRT_ST_TOOBIG] = SPIRT_ETOOBIG,
	[SPIRT_ST_FULL] = SPIRT_EFULL,
	[SPIRT_ST_BUSY] = SPIRT_EBUSY,
	[SPIRT_ST_ERROR] = EIO,
	[SPIRT_ST_ADDR] = SPIRT_EADDR,
	[SPIRT_ST_STEP] = SPIRT_ESTEP,
};

int
spirt_status_code(unsigned st)
{
	return st < SPIRT_ST_LAST ? stcodes[st] : SPIRT_EPROTO;
}

unsigned
spirt_code_status(int rc)
{
	for (unsigned i = 0; i < SPIRT_ST_LAST; i++)
		if (stcodes[i] == rc)
			return i;
	return SPIRT_ST_ERROR;
}

/* the decimal at s up to a NUL or stop; 1 if there is one */
static int
decimal(const char *s, char stop, uint64_t *v)
{
	uint64_t t = 0;

	if (*s < '0' || *s > '9' || (*s == '0' && s[1] != '\0' &&
	    s[1] != stop))
		return 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (t > (UINT64_MAX - 9) / 10)
			return 0;
		t = t * 10 + (uint64_t)(*s - '0');
	}
	if (*s != '\0' && *s != stop)
		return 0;
	*v = t;
	return 1;
}

/* ---- credentials ---- */

static int
readvar(const char *var, const char *path, void **buf, size_t *len,
    char *msg, size_t cap)
{
	int rc;

	if ((rc = spirt_readfile(path, buf, len)))
		return spirt_msgrc(msg, cap, rc, "%s: %s", var, path);
	return 0;
}

/* a file of 64 hex digits and a newline, as keygen prints: 0 or 1 */
static int
hexfile(unsigned char pk[SPIRT_PK_BYTES], const char *path)
{
	char *text;
	size_t len;
	int bad = 1;

	if (spirt_readfile(path, (void **)&text, &len))
		return 1;
	if (len == 2 * SPIRT_PK_BYTES + 1 && text[len - 1] == '\n') {
		text[len - 1] = '\0';
		bad = spirt_pubkey_parse(pk, text) != 0;
	}
	free(text);
	return bad;
}

int
spirt_cred_load(struct spirt_cred **out, const struct spirt_remote_conf *conf,
    unsigned flags, char *msg, size_t cap)
{
	const char *key = conf->key, *tok = conf->token, *group = conf->group,
	    *allow = conf->allow;
	unsigned char gpk[SPIRT_PK_BYTES], pk[SPIRT_PK_BYTES];
	struct spirt_member m;
	struct spirt_cred *c;
	void *text = NULL;
	size_t len, line = 0;
	int rc;

	*out = NULL;
	msg[0] = '\0';
	if ((rc = spirt_crypto_init()))
		return rc;
	if (!(c = calloc(1, sizeof *c)))
		return ENOMEM;
	if (!key || !*key) {
		rc = spirt_msgf(msg, cap, SPIRT_EENV, "SPIRT_KEY: not set "
		    "(the identity key file a remote store needs)");
		goto fail;
	}
	if ((rc = spirt_key_load(&c->key, key))) {
		spirt_msgrc(msg, cap, rc, "SPIRT_KEY: %s", key);
		goto fail;
	}
	spirt_key_public(pk, c->key);
	if (tok && *tok) {
		if ((rc = readvar("SPIRT_TOKEN", tok, &text, &len, msg,
		    cap)))
			goto fail;
		if ((rc = spirt_token_parse(c->token, text, len)) ||
		    (rc = spirt_token_decode(&m, c->token))) {
			spirt_msgrc(msg, cap, rc, "SPIRT_TOKEN: %s", tok);
			goto fail;
		}
		if (memcmp(m.pk, pk, sizeof pk)) {
			rc = spirt_msgf(msg, cap, SPIRT_EUNKNOWNKEY,
			    "SPIRT_TOKEN: %s: a token for another key than "
			    "SPIRT_KEY's", tok);
			goto fail;
		}
		memcpy(c->id, m.id, sizeof c->id);
		memcpy(c->run, m.run, sizeof c->run);
		c->has_token = 1;
		free(text);
		text = NULL;
	} else {
		const char *id = conf->id, *run = conf->run;

		if (!id || !spirt_id_valid(id) || !run ||
		    !spirt_id_valid(run)) {
			rc = spirt_msgf(msg, cap, SPIRT_EENV, "%s: %s",
			    !id || !spirt_id_valid(id) ? "SPIRT_ID" :
			    "SPIRT_RUN", "not set or not an id (or set "
			    "SPIRT_TOKEN)");
			goto fail;
		}
		snprintf(c->id, sizeof c->id, "%s", id);
		snprintf(c->run, sizeof c->run, "%s", run);
	}
	if ((!group || !*group) && (!allow || !*allow)) {
		if (flags & SPIRT_CRED_TRUST_OPTIONAL) {
			*out = c;
			return 0;
		}
		rc = spirt_msgf(msg, cap, SPIRT_EENV, "SPIRT_GROUP, "
		    "SPIRT_ALLOW: neither is set (whom to trust)");
		goto fail;
	}
	if (group && *group) {
		if (!(strlen(group) == 2 * SPIRT_PK_BYTES &&
		    spirt_pubkey_parse(gpk, group) == 0) &&
		    (rc = spirt_pubkey_load(gpk, group)) &&
		    (rc != SPIRT_EKEYFILE || hexfile(gpk, group))) {
			spirt_msgrc(msg, cap, rc, "SPIRT_GROUP: %s", group);
			goto fail;
		}
	}
	if ((rc = spirt_trust_new(&c->trust, c->run, group && *group ? gpk :
	    NULL, WINDOW_NS)))
		goto fail;
	if (allow && *allow) {
		if ((rc = readvar("SPIRT_ALLOW", allow, &text, &len, msg,
		    cap)))
			goto fail;
		if ((rc = spirt_trust_allow_parse(c->trust, text, len, &line))) {
			spirt_msgrc(msg, cap, rc, "SPIRT_ALLOW: %s:%zu", allow,
			    line);
			goto fail;
		}
	}
	free(text);
	*out = c;
	return 0;
fail:
	free(text);
	spirt_cred_free(c);
	return rc;
}

void
spirt_cred_free(struct spirt_cred *c)
{
	if (!c)
		return;
	spirt_key_free(c->key);
	spirt_trust_free(c->trust);
	free(c);
}

/* ---- the client ---- */

int
spirt_remote_global_init(void)
{
	const struct spirt_curl *cu;
	int rc;

	if ((rc = spirt_curl_load(&cu)))
		return rc;
	return cu->global_init(CURL_GLOBAL_DEFAULT) ? SPIRT_EBUG : 0;
}

const char *
spirt_remote_global_error(void)
{
	return spirt_curl_error();
}

void
spirt_remote_global_cleanup(void)
{
	const struct spirt_curl *cu;

	if (spirt_curl_load(&cu) == 0)
		cu->global_cleanup();
}

/*
 * A sealed answer as it arrives (the write callback's state): its header
 * and key, then either the whole message into r->buf, sized once from the
 * header (type 1), or a stream whose frames are opened as each one is
 * complete, in place in the value's buffer, which is then handed to the
 * caller as it is (type 2).
 */
struct rx {
	int on;                         /* parse the body as a message */
	int rc;                         /* why the transfer was stopped */
	uint64_t step;                  /* what it must be for */
	const char *key;
	unsigned char head[SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX];
	size_t have, hlen;              /* header bytes had, needed */
	int type;                       /* 0 until the header is in */
	uint64_t total, got;            /* the message's bytes, arrived */
	struct spirt_stream st;
	unsigned char ans[SPIRT_ANS_HEAD];
	unsigned char *val;             /* stream: the value (owned) */
	size_t vlen;
	size_t fl, fhave;               /* the frame: plaintext, bytes had */
	uint64_t p0;                    /* its first plaintext byte */
};

struct spirt_remote {
	const struct spirt_curl *cu;    /* libcurl (lib/curldl.h) */
	CURL *curl;
	const struct spirt_cred *c;
	char base[URL_MAX];             /* http://host:port */
	char shown[URL_MAX];            /* the URL as given, for messages */
	char peer[SPIRT_ID_MAX + 1];    /* server id, pinned or learnt */
	int pinned;
	struct spirt_session *s;
	char sid[2 * SID_BYTES + 1];    /* hex */
	unsigned timeout_ms;
	double end;                     /* the operation's deadline (s) */
	uint64_t max;                   /* largest answer body */
	unsigned char *buf;             /* the answer */
	size_t len, cap;
	int toobig;
	int started;                    /* the body's first bytes came */
	curl_off_t clen;                /* its Content-Length, or -1 */
	struct rx rx;
	unsigned char *stage;           /* a stream's frame 0 */
	int (*cancelled)(void);         /* non-zero: stop the request */
	int (*aborted)(void *);         /* the same, asked with abort_arg */
	void *abort_arg;
	long http;
	char msg[600];
	char ebuf[CURL_ERROR_SIZE];
};

/* "http://[ID@]host[:port][/]" */
static int
parse_url(struct spirt_remote *r, const char *url)
{
	const char *p = url + 7, *at, *end, *colon;
	char host[256];
	size_t hn;
	uint64_t port = 7070;

	if (strncmp(url, "https://", 8) == 0)
		return SPIRT_ENOTSUP;
	if (strncmp(url, "http://", 7) != 0 || strlen(url) >= URL_MAX - 8)
		return SPIRT_EURL;
	end = p + strcspn(p, "/");
	if (*end == '/' && end[1] != '\0')
		return SPIRT_EURL;              /* no path */
	at = memchr(p, '@', (size_t)(end - p));
	if (at) {
		size_t n = (size_t)(at - p);

		if (n > SPIRT_ID_MAX)
			return SPIRT_EURL;
		memcpy(r->peer, p, n);
		r->peer[n] = '\0';
		if (!spirt_id_valid(r->peer))
			return SPIRT_EURL;
		r->pinned = 1;
		p = at + 1;
	}
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb)
			return SPIRT_EURL;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		if (rb + 1 != end && !colon)
			return SPIRT_EURL;
		hn = (size_t)(rb + 1 - p);
		for (const char *q = p + 1; q < rb; q++)
			if (!strchr("0123456789abcdefABCDEF:.", *q))
				return SPIRT_EURL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		hn = (size_t)((colon ? colon : end) - p);
		for (const char *q = p; q < p + hn; q++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *q))
				return SPIRT_EURL;
	}
	if (hn == 0 || hn >= sizeof host)
		return SPIRT_EURL;
	memcpy(host, p, hn);
	host[hn] = '\0';
	if (colon) {
		char num[8];
		size_t n = (size_t)(end - colon - 1);

		if (n == 0 || n >= sizeof num)
			return SPIRT_EURL;
		memcpy(num, colon + 1, n);
		num[n] = '\0';
		if (!decimal(num, '\0', &port) || port == 0 || port > 65535)
			return SPIRT_EURL;
	}
	snprintf(r->base, sizeof r->base, "http://%s:%u", host,
	    (unsigned)port);
	return 0;
}

int
spirt_remote_open(struct spirt_remote **out, const char *url,
    const struct spirt_cred *c, unsigned timeout_ms)
{
	struct spirt_remote *r;
	int rc;

	*out = NULL;
	if (timeout_ms == 0)
		return SPIRT_EINVAL;
	if (!(r = calloc(1, sizeof *r)))
		return ENOMEM;
	r->c = c;
	r->timeout_ms = timeout_ms;
	r->max = SPIRT_REMOTE_MAX_BYTES;
	snprintf(r->shown, sizeof r->shown, "%s", url);
	if ((rc = parse_url(r, url))) {
		free(r);
		return rc;
	}
	if ((rc = spirt_curl_load(&r->cu))) {
		free(r);
		return rc;
	}
	if (!(r->curl = r->cu->easy_init())) {
		free(r);
		return ENOMEM;
	}
	*out = r;
	return 0;
}

void
spirt_remote_close(struct spirt_remote *r)
{
	if (!r)
		return;
	if (r->curl)
		r->cu->easy_cleanup(r->curl);
	spirt_session_free(r->s);
	free(r->buf);
	free(r->rx.val);
	free(r->stage);
	free(r);
}

const char *
spirt_remote_peer(const struct spirt_remote *r)
{
	return r->peer;
}

const char *
spirt_remote_msg(const struct spirt_remote *r)
{
	return r->msg;
}

void
spirt_remote_set_timeout(struct spirt_remote *r, unsigned timeout_ms)
{
	if (timeout_ms > 0)
		r->timeout_ms = timeout_ms;
}

void
spirt_remote_set_max(struct spirt_remote *r, uint64_t max_bytes)
{
	r->max = max_bytes;
}

void
spirt_remote_set_cancel(struct spirt_remote *r, int (*cancelled)(void))
{
	r->cancelled = cancelled;
}

void
spirt_remote_set_abort(struct spirt_remote *r, int (*aborted)(void *),
    void *arg)
{
	r->aborted = aborted;
	r->abort_arg = arg;
}

/* libcurl's progress callback: asks whether to stop (about once a second
 * while nothing moves, more often while it does) */
static int
progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	struct spirt_remote *r = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return (r->cancelled && r->cancelled()) ||
	    (r->aborted && r->aborted(r->abort_arg));
}

/* the largest answer: a value plus its framing, one tag per frame */
static uint64_t
limit(const struct spirt_remote *r)
{
	return r->max + SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX + SPIRT_ANS_HEAD +
	    SPIRT_MSG_TAG * spirt_stream_frames(r->max + SPIRT_ANS_HEAD);
}

/* room for need bytes in r->buf, grown once to need when it can be */
static int
reserve(struct spirt_remote *r, size_t need)
{
	unsigned char *b;

	if (need <= r->cap)
		return 0;
	if (!(b = realloc(r->buf, need)))
		return ENOMEM;
	r->buf = b;
	r->cap = need;
	return 0;
}

/* the header is in: a single message goes whole to r->buf, a stream
 * begins (its header checked before a byte of payload is taken) */
static int
rx_start(struct spirt_remote *r)
{
	struct rx *x = &r->rx;
	size_t n;
	int rc;

	if (x->type == SPIRT_MSG_SINGLE) {
		if ((rc = reserve(r, (size_t)x->total)))
			return rc;
		memcpy(r->buf, x->head, x->hlen);
		r->len = x->hlen;
		return 0;
	}
	if ((rc = spirt_stream_open_begin(&x->st, r->s, x->head, x->hlen,
	    x->step, x->key, &n)))
		return rc;
	if (n < SPIRT_ANS_HEAD)
		return SPIRT_EPROTO;
	if (!r->stage && !(r->stage = malloc(SPIRT_FRAME_BYTES +
	    SPIRT_MSG_TAG)))
		return ENOMEM;
	/* room for the last frame's tag after the value */
	x->vlen = n - SPIRT_ANS_HEAD;
	if (!(x->val = malloc(x->vlen + SPIRT_MSG_TAG)))
		return ENOMEM;
	x->fl = spirt_stream_frame_len(&x->st);
	return 0;
}

/* a frame is in: open it in place (frame 0 in the stage: it holds the
 * answer's head) */
static int
rx_frame(struct spirt_remote *r)
{
	struct rx *x = &r->rx;
	unsigned char *at = x->p0 ? x->val + x->p0 - SPIRT_ANS_HEAD : r->stage;
	int rc;

	if ((rc = spirt_stream_open_frame(&x->st, at, at, x->fl +
	    SPIRT_MSG_TAG)))
		return rc;
	if (x->p0 == 0) {
		memcpy(x->ans, r->stage, SPIRT_ANS_HEAD);
		memcpy(x->val, r->stage + SPIRT_ANS_HEAD, x->fl -
		    SPIRT_ANS_HEAD);
	}
	x->p0 += x->fl;
	x->fl = spirt_stream_frame_len(&x->st);
	x->fhave = 0;
	return 0;
}

/* n more bytes of a sealed answer */
static int
rx_feed(struct spirt_remote *r, const unsigned char *d, size_t n)
{
	struct rx *x = &r->rx;
	size_t k;
	int rc, type;

	x->got += n;
	if (x->hlen && x->got > x->total)
		return SPIRT_EDATA;     /* more than its header says */
	while (n > 0) {
		if (!x->type) {
			size_t want = x->hlen ? x->hlen : SPIRT_MSG_HEAD;

			k = want - x->have < n ? want - x->have : n;
			memcpy(x->head + x->have, d, k);
			x->have += k;
			d += k;
			n -= k;
			if (x->have < want)
				break;
			if ((rc = spirt_msg_peek(x->head, x->have, &type,
			    &x->hlen, &x->total)))
				return rc;
			if (x->total > limit(r)) {
				r->toobig = 1;
				return SPIRT_EPROTO;
			}
			if ((r->clen >= 0 && (uint64_t)r->clen != x->total) ||
			    x->got > x->total)
				return SPIRT_EPROTO;
			if (x->hlen > x->have)
				continue;       /* the key still to come */
			x->type = type;
			if ((rc = rx_start(r)))
				return rc;
			continue;
		}
		if (x->type == SPIRT_MSG_SINGLE) {
			memcpy(r->buf + r->len, d, n);
			r->len += n;
			break;
		}
		/* a whole frame in what came: opened from there into the
		 * value, no copy */
		if (x->p0 && x->fhave == 0 && n >= x->fl + SPIRT_MSG_TAG) {
			k = x->fl + SPIRT_MSG_TAG;
			if ((rc = spirt_stream_open_frame(&x->st, x->val +
			    x->p0 - SPIRT_ANS_HEAD, d, k)))
				return rc;
			d += k;
			n -= k;
			x->p0 += x->fl;
			x->fl = spirt_stream_frame_len(&x->st);
			continue;
		}
		/* a frame: ciphertext then tag, contiguous where it opens */
		k = x->fl + SPIRT_MSG_TAG - x->fhave;
		if (k > n)
			k = n;
		memcpy((x->p0 ? x->val + x->p0 - SPIRT_ANS_HEAD : r->stage) +
		    x->fhave, d, k);
		x->fhave += k;
		d += k;
		n -= k;
		if (x->fhave == x->fl + SPIRT_MSG_TAG && (rc = rx_frame(r)))
			return rc;
	}
	return 0;
}

/* a sealed answer for step and key is expected next (key NULL: none) */
static void
rx_reset(struct spirt_remote *r, uint64_t step, const char *key)
{
	free(r->rx.val);
	memset(&r->rx, 0, sizeof r->rx);
	r->rx.on = key != NULL;
	r->rx.step = step;
	r->rx.key = key;
}

static size_t
sink(char *data, size_t size, size_t nmemb, void *arg)
{
	struct spirt_remote *r = arg;
	size_t n = size * nmemb;
	uint64_t lim = limit(r);

	if (!r->started) {
		r->started = 1;
		r->cu->easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->http);
		if (r->cu->easy_getinfo(r->curl,
		    CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->clen) != CURLE_OK)
			r->clen = -1;
		r->rx.on = r->rx.on && r->http == 200;
		/* sized once from Content-Length, when it is in bounds */
		if (!r->rx.on && r->clen > 0 && (uint64_t)r->clen <= lim &&
		    reserve(r, (size_t)r->clen))
			return 0;
	}
	if (r->rx.on) {
		if ((r->rx.rc = rx_feed(r, (const unsigned char *)data, n)))
			return 0;
		return n;
	}
	if ((uint64_t)r->len + n > lim) {
		r->toobig = 1;
		return 0;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;

		while (cap < r->len + n)
			cap *= 2;
		if (reserve(r, cap))
			return 0;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	return n;
}

static int
curlcode(struct spirt_remote *r, CURLcode cc)
{
	const char *why = r->ebuf[0] ? r->ebuf : r->cu->easy_strerror(cc);

	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_ETIMEDOUT,
		    "%s: no answer within %u ms (%s)", r->shown,
		    r->timeout_ms, why);
	case CURLE_COULDNT_CONNECT: case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING:
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EUNREACH,
		    "%s: %s", r->shown, why);
	case CURLE_ABORTED_BY_CALLBACK:
		return spirt_msgf(r->msg, sizeof r->msg, EINTR,
		    "%s: request stopped", r->shown);
	case CURLE_PARTIAL_FILE:
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_ETRUNC,
		    "%s: answer cut short (%s)", r->shown, why);
	case CURLE_WRITE_ERROR:
		if (!r->toobig)
			return spirt_msgf(r->msg, sizeof r->msg, ENOMEM,
			    "%s: answer", r->shown);
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EPROTO,
		    "%s: answer larger than %llu bytes", r->shown,
		    (unsigned long long)r->max);
	case CURLE_OUT_OF_MEMORY:
		return spirt_msgf(r->msg, sizeof r->msg, ENOMEM, "%s: %s",
		    r->shown, why);
	default:
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EPROTO,
		    "%s: %s", r->shown, why);
	}
}

/*
 * One HTTP exchange: GET path (body NULL) or POST body.  On 0, r->http is
 * the status and r->buf, r->len the answer; any status but 200 is turned
 * into the refusal code its one-line reason names.
 */
static int
http(struct spirt_remote *r, const char *path, const void *body, size_t n)
{
	struct curl_slist *h = NULL, *h2;
	char url[URL_MAX + 16], sess[64];
	double left = r->end - spirt_clock();
	long ms = left * 1e3 < 1 ? 1 : (long)(left * 1e3 + 0.5);
	CURLcode cc;
	int rc = 0;

	/* the whole operation (its id, handshake, message, a retry) has
	 * one deadline: each request gets what is left of it */
	if (left <= 0)
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_ETIMEDOUT,
		    "%s%s: no answer within %u ms", r->shown, path,
		    r->timeout_ms);
	snprintf(url, sizeof url, "%s%s", r->base, path);
	r->len = 0;
	r->toobig = 0;
	r->started = 0;
	r->clen = -1;
	r->http = 0;
	r->ebuf[0] = '\0';
	r->cu->easy_reset(r->curl);
	r->cu->easy_setopt(r->curl, CURLOPT_URL, url);
	r->cu->easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	r->cu->easy_setopt(r->curl, CURLOPT_PROXY, "");   /* peers, directly */
	r->cu->easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, ms);
	r->cu->easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, ms);
	/* larger reads: fewer calls of the write callback */
	r->cu->easy_setopt(r->curl, CURLOPT_BUFFERSIZE, (long)RECV_BUF);
	if (r->cancelled || r->aborted) {
		r->cu->easy_setopt(r->curl, CURLOPT_NOPROGRESS, 0L);
		r->cu->easy_setopt(r->curl, CURLOPT_XFERINFOFUNCTION, progress);
		r->cu->easy_setopt(r->curl, CURLOPT_XFERINFODATA, r);
	}
	r->cu->easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, sink);
	r->cu->easy_setopt(r->curl, CURLOPT_WRITEDATA, r);
	r->cu->easy_setopt(r->curl, CURLOPT_ERRORBUFFER, r->ebuf);
	r->cu->easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http");
	if (body) {
		/* no "Expect: 100-continue" round trip */
		if (!(h = r->cu->slist_append(NULL, "Expect:")) ||
		    !(h2 = r->cu->slist_append(h, "Content-Type: "
		    "application/octet-stream")))
			goto nomem;
		h = h2;
		if (!strcmp(path, "/v1/msg")) {
			snprintf(sess, sizeof sess, "Spirt-Session: %s",
			    r->sid);
			if (!(h2 = r->cu->slist_append(h, sess)))
				goto nomem;
			h = h2;
		}
		r->cu->easy_setopt(r->curl, CURLOPT_HTTPHEADER, h);
		r->cu->easy_setopt(r->curl, CURLOPT_POST, 1L);
		r->cu->easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
		r->cu->easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)n);
	}
	cc = r->cu->easy_perform(r->curl);
	r->cu->slist_free_all(h);
	if (cc == CURLE_WRITE_ERROR && r->rx.rc)
		return r->rx.rc;        /* the answer, refused as it came */
	if (cc != CURLE_OK)
		return curlcode(r, cc);
	r->cu->easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->http);
	if (r->http == 200 && r->rx.on && !r->started)
		return SPIRT_ETRUNC;    /* no message at all */
	if (r->http != 200) {
		char line[200], name[32];
		size_t k = 0;

		while (k < r->len && k < sizeof line - 1 && r->buf[k] != '\n' &&
		    r->buf[k] >= ' ' && r->buf[k] <= '~') {
			line[k] = (char)r->buf[k];
			k++;
		}
		line[k] = '\0';
		k = strcspn(line, ":");
		rc = 0;
		if (line[k] == ':' && k < sizeof name) {
			memcpy(name, line, k);
			name[k] = '\0';
			rc = spirt_errcode(name);
		}
		/* a refusal names its code; data answers are sealed */
		if (rc == 0 || rc == SPIRT_ENOTFOUND || rc == SPIRT_EEXIST ||
		    rc == SPIRT_EOF)
			rc = r->http >= 500 ? SPIRT_EBUSY : SPIRT_EPROTO;
		return spirt_msgf(r->msg, sizeof r->msg, rc,
		    "%s%s: HTTP %ld: %s", r->shown, path, r->http,
		    *line ? line : "(no reason)");
	}
	return 0;
nomem:
	r->cu->slist_free_all(h);
	return ENOMEM;
}

/* GET /v1/id: kv.h's record of TYPE=spirt-peer, its ID= and RUN= */
static int
learn_id(struct spirt_remote *r)
{
	struct spirt_kvr k;
	char id[SPIRT_ID_MAX + 1] = "", run[SPIRT_ID_MAX + 1] = "";
	int rc;

	rx_reset(r, 0, NULL);
	if ((rc = http(r, "/v1/id", NULL, 0)))
		return rc;
	if (r->len >= 256 || spirt_kvr_open(&k, r->buf ? (const char *)r->buf :
	    "", r->len, "spirt-peer", NULL, 0))
		goto bad;
	while ((rc = spirt_kvr_next(&k)) == 0)
		if (spirt_kvr_is(&k, "ID") ? spirt_kvr_str(&k, id, sizeof id) :
		    !spirt_kvr_is(&k, "RUN") || spirt_kvr_str(&k, run,
		    sizeof run))
			goto bad;
	if (rc != SPIRT_EOF || !spirt_id_valid(id) || !spirt_id_valid(run))
		goto bad;
	if (strcmp(run, r->c->run))
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_ERUN,
		    "%s: serves run %s, not %s", r->shown, run, r->c->run);
	/* valid: at most SPIRT_ID_MAX bytes (memcpy: -O1 cannot tell) */
	memcpy(r->peer, id, strlen(id) + 1);
	return 0;
bad:
	return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EPROTO,
	    "%s/v1/id: not a spirt peer's answer", r->shown);
}

static const char hexd[] = "0123456789abcdef";

static int
handshake(struct spirt_remote *r)
{
	unsigned char m1[SPIRT_HS_MAX];
	struct spirt_self self = { r->c->key, r->c->id,
	    r->c->has_token ? r->c->token : NULL };
	struct spirt_hs *hs;
	size_t n1;
	int rc;

	spirt_session_free(r->s);
	r->s = NULL;
	if (!r->pinned && (rc = learn_id(r)))
		return rc;
	if ((rc = spirt_hs_init(&hs, m1, sizeof m1, &n1, &self, r->c->trust,
	    r->peer, spirt_crypto_now())))
		return spirt_msgrc(r->msg, sizeof r->msg, rc,
		    "%s: handshake", r->shown);
	rx_reset(r, 0, NULL);
	if ((rc = http(r, "/v1/hs", m1, n1)))
		goto out;
	if (r->len < SID_BYTES + SPIRT_HS_BYTES) {
		rc = spirt_msgf(r->msg, sizeof r->msg, SPIRT_EPROTO,
		    "%s: handshake: short answer (%zu bytes)", r->shown,
		    r->len);
		goto out;
	}
	if ((rc = spirt_hs_finish(&r->s, hs, r->c->trust, r->buf + SID_BYTES,
	    r->len - SID_BYTES, spirt_crypto_now(), SPIRT_ROLE_PEER))) {
		spirt_msgrc(r->msg, sizeof r->msg, rc,
		    "%s: handshake answer from %s", r->shown, r->peer);
		goto out;
	}
	for (int i = 0; i < SID_BYTES; i++) {
		r->sid[2 * i] = hexd[r->buf[i] >> 4];
		r->sid[2 * i + 1] = hexd[r->buf[i] & 15];
	}
	r->sid[2 * SID_BYTES] = '\0';
out:
	spirt_hs_free(hs);
	return rc;
}

/*
 * One sealed request: op with flags for step and wire key, carrying n
 * bytes of body, within one deadline (r->timeout_ms from now) for all it
 * takes: the server's id, a handshake, the message, one retry.  On 0,
 * *aflags is the answer's flags and its payload after its head is either
 * *ans, *alen (in r->buf, valid until the next request), or, for a
 * streamed answer, r->rx.val, r->rx.vlen (*ans NULL; the caller takes it).
 */
static int
call(struct spirt_remote *r, int op, unsigned flags, uint32_t arg,
    uint64_t step, const char *wkey, const void *body, size_t n,
    unsigned char **ans, size_t *alen, unsigned *aflags)
{
	size_t klen = strlen(wkey), mlen, len, pn = 0;
	unsigned char *out = NULL, *pt, *head = NULL;
	uint64_t ctr;
	int rc, tries = 0;
	unsigned st;

	r->end = spirt_clock() + r->timeout_ms / 1e3;
	*ans = NULL;
	*alen = 0;
	if (n > SIZE_MAX - SPIRT_REQ_HEAD ||
	    !(mlen = spirt_msg_size(wkey, SPIRT_REQ_HEAD + n)))
		return SPIRT_EKEY;
	if (!(out = malloc(mlen)))
		return ENOMEM;
again:
	if (!r->s && (rc = handshake(r))) {
		/* a first message refused as not new: another instance of
		 * this identity (a function's) got there first with a newer
		 * one, beyond what the server remembers; a fresh one is new */
		if (rc == SPIRT_EREPLAY && tries++ == 0)
			goto again;
		goto out;
	}
	pt = out + SPIRT_MSG_HEAD + klen;
	memset(pt, 0, SPIRT_REQ_HEAD);
	pt[0] = (unsigned char)op;
	pt[1] = (unsigned char)flags;
	spirt_le_put32(pt + 4, arg);
	if (n)
		memcpy(pt + SPIRT_REQ_HEAD, body, n);
	if ((rc = spirt_session_seal(r->s, out, mlen, &len, step, wkey, pt,
	    SPIRT_REQ_HEAD + n))) {
		if (rc == EOVERFLOW && tries++ == 0) {
			spirt_session_free(r->s);
			r->s = NULL;
			goto again;
		}
		goto out;
	}
	ctr = spirt_le_get64(out + 8);
	rx_reset(r, step, wkey);
	rc = http(r, "/v1/msg", out, len);
	if (rc == SPIRT_ESESSION && tries++ == 0) {
		/* the server dropped the session (restart, idle): again */
		spirt_session_free(r->s);
		r->s = NULL;
		goto again;
	}
	if (rc)
		goto said;
	if (r->rx.type == SPIRT_MSG_STREAM) {
		/* every frame opened as it came; the last one ends it; only
		 * a value asked for as a stream may come as one (a listing
		 * sent so once left *alen unset: fuzz_remote) */
		if (!(flags & SPIRT_REQ_STREAM))
			rc = SPIRT_EPROTO;
		else if (r->rx.got != r->rx.total)
			rc = SPIRT_ETRUNC;
		else
			rc = spirt_stream_open_end(&r->rx.st);
		head = r->rx.ans;
		pn = SPIRT_ANS_HEAD + r->rx.vlen;
	} else {
		head = r->buf + SPIRT_MSG_HEAD + klen;
		if (r->rx.type != SPIRT_MSG_SINGLE || r->len < r->rx.total)
			rc = SPIRT_ETRUNC;
		else
			rc = spirt_session_open(r->s, head, r->len -
			    SPIRT_MSG_HEAD - klen, &pn, step, wkey, r->buf,
			    r->len);
	}
	if (!rc && (pn < SPIRT_ANS_HEAD || head[0] != op ||
	    spirt_le_get64(head + 8) != ctr))
		rc = SPIRT_EPROTO;
said:
	if (rc && r->toobig) {
		spirt_msgf(r->msg, sizeof r->msg, rc, "%s: answer for %s "
		    "larger than %llu bytes", r->shown, wkey,
		    (unsigned long long)r->max);
		goto out;
	}
	if (rc && rc != SPIRT_ETIMEDOUT && rc != SPIRT_EUNREACH &&
	    r->http == 200) {
		spirt_msgrc(r->msg, sizeof r->msg, rc, "%s: answer for %s",
		    r->shown, wkey);
		goto out;
	}
	if (rc)
		goto out;
	st = spirt_le_get16(head + 2);
	if ((rc = spirt_status_code(st))) {
		spirt_msgrc(r->msg, sizeof r->msg, rc, "%s", r->shown);
		goto out;
	}
	if (r->rx.type == SPIRT_MSG_SINGLE) {
		*ans = head + SPIRT_ANS_HEAD;
		*alen = pn - SPIRT_ANS_HEAD;
	}
	*aflags = head[1];
out:
	free(out);
	return rc;
}

static int
keyok(struct spirt_remote *r, const char *key)
{
	size_t n = 0;

	for (; key[n]; n++)
		if (key[n] <= ' ' || key[n] > '~')
			break;
	if (key[n] || n == 0 || n > SPIRT_MSG_KEY_MAX)
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EKEY,
		    "%s: invalid key", r->shown);
	return 0;
}

int
spirt_remote_get(struct spirt_remote *r, uint64_t step, const char *key,
    void **val, size_t *len)
{
	return spirt_remote_get_wait(r, step, key, 0, val, len);
}

int
spirt_remote_get_wait(struct spirt_remote *r, uint64_t step,
    const char *key, unsigned wait_ms, void **val, size_t *len)
{
	unsigned char *a;
	unsigned fl;
	size_t n;
	int rc;

	*val = NULL;
	*len = 0;
	if ((rc = keyok(r, key)) || (rc = call(r, SPIRT_OP_GET,
	    SPIRT_REQ_STREAM | (wait_ms ? SPIRT_REQ_WAIT : 0), wait_ms, step,
	    key, NULL, 0, &a, &n, &fl)))
		return rc;
	if (!a) {       /* streamed: the buffer it was opened in */
		*val = r->rx.val;
		*len = r->rx.vlen;
		r->rx.val = NULL;
		return 0;
	}
	if (!(*val = malloc(n ? n : 1)))
		return ENOMEM;
	memcpy(*val, a, n);
	*len = n;
	return 0;
}

int
spirt_remote_put(struct spirt_remote *r, uint64_t step, const char *key,
    const void *val, size_t len, unsigned flags)
{
	unsigned char *a;
	unsigned fl;
	size_t n;
	int rc;

	if ((rc = keyok(r, key)))
		return rc;
	if (len > r->max)
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_ETOOBIG,
		    "%s: %s: %zu bytes", r->shown, key, len);
	return call(r, SPIRT_OP_PUT, flags & SPIRT_PUT_NOOVERWRITE ?
	    SPIRT_REQ_NOOVERWRITE : 0, 0, step, key, val, len, &a, &n, &fl);
}

int
spirt_remote_del(struct spirt_remote *r, uint64_t step, const char *key)
{
	unsigned char *a;
	unsigned fl;
	size_t n;
	int rc;

	if ((rc = keyok(r, key)))
		return rc;
	return call(r, SPIRT_OP_DEL, 0, 0, step, key, NULL, 0, &a, &n, &fl);
}

int
spirt_remote_list(struct spirt_remote *r, const char *prefix,
    int (*fn)(void *arg, const char *key, size_t len), void *arg)
{
	char wkey[SPIRT_MSG_KEY_MAX + 1], after[SPIRT_MSG_KEY_MAX + 1] = "",
	    key[SPIRT_MSG_KEY_MAX + 1];
	size_t plen = strlen(prefix);
	unsigned char *a;
	unsigned fl;
	size_t n;
	int rc;

	/* the wire key of a listing: the prefix and a star */
	if (plen >= SPIRT_MSG_KEY_MAX || (plen && keyok(r, prefix)))
		return spirt_msgf(r->msg, sizeof r->msg, SPIRT_EKEY,
		    "%s: invalid prefix \"%s\"", r->shown, prefix);
	snprintf(wkey, sizeof wkey, "%s*", prefix);
	do {
		if ((rc = call(r, SPIRT_OP_LIST, 0, 0,
		    spirt_key_wirestep(wkey), wkey, after,
		    strlen(after), &a, &n, &fl)))
			return rc;
		while (n) {
			size_t k;
			uint64_t vlen;

			if (n < SPIRT_LIST_ENTRY ||
			    (k = spirt_le_get16(a)) == 0 ||
			    k > SPIRT_MSG_KEY_MAX ||
			    n - SPIRT_LIST_ENTRY < k)
				return spirt_msgf(r->msg, sizeof r->msg,
				    SPIRT_EPROTO, "%s: malformed listing",
				    r->shown);
			vlen = spirt_le_get64(a + 4);
			memcpy(key, a + SPIRT_LIST_ENTRY, k);
			key[k] = '\0';
			if (strlen(key) != k || strncmp(key, prefix, plen) ||
			    strcmp(key, after) <= 0)
				return spirt_msgf(r->msg, sizeof r->msg,
				    SPIRT_EPROTO, "%s: listing out of order",
				    r->shown);
			memcpy(after, key, k + 1);
			a += SPIRT_LIST_ENTRY + k;
			n -= SPIRT_LIST_ENTRY + k;
			if ((rc = fn(arg, key, (size_t)vlen)))
				return rc;
		}
	} while (fl & SPIRT_ANS_MORE);
	return 0;
}
