/*
 * soft-vs-tcp: the software device against the limits of the machine, in one
 * run between the same two processes on loopback (bench/README.md).
 *
 *   soft-vs-tcp [--quick] [--json] [--reps N] [--device NAME] [--qps N]
 *
 * The program forks: the parent is the client, the child the server. They
 * talk over a control TCP connection and measure, each figure next to its
 * reference:
 *   - bandwidth: RC RDMA WRITE and SEND of 64 B, 4 KiB, 64 KiB, 1 MiB messages
 *     against a raw TCP stream of send() calls of the same size (blocking);
 *   - latency: a 64 B and 4 KiB ping-pong (half the round trip), SEND/RECV
 *     against a TCP send/recv echo, once busy-polling on both (rv_cq_poll /
 *     recv(MSG_DONTWAIT), yielding after 64 empty polls) and once blocking on
 *     both (rv_cq_wait on a completion channel / blocking recv);
 *   - the same-host references: a ping-pong over a shared-memory flag and a
 *     single-thread memcpy of 1 MiB;
 *   - CPU: getrusage() of each process (all its threads, so the device's
 *     progress thread counts) over the wall time, in % of one core;
 *   - with --qps N: N connected RC QPs, traffic on all of them: memory per QP
 *     (resident set growth / N) and the aggregate message rate.
 * Medians over --reps repetitions. Public API only: this is what an
 * application sees.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define MAX_REPS 51
#define BW_DEPTH 128      /* WRs in flight */
#define BW_SIGNAL 16      /* one completion per this many */
#define RECV_SLOTS 64      /* receive buffers, always posted (reposted as they complete) */
#define SLOT (1u << 20)    /* each as large as the largest message */
#define SRC_OFF ((uint64_t)RECV_SLOTS * SLOT) /* the sending buffer follows them */
#define BUF_BYTES (SRC_OFF + SLOT)
#define SPIN_BEFORE_YIELD 64
#define TIMEOUT_MS 60000

enum op {
	OP_TCP_BW = 1, OP_WRITE_BW, OP_SEND_BW,
	OP_TCP_LAT, OP_SEND_LAT,
	OP_SHM_LAT, OP_MEMCPY,
	OP_SCALE,
	OP_QUIT
};
enum wait { WAIT_BUSY = 0, WAIT_BLOCK = 1 };

struct cmd {
	uint32_t op, wait;
	uint64_t size, iters;
};
struct reply {
	int32_t status;
	uint32_t pad;
	double cpu_s, wall_s, extra; /* extra: server resident bytes per QP (scale) */
};

/* One process's resources. */
struct side {
	int ctl, data; /* control and raw TCP data connections */
	rv_context *ctx;
	rv_pd *pd;
	rv_comp_channel *ch;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr; /* BUF_BYTES, local and remote write */
	rv_endpoint peer;
	volatile _Atomic uint64_t *shm; /* two counters in shared memory, [0] client's, [1] server's */
	uint64_t sends_out; /* signalled SENDs whose completion is not polled yet */
	uint64_t sends;     /* SENDs posted by the ping-pong */
};

static const char *g_device = "soft0";
/* Ping-pong: one SEND in this many is signalled (verbs practice: a completion
 * per send costs a wake-up; the SQ is reclaimed by the signalled ones). */
static unsigned g_signal = 16;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int die(const char *what, int rc)
{
	fprintf(stderr, "soft-vs-tcp: %s failed: %s\n  %s\n", what, strerror(rc < 0 ? -rc : rc), rv_error_last());
	return -1;
}

/* ---- sockets ---------------------------------------------------------------- */

