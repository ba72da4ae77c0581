/* beat.c - heartbeats: the beat record, the watcher's view, one budget */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "beat.h"
#include "io.h"
#include "kv.h"
#include "parse.h"
#include "tensor.h"

/* ---- the budget ---- */

void
spirt_beat_budget_init(struct spirt_beat_budget *b, unsigned beat_ms)
{
	b->beat_ms = beat_ms;
	b->suspect_ms = SPIRT_BEAT_SUSPECT * beat_ms;
	b->dead_ms = SPIRT_BEAT_DEAD * beat_ms;
}

int
spirt_beat_budget_check(const struct spirt_beat_budget *b)
{
	return b->beat_ms > 0 && b->beat_ms < b->suspect_ms &&
	    b->suspect_ms < b->dead_ms ? 0 : SPIRT_EINVAL;
}

/* ---- names ---- */

const char *
spirt_beat_role_name(int role)
{
	return role == SPIRT_BEAT_PEER ? "peer" : role == SPIRT_BEAT_FUNCTION ?
	    "function" : "none";
}

int
spirt_beat_role_parse(const char *s)
{
	return strcmp(s, "peer") == 0 ? SPIRT_BEAT_PEER :
	    strcmp(s, "function") == 0 ? SPIRT_BEAT_FUNCTION : 0;
}

const char *
spirt_beat_status_name(int status)
{
	switch (status) {
	case SPIRT_BEAT_LIVE: return "live";
	case SPIRT_BEAT_CATCHUP: return "catchup";
	case SPIRT_BEAT_STOP: return "stop";
	default: return "none";
	}
}

static int
status_parse(const char *s)
{
	return strcmp(s, "live") == 0 ? SPIRT_BEAT_LIVE :
	    strcmp(s, "catchup") == 0 ? SPIRT_BEAT_CATCHUP :
	    strcmp(s, "stop") == 0 ? SPIRT_BEAT_STOP : 0;
}

const char *
spirt_health_state_name(int state)
{
	switch (state) {
	case SPIRT_H_LIVE: return "live";
	case SPIRT_H_SUSPECT: return "suspect";
	case SPIRT_H_DEAD: return "dead";
	case SPIRT_H_JOINING: return "joining";
	default: return "unknown";
	}
}

/* ---- text: NAME=value lines ---- */

