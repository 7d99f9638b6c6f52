/*
 * The libibverbs driver's pure translations (lib/drivers/ibv/translate.{h,c})
 * and failure words (hint.c), proved field by field without hardware.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/ibv/ibv-driver.h"
#include "drivers/ibv/translate.h"

/* A QP as the data path sees it: only qp_type and cap matter here. */
static struct rv_qp fake_qp(uint32_t type, uint32_t max_inline)
{
	struct rv_qp qp;

	memset(&qp, 0, sizeof(qp));
	qp.qp_type = type;
	qp.cap.max_inline_data = max_inline;
	return qp;
}

/* An rv_qp_attr whose every field holds a distinct value. */
static rv_qp_attr full_rv_attr(void)
{
	rv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = RV_QPS_RTR;
	a.cur_qp_state = RV_QPS_INIT;
	a.path_mtu = RV_MTU_2048;
	a.qkey = 0x11111111;
	a.rq_psn = 0xabcdef;
	a.sq_psn = 0x123456;
	a.dest_qp_num = 0x00fedc;
	a.qp_access_flags = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_READ;
	a.cap = (rv_qp_cap){ .max_send_wr = 11, .max_recv_wr = 12, .max_send_sge = 3,
			     .max_recv_sge = 4, .max_inline_data = 220 };
	for (int i = 0; i < 16; i++)
		a.ah_attr.dgid[i] = (uint8_t)(0xf0 + i);
	a.ah_attr.flow_label = 0xbeef;
	a.ah_attr.sgid_index = 3;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.traffic_class = 0x68;
	a.ah_attr.is_global = 1;
	a.ah_attr.dlid = 0x1234;
	a.ah_attr.sl = 5;
	a.ah_attr.src_path_bits = 2;
	a.ah_attr.static_rate = 7;
	a.ah_attr.port_num = 2;
	a.pkey_index = 9;
	a.en_sqd_async_notify = 1;
	a.max_rd_atomic = 8;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.port_num = 2;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 6;
	return a;
}

/* The ibv_qp_attr that full_rv_attr() with one mask bit must produce. */
static void expect_field(uint64_t bit, const rv_qp_attr *in, struct ibv_qp_attr *e)
{
	memset(e, 0, sizeof(*e));
	switch (bit) {
	case RV_QP_STATE: e->qp_state = IBV_QPS_RTR; break;
	case RV_QP_CUR_STATE: e->cur_qp_state = IBV_QPS_INIT; break;
	case RV_QP_EN_SQD_ASYNC_NOTIFY: e->en_sqd_async_notify = 1; break;
	case RV_QP_ACCESS_FLAGS:
		e->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
		break;
	case RV_QP_PKEY_INDEX: e->pkey_index = 9; break;
	case RV_QP_PORT: e->port_num = 2; break;
	case RV_QP_QKEY: e->qkey = 0x11111111; break;
	case RV_QP_AV:
		memcpy(e->ah_attr.grh.dgid.raw, in->ah_attr.dgid, 16);
		e->ah_attr.grh.flow_label = 0xbeef;
		e->ah_attr.grh.sgid_index = 3;
		e->ah_attr.grh.hop_limit = 64;
		e->ah_attr.grh.traffic_class = 0x68;
		e->ah_attr.is_global = 1;
		e->ah_attr.dlid = 0x1234;
		e->ah_attr.sl = 5;
		e->ah_attr.src_path_bits = 2;
		e->ah_attr.static_rate = 7;
		e->ah_attr.port_num = 2;
		break;
	case RV_QP_PATH_MTU: e->path_mtu = IBV_MTU_2048; break;
	case RV_QP_TIMEOUT: e->timeout = 14; break;
	case RV_QP_RETRY_CNT: e->retry_cnt = 7; break;
	case RV_QP_RNR_RETRY: e->rnr_retry = 6; break;
	case RV_QP_RQ_PSN: e->rq_psn = 0xabcdef; break;
	case RV_QP_MAX_QP_RD_ATOMIC: e->max_rd_atomic = 8; break;
	case RV_QP_MIN_RNR_TIMER: e->min_rnr_timer = 12; break;
	case RV_QP_SQ_PSN: e->sq_psn = 0x123456; break;
	case RV_QP_MAX_DEST_RD_ATOMIC: e->max_dest_rd_atomic = 16; break;
	case RV_QP_CAP:
		e->cap = (struct ibv_qp_cap){ .max_send_wr = 11, .max_recv_wr = 12,
					      .max_send_sge = 3, .max_recv_sge = 4,
					      .max_inline_data = 220 };
		break;
	case RV_QP_DEST_QPN: e->dest_qp_num = 0x00fedc; break;
	default: break;
	}
}

static void test_ibv_translate__qp_attr_each_mask_bit_sets_only_its_field(void **state)
{
	rv_qp_attr in = full_rv_attr();

	(void)state;
	for (int b = 0; b <= 20; b++) {
		uint64_t bit = UINT64_C(1) << b;
		struct ibv_qp_attr out, want;
		int mask = -1;

		if (bit == RV_QP_ALT_PATH || bit == RV_QP_PATH_MIG_STATE)
			continue;
		in.mask = bit;
		memset(&out, 0x5a, sizeof(out));
		rv_ibv_qp_attr_to_ibv(&in, &out, &mask);
		expect_field(bit, &in, &want);
		assert_int_equal(mask, (int)bit);
		assert_memory_equal(&out, &want, sizeof(out));
	}
}

