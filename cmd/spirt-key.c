/* spirt-key.c - identities and member tokens (spirt-key(1)): keygen and
 * invite, what an operator runs offline; serving and exchanging are
 * spirt-peer's */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "key/keycmd.h"
#include "tool.h"

int
main(int argc, char **argv)
{
	progname = "spirt-key";
	checkfds();
	parent_watch();
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0))
		key_usage(0);
	if (argc == 2 && (strcmp(argv[1], "-V") == 0 ||
	    strcmp(argv[1], "--version") == 0))
		key_version();
	if (argc < 2 || argv[1][0] == '-')
		key_usage(1);
	return key_main(argc - 1, argv + 1);
}
