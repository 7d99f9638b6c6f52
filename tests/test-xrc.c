/*
 * XRC domains, XRC SRQs and XRC QPs in the facade, against the mock driver:
 * ownership (what closes what, in which order), the argument checks, and
 * what reaches the driver (remote_srqn). soft0 end to end: test-soft-xrc.c.
 */
#include "handles-fixture.h"

/* An XRC domain, an XRC SRQ on it completing to t->cq, and a target QP. */
struct xrc {
	rv_xrcd *xrcd;
	rv_srq *srq;
	rv_qp *tgt;
};

static rv_srq *new_xrc_srq(rv_pd *pd, rv_xrcd *xrcd, rv_cq *cq)
{
	rv_srq_attr a = {.mask = RV_SRQ_INIT_ATTR_XRC, .xrcd = xrcd, .cq = cq};
	rv_srq *srq = NULL;

	assert_int_equal(rv_srq_new(pd, &a, &srq), 0);
	assert_non_null(srq);
	return srq;
}

static rv_qp *new_tgt(rv_pd *pd, rv_xrcd *xrcd)
{
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_XRCD, .qp_type = RV_QPT_XRC_RECV,
			     .xrcd = xrcd};
	rv_qp *qp = NULL;

	assert_int_equal(rv_qp_new(pd, &a, &qp), 0);
	assert_non_null(qp);
	return qp;
}

static void make_xrc(struct tree *t, struct xrc *x)
{
	make_tree(t);
	assert_int_equal(rv_xrcd_new(t->ctx, NULL, &x->xrcd), 0);
	x->srq = new_xrc_srq(t->pd, x->xrcd, t->cq);
	x->tgt = new_tgt(t->pd, x->xrcd);
}

static void unref_xrc(struct tree *t, struct xrc *x)
{
	x->tgt = rv_qp_unref(x->tgt);
	x->srq = rv_srq_unref(x->srq);
	x->xrcd = rv_xrcd_unref(x->xrcd);
	unref_tree(t);
}

