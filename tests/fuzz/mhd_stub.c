/* mhd_stub.c - the libmicrohttpd calls of lib/peersrv.c, without sockets
 * (mhd_stub.h), so that fuzz_peersrv drives the handler directly */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "mhd_stub.h"

/* what a real daemon would do is not modelled: an option this does not
 * know is a harness to update, so it stops at once */
static void
die(const char *why)
{
	fprintf(stderr, "mhd_stub: %s\n", why);
	abort();
}

struct MHD_Daemon {
	MHD_AccessHandlerCallback dh;
	void *dh_cls;
	MHD_RequestCompletedCallback done;
	void *done_cls;
	/* MHD_OPTION_URI_LOG_CALLBACK: the request's context, from its line */
	void *(*uri)(void *cls, const char *uri, struct MHD_Connection *c);
	void *uri_cls;
	/* MHD_OPTION_NOTIFY_CONNECTION: a connection opened, closed */
	MHD_NotifyConnectionCallback conn;
	void *conn_cls;
	uint16_t port;
};

struct MHD_Connection {
	const struct mhd_stub_header *h;
	size_t nh;
	int phase;              /* 0 headers, 1 body, 2 its end */
	int suspended;          /* under lock: until another thread resumes */
	int parked;             /* the handler's last call suspended it */
	struct sockaddr_in addr;
	void *sctx;             /* the socket context NOTIFY_CONNECTION set */
	union MHD_ConnectionInfo info;
	struct mhd_stub_answer *a;
};

struct MHD_Response {
	unsigned char *body;
	size_t len;
	char type[64];
};

struct mhd_stub_opts mhd_stub_opts;
static struct MHD_Daemon daemon1;
/* a suspended connection is resumed from the server's watcher thread */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t resumed = PTHREAD_COND_INITIALIZER;
static uint16_t nextport = 40000;

struct MHD_Daemon *
MHD_start_daemon(unsigned int flags, uint16_t port,
    MHD_AcceptPolicyCallback apc, void *apc_cls,
    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	va_list ap;
	int opt;

	(void)flags;
	(void)apc;
	(void)apc_cls;
	if (mhd_stub_opts.running)
		die("a second daemon");
	memset(&daemon1, 0, sizeof daemon1);
	memset(&mhd_stub_opts, 0, sizeof mhd_stub_opts);
	daemon1.dh = dh;
	daemon1.dh_cls = dh_cls;
	daemon1.port = port ? port : 7070;
	va_start(ap, dh_cls);
	while ((opt = va_arg(ap, int)) != MHD_OPTION_END)
		switch (opt) {
		case MHD_OPTION_EXTERNAL_LOGGER:
			(void)va_arg(ap, void *);
			(void)va_arg(ap, void *);
			break;
		case MHD_OPTION_SOCK_ADDR:
			(void)va_arg(ap, struct sockaddr *);
			break;
		case MHD_OPTION_CONNECTION_LIMIT:
			mhd_stub_opts.conn_limit = va_arg(ap, unsigned int);
			break;
		case MHD_OPTION_CONNECTION_TIMEOUT:
			mhd_stub_opts.conn_timeout = va_arg(ap, unsigned int);
			break;
		case MHD_OPTION_PER_IP_CONNECTION_LIMIT:
			mhd_stub_opts.per_ip_limit = va_arg(ap, unsigned int);
			break;
		case MHD_OPTION_CONNECTION_MEMORY_LIMIT:
			mhd_stub_opts.mem_limit = va_arg(ap, size_t);
			break;
		case MHD_OPTION_NOTIFY_COMPLETED:
			daemon1.done = va_arg(ap, MHD_RequestCompletedCallback);
			daemon1.done_cls = va_arg(ap, void *);
			break;
		case MHD_OPTION_URI_LOG_CALLBACK:
			daemon1.uri = va_arg(ap, void *(*)(void *,
			    const char *, struct MHD_Connection *));
			daemon1.uri_cls = va_arg(ap, void *);
			break;
		case MHD_OPTION_NOTIFY_CONNECTION:
			daemon1.conn = va_arg(ap, MHD_NotifyConnectionCallback);
			daemon1.conn_cls = va_arg(ap, void *);
			break;
		default:
			die("an option mhd_stub.c does not know");
		}
	va_end(ap);
	mhd_stub_opts.running = 1;
	return &daemon1;
}

