/* vhash.c - the values' hash: a SHA-256 tree, many lanes at once (ISC licence) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <intel-ipsec-mb.h>
#include <sodium.h>

#include "imb.h"
#include "le.h"
#include "ossl.h"
#include "vhash.h"

/* the pieces' SHA-256 in the lanes of Intel's multi-buffer library
 * (lib/imb.h; vhash.h says why) */
#define BATCH 64                        /* pieces a manager is given */
#define PREFIX "SPIRT-TREE-SHA256"
#define PREFIX_LEN (sizeof PREFIX - 1)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int have_mb;                     /* set once, by load() */
static int env_serial;                  /* SPIRT_CRYPTO=libsodium or openssl */
static atomic_int pinned = SPIRT_VHASH_AUTO;

static size_t
pieces(size_t len)
{
	return len / SPIRT_VHASH_PIECE + (len % SPIRT_VHASH_PIECE != 0);
}

static size_t
piece_len(size_t len, size_t i)
{
	size_t off = i * SPIRT_VHASH_PIECE;

	return len - off < SPIRT_VHASH_PIECE ? len - off : SPIRT_VHASH_PIECE;
}

/* leaves[i] for the n pieces of p, piece after piece */
static void
leaves_serial(unsigned char *leaves, const unsigned char *p, size_t len)
{
	size_t n = pieces(len);

	for (size_t i = 0; i < n; i++)
		spirt_sha256(leaves + 32 * i, p + i * SPIRT_VHASH_PIECE,
		    piece_len(len, i));
}

/* the same in the library's lanes: 0, or -1 (a job it refused) */
static int
leaves_mb(unsigned char *leaves, const unsigned char *p, size_t len)
{
	size_t n = pieces(len), done = 0;
	IMB_MGR *m;
	IMB_JOB *j;
	int bad = 0;

	if ((m = spirt_imb_take()) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		j = IMB_GET_NEXT_JOB(m);
		memset(j, 0, sizeof *j);
		j->cipher_mode = IMB_CIPHER_NULL;
		j->cipher_direction = IMB_DIR_ENCRYPT;
		j->chain_order = IMB_ORDER_HASH_CIPHER;
		j->hash_alg = IMB_AUTH_SHA_256;
		j->src = p + i * SPIRT_VHASH_PIECE;
		j->msg_len_to_hash_in_bytes = piece_len(len, i);
		j->auth_tag_output = leaves + 32 * i;
		j->auth_tag_output_len_in_bytes = 32;
		if ((j = IMB_SUBMIT_JOB(m)) != NULL) {
			bad |= j->status != IMB_STATUS_COMPLETED;
			done++;
		}
	}
	while ((j = IMB_FLUSH_JOB(m)) != NULL) {
		bad |= j->status != IMB_STATUS_COMPLETED;
		done++;
	}
	spirt_imb_give(m);
	return bad || done != n ? -1 : 0;
}

/* the library's leaves are spirt_sha256()'s on a fixed input that ends
 * in a short piece, or it is not used */
static int
self_test(void)
{
	size_t len = 3 * SPIRT_VHASH_PIECE + 1000;
	unsigned char *m, a[32 * 4], b[32 * 4];
	int ok;

	if ((m = malloc(len)) == NULL)
		return 0;
	for (size_t i = 0; i < len; i++)
		m[i] = (unsigned char)(i * 131 + (i >> 9));
	leaves_serial(a, m, len);
	ok = leaves_mb(b, m, len) == 0 && memcmp(a, b, sizeof a) == 0;
	free(m);
	return ok;
}

static void
load(void)
{
	const char *env = getenv("SPIRT_CRYPTO");

	env_serial = env && (strcmp(env, "libsodium") == 0 ||
	    strcmp(env, "openssl") == 0);
	have_mb = spirt_imb_have() && self_test();
}

static int
use_mb(void)
{
	int p;

	pthread_once(&once, load);
	p = atomic_load(&pinned);
	if (p == SPIRT_VHASH_AUTO && env_serial)
		return 0;
	return p == SPIRT_VHASH_SERIAL ? 0 : have_mb;
}

int
spirt_vhash_use(int which)
{
	pthread_once(&once, load);
	if (which != SPIRT_VHASH_AUTO && which != SPIRT_VHASH_SERIAL &&
	    which != SPIRT_VHASH_MB)
		return SPIRT_EINVAL;
	if (which == SPIRT_VHASH_MB && !have_mb)
		return SPIRT_ENOTSUP;
	atomic_store(&pinned, which);
	return 0;
}

void
spirt_vhash(unsigned char out[SPIRT_VHASH_BYTES], const void *p, size_t len)
{
	const unsigned char *v = p;
	unsigned char head[PREFIX_LEN + 8 + 4], leaves[32 * BATCH];
	size_t n = pieces(len);
	crypto_hash_sha256_state st;
	int mbok = use_mb();

	memcpy(head, PREFIX, PREFIX_LEN);
	spirt_le_put64(head + PREFIX_LEN, len);
	spirt_le_put32(head + PREFIX_LEN + 8, SPIRT_VHASH_PIECE);
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, head, sizeof head);
	/* the leaves BATCH at a time (a root's input is a 1024th of the
	 * value's size; no allocation, whatever the size) */
	for (size_t i = 0; i < n; i += BATCH) {
		size_t k = n - i < BATCH ? n - i : BATCH;
		const unsigned char *q = v + i * SPIRT_VHASH_PIECE;
		size_t ql = i + k == n ? len - i * SPIRT_VHASH_PIECE :
		    k * SPIRT_VHASH_PIECE;

		if (!mbok || leaves_mb(leaves, q, ql) != 0)
			leaves_serial(leaves, q, ql);
		crypto_hash_sha256_update(&st, leaves, 32 * k);
	}
	crypto_hash_sha256_final(&st, out);
}
