/* test_crypto.c - keys, tokens, handshake, messages: round trips, refusals */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "check.h"
#include "crypto.h"
#include "prim.h"
#include "vhash.h"

#define SEC 1000000000ull
#define T0 (1700000000ull * SEC)
#define WINDOW (30 * SEC)
#define HOUR (3600 * SEC)
/* BLAKE2b-256 of the known-answer exchange (test_known_answer) */
#define KAT_HASH \
	"2a60638375e1c8973ec188e04660943d3c3c4f9ead70bc61adcf178b84ea04c2"
/* ... and of its stream, decrypted in place after the check (the frozen
 * bytes are then the first frame's ciphertext and the second's plaintext) */
#define KAT_STREAM_HASH \
	"f83e88295c5890702b565dc77adb7069e912de567d0340c1c97cda2dd05ba95f"

/* ---- a deterministic random source for the known-answer test ---- */

static int det;                 /* 1: deterministic, logged */
static uint64_t detctr;
static unsigned char detlog[4096];
static size_t detn;

static const char *
rng_name(void)
{
	return "spirt-test";
}

static void
rng_buf(void *const buf, const size_t n)
{
	unsigned char seed[randombytes_SEEDBYTES] = { 0 };

	if (!det) {
		randombytes_sysrandom_implementation.buf(buf, n);
		return;
	}
	for (int i = 0; i < 8; i++)
		seed[i] = (unsigned char)(detctr >> (8 * i));
	detctr++;
	randombytes_buf_deterministic(buf, n, seed);
	if (detn + n <= sizeof detlog) {
		memcpy(detlog + detn, buf, n);
		detn += n;
	}
}

static uint32_t
rng_random(void)
{
	uint32_t v;

	rng_buf(&v, sizeof v);
	return v;
}

static randombytes_implementation rng = {
	rng_name, rng_random, NULL, NULL, rng_buf, NULL
};

/* ---- helpers ---- */

static char dir[64];

static char *
path(const char *name)
{
	static char buf[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
	return buf[i];
}

static void
put_file(const char *p, const char *text, size_t n, mode_t mode)
{
	int fd;

	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK((size_t)write(fd, text, n) == n);
	CHECK(fchmod(fd, mode) == 0);
	close(fd);
}

static char *
get_file(const char *p, size_t *n)
{
	static char buf[4096];
	int fd = open(p, O_RDONLY);
	ssize_t r;

	*n = 0;
	if (fd < 0)
		return NULL;
	r = read(fd, buf, sizeof buf - 1);
	close(fd);
	*n = r > 0 ? (size_t)r : 0;
	buf[*n] = '\0';
	return buf;
}

static struct spirt_key *
seed_key(unsigned char b)
{
	unsigned char seed[32];
	struct spirt_key *k = NULL;

	memset(seed, b, sizeof seed);
	CHECK_RC(spirt_key_from_seed(&k, seed));
	return k;
}

/* Sign msg[0, len - 64) again with the key of seed byte b (forgeries). */
static void
resign(unsigned char *msg, size_t len, unsigned char b)
{
	unsigned char seed[32], pk[32], sk[64];

	memset(seed, b, sizeof seed);
	crypto_sign_seed_keypair(pk, sk, seed);
	crypto_sign_detached(msg + len - 64, NULL, msg, len - 64, sk);
}

static void
hexto(unsigned char *out, const char *hex)
{
	size_t n = strlen(hex) / 2, got = 0;

	CHECK(sodium_hex2bin(out, n, hex, 2 * n, NULL, &got, NULL) == 0 &&
	    got == n);
}

/* ---- primitives: published known answers ---- */

static void
test_primitives(void)
{
	/* RFC 8032 section 7.1, TEST 1 */
	unsigned char seed[32], pk[32], sk[64], sig[64], want[64];
	struct spirt_key *k;
	unsigned char kpk[32];
	/* draft-irtf-cfrg-xchacha-03 A.3.1 */
	static const char pt[] = "Ladies and Gentlemen of the class of '99: "
	    "If I could offer you only one tip for the future, sunscreen "
	    "would be it.";
	unsigned char key[32], nonce[24], ad[12], ct[sizeof pt + 16];
	unsigned char wct[sizeof pt - 1 + 16], h[32], wh[32];
	unsigned long long clen;

	hexto(seed, "9d61b19deffd5a60ba844af492ec2cc4"
	    "4449c5697b326919703bac031cae7f60");
	hexto(want, "d75a980182b10ab7d54bfed3c964073a"
	    "0ee172f3daa62325af021a68f707511a");
	CHECK_RC(spirt_key_from_seed(&k, seed));
	spirt_key_public(kpk, k);
	CHECK(memcmp(kpk, want, 32) == 0);
	spirt_key_free(k);
	crypto_sign_seed_keypair(pk, sk, seed);
	crypto_sign_detached(sig, NULL, (const unsigned char *)"", 0, sk);
	hexto(want, "e5564300c360ac729086e2cc806e828a"
	    "84877f1eb8e5d974d873e06522490155"
	    "5fb8821590a33bacc61e39701cf9b46b"
	    "d25bf5f0595bbe24655141438e7a100b");
	CHECK(memcmp(sig, want, 64) == 0);

	hexto(key, "808182838485868788898a8b8c8d8e8f"
	    "909192939495969798999a9b9c9d9e9f");
	hexto(nonce, "404142434445464748494a4b4c4d4e4f5051525354555657");
	hexto(ad, "50515253c0c1c2c3c4c5c6c7");
	hexto(wct, "bd6d179d3e83d43b9576579493c0e939"
	    "572a1700252bfaccbed2902c21396cbb"
	    "731c7f1b0b4aa6440bf3a82f4eda7e39"
	    "ae64c6708c54c216cb96b72e1213b452"
	    "2f8c9ba40db5d945b11b69b982c1bb9e"
	    "3f3fac2bc369488f76b2383565d3fff9"
	    "21f9664c97637da9768812f615c68b13"
	    "b52ec0875924c1c7987947deafd8780acf49");
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, &clen,
	    (const unsigned char *)pt, sizeof pt - 1, ad, sizeof ad, NULL,
	    nonce, key);
	CHECK(clen == sizeof wct && memcmp(ct, wct, sizeof wct) == 0);

	/* BLAKE2b-256 of the empty string */
	crypto_generichash(h, 32, NULL, 0, NULL, 0);
	hexto(wh, "0e5751c026e543b2e8ab2eb06099daa1"
	    "d1e5df47778f7787faab45cdf12fe3a8");
	CHECK(memcmp(h, wh, 32) == 0);
}

/* ---- error codes ---- */

static void
test_codes(void)
{
	static const int dataerr[] = {
		SPIRT_EMAC, SPIRT_EREPLAY, SPIRT_ESTALE, SPIRT_EEXPIRED,
		SPIRT_EUNKNOWNKEY, SPIRT_ERUN, SPIRT_EROLE, SPIRT_EADDR,
		SPIRT_ESTEP, SPIRT_EWRONGKEY, SPIRT_EKEYFILE,
	};

	for (size_t i = 0; i < sizeof dataerr / sizeof *dataerr; i++) {
		CHECK(spirt_exit(dataerr[i]) == SPIRT_EX_DATAERR);
		CHECK(strcmp(spirt_strerror(dataerr[i]), "unknown error"));
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(spirt_strerror(dataerr[i]),
			    spirt_strerror(dataerr[j])));
	}
	CHECK(spirt_exit(SPIRT_EKEYPERM) == SPIRT_EX_NOINPUT);
	CHECK(strstr(spirt_strerror(SPIRT_EKEYPERM), "group or others"));
}

/* ---- ids and roles ---- */

static void
test_ids(void)
{
	CHECK(spirt_id_valid("p1"));
	CHECK(spirt_id_valid("run-2024.05_a"));
	CHECK(spirt_id_valid("01234567890123456789012345678901"));
	CHECK(!spirt_id_valid("012345678901234567890123456789012"));
	CHECK(!spirt_id_valid(""));
	CHECK(!spirt_id_valid(".p"));
	CHECK(!spirt_id_valid("-p"));
	CHECK(!spirt_id_valid("p 1"));
	CHECK(!spirt_id_valid("p/1"));
	CHECK(!spirt_id_valid("p\xc3\xa9"));
	CHECK(spirt_role_parse("peer") == SPIRT_ROLE_PEER);
	CHECK(spirt_role_parse("function") == SPIRT_ROLE_FUNCTION);
	CHECK(spirt_role_parse("admin") == 0);
	CHECK(strcmp(spirt_role_name(SPIRT_ROLE_FUNCTION), "function") == 0);
}

/* ---- key files ---- */

static void
test_keyfiles(void)
{
	struct spirt_key *k, *l = NULL;
	unsigned char pk[32], lpk[32], qk[32];
	char hex[SPIRT_PK_HEX], tmp[160], *text, bad[2048], p[128], q[128];
	struct stat st;
	size_t n, off;
	mode_t old;

	snprintf(p, sizeof p, "%s", path("id.key"));
	snprintf(q, sizeof q, "%s", path("bad.key"));
	CHECK_RC(spirt_key_generate(&k));
	spirt_key_public(pk, k);
	/* a permissive umask and a stale world-readable temporary */
	old = umask(0);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p, (long)getpid());
	put_file(tmp, "stale", 5, 0644);
	CHECK_RC(spirt_key_write(k, p, SPIRT_KEY_NOOVERWRITE));
	umask(old);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(access(tmp, F_OK) != 0);
	CHECK_RC(spirt_key_load(&l, p));
	if (l) {
		spirt_key_public(lpk, l);
		CHECK(memcmp(pk, lpk, 32) == 0);
	}
	spirt_key_free(l);

	/* never overwritten unless asked */
	text = get_file(p, &n);
	CHECK(n > 0 && text != NULL);
	memcpy(bad, text, n);
	spirt_key_free(k);
	CHECK_RC(spirt_key_generate(&k));
	CHECK_EQ_RC(spirt_key_write(k, p, SPIRT_KEY_NOOVERWRITE),
	    SPIRT_EOUTPUT(EEXIST));
	CHECK(spirt_exit(SPIRT_EOUTPUT(EEXIST)) == SPIRT_EX_CANTCREAT);
	text = get_file(p, &off);
	CHECK(off == n && memcmp(bad, text, n) == 0);
	CHECK_RC(spirt_key_write(k, p, 0));
	CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK_RC(spirt_key_load(&l, p));
	spirt_key_public(lpk, k);
	spirt_key_public(qk, l);
	CHECK(memcmp(lpk, qk, 32) == 0 && memcmp(lpk, pk, 32) != 0);
	spirt_key_free(l);

	/* group or others may do nothing with it */
	static const mode_t modes[] = { 0644, 0640, 0604, 0620, 0602, 0610 };
	for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
		CHECK(chmod(p, modes[i]) == 0);
		l = (struct spirt_key *)1;
		CHECK_EQ_RC(spirt_key_load(&l, p), SPIRT_EKEYPERM);
		CHECK(l == NULL);
	}
	CHECK(chmod(p, 0400) == 0);
	CHECK_RC(spirt_key_load(&l, p));
	spirt_key_free(l);
	CHECK(chmod(p, 0600) == 0);

	/* malformed files, each at mode 0600 */
	text = get_file(p, &n);
	memcpy(bad, text, n);
