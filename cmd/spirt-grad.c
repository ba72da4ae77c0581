/* spirt-grad.c - the serverless function: one minibatch gradient */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"
#include "grad.h"
#include "io.h"
#include "parse.h"
#include "store.h"
#include "tensor.h"
#include "serve.h"
#include "tool.h"

#define USAGE \
"usage: spirt-grad [-fiqVv] [-b batch] [-D file] [-d dataset] [-j threads]\n" \
"       [-m model] [-o file] [-p file] [-S seed] [-s store] [-t step]\n" \
"       [-w worker] [--label-flip]\n"

static struct {
	const char *batch, *data, *dataset, *threads, *model, *out, *params;
	const char *seed, *store, *step, *worker;
	int force, serve, label_flip;
} o;

static _Noreturn void
usage(int code)
{
	fputs(USAGE, code ? stderr : stdout);
	if (!code)
		fputs("\n"
		    "  -b, --batch N      samples per minibatch (default 64)\n"
		    "  -D, --data-file F  take the data from file F, not the "
		    "store\n"
		    "  -d, --dataset NAME data set (default train)\n"
		    "  -f, --force        write binary data to a terminal\n"
		    "  -i, --serve        warm: read \"step [worker]\" lines "
		    "on stdin\n"
		    "  -j, --threads N    OpenBLAS threads (default 1)\n"
		    "      --label-flip   evaluation only: a Byzantine "
		    "function, labels\n"
		    "                     y become K-1-y\n"
		    "  -m, --model NAME   model name (key model/NAME@step)\n"
		    "  -o, --output FILE  write the record to FILE (- stdout)\n"
		    "  -p, --params F     take the model from file F, not the "
		    "store\n"
		    "  -S, --seed N       minibatch seed (default 0)\n"
		    "  -s, --store PATH   store (default $SPIRT_STORE or "
		    "./spirt.db)\n"
		    "  -t, --step N       model step\n"
		    "  -w, --worker N     worker id (default 0)\n"
		    "  -q, --quiet        no warnings\n"
		    "  -v, --verbose      say what runs, with timings\n"
		    "  -h, --help         this help\n"
		    "  -V, --version      print version and OpenBLAS core\n",
		    stdout);
	exit(code ? SPIRT_EX_USAGE : fshut_stdout(0));
}

struct put {
	const char *key;
	struct spirt_tensor *hdr;
	const float *grad;
};

static int
put_fn(struct spirt_txn *txn, void *arg)
{
	struct put *p = arg;

	return spirt_store_put_tensor(txn, p->key, p->hdr, p->grad, 0);
}

