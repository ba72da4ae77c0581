/* ossl.c - libsodium's bytes on OpenSSL's faster code (ISC licence) */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "dl.h"
#include "imb.h"
#include "ossl.h"

/*
 * OpenSSL 3's libcrypto, loaded on first use (ossl.h says why).  The
 * types are <openssl/evp.h>'s; only these nine functions are called.
 */
#define SSL_SONAME "libcrypto.so.3"

static struct {
	EVP_CIPHER *(*fetch)(OSSL_LIB_CTX *, const char *, const char *);
	EVP_CIPHER_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_CIPHER_CTX *);
	int (*init)(EVP_CIPHER_CTX *, const EVP_CIPHER *, ENGINE *,
	    const unsigned char *, const unsigned char *, int);
	int (*update)(EVP_CIPHER_CTX *, unsigned char *, int *,
	    const unsigned char *, int);
	int (*final)(EVP_CIPHER_CTX *, unsigned char *, int *);
	int (*ctrl)(EVP_CIPHER_CTX *, int, int, void *);
	EVP_MD *(*md_fetch)(OSSL_LIB_CTX *, const char *, const char *);
	int (*digest)(const void *, size_t, unsigned char *, unsigned int *,
	    const EVP_MD *, ENGINE *);
	EVP_CIPHER *cipher;             /* fetched once, kept */
	EVP_MD *sha256;                 /* likewise */
} ssl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int have_ssl;                    /* set once, by load() */
static int have_imb;                    /* likewise: lib/imb.h's AEAD */
static int env_sodium;                  /* SPIRT_CRYPTO=libsodium */
static int env_ssl;                     /* SPIRT_CRYPTO=openssl */
static atomic_int pinned = SPIRT_OSSL_AUTO;

static int ssl_seal(unsigned char *, unsigned char *, const unsigned char *,
    size_t, const unsigned char *, size_t, const unsigned char *,
    const unsigned char *);
static int ssl_sha256(unsigned char *, const void *, size_t);
static int imb_seal(unsigned char *, unsigned char *, const unsigned char *,
    size_t, const unsigned char *, size_t, const unsigned char *,
    const unsigned char *);
static int imb_open(unsigned char *, const unsigned char *, size_t,
    const unsigned char *, const unsigned char *, size_t,
    const unsigned char *, const unsigned char *);

/* Intel's library's answers are libsodium's, sealed and opened (in
 * place too), with and without text and data, or it is not used */
static int
imb_self_test(void)
{
	unsigned char key[32], npub[24], ad[13], m[200], c1[200], c2[200];
	unsigned char t1[16], t2[16];

	if (!spirt_imb_have())
		return 0;
	for (size_t i = 0; i < sizeof m; i++)
		m[i] = (unsigned char)(i * 5 + 3);
	memcpy(key, m + 11, sizeof key);
	memcpy(npub, m + 60, sizeof npub);
	memcpy(ad, m + 120, sizeof ad);
	for (size_t k = 0; k < 2; k++) {
		size_t n = k ? sizeof m : 0, al = k ? sizeof ad : 0;

		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c1, t1,
		    NULL, m, n, ad, al, NULL, npub, key);
		memcpy(c2, m, sizeof m);
		if (imb_seal(c2, t2, c2, n, ad, al, npub, key) != 0 ||
		    memcmp(c1, c2, n) != 0 || memcmp(t1, t2, sizeof t1) != 0 ||
		    imb_open(c2, c2, n, t2, ad, al, npub, key) != 0 ||
		    memcmp(c2, m, n) != 0)
			return 0;
		t2[0] ^= 1;
		if (imb_open(c2, c1, n, t2, ad, al, npub, key) != SPIRT_EMAC)
			return 0;
	}
	return 1;
}

/* OpenSSL's answers for a fixed input are libsodium's, or it is not used */
static int
self_test(void)
{
	unsigned char key[32], npub[24], ad[13], m[200], c1[200], c2[200];
	unsigned char t1[16], t2[16], h1[32], h2[32];

	for (size_t i = 0; i < sizeof m; i++)
		m[i] = (unsigned char)(i * 7 + 1);
	memcpy(key, m + 3, sizeof key);
	memcpy(npub, m + 50, sizeof npub);
	memcpy(ad, m + 90, sizeof ad);
	crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c1, t1, NULL, m,
	    sizeof m, ad, sizeof ad, NULL, npub, key);
	crypto_hash_sha256(h1, m, sizeof m);
	return ssl_seal(c2, t2, m, sizeof m, ad, sizeof ad, npub, key) == 0 &&
	    memcmp(c1, c2, sizeof c1) == 0 && memcmp(t1, t2, sizeof t1) == 0 &&
	    ssl_sha256(h2, m, sizeof m) == 0 && memcmp(h1, h2, sizeof h1) == 0;
}

