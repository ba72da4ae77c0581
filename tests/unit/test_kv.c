/* test_kv.c - the text records: the writer's checks, the strict reader */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kv.h"

static const char fixed_want[] = "VERSION=1\nTYPE=spirt-test\nA_1=x y\n"
    "step=42\nHEX=00ff10ab\nempty=\nEND\n";

/* fixed_want's record into buf (cap bytes): the writer's code */
static int
fixed(char *buf, size_t cap, size_t *n)
{
	static const unsigned char b[] = { 0x00, 0xff, 0x10, 0xab };
	struct spirt_kvw w;
	int rc;

	spirt_kvw_init(&w, buf, cap, "spirt-test");
	spirt_kvw_put(&w, "A_1", "x y");
	spirt_kvw_putf(&w, "step", "%d", 42);
	spirt_kvw_hex(&w, "HEX", b, sizeof b);
	spirt_kvw_put(&w, "empty", "");
	rc = spirt_kvw_end(&w, n);
	CHECK(w.n < cap);
	return rc;
}

/* a record written into a fixed buffer, its bytes exactly */
static void
write_fixed(void)
{
	char buf[128];
	size_t n;

	CHECK_RC(fixed(buf, sizeof buf, &n));
	CHECK(n == sizeof fixed_want - 1 && memcmp(buf, fixed_want, n) == 0);
	CHECK(buf[n] == '\0');
	/* exactly the room: the record and its NUL */
	CHECK_RC(fixed(buf, sizeof fixed_want, &n));
	CHECK(n == sizeof fixed_want - 1 && memcmp(buf, fixed_want, n) == 0);
	/* one byte less: ENOSPC, whichever line meets the end */
	for (size_t cap = 1; cap < sizeof fixed_want; cap++)
		CHECK_EQ_RC(fixed(buf, cap, &n), ENOSPC);
}

/* every byte value in hex, as "%02x" writes it */
static void
write_hex(void)
{
	unsigned char b[256];
	char want[2 * 256 + 1], buf[1024];
	struct spirt_kvw w;
	size_t n;

	for (int i = 0; i < 256; i++) {
		b[i] = (unsigned char)i;
		snprintf(want + 2 * i, 3, "%02x", i);
	}
	spirt_kvw_init(&w, buf, sizeof buf, "t");
	spirt_kvw_hex(&w, "H", b, sizeof b);
	CHECK_RC(spirt_kvw_end(&w, &n));
	CHECK(n == 17 + 2 + 512 + 1 + 4);
	CHECK(memcmp(buf + 17 + 2, want, 512) == 0);
}

/* what the writer refuses: the first error stays */
static void
write_refused(void)
{
	static const char *const bad[] = { "", "a-b", "A=B", "a b", "\xc3\xa9",
	    "A\n" };
	struct spirt_kvw w;
	char buf[256];
	size_t n;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		spirt_kvw_init(&w, buf, sizeof buf, "t");
		spirt_kvw_put(&w, bad[i], "v");
		CHECK_EQ_RC(spirt_kvw_end(&w, &n), SPIRT_EINVAL);
	}
	spirt_kvw_init(&w, buf, sizeof buf, "t");
	spirt_kvw_put(&w, "A", "1\n2");
	CHECK_EQ_RC(spirt_kvw_end(&w, &n), SPIRT_EINVAL);
	spirt_kvw_init(&w, buf, sizeof buf, "t");
	spirt_kvw_putf(&w, "A", "%s", "1\nEND");
	CHECK_EQ_RC(spirt_kvw_end(&w, &n), SPIRT_EINVAL);
	spirt_kvw_init(&w, buf, sizeof buf, "t\nX=1");
	CHECK_EQ_RC(spirt_kvw_end(&w, &n), SPIRT_EINVAL);
	/* after an error nothing more is written */
	spirt_kvw_init(&w, buf, sizeof buf, "t");
	spirt_kvw_put(&w, "A", "1\n2");
	n = w.n;
	spirt_kvw_put(&w, "B", "2");
	CHECK(w.n == n && w.rc == SPIRT_EINVAL);
	spirt_kvw_init(&w, buf, 8, "t");
	spirt_kvw_put(&w, "B", "2\n");
	CHECK(w.rc == ENOSPC);
}

/* a buffer of its own grows; the bytes are those of a fixed one */
static void
write_grown(void)
{
	struct spirt_kvw w, f;
	char *fixed = malloc(1 << 16);
	size_t n, fn;

	CHECK(fixed != NULL);
	if (fixed == NULL)
		return;
	spirt_kvw_init(&w, NULL, 0, "spirt-round");
	spirt_kvw_init(&f, fixed, 1 << 16, "spirt-round");
	for (int i = 0; i < 500; i++) {
		spirt_kvw_putf(&w, "peer", "p%d used", i);
		spirt_kvw_putf(&f, "peer", "p%d used", i);
	}
	CHECK_RC(spirt_kvw_end(&w, &n));
	CHECK_RC(spirt_kvw_end(&f, &fn));
	CHECK(n == fn && n > 4096 && memcmp(w.buf, fixed, n) == 0);
	free(w.buf);
	free(fixed);
}

