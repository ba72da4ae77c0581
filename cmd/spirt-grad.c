/* spirt-grad.c - the serverless function: one minibatch gradient */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"
#include "faas.h"
#include "faas_http.h"
#include "faas_lambda.h"
#include "grad.h"
#include "io.h"
#include "keys.h"
#include "opt.h"
#include "parse.h"
#include "store.h"
#include "tensor.h"
#include "serve.h"
#include "slot.h"
#include "tool.h"

static struct {
	const char *batch, *data, *dataset, *threads, *model, *out, *params;
	const char *seed, *store, *step, *worker, *faas;
	int force, serve, label_flip;
} o;

/* -F: the runner's contract (spirt-grad(1), FAAS) */
enum { COLD, STDIO, HTTP, LAMBDA };
static int faas;
static int stderr_fd = -1;      /* -F stdio: the real stderr, kept aside */
static struct spirt_faas_lambda lambda;

static const struct opt opts[] = {
	{ 'b', "batch", "N", "samples per minibatch (default 64)" },
	{ 'D', "data-file", "F", "take the data from file F, not the store" },
	{ 'd', "dataset", "NAME", "data set (default train)" },
	{ 'F', "faas", "C",
	    "under a runner's contract: stdio, http or lambda" },
	{ 'f', "force", NULL, "write binary data to a terminal" },
	{ 'i', "serve", NULL, "warm: read \"step [worker]\" lines on stdin" },
	{ 'j', "threads", "N", "OpenBLAS threads (default 1)" },
	{ OPT_LONG('L'), "label-flip", NULL,
	    "evaluation only: a Byzantine function, labels\n"
	    "y become K-1-y" },
	{ 'm', "model", "NAME", "model name (key model/NAME@step)" },
	{ 'o', "output", "FILE", "write the record to FILE (- stdout)" },
	{ 'p', "params", "F", "take the model from file F, not the store" },
	{ 'S', "seed", "N", "minibatch seed (default 0)" },
	OPT_STORE,
	{ 't', "step", "N", "model step" },
	{ 'w', "worker", "N", "worker id (default 0)" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "say what runs, with timings" },
	OPT_HELP,
	{ 'V', "version", NULL, "print version and OpenBLAS core" },
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-grad [-fiqVv] [-b batch] [-D file] [-d dataset] "
	"[-F contract]\n"
	"       [-j threads] [-m model] [-o file] [-p file] [-S seed] "
	"[-s store]\n"
	"       [-t step] [-w worker] [--label-flip] [request]\n",
	NULL, NULL, 21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

struct put {
	const char *key;
	struct spirt_tensor *hdr;
	const float *grad;
	const char *skey;               /* the model's state, if it has */
	struct spirt_tensor shdr;
	const float *state;
};

static int
put_fn(struct spirt_txn *txn, void *arg)
{
	struct put *p = arg;
	int rc;

	// the state the pass measured, before (here: with) the gradient
	// that makes the step's inputs complete
	if (p->state != NULL && (rc = spirt_store_put_tensor(txn, p->skey,
	    &p->shdr, p->state, 0)) != 0)
		return rc;
	return spirt_store_put_tensor(txn, p->key, p->hdr, p->grad, 0);
}

/* p's state record: state/<t>/<w>, f32 [S], as spirt-model(5) says */
static int
put_state(struct put *p, char *skey, size_t cap, const float *state,
    size_t n, const struct spirt_tensor *hdr)
{
	uint64_t dims[1] = { n };
	int rc;

	if ((rc = spirt_key_state(skey, cap, hdr->step, hdr->origin)) != 0 ||
	    (rc = spirt_tensor_init(&p->shdr, SPIRT_F32, 1, dims)) != 0 ||
	    (rc = spirt_tensor_set_name(&p->shdr, hdr->name)) != 0)
		return rc;
	p->shdr.step = hdr->step;
	p->shdr.origin = hdr->origin;
	p->shdr.samples = hdr->samples;
	p->skey = skey;
	p->state = state;
	return 0;
}

/*
 * $SPIRT_SAMPLE_LOG: a line for each gradient written, the samples it
 * used, appended with one write (spirt-grad(1), ENVIRONMENT).
 */
static void
log_samples(const struct spirt_grad_ctx *c, const struct spirt_grad_job *job,
    const struct spirt_tensor *hdr)
{
	const char *path = getenv("SPIRT_SAMPLE_LOG");
	const struct spirt_grad_sample *b;
	char *line;
	size_t n, i, len, cap;
	int fd, rc = 0;

	if (path == NULL || *path == '\0')
		return;
	b = spirt_grad_batch(c, &n);
	cap = 128 + n * 42;
	line = emalloc(cap);
	len = (size_t)snprintf(line, cap, "step=%" PRIu64 " worker=%" PRIu32
	    " revision=", job->step, job->worker);
	if (hdr->revision == SPIRT_NOREVISION)
		len += (size_t)snprintf(line + len, cap - len, "-");
	else
		len += (size_t)snprintf(line + len, cap - len, "%" PRIu64,
		    hdr->revision);
	len += (size_t)snprintf(line + len, cap - len, " samples=");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(line + len, cap - len, "%s%" PRIu64 ":%"
		    PRIu64, i ? "," : "", b[i].shard, b[i].index);
	len += (size_t)snprintf(line + len, cap - len, "\n");
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0644)) < 0 || (rc = spirt_writeall(fd, line, len)) != 0)
		warning("SPIRT_SAMPLE_LOG %s: %s", path, strerror(fd < 0 ?
		    errno : rc));
	if (fd >= 0)
		close(fd);
	free(line);
}

