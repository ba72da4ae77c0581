/* opt.h - one option table per tool: parsing and -h (tools only) */
#ifndef SPIRT_OPT_H
#define SPIRT_OPT_H

/*
 * A row of a tool's option table (git's parse-options).  One row drives
 * getopt_long's short string and long table and the option's -h line:
 *
 *	{ 'b', "batch", "N", "samples per minibatch (default 64)" }
 *	{ OPT_LONG('T'), "trim", "F", "trimmed mean, cut F per side" }
 *	{ 0, NULL, "spec", "e.g. mlp:784-256-128-10" }
 *
 * id is the short letter, what opt_next() returns for the option, or
 * OPT_LONG(c) for an option with a long name only that returns c (a
 * value past 255 needs no OPT_LONG: no letter is past 255); lname
 * the long name (NULL: short only); argname the argument's name in -h
 * (NULL: none taken); help its -h text ('\n' starts a line at the help
 * column, a first line left empty puts the text under a long left part;
 * NULL: not in -h).  A row with id 0 and no lname is an operand's -h
 * line.  The table ends with { 0 }.
 */
struct opt {
	int id;
	const char *lname;
	const char *argname;
	const char *help;
};

#define OPT_LONG(c)     ((c) | 0x10000)

/* optset flags: options end at the first operand ('+'); an option's
 * argument missing is "prog: -x: missing argument" and an unknown option
 * nothing, before the usage (not getopt's messages) */
#define OPT_INORDER     1
#define OPT_ARGMSG      2

/* the rows most tools share, worded once (docs/contracts.md) */
#define OPT_STORE       { 's', "store", "PATH", \
	"store (default $SPIRT_STORE or ./spirt.db)" }
#define OPT_QUIET       { 'q', "quiet", NULL, "no warnings" }
#define OPT_HELP        { 'h', "help", NULL, "this help" }
#define OPT_VERSION     { 'V', "version", NULL, "print version" }

struct optset {
	const char *usage;      /* "usage: ..." lines: the SYNOPSIS */
	const char *pre;        /* -h: text between usage and options */
	const char *post;       /* -h: text after the options */
	int width;              /* -h: the column help text starts at */
	int flags;              /* OPT_INORDER, OPT_ARGMSG */
	const struct opt *opt;
	/* -h: another command's set whose rows follow (its own usage, pre
	 * and post not printed), for a tool whose commands parse apart */
	const struct optset *more;
};

/*
 * getopt_long over the set's table: the next option's val (optarg set)
 * or -1 at the end (optind the first operand).  -h prints the usage and
 * the help on stdout and exits 0; an unknown option or a missing argument
 * (getopt's message first, or OPT_ARGMSG's) prints the usage on stderr and
 * exits 64.
 */
int opt_next(const struct optset *s, int argc, char **argv);

/* code 0: usage and help on stdout, exit 0; else usage on stderr, 64 */
_Noreturn void opt_usage(const struct optset *s, int code);

#endif
