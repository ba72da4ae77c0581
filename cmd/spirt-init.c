/* spirt-init.c - write a freshly initialised model as step 0 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "keys.h"
#include "model.h"
#include "opt.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

static const struct opt opts[] = {
	{ 0, NULL, "spec", "e.g. mlp:784-256-128-10, see spirt-model(5)" },
	{ 'f', "force", NULL, "write binary data to a terminal" },
	{ 'm', "model", "NAME", "model name (key model/NAME@0)" },
	{ 'o', "output", "FILE", "write the record to FILE (- stdout)" },
	{ 'S', "seed", "N", "initialisation seed (default 0)" },
	OPT_STORE,
	{ OPT_LONG('p'), "spec-of", "NAME",
	    "print the spec and default lr of spirt-train's -m NAME" },
	{ 't', "step", "N", "step of the version (default 0)" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "describe the model" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-init [-fqVv] [-m model] [-o file] [-S seed] [-s store] "
	"[-t step]\n"
	"       spec\n"
	"       spirt-init --spec-of name\n",
	NULL, NULL, 21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

/* --spec-of: "SPEC LR" of a model spirt-train names, or 64 */
static _Noreturn void
spec_of(const char *name)
{
	const struct spirt_preset *p = spirt_model_preset(name);
	char names[256];
	size_t i, n = 0;

	if (p != NULL) {
		printf("%s %s\n", p->spec, p->lr);
		exit(fshut_stdout(0));
	}
	names[0] = '\0';
	for (i = 0; (p = spirt_model_preset_at(i)) != NULL &&
	    n < sizeof names; i++)
		n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
		    i ? ", " : "", p->name);
	die(SPIRT_EX_USAGE, "--spec-of %s: not a model spirt-train names "
	    "(%s)", name, names);
}

struct put {
	const char *key;
	struct spirt_tensor *hdr;
	const float *params;
	const char *skey;       /* a fresh state beside it, if the model has */
	struct spirt_tensor shdr;
	const float *state;
};

static int
put_fn(struct spirt_txn *txn, void *arg)
{
	struct put *p = arg;
	int rc;

	if ((rc = spirt_store_put_tensor(txn, p->key, p->hdr, p->params,
	    SPIRT_PUT_NOOVERWRITE)) != 0)
		return rc;
	return p->state == NULL ? 0 : spirt_store_put_tensor(txn, p->skey,
	    &p->shdr, p->state, SPIRT_PUT_NOOVERWRITE);
}

