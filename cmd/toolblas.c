/* toolblas.c - OpenBLAS set-up and -V for the tools that compute (ISC) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "blas.h"
#include "isa.h"
#include "tool.h"

/*
 * Kept apart from tool.c: only spirt-grad and spirt-eval reference these,
 * so only they pull in blas.o and its -ldl.
 */

int
blas_load(int threads)
{
	struct spirt_blas_conf c = { NULL, threads, SPIRT_BLAS_DETECT };
	const char *core;
	char nbuf[16];

	/* OpenBLAS's constructor reads these two when it is loaded */
	if ((core = getenv("OPENBLAS_CORETYPE")) != NULL && *core != '\0') {
		c.source = SPIRT_BLAS_ENV;
	} else if ((core = spirt_blas_cpu_core()) != NULL) {
		if (setenv("OPENBLAS_CORETYPE", core, 1) != 0)
			return errno != 0 ? errno : SPIRT_EINVAL;
		c.source = SPIRT_BLAS_AUTO;
	}
	/* size the thread pool the constructor creates: none for 1 thread */
	snprintf(nbuf, sizeof nbuf, "%d", threads < 1 ? 1 : threads);
	if (setenv("OPENBLAS_NUM_THREADS", nbuf, 1) != 0)
		return errno != 0 ? errno : SPIRT_EINVAL;
	c.lib = getenv("SPIRT_BLAS_LIB");
	return spirt_blas_init(&c);
}

void
blas_setup(const char *threads)
{
	int n = (int)eparse_i64("-j", opt_env(threads, "SPIRT_THREADS", "1"),
	    1, 1024);

	isa_setup();
	if (blas_load(n) != 0)
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
	if (blas_load(1) == 0)
		printf("OpenBLAS core %s (%s): %s\n", spirt_blas_corename(),
		    spirt_blas_source_name(), spirt_blas_config());
	else
		printf("OpenBLAS not loaded (%s): reference kernels\n",
		    spirt_blas_error());
	exit(fshut_stdout(0));
}
