/* idx.c - the IDX data set reader (MNIST's format, gzip or plain) */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "data.h"
#include "datain.h"

#define IDX_FIRSTREAD ((size_t)1 << 20)  /* then doubling */

static size_t
idx_esize(int type)
{
	switch (type) {
	case 0x08: case 0x09: return 1;
	case 0x0B: return 2;
	case 0x0C: case 0x0D: return 4;
	case 0x0E: return 8;
	default: return 0;
	}
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

struct idx {
	int type;
	unsigned rank;
	uint64_t dims[SPIRT_MAXRANK];
	size_t n, per;                  /* items, elements per item */
	void *data;                     /* raw big-endian elements */
};

/* a * b, or UINT64_MAX when that overflows */
static uint64_t
mulsat(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/*
 * Read one IDX file whole: header, then exactly n*per elements.  What the
 * header claims is checked against the size of a plain file before any
 * allocation; compressed data and stdin are read in growing steps, so a
 * lying header costs no more memory than the data that is really there.
 */
static int
idx_load(struct idx *ix, struct spirt_data_err *err, const char *path)
{
	unsigned char h[4 + 4 * SPIRT_MAXRANK], extra;
	uint64_t per = 1, bytes, isize, fsize, avail;
	size_t got, es, i, cap, have, hlen;
	gzFile f;
	int rc;

	memset(ix, 0, sizeof(*ix));
	err->file = path;
	if ((rc = spirt_gz_open(&f, &fsize, err, path)))
		return rc;
	if ((rc = spirt_gz_read(f, err, h, 4, &got)))
		goto out;
	if (got < 4) {
		rc = seterr(err, SPIRT_ETRUNC, 0, 0, 0, "truncated IDX header");
		goto out;
	}
	ix->type = h[2];
	ix->rank = h[3];
	es = idx_esize(ix->type);
	if (h[0] || h[1] || !es || ix->rank == 0 ||
	    ix->rank >= SPIRT_MAXRANK) {
		rc = seterr(err, SPIRT_EMAGIC, 0, 0, 0,
		    "bad IDX magic 0x%02x%02x%02x%02x", h[0], h[1], h[2], h[3]);
		goto out;
	}
	if ((rc = spirt_gz_read(f, err, h + 4, 4 * ix->rank, &got)))
		goto out;
	if (got < 4 * ix->rank) {
		rc = seterr(err, SPIRT_ETRUNC, 0, 0, 0, "truncated IDX header");
		goto out;
	}
	hlen = 4 + 4 * ix->rank;
	for (i = 0; i < ix->rank; i++) {
		ix->dims[i] = be32(h + 4 + 4 * i);
		if (i > 0) {
			if (ix->dims[i] == 0)
				goto shape;
			per = mulsat(per, ix->dims[i]);
		}
	}
	if (ix->dims[0] == 0) {
		rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0, "no items");
		goto out;
	}
	isize = mulsat(per, es);
	bytes = mulsat(ix->dims[0], isize);
	if (fsize && gzdirect(f) && bytes > (avail = fsize > hlen ?
	    fsize - hlen : 0)) {
		if (isize == UINT64_MAX)
			rc = seterr(err, SPIRT_ETRUNC, 0, 1, 0, "truncated "
			    "IDX data (header says %llu items of more than "
			    "2^64 bytes, the file holds %llu bytes)",
			    (unsigned long long)ix->dims[0],
			    (unsigned long long)avail);
		else
			rc = seterr(err, SPIRT_ETRUNC, 0, 1, avail / isize,
			    "truncated IDX data (header says %llu items of "
			    "%llu bytes, the file holds %llu bytes)",
			    (unsigned long long)ix->dims[0],
			    (unsigned long long)isize,
			    (unsigned long long)avail);
		goto out;
	}
	if (fsize && gzdirect(f) && bytes > DATA_MAXBYTES)
		goto shape;
	ix->n = ix->dims[0];
	ix->per = per;
	for (cap = 0, have = 0; have < bytes; have += got) {
		unsigned char *nb;
		if (have == cap) {
			cap = cap ? cap * 2 : IDX_FIRSTREAD;
			if (cap > bytes)
				cap = bytes;
			if (cap > DATA_MAXBYTES)
				goto shape;
			if ((nb = realloc(ix->data, cap)) == NULL) {
				rc = seterr(err, ENOMEM, 0, 0, 0, NULL);
				goto out;
			}
			ix->data = nb;
		}
		if ((rc = spirt_gz_read(f, err, (unsigned char *)ix->data + have,
		    cap - have, &got)))
			goto out;
		if (got < cap - have) {
			have += got;
			break;
		}
	}
	got = have;
	if (got < bytes) {
		rc = seterr(err, SPIRT_ETRUNC, 0, 1, got / isize,
		    "truncated IDX data (header says %zu items)", ix->n);
		goto out;
	}
	if ((rc = spirt_gz_read(f, err, &extra, 1, &got)))
		goto out;
	if (got)
		rc = seterr(err, SPIRT_EDATA, 0, 0, 0,
		    "data after the last of %zu items", ix->n);
	goto out;
shape:
	rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0, "IDX dimensions too large");
out:
	rc = spirt_gz_close(f, err, rc);
	if (rc) {
		free(ix->data);
		ix->data = NULL;
	}
	return rc;
}

