/*
 * A thread blocked in rv_cq_wait on a CQ of one TCP stream sleeps in that
 * stream's recv (soft_cq_block, soft_conn_sleep_claim; lib/drivers/soft/
 * README.md, "Blocking over TCP with a busy process"), not in poll(): what
 * else must still wake it, each case with the recv's bound set far beyond
 * the test's limits (RVERBS_SOFT_WAIT_RECV_MS=60000), so that only a real
 * wake-up passes: its messages, in order, with every byte; its QP moved to
 * the error state by another thread; the peer's QP moved to the error state;
 * a SEND posted by another thread on its QP; two waiters on the one stream,
 * and the second's when the first leaves at its deadline; its own deadline. And that it does sleep in the recv
 * (soft_ctx_wait_recvs), which the code before did not.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "channel-pair.h"
#include "drivers/soft/soft.h"

#define MSGS 12
#define LONG_WAIT_MS 30000
#define WAKE_LIMIT_MS 2000

/* The channel pair, b's CQ waiting in event mode (the blocking wait). */
static void open_waiting_pair(struct pair *p)
{
	pair_open(p);
	assert_int_equal(rv_cq_set_wait_mode(p->cq_b, RV_CQ_WAIT_EVENT, 0), 0);
}

static void post_recv_at(struct pair *p, uint32_t slot, uint64_t wr_id)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)rv_mr_addr(p->mr_b) + slot * 64u, .length = 64,
		    .lkey = rv_mr_lkey(p->mr_b)};

	assert_int_equal(rv_qp_recv(p->qp_b, &g, wr_id), 0);
}

/* a sends 64 bytes (pattern seed) to b, signalled; its completion is polled
 * by whoever wants it. */
static void send_from_a(struct pair *p, uint64_t wr_id, uint8_t seed)
{
	uint8_t *buf = rv_mr_addr(p->mr_a);

	for (int i = 0; i < 64; i++)
		buf[i] = (uint8_t)(seed + i);
	pair_post_send(p, wr_id, 0);
}

struct waiter {
	struct pair *p;
	int timeout_ms;
	int n;
	rv_wc wc;
	int64_t took_ms;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	int64_t t0 = now_ms();

	w->n = rv_cq_wait(w->p->cq_b, &w->wc, 1, w->timeout_ms);
	w->took_ms = now_ms() - t0;
	return NULL;
}

/* Long enough for the waiter to be asleep in its recv. */
static void settle(void)
{
	usleep(100000);
}

static void setup_env(void)
{
	setenv("RVERBS_SOFT_SHM", "0", 1);           /* TCP, not the rings */
	setenv("RVERBS_SOFT_WAIT_SPIN_US", "0", 1);  /* straight to the sleep */
	setenv("RVERBS_SOFT_WAIT_RECV_MS", "60000", 1);
}

static void *sender_thread(void *arg)
{
	struct pair *p = arg;

	for (int i = 0; i < MSGS; i++) {
		usleep(5000);
		send_from_a(p, 100 + (uint64_t)i, (uint8_t)(7 * i));
		pair_send_completion(p, 100 + (uint64_t)i);
	}
	return NULL;
}

static void messages_in_order_from_the_recv(void **state)
{
	struct pair p;
	pthread_t t;
	uint64_t before;

	(void)state;
	open_waiting_pair(&p);
	for (uint32_t i = 0; i < MSGS; i++)
		post_recv_at(&p, i, 200 + i);
	before = soft_ctx_wait_recvs(p.ctx);
	assert_int_equal(pthread_create(&t, NULL, sender_thread, &p), 0);
	for (uint32_t i = 0; i < MSGS; i++) {
		rv_wc wc;
		const uint8_t *got = (const uint8_t *)rv_mr_addr(p.mr_b) + i * 64u;

		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, LONG_WAIT_MS), 1);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 200 + i);
		assert_int_equal(wc.byte_len, 64);
		for (int k = 0; k < 64; k++)
			assert_int_equal(got[k], (uint8_t)(7 * i + k));
	}
	pthread_join(t, NULL);
	/* Most waits slept in the recv (a SEND whose bytes came before the
	 * wait, or during the facade's polls, is taken without a sleep). */
	assert_true(soft_ctx_wait_recvs(p.ctx) - before >= MSGS / 2);
	pair_close(&p);
}

