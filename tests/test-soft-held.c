/*
 * soft0 over TCP holds the READ response to a peer's confirmation (the
 * zero-length READ behind a signalled SEND) for the application's answer
 * (lib/drivers/soft/iwarp/tx.c, soft_tx_hold): a poller or waiter that
 * received frames it into the transmit buffer without sending, and the next
 * post_send takes it along in one send(). The hold is bounded: the peer's
 * SEND completes whatever the application does next. Two contexts of one
 * process, RVERBS_SOFT_SHM=0 (TCP only), every SEND signalled:
 *   - the receiver busy-polls until its receive completes and then never
 *     calls rverbs again: the sender's SEND still completes (the progress
 *     thread's bound sends the response);
 *   - the same with a receiver that blocked in rv_cq_wait;
 *   - a busy-poll ping-pong: every SEND and every receive completes once,
 *     in order, with the right bytes (the response travels with the answer);
 *   - a stream of signalled WRITEs, 48 in flight, one confirmation in
 *     flight at a time: every WRITE completes once, in order;
 *   - a sparse signalled WRITE (the first signalled one, behind a
 *     confirmation in flight) is asked for before the WRs posted behind it:
 *     it completes while a SEND behind it waits for a receive WR;
 *   - small unsignalled WRITEs and a SEND a poller posted, gathered, and the
 *     poller stops: they still go (the progress thread's look).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "soft-pair.h"

#define ROUNDS 50
#define PINGS 500
#define GUARD_MS 10000 /* a hang guard only */




static void pair(struct side *a, struct side *b)
{
	side_open(a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(b, 0, RV_ACCESS_LOCAL_WRITE);
	connect_pair(a, &DEFAULTS, b, &DEFAULTS);
}

/* The receiver polls until its receive completes, then stops for good; the
 * sender's signalled SEND completes anyway. */
static void test_held__flushed_when_the_application_never_posts_again(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		struct side a, b;
		rv_wc wc;

		pair(&a, &b);
		post_recv_small(&b, b.qp, 1);
		post_send_small(&a, a.qp, 1);
		check_recv_small(&b, poll_one_within(b.cq, GUARD_MS), 1); /* busy-polls: B's thread reads */
		wc = poll_one_within(a.cq, GUARD_MS);                 /* B never polls again */
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.opcode, RV_WC_SEND);
		assert_int_equal(wc.wr_id, 1);
		assert_int_equal(rv_cq_poll(b.cq, &wc, 1), 0);
		side_close(&a);
		side_close(&b);
	}
}

/* The same with a receiver that blocked in rv_cq_wait and then stopped. */
static void test_held__flushed_when_a_waiter_never_comes_back(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS / 5; round++) {
		struct side a, b;
		rv_comp_channel *ch;
		rv_wc wc;

		side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
		/* B as side_open makes it, with a completion channel on its CQ. */
		memset(&b, 0, sizeof(b));
		b.ctx = open_ctx(0);
		assert_int_equal(rv_pd_new(b.ctx, NULL, &b.pd), 0);
		assert_int_equal(rv_comp_channel_new(b.ctx, NULL, &ch), 0);
		rv_cq_attr ca = {.mask = RV_CQ_ATTR_CHANNEL, .cqe = 256, .channel = ch};
		assert_int_equal(rv_cq_new(b.ctx, &ca, &b.cq), 0);
		assert_int_equal(rv_cq_set_wait_mode(b.cq, RV_CQ_WAIT_EVENT, 0), 0);
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .send_cq = b.cq,
				      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4}};
		assert_int_equal(rv_qp_new(b.pd, &qa, &b.qp), 0);
		assert_int_equal(rv_mr_alloc(b.pd, BUF, RV_ACCESS_LOCAL_WRITE, NULL, &b.mr), 0);
		b.buf = rv_mr_addr(b.mr);
		connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);

		post_recv_small(&b, b.qp, 2);
		post_send_small(&a, a.qp, 2);
		assert_int_equal(rv_cq_wait(b.cq, &wc, 1, GUARD_MS), 1); /* B's thread receives */
		check_recv_small(&b, wc, 2);
		wc = poll_one_within(a.cq, GUARD_MS); /* B never calls again */
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.opcode, RV_WC_SEND);
		assert_int_equal(wc.wr_id, 2);
		side_close(&a);
		side_close(&b);
		rv_comp_channel_unref(ch);
	}
}

/* A busy-poll ping-pong, every SEND signalled: the responses go with the
 * answers; every completion once, in order, with the right bytes. */
