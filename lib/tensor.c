/* tensor.c - pack, unpack and stream spirt tensor records (ISC licence) */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* XXH3_state_t's layout, for a state on the caller's stack */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
/* XXH3 with the widest vectors the CPU has, chosen at run time */
#include <xxh_x86dispatch.h>
#endif

#include "io.h"
#include "le.h"
#include "tensor.h"
#include "vec.h"

/*
 * The fuzz build (tests/fuzz/, make fuzz) compiles this file with
 * -DSPIRT_FUZZ: checksums are then not compared, so a fuzzer's mutations
 * get past the header checksum to the fields behind it.  Never defined in
 * a tool's build; tests/01-build.bats checks that no tool carries it.
 */
#ifdef SPIRT_FUZZ
#define SPIRT_FUZZ_NOSUM 1
#else
#define SPIRT_FUZZ_NOSUM 0
#endif

/* ---- dtypes ---- */

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	[SPIRT_F32] = { "f32", 4 },
	[SPIRT_F64] = { "f64", 8 },
	[SPIRT_I32] = { "i32", 4 },
	[SPIRT_U8]  = { "u8", 1 },
	[SPIRT_I64] = { "i64", 8 },
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

size_t
spirt_dtype_size(int dtype)
{
	return dtype > 0 && (size_t)dtype < NDTYPES ? dtypes[dtype].size : 0;
}

const char *
spirt_dtype_name(int dtype)
{
	return dtype > 0 && (size_t)dtype < NDTYPES ? dtypes[dtype].name : NULL;
}

int
spirt_dtype_parse(const char *name)
{
	for (size_t i = 1; i < NDTYPES; i++)
		if (!strcmp(name, dtypes[i].name))
			return (int)i;
	return 0;
}

/* ---- header ---- */

/* nelem and nbytes from dtype and dims; SPIRT_ESHAPE on overflow */
static int
sizes(struct spirt_tensor *t)
{
	size_t es = spirt_dtype_size(t->dtype);
	uint64_t n = 1;

	if (!es)
		return SPIRT_EDTYPE;
	if (t->rank > SPIRT_MAXRANK)
		return SPIRT_ESHAPE;
	for (unsigned i = 0; i < t->rank; i++) {
		if (t->dims[i] && n > (UINT64_MAX >> 8) / t->dims[i])
			return SPIRT_ESHAPE;
		n *= t->dims[i];
	}
	/* payload must fit a size_t and leave room for the rest */
	if (n > (uint64_t)(SIZE_MAX / 2) / es)
		return SPIRT_ESHAPE;
	t->nelem = n;
	t->nbytes = n * es;
	return 0;
}

int
spirt_tensor_init(struct spirt_tensor *t, int dtype, unsigned rank,
    const uint64_t *dims)
{
	memset(t, 0, sizeof *t);
	if (!spirt_dtype_size(dtype))
		return SPIRT_EDTYPE;
	if (rank > SPIRT_MAXRANK)
		return SPIRT_ESHAPE;
	t->dtype = (uint8_t)dtype;
	t->rank = (uint8_t)rank;
	for (unsigned i = 0; i < rank; i++)
		t->dims[i] = dims[i];
	t->step = SPIRT_NOSTEP;
	t->origin = SPIRT_NOORIGIN;
	t->revision = SPIRT_NOREVISION;
	t->loss = NAN;
	spirt_tensor_hdrlen(t);
	return sizes(t);
}

void
spirt_tensor_set_revision(struct spirt_tensor *t, uint64_t rev)
{
	t->revision = rev;
	if (rev == SPIRT_NOREVISION)
		t->flags &= (uint16_t)~SPIRT_TF_REVISION;
	else
		t->flags |= SPIRT_TF_REVISION;
	spirt_tensor_hdrlen(t);
}

int
spirt_tensor_set_name(struct spirt_tensor *t, const char *name)
{
	size_t n = strlen(name);

	if (n > SPIRT_NAME_MAX)
		return SPIRT_EINVAL;
	memcpy(t->name, name, n + 1);
	spirt_tensor_hdrlen(t);
	return 0;
}

