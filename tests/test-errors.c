/*
 * Error paths of the handle core and the facade that the family tests leave
 * out (found with scripts/coverage), against the mock driver: masks and
 * arguments each call rejects, a driver failing in the middle of a helper,
 * the registration cache's and the pool's argument checks, and the names of
 * unknown values. Every case ends with nothing live in the mock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mock-driver.h"

static rv_device *dev;
static rv_context *ctx;
static rv_pd *pd;

static void assert_msg_contains(const char *fragment)
{
	if (!strstr(rv_error_last(), fragment))
		fail_msg("rv_error_last() is \"%s\"; expected \"%s\" in it", rv_error_last(), fragment);
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	if (mock_device_new("mock0", &dev) < 0 || rv_context_new(dev, NULL, &ctx) < 0 ||
	    rv_pd_new(ctx, NULL, &pd) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pd = rv_pd_unref(pd);
	ctx = rv_context_unref(ctx);
	dev = rv_device_unref(dev);
	assert_int_equal(mock.double_destroys + mock.order_violations + mock.contract_violations, 0);
	assert_int_equal(mock_live_total(), 0);
	return 0;
}

static void test_errors__names_of_unknown_values(void **state)
{
	(void)state;
	assert_string_equal(rv_obj_type_name(RV_OBJ_TYPE_MAX), "handle");
	assert_string_equal(rv_obj_type_name((enum rv_obj_type)0), "handle");
	assert_string_equal(rv_wc_status_str(9999), "unknown status");
	assert_non_null(strstr(rv_wc_status_hint(9999), "not a work-completion status"));
	assert_string_equal(rv_wc_status_str(-1), "unknown status");
}

static void test_errors__cq_masks(void **state)
{
	rv_cq_attr a = {.mask = RV_CQ_ATTR_CHANNEL};
	rv_cq *cq = NULL;
	int rc;

	(void)state;
	/* No channel given: not supported, or (where channels exist) a NULL channel. */
	rc = rv_cq_new(ctx, &a, &cq);
	assert_true(rc == -EOPNOTSUPP || rc == -EINVAL);
	assert_null(cq);
	a.mask = RV_CQ_ATTR_COMP_VECTOR;
	a.comp_vector = 0;
	assert_int_equal(rv_cq_new(ctx, &a, &cq), 0);
	rv_cq_unref(cq);
	mock_fail_create(RV_OBJ_CQ, EIO, 1);
	cq = NULL;
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), -EIO);
	assert_null(cq);
}

static void test_errors__context_queries(void **state)
{
	rv_port_attr pa = {.mask = 0};
	rv_device_attr da = {.mask = 0};
	uint8_t gid[16];

	(void)state;
	/* Nothing asked, nothing written, success. */
	assert_int_equal(rv_context_query_port(ctx, 1, &pa), 0);
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	mock.fail_query_errno = EIO;
	pa.mask = RV_PORT_ATTR_ALL;
	assert_int_equal(rv_context_query_port(ctx, 1, &pa), -EIO);
	assert_int_equal(rv_context_query_gid(ctx, 1, 0, gid), -EIO);
	assert_int_equal(rv_context_query_gid(ctx, 1, -1, gid), -EINVAL);
	assert_int_equal(rv_context_query_gid(ctx, 1, 0, NULL), -EINVAL);
	assert_int_equal(rv_context_dump(ctx, NULL), -EINVAL);
	assert_int_equal(rv_context_dump(NULL, NULL), -EINVAL);
}

static rv_qp *new_qp(rv_cq **ret_cq)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_qp *qp = NULL;

	assert_int_equal(rv_cq_new(ctx, NULL, ret_cq), 0);
	qa.send_cq = *ret_cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	return qp;
}

