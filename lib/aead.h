/* aead.h - XChaCha20-Poly1305 for sealed messages (ISC licence) */
#ifndef SPIRT_AEAD_H
#define SPIRT_AEAD_H

#include <stddef.h>

#include "spirt.h"

/*
 * The one AEAD of the protocol (docs/protocol.md): XChaCha20-Poly1305,
 * IETF variant, 24-byte nonce, 16-byte tag, as libsodium's
 * crypto_aead_xchacha20poly1305_ietf_*_detached().  Two implementations
 * give the same bytes:
 *
 *   openssl   libsodium's HChaCha20 derives the subkey from the key and
 *             nonce[0..15]; OpenSSL's ChaCha20-Poly1305 (RFC 8439) seals
 *             under it with the nonce 0^4 || nonce[16..23].  That is the
 *             XChaCha20 construction libsodium itself uses, and OpenSSL's
 *             assembly runs it 2.2 times as fast as libsodium 1.0.18 on
 *             AVX-512 (docs/performance.md, "Peers").  libcrypto.so.3 is
 *             dlopen()ed on first use, as libcurl is (lib/curldl.h), so
 *             a cold start does not load it; it is on every machine that
 *             has libcurl4.
 *   libsodium where libcrypto.so.3 does not load, has no
 *             ChaCha20-Poly1305 or gives other bytes than libsodium for
 *             a fixed input (checked once, on load), or where the
 *             environment has SPIRT_AEAD=libsodium.
 *
 * The choice is made once per process, on first use.  tests/unit/test_crypto checks the
 * two against each other and against libsodium's one-call functions.
 */
#define SPIRT_AEAD_NPUB 24
#define SPIRT_AEAD_KEY 32
#define SPIRT_AEAD_TAG 16

enum { SPIRT_AEAD_AUTO, SPIRT_AEAD_SODIUM, SPIRT_AEAD_OPENSSL };

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

/*
 * Pin the implementation (tests, benchmarks): SPIRT_AEAD_AUTO (the
 * choice above, SPIRT_AEAD included), _SODIUM or _OPENSSL.  0, or SPIRT_ENOTSUP when
 * OpenSSL's is asked for and cannot be had.
 */
SPIRT_MUST_CHECK int spirt_aead_use(int which);

/* the implementation in use: "openssl" or "libsodium" */
const char *spirt_aead_name(void);

#endif
