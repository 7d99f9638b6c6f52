/*
 * Failed destroys, against the mock driver: a close that fails leaves what it
 * could not destroy live and retryable, with a message naming it; an object
 * whose destroy fails at its last unref becomes a zombie that its parent's
 * close or release retries. (test-zombies.c covers programs that only unref.)
 *
 * Every case ends with end_test() (handles-fixture.h).
 */
#include "handles-fixture.h"

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

/* A parent domain whose destroy fails keeps its TD open (the TD's close
 * fails with it); the retry closes both, each once. */
static void test_handles__failed_parent_domain_destroy_keeps_its_td_live_and_retryable(void **state)
{
	struct tree t;
	rv_td *td;
	rv_pd *pdom;
	rv_pd_attr pa;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_td_new(t.ctx, NULL, &td), 0);
	pa = (rv_pd_attr){.mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = t.pd, .td = td};
	assert_int_equal(rv_pd_new(t.ctx, &pa, &pdom), 0);
	mock_fail_destroy(RV_OBJ_PD, EBUSY, 1);
	assert_int_equal(rv_td_close(td), -EBUSY);
	assert_int_equal(mock.n_log, 0);
	assert_ptr_equal(rv_td_context(td), t.ctx);
	assert_ptr_equal(rv_pd_parent(pdom), t.pd);
	assert_int_equal(rv_td_close(td), 0);
	assert_int_equal(mock_destroy_count(pdom), 1);
	assert_int_equal(mock_destroy_count(td), 1);
	assert_null(rv_pd_parent(pdom));
	assert_ptr_equal(rv_pd_context(t.pd), t.ctx);
	pdom = rv_pd_unref(pdom);
	td = rv_td_unref(td);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		HANDLES_TEST(test_handles__failed_qp_destroy_makes_pd_close_fail_and_keeps_pd_and_qp_live),
		HANDLES_TEST(test_handles__failed_parent_domain_destroy_keeps_its_td_live_and_retryable),
		HANDLES_TEST(test_handles__failed_destroy_keeps_what_was_already_closed_closed),
		HANDLES_TEST(test_handles__qp_close_failure_is_retryable),
		HANDLES_TEST(test_handles__zombie_qp_is_destroyed_and_freed_by_pd_close),
		HANDLES_TEST(test_handles__zombie_whose_retry_fails_again_stays_tracked),
		HANDLES_TEST(test_handles__zombie_is_freed_by_cq_close_and_by_device_close),
		HANDLES_TEST(test_handles__failed_destroy_without_driver_message_gets_a_generic_one),
		HANDLES_TEST(test_handles__device_close_failure_is_retryable_with_a_fresh_message),
		HANDLES_TEST(test_handles__failed_pd_destroy_after_its_children_leaves_the_pd_live_and_retryable),
		HANDLES_TEST(test_handles__pd_pinned_by_children_becomes_a_zombie_when_its_destroy_fails_in_a_cascade),
		HANDLES_TEST(test_handles__device_close_stops_at_the_first_context_that_fails),
		HANDLES_TEST(test_handles__context_whose_destroy_fails_at_last_unref_is_logged_and_reaped_by_device_close),
	};

	return cmocka_run_group_tests_name("core: destroy-retry", tests, NULL, NULL);
}