static int
open_s(struct spirt_kvr *r, const char *text, const char *const *multi,
    unsigned flags)
{
	return spirt_kvr_open(r, text, strlen(text), "t", multi, flags);
}

/* rc of reading all of text's lines (with r->line where it stops) */
static int
read_all(struct spirt_kvr *r, const char *text, const char *const *multi,
    unsigned flags)
{
	int rc;

	if ((rc = open_s(r, text, multi, flags)))
		return rc;
	while ((rc = spirt_kvr_next(r)) == 0)
		;
	return rc == SPIRT_EOF ? 0 : rc;
}

static void
read_ok(void)
{
	static const char text[] = "VERSION=1\nTYPE=t\nA=1\nb_2=x=y\n"
	    "E=\nEND\n";
	struct spirt_kvr r;
	char v[8];

	CHECK_RC(open_s(&r, text, NULL, 0));
	CHECK_RC(spirt_kvr_want(&r, "A"));
	CHECK(r.vlen == 1 && r.val[0] == '1' && r.line == 3);
	CHECK_RC(spirt_kvr_next(&r));
	CHECK(spirt_kvr_is(&r, "b_2") && !spirt_kvr_is(&r, "b"));
	CHECK_RC(spirt_kvr_str(&r, v, sizeof v));
	CHECK(strcmp(v, "x=y") == 0);
	CHECK_EQ_RC(spirt_kvr_str(&r, v, 3), SPIRT_EDATA);
	CHECK_RC(spirt_kvr_want(&r, "E"));
	CHECK(r.vlen == 0);
	CHECK_RC(spirt_kvr_end(&r));
	CHECK(r.line == 6);
	/* the written is read */
	CHECK_RC(read_all(&r, text, NULL, 0));
}

static void
read_head(void)
{
	struct spirt_kvr r;

	CHECK_EQ_RC(open_s(&r, "VERSION=2\nTYPE=t\nEND\n", NULL, 0),
	    SPIRT_EVERSION);
	CHECK_EQ_RC(open_s(&r, "VERSION=01\nTYPE=t\nEND\n", NULL, 0),
	    SPIRT_EVERSION);
	CHECK_EQ_RC(open_s(&r, "VERSION=x\nTYPE=t\nEND\n", NULL, 0),
	    SPIRT_EDATA);
	CHECK_EQ_RC(open_s(&r, "VERSION=\nTYPE=t\nEND\n", NULL, 0),
	    SPIRT_EDATA);
	CHECK_EQ_RC(open_s(&r, "TYPE=t\nVERSION=1\nEND\n", NULL, 0),
	    SPIRT_EDATA);
	CHECK(r.line == 1);
	CHECK_EQ_RC(open_s(&r, "VERSION=1\nTYPE=u\nEND\n", NULL, 0),
	    SPIRT_EDATA);
	CHECK(r.line == 2);
	CHECK_EQ_RC(open_s(&r, "VERSION=1\nTYPE=tt\nEND\n", NULL, 0),
	    SPIRT_EDATA);
	CHECK_EQ_RC(open_s(&r, "VERSION=1\n", NULL, 0), SPIRT_EDATA);
	CHECK_EQ_RC(open_s(&r, "", NULL, 0), SPIRT_EDATA);
	CHECK_RC(open_s(&r, "VERSION=1\nTYPE=t\nEND\n", NULL, 0));
	CHECK_EQ_RC(spirt_kvr_next(&r), SPIRT_EOF);
}

static void
read_lines(void)
{
	static const char *const bad[] = {
		"VERSION=1\nTYPE=t\nA\nEND\n",          /* no = */
		"VERSION=1\nTYPE=t\n=1\nEND\n",         /* no name */
		"VERSION=1\nTYPE=t\na b=1\nEND\n",      /* not a name */
		"VERSION=1\nTYPE=t\na-b=1\nEND\n",
		"VERSION=1\nTYPE=t\n\nEND\n",           /* empty */
		"VERSION=1\nTYPE=t\nA=1\nA=2\nEND\n",   /* twice */
		"VERSION=1\nTYPE=t\nA=1\n",             /* no END */
		"VERSION=1\nTYPE=t\nA=1\nEND",          /* END unended */
		"VERSION=1\nTYPE=t\nEND\nA=1\n",        /* after END */
		"VERSION=1\nTYPE=t\nEND\n\n",
		"VERSION=1\nTYPE=t\n#note\nEND\n",      /* no notes */
		"VERSION=1\nTYPE=t\nA=1\r\nEND\r\n",
	};
	struct spirt_kvr r;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_EQ_RC(read_all(&r, bad[i], NULL, 0), SPIRT_EDATA);
	/* where: the line after END */
	CHECK_EQ_RC(read_all(&r, bad[8], NULL, 0), SPIRT_EDATA);
	CHECK(r.line == 4);
	CHECK_EQ_RC(read_all(&r, bad[5], NULL, 0), SPIRT_EDATA);
	CHECK(r.line == 4);
	CHECK_EQ_RC(read_all(&r, bad[6], NULL, 0), SPIRT_EDATA);
	CHECK(r.line == 4);
	/* want and end */
	CHECK_RC(open_s(&r, "VERSION=1\nTYPE=t\nA=1\nEND\n", NULL, 0));
	CHECK_EQ_RC(spirt_kvr_want(&r, "B"), SPIRT_EDATA);
	CHECK_RC(open_s(&r, "VERSION=1\nTYPE=t\nA=1\nEND\n", NULL, 0));
	CHECK_EQ_RC(spirt_kvr_end(&r), SPIRT_EDATA);
	CHECK_RC(open_s(&r, "VERSION=1\nTYPE=t\nEND\n", NULL, 0));
	CHECK_EQ_RC(spirt_kvr_want(&r, "A"), SPIRT_EDATA);
}

