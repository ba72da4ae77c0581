/* keyfile.c - ids, roles, identity keys and their files (ISC licence) */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "io.h"
#include "keyfile.h"
#include "keys.h"
#include "kv.h"
#include "vhash.h"

/*
 * The key and public key files are specified in docs/protocol.md ("Key
 * files"); tokens and allowlists share their text format (token.c,
 * trust.c).
 */
#define KEYFILE_MAX 1024                /* bytes of a key file */

/* ---- library, ids, roles ---- */

int
spirt_crypto_init(void)
{
	return sodium_init() < 0 ? SPIRT_EBUG : 0;
}

uint64_t
spirt_crypto_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* one id rule for keys and members (keys.h) */
_Static_assert(SPIRT_ID_MAX == SPIRT_KEY_ID_MAX, "ids fit key parts");

int
spirt_id_valid(const char *s)
{
	return spirt_key_id_check(s) == 0;
}

/* ---- id fields (keyfile.h, lib-internal), roles ---- */

void
spirt_id_pack(unsigned char f[SPIRT_ID_MAX], const char *s)
{
	memset(f, 0, SPIRT_ID_MAX);
	memcpy(f, s, strlen(s));
}

int
spirt_id_unpack(char out[SPIRT_ID_MAX + 1], const unsigned char f[SPIRT_ID_MAX])
{
	size_t n = 0;

	while (n < SPIRT_ID_MAX && f[n])
		n++;
	for (size_t i = n; i < SPIRT_ID_MAX; i++)
		if (f[i])
			return SPIRT_EDATA;
	memcpy(out, f, n);
	out[n] = '\0';
	return spirt_id_valid(out) ? 0 : SPIRT_EDATA;
}

int
spirt_id_is(const unsigned char f[SPIRT_ID_MAX], const char *s)
{
	unsigned char g[SPIRT_ID_MAX];

	spirt_id_pack(g, s);
	return memcmp(f, g, SPIRT_ID_MAX) == 0;
}

int
spirt_role_parse(const char *s)
{
	if (strcmp(s, "peer") == 0)
		return SPIRT_ROLE_PEER;
	if (strcmp(s, "function") == 0)
		return SPIRT_ROLE_FUNCTION;
	return 0;
}

const char *
spirt_role_name(int role)
{
	return role == SPIRT_ROLE_PEER ? "peer" :
	    role == SPIRT_ROLE_FUNCTION ? "function" : "?";
}

int
spirt_role_valid(int role)
{
	return role == SPIRT_ROLE_PEER || role == SPIRT_ROLE_FUNCTION;
}

/* ---- text files: kv.h's records (keyfile.h, lib-internal) ---- */

int
spirt_text_hex(unsigned char *out, size_t n, const char *v, size_t vn)
{
	size_t got = 0;

	if (vn != 2 * n ||
	    sodium_hex2bin(out, n, v, vn, NULL, &got, NULL) != 0 || got != n)
		return SPIRT_EKEYFILE;
	return 0;
}

/*
 * Publish text at path with mode (see spirt_key_write).  A secret key is
 * only ever a regular file, made with its final mode.
 */
static int
publish(const char *path, const char *text, size_t len, int mode,
    int flags, int secret)
{
	struct spirt_publish p;
	struct stat st;
	int rc;

	if (stat(path, &st) == 0) {
		if (flags & SPIRT_KEY_NOOVERWRITE)
			return SPIRT_EOUTPUT(EEXIST);
		if (secret && !S_ISREG(st.st_mode))
			return SPIRT_EOUTPUT(S_ISDIR(st.st_mode) ? EISDIR :
			    EINVAL);
	}
	if ((rc = spirt_publish_open(&p, path, mode)) != 0)
		return rc;
	/* a stale temporary keeps its old mode through O_TRUNC */
	if (p.tmp != NULL && fchmod(p.fd, (mode_t)mode) < 0) {
		rc = SPIRT_EOUTPUT(errno);
		goto fail;
	}
	if ((rc = spirt_writeall(p.fd, text, len)) != 0)
		goto fail;
	if (!(flags & SPIRT_KEY_NOOVERWRITE) || p.tmp == NULL)
		return spirt_publish_commit(&p);
	/* link, unlike rename, never replaces a file made meanwhile */
	if (fsync(p.fd) < 0)
		rc = errno;
	else if (link(p.tmp, p.path) < 0)
		rc = SPIRT_EOUTPUT(errno);
	spirt_publish_abort(&p);        /* closes and unlinks the temporary */
	return rc ? rc : spirt_fsync_dir(path);
fail:
	spirt_publish_abort(&p);
	return rc;
}

