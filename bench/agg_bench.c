/* agg_bench.c - spirt-agg and spirt-update against the memory limit and Redis */
#include <arpa/inet.h>
#include <errno.h>
#include <spawn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "store.h"
#include "tensor.h"
#include "vec.h"

/*
 * Usage: agg_bench [-m dir] [-N max] [-p redis-port]  (run by bench/agg.sh)
 *
 * For W in {4, 8, 16} and N in {1e5, 1e6, 1e7} float32 values it times:
 *   limit   a plain streaming loop over the same bytes (W*N*4 read, N*4
 *           written; for updates the optimiser's streams), best of 3
 *   op      the in-store operation as the tool reports it (-v "work")
 *   proc    the whole spirt-agg / spirt-update process, store to store
 *   lua     SPIRT's path: W JSON lists in Redis averaged by a Lua script
 *           (cjson decode, sum, divide, encode) through EVAL
 *   blob    W binary blobs fetched from Redis by a client and averaged
 * The stores live in $TMPDIR; -m dir times the headline (mean, W = 8,
 * N = 1e6) once more with its store in dir (bench/agg.sh: a tmpfs).
 * -N max leaves out the sizes above max (a quick check of the harness).
 * The tools and Redis are timed alike: the same number of runs each,
 * interleaved, and their medians compared (a best-of-N beside a single
 * run would favour the side run more often).
 */

extern char **environ;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die(const char *what, int rc)
{
	fprintf(stderr, "agg_bench: %s: %s\n", what, spirt_strerror(rc));
	exit(70);
}

/* ---- the limit: plain loops over the same streams ---- */

static volatile unsigned sink;

/*
 * The limit loops are what the machine does at best with the same streams:
 * one pass, every input of a vector combined in registers with the
 * cheapest operation (integer OR, or a float sum for the update), 8 lanes,
 * compiled per x86-64 level like spirt's own passes (SPIRT_DISPATCH).
 */

/* out = x0 | x1 | ... as integers */
SPIRT_KERNEL void
or_pass_k(unsigned *out, float *const *x, size_t w, size_t n)
{
	size_t j = 0;

	for (; j + 2 * VL8 <= n; j += 2 * VL8) {
		vu8 a, b, p, q;

		LD8(a, x[0] + j);
		LD8(b, x[0] + j + VL8);
		for (size_t i = 1; i < w; i++) {
			LD8(p, x[i] + j);
			LD8(q, x[i] + j + VL8);
			a |= p;
			b |= q;
		}
		ST8(out + j, a);
		ST8(out + j + VL8, b);
	}
	for (; j < n; j++) {
		unsigned a;

		memcpy(&a, x[0] + j, 4);
		for (size_t i = 1; i < w; i++) {
			unsigned b;

			memcpy(&b, x[i] + j, 4);
			a |= b;
		}
		out[j] = a;
	}
}

SPIRT_DISPATCH_VOID(static, or_pass, (unsigned *out, float *const *x,
    size_t w, size_t n), (out, x, w, n))

static double
limit_agg(float **x, size_t w, size_t n, unsigned *out)
{
	double best = 1e9;

	for (int r = 0; r < 3; r++) {
		double t0 = now();

		or_pass(out, x, w, n);
		t0 = now() - t0;
		sink += out[n / 2];
		if (t0 < best)
			best = t0;
	}
	return best;
}

/* y[0..nw) = x[0] + ... + x[nr-1] */
SPIRT_KERNEL void
sum_pass_k(float *const *x, size_t nr, float *const *y, size_t nw, size_t n)
{
	size_t j = 0;

	for (; j + VL8 <= n; j += VL8) {
		vf8 a, p;

		LD8(a, x[0] + j);
		for (size_t i = 1; i < nr; i++) {
			LD8(p, x[i] + j);
			a += p;
		}
		for (size_t i = 0; i < nw; i++)
			ST8(y[i] + j, a);
	}
	for (; j < n; j++) {
		float a = x[0][j];

		for (size_t i = 1; i < nr; i++)
			a += x[i][j];
		for (size_t i = 0; i < nw; i++)
			y[i][j] = a;
	}
}

SPIRT_DISPATCH_VOID(static, sum_pass, (float *const *x, size_t nr,
    float *const *y, size_t nw, size_t n), (x, nr, y, nw, n))

/* read nr streams, write nw streams of n floats */
static double
limit_update(float **x, size_t nr, float **y, size_t nw, size_t n)
{
	double best = 1e9;

	for (int r = 0; r < 3; r++) {
		double t0 = now();

		sum_pass(x, nr, y, nw, n);
		t0 = now() - t0;
		sink += (unsigned)y[0][n / 2];
		if (t0 < best)
			best = t0;
	}
	return best;
}