#define BAD(len, want) do { \
	put_file(q, bad, (len), 0600); \
	l = NULL; \
	CHECK_EQ_RC(spirt_key_load(&l, q), (want)); \
	CHECK(l == NULL); \
	memcpy(bad, text, n); \
} while (0)
	BAD(0, SPIRT_EKEYFILE);                         /* empty */
	BAD(n - 1, SPIRT_EKEYFILE);                     /* no last newline */
	BAD(n - 4, SPIRT_EKEYFILE);                     /* no END */
	bad[n] = 'x';
	BAD(n + 1, SPIRT_EKEYFILE);                     /* junk after END */
	bad[8] = '2';
	BAD(n, SPIRT_EVERSION);                         /* VERSION=2 */
	bad[8] = 'x';
	BAD(n, SPIRT_EKEYFILE);
	bad[strlen("VERSION=1\nTYPE=spirt-ed25519-")] = 'p';
	BAD(n, SPIRT_EKEYFILE);                         /* another type */
	off = (size_t)(strstr(text, "SECRET=") - text) + 7;
	bad[off] = bad[off] == '0' ? '1' : '0';
	BAD(n, SPIRT_EKEYFILE);                         /* secret != public */
	bad[off] = 'g';
	BAD(n, SPIRT_EKEYFILE);                         /* not hex */
	off = (size_t)(strstr(text, "PUBLIC=") - text) + 7;
	bad[off] = bad[off] == '0' ? '1' : '0';
	BAD(n, SPIRT_EKEYFILE);                         /* public != secret */
	memmove(bad + off, bad + off + 1, n - off - 1);
	BAD(n - 1, SPIRT_EKEYFILE);                     /* 63 digits */
	memset(bad, '#', sizeof bad);
	BAD(sizeof bad, SPIRT_EKEYFILE);                /* too long */
#undef BAD
	CHECK_EQ_RC(spirt_key_load(&l, path("none.key")), ENOENT);
	CHECK_EQ_RC(spirt_key_load(&l, dir), EISDIR);
	/* a directory is no key file */
	CHECK_EQ_RC(spirt_key_write(k, dir, 0), SPIRT_EOUTPUT(EISDIR));

	/* public key files and text */
	CHECK_RC(spirt_pubkey_write(lpk, path("id.pub")));
	CHECK_RC(spirt_pubkey_load(qk, path("id.pub")));
	CHECK(memcmp(qk, lpk, 32) == 0);
	CHECK_EQ_RC(spirt_pubkey_load(qk, p), SPIRT_EKEYFILE);
	CHECK_EQ_RC(spirt_key_load(&l, path("id.pub")), SPIRT_EKEYPERM);
	CHECK(chmod(path("id.pub"), 0600) == 0);
	CHECK_EQ_RC(spirt_key_load(&l, path("id.pub")), SPIRT_EKEYFILE);
	spirt_pubkey_format(hex, lpk);
	CHECK(strlen(hex) == 64);
	CHECK_RC(spirt_pubkey_parse(qk, hex));
	CHECK(memcmp(qk, lpk, 32) == 0);
	hex[63] = '\0';
	CHECK_EQ_RC(spirt_pubkey_parse(qk, hex), SPIRT_EINVAL);
	hex[63] = 'z';
	CHECK_EQ_RC(spirt_pubkey_parse(qk, hex), SPIRT_EINVAL);
	spirt_key_free(k);
	unlink(p);
	unlink(q);
	unlink(path("id.pub"));
}

/* ---- member tokens ---- */

/* where a token's group signature begins (lib/token.c's layout) */
#define TOK_SIG_AT 152

