/*
 * Faults on the software device: outstanding work always completes.
 *
 * Each case makes a fault happen while work is posted and checks the verbs
 * outcome on both sides (status of every WR, QP state), then that the
 * process is alive and did not hang, that every posted WR got exactly one
 * completion, that memory outside the registered regions is unchanged, and
 * (where the fault is on one connection) that another QP pair on the same
 * contexts still works:
 *
 * - the fault-injection switch: reset, corrupt, delay, drop (rv_soft_fault_inject)
 *   and RVERBS_SOFT_FAULT; the API's errors, and -EOPNOTSUPP off soft0;
 * - a peer process killed mid-transfer (SIGKILL), a peer stalled (SIGSTOP:
 *   transport retry exceeded per timeout/retry_cnt), a receiver not ready for
 *   longer than that bound (no false failure);
 * - a link going down between two network namespaces (root and `ip` only;
 *   that case is skipped otherwise).
 *
 * No timing assertions: the timers are bounded by a hang guard only.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mock-driver.h"
#include "netns-pair.h"
#include "rverbs-private.h"
#include "drivers/soft/soft.h"
#include <rverbs/rverbs.h>
#include "test-clock.h"

#define BUF (256u * 1024u)
#define GUARD 0xa5
#define MAX_WC 256
#define HANG_GUARD_MS 15000

struct side {
	rv_context *ctx;
	bool own_ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *mem; /* [guard BUF][registered BUF][guard BUF] */
	uint8_t *buf;
	int posted;   /* WRs posted (send and receive), each must complete once */
	int n_wc;
	rv_wc wc[MAX_WC];
};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* What a case left behind when it failed, for leftovers_close: the soft0
 * contexts it opened (a reference of our own each) and its peer process.
 * A context left open keeps its progress thread, and a later fork of this
 * process is then a multi-threaded one: under ThreadSanitizer the peer dies
 * as soon as it starts a thread (exit 66), which showed as a failure "in
 * recv_ep" of every later case instead of the case that failed. */
static rv_context *opened[32];
static int n_opened;
static struct {
	pid_t pid;
	int rfd, wfd;
} live_peer = {0, -1, -1};

static rv_context *open_ctx(const char *addr)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = addr};
	rv_device *dev = NULL;
	rv_context *ctx = NULL;

	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, addr ? &ca : NULL, &ctx), 0);
	rv_device_unref(dev);
	if (n_opened < (int)(sizeof(opened) / sizeof(opened[0])))
		opened[n_opened++] = rv_context_ref(ctx);
	return ctx;
}

static void peer_reap(void)
{
	int st;

	if (live_peer.pid > 0) {
		kill(live_peer.pid, SIGKILL);
		kill(live_peer.pid, SIGCONT);
		waitpid(live_peer.pid, &st, 0);
	}
	if (live_peer.rfd >= 0)
		close(live_peer.rfd);
	if (live_peer.wfd >= 0)
		close(live_peer.wfd);
	live_peer.pid = 0;
	live_peer.rfd = live_peer.wfd = -1;
}

/* After every case: its peer is gone and its contexts are closed (no-ops
 * when the case got that far itself), so one failure stays one failure. */
static int leftovers_close(void **state)
{
	(void)state;
	peer_reap();
	while (n_opened > 0) {
		rv_context *ctx = opened[--n_opened];
		rv_context_close(ctx);
		rv_context_unref(ctx);
	}
	return 0;
}

/* Send queue depth of the QPs side_open makes and whether every send WR
 * completes (gathered_small_writes: deeper, only signalled ones). */
static uint32_t side_send_wr = 64;
static bool side_sig_all = true;

static void side_open(struct side *s, rv_context *ctx)
{
	rv_qp_init_attr qa;

	memset(s, 0, sizeof(*s));
	s->own_ctx = ctx == NULL;
	s->ctx = ctx ? rv_context_ref(ctx) : open_ctx(NULL);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = side_send_wr;
	if (!side_sig_all) {
		qa.mask |= RV_QP_INIT_ATTR_SQ_SIG_ALL;
		qa.sq_sig_all = 0;
	}
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4; /* gathered_sends_from_segments gathers from four */
	qa.cap.max_recv_sge = 3; /* placed_sends_land_exactly scatters over three */
	assert_int_equal(rv_qp_new(s->pd, &qa, &s->qp), 0);
	s->mem = malloc(3 * BUF);
	assert_non_null(s->mem);
	memset(s->mem, GUARD, 3 * BUF);
	s->buf = s->mem + BUF;
	memset(s->buf, 0, BUF);
	assert_int_equal(rv_mr_reg(s->pd, s->buf, BUF, RV_ACCESS_ALL_REMOTE, &s->mr), 0);
}

/* Memory outside the registered region is byte-for-byte unchanged. */
static void check_guards(const struct side *s)
{
	for (size_t i = 0; i < BUF; i++) {
		if (s->mem[i] != GUARD || s->mem[2 * BUF + i] != GUARD)
			fail_msg("a byte outside the registered region changed (offset %zu)", i);
	}
}

static void side_close(struct side *s)
{
	check_guards(s);
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	if (s->own_ctx)
		assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
	free(s->mem);
}

/* Connect to peer's endpoint with timeout 14 (67 ms) and retry_cnt 1: a bound of
 * 134 ms, which soft0 rounds up to its smallest, 2 s. */
