/* parse.h - checked number, size and duration parsing (strtonum-style) */
#ifndef SPIRT_PARSE_H
#define SPIRT_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * Each returns 0 and stores the value, or SPIRT_EINVAL (not a number, junk
 * after it) or ERANGE (outside [min, max]).  No locale: '.' is the decimal
 * separator.
 */
SPIRT_MUST_CHECK int spirt_parse_i64(int64_t *out, const char *s,
    int64_t min, int64_t max);
SPIRT_MUST_CHECK int spirt_parse_u64(uint64_t *out, const char *s,
    uint64_t min, uint64_t max);
SPIRT_MUST_CHECK int spirt_parse_double(double *out, const char *s,
    double min, double max);
/* Sizes: a number with an optional k, M, G, T suffix (powers of 1024). */
SPIRT_MUST_CHECK int spirt_parse_size(uint64_t *out, const char *s,
    uint64_t min, uint64_t max);
/*
 * A name's index in a table of n names whose entry 0 is unused (enums that
 * start at 1): 1..n-1, or 0 when name is not there.
 */
int spirt_parse_name(const char *name, const char *const *names, size_t n);

/* Durations in seconds: a number with an optional ms, s, m, h suffix. */
SPIRT_MUST_CHECK int spirt_parse_duration(double *out, const char *s,
    double min, double max);

#endif
