/* io.h - full reads and writes, atomic file publish */
#ifndef SPIRT_IO_H
#define SPIRT_IO_H

#include <stddef.h>
#include <sys/types.h>

#include "spirt.h"

/*
 * Read exactly n bytes unless EOF comes first.  Returns the number of bytes
 * read (< n only at EOF), or -1 with errno set.  Retries EINTR.
 */
ssize_t spirt_readall(int fd, void *buf, size_t n);
/* Write all n bytes.  Returns 0 or errno.  Retries EINTR. */
SPIRT_MUST_CHECK int spirt_writeall(int fd, const void *buf, size_t n);

/* Read a whole file ("-" for stdin) into a malloc'ed buffer. */
SPIRT_MUST_CHECK int spirt_readfile(const char *path, void **buf,
    size_t *len);

/*
 * Atomic publish: open a temporary "<path>.tmp.<pid>" in the same directory,
 * the caller writes to the returned fd, then spirt_publish_commit() fsyncs,
 * renames over path and fsyncs the directory; spirt_publish_abort() unlinks
 * the temporary.  Readers never see a partial file.
 */
struct spirt_publish {
	int fd;
	char *path;
	char *tmp;
};
/*
 * spirt_publish_open() failures, and a failed rename in
 * spirt_publish_commit(), are SPIRT_EOUTPUT(errno) (spirt.h): an empty
 * path or a missing directory is 73, the output cannot be created.
 */
SPIRT_MUST_CHECK int spirt_publish_open(struct spirt_publish *p,
    const char *path, int mode);
SPIRT_MUST_CHECK int spirt_publish_commit(struct spirt_publish *p);
void spirt_publish_abort(struct spirt_publish *p);

/* Seconds on the monotonic clock, for timings. */
double spirt_clock(void);

/* fsync the directory containing path (0 or errno). */
SPIRT_MUST_CHECK int spirt_fsync_dir(const char *path);

#endif
