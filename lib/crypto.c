/* crypto.c - identities, tokens, handshake, sealed messages (ISC licence) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto.h"
#include "io.h"
#include "keys.h"
#include "le.h"
#include "prim.h"
#include "vhash.h"

/*
 * Every wire and file format here is specified in docs/protocol.md; the
 * offsets below are that document's tables.  Every signed or hashed
 * object starts with its own magic, which separates their domains.
 */
#define TOK_MAGIC "SPTK"
#define HS_MAGIC "SPHS"
#define MSG_MAGIC "SPMS"
#define FMT_VERSION 1
#define HS_INIT 1
#define HS_RESP 2
#define MSG_DATA 1

#define TOK_SIGNED 152                  /* token bytes under the signature */
#define HS_TOKEN 240                    /* offset of a handshake's token */
#define KEYFILE_MAX 1024                /* bytes of a key or token file */
#define SEEN_MAX 65536                  /* identities with a timestamp */
#define SEEN_RING 64                    /* handshakes remembered each */
#define WIN_WORDS 32                    /* replay bitmap: 2048 bits */

#define KDF_I2R "spirt-peer v1 i2r"
#define KDF_R2I "spirt-peer v1 r2i"

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

/* A 32-byte id field: the id, NUL-padded. */
static void
id_pack(unsigned char f[SPIRT_ID_MAX], const char *s)
{
	memset(f, 0, SPIRT_ID_MAX);
	memcpy(f, s, strlen(s));
}

/* An id field back to a string: SPIRT_EDATA unless a valid padded id. */
static int
id_unpack(char out[SPIRT_ID_MAX + 1], const unsigned char f[SPIRT_ID_MAX])
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

/* 1 if the field holds exactly id s */
static int
id_is(const unsigned char f[SPIRT_ID_MAX], const char *s)
{
	unsigned char g[SPIRT_ID_MAX];

	id_pack(g, s);
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

static int
role_valid(int role)
{
	return role == SPIRT_ROLE_PEER || role == SPIRT_ROLE_FUNCTION;
}

/* ---- text files: "VERSION=1", "TYPE=...", NAME=value lines, "END" ---- */

/* The next line of [*p, end), without its newline; SPIRT_EKEYFILE if none */
static int
nextline(const char **p, const char *end, const char **line, size_t *n)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));

	if (nl == NULL)
		return SPIRT_EKEYFILE;
	*line = *p;
	*n = (size_t)(nl - *p);
	*p = nl + 1;
	return 0;
}

/* The value of a "NAME=value" line, or NULL if the line is not one. */
static const char *
field(const char *line, size_t n, const char *name, size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || memcmp(line, name, k) != 0 || line[k] != '=')
		return NULL;
	*vlen = n - k - 1;
	return line + k + 1;
}

/* "VERSION=1" then "TYPE=type"; another version is SPIRT_EVERSION. */
static int
text_head(const char **p, const char *end, const char *type, size_t *lineno)
{
	const char *l, *v;
	size_t n, vn, i;

	*lineno = 1;
	if (nextline(p, end, &l, &n) ||
	    (v = field(l, n, "VERSION", &vn)) == NULL || vn == 0)
		return SPIRT_EKEYFILE;
	for (i = 0; i < vn; i++)
		if (v[i] < '0' || v[i] > '9')
			return SPIRT_EKEYFILE;
	if (vn != 1 || v[0] != '0' + FMT_VERSION)
		return SPIRT_EVERSION;
	*lineno = 2;
	if (nextline(p, end, &l, &n) ||
	    (v = field(l, n, "TYPE", &vn)) == NULL ||
	    vn != strlen(type) || memcmp(v, type, vn) != 0)
		return SPIRT_EKEYFILE;
	return 0;
}

static int
is_end(const char *l, size_t n)
{
	return n == 3 && memcmp(l, "END", 3) == 0;
}

/* Exactly n bytes from 2n hex digits (either case), else SPIRT_EKEYFILE. */
static int
hex_decode(unsigned char *out, size_t n, const char *v, size_t vn)
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
	if ((rc = text_head(&p, end, "spirt-ed25519-secret", &line)) != 0)
		goto out;
	rc = SPIRT_EKEYFILE;
	if (nextline(&p, end, &l, &n) ||
	    (v = field(l, n, "PUBLIC", &vn)) == NULL ||
	    hex_decode(pk, sizeof pk, v, vn) ||
	    nextline(&p, end, &l, &n) ||
	    (v = field(l, n, "SECRET", &vn)) == NULL ||
	    hex_decode(seed, sizeof seed, v, vn) ||
	    nextline(&p, end, &l, &n) || !is_end(l, n) || p != end)
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
	if ((rc = text_head(&p, end, "spirt-ed25519-public", &line)) == 0 &&
	    (nextline(&p, end, &l, &n) ||
	    (v = field(l, n, "PUBLIC", &vn)) == NULL ||
	    hex_decode(pk, SPIRT_PK_BYTES, v, vn) ||
	    nextline(&p, end, &l, &n) || !is_end(l, n) || p != end))
		rc = SPIRT_EKEYFILE;
	free(buf);
	return rc;
}

int
spirt_pubkey_parse(unsigned char pk[SPIRT_PK_BYTES], const char *hex)
{
	return hex_decode(pk, SPIRT_PK_BYTES, hex, strlen(hex)) ?
	    SPIRT_EINVAL : 0;
}

void
spirt_pubkey_format(char hex[SPIRT_PK_HEX],
    const unsigned char pk[SPIRT_PK_BYTES])
{
	sodium_bin2hex(hex, SPIRT_PK_HEX, pk, SPIRT_PK_BYTES);
}

/* ---- member tokens ---- */

/*
 * Token layout (216 bytes): magic "SPTK", version, role, 2 zero bytes,
 * issued, expires, run[32], id[32], member pk[32], group pk[32], then the
 * group key's Ed25519 signature of those 152 bytes.
 */

