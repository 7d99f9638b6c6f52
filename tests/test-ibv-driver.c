/*
 * The libibverbs driver through the public API, against a mock libibverbs.
 *
 * test-ibv-mock.c defines the libibverbs entry points the driver calls
 * (ibv_open_device, ibv_create_qp, ibv_modify_qp ...); the linker binds the
 * driver's objects to these definitions before it looks at libibverbs.so, so
 * the whole facade + driver stack runs here without a device: discovery and
 * the device-list lifetime, contexts, queries, PD/MR/CQ/QP creation with
 * their failure messages, every QP transition of rv_qp_connect as libibverbs
 * receives it, the data path, a refused destroy that is retried, and the
 * cascade close with nothing left behind.
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

/* The mock libibverbs: its entry points and `mock`, its knobs and counters. */
#include "test-ibv-mock.c"

/* ---- helpers ------------------------------------------------------------ */

static int setup(void **state)
{
	(void)state;
	memset(&mock, 0, sizeof(mock));
	mock.port_state = IBV_PORT_ACTIVE;
	mock.next_qpn = 0x100;
	unsetenv("RVERBS_DEVICE");
	rv_error_clear();
	return 0;
}

/* Every test ends with nothing left in the mock: no leaked verbs object and
 * no device list kept beyond its last device. */
static int teardown(void **state)
{
	(void)state;
	assert_int_equal(mock.qp_out, 0);
	assert_int_equal(mock.ah_out, 0);
	assert_int_equal(mock.srq_out, 0);
	assert_int_equal(mock.cq_out, 0);
	assert_int_equal(mock.mr_out, 0);
	assert_int_equal(mock.pd_out, 0);
	assert_int_equal(mock.ctx_out, 0);
	assert_int_equal(mock.lists_out, 0);
	return 0;
}

static void open_mock(rv_device **dev, rv_context **ctx)
{
	assert_int_equal(rv_device_find("mock_0", dev), 0);
	assert_int_equal(rv_device_kind_of(*dev), RV_DEVICE_VERBS);
	assert_int_equal(rv_context_new(*dev, NULL, ctx), 0);
}

static void close_mock(rv_device *dev, rv_context *ctx)
{
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
	rv_device_unref(dev);
}

#define assert_msg(s) assert_non_null(strstr(rv_error_last(), (s)))

/* ---- tests -------------------------------------------------------------- */

