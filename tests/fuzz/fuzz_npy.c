/* fuzz_npy.c - the .npy reader (lib/npy.c) */
#include "fuzz.h"
#include "npy.h"

/*
 * Beyond "no crash": what the reader accepts it can write back, and the
 * header spirt_npy_header() writes for it parses to the same tensor.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct spirt_tensor t, u;
	const void *data, *data2;
	char hdr[128 + 21 * SPIRT_MAXRANK];
	unsigned char *buf;
	size_t hlen;

	if (spirt_npy_parse(&t, &data, d, n) != 0)
		return 0;
	FUZZ_ASSERT((const uint8_t *)data >= d &&
	    (const uint8_t *)data + t.nbytes == d + n);
	FUZZ_ASSERT(spirt_npy_header(hdr, sizeof hdr, &hlen, &t) == 0);
	FUZZ_ASSERT(hlen % 64 == 0);
	FUZZ_ASSERT((buf = malloc(hlen + t.nbytes + 1)) != NULL);
	memcpy(buf, hdr, hlen);
	memcpy(buf + hlen, data, t.nbytes);
	FUZZ_ASSERT(spirt_npy_parse(&u, &data2, buf, hlen + t.nbytes) == 0);
	FUZZ_ASSERT(u.dtype == t.dtype && u.rank == t.rank &&
	    u.nbytes == t.nbytes);
	FUZZ_ASSERT(memcmp(u.dims, t.dims, sizeof t.dims) == 0);
	FUZZ_ASSERT(memcmp(data2, data, t.nbytes) == 0);
	free(buf);
	return 0;
}
