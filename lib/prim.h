/* prim.h - the AEAD and SHA-256, on the code the build chose (ISC licence) */
#ifndef SPIRT_PRIM_H
#define SPIRT_PRIM_H

#include <stddef.h>

#include "spirt.h"

/*
 * Two primitives of the protocol (docs/protocol.md) have two
 * implementations that give the same bytes, and the build links one
 * (config.mk's CRYPTO; docs/protocol.md, "Crypto implementations"):
 *
 *   the messages' XChaCha20-Poly1305, IETF variant, 24-byte nonce,
 *   16-byte tag, as libsodium's
 *   crypto_aead_xchacha20poly1305_ietf_*_detached();
 *
 *   the values' SHA-256 (FIPS 180-4), as libsodium's crypto_hash_sha256().
 *
 * CRYPTO = openssl (the default) links lib/prim_openssl.o and OpenSSL 3's
 * libcrypto: libsodium's HChaCha20 derives the subkey from the key and
 * nonce[0..15] and OpenSSL's ChaCha20-Poly1305 (RFC 8439) seals under it
 * with the nonce 0^4 || nonce[16..23], the XChaCha20 construction
 * libsodium itself uses, 2.2 times as fast as libsodium 1.0.18 on
 * AVX-512; OpenSSL's SHA-256 runs the CPU's SHA extensions where it has
 * them (every AMD Zen, Intel since Ice Lake), 5.6 times as fast as
 * libsodium's (docs/performance.md, "Peers").  CRYPTO = sodium links
 * lib/prim_sodium.o: libsodium's code alone.  What runs is what was
 * built; tests/unit/test_crypto checks the build's bytes against
 * libsodium's one-call functions and the protocol's known answers, and CI
 * tests both builds (.ci/run).
 */
#define SPIRT_AEAD_NPUB 24
#define SPIRT_AEAD_KEY 32
#define SPIRT_AEAD_TAG 16
#define SPIRT_SHA256_BYTES 32

/*
 * Seal n bytes of m into c (n bytes; c == m allowed) and tag, under key
 * and npub, with ad[adlen] authenticated.  0, ENOMEM, or SPIRT_ENOTSUP
 * (OpenSSL's providers, as configured, lack ChaCha20-Poly1305).
 */
SPIRT_MUST_CHECK int spirt_aead_seal(unsigned char *c, unsigned char *tag,
    const unsigned char *m, size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key);

/*
 * Open n bytes of c with its tag into m (c == m allowed).  0, SPIRT_EMAC
 * (m is zeroed), ENOMEM, or SPIRT_ENOTSUP (as above).
 */
SPIRT_MUST_CHECK int spirt_aead_open(unsigned char *m, const unsigned char *c,
    size_t n, const unsigned char *tag, const unsigned char *ad,
    size_t adlen, const unsigned char *npub, const unsigned char *key);

/* SHA-256 of len bytes at p (p may be NULL when len is 0) into out. */
void spirt_sha256(unsigned char out[SPIRT_SHA256_BYTES], const void *p,
    size_t len);

/* the implementation the build linked: "openssl" or "libsodium" */
const char *spirt_prim_name(void);

/* the version of the library it runs on, as the library says it (e.g.
 * "OpenSSL 3.0.17 1 Jul 2025", "1.0.18"): static text */
const char *spirt_prim_version(void);

#endif
