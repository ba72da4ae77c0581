/*
 * peers.c - spirt-peer peers: what the driver of line I of a peers file
 * needs of it (spirt-train: the members, its own id and location, the
 * others'), read once, as sh assignments; and the reading of the file
 * that catch-up -P shares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "peers.h"
#include "tool.h"

enum { PEER = 256 };

const struct opt peers_opts[] = {
	{ 0, NULL, "peers", "line I of FILE and the others, as sh "
	    "assignments" },
	{ 'P', "peers", "FILE", "the members, \"id location [spare]\" "
	    "lines" },
	{ PEER, "peer", "I", "this peer is line I of FILE" },
	{ 'h', "help", NULL, NULL },
	{ 0 }
};

int
peers_load(const char *what, const char *path, struct peerline **pl,
    size_t *n, char *msg, size_t cap)
{
	char *buf, *line, *next, fmt[32];
	size_t len, lcap = 0, no = 0;
	int rc;

	*pl = NULL;
	*n = 0;
	if ((rc = spirt_readfile(path, (void **)&buf, &len)) != 0) {
		snprintf(msg, cap, "%s %s: cannot read it: %s", what, path,
		    errcause(rc));
		return spirt_exit(rc);
	}
	snprintf(fmt, sizeof fmt, "%%%zus %%%zus %%7s %%1s",
	    sizeof (*pl)->id - 1, sizeof (*pl)->loc - 1);
	for (line = buf; line < buf + len; line = next) {
		size_t ll = strcspn(line, "\n");
		struct peerline p, *npl;
		char extra[8], more[2];
		int f;

		next = line + ll + (line + ll < buf + len);
		line[ll] = '\0';
		no++;
		line += strspn(line, " \t\r");
		if (*line == '\0' || *line == '#')
			continue;
		/* (a third word: "spare", a slot that joins a running
		 * group) */
		f = sscanf(line, fmt, p.id, p.loc, extra, more);
		if ((f != 2 && (f != 3 || strcmp(extra, "spare") != 0)) ||
		    spirt_key_id_check(p.id) != 0) {
			snprintf(msg, cap, "%s %s: line %zu: \"%s\": expected "
			    "\"id location\"", what, path, no, line);
			rc = SPIRT_EX_DATAERR;
			break;
		}
		p.spare = f == 3;
		if (*n == lcap) {
			lcap = lcap ? 2 * lcap : 8;
			if (!(npl = realloc(*pl, lcap * sizeof **pl))) {
				snprintf(msg, cap, "%s: %s", path,
				    errcause(ENOMEM));
				rc = spirt_exit(ENOMEM);
				break;
			}
			*pl = npl;
		}
		(*pl)[(*n)++] = p;
	}
	free(buf);
	if (rc != 0) {
		free(*pl);
		*pl = NULL;
		*n = 0;
	}
	return rc;
}

void
peers_read(const char *what, const char *path, struct peerline **pl,
    size_t *n)
{
	char msg[16384];
	int code;

	if ((code = peers_load(what, path, pl, n, msg, sizeof msg)) != 0)
		die(code, "%s", msg);
}

/* NAME='S', S quoted for sh */
static void
assign(const char *name, const char *s)
{
	printf("%s='", name);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	fputs("'\n", stdout);
}

/* NAME='W W ...': field f of each line but line self (f 0: its id and
 * its line number, ID:N; 1: its location; 2: its location, if http://;
 * 3: its id, if spare) */
static void
others(const char *name, const struct peerline *pl, size_t n, size_t self,
    int f)
{
	size_t len = 0;
	char *s;

	for (size_t i = 0; i < n; i++)
		len += strlen(pl[i].id) + strlen(pl[i].loc) + 24;
	s = emalloc(len + 1);
	s[0] = '\0';
	len = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == self || (f == 2 &&
		    strncmp(pl[i].loc, "http://", 7) != 0) ||
		    (f == 3 && !pl[i].spare))
			continue;
		if (f == 0)
			len += (size_t)sprintf(s + len, "%s%s:%zu",
			    len ? " " : "", pl[i].id, i);
		else
			len += (size_t)sprintf(s + len, "%s%s",
			    len ? " " : "", f == 3 ? pl[i].id : pl[i].loc);
	}
	assign(name, s);
	free(s);
}

int
peers_main(const struct optset *cli, int argc, char **argv)
{
	struct peerline *pl;
	const char *path = NULL;
	int64_t peer = -1;
	size_t n;
	int ch;

	optind = 1;
	while ((ch = opt_next(cli, argc, argv)) != -1)
		switch (ch) {
		case 'P': path = optarg; break;
		case PEER: peer = eparse_i64("--peer", optarg, 0, 1 << 20);
			break;
		default: opt_usage(cli, SPIRT_EX_USAGE);
		}
	if (!path || peer < 0 || argc != optind)
		opt_usage(cli, SPIRT_EX_USAGE);
	peers_read("--peers", path, &pl, &n);
	if (n == 0)
		die(SPIRT_EX_DATAERR, "--peers %s: no peer in it", path);
	if ((size_t)peer >= n)
		die(SPIRT_EX_USAGE, "--peer %lld: %s has %zu peers (0 to %zu)",
		    (long long)peer, path, n, n - 1);
	printf("np=%zu\n", n);
	assign("self", pl[peer].id);
	assign("selfurl", pl[peer].loc);
	others("others", pl, n, (size_t)peer, 1);
	others("urls", pl, n, (size_t)peer, 2);
	others("oids", pl, n, (size_t)peer, 0);
	/* (and, when a line says spare, the spares) */
	for (size_t i = 0; i < n; i++)
		if (pl[i].spare) {
			others("spares", pl, n, (size_t)peer, 3);
			printf("selfspare=%d\n", pl[peer].spare);
			break;
		}
	free(pl);
	return fshut_stdout(SPIRT_EX_OK);
}
