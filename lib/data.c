/* data.c - data sets: formats, errors, gzip input, labels, the text
 * readers (CSV, LIBSVM), standardisation; idx.c and npz.c read the rest */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <zlib.h>

#include "data.h"
#include "datain.h"

/* ---- errors ---- */

/* An error of a text file's line ("file:line: msg"): rc. */
static int
lerr(struct spirt_data_err *err, int rc, uint64_t line, const char *fmt,
    ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = vseterr(err, rc, line, 0, 0, fmt, ap);
	va_end(ap);
	return rc;
}

char *
spirt_data_errstr(char *buf, size_t cap, const struct spirt_data_err *err,
    int rc)
{
	const char *file = err->file ? err->file : "-";
	const char *msg = err->msg[0] ? err->msg : spirt_strerror(rc);

	if (err->line)
		snprintf(buf, cap, "%s:%llu: %s", file,
		    (unsigned long long)err->line, msg);
	else if (err->has_record)
		snprintf(buf, cap, "%s: record %llu: %s", file,
		    (unsigned long long)err->record, msg);
	else
		snprintf(buf, cap, "%s: %s", file, msg);
	return buf;
}

/* ---- names and formats ---- */

static int
endswith(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

int
spirt_data_format_guess(const char *path)
{
	static const struct {
		const char *suf;
		int fmt;
	} tab[] = {
		{ "-ubyte", SPIRT_FMT_IDX }, { ".idx", SPIRT_FMT_IDX },
		{ ".idx1", SPIRT_FMT_IDX }, { ".idx3", SPIRT_FMT_IDX },
		{ ".csv", SPIRT_FMT_CSV },
		{ ".svm", SPIRT_FMT_LIBSVM }, { ".libsvm", SPIRT_FMT_LIBSVM },
		{ ".svmlight", SPIRT_FMT_LIBSVM },
		{ ".npy", SPIRT_FMT_NPY }, { ".npz", SPIRT_FMT_NPZ },
	};
	char buf[PATH_MAX];
	size_t i, n = strlen(path);

	if (n >= sizeof(buf))
		return SPIRT_FMT_AUTO;
	memcpy(buf, path, n + 1);
	if (endswith(buf, ".gz"))
		buf[n - 3] = '\0';
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (endswith(buf, tab[i].suf))
			return tab[i].fmt;
	return SPIRT_FMT_AUTO;
}

int
spirt_data_format_parse(const char *name)
{
	if (strcmp(name, "idx") == 0)
		return SPIRT_FMT_IDX;
	if (strcmp(name, "csv") == 0)
		return SPIRT_FMT_CSV;
	if (strcmp(name, "libsvm") == 0 || strcmp(name, "svmlight") == 0)
		return SPIRT_FMT_LIBSVM;
	if (strcmp(name, "npy") == 0)
		return SPIRT_FMT_NPY;
	if (strcmp(name, "npz") == 0)
		return SPIRT_FMT_NPZ;
	return SPIRT_FMT_AUTO;
}

int
spirt_data_name_check(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > SPIRT_DATA_NAME_MAX || name[0] == '.')
		return SPIRT_EINVAL;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return SPIRT_EINVAL;
	}
	return 0;
}

void
spirt_dataset_free(struct spirt_dataset *ds)
{
	free(ds->x);
	free(ds->y);
	free(ds->scale);
	free(ds->names);
	memset(ds, 0, sizeof(*ds));
}

/* ---- gzip or plain input ---- */

/* (datain.h says what each does) */
int
spirt_gz_open(gzFile *out, uint64_t *size, struct spirt_data_err *err,
    const char *path)
{
	struct stat sb;
	gzFile f;
	int fd;

	*size = 0;
	errno = 0;
	if (strcmp(path, "-") == 0)
		fd = dup(STDIN_FILENO);
	else
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return seterr(err, errno, 0, 0, 0, NULL);
	if (strcmp(path, "-") != 0 && fstat(fd, &sb) == 0 &&
	    S_ISREG(sb.st_mode))
		*size = (uint64_t)sb.st_size;
	if ((f = gzdopen(fd, "rb")) == NULL) {
		close(fd);
		return seterr(err, ENOMEM, 0, 0, 0, NULL);
	}
	gzbuffer(f, 1u << 17);
	*out = f;
	return 0;
}

/* map a zlib error state to a return code with a message */
static int
gz_fail(gzFile f, struct spirt_data_err *err, int zerr)
{
	const char *m, *p;
	int e = errno;

	m = gzerror(f, &zerr);
	switch (zerr) {
	case Z_ERRNO:
		return seterr(err, e ? e : EIO, 0, 0, 0, NULL);
	case Z_MEM_ERROR:
		return seterr(err, ENOMEM, 0, 0, 0, NULL);
	case Z_BUF_ERROR:
		return seterr(err, SPIRT_ETRUNC, 0, 0, 0,
		    "truncated gzip data");
	default:
		/* zlib prefixes "<fd:N>: ": drop it, the caller names the
		 * file */
		if (strncmp(m, "<fd:", 4) == 0 && (p = strstr(m, ">: ")))
			m = p + 3;
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "gzip: %s", m);
	}
}

