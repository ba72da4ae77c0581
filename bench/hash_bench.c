/* hash_bench.c - the values' hash: OpenSSL's SHA-256 against libsodium's (bench/peer.sh) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "io.h"
#include "ossl.h"
#include "parse.h"

/*
 * Usage: hash_bench BYTES ROUNDS
 *
 * Hashes BYTES of random data ROUNDS times with each of: SHA-256 on
 * OpenSSL's code (spirt_hash, lib/ossl.h), SHA-256 on libsodium's, and
 * libsodium's BLAKE2b-256, the hash of the digests' version 1; the three
 * interleaved, round by round.  Prints one line a hash, "name median_ms
 * GB/s", the median of the rounds.  Exit 1 when OpenSSL's code cannot be
 * had (libcrypto.so.3 missing), 64 on misuse.
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
	static const char *const name[] = { "sha256-openssl",
	    "sha256-libsodium", "blake2b-libsodium" };
	uint64_t n, r;
	unsigned char h[32], *b;
	double *t[3];

	if (argc != 3 || spirt_parse_u64(&n, argv[1], 1, (uint64_t)1 << 32) ||
	    spirt_parse_u64(&r, argv[2], 1, 100000)) {
		fputs("usage: hash_bench BYTES ROUNDS\n", stderr);
		return 64;
	}
	if (sodium_init() < 0 || spirt_ossl_use(SPIRT_OSSL_OPENSSL) != 0) {
		fputs("hash_bench: OpenSSL's code cannot be had\n", stderr);
		return 1;
	}
	b = malloc(n);
	for (int k = 0; k < 3; k++)
		t[k] = malloc(r * sizeof **t);
	if (!b || !t[0] || !t[1] || !t[2]) {
		fputs("hash_bench: out of memory\n", stderr);
		return 1;
	}
	randombytes_buf(b, n);
	for (uint64_t i = 0; i < r; i++)
		for (int k = 0; k < 3; k++) {
			double s = spirt_clock();

			if (k == 0)
				spirt_sha256(h, b, n);
			else if (k == 1)
				crypto_hash_sha256(h, b, n);
			else
				crypto_generichash(h, 32, b, n, NULL, 0);
			t[k][i] = spirt_clock() - s;
		}
	for (int k = 0; k < 3; k++) {
		qsort(t[k], r, sizeof **t, cmp);
		printf("%s %.3f %.2f\n", name[k], 1e3 * t[k][r / 2],
		    n / t[k][r / 2] / 1e9);
	}
	return fflush(stdout) != 0;
}
