/* slot.h - gradient slots: a warm function's gradient handed over mapped */
#ifndef SPIRT_SLOT_H
#define SPIRT_SLOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spirt.h"
#include "tensor.h"

/*
 * A gradient slot is a file <store>/scratch/slot.<w>, one per worker w:
 * a header of SPIRT_SLOT_HDR bytes, then the gradient, f32 [nelem],
 * little-endian.  A warm spirt-grad asked for it (the request word
 * to=slot) computes its gradient straight into the slot, kept mapped,
 * instead of committing grad/<t>/<w>; the warm spirt-update's fused step
 * (mean=slots) maps the slots and takes their mean in its step's
 * transaction.  Nothing of a slot is durable, and nothing needs to be:
 * a gradient is a function of model@t, (t, w) and the seed, and model@t+1
 * stays the mark that step t was applied (docs/contracts.md).
 *
 * Header layout (spirt-store(5)), all little-endian:
 *
 *   0   magic "SPIRTSL1" (8; written last, zeroed before the payload)
 *   8   step (8)     16  origin, the worker (4)   20  flags, 0 (4)
 *   24  samples (8)  32  loss, f64 (8)            40  revision (8)
 *   48  nelem (8)    56  model: the payload checksum of the record of
 *                        model@t it was computed from (8)
 *   64  boot id (48, NUL-padded)                  112 name (256, NUL-padded)
 *   368 XXH3-64 of bytes 0..367 with the magic (8)
 *
 * The writer zeroes the magic, writes the payload, then the header with
 * the magic last, so a function killed at any instant leaves a slot
 * without a magic (no gradient), or a whole one.  The boot id makes a
 * slot of another boot (a power loss: pages of the file written back in
 * any order) no gradient either.
 */
#define SPIRT_SLOT_HDR   4096
#define SPIRT_SLOT_MAGIC "SPIRTSL1"
#define SPIRT_SLOT_USED  376            /* header bytes with the checksum */
#define SPIRT_SLOT_BOOT  48

/* The writer's slot, kept mapped between invocations. */
struct spirt_slot {
	int fd;                 /* -1: none */
	unsigned char *map;
	size_t len;             /* bytes mapped (the file's size) */
	uint32_t worker;
	char path[4096];        /* for messages */
};

/* Initialise sl (no slot). */
void spirt_slot_init(struct spirt_slot *sl) SPIRT_NONNULL(1);
/* Unmap and close sl's slot. */
void spirt_slot_close(struct spirt_slot *sl) SPIRT_NONNULL(1);

/*
 * Make sl worker's slot in directory dir, room for nelem floats: the file
 * created if missing, its blocks reserved with posix_fallocate (a full
 * disk is ENOSPC here, never SIGBUS later), mapped shared; kept when it
 * is already that worker's and big enough.  Its magic is then zeroed:
 * the slot holds no gradient until spirt_slot_finish().  Returns 0, or
 * errno with sl->path the file.
 */
SPIRT_MUST_CHECK int spirt_slot_begin(struct spirt_slot *sl, const char *dir,
    uint32_t worker, uint64_t nelem) SPIRT_NONNULL(1, 2);

/* The payload of sl's slot, room for the nelem floats begun with. */
float *spirt_slot_payload(struct spirt_slot *sl) SPIRT_NONNULL(1);

/*
 * Write the header of the gradient now in the payload: hdr's step,
 * origin, samples, loss, revision, nelem and name, model (the model
 * record's payload checksum), this boot's id; the magic last.  Returns 0
 * or SPIRT_EINVAL (hdr not f32, origin not sl's worker, nelem too big).
 */
SPIRT_MUST_CHECK int spirt_slot_finish(struct spirt_slot *sl,
    const struct spirt_tensor *hdr, uint64_t model) SPIRT_NONNULL(1, 2);

/*
 * Parse the slot of worker at map (len bytes, the file's size) into t (an
 * f32 [nelem] record header: name, step, origin, samples, loss, revision)
 * and *model; *payload points into map.  Returns 0; SPIRT_ENOTFOUND for
 * a slot that holds no gradient (an empty file, no magic: being written
 * or given up, or another boot's); SPIRT_ETRUNC (shorter than its header
 * says), SPIRT_EHEADER (its checksum, flags, a name not ended, a worker
 * not the file's), SPIRT_ESHAPE, SPIRT_EMODEL (no valid spec name) with a
 * message in msg.  The payload's values are not checked here.
 */
SPIRT_MUST_CHECK int spirt_slot_parse(struct spirt_tensor *t, uint64_t *model,
    const float **payload, const void *map, size_t len, uint32_t worker,
    char *msg, size_t cap) SPIRT_NONNULL(1, 2, 3, 7);

/*
 * The payload checksum of a stored record (its trailer's last 8 bytes),
 * what a slot's model field holds; 0 for a value too short to be one.
 */
uint64_t spirt_slot_record_sum(const void *rec, size_t len);

/*
 * The reader's side: every slot file of a directory, mapped read-only and
 * kept mapped from one step to the next (remapped when the file changes:
 * another inode or size).
 */
#define SPIRT_SLOT_MAXW 256
struct spirt_slotmap {
	uint32_t worker;
	dev_t dev;
	ino_t ino;
	size_t len;
	const void *map;        /* NULL for an empty file */
	int seen;               /* found by the last scan */
};
struct spirt_slotset {
	char dir[4096];
	size_t n;
	struct spirt_slotmap m[SPIRT_SLOT_MAXW];
};

/* Initialise ss for the slots in dir (no scan yet). */
void spirt_slotset_init(struct spirt_slotset *ss, const char *dir)
    SPIRT_NONNULL(1, 2);
/* Unmap every slot. */
void spirt_slotset_free(struct spirt_slotset *ss) SPIRT_NONNULL(1);

/*
 * Scan ss->dir for slot.<w> files (w decimal, no leading zero), mapping
 * new and changed ones, forgetting gone ones; ss->m[0..n) sorted by
 * worker.  A missing directory is no slot.  Returns 0, SPIRT_EINVAL (more
 * than SPIRT_SLOT_MAXW), errno, with msg set.
 */
SPIRT_MUST_CHECK int spirt_slotset_scan(struct spirt_slotset *ss, char *msg,
    size_t cap) SPIRT_NONNULL(1, 2);

#endif
