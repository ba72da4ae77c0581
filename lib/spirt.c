/* spirt.c - error strings and the one exit-code map (ISC licence) */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <lmdb.h>

#include "spirt.h"

static const char *const msgs[] = {
	[SPIRT_EOF - SPIRT_EOF]       = "end of stream",
	[SPIRT_EMAGIC - SPIRT_EOF]    = "bad magic (not a spirt record)",
	[SPIRT_EVERSION - SPIRT_EOF]  = "unsupported format version",
	[SPIRT_EDTYPE - SPIRT_EOF]    = "unknown or unexpected dtype",
	[SPIRT_ESHAPE - SPIRT_EOF]    = "bad or mismatched shape",
	[SPIRT_EHEADER - SPIRT_EOF]   = "corrupt record header",
	[SPIRT_ECHECKSUM - SPIRT_EOF] = "payload checksum mismatch (corrupt, torn or interleaved)",
	[SPIRT_ETRUNC - SPIRT_EOF]    = "truncated record",
	[SPIRT_ETORN - SPIRT_EOF]     = "torn or interleaved record",
	[SPIRT_ENOTFOUND - SPIRT_EOF] = "no such key",
	[SPIRT_EEXIST - SPIRT_EOF]    = "key exists",
	[SPIRT_EFULL - SPIRT_EOF]     = "store full (map cannot grow)",
	[SPIRT_ENOTSUP - SPIRT_EOF]   = "not supported",
	[SPIRT_EURL - SPIRT_EOF]      = "malformed store URL",
	[SPIRT_ENAN - SPIRT_EOF]      = "NaN or Inf in data",
	[SPIRT_ENPY - SPIRT_EOF]      = "malformed .npy file",
	[SPIRT_EKEY - SPIRT_EOF]      = "invalid key",
	[SPIRT_ESTEP - SPIRT_EOF]     = "wrong or unknown step",
	[SPIRT_EDONE - SPIRT_EOF]     = "step already applied",
	[SPIRT_EMAC - SPIRT_EOF]      = "authentication failed (bad MAC)",
	[SPIRT_EBUSY - SPIRT_EOF]     = "busy, try again",
	[SPIRT_EINVAL - SPIRT_EOF]    = "invalid argument",
	[SPIRT_EMODEL - SPIRT_EOF]    = "malformed model spec",
	[SPIRT_EDATA - SPIRT_EOF]     = "malformed input data",
	[SPIRT_EBUG - SPIRT_EOF]      = "internal error",
	[SPIRT_EENV - SPIRT_EOF]      =
	    "bad value of SPIRT_SYNC, SPIRT_MAPSIZE or SPIRT_MAPSIZE_MAX",
	[SPIRT_EREPLAY - SPIRT_EOF]   = "replayed message or handshake",
	[SPIRT_ESTALE - SPIRT_EOF]    =
	    "handshake timestamp outside the window (clocks apart?)",
	[SPIRT_EEXPIRED - SPIRT_EOF]  = "member token expired",
	[SPIRT_EUNKNOWNKEY - SPIRT_EOF] = "unknown key (not a member)",
	[SPIRT_ERUN - SPIRT_EOF]      = "for another run",
	[SPIRT_EROLE - SPIRT_EOF]     = "member in the wrong role",
	[SPIRT_EADDR - SPIRT_EOF]     = "addressed to or from another peer or worker",
	[SPIRT_EWRONGKEY - SPIRT_EOF] = "message for another store key",
	[SPIRT_EKEYPERM - SPIRT_EOF]  =
	    "secret key file readable by group or others (chmod 600)",
	[SPIRT_EKEYFILE - SPIRT_EOF]  =
	    "malformed key, token or allowlist file",
	[SPIRT_ETIMEDOUT - SPIRT_EOF] = "peer did not answer in time",
	[SPIRT_EUNREACH - SPIRT_EOF]  = "peer unreachable",
	[SPIRT_EPROTO - SPIRT_EOF]    =
	    "protocol error (not a spirt peer, or a malformed answer)",
	[SPIRT_ESESSION - SPIRT_EOF]  = "unknown or expired session",
	[SPIRT_ETOOBIG - SPIRT_EOF]   = "value too large for the peer",
	[SPIRT_ERATE - SPIRT_EOF]     =
	    "over the peer's request rate (slow down, retry)",
};

/* the names, in enum order (spirt_errname) */
static const char *const names[] = {
	"EOF", "EMAGIC", "EVERSION", "EDTYPE", "ESHAPE", "EHEADER",
	"ECHECKSUM", "ETRUNC", "ETORN", "ENOTFOUND", "EEXIST", "EFULL",
	"ENOTSUP", "EURL", "ENAN", "ENPY", "EKEY", "ESTEP", "EDONE", "EMAC",
	"EBUSY", "EINVAL", "EMODEL", "EDATA", "EBUG", "EENV", "EREPLAY",
	"ESTALE", "EEXPIRED", "EUNKNOWNKEY", "ERUN", "EROLE", "EADDR",
	"EWRONGKEY", "EKEYPERM", "EKEYFILE", "ETIMEDOUT", "EUNREACH",
	"EPROTO", "ESESSION", "ETOOBIG", "ERATE",
};
_Static_assert(sizeof names / sizeof names[0] == SPIRT_ELAST - SPIRT_EOF,
    "one name per SPIRT_E* code");

