/* vec.h - float vectors (GCC/Clang vector types), NaN/Inf bits, dispatch */
#ifndef SPIRT_VEC_H
#define SPIRT_VEC_H

#include <stdint.h>
#include <string.h>

#include "isa.h"

/*
 * An exponent of all ones marks Inf or NaN: (bits & EXPMASK) + EXPONE sets
 * BADBIT exactly for those, so OR-ing the sums over a vector says whether
 * any element is non-finite, with integer lanes the compiler vectorises.
 */
#define EXPMASK 0x7f800000u
#define EXPONE  0x00800000u
#define BADBIT  0x80000000u

/*
 * A hot loop is written once, as an always-inline kernel name_k, and
 * SPIRT_DISPATCH(sc, type, name, params, args) compiles it for each
 * x86-64 level (baseline, AVX2, AVX-512F) and defines name() (storage
 * class sc: static, or empty for an extern function) to run the copy of
 * the level spirt_isa() names (isa.h: the best the CPU has, or the one a
 * tool was told).  It replaces GCC's target_clones, which Clang 14 does
 * not link and which cannot be forced to a level.  Even with the same
 * vectors the level matters: the legacy-SSE encoding of the baseline ran
 * the mean of 4 gradients at half the speed of the VEX encoding on the
 * project's machine (bench/train, docs/performance.md).  The helpers a
 * kernel calls must be inlined into it (SPIRT_KERNEL) to be compiled for
 * its level.
 *
 * Results do not depend on the level: lane-wise operations in the same
 * order, no reassociation, and no FMA contraction (-ffp-contract=off in
 * config.mk; Clang would otherwise fuse a * b + c in the AVX-512 copies,
 * whose target implies FMA).  tests/unit/test_agg and test_optim force
 * each level and compare the bytes.
 */
#if defined(__GNUC__) && defined(__x86_64__)
#define SPIRT_MULTI 1
#define SPIRT_AVX2 __attribute__((target("avx2")))
#define SPIRT_AVX512 __attribute__((target("avx512f")))
#define SPIRT_DISPATCH(sc, type, name, params, args)			\
static type name##_base params { return name##_k args; }		\
SPIRT_AVX2 static type name##_avx2 params { return name##_k args; }	\
SPIRT_AVX512 static type name##_avx512 params { return name##_k args; }	\
sc type									\
name params								\
{									\
	switch (spirt_isa()) {						\
	case SPIRT_ISA_AVX512: return name##_avx512 args;		\
	case SPIRT_ISA_AVX2: return name##_avx2 args;			\
	default: return name##_base args;				\
	}								\
}
/* the same for a kernel returning void */
#define SPIRT_DISPATCH_VOID(sc, name, params, args)			\
static void name##_base params { name##_k args; }			\
SPIRT_AVX2 static void name##_avx2 params { name##_k args; }		\
SPIRT_AVX512 static void name##_avx512 params { name##_k args; }	\
sc void									\
name params								\
{									\
	switch (spirt_isa()) {						\
	case SPIRT_ISA_AVX512: name##_avx512 args; break;		\
	case SPIRT_ISA_AVX2: name##_avx2 args; break;			\
	default: name##_base args; break;				\
	}								\
}
#else
#define SPIRT_DISPATCH(sc, type, name, params, args)			\
sc type name params { return name##_k args; }
#define SPIRT_DISPATCH_VOID(sc, name, params, args)			\
sc void name params { name##_k args; }
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
 * 8 lanes: one AVX register in the AVX2/AVX-512 copies, two SSE ones
 * in the baseline copy (the compiler splits the operations).  No function
 * may take or return one: without AVX that changes the ABI, which GCC
 * warns about (-Wpsabi) and Clang refuses outright, even for an inline
 * function.  So they are loaded, stored and tested by these macros.
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
