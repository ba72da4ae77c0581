/* data.h - data sets in memory: the IDX, CSV, LIBSVM and NumPy readers */
#ifndef SPIRT_DATA_H
#define SPIRT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "tensor.h"

/*
 * A data set in memory: n samples, x row-major with feat elements per
 * sample (u8 for IDX byte images, else f32), y one i32 label per sample.
 * shard.h writes it to the store; the layout is in docs/contracts.md and
 * spirt-store(5):
 *
 *   data/<ds>/info     i64 [4]: nshards, nsamples, nclasses, features
 *   data/<ds>/<k>/x    u8 or f32 [n_k, ...]      (name = ds, samples = n_k)
 *   data/<ds>/<k>/y    i32 [n_k]                 (name = ds, samples = n_k)
 *   data/<ds>/assign   i64 [m, 4]: (worker, shard, start, count) rows,
 *                      step = revision
 *   data/<ds>/scale    f32 [2, features]: mean, deviation of each feature
 *                      the samples were standardised with (only then);
 *                      name = the data set they were fitted on
 */

enum spirt_data_format {
	SPIRT_FMT_AUTO = 0,
	SPIRT_FMT_IDX,
	SPIRT_FMT_CSV,
	SPIRT_FMT_LIBSVM,
	SPIRT_FMT_NPY,                  /* two .npy files: samples, labels */
	SPIRT_FMT_NPZ                   /* one .npz archive of both */
};

#define SPIRT_DATA_NAME_MAX 64          /* data set name bytes */
#define SPIRT_DATA_MAXCLASSES 65536     /* labels lie in 0..65535 */
#define SPIRT_DATA_MAXINFER 65536       /* LIBSVM: largest dim inferred */
#define SPIRT_DATA_MAXSHARDS (1 << 20)  /* shards of one data set */
#define SPIRT_LABEL_LAST    (-1)        /* label_col: the last column */
#define SPIRT_DATA_ARRAY_MAX 128        /* .npz array name bytes */

struct spirt_dataset {
	int      xdtype;                /* SPIRT_U8 or SPIRT_F32 */
	unsigned rank;                  /* rank of x, with the sample axis */
	uint64_t dims[SPIRT_MAXRANK];   /* dims[0] == n */
	size_t   n;                     /* samples */
	size_t   feat;                  /* elements per sample */
	void    *x;                     /* n * feat elements */
	int32_t *y;                     /* n labels */
	int32_t  nclasses;              /* set by spirt_data_check_labels */
	float   *scale;                 /* NULL, or [2 * feat] x was
	                                   standardised with (owned) */
	char     scale_from[SPIRT_DATA_NAME_MAX + 1]; /* fitted on */
	char    *names;                 /* NULL, or the nclasses class names
	                                   (opts.label_names), class 0
	                                   first, each ended by '\n' (owned) */
	size_t   names_len;             /* bytes of names */
};

/* Reader options; zero them, then set what differs. */
struct spirt_data_opts {
	int      format;                /* enum spirt_data_format */
	int      label_col;             /* CSV: 0-based column or LABEL_LAST */
	size_t   dim;                   /* features: 0 infers (LIBSVM: at most
	                                   MAXINFER); LIBSVM densifies to it,
	                                   other formats must match it */
	int      header;                /* CSV, LIBSVM: skip line 1 unread
	                                   (CSV: else a first line whose label
	                                   is not a number is a header) */
	int32_t  classes;               /* labels must lie in 0..classes-1
	                                   (2..MAXCLASSES); 0 infers the
	                                   largest label + 1, at least 2 */
	int      label_names;           /* CSV: the label column holds class
	                                   names (any text but an empty
	                                   field); classes are numbered in
	                                   the byte order of the names, or
	                                   as in names_from */
	const char *names_from;         /* with label_names: NULL, or the
	                                   names of the classes (as
	                                   ds.names) every label must be */
	size_t   names_from_len;
	const char *npz_x, *npz_y;      /* .npz: the arrays' names (NULL:
					   X or else x; y or else Y) */
	const uint32_t *cols;           /* CSV: NULL, or the feature
	                                   columns (0-based, ascending, not
	                                   the label's), in place of every
	                                   column but the label's */
	size_t   ncols;
};

/*
 * Where a reader found bad data.  The reader fills it whenever it returns
 * non-zero; spirt_data_errstr() formats it as "FILE:LINE: msg",
 * "FILE: record N: msg" or "FILE: msg".  Records count from 0 in file
 * order; lines count from 1.
 */
struct spirt_data_err {
	const char *file;               /* operand as given, "-" for stdin */
	uint64_t line;                  /* 0 when not a text line */
	uint64_t record;                /* valid when has_record */
	int has_record;
	int hint;                       /* SPIRT_DATA_HINT_*: the option that
	                                   would help, for a tool's hint */
	char msg[192];                  /* "" means spirt_strerror(rc) */
};

enum {
	SPIRT_DATA_HINT_NONE = 0,
	SPIRT_DATA_HINT_DIM,            /* give opts.dim */
	SPIRT_DATA_HINT_CLASSES,        /* give opts.classes */
	SPIRT_DATA_HINT_HEADER,         /* set opts.header */
	SPIRT_DATA_HINT_FORMAT,         /* give opts.format */
	SPIRT_DATA_HINT_COLUMNS,        /* CSV: give opts.cols */
	SPIRT_DATA_HINT_NAMES           /* CSV: set opts.label_names */
};

/* Format the error (see above) into buf; returns buf. */
char *spirt_data_errstr(char *buf, size_t cap,
    const struct spirt_data_err *err, int rc);

