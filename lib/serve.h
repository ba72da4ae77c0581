/* serve.h - warm mode: one invocation per line of step numbers on a stream */
#ifndef SPIRT_SERVE_H
#define SPIRT_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "spirt.h"

/*
 * A warm tool (spirt-agg --serve, spirt-update --serve) opens the store
 * once, then treats each line of its input as one invocation: a step
 * number, in decimal.  It answers each with one line shorter than
 * SPIRT_SERVE_LINE bytes, so that several tools may share one FIFO for
 * their answers (a write of at most PIPE_BUF bytes is never interleaved).
 */
#define SPIRT_SERVE_LINE 256

/*
 * Read the next line from f and parse it as a step in [0, max].
 * buf (out, cap bytes, cap > 0) receives the line without its newline,
 * cut to cap - 1 bytes; the rest of a longer line is consumed, and the
 * line is then malformed.  Returns 0 with *step set (out); SPIRT_EOF at
 * the end of input; SPIRT_EINVAL for a line that is not a step (empty,
 * junk, too long) or ERANGE for one above max; errno on a read error.
 */
SPIRT_MUST_CHECK int spirt_serve_next(FILE *f, uint64_t *step, char *buf,
    size_t cap, uint64_t max) SPIRT_NONNULL(1, 2, 3);

/*
 * Set up a tool's warm loop.  Freed memory stays with the process (glibc's
 * mmap and trim thresholds raised), since every invocation allocates the
 * same large blocks again.  SIGINT and SIGTERM set a flag instead of
 * killing the process, so the invocation under way finishes (committed and
 * acknowledged) and the loop then ends.  No SA_RESTART: a wait for the next
 * line returns at once, and spirt_serve_next() then says SPIRT_EOF.
 */
void spirt_serve_init(void);
/* 1 once SIGINT or SIGTERM arrived (after spirt_serve_init). */
int spirt_serve_stopped(void);

#endif