/* ---- store preparation ---- */

struct prep {
	float **x;
	size_t w, n;
	int update;
};

static int
prep_fn(struct spirt_txn *txn, void *arg)
{
	struct prep *p = arg;
	struct spirt_tensor t;
	uint64_t dims[2] = { p->n, 0 };
	char key[64];
	int rc;

	if ((rc = spirt_tensor_init(&t, SPIRT_F32, 1, dims)) ||
	    (rc = spirt_tensor_set_name(&t, "bench")))
		return rc;
	t.step = 0;
	if (p->update) {
		/* model/m@0 and agg/0; for adam also a state at step 0, so
		 * the update reads theta, g, m, v and writes theta', m', v' */
		if ((rc = spirt_store_put_tensor(txn, "model/m@0", &t, p->x[0],
		    0)) ||
		    (rc = spirt_store_put_tensor(txn, "agg/0", &t, p->x[1], 0)))
			return rc;
		if (p->update == 1)
			return 0;
		dims[0] = 2;
		dims[1] = p->n;
		if ((rc = spirt_tensor_init(&t, SPIRT_F32, 2, dims)) ||
		    (rc = spirt_tensor_set_name(&t, "adam")))
			return rc;
		t.step = 0;
		t.count = 1;
		/* m from x[2], v = x[3]^2 > 0: two rows of n from one buffer */
		return spirt_store_put_tensor(txn, "opt/m@0", &t, p->x[16],
		    0);
	}
	for (size_t i = 0; i < p->w; i++) {
		t.origin = (uint32_t)i;
		t.samples = 32;
		t.loss = 1;
		snprintf(key, sizeof key, "grad/0/%zu", i);
		if ((rc = spirt_store_put_tensor(txn, key, &t, p->x[i], 0)))
			return rc;
	}
	return 0;
}

static int
clear_fn(struct spirt_txn *txn, void *arg)
{
	const char *keys[] = { "model/m@1", "opt/m@1" };

	(void)arg;
	for (int i = 0; i < 2; i++) {
		int rc = spirt_store_del(txn, keys[i]);

		if (rc && rc != SPIRT_ENOTFOUND)
			return rc;
	}
	return 0;
}

static void
prepare(const char *dir, float **x, size_t w, size_t n, int update)
{
	struct spirt_store *s;
	struct prep p = { x, w, n, update };
	char cmd[512];
	int rc;

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		die("rm", EIO);
	if ((rc = spirt_store_open(&s, dir, SPIRT_STORE_CREATE)))
		die(dir, rc);
	if ((rc = spirt_store_write(s, prep_fn, &p)))
		die("prepare", rc);
	spirt_store_close(s);
}

/* remove model/m@1 and opt/m@1, so the update runs again */
static void
clear(const char *dir, int from)
{
	struct spirt_store *s;
	int rc;

	if ((rc = spirt_store_open(&s, dir, 0)) ||
	    (rc = spirt_store_write(s, clear_fn, &from)))
		die("clear", rc);
	spirt_store_close(s);
}

/* ---- running a tool: whole-process wall time, "work" from -v ---- */

static double
tool(char *const argv[], double *work)
{
	char err[4096] = "", *p;
	posix_spawn_file_actions_t fa;
	int pfd[2], st;
	ssize_t k, got = 0;
	pid_t pid;
	double t0 = now(), t;

	/* posix_spawn, not fork: this process holds ~1 GB of test data
	 * whose page tables fork would copy on every run */
	if (pipe(pfd) < 0)
		die("pipe", errno);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	if ((st = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)))
		die(argv[0], st);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	while ((k = read(pfd[0], err + got, sizeof err - 1 - got)) > 0)
		got += k;
	close(pfd[0]);
	waitpid(pid, &st, 0);
	t = now() - t0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "agg_bench: %s failed: %s\n", argv[0], err);
		exit(70);
	}
	*work = (p = strstr(err, "work ")) ? atof(p + 5) / 1e3 : 0;
	return t;
}

/* ---- a minimal Redis (RESP) client ---- */

static int rfd = -1;
static char *rbuf;
static size_t rcap, rlen, rpos;

