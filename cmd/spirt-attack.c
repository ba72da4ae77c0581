/* spirt-attack.c - replace gradients by Byzantine ones (evaluation only) */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggstore.h"
#include "attack.h"
#include "io.h"
#include "keys.h"
#include "opt.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

static struct {
	struct spirt_aggset g;          /* the step's gradients */
	struct spirt_attack a;
	const char *out, *store, *spec;
	const char *agg;                /* -a: a peer's aggregate prefix */
	struct spirt_tensor ah;         /* -a -o: the crafted record */
	float *abuf;
	uint32_t *origins;              /* -w: the malicious functions */
	size_t norigins;
	int force;
	unsigned char mal[SPIRT_AGG_MAXW];
	char msg[SPIRT_KEY_MAX + 160];
} o;

static const struct opt opts[] = {
	{ 'a', "agg", "PREFIX",
	    "a Byzantine peer: attack its aggregate PREFIX/<t>\n"
	    "(e.g. agg) in place or to -o; alie takes the\n"
	    "spread of grad/<t>/*, default z 1" },
	{ 'f', "force", NULL, "write binary data to a terminal" },
	{ 'o', "output", "FILE", "write the records to FILE (- = stdout)" },
	{ 'S', "seed", "N", "seed of the gauss noise (default 0)" },
	OPT_STORE,
	{ 't', "step", "N", "attack grad/N/* in the store" },
	{ 'w', "origins", "LIST",
	    "malicious origins, e.g. 1,3 (default: all)" },
	OPT_QUIET,
	{ 'v', "verbose", NULL, "name each replaced gradient" },
	OPT_HELP,
	OPT_VERSION,
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-attack [-fqv] [-o file] [-S seed] [-w origins] attack\n"
	"                    [file ...]\n"
	"       spirt-attack [-qv] [-S seed] [-s store] -t step -w origins "
	"attack\n"
	"       spirt-attack [-qv] [-o file] [-S seed] [-s store] -t step "
	"-a prefix\n"
	"                    attack\n",
	"For evaluating robust aggregation only: writes the gradients "
	"malicious\n"
	"functions would send.  Attacks (spirt-attack(1)):\n"
	"  signflip[:S]  -S * g (default S 10)\n"
	"  gauss[:SIGMA] N(0, SIGMA^2) noise (default 100)\n"
	"  scale:S       S * g\n"
	"  alie[:z]      mean - z * std of the step's gradients (default z\n"
	"                from W and the malicious count)\n"
	"  ipm[:EPS]     -EPS * mean of the step's gradients (default 0.1)\n"
	"\n", NULL, 21, 0, opts, NULL
};

static _Noreturn void
usage(int code)
{
	opt_usage(&cli, code);
}

/* -w LIST: comma-separated distinct origins */
static void
parse_origins(char *s)
{
	char *p = s, *q;

	o.origins = emalloc((strlen(s) / 2 + 1) * sizeof *o.origins);
	for (;;) {
		if ((q = strchr(p, ',')) != NULL)
			*q = '\0';
		o.origins[o.norigins] = (uint32_t)eparse_u64("-w", p, 0,
		    SPIRT_NOORIGIN - 1);
		for (size_t k = 0; k < o.norigins; k++)
			if (o.origins[k] == o.origins[o.norigins])
				die(SPIRT_EX_USAGE, "-w: origin %s twice", p);
		o.norigins++;
		if (q == NULL)
			break;
		p = q + 1;
	}
}

/* Mark the malicious inputs; every origin of -w must be among them. */
static int
mark(void)
{
	struct spirt_aggset *g = &o.g;

	for (size_t i = 0; i < g->w; i++)
		o.mal[i] = o.norigins == 0;
	for (size_t k = 0; k < o.norigins; k++) {
		size_t i;

		for (i = 0; i < g->w; i++)
			if (g->in[i].t.origin == o.origins[k])
				break;
		if (i == g->w)
			return spirt_msgf(o.msg, sizeof o.msg, SPIRT_ENOTFOUND,
			    "-w: no gradient from origin %u among the %zu "
			    "inputs", (unsigned)o.origins[k], g->w);
		o.mal[i] = 1;
	}
	return 0;
}

