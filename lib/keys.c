/* keys.c - the store's key namespace: build, parse, validate, route */
/* ISC licence, see LICENSE */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"

/* ---- validators ---- */

int
spirt_key_check(const char *key)
{
	size_t n = 0;

	for (; key[n]; n++)
		if (key[n] <= ' ' || key[n] > '~')
			return SPIRT_EKEY;
	return n == 0 || n > SPIRT_KEY_MAX ? SPIRT_EKEY : 0;
}

static int
alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

int
spirt_name_check(const char *name)
{
	size_t n;

	if (*name == '\0' || *name == '.')
		return SPIRT_EKEY;
	for (n = 0; name[n]; n++)
		if (n == SPIRT_NAME_PART_MAX || !(alnum(name[n]) ||
		    name[n] == '.' || name[n] == '_' || name[n] == '-'))
			return SPIRT_EKEY;
	return 0;
}

int
spirt_key_id_check(const char *id)
{
	size_t i;

	for (i = 0; id[i]; i++)
		if (i == SPIRT_KEY_ID_MAX || !(alnum(id[i]) || (i > 0 &&
		    (id[i] == '.' || id[i] == '_' || id[i] == '-'))))
			return SPIRT_EKEY;
	return i > 0 ? 0 : SPIRT_EKEY;
}

/*
 * An unpadded decimal at s, up to SPIRT_KEY_STEP_MAX, ended by stop:
 * its value in *v, the end in *end.  0 or SPIRT_EKEY.
 */
static int
decimal(const char *s, char stop, uint64_t *v, const char **end)
{
	uint64_t x = 0;
	const char *p = s;

	if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
		return SPIRT_EKEY;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (x > (SPIRT_KEY_STEP_MAX - d) / 10)
			return SPIRT_EKEY;
		x = x * 10 + d;
	}
	if (*p != stop)
		return SPIRT_EKEY;
	*v = x;
	*end = p;
	return 0;
}

int
spirt_model_key_parse(const char *key, char *name, size_t cap,
    uint64_t *step)
{
	const char *at = strrchr(key, '@'), *end;
	size_t n;

	if (strncmp(key, "model/", 6) != 0 || at == NULL ||
	    decimal(at + 1, '\0', step, &end))
		return SPIRT_EKEY;
	n = (size_t)(at - key) - 6;
	if (n >= cap)
		return SPIRT_EKEY;
	memcpy(name, key + 6, n);
	name[n] = '\0';
	return spirt_name_check(name);
}

int
spirt_fn_binding(const char *id, char *peer, size_t cap, uint32_t *first,
    uint32_t *last)
{
	const char *dot = strrchr(id, '.'), *end;
	uint64_t a, b;
	size_t n;

	if (spirt_key_id_check(id) || dot == NULL || dot[1] != 'w' ||
	    decimal(dot + 2, strchr(dot, '-') ? '-' : '\0', &a, &end))
		return SPIRT_EKEY;
	b = a;
	if (*end == '-' && decimal(end + 1, '\0', &b, &end))
		return SPIRT_EKEY;
	n = (size_t)(dot - id);
	if (a > b || b > UINT32_MAX || n >= cap)
		return SPIRT_EKEY;
	memcpy(peer, id, n);
	peer[n] = '\0';
	if (spirt_key_id_check(peer))
		return SPIRT_EKEY;
	*first = (uint32_t)a;
	*last = (uint32_t)b;
	return 0;
}

/* ---- builders ---- */

/* fmt into buf: SPIRT_EKEY when it does not fit or is no key */
static int
fmt(char *buf, size_t cap, const char *f, ...) SPIRT_PRINTF(3, 4);

static int
fmt(char *buf, size_t cap, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, cap, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap || n > SPIRT_KEY_MAX) {
		if (cap)
			buf[0] = '\0';
		return SPIRT_EKEY;
	}
	return 0;
}

static int
badstep(char *buf, size_t cap, uint64_t step)
{
	if (step <= SPIRT_KEY_STEP_MAX)
		return 0;
	if (cap)
		buf[0] = '\0';
	return SPIRT_EKEY;
}

