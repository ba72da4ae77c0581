/* test_beat.c - beat and health records, the watcher's states and pass */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beat.h"
#include "check.h"
#include "store.h"

#define MS 1000000ull   /* ns */

static struct spirt_beat
mkbeat(const char *m, uint64_t seq)
{
	struct spirt_beat b;

	memset(&b, 0, sizeof b);
	snprintf(b.member, sizeof b.member, "%s", m);
	b.role = SPIRT_BEAT_PEER;
	b.status = SPIRT_BEAT_LIVE;
	b.step = 7;
	b.seq = seq;
	memset(b.boot, 0xa5, sizeof b.boot);
	b.interval_ms = 1000;
	return b;
}

static void
budget(void)
{
	struct spirt_beat_budget b;

	spirt_beat_budget_init(&b, 1000);
	CHECK(b.beat_ms == 1000 && b.suspect_ms == 3000 && b.dead_ms == 10000);
	CHECK_RC(spirt_beat_budget_check(&b));
	b.suspect_ms = b.dead_ms;
	CHECK_EQ_RC(spirt_beat_budget_check(&b), SPIRT_EINVAL);
	b.suspect_ms = 500;
	CHECK_EQ_RC(spirt_beat_budget_check(&b), SPIRT_EINVAL);
	spirt_beat_budget_init(&b, 0);
	CHECK_EQ_RC(spirt_beat_budget_check(&b), SPIRT_EINVAL);
}

static void
text(void)
{
	struct spirt_beat b = mkbeat("p1", 42), c;
	struct spirt_health h, g;
	char buf[1024], bad[1024];
	size_t n;

	CHECK_RC(spirt_beat_format(buf, sizeof buf, &n, &b));
	CHECK(strstr(buf, "VERSION=1\nTYPE=spirt-beat\nmember=p1\nrole=peer\n"
	    "status=live\nstep=7\nseq=42\nboot=a5a5") == buf);
	CHECK_RC(spirt_beat_parse(&c, buf, n));
	CHECK(memcmp(&b, &c, sizeof b) == 0);
	/* every byte cut short, and a changed version, are refused */
	for (size_t k = 0; k < n; k++)
		CHECK(spirt_beat_parse(&c, buf, k) != 0);
	memcpy(bad, buf, n);
	bad[8] = '2';
	CHECK_EQ_RC(spirt_beat_parse(&c, bad, n), SPIRT_EVERSION);
	memcpy(bad, buf, n);
	bad[n - 2] = 'X';
	CHECK_EQ_RC(spirt_beat_parse(&c, bad, n), SPIRT_EDATA);
	/* a leading zero, a bad member, junk after END */
	snprintf(bad, sizeof bad, "%.*sseq=042%s", (int)(strstr(buf, "seq=") -
	    buf), buf, strstr(buf, "\nboot="));
	CHECK_EQ_RC(spirt_beat_parse(&c, bad, strlen(bad)), SPIRT_EDATA);
	memcpy(bad, buf, n);
	memcpy(bad + n, "x", 1);
	CHECK_EQ_RC(spirt_beat_parse(&c, bad, n + 1), SPIRT_EDATA);
	b.step = SPIRT_NOSTEP;
	CHECK_RC(spirt_beat_format(buf, sizeof buf, &n, &b));
	CHECK(strstr(buf, "step=none\n") != NULL);
	CHECK_RC(spirt_beat_parse(&c, buf, n));
	CHECK(c.step == SPIRT_NOSTEP);
	snprintf(b.member, sizeof b.member, "p/1");
	CHECK_EQ_RC(spirt_beat_format(buf, sizeof buf, &n, &b), SPIRT_EINVAL);
	CHECK_EQ_RC(spirt_beat_format(buf, 20, &n, &c), ENOSPC);

	memset(&h, 0, sizeof h);
	h.b = mkbeat("f3", 9);
	h.b.role = SPIRT_BEAT_FUNCTION;
	memset(h.host, 0x11, sizeof h.host);
	h.first_ns = 5;
	h.seen_ns = 123456789012ull;
	h.suspect_ms = 300;
	h.dead_ms = 1000;
	h.dead_run = 1;
	CHECK_RC(spirt_health_format(buf, sizeof buf, &n, &h));
	CHECK_RC(spirt_health_parse(&g, buf, n));
	CHECK(memcmp(&g, &h, sizeof h) == 0);
	/* a beat is not a health record */
	CHECK_RC(spirt_beat_format(bad, sizeof bad, &n, &c));
	CHECK_EQ_RC(spirt_health_parse(&g, bad, n), SPIRT_EDATA);
}

