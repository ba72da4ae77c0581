/* metrics.c - a peer's figures as OpenMetrics text (ISC licence) */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "kv.h"
#include "metrics.h"
#include "parse.h"

#define NAMES 8         /* model names shown; more are left out */
#define STATES 8        /* fates of members in a round */

/* the text, grown as it is written; rc the first error */
struct out {
	char *b;
	size_t n, cap;
	int rc;
};

static void
put(struct out *o, const char *fmt, ...) SPIRT_PRINTF(2, 3);

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (o->rc)
		return;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(o->b + o->n, o->cap - o->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			o->rc = EINVAL;
			return;
		}
		if ((size_t)k < o->cap - o->n) {
			o->n += (size_t)k;
			return;
		}
		size_t cap = o->cap * 2 + (size_t)k;
		char *b = realloc(o->b, cap);

		if (!b) {
			o->rc = ENOMEM;
			return;
		}
		o->b = b;
		o->cap = cap;
	}
}

/* a label's value: what a key may hold, any other byte as '_' */
static void
label(char *dst, size_t cap, const char *s, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n && k + 1 < cap; i++) {
		char c = s[i];

		dst[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ? c : '_';
	}
	dst[k] = '\0';
}

/* ---- the store's side ---- */

struct models {
	size_t n;
	struct {
		char name[SPIRT_KEY_MAX + 1];
		uint64_t step;
	} m[NAMES];
};

/* model/<name>@<t>: the latest t of each name */
static int
model_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct models *ms = arg;
	const char *name = key + strlen("model/"), *at = strrchr(name, '@');
	uint64_t t;
	size_t i;

	(void)val;
	(void)len;
	if (!at || at == name || spirt_parse_u64(&t, at + 1, 0, UINT64_MAX))
		return 0;
	for (i = 0; i < ms->n; i++)
		if (strlen(ms->m[i].name) == (size_t)(at - name) &&
		    !memcmp(ms->m[i].name, name, (size_t)(at - name)))
			break;
	if (i == ms->n) {
		if (ms->n == NAMES)
			return 0;
		label(ms->m[i].name, sizeof ms->m[i].name, name,
		    (size_t)(at - name));
		ms->m[i].step = t;
		ms->n++;
	} else if (t > ms->m[i].step) {
		ms->m[i].step = t;
	}
	return 0;
}

/* gagg/<t>/round: the latest t */
struct rounds {
	int found;
	uint64_t step;
};

static int
round_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct rounds *r = arg;
	const char *s = key + strlen("gagg/"), *slash = strchr(s, '/');
	char num[24];
	uint64_t t;

	(void)val;
	(void)len;
	if (!slash || strcmp(slash, "/round") || (size_t)(slash - s) >=
	    sizeof num)
		return 0;
	memcpy(num, s, (size_t)(slash - s));
	num[slash - s] = '\0';
	if (spirt_parse_u64(&t, num, 0, UINT64_MAX))
		return 0;
	if (!r->found || t > r->step)
		r->step = t;
	r->found = 1;
	return 0;
}

/* what the latest round's record says */
struct round {
	double xms;
	int has_xms;
	/* the partitioned exchange's phases= (name, ms) */
	size_t nph;
	struct {
		char name[16];
		double ms;
	} ph[8];
	char rule[32];
	size_t nst;
	struct {
		char name[24];
		unsigned n;
	} st[STATES];
};

/* peer=<id> <state>[: why]: counted by state */
static void
count_peer(struct round *rd, const char *v, size_t n)
{
	const char *sp = memchr(v, ' ', n), *end;
	char name[sizeof rd->st[0].name];
	size_t i;

	if (!sp)
		return;
	sp++;
	end = memchr(sp, ':', n - (size_t)(sp - v));
	label(name, sizeof name, sp, (size_t)((end ? end : v + n) - sp));
	if (!strcmp(name, "self"))      /* this member, its aggregate in */
		strcpy(name, "used");
	for (i = 0; i < rd->nst; i++)
		if (!strcmp(rd->st[i].name, name))
			break;
	if (i == rd->nst) {
		if (rd->nst == STATES)
			return;
		memcpy(rd->st[i].name, name, sizeof name);
		rd->st[i].n = 0;
		rd->nst++;
	}
	rd->st[i].n++;
}

