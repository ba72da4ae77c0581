/* test_lineage.c - a store's chain of signed digests (lib/lineage.c):
 * one that holds, and each way a link breaks */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "crypto.h"
#include "keys.h"
#include "lineage.h"

#define STEPS 3
#define NP 3

static struct spirt_key *key[NP];
static const char *ids[NP] = { "p1", "p2", "p3" };

/* what a run wrote, and what a test spoils */
struct run {
	int bad_model;          /* p2's digest of step 1 names another model */
	int bad_got;            /* p3 lists another p1 aggregate at step 2 */
	int skip;               /* digests of this step left out (+1) */
	int swap;               /* model@1 stored is another value */
};

static void
model_bytes(char *b, size_t cap, int t)
{
	snprintf(b, cap, "the model at step %d", t);
}

static int
put_run(struct spirt_txn *t, void *arg)
{
	const struct run *r = arg;
	struct spirt_digest d;
	unsigned char buf[2048];
	char k[SPIRT_KEY_MAX + 1], m[64];
	size_t len;
	int rc, s, p, q;

	for (s = 0; s < STEPS; s++) {
		model_bytes(m, sizeof m, s + (r->swap && s == 1 ? 10 : 0));
		if ((rc = spirt_key_model(k, sizeof k, "mlp", (uint64_t)s)) ||
		    (rc = spirt_store_put(t, k, m, strlen(m), 0)))
			return rc;
		if (r->skip == s + 1)
			continue;
		for (p = 0; p < NP; p++) {
			memset(&d, 0, sizeof d);
			d.step = (uint64_t)s;
			snprintf(d.run, sizeof d.run, "r1");
			snprintf(d.id, sizeof d.id, "%s", ids[p]);
			model_bytes(m, sizeof m, s + (r->bad_model && s == 1 &&
			    p == 1 ? 20 : 0));
			spirt_hash(d.model, m, strlen(m));
			snprintf(m, sizeof m, "agg %d of %s", s, ids[p]);
			spirt_hash(d.agg, m, strlen(m));
			for (q = 0; q < NP; q++) {
				if (q == p)
					continue;
				snprintf(d.got[d.n].id, sizeof d.got[0].id, "%s",
				    ids[q]);
				snprintf(m, sizeof m, "agg %d of %s%s", s, ids[q],
				    r->bad_got && s == 2 && p == 2 && q == 0 ?
				    " (another)" : "");
				spirt_hash(d.got[d.n++].hash, m, strlen(m));
			}
			if ((rc = spirt_digest_sign(buf, sizeof buf, &len, &d,
			    key[p])) ||
			    (rc = spirt_key_digest(k, sizeof k, (uint64_t)s,
			    ids[p])) ||
			    (rc = spirt_store_put_bytes(t, k, buf, len,
			    (uint64_t)s, 0)))
				return rc;
		}
	}
	return 0;
}

struct seen {
	struct spirt_lineage_step st[STEPS];
	int n;
};

static int
keep(void *arg, const struct spirt_lineage_step *st)
{
	struct seen *w = arg;

	if (w->n < STEPS)
		w->st[w->n++] = *st;
	return 0;
}

