/* kv.c - the text records: VERSION=1, TYPE=..., NAME=value lines, END */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv.h"

static int
name_ok(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_'))
			return 0;
	return 1;
}

/* ---- the writer ---- */

/* room for k more bytes and a NUL */
static int
room(struct spirt_kvw *w, size_t k)
{
	size_t cap;
	char *b;

	if (w->rc)
		return 0;
	if (k < w->cap - w->n)
		return 1;
	if (!w->grow) {
		w->rc = ENOSPC;
		return 0;
	}
	if (k > SIZE_MAX / 4 - w->n) {
		w->rc = ENOMEM;
		return 0;
	}
	for (cap = w->cap ? w->cap : 256; k >= cap - w->n; cap *= 2)
		;
	if ((b = realloc(w->buf, cap)) == NULL) {
		w->rc = ENOMEM;
		return 0;
	}
	w->buf = b;
	w->cap = cap;
	return 1;
}

static void
add(struct spirt_kvw *w, const char *s, size_t n)
{
	if (room(w, n)) {
		memcpy(w->buf + w->n, s, n);
		w->n += n;
		w->buf[w->n] = '\0';
	}
}

/* "name=" */
static int
start(struct spirt_kvw *w, const char *name)
{
	size_t n = strlen(name);

	if (!w->rc && !name_ok(name, n))
		w->rc = SPIRT_EINVAL;
	add(w, name, n);
	add(w, "=", 1);
	return w->rc == 0;
}

static void
put(struct spirt_kvw *w, const char *name, const char *val, size_t n)
{
	if (!w->rc && memchr(val, '\n', n))
		w->rc = SPIRT_EINVAL;
	if (start(w, name)) {
		add(w, val, n);
		add(w, "\n", 1);
	}
}

void
spirt_kvw_init(struct spirt_kvw *w, char *buf, size_t cap, const char *type)
{
	w->buf = buf;
	w->cap = buf ? cap : 0;
	w->n = 0;
	w->rc = 0;
	w->grow = buf == NULL;
	put(w, "VERSION", "1", 1);
	put(w, "TYPE", type, strlen(type));
}

void
spirt_kvw_put(struct spirt_kvw *w, const char *name, const char *val)
{
	put(w, name, val, strlen(val));
}

void
spirt_kvw_putf(struct spirt_kvw *w, const char *name, const char *fmt, ...)
{
	va_list ap;
	size_t at;
	int k;

	if (!start(w, name))
		return;
	va_start(ap, fmt);
	k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (k < 0) {
		w->rc = SPIRT_EINVAL;
		return;
	}
	if (!room(w, (size_t)k))
		return;
	at = w->n;
	va_start(ap, fmt);
	vsnprintf(w->buf + at, w->cap - at, fmt, ap);
	va_end(ap);
	w->n += (size_t)k;
	if (memchr(w->buf + at, '\n', (size_t)k))
		w->rc = SPIRT_EINVAL;
	add(w, "\n", 1);
}

void
spirt_kvw_hex(struct spirt_kvw *w, const char *name, const unsigned char *b,
    size_t n)
{
	if (!start(w, name) || !room(w, 2 * n + 1))
		return;
	for (size_t i = 0; i < 2 * n; i++) {
		/* no branch nor table on the digit: sodium_bin2hex's way */
		unsigned c = i % 2 ? b[i / 2] & 15u : b[i / 2] >> 4;

		w->buf[w->n++] = (char)((87u + c + (((c - 10u) >> 8) &
		    ~38u)) & 0xffu);
	}
	w->buf[w->n] = '\0';
	add(w, "\n", 1);
}

int
spirt_kvw_end(struct spirt_kvw *w, size_t *len)
{
	add(w, "END\n", 4);
	*len = w->n;
	return w->rc;
}

/* ---- the reader ---- */

/* the next line, without its newline (and without NUL) */
static int
line(struct spirt_kvr *r, const char **l, size_t *n)
{
	const char *nl;

	r->line++;
	if (r->p >= r->end || (nl = memchr(r->p, '\n', (size_t)(r->end -
	    r->p))) == NULL || memchr(r->p, '\0', (size_t)(nl - r->p)))
		return SPIRT_EDATA;
	*l = r->p;
	*n = (size_t)(nl - r->p);
	r->p = nl + 1;
	return 0;
}

