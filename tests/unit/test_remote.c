/* test_remote.c - the HTTP transport: client, server, refusals */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "check.h"
#include "crypto.h"
#include "le.h"
#include "peersrv.h"
#include "keys.h"
#include "remote.h"
#include "store.h"

/*
 * Without arguments: a server in this process over a store in a temporary
 * directory, its client, and every refusal, checked against the server's
 * counts.  With arguments it is the attacker tests/51-serve.bats uses
 * against a running spirt-peer serve (credentials from SPIRT_KEY, ...):
 *
 *   test_remote attack URL WHAT [KEY]   print the refusal's code name
 *   test_remote raw URL METHOD PATH [BYTES]  print "status reason"
 *   test_remote mint GROUPKEY RUN ID ROLE PUBHEX   an expired token file
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
	if (argc == 7 && !strcmp(argv[1], "mint")) {
		unsigned char pk[SPIRT_PK_BYTES], tok[SPIRT_TOKEN_BYTES];
		struct spirt_key *g;
		char text[600];
		size_t n;
		uint64_t now = spirt_crypto_now();

		if (spirt_key_load(&g, argv[2]) ||
		    spirt_pubkey_parse(pk, argv[6]) ||
		    spirt_token_make(tok, g, argv[3], argv[4], pk,
		    spirt_role_parse(argv[5]), now - 7200000000000u,
		    now - 3600000000000u) ||
		    spirt_token_format(text, sizeof text, &n, tok))
			return 1;
		spirt_key_free(g);
		fwrite(text, 1, n, stdout);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "attack")) {
		if ((rc = spirt_cred_env(&c, msg, sizeof msg))) {
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
	    "METHOD PATH [BODY] | mint GROUPKEY RUN ID ROLE PUBHEX]\n");
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

static int
put_fn(struct spirt_txn *t, void *arg)
{
	(void)arg;
	return spirt_store_put(t, "model/m@0", "model-bytes", 11, 0) ||
	    spirt_store_put(t, "grad/3/0", "g", 1, 0) ||
	    spirt_store_put(t, "data/d/info", "dd", 2, 0);
}

static void
logline(void *arg, int level, const char *line)
{
	(void)arg;
	if (level == 0 && getenv("TEST_REMOTE_LOG"))
		fprintf(stderr, "log: %s\n", line);
}

int
main(int argc, char **argv)
{
	struct spirt_key *group;
	unsigned char gpk[SPIRT_PK_BYTES];
	struct spirt_cred *srvc, *fn, *peer, *late, *stranger;
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
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "f1",
	    SPIRT_OP_PUT, "beat/f1", &noover) == 0);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_PEER, "p2",
	    SPIRT_OP_PUT, "beat/p2", &noover) == 0);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_PEER, "p2",
	    SPIRT_OP_PUT, "beat/p1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "f1",
	    SPIRT_OP_PUT, "beat/f10", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "f1",
	    SPIRT_OP_PUT, "health/f1", &noover) == SPIRT_EROLE);
	CHECK(spirt_peersrv_member_allowed(SPIRT_ROLE_FUNCTION, "f1",
	    SPIRT_OP_PUT, "grad/3/1", &noover) == 0 && noover);

	CHECK_RC(spirt_key_generate(&group));
	spirt_key_public(gpk, group);
	srvc = member(group, gpk, "p1", SPIRT_ROLE_PEER, 0);
	fn = member(group, gpk, "f1", SPIRT_ROLE_FUNCTION, 0);
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
	conf.store = s;
	conf.cred = srvc;
	conf.listen = "127.0.0.1:0";
	conf.max_bytes = 1 << 16;
	conf.max_sessions = 4;
	conf.idle_s = 60;
	conf.max_conns = 16;
	conf.log = logline;
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
	CHECK(spirt_remote_put(r, 0, "model/m@0", "x", 1, 0) == SPIRT_EROLE);
	CHECK(spirt_remote_del(r, 0, "model/m@0") == SPIRT_EROLE);
	k = 0;
	CHECK_RC(spirt_remote_list(r, "data/", count, &k));
	CHECK(k == 1);
	CHECK(spirt_remote_list(r, "", count, &k) == SPIRT_EROLE);
	/* a step that is not the key's: the server refuses it */
	CHECK(spirt_remote_get(r, 5, "model/m@0", &v, &n) == SPIRT_ESTEP);
	spirt_remote_close(r);

	/* a peer: reads anything, lists everything, pinned by id */
	snprintf(url, sizeof url, "http://p1@%s", spirt_peersrv_addr(srv));
	CHECK_RC(spirt_remote_open(&r, url, peer, 5000));
	k = 0;
	CHECK_RC(spirt_remote_list(r, "", count, &k));
	CHECK(k == 4);
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
#define BY(c) st.by_code[(c) - SPIRT_EOF]
	CHECK(BY(SPIRT_EREPLAY) == 2);
	CHECK(BY(SPIRT_EMAC) == 1);
	CHECK(BY(SPIRT_ESTEP) == 2);
	CHECK(BY(SPIRT_EADDR) == 2);
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
	spirt_cred_free(peer);
	spirt_cred_free(late);
	spirt_cred_free(stranger);
	spirt_key_free(group);
	spirt_key_free(other);
	spirt_remote_global_cleanup();
	return check_failed;
}