static void test_ibv_translate__qp_attr_all_bits(void **state)
{
	rv_qp_attr in = full_rv_attr();
	struct ibv_qp_attr out;
	int mask;

	(void)state;
	in.mask = RV_QP_ATTR_ALL;
	rv_ibv_qp_attr_to_ibv(&in, &out, &mask);
	assert_int_equal(mask, IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |
			 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
			 IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_CAP | IBV_QP_DEST_QPN);
	assert_int_equal(out.qp_state, IBV_QPS_RTR);
	assert_int_equal(out.cur_qp_state, IBV_QPS_INIT);
	assert_int_equal(out.path_mtu, IBV_MTU_2048);
	assert_int_equal(out.qkey, 0x11111111);
	assert_int_equal(out.rq_psn, 0xabcdef);
	assert_int_equal(out.sq_psn, 0x123456);
	assert_int_equal(out.dest_qp_num, 0xfedc);
	assert_int_equal(out.qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_int_equal(out.cap.max_send_wr, 11);
	assert_int_equal(out.cap.max_recv_wr, 12);
	assert_int_equal(out.cap.max_send_sge, 3);
	assert_int_equal(out.cap.max_recv_sge, 4);
	assert_int_equal(out.cap.max_inline_data, 220);
	assert_memory_equal(out.ah_attr.grh.dgid.raw, in.ah_attr.dgid, 16);
	assert_int_equal(out.ah_attr.port_num, 2);
	assert_int_equal(out.pkey_index, 9);
	assert_int_equal(out.en_sqd_async_notify, 1);
	assert_int_equal(out.max_rd_atomic, 8);
	assert_int_equal(out.max_dest_rd_atomic, 16);
	assert_int_equal(out.min_rnr_timer, 12);
	assert_int_equal(out.port_num, 2);
	assert_int_equal(out.timeout, 14);
	assert_int_equal(out.retry_cnt, 7);
	assert_int_equal(out.rnr_retry, 6);
	/* Nothing rverbs does not have. */
	assert_int_equal(out.path_mig_state, 0);
	assert_int_equal(out.alt_port_num, 0);
	assert_int_equal(out.alt_pkey_index, 0);
	assert_int_equal(out.rate_limit, 0);
}

static void test_ibv_translate__qp_attr_unsupported_bits_are_dropped(void **state)
{
	rv_qp_attr in = full_rv_attr();
	struct ibv_qp_attr out;
	int mask;

	(void)state;
	in.mask = RV_QP_ALT_PATH | RV_QP_PATH_MIG_STATE | (UINT64_C(1) << 40) | RV_QP_STATE;
	rv_ibv_qp_attr_to_ibv(&in, &out, &mask);
	assert_int_equal(mask, IBV_QP_STATE);
	assert_int_equal(rv_ibv_qp_attr_mask_to_ibv(RV_QP_ALT_PATH | RV_QP_DEST_QPN), IBV_QP_DEST_QPN);
	assert_int_equal(rv_ibv_qp_attr_mask_to_ibv(0), 0);
}

static void test_ibv_translate__qp_attr_from_ibv_fills_only_masked_fields(void **state)
{
	rv_qp_attr ref = full_rv_attr();
	struct ibv_qp_attr ib;
	int ibmask;

	(void)state;
	ref.mask = RV_QP_ATTR_ALL;
	rv_ibv_qp_attr_to_ibv(&ref, &ib, &ibmask);
	/* A queried ERR state comes back as is (the QP moved there by itself). */
	ib.qp_state = IBV_QPS_ERR;
	ref.qp_state = RV_QPS_ERR;

	for (int b = 0; b <= 20; b++) {
		uint64_t bit = UINT64_C(1) << b;
		rv_qp_attr out, want;

		if (bit == RV_QP_ALT_PATH || bit == RV_QP_PATH_MIG_STATE)
			continue;
		memset(&out, 0xa5, sizeof(out));
		out.mask = bit;
		rv_ibv_qp_attr_from_ibv(&ib, &out);
		/* Expected: the sentinel everywhere but the one field. */
		memset(&want, 0xa5, sizeof(want));
		want.mask = bit;
		switch (bit) {
		case RV_QP_STATE: want.qp_state = ref.qp_state; break;
		case RV_QP_CUR_STATE: want.cur_qp_state = ref.cur_qp_state; break;
		case RV_QP_EN_SQD_ASYNC_NOTIFY: want.en_sqd_async_notify = ref.en_sqd_async_notify; break;
		case RV_QP_ACCESS_FLAGS: want.qp_access_flags = ref.qp_access_flags; break;
		case RV_QP_PKEY_INDEX: want.pkey_index = ref.pkey_index; break;
		case RV_QP_PORT: want.port_num = ref.port_num; break;
		case RV_QP_QKEY: want.qkey = ref.qkey; break;
		case RV_QP_AV: want.ah_attr = ref.ah_attr; break;
		case RV_QP_PATH_MTU: want.path_mtu = ref.path_mtu; break;
		case RV_QP_TIMEOUT: want.timeout = ref.timeout; break;
		case RV_QP_RETRY_CNT: want.retry_cnt = ref.retry_cnt; break;
		case RV_QP_RNR_RETRY: want.rnr_retry = ref.rnr_retry; break;
		case RV_QP_RQ_PSN: want.rq_psn = ref.rq_psn; break;
		case RV_QP_MAX_QP_RD_ATOMIC: want.max_rd_atomic = ref.max_rd_atomic; break;
		case RV_QP_MIN_RNR_TIMER: want.min_rnr_timer = ref.min_rnr_timer; break;
		case RV_QP_SQ_PSN: want.sq_psn = ref.sq_psn; break;
		case RV_QP_MAX_DEST_RD_ATOMIC: want.max_dest_rd_atomic = ref.max_dest_rd_atomic; break;
		case RV_QP_CAP: want.cap = ref.cap; break;
		case RV_QP_DEST_QPN: want.dest_qp_num = ref.dest_qp_num; break;
		default: break;
		}
		assert_memory_equal(&out, &want, sizeof(out));
	}
}

static void test_ibv_translate__ah_attr_every_field_both_ways(void **state)
{
	rv_qp_attr a = full_rv_attr();
	struct ibv_ah_attr ib;
	rv_ah_attr back;

	(void)state;
	rv_ibv_ah_attr_to_ibv(&a.ah_attr, &ib);
	assert_memory_equal(ib.grh.dgid.raw, a.ah_attr.dgid, 16);
	assert_int_equal(ib.grh.flow_label, 0xbeef);
	assert_int_equal(ib.grh.sgid_index, 3);
	assert_int_equal(ib.grh.hop_limit, 64);
	assert_int_equal(ib.grh.traffic_class, 0x68);
	assert_int_equal(ib.is_global, 1);
	assert_int_equal(ib.dlid, 0x1234);
	assert_int_equal(ib.sl, 5);
	assert_int_equal(ib.src_path_bits, 2);
	assert_int_equal(ib.static_rate, 7);
	assert_int_equal(ib.port_num, 2);

	memset(&back, 0xff, sizeof(back));
	rv_ibv_ah_attr_from_ibv(&ib, &back);
	assert_memory_equal(&back, &a.ah_attr, sizeof(back));
	assert_int_equal(back.reserved, 0);

	/* An IB-style AV without a GRH stays without one. */
	a.ah_attr.is_global = 0;
	rv_ibv_ah_attr_to_ibv(&a.ah_attr, &ib);
	assert_int_equal(ib.is_global, 0);
}

static void test_ibv_translate__qp_init_attr(void **state)
{
	struct ibv_cq *scq = (struct ibv_cq *)(uintptr_t)0x1000;
	struct ibv_cq *rcq = (struct ibv_cq *)(uintptr_t)0x2000;
	rv_qp_init_attr in;
	struct ibv_qp_init_attr out;
	int ctx_cookie;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	in.qp_type = RV_QPT_UC;
	in.sq_sig_all = 5; /* any non-zero means "all" */
	in.cap = (rv_qp_cap){ .max_send_wr = 64, .max_recv_wr = 32, .max_send_sge = 2,
			      .max_recv_sge = 3, .max_inline_data = 128 };
	memset(&out, 0x77, sizeof(out));
	rv_ibv_qp_init_attr_to_ibv(&in, scq, rcq, &ctx_cookie, &out);
	assert_ptr_equal(out.qp_context, &ctx_cookie);
	assert_ptr_equal(out.send_cq, scq);
	assert_ptr_equal(out.recv_cq, rcq);
	assert_null(out.srq);
	assert_int_equal(out.qp_type, IBV_QPT_UC);
	assert_int_equal(out.sq_sig_all, 1);
	assert_int_equal(out.cap.max_send_wr, 64);
	assert_int_equal(out.cap.max_recv_wr, 32);
	assert_int_equal(out.cap.max_send_sge, 2);
	assert_int_equal(out.cap.max_recv_sge, 3);
	assert_int_equal(out.cap.max_inline_data, 128);

	in.qp_type = RV_QPT_RC;
	in.sq_sig_all = 0;
	rv_ibv_qp_init_attr_to_ibv(&in, scq, scq, NULL, &out);
	assert_int_equal(out.qp_type, IBV_QPT_RC);
	assert_int_equal(out.sq_sig_all, 0);
	assert_ptr_equal(out.recv_cq, scq);

	in.qp_type = RV_QPT_UD;
	rv_ibv_qp_init_attr_to_ibv(&in, scq, rcq, NULL, &out);
	assert_int_equal(out.qp_type, IBV_QPT_UD);
}

static void test_ibv_translate__qp_cap_read_back(void **state)
{
	struct ibv_qp_cap ib = { .max_send_wr = 129, .max_recv_wr = 130, .max_send_sge = 5,
				 .max_recv_sge = 6, .max_inline_data = 236 };
	rv_qp_cap c;

	(void)state;
	rv_ibv_qp_cap_from_ibv(&ib, &c);
	assert_int_equal(c.max_send_wr, 129);
	assert_int_equal(c.max_recv_wr, 130);
	assert_int_equal(c.max_send_sge, 5);
	assert_int_equal(c.max_recv_sge, 6);
	assert_int_equal(c.max_inline_data, 236);
}

static rv_send_wr base_wr(uint32_t opcode, const rv_sge *sge, uint32_t nsge)
{
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = 0x1122334455667788ull;
	w.sg_list = sge;
	w.num_sge = nsge;
	w.opcode = opcode;
	w.remote_addr = 0xdead0000beefull;
	w.rkey = 0x4242;
	w.compare_add = 0x0102030405060708ull;
	w.swap = 0x1112131415161718ull;
	w.imm_data = 0x01020304;
	return w;
}

static void test_ibv_translate__send_wr_every_opcode(void **state)
{
	struct rv_qp qp = fake_qp(RV_QPT_RC, 0);
	rv_sge sge[2] = { { .addr = 0x1000, .length = 100, .lkey = 7 },
			  { .addr = 0x2000, .length = 28, .lkey = 8 } };
	static const uint8_t imm_be[4] = { 0x01, 0x02, 0x03, 0x04 };

	(void)state;
	for (uint32_t op = RV_WR_RDMA_WRITE; op <= RV_WR_SEND_WITH_INV; op++) {
		rv_send_wr w = base_wr(op, sge, 2);
		struct ibv_send_wr ib;

		if (op == RV_WR_BIND_MW)
			continue;
		memset(&ib, 0x33, sizeof(ib));
		assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
		assert_int_equal(ib.opcode, (int)op);
		assert_int_equal(ib.wr_id, 0x1122334455667788ull);
		assert_null(ib.next);
		/* Shared, not copied. */
		assert_ptr_equal(ib.sg_list, (const void *)sge);
		assert_int_equal(ib.num_sge, 2);
		assert_int_equal(ib.send_flags, 0);
		switch (op) {
		case RV_WR_RDMA_WRITE_WITH_IMM:
		case RV_WR_SEND_WITH_IMM:
			/* Network byte order in memory, whatever the host. */
			assert_memory_equal(&ib.imm_data, imm_be, 4);
			break;
		case RV_WR_SEND_WITH_INV:
		case RV_WR_LOCAL_INV:
			assert_int_equal(ib.invalidate_rkey, 0x01020304);
			break;
		default:
			/* Unused by the opcode: unspecified (providers read the
			 * unions by opcode). */
			break;
		}
		switch (op) {
		case RV_WR_RDMA_WRITE:
		case RV_WR_RDMA_WRITE_WITH_IMM:
		case RV_WR_RDMA_READ:
			assert_int_equal(ib.wr.rdma.remote_addr, 0xdead0000beefull);
			assert_int_equal(ib.wr.rdma.rkey, 0x4242);
			break;
		case RV_WR_ATOMIC_CMP_AND_SWP:
		case RV_WR_ATOMIC_FETCH_AND_ADD:
			assert_int_equal(ib.wr.atomic.remote_addr, 0xdead0000beefull);
			assert_int_equal(ib.wr.atomic.rkey, 0x4242);
			assert_int_equal(ib.wr.atomic.compare_add, 0x0102030405060708ull);
			assert_int_equal(ib.wr.atomic.swap, 0x1112131415161718ull);
			break;
		default:
			/* A SEND carries no remote address: unspecified. */
			break;
		}
	}
}

static void test_ibv_translate__send_wr_flags(void **state)
{
	struct rv_qp qp = fake_qp(RV_QPT_RC, 0);
	rv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 7 };
	rv_send_wr w = base_wr(RV_WR_SEND, &sge, 1);
	struct ibv_send_wr ib;

	(void)state;
	w.send_flags = RV_SEND_FENCE | RV_SEND_SIGNALED | RV_SEND_SOLICITED | RV_SEND_IP_CSUM |
		       RV_SEND_NO_INLINE;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	/* rverbs' own NO_INLINE never reaches libibverbs. */
	assert_int_equal(ib.send_flags, IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
			 IBV_SEND_IP_CSUM);

	w.send_flags = RV_SEND_SIGNALED;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_int_equal(ib.send_flags, IBV_SEND_SIGNALED);
}

