/* fuzz_beat.c - beat and health records (lib/beat.c, spirt-beat(1),
 * spirt-store(5)): what a member puts as beat/<id> through its peer */
#include <ctype.h>
#include <errno.h>

#include "beat.h"
#include "fuzz.h"
#include "tensor.h"

/*
 * An input is a mode byte, then text (or, with bit 1, a whole record):
 *
 *   bit 0: health/<member> text, else beat/<member> text
 *   bit 1: the rest is a stored value (a u8 record, checksums bypassed
 *          by the fuzz build) for spirt_beat_decode as member "p1"
 *
 * Beyond "no crash": a record parsed formats again, and that text parses
 * to the same fields and is the text taken, but for the case of its hex
 * digits (the parser is strict: each field once, in order);
 * its role and status are ones the format names; a decoded beat is the
 * member's it was asked for; a health's state is one of five.
 */

/* the text it took is the text it writes, but for the case of letters
 * (hex digits are read in either case, written in lower) */
static int
same_text(const char *a, size_t na, const uint8_t *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (tolower((unsigned char)a[i]) != tolower(b[i]))
			return 0;
	return 1;
}

static void
beat_eq(const struct spirt_beat *a, const struct spirt_beat *b)
{
	FUZZ_ASSERT(strcmp(a->member, b->member) == 0);
	FUZZ_ASSERT(a->role == b->role && a->status == b->status);
	FUZZ_ASSERT(a->step == b->step && a->seq == b->seq);
	FUZZ_ASSERT(memcmp(a->boot, b->boot, SPIRT_BEAT_BOOT) == 0);
	FUZZ_ASSERT(a->interval_ms == b->interval_ms);
}

static void
beat_sane(const struct spirt_beat *b)
{
	FUZZ_ASSERT(b->role == SPIRT_BEAT_PEER || b->role ==
	    SPIRT_BEAT_FUNCTION);
	FUZZ_ASSERT(b->status >= SPIRT_BEAT_LIVE && b->status <=
	    SPIRT_BEAT_STOP);
	FUZZ_ASSERT(memchr(b->member, '\0', sizeof b->member) != NULL);
	FUZZ_ASSERT(b->member[0] != '\0');
}

static void
beat(const uint8_t *d, size_t n)
{
	struct spirt_beat b, c;
	char buf[1024];
	size_t len;
	int rc;

	rc = spirt_beat_parse(&b, d, n);
	FUZZ_ASSERT(rc == 0 || rc == SPIRT_EVERSION || rc == SPIRT_EDATA);
	if (rc)
		return;
	beat_sane(&b);
	FUZZ_ASSERT(spirt_beat_format(buf, sizeof buf, &len, &b) == 0);
	FUZZ_ASSERT(len < sizeof buf);
	FUZZ_ASSERT(spirt_beat_parse(&c, buf, len) == 0);
	beat_eq(&b, &c);
	FUZZ_ASSERT(same_text(buf, len, d, n));
}

static void
health(const uint8_t *d, size_t n)
{
	static const unsigned char host[SPIRT_BEAT_BOOT] = { 1, 2, 3 };
	struct spirt_health h, g;
	char buf[2048];
	double age;
	size_t len;
	int rc, st;

	rc = spirt_health_parse(&h, d, n);
	FUZZ_ASSERT(rc == 0 || rc == SPIRT_EVERSION || rc == SPIRT_EDATA);
	if (rc)
		return;
	beat_sane(&h.b);
	FUZZ_ASSERT(spirt_health_format(buf, sizeof buf, &len, &h) == 0);
	FUZZ_ASSERT(spirt_health_parse(&g, buf, len) == 0);
	beat_eq(&h.b, &g.b);
	FUZZ_ASSERT(memcmp(h.host, g.host, SPIRT_BEAT_BOOT) == 0);
	FUZZ_ASSERT(h.first_ns == g.first_ns && h.seen_ns == g.seen_ns);
	FUZZ_ASSERT(h.suspect_ms == g.suspect_ms && h.dead_ms == g.dead_ms);
	FUZZ_ASSERT(h.dead_run == g.dead_run);
	FUZZ_ASSERT(same_text(buf, len, d, n));
	for (int i = 0; i < 2; i++) {
		st = spirt_health_state(&h, i ? h.host : host, h.seen_ns +
		    (uint64_t)h.dead_ms * 1000000u, NULL, &age);
		FUZZ_ASSERT(st >= SPIRT_H_UNKNOWN && st <= SPIRT_H_JOINING);
		if (!i)
			FUZZ_ASSERT(st == SPIRT_H_UNKNOWN ||
			    memcmp(h.host, host, SPIRT_BEAT_BOOT) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	unsigned mode;

	if (n == 0)
		return 0;
	mode = d[0];
	d++, n--;
	if (mode & 2) {
		struct spirt_beat b;
		int rc = spirt_beat_decode(&b, "p1", d, n);

		if (rc == 0) {
			beat_sane(&b);
			FUZZ_ASSERT(strcmp(b.member, "p1") == 0);
		}
		return 0;
	}
	if (mode & 1)
		health(d, n);
	else
		beat(d, n);
	return 0;
}
