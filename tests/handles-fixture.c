/*
 * The fixture of the handle tests (handles-fixture.h): the mock device of
 * each case and the helpers the cases share.
 */
#include "handles-fixture.h"

rv_device *dev;

void assert_msg_contains(const char *fragment)
{
	const char *msg = rv_error_last();

	if (!strstr(msg, fragment))
		fail_msg("rv_error_last() is \"%s\"; expected it to contain \"%s\"", msg, fragment);
}

void assert_closed_rc(int rc, const char *fragment)
{
	assert_int_equal(rc, -RV_ECLOSED);
	assert_msg_contains("is closed");
	if (fragment)
		assert_msg_contains(fragment);
}

void assert_mock_sane(void)
{
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.order_violations, 0);
	assert_int_equal(mock.contract_violations, 0);
}

/* Release the test's device and check that nothing is left. */
void end_test(void)
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

int handles_setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	rv_set_log_handler(NULL, NULL);
	rv_set_log_level(RV_LOG_WARN);
	unsetenv("RVERBS_DEBUG");
	return mock_device_new("mock0", &dev);
}

int handles_teardown(void **state)
{
	(void)state;
	rv_set_log_handler(NULL, NULL);
	unsetenv("RVERBS_DEBUG");
	mock_reset();
	return 0;
}

uint64_t id_of(const void *h)
{
	return RV_COBJ(h)->id;
}

rv_qp *new_qp_type(rv_pd *pd, rv_cq *scq, rv_cq *rcq, uint32_t type)
{
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ | RV_QP_INIT_ATTR_TYPE,
			     .qp_type = type, .send_cq = scq, .recv_cq = rcq};
	rv_qp *qp = NULL;

	assert_int_equal(rv_qp_new(pd, &a, &qp), 0);
	assert_non_null(qp);
	return qp;
}

rv_qp *new_qp(rv_pd *pd, rv_cq *scq, rv_cq *rcq)
{
	return new_qp_type(pd, scq, rcq, RV_QPT_RC);
}

void make_tree(struct tree *t)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(rv_context_new(dev, NULL, &t->ctx), 0);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq2), 0);
	assert_int_equal(rv_mr_reg(t->pd, t->buf, sizeof(t->buf), RV_ACCESS_LOCAL_WRITE, &t->mr), 0);
	t->qp = new_qp(t->pd, t->cq, t->cq2);
}

void unref_tree(struct tree *t)
{
	t->qp = rv_qp_unref(t->qp);
	t->mr = rv_mr_unref(t->mr);
	t->cq2 = rv_cq_unref(t->cq2);
	t->cq = rv_cq_unref(t->cq);
	t->pd = rv_pd_unref(t->pd);
	t->ctx = rv_context_unref(t->ctx);
}

void assert_before(const void *first, const void *then)
{
	long a = mock_destroy_index(first), b = mock_destroy_index(then);

	assert_true(a >= 0);
	assert_true(b >= 0);
	if (a >= b)
		fail_msg("%s #%" PRIu64 " was destroyed at %ld, not before %s #%" PRIu64 " (at %ld)",
			 rv_obj_type_name(RV_COBJ(first)->cls->type), id_of(first), a,
			 rv_obj_type_name(RV_COBJ(then)->cls->type), id_of(then), b);
}

char *dump(rv_context *ctx)
{
	char *text = NULL;

	assert_int_equal(rv_context_dump(ctx, &text), 0);
	assert_non_null(text);
	return text;
}

void capture_log(rv_log_level level, const char *msg, void *user)
{
	struct log_capture *c = user;
	int n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "%d %s\n", (int)level, msg);

	if (n > 0 && c->len + (size_t)n < sizeof(c->text))
		c->len += (size_t)n;
	c->lines++;
}