/* ---- identity keys ---- */

struct spirt_key {
	unsigned char sk[crypto_sign_SECRETKEYBYTES];   /* seed || pk */
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
};

int
spirt_key_from_seed(struct spirt_key **k, const unsigned char seed[32])
{
	struct spirt_key *p;

	*k = NULL;
	if (sodium_init() < 0)
		return SPIRT_EBUG;
	if ((p = sodium_malloc(sizeof *p)) == NULL)
		return ENOMEM;
	if (crypto_sign_seed_keypair(p->pk, p->sk, seed) != 0) {
		sodium_free(p);
		return SPIRT_EBUG;
	}
	sodium_mprotect_readonly(p);
	*k = p;
	return 0;
}

int
spirt_key_generate(struct spirt_key **k)
{
	unsigned char seed[32];
	int rc;

	*k = NULL;
	if (sodium_init() < 0)
		return SPIRT_EBUG;
	randombytes_buf(seed, sizeof seed);
	rc = spirt_key_from_seed(k, seed);
	sodium_memzero(seed, sizeof seed);
	return rc;
}

void
spirt_key_free(struct spirt_key *k)
{
	if (k != NULL)
		sodium_free(k);         /* zeroes it */
}

void
spirt_key_public(unsigned char pk[SPIRT_PK_BYTES], const struct spirt_key *k)
{
	memcpy(pk, k->pk, SPIRT_PK_BYTES);
}

void
spirt_key_sign(unsigned char sig[SPIRT_SIG_BYTES], const struct spirt_key *k,
    const void *msg, size_t len)
{
	crypto_sign_detached(sig, NULL, msg, len, k->sk);
}

int
spirt_sig_verify(const unsigned char sig[SPIRT_SIG_BYTES],
    const unsigned char pk[SPIRT_PK_BYTES], const void *msg, size_t len)
{
	return crypto_sign_verify_detached(sig, msg, len, pk) ? SPIRT_EMAC : 0;
}

void
spirt_hash(unsigned char out[SPIRT_HASH_BYTES], const void *p, size_t len)
{
	spirt_vhash(out, p, len);
}

int
spirt_key_write(const struct spirt_key *k, const char *path, int flags)
{
	struct spirt_kvw w;
	size_t n;
	char *t;
	int rc;

	if ((t = sodium_malloc(KEYFILE_MAX)) == NULL)
		return ENOMEM;
	spirt_kvw_init(&w, t, KEYFILE_MAX, "spirt-ed25519-secret");
	spirt_kvw_hex(&w, "PUBLIC", k->pk, SPIRT_PK_BYTES);
	/* the seed: the secret key's first half */
	spirt_kvw_hex(&w, "SECRET", k->sk, 32);
	if ((rc = spirt_kvw_end(&w, &n)) == 0)
		rc = publish(path, t, n, 0600, flags, 1);
	sodium_free(t);
	return rc;
}

/*
 * Read a secret file into guarded memory, refusing it unread if group or
 * others have any permission on it.
 */
