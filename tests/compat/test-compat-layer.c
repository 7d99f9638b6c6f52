/*
 * The libibverbs-compatible layer (compat/) through libibverbs' own API, as a
 * program sees it: soft0 in the device list, contexts and objects with the
 * public structs filled, libibverbs' error conventions for bad arguments,
 * EBUSY for an object in use, a loopback RDMA WRITE and SEND between two
 * contexts through verbs.h's inline data path, and the real devices of the
 * system's libibverbs beside soft0 (skipped when there are none).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include <infiniband/verbs.h>

static struct ibv_device *find_soft0(struct ibv_device **list)
{
	for (int i = 0; list && list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "soft0") == 0)
			return list[i];
	return NULL;
}

static struct ibv_context *open_soft0(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev;
	struct ibv_context *c;

	assert_non_null(list);
	dev = find_soft0(list);
	assert_non_null(dev);
	c = ibv_open_device(dev);
	assert_non_null(c);
	ibv_free_device_list(list);
	return c;
}

static void test_compat__lists_soft0_as_a_roce_like_device(void **state)
{
	int n = -1;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_device *dev;

	(void)state;
	assert_non_null(list);
	assert_true(n >= 1);
	assert_null(list[n]);
	dev = find_soft0(list);
	assert_non_null(dev);
	assert_int_equal(dev->node_type, IBV_NODE_CA);
	assert_int_equal(dev->transport_type, IBV_TRANSPORT_IB);
	assert_int_equal(ibv_get_device_index(dev), -1);
	assert_true(ibv_get_device_guid(dev) != 0);
	ibv_free_device_list(list);
	ibv_free_device_list(NULL); /* accepted, as libibverbs does */
}

static void test_compat__port_lid_is_tcp_port_and_gid_is_ipv4_mapped(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_port_attr port;
	struct ibv_device_attr dev;
	struct ibv_device_attr_ex ex;
	union ibv_gid gid;
	static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	__be16 pkey;

	(void)state;
	assert_int_equal(ibv_query_port(c, 1, &port), 0);
	assert_int_equal(port.state, IBV_PORT_ACTIVE);
	assert_int_equal(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_true(port.lid != 0);
	assert_int_equal(ibv_query_gid(c, 1, 0, &gid), 0);
	assert_memory_equal(gid.raw, v4map, sizeof(v4map));
	assert_int_equal(ibv_query_device(c, &dev), 0);
	assert_int_equal(dev.phys_port_cnt, 1);
	assert_true(dev.max_qp > 0);
	/* soft0's memory windows, through ibv_alloc_mw / ibv_bind_mw. */
	assert_int_not_equal(dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW, 0);
	assert_true(dev.max_mw > 0);
	assert_int_equal(ibv_query_device_ex(c, NULL, &ex), 0);
	assert_int_equal(ex.orig_attr.max_qp, dev.max_qp);
	assert_int_equal(ex.odp_caps.general_caps, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT); /* test-compat-odp.c */
	assert_int_equal(ibv_query_pkey(c, 1, 0, &pkey), 0);
	assert_int_equal(pkey, htobe16(0xffff));
	assert_int_equal(ibv_get_pkey_index(c, 1, htobe16(0xffff)), 0);
	/* Port 2 and GID index 5 do not exist. */
	assert_int_not_equal(ibv_query_port(c, 2, &port), 0);
	assert_int_equal(ibv_query_gid(c, 1, 5, &gid), -1);
	assert_int_equal(ibv_close_device(c), 0);
}

/* soft0's port is Ethernet: an AH without a GRH is refused (EINVAL), as
 * on every RoCE device; with one it is created. */
static void test_compat__ah_without_grh_refused_on_the_ethernet_port(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_port_attr pa;
	struct ibv_ah_attr aa = {.dlid = 1, .port_num = 1};
	struct ibv_ah *ah;

	(void)state;
	assert_non_null(pd);
	assert_int_equal(ibv_query_port(c, 1, &pa), 0);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	errno = 0;
	assert_null(ibv_create_ah(pd, &aa));
	assert_int_equal(errno, EINVAL);
	aa.is_global = 1;
	aa.dlid = pa.lid;
	assert_int_equal(ibv_query_gid(c, 1, 0, &aa.grh.dgid), 0);
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	assert_non_null(ah);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(c), 0);
}