static void connect_to(rv_qp *qp, const rv_endpoint *peer)
{
	rv_qp_attr a;

	if (rv_qp_state_of(qp) == RV_QPS_RESET)
		assert_int_equal(rv_qp_to_init(qp, NULL), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN | RV_QP_PATH_MTU;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.path_mtu = RV_MTU_4096;
	assert_int_equal(rv_qp_to_rtr(qp, &a), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_TIMEOUT | RV_QP_RETRY_CNT;
	a.timeout = 14;
	a.retry_cnt = 1;
	assert_int_equal(rv_qp_to_rts(qp, &a), 0);
}

static void connect_pair(struct side *a, struct side *b)
{
	rv_endpoint ea, eb;

	assert_int_equal(rv_qp_endpoint(a->qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b->qp, &eb), 0);
	connect_to(a->qp, &eb);
	connect_to(b->qp, &ea);
}

static rv_sge sge(struct side *s, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	return g;
}

static void post_recv(struct side *s, size_t off, uint32_t len, uint64_t id)
{
	rv_sge g = sge(s, off, len);

	assert_int_equal(rv_qp_recv(s->qp, &g, id), 0);
	s->posted++;
}

static void post(struct side *s, uint32_t opcode, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		 uint64_t id)
{
	rv_sge g = sge(s, off, len);
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = opcode;
	w.sg_list = &g;
	w.num_sge = 1;
	w.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	w.remote_addr = raddr;
	w.rkey = rkey;
	assert_int_equal(rv_qp_post_send(s->qp, &w, 1, NULL), 0);
	s->posted++;
}

/* Collect completions until every posted WR has one (hang guard), then make
 * sure no WR completes twice and nothing more arrives. */
static void drain(struct side *s)
{
	int64_t end = now_ms() + HANG_GUARD_MS;
	rv_wc extra;

	while (s->n_wc < s->posted && now_ms() < end) {
		int n = rv_cq_poll(s->cq, &s->wc[s->n_wc], MAX_WC - s->n_wc);
		assert_true(n >= 0);
		s->n_wc += n;
		if (n == 0)
			sleep_ms(1);
	}
	if (s->n_wc != s->posted)
		fail_msg("%d of %d posted WRs completed within %d ms", s->n_wc, s->posted, HANG_GUARD_MS);
	sleep_ms(50);
	assert_int_equal(rv_cq_poll(s->cq, &extra, 1), 0);
	for (int i = 0; i < s->n_wc; i++)
		for (int j = i + 1; j < s->n_wc; j++)
			if (s->wc[i].wr_id == s->wc[j].wr_id && s->wc[i].opcode == s->wc[j].opcode)
				fail_msg("WR %llu completed twice", (unsigned long long)s->wc[i].wr_id);
}

static const rv_wc *wc_of(const struct side *s, uint64_t id)
{
	for (int i = 0; i < s->n_wc; i++)
		if (s->wc[i].wr_id == id)
			return &s->wc[i];
	fail_msg("no completion for WR %llu", (unsigned long long)id);
	return NULL;
}

static int qp_state(rv_qp *qp)
{
	rv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_STATE;
	assert_int_equal(rv_qp_query(qp, &a), 0);
	return a.qp_state;
}

/* One SEND, one WRITE and one READ that must all succeed, data checked. */
static void traffic_ok(struct side *a, struct side *b, unsigned seed)
{
	int base_a = a->posted, base_b = b->posted;

	for (uint32_t i = 0; i < 20000; i++)
		a->buf[i] = (uint8_t)(seed + i * 7);
	post_recv(b, 0, 8192, 1000 + seed);
	post(a, RV_WR_SEND, 0, 5000, 0, 0, 2000 + seed);
	post(a, RV_WR_RDMA_WRITE, 0, 9000, (uint64_t)(uintptr_t)(b->buf + 16384), rv_mr_rkey(b->mr), 3000 + seed);
	post(a, RV_WR_RDMA_READ, 40000, 9000, (uint64_t)(uintptr_t)(b->buf + 16384), rv_mr_rkey(b->mr),
	     4000 + seed);
	drain(a);
	drain(b);
	for (int i = base_a; i < a->n_wc; i++)
		assert_int_equal(a->wc[i].status, RV_WC_SUCCESS);
	for (int i = base_b; i < b->n_wc; i++)
		assert_int_equal(b->wc[i].status, RV_WC_SUCCESS);
	assert_memory_equal(b->buf, a->buf, 5000);
	assert_memory_equal(b->buf + 16384, a->buf, 9000);
	assert_memory_equal(a->buf + 40000, a->buf, 9000);
}

/* Two pairs on two contexts: a1-b1 takes the fault, a2-b2 must keep working. */
struct world {
	rv_context *ca, *cb;
	struct side a1, b1, a2, b2;
};

static void world_open(struct world *w)
{
	w->ca = open_ctx(NULL);
	w->cb = open_ctx(NULL);
	side_open(&w->a1, w->ca);
	side_open(&w->b1, w->cb);
	side_open(&w->a2, w->ca);
	side_open(&w->b2, w->cb);
	connect_pair(&w->a1, &w->b1);
	connect_pair(&w->a2, &w->b2);
	traffic_ok(&w->a1, &w->b1, 1);
}

static void world_close(struct world *w)
{
	/* The bystanders on the same contexts still work. */
	traffic_ok(&w->a2, &w->b2, 9);
	side_close(&w->a1);
	side_close(&w->b1);
	side_close(&w->a2);
	side_close(&w->b2);
	assert_int_equal(rv_context_close(w->ca), 0);
	assert_int_equal(rv_context_close(w->cb), 0);
	rv_context_unref(w->ca);
	rv_context_unref(w->cb);
}

/* a1 posts a burst that b1 is ready for: three SENDs (three receives), a
 * WRITE, a READ. */
static void burst(struct world *w)
{
	for (int i = 0; i < 3; i++)
		post_recv(&w->b1, (size_t)i * 16384, 16384, 100 + (uint64_t)i);
	post(&w->a1, RV_WR_SEND, 0, 12000, 0, 0, 200);
	post(&w->a1, RV_WR_RDMA_WRITE, 0, 65536, (uint64_t)(uintptr_t)(w->b1.buf + 65536), rv_mr_rkey(w->b1.mr),
	     201);
	post(&w->a1, RV_WR_SEND, 100, 16384, 0, 0, 202);
	post(&w->a1, RV_WR_RDMA_READ, 131072, 30000, (uint64_t)(uintptr_t)w->b1.buf, rv_mr_rkey(w->b1.mr), 203);
	post(&w->a1, RV_WR_SEND, 0, 10, 0, 0, 204);
}

static void test_faults__reset(void **state)
{
	struct world w;

	(void)state;
	world_open(&w);
	assert_int_equal(rv_soft_fault_inject(w.ca, w.a1.qp, RV_SOFT_FAULT_RESET, 1, 0), 0);
	burst(&w);
	drain(&w.a1);
	drain(&w.b1);
	/* TCP said the peer is gone: the first WR fails, the rest flush, at once. */
	assert_int_equal(wc_of(&w.a1, 200)->status, RV_WC_RETRY_EXC_ERR);
	for (uint64_t id = 201; id <= 204; id++)
		assert_int_equal(wc_of(&w.a1, id)->status, RV_WC_WR_FLUSH_ERR);
	for (uint64_t id = 100; id < 103; id++)
		assert_int_equal(wc_of(&w.b1, id)->status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_ERR);
	assert_int_equal(qp_state(w.b1.qp), RV_QPS_ERR);
	world_close(&w);
}

static void test_faults__corrupt(void **state)
{
	struct world w;

	(void)state;
	world_open(&w);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_CORRUPT, 1, 0), 0);
	burst(&w);
	drain(&w.a1);
	drain(&w.b1);
	/* b1's CRC check fails: TERMINATE (LLP, CRC error), b1 in ERR with its
	 * receives flushed; a1's unconfirmed WR fails with a remote error. */
	assert_int_equal(wc_of(&w.a1, 200)->status, RV_WC_REM_OP_ERR);
	for (uint64_t id = 201; id <= 204; id++)
		assert_int_equal(wc_of(&w.a1, id)->status, RV_WC_WR_FLUSH_ERR);
	for (uint64_t id = 100; id < 103; id++)
		assert_int_equal(wc_of(&w.b1, id)->status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_ERR);
	assert_int_equal(qp_state(w.b1.qp), RV_QPS_ERR);
	world_close(&w);
}

/* Large WRITEs back to back: after the first, the receiver reads up to each
 * FPDU's header and places the payload straight into the target (place.c).
 * Every byte lands where it should, nothing around it moves (the guards are
 * checked at side_close), and one running past the MR is refused. */
static void test_faults__placed_writes_land_exactly(void **state)
{
	static const struct {
		uint32_t off, len;
	} wr[] = {{0, 65536},     {3, 100000}, {70001, 120017}, {5, 200000}, {12, 8193},  {1, 250000},
		  /* Around tx.c's large-first split on loopback (fpdu_max 65 456, a
		   * small FPDU of at most SOFT_TX_TAIL_MAX 256 after it): one FPDU,
		   * one large and one small, two of even size. */
		  {9, 65455},     {0, 65456},  {4, 65457},      {2, 65712},  {6, 65713}};
	struct world w;
	uint64_t id = 500;

	(void)state;
	/* TCP, not the same-host path, which would carry these WRITEs by reference. */
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	for (size_t k = 0; k < sizeof(wr) / sizeof(wr[0]); k++) {
		memset(w.b1.buf, 0, BUF);
		for (uint32_t i = 0; i < wr[k].len; i++)
			w.a1.buf[i] = (uint8_t)(k * 31 + i * 13 + (i >> 9));
		/* Twice: the second finds the receiver reading header by header. */
		post(&w.a1, RV_WR_RDMA_WRITE, 0, wr[k].len, (uint64_t)(uintptr_t)(w.b1.buf + wr[k].off),
		     rv_mr_rkey(w.b1.mr), id++);
		post(&w.a1, RV_WR_RDMA_WRITE, 0, wr[k].len, (uint64_t)(uintptr_t)(w.b1.buf + wr[k].off),
		     rv_mr_rkey(w.b1.mr), id++);
		drain(&w.a1);
		assert_int_equal(wc_of(&w.a1, id - 1)->status, RV_WC_SUCCESS);
		assert_int_equal(wc_of(&w.a1, id - 2)->status, RV_WC_SUCCESS);
		assert_memory_equal(w.b1.buf + wr[k].off, w.a1.buf, wr[k].len);
		for (uint32_t i = 0; i < wr[k].off; i++)
			assert_int_equal(w.b1.buf[i], 0);
		for (uint32_t i = wr[k].off + wr[k].len; i < BUF; i++)
			assert_int_equal(w.b1.buf[i], 0);
	}
	/* 64 KiB, a small WRITE, 64 KiB again, then 64 KiB + 177, back to back:
	 * the receiver's read that places a payload also takes the small FPDU
	 * after it and part of the next payload (place.c, SOFT_PLACE_SLACK),
	 * which is then placed from its buffer. */
	{
		static const struct {
			uint32_t off, len;
		} seq[] = {{0, 65536}, {65540, 40}, {65600, 65536}, {131200, 65713}, {196920, 3}};
		uint32_t src = 0;

		memset(w.b1.buf, 0, BUF);
		for (uint32_t i = 0; i < BUF; i++)
			w.a1.buf[i] = (uint8_t)(i * 7 + (i >> 8) + 1);
		for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
			post(&w.a1, RV_WR_RDMA_WRITE, src, seq[k].len, (uint64_t)(uintptr_t)(w.b1.buf + seq[k].off),
			     rv_mr_rkey(w.b1.mr), id++);
			src += seq[k].len;
		}
		drain(&w.a1);
		src = 0;
		for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
			assert_int_equal(wc_of(&w.a1, id - sizeof(seq) / sizeof(seq[0]) + k)->status, RV_WC_SUCCESS);
			assert_memory_equal(w.b1.buf + seq[k].off, w.a1.buf + src, seq[k].len);
			src += seq[k].len;
		}
		for (uint32_t i = 0; i < BUF; i++) {
			bool in = false;
			for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++)
				in = in || (i >= seq[k].off && i < seq[k].off + seq[k].len);
			if (!in && w.b1.buf[i] != 0)
				fail_msg("byte %u outside the WRITEs written", i);
		}
	}
	/* Past the end of the MR: refused before a byte of that FPDU is written. */
	post(&w.a1, RV_WR_RDMA_WRITE, 0, 200000, (uint64_t)(uintptr_t)(w.b1.buf + BUF - 100000),
	     rv_mr_rkey(w.b1.mr), id);
	drain(&w.a1);
	drain(&w.b1);
	assert_int_equal(wc_of(&w.a1, id)->status, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_ERR);
	assert_int_equal(qp_state(w.b1.qp), RV_QPS_ERR);
	world_close(&w);
}