int
spirt_gz_read(gzFile f, struct spirt_data_err *err, void *buf, size_t n,
    size_t *got)
{
	unsigned char *p = buf;
	size_t done = 0;
	int zerr, r;

	while (done < n) {
		size_t want = n - done > GZ_CHUNK ? GZ_CHUNK : n - done;

		errno = 0;
		r = gzread(f, p + done, (unsigned)want);
		if (r < 0)
			return gz_fail(f, err, 0);
		if (r == 0) {
			gzerror(f, &zerr);
			if (zerr != Z_OK)
				return gz_fail(f, err, zerr);
			break;
		}
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

int
spirt_gz_close(gzFile f, struct spirt_data_err *err, int rc)
{
	int z = gzclose_r(f);

	if (rc)
		return rc;
	if (z == Z_BUF_ERROR)
		return seterr(err, SPIRT_ETRUNC, 0, 0, 0,
		    "truncated gzip data");
	if (z == Z_ERRNO)
		return seterr(err, errno ? errno : EIO, 0, 0, 0, NULL);
	if (z != Z_OK)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "gzip: bad data");
	return 0;
}

/* Whole file into a NUL-terminated buffer. */
static int
slurp(char **out, size_t *len, struct spirt_data_err *err, const char *path)
{
	gzFile f;
	char *buf = NULL, *nb;
	size_t cap = 1u << 16, n = 0, got;
	uint64_t size;
	int rc;

	if ((rc = spirt_gz_open(&f, &size, err, path)))
		return rc;
	for (;;) {
		if (cap > DATA_MAXBYTES) {
			rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0, "more than "
			    "%llu GiB of text", (unsigned long long)
			    (DATA_MAXBYTES >> 30));
			break;
		}
		if ((nb = realloc(buf, cap + 1)) == NULL) {
			rc = seterr(err, ENOMEM, 0, 0, 0, NULL);
			break;
		}
		buf = nb;
		if ((rc = spirt_gz_read(f, err, buf + n, cap - n, &got)))
			break;
		n += got;
		if (n < cap)
			break;
		cap *= 2;
	}
	if ((rc = spirt_gz_close(f, err, rc))) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* ---- labels ---- */

int
spirt_data_check_labels(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *file, int32_t classes)
{
	int32_t max = -1;
	size_t i;

	err->file = file;
	if (classes < 0 || classes == 1 || classes > SPIRT_DATA_MAXCLASSES)
		return seterr(err, SPIRT_EINVAL, 0, 0, 0, "%ld classes: "
		    "2 to %d", (long)classes, SPIRT_DATA_MAXCLASSES);
	for (i = 0; i < ds->n; i++) {
		int32_t v = ds->y[i];
		if (v < 0)
			return seterr(err, SPIRT_EDATA, 0, 1, i,
			    "negative label");
		if (v >= SPIRT_DATA_MAXCLASSES)
			return seterr(err, SPIRT_EDATA, 0, 1, i,
			    "label %ld: at most %d classes (labels 0..%d)",
			    (long)v, SPIRT_DATA_MAXCLASSES,
			    SPIRT_DATA_MAXCLASSES - 1);
		if (classes > 0 && v >= classes)
			return seterr(err, SPIRT_EDATA, 0, 1, i,
			    "label %ld outside 0..%ld", (long)v,
			    (long)classes - 1);
		if (v > max)
			max = v;
	}
	if (classes == 0 && max < 1) {
		seterr(err, SPIRT_EDATA, 0, 0, 0, "every label is 0: one "
		    "class, a model needs at least 2");
		err->hint = SPIRT_DATA_HINT_CLASSES;
		return SPIRT_EDATA;
	}
	ds->nclasses = classes > 0 ? classes : max + 1;
	return 0;
}

/* Check a text label: integral, 0..classes-1.  0 or SPIRT_EDATA. */
static int
text_label(int32_t *out, struct spirt_data_err *err, uint64_t line,
    double v, int32_t classes)
{
	if (v < 0)
		return seterr(err, SPIRT_EDATA, line, 0, 0,
		    "negative label %g (labels are 0..classes-1)", v);
	if (v != floor(v))
		return seterr(err, SPIRT_EDATA, line, 0, 0,
		    "label %g is not a class number", v);
	if (v >= SPIRT_DATA_MAXCLASSES)
		return seterr(err, SPIRT_EDATA, line, 0, 0,
		    "label %.0f: at most %d classes (labels 0..%d)", v,
		    SPIRT_DATA_MAXCLASSES, SPIRT_DATA_MAXCLASSES - 1);
	if (classes > 0 && v >= classes)
		return seterr(err, SPIRT_EDATA, line, 0, 0,
		    "label %g outside 0..%ld", v, (long)classes - 1);
	*out = (int32_t)v;
	return 0;
}

/* ---- text formats ---- */

/* growing f32 rows and i32 labels */
struct rows {
	float *x;
	int32_t *y;
	size_t n, cap, feat;
};

/*
 * Room for one more row; most (> r->n) is the most rows the text left
 * could hold, so a line of a million fields costs one row, not 1024.
 */
static int
rows_grow(struct rows *r, size_t most)
{
	float *x;
	int32_t *y;
	size_t cap;

	if (r->n < r->cap)
		return 0;
	cap = r->cap ? r->cap * 2 : 1024;
	if (cap > most)
		cap = most;
	if (r->feat && cap > DATA_MAXBYTES / sizeof(float) / r->feat)
		return ENOMEM;
	if ((x = realloc(r->x, cap * (r->feat ? r->feat : 1) *
	    sizeof(float))) == NULL)
		return ENOMEM;
	r->x = x;
	if ((y = realloc(r->y, cap * sizeof(int32_t))) == NULL)
		return ENOMEM;
	r->y = y;
	r->cap = cap;
	return 0;
}

static const char *
skipblank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * Parse a number at p (not past end); *pp is left after it and any blanks.
 * Only what strtod reads from a sign, digit or '.' counts: that keeps
 * strtod from skipping newlines or reading "nan".  0, SPIRT_EDATA, or
 * SPIRT_ENAN (Inf, overflow).
 */
static int
parse_num(const char **pp, const char *end, double *v)
{
	const char *p = skipblank(*pp, end);
	char *e;
	char c;

	if (p >= end)
		return SPIRT_EDATA;
	c = *p;
	if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.'))
		return SPIRT_EDATA;
	errno = 0;
	*v = strtod(p, &e);
	if (e == p || e > end)
		return SPIRT_EDATA;
	if (!isfinite(*v) || fabs(*v) > FLT_MAX)
		return SPIRT_ENAN;
	*pp = skipblank(e, end);
	return 0;
}

/* length of the token at p for messages: up to a stop byte, at most 32 */
static int
toklen(const char *p, const char *end, const char *stop)
{
	const char *q = p;

	while (q < end && !strchr(stop, *q) && q - p < 32)
		q++;
	return (int)(q - p);
}

/* 1 if CSV field k of the line [p, le) is a number */
static int
isnumfield(const char *p, const char *le, size_t k)
{
	double v;

	for (; k > 0 && p < le; p++)
		if (*p == ',')
			k--;
	return parse_num(&p, le, &v) == 0 && (p == le || *p == ',');
}

static void
rows_done(struct spirt_dataset *ds, struct rows *r)
{
	float *x;

	if (r->n < r->cap && (x = realloc(r->x, r->n * r->feat *
	    sizeof(float))) != NULL)
		r->x = x;
	ds->xdtype = SPIRT_F32;
	ds->x = r->x;
	ds->y = r->y;
	ds->n = r->n;
	ds->feat = r->feat;
	ds->rank = 2;
	ds->dims[0] = r->n;
	ds->dims[1] = r->feat;
	memset(r, 0, sizeof(*r));
}

static void
rows_free(struct rows *r)
{
	free(r->x);
	free(r->y);
	memset(r, 0, sizeof(*r));
}

/*
 * The lines of a text file, read whole (slurp): each [p, le) without its
 * '\n' and a '\r' before it, numbered from 1 in no.
 */
struct lines {
	char *buf;
	const char *next, *end;
	const char *eol;        /* the line's '\n', or end */
	uint64_t no;
};

static int
lines_open(struct lines *l, struct spirt_data_err *err, const char *path)
{
	size_t len;
	int rc;

	memset(l, 0, sizeof(*l));
	if ((rc = slurp(&l->buf, &len, err, path)))
		return rc;
	l->next = l->buf;
	l->end = l->buf + len;
	return 0;
}

/* The next line: 1, or 0 after the last. */
static int
lines_next(struct lines *l, const char **p, const char **le)
{
	if (l->next == NULL || l->next >= l->end)
		return 0;
	*p = l->next;
	if ((l->eol = memchr(*p, '\n', (size_t)(l->end - *p))) == NULL)
		l->eol = l->end;
	*le = l->eol;
	if (*le > *p && (*le)[-1] == '\r')
		(*le)--;
	l->next = l->eol < l->end ? l->eol + 1 : NULL;
	l->no++;
	return 1;
}

/* The bytes after the current line: what later rows could be made of. */
static size_t
lines_left(const struct lines *l)
{
	return (size_t)(l->end - l->eol);
}

static void
lines_close(struct lines *l)
{
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

/* ---- CSV columns and class names ---- */

int
spirt_data_cols_parse(uint32_t **cols, size_t *n, const char *spec)
{
	unsigned char *seen;
	const char *p = spec;
	uint32_t *out;
	size_t k = 0, c;
	int rc = SPIRT_EINVAL;

	*cols = NULL;
	*n = 0;
	if ((seen = calloc(SPIRT_DATA_MAXCOLS, 1)) == NULL)
		return ENOMEM;
	for (;;) {
		unsigned long lo, hi;
		char *e;

		if (*p < '1' || *p > '9')
			goto out;
		errno = 0;
		lo = hi = strtoul(p, &e, 10);
		if (errno || lo > SPIRT_DATA_MAXCOLS)
			goto out;
		p = e;
		if (*p == '-') {
			if (p[1] < '1' || p[1] > '9')
				goto out;
			hi = strtoul(p + 1, &e, 10);
			if (errno || hi > SPIRT_DATA_MAXCOLS || hi < lo)
				goto out;
			p = e;
		}
		for (c = lo; c <= hi; c++) {
			if (seen[c - 1])
				goto out;
			seen[c - 1] = 1;
			k++;
		}
		if (*p == '\0')
			break;
		if (*p++ != ',')
			goto out;
	}
	if ((out = malloc(k * sizeof(*out))) == NULL) {
		rc = ENOMEM;
		goto out;
	}
	for (c = 0, k = 0; c < SPIRT_DATA_MAXCOLS; c++)
		if (seen[c])
			out[k++] = (uint32_t)c;
	*cols = out;
	*n = k;
	rc = 0;
out:
	free(seen);
	return rc;
}

/*
 * Class names while reading: the bytes of each, ended by '\n', in one
 * blob, in the order first met (or as given), with an open-addressing
 * table of id + 1 (0: free) for the lookups.
 */
struct names {
	char *blob;
	size_t blen, bcap;
	size_t *off;                    /* [n]: start of name id in blob */
	uint64_t *line;                 /* [n]: the line it was first on */
	size_t n, cap;
	uint32_t *tab;                  /* [tcap], tcap a power of 2 */
	size_t tcap;
};

static uint64_t
name_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325u;       /* FNV-1a */

	while (len--)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3u;
	return h;
}

static size_t
name_len(const struct names *nm, size_t id)
{
	const char *a = nm->blob + nm->off[id];

	return (size_t)((const char *)memchr(a, '\n', nm->blen -
	    nm->off[id]) - a);
}

/* the slot of name s in the table: its id + 1 there, or 0 (free) */
static size_t
name_slot(const struct names *nm, const char *s, size_t len)
{
	size_t i = (size_t)name_hash(s, len) & (nm->tcap - 1);

	for (;; i = (i + 1) & (nm->tcap - 1)) {
		uint32_t v = nm->tab[i];

		if (v == 0 || (name_len(nm, v - 1) == len &&
		    memcmp(nm->blob + nm->off[v - 1], s, len) == 0))
			return i;
	}
}

/* add name s (not yet there) as id nm->n; 0 or ENOMEM */
static int
name_add(struct names *nm, const char *s, size_t len, uint64_t line)
{
	size_t i;

	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? 2 * nm->cap : 16;
		size_t *off = realloc(nm->off, cap * sizeof(*off));
		uint64_t *ln;

		if (off == NULL)
			return ENOMEM;
		nm->off = off;
		if ((ln = realloc(nm->line, cap * sizeof(*ln))) == NULL)
			return ENOMEM;
		nm->line = ln;
		nm->cap = cap;
	}
	if (nm->blen + len + 1 > nm->bcap) {
		size_t cap = 2 * (nm->blen + len + 1);
		char *b = realloc(nm->blob, cap);

		if (b == NULL)
			return ENOMEM;
		nm->blob = b;
		nm->bcap = cap;
	}
	if (2 * (nm->n + 1) > nm->tcap) {       /* at most half full */
		size_t cap = nm->tcap ? 2 * nm->tcap : 64, k;
		uint32_t *old = nm->tab, *t = calloc(cap, sizeof(*t));

		if (t == NULL)
			return ENOMEM;
		nm->tab = t;
		nm->tcap = cap;
		for (k = 0; k < nm->n; k++)
			nm->tab[name_slot(nm, nm->blob + nm->off[k],
			    name_len(nm, k))] = (uint32_t)k + 1;
		free(old);
	}
	memcpy(nm->blob + nm->blen, s, len);
	nm->blob[nm->blen + len] = '\n';
	nm->off[nm->n] = nm->blen;
	nm->line[nm->n] = line;
	nm->blen += len + 1;
	i = name_slot(nm, s, len);
	nm->tab[i] = (uint32_t)++nm->n;
	return 0;
}