static void test_ibv_driver__probe_lists_devices_and_keeps_the_list_for_the_last(void **state)
{
	rv_device **list, *keep = NULL;
	size_t n;
	int found = 0;

	(void)state;
	assert_int_equal(rv_device_list(&list, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (rv_device_kind_of(list[i]) != RV_DEVICE_VERBS)
			continue;
		found++;
		if (strcmp(rv_device_name(list[i]), "mock_0") == 0)
			keep = rv_device_ref(list[i]);
		else
			assert_string_equal(rv_device_name(list[i]), "mock_1");
	}
	assert_int_equal(found, MOCK_NDEV);
	assert_non_null(keep);
	assert_int_equal(mock.lists_out, 1);
	rv_device_list_free(list);
	/* mock_0 is still referenced: its struct ibv_device must stay valid. */
	assert_int_equal(mock.lists_out, 1);
	rv_device_unref(keep);
	assert_int_equal(mock.lists_out, 0);
}

static void test_ibv_driver__no_kernel_support_means_no_devices(void **state)
{
	static const int errs[] = { ENOSYS, EPERM };
	rv_device **list;
	size_t n;

	(void)state;
	for (size_t e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
		mock.list_errno = errs[e];
		/* The listing still succeeds (the software device, if built). */
		assert_int_equal(rv_device_list(&list, &n), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_not_equal(rv_device_kind_of(list[i]), RV_DEVICE_VERBS);
		rv_device_list_free(list);
	}
	assert_int_equal(rv_device_find("mock_0", &(rv_device *){ NULL }), -ENODEV);
}

static void test_ibv_driver__default_device_needs_an_active_port(void **state)
{
	rv_device *dev;
	int rc;

	(void)state;
	assert_int_equal(rv_device_default(&dev), 0);
	assert_string_equal(rv_device_name(dev), "mock_0");
	rv_device_unref(dev);

	mock.port_state = IBV_PORT_DOWN;
	rc = rv_device_default(&dev);
	if (rc == 0) {
		assert_int_equal(rv_device_kind_of(dev), RV_DEVICE_SOFT);
		rv_device_unref(dev);
	} else {
		assert_int_equal(rc, -ENODEV);
	}
}

static char logged[512];

static void keep_log(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	/* The first warning: the first device's. */
	if (level == RV_LOG_WARN && logged[0] == '\0')
		snprintf(logged, sizeof(logged), "%s", msg);
}

static void test_ibv_driver__default_skips_an_unopenable_device_with_a_warning(void **state)
{
	rv_device *dev;

	(void)state;
	logged[0] = '\0';
	rv_set_log_handler(keep_log, NULL);
	mock.open_errno = EACCES;
	if (rv_device_default(&dev) == 0) {
		assert_int_not_equal(rv_device_kind_of(dev), RV_DEVICE_VERBS);
		rv_device_unref(dev);
	}
	rv_set_log_handler(NULL, NULL);
	assert_non_null(strstr(logged, "mock_0 is not a default candidate"));
	assert_non_null(strstr(logged, "ibv_open_device failed"));
}

static void test_ibv_driver__open_failure_names_the_call_and_the_permission(void **state)
{
	rv_device *dev;
	rv_context *ctx = NULL;

	(void)state;
	assert_int_equal(rv_device_find("mock_0", &dev), 0);
	mock.open_errno = EACCES;
	assert_int_equal(rv_context_new(dev, NULL, &ctx), -EACCES);
	assert_null(ctx);
	assert_msg("rv_context_new");
	assert_msg("ibv_open_device(mock_0)");
	assert_msg("/dev/infiniband/uverbs");
	rv_device_unref(dev);
}

static void test_ibv_driver__queries(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_device_attr da = { .mask = RV_DEVICE_ATTR_ALL };
	rv_port_attr pa = { .mask = RV_PORT_ATTR_ALL };
	uint8_t gid[16];
	rv_gid_entry ge;
	uint16_t pkey;

	(void)state;
	open_mock(&dev, &ctx);
	assert_non_null(rv_context_ibv(ctx));
	assert_ptr_equal(rv_context_ibv(ctx)->device, &mock_devs[0]);

	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_string_equal(da.fw_ver, "1.2.3");
	assert_int_equal(da.node_guid, 0x0011223344556677ull);
	assert_int_equal(da.max_qp_wr, 1024);
	assert_int_equal(da.max_cqe, 4096);
	assert_int_equal(da.atomic_cap, RV_ATOMIC_HCA);
	assert_int_equal(da.phys_port_cnt, 1);

	assert_int_equal(rv_context_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, RV_PORT_ACTIVE);
	assert_int_equal(pa.active_mtu, RV_MTU_1024);
	assert_int_equal(pa.link_layer, RV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 2);

	assert_int_equal(rv_context_query_port(ctx, 2, &pa), -EINVAL);
	assert_msg("ibv_query_port(mock_0, port 2)");
	assert_msg("mock_0 has 1");

	assert_int_equal(rv_context_query_gid(ctx, 1, 1, gid), 0);
	assert_int_equal(gid[0], 0xfe);
	assert_int_equal(gid[15], 0x56);
	assert_int_equal(rv_context_query_gid(ctx, 1, 5, gid), -EINVAL);
	assert_msg("index 5");
	assert_msg("GID table of port 1 has 2 entries");

	/* Typed entries through ibv_query_gid_ex. */
	assert_int_equal(rv_context_query_gid_entry(ctx, 1, 0, &ge), 0);
	assert_int_equal(ge.gid_type, RV_GID_TYPE_ROCE_V1);
	assert_int_equal(ge.ndev_ifindex, 7);
	assert_int_equal(ge.gid[0], 0xfe);
	assert_int_equal(rv_context_query_gid_entry(ctx, 1, 1, &ge), 0);
	assert_int_equal(ge.gid_type, RV_GID_TYPE_ROCE_V2);
	assert_int_equal(ge.gid_index, 1);
	assert_int_equal(ge.port_num, 1);
	assert_int_equal(ge.gid[15], 0x56);
	assert_int_equal(rv_context_query_gid_entry(ctx, 1, 5, &ge), -EINVAL);
	assert_msg("index 5");
	assert_msg("GID table of port 1 has 2 entries");
	assert_int_equal(rv_context_query_gid_entry(ctx, 3, 0, &ge), -EINVAL);
	assert_msg("no such port");

	/* P_Key: network order from libibverbs, host order out. */
	assert_int_equal(rv_context_query_pkey(ctx, 1, 0, &pkey), 0);
	assert_int_equal(pkey, 0x8001);
	assert_int_equal(rv_context_query_pkey(ctx, 1, 1, &pkey), -EINVAL);
	assert_msg("P_Key table of port 1 has 1 entries");
	assert_int_equal(rv_context_query_pkey(ctx, 2, 0, &pkey), -EINVAL);
	assert_msg("no such port");

	close_mock(dev, ctx);
}

/* rv_mr_rereg goes to ibv_rereg_mr with the flags and only the named
 * arguments; the new keys are read back; a PD move reaches the ibv_mr. */
static void test_ibv_driver__mr_rereg(void **state)
{
	static char buf[4096], buf2[256];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd, *pd2;
	rv_mr *mr;
	uint32_t lkey;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd2), 0);
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), 0);
	lkey = rv_mr_lkey(mr);

	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_ALL_REMOTE), 0);
	assert_int_equal(mock.rereg_flags, IBV_REREG_MR_CHANGE_ACCESS);
	assert_int_equal(((struct mock_mr *)rv_mr_ibv(mr))->access, RV_ACCESS_ALL_REMOTE);
	assert_int_not_equal(rv_mr_lkey(mr), lkey);
	assert_int_equal(rv_mr_lkey(mr), rv_mr_ibv(mr)->lkey);
	assert_int_equal(rv_mr_rkey(mr), rv_mr_ibv(mr)->rkey);

	assert_int_equal(rv_mr_rereg(mr, RV_REREG_TRANS | RV_REREG_PD, pd2, buf2, sizeof(buf2), 0), 0);
	assert_int_equal(mock.rereg_flags, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD);
	assert_ptr_equal(rv_mr_ibv(mr)->addr, buf2);
	assert_ptr_equal(rv_mr_ibv(mr)->pd, rv_pd_ibv(pd2));
	assert_ptr_equal(rv_mr_addr(mr), buf2);
	assert_int_equal(rv_mr_length(mr), sizeof(buf2));
	assert_ptr_equal(rv_mr_pd(mr), pd2);
	/* The old PD no longer holds the MR. */
	assert_int_equal(rv_pd_close(pd), 0);
	assert_int_not_equal(rv_mr_lkey(mr), 0);

	/* A refusal that leaves the MR usable, and one that does not. */
	lkey = rv_mr_lkey(mr);
	mock.rereg_rc = IBV_REREG_MR_ERR_INPUT;
	mock.rereg_errno = EINVAL;
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), -EINVAL);
	assert_msg("ibv_rereg_mr(flags 0x4) on mock_0 failed");
	assert_msg("unchanged and still usable");
	assert_int_equal(rv_mr_lkey(mr), lkey);
	mock.rereg_rc = IBV_REREG_MR_ERR_CMD;
	mock.rereg_errno = 0;
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), -EIO);
	assert_msg("must not be used any more");
	mock.rereg_rc = IBV_REREG_MR_ERR_DO_FORK_OLD;
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), 0);
	mock.rereg_rc = 0;

	rv_mr_unref(mr);
	rv_pd_unref(pd);
	rv_pd_unref(pd2);
	close_mock(dev, ctx);
}

static void test_ibv_driver__resources_and_the_escape_hatch(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_cq_attr ca = { .mask = RV_CQ_ATTR_CQE, .cqe = 64 };
	static char buf[4096];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr;
	rv_cq *cq;
	rv_qp *qp;
	rv_qp_cap cap;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_non_null(rv_pd_ibv(pd));
	assert_int_equal(mock.pd_out, 1);

	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf),
				   RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, &mr), 0);
	assert_int_equal(mock.reg_access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(rv_mr_ibv(mr));
	assert_int_equal(rv_mr_lkey(mr), rv_mr_ibv(mr)->lkey);
	assert_int_equal(rv_mr_rkey(mr), rv_mr_ibv(mr)->rkey);
	assert_ptr_equal(rv_mr_ibv(mr)->addr, buf);

	assert_int_equal(rv_cq_new(ctx, &ca, &cq), 0);
	/* The size the provider actually gave. */
	assert_int_equal(rv_cq_size(cq), 127);
	assert_ptr_equal(rv_cq_ibv(cq)->cq_context, cq);

	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(mock.last_init.qp_type, IBV_QPT_RC);
	assert_int_equal(mock.last_init.sq_sig_all, 1);
	assert_ptr_equal(mock.last_init.send_cq, rv_cq_ibv(cq));
	assert_ptr_equal(mock.last_init.recv_cq, rv_cq_ibv(cq));
	assert_ptr_equal(mock.last_init.qp_context, qp);
	assert_null(mock.last_init.srq);
	assert_int_equal(mock.last_init.cap.max_send_wr, 128);
	assert_int_equal(mock.last_init.cap.max_recv_sge, 1);
	assert_int_equal(rv_qp_num(qp), 0x101);
	assert_int_equal(rv_qp_ibv(qp)->qp_num, 0x101);
	assert_ptr_equal(rv_qp_ibv(qp)->pd, rv_pd_ibv(pd));
	/* The inline space read back after creation, not the request. */
	assert_int_equal(rv_qp_get_cap(qp, &cap), 0);
	assert_int_equal(cap.max_inline_data, 64);

	/* The hatch refuses what is not a handle of its type. */
	assert_null(rv_qp_ibv(NULL));
	assert_null(rv_qp_ibv((rv_qp *)(void *)cq));
	assert_null(rv_cq_ibv((rv_cq *)(void *)qp));
	assert_null(rv_context_ibv((rv_context *)(void *)pd));

	close_mock(dev, ctx);
	/* Closed handles give NULL. */
	assert_null(rv_qp_ibv(qp));
	assert_null(rv_mr_ibv(mr));
	assert_null(rv_pd_ibv(pd));
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_mr_unref(mr);
	rv_pd_unref(pd);
}

