/* slot.c - gradient slots: a warm function's gradient handed over mapped */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "io.h"
#include "le.h"
#include "slot.h"

#define say(rc, ...) spirt_msgf(msg, cap, (rc), __VA_ARGS__)

/* this boot's id, read once ("" where there is none) */
static const char *
boot(void)
{
	static char id[SPIRT_SLOT_BOOT];
	static int done;
	ssize_t r;
	int fd;

	if (done)
		return id;
#ifdef SPIRT_FUZZ
	/* (the fuzzers' build: an empty id, which an input can hold) */
	done = 1;
	return id;
#endif
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	r = fd < 0 ? -1 : spirt_readall(fd, id, sizeof id - 1);
	if (fd >= 0)
		close(fd);
	id[r > 0 ? r : 0] = '\0';
	id[strcspn(id, "\n")] = '\0';
	done = 1;
	return id;
}

uint64_t
spirt_slot_record_sum(const void *rec, size_t len)
{
	return len < SPIRT_TENSOR_TRAILER ? 0 :
	    spirt_le_get64((const unsigned char *)rec + len - 8);
}

/* ---- the writer ---- */

void
spirt_slot_init(struct spirt_slot *sl)
{
	sl->fd = -1;
	sl->map = NULL;
	sl->len = 0;
	sl->worker = 0;
	sl->path[0] = '\0';
}

void
spirt_slot_close(struct spirt_slot *sl)
{
	if (sl->map != NULL)
		munmap(sl->map, sl->len);
	if (sl->fd >= 0)
		close(sl->fd);
	spirt_slot_init(sl);
}

int
spirt_slot_begin(struct spirt_slot *sl, const char *dir, uint32_t worker,
    uint64_t nelem)
{
	_Atomic uint64_t *magic;
	uint64_t need;
	struct stat st;
	int rc;

	if (nelem > (UINT64_MAX - SPIRT_SLOT_HDR) / 4 ||
	    (need = SPIRT_SLOT_HDR + 4 * nelem) > SIZE_MAX)
		return EFBIG;
	if (sl->fd >= 0 && (sl->worker != worker || sl->len < need))
		spirt_slot_close(sl);
	if (sl->fd < 0) {
		snprintf(sl->path, sizeof sl->path, "%s/slot.%lu", dir,
		    (unsigned long)worker);
		if ((sl->fd = open(sl->path, O_RDWR | O_CREAT | O_CLOEXEC,
		    0644)) < 0)
			return errno;
		sl->worker = worker;
		if (fstat(sl->fd, &st) < 0) {
			rc = errno;
			goto fail;
		}
		/* the blocks reserved, so no store into the map can fault
		 * on a full disk (SIGBUS) */
		if ((uint64_t)st.st_size < need &&
		    (rc = posix_fallocate(sl->fd, 0, (off_t)need)) != 0)
			goto fail;
		sl->len = (uint64_t)st.st_size < need ? (size_t)need :
		    (size_t)st.st_size;
		sl->map = mmap(NULL, sl->len, PROT_READ | PROT_WRITE,
		    MAP_SHARED, sl->fd, 0);
		if (sl->map == MAP_FAILED) {
			sl->map = NULL;
			rc = errno;
			goto fail;
		}
	}
	magic = (_Atomic uint64_t *)(void *)sl->map;
	atomic_store_explicit(magic, 0, memory_order_release);
	return 0;
fail:
	close(sl->fd);
	sl->fd = -1;
	return rc;
}

float *
spirt_slot_payload(struct spirt_slot *sl)
{
	return (float *)(void *)(sl->map + SPIRT_SLOT_HDR);
}

