/* keyfile.h - ids, roles, identity keys and their files (ISC licence) */
#ifndef SPIRT_KEYFILE_H
#define SPIRT_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * The base of crypto.h (which says what the modules share: times, ids,
 * error codes, threads): libsodium's initialisation, ids and roles, the
 * Ed25519 identity keys, their signatures, the values' hash, and the
 * secret and public key files (docs/protocol.md, "Key files").  The text
 * format of the files, kv.h's ("VERSION=1", "TYPE=...", NAME=value lines
 * and "END"), is shared with token files (token.h) and allowlists
 * (trust.h).
 */

#define SPIRT_ID_MAX 32
#define SPIRT_PK_BYTES 32               /* Ed25519 public key */
#define SPIRT_PK_HEX (2 * SPIRT_PK_BYTES + 1)

/* roles: a token holds one; "roles" arguments are masks of accepted ones */
#define SPIRT_ROLE_PEER 1
#define SPIRT_ROLE_FUNCTION 2

/* spirt_key_write flags */
#define SPIRT_KEY_NOOVERWRITE 0x1       /* EEXIST (as SPIRT_EOUTPUT) */

/* ---- library ---- */

/* Initialise libsodium (sodium_init); 0, or SPIRT_EBUG if it fails. */
SPIRT_MUST_CHECK int spirt_crypto_init(void);

/* The wall clock, nanoseconds since the Unix epoch. */
uint64_t spirt_crypto_now(void);

/* 1 if s is a valid run, peer or function id, else 0. */
int spirt_id_valid(const char *s);

/* "peer" -> SPIRT_ROLE_PEER, "function" -> SPIRT_ROLE_FUNCTION, else 0. */
int spirt_role_parse(const char *s);
/* "peer", "function" or "?" */
const char *spirt_role_name(int role);

/* ---- identity keys (Ed25519) ---- */

/* A key pair in guarded memory (sodium_malloc), read-only once made. */
struct spirt_key;

/* A fresh key pair.  Free with spirt_key_free(). */
SPIRT_MUST_CHECK int spirt_key_generate(struct spirt_key **k)
    SPIRT_NONNULL(1);
/* The key pair of a 32-byte seed (known-answer tests, key files). */
SPIRT_MUST_CHECK int spirt_key_from_seed(struct spirt_key **k,
    const unsigned char seed[32]) SPIRT_NONNULL(1, 2);
/* Zero and free; NULL is fine. */
void spirt_key_free(struct spirt_key *k);
/* @param pk out: the public key */
void spirt_key_public(unsigned char pk[SPIRT_PK_BYTES],
    const struct spirt_key *k) SPIRT_NONNULL(1, 2);

/*
 * Write the secret key file (docs/protocol.md, "Key files"): mode 0600,
 * atomically (a temporary of mode 0600, fsync, rename or link, fsync of
 * the directory).  With SPIRT_KEY_NOOVERWRITE an existing path is left
 * alone and SPIRT_EOUTPUT(EEXIST) returned.  Failures to create are
 * SPIRT_EOUTPUT(errno).
 */
SPIRT_MUST_CHECK int spirt_key_write(const struct spirt_key *k,
    const char *path, int flags) SPIRT_NONNULL(1, 2);
/*
 * Load a secret key file.  Returns SPIRT_EKEYPERM if group or others have
 * any permission on it (nothing is read), SPIRT_EKEYFILE if it is not a
 * well-formed key file (or its public key does not match its secret),
 * SPIRT_EVERSION for another format version, errno if it cannot be opened.
 */
SPIRT_MUST_CHECK int spirt_key_load(struct spirt_key **k, const char *path)
    SPIRT_NONNULL(1, 2);

/*
 * Detached Ed25519 signatures for records other modules define (signed
 * digests, lib/digest.h); each such record starts with its own magic
 * (docs/protocol.md, "Magic"), so a signature never crosses formats.
 * verify returns 0 or SPIRT_EMAC.
 */
#define SPIRT_SIG_BYTES 64
void spirt_key_sign(unsigned char sig[SPIRT_SIG_BYTES],
    const struct spirt_key *k, const void *msg, size_t len)
    SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_sig_verify(const unsigned char sig[SPIRT_SIG_BYTES],
    const unsigned char pk[SPIRT_PK_BYTES], const void *msg, size_t len)
    SPIRT_NONNULL(1, 2);
/*
 * The hash of values the protocol signs and compares (digests, rounds,
 * catch-up): the SHA-256 tree of lib/vhash.h over len bytes at p, its
 * 32 KiB pieces many at a time.  The digests' version 1 used BLAKE2b-256
 * here, version 2 the SHA-256 of the whole value.
 */
#define SPIRT_HASH_BYTES 32
void spirt_hash(unsigned char out[SPIRT_HASH_BYTES], const void *p,
    size_t len) SPIRT_NONNULL(1);

/* A public key file (mode 0644, atomic) and its reader. */
SPIRT_MUST_CHECK int spirt_pubkey_write(const unsigned char pk[SPIRT_PK_BYTES],
    const char *path) SPIRT_NONNULL(1, 2);
SPIRT_MUST_CHECK int spirt_pubkey_load(unsigned char pk[SPIRT_PK_BYTES],
    const char *path) SPIRT_NONNULL(1, 2);
/* 64 hex digits <-> public key; parse returns SPIRT_EINVAL on bad text. */
SPIRT_MUST_CHECK int spirt_pubkey_parse(unsigned char pk[SPIRT_PK_BYTES],
    const char *hex) SPIRT_NONNULL(1, 2);
void spirt_pubkey_format(char hex[SPIRT_PK_HEX],
    const unsigned char pk[SPIRT_PK_BYTES]) SPIRT_NONNULL(1, 2);

/* ---- lib-internal: for the other modules of crypto.h ---- */

/* 1 if role is SPIRT_ROLE_PEER or SPIRT_ROLE_FUNCTION */
int spirt_role_valid(int role);

/* A 32-byte id field of the wire formats: the id s, NUL-padded. */
void spirt_id_pack(unsigned char f[SPIRT_ID_MAX], const char *s)
    SPIRT_NONNULL(1, 2);
/* An id field back to a string: 0, or SPIRT_EDATA unless a valid
 * padded id. */
SPIRT_MUST_CHECK int spirt_id_unpack(char out[SPIRT_ID_MAX + 1],
    const unsigned char f[SPIRT_ID_MAX]) SPIRT_NONNULL(1, 2);
/* 1 if the field holds exactly id s */
int spirt_id_is(const unsigned char f[SPIRT_ID_MAX], const char *s)
    SPIRT_NONNULL(1, 2);

/*
 * The text files are kv.h's records.  spirt_text_hex: exactly n bytes
 * from 2n hex digits (either case) into out, in constant time (secrets),
 * else SPIRT_EKEYFILE.
 */
SPIRT_MUST_CHECK int spirt_text_hex(unsigned char *out, size_t n,
    const char *v, size_t vn);

#endif
