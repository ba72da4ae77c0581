/* isa.c - the x86-64 level spirt's vector kernels run at (see isa.h) */
#include <string.h>

#include "isa.h"
#include "vec.h"

static const char *const names[SPIRT_ISA_NLEVELS] = {
	[SPIRT_ISA_BASE] = "base",
	[SPIRT_ISA_AVX2] = "avx2",
	[SPIRT_ISA_AVX512] = "avx512",
};

static int level = -1;

int
spirt_isa_best(void)
{
#ifdef SPIRT_MULTI
	/* libgcc's checks include the OS saving the wide registers (XCR0) */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return SPIRT_ISA_AVX512;
	if (__builtin_cpu_supports("avx2"))
		return SPIRT_ISA_AVX2;
#endif
	return SPIRT_ISA_BASE;
}

int
spirt_isa(void)
{
	if (level < 0)
		level = spirt_isa_best();
	return level;
}

int
spirt_isa_set(int l)
{
	if (l < 0 || l >= SPIRT_ISA_NLEVELS)
		return SPIRT_EINVAL;
	if (l > spirt_isa_best())
		return SPIRT_ENOTSUP;
	level = l;
	return 0;
}

int
spirt_isa_parse(const char *name)
{
	int l;

	for (l = 0; l < SPIRT_ISA_NLEVELS; l++)
		if (strcmp(name, names[l]) == 0)
			return l;
	return -1;
}

const char *
spirt_isa_name(int l)
{
	return l >= 0 && l < SPIRT_ISA_NLEVELS ? names[l] : NULL;
}
