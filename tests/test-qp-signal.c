/*
 * Selective signalling as a QP policy (rv_qp_set_signal_every) and automatic
 * inline: which WRs the facade signals (every N-th, the last of a post, the
 * caller's), the send queue never overfilled with unsignalled work, the
 * accounting of outstanding work through success, error and flush
 * completions, and the bad arguments; first against the mock driver (exact
 * flags and scripted completions), then on soft0 with real traffic.
 * Every mock case ends with nothing live in the mock.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mock-driver.h"
#include "test-clock.h"

static rv_device *dev;
static rv_context *ctx;
static rv_pd *pd;
static rv_cq *cq;

static void assert_msg_contains(const char *fragment)
{
	if (!strstr(rv_error_last(), fragment))
		fail_msg("rv_error_last() is \"%s\"; expected \"%s\" in it", rv_error_last(), fragment);
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	if (mock_device_new("mock0", &dev) < 0 || rv_context_new(dev, NULL, &ctx) < 0 ||
	    rv_pd_new(ctx, NULL, &pd) < 0 || rv_cq_new(ctx, NULL, &cq) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cq = rv_cq_unref(cq);
	pd = rv_pd_unref(pd);
	ctx = rv_context_unref(ctx);
	dev = rv_device_unref(dev);
	assert_int_equal(mock.double_destroys + mock.order_violations + mock.contract_violations, 0);
	assert_int_equal(mock_live_total(), 0);
	return 0;
}

/* A mock QP on cq (sends and receives) with sq_sig_all = 0. */
static rv_qp *mock_qp(uint32_t depth, uint32_t sq_sig_all)
{
	rv_qp_init_attr a;
	rv_qp *qp = NULL;

	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	a.send_cq = cq;
	a.sq_sig_all = sq_sig_all;
	a.cap.max_send_wr = depth;
	a.cap.max_recv_wr = depth;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	assert_int_equal(rv_qp_new(pd, &a, &qp), 0);
	return qp;
}

/* n unsignalled WRITEs with wr_ids first, first + 1, ... */
static void make_wrs(rv_send_wr *w, size_t n, uint64_t first)
{
	memset(w, 0, n * sizeof(*w));
	for (size_t i = 0; i < n; i++) {
		w[i].wr_id = first + i;
		w[i].opcode = RV_WR_RDMA_WRITE;
	}
}

/* Which of the WRs the mock saw (from index from) were signalled, as a string
 * of 's' and '.'. */
static const char *signals(size_t from)
{
	static char buf[MOCK_SENT_MAX + 1];
	size_t n = 0;

	for (size_t i = from; i < mock.n_sent; i++)
		buf[n++] = (mock.sent_flags[i] & RV_SEND_SIGNALED) ? 's' : '.';
	buf[n] = 0;
	return buf;
}

/* The mock CQ hands out one completion of qp. */
static void complete(rv_qp *qp, uint64_t wr_id, uint32_t status, uint32_t opcode)
{
	rv_wc wc;

	memset(&mock.poll_wc[0], 0, sizeof(mock.poll_wc[0]));
	mock.poll_wc[0].wr_id = wr_id;
	mock.poll_wc[0].status = status;
	mock.poll_wc[0].opcode = opcode;
	mock.poll_wc[0].qp_num = rv_qp_num(qp);
	mock.poll_n = 1;
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 1);
	assert_int_equal(wc.wr_id, wr_id);
	mock.poll_n = 0;
}

