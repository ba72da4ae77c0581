/* spirt-store.c - list, show, get, put, delete, export, import tensors */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "npy.h"
#include "store.h"
#include "tensor.h"
#include "tool.h"

#define USAGE \
"usage: spirt-store [-s store] ls [prefix]\n" \
"       spirt-store [-s store] show key ...\n" \
"       spirt-store [-s store] get [-f] key\n" \
"       spirt-store [-s store] put [-n] key [file]\n" \
"       spirt-store [-s store] rm key ...\n" \
"       spirt-store [-s store] export [-f] key [file.npy]\n" \
"       spirt-store [-s store] import [-n] [-t step] key file.npy\n" \
"       spirt-store [-s store] stat\n" \
"       spirt-store inspect [file ...]\n"

static struct {
	const char *store;
	int force, noover;
	uint64_t step;
} o = { NULL, 0, 0, SPIRT_NOSTEP };

static _Noreturn void
usage(int code)
{
	fputs(USAGE, code ? stderr : stdout);
	if (!code)
		fputs("\n"
		    "  -f, --force        write binary data to a terminal\n"
		    "  -n, --no-overwrite fail if the key exists\n"
		    "  -s, --store PATH   store (default $SPIRT_STORE or "
		    "./spirt.db)\n"
		    "  -t, --step N       step to record on import\n"
		    "  -q, --quiet        no warnings\n"
		    "  -h, --help         this help\n"
		    "  -V, --version      print version\n", stdout);
	exit(code ? SPIRT_EX_USAGE : fshut_stdout(0));
}

static void
options(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "no-overwrite", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "step", required_argument, NULL, 't' },
		{ "store", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "+fhnqs:t:V", lo, NULL)) != -1)
		switch (c) {
		case 'f': o.force = 1; break;
		case 'h': usage(0);
		case 'n': o.noover = 1; break;
		case 'q': spirt_quiet = 1; break;
		case 's': o.store = optarg; break;
		case 't': o.step = eparse_u64("-t", optarg, 0, UINT64_MAX - 1);
			  break;
		case 'V': print_version();
		default: usage(1);
		}
}

static void
pshape(const struct spirt_tensor *t)
{
	if (!t->rank)
		fputs("scalar", stdout);
	for (unsigned i = 0; i < t->rank; i++)
		printf("%s%llu", i ? "x" : "", (unsigned long long)t->dims[i]);
}

static void
pu64(const char *k, uint64_t v, uint64_t unset)
{
	if (v == unset)
		printf("%s=-\n", k);
	else
		printf("%s=%llu\n", k, (unsigned long long)v);
}

/* key=value block: header and summary of one record */
static void
describe(const char *what, const struct spirt_tensor *t, const void *pl)
{
	struct spirt_tensor_stats st;

	spirt_tensor_stats(&st, t, pl);
	printf("%s\ndtype=%s\nshape=", what, spirt_dtype_name(t->dtype));
	pshape(t);
	printf("\nelements=%llu\nbytes=%llu\nname=%s\n",
	    (unsigned long long)t->nelem, (unsigned long long)t->nbytes,
	    t->name);
	pu64("step", t->step, SPIRT_NOSTEP);
	pu64("origin", t->origin, SPIRT_NOORIGIN);
	pu64("samples", t->samples, 0);
	pu64("count", t->count, 0);
	if (isnan(t->loss))
		puts("loss=-");
	else
		printf("loss=%.9g\n", t->loss);
	printf("min=%.9g\nmax=%.9g\nmean=%.9g\nl2=%.9g\nnan=%llu\ninf=%llu\n"
	    "checksum=ok\n\n", st.min, st.max, st.mean, st.l2,
	    (unsigned long long)st.nan, (unsigned long long)st.inf);
}

static int
ls_one(void *arg, const char *key, const void *val, size_t len)
{
	struct spirt_tensor t;
	const void *pl;
	int rc = spirt_tensor_decode(&t, &pl, val, len, 0);

	if (rc) {
		warnrc(rc, "%s", key);
		*(int *)arg = rc;
		return 0;
	}
	printf("%s\t%s\t", key, spirt_dtype_name(t.dtype));
	pshape(&t);
	printf("\t%llu\t", (unsigned long long)t.nbytes);
	if (t.step == SPIRT_NOSTEP)
		fputs("-\t", stdout);
	else
		printf("%llu\t", (unsigned long long)t.step);
	if (t.origin == SPIRT_NOORIGIN)
		puts("-");
	else
		printf("%lu\n", (unsigned long)t.origin);
	return 0;
}

