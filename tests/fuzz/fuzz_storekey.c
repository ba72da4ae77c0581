/* fuzz_storekey.c - the store's key namespace (lib/keys.c, spirt-store(5)) */
#include "fuzz.h"
#include "keys.h"

/*
 * Beyond "no crash": a key the parser takes apart is built again, byte for
 * byte, by its builder (the builders are the namespace's one writer); its
 * wire step is its step; and the key checks agree with the parser.
 */
static void
rebuild(const struct spirt_key_parts *k, const char *key)
{
	char b[SPIRT_KEY_MAX + 1];
	int rc = -1;

	switch (k->kind) {
	case SPIRT_KEY_MODEL:
		rc = spirt_key_model(b, sizeof b, k->name, k->step); break;
	case SPIRT_KEY_OPT:
		rc = spirt_key_opt(b, sizeof b, k->name, k->step); break;
	case SPIRT_KEY_GRAD:
		rc = spirt_key_grad(b, sizeof b, k->step, k->worker); break;
	case SPIRT_KEY_MOM:
		rc = spirt_key_mom(b, sizeof b, k->step, k->worker); break;
	case SPIRT_KEY_MSTATE:
		rc = spirt_key_mstate(b, sizeof b, k->name, k->step); break;
	case SPIRT_KEY_STATE:
		rc = spirt_key_state(b, sizeof b, k->step, k->worker); break;
	case SPIRT_KEY_AGG:
		rc = spirt_key_agg(b, sizeof b, k->step); break;
	case SPIRT_KEY_AGG_EXCLUDED:
		rc = spirt_key_agg_excluded(b, sizeof b, k->step); break;
	case SPIRT_KEY_XAGG:
		rc = spirt_key_xagg(b, sizeof b, k->step, k->peer); break;
	case SPIRT_KEY_GAGG:
		rc = spirt_key_gagg(b, sizeof b, k->step); break;
	case SPIRT_KEY_DIGEST:
		rc = spirt_key_digest(b, sizeof b, k->step, k->peer); break;
	case SPIRT_KEY_BEAT:
		rc = spirt_key_beat(b, sizeof b, k->peer); break;
	case SPIRT_KEY_HEALTH:
		rc = spirt_key_health(b, sizeof b, k->peer); break;
	case SPIRT_KEY_DATA_INFO:
		rc = spirt_key_data_info(b, sizeof b, k->name); break;
	case SPIRT_KEY_DATA_ASSIGN:
		rc = spirt_key_data_assign(b, sizeof b, k->name); break;
	case SPIRT_KEY_DATA_ASSIGN_REV:
		rc = spirt_key_data_assign_rev(b, sizeof b, k->name, k->step);
		break;
	case SPIRT_KEY_DATA_SCALE:
		rc = spirt_key_data_scale(b, sizeof b, k->name); break;
	case SPIRT_KEY_DATA_CLASSES:
		rc = spirt_key_data_classes(b, sizeof b, k->name); break;
	case SPIRT_KEY_DATA_X:
		rc = spirt_key_data_x(b, sizeof b, k->name, k->shard); break;
	case SPIRT_KEY_DATA_Y:
		rc = spirt_key_data_y(b, sizeof b, k->name, k->shard); break;
	default:
		/* a new kind of key: add its builder here */
		FUZZ_ASSERT(!"a kind the parser does not name");
	}
	FUZZ_ASSERT(rc == 0 && strcmp(b, key) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct spirt_key_parts k;
	char key[SPIRT_KEY_MAX + 64], name[SPIRT_NAME_PART_MAX + 1];
	uint64_t step;

	if (n >= sizeof key)
		return 0;
	memcpy(key, d, n);
	key[n] = '\0';          /* a key is a C string; NULs end it early */
	(void)spirt_key_wirestep(key);
	(void)spirt_key_volatile(key, strlen(key));
	if (spirt_name_check(key) == 0)
		FUZZ_ASSERT(spirt_key_check(key) == 0);
	if (spirt_model_key_parse(key, name, sizeof name, &step) == 0) {
		FUZZ_ASSERT(spirt_key_parse(&k, key) == 0 &&
		    k.kind == SPIRT_KEY_MODEL && k.step == step &&
		    strcmp(k.name, name) == 0);
	}
	if (spirt_key_parse(&k, key) != 0) {
		FUZZ_ASSERT(k.kind == SPIRT_KEY_NONE);
		return 0;
	}
	FUZZ_ASSERT(spirt_key_check(key) == 0);
	FUZZ_ASSERT(k.step <= SPIRT_KEY_STEP_MAX);
	rebuild(&k, key);
	switch (k.kind) {
	case SPIRT_KEY_MODEL: case SPIRT_KEY_GRAD: case SPIRT_KEY_MOM:
	case SPIRT_KEY_MSTATE: case SPIRT_KEY_STATE:
	case SPIRT_KEY_AGG: case SPIRT_KEY_AGG_EXCLUDED: case SPIRT_KEY_XAGG:
	case SPIRT_KEY_GAGG: case SPIRT_KEY_DIGEST:
		FUZZ_ASSERT(spirt_key_wirestep(key) == k.step);
		break;
	default:
		FUZZ_ASSERT(spirt_key_wirestep(key) == 0);
		break;
	}
	FUZZ_ASSERT(spirt_key_volatile(key, strlen(key)) ==
	    (k.kind == SPIRT_KEY_GRAD || k.kind == SPIRT_KEY_MOM ||
	    k.kind == SPIRT_KEY_STATE ||
	    k.kind == SPIRT_KEY_AGG ||
	    k.kind == SPIRT_KEY_AGG_EXCLUDED || k.kind == SPIRT_KEY_XAGG ||
	    k.kind == SPIRT_KEY_GAGG || k.kind == SPIRT_KEY_BEAT ||
	    k.kind == SPIRT_KEY_HEALTH));
	return 0;
}