static void test_qp_signal__every_n_and_last_of_each_post(void **state)
{
	rv_send_wr w[10];
	rv_qp *qp = mock_qp(16, 0);
	size_t posted = 0;

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 4), 0);
	make_wrs(w, 10, 100);
	assert_int_equal(rv_qp_post_send(qp, w, 10, &posted), 0);
	assert_int_equal(posted, 10);
	/* Every 4th, and the last of the post. */
	assert_string_equal(signals(0), "...s...s.s");
	assert_int_equal(rv_qp_send_outstanding(qp), 10);
	/* The caller's WRs are not touched. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(w[i].send_flags, 0);

	/* A single WR is the last of its post. */
	assert_int_equal(rv_qp_post_send(qp, w, 1, NULL), 0);
	assert_string_equal(signals(10), "s");

	/* The caller's own signal restarts the count. */
	make_wrs(w, 7, 200);
	w[1].send_flags = RV_SEND_SIGNALED;
	assert_int_equal(rv_qp_post_send(qp, w, 5, NULL), 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 16);
	assert_string_equal(signals(11), ".s..s");
	/* 16 outstanding fill the queue. */
	assert_int_equal(rv_qp_post_send(qp, &w[5], 2, &posted), -ENOMEM);
	assert_int_equal(posted, 0);
	qp = rv_qp_unref(qp);
}

static void test_qp_signal__n_of_one_signals_everything(void **state)
{
	rv_send_wr w[5];
	rv_qp *qp = mock_qp(8, 0);

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 1), 0);
	make_wrs(w, 5, 1);
	assert_int_equal(rv_qp_post_send(qp, w, 5, NULL), 0);
	assert_string_equal(signals(0), "sssss");
	/* Changing N keeps the accounting. */
	assert_int_equal(rv_qp_set_signal_every(qp, 8), 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 5);
	complete(qp, 5, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);
	qp = rv_qp_unref(qp);
}

/* A send queue of 4: a post never leaves more than 4 WRs outstanding, and
 * the last WR that went is signalled, so a completion frees the queue. */
static void test_qp_signal__never_overfills_a_tiny_send_queue(void **state)
{
	rv_send_wr w[6];
	rv_qp *qp = mock_qp(4, 0);
	size_t posted = 99;

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 4), 0);
	make_wrs(w, 6, 10);
	assert_int_equal(rv_qp_post_send(qp, w, 6, &posted), -ENOMEM);
	assert_int_equal(posted, 4);
	assert_msg_contains("send queue is full");
	assert_msg_contains("max_send_wr 4");
	assert_string_equal(signals(0), "...s");
	assert_int_equal(rv_qp_send_outstanding(qp), 4);

	/* Full: nothing goes, the driver is not even called. */
	unsigned calls = mock.n_post_send;
	assert_int_equal(rv_qp_post_send(qp, &w[4], 2, &posted), -ENOMEM);
	assert_int_equal(posted, 0);
	assert_int_equal(mock.n_post_send, calls);

	/* The signalled WR's completion retires all four. */
	complete(qp, 13, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);
	assert_int_equal(rv_qp_post_send(qp, &w[4], 2, &posted), 0);
	assert_int_equal(posted, 2);
	assert_string_equal(signals(4), ".s");

	/* Single posts into a full queue: the last that fits is signalled. */
	make_wrs(w, 3, 20);
	assert_int_equal(rv_qp_post_send(qp, &w[0], 1, NULL), 0);
	assert_int_equal(rv_qp_post_send(qp, &w[1], 1, NULL), 0);
	assert_int_equal(rv_qp_post_send(qp, &w[2], 1, NULL), -ENOMEM);
	assert_int_equal(rv_qp_send_outstanding(qp), 4);
	qp = rv_qp_unref(qp);
}

static void test_qp_signal__success_completions_retire_their_group(void **state)
{
	rv_send_wr w[7];
	rv_qp *qp = mock_qp(16, 0);

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 3), 0);
	make_wrs(w, 7, 100);
	assert_int_equal(rv_qp_post_send(qp, w, 7, NULL), 0);
	assert_string_equal(signals(0), "..s..ss");
	assert_int_equal(rv_qp_send_outstanding(qp), 7);
	/* A receive on the shared CQ is not a send. */
	complete(qp, 100, RV_WC_SUCCESS, RV_WC_RECV);
	assert_int_equal(rv_qp_send_outstanding(qp), 7);
	complete(qp, 102, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 4);
	complete(qp, 105, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 1);
	complete(qp, 106, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);
	/* A completion of another QP on the same CQ is not ours. */
	rv_qp *other = mock_qp(4, 1);
	assert_int_equal(rv_qp_post_send(qp, w, 2, NULL), 0);
	complete(other, 101, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 2);
	other = rv_qp_unref(other);
	qp = rv_qp_unref(qp);
}