static void
load(void)
{
	const struct spirt_dlsym t[] = {
		{ "EVP_CIPHER_fetch", &ssl.fetch },
		{ "EVP_CIPHER_CTX_new", &ssl.ctx_new },
		{ "EVP_CIPHER_CTX_free", &ssl.ctx_free },
		{ "EVP_CipherInit_ex", &ssl.init },
		{ "EVP_CipherUpdate", &ssl.update },
		{ "EVP_CipherFinal_ex", &ssl.final },
		{ "EVP_CIPHER_CTX_ctrl", &ssl.ctrl },
		{ "EVP_MD_fetch", &ssl.md_fetch },
		{ "EVP_Digest", &ssl.digest },
	};
	const char *env = getenv("SPIRT_CRYPTO");
	void *dl;

	env_sodium = env && strcmp(env, "libsodium") == 0;
	env_ssl = env && strcmp(env, "openssl") == 0;
	if (sodium_init() < 0)
		return;
	have_imb = imb_self_test();
	if ((dl = dlopen(SSL_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL)
		return;
	if (spirt_dl_syms(dl, t, sizeof t / sizeof t[0]) != NULL)
		goto fail;
	if ((ssl.cipher = ssl.fetch(NULL, "ChaCha20-Poly1305", NULL)) == NULL ||
	    (ssl.sha256 = ssl.md_fetch(NULL, "SHA256", NULL)) == NULL)
		goto fail;
	if (!self_test())
		goto fail;      /* what was fetched stays: a few bytes, once */
	have_ssl = 1;   /* libcrypto stays loaded for the life of the process */
	return;
fail:
	if (ssl.cipher == NULL && ssl.sha256 == NULL)
		dlclose(dl);
	memset(&ssl, 0, sizeof ssl);
}

/* whether OpenSSL's SHA-256 is the one in use */
static int
use_ssl(void)
{
	int p;

	pthread_once(&once, load);
	p = atomic_load(&pinned);
	if (p == SPIRT_OSSL_AUTO && env_sodium)
		return 0;
	return p == SPIRT_OSSL_SODIUM ? 0 : have_ssl;
}

/* the AEAD's implementation: Intel's library's, OpenSSL's or libsodium's */
enum { A_SODIUM, A_SSL, A_IMB };

static int
aead_impl(void)
{
	int p;

	pthread_once(&once, load);
	p = atomic_load(&pinned);
	if (p == SPIRT_OSSL_AUTO && env_sodium)
		return A_SODIUM;
	if (p == SPIRT_OSSL_AUTO && env_ssl)
		p = SPIRT_OSSL_OPENSSL;
	switch (p) {
	case SPIRT_OSSL_SODIUM:
		return A_SODIUM;
	case SPIRT_OSSL_OPENSSL:
		return have_ssl ? A_SSL : A_SODIUM;
	default:
		return have_imb ? A_IMB : have_ssl ? A_SSL : A_SODIUM;
	}
}

int
spirt_ossl_use(int which)
{
	pthread_once(&once, load);
	if (which != SPIRT_OSSL_AUTO && which != SPIRT_OSSL_SODIUM &&
	    which != SPIRT_OSSL_OPENSSL && which != SPIRT_OSSL_IPSECMB)
		return SPIRT_EINVAL;
	if ((which == SPIRT_OSSL_OPENSSL && !have_ssl) ||
	    (which == SPIRT_OSSL_IPSECMB && !have_imb))
		return SPIRT_ENOTSUP;
	atomic_store(&pinned, which);
	return 0;
}

int
spirt_ossl_env(void)
{
	const char *env = getenv("SPIRT_CRYPTO");

	if (env == NULL || *env == '\0' || strcmp(env, "openssl") == 0 ||
	    strcmp(env, "libsodium") == 0)
		return 0;
	return SPIRT_EENV;
}

const char *
spirt_ossl_name(void)
{
	static const char *const name[] = { "libsodium", "openssl",
	    "ipsec-mb" };

	return name[aead_impl()];
}

/* the XChaCha20 subkey and the RFC 8439 nonce of npub (ossl.h) */
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
ssl_run(EVP_CIPHER_CTX *x, unsigned char *out, const unsigned char *in,
    size_t n, const unsigned char *ad, size_t adlen)
{
	const size_t piece = (size_t)1 << 30;
	int l;

	for (size_t off = 0; off < adlen; off += piece)
		if (ssl.update(x, NULL, &l, ad + off, (int)(adlen - off < piece ?
		    adlen - off : piece)) != 1)
			return -1;
	for (size_t off = 0; off < n; off += piece)
		if (ssl.update(x, out + off, &l, in + off, (int)(n - off <
		    piece ? n - off : piece)) != 1)
			return -1;
	return 0;
}

static int
ssl_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
    size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	unsigned char sub[32], iv[12];
	EVP_CIPHER_CTX *x;
	int l, rc = ENOMEM;

	if ((x = ssl.ctx_new()) == NULL)
		return ENOMEM;
	xsub(sub, iv, npub, key);
	if (ssl.init(x, ssl.cipher, NULL, sub, iv, 1) == 1 &&
	    ssl_run(x, c, m, n, ad, adlen) == 0 &&
	    ssl.final(x, c + n, &l) == 1 &&
	    ssl.ctrl(x, EVP_CTRL_AEAD_GET_TAG, SPIRT_AEAD_TAG, tag) == 1)
		rc = 0;
	ssl.ctx_free(x);
	sodium_memzero(sub, sizeof sub);
	return rc;
}

static int
ssl_open(unsigned char *m, const unsigned char *c, size_t n,
    const unsigned char *tag, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	unsigned char sub[32], iv[12], t[SPIRT_AEAD_TAG];
	EVP_CIPHER_CTX *x;
	int l, rc = ENOMEM;

	if ((x = ssl.ctx_new()) == NULL)
		return ENOMEM;
	memcpy(t, tag, sizeof t);       /* tag may lie in what m overwrites */
	xsub(sub, iv, npub, key);
	if (ssl.init(x, ssl.cipher, NULL, sub, iv, 0) == 1 &&
	    ssl_run(x, m, c, n, ad, adlen) == 0 &&
	    ssl.ctrl(x, EVP_CTRL_AEAD_SET_TAG, SPIRT_AEAD_TAG, t) == 1)
		rc = ssl.final(x, m + n, &l) == 1 ? 0 : SPIRT_EMAC;
	ssl.ctx_free(x);
	sodium_memzero(sub, sizeof sub);
	/* OpenSSL writes before it checks: nothing unauthenticated stays */
	if (rc != 0)
		sodium_memzero(m, n);
	return rc;
}

/* the same on Intel's library (lib/imb.h), under the same subkey */
static int
imb_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
    size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	unsigned char sub[32], iv[12];
	int rc;

	xsub(sub, iv, npub, key);
	rc = spirt_imb_chachapoly_seal(c, tag, m, n, ad, adlen, iv, sub);
	sodium_memzero(sub, sizeof sub);
	return rc;
}