static size_t
pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* header bytes: fixed part, dims, padded name, revision, checksum */
static size_t
hdrbytes(unsigned rank, size_t namelen, unsigned flags)
{
	return SPIRT_TENSOR_FIXED + 8 * (size_t)rank + pad8(namelen) +
	    (flags & SPIRT_TF_REVISION ? 8 : 0) + 8;
}

size_t
spirt_tensor_hdrlen(struct spirt_tensor *t)
{
	size_t n = hdrbytes(t->rank, strnlen(t->name, SPIRT_NAME_MAX),
	    t->flags);

	t->hdrlen = (uint32_t)n;
	return n;
}

size_t
spirt_tensor_reclen(struct spirt_tensor *t)
{
	return spirt_tensor_hdrlen(t) + (size_t)t->nbytes +
	    SPIRT_TENSOR_TRAILER;
}

int
spirt_tensor_pack_header(void *out, size_t cap, struct spirt_tensor *t)
{
	unsigned char *p = out;
	size_t namelen = strnlen(t->name, SPIRT_NAME_MAX), n, off;
	uint64_t lossbits;

	if (t->rank > SPIRT_MAXRANK || sizes(t) || t->flags & ~SPIRT_TF_KNOWN)
		return SPIRT_EINVAL;
	n = spirt_tensor_hdrlen(t);
	if (cap < n)
		return SPIRT_EINVAL;
	memset(p, 0, n);
	memcpy(p, SPIRT_TENSOR_MAGIC, 4);
	/* version 1 unless the record needs version 2's field */
	spirt_le_put16(p + 4, t->flags & SPIRT_TF_REVISION ?
	    SPIRT_TENSOR_VERSION2 : SPIRT_TENSOR_VERSION);
	p[6] = t->dtype;
	p[7] = t->rank;
	spirt_le_put32(p + 8, t->hdrlen);
	spirt_le_put16(p + 12, (uint16_t)namelen);
	spirt_le_put16(p + 14, t->flags);
	spirt_le_put64(p + 16, t->step);
	spirt_le_put64(p + 24, t->samples);
	memcpy(&lossbits, &t->loss, 8);
	spirt_le_put64(p + 32, lossbits);
	spirt_le_put32(p + 40, t->origin);
	spirt_le_put32(p + 44, t->count);
	spirt_le_put64(p + 48, t->nbytes);
	off = SPIRT_TENSOR_FIXED;
	for (unsigned i = 0; i < t->rank; i++, off += 8)
		spirt_le_put64(p + off, t->dims[i]);
	memcpy(p + off, t->name, namelen);
	if (t->flags & SPIRT_TF_REVISION)
		spirt_le_put64(p + n - 16, t->revision);
	off = n - 8;
	t->hsum = XXH3_64bits(p, off);
	spirt_le_put64(p + off, t->hsum);
	return 0;
}

