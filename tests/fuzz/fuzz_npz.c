/* fuzz_npz.c - the NumPy data set readers (lib/npz.c): .npz, .npy pairs */
#include "fuzz_data.h"

/*
 * The first byte picks the options spirt-shard would pass: bit 0 a .npy
 * pair (the next two bytes give the samples file's length, the rest is
 * the labels file), else a .npz; bit 1 a class count (from the fourth
 * byte); bit 2 a feature count (from the fifth); bit 3 --arrays a,b.
 */
static struct fuzz_file fx, fy;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_file_init(&fx, "npzx");
	fuzz_file_init(&fy, "npzy");
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
	unsigned f, xl, c, dim;
	int rc;

	f = fuzz_u8(&in);
	xl = fuzz_u8(&in);
	xl |= fuzz_u8(&in) << 8;
	c = fuzz_u8(&in);
	dim = fuzz_u8(&in);
	memset(&o, 0, sizeof o);
	if (f & 2)
		o.classes = (int32_t)(c < 2 ? 2 : c);
	if (f & 4)
		o.dim = dim ? dim : 1;
	if (f & 1) {
		if (xl > in.n)
			xl = (unsigned)in.n;
		o.format = SPIRT_FMT_NPY;
		paths[0] = fuzz_file_set(&fx, in.p, xl, 0600);
		paths[1] = fuzz_file_set(&fy, in.p + xl, in.n - xl, 0600);
		rc = spirt_data_read(&ds, &err, paths, 2, &o);
	} else {
		o.format = SPIRT_FMT_NPZ;
		if (f & 8) {
			o.npz_x = "a";
			o.npz_y = "b";
		}
		paths[0] = fuzz_file_set(&fx, in.p, in.n, 0600);
		rc = spirt_data_read(&ds, &err, paths, 1, &o);
	}
	if (rc == 0) {
		fuzz_data_check(&ds, &o);
		spirt_dataset_free(&ds);
	} else {
		fuzz_data_fail(&err, rc);
		FUZZ_ASSERT(ds.x == NULL && ds.y == NULL);
	}
	return 0;
}
