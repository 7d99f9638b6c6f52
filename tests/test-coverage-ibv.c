/*
 * The libibverbs driver's failure paths that test-ibv-driver.c leaves out
 * (found with scripts/coverage), against the mock libibverbs: every hint a
 * refused QP transition can give, a failing ibv_query_qp, PD allocation and
 * deallocation failures, QP types the device refuses, MR registration hints,
 * the open-failure hints, completion channels, and the driver's raw op.
 * Every case ends with no verbs object left in the mock.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rverbs/ibv.h>

#include "driver.h"

#include "test-ibv-mock.c"

static rv_device *dev;
static rv_context *ctx;
static rv_pd *pd;
static rv_cq *cq;
static rv_qp *qp;

#define assert_msg(s)                                                                              \
	do {                                                                                       \
		if (!strstr(rv_error_last(), (s)))                                                 \
			fail_msg("rv_error_last() is \"%s\"; expected \"%s\" in it", rv_error_last(), \
				 (s));                                                             \
	} while (0)

static int setup(void **state)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};

	(void)state;
	memset(&mock, 0, sizeof(mock));
	mock.port_state = IBV_PORT_ACTIVE;
	mock.next_qpn = 0x100;
	unsetenv("RVERBS_DEVICE");
	rv_error_clear();
	if (rv_device_find("mock_0", &dev) < 0 || rv_context_new(dev, NULL, &ctx) < 0 ||
	    rv_pd_new(ctx, NULL, &pd) < 0 || rv_cq_new(ctx, NULL, &cq) < 0)
		return -1;
	qa.send_cq = cq;
	return rv_qp_new(pd, &qa, &qp) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	mock_devs[0].transport_type = IBV_TRANSPORT_IB;
	assert_int_equal(rv_context_close(ctx), 0);
	qp = rv_qp_unref(qp);
	cq = rv_cq_unref(cq);
	pd = rv_pd_unref(pd);
	ctx = rv_context_unref(ctx);
	dev = rv_device_unref(dev);
	assert_int_equal(mock.qp_out, 0);
	assert_int_equal(mock.cq_out, 0);
	assert_int_equal(mock.mr_out, 0);
	assert_int_equal(mock.pd_out, 0);
	assert_int_equal(mock.ctx_out, 0);
	assert_int_equal(mock.lists_out, 0);
	return 0;
}

static void rtr_attr(rv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
	a->dest_qp_num = 0x999;
	a->ah_attr.port_num = 1;
	a->ah_attr.is_global = 1;
	a->ah_attr.dgid[15] = 1;
}

/* Each refused RTR names the likeliest reason for this port, and the QP stays. */
static void test_coverage_ibv__refused_rtr_hints(void **state)
{
	rv_qp_attr a;

	(void)state;
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);

	/* sgid_index past the GID table (2 entries). */
	rtr_attr(&a);
	a.ah_attr.sgid_index = 5;
	mock.modify_errno = EINVAL;
	assert_int_equal(rv_qp_to_rtr(qp, &a), -EINVAL);
	assert_msg("ibv_modify_qp(QP 257, INIT -> RTR) on mock_0");
	assert_msg("sgid_index 5 is past the GID table of port 1 (2 entries)");

	/* A path MTU above the active one (1024). */
	rtr_attr(&a);
	a.mask |= RV_QP_PATH_MTU;
	a.path_mtu = RV_MTU_4096;
	assert_int_equal(rv_qp_to_rtr(qp, &a), -EINVAL);
	assert_msg("path_mtu 4096 exceeds the active MTU 1024 of port 1");

	/* Anything but EINVAL on RoCE: the peer's address did not resolve. */
	rtr_attr(&a);
	mock.modify_errno = ETIMEDOUT;
	assert_int_equal(rv_qp_to_rtr(qp, &a), -ETIMEDOUT);
	assert_msg("resolves the peer GID to a MAC address");

	/* A well-formed AV refused with EINVAL: the rd_atomic limits (rv_qp_to_rtr
	 * asks for max_dest_rd_atomic). */
	rtr_attr(&a);
	mock.modify_errno = EINVAL;
	assert_int_equal(rv_qp_to_rtr(qp, &a), -EINVAL);
	assert_msg("rd_atomic: requested 0/16, the device allows 16 as initiator and 16 as target");

	mock.modify_errno = 0;
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_INIT);
}