static void
test_tokens(void)
{
	struct spirt_key *g = seed_key(1), *h = seed_key(2), *a = seed_key(3);
	unsigned char gpk[32], hpk[32], apk[32], tok[SPIRT_TOKEN_BYTES];
	unsigned char t2[SPIRT_TOKEN_BYTES + 1];
	struct spirt_member m;
	char text[600];
	size_t n;
	int rc;

	spirt_key_public(gpk, g);
	spirt_key_public(hpk, h);
	spirt_key_public(apk, a);
	CHECK_RC(spirt_token_make(tok, g, "run1", "p1", apk, SPIRT_ROLE_PEER,
	    T0, T0 + HOUR));
	memset(&m, 0, sizeof m);
	CHECK_RC(spirt_token_verify(&m, tok, sizeof tok, gpk, "run1", T0 + 1,
	    SPIRT_ROLE_PEER));
	CHECK(strcmp(m.id, "p1") == 0 && strcmp(m.run, "run1") == 0);
	CHECK(memcmp(m.pk, apk, 32) == 0 && m.role == SPIRT_ROLE_PEER);
	CHECK(m.issued == T0 && m.expires == T0 + HOUR);
	CHECK_RC(spirt_token_verify(NULL, tok, sizeof tok, gpk, "run1",
	    T0 + HOUR - 1, SPIRT_ROLE_PEER | SPIRT_ROLE_FUNCTION));

	/* refusals */
	CHECK_EQ_RC(spirt_token_verify(NULL, tok, sizeof tok, gpk, "run1",
	    T0 + HOUR, SPIRT_ROLE_PEER), SPIRT_EEXPIRED);
	CHECK_EQ_RC(spirt_token_verify(NULL, tok, sizeof tok, gpk, "run2",
	    T0 + 1, SPIRT_ROLE_PEER), SPIRT_ERUN);
	CHECK_EQ_RC(spirt_token_verify(NULL, tok, sizeof tok, gpk, "run1",
	    T0 + 1, SPIRT_ROLE_FUNCTION), SPIRT_EROLE);
	CHECK_EQ_RC(spirt_token_verify(NULL, tok, sizeof tok, hpk, "run1",
	    T0 + 1, SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
	CHECK_EQ_RC(spirt_token_verify(NULL, tok, sizeof tok - 1, gpk, "run1",
	    T0 + 1, SPIRT_ROLE_PEER), SPIRT_ETRUNC);
	memcpy(t2, tok, sizeof tok);
	CHECK_EQ_RC(spirt_token_verify(NULL, t2, sizeof t2, gpk, "run1",
	    T0 + 1, SPIRT_ROLE_PEER), SPIRT_EDATA);
	/* another group key's token claiming to be ours */
	CHECK_RC(spirt_token_make(t2, h, "run1", "p1", apk, SPIRT_ROLE_PEER,
	    T0, T0 + HOUR));
	memcpy(t2 + 120, gpk, 32);
	CHECK_EQ_RC(spirt_token_verify(NULL, t2, SPIRT_TOKEN_BYTES, gpk,
	    "run1", T0 + 1, SPIRT_ROLE_PEER), SPIRT_EMAC);
	/* a function's token offered as a peer's */
	CHECK_RC(spirt_token_make(t2, g, "run1", "f1", apk,
	    SPIRT_ROLE_FUNCTION, T0, T0 + HOUR));
	CHECK_EQ_RC(spirt_token_verify(NULL, t2, SPIRT_TOKEN_BYTES, gpk,
	    "run1", T0 + 1, SPIRT_ROLE_PEER), SPIRT_EROLE);

	/* every byte, every field: a flipped bit is refused */
	for (size_t i = 0; i < sizeof tok; i++) {
		memcpy(t2, tok, sizeof tok);
		t2[i] ^= (unsigned char)(1u << (i % 8));
		rc = spirt_token_verify(NULL, t2, sizeof tok, gpk, "run1",
		    T0 + 1, SPIRT_ROLE_PEER);
		if (i < 4)
			CHECK_EQ_RC(rc, SPIRT_EMAGIC);
		else if (i == 4)
			CHECK_EQ_RC(rc, SPIRT_EVERSION);
		else if (i >= 120 && i < 152)
			CHECK_EQ_RC(rc, SPIRT_EUNKNOWNKEY);
		else
			CHECK_EQ_RC(rc, SPIRT_EMAC);
	}

	/* a trust keeps the tokens whose signature held (each step's
	 * digests carry them): the same bytes again skip only the
	 * signature; expiry, run, role and member are checked every time,
	 * and a bit flipped anywhere is still refused */
	{
		struct spirt_trust *tr;

		CHECK_RC(spirt_trust_new(&tr, "run1", gpk, WINDOW));
		for (int k = 0; k < 2; k++) {
			memset(&m, 0, sizeof m);
			CHECK_RC(spirt_trust_member(&m, tr, apk, "p1", tok,
			    T0 + 1, SPIRT_ROLE_PEER));
			CHECK(strcmp(m.id, "p1") == 0 && m.expires == T0 +
			    HOUR && memcmp(m.pk, apk, 32) == 0);
			CHECK_EQ_RC(spirt_trust_member(NULL, tr, apk, "p1",
			    tok, T0 + HOUR, SPIRT_ROLE_PEER), SPIRT_EEXPIRED);
			CHECK_EQ_RC(spirt_trust_member(NULL, tr, apk, "p1",
			    tok, T0 + 1, SPIRT_ROLE_FUNCTION), SPIRT_EROLE);
			CHECK_EQ_RC(spirt_trust_member(NULL, tr, apk, "p2",
			    tok, T0 + 1, SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
			CHECK_EQ_RC(spirt_trust_member(NULL, tr, hpk, "p1",
			    tok, T0 + 1, SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
			for (size_t i = TOK_SIG_AT; i < sizeof tok; i += 7) {
				memcpy(t2, tok, sizeof tok);
				t2[i] ^= 0x10;
				CHECK_EQ_RC(spirt_trust_member(NULL, tr, apk,
				    "p1", t2, T0 + 1, SPIRT_ROLE_PEER),
				    SPIRT_EMAC);
			}
		}
		spirt_trust_free(tr);
		CHECK_RC(spirt_trust_new(&tr, "run2", gpk, WINDOW));
		CHECK_EQ_RC(spirt_trust_member(NULL, tr, apk, "p1", tok,
		    T0 + 1, SPIRT_ROLE_PEER), SPIRT_ERUN);
		CHECK_EQ_RC(spirt_trust_member(NULL, tr, apk, "p1", tok,
		    T0 + 1, SPIRT_ROLE_PEER), SPIRT_ERUN);
		spirt_trust_free(tr);
	}

	/* bad arguments */
	CHECK_EQ_RC(spirt_token_make(t2, g, "run 1", "p1", apk,
	    SPIRT_ROLE_PEER, T0, T0 + 1), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_token_make(t2, g, "run1", "", apk,
	    SPIRT_ROLE_PEER, T0, T0 + 1), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_token_make(t2, g, "run1", "p1", apk, 3, T0, T0 + 1),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_token_make(t2, g, "run1", "p1", apk,
	    SPIRT_ROLE_PEER, T0, T0), SPIRT_EINVAL);

	/* token files */
	CHECK_RC(spirt_token_format(text, sizeof text, &n, tok));
	CHECK(n == strlen(text) && strncmp(text, "VERSION=1\n", 10) == 0);
	memset(t2, 0, sizeof t2);
	CHECK_RC(spirt_token_parse(t2, text, n));
	CHECK(memcmp(t2, tok, sizeof tok) == 0);
	CHECK_EQ_RC(spirt_token_parse(t2, text, n - 1), SPIRT_EKEYFILE);
	text[50] = 'q';
	CHECK_EQ_RC(spirt_token_parse(t2, text, n), SPIRT_EKEYFILE);
	text[8] = '7';
	CHECK_EQ_RC(spirt_token_parse(t2, text, n), SPIRT_EVERSION);
	CHECK_EQ_RC(spirt_token_format(text, 100, &n, tok), SPIRT_EINVAL);

	spirt_key_free(g);
	spirt_key_free(h);
	spirt_key_free(a);
}

/* ---- allowlist ---- */

static void
test_allowlist(void)
{
	struct spirt_key *a = seed_key(3), *b = seed_key(4), *c = seed_key(5);
	unsigned char apk[32], bpk[32], cpk[32];
	char ah[SPIRT_PK_HEX], bh[SPIRT_PK_HEX], text[1024];
	struct spirt_trust *t;
	struct spirt_member m;
	size_t line;

	spirt_key_public(apk, a);
	spirt_key_public(bpk, b);
	spirt_key_public(cpk, c);
	spirt_pubkey_format(ah, apk);
	spirt_pubkey_format(bh, bpk);
	CHECK_RC(spirt_trust_new(&t, "run1", NULL, WINDOW));
	snprintf(text, sizeof text, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "# the first peer\nMEMBER=%s peer p1\nMEMBER=%s function f1\n"
	    "END\n", ah, bh);
	CHECK_RC(spirt_trust_allow_parse(t, text, strlen(text), &line));
	CHECK(line == 0);
	CHECK_RC(spirt_trust_member(&m, t, apk, "p1", NULL, T0,
	    SPIRT_ROLE_PEER));
	CHECK(strcmp(m.id, "p1") == 0 && m.role == SPIRT_ROLE_PEER);
	CHECK(strcmp(m.run, "run1") == 0 && m.expires == UINT64_MAX);
	CHECK_EQ_RC(spirt_trust_member(&m, t, cpk, "p3", NULL, T0,
	    SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
	CHECK_EQ_RC(spirt_trust_member(&m, t, apk, "p2", NULL, T0,
	    SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
	CHECK_EQ_RC(spirt_trust_member(&m, t, bpk, "f1", NULL, T0,
	    SPIRT_ROLE_PEER), SPIRT_EROLE);
	CHECK_RC(spirt_trust_member(&m, t, bpk, "f1", NULL, T0,
	    SPIRT_ROLE_PEER | SPIRT_ROLE_FUNCTION));
	/* duplicates */
	CHECK_EQ_RC(spirt_trust_allow(t, apk, "p9", SPIRT_ROLE_PEER),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_trust_allow(t, cpk, "p1", SPIRT_ROLE_PEER),
	    SPIRT_EINVAL);
	CHECK_RC(spirt_trust_allow(t, cpk, "p3", SPIRT_ROLE_PEER));
	spirt_trust_free(t);

	/* errors name their line */
#define BADLIST(want, wline, ...) do { \
	CHECK_RC(spirt_trust_new(&t, "run1", NULL, WINDOW)); \
	snprintf(text, sizeof text, __VA_ARGS__); \
	line = 0; \
	CHECK_EQ_RC(spirt_trust_allow_parse(t, text, strlen(text), &line), \
	    (want)); \
	CHECK(line == (wline)); \
	spirt_trust_free(t); \
} while (0)
	BADLIST(SPIRT_EVERSION, 1, "VERSION=2\nTYPE=spirt-allowlist\nEND\n");
	BADLIST(SPIRT_EKEYFILE, 2, "VERSION=1\nTYPE=spirt-token\nEND\n");
	BADLIST(SPIRT_EKEYFILE, 4, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "MEMBER=%s peer p1\nMEMBER=%.63s peer p2\nEND\n", ah, bh);
	BADLIST(SPIRT_EKEYFILE, 4, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "MEMBER=%s peer p1\nMEMBER=%s peer p1\nEND\n", ah, bh);
	BADLIST(SPIRT_EKEYFILE, 3, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "MEMBER=%s admin p1\nEND\n", ah);
	BADLIST(SPIRT_EKEYFILE, 3, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "MEMBER=%s peer p/1\nEND\n", ah);
	BADLIST(SPIRT_EKEYFILE, 3, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "KEY=%s peer p1\nEND\n", ah);
	BADLIST(SPIRT_EKEYFILE, 4, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "MEMBER=%s peer p1\n", ah);
	BADLIST(SPIRT_EKEYFILE, 4, "VERSION=1\nTYPE=spirt-allowlist\n"
	    "END\nMEMBER=%s peer p1\n", ah);
#undef BADLIST
	spirt_key_free(a);
	spirt_key_free(b);
	spirt_key_free(c);
}

/* ---- handshake ---- */

struct party {
	struct spirt_key *key;
	unsigned char pk[32];
	unsigned char tok[SPIRT_TOKEN_BYTES];
	struct spirt_self self;
	struct spirt_trust *t;
};

static struct spirt_key *group;
static unsigned char group_pk[32];

/* A member of run with a token from the group (group != NULL). */
static void
party(struct party *p, const char *run, const char *id, unsigned char seed,
    int role, uint64_t expires)
{
	memset(p, 0, sizeof *p);
	p->key = seed_key(seed);
	spirt_key_public(p->pk, p->key);
	p->self.key = p->key;
	p->self.id = id;
	CHECK_RC(spirt_token_make(p->tok, group, run, id, p->pk, role, T0,
	    expires));
	p->self.token = p->tok;
	CHECK_RC(spirt_trust_new(&p->t, run, group_pk, WINDOW));
}

static void
party_free(struct party *p)
{
	spirt_key_free(p->key);
	spirt_trust_free(p->t);
}

/* A full handshake from a to b at now; the first failing code. */
static int
shake(struct spirt_session **sa, struct spirt_session **sb, struct party *a,
    struct party *b, const char *to, uint64_t now, int roles)
{
	unsigned char m1[SPIRT_HS_MAX], m2[SPIRT_HS_MAX];
	struct spirt_hs *hs;
	size_t n1, n2;
	int rc;

	*sa = *sb = NULL;
	if ((rc = spirt_hs_init(&hs, m1, sizeof m1, &n1, &a->self, a->t, to,
	    now)) != 0)
		return rc;
	rc = spirt_hs_respond(sb, m2, sizeof m2, &n2, &b->self, b->t, m1, n1,
	    now, roles);
	if (rc == 0 && (rc = spirt_hs_finish(sa, hs, a->t, m2, n2, now,
	    SPIRT_ROLE_PEER)) != 0) {
		spirt_session_free(*sb);
		*sb = NULL;
	}
	spirt_hs_free(hs);
	return rc;
}

/* One message a -> b; 0 if it arrives intact. */
static int
carry(struct spirt_session *from, struct spirt_session *to, uint64_t step,
    const char *key, size_t n)
{
	unsigned char *pt = malloc(n + 1), *got = malloc(n + 1), *m;
	size_t len, gn = 0;
	int rc;

	m = malloc(spirt_msg_size(key, n));
	randombytes_buf(pt, n);
	if ((rc = spirt_session_seal(from, m, spirt_msg_size(key, n), &len,
	    step, key, pt, n)) == 0 &&
	    (rc = spirt_session_open(to, got, n, &gn, step, key, m, len)) ==
	    0 && (gn != n || memcmp(got, pt, n) != 0))
		rc = SPIRT_EBUG;
	free(pt);
	free(got);
	free(m);
	return rc;
}

/*
 * An answer to m1 made by hand from docs/protocol.md, as a member of seed
 * byte b with token tok could make it while ignoring the rules.
 */
static size_t
forge_answer(unsigned char *out, const unsigned char *m1, size_t n1,
    unsigned char b, const unsigned char *tok, const char *run,
    const char *sender, const char *receiver, uint64_t ts)
{
	unsigned char seed[32], pk[32], sk[64], esk[32];

	memset(out, 0, SPIRT_HS_MAX);
	memcpy(out, "SPHS\1\2", 6);
	out[6] = SPIRT_TOKEN_BYTES;
	for (int i = 0; i < 8; i++)
		out[8 + i] = (unsigned char)(ts >> (8 * i));
	memcpy(out + 16, run, strlen(run));
	memcpy(out + 48, sender, strlen(sender));
	memcpy(out + 80, receiver, strlen(receiver));
	memset(seed, b, sizeof seed);
	crypto_sign_seed_keypair(pk, sk, seed);
	memcpy(out + 112, pk, 32);
	randombytes_buf(esk, sizeof esk);
	crypto_scalarmult_base(out + 144, esk);
	randombytes_buf(out + 176, 32);
	crypto_generichash(out + 208, 32, m1, n1, NULL, 0);
	memcpy(out + 240, tok, SPIRT_TOKEN_BYTES);
	crypto_sign_detached(out + 456, NULL, out, 456, sk);
	return SPIRT_HS_MAX;
}

static void
test_handshake(void)
{
	struct party a, b, c, f, u, x;
	struct spirt_session *sa, *sb;
	unsigned char m1[SPIRT_HS_MAX], m2[SPIRT_HS_MAX], m3[SPIRT_HS_MAX];
	unsigned char r1[SPIRT_HS_MAX], r2[SPIRT_HS_MAX], cp[SPIRT_HS_MAX];
	struct spirt_hs *h1, *h2;
	size_t n1, n2, n3, q1, q2;
	int rc;

	party(&a, "run1", "p1", 11, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&b, "run1", "p2", 12, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&c, "run1", "p3", 13, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&f, "run1", "f1", 14, SPIRT_ROLE_FUNCTION, T0 + HOUR);

	/* round trip, both directions */
	CHECK_RC(shake(&sa, &sb, &a, &b, "p2", T0 + SEC, SPIRT_ROLE_PEER));
	if (sa == NULL || sb == NULL)
		return;
	CHECK(strcmp(spirt_session_peer(sa)->id, "p2") == 0);
	CHECK(strcmp(spirt_session_peer(sb)->id, "p1") == 0);
	CHECK(memcmp(spirt_session_peer(sb)->pk, a.pk, 32) == 0);
	CHECK(spirt_session_confirmed(sa) && !spirt_session_confirmed(sb));
	CHECK_RC(carry(sa, sb, 12, "agg/12/p1", 1000));
	CHECK(spirt_session_confirmed(sb));
	CHECK_RC(carry(sb, sa, 12, "agg/12/p2", 1000));
	CHECK_RC(carry(sa, sb, 12, "agg/12/p1", 0));
	spirt_session_free(sa);
	spirt_session_free(sb);

	/* a replayed first message is refused; an older one delivered late,
	 * never seen, is taken once (the instances of one function start
	 * together), and refused when replayed */
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 2 * SEC));
	CHECK_RC(spirt_hs_init(&h2, m2, sizeof m2, &n2, &a.self, a.t, "p2",
	    T0 + 3 * SEC));
	CHECK_RC(spirt_hs_respond(&sb, r2, sizeof r2, &q2, &b.self, b.t, m2,
	    n2, T0 + 3 * SEC, SPIRT_ROLE_PEER));
	spirt_session_free(sb);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m2, n2, T0 + 3 * SEC, SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK(sb == NULL);
	CHECK_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 3 * SEC, SPIRT_ROLE_PEER));
	spirt_session_free(sb);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 3 * SEC, SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK(sb == NULL);
	/* another responder has its own memory: the same message is new */
	CHECK_RC(spirt_trust_new(&x.t, "run1", group_pk, WINDOW));
	CHECK_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, x.t, m1,
	    n1, T0 + 3 * SEC, SPIRT_ROLE_PEER));
	spirt_session_free(sb);
	spirt_trust_free(x.t);

	/* a replayed answer: genuine, but to another handshake */
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, r2, q2, T0 + 3 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK(sa == NULL);
	CHECK_RC(spirt_hs_finish(&sa, h2, a.t, r2, q2, T0 + 3 * SEC,
	    SPIRT_ROLE_PEER));
	spirt_session_free(sa);
	CHECK_EQ_RC(spirt_hs_finish(&sa, h2, a.t, r2, q2, T0 + 3 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 3 * SEC,
	    SPIRT_ROLE_PEER));
	spirt_session_free(sa);
	spirt_hs_free(h1);
	spirt_hs_free(h2);

	/* outside the window, either side; a refusal records nothing */
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 10 * SEC));
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 10 * SEC + WINDOW + 1, SPIRT_ROLE_PEER),
	    SPIRT_ESTALE);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 10 * SEC - WINDOW - 1, SPIRT_ROLE_PEER),
	    SPIRT_ESTALE);
	CHECK_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t, m1,
	    n1, T0 + 10 * SEC + WINDOW, SPIRT_ROLE_PEER));
	spirt_session_free(sb);
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1,
	    T0 + 11 * SEC + 2 * WINDOW, SPIRT_ROLE_PEER), SPIRT_ESTALE);
	spirt_hs_free(h1);

	/* addressed to another peer */
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p3",
	    T0 + 20 * SEC));
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 20 * SEC, SPIRT_ROLE_PEER), SPIRT_EADDR);
	CHECK(sb == NULL);
	spirt_hs_free(h1);
	/* answers by members that ignore the rules */
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 20 * SEC));
	q1 = forge_answer(r1, m1, n1, 13, c.tok, "run1", "p3", "p1",
	    T0 + 20 * SEC);
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 20 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EADDR);    /* c answers for b */
	q1 = forge_answer(r1, m1, n1, 13, c.tok, "run1", "p2", "p1",
	    T0 + 20 * SEC);
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 20 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);       /* c calls itself b */
	q1 = forge_answer(r1, m1, n1, 12, b.tok, "run1", "p2", "p4",
	    T0 + 20 * SEC);
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 20 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EADDR);    /* b answers someone else */
	q1 = forge_answer(r1, m1, n1, 12, b.tok, "run2", "p2", "p1",
	    T0 + 20 * SEC);
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 20 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_ERUN);
	q1 = forge_answer(r1, m1, n1, 12, b.tok, "run1", "p2", "p1",
	    T0 + 20 * SEC);
	CHECK_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 20 * SEC,
	    SPIRT_ROLE_PEER));                  /* the spec, by hand */
	spirt_session_free(sa);
	spirt_hs_free(h1);
	CHECK_RC(shake(&sa, &sb, &a, &c, "p3", T0 + 20 * SEC,
	    SPIRT_ROLE_PEER));
	spirt_session_free(sa);
	spirt_session_free(sb);

	/* wrong role: a function where only peers may come */
	CHECK_EQ_RC(shake(&sa, &sb, &f, &b, "p2", T0 + 21 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EROLE);
	CHECK_RC(shake(&sa, &sb, &f, &b, "p2", T0 + 22 * SEC,
	    SPIRT_ROLE_PEER | SPIRT_ROLE_FUNCTION));
	if (sb)
		CHECK(spirt_session_peer(sb)->role == SPIRT_ROLE_FUNCTION);
	spirt_session_free(sa);
	spirt_session_free(sb);

	/* an expired token */
	party(&x, "run1", "p4", 15, SPIRT_ROLE_PEER, T0 + 23 * SEC);
	CHECK_EQ_RC(shake(&sa, &sb, &x, &b, "p2", T0 + 23 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EEXPIRED);
	CHECK_RC(shake(&sa, &sb, &x, &b, "p2", T0 + 23 * SEC - 1,
	    SPIRT_ROLE_PEER));
	spirt_session_free(sa);
	spirt_session_free(sb);
	/* ... and on the answer's side */
	CHECK_EQ_RC(shake(&sa, &sb, &b, &x, "p4", T0 + 24 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EEXPIRED);
	party_free(&x);

	/* another run: the whole handshake, and a token in a forgery */
	party(&x, "run2", "p5", 16, SPIRT_ROLE_PEER, T0 + HOUR);
	CHECK_EQ_RC(shake(&sa, &sb, &x, &b, "p2", T0 + 25 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_ERUN);
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &x.self, x.t, "p2",
	    T0 + 25 * SEC));
	memcpy(m1 + 16, "run1", 4);
	resign(m1, n1, 16);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 25 * SEC, SPIRT_ROLE_PEER), SPIRT_ERUN);
	spirt_hs_free(h1);
	party_free(&x);

	/* unknown keys: no token, another group's token, someone's token */
	memset(&u, 0, sizeof u);
	u.key = seed_key(17);
	u.self.key = u.key;
	u.self.id = "p6";
	CHECK_RC(spirt_trust_new(&u.t, "run1", group_pk, WINDOW));
	CHECK_EQ_RC(shake(&sa, &sb, &u, &b, "p2", T0 + 26 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
	{
		struct spirt_key *other = seed_key(18);
		spirt_key_public(u.pk, u.key);
		CHECK_RC(spirt_token_make(u.tok, other, "run1", "p6", u.pk,
		    SPIRT_ROLE_PEER, T0, T0 + HOUR));
		u.self.token = u.tok;
		CHECK_EQ_RC(shake(&sa, &sb, &u, &b, "p2", T0 + 27 * SEC,
		    SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
		spirt_key_free(other);
	}
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 28 * SEC));
	memcpy(m1 + 112, u.pk, 32);     /* a's token, u's key */
	resign(m1, n1, 17);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 28 * SEC, SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
	memcpy(m1 + 48, "p6", 3);       /* ... and a's token under u's id */
	resign(m1, n1, 17);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 28 * SEC, SPIRT_ROLE_PEER), SPIRT_EUNKNOWNKEY);
	spirt_hs_free(h1);
	/* a first message must echo nothing */
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 29 * SEC));
	m1[208] = 1;
	resign(m1, n1, 11);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1, T0 + 29 * SEC, SPIRT_ROLE_PEER), SPIRT_EDATA);
	m1[208] = 0;
	resign(m1, n1, 11);
	CHECK_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t, m1,
	    n1, T0 + 29 * SEC, SPIRT_ROLE_PEER));
	spirt_session_free(sb);
	spirt_hs_free(h1);
	/* a self that does not match its own token */
	u.self.token = a.tok;
	CHECK_EQ_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &u.self, u.t, "p2",
	    T0), SPIRT_EINVAL);
	CHECK(h1 == NULL);
	party_free(&u);

	/* every byte of both messages: tampering is refused */
	CHECK_RC(spirt_hs_init(&h1, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 40 * SEC));
	for (size_t i = 0; i < n1; i++) {
		memcpy(cp, m1, n1);
		cp[i] ^= (unsigned char)(1u << (i % 8));
		rc = spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
		    cp, n1, T0 + 40 * SEC, SPIRT_ROLE_PEER);
		CHECK(rc != 0 && sb == NULL);
		if (i < 4)
			CHECK_EQ_RC(rc, SPIRT_EMAGIC);
		else if (i == 4)
			CHECK_EQ_RC(rc, SPIRT_EVERSION);
		else if (i < 8)
			CHECK_EQ_RC(rc, SPIRT_EDATA);
		else
			CHECK_EQ_RC(rc, SPIRT_EMAC);
		if (rc == 0)
			spirt_session_free(sb);
	}
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, n1 - 1, T0 + 40 * SEC, SPIRT_ROLE_PEER), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t,
	    m1, 100, T0 + 40 * SEC, SPIRT_ROLE_PEER), SPIRT_ETRUNC);
	CHECK_RC(spirt_hs_respond(&sb, r1, sizeof r1, &q1, &b.self, b.t, m1,
	    n1, T0 + 40 * SEC, SPIRT_ROLE_PEER));
	for (size_t i = 0; i < q1; i++) {
		memcpy(cp, r1, q1);
		cp[i] ^= (unsigned char)(1u << (i % 8));
		rc = spirt_hs_finish(&sa, h1, a.t, cp, q1, T0 + 40 * SEC,
		    SPIRT_ROLE_PEER);
		CHECK(rc != 0 && sa == NULL);
		if (i >= 8)
			CHECK_EQ_RC(rc, SPIRT_EMAC);
	}
	/* the first message as an answer, the answer as a first message */
	CHECK_EQ_RC(spirt_hs_finish(&sa, h1, a.t, m1, n1, T0 + 40 * SEC,
	    SPIRT_ROLE_PEER), SPIRT_EDATA);
	CHECK_EQ_RC(spirt_hs_respond(&sa, m3, sizeof m3, &n3, &a.self, a.t,
	    r1, q1, T0 + 40 * SEC, SPIRT_ROLE_PEER), SPIRT_EDATA);
	CHECK_RC(spirt_hs_finish(&sa, h1, a.t, r1, q1, T0 + 40 * SEC,
	    SPIRT_ROLE_PEER));
	CHECK_RC(carry(sa, sb, 1, "grad/1/f0", 33));
	spirt_session_free(sa);
	spirt_session_free(sb);
	spirt_hs_free(h1);

	party_free(&a);
	party_free(&b);
	party_free(&c);
	party_free(&f);
}