/* records back to back in a file or on stdin */
static int
inspect(const char *path)
{
	struct spirt_tensor t;
	void *pl;
	char what[64];
	int fd = 0, rc;
	unsigned long n = 0;

	if (strcmp(path, "-") && (fd = open(path, O_RDONLY)) < 0) {
		warn_("open %s:", path);
		return errno;
	}
	while ((rc = spirt_tensor_read(fd, &t, &pl, 0)) == 0) {
		snprintf(what, sizeof what, "record=%lu", n++);
		describe(what, &t, pl);
		free(pl);
	}
	if (rc == SPIRT_EOF && n == 0)
		rc = SPIRT_ETRUNC;      /* an empty input holds no record */
	if (rc != SPIRT_EOF)
		warnrc(rc, "%s: record %lu", path, n);
	if (fd > 0)
		close(fd);
	return rc == SPIRT_EOF ? 0 : rc;
}

struct putarg {
	const char *key;
	struct spirt_tensor *t;
	const void *pl;
	unsigned flags;
	char **keys;            /* rm */
	int nkeys;
	const char *bad;
};

static int
put_txn(struct spirt_txn *txn, void *arg)
{
	struct putarg *a = arg;

	return spirt_store_put_tensor(txn, a->key, a->t, a->pl, a->flags);
}

static int
rm_txn(struct spirt_txn *txn, void *arg)
{
	struct putarg *a = arg;
	int rc;

	for (int i = 0; i < a->nkeys; i++)
		if ((rc = spirt_store_del(txn, a->keys[i]))) {
			a->bad = a->keys[i];
			return rc;
		}
	return 0;
}

static int
tofd(const char *path, int force, struct spirt_publish *pub)
{
	int rc;

	if (path && strcmp(path, "-")) {
		if ((rc = spirt_publish_open(pub, path, 0644)))
			dierc(rc == EEXIST ? EEXIST : EROFS, "create %s", path);
		return pub->fd;
	}
	if (!force && isterm(1))
		die(SPIRT_EX_USAGE, "stdout is a terminal; use -f to force");
	return 1;
}