static void test_coverage_ibv__refused_rts_and_port_hints(void **state)
{
	rv_qp_attr a;

	(void)state;
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);
	/* INIT -> INIT naming a port the device does not have. */
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_PORT;
	a.port_num = 3;
	mock.modify_errno = EINVAL;
	assert_int_equal(rv_qp_modify(qp, &a), -EINVAL);
	assert_msg("INIT -> same state");
	assert_msg("check port_num (3): ports are numbered from 1");
	/* The same on port 1, refused anyway: the generic hint. */
	a.port_num = 1;
	assert_int_equal(rv_qp_modify(qp, &a), -EINVAL);
	assert_msg("an attribute is missing, forbidden or out of range for this transition");
	mock.modify_errno = 0;

	rtr_attr(&a);
	assert_int_equal(rv_qp_to_rtr(qp, &a), 0);

	/* rd_atomic out of range: the device's limits are named. */
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_MAX_QP_RD_ATOMIC;
	a.max_rd_atomic = 200;
	mock.modify_errno = EINVAL;
	assert_int_equal(rv_qp_to_rts(qp, &a), -EINVAL);
	assert_msg("rd_atomic: requested 200/");
	assert_msg("allows 16 as initiator and 16 as target");

	/* The port is down. */
	mock.port_state = IBV_PORT_DOWN;
	memset(&a, 0, sizeof(a));
	assert_int_equal(rv_qp_to_rts(qp, &a), -EINVAL);
	assert_msg("RTR -> RTS");
	assert_msg("port 1 is not ACTIVE");
	mock.port_state = IBV_PORT_ACTIVE;

	/* iWARP: no RTR/RTS through ibv_modify_qp at all. */
	mock_devs[0].transport_type = IBV_TRANSPORT_IWARP;
	memset(&a, 0, sizeof(a));
	assert_int_equal(rv_qp_to_rts(qp, &a), -EINVAL);
	assert_msg("mock_0 is an iWARP device");
	mock_devs[0].transport_type = IBV_TRANSPORT_IB;

	mock.modify_errno = 0;
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_RTR);
}

static void test_coverage_ibv__query_qp_failure(void **state)
{
	rv_qp_attr a = {.mask = RV_QP_STATE};

	(void)state;
	mock.query_qp_errno = EIO;
	assert_int_equal(rv_qp_query(qp, &a), -EIO);
	assert_msg("ibv_query_qp(QP 257) on mock_0 failed");
	mock.query_qp_errno = 0;
	assert_int_equal(rv_qp_query(qp, &a), 0);
	assert_int_equal(a.qp_state, RV_QPS_RESET);
}

static void test_coverage_ibv__pd_failures(void **state)
{
	rv_pd *p = NULL;

	(void)state;
	mock.pd_errno = ENOMEM;
	assert_int_equal(rv_pd_new(ctx, NULL, &p), -ENOMEM);
	assert_null(p);
	assert_msg("ibv_alloc_pd on mock_0 failed");
	assert_msg("the device allows 10 PDs in all");
	mock.pd_errno = EIO;
	assert_int_equal(rv_pd_new(ctx, NULL, &p), -EIO);
	assert_null(strstr(rv_error_last(), "PDs in all"));
	mock.pd_errno = 0;

	/* A refused dealloc keeps the PD; the close may be retried. */
	assert_int_equal(rv_pd_new(ctx, NULL, &p), 0);
	mock.dealloc_pd_errno = EBUSY;
	assert_int_equal(rv_pd_close(p), -EBUSY);
	assert_msg("ibv_dealloc_pd on mock_0 failed");
	assert_msg("still in use by a resource rverbs does not track");
	assert_int_equal(mock.pd_out, 2);
	mock.dealloc_pd_errno = EIO;
	assert_int_equal(rv_pd_close(p), -EIO);
	assert_msg("the PD stays and the close may be retried");
	assert_int_equal(rv_pd_close(p), 0);
	assert_int_equal(mock.pd_out, 1);
	rv_pd_unref(p);
}

static void test_coverage_ibv__qp_type_refused(void **state)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_UD};
	rv_qp *q = NULL;

	(void)state;
	qa.send_cq = cq;
	mock.qp_errno = EOPNOTSUPP;
	assert_int_equal(rv_qp_new(pd, &qa, &q), -EOPNOTSUPP);
	assert_null(q);
	assert_msg("ibv_create_qp(UD) on mock_0 failed");
	assert_msg("the device does not offer UD QPs");
	mock.qp_errno = EIO;
	assert_int_equal(rv_qp_new(pd, &qa, &q), -EIO);
	assert_null(strstr(rv_error_last(), "does not offer"));
	mock.qp_errno = 0;
	assert_int_equal(mock.qp_out, 1);
}

static void test_coverage_ibv__mr_hints(void **state)
{
	static char buf[64];
	rv_mr *mr = NULL;

	(void)state;
	mock.reg_errno = EACCES;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -EACCES);
	assert_msg("mapped read-only");
	mock.reg_errno = EOPNOTSUPP;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -EOPNOTSUPP);
	assert_msg("the device may not support an access flag");
	mock.reg_errno = EIO;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -EIO);
	assert_msg("ibv_reg_mr(");
	assert_null(mr);
	mock.reg_errno = 0;
}

