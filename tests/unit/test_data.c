/* test_data.c - unit tests for lib/data: readers, shuffle, split, store */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "check.h"
#include "data.h"
#include "rng.h"
#include "shard.h"
#include "store.h"

#define FIX "tests/data/shard/"

static struct spirt_data_opts
opts(int format)
{
	struct spirt_data_opts o;

	memset(&o, 0, sizeof(o));
	o.format = format;
	return o;
}

/* reference values from contrib/python/make_shard_fixtures.py (rng.exp) */
static void
test_rng(void)
{
	static const uint64_t seed0[3] = { 11091344671253066420ULL,
	    13793997310169335082ULL, 1900383378846508768ULL };
	static const int perm[10] = { 8, 3, 9, 0, 7, 2, 1, 6, 5, 4 };
	struct spirt_dataset ds;
	struct spirt_rng r;
	unsigned char x[10];
	int32_t y[10];
	uint64_t m, v;
	int i;

	spirt_rng_seed(&r, 0);
	for (i = 0; i < 3; i++)
		CHECK(spirt_rng_next(&r) == seed0[i]);
	for (m = 1; m < 50; m++)
		for (i = 0; i < 20; i++) {
			v = spirt_rng_below(&r, m);
			CHECK(v < m);
		}
	CHECK(spirt_rng_below(&r, 0) == 0);

	memset(&ds, 0, sizeof(ds));
	for (i = 0; i < 10; i++) {
		x[i] = (unsigned char)i;
		y[i] = i * 10;
	}
	ds.xdtype = SPIRT_U8;
	ds.n = 10;
	ds.feat = 1;
	ds.x = x;
	ds.y = y;
	spirt_data_shuffle(&ds, 7);
	for (i = 0; i < 10; i++) {
		CHECK(x[i] == perm[i]);
		CHECK(y[i] == perm[i] * 10);
	}
}

static void
test_split(void)
{
	size_t c[7], n, k, i, sum;

	spirt_data_split(c, 10, 3);
	CHECK(c[0] == 4 && c[1] == 3 && c[2] == 3);
	spirt_data_split(c, 9, 3);
	CHECK(c[0] == 3 && c[1] == 3 && c[2] == 3);
	for (n = 7; n < 40; n++)
		for (k = 1; k <= 7; k++) {
			spirt_data_split(c, n, k);
			for (i = sum = 0; i < k; i++) {
				sum += c[i];
				CHECK(c[i] == c[0] || c[i] + 1 == c[0]);
			}
			CHECK(sum == n);
		}
}

static char tdir[] = "/tmp/spirt-test-data.XXXXXX";  /* made by main */

/* write len bytes (0: a string) to file name in tdir; its path to path */
static void
tmpwrite(char *path, size_t cap, const char *name, const void *buf,
    size_t len)
{
	FILE *f;

	if (len == 0)
		len = strlen(buf);
	snprintf(path, cap, "%s/%s", tdir, name);
	if ((f = fopen(path, "wb")) == NULL ||
	    fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		check_failed = 1;
	}
}