int
spirt_tensor_unpack_header(struct spirt_tensor *t, const void *buf,
    size_t len, size_t *need)
{
	const unsigned char *p = buf;
	uint32_t hdrlen;
	uint64_t nbytes, lossbits;
	unsigned namelen, rank, version, flags;
	size_t off;
	int rc;

	if (need)
		*need = SPIRT_TENSOR_FIXED;
	if (len < 4)
		return len && memcmp(p, SPIRT_TENSOR_MAGIC, len) ?
		    SPIRT_EMAGIC : SPIRT_ETRUNC;
	if (memcmp(p, SPIRT_TENSOR_MAGIC, 4))
		return SPIRT_EMAGIC;
	if (len < 6)
		return SPIRT_ETRUNC;
	version = spirt_le_get16(p + 4);
	if (version != SPIRT_TENSOR_VERSION && version != SPIRT_TENSOR_VERSION2)
		return SPIRT_EVERSION;
	if (len < SPIRT_TENSOR_FIXED)
		return SPIRT_ETRUNC;
	hdrlen = spirt_le_get32(p + 8);
	rank = p[7];
	namelen = spirt_le_get16(p + 12);
	flags = spirt_le_get16(p + 14);
	/* the length is one of the two layouts before it is trusted */
	if (rank > SPIRT_MAXRANK || namelen > SPIRT_NAME_MAX ||
	    (hdrlen != hdrbytes(rank, namelen, 0) &&
	    hdrlen != hdrbytes(rank, namelen, SPIRT_TF_REVISION)))
		return SPIRT_EHEADER;
	if (need)
		*need = hdrlen;
	if (len < hdrlen)
		return SPIRT_ETRUNC;
	if (!SPIRT_FUZZ_NOSUM &&
	    XXH3_64bits(p, hdrlen - 8) != spirt_le_get64(p + hdrlen - 8))
		return SPIRT_EHEADER;
	/* a flag its version does not define: a newer writer's record */
	if (flags & ~(version == SPIRT_TENSOR_VERSION ? SPIRT_TF_KNOWN_V1 :
	    SPIRT_TF_KNOWN))
		return SPIRT_EVERSION;
	if (hdrlen != hdrbytes(rank, namelen, flags))
		return SPIRT_EHEADER;

	memset(t, 0, sizeof *t);
	t->dtype = p[6];
	t->rank = (uint8_t)rank;
	t->flags = (uint16_t)flags;
	t->step = spirt_le_get64(p + 16);
	t->samples = spirt_le_get64(p + 24);
	lossbits = spirt_le_get64(p + 32);
	memcpy(&t->loss, &lossbits, 8);
	t->origin = spirt_le_get32(p + 40);
	t->count = spirt_le_get32(p + 44);
	nbytes = spirt_le_get64(p + 48);
	off = SPIRT_TENSOR_FIXED;
	for (unsigned i = 0; i < rank; i++, off += 8)
		t->dims[i] = spirt_le_get64(p + off);
	memcpy(t->name, p + off, namelen);
	if (memchr(t->name, '\0', namelen))
		return SPIRT_EHEADER;
	/* the name's padding is zero (spirt-tensor(5)): no bytes hidden */
	for (size_t i = namelen; i < pad8(namelen); i++)
		if (p[off + i])
			return SPIRT_EHEADER;
	t->name[namelen] = '\0';
	t->revision = flags & SPIRT_TF_REVISION ?
	    spirt_le_get64(p + hdrlen - 16) : SPIRT_NOREVISION;
	t->hdrlen = hdrlen;
	t->hsum = spirt_le_get64(p + hdrlen - 8);
	if ((rc = sizes(t)))
		return rc;
	if (nbytes != t->nbytes)
		return SPIRT_ESHAPE;
	return 0;
}

void
spirt_tensor_pack_trailer(unsigned char out[SPIRT_TENSOR_TRAILER],
    const struct spirt_tensor *t, const void *payload)
{
	memcpy(out, SPIRT_TENSOR_ENDMAGIC, 4);
	spirt_le_put32(out + 4, 0);
	spirt_le_put64(out + 8, XXH3_64bits_withSeed(payload, t->nbytes, t->hsum));
}

_Static_assert(sizeof(XXH3_state_t) <= sizeof(struct spirt_tensor_sum),
    "struct spirt_tensor_sum holds an XXH3 state");
_Static_assert(_Alignof(XXH3_state_t) <= 64,
    "struct spirt_tensor_sum is aligned for an XXH3 state");

void
spirt_tensor_sum_init(struct spirt_tensor_sum *s, const struct spirt_tensor *t)
{
	XXH3_state_t *x = (XXH3_state_t *)(void *)s->state;

	XXH3_INITSTATE(x);
	(void)XXH3_64bits_reset_withSeed(x, t->hsum);
}

void
spirt_tensor_sum_add(struct spirt_tensor_sum *s, const void *p, size_t n)
{
	if (n)
		(void)XXH3_64bits_update((XXH3_state_t *)(void *)s->state, p,
		    n);
}

void
spirt_tensor_sum_trailer(unsigned char out[SPIRT_TENSOR_TRAILER],
    struct spirt_tensor_sum *s)
{
	memcpy(out, SPIRT_TENSOR_ENDMAGIC, 4);
	spirt_le_put32(out + 4, 0);
	spirt_le_put64(out + 8, XXH3_64bits_digest((XXH3_state_t *)(void *)s->state));
}