static void test_xrc__close_xrcd_closes_target_qps_and_srqs_first(void **state)
{
	struct tree t;
	struct xrc x;
	uint32_t n = 0;

	(void)state;
	make_xrc(&t, &x);
	assert_int_equal(rv_xrcd_close(x.xrcd), 0);
	assert_before(x.tgt, x.xrcd);
	assert_before(x.srq, x.xrcd);
	assert_closed_rc(rv_srq_num(x.srq, &n), "XRC domain");
	assert_closed_rc(rv_qp_to_init(x.tgt, NULL), NULL);
	assert_null(rv_xrcd_context(x.xrcd));
	/* The rest of the tree lives on. */
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0);
	assert_int_equal(rv_xrcd_close(x.xrcd), 0); /* again: already closed */
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__close_context_closes_xrcd(void **state)
{
	struct tree t;
	struct xrc x;

	(void)state;
	make_xrc(&t, &x);
	assert_ptr_equal(rv_xrcd_context(x.xrcd), t.ctx);
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_before(x.tgt, x.xrcd);
	assert_before(x.srq, x.xrcd);
	assert_before(x.srq, t.cq);
	assert_before(x.xrcd, t.ctx);
	assert_null(rv_xrcd_context(x.xrcd));
	assert_int_equal(rv_xrcd_close(x.xrcd), 0); /* already closed */
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__closing_the_srq_cq_closes_the_srq_not_the_domain(void **state)
{
	struct tree t;
	struct xrc x;
	uint32_t n = 0;

	(void)state;
	make_xrc(&t, &x);
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_before(x.srq, t.cq);
	assert_closed_rc(rv_srq_num(x.srq, &n), NULL);
	assert_int_equal(mock_destroy_index(x.xrcd), -1);
	assert_int_equal(mock_destroy_index(x.tgt), -1);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__unref_only_frees_everything(void **state)
{
	struct tree t;
	struct xrc x;

	(void)state;
	make_xrc(&t, &x);
	/* The domain's last reference goes first: its SRQ and QP keep it. */
	x.xrcd = rv_xrcd_unref(x.xrcd);
	assert_int_equal(mock_live(RV_OBJ_XRCD), 1);
	x.srq = rv_srq_unref(x.srq);
	assert_int_equal(mock_live(RV_OBJ_XRCD), 1);
	x.tgt = rv_qp_unref(x.tgt);
	assert_int_equal(mock_live(RV_OBJ_XRCD), 0);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__srq_numbers_are_distinct_and_only_for_xrc_srqs(void **state)
{
	struct tree t;
	struct xrc x;
	rv_srq *srq2, *plain = NULL;
	uint32_t a = 0, b = 0, out = 0x5e5e;

	(void)state;
	make_xrc(&t, &x);
	srq2 = new_xrc_srq(t.pd, x.xrcd, t.cq2);
	assert_int_equal(rv_srq_num(x.srq, &a), 0);
	assert_int_equal(rv_srq_num(srq2, &b), 0);
	assert_int_not_equal(a, b);
	assert_int_equal(rv_srq_new(t.pd, NULL, &plain), 0);
	assert_int_equal(rv_srq_num(plain, &out), -EINVAL);
	assert_msg_contains("not an XRC SRQ");
	assert_int_equal(out, 0x5e5e);
	assert_int_equal(rv_srq_num(x.srq, NULL), -EINVAL);
	assert_int_equal(rv_srq_num(NULL, &out), -EINVAL);
	plain = rv_srq_unref(plain);
	srq2 = rv_srq_unref(srq2);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__bad_arguments_are_refused_and_outputs_untouched(void **state)
{
	struct tree t;
	struct xrc x;
	rv_context *ctx2;
	rv_xrcd *other;
	rv_xrcd *xout = SENTINEL;
	rv_srq *sout = SENTINEL;
	rv_qp *qout = SENTINEL;
	rv_xrcd_attr xa = {.mask = 1};
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_XRC_RECV};

	(void)state;
	make_xrc(&t, &x);
	assert_int_equal(rv_xrcd_new(t.ctx, &xa, &xout), -EINVAL);
	assert_int_equal(rv_xrcd_new(NULL, NULL, &xout), -EINVAL);
	assert_int_equal(rv_xrcd_new(t.ctx, NULL, NULL), -EINVAL);
	assert_ptr_equal(xout, SENTINEL);

	/* XRC SRQ: both the domain and the CQ, live, of the PD's context. */
	assert_int_equal(rv_srq_new(t.pd, &sa, &sout), -EINVAL);
	assert_msg_contains("needs both xrcd and cq");
	sa.xrcd = x.xrcd;
	assert_int_equal(rv_srq_new(t.pd, &sa, &sout), -EINVAL);
	sa.cq = t.cq;
	sa.xrcd = (rv_xrcd *)t.pd;
	assert_int_equal(rv_srq_new(t.pd, &sa, &sout), -EINVAL);
	assert_int_equal(rv_context_new(dev, NULL, &ctx2), 0);
	assert_int_equal(rv_xrcd_new(ctx2, NULL, &other), 0);
	sa.xrcd = other;
	assert_int_equal(rv_srq_new(t.pd, &sa, &sout), -EINVAL);
	assert_msg_contains("one context");
	assert_ptr_equal(sout, SENTINEL);

	/* Target QP: its domain is required, of the same context; no SRQ. */
	assert_int_equal(rv_qp_new(t.pd, &qa, &qout), -EINVAL);
	assert_msg_contains("RV_QP_INIT_ATTR_XRCD");
	qa.mask |= RV_QP_INIT_ATTR_XRCD;
	qa.xrcd = other;
	assert_int_equal(rv_qp_new(t.pd, &qa, &qout), -EINVAL);
	qa.xrcd = x.xrcd;
	qa.mask |= RV_QP_INIT_ATTR_SRQ;
	qa.srq = x.srq;
	assert_int_equal(rv_qp_new(t.pd, &qa, &qout), -EINVAL);
	assert_msg_contains("takes no SRQ");
	/* A domain on another type. */
	qa = (rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_XRCD,
			       .qp_type = RV_QPT_RC, .send_cq = t.cq, .xrcd = x.xrcd};
	assert_int_equal(rv_qp_new(t.pd, &qa, &qout), -EINVAL);
	qa.qp_type = RV_QPT_XRC_SEND;
	assert_int_equal(rv_qp_new(t.pd, &qa, &qout), -EINVAL);
	assert_ptr_equal(qout, SENTINEL);

	/* A closed domain. */
	assert_int_equal(rv_xrcd_close(other), 0);
	sa.xrcd = other;
	sa.cq = t.cq;
	assert_int_equal(rv_srq_new(t.pd, &sa, &sout), -RV_ECLOSED);
	other = rv_xrcd_unref(other);
	ctx2 = rv_context_unref(ctx2);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__queues_an_xrc_qp_lacks_are_refused(void **state)
{
	struct tree t;
	struct xrc x;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ, .qp_type = RV_QPT_XRC_SEND};
	rv_qp *ini = NULL;
	rv_sge sge = {.addr = 0, .length = 0, .lkey = 0};
	rv_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
	rv_send_wr swr = {.wr_id = 2, .opcode = RV_WR_SEND, .send_flags = RV_SEND_SIGNALED};
	size_t n = 9;

	(void)state;
	make_xrc(&t, &x);
	qa.send_cq = t.cq;
	assert_int_equal(rv_qp_new(t.pd, &qa, &ini), 0);
	assert_int_equal(rv_qp_post_recv(ini, &rwr, 1, &n), -EINVAL);
	assert_msg_contains("no receive queue");
	assert_int_equal(n, 0);
	n = 9;
	assert_int_equal(rv_qp_post_recv(x.tgt, &rwr, 1, &n), -EINVAL);
	assert_int_equal(n, 0);
	n = 9;
	assert_int_equal(rv_qp_post_send(x.tgt, &swr, 1, &n), -EINVAL);
	assert_msg_contains("no send queue");
	assert_int_equal(n, 0);
	/* A signalling policy needs a send CQ: a target has none. */
	assert_int_equal(rv_qp_set_signal_every(x.tgt, 1), -EINVAL);
	ini = rv_qp_unref(ini);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__remote_srqn_reaches_the_driver(void **state)
{
	struct tree t;
	struct xrc x;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ, .qp_type = RV_QPT_XRC_SEND};
	rv_qp *ini = NULL;
	rv_send_wr swr = {.wr_id = 3, .opcode = RV_WR_SEND, .send_flags = RV_SEND_SIGNALED, .remote_srqn = 0x1234};
	size_t n = 0;

	(void)state;
	make_xrc(&t, &x);
	qa.send_cq = t.cq;
	assert_int_equal(rv_qp_new(t.pd, &qa, &ini), 0);
	assert_int_equal(rv_qp_post_send(ini, &swr, 1, &n), 0);
	assert_int_equal(mock.last_send.remote_srqn, 0x1234);

	/* The builder: only an initiator's WRs take one, once a WR is there. */
	assert_int_equal(rv_qp_wr_start(ini), 0);
	assert_int_equal(rv_qp_wr_set_xrc_srqn(ini, 7), -EINVAL);
	assert_msg_contains("no work request yet");
	assert_int_equal(rv_qp_wr_send(ini, 4, RV_SEND_SIGNALED), 0);
	assert_int_equal(rv_qp_wr_set_xrc_srqn(ini, 0x77), 0);
	assert_int_equal(rv_qp_wr_complete(ini, &n), 0);
	assert_int_equal(mock.last_send.remote_srqn, 0x77);
	assert_int_equal(mock.last_send.wr_id, 4);
	assert_int_equal(rv_qp_wr_start(t.qp), 0);
	assert_int_equal(rv_qp_wr_send(t.qp, 5, 0), 0);
	assert_int_equal(rv_qp_wr_set_xrc_srqn(t.qp, 1), -EINVAL);
	assert_msg_contains("not an XRC initiator");
	assert_int_equal(rv_qp_wr_abort(t.qp), 0);
	ini = rv_qp_unref(ini);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__state_table_follows_the_xrc_rows(void **state)
{
	struct tree t;
	struct xrc x;
	rv_qp_attr a = {.mask = RV_QP_STATE | RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_ACCESS_FLAGS,
			.qp_state = RV_QPS_INIT, .port_num = 1};

	(void)state;
	make_xrc(&t, &x);
	assert_int_equal(rv_qp_modify(x.tgt, &a), 0);
	/* A target at RTR needs the responder's attributes, as RC. */
	a = (rv_qp_attr){.mask = RV_QP_STATE | RV_QP_AV | RV_QP_PATH_MTU | RV_QP_DEST_QPN | RV_QP_RQ_PSN,
			 .qp_state = RV_QPS_RTR, .path_mtu = RV_MTU_1024, .dest_qp_num = 5};
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	assert_int_equal(rv_qp_modify(x.tgt, &a), -EINVAL);
	assert_msg_contains("RV_QP_MIN_RNR_TIMER");
	a.mask |= RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_MIN_RNR_TIMER;
	a.max_dest_rd_atomic = 1;
	assert_int_equal(rv_qp_modify(x.tgt, &a), 0);
	/* and at RTS its timeout, but no retry counts (Linux's qp_state_table). */
	a = (rv_qp_attr){.mask = RV_QP_STATE | RV_QP_SQ_PSN | RV_QP_TIMEOUT | RV_QP_RETRY_CNT,
			 .qp_state = RV_QPS_RTS, .timeout = 14, .retry_cnt = 7};
	assert_int_equal(rv_qp_modify(x.tgt, &a), -EINVAL);
	assert_msg_contains("RV_QP_RETRY_CNT is not allowed");
	a.mask &= ~(uint64_t)RV_QP_RETRY_CNT;
	assert_int_equal(rv_qp_modify(x.tgt, &a), 0);
	unref_xrc(&t, &x);
	end_test();
}

static void test_xrc__a_failed_domain_close_is_retried(void **state)
{
	struct tree t;
	struct xrc x;

	(void)state;
	make_xrc(&t, &x);
	mock_fail_destroy(RV_OBJ_XRCD, EBUSY, 1);
	assert_int_equal(rv_xrcd_close(x.xrcd), -EBUSY);
	/* Its dependents were closed on the way; the domain stays. */
	assert_int_equal(mock_live(RV_OBJ_XRCD), 1);
	assert_int_equal(rv_xrcd_close(x.xrcd), 0);
	assert_int_equal(mock_live(RV_OBJ_XRCD), 0);
	unref_xrc(&t, &x);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HANDLES_TEST(test_xrc__close_xrcd_closes_target_qps_and_srqs_first),
		HANDLES_TEST(test_xrc__close_context_closes_xrcd),
		HANDLES_TEST(test_xrc__closing_the_srq_cq_closes_the_srq_not_the_domain),
		HANDLES_TEST(test_xrc__unref_only_frees_everything),
		HANDLES_TEST(test_xrc__srq_numbers_are_distinct_and_only_for_xrc_srqs),
		HANDLES_TEST(test_xrc__bad_arguments_are_refused_and_outputs_untouched),
		HANDLES_TEST(test_xrc__queues_an_xrc_qp_lacks_are_refused),
		HANDLES_TEST(test_xrc__remote_srqn_reaches_the_driver),
		HANDLES_TEST(test_xrc__state_table_follows_the_xrc_rows),
		HANDLES_TEST(test_xrc__a_failed_domain_close_is_retried),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
