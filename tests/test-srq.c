/*
 * Shared receive queues, asynchronous events and CQ resize in the facade,
 * against the mock driver: handle rules (NULL, wrong type, closed), the
 * ownership edges SRQ -> PD and QP -> SRQ with their cascades, argument
 * checks with their messages, and the calls a driver without an event queue
 * refuses. Every case ends with nothing live in the mock, nothing destroyed
 * twice or out of order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mock-driver.h"

static rv_device *dev;

static void assert_msg_contains(const char *fragment)
{
	const char *msg = rv_error_last();

	if (!strstr(msg, fragment))
		fail_msg("rv_error_last() is \"%s\"; expected it to contain \"%s\"", msg, fragment);
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	return mock_device_new("mock0", &dev);
}

static int teardown(void **state)
{
	(void)state;
	dev = rv_device_unref(dev);
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.order_violations, 0);
	assert_int_equal(mock.contract_violations, 0);
	assert_int_equal(mock_live_total(), 0);
	return 0;
}

struct tree {
	rv_context *ctx;
	rv_pd *pd, *pd2;
	rv_cq *cq;
	rv_srq *srq;
	rv_qp *qp_srq[2], *qp_plain;
};

static rv_qp *new_qp(struct tree *t, rv_srq *srq)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t->cq};
	rv_qp *qp = NULL;

	if (srq) {
		qa.mask |= RV_QP_INIT_ATTR_SRQ;
		qa.srq = srq;
	}
	assert_int_equal(rv_qp_new(t->pd, &qa, &qp), 0);
	return qp;
}

static void make_tree(struct tree *t)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(rv_context_new(dev, NULL, &t->ctx), 0);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd), 0);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd2), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq), 0);
	assert_int_equal(rv_srq_new(t->pd, NULL, &t->srq), 0);
	t->qp_srq[0] = new_qp(t, t->srq);
	t->qp_srq[1] = new_qp(t, t->srq);
	t->qp_plain = new_qp(t, NULL);
}

static void unref_tree(struct tree *t)
{
	rv_qp_unref(t->qp_srq[0]);
	rv_qp_unref(t->qp_srq[1]);
	rv_qp_unref(t->qp_plain);
	rv_srq_unref(t->srq);
	rv_cq_unref(t->cq);
	rv_pd_unref(t->pd);
	rv_pd_unref(t->pd2);
	rv_context_unref(t->ctx);
}

static void test_srq__defaults_and_query(void **state)
{
	struct tree t;
	rv_srq_attr a;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_srq_query(t.srq, &a), 0);
	assert_int_equal(a.max_wr, 128);
	assert_int_equal(a.max_sge, 1);
	assert_int_equal(a.srq_limit, 0);
	assert_ptr_equal(rv_srq_pd(t.srq), t.pd);
	assert_ptr_equal(rv_srq_ref(t.srq), t.srq);
	assert_null(rv_srq_unref(t.srq));
	assert_null(rv_srq_unref(NULL));
	assert_null(rv_srq_ref(NULL));
	unref_tree(&t);
}

static void test_srq__closing_the_srq_closes_only_its_qps(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_srq_close(t.srq), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rv_qp_state_of(t.qp_srq[i]), -RV_ECLOSED);
		assert_msg_contains("closed because its SRQ");
		assert_true(mock_destroy_index(t.qp_srq[i]) < mock_destroy_index(t.srq));
	}
	assert_int_equal(rv_qp_state_of(t.qp_plain), RV_QPS_RESET);
	assert_int_equal(rv_srq_close(t.srq), 0); /* twice: nothing more */
	assert_int_equal(mock_destroy_count(t.srq), 1);
	unref_tree(&t);
}

static void test_srq__closing_the_pd_closes_qps_then_the_srq(void **state)
{
	struct tree t;
	rv_srq_attr a;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_true(mock_destroy_index(t.qp_srq[0]) < mock_destroy_index(t.srq));
	assert_true(mock_destroy_index(t.qp_srq[1]) < mock_destroy_index(t.srq));
	assert_true(mock_destroy_index(t.srq) < mock_destroy_index(t.pd));
	assert_int_equal(rv_srq_query(t.srq, &a), -RV_ECLOSED);
	assert_msg_contains("closed because its PD");
	unref_tree(&t);
}

