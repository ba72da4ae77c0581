/* store.h - the spirt tensor store: LMDB underneath, URL seam for peers */
#ifndef SPIRT_STORE_H
#define SPIRT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "spirt.h"
#include "tensor.h"

/*
 * A store is an LMDB environment in a directory (the tools' default
 * ./spirt.db, or $SPIRT_STORE) holding one named database of key -> tensor
 * record.  Keys are printable strings such as "model/mlp@12", "grad/12/3",
 * "agg/12"; see spirt-store(5).  A "http://[ID@]host:port" location names
 * a store served by a peer (spirt-peer serve), reached with the
 * credentials of spirt_cred_load() (lib/remote.h) from the configuration's
 * remote and a deadline of its timeout (default 30s) per request: values
 * are copies, writes are sent at commit, a
 * listing's values are valid during its callback only, and persist and
 * info are SPIRT_ENOTSUP; "https://" is SPIRT_ENOTSUP.
 *
 * Concurrency follows LMDB: any number of processes may open the same store
 * and read concurrently with one writer at a time; one struct spirt_store per
 * process; never carry one across fork(); one thread per transaction.  Every
 * open clears the reader slots of processes that died without closing
 * (mdb_reader_check), so readers killed by SIGKILL leave nothing behind.
 *
 * Map growth: the map starts at the configuration's mapsize (default
 * 1 GiB) and doubles when a write fills it, up to its mapsize_max (default
 * 1 TiB).  Growth
 * needs every transaction of this process closed, so writes that may grow go
 * through spirt_store_write(), which reruns the body after growing; one
 * called while another transaction of the store is open fails with
 * SPIRT_EBUG when it has to grow, rather than remap under that one.
 */

struct spirt_store;
struct spirt_txn;

/* spirt_store_open flags */
#define SPIRT_STORE_RDONLY 0x1  /* read-only: MDB_RDONLY */
#define SPIRT_STORE_CREATE 0x2  /* create the directory if missing */
#define SPIRT_STORE_NOSYNC 0x4  /* no fsync at commit (see spirt-store(5)) */

/* spirt_txn_begin flags */
#define SPIRT_TXN_RDONLY 0x1
/*
 * A volatile write transaction puts every key into the scratch environment
 * (see spirt-store(5)): visible to every reader at its commit, never
 * synced, gone after a reboot.  Reads of a key look in its own environment
 * first, then among the volatile values; its deletes leave the main
 * environment alone.  Its commit costs no sync.
 */
#define SPIRT_TXN_VOLATILE 0x2

/* put flags */
#define SPIRT_PUT_NOOVERWRITE 0x1       /* SPIRT_EEXIST if the key exists */

struct spirt_remote_conf;       /* lib/remote.h */

/*
 * What the tool resolved for every store the process opens (cmd/tool.h's
 * store_env(): $SPIRT_SYNC, $SPIRT_MAPSIZE, $SPIRT_MAPSIZE_MAX,
 * $SPIRT_TIMEOUT and a URL store's credentials); the library reads no
 * environment variable.  The strings are the variables' own words, checked
 * at each open: NULL or "" is the default, a bad one SPIRT_EENV.
 */
struct spirt_store_conf {
	const char *sync;               /* full (default), meta or none: see
					 * syncflags() in store.c */
	const char *mapsize;            /* the map's first size (1 GiB) */
	const char *mapsize_max;        /* its largest (1 TiB) */
	const char *timeout;            /* a URL store's deadline a request
					 * (30s, SPIRT_REMOTE_TIMEOUT_MS) */
	const struct spirt_remote_conf *remote; /* a URL store's credentials;
					 * NULL: none (SPIRT_EENV) */
};

/*
 * Set the configuration of the stores opened from now on (copied; what
 * its pointers reach must outlive them).  NULL: the defaults, which are
 * also in force until the first call.  Not thread-safe: once, before any
 * open, as the tool starts.
 */
void spirt_store_setconf(const struct spirt_store_conf *c);
/* The configuration in force (for the backends). */
const struct spirt_store_conf *spirt_store_getconf(void);

/* 1 if loc names a remote store (a URL), else 0. */
int spirt_store_is_url(const char *loc);

/*
 * Open the store at loc (a directory path or URL).  Without
 * SPIRT_STORE_CREATE a missing store is ENOENT.  With it, a store that
 * cannot be created (an empty loc, a missing parent directory, no
 * permission) is SPIRT_EOUTPUT(errno): 73, not 66.  Returns 0, errno, an
 * MDB_* code, SPIRT_ENOTSUP (https), SPIRT_EURL, SPIRT_EENV (a bad
 * configuration), or for a URL the codes of spirt_cred_load().
 */
SPIRT_MUST_CHECK int spirt_store_open(struct spirt_store **out,
    const char *loc, unsigned flags);
void spirt_store_close(struct spirt_store *s);
/*
 * The words of the last failure of a remote store in this process, if its
 * code was rc (names the URL, the key, the variable or file); NULL
 * otherwise.  Read once: it is cleared.  For tools' messages.
 */
