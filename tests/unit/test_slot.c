/* test_slot.c - gradient slots (slot.h): written, read back, refused */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "check.h"
#include "slot.h"

static char dir[64];

/* a gradient's header: f32 [n], step 7, worker w */
static void
header(struct spirt_tensor *t, uint64_t n, uint32_t w)
{
	CHECK_RC(spirt_tensor_init(t, SPIRT_F32, 1, &n));
	CHECK_RC(spirt_tensor_set_name(t, "mlp:784-10"));
	t->step = 7;
	t->origin = w;
	t->samples = 64;
	t->loss = 2.25;
	spirt_tensor_set_revision(t, 3);
}

/* parse worker w's file as the reader maps it */
static int
parse(uint32_t w, struct spirt_tensor *t, uint64_t *model,
    const float **pl, void **map, size_t *len)
{
	char path[128], msg[160];
	struct stat st;
	int fd;

	snprintf(path, sizeof path, "%s/slot.%u", dir, (unsigned)w);
	if ((fd = open(path, O_RDONLY)) < 0 || fstat(fd, &st) < 0)
		return -1;
	*len = (size_t)st.st_size;
	*map = *len ? mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0) : NULL;
	close(fd);
	return spirt_slot_parse(t, model, pl, *map, *len, w, msg, sizeof msg);
}

static void
done(void *map, size_t len)
{
	if (map != NULL)
		munmap(map, len);
}

int
main(void)
{
	struct spirt_slot sl;
	struct spirt_slotset ss;
	struct spirt_tensor h, t;
	const float *pl;
	uint64_t model;
	unsigned char rec[40];
	char path[128], msg[160];
	void *map;
	size_t len, i;
	float *p;
	int fd;

	snprintf(dir, sizeof dir, "/tmp/test_slot.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;

	/* written, then read back whole: header and payload */
	spirt_slot_init(&sl);
	CHECK_RC(spirt_slot_begin(&sl, dir, 2, 10));
	CHECK(sl.len == SPIRT_SLOT_HDR + 40);
	p = spirt_slot_payload(&sl);
	for (i = 0; i < 10; i++)
		p[i] = (float)i - 4.5f;
	/* begun, not finished: no gradient */
	CHECK_EQ_RC(parse(2, &t, &model, &pl, &map, &len), SPIRT_ENOTFOUND);
	done(map, len);
	header(&h, 10, 2);
	CHECK_RC(spirt_slot_finish(&sl, &h, 0x1122334455667788ull));
	CHECK_RC(parse(2, &t, &model, &pl, &map, &len));
	CHECK(t.step == 7 && t.origin == 2 && t.samples == 64 &&
	    t.loss == 2.25 && t.revision == 3 && t.nelem == 10 &&
	    t.dtype == SPIRT_F32 && strcmp(t.name, "mlp:784-10") == 0);
	CHECK(model == 0x1122334455667788ull);
	CHECK(memcmp(pl, p, 40) == 0);
	/* another worker's file name: refused */
	CHECK_EQ_RC(spirt_slot_parse(&t, &model, &pl, map, len, 3, msg,
	    sizeof msg), SPIRT_EHEADER);
	CHECK(strstr(msg, "worker 2") != NULL);
	/* shorter than its header says */
	CHECK_EQ_RC(spirt_slot_parse(&t, &model, &pl, map, len - 4, 2, msg,
	    sizeof msg), SPIRT_ETRUNC);
	CHECK_EQ_RC(spirt_slot_parse(&t, &model, &pl, map, 100, 2, msg,
	    sizeof msg), SPIRT_ETRUNC);
	done(map, len);
	/* a header byte changed: its checksum */
	sl.map[9] ^= 1;
	CHECK_EQ_RC(parse(2, &t, &model, &pl, &map, &len), SPIRT_EHEADER);
	done(map, len);
	sl.map[9] ^= 1;
	/* another boot's (a power loss): no gradient, whole as it is */
	{
		unsigned char b[SPIRT_SLOT_USED - 8];
		uint64_t x;

		sl.map[64] ^= 1;
		memcpy(b, sl.map, sizeof b);
		x = XXH3_64bits(b, sizeof b);
		for (i = 0; i < 8; i++)
			sl.map[SPIRT_SLOT_USED - 8 + i] =
			    (unsigned char)(x >> 8 * i);
		CHECK_EQ_RC(parse(2, &t, &model, &pl, &map, &len),
		    SPIRT_ENOTFOUND);
		done(map, len);
	}
	/* begun again: the gradient is gone until finished */
	CHECK_RC(spirt_slot_begin(&sl, dir, 2, 10));
	CHECK_EQ_RC(parse(2, &t, &model, &pl, &map, &len), SPIRT_ENOTFOUND);
	done(map, len);
	/* a header for another worker, or not f32 [n]: not written */
	header(&h, 10, 5);
	CHECK_EQ_RC(spirt_slot_finish(&sl, &h, 0), SPIRT_EINVAL);
	header(&h, 11, 2);
	CHECK_EQ_RC(spirt_slot_finish(&sl, &h, 0), SPIRT_EINVAL);
	header(&h, 10, 2);
	CHECK_RC(spirt_slot_finish(&sl, &h, 1));
	/* grown for a bigger model: remapped, reserved */
	CHECK_RC(spirt_slot_begin(&sl, dir, 2, 5000));
	CHECK(sl.len == SPIRT_SLOT_HDR + 20000);
	spirt_slot_close(&sl);

	/* an empty file (made, never written): no gradient */
	snprintf(path, sizeof path, "%s/slot.0", dir);
	CHECK((fd = open(path, O_RDWR | O_CREAT, 0644)) >= 0);
	close(fd);
	CHECK_EQ_RC(parse(0, &t, &model, &pl, &map, &len), SPIRT_ENOTFOUND);
	/* the reader's scan: slot.0 and slot.2, in worker order; other
	 * names passed over */
	snprintf(path, sizeof path, "%s/slot.01", dir);
	CHECK((fd = open(path, O_RDWR | O_CREAT, 0644)) >= 0);
	close(fd);
	snprintf(path, sizeof path, "%s/slot.x", dir);
	CHECK((fd = open(path, O_RDWR | O_CREAT, 0644)) >= 0);
	close(fd);
	spirt_slotset_init(&ss, dir);
	CHECK_RC(spirt_slotset_scan(&ss, msg, sizeof msg));
	CHECK(ss.n == 2 && ss.m[0].worker == 0 && ss.m[1].worker == 2);
	CHECK(ss.m[0].map == NULL && ss.m[1].len == SPIRT_SLOT_HDR + 20000);
	/* one gone: forgotten at the next scan */
	snprintf(path, sizeof path, "%s/slot.0", dir);
	unlink(path);
	CHECK_RC(spirt_slotset_scan(&ss, msg, sizeof msg));
	CHECK(ss.n == 1 && ss.m[0].worker == 2);
	spirt_slotset_free(&ss);

	/* a record's payload checksum: its last 8 bytes */
	memset(rec, 0, sizeof rec);
	rec[32] = 0x88;
	rec[39] = 0x11;
	CHECK(spirt_slot_record_sum(rec, sizeof rec) == 0x1100000000000088ull);
	CHECK(spirt_slot_record_sum(rec, 8) == 0);

	snprintf(path, sizeof path, "rm -rf %s", dir);
	if (system(path) != 0)
		return 1;
	if (check_failed)
		return 1;
	printf("test_slot: ok\n");
	return 0;
}