/* CQ timestamps: ibv_query_device_ex says what rverbs reports, an
 * extended CQ with them is created exactly when it says so, and the raw
 * clock of ibv_query_rt_values_ex moves forward. */
static void test_compat__cq_timestamps_follow_the_device(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_device_attr_ex da;
	struct ibv_values_ex v1 = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK}, v2 = v1;
	struct ibv_cq_init_attr_ex ca = {.cqe = 4, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
							       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK};
	struct ibv_poll_cq_attr pa = {0};
	struct ibv_cq_ex *cq;

	(void)state;
	assert_int_equal(ibv_query_device_ex(c, NULL, &da), 0);
	errno = 0;
	cq = ibv_create_cq_ex(c, &ca);
	if (da.completion_timestamp_mask == 0) {
		assert_null(cq);
		assert_int_equal(errno, EOPNOTSUPP);
	} else {
		struct ibv_pd *pd = ibv_alloc_pd(c);
		struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
					      .cap = {.max_send_wr = 2, .max_recv_wr = 2,
						      .max_send_sge = 1, .max_recv_sge = 1}};
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11};
		struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
		struct ibv_port_attr port;
		struct ibv_send_wr wr = {0}, *bad = NULL;
		struct ibv_qp *qp;
		struct ibv_ah *ah;
		struct timespec now;
		uint64_t ts, wall, before;
		int rc = ENOENT;

		assert_non_null(cq);
		assert_true(da.hca_core_clock > 0);
		assert_int_equal(ibv_start_poll(cq, &pa), ENOENT);
		/* A UD send's completion carries both stamps. */
		assert_non_null(pd);
		qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq);
		qp = ibv_create_qp(pd, &qa);
		assert_non_null(qp);
		assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							       IBV_QP_QKEY), 0);
		a.qp_state = IBV_QPS_RTR;
		assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
		assert_int_equal(ibv_query_port(c, 1, &port), 0);
		assert_int_equal(ibv_query_gid(c, 1, 0, &aa.grh.dgid), 0);
		aa.dlid = port.lid;
		aa.grh.hop_limit = 1;
		ah = ibv_create_ah(pd, &aa);
		assert_non_null(ah);
		assert_int_equal(ibv_query_rt_values_ex(c, &v1), 0);
		before = (uint64_t)v1.raw_clock.tv_nsec;
		wr.wr_id = 9;
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qp->qp_num;
		wr.wr.ud.remote_qkey = 0x11;
		assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
		for (int i = 0; i < 200000 && rc == ENOENT; i++) {
			rc = ibv_start_poll(cq, &pa);
			if (rc == ENOENT)
				usleep(50);
		}
		assert_int_equal(rc, 0);
		assert_int_equal(cq->wr_id, 9);
		assert_int_equal(cq->status, IBV_WC_SUCCESS);
		ts = ibv_wc_read_completion_ts(cq);
		wall = ibv_wc_read_completion_wallclock_ns(cq);
		ibv_end_poll(cq);
		assert_true(ts >= before);
		assert_int_equal(ibv_query_rt_values_ex(c, &v2), 0);
		assert_true(ts <= (uint64_t)v2.raw_clock.tv_nsec);
		clock_gettime(CLOCK_REALTIME, &now);
		assert_true(wall <= (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
		assert_true(wall + 60ull * 1000000000u > (uint64_t)now.tv_sec * 1000000000u);
		assert_int_equal(ibv_destroy_ah(ah), 0);
		assert_int_equal(ibv_destroy_qp(qp), 0);
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
		assert_int_equal(ibv_dealloc_pd(pd), 0);
	}
	assert_int_equal(ibv_query_rt_values_ex(c, &v1), 0);
	assert_int_equal(ibv_query_rt_values_ex(c, &v2), 0);
	assert_true(v2.raw_clock.tv_nsec >= v1.raw_clock.tv_nsec);
	v1.comp_mask = 1u << 5;
	assert_int_equal(ibv_query_rt_values_ex(c, &v1), EINVAL);
	assert_int_equal(ibv_close_device(c), 0);
}

