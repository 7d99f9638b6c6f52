/*
 * Ownership, against the mock driver: reference counts, cascade close and its
 * order, closed-handle errors and getters, orders of unref and close (random
 * ones too, with and without failing destroys), and concurrent ref, unref,
 * create and close.
 *
 * The other handle cases, on the same fixture (handles-fixture.h):
 * test-destroy-retry.c (failed destroys and zombies made by close),
 * test-args.c (argument checking), test-qp.c (QP helpers, endpoint, data
 * path), test-log.c (dump, leak report, log hook, per-thread errors).
 */
#include <pthread.h>
#include <unistd.h>

#include "handles-fixture.h"

/* ---- lifecycle ---- */

static void test_handles__create_then_unref_children_first_frees_everything(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	assert_int_equal(mock_live(RV_OBJ_PD), 1);
	assert_int_equal(mock_live(RV_OBJ_CQ), 2);
	assert_int_equal(mock_live(RV_OBJ_MR), 1);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	unref_tree(&t);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	assert_int_equal(mock.destroyed[RV_OBJ_QP], 1);
	assert_int_equal(mock.destroyed[RV_OBJ_CQ], 2);
	end_test();
}

static void test_handles__unref_parents_first_keeps_children_usable(void **state)
{
	struct tree t;
	rv_wc wc[2];

	(void)state;
	make_tree(&t);
	t.ctx = rv_context_unref(t.ctx);
	t.pd = rv_pd_unref(t.pd);
	t.cq = rv_cq_unref(t.cq);
	t.cq2 = rv_cq_unref(t.cq2);
	assert_int_equal(mock_live_total(), 7); /* device, context, PD, 2 CQs, MR, QP */
	/* The children pin their parents: everything still works. */
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_INIT);
	assert_non_null(rv_qp_pd(t.qp));
	assert_int_equal(rv_cq_poll(t.qp->send_cq, wc, 2), 0);
	assert_int_not_equal(rv_mr_lkey(t.mr), 0);
	t.mr = rv_mr_unref(t.mr);
	assert_int_equal(mock_live(RV_OBJ_MR), 0);
	assert_int_equal(mock_live(RV_OBJ_PD), 1);
	t.qp = rv_qp_unref(t.qp);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	end_test();
}

static void test_handles__extra_references_are_released_by_extra_unrefs(void **state)
{
	struct tree t;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq, *cq2;
	rv_mr *mr;
	rv_qp *qp;

	(void)state;
	make_tree(&t);
	ctx = rv_context_ref(t.ctx);
	pd = rv_pd_ref(t.pd);
	cq = rv_cq_ref(t.cq);
	cq2 = rv_cq_ref(t.cq2);
	mr = rv_mr_ref(t.mr);
	qp = rv_qp_ref(t.qp);
	assert_ptr_equal(rv_device_ref(dev), dev);
	unref_tree(&t);
	assert_null(rv_device_unref(dev));
	assert_int_equal(mock_live_total(), 7);
	assert_null(rv_qp_unref(qp));
	assert_null(rv_mr_unref(mr));
	assert_null(rv_cq_unref(cq2));
	assert_null(rv_cq_unref(cq));
	assert_null(rv_pd_unref(pd));
	assert_null(rv_context_unref(ctx));
	assert_int_equal(mock_live_total(), 1);
	assert_null(rv_device_ref(NULL));
	assert_null(rv_context_ref(NULL));
	assert_null(rv_pd_ref(NULL));
	assert_null(rv_cq_ref(NULL));
	assert_null(rv_mr_ref(NULL));
	assert_null(rv_qp_ref(NULL));
	end_test();
}

/* ---- cascade order ---- */

static void test_handles__context_close_closes_qps_before_cqs_mrs_before_pds_all_before_context(void **state)
{
	struct tree t;
	rv_pd *pd2;
	rv_mr *mr2;
	rv_qp *qp2;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_pd_new(t.ctx, NULL, &pd2), 0);
	assert_int_equal(rv_mr_alloc(pd2, 100, RV_ACCESS_LOCAL_WRITE, NULL, &mr2), 0);
	qp2 = new_qp(pd2, t.cq2, t.cq2);

	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(mock.n_log, 9);
	assert_before(t.qp, t.cq);
	assert_before(t.qp, t.cq2);
	assert_before(qp2, t.cq2);
	assert_before(t.qp, t.pd);
	assert_before(qp2, pd2);
	assert_before(t.mr, t.pd);
	assert_before(mr2, pd2);
	const void *all[] = {t.pd, t.cq, t.cq2, t.mr, t.qp, pd2, mr2, qp2};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		assert_before(all[i], t.ctx);
		assert_int_equal(mock_destroy_count(all[i]), 1);
	}
	/* The context is last. */
	assert_ptr_equal(mock.log[mock.n_log - 1].handle, t.ctx);

	qp2 = rv_qp_unref(qp2);
	mr2 = rv_mr_unref(mr2);
	pd2 = rv_pd_unref(pd2);
	unref_tree(&t);
	end_test();
}

static void test_handles__pd_close_cascades_to_qp_then_mr(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock.n_log, 3);
	/* Newest dependent first: the QP (created after the MR), then the MR, then the PD. */
	assert_ptr_equal(mock.log[0].handle, t.qp);
	assert_ptr_equal(mock.log[1].handle, t.mr);
	assert_ptr_equal(mock.log[2].handle, t.pd);
	/* The CQs and the context are untouched. */
	assert_int_equal(mock_live(RV_OBJ_CQ), 2);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	assert_int_equal(rv_cq_size(t.cq), 256);
	unref_tree(&t);
	end_test();
}