static int
unhex(unsigned char *b, size_t n, const char *s)
{
	if (strlen(s) != 2 * n)
		return SPIRT_EDATA;
	for (size_t i = 0; i < 2 * n; i++) {
		int c = s[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return SPIRT_EDATA;
		if (i % 2 == 0)
			b[i / 2] = (unsigned char)(v << 4);
		else
			b[i / 2] |= (unsigned char)v;
	}
	return 0;
}

static int
beat_ok(const struct spirt_beat *b)
{
	return spirt_key_id_check(b->member) == 0 &&
	    (b->role == SPIRT_BEAT_PEER || b->role == SPIRT_BEAT_FUNCTION) &&
	    status_parse(spirt_beat_status_name(b->status)) != 0 &&
	    b->interval_ms > 0;
}

static void
beat_text(struct spirt_kvw *w, const struct spirt_beat *b)
{
	spirt_kvw_put(w, "member", b->member);
	spirt_kvw_put(w, "role", spirt_beat_role_name(b->role));
	spirt_kvw_put(w, "status", spirt_beat_status_name(b->status));
	if (b->step == SPIRT_NOSTEP)
		spirt_kvw_put(w, "step", "none");
	else
		spirt_kvw_putf(w, "step", "%" PRIu64, b->step);
	spirt_kvw_putf(w, "seq", "%" PRIu64, b->seq);
	spirt_kvw_hex(w, "boot", b->boot, SPIRT_BEAT_BOOT);
	spirt_kvw_putf(w, "interval", "%u", b->interval_ms);
}

int
spirt_beat_format(char *buf, size_t cap, size_t *len,
    const struct spirt_beat *b)
{
	struct spirt_kvw w;

	if (!beat_ok(b))
		return SPIRT_EINVAL;
	spirt_kvw_init(&w, buf, cap, "spirt-beat");
	beat_text(&w, b);
	return spirt_kvw_end(&w, len);
}

/* a reader of the fields in their order (kv.h) */
struct rd {
	struct spirt_kvr k;
	char val[128];
};

/* the next line must be name=...: its value in r->val */
static int
field(struct rd *r, const char *name)
{
	return spirt_kvr_want(&r->k, name) || spirt_kvr_str(&r->k, r->val,
	    sizeof r->val) ? SPIRT_EDATA : 0;
}

/* r->val a decimal number (no sign, no leading zero) up to max */
static int
val_num(const struct rd *r, uint64_t *v, uint64_t max)
{
	if (r->val[0] < '0' || r->val[0] > '9' || (r->val[0] == '0' &&
	    r->val[1]))
		return SPIRT_EDATA;
	return spirt_parse_u64(v, r->val, 0, max) ? SPIRT_EDATA : 0;
}

static int
fnum(struct rd *r, const char *name, uint64_t *v, uint64_t max)
{
	return field(r, name) || val_num(r, v, max) ? SPIRT_EDATA : 0;
}

static int
beat_fields(struct rd *r, struct spirt_beat *b)
{
	uint64_t v;
	int rc;

	memset(b, 0, sizeof *b);
	if ((rc = field(r, "member")) || spirt_key_id_check(r->val))
		return SPIRT_EDATA;
	memcpy(b->member, r->val, strlen(r->val) + 1);
	if (field(r, "role") || !(b->role = spirt_beat_role_parse(r->val)))
		return SPIRT_EDATA;
	if (field(r, "status") || !(b->status = status_parse(r->val)))
		return SPIRT_EDATA;
	if (field(r, "step"))
		return SPIRT_EDATA;
	if (strcmp(r->val, "none") == 0)
		b->step = SPIRT_NOSTEP;
	else if (val_num(r, &b->step, SPIRT_NOSTEP - 1))
		return SPIRT_EDATA;
	if (fnum(r, "seq", &b->seq, UINT64_MAX))
		return SPIRT_EDATA;
	if (field(r, "boot") || unhex(b->boot, SPIRT_BEAT_BOOT, r->val))
		return SPIRT_EDATA;
	if (fnum(r, "interval", &v, 86400000) || v == 0)
		return SPIRT_EDATA;
	b->interval_ms = (unsigned)v;
	return 0;
}

int
spirt_beat_parse(struct spirt_beat *b, const void *text, size_t len)
{
	struct rd r;
	int rc;

	if ((rc = spirt_kvr_open(&r.k, text, len, "spirt-beat", NULL, 0)) ||
	    (rc = beat_fields(&r, b)))
		return rc;
	return spirt_kvr_end(&r.k);
}

/* ---- records ---- */

int
spirt_beat_put(struct spirt_txn *t, const struct spirt_beat *b)
{
	char key[SPIRT_KEY_MAX + 1], text[512];
	size_t n;
	int rc;

	if ((rc = spirt_beat_format(text, sizeof text, &n, b)) ||
	    (rc = spirt_key_beat(key, sizeof key, b->member)))
		return rc;
	return spirt_store_put_bytes(t, key, text, n, b->step, 0);
}

int
spirt_beat_decode(struct spirt_beat *b, const char *member, const void *val,
    size_t len)
{
	const void *p;
	size_t n;
	int rc;

	if ((rc = spirt_store_get_bytes(val, len, &p, &n)) ||
	    (rc = spirt_beat_parse(b, p, n)))
		return rc;
	return strcmp(b->member, member) ? SPIRT_EADDR : 0;
}

/* ---- the host and its clock ---- */

int
spirt_host_boot(unsigned char host[SPIRT_BEAT_BOOT])
{
	char buf[64], h[2 * SPIRT_BEAT_BOOT + 1];
	size_t k = 0;
	ssize_t n;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);

	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? errno : EIO;
	for (ssize_t i = 0; i < n && k < sizeof h - 1; i++)
		if (buf[i] != '-' && buf[i] != '\n')
			h[k++] = buf[i];
	h[k] = '\0';
	return unhex(host, SPIRT_BEAT_BOOT, h) ? EIO : 0;
}