static void test_compat__bad_arguments_fail_the_libibverbs_way(void **state)
{
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp_init_attr qa = {0};
	struct ibv_cq_init_attr_ex cqa = {.cqe = 4};

	(void)state;
	errno = 0;
	assert_null(ibv_open_device(NULL));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_alloc_pd(NULL));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_dealloc_pd(NULL), EINVAL);
	assert_int_equal(ibv_close_device(NULL), EINVAL);
	assert_null(ibv_get_device_name(NULL));

	c = open_soft0();
	pd = ibv_alloc_pd(c);
	assert_non_null(pd);
	errno = 0;
	assert_null(ibv_create_cq(c, 0, NULL, NULL, 0)); /* no entries */
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(c, 4, NULL, NULL, 7)); /* no such vector */
	assert_int_equal(errno, EINVAL);
	cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= 16);
	/* Extended CQs: the standard completion fields, not the VLAN soft0
	 * has not (the errno of a NIC without it). */
	cqa.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_CVLAN;
	errno = 0;
	assert_null(ibv_create_cq_ex(c, &cqa));
	assert_int_equal(errno, EOPNOTSUPP);
	cqa.wc_flags = IBV_WC_STANDARD_FLAGS;
	{
		struct ibv_cq_ex *ex = ibv_create_cq_ex(c, &cqa);
		struct ibv_poll_cq_attr pa = {0};

		assert_non_null(ex);
		assert_int_equal(ibv_start_poll(ex, &pa), ENOENT); /* empty */
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(ex)), 0);
	}
	/* Extended QPs: the send operations soft0 has; a memory window bind by
	 * the builder is not among them, and a classic QP has no ibv_qp_ex. */
	{
		struct ibv_qp_init_attr_ex xa = {.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
						 .cap = {4, 4, 1, 1, 0}, .pd = pd,
						 .comp_mask = IBV_QP_INIT_ATTR_PD |
							      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
						 .send_ops_flags = IBV_QP_EX_WITH_SEND |
								   IBV_QP_EX_WITH_TSO};
		struct ibv_qp *qp;
		struct ibv_qp_ex *qpx;
		struct ibv_qp_init_attr ca = {.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
					      .cap = {4, 4, 1, 1, 0}};

		errno = 0;
		assert_null(ibv_create_qp_ex(c, &xa));
		assert_int_equal(errno, EOPNOTSUPP);
		xa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
		qp = ibv_create_qp_ex(c, &xa);
		assert_non_null(qp);
		qpx = ibv_qp_to_qp_ex(qp);
		assert_non_null(qpx);
		/* A builder error (an SGE list longer than max_send_sge) is what
		 * ibv_wr_complete says, and nothing is posted. */
		{
			struct ibv_sge two[2] = {{0}, {0}};

			ibv_wr_start(qpx);
			ibv_wr_send(qpx);
			ibv_wr_set_sge_list(qpx, 2, two);
			assert_int_equal(ibv_wr_complete(qpx), EINVAL);
		}
		assert_int_equal(ibv_destroy_qp(qp), 0);
		qp = ibv_create_qp(pd, &ca);
		assert_non_null(qp);
		assert_null(ibv_qp_to_qp_ex(qp));
		assert_int_equal(ibv_destroy_qp(qp), 0);
	}
	/* A raw packet QP is not something soft0 has. */
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	errno = 0;
	assert_null(ibv_create_qp(pd, &qa));
	assert_int_equal(errno, EOPNOTSUPP);
	/* dma-buf and imports need a kernel object soft0 does not have. */
	errno = 0;
	assert_null(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 0, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_pd(c, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	/* An unmapped range cannot be registered (EFAULT, as ibv_reg_mr). */
	errno = 0;
	assert_null(ibv_reg_mr(pd, (void *)8, 4096, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EFAULT);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(c), 0);
}

struct side {
	int ex; /* its CQ comes from ibv_create_cq_ex */
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	struct ibv_port_attr port;
	union ibv_gid gid;
};

#define BUF 8192

static void side_open(struct side *s)
{
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp_attr a = {0};

	s->c = open_soft0();
	s->pd = ibv_alloc_pd(s->c);
	assert_non_null(s->pd);
	s->buf = calloc(1, BUF);
	assert_non_null(s->buf);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_MW_BIND);
	assert_non_null(s->mr);
	assert_ptr_equal(s->mr->addr, s->buf);
	if (s->ex) {
		struct ibv_cq_init_attr_ex cqa = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS};
		struct ibv_cq_ex *ex = ibv_create_cq_ex(s->c, &cqa);

		assert_non_null(ex);
		s->cq = ibv_cq_ex_to_cq(ex);
	} else {
		s->cq = ibv_create_cq(s->c, 16, NULL, NULL, 0);
	}
	assert_non_null(s->cq);
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(s->pd, &qa);
	assert_non_null(s->qp);
	assert_true(s->qp->qp_num != 0);
	assert_int_equal(s->qp->state, IBV_QPS_RESET);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							  IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(ibv_query_port(s->c, 1, &s->port), 0);
	assert_int_equal(ibv_query_gid(s->c, 1, 0, &s->gid), 0);
}