/* a name or id part: checked, else an empty buf */
static int
badpart(char *buf, size_t cap, int rc)
{
	if (rc && cap)
		buf[0] = '\0';
	return rc;
}

#define NAME(b, c, s) badpart((b), (c), spirt_name_check(s))
#define ID(b, c, s) badpart((b), (c), spirt_key_id_check(s))

/* "<ns>/<name>@<t>" */
static int
version(char *buf, size_t cap, const char *ns, const char *name,
    uint64_t step)
{
	int rc;

	if ((rc = NAME(buf, cap, name)) || (rc = badstep(buf, cap, step)))
		return rc;
	return fmt(buf, cap, "%s/%s@%" PRIu64, ns, name, step);
}

int
spirt_key_model(char *buf, size_t cap, const char *name, uint64_t step)
{
	return version(buf, cap, "model", name, step);
}

int
spirt_key_opt(char *buf, size_t cap, const char *name, uint64_t step)
{
	return version(buf, cap, "opt", name, step);
}

int
spirt_key_mstate(char *buf, size_t cap, const char *name, uint64_t step)
{
	return version(buf, cap, "mstate", name, step);
}

int
spirt_key_mstate_prefix(char *buf, size_t cap, const char *name)
{
	int rc = NAME(buf, cap, name);

	return rc ? rc : fmt(buf, cap, "mstate/%s@", name);
}

int
spirt_key_model_prefix(char *buf, size_t cap, const char *name)
{
	int rc = NAME(buf, cap, name);

	return rc ? rc : fmt(buf, cap, "model/%s@", name);
}

int
spirt_key_opt_prefix(char *buf, size_t cap, const char *name)
{
	int rc = NAME(buf, cap, name);

	return rc ? rc : fmt(buf, cap, "opt/%s@", name);
}

int
spirt_key_grad(char *buf, size_t cap, uint64_t step, uint32_t worker)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, "grad/%" PRIu64 "/%" PRIu32, step,
	    worker);
}

int
spirt_key_grad_prefix(char *buf, size_t cap, uint64_t step)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, "grad/%" PRIu64 "/", step);
}

int
spirt_key_mom(char *buf, size_t cap, uint64_t step, uint32_t worker)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, "mom/%" PRIu64 "/%" PRIu32, step,
	    worker);
}

int
spirt_key_state(char *buf, size_t cap, uint64_t step, uint32_t worker)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, "state/%" PRIu64 "/%" PRIu32, step,
	    worker);
}

int
spirt_key_aggroot(char *buf, size_t cap, const char *root, uint64_t step)
{
	int rc = badstep(buf, cap, step);

	if (!rc && root)
		rc = NAME(buf, cap, root);
	return rc ? rc : fmt(buf, cap, "%s/%" PRIu64, root ? root : "agg",
	    step);
}

int
spirt_key_aggroot_excluded(char *buf, size_t cap, const char *root,
    uint64_t step)
{
	int rc = badstep(buf, cap, step);

	if (!rc && root)
		rc = NAME(buf, cap, root);
	return rc ? rc : fmt(buf, cap, "%s/%" PRIu64 "/excluded",
	    root ? root : "agg", step);
}

int
spirt_key_agg(char *buf, size_t cap, uint64_t step)
{
	return spirt_key_aggroot(buf, cap, NULL, step);
}

int
spirt_key_agg_excluded(char *buf, size_t cap, uint64_t step)
{
	return spirt_key_aggroot_excluded(buf, cap, NULL, step);
}

int
spirt_key_xagg(char *buf, size_t cap, uint64_t step, const char *peer)
{
	int rc;

	if ((rc = badstep(buf, cap, step)) || (rc = ID(buf, cap, peer)))
		return rc;
	return fmt(buf, cap, "xagg/%" PRIu64 "/%s", step, peer);
}

int
spirt_key_gagg(char *buf, size_t cap, uint64_t step)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, "gagg/%" PRIu64, step);
}

int
spirt_key_gagg_round(char *buf, size_t cap, uint64_t step)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, "gagg/%" PRIu64 "/round", step);
}