int
spirt_slot_finish(struct spirt_slot *sl, const struct spirt_tensor *hdr,
    uint64_t model)
{
	unsigned char *h = sl->map, m[8];
	size_t n = strlen(hdr->name);
	uint64_t mv;

	if (sl->map == NULL || hdr->dtype != SPIRT_F32 || hdr->rank != 1 ||
	    hdr->origin != sl->worker || n >= 256 ||
	    SPIRT_SLOT_HDR + 4 * hdr->nelem > sl->len)
		return SPIRT_EINVAL;
	memset(h + 8, 0, SPIRT_SLOT_USED - 8);
	spirt_le_put64(h + 8, hdr->step);
	spirt_le_put32(h + 16, hdr->origin);
	spirt_le_put64(h + 24, hdr->samples);
	memcpy(&mv, &hdr->loss, 8);
	spirt_le_put64(h + 32, mv);
	spirt_le_put64(h + 40, hdr->revision);
	spirt_le_put64(h + 48, hdr->nelem);
	spirt_le_put64(h + 56, model);
	memcpy(h + 64, boot(), strlen(boot()));
	memcpy(h + 112, hdr->name, n);
	/* the checksum covers the magic as it will stand */
	memcpy(m, SPIRT_SLOT_MAGIC, 8);
	{
		unsigned char buf[SPIRT_SLOT_USED - 8];

		memcpy(buf, m, 8);
		memcpy(buf + 8, h + 8, sizeof buf - 8);
		spirt_le_put64(h + SPIRT_SLOT_USED - 8,
		    XXH3_64bits(buf, sizeof buf));
	}
	/* the magic last: every byte before it is in place first */
	memcpy(&mv, m, 8);
	atomic_store_explicit((_Atomic uint64_t *)(void *)h, mv,
	    memory_order_release);
	return 0;
}

/* ---- the reader ---- */

int
spirt_slot_parse(struct spirt_tensor *t, uint64_t *model,
    const float **payload, const void *map, size_t len, uint32_t worker,
    char *msg, size_t cap)
{
	const unsigned char *h = map;
	unsigned char buf[SPIRT_SLOT_USED - 8];
	uint64_t mv, nelem, rev;
	char name[257];
	int rc;

	msg[0] = '\0';
	if (len == 0)
		return SPIRT_ENOTFOUND;         /* made, nothing written */
	if (len < SPIRT_SLOT_HDR)
		return say(SPIRT_ETRUNC, "%zu bytes, shorter than its header",
		    len);
	mv = atomic_load_explicit((const _Atomic uint64_t *)map,
	    memory_order_acquire);
	memcpy(buf, &mv, 8);
	if (memcmp(buf, SPIRT_SLOT_MAGIC, 8) != 0)
		return SPIRT_ENOTFOUND;         /* being written, given up */
	memcpy(buf + 8, h + 8, sizeof buf - 8);
#ifndef SPIRT_FUZZ
	if (XXH3_64bits(buf, sizeof buf) !=
	    spirt_le_get64(h + SPIRT_SLOT_USED - 8))
		return say(SPIRT_EHEADER, "header checksum mismatch");
#endif
	if (memchr(h + 64, '\0', SPIRT_SLOT_BOOT) == NULL ||
	    memchr(h + 112, '\0', 256) == NULL)
		return say(SPIRT_EHEADER, "boot id or name not ended");
	if (strcmp((const char *)h + 64, boot()) != 0)
		return SPIRT_ENOTFOUND;         /* another boot's */
	if (spirt_le_get32(h + 20) != 0)
		return say(SPIRT_EHEADER, "unknown flags %#x",
		    spirt_le_get32(h + 20));
	if (spirt_le_get32(h + 16) != worker)
		return say(SPIRT_EHEADER, "worker %lu's gradient, not %lu",
		    (unsigned long)spirt_le_get32(h + 16),
		    (unsigned long)worker);
	nelem = spirt_le_get64(h + 48);
	if (nelem > (len - SPIRT_SLOT_HDR) / 4)
		return say(SPIRT_ETRUNC, "%zu bytes, its header says %llu "
		    "values", len, (unsigned long long)nelem);
	memcpy(name, h + 112, 256);
	name[256] = '\0';
	if ((rc = spirt_tensor_init(t, SPIRT_F32, 1, &nelem)) != 0)
		return say(SPIRT_ESHAPE, "%llu values",
		    (unsigned long long)nelem);
	if (name[0] == '\0' || spirt_tensor_set_name(t, name) != 0)
		return say(SPIRT_EMODEL, "no model spec in its name");
	t->step = spirt_le_get64(h + 8);
	t->origin = worker;
	t->samples = spirt_le_get64(h + 24);
	mv = spirt_le_get64(h + 32);
	memcpy(&t->loss, &mv, 8);
	rev = spirt_le_get64(h + 40);
	spirt_tensor_set_revision(t, rev);
	*model = spirt_le_get64(h + 56);
	*payload = (const float *)(const void *)(h + SPIRT_SLOT_HDR);
	return 0;
}

