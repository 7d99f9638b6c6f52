/*
 * An SRQ's free-running counters across their 2^32 wrap (verbs/srq.c,
 * soft_srq's mask). With an SRQ of 3 WRs (not a power of two) and the
 * counters set just below the wrap, receive WRs posted at 0xfffffffe,
 * 0xffffffff and 0 each keep their own slot: with counter % 3 the last two
 * shared slot 0 and the third overwrote the second, so a SEND landed in the
 * wrong buffer under the wrong wr_id. Four rounds of three SENDs, each
 * checked for wr_id, length and bytes, the last after an rv_srq_modify that
 * resizes it (its copy of the held WRs follows the mask too). RC over TCP
 * (RVERBS_SOFT_SHM=0), so that only the SRQ's counters follow the test's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/soft/soft.h"
#include "soft-pair.h"

static void srq_counters_wrap(void **state)
{
	const uint32_t acc = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE;
	struct side a, b;
	rv_srq *srq;
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE, .max_wr = 3, .max_sge = 1};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ};
	struct soft_srq *s;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	side_open(&a, 0, acc);
	side_open(&b, 0, acc);
	unsetenv("RVERBS_SOFT_SHM");
	assert_int_equal(rv_srq_new(b.pd, &sa, &srq), 0);
	rv_qp_unref(b.qp);
	qa.send_cq = b.cq;
	qa.srq = srq;
	assert_int_equal(rv_qp_new(b.pd, &qa, &b.qp), 0);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	s = srq->drv_srq;
	pthread_mutex_lock(&s->lock);
	s->head = s->tail = 0xfffffffeu;
	pthread_mutex_unlock(&s->lock);
	for (unsigned round = 0; round < 4; round++) {
		rv_recv_wr rw[3];
		rv_send_wr sw[3];
		rv_sge rg[3], sg[3];
		size_t n = 0;

		if (round == 3) {
			/* Resize with nothing held: the counters restart at 0 under the new mask. */
			rv_srq_attr m = {.mask = RV_SRQ_MAX_WR, .max_wr = 5};

			assert_int_equal(rv_srq_modify(srq, &m), 0);
		}
		memset(rw, 0, sizeof(rw));
		memset(sw, 0, sizeof(sw));
		memset(b.buf, 0, 3 * 1024);
		for (unsigned i = 0; i < 3; i++) {
			fill(a.buf + i * 1024, 700 + i, round * 3 + i + 1);
			rg[i] = sge(&b, i * 1024, 1024);
			rw[i].wr_id = 100 + round * 3 + i;
			rw[i].sg_list = &rg[i];
			rw[i].num_sge = 1;
			sg[i] = sge(&a, i * 1024, 700 + i);
			sw[i].wr_id = 10 + round * 3 + i;
			sw[i].sg_list = &sg[i];
			sw[i].num_sge = 1;
			sw[i].opcode = RV_WR_SEND;
			sw[i].send_flags = RV_SEND_SIGNALED;
		}
		assert_int_equal(rv_srq_post_recv(srq, rw, 3, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(rv_qp_post_send(a.qp, sw, 3, &n), 0);
		assert_int_equal(n, 3);
		for (unsigned i = 0; i < 3; i++) {
			rv_wc wc = poll_one(b.cq);

			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 100 + round * 3 + i);
			assert_int_equal(wc.byte_len, 700 + i);
			wc = poll_one(a.cq);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 10 + round * 3 + i);
			assert_memory_equal(b.buf + i * 1024, a.buf + i * 1024, 700 + i);
		}
	}
	rv_qp_unref(b.qp);
	b.qp = NULL;
	rv_srq_unref(srq);
	side_close(&a);
	side_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(srq_counters_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
