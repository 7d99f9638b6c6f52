/*
 * ring-cpu: the CPU one 64 B SEND costs on soft0's same-host path (the
 * shared-memory rings), sender and receiver together, without scheduling:
 * one thread ping-pongs between two contexts of one process, every message
 * found at its first poll (bench/README.md).
 *
 *   ring-cpu [ROUND_TRIPS [REPS [SIGNAL]]]  (default 20000, 5 and 1)
 *
 * SIGNAL: one SEND in SIGNAL is signaled (soft-vs-tcp's ping-pong uses 16).
 *
 * Prints, per message, the best thread CPU time over REPS runs and the wall
 * time of that run. For an instruction count that load does not change:
 *   valgrind --tool=callgrind --toggle-collect=pingpong build/bench/ring-cpu 3000 1
 * (callgrind sees the rings because two contexts of one process take the
 * ring's descriptors with a dup; instructions per message = Ir / 8000: 1000
 * warm-up and 3000 measured round trips).
 * Public API only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rverbs/rverbs.h>

#define MSG 64u
#define RECVS 32
#define BUF 8192u

static long signal_every = 1; /* one SEND in this many is signaled */
static long sends;

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	char *buf;
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "ring-cpu: %s: %d (%s)\n", what, rc, rv_error_last());
	exit(1);
}

static double secs(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void open_side(struct side *s)
{
	rv_device *dev = NULL;
	rv_qp_init_attr qa;
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = rv_device_find("soft0", &dev)) < 0 || (rc = rv_context_new(dev, NULL, &s->ctx)) < 0)
		fail("opening soft0", rc);
	rv_device_unref(dev);
	if ((rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0 || (rc = rv_cq_new(s->ctx, NULL, &s->cq)) < 0)
		fail("PD/CQ", rc);
	memset(&qa, 0, sizeof(qa));
	/* sq_sig_all defaults to 1 when its mask bit is not set: without it
	 * every SEND was signaled whatever SIGNAL said (before shmlat5). */
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	qa.sq_sig_all = 0;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if ((rc = rv_qp_new(s->pd, &qa, &s->qp)) < 0)
		fail("rv_qp_new", rc);
	if ((rc = rv_mr_alloc(s->pd, BUF, RV_ACCESS_LOCAL_WRITE, NULL, &s->mr)) < 0)
		fail("rv_mr_alloc", rc);
	s->buf = rv_mr_addr(s->mr);
	memset(s->buf, 0, BUF);
}

static void connect_to(struct side *s, const rv_endpoint *peer)
{
	rv_qp_attr a;
	int rc;

	if ((rc = rv_qp_to_init(s->qp, NULL)) < 0)
		fail("INIT", rc);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	if ((rc = rv_qp_gid_index(s->qp)) < 0) /* the GID our endpoint advertised */
		fail("rv_qp_gid_index", rc);
	a.ah_attr.sgid_index = (uint8_t)rc;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	if ((rc = rv_qp_to_rtr(s->qp, &a)) < 0)
		fail("RTR", rc);
	memset(&a, 0, sizeof(a));
	if ((rc = rv_qp_to_rts(s->qp, &a)) < 0)
		fail("RTS", rc);
}

static void post_recv(struct side *s)
{
	rv_sge g = {(uintptr_t)s->buf, 4096, rv_mr_lkey(s->mr)};
	rv_recv_wr wr = {.wr_id = 1, .sg_list = &g, .num_sge = 1};
	size_t n;
	int rc = rv_qp_post_recv(s->qp, &wr, 1, &n);

	if (rc < 0)
		fail("rv_qp_post_recv", rc);
}

static void post_send(struct side *s)
{
	rv_sge g = {(uintptr_t)s->buf + 4096, MSG, rv_mr_lkey(s->mr)};
	rv_send_wr wr = {.wr_id = 2, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = ++sends % signal_every == 0 ? RV_SEND_SIGNALED : 0};
	size_t n;
	int rc = rv_qp_post_send(s->qp, &wr, 1, &n);

	if (rc < 0)
		fail("rv_qp_post_send", rc);
}

/* Poll until the receive completes (send completions are taken on the way). */
static void wait_recv(struct side *s)
{
	rv_wc wc[8];

	for (;;) {
		int n = rv_cq_poll(s->cq, wc, 8), got = 0;
		if (n < 0)
			fail("rv_cq_poll", n);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != RV_WC_SUCCESS)
				fail(rv_wc_status_str((int)wc[i].status), -1);
			got |= wc[i].opcode == RV_WC_RECV;
		}
		if (got)
			return;
	}
}

/* Not inlined: callgrind's --toggle-collect=pingpong measures exactly this. */
__attribute__((noinline)) void pingpong(struct side *a, struct side *b, long round_trips);
__attribute__((noinline)) void pingpong(struct side *a, struct side *b, long round_trips)
{
	for (long i = 0; i < round_trips; i++) {
		post_send(a);
		wait_recv(b);
		post_recv(b);
		post_send(b);
		wait_recv(a);
		post_recv(a);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000, reps = argc > 2 ? atol(argv[2]) : 5;
	struct side a, b;
	rv_endpoint ea, eb;
	double best = 1e9, best_wall = 0;

	if (argc > 3)
		signal_every = atol(argv[3]);
	if (n < 1 || reps < 1 || signal_every < 1 || signal_every > 32 || argc > 4) {
		fprintf(stderr, "usage: ring-cpu [ROUND_TRIPS [REPS [SIGNAL (1-32)]]]\n");
		return 2;
	}
	open_side(&a);
	open_side(&b);
	if (rv_qp_endpoint(a.qp, &ea) < 0 || rv_qp_endpoint(b.qp, &eb) < 0)
		fail("rv_qp_endpoint", -1);
	connect_to(&a, &eb);
	connect_to(&b, &ea);
	for (int i = 0; i < RECVS; i++) {
		post_recv(&a);
		post_recv(&b);
	}
	pingpong(&a, &b, 1000); /* connected, rings switched on (setup over TCP first) */
	for (long r = 0; r < reps; r++) {
		double c0 = secs(CLOCK_THREAD_CPUTIME_ID), w0 = secs(CLOCK_MONOTONIC);
		pingpong(&a, &b, n);
		double c = (secs(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)n / 2 * 1e9;
		double w = (secs(CLOCK_MONOTONIC) - w0) / (double)n / 2 * 1e9;
		if (c < best) {
			best = c;
			best_wall = w;
		}
	}
	printf("ring-cpu: 64 B SEND (1 in %ld signaled), sender and receiver in one thread: %.0f ns CPU per "
	       "message (best of %ld runs of %ld round trips; wall %.0f ns)\n", signal_every, best, reps, n, best_wall);
	rv_qp_unref(a.qp);
	rv_qp_unref(b.qp);
	rv_mr_unref(a.mr);
	rv_mr_unref(b.mr);
	rv_cq_unref(a.cq);
	rv_cq_unref(b.cq);
	rv_pd_unref(a.pd);
	rv_pd_unref(b.pd);
	rv_context_close(a.ctx);
	rv_context_close(b.ctx);
	rv_context_unref(a.ctx);
	rv_context_unref(b.ctx);
	return 0;
}
