/* eval.h - accuracy and loss of a stored model over a whole data set */
#ifndef SPIRT_EVAL_H
#define SPIRT_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "grad.h"
#include "spirt.h"
#include "store.h"
#include "tensor.h"

/*
 * spirt-eval's work: the forward pass over every sample of a data set
 * (store or data file), through the same model and data loading as
 * spirt-grad (a struct spirt_grad_ctx), counting correct predictions per
 * class and the mean cross-entropy.
 */

#define SPIRT_EVAL_MAXCLASS 1024

struct spirt_eval_result {
	char spec[SPIRT_NAME_MAX + 1];
	uint64_t step;
	uint64_t samples;
	double loss;                    /* mean cross-entropy */
	uint64_t correct;
	size_t nclass;
	uint64_t *class_total;          /* [nclass], owned by the result */
	uint64_t *class_correct;
};

/*
 * Evaluate model/<name>@<step> on every sample of data set ds, batch
 * samples at a time.  Fills r (free with spirt_eval_result_free).  Errors
 * as spirt_grad_compute.
 */
SPIRT_MUST_CHECK int spirt_eval_run(struct spirt_grad_ctx *c,
    struct spirt_txn *txn, const char *name, uint64_t step, const char *ds,
    size_t batch, struct spirt_eval_result *r);
void spirt_eval_result_free(struct spirt_eval_result *r);

#endif
