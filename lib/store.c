/* store.c - the tensor store over LMDB (ISC licence) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <lmdb.h>

#include "parse.h"
#include "store.h"

#define MAPSIZE_DEFAULT     ((uint64_t)1 << 30)    /* 1 GiB */
#define MAPSIZE_MAX_DEFAULT ((uint64_t)1 << 40)    /* 1 TiB */

/*
 * The seam for remote stores: a store is either an LMDB environment or,
 * later, a peer's URL served by spirt-peer; every operation dispatches on
 * s->env.  A remote get will copy the value into a buffer owned by the
 * transaction, so the "valid until the txn ends" contract holds for both.
 */
struct spirt_store {
	MDB_env *env;
	MDB_dbi dbi;
	char *loc;
	unsigned flags;
	uint64_t mapmax;
};

struct spirt_txn {
	struct spirt_store *s;
	MDB_txn *txn;
};

const char *
spirt_store_default(void)
{
	const char *v = getenv("SPIRT_STORE");

	return v && *v ? v : "spirt.db";
}

int
spirt_store_is_url(const char *loc)
{
	return !strncmp(loc, "http://", 7) || !strncmp(loc, "https://", 8);
}

static int
envsize(const char *name, uint64_t def, uint64_t *out)
{
	const char *v = getenv(name);

	*out = def;
	if (!v || !*v)
		return 0;
	return spirt_parse_size(out, v, 1 << 16, UINT64_MAX >> 1) ?
	    SPIRT_EENV : 0;
}

/*
 * Durability of commits: $SPIRT_SYNC or the NOSYNC open flag.
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
	const char *v = getenv("SPIRT_SYNC");

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

int
spirt_store_open(struct spirt_store **out, const char *loc, unsigned flags)
{
	struct spirt_store *s;
	struct stat st;
	MDB_txn *txn;
	MDB_envinfo info;
	uint64_t mapsize;
	char *data = NULL;
	size_t n;
	unsigned envflags = 0;
	int rc;

	*out = NULL;
	if (spirt_store_is_url(loc))
		return SPIRT_ENOTSUP;
	if (!*loc)
		return ENOENT;
	if (stat(loc, &st) < 0) {
		if (errno != ENOENT || !(flags & SPIRT_STORE_CREATE) ||
		    (flags & SPIRT_STORE_RDONLY))
			return errno;
		if (mkdir(loc, 0755) < 0 && errno != EEXIST)
			return errno;
	} else if (!S_ISDIR(st.st_mode))
		return ENOTDIR;
	if (!(flags & SPIRT_STORE_CREATE)) {
		/* an existing directory that holds no store is not one */
		n = strlen(loc) + sizeof "/data.mdb";
		if (!(data = malloc(n)))
			return ENOMEM;
		snprintf(data, n, "%s/data.mdb", loc);
		rc = stat(data, &st) < 0 ? errno : 0;
		free(data);
		if (rc)
			return rc;
	}

	if (!(s = calloc(1, sizeof *s)) || !(s->loc = strdup(loc))) {
		free(s);
		return ENOMEM;
	}
	s->flags = flags;
	if ((rc = envsize("SPIRT_MAPSIZE", MAPSIZE_DEFAULT, &mapsize)) ||
	    (rc = envsize("SPIRT_MAPSIZE_MAX", MAPSIZE_MAX_DEFAULT,
	    &s->mapmax)))
		goto fail;
	if (s->mapmax < mapsize)
		s->mapmax = mapsize;
	if ((rc = mdb_env_create(&s->env)))
		goto fail;
	/* many functions may read at once (xargs -P, FaaS runners) */
	if ((rc = mdb_env_set_maxreaders(s->env, 1022)))
		goto fail;
	if ((rc = syncflags(&envflags, flags)))
		goto fail;
	if ((rc = mdb_env_open(s->env, loc, envflags |
	    (flags & SPIRT_STORE_RDONLY ? MDB_RDONLY : 0) | MDB_NORDAHEAD,
	    0644)))
		goto fail;
	/* keep a larger map another process already grew to */
	if ((rc = mdb_env_info(s->env, &info)))
		goto fail;
	if (info.me_mapsize < mapsize &&
	    (rc = mdb_env_set_mapsize(s->env, mapsize)))
		goto fail;
	/* another process may grow the map at any time: adopt its size */
	for (int tries = 0;; tries++) {
		rc = mdb_txn_begin(s->env, NULL,
		    flags & SPIRT_STORE_RDONLY ? MDB_RDONLY : 0, &txn);
		if (rc == MDB_MAP_RESIZED && tries < 100 &&
		    !mdb_env_set_mapsize(s->env, 0))
			continue;
		break;
	}
	if (rc)
		goto fail;
	if ((rc = mdb_dbi_open(txn, NULL, 0, &s->dbi))) {
		mdb_txn_abort(txn);
		goto fail;
	}
	if ((rc = mdb_txn_commit(txn)))
		goto fail;
	*out = s;
	return 0;
fail:
	if (s->env)
		mdb_env_close(s->env);
	free(s->loc);
	free(s);
	return rc;
}