static int
imb_open(unsigned char *m, const unsigned char *c, size_t n,
    const unsigned char *tag, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	unsigned char sub[32], iv[12], t[SPIRT_AEAD_TAG], got[SPIRT_AEAD_TAG];
	int rc;

	memcpy(t, tag, sizeof t);       /* tag may lie in what m overwrites */
	xsub(sub, iv, npub, key);
	rc = spirt_imb_chachapoly_open(m, got, c, n, ad, adlen, iv, sub);
	sodium_memzero(sub, sizeof sub);
	if (rc == 0 && crypto_verify_16(got, t) != 0)
		rc = SPIRT_EMAC;
	/* deciphered before it is checked: nothing unauthenticated stays */
	if (rc != 0)
		sodium_memzero(m, n);
	return rc;
}

int
spirt_aead_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
    size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	switch (aead_impl()) {
	case A_IMB:
		return imb_seal(c, tag, m, n, ad, adlen, npub, key);
	case A_SSL:
		return ssl_seal(c, tag, m, n, ad, adlen, npub, key);
	}
	crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c, tag, NULL, m, n,
	    ad, adlen, NULL, npub, key);
	return 0;
}

int
spirt_aead_open(unsigned char *m, const unsigned char *c, size_t n,
    const unsigned char *tag, const unsigned char *ad, size_t adlen,
    const unsigned char *npub, const unsigned char *key)
{
	switch (aead_impl()) {
	case A_IMB:
		return imb_open(m, c, n, tag, ad, adlen, npub, key);
	case A_SSL:
		return ssl_open(m, c, n, tag, ad, adlen, npub, key);
	}
	if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(m, NULL, c, n,
	    tag, ad, adlen, npub, key) != 0) {
		sodium_memzero(m, n);
		return SPIRT_EMAC;
	}
	return 0;
}

/* ---- SHA-256 ---- */

static int
ssl_sha256(unsigned char *out, const void *p, size_t len)
{
	unsigned int n = SPIRT_SHA256_BYTES;

	/* EVP_Digest wants a pointer even for no bytes */
	return ssl.digest(len ? p : "", len, out, &n, ssl.sha256, NULL) == 1 &&
	    n == SPIRT_SHA256_BYTES ? 0 : -1;
}

void
spirt_sha256(unsigned char out[SPIRT_SHA256_BYTES], const void *p,
    size_t len)
{
	/* OpenSSL fails only out of memory: then libsodium's bytes */
	if (use_ssl() && ssl_sha256(out, p, len) == 0)
		return;
	crypto_hash_sha256(out, len ? p : (const void *)"", len);
}