/* Many large WRITEs in flight: the sender sends each FPDU straight from the
 * registered memory with sendmsg (tx.c) until the socket is full, then keeps
 * the rest of a frame in its buffer; every FPDU must arrive whole (the CRC
 * checks each) and the last WRITE's bytes must be in place. */
static void test_faults__many_large_writes_in_flight(void **state)
{
	struct world w;
	enum { N = 48, LEN = 200000 };

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	for (uint32_t i = 0; i < LEN + 16; i++)
		w.a1.buf[i] = (uint8_t)(i * 7 + (i >> 11));
	memset(w.b1.buf, 0, BUF);
	for (uint64_t k = 0; k < N; k++)
		post(&w.a1, RV_WR_RDMA_WRITE, k % 16, LEN, (uint64_t)(uintptr_t)(w.b1.buf + 8 * (k % 3)),
		     rv_mr_rkey(w.b1.mr), 700 + k);
	drain(&w.a1);
	for (uint64_t k = 0; k < N; k++)
		assert_int_equal(wc_of(&w.a1, 700 + k)->status, RV_WC_SUCCESS);
	assert_memory_equal(w.b1.buf + 8 * ((N - 1) % 3), w.a1.buf + (N - 1) % 16, LEN);
	world_close(&w);
}

/* Large WRITEs and SENDs gathered from four segments each, many in flight:
 * the sender sends several FPDUs of one WR with one sendmsg from the
 * registered memory (tx.c, emit_direct), segment boundaries falling inside
 * FPDUs, until the socket is full and a send stops part way (the rest then
 * waits in the connection's buffer). Every message arrives whole (the CRC
 * checks each FPDU), every byte in order. */
static void test_faults__gathered_sends_from_segments(void **state)
{
	static const uint32_t seg_off[4] = {7, 40100, 40200, 110301}, seg_len[4] = {40001, 3, 70000, 36613};
	enum { N = 48, LEN = 40001 + 3 + 70000 + 36613 };
	uint8_t *want = malloc(LEN);
	rv_sge g[4];
	struct world w;
	uint32_t at = 0;

	(void)state;
	assert_non_null(want);
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	for (uint32_t i = 0; i < 150000; i++)
		w.a1.buf[i] = (uint8_t)(i * 5 + (i >> 8) + (i >> 13));
	for (int k = 0; k < 4; k++) {
		g[k] = sge(&w.a1, seg_off[k], seg_len[k]);
		memcpy(want + at, w.a1.buf + seg_off[k], seg_len[k]);
		at += seg_len[k];
	}
	for (int op = 0; op < 2; op++) {
		bool send = op == 1;
		uint64_t id0 = send ? 1600 : 1500;

		memset(w.b1.buf, 0, BUF);
		for (uint64_t k = 0; k < N; k++) {
			rv_send_wr s;

			if (send)
				post_recv(&w.b1, 8 * (k % 3), LEN, id0 + 100 + k);
			memset(&s, 0, sizeof(s));
			s.wr_id = id0 + k;
			s.opcode = send ? RV_WR_SEND : RV_WR_RDMA_WRITE;
			s.sg_list = g;
			s.num_sge = 4;
			s.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
			s.remote_addr = (uint64_t)(uintptr_t)(w.b1.buf + 8 * (k % 3));
			s.rkey = rv_mr_rkey(w.b1.mr);
			assert_int_equal(rv_qp_post_send(w.a1.qp, &s, 1, NULL), 0);
			w.a1.posted++;
		}
		drain(&w.a1);
		drain(&w.b1);
		for (uint64_t k = 0; k < N; k++) {
			assert_int_equal(wc_of(&w.a1, id0 + k)->status, RV_WC_SUCCESS);
			if (send) {
				assert_int_equal(wc_of(&w.b1, id0 + 100 + k)->status, RV_WC_SUCCESS);
				assert_int_equal(wc_of(&w.b1, id0 + 100 + k)->byte_len, LEN);
			}
		}
		/* The last message is the one in place (all carry the same bytes). */
		assert_memory_equal(w.b1.buf + 8 * ((N - 1) % 3), want, LEN);
	}
	free(want);
	world_close(&w);
}

/* Byte i of source k of 16 (gathered_small_writes): message id carries the
 * first small_len(id) bytes of source id % 16. */
static uint8_t small_byte(uint64_t k, uint32_t i)
{
	return (uint8_t)(k * 31 + i * 7 + (i >> 9) + 1);
}

/* Length of small message k: 1 byte to 8 KiB - 1, below the size sent from
 * the registered memory directly (SOFT_TX_DIRECT_MIN), never inline. */
static uint32_t small_len(uint64_t k)
{
	return (uint32_t)(1 + (k * 2654435761u) % 8191);
}

/* Post n small unsignalled WRITEs (every fourth a SEND when sends), then one
 * signalled, each from its own source bytes in a1.buf into b1 slot k % 24
 * (8 KiB each); returns the first id. A busy stream of small unsignalled WRs
 * is framed into the connection's buffer and sent many per send() (tx.c,
 * soft_tx_post). */
static uint64_t small_burst(struct world *w, uint64_t id0, uint64_t n, bool sends, bool last_signalled)
{
	for (uint64_t k = 0; k < n; k++) {
		uint64_t id = id0 + k;
		uint32_t len = small_len(id), src = (uint32_t)(id % 16) * 8192u;
		bool send = sends && k % 4 == 3;
		rv_sge g = sge(&w->a1, 131072 + src, len);
		rv_send_wr s;

		memset(&s, 0, sizeof(s));
		s.wr_id = id;
		s.opcode = send ? RV_WR_SEND : RV_WR_RDMA_WRITE;
		s.sg_list = &g;
		s.num_sge = 1;
		s.send_flags = RV_SEND_NO_INLINE | (last_signalled && k == n - 1 ? RV_SEND_SIGNALED : 0);
		s.remote_addr = (uint64_t)(uintptr_t)(w->b1.buf + (id % 24) * 8192u);
		s.rkey = rv_mr_rkey(w->b1.mr);
		if (send)
			post_recv(&w->b1, 196608 + (size_t)(id / 4 % 6) * 8192u, 8192, id);
		assert_int_equal(rv_qp_post_send(w->a1.qp, &s, 1, NULL), 0);
		if (s.send_flags & RV_SEND_SIGNALED)
			w->a1.posted++;
	}
	return id0;
}

/* b1's slot of the newest WRITE among [id0, id0 + n) that went there holds
 * exactly its bytes (last writer wins: a message out of order would leave
 * another's). */
static void small_slots_ok(const struct world *w, uint64_t id0, uint64_t n, bool sends)
{
	for (uint64_t slot = 0; slot < 24; slot++) {
		for (uint64_t k = n; k-- > 0;) {
			uint64_t id = id0 + k;
			uint32_t len = small_len(id);

			if (id % 24 != slot || (sends && k % 4 == 3))
				continue;
			for (uint32_t i = 0; i < len; i++)
				if (w->b1.buf[slot * 8192u + i] != small_byte(id % 16, i))
					fail_msg("slot %llu byte %u: not WRITE %llu's", (unsigned long long)slot, i,
						 (unsigned long long)id);
			break;
		}
	}
}

/* A thread that busy-polls one side's CQ (no sleep) until told to stop,
 * collecting its completions (idle_poller_still_serves). */
