/* rng.h - splitmix64 and xoshiro256**: the deterministic generators
 * (ISC licence) */
#ifndef SPIRT_RNG_H
#define SPIRT_RNG_H

#include <stdint.h>

/*
 * splitmix64 draws model initialisations (spirt-init), each worker's
 * minibatch order (spirt-grad) and seeds xoshiro256**, the shard shuffle of
 * spirt-shard (struct spirt_rng below).  Every stream the tools draw is
 * fixed by its seeds, on every machine: changing a generator changes
 * every model and data order the project has produced, so they stay as
 * they are.
 */
struct spirt_sm64 {
	uint64_t s;
};

static inline void
spirt_sm64_seed(struct spirt_sm64 *r, uint64_t seed)
{
	r->s = seed;
}

static inline uint64_t
spirt_sm64_next(struct spirt_sm64 *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static inline double
spirt_sm64_uniform(struct spirt_sm64 *r)
{
	return (double)(spirt_sm64_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* uniform in [0, n) for 1 <= n <= 2^32 (Lemire's multiply-shift) */
static inline uint64_t
spirt_sm64_below(struct spirt_sm64 *r, uint64_t n)
{
	return ((spirt_sm64_next(r) >> 32) * n) >> 32;
}

/* Mix several words into one seed (for (seed, worker, epoch) streams). */
static inline uint64_t
spirt_seed_mix(uint64_t a, uint64_t b, uint64_t c)
{
	struct spirt_sm64 r;

	spirt_sm64_seed(&r, a);
	r.s = spirt_sm64_next(&r) ^ b;
	r.s = spirt_sm64_next(&r) ^ c;
	return spirt_sm64_next(&r);
}

/*
 * The shuffle PRNG: xoshiro256** seeded by four splitmix64 outputs of seed.
 * spirt_rng_below(r, m) is uniform on [0, m): draws v, rejects v < 2^64 mod
 * m, returns v mod m (as OpenBSD arc4random_uniform does).
 */
struct spirt_rng {
	uint64_t s[4];
};

static inline void
spirt_rng_seed(struct spirt_rng *r, uint64_t seed)
{
	struct spirt_sm64 sm;
	int i;

	spirt_sm64_seed(&sm, seed);
	for (i = 0; i < 4; i++)
		r->s[i] = spirt_sm64_next(&sm);
}

static inline uint64_t
spirt_rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t
spirt_rng_next(struct spirt_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = spirt_rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = spirt_rng_rotl(s[3], 45);
	return res;
}

static inline uint64_t
spirt_rng_below(struct spirt_rng *r, uint64_t m)
{
	uint64_t v, min;

	if (m < 2)
		return 0;
	min = -m % m;                   /* 2^64 mod m */
	do
		v = spirt_rng_next(r);
	while (v < min);
	return v % m;
}

#endif
