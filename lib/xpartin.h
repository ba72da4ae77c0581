/* xpartin.h - the partitioned exchange's insides, shared by its round
 * (xpart.c) and its checks (xcheck.c); no other file includes it */
#ifndef SPIRT_XPARTIN_H
#define SPIRT_XPARTIN_H

#include <stddef.h>
#include <stdint.h>

#include "aggstore.h"
#include "exchange.h"
#include "tensor.h"
#include "xpart.h"
#include "xpull.h"

#define say(x, rc, ...) spirt_msgf((x)->msg, sizeof (x)->msg, (rc), \
	__VA_ARGS__)
#define ULL(v) ((unsigned long long)(v))

/* the round's state: the members in id order, what each signed */
struct xr {
	struct spirt_exchange *x;
	size_t P, me;
	const char **ids;               /* P, ascending */
	struct spirt_xpart_rec *in;     /* P: input records */
	struct spirt_xpart_rec *res;    /* P: result records */
	/* the hash of the P ids in order, as a result record names them
	 * (spirt_xpart_members) */
	unsigned char members[SPIRT_HASH_BYTES];
	struct spirt_tensor agg;        /* this peer's aggregate, header */
	uint64_t n;
	/* P: slice me of member i (owned), its tensor record (its path
	 * climbed and dropped) */
	unsigned char **slice;
	size_t *slicelen;
	unsigned char **part;           /* P: part i (owned) */
	size_t *partlen;
	/* covers: the member before this one in the ring (pr), its own
	 * slice (pulled in step 2, in case this member covers it) and its
	 * result record as it came; late[i], member i's result or part did
	 * not come before the deadline (then its part is the cover's) */
	size_t pr;
	unsigned char *pred, *predrec;
	size_t predlen, predreclen;
	int *late;
	/* each phase's time, ms (phases[]), and when the one under way
	 * began */
	double ms[6], t0;
	/* the parts drawn for checks this round (P; NULL: no checks) */
	int *drawn;
	/* a check's slices, kept for a proof (xp_again() with want_sl) */
	int want_sl;
	unsigned char **ksl;
	size_t *ksllen;
	/* the transactions' own */
	unsigned char *buf;
	size_t buflen;
	char *round;
	size_t roundlen;
};


/* step 3: our part, the P slices combined (in id order, as the
 * all-to-all exchange combines whole aggregates), xpart/<t>, and the
 * result record xpart/<t>/signed naming its inputs and its hash */
struct combine {
	struct xr *r;
	struct spirt_aggset *s;
	char **keys;
	struct spirt_aggval *vals;
	unsigned char got[SPIRT_HASH_BYTES];    /* a check's result */
	unsigned char *val;                     /* and its bytes, if keep */
	size_t vlen;
	int keep;
};


/* whether a value pulled from member i is of another round of this step
 * (a record signed for other members: a member that has not yet run the
 * round again since the members changed); its error, to say after the
 * deadline */
typedef int (*stale_fn)(struct xr *r, size_t i, const struct spirt_xpull *u);

/* xpart.c: the record's bytes, the keys, the pulls, the checks of a
 * value, the aggregation set of a part (see each at its definition) */
size_t
xp_rec_pack(unsigned char *out, const struct spirt_xpart_rec *r);
size_t
xp_pos_of(const struct xr *r, const char *id);
int
xp_key_part(char *buf, size_t cap, uint64_t step, const char *id);
int
xp_value_ok(const struct xr *r, const void *v, size_t len, uint64_t want,
    struct spirt_tensor *h);
int
xp_pull_some(struct xr *r, struct spirt_xpull *u, spirt_xpull_key key,
    const char *id, const char *what, const int *want, int *late,
    stale_fn stale);
void
xp_part_aggset(struct spirt_aggset *s, const struct spirt_exchange *x,
    const struct spirt_aggval *vals);
void
xp_drop_kept(struct xr *r);
int
xp_slice_take(struct xr *r, size_t i, size_t k, const char *from,
    const void *v, size_t len, const void **sl, size_t *sllen);
int
xp_copy_id(struct xr *r, spirt_xpull_key fn, const char *id, unsigned char **out,
    size_t *len);
/* xcheck.c: part k recombined from the signed slices (a check or a
 * cover); the checks of a round, its verdicts */
int
xp_again(struct xr *r, struct spirt_xpull *u, size_t k, unsigned char *got,
    unsigned char **val, size_t *vlen);
int
xp_check(struct xr *r, struct spirt_xpull *u);
int
xp_key_slice(char *buf, size_t cap, uint64_t step, const char *id);
int
xp_key_coverslice(char *buf, size_t cap, uint64_t step, const char *id);

#endif
