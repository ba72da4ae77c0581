/* fuzz_idx.c - the IDX reader, images and labels (lib/idx.c) */
#include "fuzz_data.h"

/*
 * The input is two files: a 2-byte little-endian length L, then L bytes
 * of images (fewer if the input ends first), then the labels.  Either may
 * be gzip data (the reader gunzips what starts with 1f 8b).
 */
static struct fuzz_file img, lab;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_file_init(&img, "images");
	fuzz_file_init(&lab, "labels");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_in in = { d, n };
	struct spirt_data_opts o;
	struct spirt_data_err err;
	struct spirt_dataset ds;
	const char *paths[2];
	const uint8_t *p;
	size_t len, k;
	int rc;

	len = fuzz_u16(&in);
	p = fuzz_take(&in, len, &k);
	paths[0] = fuzz_file_set(&img, p, k, 0600);
	paths[1] = fuzz_file_set(&lab, in.p, in.n, 0600);
	memset(&o, 0, sizeof o);
	o.format = SPIRT_FMT_IDX;
	rc = spirt_data_read(&ds, &err, paths, 2, &o);
	if (rc == 0) {
		fuzz_data_check(&ds, &o);
		spirt_dataset_free(&ds);
	} else {
		fuzz_data_fail(&err, rc);
		FUZZ_ASSERT(ds.x == NULL && ds.y == NULL);
	}
	return 0;
}
