/* npy.c - NumPy .npy format, version 1.0-3.0 (ISC licence) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static const struct {
	const char *descr;
	int dtype;
} descrs[] = {
	{ "<f4", SPIRT_F32 }, { "<f8", SPIRT_F64 }, { "<i4", SPIRT_I32 },
	{ "<i8", SPIRT_I64 }, { "|u1", SPIRT_U8 }, { "<u1", SPIRT_U8 },
	{ "u1", SPIRT_U8 },
};

static const char *
skipws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
		p++;
	return p;
}

/* find the value of 'key' in the dict text [p, end) */
static const char *
findkey(const char *p, const char *end, const char *key)
{
	size_t n = strlen(key);

	for (; p + n + 2 < end; p++)
		if ((*p == '\'' || *p == '"') && p[n + 1] == *p &&
		    !memcmp(p + 1, key, n)) {
			p = skipws(p + n + 2, end);
			if (p >= end || *p != ':')
				return NULL;
			return skipws(p + 1, end);
		}
	return NULL;
}

int
spirt_npy_head(struct spirt_npy_head *hd, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	const char *h, *end, *p, *e;
	size_t hlen, off;
	char q;

	memset(hd, 0, sizeof *hd);
	if (len < 10 || memcmp(b, "\x93NUMPY", 6))
		return SPIRT_ENPY;
	if (b[6] == 1) {
		hlen = (size_t)b[8] | (size_t)b[9] << 8;
		off = 10;
	} else if (b[6] == 2 || b[6] == 3) {
		if (len < 12)
			return SPIRT_ENPY;
		hlen = (size_t)b[8] | (size_t)b[9] << 8 |
		    (size_t)b[10] << 16 | (size_t)b[11] << 24;
		off = 12;
	} else
		return SPIRT_ENPY;
	if (hlen > len - off)
		return SPIRT_ENPY;
	h = (const char *)b + off;
	end = h + hlen;
	while (end > h && (end[-1] == '\n' || end[-1] == ' ' || !end[-1]))
		end--;
	p = skipws(h, end);
	if (p >= end || *p != '{' || end[-1] != '}')
		return SPIRT_ENPY;

	/* 'descr': '<f4' */
	if (!(p = findkey(h, end, "descr")) || (*p != '\'' && *p != '"'))
		return SPIRT_ENPY;
	q = *p++;
	if (!(e = memchr(p, q, (size_t)(end - p))))
		return SPIRT_ENPY;
	hd->descr = p;
	hd->descrlen = (size_t)(e - p);
	/* 'fortran_order': False */
	if (!(p = findkey(h, end, "fortran_order")))
		return SPIRT_ENPY;
	if (end - p >= 5 && !memcmp(p, "False", 5))
		hd->fortran = 0;
	else if (end - p >= 4 && !memcmp(p, "True", 4))
		hd->fortran = 1;
	else
		return SPIRT_ENPY;
	/* 'shape': (a, b, ) */
	if (!(p = findkey(h, end, "shape")) || *p != '(')
		return SPIRT_ENPY;
	p = skipws(p + 1, end);
	while (p < end && *p != ')') {
		char *ep;
		unsigned long long v;
		if (*p < '0' || *p > '9')
			return SPIRT_ENPY;
		errno = 0;
		v = strtoull(p, &ep, 10);
		if (errno || (const char *)ep > end)
			return SPIRT_ENPY;
		if (hd->rank == SPIRT_MAXRANK)
			return SPIRT_ESHAPE;
		hd->dims[hd->rank++] = v;
		p = skipws(ep, end);
		if (p < end && *p == ',')
			p = skipws(p + 1, end);
		else if (p < end && *p != ')')
			return SPIRT_ENPY;
	}
	if (p >= end)
		return SPIRT_ENPY;
	hd->data = b + off + hlen;
	hd->datalen = len - off - hlen;
	return 0;
}

int
spirt_npy_parse(struct spirt_tensor *t, const void **data, const void *buf,
    size_t len)
{
	struct spirt_npy_head hd;
	int dtype = 0, rc;

	if ((rc = spirt_npy_head(&hd, buf, len)))
		return rc;
	for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
		if (strlen(descrs[i].descr) == hd.descrlen &&
		    !memcmp(descrs[i].descr, hd.descr, hd.descrlen))
			dtype = descrs[i].dtype;
	if (!dtype)
		return SPIRT_EDTYPE;
	if (hd.fortran && hd.rank > 1)
		return SPIRT_ENPY;
	if ((rc = spirt_tensor_init(t, dtype, hd.rank, hd.dims)))
		return rc;
	if (hd.datalen < t->nbytes)
		return SPIRT_ETRUNC;
	if (hd.datalen > t->nbytes)
		return SPIRT_ENPY;
	*data = hd.data;
	return 0;
}

int
spirt_npy_header(char *out, size_t cap, size_t *hlen,
    const struct spirt_tensor *t)
{
	const char *descr;
	char dict[SPIRT_MAXRANK * 22 + 96];
	int n;
	size_t total;

	switch (t->dtype) {
	case SPIRT_F32: descr = "<f4"; break;
	case SPIRT_F64: descr = "<f8"; break;
	case SPIRT_I32: descr = "<i4"; break;
	case SPIRT_I64: descr = "<i8"; break;
	case SPIRT_U8:  descr = "|u1"; break;
	default: return SPIRT_EDTYPE;
	}
	n = snprintf(dict, sizeof dict,
	    "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (unsigned i = 0; i < t->rank; i++)
		n += snprintf(dict + n, sizeof dict - (size_t)n, "%llu,%s",
		    (unsigned long long)t->dims[i],
		    i + 1 < t->rank ? " " : "");
	n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
	/* magic(6) version(2) len(2) dict pad '\n', to a multiple of 64 */
	total = (10 + (size_t)n + 1 + 63) / 64 * 64;
	if (total > cap || total - 10 > 0xffff)
		return SPIRT_EINVAL;
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (char)((total - 10) & 0xff);
	out[9] = (char)((total - 10) >> 8);
	memcpy(out + 10, dict, (size_t)n);
	memset(out + 10 + n, ' ', total - 10 - (size_t)n - 1);
	out[total - 1] = '\n';
	*hlen = total;
	return 0;
}