int
spirt_tensor_check_trailer(const struct spirt_tensor *t, const void *payload,
    const unsigned char tr[SPIRT_TENSOR_TRAILER])
{
	if (memcmp(tr, SPIRT_TENSOR_ENDMAGIC, 4) || spirt_le_get32(tr + 4))
		return SPIRT_ETORN;
	if (!SPIRT_FUZZ_NOSUM && XXH3_64bits_withSeed(payload, t->nbytes,
	    t->hsum) != spirt_le_get64(tr + 8))
		return SPIRT_ECHECKSUM;
	return 0;
}

/* ---- whole records ---- */

int
spirt_tensor_encode(void *out, size_t cap, struct spirt_tensor *t,
    const void *payload)
{
	unsigned char *p = out;
	int rc;

	if (cap < spirt_tensor_reclen(t))
		return SPIRT_EINVAL;
	if ((rc = spirt_tensor_pack_header(p, cap, t)))
		return rc;
	if (t->nbytes && payload != p + t->hdrlen)
		memcpy(p + t->hdrlen, payload, t->nbytes);
	spirt_tensor_pack_trailer(p + t->hdrlen + t->nbytes, t,
	    p + t->hdrlen);
	return 0;
}

int
spirt_tensor_decode(struct spirt_tensor *t, const void **payload,
    const void *rec, size_t len, int verify)
{
	const unsigned char *p = rec, *tr;
	size_t need;
	int rc;

	if ((rc = spirt_tensor_unpack_header(t, p, len, &need)))
		return rc;
	if (len - t->hdrlen < t->nbytes + SPIRT_TENSOR_TRAILER)
		return SPIRT_ETRUNC;
	if (len - t->hdrlen > t->nbytes + SPIRT_TENSOR_TRAILER)
		return SPIRT_ETORN;
	tr = p + t->hdrlen + t->nbytes;
	if (memcmp(tr, SPIRT_TENSOR_ENDMAGIC, 4) || spirt_le_get32(tr + 4))
		return SPIRT_ETORN;
	if (verify && (rc = spirt_tensor_check_trailer(t, p + t->hdrlen, tr)))
		return rc;
	*payload = p + t->hdrlen;
	return 0;
}

int
spirt_aligned(const void *p, int dtype)
{
	size_t a = spirt_dtype_size(dtype);

	return a && ((uintptr_t)p % a) == 0;
}

/* ---- streams ---- */

int
spirt_tensor_write(int fd, struct spirt_tensor *t, const void *payload)
{
	unsigned char hdr[SPIRT_TENSOR_FIXED + 8 * SPIRT_MAXRANK +
	    SPIRT_NAME_MAX + 1 + 16];
	unsigned char tr[SPIRT_TENSOR_TRAILER];
	struct iovec iov[3];
	size_t left;
	int rc, i = 0;

	if ((rc = spirt_tensor_pack_header(hdr, sizeof hdr, t)))
		return rc;
	spirt_tensor_pack_trailer(tr, t, payload);
	iov[0].iov_base = hdr;
	iov[0].iov_len = t->hdrlen;
	iov[1].iov_base = (void *)(uintptr_t)payload;
	iov[1].iov_len = t->nbytes;
	iov[2].iov_base = tr;
	iov[2].iov_len = sizeof tr;
	left = t->hdrlen + t->nbytes + sizeof tr;
	/* one writev when it all goes; finish short writes piecewise */
	while (left > 0) {
		ssize_t w = writev(fd, iov + i, 3 - i);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		left -= (size_t)w;
		while (w > 0) {
			size_t k = (size_t)w < iov[i].iov_len ?
			    (size_t)w : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			w -= (ssize_t)k;
			if (iov[i].iov_len == 0 && i < 2)
				i++;
		}
		while (i < 2 && iov[i].iov_len == 0)
			i++;
	}
	return 0;
}

