/* test_opt.c - one option table: parsing, -h's lines, bad options */
#include <getopt.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "opt.h"
#include "tool.h"

enum { BIG = 300 };

static const struct opt opts[] = {
	{ 0, NULL, "cmd", "an operand's line" },
	{ 'b', "batch", "N", "samples (default 64)" },
	{ 'q', "quiet", NULL, "no warnings" },
	{ OPT_LONG('T'), "trim", "F", "cut F per side\nof each" },
	{ BIG, "big", "X", NULL },
	{ 'x', NULL, NULL, "short only" },
	{ OPT_LONG('W'), "worker-momentum", "B", "past the column" },
	{ OPT_LONG('F'), "from-a-long-name", "NAME", "\nunder it" },
	{ 'h', "help", NULL, "this help" },
	{ 0 }
};

static const struct optset set = {
	"usage: prog [-q] [-b batch] cmd\n", "before\n", "after\n", 21, 0,
	opts, NULL
};

static const struct optset argmsg = {
	"usage: prog [-q] [-b batch] cmd\n", NULL, NULL, 21, OPT_ARGMSG,
	opts, NULL
};

static const struct optset inorder = {
	"usage: prog [-q] cmd [-b batch]\n", NULL, NULL, 21, 1, opts, NULL
};

static const char help[] =
    "usage: prog [-q] [-b batch] cmd\n"
    "\n"
    "before\n"
    "  cmd                an operand's line\n"
    "  -b, --batch N      samples (default 64)\n"
    "  -q, --quiet        no warnings\n"
    "      --trim F       cut F per side\n"
    "                     of each\n"
    "  -x                 short only\n"
    "      --worker-momentum B  past the column\n"
    "      --from-a-long-name NAME\n"
    "                     under it\n"
    "  -h, --help         this help\n"
    "after\n";

/* opt_next() over argv in a child, its fd (stdout or stderr) into out,
 * the other to /dev/null: exit status */
static int
child_fd(const struct optset *s, char **argv, int fd, char *out, size_t cap)
{
	int p[2], st, argc = 0;
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	while (argv[argc])
		argc++;
	if (pipe(p) < 0 || (pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], fd);
		if (freopen("/dev/null", "w", fd == 1 ? stderr : stdout) ==
		    NULL)
			_exit(99);
		close(p[0]);
		optind = 0;
		while (opt_next(s, argc, argv) != -1)
			;
		_exit(0);
	}
	close(p[1]);
	while (n < cap - 1 && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(p[0]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int
child(const struct optset *s, char **argv, char *out, size_t cap)
{
	return child_fd(s, argv, 1, out, cap);
}

int
main(void)
{
	char *a1[] = { "prog", "-b", "5", "--trim", "0.1", "-qx", "--big",
	    "y", "op", NULL };
	char *a2[] = { "prog", "-q", "cmd", "-b", "1", NULL };
	char *h[] = { "prog", "--help", NULL };
	char *bad[][3] = {
		{ "prog", "-T1", NULL },        /* long only: no -T */
		{ "prog", "--no-such", NULL },
		{ "prog", "-b", NULL },         /* its argument missing */
		{ "prog", "--big", NULL },
	};
	/* OPT_ARGMSG: the option as written, or nothing (an unknown one) */
	char *miss[][3] = {
		{ "prog", "-b", NULL }, { "prog", "--bat", NULL },
		{ "prog", "--trim", NULL }, { "prog", "--big", NULL },
		{ "prog", "-T", NULL }, { "prog", "--no-such", NULL },
		{ "prog", "-qz", NULL },
	};
	const char *said[] = {
		"prog: -b: missing argument\n",
		"prog: --bat: missing argument\n",
		"prog: --trim: missing argument\n",
		"prog: --big: missing argument\n", "", "", "",
	};
	char out[4096], want[256];
	size_t i;

	progname = "prog";
	optind = 0;
	CHECK(opt_next(&set, 9, a1) == 'b' && strcmp(optarg, "5") == 0);
	CHECK(opt_next(&set, 9, a1) == 'T' && strcmp(optarg, "0.1") == 0);
	CHECK(opt_next(&set, 9, a1) == 'q');
	CHECK(opt_next(&set, 9, a1) == 'x');
	CHECK(opt_next(&set, 9, a1) == BIG && strcmp(optarg, "y") == 0);
	CHECK(opt_next(&set, 9, a1) == -1 && optind == 8);

	/* '+': the options end at the first operand */
	optind = 0;
	CHECK(opt_next(&inorder, 5, a2) == 'q');
	CHECK(opt_next(&inorder, 5, a2) == -1 && optind == 2);
	optind = 0;
	CHECK(opt_next(&set, 5, a2) == 'q');
	CHECK(opt_next(&set, 5, a2) == 'b');

	/* -h: usage and help lines on stdout, 0 */
	CHECK(child(&set, h, out, sizeof out) == 0);
	CHECK(strcmp(out, help) == 0);
	if (strcmp(out, help) != 0)
		fprintf(stderr, "got:\n%swant:\n%s", out, help);
	/* misuse: 64, nothing on stdout */
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(child(&set, bad[i], out, sizeof out) == SPIRT_EX_USAGE);
		CHECK(out[0] == '\0');
	}
	for (i = 0; i < sizeof miss / sizeof miss[0]; i++) {
		CHECK(child_fd(&argmsg, miss[i], 2, out, sizeof out) ==
		    SPIRT_EX_USAGE);
		snprintf(want, sizeof want, "%s%s", said[i], argmsg.usage);
		CHECK(strcmp(out, want) == 0);
		if (strcmp(out, want) != 0)
			fprintf(stderr, "%s: got:\n%swant:\n%s", miss[i][1],
			    out, want);
	}
	CHECK_DONE();
}
