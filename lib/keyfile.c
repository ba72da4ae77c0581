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
#include "vhash.h"

/*
 * The key and public key files are specified in docs/protocol.md ("Key
 * files"); tokens and allowlists share their text format (token.c,
 * trust.c).
 */
#define FMT_VERSION 1
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

/* ---- text files: "VERSION=1", "TYPE=...", NAME=value lines, "END"
 * (keyfile.h, lib-internal) ---- */

int
spirt_text_line(const char **p, const char *end, const char **line, size_t *n)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));

	if (nl == NULL)
		return SPIRT_EKEYFILE;
	*line = *p;
	*n = (size_t)(nl - *p);
	*p = nl + 1;
	return 0;
}

const char *
spirt_text_field(const char *line, size_t n, const char *name, size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || memcmp(line, name, k) != 0 || line[k] != '=')
		return NULL;
	*vlen = n - k - 1;
	return line + k + 1;
}

int
spirt_text_head(const char **p, const char *end, const char *type,
    size_t *lineno)
{
	const char *l, *v;
	size_t n, vn, i;

	*lineno = 1;
	if (spirt_text_line(p, end, &l, &n) ||
	    (v = spirt_text_field(l, n, "VERSION", &vn)) == NULL || vn == 0)
		return SPIRT_EKEYFILE;
	for (i = 0; i < vn; i++)
		if (v[i] < '0' || v[i] > '9')
			return SPIRT_EKEYFILE;
	if (vn != 1 || v[0] != '0' + FMT_VERSION)
		return SPIRT_EVERSION;
	*lineno = 2;
	if (spirt_text_line(p, end, &l, &n) ||
	    (v = spirt_text_field(l, n, "TYPE", &vn)) == NULL ||
	    vn != strlen(type) || memcmp(v, type, vn) != 0)
		return SPIRT_EKEYFILE;
	return 0;
}

int
spirt_text_end(const char *l, size_t n)
{
	return n == 3 && memcmp(l, "END", 3) == 0;
}

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
	static const char head[] = "VERSION=1\nTYPE=spirt-ed25519-secret\n";
	size_t cap = KEYFILE_MAX, n;
	char *t;
	int rc;

	if ((t = sodium_malloc(cap)) == NULL)
		return ENOMEM;
	n = sizeof head - 1;
	memcpy(t, head, n);
	memcpy(t + n, "PUBLIC=", 7);
	sodium_bin2hex(t + n + 7, cap - n - 7, k->pk, SPIRT_PK_BYTES);
	n += 7 + 2 * SPIRT_PK_BYTES;
	memcpy(t + n, "\nSECRET=", 8);
	/* the seed: the secret key's first half */
	sodium_bin2hex(t + n + 8, cap - n - 8, k->sk, 32);
	n += 8 + 64;
	memcpy(t + n, "\nEND\n", 5);
	n += 5;
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

int
spirt_key_load(struct spirt_key **k, const char *path)
{
	unsigned char seed[32], pk[SPIRT_PK_BYTES];
	const char *p, *end, *l, *v;
	size_t len = 0, n, vn, line;
	char *buf;
	int rc;

	*k = NULL;
	if ((rc = read_secret(&buf, &len, path)) != 0)
		return rc;
	p = buf;
	end = buf + len;
	if ((rc = spirt_text_head(&p, end, "spirt-ed25519-secret", &line)) != 0)
		goto out;
	rc = SPIRT_EKEYFILE;
	if (spirt_text_line(&p, end, &l, &n) ||
	    (v = spirt_text_field(l, n, "PUBLIC", &vn)) == NULL ||
	    spirt_text_hex(pk, sizeof pk, v, vn) ||
	    spirt_text_line(&p, end, &l, &n) ||
	    (v = spirt_text_field(l, n, "SECRET", &vn)) == NULL ||
	    spirt_text_hex(seed, sizeof seed, v, vn) ||
	    spirt_text_line(&p, end, &l, &n) || !spirt_text_end(l, n) || p != end)
		goto out;
	if ((rc = spirt_key_from_seed(k, seed)) != 0)
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

static size_t
pubkey_text(char *t, const unsigned char pk[SPIRT_PK_BYTES])
{
	static const char head[] =
	    "VERSION=1\nTYPE=spirt-ed25519-public\nPUBLIC=";
	size_t n = sizeof head - 1;

	memcpy(t, head, n);
	sodium_bin2hex(t + n, SPIRT_PK_HEX, pk, SPIRT_PK_BYTES);
	n += 2 * SPIRT_PK_BYTES;
	memcpy(t + n, "\nEND\n", 5);
	return n + 5;
}

int
spirt_pubkey_write(const unsigned char pk[SPIRT_PK_BYTES], const char *path)
{
	char t[256];

	return publish(path, t, pubkey_text(t, pk), 0644, 0, 0);
}

int
spirt_pubkey_load(unsigned char pk[SPIRT_PK_BYTES], const char *path)
{
	const char *p, *end, *l, *v;
	size_t len, n, vn, line;
	void *buf;
	int rc;

	if ((rc = spirt_readfile(path, &buf, &len)) != 0)
		return rc;
	p = buf;
	end = p + len;
	if ((rc = spirt_text_head(&p, end, "spirt-ed25519-public", &line)) == 0 &&
	    (spirt_text_line(&p, end, &l, &n) ||
	    (v = spirt_text_field(l, n, "PUBLIC", &vn)) == NULL ||
	    spirt_text_hex(pk, SPIRT_PK_BYTES, v, vn) ||
	    spirt_text_line(&p, end, &l, &n) || !spirt_text_end(l, n) || p != end))
		rc = SPIRT_EKEYFILE;
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