static void test_errors__qp_helpers_and_driver_failures(void **state)
{
	rv_cq *cq, *cq2;
	rv_qp *qp = new_qp(&cq), *peer;
	rv_qp_attr a;
	rv_endpoint ep;
	size_t posted = 7;

	(void)state;
	/* INIT -> RTR names the missing attribute. */
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_RQ_PSN | RV_QP_PATH_MTU;
	a.path_mtu = RV_MTU_1024;
	a.ah_attr.is_global = 1;
	a.ah_attr.dgid[15] = 1;
	assert_int_equal(rv_qp_to_rtr(qp, &a), -EINVAL);
	assert_msg_contains("RV_QP_DEST_QPN");

	/* A driver refusing the modify inside rv_qp_connect. */
	peer = new_qp(&cq2);
	rv_cq_unref(cq2);
	rv_cq_unref(cq);
	assert_int_equal(rv_qp_endpoint(peer, &ep), 0);
	ep.gid[15] = 1;
	mock.fail_modify_errno = EIO;
	assert_true(rv_qp_connect(qp, &ep) < 0);
	mock.fail_modify_errno = 0;

	/* Posting nothing writes n_posted = 0. */
	assert_int_equal(rv_qp_post_recv(qp, NULL, 0, &posted), 0);
	assert_int_equal(posted, 0);
	posted = 7;
	assert_int_equal(rv_qp_post_send(qp, NULL, 0, &posted), 0);
	assert_int_equal(posted, 0);
	assert_int_equal(rv_qp_post_recv(qp, NULL, 1, NULL), -EINVAL);

	rv_qp_unref(peer);
	rv_qp_unref(qp);
}

static void test_errors__devices(void **state)
{
	rv_device *d = NULL;

	(void)state;
	assert_int_equal(rv_device_find("no-such-device", &d), -ENODEV);
	assert_null(d);
	assert_int_equal(rv_device_find(NULL, &d), -EINVAL);
	assert_int_equal(rv_device_default(NULL), -EINVAL);
	setenv("RVERBS_DEVICE", "no-such-device", 1);
	assert_int_equal(rv_device_default(&d), -ENODEV);
	unsetenv("RVERBS_DEVICE");
	assert_int_equal(rv_device_list(NULL, NULL), -EINVAL);
	rv_device_list_free(NULL);
	assert_null(rv_device_name(NULL));
	assert_int_equal(rv_device_kind_of((rv_device *)(void *)pd), -EINVAL);
	assert_msg_contains("expected a device handle, got a PD handle");
}