static int
read_secret(char **buf, size_t *len, const char *path)
{
	struct stat st;
	ssize_t n;
	char *b = NULL;
	int fd, rc = 0;

	*buf = NULL;
	if ((fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC)) < 0)
		return errno;
	if (fstat(fd, &st) < 0)
		rc = errno;
	else if (S_ISDIR(st.st_mode))
		rc = EISDIR;
	else if (!S_ISREG(st.st_mode))
		rc = SPIRT_EKEYFILE;
	else if (st.st_mode & (S_IRWXG | S_IRWXO))
		rc = SPIRT_EKEYPERM;
	else if (st.st_size > KEYFILE_MAX)
		rc = SPIRT_EKEYFILE;
	else if ((b = sodium_malloc(KEYFILE_MAX + 1)) == NULL)
		rc = ENOMEM;
	else if ((n = spirt_readall(fd, b, KEYFILE_MAX + 1)) < 0)
		rc = errno;
	else if (n > KEYFILE_MAX)
		rc = SPIRT_EKEYFILE;
	else {
		*buf = b;
		*len = (size_t)n;
		b = NULL;
	}
	if (b != NULL)
		sodium_free(b);
	close(fd);
	return rc;
}

/* a key file's text: its VERSION and TYPE lines, then PUBLIC= (into pk),
 * then (seed not NULL) SECRET=, then END; 0, SPIRT_EVERSION or
 * SPIRT_EKEYFILE */
static int
key_text(unsigned char pk[SPIRT_PK_BYTES], unsigned char *seed,
    const char *text, size_t len)
{
	struct spirt_kvr r;
	int rc;

	if ((rc = spirt_kvr_open(&r, text, len, seed ? "spirt-ed25519-secret" :
	    "spirt-ed25519-public", NULL, 0)))
		return rc == SPIRT_EVERSION ? rc : SPIRT_EKEYFILE;
	if (spirt_kvr_want(&r, "PUBLIC") ||
	    spirt_text_hex(pk, SPIRT_PK_BYTES, r.val, r.vlen) ||
	    (seed && (spirt_kvr_want(&r, "SECRET") ||
	    spirt_text_hex(seed, 32, r.val, r.vlen))) ||
	    spirt_kvr_end(&r))
		return SPIRT_EKEYFILE;
	return 0;
}

int
spirt_key_load(struct spirt_key **k, const char *path)
{
	unsigned char seed[32], pk[SPIRT_PK_BYTES];
	size_t len = 0;
	char *buf;
	int rc;

	*k = NULL;
	if ((rc = read_secret(&buf, &len, path)) != 0)
		return rc;
	if ((rc = key_text(pk, seed, buf, len)) != 0 ||
	    (rc = spirt_key_from_seed(k, seed)) != 0)
		goto out;
	/* the public key is a check on the secret: a flipped digit shows */
	if (sodium_memcmp((*k)->pk, pk, sizeof pk) != 0) {
		spirt_key_free(*k);
		*k = NULL;
		rc = SPIRT_EKEYFILE;
	}
out:
	sodium_memzero(seed, sizeof seed);
	sodium_free(buf);
	return rc;
}

int
spirt_pubkey_write(const unsigned char pk[SPIRT_PK_BYTES], const char *path)
{
	struct spirt_kvw w;
	char t[256];
	size_t n;
	int rc;

	spirt_kvw_init(&w, t, sizeof t, "spirt-ed25519-public");
	spirt_kvw_hex(&w, "PUBLIC", pk, SPIRT_PK_BYTES);
	if ((rc = spirt_kvw_end(&w, &n)))
		return rc;
	return publish(path, t, n, 0644, 0, 0);
}

int
spirt_pubkey_load(unsigned char pk[SPIRT_PK_BYTES], const char *path)
{
	size_t len;
	void *buf;
	int rc;

	if ((rc = spirt_readfile(path, &buf, &len)) != 0)
		return rc;
	rc = key_text(pk, NULL, buf, len);
	free(buf);
	return rc;
}

int
spirt_pubkey_parse(unsigned char pk[SPIRT_PK_BYTES], const char *hex)
{
	return spirt_text_hex(pk, SPIRT_PK_BYTES, hex, strlen(hex)) ?
	    SPIRT_EINVAL : 0;
}

void
spirt_pubkey_format(char hex[SPIRT_PK_HEX],
    const unsigned char pk[SPIRT_PK_BYTES])
{
	sodium_bin2hex(hex, SPIRT_PK_HEX, pk, SPIRT_PK_BYTES);
}