/* phases=<name>:<ms> ...: each into rd->ph, at most 8 (a name of
 * letters, 15 at most; ms a number) */
static int
phases_read(struct round *rd, const char *v, size_t n)
{
	size_t i = 0;

	while (i < n && rd->nph < sizeof rd->ph / sizeof rd->ph[0]) {
		size_t a = i, c;
		char num[32];

		while (i < n && v[i] != ' ')
			i++;
		for (c = a; c < i && v[c] != ':'; c++)
			if (v[c] < 'a' || v[c] > 'z')
				return SPIRT_EDATA;
		if (c == a || c == i || c - a >= sizeof rd->ph[0].name ||
		    i - c - 1 >= sizeof num)
			return SPIRT_EDATA;
		memcpy(rd->ph[rd->nph].name, v + a, c - a);
		rd->ph[rd->nph].name[c - a] = '\0';
		memcpy(num, v + c + 1, i - c - 1);
		num[i - c - 1] = '\0';
		if (spirt_parse_double(&rd->ph[rd->nph].ms, num, 0, 1e12))
			return SPIRT_EDATA;
		rd->nph++;
		i++;
	}
	return 0;
}

/* 0 when the record parses, else not 0 (and rd says what it read) */
static int
round_read(struct round *rd, const void *val, size_t len)
{
	static const char *const multi[] = { "peer", NULL };
	struct spirt_kvr r;
	const void *b;
	char v[32];
	size_t n;
	int rc;

	memset(rd, 0, sizeof *rd);
	if (spirt_store_get_bytes(val, len, &b, &n) ||
	    spirt_kvr_open(&r, b, n, "spirt-round", multi, 0))
		return SPIRT_EDATA;
	while ((rc = spirt_kvr_next(&r)) == 0) {
		if (spirt_kvr_is(&r, "peer")) {
			count_peer(rd, r.val, r.vlen);
		} else if (spirt_kvr_is(&r, "rule")) {
			label(rd->rule, sizeof rd->rule, r.val, r.vlen);
		} else if (spirt_kvr_is(&r, "phases")) {
			if (phases_read(rd, r.val, r.vlen))
				return SPIRT_EDATA;
		} else if (spirt_kvr_is(&r, "xms")) {
			if (spirt_kvr_str(&r, v, sizeof v) ||
			    spirt_parse_double(&rd->xms, v, 0, 1e12))
				return SPIRT_EDATA;
			rd->has_xms = 1;
		}
	}
	return rc == SPIRT_EOF ? 0 : rc;
}