static int full_io(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;
	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int put(int fd, const void *b, size_t l) { return full_io(fd, (void *)b, l, true); }
static int get(int fd, void *b, size_t l) { return full_io(fd, b, l, false); }

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int tcp_listener(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, l) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static int tcp_connect(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	nodelay(fd);
	return fd;
}

/* ---- rverbs setup ------------------------------------------------------------ */

static int open_ctx(struct side *s)
{
	rv_device *dev = NULL;
	int rc = rv_device_find(g_device, &dev);
	if (rc == 0)
		rc = rv_context_new(dev, NULL, &s->ctx);
	rv_device_unref(dev);
	if (rc < 0)
		return die("opening the device", rc);
	if ((rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0)
		return die("rv_pd_new", rc);
	return 0;
}

static int make_qp(struct side *s, rv_cq *cq, uint32_t depth, rv_qp **qp)
{
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL,
			     .send_cq = cq, .sq_sig_all = 0,
			     .cap = {.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1,
				     .max_inline_data = 64}};
	int rc = rv_qp_new(s->pd, &a, qp);
	return rc < 0 ? die("rv_qp_new", rc) : 0;
}

/* Send our endpoint (with the MR), receive the peer's, connect. */
static int exchange_connect(int ctl, rv_qp *qp, rv_mr *mr, rv_endpoint *peer)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep;
	size_t len;
	uint32_t l32;
	int rc;

	if ((rc = rv_qp_endpoint(qp, &ep)) < 0)
		return die("rv_qp_endpoint", rc);
	if (mr) {
		ep.mask |= RV_ENDPOINT_MR;
		ep.mr_addr = (uintptr_t)rv_mr_addr(mr);
		ep.mr_length = rv_mr_length(mr);
		ep.mr_rkey = rv_mr_rkey(mr);
	}
	if ((rc = rv_endpoint_pack(&ep, buf, sizeof(buf), &len)) < 0)
		return die("rv_endpoint_pack", rc);
	l32 = (uint32_t)len;
	if (put(ctl, &l32, 4) || put(ctl, buf, len) || get(ctl, &l32, 4) || l32 > sizeof(buf) || get(ctl, buf, l32))
		return die("the endpoint exchange", EPIPE);
	if ((rc = rv_endpoint_unpack(buf, l32, peer)) < 0)
		return die("rv_endpoint_unpack", rc);
	if ((rc = rv_qp_connect(qp, peer)) < 0)
		return die("rv_qp_connect", rc);
	return 0;
}

static int post_recv_slot(struct side *s, uint64_t slot);

static int setup_rdma(struct side *s)
{
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE | RV_CQ_ATTR_CHANNEL, .cqe = 1024};
	int rc;

	if (open_ctx(s) < 0)
		return -1;
	if ((rc = rv_comp_channel_new(s->ctx, NULL, &s->ch)) < 0)
		return die("rv_comp_channel_new", rc);
	ca.channel = s->ch;
	if ((rc = rv_cq_new(s->ctx, &ca, &s->cq)) < 0)
		return die("rv_cq_new", rc);
	if ((rc = rv_mr_alloc(s->pd, BUF_BYTES, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &s->mr)) < 0)
		return die("rv_mr_alloc", rc);
	memset(rv_mr_addr(s->mr), 0x5a, BUF_BYTES);
	if (make_qp(s, s->cq, 2 * BW_DEPTH, &s->qp) < 0)
		return -1;
	if (exchange_connect(s->ctl, s->qp, s->mr, &s->peer) < 0)
		return -1;
	for (uint64_t i = 0; i < RECV_SLOTS; i++)
		if (post_recv_slot(s, i) < 0)
			return -1;
	return 0;
}

static void teardown_rdma(struct side *s)
{
	if (s->ctx)
		rv_context_close(s->ctx);
	rv_qp_unref(s->qp);
	rv_cq_unref(s->cq);
	rv_comp_channel_unref(s->ch);
	rv_mr_unref(s->mr);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
}

/* ---- completions ------------------------------------------------------------- */

/* Wait for at least one completion; busy: poll (yield after a while), block: rv_cq_wait. */
static int wait_wc(rv_cq *cq, rv_wc *wc, int max, enum wait w)
{
	if (w == WAIT_BLOCK) {
		int n = rv_cq_wait(cq, wc, max, TIMEOUT_MS);
		return n < 0 ? die("rv_cq_wait", n) : n;
	}
	double deadline = now_s() + TIMEOUT_MS / 1000.0;
	for (unsigned spins = 0;; spins++) {
		int n = rv_cq_poll(cq, wc, max);
		if (n != 0)
			return n < 0 ? die("rv_cq_poll", n) : n;
		if (spins % SPIN_BEFORE_YIELD == SPIN_BEFORE_YIELD - 1) {
			sched_yield();
			if (now_s() > deadline)
				return die("waiting for a completion", ETIMEDOUT);
		}
	}
}

static int check_wc(const rv_wc *wc, int n)
{
	for (int i = 0; i < n; i++)
		if (wc[i].status != RV_WC_SUCCESS) {
			fprintf(stderr, "soft-vs-tcp: a work request failed: %s (%s)\n", rv_wc_status_str((int)wc[i].status),
				rv_wc_status_hint((int)wc[i].status));
			return -1;
		}
	return 0;
}

static int set_mode(struct side *s, enum wait w)
{
	int rc = rv_cq_set_wait_mode(s->cq, w == WAIT_BLOCK ? RV_CQ_WAIT_EVENT : RV_CQ_WAIT_POLL, 0);
	return rc < 0 ? die("rv_cq_set_wait_mode", rc) : 0;
}

