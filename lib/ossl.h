/* ossl.h - libsodium's bytes on OpenSSL's faster code (ISC licence) */
#ifndef SPIRT_OSSL_H
#define SPIRT_OSSL_H

#include <stddef.h>

#include "spirt.h"

/*
 * Two primitives of the protocol (docs/protocol.md) have two
 * implementations that give the same bytes:
 *
 *   the messages' XChaCha20-Poly1305, IETF variant, 24-byte nonce,
 *   16-byte tag, as libsodium's
 *   crypto_aead_xchacha20poly1305_ietf_*_detached(): on OpenSSL, with
 *   libsodium's HChaCha20 deriving the subkey from the key and
 *   nonce[0..15] and OpenSSL's ChaCha20-Poly1305 (RFC 8439) sealing
 *   under it with the nonce 0^4 || nonce[16..23], the XChaCha20
 *   construction libsodium itself uses; 2.2 times as fast as libsodium
 *   1.0.18 on AVX-512; or, faster still where it loads, the same on the
 *   ChaCha20-Poly1305 of Intel's multi-buffer library (lib/imb.h), 1.20
 *   times OpenSSL's on a Zen 5 EPYC;
 *
 *   the values' SHA-256 (FIPS 180-4), as libsodium's crypto_hash_sha256():
 *   OpenSSL's runs the CPU's SHA extensions where it has them (every
 *   AMD Zen, Intel since Ice Lake), 5.6 times as fast as libsodium's and
 *   2.7 times libsodium's BLAKE2b, the hash it replaced
 *   (docs/performance.md, "Peers").
 *
 * OpenSSL 3's libcrypto.so.3 is dlopen()ed on first use, as libcurl is
 * (lib/curldl.h), so a cold start does not load it and no tool links it;
 * it is on every machine that has libcurl4.  On load each primitive is
 * computed both ways on a fixed input; OpenSSL's is used only where both
 * agree, and so is Intel's library's AEAD.  libsodium's code runs where
 * neither loads, lacks a primitive or differs, or where the environment has
 * SPIRT_CRYPTO=libsodium.  The choice is made once per process, on first
 * use.  tests/unit/test_crypto checks the two against each other and
 * against libsodium's one-call functions.
 */
#define SPIRT_AEAD_NPUB 24
#define SPIRT_AEAD_KEY 32
#define SPIRT_AEAD_TAG 16
#define SPIRT_SHA256_BYTES 32

enum { SPIRT_OSSL_AUTO, SPIRT_OSSL_SODIUM, SPIRT_OSSL_OPENSSL,
	SPIRT_OSSL_IPSECMB };

/*
 * Seal n bytes of m into c (n bytes; c == m allowed) and tag, under key
 * and npub, with ad[adlen] authenticated.  0, or ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_aead_seal(unsigned char *c, unsigned char *tag,
    const unsigned char *m, size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key);

/*
 * Open n bytes of c with its tag into m (c == m allowed).  0, SPIRT_EMAC
 * (m is zeroed), or ENOMEM.
 */
SPIRT_MUST_CHECK int spirt_aead_open(unsigned char *m, const unsigned char *c,
    size_t n, const unsigned char *tag, const unsigned char *ad,
    size_t adlen, const unsigned char *npub, const unsigned char *key);

/* SHA-256 of len bytes at p (p may be NULL when len is 0) into out. */
void spirt_sha256(unsigned char out[SPIRT_SHA256_BYTES], const void *p,
    size_t len);

/*
 * Pin the implementation (tests, benchmarks): SPIRT_OSSL_AUTO (the
 * choice above, SPIRT_CRYPTO included), _SODIUM or _OPENSSL (both
 * primitives), or _IPSECMB (the AEAD on Intel's library, SHA-256 as
 * AUTO).  0, SPIRT_EINVAL for another value, or SPIRT_ENOTSUP when
 * OpenSSL's or Intel's is asked for and cannot be had.
 */
SPIRT_MUST_CHECK int spirt_ossl_use(int which);

/*
 * SPIRT_CRYPTO as the environment has it: 0 when it is unset, empty,
 * "openssl" (the choice above) or "libsodium"; SPIRT_EENV for another
 * value, which the choice above would take as unset (a tool that reads
 * credentials refuses it: lib/remote.c).
 */
SPIRT_MUST_CHECK int spirt_ossl_env(void);

/* the AEAD's implementation in use: "ipsec-mb", "openssl" or
 * "libsodium" */
const char *spirt_ossl_name(void);

#endif