/*
 * The responder's memory of one identity's first messages: the last 64
 * accepted.  Sixty-five first messages, made in time order, arrive
 * newest first but the oldest last: each is taken once; a replay of one
 * remembered is refused, and once the newest has left the memory, so is
 * anything at or below its time.
 */
static void
test_handshake_order(void)
{
	enum { N = 65 };
	struct party a, b;
	struct spirt_session *sb;
	static unsigned char m[N][SPIRT_HS_MAX];
	unsigned char r[SPIRT_HS_MAX];
	struct spirt_hs *h[N];
	size_t n[N], q;

	party(&a, "run1", "p1", 21, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&b, "run1", "p2", 22, SPIRT_ROLE_PEER, T0 + HOUR);
	for (int i = 0; i < N; i++)
		CHECK_RC(spirt_hs_init(&h[i], m[i], sizeof m[i], &n[i],
		    &a.self, a.t, "p2", T0 + SEC + (uint64_t)i * 1000000));
	for (int i = N - 1; i >= 1; i--) {
		CHECK_RC(spirt_hs_respond(&sb, r, sizeof r, &q, &b.self, b.t,
		    m[i], n[i], T0 + 2 * SEC, SPIRT_ROLE_PEER));
		spirt_session_free(sb);
	}
	/* 64 remembered: a replay of one is refused, the rest may come */
	CHECK_EQ_RC(spirt_hs_respond(&sb, r, sizeof r, &q, &b.self, b.t, m[5],
	    n[5], T0 + 2 * SEC, SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK(sb == NULL);
	/* the oldest, last: never seen, so taken; message N-1, the first
	 * taken and the newest, leaves the memory */
	CHECK_RC(spirt_hs_respond(&sb, r, sizeof r, &q, &b.self, b.t, m[0],
	    n[0], T0 + 2 * SEC, SPIRT_ROLE_PEER));
	spirt_session_free(sb);
	/* from now on nothing at or below its time can be told apart:
	 * refused, remembered or not */
	CHECK_EQ_RC(spirt_hs_respond(&sb, r, sizeof r, &q, &b.self, b.t, m[0],
	    n[0], T0 + 2 * SEC, SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK_EQ_RC(spirt_hs_respond(&sb, r, sizeof r, &q, &b.self, b.t,
	    m[N - 1], n[N - 1], T0 + 2 * SEC, SPIRT_ROLE_PEER), SPIRT_EREPLAY);
	CHECK(sb == NULL);
	for (int i = 0; i < N; i++)
		spirt_hs_free(h[i]);
	party_free(&a);
	party_free(&b);
}

/* The allowlist alone: no group key, no tokens. */
static void
test_allowlist_handshake(void)
{
	struct party a, b;
	struct spirt_session *sa, *sb;

	for (int i = 0; i < 2; i++) {
		struct party *p = i ? &b : &a;
		memset(p, 0, sizeof *p);
		p->key = seed_key((unsigned char)(31 + i));
		spirt_key_public(p->pk, p->key);
		p->self.key = p->key;
		p->self.id = i ? "p2" : "p1";
		CHECK_RC(spirt_trust_new(&p->t, "run1", NULL, WINDOW));
	}
	CHECK_EQ_RC(shake(&sa, &sb, &a, &b, "p2", T0, SPIRT_ROLE_PEER),
	    SPIRT_EUNKNOWNKEY);
	CHECK_RC(spirt_trust_allow(b.t, a.pk, "p1", SPIRT_ROLE_PEER));
	CHECK_EQ_RC(shake(&sa, &sb, &a, &b, "p2", T0 + 1, SPIRT_ROLE_PEER),
	    SPIRT_EUNKNOWNKEY);        /* a does not know b yet */
	CHECK_RC(spirt_trust_allow(a.t, b.pk, "p2", SPIRT_ROLE_PEER));
	CHECK_RC(shake(&sa, &sb, &a, &b, "p2", T0 + 2, SPIRT_ROLE_PEER));
	CHECK_RC(carry(sa, sb, 5, "agg/5/p1", 4096));
	CHECK_RC(carry(sb, sa, 5, "agg/5/p2", 4096));
	spirt_session_free(sa);
	spirt_session_free(sb);
	party_free(&a);
	party_free(&b);
}

/* ---- messages ---- */

static void
test_messages(void)
{
	struct party a, b, c, d, e;
	struct spirt_session *ab, *ba, *ac, *ca, *de, *ed;
	unsigned char *m, *cp, pt[256], got[256], *big;
	static unsigned char many[2100][SPIRT_MSG_HEAD + 1 + 16 +
	    SPIRT_MSG_TAG];
	struct spirt_msg_info info;
	const char *key = "agg/12/p1";
	size_t len, n, k = strlen(key), mlen = spirt_msg_size(key, 100);
	int rc;

	party(&a, "run1", "p1", 41, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&b, "run1", "p2", 42, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&c, "run1", "p3", 43, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&d, "run2", "p1", 44, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&e, "run2", "p2", 45, SPIRT_ROLE_PEER, T0 + HOUR);
	CHECK_RC(shake(&ab, &ba, &a, &b, "p2", T0, SPIRT_ROLE_PEER));
	CHECK_RC(shake(&ac, &ca, &a, &c, "p3", T0, SPIRT_ROLE_PEER));
	CHECK_RC(shake(&de, &ed, &d, &e, "p2", T0, SPIRT_ROLE_PEER));
	if (!ab || !ba || !ac || !ca || !de || !ed)
		return;

	/* sizes */
	CHECK(spirt_msg_size(key, 100) == SPIRT_MSG_HEAD + k + 100 + 16);
	CHECK(spirt_msg_size("", 1) == 0);
	CHECK(spirt_msg_size("agg 1", 1) == 0);
	CHECK(spirt_msg_size(key, SIZE_MAX - 100) == 0);
	m = malloc(mlen);
	cp = malloc(mlen);
	for (size_t i = 0; i < sizeof pt; i++)
		pt[i] = (unsigned char)(i * 7);
	CHECK_EQ_RC(spirt_session_seal(ab, m, mlen, &len, 12, "a b", pt, 100),
	    SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_session_seal(ab, m, mlen - 1, &len, 12, key, pt,
	    100), SPIRT_EINVAL);

	/* one message: its clear header, then opened once */
	CHECK_RC(spirt_session_seal(ab, m, mlen, &len, 12, key, pt, 100));
	CHECK(len == mlen);
	CHECK_RC(spirt_msg_info(&info, m, len));
	CHECK(info.step == 12 && info.n == 100 && info.counter == 0);
	CHECK(strcmp(info.sender, "p1") == 0 &&
	    strcmp(info.receiver, "p2") == 0 && strcmp(info.run, "run1") == 0 &&
	    strcmp(info.key, key) == 0);
	CHECK_EQ_RC(spirt_session_open(ba, got, 99, &n, 12, key, m, len),
	    SPIRT_EINVAL);
	/* every byte, every field */
	for (size_t i = 0; i < len; i++) {
		memcpy(cp, m, len);
		cp[i] ^= (unsigned char)(1u << (i % 8));
		rc = spirt_session_open(ba, got, sizeof got, &n, 12, key, cp,
		    len);
		if (i < 4)
			CHECK_EQ_RC(rc, SPIRT_EMAGIC);
		else if (i == 4)
			CHECK_EQ_RC(rc, SPIRT_EVERSION);
		else if (i < 8)
			CHECK(rc == SPIRT_EDATA || rc == SPIRT_ETRUNC);
		else if (i < 16)
			CHECK_EQ_RC(rc, SPIRT_EMAC);    /* a fresh counter */
		else if (i < 24)
			CHECK_EQ_RC(rc, SPIRT_ESTEP);
		else if (i < 56)
			CHECK_EQ_RC(rc, SPIRT_ERUN);
		else if (i < 120)
			CHECK_EQ_RC(rc, SPIRT_EADDR);
		else if (i < 128)
			CHECK(rc == SPIRT_EDATA || rc == SPIRT_ETRUNC);
		else if (i < 128 + k)
			CHECK_EQ_RC(rc, SPIRT_EWRONGKEY);
		else
			CHECK_EQ_RC(rc, SPIRT_EMAC);
	}
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12, key, m,
	    len - 1), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12, key, m,
	    SPIRT_MSG_HEAD + k), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12, key, m,
	    20), SPIRT_ETRUNC);
	/* for another step, another key */
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 13, key, m,
	    len), SPIRT_ESTEP);
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12,
	    "agg/12/p2", m, len), SPIRT_EWRONGKEY);
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12,
	    "agg/12/p", m, len), SPIRT_EWRONGKEY);
	/* into another session: another peer, another run */
	CHECK_EQ_RC(spirt_session_open(ca, got, sizeof got, &n, 12, key, m,
	    len), SPIRT_EADDR);
	CHECK_EQ_RC(spirt_session_open(ab, got, sizeof got, &n, 12, key, m,
	    len), SPIRT_EADDR);
	CHECK_EQ_RC(spirt_session_open(ed, got, sizeof got, &n, 12, key, m,
	    len), SPIRT_ERUN);
	/* the genuine one, once */
	memset(got, 0, sizeof got);
	CHECK_RC(spirt_session_open(ba, got, sizeof got, &n, 12, key, m, len));
	CHECK(n == 100 && memcmp(got, pt, 100) == 0);
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12, key, m,
	    len), SPIRT_EREPLAY);

	/* a message for c, where c's header is right but the keys are b's */
	CHECK_RC(spirt_session_seal(ac, m, mlen, &len, 12, key, pt, 100));
	CHECK_RC(spirt_session_seal(ac, m, mlen, &len, 12, key, pt, 100));
	memcpy(m + 88, "p2", 2);
	CHECK_EQ_RC(spirt_session_open(ba, got, sizeof got, &n, 12, key, m,
	    len), SPIRT_EMAC);

	/* in place, and a large payload */
	big = malloc(spirt_msg_size(key, 1 << 22));
	for (size_t i = 0; i < 1 << 22; i++)
		big[SPIRT_MSG_HEAD + k + i] = (unsigned char)(i * 131 >> 3);
	CHECK_RC(spirt_session_seal(ba, big, spirt_msg_size(key, 1 << 22),
	    &len, 12, key, big + SPIRT_MSG_HEAD + k, 1 << 22));
	CHECK_RC(spirt_session_open(ab, big + SPIRT_MSG_HEAD + k, 1 << 22, &n,
	    12, key, big, len));
	CHECK(n == 1 << 22);
	rc = 0;
	for (size_t i = 0; i < 1 << 22; i++)
		rc |= big[SPIRT_MSG_HEAD + k + i] !=
		    (unsigned char)(i * 131 >> 3);
	CHECK(rc == 0);
	free(big);

	/*
	 * Out of order within the window; the window's edge exactly: with
	 * the newest counter at top - 1, counters down to top - 1984 open.
	 */
	for (size_t i = 0; i < 2100; i++)
		CHECK_RC(spirt_session_seal(de, many[i], sizeof many[i], &len,
		    3, "x", pt, 16));
	uint64_t base = 0;
	CHECK_RC(spirt_msg_info(&info, many[0], sizeof many[0]));
	base = info.counter;
	for (size_t i = 100; i-- > 50;)
		CHECK_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[i],
		    sizeof many[i]));
	for (size_t i = 50; i < 100; i++)
		CHECK_EQ_RC(spirt_session_open(ed, got, 16, &n, 3, "x",
		    many[i], sizeof many[i]), SPIRT_EREPLAY);
	CHECK_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[2099],
	    sizeof many[2099]));
	/* top = base + 2100: counter base + i is in iff 2099 - i < 1984 */
	CHECK_EQ_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[115],
	    sizeof many[115]), SPIRT_EREPLAY);
	CHECK_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[116],
	    sizeof many[116]));
	CHECK_EQ_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[0],
	    sizeof many[0]), SPIRT_EREPLAY);
	CHECK_EQ_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[116],
	    sizeof many[116]), SPIRT_EREPLAY);
	for (size_t i = 117; i < 2099; i++)
		CHECK_RC(spirt_session_open(ed, got, 16, &n, 3, "x", many[i],
		    sizeof many[i]));
	for (size_t i = 0; i < 2100; i++)
		CHECK_EQ_RC(spirt_session_open(ed, got, 16, &n, 3, "x",
		    many[i], sizeof many[i]), SPIRT_EREPLAY);
	CHECK(base == 0);

	free(m);
	free(cp);
	spirt_session_free(ab);
	spirt_session_free(ba);
	spirt_session_free(ac);
	spirt_session_free(ca);
	spirt_session_free(de);
	spirt_session_free(ed);
	party_free(&a);
	party_free(&b);
	party_free(&c);
	party_free(&d);
	party_free(&e);
}