int
spirt_key_digest(char *buf, size_t cap, uint64_t step, const char *peer)
{
	int rc;

	if ((rc = badstep(buf, cap, step)) || (rc = ID(buf, cap, peer)))
		return rc;
	return fmt(buf, cap, "digest/%" PRIu64 "/%s", step, peer);
}

int
spirt_key_xslice(char *buf, size_t cap, uint64_t step, const char *owner)
{
	int rc;

	if ((rc = badstep(buf, cap, step)) ||
	    (owner && (rc = ID(buf, cap, owner))))
		return rc;
	return owner ? fmt(buf, cap, "xslice/%" PRIu64 "/%s", step, owner) :
	    fmt(buf, cap, "xslice/%" PRIu64, step);
}

int
spirt_key_xpart(char *buf, size_t cap, uint64_t step, int sig)
{
	int rc = badstep(buf, cap, step);

	return rc ? rc : fmt(buf, cap, sig ? "xpart/%" PRIu64 "/signed" :
	    "xpart/%" PRIu64, step);
}

int
spirt_key_beat(char *buf, size_t cap, const char *member)
{
	int rc = ID(buf, cap, member);

	return rc ? rc : fmt(buf, cap, "beat/%s", member);
}

int
spirt_key_health(char *buf, size_t cap, const char *member)
{
	int rc = ID(buf, cap, member);

	return rc ? rc : fmt(buf, cap, "health/%s", member);
}

/* "data/<ds>/<what>" */
static int
data(char *buf, size_t cap, const char *ds, const char *what)
{
	int rc = NAME(buf, cap, ds);

	return rc ? rc : fmt(buf, cap, "data/%s/%s", ds, what);
}

int
spirt_key_data_prefix(char *buf, size_t cap, const char *ds)
{
	return data(buf, cap, ds, "");
}

int
spirt_key_data_info(char *buf, size_t cap, const char *ds)
{
	return data(buf, cap, ds, "info");
}

int
spirt_key_data_assign(char *buf, size_t cap, const char *ds)
{
	return data(buf, cap, ds, "assign");
}

int
spirt_key_data_assign_rev(char *buf, size_t cap, const char *ds,
    uint64_t rev)
{
	int rc;

	if ((rc = NAME(buf, cap, ds)) || (rc = badstep(buf, cap, rev)))
		return rc;
	return fmt(buf, cap, "data/%s/assign/%" PRIu64, ds, rev);
}

int
spirt_key_data_scale(char *buf, size_t cap, const char *ds)
{
	return data(buf, cap, ds, "scale");
}

int
spirt_key_data_classes(char *buf, size_t cap, const char *ds)
{
	return data(buf, cap, ds, "classes");
}

/* "data/<ds>/<k>/<xy>" */
static int
shard(char *buf, size_t cap, const char *ds, uint64_t k, char xy)
{
	int rc;

	if ((rc = NAME(buf, cap, ds)) || (rc = badstep(buf, cap, k)))
		return rc;
	return fmt(buf, cap, "data/%s/%" PRIu64 "/%c", ds, k, xy);
}

int
spirt_key_data_x(char *buf, size_t cap, const char *ds, uint64_t k)
{
	return shard(buf, cap, ds, k, 'x');
}

int
spirt_key_data_y(char *buf, size_t cap, const char *ds, uint64_t k)
{
	return shard(buf, cap, ds, k, 'y');
}

/* ---- parser ---- */

/* copy s[0..n) into out (cap bytes) if check passes */
static int
part(char *out, size_t cap, const char *s, size_t n,
    int (*check)(const char *))
{
	if (n >= cap)
		return SPIRT_EKEY;
	memcpy(out, s, n);
	out[n] = '\0';
	return check(out);
}

/* after "<root>/": "<t>" (rest NULL) or "<t>/<rest>" */
static int
stepkey(struct spirt_key_parts *k, const char *s, const char **rest)
{
	const char *end;

	if (decimal(s, '\0', &k->step, &end) == 0) {
		*rest = NULL;
		return 0;
	}
	if (decimal(s, '/', &k->step, &end))
		return SPIRT_EKEY;
	*rest = end + 1;
	return 0;
}