struct spinner {
	struct side *s;
	atomic_bool stop;
	atomic_ulong polls;
	atomic_int got; /* completions collected */
	atomic_int err;
};

static void *spin_poll(void *arg)
{
	struct spinner *sp = arg;

	while (!atomic_load(&sp->stop)) {
		int n = rv_cq_poll(sp->s->cq, &sp->s->wc[sp->s->n_wc], MAX_WC - sp->s->n_wc);

		if (n < 0) {
			atomic_store(&sp->err, n);
			break;
		}
		sp->s->n_wc += n;
		atomic_fetch_add(&sp->got, n);
		atomic_fetch_add(&sp->polls, 1);
	}
	return NULL;
}

/*
 * A busy poller whose stream can bring it nothing to complete (no receive
 * WR, no READ of its own) reads that stream only every few polls
 * (conn.c, poll_may_skip): what the peer sends still arrives. a1 polls its
 * CQ in a thread of its own without pause while b1 READs a1's memory (a1
 * answers from its poller) and a1 posts signalled WRITEs (their completions
 * come with the answers to its confirmations): every READ returns a1's
 * bytes, every WRITE lands and completes once.
 */
static void test_faults__idle_poller_still_serves(void **state)
{
	struct world w;
	struct spinner sp;
	pthread_t t;
	int64_t end;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	for (uint32_t i = 0; i < 65536; i++)
		w.a1.buf[i] = (uint8_t)(i * 13 + 5);
	memset(&sp, 0, sizeof(sp));
	sp.s = &w.a1;
	assert_int_equal(pthread_create(&t, NULL, spin_poll, &sp), 0);
	/* Empty polls enough for the poller to take the stream and skip. */
	end = now_ms() + HANG_GUARD_MS;
	while (atomic_load(&sp.polls) < 20000 && now_ms() < end)
		sched_yield();
	for (uint32_t i = 0; i < 40; i++) {
		uint32_t len = 512 + (i % 8) * 4096, off = (i % 4) * 1024;
		int base = w.b1.n_wc;

		memset(w.b1.buf + 131072, 0, len);
		post(&w.b1, RV_WR_RDMA_READ, 131072, len, (uint64_t)(uintptr_t)(w.a1.buf + off), rv_mr_rkey(w.a1.mr),
		     500 + i);
		drain(&w.b1);
		assert_int_equal(w.b1.wc[base].status, RV_WC_SUCCESS);
		assert_memory_equal(w.b1.buf + 131072, w.a1.buf + off, len);
		/* a1's WRITE, posted while its own thread polls. */
		{
			rv_sge g = sge(&w.a1, off, 3000 + i);
			rv_send_wr s;

			memset(&s, 0, sizeof(s));
			s.wr_id = 700 + i;
			s.opcode = RV_WR_RDMA_WRITE;
			s.sg_list = &g;
			s.num_sge = 1;
			s.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
			s.remote_addr = (uint64_t)(uintptr_t)(w.b1.buf + 65536 + i * 4096);
			s.rkey = rv_mr_rkey(w.b1.mr);
			assert_int_equal(rv_qp_post_send(w.a1.qp, &s, 1, NULL), 0);
		}
	}
	/* Every WRITE completes, in the polling thread. */
	end = now_ms() + HANG_GUARD_MS;
	while (atomic_load(&sp.got) < 40 && now_ms() < end)
		sleep_ms(1);
	atomic_store(&sp.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&sp.err), 0);
	w.a1.posted += 40;
	drain(&w.a1);
	for (uint32_t i = 0; i < 40; i++) {
		assert_int_equal(wc_of(&w.a1, 700 + i)->status, RV_WC_SUCCESS);
		assert_memory_equal(w.b1.buf + 65536 + i * 4096, w.a1.buf + (i % 4) * 1024, 3000 + i);
	}
	world_close(&w);
}

/*
 * A busy poller sends what waits for room in its socket itself (conn.c,
 * soft_conn_poll: the progress thread's EPOLLOUT is off while it polls), and
 * the socket keeps at most SOFT_TCP_NOTSENT_LOWAT unsent. b1 stops reading
 * (a SEND with no receive WR), a1 posts 60 signalled WRITEs of 48 KiB (about
 * 3 MB: the socket refuses most of it) while its own thread polls without
 * pause; then b1's receive WR comes: every WRITE lands and completes, in the
 * polling thread, and the SEND completes into its receive WR.
 */
static void test_faults__poller_sends_on_room(void **state)
{
	struct world w;
	struct spinner sp;
	pthread_t t;
	int64_t end;
	int lowat = 0;
	socklen_t ll = sizeof(lowat);

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	assert_int_equal(getsockopt(soft_qp_of(w.a1.qp)->conn->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, &ll), 0);
	assert_int_equal(lowat, SOFT_TCP_NOTSENT_LOWAT);
	for (uint32_t i = 0; i < BUF; i++)
		w.a1.buf[i] = (uint8_t)(i * 7 + 3);
	{
		rv_sge g = sge(&w.a1, 0, 100);
		rv_send_wr s;

		memset(&s, 0, sizeof(s));
		s.wr_id = 800;
		s.opcode = RV_WR_SEND;
		s.sg_list = &g;
		s.num_sge = 1;
		s.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
		assert_int_equal(rv_qp_post_send(w.a1.qp, &s, 1, NULL), 0);
	}
	memset(&sp, 0, sizeof(sp));
	sp.s = &w.a1;
	assert_int_equal(pthread_create(&t, NULL, spin_poll, &sp), 0);
	end = now_ms() + HANG_GUARD_MS;
	while (atomic_load(&sp.polls) < 1000 && now_ms() < end)
		sched_yield();
	for (uint32_t i = 0; i < 60; i++) {
		uint32_t len = 49152, off = (i % 4) * 4096;
		rv_sge g = sge(&w.a1, off, len);
		rv_send_wr s;

		memset(&s, 0, sizeof(s));
		s.wr_id = 801 + i;
		s.opcode = RV_WR_RDMA_WRITE;
		s.sg_list = &g;
		s.num_sge = 1;
		s.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
		s.remote_addr = (uint64_t)(uintptr_t)(w.b1.buf + (i % 4) * 65536);
		s.rkey = rv_mr_rkey(w.b1.mr);
		/* The send queue may be full until the poller's completions free it. */
		while (rv_qp_post_send(w.a1.qp, &s, 1, NULL) != 0) {
			if (now_ms() > end)
				fail_msg("WRITE %u: the send queue never had room", i);
			sched_yield();
		}
	}
	sleep_ms(20);
	post_recv(&w.b1, 196608, 8192, 800);
	end = now_ms() + HANG_GUARD_MS;
	while (atomic_load(&sp.got) < 61 && now_ms() < end)
		sleep_ms(1);
	atomic_store(&sp.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&sp.err), 0);
	w.a1.posted += 61;
	drain(&w.a1);
	drain(&w.b1);
	assert_int_equal(wc_of(&w.a1, 800)->status, RV_WC_SUCCESS);
	for (uint32_t i = 0; i < 60; i++)
		assert_int_equal(wc_of(&w.a1, 801 + i)->status, RV_WC_SUCCESS);
	assert_int_equal(wc_of(&w.b1, 800)->byte_len, 100);
	assert_memory_equal(w.b1.buf + 196608, w.a1.buf, 100);
	for (uint32_t k = 0; k < 4; k++)
		assert_memory_equal(w.b1.buf + k * 65536, w.a1.buf + k * 4096, 49152);
	world_close(&w);
}

/*
 * Many small unsignalled WRITEs and SENDs posted one by one into a busy TCP
 * stream: the sender frames them into the connection's buffer and sends many
 * with one send() (tx.c, soft_tx_post). Every message arrives whole and in
 * order, SENDs complete their receive WRs in order with the right bytes, the
 * signalled WR completes; a sender that never polls again still gets its
 * WRITEs to the peer (the hold timer); and a receiver that stops reading (a
 * SEND without a receive WR) fills the socket, so sends stop part way while
 * WRs are being gathered, and nothing is lost or reordered when it resumes.
 */
