/* test_keys.c - the key namespace: builders, parser, refusals, routing */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "keys.h"

#define BIG SPIRT_KEY_MAX + 1

/* key parses as kind and builds back to itself through build() */
static void
roundtrip(const char *key, int kind)
{
	struct spirt_key_parts k;
	char b[BIG];
	int rc = SPIRT_EKEY;

	CHECK_RC(spirt_key_parse(&k, key));
	if (k.kind != kind) {
		fprintf(stderr, "%s: kind %d, want %d\n", key, k.kind, kind);
		check_failed = 1;
		return;
	}
	switch (kind) {
	case SPIRT_KEY_MODEL: rc = spirt_key_model(b, sizeof b, k.name,
	    k.step); break;
	case SPIRT_KEY_OPT: rc = spirt_key_opt(b, sizeof b, k.name, k.step);
	    break;
	case SPIRT_KEY_GRAD: rc = spirt_key_grad(b, sizeof b, k.step,
	    k.worker); break;
	case SPIRT_KEY_MOM: rc = spirt_key_mom(b, sizeof b, k.step,
	    k.worker); break;
	case SPIRT_KEY_STATE: rc = spirt_key_state(b, sizeof b, k.step,
	    k.worker); break;
	case SPIRT_KEY_MSTATE: rc = spirt_key_mstate(b, sizeof b, k.name,
	    k.step); break;
	case SPIRT_KEY_AGG: rc = spirt_key_agg(b, sizeof b, k.step); break;
	case SPIRT_KEY_AGG_EXCLUDED: rc = spirt_key_agg_excluded(b, sizeof b,
	    k.step); break;
	case SPIRT_KEY_XAGG: rc = spirt_key_xagg(b, sizeof b, k.step, k.peer);
	    break;
	case SPIRT_KEY_GAGG: rc = spirt_key_gagg(b, sizeof b, k.step); break;
	case SPIRT_KEY_DIGEST: rc = spirt_key_digest(b, sizeof b, k.step,
	    k.peer); break;
	case SPIRT_KEY_BEAT: rc = spirt_key_beat(b, sizeof b, k.peer); break;
	case SPIRT_KEY_HEALTH: rc = spirt_key_health(b, sizeof b, k.peer);
	    break;
	case SPIRT_KEY_DATA_INFO: rc = spirt_key_data_info(b, sizeof b,
	    k.name); break;
	case SPIRT_KEY_DATA_ASSIGN: rc = spirt_key_data_assign(b, sizeof b,
	    k.name); break;
	case SPIRT_KEY_DATA_ASSIGN_REV: rc = spirt_key_data_assign_rev(b,
	    sizeof b, k.name, k.step); break;
	case SPIRT_KEY_DATA_SCALE: rc = spirt_key_data_scale(b, sizeof b,
	    k.name); break;
	case SPIRT_KEY_DATA_CLASSES: rc = spirt_key_data_classes(b,
	    sizeof b, k.name); break;
	case SPIRT_KEY_DATA_X: rc = spirt_key_data_x(b, sizeof b, k.name,
	    k.shard); break;
	case SPIRT_KEY_DATA_Y: rc = spirt_key_data_y(b, sizeof b, k.name,
	    k.shard); break;
	}
	CHECK_RC(rc);
	if (rc == 0 && strcmp(b, key) != 0) {
		fprintf(stderr, "%s: built back as %s\n", key, b);
		check_failed = 1;
	}
}

/* key is no key of the namespace */
static void
refused(const char *key)
{
	struct spirt_key_parts k;

	memset(&k, 0x5a, sizeof k);
	if (spirt_key_parse(&k, key) != SPIRT_EKEY) {
		fprintf(stderr, "\"%s\": parsed as kind %d\n", key, k.kind);
		check_failed = 1;
	}
	CHECK(k.kind == SPIRT_KEY_NONE && k.step == 0 && k.name[0] == '\0');
}