/* ---- streamed messages ---- */

#define FB SPIRT_FRAME_BYTES

/* frame i of the stream m (header and key hl bytes), payload n */
static unsigned char *
frame_at(unsigned char *m, size_t hl, size_t i)
{
	return m + hl + i * (FB + SPIRT_MSG_TAG);
}

static void
test_streams(void)
{
	struct party a, b, c;
	struct spirt_session *ab, *ba, *ac, *ca;
	struct spirt_stream w, r;
	const char *key = "xagg/12/p1";
	size_t k = strlen(key), hl = SPIRT_MSG_HEAD + k, n = 3 * FB + 100;
	size_t cap = spirt_stream_size(key, n), len, len2, got, fl;
	unsigned char *pt = malloc(n), *out = malloc(n), *m = malloc(cap);
	unsigned char *m2 = malloc(cap), *cp = malloc(cap), head[700];
	uint64_t total;
	int rc, type;

	party(&a, "run1", "p1", 61, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&b, "run1", "p2", 62, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&c, "run1", "p3", 63, SPIRT_ROLE_PEER, T0 + HOUR);
	CHECK_RC(shake(&ab, &ba, &a, &b, "p2", T0, SPIRT_ROLE_PEER));
	CHECK_RC(shake(&ac, &ca, &a, &c, "p3", T0, SPIRT_ROLE_PEER));
	if (!ab || !ba || !ac || !ca || !pt || !out || !m || !m2 || !cp)
		return;
	for (size_t i = 0; i < n; i++)
		pt[i] = (unsigned char)(i * 13 + (i >> 9));

	/* sizes: a tag per frame; one empty frame for nothing */
	CHECK(spirt_stream_frames(0) == 1 && spirt_stream_frames(1) == 1);
	CHECK(spirt_stream_frames(FB) == 1 && spirt_stream_frames(FB + 1) == 2);
	CHECK(cap == hl + n + 4 * SPIRT_MSG_TAG);
	CHECK(spirt_stream_size(key, 0) == hl + SPIRT_MSG_TAG);
	CHECK(spirt_stream_size("", 1) == 0);
	CHECK(spirt_stream_size(key, SIZE_MAX - 10) == 0);

	/* a round trip, whole; its header says what it is */
	CHECK_RC(spirt_stream_seal(ab, m, cap, &len, 12, key, pt, n));
	CHECK(len == cap);
	CHECK(memcmp(m, "SPMS\1\2", 6) == 0);
	CHECK_RC(spirt_msg_peek(m, len, &type, &got, &total));
	CHECK(type == SPIRT_MSG_STREAM && got == hl && total == len);
	CHECK_EQ_RC(spirt_msg_peek(m, SPIRT_MSG_HEAD - 1, &type, &got,
	    &total), SPIRT_ETRUNC);
	memcpy(cp, m, len);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n - 1, &got, 12, key, cp, len),
	    SPIRT_EINVAL);
	/* not a type 1 message, nor the other way round */
	CHECK_EQ_RC(spirt_session_open(ba, out, n, &got, 12, key, cp, len),
	    SPIRT_EDATA);

	/* every byte of the header and key, the first frame and its tag */
	for (size_t i = 0; i < hl + FB + SPIRT_MSG_TAG; i += i < hl ? 1 : 997) {
		memcpy(cp, m, len);
		cp[i] ^= (unsigned char)(1u << (i % 8));
		rc = spirt_stream_open(ba, out, n, &got, 12, key, cp, len);
		if (i < 4)
			CHECK_EQ_RC(rc, SPIRT_EMAGIC);
		else if (i == 4)
			CHECK_EQ_RC(rc, SPIRT_EVERSION);
		else if (i < 8)
			CHECK(rc == SPIRT_EDATA || rc == SPIRT_ETRUNC);
		else if (i < 16)
			CHECK_EQ_RC(rc, SPIRT_EMAC);    /* a fresh counter */
		else if (i < 24)
			CHECK_EQ_RC(rc, SPIRT_ESTEP);
		else if (i < 56)
			CHECK_EQ_RC(rc, SPIRT_ERUN);
		else if (i < 120)
			CHECK_EQ_RC(rc, SPIRT_EADDR);
		else if (i < 128)
			CHECK(rc == SPIRT_EDATA || rc == SPIRT_ETRUNC);
		else if (i < hl)
			CHECK_EQ_RC(rc, SPIRT_EWRONGKEY);
		else
			CHECK_EQ_RC(rc, SPIRT_EMAC);
	}
	/* the last frame's tag, the last byte */
	memcpy(cp, m, len);
	cp[len - 1] ^= 0x80;
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, cp, len),
	    SPIRT_EMAC);

	/* truncated: a byte, a frame, everything after the header */
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, m, len - 1),
	    SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, m,
	    len - 100 - SPIRT_MSG_TAG), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, m, hl),
	    SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, m, len + 1),
	    SPIRT_EDATA);
	/* cut at a frame's end, the header made to say so: the header is
	 * in every frame's associated data, and the cut frame was not sealed
	 * as the last */
	memcpy(cp, m, len);
	cp[120] = 0;
	cp[121] = 0;
	cp[122] = 2;            /* n = 2 FB */
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, cp,
	    hl + 2 * (FB + SPIRT_MSG_TAG)), SPIRT_EMAC);
	/* incrementally: the end before the last frame is a truncation */
	CHECK_RC(spirt_stream_open_begin(&r, ba, m, hl, 12, key, &got));
	CHECK(got == n);
	for (size_t i = 0; i < 3; i++)
		CHECK_RC(spirt_stream_open_frame(&r, out + i * FB,
		    frame_at(m, hl, i), FB + SPIRT_MSG_TAG));
	CHECK_EQ_RC(spirt_stream_open_end(&r), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_stream_open_frame(&r, out, frame_at(m, hl, 3),
	    100 + SPIRT_MSG_TAG - 1), SPIRT_ETRUNC);

	/* reordered frames: 0 and 1 swapped; a frame twice */
	memcpy(cp, m, len);
	memcpy(frame_at(cp, hl, 0), frame_at(m, hl, 1), FB + SPIRT_MSG_TAG);
	memcpy(frame_at(cp, hl, 1), frame_at(m, hl, 0), FB + SPIRT_MSG_TAG);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, cp, len),
	    SPIRT_EMAC);
	memcpy(cp, m, len);
	memcpy(frame_at(cp, hl, 2), frame_at(m, hl, 1), FB + SPIRT_MSG_TAG);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, cp, len),
	    SPIRT_EMAC);
	/* a frame of another stream of the same session (another counter) */
	CHECK_RC(spirt_stream_seal(ab, m2, cap, &len2, 12, key, pt, n));
	memcpy(cp, m, len);
	memcpy(frame_at(cp, hl, 1), frame_at(m2, hl, 1), FB + SPIRT_MSG_TAG);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, cp, len),
	    SPIRT_EMAC);
	/* for another step, key, peer; under another session's keys */
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 13, key, m, len),
	    SPIRT_ESTEP);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, "xagg/12/p2", m,
	    len), SPIRT_EWRONGKEY);
	CHECK_EQ_RC(spirt_stream_open(ca, out, n, &got, 12, key, m, len),
	    SPIRT_EADDR);
	CHECK_RC(spirt_stream_seal(ac, cp, cap, &len2, 12, key, pt, n));
	memcpy(cp + 88, "p2\0", 3);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, cp, len),
	    SPIRT_EMAC);

	/* the genuine one, in place, once; then a replay */
	memcpy(cp, m, len);
	CHECK_RC(spirt_stream_open_begin(&r, ba, cp, hl, 12, key, &got));
	for (size_t i = 0; i < 4; i++) {
		fl = spirt_stream_frame_len(&r);
		CHECK(fl == (i < 3 ? FB : 100));
		CHECK_RC(spirt_stream_open_frame(&r, frame_at(cp, hl, i),
		    frame_at(cp, hl, i), fl + SPIRT_MSG_TAG));
		rc = memcmp(frame_at(cp, hl, i), pt + i * FB, fl) != 0;
		CHECK(rc == 0);
	}
	CHECK(spirt_stream_frame_len(&r) == 0);
	CHECK_EQ_RC(spirt_stream_open_frame(&r, out, frame_at(m, hl, 3),
	    100 + SPIRT_MSG_TAG), SPIRT_EDATA);
	CHECK_RC(spirt_stream_open_end(&r));
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, m, len),
	    SPIRT_EREPLAY);
	/* the second stream still opens (out of order is fine), once */
	CHECK_RC(spirt_stream_open(ba, out, n, &got, 12, key, m2, len2));
	CHECK(got == n && memcmp(out, pt, n) == 0);
	CHECK_EQ_RC(spirt_stream_open(ba, out, n, &got, 12, key, m2, len2),
	    SPIRT_EREPLAY);
	/* two streams begun at once: the second to end is a replay */
	CHECK_RC(spirt_stream_seal(ab, m, cap, &len, 12, key, pt, 10));
	CHECK_RC(spirt_stream_open_begin(&r, ba, m, hl, 12, key, &got));
	CHECK_RC(spirt_stream_open_begin(&w, ba, m, hl, 12, key, &got));
	CHECK_RC(spirt_stream_open_frame(&r, out, m + hl, 10 + 16));
	CHECK_RC(spirt_stream_open_frame(&w, out, m + hl, 10 + 16));
	CHECK_RC(spirt_stream_open_end(&r));
	CHECK_EQ_RC(spirt_stream_open_end(&w), SPIRT_EREPLAY);

	/* nothing, and exactly one frame; seal frame by frame, in place */
	CHECK_RC(spirt_stream_seal(ab, m, cap, &len, 0, "x", pt, 0));
	CHECK(len == SPIRT_MSG_HEAD + 1 + SPIRT_MSG_TAG);
	CHECK_RC(spirt_stream_open(ba, out, 0, &got, 0, "x", m, len));
	CHECK(got == 0);
	CHECK_RC(spirt_stream_seal_begin(&w, ab, head, sizeof head, &len, 5,
	    "x", FB));
	CHECK(len == SPIRT_MSG_HEAD + 1 && w.frames == 1);
	CHECK_EQ_RC(spirt_stream_seal_frame(&w, m + len, pt, FB - 1),
	    SPIRT_EINVAL);
	memcpy(m, head, len);
	memcpy(m + len, pt, FB);
	CHECK_RC(spirt_stream_seal_frame(&w, m + len, m + len, FB));
	CHECK_EQ_RC(spirt_stream_seal_frame(&w, m + len, pt, 0), SPIRT_EINVAL);
	CHECK_RC(spirt_stream_open(ba, out, FB, &got, 5, "x", m,
	    len + FB + SPIRT_MSG_TAG));
	CHECK(got == FB && memcmp(out, pt, FB) == 0);

	free(pt);
	free(out);
	free(m);
	free(m2);
	free(cp);
	spirt_session_free(ab);
	spirt_session_free(ba);
	spirt_session_free(ac);
	spirt_session_free(ca);
	party_free(&a);
	party_free(&b);
	party_free(&c);
}

