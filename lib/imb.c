/* imb.c - Intel's multi-buffer crypto library, loaded at run time (ISC licence) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <intel-ipsec-mb.h>
#include <sodium.h>

#include "dl.h"
#include "imb.h"

#define MB_SONAME "libIPSec_MB.so.1"
#define MB_POOL 16                      /* idle managers kept */

static struct {
	IMB_MGR *(*alloc)(uint64_t);
	void (*init_auto)(IMB_MGR *, IMB_ARCH *);
	void (*free)(IMB_MGR *);
	unsigned (*version)(void);
	/* the direct ChaCha20-Poly1305 functions, as a manager set them
	 * up for this CPU: they take no manager, so any thread calls them */
	chacha_poly_init_t cp_init;
	chacha_poly_enc_dec_update_t cp_enc, cp_dec;
	chacha_poly_finalize_t cp_final;
} mb;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int have_mb;                     /* set once, by load() */

/* idle managers (a manager is ~40 us to set up, and one thread's at a
 * time): taken and given back under the lock, and made under it too (the
 * library does not say its setup may run in two threads at once) */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static IMB_MGR *pool[MB_POOL];
static size_t npool;

static void
load(void)
{
	const struct spirt_dlsym t[] = {
		{ "alloc_mb_mgr", &mb.alloc },
		{ "init_mb_mgr_auto", &mb.init_auto },
		{ "free_mb_mgr", &mb.free },
		{ "imb_get_version", &mb.version },
	};
	IMB_MGR *m;
	IMB_ARCH arch;
	void *dl;

	if ((dl = dlopen(MB_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL)
		return;
	if (spirt_dl_syms(dl, t, sizeof t / sizeof t[0]) != NULL ||
	    mb.version() != IMB_VERSION_NUM || (m = mb.alloc(0)) == NULL) {
		memset(&mb, 0, sizeof mb);
		dlclose(dl);
		return;
	}
	mb.init_auto(m, &arch);
	mb.cp_init = m->chacha20_poly1305_init;
	mb.cp_enc = m->chacha20_poly1305_enc_update;
	mb.cp_dec = m->chacha20_poly1305_dec_update;
	mb.cp_final = m->chacha20_poly1305_finalize;
	pool[npool++] = m;      /* (before anyone can take one) */
	have_mb = 1;    /* the library stays loaded for the life of the process */
}

int
spirt_imb_have(void)
{
	pthread_once(&once, load);
	return have_mb;
}

IMB_MGR *
spirt_imb_take(void)
{
	IMB_MGR *m = NULL;
	IMB_ARCH arch;

	if (!spirt_imb_have())
		return NULL;
	pthread_mutex_lock(&pool_lock);
	if (npool > 0)
		m = pool[--npool];
	else if ((m = mb.alloc(0)) != NULL)
		mb.init_auto(m, &arch);
	pthread_mutex_unlock(&pool_lock);
	return m;
}

void
spirt_imb_give(IMB_MGR *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&pool_lock);
	if (npool < MB_POOL) {
		pool[npool++] = m;
		m = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	if (m)
		mb.free(m);
}

/* the library reads its pointers even for no bytes */
static const unsigned char none[1];

/* seal (dec 0) or open (dec 1) n bytes of in into out */
static int
chachapoly(int dec, unsigned char *out, unsigned char tag[16],
    const unsigned char *in, size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char iv[12], const unsigned char key[32])
{
	struct chacha20_poly1305_context_data x;

	if (!spirt_imb_have())
		return SPIRT_ENOTSUP;
	mb.cp_init(key, &x, iv, adlen ? ad : none, adlen);
	if (n)
		(dec ? mb.cp_dec : mb.cp_enc)(key, &x, out, in, n);
	mb.cp_final(&x, tag, 16);
	sodium_memzero(&x, sizeof x);   /* its one-time Poly1305 key */
	return 0;
}

int
spirt_imb_chachapoly_seal(unsigned char *c, unsigned char tag[16],
    const unsigned char *m, size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char iv[12], const unsigned char key[32])
{
	return chachapoly(0, c, tag, m, n, ad, adlen, iv, key);
}

int
spirt_imb_chachapoly_open(unsigned char *m, unsigned char tag[16],
    const unsigned char *c, size_t n, const unsigned char *ad, size_t adlen,
    const unsigned char iv[12], const unsigned char key[32])
{
	return chachapoly(1, m, tag, c, n, ad, adlen, iv, key);
}
