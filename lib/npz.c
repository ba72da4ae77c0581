/* npz.c - the NumPy data set readers: .npy pairs and .npz archives */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "data.h"
#include "datain.h"
#include "io.h"
#include "npy.h"

/* a .npy member's dtype: kind 'f', 'i', 'u' and item bytes, little-endian */
static int
npy_dtype(const struct spirt_npy_head *h, char *kind, unsigned *size)
{
	const char *d = h->descr;
	size_t n = h->descrlen;
	char e = '|';

	if (n > 0 && (*d == '<' || *d == '>' || *d == '|' || *d == '=')) {
		e = *d;
		d++;
		n--;
	}
	if (n != 2 || (d[0] != 'f' && d[0] != 'i' && d[0] != 'u' &&
	    d[0] != 'b') || d[1] < '1' || d[1] > '8')
		return SPIRT_EDTYPE;
	*kind = d[0];
	*size = (unsigned)(d[1] - '0');
	if (*size != 1 && *size != 2 && *size != 4 && *size != 8)
		return SPIRT_EDTYPE;
	/* '=' is the writer's order: numpy writes '<' or '>' for it */
	if (*size > 1 && e != '<')
		return SPIRT_EDTYPE;
	return 0;
}

/* little-endian unsigned of n bytes */
static uint64_t
le_get(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * Parse one .npy image buf (what: its name in messages, "X.npy" of an
 * archive, else "") into its header, with the data's size checked
 * against the shape: *nelem elements of *size bytes, kind *kind.
 */
static int
npy_open(struct spirt_npy_head *h, char *kind, unsigned *size,
    uint64_t *nelem, struct spirt_data_err *err, const char *what,
    const void *buf, size_t len)
{
	const char *sep = *what ? ": " : "";
	uint64_t n = 1;
	int rc;

	if ((rc = spirt_npy_head(h, buf, len)) != 0)
		return seterr(err, rc, 0, 0, 0, "%s%snot a NumPy .npy image "
		    "(bad magic or header)", what, sep);
	if ((rc = npy_dtype(h, kind, size)) != 0)
		return seterr(err, rc, 0, 0, 0, "%s%sdtype '%.*s' not "
		    "supported", what, sep, (int)(h->descrlen > 16 ? 16 :
		    h->descrlen), h->descr);
	if (h->fortran && h->rank > 1)
		return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%s%sFortran order: "
		    "save a C-order array (numpy.ascontiguousarray)", what,
		    sep);
	for (unsigned i = 0; i < h->rank; i++) {
		if (h->dims[i] && n > DATA_MAXBYTES / h->dims[i])
			return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%s%sshape "
			    "too large", what, sep);
		n *= h->dims[i];
	}
	if (n > DATA_MAXBYTES / *size)
		return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%s%sshape too "
		    "large", what, sep);
	if (h->datalen < n * *size)
		return seterr(err, SPIRT_ETRUNC, 0, 0, 0, "%s%struncated: the "
		    "shape says %llu bytes, the data holds %zu", what, sep,
		    (unsigned long long)(n * *size), h->datalen);
	if (h->datalen > n * *size)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s%s%zu bytes after "
		    "the data", what, sep, h->datalen - (size_t)(n * *size));
	*nelem = n;
	return 0;
}