static void test_ibv_translate__send_wr_automatic_inline(void **state)
{
	struct rv_qp qp = fake_qp(RV_QPT_RC, 64);
	rv_sge sge[2] = { { .addr = 0x1000, .length = 40, .lkey = 7 },
			  { .addr = 0x2000, .length = 24, .lkey = 8 } };
	rv_send_wr w;
	struct ibv_send_wr ib;

	(void)state;
	/* 64 bytes in two SGEs fit max_inline_data 64: inline. */
	w = base_wr(RV_WR_SEND, sge, 2);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);
	w = base_wr(RV_WR_RDMA_WRITE, sge, 2);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);
	w = base_wr(RV_WR_SEND_WITH_IMM, sge, 2);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);
	w = base_wr(RV_WR_RDMA_WRITE_WITH_IMM, sge, 2);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);
	w = base_wr(RV_WR_SEND_WITH_INV, sge, 2);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);

	/* ... unless the caller forbids it. */
	w = base_wr(RV_WR_SEND, sge, 2);
	w.send_flags = RV_SEND_NO_INLINE;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_false(ib.send_flags & IBV_SEND_INLINE);

	/* 65 bytes do not fit. */
	sge[1].length = 25;
	w = base_wr(RV_WR_SEND, sge, 2);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_false(ib.send_flags & IBV_SEND_INLINE);

	/* An explicit request is honoured whatever the size. */
	w.send_flags = RV_SEND_INLINE;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);

	/* READ and atomics never go inline, asked or not. */
	sge[1].length = 1;
	w = base_wr(RV_WR_RDMA_READ, sge, 2);
	w.send_flags = RV_SEND_INLINE;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_false(ib.send_flags & IBV_SEND_INLINE);
	w = base_wr(RV_WR_ATOMIC_FETCH_AND_ADD, sge, 1);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_false(ib.send_flags & IBV_SEND_INLINE);
	w = base_wr(RV_WR_LOCAL_INV, NULL, 0);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_false(ib.send_flags & IBV_SEND_INLINE);

	/* A QP without inline space never chooses it. */
	qp.cap.max_inline_data = 0;
	w = base_wr(RV_WR_SEND, sge, 1);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_false(ib.send_flags & IBV_SEND_INLINE);

	/* A zero-length SEND fits any inline space. */
	qp.cap.max_inline_data = 16;
	w = base_wr(RV_WR_SEND, NULL, 0);
	assert_int_equal(rv_ibv_send_wr_to_ibv(&qp, &w, &ib), 0);
	assert_true(ib.send_flags & IBV_SEND_INLINE);
	assert_int_equal(ib.num_sge, 0);
}

