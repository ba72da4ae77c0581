/* store.c - the tensor store over LMDB (ISC licence) */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/statvfs.h>

#include <lmdb.h>

#include "backend.h"
#include "io.h"
#include "keys.h"
#include "parse.h"
#include "store.h"

#define MAPSIZE_DEFAULT     ((uint64_t)1 << 30)    /* 1 GiB */
#define MAPSIZE_MAX_DEFAULT ((uint64_t)1 << 40)    /* 1 TiB */

/*
 * Backends: a store is either LMDB environments, here, or a peer's URL
 * served by spirt-peer (lib/store_http.c); every operation of a store
 * with a backend goes through its table (lib/backend.h).  A remote get
 * copies the value into a buffer owned by the transaction, so the "valid
 * until the txn ends" contract holds for both.
 *
 * Two environments.  Gradients and aggregates (keys grad/... and agg/...)
 * are recomputed bit for bit from the model and the data, so they live in
 * a scratch environment, <store>/scratch, whose commits are never synced:
 * a training step then pays for one durable commit (the update), not six.
 * A crashed process loses nothing there; a power loss or kernel crash may
 * leave it corrupt, so it is tagged with the kernel's boot id and emptied
 * when opened after a reboot.  Where no boot id can be read, the scratch
 * environment syncs like the main one.
 *
 * Volatile values.  A write transaction begun with SPIRT_TXN_VOLATILE puts
 * every key into the scratch environment, whatever its prefix: visible to
 * all at once, never synced, gone after a reboot.  spirt-update writes the
 * model versions between durable checkpoints so (--checkpoint).  A key of
 * the main environment is therefore looked up there first, then in
 * scratch; a listing merges both, the main value winning a duplicate; a
 * delete removes both copies, except in a volatile transaction, which
 * leaves the main environment alone.  spirt_store_persist() copies
 * volatile values into the main environment.
 */
#define MAIN 0
#define SCRATCH 1

struct env {
	MDB_env *env;
	MDB_dbi dbi;
};

struct spirt_store {
	struct env e[2];        /* e[SCRATCH].env is NULL without one */
	char *loc;
	unsigned flags;
	uint64_t mapmax;
	/* transactions open: growth needs none.  Atomic: transactions may
	 * be begun and ended in several threads at once (the exchange
	 * hashes its own values in one while its watcher reads in another) */
	atomic_uint ntxn;
	const struct spirt_backend *be; /* NULL: LMDB */
	void *bs;               /* the backend's store */
};

struct spirt_txn {
	struct spirt_store *s;
	MDB_txn *txn[2];        /* the scratch one begins on first use */
	unsigned rdonly;
	unsigned vol;           /* SPIRT_TXN_VOLATILE: writes go to scratch */
	void *bt;               /* the backend's transaction */
};

static struct spirt_store_conf conf;

void
spirt_store_setconf(const struct spirt_store_conf *c)
{
	static const struct spirt_store_conf none;

	conf = c ? *c : none;
}

const struct spirt_store_conf *
spirt_store_getconf(void)
{
	return &conf;
}

int
spirt_store_is_url(const char *loc)
{
	return !strncmp(loc, "http://", 7) || !strncmp(loc, "https://", 8);
}

/* a full map is SPIRT_EFULL above the store: no MDB_* code leaks */
static int
nofull(int rc)
{
	return rc == MDB_MAP_FULL ? SPIRT_EFULL : rc;
}

/* a size of the configuration, v (NULL or "": def) */
static int
confsize(const char *v, uint64_t def, uint64_t *out)
{
	*out = def;
	if (!v || !*v)
		return 0;
	return spirt_parse_size(out, v, 1 << 16, UINT64_MAX >> 1) ?
	    SPIRT_EENV : 0;
}

/*
 * Durability of commits: the configuration's sync ($SPIRT_SYNC) or the
 * NOSYNC open flag.
 *   full  LMDB's default: data and meta page synced at every commit.
 *   meta  MDB_NOMETASYNC: one sync per commit; a power loss may undo the
 *         last commit(s), never corrupts the store.
 *   none  MDB_NOSYNC: no sync; a crash of the process loses nothing, a
 *         power loss or kernel crash can lose recent commits and, as LMDB
 *         warns, may corrupt the store.
 */