/*
 * A header's claim is not evidence: a 88-byte stream may say u8[2^40].
 * The payload buffer grows as bytes arrive, so memory follows what was
 * sent.  A regular file says up front what is left in it; a pipe does not,
 * so there the buffer starts at READ_FIRST bytes (a model or gradient of
 * up to 16 Mi floats needs no more) and doubles, copied, as it fills.
 */
#define READ_FIRST ((size_t)64 << 20)

/* n bytes into a fresh 64-byte aligned *out; SPIRT_ETRUNC if fewer come */
static int
read_payload(int fd, void **out, size_t n)
{
	struct stat st;
	off_t pos;
	size_t cap = n, have = 0;
	void *buf = NULL, *nb;
	ssize_t r;

	*out = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (pos = lseek(fd, 0, SEEK_CUR)) >= 0) {
		if (pos > st.st_size || (uint64_t)(st.st_size - pos) <
		    (uint64_t)n + SPIRT_TENSOR_TRAILER)
			return SPIRT_ETRUNC;
	} else if (cap > READ_FIRST) {
		cap = READ_FIRST;
	}
	for (;;) {
		if (posix_memalign(&nb, 64, cap ? cap : 1)) {
			free(buf);
			return ENOMEM;
		}
		if (have)
			memcpy(nb, buf, have);
		free(buf);
		buf = nb;
		if ((r = spirt_readall(fd, (char *)buf + have, cap - have)) <
		    0) {
			int e = errno;
			free(buf);
			return e;
		}
		have += (size_t)r;
		if (have < cap) {
			free(buf);
			return SPIRT_ETRUNC;
		}
		if (cap == n)
			break;
		cap = n - cap > cap ? 2 * cap : n;
	}
	*out = buf;
	return 0;
}

int
spirt_tensor_read(int fd, struct spirt_tensor *t, void **payload,
    uint64_t maxbytes)
{
	unsigned char hdr[SPIRT_TENSOR_FIXED + 8 * SPIRT_MAXRANK +
	    SPIRT_NAME_MAX + 1 + 16];
	unsigned char tr[SPIRT_TENSOR_TRAILER];
	size_t need, have;
	ssize_t r;
	void *buf = NULL;
	int rc;

	*payload = NULL;
	r = spirt_readall(fd, hdr, SPIRT_TENSOR_FIXED);
	if (r < 0)
		return errno;
	if (r == 0)
		return SPIRT_EOF;
	have = (size_t)r;
	rc = spirt_tensor_unpack_header(t, hdr, have, &need);
	if (rc == SPIRT_ETRUNC && have == SPIRT_TENSOR_FIXED &&
	    need > have && need <= sizeof hdr) {
		if ((r = spirt_readall(fd, hdr + have, need - have)) < 0)
			return errno;
		have += (size_t)r;
		rc = spirt_tensor_unpack_header(t, hdr, have, &need);
	}
	if (rc)
		return rc;
	if (maxbytes && t->nbytes > maxbytes)
		return SPIRT_ESHAPE;
	if ((rc = read_payload(fd, &buf, (size_t)t->nbytes)))
		return rc;
	if ((r = spirt_readall(fd, tr, sizeof tr)) < 0) {
		rc = errno;
		goto fail;
	}
	if ((size_t)r < sizeof tr) {
		rc = r >= 4 && memcmp(tr, SPIRT_TENSOR_ENDMAGIC, 4) ?
		    SPIRT_ETORN : SPIRT_ETRUNC;
		goto fail;
	}
	if ((rc = spirt_tensor_check_trailer(t, buf, tr)))
		goto fail;
	*payload = buf;
	return 0;
fail:
	free(buf);
	return rc;
}

/* ---- model files ---- */

int
spirt_model_file_read(const char *path, struct spirt_tensor *m, void **mpl,
    struct spirt_tensor *st, void **spl, char *msg, size_t cap)
{
	struct spirt_tensor t2, t3;
	void *p2 = NULL, *p3 = NULL;
	int fd = STDIN_FILENO, rc;