/* the samples array: float32, float64 (rounded) or uint8, into ds */
static int
npy_x(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *what, const void *buf, size_t len)
{
	struct spirt_npy_head h;
	const char *sep = *what ? ": " : "";
	uint64_t n, i, per;
	unsigned size;
	char kind;
	int rc;

	if ((rc = npy_open(&h, &kind, &size, &n, err, what, buf, len)))
		return rc;
	if (!((kind == 'f' && (size == 4 || size == 8)) ||
	    (kind == 'u' && size == 1)))
		return seterr(err, SPIRT_EDTYPE, 0, 0, 0, "%s%ssamples of "
		    "dtype '%.*s': float32, float64 or uint8 only", what, sep,
		    (int)h.descrlen, h.descr);
	if (h.rank == 0 || h.dims[0] == 0)
		return seterr(err, h.rank ? SPIRT_EDATA : SPIRT_ESHAPE, 0, 0,
		    0, "%s%s%s", what, sep, h.rank ? "no samples" :
		    "a scalar, not samples");
	per = h.dims[0] ? n / h.dims[0] : 0;
	if (per == 0)
		return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%s%ssamples of no "
		    "values", what, sep);
	ds->n = (size_t)h.dims[0];
	ds->feat = (size_t)per;
	ds->rank = h.rank > 1 ? h.rank : 2;
	ds->dims[0] = h.dims[0];
	ds->dims[1] = 1;
	for (i = 1; i < h.rank; i++)
		ds->dims[i] = h.dims[i];
	ds->xdtype = kind == 'u' ? SPIRT_U8 : SPIRT_F32;
	if ((ds->x = malloc(n * (kind == 'u' ? 1 : 4) + 1)) == NULL)
		return seterr(err, ENOMEM, 0, 0, 0, NULL);
	if (kind == 'u') {
		memcpy(ds->x, h.data, n);
		return 0;
	}
	for (i = 0; i < n; i++) {
		float *x = ds->x;
		double d;

		if (size == 4) {
			uint32_t u = (uint32_t)le_get(h.data + 4 * i, 4);
			memcpy(&x[i], &u, 4);
			d = x[i];
		} else {
			uint64_t u = le_get(h.data + 8 * i, 8);
			memcpy(&d, &u, 8);
			x[i] = (float)d;
		}
		if (!isfinite(x[i]))
			return seterr(err, SPIRT_ENAN, 0, 1, i / per,
			    "%s%svalue %g is not a finite float32", what, sep,
			    d);
	}
	return 0;
}

/* the labels array: integers of any width, rank 1, one per sample */
static int
npy_y(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *what, const void *buf, size_t len)
{
	struct spirt_npy_head h;
	const char *sep = *what ? ": " : "";
	uint64_t n, i;
	unsigned size;
	char kind;
	int rc;

	if ((rc = npy_open(&h, &kind, &size, &n, err, what, buf, len)))
		return rc;
	if (kind != 'i' && kind != 'u')
		return seterr(err, SPIRT_EDTYPE, 0, 0, 0, "%s%slabels of "
		    "dtype '%.*s': integers only", what, sep,
		    (int)h.descrlen, h.descr);
	if (h.rank != 1)
		return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%s%slabels must "
		    "be of rank 1, not %u", what, sep, h.rank);
	if (h.dims[0] != ds->n)
		return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%s%s%llu labels for "
		    "%zu samples", what, sep, (unsigned long long)h.dims[0],
		    ds->n);
	if ((ds->y = malloc(n * sizeof *ds->y + 1)) == NULL)
		return seterr(err, ENOMEM, 0, 0, 0, NULL);
	for (i = 0; i < n; i++) {
		uint64_t u = le_get(h.data + size * i, size);
		int64_t v;

		/* sign-extend a signed label of size bytes */
		if (kind == 'i' && size < 8 && (u >> (8 * size - 1)) & 1)
			u |= ~(uint64_t)0 << (8 * size);
		v = (int64_t)u;
		if ((kind == 'u' && u >= SPIRT_DATA_MAXCLASSES) ||
		    (kind == 'i' && (v < 0 || v >= SPIRT_DATA_MAXCLASSES))) {
			int neg = kind == 'i' && v < 0;

			return seterr(err, SPIRT_EDATA, 0, 1, i, "%s%slabel "
			    "%s%llu outside 0..%d", what, sep, neg ? "-" : "",
			    (unsigned long long)(neg ? -u : u),
			    SPIRT_DATA_MAXCLASSES - 1);
		}
		ds->y[i] = (int32_t)v;
	}
	return 0;
}

/* --dim and the labels' range, as the other readers check them */
static int
npy_finish(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *yfile, const struct spirt_data_opts *opts)
{
	if (opts->dim && opts->dim != ds->feat)
		return seterr(err, SPIRT_ESHAPE, 0, 0, 0, "%zu values per "
		    "sample, not --dim %zu", ds->feat, opts->dim);
	return spirt_data_check_labels(ds, err, yfile, opts->classes);
}

static int
npy_read_file(struct spirt_data_err *err, const char *path, void **buf,
    size_t *len)
{
	int rc;

	err->file = path;
	if ((rc = spirt_readfile(path, buf, len)) != 0)
		return seterr(err, rc, 0, 0, 0, NULL);
	return 0;
}