/* A parent domain depends on its parent PD and its TD: closing the TD closes
 * the parent domain and what is in it (newest first), and the mock's order
 * check sees every child destroyed before what it was made on. */
static void test_handles__td_close_cascades_to_parent_domain_and_its_qp(void **state)
{
	struct tree t;
	rv_td *td;
	rv_pd *pdom;
	rv_qp *qp2;
	rv_pd_attr pa;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_td_new(t.ctx, NULL, &td), 0);
	pa = (rv_pd_attr){.mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = t.pd, .td = td};
	assert_int_equal(rv_pd_new(t.ctx, &pa, &pdom), 0);
	qp2 = new_qp(pdom, t.cq, t.cq);
	assert_int_equal(rv_td_close(td), 0);
	assert_int_equal(mock.n_log, 3);
	assert_ptr_equal(mock.log[0].handle, qp2);
	assert_ptr_equal(mock.log[1].handle, pdom);
	assert_ptr_equal(mock.log[2].handle, td);
	assert_closed_rc(rv_qp_state_of(qp2), "its PD");
	assert_int_equal(mock_live(RV_OBJ_PD), 1);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RESET);
	qp2 = rv_qp_unref(qp2);
	pdom = rv_pd_unref(pdom);
	td = rv_td_unref(td);
	unref_tree(&t);
	end_test();
}

/* The context's close reaches the parent domain through both of its
 * parents, and destroys it once, before the PD and the TD. */
static void test_handles__context_close_destroys_parent_domain_before_pd_and_td(void **state)
{
	struct tree t;
	rv_td *td;
	rv_pd *pdom;
	rv_mr *mr2;
	rv_pd_attr pa;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_td_new(t.ctx, NULL, &td), 0);
	pa = (rv_pd_attr){.mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = t.pd, .td = td};
	assert_int_equal(rv_pd_new(t.ctx, &pa, &pdom), 0);
	assert_int_equal(rv_mr_alloc(pdom, 100, RV_ACCESS_LOCAL_WRITE, NULL, &mr2), 0);
	rv_td_unref(td); /* the parent domain keeps it alive, and the mock log names it */
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_before(mr2, pdom);
	assert_before(pdom, t.pd);
	assert_before(pdom, td);
	assert_before(td, t.ctx);
	assert_int_equal(mock_destroy_count(pdom), 1);
	assert_int_equal(mock_destroy_count(td), 1);
	mr2 = rv_mr_unref(mr2);
	pdom = rv_pd_unref(pdom);
	unref_tree(&t);
	end_test();
}

static void test_handles__cq_close_cascades_to_every_qp_using_it(void **state)
{
	struct tree t;
	rv_qp *qp_send_only, *qp_other;

	(void)state;
	make_tree(&t); /* t.qp: send t.cq, recv t.cq2 */
	qp_send_only = new_qp(t.pd, t.cq2, t.cq); /* uses cq2 as send CQ */
	qp_other = new_qp(t.pd, t.cq, t.cq);      /* does not use cq2 */

	assert_int_equal(rv_cq_close(t.cq2), 0);
	assert_int_equal(mock.n_log, 3);
	assert_before(t.qp, t.cq2);
	assert_before(qp_send_only, t.cq2);
	assert_int_equal(mock_destroy_index(qp_other), -1);
	assert_int_equal(rv_qp_state_of(qp_other), RV_QPS_RESET);
	assert_closed_rc(rv_qp_state_of(t.qp), "closed because its CQ");
	assert_int_equal(rv_cq_size(t.cq), 256);

	qp_send_only = rv_qp_unref(qp_send_only);
	qp_other = rv_qp_unref(qp_other);
	unref_tree(&t);
	end_test();
}

static void test_handles__mr_close_closes_only_the_mr(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_mr_close(t.mr), 0);
	assert_int_equal(mock.n_log, 1);
	assert_ptr_equal(mock.log[0].handle, t.mr);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RESET);
	unref_tree(&t);
	end_test();
}

/* A device without memory window ops (the mock, like the ibv driver today):
 * -EOPNOTSUPP with the reason, nothing created; bad arguments first. */
static void test_handles__mw_on_a_device_without_windows(void **state)
{
	struct tree t;
	rv_mw *mw = NULL;
	rv_mw_bind_info bi = {0};

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_mw_alloc(t.pd, 7, &mw), -EINVAL);
	assert_int_equal(rv_mw_alloc(t.pd, RV_MW_TYPE_2, &mw), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "memory windows"));
	assert_null(mw);
	assert_int_equal(rv_qp_bind_mw(t.qp, NULL, &bi, 0, 0), -EINVAL);
	assert_int_equal(rv_mw_rkey(NULL), 0);
	assert_null(rv_mw_unref(NULL));
	unref_tree(&t);
	end_test();
}