static void test_faults__gathered_small_writes(void **state)
{
	struct world w;
	uint64_t id;
	int64_t end;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	side_send_wr = 2048;
	side_sig_all = false;
	world_open(&w);
	side_send_wr = 64;
	side_sig_all = true;
	unsetenv("RVERBS_SOFT_SHM");
	for (uint32_t src = 0; src < 16; src++)
		for (uint32_t i = 0; i < 8192; i++)
			w.a1.buf[131072 + src * 8192u + i] = small_byte(src, i);

	/* 1: WRITEs and SENDs mixed, 16 at a time, the last signalled. */
	for (uint64_t round = 0; round < 8; round++) {
		int base = w.b1.n_wc;

		id = small_burst(&w, 10000 + round * 16, 16, true, true);
		drain(&w.a1);
		drain(&w.b1);
		assert_int_equal(wc_of(&w.a1, id + 15)->status, RV_WC_SUCCESS);
		for (int i = base; i < w.b1.n_wc; i++) {
			uint64_t rid = w.b1.wc[i].wr_id;

			assert_int_equal(w.b1.wc[i].status, RV_WC_SUCCESS);
			assert_int_equal(w.b1.wc[i].byte_len, small_len(rid));
			if (i > base)
				assert_true(rid > w.b1.wc[i - 1].wr_id); /* in order */
			for (uint32_t k = 0; k < small_len(rid); k++)
				if (w.b1.buf[196608 + (rid / 4 % 6) * 8192u + k] != small_byte(rid % 16, k))
					fail_msg("SEND %llu byte %u: %u, want %u (len %u)", (unsigned long long)rid, k,
						 w.b1.buf[196608 + (rid / 4 % 6) * 8192u + k], small_byte(rid % 16, k), small_len(rid));
		}
		small_slots_ok(&w, id, 16, true);
	}

	/* 2: a long stream of small WRITEs, one signalled at the end. */
	id = small_burst(&w, 20000, 16, false, false);
	for (uint64_t k = 16; k < 1600; k += 16)
		small_burst(&w, 20000 + k, 16, false, k + 16 == 1600);
	drain(&w.a1);
	assert_int_equal(wc_of(&w.a1, 20000 + 1599)->status, RV_WC_SUCCESS);
	small_slots_ok(&w, id, 1600, false);

	/* 3: unsignalled WRITEs and no poll on the sender afterwards: the last
	 * one's bytes reach the peer anyway. */
	memset(w.b1.buf, 0, 196608);
	id = small_burst(&w, 30000, 40, false, false);
	end = now_ms() + HANG_GUARD_MS;
	for (;;) {
		bool all = true;
		uint64_t last = id + 39;

		for (uint32_t i = 0; i < small_len(last) && all; i++)
			all = w.b1.buf[(last % 24) * 8192u + i] == small_byte(last % 16, i);
		if (all)
			break;
		if (now_ms() > end)
			fail_msg("the last unsignalled WRITE did not reach the peer while the sender did not poll");
		sleep_ms(1);
	}
	small_slots_ok(&w, id, 40, false);

	/* 4: the receiver stops reading (a SEND with no receive WR), the sender
	 * posts 1 500 small WRITEs (about 6 MB: more than the sockets hold), so
	 * its sends stop part way; then the receive WR comes. */
	{
		rv_sge g = sge(&w.a1, 0, 100);
		rv_send_wr s;

		memset(&s, 0, sizeof(s));
		s.wr_id = 39999;
		s.opcode = RV_WR_SEND;
		s.sg_list = &g;
		s.num_sge = 1;
		s.send_flags = RV_SEND_NO_INLINE;
		assert_int_equal(rv_qp_post_send(w.a1.qp, &s, 1, NULL), 0);
	}
	small_burst(&w, 40000, 1500, false, true);
	sleep_ms(20);
	post_recv(&w.b1, 196608, 8192, 39999);
	drain(&w.a1);
	drain(&w.b1);
	assert_int_equal(wc_of(&w.a1, 40000 + 1499)->status, RV_WC_SUCCESS);
	assert_int_equal(wc_of(&w.b1, 39999)->byte_len, 100);
	small_slots_ok(&w, 40000, 1500, false);
	world_close(&w);
}

/* Large SENDs are received straight into their receive WR's segments
 * (place.c): three segments with gaps between them, FPDU boundaries falling
 * anywhere in them; every byte lands where a buffered SEND would put it and
 * nothing outside the segments is touched. Each size twice (the second finds
 * the receiver reading header by header). */
static void test_faults__placed_sends_land_exactly(void **state)
{
	/* 65 455-65 713: around tx.c's large-first split on loopback (see
	 * placed_writes_land_exactly). */
	static const uint32_t lens[] = {65536, 100000, 8193, 200000, 140001, 65455, 65456, 65457, 65712, 65713};
	struct world w;
	uint64_t id = 800;

	(void)state;
	/* TCP, not the same-host path, which would carry these SENDs by reference. */
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		uint32_t len = lens[k], s0 = len / 3 + 7, s1 = len / 5 + 1, s2 = len - s0 - s1 + 11;
		uint32_t o0 = 5, o1 = o0 + s0 + 100, o2 = o1 + s1 + 3;
		rv_sge g[3] = {sge(&w.b1, o0, s0), sge(&w.b1, o1, s1), sge(&w.b1, o2, s2)};

		for (uint32_t i = 0; i < len; i++)
			w.a1.buf[i] = (uint8_t)(k * 17 + i * 11 + (i >> 10));
		for (int rep = 0; rep < 2; rep++) {
			rv_recv_wr r = {.wr_id = id, .sg_list = g, .num_sge = 3};
			const rv_wc *wc;

			memset(w.b1.buf, 0, BUF);
			assert_int_equal(rv_qp_post_recv(w.b1.qp, &r, 1, NULL), 0);
			w.b1.posted++;
			post(&w.a1, RV_WR_SEND, 0, len, 0, 0, id + 1);
			drain(&w.a1);
			drain(&w.b1);
			assert_int_equal(wc_of(&w.a1, id + 1)->status, RV_WC_SUCCESS);
			wc = wc_of(&w.b1, id);
			assert_int_equal(wc->status, RV_WC_SUCCESS);
			assert_int_equal(wc->opcode, RV_WC_RECV);
			assert_int_equal(wc->byte_len, len);
			assert_memory_equal(w.b1.buf + o0, w.a1.buf, s0);
			assert_memory_equal(w.b1.buf + o1, w.a1.buf + s0, s1);
			assert_memory_equal(w.b1.buf + o2, w.a1.buf + s0 + s1, len - s0 - s1);
			for (uint32_t i = 0; i < BUF; i++) {
				bool in = (i >= o0 && i < o0 + s0) || (i >= o1 && i < o1 + s1) ||
					  (i >= o2 && i < o2 + len - s0 - s1);
				if (!in && w.b1.buf[i] != 0)
					fail_msg("SEND of %u bytes: byte %u outside its segments written", len, i);
			}
			id += 2;
		}
	}
	check_guards(&w.b1);
	world_close(&w);
}

/* Large SENDs placed into receive WRs taken from an SRQ (two segments
 * each): each message whole in the WR it completes, in order. */