static void test_ibv_translate__send_wr_refusals(void **state)
{
	struct rv_qp rc = fake_qp(RV_QPT_RC, 0);
	rv_send_wr w = base_wr(RV_WR_SEND, NULL, 0);
	struct ibv_send_wr ib;

	(void)state;
	w.opcode = 10;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&rc, &w, &ib), -EINVAL);
	w.opcode = UINT32_MAX;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&rc, &w, &ib), -EINVAL);
	w.opcode = RV_WR_BIND_MW;
	assert_int_equal(rv_ibv_send_wr_to_ibv(&rc, &w, &ib), -EOPNOTSUPP);
}

static void test_ibv_translate__ud_send_wr_carries_the_ah_qpn_and_qkey(void **state)
{
	struct rv_qp ud = fake_qp(RV_QPT_UD, 0);
	struct rv_ah ah;
	rv_sge sge = { .addr = 0x1000, .length = 100, .lkey = 5 };
	rv_send_wr w = base_wr(RV_WR_SEND_WITH_IMM, &sge, 1);
	struct ibv_send_wr ib;

	(void)state;
	memset(&ah, 0, sizeof(ah));
	ah.drv_ah = (void *)(uintptr_t)0xa4a4;
	w.ah = &ah;
	w.remote_qpn = 0x123456;
	w.remote_qkey = 0x11111111;
	w.imm_data = 0x01020304;
	memset(&ib, 0x55, sizeof(ib));
	assert_int_equal(rv_ibv_send_wr_to_ibv(&ud, &w, &ib), 0);
	assert_int_equal(ib.opcode, IBV_WR_SEND_WITH_IMM);
	assert_ptr_equal(ib.wr.ud.ah, ah.drv_ah);
	assert_int_equal(ib.wr.ud.remote_qpn, 0x123456);
	assert_int_equal(ib.wr.ud.remote_qkey, 0x11111111);
	assert_int_equal(ib.imm_data, htobe32(0x01020304));
}

