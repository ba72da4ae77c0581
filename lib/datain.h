/* datain.h - data.c's insides, shared by the readers in idx.c and npz.c */
/* ISC licence, see LICENSE */
#ifndef SPIRT_DATAIN_H
#define SPIRT_DATAIN_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <zlib.h>

#include "data.h"

/* refuse absurd sizes before malloc: 64 GiB of samples */
#define DATA_MAXBYTES ((uint64_t)1 << 36)
#define GZ_CHUNK      (1u << 30)

/*
 * Fill err: its line (0: none) or record (has_rec), and fmt's message
 * (NULL: none, spirt_strerror(rc) is said).  Returns rc.
 */
static inline int
vseterr(struct spirt_data_err *err, int rc, uint64_t line, int has_rec,
    uint64_t rec, const char *fmt, va_list ap)
{
	err->line = line;
	err->has_record = has_rec;
	err->record = rec;
	err->hint = SPIRT_DATA_HINT_NONE;
	err->msg[0] = '\0';
	if (fmt)
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return rc;
}

static inline int
seterr(struct spirt_data_err *err, int rc, uint64_t line, int has_rec,
    uint64_t rec, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = vseterr(err, rc, line, has_rec, rec, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * Open path ("-" stdin) for spirt_gz_read: gzip or plain.  *size gets the
 * size of a regular file, 0 for stdin or anything else: only a known size
 * may be checked against what a header claims.  0, or errno or ENOMEM in
 * err.
 */
int spirt_gz_open(gzFile *out, uint64_t *size, struct spirt_data_err *err,
    const char *path);

/*
 * Read up to n bytes; *got gets the count (< n only at the end of data).
 * A stream that ends inside a gzip member is SPIRT_ETRUNC.
 */
int spirt_gz_read(gzFile f, struct spirt_data_err *err, void *buf, size_t n,
    size_t *got);

/* Close f; rc when rc != 0, else a late gzip error or 0. */
int spirt_gz_close(gzFile f, struct spirt_data_err *err, int rc);

#endif
