/*
 * Conformance: XRC. B holds an XRC domain with two XRC SRQs (each completing
 * on a CQ of its own) and a target QP; A's initiator QP connects to it.
 * SENDs land in the SRQ they name, complete on that SRQ's CQ naming the
 * target QP, and touch nothing else; WRITE and READ through the pair work
 * as on RC. A device without XRC (device_cap_flags without IBV_DEVICE_XRC)
 * must refuse the domain and the XRC QP types with -EOPNOTSUPP: that refusal
 * is what the case checks there (rxe: conf-quirks.c).
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

/* IBV_DEVICE_XRC of libibverbs' device_cap_flags. */
#define DEVICE_XRC (1u << 20)

static void xrc_refused(struct conf_pair *p)
{
	rv_xrcd *x = NULL;
	rv_qp *q = NULL;
	rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ, .qp_type = RV_QPT_XRC_SEND,
			      .send_cq = p->a.cq};

	assert_int_equal(rv_xrcd_new(p->b.ctx, NULL, &x), -EOPNOTSUPP);
	assert_null(x);
	assert_int_equal(rv_qp_new(p->a.pd, &ia, &q), -EOPNOTSUPP);
	assert_null(q);
}

static void xrc_sends_reach_the_named_srq(void)
{
	enum { SLOT = 1024, LEN = 100 };
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_BASE};
	rv_xrcd *xrcd;
	rv_cq *cq1;
	rv_srq *srq[2];
	uint32_t num[2];
	rv_qp *ini, *tgt;
	rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ, .qp_type = RV_QPT_XRC_SEND},
			ta = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_XRCD, .qp_type = RV_QPT_XRC_RECV};
	rv_endpoint ea, eb;
	struct conf_range ranges[3];

	assert_int_equal(rv_context_query_device(p->b.ctx, &da), 0);
	if (!(da.device_cap_flags & DEVICE_XRC)) {
		(void)conf_quirk("no-xrc"); /* rxe: recorded there; any such device is checked alike */
		xrc_refused(p);
		return;
	}
	assert_int_equal(rv_xrcd_new(p->b.ctx, NULL, &xrcd), 0);
	assert_int_equal(rv_cq_new(p->b.ctx, NULL, &cq1), 0);
	conf_adopt_cq(cq1);
	for (int s = 0; s < 2; s++) {
		rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC, .xrcd = xrcd, .cq = s ? cq1 : p->b.cq};
		assert_int_equal(rv_srq_new(p->b.pd, &sa, &srq[s]), 0);
		assert_int_equal(rv_srq_num(srq[s], &num[s]), 0);
	}
	assert_int_not_equal(num[0], num[1]);
	ta.xrcd = xrcd;
	assert_int_equal(rv_qp_new(p->b.pd, &ta, &tgt), 0);
	conf_adopt_qp(tgt);
	ia.send_cq = p->a.cq;
	assert_int_equal(rv_qp_new(p->a.pd, &ia, &ini), 0);
	conf_adopt_qp(ini);
	assert_int_equal(rv_qp_endpoint(ini, &ea), 0);
	assert_int_equal(rv_qp_endpoint(tgt, &eb), 0);
	assert_int_equal(rv_qp_connect(ini, &eb), 0);
	assert_int_equal(rv_qp_connect(tgt, &ea), 0);
	for (int s = 0; s < 2; s++) {
		rv_sge g = conf_sge(&p->b.buf, (size_t)s * SLOT, SLOT);
		rv_recv_wr w = {.wr_id = 10 + (uint64_t)s, .sg_list = &g, .num_sge = 1};
		assert_int_equal(rv_srq_post_recv(srq[s], &w, 1, NULL), 0);
	}
	/* SRQ 1 first, then SRQ 0: each SEND carries bytes of its own. */
	for (int k = 0; k < 2; k++) {
		rv_sge g = conf_sge(&p->a.buf, 4096 * (size_t)(k + 1), LEN);
		rv_send_wr w = {.wr_id = 100 + (uint64_t)k, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
				.send_flags = RV_SEND_SIGNALED, .remote_srqn = num[1 - k]};
		conf_post(ini, &w);
		conf_expect(p->a.cq, 100 + (uint64_t)k, RV_WC_SUCCESS);
	}
	for (int s = 0; s < 2; s++) {
		rv_wc wc = conf_poll(s ? cq1 : p->b.cq);
		int k = 1 - s;

		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 10 + (uint64_t)s);
		assert_int_equal(wc.byte_len, LEN);
		assert_int_equal(wc.qp_num, rv_qp_num(tgt));
		assert_memory_equal(p->b.buf.p + (size_t)s * SLOT, p->a.buf.p + 4096 * (size_t)(k + 1), LEN);
		ranges[s] = (struct conf_range){(size_t)s * SLOT, (size_t)s * SLOT + LEN};
	}
	/* WRITE into B at 8192, READ it back into A at 12288. */
	{
		rv_sge g = conf_sge(&p->a.buf, 0, LEN);
		rv_send_wr w = {.wr_id = 200, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
				.send_flags = RV_SEND_SIGNALED, .remote_addr = conf_addr(&p->b.buf, 8192),
				.rkey = rv_mr_rkey(p->b.buf.mr), .remote_srqn = num[0]};
		conf_post(ini, &w);
		conf_expect(p->a.cq, 200, RV_WC_SUCCESS);
		assert_memory_equal(p->b.buf.p + 8192, p->a.buf.p, LEN);
		ranges[2] = (struct conf_range){8192, 8192 + LEN};
		g = conf_sge(&p->a.buf, 12288, LEN);
		w = (rv_send_wr){.wr_id = 201, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_READ,
				 .send_flags = RV_SEND_SIGNALED, .remote_addr = conf_addr(&p->b.buf, 8192),
				 .rkey = rv_mr_rkey(p->b.buf.mr), .remote_srqn = num[0]};
		conf_post(ini, &w);
		conf_expect(p->a.cq, 201, RV_WC_SUCCESS);
		assert_memory_equal(p->a.buf.p + 12288, p->a.buf.p, LEN);
	}
	conf_buf_check_except(&p->b.buf, ranges, 3);
	conf_expect_none(p->b.cq, 50);
	conf_expect_none(cq1, 50);
	/* The domain closes its target QP and SRQs (the harness's references stay valid). */
	assert_int_equal(rv_xrcd_close(xrcd), 0);
	assert_int_equal(rv_qp_state_of(tgt), -RV_ECLOSED);
	rv_srq_unref(srq[0]);
	rv_srq_unref(srq[1]);
	rv_xrcd_unref(xrcd);
}

const struct conf_case conf_xrc_cases[] = {
	{"XRC: SENDs reach the SRQ the initiator names; WRITE and READ as on RC", xrc_sends_reach_the_named_srq},
	CONF_END,
};