static void test_ibv_driver__mr_enomem_names_the_memlock_limit(void **state)
{
	static char buf[64];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr = NULL;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	mock.reg_errno = ENOMEM;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -ENOMEM);
	assert_null(mr);
	assert_msg("rv_mr_reg");
	assert_msg("ibv_reg_mr");
	assert_msg("RLIMIT_MEMLOCK, now ");
	assert_msg("ulimit -l unlimited");
	assert_msg("/etc/security/limits.conf");

	mock.reg_errno = EFAULT;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -EFAULT);
	assert_msg("not entirely mapped");
	close_mock(dev, ctx);
	rv_pd_unref(pd);
}

static void test_ibv_driver__cq_and_qp_caps_name_the_device_limits(void **state)
{
	rv_cq_attr ca = { .mask = RV_CQ_ATTR_CQE, .cqe = 5000 };
	rv_qp_init_attr qa;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp = NULL;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_cq_new(ctx, &ca, &cq), -EINVAL);
	assert_msg("ibv_create_cq(cqe 5000");
	assert_msg("allows cqe up to 4096");

	ca.cqe = 16;
	assert_int_equal(rv_cq_new(ctx, &ca, &cq), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = cq;
	qa.cap = (rv_qp_cap){ .max_send_wr = 5000, .max_recv_wr = 1, .max_send_sge = 1,
			      .max_recv_sge = 1 };
	assert_int_equal(rv_qp_new(pd, &qa, &qp), -EINVAL);
	assert_null(qp);
	assert_msg("ibv_create_qp(RC) on mock_0");
	assert_msg("max_send_wr 5000");
	assert_msg("max_qp_wr 1024");
	close_mock(dev, ctx);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__connect_gives_libibverbs_each_transition(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b;
	rv_endpoint ea, eb;
	const struct ibv_qp_attr *x;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(rv_qp_endpoint(a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	/* The RoCE v2 entry (index 1), not entry 0 (RoCE v1): lib/gid_select.c. */
	{
		uint8_t v2[16];
		memcpy(v2, mock_gid, 16);
		v2[15]++;
		assert_memory_equal(ea.gid, v2, 16);
		assert_int_equal(rv_qp_gid_index(a), 1);
		assert_true(ea.caps & RV_EP_CAP_ROCE_V2);
	}

	assert_int_equal(rv_qp_connect(a, &eb), 0);
	assert_int_equal(rv_qp_state_of(a), RV_QPS_RTS);
	assert_int_equal(mock.n_modify, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mock.modify_qpn[i], rv_qp_num(a));

	x = &mock.modify_attr[0];
	assert_int_equal(mock.modify_mask[0],
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	assert_int_equal(x->qp_state, IBV_QPS_INIT);
	assert_int_equal(x->port_num, 1);
	assert_int_equal(x->pkey_index, 0);
	assert_int_equal(x->qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);

	x = &mock.modify_attr[1];
	assert_int_equal(mock.modify_mask[1], IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER);
	assert_int_equal(x->qp_state, IBV_QPS_RTR);
	assert_int_equal(x->dest_qp_num, rv_qp_num(b));
	assert_int_equal(x->rq_psn, eb.psn);
	assert_int_equal(x->path_mtu, IBV_MTU_1024);
	assert_int_equal(x->max_dest_rd_atomic, 16);
	assert_int_equal(x->min_rnr_timer, 12);
	assert_int_equal(x->ah_attr.is_global, 1);
	assert_memory_equal(x->ah_attr.grh.dgid.raw, eb.gid, 16);
	assert_int_equal(x->ah_attr.grh.sgid_index, 1); /* the GID the endpoint advertised */
	assert_int_equal(x->ah_attr.grh.hop_limit, 64);
	assert_int_equal(x->ah_attr.port_num, 1);

	x = &mock.modify_attr[2];
	assert_int_equal(mock.modify_mask[2], IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	assert_int_equal(x->qp_state, IBV_QPS_RTS);
	assert_int_equal(x->sq_psn, ea.psn);
	assert_int_equal(x->timeout, 14);
	assert_int_equal(x->retry_cnt, 7);
	assert_int_equal(x->rnr_retry, 7);
	assert_int_equal(x->max_rd_atomic, 16);

	close_mock(dev, ctx);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__refused_rtr_explains_roce_addressing(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_qp_attr rtr;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);

	memset(&rtr, 0, sizeof(rtr));
	rtr.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
	rtr.dest_qp_num = 0x999;
	rtr.ah_attr.port_num = 1; /* no GRH on an Ethernet port */
	mock.modify_errno = EINVAL;
	assert_int_equal(rv_qp_to_rtr(qp, &rtr), -EINVAL);
	assert_msg("ibv_modify_qp(QP 257, INIT -> RTR) on mock_0");
	assert_msg("Ethernet (RoCE)");
	assert_msg("is_global 1");
	/* The QP did not move. */
	mock.modify_errno = 0;
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_INIT);

	close_mock(dev, ctx);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__data_path_through_the_facade(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	static char src[256], dst[256];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b;
	rv_mr *smr, *dmr;
	rv_endpoint ea, eb;
	rv_wc wc[4];

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(rv_mr_reg(pd, src, sizeof(src), RV_ACCESS_LOCAL_WRITE, &smr), 0);
	assert_int_equal(rv_mr_reg(pd, dst, sizeof(dst),
				   RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, &dmr), 0);
	rv_sge sge = { .addr = (uintptr_t)src, .length = 32, .lkey = rv_mr_lkey(smr) };

	/* Not connected yet: the provider refuses, and the words say why. */
	assert_int_equal(rv_qp_write(a, &sge, (uintptr_t)dst, rv_mr_rkey(dmr), 8), -EINVAL);
	assert_msg("rv_qp_post_send: ibv_post_send refused WR 0 (RDMA_WRITE, 1 SGE, 32 bytes)");
	assert_msg("(RESET: sends need RTS)");

	assert_int_equal(rv_qp_endpoint(a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_int_equal(rv_qp_connect(a, &eb), 0);
	assert_int_equal(rv_qp_connect(b, &ea), 0);

	memcpy(src, "thirty-two bytes of payload.....", 32);
	assert_int_equal(rv_qp_write(a, &sge, (uintptr_t)dst, rv_mr_rkey(dmr), 9), 0);
	assert_int_equal(mock.last_send.opcode, IBV_WR_RDMA_WRITE);
	/* 32 bytes fit the 64 bytes of inline space the provider gave. */
	assert_int_equal(mock.last_send.send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(mock.last_send.wr.rdma.remote_addr, (uintptr_t)dst);
	assert_int_equal(mock.last_send.wr.rdma.rkey, rv_mr_rkey(dmr));
	assert_ptr_equal(mock.last_send.sg_list, &sge);

	assert_int_equal(rv_cq_poll(cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(wc[0].status, RV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, RV_WC_RDMA_WRITE);
	assert_int_equal(wc[0].qp_num, rv_qp_num(a));
	assert_memory_equal(dst, src, 32);
	assert_int_equal(rv_cq_poll(cq, wc, 4), 0);

	/* A READ of memory registered without REMOTE_READ: the completion says
	 * so, and the QP's state, read back from libibverbs, is ERR. */
	sge.length = 16;
	assert_int_equal(rv_qp_read(a, &sge, (uintptr_t)dst, rv_mr_rkey(dmr), 10), 0);
	assert_int_equal(rv_cq_poll(cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 10);
	assert_int_equal(wc[0].status, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_qp_state_of(a), RV_QPS_ERR);

	close_mock(dev, ctx);
	rv_mr_unref(smr);
	rv_mr_unref(dmr);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__ud_through_address_handles_and_a_reply_from_the_wc(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE,
			       .qp_type = RV_QPT_UD };
	static uint8_t sbuf[64], rbuf[2][256];
	rv_ah_attr av;
	rv_ah_attr got;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b;
	rv_mr *smr, *rmr;
	rv_ah *ah, *reply;
	rv_wc wc[4];
	int n, nwc = 0;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(mock.last_init.qp_type, IBV_QPT_UD);
	assert_int_equal(rv_mr_reg(pd, sbuf, sizeof(sbuf), RV_ACCESS_LOCAL_WRITE, &smr), 0);
	assert_int_equal(rv_mr_reg(pd, rbuf, sizeof(rbuf), RV_ACCESS_LOCAL_WRITE, &rmr), 0);

	/* RESET -> INIT carries pkey_index, port and Q_Key; RTR nothing; RTS the PSN. */
	mock.n_modify = 0;
	assert_int_equal(rv_qp_to_init(a, &(rv_qp_attr){ .mask = RV_QP_QKEY, .qkey = 0x1234 }), 0);
	assert_int_equal(mock.modify_mask[0], IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	assert_int_equal(mock.modify_attr[0].qkey, 0x1234);
	assert_int_equal(rv_qp_to_rtr(a, NULL), 0);
	assert_int_equal(mock.modify_mask[1], IBV_QP_STATE);
	assert_int_equal(rv_qp_to_rts(a, NULL), 0);
	assert_int_equal(mock.modify_mask[2], IBV_QP_STATE | IBV_QP_SQ_PSN);
	assert_int_equal(rv_qp_to_init(b, &(rv_qp_attr){ .mask = RV_QP_QKEY, .qkey = 0x5678 }), 0);
	assert_int_equal(rv_qp_to_rtr(b, NULL), 0);
	assert_int_equal(rv_qp_to_rts(b, NULL), 0);
	/* An address for a connected QP's modify is refused by the state table. */
	assert_int_equal(rv_qp_modify(b, &(rv_qp_attr){ .mask = RV_QP_DEST_QPN, .dest_qp_num = 5 }),
			 -EINVAL);
	assert_msg("RV_QP_DEST_QPN is not allowed");

	memset(&av, 0, sizeof(av));
	av.is_global = 1;
	memcpy(av.dgid, mock_gid, 16);
	av.sgid_index = 1;
	av.sl = 3;
	av.traffic_class = 0x20;
	av.flow_label = 0x12345;
	assert_int_equal(rv_ah_new(pd, &av, &ah), 0);
	assert_int_equal(mock.ah_out, 1);
	assert_int_equal(mock.last_ah.port_num, 1);        /* 0 means port 1 */
	assert_int_equal(mock.last_ah.grh.hop_limit, 64);  /* 0 means 64 */
	assert_int_equal(mock.last_ah.grh.sgid_index, 1);
	assert_int_equal(mock.last_ah.grh.flow_label, 0x12345);
	assert_int_equal(mock.last_ah.is_global, 1);
	assert_int_equal(rv_ah_query(ah, &got), 0);
	assert_int_equal(got.hop_limit, 64);
	assert_ptr_equal(rv_ah_pd(ah), pd);

	rv_sge rs = { .addr = (uintptr_t)rbuf[0], .length = 256, .lkey = rv_mr_lkey(rmr) };
	assert_int_equal(rv_qp_recv(b, &rs, 21), 0);
	memcpy(sbuf, "a datagram", 10);
	rv_sge ss = { .addr = (uintptr_t)sbuf, .length = 10, .lkey = rv_mr_lkey(smr) };
	rv_send_wr wr = { .wr_id = 7, .sg_list = &ss, .num_sge = 1, .opcode = RV_WR_SEND_WITH_IMM,
			  .send_flags = RV_SEND_SIGNALED, .imm_data = 0xfeed, .ah = ah,
			  .remote_qpn = rv_qp_num(b), .remote_qkey = 0x5678 };
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	assert_ptr_equal(mock.last_send.wr.ud.ah, ((struct rv_ah *)ah)->drv_ah);
	assert_int_equal(mock.last_send.wr.ud.remote_qpn, rv_qp_num(b));
	assert_int_equal(mock.last_send.wr.ud.remote_qkey, 0x5678);
	while ((n = rv_cq_poll(cq, wc + nwc, 4 - nwc)) > 0)
		nwc += n;
	assert_int_equal(nwc, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(wc[i].status, RV_WC_SUCCESS);
		if (wc[i].wr_id == 7)
			continue;
		assert_int_equal(wc[i].wr_id, 21);
		assert_int_equal(wc[i].opcode, RV_WC_RECV);
		assert_int_equal(wc[i].byte_len, RV_UD_GRH_LEN + 10);
		assert_int_equal(wc[i].src_qp, rv_qp_num(a));
		assert_int_equal(wc[i].wc_flags, RV_WC_GRH | RV_WC_WITH_IMM);
		assert_int_equal(wc[i].imm_data, 0xfeed);
		assert_int_equal(wc[i].slid, 0x11);
		assert_int_equal(wc[i].sl, 3);
		assert_int_equal(wc[i].pkey_index, 0);
		assert_memory_equal(rbuf[0] + RV_UD_GRH_LEN, "a datagram", 10);
		/* The reply: to the GRH's source, from the GID it was sent to. */
		assert_int_equal(rv_ah_from_wc(pd, 1, &wc[i], rbuf[0], &reply), 0);
		assert_int_equal(rv_ah_query(reply, &got), 0);
		assert_memory_equal(got.dgid, mock_gid, 16);
		assert_int_equal(got.sgid_index, 0);
		assert_int_equal(got.dlid, 0x11);
		assert_int_equal(got.sl, 3);
		assert_int_equal(got.flow_label, 0x12345);
		assert_int_equal(got.traffic_class, 0x20);
		assert_int_equal(got.is_global, 1);
		/* A GRH sent to a GID this port does not have: libibverbs refuses. */
		rbuf[0][39] ^= 0x80;
		assert_int_equal(rv_ah_from_wc(pd, 1, &wc[i], rbuf[0], &(rv_ah *){ NULL }), -ENOENT);
		assert_msg("ibv_init_ah_from_wc(port 1");
		/* RV_WC_GRH without the buffer. */
		assert_int_equal(rv_ah_from_wc(pd, 1, &wc[i], NULL, &(rv_ah *){ NULL }), -EINVAL);
		assert_msg("RV_WC_GRH but grh is NULL");
	}

	/* A wrong Q_Key: the datagram is dropped, the send still completes. */
	assert_int_equal(rv_qp_recv(b, &rs, 22), 0);
	wr.remote_qkey = 0x9999;
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	assert_int_equal(mock.ud_dropped, 1);
	assert_int_equal(rv_cq_poll(cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 7);

	/* Bad WRs never reach the provider: no AH, an AH of another PD, a QPN
	 * beyond 24 bits, an RDMA opcode; then a closed AH. */
	rv_pd *pd2;
	rv_ah *ah2;
	assert_int_equal(rv_pd_new(ctx, NULL, &pd2), 0);
	assert_int_equal(rv_ah_new(pd2, &av, &ah2), 0);
	int sent = mock.n_send;
	rv_send_wr bad = wr;
	bad.ah = NULL;
	assert_int_equal(rv_qp_post_send(a, &bad, 1, NULL), -EINVAL);
	assert_msg("needs an address handle");
	bad.ah = ah2;
	assert_int_equal(rv_qp_post_send(a, &bad, 1, NULL), -EINVAL);
	assert_msg("another PD");
	bad.ah = ah;
	bad.remote_qpn = 1u << 24;
	assert_int_equal(rv_qp_post_send(a, &bad, 1, NULL), -EINVAL);
	assert_msg("remote_qpn 0x1000000");
	bad.remote_qpn = rv_qp_num(b);
	bad.opcode = RV_WR_RDMA_WRITE;
	assert_int_equal(rv_qp_post_send(a, &bad, 1, NULL), -EINVAL);
	assert_msg("UD carries only");
	/* Closing the PD closes its AH: a send naming it gets -RV_ECLOSED. */
	assert_int_equal(rv_pd_close(pd2), 0);
	bad = wr;
	bad.ah = ah2;
	assert_int_equal(rv_qp_post_send(a, &bad, 1, NULL), -RV_ECLOSED);
	assert_msg("closed because");
	assert_int_equal(rv_ah_query(ah2, &got), -RV_ECLOSED);
	assert_int_equal(mock.n_send, sent);
	assert_int_equal(mock.ah_out, 2);

	assert_int_equal(rv_ah_close(reply), 0);
	assert_int_equal(rv_ah_close(reply), 0);
	assert_int_equal(mock.ah_out, 1);
	close_mock(dev, ctx);
	assert_int_equal(mock.ah_out, 0);
	rv_ah_unref(ah2);
	rv_ah_unref(reply);
	rv_ah_unref(ah);
	rv_pd_unref(pd2);
	rv_mr_unref(smr);
	rv_mr_unref(rmr);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__refused_destroy_keeps_the_qp_and_the_close_retries(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);

	mock.destroy_qp_busy = 1;
	assert_int_equal(rv_qp_close(qp), -EBUSY);
	assert_msg("rv_qp_close");
	assert_msg("ibv_destroy_qp on mock_0");
	assert_msg("retried");
	assert_int_equal(mock.qp_out, 1);
	assert_non_null(rv_qp_ibv(qp));

	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(mock.qp_out, 0);
	assert_null(rv_qp_ibv(qp));

	close_mock(dev, ctx);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__unref_of_everything_frees_every_verbs_object(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	static char buf[64];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), 0);
	assert_int_equal(mock.ctx_out + mock.pd_out + mock.cq_out + mock.qp_out + mock.mr_out, 5);
	/* No explicit close: dropping the last references destroys everything. */
	rv_qp_unref(qp);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
	rv_device_unref(dev);
}

static void test_ibv_driver__escape_hatch_is_null_for_the_software_device(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;

	(void)state;
	if (rv_device_find("soft0", &dev) != 0) {
		skip(); /* built without the software device */
		return;
	}
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_null(rv_context_ibv(ctx));
	assert_null(rv_pd_ibv(pd));
	assert_null(rv_cq_ibv(cq));
	/* Not one libibverbs call was made for it. */
	assert_int_equal(mock.ctx_out + mock.pd_out + mock.cq_out, 0);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
	rv_device_unref(dev);
}

static void test_ibv_driver__srq_through_libibverbs(void **state)
{
	rv_srq_attr sa = { .mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE | RV_SRQ_INIT_ATTR_LIMIT,
			   .max_wr = 10, .max_sge = 2, .srq_limit = 3 };
	rv_recv_wr wrs[20];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_srq *srq;
	rv_qp *qp;
	size_t posted = 0;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_srq_new(pd, &sa, &srq), 0);
	assert_int_equal(mock.srq_out, 1);
	assert_ptr_equal(mock.last_srq_init.srq_context, srq);
	assert_int_equal(mock.last_srq_init.attr.max_wr, 10);
	assert_int_equal(mock.last_srq_init.attr.max_sge, 2);
	assert_int_equal(mock.last_srq_init.attr.srq_limit, 3);
	/* What the provider gave, read back. */
	assert_int_equal(rv_srq_query(srq, &sa), 0);
	assert_int_equal(sa.max_wr, 16);
	assert_int_equal(sa.srq_limit, 3);

	/* The QP is created on the SRQ. */
	{
		rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ, .send_cq = cq,
				       .srq = srq };
		assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
		assert_non_null(mock.last_init.srq);
		assert_ptr_equal(mock.last_init.srq->srq_context, srq);
		assert_int_equal(mock.last_init.cap.max_recv_wr, 0);
	}
	/* Posting in batches larger than the driver's chain. */
	for (int i = 0; i < 20; i++)
		wrs[i] = (rv_recv_wr){ .wr_id = (uint64_t)i + 100, .sg_list = NULL, .num_sge = 0, .reserved = 0 };
	assert_int_equal(rv_srq_post_recv(srq, wrs, 20, &posted), 0);
	assert_int_equal(posted, 20);
	assert_int_equal(mock.n_srq_recv, 20);
	assert_int_equal(mock.last_srq_wr_id, 119);
	wrs[3].num_sge = 3;
	wrs[3].sg_list = (const rv_sge *)wrs;
	assert_int_equal(rv_srq_post_recv(srq, wrs, 5, &posted), -EINVAL);
	assert_int_equal(posted, 3);
	assert_msg("ibv_post_srq_recv refused WR 3");

	/* Arming the limit: IBV_SRQ_LIMIT; a resize the provider refuses is named. */
	sa = (rv_srq_attr){ .mask = RV_SRQ_LIMIT, .srq_limit = 5 };
	assert_int_equal(rv_srq_modify(srq, &sa), 0);
	assert_int_equal(mock.last_srq_modify_mask, IBV_SRQ_LIMIT);
	assert_int_equal(mock.last_srq_modify.srq_limit, 5);
	sa = (rv_srq_attr){ .mask = RV_SRQ_MAX_WR, .max_wr = 64 };
	assert_int_equal(rv_srq_modify(srq, &sa), -EINVAL);
	assert_msg("ibv_modify_srq");
	assert_msg("SRQ_RESIZE");

	/* Closing the SRQ closes the QP first, then ibv_destroy_srq. */
	assert_int_equal(rv_srq_close(srq), 0);
	assert_int_equal(mock.srq_out, 0);
	assert_int_equal(mock.qp_out, 0);
	assert_int_equal(rv_qp_state_of(qp), -RV_ECLOSED);
	mock.srq_errno = ENOMEM;
	assert_int_equal(rv_srq_new(pd, NULL, &srq), -ENOMEM);
	assert_msg("ibv_create_srq");
	close_mock(dev, ctx);
	rv_qp_unref(qp);
	rv_srq_unref(srq);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__async_events_are_translated_and_acked_at_once(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_srq *srq;
	rv_qp *qp;
	rv_async_event ev;
	int fd;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_srq_new(pd, NULL, &srq), 0);
	{
		rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ, .send_cq = cq,
				       .srq = srq };
		assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	}
	fd = rv_context_async_fd(ctx);
	assert_int_equal(fd, rv_context_ibv(ctx)->async_fd);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 0), -EAGAIN);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 10), -ETIMEDOUT);

	mock.async[0] = (struct ibv_async_event){ .element.qp = rv_qp_ibv(qp), .event_type = IBV_EVENT_QP_FATAL };
	mock.async[1] = (struct ibv_async_event){ .element.cq = rv_cq_ibv(cq), .event_type = IBV_EVENT_CQ_ERR };
	mock.async[2] = (struct ibv_async_event){ .element.srq = mock.last_init.srq,
						  .event_type = IBV_EVENT_SRQ_LIMIT_REACHED };
	mock.async[3] = (struct ibv_async_event){ .element.port_num = 1, .event_type = IBV_EVENT_PORT_ERR };
	mock.async[4] = (struct ibv_async_event){ .element.qp = rv_qp_ibv(qp),
						  .event_type = IBV_EVENT_QP_LAST_WQE_REACHED };
	mock.n_async = 5;
	mock_async_signal(rv_context_ibv(ctx));

	assert_int_equal(rv_context_get_async_event(ctx, &ev, -1), 0);
	assert_int_equal(ev.type, RV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.qp, qp);
	assert_null(ev.cq);
	/* Acked to libibverbs at once, so ibv_destroy_qp never waits for us. */
	assert_int_equal(mock.async_acked, 1);
	/* The event's reference keeps the handle valid after its close. */
	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(rv_qp_state_of(ev.qp), -RV_ECLOSED);
	rv_async_event_ack(&ev);
	assert_null(ev.qp);

	assert_int_equal(rv_context_get_async_event(ctx, &ev, 1000), 0);
	assert_int_equal(ev.type, RV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.cq, cq);
	rv_async_event_ack(&ev);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 0), 0);
	assert_int_equal(ev.type, RV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.srq, srq);
	rv_async_event_ack(&ev);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 0), 0);
	assert_int_equal(ev.type, RV_EVENT_PORT_ERR);
	assert_int_equal(ev.port_num, 1);
	assert_null(ev.qp);
	assert_null(ev.cq);
	assert_null(ev.srq);
	rv_async_event_ack(&ev);
	/* LAST_WQE_REACHED was about the QP closed meanwhile: it went with it. */
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 0), -EAGAIN);
	assert_int_equal(mock.async_acked, 4);

	close_mock(dev, ctx);
	rv_qp_unref(qp);
	rv_srq_unref(srq);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__cq_resize(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_cq *cq;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_cq_resize(cq, 1000), 0);
	assert_int_equal(mock.last_resize, 1000);
	assert_int_equal(rv_cq_size(cq), 1001); /* what the provider gave */
	assert_int_equal(rv_cq_resize(cq, 5000), -EINVAL);
	assert_msg("ibv_resize_cq(5000)");
	assert_msg("max_cqe 4096");
	mock.resize_errno = EOPNOTSUPP;
	assert_int_equal(rv_cq_resize(cq, 10), -EOPNOTSUPP);
	assert_msg("cannot resize");
	assert_int_equal(rv_cq_size(cq), 1001);
	rv_cq_unref(cq);
	close_mock(dev, ctx);
}