/* To RTR and RTS toward the peer, addressed as ibv_rc_pingpong does: the LID
 * only (no GRH), or with the GID. */
static void side_connect(struct side *s, const struct side *peer, int with_grh)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = peer->port.lid;
	a.ah_attr.port_num = 1;
	if (with_grh) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer->gid;
		a.ah_attr.grh.hop_limit = 1;
	}
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
							  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
							  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
							  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
							  IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static struct ibv_wc wait_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n;

	for (int i = 0; i < 200000; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		assert_true(n >= 0);
		if (n == 1)
			return wc;
		usleep(50);
	}
	fail_msg("no completion within 10 s");
	return wc;
}

/* One completion through the extended CQ's table. */
static struct ibv_wc wait_one_ex(struct ibv_cq *cq)
{
	struct ibv_cq_ex *ex = (struct ibv_cq_ex *)cq; /* what ibv_cq_ex_to_cq undoes */
	struct ibv_poll_cq_attr pa = {0};
	struct ibv_wc wc = {0};
	int rc = ENOENT;

	for (int i = 0; i < 200000 && rc == ENOENT; i++) {
		rc = ibv_start_poll(ex, &pa);
		if (rc == ENOENT)
			usleep(50);
	}
	assert_int_equal(rc, 0);
	wc.wr_id = ex->wr_id;
	wc.status = ex->status;
	wc.opcode = ibv_wc_read_opcode(ex);
	wc.byte_len = ibv_wc_read_byte_len(ex);
	wc.wc_flags = ibv_wc_read_wc_flags(ex);
	wc.imm_data = ibv_wc_read_imm_data(ex);
	wc.qp_num = ibv_wc_read_qp_num(ex);
	ibv_end_poll(ex);
	return wc;
}

static void side_close(struct side *s)
{
	assert_int_equal(ibv_destroy_qp(s->qp), 0);
	assert_int_equal(ibv_destroy_cq(s->cq), 0);
	assert_int_equal(ibv_dereg_mr(s->mr), 0);
	assert_int_equal(ibv_dealloc_pd(s->pd), 0);
	assert_int_equal(ibv_close_device(s->c), 0);
	free(s->buf);
}

