/* serve.c - warm mode: one invocation per request line on a stream */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"
#include "serve.h"

static volatile sig_atomic_t stopped;

void
spirt_serve_init(void)
{
	/*
	 * Keep freed memory.  Each step allocates and frees the same large
	 * blocks (LMDB's dirty pages for a record of a megabyte, which it
	 * malloc()s per transaction): by default glibc maps the first ones
	 * afresh each time and returns freed heap tops to the kernel, and
	 * every step then page-faults its way through fresh memory.  Blocks
	 * up to 32 MiB (glibc's maximum threshold) now come from the heap, and
	 * the heap is never trimmed: a warm process keeps its peak size, as
	 * it would anyway at the next step.  bench/train measured 15% per
	 * step (docs/performance.md).
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	spirt_bigpages = 0;     /* plain heap blocks, reused (mem.h) */
}

void
spirt_serve_stop(void)
{
	stopped = 1;
}

int
spirt_serve_stopped(void)
{
	return stopped != 0;
}

/* ---- requests ---- */

/* msg = "name:line: what", the line shown with its odd bytes escaped */
static int
refuse(struct spirt_serve *sv, int rc, const char *line, size_t n,
    const char *what)
{
	char shown[48];
	size_t i, k = 0;
	unsigned char c;

	for (i = 0; i < n && k + 8 < sizeof shown; i++) {
		c = (unsigned char)line[i];
		if (c >= ' ' && c < 0x7f && c != '"' && c != '\\')
			shown[k++] = (char)c;
		else
			k += (size_t)snprintf(shown + k, sizeof shown - k,
			    "\\x%02x", c);
	}
	shown[k] = '\0';
	snprintf(sv->msg, sizeof sv->msg, "%s:%llu: \"%s%s\": %s",
	    sv->name ? sv->name : "stdin", (unsigned long long)sv->lines,
	    shown, i < n ? "..." : "", what);
	return rc;
}

/*
 * A decimal number at *p in [0, max]: "0" or a non-zero digit then
 * digits.  Returns 0 and moves *p past it, SPIRT_EINVAL (no number, a
 * leading zero) or ERANGE (above max).
 */
static int
number(uint64_t *v, const char **p, const char *end, uint64_t max)
{
	const char *s = *p;
	uint64_t x = 0;
	unsigned d;

	if (s == end || *s < '0' || *s > '9')
		return SPIRT_EINVAL;
	if (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9')
		return SPIRT_EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		d = (unsigned)(*s - '0');
		if (d > max || x > (max - d) / 10)
			return ERANGE;
		x = x * 10 + d;
	}
	*v = x;
	*p = s;
	return 0;
}

int
spirt_serve_word_u64(const struct spirt_serve_word *w, uint64_t min,
    uint64_t max, uint64_t *v)
{
	const char *p = w->val;
	int rc;

	if ((rc = number(v, &p, w->val + w->nval, max)))
		return rc;
	if (p != w->val + w->nval)
		return SPIRT_EINVAL;
	return *v < min ? ERANGE : 0;
}

static int
namechar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Whether p starts a word: a lowercase key and its "=". */
static int
isword(const char *p, const char *end)
{
	const char *k = p;

	while (p < end && *p >= 'a' && *p <= 'z')
		p++;
	return p > k && p < end && *p == '=';
}

/* The words of a request from p (after the step and its space) on. */
static int
words(struct spirt_serve *sv, struct spirt_serve_req *req, const char *line,
    size_t n, const char *p)
{
	const char *end = line + n, *const *k;
	struct spirt_serve_word *w;
	int i;

	for (;;) {
		if (req->nwords == SPIRT_SERVE_WORDS)
			return refuse(sv, SPIRT_EINVAL, line, n, "too many "
			    "words after the step");
		w = &req->word[req->nwords];
		for (w->key = p; p < end && *p >= 'a' && *p <= 'z'; p++)
			;
		w->nkey = (size_t)(p - w->key);
		if (w->nkey == 0 || p == end || *p != '=')
			return refuse(sv, SPIRT_EINVAL, line, n, "expected "
			    "key=value after the step");
		for (k = sv->keys; *k; k++)
			if (strlen(*k) == w->nkey &&
			    memcmp(*k, w->key, w->nkey) == 0)
				break;
		if (*k == NULL)
			return refuse(sv, SPIRT_EINVAL, line, n, "unknown key");
		for (i = 0; i < req->nwords; i++)
			if (req->word[i].nkey == w->nkey &&
			    memcmp(req->word[i].key, w->key, w->nkey) == 0)
				return refuse(sv, SPIRT_EINVAL, line, n,
				    "a key given twice");
		for (w->val = ++p; p < end && namechar(*p); p++)
			;
		if ((w->nval = (size_t)(p - w->val)) == 0)
			return refuse(sv, SPIRT_EINVAL, line, n, "empty value");
		req->nwords++;
		if (p == end)
			return 0;
		if (*p != ' ' || ++p == end)
			return refuse(sv, SPIRT_EINVAL, line, n, "junk after "
			    "a value");
	}
}

