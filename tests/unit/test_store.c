/* test_store.c - LMDB tensor store: put/get/list/del, growth, processes */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store.h"

static char dir[256];

struct w {
	const char *key;
	struct spirt_tensor *t;
	const float *x;
	int n;          /* how many keys: key0..keyN-1 */
};

static int
put_many(struct spirt_txn *txn, void *arg)
{
	struct w *a = arg;
	char key[64];
	int rc;

	for (int i = 0; i < a->n; i++) {
		snprintf(key, sizeof key, "%s%d", a->key, i);
		if ((rc = spirt_store_put_tensor(txn, key, a->t, a->x, 0)))
			return rc;
	}
	return 0;
}

static int
count(void *arg, const char *key, const void *val, size_t len)
{
	(void)key; (void)val; (void)len;
	++*(int *)arg;
	return 0;
}

static void
basics(void)
{
	struct spirt_store *s;
	struct spirt_txn *txn;
	struct spirt_tensor t, u;
	uint64_t dims[1] = { 256 };
	float x[256];
	const void *pl;
	int n;

	for (int i = 0; i < 256; i++)
		x[i] = (float)i;
	CHECK_EQ_RC(spirt_store_open(&s, dir, 0), ENOENT);
	/* a peer's URL: the HTTP backend, which needs credentials */
	CHECK_EQ_RC(spirt_store_open(&s, "http://127.0.0.1:1/", 0),
	    SPIRT_EENV);
	CHECK(spirt_store_why(SPIRT_EENV) != NULL);
	CHECK_EQ_RC(spirt_store_open(&s, "https://127.0.0.1:1/", 0),
	    SPIRT_ENOTSUP);
	CHECK_RC(spirt_store_open(&s, dir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, dims));
	t.step = 3;
	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "grad/3/0", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "grad/3/1", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "grad/30/0", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@3", &t, x, 0));
	CHECK_EQ_RC(spirt_store_put_tensor(txn, "model/m@3", &t, x,
	    SPIRT_PUT_NOOVERWRITE), SPIRT_EEXIST);
	CHECK_EQ_RC(spirt_store_put_tensor(txn, "bad key", &t, x, 0),
	    SPIRT_EKEY);
	CHECK_EQ_RC(spirt_store_put_tensor(txn, "", &t, x, 0), SPIRT_EKEY);
	CHECK_RC(spirt_txn_commit(txn));

	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_RC(spirt_store_get_tensor(txn, "grad/3/1", &u, &pl, 1));
	CHECK(u.step == 3 && u.nelem == 256 && !memcmp(pl, x, sizeof x));
	/* zero-copy: large values sit in the map, 8-byte aligned */
	CHECK(spirt_aligned(pl, SPIRT_F32));
	CHECK_EQ_RC(spirt_store_get_tensor(txn, "grad/3/9", &u, &pl, 1),
	    SPIRT_ENOTFOUND);
	n = 0;
	CHECK_RC(spirt_store_list(txn, "grad/3/", count, &n));
	CHECK(n == 2);
	n = 0;
	CHECK_RC(spirt_store_list(txn, "", count, &n));
	CHECK(n == 4);
	spirt_txn_abort(txn);

	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	CHECK_RC(spirt_store_del(txn, "grad/30/0"));
	CHECK_EQ_RC(spirt_store_del(txn, "grad/30/0"), SPIRT_ENOTFOUND);
	spirt_txn_abort(txn);   /* the delete never happened */
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_RC(spirt_store_get_tensor(txn, "grad/30/0", &u, &pl, 1));
	spirt_txn_abort(txn);
	spirt_store_close(s);

	CHECK_RC(spirt_store_open(&s, dir, SPIRT_STORE_RDONLY));
	CHECK_EQ_RC(spirt_txn_begin(&txn, s, 0), EROFS);
	spirt_store_close(s);
}