static void test_handles__device_close_closes_every_context_and_its_tree(void **state)
{
	struct tree a, b;
	rv_context *c;

	(void)state;
	make_tree(&a);
	make_tree(&b);
	assert_int_equal(rv_device_close(dev), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(mock.n_log, 12);
	assert_before(a.qp, a.ctx);
	assert_before(a.pd, a.ctx);
	assert_before(b.qp, b.ctx);
	assert_before(b.mr, b.pd);
	/* The device handle is closed but its name stays readable until the last unref. */
	assert_string_equal(rv_device_name(dev), "mock0");
	assert_int_equal(rv_device_kind_of(dev), RV_DEVICE_VERBS);
	c = SENTINEL;
	assert_closed_rc(rv_context_new(dev, NULL, &c), "closed by rv_device_close");
	assert_ptr_equal(c, SENTINEL);
	assert_closed_rc(rv_qp_state_of(a.qp), "closed because its");
	assert_closed_rc(rv_context_query_device(a.ctx, &(rv_device_attr){.mask = RV_DEVICE_ATTR_ALL}),
			 "closed because its device");
	assert_int_equal(rv_device_close(dev), 0); /* again: already closed */
	unref_tree(&a);
	unref_tree(&b);
	assert_int_equal(mock_live(RV_OBJ_DEVICE), 1);
	end_test();
}

static void test_handles__close_twice_returns_zero_and_destroys_once(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(rv_mr_close(t.mr), 0);
	assert_int_equal(rv_mr_close(t.mr), 0);
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(mock_destroy_count(t.qp), 1);
	assert_int_equal(mock_destroy_count(t.ctx), 1);
	assert_int_equal(mock.n_log, 6);
	unref_tree(&t);
	end_test();
}

/* ---- closed handles ---- */

static void test_handles__cascade_close_reason_names_the_closed_parent(void **state)
{
	struct tree t;
	char want[128];

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_pd_close(t.pd), 0);
	snprintf(want, sizeof(want), "closed because its PD #%" PRIu64 " was closed", id_of(t.pd));
	assert_closed_rc(rv_qp_state_of(t.qp), want);
	snprintf(want, sizeof(want), "QP #%" PRIu64 " is closed", id_of(t.qp));
	assert_msg_contains(want);
	assert_msg_contains("rv_qp_state_of");
	assert_int_equal(rv_mr_lkey(t.mr), 0);
	snprintf(want, sizeof(want), "closed because its PD #%" PRIu64 " was closed", id_of(t.pd));
	assert_msg_contains(want);
	assert_closed_rc(rv_mr_reg(t.pd, t.buf, 8, 0, &(rv_mr *){NULL}), "closed by rv_pd_close");

	assert_int_equal(rv_context_close(t.ctx), 0);
	snprintf(want, sizeof(want), "closed because its context #%" PRIu64 " was closed", id_of(t.ctx));
	assert_closed_rc(rv_cq_poll(t.cq, &(rv_wc){0}, 1), want);
	assert_closed_rc(rv_pd_new(t.ctx, NULL, &(rv_pd *){NULL}), "closed by rv_context_close");
	unref_tree(&t);
	end_test();
}

static void test_handles__explicit_close_reason_names_the_call(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_closed_rc(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_ERR}),
			 "closed by rv_qp_close");
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_closed_rc(rv_cq_poll(t.cq, &(rv_wc){0}, 1), "closed by rv_cq_close");
	assert_int_equal(rv_mr_close(t.mr), 0);
	assert_int_equal(rv_mr_rkey(t.mr), 0);
	assert_msg_contains("closed by rv_mr_close");
	unref_tree(&t);
	end_test();
}

static void test_handles__every_call_on_a_closed_qp_returns_eclosed(void **state)
{
	struct tree t;
	rv_sge sge = {.addr = 0, .length = 8, .lkey = 1};
	rv_send_wr swr = {.opcode = RV_WR_SEND, .sg_list = &sge, .num_sge = 1};
	rv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1};
	rv_qp_attr qa = {.mask = RV_QP_STATE};
	rv_qp_cap cap;
	rv_endpoint ep = {.qp_type = RV_QPT_RC, .qpn = 5, .gid = {1}};
	size_t n = 99;

	(void)state;
	make_tree(&t);
	sge.addr = (uintptr_t)t.buf;
	assert_int_equal(rv_qp_close(t.qp), 0);
	unsigned sends = mock.n_post_send, recvs = mock.n_post_recv, modifies = mock.n_modify;
	assert_closed_rc(rv_qp_modify(t.qp, &qa), "rv_qp_modify");
	assert_closed_rc(rv_qp_query(t.qp, &qa), "rv_qp_query");
	assert_closed_rc(rv_qp_state_of(t.qp), "rv_qp_state_of");
	assert_closed_rc(rv_qp_get_cap(t.qp, &cap), "rv_qp_get_cap");
	assert_closed_rc(rv_qp_to_init(t.qp, NULL), "rv_qp_to_init");
	assert_closed_rc(rv_qp_to_rtr(t.qp, NULL), "rv_qp_to_rtr");
	assert_closed_rc(rv_qp_to_rts(t.qp, NULL), "rv_qp_to_rts");
	assert_closed_rc(rv_qp_endpoint(t.qp, &ep), "rv_qp_endpoint");
	assert_closed_rc(rv_qp_connect(t.qp, &ep), "rv_qp_connect");
	assert_closed_rc(rv_qp_post_send(t.qp, &swr, 1, &n), "rv_qp_post_send");
	assert_closed_rc(rv_qp_post_recv(t.qp, &rwr, 1, &n), "rv_qp_post_recv");
	assert_int_equal(n, 0); /* nothing posted: wrs[0] failed (issue 17) */
	assert_closed_rc(rv_qp_write(t.qp, &sge, 0x1000, 7, 1), "rv_qp_write");
	assert_closed_rc(rv_qp_read(t.qp, &sge, 0x1000, 7, 1), "rv_qp_read");
	assert_closed_rc(rv_qp_send(t.qp, &sge, 1), "rv_qp_send");
	assert_closed_rc(rv_qp_recv(t.qp, &sge, 1), "rv_qp_recv");
	assert_int_equal(rv_qp_num(t.qp), 0);
	assert_msg_contains("is closed");
	assert_null(rv_qp_pd(t.qp));
	assert_msg_contains("is closed");
	/* The driver never saw any of it. */
	assert_int_equal(mock.n_post_send, sends);
	assert_int_equal(mock.n_post_recv, recvs);
	assert_int_equal(mock.n_modify, modifies);
	unref_tree(&t);
	end_test();
}