int
spirt_beat_boot_new(unsigned char boot[SPIRT_BEAT_BOOT])
{
	int fd = open("/dev/urandom", O_RDONLY), rc = 0;
	ssize_t n;

	if (fd < 0)
		return errno;
	if ((n = spirt_readall(fd, boot, SPIRT_BEAT_BOOT)) !=
	    SPIRT_BEAT_BOOT)
		rc = n < 0 ? errno : EIO;
	close(fd);
	return rc;
}

uint64_t
spirt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the watcher's view ---- */

int
spirt_health_format(char *buf, size_t cap, size_t *len,
    const struct spirt_health *h)
{
	struct spirt_kvw w;

	if (!beat_ok(&h->b))
		return SPIRT_EINVAL;
	spirt_kvw_init(&w, buf, cap, "spirt-health");
	beat_text(&w, &h->b);
	spirt_kvw_hex(&w, "host", h->host, SPIRT_BEAT_BOOT);
	spirt_kvw_putf(&w, "first", "%" PRIu64, h->first_ns);
	spirt_kvw_putf(&w, "seen", "%" PRIu64, h->seen_ns);
	spirt_kvw_putf(&w, "suspect", "%u", h->suspect_ms);
	spirt_kvw_putf(&w, "dead", "%u", h->dead_ms);
	spirt_kvw_putf(&w, "declared", "%d", h->dead_run ? 1 : 0);
	return spirt_kvw_end(&w, len);
}

int
spirt_health_parse(struct spirt_health *h, const void *text, size_t len)
{
	struct rd r;
	uint64_t v;
	int rc;

	memset(h, 0, sizeof *h);
	if ((rc = spirt_kvr_open(&r.k, text, len, "spirt-health", NULL, 0)) ||
	    (rc = beat_fields(&r, &h->b)))
		return rc;
	if (field(&r, "host") || unhex(h->host, SPIRT_BEAT_BOOT, r.val) ||
	    fnum(&r, "first", &h->first_ns, UINT64_MAX) ||
	    fnum(&r, "seen", &h->seen_ns, UINT64_MAX))
		return SPIRT_EDATA;
	if (fnum(&r, "suspect", &v, 86400000) || v == 0)
		return SPIRT_EDATA;
	h->suspect_ms = (unsigned)v;
	if (fnum(&r, "dead", &v, 86400000) || v <= h->suspect_ms)
		return SPIRT_EDATA;
	h->dead_ms = (unsigned)v;
	if (fnum(&r, "declared", &v, 1))
		return SPIRT_EDATA;
	h->dead_run = (int)v;
	return spirt_kvr_end(&r.k);
}

int
spirt_health_observe(struct spirt_health *h, const struct spirt_beat *b,
    const unsigned char host[SPIRT_BEAT_BOOT], uint64_t now_ns)
{
	int fresh = h->b.member[0] == '\0' ||
	    memcmp(h->host, host, SPIRT_BEAT_BOOT) != 0;
	int reboot = !fresh && memcmp(h->b.boot, b->boot, SPIRT_BEAT_BOOT);

	if (!fresh && !reboot && h->b.seq == b->seq && h->b.status ==
	    b->status && h->b.step == b->step)
		return 0;
	if (fresh || reboot || h->b.seq != b->seq || h->b.status !=
	    b->status)
		h->seen_ns = now_ns;
	if (fresh) {
		h->first_ns = now_ns;
		memcpy(h->host, host, SPIRT_BEAT_BOOT);
	}
	if (fresh || reboot)
		h->dead_run = 0;
	h->b = *b;
	return 1;
}