static void
test_idx(void)
{
	const char *plain[2] = { FIX "tiny-images-idx3-ubyte",
	    FIX "tiny-labels-idx1-ubyte" };
	const char *gz[2] = { FIX "tiny-images-idx3-ubyte.gz",
	    FIX "tiny-labels-idx1-ubyte.gz" };
	const char *bad[2] = { FIX "trunc-images-idx3-ubyte.gz",
	    FIX "tiny-labels-idx1-ubyte" };
	struct spirt_data_opts o = opts(SPIRT_FMT_AUTO);
	struct spirt_dataset a, b;
	struct spirt_data_err err;
	char buf[256];
	const unsigned char *x;

	CHECK_RC(spirt_data_read(&a, &err, plain, 2, &o));
	CHECK_RC(spirt_data_read(&b, &err, gz, 2, &o));
	CHECK(a.n == 10 && a.feat == 12 && a.xdtype == SPIRT_U8);
	CHECK(a.rank == 4 && a.dims[0] == 10 && a.dims[1] == 1 &&
	    a.dims[2] == 4 && a.dims[3] == 3);
	CHECK(a.nclasses == 3);
	x = a.x;
	CHECK(x[12 * 5 + 7] == 57 && a.y[5] == 2);
	CHECK(b.n == a.n && memcmp(a.x, b.x, 120) == 0 &&
	    memcmp(a.y, b.y, 40) == 0);
	spirt_dataset_free(&a);
	spirt_dataset_free(&b);

	CHECK_EQ_RC(spirt_data_read(&a, &err, bad, 2, &o), SPIRT_ETRUNC);
	CHECK(a.x == NULL && a.y == NULL);
	spirt_data_errstr(buf, sizeof(buf), &err, SPIRT_ETRUNC);
	CHECK(strcmp(buf, FIX "trunc-images-idx3-ubyte.gz: "
	    "truncated gzip data") == 0);

	bad[0] = FIX "short-images-idx3-ubyte";
	CHECK_EQ_RC(spirt_data_read(&a, &err, bad, 2, &o), SPIRT_ETRUNC);
	CHECK(err.has_record && err.record == 8);
	bad[0] = FIX "badmagic-images-idx3-ubyte";
	CHECK_EQ_RC(spirt_data_read(&a, &err, bad, 2, &o), SPIRT_EMAGIC);
	bad[0] = FIX "long-images-idx3-ubyte";
	CHECK_EQ_RC(spirt_data_read(&a, &err, bad, 2, &o), SPIRT_EDATA);
	bad[0] = plain[0];
	bad[1] = FIX "short-labels-idx1-ubyte";
	CHECK_EQ_RC(spirt_data_read(&a, &err, bad, 2, &o), SPIRT_ESHAPE);
	CHECK(strcmp(err.file, bad[1]) == 0);
	bad[1] = FIX "no-such-file";
	CHECK_EQ_RC(spirt_data_read(&a, &err, bad, 2, &o), ENOENT);
	o.classes = 2;
	CHECK_EQ_RC(spirt_data_read(&a, &err, plain, 2, &o), SPIRT_EDATA);
	CHECK(err.has_record && err.record == 2);
	spirt_data_errstr(buf, sizeof(buf), &err, SPIRT_EDATA);
	CHECK(strcmp(buf, FIX "tiny-labels-idx1-ubyte: record 2: "
	    "label 2 outside 0..1") == 0);

	/* float IDX images become f32 */
	bad[0] = FIX "float-images-idx3-ubyte";
	bad[1] = plain[1];
	o.classes = 0;
	CHECK_RC(spirt_data_read(&a, &err, bad, 2, &o));
	CHECK(a.xdtype == SPIRT_F32 && ((float *)a.x)[13] == 5.5f);
	spirt_dataset_free(&a);
}