/*
 * Parse a CSV column list: 1-based columns and ranges, comma-separated,
 * as "2-5,7" (at most SPIRT_DATA_MAXCOLS), into *cols, malloc'ed (free()),
 * 0-based, ascending, each once.  Returns 0, ENOMEM or SPIRT_EINVAL (not
 * such a list: a column 0, a range backwards, one given twice).
 */
#define SPIRT_DATA_MAXCOLS (1u << 20)
SPIRT_MUST_CHECK int spirt_data_cols_parse(uint32_t **cols, size_t *n,
    const char *spec);

/*
 * Check a list of class names (as ds.names: each ended by '\n', none
 * empty, none twice, at most SPIRT_DATA_MAXCLASSES) and count them.
 * Returns 0 or SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_data_names_check(const char *names, size_t len,
    size_t *count);

/* Guess a format from a file name, or SPIRT_FMT_AUTO when unsure. */
int spirt_data_format_guess(const char *path);
/* "idx", "csv", "libsvm", "npy", "npz" -> format, or SPIRT_FMT_AUTO (0)
 * if unknown. */
int spirt_data_format_parse(const char *name);

/* 0 if name is a valid data set name ([A-Za-z0-9._-], 1..64, no leading
 * '.'), else SPIRT_EINVAL. */
SPIRT_MUST_CHECK int spirt_data_name_check(const char *name);

/*
 * Read a data set.  IDX and .npy take two paths (images or samples,
 * labels); CSV, LIBSVM and .npz one ("-" is stdin); two paths are IDX
 * unless the first ends in .npy (or .npz: refused).  Each IDX, CSV or LIBSVM file may be
 * gzip-compressed or plain.  On success ds owns fresh buffers (free with
 * spirt_dataset_free()).  Returns
 * 0, errno (ENOENT for a missing file: nothing read), ENOMEM, or for bad
 * data SPIRT_EMAGIC, SPIRT_ETRUNC, SPIRT_ESHAPE, SPIRT_EDTYPE, SPIRT_ENAN,
 * SPIRT_EDATA with err filled.  On failure ds is left empty.
 */
SPIRT_MUST_CHECK int spirt_data_read(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *const *paths, size_t npaths,
    const struct spirt_data_opts *opts);
SPIRT_MUST_CHECK int spirt_data_read_idx(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *images, const char *labels);
SPIRT_MUST_CHECK int spirt_data_read_csv(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *path,
    const struct spirt_data_opts *opts);
SPIRT_MUST_CHECK int spirt_data_read_libsvm(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *path,
    const struct spirt_data_opts *opts);

/*
 * NumPy (format 1.0-3.0, C order, little-endian): samples X of shape (N,
 * ...) as float32, float64 (rounded to float32; every value must be a
 * finite float32) or uint8 (kept as bytes, which the tools read as
 * value / 255, as IDX images); a shape (N,) is N samples of one value.
 * Labels y: integers of any width, signed or not, shape (N,), each in
 * 0..SPIRT_DATA_MAXCLASSES-1 and then checked against opts->classes.
 * The sample shape is kept (dims), opts->dim must match the values per
 * sample.  A .npz is a zip archive of X.npy (or x.npy) and y.npy (or
 * Y.npy), or of opts->npz_x and npz_y, each stored or deflated
 * (numpy.savez, numpy.savez_compressed), sizes bounded by the file and
 * the CRC-32 checked.  Returns as spirt_data_read, SPIRT_EDATA for a bad
 * archive.
 */
SPIRT_MUST_CHECK int spirt_data_read_npy(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *xpath, const char *ypath,
    const struct spirt_data_opts *opts);
SPIRT_MUST_CHECK int spirt_data_read_npz(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *path,
    const struct spirt_data_opts *opts);

void spirt_dataset_free(struct spirt_dataset *ds);

/*
 * Check every label lies in 0..classes-1 and below SPIRT_DATA_MAXCLASSES,
 * and set ds->nclasses; classes 0 infers it as the largest label + 1,
 * which must be at least 2 (a model needs two classes).  Returns 0,
 * SPIRT_EINVAL (classes 1 or above the limit) or SPIRT_EDATA with err
 * naming the first bad record (err->file set to file).  The readers call
 * it with opts->classes; CSV and LIBSVM check each line as they parse.
 */
SPIRT_MUST_CHECK int spirt_data_check_labels(struct spirt_dataset *ds,
    struct spirt_data_err *err, const char *file, int32_t classes);

/*
 * Standardisation.  A scale is f32 [2 * feat]: the mean of each feature,
 * then its standard deviation (population: the sum of squared deviations
 * divided by n), both computed in double in sample order and rounded to
 * f32; a deviation that is 0, or rounds to 0, is 1 (a constant feature
 * becomes 0).
 *
 * spirt_data_scale_fit: fit a scale on ds; *scale is malloc'ed (free()).
 * Returns 0 or ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_data_scale_fit(float **scale,
    const struct spirt_dataset *ds);

/*
 * Standardise ds in place with scale: x = (x - mean) / deviation for each
 * feature, in double, stored as f32 (u8 samples become f32).  ds->scale
 * gets a copy of scale and ds->scale_from the name of the data set it was
 * fitted on (from), for spirt_data_store() to record.  Returns 0, ENOMEM,
 * SPIRT_EINVAL (from not a data set name), or SPIRT_ENAN with err naming
 * the first record with a value that is not a finite f32; on error ds is
 * unchanged.
 */
SPIRT_MUST_CHECK int spirt_data_scale_apply(struct spirt_dataset *ds,
    struct spirt_data_err *err, const float *scale, const char *from);

#endif
