/* imb.h - Intel's multi-buffer crypto library, loaded at run time (ISC licence) */
#ifndef SPIRT_IMB_H
#define SPIRT_IMB_H

#include <stddef.h>

#include <intel-ipsec-mb.h>

#include "spirt.h"

/*
 * libIPSec_MB.so.1 (Debian's libipsec-mb1, "Intel's multi-buffer crypto
 * for IPsec") is dlopen()ed on first use, as libcrypto is (lib/ossl.h):
 * a cold start does not load it and no tool links it.  Its manager is a
 * struct of function pointers that init_mb_mgr_auto() sets for the CPU
 * it runs on (AVX-512, AVX2, SSE), so the struct must be the one of the
 * header built with: a library of another version is not used.  Two of
 * its primitives serve spirt, each checked against libsodium's bytes by
 * its user before it is used:
 *
 *   SHA-256 jobs, many messages at once in the vector lanes (lib/vhash.c,
 *   the values' hash);
 *
 *   ChaCha20-Poly1305 (RFC 8439), one message at a time through the
 *   library's "direct" functions (lib/ossl.c, the messages' AEAD under
 *   XChaCha20's subkey): 1.20 times as fast as OpenSSL 3.0's on a Zen 5
 *   EPYC with AVX-512 (docs/performance.md).
 */

/* 1 when the library loaded (the header's version), else 0. */
int spirt_imb_have(void);

/*
 * A manager for SHA-256 jobs, set up for this CPU (one thread's at a
 * time), from a pool of idle ones; NULL without the library or memory.
 * spirt_imb_give() hands it back.
 */
IMB_MGR *spirt_imb_take(void);
void spirt_imb_give(IMB_MGR *m);

/*
 * ChaCha20-Poly1305 (RFC 8439) of n bytes of m into c (c == m allowed)
 * under the 32-byte key and the 12-byte iv, ad[adlen] authenticated, its
 * 16-byte tag into tag.  spirt_imb_chachapoly_open() deciphers c into m
 * (m == c allowed) and writes the tag it computes into tag; the caller
 * compares.  0, or SPIRT_ENOTSUP without the library.
 */
SPIRT_MUST_CHECK int spirt_imb_chachapoly_seal(unsigned char *c,
    unsigned char tag[16], const unsigned char *m, size_t n,
    const unsigned char *ad, size_t adlen, const unsigned char iv[12],
    const unsigned char key[32]);
SPIRT_MUST_CHECK int spirt_imb_chachapoly_open(unsigned char *m,
    unsigned char tag[16], const unsigned char *c, size_t n,
    const unsigned char *ad, size_t adlen, const unsigned char iv[12],
    const unsigned char key[32]);

#endif
