/* tensor.h - the spirt tensor record: pack, unpack, checksums, streams */
#ifndef SPIRT_TENSOR_H
#define SPIRT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * One record format for everything that moves: pipes, files, store values,
 * HTTP bodies.  Byte layout (all little-endian) is in spirt-tensor(5):
 *
 *   fixed header (56 bytes) | dims (8*rank) | name, zero-padded to 8 |
 *   [revision (8), version 2 only] | header checksum (8) | payload |
 *   trailer "SPRE" 0000 payload-checksum (16)
 *
 * The header checksum is XXH3-64 of every header byte before it; the payload
 * checksum is XXH3-64 of the payload seeded with the header checksum, so a
 * payload cannot be paired with another record's header.
 */

#define SPIRT_TENSOR_MAGIC    "SPRT"
#define SPIRT_TENSOR_ENDMAGIC "SPRE"
#define SPIRT_TENSOR_VERSION  1        /* a record without a revision */
#define SPIRT_TENSOR_VERSION2 2        /* one with (SPIRT_TF_REVISION) */
#define SPIRT_TENSOR_FIXED    56        /* fixed header bytes */
#define SPIRT_TENSOR_TRAILER  16
#define SPIRT_MAXRANK         8
#define SPIRT_NAME_MAX        255

#define SPIRT_NOSTEP   UINT64_MAX       /* step field unset */
#define SPIRT_NOORIGIN UINT32_MAX       /* origin field unset */
#define SPIRT_NOREVISION UINT64_MAX     /* revision field absent */

enum spirt_dtype {
	SPIRT_F32 = 1,
	SPIRT_F64 = 2,
	SPIRT_I32 = 3,
	SPIRT_U8  = 4,
	SPIRT_I64 = 5
};

/*
 * Flags: none defined in version 1; readers reject unknown bits.
 * Version 2 defines one: SPIRT_TF_REVISION, an 8-byte field after the
 * name holding the data assignment revision a gradient was computed under
 * (data/<ds>/assign, spirt-shard(1)).  A writer makes a version 2 record
 * only when that flag is set, so records without a revision are the
 * version 1 bytes they always were.
 */
#define SPIRT_TF_REVISION 0x0001u
#define SPIRT_TF_KNOWN_V1 0x0000u
#define SPIRT_TF_KNOWN    SPIRT_TF_REVISION

/* Parsed header.  A plain struct in memory, never written as is. */
struct spirt_tensor {
	uint8_t  dtype;                 /* enum spirt_dtype */
	uint8_t  rank;                  /* 0..SPIRT_MAXRANK */
	uint16_t flags;
	uint64_t dims[SPIRT_MAXRANK];
	uint64_t step;                  /* SPIRT_NOSTEP when unset */
	uint64_t samples;               /* sample count (0 when unset) */
	double   loss;                  /* NaN when unset */
	uint32_t origin;                /* SPIRT_NOORIGIN when unset */
	uint32_t count;                 /* inputs aggregated into it (0 unset) */
	uint64_t revision;              /* with SPIRT_TF_REVISION, else
					   SPIRT_NOREVISION */
	char     name[SPIRT_NAME_MAX + 1];
	/* derived by spirt_tensor_init / pack / unpack: */
	uint64_t nelem;                 /* product of dims */
	uint64_t nbytes;                /* payload bytes */
	uint32_t hdrlen;                /* header bytes incl. checksum */
	uint64_t hsum;                  /* header checksum */
};

/* Size in bytes of one element of dtype, or 0 if unknown. */
size_t spirt_dtype_size(int dtype);
/* "f32", "f64", "i32", "u8", "i64", or NULL if unknown. */
const char *spirt_dtype_name(int dtype);
/* dtype for a name as above, or 0. */
int spirt_dtype_parse(const char *name);

/*
 * Initialise t for a tensor of the given dtype and shape: metadata unset,
 * nelem/nbytes/hdrlen computed.  Returns 0, SPIRT_EDTYPE, SPIRT_ESHAPE
 * (rank too large or byte size overflows).
 */
SPIRT_MUST_CHECK int spirt_tensor_init(struct spirt_tensor *t, int dtype,
    unsigned rank, const uint64_t *dims);

/* Set the name (truncates nothing: SPIRT_EINVAL when too long). */
SPIRT_MUST_CHECK int spirt_tensor_set_name(struct spirt_tensor *t,
    const char *name);

/*
 * Give t a revision field holding rev (SPIRT_TF_REVISION set), or none
 * for SPIRT_NOREVISION; recomputes t->hdrlen.
 */
void spirt_tensor_set_revision(struct spirt_tensor *t, uint64_t rev)
    SPIRT_NONNULL(1);

/* Header bytes for t as it stands (recomputes t->hdrlen). */
size_t spirt_tensor_hdrlen(struct spirt_tensor *t);
/* Whole record bytes: header + payload + trailer. */
size_t spirt_tensor_reclen(struct spirt_tensor *t);

/*
 * Pack t's header into out (cap bytes, at least spirt_tensor_hdrlen(t)).
 * Fills t->hdrlen and t->hsum.  Returns 0 or SPIRT_EINVAL.
 */
SPIRT_MUST_CHECK int spirt_tensor_pack_header(void *out, size_t cap,
    struct spirt_tensor *t);

/*
 * Parse a header from buf.  With len < SPIRT_TENSOR_FIXED, or len below the
 * header length the fixed part announces, returns SPIRT_ETRUNC and, when
 * known, sets *need to the bytes required.  Other errors: SPIRT_EMAGIC,
 * SPIRT_EVERSION, SPIRT_EDTYPE, SPIRT_ESHAPE, SPIRT_EHEADER.
 */