static void test_handles__every_call_on_a_closed_cq_returns_eclosed(void **state)
{
	struct tree t;
	rv_wc wc[4];
	rv_qp *qp = SENTINEL;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_closed_rc(rv_cq_poll(t.cq, wc, 4), "rv_cq_poll");
	assert_int_equal(mock.n_poll, 0);
	assert_int_equal(rv_cq_size(t.cq), 0);
	assert_msg_contains("is closed");
	/* A closed CQ cannot back a new QP, as send or as receive CQ. */
	assert_closed_rc(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t.cq},
				   &qp), "rv_qp_new");
	assert_closed_rc(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ,
						      .send_cq = t.cq2, .recv_cq = t.cq},
				   &qp), "rv_qp_new");
	assert_ptr_equal(qp, SENTINEL);
	unref_tree(&t);
	end_test();
}

static void test_handles__every_call_on_a_closed_pd_and_mr_returns_eclosed(void **state)
{
	struct tree t;
	rv_mr *mr = SENTINEL;
	rv_qp *qp = SENTINEL;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_closed_rc(rv_mr_reg(t.pd, t.buf, 8, 0, &mr), "rv_mr_reg");
	assert_closed_rc(rv_mr_alloc(t.pd, 8, 0, NULL, &mr), "rv_mr_alloc");
	assert_closed_rc(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t.cq},
				   &qp), "rv_qp_new");
	assert_ptr_equal(mr, SENTINEL);
	assert_ptr_equal(qp, SENTINEL);
	assert_null(rv_pd_context(t.pd));
	assert_msg_contains("is closed");
	assert_int_equal(rv_mr_lkey(t.mr), 0);
	assert_int_equal(rv_mr_rkey(t.mr), 0);
	assert_null(rv_mr_pd(t.mr));
	assert_msg_contains("is closed");
	unref_tree(&t);
	end_test();
}

static void test_handles__every_call_on_a_closed_context_returns_eclosed(void **state)
{
	struct tree t;
	rv_device_attr da;
	rv_port_attr pa;
	uint8_t gid[16];
	rv_pd *pd = SENTINEL;
	rv_cq *cq = SENTINEL;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_context_close(t.ctx), 0);
	da.mask = RV_DEVICE_ATTR_ALL;
	pa.mask = RV_PORT_ATTR_ALL;
	assert_closed_rc(rv_pd_new(t.ctx, NULL, &pd), "rv_pd_new");
	assert_closed_rc(rv_cq_new(t.ctx, NULL, &cq), "rv_cq_new");
	assert_closed_rc(rv_context_query_device(t.ctx, &da), "rv_context_query_device");
	assert_closed_rc(rv_context_query_port(t.ctx, 1, &pa), "rv_context_query_port");
	assert_closed_rc(rv_context_query_gid(t.ctx, 1, 0, gid), "rv_context_query_gid");
	assert_closed_rc(rv_context_query_gid_entry(t.ctx, 1, 0, &(rv_gid_entry){0}), "rv_context_query_gid_entry");
	assert_closed_rc(rv_context_query_pkey(t.ctx, 1, 0, &(uint16_t){0}), "rv_context_query_pkey");
	assert_null(rv_context_device(t.ctx));
	assert_msg_contains("is closed");
	assert_ptr_equal(pd, SENTINEL);
	assert_ptr_equal(cq, SENTINEL);
	unref_tree(&t);
	end_test();
}

static void test_handles__getters_on_live_handles(void **state)
{
	struct tree t;
	rv_qp_cap cap;

	(void)state;
	make_tree(&t);
	assert_string_equal(rv_device_name(dev), "mock0");
	assert_int_equal(rv_device_kind_of(dev), RV_DEVICE_VERBS);
	assert_ptr_equal(rv_context_device(t.ctx), dev);
	assert_ptr_equal(rv_pd_context(t.pd), t.ctx);
	assert_ptr_equal(rv_mr_pd(t.mr), t.pd);
	assert_ptr_equal(rv_mr_addr(t.mr), t.buf);
	assert_int_equal(rv_mr_length(t.mr), sizeof(t.buf));
	assert_int_equal(rv_mr_lkey(t.mr), t.mr->lkey);
	assert_int_not_equal(rv_mr_lkey(t.mr), 0);
	assert_int_not_equal(rv_mr_rkey(t.mr), 0);
	assert_int_equal(rv_cq_size(t.cq), 256);
	assert_ptr_equal(rv_qp_pd(t.qp), t.pd);
	assert_int_equal(rv_qp_num(t.qp), 0x100);
	assert_int_equal(rv_qp_get_cap(t.qp, &cap), 0);
	assert_int_equal(cap.max_send_wr, 128);
	assert_int_equal(cap.max_recv_wr, 128);
	assert_int_equal(cap.max_send_sge, 1);
	assert_int_equal(cap.max_recv_sge, 1);
	assert_true(t.qp->init_psn <= 0xffffff);
	unref_tree(&t);
	end_test();
}