int
spirt_data_read_npy(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *xpath, const char *ypath, const struct spirt_data_opts *opts)
{
	void *xb = NULL, *yb = NULL;
	size_t xl, yl;
	int rc;

	memset(ds, 0, sizeof(*ds));
	if ((rc = npy_read_file(err, xpath, &xb, &xl)) != 0 ||
	    (rc = npy_x(ds, err, "", xb, xl)) != 0)
		goto out;
	free(xb);
	xb = NULL;
	if ((rc = npy_read_file(err, ypath, &yb, &yl)) != 0 ||
	    (rc = npy_y(ds, err, "", yb, yl)) != 0)
		goto out;
	rc = npy_finish(ds, err, ypath, opts);
out:
	free(xb);
	free(yb);
	if (rc)
		spirt_dataset_free(ds);
	return rc;
}

/*
 * .npz: a zip archive (numpy.savez, savez_compressed) read whole.  The
 * central directory names the members, with their sizes and offsets
 * (zip64 extra fields too); a member is stored or deflated, its CRC-32
 * checked.  Everything read from the file is bounded by the file first.
 */
#define ZIP_EOCD        0x06054b50u
#define ZIP_EOCD64      0x06064b50u
#define ZIP_LOC64       0x07064b50u
#define ZIP_CENTRAL     0x02014b50u
#define ZIP_LOCAL       0x04034b50u
#define ZIP_MAXRATIO    1032            /* deflate's largest ratio */

struct zmember {
	const unsigned char *name;
	size_t namelen;
	unsigned method, flags;
	uint32_t crc;
	uint64_t csize, usize, offset;
};

struct zip {
	const unsigned char *b;
	size_t len;
	uint64_t cd, cdsize, count;     /* the central directory */
};

/* find the end of central directory record and read it */
static int
zip_open(struct zip *z, struct spirt_data_err *err, const void *buf,
    size_t len)
{
	const unsigned char *b = buf;
	size_t i, lo;

	z->b = b;
	z->len = len;
	if (len < 22)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "not a zip archive "
		    "(.npz): too short");
	lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
	for (i = len - 22 + 1; i-- > lo; )
		if (le_get(b + i, 4) == ZIP_EOCD &&
		    i + 22 + le_get(b + i + 20, 2) <= len)
			break;
	if (i == (size_t)-1 || i < lo || le_get(b + i, 4) != ZIP_EOCD)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "not a zip archive "
		    "(.npz): no end of central directory");
	if (le_get(b + i + 4, 2) != 0 || le_get(b + i + 6, 2) != 0)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "a zip archive of "
		    "several disks");
	z->count = le_get(b + i + 10, 2);
	z->cdsize = le_get(b + i + 12, 4);
	z->cd = le_get(b + i + 16, 4);
	if (z->count == 0xffff || z->cdsize == 0xffffffffu ||
	    z->cd == 0xffffffffu) {     /* zip64: its locator is before */
		uint64_t e;

		if (i < 20 || len < 56 || le_get(b + i - 20, 4) !=
		    ZIP_LOC64 || (e = le_get(b + i - 20 + 8, 8)) > len - 56 ||
		    le_get(b + e, 4) != ZIP_EOCD64)
			return seterr(err, SPIRT_EDATA, 0, 0, 0, "zip64 end of "
			    "central directory missing or out of the file");
		z->count = le_get(b + e + 32, 8);
		z->cdsize = le_get(b + e + 40, 8);
		z->cd = le_get(b + e + 48, 8);
	}
	if (z->cd > len || z->cdsize > len - z->cd)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "zip central "
		    "directory beyond the end of the file (truncated?)");
	return 0;
}

/* the zip64 extra field of a central entry: the 32-bit fields at max */
static int
zip_extra64(struct zmember *m, const unsigned char *x, size_t xlen)
{
	while (xlen >= 4) {
		unsigned id = (unsigned)le_get(x, 2);
		size_t n = (size_t)le_get(x + 2, 2), k = 0;

		if (n > xlen - 4)
			return SPIRT_EDATA;
		if (id == 1) {
			uint64_t *f[3] = { &m->usize, &m->csize, &m->offset };

			for (int j = 0; j < 3; j++) {
				if (*f[j] != 0xffffffffu)
					continue;
				if (k + 8 > n)
					return SPIRT_EDATA;
				*f[j] = le_get(x + 4 + k, 8);
				k += 8;
			}
			return 0;
		}
		x += 4 + n;
		xlen -= 4 + n;
	}
	return 0;
}