static int post_recv_slot(struct side *s, uint64_t slot)
{
	rv_sge sge = {(uintptr_t)rv_mr_addr(s->mr) + slot * SLOT, SLOT, rv_mr_lkey(s->mr)};
	int rc = rv_qp_recv(s->qp, &sge, slot);
	return rc < 0 ? die("rv_qp_recv", rc) : 0;
}


/* ---- the measurements: client and server halves -------------------------------- */

/* Client: stream iters messages (TCP, WRITE or SEND); returns when the server has all of them. */
static int client_bw(struct side *s, const struct cmd *c)
{
	if (c->op == OP_TCP_BW) {
		char *buf = (char *)rv_mr_addr(s->mr) + SRC_OFF;
		for (uint64_t i = 0; i < c->iters; i++)
			if (put(s->data, buf, c->size))
				return die("TCP send", EPIPE);
		return 0;
	}
	rv_sge sge = {(uintptr_t)rv_mr_addr(s->mr) + SRC_OFF, (uint32_t)c->size, rv_mr_lkey(s->mr)};
	rv_wc wc[32];
	uint64_t posted = 0, done = 0;
	while (done < c->iters) {
		while (posted < c->iters && posted - done < BW_DEPTH) {
			bool sig = (posted + 1) % BW_SIGNAL == 0 || posted + 1 == c->iters;
			rv_send_wr wr = {.wr_id = posted + 1, .sg_list = &sge, .num_sge = 1,
					 .opcode = c->op == OP_WRITE_BW ? RV_WR_RDMA_WRITE : RV_WR_SEND,
					 .send_flags = sig ? RV_SEND_SIGNALED : 0,
					 .remote_addr = s->peer.mr_addr, .rkey = s->peer.mr_rkey};
			size_t np;
			int rc = rv_qp_post_send(s->qp, &wr, 1, &np);
			if (rc < 0)
				return die("rv_qp_post_send", rc);
			posted++;
		}
		int n = wait_wc(s->cq, wc, 32, WAIT_BLOCK);
		if (n < 0 || check_wc(wc, n))
			return -1;
		for (int i = 0; i < n; i++)
			done = wc[i].wr_id; /* signalled in order: covers every WR before it */
	}
	return 0;
}

static int server_bw(struct side *s, const struct cmd *c)
{
	if (c->op == OP_TCP_BW) {
		uint64_t left = c->iters * c->size;
		char *buf = rv_mr_addr(s->mr);
		while (left) {
			ssize_t n = recv(s->data, buf, left < SRC_OFF ? left : SRC_OFF, 0);
			if (n <= 0)
				return die("TCP recv", EPIPE);
			left -= (uint64_t)n;
		}
		return 0;
	}
	if (c->op == OP_WRITE_BW)
		return 0; /* one-sided: nothing to do; the client's completions say it was placed */
	rv_wc wc[32];
	uint64_t got = 0;
	while (got < c->iters) {
		int n = wait_wc(s->cq, wc, 32, WAIT_BLOCK);
		if (n < 0 || check_wc(wc, n))
			return -1;
		for (int i = 0; i < n; i++) {
			got++;
			if (post_recv_slot(s, wc[i].wr_id) < 0)
				return -1;
		}
	}
	return 0;
}

static int tcp_recv_wait(int fd, char *buf, size_t len, enum wait w)
{
	size_t off = 0;
	unsigned spins = 0;
	while (off < len) {
		ssize_t n = recv(fd, buf + off, len - off, w == WAIT_BUSY ? MSG_DONTWAIT : 0);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (++spins % SPIN_BEFORE_YIELD == 0)
				sched_yield();
			continue;
		}
		return -1;
	}
	return 0;
}

/* Wait for a receive completion; send completions that come along are consumed. */
static int wait_recv(struct side *s, enum wait w)
{
	rv_wc wc[8];
	for (;;) {
		int n = wait_wc(s->cq, wc, 8, w), got = 0;
		if (n < 0 || check_wc(wc, n))
			return -1;
		for (int i = 0; i < n; i++) {
			if (wc[i].opcode == RV_WC_RECV) {
				if (post_recv_slot(s, wc[i].wr_id) < 0)
					return -1;
				got++;
			} else {
				s->sends_out--;
			}
		}
		if (got)
			return got;
	}
}