static void loopback(int with_grh)
{
	struct side a = {.ex = with_grh}, b = {0};
	struct ibv_sge sge;
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_recv_wr rwr = {0}, *rbad = NULL;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;

	side_open(&a);
	side_open(&b);
	side_connect(&a, &b, with_grh);
	side_connect(&b, &a, with_grh);
	assert_int_equal(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_ptr_equal(qia.send_cq, a.cq);

	/* RDMA WRITE a -> b, through verbs.h's inline ibv_post_send. */
	memset(a.buf, 'w', 4096);
	sge = (struct ibv_sge){.addr = (uintptr_t)a.buf, .length = 4096, .lkey = a.mr->lkey};
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr.wr.rdma.rkey = b.mr->rkey;
	assert_int_equal(ibv_post_send(a.qp, &wr, &bad), 0);
	wc = wait_one(a.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(b.buf[0], 'w');
	assert_int_equal(b.buf[4095], 'w');

	/* SEND with immediate b -> a: the immediate arrives in network order. */
	sge = (struct ibv_sge){.addr = (uintptr_t)a.buf + 4096, .length = 4096, .lkey = a.mr->lkey};
	rwr.wr_id = 9;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	assert_int_equal(ibv_post_recv(a.qp, &rwr, &rbad), 0);
	memcpy(b.buf + 4096, "hello", 6);
	sge = (struct ibv_sge){.addr = (uintptr_t)b.buf + 4096, .length = 6, .lkey = b.mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0x12345678);
	assert_int_equal(ibv_post_send(b.qp, &wr, &bad), 0);
	wc = wait_one(b.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = a.ex ? wait_one_ex(a.cq) : wait_one(a.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.byte_len, 6);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x12345678);
	assert_int_equal(wc.qp_num, a.qp->qp_num);
	assert_string_equal(a.buf + 4096, "hello");

	/* A type 1 memory window of b's MR, bound with ibv_bind_mw: a WRITE
	 * through its rkey lands in the window. */
	{
		struct ibv_mw *mw = ibv_alloc_mw(b.pd, IBV_MW_TYPE_1);
		struct ibv_mw_bind bind = {.wr_id = 11, .send_flags = IBV_SEND_SIGNALED};
		uint32_t old_rkey;

		assert_non_null(mw);
		old_rkey = mw->rkey;
		bind.bind_info.mr = b.mr;
		bind.bind_info.addr = (uintptr_t)b.buf;
		bind.bind_info.length = 4096;
		bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		assert_int_equal(ibv_bind_mw(b.qp, mw, &bind), 0);
		assert_int_not_equal(mw->rkey, old_rkey);
		wc = wait_one(b.cq);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
		memset(a.buf, 'M', 16);
		sge = (struct ibv_sge){.addr = (uintptr_t)a.buf, .length = 16, .lkey = a.mr->lkey};
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 12;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)b.buf + 100;
		wr.wr.rdma.rkey = mw->rkey;
		assert_int_equal(ibv_post_send(a.qp, &wr, &bad), 0);
		wc = wait_one(a.cq);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(b.buf[100], 'M');
		assert_int_equal(b.buf[115], 'M');
		/* the PD is in use while the window lives */
		assert_int_equal(ibv_dealloc_pd(b.pd), EBUSY);
		assert_int_equal(ibv_dealloc_mw(mw), 0);
	}

	/* A bad opcode fails the post with a positive errno and names the WR. */
	wr.opcode = IBV_WR_TSO;
	bad = NULL;
	assert_int_equal(ibv_post_send(b.qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);

	side_close(&a);
	side_close(&b);
}

/* ibv_wr_bind_mw: a type 2 window bound through the builder, then written
 * through by the peer with the window's rkey. */
static void test_compat__builder_binds_a_window(void **state)
{
	struct side a = {0}, b = {0};
	struct ibv_qp_init_attr_ex xa = {0};
	struct ibv_qp_attr qa = {0};
	struct ibv_mw_bind_info info = {0};
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_qp_ex *qpx;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;

	(void)state;
	side_open(&a);
	side_open(&b);
	assert_int_equal(ibv_destroy_qp(b.qp), 0);
	xa.qp_type = IBV_QPT_RC;
	xa.send_cq = xa.recv_cq = b.cq;
	xa.sq_sig_all = 1;
	xa.cap.max_send_wr = xa.cap.max_recv_wr = 8;
	xa.cap.max_send_sge = xa.cap.max_recv_sge = 1;
	xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	xa.pd = b.pd;
	xa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW;
	b.qp = ibv_create_qp_ex(b.c, &xa);
	assert_non_null(b.qp);
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_modify_qp(b.qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							  IBV_QP_ACCESS_FLAGS), 0);
	side_connect(&a, &b, 1);
	side_connect(&b, &a, 1);
	mw = ibv_alloc_mw(b.pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	qpx = ibv_qp_to_qp_ex(b.qp);
	assert_non_null(qpx);
	rkey = ibv_inc_rkey(mw->rkey);
	info.mr = b.mr;
	info.addr = (uintptr_t)b.buf + 256;
	info.length = 64;
	info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ibv_wr_start(qpx);
	qpx->wr_id = 5;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, mw, rkey, &info);
	assert_int_equal(ibv_wr_complete(qpx), 0);
	wc = wait_one(b.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(mw->rkey, rkey);
	memcpy(a.buf, "through the window", 19);
	sge = (struct ibv_sge){.addr = (uintptr_t)a.buf, .length = 19, .lkey = a.mr->lkey};
	wr.wr_id = 6;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = info.addr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(ibv_post_send(a.qp, &wr, &bad), 0);
	wc = wait_one(a.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal(b.buf + 256, "through the window");
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	side_close(&a);
	side_close(&b);
}

static void test_compat__rc_loopback_addressed_by_lid_only(void **state)
{
	(void)state;
	loopback(0);
}

/* (this one also polls through an extended CQ on one side) */
static void test_compat__rc_loopback_addressed_by_gid(void **state)
{
	(void)state;
	loopback(1);
}

/* pyverbs' tests connect two contexts of one process each by its own port's
 * LID and GID, as on a NIC whose contexts share a port; soft0's contexts each
 * listen on a port of their own, and the destination QP tells which. */
static void test_compat__contexts_of_one_process_reach_each_other_by_their_own_port(void **state)
{
	struct side a = {0}, b = {0}, a_names_b, b_names_a;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_recv_wr rwr = {0}, *rbad = NULL;
	struct ibv_wc wc;

	(void)state;
	side_open(&a);
	side_open(&b);
	assert_int_not_equal(a.port.lid, b.port.lid);
	a_names_b = a; /* a's own LID and GID, b's QP */
	a_names_b.qp = b.qp;
	b_names_a = b;
	b_names_a.qp = a.qp;
	side_connect(&a, &a_names_b, 1);
	side_connect(&b, &b_names_a, 1);

	sge = (struct ibv_sge){.addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey};
	rwr.wr_id = 1;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	assert_int_equal(ibv_post_recv(a.qp, &rwr, &rbad), 0);
	memcpy(b.buf, "own port", 9);
	sge = (struct ibv_sge){.addr = (uintptr_t)b.buf, .length = 9, .lkey = b.mr->lkey};
	wr.wr_id = 2;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	assert_int_equal(ibv_post_send(b.qp, &wr, &bad), 0);
	wc = wait_one(b.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = wait_one(a.cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_string_equal(a.buf, "own port");

	side_close(&a);
	side_close(&b);
}

static void test_compat__objects_in_use_are_not_destroyed(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(c);
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr qa = {0};
	struct ibv_srq_init_attr sa = {0};
	struct ibv_srq *srq;

	(void)state;
	assert_non_null(ch);
	assert_true(ch->fd >= 0);
	assert_non_null(pd);
	cq = ibv_create_cq(c, 8, (void *)0x1234, ch, 0);
	assert_non_null(cq);
	assert_ptr_equal(cq->channel, ch);
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(pd, &sa);
	assert_non_null(srq);
	assert_true(sa.attr.max_wr >= 4);
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	assert_non_null(qp);
	/* libibverbs refuses to destroy what something still uses. */
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_cq(cq), EBUSY);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	/* ... and the QP still works after the refusals. */
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(c), 0);
}

static int allocs, frees;

static void *count_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t type)
{
	void *p = NULL;

	(void)type;
	if (pd_context != (void *)0x5678 || !pd || posix_memalign(&p, alignment, size) != 0)
		return NULL;
	allocs++;
	return p;
}

static void count_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t type)
{
	(void)pd;
	(void)pd_context;
	(void)type;
	free(ptr);
	frees++;
}

/* Thread and parent domains: a parent domain is a PD for QPs, MRs and
 * extended CQs, counts as a user of its PD and TD, and its allocators are
 * called with the program's ibv_pd; counters, rate limits and ECE are
 * refused with EOPNOTSUPP as on a NIC without them. */
static void test_compat__thread_and_parent_domains(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_pd *pd = ibv_alloc_pd(c), *pdom, *bad;
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *td;
	struct ibv_parent_domain_init_attr pa = {0};
	struct ibv_cq_init_attr_ex ca = {0};
	struct ibv_cq_ex *cq;
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_counters_init_attr cna = {0};
	struct ibv_qp_rate_limit_attr rl = {.rate_limit = 1000};
	struct ibv_ece ece = {0};
	static char buf[4096];

	(void)state;
	assert_non_null(pd);
	td = ibv_alloc_td(c, &ta);
	assert_non_null(td);
	pa.pd = pd;
	pa.td = td;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = count_alloc;
	pa.free = count_free;
	pa.pd_context = (void *)0x5678;
	pdom = ibv_alloc_parent_domain(c, &pa);
	assert_non_null(pdom);
	/* A parent domain's parent must be an ordinary PD. */
	pa.pd = pdom;
	errno = 0;
	bad = ibv_alloc_parent_domain(c, &pa);
	assert_null(bad);
	assert_int_equal(errno, EINVAL);

	ca.cqe = 16;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = pd; /* not a parent domain */
	errno = 0;
	assert_null(ibv_create_cq_ex(c, &ca));
	assert_int_equal(errno, EINVAL);
	ca.parent_domain = pdom;
	cq = ibv_create_cq_ex(c, &ca);
	assert_non_null(cq);
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq);
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pdom, &qa);
	assert_non_null(qp);
	assert_int_equal(allocs, 5);
	mr = ibv_reg_mr(pdom, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);

	errno = 0;
	assert_null(ibv_create_counters(c, &cna));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_modify_qp_rate_limit(qp, &rl), EOPNOTSUPP);
	assert_int_equal(ibv_query_ece(qp, &ece), EOPNOTSUPP);
	assert_int_equal(ibv_set_ece(qp, &ece), EOPNOTSUPP);

	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);   /* the parent domain uses it */
	assert_int_equal(ibv_dealloc_td(td), EBUSY);   /* idem */
	assert_int_equal(ibv_dealloc_pd(pdom), EBUSY); /* the QP, MR and CQ use it */
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(frees, 5);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	assert_int_equal(ibv_dealloc_pd(pdom), 0);
	assert_int_equal(ibv_dealloc_td(td), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(c), 0);
}

