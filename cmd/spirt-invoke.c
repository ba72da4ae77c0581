/* spirt-invoke.c - a gradient function that calls one behind a FaaS gateway */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "invoke.h"
#include "io.h"
#include "keys.h"
#include "opt.h"
#include "serve.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

/* the record's framing beyond its values: header, name, trailer */
#define RECORD_SLACK 1024

static struct spirt_invoke v;
static struct spirt_store *s;
static const char *model;

static const struct opt opts[] = {
	{ 'a', "as", "C", "the gateway's contract: http (default) or lambda" },
	{ 'b', "batch", "N",
	    "taken, for spirt-train; the function's deployment has it" },
	{ 'D', "deadline", "MS",
	    "each invocation, its retries included (default 30000)" },
	{ 'i', "serve", NULL, "warm: read \"step [worker]\" lines on stdin" },
	{ 'm', "model", "NAME", "model name (key model/NAME@step)" },
	{ 'r', "retries", "N",
	    "more attempts where no answer came (default 2)" },
	{ 'S', "seed", "N", "taken, as -b" },
	OPT_STORE,
	{ 'T', "token-file", "F", "a bearer token for the gateway" },
	{ 't', "step", "N", "model step" },
	{ 'w', "worker", "N", "worker id (default 0)" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "say each invocation, with timings" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-invoke [-iqVv] [-a contract] [-b batch] [-D ms] "
	"[-m model]\n"
	"       [-r retries] [-S seed] [-s store] [-T file] [-t step] "
	"[-w worker]\n"
	"       url\n",
	NULL, NULL, 21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

struct put {
	const char *key;
	const void *rec;
	size_t len;
};

static int
put_fn(struct spirt_txn *txn, void *arg)
{
	struct put *p = arg;

	return spirt_store_put(txn, p->key, p->rec, p->len, 0);
}

/* The model's header at step (name: spec, nelem: P); 0 or a lib code. */
static int
model_at(struct spirt_tensor *m, uint64_t step, char *msg, size_t cap)
{
	struct spirt_txn *txn;
	const void *payload;
	char key[SPIRT_KEY_MAX + 1];
	int rc;

	if ((rc = spirt_key_model(key, sizeof key, model, step)) != 0)
		return spirt_msgrc(msg, cap, rc, "model %s", model);
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) != 0)
		return spirt_msgf(msg, cap, rc, "%s: %s",
		    spirt_store_location(s), errcause(rc));
	rc = spirt_store_get_tensor(txn, key, m, &payload, 0);
	spirt_txn_abort(txn);
	if (rc != 0)
		return spirt_msgf(msg, cap, rc, "%s: %s", key, errcause(rc));
	return 0;
}

/* The record the function says it wrote, in the store, checked. */
static int
stored(struct spirt_tensor *t, const char *key, uint64_t step,
    uint32_t worker, const struct spirt_tensor *m, char *msg, size_t cap)
{
	struct spirt_txn *txn;
	const void *val;
	size_t len;
	int rc;

	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)) != 0)
		return spirt_msgf(msg, cap, rc, "%s: %s",
		    spirt_store_location(s), errcause(rc));
	if ((rc = spirt_store_get(txn, key, &val, &len)) == 0)
		rc = spirt_invoke_check(t, val, len, step, worker, m, msg, cap);
	else
		rc = spirt_msgf(msg, cap, SPIRT_EDATA, "it answered that it "
		    "wrote %s, but the store has no such record", key);
	spirt_txn_abort(txn);
	return rc;
}

/*
 * One invocation of (step, worker): the gateway called, its answer
 * checked, the record written.  Returns the exit code; *t the record's
 * header on success.  fatal: set when no answer came at all.
 */