/* Element i of a raw IDX array as a double. */
static double
idx_get(const struct idx *ix, size_t i)
{
	const unsigned char *p = ix->data;
	union { uint32_t u; float f; } u32;
	union { uint64_t u; double d; } u64;

	switch (ix->type) {
	case 0x08: return p[i];
	case 0x09: return (int8_t)p[i];
	case 0x0B: return (int16_t)(uint16_t)(p[2 * i] << 8 | p[2 * i + 1]);
	case 0x0C: return (int32_t)be32(p + 4 * i);
	case 0x0D: u32.u = be32(p + 4 * i); return u32.f;
	default: u64.u = be64(p + 8 * i); return u64.d;
	}
}

int
spirt_data_read_idx(struct spirt_dataset *ds, struct spirt_data_err *err,
    const char *images, const char *labels)
{
	struct idx im, lb;
	size_t i, total;
	unsigned r;
	int rc;

	memset(ds, 0, sizeof(*ds));
	memset(&lb, 0, sizeof(lb));
	if ((rc = idx_load(&im, err, images)))
		return rc;
	if ((rc = idx_load(&lb, err, labels)))
		goto out;
	if (lb.rank != 1) {
		rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0, "labels must be "
		    "integers of rank 1, not rank %u%s", lb.rank,
		    lb.rank > 1 ? " (images and labels swapped?)" : "");
		goto out;
	}
	if (lb.type == 0x0D || lb.type == 0x0E) {
		rc = seterr(err, SPIRT_EDTYPE, 0, 0, 0, "labels must be "
		    "integers, not %s (IDX type 0x%02x)", lb.type == 0x0D ?
		    "float" : "double", lb.type);
		goto out;
	}
	if (lb.n != im.n) {
		rc = seterr(err, SPIRT_ESHAPE, 0, 0, 0,
		    "%zu labels for %zu images in %s", lb.n, im.n, images);
		goto out;
	}
	ds->n = im.n;
	ds->feat = im.per;
	ds->dims[0] = im.n;
	if (im.rank == 3) {             /* [n, rows, cols] -> [n, 1, r, c] */
		ds->rank = 4;
		ds->dims[1] = 1;
		ds->dims[2] = im.dims[1];
		ds->dims[3] = im.dims[2];
	} else if (im.rank == 1) {
		ds->rank = 2;
		ds->dims[1] = 1;
	} else {
		ds->rank = im.rank;
		for (r = 1; r < im.rank; r++)
			ds->dims[r] = im.dims[r];
	}
	total = im.n * im.per;
	if (im.type == 0x08) {
		ds->xdtype = SPIRT_U8;
		ds->x = im.data;
		im.data = NULL;
	} else {
		float *x = malloc(total * sizeof(float));
		err->file = images;
		if (x == NULL) {
			rc = seterr(err, ENOMEM, 0, 0, 0, NULL);
			goto out;
		}
		ds->xdtype = SPIRT_F32;
		ds->x = x;
		for (i = 0; i < total; i++) {
			x[i] = (float)idx_get(&im, i);
			if (!isfinite(x[i])) {
				rc = seterr(err, SPIRT_ENAN, 0, 1, i / im.per,
				    "value not finite");
				goto out;
			}
		}
	}
	if ((ds->y = malloc(im.n * sizeof(int32_t))) == NULL) {
		rc = seterr(err, ENOMEM, 0, 0, 0, NULL);
		goto out;
	}
	for (i = 0; i < lb.n; i++) {
		double v = idx_get(&lb, i);
		ds->y[i] = v < 0 ? -1 : (int32_t)v;
	}
out:
	free(im.data);
	free(lb.data);
	if (rc)
		spirt_dataset_free(ds);
	return rc;
}