static void
test_csv(void)
{
	static const char *const names[] = { FIX "tiny.csv",
	    FIX "tiny-nohdr.csv", FIX "tiny.csv.gz", FIX "tiny-last.csv" };
	struct spirt_data_opts o = opts(SPIRT_FMT_AUTO);
	struct spirt_dataset ds;
	struct spirt_data_err err;
	const char *p[2];
	char path[64];
	size_t i;
	float *x;

	for (i = 0; i < 4; i++) {
		p[0] = names[i];
		o.label_col = i == 3 ? SPIRT_LABEL_LAST : 0;
		CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
		CHECK(ds.n == 6 && ds.feat == 3 && ds.xdtype == SPIRT_F32);
		CHECK(ds.rank == 2 && ds.dims[1] == 3 && ds.nclasses == 2);
		x = ds.x;
		CHECK(ds.n == 6 && x[3 * 5] == 5 && x[3 * 5 + 1] == 2.5f &&
		    x[3 * 5 + 2] == -5 && ds.y[5] == 1 && ds.y[4] == 0);
		spirt_dataset_free(&ds);
	}
	o.label_col = 0;
	p[0] = FIX "ragged.csv";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 4);
	p[0] = FIX "nonnum.csv";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2 && strstr(err.msg, "\"x3\""));
	p[0] = FIX "badlabel.csv";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2);
	p[0] = FIX "inf.csv";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_ENAN);
	p[0] = FIX "empty.csv";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	p[0] = FIX "tiny.csv";
	o.dim = 4;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_ESHAPE);
	o.dim = 0;
	o.label_col = 7;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(ds.x == NULL);

	/* header: line 1 goes unread, and no header is looked for after */
	o.label_col = 0;
	o.header = 1;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.n == 6);
	spirt_dataset_free(&ds);
	p[0] = FIX "tiny-nohdr.csv";
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.n == 5 && ds.y[0] == 1);
	spirt_dataset_free(&ds);
	tmpwrite(path, sizeof(path), "title.csv", "t\ny,a\n0,1\n", 0);
	p[0] = path;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2);
	o.header = 0;
	tmpwrite(path, sizeof(path), "title.csv", "A, b\n0,1,2\n1,2,3\n", 0);
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2 && err.hint == SPIRT_DATA_HINT_HEADER);
	o.header = 1;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	spirt_dataset_free(&ds);
	o.classes = 0;
	o.format = SPIRT_FMT_IDX;
	p[0] = FIX "tiny-images-idx3-ubyte";
	p[1] = FIX "tiny-labels-idx1-ubyte";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 2, &o), SPIRT_EINVAL);
}

static void
test_libsvm(void)
{
	struct spirt_data_opts o = opts(SPIRT_FMT_AUTO);
	struct spirt_dataset ds;
	struct spirt_data_err err;
	const char *p[1] = { FIX "tiny.svm" };
	char path[64];
	static const float want[4 * 5] = {
		0.5f, 0, 2, 0, 0,
		0, 1, 0, 0, -1,
		0, 0, 0, 3, 0,
		0, 0, 0, 0, 0 };
	static const int32_t wy[4] = { 1, 0, 2, 1 };
	float *x;
	int i;

	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.n == 4 && ds.feat == 5 && ds.nclasses == 3);
	if (ds.n == 4 && ds.feat == 5) {
		check_close("libsvm x", ds.x, want, 20, 0, 0);
		CHECK(memcmp(ds.y, wy, sizeof(wy)) == 0);
	}
	spirt_dataset_free(&ds);
	o.dim = 8;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	x = ds.x;
	CHECK(ds.feat == 8 && x[8 + 4] == -1 && x[8 + 5] == 0);
	spirt_dataset_free(&ds);
	o.dim = 4;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2);
	o.dim = 0;
	p[0] = FIX "unsorted.svm";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2);
	p[0] = FIX "zero.svm";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	p[0] = FIX "badtok.svm";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	p[0] = FIX "negative.svm";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	p[0] = FIX "rng.exp";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EINVAL);
	for (i = 0; i < 1; i++)
		CHECK(ds.x == NULL);

	/* a dimension nobody gave is at most SPIRT_DATA_MAXINFER */
	tmpwrite(path, sizeof(path), "huge.svm", "1 1:1 3294967295:1\n", 0);
	p[0] = path;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 1 && err.hint == SPIRT_DATA_HINT_DIM);
	o.dim = 100;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 1 && err.hint == SPIRT_DATA_HINT_NONE);
	o.dim = 0;
	tmpwrite(path, sizeof(path), "max.svm", "1 1:1 65536:1\n", 0);
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.feat == SPIRT_DATA_MAXINFER);
	spirt_dataset_free(&ds);
}

