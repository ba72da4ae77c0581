/* fuzz_data.h - what the data set readers' harnesses check on success */
#ifndef SPIRT_FUZZ_DATA_H
#define SPIRT_FUZZ_DATA_H

#include <math.h>

#include "data.h"
#include "fuzz.h"

/*
 * A data set a reader returned is whole: n samples of feat features, the
 * shape saying so, labels in 0..nclasses-1, every f32 feature finite; and
 * standardising it either works or names a record.
 */
static inline void
fuzz_data_check(struct spirt_dataset *ds, const struct spirt_data_opts *o)
{
	struct spirt_data_err err;
	uint64_t prod = 1;
	float *scale;
	size_t i;

	FUZZ_ASSERT(ds->n > 0 && ds->feat > 0 && ds->x && ds->y);
	FUZZ_ASSERT(ds->rank >= 2 && ds->rank <= SPIRT_MAXRANK);
	FUZZ_ASSERT(ds->dims[0] == ds->n);
	for (i = 1; i < ds->rank; i++)
		prod *= ds->dims[i];
	FUZZ_ASSERT(prod == ds->feat);
	FUZZ_ASSERT(ds->nclasses >= 2 &&
	    ds->nclasses <= SPIRT_DATA_MAXCLASSES);
	if (o->classes)
		FUZZ_ASSERT(ds->nclasses == o->classes);
	if (o->dim)
		FUZZ_ASSERT(ds->feat == o->dim);
	for (i = 0; i < ds->n; i++)
		FUZZ_ASSERT(ds->y[i] >= 0 && ds->y[i] < ds->nclasses);
	if (ds->xdtype == SPIRT_F32)
		for (i = 0; i < ds->n * ds->feat; i++)
			FUZZ_ASSERT(isfinite(((float *)ds->x)[i]));
	else
		FUZZ_ASSERT(ds->xdtype == SPIRT_U8);
	/* big sets only cost time here */
	if (ds->n * ds->feat > (1u << 16))
		return;
	FUZZ_ASSERT(spirt_data_scale_fit(&scale, ds) == 0);
	memset(&err, 0, sizeof err);
	if (spirt_data_scale_apply(ds, &err, scale, "fuzz") == 0) {
		FUZZ_ASSERT(ds->xdtype == SPIRT_F32 && ds->scale != NULL);
		for (i = 0; i < ds->n * ds->feat; i++)
			FUZZ_ASSERT(isfinite(((float *)ds->x)[i]));
	} else {
		FUZZ_ASSERT(err.has_record && err.record < ds->n);
	}
	free(scale);
}

/* a failure names something: a message, or a code spirt_strerror knows */
static inline void
fuzz_data_fail(const struct spirt_data_err *err, int rc)
{
	char buf[512];

	FUZZ_ASSERT(rc != 0);
	spirt_data_errstr(buf, sizeof buf, err, rc);
	FUZZ_ASSERT(buf[0] != '\0');
}

#endif
