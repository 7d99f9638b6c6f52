/*
 * The handle core and the facade, against the mock driver: reference counts,
 * cascade close and its order, closed-handle errors, retryable destroys and
 * zombies, argument checking, outputs on failure, the dump, the leak report
 * and the log hook.
 *
 * Every case ends with end_test(): the device is released and the mock must
 * hold no live object, with nothing destroyed twice or out of order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mock-driver.h"

#define SENTINEL ((void *)(uintptr_t)0x5e5e5e5eu)

static rv_device *dev;

/* ---- helpers ---- */

static void assert_msg_contains(const char *fragment)
{
	const char *msg = rv_error_last();

	if (!strstr(msg, fragment))
		fail_msg("rv_error_last() is \"%s\"; expected it to contain \"%s\"", msg, fragment);
}

static void assert_closed_rc(int rc, const char *fragment)
{
	assert_int_equal(rc, -RV_ECLOSED);
	assert_msg_contains("is closed");
	if (fragment)
		assert_msg_contains(fragment);
}

static void assert_mock_sane(void)
{
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.order_violations, 0);
	assert_int_equal(mock.contract_violations, 0);
}

/* Release the test's device and check that nothing is left. */
static void end_test(void)
{
	dev = rv_device_unref(dev);
	assert_mock_sane();
	for (int t = 1; t < RV_OBJ_TYPE_MAX; t++) {
		if (mock_live((enum rv_obj_type)t))
			fail_msg("%u %s object(s) still live in the mock", mock_live((enum rv_obj_type)t),
				 rv_obj_type_name((enum rv_obj_type)t));
	}
	assert_int_equal(mock_live_total(), 0);
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	rv_set_log_handler(NULL, NULL);
	rv_set_log_level(RV_LOG_WARN);
	unsetenv("RVERBS_DEBUG");
	return mock_device_new("mock0", &dev);
}

static int teardown(void **state)
{
	(void)state;
	rv_set_log_handler(NULL, NULL);
	unsetenv("RVERBS_DEBUG");
	mock_reset();
	return 0;
}

static uint64_t id_of(const void *h)
{
	return RV_COBJ(h)->id;
}

static rv_qp *new_qp_type(rv_pd *pd, rv_cq *scq, rv_cq *rcq, uint32_t type)
{
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ | RV_QP_INIT_ATTR_TYPE,
			     .qp_type = type, .send_cq = scq, .recv_cq = rcq};
	rv_qp *qp = NULL;

	assert_int_equal(rv_qp_new(pd, &a, &qp), 0);
	assert_non_null(qp);
	return qp;
}

static rv_qp *new_qp(rv_pd *pd, rv_cq *scq, rv_cq *rcq)
{
	return new_qp_type(pd, scq, rcq, RV_QPT_RC);
}

/* The usual tree: a context with a PD, two CQs, an MR and a QP (created in that order). */
struct tree {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq, *cq2;
	rv_mr *mr;
	rv_qp *qp;
	char buf[256];
};

static void make_tree(struct tree *t)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(rv_context_new(dev, NULL, &t->ctx), 0);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq2), 0);
	assert_int_equal(rv_mr_reg(t->pd, t->buf, sizeof(t->buf), RV_ACCESS_LOCAL_WRITE, &t->mr), 0);
	t->qp = new_qp(t->pd, t->cq, t->cq2);
}

static void unref_tree(struct tree *t)
{
	t->qp = rv_qp_unref(t->qp);
	t->mr = rv_mr_unref(t->mr);
	t->cq2 = rv_cq_unref(t->cq2);
	t->cq = rv_cq_unref(t->cq);
	t->pd = rv_pd_unref(t->pd);
	t->ctx = rv_context_unref(t->ctx);
}

static void assert_before(const void *first, const void *then)
{
	long a = mock_destroy_index(first), b = mock_destroy_index(then);

	assert_true(a >= 0);
	assert_true(b >= 0);
	if (a >= b)
		fail_msg("%s #%" PRIu64 " was destroyed at %ld, not before %s #%" PRIu64 " (at %ld)",
			 rv_obj_type_name(RV_COBJ(first)->cls->type), id_of(first), a,
			 rv_obj_type_name(RV_COBJ(then)->cls->type), id_of(then), b);
}

static char *dump(rv_context *ctx)
{
	char *text = NULL;

	assert_int_equal(rv_context_dump(ctx, &text), 0);
	assert_non_null(text);
	return text;
}

struct log_capture {
	char text[8192];
	size_t len;
	unsigned lines;
};

static void capture_log(rv_log_level level, const char *msg, void *user)
{
	struct log_capture *c = user;
	int n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "%d %s\n", (int)level, msg);

	if (n > 0 && c->len + (size_t)n < sizeof(c->text))
		c->len += (size_t)n;
	c->lines++;
}

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

/* ---- retryable destroy and zombies ---- */

static void test_handles__failed_qp_destroy_makes_pd_close_fail_and_keeps_pd_and_qp_live(void **state)
{
	struct tree t;
	rv_mr *mr2;
	char want[96];

	(void)state;
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	assert_int_equal(rv_pd_close(t.pd), -EBUSY);
	snprintf(want, sizeof(want), "injected failure destroying QP #%" PRIu64, id_of(t.qp));
	assert_msg_contains(want);
	/* Nothing after the failing QP was closed: the MR, the PD and the QP are live. */
	assert_int_equal(mock.n_log, 0);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RESET);
	assert_int_equal(rv_qp_num(t.qp), 0x100);
	assert_int_not_equal(rv_mr_lkey(t.mr), 0);
	assert_ptr_equal(rv_pd_context(t.pd), t.ctx);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 16, 0, &mr2), 0);
	mr2 = rv_mr_unref(mr2);
	/* Retry: now it goes through, each object destroyed once. */
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock_destroy_count(t.qp), 1);
	assert_int_equal(mock_destroy_count(t.mr), 1);
	assert_int_equal(mock_destroy_count(t.pd), 1);
	assert_int_equal(mock.destroy_calls[RV_OBJ_QP], 2);
	unref_tree(&t);
	end_test();
}

static void test_handles__failed_destroy_keeps_what_was_already_closed_closed(void **state)
{
	struct tree t;
	rv_mr *late;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, &late), 0); /* newer than the QP */
	mock_fail_destroy(RV_OBJ_QP, EAGAIN, 1);
	assert_int_equal(rv_pd_close(t.pd), -EAGAIN);
	assert_int_equal(mock_destroy_count(late), 1);
	assert_int_equal(mock_destroy_count(t.qp), 0);
	assert_int_equal(rv_mr_lkey(late), 0);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock_destroy_count(late), 1);
	late = rv_mr_unref(late);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_close_failure_is_retryable(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_QP, EIO, 2);
	assert_int_equal(rv_qp_close(t.qp), -EIO);
	assert_int_equal(rv_qp_close(t.qp), -EIO);
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0); /* still fully usable */
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(mock_destroy_count(t.qp), 1);
	unref_tree(&t);
	end_test();
}

static void test_handles__zombie_qp_is_destroyed_and_freed_by_pd_close(void **state)
{
	struct tree t;
	char *text;

	(void)state;
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	t.qp = rv_qp_unref(t.qp); /* last reference; the destroy fails: a zombie */
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	text = dump(t.ctx);
	assert_non_null(strstr(text, "zombie(destroy failed)"));
	rv_free(text);
	/* The PD's close retries the zombie's destroy and frees it. */
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(mock.destroyed[RV_OBJ_QP], 1);
	assert_before(t.mr, t.pd);
	text = dump(t.ctx);
	assert_null(strstr(text, "zombie"));
	assert_null(strstr(text, "QP #"));
	rv_free(text);
	unref_tree(&t);
	end_test();
}