const char *spirt_store_why(int rc);
/* Location as given to open. */
const char *spirt_store_location(const struct spirt_store *s);

SPIRT_MUST_CHECK int spirt_txn_begin(struct spirt_txn **out,
    struct spirt_store *s, unsigned flags);
SPIRT_MUST_CHECK int spirt_txn_commit(struct spirt_txn *t);
void spirt_txn_abort(struct spirt_txn *t);

/*
 * Run fn(txn, arg) in one write transaction and commit.  If the map fills
 * (a put, reserve or delete in fn returns SPIRT_EFULL, which fn passes
 * back, or the commit does), abort, grow the map and run fn again from
 * scratch, so fn must not keep state between calls other than through arg
 * it resets.  fn returning another non-zero code aborts the transaction
 * and that code is returned.  Returns 0, fn's code, SPIRT_EFULL (cannot
 * grow further), errno, MDB_*.
 */
SPIRT_MUST_CHECK int spirt_store_write(struct spirt_store *s,
    int (*fn)(struct spirt_txn *txn, void *arg), void *arg);

/* spirt_store_write() in a transaction begun with flags (SPIRT_TXN_*). */
SPIRT_MUST_CHECK int spirt_store_writef(struct spirt_store *s,
    unsigned flags, int (*fn)(struct spirt_txn *txn, void *arg), void *arg);

/*
 * Make the volatile values under prefix ("" for all) durable: copy them
 * into the main environment in one commit (a key already there keeps its
 * value), then drop them from the scratch one.  *n (out, may be NULL):
 * how many were copied.  Returns 0, errno or an MDB_* code.
 */
SPIRT_MUST_CHECK int spirt_store_persist(struct spirt_store *s,
    const char *prefix, size_t *n);

/* Keys are built, parsed and checked by keys.h (spirt_key_check()). */

/* Raw values.  Pointers from get are valid until the txn ends. */
SPIRT_MUST_CHECK int spirt_store_get(struct spirt_txn *t, const char *key,
    const void **val, size_t *len);
SPIRT_MUST_CHECK int spirt_store_put(struct spirt_txn *t, const char *key,
    const void *val, size_t len, unsigned flags);
/* Reserve len bytes for key and return where to write them (MDB_RESERVE). */
SPIRT_MUST_CHECK int spirt_store_reserve(struct spirt_txn *t, const char *key,
    size_t len, void **dst, unsigned flags);
/* SPIRT_ENOTFOUND if missing. */
SPIRT_MUST_CHECK int spirt_store_del(struct spirt_txn *t, const char *key);

/*
 * Delete every key <prefix><step> and <prefix><step>/... whose step (a
 * decimal number) is below `below`: spent versions and steps, such as
 * model/m@<t> or grad/<t>/<w>.  *n (out, may be NULL): how many went.
 * Returns 0, ENOMEM or a store error.
 */
SPIRT_MUST_CHECK int spirt_store_del_steps(struct spirt_txn *t,
    const char *prefix, uint64_t below, size_t *n);

/*
 * Call fn for each key starting with prefix ("" for all), in key order.
 * fn returning non-zero stops the walk; that value is returned.
 */
SPIRT_MUST_CHECK int spirt_store_list(struct spirt_txn *t, const char *prefix,
    int (*fn)(void *arg, const char *key, const void *val, size_t len),
    void *arg);

/*
 * Tensor values.  get decodes in place: *payload points into the map
 * (zero-copy) and is valid until the txn ends.  verify=1 also checks the
 * payload checksum.  put encodes straight into the map (MDB_RESERVE).
 */
SPIRT_MUST_CHECK int spirt_store_get_tensor(struct spirt_txn *t,
    const char *key, struct spirt_tensor *hdr, const void **payload,
    int verify);
SPIRT_MUST_CHECK int spirt_store_put_tensor(struct spirt_txn *t,
    const char *key, struct spirt_tensor *hdr, const void *payload,
    unsigned flags);

/* Put b (len bytes) at key as a u8 record (spirt-tensor(5)) of step,
 * with flags: beats, signed digests and rounds' records are these. */
SPIRT_MUST_CHECK int spirt_store_put_bytes(struct spirt_txn *t,
    const char *key, const void *b, size_t len, uint64_t step,
    unsigned flags) SPIRT_NONNULL(1, 2);

/* The bytes of the u8 record val (len bytes): *b, *n of them (pointing
 * into val).  Returns 0, the record's decoding errors or SPIRT_EDTYPE. */
SPIRT_MUST_CHECK int spirt_store_get_bytes(const void *val, size_t len,
    const void **b, size_t *n) SPIRT_NONNULL(3, 4);

/* Environment facts for spirt-store stat. */
struct spirt_store_info {
	uint64_t mapsize, used, entries, readers, maxreaders;
	unsigned psize;
};
SPIRT_MUST_CHECK int spirt_store_info(struct spirt_store *s,
    struct spirt_store_info *info);

#endif