/* An error completes WRs one by one, signalled or not: the failed WR (an
 * unsignalled one here) and then each flushed one; receives flushed on the
 * same CQ are not counted. */
static void test_qp_signal__error_and_flush_completions(void **state)
{
	rv_send_wr w[6];
	rv_qp *qp = mock_qp(16, 0);

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 16), 0);
	make_wrs(w, 6, 10);
	assert_int_equal(rv_qp_post_send(qp, w, 6, NULL), 0);
	assert_string_equal(signals(0), ".....s");
	/* WR 12 failed: 10 and 11 completed before it, silently. */
	complete(qp, 12, RV_WC_LOC_PROT_ERR, 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 3);
	complete(qp, 13, RV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 2);
	/* A receive flushed on the shared CQ. */
	complete(qp, 999, RV_WC_WR_FLUSH_ERR, RV_WC_RECV);
	assert_int_equal(rv_qp_send_outstanding(qp), 2);
	complete(qp, 14, RV_WC_WR_FLUSH_ERR, 0);
	complete(qp, 15, RV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);
	/* More flushes than work: nothing goes negative. */
	complete(qp, 16, RV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);

	/* Back through RESET the QP starts clean. */
	rv_qp_attr a = {.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET};
	assert_int_equal(rv_qp_modify(qp, &a), 0);
	make_wrs(w, 2, 30);
	assert_int_equal(rv_qp_post_send(qp, w, 2, NULL), 0);
	complete(qp, 31, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);
	qp = rv_qp_unref(qp);
}

/* With its own send CQ a QP knows every completion there is a send, even an
 * error one whose wr_id matches nothing. */
static void test_qp_signal__separate_send_cq(void **state)
{
	rv_qp_init_attr a;
	rv_send_wr w[4];
	rv_cq *rcq = NULL;
	rv_qp *qp = NULL;

	(void)state;
	assert_int_equal(rv_cq_new(ctx, NULL, &rcq), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	a.send_cq = cq;
	a.recv_cq = rcq;
	assert_int_equal(rv_qp_new(pd, &a, &qp), 0);
	assert_int_equal(rv_qp_set_signal_every(qp, 2), 0);
	make_wrs(w, 4, 0);
	assert_int_equal(rv_qp_post_send(qp, w, 4, NULL), 0);
	assert_string_equal(signals(0), ".s.s");
	complete(qp, 77, RV_WC_RETRY_EXC_ERR, 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 3);
	complete(qp, 1, RV_WC_WR_FLUSH_ERR, 0);
	complete(qp, 2, RV_WC_WR_FLUSH_ERR, 0);
	complete(qp, 3, RV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 0);
	qp = rv_qp_unref(qp);
	rcq = rv_cq_unref(rcq);
}

static void test_qp_signal__bad_arguments(void **state)
{
	rv_send_wr w[3];
	rv_qp *qp = mock_qp(8, 0), *all = mock_qp(8, 1);

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 9), -EINVAL);
	assert_msg_contains("exceeds the send queue depth");
	assert_msg_contains("max_send_wr 8");
	assert_int_equal(rv_qp_set_signal_every(qp, UINT32_MAX), -EINVAL);
	assert_int_equal(rv_qp_set_signal_every(all, 4), -EINVAL);
	assert_msg_contains("sq_sig_all");
	assert_int_equal(rv_qp_set_signal_every(NULL, 4), -EINVAL);
	assert_int_equal(rv_qp_send_outstanding(NULL), -EINVAL);
	assert_int_equal(rv_qp_send_outstanding(qp), -EINVAL);
	assert_msg_contains("no signalling policy");
	/* Off with nothing outstanding: fine, even twice. */
	assert_int_equal(rv_qp_set_signal_every(qp, 0), 0);

	/* Off while work is outstanding: refused, with the count. */
	assert_int_equal(rv_qp_set_signal_every(qp, 4), 0);
	make_wrs(w, 3, 1);
	assert_int_equal(rv_qp_post_send(qp, w, 3, NULL), 0);
	assert_int_equal(rv_qp_set_signal_every(qp, 0), -EBUSY);
	assert_msg_contains("3 send WRs outstanding");
	complete(qp, 3, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_set_signal_every(qp, 0), 0);
	/* Off: the plain path, the caller's flags as they are. */
	assert_int_equal(rv_qp_post_send(qp, w, 3, NULL), 0);
	assert_string_equal(signals(3), "...");
	assert_int_equal(rv_qp_send_outstanding(qp), -EINVAL);

	/* Closed. */
	assert_int_equal(rv_qp_set_signal_every(qp, 4), 0);
	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(rv_qp_set_signal_every(qp, 4), -RV_ECLOSED);
	assert_int_equal(rv_qp_send_outstanding(qp), -RV_ECLOSED);
	/* The CQ polls on without the closed QP. */
	mock.poll_n = 1;
	mock.poll_wc[0].qp_num = rv_qp_num(all);
	rv_wc wc;
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 1);
	mock.poll_n = 0;
	qp = rv_qp_unref(qp);
	all = rv_qp_unref(all);
}