/* several processes write one store at once; every write lands */
static void
processes(void)
{
	struct spirt_store *s;
	struct spirt_txn *txn;
	int n = 0, status;
	pid_t kids[4];

	for (int k = 0; k < 4; k++) {
		if ((kids[k] = fork()) == 0) {
			uint64_t dims[1] = { 1000 };
			struct spirt_tensor t;
			float x[1000] = { 0 };
			char key[32];
			struct w a = { key, &t, x, 25 };
			int rc;
			/* a fresh environment per process, never inherited */
			if ((rc = spirt_store_open(&s, dir, 0)))
				_exit(2);
			if (spirt_tensor_init(&t, SPIRT_F32, 1, dims))
				_exit(3);
			for (int r = 0; r < 5; r++) {
				snprintf(key, sizeof key, "proc/%d/%d/", k, r);
				if ((rc = spirt_store_write(s, put_many, &a)))
					_exit(4);
			}
			spirt_store_close(s);
			_exit(0);
		}
	}
	for (int k = 0; k < 4; k++) {
		CHECK(waitpid(kids[k], &status, 0) == kids[k]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK_RC(spirt_store_open(&s, dir, SPIRT_STORE_RDONLY));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_RC(spirt_store_list(txn, "proc/", count, &n));
	CHECK(n == 4 * 5 * 25);
	spirt_txn_abort(txn);
	spirt_store_close(s);
}

/* the map's first and largest sizes of the stores opened next (NULL:
 * the defaults), as a tool hands them from SPIRT_MAPSIZE(_MAX) */
static void
mapsizes(const char *size, const char *max)
{
	struct spirt_store_conf c = { NULL, size, max, NULL, NULL };

	spirt_store_setconf(&c);
}

/* several processes grow the map at once and keep opening and reading */
static void
concurrent_growth(void)
{
	char gdir[300];
	pid_t kids[4];
	int status;

	snprintf(gdir, sizeof gdir, "%s-cgrow", dir);
	mapsizes("256k", NULL);
	for (int k = 0; k < 4; k++) {
		if ((kids[k] = fork()) == 0) {
			uint64_t dims[1] = { 64 * 1024 };       /* 256 KiB */
			struct spirt_tensor t, u;
			struct spirt_store *s;
			struct spirt_txn *txn;
			float *x = calloc(64 * 1024, 4);
			char key[32];
			struct w a = { key, &t, x, 2 };
			const void *pl;
			if (spirt_tensor_init(&t, SPIRT_F32, 1, dims))
				_exit(3);
			for (int r = 0; r < 12; r++) {
				/* a fresh open each round, as cold tools do */
				if (spirt_store_open(&s, gdir, SPIRT_STORE_CREATE))
					_exit(2);
				snprintf(key, sizeof key, "g/%d/%d/", k, r);
				if (spirt_store_write(s, put_many, &a))
					_exit(4);
				if (spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY))
					_exit(5);
				snprintf(key, sizeof key, "g/%d/%d/1", k, r);
				if (spirt_store_get_tensor(txn, key, &u, &pl, 1))
					_exit(6);
				spirt_txn_abort(txn);
				spirt_store_close(s);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 4; k++) {
		CHECK(waitpid(kids[k], &status, 0) == kids[k]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (WIFEXITED(status) && WEXITSTATUS(status))
			fprintf(stderr, "child %d: exit %d\n", k,
			    WEXITSTATUS(status));
	}
	mapsizes(NULL, NULL);
}

struct keys {
	char buf[256];
	size_t len;
};

static int
collect(void *arg, const char *key, const void *val, size_t len)
{
	struct keys *k = arg;
	int n = snprintf(k->buf + k->len, sizeof k->buf - k->len, "%s ", key);

	(void)val; (void)len;
	if (n > 0)
		k->len += (size_t)n;
	return 0;
}

/*
 * grad/ and agg/ keys live in <store>/scratch, unsynced, and are dropped
 * after a reboot (a boot id that is not this boot's); listing merges both.
 */
static void
scratch(void)
{
	char sdir[300], f[340];
	struct spirt_store *s;
	struct spirt_txn *txn;
	struct spirt_tensor t, u;
	uint64_t dims[1] = { 4 };
	float x[4] = { 1, 2, 3, 4 };
	const void *pl;
	struct keys k = { "", 0 };
	FILE *fp;

	snprintf(sdir, sizeof sdir, "%s-scratch", dir);
	CHECK_RC(spirt_store_open(&s, sdir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, dims));
	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@1", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "grad/1/0", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "agg/1", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "data/d/info", &t, x, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "opt/m@1", &t, x, 0));
	CHECK_RC(spirt_txn_commit(txn));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_RC(spirt_store_list(txn, "", collect, &k));
	CHECK(!strcmp(k.buf, "agg/1 data/d/info grad/1/0 model/m@1 opt/m@1 "));
	if (strcmp(k.buf, "agg/1 data/d/info grad/1/0 model/m@1 opt/m@1 "))
		fprintf(stderr, "listed: %s\n", k.buf);
	k.len = 0;
	k.buf[0] = 0;
	CHECK_RC(spirt_store_list(txn, "g", collect, &k));
	CHECK(!strcmp(k.buf, "grad/1/0 "));
	CHECK_RC(spirt_store_get_tensor(txn, "grad/1/0", &u, &pl, 1));
	spirt_txn_abort(txn);
	spirt_store_close(s);
	/* the gradient is in the scratch environment, not the main one */
	snprintf(f, sizeof f, "%s/scratch/data.mdb", sdir);
	CHECK(access(f, F_OK) == 0);

	/* another boot's scratch is invisible to readers, emptied by writers */
	snprintf(f, sizeof f, "%s/scratch/boot", sdir);
	CHECK((fp = fopen(f, "w")) != NULL);
	if (fp) {
		fputs("some-other-boot", fp);
		fclose(fp);
	}
	CHECK_RC(spirt_store_open(&s, sdir, SPIRT_STORE_RDONLY));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_EQ_RC(spirt_store_get_tensor(txn, "grad/1/0", &u, &pl, 1),
	    SPIRT_ENOTFOUND);
	CHECK_RC(spirt_store_get_tensor(txn, "model/m@1", &u, &pl, 1));
	spirt_txn_abort(txn);
	spirt_store_close(s);
	CHECK_RC(spirt_store_open(&s, sdir, 0));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_EQ_RC(spirt_store_get_tensor(txn, "agg/1", &u, &pl, 1),
	    SPIRT_ENOTFOUND);
	CHECK_RC(spirt_store_get_tensor(txn, "opt/m@1", &u, &pl, 1));
	spirt_txn_abort(txn);
	spirt_store_close(s);
}

/* the float value of a one-element tensor key, -1 if missing */
static float
value(struct spirt_txn *txn, const char *key)
{
	struct spirt_tensor u;
	const void *pl;
	float v;

	if (spirt_store_get_tensor(txn, key, &u, &pl, 1))
		return -1;
	memcpy(&v, pl, sizeof v);
	return v;
}

static void
reboot(const char *sdir)
{
	char f[340];
	FILE *fp;

	snprintf(f, sizeof f, "%s/scratch/boot", sdir);
	CHECK((fp = fopen(f, "w")) != NULL);
	if (fp) {
		fputs("some-other-boot", fp);
		fclose(fp);
	}
}

/*
 * A volatile write puts main keys into scratch: found by get and list (the
 * main copy winning), deleted only there by a volatile txn, gone after a
 * reboot unless persisted first.
 */
static void
volatile_values(void)
{
	char sdir[300];
	struct spirt_store *s;
	struct spirt_txn *txn;
	struct spirt_tensor t;
	uint64_t dims[1] = { 1 };
	float one = 1, two = 2, three = 3;
	struct keys k = { "", 0 };
	size_t n;

	snprintf(sdir, sizeof sdir, "%s-volatile", dir);
	CHECK_RC(spirt_store_open(&s, sdir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, dims));
	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@1", &t, &one, 0));
	CHECK_RC(spirt_txn_commit(txn));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_VOLATILE));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@2", &t, &two, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@3", &t, &three, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@1", &t, &three, 0));
	/* a volatile delete keeps main's value */
	CHECK_RC(spirt_store_del(txn, "model/m@1"));
	CHECK_EQ_RC(spirt_store_del(txn, "model/m@9"), SPIRT_ENOTFOUND);
	CHECK_RC(spirt_txn_commit(txn));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK(value(txn, "model/m@1") == 1);
	CHECK(value(txn, "model/m@2") == 2);
	CHECK(value(txn, "model/m@3") == 3);
	CHECK_RC(spirt_store_list(txn, "model/", collect, &k));
	CHECK(!strcmp(k.buf, "model/m@1 model/m@2 model/m@3 "));
	spirt_txn_abort(txn);

	/* main wins a duplicate, listed once */
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_VOLATILE));
	CHECK_RC(spirt_store_put_tensor(txn, "model/m@1", &t, &three, 0));
	CHECK_RC(spirt_txn_commit(txn));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK(value(txn, "model/m@1") == 1);
	k.len = 0;
	k.buf[0] = 0;
	CHECK_RC(spirt_store_list(txn, "", collect, &k));
	CHECK(!strcmp(k.buf, "model/m@1 model/m@2 model/m@3 "));
	spirt_txn_abort(txn);

	/* a durable delete removes both copies */
	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	CHECK_RC(spirt_store_del(txn, "model/m@1"));
	CHECK_RC(spirt_txn_commit(txn));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK(value(txn, "model/m@1") == -1);
	spirt_txn_abort(txn);

	/* persist model/m@2 only; a reboot then drops model/m@3 */
	CHECK_RC(spirt_store_persist(s, "model/m@2", &n));
	CHECK(n == 1);
	CHECK_RC(spirt_store_persist(s, "model/m@2", &n));
	CHECK(n == 0);
	spirt_store_close(s);
	reboot(sdir);
	CHECK_RC(spirt_store_open(&s, sdir, 0));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK(value(txn, "model/m@2") == 2);
	CHECK(value(txn, "model/m@3") == -1);
	spirt_txn_abort(txn);

	/* persist everything: several keys in a row all move */
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_VOLATILE));
	CHECK_RC(spirt_store_put_tensor(txn, "opt/m@4", &t, &one, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "opt/m@5", &t, &two, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "opt/m@6", &t, &three, 0));
	CHECK_RC(spirt_store_put_tensor(txn, "grad/4/0", &t, &one, 0));
	CHECK_RC(spirt_txn_commit(txn));
	CHECK_RC(spirt_store_persist(s, "", &n));
	CHECK(n == 3);
	spirt_store_close(s);
	reboot(sdir);
	CHECK_RC(spirt_store_open(&s, sdir, 0));
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK(value(txn, "opt/m@4") == 1);
	CHECK(value(txn, "opt/m@5") == 2);
	CHECK(value(txn, "opt/m@6") == 3);
	CHECK(value(txn, "grad/4/0") == -1);   /* scratch is its home */
	spirt_txn_abort(txn);
	spirt_store_close(s);
}

