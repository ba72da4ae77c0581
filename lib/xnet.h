/* xnet.h - how a peer is reached: a store by path, or a peer's URL */
#ifndef SPIRT_XNET_H
#define SPIRT_XNET_H

#include <stddef.h>
#include <stdint.h>

#include "remote.h"
#include "spirt.h"

/*
 * The exchange's transports (lib/exchange.h): what a pull asks of a
 * peer.  Every request is bounded (timeout_ms, wait_ms); a pull may stop
 * one under way (cancel, giveup).
 */

/* How a peer is reached; spirt_xnet_store reads a store path. */
struct spirt_xnet {
	/* a handle for url, each request bounded by timeout_ms */
	int (*open)(void **h, const char *url, void *arg, unsigned timeout_ms);
	/* value of key (for step) in *val, malloc'd, or a code */
	int (*get)(void *h, uint64_t step, const char *key, void **val,
	    size_t *len);
	void (*close)(void *h);
	/* the last failure in words, or "" */
	const char *(*msg)(void *h);
	void *arg;
	/* optional: bound each request from now on by timeout_ms (the
	 * round's deadline comes nearer) */
	void (*timeout)(void *h, unsigned timeout_ms);
	/* optional: as get, but a key not there yet is waited for, up to
	 * wait_ms (SPIRT_ENOTFOUND once over); without it, pulls ask again
	 * after 2 to 50 ms */
	int (*wait)(void *h, uint64_t step, const char *key, unsigned wait_ms,
	    void **val, size_t *len);
	/* optional: stop a request under way once cancelled() says so */
	void (*cancel)(void *h, int (*cancelled)(void));
	/* optional: the same, once given_up(arg) says so (NULL: none); a
	 * pull gives its peer up so, in the middle of a transfer */
	void (*giveup)(void *h, int (*given_up)(void *), void *arg);
};

/* A store path as the URL (peers on one machine; tests); a pull waits
 * for a key with inotify on the store's directories. */
extern const struct spirt_xnet spirt_xnet_store;

/*
 * A peer's URL, http://[ID@]host:port (lib/remote.h): a handle is one
 * client session of its own, kept for every pull from that peer (one
 * handshake per peer, not per request); a pull waits on the server for
 * a key that is not there yet.  c (our key, id, run, token and whom we
 * trust) must outlive every handle.
 */
void spirt_xnet_http(struct spirt_xnet *net, const struct spirt_cred *c)
    SPIRT_NONNULL(1, 2);

#endif
