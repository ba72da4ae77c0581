/* gradctx.h - the gradient context's insides, shared by grad.c and eval.c
 * only: no other file includes it (grad.h is the interface) */
#ifndef SPIRT_GRADCTX_H
#define SPIRT_GRADCTX_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "grad.h"
#include "model.h"
#include "store.h"
#include "tensor.h"

/*
 * A shard a worker reads (the store's: one per row of its list, whose
 * samples c->sel gives), or a run of a data file's pair: rows start..
 */
struct range {
	uint64_t shard, start, count;
	const void *x;          /* shard's samples (zero-copy) */
	int xdtype;             /* SPIRT_U8 or SPIRT_F32 */
	const void *y;          /* shard's labels, i32, maybe unaligned */
};

/* One x, y pair of a data file, read into memory. */
struct fpair {
	struct spirt_tensor tx, ty;
	void *x, *y;
};

struct spirt_grad_ctx {
	unsigned flags;
	struct spirt_model m;
	struct spirt_ws *ws;
	char wsspec[SPIRT_SPEC_MAX + 1];        /* spec ws was made for */
	size_t wsB;
	int wstrain;
	float *grad, *pcopy;
	size_t gcap, pcap;
	float *out;             /* spirt_grad_set_out(): the gradient's
				   place, room for ocap floats */
	size_t ocap;
	uint32_t *perm;         /* permutation cache: (seed, worker, epoch, N) */
	size_t permN;
	uint64_t permkey[3];
	int permvalid;
	struct range *r;
	size_t nr, rcap;
	struct spirt_batch sel; /* the store's batch: its samples, the
				   shards' orders they use */
	struct spirt_grad_sample *bat;  /* the last batch: its samples */
	const struct range **brange;    /* ... and their ranges */
	size_t nbat, batcap;
	int32_t *pred;
	size_t predcap;
	size_t nstate;          /* the last gradient's state: its floats */
	/* files instead of the store: spirt_grad_model_file, _data_file */
	char *mpath, *dpath;
	struct spirt_tensor mhdr;
	float *mparams;
	struct fpair *fp;
	size_t nfp;
	char where[320];
};


/* where a failure with code rc happened, for the tool; returns rc */
#define where(c, rc, ...) spirt_msgf((c)->where, sizeof (c)->where, (rc), \
	__VA_ARGS__)

/* Workspace for m's spec, batches up to B, with backward if train. */
SPIRT_MUST_CHECK int spirt_grad_ensure_ws(struct spirt_grad_ctx *c,
    const struct spirt_model *m, size_t B, int train);

/*
 * The model of name at step into c->m and *params: from the model file
 * if one is set, else model/<name>@<step> (zero-copy if aligned).
 */
SPIRT_MUST_CHECK int spirt_grad_load_model(struct spirt_grad_ctx *c,
    struct spirt_txn *txn, const char *name, uint64_t step,
    const float **params);

/*
 * The state of model name at step (mstate/<name>@<step>) into the
 * workspace, checked; a fresh one when the model comes from a file or
 * there is no store.  Nothing for a model without state.
 */
SPIRT_MUST_CHECK int spirt_grad_load_state(struct spirt_grad_ctx *c,
    struct spirt_txn *txn, const char *name, uint64_t step);

/* data/<ds>/info: nshards, nsamples, nclasses, features; checked
 * against c->m */
SPIRT_MUST_CHECK int spirt_grad_load_info(struct spirt_grad_ctx *c,
    struct spirt_txn *txn, const char *ds, int64_t info[4]);

/* Pair k of the data file (record 2k and 2k+1), checked. */
SPIRT_MUST_CHECK int spirt_grad_file_pair(struct spirt_grad_ctx *c, size_t k,
    struct range *r, uint64_t *n);

/* Shard k's samples (zero-copy) after checking they fit the model. */
SPIRT_MUST_CHECK int spirt_grad_load_shard(struct spirt_grad_ctx *c,
    struct spirt_txn *txn, const char *ds, uint64_t k, struct range *r,
    uint64_t *n);

/* Sample row of range r into x (nin floats) and its label into *y. */
void spirt_grad_fetch(float *x, int32_t *y, const struct range *r,
    uint64_t row, size_t nin);

#endif