static void test_handles__getters_on_closed_handles_follow_the_headers(void **state)
{
	struct tree t;
	rv_mr *owned;
	unsigned char *mem;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_mr_alloc(t.pd, 3000, RV_ACCESS_LOCAL_WRITE, NULL, &owned), 0);
	mem = rv_mr_addr(owned);
	assert_non_null(mem);
	assert_int_equal((uintptr_t)mem % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
	assert_true(rv_mr_length(owned) >= 3000);
	for (size_t i = 0; i < rv_mr_length(owned); i++)
		assert_int_equal(mem[i], 0);
	mem[0] = 42;

	assert_int_equal(rv_device_close(dev), 0);
	/* Device: name and kind stay readable. */
	assert_string_equal(rv_device_name(dev), "mock0");
	assert_int_equal(rv_device_kind_of(dev), RV_DEVICE_VERBS);
	/* MR: address and length stay (allocated memory stays readable), keys go. */
	assert_ptr_equal(rv_mr_addr(t.mr), t.buf);
	assert_int_equal(rv_mr_length(t.mr), sizeof(t.buf));
	assert_ptr_equal(rv_mr_addr(owned), mem);
	assert_int_equal(mem[0], 42);
	assert_int_equal(rv_mr_lkey(owned), 0);
	assert_int_equal(rv_mr_rkey(owned), 0);
	assert_null(rv_mr_pd(t.mr));
	/* The rest: NULL or 0. */
	assert_null(rv_context_device(t.ctx));
	assert_null(rv_pd_context(t.pd));
	assert_int_equal(rv_cq_size(t.cq), 0);
	assert_int_equal(rv_qp_num(t.qp), 0);
	assert_null(rv_qp_pd(t.qp));
	owned = rv_mr_unref(owned);
	unref_tree(&t);
	end_test();
}

/* ---- orders of unref and close ---- */

static void test_handles__close_then_unref_frees_at_the_last_unref(void **state)
{
	struct tree t;
	rv_qp *extra;

	(void)state;
	make_tree(&t);
	extra = rv_qp_ref(t.qp);
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	/* Closing dropped the QP's references on the PD and CQs. */
	t.qp = rv_qp_unref(t.qp);
	assert_closed_rc(rv_qp_state_of(extra), "closed by rv_qp_close");
	extra = rv_qp_unref(extra);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock_destroy_count(t.pd), 1);
	unref_tree(&t);
	end_test();
}

static void test_handles__unref_then_parent_close(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	t.mr = rv_mr_unref(t.mr); /* freed now: nothing else holds it */
	assert_int_equal(mock_live(RV_OBJ_MR), 0);
	t.qp = rv_qp_unref(t.qp);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(mock.n_log, 6); /* MR, QP, PD, CQ2, CQ, context */
	unref_tree(&t);
	end_test();
}

static void test_handles__unref_of_a_closed_parent_after_its_children(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_context_close(t.ctx), 0);
	/* Parents first, then children: every order frees each once. */
	t.ctx = rv_context_unref(t.ctx);
	t.pd = rv_pd_unref(t.pd);
	t.cq = rv_cq_unref(t.cq);
	t.qp = rv_qp_unref(t.qp);
	t.cq2 = rv_cq_unref(t.cq2);
	t.mr = rv_mr_unref(t.mr);
	end_test();
}

static void test_handles__context_close_with_a_pd_pinned_only_by_its_children(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	/* The PD is referenced only by its MR and QP; closing them during the
	 * cascade drops its last references while the cascade is still in it. */
	t.pd = rv_pd_unref(t.pd);
	t.cq2 = rv_cq_unref(t.cq2);
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(mock.n_log, 6);
	assert_int_equal(mock.destroyed[RV_OBJ_PD], 1);
	assert_int_equal(mock.destroyed[RV_OBJ_CQ], 2);
	assert_int_equal(mock_destroy_count(t.mr), 1);
	assert_int_equal(mock_destroy_count(t.qp), 1);
	assert_ptr_equal(mock.log[mock.n_log - 1].handle, t.ctx);
	assert_closed_rc(rv_qp_state_of(t.qp), "closed because its");
	unref_tree(&t);
	end_test();
}

static void test_handles__closing_a_closed_handle_whose_context_is_freed_returns_zero(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	t.ctx = rv_context_unref(t.ctx); /* pinned only by its PD and CQs */
	assert_int_equal(rv_device_close(dev), 0);
	/* The context is freed now: the closed handles must not touch its lock. */
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(rv_mr_close(t.mr), 0);
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock_destroy_count(t.qp), 1);
	assert_int_equal(mock_destroy_count(t.pd), 1);
	unref_tree(&t);
	end_test();
}

/* A small deterministic generator, so a failing seed can be replayed. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static unsigned rnd(unsigned n)
{
	return (unsigned)(rng() % n);
}

struct handle {
	enum rv_obj_type type;
	void *h;
	bool released;
	bool injected; /* a destroy failure may hit this action */
};