static void
rsend(int argc, const char **argv, const size_t *lens)
{
	char head[64];
	size_t n;

	n = (size_t)snprintf(head, sizeof head, "*%d\r\n", argc);
	if (write(rfd, head, n) != (ssize_t)n)
		die("redis write", errno);
	for (int i = 0; i < argc; i++) {
		size_t off = 0;

		n = (size_t)snprintf(head, sizeof head, "$%zu\r\n", lens[i]);
		if (write(rfd, head, n) != (ssize_t)n)
			die("redis write", errno);
		while (off < lens[i]) {
			ssize_t k = write(rfd, argv[i] + off, lens[i] - off);

			if (k <= 0)
				die("redis write", errno);
			off += (size_t)k;
		}
		if (write(rfd, "\r\n", 2) != 2)
			die("redis write", errno);
	}
}

static void
rfill(size_t need)
{
	while (rlen - rpos < need) {
		ssize_t k;

		if (rpos) {
			memmove(rbuf, rbuf + rpos, rlen - rpos);
			rlen -= rpos;
			rpos = 0;
		}
		if (rcap < need + 65536) {
			rcap = (need + 65536) * 2;
			if ((rbuf = realloc(rbuf, rcap)) == NULL)
				die("realloc", ENOMEM);
		}
		if ((k = read(rfd, rbuf + rlen, rcap - rlen)) <= 0)
			die("redis read", errno ? errno : EIO);
		rlen += (size_t)k;
	}
}

/* one reply; bulk strings returned (valid until the next call) */
static const char *
rreply(size_t *len)
{
	char *e;
	long n;

	for (;;) {
		rfill(1);
		if ((e = memchr(rbuf + rpos, '\n', rlen - rpos)))
			break;
		rfill(rlen - rpos + 1);
	}
	*e = 0;
	if (rbuf[rpos] == '-') {
		fprintf(stderr, "agg_bench: redis: %s\n", rbuf + rpos);
		exit(70);
	}
	if (rbuf[rpos] != '$') {
		rpos = (size_t)(e - rbuf) + 1;
		*len = 0;
		return NULL;
	}
	n = strtol(rbuf + rpos + 1, NULL, 10);   /* RESP bulk length */
	rpos = (size_t)(e - rbuf) + 1;
	rfill((size_t)n + 2);
	*len = (size_t)n;
	rpos += (size_t)n + 2;
	return rbuf + rpos - n - 2;
}

