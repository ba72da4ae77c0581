/* spirt-eval.c - loss and accuracy of a stored model on a data set */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "eval.h"
#include "grad.h"
#include "opt.h"
#include "store.h"
#include "tool.h"

static const struct opt opts[] = {
	{ 'b', "batch", "N", "samples per forward pass (default 256)" },
	{ 'D', "data-file", "F", "take the data from file F, not the store" },
	{ 'd', "dataset", "NAME", "data set (default test)" },
	{ 'j', "threads", "N", "OpenBLAS threads (default 1)" },
	{ 'm', "model", "NAME", "model name (key model/NAME@step)" },
	{ 'p', "params", "F", "take the model from file F, not the store" },
	OPT_STORE,
	{ 't', "step", "N", "model step (default the latest)" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "say which OpenBLAS core runs" },
	OPT_HELP,
	{ 'V', "version", NULL, "print version and OpenBLAS core" },
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-eval [-qVv] [-b batch] [-D file] [-d dataset] "
	"[-j threads]\n"
	"       [-m model] [-p file] [-s store] [-t step]\n",
	NULL, NULL, 21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

int
main(int argc, char **argv)
{
	struct spirt_eval_result r;
	struct spirt_grad_ctx *c;
	struct spirt_store *s = NULL;
	struct spirt_txn *txn = NULL;
	const char *batch = NULL, *ds = NULL, *threads = NULL, *model = NULL;
	const char *store = NULL, *step = NULL, *act, *data = NULL;
	const char *params = NULL;
	uint64_t t = 0, fstep = 0;
	size_t k;
	int ch, rc;

	progname = "spirt-eval";
	checkfds();
	parent_watch();
	store_env();

	while ((ch = opt_next(&cli, argc, argv)) != -1)
		switch (ch) {
		case 'b': batch = optarg; break;
		case 'D': data = optarg; break;
		case 'd': ds = optarg; break;
		case 'j': threads = optarg; break;
		case 'm': model = optarg; break;
		case 'p': params = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 's': store = optarg; break;
		case 't': step = optarg; break;
		case 'V': print_version_blas();
		case 'v': spirt_verbose++; break;
		default: usage(1);
		}
	if (argc != optind)
		usage(1);
	if ((model = opt_env(model, "SPIRT_MODEL", NULL)) == NULL &&
	    params == NULL)
		usage(1);
	if (params == NULL)
		echeck_model("-m", model);
	if (params && data && strcmp(params, "-") == 0 &&
	    strcmp(data, "-") == 0)
		die(SPIRT_EX_USAGE, "-p - and -D -: only one can be stdin");
	if (step != NULL)
		t = eparse_u64("-t", step, 0, UINT64_MAX - 1);
	ds = opt_env(ds, "SPIRT_DATASET_TEST", "test");
	store = store ? store : store_default();

	blas_setup(threads);
	if ((rc = spirt_grad_ctx_new(&c, 0)) != 0)
		dierc(rc, "context");

	act = params;
	if (params && (rc = spirt_grad_model_file(c, params, &fstep)) != 0)
		goto out;
	if (params) {
		model = params;
		if (step == NULL)
			t = fstep;      // else a differing -t fails with 65
	}
	act = data;
	if (data) {
		if ((rc = spirt_grad_data_file(c, data)) != 0)
			goto out;
		ds = data;
	}
	if (params == NULL || data == NULL) {
		if ((rc = spirt_store_open(&s, store, SPIRT_STORE_RDONLY)))
			dierc(rc, "%s", store);
		act = store;
		if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) != 0)
			goto out;
	}
	act = model;
	if (step == NULL && params == NULL &&
	    (rc = spirt_model_latest(txn, model, &t)) != 0)
		goto out;
	rc = spirt_eval_run(c, txn, model, t, ds, (size_t)eparse_u64("-b",
	    opt_env(batch, "SPIRT_EVAL_BATCH", "256"), 1, 1 << 16), &r);
	if (rc != 0)
		goto out;
	printf("model=%s\nspec=%s\nstep=%" PRIu64 "\ndataset=%s\n"
	    "samples=%" PRIu64 "\nloss=%.6f\naccuracy=%.4f\n", model, r.spec,
	    r.step, ds, r.samples, r.loss, r.samples ?
	    (double)r.correct / (double)r.samples : 0.0);
	for (k = 0; k < r.nclass; k++)
		printf("accuracy.%zu=%.4f\n", k, r.class_total[k] ?
		    (double)r.class_correct[k] / (double)r.class_total[k] :
		    0.0);
	spirt_eval_result_free(&r);
out:
	if (txn != NULL)
		spirt_txn_abort(txn);
	spirt_store_close(s);
	if (rc != 0)
		warnrc(rc, "%s", *spirt_grad_where(c) ? spirt_grad_where(c) :
		    act);
	spirt_grad_ctx_free(c);
	return fshut_stdout(spirt_exit(rc));
}
