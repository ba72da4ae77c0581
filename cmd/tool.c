/* tool.c - the tools' layer: messages, environment, signals (ISC licence) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "isa.h"
#include "parse.h"
#include "remote.h"
#include "serve.h"
#include "store.h"
#include "tool.h"

const char *progname = "spirt";
int spirt_quiet;
int spirt_verbose;

/*
 * One message line, written with one write: tools that share a stderr
 * (servers started side by side, functions of one step) never interleave
 * their lines.  A line past the buffer is cut, ending in "...".
 */
static void
vmsg(const char *pre, const char *cause, const char *fmt, va_list ap)
{
	char line[4096];
	size_t n = strlen(fmt), len, cap = sizeof line - 1;
	int colon = n > 0 && fmt[n - 1] == ':';
	int saved = errno, k;

	fflush(stdout);
	k = snprintf(line, cap, "%s: %s", progname, pre);
	len = k < 0 ? 0 : (size_t)k < cap ? (size_t)k : cap - 1;
	k = vsnprintf(line + len, cap - len, fmt, ap);
	len = k < 0 ? len : len + (size_t)k < cap ? len + (size_t)k : cap - 1;
	if (cause || colon) {
		k = snprintf(line + len, cap - len, "%s%s", cause ?
		    (colon ? " " : ": ") : " ", cause ? cause :
		    strerror(saved));
		len = k < 0 ? len : len + (size_t)k < cap ? len + (size_t)k :
		    cap - 1;
	}
	if (len == cap - 1)
		memcpy(line + cap - 4, "...", 3);
	line[len++] = '\n';
	fwrite(line, 1, len, stderr);
}

const char *
errcause(int rc)
{
	const char *w = spirt_store_why(rc);

	return w ? w : spirt_strerror(rc);
}

void
warnx_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", NULL, fmt, ap);
	va_end(ap);
}

void
warnrc(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", errcause(rc), fmt, ap);
	va_end(ap);
}

void
info(const char *fmt, ...)
{
	va_list ap;

	if (spirt_quiet)
		return;
	va_start(ap, fmt);
	vmsg("", NULL, fmt, ap);
	va_end(ap);
}

void
warning(const char *fmt, ...)
{
	va_list ap;

	if (spirt_quiet)
		return;
	va_start(ap, fmt);
	vmsg("warning: ", NULL, fmt, ap);
	va_end(ap);
}

void
die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", NULL, fmt, ap);
	va_end(ap);
	exit(code);
}

void
dierc(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", errcause(rc), fmt, ap);
	va_end(ap);
	exit(spirt_exit(rc));
}

void *
emalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die(SPIRT_EX_OSERR, "malloc:");
	return p;
}

void *
ecalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);

	if (!p)
		die(SPIRT_EX_OSERR, "calloc:");
	return p;
}

static _Noreturn void
badopt(const char *opt, const char *s, int rc)
{
	die(SPIRT_EX_USAGE, "%s: %s \"%s\"", opt,
	    rc == ERANGE ? "value out of range" : "invalid value", s);
}

int64_t
eparse_i64(const char *opt, const char *s, int64_t min, int64_t max)
{
	int64_t v;
	int rc = spirt_parse_i64(&v, s, min, max);

	if (rc)
		badopt(opt, s, rc);
	return v;
}

uint64_t
eparse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	uint64_t v;
	int rc = spirt_parse_u64(&v, s, min, max);

	if (rc)
		badopt(opt, s, rc);
	return v;
}

void
echeck_model(const char *opt, const char *name)
{
	if (spirt_name_check(name))
		die(SPIRT_EX_USAGE, "%s: invalid model name \"%.40s%s\" (1 to "
		    "%d of A-Z a-z 0-9 . _ -, not starting with .)", opt, name,
		    strlen(name) > 40 ? "..." : "", SPIRT_NAME_PART_MAX);
}

double
eparse_double(const char *opt, const char *s, double min, double max)
{
	double v;
	int rc = spirt_parse_double(&v, s, min, max);

	if (rc)
		badopt(opt, s, rc);
	return v;
}

const char *
opt_env(const char *opt, const char *env, const char *def)
{
	const char *v;

	if (opt)
		return opt;
	if (env && (v = getenv(env)) && *v)
		return v;
	return def;
}

const char *
store_default(void)
{
	return opt_env(NULL, "SPIRT_STORE", "spirt.db");
}