static void test_held__ping_pong_every_send_signalled(void **state)
{
	struct side a, b;
	uint64_t a_sends = 0, b_sends = 0;

	(void)state;
	pair(&a, &b);
	post_recv_small(&a, a.qp, 0);
	post_recv_small(&b, b.qp, 0);
	for (uint64_t i = 0; i < PINGS; i++) {
		rv_wc wc;
		bool got = false;

		post_send_small(&a, a.qp, i);
		while (!got) { /* B: its receive, and its own SEND completions in order */
			wc = poll_one_within(b.cq, GUARD_MS);
			if (wc.opcode == RV_WC_SEND) {
				assert_int_equal(wc.status, RV_WC_SUCCESS);
				assert_int_equal(wc.wr_id, b_sends++);
				continue;
			}
			check_recv_small(&b, wc, i);
			got = true;
		}
		post_recv_small(&b, b.qp, i + 1);
		post_send_small(&b, b.qp, i);
		got = false;
		while (!got) {
			wc = poll_one_within(a.cq, GUARD_MS);
			if (wc.opcode == RV_WC_SEND) {
				assert_int_equal(wc.status, RV_WC_SUCCESS);
				assert_int_equal(wc.wr_id, a_sends++);
				continue;
			}
			check_recv_small(&a, wc, i);
			got = true;
		}
		post_recv_small(&a, a.qp, i + 1);
	}
	while (a_sends < PINGS) {
		rv_wc wc = poll_one_within(a.cq, GUARD_MS);
		assert_int_equal(wc.opcode, RV_WC_SEND);
		assert_int_equal(wc.wr_id, a_sends++);
	}
	while (b_sends < PINGS) {
		rv_wc wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.opcode, RV_WC_SEND);
		assert_int_equal(wc.wr_id, b_sends++);
	}
	side_close(&a);
	side_close(&b);
}

/* A stream of signalled 8 KiB WRITEs from rv_mr_alloc memory (sent in place,
 * without a page probe), 48 in flight: the sender keeps one confirmation in
 * flight and asks for the WRs framed meanwhile when it returns (tx.c,
 * sig_due). Every WRITE completes once, in order, successfully, including
 * the last ones, posted with nothing after them; the target holds the
 * bytes. */
#define WSIZE 8192u
#define WSLOTS 4u
#define WCOUNT 3000u
#define WDEPTH 48u

static void test_held__stream_of_signalled_writes_all_complete(void **state)
{
	struct side a, b;
	struct conn_opts ob = DEFAULTS;
	uint64_t posted = 0, done = 0;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	ob.access = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE;
	connect_pair(&a, &DEFAULTS, &b, &ob);
	fill(a.buf, WSIZE * WSLOTS, 41);
	memset(b.buf, 0, BUF);
	while (done < WCOUNT) {
		while (posted < WCOUNT && posted - done < WDEPTH) {
			uint32_t k = (uint32_t)(posted % WSLOTS);
			rv_sge g = sge(&a, (size_t)k * WSIZE, WSIZE);
			rv_send_wr wr = {.wr_id = posted, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
					 .send_flags = RV_SEND_SIGNALED,
					 .remote_addr = (uint64_t)(uintptr_t)(b.buf + BUF / 2 + (size_t)k * WSIZE),
					 .rkey = rv_mr_rkey(b.mr)};
			size_t n;

			assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, &n), 0);
			posted++;
		}
		rv_wc wc = poll_one_within(a.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.opcode, RV_WC_RDMA_WRITE);
		assert_int_equal(wc.wr_id, done);
		done++;
	}
	assert_memory_equal(b.buf + BUF / 2, a.buf, WSIZE * WSLOTS);
	side_close(&a);
	side_close(&b);
}

/* a and b connected, b's memory remotely writable, a's QP signalling only
 * the WRs marked RV_SEND_SIGNALED (side_open's QP signals all). */