/* labels at and beyond SPIRT_DATA_MAXCLASSES, in every reader */
static void
test_label_limit(void)
{
	static const unsigned char lab[8 + 4 * 10] = { 0, 0, 0x0C, 1,
	    0, 0, 0, 10,  0, 0, 0, 0,  0, 0, 0, 1,  0x7f, 0xff, 0xff, 0xff };
	struct spirt_data_opts o = opts(SPIRT_FMT_AUTO);
	struct spirt_dataset ds;
	struct spirt_data_err err;
	int32_t y[3] = { 0, INT32_MAX, 1 };
	char csv[64], svm[64], idx[64], ok[64], buf[256];
	const char *p[2];

	tmpwrite(csv, sizeof(csv), "big.csv", "0,1\n2147483647,2\n", 0);
	tmpwrite(svm, sizeof(svm), "big.svm", "0 1:1\n65536 1:2\n", 0);
	tmpwrite(ok, sizeof(ok), "max.svm", "0 1:1\n65535 1:2\n", 0);
	tmpwrite(idx, sizeof(idx), "big-labels", lab, sizeof(lab));
	p[0] = csv;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2 && ds.y == NULL);
	spirt_data_errstr(buf, sizeof(buf), &err, SPIRT_EDATA);
	CHECK(strstr(buf, ":2: label 2147483647: at most 65536 classes "
	    "(labels 0..65535)") != NULL);
	p[0] = svm;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2);
	p[0] = FIX "tiny-images-idx3-ubyte";
	p[1] = idx;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 2, &o), SPIRT_EDATA);
	CHECK(err.has_record && err.record == 2 && err.file == idx);
	p[0] = ok;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.nclasses == SPIRT_DATA_MAXCLASSES);
	spirt_dataset_free(&ds);

	/* the check itself: no overflow computing largest + 1 */
	memset(&ds, 0, sizeof(ds));
	ds.n = 3;
	ds.y = y;
	CHECK_EQ_RC(spirt_data_check_labels(&ds, &err, "f", 0), SPIRT_EDATA);
	CHECK(err.has_record && err.record == 1);
	y[1] = SPIRT_DATA_MAXCLASSES - 1;
	CHECK_RC(spirt_data_check_labels(&ds, &err, "f", 0));
	CHECK(ds.nclasses == SPIRT_DATA_MAXCLASSES);
	CHECK_EQ_RC(spirt_data_check_labels(&ds, &err, "f",
	    SPIRT_DATA_MAXCLASSES + 1), SPIRT_EINVAL);

	/* one class: a model needs two, unless classes says how many */
	y[0] = y[1] = y[2] = 0;
	CHECK_EQ_RC(spirt_data_check_labels(&ds, &err, "f", 0), SPIRT_EDATA);
	CHECK(err.hint == SPIRT_DATA_HINT_CLASSES && !err.has_record);
	CHECK_EQ_RC(spirt_data_check_labels(&ds, &err, "f", 1), SPIRT_EINVAL);
	CHECK_RC(spirt_data_check_labels(&ds, &err, "f", 2));
	CHECK(ds.nclasses == 2);
}