static void
states(void)
{
	struct spirt_beat b = mkbeat("p2", 1);
	struct spirt_health h;
	struct spirt_beat_budget bu;
	unsigned char host[SPIRT_BEAT_BOOT], other[SPIRT_BEAT_BOOT];
	double age;

	spirt_beat_budget_init(&bu, 100);
	memset(host, 1, sizeof host);
	memset(other, 2, sizeof other);
	memset(&h, 0, sizeof h);
	h.suspect_ms = bu.suspect_ms;
	h.dead_ms = bu.dead_ms;
	CHECK(spirt_health_state(&h, host, 0, NULL, &age) == SPIRT_H_UNKNOWN);
	CHECK(spirt_health_observe(&h, &b, host, 1000 * MS) == 1);
	CHECK(h.first_ns == 1000 * MS && h.seen_ns == 1000 * MS);
	CHECK(spirt_health_state(&h, host, 1299 * MS, NULL, &age) ==
	    SPIRT_H_LIVE);
	CHECK(age > 298.9 && age < 299.1);
	CHECK(spirt_health_state(&h, host, 1300 * MS, NULL, NULL) ==
	    SPIRT_H_SUSPECT);
	CHECK(spirt_health_state(&h, host, 1999 * MS, NULL, NULL) ==
	    SPIRT_H_SUSPECT);
	CHECK(spirt_health_state(&h, host, 2000 * MS, NULL, NULL) ==
	    SPIRT_H_DEAD);
	/* another budget than the watcher's */
	spirt_beat_budget_init(&bu, 1000);
	CHECK(spirt_health_state(&h, host, 2000 * MS, &bu, NULL) ==
	    SPIRT_H_LIVE);
	/* another boot of the host: its monotonic times mean nothing */
	CHECK(spirt_health_state(&h, other, 1001 * MS, NULL, &age) ==
	    SPIRT_H_UNKNOWN);
	/* the same beat seen again moves nothing: age counts on */
	CHECK(spirt_health_observe(&h, &b, host, 1500 * MS) == 0);
	CHECK(h.seen_ns == 1000 * MS);
	/* a new sequence number is a sign of life */
	b.seq = 2;
	CHECK(spirt_health_observe(&h, &b, host, 1600 * MS) == 1);
	CHECK(h.seen_ns == 1600 * MS && h.first_ns == 1000 * MS);
	/* a new step alone is no beat (the beater's sequence tells) */
	b.step = 8;
	CHECK(spirt_health_observe(&h, &b, host, 1700 * MS) == 1);
	CHECK(h.seen_ns == 1600 * MS && h.b.step == 8);
	/* declared dead; a restarted member (new boot) is alive again and
	 * may die again */
	h.dead_run = 1;
	b.seq = 0;
	memset(b.boot, 0x5a, sizeof b.boot);
	CHECK(spirt_health_observe(&h, &b, host, 9000 * MS) == 1);
	CHECK(h.dead_run == 0 && h.seen_ns == 9000 * MS);
	/* catching up: joining while fresh, dead when silent */
	b.status = SPIRT_BEAT_CATCHUP;
	b.seq = 1;
	CHECK(spirt_health_observe(&h, &b, host, 9100 * MS) == 1);
	CHECK(spirt_health_state(&h, host, 9500 * MS, NULL, NULL) ==
	    SPIRT_H_JOINING);
	CHECK(spirt_health_state(&h, host, 10100 * MS, NULL, NULL) ==
	    SPIRT_H_DEAD);
	/* a member that says it stops is dead at once */
	b.status = SPIRT_BEAT_STOP;
	b.seq = 2;
	CHECK(spirt_health_observe(&h, &b, host, 9200 * MS) == 1);
	CHECK(spirt_health_state(&h, host, 9200 * MS, NULL, NULL) ==
	    SPIRT_H_DEAD);
}

static int
put_beat(struct spirt_txn *t, void *arg)
{
	return spirt_beat_put(t, arg);
}

static int
put_junk(struct spirt_txn *t, void *arg)
{
	(void)arg;
	return spirt_store_put(t, "beat/junk", "xyz", 3, 0);
}