/*
 * The warm request word to=slot: the gradient goes into this worker's
 * slot, <store>/scratch/slot.<w> (slot.h), not into grad/<t>/<w>; kept
 * mapped from one request to the next, the gradient computed straight
 * into it once it has the room.
 */
static struct spirt_slot slot;

/* the record of model@t in txn: its payload checksum (a slot's model) */
static int
model_sum(struct spirt_txn *txn, const struct spirt_grad_job *job,
    uint64_t *sum)
{
	char key[SPIRT_KEY_MAX + 1];
	const void *v;
	size_t len;
	int rc;

	if ((rc = spirt_key_model(key, sizeof key, job->model, job->step)) ||
	    (rc = spirt_store_get(txn, key, &v, &len)))
		return rc;
	*sum = spirt_slot_record_sum(v, len);
	return 0;
}

/* the gradient at g into the slot (when not computed there), header last */
static int
to_slot(const char *dir, const struct spirt_grad_job *job,
    const struct spirt_tensor *hdr, const float *g, uint64_t sum)
{
	int rc;

	if (g != spirt_slot_payload(&slot)) {
		if ((rc = spirt_slot_begin(&slot, dir, job->worker,
		    hdr->nelem)))
			return rc;
		memcpy(spirt_slot_payload(&slot), g, hdr->nbytes);
	}
	return spirt_slot_finish(&slot, hdr, sum);
}

/*
 * One invocation: compute job's gradient, write it; returns a lib code,
 * with the message in msg (cap bytes).  With a (FaaS) and -o -, the
 * record goes into a->rec instead of standard output.
 */