/* Memory windows through libibverbs: ibv_alloc_mw; type 1 binds with
 * ibv_bind_mw (the provider's new rkey is the window's), type 2 with an
 * IBV_WR_BIND_MW work request carrying ibv_inc_rkey of the current key;
 * closing the MR deallocates the window; an allocation failure is explained. */
static void test_ibv_driver__memory_windows(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	static char buf[4096];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b;
	rv_mr *mr;
	rv_mw *w1, *w2, *bad = NULL;
	rv_endpoint ea, eb;
	rv_mw_bind_info bi;
	rv_wc wc;
	uint32_t k;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(rv_qp_endpoint(a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_int_equal(rv_qp_connect(a, &eb), 0);
	assert_int_equal(rv_qp_connect(b, &ea), 0);
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE |
				   RV_ACCESS_MW_BIND, &mr), 0);
	assert_int_equal(rv_mw_alloc(pd, RV_MW_TYPE_1, &w1), 0);
	assert_int_equal(rv_mw_alloc(pd, RV_MW_TYPE_2, &w2), 0);
	assert_int_equal(mock.mw_out, 2);
	assert_int_equal(rv_mw_rkey(w1) & 0xff, 0x7f); /* the provider's key */

	bi = (rv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf + 64, .length = 128,
				.access = RV_ACCESS_REMOTE_WRITE };
	k = rv_mw_rkey(w1);
	assert_int_equal(rv_qp_bind_mw(a, w1, &bi, 41, RV_SEND_SIGNALED), 0);
	assert_int_equal(rv_mw_rkey(w1), ibv_inc_rkey(k));
	assert_int_equal(mock.last_bind.addr, (uintptr_t)buf + 64);
	assert_int_equal(mock.last_bind.length, 128);
	assert_int_equal(mock.last_bind.mw_access_flags, IBV_ACCESS_REMOTE_WRITE);
	assert_ptr_equal(mock.last_bind.mr, rv_mr_ibv(mr));
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 1);
	assert_int_equal(wc.opcode, RV_WC_BIND_MW);
	assert_int_equal(wc.wr_id, 41);

	k = rv_mw_rkey(w2);
	assert_int_equal(rv_qp_bind_mw(a, w2, &bi, 42, RV_SEND_SIGNALED), 0);
	assert_int_equal(mock.last_send.opcode, IBV_WR_BIND_MW);
	assert_int_equal(mock.last_send.bind_mw.rkey, ibv_inc_rkey(k));
	assert_int_equal(rv_mw_rkey(w2), ibv_inc_rkey(k));
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 1);
	assert_int_equal(wc.opcode, RV_WC_BIND_MW);
	assert_int_equal(wc.wr_id, 42);

	/* Closing the MR deallocates both windows first. */
	assert_int_equal(rv_mr_close(mr), 0);
	assert_int_equal(mock.mw_out, 0);
	assert_int_equal(rv_qp_bind_mw(a, w1, &bi, 0, 0), -RV_ECLOSED);

	mock.mw_errno = EOPNOTSUPP;
	assert_int_equal(rv_mw_alloc(pd, RV_MW_TYPE_2, &bad), -EOPNOTSUPP);
	assert_msg("ibv_alloc_mw(type 2)");
	assert_null(bad);
	mock.mw_errno = 0;

	rv_mw_unref(w1);
	rv_mw_unref(w2);
	rv_mr_unref(mr);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	close_mock(dev, ctx);
}