int
spirt_health_state(const struct spirt_health *h,
    const unsigned char host[SPIRT_BEAT_BOOT], uint64_t now_ns,
    const struct spirt_beat_budget *b, double *age_ms)
{
	unsigned suspect = b ? b->suspect_ms : h->suspect_ms;
	unsigned dead = b ? b->dead_ms : h->dead_ms;
	double age;

	if (age_ms)
		*age_ms = -1;
	if (h->b.member[0] == '\0' || memcmp(h->host, host, SPIRT_BEAT_BOOT))
		return SPIRT_H_UNKNOWN;
	age = now_ns > h->seen_ns ? (double)(now_ns - h->seen_ns) / 1e6 : 0;
	if (age_ms)
		*age_ms = age;
	if (h->b.status == SPIRT_BEAT_STOP || age >= dead)
		return SPIRT_H_DEAD;
	if (h->b.status == SPIRT_BEAT_CATCHUP)
		return SPIRT_H_JOINING;
	return age >= suspect ? SPIRT_H_SUSPECT : SPIRT_H_LIVE;
}

static int
health_decode(struct spirt_health *h, const void *val, size_t len)
{
	const void *p;
	size_t n;
	int rc;

	if ((rc = spirt_store_get_bytes(val, len, &p, &n)))
		return rc;
	return spirt_health_parse(h, p, n);
}

static int
health_put(struct spirt_txn *t, const struct spirt_health *h)
{
	char key[SPIRT_KEY_MAX + 1], text[768];
	size_t n;
	int rc;

	if ((rc = spirt_health_format(text, sizeof text, &n, h)) ||
	    (rc = spirt_key_health(key, sizeof key, h->b.member)))
		return rc;
	return spirt_store_put_bytes(t, key, text, n, h->b.step, 0);
}

int
spirt_health_get(struct spirt_store *s, const char *member,
    struct spirt_health *h)
{
	char key[SPIRT_KEY_MAX + 1];
	struct spirt_txn *t;
	const void *v;
	size_t len;
	int rc;

	if ((rc = spirt_key_health(key, sizeof key, member)) ||
	    (rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)))
		return rc;
	if ((rc = spirt_store_get(t, key, &v, &len)) == 0 &&
	    (rc = health_decode(h, v, len)) == 0 && strcmp(h->b.member,
	    member))
		rc = SPIRT_EDATA;
	spirt_txn_abort(t);
	return rc;
}

struct hlist {
	struct spirt_health *v;
	size_t n, cap;
};

static int
hlist_add(void *arg, const char *key, const void *val, size_t len)
{
	struct hlist *l = arg;
	struct spirt_key_parts k;
	struct spirt_health h, *p;

	if (spirt_key_parse(&k, key) || k.kind != SPIRT_KEY_HEALTH ||
	    health_decode(&h, val, len) || strcmp(h.b.member, k.peer))
		return 0;
	if (l->n == l->cap) {
		size_t c = l->cap ? 2 * l->cap : 16;

		if ((p = realloc(l->v, c * sizeof *p)) == NULL)
			return ENOMEM;
		l->v = p;
		l->cap = c;
	}
	l->v[l->n++] = h;
	return 0;
}

