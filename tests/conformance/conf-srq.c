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

/* IBV_DEVICE_SRQ_RESIZE of libibverbs' device_cap_flags. */
#define DEVICE_SRQ_RESIZE (1u << 13)

/* An SRQ of 8 receives feeding one RC QP (so receives complete in posting order). */
struct srq_one {
	struct conf_pair *p;
	rv_srq *srq;
	rv_device_attr da;
};

static void srq_one_open(struct srq_one *t, uint32_t max_wr)
{
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_MAX_WR, .max_wr = max_wr};
	rv_qp_init_attr ib;
	rv_endpoint ea, eb;
	rv_qp *qb;
	int rc;

	t->p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	t->da = (rv_device_attr){.mask = RV_DEVICE_ATTR_ALL};
	assert_int_equal(rv_context_query_device(t->p->b.ctx, &t->da), 0);
	rc = rv_srq_new(t->p->b.pd, &sa, &t->srq);
	if (rc == -EOPNOTSUPP)
		conf_skip("shared receive queues: %s", rv_error_last());
	assert_int_equal(rc, 0);
	ib = (rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ, .send_cq = t->p->b.cq,
			       .srq = t->srq};
	rc = rv_qp_new(t->p->b.pd, &ib, &qb);
	if (rc == -EOPNOTSUPP || rc == -EINVAL) {
		rv_srq_unref(t->srq);
		conf_skip("a QP on an SRQ: %s", rv_error_last());
	}
	assert_int_equal(rc, 0);
	conf_adopt_qp(qb);
	rv_srq_unref(t->srq); /* the QP holds it */
	assert_int_equal(rv_qp_endpoint(t->p->a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(qb, &eb), 0);
	assert_int_equal(rv_qp_connect(t->p->a.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(qb, &ea), 0);
}

enum { RSZ_SLOT = 512, RSZ_LEN = 64 };

static void srq_post(struct srq_one *t, uint64_t from, uint64_t n)
{
	for (uint64_t k = from; k < from + n; k++) {
		rv_sge g = conf_sge(&t->p->b.buf, k * RSZ_SLOT, RSZ_SLOT);
		rv_recv_wr w = {.wr_id = k, .sg_list = &g, .num_sge = 1};
		assert_int_equal(rv_srq_post_recv(t->srq, &w, 1, NULL), 0);
	}
}

static uint32_t srq_max_wr(rv_srq *srq)
{
	rv_srq_attr q;

	assert_int_equal(rv_srq_query(srq, &q), 0);
	return q.max_wr;
}

static void srq_resize_or_skip(struct srq_one *t, uint32_t max_wr)
{
	rv_srq_attr m = {.mask = RV_SRQ_MAX_WR, .max_wr = max_wr};
	int rc = rv_srq_modify(t->srq, &m);

	if (rc == -EOPNOTSUPP || (rc == -EINVAL && !(t->da.device_cap_flags & DEVICE_SRQ_RESIZE)))
		conf_skip("resizing an SRQ: %s", rv_error_last());
	if (rc < 0)
		fail_msg("rv_srq_modify(max_wr %u): %d %s", max_wr, rc, rv_error_last());
	assert_true(srq_max_wr(t->srq) >= max_wr);
}

/* n SENDs from A, each of its own bytes; B's receives complete in posting
 * order, from..from+n-1, each holding its SEND's bytes. */
static void srq_sends_land_in_order(struct srq_one *t, uint64_t from, uint64_t n)
{
	struct conf_pair *p = t->p;

	for (uint64_t k = from; k < from + n; k++) {
		rv_sge g = conf_sge(&p->a.buf, k * RSZ_SLOT, RSZ_LEN);
		assert_int_equal(rv_qp_send(p->a.qp, &g, 1000 + k), 0);
	}
	for (uint64_t k = from; k < from + n; k++) {
		rv_wc wc = conf_poll(p->b.cq);

		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, k);
		assert_int_equal(wc.byte_len, RSZ_LEN);
		assert_memory_equal(p->b.buf.p + k * RSZ_SLOT, p->a.buf.p + k * RSZ_SLOT, RSZ_LEN);
		conf_expect(p->a.cq, 1000 + k, RV_WC_SUCCESS);
	}
}