/* A provider without the extended verbs (the mock's plain ibv_context):
 * ibv_query_device_ex falls back to the legacy query, so the extended part
 * reports nothing; a CQ with timestamps and the device clock are refused
 * with -EOPNOTSUPP naming the reason; rv_cq_poll_ex on a plain CQ gives the
 * completions without extended fields. */
/* XRC through libibverbs: refused, naming IBV_DEVICE_XRC, on a device
 * without it; on one with it, ibv_open_xrcd (no file), ibv_create_srq_ex
 * (IBV_SRQT_XRC with the PD, the domain and the CQ) and ibv_get_srq_num. */
static void test_ibv_driver__xrc_through_libibverbs(void **state)
{
	rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ, .qp_type = RV_QPT_XRC_SEND};
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC};
	rv_device *dev;
	rv_context *ctx;
	rv_xrcd *x = NULL;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp = NULL;
	rv_srq *srq = NULL;
	uint32_t num = 0;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_xrcd_new(ctx, NULL, &x), -EOPNOTSUPP);
	assert_msg("IBV_DEVICE_XRC");
	assert_null(x);
	ia.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &ia, &qp), -EOPNOTSUPP);
	assert_msg("IBV_DEVICE_XRC");
	assert_null(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	close_mock(dev, ctx);

	mock.extended = 1;
	mock.xrc = 1;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_xrcd_new(ctx, NULL, &x), 0);
	assert_int_equal(mock.xrcd_out, 1);
	assert_int_equal(mock.last_xrcd_init.fd, -1);
	assert_true(mock.last_xrcd_init.oflags & O_CREAT);
	sa.xrcd = x;
	sa.cq = cq;
	assert_int_equal(rv_srq_new(pd, &sa, &srq), 0);
	assert_int_equal(mock.last_srq_ex.srq_type, IBV_SRQT_XRC);
	assert_non_null(mock.last_srq_ex.xrcd);
	assert_non_null(mock.last_srq_ex.cq);
	assert_non_null(mock.last_srq_ex.pd);
	assert_int_equal(rv_srq_num(srq, &num), 0);
	assert_int_equal(num, 0x4242);
	/* The domain closes its SRQ first, then itself. */
	assert_int_equal(rv_xrcd_close(x), 0);
	assert_int_equal(mock.xrcd_out, 0);
	assert_int_equal(rv_srq_num(srq, &num), -RV_ECLOSED);
	rv_srq_unref(srq);
	rv_xrcd_unref(x);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	close_mock(dev, ctx);
	mock.xrc = 0;
	mock.extended = 0;
}