static void
names_free(struct names *nm)
{
	free(nm->blob);
	free(nm->off);
	free(nm->line);
	free(nm->tab);
	memset(nm, 0, sizeof(*nm));
}

/* load a checked list (as ds.names); 0, ENOMEM or SPIRT_EDATA */
static int
names_load(struct names *nm, const char *names, size_t len)
{
	const char *p = names, *end = names + len, *e;
	int rc;

	while (p < end) {
		if ((e = memchr(p, '\n', (size_t)(end - p))) == NULL ||
		    e == p)
			return SPIRT_EDATA;
		if (nm->n && nm->tab[name_slot(nm, p, (size_t)(e - p))])
			return SPIRT_EDATA;
		if (nm->n >= SPIRT_DATA_MAXCLASSES)
			return SPIRT_EDATA;
		if ((rc = name_add(nm, p, (size_t)(e - p), 0)))
			return rc;
		p = e + 1;
	}
	return 0;
}

int
spirt_data_names_check(const char *names, size_t len, size_t *count)
{
	struct names nm;
	int rc;

	memset(&nm, 0, sizeof(nm));
	rc = names_load(&nm, names, len);
	*count = nm.n;
	names_free(&nm);
	return rc == ENOMEM ? ENOMEM : rc ? SPIRT_EDATA : 0;
}

