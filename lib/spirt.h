/* spirt.h - version, error codes, exit codes (ISC licence, see LICENSE) */
#ifndef SPIRT_H
#define SPIRT_H

#include <stddef.h>

#define SPIRT_VERSION "0.1.0"

#if defined(__GNUC__)
#define SPIRT_MUST_CHECK __attribute__((warn_unused_result))
#define SPIRT_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#define SPIRT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SPIRT_MUST_CHECK
#define SPIRT_NONNULL(...)
#define SPIRT_PRINTF(f, a)
#endif

/*
 * Exit codes: the sysexits(3) numbers, documented once in spirt(7).
 * Tools never pick codes ad hoc: they pass a library return code to
 * spirt_exit().
 */
#define SPIRT_EX_OK          0
#define SPIRT_EX_NO          1   /* predicate tools only */
#define SPIRT_EX_USAGE       64
#define SPIRT_EX_DATAERR     65
#define SPIRT_EX_NOINPUT     66
#define SPIRT_EX_UNAVAILABLE 69
#define SPIRT_EX_SOFTWARE    70
#define SPIRT_EX_OSERR       71
#define SPIRT_EX_CANTCREAT   73
#define SPIRT_EX_IOERR       74
#define SPIRT_EX_TEMPFAIL    75
#define SPIRT_EX_PROTOCOL    76  /* the other side broke the protocol */

/*
 * Library return codes.  Every fallible function returns an int: 0 on
 * success, a positive errno value, an LMDB code (MDB_*, -30799..-30780),
 * or one of these negative SPIRT_E* codes.  spirt_strerror() covers all
 * three, as mdb_strerror() does.
 */
enum {
	SPIRT_EOF = -1000,      /* clean end of a record stream */
	SPIRT_EMAGIC,           /* bad magic */
	SPIRT_EVERSION,         /* unsupported format version */
	SPIRT_EDTYPE,           /* unknown or unexpected dtype */
	SPIRT_ESHAPE,           /* bad or mismatched shape */
	SPIRT_EHEADER,          /* malformed header / header checksum */
	SPIRT_ECHECKSUM,        /* payload checksum mismatch */
	SPIRT_ETRUNC,           /* truncated record or file */
	SPIRT_ETORN,            /* torn or interleaved record */
	SPIRT_ENOTFOUND,        /* no such key in the store */
	SPIRT_EEXIST,           /* key exists (no-overwrite put) */
	SPIRT_EFULL,            /* store map full and cannot grow */
	SPIRT_ENOTSUP,          /* not supported (yet), e.g. remote stores */
	SPIRT_EURL,             /* malformed store URL */
	SPIRT_ENAN,             /* NaN or Inf in data */
	SPIRT_ENPY,             /* malformed .npy file */
	SPIRT_EKEY,             /* invalid store key */
	SPIRT_ESTEP,            /* wrong or unknown step */
	SPIRT_EDONE,            /* step already applied (exactly-once) */
	SPIRT_EMAC,             /* MAC or signature failure */
	SPIRT_EBUSY,            /* transient: lock busy, timeout */
	SPIRT_EINVAL,           /* invalid argument or data value */
	SPIRT_EMODEL,           /* malformed model spec */
	SPIRT_EDATA,            /* malformed input data (generic) */
	SPIRT_EBUG,             /* internal invariant violated */
	SPIRT_EENV,             /* bad SPIRT_* environment variable value */
	SPIRT_EREPLAY,          /* replayed message or handshake */
	SPIRT_ESTALE,           /* handshake timestamp outside the window */
	SPIRT_EEXPIRED,         /* member token expired */
	SPIRT_EUNKNOWNKEY,      /* key not a member (under that id) */
	SPIRT_ERUN,             /* token or message for another run */
	SPIRT_EROLE,            /* member in the wrong role */
	SPIRT_EADDR,            /* from or to another peer than expected */
	SPIRT_EWRONGKEY,        /* message for another store key */
	SPIRT_EKEYPERM,         /* secret key file open to group or others */
	SPIRT_EKEYFILE,         /* malformed key, token or allowlist file */
	SPIRT_ETIMEDOUT,        /* a peer did not answer before the deadline */
	SPIRT_EUNREACH,         /* cannot connect to a peer */
	SPIRT_EPROTO,           /* not a spirt peer, or a malformed answer */
	SPIRT_ESESSION,         /* unknown or expired session (handshake again) */
	SPIRT_ETOOBIG,          /* value over the peer's size limit */
	SPIRT_ERATE,            /* a member over the peer's request rate */
	SPIRT_ELAST
};

/*
 * An output file that cannot be created: SPIRT_EOUTPUT(e) wraps the errno
 * value e, so that spirt_strerror() still names the cause ("No such file
 * or directory") while spirt_exit() says 73, the output cannot be created,
 * and not 66, an input is missing.  SPIRT_ECAUSE() unwraps one (any other
 * code is returned as it is).  spirt_publish_open() returns these.
 */
#define SPIRT_EOUT0 (-2000)
#define SPIRT_EOUTPUT(e) (SPIRT_EOUT0 - (e))
#define SPIRT_ISOUTPUT(rc) ((rc) <= SPIRT_EOUT0 && (rc) > SPIRT_EOUT0 - 4096)
#define SPIRT_ECAUSE(rc) (SPIRT_ISOUTPUT(rc) ? SPIRT_EOUT0 - (rc) : (rc))

/* Message for any library return code (errno, MDB_*, SPIRT_E*). */
const char *spirt_strerror(int rc);

/*
 * A failure's message, for the library's contexts that keep one (a msg
 * buffer the tool prints): fmt formatted into buf (cap bytes, truncated);
 * spirt_msgrc() appends ": " and spirt_strerror(rc).  Both return rc, so
 * that "return spirt_msgf(c->msg, sizeof c->msg, rc, ...)" says and fails.
 */
int spirt_msgf(char *buf, size_t cap, int rc, const char *fmt, ...)
    SPIRT_PRINTF(4, 5) SPIRT_NONNULL(1, 4);
int spirt_msgrc(char *buf, size_t cap, int rc, const char *fmt, ...)
    SPIRT_PRINTF(4, 5) SPIRT_NONNULL(1, 4);

/*
 * The name of a SPIRT_E* code without its prefix ("EREPLAY"), as servers
 * log and send refusals; NULL for other codes.  spirt_errcode() is the
 * inverse (0 if name is none of them).
 */
const char *spirt_errname(int rc);
int spirt_errcode(const char *name) SPIRT_NONNULL(1);

/* Exit code (SPIRT_EX_*) for a library return code; 0 maps to 0. */
int spirt_exit(int rc);

#endif