static void test_faults__placed_sends_through_an_srq(void **state)
{
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE, .max_wr = 16, .max_sge = 2};
	enum { N = 4, LEN = 50000, S0 = 20000, GAP = 10, SLOT_LEN = 60000 };
	rv_qp_init_attr qa;
	rv_endpoint es, er;
	struct world w;
	rv_srq *srq;
	rv_qp *sq, *rq;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	assert_int_equal(rv_srq_new(w.b1.pd, &sa, &srq), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ;
	qa.send_cq = w.b1.cq;
	qa.srq = srq;
	assert_int_equal(rv_qp_new(w.b1.pd, &qa, &rq), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qa.send_cq = w.a1.cq;
	assert_int_equal(rv_qp_new(w.a1.pd, &qa, &sq), 0);
	assert_int_equal(rv_qp_endpoint(sq, &es), 0);
	assert_int_equal(rv_qp_endpoint(rq, &er), 0);
	connect_to(sq, &er);
	connect_to(rq, &es);
	memset(w.b1.buf, 0, BUF);
	for (uint32_t i = 0; i < LEN + N * 100; i++)
		w.a1.buf[i] = (uint8_t)(i * 29 + (i >> 8));
	for (uint32_t k = 0; k < N; k++) {
		rv_sge g[2] = {sge(&w.b1, k * SLOT_LEN, S0), sge(&w.b1, k * SLOT_LEN + S0 + GAP, LEN - S0 + 5)};
		rv_recv_wr r = {.wr_id = 960 + k, .sg_list = g, .num_sge = 2};
		assert_int_equal(rv_srq_post_recv(srq, &r, 1, NULL), 0);
		w.b1.posted++;
	}
	for (uint32_t k = 0; k < N; k++) {
		rv_sge g = sge(&w.a1, k * 100, LEN);
		assert_int_equal(rv_qp_send(sq, &g, 950 + k), 0);
		w.a1.posted++;
	}
	drain(&w.a1);
	drain(&w.b1);
	for (uint32_t k = 0; k < N; k++) {
		const rv_wc *wc = wc_of(&w.b1, 960 + k);
		assert_int_equal(wc_of(&w.a1, 950 + k)->status, RV_WC_SUCCESS);
		assert_int_equal(wc->status, RV_WC_SUCCESS);
		assert_int_equal(wc->byte_len, LEN);
		assert_memory_equal(w.b1.buf + k * SLOT_LEN, w.a1.buf + k * 100, S0);
		assert_memory_equal(w.b1.buf + k * SLOT_LEN + S0 + GAP, w.a1.buf + k * 100 + S0, LEN - S0);
		for (uint32_t i = 0; i < GAP; i++)
			assert_int_equal(w.b1.buf[k * SLOT_LEN + S0 + i], 0);
	}
	rv_qp_unref(sq);
	rv_qp_unref(rq);
	rv_srq_unref(srq);
	world_close(&w);
}

/* A large SEND longer than its receive WR: the part that fits may be placed,
 * the FPDU that does not fit is refused as on the buffered path (receiver:
 * local length error; sender: remote invalid request), nothing is written
 * past the WR's segment. */
static void test_faults__placed_send_too_long(void **state)
{
	struct world w;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	memset(w.a1.buf, 0x3c, 100000);
	memset(w.b1.buf, 0, BUF);
	post_recv(&w.b1, 1000, 70000, 900);
	post(&w.a1, RV_WR_SEND, 0, 100000, 0, 0, 901);
	drain(&w.a1);
	drain(&w.b1);
	assert_int_equal(wc_of(&w.b1, 900)->status, RV_WC_LOC_LEN_ERR);
	assert_int_equal(wc_of(&w.a1, 901)->status, RV_WC_REM_INV_REQ_ERR);
	for (uint32_t i = 0; i < BUF; i++)
		if ((i < 1000 || i >= 71000) && w.b1.buf[i] != 0)
			fail_msg("byte %u outside the receive WR written", i);
	check_guards(&w.b1);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_ERR);
	assert_int_equal(qp_state(w.b1.qp), RV_QPS_ERR);
	world_close(&w);
}

/* A large SEND into a receive WR whose lkey does not exist: refused before a
 * byte is written (receiver: local protection error; sender: remote
 * operation error, the RDMAP local catastrophic TERMINATE). */
static void test_faults__placed_send_bad_lkey(void **state)
{
	struct world w;
	rv_sge g;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	memset(w.b1.buf, 0, BUF);
	g = sge(&w.b1, 0, 100000);
	g.lkey ^= 0x5a5a5a5au;
	assert_int_equal(rv_qp_recv(w.b1.qp, &g, 910), 0);
	w.b1.posted++;
	post(&w.a1, RV_WR_SEND, 0, 100000, 0, 0, 911);
	drain(&w.a1);
	drain(&w.b1);
	assert_int_equal(wc_of(&w.b1, 910)->status, RV_WC_LOC_PROT_ERR);
	assert_int_equal(wc_of(&w.a1, 911)->status, RV_WC_REM_OP_ERR);
	for (uint32_t i = 0; i < BUF; i++)
		if (w.b1.buf[i] != 0)
			fail_msg("byte %u written through a bad lkey", i);
	check_guards(&w.b1);
	world_close(&w);
}

/* A placed WRITE that arrives corrupt: its CRC is checked once the payload
 * is in the target, and the QPs fail as for a buffered FPDU (LLP CRC error). */
static void test_faults__corrupt_placed_write(void **state)
{
	struct world w;

	(void)state;
	/* TCP, not the same-host path, which would carry these WRITEs by reference. */
	setenv("RVERBS_SOFT_SHM", "0", 1);
	world_open(&w);
	unsetenv("RVERBS_SOFT_SHM");
	post(&w.a1, RV_WR_RDMA_WRITE, 0, 131072, (uint64_t)(uintptr_t)w.b1.buf, rv_mr_rkey(w.b1.mr), 600);
	drain(&w.a1);
	assert_int_equal(wc_of(&w.a1, 600)->status, RV_WC_SUCCESS);
	assert_int_equal(rv_soft_fault_inject(w.ca, w.a1.qp, RV_SOFT_FAULT_CORRUPT, 1, 0), 0);
	post(&w.a1, RV_WR_RDMA_WRITE, 0, 131072, (uint64_t)(uintptr_t)w.b1.buf, rv_mr_rkey(w.b1.mr), 601);
	drain(&w.a1);
	drain(&w.b1);
	assert_int_equal(wc_of(&w.a1, 601)->status, RV_WC_REM_OP_ERR);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_ERR);
	assert_int_equal(qp_state(w.b1.qp), RV_QPS_ERR);
	world_close(&w);
}

static void test_faults__delay(void **state)
{
	struct world w;
	uint8_t expect[65536];

	(void)state;
	world_open(&w);
	for (uint32_t i = 0; i < BUF / 2; i++)
		w.a1.buf[i] = (uint8_t)(i * 13 + 5);
	for (uint32_t i = 0; i < 30000; i++)
		w.b1.buf[i] = (uint8_t)(i * 3 + 1);
	memcpy(expect, w.b1.buf, 30000);
	assert_int_equal(rv_soft_fault_inject(w.ca, w.a1.qp, RV_SOFT_FAULT_DELAY, 3, 150), 0);
	assert_int_equal(rv_soft_fault_inject(w.cb, NULL, RV_SOFT_FAULT_DELAY, 2, 120), 0);
	post(&w.a1, RV_WR_RDMA_READ, 131072, 30000, (uint64_t)(uintptr_t)w.b1.buf, rv_mr_rkey(w.b1.mr), 250);
	drain(&w.a1);
	assert_int_equal(wc_of(&w.a1, 250)->status, RV_WC_SUCCESS);
	assert_memory_equal(w.a1.buf + 131072, expect, 30000);
	/* The READ overwrote nothing a1 sends below. */
	burst(&w);
	drain(&w.a1);
	drain(&w.b1);
	for (int i = 0; i < w.a1.n_wc; i++)
		assert_int_equal(w.a1.wc[i].status, RV_WC_SUCCESS);
	for (int i = 0; i < w.b1.n_wc; i++)
		assert_int_equal(w.b1.wc[i].status, RV_WC_SUCCESS);
	assert_memory_equal(w.b1.buf + 65536, w.a1.buf, 65536);
	assert_memory_equal(w.b1.buf + 16384, w.a1.buf + 100, 16384);
	assert_int_equal(wc_of(&w.b1, 101)->byte_len, 16384);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_RTS);
	traffic_ok(&w.a1, &w.b1, 5);
	world_close(&w);
}

static void test_faults__drop_is_retry_exceeded(void **state)
{
	struct world w;

	(void)state;
	world_open(&w);
	assert_int_equal(rv_soft_fault_inject(w.ca, w.a1.qp, RV_SOFT_FAULT_DROP, 1, 0), 0);
	burst(&w);
	drain(&w.a1);
	drain(&w.b1);
	/* The lost frame stops the stream: no progress within the bound of
	 * timeout 14 / retry_cnt 1, then transport retry exceeded and flush; b1
	 * sees the connection close and flushes its receives. */
	assert_int_equal(wc_of(&w.a1, 200)->status, RV_WC_RETRY_EXC_ERR);
	for (uint64_t id = 201; id <= 204; id++)
		assert_int_equal(wc_of(&w.a1, id)->status, RV_WC_WR_FLUSH_ERR);
	for (uint64_t id = 100; id < 103; id++)
		assert_int_equal(wc_of(&w.b1, id)->status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(w.a1.qp), RV_QPS_ERR);
	world_close(&w);
}

