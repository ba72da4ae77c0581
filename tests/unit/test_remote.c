/* test_remote.c - the HTTP transport: client, server, refusals */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "assign.h"
#include "check.h"
#include "crypto.h"
#include "le.h"
#include "peersrv.h"
#include "keys.h"
#include "remote.h"
#include "store.h"
#include "tool.h"

/*
 * Without arguments: a server in this process over a store in a temporary
 * directory, its client, and every refusal, checked against the server's
 * counts.  With arguments it is the attacker tests/51-serve.bats uses
 * against a running spirt-peer serve (credentials from SPIRT_KEY, ...):
 *
 *   test_remote attack URL WHAT [KEY]   print the refusal's code name
 *   test_remote raw URL METHOD PATH [BYTES]  print "status reason"
 *   test_remote mint GROUPKEY RUN ID ROLE PUBHEX [SECONDS]   a token
 *       file, expired (or valid for SECONDS), of any id: one invite
 *       refuses (a function's without a binding)
 */

/* ---- raw HTTP ---- */

struct buf {
	unsigned char *p;
	size_t n;
};

static size_t
sink(char *d, size_t s, size_t m, void *arg)
{
	struct buf *b = arg;
	unsigned char *q = realloc(b->p, b->n + s * m + 1);

	if (!q)
		return 0;
	memcpy(q + b->n, d, s * m);
	b->p = q;
	b->n += s * m;
	b->p[b->n] = 0;
	return s * m;
}

/* one request; *status the HTTP status (0: no answer) */
static int
raw(const char *base, const char *method, const char *path, const char *sid,
    const void *body, size_t n, long *status, struct buf *ans)
{
	struct curl_slist *h = NULL;
	char url[512], hdr[80];
	CURL *c = curl_easy_init();
	CURLcode cc;

	ans->p = NULL;
	ans->n = 0;
	*status = 0;
	if (!c)
		return ENOMEM;
	snprintf(url, sizeof url, "%s%s", base, path);
	h = curl_slist_append(h, "Expect:");
	if (sid) {
		snprintf(hdr, sizeof hdr, "Spirt-Session: %s", sid);
		h = curl_slist_append(h, hdr);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)n);
	}
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return cc == CURLE_OK ? 0 : SPIRT_EUNREACH;
}

/* the code name of a refusal's reason ("EREPLAY: ..."), or "OK" on 200 */
static void
reason(char *out, size_t cap, long status, const struct buf *b)
{
	size_t k = 0;

	if (status == 200) {
		snprintf(out, cap, "OK");
		return;
	}
	while (b->p && k < b->n && k + 1 < cap && b->p[k] != ':' &&
	    b->p[k] != '\n') {
		out[k] = (char)b->p[k];
		k++;
	}
	out[k] = '\0';
	if (!k)
		snprintf(out, cap, "HTTP%ld", status);
}

/* ---- a member's session, by hand ---- */

struct sess {
	struct spirt_session *s;
	char sid[40];
};

static int
handshake(const char *base, const struct spirt_cred *c, const char *peer,
    struct sess *out, unsigned char *m1, size_t *n1, char *why, size_t cap)
{
	struct spirt_self self = { c->key, c->id,
	    c->has_token ? c->token : NULL };
	struct spirt_hs *hs;
	struct buf b;
	long st;
	int rc;

	out->s = NULL;
	if ((rc = spirt_hs_init(&hs, m1, SPIRT_HS_MAX, n1, &self, c->trust,
	    peer, spirt_crypto_now())))
		return rc;
	rc = raw(base, "POST", "/v1/hs", NULL, m1, *n1, &st, &b);
	reason(why, cap, st, &b);
	if (!rc && st == 200 && b.n > 16) {
		rc = spirt_hs_finish(&out->s, hs, c->trust, b.p + 16, b.n - 16,
		    spirt_crypto_now(), SPIRT_ROLE_PEER);
		for (int i = 0; i < 16; i++)
			snprintf(out->sid + 2 * i, 3, "%02x", b.p[i]);
	} else if (!rc) {
		rc = SPIRT_EPROTO;
	}
	spirt_hs_free(hs);
	free(b.p);
	return rc;
}

/* a sealed get of key for step; the sealed bytes in *msg (malloc'd) */
static int
sealget(struct sess *s, uint64_t step, const char *key, unsigned char **msg,
    size_t *len)
{
	unsigned char pt[SPIRT_REQ_HEAD] = { SPIRT_OP_GET };
	size_t cap = spirt_msg_size(key, sizeof pt);

	if (!(*msg = malloc(cap)))
		return ENOMEM;
	return spirt_session_seal(s->s, *msg, cap, len, step, key, pt,
	    sizeof pt);
}

/*
 * One attack against the server at base with credentials c (peer id
 * "peer" is the server's); the refusal's code name into why.
 */
