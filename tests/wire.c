/* wire.c - a switch with slow links in user space, for tests and benches */
/*
 * Where the kernel has no netem (CONFIG_NET_SCH_NETEM unset), nothing in
 * it delays or loses packets on purpose: tests/netns.bash then joins its
 * hosts through this program instead of a bridge.  Run in the hub
 * namespace, it makes one TAP device per host (the harness moves each
 * into its host's namespace, where it is that host's eth0: a TAP keeps
 * working after `ip link set tapX netns NS`), and forwards Ethernet
 * frames between them as a learning switch (by source MAC; broadcast,
 * multicast and unknown destinations flooded), each host's link shaped as
 * tests/netns.bash's netns_link documents it:
 *
 *   host i --[rate i]--> switch --[loss j, rate j, delay j]--> host j
 *
 * a frame from host i waits for its serialisation at host i's rate (a
 * FIFO of at most `limit` frames, tail drop), is switched, may be lost
 * (host j's loss, a seeded PRNG), waits for its serialisation at host
 * j's rate (the same kind of FIFO) and then host j's one-way delay.  So
 * between two hosts shaped "delay 10ms" a round trip takes 20 ms at
 * least, as with netem on the hub's veths.  No frame is ever delivered
 * before its time; late wake-ups (a loaded machine) make it later, never
 * earlier, and do not shift the frames after it: every time is computed
 * from the previous frame's due time, not from when it was handled.
 *
 * usage: wire [-s seed] [-n frames] dir tap ...
 *
 * dir: a directory of the harness's; wire makes dir/ctl, a FIFO it reads
 * commands from (one a line), and writes dir/state (atomically, by
 * rename) once the TAPs exist and after every command.  A command is
 *
 *   TOKEN PORT SPEC     shape port PORT (1.., the order of the taps):
 *                       SPEC is "none" or netem's words "rate R"
 *                       (bit, kbit, mbit, gbit), "delay D" (us, ms, s),
 *                       "loss P%" and "limit N" (frames a queue, netem's
 *                       default 1000), in any order; what is not named
 *                       goes back to its default (unshaped)
 *   TOKEN PORT down     the link is cut: every frame from and to the
 *                       host dropped (counted), and the TAP without
 *                       carrier, so the host sees its eth0 down, as a
 *                       veth whose other end is set down
 *   TOKEN PORT up       the link is back, shaped as before
 *   TOKEN stat          only write the state (its counters) again
 *
 * and dir/state's first line names the last tokens done, TOKEN:ok or
 * TOKEN:bad (a bad command changes nothing; why is on stderr), then one
 * line a port: its shaping, in tc's words, and its counters (frames in
 * from the host, out to it, lost by the loss, dropped by a full queue,
 * and the bytes in and out: "bytes IN OUT", Ethernet frames, as a
 * veth's counters count them).
 *
 * Memory is bounded: a pool of -n frames (default 8192) of at most
 * FRAME_MAX bytes (the TAP's MTU of 1500 and a header); while it is
 * empty no TAP is read (the host's own queue holds or drops).  Ends on
 * SIGTERM or SIGINT, when its parent dies (PR_SET_PDEATHSIG: the test
 * shell that started it), and when every TAP is gone (the hosts'
 * namespaces deleted).  Exit 0, 64 on misuse, 71 when it cannot set up.
 * Linux only (TAP, ppoll, prctl): test infrastructure, not installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "wire"
#define FRAME_MAX 1600          /* an MTU of 1500, the header, a VLAN tag */
#define PORTS_MAX 64
#define MACS_MAX 256
#define BATCH 32                /* frames read from one TAP in a turn */
#define ACKS 8                  /* tokens named in the state's first line */

struct frame {
	struct frame *next;
	uint64_t due;           /* ns, CLOCK_MONOTONIC */
	size_t len;
	unsigned char data[FRAME_MAX];
};

struct queue {
	struct frame *head, *tail;
	size_t n;
	uint64_t busy;          /* the link serialises until then */
};

struct shape {
	uint64_t rate;          /* bit/s, 0: no limit */
	uint64_t delay;         /* ns */
	double loss;            /* 0..1 */
	size_t limit;           /* frames a queue */
};

struct port {
	int fd;                 /* -1: gone */
	int down;               /* cut: nothing in or out */
	char name[IFNAMSIZ];
	struct shape sh;
	struct queue in, out;   /* from the host; to the host */
	uint64_t nin, nout, lost, dropped;
	uint64_t bin, bout;     /* bytes of the frames in and out */
};