static int
invoke(struct spirt_grad_ctx *c, struct spirt_store *s,
    const struct spirt_grad_job *job, struct spirt_tensor *hdr, char *msg,
    size_t cap, struct spirt_faas_ans *a, int *toslot)
{
	char dir[4096];
	uint64_t sum = 0;
	struct spirt_txn *txn;
	struct spirt_publish pub;
	struct put p = { NULL, hdr, NULL, NULL, { 0 }, NULL };
	char key[SPIRT_KEY_MAX + 1], skey[SPIRT_KEY_MAX + 1];
	const float *state;
	const char *act = "begin read transaction";
	double t0 = spirt_clock();
	size_t n;
	int rc, fd;

	txn = NULL;
	spirt_grad_set_out(c, NULL, 0);
	if (toslot && *toslot) {
		/* no gradient in the slot from here until its header */
		snprintf(dir, sizeof dir, "%s/scratch",
		    spirt_store_location(s));
		if ((rc = spirt_slot_begin(&slot, dir, job->worker, 0)) != 0) {
			/* (before compute: no context of its to name) */
			snprintf(msg, cap, "%.200s: %s", slot.path,
			    errcause(rc));
			return rc;
		}
		spirt_grad_set_out(c, spirt_slot_payload(&slot),
		    (slot.len - SPIRT_SLOT_HDR) / 4);
	}
	act = "begin read transaction";
	if (s != NULL && (rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		goto fail;
	act = "compute";
	rc = spirt_grad_compute(c, txn, job, hdr, &p.grad);
	if (rc == 0 && toslot && *toslot)
		rc = model_sum(txn, job, &sum);
	if (txn != NULL)
		spirt_txn_abort(txn);
	if (rc != 0)
		goto fail;
	/* a model with a state keeps the store: state/<t> beside grad/<t> */
	if (toslot && *toslot && spirt_grad_state(c, &n) != NULL)
		*toslot = 0;
	if (toslot && *toslot) {
		act = slot.path;
		rc = to_slot(dir, job, hdr, p.grad, sum);
	} else if (o.out != NULL && a != NULL) {
		act = "record";
		n = spirt_tensor_reclen(hdr);
		if ((a->rec = malloc(n)) == NULL) {
			rc = ENOMEM;
			goto fail;
		}
		a->len = n;
		rc = spirt_tensor_encode(a->rec, n, hdr, p.grad);
	} else if (o.out != NULL) {
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
		if ((rc = spirt_key_grad(key, sizeof key, job->step,
		    job->worker)) != 0)
			goto fail;
		if ((state = spirt_grad_state(c, &n)) != NULL &&
		    (rc = put_state(&p, skey, sizeof skey, state, n, hdr)) != 0)
			goto fail;
		act = p.key = key;
		rc = spirt_store_write(s, put_fn, &p);
		if (rc == 0 && a != NULL && strlen(key) < sizeof a->key)
			memcpy(a->key, key, strlen(key) + 1);
	}
	if (rc != 0)
		goto fail;
	log_samples(c, job, hdr);
	if (spirt_verbose)
		info("step %" PRIu64 " worker %" PRIu32 ": %" PRIu64 " samples,"
		    " loss %.6g, %.3f ms", job->step, job->worker, hdr->samples,
		    hdr->loss, 1e3 * (spirt_clock() - t0));
	return 0;
fail:
	snprintf(msg, cap, "%.200s: %s", *spirt_grad_where(c) != '\0' ?
	    spirt_grad_where(c) : act, errcause(rc));
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
	char msg[320], where[48];
	int rc, toslot = 0;

	job->step = req->step;
	job->worker = req->worker;
	/* the one word: to=slot (the only key) */
	if (req->nwords && (req->word[0].nval != 4 ||
	    memcmp(req->word[0].val, "slot", 4) != 0)) {
		warnx_("stdin:%llu: to=: slot, the worker's gradient slot",
		    (unsigned long long)req->line);
		rc = SPIRT_EX_USAGE;
		goto refused;
	}
	if (req->nwords && spirt_store_is_url(spirt_store_location(w->s))) {
		warnx_("stdin:%llu: to=slot: %s is not a local store",
		    (unsigned long long)req->line,
		    spirt_store_location(w->s));
		rc = SPIRT_EX_USAGE;
		goto refused;
	}
	toslot = req->nwords;
	if ((rc = invoke(w->c, w->s, job, &hdr, msg, sizeof msg, NULL,
	    &toslot))) {
		warnx_("%s", msg);
		rc = spirt_exit(rc);
		goto refused;
	}
	/* where the gradient is, when it is not grad/<t>/<w> */
	where[0] = '\0';
	if (toslot)
		snprintf(where, sizeof where, " slot=scratch/slot.%" PRIu32,
		    job->worker);
	snprintf(ans, cap, "step=%" PRIu64 " worker=%" PRIu32 " samples=%"
	    PRIu64 "%s loss=%.9g", job->step, job->worker, hdr.samples, where,
	    hdr.loss);
	return 0;
refused:
	snprintf(ans, cap, "step=%" PRIu64 " worker=%" PRIu32 " error=%d",
	    job->step, job->worker, rc);
	return rc;
}

/* the word a warm request may carry: to=slot */
static const char *const serve_keys[] = { "to", NULL };

static int
serve(struct spirt_grad_ctx *c, struct spirt_store *s,
    struct spirt_grad_job *job)
{
	struct warm w = { c, s, job };
	struct spirt_serve sv = {
		.name = "stdin", .maxstep = UINT64_MAX - 1, .workers = 1,
		.maxworker = UINT32_MAX - 1, .worker0 = job->worker,
		.keys = serve_keys, .run = serve_one, .arg = &w,
		.warn = warnx_,
	};
	int rc;

	serve_setup();
	spirt_slot_init(&slot);
	rc = spirt_serve_loop(&sv, stdin, stdout);
	spirt_slot_close(&slot);
	if (rc != 0) {
		warnrc(rc, "%s", ferror(stdin) ? "stdin" : "stdout");
		return SPIRT_EX_IOERR;
	}
	return sv.worst;
}

/* ---- under a runner's contract (-F; spirt-grad(1), FAAS) ---- */

struct fctx {
	struct spirt_grad_ctx *c;
	struct spirt_store *s;
	struct spirt_grad_job job;      /* the deployment's defaults */
	int has_step;                   /* -t, $SPIRT_STEP or -p's record */
};

/* One invocation of a request; its answer into a. */
static void
faas_run(void *arg, const struct spirt_faas_req *req, struct spirt_faas_ans *a)
{
	struct fctx *f = arg;
	struct spirt_grad_job job = f->job;
	struct spirt_tensor hdr;
	char msg[300];
	int rc;

	if (req->has & SPIRT_FAAS_MODEL)
		job.model = req->model;
	if (req->has & SPIRT_FAAS_STEP)
		job.step = req->step;
	if (req->has & SPIRT_FAAS_WORKER)
		job.worker = req->worker;
	a->step = job.step;
	a->worker = job.worker;
	if (!(req->has & SPIRT_FAAS_STEP) && !f->has_step) {
		a->code = SPIRT_EX_USAGE;
		snprintf(msg, sizeof msg, "request: no step (step=N, "
		    "/grad/N/W, or -t)");
	} else if (job.model == NULL && o.params == NULL) {
		a->code = SPIRT_EX_USAGE;
		snprintf(msg, sizeof msg, "request: no model (model=NAME, "
		    "or -m)");
	} else if ((rc = invoke(f->c, f->s, &job, &hdr, msg, sizeof msg,
	    a, NULL)) != 0) {
		a->code = spirt_exit(rc);
	} else {
		a->samples = hdr.samples;
		a->loss = hdr.loss;
		return;
	}
	snprintf(a->msg, sizeof a->msg, "%s: %s", progname, msg);
	if (faas != STDIO)      // a log line; stdio prints it at the end
		warnx_("%s", msg);
}

/* Standard error back, for a failure's message (-F stdio). */
static void
stderr_back(void)
{
	if (stderr_fd >= 0) {
		dup2(stderr_fd, STDERR_FILENO);
		close(stderr_fd);
		stderr_fd = -1;
	}
}

/*
 * A failure before the first invocation: "prog: what: cause" on standard
 * error, and the runner's way (stdio: a JSON error on standard output;
 * lambda: /runtime/init/error), then exit.
 */
static _Noreturn void
die_init(int rc, const char *fmt, ...)
{
	char what[256], msg[400], *json;
	size_t n;
	va_list ap;
	int code = spirt_exit(rc);

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof msg, "%s: %s: %s", progname, what,
	    errcause(rc));
	stderr_back();
	fprintf(stderr, "%s\n", msg);
	if (faas == STDIO && spirt_faas_json_error(&json, &n, code, msg) == 0) {
		if (spirt_writeall(STDOUT_FILENO, json, n) != 0)
			code = SPIRT_EX_IOERR;
		free(json);
	}
	if (faas == LAMBDA && spirt_faas_lambda_init_error(&lambda, code, msg))
		warnx_("Runtime API %s: %s", lambda.api, lambda.msg);
	exit(code);
}

/*
 * -F stdio: one invocation per process.  The request is the runner's
 * Http_Method, Http_Path and Http_Query, the operand and standard input;
 * the answer goes to standard output, and standard error stays empty
 * unless it failed (the classic watchdog mixes the two).
 */
static int
faas_stdio(struct fctx *f, const char *arg, int stdin_free)
{
	struct spirt_faas_req req;
	struct spirt_faas_ans a;
	char *body = NULL, *json = NULL;
	size_t n = 0;
	ssize_t got;
	int rc, code;

	memset(&a, 0, sizeof a);
	spirt_faas_req_init(&req);
	if (stdin_free && !isatty(STDIN_FILENO)) {
		body = emalloc(SPIRT_FAAS_BODY_MAX + 1);
		if ((got = spirt_readall(STDIN_FILENO, body,
		    SPIRT_FAAS_BODY_MAX + 1)) < 0)
			die_init(errno, "stdin");
		n = (size_t)got;
	}
	if (n > SPIRT_FAAS_BODY_MAX) {
		a.code = SPIRT_EX_USAGE;
		snprintf(a.msg, sizeof a.msg, "%s: request: a body over %d "
		    "bytes (parameters only)", progname, SPIRT_FAAS_BODY_MAX);
	} else if ((rc = spirt_faas_cgi(&req, getenv("Http_Method"),
	    getenv("Http_Path"), getenv("Http_Query"), arg, body, n)) != 0) {
		a.code = spirt_exit(rc);
		snprintf(a.msg, sizeof a.msg, "%s: request: %s", progname,
		    req.msg);
	} else {
		faas_run(f, &req, &a);
	}
	free(body);

	if (a.code == 0 && a.rec != NULL)
		rc = spirt_writeall(STDOUT_FILENO, a.rec, a.len);
	else if ((rc = spirt_faas_json_answer(&json, &n, &a, 0)) == 0)
		rc = spirt_writeall(STDOUT_FILENO, json, n);
	free(json);
	code = a.code;
	if (code != 0 || rc != 0)
		stderr_back();
	if (code != 0)
		fprintf(stderr, "%s\n", a.msg);
	spirt_faas_ans_clear(&a);
	if (rc != 0) {
		warnrc(rc, "stdout");
		return SPIRT_EX_IOERR;
	}
	return code;
}

/* -F http: serve on $SPIRT_HTTP_ADDR:$PORT until SIGTERM or SIGINT. */
static int
faas_http(struct fctx *f)
{
	struct spirt_faas_http h;
	sigset_t set;
	int rc, sig;

	memset(&h, 0, sizeof h);
	h.addr = opt_env(NULL, "SPIRT_HTTP_ADDR", "0.0.0.0");
	h.port = (unsigned)eparse_u64("$PORT", opt_env(NULL, "PORT", "8080"),
	    0, 65535);
	h.run = faas_run;
	h.arg = f;
	serve_setup();
	signal(SIGPIPE, SIG_IGN);
	// the server's threads inherit the mask: the signal comes here
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((rc = spirt_faas_http_start(&h)) != 0) {
		warnx_("%s", h.msg);
		return spirt_exit(rc);
	}
	info("listening on %s port %u", h.addr, h.bound);
	while (sigwait(&set, &sig) != 0)
		;
	spirt_faas_http_drain(&h);
	spirt_faas_http_stop(&h);
	if (spirt_verbose)
		info("signal %d: stopped after %lu invocations", sig, h.served);
	return 0;
}

/* each event's Lambda-Runtime-Trace-Id, for the SDKs (spirt-grad(1)) */
static void
lambda_trace(const char *id)
{
	if (id != NULL)
		setenv("_X_AMZN_TRACE_ID", id, 1);
	else
		unsetenv("_X_AMZN_TRACE_ID");
}

/* -F lambda: the custom-runtime loop, until SIGTERM or SIGINT. */
static int
faas_lambda(struct fctx *f)
{
	int rc;

	lambda.prog = progname;
	lambda.run = faas_run;
	lambda.arg = f;
	lambda.warn = warnx_;
	lambda.trace = lambda_trace;
	serve_setup();
	if ((rc = spirt_faas_lambda_loop(&lambda)) != 0) {
		warnx_("Runtime API %s: %s", lambda.api, lambda.msg);
		return spirt_exit(rc);
	}
	if (spirt_verbose)
		info("stopped after %lu invocations", lambda.served);
	return 0;
}

int
main(int argc, char **argv)
{
	struct spirt_grad_job job;
	struct spirt_grad_ctx *c;
	struct spirt_store *s = NULL;
	struct spirt_tensor hdr;
	struct fctx f;
	const char *store, *step;
	char msg[320];
	uint64_t fstep = 0;
	int ch, rc, code, nul;

	progname = "spirt-grad";
	checkfds();
	parent_watch();
	store_env();

	while ((ch = opt_next(&cli, argc, argv)) != -1)
		switch (ch) {
		case 'b': o.batch = optarg; break;
		case 'D': o.data = optarg; break;
		case 'd': o.dataset = optarg; break;
		case 'F': o.faas = optarg; break;
		case 'f': o.force = 1; break;
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
	argv += optind;
	if ((o.faas = opt_env(o.faas, "SPIRT_FAAS", NULL)) != NULL) {
		if (strcmp(o.faas, "stdio") == 0)
			faas = STDIO;
		else if (strcmp(o.faas, "http") == 0)
			faas = HTTP;
		else if (strcmp(o.faas, "lambda") == 0)
			faas = LAMBDA;
		else
			die(SPIRT_EX_USAGE, "-F %s: not stdio, http or lambda",
			    o.faas);
	}
	if (argc > (faas == STDIO))
		usage(1);
	job.model = opt_env(o.model, "SPIRT_MODEL", NULL);
	step = opt_env(o.step, "SPIRT_STEP", NULL);
	// under -F, the request may name the model and step
	if (o.params == NULL && !faas && (job.model == NULL || (step == NULL &&
	    !o.serve)))
		usage(1);
	if (o.params == NULL && job.model != NULL)
		echeck_model("-m", job.model);
	if (faas && o.serve)
		die(SPIRT_EX_USAGE, "-F and --serve: -F %s serves invocations "
		    "itself", o.faas);
	if (faas && o.out != NULL && strcmp(o.out, "-") != 0)
		die(SPIRT_EX_USAGE, "-o %s and -F: the answer is the record "
		    "(-o -) or the store key written", o.out);
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
	store = o.store ? o.store : store_default();
	if (o.out && strcmp(o.out, "-") == 0 && !o.force && isterm(1) &&
	    faas != HTTP && faas != LAMBDA)
		die(SPIRT_EX_USAGE, "stdout is a terminal: use -f to write "
		    "binary data there");
	if (faas == LAMBDA) {
		if ((lambda.api = getenv("AWS_LAMBDA_RUNTIME_API")) == NULL ||
		    *lambda.api == '\0')
			die(SPIRT_EX_USAGE, "-F lambda: AWS_LAMBDA_RUNTIME_API "
			    "is not set");
		if ((rc = spirt_faas_lambda_setup()) != 0)
			die(spirt_exit(rc), "-F lambda: %s",
			    spirt_faas_lambda_error());
	}
	if (faas == STDIO) {
		// nothing on standard error unless the invocation fails,
		// not even a library's words: the watchdog would mix them
		// into the answer
		spirt_quiet = 1;
		spirt_verbose = 0;
		if ((nul = open("/dev/null", O_WRONLY)) < 0 ||
		    (stderr_fd = dup(STDERR_FILENO)) < 0 ||
		    dup2(nul, STDERR_FILENO) < 0)
			die_init(errno, "/dev/null");
		close(nul);
	}

	blas_setup(o.threads);
	if ((rc = spirt_grad_ctx_new(&c, 0)) != 0)
		die_init(rc, "context");
	if (o.params && (rc = spirt_grad_model_file(c, o.params, &fstep)))
		die_init(rc, "%s", *spirt_grad_where(c) ?
		    spirt_grad_where(c) : o.params);
	if (o.params && step == NULL)
		job.step = fstep;       // else a differing -t fails with 65
	if (o.data && (rc = spirt_grad_data_file(c, o.data)) != 0)
		die_init(rc, "%s", *spirt_grad_where(c) ?
		    spirt_grad_where(c) : o.data);

	if ((o.params == NULL || o.data == NULL) &&
	    (rc = spirt_store_open(&s, store, o.out ? SPIRT_STORE_RDONLY :
	    0)) != 0)
		die_init(rc, "%s", store);

	f.c = c;
	f.s = s;
	f.job = job;
	f.has_step = step != NULL || o.params != NULL;
	if (o.serve) {
		code = serve(c, s, &job);
	} else if (faas == STDIO) {
		code = faas_stdio(&f, argc ? argv[0] : NULL, !(o.params &&
		    strcmp(o.params, "-") == 0) && !(o.data &&
		    strcmp(o.data, "-") == 0));
	} else if (faas == HTTP) {
		code = faas_http(&f);
	} else if (faas == LAMBDA) {
		code = faas_lambda(&f);
	} else {
		if ((rc = invoke(c, s, &job, &hdr, msg, sizeof msg, NULL,
		    NULL)))
			warnx_("%s", msg);
		code = spirt_exit(rc);
	}

	spirt_store_close(s);
	spirt_grad_ctx_free(c);
	return fshut_stdout(code);
}
