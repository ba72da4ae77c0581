/* eval.c - accuracy and loss of a stored model over a whole data set */
/* ISC licence, see LICENSE */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "gradctx.h"

void
spirt_eval_result_free(struct spirt_eval_result *r)
{
	free(r->class_total);
	free(r->class_correct);
	r->class_total = r->class_correct = NULL;
}

int
spirt_eval_run(struct spirt_grad_ctx *c, struct spirt_txn *txn,
    const char *name, uint64_t step, const char *ds, size_t batch,
    struct spirt_eval_result *r)
{
	const float *params, *losses;
	struct range sh;
	int64_t info[4];
	uint64_t k, n, row, b, i;
	double lsum = 0;
	float *x;
	int32_t *y;
	int rc;

	memset(r, 0, sizeof *r);
	c->where[0] = '\0';
	if (batch == 0)
		return SPIRT_EINVAL;
	if ((rc = spirt_grad_load_model(c, txn, name, step, &params)) != 0)
		return rc;
	if (c->fp != NULL)
		info[0] = (int64_t)c->nfp;
	else if (txn == NULL)
		return SPIRT_EBUG;
	else if ((rc = spirt_grad_load_info(c, txn, ds, info)) != 0)
		return rc;
	if ((rc = spirt_grad_ensure_ws(c, &c->m, batch, 0)) != 0 ||
	    (rc = spirt_grad_load_state(c, txn, name, step)) != 0)
		return rc;
	if (c->predcap < batch) {
		free(c->pred);
		if ((c->pred = malloc(batch * sizeof *c->pred)) == NULL) {
			c->predcap = 0;
			return ENOMEM;
		}
		c->predcap = batch;
	}
	r->nclass = c->m.nclass;
	snprintf(r->spec, sizeof r->spec, "%s", c->m.spec);
	r->step = step;
	r->class_total = calloc(r->nclass, sizeof *r->class_total);
	r->class_correct = calloc(r->nclass, sizeof *r->class_correct);
	if (r->class_total == NULL || r->class_correct == NULL) {
		spirt_eval_result_free(r);
		return ENOMEM;
	}
	x = spirt_ws_input(c->ws);
	y = spirt_ws_labels(c->ws);
	for (k = 0; k < (uint64_t)info[0]; k++) {
		if ((rc = c->fp ? spirt_grad_file_pair(c, (size_t)k, &sh, &n) :
		    spirt_grad_load_shard(c, txn, ds, k, &sh, &n)) != 0)
			goto fail;
		for (row = 0; row < n; row += b) {
			b = n - row < batch ? n - row : batch;
			for (i = 0; i < b; i++)
				spirt_grad_fetch(x + i * c->m.nin, y + i, &sh, row + i,
				    c->m.nin);
			if ((rc = spirt_labels_check(y, b, c->m.nclass))) {
				if (c->fp)
					where(c, rc, "%s: record %" PRIu64
					    ": label outside 0..%zu", c->dpath,
					    2 * k + 1, c->m.nclass - 1);
				else
					where(c, rc, "data/%s/%" PRIu64 "/y: "
					    "label outside 0..%zu", ds, k,
					    c->m.nclass - 1);
				goto fail;
			}
			spirt_model_forward(c->ws, &c->m, params, b);
			spirt_model_predict(c->pred, c->ws, &c->m, b);
			losses = spirt_ws_losses(c->ws);
			for (i = 0; i < b; i++) {
				lsum += losses[i];
				r->class_total[y[i]]++;
				if (c->pred[i] == y[i]) {
					r->class_correct[y[i]]++;
					r->correct++;
				}
			}
			r->samples += b;
		}
	}
	r->loss = r->samples ? lsum / (double)r->samples : 0;
	return 0;
fail:
	spirt_eval_result_free(r);
	return rc;
}