void
spirt_store_close(struct spirt_store *s)
{
	if (!s)
		return;
	mdb_env_close(s->env);
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
	if (!(t = malloc(sizeof *t)))
		return ENOMEM;
	t->s = s;
	for (int tries = 0;; tries++) {
		rc = mdb_txn_begin(s->env, NULL,
		    flags & SPIRT_TXN_RDONLY ? MDB_RDONLY : 0, &t->txn);
		/* another process grew the map: adopt its size */
		if (rc == MDB_MAP_RESIZED && tries < 100 &&
		    !mdb_env_set_mapsize(s->env, 0))
			continue;
		break;
	}
	if (rc) {
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int
spirt_txn_commit(struct spirt_txn *t)
{
	int rc = mdb_txn_commit(t->txn);

	free(t);
	return rc;
}

void
spirt_txn_abort(struct spirt_txn *t)
{
	if (!t)
		return;
	mdb_txn_abort(t->txn);
	free(t);
}

/* Double the map, up to the limit.  No transaction may be open. */
static int
grow(struct spirt_store *s)
{
	MDB_envinfo info;
	uint64_t want;
	int rc;

	if ((rc = mdb_env_info(s->env, &info)))
		return rc;
	if (info.me_mapsize >= s->mapmax)
		return SPIRT_EFULL;
	want = info.me_mapsize * 2;
	if (want > s->mapmax || want < info.me_mapsize)
		want = s->mapmax;
	return mdb_env_set_mapsize(s->env, want);
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
	struct spirt_txn *t;
	int rc;

	for (;;) {
		if ((rc = spirt_txn_begin(&t, s, 0)))
			return rc;
		if ((rc = fn(t, arg))) {
			spirt_txn_abort(t);
			if (rc != MDB_MAP_FULL)
				return diskfull(s, rc);
		} else if (!(rc = spirt_txn_commit(t)))
			return 0;
		else if (rc != MDB_MAP_FULL)
			return diskfull(s, rc);
		if ((rc = grow(s)))
			return rc;
	}
}

int
spirt_key_check(const char *key)
{
	size_t n = 0;

	for (; key[n]; n++)
		if (key[n] <= ' ' || key[n] > '~')
			return SPIRT_EKEY;
	return n == 0 || n > SPIRT_KEY_MAX ? SPIRT_EKEY : 0;
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
	int rc;

	if ((rc = mkkey(&k, key)))
		return rc;
	rc = mdb_get(t->txn, t->s->dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return SPIRT_ENOTFOUND;
	if (rc)
		return rc;
	*val = v.mv_data;
	*len = v.mv_size;
	return 0;
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

	if ((rc = mkkey(&k, key)))
		return rc;
	v.mv_data = (void *)(uintptr_t)val;
	v.mv_size = len;
	rc = mdb_put(t->txn, t->s->dbi, &k, &v, putflags(flags));
	return rc == MDB_KEYEXIST ? SPIRT_EEXIST : rc;
}

int
spirt_store_reserve(struct spirt_txn *t, const char *key, size_t len,
    void **dst, unsigned flags)
{
	MDB_val k, v;
	int rc;

	if ((rc = mkkey(&k, key)))
		return rc;
	v.mv_data = NULL;
	v.mv_size = len;
	rc = mdb_put(t->txn, t->s->dbi, &k, &v,
	    putflags(flags) | MDB_RESERVE);
	if (rc == MDB_KEYEXIST)
		return SPIRT_EEXIST;
	if (rc)
		return rc;
	*dst = v.mv_data;
	return 0;
}

int
spirt_store_del(struct spirt_txn *t, const char *key)
{
	MDB_val k;
	int rc;

	if ((rc = mkkey(&k, key)))
		return rc;
	rc = mdb_del(t->txn, t->s->dbi, &k, NULL);
	return rc == MDB_NOTFOUND ? SPIRT_ENOTFOUND : rc;
}

int
spirt_store_list(struct spirt_txn *t, const char *prefix,
    int (*fn)(void *arg, const char *key, const void *val, size_t len),
    void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	size_t plen = strlen(prefix);
	char buf[SPIRT_KEY_MAX + 1];
	int rc;

	if ((rc = mdb_cursor_open(t->txn, t->s->dbi, &c)))
		return rc;
	k.mv_data = (void *)(uintptr_t)prefix;
	k.mv_size = plen;
	rc = plen ? mdb_cursor_get(c, &k, &v, MDB_SET_RANGE) :
	    mdb_cursor_get(c, &k, &v, MDB_FIRST);
	for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen))
			break;
		if (k.mv_size > SPIRT_KEY_MAX)
			continue;       /* not written by spirt */
		memcpy(buf, k.mv_data, k.mv_size);
		buf[k.mv_size] = '\0';
		if ((rc = fn(arg, buf, v.mv_data, v.mv_size)))
			break;
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
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
spirt_store_info(struct spirt_store *s, struct spirt_store_info *info)
{
	MDB_envinfo ei;
	MDB_stat st;
	MDB_txn *txn;
	int rc;

	if ((rc = mdb_env_info(s->env, &ei)) ||
	    (rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)))
		return rc;
	rc = mdb_stat(txn, s->dbi, &st);
	mdb_txn_abort(txn);
	if (rc)
		return rc;
	info->mapsize = ei.me_mapsize;
	info->psize = st.ms_psize;
	info->used = (uint64_t)(ei.me_last_pgno + 1) * st.ms_psize;
	info->entries = st.ms_entries;
	info->readers = ei.me_numreaders;
	info->maxreaders = ei.me_maxreaders;
	return 0;
}