/* One invocation: compute job's gradient, write it; returns a lib code. */
static int
invoke(struct spirt_grad_ctx *c, struct spirt_store *s,
    const struct spirt_grad_job *job, struct spirt_tensor *hdr)
{
	struct spirt_txn *txn;
	struct spirt_publish pub;
	struct put p = { NULL, hdr, NULL };
	char key[SPIRT_KEY_MAX + 1];
	const char *act = "begin read transaction";
	double t0 = spirt_clock();
	int rc, fd;

	txn = NULL;
	if (s != NULL && (rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		goto fail;
	act = "compute";
	rc = spirt_grad_compute(c, txn, job, hdr, &p.grad);
	if (txn != NULL)
		spirt_txn_abort(txn);
	if (rc != 0)
		goto fail;
	if (o.out != NULL) {
		act = o.out;
		if (strcmp(o.out, "-") == 0) {
			fd = STDOUT_FILENO;
		} else if ((rc = spirt_publish_open(&pub, o.out, 0644)) != 0) {
			goto fail;
		} else {
			fd = pub.fd;
		}
		rc = spirt_tensor_write(fd, hdr, p.grad);
		if (fd != STDOUT_FILENO)
			rc = rc ? (spirt_publish_abort(&pub), rc) :
			    spirt_publish_commit(&pub);
	} else {
		if ((rc = spirt_grad_key(key, sizeof key, job->step,
		    job->worker)) != 0)
			goto fail;
		act = p.key = key;
		rc = spirt_store_write(s, put_fn, &p);
	}
	if (rc != 0)
		goto fail;
	if (spirt_verbose)
		info("step %" PRIu64 " worker %" PRIu32 ": %" PRIu64 " samples,"
		    " loss %.6g, %.3f ms", job->step, job->worker, hdr->samples,
		    hdr->loss, 1e3 * (spirt_clock() - t0));
	return 0;
fail:
	if (*spirt_grad_where(c) != '\0')
		warnrc(rc, "%s", spirt_grad_where(c));
	else
		warnrc(rc, "%s", act);
	return rc;
}

struct warm {
	struct spirt_grad_ctx *c;
	struct spirt_store *s;
	struct spirt_grad_job *job;
};

/* Warm mode: one invocation per request line (serve.h); answer it. */
static int
serve_one(void *arg, const struct spirt_serve_req *req, char *ans,
    size_t cap)
{
	struct warm *w = arg;
	struct spirt_grad_job *job = w->job;
	struct spirt_tensor hdr;
	int rc;

	job->step = req->step;
	job->worker = req->worker;
	if ((rc = invoke(w->c, w->s, job, &hdr)) != 0) {
		snprintf(ans, cap, "step=%" PRIu64 " worker=%" PRIu32
		    " error=%d", job->step, job->worker, spirt_exit(rc));
		return spirt_exit(rc);
	}
	snprintf(ans, cap, "step=%" PRIu64 " worker=%" PRIu32 " samples=%"
	    PRIu64 " loss=%.9g", job->step, job->worker, hdr.samples,
	    hdr.loss);
	return 0;
}

static int
serve(struct spirt_grad_ctx *c, struct spirt_store *s,
    struct spirt_grad_job *job)
{
	struct warm w = { c, s, job };
	struct spirt_serve sv = {
		.name = "stdin", .maxstep = UINT64_MAX - 1, .workers = 1,
		.maxworker = UINT32_MAX - 1, .worker0 = job->worker,
		.run = serve_one, .arg = &w, .warn = warnx_,
	};
	int rc;

	spirt_serve_init();
	if ((rc = spirt_serve_loop(&sv, stdin, stdout)) != 0) {
		warnrc(rc, "%s", ferror(stdin) ? "stdin" : "stdout");
		return SPIRT_EX_IOERR;
	}
	return sv.worst;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "data-file", required_argument, NULL, 'D' },
		{ "dataset", required_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "label-flip", no_argument, NULL, 'L' },
		{ "model", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "params", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 'S' },
		{ "serve", no_argument, NULL, 'i' },
		{ "step", required_argument, NULL, 't' },
		{ "store", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "worker", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 }
	};
	struct spirt_grad_job job;
	struct spirt_grad_ctx *c;
	struct spirt_store *s = NULL;
	struct spirt_tensor hdr;
	const char *store, *step;
	uint64_t fstep = 0;
	int ch, rc, code;

	progname = "spirt-grad";
	checkfds();

	while ((ch = getopt_long(argc, argv, "b:D:d:fhij:m:o:p:qS:s:t:Vvw:", lo,
	    NULL)) != -1)
		switch (ch) {
		case 'b': o.batch = optarg; break;
		case 'D': o.data = optarg; break;
		case 'd': o.dataset = optarg; break;
		case 'f': o.force = 1; break;
		case 'h': usage(0);
		case 'i': o.serve = 1; break;
		case 'L': o.label_flip = 1; break;
		case 'j': o.threads = optarg; break;
		case 'm': o.model = optarg; break;
		case 'o': o.out = optarg; break;
		case 'p': o.params = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'S': o.seed = optarg; break;
		case 's': o.store = optarg; break;
		case 't': o.step = optarg; break;
		case 'V': print_version_blas();
		case 'v': spirt_verbose++; break;
		case 'w': o.worker = optarg; break;
		default: usage(1);
		}
	argc -= optind;
	if (argc != 0)
		usage(1);
	job.model = opt_env(o.model, "SPIRT_MODEL", NULL);
	step = opt_env(o.step, "SPIRT_STEP", NULL);
	if (o.params == NULL && (job.model == NULL || (step == NULL &&
	    !o.serve)))
		usage(1);
	if (o.params == NULL)
		echeck_model("-m", job.model);
	if (o.serve && (o.out != NULL || o.params != NULL))
		die(SPIRT_EX_USAGE, "%s and --serve: a warm function reads the "
		    "model from and writes to the store", o.out ? "-o" : "-p");
	if (o.params && o.data && strcmp(o.params, "-") == 0 &&
	    strcmp(o.data, "-") == 0)
		die(SPIRT_EX_USAGE, "-p - and -D -: only one can be stdin");
	if (o.params && o.data && o.out == NULL)
		o.out = "-";            // no store at all
	job.step = step ? eparse_u64("-t", step, 0, UINT64_MAX - 1) : 0;
	job.worker = (uint32_t)eparse_u64("-w", opt_env(o.worker,
	    "SPIRT_WORKER", "0"), 0, UINT32_MAX - 1);
	job.batch = (size_t)eparse_u64("-b", opt_env(o.batch, "SPIRT_BATCH",
	    "64"), 1, 1 << 20);
	job.seed = eparse_u64("-S", opt_env(o.seed, "SPIRT_SEED", "0"), 0,
	    UINT64_MAX);
	job.dataset = opt_env(o.dataset, "SPIRT_DATASET", "train");
	job.label_flip = o.label_flip;
	store = o.store ? o.store : spirt_store_default();
	if (o.out && strcmp(o.out, "-") == 0 && !o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal: use -f to write "
		    "binary data there");

	blas_setup(o.threads);
	if ((rc = spirt_grad_ctx_new(&c, 0)) != 0)
		dierc(rc, "context");
	if (o.params && (rc = spirt_grad_model_file(c, o.params, &fstep)))
		dierc(rc, "%s", *spirt_grad_where(c) ? spirt_grad_where(c) :
		    o.params);
	if (o.params && step == NULL)
		job.step = fstep;       // else a differing -t fails with 65
	if (o.data && (rc = spirt_grad_data_file(c, o.data)) != 0)
		dierc(rc, "%s", *spirt_grad_where(c) ? spirt_grad_where(c) :
		    o.data);

	if ((o.params == NULL || o.data == NULL) &&
	    (rc = spirt_store_open(&s, store, o.out ? SPIRT_STORE_RDONLY :
	    0)) != 0)
		dierc(rc, "%s", store);

	if (o.serve) {
		code = serve(c, s, &job);
	} else {
		rc = invoke(c, s, &job, &hdr);
		code = spirt_exit(rc);
	}

	spirt_store_close(s);
	spirt_grad_ctx_free(c);
	return fshut_stdout(code);
}
