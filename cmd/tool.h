/*
 * tool.h - the tools' layer, not the library's: messages, e* wrappers
 * (may exit), option then environment then default, the configurations
 * lib is handed, signal handlers.  Linked into every tool (cmd/libtool.a).
 */
#ifndef SPIRT_TOOL_H
#define SPIRT_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

struct spirt_remote_conf;       /* remote.h */

/* Set by each tool's main() from a constant, never from argv[0]. */
extern const char *progname;
extern int spirt_quiet;         /* -q: silence warnings */
extern int spirt_verbose;       /* -v: count */

/*
 * Messages: "prog: fmt\n" on stderr.  A fmt ending in ':' gets
 * " strerror(errno)" appended (sbase).  The *rc variants append
 * ": spirt_strerror(rc)".
 */
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a remote store's own words for rc, else spirt_strerror(rc) */
const char *errcause(int rc);
void warnrc(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: warning: ..." unless -q */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* die(spirt_exit(rc), "...: spirt_strerror(rc)") */
_Noreturn void dierc(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void *emalloc(size_t n);
void *ecalloc(size_t n, size_t m);

/* Option parsing: die with 64 and a message naming the option on error. */
int64_t eparse_i64(const char *opt, const char *s, int64_t min, int64_t max);
uint64_t eparse_u64(const char *opt, const char *s, uint64_t min,
    uint64_t max);
double eparse_double(const char *opt, const char *s, double min, double max);

/*
 * A model name (-m, $SPIRT_MODEL) that spirt_name_check() refuses: die
 * with 64 and a message saying what a name may hold.
 */
void echeck_model(const char *opt, const char *name);

/* Option if set, else $env if set and non-empty, else def. */
const char *opt_env(const char *opt, const char *env, const char *def);

/* -s's default: $SPIRT_STORE if set and non-empty, else "spirt.db". */
const char *store_default(void);

/*
 * The credentials a URL store or a peer needs, from $SPIRT_KEY,
 * $SPIRT_TOKEN, $SPIRT_ID, $SPIRT_RUN, $SPIRT_GROUP and $SPIRT_ALLOW (as
 * they are now: their values are not copied).  Returns c.
 */
const struct spirt_remote_conf *remote_env(struct spirt_remote_conf *c);

/*
 * Hand lib the configuration of every store this tool opens
 * (spirt_store_setconf): $SPIRT_SYNC, $SPIRT_MAPSIZE, $SPIRT_MAPSIZE_MAX,
 * $SPIRT_TIMEOUT and remote_env()'s credentials; lib checks them at each
 * open, as spirt(7) says.  Once, as the tool starts.
 */
void store_env(void);

/* Run the vector kernels at the level $SPIRT_ISA names, if set (isa.h);
 * die with 64 for an unknown level or one the CPU lacks. */
void isa_setup(void);

/* Make sure fds 0-2 are open (curl main_checkfds). */
void checkfds(void);

/*
 * $SPIRT_PARENT, a process id: the process that started this tool, which
 * it must not outlive (spirt-train's warm tools, beaters, watcher and
 * server: a driver killed outright cannot end them).  On Linux the kernel
 * sends SIGTERM when that parent ends (PR_SET_PDEATHSIG); if the parent is
 * already another process, the tool exits at once, 75.  Elsewhere only
 * the second.  Unset afterwards, for the tool's own children.  Not a
 * number: 64.
 */
void parent_watch(void);

/*
 * A self-pipe for spirt_sup_open() (spirt-run): SIGCHLD, SIGTERM, SIGINT
 * and SIGHUP each write their number, a byte, to a non-blocking pipe
 * whose read end is *rfd; SIGPIPE is ignored.  0 or an errno.
 */
int sigpipe_open(int *rfd);

/*
 * A warm tool's set-up: spirt_serve_init(), and SIGINT and SIGTERM call
 * spirt_serve_stop() (lib/serve.h) instead of ending the process.  No
 * SA_RESTART: a wait for the next request returns at once, and the loop
 * ends once the invocation under way is answered.
 */
void serve_setup(void);

/* 1 if fd is a terminal: refuse binary output there unless forced. */
int isterm(int fd);

/*
 * Flush and close stdout; on failure print "prog: stdout: ..." and return
 * SPIRT_EX_IOERR, else return code unchanged (sbase fshut).
 */
int fshut_stdout(int code);

/* Print "prog VERSION" to stdout and exit 0. */
_Noreturn void print_version(void);

/* cmd/toolblas.c, for the tools that compute: */
/*
 * Load OpenBLAS (spirt_blas_init) with threads threads, after setting what
 * its load-time constructor reads: OPENBLAS_CORETYPE, unless set, to
 * spirt_blas_cpu_core()'s choice, and OPENBLAS_NUM_THREADS; the library
 * from $SPIRT_BLAS_LIB.  0, an errno or SPIRT_ENOTSUP (spirt_blas_error()).
 */
int blas_load(int threads);
/* Load OpenBLAS with -j/$SPIRT_THREADS threads; warn if it is missing. */
void blas_setup(const char *threads);
/* print_version() plus the OpenBLAS core line, then exit 0. */
_Noreturn void print_version_blas(void);

#endif