int
spirt_health_list(struct spirt_store *s, struct spirt_health **out,
    size_t *n)
{
	struct hlist l = { NULL, 0, 0 };
	struct spirt_txn *t;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY)))
		return rc;
	rc = spirt_store_list(t, "health/", hlist_add, &l);
	spirt_txn_abort(t);
	if (rc) {
		free(l.v);
		return rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

/* ---- one pass of the watcher ---- */

struct pass {
	const struct spirt_beat_budget *b;
	uint64_t now;
	const unsigned char *host;
	struct spirt_health *dh;
	size_t max, *ndead, *bad;
	struct spirt_beat *v;           /* the beats read, then observed */
	size_t n, cap;
};

static int
pass_read(void *arg, const char *key, const void *val, size_t len)
{
	struct pass *a = arg;
	struct spirt_key_parts k;
	struct spirt_beat b, *p;

	if (spirt_key_parse(&k, key) || k.kind != SPIRT_KEY_BEAT ||
	    spirt_beat_decode(&b, k.peer, val, len)) {
		if (a->bad)
			(*a->bad)++;
		return 0;
	}
	if (a->n == a->cap) {
		size_t c = a->cap ? 2 * a->cap : 16;

		if ((p = realloc(a->v, c * sizeof *p)) == NULL)
			return ENOMEM;
		a->v = p;
		a->cap = c;
	}
	a->v[a->n++] = b;
	return 0;
}

static int
pass_one(struct pass *a, struct spirt_txn *t, const struct spirt_beat *b)
{
	struct spirt_health h;
	char hkey[SPIRT_KEY_MAX + 1];
	const void *hv;
	size_t hlen;
	int rc, changed;

	if ((rc = spirt_key_health(hkey, sizeof hkey, b->member)))
		return rc;
	memset(&h, 0, sizeof h);
	if ((rc = spirt_store_get(t, hkey, &hv, &hlen)) == 0) {
		if (health_decode(&h, hv, hlen) || strcmp(h.b.member,
		    b->member))
			memset(&h, 0, sizeof h);
	} else if (rc != SPIRT_ENOTFOUND) {
		return rc;
	}
	/* dead, then beating again on the same boot: back from a
	 * partition, and its next death is a new one */
	if (h.dead_run && h.b.member[0] && h.b.seq != b->seq &&
	    !memcmp(h.b.boot, b->boot, SPIRT_BEAT_BOOT) &&
	    spirt_health_state(&h, a->host, a->now, NULL, NULL) ==
	    SPIRT_H_DEAD && b->status != SPIRT_BEAT_STOP)
		h.dead_run = 0;
	changed = spirt_health_observe(&h, b, a->host, a->now);
	if (h.suspect_ms != a->b->suspect_ms || h.dead_ms != a->b->dead_ms) {
		h.suspect_ms = a->b->suspect_ms;
		h.dead_ms = a->b->dead_ms;
		changed = 1;
	}
	if (!h.dead_run && *a->ndead < a->max && spirt_health_state(&h,
	    a->host, a->now, NULL, NULL) == SPIRT_H_DEAD) {
		h.dead_run = 1;
		changed = 1;
		if (a->dh)
			a->dh[*a->ndead] = h;
		(*a->ndead)++;
	}
	return changed ? health_put(t, &h) : 0;
}

static int
pass_txn(struct spirt_txn *t, void *arg)
{
	struct pass *a = arg;
	int rc;

	*a->ndead = 0;
	a->n = 0;
	if (a->bad)
		*a->bad = 0;
	if ((rc = spirt_store_list(t, "beat/", pass_read, a)))
		return rc;
	for (size_t i = 0; i < a->n; i++)
		if ((rc = pass_one(a, t, &a->v[i])))
			return rc;
	return 0;
}

int
spirt_watch_pass(struct spirt_store *s, const struct spirt_beat_budget *b,
    uint64_t now_ns, const unsigned char host[SPIRT_BEAT_BOOT],
    struct spirt_health *dh, size_t max, size_t *ndead, size_t *bad)
{
	struct pass a = { b, now_ns, host, dh, max, ndead, bad, NULL, 0, 0 };
	int rc = spirt_store_write(s, pass_txn, &a);

	free(a.v);
	return rc;
}

/* ---- a watcher's start ---- */

struct wstart {
	uint64_t now;
	const unsigned char *host;
	struct hlist l;                 /* the records, read as ls reads them */
};

static int
start_txn(struct spirt_txn *t, void *arg)
{
	struct wstart *a = arg;
	int rc;

	a->l.n = 0;
	if ((rc = spirt_store_list(t, "health/", hlist_add, &a->l)))
		return rc;
	for (size_t i = 0; i < a->l.n; i++) {
		struct spirt_health *h = &a->l.v[i];

		/* another boot's record is a new sight anyway */
		if (memcmp(h->host, a->host, SPIRT_BEAT_BOOT) ||
		    h->b.status == SPIRT_BEAT_STOP)
			continue;
		h->seen_ns = a->now;
		if ((rc = health_put(t, h)))
			return rc;
	}
	return 0;
}

int
spirt_watch_start(struct spirt_store *s, uint64_t now_ns,
    const unsigned char host[SPIRT_BEAT_BOOT])
{
	struct wstart a = { now_ns, host, { NULL, 0, 0 } };
	int rc = spirt_store_write(s, start_txn, &a);

	free(a.l.v);
	return rc;
}