static void test_errors__mr_cache_arguments(void **state)
{
	rv_mr_cache_attr a = {.mask = RV_MR_CACHE_ATTR_MAX_BYTES, .max_bytes = 4096};
	rv_mr_cache_stats st = {.mask = 1u << 7};
	rv_mr_cache *c = NULL;
	rv_mr *mr = NULL;
	static char buf[3 * 4096];

	(void)state;
	assert_int_equal(rv_mr_cache_new(pd, &(rv_mr_cache_attr){.mask = 1u << 9}, &c), -EINVAL);
	assert_int_equal(rv_mr_cache_new(pd, &(rv_mr_cache_attr){.reserved = 1}, &c), -EINVAL);
	assert_int_equal(rv_mr_cache_new(pd, &(rv_mr_cache_attr){.mask = RV_MR_CACHE_ATTR_MAX_ENTRIES}, &c),
			 -EINVAL);
	assert_int_equal(rv_mr_cache_new(pd, &a, NULL), -EINVAL);
	assert_null(c);
	assert_int_equal(rv_mr_cache_new(pd, &a, &c), 0);
	/* More than max_bytes in one range. */
	assert_int_equal(rv_mr_cache_get(c, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_msg_contains("max_bytes");
	assert_int_equal(rv_mr_cache_get(c, NULL, 1, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_int_equal(rv_mr_cache_get(c, buf, 0, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_null(mr);
	assert_int_equal(rv_mr_cache_stats_get(c, NULL), -EINVAL);
	assert_int_equal(rv_mr_cache_stats_get(c, &st), -EINVAL);
	assert_msg_contains("unknown bit");
	st.mask = 0;
	assert_int_equal(rv_mr_cache_stats_get(c, &st), 0);
	assert_int_equal(rv_mr_cache_stats_get(NULL, &st), -EINVAL);
	assert_int_equal(rv_mr_cache_invalidate(NULL, buf, 1), -EINVAL);
	/* Not a cache at all. */
	assert_int_equal(rv_mr_cache_stats_get((rv_mr_cache *)(void *)buf, &st), -EINVAL);
	assert_msg_contains("not an rverbs cache handle");
	assert_null(rv_mr_cache_ref(NULL));
	c = rv_mr_cache_unref(c);
}

static void test_errors__pool_arguments(void **state)
{
	rv_pool_attr a;
	rv_pool *p = NULL;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.mask = RV_POOL_ATTR_CLASSES;
	a.n_classes = 1;
	a.class_size[0] = 0;
	assert_int_equal(rv_pool_new(pd, &a, &p), -EINVAL);
	assert_msg_contains("class_size[0]");
	a.mask = RV_POOL_ATTR_CHUNK_BYTES;
	a.chunk_bytes = 0;
	assert_int_equal(rv_pool_new(pd, &a, &p), -EINVAL);
	a.mask = RV_POOL_ATTR_ACCESS;
	a.access = RV_ACCESS_MW_BIND;
	assert_int_equal(rv_pool_new(pd, &a, &p), -EINVAL);
	a.mask = RV_POOL_ATTR_THREAD_CACHE;
	a.thread_cache = 5000;
	assert_int_equal(rv_pool_new(pd, &a, &p), -EINVAL);
	assert_msg_contains("thread_cache");
	a.mask = RV_POOL_ATTR_PAGE;
	a.page = 99;
	assert_int_equal(rv_pool_new(pd, &a, &p), -EINVAL);
	assert_null(p);

	/* A working pool without thread caches: put goes to the shared lists. */
	a.mask = RV_POOL_ATTR_THREAD_CACHE | RV_POOL_ATTR_CLASSES | RV_POOL_ATTR_CHUNK_BYTES;
	a.thread_cache = 0;
	a.n_classes = 1;
	a.class_size[0] = 256;
	a.chunk_bytes = 4096;
	assert_int_equal(rv_pool_new(pd, &a, &p), 0);
	{
		rv_pool_stats st = {.mask = 1u << 5};
		rv_pool_buf *b = NULL;

		assert_int_equal(rv_pool_get(p, 100, &b), 0);
		assert_int_equal(rv_pool_put(p, NULL), -EINVAL);
		assert_int_equal(rv_pool_put(p, b), 0);
		assert_int_equal(rv_pool_put(p, b), -EINVAL);
		assert_msg_contains("put twice");
		assert_int_equal(rv_pool_stats_get(p, NULL), -EINVAL);
		assert_int_equal(rv_pool_stats_get(p, &st), -EINVAL);
		st.mask = 0;
		assert_int_equal(rv_pool_stats_get(p, &st), 0);
		assert_int_equal(rv_pool_close(p), 0);
		assert_null(rv_pool_pd(p));
		assert_int_equal(rv_pool_close((rv_pool *)(void *)pd), -EINVAL);
	}
	p = rv_pool_unref(p);
}

/* rv_connect rejects bad attributes before it opens a socket. */
static void expect_conn_einval(const rv_conn_attr *a, const char *fragment)
{
	rv_conn *c = NULL;

	assert_int_equal(rv_connect(ctx, "127.0.0.1:9", a, 100, &c), -EINVAL);
	assert_msg_contains(fragment);
	assert_null(c);
}

static void test_errors__conn_attributes(void **state)
{
	static const char data[4];
	rv_context *other;
	rv_pd *other_pd;
	rv_cq *cq, *cq2;
	rv_qp *qp = new_qp(&cq), *qp2 = new_qp(&cq2), *ud = NULL;
	rv_qp *qps[3];
	rv_qp_init_attr ua = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_UD};

	(void)state;
	ua.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &ua, &ud), 0);
	assert_int_equal(rv_context_new(dev, NULL, &other), 0);
	assert_int_equal(rv_pd_new(other, NULL, &other_pd), 0);

	expect_conn_einval(&(rv_conn_attr){.reserved = 1}, "reserved");
	/* RC, UC and UD are carried (UD since the helper connects UD QPs); XRC is not. */
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_QP_TYPE, .qp_type = RV_QPT_XRC_SEND}, "qp_type");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_NUM_QPS, .num_qps = 0}, "num_qps");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_QPS, .num_qps = 1}, "qps is NULL");
	qps[0] = qp;
	qps[1] = ud;
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_QPS, .num_qps = 2, .qps = qps}, "differs from qps[0]");
	qps[0] = qp;
	qps[1] = qp;
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_QPS, .num_qps = 2, .qps = qps}, "the same QP");
	qps[1] = qp2;
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_QPS, .num_qps = 2, .qps = qps}, "differs from qps[0]");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_PD, .pd = other_pd}, "another context");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_CQ, .send_cq = cq, .recv_cq = (rv_cq *)(void *)pd},
			   "CQ handle");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_PRIVATE_DATA, .private_data_len = RV_CONN_PRIVATE_DATA_MAX + 1},
			   "RV_CONN_PRIVATE_DATA_MAX");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_PRIVATE_DATA, .private_data_len = 4},
			   "private_data is NULL");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_PRIVATE_DATA | RV_CONN_ATTR_REQUIRED_CAPS,
					   .private_data = data, .private_data_len = 4, .required_caps = 1u << 20},
			   "required_caps");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_TRANSPORT, .transport = 99}, "transport");
	expect_conn_einval(&(rv_conn_attr){.mask = RV_CONN_ATTR_MR, .mr = (rv_mr *)(void *)pd}, "MR handle");
	/* Addresses: no host, a host longer than a DNS name can be. */
	{
		char longhost[400];
		rv_conn *c = NULL;

		assert_int_equal(rv_connect(ctx, ":9", NULL, 100, &c), -EINVAL);
		assert_msg_contains("needs a host");
		memset(longhost, 'a', sizeof(longhost));
		memcpy(longhost + sizeof(longhost) - 3, ":9", 3);
		assert_int_equal(rv_connect(ctx, longhost, NULL, 100, &c), -EINVAL);
		assert_msg_contains("is longer than");
		assert_null(c);
	}

	rv_pd_unref(other_pd);
	rv_context_unref(other);
	rv_qp_unref(ud);
	rv_qp_unref(qp2);
	rv_qp_unref(qp);
	rv_cq_unref(cq2);
	rv_cq_unref(cq);
}

