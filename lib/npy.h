/* npy.h - NumPy .npy read and write for spirt tensors */
#ifndef SPIRT_NPY_H
#define SPIRT_NPY_H

#include <stddef.h>

#include "spirt.h"
#include "tensor.h"

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