/* ---- the protocol, recomputed from docs/protocol.md ---- */

/* The 32 random bytes handed out whose X25519 public key is epk. */
static int
find_secret(unsigned char sk[32], const unsigned char epk[32])
{
	unsigned char pk[32];

	for (size_t i = 0; i + 32 <= detn; i++) {
		if (crypto_scalarmult_base(pk, detlog + i) == 0 &&
		    memcmp(pk, epk, 32) == 0) {
			memcpy(sk, detlog + i, 32);
			return 1;
		}
	}
	return 0;
}

static void
test_known_answer(void)
{
	struct party a, b;
	unsigned char m1[SPIRT_HS_MAX], m2[SPIRT_HS_MAX], msg[256], out[64];
	unsigned char esk_i[32], esk_r[32], rx[32], tx[32], th[32], k[32];
	unsigned char nonce[24] = { 0 }, h[32], want[32], ki2r[32];
	const char *label = "spirt-peer v1 i2r", *key = "agg/7/p1";
	struct spirt_session *sa, *sb;
	crypto_generichash_state st;
	unsigned long long olen;
	struct spirt_hs *hs;
	size_t n1, n2, len, kl = strlen(key);

	det = 1;
	detctr = 0;
	detn = 0;
	party(&a, "kat", "p1", 51, SPIRT_ROLE_PEER, T0 + HOUR);
	party(&b, "kat", "p2", 52, SPIRT_ROLE_PEER, T0 + HOUR);
	CHECK_RC(spirt_hs_init(&hs, m1, sizeof m1, &n1, &a.self, a.t, "p2",
	    T0 + 5));
	CHECK_RC(spirt_hs_respond(&sb, m2, sizeof m2, &n2, &b.self, b.t, m1,
	    n1, T0 + 6, SPIRT_ROLE_PEER));
	CHECK_RC(spirt_hs_finish(&sa, hs, a.t, m2, n2, T0 + 7,
	    SPIRT_ROLE_PEER));
	CHECK_RC(spirt_session_seal(sa, msg, sizeof msg, &len, 7, key,
	    "known answer", 12));
	det = 0;
	if (sa == NULL || sb == NULL)
		return;

	/* the layouts of the tables */
	CHECK(n1 == SPIRT_HS_MAX && n2 == SPIRT_HS_MAX);
	CHECK(memcmp(m1, "SPHS\1\1", 6) == 0 && memcmp(m2, "SPHS\1\2", 6) == 0);
	CHECK(m1[6] == 216 % 256 && m1[7] == 0);
	CHECK(m1[8] == 5 && memcmp(m1 + 16, "kat\0", 4) == 0);
	CHECK(memcmp(m1 + 48, "p1\0", 3) == 0 &&
	    memcmp(m1 + 80, "p2\0", 3) == 0);
	CHECK(memcmp(m1 + 112, a.pk, 32) == 0);
	CHECK(memcmp(m1 + 240, a.tok, SPIRT_TOKEN_BYTES) == 0);
	CHECK(memcmp(a.tok, "SPTK\1\1\0\0", 8) == 0);
	CHECK(memcmp(a.tok + 88, a.pk, 32) == 0);
	CHECK(memcmp(a.tok + 120, group_pk, 32) == 0);
	CHECK(crypto_sign_verify_detached(a.tok + 152, a.tok, 152,
	    group_pk) == 0);
	CHECK(sodium_is_zero(m1 + 208, 32));
	CHECK(crypto_sign_verify_detached(m1 + n1 - 64, m1, n1 - 64,
	    a.pk) == 0);
	CHECK(crypto_sign_verify_detached(m2 + n2 - 64, m2, n2 - 64,
	    b.pk) == 0);
	crypto_generichash(h, 32, m1, n1, NULL, 0);
	CHECK(memcmp(m2 + 208, h, 32) == 0);
	CHECK(memcmp(msg, "SPMS\1\1", 6) == 0 && msg[6] == kl && msg[7] == 0);
	CHECK(msg[8] == 0 && msg[16] == 7 && msg[120] == 12);
	CHECK(memcmp(msg + 128, key, kl) == 0);
	CHECK(len == 128 + kl + 12 + 16);

	/* the initiator-to-responder key, recomputed, opens the message */
	CHECK(find_secret(esk_i, m1 + 144));
	CHECK(find_secret(esk_r, m2 + 144));
	CHECK(crypto_kx_client_session_keys(rx, tx, m1 + 144, esk_i,
	    m2 + 144) == 0);
	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, m1, n1);
	crypto_generichash_update(&st, m2, n2);
	crypto_generichash_final(&st, th, 32);
	crypto_generichash_init(&st, th, 32, 32);
	crypto_generichash_update(&st, (const unsigned char *)label,
	    strlen(label));
	crypto_generichash_update(&st, tx, 32);
	crypto_generichash_final(&st, k, 32);
	CHECK(crypto_aead_xchacha20poly1305_ietf_decrypt(out, &olen, NULL,
	    msg + 128 + kl, len - 128 - kl, msg, 128 + kl, nonce, k) == 0);
	CHECK(olen == 12 && memcmp(out, "known answer", 12) == 0);
	memcpy(ki2r, k, 32);
	/* the responder's server keys agree */
	CHECK(crypto_kx_server_session_keys(th, k, m2 + 144, esk_r,
	    m1 + 144) == 0);
	CHECK(memcmp(th, tx, 32) == 0 && memcmp(k, rx, 32) == 0);

	/* frozen: the bytes of this exchange (a format change shows here) */
	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, m1, n1);
	crypto_generichash_update(&st, m2, n2);
	crypto_generichash_update(&st, msg, len);
	crypto_generichash_final(&st, h, 32);
	hexto(want, KAT_HASH);
	if (memcmp(h, want, 32) != 0) {
		char hex[65];
		sodium_bin2hex(hex, sizeof hex, h, 32);
		fprintf(stderr, "known answer: got %s\n", hex);
		check_failed = 1;
	}

	/*
	 * A stream of 70000 bytes, the session's next counter (1): two
	 * frames, the second (4464 bytes) opened with the key above from
	 * the nonce and associated data of docs/protocol.md alone.
	 */
	{
		size_t sn = 70000, slen, f1 = sn - SPIRT_FRAME_BYTES;
		unsigned char *sm = malloc(spirt_stream_size(key, sn));
		unsigned char *sp = malloc(sn), ad[128 + 16 + 9];
		size_t off = 128 + kl + SPIRT_FRAME_BYTES + 16;

		for (size_t i = 0; i < sn; i++)
			sp[i] = (unsigned char)(i % 251);
		CHECK_RC(spirt_stream_seal(sa, sm, spirt_stream_size(key, sn),
		    &slen, 7, key, sp, sn));
		CHECK(slen == 128 + kl + sn + 2 * 16);
		CHECK(memcmp(sm, "SPMS\1\2", 6) == 0 && sm[8] == 1);
		CHECK(sm[120] == (70000 & 255) && sm[121] == (70000 >> 8 & 255)
		    && sm[122] == 1);
		memcpy(ad, sm, 128 + kl);
		memset(ad + 128 + kl, 0, 9);
		ad[128 + kl] = 1;               /* frame 1 */
		ad[128 + kl + 8] = 1;           /* the last */
		memset(nonce, 0, sizeof nonce);
		nonce[0] = 1;                   /* counter 1 */
		nonce[8] = 1;                   /* frame 1 */
		nonce[16] = 1;                  /* a stream's frame */
		CHECK(crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
		    sm + off, NULL, sm + off, f1, sm + off + f1, ad,
		    128 + kl + 9, nonce, ki2r) == 0);
		CHECK(memcmp(sm + off, sp + SPIRT_FRAME_BYTES, f1) == 0);
		crypto_generichash(h, 32, sm, slen, NULL, 0);
		hexto(want, KAT_STREAM_HASH);
		if (memcmp(h, want, 32) != 0) {
			char hex[65];
			sodium_bin2hex(hex, sizeof hex, h, 32);
			fprintf(stderr, "known answer (stream): got %s\n", hex);
			check_failed = 1;
		}
		free(sm);
		free(sp);
	}
	spirt_session_free(sa);
	spirt_session_free(sb);
	spirt_hs_free(hs);
	party_free(&a);
	party_free(&b);
}