static int
attack(const char *base, const struct spirt_cred *c, const char *peer,
    const char *what, const char *key, char *why, size_t cap)
{
	unsigned char m1[SPIRT_HS_MAX], *msg = NULL;
	struct sess s = { NULL, "" };
	struct buf b = { NULL, 0 };
	size_t n1, len;
	long st;
	int rc;

	snprintf(why, cap, "-");
	if (!strcmp(what, "addr")) {            /* to another peer */
		rc = handshake(base, c, "someone-else", &s, m1, &n1, why, cap);
		goto out;
	}
	if ((rc = handshake(base, c, peer, &s, m1, &n1, why, cap)))
		goto out;
	if (!strcmp(what, "hs-replay")) {
		rc = raw(base, "POST", "/v1/hs", NULL, m1, n1, &st, &b);
		reason(why, cap, st, &b);
		goto out;
	}
	if ((rc = sealget(&s, spirt_key_wirestep(key), key, &msg, &len)))
		goto out;
	if (!strcmp(what, "msg-replay")) {
		if ((rc = raw(base, "POST", "/v1/msg", s.sid, msg, len, &st,
		    &b)) || st != 200) {
			reason(why, cap, st, &b);
			goto out;
		}
		free(b.p);
		rc = raw(base, "POST", "/v1/msg", s.sid, msg, len, &st, &b);
	} else if (!strcmp(what, "tamper")) {
		msg[len - 20] ^= 1;             /* a ciphertext byte */
		rc = raw(base, "POST", "/v1/msg", s.sid, msg, len, &st, &b);
	} else if (!strcmp(what, "step")) {     /* sealed for another step */
		free(msg);
		if ((rc = sealget(&s, spirt_key_wirestep(key) + 7, key, &msg,
		    &len)))
			goto out;
		rc = raw(base, "POST", "/v1/msg", s.sid, msg, len, &st, &b);
	} else if (!strcmp(what, "session")) {  /* a session not its own */
		rc = raw(base, "POST", "/v1/msg",
		    "00112233445566778899aabbccddeeff", msg, len, &st, &b);
	} else if (!strcmp(what, "get")) {      /* the genuine request */
		rc = raw(base, "POST", "/v1/msg", s.sid, msg, len, &st, &b);
	} else {
		rc = SPIRT_EINVAL;
		goto out;
	}
	if (!rc)
		reason(why, cap, st, &b);
out:
	free(b.p);
	free(msg);
	spirt_session_free(s.s);
	return rc;
}

/* ---- a man in the middle: the network changes a streamed answer ---- */

enum { MITM_PASS, MITM_FLIP, MITM_CUT, MITM_REPLAY, MITM_DELAY, MITM_HOLD };

/*
 * A relay on 127.0.0.1 to the server at port up, one connection at a
 * time, that does what mode says to the first answer whose body is
 * larger than BIG bytes (the streamed value): flip one bit at body
 * offset off, cut the connection there, or (replay) keep it and send it
 * again in place of the next such answer, which has the same length;
 * or (delay) hold every answer back off milliseconds; or (hold) stop
 * relaying at body offset off, say so in held and go on once release is
 * set, reading the server through a small socket buffer, so that the
 * server cannot seal much more than off bytes ahead.
 */
#define BIG 4096
struct mitm {
	int lfd, port, up, mode, stop, done, seen;
	atomic_int held, release;
	size_t off;
	unsigned char *rec;             /* replay: the answer kept */
	size_t reclen;
	pthread_t th;
};

static int
mitm_connect(int port, int small)
{
	struct sockaddr_in a = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0), sz = 16384;

	if (fd >= 0 && small)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* the server's bytes to the client: headers, then a body of Content-Length */
struct ans_parse {
	char hdr[4096];
	size_t hn;
	uint64_t left, body;            /* body bytes to come, its length */
	int inbody;
	size_t at;                      /* offset in the body */
};