static void h_close(struct handle *x)
{
	int rc = -1;

	switch (x->type) {
	case RV_OBJ_DEVICE: rc = rv_device_close(x->h); break;
	case RV_OBJ_CONTEXT: rc = rv_context_close(x->h); break;
	case RV_OBJ_PD: rc = rv_pd_close(x->h); break;
	case RV_OBJ_CQ: rc = rv_cq_close(x->h); break;
	case RV_OBJ_MR: rc = rv_mr_close(x->h); break;
	case RV_OBJ_QP: rc = rv_qp_close(x->h); break;
	default: fail();
	}
	if (rc == -EBUSY && x->injected) {
		/* An injected destroy failure: the close is retryable and then succeeds. */
		memset(mock.fail_destroy_count, 0, sizeof(mock.fail_destroy_count));
		x->injected = false;
		h_close(x);
		return;
	}
	assert_int_equal(rc, 0);
}

static void h_ref(struct handle *x)
{
	switch (x->type) {
	case RV_OBJ_DEVICE: rv_device_ref(x->h); break;
	case RV_OBJ_CONTEXT: rv_context_ref(x->h); break;
	case RV_OBJ_PD: rv_pd_ref(x->h); break;
	case RV_OBJ_CQ: rv_cq_ref(x->h); break;
	case RV_OBJ_MR: rv_mr_ref(x->h); break;
	case RV_OBJ_QP: rv_qp_ref(x->h); break;
	default: fail();
	}
}

static void h_unref(struct handle *x)
{
	switch (x->type) {
	case RV_OBJ_DEVICE: rv_device_unref(x->h); break;
	case RV_OBJ_CONTEXT: rv_context_unref(x->h); break;
	case RV_OBJ_PD: rv_pd_unref(x->h); break;
	case RV_OBJ_CQ: rv_cq_unref(x->h); break;
	case RV_OBJ_MR: rv_mr_unref(x->h); break;
	case RV_OBJ_QP: rv_qp_unref(x->h); break;
	default: fail();
	}
}

/* Whether the handle reports itself closed through a public call; -1 for devices
 * (no call tells, by design: a closed device keeps its name). */
static int h_reports_closed(struct handle *x)
{
	switch (x->type) {
	case RV_OBJ_CONTEXT: return rv_context_device(x->h) == NULL;
	case RV_OBJ_PD: return rv_pd_context(x->h) == NULL;
	case RV_OBJ_CQ: return rv_cq_size(x->h) == 0;
	case RV_OBJ_MR: return rv_mr_lkey(x->h) == 0;
	case RV_OBJ_QP: {
		int rc = rv_qp_state_of(x->h);
		assert_true(rc >= 0 || rc == -RV_ECLOSED);
		return rc == -RV_ECLOSED;
	}
	default: return -1;
	}
}

enum { ACT_CLOSE, ACT_UNREF, ACT_REF_UNREF };
struct action {
	int kind;
	unsigned target;
};

#define MAX_HANDLES 16
#define MAX_ACTIONS (MAX_HANDLES * 3)

/* One random world: a device, two contexts' worth of objects, random sharing. */
static unsigned build_world(struct handle *hs, rv_device *d, char *buf)
{
	unsigned n = 0;
	rv_context *ctx[2];
	rv_pd *pds[3];
	rv_cq *cqs[3];
	unsigned n_ctx = 1 + rnd(2);

	hs[n++] = (struct handle){RV_OBJ_DEVICE, d, false, false};
	for (unsigned c = 0; c < n_ctx; c++) {
		assert_int_equal(rv_context_new(d, NULL, &ctx[c]), 0);
		hs[n++] = (struct handle){RV_OBJ_CONTEXT, ctx[c], false, false};
	}
	unsigned n_pd = 1 + rnd(2), n_cq = 1 + rnd(2);
	for (unsigned i = 0; i < n_pd; i++) {
		assert_int_equal(rv_pd_new(ctx[0], NULL, &pds[i]), 0);
		hs[n++] = (struct handle){RV_OBJ_PD, pds[i], false, false};
	}
	for (unsigned i = 0; i < n_cq; i++) {
		assert_int_equal(rv_cq_new(ctx[0], NULL, &cqs[i]), 0);
		hs[n++] = (struct handle){RV_OBJ_CQ, cqs[i], false, false};
	}
	unsigned n_obj = 2 + rnd(5);
	for (unsigned i = 0; i < n_obj && n < MAX_HANDLES - 1; i++) {
		rv_pd *pd = pds[rnd(n_pd)];
		if (rnd(2)) {
			rv_mr *mr;
			assert_int_equal(rv_mr_reg(pd, buf, 64, 0, &mr), 0);
			hs[n++] = (struct handle){RV_OBJ_MR, mr, false, false};
		} else {
			rv_qp *qp = new_qp(pd, cqs[rnd(n_cq)], cqs[rnd(n_cq)]);
			hs[n++] = (struct handle){RV_OBJ_QP, qp, false, false};
		}
	}
	if (n_ctx == 2) {
		rv_pd *pd;
		assert_int_equal(rv_pd_new(ctx[1], NULL, &pd), 0);
		hs[n++] = (struct handle){RV_OBJ_PD, pd, false, false};
	}
	return n;
}

/* Random worlds, closed and released in random orders. With inject, a random
 * destroy fails now and then: an explicit close then reports it and is
 * retried; a last unref leaves a zombie that the last unref or close of one
 * of its parents retries, or else the final device close. */