static struct port ports[PORTS_MAX];
static size_t nports;
static struct frame *pool;      /* free frames */
static struct {
	unsigned char mac[6];
	size_t port;
} macs[MACS_MAX];
static size_t nmacs, nextmac;
static uint64_t rng;
static char acks[ACKS][80];
static size_t nacks;
static volatile sig_atomic_t stop;

static void
onsig(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: seeded, so that a run's losses can be repeated */
static double
uniform(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1p-53;
}

static struct frame *
frame_get(void)
{
	struct frame *f = pool;

	if (f != NULL)
		pool = f->next;
	return f;
}

static void
frame_put(struct frame *f)
{
	f->next = pool;
	pool = f;
}

static void
queue_push(struct queue *q, struct frame *f)
{
	f->next = NULL;
	if (q->tail != NULL)
		q->tail->next = f;
	else
		q->head = f;
	q->tail = f;
	q->n++;
}

static struct frame *
queue_pop(struct queue *q)
{
	struct frame *f = q->head;

	q->head = f->next;
	if (q->head == NULL)
		q->tail = NULL;
	q->n--;
	return f;
}

/*
 * enqueue: f, ready at t, on q of a link shaped sh, after delay (0 or
 * sh's); 0, or -1 (dropped: the queue is full; f is the caller's)
 */
static int
enqueue(struct queue *q, const struct shape *sh, struct frame *f, uint64_t t,
    uint64_t delay)
{
	uint64_t start;

	if (q->n >= sh->limit)
		return -1;
	if (sh->rate > 0) {
		start = q->busy > t ? q->busy : t;
		q->busy = start + (uint64_t)f->len * 8000000000u / sh->rate;
		t = q->busy;
	}
	f->due = t + delay;
	queue_push(q, f);
	return 0;
}

/* learn: the frame's source address is behind port p */
static void
learn(const unsigned char *src, size_t p)
{
	size_t k;

	if (src[0] & 1)
		return;
	for (k = 0; k < nmacs; k++)
		if (memcmp(macs[k].mac, src, 6) == 0) {
			macs[k].port = p;
			return;
		}
	// full: the oldest entry goes (a frame to it is flooded)
	k = nmacs < MACS_MAX ? nmacs++ : nextmac++ % MACS_MAX;
	memcpy(macs[k].mac, src, 6);
	macs[k].port = p;
}

/* lookup: the port behind dst, or nports (flood) */
static size_t
lookup(const unsigned char *dst)
{
	size_t k;

	if (dst[0] & 1)
		return nports;
	for (k = 0; k < nmacs; k++)
		if (memcmp(macs[k].mac, dst, 6) == 0)
			return macs[k].port;
	return nports;
}

/* toward: the frame f (switched at t) onto port j's way out, or lost */
static void
toward(size_t j, struct frame *f, uint64_t t)
{
	struct port *o = &ports[j];

	if (o->fd < 0) {
		frame_put(f);
	} else if (o->down) {
		o->dropped++;
		frame_put(f);
	} else if (o->sh.loss > 0 && uniform() < o->sh.loss) {
		o->lost++;
		frame_put(f);
	} else if (enqueue(&o->out, &o->sh, f, t, o->sh.delay) != 0) {
		o->dropped++;
		frame_put(f);
	}
}

/* forward: a frame out of port i's queue in, at its due time */
static void
forward(size_t i, struct frame *f)
{
	size_t j, d;
	struct frame *c;

	if (f->len < 14) {
		frame_put(f);
		return;
	}
	learn(f->data + 6, i);
	d = lookup(f->data);
	if (d == i) {
		frame_put(f);
		return;
	}
	if (d < nports) {
		toward(d, f, f->due);
		return;
	}
	// flood: a copy to every other port (none left: that one is lost)
	for (j = 0; j < nports; j++) {
		if (j == i || ports[j].fd < 0)
			continue;
		if ((c = frame_get()) == NULL) {
			ports[j].dropped++;
			continue;
		}
		c->len = f->len;
		memcpy(c->data, f->data, f->len);
		toward(j, c, f->due);
	}
	frame_put(f);
}

/* due: handle every frame due by now; the next due time (UINT64_MAX: none) */
static uint64_t
due(uint64_t now)
{
	uint64_t next = UINT64_MAX;
	struct frame *f;
	size_t i;

	// first what is switched: it may be due out at once
	for (i = 0; i < nports; i++)
		while (ports[i].in.head != NULL && ports[i].in.head->due <= now)
			forward(i, queue_pop(&ports[i].in));
	for (i = 0; i < nports; i++) {
		struct port *o = &ports[i];

		while (o->out.head != NULL && o->out.head->due <= now) {
			f = queue_pop(&o->out);
			// a TAP takes a whole frame or none (EAGAIN, EIO
			// while the host's eth0 is down): none is a drop
			if (o->fd >= 0 && write(o->fd, f->data, f->len) ==
			    (ssize_t)f->len) {
				o->nout++;
				o->bout += f->len;
			} else
				o->dropped++;
			frame_put(f);
		}
	}
	for (i = 0; i < nports; i++) {
		if (ports[i].in.head != NULL && ports[i].in.head->due < next)
			next = ports[i].in.head->due;
		if (ports[i].out.head != NULL && ports[i].out.head->due < next)
			next = ports[i].out.head->due;
	}
	return next;
}

/* port_close: the TAP is gone (its namespace deleted): forget its frames */
static void
port_close(struct port *p)
{
	close(p->fd);
	p->fd = -1;
	while (p->in.head != NULL)
		frame_put(queue_pop(&p->in));
	while (p->out.head != NULL)
		frame_put(queue_pop(&p->out));
}

/* readtap: up to BATCH frames from port i's TAP, queued at now */
static void
readtap(size_t i, uint64_t now)
{
	struct port *p = &ports[i];
	struct frame *f;
	ssize_t r;
	int k;

	for (k = 0; k < BATCH; k++) {
		if ((f = frame_get()) == NULL)
			return;
		r = read(p->fd, f->data, sizeof f->data);
		if (r <= 0) {
			frame_put(f);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			fprintf(stderr, "%s: %s: %s\n", PROG, p->name,
			    r < 0 ? strerror(errno) : "end of file");
			port_close(p);
			return;
		}
		f->len = (size_t)r;
		p->nin++;
		p->bin += f->len;
		if (p->down || enqueue(&p->in, &p->sh, f, now, 0) != 0) {
			p->dropped++;
			frame_put(f);
		}
	}
}

/* number: a decimal with a unit of units[] (scale[] each); 0 or -1 */
static int
number(const char *s, const char *const *units, const double *scale,
    double *out)
{
	char *end;
	double v;
	size_t k;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno != 0 || !(v >= 0) || v > 1e18)
		return -1;
	for (k = 0; units[k] != NULL; k++)
		if (strcasecmp(end, units[k]) == 0) {
			*out = v * scale[k];
			return 0;
		}
	return -1;
}