void
MHD_stop_daemon(struct MHD_Daemon *d)
{
	if (d != &daemon1 || !mhd_stub_opts.running)
		die("stop of no daemon");
	mhd_stub_opts.running = 0;
}

const union MHD_DaemonInfo *
MHD_get_daemon_info(struct MHD_Daemon *d, enum MHD_DaemonInfoType type, ...)
{
	static union MHD_DaemonInfo info;

	if (d != &daemon1 || type != MHD_DAEMON_INFO_BIND_PORT)
		return NULL;
	info.port = d->port;
	return &info;
}

const char *
MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
    const char *key)
{
	if (kind != MHD_HEADER_KIND || key == NULL)
		return NULL;
	for (size_t i = 0; i < c->nh; i++)
		if (strcasecmp(c->h[i].name, key) == 0)
			return c->h[i].value;
	return NULL;
}

const union MHD_ConnectionInfo *
MHD_get_connection_info(struct MHD_Connection *c,
    enum MHD_ConnectionInfoType type, ...)
{
	switch (type) {
	case MHD_CONNECTION_INFO_CLIENT_ADDRESS:
		c->info.client_addr = (struct sockaddr *)&c->addr;
		return &c->info;
	case MHD_CONNECTION_INFO_SOCKET_CONTEXT:
		c->info.socket_context = c->sctx;
		return &c->info;
	default:
		/* no socket: a connection cannot be shed here (one request
		 * at a time never reaches the connection limit) */
		return NULL;
	}
}

static struct MHD_Response *
response(size_t n)
{
	struct MHD_Response *r = calloc(1, sizeof *r);

	if (r == NULL || (r->body = malloc(n ? n : 1)) == NULL)
		die("out of memory");
	r->len = n;
	return r;
}

struct MHD_Response *
MHD_create_response_from_buffer(size_t size, void *buffer,
    enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = response(size);

	if (size)
		memcpy(r->body, buffer, size);
	if (mode == MHD_RESPMEM_MUST_FREE)
		free(buffer);
	return r;
}

/* a streamed answer is read whole, as the client would get it */
struct MHD_Response *
MHD_create_response_from_callback(uint64_t size, size_t block,
    MHD_ContentReaderCallback crc, void *cls,
    MHD_ContentReaderFreeCallback crfc)
{
	struct MHD_Response *r;
	size_t off = 0;

	if (size == MHD_SIZE_UNKNOWN || size > ((uint64_t)1 << 32))
		die("a streamed answer of unknown or huge size");
	r = response((size_t)size);
	while (off < size) {
		ssize_t k = crc(cls, off, (char *)r->body + off,
		    block < size - off ? block : (size_t)(size - off));
		if (k < 0)
			break;          /* the stream ended or failed */
		off += (size_t)k;
	}
	r->len = off;
	if (crfc)
		crfc(cls);
	return r;
}

enum MHD_Result
MHD_add_response_header(struct MHD_Response *r, const char *h,
    const char *v)
{
	if (strcasecmp(h, MHD_HTTP_HEADER_CONTENT_TYPE) == 0)
		snprintf(r->type, sizeof r->type, "%s", v);
	return MHD_YES;
}

enum MHD_Result
MHD_queue_response(struct MHD_Connection *c, unsigned int status,
    struct MHD_Response *r)
{
	struct mhd_stub_answer *a = c->a;

	/* as libmicrohttpd: one answer a request, given with the headers
	 * or once the whole body is in, never in the middle of it */
	if (a->queued || c->phase == 1)
		return MHD_NO;
	a->queued = 1;
	a->status = status;
	if ((a->body = malloc(r->len ? r->len : 1)) == NULL)
		die("out of memory");
	memcpy(a->body, r->body, r->len);
	a->len = r->len;
	memcpy(a->type, r->type, sizeof a->type);
	return MHD_YES;
}