static void
builders(void)
{
	char b[BIG], small[8];
	struct spirt_key_parts k;

	CHECK_RC(spirt_key_model(b, sizeof b, "mlp", 12));
	CHECK(!strcmp(b, "model/mlp@12"));
	CHECK_RC(spirt_key_opt(b, sizeof b, "mlp", 0));
	CHECK(!strcmp(b, "opt/mlp@0"));
	CHECK_RC(spirt_key_model_prefix(b, sizeof b, "m.1"));
	CHECK(!strcmp(b, "model/m.1@"));
	CHECK_RC(spirt_key_opt_prefix(b, sizeof b, "m"));
	CHECK(!strcmp(b, "opt/m@"));
	CHECK_RC(spirt_key_grad(b, sizeof b, 3, 4294967295u));
	CHECK(!strcmp(b, "grad/3/4294967295"));
	CHECK_RC(spirt_key_grad_prefix(b, sizeof b, 30));
	CHECK(!strcmp(b, "grad/30/"));
	CHECK_RC(spirt_key_agg(b, sizeof b, SPIRT_KEY_STEP_MAX));
	CHECK(!strcmp(b, "agg/18446744073709551614"));
	CHECK_RC(spirt_key_agg_excluded(b, sizeof b, 7));
	CHECK(!strcmp(b, "agg/7/excluded"));
	CHECK_RC(spirt_key_xagg(b, sizeof b, 7, "p1"));
	CHECK(!strcmp(b, "xagg/7/p1"));
	CHECK_RC(spirt_key_gagg(b, sizeof b, 7));
	CHECK(!strcmp(b, "gagg/7"));
	CHECK_RC(spirt_key_gagg_round(b, sizeof b, 7));
	CHECK(!strcmp(b, "gagg/7/round"));
	CHECK(spirt_key_wirestep(b) == 7);
	CHECK_EQ_RC(spirt_key_gagg_round(b, sizeof b, UINT64_MAX), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_gagg_round(b, 8, 7), SPIRT_EKEY);
	CHECK(spirt_key_wirestep("model/m@12") == 12);
	CHECK(spirt_key_wirestep("model/m@012") == 0);
	CHECK(spirt_key_wirestep("digest/3/p1") == 3);
	CHECK_RC(spirt_key_mom(b, sizeof b, 9, 4));
	CHECK(!strcmp(b, "mom/9/4"));
	CHECK(spirt_key_wirestep(b) == 9);
	CHECK(spirt_key_wirestep("mom/9/") == 9);
	CHECK_EQ_RC(spirt_key_mom(b, sizeof b, UINT64_MAX, 0), SPIRT_EKEY);
	CHECK_RC(spirt_key_state(b, sizeof b, 9, 4));
	CHECK(!strcmp(b, "state/9/4"));
	CHECK(spirt_key_wirestep(b) == 9);
	CHECK(spirt_key_wirestep("state/9/") == 9);
	CHECK_EQ_RC(spirt_key_state(b, sizeof b, UINT64_MAX, 0), SPIRT_EKEY);
	CHECK_RC(spirt_key_mstate(b, sizeof b, "m", 9));
	CHECK(!strcmp(b, "mstate/m@9"));
	CHECK(spirt_key_wirestep(b) == 9);
	CHECK_RC(spirt_key_mstate_prefix(b, sizeof b, "m"));
	CHECK(!strcmp(b, "mstate/m@"));
	CHECK_EQ_RC(spirt_key_mstate(b, sizeof b, "../m", 9), SPIRT_EKEY);
	CHECK(spirt_key_wirestep("data/d/3/x") == 0);
	CHECK(spirt_key_wirestep("beat/p1") == 0);
	CHECK(spirt_key_wirestep("user/7") == 0);
	CHECK_RC(spirt_key_digest(b, sizeof b, 0, "peer-2.b_c"));
	CHECK(!strcmp(b, "digest/0/peer-2.b_c"));
	/* the partitioned exchange's, each bound to its step on the wire */
	CHECK_RC(spirt_key_xslice(b, sizeof b, 12, NULL));
	CHECK(!strcmp(b, "xslice/12") && spirt_key_wirestep(b) == 12);
	CHECK_RC(spirt_key_xslice(b, sizeof b, 12, "p3"));
	CHECK(!strcmp(b, "xslice/12/p3") && spirt_key_wirestep(b) == 12);
	CHECK_RC(spirt_key_xpart(b, sizeof b, 12, 0));
	CHECK(!strcmp(b, "xpart/12") && spirt_key_wirestep(b) == 12);
	CHECK_RC(spirt_key_xpart(b, sizeof b, 12, 1));
	CHECK(!strcmp(b, "xpart/12/signed") && spirt_key_wirestep(b) == 12);
	CHECK_EQ_RC(spirt_key_xslice(b, sizeof b, 12, "-p"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_xpart(b, sizeof b, UINT64_MAX, 0), SPIRT_EKEY);
	CHECK(spirt_key_wirestep("xpart/012") == 0);
	CHECK(spirt_key_wirestep("xslice/x") == 0);
	CHECK_RC(spirt_key_beat(b, sizeof b, "f0"));
	CHECK(!strcmp(b, "beat/f0"));
	CHECK_RC(spirt_key_health(b, sizeof b, "p2"));
	CHECK(!strcmp(b, "health/p2"));
	CHECK(spirt_key_wirestep("health/p2") == 0);
	CHECK_RC(spirt_key_data_prefix(b, sizeof b, "train"));
	CHECK(!strcmp(b, "data/train/"));
	CHECK_RC(spirt_key_data_info(b, sizeof b, "train"));
	CHECK(!strcmp(b, "data/train/info"));
	CHECK_RC(spirt_key_data_assign(b, sizeof b, "train"));
	CHECK(!strcmp(b, "data/train/assign"));
	CHECK_RC(spirt_key_data_assign_rev(b, sizeof b, "train", 12));
	CHECK(!strcmp(b, "data/train/assign/12"));
	CHECK_RC(spirt_key_data_scale(b, sizeof b, "train"));
	CHECK(!strcmp(b, "data/train/scale"));
	CHECK_RC(spirt_key_data_classes(b, sizeof b, "train"));
	CHECK(!strcmp(b, "data/train/classes"));
	CHECK_RC(spirt_key_data_x(b, sizeof b, "train", 0));
	CHECK(!strcmp(b, "data/train/0/x"));
	CHECK_RC(spirt_key_data_y(b, sizeof b, "train", 1048575));
	CHECK(!strcmp(b, "data/train/1048575/y"));

	/* every key they build parses, as its own kind */
	CHECK_RC(spirt_key_parse(&k, "model/mlp@12"));
	CHECK(k.kind == SPIRT_KEY_MODEL && k.step == 12 &&
	    !strcmp(k.name, "mlp"));
	CHECK_RC(spirt_key_parse(&k, "grad/3/4294967295"));
	CHECK(k.kind == SPIRT_KEY_GRAD && k.step == 3 &&
	    k.worker == 4294967295u);
	CHECK_RC(spirt_key_parse(&k, "xagg/7/p1"));
	CHECK(k.kind == SPIRT_KEY_XAGG && k.step == 7 &&
	    !strcmp(k.peer, "p1") && k.name[0] == '\0');
	CHECK_RC(spirt_key_parse(&k, "data/train/1048575/y"));
	CHECK(k.kind == SPIRT_KEY_DATA_Y && k.shard == 1048575 &&
	    !strcmp(k.name, "train") && k.step == 0);

	/* too small a buffer: SPIRT_EKEY and an empty buf, never a prefix */
	memcpy(small, "junkjun", 8);
	CHECK_EQ_RC(spirt_key_model(small, sizeof small, "mlp", 12),
	    SPIRT_EKEY);
	CHECK(small[0] == '\0');
	CHECK_RC(spirt_key_agg(small, sizeof small, 123));
	CHECK(!strcmp(small, "agg/123"));
	CHECK_EQ_RC(spirt_key_agg(small, sizeof small, 1234), SPIRT_EKEY);
	CHECK(small[0] == '\0');
	CHECK_EQ_RC(spirt_key_agg(b, 0, 1), SPIRT_EKEY);
}

static void
refusals(void)
{
	char b[BIG], name[SPIRT_NAME_PART_MAX + 2], id[SPIRT_KEY_ID_MAX + 2];

	/* names: empty, leading dot, '/', '@', space, too long */
	CHECK_EQ_RC(spirt_key_model(b, sizeof b, "", 1), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_model(b, sizeof b, ".", 1), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_model(b, sizeof b, "..", 1), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_model(b, sizeof b, "a/b", 1), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_model(b, sizeof b, "a@b", 1), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_data_info(b, sizeof b, "a b"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_data_x(b, sizeof b, "../x", 0), SPIRT_EKEY);
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	CHECK_EQ_RC(spirt_name_check(name), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_opt(b, sizeof b, name, 1), SPIRT_EKEY);
	name[SPIRT_NAME_PART_MAX] = '\0';
	CHECK_RC(spirt_name_check(name));
	CHECK_RC(spirt_key_opt(b, sizeof b, name, SPIRT_KEY_STEP_MAX));
	CHECK(strlen(b) == 4 + 255 + 1 + 20);

	/* ids: empty, leading '.', '-' or '_', '/', too long */
	CHECK_EQ_RC(spirt_key_xagg(b, sizeof b, 1, ""), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_xagg(b, sizeof b, 1, ".p"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_digest(b, sizeof b, 1, "-p"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_digest(b, sizeof b, 1, "_p"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_beat(b, sizeof b, "p/1"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_beat(b, sizeof b, "p 1"), SPIRT_EKEY);
	memset(id, 'p', sizeof id - 1);
	id[sizeof id - 1] = '\0';
	CHECK_EQ_RC(spirt_key_id_check(id), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_xagg(b, sizeof b, 1, id), SPIRT_EKEY);
	CHECK(b[0] == '\0');
	id[SPIRT_KEY_ID_MAX] = '\0';
	CHECK_RC(spirt_key_id_check(id));
	CHECK_RC(spirt_key_xagg(b, sizeof b, 1, id));

	/* step overflow: UINT64_MAX is "no step" and names no key */
	CHECK_EQ_RC(spirt_key_model(b, sizeof b, "m", UINT64_MAX), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_opt(b, sizeof b, "m", UINT64_MAX), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_grad(b, sizeof b, UINT64_MAX, 0), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_grad_prefix(b, sizeof b, UINT64_MAX),
	    SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_agg(b, sizeof b, UINT64_MAX), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_agg_excluded(b, sizeof b, UINT64_MAX),
	    SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_xagg(b, sizeof b, UINT64_MAX, "p"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_gagg(b, sizeof b, UINT64_MAX), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_digest(b, sizeof b, UINT64_MAX, "p"),
	    SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_data_y(b, sizeof b, "d", UINT64_MAX),
	    SPIRT_EKEY);
	refused("model/m@18446744073709551615");
	refused("grad/18446744073709551615/0");
	refused("agg/99999999999999999999");
	refused("grad/1/4294967296");   /* worker above u32 */

	/* not keys of the namespace */
	refused("");
	refused("model/");
	refused("model/m");
	refused("model/m@");
	refused("model/@1");
	refused("model/.m@1");
	refused("model/m@01");
	refused("model/m@+1");
	refused("model/m@-1");
	refused("model/m@1x");
	refused("model/m@1/");
	refused("model/a/b@1");
	refused("opt/m");
	refused("grad/1");
	refused("grad/1/");
	refused("grad/01/0");
	refused("grad/1/00");
	refused("grad/1/f0");
	refused("grad/1/0/x");
	refused("agg/");
	refused("agg/x");
	refused("agg/1/");
	refused("agg/1/excluded/2");
	refused("agg/1/other");
	refused("xagg/1");
	refused("xagg/1/");
	refused("xagg/1/.p");
	refused("xagg/1/p/q");
	refused("xagg/p/1");
	refused("gagg/");
	refused("gagg/1/p");
	refused("digest/1");
	refused("digest/1/-p");
	refused("beat/");
	refused("beat/a/b");
	refused("health/");
	refused("health/a/b");
	refused("data/");
	refused("data/d");
	refused("data/d/");
	refused("data/d/other");
	refused("data/d/1");
	refused("data/d/1/z");
	refused("data/d/assign/");
	refused("data/d/assign/01");
	refused("data/d/assign/1/");
	refused("data/d/assign/x");
	refused("data/d/01/x");
	refused("data/d/1/x/");
	refused("data/.d/info");
	refused("Model/m@1");
	refused("model/m@1 ");
	refused("other/key");
	refused("grad/1/0\n");
}

/* a key of one kind never parses as another: every kind's keys, each
 * with each other kind's root swapped in */
static void
no_confusion(void)
{
	static const struct { const char *key; int kind; } k[] = {
		{ "model/mlp@0", SPIRT_KEY_MODEL },
		{ "model/m-1.a_b@18446744073709551614", SPIRT_KEY_MODEL },
		{ "model/agg@3", SPIRT_KEY_MODEL },
		{ "opt/mlp@12", SPIRT_KEY_OPT },
		{ "grad/0/0", SPIRT_KEY_GRAD },
		{ "grad/12/4294967295", SPIRT_KEY_GRAD },
		{ "mom/12/7", SPIRT_KEY_MOM },
		{ "state/12/7", SPIRT_KEY_STATE },
		{ "mstate/mlp@12", SPIRT_KEY_MSTATE },
		{ "agg/0", SPIRT_KEY_AGG },
		{ "agg/12/excluded", SPIRT_KEY_AGG_EXCLUDED },
		{ "xagg/12/p1", SPIRT_KEY_XAGG },
		{ "xagg/12/0", SPIRT_KEY_XAGG },
		{ "gagg/12", SPIRT_KEY_GAGG },
		{ "digest/12/p1", SPIRT_KEY_DIGEST },
		{ "beat/f0", SPIRT_KEY_BEAT },
		{ "beat/12", SPIRT_KEY_BEAT },
		{ "health/p1", SPIRT_KEY_HEALTH },
		{ "data/train/info", SPIRT_KEY_DATA_INFO },
		{ "data/info/info", SPIRT_KEY_DATA_INFO },
		{ "data/train/assign", SPIRT_KEY_DATA_ASSIGN },
		{ "data/train/assign/0", SPIRT_KEY_DATA_ASSIGN_REV },
		{ "data/train/assign/17", SPIRT_KEY_DATA_ASSIGN_REV },
		{ "data/train/scale", SPIRT_KEY_DATA_SCALE },
		{ "data/train/classes", SPIRT_KEY_DATA_CLASSES },
		{ "data/train/0/x", SPIRT_KEY_DATA_X },
		{ "data/3/3/y", SPIRT_KEY_DATA_Y },
	};
	static const char *const roots[] = { "model/", "opt/", "grad/",
	    "mom/", "state/", "mstate/", "agg/", "xagg/", "gagg/", "digest/", "beat/", "health/",
	    "data/" };
	size_t n = sizeof k / sizeof k[0], nr = sizeof roots / sizeof *roots;
	struct spirt_key_parts p;
	char b[BIG];

	for (size_t i = 0; i < n; i++) {
		const char *rest = strchr(k[i].key, '/') + 1;
		size_t own = strlen(k[i].key) - strlen(rest);

		roundtrip(k[i].key, k[i].kind);
		for (size_t r = 0; r < nr; r++) {
			if (strlen(roots[r]) == own &&
			    !strncmp(roots[r], k[i].key, own))
				continue;
			snprintf(b, sizeof b, "%s%s", roots[r], rest);
			/* the same body under another root may be a key of
			 * that root, never of this key's kind */
			if (spirt_key_parse(&p, b) == 0 &&
			    p.kind == k[i].kind) {
				fprintf(stderr, "%s parses as the kind of "
				    "%s\n", b, k[i].key);
				check_failed = 1;
			}
		}
		/* and kinds are told apart within the list */
		for (size_t j = 0; j < n; j++)
			if (j != i && k[j].kind != k[i].kind)
				CHECK(strcmp(k[i].key, k[j].key) != 0);
	}
}

static void
routing(void)
{
	static const char *const vol[] = { "grad/1/0", "grad/", "mom/1/0",
	    "state/1/0",
	    "agg/1", "agg/1/excluded", "xagg/1/p", "gagg/1", "beat/f0",
	    "health/f0" };
	static const char *const dur[] = { "model/m@1", "opt/m@1",
	    "mstate/m@1",
	    "data/d/info", "digest/1/p", "gra", "ag", "aggx/1", "other" };

	for (size_t i = 0; i < sizeof vol / sizeof *vol; i++)
		CHECK(spirt_key_volatile(vol[i], strlen(vol[i])));
	for (size_t i = 0; i < sizeof dur / sizeof *dur; i++)
		CHECK(!spirt_key_volatile(dur[i], strlen(dur[i])));
	/* the length counts, not a NUL (LMDB keys have none) */
	CHECK(!spirt_key_volatile("grad/1/0", 4));
	CHECK(spirt_key_volatile("agg/1xyz", 4));
}

static void
validators(void)
{
	char name[SPIRT_NAME_PART_MAX + 1], big[SPIRT_KEY_MAX + 2];
	uint64_t t;

	CHECK_RC(spirt_key_check("any/key@here"));
	CHECK_EQ_RC(spirt_key_check(""), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_check("a b"), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_key_check("a\x7f"), SPIRT_EKEY);
	memset(big, 'k', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK_EQ_RC(spirt_key_check(big), SPIRT_EKEY);
	big[SPIRT_KEY_MAX] = '\0';
	CHECK_RC(spirt_key_check(big));

	CHECK_RC(spirt_model_key_parse("model/m.x@42", name, sizeof name,
	    &t));
	CHECK(t == 42 && !strcmp(name, "m.x"));
	CHECK_EQ_RC(spirt_model_key_parse("model/m@042", name, sizeof name,
	    &t), SPIRT_EKEY);
	CHECK_EQ_RC(spirt_model_key_parse("opt/m@1", name, sizeof name, &t),
	    SPIRT_EKEY);
	CHECK_EQ_RC(spirt_model_key_parse("model/long@1", name, 4, &t),
	    SPIRT_EKEY);
}

/* a function's member id binds it to workers of one peer */
static void
bindings(void)
{
	static const char *const bad[] = {
		"f1", "p1", "p1.", "p1.w", "p1.x0", "p1.W0", "p1.w01",
		"p1.w00", "p1.w-1", "p1.w1-", "p1.w3-2", "p1.w1-2-3",
		"p1.w1x", "p1.w+1", "p1.w 1", ".w0", "w0", "p1.w1.x",
		"p1.w4294967296", "p1.w0-4294967296", "p1.w0-01", "",
		"_p.w0", "p1/x.w0", "p1.w0-", "p1.w99999999999999999999",
		"a23456789012345678901234567.w1-20",   /* 33 bytes */
	};
	char peer[SPIRT_KEY_ID_MAX + 1];
	uint32_t a = 7, b = 7;

	CHECK_RC(spirt_fn_binding("p1.w0", peer, sizeof peer, &a, &b));
	CHECK(strcmp(peer, "p1") == 0 && a == 0 && b == 0);
	CHECK_RC(spirt_fn_binding("p1.w0-3", peer, sizeof peer, &a, &b));
	CHECK(strcmp(peer, "p1") == 0 && a == 0 && b == 3);
	CHECK_RC(spirt_fn_binding("p1.w10-10", peer, sizeof peer, &a, &b));
	CHECK(a == 10 && b == 10);
	/* the last '.' splits: a peer id may hold dots of its own */
	CHECK_RC(spirt_fn_binding("node.2.w7", peer, sizeof peer, &a, &b));
	CHECK(strcmp(peer, "node.2") == 0 && a == 7 && b == 7);
	CHECK_RC(spirt_fn_binding("p.w4294967295", peer, sizeof peer, &a,
	    &b));
	CHECK(a == UINT32_MAX && b == UINT32_MAX);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		a = b = 7;
		if (spirt_fn_binding(bad[i], peer, sizeof peer, &a, &b) !=
		    SPIRT_EKEY || a != 7 || b != 7) {
			fprintf(stderr, "\"%s\": taken as a binding\n",
			    bad[i]);
			check_failed = 1;
		}
	}
	/* a peer id that does not fit the caller's buffer */
	CHECK_EQ_RC(spirt_fn_binding("p12.w0", peer, 3, &a, &b), SPIRT_EKEY);
	CHECK_RC(spirt_fn_binding("p12.w0", peer, 4, &a, &b));
}

int
main(void)
{
	builders();
	refusals();
	no_confusion();
	routing();
	validators();
	bindings();
	return check_failed;
}