static void test_compat__close_device_with_objects_left_open_succeeds(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	(void)state;
	/* The PD and CQ left open stay allocated on purpose (below), so the
	 * leak checker is told not to count them. */
#ifdef __SANITIZE_ADDRESS__
	__lsan_disable();
#endif
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 8, NULL, NULL, 0);
#ifdef __SANITIZE_ADDRESS__
	__lsan_enable();
#endif
	assert_non_null(pd);
	assert_non_null(cq);
	/* rverbs closes the PD and CQ with the context; their ibv_* wrappers
	 * are not freed, as libibverbs' are not. */
	assert_int_equal(ibv_close_device(c), 0);
}

/* The forwarded calls on a real context: port and GID, then a PD, an MR, a
 * CQ and an RC QP moved to INIT (the provider's own objects), destroyed in
 * order. */
static void use_real_device(struct ibv_context *c)
{
	static char buf[4096];
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	assert_int_equal(ibv_query_port(c, 1, &pa), 0);
	assert_int_equal(ibv_query_gid(c, 1, 0, &gid), 0);
	pd = ibv_alloc_pd(c);
	assert_non_null(pd);
	assert_ptr_equal(pd->context, c);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	assert_non_null(cq);
	qia.send_cq = qia.recv_cq = cq;
	qp = ibv_create_qp(pd, &qia);
	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &qa,
				       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS),
			 0);
	/* Destroying the PD under its QP is the provider's EBUSY. */
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* With a kernel RDMA device, the system's libibverbs lists it and the layer
 * shows it beside soft0, opened by the real library, and its objects work. */