int
main(int argc, char **argv)
{
	struct spirt_model m;
	struct spirt_tensor hdr;
	struct spirt_store *s;
	struct spirt_publish pub;
	struct put p;
	const char *model = NULL, *out = NULL, *seed = NULL, *store = NULL;
	const char *act, *step = NULL, *specof = NULL;
	char key[SPIRT_KEY_MAX + 1], skey[SPIRT_KEY_MAX + 1];
	uint64_t dims[1], t = 0;
	float *params, *state = NULL;
	int ch, rc, force = 0, i;

	progname = "spirt-init";
	checkfds();
	parent_watch();
	store_env();

	while ((ch = opt_next(&cli, argc, argv)) != -1)
		switch (ch) {
		case 'f': force = 1; break;
		case 'm': model = optarg; break;
		case 'p': specof = optarg; break;     // --spec-of
		case 'o': out = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'S': seed = optarg; break;
		case 's': store = optarg; break;
		case 't': step = optarg; break;
		case 'V': print_version();
		case 'v': spirt_verbose++; break;
		default: usage(1);
		}
	argc -= optind;
	argv += optind;
	if (specof != NULL) {
		if (argc != 0 || model || out || seed || store || step || force)
			usage(1);
		spec_of(specof);
	}
	if (argc != 1)
		usage(1);
	model = opt_env(model, "SPIRT_MODEL", NULL);
	if (model == NULL && out == NULL)
		usage(1);
	if ((rc = spirt_model_parse(&m, argv[0])) != 0)
		die(SPIRT_EX_USAGE, "%s: %s (see spirt-model(5))", argv[0],
		    spirt_strerror(rc));
	if (step != NULL)
		t = eparse_u64("-t", step, 0, UINT64_MAX - 1);
	if (model != NULL)
		echeck_model("-m", model);
	if (model != NULL &&
	    ((rc = spirt_key_model(key, sizeof key, model, t)) != 0 ||
	    (rc = spirt_key_mstate(skey, sizeof skey, model, t)) != 0))
		dierc(rc, "model/%s@%llu", model, (unsigned long long)t);
	if (out && strcmp(out, "-") == 0 && !force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal: use -f to write "
		    "binary data there");

	params = emalloc(m.nparams * sizeof *params);
	spirt_model_init(&m, params, eparse_u64("-S", opt_env(seed,
	    "SPIRT_SEED", "0"), 0, UINT64_MAX));
	dims[0] = m.nparams;
	if ((rc = spirt_tensor_init(&hdr, SPIRT_F32, 1, dims)) != 0 ||
	    (rc = spirt_tensor_set_name(&hdr, m.spec)) != 0)
		dierc(rc, "%s", m.spec);
	hdr.step = t;
	if (spirt_verbose) {
		info("%s: %zu parameters", m.spec, m.nparams);
		for (i = 0; i < m.nlayers; i++)
			info("  %s: weight at %zu (%zu), bias at %zu (%zu)",
			    m.layer[i].name, m.layer[i].woff, m.layer[i].wlen,
			    m.layer[i].boff, m.layer[i].blen);
		for (i = 0; i < m.nnodes; i++)
			if (m.node[i].wlen != 0)
				info("  layer %d: %zux%zux%zu -> %zux%zux%zu, "
				    "weight at %zu (%zu), bias at %zu (%zu)",
				    i + 1, m.node[i].C, m.node[i].H,
				    m.node[i].W, m.node[i].OC, m.node[i].OH,
				    m.node[i].OW, m.node[i].woff,
				    m.node[i].wlen, m.node[i].boff,
				    m.node[i].blen);
		if (m.nstate != 0)
			info("  state: %zu values (batch normalisation's "
			    "running statistics)", m.nstate);
	}

	if (out != NULL) {
		act = out;
		if (strcmp(out, "-") == 0) {
			rc = spirt_tensor_write(STDOUT_FILENO, &hdr, params);
		} else if ((rc = spirt_publish_open(&pub, out, 0644)) == 0) {
			rc = spirt_tensor_write(pub.fd, &hdr, params);
			rc = rc ? (spirt_publish_abort(&pub), rc) :
			    spirt_publish_commit(&pub);
		}
	} else {
		store = store ? store : store_default();
		act = store;
		if ((rc = spirt_store_open(&s, store, SPIRT_STORE_CREATE)) ==
		    0) {
			act = key;
			p.key = key;
			p.hdr = &hdr;
			p.params = params;
			p.state = NULL;
			if (m.nstate != 0) {
				// model@t's state follows it (spirt-model(5))
				state = emalloc(m.nstate * sizeof *state);
				spirt_model_state_init(&m, state);
				dims[0] = m.nstate;
				if ((rc = spirt_tensor_init(&p.shdr, SPIRT_F32,
				    1, dims)) != 0 || (rc =
				    spirt_tensor_set_name(&p.shdr, m.spec)))
					dierc(rc, "%s", m.spec);
				p.shdr.step = t;
				p.skey = skey;
				p.state = state;
			}
			rc = spirt_store_write(s, put_fn, &p);
			spirt_store_close(s);
		}
	}
	if (rc != 0) {
		warnrc(rc, "%s", act);
		if (rc == SPIRT_EEXIST)
			info("hint: a model version is never overwritten; "
			    "pick another -m name");
	}
	free(params);
	free(state);
	return fshut_stdout(spirt_exit(rc));
}