/*
 * lib/prim_$(CRYPTO).c: the build's XChaCha20-Poly1305 (OpenSSL's
 * ChaCha20-Poly1305 under libsodium's HChaCha20, or libsodium's) gives
 * libsodium's one-call bytes, sealed and opened, at every length that
 * matters (none, one byte, around a ChaCha20 block and a Poly1305 block,
 * a frame, a frame and a bit), in place and not; a changed byte anywhere
 * is refused with the output zeroed.
 */
static void
test_aead(void)
{
	static const size_t lens[] = { 0, 1, 15, 16, 17, 63, 64, 65, 255,
	    4096, 65536, 65536 + 16, 1000003 };
	unsigned char key[32], npub[24], ad[150], tag[16], wtag[16], t2[16];
	unsigned char *m = malloc(1000003), *c = malloc(1000003);
	unsigned char *w = malloc(1000003), *o = malloc(1000003);
	uint64_t st = 42;

	if (!m || !c || !w || !o) {
		CHECK(!"memory");
		goto out;
	}
	for (size_t i = 0; i < 1000003; i++)
		m[i] = (unsigned char)(check_urand(&st) * 256);
	memcpy(key, m + 7, 32);
	memcpy(npub, m + 99, 24);
	memcpy(ad, m + 300, sizeof ad);
	/* the object linked is the one config.mk's CRYPTO names */
	CHECK(strcmp(spirt_prim_name(), strcmp(CRYPTO_BUILD, "openssl") == 0 ?
	    "openssl" : "libsodium") == 0);
	CHECK(spirt_prim_version()[0] != '\0');
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		size_t n = lens[i], adl = i * 11 % (sizeof ad + 1);

		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(w,
		    wtag, NULL, m, n, ad, adl, NULL, npub, key);
		CHECK_RC(spirt_aead_seal(c, tag, m, n, ad, adl, npub,
		    key));
		CHECK(memcmp(c, w, n) == 0 && memcmp(tag, wtag, 16)
		    == 0);
		/* in place */
		memcpy(o, m, n);
		CHECK_RC(spirt_aead_seal(o, t2, o, n, ad, adl, npub,
		    key));
		CHECK(memcmp(o, w, n) == 0 && memcmp(t2, wtag, 16)
		    == 0);
		CHECK_RC(spirt_aead_open(o, o, n, t2, ad, adl, npub,
		    key));
		CHECK(memcmp(o, m, n) == 0);
		memset(o, 0, n);
		CHECK_RC(spirt_aead_open(o, w, n, wtag, ad, adl, npub,
		    key));
		CHECK(memcmp(o, m, n) == 0);
		/* a flipped bit: in the text, the tag, the data, the
		 * nonce's either part, the key */
		if (n) {
			c[n / 2] ^= 4;
			memset(o, 1, n);
			CHECK(spirt_aead_open(o, c, n, tag, ad, adl,
			    npub, key) == SPIRT_EMAC);
			CHECK(o[0] == 0 && o[n - 1] == 0 && o[n / 2]
			    == 0);
			c[n / 2] ^= 4;
		}
		tag[15] ^= 1;
		CHECK(spirt_aead_open(o, c, n, tag, ad, adl, npub, key)
		    == SPIRT_EMAC);
		tag[15] ^= 1;
		if (adl) {
			ad[adl - 1] ^= 0x80;
			CHECK(spirt_aead_open(o, c, n, tag, ad, adl,
			    npub, key) == SPIRT_EMAC);
			ad[adl - 1] ^= 0x80;
		}
		npub[3] ^= 1;
		CHECK(spirt_aead_open(o, c, n, tag, ad, adl, npub, key)
		    == SPIRT_EMAC);
		npub[3] ^= 1;
		npub[20] ^= 1;
		CHECK(spirt_aead_open(o, c, n, tag, ad, adl, npub, key)
		    == SPIRT_EMAC);
		npub[20] ^= 1;
		key[31] ^= 1;
		CHECK(spirt_aead_open(o, c, n, tag, ad, adl, npub, key)
		    == SPIRT_EMAC);
		key[31] ^= 1;
		CHECK_RC(spirt_aead_open(o, c, n, tag, ad, adl, npub,
		    key));
	}
