/* fuzz_crypto.h - fixed members and repeatable randomness for the
 * harnesses of the peer protocol (docs/protocol.md) */
#ifndef SPIRT_FUZZ_CRYPTO_H
#define SPIRT_FUZZ_CRYPTO_H

#include <sodium.h>

#include "crypto.h"
#include "fuzz.h"

/*
 * libsodium's randomness is replaced by a generator reset before each
 * input (fuzz_crypto_reset), so that an input replays exactly: ephemeral
 * keys, nonces and session ids come out the same each time.  Only in the
 * harnesses; the library is unchanged.
 */
static uint64_t fuzz_rng;

static uint64_t
fuzz_next(void)
{
	uint64_t z = (fuzz_rng += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static const char *
fuzz_rb_name(void)
{
	return "spirt-fuzz";
}

static uint32_t
fuzz_rb_random(void)
{
	return (uint32_t)fuzz_next();
}

static void
fuzz_rb_buf(void *buf, size_t n)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)fuzz_next();
}

static randombytes_implementation fuzz_rb = {
	.implementation_name = fuzz_rb_name,
	.random = fuzz_rb_random,
	.stir = NULL,
	.uniform = NULL,
	.buf = fuzz_rb_buf,
	.close = NULL,
};

static inline void
fuzz_crypto_reset(void)
{
	fuzz_rng = 42;
}

/* the run, the clock, and the members: a group key g, peers p1 (the
 * server), p2, and a function f1 with tokens; a peer p3 and a function f2
 * on the allowlist only */
#define FUZZ_RUN "r1"
#define FUZZ_NOW ((uint64_t)1700000000 * 1000000000u)
#define FUZZ_WINDOW ((uint64_t)30 * 1000000000u)
#define FUZZ_DAY ((uint64_t)86400 * 1000000000u)
/* tokens stay valid for fifty years: fuzz_peersrv's server reads the
 * real clock */
#define FUZZ_EXPIRES (FUZZ_NOW + 50 * 366 * FUZZ_DAY)

enum { FZ_G, FZ_P1, FZ_P2, FZ_F1, FZ_P3, FZ_F2, FZ_NKEYS };

/* a function's id is its binding (docs/protocol.md): f1 computes worker
 * 1 of p1 (the peer fuzz_peersrv serves), f2 worker 0 of p2 */
static const char *const fuzz_ids[FZ_NKEYS] = {
	"group", "p1", "p2", "p1.w1", "p3", "p2.w0"
};
static const int fuzz_roles[FZ_NKEYS] = {
	0, SPIRT_ROLE_PEER, SPIRT_ROLE_PEER, SPIRT_ROLE_FUNCTION,
	SPIRT_ROLE_PEER, SPIRT_ROLE_FUNCTION
};

struct fuzz_members {
	struct spirt_key *k[FZ_NKEYS];
	unsigned char pk[FZ_NKEYS][SPIRT_PK_BYTES];
	/* raw secret keys, for harnesses that sign what they forge */
	unsigned char sk[FZ_NKEYS][crypto_sign_SECRETKEYBYTES];
	unsigned char tok[FZ_NKEYS][SPIRT_TOKEN_BYTES];
};

static struct fuzz_members fz;

/* once, from LLVMFuzzerInitialize: before sodium_init */
static inline void
fuzz_crypto_init(void)
{
	unsigned char seed[32];

	FUZZ_ASSERT(randombytes_set_implementation(&fuzz_rb) == 0);
	FUZZ_ASSERT(spirt_crypto_init() == 0);
	for (int i = 0; i < FZ_NKEYS; i++) {
		memset(seed, 0x11 * (i + 1), sizeof seed);
		FUZZ_ASSERT(spirt_key_from_seed(&fz.k[i], seed) == 0);
		spirt_key_public(fz.pk[i], fz.k[i]);
		crypto_sign_seed_keypair(fz.pk[i], fz.sk[i], seed);
	}
	for (int i = FZ_P1; i <= FZ_F1; i++)
		FUZZ_ASSERT(spirt_token_make(fz.tok[i], fz.k[FZ_G], FUZZ_RUN,
		    fuzz_ids[i], fz.pk[i], fuzz_roles[i], FUZZ_NOW - FUZZ_DAY,
		    FUZZ_EXPIRES) == 0);
}

/* what a server trusts: the group key, and p3 and f2 by allowlist */
static inline struct spirt_trust *
fuzz_trust(void)
{
	struct spirt_trust *t;

	FUZZ_ASSERT(spirt_trust_new(&t, FUZZ_RUN, fz.pk[FZ_G],
	    FUZZ_WINDOW) == 0);
	FUZZ_ASSERT(spirt_trust_allow(t, fz.pk[FZ_P3], "p3",
	    SPIRT_ROLE_PEER) == 0);
	FUZZ_ASSERT(spirt_trust_allow(t, fz.pk[FZ_F2], fuzz_ids[FZ_F2],
	    SPIRT_ROLE_FUNCTION) == 0);
	return t;
}

/* member i as itself: its key, id and token (allowlisted ones: none) */
static inline struct spirt_self
fuzz_self(int i)
{
	struct spirt_self s = { fz.k[i], fuzz_ids[i],
	    i <= FZ_F1 ? fz.tok[i] : NULL };

	return s;
}

#endif