static int
syncflags(unsigned *envflags, unsigned flags)
{
	const char *v = conf.sync;

	*envflags = 0;
	if (flags & SPIRT_STORE_NOSYNC)
		*envflags = MDB_NOSYNC;
	else if (!v || !*v || !strcmp(v, "full"))
		*envflags = 0;
	else if (!strcmp(v, "meta"))
		*envflags = MDB_NOMETASYNC;
	else if (!strcmp(v, "none"))
		*envflags = MDB_NOSYNC;
	else
		return SPIRT_EENV;
	return 0;
}

/* begin a txn on e, adopting a map another process grew */
static int
begin(MDB_txn **txn, struct env *e, unsigned rdonly)
{
	int rc;

	for (int tries = 0;; tries++) {
		rc = mdb_txn_begin(e->env, NULL, rdonly ? MDB_RDONLY : 0, txn);
		if (rc == MDB_MAP_RESIZED && tries < 100 &&
		    !mdb_env_set_mapsize(e->env, 0))
			continue;
		return rc;
	}
}

static int
env_open(struct env *e, const char *path, unsigned envflags,
    uint64_t mapsize)
{
	MDB_envinfo info;
	MDB_txn *txn;
	int rc, dead;

	if ((rc = mdb_env_create(&e->env)))
		return rc;
	/* many functions may read at once (xargs -P, FaaS runners) */
	if ((rc = mdb_env_set_maxreaders(e->env, 1022)) ||
	    (rc = mdb_env_open(e->env, path, envflags | MDB_NORDAHEAD, 0644)))
		goto fail;
	/*
	 * A reader killed by SIGKILL (a FaaS timeout) leaves its slot in the
	 * reader table while any other process keeps the store open; its old
	 * snapshot then pins pages and the slots run out.  LMDB clears such
	 * slots only when asked: every open asks.
	 */
	if ((rc = mdb_reader_check(e->env, &dead)))
		goto fail;
	/* keep a larger map another process already grew to */
	if ((rc = mdb_env_info(e->env, &info)))
		goto fail;
	if (info.me_mapsize < mapsize &&
	    (rc = mdb_env_set_mapsize(e->env, mapsize)))
		goto fail;
	if ((rc = begin(&txn, e, envflags & MDB_RDONLY)))
		goto fail;
	if ((rc = mdb_dbi_open(txn, NULL, 0, &e->dbi))) {
		mdb_txn_abort(txn);
		goto fail;
	}
	if ((rc = mdb_txn_commit(txn)))
		goto fail;
	return 0;
fail:
	mdb_env_close(e->env);
	e->env = NULL;
	return rc;
}

/* the kernel's boot id, or "" where there is none */
static void
bootid(char *buf, size_t n)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
	ssize_t r = fd < 0 ? -1 : spirt_readall(fd, buf, n - 1);

	if (fd >= 0)
		close(fd);
	buf[r > 0 ? r : 0] = '\0';
}

/*
 * Open <loc>/scratch.  Writers create it, and empty it when its boot id is
 * not this boot's (under a lock, so one process does that); readers use it
 * only when it is this boot's.
 */