static void test_compat__real_devices_pass_through(void **state)
{
	struct ibv_device **list;
	int n = 0, real = 0;

	(void)state;
	if (access("/sys/class/infiniband_verbs", F_OK) != 0)
		skip();
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	for (int i = 0; i < n; i++) {
		struct ibv_context *c;
		struct ibv_device_attr a;

		if (strcmp(ibv_get_device_name(list[i]), "soft0") == 0)
			continue;
		c = ibv_open_device(list[i]);
		if (!c && (errno == EACCES || errno == EPERM))
			continue; /* a device this user may not open */
		assert_non_null(c);
		real++;
		assert_int_equal(ibv_query_device(c, &a), 0);
		assert_true(a.phys_port_cnt >= 1);
		use_real_device(c);
		assert_int_equal(ibv_close_device(c), 0);
	}
	assert_non_null(find_soft0(list));
	ibv_free_device_list(list);
	if (!real)
		skip();
}

/* XRC through the layer: a domain's file names it in the process, a domain
 * in use is not closed, an XRC SRQ has a number, the QP types are created
 * (a target with its domain only), and bad requests fail as libibverbs'. */
static void test_compat__xrc_domains_srqs_and_qps(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_device_attr da;
	char path[] = "/tmp/rverbs-xrcd-XXXXXX";
	int fd = mkstemp(path);
	struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					.fd = fd, .oflags = O_CREAT};
	struct ibv_xrcd *x, *again;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *tgt, *ini;
	uint32_t num = 0;

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ibv_query_device(c, &da), 0);
	assert_true(da.device_cap_flags & IBV_DEVICE_XRC);
	x = ibv_open_xrcd(c, &xa);
	assert_non_null(x);
	again = ibv_open_xrcd(c, &xa); /* the same file: the same domain */
	assert_ptr_equal(again, x);
	xa.oflags = O_CREAT | O_EXCL;
	errno = 0;
	assert_null(ibv_open_xrcd(c, &xa));
	assert_int_equal(errno, EINVAL);
	xa.fd = -1;
	xa.oflags = 0; /* a new domain needs O_CREAT */
	errno = 0;
	assert_null(ibv_open_xrcd(c, &xa));
	assert_int_equal(errno, EINVAL);
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	assert_non_null(pd);
	assert_non_null(cq);
	{
		struct ibv_srq_init_attr_ex sa = {.attr = {.max_wr = 8, .max_sge = 1}, .srq_type = IBV_SRQT_XRC,
						  .pd = pd, .xrcd = x, .cq = cq,
						  .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
							       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ};
		struct ibv_qp_init_attr_ex ta = {.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD,
						 .xrcd = x};
		struct ibv_qp_init_attr_ex ia = {.qp_type = IBV_QPT_XRC_SEND, .comp_mask = IBV_QP_INIT_ATTR_PD,
						 .pd = pd, .send_cq = cq, .cap = {.max_send_wr = 4, .max_send_sge = 1}};

		srq = ibv_create_srq_ex(c, &sa);
		assert_non_null(srq);
		assert_int_equal(ibv_get_srq_num(srq, &num), 0);
		assert_int_not_equal(num, 0);
		ta.comp_mask = 0; /* a target without its domain */
		errno = 0;
		assert_null(ibv_create_qp_ex(c, &ta));
		assert_int_not_equal(errno, 0);
		ta.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		tgt = ibv_create_qp_ex(c, &ta);
		assert_non_null(tgt);
		assert_null(tgt->pd);
		ini = ibv_create_qp_ex(c, &ia);
		assert_non_null(ini);
		assert_int_equal(ini->qp_type, IBV_QPT_XRC_SEND);
	}
	/* ibv_open_qp: another handle on the target, by its number; a wrong
	 * number or type is refused. The target lives until both are gone. */
	{
		struct ibv_qp_open_attr oa = {.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
							   IBV_QP_OPEN_ATTR_TYPE,
					      .qp_num = tgt->qp_num ^ 1, .xrcd = x, .qp_type = IBV_QPT_XRC_RECV};
		struct ibv_qp_attr qa2;
		struct ibv_qp_init_attr qi;
		struct ibv_qp *opened;

		errno = 0;
		assert_null(ibv_open_qp(c, &oa));
		assert_int_equal(errno, EINVAL);
		oa.qp_num = tgt->qp_num;
		opened = ibv_open_qp(c, &oa);
		assert_non_null(opened);
		assert_int_equal(opened->qp_num, tgt->qp_num);
		assert_int_equal(ibv_destroy_qp(tgt), 0);
		assert_int_equal(ibv_query_qp(opened, &qa2, IBV_QP_STATE, &qi), 0);
		assert_int_equal(qa2.qp_state, IBV_QPS_RESET);
		tgt = opened;
	}
	/* Opened twice: the first close only counts; then the domain is in use. */
	assert_int_equal(ibv_close_xrcd(x), 0);
	assert_int_equal(ibv_close_xrcd(x), EBUSY);
	assert_int_equal(ibv_destroy_qp(tgt), 0);
	assert_int_equal(ibv_close_xrcd(x), EBUSY);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_close_xrcd(x), 0);
	assert_int_equal(ibv_destroy_qp(ini), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	close(fd);
	assert_int_equal(ibv_close_device(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compat__lists_soft0_as_a_roce_like_device),
		cmocka_unit_test(test_compat__port_lid_is_tcp_port_and_gid_is_ipv4_mapped),
		cmocka_unit_test(test_compat__bad_arguments_fail_the_libibverbs_way),
		cmocka_unit_test(test_compat__ah_without_grh_refused_on_the_ethernet_port),
		cmocka_unit_test(test_compat__cq_timestamps_follow_the_device),
		cmocka_unit_test(test_compat__builder_binds_a_window),
		cmocka_unit_test(test_compat__rc_loopback_addressed_by_lid_only),
		cmocka_unit_test(test_compat__rc_loopback_addressed_by_gid),
		cmocka_unit_test(test_compat__contexts_of_one_process_reach_each_other_by_their_own_port),
		cmocka_unit_test(test_compat__objects_in_use_are_not_destroyed),
		cmocka_unit_test(test_compat__thread_and_parent_domains),
		cmocka_unit_test(test_compat__xrc_domains_srqs_and_qps),
		cmocka_unit_test(test_compat__close_device_with_objects_left_open_succeeds),
		cmocka_unit_test(test_compat__real_devices_pass_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