/* member name (e.g. "X.npy") of z into m; SPIRT_ENOTFOUND if none */
static int
zip_find(struct zmember *m, const struct zip *z, struct spirt_data_err *err,
    const char *name)
{
	uint64_t p = z->cd, end = z->cd + z->cdsize, k;
	size_t want = strlen(name);

	for (k = 0; k < z->count; k++) {
		const unsigned char *c = z->b + p;
		size_t nl, xl, cl;

		if (end - p < 46 || le_get(c, 4) != ZIP_CENTRAL)
			return seterr(err, SPIRT_EDATA, 0, 0, 0, "zip central "
			    "directory entry %llu malformed",
			    (unsigned long long)k);
		nl = (size_t)le_get(c + 28, 2);
		xl = (size_t)le_get(c + 30, 2);
		cl = (size_t)le_get(c + 32, 2);
		if (end - p - 46 < (uint64_t)nl + xl + cl)
			return seterr(err, SPIRT_EDATA, 0, 0, 0, "zip central "
			    "directory entry %llu malformed",
			    (unsigned long long)k);
		if (nl == want && memcmp(c + 46, name, nl) == 0) {
			memset(m, 0, sizeof *m);
			m->name = c + 46;
			m->namelen = nl;
			m->flags = (unsigned)le_get(c + 8, 2);
			m->method = (unsigned)le_get(c + 10, 2);
			m->crc = (uint32_t)le_get(c + 16, 4);
			m->csize = le_get(c + 20, 4);
			m->usize = le_get(c + 24, 4);
			m->offset = le_get(c + 42, 4);
			if (zip_extra64(m, c + 46 + nl, xl) != 0)
				return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: "
				    "zip extra field malformed", name);
			return 0;
		}
		p += 46 + nl + xl + cl;
	}
	return SPIRT_ENOTFOUND;
}

/* member m's bytes: *data into z's buffer (stored) or *own (inflated) */
static int
zip_get(const struct zip *z, const struct zmember *m,
    struct spirt_data_err *err, const char *name, const unsigned char **data,
    unsigned char **own)
{
	const unsigned char *l;
	uint64_t at;
	z_stream zs;
	int zr;

	*own = NULL;
	if (m->flags & 1)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: encrypted", name);
	if (m->method != 0 && m->method != 8)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: compression "
		    "method %u (stored and deflate only)", name, m->method);
	if (m->offset > z->len || z->len - m->offset < 30 ||
	    le_get((l = z->b + m->offset), 4) != ZIP_LOCAL)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: local header "
		    "missing or out of the file", name);
	at = m->offset + 30 + le_get(l + 26, 2) + le_get(l + 28, 2);
	if (at > z->len || m->csize > z->len - at)
		return seterr(err, SPIRT_ETRUNC, 0, 0, 0, "%s: truncated: %llu "
		    "bytes from offset %llu, the file holds %zu", name,
		    (unsigned long long)m->csize, (unsigned long long)at,
		    z->len);
	if (m->usize > DATA_MAXBYTES || (m->method == 0 &&
	    m->usize != m->csize) || (m->method == 8 && m->usize >
	    m->csize * ZIP_MAXRATIO + 64))
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: sizes do not "
		    "agree (%llu bytes from %llu)", name,
		    (unsigned long long)m->usize,
		    (unsigned long long)m->csize);
	if (m->method == 0) {
		*data = z->b + at;
	} else {
		if ((*own = malloc((size_t)m->usize + 1)) == NULL)
			return seterr(err, ENOMEM, 0, 0, 0, NULL);
		memset(&zs, 0, sizeof zs);
		if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
			free(*own);
			*own = NULL;
			return seterr(err, ENOMEM, 0, 0, 0, NULL);
		}
		zs.next_in = (unsigned char *)(uintptr_t)(z->b + at);
		zs.next_out = *own;
		zr = Z_OK;
		/* zlib's counts are 32-bit: feed and drain in chunks */
		while (zr == Z_OK) {
			uint64_t in = z->b + at + m->csize - zs.next_in;
			uint64_t out = *own + m->usize - zs.next_out;

			zs.avail_in = (uInt)(in > GZ_CHUNK ? GZ_CHUNK : in);
			zs.avail_out = (uInt)(out > GZ_CHUNK ? GZ_CHUNK : out);
			zr = inflate(&zs, Z_NO_FLUSH);
			if (zr == Z_BUF_ERROR && (in == 0 || out == 0))
				break;
		}
		inflateEnd(&zs);
		if (zr != Z_STREAM_END ||
		    (uint64_t)(zs.next_out - *own) != m->usize) {
			free(*own);
			*own = NULL;
			return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: deflate "
			    "data corrupt or of another size than the "
			    "directory says", name);
		}
		*data = *own;
	}
	{
		uLong c = crc32(0L, Z_NULL, 0);
		uint64_t done = 0;

		while (done < m->usize) {
			uint64_t n = m->usize - done;

			n = n > GZ_CHUNK ? GZ_CHUNK : n;
			c = crc32(c, *data + done, (uInt)n);
			done += n;
		}
		if ((uint32_t)c != m->crc) {
			free(*own);
			*own = NULL;
			return seterr(err, SPIRT_EDATA, 0, 0, 0, "%s: CRC-32 "
			    "mismatch: corrupt", name);
		}
	}
	return 0;
}