	*mpl = NULL;
	if (spl)
		*spl = NULL;
	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) < 0)
		return spirt_msgf(msg, cap, errno, "open %s", path);
	if ((rc = spirt_tensor_read(fd, m, mpl, 0)) != 0) {
		if (rc == SPIRT_EOF)
			rc = spirt_msgf(msg, cap, SPIRT_ETRUNC, "%s: empty "
			    "file, no model record", path);
		else
			spirt_msgf(msg, cap, rc, "%s: record 0", path);
	} else if (m->step == SPIRT_NOSTEP) {
		rc = spirt_msgf(msg, cap, SPIRT_ESTEP, "%s: record 0: the "
		    "model has no step", path);
	} else if ((rc = spirt_tensor_read(fd, st ? st : &t2, &p2, 0)) != 0) {
		if (rc == SPIRT_EOF)
			rc = 0;
		else
			spirt_msgf(msg, cap, rc, "%s: record 1", path);
	} else if ((rc = spirt_tensor_read(fd, &t3, &p3, 0)) != SPIRT_EOF) {
		free(p3);
		if (rc == 0)
			rc = SPIRT_EDATA;
		spirt_msgf(msg, cap, rc, "%s: record 2: a model file holds "
		    "the model and its optimiser state, nothing after them",
		    path);
	} else {
		rc = 0;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc != 0) {
		free(*mpl);
		*mpl = NULL;
		free(p2);
		return rc;
	}
	if (spl)
		*spl = p2;
	else
		free(p2);
	return 0;
}

/* ---- helpers ---- */

static double
elem(const struct spirt_tensor *t, const void *p, uint64_t i)
{
	const unsigned char *b = (const unsigned char *)p +
	    i * spirt_dtype_size(t->dtype);
	float f;
	double d;
	int32_t i32;
	int64_t i64;

	switch (t->dtype) {
	case SPIRT_F32: memcpy(&f, b, 4); return f;
	case SPIRT_F64: memcpy(&d, b, 8); return d;
	case SPIRT_I32: memcpy(&i32, b, 4); return i32;
	case SPIRT_I64: memcpy(&i64, b, 8); return (double)i64;
	case SPIRT_U8: return *b;
	}
	return NAN;
}

void
spirt_tensor_stats(struct spirt_tensor_stats *st,
    const struct spirt_tensor *t, const void *payload)
{
	double sum = 0, sq = 0;
	uint64_t finite = 0;

	memset(st, 0, sizeof *st);
	st->min = INFINITY;
	st->max = -INFINITY;
	for (uint64_t i = 0; i < t->nelem; i++) {
		double v = elem(t, payload, i);
		if (isnan(v)) {
			st->nan++;
			continue;
		}
		if (isinf(v)) {
			st->inf++;
			continue;
		}
		finite++;
		sum += v;
		sq += v * v;
		if (v < st->min)
			st->min = v;
		if (v > st->max)
			st->max = v;
	}
	st->mean = finite ? sum / (double)finite : NAN;
	st->l2 = sqrt(sq);
	if (!finite)
		st->min = st->max = NAN;
}

/*
 * An exponent of all ones is Inf or NaN.  Integer lanes, so the compiler
 * vectorises the loop (isfinite() on floats it does not): models and
 * gradients are checked on every read, at memory speed.
 */
SPIRT_KERNEL size_t
spirt_count_nonfinite_f32_k(const float *x, size_t n)
{
	const size_t chunk = (size_t)1 << 28;   /* lanes cannot wrap */
	size_t bad = 0, m = n - n % 16;

	for (size_t c = 0; c < m; c += chunk) {
		size_t e = m - c > chunk ? c + chunk : m;
		uint32_t lane[16] = { 0 };
		for (size_t i = c; i < e; i += 16)
			for (int j = 0; j < 16; j++) {
				uint32_t v;
				memcpy(&v, &x[i + j], 4);
				lane[j] += (v & 0x7f800000u) == 0x7f800000u;
			}
		for (int j = 0; j < 16; j++)
			bad += lane[j];
	}
	for (size_t i = m; i < n; i++)
		bad += !isfinite(x[i]);
	return bad;
}

/* wider vectors where the CPU has them (SPIRT_DISPATCH, vec.h) */
SPIRT_DISPATCH(, size_t, spirt_count_nonfinite_f32,
    (const float *x, size_t n), (x, n))