static void modify_err(rv_qp *qp)
{
	rv_qp_attr a = {.mask = RV_QP_STATE, .qp_state = RV_QPS_ERR};

	assert_int_equal(rv_qp_modify(qp, &a), 0);
}

/* The waiter's QP (or the peer's) goes to the error state while it sleeps in
 * the recv: its receive is flushed and it returns with it, long before the
 * recv's bound. */
static void woken_by_error(bool own)
{
	struct pair p;
	struct waiter w = {.timeout_ms = LONG_WAIT_MS};
	pthread_t t;

	open_waiting_pair(&p);
	w.p = &p;
	post_recv_at(&p, 0, 31);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	settle();
	modify_err(own ? p.qp_b : p.qp_a);
	pthread_join(t, NULL);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.wc.wr_id, 31);
	assert_int_not_equal(w.wc.status, RV_WC_SUCCESS);
	assert_true(w.took_ms < WAKE_LIMIT_MS + 100);
	pair_close(&p);
}

static void woken_by_own_qp_error(void **state)
{
	(void)state;
	woken_by_error(true);
}

static void woken_by_peer_qp_error(void **state)
{
	(void)state;
	woken_by_error(false);
}

/* Another thread posts a SEND on the waiter's QP (b to a; a has a receive):
 * its completion reaches the waiter (it comes back on the stream the waiter
 * sleeps on: the confirmation's READ response). */
static void woken_by_another_threads_send(void **state)
{
	struct pair p;
	struct waiter w = {.timeout_ms = LONG_WAIT_MS};
	pthread_t t;
	rv_sge ga = {.length = 64}, gb;
	rv_send_wr wr;
	size_t n = 0;
	rv_wc wc;
	int rc = 0;

	(void)state;
	open_waiting_pair(&p);
	w.p = &p;
	ga.addr = (uint64_t)(uintptr_t)rv_mr_addr(p.mr_a);
	ga.lkey = rv_mr_lkey(p.mr_a);
	assert_int_equal(rv_qp_recv(p.qp_a, &ga, 41), 0);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	settle();
	gb.addr = (uint64_t)(uintptr_t)rv_mr_addr(p.mr_b);
	gb.length = 64;
	gb.lkey = rv_mr_lkey(p.mr_b);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 42;
	wr.sg_list = &gb;
	wr.num_sge = 1;
	wr.opcode = RV_WR_SEND;
	wr.send_flags = RV_SEND_SIGNALED;
	assert_int_equal(rv_qp_post_send(p.qp_b, &wr, 1, &n), 0);
	/* a's receive completes (a's CQ is polled: the progress thread reads a). */
	for (int i = 0; i < 100000 && rc == 0; i++) {
		rc = rv_cq_poll(p.cq_a, &wc, 1);
		if (rc == 0)
			usleep(100);
	}
	assert_int_equal(rc, 1);
	assert_int_equal(wc.wr_id, 41);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	pthread_join(t, NULL);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.wc.wr_id, 42);
	assert_int_equal(w.wc.status, RV_WC_SUCCESS);
	assert_true(w.took_ms < WAKE_LIMIT_MS + 100);
	pair_close(&p);
}

/* Two threads wait on the one stream: one sleeps in its recv, the other on the
 * channel (the stream is the first's); two SENDs complete one each. */
