/* fuzz_parse.c - the option and variable parsers (lib/parse.c) and the
 * peers file (spirt_peers_parse, lib/exchange.h; lib/xpeer.c) */
#include <ctype.h>
#include <errno.h>
#include <math.h>

#include "exchange.h"
#include "fuzz.h"
#include "parse.h"

/*
 * The first byte picks the parser (bits 0-2: u64, size, i64, double,
 * duration, peers file) and its range (bits 3-4); the rest is the text
 * (a C string, as argv and the environment give: up to its first NUL).
 * An independent reading decides what must be accepted:
 *
 *   u64, size: digits only (size: then k, K, M, G or T, then B or iB),
 *      in range; no sign, no blank, nothing after;
 *   i64, double, duration: strtoll's and strtod's numbers, then nothing
 *      (duration: ms, s, m or h), in range, never NaN;
 *   the peers file: lines of "id url" or "id url spare" (blanks
 *      between, around), '#' lines and blank lines skipped, a line of ours skipped, at most
 *      1023 bytes a line, each id valid and once, urls under 512 bytes.
 */
struct range {
	uint64_t min, max;
};

static const struct range uranges[4] = {
	{ 0, UINT64_MAX }, { 1, 1000 }, { 0, UINT32_MAX }, { 5, 5 },
};

/* digits [s, e) as a number; 0 if none or over 2^64 - 1 */
static int
digits(const char *s, const char *e, unsigned __int128 *v)
{
	*v = 0;
	if (s == e)
		return 0;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		*v = *v * 10 + (unsigned)(*s - '0');
		if (*v > UINT64_MAX)
			*v = (unsigned __int128)UINT64_MAX + 1;
	}
	return 1;
}

static void
u64(const char *s, unsigned sel, int size)
{
	const struct range *r = &uranges[sel & 3];
	const char *e = s + strlen(s), *d = s;
	unsigned __int128 v;
	unsigned shift = 0;
	uint64_t out = 0;
	int rc, want;

	while (d < e && *d >= '0' && *d <= '9')
		d++;
	if (size && d < e) {
		switch (*d) {
		case 'k': case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		default: shift = 99; break;
		}
		if (shift != 99 && (d[1] == '\0' || !strcmp(d + 1, "B") ||
		    !strcmp(d + 1, "iB")))
			e = d;
	}
	if (!digits(s, e, &v) || d != e || shift == 99)
		want = SPIRT_EINVAL;
	else if (shift && v > (UINT64_MAX >> shift))
		want = ERANGE;
	else if ((v << shift) > UINT64_MAX || (uint64_t)(v << shift) <
	    r->min || (uint64_t)(v << shift) > r->max)
		want = ERANGE;
	else
		want = 0;
	rc = size ? spirt_parse_size(&out, s, r->min, r->max) :
	    spirt_parse_u64(&out, s, r->min, r->max);
	if (rc != want)
		fprintf(stderr, "\"%s\": got %d, want %d\n", s, rc, want);
	FUZZ_ASSERT(rc == want);
	if (rc == 0)
		FUZZ_ASSERT(out == (uint64_t)(v << shift));
}

static void
i64(const char *s)
{
	int64_t v;
	char back[32];

	if (spirt_parse_i64(&v, s, -1000000, INT64_MAX) != 0)
		return;
	FUZZ_ASSERT(v >= -1000000);
	snprintf(back, sizeof back, "%lld", (long long)v);
	FUZZ_ASSERT(spirt_parse_i64(&v, back, -1000000, INT64_MAX) == 0);
}

static void
dbl(const char *s, int dur)
{
	static const char *const units[] = { "ms", "s", "m", "h" };
	double v, w, mul = 1;
	char *end;
	int rc;

	rc = dur ? spirt_parse_duration(&v, s, 0.001, 86400) :
	    spirt_parse_double(&v, s, -1e9, 1e9);
	errno = 0;
	w = strtod(s, &end);
	if (dur && end != s && *end) {
		for (size_t i = 0; i < 4; i++)
			if (!strcmp(end, units[i])) {
				mul = i == 0 ? 1e-3 : i == 1 ? 1 : i == 2 ? 60 :
				    3600;
				end += strlen(end);
			}
	}
	if (end == s || *end || isnan(w) || (dur && isinf(w))) {
		FUZZ_ASSERT(rc == SPIRT_EINVAL);
		return;
	}
	if (rc == 0)
		FUZZ_ASSERT(v == w * mul && v >= (dur ? 0.001 : -1e9) &&
		    v <= (dur ? 86400 : 1e9));
	else
		FUZZ_ASSERT(rc == ERANGE);
}

