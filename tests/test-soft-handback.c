/*
 * One thread busy-polls two CQs in turn (pyverbs' traffic helpers do: the
 * client's CQ, then the server's, then the client's), over TCP
 * (RVERBS_SOFT_SHM=0): a poller takes its QPs' streams out of the progress
 * thread's epoll interest (iwarp/conn.c soft_conn_poll), so bytes that reach
 * such a stream after its poller went to the other CQ (a confirmation READ
 * behind a SEND, the peer's reply) wait until someone serves it. Before, that
 * was the progress thread's handback after SOFT_POLL_HANDBACK_US (1 ms) per
 * turn (pyverbs' test_qp_ex_rc_send: 10.7 s against 1.0 s on the rings).
 * Now a poller that turns to another CQ gives the streams it took back at
 * once (verbs/cq.c, poll_switch).
 *
 * Two RC QP pairs between two contexts of one process, each QP with a CQ
 * of its own, every SEND signalled; one thread ping-pongs on pair 1, then
 * pair 2, and so on. The check counts, it does not time: every SEND and
 * receive completes once, in order, with its bytes; and no stream went back
 * to epoll by the 1 ms timeout while the exchange ran
 * (soft_ctx_handback_timeouts; a few are allowed for a thread the machine
 * descheduled for a millisecond). Before the change about one per turn.
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

#include "drivers/soft/soft.h"
#include "soft-pair.h"

#define ROUNDS 200
#define GUARD_MS 20000 /* a hang guard only */

struct qpx {
	rv_cq *cq;
	rv_qp *qp;
};



/* Busy-polls (no sleep: a sleeping poller is no busy poller). */
static rv_wc poll_busy(rv_cq *cq)
{
	int64_t end = now_ms() + GUARD_MS;
	rv_wc wc;
	int n;

	memset(&wc, 0, sizeof(wc));
	for (uint32_t i = 0; (n = rv_cq_poll(cq, &wc, 1)) == 0; i++)
		if ((i & 1023) == 0 && now_ms() > end)
			break;
	if (n != 1)
		fail_msg("no completion within %d ms (rv_cq_poll returned %d: %s)", GUARD_MS, n, rv_error_last());
	return wc;
}

static void check_send(rv_wc wc, uint64_t id)
{
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_SEND);
	assert_int_equal(wc.wr_id, id);
}


/* A second QP on s's context with a CQ of its own. */
static struct qpx extra_qp(struct side *s)
{
	struct qpx x;
	rv_cq_attr ca = {.cqe = 256};

	assert_int_equal(rv_cq_new(s->ctx, &ca, &x.cq), 0);
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .send_cq = x.cq,
			      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4}};
	assert_int_equal(rv_qp_new(s->pd, &qa, &x.qp), 0);
	return x;
}

/* One message from (sa, a) to (sb, b), then its answer, in pyverbs' order
 * (tests/utils.py traffic): post, poll the sender's CQ for the SEND's
 * completion (which needs the receiver's side to read its stream), then the
 * receiver's CQ. */
static void exchange(struct side *sa, struct qpx a, struct side *sb, struct qpx b, uint64_t id)
{
	post_recv_small(sb, b.qp, id);
	post_send_small(sa, a.qp, id);
	check_send(poll_busy(a.cq), id);
	check_recv_small(sb, poll_busy(b.cq), id);
	post_recv_small(sa, a.qp, id + 1);
	post_send_small(sb, b.qp, id + 1);
	check_send(poll_busy(b.cq), id + 1);
	check_recv_small(sa, poll_busy(a.cq), id + 1);
}

static void test_handback__two_cqs_polled_in_turn_over_tcp(void **state)
{
	struct side a, b;
	struct qpx a1, b1, a2, b2;
	uint64_t before, after;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	a1 = (struct qpx){a.cq, a.qp};
	b1 = (struct qpx){b.cq, b.qp};
	/* Pair 2: QPs of their own on the same contexts, connected by hand as
	 * connect_pair does, through temporary sides. */
	a2 = extra_qp(&a);
	b2 = extra_qp(&b);
	{
		struct side ta = a, tb = b;
		rv_endpoint ea, eb;

		ta.cq = a2.cq;
		ta.qp = a2.qp;
		tb.cq = b2.cq;
		tb.qp = b2.qp;
		assert_int_equal(rv_qp_endpoint(a2.qp, &ea), 0);
		assert_int_equal(rv_qp_endpoint(b2.qp, &eb), 0);
		connect_one(&ta, &eb, &DEFAULTS);
		connect_one(&tb, &ea, &DEFAULTS);
	}
	/* Warm up: connections up, before the count starts. */
	exchange(&a, a1, &b, b1, 0);
	exchange(&a, a2, &b, b2, 2);
	before = soft_ctx_handback_timeouts(a.ctx) + soft_ctx_handback_timeouts(b.ctx);
	for (uint64_t r = 0; r < ROUNDS; r++) {
		uint64_t id = 4 + r * 4;

		exchange(&a, a1, &b, b1, id);
		exchange(&b, b2, &a, a2, id + 2);
	}
	after = soft_ctx_handback_timeouts(a.ctx) + soft_ctx_handback_timeouts(b.ctx);
	print_message("streams handed back by the 1 ms timeout with bytes waiting, %d rounds: %llu\n", ROUNDS,
		      (unsigned long long)(after - before));
	assert_true(after - before <= ROUNDS / 20);
	rv_qp_unref(a2.qp);
	rv_qp_unref(b2.qp);
	rv_cq_unref(a2.cq);
	rv_cq_unref(b2.cq);
	side_close(&a);
	side_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handback__two_cqs_polled_in_turn_over_tcp),
	};

	setenv("RVERBS_SOFT_SHM", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