static void test_ibv_translate__xrc_send_wr_carries_the_remote_srqn(void **state)
{
	struct rv_qp ini = fake_qp(RV_QPT_XRC_SEND, 0);
	struct rv_qp rc = fake_qp(RV_QPT_RC, 0);
	rv_sge sge = { .addr = 0x1000, .length = 100, .lkey = 5 };
	rv_send_wr w = base_wr(RV_WR_SEND, &sge, 1);
	struct ibv_send_wr ib;

	(void)state;
	w.remote_srqn = 0xabcde;
	for (uint32_t op = RV_WR_RDMA_WRITE; op <= RV_WR_RDMA_READ; op++) {
		w.opcode = op;
		memset(&ib, 0x55, sizeof(ib));
		assert_int_equal(rv_ibv_send_wr_to_ibv(&ini, &w, &ib), 0);
		assert_int_equal(ib.opcode, (int)op);
		assert_int_equal(ib.qp_type.xrc.remote_srqn, 0xabcde);
	}
	/* Another QP type's WR leaves it alone (zero or untouched, never the field). */
	w.opcode = RV_WR_SEND_WITH_IMM;
	memset(&ib, 0, sizeof(ib));
	assert_int_equal(rv_ibv_send_wr_to_ibv(&rc, &w, &ib), 0);
	assert_int_equal(ib.qp_type.xrc.remote_srqn, 0);
}