static void two_waiters_one_stream(void **state)
{
	struct pair p;
	struct waiter w[2];
	pthread_t t[2];

	(void)state;
	open_waiting_pair(&p);
	/* The stream up and the waiter's first (it claims the recv first);
	 * two waiters that start before the stream carries anything, both on
	 * the channel alone: test-soft-twowait. */
	post_recv_at(&p, 2, 50);
	send_from_a(&p, 60, 0);
	{
		rv_wc wc;

		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, LONG_WAIT_MS), 1);
		assert_int_equal(wc.wr_id, 50);
	}
	pair_send_completion(&p, 60);
	post_recv_at(&p, 0, 51);
	post_recv_at(&p, 1, 52);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct waiter){.p = &p, .timeout_ms = LONG_WAIT_MS};
		assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
	}
	settle();
	send_from_a(&p, 61, 1);
	pair_send_completion(&p, 61);
	send_from_a(&p, 62, 2);
	pair_send_completion(&p, 62);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(w[0].n, 1);
	assert_int_equal(w[1].n, 1);
	assert_int_equal(w[0].wc.status, RV_WC_SUCCESS);
	assert_int_equal(w[1].wc.status, RV_WC_SUCCESS);
	assert_int_equal(w[0].wc.wr_id + w[1].wc.wr_id, 51 + 52);
	assert_true(w[0].took_ms < WAKE_LIMIT_MS + 100 && w[1].took_ms < WAKE_LIMIT_MS + 100);
	pair_close(&p);
}

/* A second waiter that found the stream in the first one's recv does not
 * watch it; when the first leaves at its deadline without a message, the
 * second looks again within the recv's bound (1 s here) and takes the
 * message that came meanwhile, not at its own 30 s deadline. */
static void second_waiter_takes_over(void **state)
{
	struct pair p;
	struct waiter first = {.timeout_ms = 300}, second = {.timeout_ms = LONG_WAIT_MS};
	pthread_t t1, t2;

	(void)state;
	setenv("RVERBS_SOFT_WAIT_RECV_MS", "1000", 1);
	open_waiting_pair(&p);
	setenv("RVERBS_SOFT_WAIT_RECV_MS", "60000", 1);
	first.p = second.p = &p;
	post_recv_at(&p, 2, 80); /* the stream up and read once */
	send_from_a(&p, 90, 0);
	{
		rv_wc wc;

		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, LONG_WAIT_MS), 1);
		assert_int_equal(wc.wr_id, 80);
	}
	pair_send_completion(&p, 90);
	post_recv_at(&p, 0, 81);
	assert_int_equal(pthread_create(&t1, NULL, wait_thread, &first), 0);
	settle(); /* the first sleeps in the recv */
	assert_int_equal(pthread_create(&t2, NULL, wait_thread, &second), 0);
	pthread_join(t1, NULL);
	assert_int_equal(first.n, -ETIMEDOUT);
	settle();
	send_from_a(&p, 91, 5);
	pthread_join(t2, NULL);
	assert_int_equal(second.n, 1);
	assert_int_equal(second.wc.wr_id, 81);
	assert_int_equal(second.wc.status, RV_WC_SUCCESS);
	assert_true(second.took_ms < 3000);
	pair_send_completion(&p, 91);
	pair_close(&p);
}

/* The wait's own deadline bounds the recv (not the 60 s bound), and a
 * stream read again afterwards still delivers. */
static void deadline_bounds_the_recv(void **state)
{
	struct pair p;
	rv_wc wc;
	int64_t t0;

	(void)state;
	open_waiting_pair(&p);
	post_recv_at(&p, 0, 71);
	for (int i = 0; i < 3; i++) {
		t0 = now_ms();
		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 50 + 30 * i), -ETIMEDOUT);
		assert_true(now_ms() - t0 >= 45 + 30 * i);
		assert_true(now_ms() - t0 < 50 + 30 * i + 500);
	}
	send_from_a(&p, 72, 3);
	assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, LONG_WAIT_MS), 1);
	assert_int_equal(wc.wr_id, 71);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	pair_send_completion(&p, 72);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(messages_in_order_from_the_recv),
		cmocka_unit_test(woken_by_own_qp_error),
		cmocka_unit_test(woken_by_peer_qp_error),
		cmocka_unit_test(woken_by_another_threads_send),
		cmocka_unit_test(two_waiters_one_stream),
		cmocka_unit_test(second_waiter_takes_over),
		cmocka_unit_test(deadline_bounds_the_recv),
	};

	setup_env();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