struct name_ref {
	const char *s;
	size_t len, id;
};

/* byte order; a name before the longer names it begins */
static int
name_cmp(const void *a, const void *b)
{
	const struct name_ref *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/*
 * The names of r's labels as ds->names: in byte order (sorted, y
 * renumbered) or, loaded from names_from, as they are.  0 or ENOMEM.
 */
static int
names_done(struct spirt_dataset *ds, struct names *nm, int32_t *y, size_t n,
    int sorted)
{
	struct name_ref *ord = NULL;
	size_t k, at = 0;
	int32_t *to = NULL;
	char *blob;

	if ((blob = malloc(nm->blen ? nm->blen : 1)) == NULL)
		return ENOMEM;
	if (!sorted) {
		memcpy(blob, nm->blob, nm->blen);
		goto done;
	}
	ord = malloc((nm->n ? nm->n : 1) * sizeof(*ord));
	to = malloc((nm->n ? nm->n : 1) * sizeof(*to));
	if (ord == NULL || to == NULL) {
		free(ord);
		free(to);
		free(blob);
		return ENOMEM;
	}
	for (k = 0; k < nm->n; k++) {
		ord[k].s = nm->blob + nm->off[k];
		ord[k].len = name_len(nm, k);
		ord[k].id = k;
	}
	qsort(ord, nm->n, sizeof(*ord), name_cmp);
	for (k = 0; k < nm->n; k++) {
		memcpy(blob + at, ord[k].s, ord[k].len + 1);
		at += ord[k].len + 1;
		to[ord[k].id] = (int32_t)k;
	}
	for (k = 0; k < n; k++)
		y[k] = to[y[k]];
	free(ord);
	free(to);
done:
	ds->names = blob;
	ds->names_len = nm->blen;
	return 0;
}

/* a value a spreadsheet or a data frame writes for "missing" */
static int
missing(const char *f, int len)
{
	static const char *const na[] = { "", "NA", "N/A", "na", "n/a",
	    "NaN", "nan", "NAN", "null", "NULL", "None", "?", "-", "." };
	size_t i;

	for (i = 0; i < sizeof(na) / sizeof(*na); i++)
		if ((size_t)len == strlen(na[i]) &&
		    memcmp(f, na[i], (size_t)len) == 0)
			return 1;
	return 0;
}

/* 1 if [f, f + len) holds no digit: a word, not a mistyped number */
static int
word(const char *f, size_t len)
{
	for (; len > 0; len--, f++)
		if (*f >= '0' && *f <= '9')
			return 0;
	return 1;
}

/* field [*pp, le) up to its comma, blanks and one pair of double quotes
 * around it taken off: *f, *len; *pp left at the comma or le */
static void
csv_field(const char **pp, const char *le, const char **f, size_t *len)
{
	const char *p = skipblank(*pp, le), *e;

	for (e = p; e < le && *e != ','; e++)
		;
	*pp = e;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e - p >= 2 && *p == '"' && e[-1] == '"') {
		p++;
		e--;
	}
	*f = p;
	*len = (size_t)(e - p);
}