void
spirt_slotset_init(struct spirt_slotset *ss, const char *dir)
{
	snprintf(ss->dir, sizeof ss->dir, "%s", dir);
	ss->n = 0;
}

static void
unmap(struct spirt_slotmap *m)
{
	if (m->map != NULL)
		munmap((void *)(uintptr_t)m->map, m->len);
	m->map = NULL;
}

void
spirt_slotset_free(struct spirt_slotset *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		unmap(&ss->m[i]);
	ss->n = 0;
}

/* "slot.<w>": w, or -1 */
static long
slotname(const char *s)
{
	char *end;
	unsigned long v;

	if (strncmp(s, "slot.", 5) != 0 || s[5] < '0' || s[5] > '9' ||
	    (s[5] == '0' && s[6] != '\0'))
		return -1;
	errno = 0;
	v = strtoul(s + 5, &end, 10);
	if (*end != '\0' || errno || v >= UINT32_MAX)
		return -1;
	return (long)v;
}

/* map (or keep) worker w's file; *m is its entry */
static int
mapone(struct spirt_slotset *ss, struct spirt_slotmap *m, uint32_t w,
    int fresh, char *msg, size_t cap)
{
	char path[sizeof ss->dir + 32];
	struct stat st;
	void *p;
	int fd, rc;

	snprintf(path, sizeof path, "%s/slot.%lu", ss->dir, (unsigned long)w);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return ENOENT;
		return say(errno, "%s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		rc = errno;
		close(fd);
		return say(rc, "%s: %s", path, strerror(rc));
	}
	if (!fresh && m->dev == st.st_dev && m->ino == st.st_ino &&
	    m->len == (size_t)st.st_size) {
		close(fd);
		return 0;
	}
	if (!fresh)
		unmap(m);
	m->worker = w;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->len = (size_t)st.st_size;
	m->map = NULL;
	if (m->len > 0) {
		p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			rc = errno;
			close(fd);
			m->len = 0;
			return say(rc, "%s: %s", path, strerror(rc));
		}
		m->map = p;
	}
	close(fd);
	return 0;
}

int
spirt_slotset_scan(struct spirt_slotset *ss, char *msg, size_t cap)
{
	struct spirt_slotmap t;
	struct dirent *d;
	DIR *dp;
	size_t i, j;
	long w;
	int rc = 0;

	msg[0] = '\0';
	for (i = 0; i < ss->n; i++)
		ss->m[i].seen = 0;
	if ((dp = opendir(ss->dir)) == NULL)
		return errno == ENOENT ? (spirt_slotset_free(ss), 0) :
		    say(errno, "%s: %s", ss->dir, strerror(errno));
	while (rc == 0 && (d = readdir(dp)) != NULL) {
		if ((w = slotname(d->d_name)) < 0)
			continue;
		for (i = 0; i < ss->n && ss->m[i].worker != (uint32_t)w; i++)
			;
		if (i == ss->n && ss->n == SPIRT_SLOT_MAXW) {
			rc = say(SPIRT_EINVAL, "%s: more than %d slots",
			    ss->dir, SPIRT_SLOT_MAXW);
			break;
		}
		rc = mapone(ss, &ss->m[i], (uint32_t)w, i == ss->n, msg, cap);
		if (rc == ENOENT) {             /* gone meanwhile */
			rc = 0;
			continue;
		}
		if (rc == 0) {
			ss->m[i].seen = 1;
			if (i == ss->n)
				ss->n++;
		}
	}
	closedir(dp);
	/* the gone ones forgotten, the rest by worker */
	for (i = j = 0; i < ss->n; i++) {
		if (!ss->m[i].seen)
			unmap(&ss->m[i]);
		else
			ss->m[j++] = ss->m[i];
	}
	ss->n = j;
	for (i = 1; i < ss->n; i++) {
		t = ss->m[i];
		for (j = i; j > 0 && ss->m[j - 1].worker > t.worker; j--)
			ss->m[j] = ss->m[j - 1];
		ss->m[j] = t;
	}
	return rc;
}