int
spirt_serve_parse(struct spirt_serve *sv, struct spirt_serve_req *req,
    const char *line, size_t n)
{
	const char *p = line, *end = line + n;
	char what[64];
	uint64_t v;
	int rc;

	sv->msg[0] = '\0';
	if (n == 0)
		return refuse(sv, SPIRT_EINVAL, line, n, "empty line, expected "
		    "a step");
	if (n >= SPIRT_SERVE_LINE)
		return refuse(sv, SPIRT_EINVAL, line, n, "line longer than 255 "
		    "bytes");
	if ((rc = number(&req->step, &p, end, sv->maxstep))) {
		snprintf(what, sizeof what, rc == ERANGE ? "step above %llu" :
		    "expected a step (a decimal number, no leading zero)",
		    (unsigned long long)sv->maxstep);
		return refuse(sv, rc, line, n, what);
	}
	req->worker = sv->worker0;
	req->has_worker = 0;
	req->line = sv->lines;
	req->nwords = 0;
	if (p == end)
		return 0;
	/* words after the step; with workers, only what reads as a word
	 * (else the refusal says what a worker's line lacks) */
	if (sv->keys && *p == ' ' && (!sv->workers || isword(p + 1, end)))
		return words(sv, req, line, n, p + 1);
	if (!sv->workers || *p != ' ')
		return refuse(sv, SPIRT_EINVAL, line, n, sv->workers ?
		    "junk after the step" : "junk after the step (a request "
		    "is one step number)");
	p++;
	if ((rc = number(&v, &p, end, sv->maxworker))) {
		snprintf(what, sizeof what, rc == ERANGE ? "worker above %lu" :
		    "expected a worker after the step", (unsigned long)
		    sv->maxworker);
		return refuse(sv, rc, line, n, what);
	}
	req->worker = (uint32_t)v;
	req->has_worker = 1;
	if (p != end && sv->keys && *p == ' ' && isword(p + 1, end))
		return words(sv, req, line, n, p + 1);
	if (p != end)
		return refuse(sv, SPIRT_EINVAL, line, n, "junk after the "
		    "worker");
	return 0;
}

/*
 * The next line of in: its first cap bytes in buf (the rest dropped),
 * its whole length in *n.  Returns 0 for a line ended by a newline,
 * SPIRT_EINVAL for a last line with no newline, SPIRT_EOF at the end of
 * input (or once stopped), else errno.
 */
static int
nextline(FILE *in, char *buf, size_t cap, size_t *n)
{
	int c;

	for (*n = 0;;) {
		errno = 0;
		if ((c = getc(in)) == '\n')
			return 0;
		if (c != EOF) {
			if (*n < cap)
				buf[*n] = (char)c;
			if (*n < SIZE_MAX)
				++*n;
			continue;
		}
		if (!ferror(in))
			return *n ? SPIRT_EINVAL : SPIRT_EOF;
		if (stopped)    /* the wait was interrupted: a clean end */
			return SPIRT_EOF;
		if (errno != EINTR)
			return errno ? errno : EIO;
		clearerr(in);   /* another signal: go on waiting */
	}
}

static int
answer(FILE *out, const char *ans)
{
	if (fputs(ans, out) == EOF || putc('\n', out) == EOF ||
	    fflush(out) == EOF)
		return errno ? errno : EIO;
	return 0;
}

int
spirt_serve_loop(struct spirt_serve *sv, FILE *in, FILE *out)
{
	struct spirt_serve_req req;
	char line[SPIRT_SERVE_LINE], ans[SPIRT_SERVE_LINE];
	size_t n;
	int rc, code;

	sv->worst = 0;
	while (!stopped) {
		rc = nextline(in, line, sizeof line, &n);
		if (rc == SPIRT_EOF)
			break;
		sv->lines++;
		if (rc == SPIRT_EINVAL)
			refuse(sv, rc, line, n < sizeof line ? n : sizeof line,
			    "no newline at the end of input");
		else if (rc)
			return rc;
		else if (n >= sizeof line)
			rc = refuse(sv, SPIRT_EINVAL, line, sizeof line,
			    "line longer than 255 bytes");
		else
			rc = spirt_serve_parse(sv, &req, line, n);
		if (rc) {
			if (sv->warn)
				sv->warn("%s", sv->msg);
			code = SPIRT_EX_USAGE;
			snprintf(ans, sizeof ans, "error=%d", code);
		} else {
			ans[0] = '\0';
			code = sv->run(sv->arg, &req, ans, sizeof ans);
		}
		if (code > sv->worst)
			sv->worst = code;
		if ((rc = answer(out, ans)))
			return rc;
	}
	return 0;
}