static int
blank(char c)
{
	return isspace((unsigned char)c);
}

/* the reference reading of a peers file: 0 or the line at fault */
static size_t
refpeers(const char *t, size_t n, size_t *count)
{
	char ids[SPIRT_DIGEST_MAXPEERS][SPIRT_ID_MAX + 1];
	size_t ln = 0, i = 0;

	*count = 0;
	while (i < n) {
		const char *l = t + i, *e = memchr(l, '\n', n - i), *p, *q;
		char id[64], tok[4][1024];
		size_t len, k = 0;

		len = e ? (size_t)(e - l) : n - i;
		i += len + 1;
		ln++;
		for (p = l; p < l + len && blank(*p); p++)
			;
		if (p == l + len || *p == '#')
			continue;
		if (len > 1023)
			return ln;
		for (; p < l + len && k < 4; ) {
			while (p < l + len && blank(*p))
				p++;
			if (p == l + len)
				break;
			for (q = p; q < l + len && !blank(*q); q++)
				;
			memcpy(tok[k], p, (size_t)(q - p));
			tok[k++][q - p] = '\0';
			p = q;
		}
		if ((k != 2 && (k != 3 || strcmp(tok[2], "spare"))) ||
		    strlen(tok[0]) >= sizeof id ||
		    !spirt_id_valid(tok[0]) || strlen(tok[1]) >= 512)
			return ln;
		if (!strcmp(tok[0], "p1"))
			continue;
		for (size_t j = 0; j < *count; j++)
			if (!strcmp(ids[j], tok[0]))
				return ln;
		if (*count == SPIRT_DIGEST_MAXPEERS)
			return ln;
		snprintf(ids[(*count)++], sizeof ids[0], "%s", tok[0]);
	}
	return 0;
}

static void
peers(const uint8_t *d, size_t n)
{
	struct spirt_exchange x;
	size_t line = 0, want, count;
	int rc;

	if (memchr(d, '\0', n))         /* a text file */
		return;
	spirt_exchange_init(&x);
	x.self = "p1";
	rc = spirt_peers_parse(&x, (const char *)d, n, &spirt_xnet_store,
	    &line);
	want = refpeers((const char *)d, n, &count);
	if ((rc != 0) != (want != 0) || (rc && line != want))
		fprintf(stderr, "peers: got %d at line %zu, want line %zu\n",
		    rc, line, want);
	FUZZ_ASSERT((rc != 0) == (want != 0));
	if (rc) {
		FUZZ_ASSERT(rc == SPIRT_EDATA && line == want);
	} else {
		FUZZ_ASSERT(x.n == count);
		for (size_t i = 0; i < x.n; i++)
			FUZZ_ASSERT(spirt_id_valid(x.peers[i].id) &&
			    strcmp(x.peers[i].id, "p1") != 0 &&
			    x.peers[i].url[0] != '\0');
	}
	spirt_exchange_free(&x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s;
	unsigned mode;

	if (n == 0)
		return 0;
	mode = d[0];
	d++;
	n--;
	/* bits 0-2 the parser, 3-4 the range (u64 and size) */
	if ((mode & 7) % 6 == 5) {
		peers(d, n);
		return 0;
	}
	FUZZ_ASSERT((s = malloc(n + 1)) != NULL);
	memcpy(s, d, n);
	s[n] = '\0';
	switch ((mode & 7) % 6) {
	case 0: u64(s, mode >> 3, 0); break;
	case 1: u64(s, mode >> 3, 1); break;
	case 2: i64(s); break;
	case 3: dbl(s, 0); break;
	default: dbl(s, 1); break;
	}
	free(s);
	return 0;
}