static int
mitm_relay(struct mitm *m, int cfd, int sfd)
{
	struct pollfd pf[2] = { { cfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
	struct ans_parse a = { .hn = 0 };
	unsigned char buf[65536];

	for (;;) {
		if (poll(pf, 2, 200) < 0 || m->stop)
			return 0;
		if (pf[0].revents) {
			ssize_t n = read(cfd, buf, sizeof buf);

			if (n <= 0 || write(sfd, buf, (size_t)n) != n)
				return 0;
		}
		if (!pf[1].revents)
			continue;
		ssize_t n = read(sfd, buf, sizeof buf), i;

		if (n <= 0)
			return 0;
		/* delay: each answer held off ms before its first byte */
		if (m->mode == MITM_DELAY && !a.inbody && a.hn == 0)
			nanosleep(&(struct timespec){ (time_t)(m->off / 1000),
			    (long)(m->off % 1000) * 1000000 }, NULL);
		for (i = 0; i < n; i++) {
			if (!a.inbody) {
				if (a.hn < sizeof a.hdr - 1)
					a.hdr[a.hn++] = (char)tolower(buf[i]);
				a.hdr[a.hn] = '\0';
				if (a.hn >= 4 && !memcmp(a.hdr + a.hn - 4,
				    "\r\n\r\n", 4)) {
					char *cl = strstr(a.hdr,
					    "\ncontent-length:");

					a.body = a.left = cl ? strtoull(cl + 16,
					    NULL, 10) : 0;
					a.inbody = a.left > 0;
					a.at = 0;
					a.hn = 0;
				}
				continue;
			}
			/* a body byte of a big answer: the first is changed
			 * (replay: the first kept, the second replaced) */
			if (a.body > BIG && a.at == 0)
				m->seen++;
			if (a.body > BIG && !m->done) {
				if (m->mode == MITM_FLIP && a.at == m->off) {
					buf[i] ^= 0x10;
					m->done = 1;
				}
				if (m->mode == MITM_CUT && a.at == m->off) {
					m->done = 1;
					break;
				}
				if (m->mode == MITM_HOLD && a.at == m->off) {
					m->done = 1;
					atomic_store(&m->held, 1);
					while (!atomic_load(&m->release) &&
					    !m->stop)
						nanosleep(&(struct timespec){ 0,
						    5000000 }, NULL);
				}
				if (m->mode == MITM_REPLAY && m->seen == 1) {
					if (a.at == 0 && (m->rec =
					    malloc(a.body)))
						m->reclen = a.body;
					if (m->rec)
						m->rec[a.at] = buf[i];
				} else if (m->mode == MITM_REPLAY && m->rec &&
				    m->reclen == a.body && m->seen == 2) {
					buf[i] = m->rec[a.at];
				}
			}
			a.at++;
			if (--a.left == 0)
				a.inbody = 0;
		}
		if (i > 0 && write(cfd, buf, (size_t)i) != i)
			return 0;
		if (i < n)
			return 0;       /* cut */
	}
}

static void *
mitm_main(void *arg)
{
	struct mitm *m = arg;

	while (!m->stop) {
		struct pollfd pf = { m->lfd, POLLIN, 0 };
		int cfd, sfd;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		if ((cfd = accept(m->lfd, NULL, NULL)) < 0)
			continue;
		if ((sfd = mitm_connect(m->up, m->mode == MITM_HOLD)) >= 0) {
			mitm_relay(m, cfd, sfd);
			close(sfd);
		}
		close(cfd);
	}
	return NULL;
}

static int
mitm_start(struct mitm *m, int up, int mode, size_t off)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof a;

	memset(m, 0, sizeof *m);
	m->up = up;
	m->mode = mode;
	m->off = off;
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((m->lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(m->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(m->lfd, 8) != 0 ||
	    getsockname(m->lfd, (struct sockaddr *)&a, &al) != 0)
		return errno;
	m->port = ntohs(a.sin_port);
	return pthread_create(&m->th, NULL, mitm_main, m);
}

static void
mitm_stop(struct mitm *m)
{
	m->stop = 1;
	pthread_join(m->th, NULL);
	close(m->lfd);
	free(m->rec);
}

/* ---- command-line modes, for the bats tests ---- */

static int
cli(int argc, char **argv)
{
	char why[64], msg[600];
	struct spirt_cred *c;
	struct buf b;
	long st;
	int rc;

	if (argc >= 5 && !strcmp(argv[1], "raw")) {
		rc = raw(argv[2], argv[3], argv[4], NULL, argc > 5 ? argv[5] :
		    NULL, argc > 5 ? strlen(argv[5]) : 0, &st, &b);
		reason(why, sizeof why, st, &b);
		printf("%ld %s\n", st, why);
		free(b.p);
		return rc ? 1 : 0;
	}
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "mint")) {
		unsigned char pk[SPIRT_PK_BYTES], tok[SPIRT_TOKEN_BYTES];
		struct spirt_key *g;
		char text[600];
		size_t n;
		uint64_t now = spirt_crypto_now(), from, to;

		/* an hour ago for an hour, or from now for SECONDS */
		from = argc == 8 ? now : now - 7200000000000u;
		to = argc == 8 ? now + strtoull(argv[7], NULL, 10) *
		    1000000000u : now - 3600000000000u;
		if (spirt_key_load(&g, argv[2]) ||
		    spirt_pubkey_parse(pk, argv[6]) ||
		    spirt_token_make(tok, g, argv[3], argv[4], pk,
		    spirt_role_parse(argv[5]), from, to) ||
		    spirt_token_format(text, sizeof text, &n, tok))
			return 1;
		spirt_key_free(g);
		fwrite(text, 1, n, stdout);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "attack")) {
		struct spirt_remote_conf rconf;

		if ((rc = spirt_cred_load(&c, remote_env(&rconf), 0, msg,
		    sizeof msg))) {
			fprintf(stderr, "test_remote: %s\n", msg);
			return 1;
		}
		/* the server's id: GET /v1/id */
		char peer[40] = "", *p;

		if (raw(argv[2], "GET", "/v1/id", NULL, NULL, 0, &st, &b) ||
		    st != 200 || !(p = strstr((char *)b.p, "\nID=")))
			return 1;
		sscanf(p + 4, "%32[A-Za-z0-9._-]", peer);
		free(b.p);
		rc = attack(argv[2], c, peer, argv[3], argc > 4 ? argv[4] :
		    "model/m@0", why, sizeof why);
		spirt_cred_free(c);
		printf("%s\n", why);
		return rc && strcmp(why, "-") == 0 ? 1 : 0;
	}
	fprintf(stderr, "usage: test_remote [attack URL WHAT [KEY] | raw URL "
	    "METHOD PATH [BODY] | mint GROUPKEY RUN ID ROLE PUBHEX "
	    "[SECONDS]]\n");
	return 64;
}

/* ---- in-process ---- */

static char dir[] = "/tmp/test_remote.XXXXXX";

static struct spirt_cred *
member(struct spirt_key *group, const unsigned char *gpk, const char *id,
    int role, int expired)
{
	struct spirt_cred *c = calloc(1, sizeof *c);
	unsigned char pk[SPIRT_PK_BYTES];
	uint64_t now = spirt_crypto_now(), h = 3600000000000u;

	CHECK(c != NULL);
	CHECK_RC(spirt_key_generate(&c->key));
	spirt_key_public(pk, c->key);
	snprintf(c->id, sizeof c->id, "%s", id);
	snprintf(c->run, sizeof c->run, "r1");
	CHECK_RC(spirt_token_make(c->token, group, "r1", id, pk, role,
	    expired ? now - 2 * h : now, expired ? now - h : now + h));
	c->has_token = 1;
	CHECK_RC(spirt_trust_new(&c->trust, "r1", gpk, 30000000000u));
	return c;
}

static int
count(void *arg, const char *key, size_t len)
{
	(void)key;
	(void)len;
	++*(int *)arg;
	return 0;
}

/* model/m@0 and @4, a data set whose assignment has workers 1 and 2 */
static int
put_fn(struct spirt_txn *t, void *arg)
{
	static const int64_t rows[2 * SPIRT_AS_COLS] = {
		1, 0, 0, 5, 0, 0, 0,
		2, 1, 0, 5, 0, 0, 0,
	};
	uint64_t dims[2] = { 2, SPIRT_AS_COLS };
	struct spirt_tensor h;

	(void)arg;
	if (spirt_tensor_init(&h, SPIRT_I64, 2, dims))
		return SPIRT_EBUG;
	h.step = 0;
	return spirt_store_put(t, "model/m@0", "model-bytes", 11, 0) ||
	    spirt_store_put(t, "model/m@4", "model-bytes", 11, 0) ||
	    spirt_store_put(t, "grad/3/0", "g", 1, 0) ||
	    spirt_store_put(t, "data/d/info", "dd", 2, 0) ||
	    spirt_store_put_tensor(t, "data/d/assign", &h, rows, 0);
}