/* spirt_store_del_steps: <prefix><step>[/...] below a step, in both
 * environments, nothing else */
static void
del_steps(void)
{
	static const char *const keys[] = { "grad/1/0", "grad/1/1", "grad/2",
	    "grad/3/0", "grad/1x", "grad/x", "grad/", "grad/10/0",
	    "model/m@1", "model/m@2", "model/m@12", "model/mm@1" };
	char sdir[300];
	struct spirt_store *s;
	struct spirt_txn *txn;
	struct spirt_tensor t;
	uint64_t dims[1] = { 1 };
	float one = 1;
	struct keys k = { "", 0 };
	size_t n;

	snprintf(sdir, sizeof sdir, "%s-steps", dir);
	CHECK_RC(spirt_store_open(&s, sdir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, dims));
	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		CHECK_RC(spirt_store_put_tensor(txn, keys[i], &t, &one, 0));
	CHECK_RC(spirt_store_del_steps(txn, "grad/", 3, &n));
	CHECK(n == 3);
	CHECK_RC(spirt_store_del_steps(txn, "model/m@", 12, &n));
	CHECK(n == 2);
	CHECK_RC(spirt_store_del_steps(txn, "opt/m@", 12, &n));
	CHECK(n == 0);
	CHECK_RC(spirt_store_list(txn, "", collect, &k));
	CHECK(!strcmp(k.buf, "grad/ grad/10/0 grad/1x grad/3/0 grad/x "
	    "model/m@12 model/mm@1 "));
	if (strcmp(k.buf, "grad/ grad/10/0 grad/1x grad/3/0 grad/x "
	    "model/m@12 model/mm@1 "))
		fprintf(stderr, "left: %s\n", k.buf);
	CHECK_RC(spirt_txn_commit(txn));
	spirt_store_close(s);
}

