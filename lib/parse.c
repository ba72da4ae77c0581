/* parse.c - checked number parsing, no locale, no atoi (ISC licence) */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int
spirt_parse_i64(int64_t *out, const char *s, int64_t min, int64_t max)
{
	char *end;
	long long v;

	if (!s || !*s)
		return SPIRT_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end)
		return SPIRT_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return ERANGE;
	*out = v;
	return 0;
}

int
spirt_parse_u64(uint64_t *out, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	/* digits only: strtoull would take a sign, and skip blanks */
	if (!s || *s < '0' || *s > '9')
		return SPIRT_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end)
		return SPIRT_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return ERANGE;
	*out = v;
	return 0;
}

int
spirt_parse_double(double *out, const char *s, double min, double max)
{
	char *end;
	double v;

	if (!s || !*s)
		return SPIRT_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || isnan(v))
		return SPIRT_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return ERANGE;
	*out = v;
	return 0;
}

int
spirt_parse_size(uint64_t *out, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || *s < '0' || *s > '9')         /* as spirt_parse_u64 */
		return SPIRT_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s)
		return SPIRT_EINVAL;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		default: return SPIRT_EINVAL;
		}
		if (end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))
			return SPIRT_EINVAL;
	}
	if (errno == ERANGE || (shift && v > (UINT64_MAX >> shift)))
		return ERANGE;
	v <<= shift;
	if (v < min || v > max)
		return ERANGE;
	*out = v;
	return 0;
}

int
spirt_parse_duration(double *out, const char *s, double min, double max)
{
	char *end;
	double v, mul = 1;

	if (!s || !*s)
		return SPIRT_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || isnan(v) || isinf(v))
		return SPIRT_EINVAL;
	if (!strcmp(end, "ms"))
		mul = 1e-3;
	else if (!strcmp(end, "s") || !*end)
		mul = 1;
	else if (!strcmp(end, "m"))
		mul = 60;
	else if (!strcmp(end, "h"))
		mul = 3600;
	else
		return SPIRT_EINVAL;
	v *= mul;
	if (errno == ERANGE || v < min || v > max)
		return ERANGE;
	*out = v;
	return 0;
}

int
spirt_parse_name(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (names[i] && strcmp(name, names[i]) == 0)
			return (int)i;
	return 0;
}