static int
parse_version(struct spirt_key_parts *k, const char *s, int kind)
{
	const char *at = strrchr(s, '@'), *end;

	if (at == NULL || decimal(at + 1, '\0', &k->step, &end) ||
	    part(k->name, sizeof k->name, s, (size_t)(at - s),
	    spirt_name_check))
		return SPIRT_EKEY;
	k->kind = kind;
	return 0;
}

static int
parse_grad(struct spirt_key_parts *k, const char *s, int kind)
{
	const char *rest, *end;
	uint64_t w;

	if (stepkey(k, s, &rest) || rest == NULL ||
	    decimal(rest, '\0', &w, &end) || w > UINT32_MAX)
		return SPIRT_EKEY;
	k->worker = (uint32_t)w;
	k->kind = kind;
	return 0;
}

static int
parse_agg(struct spirt_key_parts *k, const char *s)
{
	const char *rest;

	if (stepkey(k, s, &rest))
		return SPIRT_EKEY;
	if (rest == NULL)
		k->kind = SPIRT_KEY_AGG;
	else if (strcmp(rest, "excluded") == 0)
		k->kind = SPIRT_KEY_AGG_EXCLUDED;
	else
		return SPIRT_EKEY;
	return 0;
}

/* "<t>/<peer>" */
static int
parse_peerstep(struct spirt_key_parts *k, const char *s, int kind)
{
	const char *rest;

	if (stepkey(k, s, &rest) || rest == NULL ||
	    part(k->peer, sizeof k->peer, rest, strlen(rest),
	    spirt_key_id_check))
		return SPIRT_EKEY;
	k->kind = kind;
	return 0;
}

static int
parse_gagg(struct spirt_key_parts *k, const char *s)
{
	const char *rest;

	if (stepkey(k, s, &rest) || rest != NULL)
		return SPIRT_EKEY;
	k->kind = SPIRT_KEY_GAGG;
	return 0;
}

static int
parse_beat(struct spirt_key_parts *k, const char *s, int kind)
{
	if (part(k->peer, sizeof k->peer, s, strlen(s), spirt_key_id_check))
		return SPIRT_EKEY;
	k->kind = kind;
	return 0;
}

static int
parse_data(struct spirt_key_parts *k, const char *s)
{
	const char *slash = strchr(s, '/'), *rest, *end;

	if (slash == NULL || part(k->name, sizeof k->name, s,
	    (size_t)(slash - s), spirt_name_check))
		return SPIRT_EKEY;
	rest = slash + 1;
	if (strcmp(rest, "info") == 0)
		k->kind = SPIRT_KEY_DATA_INFO;
	else if (strcmp(rest, "assign") == 0)
		k->kind = SPIRT_KEY_DATA_ASSIGN;
	else if (strncmp(rest, "assign/", 7) == 0 &&
	    decimal(rest + 7, '\0', &k->step, &end) == 0)
		k->kind = SPIRT_KEY_DATA_ASSIGN_REV;
	else if (strcmp(rest, "scale") == 0)
		k->kind = SPIRT_KEY_DATA_SCALE;
	else if (strcmp(rest, "classes") == 0)
		k->kind = SPIRT_KEY_DATA_CLASSES;
	else if (decimal(rest, '/', &k->shard, &end) == 0 &&
	    (end[1] == 'x' || end[1] == 'y') && end[2] == '\0')
		k->kind = end[1] == 'x' ? SPIRT_KEY_DATA_X : SPIRT_KEY_DATA_Y;
	else
		return SPIRT_EKEY;
	return 0;
}