static void test_faults__clear_and_bad_arguments(void **state)
{
	struct world w;
	rv_device *mdev = NULL;
	rv_context *mctx = NULL;

	(void)state;
	world_open(&w);
	assert_int_equal(rv_soft_fault_inject(NULL, NULL, RV_SOFT_FAULT_DROP, 1, 0), -EINVAL);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, (rv_soft_fault_kind)99, 1, 0), -EINVAL);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_DROP, 0, 0), -EINVAL);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_DROP, 1000001, 0), -EINVAL);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_DROP, 1, 5), -EINVAL);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_DELAY, 1, 0), -EINVAL);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_DELAY, 1, 60001), -EINVAL);
	/* A QP of another context. */
	assert_int_equal(rv_soft_fault_inject(w.ca, w.b1.qp, RV_SOFT_FAULT_DROP, 1, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "another context"));
	/* Armed, then cleared: nothing happens to the traffic. */
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_RESET, 5, 0), 0);
	assert_int_equal(rv_soft_fault_inject(w.ca, w.a1.qp, RV_SOFT_FAULT_CORRUPT, 5, 0), 0);
	assert_int_equal(rv_soft_fault_inject(w.ca, NULL, RV_SOFT_FAULT_CLEAR, 0, 0), 0);
	assert_int_equal(rv_soft_fault_inject(w.ca, w.a1.qp, RV_SOFT_FAULT_CLEAR, 0, 0), 0);
	traffic_ok(&w.a1, &w.b1, 3);
	/* Not soft0: -EOPNOTSUPP, saying so. */
	mock_reset();
	assert_int_equal(mock_device_new("mock0", &mdev), 0);
	assert_int_equal(rv_context_new(mdev, NULL, &mctx), 0);
	assert_int_equal(rv_soft_fault_inject(mctx, NULL, RV_SOFT_FAULT_DROP, 1, 0), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "soft0"));
	assert_int_equal(rv_context_close(mctx), 0);
	rv_context_unref(mctx);
	rv_device_unref(mdev);
	world_close(&w);
}

static void test_faults__environment(void **state)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;
	static const char *const bad[] = {"drop", "drop=0", "drop=x", "delay=0", "delay=5/0", "reset=",
					  "jitter=3", "drop=1,,corrupt=1", "after=-1"};
	struct world w;

	(void)state;
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("RVERBS_SOFT_FAULT", bad[i], 1);
		assert_int_equal(rv_context_new(dev, NULL, &ctx), -EINVAL);
		assert_non_null(strstr(rv_error_last(), "RVERBS_SOFT_FAULT"));
	}
	setenv("RVERBS_SOFT_FAULT", "after=1,delay=50/2,drop=3,corrupt=2,reset,reset=2", 1);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
	rv_device_unref(dev);

	/* The environment applies to the contexts opened while it is set. */
	setenv("RVERBS_SOFT_FAULT", "delay=20", 1);
	w.ca = open_ctx(NULL);
	unsetenv("RVERBS_SOFT_FAULT");
	w.cb = open_ctx(NULL);
	side_open(&w.a1, w.ca);
	side_open(&w.b1, w.cb);
	side_open(&w.a2, w.ca);
	side_open(&w.b2, w.cb);
	connect_pair(&w.a1, &w.b1);
	connect_pair(&w.a2, &w.b2);
	/* delay=20 on every frame of ca: traffic is correct, only later. */
	traffic_ok(&w.a1, &w.b1, 1);
	traffic_ok(&w.b1, &w.a1, 2);
	world_close(&w);
}

/* ---- a peer in another process ---- */

static void send_ep(int fd, rv_qp *qp, rv_mr *mr)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep;
	uint32_t len;
	size_t n;

	assert_int_equal(rv_qp_endpoint(qp, &ep), 0);
	ep.mask |= RV_ENDPOINT_MR;
	ep.mr_addr = (uint64_t)(uintptr_t)rv_mr_addr(mr);
	ep.mr_length = rv_mr_length(mr);
	ep.mr_rkey = rv_mr_rkey(mr);
	assert_int_equal(rv_endpoint_pack(&ep, buf, sizeof(buf), &n), 0);
	len = (uint32_t)n;
	assert_int_equal(write(fd, &len, 4), 4);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
}

static bool recv_ep(int fd, rv_endpoint *ep)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	uint32_t len;

	if (read(fd, &len, 4) != 4 || len > sizeof(buf) || read(fd, buf, len) != (ssize_t)len)
		return false;
	return rv_endpoint_unpack(buf, len, ep) == 0;
}

struct child_args {
	int wfd, rfd, n_recv;
	const char *addr;
};