static void
rconnect(int port)
{
	struct sockaddr_in a;
	int one = 1;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((rfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(rfd, (struct sockaddr *)&a, sizeof a) < 0)
		die("redis connect", errno);
	/* no Nagle: commands go out in several small writes */
	if (setsockopt(rfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
		die("TCP_NODELAY", errno);
}

static void
rcmd2(const char *a, const char *b, size_t blen, const char *c, size_t clen)
{
	const char *v[3] = { a, b, c };
	size_t l[3] = { strlen(a), blen, clen };
	size_t len;

	rsend(c ? 3 : 2, v, l);
	(void)rreply(&len);
}

static const char LUA[] =
"local n = #KEYS\n"
"local acc = cjson.decode(redis.call('GET', KEYS[1]))\n"
"for i = 2, n do\n"
"  local g = cjson.decode(redis.call('GET', KEYS[i]))\n"
"  for j = 1, #g do acc[j] = acc[j] + g[j] end\n"
"end\n"
"for j = 1, #acc do acc[j] = acc[j] / n end\n"
"redis.call('SET', 'agg', cjson.encode(acc))\n"
"return #acc\n";

static void
redis_load(float **x, size_t w, size_t n, int json)
{
	/* JSON as SPIRT's Python writes it: json.dumps(grad.tolist()),
	 * float32 values as float64 reprs (up to 17 digits); JSON lists
	 * under j:i, binary blobs under b:i */
	char key[32], *s = malloc(n * 26 + 16);

	for (size_t i = 0; i < w; i++) {
		size_t len = 0;

		snprintf(key, sizeof key, "%c:%zu", json ? 'j' : 'b', i);
		if (json) {
			s[len++] = '[';
			for (size_t j = 0; j < n; j++)
				len += (size_t)snprintf(s + len, 26, "%s%.17g",
				    j ? "," : "", (double)x[i][j]);
			s[len++] = ']';
			rcmd2("SET", key, strlen(key), s, len);
		} else {
			rcmd2("SET", key, strlen(key), (const char *)x[i],
			    n * 4);
		}
	}
	free(s);
}

/* one EVAL of the Lua mean over j:0 .. j:w-1 */
static double
redis_lua(size_t w)
{
	const char *v[3 + 16];
	size_t l[3 + 16], len;
	char keys[16][32], nk[24];
	double t0;

	v[0] = "EVAL";
	v[1] = LUA;
	snprintf(nk, sizeof nk, "%zu", w);
	v[2] = nk;
	for (size_t i = 0; i < w; i++) {
		snprintf(keys[i], sizeof keys[i], "j:%zu", i);
		v[3 + i] = keys[i];
	}
	for (size_t i = 0; i < 3 + w; i++)
		l[i] = strlen(v[i]);
	t0 = now();
	rsend((int)(3 + w), v, l);
	(void)rreply(&len);
	return now() - t0;
}

/* one client-side mean of the blobs b:0 .. b:w-1 */
static double
redis_blob(size_t w, size_t n, float *out)
{
	char key[32];
	double t0 = now();

	for (size_t i = 0; i < w; i++) {
		const char *v[2] = { "GET", key };
		size_t l[2], len;
		const float *g;

		snprintf(key, sizeof key, "b:%zu", i);
		l[0] = 3;
		l[1] = strlen(key);
		rsend(2, v, l);
		g = (const float *)(const void *)rreply(&len);
		if (len != n * 4)
			die("redis blob", SPIRT_ESHAPE);
		for (size_t j = 0; j < n; j++) {
			float y;

			memcpy(&y, g + j, 4);
			out[j] = i ? out[j] + y : y;
		}
	}
	for (size_t j = 0; j < n; j++)
		out[j] /= (float)w;
	return now() - t0;
}

/* ---- the table ---- */

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* the median of v[0..n), 0 if n == 0 (v is sorted) */
static double
median(double *v, int n)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* runs of each timed configuration, tools and Redis alike */
static int
runs(size_t n)
{
	return n > 100000 ? 3 : 7;
}

/* a tool's runs: whole-process and "work" times */
struct timing {
	double proc[7], op[7];
	int n;
};

static void
timed(struct timing *t, char *const av[])
{
	t->proc[t->n] = tool(av, &t->op[t->n]);
	t->n++;
}

/* LABEL W N limit op proc %limit [redis proc/rds]: op, proc and redis are
 * medians of as many runs each (redis <= 0: no Redis column) */
static void
row(const char *what, size_t w, size_t n, double limit, struct timing *t,
    double redis)
{
	double op = median(t->op, t->n), proc = median(t->proc, t->n);

	printf("%-12s %3zu %9zu %9.2f %9.2f %9.2f %6.0f%%", what, w, n,
	    limit * 1e3, op * 1e3, proc * 1e3, 100 * limit / op);
	if (redis > 0)
		printf(" %10.1f %8.*fx", redis * 1e3, redis / proc < 10 ? 2 : 0,
		    redis / proc);
	putchar('\n');
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	static const size_t ws[] = { 4, 8, 16 };
	static const size_t ns[] = { 100000, 1000000, 10000000 };
	/* the store lives where TMPDIR says: bench/agg.sh picks a disk
	 * file system (/var/tmp), -m dir a tmpfs */
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[256], adir[256] = "";
	const char *alt = NULL;
	int port = 0, c;
	int64_t nmax = 10000000;
	float *x[17], *y[3];
	unsigned *lim = malloc(10000000 * sizeof *lim);

	while ((c = getopt(argc, argv, "m:N:p:")) != -1)
		if (c == 'm') {
			alt = optarg;
		} else if (c == 'N') {
			if (spirt_parse_i64(&nmax, optarg, 1, 10000000)) {
				fprintf(stderr, "agg_bench: bad -N \"%s\"\n",
				    optarg);
				return 64;
			}
		} else if (c == 'p') {
			int64_t v;
			if (spirt_parse_i64(&v, optarg, 1, 65535)) {
				fprintf(stderr, "agg_bench: bad port \"%s\"\n",
				    optarg);
				return 64;
			}
			port = (int)v;
		}
	snprintf(dir, sizeof dir, "%s/agg_bench.%d.db", tmp, (int)getpid());
	spirt_store_setconf(&(struct spirt_store_conf){ .mapsize =
	    "8589934592" });
	srand(1);
	for (int i = 0; i < 16; i++) {
		x[i] = malloc(10000000 * sizeof(float));
		for (size_t j = 0; j < 10000000; j++)
			x[i][j] = (float)rand() / RAND_MAX - 0.5f;
	}
	for (int i = 0; i < 3; i++)
		y[i] = malloc(10000000 * sizeof(float));
	x[16] = malloc(2 * 10000000 * sizeof(float));
	if (port)
		rconnect(port);

	printf("times in ms; limit = plain streaming loop over the same "
	    "bytes, best of 3; op =\nin-store operation (tool -v \"work\"); "
	    "proc = whole process store to store;\n%%limit = limit/op; "
	    "redis = SPIRT's path: Lua/JSON for mean (W JSON lists, cjson\n"
	    "decode, sum, divide, encode; not run for N = 1e7), a client "
	    "and binary blobs\nfor \"redis blob\"; rds/proc = redis/proc of "
	    "the row it stands in or below.\nop, proc and redis: medians of "
	    "as many runs each (7 for N = 1e5, 3 for 1e6\nand 1e7), the "
	    "tool's and Redis's runs interleaved\n\n");
	printf("%-12s %3s %9s %9s %9s %9s %7s %10s %9s\n", "operation", "W",
	    "N", "limit", "op", "proc", "%limit", "redis", "rds/proc");
	for (size_t ni = 0; ni < 3 && ns[ni] <= (size_t)nmax; ni++) {
		size_t n = ns[ni];

		for (size_t wi = 0; wi < 3; wi++) {
			size_t w = ws[wi];
			double lim_t = limit_agg(x, w, n, lim), lua[7], blob[7];
			static const char *rules[][2] = { { "mean", NULL },
			    { "trim", "0.25" }, { "median", NULL } };
			struct timing t[3], tm;
			int nlua = 0, nblob = 0, nr = runs(n);
			char *av[3][12];

			prepare(dir, x, w, n, 0);
			if (port) {
				rcmd2("FLUSHALL", "SYNC", 4, NULL, 0);
				redis_load(x, w, n, 0);
				if (n <= 1000000)
					redis_load(x, w, n, 1);
			}
			for (int r = 0; r < 3; r++) {
				char *v[] = { "spirt-agg", "-v", "-R", "-s", dir,
				    "-t", "0", "-r", (char *)rules[r][0],
				    rules[r][1] ? "--trim" : NULL,
				    (char *)rules[r][1], NULL };

				memcpy(av[r], v, sizeof v);
				t[r].n = 0;
			}
			/* interleaved: load from elsewhere falls on all alike */
			for (int k = 0; k < nr; k++) {
				for (int r = 0; r < 3; r++)
					timed(&t[r], av[r]);
				if (!port)
					continue;
				blob[nblob++] = redis_blob(w, n, y[0]);
				if (n <= 1000000)
					lua[nlua++] = redis_lua(w);
			}
			row("agg mean", w, n, lim_t, &t[0], median(lua, nlua));
			if (nblob)
				printf("%-12s %3zu %9zu %39s %10.1f %8.2fx\n",
				    "  redis blob", w, n, "",
				    median(blob, nblob) * 1e3,
				    median(blob, nblob) /
				    median(t[0].proc, t[0].n));
			/* the headline once more, the store in -m dir; its
			 * Redis ratio against the Lua runs above */
			if (alt && w == 8 && n == 1000000) {
				char cmd[300];

				snprintf(adir, sizeof adir, "%s/agg_bench.%d.db",
				    alt, (int)getpid());
				prepare(adir, x, w, n, 0);
				av[0][4] = adir;
				tm.n = 0;
				for (int k = 0; k < nr; k++)
					timed(&tm, av[0]);
				av[0][4] = dir;
				row("  in -m dir", w, n, lim_t, &tm,
				    median(lua, nlua));
				snprintf(cmd, sizeof cmd, "rm -rf '%s'", adir);
				if (system(cmd) != 0)
					die("rm", EIO);
			}
			row("agg trim", w, n, lim_t, &t[1], 0);
			row("agg median", w, n, lim_t, &t[2], 0);
		}
		/* updates: sgd reads theta, g, writes theta'; adam reads
		 * theta, g, m, v, writes theta', m', v' */
		for (int a = 0; a < 2; a++) {
			char *av[] = { "spirt-update", "-v", "-s", dir, "-m", "m",
			    "-t", "0", "--opt", a ? "adam" : "sgd", NULL };
			double lim_t = a ? limit_update(x, 4, y, 3, n) :
			    limit_update(x, 2, y, 1, n);
			struct timing t = { .n = 0 };

			if (a)
				for (size_t j = 0; j < n; j++) {
					x[16][j] = x[2][j];
					x[16][n + j] = x[3][j] * x[3][j];
				}
			prepare(dir, x, 2, n, 1 + a);
			for (int k = 0; k < runs(n); k++) {
				clear(dir, 0);
				timed(&t, av);
			}
			row(a ? "update adam" : "update sgd", 1, n, lim_t, &t,
			    0);
		}
	}
	snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%s", "");
	{
		char cmd[300];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return sink == 12345 ? 1 : 0;
}