static void test_ibv_driver__no_extended_verbs_means_eopnotsupp(void **state)
{
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_device *dev;
	rv_context *ctx;
	rv_cq *cq = NULL;
	uint64_t raw = 7;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_int_equal(da.max_qp_wr, 1024);
	assert_int_equal(da.completion_timestamp_mask, 0);
	assert_int_equal(da.hca_core_clock, 0);
	assert_int_equal(da.cq_wc_flags, 0);
	assert_int_equal(da.max_send_sge, MOCK_SGE);
	assert_int_equal(da.max_recv_sge, MOCK_SGE);
	assert_int_equal(da.max_inline_data, 0);
	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_TIMESTAMP},
				   &cq),
			 -EOPNOTSUPP);
	assert_msg("does not stamp completions");
	assert_null(cq);
	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS,
						      .wc_flags = RV_CQ_WC_TIMESTAMP_WALLCLOCK},
				   &cq),
			 -EOPNOTSUPP);
	assert_msg("ibv_create_cq_ex");
	assert_int_equal(rv_context_read_clock(ctx, &raw), -EOPNOTSUPP);
	assert_msg("cannot read its clock");
	assert_int_equal(raw, 7);
	close_mock(dev, ctx);
}

/* ODP through libibverbs: without the extended verbs (no odp_caps) the
 * facade refuses ON_DEMAND; with ODP but not implicit ODP, the whole space is
 * refused and a range goes to ibv_reg_mr with IBV_ACCESS_ON_DEMAND; with
 * implicit ODP ibv_reg_mr gets NULL and SIZE_MAX; advice reaches the
 * provider's advise_mr as given, and its errno comes back negated. */