out:
	free(m);
	free(c);
	free(w);
	free(o);
}

/*
 * lib/prim_$(CRYPTO).c: the build's SHA-256 gives libsodium's bytes at
 * every length around a block (55/56: the length still fits the last
 * block or not), and the published answers (FIPS 180-4 examples: "abc",
 * the empty string, a million 'a's).
 */
static void
test_sha256(void)
{
	static const size_t lens[] = { 0, 1, 3, 55, 56, 63, 64, 65, 119, 120,
	    4096, 65536 + 17, 1000000 };
	unsigned char h[32], w[32], want[32];
	unsigned char *m = malloc(1000000);
	uint64_t st = 7;

	if (!m) {
		CHECK(!"memory");
		return;
	}
	for (size_t i = 0; i < 1000000; i++)
		m[i] = (unsigned char)(check_urand(&st) * 256);
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		crypto_hash_sha256(w, m, lens[i]);
		spirt_sha256(h, m, lens[i]);
		CHECK(memcmp(h, w, 32) == 0);
	}
	spirt_sha256(h, "abc", 3);
	hexto(want, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	CHECK(memcmp(h, want, 32) == 0);
	spirt_sha256(h, NULL, 0);
	hexto(want, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	CHECK(memcmp(h, want, 32) == 0);
	memset(m, 'a', 1000000);
	spirt_sha256(h, m, 1000000);
	hexto(want, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
	CHECK(memcmp(h, want, 32) == 0);
	free(m);
}

/* the tree of lib/vhash.h, made here with libsodium's SHA-256 alone */
static void
naive_vhash(unsigned char out[32], const unsigned char *p, size_t len)
{
	crypto_hash_sha256_state st;
	unsigned char head[29], leaf[32];

	memcpy(head, "SPIRT-TREE-SHA256", 17);
	for (int i = 0; i < 8; i++)
		head[17 + i] = (unsigned char)((uint64_t)len >> (8 * i));
	for (int i = 0; i < 4; i++)
		head[25 + i] = (unsigned char)(32768u >> (8 * i));
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, head, sizeof head);
	for (size_t o = 0; o < len; o += 32768) {
		crypto_hash_sha256(leaf, p + o, len - o < 32768 ? len - o : 32768);
		crypto_hash_sha256_update(&st, leaf, 32);
	}
	crypto_hash_sha256_final(&st, out);
}

/*
 * lib/vhash.c: the values' hash, spirt_hash, is the tree of
 * docs/protocol.md with its pieces on the build's SHA-256 (OpenSSL's or
 * libsodium's), at every length around a piece and a batch of 64
 * pieces; and Python's hashlib, tests/vhash.py --kat, gives the same
 * known answer.
 */
static void
test_vhash(void)
{
	static const size_t lens[] = { 0, 1, 55, 64, 32767, 32768, 32769,
	    65536, 3 * 32768 + 1000, 64 * 32768 - 1, 64 * 32768,
	    64 * 32768 + 1, 129 * 32768 + 5, 940000 };
	size_t cap = 129 * 32768 + 5;
	unsigned char h[32], w[32], want[32], *m = malloc(cap);
	uint64_t st = 11;

	if (!m) {
		CHECK(!"memory");
		return;
	}
	for (size_t i = 0; i < cap; i++)
		m[i] = (unsigned char)(check_urand(&st) * 256);
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		naive_vhash(w, m, lens[i]);
		spirt_vhash(h, lens[i] ? m : NULL, lens[i]);
		CHECK(memcmp(h, w, 32) == 0);
		spirt_hash(h, m, lens[i]);
		CHECK(memcmp(h, w, 32) == 0);
	}
	/* one bit anywhere changes it */
	spirt_vhash(w, m, 940000);
	m[900001] ^= 4;
	spirt_vhash(h, m, 940000);
	CHECK(memcmp(h, w, 32) != 0);
	m[900001] ^= 4;
	/* tests/vhash.py --kat: byte i is (i * 131 + (i >> 9)) mod 256 */
	for (size_t i = 0; i < 3 * 32768 + 1000; i++)
		m[i] = (unsigned char)(i * 131 + (i >> 9));
	hexto(want, "a82b995b3decd2cee6840fed92d40b5f"
	    "1c8891d3711d2f1c5305e476dcdc69da");
	spirt_vhash(h, m, 3 * 32768 + 1000);
	CHECK(memcmp(h, want, 32) == 0);
	spirt_vhash(h, NULL, 0);
	hexto(want, "121b1a59acf1dc2847fbec02890eeab1"
	    "7f9d78e96ab5addd4fad718c87f6c2f6");
	CHECK(memcmp(h, want, 32) == 0);
	free(m);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");

	if (randombytes_set_implementation(&rng) != 0 ||
	    spirt_crypto_init() != 0) {
		fprintf(stderr, "test_crypto: cannot initialise libsodium\n");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/spirt-crypto-XXXXXX",
	    tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("test_crypto: mkdtemp");
		return 1;
	}
	group = seed_key(99);
	spirt_key_public(group_pk, group);

	test_primitives();
	test_codes();
	test_ids();
	test_keyfiles();
	test_tokens();
	test_allowlist();
	test_handshake();
	test_handshake_order();
	test_allowlist_handshake();
	test_aead();
	test_sha256();
	test_vhash();
	/* the messages and streams on the build's AEAD: the known answer
	 * is the same bytes whichever config.mk's CRYPTO chose */
	test_messages();
	test_streams();
	test_known_answer();

	spirt_key_free(group);
	if (rmdir(dir) != 0)
		perror(dir);
	CHECK_DONE();
}