/* a fresh store "<dir>-<suffix>" whose map starts at mapsize and may
 * grow to 64 MiB (the sizes are read at open) */
static struct spirt_store *
small_store(const char *suffix, const char *mapsize)
{
	char gdir[300];
	struct spirt_store *s = NULL;

	snprintf(gdir, sizeof gdir, "%s-%s", dir, suffix);
	mapsizes(mapsize, "64M");
	CHECK_RC(spirt_store_open(&s, gdir, SPIRT_STORE_CREATE));
	mapsizes(NULL, NULL);
	return s;
}

/* the map grows when full; at its limit the error is clear, data intact */
static void
growth(void)
{
	struct spirt_store *s;
	struct spirt_store_info info;
	struct spirt_txn *txn;
	struct spirt_tensor t, u;
	uint64_t dims[1] = { 256 * 1024 };      /* 1 MiB */
	float *x = calloc(256 * 1024, 4);
	const void *pl;
	struct w a = { "big/", &t, x, 8 };
	int n = 0;

	s = small_store("grow", "1M");
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, dims));
	CHECK_RC(spirt_store_write(s, put_many, &a));
	CHECK_RC(spirt_store_info(s, &info));
	CHECK(info.mapsize >= 8 << 20 && info.mapsize <= 64 << 20);
	/* 80 MiB more cannot fit under a 64 MiB limit: nothing of it lands */
	a.key = "huge/";
	a.n = 80;
	CHECK_EQ_RC(spirt_store_write(s, put_many, &a), SPIRT_EFULL);
	/* a put that fills the map says SPIRT_EFULL, no MDB_* code: the
	 * body of a spirt_store_write() (spirt-update's) tells it so */
	CHECK_RC(spirt_txn_begin(&txn, s, 0));
	CHECK_EQ_RC(put_many(txn, &a), SPIRT_EFULL);
	spirt_txn_abort(txn);
	CHECK_RC(spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY));
	CHECK_RC(spirt_store_list(txn, "huge/", count, &n));
	CHECK(n == 0);
	CHECK_RC(spirt_store_get_tensor(txn, "big/7", &u, &pl, 1));
	spirt_txn_abort(txn);
	spirt_store_close(s);
	free(x);
}

