/* serve.h - warm mode: one invocation per request line on a stream */
#ifndef SPIRT_SERVE_H
#define SPIRT_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "spirt.h"

/*
 * The warm protocol of spirt-grad, spirt-agg and spirt-update --serve
 * (docs/contracts.md, "Warm protocol").  A warm tool opens the store once,
 * then treats each line of its input as one invocation:
 *
 *	request = step [ SP worker ] LF         (worker: spirt-grad only)
 *	step, worker = "0" / %x31-39 *DIGIT     (decimal, no sign, no
 *	                                         leading zero, in range)
 *
 * and answers each with exactly one line.  A line that breaks this grammar
 * in any way (too long, a NUL or other stray byte, a bad number, trailing
 * garbage, no newline before the end of input) runs nothing: its answer is
 * "error=64" and the tool goes on with the next line.  Answers are shorter
 * than SPIRT_SERVE_LINE bytes, so several tools may share one FIFO for
 * them (a write of at most PIPE_BUF bytes is never interleaved); requests
 * longer than that are refused whole.
 */
#define SPIRT_SERVE_LINE 256
/*
 * A tool may also take words after the step (spirt-update: the round
 * steps of spirt-train --every), when it names their keys (keys):
 *
 *	request =/ step [ SP worker ] *( SP key "=" value ) LF
 *	key     = 1*( %x61-7A )                 (one of keys, each once)
 *	value   = 1*( ALPHA / DIGIT / "." / "_" / "-" )
 *
 * at most SPIRT_SERVE_WORDS of them; what a value means, the tool checks.
 */
#define SPIRT_SERVE_WORDS 6

/* One word of a request: pointers into the line, valid during run. */
struct spirt_serve_word {
	const char *key, *val;
	size_t nkey, nval;
};

/* One parsed request. */
struct spirt_serve_req {
	uint64_t step;
	uint32_t worker;        /* the line's, else spirt_serve.worker0 */
	int has_worker;         /* 1 if the line named a worker */
	uint64_t line;          /* its line number, from 1 */
	int nwords;             /* its words (struct spirt_serve.keys) */
	struct spirt_serve_word word[SPIRT_SERVE_WORDS];
};

/*
 * Run one valid request.  Writes the answer (one line, no newline, NUL
 * terminated) into ans (cap bytes) and returns the exit code the same
 * cold invocation would have had (SPIRT_EX_*).
 */
typedef int spirt_serve_fn(void *arg, const struct spirt_serve_req *req,
    char *ans, size_t cap);

struct spirt_serve {
	/* in: set by the caller */
	const char *name;       /* the input, for messages ("stdin") */
	uint64_t maxstep;       /* highest step a request may name */
	int workers;            /* 1: a request may name a worker */
	uint32_t maxworker;     /* highest worker (workers only) */
	uint32_t worker0;       /* the worker of a request that names none */
	/* the keys of the words a request may carry after the step (and
	 * its worker), NULL terminated; NULL: none */
	const char *const *keys;
	spirt_serve_fn *run;
	void *arg;              /* for run */
	/* the tool's warning printer, given the refusal of a bad line */
	void (*warn)(const char *fmt, ...);
	/* out */
	uint64_t lines;         /* lines read */
	int worst;              /* the worst code answered, 0 if none */
	char msg[160];          /* the last refusal: "name:line: why" */
};

/*
 * Parse one request of n bytes (line, without its newline; it may hold
 * NULs) by sv's rules.  Returns 0 with *req set (out), or SPIRT_EINVAL
 * (or ERANGE for a number out of range) with the reason in sv->msg.
 */
SPIRT_MUST_CHECK int spirt_serve_parse(struct spirt_serve *sv,
    struct spirt_serve_req *req, const char *line, size_t n)
    SPIRT_NONNULL(1, 2, 3);

/*
 * The value of w as a decimal number (the step's grammar) in [min, max]:
 * 0 with *v set (out), SPIRT_EINVAL or ERANGE.
 */
SPIRT_MUST_CHECK int spirt_serve_word_u64(const struct spirt_serve_word *w,
    uint64_t min, uint64_t max, uint64_t *v) SPIRT_NONNULL(1, 4);

/*
 * Serve requests from in until its end (or until spirt_serve_stop()): one
 * answer line each on out, flushed at once; a bad line gets "error=64",
 * sv->warn(sv->msg) and nothing run.  sv->worst is the worst code
 * answered.  Returns 0 at the end of input, else the errno of a failed
 * read or write (the loop then stops).
 */
SPIRT_MUST_CHECK int spirt_serve_loop(struct spirt_serve *sv, FILE *in,
    FILE *out) SPIRT_NONNULL(1, 2, 3);

/*
 * Set up a tool's warm loop.  Freed memory stays with the process (glibc's
 * mmap and trim thresholds raised), since every invocation allocates the
 * same large blocks again.  No signal handler here: the tool's layer
 * (serve_setup(), cmd/tool.h) makes SIGINT and SIGTERM call
 * spirt_serve_stop() instead of killing the process, without SA_RESTART,
 * so the invocation under way finishes (committed and acknowledged), a
 * wait for the next line returns at once, and spirt_serve_loop() then
 * ends.
 */
void spirt_serve_init(void);
/* Ask the loops to end: async-signal-safe (it sets a sig_atomic_t). */
void spirt_serve_stop(void);
/* 1 once spirt_serve_stop() was called. */
int spirt_serve_stopped(void);

#endif