/* The attack on the gathered set: out[i] for each malicious i. */
static int
attack(float **out)
{
	struct spirt_aggset *g = &o.g;
	const float *x[SPIRT_AGG_MAXW];
	uint32_t origin[SPIRT_AGG_MAXW];
	int rc;

	if ((rc = spirt_aggset_check(g)) || (rc = mark()))
		return rc;
	for (size_t i = 0; i < g->w; i++) {
		x[i] = g->in[i].x;
		origin[i] = g->in[i].t.origin;
	}
	rc = spirt_attack_apply(out, x, o.mal, origin, g->in[0].t.step, g->w,
	    g->in[0].t.nelem, &o.a);
	if (rc == SPIRT_EINVAL)
		return spirt_msgf(o.msg, sizeof o.msg, SPIRT_EINVAL, "%s: no z"
		    " for %zu gradients of which %zu malicious (needs "
		    "floor(W/2 + 1) - f >= 1): give alie:z", o.spec, g->w,
		    o.norigins ? o.norigins : g->w);
	for (size_t i = 0; i < g->w && spirt_verbose; i++)
		if (o.mal[i])
			info("%s: replaced (%s)", g->in[i].name, o.spec);
	return 0;
}

/*
 * Input i's attacked values v back in the store: grad/<t>/<w>; of a model
 * with state (spirt-model(5)) the set carries state/<t>/<w> after the
 * gradient (lib/aggstore.c with_state()), and a malicious function sends
 * both: each goes back under its own header.
 */
static int
putback(struct spirt_txn *txn, size_t i, const float *v)
{
	struct spirt_aggset *g = &o.g;
	struct spirt_key_parts k;
	struct spirt_tensor gt, st;
	char skey[SPIRT_KEY_MAX + 1];
	const char *key = g->in[i].name;
	const void *pl;
	int rc;

	if ((rc = spirt_store_get_tensor(txn, key, &gt, &pl, 0)))
		return spirt_msgrc(o.msg, sizeof o.msg, rc, "%s", key);
	if (gt.nelem == g->in[i].t.nelem)
		return spirt_store_put_tensor(txn, key, &g->in[i].t, v, 0);
	if ((rc = spirt_key_parse(&k, key)) ||
	    (rc = spirt_key_state(skey, sizeof skey, k.step, k.worker)))
		return spirt_msgrc(o.msg, sizeof o.msg, rc, "%s", key);
	if ((rc = spirt_store_get_tensor(txn, skey, &st, &pl, 0)))
		return spirt_msgrc(o.msg, sizeof o.msg, rc, "%s", skey);
	if (gt.nelem + st.nelem != g->in[i].t.nelem)
		return spirt_msgf(o.msg, sizeof o.msg, SPIRT_ESHAPE,
		    "%s: %llu values and %s %llu, not %llu", key,
		    (unsigned long long)gt.nelem, skey,
		    (unsigned long long)st.nelem,
		    (unsigned long long)g->in[i].t.nelem);
	if ((rc = spirt_store_put_tensor(txn, key, &gt, v, 0)))
		return rc;
	return spirt_store_put_tensor(txn, skey, &st, v + gt.nelem, 0);
}

/* Store mode: replace grad/<t>/<w> of the malicious w (and their
 * state/<t>/<w>), in one txn. */
static int
instore(struct spirt_txn *txn, void *arg)
{
	struct spirt_aggset *g = &o.g;
	float *out[SPIRT_AGG_MAXW] = { NULL }, *buf = NULL;
	size_t n, f = 0, k = 0;
	int rc;

	(void)arg;
	spirt_aggset_reset(g);
	o.msg[0] = '\0';
	if ((rc = spirt_aggset_add_step(g, txn, g->step)) ||
	    (rc = spirt_aggset_check(g)) || (rc = mark()))
		return rc;
	n = g->in[0].t.nelem;
	for (size_t i = 0; i < g->w; i++)
		f += o.mal[i];
	if ((buf = malloc(f * n * sizeof *buf + 1)) == NULL)
		return ENOMEM;
	for (size_t i = 0; i < g->w; i++)
		if (o.mal[i])
			out[i] = buf + n * k++;
	// every input is read before the first value is written
	if ((rc = attack(out)) == 0)
		for (size_t i = 0; i < g->w && rc == 0; i++)
			if (o.mal[i])
				rc = putback(txn, i, out[i]);
	free(buf);
	return rc;
}

