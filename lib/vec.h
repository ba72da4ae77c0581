/* vec.h - 4-lane float vectors (GCC/Clang vector types) and NaN/Inf bits */
#ifndef SPIRT_VEC_H
#define SPIRT_VEC_H

#include <stdint.h>
#include <string.h>

/*
 * An exponent of all ones marks Inf or NaN: (bits & EXPMASK) + EXPONE sets
 * BADBIT exactly for those, so OR-ing the sums over a vector says whether
 * any element is non-finite, with integer lanes the compiler vectorises.
 */
#define EXPMASK 0x7f800000u
#define EXPONE  0x00800000u
#define BADBIT  0x80000000u

/*
 * SPIRT_CLONES on a hot loop compiles it also for AVX2 and AVX-512, and the
 * loader picks the best the CPU has (an ifunc, as for
 * spirt_count_nonfinite_f32).  Even with the same 4-lane vectors this
 * matters: the legacy-SSE encoding of the default x86-64 build ran the
 * mean of 4 gradients at half the speed of the VEX encoding on the project's
 * machine (bench/train, docs/performance.md).  The helpers a clone calls
 * must be inlined into it (SPIRT_KERNEL) to be compiled for its target.
 * Results do not depend on the clone: lane-wise operations only, and ISO C
 * mode (-std=c11) keeps a * b + c from being contracted into an FMA.
 */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SPIRT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef SPIRT_CLONES
#define SPIRT_CLONES
#endif
#if defined(__GNUC__)
#define SPIRT_KERNEL static inline __attribute__((always_inline))
#else
#define SPIRT_KERNEL static inline
#endif

#if defined(__GNUC__)
#define SPIRT_VEC 1
typedef float vf __attribute__((vector_size(16)));
typedef uint32_t vu __attribute__((vector_size(16)));
typedef int32_t vi __attribute__((vector_size(16)));
#define VL 4

static inline vf
ldv(const float *p)
{
	vf v;

	memcpy(&v, p, sizeof v);
	return v;
}

static inline void
stv(float *p, vf v)
{
	memcpy(p, &v, sizeof v);
}

/*
 * 8 lanes: one AVX register in the AVX2/AVX-512 clones, two SSE ones in
 * the default build (GCC splits the operations).  No function may take or
 * return one: without AVX that changes the ABI, which GCC warns about
 * (-Wpsabi) and Clang refuses outright, even for an inline function.  So
 * they are loaded, stored and tested by these macros.
 */
typedef float vf8 __attribute__((vector_size(32)));
typedef uint32_t vu8 __attribute__((vector_size(32)));
#define VL8 8
#define LD8(v, p) memcpy(&(v), (p), sizeof(v))
#define ST8(p, v) memcpy((p), &(v), sizeof(v))
#define SPLAT8(x) { (x), (x), (x), (x), (x), (x), (x), (x) }
#define BAD8(a) ((((vu8)(a)) & EXPMASK) + EXPONE)
#define OR8(b) (((b)[0] | (b)[1] | (b)[2] | (b)[3]) | \
	((b)[4] | (b)[5] | (b)[6] | (b)[7]))

static inline vf
splat(float x)
{
	vf v = {x, x, x, x};

	return v;
}

static inline vu
vbad(vf a)
{
	return ((vu)a & EXPMASK) + EXPONE;
}

static inline uint32_t
orv(vu b)
{
	return b[0] | b[1] | b[2] | b[3];
}
#endif

static inline uint32_t
badbits(float x)
{
	uint32_t b;

	memcpy(&b, &x, sizeof b);
	return (b & EXPMASK) + EXPONE;
}

#endif
