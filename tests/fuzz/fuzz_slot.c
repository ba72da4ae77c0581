/* fuzz_slot.c - a gradient slot's header (lib/slot.c, spirt-store(5)) */
#include "fuzz.h"
#include "slot.h"

/*
 * The input's first byte is the worker whose file it is (0-3); the rest
 * is the file, as spirt-update maps it (with -DSPIRT_FUZZ the header's
 * checksum is not compared and this boot's id is empty, so the fuzzer
 * reaches the fields behind them).  Beyond "no crash": a slot taken is
 * the file's worker's, its payload lies within the file, its name is a
 * name; a refusal has a message, and an empty file holds no gradient.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spirt_tensor t;
	const float *pl;
	uint64_t model;
	char msg[160];
	uint32_t w;
	void *map;
	size_t len;
	int rc;

	if (size < 1)
		return 0;
	w = data[0] % 4;
	len = size - 1;
	/* a page-aligned copy, as a map is (the magic is read atomically) */
	map = len ? aligned_alloc(4096, (len + 4095) / 4096 * 4096) : NULL;
	if (len && map == NULL)
		abort();
	if (len)
		memcpy(map, data + 1, len);
	rc = spirt_slot_parse(&t, &model, &pl, map, len, w, msg, sizeof msg);
	if (len == 0)
		FUZZ_ASSERT(rc == SPIRT_ENOTFOUND);
	if (rc == 0) {
		FUZZ_ASSERT(t.origin == w && t.dtype == SPIRT_F32 &&
		    t.rank == 1);
		FUZZ_ASSERT((const unsigned char *)pl ==
		    (const unsigned char *)map + SPIRT_SLOT_HDR);
		FUZZ_ASSERT(SPIRT_SLOT_HDR + t.nbytes <= len);
		FUZZ_ASSERT(t.name[0] != '\0' && strlen(t.name) < 256);
		/* the values are readable, to the last */
		if (t.nelem)
			FUZZ_ASSERT(pl[t.nelem - 1] == pl[t.nelem - 1] ||
			    pl[t.nelem - 1] != pl[t.nelem - 1]);
	} else if (rc != SPIRT_ENOTFOUND) {
		FUZZ_ASSERT(msg[0] != '\0');
	}
	free(map);
	return 0;
}