/* The one-operation helpers go through the policy too. */
static void test_qp_signal__one_operation_helpers(void **state)
{
	rv_qp *qp = mock_qp(2, 0);
	rv_sge g = {.addr = 0x1000, .length = 8, .lkey = 1};

	(void)state;
	assert_int_equal(rv_qp_set_signal_every(qp, 2), 0);
	assert_int_equal(rv_qp_write(qp, &g, 0x2000, 5, 1), 0);
	assert_int_equal(rv_qp_send(qp, &g, 2), 0);
	assert_int_equal(rv_qp_send_outstanding(qp), 2);
	assert_int_equal(rv_qp_read(qp, &g, 0x2000, 5, 3), -ENOMEM);
	complete(qp, 1, RV_WC_SUCCESS, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_qp_send_outstanding(qp), 1);
	qp = rv_qp_unref(qp);
}

/* ---- soft0 ---------------------------------------------------------------- */

struct soft {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq, *peer_cq;
	rv_qp *qp, *peer;
	rv_mr *mr;
	uint8_t *buf;
};

/* Two connected soft0 QPs; s->qp sends with sq_sig_all = 0 and depth sq. */
static void soft_open(struct soft *s, uint32_t sq)
{
	rv_qp_init_attr a;
	rv_endpoint ea, eb;
	rv_device *d = NULL;

	memset(s, 0, sizeof(*s));
	if (rv_device_find("soft0", &d) < 0)
		skip();
	assert_int_equal(rv_context_new(d, NULL, &s->ctx), 0);
	rv_device_unref(d);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->peer_cq), 0);
	assert_int_equal(rv_mr_alloc(s->pd, 1 << 16, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL,
				     &s->mr), 0);
	s->buf = rv_mr_addr(s->mr);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	a.send_cq = s->cq;
	a.cap.max_send_wr = sq;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	assert_int_equal(rv_qp_new(s->pd, &a, &s->qp), 0);
	a.send_cq = s->peer_cq;
	a.cap.max_send_wr = 4;
	assert_int_equal(rv_qp_new(s->pd, &a, &s->peer), 0);
	assert_int_equal(rv_qp_endpoint(s->qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(s->peer, &eb), 0);
	assert_int_equal(rv_qp_connect(s->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(s->peer, &ea), 0);
}

static void soft_close(struct soft *s)
{
	rv_qp_unref(s->qp);
	rv_qp_unref(s->peer);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_cq_unref(s->peer_cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
}

/* n 64-byte WRITEs from buf[0..) to buf[32768 + 64 i], wr_ids first.. */
static void soft_wrs(struct soft *s, rv_send_wr *w, rv_sge *g, size_t n, uint64_t first, uint32_t rkey)
{
	for (size_t i = 0; i < n; i++) {
		g[i] = (rv_sge){.addr = (uintptr_t)s->buf + 64 * i, .length = 64, .lkey = rv_mr_lkey(s->mr)};
		memset(&w[i], 0, sizeof(w[i]));
		w[i].wr_id = first + i;
		w[i].sg_list = &g[i];
		w[i].num_sge = 1;
		w[i].opcode = RV_WR_RDMA_WRITE;
		w[i].send_flags = RV_SEND_NO_INLINE;
		w[i].remote_addr = (uintptr_t)s->buf + 32768 + 64 * i;
		w[i].rkey = rkey;
	}
}

/* Poll s->cq until the QP has nothing outstanding (10 s hang guard); the
 * completions polled go to wc[] (at most max), their count is returned. */
static int drain(struct soft *s, rv_wc *wc, int max)
{
	int64_t end = now_ms() + 10000;
	int got = 0;

	while (rv_qp_send_outstanding(s->qp) > 0) {
		rv_wc one;
		int n = rv_cq_poll(s->cq, &one, 1);

		assert_true(n >= 0);
		if (n == 0)
			sched_yield(); /* few cores (or valgrind): let soft0's progress thread run */
		if (n == 1 && got < max)
			wc[got++] = one;
		if (now_ms() > end)
			fail_msg("%d send WRs still outstanding after 10 s", rv_qp_send_outstanding(s->qp));
	}
	return got;
}

static void test_qp_signal__soft0_every_n(void **state)
{
	struct soft s;
	rv_send_wr w[10];
	rv_sge g[10];
	rv_wc wc[16];
	int n;

	(void)state;
	soft_open(&s, 16);
	assert_int_equal(rv_qp_set_signal_every(s.qp, 4), 0);
	soft_wrs(&s, w, g, 10, 100, rv_mr_rkey(s.mr));
	for (size_t i = 0; i < 10; i++)
		memset(s.buf + 64 * i, (int)(0x40 + i), 64);
	assert_int_equal(rv_qp_post_send(s.qp, w, 10, NULL), 0);
	n = drain(&s, wc, 16);
	/* One completion per signalled WR: the 4th, the 8th and the last. */
	assert_int_equal(n, 3);
	assert_int_equal(wc[0].wr_id, 103);
	assert_int_equal(wc[1].wr_id, 107);
	assert_int_equal(wc[2].wr_id, 109);
	for (int i = 0; i < n; i++)
		assert_int_equal(wc[i].status, RV_WC_SUCCESS);
	for (size_t i = 0; i < 10; i++)
		assert_int_equal(s.buf[32768 + 64 * i + 63], 0x40 + i);
	assert_int_equal(rv_cq_poll(s.cq, wc, 1), 0);
	soft_close(&s);
}

static void test_qp_signal__soft0_tiny_send_queue(void **state)
{
	struct soft s;
	rv_send_wr w[10];
	rv_sge g[10];
	rv_wc wc[16];
	size_t posted = 0, done = 0;
	rv_qp_cap cap;

	(void)state;
	soft_open(&s, 4);
	assert_int_equal(rv_qp_get_cap(s.qp, &cap), 0);
	assert_int_equal(rv_qp_set_signal_every(s.qp, cap.max_send_wr), 0);
	soft_wrs(&s, w, g, 10, 0, rv_mr_rkey(s.mr));
	/* Post all ten through the queue of four, draining whenever it is full. */
	while (done < 10) {
		int rc = rv_qp_post_send(s.qp, &w[done], 10 - done, &posted);

		assert_true(rc == 0 || rc == -ENOMEM);
		assert_true(rv_qp_send_outstanding(s.qp) <= (int)cap.max_send_wr);
		done += posted;
		if (rc == -ENOMEM)
			(void)drain(&s, wc, 16);
	}
	(void)drain(&s, wc, 16);
	assert_int_equal(rv_qp_send_outstanding(s.qp), 0);
	soft_close(&s);
}

/* A WRITE with a bad rkey fails at the peer: the error and the flushes
 * complete every WR still out, and the count comes back to 0. */
static void test_qp_signal__soft0_error_flushes_unsignalled_work(void **state)
{
	struct soft s;
	rv_send_wr w[6];
	rv_sge g[6];
	rv_wc wc[16];
	int n, errors = 0;

	(void)state;
	soft_open(&s, 16);
	assert_int_equal(rv_qp_set_signal_every(s.qp, 16), 0);
	soft_wrs(&s, w, g, 6, 50, rv_mr_rkey(s.mr));
	w[3].rkey = rv_mr_rkey(s.mr) ^ 0x5a5a;
	assert_int_equal(rv_qp_post_send(s.qp, w, 6, NULL), 0);
	n = drain(&s, wc, 16);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].qp_num, rv_qp_num(s.qp));
		errors += wc[i].status != RV_WC_SUCCESS;
	}
	/* WR 53 and everything after it come back in error, one each. */
	assert_true(errors >= 3);
	assert_int_equal(wc[n - 1].wr_id, 55);
	assert_int_equal(rv_qp_send_outstanding(s.qp), 0);
	soft_close(&s);
}