static void test_ibv_translate__wc_back_to_ibv_for_init_ah_from_wc(void **state)
{
	rv_wc wc = { .wr_id = 1, .status = RV_WC_SUCCESS, .opcode = RV_WC_RECV, .byte_len = 140,
		     .imm_data = 0x0a0b0c0d, .qp_num = 7, .src_qp = 0xabcdef,
		     .wc_flags = RV_WC_GRH | RV_WC_WITH_IMM, .pkey_index = 3, .slid = 0x4321,
		     .sl = 5, .dlid_path_bits = 1, .reserved = 0 };
	struct ibv_wc iw;
	rv_wc back;

	(void)state;
	rv_ibv_wc_to_ibv(&wc, &iw);
	assert_int_equal(iw.src_qp, 0xabcdef);
	assert_int_equal(iw.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	assert_int_equal(iw.slid, 0x4321);
	assert_int_equal(iw.sl, 5);
	assert_int_equal(iw.pkey_index, 3);
	assert_int_equal(iw.imm_data, htobe32(0x0a0b0c0d));
	rv_ibv_wc_from_ibv(&iw, &back);
	assert_memory_equal(&back, &wc, sizeof(wc));
}

static void test_ibv_translate__recv_wr(void **state)
{
	rv_sge sge[3] = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } };
	rv_recv_wr w = { .wr_id = 77, .sg_list = sge, .num_sge = 3, .reserved = 0 };
	struct ibv_recv_wr ib;

	(void)state;
	memset(&ib, 0x44, sizeof(ib));
	rv_ibv_recv_wr_to_ibv(&w, &ib);
	assert_int_equal(ib.wr_id, 77);
	assert_null(ib.next);
	assert_ptr_equal(ib.sg_list, (const void *)sge);
	assert_int_equal(ib.num_sge, 3);
	/* The shared list reads the same through either type. */
	assert_int_equal(ib.sg_list[2].addr, 7);
	assert_int_equal(ib.sg_list[2].length, 8);
	assert_int_equal(ib.sg_list[2].lkey, 9);
}

static void test_ibv_translate__wc_every_field(void **state)
{
	struct ibv_wc ib;
	rv_wc wc;
	static const uint8_t imm_be[4] = { 0xca, 0xfe, 0xba, 0xbe };

	(void)state;
	memset(&ib, 0, sizeof(ib));
	ib.wr_id = 0xfeedfacecafebeefull;
	ib.status = IBV_WC_REM_ACCESS_ERR;
	ib.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	ib.vendor_err = 0x88;
	ib.byte_len = 4096;
	memcpy(&ib.imm_data, imm_be, 4);
	ib.qp_num = 0x123;
	ib.src_qp = 0x456;
	ib.wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
	ib.pkey_index = 3;
	ib.slid = 0x99;
	ib.sl = 4;
	ib.dlid_path_bits = 1;

	memset(&wc, 0xff, sizeof(wc));
	rv_ibv_wc_from_ibv(&ib, &wc);
	assert_int_equal(wc.wr_id, 0xfeedfacecafebeefull);
	assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(wc.opcode, RV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.vendor_err, 0x88);
	assert_int_equal(wc.byte_len, 4096);
	assert_int_equal(wc.imm_data, 0xcafebabe); /* host order */
	assert_int_equal(wc.qp_num, 0x123);
	assert_int_equal(wc.src_qp, 0x456);
	assert_int_equal(wc.wc_flags, RV_WC_WITH_IMM | RV_WC_GRH);
	assert_int_equal(wc.pkey_index, 3);
	assert_int_equal(wc.slid, 0x99);
	assert_int_equal(wc.sl, 4);
	assert_int_equal(wc.dlid_path_bits, 1);
	assert_int_equal(wc.reserved, 0);

	/* An invalidated rkey is already in host order. */
	ib.wc_flags = IBV_WC_WITH_INV;
	ib.invalidated_rkey = 0x1234abcd;
	rv_ibv_wc_from_ibv(&ib, &wc);
	assert_int_equal(wc.imm_data, 0x1234abcd);
	assert_int_equal(wc.wc_flags, RV_WC_WITH_INV);

	/* No immediate: imm_data is undefined as in libibverbs (rverbs/cq.h),
	 * so it is left as it is, not byte-swapped; the rest is copied. */
	ib.wc_flags = IBV_WC_IP_CSUM_OK;
	ib.status = IBV_WC_SUCCESS;
	ib.opcode = IBV_WC_RDMA_READ;
	ib.imm_data = 0x11223344;
	rv_ibv_wc_from_ibv(&ib, &wc);
	assert_int_equal(wc.imm_data, 0x11223344);
	assert_int_equal(wc.reserved, 0);
	assert_int_equal(wc.wc_flags, RV_WC_IP_CSUM_OK);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RDMA_READ);
}