void
MHD_suspend_connection(struct MHD_Connection *c)
{
	pthread_mutex_lock(&lock);
	c->suspended = 1;
	c->parked = 1;
	pthread_mutex_unlock(&lock);
}

void
MHD_resume_connection(struct MHD_Connection *c)
{
	pthread_mutex_lock(&lock);
	c->suspended = 0;
	pthread_cond_broadcast(&resumed);
	pthread_mutex_unlock(&lock);
}

/*
 * 1 if the handler's last call suspended c (it may be resumed already, by
 * the watcher thread): then once it is resumed (at most 60 s), the
 * handler is to run again, as libmicrohttpd does with a resumed
 * connection.
 */
static int
held(struct MHD_Connection *c)
{
	struct timespec until;
	int was;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&lock);
	was = c->parked;
	c->parked = 0;
	while (was && c->suspended)
		if (pthread_cond_timedwait(&resumed, &lock, &until) ==
		    ETIMEDOUT)
			die("a connection suspended for 60 s");
	pthread_mutex_unlock(&lock);
	return was;
}

void
MHD_destroy_response(struct MHD_Response *r)
{
	if (r) {
		free(r->body);
		free(r);
	}
}

void
mhd_stub_request(struct mhd_stub_answer *a, const char *method,
    const char *url, const struct mhd_stub_header *h, size_t nh,
    const unsigned char *body, size_t len, size_t piece)
{
	struct MHD_Connection c;
	void *ctx = NULL;
	size_t off = 0, up = 0;
	enum MHD_Result r;

	if (!mhd_stub_opts.running)
		die("a request with no daemon");
	memset(a, 0, sizeof *a);
	memset(&c, 0, sizeof c);
	c.h = h;
	c.nh = nh;
	c.a = a;
	c.addr.sin_family = AF_INET;
	c.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c.addr.sin_port = htons(nextport);
	nextport = nextport == 60000 ? 40000 : nextport + 1;
	if (daemon1.conn)
		daemon1.conn(daemon1.conn_cls, &c, &c.sctx,
		    MHD_CONNECTION_NOTIFY_STARTED);
	if (daemon1.uri)
		ctx = daemon1.uri(daemon1.uri_cls, url, &c);
	r = daemon1.dh(daemon1.dh_cls, &c, url, method, MHD_HTTP_VERSION_1_1,
	    NULL, &up, &ctx);
	c.phase = 1;
	while (r == MHD_YES && !a->queued && off < len) {
		size_t k = piece && piece < len - off ? piece : len - off;

		up = k;
		r = daemon1.dh(daemon1.dh_cls, &c, url, method,
		    MHD_HTTP_VERSION_1_1, (const char *)body + off, &up, &ctx);
		if (up > k)
			die("the handler took more than it was given");
		a->body_read += (int)(k - up);
		off += k - up;
		if (up == k && r == MHD_YES && !a->queued)
			die("the handler took none of the body");
	}
	c.phase = 2;
	if (r == MHD_YES && !a->queued) {
		up = 0;
		r = daemon1.dh(daemon1.dh_cls, &c, url, method,
		    MHD_HTTP_VERSION_1_1, NULL, &up, &ctx);
	}
	/* a suspended request runs again once resumed, until answered */
	while (r == MHD_YES && !a->queued && held(&c)) {
		up = 0;
		a->resumes++;
		r = daemon1.dh(daemon1.dh_cls, &c, url, method,
		    MHD_HTTP_VERSION_1_1, NULL, &up, &ctx);
	}
	if (r == MHD_NO)
		a->dropped = 1;
	if (daemon1.done)
		daemon1.done(daemon1.done_cls, &c, &ctx, a->dropped ?
		    MHD_REQUEST_TERMINATED_WITH_ERROR :
		    MHD_REQUEST_TERMINATED_COMPLETED_OK);
	if (daemon1.conn)
		daemon1.conn(daemon1.conn_cls, &c, &c.sctx,
		    MHD_CONNECTION_NOTIFY_CLOSED);
}