static void
read_multi_notes(void)
{
	static const char *const multi[] = { "peer", NULL };
	static const char text[] = "VERSION=1\nTYPE=t\npeer=a\n# a note\n"
	    "#\npeer=b\nxms=1\nEND\n";
	struct spirt_kvr r;
	int n = 0, rc;

	CHECK_EQ_RC(read_all(&r, text, NULL, SPIRT_KV_NOTES), SPIRT_EDATA);
	CHECK_EQ_RC(read_all(&r, text, multi, 0), SPIRT_EDATA);
	CHECK(r.line == 4);
	CHECK_RC(open_s(&r, text, multi, SPIRT_KV_NOTES));
	while ((rc = spirt_kvr_next(&r)) == 0)
		n += spirt_kvr_is(&r, "peer");
	CHECK(rc == SPIRT_EOF && n == 2 && r.line == 8);
	/* a name that may repeat does not make others repeat */
	CHECK_EQ_RC(read_all(&r, "VERSION=1\nTYPE=t\npeer=a\nxms=1\nxms=2\n"
	    "END\n", multi, 0), SPIRT_EDATA);
}

/* the bounds: size, NUL, distinct names */
static void
read_bounds(void)
{
	static const char nul[] = "VERSION=1\nTYPE=t\nA=1\0\nEND\n";
	struct spirt_kvr r;
	char *big, names[SPIRT_KV_NAMES + 1][8];
	struct spirt_kvw w;
	size_t n;

	CHECK_RC(spirt_kvr_open(&r, nul, sizeof nul - 1, "t", NULL, 0));
	CHECK_EQ_RC(spirt_kvr_next(&r), SPIRT_EDATA);
	CHECK(r.line == 3);
	CHECK_EQ_RC(spirt_kvr_open(&r, "VERSION=1\0\nTYPE=t\nEND\n", 22,
	    "t", NULL, 0), SPIRT_EDATA);
	CHECK(r.line == 1);
	/* a NUL after END is still a byte after END */
	CHECK_RC(spirt_kvr_open(&r, "VERSION=1\nTYPE=t\nEND\n", 22, "t",
	    NULL, 0));
	CHECK_EQ_RC(spirt_kvr_end(&r), SPIRT_EDATA);
	for (int k = 0; k < 2; k++) {
		spirt_kvw_init(&w, NULL, 0, "t");
		for (int i = 0; i < SPIRT_KV_NAMES + k; i++) {
			snprintf(names[i], sizeof names[i], "N%d", i);
			spirt_kvw_put(&w, names[i], "v");
		}
		CHECK_RC(spirt_kvw_end(&w, &n));
		CHECK_EQ_RC(read_all(&r, w.buf, NULL, 0), k ? SPIRT_EDATA : 0);
		free(w.buf);
	}
	/* the longest record and one byte more */
	if ((big = malloc(SPIRT_KV_MAX + 2)) == NULL) {
		CHECK(big != NULL);
		return;
	}
	memcpy(big, "VERSION=1\nTYPE=t\nA=", 19);
	memset(big + 19, 'x', SPIRT_KV_MAX - 19 - 5);
	memcpy(big + SPIRT_KV_MAX - 5, "\nEND\n", 5);
	CHECK_RC(spirt_kvr_open(&r, big, SPIRT_KV_MAX, "t", NULL, 0));
	CHECK_RC(spirt_kvr_want(&r, "A"));
	CHECK_RC(spirt_kvr_end(&r));
	memcpy(big + SPIRT_KV_MAX - 5, "x\nEND\n", 6);
	CHECK_EQ_RC(spirt_kvr_open(&r, big, SPIRT_KV_MAX + 1, "t", NULL, 0),
	    SPIRT_EDATA);
	free(big);
}

int
main(void)
{
	write_fixed();
	write_hex();
	write_refused();
	write_grown();
	read_ok();
	read_head();
	read_lines();
	read_multi_notes();
	read_bounds();
	return check_failed;
}
