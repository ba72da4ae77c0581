/* prim_sodium.c - the AEAD and SHA-256 on libsodium's code (ISC licence) */
#include <sodium.h>

#include "prim.h"

/* CRYPTO = sodium (config.mk): libsodium's code alone (prim.h) */
const char *
spirt_prim_name(void)
{
	return "libsodium";
}

const char *
spirt_prim_version(void)
{
	return sodium_version_string();
}

int
spirt_aead_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
    size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c, tag, NULL, m, n,
	    ad, adlen, NULL, npub, key);
	return 0;
}

int
spirt_aead_open(unsigned char *m, const unsigned char *c, size_t n,
    const unsigned char *tag, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(m, NULL, c, n,
	    tag, ad, adlen, npub, key) != 0) {
		sodium_memzero(m, n);
		return SPIRT_EMAC;
	}
	return 0;
}

void
spirt_sha256(unsigned char out[SPIRT_SHA256_BYTES], const void *p,
    size_t len)
{
	crypto_hash_sha256(out, len ? p : (const void *)"", len);
}