int
main(int argc, char **argv)
{
	struct spirt_store *s = NULL;
	struct spirt_txn *txn = NULL;
	struct spirt_tensor t, t2;
	struct spirt_publish pub = { -1, NULL, NULL };
	struct putarg pa = { 0 };
	const char *cmd, *act = "", *key = NULL;
	const void *pl;
	void *buf = NULL, *extra = NULL;
	size_t len;
	char hdr[512];
	int rc = 0, err = 0, fd, wr;

	progname = "spirt-store";
	checkfds();

	options(argc, argv);
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(1);
	cmd = *argv;
	optind = 1;
	options(argc, argv);
	argc -= optind;
	argv += optind;
	o.store = opt_env(o.store, "SPIRT_STORE", "spirt.db");

	if (!strcmp(cmd, "inspect")) {
		if (argc == 0)
			err = inspect("-");
		for (int i = 0; i < argc; i++)
			if ((rc = inspect(argv[i])) && !err)
				err = rc;
		return fshut_stdout(spirt_exit(err));
	}
	wr = !strcmp(cmd, "put") || !strcmp(cmd, "rm") ||
	    !strcmp(cmd, "import");
	if (!wr && strcmp(cmd, "ls") && strcmp(cmd, "show") &&
	    strcmp(cmd, "get") && strcmp(cmd, "export") && strcmp(cmd, "stat"))
		usage(1);
	if ((!strcmp(cmd, "ls") && argc > 1) ||
	    ((!strcmp(cmd, "show") || !strcmp(cmd, "rm")) && argc < 1) ||
	    ((!strcmp(cmd, "get")) && argc != 1) ||
	    ((!strcmp(cmd, "put") || !strcmp(cmd, "export")) &&
	    (argc < 1 || argc > 2)) ||
	    (!strcmp(cmd, "import") && argc != 2) ||
	    (!strcmp(cmd, "stat") && argc != 0))
		usage(1);
	for (int i = 0; i < argc && strcmp(cmd, "ls") && i < 1 + !!wr; i++)
		if (!strcmp(cmd, "rm") || !strcmp(cmd, "show") || i == 0)
			if (spirt_key_check(argv[i]))
				die(SPIRT_EX_USAGE, "invalid key \"%s\"",
				    argv[i]);

	/* read the input before touching the store: nothing half-written */
	if (!strcmp(cmd, "put")) {
		const char *in = argc > 1 ? argv[1] : "-";
		act = in;
		fd = strcmp(in, "-") ? open(in, O_RDONLY) : 0;
		if (fd < 0)
			dierc(errno, "open %s", in);
		if ((rc = spirt_tensor_read(fd, &t, &buf, 0))) {
			if (rc == SPIRT_EOF)
				rc = SPIRT_ETRUNC;      /* empty: no record */
			goto fail;
		}
		if ((rc = spirt_tensor_read(fd, &t2, &extra, 0)) !=
		    SPIRT_EOF) {
			free(extra);
			if (!rc)
				die(SPIRT_EX_DATAERR, "%s: more than one record",
				    in);
			goto fail;
		}
		rc = 0;
		pa.t = &t;
		pa.pl = buf;
	} else if (!strcmp(cmd, "import")) {
		act = argv[1];
		if ((rc = spirt_readfile(argv[1], &buf, &len)))
			goto fail;
		if ((rc = spirt_npy_parse(&t, &pl, buf, len)))
			goto fail;
		t.step = o.step;
		pa.t = &t;
		pa.pl = pl;
	}

	act = o.store;
	if ((rc = spirt_store_open(&s, o.store, wr ? SPIRT_STORE_CREATE :
	    SPIRT_STORE_RDONLY)))
		goto fail;
	if (wr) {
		pa.key = argv[0];
		pa.flags = o.noover ? SPIRT_PUT_NOOVERWRITE : 0;
		pa.keys = argv;
		pa.nkeys = argc;
		act = argv[0];
		rc = spirt_store_write(s, !strcmp(cmd, "rm") ? rm_txn : put_txn,
		    &pa);
		if (pa.bad)
			act = pa.bad;
		goto fail;
	}
	if (!strcmp(cmd, "stat")) {
		struct spirt_store_info in;
		if ((rc = spirt_store_info(s, &in)))
			goto fail;
		printf("store=%s\nentries=%llu\npage_size=%u\nused_bytes=%llu\n"
		    "map_size=%llu\nreaders=%llu\nmax_readers=%llu\n", o.store,
		    (unsigned long long)in.entries, in.psize,
		    (unsigned long long)in.used,
		    (unsigned long long)in.mapsize,
		    (unsigned long long)in.readers,
		    (unsigned long long)in.maxreaders);
		goto fail;
	}
	if ((rc = spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY)))
		goto fail;
	if (!strcmp(cmd, "ls")) {
		act = "list";
		if ((rc = spirt_store_list(txn, argc ? argv[0] : "", ls_one,
		    &err)))
			goto fail;
		rc = err;
		act = NULL;     /* already reported per key */
		goto fail;
	}
	for (int i = 0; i < argc && !strcmp(cmd, "show"); i++) {
		char what[SPIRT_KEY_MAX + 8];
		if ((rc = spirt_store_get_tensor(txn, argv[i], &t, &pl, 1))) {
			warnrc(rc, "%s", argv[i]);
			err = err ? err : rc;
			continue;
		}
		snprintf(what, sizeof what, "key=%s", argv[i]);
		describe(what, &t, pl);
	}
	if (!strcmp(cmd, "show")) {
		rc = err;
		act = NULL;
		goto fail;
	}
	key = act = argv[0];
	if ((rc = spirt_store_get_tensor(txn, key, &t, &pl, 1)))
		goto fail;
	if (!strcmp(cmd, "get")) {
		const void *rec;
		fd = tofd(NULL, o.force, &pub);
		if ((rc = spirt_store_get(txn, key, &rec, &len)) ||
		    (rc = spirt_writeall(fd, rec, len)))
			act = "stdout";
		goto fail;
	}
	/* export */
	fd = tofd(argc > 1 ? argv[1] : NULL, o.force, &pub);
	act = argc > 1 ? argv[1] : "stdout";
	if ((rc = spirt_npy_header(hdr, sizeof hdr, &len, &t)) ||
	    (rc = spirt_writeall(fd, hdr, len)) ||
	    (rc = spirt_writeall(fd, pl, t.nbytes)))
		goto fail;
	if (pub.fd >= 0)
		rc = spirt_publish_commit(&pub);

fail:
	if (pub.fd >= 0)
		spirt_publish_abort(&pub);
	spirt_txn_abort(txn);
	spirt_store_close(s);
	free(buf);
	if (rc && act)
		warnrc(rc, "%s", act);
	if (rc == EPIPE)
		return SPIRT_EX_IOERR;
	return fshut_stdout(spirt_exit(rc));
}