static void test_errors__listener_attributes(void **state)
{
	rv_listener_attr a = {.mask = RV_LISTENER_ATTR_BACKLOG, .backlog = 4};
	rv_listener *l = NULL;
	rv_conn *c = NULL;

	(void)state;
	assert_int_equal(rv_listener_new(ctx, "127.0.0.1:0", &(rv_listener_attr){.mask = RV_LISTENER_ATTR_MAX_PENDING},
					 &l), -EINVAL);
	assert_msg_contains("max_pending");
	assert_int_equal(rv_listener_new(ctx, "127.0.0.1:0",
					 &(rv_listener_attr){.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = 9}, &l),
			 -EINVAL);
	assert_int_equal(rv_listener_new(ctx, "127.0.0.1:0",
					 &(rv_listener_attr){.mask = RV_LISTENER_ATTR_TRANSPORT,
							     .transport = RV_CONN_TRANSPORT_RDMA_CM}, &l),
			 -EOPNOTSUPP);
	assert_msg_contains("no rdma_cm support");
	assert_null(l);
	assert_int_equal(rv_listener_new(ctx, "127.0.0.1:0", &a, &l), 0);
	assert_int_equal(rv_listener_accept(l, &(rv_conn_attr){.mask = RV_CONN_ATTR_TRANSPORT}, 10, &c), -EINVAL);
	assert_msg_contains("do not set RV_CONN_ATTR_TRANSPORT");
	assert_null(c);
	l = rv_listener_unref(l);
}