static int
one(uint64_t step, uint32_t worker, struct spirt_tensor *t, int *fatal)
{
	struct spirt_invoke_ans a;
	struct spirt_tensor m;
	struct put p;
	char key[SPIRT_KEY_MAX + 1], msg[400];
	double t0 = spirt_clock();
	int rc;

	*fatal = 0;
	if ((rc = spirt_key_grad(key, sizeof key, step, worker)) != 0) {
		warnrc(rc, "step %" PRIu64 " worker %" PRIu32, step, worker);
		return spirt_exit(rc);
	}
	if ((rc = model_at(&m, step, msg, sizeof msg)) != 0) {
		warnx_("%s", msg);
		return spirt_exit(rc);
	}
	v.max = (size_t)m.nelem * 4 + RECORD_SLACK;
	if ((rc = spirt_invoke_call(&v, &a, step, worker, model)) != 0) {
		warnx_("%s: %s: %s", v.url, key, v.msg);
		*fatal = rc == SPIRT_ETIMEDOUT || rc == SPIRT_EUNREACH ||
		    rc == SPIRT_EBUSY || rc == ENOMEM;
		return spirt_exit(rc);
	}
	if (a.code != 0) {
		warnx_("%s: %s: the function failed (%d): %s", v.url, key,
		    a.code, a.msg);
		rc = a.code;
		goto out;
	}
	if (a.rec != NULL) {
		rc = spirt_invoke_check(t, a.rec, a.len, step, worker, &m, msg,
		    sizeof msg);
	} else if (a.step != step || a.worker != worker ||
	    strcmp(a.key, key) != 0) {
		rc = spirt_msgf(msg, sizeof msg, SPIRT_EADDR, "it answered for "
		    "step %" PRIu64 " worker %" PRIu32 " (%s)", a.step,
		    a.worker, a.key);
	} else {
		rc = stored(t, key, step, worker, &m, msg, sizeof msg);
	}
	if (rc != 0) {
		warnx_("%s: %s: refused: %s", v.url, key, msg);
		rc = spirt_exit(rc);
		goto out;
	}
	if (a.rec != NULL) {
		p.key = key;
		p.rec = a.rec;
		p.len = a.len;
		if ((rc = spirt_store_write(s, put_fn, &p)) != 0) {
			warnrc(rc, "%s: %s", spirt_store_location(s), key);
			rc = spirt_exit(rc);
			goto out;
		}
	}
	if (spirt_verbose)
		info("%s: %s: %" PRIu64 " samples, loss %.6g, %u attempt%s, "
		    "%.3f ms", v.url, key, t->samples, t->loss, v.attempts,
		    v.attempts == 1 ? "" : "s", 1e3 * (spirt_clock() - t0));
out:
	spirt_invoke_ans_clear(&a);
	return rc;
}

static int
serve_one(void *arg, const struct spirt_serve_req *req, char *ans,
    size_t cap)
{
	struct spirt_tensor t;
	int code, fatal;

	(void)arg;
	code = one(req->step, req->worker, &t, &fatal);
	if (fatal) {
		// no answer at all: this function is gone, as a warm
		// process that ends (spirt-function(7)), not a failed step
		spirt_store_close(s);
		exit(fshut_stdout(code));
	}
	if (code != 0)
		snprintf(ans, cap, "step=%" PRIu64 " worker=%" PRIu32
		    " error=%d", req->step, req->worker, code);
	else
		snprintf(ans, cap, "step=%" PRIu64 " worker=%" PRIu32
		    " samples=%" PRIu64 " loss=%.9g", req->step, req->worker,
		    t.samples, t.loss);
	return code;
}

/* A token from file (its first line), else $SPIRT_INVOKE_TOKEN. */
static char *
token(const char *file)
{
	const char *env = getenv("SPIRT_INVOKE_TOKEN");
	void *buf;
	char *p;
	size_t n;
	int rc;

	if (file == NULL)
		return env != NULL && *env != '\0' ? strdup(env) : NULL;
	if ((rc = spirt_readfile(file, &buf, &n)) != 0)
		dierc(rc, "-T %s", file);
	p = buf;
	if ((p = realloc(p, n + 1)) == NULL)
		die(SPIRT_EX_OSERR, "-T %s: out of memory", file);
	p[n] = '\0';
	p[strcspn(p, "\r\n")] = '\0';
	if (*p == '\0' || strlen(p) != strcspn(p, "\r\n"))
		die(SPIRT_EX_USAGE, "-T %s: no token on its first line", file);
	return p;
}