/* the watcher's pass over a store: each death declared once */
static void
pass(const char *dir)
{
	struct spirt_store *s;
	struct spirt_beat a = mkbeat("p1", 0), b = mkbeat("p2", 0);
	struct spirt_beat_budget bu;
	struct spirt_health dh[4], *all;
	unsigned char host[SPIRT_BEAT_BOOT];
	size_t nd, bad, n;
	uint64_t t0 = 50000 * MS;

	spirt_beat_budget_init(&bu, 100);
	memset(host, 7, sizeof host);
	CHECK_RC(spirt_store_open(&s, dir, SPIRT_STORE_CREATE));
	CHECK_RC(spirt_store_write(s, put_beat, &a));
	CHECK_RC(spirt_store_write(s, put_beat, &b));
	CHECK_RC(spirt_store_write(s, put_junk, NULL));
	CHECK_RC(spirt_watch_pass(s, &bu, t0, host, dh, 4, &nd, &bad));
	CHECK(nd == 0 && bad == 1);
	/* p1 beats on, p2 is silent */
	for (uint64_t i = 1; i <= 12; i++) {
		a.seq = i;
		CHECK_RC(spirt_store_write(s, put_beat, &a));
		CHECK_RC(spirt_watch_pass(s, &bu, t0 + i * 100 * MS, host, dh,
		    4, &nd, &bad));
		if (i < 10)
			CHECK(nd == 0);
		else if (i == 10) {
			CHECK(nd == 1);
			CHECK(nd == 1 && strcmp(dh[0].b.member, "p2") == 0);
		} else
			CHECK(nd == 0);         /* once */
	}
	CHECK_RC(spirt_health_list(s, &all, &n));
	CHECK(n == 2);
	if (n == 2) {
		CHECK(!strcmp(all[0].b.member, "p1") && all[0].b.seq == 12);
		CHECK(spirt_health_state(&all[0], host, t0 + 1200 * MS, NULL,
		    NULL) == SPIRT_H_LIVE);
		CHECK(spirt_health_state(&all[1], host, t0 + 1200 * MS, NULL,
		    NULL) == SPIRT_H_DEAD);
		CHECK(all[1].dead_run == 1 && all[1].dead_ms == 1000);
	}
	free(all);
	CHECK_RC(spirt_health_get(s, "p2", &dh[1]));
	CHECK(dh[1].dead_run == 1);
	CHECK_EQ_RC(spirt_health_get(s, "p9", &dh[1]), SPIRT_ENOTFOUND);
	/* p2 restarts: alive again, and its next death is declared again */
	b.seq = 0;
	memset(b.boot, 0x3c, sizeof b.boot);
	CHECK_RC(spirt_store_write(s, put_beat, &b));
	CHECK_RC(spirt_watch_pass(s, &bu, t0 + 1300 * MS, host, dh, 4, &nd,
	    &bad));
	CHECK(nd == 0);
	CHECK_RC(spirt_watch_pass(s, &bu, t0 + 2300 * MS, host, dh, 4, &nd,
	    &bad));
	CHECK(nd == 2);         /* both silent for 1 s now */
	/* a watcher that starts gives both the benefit of the doubt; the
	 * deaths it knows of stay declared */
	CHECK_RC(spirt_watch_start(s, t0 + 9000 * MS, host));
	CHECK_RC(spirt_health_get(s, "p1", &dh[1]));
	CHECK(spirt_health_state(&dh[1], host, t0 + 9500 * MS, NULL, NULL) ==
	    SPIRT_H_SUSPECT && dh[1].dead_run == 1);
	CHECK_RC(spirt_watch_pass(s, &bu, t0 + 10000 * MS, host, dh, 4, &nd,
	    &bad));
	CHECK(nd == 0);
	/* p1 beats again on the same boot (a partition healed): alive, and
	 * its next death is declared again */
	a.seq = 13;
	CHECK_RC(spirt_store_write(s, put_beat, &a));
	CHECK_RC(spirt_watch_pass(s, &bu, t0 + 10100 * MS, host, dh, 4, &nd,
	    &bad));
	CHECK_RC(spirt_health_get(s, "p1", &dh[1]));
	CHECK(dh[1].dead_run == 0 && spirt_health_state(&dh[1], host,
	    t0 + 10100 * MS, NULL, NULL) == SPIRT_H_LIVE);
	CHECK_RC(spirt_watch_pass(s, &bu, t0 + 11200 * MS, host, dh, 4, &nd,
	    &bad));
	CHECK(nd == 1 && strcmp(dh[0].b.member, "p1") == 0);
	spirt_store_close(s);
}

int
main(void)
{
	char tmpl[] = "/tmp/spirt-test-beat.XXXXXX", dir[300], cmd[400];
	unsigned char h1[SPIRT_BEAT_BOOT], h2[SPIRT_BEAT_BOOT];

	budget();
	text();
	states();
	CHECK_RC(spirt_host_boot(h1));
	CHECK_RC(spirt_host_boot(h2));
	CHECK(memcmp(h1, h2, sizeof h1) == 0);
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/db", tmpl);
	pass(dir);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		check_failed = 1;
	return check_failed;
}
