/* kv.h - the text records: VERSION=1, TYPE=..., NAME=value lines, END */
#ifndef SPIRT_KV_H
#define SPIRT_KV_H

#include <stddef.h>

#include "spirt.h"

/*
 * One small text format, in the manner of mdb_dump's header: the line
 * "VERSION=1", the line "TYPE=<type>", NAME=value lines, the line "END",
 * each ended by a newline and nothing after the last.  A name is
 * [A-Za-z0-9_]+ (key files and tokens use upper case, the store's records
 * lower case); a value is any bytes but newline and NUL.  Key files,
 * tokens and allowlists (keyfile.h, token.h, trust.h), beats and the
 * watcher's view (beat.h), a round's record (xrec.h, quorum.h) and a
 * peer's /v1/id answer (peersrv.c, remote.c) are written and read here.
 */

#define SPIRT_KV_VERSION 1
#define SPIRT_KV_MAX (1u << 20)         /* the longest record read */
#define SPIRT_KV_NAMES 32               /* distinct names in a record */

/*
 * The writer.  spirt_kvw_init: a record of type into buf (cap bytes), or
 * with buf NULL into a buffer of its own, malloc'd and grown (the caller
 * frees w->buf); the VERSION and TYPE lines written.  spirt_kvw_put,
 * _putf (a printf format), _hex (n bytes as 2n lower-case hex digits,
 * in constant time: secrets) add a line.  spirt_kvw_end adds END and
 * returns 0 with the record's length in *len (a NUL follows it in the
 * buffer), or the first error: ENOSPC (cap too small), SPIRT_EINVAL (a
 * name or value that is not one), ENOMEM.  After an error the other
 * calls do nothing.
 */
struct spirt_kvw {
	char *buf;
	size_t cap, n;
	int rc;
	int grow;                       /* buf is ours: realloc it */
};

void spirt_kvw_init(struct spirt_kvw *w, char *buf, size_t cap,
    const char *type) SPIRT_NONNULL(1, 4);
void spirt_kvw_put(struct spirt_kvw *w, const char *name, const char *val)
    SPIRT_NONNULL(1, 2, 3);
void spirt_kvw_putf(struct spirt_kvw *w, const char *name,
    const char *fmt, ...) SPIRT_PRINTF(3, 4) SPIRT_NONNULL(1, 2, 3);
void spirt_kvw_hex(struct spirt_kvw *w, const char *name,
    const unsigned char *b, size_t n) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_kvw_end(struct spirt_kvw *w, size_t *len)
    SPIRT_NONNULL(1, 2);

/*
 * The reader, strict: at most SPIRT_KV_MAX bytes, no NUL, "VERSION=1"
 * the first line (another number is SPIRT_EVERSION), "TYPE=<type>" the
 * second, then NAME=value lines, each name once (but those of multi, a
 * NULL-terminated list, which may repeat; at most SPIRT_KV_NAMES
 * names), "END" the last line.  With SPIRT_KV_NOTES lines that begin
 * with '#' are passed over.  Anything else is SPIRT_EDATA.
 *
 * spirt_kvr_open: reads the first two lines.  spirt_kvr_next: the next
 * line, its name and value in r (not NUL-terminated: into the text);
 * SPIRT_EOF at END, when it is the last line.  spirt_kvr_want: the next
 * line must be name=...  spirt_kvr_end: the next line must be the END
 * that ends the text.  r->line is the line read last (from 1): where an
 * error is.  spirt_kvr_is: 1 if the line read is name=...
 * spirt_kvr_str: its value into out (cap bytes, NUL-terminated), else
 * SPIRT_EDATA.
 */
#define SPIRT_KV_NOTES 1

struct spirt_kvr {
	const char *p, *end;
	size_t line;
	const char *name, *val;
	size_t nlen, vlen;
	const char *const *multi;
	unsigned flags;
	size_t nseen;
	const char *seen[SPIRT_KV_NAMES];
	size_t seenlen[SPIRT_KV_NAMES];
};

SPIRT_MUST_CHECK int spirt_kvr_open(struct spirt_kvr *r, const void *text,
    size_t len, const char *type, const char *const *multi, unsigned flags)
    SPIRT_NONNULL(1, 4);
SPIRT_MUST_CHECK int spirt_kvr_next(struct spirt_kvr *r) SPIRT_NONNULL(1);
SPIRT_MUST_CHECK int spirt_kvr_want(struct spirt_kvr *r, const char *name)
    SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_kvr_end(struct spirt_kvr *r) SPIRT_NONNULL(1);
int spirt_kvr_is(const struct spirt_kvr *r, const char *name)
    SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_kvr_str(const struct spirt_kvr *r, char *out,
    size_t cap) SPIRT_NONNULL(1, 2);

#endif
