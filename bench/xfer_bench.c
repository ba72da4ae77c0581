/* xfer_bench.c - one peer's pulls over one kept session (bench/peer.sh) */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "keys.h"
#include "parse.h"
#include "remote.h"
#include "tool.h"

/*
 * Usage: xfer_bench URL KEY N
 *
 * N gets of KEY from the peer at URL through one spirt_remote (one
 * handshake, one session, one connection kept alive), as a warm
 * `spirt-peer exchange --serve` pulls each step; credentials from
 * SPIRT_KEY, SPIRT_ID, SPIRT_RUN, SPIRT_ALLOW (or SPIRT_TOKEN,
 * SPIRT_GROUP).  Memory as the warm exchange has it: freed blocks stay
 * with the process.  Prints, per get, "ms bytes" (the first includes the
 * handshake), and exits 1 on any failure.
 */
int
main(int argc, char **argv)
{
	struct spirt_remote *r;
	struct spirt_remote_conf rconf;
	struct spirt_cred *c;
	char msg[600];
	uint64_t n;
	int rc;

	if (argc != 4 || spirt_parse_u64(&n, argv[3], 1, 1000000)) {
		fputs("usage: xfer_bench URL KEY N\n", stderr);
		return 64;
	}
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, -1);
	if ((rc = spirt_remote_global_init()) ||
	    (rc = spirt_cred_load(&c, remote_env(&rconf), 0, msg,
	    sizeof msg))) {
		fprintf(stderr, "xfer_bench: %s\n", rc ? msg : "");
		return 1;
	}
	if ((rc = spirt_remote_open(&r, argv[1], c, 60000))) {
		fprintf(stderr, "xfer_bench: %s: %s\n", argv[1],
		    spirt_strerror(rc));
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		double t = spirt_clock();
		void *v;
		size_t len;

		if ((rc = spirt_remote_get(r, spirt_key_wirestep(argv[2]),
		    argv[2], &v, &len))) {
			fprintf(stderr, "xfer_bench: %s\n",
			    spirt_remote_msg(r));
			return 1;
		}
		printf("%.3f %zu\n", 1e3 * (spirt_clock() - t), len);
		free(v);
	}
	spirt_remote_close(r);
	spirt_cred_free(c);
	spirt_remote_global_cleanup();
	return fflush(stdout) != 0;
}
