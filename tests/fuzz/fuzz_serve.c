/* fuzz_serve.c - the warm protocol's line parser and loop (lib/serve.c,
 * docs/contracts.md "The warm protocol") */
#include "fuzz.h"
#include "serve.h"

/*
 * An independent reading of the grammar decides what must be accepted:
 *
 *	request = step [ SP worker ] LF
 *	step, worker = "0" / %x31-39 *DIGIT, at most the tool's maximum
 *
 * Each line is given to spirt_serve_parse() and the whole input to
 * spirt_serve_loop() (as spirt-grad, -agg and -update read stdin); both
 * must agree with it, request by request.  The first byte picks the tool.
 */
struct cfg {
	uint64_t maxstep;
	int workers;
	uint32_t maxworker;
};

static const struct cfg cfgs[] = {
	{ UINT64_MAX - 2, 1, UINT32_MAX - 2 },  /* spirt-grad */
	{ UINT64_MAX - 2, 0, 0 },               /* spirt-agg */
	{ UINT64_MAX - 3, 0, 0 },               /* spirt-update */
	{ 999, 1, 7 },                          /* small bounds */
};

/* the reference: a decimal in [0, max] spanning s[0..n) exactly */
static int
refnum(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	unsigned __int128 x = 0;

	if (n == 0 || n > 20 || (s[0] == '0' && n > 1))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		x = x * 10 + (unsigned)(s[i] - '0');
	}
	if (x > max)
		return 0;
	*v = (uint64_t)x;
	return 1;
}

static int
refline(const struct cfg *c, const char *s, size_t n, uint64_t *step,
    uint64_t *worker, int *hasw)
{
	const char *sp = memchr(s, ' ', n);

	if (n >= SPIRT_SERVE_LINE)
		return 0;
	*hasw = 0;
	if (!sp)
		return refnum(s, n, c->maxstep, step);
	if (!c->workers || !refnum(s, (size_t)(sp - s), c->maxstep, step))
		return 0;
	*hasw = 1;
	return refnum(sp + 1, n - (size_t)(sp - s) - 1, c->maxworker, worker);
}

struct ctx {
	const char *in;
	size_t n, pos;          /* where the next line starts */
	const struct cfg *c;
	uint64_t runs;
};

/* the loop ran a request: it must be the reference's next accepted line */
static int
run(void *arg, const struct spirt_serve_req *req, char *ans, size_t cap)
{
	struct ctx *x = arg;
	uint64_t step, worker;
	int hasw;

	for (;;) {
		const char *s = x->in + x->pos;
		const char *nl = memchr(s, '\n', x->n - x->pos);
		size_t len;

		FUZZ_ASSERT(nl != NULL);
		len = (size_t)(nl - s);
		x->pos += len + 1;
		if (!refline(x->c, s, len, &step, &worker, &hasw))
			continue;
		FUZZ_ASSERT(req->step == step && req->has_worker == hasw);
		FUZZ_ASSERT(!hasw || req->worker == worker);
		break;
	}
	x->runs++;
	snprintf(ans, cap, "step=%llu", (unsigned long long)req->step);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	const struct cfg *c;
	struct spirt_serve sv;
	struct spirt_serve_req req;
	struct ctx x;
	uint64_t step, worker, lines = 0, good = 0, outlines = 0;
	const char *s, *end;
	char *out = NULL;
	size_t outn = 0;
	FILE *in, *o;
	int hasw, rc;

	if (n == 0)
		return 0;
	c = &cfgs[d[0] & 3];
	d++;
	n--;
	memset(&sv, 0, sizeof sv);
	sv.name = "fuzz";
	sv.maxstep = c->maxstep;
	sv.workers = c->workers;
	sv.maxworker = c->maxworker;
	sv.worker0 = 3;
	sv.run = run;
	sv.arg = &x;

	/* line by line */
	for (s = (const char *)d, end = s + n; s < end; ) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
		int ok = refline(c, s, len, &step, &worker, &hasw);

		lines++;
		sv.lines = lines;
		rc = spirt_serve_parse(&sv, &req, s, len);
		FUZZ_ASSERT((rc == 0) == ok);
		if (ok) {
			FUZZ_ASSERT(req.step == step && req.has_worker == hasw);
			FUZZ_ASSERT(req.worker == (hasw ? worker : 3));
			FUZZ_ASSERT(req.line == lines);
			good += nl != NULL;
		} else {
			FUZZ_ASSERT(sv.msg[0] != '\0' && strlen(sv.msg) <
			    sizeof sv.msg);
		}
		if (!nl)
			break;
		s = nl + 1;
	}

	/* the loop over the same bytes */
	memset(&x, 0, sizeof x);
	x.in = (const char *)d;
	x.n = n;
	x.c = c;
	sv.lines = 0;
	if (n == 0)
		return 0;       /* fmemopen() takes no empty buffer */
	FUZZ_ASSERT((in = fmemopen((void *)(uintptr_t)d, n, "r")) != NULL);
	FUZZ_ASSERT((o = open_memstream(&out, &outn)) != NULL);
	FUZZ_ASSERT(spirt_serve_loop(&sv, in, o) == 0);
	fclose(in);
	fclose(o);
	FUZZ_ASSERT(x.runs == good);
	FUZZ_ASSERT(sv.lines == lines);
	FUZZ_ASSERT(sv.worst == (good < lines ? SPIRT_EX_USAGE : 0));
	for (size_t i = 0; i < outn; i++) {
		FUZZ_ASSERT(out[i] != '\0');
		outlines += out[i] == '\n';
	}
	/* one answer line per request line, each shorter than 256 bytes */
	FUZZ_ASSERT(outlines == lines && (outn == 0 || out[outn - 1] == '\n'));
	free(out);
	return 0;
}