static int
store_part(struct out *o, struct spirt_store *s)
{
	struct models ms = { 0 };
	struct rounds rs = { 0, 0 };
	struct round rd;
	struct spirt_txn *t;
	char key[SPIRT_KEY_MAX + 1];
	const void *val;
	size_t len, i;
	int rc, have = 0;

	if ((rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_store_list(t, "model/", model_fn, &ms)) ||
	    (rc = spirt_store_list(t, "gagg/", round_fn, &rs)))
		goto out;
	if (rs.found && spirt_key_gagg_round(key, sizeof key, rs.step) == 0 &&
	    spirt_store_get(t, key, &val, &len) == 0)
		have = round_read(&rd, val, len) == 0;
	put(o, "# TYPE spirt_model_step gauge\n"
	    "# HELP spirt_model_step The latest version of each model in "
	    "the store.\n");
	for (i = 0; i < ms.n; i++)
		put(o, "spirt_model_step{model=\"%s\"} %" PRIu64 "\n",
		    ms.m[i].name, ms.m[i].step);
	if (!have)
		goto out;
	put(o, "# TYPE spirt_round_step gauge\n"
	    "# HELP spirt_round_step The step of the latest round's record "
	    "(gagg/<t>/round).\n"
	    "spirt_round_step{rule=\"%s\"} %" PRIu64 "\n", rd.rule, rs.step);
	if (rd.has_xms)
		put(o, "# TYPE spirt_round_pull_seconds gauge\n"
		    "# UNIT spirt_round_pull_seconds seconds\n"
		    "# HELP spirt_round_pull_seconds The latest round's pulls: "
		    "the slowest used member's time (xms).\n"
		    "spirt_round_pull_seconds %.6f\n", rd.xms / 1000);
	if (rd.nph) {
		put(o, "# TYPE spirt_round_phase_seconds gauge\n"
		    "# UNIT spirt_round_phase_seconds seconds\n"
		    "# HELP spirt_round_phase_seconds The latest round's "
		    "phases (exchange --parts): their times.\n");
		for (i = 0; i < rd.nph; i++)
			put(o, "spirt_round_phase_seconds{phase=\"%s\"} %.6f\n",
			    rd.ph[i].name, rd.ph[i].ms / 1000);
	}
	put(o, "# TYPE spirt_round_members gauge\n"
	    "# HELP spirt_round_members The latest round's members, this "
	    "one included, by their fate.\n");
	for (i = 0; i < rd.nst; i++)
		put(o, "spirt_round_members{state=\"%s\"} %u\n",
		    rd.st[i].name, rd.st[i].n);
out:
	spirt_txn_abort(t);
	return rc;
}

/* ---- the server's side ---- */

static void
srv_part(struct out *o, const struct spirt_metrics_srv *sv)
{
	put(o, "# TYPE spirt_requests counter\n"
	    "# HELP spirt_requests Requests answered.\n"
	    "spirt_requests_total %" PRIu64 "\n", sv->served);
	put(o, "# TYPE spirt_refusals counter\n"
	    "# HELP spirt_refusals Requests refused, by reason "
	    "(spirt(7)'s names).\n");
	for (int i = 0; i < SPIRT_ELAST - SPIRT_EOF; i++)
		if (sv->by_code[i] && spirt_errname(SPIRT_EOF + i))
			put(o, "spirt_refusals_total{reason=\"%s\"} %" PRIu64
			    "\n", spirt_errname(SPIRT_EOF + i), sv->by_code[i]);
	put(o, "# TYPE spirt_received_bytes counter\n"
	    "# UNIT spirt_received_bytes bytes\n"
	    "# HELP spirt_received_bytes Request bodies read.\n"
	    "spirt_received_bytes_total %" PRIu64 "\n"
	    "# TYPE spirt_sent_bytes counter\n"
	    "# UNIT spirt_sent_bytes bytes\n"
	    "# HELP spirt_sent_bytes Answers given (sealed values "
	    "included).\n"
	    "spirt_sent_bytes_total %" PRIu64 "\n"
	    "# TYPE spirt_sessions gauge\n"
	    "# HELP spirt_sessions Members' sessions open.\n"
	    "spirt_sessions %" PRIu64 "\n"
	    "# TYPE spirt_connections gauge\n"
	    "# HELP spirt_connections Connections open.\n"
	    "spirt_connections %" PRIu64 "\n",
	    sv->bytes_in, sv->bytes_out, sv->sessions, sv->conns);
}

int
spirt_metrics_text(char **out, size_t *len, struct spirt_store *s,
    const struct spirt_metrics_srv *sv)
{
	struct out o = { NULL, 0, 4096, 0 };
	int rc;

	*out = NULL;
	*len = 0;
	if (!(o.b = malloc(o.cap)))
		return ENOMEM;
	rc = store_part(&o, s);
	srv_part(&o, sv);
	put(&o, "# EOF\n");
	if (rc || (rc = o.rc)) {
		free(o.b);
		return rc;
	}
	*out = o.b;
	*len = o.n;
	return 0;
}