static void test_errors__address_handle_arguments(void **state)
{
	rv_ah_attr a;
	rv_wc wc;
	rv_ah *ah = NULL;
	static const uint8_t grh[RV_UD_GRH_LEN];

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&wc, 0, sizeof(wc));
	assert_int_equal(rv_ah_new(NULL, &a, &ah), -EINVAL);
	assert_int_equal(rv_ah_new(pd, NULL, &ah), -EINVAL);
	assert_msg_contains("attr is NULL");
	assert_int_equal(rv_ah_new(pd, &a, NULL), -EINVAL);
	a.reserved = 1;
	assert_int_equal(rv_ah_new(pd, &a, &ah), -EINVAL);
	assert_msg_contains("reserved is 0x1");
	a.reserved = 0;
	a.flow_label = 1u << 20;
	assert_int_equal(rv_ah_new(pd, &a, &ah), -EINVAL);
	assert_msg_contains("flow_label 0x100000 does not fit 20 bits");
	a.flow_label = 0;
	a.is_global = 2;
	assert_int_equal(rv_ah_new(pd, &a, &ah), -EINVAL);
	a.is_global = 0;
	a.sl = 16;
	assert_int_equal(rv_ah_new(pd, &a, &ah), -EINVAL);
	a.sl = 0;
	/* The mock driver has no address handles. */
	assert_int_equal(rv_ah_new(pd, &a, &ah), -EOPNOTSUPP);
	assert_msg_contains("has no address handles");

	assert_int_equal(rv_ah_from_wc(pd, 1, NULL, grh, &ah), -EINVAL);
	assert_int_equal(rv_ah_from_wc(pd, 1, &wc, grh, NULL), -EINVAL);
	wc.opcode = RV_WC_SEND;
	assert_int_equal(rv_ah_from_wc(pd, 1, &wc, grh, &ah), -EINVAL);
	assert_msg_contains("not a successful receive");
	wc.opcode = RV_WC_RECV;
	wc.status = RV_WC_WR_FLUSH_ERR;
	assert_int_equal(rv_ah_from_wc(pd, 1, &wc, grh, &ah), -EINVAL);
	wc.status = RV_WC_SUCCESS;
	wc.wc_flags = RV_WC_GRH;
	assert_int_equal(rv_ah_from_wc(pd, 1, &wc, NULL, &ah), -EINVAL);
	assert_msg_contains("RV_WC_GRH but grh is NULL");
	assert_int_equal(rv_ah_from_wc(pd, 1, &wc, grh, &ah), -EOPNOTSUPP);
	assert_null(ah);

	assert_int_equal(rv_ah_close(NULL), -EINVAL);
	assert_int_equal(rv_ah_close((rv_ah *)(void *)pd), -EINVAL);
	assert_null(rv_ah_unref(NULL));
	assert_null(rv_ah_ref(NULL));
	assert_null(rv_ah_pd(NULL));
	assert_int_equal(rv_ah_query(NULL, &a), -EINVAL);
}

/* The extended verbs on a driver that has none of them (the mock): a CQ
 * with wc_flags and the device clock are refused with -EOPNOTSUPP, unknown
 * flag bits with -EINVAL naming them; rv_cq_poll_ex falls back to the plain
 * completions; a query of one part of rv_device_attr writes only that part. */