/* what a header claims is checked against the bytes there */
static void
test_claims(void)
{
	unsigned char h[16 + 100] = { 0, 0, 8, 3,  0, 1, 0, 0,  0, 0, 1, 0,
	    0, 0, 1, 0 };                       /* 65536 x 256 x 256 */
	struct spirt_data_opts o = opts(SPIRT_FMT_IDX);
	struct spirt_dataset ds;
	struct spirt_data_err err;
	char img[64], gz[64], csv[64], *line;
	const char *p[2];
	gzFile f;
	size_t i;

	tmpwrite(img, sizeof(img), "claim-images", h, sizeof(h));
	p[0] = img;
	p[1] = FIX "tiny-labels-idx1-ubyte";
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 2, &o), SPIRT_ETRUNC);
	CHECK(err.has_record && err.record == 0 &&
	    strstr(err.msg, "the file holds 100 bytes"));
	h[4] = h[5] = h[6] = h[7] = 0xff;       /* 2^32-1 x 2^16 x 2^16 */
	tmpwrite(img, sizeof(img), "claim-images", h, sizeof(h));
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 2, &o), SPIRT_ETRUNC);
	snprintf(gz, sizeof(gz), "%s/claim-images.gz", tdir);
	if ((f = gzopen(gz, "wb")) == NULL ||
	    gzwrite(f, h, sizeof(h)) != (int)sizeof(h) || gzclose(f) != Z_OK)
		CHECK(!"gzip written");
	p[0] = gz;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 2, &o), SPIRT_ETRUNC);
	CHECK(err.has_record && err.record == 0 && ds.x == NULL);

	/* one line of 2^20 fields: memory for that row only (ASan sees) */
	if ((line = malloc(2 << 20)) == NULL) {
		CHECK(line != NULL);
		return;
	}
	for (i = 0; i < 1u << 20; i++) {
		line[2 * i] = i % 3 ? '1' : '0';
		line[2 * i + 1] = ',';
	}
	line[(2 << 20) - 1] = '\n';
	tmpwrite(csv, sizeof(csv), "wide.csv", line, 2 << 20);
	free(line);
	p[0] = csv;
	o.format = SPIRT_FMT_CSV;
	o.classes = 2;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.n == 1 && ds.feat == (1u << 20) - 1);
	CHECK(ds.feat > 5 && ((float *)ds.x)[1] == 1 &&
	    ((float *)ds.x)[2] == 0);
	spirt_dataset_free(&ds);
}

/* standardisation against a plain double reference */
static void
test_scale(void)
{
	static const unsigned char u[4 * 3] = { 0, 10, 7,  2, 20, 7,
	    4, 30, 7,  6, 200, 7 };
	struct spirt_dataset ds, t;
	struct spirt_data_err err;
	struct spirt_store *s;
	char path[64];
	float *sc, *back;
	const float *x;
	double m, v, z;
	int32_t y[4] = { 0, 1, 0, 1 };
	size_t i, j;

	memset(&ds, 0, sizeof(ds));
	ds.xdtype = SPIRT_U8;
	ds.n = 4;
	ds.feat = 3;
	ds.rank = 2;
	ds.dims[0] = 4;
	ds.dims[1] = 3;
	ds.nclasses = 2;
	if ((ds.x = malloc(sizeof(u))) == NULL ||
	    (ds.y = malloc(sizeof(y))) == NULL) {
		CHECK(!"malloc");
		return;
	}
	memcpy(ds.x, u, sizeof(u));
	memcpy(ds.y, y, sizeof(y));
	CHECK_RC(spirt_data_scale_fit(&sc, &ds));
	for (j = 0; sc && j < 3; j++) {
		for (i = 0, m = 0; i < 4; i++)
			m += u[3 * i + j];
		m /= 4;
		for (i = 0, v = 0; i < 4; i++)
			v += (u[3 * i + j] - m) * (u[3 * i + j] - m);
		v = sqrt(v / 4);
		CHECK(sc[j] == (float)m);
		CHECK(sc[3 + j] == (v > 0 ? (float)v : 1));
	}
	CHECK_EQ_RC(spirt_data_scale_apply(&ds, &err, sc, "a/b"),
	    SPIRT_EINVAL);
	CHECK(ds.xdtype == SPIRT_U8 && ds.scale == NULL);
	CHECK_RC(spirt_data_scale_apply(&ds, &err, sc, "tr"));
	CHECK(ds.xdtype == SPIRT_F32 && strcmp(ds.scale_from, "tr") == 0);
	x = ds.x;
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++) {
			z = (u[3 * i + j] - (double)sc[j]) / sc[3 + j];
			CHECK(x[3 * i + j] == (float)z);
		}
	CHECK(x[2] == 0 && x[11] == 0);         /* the constant feature */

	/* stored with the data set, read back for another one */
	snprintf(path, sizeof(path), "%s/scale.db", tdir);
	CHECK_RC(spirt_store_open(&s, path, SPIRT_STORE_CREATE |
	    SPIRT_STORE_NOSYNC));
	CHECK_RC(spirt_data_store(s, "tr", &ds, 2));
	CHECK_RC(spirt_data_scale_get(&back, s, "tr", 3));
	CHECK(back && memcmp(back, sc, 6 * sizeof(float)) == 0);
	free(back);
	CHECK_EQ_RC(spirt_data_scale_get(&back, s, "tr", 4), SPIRT_ESHAPE);
	CHECK_EQ_RC(spirt_data_scale_get(&back, s, "none", 3),
	    SPIRT_ENOTFOUND);
	CHECK(back == NULL);

	/* a value beyond f32 names its record */
	memset(&t, 0, sizeof(t));
	t.xdtype = SPIRT_F32;
	t.n = 2;
	t.feat = 3;
	if ((t.x = calloc(6, sizeof(float))) == NULL) {
		CHECK(!"calloc");
		return;
	}
	((float *)t.x)[4] = 3e38f;
	sc[4] = 0.5f;
	CHECK_EQ_RC(spirt_data_scale_apply(&t, &err, sc, "tr"), SPIRT_ENAN);
	CHECK(err.has_record && err.record == 1 && t.scale == NULL);
	spirt_dataset_free(&t);
	free(sc);
	spirt_dataset_free(&ds);
	spirt_store_close(s);
}