static void test_handles__zombie_whose_retry_fails_again_stays_tracked(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 2);
	t.qp = rv_qp_unref(t.qp);
	assert_int_equal(rv_context_close(t.ctx), -EBUSY);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	/* The context stays open and usable. */
	assert_ptr_equal(rv_context_device(t.ctx), dev);
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	unref_tree(&t);
	end_test();
}

static void test_handles__zombie_is_freed_by_cq_close_and_by_device_close(void **state)
{
	struct tree a, b;

	(void)state;
	make_tree(&a);
	make_tree(&b);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 2);
	a.qp = rv_qp_unref(a.qp);
	b.qp = rv_qp_unref(b.qp);
	assert_int_equal(mock_live(RV_OBJ_QP), 2);
	assert_int_equal(rv_cq_close(a.cq2), 0);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	assert_int_equal(rv_device_close(dev), 0);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	unref_tree(&a);
	unref_tree(&b);
	end_test();
}

static void test_handles__failed_destroy_without_driver_message_gets_a_generic_one(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	mock.fail_sets_message = false;
	rv_pd_new(NULL, NULL, NULL); /* leaves an unrelated message behind */
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	assert_int_equal(rv_pd_close(t.pd), -EBUSY);
	assert_msg_contains("rv_pd_close: destroying the PD or one of its resources failed");
	assert_msg_contains(strerror(EBUSY));

	mock_fail_destroy(RV_OBJ_MR, EIO, 1);
	assert_int_equal(rv_mr_close(t.mr), -EIO);
	assert_msg_contains("rv_mr_close: deregistering the MR failed");

	mock_fail_destroy(RV_OBJ_QP, EIO, 1);
	assert_int_equal(rv_qp_close(t.qp), -EIO);
	assert_msg_contains("rv_qp_close: destroying the QP failed");

	mock_fail_destroy(RV_OBJ_CQ, EIO, 1);
	assert_int_equal(rv_cq_close(t.cq), -EIO);
	assert_msg_contains("rv_cq_close: destroying the CQ or a QP using it failed");

	mock_fail_destroy(RV_OBJ_CONTEXT, EIO, 1);
	assert_int_equal(rv_context_close(t.ctx), -EIO);
	assert_msg_contains("rv_context_close:");
	assert_int_equal(rv_context_close(t.ctx), 0);
	unref_tree(&t);
	end_test();
}

static void test_handles__device_close_failure_is_retryable_with_a_fresh_message(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	mock.fail_sets_message = false;
	assert_int_equal(rv_pd_new(NULL, NULL, NULL), -EINVAL); /* an unrelated, older message */
	assert_msg_contains("rv_pd_new");
	mock_fail_destroy(RV_OBJ_CONTEXT, EIO, 1);
	assert_int_equal(rv_device_close(dev), -EIO);
	assert_msg_contains("rv_device_close");
	assert_msg_contains(strerror(EIO));
	/* The context's children were closed; the context and the device stay open. */
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	assert_ptr_equal(rv_context_device(t.ctx), dev);
	rv_context *c2;
	assert_int_equal(rv_context_new(dev, NULL, &c2), 0);
	c2 = rv_context_unref(c2);
	assert_int_equal(rv_device_close(dev), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	unref_tree(&t);
	end_test();
}

static void test_handles__failed_pd_destroy_after_its_children_leaves_the_pd_live_and_retryable(void **state)
{
	struct tree t;
	rv_mr *mr2;

	(void)state;
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_PD, EBUSY, 1);
	assert_int_equal(rv_pd_close(t.pd), -EBUSY);
	/* The children went first and stay closed; the PD itself stays usable. */
	assert_int_equal(mock_destroy_count(t.qp), 1);
	assert_int_equal(mock_destroy_count(t.mr), 1);
	assert_int_equal(mock_live(RV_OBJ_PD), 1);
	assert_ptr_equal(rv_pd_context(t.pd), t.ctx);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, &mr2), 0);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_int_equal(mock_destroy_count(mr2), 1);
	assert_int_equal(mock_destroy_count(t.pd), 1);
	mr2 = rv_mr_unref(mr2);
	unref_tree(&t);
	end_test();
}

static void test_handles__pd_pinned_by_children_becomes_a_zombie_when_its_destroy_fails_in_a_cascade(void **state)
{
	struct tree t;
	char *text;

	(void)state;
	make_tree(&t);
	t.pd = rv_pd_unref(t.pd); /* only its MR and QP hold it now */
	mock_fail_destroy(RV_OBJ_PD, EBUSY, 1);
	assert_int_equal(rv_context_close(t.ctx), -EBUSY);
	/* MR and QP closed, dropping the PD's last references: the PD is a zombie. */
	assert_int_equal(mock_destroy_count(t.qp), 1);
	assert_int_equal(mock_destroy_count(t.mr), 1);
	assert_int_equal(mock_live(RV_OBJ_PD), 1);
	text = dump(t.ctx);
	assert_non_null(strstr(text, "PD #"));
	assert_non_null(strstr(text, "refs=0 zombie(destroy failed)"));
	rv_free(text);
	/* The retry destroys and frees it, then the rest. */
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(mock.destroyed[RV_OBJ_PD], 1);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	unref_tree(&t);
	end_test();
}

static void test_handles__device_close_stops_at_the_first_context_that_fails(void **state)
{
	struct tree a, b;

	(void)state;
	make_tree(&a);
	make_tree(&b); /* newest: closed first */
	mock_fail_destroy(RV_OBJ_CONTEXT, EIO, 1);
	assert_int_equal(rv_device_close(dev), -EIO);
	assert_int_equal(mock_destroy_count(b.qp), 1);
	assert_int_equal(mock_destroy_count(b.ctx), 0);
	/* Nothing of the older context was touched. */
	assert_int_equal(mock_destroy_count(a.qp), 0);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_RESET);
	assert_int_equal(rv_device_close(dev), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	assert_int_equal(mock_destroy_count(b.ctx), 1);
	unref_tree(&a);
	unref_tree(&b);
	end_test();
}

static void test_handles__context_whose_destroy_fails_at_last_unref_is_logged_and_reaped_by_device_close(void **state)
{
	struct log_capture cap = {0};
	rv_context *ctx;
	char want[128];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	snprintf(want, sizeof(want), "%d context #%" PRIu64 " could not be destroyed at its last unref", RV_LOG_ERROR,
		 id_of(ctx));
	mock_fail_destroy(RV_OBJ_CONTEXT, EIO, 1);
	ctx = rv_context_unref(ctx);
	assert_non_null(strstr(cap.text, want));
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	/* It still depends on the device, whose close destroys and frees it. */
	assert_int_equal(rv_device_close(dev), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 0);
	rv_set_log_handler(NULL, NULL);
	end_test();
}

/* ---- creation failures ---- */