/* parse: SPEC's words (strtok_r state in save) into sh; 0 or -1 */
static int
parse(char **save, struct shape *sh)
{
	static const char *const rates[] = { "bit", "kbit", "mbit", "gbit",
		NULL };
	static const double rscale[] = { 1, 1e3, 1e6, 1e9 };
	static const char *const times[] = { "us", "ms", "s", NULL };
	static const double tscale[] = { 1e3, 1e6, 1e9 };
	static const char *const pct[] = { "%", NULL };
	static const double pscale[] = { 0.01 };
	static const char *const none[] = { "", NULL };
	static const double one[] = { 1 };
	struct shape s = { 0, 0, 0, 1000 };
	char *w, *v;
	double x;

	if ((w = strtok_r(NULL, " \t", save)) == NULL)
		return -1;
	if (strcmp(w, "none") == 0) {
		*sh = s;
		return strtok_r(NULL, " \t", save) == NULL ? 0 : -1;
	}
	for (; w != NULL; w = strtok_r(NULL, " \t", save)) {
		if ((v = strtok_r(NULL, " \t", save)) == NULL)
			return -1;
		if (strcmp(w, "rate") == 0) {
			if (number(v, rates, rscale, &x) != 0 || x < 1)
				return -1;
			s.rate = (uint64_t)x;
		} else if (strcmp(w, "delay") == 0) {
			if (number(v, times, tscale, &x) != 0 || x > 1e11)
				return -1;
			s.delay = (uint64_t)x;
		} else if (strcmp(w, "loss") == 0) {
			if (number(v, pct, pscale, &x) != 0 || x > 1)
				return -1;
			s.loss = x;
		} else if (strcmp(w, "limit") == 0) {
			if (number(v, none, one, &x) != 0 || x < 1 || x > 1e6)
				return -1;
			s.limit = (size_t)x;
		} else {
			return -1;
		}
	}
	*sh = s;
	return 0;
}

