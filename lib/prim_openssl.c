/* prim_openssl.c - the AEAD and SHA-256 on OpenSSL's code (ISC licence) */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "prim.h"

/*
 * OpenSSL 3's libcrypto, linked (CRYPTO = openssl, config.mk).  Its
 * ChaCha20-Poly1305 and SHA-256 are fetched once from the default
 * provider and kept; a failure to (a configuration whose providers lack
 * them) leaves them NULL: the AEAD then answers SPIRT_ENOTSUP and the
 * hash is libsodium's, the same bytes.
 */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static EVP_CIPHER *cipher;
static EVP_MD *sha256;

static void
fetch(void)
{
	cipher = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

const char *
spirt_prim_name(void)
{
	return "openssl";
}

const char *
spirt_prim_version(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}

/* the XChaCha20 subkey and the RFC 8439 nonce of npub (prim.h) */
static void
xsub(unsigned char sub[32], unsigned char iv[12], const unsigned char *npub,
    const unsigned char *key)
{
	crypto_core_hchacha20(sub, npub, key, NULL);
	memset(iv, 0, 4);
	memcpy(iv + 4, npub + 16, 8);
}

/* ChaCha20-Poly1305 over n bytes in pieces an int can count */
static int
run(EVP_CIPHER_CTX *x, unsigned char *out, const unsigned char *in,
    size_t n, const unsigned char *ad, size_t adlen)
{
	const size_t piece = (size_t)1 << 30;
	int l;

	for (size_t off = 0; off < adlen; off += piece)
		if (EVP_CipherUpdate(x, NULL, &l, ad + off,
		    (int)(adlen - off < piece ? adlen - off : piece)) != 1)
			return -1;
	for (size_t off = 0; off < n; off += piece)
		if (EVP_CipherUpdate(x, out + off, &l, in + off,
		    (int)(n - off < piece ? n - off : piece)) != 1)
			return -1;
	return 0;
}

int
spirt_aead_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
    size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	unsigned char sub[32], iv[12];
	EVP_CIPHER_CTX *x;
	int l, rc = ENOMEM;

	pthread_once(&once, fetch);
	if (cipher == NULL)
		return SPIRT_ENOTSUP;
	if ((x = EVP_CIPHER_CTX_new()) == NULL)
		return ENOMEM;
	xsub(sub, iv, npub, key);
	if (EVP_CipherInit_ex(x, cipher, NULL, sub, iv, 1) == 1 &&
	    run(x, c, m, n, ad, adlen) == 0 &&
	    EVP_CipherFinal_ex(x, c + n, &l) == 1 &&
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, SPIRT_AEAD_TAG,
	    tag) == 1)
		rc = 0;
	EVP_CIPHER_CTX_free(x);
	sodium_memzero(sub, sizeof sub);
	return rc;
}

int
spirt_aead_open(unsigned char *m, const unsigned char *c, size_t n,
    const unsigned char *tag, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	unsigned char sub[32], iv[12], t[SPIRT_AEAD_TAG];
	EVP_CIPHER_CTX *x;
	int l, rc = ENOMEM;

	pthread_once(&once, fetch);
	if (cipher == NULL)
		return SPIRT_ENOTSUP;
	if ((x = EVP_CIPHER_CTX_new()) == NULL)
		return ENOMEM;
	memcpy(t, tag, sizeof t);       /* tag may lie in what m overwrites */
	xsub(sub, iv, npub, key);
	if (EVP_CipherInit_ex(x, cipher, NULL, sub, iv, 0) == 1 &&
	    run(x, m, c, n, ad, adlen) == 0 &&
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, SPIRT_AEAD_TAG,
	    t) == 1)
		rc = EVP_CipherFinal_ex(x, m + n, &l) == 1 ? 0 : SPIRT_EMAC;
	EVP_CIPHER_CTX_free(x);
	sodium_memzero(sub, sizeof sub);
	/* OpenSSL writes before it checks: nothing unauthenticated stays */
	if (rc != 0)
		sodium_memzero(m, n);
	return rc;
}

void
spirt_sha256(unsigned char out[SPIRT_SHA256_BYTES], const void *p,
    size_t len)
{
	unsigned int n = SPIRT_SHA256_BYTES;

	pthread_once(&once, fetch);
	/* EVP_Digest wants a pointer even for no bytes; it fails only out
	 * of memory: then libsodium's bytes */
	if (sha256 != NULL && EVP_Digest(len ? p : "", len, out, &n, sha256,
	    NULL) == 1 && n == SPIRT_SHA256_BYTES)
		return;
	crypto_hash_sha256(out, len ? p : (const void *)"", len);
}