/* a store at dir/<name> with run r, walked into w: the walk's rc */
static int
walk(const char *dir, const char *name, const struct run *r,
    struct spirt_trust *tr, struct seen *w, uint64_t *broken)
{
	struct spirt_store *s;
	char path[400];
	uint64_t last = 0;
	int rc;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	memset(w, 0, sizeof *w);
	CHECK_RC(spirt_store_open(&s, path, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_store_write(s, put_run, (void *)r));
	rc = spirt_lineage_walk(s, "mlp", "r1", tr, keep, w, &last, broken);
	CHECK(rc || last == STEPS - 1);
	spirt_store_close(s);
	return rc;
}

static void
chain(const char *dir, struct spirt_trust *tr)
{
	struct run r = { 0 };
	struct seen w;
	uint64_t broken;
	char m[64];
	unsigned char h[SPIRT_HASH_BYTES];

	/* it holds: every step, its model kept and named, p1 p2 p3 */
	CHECK_RC(walk(dir, "ok", &r, tr, &w, &broken));
	CHECK(broken == 0 && w.n == STEPS);
	for (int s = 0; s < w.n; s++) {
		CHECK(w.st[s].step == (uint64_t)s && !w.st[s].broken);
		CHECK(w.st[s].kept && w.st[s].nsigned == NP && w.st[s].n == NP);
		CHECK(!strcmp(w.st[s].who[0], "p1") &&
		    !strcmp(w.st[s].who[2], "p3") && w.st[s].signer[1]);
		model_bytes(m, sizeof m, s);
		spirt_hash(h, m, strlen(m));
		CHECK(!memcmp(w.st[s].model, h, sizeof h) &&
		    !memcmp(w.st[s].stored, h, sizeof h));
	}
	/* two models named at one step */
	r.bad_model = 1;
	CHECK_RC(walk(dir, "models", &r, tr, &w, &broken));
	CHECK(broken == 1 && w.st[1].broken == SPIRT_LN_MODELS &&
	    !strcmp(w.st[1].peer, "p2") && !strcmp(w.st[1].other, "p1"));
	CHECK(!w.st[0].broken && !w.st[2].broken);
	/* a peer lists from another what that one did not sign */
	memset(&r, 0, sizeof r);
	r.bad_got = 1;
	CHECK_RC(walk(dir, "got", &r, tr, &w, &broken));
	CHECK(broken == 1 && w.st[2].broken == SPIRT_LN_RECEIVED &&
	    !strcmp(w.st[2].peer, "p3") && !strcmp(w.st[2].other, "p1"));
	/* the stored model is not the one the digests name */
	memset(&r, 0, sizeof r);
	r.swap = 1;
	CHECK_RC(walk(dir, "swap", &r, tr, &w, &broken));
	CHECK(broken == 1 && w.st[1].broken == SPIRT_LN_STORED &&
	    !strcmp(w.st[1].key, "model/mlp@1"));
	/* a step without digests; the first step too */
	memset(&r, 0, sizeof r);
	r.skip = 2;
	CHECK_RC(walk(dir, "gap", &r, tr, &w, &broken));
	CHECK(broken == 1 && w.st[1].broken == SPIRT_LN_MISSING &&
	    !strcmp(w.st[1].key, "digest/1/"));
	r.skip = 1;
	CHECK_RC(walk(dir, "first", &r, tr, &w, &broken));
	CHECK(broken == 1 && w.st[0].broken == SPIRT_LN_MISSING &&
	    w.st[0].to == 0 && w.n == STEPS);
}

/* digests of one step far on: the gap before it is one break, not a
 * call a step */
static int
put_far(struct spirt_txn *t, void *arg)
{
	struct spirt_digest d;
	unsigned char buf[2048];
	char k[SPIRT_KEY_MAX + 1];
	size_t len;
	int rc;

	(void)arg;
	memset(&d, 0, sizeof d);
	d.step = 1000000000000ull;
	snprintf(d.run, sizeof d.run, "r1");
	snprintf(d.id, sizeof d.id, "p1");
	spirt_hash(d.model, "m", 1);
	spirt_hash(d.agg, "a", 1);
	if ((rc = spirt_digest_sign(buf, sizeof buf, &len, &d, key[0])) ||
	    (rc = spirt_key_digest(k, sizeof k, d.step, "p1")))
		return rc;
	return spirt_store_put_bytes(t, k, buf, len, d.step, 0);
}

static void
far(const char *dir, struct spirt_trust *tr)
{
	struct spirt_store *s;
	struct seen w;
	char path[400];
	uint64_t last, broken;

	snprintf(path, sizeof path, "%s/far", dir);
	memset(&w, 0, sizeof w);
	CHECK_RC(spirt_store_open(&s, path, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_store_write(s, put_far, NULL));
	CHECK_RC(spirt_lineage_walk(s, "mlp", "r1", tr, keep, &w, &last,
	    &broken));
	CHECK(last == 1000000000000ull && broken == last && w.n == 2);
	CHECK(w.st[0].broken == SPIRT_LN_MISSING && w.st[0].step == 0 &&
	    w.st[0].to == last - 1);
	CHECK(!w.st[1].broken && w.st[1].step == last && w.st[1].n == 1);
	spirt_store_close(s);
}

int
main(void)
{
	char tmpl[] = "/tmp/spirt-test-lineage.XXXXXX", cmd[400];
	unsigned char seed[32], pk[SPIRT_PK_BYTES];
	struct spirt_trust *tr, *t2;
	struct seen w;
	struct run r = { 0 };
	uint64_t broken;

	CHECK_RC(spirt_crypto_init());
	for (int p = 0; p < NP; p++) {
		memset(seed, p + 1, sizeof seed);
		CHECK_RC(spirt_key_from_seed(&key[p], seed));
	}
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	CHECK_RC(spirt_trust_new(&tr, "r1", NULL, 1));
	for (int p = 0; p < NP; p++) {
		spirt_key_public(pk, key[p]);
		CHECK_RC(spirt_trust_allow(tr, pk, ids[p], SPIRT_ROLE_PEER));
	}
	chain(tmpl, tr);
	far(tmpl, tr);
	/* p3 not on the allowlist: each of its digests breaks its step */
	CHECK_RC(spirt_trust_new(&t2, "r1", NULL, 1));
	for (int p = 0; p < NP - 1; p++) {
		spirt_key_public(pk, key[p]);
		CHECK_RC(spirt_trust_allow(t2, pk, ids[p], SPIRT_ROLE_PEER));
	}
	CHECK_RC(walk(tmpl, "stranger", &r, t2, &w, &broken));
	CHECK(broken == STEPS && w.st[0].broken == SPIRT_LN_DIGEST &&
	    w.st[0].rc == SPIRT_EUNKNOWNKEY && !strcmp(w.st[0].peer, "p3") &&
	    !strcmp(w.st[0].key, "digest/0/p3"));
	spirt_trust_free(t2);
	spirt_trust_free(tr);
	for (int p = 0; p < NP; p++)
		spirt_key_free(key[p]);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		check_failed = 1;
	return check_failed;
}