static void test_errors__extended_verbs_on_a_driver_without_them(void **state)
{
	rv_device_attr da;
	rv_cq *cq = NULL;
	rv_wc_ex x[4];
	uint64_t raw = 5;

	(void)state;
	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = 1u << 0}, &cq),
			 -EINVAL);
	assert_msg_contains("unknown bit 0x1 in rv_cq_attr.wc_flags");
	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_TIMESTAMP},
				   &cq),
			 -EOPNOTSUPP);
	assert_msg_contains("gives no extended completion fields");
	assert_null(cq);
	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = 0}, &cq), 0);
	assert_int_equal(rv_cq_get_wc_flags(cq), 0);
	mock.poll_n = 2;
	mock.poll_wc[0].wr_id = 11;
	mock.poll_wc[1].wr_id = 12;
	mock.poll_wc[1].status = RV_WC_REM_ACCESS_ERR;
	memset(x, 0xff, sizeof(x));
	assert_int_equal(rv_cq_poll_ex(cq, x, 4), 2);
	assert_int_equal(x[0].wc.wr_id, 11);
	assert_int_equal(x[1].wc.status, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(x[0].ex_flags | x[1].ex_flags, 0);
	assert_int_equal(x[0].timestamp | x[0].reserved[3], 0);
	assert_int_equal(x[2].wc.wr_id, UINT64_MAX); /* untouched beyond the count */
	assert_int_equal(rv_cq_poll_ex(cq, x, 1), 1);
	mock.poll_rc = -EOVERFLOW;
	assert_int_equal(rv_cq_poll_ex(cq, x, 1), -EOVERFLOW);
	assert_int_equal(rv_cq_poll_ex(cq, NULL, 1), -EINVAL);
	assert_msg_contains("wc is NULL");
	assert_int_equal(rv_cq_poll_ex(cq, x, 0), -EINVAL);
	assert_msg_contains("max must be at least 1");
	assert_int_equal(rv_cq_poll_ex(NULL, x, 1), -EINVAL);
	assert_int_equal(rv_cq_close(cq), 0);
	assert_int_equal(rv_cq_poll_ex(cq, x, 1), -RV_ECLOSED);
	assert_int_equal(rv_cq_get_wc_flags(cq), 0);
	rv_cq_unref(cq);

	assert_int_equal(rv_context_read_clock(ctx, &raw), -EOPNOTSUPP);
	assert_msg_contains("has no clock");
	assert_int_equal(raw, 5);
	assert_int_equal(rv_context_read_clock(ctx, NULL), -EINVAL);
	assert_int_equal(rv_context_read_clock(NULL, &raw), -EINVAL);

	/* The extended part alone leaves the base part as it was, and the reverse. */
	memset(&da, 0x5a, sizeof(da));
	da.mask = RV_DEVICE_ATTR_EX;
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_int_equal(da.mask, RV_DEVICE_ATTR_EX);
	assert_int_equal(da.max_qp, 0x5a5a5a5a);
	assert_int_equal(da.completion_timestamp_mask, 0);
	memset(&da, 0x5a, sizeof(da));
	da.mask = RV_DEVICE_ATTR_BASE;
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_int_not_equal(da.max_qp, 0x5a5a5a5a);
	assert_int_equal(da.completion_timestamp_mask, UINT64_C(0x5a5a5a5a5a5a5a5a));
	da.mask = RV_DEVICE_ATTR_ALL | (UINT64_C(1) << 3);
	assert_int_equal(rv_context_query_device(ctx, &da), -EINVAL);
	assert_msg_contains("unknown bit 0x8 in rv_device_attr.mask");
}

/* rv_mr_reg_dmabuf's checks before any driver: a descriptor that is not a
 * dma-buf (a memfd), a negative one, zero length, a bad access; and a
 * driver without dma-buf registration cannot be asked (the facade's check
 * comes first, so the mock's missing op is never reached with a non-dma-buf). */