/* transactions of one store begun and ended in two threads at once (the
 * exchange: its own hashes in one, its watcher's reads in another) */
static void *
reader(void *arg)
{
	struct spirt_store *s = arg;
	struct spirt_txn *txn;
	const void *v;
	size_t len;

	for (int i = 0; i < 20000; i++) {
		int rc;

		if (spirt_txn_begin(&txn, s, SPIRT_TXN_RDONLY))
			return (void *)1;
		rc = spirt_store_get(txn, "big/0", &v, &len);
		spirt_txn_abort(txn);
		if (rc)
			return (void *)1;
	}
	return NULL;
}

/* ... and then none is open: the map can grow (a count of open ones
 * that lost an update in the race would refuse it, SPIRT_EBUG) */
static void
threads(void)
{
	struct spirt_store *s;
	struct spirt_tensor t;
	uint64_t dims[1] = { 256 * 1024 };      /* 1 MiB */
	float *x = calloc(256 * 1024, 4);
	struct w a = { "big/", &t, x, 1 };
	pthread_t th[2];
	void *r0 = NULL, *r1 = NULL;

	s = small_store("threads", "2M");
	CHECK_RC(spirt_tensor_init(&t, SPIRT_F32, 1, dims));
	CHECK_RC(spirt_store_write(s, put_many, &a));
	CHECK(pthread_create(&th[0], NULL, reader, s) == 0);
	CHECK(pthread_create(&th[1], NULL, reader, s) == 0);
	pthread_join(th[0], &r0);
	pthread_join(th[1], &r1);
	CHECK(r0 == NULL && r1 == NULL);
	/* 8 MiB more: past the 2 MiB map, so it grows */
	a.key = "more/";
	a.n = 8;
	CHECK_RC(spirt_store_write(s, put_many, &a));
	spirt_store_close(s);
	free(x);
}

/* model and data set names: the one rule every -m goes through */
static void
names(void)
{
	static const char *const good[] = { "m", "mlp", "cnn-2.b_3", "A9",
	    "a.", "x..y" };
	static const char *const bad[] = { "", ".", "..", ".hidden", "x@1",
	    "a/b", "a b", "a\tb", "caf\xc3\xa9", "m:1" };
	char lng[SPIRT_NAME_PART_MAX + 2];

	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		CHECK_RC(spirt_name_check(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK_EQ_RC(spirt_name_check(bad[i]), SPIRT_EKEY);
	memset(lng, 'a', sizeof lng - 1);
	lng[sizeof lng - 1] = '\0';
	CHECK_EQ_RC(spirt_name_check(lng), SPIRT_EKEY);        /* 256 */
	lng[SPIRT_NAME_PART_MAX] = '\0';
	CHECK_RC(spirt_name_check(lng));                        /* 255 */
}

int
main(void)
{
	char tmpl[] = "/tmp/spirt-test-store.XXXXXX";
	char cmd[400];

	if (!mkdtemp(tmpl))
		return 1;
	snprintf(dir, sizeof dir, "%s/db", tmpl);
	names();
	basics();
	processes();
	concurrent_growth();
	scratch();
	volatile_values();
	del_steps();
	growth();
	threads();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		return 1;
	CHECK_DONE();
}