/* The next completion of s's send CQ, within 10 s. */
static rv_wc soft_wait_wc(struct soft *s)
{
	int64_t end = now_ms() + 10000;
	rv_wc wc;

	while (rv_cq_poll(s->cq, &wc, 1) == 0) {
		assert_true(now_ms() < end);
		sched_yield(); /* few cores (or valgrind): let soft0's progress thread run */
	}
	return wc;
}

/* Automatic inline: a WRITE that fits max_inline_data goes inline, so its
 * payload is copied at post time; the lkey is checked first, as the
 * non-inline path would (issue 17), so a WR with a bad lkey is a local
 * protection error either way. Inline the caller asked for (RV_SEND_INLINE)
 * never looks at the lkey (the InfiniBand rule for inline data). */
static void test_qp_signal__soft0_automatic_inline(void **state)
{
	struct soft s;
	uint8_t stack_payload[32];
	rv_qp_cap cap;
	rv_send_wr w;
	rv_sge g = {.length = sizeof(stack_payload), .lkey = 0};
	rv_wc wc;

	(void)state;
	soft_open(&s, 4);
	assert_int_equal(rv_qp_get_cap(s.qp, &cap), 0);
	assert_true(cap.max_inline_data >= sizeof(stack_payload));
	/* Automatic, from registered memory. */
	memset(s.buf, 0xcd, sizeof(stack_payload));
	g.addr = (uintptr_t)s.buf;
	g.lkey = rv_mr_lkey(s.mr);
	memset(&w, 0, sizeof(w));
	w.wr_id = 1;
	w.sg_list = &g;
	w.num_sge = 1;
	w.opcode = RV_WR_RDMA_WRITE;
	w.send_flags = RV_SEND_SIGNALED;
	w.remote_addr = (uintptr_t)s.buf + 1024;
	w.rkey = rv_mr_rkey(s.mr);
	assert_int_equal(rv_qp_post_send(s.qp, &w, 1, NULL), 0);
	/* Copied at post time: the caller's buffer is free again. */
	memset(s.buf, 0, sizeof(stack_payload));
	wc = soft_wait_wc(&s);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	for (size_t i = 0; i < sizeof(stack_payload); i++)
		assert_int_equal(s.buf[1024 + i], 0xcd);

	/* Asked for, from unregistered memory with no lkey. */
	memset(stack_payload, 0xab, sizeof(stack_payload));
	g.addr = (uintptr_t)stack_payload;
	g.lkey = 0;
	w.wr_id = 2;
	w.send_flags = RV_SEND_SIGNALED | RV_SEND_INLINE;
	assert_int_equal(rv_qp_post_send(s.qp, &w, 1, NULL), 0);
	memset(stack_payload, 0, sizeof(stack_payload));
	wc = soft_wait_wc(&s);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	for (size_t i = 0; i < sizeof(stack_payload); i++)
		assert_int_equal(s.buf[1024 + i], 0xab);

	/* Automatic, with no lkey: what the non-inline WR gets. */
	w.wr_id = 3;
	w.send_flags = RV_SEND_SIGNALED;
	assert_int_equal(rv_qp_post_send(s.qp, &w, 1, NULL), 0);
	wc = soft_wait_wc(&s);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, RV_WC_LOC_PROT_ERR);
	soft_close(&s);
}