static int
scratch_open(struct spirt_store *s, unsigned mainflags, uint64_t mapsize)
{
	size_t n = strlen(s->loc) + 32;
	char *dir = malloc(n), *f = malloc(n), boot[64], old[64];
	int rdonly = s->flags & SPIRT_STORE_RDONLY, lock = -1, fd, rc = 0;
	unsigned envflags;
	ssize_t r;

	if (!dir || !f) {
		rc = ENOMEM;
		goto out;
	}
	bootid(boot, sizeof boot);
	envflags = *boot ? MDB_NOSYNC : mainflags;
	snprintf(dir, n, "%s/scratch", s->loc);
	snprintf(f, n, "%s/scratch/boot", s->loc);
	if (!rdonly) {
		snprintf(f, n, "%s/scratch.lock", s->loc);
		if ((lock = open(f, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0 ||
		    flock(lock, LOCK_EX) < 0) {
			rc = errno;
			goto out;
		}
		snprintf(f, n, "%s/scratch/boot", s->loc);
	}
	old[0] = '\0';
	if ((fd = open(f, O_RDONLY | O_CLOEXEC)) >= 0) {
		r = spirt_readall(fd, old, sizeof old - 1);
		old[r > 0 ? r : 0] = '\0';
		close(fd);
	}
	if (strcmp(old, boot)) {
		if (rdonly)
			goto out;       /* not this boot's: as if absent */
		snprintf(f, n, "%s/scratch/data.mdb", s->loc);
		unlink(f);
		snprintf(f, n, "%s/scratch/lock.mdb", s->loc);
		unlink(f);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			rc = errno;
			goto out;
		}
		/*
		 * The environment first, then the tag: a reader that sees
		 * this boot's tag opens the environment read-only, which
		 * must then exist (its open of a missing data.mdb failed
		 * ENOENT: spirt-train after a reboot, 1 run in ~120 of
		 * tests/90-train "reboot").  Killed between the two, the
		 * next writer empties it again.
		 */
		if ((rc = env_open(&s->e[SCRATCH], dir, envflags, mapsize)))
			goto out;
		snprintf(f, n, "%s/scratch/boot", s->loc);
		{
			struct spirt_publish pub;
			if ((rc = spirt_publish_open(&pub, f, 0644))) {
				rc = SPIRT_ECAUSE(rc);  /* the store's own file */
				goto out;
			}
			if ((rc = spirt_writeall(pub.fd, boot, strlen(boot)))) {
				spirt_publish_abort(&pub);
				goto out;
			}
			if ((rc = spirt_publish_commit(&pub)))
				goto out;
		}
	} else {
		rc = env_open(&s->e[SCRATCH], dir, envflags |
		    (rdonly ? MDB_RDONLY : 0), mapsize);
	}
out:
	if (lock >= 0)
		close(lock);    /* releases the flock */
	free(dir);
	free(f);
	return rc;
}

static int
be_open(struct spirt_store **out, const struct spirt_backend *be,
    const char *loc, unsigned flags)
{
	struct spirt_store *s;
	int rc;

	if (!(s = calloc(1, sizeof *s)) || !(s->loc = strdup(loc))) {
		free(s);
		return ENOMEM;
	}
	atomic_init(&s->ntxn, 0);
	s->flags = flags;
	s->be = be;
	if ((rc = be->open(&s->bs, loc, flags))) {
		free(s->loc);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

const char *
spirt_store_why(int rc)
{
	return spirt_backend_http.why(rc);
}

int
spirt_store_open(struct spirt_store **out, const char *loc, unsigned flags)
{
	struct spirt_store *s;
	struct stat st;
	uint64_t mapsize;
	char *data = NULL;
	size_t n;
	unsigned envflags = 0;
	int rc, fresh, mk = (flags & SPIRT_STORE_CREATE) &&
	    !(flags & SPIRT_STORE_RDONLY);

	*out = NULL;
	if (strncmp(loc, "https://", 8) == 0)
		return SPIRT_ENOTSUP;   /* the protocol seals; TLS is not in */
	if (spirt_store_is_url(loc))
		return be_open(out, &spirt_backend_http, loc, flags);
	/* a store being created that cannot be: 73, not 66 (SPIRT_EOUTPUT) */
	if (!*loc)
		return mk ? SPIRT_EOUTPUT(ENOENT) : ENOENT;
	if (stat(loc, &st) < 0) {
		if (errno != ENOENT || !mk)
			return errno;
		if (mkdir(loc, 0755) < 0 && errno != EEXIST)
			return SPIRT_EOUTPUT(errno);
	} else if (!S_ISDIR(st.st_mode))
		return mk ? SPIRT_EOUTPUT(ENOTDIR) : ENOTDIR;
	/* an existing directory that holds no store is not one */
	n = strlen(loc) + sizeof "/data.mdb";
	if (!(data = malloc(n)))
		return ENOMEM;
	snprintf(data, n, "%s/data.mdb", loc);
	rc = stat(data, &st) < 0 ? errno : 0;
	free(data);
	if (rc && !mk)
		return rc;
	fresh = rc != 0;

	if (!(s = calloc(1, sizeof *s)) || !(s->loc = strdup(loc))) {
		free(s);
		return ENOMEM;
	}
	atomic_init(&s->ntxn, 0);
	s->flags = flags;
	if ((rc = confsize(conf.mapsize, MAPSIZE_DEFAULT, &mapsize)) ||
	    (rc = confsize(conf.mapsize_max, MAPSIZE_MAX_DEFAULT,
	    &s->mapmax)) || (rc = syncflags(&envflags, flags)))
		goto fail;
	if (s->mapmax < mapsize)
		s->mapmax = mapsize;
	if (flags & SPIRT_STORE_RDONLY)
		envflags |= MDB_RDONLY;
	if ((rc = env_open(&s->e[MAIN], loc, envflags, mapsize)) ||
	    (rc = scratch_open(s, envflags & ~MDB_RDONLY, mapsize)))
		goto fail;
	*out = s;
	return 0;
fail:
	spirt_store_close(s);
	/* no store was there, and none could be made (a read-only dir) */
	return fresh && rc > 0 ? SPIRT_EOUTPUT(rc) : rc;
}

void
spirt_store_close(struct spirt_store *s)
{
	if (!s)
		return;
	if (s->be)
		s->be->close(s->bs);
	for (int i = 0; i < 2; i++)
		if (s->e[i].env)
			mdb_env_close(s->e[i].env);
	free(s->loc);
	free(s);
}

const char *
spirt_store_location(const struct spirt_store *s)
{
	return s->loc;
}

int
spirt_txn_begin(struct spirt_txn **out, struct spirt_store *s,
    unsigned flags)
{
	struct spirt_txn *t;
	int rc;

	*out = NULL;
	if (!(flags & SPIRT_TXN_RDONLY) && (s->flags & SPIRT_STORE_RDONLY))
		return EROFS;
	if (!(t = calloc(1, sizeof *t)))
		return ENOMEM;
	t->s = s;
	t->rdonly = flags & SPIRT_TXN_RDONLY;
	t->vol = !t->rdonly && (flags & SPIRT_TXN_VOLATILE);
	if (s->be) {
		if ((rc = s->be->begin(&t->bt, s->bs, flags))) {
			free(t);
			return rc;
		}
		s->ntxn++;
		*out = t;
		return 0;
	}
	/* the main txn first, always: writers take the locks in one order */
	if ((rc = begin(&t->txn[MAIN], &s->e[MAIN], t->rdonly))) {
		free(t);
		return rc;
	}
	s->ntxn++;
	*out = t;
	return 0;
}

/* the environment a key lives in: scratch for spirt_key_volatile() */
static int
home(const struct spirt_txn *t, const char *key, size_t n)
{
	return t->s->e[SCRATCH].env && spirt_key_volatile(key, n) ? SCRATCH :
	    MAIN;
}

/* the txn and database of environment i; the scratch txn begins on first
 * use */
static int
envtxn(struct spirt_txn *t, int i, MDB_txn **txn, MDB_dbi *dbi)
{
	int rc;

	if (!t->txn[i] && (rc = begin(&t->txn[i], &t->s->e[i], t->rdonly)))
		return rc;
	*txn = t->txn[i];
	*dbi = t->s->e[i].dbi;
	return 0;
}

/* where a write of key goes: its home, or scratch in a volatile txn */
static int
route(struct spirt_txn *t, const char *key, size_t n, MDB_txn **txn,
    MDB_dbi *dbi)
{
	int i = home(t, key, n);

	if (t->vol && t->s->e[SCRATCH].env)
		i = SCRATCH;
	return envtxn(t, i, txn, dbi);
}

int
spirt_txn_commit(struct spirt_txn *t)
{
	int rc = 0;

	if (t->s->be) {
		rc = t->s->be->commit(t->bt);
		t->s->ntxn--;
		free(t);
		return rc;
	}
	/* scratch first: what the main commit announces is then in place */
	if (t->txn[SCRATCH])
		rc = mdb_txn_commit(t->txn[SCRATCH]);
	if (rc)
		mdb_txn_abort(t->txn[MAIN]);
	else
		rc = mdb_txn_commit(t->txn[MAIN]);
	t->s->ntxn--;
	free(t);
	return nofull(rc);
}

void
spirt_txn_abort(struct spirt_txn *t)
{
	if (!t)
		return;
	if (t->s->be)
		t->s->be->txn_abort(t->bt);
	for (int i = 0; i < 2; i++)
		if (t->txn[i])
			mdb_txn_abort(t->txn[i]);
	t->s->ntxn--;
	free(t);
}

/*
 * Double the maps, up to the limit.  No transaction may be open: remapping
 * under one leaves its pointers dangling (LMDB's mdb_env_set_mapsize()
 * contract), so a caller that holds one is a bug, said as SPIRT_EBUG
 * rather than left to chance.
 */
static int
grow(struct spirt_store *s)
{
	MDB_envinfo info;
	uint64_t want;
	int rc, grew = 0;

	if (atomic_load(&s->ntxn))
		return SPIRT_EBUG;

	for (int i = 0; i < 2; i++) {
		if (!s->e[i].env)
			continue;
		if ((rc = mdb_env_info(s->e[i].env, &info)))
			return rc;
		if (info.me_mapsize >= s->mapmax)
			continue;
		want = info.me_mapsize * 2;
		if (want > s->mapmax || want < info.me_mapsize)
			want = s->mapmax;
		if ((rc = mdb_env_set_mapsize(s->e[i].env, want)))
			return rc;
		grew = 1;
	}
	return grew ? 0 : SPIRT_EFULL;
}

/*
 * LMDB reports a short write as EIO; when the store's file system has no
 * room left, say so (ENOSPC) instead.
 */
static int
diskfull(const struct spirt_store *s, int rc)
{
	struct statvfs vf;

	if (rc != EIO || statvfs(s->loc, &vf) < 0)
		return rc;
	return (uint64_t)vf.f_bavail * vf.f_frsize < (1 << 20) ? ENOSPC : rc;
}

int
spirt_store_write(struct spirt_store *s,
    int (*fn)(struct spirt_txn *txn, void *arg), void *arg)
{
	return spirt_store_writef(s, 0, fn, arg);
}

int
spirt_store_writef(struct spirt_store *s, unsigned flags,
    int (*fn)(struct spirt_txn *txn, void *arg), void *arg)
{
	struct spirt_txn *t;
	int rc;

	for (;;) {
		if ((rc = spirt_txn_begin(&t, s, flags & SPIRT_TXN_VOLATILE)))
			return rc;
		if ((rc = nofull(fn(t, arg)))) {
			spirt_txn_abort(t);
			if (rc != SPIRT_EFULL)
				return diskfull(s, rc);
		} else if (!(rc = spirt_txn_commit(t)))
			return 0;
		else if (rc != SPIRT_EFULL)
			return diskfull(s, rc);
		if ((rc = grow(s)))
			return rc;
	}
}

static int
mkkey(MDB_val *k, const char *key)
{
	int rc;

	if ((rc = spirt_key_check(key)))
		return rc;
	k->mv_data = (void *)(uintptr_t)key;
	k->mv_size = strlen(key);
	return 0;
}

int
spirt_store_get(struct spirt_txn *t, const char *key, const void **val,
    size_t *len)
{
	MDB_val k, v;
	MDB_txn *txn;
	MDB_dbi dbi;
	int i, rc;

	if ((rc = mkkey(&k, key)))
		return rc;
	if (t->s->be)
		return t->s->be->get(t->bt, key, val, len);
	/* its home, then (a main key) a volatile copy in scratch */
	for (i = home(t, key, k.mv_size); i < 2; i++) {
		if (!t->s->e[i].env)
			break;
		if ((rc = envtxn(t, i, &txn, &dbi)))
			return rc;
		if ((rc = mdb_get(txn, dbi, &k, &v)) == 0) {
			*val = v.mv_data;
			*len = v.mv_size;
			return 0;
		}
		if (rc != MDB_NOTFOUND)
			return rc;
	}
	return SPIRT_ENOTFOUND;
}

static int
putflags(unsigned flags)
{
	return flags & SPIRT_PUT_NOOVERWRITE ? MDB_NOOVERWRITE : 0;
}

int
spirt_store_put(struct spirt_txn *t, const char *key, const void *val,
    size_t len, unsigned flags)
{
	MDB_val k, v;
	int rc;

	MDB_txn *txn;
	MDB_dbi dbi;

	if (t->s->be) {
		void *dst;

		if ((rc = spirt_store_reserve(t, key, len, &dst, flags)))
			return rc;
		if (len)
			memcpy(dst, val, len);
		return 0;
	}
	if ((rc = mkkey(&k, key)) || (rc = route(t, key, k.mv_size, &txn, &dbi)))
		return rc;
	v.mv_data = (void *)(uintptr_t)val;
	v.mv_size = len;
	rc = mdb_put(txn, dbi, &k, &v, putflags(flags));
	return rc == MDB_KEYEXIST ? SPIRT_EEXIST : nofull(rc);
}

int
spirt_store_reserve(struct spirt_txn *t, const char *key, size_t len,
    void **dst, unsigned flags)
{
	MDB_val k, v;
	int rc;

	MDB_txn *txn;
	MDB_dbi dbi;

	if (t->s->be)
		return (rc = mkkey(&k, key)) ? rc :
		    t->s->be->reserve(t->bt, key, len, dst, flags);
	if ((rc = mkkey(&k, key)) || (rc = route(t, key, k.mv_size, &txn, &dbi)))
		return rc;
	v.mv_data = NULL;
	v.mv_size = len;
	rc = mdb_put(txn, dbi, &k, &v, putflags(flags) | MDB_RESERVE);
	if (rc == MDB_KEYEXIST)
		return SPIRT_EEXIST;
	if (rc)
		return nofull(rc);
	*dst = v.mv_data;
	return 0;
}

int
spirt_store_del(struct spirt_txn *t, const char *key)
{
	MDB_val k;
	MDB_txn *txn;
	MDB_dbi dbi;
	int i, rc, found = 0;

	if ((rc = mkkey(&k, key)))
		return rc;
	if (t->s->be)
		return t->s->be->del(t->bt, key);
	/* both copies of a main key; a volatile txn leaves main alone, and a
	 * key there still counts as found */
	for (i = home(t, key, k.mv_size); i < 2; i++) {
		if (!t->s->e[i].env)
			break;
		if ((rc = envtxn(t, i, &txn, &dbi)))
			return rc;
		if (i == MAIN && t->vol && t->s->e[SCRATCH].env) {
			MDB_val v;

			rc = mdb_get(txn, dbi, &k, &v);
		} else {
			rc = mdb_del(txn, dbi, &k, NULL);
		}
		if (rc == 0)
			found = 1;
		else if (rc != MDB_NOTFOUND)
			return nofull(rc);
	}
	return found ? 0 : SPIRT_ENOTFOUND;
}

/* a cursor over one environment's keys that start with a prefix */
struct walk {
	MDB_cursor *c;
	MDB_val k, v;
	int rc;                 /* 0: at a key; MDB_NOTFOUND: done */
};

static void
walk_check(struct walk *w, const char *prefix, size_t plen)
{
	if (!w->rc && (w->k.mv_size < plen || memcmp(w->k.mv_data, prefix, plen)))
		w->rc = MDB_NOTFOUND;
}

static int
keycmp(const MDB_val *a, const MDB_val *b)
{
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	int c = memcmp(a->mv_data, b->mv_data, n);

	return c ? c : (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}

int
spirt_store_list(struct spirt_txn *t, const char *prefix,
    int (*fn)(void *arg, const char *key, const void *val, size_t len),
    void *arg)
{
	struct walk w[2] = { { NULL, { 0, NULL }, { 0, NULL }, MDB_NOTFOUND },
	    { NULL, { 0, NULL }, { 0, NULL }, MDB_NOTFOUND } };
	size_t plen = strlen(prefix);
	char buf[SPIRT_KEY_MAX + 1];
	int rc = 0;

	if (t->s->be)
		return t->s->be->list(t->bt, prefix, fn, arg);
	/* both environments' keys, merged in key order (scratch holds grad/,
	 * agg/ and volatile copies of any key) */
	for (int i = 0; i < 2; i++) {
		if (!t->s->e[i].env)
			continue;
		if (!t->txn[i] &&
		    (rc = begin(&t->txn[i], &t->s->e[i], t->rdonly)))
			goto out;
		if ((rc = mdb_cursor_open(t->txn[i], t->s->e[i].dbi, &w[i].c)))
			goto out;
		w[i].k.mv_data = (void *)(uintptr_t)prefix;
		w[i].k.mv_size = plen;
		w[i].rc = mdb_cursor_get(w[i].c, &w[i].k, &w[i].v,
		    plen ? MDB_SET_RANGE : MDB_FIRST);
		walk_check(&w[i], prefix, plen);
		if (w[i].rc && w[i].rc != MDB_NOTFOUND) {
			rc = w[i].rc;
			goto out;
		}
	}
	for (;;) {
		int i;
		if (w[0].rc && w[1].rc)
			break;
		i = w[0].rc ? 1 : w[1].rc ? 0 :
		    keycmp(&w[0].k, &w[1].k) <= 0 ? 0 : 1;
		if (i == 0 && !w[1].rc && keycmp(&w[0].k, &w[1].k) == 0) {
			/* a volatile copy of a main key: main's wins */
			w[1].rc = mdb_cursor_get(w[1].c, &w[1].k, &w[1].v,
			    MDB_NEXT);
			walk_check(&w[1], prefix, plen);
			if (w[1].rc && w[1].rc != MDB_NOTFOUND) {
				rc = w[1].rc;
				goto out;
			}
		}
		if (w[i].k.mv_size <= SPIRT_KEY_MAX) {  /* else not spirt's */
			memcpy(buf, w[i].k.mv_data, w[i].k.mv_size);
			buf[w[i].k.mv_size] = '\0';
			if ((rc = fn(arg, buf, w[i].v.mv_data, w[i].v.mv_size)))
				goto out;
		}
		w[i].rc = mdb_cursor_get(w[i].c, &w[i].k, &w[i].v, MDB_NEXT);
		walk_check(&w[i], prefix, plen);
		if (w[i].rc && w[i].rc != MDB_NOTFOUND) {
			rc = w[i].rc;
			goto out;
		}
	}
out:
	for (int i = 0; i < 2; i++)
		if (w[i].c)
			mdb_cursor_close(w[i].c);
	return rc;
}

struct steps {
	char *keys;             /* NUL-terminated keys back to back */
	size_t len, cap, n, plen;
	uint64_t below;
};

/* collect <prefix><step>[/...] keys with step < below */
static int
steps_fn(void *arg, const char *key, const void *val, size_t len)
{
	struct steps *d = arg;
	const char *p = key + d->plen;
	size_t k = strlen(key) + 1;
	uint64_t t = 0;

	(void)val;
	(void)len;
	if (*p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((t = t * 10 + (uint64_t)(*p - '0')) >= d->below)
			return 0;
	if (*p != '\0' && *p != '/')
		return 0;
	if (d->len + k > d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 4096;
		char *q;

		while (cap < d->len + k)
			cap *= 2;
		if ((q = realloc(d->keys, cap)) == NULL)
			return ENOMEM;
		d->keys = q;
		d->cap = cap;
	}
	memcpy(d->keys + d->len, key, k);
	d->len += k;
	d->n++;
	return 0;
}

int
spirt_store_del_steps(struct spirt_txn *t, const char *prefix,
    uint64_t below, size_t *n)
{
	struct steps d = { NULL, 0, 0, 0, strlen(prefix), below };
	int rc;

	/* collected first: a listing must not run over keys it deletes */
	rc = spirt_store_list(t, prefix, steps_fn, &d);
	for (size_t off = 0; rc == 0 && off < d.len;
	    off += strlen(d.keys + off) + 1)
		rc = spirt_store_del(t, d.keys + off);
	free(d.keys);
	if (n)
		*n = rc ? 0 : d.n;
	return rc;
}

struct persist {
	const char *prefix;
	size_t plen, n;
	int phase;              /* 1: copy into main; 2: drop scratch copies */
};

/* one pass over scratch's main keys under the prefix */
static int
persist_fn(struct spirt_txn *t, void *arg)
{
	struct persist *p = arg;
	MDB_txn *mt, *st;
	MDB_dbi md, sd;
	MDB_cursor *c;
	MDB_val k, v, mv;
	int rc;

	p->n = 0;
	if (!t->s->e[SCRATCH].env)
		return 0;
	if ((rc = envtxn(t, MAIN, &mt, &md)) ||
	    (rc = envtxn(t, SCRATCH, &st, &sd)) ||
	    (rc = mdb_cursor_open(st, sd, &c)))
		return rc;
	k.mv_data = (void *)(uintptr_t)p->prefix;
	k.mv_size = p->plen;
	rc = mdb_cursor_get(c, &k, &v, p->plen ? MDB_SET_RANGE : MDB_FIRST);
	for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < p->plen || memcmp(k.mv_data, p->prefix, p->plen))
			break;
		if (spirt_key_volatile(k.mv_data, k.mv_size))
			continue;       /* grad/, agg/, ...: scratch is home */
		rc = mdb_get(mt, md, &k, &mv);
		if (rc && rc != MDB_NOTFOUND)
			break;
		if (p->phase == 1 && rc == MDB_NOTFOUND) {
			if ((rc = mdb_put(mt, md, &k, &v, MDB_NOOVERWRITE)))
				break;
			p->n++;
		} else if (p->phase == 2 && rc == 0) {
			if ((rc = mdb_cursor_del(c, 0)))
				break;
			p->n++;
		}
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int
spirt_store_persist(struct spirt_store *s, const char *prefix, size_t *n)
{
	struct persist p = { prefix, strlen(prefix), 0, 1 };
	int rc;

	if (s->be)
		return SPIRT_ENOTSUP;   /* the peer's own business */
	/* first the durable copies, committed; only then the volatile ones
	 * go: a crash in between leaves both, and main's wins */
	if ((rc = spirt_store_writef(s, 0, persist_fn, &p)))
		return rc;
	if (n)
		*n = p.n;
	p.phase = 2;
	return spirt_store_writef(s, SPIRT_TXN_VOLATILE, persist_fn, &p);
}

int
spirt_store_get_tensor(struct spirt_txn *t, const char *key,
    struct spirt_tensor *hdr, const void **payload, int verify)
{
	const void *val;
	size_t len;
	int rc;

	if ((rc = spirt_store_get(t, key, &val, &len)))
		return rc;
	return spirt_tensor_decode(hdr, payload, val, len, verify);
}

int
spirt_store_put_tensor(struct spirt_txn *t, const char *key,
    struct spirt_tensor *hdr, const void *payload, unsigned flags)
{
	size_t len = spirt_tensor_reclen(hdr);
	void *dst;
	int rc;

	if ((rc = spirt_store_reserve(t, key, len, &dst, flags)))
		return rc;
	return spirt_tensor_encode(dst, len, hdr, payload);
}

int
spirt_store_put_bytes(struct spirt_txn *t, const char *key, const void *b,
    size_t len, uint64_t step, unsigned flags)
{
	struct spirt_tensor h;
	uint64_t dims[1] = { len };
	int rc;

	if ((rc = spirt_tensor_init(&h, SPIRT_U8, 1, dims)))
		return rc;
	h.step = step;
	return spirt_store_put_tensor(t, key, &h, b, flags);
}

int
spirt_store_get_bytes(const void *val, size_t len, const void **b, size_t *n)
{
	struct spirt_tensor h;
	int rc;

	if ((rc = spirt_tensor_decode(&h, b, val, len, 1)))
		return rc;
	if (h.dtype != SPIRT_U8 || h.rank != 1)
		return SPIRT_EDTYPE;
	*n = h.nbytes;
	return 0;
}

int
spirt_store_info(struct spirt_store *s, struct spirt_store_info *info)
{
	MDB_envinfo ei;
	MDB_stat st;
	MDB_txn *txn;
	int rc;

	memset(info, 0, sizeof *info);
	if (s->be)
		return SPIRT_ENOTSUP;
	for (int i = 0; i < 2; i++) {
		if (!s->e[i].env)
			continue;
		if ((rc = mdb_env_info(s->e[i].env, &ei)) ||
		    (rc = mdb_txn_begin(s->e[i].env, NULL, MDB_RDONLY, &txn)))
			return rc;
		rc = mdb_stat(txn, s->e[i].dbi, &st);
		mdb_txn_abort(txn);
		if (rc)
			return rc;
		if (i == MAIN) {
			info->mapsize = ei.me_mapsize;
			info->psize = st.ms_psize;
			info->readers = ei.me_numreaders;
			info->maxreaders = ei.me_maxreaders;
		}
		info->used += (uint64_t)(ei.me_last_pgno + 1) * st.ms_psize;
		info->entries += st.ms_entries;
	}
	return 0;
}
