/* peers.h - spirt-peer peers: the peers file's lines, and what a driver
 * of line I needs of them */
#ifndef SPIRT_PEERS_H
#define SPIRT_PEERS_H

#include <stddef.h>

#include "keys.h"
#include "opt.h"

/* a line of the peers file: "id location", or "id location spare" (a
 * slot that joins a running group) */
struct peerline {
	char id[SPIRT_KEY_ID_MAX + 1];
	char loc[4096];
	int spare;
};

/*
 * The peers of the file at path, in its order, into *pl (*n of them,
 * free *pl): "id location" lines (then "spare" or nothing), '#'
 * comments and blank lines skipped.
 * Dies with 65 for a line that is not "id location" (what, named, the
 * operand's name in messages), 66 when it cannot be read.
 */
void peers_read(const char *what, const char *path, struct peerline **pl,
    size_t *n);
/* peers_read's reading, its failure not fatal: 0, or the exit code
 * (65, 66, 71) with the message (no program name) in msg */
int peers_load(const char *what, const char *path, struct peerline **pl,
    size_t *n, char *msg, size_t cap);

/* peers' option table, for spirt-peer's -h and parsing */
extern const struct opt peers_opts[];

/*
 * argv[0] is "peers", argv[1..] its options (spirt-peer(1)), parsed with
 * cli; returns the exit code, or exits (64 with the usage on a bad
 * command line).
 */
int peers_main(const struct optset *cli, int argc, char **argv);

#endif