const char *
spirt_errname(int rc)
{
	return rc >= SPIRT_EOF && rc < SPIRT_ELAST ? names[rc - SPIRT_EOF] :
	    NULL;
}

int
spirt_errcode(const char *name)
{
	for (int i = 0; i < SPIRT_ELAST - SPIRT_EOF; i++)
		if (strcmp(names[i], name) == 0)
			return SPIRT_EOF + i;
	return 0;
}

const char *
spirt_strerror(int rc)
{
	if (rc == 0)
		return "success";
	rc = SPIRT_ECAUSE(rc);
	if (rc > 0)
		return strerror(rc);
	if (rc >= SPIRT_EOF && rc < SPIRT_ELAST)
		return msgs[rc - SPIRT_EOF];
	if (rc >= MDB_KEYEXIST && rc <= MDB_LAST_ERRCODE)
		return mdb_strerror(rc);
	return "unknown error";
}

int
spirt_exit(int rc)
{
	if (rc == 0)
		return SPIRT_EX_OK;
	if (SPIRT_ISOUTPUT(rc)) {
		int code = spirt_exit(SPIRT_ECAUSE(rc));

		/* a missing directory or no permission: cannot create */
		return code == SPIRT_EX_NOINPUT ? SPIRT_EX_CANTCREAT : code;
	}
	if (rc > 0) {
		switch (rc) {
		case ENOENT: case ENOTDIR: case EACCES: case EPERM:
		case ELOOP: case ENAMETOOLONG: case EISDIR:
			return SPIRT_EX_NOINPUT;
		case ENOMEM: case EAGAIN: case EMFILE: case ENFILE:
			return SPIRT_EX_OSERR;
		case EINVAL: case ERANGE:
			return SPIRT_EX_USAGE;
		case EEXIST: case EROFS:
			return SPIRT_EX_CANTCREAT;
		case ETIMEDOUT: case EINTR: case EBUSY:
			return SPIRT_EX_TEMPFAIL;
		case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH:
			return SPIRT_EX_UNAVAILABLE;
		default:        /* EIO, ENOSPC, EPIPE, EDQUOT, EFBIG, ... */
			return SPIRT_EX_IOERR;
		}
	}
	switch (rc) {
	case SPIRT_EMAGIC: case SPIRT_EVERSION: case SPIRT_EDTYPE:
	case SPIRT_ESHAPE: case SPIRT_EHEADER: case SPIRT_ECHECKSUM:
	case SPIRT_ETRUNC: case SPIRT_ETORN: case SPIRT_ENAN:
	case SPIRT_ENPY: case SPIRT_ESTEP: case SPIRT_EMAC:
	case SPIRT_EMODEL: case SPIRT_EDATA: case SPIRT_EOF:
	case SPIRT_EREPLAY: case SPIRT_ESTALE: case SPIRT_EEXPIRED:
	case SPIRT_EUNKNOWNKEY: case SPIRT_ERUN: case SPIRT_EROLE:
	case SPIRT_EADDR: case SPIRT_EWRONGKEY: case SPIRT_EKEYFILE:
		return SPIRT_EX_DATAERR;
	case SPIRT_EKEYPERM:    /* refused unread, as if it could not be */
		return SPIRT_EX_NOINPUT;
	case SPIRT_ENOTFOUND:
		return SPIRT_EX_NOINPUT;
	case SPIRT_EEXIST: case SPIRT_EDONE:
		return SPIRT_EX_CANTCREAT;
	case SPIRT_EFULL:
		return SPIRT_EX_IOERR;
	case SPIRT_EURL: case SPIRT_EKEY: case SPIRT_EINVAL: case SPIRT_EENV:
		return SPIRT_EX_USAGE;
	case SPIRT_ENOTSUP:
		return SPIRT_EX_UNAVAILABLE;
	case SPIRT_EBUSY: case SPIRT_ETIMEDOUT: case SPIRT_ESESSION:
	case SPIRT_ERATE:
		return SPIRT_EX_TEMPFAIL;
	case SPIRT_EUNREACH:
		return SPIRT_EX_UNAVAILABLE;
	case SPIRT_EPROTO:
		return SPIRT_EX_PROTOCOL;
	case SPIRT_ETOOBIG:
		return SPIRT_EX_DATAERR;
	/* LMDB */
	case MDB_NOTFOUND:
		return SPIRT_EX_NOINPUT;
	case MDB_KEYEXIST:
		return SPIRT_EX_CANTCREAT;
	case MDB_MAP_FULL:
		return SPIRT_EX_IOERR;
	case MDB_READERS_FULL: case MDB_TXN_FULL: case MDB_MAP_RESIZED:
		return SPIRT_EX_TEMPFAIL;
	case MDB_CORRUPTED: case MDB_PAGE_NOTFOUND: case MDB_INVALID:
	case MDB_VERSION_MISMATCH: case MDB_INCOMPATIBLE:
		return SPIRT_EX_DATAERR;
	default:
		return SPIRT_EX_SOFTWARE;
	}
}

int
spirt_msgf(char *buf, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return rc;
}

int
spirt_msgrc(char *buf, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	if (n + 1 < cap)
		snprintf(buf + n, cap - n, ": %s", spirt_strerror(rc));
	return rc;
}