static unsigned random_worlds(uint64_t seed, unsigned iterations, bool inject)
{
	unsigned failed_destroys = 0, reaped = 0;
	char buf[64];

	for (unsigned it = 0; it < iterations; it++) {
		struct handle hs[MAX_HANDLES];
		struct action acts[MAX_ACTIONS];
		unsigned n, n_act = 0;
		rv_device *d, *keep = NULL;

		rng_state = seed + it * 0x9e3779b97f4a7c15ull;
		if (!rng_state)
			rng_state = 1;
		mock_reset();
		assert_int_equal(mock_device_new("mock0", &d), 0);
		n = build_world(hs, d, buf);
		if (inject)
			keep = rv_device_ref(d); /* to reap zombies at the end */

		for (unsigned i = 0; i < n; i++) {
			if (rnd(3) == 0)
				acts[n_act++] = (struct action){ACT_CLOSE, i};
			if (rnd(4) == 0)
				acts[n_act++] = (struct action){ACT_REF_UNREF, i};
			acts[n_act++] = (struct action){ACT_UNREF, i};
		}
		/* Shuffle, then put each handle's final unref after its other actions. */
		for (unsigned i = n_act; i > 1; i--) {
			unsigned j = rnd(i);
			struct action tmp = acts[i - 1];
			acts[i - 1] = acts[j];
			acts[j] = tmp;
		}
		for (unsigned i = 0; i < n_act; i++) {
			if (acts[i].kind != ACT_UNREF)
				continue;
			for (unsigned j = i + 1; j < n_act; j++) {
				if (acts[j].target == acts[i].target) {
					struct action tmp = acts[i];
					acts[i] = acts[j];
					acts[j] = tmp;
				}
			}
		}

		for (unsigned i = 0; i < n_act; i++) {
			struct handle *x = &hs[acts[i].target];

			memset(mock.fail_destroy_count, 0, sizeof(mock.fail_destroy_count));
			x->injected = false;
			if (inject && rnd(3) == 0) {
				static const enum rv_obj_type victims[] = {RV_OBJ_CONTEXT, RV_OBJ_PD, RV_OBJ_CQ,
									   RV_OBJ_MR, RV_OBJ_QP};
				mock_fail_destroy(victims[rnd(5)], EBUSY, 1);
				x->injected = true;
			}
			switch (acts[i].kind) {
			case ACT_CLOSE: h_close(x); break;
			case ACT_REF_UNREF: h_ref(x); h_unref(x); break;
			case ACT_UNREF: h_unref(x); x->released = true; break;
			}
			/* Every handle still held says "closed" exactly when its resource is gone. */
			for (unsigned k = 0; k < n; k++) {
				if (hs[k].released)
					continue;
				int closed = h_reports_closed(&hs[k]);
				if (closed >= 0 && closed != (mock_destroy_count(hs[k].h) > 0))
					fail_msg("seed 0x%" PRIx64 " iteration %u: %s handle says closed=%d, destroyed %u times",
						 seed, it, rv_obj_type_name(hs[k].type), closed,
						 mock_destroy_count(hs[k].h));
			}
			if (mock.double_destroys || mock.order_violations || mock.contract_violations)
				fail_msg("seed 0x%" PRIx64 " iteration %u action %u: double=%u order=%u contract=%u",
					 seed, it, i, mock.double_destroys, mock.order_violations,
					 mock.contract_violations);
		}
		memset(mock.fail_destroy_count, 0, sizeof(mock.fail_destroy_count));
		if (keep) {
			size_t before = mock.n_log;
			assert_int_equal(rv_device_close(keep), 0);
			rv_device_unref(keep);
			/* Objects whose handles were all released yet still live: zombies, and what they pinned. */
			for (size_t e = before; e < mock.n_log; e++)
				for (unsigned k = 0; k < n; k++)
					if (mock.log[e].handle == hs[k].h && hs[k].released && hs[k].type != RV_OBJ_DEVICE)
						reaped++;
		}
		for (int ty = 1; ty < RV_OBJ_TYPE_MAX; ty++)
			failed_destroys += mock.destroy_calls[ty] - mock.destroyed[ty];
		if (mock_live_total() != 0)
			fail_msg("seed 0x%" PRIx64 " iteration %u: %u object(s) leaked", seed, it, mock_live_total());
		for (int ty = 1; ty < RV_OBJ_TYPE_MAX; ty++)
			assert_int_equal(mock.created[ty], mock.destroyed[ty]);
		assert_int_equal(mock.double_destroys, 0);
	}
	/* With injection the interesting paths were taken, many times. */
	if (inject && (failed_destroys < 500 || reaped < 100))
		fail_msg("only %u failed destroys and %u reaped zombies", failed_destroys, reaped);
	return failed_destroys;
}

static uint64_t test_seed(uint64_t fallback)
{
	const char *env = getenv("RV_TEST_SEED");
	return env ? strtoull(env, NULL, 0) : fallback;
}

static void test_handles__random_orders_of_close_and_unref_never_leak_or_double_destroy(void **state)
{
	(void)state;
	/* The fixture's device is not used here: each world brings its own. */
	dev = rv_device_unref(dev);
	assert_int_equal(random_worlds(test_seed(0x2545f4914f6cdd1dull), 3000, false), 0);
	mock_reset();
	assert_int_equal(mock_device_new("mock0", &dev), 0);
	end_test();
}

static void test_handles__random_orders_with_failing_destroys_retry_or_reap_every_object(void **state)
{
	(void)state;
	dev = rv_device_unref(dev);
	random_worlds(test_seed(0x5851f42d4c957f2dull), 3000, true);
	mock_reset();
	assert_int_equal(mock_device_new("mock0", &dev), 0);
	end_test();
}

struct ref_thread_arg {
	rv_qp *qp;
	rv_pd *pd;
	unsigned rounds;
};