static int send_one(struct side *s, uint64_t size)
{
	rv_sge sge = {(uintptr_t)rv_mr_addr(s->mr) + SRC_OFF, (uint32_t)size, rv_mr_lkey(s->mr)};
	bool sig = ++s->sends % g_signal == 0;
	rv_send_wr wr = {.wr_id = 1u << 31, .sg_list = &sge, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = sig ? RV_SEND_SIGNALED : 0};
	size_t np;
	int rc = rv_qp_post_send(s->qp, &wr, 1, &np);
	if (rc < 0)
		return die("rv_qp_post_send", rc);
	s->sends_out += sig;
	return 0;
}

static int pingpong(struct side *s, const struct cmd *c, bool client)
{
	char *buf = rv_mr_addr(s->mr);
	enum wait w = c->wait;

	for (uint64_t i = 0; i < c->iters; i++) {
		if (c->op == OP_TCP_LAT) {
			if (client && put(s->data, buf, c->size))
				return -1;
			if (tcp_recv_wait(s->data, buf, c->size, w))
				return die("TCP ping-pong", EPIPE);
			if (!client && put(s->data, buf, c->size))
				return -1;
		} else if (c->op == OP_SEND_LAT) {
			if (client && send_one(s, c->size) < 0)
				return -1;
			if (wait_recv(s, w) < 0)
				return -1;
			if (!client && send_one(s, c->size) < 0)
				return -1;
		} else { /* OP_SHM_LAT: each side bumps its counter and waits for the other's */
			uint64_t want = i + 1;
			unsigned spins = 0;
			if (client)
				atomic_store(&s->shm[0], want);
			while (atomic_load(&s->shm[client ? 1 : 0]) != want)
				if (++spins % SPIN_BEFORE_YIELD == 0)
					sched_yield();
			if (!client)
				atomic_store(&s->shm[1], want);
		}
	}
	return 0;
}

/* Take the send completions a ping-pong left behind (every SEND is signalled). */
static int drain(struct side *s)
{
	rv_wc wc[16];
	while (s->sends_out) {
		int n = wait_wc(s->cq, wc, 16, WAIT_BUSY);
		if (n < 0 || check_wc(wc, n))
			return -1;
		for (int i = 0; i < n; i++)
			if (wc[i].opcode != RV_WC_RECV)
				s->sends_out--;
	}
	return 0;
}

static int memcpy_run(const struct cmd *c)
{
	char *a = malloc(c->size), *b = malloc(c->size);
	if (!a || !b) {
		free(a);
		free(b);
		return -1;
	}
	memset(a, 1, c->size);
	memset(b, 2, c->size);
	for (uint64_t i = 0; i < c->iters; i++) {
		memcpy(i % 2 ? a : b, i % 2 ? b : a, c->size);
		__asm__ volatile("" ::: "memory");
	}
	free(a);
	free(b);
	return 0;
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

/* Scale: c->size QPs on one CQ, each side; the client WRITEs c->iters times on every QP. */
static int scale_run(struct side *s, const struct cmd *c, bool client, double *per_qp, double *t0, double *t1)
{
	uint32_t n = (uint32_t)c->size;
	rv_qp **qps = calloc(n, sizeof(*qps));
	rv_cq *cq = NULL;
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = n * 2 < 1024 ? 1024 : n * 2};
	long before = rss_bytes();
	int rc, ret = -1;

	if (!qps || (rc = rv_cq_new(s->ctx, &ca, &cq)) < 0) {
		die("the scale CQ", -ENOMEM);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		rv_endpoint peer;
		if (make_qp(s, cq, 4, &qps[i]) < 0 || exchange_connect(s->ctl, qps[i], NULL, &peer) < 0)
			goto out;
	}
	*per_qp = (double)(rss_bytes() - before) / n;
	/* Both sides connected before the clock starts. */
	char sync = 0;
	if (put(s->ctl, &sync, 1) || get(s->ctl, &sync, 1))
		goto out;
	*t0 = now_s();
	if (client) {
		rv_sge sge = {(uintptr_t)rv_mr_addr(s->mr) + SRC_OFF, 64, rv_mr_lkey(s->mr)};
		uint64_t want = (uint64_t)n * c->iters, done = 0;
		rv_wc wc[64];
		for (uint64_t round = 0; round < c->iters; round++) {
			for (uint32_t i = 0; i < n; i++) {
				rv_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
						 .send_flags = RV_SEND_SIGNALED, .remote_addr = s->peer.mr_addr,
						 .rkey = s->peer.mr_rkey};
				size_t np;
				if ((rc = rv_qp_post_send(qps[i], &wr, 1, &np)) < 0) {
					die("rv_qp_post_send (scale)", rc);
					goto out;
				}
			}
			/* One WR per QP in flight per round: wait for the round. */
			while (done < (round + 1) * n) {
				int k = wait_wc(cq, wc, 64, WAIT_BUSY);
				if (k < 0 || check_wc(wc, k))
					goto out;
				done += (uint64_t)k;
			}
		}
		(void)want;
	}
	*t1 = now_s();
	if (put(s->ctl, &sync, 1) || get(s->ctl, &sync, 1))
		goto out;
	ret = 0;
