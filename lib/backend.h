/* backend.h - the store's backends (lib-internal; store.c dispatches) */
#ifndef SPIRT_BACKEND_H
#define SPIRT_BACKEND_H

#include <stddef.h>

/*
 * A store that is not the local LMDB one: its operations, as store.h
 * defines them, on the backend's own store (bs) and transaction (bt)
 * objects.  store.c keeps LMDB in place and sends every operation of a
 * store that has a backend through this table.
 */
struct spirt_backend {
	const char *name;
	int (*open)(void **bs, const char *loc, unsigned flags);
	void (*close)(void *bs);
	int (*begin)(void **bt, void *bs, unsigned flags);
	int (*commit)(void *bt);
	void (*txn_abort)(void *bt);
	int (*get)(void *bt, const char *key, const void **val, size_t *len);
	int (*reserve)(void *bt, const char *key, size_t len, void **dst,
	    unsigned flags);
	int (*del)(void *bt, const char *key);
	int (*list)(void *bt, const char *prefix,
	    int (*fn)(void *arg, const char *key, const void *val,
	    size_t len), void *arg);
	/* the words of the last failure with code rc, or NULL */
	const char *(*why)(int rc);
};

/* http://[ID@]host:port: a peer's store through lib/remote.h */
extern const struct spirt_backend spirt_backend_http;

#endif
