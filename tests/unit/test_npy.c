/* test_npy.c - .npy headers: write, parse back, reject malformed */
#include <string.h>

#include "check.h"
#include "npy.h"

static void
roundtrip(int dtype, unsigned rank, const uint64_t *dims)
{
	struct spirt_tensor t, u;
	char buf[4096];
	size_t hlen;
	const void *data;

	CHECK_RC(spirt_tensor_init(&t, dtype, rank, dims));
	CHECK_RC(spirt_npy_header(buf, sizeof buf, &hlen, &t));
	CHECK(hlen % 64 == 0 && buf[hlen - 1] == '\n');
	CHECK(t.nbytes < sizeof buf - hlen);
	memset(buf + hlen, 7, t.nbytes);
	CHECK_RC(spirt_npy_parse(&u, &data, buf, hlen + t.nbytes));
	CHECK(u.dtype == dtype && u.rank == rank);
	for (unsigned i = 0; i < rank; i++)
		CHECK(u.dims[i] == dims[i]);
	CHECK(data == buf + hlen);
	CHECK_EQ_RC(spirt_npy_parse(&u, &data, buf, hlen + t.nbytes - 1),
	    t.nbytes ? SPIRT_ETRUNC : SPIRT_ENPY);
}

static int
parse(const char *dict, size_t extra)
{
	char buf[512];
	size_t n = strlen(dict), hlen = n;
	struct spirt_tensor t;
	const void *data;

	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	memcpy(buf + 10, dict, n);
	memset(buf + 10 + n, 0, extra);
	return spirt_npy_parse(&t, &data, buf, 10 + n + extra);
}

int
main(void)
{
	uint64_t d3[3] = { 2, 3, 4 }, d1[1] = { 5 };

	roundtrip(SPIRT_F32, 3, d3);
	roundtrip(SPIRT_F64, 1, d1);
	roundtrip(SPIRT_I32, 1, d1);
	roundtrip(SPIRT_I64, 3, d3);
	roundtrip(SPIRT_U8, 0, d1);
	CHECK_RC(parse("{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (2,), }\n", 8));
	CHECK_RC(parse("{\"shape\": (1, 2), \"fortran_order\": False, "
	    "\"descr\": \"<f8\"}", 16));
	CHECK_EQ_RC(parse("{'descr': '>f4', 'fortran_order': False, "
	    "'shape': (2,), }", 8), SPIRT_EDTYPE);
	CHECK_EQ_RC(parse("{'descr': '<c8', 'fortran_order': False, "
	    "'shape': (2,), }", 16), SPIRT_EDTYPE);
	CHECK_EQ_RC(parse("{'descr': '<f4', 'fortran_order': True, "
	    "'shape': (2, 2), }", 16), SPIRT_ENPY);
	CHECK_EQ_RC(parse("{'descr': '<f4', 'shape': (2,), }", 8),
	    SPIRT_ENPY);
	CHECK_EQ_RC(parse("{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (2, x), }", 8), SPIRT_ENPY);
	CHECK_EQ_RC(parse("'descr': '<f4', 'fortran_order': False", 8),
	    SPIRT_ENPY);
	CHECK_EQ_RC(parse("{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (2,), }", 12), SPIRT_ENPY);
	CHECK_DONE();
}