/*
 * Aggregate mode (-a): a Byzantine peer's PREFIX/<t> replaced by the
 * crafted one (arg not NULL: in place) or kept in o.ah, o.abuf for -o.
 */
static int
aggattack(struct spirt_txn *txn, void *arg)
{
	struct spirt_aggset *g = &o.g;
	const float *x[SPIRT_AGG_MAXW], *y;
	char key[SPIRT_KEY_MAX + 1];
	const void *pl;
	size_t n;
	int rc;

	spirt_aggset_reset(g);
	o.msg[0] = '\0';
	free(o.abuf);
	o.abuf = NULL;
	if ((rc = spirt_key_aggroot(key, sizeof key, o.agg, g->step)))
		return rc;
	if ((rc = spirt_store_get_tensor(txn, key, &o.ah, &pl, 0)))
		return spirt_msgrc(o.msg, sizeof o.msg, rc, "%s", key);
	if (o.ah.dtype != SPIRT_F32)
		return spirt_msgf(o.msg, sizeof o.msg, SPIRT_EDTYPE, "%s: "
		    "dtype %s, not f32", key, spirt_dtype_name(o.ah.dtype));
	n = o.ah.nelem;
	if (o.a.kind == SPIRT_ATTACK_ALIE) {
		if ((rc = spirt_aggset_add_step(g, txn, g->step)) ||
		    (rc = spirt_aggset_check(g)))
			return rc;
		if (g->in[0].t.nelem != n)
			return spirt_msgf(o.msg, sizeof o.msg, SPIRT_ESHAPE,
			    "%s: %zu values, %s has %llu: not its gradients",
			    key, n, g->in[0].name,
			    (unsigned long long)g->in[0].t.nelem);
		for (size_t i = 0; i < g->w; i++)
			x[i] = g->in[i].x;
	}
	/* two halves: the aggregate (aligned) and the crafted one */
	if ((o.abuf = malloc(2 * n * sizeof *o.abuf + 1)) == NULL)
		return ENOMEM;
	memcpy(o.abuf + n, pl, n * sizeof *o.abuf);
	y = o.abuf + n;
	rc = spirt_attack_aggregate(o.abuf, y, x, g->w, n, g->step, &o.a);
	if (rc == SPIRT_EINVAL)
		return spirt_msgf(o.msg, sizeof o.msg, SPIRT_EINVAL, "%s: alie "
		    "on an aggregate needs the spread of at least 2 of the "
		    "step's gradients, not %zu", key, g->w);
	if (rc == 0 && spirt_verbose)
		info("%s: replaced (%s)", key, o.spec);
	if (rc == 0 && arg)
		rc = spirt_store_put_tensor(txn, key, &o.ah, o.abuf, 0);
	return rc;
}

/* File mode: every record, in order, the malicious ones replaced. */
static int
emit(int fd)
{
	struct spirt_aggset *g = &o.g;
	int rc = 0;

	for (size_t i = 0; i < g->w && rc == 0; i++)
		rc = spirt_tensor_write(fd, &g->in[i].t, g->in[i].x);
	return rc;
}