static void
test_names(void)
{
	CHECK(spirt_data_format_guess("a/train-images-idx3-ubyte.gz") ==
	    SPIRT_FMT_IDX);
	CHECK(spirt_data_format_guess("x.csv") == SPIRT_FMT_CSV);
	CHECK(spirt_data_format_guess("x.csv.gz") == SPIRT_FMT_CSV);
	CHECK(spirt_data_format_guess("x.libsvm") == SPIRT_FMT_LIBSVM);
	CHECK(spirt_data_format_guess("x.txt") == SPIRT_FMT_AUTO);
	CHECK(spirt_data_format_guess("-") == SPIRT_FMT_AUTO);
	CHECK(spirt_data_format_parse("svmlight") == SPIRT_FMT_LIBSVM);
	CHECK(spirt_data_format_parse("npy") == SPIRT_FMT_NPY);
	CHECK(spirt_data_format_parse("npz") == SPIRT_FMT_NPZ);
	CHECK(spirt_data_format_parse("parquet") == SPIRT_FMT_AUTO);
	CHECK(spirt_data_format_guess("d/X.npy") == SPIRT_FMT_NPY);
	CHECK(spirt_data_format_guess("d.npz") == SPIRT_FMT_NPZ);
	CHECK(spirt_data_name_check("train") == 0);
	CHECK(spirt_data_name_check("test-1.v2_x") == 0);
	CHECK(spirt_data_name_check("") != 0);
	CHECK(spirt_data_name_check(".x") != 0);
	CHECK(spirt_data_name_check("a/b") != 0);
	CHECK(spirt_data_name_check("a b") != 0);
}