static void test_srq__unref_keeps_it_alive_for_its_qps(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	{
	rv_srq *s = t.srq;
	rv_srq_attr a;

	t.srq = rv_srq_unref(t.srq);
	/* The QPs hold it: still live, destroyed only after the last QP. */
	assert_int_equal(mock_destroy_count(s), 0);
	assert_int_equal(rv_srq_query(s, &a), 0);
	rv_qp_unref(t.qp_srq[0]);
	t.qp_srq[0] = NULL;
	assert_int_equal(mock_destroy_count(s), 0);
	rv_qp_unref(t.qp_srq[1]);
	t.qp_srq[1] = NULL;
	assert_int_equal(mock_destroy_count(s), 1);
	}
	unref_tree(&t);
}

static void test_srq__argument_checks(void **state)
{
	struct tree t;
	rv_srq *s = (rv_srq *)(uintptr_t)0x1;
	rv_srq_attr a = {.mask = 1u << 9};
	rv_recv_wr wr = {.wr_id = 1, .sg_list = NULL, .num_sge = 0, .reserved = 0};
	rv_qp_init_attr qa;
	rv_qp *qp = NULL;
	size_t posted = 7;

	(void)state;
	make_tree(&t);
	s = NULL;
	assert_int_equal(rv_srq_new(NULL, NULL, &s), -EINVAL);
	assert_int_equal(rv_srq_new(t.pd, NULL, NULL), -EINVAL);
	assert_int_equal(rv_srq_new(t.pd, &a, &s), -EINVAL);
	assert_msg_contains("unknown bit");
	a = (rv_srq_attr){.mask = RV_SRQ_INIT_ATTR_MAX_WR, .max_wr = 0};
	assert_int_equal(rv_srq_new(t.pd, &a, &s), -EINVAL);
	a = (rv_srq_attr){.mask = RV_SRQ_INIT_ATTR_MAX_WR, .max_wr = 5000};
	assert_int_equal(rv_srq_new(t.pd, &a, &s), -EINVAL);
	assert_msg_contains("max_srq_wr 4096");
	a = (rv_srq_attr){.mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_LIMIT, .max_wr = 8, .srq_limit = 8};
	assert_int_equal(rv_srq_new(t.pd, &a, &s), -EINVAL);
	assert_msg_contains("below max_wr");
	assert_null(s);
	/* Wrong handle types. */
	assert_int_equal(rv_srq_post_recv((rv_srq *)(void *)t.qp_plain, &wr, 1, NULL), -EINVAL);
	assert_msg_contains("expected a SRQ handle");
	assert_int_equal(rv_srq_close((rv_srq *)(void *)t.pd), -EINVAL);
	/* Posting. */
	assert_int_equal(rv_srq_post_recv(t.srq, NULL, 1, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_int_equal(rv_srq_post_recv(t.srq, &wr, 0, NULL), -EINVAL);
	assert_int_equal(rv_srq_post_recv(t.srq, &wr, 1, &posted), 0);
	assert_int_equal(posted, 1);
	assert_int_equal(mock.n_post_srq_recv, 1);
	/* A QP with an SRQ refuses its own receives, naming the SRQ call. */
	assert_int_equal(rv_qp_post_recv(t.qp_srq[0], &wr, 1, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_msg_contains("rv_srq_post_recv");
	assert_int_equal(rv_qp_recv(t.qp_srq[0], NULL, 1), -EINVAL);
	assert_int_equal(mock.n_post_recv, 0);
	/* Modify. */
	assert_int_equal(rv_srq_modify(t.srq, NULL), -EINVAL);
	a = (rv_srq_attr){.mask = 0};
	assert_int_equal(rv_srq_modify(t.srq, &a), -EINVAL);
	assert_msg_contains("RV_SRQ_LIMIT");
	a = (rv_srq_attr){.mask = RV_SRQ_LIMIT, .srq_limit = 128};
	assert_int_equal(rv_srq_modify(t.srq, &a), -EINVAL);
	a = (rv_srq_attr){.mask = RV_SRQ_LIMIT, .srq_limit = 16};
	assert_int_equal(rv_srq_modify(t.srq, &a), 0);
	assert_int_equal(rv_srq_query(t.srq, &a), 0);
	assert_int_equal(a.srq_limit, 16);
	assert_int_equal(rv_srq_query(t.srq, NULL), -EINVAL);
	/* A QP's SRQ must share its PD and be live. */
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ;
	qa.send_cq = t.cq;
	qa.srq = t.srq;
	assert_int_equal(rv_qp_new(t.pd2, &qa, &qp), -EINVAL);
	assert_msg_contains("another PD");
	qa.srq = NULL;
	assert_int_equal(rv_qp_new(t.pd, &qa, &qp), -EINVAL);
	assert_null(qp);
	assert_int_equal(rv_srq_close(t.srq), 0);
	qa.srq = t.srq;
	assert_int_equal(rv_qp_new(t.pd, &qa, &qp), -RV_ECLOSED);
	assert_int_equal(rv_srq_post_recv(t.srq, &wr, 1, NULL), -RV_ECLOSED);
	assert_int_equal(rv_srq_modify(t.srq, &a), -RV_ECLOSED);
	assert_null(rv_srq_pd(t.srq));
	unref_tree(&t);
}

static void test_srq__failed_create_leaves_nothing(void **state)
{
	struct tree t;
	rv_srq *s = NULL;

	(void)state;
	make_tree(&t);
	mock_fail_create(RV_OBJ_SRQ, ENOMEM, 1);
	assert_int_equal(rv_srq_new(t.pd, NULL, &s), -ENOMEM);
	assert_null(s);
	assert_int_equal(mock_live(RV_OBJ_SRQ), 1);
	unref_tree(&t);
}

static void test_srq__refused_destroy_keeps_it_and_the_close_retries(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_SRQ, EBUSY, 1);
	assert_int_equal(rv_srq_close(t.srq), -EBUSY);
	/* Its QPs were closed first; the SRQ stays live and tracked. */
	assert_int_equal(rv_qp_state_of(t.qp_srq[0]), -RV_ECLOSED);
	assert_int_equal(rv_srq_modify(t.srq, &(rv_srq_attr){.mask = RV_SRQ_LIMIT, .srq_limit = 1}), 0);
	assert_int_equal(rv_srq_close(t.srq), 0);
	assert_int_equal(mock_destroy_count(t.srq), 1);
	unref_tree(&t);
}

static void test_events__a_driver_without_an_event_queue_says_so(void **state)
{
	struct tree t;
	rv_async_event ev;

	(void)state;
	make_tree(&t);
	memset(&ev, 0x5a, sizeof(ev));
	assert_int_equal(rv_context_async_fd(t.ctx), -EOPNOTSUPP);
	assert_msg_contains("no asynchronous event queue");
	assert_int_equal(rv_context_get_async_event(t.ctx, &ev, 0), -EOPNOTSUPP);
	assert_int_equal(ev.type, 0x5a5a5a5au); /* untouched on failure */
	assert_int_equal(rv_context_get_async_event(t.ctx, NULL, 0), -EINVAL);
	assert_int_equal(rv_context_async_fd((rv_context *)(void *)t.pd), -EINVAL);
	assert_string_equal(rv_async_event_str(RV_EVENT_PORT_ACTIVE), "PORT_ACTIVE");
	assert_string_equal(rv_async_event_str(RV_EVENT_GID_CHANGE), "GID_CHANGE");
	assert_string_equal(rv_async_event_str(19), "UNKNOWN");
	rv_async_event_ack(NULL);
	unref_tree(&t);
}

static void test_cq__resize_checks_and_reaches_the_driver(void **state)
{
	struct tree t;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_cq_resize(t.cq, 0), -EINVAL);
	assert_int_equal(rv_cq_resize(NULL, 8), -EINVAL);
	assert_int_equal(rv_cq_resize(t.cq, 1000), 0);
	assert_int_equal(rv_cq_size(t.cq), 1000);
	assert_int_equal(rv_cq_close(t.cq), 0);
	assert_int_equal(rv_cq_resize(t.cq, 8), -RV_ECLOSED);
	unref_tree(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_srq__defaults_and_query, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq__closing_the_srq_closes_only_its_qps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq__closing_the_pd_closes_qps_then_the_srq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq__unref_keeps_it_alive_for_its_qps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq__argument_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq__failed_create_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq__refused_destroy_keeps_it_and_the_close_retries, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_events__a_driver_without_an_event_queue_says_so, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cq__resize_checks_and_reaches_the_driver, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