static void test_errors__dmabuf_arguments(void **state)
{
	rv_mr *mr = NULL;
	int fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 65536), 0);
	assert_int_equal(rv_mr_reg_dmabuf(pd, 0, 65536, 0x10000, fd, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_msg_contains("is not a dma-buf");
	assert_int_equal(rv_mr_reg_dmabuf(pd, 0, 65536, 0x10000, -1, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_msg_contains("fd -1");
	assert_int_equal(rv_mr_reg_dmabuf(pd, 0, 0, 0x10000, fd, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_msg_contains("length is 0");
	assert_int_equal(rv_mr_reg_dmabuf(pd, 0, 4096, UINT64_MAX - 10, fd, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_msg_contains("wraps");
	assert_int_equal(rv_mr_reg_dmabuf(pd, 0, 4096, 0x10000, fd, RV_ACCESS_LOCAL_WRITE, NULL), -EINVAL);
	assert_int_equal(rv_mr_reg_dmabuf(NULL, 0, 4096, 0x10000, fd, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_null(mr);
	close(fd);
}

/* The work-request builder on the mock: the WRs it collected reach the
 * driver's post_send as one array, SGE lists and inline bytes copied when
 * set; a partial post reports how many went; misuse is named. */
static void test_errors__wr_builder_posts_one_array(void **state)
{
	rv_cq *cq = NULL;
	rv_qp *qp = new_qp(&cq);
	rv_sge two[2] = {{.addr = 0x1000, .length = 8, .lkey = 1}, {.addr = 0x2000, .length = 16, .lkey = 2}};
	char text[6] = "hello";
	size_t posted = 99;

	(void)state;
	assert_int_equal(rv_qp_wr_start(qp), 0);
	assert_int_equal(rv_qp_wr_rdma_write_imm(qp, 1, RV_SEND_SIGNALED, 0x77, 0xabc000, 0x1234), 0);
	assert_int_equal(rv_qp_wr_set_sge_list(qp, two, 2), 0);
	two[0].addr = 0; /* copied: no effect on the WR */
	assert_int_equal(rv_qp_wr_send(qp, 2, 0), 0);
	assert_int_equal(rv_qp_wr_set_inline_data(qp, text, 5), 0);
	text[0] = 'J';
	assert_int_equal(rv_qp_wr_atomic_cmp_swp(qp, 3, 0, 0x88, 0xdef000, 4, 5), 0);
	assert_int_equal(rv_qp_wr_set_sge(qp, 3, 0x3000, 8), 0);
	assert_int_equal(rv_qp_wr_complete(qp, &posted), 0);
	assert_int_equal(posted, 3);
	assert_int_equal(mock.n_sent, 3);
	assert_int_equal(mock.sent_wr_id[0], 1);
	assert_int_equal(mock.sent_wr_id[2], 3);
	assert_true(mock.sent_flags[1] & RV_SEND_INLINE);
	assert_int_equal(mock.last_send.opcode, RV_WR_RDMA_WRITE_WITH_IMM);
	assert_int_equal(mock.last_send.imm_data, 0x1234);
	assert_int_equal(mock.last_send.rkey, 0x77);
	assert_int_equal(mock.last_send.remote_addr, 0xabc000);
	assert_int_equal(mock.last_send.num_sge, 2);
	assert_int_equal(mock.last_send.sg_list[0].addr, 0x1000);
	assert_int_equal(mock.last_send.sg_list[1].lkey, 2);
	/* The batch is closed: a second complete is refused by name. */
	assert_int_equal(rv_qp_wr_complete(qp, NULL), -EINVAL);
	assert_msg_contains("no batch is open");

	/* The driver takes one of two: the count says so. */
	mock.post_limit = 1;
	assert_int_equal(rv_qp_wr_start(qp), 0);
	assert_int_equal(rv_qp_wr_send(qp, 4, 0), 0);
	assert_int_equal(rv_qp_wr_send(qp, 5, 0), 0);
	assert_int_equal(rv_qp_wr_complete(qp, &posted), -ENOMEM);
	assert_int_equal(posted, 1);

	/* Each batch reuses the builder; misuse is named. */
	assert_int_equal(rv_qp_wr_start(qp), 0);
	assert_int_equal(rv_qp_wr_start(qp), -EBUSY);
	assert_msg_contains("already open");
	assert_int_equal(rv_qp_wr_set_inline_data(qp, "x", 1), -EINVAL);
	assert_msg_contains("no work request yet");
	assert_int_equal(rv_qp_wr_send(qp, 6, 0), 0);
	assert_int_equal(rv_qp_wr_set_sge(qp, 1, 0x1000, 4), 0);
	assert_int_equal(rv_qp_wr_set_sge(qp, 1, 0x1000, 4), -EINVAL);
	assert_msg_contains("has its data already");
	assert_int_equal(rv_qp_wr_set_ud_addr(qp, NULL, 1, 1), -EINVAL);
	assert_msg_contains("not a UD QP");
	assert_int_equal(rv_qp_wr_atomic_write(qp, 7, 0, 1, 0x1000, "12345678"), -EOPNOTSUPP);
	assert_msg_contains("no RDMA atomic write");
	assert_int_equal(rv_qp_wr_abort(qp), 0);
	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(rv_qp_wr_start(qp), -RV_ECLOSED);
	assert_int_equal(rv_qp_wr_abort(qp), -RV_ECLOSED);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_errors__names_of_unknown_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__cq_masks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__context_queries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__extended_verbs_on_a_driver_without_them, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__wr_builder_posts_one_array, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__dmabuf_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__qp_helpers_and_driver_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__mr_cache_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__pool_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__conn_attributes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__listener_attributes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors__address_handle_arguments, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
