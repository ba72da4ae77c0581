/* faas_http.c - spirt-grad served over HTTP (libmicrohttpd) */
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <microhttpd.h>

#include "dl.h"
#include "faas_http.h"

#define MHD_SONAME "libmicrohttpd.so.12"

/*
 * libmicrohttpd is loaded at run time, by -F http only, so that a cold
 * spirt-grad does not load it (nor its GnuTLS) at every start.
 */
static struct {
	void *dl;
	struct MHD_Daemon *(*start)(unsigned int, uint16_t,
	    MHD_AcceptPolicyCallback, void *, MHD_AccessHandlerCallback,
	    void *, ...);
	void (*stop)(struct MHD_Daemon *);
	struct MHD_Response *(*from_buffer)(size_t, void *,
	    enum MHD_ResponseMemoryMode);
	enum MHD_Result (*add_header)(struct MHD_Response *, const char *,
	    const char *);
	enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int,
	    struct MHD_Response *);
	void (*destroy)(struct MHD_Response *);
	int (*values)(struct MHD_Connection *, enum MHD_ValueKind,
	    MHD_KeyValueIterator, void *);
	const char *(*lookup)(struct MHD_Connection *, enum MHD_ValueKind,
	    const char *);
} mhd;

static int
load(struct spirt_faas_http *h)
{
	const struct spirt_dlsym t[] = {
		{ "MHD_start_daemon", &mhd.start },
		{ "MHD_stop_daemon", &mhd.stop },
		{ "MHD_create_response_from_buffer", &mhd.from_buffer },
		{ "MHD_add_response_header", &mhd.add_header },
		{ "MHD_queue_response", &mhd.queue },
		{ "MHD_destroy_response", &mhd.destroy },
		{ "MHD_get_connection_values", &mhd.values },
		{ "MHD_lookup_connection_value", &mhd.lookup },
	};
	const char *miss;

	if (mhd.dl != NULL)
		return 0;
	if ((mhd.dl = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL)
		return spirt_msgf(h->msg, sizeof h->msg, SPIRT_ENOTSUP, "%s",
		    dlerror());
	if ((miss = spirt_dl_syms(mhd.dl, t, sizeof t / sizeof t[0]))) {
		dlclose(mhd.dl);
		mhd.dl = NULL;
		return spirt_msgf(h->msg, sizeof h->msg, SPIRT_ENOTSUP,
		    "%s: no symbol %s", MHD_SONAME, miss);
	}
	return 0;
}

struct srv {
	struct MHD_Daemon *d;
	pthread_mutex_t lock;   /* one invocation at a time */
	volatile int draining;
	int fd;
};

/* One request's body, as it arrives. */
struct conn {
	char *body;
	size_t n, cap;
	int big;
};

static enum MHD_Result
reply(struct MHD_Connection *con, unsigned status, const char *type,
    void *body, size_t n, int owned)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = mhd.from_buffer(n, body, owned ?
	    MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	mhd.add_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = mhd.queue(con, status, r);
	mhd.destroy(r);
	return ret;
}

static enum MHD_Result
reply_error(struct MHD_Connection *con, unsigned status, int code,
    const char *msg)
{
	char *s;
	size_t n;

	if (spirt_faas_json_error(&s, &n, code, msg) != 0)
		return MHD_NO;
	return reply(con, status, "application/json", s, n, 1);
}

/* The answer: the record itself, else JSON (always JSON for /run). */
static enum MHD_Result
reply_ans(struct MHD_Connection *con, struct spirt_faas_ans *a, int json)
{
	unsigned status = spirt_faas_http_status(a->code);
	unsigned char *rec;
	char *s;
	size_t n;

	if (a->code == 0 && a->rec != NULL && !json) {
		rec = a->rec;
		a->rec = NULL;
		return reply(con, status, "application/octet-stream", rec,
		    a->len, 1);
	}
	if (spirt_faas_json_answer(&s, &n, a, json) != 0)
		return MHD_NO;
	return reply(con, status, "application/json", s, n, 1);
}

struct qarg {
	struct spirt_faas_req *r;
	int rc;
};

static enum MHD_Result
qparam(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct qarg *q = cls;

	(void)kind;
	if (q->rc == 0)
		q->rc = spirt_faas_param(q->r, key, value ? value : "");
	return q->rc == 0 ? MHD_YES : MHD_NO;
}

static enum MHD_Result
invoke(struct srv *s, struct spirt_faas_http *h, struct MHD_Connection *con,
    const char *url, const struct conn *c)
{
	struct spirt_faas_req req;
	struct spirt_faas_ans ans;
	struct qarg q;
	enum MHD_Result ret;
	int run = strcmp(url, "/run") == 0, rc;

	spirt_faas_req_init(&req);
	q.r = &req;
	q.rc = 0;
	if (run) {
		rc = spirt_faas_json(&req, c->body, c->n, SPIRT_FAAS_JSON_VALUE);
	} else if ((rc = spirt_faas_path(&req, url)) == 0) {
		mhd.values(con, MHD_GET_ARGUMENT_KIND, qparam,
		    &q);
		if ((rc = q.rc) == 0)
			rc = spirt_faas_body(&req, c->body ? c->body : "",
			    c->n);
	}
	if (rc != 0)
		return reply_error(con, rc == SPIRT_ENOTFOUND ? 404 : 400,
		    spirt_exit(rc), req.msg);

	memset(&ans, 0, sizeof ans);
	pthread_mutex_lock(&s->lock);
	h->run(h->arg, &req, &ans);
	h->served++;
	pthread_mutex_unlock(&s->lock);
	ret = reply_ans(con, &ans, run);
	spirt_faas_ans_clear(&ans);
	return ret;
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *con, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
	struct spirt_faas_http *h = cls;
	struct srv *s = h->priv;
	struct conn *c = *con_cls;
	const char *len;
	int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
	size_t cap;
	char *p;

	(void)version;
	if (c == NULL) {
		if ((c = calloc(1, sizeof *c)) == NULL)
			return MHD_NO;
		*con_cls = c;
		len = mhd.lookup(con, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (len != NULL && (strlen(len) > 9 ||
		    strtoul(len, NULL, 10) > SPIRT_FAAS_BODY_MAX)) {
			c->big = 1;
			goto big;     // refused before a byte is read
		}
		return MHD_YES;
	}
	if (*upload_size != 0) {
		if (!c->big && c->n + *upload_size <= SPIRT_FAAS_BODY_MAX) {
			if (c->n + *upload_size + 1 > c->cap) {
				cap = c->n + *upload_size + 1;
				if (cap < 1024)
					cap = 1024;
				if ((p = realloc(c->body, cap)) == NULL)
					return MHD_NO;
				c->body = p;
				c->cap = cap;
			}
			memcpy(c->body + c->n, upload, *upload_size);
			c->n += *upload_size;
			c->body[c->n] = '\0';
		} else {
			c->big = 1;
		}
		*upload_size = 0;
		return MHD_YES;
	}
big:
	if (c->big)
		return reply_error(con, 413, SPIRT_EX_USAGE, "request body "
		    "over 65536 bytes: a request holds parameters only");

	if (strcmp(url, "/healthz") == 0 && get)
		return reply(con, 200, "text/plain", "ok\n", 3, 0);
	if (strcmp(url, "/readyz") == 0 && get)
		return s->draining ?
		    reply(con, 503, "text/plain", "draining\n", 9, 0) :
		    reply(con, 200, "text/plain", "ready\n", 6, 0);
	if (strcmp(url, "/init") == 0 && post)
		return reply(con, 200, "application/json", "{\"OK\":true}\n",
		    12, 0);
	if (strcmp(url, "/run") == 0 && post)
		return invoke(s, h, con, url, c);
	if (strcmp(url, "/") == 0 || strncmp(url, "/grad/", 6) == 0) {
		if (get || post)
			return invoke(s, h, con, url, c);
		return reply_error(con, 405, SPIRT_EX_USAGE, "method not "
		    "allowed: GET or POST");
	}
	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 ||
	    strcmp(url, "/init") == 0 || strcmp(url, "/run") == 0)
		return reply_error(con, 405, SPIRT_EX_USAGE, "method not "
		    "allowed");
	return reply_error(con, 404, SPIRT_EX_NOINPUT, "no such path: /, "
	    "/grad/<step>/<worker>, /healthz, /readyz, /init, /run");
}

static void
completed(void *cls, struct MHD_Connection *con, void **con_cls,
    enum MHD_RequestTerminationCode why)
{
	struct conn *c = *con_cls;

	(void)cls;
	(void)con;
	(void)why;
	if (c != NULL) {
		free(c->body);
		free(c);
		*con_cls = NULL;
	}
}

/* A listening socket on addr:port; the port bound into *bound. */
static int
listen_on(struct spirt_faas_http *h, int *out)
{
	struct addrinfo hints, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char port[16];
	int fd, one = 1, rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	snprintf(port, sizeof port, "%u", h->port);
	if ((rc = getaddrinfo(h->addr, port, &hints, &ai)) != 0)
		return spirt_msgf(h->msg, sizeof h->msg, SPIRT_EINVAL,
		    "%s: not a numeric address", h->addr);
	fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0) {
		rc = errno;
		freeaddrinfo(ai);
		return spirt_msgrc(h->msg, sizeof h->msg, rc, "socket");
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
		rc = errno;
		freeaddrinfo(ai);
		close(fd);
		return spirt_msgrc(h->msg, sizeof h->msg, rc, "%s port %u",
		    h->addr, h->port);
	}
	freeaddrinfo(ai);
	h->bound = ss.ss_family == AF_INET6 ?
	    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
	    ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*out = fd;
	return 0;
}

