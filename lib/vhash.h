/* vhash.h - the values' hash: a SHA-256 tree (ISC licence) */
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
 * leaves of different pieces a collision).  The pieces are hashed one
 * after another by spirt_sha256(), the build's SHA-256 (lib/prim.h:
 * OpenSSL's on the CPU's SHA extensions, or libsodium's); the root by
 * libsodium's.  The pieces are independent, so they could be hashed
 * many at a time (lanes, threads): the bytes would be the same.
 */
#define SPIRT_VHASH_BYTES 32
#define SPIRT_VHASH_PIECE 32768

/* The hash above of len bytes at p (p may be NULL when len is 0). */
void spirt_vhash(unsigned char out[SPIRT_VHASH_BYTES], const void *p,
    size_t len);

#endif