/* --columns lists, class names in byte order or from a list, quotes */
static void
test_csv_names(void)
{
	struct spirt_data_opts o = opts(SPIRT_FMT_CSV);
	struct spirt_dataset ds;
	struct spirt_data_err err;
	const char *p[1];
	char path[256];
	uint32_t *cols;
	size_t n;
	float *x;

	CHECK_RC(spirt_data_cols_parse(&cols, &n, "7,2-4,9"));
	CHECK(n == 5 && cols[0] == 1 && cols[1] == 2 && cols[2] == 3 &&
	    cols[3] == 6 && cols[4] == 8);
	free(cols);
	CHECK_EQ_RC(spirt_data_cols_parse(&cols, &n, "3,2-3"), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_data_cols_parse(&cols, &n, "0"), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_data_cols_parse(&cols, &n, "4-2"), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_data_cols_parse(&cols, &n, "1048577"),
	    SPIRT_EINVAL);
	CHECK(cols == NULL && n == 0);
	CHECK_RC(spirt_data_names_check("a\nb\n", 4, &n));
	CHECK(n == 2);
	CHECK_EQ_RC(spirt_data_names_check("a\na\n", 4, &n), SPIRT_EDATA);
	CHECK_EQ_RC(spirt_data_names_check("a\n\n", 3, &n), SPIRT_EDATA);
	CHECK_EQ_RC(spirt_data_names_check("a", 1, &n), SPIRT_EDATA);

	/* names in byte order, whatever the file's; "b" before "ba" */
	tmpwrite(path, sizeof(path), "n.csv", "id,v,text,w,y\n"
	    "1,0.5,x,2,ba\n2,1.5,y,3, \"b\" \n3,2.5,z,4,A\n4,3.5,x,5,ba\n", 0);
	p[0] = path;
	CHECK_RC(spirt_data_cols_parse(&cols, &n, "2,4"));
	o.cols = cols;
	o.ncols = n;
	o.label_col = SPIRT_LABEL_LAST;
	o.label_names = 1;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.n == 4 && ds.feat == 2 && ds.nclasses == 3);
	CHECK(ds.names_len == 7 && memcmp(ds.names, "A\nb\nba\n", 7) == 0);
	CHECK(ds.y[0] == 2 && ds.y[1] == 1 && ds.y[2] == 0 && ds.y[3] == 2);
	x = ds.x;
	CHECK(x[0] == 0.5f && x[1] == 2 && x[6] == 3.5f && x[7] == 5);
	spirt_dataset_free(&ds);
	/* mapped to a given list: its numbering, its count */
	o.names_from = "ba\nb\nA\nzz\n";
	o.names_from_len = 10;
	CHECK_RC(spirt_data_read(&ds, &err, p, 1, &o));
	CHECK(ds.nclasses == 4 && ds.names_len == 10);
	CHECK(ds.y[0] == 0 && ds.y[1] == 1 && ds.y[2] == 2 && ds.y[3] == 0);
	spirt_dataset_free(&ds);
	o.names_from = "ba\nb\n";
	o.names_from_len = 5;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 4 && strstr(err.msg, "\"A\""));
	o.names_from = NULL;
	/* a missing value names its line and field */
	tmpwrite(path, sizeof(path), "m.csv", "1,2,a\n3,NA,b\n", 0);
	o.cols = NULL;
	CHECK_EQ_RC(spirt_data_read(&ds, &err, p, 1, &o), SPIRT_EDATA);
	CHECK(err.line == 2 && strstr(err.msg, "field 2: missing value"));
	free(cols);
}

static int
count_keys(void *arg, const char *key, const void *val, size_t len)
{
	(void)key;
	(void)val;
	(void)len;
	++*(int *)arg;
	return 0;
}

static int
nkeys(struct spirt_store *s, const char *prefix)
{
	struct spirt_txn *t;
	int n = 0;

	CHECK_RC(spirt_txn_begin(&t, s, SPIRT_TXN_RDONLY));
	CHECK_RC(spirt_store_list(t, prefix, count_keys, &n));
	spirt_txn_abort(t);
	return n;
}

