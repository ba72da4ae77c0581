/* metrics.h - a peer's figures as OpenMetrics text (GET /metrics) */
#ifndef SPIRT_METRICS_H
#define SPIRT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"
#include "store.h"

/* What the server counted since it started (peersrv.c keeps them). */
struct spirt_metrics_srv {
	uint64_t served, refused;
	const uint64_t *by_code;        /* [rc - SPIRT_EOF], SPIRT_ELAST -
					 * SPIRT_EOF of them */
	uint64_t bytes_in, bytes_out;   /* request bodies, answers */
	uint64_t sessions;              /* open now */
	uint64_t conns;                 /* connections open now */
};

/*
 * The OpenMetrics text (spirt-peer(1), "METRICS") of s's latest model
 * versions and latest round's record (gagg/<t>/round) and the server's
 * counts sv: *out, malloc'd, *len bytes.  Returns 0, ENOMEM or a store
 * error (a round's record that does not parse is left out, not an
 * error: the figures are for reading, the record is checked where it is
 * used).
 */
SPIRT_MUST_CHECK int spirt_metrics_text(char **out, size_t *len,
    struct spirt_store *s, const struct spirt_metrics_srv *sv)
    SPIRT_NONNULL(1, 2, 3, 4);

#endif