static void test_handles__create_failures_leave_outputs_parents_and_driver_untouched(void **state)
{
	struct tree t;
	char *before, *after;
	rv_context *ctx = SENTINEL;
	rv_pd *pd = SENTINEL;
	rv_cq *cq = SENTINEL;
	rv_mr *mr = SENTINEL;
	rv_qp *qp = SENTINEL;
	unsigned live;

	(void)state;
	make_tree(&t);
	before = dump(t.ctx);
	live = mock_live_total();
	mock.fail_sets_message = false;

	mock_fail_create(RV_OBJ_CONTEXT, ENODEV, 1);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), -ENODEV);
	assert_msg_contains("rv_context_new: opening the device failed");
	mock_fail_create(RV_OBJ_PD, ENOMEM, 1);
	assert_int_equal(rv_pd_new(t.ctx, NULL, &pd), -ENOMEM);
	assert_msg_contains("rv_pd_new: allocating the PD failed");
	mock_fail_create(RV_OBJ_CQ, EINVAL, 1);
	assert_int_equal(rv_cq_new(t.ctx, NULL, &cq), -EINVAL);
	assert_msg_contains("rv_cq_new: creating the CQ failed");
	mock_fail_create(RV_OBJ_MR, EFAULT, 1);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, &mr), -EFAULT);
	assert_msg_contains("rv_mr_reg: registering the memory failed");
	mock_fail_create(RV_OBJ_MR, EFAULT, 1);
	assert_int_equal(rv_mr_alloc(t.pd, 8, 0, NULL, &mr), -EFAULT);
	assert_msg_contains("rv_mr_alloc: registering the memory failed");
	mock_fail_create(RV_OBJ_QP, ENOSPC, 1);
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t.cq}, &qp),
			 -ENOSPC);
	assert_msg_contains("rv_qp_new: creating the QP failed");

	/* ENOMEM from a registration explains the memlock limit when there is one. */
	struct rlimit rl;
	mock_fail_create(RV_OBJ_MR, ENOMEM, 1);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, &mr), -ENOMEM);
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		assert_msg_contains("locked-memory limit");

	/* With a driver message, the driver's message is kept. */
	mock.fail_sets_message = true;
	mock_fail_create(RV_OBJ_PD, EPERM, 1);
	assert_int_equal(rv_pd_new(t.ctx, NULL, &pd), -EPERM);
	assert_msg_contains("mock_driver: injected failure creating a PD");

	assert_ptr_equal(ctx, SENTINEL);
	assert_ptr_equal(pd, SENTINEL);
	assert_ptr_equal(cq, SENTINEL);
	assert_ptr_equal(mr, SENTINEL);
	assert_ptr_equal(qp, SENTINEL);
	assert_int_equal(mock_live_total(), live);
	after = dump(t.ctx);
	assert_string_equal(before, after); /* same tree, same reference counts */
	rv_free(before);
	rv_free(after);
	unref_tree(&t);
	end_test();
}

/* ---- argument checking ---- */

static void test_handles__wrong_handle_type_through_a_cast_is_einval_naming_both(void **state)
{
	struct tree t;
	rv_wc wc;
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_mr *mr = SENTINEL;
	char want[96];

	(void)state;
	make_tree(&t);
	struct {
		void *h;
		const char *name;
	} objs[] = {{dev, "device"}, {t.ctx, "context"}, {t.pd, "PD"}, {t.cq, "CQ"}, {t.mr, "MR"}, {t.qp, "QP"}};
	size_t n = sizeof(objs) / sizeof(objs[0]);

	for (size_t i = 0; i < n; i++) {
		for (size_t want_i = 0; want_i < n; want_i++) {
			const char *want_name = objs[want_i].name;
			void *h = objs[i].h;
			int rc;

			if (want_i == i)
				continue;
			switch (want_i) {
			case 0: rc = rv_device_kind_of(h); break;
			case 1: rc = rv_context_query_device(h, &da); break;
			case 2: rc = rv_mr_reg(h, t.buf, 8, 0, &mr); break;
			case 3: rc = rv_cq_poll(h, &wc, 1); break;
			case 4: rc = rv_mr_close(h); break;
			default: rc = rv_qp_state_of(h); break;
			}
			assert_int_equal(rc, -EINVAL);
			snprintf(want, sizeof(want), "expected a %s handle, got a %s handle", want_name, objs[i].name);
			assert_msg_contains(want);
		}
	}
	/* Wrong-type ref/unref/close never touch the object. */
	for (int k = 0; k < 3; k++) {
		assert_null(rv_qp_unref((rv_qp *)t.cq));
		assert_null(rv_context_unref((rv_context *)t.pd));
		assert_null(rv_device_unref((rv_device *)t.ctx));
		assert_ptr_equal(rv_pd_ref((rv_pd *)t.qp), t.qp);
		assert_int_equal(rv_pd_close((rv_pd *)t.qp), -EINVAL);
		assert_int_equal(rv_device_close((rv_device *)t.ctx), -EINVAL);
		assert_int_equal(rv_context_close((rv_context *)dev), -EINVAL);
	}
	assert_int_equal(mock.n_log, 0);
	assert_int_equal(mock.n_poll, 0);
	assert_ptr_equal(mr, SENTINEL);
	unref_tree(&t);
	end_test();
}

static void test_handles__foreign_memory_is_einval_not_a_crash(void **state)
{
	uint64_t junk[64];
	rv_wc wc;

	(void)state;
	memset(junk, 0, sizeof(junk));
	assert_int_equal(rv_qp_state_of((rv_qp *)junk), -EINVAL);
	assert_msg_contains("not an rverbs QP handle");
	assert_int_equal(rv_cq_poll((rv_cq *)junk, &wc, 1), -EINVAL);
	assert_int_equal(rv_pd_close((rv_pd *)junk), -EINVAL);
	assert_null(rv_context_unref((rv_context *)junk));
	memset(junk, 0xff, sizeof(junk));
	assert_int_equal(rv_qp_close((rv_qp *)junk), -EINVAL);
	assert_null(rv_device_name((rv_device *)junk));
	end_test();
}

