/* vhash.c - the values' hash: a SHA-256 tree (ISC licence) */
#include <string.h>

#include <sodium.h>

#include "le.h"
#include "prim.h"
#include "vhash.h"

#define BATCH 64                /* leaves hashed into the root at once */
#define PREFIX "SPIRT-TREE-SHA256"
#define PREFIX_LEN (sizeof PREFIX - 1)

static size_t
pieces(size_t len)
{
	return len / SPIRT_VHASH_PIECE + (len % SPIRT_VHASH_PIECE != 0);
}

static size_t
piece_len(size_t len, size_t i)
{
	size_t off = i * SPIRT_VHASH_PIECE;

	return len - off < SPIRT_VHASH_PIECE ? len - off : SPIRT_VHASH_PIECE;
}

/* leaves[i] for the n pieces of p, piece after piece */
static void
leaves_serial(unsigned char *leaves, const unsigned char *p, size_t len)
{
	size_t n = pieces(len);

	for (size_t i = 0; i < n; i++)
		spirt_sha256(leaves + 32 * i, p + i * SPIRT_VHASH_PIECE,
		    piece_len(len, i));
}

void
spirt_vhash(unsigned char out[SPIRT_VHASH_BYTES], const void *p, size_t len)
{
	const unsigned char *v = p;
	unsigned char head[PREFIX_LEN + 8 + 4], leaves[32 * BATCH];
	size_t n = pieces(len);
	crypto_hash_sha256_state st;

	memcpy(head, PREFIX, PREFIX_LEN);
	spirt_le_put64(head + PREFIX_LEN, len);
	spirt_le_put32(head + PREFIX_LEN + 8, SPIRT_VHASH_PIECE);
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, head, sizeof head);
	/* the leaves BATCH at a time (a root's input is a 1024th of the
	 * value's size; no allocation, whatever the size) */
	for (size_t i = 0; i < n; i += BATCH) {
		size_t k = n - i < BATCH ? n - i : BATCH;
		const unsigned char *q = v + i * SPIRT_VHASH_PIECE;
		size_t ql = i + k == n ? len - i * SPIRT_VHASH_PIECE :
		    k * SPIRT_VHASH_PIECE;

		leaves_serial(leaves, q, ql);
		crypto_hash_sha256_update(&st, leaves, 32 * k);
	}
	crypto_hash_sha256_final(&st, out);
}
