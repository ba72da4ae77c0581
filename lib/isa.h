/* isa.h - the x86-64 level spirt's vector kernels run at */
#ifndef SPIRT_ISA_H
#define SPIRT_ISA_H

#include "spirt.h"

/*
 * Each hot loop (aggregation, optimiser steps, byte-to-float conversion,
 * the NaN/Inf count) is compiled once per level (SPIRT_DISPATCH in vec.h)
 * and one copy is chosen at run time: by default the best the CPU and
 * the OS support, or the level a tool was told ($SPIRT_ISA, spirt(7)).
 * Every level gives the same bits (same operations in the same order,
 * no FMA contraction), so peers on different CPUs agree; the level only
 * changes the speed.  Other architectures and compilers have only the
 * base level.
 */
enum spirt_isa_level {
	SPIRT_ISA_BASE = 0,     /* x86-64 baseline: SSE2 */
	SPIRT_ISA_AVX2,         /* AVX2 (no FMA) */
	SPIRT_ISA_AVX512,       /* AVX-512F */
	SPIRT_ISA_NLEVELS
};

/* The level the kernels run at; the first call picks spirt_isa_best(). */
int spirt_isa(void);

/* The best level this CPU and OS support. */
int spirt_isa_best(void);

/*
 * Run the kernels at level from now on (call it before any thread runs
 * a kernel).  Returns 0, SPIRT_EINVAL for no such level, or
 * SPIRT_ENOTSUP when the CPU or this build lacks it (nothing changed).
 */
SPIRT_MUST_CHECK int spirt_isa_set(int level);

/* Level for "base", "avx2" or "avx512", or -1; and back (NULL if none). */
int spirt_isa_parse(const char *name);
const char *spirt_isa_name(int level);

#endif