/* state: dir/state written anew (tmp and rename); 0 or -1 */
static int
state(const char *dir)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	FILE *f;
	size_t i;

	if (snprintf(tmp, sizeof tmp, "%s/state.tmp", dir) >= (int)sizeof tmp ||
	    snprintf(path, sizeof path, "%s/state", dir) >= (int)sizeof path ||
	    (f = fopen(tmp, "w")) == NULL)
		return -1;
	fputs("acks", f);
	for (i = 0; i < nacks && i < ACKS; i++)
		fprintf(f, " %s", acks[(nacks - 1 - i) % ACKS]);
	fputc('\n', f);
	for (i = 0; i < nports; i++) {
		const struct port *p = &ports[i];
		const struct shape *s = &p->sh;

		fprintf(f, "%zu", i + 1);
		if (s->rate == 0)
			fputs(" rate none", f);
		else if (s->rate % 1000000000u == 0)
			fprintf(f, " rate %" PRIu64 "Gbit", s->rate / 1000000000u);
		else if (s->rate % 1000000u == 0)
			fprintf(f, " rate %" PRIu64 "Mbit", s->rate / 1000000u);
		else if (s->rate % 1000u == 0)
			fprintf(f, " rate %" PRIu64 "Kbit", s->rate / 1000u);
		else
			fprintf(f, " rate %" PRIu64 "bit", s->rate);
		fprintf(f, " delay %gms loss %g%% limit %zu", (double)s->delay / 1e6,
		    s->loss * 100, s->limit);
		fprintf(f, " in %" PRIu64 " out %" PRIu64 " lost %" PRIu64
		    " dropped %" PRIu64 " bytes %" PRIu64 " %" PRIu64 "%s\n",
		    p->nin, p->nout, p->lost, p->dropped, p->bin, p->bout,
		    p->fd < 0 ? " gone" : p->down ? " down" : "");
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		return -1;
	return 0;
}

/*
 * updown: rest is "down" or "up" (and nothing after): the port cut or
 * back, its TAP's carrier with it; 1 done, 0 failed (errno), -1 not such
 * a command (rest is left as it was)
 */
static int
updown(struct port *p, const char *rest)
{
	char w[8];
	int on, n = 0;

	if (sscanf(rest, " %7s %n", w, &n) != 1 || rest[n] != '\0')
		return -1;
	if (strcmp(w, "down") == 0)
		on = 0;
	else if (strcmp(w, "up") == 0)
		on = 1;
	else
		return -1;
	p->down = !on;
	if (p->fd < 0)
		return 1;
	if (on == 0) {
		while (p->in.head != NULL)
			frame_put(queue_pop(&p->in));
		while (p->out.head != NULL)
			frame_put(queue_pop(&p->out));
	}
	return ioctl(p->fd, TUNSETCARRIER, &on) == 0;
}

/* command: one line of dir/ctl, done, and acknowledged in the state */
static void
command(const char *dir, char *line)
{
	char *save, *tok, *w, *end;
	struct shape sh;
	unsigned long p;
	int ok = 0, r;

	if ((tok = strtok_r(line, " \t", &save)) == NULL)
		return;
	if ((w = strtok_r(NULL, " \t", &save)) == NULL) {
		fprintf(stderr, "%s: ctl: %s: no command\n", PROG, tok);
	} else if (strcmp(w, "stat") == 0) {
		ok = 1;
	} else {
		errno = 0;
		p = strtoul(w, &end, 10);
		if (*end != '\0' || p < 1 || p > nports)
			fprintf(stderr, "%s: ctl: %s: no port %s\n", PROG,
			    tok, w);
		else if ((r = updown(&ports[p - 1], save != NULL ? save :
		    "")) >= 0) {
			ok = r;
			if (r == 0)
				fprintf(stderr, "%s: ctl: %s: port %lu: "
				    "carrier: %s\n", PROG, tok, p,
				    strerror(errno));
		} else if (parse(&save, &sh) != 0)
			fprintf(stderr, "%s: ctl: %s: port %lu: a bad shape "
			    "(none, or rate R, delay D, loss P%%, limit N)\n",
			    PROG, tok, p);
		else {
			ports[p - 1].sh = sh;
			ok = 1;
		}
	}
	snprintf(acks[nacks++ % ACKS], sizeof acks[0], "%.64s:%s", tok,
	    ok ? "ok" : "bad");
	if (state(dir) != 0)
		fprintf(stderr, "%s: %s/state: %s\n", PROG, dir,
		    strerror(errno));
}

