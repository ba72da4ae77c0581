/* fuzz_csv.c - the CSV reader (lib/data.c) */
#include "fuzz_data.h"

/*
 * The first byte picks the options spirt-shard would pass: bit 0 a header
 * line (-H), bits 1-2 the label column (first, last, second, sixth), bit
 * 3 a class count (from the second byte), bit 4 a feature count (from the
 * third); the rest of the input is the file.
 */
static struct fuzz_file file;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_file_init(&file, "csv");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const int cols[4] = { 0, SPIRT_LABEL_LAST, 1, 5 };
	struct fuzz_in in = { d, n };
	struct spirt_data_opts o;
	struct spirt_data_err err;
	struct spirt_dataset ds;
	const char *path;
	unsigned f, c, dim;
	int rc;

	f = fuzz_u8(&in);
	c = fuzz_u8(&in);
	dim = fuzz_u8(&in);
	memset(&o, 0, sizeof o);
	o.format = SPIRT_FMT_CSV;
	o.header = f & 1;
	o.label_col = cols[f >> 1 & 3];
	if (f & 8)
		o.classes = (int32_t)(c < 2 ? 2 : c);
	if (f & 16)
		o.dim = dim ? dim : 1;
	path = fuzz_file_set(&file, in.p, in.n, 0600);
	rc = spirt_data_read(&ds, &err, &path, 1, &o);
	if (rc == 0) {
		fuzz_data_check(&ds, &o);
		FUZZ_ASSERT(ds.xdtype == SPIRT_F32 && ds.rank == 2);
		spirt_dataset_free(&ds);
	} else {
		fuzz_data_fail(&err, rc);
		FUZZ_ASSERT(ds.x == NULL && ds.y == NULL);
	}
	return 0;
}