const struct spirt_remote_conf *
remote_env(struct spirt_remote_conf *c)
{
	c->key = getenv("SPIRT_KEY");
	c->token = getenv("SPIRT_TOKEN");
	c->id = getenv("SPIRT_ID");
	c->run = getenv("SPIRT_RUN");
	c->group = getenv("SPIRT_GROUP");
	c->allow = getenv("SPIRT_ALLOW");
	return c;
}

void
store_env(void)
{
	static struct spirt_remote_conf r;
	struct spirt_store_conf c;

	c.sync = getenv("SPIRT_SYNC");
	c.mapsize = getenv("SPIRT_MAPSIZE");
	c.mapsize_max = getenv("SPIRT_MAPSIZE_MAX");
	c.timeout = getenv("SPIRT_TIMEOUT");
	c.remote = remote_env(&r);
	spirt_store_setconf(&c);
}

void
isa_setup(void)
{
	const char *v = opt_env(NULL, "SPIRT_ISA", NULL);
	int l, best = spirt_isa_best();

	if (v == NULL)
		return;
	if ((l = spirt_isa_parse(v)) < 0)
		die(SPIRT_EX_USAGE, "SPIRT_ISA: \"%s\": not base, avx2 or "
		    "avx512", v);
	if (spirt_isa_set(l) != 0)
		die(SPIRT_EX_USAGE, "SPIRT_ISA: \"%s\": this CPU lacks it "
		    "(best: %s)", v, spirt_isa_name(best));
}

void
checkfds(void)
{
	int fd;

	/* open /dev/null on any of 0-2 that is closed */
	for (fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			if (open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
				exit(SPIRT_EX_OSERR);
}

void
parent_watch(void)
{
	const char *s = getenv("SPIRT_PARENT");
	char v[24];
	uint64_t pid;

	if (s == NULL || *s == '\0')
		return;
	if (spirt_parse_u64(&pid, s, 2, INT32_MAX))
		die(SPIRT_EX_USAGE, "SPIRT_PARENT %.20s: not a process id", s);
	snprintf(v, sizeof v, "%s", s);
	/* the tool's own children (spirt-beat --on-dead's commands) have
	 * another parent: not theirs */
	unsetenv("SPIRT_PARENT");
#ifdef __linux__
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
		die(SPIRT_EX_OSERR, "SPIRT_PARENT: prctl PR_SET_PDEATHSIG:");
#endif
	/* gone before the line above: nobody sends the signal */
	if ((uint64_t)getppid() != pid)
		die(SPIRT_EX_TEMPFAIL, "SPIRT_PARENT %s: that process, which "
		    "started this one, is gone", v);
}

static int sigpipe_wfd = -1;

static void
sigpipe_put(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;

	if (write(sigpipe_wfd, &b, 1) < 0) {
		/* full: a byte is there already, which is all it says */
	}
	errno = e;
}

int
sigpipe_open(int *rfd)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa;
	int p[2], fl, rc = 0;
	size_t i;

	if (pipe(p) < 0)
		return errno;
	for (i = 0; i < 2 && !rc; i++)
		if (fcntl(p[i], F_SETFD, FD_CLOEXEC) < 0 ||
		    (fl = fcntl(p[i], F_GETFL)) < 0 ||
		    fcntl(p[i], F_SETFL, fl | O_NONBLOCK) < 0)
			rc = errno;
	if (rc) {
		close(p[0]);
		close(p[1]);
		return rc;
	}
	sigpipe_wfd = p[1];
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = sigpipe_put;
	sa.sa_flags = SA_RESTART;
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return errno;
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) < 0)
		return errno;
	*rfd = p[0];
	return 0;
}

static void
onstop(int sig)
{
	(void)sig;
	spirt_serve_stop();
}

void
serve_setup(void)
{
	struct sigaction sa;

	spirt_serve_init();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = onstop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int
isterm(int fd)
{
	return isatty(fd);
}

int
fshut_stdout(int code)
{
	int bad = 0;

	if (fflush(stdout) == EOF || ferror(stdout))
		bad = 1;
	if (fclose(stdout) == EOF)
		bad = 1;
	if (bad) {
		/* EPIPE: the reader went away; quiet, still an I/O error */
		if (errno != EPIPE)
			warnx_("stdout:");
		return code ? code : SPIRT_EX_IOERR;
	}
	return code;
}

void
print_version(void)
{
	printf("%s %s\n", progname, SPIRT_VERSION);
	exit(fshut_stdout(0));
}