out:
	for (uint32_t i = 0; qps && i < n; i++)
		if (qps[i]) {
			rv_qp_close(qps[i]);
			rv_qp_unref(qps[i]);
		}
	rv_cq_unref(cq);
	free(qps);
	return ret;
}

/* ---- server ----------------------------------------------------------------- */

static int server(struct side *s)
{
	struct cmd c;

	for (;;) {
		struct reply r = {0};
		double c0, w0;

		if (get(s->ctl, &c, sizeof(c)))
			return -1;
		if (c.op == OP_QUIT)
			return 0;
		if (c.op == OP_SEND_LAT || c.op == OP_SEND_BW)
			if (set_mode(s, c.op == OP_SEND_BW ? WAIT_BLOCK : c.wait) < 0)
				return -1;
		/* Ready: the client starts its clock when it reads this. */
		char ready = 1;
		if (put(s->ctl, &ready, 1))
			return -1;
		c0 = cpu_s();
		w0 = now_s();
		switch (c.op) {
		case OP_TCP_BW:
		case OP_WRITE_BW:
		case OP_SEND_BW:
			r.status = server_bw(s, &c);
			break;
		case OP_TCP_LAT:
		case OP_SEND_LAT:
		case OP_SHM_LAT:
			r.status = pingpong(s, &c, false);
			break;
		case OP_MEMCPY:
			break;
		case OP_SCALE: {
			double t0, t1;
			r.status = scale_run(s, &c, false, &r.extra, &t0, &t1);
			break;
		}
		default:
			r.status = -1;
		}
		if (c.op == OP_WRITE_BW) {
			/* Wait for the client's "done" so that the CPU time covers the transfer. */
			char d;
			if (get(s->ctl, &d, 1))
				return -1;
		}
		r.cpu_s = cpu_s() - c0;
		r.wall_s = now_s() - w0;
		if (c.op == OP_SEND_LAT && drain(s) < 0)
			r.status = -1;
		if (put(s->ctl, &r, sizeof(r)))
			return -1;
	}
}

/* ---- client: one measurement ------------------------------------------------- */

struct sample {
	double value; /* Gb/s (bandwidth), µs (latency, half round trip), or msgs/s (scale) */
	double cpu_c, cpu_s; /* % of one core */
	double extra;        /* scale: bytes per QP (client, server average) */
};

static int run(struct side *s, uint32_t op, enum wait w, uint64_t size, uint64_t iters, struct sample *out)
{
	struct cmd c = {op, w, size, iters};
	struct reply r;
	char ready;
	double c0, w0, wall, t0 = 0, t1 = 0, per_qp = 0;
	int rc = 0;

	out->value = out->cpu_c = out->cpu_s = out->extra = NAN;
	if (op == OP_SEND_LAT || op == OP_SEND_BW || op == OP_WRITE_BW)
		if (set_mode(s, op == OP_SEND_LAT ? w : WAIT_BLOCK) < 0)
			return -1;
	atomic_store(&s->shm[0], 0);
	atomic_store(&s->shm[1], 0);
	if (put(s->ctl, &c, sizeof(c)) || get(s->ctl, &ready, 1))
		return -1;
	c0 = cpu_s();
	w0 = now_s();
	switch (op) {
	case OP_TCP_BW:
	case OP_WRITE_BW:
	case OP_SEND_BW:
		rc = client_bw(s, &c);
		break;
	case OP_TCP_LAT:
	case OP_SEND_LAT:
	case OP_SHM_LAT:
		rc = pingpong(s, &c, true);
		break;
	case OP_MEMCPY:
		rc = memcpy_run(&c);
		break;
	case OP_SCALE:
		rc = scale_run(s, &c, true, &per_qp, &t0, &t1);
		break;
	}
	if (op == OP_WRITE_BW && put(s->ctl, &ready, 1))
		return -1;
	if (get(s->ctl, &r, sizeof(r)))
		return -1;
	/* Bandwidth: the clock stops when the server has everything (its reply). */
	wall = now_s() - w0;
	out->cpu_c = 100 * (cpu_s() - c0) / wall;
	/* Both over the client's wall time, which brackets the server's part. */
	out->cpu_s = 100 * r.cpu_s / wall;
	if (op == OP_SEND_LAT && drain(s) < 0)
		rc = -1;
	if (rc < 0 || r.status < 0)
		return -1;
	switch (op) {
	case OP_TCP_BW:
	case OP_WRITE_BW:
	case OP_SEND_BW:
	case OP_MEMCPY:
		out->value = (double)size * (double)iters * 8 / wall / 1e9;
		break;
	case OP_SCALE:
		out->value = (double)size * (double)iters / (t1 - t0);
		out->extra = (per_qp + r.extra) / 2;
		break;
	default:
		out->value = wall / (double)iters / 2 * 1e6;
	}
	return 0;
}