/* One thread posts, another polls the send CQ: the accounting is shared
 * between them through atomics only (a ThreadSanitizer build checks it). */
struct two_threads {
	struct soft *s;
	_Atomic bool posted_all;
	_Atomic int errors;
	int wcs;
};

#define TT_WRS 600

static void *poller_main(void *arg)
{
	struct two_threads *t = arg;
	int64_t end = now_ms() + 30000;

	while (!atomic_load(&t->posted_all) || rv_qp_send_outstanding(t->s->qp) > 0) {
		rv_wc wc[8];
		int n = rv_cq_poll(t->s->cq, wc, 8);

		if (n < 0 || now_ms() > end) {
			atomic_fetch_add(&t->errors, 1);
			break;
		}
		if (n == 0)
			sched_yield(); /* few cores (or valgrind): let soft0's progress thread run */
		for (int i = 0; i < n; i++)
			if (wc[i].status != RV_WC_SUCCESS)
				atomic_fetch_add(&t->errors, 1);
		t->wcs += n;
	}
	return NULL;
}

static void test_qp_signal__soft0_poster_and_poller_threads(void **state)
{
	struct soft s;
	struct two_threads t = {.s = &s, .posted_all = false, .errors = 0, .wcs = 0};
	rv_send_wr w[8];
	rv_sge g[8];
	pthread_t th;
	size_t done = 0;
	int64_t end;

	(void)state;
	soft_open(&s, 32);
	assert_int_equal(rv_qp_set_signal_every(s.qp, 8), 0);
	soft_wrs(&s, w, g, 8, 0, rv_mr_rkey(s.mr));
	assert_int_equal(pthread_create(&th, NULL, poller_main, &t), 0);
	end = now_ms() + 30000;
	while (done < TT_WRS && now_ms() < end) {
		size_t want = 1 + done % 8, posted = 0;
		int rc;

		if (want > TT_WRS - done)
			want = TT_WRS - done;
		rc = rv_qp_post_send(s.qp, w, want, &posted);

		assert_true(rc == 0 || rc == -ENOMEM);
		assert_true(rv_qp_send_outstanding(s.qp) <= 32);
		done += posted;
		if (rc == -ENOMEM)
			sched_yield();
	}
	atomic_store(&t.posted_all, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(done, TT_WRS);
	assert_int_equal(atomic_load(&t.errors), 0);
	assert_int_equal(rv_qp_send_outstanding(s.qp), 0);
	/* At least one completion per 8 WRs, at most one per WR. */
	assert_true(t.wcs >= TT_WRS / 8 && t.wcs <= TT_WRS);
	soft_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_qp_signal__every_n_and_last_of_each_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__n_of_one_signals_everything, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__never_overfills_a_tiny_send_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__success_completions_retire_their_group, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__error_and_flush_completions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__separate_send_cq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_signal__one_operation_helpers, setup, teardown),
		cmocka_unit_test(test_qp_signal__soft0_every_n),
		cmocka_unit_test(test_qp_signal__soft0_tiny_send_queue),
		cmocka_unit_test(test_qp_signal__soft0_error_flushes_unsignalled_work),
		cmocka_unit_test(test_qp_signal__soft0_automatic_inline),
		cmocka_unit_test(test_qp_signal__soft0_poster_and_poller_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