/* tap_open: a TAP named name in this namespace, non-blocking; fd or -1 */
static int
tap_open(const char *name)
{
	struct ifreq ifr;
	int fd;

	if ((fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		return -1;
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static void
usage(void)
{
	fputs("usage: wire [-s seed] [-n frames] dir tap ...\n", stderr);
	exit(64);
}

int
main(int argc, char **argv)
{
	char ctl[PATH_MAX], buf[4096];
	size_t have = 0, i, nframes = 8192;
	struct pollfd pfd[PORTS_MAX + 1];
	struct sigaction sa;
	sigset_t block, old;
	const char *dir;
	char *end;
	int c, cfd;

	rng = 1;
	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		switch (c) {
		case 'n':
			errno = 0;
			nframes = strtoul(optarg, &end, 10);
			if (*end != '\0' || errno != 0 || nframes < 16 ||
			    nframes > 1000000)
				usage();
			break;
		case 's':
			errno = 0;
			rng = strtoull(optarg, &end, 10);
			if (*end != '\0' || errno != 0)
				usage();
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2 || argc - 1 > PORTS_MAX)
		usage();
	dir = argv[0];

	// the test shell dies: so does the wire (and its TAPs with it)
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = onsig;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() == 1)
		return 0;
	// a frame due in 120 us should not wait for the default 50 us slack
	prctl(PR_SET_TIMERSLACK, 1UL);

	for (i = 0; i < nframes; i++) {
		struct frame *f = malloc(sizeof *f);

		if (f == NULL) {
			fprintf(stderr, "%s: %zu frames: %s\n", PROG, nframes,
			    strerror(errno));
			return 71;
		}
		frame_put(f);
	}
	nports = (size_t)argc - 1;
	for (i = 0; i < nports; i++) {
		struct port *p = &ports[i];

		snprintf(p->name, sizeof p->name, "%s", argv[i + 1]);
		p->sh.limit = 1000;
		if ((p->fd = tap_open(p->name)) < 0) {
			fprintf(stderr, "%s: tap %s: %s\n", PROG, p->name,
			    strerror(errno));
			return 71;
		}
	}
	// O_RDWR: the FIFO never reads as ended between two writers
	if (snprintf(ctl, sizeof ctl, "%s/ctl", dir) >= (int)sizeof ctl ||
	    (mkfifo(ctl, 0600) != 0 && errno != EEXIST) ||
	    (cfd = open(ctl, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: %s: %s\n", PROG, ctl, strerror(errno));
		return 71;
	}
	if (state(dir) != 0) {
		fprintf(stderr, "%s: %s/state: %s\n", PROG, dir,
		    strerror(errno));
		return 71;
	}

	while (!stop) {
		uint64_t now = now_ns(), next = due(now);
		struct timespec ts, *tp = NULL;
		size_t live = 0;

		for (i = 0; i < nports; i++) {
			pfd[i].fd = ports[i].fd;
			pfd[i].events = pool != NULL ? POLLIN : 0;
			pfd[i].revents = 0;
			live += ports[i].fd >= 0;
		}
		if (live == 0)
			break;
		pfd[nports].fd = cfd;
		pfd[nports].events = POLLIN;
		pfd[nports].revents = 0;
		if (next != UINT64_MAX) {
			uint64_t w = next > now ? next - now : 0;

			ts.tv_sec = (time_t)(w / 1000000000u);
			ts.tv_nsec = (long)(w % 1000000000u);
			tp = &ts;
		}
		if (ppoll(pfd, nports + 1, tp, &old) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: poll: %s\n", PROG, strerror(errno));
			return 71;
		}
		now = now_ns();
		for (i = 0; i < nports; i++) {
			if (ports[i].fd < 0)
				continue;
			if (pfd[i].revents & POLLIN)
				readtap(i, now);
			else if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				port_close(&ports[i]);
		}
		if (pfd[nports].revents & POLLIN) {
			ssize_t r = read(cfd, buf + have, sizeof buf - 1 - have);
			char *nl, *line = buf;

			if (r > 0)
				have += (size_t)r;
			buf[have] = '\0';
			while ((nl = strchr(line, '\n')) != NULL) {
				*nl = '\0';
				command(dir, line);
				line = nl + 1;
			}
			have -= (size_t)(line - buf);
			memmove(buf, line, have);
			// a line longer than the buffer: not a command
			if (have == sizeof buf - 1)
				have = 0;
		}
	}
	return 0;
}