static void test_ibv_translate__device_attr_every_field(void **state)
{
	struct ibv_device_attr ib;
	rv_device_attr a;
	int i = 1;

	(void)state;
	memset(&ib, 0, sizeof(ib));
	memset(ib.fw_ver, 'x', sizeof(ib.fw_ver)); /* not NUL-terminated */
	ib.node_guid = htobe64(0x0002c90300a1b2c3ull);
	ib.sys_image_guid = htobe64(0x0002c90300a1b2c6ull);
	ib.max_mr_size = UINT64_MAX;
	ib.page_size_cap = 0xfffff000;
	ib.vendor_id = 0x02c9;
	ib.vendor_part_id = 4123;
	ib.hw_ver = 0;
	ib.max_qp = 131072 + i++;
	ib.max_qp_wr = 32768 + i++;
	ib.device_cap_flags = 0xe5721c36;
	ib.max_sge = 30 + i++;
	ib.max_sge_rd = 30 + i++;
	ib.max_cq = 16777216 + i++;
	ib.max_cqe = 4194303 + i++;
	ib.max_mr = 16777216 + i++;
	ib.max_pd = 8388608 + i++;
	ib.max_qp_rd_atom = 16 + i++;
	ib.max_qp_init_rd_atom = 16 + i++;
	ib.atomic_cap = IBV_ATOMIC_HCA;
	ib.max_srq = 8388608 + i++;
	ib.max_srq_wr = 32767 + i++;
	ib.max_srq_sge = 31 + i++;
	ib.max_mw = -5; /* a buggy provider: reported as 0 */
	ib.max_ah = 1000 + i++;
	ib.max_pkeys = 128;
	ib.phys_port_cnt = 2;

	memset(&a, 0xee, sizeof(a));
	a.mask = RV_DEVICE_ATTR_ALL;
	rv_ibv_device_attr_from_ibv(&ib, &a);
	assert_int_equal(a.mask, RV_DEVICE_ATTR_ALL);
	assert_int_equal(strlen(a.fw_ver), sizeof(a.fw_ver) - 1);
	assert_int_equal(a.node_guid, 0x0002c90300a1b2c3ull);
	assert_int_equal(a.sys_image_guid, 0x0002c90300a1b2c6ull);
	assert_int_equal(a.max_mr_size, UINT64_MAX);
	assert_int_equal(a.page_size_cap, 0xfffff000);
	assert_int_equal(a.vendor_id, 0x02c9);
	assert_int_equal(a.vendor_part_id, 4123);
	assert_int_equal(a.hw_ver, 0);
	assert_int_equal(a.max_qp, 131073);
	assert_int_equal(a.max_qp_wr, 32770);
	assert_int_equal(a.device_cap_flags, 0xe5721c36);
	assert_int_equal(a.max_sge, 33);
	assert_int_equal(a.max_sge_rd, 34);
	assert_int_equal(a.max_cq, 16777221);
	assert_int_equal(a.max_cqe, 4194309);
	assert_int_equal(a.max_mr, 16777223);
	assert_int_equal(a.max_pd, 8388616);
	assert_int_equal(a.max_qp_rd_atom, 25);
	assert_int_equal(a.max_qp_init_rd_atom, 26);
	assert_int_equal(a.atomic_cap, RV_ATOMIC_HCA);
	assert_int_equal(a.max_srq, 8388619);
	assert_int_equal(a.max_srq_wr, 32779);
	assert_int_equal(a.max_srq_sge, 44);
	assert_int_equal(a.max_mw, 0);
	assert_int_equal(a.max_ah, 1014);
	assert_int_equal(a.max_pkeys, 128);
	assert_int_equal(a.phys_port_cnt, 2);

	/* A short firmware version is copied and the rest zeroed. */
	memset(ib.fw_ver, 0, sizeof(ib.fw_ver));
	strcpy(ib.fw_ver, "16.35.2000");
	rv_ibv_device_attr_from_ibv(&ib, &a);
	assert_string_equal(a.fw_ver, "16.35.2000");
	assert_int_equal(a.fw_ver[sizeof(a.fw_ver) - 1], 0);
}

static void test_ibv_translate__port_attr_every_field(void **state)
{
	struct ibv_port_attr ib;
	rv_port_attr a;

	(void)state;
	memset(&ib, 0, sizeof(ib));
	ib.state = IBV_PORT_ACTIVE;
	ib.max_mtu = IBV_MTU_4096;
	ib.active_mtu = IBV_MTU_1024;
	ib.gid_tbl_len = 255;
	ib.port_cap_flags = 0x04010000;
	ib.max_msg_sz = 0x40000000;
	ib.pkey_tbl_len = 1;
	ib.lid = 0x17;
	ib.sm_lid = 0x1;
	ib.link_layer = IBV_LINK_LAYER_ETHERNET;
	ib.active_speed = 32;
	ib.active_width = 2;
	ib.phys_state = 5;

	memset(&a, 0xee, sizeof(a));
	a.mask = RV_PORT_ATTR_ALL;
	rv_ibv_port_attr_from_ibv(&ib, &a);
	assert_int_equal(a.mask, RV_PORT_ATTR_ALL);
	assert_int_equal(a.state, RV_PORT_ACTIVE);
	assert_int_equal(a.max_mtu, RV_MTU_4096);
	assert_int_equal(a.active_mtu, RV_MTU_1024);
	assert_int_equal(a.gid_tbl_len, 255);
	assert_int_equal(a.port_cap_flags, 0x04010000);
	assert_int_equal(a.max_msg_sz, 0x40000000);
	assert_int_equal(a.pkey_tbl_len, 1);
	assert_int_equal(a.lid, 0x17);
	assert_int_equal(a.sm_lid, 0x1);
	assert_int_equal(a.link_layer, RV_LINK_LAYER_ETHERNET);
	assert_int_equal(a.active_speed, 32);
	assert_int_equal(a.active_width, 2);
	assert_int_equal(a.phys_state, 5);

	ib.gid_tbl_len = -1;
	rv_ibv_port_attr_from_ibv(&ib, &a);
	assert_int_equal(a.gid_tbl_len, 0);
}