int
spirt_faas_http_start(struct spirt_faas_http *h)
{
	struct srv *s;
	int rc, fd = -1;

	if ((rc = load(h)) != 0)
		return rc;
	if ((s = calloc(1, sizeof *s)) == NULL)
		return ENOMEM;
	if ((rc = listen_on(h, &fd)) != 0) {
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->fd = fd;
	h->priv = s;
	s->d = mhd.start(MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, h,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)SPIRT_FAAS_HTTP_CONN,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
	    MHD_OPTION_END);
	if (s->d == NULL) {
		close(fd);
		pthread_mutex_destroy(&s->lock);
		free(s);
		h->priv = NULL;
		return spirt_msgf(h->msg, sizeof h->msg, EIO,
		    "libmicrohttpd did not start");
	}
	return 0;
}

void
spirt_faas_http_drain(struct spirt_faas_http *h)
{
	struct srv *s = h->priv;

	if (s != NULL)
		s->draining = 1;
}

void
spirt_faas_http_stop(struct spirt_faas_http *h)
{
	struct srv *s = h->priv;

	if (s == NULL)
		return;
	s->draining = 1;
	// joins the threads, so requests under way finish; closes the
	// listening socket, which MHD owns once started
	mhd.stop(s->d);
	pthread_mutex_destroy(&s->lock);
	free(s);
	h->priv = NULL;
}