static void test_handles__null_everywhere_returns_einval_and_never_crashes(void **state)
{
	struct tree t;
	rv_wc wc;
	size_t n = 77;
	rv_sge sge = {0};
	uint8_t gid[16];
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};
	rv_qp_attr qa = {.mask = RV_QP_STATE};
	rv_qp_cap cap;
	rv_endpoint ep;
	void *out = SENTINEL;

	(void)state;
	/* NULL handles. */
	assert_int_equal(rv_device_close(NULL), -EINVAL);
	assert_msg_contains("the device handle is NULL");
	assert_null(rv_device_name(NULL));
	assert_int_equal(rv_device_kind_of(NULL), -EINVAL);
	assert_null(rv_device_unref(NULL));
	assert_int_equal(rv_context_new(NULL, NULL, (rv_context **)&out), -EINVAL);
	assert_int_equal(rv_context_close(NULL), -EINVAL);
	assert_null(rv_context_unref(NULL));
	assert_null(rv_context_device(NULL));
	assert_int_equal(rv_context_query_device(NULL, &da), -EINVAL);
	assert_int_equal(rv_context_query_port(NULL, 1, &pa), -EINVAL);
	assert_int_equal(rv_context_query_gid(NULL, 1, 0, gid), -EINVAL);
	assert_int_equal(rv_context_query_gid_entry(NULL, 1, 0, &(rv_gid_entry){0}), -EINVAL);
	assert_int_equal(rv_context_query_pkey(NULL, 1, 0, &(uint16_t){0}), -EINVAL);
	assert_int_equal(rv_mr_rereg(NULL, RV_REREG_ACCESS, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(rv_context_dump(NULL, (char **)&out), -EINVAL);
	assert_int_equal(rv_pd_new(NULL, NULL, (rv_pd **)&out), -EINVAL);
	assert_msg_contains("the context handle is NULL");
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_null(rv_pd_unref(NULL));
	assert_null(rv_pd_context(NULL));
	assert_int_equal(rv_mr_reg(NULL, &n, 8, 0, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_mr_alloc(NULL, 8, 0, NULL, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_mr_close(NULL), -EINVAL);
	assert_null(rv_mr_unref(NULL));
	assert_null(rv_mr_addr(NULL));
	assert_int_equal(rv_mr_length(NULL), 0);
	assert_int_equal(rv_mr_lkey(NULL), 0);
	assert_int_equal(rv_mr_rkey(NULL), 0);
	assert_null(rv_mr_pd(NULL));
	assert_int_equal(rv_cq_new(NULL, NULL, (rv_cq **)&out), -EINVAL);
	assert_int_equal(rv_cq_close(NULL), -EINVAL);
	assert_null(rv_cq_unref(NULL));
	assert_int_equal(rv_cq_poll(NULL, &wc, 1), -EINVAL);
	assert_int_equal(rv_cq_size(NULL), 0);
	assert_int_equal(rv_qp_new(NULL, NULL, (rv_qp **)&out), -EINVAL);
	assert_int_equal(rv_qp_close(NULL), -EINVAL);
	assert_null(rv_qp_unref(NULL));
	assert_int_equal(rv_qp_num(NULL), 0);
	assert_null(rv_qp_pd(NULL));
	assert_int_equal(rv_qp_get_cap(NULL, &cap), -EINVAL);
	assert_int_equal(rv_qp_modify(NULL, &qa), -EINVAL);
	assert_int_equal(rv_qp_query(NULL, &qa), -EINVAL);
	assert_int_equal(rv_qp_state_of(NULL), -EINVAL);
	assert_int_equal(rv_qp_to_init(NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_to_rtr(NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_to_rts(NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_endpoint(NULL, &ep), -EINVAL);
	assert_int_equal(rv_qp_connect(NULL, &ep), -EINVAL);
	assert_int_equal(rv_qp_post_send(NULL, NULL, 0, &n), -EINVAL);
	assert_int_equal(rv_qp_post_recv(NULL, NULL, 0, &n), -EINVAL);
	assert_int_equal(rv_qp_write(NULL, &sge, 0, 0, 0), -EINVAL);
	assert_int_equal(rv_qp_read(NULL, &sge, 0, 0, 0), -EINVAL);
	assert_int_equal(rv_qp_send(NULL, &sge, 0), -EINVAL);
	assert_int_equal(rv_qp_recv(NULL, &sge, 0), -EINVAL);
	assert_msg_contains("the QP handle is NULL");
	assert_int_equal(n, 0); /* n_posted: nothing was posted, even on a NULL QP (issue 17) */
	assert_ptr_equal(out, SENTINEL);
	rv_free(NULL);
	assert_int_equal(rv_device_list(NULL, NULL), -EINVAL);
	assert_int_equal(rv_device_find(NULL, (rv_device **)&out), -EINVAL);
	assert_int_equal(rv_device_find("mock0", NULL), -EINVAL);
	assert_int_equal(rv_device_default(NULL), -EINVAL);
	assert_ptr_equal(out, SENTINEL);

	/* NULL inputs and outputs on live handles. */
	make_tree(&t);
	assert_int_equal(rv_context_new(dev, NULL, NULL), -EINVAL);
	assert_int_equal(rv_context_new(dev, &(rv_context_attr){.mask = RV_CONTEXT_ATTR_LISTEN_ADDR}, (rv_context **)&out),
			 -EINVAL);
	assert_msg_contains("listen_addr is NULL");
	assert_int_equal(rv_context_query_device(t.ctx, NULL), -EINVAL);
	assert_int_equal(rv_context_query_port(t.ctx, 1, NULL), -EINVAL);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, NULL), -EINVAL);
	assert_int_equal(rv_context_query_gid_entry(t.ctx, 1, 0, NULL), -EINVAL);
	assert_int_equal(rv_context_query_pkey(t.ctx, 1, 0, NULL), -EINVAL);
	/* The mock driver has neither query: a clear EOPNOTSUPP. */
	assert_int_equal(rv_context_query_gid_entry(t.ctx, 1, 0, &(rv_gid_entry){0}), -EOPNOTSUPP);
	assert_msg_contains("cannot report GID types");
	assert_int_equal(rv_context_query_pkey(t.ctx, 1, 0, &(uint16_t){0}), -EOPNOTSUPP);
	assert_msg_contains("no P_Key query");
	assert_int_equal(rv_mr_rereg(t.mr, RV_REREG_ACCESS, NULL, NULL, 0, 0), -EOPNOTSUPP);
	assert_msg_contains("cannot re-register");
	assert_int_equal(rv_context_dump(t.ctx, NULL), -EINVAL);
	assert_int_equal(rv_pd_new(t.ctx, NULL, NULL), -EINVAL);
	assert_int_equal(rv_cq_new(t.ctx, NULL, NULL), -EINVAL);
	assert_int_equal(rv_mr_reg(t.pd, NULL, 8, 0, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("addr is NULL");
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, NULL), -EINVAL);
	assert_int_equal(rv_mr_alloc(t.pd, 8, 0, NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_new(t.pd, NULL, (rv_qp **)&out), -EINVAL);
	assert_msg_contains("RV_QP_INIT_ATTR_SEND_CQ is required");
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ}, (rv_qp **)&out), -EINVAL);
	assert_msg_contains("the CQ handle is NULL");
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = 0, .send_cq = t.cq}, (rv_qp **)&out), -EINVAL);
	assert_msg_contains("RV_QP_INIT_ATTR_SEND_CQ is required");
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t.cq}, NULL),
			 -EINVAL);
	assert_int_equal(rv_cq_poll(t.cq, NULL, 1), -EINVAL);
	assert_int_equal(rv_cq_poll(t.cq, &wc, 0), -EINVAL);
	assert_int_equal(rv_cq_poll(t.cq, &wc, -5), -EINVAL);
	assert_int_equal(rv_qp_get_cap(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_modify(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_query(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_endpoint(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_connect(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_post_send(t.qp, NULL, 1, &n), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(rv_qp_post_recv(t.qp, NULL, 1, NULL), -EINVAL);
	/* Zero work requests: nothing to do, not an error, and the driver is not called. */
	n = 5;
	assert_int_equal(rv_qp_post_send(t.qp, NULL, 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(rv_qp_post_recv(t.qp, &(rv_recv_wr){0}, 0, NULL), 0);
	assert_int_equal(mock.n_post_send + mock.n_post_recv + mock.n_poll, 0);
	assert_ptr_equal(out, SENTINEL);
	assert_int_equal(mock.n_modify, 0);
	unref_tree(&t);
	end_test();
}

static void test_handles__unknown_mask_bits_are_rejected_naming_the_bit(void **state)
{
	struct tree t;
	void *out = SENTINEL;
	rv_device_attr da;
	rv_port_attr pa;
	rv_qp_attr qa;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_context_new(dev, &(rv_context_attr){.mask = 1u << 5}, (rv_context **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x20 in rv_context_attr.mask");
	assert_int_equal(rv_pd_new(t.ctx, &(rv_pd_attr){.mask = 1}, (rv_pd **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x1 in rv_pd_attr.mask");
	assert_int_equal(rv_cq_new(t.ctx, &(rv_cq_attr){.mask = UINT64_C(1) << 40}, (rv_cq **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x10000000000 in rv_cq_attr.mask");
	assert_int_equal(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | (1u << 7), .send_cq = t.cq},
				   (rv_qp **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x80 in rv_qp_init_attr.mask");
	da = (rv_device_attr){.mask = RV_DEVICE_ATTR_ALL | 0x4};
	assert_int_equal(rv_context_query_device(t.ctx, &da), -EINVAL);
	assert_msg_contains("unknown bit 0x4 in rv_device_attr.mask");
	pa = (rv_port_attr){.mask = UINT64_C(1) << 63};
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), -EINVAL);
	assert_msg_contains("unknown bit 0x8000000000000000 in rv_port_attr.mask");
	qa = (rv_qp_attr){.mask = RV_QP_STATE | (UINT64_C(1) << 30)};
	assert_int_equal(rv_qp_query(t.qp, &qa), -EINVAL);
	assert_msg_contains("unknown bit 0x40000000 in rv_qp_attr.mask");
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = UINT64_C(1) << 22}), -EINVAL);
	assert_msg_contains("unknown bit 0x400000 in rv_qp_attr.mask");
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 1u << 9, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("unknown access bit 0x200");
	assert_int_equal(rv_mr_alloc(t.pd, 8, 1u << 31, NULL, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("unknown access bit 0x80000000");
	/* Known bits with invalid values are named too. */
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, RV_ACCESS_REMOTE_WRITE, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("LOCAL_WRITE");
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 0, 0, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("length is 0");
	assert_int_equal(rv_mr_reg(t.pd, (void *)(uintptr_t)-16, 64, 0, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("wraps around");
	assert_int_equal(rv_mr_alloc(t.pd, 0, 0, NULL, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_mr_alloc(t.pd, SIZE_MAX, 0, NULL, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_cq_new(t.ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_CQE, .cqe = 0}, (rv_cq **)&out), -EINVAL);
	assert_msg_contains("cqe is 0");
	assert_int_equal(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE,
						      .qp_type = 9, .send_cq = t.cq},
				   (rv_qp **)&out), -EINVAL);
	assert_msg_contains("qp_type 9");
	assert_int_equal(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP,
						      .send_cq = t.cq},
				   (rv_qp **)&out), -EINVAL);
	assert_msg_contains("both 0");
	assert_int_equal(rv_context_query_port(t.ctx, 0, &(rv_port_attr){.mask = RV_PORT_ATTR_ALL}), -EINVAL);
	assert_msg_contains("port numbers start at 1");
	assert_int_equal(rv_context_query_gid(t.ctx, 1, -1, (uint8_t[16]){0}), -EINVAL);
	assert_int_equal(rv_set_log_level((rv_log_level)4), -EINVAL);
	assert_msg_contains("not an rv_log_level");
	assert_int_equal(rv_set_log_level((rv_log_level)-1), -EINVAL);
	assert_ptr_equal(out, SENTINEL);
	assert_int_equal(mock_live(RV_OBJ_MR), 1);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_new_rejects_cqs_of_another_context(void **state)
{
	struct tree a, b;
	rv_qp *qp = SENTINEL;

	(void)state;
	make_tree(&a);
	make_tree(&b);
	assert_int_equal(rv_qp_new(a.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = b.cq}, &qp),
			 -EINVAL);
	assert_msg_contains("different contexts");
	assert_int_equal(rv_qp_new(a.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ,
						      .send_cq = a.cq, .recv_cq = b.cq},
				   &qp), -EINVAL);
	assert_ptr_equal(qp, SENTINEL);
	unref_tree(&a);
	unref_tree(&b);
	end_test();
}

static void test_handles__outputs_untouched_on_failure(void **state)
{
	struct tree t;
	rv_device_attr da, da_copy;
	rv_port_attr pa, pa_copy;
	rv_qp_attr qa, qa_copy;
	rv_qp_cap cap, cap_copy;
	rv_endpoint ep, ep_copy;
	uint8_t gid[16], gid_copy[16];
	char *text = SENTINEL;
	rv_device *d = SENTINEL;

	(void)state;
	make_tree(&t);
	memset(&da, 0xa5, sizeof(da));
	memset(&pa, 0xa5, sizeof(pa));
	memset(&qa, 0xa5, sizeof(qa));
	memset(&cap, 0xa5, sizeof(cap));
	memset(&ep, 0xa5, sizeof(ep));
	memset(gid, 0xa5, sizeof(gid));
	da.mask = RV_DEVICE_ATTR_ALL;
	pa.mask = RV_PORT_ATTR_ALL;
	qa.mask = RV_QP_STATE;
	da_copy = da;
	pa_copy = pa;
	qa_copy = qa;
	cap_copy = cap;
	ep_copy = ep;
	memcpy(gid_copy, gid, sizeof(gid));

	/* Driver failures. */
	mock.fail_query_errno = EIO;
	assert_int_equal(rv_context_query_device(t.ctx, &da), -EIO);
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), -EIO);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, gid), -EIO);
	assert_int_equal(rv_qp_endpoint(t.qp, &ep), -EIO);
	mock.fail_query_errno = 0;
	assert_int_equal(rv_context_query_port(t.ctx, 2, &pa), -EINVAL);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 3, gid), -EINVAL);
	/* Closed handles. */
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(rv_qp_query(t.qp, &qa), -RV_ECLOSED);
	assert_int_equal(rv_qp_get_cap(t.qp, &cap), -RV_ECLOSED);
	assert_int_equal(rv_qp_endpoint(t.qp, &ep), -RV_ECLOSED);
	assert_int_equal(rv_context_dump((rv_context *)t.pd, &text), -EINVAL);
	assert_int_equal(rv_device_find("no-such-device", &d), -ENODEV);
	assert_msg_contains("no-such-device");
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(rv_context_query_device(t.ctx, &da), -RV_ECLOSED);
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), -RV_ECLOSED);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, gid), -RV_ECLOSED);

	assert_memory_equal(&da, &da_copy, sizeof(da));
	assert_memory_equal(&pa, &pa_copy, sizeof(pa));
	assert_memory_equal(&qa, &qa_copy, sizeof(qa));
	assert_memory_equal(&cap, &cap_copy, sizeof(cap));
	assert_memory_equal(&ep, &ep_copy, sizeof(ep));
	assert_memory_equal(gid, gid_copy, sizeof(gid));
	assert_ptr_equal(text, SENTINEL);
	assert_ptr_equal(d, SENTINEL);
	unref_tree(&t);
	end_test();
}

static void test_handles__query_mask_zero_writes_nothing_and_all_writes_the_mask(void **state)
{
	struct tree t;
	rv_device_attr da;
	rv_port_attr pa;
	uint8_t gid[16];

	(void)state;
	make_tree(&t);
	memset(&da, 0xa5, sizeof(da));
	da.mask = 0;
	assert_int_equal(rv_context_query_device(t.ctx, &da), 0);
	assert_int_equal(da.max_cqe, 0xa5a5a5a5u);
	da.mask = RV_DEVICE_ATTR_ALL;
	assert_int_equal(rv_context_query_device(t.ctx, &da), 0);
	assert_int_equal(da.mask, RV_DEVICE_ATTR_ALL);
	assert_int_equal(da.max_cqe, 65536);
	assert_string_equal(da.fw_ver, "mock 1.0");
	pa.mask = RV_PORT_ATTR_ALL;
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, RV_PORT_ACTIVE);
	assert_int_equal(pa.lid, 7);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, gid), 0);
	assert_int_equal(gid[15], 1);
	unref_tree(&t);
	end_test();
}