static void open_sparse_pair(struct side *a, struct side *b)
{
	struct conn_opts ob = DEFAULTS;
	rv_qp_init_attr qa;

	side_open(a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	qa.send_cq = a->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.sq_sig_all = 0;
	rv_qp_unref(a->qp);
	assert_int_equal(rv_qp_new(a->pd, &qa, &a->qp), 0);
	ob.access = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE;
	connect_pair(a, &DEFAULTS, b, &ob);
}

/* One chain: 16 small unsignalled WRITEs (a confirmation goes behind them,
 * tx.c confirm_between: the signalled WR is posted), a signalled WRITE, 15
 * unsignalled WRITEs, then an unsignalled SEND the peer has no receive WR
 * for: its stream stops there. The signalled WRITE is sparse (no signalled WR
 * before it) and a confirmation is in flight, so it is asked for as soon as
 * SOFT_CONFIRM_EVERY WRs after the first confirmation are framed, ahead of
 * the SEND (tx.c, sig_due): it completes although the SEND waits. Asked for
 * when the first confirmation returned, the request went behind the SEND and
 * the WRITE completed only once a receive WR came (issue #22, tcp4k). Then
 * the receive WR comes: the SEND lands, the WRITEs hold their bytes. */
#define SPARSE_N 34u
#define SPARSE_SIG 16u
#define SPARSE_LEN 64u

static void test_held__sparse_signalled_write_asked_for_at_once(void **state)
{
	struct side a, b;
	rv_send_wr wr[SPARSE_N];
	rv_sge g[SPARSE_N];
	rv_wc wc;
	size_t n;

	(void)state;
	open_sparse_pair(&a, &b);
	fill(a.buf, BUF, 53);
	memset(b.buf, 0, BUF);
	memset(wr, 0, sizeof(wr));
	for (uint32_t i = 0; i < SPARSE_N; i++) {
		g[i] = sge(&a, (size_t)i * SPARSE_LEN, SPARSE_LEN);
		wr[i].wr_id = i;
		wr[i].sg_list = &g[i];
		wr[i].num_sge = 1;
		if (i + 1 < SPARSE_N) {
			wr[i].opcode = RV_WR_RDMA_WRITE;
			wr[i].remote_addr = (uint64_t)(uintptr_t)(b.buf + BUF / 2 + (size_t)i * SPARSE_LEN);
			wr[i].rkey = rv_mr_rkey(b.mr);
		} else {
			wr[i].opcode = RV_WR_SEND;
		}
	}
	wr[SPARSE_SIG].send_flags = RV_SEND_SIGNALED;
	assert_int_equal(rv_qp_post_send(a.qp, wr, SPARSE_N, &n), 0);
	wc = poll_one_within(a.cq, GUARD_MS);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RDMA_WRITE);
	assert_int_equal(wc.wr_id, SPARSE_SIG);
	/* Everything up to the signalled WRITE has landed. */
	assert_memory_equal(b.buf + BUF / 2, a.buf, (size_t)(SPARSE_SIG + 1) * SPARSE_LEN);
	{
		rv_sge rg = sge(&b, 0, SPARSE_LEN);
		rv_recv_wr rw = {.wr_id = 99, .sg_list = &rg, .num_sge = 1};

		assert_int_equal(rv_qp_post_recv(b.qp, &rw, 1, &n), 0);
	}
	wc = poll_one_within(b.cq, GUARD_MS);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.wr_id, 99);
	assert_memory_equal(b.buf, a.buf + (size_t)(SPARSE_N - 1) * SPARSE_LEN, SPARSE_LEN);
	assert_memory_equal(b.buf + BUF / 2, a.buf, (size_t)(SPARSE_N - 1) * SPARSE_LEN);
	side_close(&a);
	side_close(&b);
}

/* A poller's unsignalled small WRITEs and SEND gathered in the transmit
 * buffer (tx.c, soft_tx_post) while it polls, no hold timer armed
 * (gather_begin): the thread then stops calling rverbs for A, and the
 * progress thread's look still sends them: B's receive completes, behind
 * every WRITE. */
#define GATHER_N 12
#define GATHER_LEN 1024u
static void test_held__gathered_by_a_poller_that_stops(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS / 5; round++) {
		struct side a, b;
		rv_wc wc;
		size_t n;

		open_sparse_pair(&a, &b);
		fill(a.buf, BUF, 61 + (unsigned)round);
		memset(b.buf, 0, BUF);
		{
			rv_sge rg = sge(&b, 0, GATHER_LEN);
			rv_recv_wr rw = {.wr_id = 7, .sg_list = &rg, .num_sge = 1};

			assert_int_equal(rv_qp_post_recv(b.qp, &rw, 1, &n), 0);
		}
		for (uint32_t i = 0; i <= GATHER_N + 1; i++) {
			rv_sge g = sge(&a, (size_t)i * GATHER_LEN, GATHER_LEN);
			rv_send_wr wr;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = i;
			wr.sg_list = &g;
			wr.num_sge = 1;
			wr.opcode = i <= GATHER_N ? RV_WR_RDMA_WRITE : RV_WR_SEND;
			wr.remote_addr = (uint64_t)(uintptr_t)(b.buf + BUF / 2 + (size_t)i * GATHER_LEN);
			wr.rkey = rv_mr_rkey(b.mr);
			if (i == 0) {
				/* The first is signalled: A polls for it, so its stream is a poller's. */
				wr.send_flags = RV_SEND_SIGNALED;
				assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, &n), 0);
				wc = poll_one_within(a.cq, GUARD_MS);
				assert_int_equal(wc.status, RV_WC_SUCCESS);
				assert_int_equal(wc.wr_id, 0);
				continue;
			}
			assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, &n), 0);
			if (i < GATHER_N - 4)
				assert_int_equal(rv_cq_poll(a.cq, &wc, 1), 0); /* polls on, then only posts */
		}
		/* A is not called again; B's poll reads only B's stream. */
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.opcode, RV_WC_RECV);
		assert_int_equal(wc.wr_id, 7);
		assert_memory_equal(b.buf, a.buf + (size_t)(GATHER_N + 1) * GATHER_LEN, GATHER_LEN);
		assert_memory_equal(b.buf + BUF / 2, a.buf, (size_t)(GATHER_N + 1) * GATHER_LEN);
		side_close(&a);
		side_close(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held__flushed_when_the_application_never_posts_again),
		cmocka_unit_test(test_held__flushed_when_a_waiter_never_comes_back),
		cmocka_unit_test(test_held__ping_pong_every_send_signalled),
		cmocka_unit_test(test_held__stream_of_signalled_writes_all_complete),
		cmocka_unit_test(test_held__sparse_signalled_write_asked_for_at_once),
		cmocka_unit_test(test_held__gathered_by_a_poller_that_stops),
	};

	setenv("RVERBS_SOFT_SHM", "0", 1); /* TCP: the rings confirm without READs */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