SPIRT_MUST_CHECK int spirt_tensor_unpack_header(struct spirt_tensor *t,
    const void *buf, size_t len, size_t *need);

/* Trailer for payload under header t (t->hsum must be set). */
void spirt_tensor_pack_trailer(unsigned char out[SPIRT_TENSOR_TRAILER],
    const struct spirt_tensor *t, const void *payload);
/*
 * The payload checksum piece by piece: init with the header (t->hsum set),
 * add the payload's bytes in order, in pieces of any size, then pack the
 * trailer.  The trailer is the one spirt_tensor_pack_trailer() makes; a
 * writer that produces its payload tile by tile checksums each tile while
 * it is still in cache instead of rereading the whole payload from memory.
 */
struct spirt_tensor_sum {
	_Alignas(64) unsigned char state[640];  /* XXH3 streaming state */
};
void spirt_tensor_sum_init(struct spirt_tensor_sum *s,
    const struct spirt_tensor *t) SPIRT_NONNULL(1, 2);
void spirt_tensor_sum_add(struct spirt_tensor_sum *s, const void *p,
    size_t n) SPIRT_NONNULL(1);
void spirt_tensor_sum_trailer(unsigned char out[SPIRT_TENSOR_TRAILER],
    struct spirt_tensor_sum *s) SPIRT_NONNULL(1, 2);
/* 0, SPIRT_ETORN (no end magic) or SPIRT_ECHECKSUM. */
SPIRT_MUST_CHECK int spirt_tensor_check_trailer(const struct spirt_tensor *t,
    const void *payload, const unsigned char tr[SPIRT_TENSOR_TRAILER]);

/* ---- whole records in memory (store values, HTTP bodies) ---- */

/*
 * Encode t and payload into out (cap >= spirt_tensor_reclen(t)).
 * Returns 0 or SPIRT_EINVAL.
 */
SPIRT_MUST_CHECK int spirt_tensor_encode(void *out, size_t cap,
    struct spirt_tensor *t, const void *payload);

/*
 * Decode the record in rec[0..len): fills t, points *payload into rec
 * (zero-copy).  verify=1 checks the payload checksum (one pass over the
 * payload); the header checksum is always checked.  Extra bytes after the
 * record are SPIRT_ETORN.  Note: *payload is aligned to 8 bytes only if rec
 * is (see spirt_aligned()).
 */
SPIRT_MUST_CHECK int spirt_tensor_decode(struct spirt_tensor *t,
    const void **payload, const void *rec, size_t len, int verify);

/* 1 if p is suitably aligned for elements of dtype. */
int spirt_aligned(const void *p, int dtype);

/* ---- streams: several records back to back on a file descriptor ---- */

/*
 * Write one record to fd (header, payload, trailer), retrying short writes.
 * Returns 0 or errno (EPIPE included).  Not atomic on a pipe above PIPE_BUF:
 * never share one pipe between several writers.
 */
SPIRT_MUST_CHECK int spirt_tensor_write(int fd, struct spirt_tensor *t,
    const void *payload);

/*
 * Read the next record from fd.  On success *payload is a fresh buffer
 * (64-byte aligned, free with free()) holding t->nbytes bytes.  Returns 0,
 * SPIRT_EOF at a clean end of stream (no byte read), SPIRT_ETRUNC when the
 * stream ends inside a record, SPIRT_ETORN/SPIRT_ECHECKSUM for torn or
 * interleaved data, header errors as spirt_tensor_unpack_header, ENOMEM or
 * another errno.  maxbytes (0: no limit) bounds the payload accepted.
 * The size a header claims is never allocated on trust: from a regular
 * file it is checked against the bytes left (SPIRT_ETRUNC before any
 * allocation); from a pipe the buffer grows as the bytes arrive.
 */
SPIRT_MUST_CHECK int spirt_tensor_read(int fd, struct spirt_tensor *t,
    void **payload, uint64_t maxbytes);

/* ---- model files (-p): one rule for every tool ---- */

/*
 * Read the model file at path ("-": standard input): the model record,
 * which must carry a step, optionally followed by one optimiser-state
 * record (spirt-update -o writes both), then the end of the file.  Anything
 * after them, a third record or a few stray bytes, makes the file
 * malformed.  *mpl and *spl (out) are fresh buffers as spirt_tensor_read()
 * gives them, *spl NULL when there is no state; st and spl may be NULL, and
 * a state record is then checked and dropped.  On failure msg (cap bytes)
 * says where, without the cause: "m.rec: record 1" (records count from 0),
 * for the caller to append spirt_strerror().  Returns 0, errno (open or
 * read), SPIRT_ETRUNC (empty), record errors, SPIRT_ESTEP (the model has
 * no step), SPIRT_EDATA (more than two records or trailing bytes that are
 * a record).
 */
SPIRT_MUST_CHECK int spirt_model_file_read(const char *path,
    struct spirt_tensor *m, void **mpl, struct spirt_tensor *st, void **spl,
    char *msg, size_t cap) SPIRT_NONNULL(1, 2, 3, 6);

/* ---- helpers ---- */

/* Summary statistics of a payload converted to double. */
struct spirt_tensor_stats {
	double min, max, mean, l2;
	uint64_t nan, inf;
};
void spirt_tensor_stats(struct spirt_tensor_stats *st,
    const struct spirt_tensor *t, const void *payload);

/* Count NaN/Inf in a float32 vector (0 if none). */
size_t spirt_count_nonfinite_f32(const float *x, size_t n);

#endif