static void test_ibv_translate__errno_conventions(void **state)
{
	(void)state;
	/* Verbs that return the errno. */
	assert_int_equal(rv_ibv_errno(EBUSY), EBUSY);
	/* Verbs that return -1 and set errno. */
	errno = EACCES;
	assert_int_equal(rv_ibv_errno(-1), EACCES);
	/* Providers that return a negative errno. */
	errno = 0;
	assert_int_equal(rv_ibv_errno(-ENOMEM), ENOMEM);
	/* -1 without errno: no cause to report but I/O. */
	errno = 0;
	assert_int_equal(rv_ibv_errno(-1), EIO);
	assert_int_equal(rv_ibv_errno(0), EIO);
}

static void test_ibv_translate__memlock_limit_words(void **state)
{
	char buf[32];

	(void)state;
	rv_ibv_format_limit(RLIM_INFINITY, buf, sizeof(buf));
	assert_string_equal(buf, "unlimited");
	rv_ibv_format_limit(64 * 1024, buf, sizeof(buf));
	assert_string_equal(buf, "64 KiB");
	rv_ibv_format_limit(8 * 1024 * 1024, buf, sizeof(buf));
	assert_string_equal(buf, "8 MiB");
	rv_ibv_format_limit((rlim_t)1 << 32, buf, sizeof(buf));
	assert_string_equal(buf, "4 GiB");
	rv_ibv_format_limit(1000, buf, sizeof(buf));
	assert_string_equal(buf, "1000 bytes");
	rv_ibv_format_limit(1536 * 1024, buf, sizeof(buf));
	assert_string_equal(buf, "1536 KiB");
	rv_ibv_format_limit(0, buf, sizeof(buf));
	assert_string_equal(buf, "0 bytes");
}

static void test_ibv_translate__memlock_hint_names_the_limit(void **state)
{
	(void)state;
	rv_error_clear();
	rv_err(ENOMEM, "rv_mr_reg", "ibv_reg_mr failed");
	rv_ibv_hint_memlock();
	assert_non_null(strstr(rv_error_last(), "RLIMIT_MEMLOCK"));
	assert_non_null(strstr(rv_error_last(), "ulimit -l unlimited"));
	assert_non_null(strstr(rv_error_last(), "/etc/security/limits.conf"));
	rv_error_clear();
}

static void test_ibv_translate__names_for_messages(void **state)
{
	(void)state;
	assert_string_equal(rv_ibv_qp_state_name(RV_QPS_RTR), "RTR");
	assert_string_equal(rv_ibv_qp_state_name(RV_QPS_ERR), "ERR");
	assert_string_equal(rv_ibv_qp_state_name(99), "unknown state");
	assert_string_equal(rv_ibv_qp_type_name(RV_QPT_RC), "RC");
	assert_string_equal(rv_ibv_qp_type_name(RV_QPT_UD), "UD");
	assert_string_equal(rv_ibv_qp_type_name(0), "unknown QP type");
	assert_string_equal(rv_ibv_wr_opcode_name(RV_WR_SEND_WITH_INV), "SEND_WITH_INV");
	assert_string_equal(rv_ibv_wr_opcode_name(RV_WR_RDMA_WRITE), "RDMA_WRITE");
	assert_string_equal(rv_ibv_wr_opcode_name(10), "unknown opcode");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ibv_translate__qp_attr_each_mask_bit_sets_only_its_field),
		cmocka_unit_test(test_ibv_translate__qp_attr_all_bits),
		cmocka_unit_test(test_ibv_translate__qp_attr_unsupported_bits_are_dropped),
		cmocka_unit_test(test_ibv_translate__qp_attr_from_ibv_fills_only_masked_fields),
		cmocka_unit_test(test_ibv_translate__ah_attr_every_field_both_ways),
		cmocka_unit_test(test_ibv_translate__qp_init_attr),
		cmocka_unit_test(test_ibv_translate__qp_cap_read_back),
		cmocka_unit_test(test_ibv_translate__send_wr_every_opcode),
		cmocka_unit_test(test_ibv_translate__send_wr_flags),
		cmocka_unit_test(test_ibv_translate__send_wr_automatic_inline),
		cmocka_unit_test(test_ibv_translate__send_wr_refusals),
		cmocka_unit_test(test_ibv_translate__ud_send_wr_carries_the_ah_qpn_and_qkey),
		cmocka_unit_test(test_ibv_translate__xrc_send_wr_carries_the_remote_srqn),
		cmocka_unit_test(test_ibv_translate__wc_back_to_ibv_for_init_ah_from_wc),
		cmocka_unit_test(test_ibv_translate__recv_wr),
		cmocka_unit_test(test_ibv_translate__wc_every_field),
		cmocka_unit_test(test_ibv_translate__device_attr_every_field),
		cmocka_unit_test(test_ibv_translate__port_attr_every_field),
		cmocka_unit_test(test_ibv_translate__errno_conventions),
		cmocka_unit_test(test_ibv_translate__memlock_limit_words),
		cmocka_unit_test(test_ibv_translate__memlock_hint_names_the_limit),
		cmocka_unit_test(test_ibv_translate__names_for_messages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
