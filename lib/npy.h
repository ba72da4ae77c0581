/* npy.h - NumPy .npy read and write for spirt tensors */
#ifndef SPIRT_NPY_H
#define SPIRT_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "tensor.h"

/*
 * A .npy header as written (any dtype): its descr text (not NUL-ended,
 * e.g. "<i2"), order, shape, and the bytes after it.
 */
struct spirt_npy_head {
	const char *descr;
	size_t descrlen;
	int fortran;
	unsigned rank;
	uint64_t dims[SPIRT_MAXRANK];
	const unsigned char *data;      /* into the buffer parsed */
	size_t datalen;                 /* bytes from data to the end */
};

/*
 * Parse the header of a .npy file image of len bytes (format 1.0, 2.0 or
 * 3.0).  Returns 0, SPIRT_ENPY (bad header), SPIRT_ESHAPE (rank above
 * SPIRT_MAXRANK).  Neither the dtype nor the data's size is checked.
 */
SPIRT_MUST_CHECK int spirt_npy_head(struct spirt_npy_head *hd,
    const void *buf, size_t len);

/*
 * Parse a whole .npy file image (format 1.0, 2.0 or 3.0; little-endian
 * '<f4' '<f8' '<i4' '<i8' '|u1'; C order, or Fortran order for rank <= 1).
 * Fills t (metadata unset) and points *data into buf.  Returns 0,
 * SPIRT_ENPY (bad header), SPIRT_EDTYPE (unsupported dtype), SPIRT_ESHAPE,
 * SPIRT_ETRUNC (file shorter than its shape says).
 */
SPIRT_MUST_CHECK int spirt_npy_parse(struct spirt_tensor *t,
    const void **data, const void *buf, size_t len);

/*
 * Write the .npy 1.0 header for t into out (cap >= 128 + 21 * rank);
 * *hlen gets its length, a multiple of 64 so the data is aligned.
 */
SPIRT_MUST_CHECK int spirt_npy_header(char *out, size_t cap, size_t *hlen,
    const struct spirt_tensor *t);

#endif