/* one put of "abc" at key (of step 4) as member c, in a session of its own */
static int
put_as(const char *url, const struct spirt_cred *c, const char *key)
{
	struct spirt_remote *r;
	int rc;

	if ((rc = spirt_remote_open(&r, url, c, 5000)))
		return rc;
	rc = spirt_remote_put(r, 4, key, "abc", 3, 0);
	spirt_remote_close(r);
	return rc;
}

static int sessions;            /* handshakes the server answered */

static int cuts;                /* "answer cut short" lines */

static void
logline(void *arg, int level, const char *line)
{
	(void)arg;
	if (level == 1 && strstr(line, "): session"))
		sessions++;
	if (level == 0 && strstr(line, ": answer cut short: "))
		cuts++;
	if (level == 0 && getenv("TEST_REMOTE_LOG"))
		fprintf(stderr, "log: %s\n", line);
}

/* a server's configuration over store s, as the tests here run it */
static void
server_conf(struct spirt_peersrv_conf *c, struct spirt_store *s,
    const struct spirt_cred *srvc, uint64_t max_bytes)
{
	memset(c, 0, sizeof *c);
	c->store = s;
	c->cred = srvc;
	c->listen = "127.0.0.1:0";
	c->max_bytes = max_bytes;
	c->max_sessions = 4;
	c->idle_s = 60;
	c->max_conns = 16;
	c->log = logline;
}

/* values of sizes around the frames' edges, as xagg/3/<i> */
static const size_t sizes[] = { 1, 65520, 65521, 65536, 200000,
    3 * 65536 + 7 };
#define NSIZES (sizeof sizes / sizeof *sizes)

static unsigned char
pattern(size_t i, size_t j)
{
	return (unsigned char)(j * 31 + i * 7 + (j >> 11));
}

static int
put_big(struct spirt_txn *t, void *arg)
{
	char key[32];
	void *dst;
	int rc;

	(void)arg;
	for (size_t i = 0; i < NSIZES; i++) {
		snprintf(key, sizeof key, "xagg/3/%zu", i);
		if ((rc = spirt_store_reserve(t, key, sizes[i], &dst, 0)))
			return rc;
		for (size_t j = 0; j < sizes[i]; j++)
			((unsigned char *)dst)[j] = pattern(i, j);
	}
	return 0;
}

/* a put of key after ms, from another thread (another writer) */
struct later {
	struct spirt_store *s;
	const char *key;
	unsigned ms;
	pthread_t th;
};

static int
later_fn(struct spirt_txn *t, void *arg)
{
	return spirt_store_put(t, ((struct later *)arg)->key, "late!", 5, 0);
}

static void *
later_main(void *arg)
{
	struct later *l = arg;

	nanosleep(&(struct timespec){ l->ms / 1000,
	    (long)(l->ms % 1000) * 1000000 }, NULL);
	if (spirt_store_write(l->s, later_fn, l))
		fprintf(stderr, "later: put failed\n");
	return NULL;
}

/* a get of key at step in another thread: one that waits up to wait_ms
 * for it, or (0) a plain one */
struct waiter {
	struct spirt_remote *r;
	uint64_t step;
	const char *key;
	unsigned wait_ms;
	int rc;
	pthread_t th;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	void *v = NULL;
	size_t n;

	w->rc = w->wait_ms ? spirt_remote_get_wait(w->r, w->step, w->key,
	    w->wait_ms, &v, &n) : spirt_remote_get(w->r, w->step, w->key, &v,
	    &n);
	free(v);
	return NULL;
}

/* gets that wait for their key: with the store's directory watched, and
 * without (asked again every few ms) */
static void
test_waits(struct spirt_store *s, const char *path,
    const struct spirt_cred *srvc, const struct spirt_cred *peer)
{
	struct spirt_peersrv_conf conf = { 0 };
	struct spirt_peersrv *srv;
	struct spirt_remote *r;
	struct later l;
	struct waiter w;
	char msg[600], url[128], key[32];
	void *v = NULL;
	size_t n;
	int rc;

	server_conf(&conf, s, srvc, 1 << 20);
	conf.path = path;
	CHECK_RC(spirt_peersrv_start(&srv, &conf, msg, sizeof msg));
	snprintf(url, sizeof url, "http://p1@%s", spirt_peersrv_addr(srv));
	CHECK_RC(spirt_remote_open(&r, url, peer, 30000));
	/* put 300 ms from now: a wait of 20 s has it */
	snprintf(key, sizeof key, "xagg/8/%s", path ? "w" : "b");
	l.s = s;
	l.key = key;
	l.ms = 300;
	CHECK(pthread_create(&l.th, NULL, later_main, &l) == 0);
	CHECK_RC(spirt_remote_get_wait(r, 8, key, 20000, &v, &n));
	CHECK(v && n == 5 && memcmp(v, "late!", 5) == 0);
	free(v);
	pthread_join(l.th, NULL);
	/* a key that never comes: not found once the wait is over */
	CHECK(spirt_remote_get_wait(r, 8, "xagg/8/never", 200, &v, &n) ==
	    SPIRT_ENOTFOUND);
	/* there already: at once */
	CHECK_RC(spirt_remote_get_wait(r, 8, key, 20000, &v, &n));
	free(v);
	spirt_remote_close(r);
	/* stopped while a get waits: answered, and MHD stops */
	w = (struct waiter){ .step = 9, .key = "xagg/9/never",
	    .wait_ms = 20000 };
	CHECK_RC(spirt_remote_open(&w.r, url, peer, 30000));
	CHECK(pthread_create(&w.th, NULL, waiter_main, &w) == 0);
	nanosleep(&(struct timespec){ 0, 300000000 }, NULL);
	spirt_peersrv_stop(srv, NULL);
	pthread_join(w.th, NULL);
	rc = w.rc;
	CHECK(rc == SPIRT_ENOTFOUND || rc == SPIRT_EUNREACH);
	spirt_remote_close(w.r);
}