static void *ref_thread(void *p)
{
	struct ref_thread_arg *a = p;

	for (unsigned i = 0; i < a->rounds; i++) {
		rv_qp_ref(a->qp);
		rv_pd_ref(a->pd);
		rv_pd_unref(a->pd);
		rv_qp_unref(a->qp);
	}
	return NULL;
}

static void test_handles__concurrent_ref_unref_keeps_counts_exact(void **state)
{
	struct tree t;
	pthread_t th[4];
	struct ref_thread_arg arg;

	(void)state;
	make_tree(&t);
	arg = (struct ref_thread_arg){t.qp, t.pd, 20000};
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, ref_thread, &arg), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&RV_OBJ(t.qp)->refcnt), 1);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	unref_tree(&t);
	end_test();
}

struct churn_arg {
	rv_pd *pd;
	rv_cq *cq;
	unsigned seed;
	char buf[64];
};

/* Create and drop MRs and QPs on a shared PD and CQ; the context lock
 * serialises every driver call, so the mock needs no lock of its own. */
static void *churn(void *p)
{
	struct churn_arg *a = p;
	unsigned s = a->seed;

	for (int i = 0; i < 300; i++) {
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = a->cq};
		rv_mr *mr = NULL;
		rv_qp *qp = NULL;

		s = s * 1103515245u + 12345u;
		if (rv_mr_reg(a->pd, a->buf, sizeof(a->buf), 0, &mr) != 0 || rv_qp_new(a->pd, &qa, &qp) != 0)
			abort();
		if (s & 0x100) {
			rv_qp_close(qp);
			rv_mr_unref(mr);
			rv_qp_unref(qp);
		} else {
			rv_qp_unref(qp);
			if (s & 0x200)
				rv_mr_close(mr);
			rv_mr_unref(mr);
		}
	}
	return NULL;
}

static void test_handles__concurrent_create_close_unref_in_one_context(void **state)
{
	struct tree t;
	pthread_t th[4];
	struct churn_arg args[4];

	(void)state;
	make_tree(&t);
	for (unsigned i = 0; i < 4; i++) {
		args[i] = (struct churn_arg){.pd = t.pd, .cq = t.cq, .seed = i + 1};
		assert_int_equal(pthread_create(&th[i], NULL, churn, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(mock.created[RV_OBJ_QP], 1 + 4 * 300);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	assert_int_equal(mock_live(RV_OBJ_MR), 1);
	assert_int_equal(atomic_load(&RV_OBJ(t.pd)->refcnt), 3);
	assert_int_equal(atomic_load(&RV_OBJ(t.cq)->refcnt), 2);
	unref_tree(&t);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HANDLES_TEST(test_handles__create_then_unref_children_first_frees_everything),
		HANDLES_TEST(test_handles__unref_parents_first_keeps_children_usable),
		HANDLES_TEST(test_handles__extra_references_are_released_by_extra_unrefs),
		HANDLES_TEST(test_handles__context_close_closes_qps_before_cqs_mrs_before_pds_all_before_context),
		HANDLES_TEST(test_handles__pd_close_cascades_to_qp_then_mr),
		HANDLES_TEST(test_handles__td_close_cascades_to_parent_domain_and_its_qp),
		HANDLES_TEST(test_handles__context_close_destroys_parent_domain_before_pd_and_td),
		HANDLES_TEST(test_handles__cq_close_cascades_to_every_qp_using_it),
		HANDLES_TEST(test_handles__mr_close_closes_only_the_mr),
		HANDLES_TEST(test_handles__mw_on_a_device_without_windows),
		HANDLES_TEST(test_handles__device_close_closes_every_context_and_its_tree),
		HANDLES_TEST(test_handles__close_twice_returns_zero_and_destroys_once),
		HANDLES_TEST(test_handles__cascade_close_reason_names_the_closed_parent),
		HANDLES_TEST(test_handles__explicit_close_reason_names_the_call),
		HANDLES_TEST(test_handles__every_call_on_a_closed_qp_returns_eclosed),
		HANDLES_TEST(test_handles__every_call_on_a_closed_cq_returns_eclosed),
		HANDLES_TEST(test_handles__every_call_on_a_closed_pd_and_mr_returns_eclosed),
		HANDLES_TEST(test_handles__every_call_on_a_closed_context_returns_eclosed),
		HANDLES_TEST(test_handles__getters_on_live_handles),
		HANDLES_TEST(test_handles__getters_on_closed_handles_follow_the_headers),
		HANDLES_TEST(test_handles__close_then_unref_frees_at_the_last_unref),
		HANDLES_TEST(test_handles__unref_then_parent_close),
		HANDLES_TEST(test_handles__unref_of_a_closed_parent_after_its_children),
		HANDLES_TEST(test_handles__context_close_with_a_pd_pinned_only_by_its_children),
		HANDLES_TEST(test_handles__closing_a_closed_handle_whose_context_is_freed_returns_zero),
		HANDLES_TEST(test_handles__random_orders_of_close_and_unref_never_leak_or_double_destroy),
		HANDLES_TEST(test_handles__random_orders_with_failing_destroys_retry_or_reap_every_object),
		HANDLES_TEST(test_handles__concurrent_ref_unref_keeps_counts_exact),
		HANDLES_TEST(test_handles__concurrent_create_close_unref_in_one_context),
	};

	return cmocka_run_group_tests_name("core: handles", tests, NULL, NULL);
}