/* the next line as name=value */
static int
pair(struct spirt_kvr *r, const char *l, size_t n)
{
	const char *eq = memchr(l, '=', n);

	if (eq == NULL || !name_ok(l, (size_t)(eq - l)))
		return SPIRT_EDATA;
	r->name = l;
	r->nlen = (size_t)(eq - l);
	r->val = eq + 1;
	r->vlen = n - r->nlen - 1;
	return 0;
}

int
spirt_kvr_open(struct spirt_kvr *r, const void *text, size_t len,
    const char *type, const char *const *multi, unsigned flags)
{
	const char *l;
	size_t n;

	memset(r, 0, sizeof *r);
	r->p = text;
	r->end = r->p + len;
	r->multi = multi;
	r->flags = flags;
	if (len > SPIRT_KV_MAX) {
		r->line = 1;
		return SPIRT_EDATA;
	}
	if (line(r, &l, &n) || pair(r, l, n) || !spirt_kvr_is(r, "VERSION") ||
	    r->vlen == 0)
		return SPIRT_EDATA;
	for (size_t i = 0; i < r->vlen; i++)
		if (r->val[i] < '0' || r->val[i] > '9')
			return SPIRT_EDATA;
	if (r->vlen != 1 || r->val[0] != '0' + SPIRT_KV_VERSION)
		return SPIRT_EVERSION;
	if (line(r, &l, &n) || pair(r, l, n) || !spirt_kvr_is(r, "TYPE") ||
	    r->vlen != strlen(type) || memcmp(r->val, type, r->vlen))
		return SPIRT_EDATA;
	r->name = r->val = NULL;
	r->nlen = r->vlen = 0;
	return 0;
}

int
spirt_kvr_is(const struct spirt_kvr *r, const char *name)
{
	return r->name && r->nlen == strlen(name) &&
	    memcmp(r->name, name, r->nlen) == 0;
}

/* a name seen before, unless it may repeat */
static int
again(struct spirt_kvr *r)
{
	for (size_t i = 0; r->multi && r->multi[i]; i++)
		if (spirt_kvr_is(r, r->multi[i]))
			return 0;
	for (size_t i = 0; i < r->nseen; i++)
		if (r->seenlen[i] == r->nlen &&
		    memcmp(r->seen[i], r->name, r->nlen) == 0)
			return 1;
	if (r->nseen == SPIRT_KV_NAMES)
		return 1;
	r->seen[r->nseen] = r->name;
	r->seenlen[r->nseen++] = r->nlen;
	return 0;
}

int
spirt_kvr_next(struct spirt_kvr *r)
{
	const char *l;
	size_t n;

	r->name = r->val = NULL;
	r->nlen = r->vlen = 0;
	do {
		if (line(r, &l, &n))
			return SPIRT_EDATA;
	} while ((r->flags & SPIRT_KV_NOTES) && n > 0 && l[0] == '#');
	if (n == 3 && memcmp(l, "END", 3) == 0) {
		if (r->p != r->end) {
			r->line++;
			return SPIRT_EDATA;
		}
		return SPIRT_EOF;
	}
	if (pair(r, l, n) || again(r))
		return SPIRT_EDATA;
	return 0;
}

int
spirt_kvr_want(struct spirt_kvr *r, const char *name)
{
	return spirt_kvr_next(r) == 0 && spirt_kvr_is(r, name) ? 0 :
	    SPIRT_EDATA;
}

int
spirt_kvr_end(struct spirt_kvr *r)
{
	return spirt_kvr_next(r) == SPIRT_EOF ? 0 : SPIRT_EDATA;
}

int
spirt_kvr_str(const struct spirt_kvr *r, char *out, size_t cap)
{
	if (r->val == NULL || r->vlen >= cap)
		return SPIRT_EDATA;
	memcpy(out, r->val, r->vlen);
	out[r->vlen] = '\0';
	return 0;
}