/* ---- data path and QP helpers against canned driver results ---- */

static void test_handles__data_path_passes_driver_results_through(void **state)
{
	struct tree t;
	rv_wc wc[8];
	rv_sge sge;
	rv_send_wr swr[3];
	rv_recv_wr rwr[2];
	size_t n;

	(void)state;
	make_tree(&t);
	sge = (rv_sge){.addr = (uintptr_t)t.buf, .length = 16, .lkey = rv_mr_lkey(t.mr)};
	mock.poll_n = 3;
	for (int i = 0; i < 3; i++)
		mock.poll_wc[i] = (rv_wc){.wr_id = 10u + (unsigned)i, .status = RV_WC_SUCCESS, .opcode = RV_WC_SEND};
	assert_int_equal(rv_cq_poll(t.cq, wc, 8), 3);
	assert_int_equal(wc[2].wr_id, 12);
	assert_int_equal(rv_cq_poll(t.cq, wc, 1), 1);
	mock.poll_rc = -EOVERFLOW;
	assert_int_equal(rv_cq_poll(t.cq, wc, 8), -EOVERFLOW);

	memset(swr, 0, sizeof(swr));
	for (int i = 0; i < 3; i++)
		swr[i] = (rv_send_wr){.wr_id = (unsigned)i, .sg_list = &sge, .num_sge = 1, .opcode = RV_WR_SEND};
	assert_int_equal(rv_qp_post_send(t.qp, swr, 3, &n), 0);
	assert_int_equal(n, 3);
	mock.post_limit = 2;
	assert_int_equal(rv_qp_post_send(t.qp, swr, 3, &n), -ENOMEM);
	assert_int_equal(n, 2);
	assert_int_equal(rv_qp_post_send(t.qp, swr, 3, NULL), -ENOMEM);
	memset(rwr, 0, sizeof(rwr));
	rwr[0] = (rv_recv_wr){.wr_id = 99, .sg_list = &sge, .num_sge = 1};
	rwr[1] = rwr[0];
	mock.post_limit = SIZE_MAX;
	assert_int_equal(rv_qp_post_recv(t.qp, rwr, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(mock.last_recv.wr_id, 99);

	assert_int_equal(rv_qp_write(t.qp, &sge, 0x1234, 0x55, 7), 0);
	assert_int_equal(mock.last_send.opcode, RV_WR_RDMA_WRITE);
	assert_int_equal(mock.last_send.remote_addr, 0x1234);
	assert_int_equal(mock.last_send.rkey, 0x55);
	assert_int_equal(mock.last_send.wr_id, 7);
	assert_true(mock.last_send.send_flags & RV_SEND_SIGNALED);
	assert_int_equal(rv_qp_read(t.qp, &sge, 0x99, 0x66, 8), 0);
	assert_int_equal(mock.last_send.opcode, RV_WR_RDMA_READ);
	assert_int_equal(rv_qp_send(t.qp, &sge, 9), 0);
	assert_int_equal(mock.last_send.opcode, RV_WR_SEND);
	assert_int_equal(mock.last_send.num_sge, 1);
	assert_int_equal(rv_qp_send(t.qp, NULL, 10), 0);
	assert_int_equal(mock.last_send.num_sge, 0);
	assert_int_equal(rv_qp_recv(t.qp, &sge, 11), 0);
	assert_int_equal(mock.last_recv.wr_id, 11);
	mock.post_rc = -ENOMEM;
	assert_int_equal(rv_qp_send(t.qp, &sge, 12), -ENOMEM);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_helpers_walk_the_state_machine(void **state)
{
	struct tree t;
	rv_qp_attr qa;
	rv_qp *ud;

	(void)state;
	make_tree(&t);
	/* RC: the helpers fill the required attributes. */
	assert_int_equal(rv_qp_to_rts(t.qp, NULL), -EINVAL);
	assert_msg_contains("RESET -> RTS");
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0);
	assert_int_equal(mock.last_modify.mask,
			 RV_QP_STATE | RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_ACCESS_FLAGS);
	assert_int_equal(mock.last_modify.qp_access_flags, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE |
							   RV_ACCESS_REMOTE_READ | RV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(rv_qp_to_init(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_INIT}), -EINVAL);
	assert_msg_contains("do not set RV_QP_STATE");
	assert_int_equal(rv_qp_to_rtr(t.qp, NULL), -EINVAL);
	assert_msg_contains("RV_QP_AV");
	assert_int_equal(rv_qp_to_rtr(t.qp, &(rv_qp_attr){.mask = RV_QP_AV | RV_QP_DEST_QPN}), -EINVAL);
	assert_msg_contains("RV_QP_RQ_PSN");
	qa = (rv_qp_attr){.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN, .dest_qp_num = 0x42, .rq_psn = 5};
	assert_int_equal(rv_qp_to_rtr(t.qp, &qa), 0);
	assert_int_equal(mock.last_modify.path_mtu, RV_MTU_1024);
	assert_int_equal(mock.last_modify.min_rnr_timer, 12);
	assert_int_equal(mock.last_modify.max_dest_rd_atomic, 16);
	assert_int_equal(rv_qp_to_rts(t.qp, NULL), 0);
	assert_int_equal(mock.last_modify.sq_psn, t.qp->init_psn);
	assert_int_equal(mock.last_modify.timeout, 14);
	assert_int_equal(mock.last_modify.retry_cnt, 7);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	qa = (rv_qp_attr){.mask = RV_QP_STATE | RV_QP_CAP};
	assert_int_equal(rv_qp_query(t.qp, &qa), 0);
	assert_int_equal(qa.qp_state, RV_QPS_RTS);
	assert_int_equal(qa.cap.max_send_wr, 128);

	/* The device moved the QP to ERR by itself: rverbs sees it. */
	mock_qp_force_state(t.qp, RV_QPS_ERR);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_ERR);
	assert_int_equal(rv_qp_to_rts(t.qp, NULL), -EINVAL);
	assert_msg_contains("ERR -> RTS");
	/* A driver refusal leaves the recorded state alone. */
	mock.fail_modify_errno = EPERM;
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET}), -EPERM);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_ERR);
	mock.fail_modify_errno = 0;
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET}), 0);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RESET);

	/* UD: no attributes needed at any step. */
	ud = new_qp_type(t.pd, t.cq, t.cq, RV_QPT_UD);
	assert_int_equal(rv_qp_to_init(ud, NULL), 0);
	assert_int_equal(mock.last_modify.qkey, 0x11111111);
	assert_int_equal(rv_qp_to_rtr(ud, NULL), 0);
	assert_int_equal(rv_qp_to_rts(ud, NULL), 0);
	assert_int_equal(rv_qp_state_of(ud), RV_QPS_RTS);
	assert_int_equal(rv_qp_connect(ud, &(rv_endpoint){.qp_type = RV_QPT_UD}), -EINVAL);
	assert_msg_contains("UD QPs are not connected");
	ud = rv_qp_unref(ud);
	unref_tree(&t);
	end_test();
}