int
spirt_token_make(unsigned char tok[SPIRT_TOKEN_BYTES],
    const struct spirt_key *group, const char *run, const char *id,
    const unsigned char pk[SPIRT_PK_BYTES], int role, uint64_t issued,
    uint64_t expires)
{
	if (!spirt_id_valid(run) || !spirt_id_valid(id) || !role_valid(role) ||
	    expires <= issued)
		return SPIRT_EINVAL;
	memcpy(tok, TOK_MAGIC, 4);
	tok[4] = FMT_VERSION;
	tok[5] = (unsigned char)role;
	spirt_le_put16(tok + 6, 0);
	spirt_le_put64(tok + 8, issued);
	spirt_le_put64(tok + 16, expires);
	id_pack(tok + 24, run);
	id_pack(tok + 56, id);
	memcpy(tok + 88, pk, SPIRT_PK_BYTES);
	memcpy(tok + 120, group->pk, SPIRT_PK_BYTES);
	crypto_sign_detached(tok + TOK_SIGNED, NULL, tok, TOK_SIGNED,
	    group->sk);
	return 0;
}

int
spirt_token_decode(struct spirt_member *m,
    const unsigned char tok[SPIRT_TOKEN_BYTES])
{
	if (memcmp(tok, TOK_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (tok[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (!role_valid(tok[5]) || spirt_le_get16(tok + 6) != 0 ||
	    id_unpack(m->run, tok + 24) || id_unpack(m->id, tok + 56))
		return SPIRT_EDATA;
	m->role = tok[5];
	m->issued = spirt_le_get64(tok + 8);
	m->expires = spirt_le_get64(tok + 16);
	memcpy(m->pk, tok + 88, SPIRT_PK_BYTES);
	return 0;
}

/* spirt_token_verify, its group key's signature checked or (sig 0,
 * the same bytes checked before: spirt_trust_member) not */
static int
token_check(struct spirt_member *m, const unsigned char *tok, size_t len,
    const unsigned char group_pk[SPIRT_PK_BYTES], const char *run,
    uint64_t now, int roles, int sig)
{
	struct spirt_member mm;
	int rc;

	if (len != SPIRT_TOKEN_BYTES)
		return len < SPIRT_TOKEN_BYTES ? SPIRT_ETRUNC : SPIRT_EDATA;
	if (memcmp(tok, TOK_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (tok[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (memcmp(tok + 120, group_pk, SPIRT_PK_BYTES) != 0)
		return SPIRT_EUNKNOWNKEY;
	if (sig && crypto_sign_verify_detached(tok + TOK_SIGNED, tok,
	    TOK_SIGNED, group_pk) != 0)
		return SPIRT_EMAC;
	if ((rc = spirt_token_decode(&mm, tok)) != 0)
		return rc;
	if (strcmp(mm.run, run) != 0)
		return SPIRT_ERUN;
	if (now >= mm.expires)
		return SPIRT_EEXPIRED;
	if (!(mm.role & roles))
		return SPIRT_EROLE;
	if (m != NULL)
		*m = mm;
	return 0;
}

int
spirt_token_verify(struct spirt_member *m, const unsigned char *tok,
    size_t len, const unsigned char group_pk[SPIRT_PK_BYTES],
    const char *run, uint64_t now, int roles)
{
	return token_check(m, tok, len, group_pk, run, now, roles, 1);
}

int
spirt_token_format(char *buf, size_t cap, size_t *len,
    const unsigned char tok[SPIRT_TOKEN_BYTES])
{
	static const char head[] = "VERSION=1\nTYPE=spirt-token\nTOKEN=";
	size_t n = sizeof head - 1;

	if (cap < n + 2 * SPIRT_TOKEN_BYTES + 6)
		return SPIRT_EINVAL;
	memcpy(buf, head, n);
	sodium_bin2hex(buf + n, cap - n, tok, SPIRT_TOKEN_BYTES);
	n += 2 * SPIRT_TOKEN_BYTES;
	memcpy(buf + n, "\nEND\n", 6);   /* with its NUL */
	*len = n + 5;
	return 0;
}

int
spirt_token_parse(unsigned char tok[SPIRT_TOKEN_BYTES], const char *text,
    size_t len)
{
	const char *p = text, *end = text + len, *l, *v;
	size_t n, vn, line;
	int rc;

	if ((rc = text_head(&p, end, "spirt-token", &line)) != 0)
		return rc;
	if (nextline(&p, end, &l, &n) ||
	    (v = field(l, n, "TOKEN", &vn)) == NULL ||
	    hex_decode(tok, SPIRT_TOKEN_BYTES, v, vn) ||
	    nextline(&p, end, &l, &n) || !is_end(l, n) || p != end)
		return SPIRT_EKEYFILE;
	return 0;
}

/* ---- trust: group key, allowlist, newest timestamps ---- */

struct allowed {
	unsigned char pk[SPIRT_PK_BYTES];
	char id[SPIRT_ID_MAX + 1];
	int role;
};

/*
 * What a responder remembers of an identity's handshakes: the newest
 * timestamp accepted, and the last SEEN_RING first messages accepted
 * (timestamp and the first 16 bytes of their BLAKE2b-256), so that an
 * older first message is accepted once if it was never seen (the
 * instances of one function start together and their first messages
 * arrive in any order) while a replayed one is refused.  floor is the
 * newest timestamp that left the ring: at or below it nobody can tell,
 * and the message is refused.
 */
struct seen {
	unsigned char pk[SPIRT_PK_BYTES];
	uint64_t ts, floor;
	unsigned n, next;
	struct {
		uint64_t ts;
		unsigned char h[16];
	} ring[SEEN_RING];
};

/* tokens whose group signature held, kept byte for byte: each member's
 * digest carries its token every step, and an Ed25519 check is 30-40 us
 * (the rest of a token's checks, expiry first, are made every time) */
#define TOKOK 16

struct spirt_trust {
	char run[SPIRT_ID_MAX + 1];
	int has_group;
	unsigned char group_pk[SPIRT_PK_BYTES];
	uint64_t window;
	struct allowed *allow;
	size_t nallow, capallow;
	struct seen *seen;
	size_t nseen, capseen;
	/* the only state a lookup changes, under its own lock: lookups run
	 * in the exchange's pulling threads at once (handshakes) */
	pthread_mutex_t toklock;
	unsigned char tokok[TOKOK][SPIRT_TOKEN_BYTES];
	size_t ntokok, nexttok;
};

int
spirt_trust_new(struct spirt_trust **t, const char *run,
    const unsigned char *group_pk, uint64_t window)
{
	struct spirt_trust *p;

	*t = NULL;
	if (!spirt_id_valid(run))
		return SPIRT_EINVAL;
	if ((p = calloc(1, sizeof *p)) == NULL)
		return ENOMEM;
	if (pthread_mutex_init(&p->toklock, NULL) != 0) {
		free(p);
		return ENOMEM;
	}
	memcpy(p->run, run, strlen(run) + 1);
	if (group_pk != NULL) {
		p->has_group = 1;
		memcpy(p->group_pk, group_pk, SPIRT_PK_BYTES);
	}
	p->window = window;
	*t = p;
	return 0;
}

void
spirt_trust_free(struct spirt_trust *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->toklock);
	free(t->allow);
	free(t->seen);
	free(t);
}

static const struct allowed *
allow_find(const struct spirt_trust *t, const unsigned char *pk)
{
	for (size_t i = 0; i < t->nallow; i++)
		if (memcmp(t->allow[i].pk, pk, SPIRT_PK_BYTES) == 0)
			return &t->allow[i];
	return NULL;
}

int
spirt_trust_allow(struct spirt_trust *t,
    const unsigned char pk[SPIRT_PK_BYTES], const char *id, int role)
{
	struct allowed *a;

	if (!spirt_id_valid(id) || !role_valid(role) || allow_find(t, pk))
		return SPIRT_EINVAL;
	for (size_t i = 0; i < t->nallow; i++)
		if (strcmp(t->allow[i].id, id) == 0)
			return SPIRT_EINVAL;
	if (t->nallow == t->capallow) {
		size_t cap = t->capallow ? 2 * t->capallow : 16;
		if ((a = realloc(t->allow, cap * sizeof *a)) == NULL)
			return ENOMEM;
		t->allow = a;
		t->capallow = cap;
	}
	a = &t->allow[t->nallow++];
	memcpy(a->pk, pk, SPIRT_PK_BYTES);
	memcpy(a->id, id, strlen(id) + 1);
	a->role = role;
	return 0;
}

/* "MEMBER=<64 hex> <role> <id>" */
static int
allow_line(struct spirt_trust *t, const char *v, size_t vn)
{
	unsigned char pk[SPIRT_PK_BYTES];
	char role[16], id[SPIRT_ID_MAX + 1];
	const char *sp1, *sp2, *end = v + vn;
	size_t rn, in;
	int r;

	if (vn < 2 * SPIRT_PK_BYTES + 1 || v[2 * SPIRT_PK_BYTES] != ' ' ||
	    hex_decode(pk, sizeof pk, v, 2 * SPIRT_PK_BYTES))
		return SPIRT_EKEYFILE;
	sp1 = v + 2 * SPIRT_PK_BYTES;
	if ((sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))) == NULL)
		return SPIRT_EKEYFILE;
	rn = (size_t)(sp2 - sp1 - 1);
	in = (size_t)(end - sp2 - 1);
	if (rn >= sizeof role || in >= sizeof id)
		return SPIRT_EKEYFILE;
	memcpy(role, sp1 + 1, rn);
	role[rn] = '\0';
	memcpy(id, sp2 + 1, in);
	id[in] = '\0';
	if ((r = spirt_role_parse(role)) == 0 || !spirt_id_valid(id))
		return SPIRT_EKEYFILE;
	return spirt_trust_allow(t, pk, id, r) == 0 ? 0 : SPIRT_EKEYFILE;
}

int
spirt_trust_allow_parse(struct spirt_trust *t, const char *text, size_t len,
    size_t *line)
{
	const char *p = text, *end = text + len, *l, *v;
	size_t n, vn, ln;
	int rc;

	if ((rc = text_head(&p, end, "spirt-allowlist", &ln)) != 0)
		goto out;
	for (;;) {
		ln++;
		if ((rc = nextline(&p, end, &l, &n)) != 0)
			goto out;
		if (is_end(l, n))
			break;
		if (n > 0 && l[0] == '#')      /* a note */
			continue;
		if ((v = field(l, n, "MEMBER", &vn)) == NULL) {
			rc = SPIRT_EKEYFILE;
			goto out;
		}
		if ((rc = allow_line(t, v, vn)) != 0)
			goto out;
	}
	if (p != end) {
		ln++;
		rc = SPIRT_EKEYFILE;
	}
out:
	if (line != NULL)
		*line = rc ? ln : 0;
	return rc;
}

int
spirt_trust_member(struct spirt_member *m, const struct spirt_trust *t,
    const unsigned char pk[SPIRT_PK_BYTES], const char *id,
    const unsigned char *tok, uint64_t now, int roles)
{
	struct spirt_member mm;
	const struct allowed *a;
	int rc;

	if (tok != NULL && t->has_group) {
		/* (allocated writable: spirt_trust_new) */
		struct spirt_trust *w = (struct spirt_trust *)t;
		int known = 0;

		pthread_mutex_lock(&w->toklock);
		for (size_t i = 0; i < w->ntokok && !known; i++)
			known = memcmp(w->tokok[i], tok, SPIRT_TOKEN_BYTES) == 0;
		pthread_mutex_unlock(&w->toklock);
		if ((rc = token_check(&mm, tok, SPIRT_TOKEN_BYTES, t->group_pk,
		    t->run, now, roles, !known)) != 0)
			return rc;
		if (!known) {
			pthread_mutex_lock(&w->toklock);
			memcpy(w->tokok[w->nexttok], tok, SPIRT_TOKEN_BYTES);
			w->nexttok = (w->nexttok + 1) % TOKOK;
			if (w->ntokok < TOKOK)
				w->ntokok++;
			pthread_mutex_unlock(&w->toklock);
		}
		/* a token proves membership only for its own key and id */
		if (memcmp(mm.pk, pk, SPIRT_PK_BYTES) != 0 ||
		    strcmp(mm.id, id) != 0)
			return SPIRT_EUNKNOWNKEY;
	} else {
		if ((a = allow_find(t, pk)) == NULL || strcmp(a->id, id) != 0)
			return SPIRT_EUNKNOWNKEY;
		if (!(a->role & roles))
			return SPIRT_EROLE;
		memset(&mm, 0, sizeof mm);
		memcpy(mm.id, a->id, sizeof mm.id);
		memcpy(mm.run, t->run, sizeof mm.run);
		memcpy(mm.pk, pk, SPIRT_PK_BYTES);
		mm.role = a->role;
		mm.issued = 0;
		mm.expires = UINT64_MAX;
	}
	if (m != NULL)
		*m = mm;
	return 0;
}

/* The newest timestamp accepted from pk (0: none yet). */
static struct seen *
seen_find(const struct spirt_trust *t, const unsigned char *pk)
{
	for (size_t i = 0; i < t->nseen; i++)
		if (memcmp(t->seen[i].pk, pk, SPIRT_PK_BYTES) == 0)
			return &t->seen[i];
	return NULL;
}

/* seen_fresh: whether a first message of timestamp ts and hash h from
 * the identity of s (NULL: never seen) may be accepted */
static int
seen_fresh(const struct seen *s, uint64_t ts, const unsigned char h[32])
{
	if (s == NULL || ts > s->ts)
		return 1;
	if (ts <= s->floor)
		return 0;       /* too old to tell */
	for (unsigned i = 0; i < s->n; i++)
		if (s->ring[i].ts == ts && memcmp(s->ring[i].h, h, 16) == 0)
			return 0;
	return 1;
}

static int
seen_record(struct spirt_trust *t, const unsigned char *pk, uint64_t ts,
    const unsigned char h[32])
{
	struct seen *s = seen_find(t, pk);

	if (s == NULL) {
		if (t->nseen == SEEN_MAX)
			return ENOMEM;
		if (t->nseen == t->capseen) {
			size_t cap = t->capseen ? 2 * t->capseen : 16;
			if ((s = realloc(t->seen, cap * sizeof *s)) == NULL)
				return ENOMEM;
			t->seen = s;
			t->capseen = cap;
		}
		s = &t->seen[t->nseen++];
		memset(s, 0, sizeof *s);
		memcpy(s->pk, pk, SPIRT_PK_BYTES);
	}
	if (s->n == SEEN_RING) {
		if (s->ring[s->next].ts > s->floor)
			s->floor = s->ring[s->next].ts;
	} else {
		s->n++;
	}
	s->ring[s->next].ts = ts;
	memcpy(s->ring[s->next].h, h, 16);
	s->next = (s->next + 1) % SEEN_RING;
	if (ts > s->ts)
		s->ts = ts;
	return 0;
}

/* ---- sessions and the replay window ---- */

/*
 * The receiver's window (WireGuard's counter_validate, RFC 6479): top is
 * one past the newest counter accepted, bits a ring of 2048 bits of which
 * the newest SPIRT_REPLAY_WINDOW positions are meaningful.
 */
struct window {
	uint64_t top;
	uint64_t bits[WIN_WORDS];
};

struct spirt_session {
	unsigned char tx[32], rx[32];   /* send and receive keys */
	uint64_t txctr;
	struct window win;
	unsigned char run[SPIRT_ID_MAX];
	unsigned char self[SPIRT_ID_MAX];
	unsigned char peer[SPIRT_ID_MAX];
	struct spirt_member member;
	int confirmed;
};

static int
win_check(const struct window *w, uint64_t c)
{
	uint64_t c1;

	if (c >= UINT64_MAX - 1)        /* never sent */
		return SPIRT_EREPLAY;
	c1 = c + 1;
	if (c1 > w->top)
		return 0;
	if (w->top - c1 >= SPIRT_REPLAY_WINDOW)
		return SPIRT_EREPLAY;   /* too old to tell: refused */
	if ((w->bits[(c1 >> 6) & (WIN_WORDS - 1)] >> (c1 & 63)) & 1)
		return SPIRT_EREPLAY;
	return 0;
}

static void
win_commit(struct window *w, uint64_t c)
{
	uint64_t c1 = c + 1;

	if (c1 > w->top) {
		uint64_t cur = w->top >> 6, n = (c1 >> 6) - cur;
		if (n > WIN_WORDS)
			n = WIN_WORDS;
		for (uint64_t i = 1; i <= n; i++)
			w->bits[(cur + i) & (WIN_WORDS - 1)] = 0;
		w->top = c1;
	}
	w->bits[(c1 >> 6) & (WIN_WORDS - 1)] |= (uint64_t)1 << (c1 & 63);
}

const struct spirt_member *
spirt_session_peer(const struct spirt_session *s)
{
	return &s->member;
}

int
spirt_session_confirmed(const struct spirt_session *s)
{
	return s->confirmed;
}

void
spirt_session_free(struct spirt_session *s)
{
	if (s != NULL)
		sodium_free(s);
}

/* ---- handshake ---- */

/*
 * Handshake message (304 bytes + token): magic "SPHS", version, type,
 * token length, timestamp, run[32], sender[32], receiver[32], identity
 * pk[32], ephemeral pk[32], nonce[32], echo[32], token, then the sender's
 * Ed25519 signature of everything before it.
 */
struct hsmsg {
	uint64_t ts;
	const unsigned char *run, *sender, *receiver, *idpk, *epk, *echo;
	const unsigned char *tok, *sig;
	size_t len;
};

struct spirt_hs {
	unsigned char esk[crypto_kx_SECRETKEYBYTES];
	unsigned char epk[crypto_kx_PUBLICKEYBYTES];
	unsigned char msg[SPIRT_HS_MAX];
	size_t len;
	char self[SPIRT_ID_MAX + 1];
	char peer[SPIRT_ID_MAX + 1];
	int done;
};

static int
hs_parse(struct hsmsg *h, const unsigned char *m, size_t len, int type)
{
	size_t toklen;

	if (len < SPIRT_HS_BYTES)
		return SPIRT_ETRUNC;
	if (memcmp(m, HS_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (m[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (m[5] != type)
		return SPIRT_EDATA;
	toklen = spirt_le_get16(m + 6);
	if (toklen != 0 && toklen != SPIRT_TOKEN_BYTES)
		return SPIRT_EDATA;
	if (len != SPIRT_HS_BYTES + toklen)
		return len < SPIRT_HS_BYTES + toklen ? SPIRT_ETRUNC :
		    SPIRT_EDATA;
	h->ts = spirt_le_get64(m + 8);
	h->run = m + 16;
	h->sender = m + 48;
	h->receiver = m + 80;
	h->idpk = m + 112;
	h->epk = m + 144;
	h->echo = m + 208;
	h->tok = toklen ? m + HS_TOKEN : NULL;
	h->sig = m + HS_TOKEN + toklen;
	h->len = len;
	return 0;
}

/* Build and sign a handshake message into m; its length. */
static size_t
hs_build(unsigned char *m, int type, uint64_t ts, const char *run,
    const struct spirt_self *self, const char *peer,
    const unsigned char *epk, const unsigned char *echo)
{
	size_t toklen = self->token ? SPIRT_TOKEN_BYTES : 0;

	memcpy(m, HS_MAGIC, 4);
	m[4] = FMT_VERSION;
	m[5] = (unsigned char)type;
	spirt_le_put16(m + 6, (uint16_t)toklen);
	spirt_le_put64(m + 8, ts);
	id_pack(m + 16, run);
	id_pack(m + 48, self->id);
	id_pack(m + 80, peer);
	memcpy(m + 112, self->key->pk, SPIRT_PK_BYTES);
	memcpy(m + 144, epk, crypto_kx_PUBLICKEYBYTES);
	randombytes_buf(m + 176, 32);
	if (echo != NULL)
		memcpy(m + 208, echo, 32);
	else
		memset(m + 208, 0, 32);
	if (toklen)
		memcpy(m + HS_TOKEN, self->token, toklen);
	crypto_sign_detached(m + HS_TOKEN + toklen, NULL, m, HS_TOKEN + toklen,
	    self->key->sk);
	return SPIRT_HS_BYTES + toklen;
}

/* Is self usable in this run: a valid id, a token for its key and id? */
static int
self_check(const struct spirt_self *self, const struct spirt_trust *t)
{
	struct spirt_member m;

	if (self->key == NULL || !spirt_id_valid(self->id))
		return SPIRT_EINVAL;
	if (self->token != NULL &&
	    (spirt_token_decode(&m, self->token) != 0 ||
	    memcmp(m.pk, self->key->pk, SPIRT_PK_BYTES) != 0 ||
	    strcmp(m.id, self->id) != 0 || strcmp(m.run, t->run) != 0))
		return SPIRT_EINVAL;
	return 0;
}

/* Checks common to both messages, once the signature is good. */
static int
hs_check(struct spirt_member *m, const struct hsmsg *h,
    const struct spirt_trust *t, const char *self, uint64_t now, int roles)
{
	char sender[SPIRT_ID_MAX + 1];
	int rc;

	if (!id_is(h->receiver, self))
		return SPIRT_EADDR;
	if (!id_is(h->run, t->run))
		return SPIRT_ERUN;
	if (id_unpack(sender, h->sender) != 0)
		return SPIRT_EDATA;
	if ((rc = spirt_trust_member(m, t, h->idpk, sender, h->tok, now,
	    roles)) != 0)
		return rc;
	if (h->ts > now ? h->ts - now > t->window : now - h->ts > t->window)
		return SPIRT_ESTALE;
	return 0;
}

static void
hash32(unsigned char out[32], const unsigned char *a, size_t na,
    const unsigned char *b, size_t nb)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, a, na);
	if (b != NULL)
		crypto_generichash_update(&st, b, nb);
	crypto_generichash_final(&st, out, 32);
	sodium_memzero(&st, sizeof st);
}

/* K = BLAKE2b-256(key = th, label || k) */
static void
kdf(unsigned char out[32], const unsigned char th[32], const char *label,
    const unsigned char k[32])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, th, 32, 32);
	crypto_generichash_update(&st, (const unsigned char *)label,
	    strlen(label));
	crypto_generichash_update(&st, k, 32);
	crypto_generichash_final(&st, out, 32);
	sodium_memzero(&st, sizeof st);
}

/*
 * A session from the crypto_kx keys (tx_i: the initiator's send key, the
 * responder's receive key) and the transcript init || resp.
 */
static int
session_make(struct spirt_session **out, int initiator,
    const unsigned char tx_i[32], const unsigned char rx_i[32],
    const unsigned char *init, size_t ni, const unsigned char *resp,
    size_t nr, const char *run, const char *self, const char *peer,
    const struct spirt_member *m)
{
	unsigned char th[32];
	struct spirt_session *s;

	if ((s = sodium_malloc(sizeof *s)) == NULL)
		return ENOMEM;
	memset(s, 0, sizeof *s);
	hash32(th, init, ni, resp, nr);
	kdf(initiator ? s->tx : s->rx, th, KDF_I2R, tx_i);
	kdf(initiator ? s->rx : s->tx, th, KDF_R2I, rx_i);
	sodium_memzero(th, sizeof th);
	id_pack(s->run, run);
	id_pack(s->self, self);
	id_pack(s->peer, peer);
	s->member = *m;
	/* the answer's signature proved the responder; the other waits */
	s->confirmed = initiator;
	*out = s;
	return 0;
}

int
spirt_hs_init(struct spirt_hs **out, unsigned char *msg, size_t cap,
    size_t *len, const struct spirt_self *self, const struct spirt_trust *t,
    const char *peer, uint64_t now)
{
	struct spirt_hs *hs;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return SPIRT_EBUG;
	if ((rc = self_check(self, t)) != 0)
		return rc;
	if (!spirt_id_valid(peer) || cap < SPIRT_HS_MAX)
		return SPIRT_EINVAL;
	if ((hs = sodium_malloc(sizeof *hs)) == NULL)
		return ENOMEM;
	memset(hs, 0, sizeof *hs);
	crypto_kx_keypair(hs->epk, hs->esk);
	hs->len = hs_build(hs->msg, HS_INIT, now, t->run, self, peer, hs->epk,
	    NULL);
	memcpy(hs->self, self->id, strlen(self->id) + 1);
	memcpy(hs->peer, peer, strlen(peer) + 1);
	memcpy(msg, hs->msg, hs->len);
	*len = hs->len;
	*out = hs;
	return 0;
}

void
spirt_hs_free(struct spirt_hs *hs)
{
	if (hs != NULL)
		sodium_free(hs);
}

int
spirt_hs_respond(struct spirt_session **out, unsigned char *msg, size_t cap,
    size_t *len, const struct spirt_self *self, struct spirt_trust *t,
    const unsigned char *in, size_t inlen, uint64_t now, int roles)
{
	unsigned char esk[crypto_kx_SECRETKEYBYTES];
	unsigned char epk[crypto_kx_PUBLICKEYBYTES];
	unsigned char rx[32], tx[32], echo[32];
	struct spirt_member m;
	struct hsmsg h;
	size_t n;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return SPIRT_EBUG;
	if ((rc = self_check(self, t)) != 0)
		return rc;
	if (cap < SPIRT_HS_MAX)
		return SPIRT_EINVAL;
	if ((rc = hs_parse(&h, in, inlen, HS_INIT)) != 0)
		return rc;
	if (crypto_sign_verify_detached(h.sig, in, inlen - 64, h.idpk) != 0)
		return SPIRT_EMAC;
	if (!sodium_is_zero(h.echo, 32))
		return SPIRT_EDATA;
	if ((rc = hs_check(&m, &h, t, self->id, now, roles)) != 0)
		return rc;
	hash32(echo, in, inlen, NULL, 0);
	if (!seen_fresh(seen_find(t, h.idpk), h.ts, echo))
		return SPIRT_EREPLAY;

	crypto_kx_keypair(epk, esk);
	n = hs_build(msg, HS_RESP, now, t->run, self, m.id, epk, echo);
	/* responder = crypto_kx server: its rx is the initiator's tx */
	if (crypto_kx_server_session_keys(rx, tx, epk, esk, h.epk) != 0)
		rc = SPIRT_EDATA;       /* a weak point, signed by a member */
	else
		rc = session_make(out, 0, rx, tx, in, inlen, msg, n, t->run,
		    self->id, m.id, &m);
	if (rc == 0 && (rc = seen_record(t, h.idpk, h.ts, echo)) != 0) {
		spirt_session_free(*out);
		*out = NULL;
	}
	if (rc == 0)
		*len = n;
	sodium_memzero(esk, sizeof esk);
	sodium_memzero(rx, sizeof rx);
	sodium_memzero(tx, sizeof tx);
	return rc;
}

int
spirt_hs_finish(struct spirt_session **out, struct spirt_hs *hs,
    const struct spirt_trust *t, const unsigned char *in, size_t inlen,
    uint64_t now, int roles)
{
	unsigned char rx[32], tx[32], echo[32];
	struct spirt_member m;
	struct hsmsg h;
	int rc;

	*out = NULL;
	if (hs->done)
		return SPIRT_EREPLAY;
	if ((rc = hs_parse(&h, in, inlen, HS_RESP)) != 0)
		return rc;
	if (crypto_sign_verify_detached(h.sig, in, inlen - 64, h.idpk) != 0)
		return SPIRT_EMAC;
	/* a genuine answer to another handshake is a replay */
	hash32(echo, hs->msg, hs->len, NULL, 0);
	if (sodium_memcmp(echo, h.echo, 32) != 0)
		return SPIRT_EREPLAY;
	if (!id_is(h.sender, hs->peer))
		return SPIRT_EADDR;
	if ((rc = hs_check(&m, &h, t, hs->self, now, roles)) != 0)
		return rc;
	if (crypto_kx_client_session_keys(rx, tx, hs->epk, hs->esk, h.epk) !=
	    0)
		rc = SPIRT_EDATA;
	else
		rc = session_make(out, 1, tx, rx, hs->msg, hs->len, in, inlen,
		    t->run, hs->self, hs->peer, &m);
	if (rc == 0) {
		hs->done = 1;
		sodium_memzero(hs->esk, sizeof hs->esk);
	}
	sodium_memzero(rx, sizeof rx);
	sodium_memzero(tx, sizeof tx);
	return rc;
}

/* ---- messages ---- */

/*
 * Message (128 bytes + key + payload + 16): magic "SPMS", version, type,
 * key length, counter, step, run[32], sender[32], receiver[32], payload
 * length, the store key, then the XChaCha20-Poly1305 ciphertext and tag.
 * The associated data is everything before the ciphertext; the nonce is
 * the counter, little-endian, padded with zeros to 24 bytes.
 */

static size_t
key_len(const char *key)
{
	size_t n;

	for (n = 0; key[n]; n++)
		if (n == SPIRT_MSG_KEY_MAX || key[n] <= ' ' || key[n] > '~')
			return 0;
	return n;
}

size_t
spirt_msg_size(const char *key, size_t n)
{
	size_t k = key_len(key);

	if (k == 0 || n > crypto_aead_xchacha20poly1305_ietf_MESSAGEBYTES_MAX ||
	    n > SIZE_MAX - SPIRT_MSG_HEAD - k - SPIRT_MSG_TAG)
		return 0;
	return SPIRT_MSG_HEAD + k + n + SPIRT_MSG_TAG;
}

/* Header checks that need no key: sizes, magic, version, type, lengths. */
static int
msg_parse(const unsigned char *m, size_t len, size_t *k, size_t *n)
{
	uint64_t pn;

	if (len < SPIRT_MSG_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(m, MSG_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (m[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (m[5] != MSG_DATA)
		return SPIRT_EDATA;
	*k = spirt_le_get16(m + 6);
	if (*k == 0 || *k > SPIRT_MSG_KEY_MAX)
		return SPIRT_EDATA;
	if (len < SPIRT_MSG_HEAD + *k + SPIRT_MSG_TAG)
		return SPIRT_ETRUNC;
	pn = spirt_le_get64(m + 120);
	if (pn != len - SPIRT_MSG_HEAD - *k - SPIRT_MSG_TAG)
		return pn > len - SPIRT_MSG_HEAD - *k - SPIRT_MSG_TAG ?
		    SPIRT_ETRUNC : SPIRT_EDATA;
	*n = (size_t)pn;
	return 0;
}

int
spirt_msg_info(struct spirt_msg_info *info, const unsigned char *m,
    size_t len)
{
	size_t k, n;
	int rc;

	if ((rc = msg_parse(m, len, &k, &n)) != 0)
		return rc;
	memcpy(info->key, m + SPIRT_MSG_HEAD, k);
	info->key[k] = '\0';
	if (key_len(info->key) != k || id_unpack(info->run, m + 24) ||
	    id_unpack(info->sender, m + 56) ||
	    id_unpack(info->receiver, m + 88))
		return SPIRT_EDATA;
	info->counter = spirt_le_get64(m + 8);
	info->step = spirt_le_get64(m + 16);
	info->n = n;
	return 0;
}

static void
nonce_of(unsigned char nonce[24], uint64_t counter)
{
	memset(nonce, 0, 24);
	spirt_le_put64(nonce, counter);
}

/* the clear header of a message of type (one of the session's counters) */
static void
head_build(unsigned char *out, int type, const struct spirt_session *s,
    uint64_t step, const char *key, size_t k, uint64_t n)
{
	memcpy(out, MSG_MAGIC, 4);
	out[4] = FMT_VERSION;
	out[5] = (unsigned char)type;
	spirt_le_put16(out + 6, (uint16_t)k);
	spirt_le_put64(out + 8, s->txctr);
	spirt_le_put64(out + 16, step);
	memcpy(out + 24, s->run, SPIRT_ID_MAX);
	memcpy(out + 56, s->self, SPIRT_ID_MAX);
	memcpy(out + 88, s->peer, SPIRT_ID_MAX);
	spirt_le_put64(out + 120, n);
	memcpy(out + SPIRT_MSG_HEAD, key, k);
}

/*
 * What a receiver compares before it decrypts (docs/protocol.md, steps 2
 * and 3): run, sender and receiver, step, store key, then the counter.
 */
static int
head_check(const struct spirt_session *s, const unsigned char *m, size_t k,
    uint64_t step, const char *key)
{
	if (memcmp(m + 24, s->run, SPIRT_ID_MAX) != 0)
		return SPIRT_ERUN;
	if (memcmp(m + 56, s->peer, SPIRT_ID_MAX) != 0 ||
	    memcmp(m + 88, s->self, SPIRT_ID_MAX) != 0)
		return SPIRT_EADDR;
	if (spirt_le_get64(m + 16) != step)
		return SPIRT_ESTEP;
	if (k != strlen(key) || memcmp(m + SPIRT_MSG_HEAD, key, k) != 0)
		return SPIRT_EWRONGKEY;
	return win_check(&s->win, spirt_le_get64(m + 8));
}

int
spirt_session_seal(struct spirt_session *s, unsigned char *out, size_t cap,
    size_t *len, uint64_t step, const char *key, const void *pt, size_t n)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t k = key_len(key), need = spirt_msg_size(key, n);
	int rc;

	if (k == 0)
		return SPIRT_EINVAL;
	if (need == 0)
		return EOVERFLOW;
	if (cap < need)
		return SPIRT_EINVAL;
	if (s->txctr >= UINT64_MAX - 1)
		return EOVERFLOW;       /* a new handshake is needed */
	head_build(out, MSG_DATA, s, step, key, k, n);
	nonce_of(nonce, s->txctr);
	if ((rc = spirt_aead_seal(out + SPIRT_MSG_HEAD + k, out +
	    SPIRT_MSG_HEAD + k + n, pt, n, out, SPIRT_MSG_HEAD + k, nonce,
	    s->tx)) != 0)
		return rc;
	s->txctr++;
	*len = need;
	return 0;
}

int
spirt_session_open(struct spirt_session *s, void *pt, size_t cap, size_t *n,
    uint64_t step, const char *key, const unsigned char *m, size_t len)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t k, pn;
	uint64_t ctr;
	int rc;

	if ((rc = msg_parse(m, len, &k, &pn)) != 0)
		return rc;
	if ((rc = head_check(s, m, k, step, key)) != 0)
		return rc;
	ctr = spirt_le_get64(m + 8);
	if (cap < pn)
		return SPIRT_EINVAL;
	nonce_of(nonce, ctr);
	if ((rc = spirt_aead_open(pt, m + SPIRT_MSG_HEAD + k, pn, m +
	    SPIRT_MSG_HEAD + k + pn, m, SPIRT_MSG_HEAD + k, nonce, s->rx)) != 0)
		return rc;
	win_commit(&s->win, ctr);
	s->confirmed = 1;
	*n = pn;
	return 0;
}

/* ---- streamed messages ---- */

/*
 * Stream (type 2): the header and key as a message's, then frames of
 * SPIRT_FRAME_BYTES plaintext bytes (the last one n mod that, or a whole
 * one; a single empty frame when n = 0), each its ciphertext and tag.
 * Frame i: nonce counter (8 LE), i (8 LE), 1, seven zero bytes (a type 1
 * nonce has a zero there); associated data the header and key, i (8 LE),
 * and 1 for the last frame, else 0.
 */
#define MSG_STREAM SPIRT_MSG_STREAM

_Static_assert(MSG_DATA == SPIRT_MSG_SINGLE, "one message type");

uint64_t
spirt_stream_frames(uint64_t n)
{
	return n == 0 ? 1 : n / SPIRT_FRAME_BYTES +
	    (n % SPIRT_FRAME_BYTES != 0);
}

/* 128 + k + n + 16 F, or 0 if it overflows */
static uint64_t
stream_total(size_t k, uint64_t n)
{
	uint64_t f = spirt_stream_frames(n), fixed = SPIRT_MSG_HEAD + k;

	if (n > crypto_aead_xchacha20poly1305_ietf_MESSAGEBYTES_MAX ||
	    n > UINT64_MAX / 2 || f > (UINT64_MAX / 2 - n - fixed) /
	    SPIRT_MSG_TAG)
		return 0;
	return fixed + n + f * SPIRT_MSG_TAG;
}

size_t
spirt_stream_size(const char *key, size_t n)
{
	size_t k = key_len(key);
	uint64_t t = k ? stream_total(k, n) : 0;

	return t > SIZE_MAX ? 0 : (size_t)t;
}

size_t
spirt_stream_frame_len(const struct spirt_stream *w)
{
	uint64_t off = w->next * SPIRT_FRAME_BYTES;

	if (w->next >= w->frames)
		return 0;
	return (size_t)(w->n - off < SPIRT_FRAME_BYTES ? w->n - off :
	    SPIRT_FRAME_BYTES);
}

int
spirt_msg_peek(const unsigned char *m, size_t len, int *type, size_t *hlen,
    uint64_t *total)
{
	size_t k;
	uint64_t n;

	if (len < SPIRT_MSG_HEAD)
		return SPIRT_ETRUNC;
	if (memcmp(m, MSG_MAGIC, 4) != 0)
		return SPIRT_EMAGIC;
	if (m[4] != FMT_VERSION)
		return SPIRT_EVERSION;
	if (m[5] != MSG_DATA && m[5] != MSG_STREAM)
		return SPIRT_EDATA;
	k = spirt_le_get16(m + 6);
	n = spirt_le_get64(m + 120);
	if (k == 0 || k > SPIRT_MSG_KEY_MAX)
		return SPIRT_EDATA;
	*type = m[5];
	*hlen = SPIRT_MSG_HEAD + k;
	if (m[5] == MSG_DATA)
		*total = n > UINT64_MAX / 2 ? 0 : SPIRT_MSG_HEAD + k + n +
		    SPIRT_MSG_TAG;
	else
		*total = stream_total(k, n);
	return *total == 0 ? SPIRT_EDATA : 0;
}

static void
frame_nonce(unsigned char nonce[24], uint64_t counter, uint64_t i)
{
	memset(nonce, 0, 24);
	spirt_le_put64(nonce, counter);
	spirt_le_put64(nonce + 8, i);
	nonce[16] = 1;
}

/* the associated data of frame w->next: header, key, number, last flag */
static size_t
frame_ad(struct spirt_stream *w)
{
	spirt_le_put64(w->ad + w->hlen, w->next);
	w->ad[w->hlen + 8] = w->next + 1 == w->frames;
	return w->hlen + 9;
}

int
spirt_stream_seal_begin(struct spirt_stream *w, struct spirt_session *s,
    unsigned char *head, size_t cap, size_t *hlen, uint64_t step,
    const char *key, size_t n)
{
	size_t k = key_len(key);

	memset(w, 0, sizeof *w);
	if (k == 0 || cap < SPIRT_MSG_HEAD + k)
		return SPIRT_EINVAL;
	if (stream_total(k, n) == 0 || s->txctr >= UINT64_MAX - 1)
		return EOVERFLOW;
	head_build(head, MSG_STREAM, s, step, key, k, n);
	w->s = s;
	w->hlen = SPIRT_MSG_HEAD + k;
	memcpy(w->ad, head, w->hlen);
	w->counter = s->txctr++;
	w->n = n;
	w->frames = spirt_stream_frames(n);
	*hlen = w->hlen;
	return 0;
}

int
spirt_stream_seal_frame(struct spirt_stream *w, unsigned char *out,
    const void *pt, size_t len)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t adlen;
	int rc;

	if (w->open || w->s == NULL || w->next >= w->frames ||
	    len != spirt_stream_frame_len(w))
		return SPIRT_EINVAL;
	adlen = frame_ad(w);
	frame_nonce(nonce, w->counter, w->next);
	if ((rc = spirt_aead_seal(out, out + len, pt, len, w->ad, adlen, nonce,
	    w->s->tx)) != 0)
		return rc;
	w->next++;
	return 0;
}

int
spirt_stream_open_begin(struct spirt_stream *r, struct spirt_session *s,
    const unsigned char *head, size_t hlen, uint64_t step, const char *key,
    size_t *n)
{
	uint64_t total;
	size_t hl;
	int rc, type;

	memset(r, 0, sizeof *r);
	if ((rc = spirt_msg_peek(head, hlen, &type, &hl, &total)) != 0)
		return rc;
	if (type != MSG_STREAM)
		return SPIRT_EDATA;
	if (hlen < hl)
		return SPIRT_ETRUNC;
	if (hlen > hl)
		return SPIRT_EDATA;
	if ((rc = head_check(s, head, hl - SPIRT_MSG_HEAD, step, key)) != 0)
		return rc;
	r->n = spirt_le_get64(head + 120);
	if (r->n > SIZE_MAX)
		return SPIRT_EDATA;
	r->s = s;
	r->open = 1;
	r->hlen = hl;
	memcpy(r->ad, head, hl);
	r->counter = spirt_le_get64(head + 8);
	r->frames = spirt_stream_frames(r->n);
	*n = (size_t)r->n;
	return 0;
}

int
spirt_stream_open_frame(struct spirt_stream *r, void *pt,
    const unsigned char *in, size_t inlen)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	size_t len = spirt_stream_frame_len(r), adlen;
	int rc;

	if (!r->open || r->s == NULL)
		return SPIRT_EINVAL;
	if (r->next >= r->frames)
		return SPIRT_EDATA;             /* more than the header said */
	if (inlen != len + SPIRT_MSG_TAG)
		return inlen < len + SPIRT_MSG_TAG ? SPIRT_ETRUNC : SPIRT_EDATA;
	adlen = frame_ad(r);
	frame_nonce(nonce, r->counter, r->next);
	if ((rc = spirt_aead_open(pt, in, len, in + len, r->ad, adlen, nonce,
	    r->s->rx)) != 0)
		return rc;
	r->next++;
	return 0;
}

int
spirt_stream_open_end(struct spirt_stream *r)
{
	int rc;

	if (!r->open || r->s == NULL)
		return SPIRT_EINVAL;
	if (r->next < r->frames)
		return SPIRT_ETRUNC;
	/* one answer per counter: checked again, as another stream of the
	 * session may have been opened since this one began */
	if ((rc = win_check(&r->s->win, r->counter)) != 0)
		return rc;
	win_commit(&r->s->win, r->counter);
	r->s->confirmed = 1;
	r->s = NULL;
	return 0;
}

int
spirt_stream_seal(struct spirt_session *s, unsigned char *out, size_t cap,
    size_t *len, uint64_t step, const char *key, const void *pt, size_t n)
{
	struct spirt_stream w;
	size_t need = spirt_stream_size(key, n), hl, fl, off = 0;
	unsigned char *p;
	int rc;

	if (key_len(key) == 0)
		return SPIRT_EINVAL;
	if (need == 0)
		return EOVERFLOW;
	if (cap < need)
		return SPIRT_EINVAL;
	if ((rc = spirt_stream_seal_begin(&w, s, out, cap, &hl, step, key, n)))
		return rc;
	p = out + hl;
	while (w.next < w.frames) {
		fl = spirt_stream_frame_len(&w);
		if ((rc = spirt_stream_seal_frame(&w, p, (const unsigned char *)
		    pt + off, fl)) != 0)
			return rc;
		p += fl + SPIRT_MSG_TAG;
		off += fl;
	}
	*len = need;
	return 0;
}

int
spirt_stream_open(struct spirt_session *s, void *pt, size_t cap, size_t *n,
    uint64_t step, const char *key, const unsigned char *m, size_t len)
{
	struct spirt_stream r;
	uint64_t total;
	size_t hl, fl, off = 0;
	const unsigned char *p;
	int rc, type;

	if ((rc = spirt_msg_peek(m, len, &type, &hl, &total)) != 0)
		return rc;
	if (type != MSG_STREAM)
		return SPIRT_EDATA;
	if (len != total)
		return len < total ? SPIRT_ETRUNC : SPIRT_EDATA;
	if ((rc = spirt_stream_open_begin(&r, s, m, hl, step, key, n)) != 0)
		return rc;
	if (cap < *n)
		return SPIRT_EINVAL;
	p = m + hl;
	while (r.next < r.frames) {
		fl = spirt_stream_frame_len(&r);
		if ((rc = spirt_stream_open_frame(&r, (unsigned char *)pt + off,
		    p, fl + SPIRT_MSG_TAG)) != 0)
			return rc;
		p += fl + SPIRT_MSG_TAG;
		off += fl;
	}
	return spirt_stream_open_end(&r);
}
