/* catchup.h - spirt-peer catch-up: a peer behind the others fetches the
 * model, optimiser state and model state of the step it joins at */
#ifndef SPIRT_CATCHUP_H
#define SPIRT_CATCHUP_H

#include "opt.h"

/* catch-up's option table, for spirt-peer's -h and parsing */
extern const struct opt catchup_opts[];

/*
 * argv[0] is "catch-up", argv[1..] its options and operands
 * (spirt-peer(1)), parsed with cli (catchup_opts and spirt-peer's usage);
 * returns the exit code, or exits (64 with the usage on a bad command
 * line).
 */
int catchup_main(const struct optset *cli, int argc, char **argv);

#endif
