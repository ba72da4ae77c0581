/* opt.c - one option table per tool: parsing and -h (ISC licence) */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "tool.h"

/* the most rows a table has (spirt-agg 29, spirt-shard 32) */
#define OPT_MAX 64

static const struct optset *built;
static char shortopts[2 + 2 * OPT_MAX + 1];
static struct option longopts[OPT_MAX + 1];

/* the set's getopt_long tables, made once for the set */
static void
build(const struct optset *s)
{
	const struct opt *o;
	size_t ns = 0, nl = 0;

	if (s->flags & OPT_INORDER)
		shortopts[ns++] = '+';
	for (o = s->opt; o->id || o->lname || o->argname || o->help;
	    o++) {
		if (o - s->opt == OPT_MAX)
			die(SPIRT_EX_SOFTWARE, "option table: more than %d "
			    "rows", OPT_MAX);
		if (o->id > 0 && o->id < 256) {
			shortopts[ns++] = (char)o->id;
			if (o->argname)
				shortopts[ns++] = ':';
		}
		if (o->lname)
			longopts[nl++] = (struct option){ o->lname,
			    o->argname ? required_argument : no_argument,
			    NULL, o->id & ~OPT_LONG(0) };
	}
	shortopts[ns] = '\0';
	longopts[nl] = (struct option){ NULL, 0, NULL, 0 };
	built = s;
}

/* OPT_ARGMSG: an option of the table with an argument that has none
 * (getopt's optopt, its value; it ends argv): named as it was written */
static void
missing(const struct optset *s, char **argv)
{
	const struct opt *o;
	const char *w = argv[optind - 1];
	int lng = w[0] == '-' && w[1] == '-';

	for (o = s->opt; o->id || o->lname || o->argname || o->help; o++) {
		if (optopt == 0 || (o->id & ~OPT_LONG(0)) != optopt ||
		    o->argname == NULL || (lng ? o->lname == NULL :
		    o->id <= 0 || o->id >= 256))
			continue;
		if (lng)
			fprintf(stderr, "%s: %s: missing argument\n",
			    progname, w);
		else
			fprintf(stderr, "%s: -%c: missing argument\n",
			    progname, optopt);
		return;
	}
}

int
opt_next(const struct optset *s, int argc, char **argv)
{
	int c;

	if (built != s)
		build(s);
	opterr = !(s->flags & OPT_ARGMSG);
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	if (c == 'h')
		opt_usage(s, 0);
	if (c == '?' && s->flags & OPT_ARGMSG)
		missing(s, argv);
	if (c == '?')
		opt_usage(s, 1);
	return c;
}

/* one row's -h lines: its left part, then its text at the column */
static void
helpline(const struct optset *s, const struct opt *o)
{
	const char *p = o->help, *nl;
	int n, pad, c = o->id > 0 && o->id < 256 ? o->id : 0;

	if (o->id == 0 && o->lname == NULL)     /* an operand */
		n = printf("  %s", o->argname);
	else
		n = printf("  %c%c%s%s%s%s%s", c ? '-' : ' ', c ? c : ' ',
		    c && o->lname ? ", " : o->lname ? "  " : "",
		    o->lname ? "--" : "", o->lname ? o->lname : "",
		    o->argname ? " " : "", o->argname ? o->argname : "");
	/* past the column: two spaces, or the text on the next line */
	pad = n < s->width ? s->width - n : 2;
	for (;;) {
		nl = strchr(p, '\n');
		if (nl != p)
			printf("%*s%.*s", pad, "", (int)(nl ? nl - p :
			    (ptrdiff_t)strlen(p)), p);
		putchar('\n');
		if (nl == NULL)
			break;
		p = nl + 1;
		pad = s->width;
	}
}

void
opt_usage(const struct optset *s, int code)
{
	const struct optset *m;
	const struct opt *o;

	fputs(s->usage, code ? stderr : stdout);
	if (code)
		exit(SPIRT_EX_USAGE);
	fputs("\n", stdout);
	if (s->pre)
		fputs(s->pre, stdout);
	for (m = s; m; m = m->more)
		for (o = m->opt; o->id || o->lname || o->argname || o->help;
		    o++)
			if (o->help)
				helpline(s, o);
	if (s->post)
		fputs(s->post, stdout);
	exit(fshut_stdout(0));
}