static void
test_store(void)
{
	const char *plain[2] = { FIX "tiny-images-idx3-ubyte",
	    FIX "tiny-labels-idx1-ubyte" };
	struct spirt_data_opts o = opts(SPIRT_FMT_AUTO);
	struct spirt_data_stats st;
	struct spirt_dataset ds;
	struct spirt_data_err err;
	struct spirt_store *s;
	char dir[] = "/tmp/spirt-test-data.XXXXXX", path[64];
	static const int64_t d0[] = { 0 }, l012[] = { 0, 1, 2 }, l9[] = { 9 };
	struct spirt_reassign ra;
	int64_t k, c, sum;

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		check_failed = 1;
		return;
	}
	snprintf(path, sizeof(path), "%s/db", dir);
	CHECK_RC(spirt_store_open(&s, path, SPIRT_STORE_CREATE |
	    SPIRT_STORE_NOSYNC));
	CHECK_RC(spirt_data_read(&ds, &err, plain, 2, &o));
	CHECK_EQ_RC(spirt_data_store(s, "t", &ds, 11), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_data_store(s, "a/b", &ds, 1), SPIRT_EINVAL);
	CHECK(nkeys(s, "") == 0);
	CHECK_RC(spirt_data_store(s, "t", &ds, 4));
	CHECK(nkeys(s, "data/t/") == 2 + 4 * 2);
	CHECK_RC(spirt_data_store(s, "t2", &ds, 1));
	CHECK_RC(spirt_data_store(s, "t", &ds, 3));     /* stale keys go */
	CHECK(nkeys(s, "data/t/") == 2 + 3 * 2);
	CHECK(nkeys(s, "data/t2/") == 4);

	CHECK_RC(spirt_data_stats(&st, s, "t"));
	CHECK(st.nshards == 3 && st.nsamples == 10 && st.nclasses == 3 &&
	    st.features == 12 && st.xdtype == SPIRT_U8 && st.xrank == 4);
	CHECK(st.counts && st.counts[0] == 4 && st.counts[2] == 3);
	for (c = 0; st.hist && c < 3; c++) {
		for (k = sum = 0; k < 3; k++)
			sum += st.hist[k * 3 + c];
		CHECK(sum == (c == 0 ? 4 : 3));
	}
	CHECK(st.as.nrows == 3 && st.as.revision == 0 && st.as.nrest == 0);
	spirt_data_stats_free(&st);

	/* worker 0 dead: revision 1, its 4 samples over 1 and 2 */
	memset(&ra, 0, sizeof(ra));
	ra.dead = d0;
	ra.ndead = 1;
	CHECK_RC(spirt_data_reassign(s, "t", &ra));
	CHECK(ra.revision == 1 && ra.at_epoch == 0 && ra.at_step == 0);
	CHECK_EQ_RC(spirt_data_reassign(s, "t", &ra), SPIRT_EDONE);
	CHECK_RC(spirt_data_stats(&st, s, "t"));
	CHECK(st.as.revision == 1 && st.as.nrows == 4);
	spirt_data_stats_free(&st);
	/* from step 1 of batch 2 (S = 2), everyone live again: worker 0
	 * back at epoch 1; then a step before that is refused */
	memset(&ra, 0, sizeof(ra));
	ra.live = l012;
	ra.nlive = 3;
	ra.when = SPIRT_RA_STEP;
	ra.step = 1;
	ra.batch = 2;
	CHECK_RC(spirt_data_reassign(s, "t", &ra));
	CHECK(ra.revision == 2 && ra.at_epoch == 0 && ra.at_step == 1);
	CHECK_RC(spirt_data_stats(&st, s, "t"));
	CHECK(st.as.nrest > 0 && st.as.epoch == 1);
	spirt_data_stats_free(&st);
	ra.step = 0;
	CHECK_EQ_RC(spirt_data_reassign(s, "t", &ra), SPIRT_ESTEP);
	CHECK(strstr(ra.msg, "comes before revision 2") != NULL);
	ra.live = l9;
	ra.nlive = 1;
	ra.step = 3;
	CHECK_EQ_RC(spirt_data_reassign(s, "t", &ra), SPIRT_EINVAL);
	CHECK(strcmp(ra.msg, "worker 9 has no shard: 3 shards") == 0);
	CHECK_EQ_RC(spirt_data_stats(&st, s, "none"), SPIRT_ENOTFOUND);
	CHECK_EQ_RC(spirt_data_reassign(s, "none", &ra), SPIRT_ENOTFOUND);

	spirt_dataset_free(&ds);
	spirt_store_close(s);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

int
main(void)
{
	char cmd[64];

	if (mkdtemp(tdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_rng();
	test_split();
	test_names();
	test_idx();
	test_csv();
	test_csv_names();
	test_libsvm();
	test_label_limit();
	test_claims();
	test_scale();
	test_store();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", tdir);
	CHECK_DONE();
}
