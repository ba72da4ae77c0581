/* rng.h - splitmix64: the small deterministic generator (ISC licence) */
#ifndef SPIRT_RNG_H
#define SPIRT_RNG_H

#include <stdint.h>

/*
 * splitmix64 draws model initialisations (spirt-init), each worker's
 * minibatch order (spirt-grad) and seeds xoshiro256**, the shard shuffle of
 * spirt-shard (struct spirt_rng, data.h).  Every stream the tools draw is
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

#endif