int
spirt_key_parse(struct spirt_key_parts *k, const char *key)
{
	int rc;

	memset(k, 0, sizeof *k);
	if (spirt_key_check(key))
		rc = SPIRT_EKEY;
	else if (!strncmp(key, "model/", 6))
		rc = parse_version(k, key + 6, SPIRT_KEY_MODEL);
	else if (!strncmp(key, "opt/", 4))
		rc = parse_version(k, key + 4, SPIRT_KEY_OPT);
	else if (!strncmp(key, "grad/", 5))
		rc = parse_grad(k, key + 5, SPIRT_KEY_GRAD);
	else if (!strncmp(key, "mom/", 4))
		rc = parse_grad(k, key + 4, SPIRT_KEY_MOM);
	else if (!strncmp(key, "mstate/", 7))
		rc = parse_version(k, key + 7, SPIRT_KEY_MSTATE);
	else if (!strncmp(key, "state/", 6))
		rc = parse_grad(k, key + 6, SPIRT_KEY_STATE);
	else if (!strncmp(key, "agg/", 4))
		rc = parse_agg(k, key + 4);
	else if (!strncmp(key, "xagg/", 5))
		rc = parse_peerstep(k, key + 5, SPIRT_KEY_XAGG);
	else if (!strncmp(key, "gagg/", 5))
		rc = parse_gagg(k, key + 5);
	else if (!strncmp(key, "digest/", 7))
		rc = parse_peerstep(k, key + 7, SPIRT_KEY_DIGEST);
	else if (!strncmp(key, "beat/", 5))
		rc = parse_beat(k, key + 5, SPIRT_KEY_BEAT);
	else if (!strncmp(key, "health/", 7))
		rc = parse_beat(k, key + 7, SPIRT_KEY_HEALTH);
	else if (!strncmp(key, "data/", 5))
		rc = parse_data(k, key + 5);
	else
		rc = SPIRT_EKEY;
	if (rc) {
		memset(k, 0, sizeof *k);
		return SPIRT_EKEY;
	}
	return 0;
}

/* ---- routing ---- */

static int
under(const char *key, size_t len, const char *root)
{
	size_t n = strlen(root);

	return len >= n && memcmp(key, root, n) == 0;
}

int
spirt_key_volatile(const char *key, size_t len)
{
	return under(key, len, SPIRT_KEY_GRAD_ROOT) ||
	    under(key, len, SPIRT_KEY_STATE_ROOT) ||
	    under(key, len, SPIRT_KEY_MOM_ROOT) ||
	    under(key, len, SPIRT_KEY_AGG_ROOT) || under(key, len, "xagg/") ||
	    under(key, len, "gagg/") || under(key, len, "beat/") ||
	    under(key, len, "health/");
}

uint64_t
spirt_key_wirestep(const char *key)
{
	static const char *const roots[] = {
		SPIRT_KEY_GRAD_ROOT, SPIRT_KEY_STATE_ROOT, SPIRT_KEY_MOM_ROOT,
		SPIRT_KEY_AGG_ROOT, "xagg/", "gagg/", "digest/", "xslice/",
		"xpart/"
	};
	/* the partitioned exchange's (lib/xpart.h): xslice/<t>,
	 * xslice/<t>/<id>, xpart/<t>, xpart/<t>/signed */
	static const char *const parts[] = { "xslice/", "xpart/" };
	struct spirt_key_parts k;
	const char *end;
	uint64_t t;

	if (spirt_key_parse(&k, key) == 0)
		switch (k.kind) {
		case SPIRT_KEY_MODEL: case SPIRT_KEY_GRAD: case SPIRT_KEY_MOM:
		case SPIRT_KEY_MSTATE: case SPIRT_KEY_STATE: case SPIRT_KEY_AGG:
		case SPIRT_KEY_AGG_EXCLUDED: case SPIRT_KEY_XAGG:
		case SPIRT_KEY_GAGG: case SPIRT_KEY_DIGEST:
			return k.step;
		default:
			return 0;
		}
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		size_t n = strlen(parts[i]);

		if (strncmp(key, parts[i], n) == 0 &&
		    decimal(key + n, '\0', &t, &end) == 0)
			return t;
	}
	/* not a whole key: a record or a listing under a step */
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		size_t n = strlen(roots[i]);

		if (strncmp(key, roots[i], n) == 0)
			return decimal(key + n, '/', &t, &end) == 0 ? t : 0;
	}
	return 0;
}
