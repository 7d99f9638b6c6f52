/*
 * Two threads block in rv_cq_wait on one CQ from before its QP's stream
 * carries anything, so that both first sleep on the completion channel
 * alone; then two messages come, one at a time, each of which must wake one
 * of them (lib/drivers/soft/README.md, "Two waiters on one CQ"). Each round
 * is a fresh pair; the rounds vary how long the waiters sleep first and
 * whether the messages come back to back. A waiter that misses its wake-up
 * sleeps to its deadline with its completion in the CQ (rv_cq_wait then
 * returns it, late): the deadline is far beyond any wake-up, so only a lost
 * one reaches it. On the code before the fix every run of 12 failed, at round
 * 0 to 45 (median 3.5) of the 200. Run with RVERBS_SOFT_POLL_PROGRESS=0
 * (soft-twowait-channel), it tests the facade's channel wait instead
 * (lib/cq.c, "Several threads in rv_cq_wait"): before that fix, 2 of 2 runs
 * failed at round 0.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "channel-pair.h"

#define ROUNDS 200
#define LOST_MS 20000 /* the waiters' deadline: only a lost wake-up comes near it */

struct waiter {
	struct pair *p;
	int n;
	rv_wc wc;
	int64_t took_ms;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	int64_t t0 = now_ms();

	w->n = rv_cq_wait(w->p->cq_b, &w->wc, 1, LOST_MS);
	w->took_ms = now_ms() - t0;
	return NULL;
}

static void post_recv_at(struct pair *p, uint32_t slot, uint64_t wr_id)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)rv_mr_addr(p->mr_b) + slot * 64u, .length = 64,
		    .lkey = rv_mr_lkey(p->mr_b)};

	assert_int_equal(rv_qp_recv(p->qp_b, &g, wr_id), 0);
}

static void round_of_two(int round)
{
	struct pair p;
	struct waiter w[2];
	pthread_t t[2];

	pair_open(&p);
	assert_int_equal(rv_cq_set_wait_mode(p.cq_b, RV_CQ_WAIT_EVENT, 0), 0);
	post_recv_at(&p, 0, 51);
	post_recv_at(&p, 1, 52);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct waiter){.p = &p};
		assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
	}
	usleep(2000 + 1000 * (uint32_t)(round % 4)); /* both asleep, as a rule */
	for (uint64_t i = 0; i < 2; i++) {
		if (round & 1)
			usleep(1000);
		pair_post_send(&p, 61 + i, 0);
		pair_send_completion(&p, 61 + i);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++) {
		if (w[i].n != 1 || w[i].took_ms >= LOST_MS - 1000)
			fail_msg("round %d: waiter %d returned %d after %lld ms, both messages received "
				 "(a lost wake-up)", round, i, w[i].n, (long long)w[i].took_ms);
		assert_int_equal(w[i].wc.status, RV_WC_SUCCESS);
	}
	assert_int_equal(w[0].wc.wr_id + w[1].wc.wr_id, 51 + 52);
	pair_close(&p);
}

static void two_waiters_before_the_stream(void **state)
{
	(void)state;
	for (int r = 0; r < ROUNDS; r++)
		round_of_two(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_waiters_before_the_stream),
	};

	setenv("RVERBS_SOFT_SHM", "0", 1); /* TCP: the stream of the README's case */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
