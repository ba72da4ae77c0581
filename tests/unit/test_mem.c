/* test_mem.c - large malloc()s on aligned, huge-page-advised memory */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mem.h"

/* "THPeligible" of the mapping holding p in /proc/self/smaps: 1 or 0, or
 * -1 when the kernel does not say */
static int
eligible(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	int in = 0, v = -1;
	uintptr_t a = (uintptr_t)p;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = a >= lo && a < hi;
		else if (in && sscanf(line, "THPeligible: %d", &v) == 1)
			break;
	}
	fclose(f);
	return v;
}

/* whether THP can be had at all: enabled is not [never] */
static int
thp_on(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char s[128] = "";

	if (f == NULL)
		return 0;
	if (fgets(s, sizeof s, f) == NULL)
		s[0] = '\0';
	fclose(f);
	return strstr(s, "[never]") == NULL && s[0] != '\0';
}

int
main(void)
{
	size_t n = 5 * SPIRT_HUGE + 12345;
	unsigned char *p, *q;
	int e;

	CHECK(spirt_bigpages == 1);
#ifndef SPIRT_WRAP_MALLOC
	/* built without the wrapper (WRAP_LDFLAGS=): plain malloc() */
	p = malloc(n);
	CHECK(p != NULL);
	free(p);
	if (check_failed)
		return 1;
	fprintf(stderr, "test_mem: built without the malloc wrapper\n");
	return 77;
#endif
	/* a large block: aligned to a huge page, whole, usable, advised */
	p = malloc(n);
	CHECK(p != NULL);
	if (p == NULL)
		return 1;
	CHECK(((uintptr_t)p & (SPIRT_HUGE - 1)) == 0);
	memset(p, 0xa5, n);
	CHECK(p[0] == 0xa5 && p[n - 1] == 0xa5);
	e = eligible(p + SPIRT_HUGE);
	if (thp_on() && e != -1)
		CHECK(e == 1);
	/* realloc keeps the bytes, free takes it back */
	q = realloc(p, 2 * n);
	CHECK(q != NULL);
	if (q) {
		CHECK(q[0] == 0xa5 && q[n - 1] == 0xa5);
		p = q;
	}
	free(p);
	/* small blocks are plain malloc()s */
	p = malloc(100);
	CHECK(p != NULL);
	free(p);
	/* off: large blocks come as glibc makes them */
	spirt_bigpages = 0;
	p = malloc(n);
	CHECK(p != NULL);
	if (p)
		memset(p, 1, n);
	free(p);
	return check_failed;
}