/* 1 if column c is a feature column */
static int
is_feature(const struct spirt_data_opts *opts, size_t c, size_t lc)
{
	size_t lo = 0, hi = opts->ncols;

	if (c == lc)
		return 0;
	if (opts->cols == NULL)
		return 1;
	while (lo < hi) {               /* the list is ascending */
		size_t mid = lo + (hi - lo) / 2;

		if (opts->cols[mid] == c)
			return 1;
		if (opts->cols[mid] < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* 1 if no feature field of the line [p, le) is a number: a header */
static int
no_numbers(const char *p, const char *le, const struct spirt_data_opts *opts,
    size_t lc)
{
	size_t c;

	for (c = 0; p <= le; c++, p++) {
		const char *q = p;
		double v;

		if (is_feature(opts, c, lc) && parse_num(&q, le, &v) == 0 &&
		    (q == le || *q == ','))
			return 0;
		while (p < le && *p != ',')
			p++;
	}
	return 1;
}

/*
 * The shape the first line of samples gives, nf fields: the label's
 * column *lc and r->feat, the features read.  0, or the error.
 */
static int
csv_shape(struct rows *r, size_t *lc, struct spirt_data_err *err,
    uint64_t line, size_t nf, const struct spirt_data_opts *opts)
{
	size_t j, k;
	int rc;

	if (nf < 2) {
		rc = lerr(err, SPIRT_EDATA, line,
		    "need a label and at least one feature");
		if (line == 1)
			err->hint = SPIRT_DATA_HINT_HEADER;
		return rc;
	}
	if (opts->label_col == SPIRT_LABEL_LAST)
		*lc = nf - 1;
	else if (opts->label_col < 0 || (size_t)opts->label_col >= nf)
		return lerr(err, SPIRT_EDATA, line,
		    "no label column %d in %zu fields", opts->label_col + 1,
		    nf);
	else
		*lc = (size_t)opts->label_col;
	r->feat = nf - 1;
	if (opts->cols == NULL)
		return 0;
	for (j = 0; j < opts->ncols; j++) {
		if ((k = opts->cols[j]) == *lc)
			return lerr(err, SPIRT_EINVAL, line, "column %lu is "
			    "the label's, not a feature's",
			    (unsigned long)k + 1);
		if (k >= nf)
			return lerr(err, SPIRT_EINVAL, line, "no column %lu "
			    "in %zu fields", (unsigned long)k + 1, nf);
	}
	r->feat = opts->ncols;
	return 0;
}

/* Field c at *q, a class name, as the label *y (q left after it). */
static int
csv_name(int32_t *y, struct names *nm, struct spirt_data_err *err,
    uint64_t line, size_t c, const char **q, const char *le,
    const struct spirt_data_opts *opts)
{
	const char *f;
	size_t flen, slot;
	int rc;

	csv_field(q, le, &f, &flen);
	if (flen == 0 || flen > 255)
		return lerr(err, SPIRT_EDATA, line, "field %zu: %s", c + 1,
		    flen ? "a class name of more than 255 bytes" :
		    "missing value \"\" (no class name)");
	slot = nm->n ? name_slot(nm, f, flen) : 0;
	if (nm->n && nm->tab[slot]) {
		*y = (int32_t)nm->tab[slot] - 1;
		return 0;
	}
	if (opts->names_from)
		return lerr(err, SPIRT_EDATA, line, "field %zu: \"%.*s\" is "
		    "none of the %zu class names", c + 1, (int)flen, f, nm->n);
	if (nm->n >= SPIRT_DATA_MAXCLASSES)
		return lerr(err, SPIRT_EDATA, line, "field %zu: more than %d "
		    "class names", c + 1, SPIRT_DATA_MAXCLASSES);
	if ((rc = name_add(nm, f, flen, line)))
		return seterr(err, rc, 0, 0, 0, NULL);
	*y = (int32_t)nm->n - 1;
	return 0;
}

/*
 * Field c at f is not a number (rc of parse_num).  A word there hints
 * at a column of text, or at labels that are names when label and past
 * a first line (later: not a header's).
 */
static int
csv_bad(struct spirt_data_err *err, int rc, uint64_t line, size_t c,
    const char *f, const char *le, int label, int later)
{
	const char *q = f, *mf;
	size_t ml;

	csv_field(&q, le, &mf, &ml);
	if (rc == SPIRT_EDATA && missing(mf, (int)ml))
		return lerr(err, rc, line, "field %zu: missing value \"%.*s\"",
		    c + 1, (int)ml, mf);
	rc = lerr(err, rc, line, "field %zu: %s: \"%.*s\"", c + 1,
	    rc == SPIRT_ENAN ? "not a finite float" : "not a number",
	    toklen(f, le, ","), f);
	if (rc == SPIRT_EDATA && word(mf, ml) && (!label || later))
		err->hint = label ? SPIRT_DATA_HINT_NAMES :
		    SPIRT_DATA_HINT_COLUMNS;
	return rc;
}

int
spirt_data_read_csv(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *path, const struct spirt_data_opts *opts)
{
	struct rows r;
	struct names nm;
	struct lines ln;
	const char *p, *q, *le;
	uint64_t hdr = 0;
	size_t ncols = 0, lc = 0, c, nf, j;
	int first, rc;

	memset(ds, 0, sizeof(*ds));
	memset(&r, 0, sizeof(r));
	memset(&nm, 0, sizeof(nm));
	err->file = path;
	if (opts->label_names && opts->names_from &&
	    (rc = names_load(&nm, opts->names_from, opts->names_from_len))) {
		names_free(&nm);
		return seterr(err, rc, 0, 0, 0, rc == ENOMEM ? NULL :
		    "the class names to map to are not a list of names");
	}
	if ((rc = lines_open(&ln, err, path))) {
		names_free(&nm);
		return rc;
	}
	while (lines_next(&ln, &p, &le)) {
		if ((ln.no == 1 && opts->header) || skipblank(p, le) == le)
			continue;
		for (nf = 1, q = p; q < le; q++)
			nf += *q == ',';
		if ((first = ncols == 0)) {
			if ((rc = csv_shape(&r, &lc, err, ln.no, nf, opts)))
				goto out;
			ncols = nf;
			if (opts->label_names && !opts->header &&
			    no_numbers(p, le, opts, lc)) {
				hdr = ln.no;    /* names only: a header */
				continue;
			}
		} else if (nf != ncols && hdr && r.n == 0) {
			rc = lerr(err, SPIRT_EDATA, ln.no, "%zu fields, "
			    "expected %zu as in the header on line %llu", nf,
			    ncols, (unsigned long long)hdr);
			err->hint = SPIRT_DATA_HINT_HEADER;
			goto out;
		} else if (nf != ncols) {
			rc = lerr(err, SPIRT_EDATA, ln.no, "%zu fields, "
			    "expected %zu", nf, ncols);
			goto out;
		}
		/* a row is ncols numbers and ncols - 1 commas, then '\n' */
		if ((rc = rows_grow(&r, r.n + 1 + lines_left(&ln) /
		    (2 * ncols)))) {
			rc = seterr(err, rc, 0, 0, 0, NULL);
			goto out;
		}
		for (c = 0, j = 0, q = p; c < ncols; c++, q++) {
			const char *f = skipblank(q, le);
			double v;

			if (c == lc && opts->label_names) {
				if ((rc = csv_name(&r.y[r.n], &nm, err, ln.no,
				    c, &q, le, opts)))
					goto out;
				continue;
			}
			if (c != lc && !is_feature(opts, c, lc)) {
				while (q < le && *q != ',')
					q++;
				continue;
			}
			rc = parse_num(&q, le, &v);
			if (rc == 0 && q < le && *q != ',')
				rc = SPIRT_EDATA;
			if (rc == SPIRT_EDATA && first && !opts->header &&
			    !opts->label_names && !isnumfield(p, le, lc)) {
				hdr = ln.no;    /* a header line */
				break;
			}
			if (rc) {
				rc = csv_bad(err, rc, ln.no, c, f, le, c == lc,
				    r.n > 0 || hdr);
				goto out;
			}
			if (c != lc)
				r.x[r.n * r.feat + j++] = (float)v;
			else if ((rc = text_label(&r.y[r.n], err, ln.no, v,
			    opts->classes)))
				goto out;
		}
		if (c == ncols)
			r.n++;
		rc = 0;
	}
	if (r.n == 0)
		rc = seterr(err, SPIRT_EDATA, 0, 0, 0, "no samples");
	else if (opts->label_names && !opts->names_from && nm.n < 2)
		rc = seterr(err, SPIRT_EDATA, 0, 0, 0, "every label is "
		    "\"%.*s\": one class, a model needs at least 2",
		    (int)name_len(&nm, 0), nm.blob);
	else if (opts->label_names &&
	    (rc = names_done(ds, &nm, r.y, r.n, opts->names_from == NULL)))
		rc = seterr(err, rc, 0, 0, 0, NULL);
out:
	lines_close(&ln);
	names_free(&nm);
	if (rc) {
		rows_free(&r);
		free(ds->names);
		ds->names = NULL;
		return rc;
	}
	rows_done(ds, &r);
	return 0;
}

/* sparse rows before densifying */
struct sparse {
	size_t *ptr;                    /* [n + 1] */
	uint32_t *idx;                  /* 0-based */
	float *val;
	size_t nnz, capz;
};

/* Room for row n's start in ptr[n] (and its end): 0 or ENOMEM. */
static int
sparse_row(struct sparse *sp, size_t n)
{
	size_t *np;

	if (n + 2 > SIZE_MAX / 2)
		return ENOMEM;
	if (n % 1024 == 0) {
		if ((np = realloc(sp->ptr, (n + 1025) * sizeof(size_t))) ==
		    NULL)
			return ENOMEM;
		sp->ptr = np;
	}
	sp->ptr[n] = sp->nnz;
	return 0;
}

/* Feature ix (1-based) = v into the row being read: 0 or ENOMEM. */
static int
sparse_put(struct sparse *sp, uint64_t ix, double v)
{
	size_t cap;
	uint32_t *ni;
	float *nv;

	if (sp->nnz == sp->capz) {
		cap = sp->capz ? sp->capz * 2 : 4096;
		if ((ni = realloc(sp->idx, cap * sizeof(uint32_t))) == NULL)
			return ENOMEM;
		sp->idx = ni;
		if ((nv = realloc(sp->val, cap * sizeof(float))) == NULL)
			return ENOMEM;
		sp->val = nv;
		sp->capz = cap;
	}
	sp->idx[sp->nnz] = (uint32_t)(ix - 1);
	sp->val[sp->nnz++] = (float)v;
	return 0;
}

static void
sparse_free(struct sparse *sp)
{
	free(sp->ptr);
	free(sp->idx);
	free(sp->val);
}

/*
 * The features "index:value ..." of a line, at q up to le, after its
 * label: into sp, indices ascending from 1 up to dim (or the most
 * inferred); *maxidx the largest yet.  0 or the error.
 */
static int
svm_features(struct sparse *sp, uint64_t *maxidx, struct spirt_data_err *err,
    uint64_t line, const char *q, const char *le,
    const struct spirt_data_opts *opts)
{
	uint64_t prev = 0, ix;
	const char *f;
	double v;
	int rc;

	while (q < le) {
		f = q;
		ix = 0;
		if (*q < '0' || *q > '9')
			goto bad;
		for (; q < le && *q >= '0' && *q <= '9'; q++)
			if (ix <= UINT32_MAX)   /* stays above it */
				ix = ix * 10 + (uint64_t)(*q - '0');
		if (q >= le || *q != ':')
			goto bad;
		q++;
		if ((rc = parse_num(&q, le, &v)) || (q < le &&
		    q[-1] != ' ' && q[-1] != '\t')) {
			if (rc == SPIRT_ENAN)
				return lerr(err, SPIRT_ENAN, line, "feature "
				    "\"%.*s\": not a finite float",
				    toklen(f, le, " \t"), f);
			goto bad;
		}
		/* a dimension nobody gave must not make a tiny file a huge
		 * dense sample */
		if (ix == 0)
			return lerr(err, SPIRT_EDATA, line,
			    "index 0: indices start at 1");
		if (opts->dim && ix > opts->dim)
			return lerr(err, SPIRT_EDATA, line, "index %.*s "
			    "outside 1..%zu", toklen(f, le, ": \t"), f,
			    opts->dim);
		if (!opts->dim && ix > SPIRT_DATA_MAXINFER) {
			rc = lerr(err, SPIRT_EDATA, line, "index %.*s above "
			    "%d, the most features inferred",
			    toklen(f, le, ": \t"), f, SPIRT_DATA_MAXINFER);
			err->hint = SPIRT_DATA_HINT_DIM;
			return rc;
		}
		if (ix <= prev)
			return lerr(err, SPIRT_EDATA, line, "index %llu after "
			    "%llu: indices must ascend",
			    (unsigned long long)ix, (unsigned long long)prev);
		prev = ix;
		if (ix > *maxidx)
			*maxidx = ix;
		if (sparse_put(sp, ix, v))
			return seterr(err, ENOMEM, 0, 0, 0, NULL);
	}
	return 0;
bad:
	return lerr(err, SPIRT_EDATA, line, "bad feature \"%.*s\" (want "
	    "index:value)", toklen(f, le, " \t"), f);
}

int
spirt_data_read_libsvm(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *path, const struct spirt_data_opts *opts)
{
	struct rows r;
	struct sparse sp;
	struct lines ln;
	const char *p, *q, *le, *hash;
	uint64_t maxidx = 0;
	size_t i, k, dim;
	double v;
	int rc;

	memset(ds, 0, sizeof(*ds));
	memset(&r, 0, sizeof(r));
	memset(&sp, 0, sizeof(sp));
	err->file = path;
	if ((rc = lines_open(&ln, err, path)))
		return rc;
	r.feat = 0;                     /* rows holds labels only here */
	while (lines_next(&ln, &p, &le)) {
		if ((hash = memchr(p, '#', (size_t)(le - p))) != NULL)
			le = hash;
		while (le > p && (le[-1] == '\r' || le[-1] == ' ' ||
		    le[-1] == '\t'))
			le--;
		q = skipblank(p, le);
		if (q == le || (ln.no == 1 && opts->header))
			continue;
		/* a row is at least a label and '\n' */
		if (rows_grow(&r, r.n + 1 + lines_left(&ln) / 2) ||
		    sparse_row(&sp, r.n)) {
			rc = seterr(err, ENOMEM, 0, 0, 0, NULL);
			goto out;
		}
		if (parse_num(&q, le, &v) || (q < le && q[-1] != ' ' &&
		    q[-1] != '\t')) {
			const char *f = skipblank(p, le);

			rc = lerr(err, SPIRT_EDATA, ln.no, "bad label "
			    "\"%.*s\"", toklen(f, le, " \t"), f);
			goto out;
		}
		if ((rc = text_label(&r.y[r.n], err, ln.no, v,
		    opts->classes)) || (rc = svm_features(&sp, &maxidx, err,
		    ln.no, q, le, opts)))
			goto out;
		r.n++;
		sp.ptr[r.n] = sp.nnz;
	}
	if (r.n == 0) {
		rc = seterr(err, SPIRT_EDATA, 0, 0, 0, "no samples");
		goto out;
	}
	dim = opts->dim ? opts->dim : (size_t)maxidx;
	if (dim == 0) {
		rc = seterr(err, SPIRT_EDATA, 0, 0, 0, "no features");
		goto out;
	}
	if (dim > DATA_MAXBYTES / sizeof(float) / r.n) {
		rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0,
		    "%zu x %zu dense features too large", r.n, dim);
		goto out;
	}
	free(r.x);
	if ((r.x = calloc(r.n * dim, sizeof(float))) == NULL) {
		rc = seterr(err, ENOMEM, 0, 0, 0, NULL);
		goto out;
	}
	for (i = 0; i < r.n; i++)
		for (k = sp.ptr[i]; k < sp.ptr[i + 1]; k++)
			r.x[i * dim + sp.idx[k]] = sp.val[k];
	r.feat = dim;
	r.cap = r.n;
	rc = 0;
out:
	lines_close(&ln);
	sparse_free(&sp);
	if (rc) {
		rows_free(&r);
		return rc;
	}
	rows_done(ds, &r);
	return 0;
}

int
spirt_data_read(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *const *paths, size_t npaths,
    const struct spirt_data_opts *opts)
{
	const char *lfile = paths[npaths - 1];
	int fmt = opts->format, rc;

	memset(err, 0, sizeof(*err));
	memset(ds, 0, sizeof(*ds));
	err->file = paths[0];
	if (fmt == SPIRT_FMT_AUTO) {
		fmt = spirt_data_format_guess(paths[0]);
		if (npaths == 2 && fmt != SPIRT_FMT_NPY &&
		    fmt != SPIRT_FMT_NPZ)
			fmt = SPIRT_FMT_IDX;
	}
	if (fmt == SPIRT_FMT_AUTO) {
		seterr(err, SPIRT_EINVAL, 0, 0, 0,
		    "cannot tell the format from the name");
		err->hint = SPIRT_DATA_HINT_FORMAT;
		return SPIRT_EINVAL;
	}
	if ((fmt == SPIRT_FMT_IDX || fmt == SPIRT_FMT_NPY) != (npaths == 2))
		return seterr(err, SPIRT_EINVAL, 0, 0, 0, "IDX and .npy take "
		    "two files (samples, labels), CSV, LIBSVM and .npz one");
	if ((fmt == SPIRT_FMT_IDX || fmt == SPIRT_FMT_NPY ||
	    fmt == SPIRT_FMT_NPZ) && opts->header)
		return seterr(err, SPIRT_EINVAL, 0, 0, 0, "%s has no header "
		    "line", fmt == SPIRT_FMT_IDX ? "IDX" : "NumPy");
	if (fmt != SPIRT_FMT_NPZ && (opts->npz_x || opts->npz_y))
		return seterr(err, SPIRT_EINVAL, 0, 0, 0, "array names are "
		    "for .npz only");
	if (fmt != SPIRT_FMT_CSV && (opts->label_names || opts->cols))
		return seterr(err, SPIRT_EINVAL, 0, 0, 0, "class names and "
		    "a column list are for CSV only");
	if (fmt == SPIRT_FMT_IDX)
		rc = spirt_data_read_idx(ds, err, paths[0], paths[1]);
	else if (fmt == SPIRT_FMT_NPY)
		rc = spirt_data_read_npy(ds, err, paths[0], paths[1], opts);
	else if (fmt == SPIRT_FMT_NPZ)
		rc = spirt_data_read_npz(ds, err, paths[0], opts);
	else if (fmt == SPIRT_FMT_CSV)
		rc = spirt_data_read_csv(ds, err, paths[0], opts);
	else
		rc = spirt_data_read_libsvm(ds, err, paths[0], opts);
	if (rc)
		return rc;
	if (ds->names) {                /* the names are the classes */
		size_t k;

		if ((rc = spirt_data_names_check(ds->names, ds->names_len,
		    &k)) || (opts->classes && (size_t)opts->classes != k)) {
			rc = seterr(err, rc ? rc : SPIRT_EINVAL, 0, 0, 0,
			    "%zu class names, not --classes %ld", k,
			    (long)opts->classes);
			goto fail;
		}
		rc = spirt_data_check_labels(ds, err, lfile, (int32_t)k);
	} else
		rc = spirt_data_check_labels(ds, err, lfile, opts->classes);
	if (rc)
		goto fail;
	if (opts->dim && ds->feat != opts->dim) {
		err->file = paths[0];
		rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0,
		    "%zu features per sample, not %zu", ds->feat, opts->dim);
		goto fail;
	}
	return 0;
fail:
	spirt_dataset_free(ds);
	return rc;
}

/* ---- standardisation ---- */

/* element j of sample i as a double */
static double
xget(const struct spirt_dataset *ds, size_t i, size_t j)
{
	size_t k = i * ds->feat + j;

	return ds->xdtype == SPIRT_U8 ? ((const unsigned char *)ds->x)[k] :
	    ((const float *)ds->x)[k];
}

int
spirt_data_scale_fit(float **scale, const struct spirt_dataset *ds)
{
	double *sum, d;
	float *sc;
	size_t i, j, f = ds->feat;

	*scale = NULL;
	if (f > SIZE_MAX / 2 / sizeof(double))
		return ENOMEM;
	sc = malloc(2 * f * sizeof(float));
	sum = calloc(2 * f, sizeof(double));
	if (sc == NULL || sum == NULL) {
		free(sc);
		free(sum);
		return ENOMEM;
	}
	/* two passes in double: the mean, then squared deviations from it */
	for (i = 0; i < ds->n; i++)
		for (j = 0; j < f; j++)
			sum[j] += xget(ds, i, j);
	for (j = 0; j < f; j++)
		sum[j] /= (double)ds->n;
	for (i = 0; i < ds->n; i++)
		for (j = 0; j < f; j++) {
			d = xget(ds, i, j) - sum[j];
			sum[f + j] += d * d;
		}
	for (j = 0; j < f; j++) {
		sc[j] = (float)sum[j];
		sc[f + j] = (float)sqrt(sum[f + j] / (double)ds->n);
		if (!(sc[f + j] > 0))
			sc[f + j] = 1;
	}
	free(sum);
	*scale = sc;
	return 0;
}

int
spirt_data_scale_apply(struct spirt_dataset *ds, struct spirt_data_err *err,
    const float *scale, const char *from)
{
	float *x, *sc;
	size_t i, j, f = ds->feat;
	double v;

	if (spirt_data_name_check(from))
		return SPIRT_EINVAL;
	if (ds->n > SIZE_MAX / sizeof(float) / (f ? f : 1))
		return ENOMEM;
	x = malloc(ds->n * f * sizeof(float));
	sc = malloc(2 * f * sizeof(float));
	if (x == NULL || sc == NULL) {
		free(x);
		free(sc);
		return ENOMEM;
	}
	for (i = 0; i < ds->n; i++)
		for (j = 0; j < f; j++) {
			v = (xget(ds, i, j) - scale[j]) / scale[f + j];
			x[i * f + j] = (float)v;
			if (!isfinite(x[i * f + j])) {
				free(x);
				free(sc);
				return seterr(err, SPIRT_ENAN, 0, 1, i,
				    "feature %zu standardised to %g, not a "
				    "finite f32", j + 1, v);
			}
		}
	memcpy(sc, scale, 2 * f * sizeof(float));
	free(ds->x);
	free(ds->scale);
	ds->x = x;
	ds->xdtype = SPIRT_F32;
	ds->scale = sc;
	snprintf(ds->scale_from, sizeof(ds->scale_from), "%s", from);
	return 0;
}
