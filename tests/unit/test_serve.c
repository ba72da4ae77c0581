/* test_serve.c - the warm protocol's request lines (serve.h) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "serve.h"

static uint64_t ran[16];
static size_t nran;

static int
run(void *arg, const struct spirt_serve_req *req, char *ans, size_t cap)
{
	(void)arg;
	if (nran < 16)
		ran[nran++] = req->step * 1000 + req->worker;
	snprintf(ans, cap, "step=%llu", (unsigned long long)req->step);
	return req->step == 9 ? SPIRT_EX_NOINPUT : 0;
}

/* serve in (n bytes) to a buffer; returns the loop's code */
static int
serve(struct spirt_serve *sv, const char *in, size_t n, char *out,
    size_t cap)
{
	FILE *fi = fmemopen((void *)in, n, "r");
	FILE *fo = fmemopen(out, cap, "w");
	int rc;

	memset(out, 0, cap);
	nran = 0;
	sv->lines = 0;
	if (fi == NULL || fo == NULL)
		return errno;
	rc = spirt_serve_loop(sv, fi, fo);
	fclose(fi);
	fclose(fo);
	return rc;
}

int
main(void)
{
	struct spirt_serve sv = { .name = "in", .maxstep = UINT64_MAX - 1,
	    .run = run };
	struct spirt_serve_req req;
	char in[1024], out[1024];
	size_t n;

#define PARSE(s) spirt_serve_parse(&sv, &req, s, sizeof s - 1)
	CHECK_RC(PARSE("0"));
	CHECK(req.step == 0 && !req.has_worker);
	CHECK_RC(PARSE("18446744073709551614"));
	CHECK(req.step == UINT64_MAX - 1);
	CHECK_EQ_RC(PARSE("18446744073709551615"), ERANGE);
	CHECK(strstr(sv.msg, "step above 18446744073709551614") != NULL);
	CHECK_EQ_RC(PARSE("184467440737095516140"), ERANGE);
	CHECK_EQ_RC(PARSE("1 2"), SPIRT_EINVAL);    /* no workers here */
	CHECK_EQ_RC(PARSE("01"), SPIRT_EINVAL);
	CHECK_EQ_RC(PARSE("1\0"), SPIRT_EINVAL);
	CHECK(strcmp(sv.msg, "in:0: \"1\\x00\": junk after the step (a "
	    "request is one step number)") == 0);
	CHECK_EQ_RC(PARSE(""), SPIRT_EINVAL);
	sv.maxstep = 100;
	CHECK_RC(PARSE("100"));
	CHECK_EQ_RC(PARSE("101"), ERANGE);
	CHECK_EQ_RC(PARSE("1000"), ERANGE);

	sv.workers = 1;
	sv.maxworker = 7;
	sv.worker0 = 3;
	CHECK_RC(PARSE("12"));
	CHECK(req.step == 12 && req.worker == 3 && !req.has_worker);
	CHECK_RC(PARSE("12 7"));
	CHECK(req.step == 12 && req.worker == 7 && req.has_worker);
	CHECK_RC(PARSE("12 0"));
	CHECK(req.worker == 0 && req.has_worker);
	CHECK_EQ_RC(PARSE("12 8"), ERANGE);
	CHECK_EQ_RC(PARSE("12 "), SPIRT_EINVAL);
	CHECK_EQ_RC(PARSE("12 1 "), SPIRT_EINVAL);
	CHECK_EQ_RC(PARSE("12 1 1"), SPIRT_EINVAL);

	/* words after the step (spirt-update's delta=, outer=, agg=) */
	{
		static const char *const keys[] = { "agg", "delta", "outer",
		    NULL };
		uint64_t v;

		sv.workers = 0;
		CHECK_EQ_RC(PARSE("12 delta=3"), SPIRT_EINVAL);  /* no keys */
		sv.keys = keys;
		CHECK_RC(PARSE("12"));
		CHECK(req.step == 12 && req.nwords == 0);
		CHECK_RC(PARSE("12 delta=10"));
		CHECK(req.nwords == 1 && req.word[0].nkey == 5 &&
		    memcmp(req.word[0].key, "delta", 5) == 0);
		CHECK_RC(spirt_serve_word_u64(&req.word[0], 0, 100, &v));
		CHECK(v == 10);
		CHECK_EQ_RC(spirt_serve_word_u64(&req.word[0], 11, 100, &v),
		    ERANGE);
		CHECK_EQ_RC(spirt_serve_word_u64(&req.word[0], 0, 9, &v),
		    ERANGE);
		CHECK_RC(PARSE("12 outer=5 agg=gagg"));
		CHECK(req.nwords == 2 && req.word[1].nval == 4 &&
		    memcmp(req.word[1].val, "gagg", 4) == 0);
		CHECK_EQ_RC(spirt_serve_word_u64(&req.word[1], 0, 100, &v),
		    SPIRT_EINVAL);
		CHECK_RC(PARSE("12 agg=x.y_z-0"));
		CHECK(req.word[0].nval == 7);
		CHECK_EQ_RC(PARSE("12 delta=010"), 0);  /* the tool checks */
		CHECK_EQ_RC(spirt_serve_word_u64(&req.word[0], 0, 100, &v),
		    SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 "), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta="), SPIRT_EINVAL);
		CHECK(strstr(sv.msg, "empty value") != NULL);
		CHECK_EQ_RC(PARSE("12 delta=1 "), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta=1  outer=2"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta=1/"), SPIRT_EINVAL);
		CHECK(strstr(sv.msg, "junk after a value") != NULL);
		CHECK_EQ_RC(PARSE("12 Delta=1"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 step=1"), SPIRT_EINVAL);
		CHECK(strstr(sv.msg, "unknown key") != NULL);
		CHECK_EQ_RC(PARSE("12 de=1"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta=1 delta=1"), SPIRT_EINVAL);
		CHECK(strstr(sv.msg, "a key given twice") != NULL);
		CHECK_EQ_RC(PARSE("12 delta=1 outer=1 agg=a agg=b"),
		    SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta=1\0"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta=1\t"), SPIRT_EINVAL);
		/* with a worker too (spirt-grad's to=slot): words after
		 * the step or after its worker */
		sv.workers = 1;
		CHECK_RC(PARSE("12 3 delta=1"));
		CHECK(req.worker == 3 && req.has_worker && req.nwords == 1);
		CHECK_RC(PARSE("12 agg=a"));
		CHECK(!req.has_worker && req.nwords == 1);
		CHECK_RC(PARSE("12 3"));
		CHECK(req.worker == 3 && req.nwords == 0);
		CHECK_EQ_RC(PARSE("12 3 4"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 3 "), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 3delta=1"), SPIRT_EINVAL);
		CHECK_EQ_RC(PARSE("12 delta=1 3"), SPIRT_EINVAL);
		/* not words: a worker's line's refusals, as without keys */
		CHECK_EQ_RC(PARSE("12 3 x"), SPIRT_EINVAL);
		CHECK(strstr(sv.msg, "junk after the worker") != NULL);
		CHECK_EQ_RC(PARSE("12 x"), SPIRT_EINVAL);
		CHECK(strstr(sv.msg, "expected a worker") != NULL);
		sv.keys = NULL;
		CHECK_EQ_RC(PARSE("12 3 delta=1"), SPIRT_EINVAL);
	}

	/* the loop: a long line is one refusal, its tail no request */
	memset(in, 'x', 300);
	memcpy(in + 299, "7\n5\n", 4);
	CHECK_RC(serve(&sv, in, 303, out, sizeof out));
	CHECK(strcmp(out, "error=64\nstep=5\n") == 0);
	CHECK(nran == 1 && ran[0] == 5003 && sv.worst == 64);
	CHECK(sv.lines == 2);
	/* exactly 255 bytes before the newline: parsed, 256: too long */
	memset(in, ' ', 300);
	in[0] = '1';
	in[255] = '\n';
	CHECK_RC(serve(&sv, in, 256, out, sizeof out));
	CHECK(strcmp(out, "error=64\n") == 0 && nran == 0);
	CHECK(strstr(sv.msg, "expected a worker") != NULL);
	in[255] = ' ';
	in[256] = '\n';
	CHECK_RC(serve(&sv, in, 257, out, sizeof out));
	CHECK(strstr(sv.msg, "line longer than 255 bytes") != NULL);
	/* answers in order; the worst code; no newline at the end */
	n = (size_t)snprintf(in, sizeof in, "1 2\n9\n\n4");
	CHECK_RC(serve(&sv, in, n, out, sizeof out));
	CHECK(strcmp(out, "step=1\nstep=9\nerror=64\nerror=64\n") == 0);
	CHECK(nran == 2 && ran[0] == 1002 && ran[1] == 9003);
	CHECK(sv.worst == SPIRT_EX_NOINPUT);
	CHECK(strcmp(sv.msg, "in:4: \"4\": no newline at the end of input")
	    == 0);
	n = (size_t)snprintf(in, sizeof in, "9\n");
	CHECK_RC(serve(&sv, in, n, out, sizeof out));
	CHECK(sv.worst == SPIRT_EX_NOINPUT);
	CHECK_RC(serve(&sv, in, 0, out, sizeof out));
	CHECK(out[0] == '\0' && sv.worst == 0);
	CHECK_DONE();
}
