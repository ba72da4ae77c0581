/* toolblas.c - OpenBLAS set-up and -V for the tools that compute (ISC) */
#include <stdio.h>
#include <stdlib.h>

#include "blas.h"
#include "isa.h"
#include "tool.h"

/*
 * Kept apart from tool.c: only spirt-grad and spirt-eval reference these,
 * so only they pull in blas.o and its -ldl.
 */

void
blas_setup(const char *threads)
{
	int n = (int)eparse_i64("-j", opt_env(threads, "SPIRT_THREADS", "1"),
	    1, 1024);

	isa_setup();
	if (spirt_blas_init(n) != 0)
		warning("OpenBLAS: %s: using the slow reference kernels",
		    spirt_blas_error());
	else if (spirt_verbose)
		info("OpenBLAS core %s (%s), %d thread%s",
		    spirt_blas_corename(), spirt_blas_source_name(), n,
		    n == 1 ? "" : "s");
	/* what the bits of a gradient depend on besides the inputs:
	 * spirt-grad(1), Determinism (isa does not change them) */
	if (spirt_verbose)
		info("determinism: threads=%d openblas=%s core=%s isa=%s", n,
		    spirt_blas_version(), spirt_blas_source() ?
		    spirt_blas_corename() : "naive",
		    spirt_isa_name(spirt_isa()));
}

void
print_version_blas(void)
{
	printf("%s %s\n", progname, SPIRT_VERSION);
	if (spirt_blas_init(1) == 0)
		printf("OpenBLAS core %s (%s): %s\n", spirt_blas_corename(),
		    spirt_blas_source_name(), spirt_blas_config());
	else
		printf("OpenBLAS not loaded (%s): reference kernels\n",
		    spirt_blas_error());
	exit(fshut_stdout(0));
}