/* ---- a value deleted while it is streamed ---- */

#define CUT_BYTES (24u << 20)

static int
put_cut(struct spirt_txn *t, void *arg)
{
	void *dst;
	int rc;

	(void)arg;
	if ((rc = spirt_store_reserve(t, "xagg/3/cut", CUT_BYTES, &dst, 0)))
		return rc;
	for (size_t j = 0; j < CUT_BYTES; j++)
		((unsigned char *)dst)[j] = pattern(9, j);
	return 0;
}

static int
del_cut(struct spirt_txn *t, void *arg)
{
	(void)arg;
	return spirt_store_del(t, "xagg/3/cut");
}

/*
 * A streamed answer reads the value from the store frame by frame
 * (lib/peersrv.c, struct sresp): a value deleted under it cuts the
 * answer short, the member refuses what came (SPIRT_ETRUNC), the server
 * logs the cut, and the session goes on.
 */
static void
test_cut(struct spirt_store *s, const struct spirt_cred *srvc,
    const struct spirt_cred *peer)
{
	struct spirt_peersrv_conf conf = { 0 };
	struct spirt_peersrv *srv;
	struct waiter g = { .step = 3, .key = "xagg/3/cut" };
	struct mitm m;
	char msg[600], url[128];
	void *v;
	size_t n;
	int port, before = cuts;

	CHECK_RC(spirt_store_write(s, put_cut, NULL));
	server_conf(&conf, s, srvc, CUT_BYTES + 4096);
	CHECK_RC(spirt_peersrv_start(&srv, &conf, msg, sizeof msg));
	port = atoi(strrchr(spirt_peersrv_addr(srv), ':') + 1);
	/* held 1 MB in: the server has sealed a few MB at most of 24 */
	CHECK_RC(mitm_start(&m, port, MITM_HOLD, 1u << 20));
	snprintf(url, sizeof url, "http://p1@127.0.0.1:%d", m.port);
	CHECK_RC(spirt_remote_open(&g.r, url, peer, 20000));
	CHECK(pthread_create(&g.th, NULL, waiter_main, &g) == 0);
	for (int i = 0; i < 1000 && !atomic_load(&m.held); i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	CHECK(atomic_load(&m.held));
	CHECK_RC(spirt_store_write(s, del_cut, NULL));
	atomic_store(&m.release, 1);
	pthread_join(g.th, NULL);
	if (g.rc != SPIRT_ETRUNC)
		fprintf(stderr, "cut: got %s (%s)\n", spirt_strerror(g.rc),
		    spirt_remote_msg(g.r));
	CHECK(g.rc == SPIRT_ETRUNC);
	CHECK(cuts == before + 1);
	/* the session goes on, on a new connection */
	CHECK_RC(spirt_remote_get(g.r, 3, "xagg/3/5", &v, &n));
	if (n == sizes[5])
		free(v);
	spirt_remote_close(g.r);
	mitm_stop(&m);
	spirt_peersrv_stop(srv, NULL);
}

/* streamed answers: sizes, one session for many, what the network may
 * do to a stream (each refused), on a server over store s */
static void
test_streams(struct spirt_store *s, const struct spirt_cred *srvc,
    const struct spirt_cred *peer)
{
	struct spirt_peersrv_conf conf = { 0 };
	struct spirt_peersrv *srv;
	struct spirt_remote *r;
	struct mitm m;
	char msg[600], url[128];
	const char *addr;
	void *v;
	size_t n, hl = SPIRT_MSG_HEAD + strlen("xagg/3/5");
	int port, before, bad;

	CHECK_RC(spirt_store_write(s, put_big, NULL));
	server_conf(&conf, s, srvc, 1 << 22);
	CHECK_RC(spirt_peersrv_start(&srv, &conf, msg, sizeof msg));
	addr = spirt_peersrv_addr(srv);
	port = atoi(strrchr(addr, ':') + 1);
	snprintf(url, sizeof url, "http://p1@%s", addr);

	/* every size, twice over one session: one handshake */
	before = sessions;
	CHECK_RC(spirt_remote_open(&r, url, peer, 10000));
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < NSIZES; i++) {
			char key[32];

			snprintf(key, sizeof key, "xagg/3/%zu", i);
			CHECK_RC(spirt_remote_get(r, 3, key, &v, &n));
			CHECK(n == sizes[i]);
			bad = 0;
			for (size_t j = 0; j < n && j < sizes[i]; j++)
				bad |= ((unsigned char *)v)[j] != pattern(i, j);
			CHECK(bad == 0);
			free(v);
		}
	CHECK(spirt_remote_get(r, 3, "xagg/3/p9", &v, &n) == SPIRT_ENOTFOUND);
	spirt_remote_close(r);
	CHECK(sessions == before + 1);

	/* the network changes a frame (the first, a later one's tag), cuts
	 * the stream (at a frame's end, inside one), replays it */
	struct { int mode; size_t off; int want; } att[] = {
		{ MITM_FLIP, hl + 100, SPIRT_EMAC },
		{ MITM_FLIP, hl + 2 * 65552 + 65540, SPIRT_EMAC },
		{ MITM_FLIP, 10, SPIRT_EMAC },  /* the header's counter */
		{ MITM_FLIP, 20, SPIRT_ESTEP },
		{ MITM_CUT, hl + 2 * 65552, SPIRT_ETRUNC },
		{ MITM_CUT, hl + 65552 + 7, SPIRT_ETRUNC },
		{ MITM_CUT, hl - 3, SPIRT_ETRUNC },
		{ MITM_REPLAY, 0, SPIRT_EREPLAY },
		{ MITM_PASS, 0, 0 },
	};
	for (size_t a = 0; a < sizeof att / sizeof *att; a++) {
		int rc;

		CHECK_RC(mitm_start(&m, port, att[a].mode, att[a].off));
		snprintf(url, sizeof url, "http://p1@127.0.0.1:%d", m.port);
		CHECK_RC(spirt_remote_open(&r, url, peer, 10000));
		if (att[a].mode == MITM_REPLAY) {
			CHECK_RC(spirt_remote_get(r, 3, "xagg/3/5", &v, &n));
			free(v);
		}
		rc = spirt_remote_get(r, 3, "xagg/3/5", &v, &n);
		if (rc != att[a].want)
			fprintf(stderr, "stream attack %zu: got %s (%s)\n", a,
			    spirt_strerror(rc), spirt_remote_msg(r));
		CHECK(rc == att[a].want);
		if (rc == 0) {
			CHECK(n == sizes[5]);
			free(v);
		}
		/* the session goes on after a refused answer */
		if (att[a].mode != MITM_CUT) {
			rc = spirt_remote_get(r, 3, "xagg/3/4", &v, &n);
			if (rc)
				fprintf(stderr, "after stream attack %zu: %s\n",
				    a, spirt_remote_msg(r));
			CHECK(rc == 0);
			if (rc == 0)
				free(v);
		}
		spirt_remote_close(r);
		mitm_stop(&m);
	}

	/*
	 * One deadline for the whole request: the server's id, the
	 * handshake and the message are each answered within the timeout
	 * (600 ms late for 1500), but not all three.  With the session
	 * there, the message alone is in time.
	 */
	{
		int rc;

		CHECK_RC(mitm_start(&m, port, MITM_DELAY, 600));
		snprintf(url, sizeof url, "http://127.0.0.1:%d", m.port);
		CHECK_RC(spirt_remote_open(&r, url, peer, 1500));
		rc = spirt_remote_get(r, 3, "xagg/3/0", &v, &n);
		CHECK(rc == SPIRT_ETIMEDOUT);
		if (rc == 0)
			free(v);
		spirt_remote_set_timeout(r, 30000);
		CHECK_RC(spirt_remote_get(r, 3, "xagg/3/0", &v, &n));
		if (n == 1)
			free(v);
		spirt_remote_set_timeout(r, 1500);
		CHECK_RC(spirt_remote_get(r, 3, "xagg/3/0", &v, &n));
		if (n == 1)
			free(v);
		spirt_remote_close(r);
		mitm_stop(&m);
	}
	spirt_peersrv_stop(srv, NULL);
}

