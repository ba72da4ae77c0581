/* io.c - full reads/writes and atomic publish (ISC licence) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

ssize_t
spirt_readall(int fd, void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int
spirt_writeall(int fd, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int
spirt_readfile(const char *path, void **buf, size_t *len)
{
	int fd = 0, rc = 0;
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = NULL, *nb;
	struct stat st;

	if (strcmp(path, "-") && (fd = open(path, O_RDONLY)) < 0)
		return errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	if (!(b = malloc(cap))) {
		rc = ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (n == cap) {
			if (!(nb = realloc(b, cap *= 2))) {
				rc = ENOMEM;
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	if (fd > 0)
		close(fd);
	return rc;
}

int
spirt_fsync_dir(const char *path)
{
	size_t n = strlen(path);
	char *dir = malloc(n + 2), *slash;
	int fd, rc = 0;

	if (!dir)
		return ENOMEM;
	memcpy(dir, path, n + 1);
	slash = strrchr(dir, '/');
	if (!slash)
		memcpy(dir, ".", 2);
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
		rc = errno;
	else {
		if (fsync(fd) < 0 && errno != EINVAL)
			rc = errno;
		close(fd);
	}
	free(dir);
	return rc;
}

int
spirt_publish_open(struct spirt_publish *p, const char *path, int mode)
{
	size_t n = strlen(path) + 32;
	struct stat st;

	memset(p, 0, sizeof *p);
	p->fd = -1;
	if (*path == '\0')     /* no name: nothing can be created there */
		return SPIRT_EOUTPUT(ENOENT);
	/*
	 * A device, FIFO or socket (/dev/null, /dev/stdout, a named pipe) is
	 * written in place: renaming a file over it would replace it.
	 */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return SPIRT_EOUTPUT(EISDIR);
		if ((p->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			return SPIRT_EOUTPUT(errno);
		return 0;
	}
	if (!(p->path = strdup(path)) || !(p->tmp = malloc(n))) {
		free(p->path);
		p->path = NULL;
		return ENOMEM;
	}
	snprintf(p->tmp, n, "%s.tmp.%ld", path, (long)getpid());
	p->fd = open(p->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (p->fd < 0) {
		int e = errno;
		free(p->path);
		free(p->tmp);
		p->path = p->tmp = NULL;
		return SPIRT_EOUTPUT(e);
	}
	return 0;
}

int
spirt_publish_commit(struct spirt_publish *p)
{
	int rc = 0;

	if (!p->tmp) {          /* written in place */
		rc = close(p->fd) < 0 ? errno : 0;
		p->fd = -1;
		return rc;
	}
	if (fsync(p->fd) < 0)
		rc = errno;
	if (close(p->fd) < 0 && !rc)
		rc = errno;
	p->fd = -1;
	if (!rc && rename(p->tmp, p->path) < 0)
		rc = SPIRT_EOUTPUT(errno);      /* e.g. its directory went */
	if (!rc)
		rc = spirt_fsync_dir(p->path);
	if (rc)
		unlink(p->tmp);
	free(p->path);
	free(p->tmp);
	p->path = p->tmp = NULL;
	return rc;
}

void
spirt_publish_abort(struct spirt_publish *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->tmp)
		unlink(p->tmp);
	free(p->path);
	free(p->tmp);
	p->path = p->tmp = NULL;
	p->fd = -1;
}

double
spirt_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