/* The peer: n_recv receives posted, connected, then it waits to be killed. */
static void child_peer(void **state)
{
	const struct child_args *ca = *state;
	int wfd = ca->wfd, rfd = ca->rfd, n_recv = ca->n_recv;
	const char *addr = ca->addr;
	struct side s;
	rv_endpoint peer;
	char c = 'R';

	memset(&s, 0, sizeof(s));
	s.ctx = open_ctx(addr);
	side_open(&s, s.ctx);
	s.own_ctx = true;
	rv_context_unref(s.ctx); /* side_open took its own reference */
	assert_int_equal(rv_qp_to_init(s.qp, NULL), 0);
	for (int i = 0; i < n_recv; i++)
		post_recv(&s, (size_t)i * 16384, 16384, (uint64_t)i);
	send_ep(wfd, s.qp, s.mr);
	if (!recv_ep(rfd, &peer))
		_exit(2);
	connect_to(s.qp, &peer);
	if (write(wfd, &c, 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

struct remote {
	pid_t pid;
	int rfd, wfd;
	rv_endpoint ep;
};

/* Fork the peer before this process opens a context, so that the child of a
 * single-threaded process is what runs it (ThreadSanitizer refuses threads
 * after a multi-threaded fork). */
static void remote_fork(struct remote *r, const char *addr, const char *netns, int n_recv)
{
	int p2c[2], c2p[2];

	assert_int_equal(pipe(p2c), 0);
	assert_int_equal(pipe(c2p), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		if (netns && netns_enter(netns) < 0)
			_exit(4);
		{
			/* Its own cmocka run: a failed assertion in the child ends the
			 * child, not a second copy of the parent's test list. */
			struct child_args ca = {c2p[1], p2c[0], n_recv, addr};
			const struct CMUnitTest t[] = {cmocka_unit_test_prestate(child_peer, &ca)};
			_exit(cmocka_run_group_tests_name("soft-faults-peer", t, NULL, NULL) ? 5 : 0);
		}
	}
	close(p2c[0]);
	close(c2p[1]);
	r->rfd = c2p[0];
	r->wfd = p2c[1];
	live_peer.pid = r->pid;
	live_peer.rfd = r->rfd;
	live_peer.wfd = r->wfd;
}

/* Connect s to the forked peer. */
static void remote_connect(struct remote *r, struct side *s)
{
	char c;

	if (!recv_ep(r->rfd, &r->ep)) {
		int st = 0;
		pid_t w = waitpid(r->pid, &st, WNOHANG);

		if (w == r->pid)
			live_peer.pid = 0; /* reaped here */
		fail_msg("no endpoint from the peer process: it %s %d (66 under ThreadSanitizer: a report in "
			 "the peer, or threads started after a multi-threaded fork)",
			 w != r->pid ? "is still running, pid" : WIFEXITED(st) ? "exited with" : "was killed by signal",
			 w != r->pid ? (int)r->pid : WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	send_ep(r->wfd, s->qp, s->mr);
	connect_to(s->qp, &r->ep);
	assert_int_equal(read(r->rfd, &c, 1), 1);
}

static void remote_end(struct remote *r)
{
	int st;

	kill(r->pid, SIGKILL);
	kill(r->pid, SIGCONT);
	assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
	close(r->rfd);
	close(r->wfd);
	live_peer.pid = 0;
	live_peer.rfd = live_peer.wfd = -1;
}

/* Statuses of a's WRs in posting order: SUCCESS*, then want, then FLUSH*. */
static void expect_prefix_then(const struct side *s, uint64_t first, uint64_t last, uint32_t want)
{
	bool failed = false;

	for (uint64_t id = first; id <= last; id++) {
		uint32_t st = wc_of(s, id)->status;
		if (!failed && st == RV_WC_SUCCESS)
			continue;
		if (!failed) {
			assert_int_equal(st, want);
			failed = true;
			continue;
		}
		assert_int_equal(st, RV_WC_WR_FLUSH_ERR);
	}
	assert_true(failed);
}

/* Two more QPs of the local context still work after the fault. */
static void local_bystanders_ok(rv_context *ctx)
{
	struct side x, y;

	side_open(&x, ctx);
	side_open(&y, ctx);
	connect_pair(&x, &y);
	traffic_ok(&x, &y, 7);
	side_close(&x);
	side_close(&y);
}

/* soft0's ring counters (lib/drivers/soft/soft.h, soft_shmring_stats): the
 * array as large as the driver fills it (SOFT_RING_NSTATS). */

/* The same-host peer's frames and ours go through the rings (shmring.c), so
 * what follows tests liveness and retry on them (hang guard only). */
static void expect_rings(struct side *a)
{
	uint64_t st[SOFT_RING_NSTATS];

	for (int i = 0; i < 500; i++) {
		assert_int_equal(soft_shmring_stats(a->qp, st), 0);
		if (st[SOFT_RING_STATE] == 3)
			return;
		sleep_ms(10);
	}
	fail_msg("the shared-memory rings did not come up (state %u)", (unsigned)st[SOFT_RING_STATE]);
}

static void test_faults__peer_killed_mid_transfer(void **state)
{
	struct remote r;
	struct side a;

	(void)state;
	remote_fork(&r, NULL, NULL, 2);
	side_open(&a, NULL);
	remote_connect(&r, &a);
	for (uint32_t i = 0; i < BUF; i++)
		a.buf[i] = (uint8_t)i;
	/* Two SENDs the peer has receives for, WRITEs into its memory, then SENDs
	 * it has no receive for: they wait at the peer (receiver not ready). */
	post(&a, RV_WR_SEND, 0, 16384, 0, 0, 1);
	post(&a, RV_WR_SEND, 0, 100, 0, 0, 2);
	drain(&a);
	expect_rings(&a);
	for (uint64_t i = 0; i < 4; i++)
		post(&a, RV_WR_RDMA_WRITE, 0, 65536, r.ep.mr_addr + 65536 + (i % 2) * 65536, r.ep.mr_rkey, 3 + i);
	for (uint64_t i = 0; i < 4; i++)
		post(&a, RV_WR_SEND, 0, 1000, 0, 0, 7 + i);
	sleep_ms(200);
	kill(r.pid, SIGKILL);
	drain(&a);
	expect_prefix_then(&a, 3, 10, RV_WC_RETRY_EXC_ERR);
	assert_int_equal(wc_of(&a, 1)->status, RV_WC_SUCCESS);
	assert_int_equal(wc_of(&a, 2)->status, RV_WC_SUCCESS);
	assert_int_equal(qp_state(a.qp), RV_QPS_ERR);
	remote_end(&r);
	local_bystanders_ok(a.ctx);
	side_close(&a);
}

static void test_faults__peer_stopped_is_retry_exceeded(void **state)
{
	struct remote r;
	struct side a;

	(void)state;
	remote_fork(&r, NULL, NULL, 4);
	side_open(&a, NULL);
	remote_connect(&r, &a);
	post(&a, RV_WR_SEND, 0, 100, 0, 0, 1);
	drain(&a);
	assert_int_equal(wc_of(&a, 1)->status, RV_WC_SUCCESS);
	expect_rings(&a);
	/* Stalled: the peer's kernel still takes bytes (or its ring memory does),
	 * its process answers nothing. */
	assert_int_equal(kill(r.pid, SIGSTOP), 0);
	{
		int st;
		/* Every thread of the peer has stopped before anything is posted. */
		assert_int_equal(waitpid(r.pid, &st, WUNTRACED), r.pid);
		assert_true(WIFSTOPPED(st));
	}
	post(&a, RV_WR_SEND, 0, 100, 0, 0, 2);
	post(&a, RV_WR_RDMA_WRITE, 0, 4096, r.ep.mr_addr + 65536, r.ep.mr_rkey, 3);
	post(&a, RV_WR_RDMA_READ, 8192, 4096, r.ep.mr_addr, r.ep.mr_rkey, 4);
	drain(&a);
	assert_int_equal(wc_of(&a, 2)->status, RV_WC_RETRY_EXC_ERR);
	assert_int_equal(wc_of(&a, 3)->status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc_of(&a, 4)->status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(a.qp), RV_QPS_ERR);
	remote_end(&r);
	local_bystanders_ok(a.ctx);
	side_close(&a);
}

static void test_faults__receiver_not_ready_is_not_a_failure(void **state)
{
	struct remote r;
	struct side a;
	rv_wc wc;

	(void)state;
	remote_fork(&r, NULL, NULL, 0);
	side_open(&a, NULL);
	remote_connect(&r, &a);
	/* The peer never posts a receive (rnr_retry 7: wait forever) but lives:
	 * well past the retry bound, the SEND has not failed. */
	post(&a, RV_WR_SEND, 0, 100, 0, 0, 1);
	sleep_ms(4500); /* more than twice soft0's smallest bound (SOFT_RETRY_MIN_MS, 2 s) */
	assert_int_equal(rv_cq_poll(a.cq, &wc, 1), 0);
	assert_int_equal(qp_state(a.qp), RV_QPS_RTS);
	/* Then the peer dies: now it fails at once. */
	kill(r.pid, SIGKILL);
	drain(&a);
	assert_int_equal(wc_of(&a, 1)->status, RV_WC_RETRY_EXC_ERR);
	remote_end(&r);
	side_close(&a);
}

/* ---- link down between two network namespaces (root only) ---- */

static struct netns_pair net;
static bool have_netns;

static void test_faults__link_down_between_namespaces(void **state)
{
	int self;
	struct remote r;
	struct side a;

	(void)state;
	if (!have_netns) {
		print_message("skipped: needs root and iproute2's ip (network namespaces)\n");
		skip();
	}
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(self >= 0);
	assert_int_equal(netns_enter(net.ns_a), 0);

	memset(&a, 0, sizeof(a));
	remote_fork(&r, net.ip_b, net.ns_b, 4);
	a.ctx = open_ctx(net.ip_a);
	side_open(&a, a.ctx);
	a.own_ctx = true;
	rv_context_unref(a.ctx);
	remote_connect(&r, &a);
	post(&a, RV_WR_SEND, 0, 100, 0, 0, 1);
	drain(&a);
	assert_int_equal(wc_of(&a, 1)->status, RV_WC_SUCCESS);
	assert_int_equal(netns_sh("ip -n %s link set %s down", net.ns_a, net.dev_a), 0);
	post(&a, RV_WR_SEND, 0, 100, 0, 0, 2);
	post(&a, RV_WR_RDMA_WRITE, 0, 65536, r.ep.mr_addr + 65536, r.ep.mr_rkey, 3);
	drain(&a);
	assert_int_equal(wc_of(&a, 2)->status, RV_WC_RETRY_EXC_ERR);
	assert_int_equal(wc_of(&a, 3)->status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(a.qp), RV_QPS_ERR);
	remote_end(&r);
	side_close(&a);
	assert_int_equal(setns(self, CLONE_NEWNET), 0);
	close(self);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_faults__clear_and_bad_arguments, leftovers_close),
		cmocka_unit_test_teardown(test_faults__environment, leftovers_close),
		cmocka_unit_test_teardown(test_faults__reset, leftovers_close),
		cmocka_unit_test_teardown(test_faults__corrupt, leftovers_close),
		cmocka_unit_test_teardown(test_faults__placed_writes_land_exactly, leftovers_close),
		cmocka_unit_test_teardown(test_faults__corrupt_placed_write, leftovers_close),
		cmocka_unit_test_teardown(test_faults__placed_sends_land_exactly, leftovers_close),
		cmocka_unit_test_teardown(test_faults__placed_sends_through_an_srq, leftovers_close),
		cmocka_unit_test_teardown(test_faults__placed_send_too_long, leftovers_close),
		cmocka_unit_test_teardown(test_faults__placed_send_bad_lkey, leftovers_close),
		cmocka_unit_test_teardown(test_faults__many_large_writes_in_flight, leftovers_close),
		cmocka_unit_test_teardown(test_faults__gathered_sends_from_segments, leftovers_close),
		cmocka_unit_test_teardown(test_faults__gathered_small_writes, leftovers_close),
		cmocka_unit_test_teardown(test_faults__idle_poller_still_serves, leftovers_close),
		cmocka_unit_test_teardown(test_faults__poller_sends_on_room, leftovers_close),
		cmocka_unit_test_teardown(test_faults__delay, leftovers_close),
		cmocka_unit_test_teardown(test_faults__drop_is_retry_exceeded, leftovers_close),
		cmocka_unit_test_teardown(test_faults__peer_killed_mid_transfer, leftovers_close),
		cmocka_unit_test_teardown(test_faults__peer_stopped_is_retry_exceeded, leftovers_close),
		cmocka_unit_test_teardown(test_faults__receiver_not_ready_is_not_a_failure, leftovers_close),
		cmocka_unit_test_teardown(test_faults__link_down_between_namespaces, leftovers_close),
	};
	rv_device *dev = NULL;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	unsetenv("RVERBS_SOFT_FAULT");
	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "skip: soft0 is not built in\n");
		return 77;
	}
	rv_device_unref(dev);
	have_netns = netns_usable() && netns_pair_new(&net, "flt", 214) == 0;
	rc = cmocka_run_group_tests_name("soft-faults", tests, NULL, NULL);
	if (have_netns)
		netns_pair_del(&net);
	return rc;
}