static void srq_check_b(struct srq_one *t, uint32_t n)
{
	struct conf_range r[32];

	for (uint32_t k = 0; k < n; k++)
		r[k] = (struct conf_range){(size_t)k * RSZ_SLOT, (size_t)k * RSZ_SLOT + RSZ_LEN};
	conf_buf_check_except(&t->p->b.buf, r, (int)n);
}

/* Six receives posted in an SRQ of 8: grown to 32, 20 more posted (more than
 * the old size), shrunk to exactly the 26 it holds; every receive is then
 * used once, in posting order. Shrunk while empty to 4, it still works. */
static void srq_resize_keeps_receives_in_order(void)
{
	struct srq_one t;

	srq_one_open(&t, 8);
	srq_post(&t, 0, 6);
	srq_resize_or_skip(&t, 32);
	srq_post(&t, 6, 20);
	srq_resize_or_skip(&t, 26);
	srq_sends_land_in_order(&t, 0, 26);
	srq_resize_or_skip(&t, 4);
	srq_post(&t, 26, 4);
	srq_sends_land_in_order(&t, 26, 4);
	srq_check_b(&t, 30);
	conf_expect_none(t.p->b.cq, 10);
}

/* Five receives held in an SRQ of 8 (resizable: a resize to 8 while empty
 * succeeds): a resize to 4, to 0, or above the device's max_srq_wr is refused
 * (-EINVAL), so is one whose limit is not below the new size; the size
 * stays, the five are still there, in order. */
static void srq_resize_below_what_it_holds_is_refused(void)
{
	struct srq_one t;
	rv_srq_attr m = {.mask = RV_SRQ_MAX_WR, .max_wr = 4};
	uint32_t size;

	srq_one_open(&t, 8);
	srq_resize_or_skip(&t, 8);
	size = srq_max_wr(t.srq);
	srq_post(&t, 0, 5);
	if (conf_quirk("srq-resize-rounds-up")) {
		/* The device's difference: the resize is taken, to room for at
		 * least the five it holds. */
		assert_int_equal(rv_srq_modify(t.srq, &m), 0);
		size = srq_max_wr(t.srq);
		assert_true(size >= 5);
	} else {
		assert_int_equal(rv_srq_modify(t.srq, &m), -EINVAL);
	}
	m.max_wr = 0;
	assert_int_equal(rv_srq_modify(t.srq, &m), -EINVAL);
	if (t.da.max_srq_wr < UINT32_MAX) {
		m.max_wr = t.da.max_srq_wr + 1;
		assert_int_equal(rv_srq_modify(t.srq, &m), -EINVAL);
	}
	m = (rv_srq_attr){.mask = RV_SRQ_MAX_WR | RV_SRQ_LIMIT, .max_wr = 6, .srq_limit = 6};
	assert_int_equal(rv_srq_modify(t.srq, &m), -EINVAL);
	assert_int_equal(srq_max_wr(t.srq), size);
	srq_sends_land_in_order(&t, 0, 5);
	/* Nothing was lost or left behind: the next receive is the sixth. */
	srq_post(&t, 5, 1);
	srq_sends_land_in_order(&t, 5, 1);
	srq_check_b(&t, 6);
}

const struct conf_case conf_srq_cases[] = {
	{"SRQ shared by two RC QPs", srq_shared_by_two_qps},
	{"SRQ resize keeps the receives it holds, in order (grow, shrink to what it holds)",
	 srq_resize_keeps_receives_in_order},
	{"SRQ resize below what it holds, to 0 or above max_srq_wr is refused, nothing lost",
	 srq_resize_below_what_it_holds_is_refused},
	CONF_END,
};
