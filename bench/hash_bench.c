/* hash_bench.c - a value's crypto: its hash's SHA-256 tree, its AEAD, on the build's code and libsodium's (bench/peer.sh) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "io.h"
#include "parse.h"
#include "prim.h"
#include "vhash.h"

/*
 * Usage: hash_bench BYTES ROUNDS
 *
 * Hashes BYTES of random data ROUNDS times with each of: the values'
 * hash (spirt_hash, the SHA-256 tree of lib/vhash.h, its pieces on the
 * build's SHA-256, lib/prim.h), the whole value's SHA-256 on the build's
 * code (the digests' version 2) and on libsodium's, and libsodium's
 * BLAKE2b-256 (version 1); then seals it with the messages'
 * XChaCha20-Poly1305 in 64 KiB frames, as a streamed answer is
 * (lib/crypto.h), on the build's code (spirt_aead_seal) and libsodium's;
 * the six interleaved, round by round.  Prints one line each, "name
 * median_ms GB/s", the median of the rounds, after a first line "crypto
 * NAME", the code config.mk's CRYPTO chose.  Exit 1 out of memory, 64
 * on misuse.
 */
static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	enum { K = 6 };
	static const char *const name[K] = { "vhash", "sha256",
	    "sha256-libsodium", "blake2b-libsodium", "aead",
	    "aead-libsodium" };
	uint64_t n, r;
	unsigned char h[32], *b, *c, key[32], npub[24], ad[64], tag[16];
	double *t[K];
	int ok = 1;

	if (argc != 3 || spirt_parse_u64(&n, argv[1], 1, (uint64_t)1 << 32) ||
	    spirt_parse_u64(&r, argv[2], 1, 100000)) {
		fputs("usage: hash_bench BYTES ROUNDS\n", stderr);
		return 64;
	}
	b = malloc(n);
	c = malloc(n);
	for (int k = 0; k < K; k++)
		ok &= (t[k] = malloc(r * sizeof **t)) != NULL;
	if (sodium_init() < 0 || !b || !c || !ok) {
		fputs("hash_bench: out of memory\n", stderr);
		return 1;
	}
	randombytes_buf(b, n);
	randombytes_buf(key, sizeof key);
	randombytes_buf(npub, sizeof npub);
	randombytes_buf(ad, sizeof ad);
	for (uint64_t i = 0; i < r; i++)
		for (int k = 0; k < K; k++) {
			double s = spirt_clock();

			if (k == 4) {
				for (uint64_t o = 0; o < n; o += 65536)
					if (spirt_aead_seal(c + o, tag, b + o,
					    n - o < 65536 ? n - o : 65536, ad,
					    sizeof ad, npub, key) != 0)
						return 1;
			} else if (k == 5) {
				for (uint64_t o = 0; o < n; o += 65536)
					crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
					    c + o, tag, NULL, b + o,
					    n - o < 65536 ? n - o : 65536, ad,
					    sizeof ad, NULL, npub, key);
			} else if (k == 0)
				spirt_vhash(h, b, n);
			else if (k == 1)
				spirt_sha256(h, b, n);
			else if (k == 2)
				crypto_hash_sha256(h, b, n);
			else
				crypto_generichash(h, 32, b, n, NULL, 0);
			t[k][i] = spirt_clock() - s;
		}
	printf("crypto %s\n", spirt_prim_name());
	for (int k = 0; k < K; k++) {
		qsort(t[k], r, sizeof **t, cmp);
		printf("%s %.3f %.2f\n", name[k], 1e3 * t[k][r / 2],
		    n / t[k][r / 2] / 1e9);
	}
	return fflush(stdout) != 0;
}