/* ---- tables ------------------------------------------------------------------ */

struct row {
	const char *what;  /* "RDMA WRITE bandwidth" ... */
	const char *ref;   /* "raw TCP stream" ... */
	const char *unit;  /* "Gb/s" or "µs" */
	uint64_t size;
	uint32_t op, ref_op;
	enum wait wait;
	bool higher_better;
	double v[MAX_REPS], r[MAX_REPS], cc[MAX_REPS], cs[MAX_REPS], rc_[MAX_REPS], rs[MAX_REPS];
	double mv, mr, mcc, mcs, mrc, mrs;
};

static struct row mkrow(const char *what, const char *ref, const char *unit, uint64_t size, uint32_t op,
			uint32_t ref_op, enum wait wait, bool higher_better)
{
	struct row r;
	memset(&r, 0, sizeof(r));
	r.what = what;
	r.ref = ref;
	r.unit = unit;
	r.size = size;
	r.op = op;
	r.ref_op = ref_op;
	r.wait = wait;
	r.higher_better = higher_better;
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(const double *in, int n)
{
	double v[MAX_REPS];
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(in[i]))
			v[k++] = in[i];
	if (!k)
		return NAN;
	qsort(v, (size_t)k, sizeof(*v), cmp_double);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static void jnum(const char *k, double v, bool comma)
{
	if (isfinite(v))
		printf("\"%s\": %.6g%s", k, v, comma ? ", " : "");
	else
		printf("\"%s\": null%s", k, comma ? ", " : "");
}

static void size_str(uint64_t b, char *s, size_t l)
{
	if (b >= (1u << 20))
		snprintf(s, l, "%" PRIu64 " MiB", b >> 20);
	else if (b >= 1024)
		snprintf(s, l, "%" PRIu64 " KiB", b >> 10);
	else
		snprintf(s, l, "%" PRIu64 " B", b);
}

static void cell(char *s, size_t l, const char *f, double v)
{
	if (isfinite(v))
		snprintf(s, l, f, v);
	else
		snprintf(s, l, "n/a");
}

static int usage(void)
{
	fprintf(stderr, "usage: soft-vs-tcp [--quick] [--json] [--reps N] [--device NAME] [--qps N]\n"
			"  --quick     a short smoke pass (1 repetition, few messages)\n"
			"  --json      one JSON object on stdout instead of the table\n"
			"  --reps N    repetitions per figure (default 5; medians are printed)\n"
			"  --device    the device (default soft0)\n"
			"  --qps N     also the scale run: N connected RC QPs (default 0: none)\n"
			"  --only TEXT only the figures whose name contains TEXT (e.g. \"WRITE bandwidth\")\n"
			"  --size B    only the figures of B-byte messages\n"
			"  --signal N  ping-pong: signal one SEND in N (default 16; 1 = every SEND)\n"
			"  --no-ref    skip the reference runs (to profile the device alone: perf, strace)\n"
			"  --ref-only  skip the device's runs (to profile the references alone)\n"
			"  --mib N     bandwidth: N MiB per figure and repetition (default 64)\n");
	return 2;
}

int main(int argc, char **argv)
{
	bool quick = false, json = false, no_ref = false, ref_only = false;
	int reps = 5, nqps = 0;
	uint64_t bw_mib = 64;
	const char *only = NULL;
	uint64_t only_size = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			g_device = argv[++i];
		else if (!strcmp(argv[i], "--qps") && i + 1 < argc)
			nqps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--signal") && i + 1 < argc)
			g_signal = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			only_size = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--no-ref"))
			no_ref = true;
		else if (!strcmp(argv[i], "--ref-only"))
			ref_only = true;
		else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
			bw_mib = strtoull(argv[++i], NULL, 0);
		else
			return usage();
	}
	if (quick && reps == 5)
		reps = 1;
	if (reps < 1 || reps > MAX_REPS || nqps < 0 || nqps > 100000 || g_signal < 1 || g_signal > 64 || bw_mib < 1 ||
	    bw_mib > 65536)
		return usage();

	/* Shared memory for the raw same-host reference, mapped before the fork. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		/* The scale run holds a socket per QP in each process. */
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	void *shm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int port, lfd = tcp_listener(&port);
	if (shm == MAP_FAILED || lfd < 0) {
		perror("soft-vs-tcp: setup");
		return 1;
	}
	struct side s = {.ctl = -1, .data = -1, .shm = shm};
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(lfd);
		s.ctl = tcp_connect(port);
		s.data = tcp_connect(port);
		int rc = s.ctl < 0 || s.data < 0 || setup_rdma(&s) < 0 ? 1 : server(&s) < 0;
		teardown_rdma(&s);
		_exit(rc);
	}
	s.ctl = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	s.data = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	if (s.ctl < 0 || s.data < 0)
		return 1;
	nodelay(s.ctl);
	nodelay(s.data);
	if (setup_rdma(&s) < 0) {
		teardown_rdma(&s);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return 1;
	}

	static const uint64_t bw_sizes[] = {64, 4096, 65536, 1u << 20};
	static const uint64_t lat_sizes[] = {64, 4096};
	static struct row rows[32];
	int nr = 0;
	for (size_t i = 0; i < 4; i++) {
		rows[nr++] = mkrow("RDMA WRITE bandwidth", "raw TCP stream", "Gb/s", bw_sizes[i], OP_WRITE_BW,
					  OP_TCP_BW, WAIT_BLOCK, true);
		rows[nr++] = mkrow("SEND bandwidth", "raw TCP stream", "Gb/s", bw_sizes[i], OP_SEND_BW, OP_TCP_BW,
					  WAIT_BLOCK, true);
	}
	for (size_t i = 0; i < 2; i++)
		for (int w = 0; w < 2; w++)
			rows[nr++] = mkrow(w ? "SEND ping-pong latency, blocking" : "SEND ping-pong latency, busy-poll",
						  w ? "raw TCP ping-pong, blocking" : "raw TCP ping-pong, busy-poll", "µs",
						  lat_sizes[i], OP_SEND_LAT, OP_TCP_LAT, (enum wait)w, false);
	rows[nr++] = mkrow("SEND ping-pong latency, busy-poll", "shared-memory ping-pong, busy-poll", "µs", 64,
				  OP_SEND_LAT, OP_SHM_LAT, WAIT_BUSY, false);
	rows[nr++] = mkrow("RDMA WRITE bandwidth", "single-thread memcpy", "Gb/s", 1u << 20, OP_WRITE_BW,
				  OP_MEMCPY, WAIT_BLOCK, true);
	int scale_row = -1;
	if (nqps) {
		scale_row = nr;
		rows[nr++] = mkrow("RDMA WRITE 64 B message rate", "-", "msg/s", (uint64_t)nqps, OP_SCALE, 0,
					  WAIT_BUSY, true);
	}

	if (only || only_size) {
		int k = 0;
		for (int i = 0; i < nr; i++)
			if ((!only || strstr(rows[i].what, only)) && (!only_size || rows[i].size == only_size ||
								      rows[i].op == OP_SCALE))
				rows[k++] = rows[i];
		nr = k;
		scale_row = -1;
		for (int i = 0; i < nr; i++)
			if (rows[i].op == OP_SCALE)
				scale_row = i;
	}
	uint64_t lat_iters = quick ? 50 : 2000;
	int failed = 0;
	for (int rep = 0; rep < reps; rep++) {
		for (int i = 0; i < nr; i++) {
			struct row *w = &rows[i];
			struct sample a, b = {NAN, NAN, NAN, NAN};
			uint64_t iters;
			if (w->op == OP_SEND_LAT) {
				iters = lat_iters;
			} else if (w->op == OP_SCALE) {
				iters = quick ? 2 : 20;
			} else {
				uint64_t total = quick ? (1u << 20) : bw_mib << 20;
				iters = total / w->size;
				uint64_t lo = quick ? 20 : 500, hi = quick ? 2000 : 200000 * bw_mib / 64;
				iters = iters < lo ? lo : iters > hi ? hi : iters;
			}
			a.value = a.cpu_c = a.cpu_s = a.extra = NAN;
			if (!ref_only && run(&s, w->op, w->wait, w->size, iters, &a) < 0)
				failed = 1;
			if (w->ref_op && !no_ref) {
				uint64_t riters = iters;
				if (w->ref_op == OP_SHM_LAT)
					riters = lat_iters * 10;
				if (w->ref_op == OP_MEMCPY)
					riters = quick ? 20 : 2000;
				if (run(&s, w->ref_op, w->wait, w->size, riters, &b) < 0)
					failed = 1;
			}
			w->v[rep] = a.value;
			w->cc[rep] = a.cpu_c;
			w->cs[rep] = a.cpu_s;
			w->r[rep] = w->op == OP_SCALE ? a.extra : b.value;
			w->rc_[rep] = b.cpu_c;
			w->rs[rep] = b.cpu_s;
			if (failed)
				break;
		}
		if (failed)
			break;
	}
	struct cmd q = {OP_QUIT, 0, 0, 0};
	put(s.ctl, &q, sizeof(q));
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		failed = 1;
	teardown_rdma(&s);

	for (int i = 0; i < nr; i++) {
		struct row *w = &rows[i];
		w->mv = median(w->v, reps);
		w->mr = median(w->r, reps);
		w->mcc = median(w->cc, reps);
		w->mcs = median(w->cs, reps);
		w->mrc = median(w->rc_, reps);
		w->mrs = median(w->rs, reps);
	}
	double load[3] = {NAN, NAN, NAN};
	if (getloadavg(load, 3) < 0)
		load[0] = NAN;

	if (json) {
		printf("{\"device\": \"%s\", \"repetitions\": %d, \"quick\": %s, ", g_device, reps, quick ? "true" : "false");
		jnum("loadavg_1min", load[0], true);
		printf("\"rows\": [");
		for (int i = 0; i < nr; i++) {
			struct row *w = &rows[i];
			printf("%s{\"what\": \"%s\", \"reference\": \"%s\", \"unit\": \"%s\", \"size\": %" PRIu64 ", ",
			       i ? ", " : "", w->what, w->ref, strcmp(w->unit, "µs") ? w->unit : "us", w->size);
			if (i == scale_row) {
				jnum("msgs_per_s", w->mv, true);
				jnum("bytes_per_qp", w->mr, true);
			} else {
				jnum("value", w->mv, true);
				jnum("reference_value", w->mr, true);
				jnum("ratio", w->mv / w->mr, true);
			}
			jnum("cpu_client_pct", w->mcc, true);
			jnum("cpu_server_pct", w->mcs, true);
			jnum("reference_cpu_client_pct", w->mrc, true);
			jnum("reference_cpu_server_pct", w->mrs, false);
			printf("}");
		}
		printf("], \"ok\": %s}\n", failed ? "false" : "true");
	} else {
		printf("soft-vs-tcp: %s against raw TCP / shared memory / memcpy, loopback, two processes, "
		       "medians of %d run%s%s; load average %.2f\n",
		       g_device, reps, reps > 1 ? "s" : "", quick ? " (--quick: smoke pass, not a measurement)" : "",
		       load[0]);
		printf("CPU: getrusage of each process over the run, %% of one core, client / server\n\n");
		printf("| figure | size | %s | CPU | reference | reference value | CPU | ratio |\n", g_device);
		printf("|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < nr; i++) {
			struct row *w = &rows[i];
			char sz[32], v[32], r[32], c1[48], c2[48], ra[32];
			if (i == scale_row)
				snprintf(sz, sizeof(sz), "%" PRIu64 " QPs", w->size);
			else
				size_str(w->size, sz, sizeof(sz));
			cell(v, sizeof(v), w->unit[0] == 'G' ? "%.2f" : w->unit[0] == 'm' ? "%.0f" : "%.2f", w->mv);
			snprintf(c1, sizeof(c1), "%.0f%% / %.0f%%", w->mcc, w->mcs);
			if (i == scale_row) {
				cell(r, sizeof(r), "%.0f", w->mr / 1024);
				printf("| %s | %s | %s %s | %s | memory per QP | %s KiB | | |\n", w->what, sz, v, w->unit, c1, r);
				continue;
			}
			cell(r, sizeof(r), "%.2f", w->mr);
			snprintf(c2, sizeof(c2), "%.0f%% / %.0f%%", w->mrc, w->mrs);
			cell(ra, sizeof(ra), "%.2f×", w->mv / w->mr);
			printf("| %s | %s | %s %s | %s | %s | %s %s | %s | %s |\n", w->what, sz, v, w->unit, c1, w->ref, r,
			       w->unit, c2, ra);
		}
		if (failed)
			printf("\nsome figures failed (the messages above say why); n/a marks them\n");
	}
	munmap(shm, 4096);
	return failed;
}