static void test_coverage_ibv__open_failure_hints(void **state)
{
	static const struct {
		int err;
		const char *hint;
	} cases[] = {
		{ENODEV, "the device went away"},
		{EOPNOTSUPP, "provider library for this device is missing"},
		{EMFILE, "out of file descriptors"},
	};
	rv_context *c = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mock.open_errno = cases[i].err;
		assert_int_equal(rv_context_new(dev, NULL, &c), -cases[i].err);
		assert_null(c);
		assert_msg("ibv_open_device(mock_0) failed");
		assert_msg(cases[i].hint);
	}
	mock.open_errno = EIO;
	assert_int_equal(rv_context_new(dev, NULL, &c), -EIO);
	assert_msg("ibv_open_device(mock_0) failed");
	mock.open_errno = 0;
}

static void test_coverage_ibv__gid_of_a_missing_port(void **state)
{
	uint8_t gid[16];

	(void)state;
	assert_int_equal(rv_context_query_gid(ctx, 2, 0, gid), -EINVAL);
	assert_msg("ibv_query_gid(mock_0, port 2, index 0) failed: no such port");
	assert_msg("ports are numbered from 1; mock_0 has 1");
}

static void test_coverage_ibv__completion_channel(void **state)
{
	rv_comp_channel *ch = NULL;
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CHANNEL | RV_CQ_ATTR_CQE, .cqe = 16};
	rv_cq *c = NULL, *fired = NULL;
	int fd;

	(void)state;
	assert_int_equal(rv_comp_channel_new(ctx, NULL, &ch), 0);
	fd = rv_comp_channel_fd(ch);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	ca.channel = ch;
	assert_int_equal(rv_cq_new(ctx, &ca, &c), 0);
	assert_non_null(rv_cq_ibv(c)->channel);
	assert_int_equal(rv_cq_req_notify(c, 1), 0);
	/* The mock never fires: no event, without waiting. */
	assert_int_equal(rv_comp_channel_get_event(ch, 0, &fired), -EAGAIN);
	assert_null(fired);
	/* The provider failing: its errno, or EIO for a negative return. */
	mock.cq_event_errno = EBADF;
	assert_int_equal(rv_comp_channel_get_event(ch, 0, &fired), -EBADF);
	assert_msg("ibv_get_cq_event on mock_0 failed");
	mock.cq_event_errno = 0;
	mock.notify_rc = ENOMEM;
	assert_int_equal(rv_cq_req_notify(c, 0), -ENOMEM);
	assert_msg("ibv_req_notify_cq on mock_0 failed");
	mock.notify_rc = -1;
	assert_int_equal(rv_cq_req_notify(c, 0), -EIO);
	assert_msg("ibv_req_notify_cq on mock_0 failed");
	mock.notify_rc = 0;
	assert_int_equal(rv_cq_close(c), 0);
	assert_int_equal(rv_comp_channel_close(ch), 0);
	rv_cq_unref(c);
	rv_comp_channel_unref(ch);
}

/* The driver's raw op answers as the escape hatch does, NULL for the rest. */
static void test_coverage_ibv__raw_op(void **state)
{
	static char buf[64];
	rv_comp_channel *ch = NULL;
	rv_mr *mr = NULL;

	(void)state;
	assert_ptr_equal(rv_driver_ibv.raw((struct rv_object *)(void *)ctx), rv_context_ibv(ctx));
	assert_ptr_equal(rv_driver_ibv.raw((struct rv_object *)(void *)pd), rv_pd_ibv(pd));
	assert_ptr_equal(rv_driver_ibv.raw((struct rv_object *)(void *)cq), rv_cq_ibv(cq));
	assert_ptr_equal(rv_driver_ibv.raw((struct rv_object *)(void *)qp), rv_qp_ibv(qp));
	assert_non_null(rv_driver_ibv.raw((struct rv_object *)(void *)qp));
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), 0);
	assert_non_null(rv_driver_ibv.raw((struct rv_object *)(void *)mr));
	assert_ptr_equal(rv_driver_ibv.raw((struct rv_object *)(void *)mr), rv_mr_ibv(mr));
	rv_mr_unref(mr);
	assert_int_equal(rv_comp_channel_new(ctx, NULL, &ch), 0);
	assert_null(rv_driver_ibv.raw((struct rv_object *)(void *)ch));
	rv_comp_channel_unref(ch);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_coverage_ibv__refused_rtr_hints),
		T(test_coverage_ibv__refused_rts_and_port_hints),
		T(test_coverage_ibv__query_qp_failure),
		T(test_coverage_ibv__pd_failures),
		T(test_coverage_ibv__qp_type_refused),
		T(test_coverage_ibv__mr_hints),
		T(test_coverage_ibv__open_failure_hints),
		T(test_coverage_ibv__gid_of_a_missing_port),
		T(test_coverage_ibv__completion_channel),
		T(test_coverage_ibv__raw_op),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