int
main(int argc, char **argv)
{
	struct spirt_key *group;
	unsigned char gpk[SPIRT_PK_BYTES];
	struct spirt_cred *srvc, *fn, *fn3, *fnp2, *fnx, *peer, *late,
	    *stranger;
	struct spirt_key *other;
	struct spirt_peersrv_conf conf = { 0 };
	struct spirt_peersrv_stats st;
	struct spirt_peersrv *srv;
	struct spirt_remote *r;
	struct spirt_store *s;
	char msg[600], url[128], why[64];
	void *v;
	size_t n;
	int k, noover;

	if (spirt_crypto_init() || spirt_remote_global_init())
		return 1;
	if (argc > 1)
		return cli(argc, argv);

	/* keys, step bindings, URLs, the role table: no server needed */
	CHECK(spirt_key_wirestep("model/m@12") == 12);
	CHECK(spirt_key_wirestep("grad/7/3") == 7);
	CHECK(spirt_key_wirestep("agg/9") == 9);
	CHECK(spirt_key_wirestep("xagg/4/p1") == 4);
	CHECK(spirt_key_wirestep("data/d/0/x") == 0);
	CHECK(spirt_key_wirestep("grad/7/*") == 7);
	CHECK(spirt_key_wirestep("grad/*") == 0);
	CHECK(spirt_key_wirestep("gagg/5/round") == 5);
	CHECK(spirt_key_wirestep("digest/6/p2") == 6);
	CHECK(spirt_key_wirestep("opt/m@3") == 0);
	CHECK(spirt_key_wirestep("grad/007/1") == 0);
	/* a peer reads the others' aggregates and digests */
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_PEER, SPIRT_OP_GET,
	    "xagg/3/p1", &noover) == 0);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_PEER, SPIRT_OP_GET,
	    "digest/3/p1", &noover) == 0);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_GET,
	    "xagg/3/p1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_GET,
	    "model/m@2", &noover) == 0);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_GET,
	    "data/d/0/x", &noover) == 0);
	/* keys as lib/keys.h parses them: a padded step, a bad worker */
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_PUT,
	    "grad/03/1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_PUT,
	    "grad/3/w", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_PUT,
	    "beat/f1", &noover) == 0);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_PUT,
	    "beat/", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_PUT,
	    "grad/3/1", &noover) == 0 && noover);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_PUT,
	    "model/m@1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_FUNCTION, SPIRT_OP_GET,
	    "agg/3", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_PEER, SPIRT_OP_GET,
	    "agg/3", &noover) == 0);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_PEER, SPIRT_OP_PUT,
	    "grad/3/1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_allowed(SPIRT_ROLE_PEER, SPIRT_OP_DEL,
	    "beat/p1", &noover) == SPIRT_EROLE);
	/* a member puts its own beat, never another's */
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1", "f1",
	    SPIRT_OP_PUT, "beat/f1", &noover) == 0);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_PEER, "p1", "p2",
	    SPIRT_OP_PUT, "beat/p2", &noover) == 0);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_PEER, "p1", "p2",
	    SPIRT_OP_PUT, "beat/p1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1", "f1",
	    SPIRT_OP_PUT, "beat/f10", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1", "f1",
	    SPIRT_OP_PUT, "health/f1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "p1.w1", SPIRT_OP_PUT, "grad/3/1", &noover) == 0 && noover);
	/* a function's gradient: only the workers its id binds here */
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "p1.w0-3", SPIRT_OP_PUT, "grad/3/3", &noover) == 0);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "p1.w0-3", SPIRT_OP_PUT, "grad/3/4", &noover) == SPIRT_EADDR);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "p1.w1", SPIRT_OP_PUT, "grad/3/0", &noover) == SPIRT_EADDR);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "p2.w1", SPIRT_OP_PUT, "grad/3/1", &noover) == SPIRT_EADDR);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "f1", SPIRT_OP_PUT, "grad/3/1", &noover) == SPIRT_EADDR);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "p1",
	    "f1", SPIRT_OP_GET, "model/m@3", &noover) == 0);

	CHECK_RC(spirt_key_generate(&group));
	spirt_key_public(gpk, group);
	srvc = member(group, gpk, "p1", SPIRT_ROLE_PEER, 0);
	fn = member(group, gpk, "p1.w1", SPIRT_ROLE_FUNCTION, 0);
	fn3 = member(group, gpk, "p1.w0-3", SPIRT_ROLE_FUNCTION, 0);
	fnp2 = member(group, gpk, "p2.w1", SPIRT_ROLE_FUNCTION, 0);
	fnx = member(group, gpk, "f1", SPIRT_ROLE_FUNCTION, 0);
	peer = member(group, gpk, "p2", SPIRT_ROLE_PEER, 0);
	late = member(group, gpk, "f2", SPIRT_ROLE_FUNCTION, 1);
	CHECK_RC(spirt_key_generate(&other));
	stranger = member(other, gpk, "f3", SPIRT_ROLE_FUNCTION, 0);
	CHECK(spirt_remote_open(&r, "ftp://x", fn, 1000) == SPIRT_EURL);
	CHECK(spirt_remote_open(&r, "http://a b:1", fn, 1000) == SPIRT_EURL);
	CHECK(spirt_remote_open(&r, "http://x:70000", fn, 1000) ==
	    SPIRT_EURL);
	CHECK(spirt_remote_open(&r, "http://x:1/path", fn, 1000) ==
	    SPIRT_EURL);

	CHECK(mkdtemp(dir) != NULL);
	CHECK_RC(spirt_store_open(&s, dir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_store_write(s, put_fn, NULL));
	server_conf(&conf, s, srvc, 1 << 16);
	CHECK_RC(spirt_peersrv_start(&srv, &conf, msg, sizeof msg));
	snprintf(url, sizeof url, "http://%s", spirt_peersrv_addr(srv));

	/* a function: reads model/ and data/, puts its gradient once */
	CHECK_RC(spirt_remote_open(&r, url, fn, 5000));
	CHECK_RC(spirt_remote_get(r, 0, "model/m@0", &v, &n));
	CHECK(n == 11 && memcmp(v, "model-bytes", 11) == 0);
	free(v);
	CHECK(strcmp(spirt_remote_peer(r), "p1") == 0);
	CHECK(spirt_remote_get(r, 1, "model/m@1", &v, &n) ==
	    SPIRT_ENOTFOUND);
	CHECK(spirt_remote_get(r, 3, "grad/3/0", &v, &n) == SPIRT_EROLE);
	CHECK_RC(spirt_remote_put(r, 4, "grad/4/1", "abc", 3, 0));
	CHECK_RC(spirt_remote_put(r, 4, "grad/4/1", "abc", 3, 0));
	CHECK(spirt_remote_put(r, 4, "grad/4/1", "abd", 3, 0) ==
	    SPIRT_EEXIST);
	/* only the slots its id binds (p1.w1), of the step computed (4) */
	CHECK(spirt_remote_put(r, 4, "grad/4/2", "abc", 3, 0) ==
	    SPIRT_EADDR);
	CHECK(spirt_remote_put(r, 0, "grad/0/1", "abc", 3, 0) ==
	    SPIRT_ESTEP);
	CHECK(spirt_remote_put(r, 5, "grad/5/1", "abc", 3, 0) ==
	    SPIRT_ESTEP);
	spirt_remote_close(r);
	/* bound to workers 0-2: 0 reads nothing under the assignment, 3 is
	 * none of its workers; bound to another peer, or to nothing (which
	 * still reads) */
	CHECK(put_as(url, fn3, "grad/4/0") == SPIRT_EADDR);
	CHECK(put_as(url, fn3, "grad/4/3") == SPIRT_EADDR);
	CHECK(put_as(url, fnp2, "grad/4/1") == SPIRT_EADDR);
	CHECK(put_as(url, fnx, "grad/4/1") == SPIRT_EADDR);
	CHECK_RC(spirt_remote_open(&r, url, fnx, 5000));
	CHECK_RC(spirt_remote_get(r, 0, "model/m@0", &v, &n));
	free(v);
	spirt_remote_close(r);
	CHECK_RC(spirt_remote_open(&r, url, fn, 5000));
	CHECK(spirt_remote_put(r, 0, "model/m@0", "x", 1, 0) == SPIRT_EROLE);
	CHECK(spirt_remote_del(r, 0, "model/m@0") == SPIRT_EROLE);
	k = 0;
	CHECK_RC(spirt_remote_list(r, "data/", count, &k));
	CHECK(k == 2);
	CHECK(spirt_remote_list(r, "", count, &k) == SPIRT_EROLE);
	/* a step that is not the key's: the server refuses it */
	CHECK(spirt_remote_get(r, 5, "model/m@0", &v, &n) == SPIRT_ESTEP);
	spirt_remote_close(r);

	/* a peer: reads anything, lists everything, pinned by id */
	snprintf(url, sizeof url, "http://p1@%s", spirt_peersrv_addr(srv));
	CHECK_RC(spirt_remote_open(&r, url, peer, 5000));
	k = 0;
	CHECK_RC(spirt_remote_list(r, "", count, &k));
	CHECK(k == 6);
	/* a prefix with a step is bound to it too */
	k = 0;
	CHECK_RC(spirt_remote_list(r, "grad/4/", count, &k));
	CHECK(k == 1);
	CHECK_RC(spirt_remote_get(r, 4, "grad/4/1", &v, &n));
	CHECK(n == 3 && memcmp(v, "abc", 3) == 0);
	free(v);
	CHECK(spirt_remote_put(r, 4, "grad/4/2", "abc", 3, 0) ==
	    SPIRT_EROLE);
	spirt_remote_close(r);
	/* pinned to another id: the handshake goes to a peer that is not
	 * there */
	snprintf(url, sizeof url, "http://p9@%s", spirt_peersrv_addr(srv));
	CHECK_RC(spirt_remote_open(&r, url, peer, 5000));
	CHECK(spirt_remote_get(r, 0, "model/m@0", &v, &n) == SPIRT_EADDR);
	spirt_remote_close(r);

	/* an expired token, a key of another group */
	snprintf(url, sizeof url, "http://%s", spirt_peersrv_addr(srv));
	CHECK_RC(spirt_remote_open(&r, url, late, 5000));
	CHECK(spirt_remote_get(r, 0, "model/m@0", &v, &n) == SPIRT_EEXPIRED);
	spirt_remote_close(r);
	CHECK_RC(spirt_remote_open(&r, url, stranger, 5000));
	CHECK(spirt_remote_get(r, 0, "model/m@0", &v, &n) ==
	    SPIRT_EUNKNOWNKEY);
	spirt_remote_close(r);

	/* attacks by hand, each refused by name */
	CHECK(attack(url, fn, "p1", "get", "model/m@0", why, sizeof why) ==
	    0 && !strcmp(why, "OK"));
	attack(url, fn, "p1", "hs-replay", "model/m@0", why, sizeof why);
	CHECK(!strcmp(why, "EREPLAY"));
	attack(url, fn, "p1", "msg-replay", "model/m@0", why, sizeof why);
	CHECK(!strcmp(why, "EREPLAY"));
	attack(url, fn, "p1", "tamper", "model/m@0", why, sizeof why);
	CHECK(!strcmp(why, "EMAC"));
	attack(url, fn, "p1", "step", "model/m@0", why, sizeof why);
	CHECK(!strcmp(why, "ESTEP"));
	attack(url, fn, "p1", "addr", "model/m@0", why, sizeof why);
	CHECK(!strcmp(why, "EADDR"));
	attack(url, fn, "p1", "session", "model/m@0", why, sizeof why);
	CHECK(!strcmp(why, "ESESSION"));
	{
		struct buf b;
		long hst;
		static const char big[] = "0123456789";

		CHECK_RC(raw(url, "GET", "/v1/nope", NULL, NULL, 0, &hst, &b));
		CHECK(hst == 404);
		free(b.p);
		CHECK_RC(raw(url, "POST", "/v1/hs", NULL, big, 10, &hst, &b));
		reason(why, sizeof why, hst, &b);
		CHECK(hst == 400 && !strcmp(why, "ETRUNC"));
		free(b.p);
		CHECK_RC(raw(url, "POST", "/v1/msg", NULL, big, 10, &hst, &b));
		CHECK(hst == 401);
		free(b.p);
	}
	/* a value over the limit: refused before it is read (413) */
	{
		size_t big = (1 << 16) + 4096;
		char *p = calloc(1, big);
		struct buf b;
		long hst;

		CHECK(p != NULL);
		CHECK_RC(raw(url, "POST", "/v1/msg", NULL, p, big, &hst, &b));
		CHECK(hst == 413);
		free(b.p);
		CHECK_RC(spirt_remote_open(&r, url, fn, 5000));
		CHECK(spirt_remote_put(r, 4, "grad/4/9", p, big, 0) ==
		    SPIRT_ETOOBIG);
		spirt_remote_close(r);
		free(p);
	}

	spirt_peersrv_stop(srv, &st);
	test_streams(s, srvc, peer);
	test_cut(s, srvc, peer);
	test_waits(s, dir, srvc, peer);
	test_waits(s, NULL, srvc, peer);
#define BY(c) st.by_code[(c) - SPIRT_EOF]
	CHECK(BY(SPIRT_EREPLAY) == 2);
	CHECK(BY(SPIRT_EMAC) == 1);
	CHECK(BY(SPIRT_ESTEP) == 4);
	CHECK(BY(SPIRT_EADDR) == 7);
	CHECK(BY(SPIRT_EEXIST) == 1);
	CHECK(BY(SPIRT_EEXPIRED) == 1);
	CHECK(BY(SPIRT_EUNKNOWNKEY) == 1);
	CHECK(BY(SPIRT_ESESSION) == 2);
	CHECK(BY(SPIRT_ETRUNC) == 1);
	CHECK(BY(SPIRT_EPROTO) == 1);
	CHECK(BY(SPIRT_ETOOBIG) == 2);
	CHECK(BY(SPIRT_EROLE) == 5);
	if (check_failed)
		for (int i = 0; i < SPIRT_ELAST - SPIRT_EOF; i++)
			if (st.by_code[i])
				fprintf(stderr, "%s %llu\n",
				    spirt_errname(SPIRT_EOF + i),
				    (unsigned long long)st.by_code[i]);

	spirt_store_close(s);
	{
		char cmd[128];

		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
	spirt_cred_free(srvc);
	spirt_cred_free(fn);
	spirt_cred_free(fn3);
	spirt_cred_free(fnp2);
	spirt_cred_free(fnx);
	spirt_cred_free(peer);
	spirt_cred_free(late);
	spirt_cred_free(stranger);
	spirt_key_free(group);
	spirt_key_free(other);
	spirt_remote_global_cleanup();
	return check_failed;
}