int
main(int argc, char **argv)
{
	struct spirt_store *s = NULL;
	struct spirt_publish pub;
	float *out[SPIRT_AGG_MAXW];
	const char *act = "read", *seed = NULL;
	int c, rc = 0;

	progname = "spirt-attack";
	checkfds();
	parent_watch();
	store_env();
	spirt_aggset_init(&o.g);
	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'a': o.agg = optarg; break;
		case 'f': o.force = 1; break;
		case 'o': o.out = optarg; break;
		case 'q': spirt_quiet = 1; break;
		case 'S': seed = optarg; break;
		case 's': o.store = optarg; break;
		case 't': o.g.step = eparse_u64("-t", optarg, 0,
			    SPIRT_NOSTEP - 1); break;
		case 'V': print_version();
		case 'v': spirt_verbose++; break;
		case 'w': parse_origins(optarg); break;
		default: usage(1);
		}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(1);
	o.spec = argv[0];
	if (spirt_attack_parse(&o.a, o.spec)) {
		warnx_("unknown or malformed attack \"%s\"", o.spec);
		usage(1);
	}
	o.a.seed = eparse_u64("-S", seed ? seed : "0", 0, UINT64_MAX);
	argc--;
	argv++;
	if (o.agg) {
		if (o.g.step == SPIRT_NOSTEP || argc || o.norigins) {
			warnx_("-a attacks a peer's aggregate of step -t in the "
			    "store: no files, no -w");
			usage(1);
		}
		if (spirt_name_check(o.agg) != 0) {
			warnx_("-a: invalid key prefix \"%s\" (a name: letters, "
			    "digits, . _ -)", o.agg);
			usage(1);
		}
	} else if (o.g.step != SPIRT_NOSTEP) {
		if (argc || o.out || o.force) {
			warnx_("-t attacks the store in place: no files, no "
			    "-o");
			usage(1);
		}
		if (o.norigins == 0) {
			warnx_("-t needs -w: which functions are malicious");
			usage(1);
		}
	}
	if (o.agg) {
		act = o.store ? o.store : store_default();
		if ((rc = spirt_store_open(&s, act, o.out ? SPIRT_STORE_RDONLY :
		    0)))
			goto fail;
		act = o.out ? "read store" : "write store";
		if (o.out) {
			struct spirt_txn *txn;

			if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY))
			    == 0) {
				rc = aggattack(txn, NULL);
				spirt_txn_abort(txn);
			}
		} else {
			rc = spirt_store_write(s, aggattack, &o);
		}
		spirt_store_close(s);
		if (rc)
			goto fail;
		if (o.out && strcmp(o.out, "-") == 0) {
			act = "stdout";
			if (!o.force && isterm(1))
				die(SPIRT_EX_USAGE, "stdout is a terminal (use "
				    "-f or -o)");
			if ((rc = spirt_tensor_write(1, &o.ah, o.abuf)))
				goto fail;
		} else if (o.out) {
			act = o.out;
			if ((rc = spirt_publish_open(&pub, o.out, 0644)))
				goto fail;
			if ((rc = spirt_tensor_write(pub.fd, &o.ah, o.abuf)) ||
			    (rc = spirt_publish_commit(&pub))) {
				spirt_publish_abort(&pub);
				goto fail;
			}
		}
		goto done;
	}
	if (!o.out)
		o.out = "-";

	if (o.g.step != SPIRT_NOSTEP) {
		act = o.store ? o.store : store_default();
		if ((rc = spirt_store_open(&s, act, 0)))
			goto fail;
		act = "write store";
		rc = spirt_store_write(s, instore, NULL);
		spirt_store_close(s);
		if (rc)
			goto fail;
		goto done;
	}
	if (strcmp(o.out, "-") == 0 && !o.force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal (use -f or -o)");
	for (int i = 0; i < (argc ? argc : 1); i++)
		if ((rc = spirt_aggset_add_file(&o.g, argc ? argv[i] : "-")))
			goto fail;
	for (size_t i = 0; i < o.g.w; i++)
		out[i] = o.g.in[i].own;         // a stream's: ours to change
	if ((rc = attack(out)))
		goto fail;
	if (strcmp(o.out, "-") == 0) {
		act = "stdout";
		if ((rc = emit(1)))
			goto fail;
	} else {
		act = o.out;
		if ((rc = spirt_publish_open(&pub, o.out, 0644)))
			goto fail;
		if ((rc = emit(pub.fd)) || (rc = spirt_publish_commit(&pub))) {
			spirt_publish_abort(&pub);
			goto fail;
		}
	}
	goto done;
fail:
	if (o.msg[0])
		warnx_("%s", o.msg);
	else if (o.g.msg[0])
		warnx_("%s", o.g.msg);
	else if (rc != EPIPE)
		warnrc(rc, "%s", act);
done:
	spirt_aggset_reset(&o.g);
	free(o.origins);
	free(o.abuf);
	return fshut_stdout(spirt_exit(rc));
}
