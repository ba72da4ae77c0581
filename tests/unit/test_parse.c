/* test_parse.c - checked number parsing */
#include <errno.h>
#include <stdint.h>

#include "check.h"
#include "parse.h"

int
main(void)
{
	int64_t i;
	uint64_t u;
	double d;

	{
		static const char *const names[] = { NULL, "sgd", "adam" };

		CHECK(spirt_parse_name("adam", names, 3) == 2);
		CHECK(spirt_parse_name("sgd", names, 3) == 1);
		CHECK(spirt_parse_name("ada", names, 3) == 0);
		CHECK(spirt_parse_name("adam", names, 2) == 0);
	}
		CHECK_RC(spirt_parse_i64(&i, "-12", -100, 100));
	CHECK(i == -12);
	CHECK_EQ_RC(spirt_parse_i64(&i, "12x", 0, 100), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_i64(&i, "", 0, 100), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_i64(&i, "101", 0, 100), ERANGE);
	CHECK_EQ_RC(spirt_parse_i64(&i, "99999999999999999999", 0, INT64_MAX),
	    ERANGE);
	CHECK_RC(spirt_parse_u64(&u, "18446744073709551615", 0, UINT64_MAX));
	CHECK(u == UINT64_MAX);
	CHECK_EQ_RC(spirt_parse_u64(&u, "-1", 0, UINT64_MAX), SPIRT_EINVAL);
	/* no blank before the digits, of any kind (tests/fuzz/regress/parse/
	 * u64-newline: " 5" was refused, "\n\n5" and "\t5" taken) */
	CHECK_EQ_RC(spirt_parse_u64(&u, "\n\n5", 0, 10), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_u64(&u, "\t5", 0, 10), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_u64(&u, " 5", 0, 10), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_u64(&u, "+5", 0, 10), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_size(&u, "\t5k", 0, UINT64_MAX), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_size(&u, " 5k", 0, UINT64_MAX), SPIRT_EINVAL);
	CHECK_RC(spirt_parse_double(&d, "0.25", 0, 1));
	CHECK(d == 0.25);
	CHECK_RC(spirt_parse_double(&d, "1e-3", 0, 1));
	CHECK(d == 1e-3);
	CHECK_EQ_RC(spirt_parse_double(&d, "nan", 0, 1), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_double(&d, "0,5", 0, 1), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_double(&d, "2", 0, 1), ERANGE);
	CHECK_RC(spirt_parse_size(&u, "64M", 0, UINT64_MAX));
	CHECK(u == 64 << 20);
	CHECK_RC(spirt_parse_size(&u, "2GiB", 0, UINT64_MAX));
	CHECK(u == (uint64_t)2 << 30);
	CHECK_RC(spirt_parse_size(&u, "4096", 0, UINT64_MAX));
	CHECK(u == 4096);
	CHECK_EQ_RC(spirt_parse_size(&u, "4X", 0, UINT64_MAX), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_parse_size(&u, "99999999T", 0, UINT64_MAX), ERANGE);
	CHECK_RC(spirt_parse_duration(&d, "250ms", 0, 100));
	CHECK(d == 0.25);
	CHECK_RC(spirt_parse_duration(&d, "2m", 0, 1000));
	CHECK(d == 120);
	CHECK_RC(spirt_parse_duration(&d, "1.5", 0, 1000));
	CHECK(d == 1.5);
	CHECK_EQ_RC(spirt_parse_duration(&d, "3 days", 0, 1e9), SPIRT_EINVAL);
	CHECK(spirt_exit(0) == 0);
	CHECK(spirt_exit(ENOENT) == SPIRT_EX_NOINPUT);
	CHECK(spirt_exit(ENOSPC) == SPIRT_EX_IOERR);
	CHECK(spirt_exit(SPIRT_ECHECKSUM) == SPIRT_EX_DATAERR);
	CHECK(spirt_exit(SPIRT_EBUSY) == SPIRT_EX_TEMPFAIL);
	for (int rc = SPIRT_EOF; rc < SPIRT_ELAST; rc++) {
		CHECK(spirt_strerror(rc) != NULL);
		CHECK(spirt_exit(rc) >= 1 && spirt_exit(rc) < 126);
	}
	CHECK_DONE();
}