static void test_ibv_driver__odp_registration_and_advice(void **state)
{
	static char buf[4096];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr = NULL, *imr = NULL;
	rv_sge g;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_ON_DEMAND, &mr), -EOPNOTSUPP);
	assert_msg("no on-demand paging");
	g = (rv_sge){.addr = (uintptr_t)buf, .length = 64, .lkey = 1};
	assert_int_equal(rv_mr_advise(pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EOPNOTSUPP);
	rv_pd_unref(pd);
	close_mock(dev, ctx);

	mock.extended = 1;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_mr_reg(pd, NULL, SIZE_MAX, RV_ACCESS_ON_DEMAND | RV_ACCESS_LOCAL_WRITE, &imr),
			 -EOPNOTSUPP);
	assert_msg("not implicit ODP");
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_ON_DEMAND | RV_ACCESS_LOCAL_WRITE, &mr), 0);
	assert_int_equal(mock.reg_access, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	g.lkey = rv_mr_lkey(mr);
	assert_int_equal(rv_mr_advise(pd, RV_ADVISE_MR_PREFETCH_WRITE, RV_ADVISE_MR_FLAG_FLUSH, &g, 1), 0);
	assert_int_equal(mock.n_advise, 1);
	assert_int_equal(mock.last_advice, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	assert_int_equal(mock.last_advise_flags, IBV_ADVISE_MR_FLAG_FLUSH);
	assert_int_equal(mock.last_advise_n, 1);
	assert_int_equal(mock.last_advise_sge.addr, g.addr);
	assert_int_equal(mock.last_advise_sge.lkey, g.lkey);
	mock.advise_rc = EFAULT;
	assert_int_equal(rv_mr_advise(pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EFAULT);
	assert_msg("ibv_advise_mr(advice 0");
	mock.advise_rc = ENOSYS; /* an old libibverbs */
	assert_int_equal(rv_mr_advise(pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EOPNOTSUPP);
	mock.advise_rc = 0;
	mr = rv_mr_unref(mr);

	mock.odp_implicit = 1;
	assert_int_equal(rv_mr_reg(pd, NULL, SIZE_MAX, RV_ACCESS_ON_DEMAND | RV_ACCESS_LOCAL_WRITE, &imr), 0);
	assert_null(mock.reg_addr);
	assert_true(mock.reg_length == SIZE_MAX);
	assert_null(rv_mr_addr(imr));
	rv_mr_unref(imr);
	rv_pd_unref(pd);
	close_mock(dev, ctx);
	mock.extended = 0;
	mock.odp_implicit = 0;
}

/* A provider with them: ibv_query_device_ex's fields arrive in
 * rv_device_attr, a CQ with timestamps is an ibv_cq_ex polled with
 * start/next/end (rv_cq_poll_ex gives each stamp, rv_cq_poll the plain
 * completions), the clock reads ibv_query_rt_values_ex, and a flag the
 * provider refuses is -EOPNOTSUPP. */
static void test_ibv_driver__extended_query_and_cq_timestamps(void **state)
{
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	static char src[64], dst[64];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq, *bad = NULL;
	rv_qp *a, *b;
	rv_mr *smr, *dmr;
	rv_endpoint ea, eb;
	rv_wc_ex x[4];
	rv_wc wc;
	uint64_t t0, t1;

	(void)state;
	mock.extended = 1;
	mock.ts_mask = (UINT64_C(1) << 48) - 1;
	mock.clock = 1000;
	mock.cq_ex_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_int_equal(da.max_qp_wr, 1024);
	assert_int_equal(da.completion_timestamp_mask, mock.ts_mask);
	assert_int_equal(da.hca_core_clock, 156250);
	assert_int_equal(da.cq_wc_flags, RV_CQ_WC_TIMESTAMP);
	assert_true(da.device_cap_flags_ex & RV_DEVICE_CAP_ATOMIC_WRITE);
	assert_int_equal(da.odp_general_caps, RV_ODP_SUPPORT);
	assert_int_equal(da.odp_rc_caps, RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_WRITE);
	assert_int_equal(da.pp_rate_limit_min, 1000);
	assert_int_equal(da.pp_rate_limit_max, 100000000);
	assert_int_equal(da.max_dm_size, 262144);
	assert_int_equal(da.pci_atomic_fetch_add, RV_PCI_ATOMIC_8_BYTE);
	assert_int_equal(da.pci_atomic_compare_swap, RV_PCI_ATOMIC_4_BYTE | RV_PCI_ATOMIC_8_BYTE);

	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_FLOW_TAG},
				   &bad),
			 -EOPNOTSUPP);
	assert_msg("cannot give the completion fields 0x200");
	assert_int_equal(rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_TIMESTAMP},
				   &cq),
			 0);
	assert_int_equal(mock.n_cq_ex, 1);
	assert_int_equal(rv_cq_get_wc_flags(cq), RV_CQ_WC_TIMESTAMP);

	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(rv_mr_reg(pd, src, sizeof(src), RV_ACCESS_LOCAL_WRITE, &smr), 0);
	assert_int_equal(rv_mr_reg(pd, dst, sizeof(dst), RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, &dmr), 0);
	assert_int_equal(rv_qp_endpoint(a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_int_equal(rv_qp_connect(a, &eb), 0);
	assert_int_equal(rv_qp_connect(b, &ea), 0);
	rv_sge sge = {.addr = (uintptr_t)src, .length = 16, .lkey = rv_mr_lkey(smr)};

	assert_int_equal(rv_context_read_clock(ctx, &t0), 0);
	assert_int_equal(t0, 1000);
	for (uint64_t k = 1; k <= 3; k++)
		assert_int_equal(rv_qp_write(a, &sge, (uintptr_t)dst, rv_mr_rkey(dmr), k), 0);
	assert_int_equal(rv_context_read_clock(ctx, &t1), 0);
	assert_int_equal(rv_cq_poll_ex(cq, x, 2), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(x[i].wc.wr_id, (uint64_t)i + 1);
		assert_int_equal(x[i].wc.status, RV_WC_SUCCESS);
		assert_int_equal(x[i].wc.opcode, RV_WC_RDMA_WRITE);
		assert_int_equal(x[i].wc.qp_num, rv_qp_num(a));
		assert_int_equal(x[i].ex_flags, RV_CQ_WC_TIMESTAMP);
		assert_true(x[i].timestamp > t0 && x[i].timestamp <= t1);
	}
	assert_true(x[0].timestamp < x[1].timestamp);
	/* The plain poll on the same CQ goes through start/next/end too. */
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 0);
	assert_int_equal(rv_cq_poll_ex(cq, x, 4), 0);

	close_mock(dev, ctx);
	rv_mr_unref(smr);
	rv_mr_unref(dmr);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_ibv_driver__memory_windows),
		T(test_ibv_driver__probe_lists_devices_and_keeps_the_list_for_the_last),
		T(test_ibv_driver__no_kernel_support_means_no_devices),
		T(test_ibv_driver__default_device_needs_an_active_port),
		T(test_ibv_driver__default_skips_an_unopenable_device_with_a_warning),
		T(test_ibv_driver__open_failure_names_the_call_and_the_permission),
		T(test_ibv_driver__queries),
		T(test_ibv_driver__resources_and_the_escape_hatch),
		T(test_ibv_driver__mr_rereg),
		T(test_ibv_driver__mr_enomem_names_the_memlock_limit),
		T(test_ibv_driver__cq_and_qp_caps_name_the_device_limits),
		T(test_ibv_driver__connect_gives_libibverbs_each_transition),
		T(test_ibv_driver__refused_rtr_explains_roce_addressing),
		T(test_ibv_driver__data_path_through_the_facade),
		T(test_ibv_driver__ud_through_address_handles_and_a_reply_from_the_wc),
	T(test_ibv_driver__refused_destroy_keeps_the_qp_and_the_close_retries),
		T(test_ibv_driver__unref_of_everything_frees_every_verbs_object),
		T(test_ibv_driver__escape_hatch_is_null_for_the_software_device),
		T(test_ibv_driver__srq_through_libibverbs),
		T(test_ibv_driver__async_events_are_translated_and_acked_at_once),
		T(test_ibv_driver__cq_resize),
		T(test_ibv_driver__xrc_through_libibverbs),
		T(test_ibv_driver__no_extended_verbs_means_eopnotsupp),
		T(test_ibv_driver__extended_query_and_cq_timestamps),
		T(test_ibv_driver__odp_registration_and_advice),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
