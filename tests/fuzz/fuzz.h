/* fuzz.h - what every libFuzzer harness of tests/fuzz/ shares */
#ifndef SPIRT_FUZZ_H
#define SPIRT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The readers under test take paths (they open, stat and gunzip files
 * themselves), so an input becomes a file: a memfd, named by its
 * /proc/self/fd path, rewritten for each input.  Opening that path gives
 * a new open file of the same memory file, offset 0, as a real file would.
 */
struct fuzz_file {
	int fd;
	char path[48];
};

/* A check the harness makes on the parser's answer: a failure aborts, and
 * libFuzzer keeps the input that made it. */
#define FUZZ_ASSERT(e) do { \
	if (!(e)) { \
		fprintf(stderr, "%s:%d: FUZZ_ASSERT(%s) failed\n", __FILE__, \
		    __LINE__, #e); \
		abort(); \
	} \
} while (0)

static inline void
fuzz_file_init(struct fuzz_file *f, const char *name)
{
	if ((f->fd = memfd_create(name, 0)) < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
}

/* the file now holds exactly d[0..n) with mode mode */
static inline const char *
fuzz_file_set(struct fuzz_file *f, const void *d, size_t n, int mode)
{
	const unsigned char *p = d;
	size_t off = 0;

	if (ftruncate(f->fd, 0) != 0 || fchmod(f->fd, (mode_t)mode) != 0) {
		perror("memfd");
		abort();
	}
	while (off < n) {
		ssize_t w = pwrite(f->fd, p + off, n - off, (off_t)off);
		if (w <= 0) {
			perror("pwrite");
			abort();
		}
		off += (size_t)w;
	}
	return f->path;
}

/* A little-endian reader over the input, for harnesses that take their
 * options from its first bytes; past the end it reads zeros. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline unsigned
fuzz_u8(struct fuzz_in *in)
{
	unsigned v = 0;

	if (in->n) {
		v = in->p[0];
		in->p++;
		in->n--;
	}
	return v;
}

static inline unsigned
fuzz_u16(struct fuzz_in *in)
{
	unsigned lo = fuzz_u8(in);

	return lo | fuzz_u8(in) << 8;
}

static inline uint64_t
fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)fuzz_u8(in) << (8 * i);
	return v;
}

/* the next min(k, left) bytes */
static inline const uint8_t *
fuzz_take(struct fuzz_in *in, size_t k, size_t *got)
{
	const uint8_t *p = in->p;

	if (k > in->n)
		k = in->n;
	in->p += k;
	in->n -= k;
	*got = k;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