static void test_handles__uc_qp_helpers_use_uc_attributes_and_recover_from_sqe(void **state)
{
	struct tree t;
	rv_qp *uc;
	rv_qp_attr rtr = {.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN, .dest_qp_num = 3, .rq_psn = 4};

	(void)state;
	make_tree(&t);
	uc = new_qp_type(t.pd, t.cq, t.cq, RV_QPT_UC);
	assert_int_equal(rv_qp_to_init(uc, NULL), 0);
	assert_int_equal(mock.last_modify.qp_access_flags, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rv_qp_to_rtr(uc, &rtr), 0);
	assert_int_equal(mock.last_modify.mask, RV_QP_STATE | RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN |
						RV_QP_PATH_MTU);
	assert_int_equal(rv_qp_to_rts(uc, NULL), 0);
	assert_int_equal(mock.last_modify.mask, RV_QP_STATE | RV_QP_SQ_PSN);
	/* A send queue error is recoverable for UC, not for RC. */
	mock_qp_force_state(uc, RV_QPS_SQE);
	assert_int_equal(rv_qp_modify(uc, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RTS}), 0);
	assert_int_equal(rv_qp_state_of(uc), RV_QPS_RTS);
	mock_qp_force_state(t.qp, RV_QPS_SQE);
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RTS}), -EINVAL);
	assert_msg_contains("illegal QP transition SQE -> RTS");
	uc = rv_qp_unref(uc);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_endpoint_and_connect_against_the_mock(void **state)
{
	struct tree t;
	rv_endpoint ep, peer;
	rv_qp *uc;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_qp_endpoint(t.qp, &ep), 0);
	assert_int_equal(ep.qpn, 0x100);
	assert_int_equal(ep.psn, t.qp->init_psn);
	assert_int_equal(ep.lid, 7);
	assert_int_equal(ep.mtu, RV_MTU_1024);
	assert_int_equal(ep.qp_type, RV_QPT_RC);
	assert_int_equal(ep.caps, RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM);
	assert_int_equal(ep.mask, 0);
	assert_int_equal(ep.gid[15], 1);

	peer = ep;
	peer.qpn = 0x777;
	peer.psn = 0x123456;
	peer.mtu = RV_MTU_512;
	/* Bad peers are refused before any transition. */
	uc = new_qp_type(t.pd, t.cq, t.cq, RV_QPT_UC);
	assert_int_equal(rv_qp_connect(uc, &peer), -EINVAL);
	assert_msg_contains("QP type");
	assert_int_equal(rv_qp_connect(t.qp, &(rv_endpoint){.qp_type = RV_QPT_RC, .qpn = 0}), -EINVAL);
	assert_msg_contains("out of range");
	assert_int_equal(rv_qp_connect(t.qp, &(rv_endpoint){.qp_type = RV_QPT_RC, .qpn = 5, .psn = 1u << 24}),
			 -EINVAL);
	assert_int_equal(rv_qp_connect(t.qp, &(rv_endpoint){.qp_type = RV_QPT_RC, .qpn = 5}), -EINVAL);
	assert_msg_contains("no GID");
	assert_int_equal(mock.n_modify, 0);

	assert_int_equal(rv_qp_connect(t.qp, &peer), 0);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	assert_int_equal(mock.n_modify, 3);
	/* Connecting again from RTS is refused with the reason. */
	assert_int_equal(rv_qp_connect(t.qp, &peer), -EINVAL);
	assert_msg_contains("starts from RESET or INIT");
	uc = rv_qp_unref(uc);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_helper_failures_report_their_own_message_not_a_stale_one(void **state)
{
	struct tree t;
	rv_endpoint peer;
	rv_qp_attr rtr = {.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN, .dest_qp_num = 9, .rq_psn = 1};

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_qp_endpoint(t.qp, &peer), 0);
	peer.qpn = 0x55;
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0);
	mock.fail_sets_message = false;
	mock.fail_query_errno = EIO;
