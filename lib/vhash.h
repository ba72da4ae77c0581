/* vhash.h - the values' hash: a SHA-256 tree, many lanes at once (ISC licence) */
#ifndef SPIRT_VHASH_H
#define SPIRT_VHASH_H

#include <stddef.h>

#include "spirt.h"

/*
 * The hash of the values peers sign and compare (docs/protocol.md,
 * "Values' hashes"): SHA-256 over a fixed prefix, the value's length and
 * the SHA-256 of each of its 32 KiB pieces in order,
 *
 *   leaf i = SHA-256(value[i * 32768 .. min((i + 1) * 32768, len)))
 *   hash   = SHA-256("SPIRT-TREE-SHA256" || le64(len) || le32(32768) ||
 *                    leaf 0 || ... || leaf n-1),   n = ceil(len / 32768)
 *
 * Any collision of it is a collision of SHA-256 (the root fixes len and
 * so n; equal roots with equal inputs mean equal leaves, and equal
 * leaves of different pieces a collision).  The pieces are independent,
 * so they are hashed many at a time: Intel's multi-buffer library
 * (libIPSec_MB.so.1, Debian's libipsec-mb1) runs 16 of them in the lanes
 * of AVX-512, or two at once on the SHA extensions, 2.8 and 1.45 times
 * as fast as one stream of OpenSSL's SHA-256 on an AMD EPYC Zen 5
 * (docs/performance.md).  The library is dlopen()ed on first use, as
 * libcrypto is (lib/ossl.h), and checked against spirt_sha256() on a
 * fixed input; where it does not load, is another version than the
 * header this was built with, or differs, each piece is hashed by
 * spirt_sha256() (OpenSSL's or libsodium's code): the same bytes, one
 * piece after another.
 */
#define SPIRT_VHASH_BYTES 32
#define SPIRT_VHASH_PIECE 32768

/* The hash above of len bytes at p (p may be NULL when len is 0). */
void spirt_vhash(unsigned char out[SPIRT_VHASH_BYTES], const void *p,
    size_t len);

/*
 * Pin how the pieces are hashed (tests, benchmarks): SPIRT_VHASH_AUTO
 * (the choice above), _SERIAL (spirt_sha256(), piece by piece) or _MB
 * (the multi-buffer library).  0, SPIRT_EINVAL for another value, or
 * SPIRT_ENOTSUP when the library is asked for and cannot be had.
 */
enum { SPIRT_VHASH_AUTO, SPIRT_VHASH_SERIAL, SPIRT_VHASH_MB };
SPIRT_MUST_CHECK int spirt_vhash_use(int which);

#endif