/* the member for array name[0] or, without it, name[1] (NULL: none) */
static int
npz_member(const struct zip *z, struct spirt_data_err *err,
    const char *const name[2], struct zmember *m, char *which, size_t cap)
{
	int rc = SPIRT_ENOTFOUND;

	for (int i = 0; i < 2 && name[i] && rc == SPIRT_ENOTFOUND; i++) {
		snprintf(which, cap, "%s.npy", name[i]);
		rc = zip_find(m, z, err, which);
	}
	if (rc == SPIRT_ENOTFOUND)
		return seterr(err, SPIRT_EDATA, 0, 0, 0, "no array %s%s%s in "
		    "the archive", name[0], name[1] ? " or " : "",
		    name[1] ? name[1] : "");
	return rc;
}

int
spirt_data_read_npz(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *path, const struct spirt_data_opts *opts)
{
	const char *xn[2] = { "X", "x" }, *yn[2] = { "y", "Y" };
	struct zip z;
	struct zmember m;
	const unsigned char *d;
	unsigned char *own = NULL;
	char which[SPIRT_DATA_ARRAY_MAX + 8];
	void *buf = NULL;
	size_t len;
	int rc;

	memset(ds, 0, sizeof(*ds));
	if (opts->npz_x) {
		xn[0] = opts->npz_x;
		xn[1] = NULL;
	}
	if (opts->npz_y) {
		yn[0] = opts->npz_y;
		yn[1] = NULL;
	}
	if ((xn[0] && strlen(xn[0]) > SPIRT_DATA_ARRAY_MAX) ||
	    (yn[0] && strlen(yn[0]) > SPIRT_DATA_ARRAY_MAX))
		return seterr(err, SPIRT_EINVAL, 0, 0, 0, "array name too "
		    "long");
	if ((rc = npy_read_file(err, path, &buf, &len)) != 0 ||
	    (rc = zip_open(&z, err, buf, len)) != 0 ||
	    (rc = npz_member(&z, err, xn, &m, which, sizeof which)) != 0 ||
	    (rc = zip_get(&z, &m, err, which, &d, &own)) != 0 ||
	    (rc = npy_x(ds, err, which, d, (size_t)m.usize)) != 0)
		goto out;
	free(own);
	own = NULL;
	if ((rc = npz_member(&z, err, yn, &m, which, sizeof which)) != 0 ||
	    (rc = zip_get(&z, &m, err, which, &d, &own)) != 0 ||
	    (rc = npy_y(ds, err, which, d, (size_t)m.usize)) != 0)
		goto out;
	rc = npy_finish(ds, err, path, opts);
out:
	free(own);
	free(buf);
	if (rc)
		spirt_dataset_free(ds);
	return rc;
}