#define STALE_THEN(call, name)                                             \
	do {                                                               \
		assert_int_equal(rv_pd_new(NULL, NULL, NULL), -EINVAL);    \
		assert_int_equal(call, -EIO);                              \
		assert_msg_contains(name);                                 \
		assert_msg_contains(strerror(EIO));                        \
	} while (0)
	STALE_THEN(rv_qp_to_rtr(t.qp, &rtr), "rv_qp_to_rtr: querying the device failed");
	STALE_THEN(rv_qp_connect(t.qp, &peer), "rv_qp_connect: querying the port failed");
	STALE_THEN(rv_qp_endpoint(t.qp, &peer), "rv_qp_endpoint: querying the port failed");
	mock.fail_query_errno = 0;
	assert_int_equal(rv_qp_to_rtr(t.qp, &rtr), 0);
	mock.fail_query_errno = EIO;
	STALE_THEN(rv_qp_to_rts(t.qp, NULL), "rv_qp_to_rts: querying the device failed");
#undef STALE_THEN
	mock.fail_query_errno = 0;
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTR);
	unref_tree(&t);
	end_test();
}

static void *error_in_thread(void *arg)
{
	int *ok = arg;

	/* A fresh thread has no message, and its failures stay its own. */
	*ok = rv_error_last()[0] == '\0';
	rv_qp_close(NULL);
	*ok = *ok && strstr(rv_error_last(), "rv_qp_close") != NULL;
	return NULL;
}