int
main(int argc, char **argv)
{
	struct spirt_serve sv = {
		.name = "stdin", .maxstep = UINT64_MAX - 1, .workers = 1,
		.maxworker = UINT32_MAX - 1, .run = serve_one, .warn = warnx_,
	};
	struct spirt_tensor t;
	const char *as = "http", *batch = NULL, *deadline = NULL, *seed = NULL;
	const char *store = NULL, *step, *tokfile = NULL, *retries = "2";
	const char *worker = NULL, *stepopt = NULL;
	char *tok;
	uint64_t st = 0;
	uint32_t w;
	int ch, rc, code, serve = 0, fatal;

	progname = "spirt-invoke";
	checkfds();
	parent_watch();
	store_env();

	while ((ch = opt_next(&cli, argc, argv)) != -1)
		switch (ch) {
		case 'a': as = optarg; break;
		case 'b': batch = optarg; break;
		case 'D': deadline = optarg; break;
		case 'i': serve = 1; break;
		case 'm': model = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'r': retries = optarg; break;
		case 'S': seed = optarg; break;
		case 's': store = optarg; break;
		case 'T': tokfile = optarg; break;
		case 't': stepopt = optarg; break;
		case 'V': print_version();
		case 'v': spirt_verbose++; break;
		case 'w': worker = optarg; break;
		default: usage(1);
		}
	argc -= optind;
	argv += optind;
	if (argc != 1)
		usage(1);
	model = opt_env(model, "SPIRT_MODEL", NULL);
	step = opt_env(stepopt, "SPIRT_STEP", NULL);
	if (model == NULL || (step == NULL && !serve))
		usage(1);
	echeck_model("-m", model);
	if (strcmp(as, "http") == 0)
		v.as = SPIRT_INVOKE_HTTP;
	else if (strcmp(as, "lambda") == 0)
		v.as = SPIRT_INVOKE_LAMBDA;
	else
		die(SPIRT_EX_USAGE, "-a %s: not http or lambda", as);
	if (step != NULL)
		st = eparse_u64("-t", step, 0, UINT64_MAX - 1);
	w = (uint32_t)eparse_u64("-w", opt_env(worker, "SPIRT_WORKER", "0"), 0,
	    UINT32_MAX - 1);
	// the function's deployment has its batch and seed; taken, and
	// checked, so that spirt-train's command line is refused nowhere
	(void)eparse_u64("-b", opt_env(batch, "SPIRT_BATCH", "64"), 1, 1 << 20);
	(void)eparse_u64("-S", opt_env(seed, "SPIRT_SEED", "0"), 0,
	    UINT64_MAX);
	v.deadline_ms = (unsigned)eparse_u64("-D", opt_env(deadline,
	    "SPIRT_DEADLINE", "30000"), 1, 86400000);
	v.retries = (unsigned)eparse_u64("-r", retries, 0, 100);
	v.url = argv[0];
	tok = token(tokfile);
	v.token = tok;
	store = store ? store : store_default();

	if ((rc = spirt_invoke_setup()) != 0)
		die(spirt_exit(rc), "%s", spirt_invoke_error());
	if ((rc = spirt_invoke_open(&v)) != 0)
		die(spirt_exit(rc), "%s: %s", v.url, v.msg[0] ? v.msg :
		    spirt_strerror(rc));
	if ((rc = spirt_store_open(&s, store, 0)) != 0)
		dierc(rc, "%s", store);

	if (serve) {
		sv.worker0 = w;
		serve_setup();
		if ((rc = spirt_serve_loop(&sv, stdin, stdout)) != 0) {
			warnrc(rc, "%s", ferror(stdin) ? "stdin" : "stdout");
			code = SPIRT_EX_IOERR;
		} else {
			code = sv.worst;
		}
	} else {
		code = one(st, w, &t, &fatal);
	}

	spirt_invoke_close(&v);
	spirt_store_close(s);
	free(tok);
	return fshut_stdout(code);
}
