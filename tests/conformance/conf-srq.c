/*
 * Conformance: a shared receive queue feeding two RC QPs. Every SEND lands
 * in one receive of the SRQ, each receive is used once, the completion names
 * the QP that received, and nothing outside the receive buffers changes.
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

static void srq_shared_by_two_qps(void)
{
	enum { QPS = 2, PER_QP = 2, N = QPS * PER_QP, SLOT = 1024, LEN = 100 };
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_srq_attr sa = {.mask = 0};
	rv_srq *srq = NULL;
	rv_qp *qa[QPS], *qb[QPS];
	bool used[N] = {false};
	struct conf_range ranges[N];
	int rc;

	rc = rv_srq_new(p->b.pd, &sa, &srq);
	if (rc == -EOPNOTSUPP)
		conf_skip("shared receive queues: %s", rv_error_last());
	assert_int_equal(rc, 0);
	for (int q = 0; q < QPS; q++) {
		rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_SEND_CQ}, ib;
		rv_endpoint ea, eb;

		ia.send_cq = p->a.cq;
		assert_int_equal(rv_qp_new(p->a.pd, &ia, &qa[q]), 0);
		conf_adopt_qp(qa[q]);
		ib = (rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ, .send_cq = p->b.cq,
				       .srq = srq};
		rc = rv_qp_new(p->b.pd, &ib, &qb[q]);
		if (rc == -EOPNOTSUPP || rc == -EINVAL) {
			rv_srq_unref(srq);
			conf_skip("a QP on an SRQ: %s", rv_error_last());
		}
		assert_int_equal(rc, 0);
		conf_adopt_qp(qb[q]);
		assert_int_equal(rv_qp_endpoint(qa[q], &ea), 0);
		assert_int_equal(rv_qp_endpoint(qb[q], &eb), 0);
		assert_int_equal(rv_qp_connect(qa[q], &eb), 0);
		assert_int_equal(rv_qp_connect(qb[q], &ea), 0);
	}
	rv_srq_unref(srq); /* the QPs hold it */
	for (int k = 0; k < N; k++) {
		rv_sge g = conf_sge(&p->b.buf, (size_t)k * SLOT, SLOT);
		rv_recv_wr w = {.wr_id = (uint64_t)k, .sg_list = &g, .num_sge = 1};
		assert_int_equal(rv_srq_post_recv(srq, &w, 1, NULL), 0);
	}
	/* Each SEND carries bytes of its own: A's buffer at 4096 * (i + 1). */
	for (int q = 0; q < QPS; q++)
		for (int i = 0; i < PER_QP; i++) {
			rv_sge g = conf_sge(&p->a.buf, 4096 * (size_t)(q * PER_QP + i + 1), LEN);
			assert_int_equal(rv_qp_send(qa[q], &g, 100 + (uint64_t)(q * PER_QP + i)), 0);
		}
	for (int n = 0; n < N; n++) {
		rv_wc wc = conf_poll(p->b.cq);
		int from = -1;

		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_true(wc.wr_id < N);
		assert_false(used[wc.wr_id]);
		used[wc.wr_id] = true;
		assert_int_equal(wc.byte_len, LEN);
		for (int s = 0; s < N; s++)
			if (!memcmp(p->b.buf.p + wc.wr_id * SLOT, p->a.buf.p + 4096 * (size_t)(s + 1), LEN))
				from = s;
		assert_true(from >= 0);
		assert_int_equal(wc.qp_num, rv_qp_num(qb[from / PER_QP]));
		ranges[n] = (struct conf_range){wc.wr_id * SLOT, wc.wr_id * SLOT + LEN};
	}
	for (int n = 0; n < N; n++) {
		rv_wc wc = conf_poll(p->a.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_true(wc.wr_id >= 100 && wc.wr_id < 100 + N);
	}
	conf_buf_check_except(&p->b.buf, ranges, N);
}

const struct conf_case conf_srq_cases[] = {
	{"SRQ shared by two RC QPs", srq_shared_by_two_qps},
	CONF_END,
};