static void test_handles__error_message_is_per_thread(void **state)
{
	pthread_t th;
	int ok = 0;

	(void)state;
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(pthread_create(&th, NULL, error_in_thread, &ok), 0);
	pthread_join(th, NULL);
	assert_true(ok);
	assert_msg_contains("rv_pd_close");
	rv_error_clear();
	assert_string_equal(rv_error_last(), "");
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

static void test_handles__endpoint_from_a_qp_survives_pack_and_unpack_and_connects(void **state)
{
	struct tree t;
	rv_qp *peer_qp;
	rv_endpoint ep, back;
	uint8_t wire[RV_ENDPOINT_PACKED_MAX];
	size_t len;

	(void)state;
	make_tree(&t);
	peer_qp = new_qp(t.pd, t.cq2, t.cq2);
	assert_int_equal(rv_qp_endpoint(peer_qp, &ep), 0);
	ep.mask = RV_ENDPOINT_MR;
	ep.mr_addr = (uintptr_t)rv_mr_addr(t.mr);
	ep.mr_length = rv_mr_length(t.mr);
	ep.mr_rkey = rv_mr_rkey(t.mr);
	assert_int_equal(rv_endpoint_pack(&ep, wire, sizeof(wire), &len), 0);
	assert_int_equal(rv_endpoint_unpack(wire, len, &back), 0);
	assert_int_equal(back.qpn, rv_qp_num(peer_qp));
	assert_int_equal(back.mr_rkey, rv_mr_rkey(t.mr));
	assert_int_equal(rv_qp_connect(t.qp, &back), 0);
	assert_int_equal(mock.last_modify.sq_psn, t.qp->init_psn);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	peer_qp = rv_qp_unref(peer_qp);
	unref_tree(&t);
	end_test();
}

/* ---- dump, leaks, logging ---- */

static void test_handles__context_dump_lists_the_tree_with_types_ids_refs_and_state(void **state)
{
	struct tree t;
	char *text, want[96];

	(void)state;
	make_tree(&t);
	text = dump(t.ctx);
	/* user + PD + 2 CQs; the dump's own reference is not shown. */
	snprintf(want, sizeof(want), "context #%" PRIu64 " refs=4 live\n", id_of(t.ctx));
	assert_true(strncmp(text, want, strlen(want)) == 0);
	snprintf(want, sizeof(want), "\n  PD #%" PRIu64 " refs=3 live\n", id_of(t.pd));
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n    MR #%" PRIu64 " refs=1 live\n", id_of(t.mr));
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n    QP #%" PRIu64 " refs=1 live\n", id_of(t.qp));
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n  CQ #%" PRIu64 " refs=2 live\n", id_of(t.cq));
	assert_non_null(strstr(text, want));
	rv_free(text);

	assert_int_equal(rv_pd_close(t.pd), 0);
	text = dump(t.ctx);
	assert_null(strstr(text, "PD #"));
	assert_null(strstr(text, "QP #"));
	snprintf(want, sizeof(want), "\n  CQ #%" PRIu64 " refs=1 live\n", id_of(t.cq));
	assert_non_null(strstr(text, want));
	rv_free(text);

	assert_int_equal(rv_context_close(t.ctx), 0);
	text = dump(t.ctx);
	snprintf(want, sizeof(want), "context #%" PRIu64 " refs=1 closed (closed by rv_context_close)\n",
		 id_of(t.ctx));
	assert_string_equal(text, want);
	rv_free(text);
	unref_tree(&t);
	end_test();
}

static void test_handles__rverbs_debug_leaks_reports_referenced_handles_through_the_log_handler(void **state)
{
	struct tree t;
	struct log_capture cap = {0};
	char want[96];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	make_tree(&t);
	/* Without RVERBS_DEBUG: no leak lines. */
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_null(strstr(cap.text, "leak"));

	setenv("RVERBS_DEBUG", "leaks", 1);
	assert_int_equal(rv_context_close(t.ctx), 0);
	snprintf(want, sizeof(want), "%d leak: CQ #%" PRIu64 " still has", RV_LOG_WARN, id_of(t.cq));
	assert_non_null(strstr(cap.text, want));
	snprintf(want, sizeof(want), "leak: CQ #%" PRIu64 " still has", id_of(t.cq2));
	assert_non_null(strstr(cap.text, want));
	assert_null(strstr(cap.text, "leak: PD")); /* already closed: not a dependent any more */

	/* A context closed with nothing referenced reports nothing. */
	rv_context *c2;
	size_t len = cap.len;
	assert_int_equal(rv_context_new(dev, NULL, &c2), 0);
	assert_int_equal(rv_context_close(c2), 0);
	c2 = rv_context_unref(c2);
	assert_int_equal(cap.len, len);
	unsetenv("RVERBS_DEBUG");
	rv_set_log_handler(NULL, NULL);
	unref_tree(&t);
	end_test();
}

static void test_handles__log_handler_gets_errors_at_debug_level_only_when_asked(void **state)
{
	struct log_capture cap = {0};

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(cap.lines, 0); /* default level WARN: errors are not logged */
	assert_int_equal(rv_set_log_level(RV_LOG_DEBUG), 0);
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(cap.lines, 1);
	assert_non_null(strstr(cap.text, "3 rv_pd_close: the PD handle is NULL"));
	rv_set_log_handler(NULL, NULL);
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(cap.lines, 1);
	assert_int_equal(rv_set_log_level(RV_LOG_WARN), 0);
	end_test();
}

static void test_handles__destroy_failure_is_logged_as_an_error(void **state)
{
	struct tree t;
	struct log_capture cap = {0};
	char want[128];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	snprintf(want, sizeof(want), "%d destroying QP #%" PRIu64 " failed", RV_LOG_ERROR, id_of(t.qp));
	t.qp = rv_qp_unref(t.qp);
	assert_non_null(strstr(cap.text, want));
	assert_non_null(strstr(cap.text, "can be retried"));
	rv_set_log_handler(NULL, NULL);
	unref_tree(&t);
	/* The zombie pins nothing: the first of its parents released retried it. */
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(mock.destroyed[RV_OBJ_QP], 1);
	end_test();
}

/* Run fn with stdout and stderr redirected to a file; return how many bytes were written. */
static long run_capturing_stdio(void (*fn)(void))
{
	char path[] = "/tmp/rverbs-test-stdio-XXXXXX";
	int fd = mkstemp(path), out, err;
	struct stat st;

	assert_true(fd >= 0);
	unlink(path);
	fflush(stdout);
	fflush(stderr);
	out = dup(1);
	err = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	fn();
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	return (long)st.st_size;
}

static void noisy_operations(void)
{
	struct tree t;
	char *text;

	rv_set_log_handler(NULL, NULL);
	rv_set_log_level(RV_LOG_DEBUG);
	setenv("RVERBS_DEBUG", "leaks", 1);
	make_tree(&t);
	rv_pd_close(NULL);
	rv_qp_state_of((rv_qp *)t.cq);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	rv_pd_close(t.pd);
	rv_context_close(t.ctx); /* leaks reported, nowhere to go */
	rv_qp_state_of(t.qp);
	rv_context_dump(t.ctx, &text);
	rv_free(text);
	rv_device_close(dev);
	unref_tree(&t);
	unsetenv("RVERBS_DEBUG");
	rv_set_log_level(RV_LOG_WARN);
}

static void test_handles__library_never_writes_to_stdout_or_stderr_by_itself(void **state)
{
	(void)state;
	assert_int_equal(run_capturing_stdio(noisy_operations), 0);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_handles__create_then_unref_children_first_frees_everything),
		T(test_handles__unref_parents_first_keeps_children_usable),
		T(test_handles__extra_references_are_released_by_extra_unrefs),
		T(test_handles__context_close_closes_qps_before_cqs_mrs_before_pds_all_before_context),
		T(test_handles__pd_close_cascades_to_qp_then_mr),
		T(test_handles__cq_close_cascades_to_every_qp_using_it),
		T(test_handles__mr_close_closes_only_the_mr),
		T(test_handles__mw_on_a_device_without_windows),
		T(test_handles__device_close_closes_every_context_and_its_tree),
		T(test_handles__close_twice_returns_zero_and_destroys_once),
		T(test_handles__cascade_close_reason_names_the_closed_parent),
		T(test_handles__explicit_close_reason_names_the_call),
		T(test_handles__every_call_on_a_closed_qp_returns_eclosed),
		T(test_handles__every_call_on_a_closed_cq_returns_eclosed),
		T(test_handles__every_call_on_a_closed_pd_and_mr_returns_eclosed),
		T(test_handles__every_call_on_a_closed_context_returns_eclosed),
		T(test_handles__getters_on_live_handles),
		T(test_handles__getters_on_closed_handles_follow_the_headers),
		T(test_handles__close_then_unref_frees_at_the_last_unref),
		T(test_handles__unref_then_parent_close),
		T(test_handles__unref_of_a_closed_parent_after_its_children),
		T(test_handles__context_close_with_a_pd_pinned_only_by_its_children),
		T(test_handles__closing_a_closed_handle_whose_context_is_freed_returns_zero),
		T(test_handles__random_orders_of_close_and_unref_never_leak_or_double_destroy),
		T(test_handles__random_orders_with_failing_destroys_retry_or_reap_every_object),
		T(test_handles__concurrent_ref_unref_keeps_counts_exact),
		T(test_handles__failed_qp_destroy_makes_pd_close_fail_and_keeps_pd_and_qp_live),
		T(test_handles__failed_destroy_keeps_what_was_already_closed_closed),
		T(test_handles__qp_close_failure_is_retryable),
		T(test_handles__zombie_qp_is_destroyed_and_freed_by_pd_close),
		T(test_handles__zombie_whose_retry_fails_again_stays_tracked),
		T(test_handles__zombie_is_freed_by_cq_close_and_by_device_close),
		T(test_handles__failed_destroy_without_driver_message_gets_a_generic_one),
		T(test_handles__device_close_failure_is_retryable_with_a_fresh_message),
		T(test_handles__failed_pd_destroy_after_its_children_leaves_the_pd_live_and_retryable),
		T(test_handles__pd_pinned_by_children_becomes_a_zombie_when_its_destroy_fails_in_a_cascade),
		T(test_handles__device_close_stops_at_the_first_context_that_fails),
		T(test_handles__context_whose_destroy_fails_at_last_unref_is_logged_and_reaped_by_device_close),
		T(test_handles__create_failures_leave_outputs_parents_and_driver_untouched),
		T(test_handles__wrong_handle_type_through_a_cast_is_einval_naming_both),
		T(test_handles__foreign_memory_is_einval_not_a_crash),
		T(test_handles__null_everywhere_returns_einval_and_never_crashes),
		T(test_handles__unknown_mask_bits_are_rejected_naming_the_bit),
		T(test_handles__qp_new_rejects_cqs_of_another_context),
		T(test_handles__outputs_untouched_on_failure),
		T(test_handles__query_mask_zero_writes_nothing_and_all_writes_the_mask),
		T(test_handles__data_path_passes_driver_results_through),
		T(test_handles__qp_helpers_walk_the_state_machine),
		T(test_handles__uc_qp_helpers_use_uc_attributes_and_recover_from_sqe),
		T(test_handles__qp_endpoint_and_connect_against_the_mock),
		T(test_handles__qp_helper_failures_report_their_own_message_not_a_stale_one),
		T(test_handles__error_message_is_per_thread),
		T(test_handles__concurrent_create_close_unref_in_one_context),
		T(test_handles__endpoint_from_a_qp_survives_pack_and_unpack_and_connects),
		T(test_handles__context_dump_lists_the_tree_with_types_ids_refs_and_state),
		T(test_handles__rverbs_debug_leaks_reports_referenced_handles_through_the_log_handler),
		T(test_handles__log_handler_gets_errors_at_debug_level_only_when_asked),
		T(test_handles__destroy_failure_is_logged_as_an_error),
		T(test_handles__library_never_writes_to_stdout_or_stderr_by_itself),
#undef T
	};

	return cmocka_run_group_tests_name("core: handles", tests, NULL, NULL);
}
