/*
 * Pure translations between rverbs structs and libibverbs structs (the
 * control-path half; the data-path half is inline in translate.h).
 *
 * Owns: the compile-time proof that rverbs' enums, flags and the rv_sge layout
 * equal libibverbs' (the public headers promise it), and the field-by-field
 * conversions. Never calls libibverbs, never allocates, never sets errors.
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "translate.h"

#define RV_SAME(a, b) _Static_assert((long long)(a) == (long long)(b), #a " must equal " #b)

/* rv_sge is passed to libibverbs as struct ibv_sge without copying. */
_Static_assert(sizeof(rv_sge) == sizeof(struct ibv_sge), "rv_sge size");
_Static_assert(offsetof(rv_sge, addr) == offsetof(struct ibv_sge, addr), "rv_sge.addr");
_Static_assert(offsetof(rv_sge, length) == offsetof(struct ibv_sge, length), "rv_sge.length");
_Static_assert(offsetof(rv_sge, lkey) == offsetof(struct ibv_sge, lkey), "rv_sge.lkey");

/* num_sge and opcode are adjacent 32-bit fields in both structs. */
_Static_assert(offsetof(rv_send_wr, opcode) == offsetof(rv_send_wr, num_sge) + 4 &&
	       sizeof(((rv_send_wr *)0)->num_sge) == 4 && sizeof(((rv_send_wr *)0)->opcode) == 4,
	       "rv_send_wr: num_sge then opcode, 4 bytes each");
_Static_assert(offsetof(struct ibv_send_wr, opcode) == offsetof(struct ibv_send_wr, num_sge) + 4 &&
	       sizeof(((struct ibv_send_wr *)0)->num_sge) == 4 &&
	       sizeof(((struct ibv_send_wr *)0)->opcode) == 4,
	       "ibv_send_wr: num_sge then opcode, 4 bytes each");

/* rv_send_wr starts as ibv_send_wr up to wr.rdma, and rv_recv_wr is
 * ibv_recv_wr (rverbs/qp.h promises it): the data path hands a WR that needs
 * no translation to libibverbs as it is (rv_ibv_send_wr_as_is). */
#define RV_SAME_AT(rv, rvf, ibv, ibvf)                                               \
	_Static_assert(offsetof(rv, rvf) == offsetof(ibv, ibvf) &&                   \
		       sizeof(((rv *)0)->rvf) == sizeof(((ibv *)0)->ibvf),           \
		       #rv "." #rvf " must match " #ibv "." #ibvf)
RV_SAME_AT(rv_send_wr, wr_id, struct ibv_send_wr, wr_id);
RV_SAME_AT(rv_send_wr, reserved_next, struct ibv_send_wr, next);
RV_SAME_AT(rv_send_wr, sg_list, struct ibv_send_wr, sg_list);
RV_SAME_AT(rv_send_wr, num_sge, struct ibv_send_wr, num_sge);
RV_SAME_AT(rv_send_wr, opcode, struct ibv_send_wr, opcode);
RV_SAME_AT(rv_send_wr, send_flags, struct ibv_send_wr, send_flags);
_Static_assert(offsetof(rv_send_wr, send_flags) == offsetof(rv_send_wr, opcode) + 4,
	       "rv_send_wr: opcode then send_flags (read as one word by datapath.c)");
RV_SAME_AT(rv_send_wr, imm_data, struct ibv_send_wr, imm_data);
RV_SAME_AT(rv_send_wr, remote_addr, struct ibv_send_wr, wr.rdma.remote_addr);
RV_SAME_AT(rv_send_wr, rkey, struct ibv_send_wr, wr.rdma.rkey);
RV_SAME_AT(rv_recv_wr, wr_id, struct ibv_recv_wr, wr_id);
RV_SAME_AT(rv_recv_wr, reserved_next, struct ibv_recv_wr, next);
RV_SAME_AT(rv_recv_wr, sg_list, struct ibv_recv_wr, sg_list);
RV_SAME_AT(rv_recv_wr, num_sge, struct ibv_recv_wr, num_sge);
_Static_assert(sizeof(rv_recv_wr) == sizeof(struct ibv_recv_wr), "rv_recv_wr size");
/* rv_ibv_send_wr_fill() copies this prefix as one block: every field in it
 * is matched above, and it lies inside both structs. */
_Static_assert(RV_IBV_SEND_WR_PREFIX == offsetof(rv_send_wr, rkey) + sizeof(uint32_t) &&
	       RV_IBV_SEND_WR_PREFIX <= sizeof(rv_send_wr), "rv_send_wr prefix as ibv_send_wr");
_Static_assert(RV_WR_RDMA_WRITE_WITH_IMM == 1 && RV_WR_SEND_WITH_IMM == 3 && RV_WR_RDMA_WRITE == 0 &&
	       RV_WR_SEND == 2 && RV_WR_RDMA_READ == 4, "the odd opcodes up to READ carry an immediate");
/* A provider that copies a whole ibv_send_wr must stay inside the caller's WR. */
_Static_assert(sizeof(rv_send_wr) == sizeof(struct ibv_send_wr), "rv_send_wr size");

/* rv_wc has ibv_wc's layout up to rv_wc::reserved (ibv_wc's tail padding):
 * rv_ibv_wc_from_ibv() copies that block whole. */
#define RV_SAME_WC_FIELD(f)                                                        \
	_Static_assert(offsetof(rv_wc, f) == offsetof(struct ibv_wc, f) &&        \
		       sizeof(((rv_wc *)0)->f) == sizeof(((struct ibv_wc *)0)->f), \
		       "rv_wc." #f " must match ibv_wc." #f)
RV_SAME_WC_FIELD(wr_id);
RV_SAME_WC_FIELD(status);
RV_SAME_WC_FIELD(opcode);
RV_SAME_WC_FIELD(vendor_err);
RV_SAME_WC_FIELD(byte_len);
RV_SAME_WC_FIELD(imm_data);
RV_SAME_WC_FIELD(qp_num);
RV_SAME_WC_FIELD(src_qp);
RV_SAME_WC_FIELD(wc_flags);
RV_SAME_WC_FIELD(pkey_index);
RV_SAME_WC_FIELD(slid);
RV_SAME_WC_FIELD(sl);
RV_SAME_WC_FIELD(dlid_path_bits);
_Static_assert(offsetof(rv_wc, reserved) == offsetof(struct ibv_wc, dlid_path_bits) + 1 &&
	       sizeof(rv_wc) == sizeof(struct ibv_wc), "rv_wc size");

RV_SAME(RV_WC_SUCCESS, IBV_WC_SUCCESS);
RV_SAME(RV_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
RV_SAME(RV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR);
RV_SAME(RV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_EEC_OP_ERR);
RV_SAME(RV_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
RV_SAME(RV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
RV_SAME(RV_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR);
RV_SAME(RV_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR);
RV_SAME(RV_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR);
RV_SAME(RV_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
RV_SAME(RV_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
RV_SAME(RV_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
RV_SAME(RV_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
RV_SAME(RV_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
RV_SAME(RV_WC_LOC_RDD_VIOL_ERR, IBV_WC_LOC_RDD_VIOL_ERR);
RV_SAME(RV_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR);
RV_SAME(RV_WC_REM_ABORT_ERR, IBV_WC_REM_ABORT_ERR);
RV_SAME(RV_WC_INV_EECN_ERR, IBV_WC_INV_EECN_ERR);
RV_SAME(RV_WC_INV_EEC_STATE_ERR, IBV_WC_INV_EEC_STATE_ERR);
RV_SAME(RV_WC_FATAL_ERR, IBV_WC_FATAL_ERR);
RV_SAME(RV_WC_RESP_TIMEOUT_ERR, IBV_WC_RESP_TIMEOUT_ERR);
RV_SAME(RV_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);

RV_SAME(RV_WC_SEND, IBV_WC_SEND);
RV_SAME(RV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
RV_SAME(RV_WC_RDMA_READ, IBV_WC_RDMA_READ);
RV_SAME(RV_WC_COMP_SWAP, IBV_WC_COMP_SWAP);
RV_SAME(RV_WC_FETCH_ADD, IBV_WC_FETCH_ADD);
RV_SAME(RV_WC_BIND_MW, IBV_WC_BIND_MW);
RV_SAME(RV_WC_LOCAL_INV, IBV_WC_LOCAL_INV);
RV_SAME(RV_WC_RECV, IBV_WC_RECV);
RV_SAME(RV_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);

RV_SAME(RV_WC_GRH, IBV_WC_GRH);
RV_SAME(RV_WC_WITH_IMM, IBV_WC_WITH_IMM);
RV_SAME(RV_WC_IP_CSUM_OK, IBV_WC_IP_CSUM_OK);
RV_SAME(RV_WC_WITH_INV, IBV_WC_WITH_INV);

RV_SAME(RV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
RV_SAME(RV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
RV_SAME(RV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
RV_SAME(RV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
RV_SAME(RV_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND);
RV_SAME(RV_ACCESS_ZERO_BASED, IBV_ACCESS_ZERO_BASED);
RV_SAME(RV_ACCESS_ON_DEMAND, IBV_ACCESS_ON_DEMAND);
RV_SAME(RV_ACCESS_HUGETLB, IBV_ACCESS_HUGETLB);
RV_SAME(RV_ACCESS_RELAXED_ORDERING, IBV_ACCESS_RELAXED_ORDERING);

RV_SAME(RV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_UNSPECIFIED);
RV_SAME(RV_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_INFINIBAND);
RV_SAME(RV_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_ETHERNET);

RV_SAME(RV_PORT_NOP, IBV_PORT_NOP);
RV_SAME(RV_PORT_DOWN, IBV_PORT_DOWN);
RV_SAME(RV_PORT_INIT, IBV_PORT_INIT);
RV_SAME(RV_PORT_ARMED, IBV_PORT_ARMED);
RV_SAME(RV_PORT_ACTIVE, IBV_PORT_ACTIVE);
RV_SAME(RV_PORT_ACTIVE_DEFER, IBV_PORT_ACTIVE_DEFER);

RV_SAME(RV_MTU_256, IBV_MTU_256);
RV_SAME(RV_MTU_512, IBV_MTU_512);
RV_SAME(RV_MTU_1024, IBV_MTU_1024);
RV_SAME(RV_MTU_2048, IBV_MTU_2048);
RV_SAME(RV_MTU_4096, IBV_MTU_4096);

RV_SAME(RV_ATOMIC_NONE, IBV_ATOMIC_NONE);
RV_SAME(RV_ATOMIC_HCA, IBV_ATOMIC_HCA);
RV_SAME(RV_ATOMIC_GLOB, IBV_ATOMIC_GLOB);

RV_SAME(RV_QPT_RC, IBV_QPT_RC);
RV_SAME(RV_QPT_UC, IBV_QPT_UC);
RV_SAME(RV_QPT_UD, IBV_QPT_UD);

RV_SAME(RV_QPS_RESET, IBV_QPS_RESET);
RV_SAME(RV_QPS_INIT, IBV_QPS_INIT);
RV_SAME(RV_QPS_RTR, IBV_QPS_RTR);
RV_SAME(RV_QPS_RTS, IBV_QPS_RTS);
RV_SAME(RV_QPS_SQD, IBV_QPS_SQD);
RV_SAME(RV_QPS_SQE, IBV_QPS_SQE);
RV_SAME(RV_QPS_ERR, IBV_QPS_ERR);

RV_SAME(RV_QP_STATE, IBV_QP_STATE);
RV_SAME(RV_QP_CUR_STATE, IBV_QP_CUR_STATE);
RV_SAME(RV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY);
RV_SAME(RV_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
RV_SAME(RV_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX);
RV_SAME(RV_QP_PORT, IBV_QP_PORT);
RV_SAME(RV_QP_QKEY, IBV_QP_QKEY);
RV_SAME(RV_QP_AV, IBV_QP_AV);
RV_SAME(RV_QP_PATH_MTU, IBV_QP_PATH_MTU);
RV_SAME(RV_QP_TIMEOUT, IBV_QP_TIMEOUT);
RV_SAME(RV_QP_RETRY_CNT, IBV_QP_RETRY_CNT);
RV_SAME(RV_QP_RNR_RETRY, IBV_QP_RNR_RETRY);
RV_SAME(RV_QP_RQ_PSN, IBV_QP_RQ_PSN);
RV_SAME(RV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
RV_SAME(RV_QP_ALT_PATH, IBV_QP_ALT_PATH);
RV_SAME(RV_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
RV_SAME(RV_QP_SQ_PSN, IBV_QP_SQ_PSN);
RV_SAME(RV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
RV_SAME(RV_QP_PATH_MIG_STATE, IBV_QP_PATH_MIG_STATE);
RV_SAME(RV_QP_CAP, IBV_QP_CAP);
RV_SAME(RV_QP_DEST_QPN, IBV_QP_DEST_QPN);

RV_SAME(RV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
RV_SAME(RV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
RV_SAME(RV_WR_SEND, IBV_WR_SEND);
RV_SAME(RV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
RV_SAME(RV_WR_RDMA_READ, IBV_WR_RDMA_READ);
RV_SAME(RV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
RV_SAME(RV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
RV_SAME(RV_WR_LOCAL_INV, IBV_WR_LOCAL_INV);
RV_SAME(RV_WR_BIND_MW, IBV_WR_BIND_MW);
RV_SAME(RV_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);

RV_SAME(RV_SEND_FENCE, IBV_SEND_FENCE);
RV_SAME(RV_SEND_SIGNALED, IBV_SEND_SIGNALED);
RV_SAME(RV_SEND_SOLICITED, IBV_SEND_SOLICITED);
RV_SAME(RV_SEND_INLINE, IBV_SEND_INLINE);
RV_SAME(RV_SEND_IP_CSUM, IBV_SEND_IP_CSUM);
/* rverbs' own flag must not collide with a libibverbs one. */
_Static_assert((RV_SEND_NO_INLINE & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				     IBV_SEND_INLINE | IBV_SEND_IP_CSUM)) == 0,
	       "RV_SEND_NO_INLINE collides with an IBV_SEND_* flag");

unsigned int rv_ibv_send_flags(const struct rv_qp *qp, const rv_send_wr *in)
{
	uint32_t f = in->send_flags;
	unsigned int out = f & RV_IBV_SEND_FLAGS_PASSED;
	bool may = (RV_IBV_INLINE_OPCODES >> in->opcode) & 1;

	if (!(f & (RV_SEND_INLINE | RV_SEND_NO_INLINE))) {
		uint32_t max = qp->cap.max_inline_data;
		if (may && max && rv_send_wr_length(in) <= max)
			out |= IBV_SEND_INLINE;
	} else if (may && (f & RV_SEND_INLINE)) {
		out |= IBV_SEND_INLINE;
	}
	return out;
}

/* The opcodes rv_ibv_send_wr_common() does not take, UD and XRC initiator
 * WRs (remote_srqn), and the refusals: off
 * the usual data path, so a switch and full zeroing of the unions are fine. */
int rv_ibv_send_wr_other(const struct rv_qp *qp, const rv_send_wr *in, struct ibv_send_wr *out)
{
	if (in->opcode > RV_WR_SEND_WITH_INV)
		return -EINVAL;
	if (in->opcode == RV_WR_BIND_MW)
		return -EOPNOTSUPP;
	out->wr_id = in->wr_id;
	out->next = NULL;
	out->sg_list = (struct ibv_sge *)(uintptr_t)in->sg_list;
	out->num_sge = (int)in->num_sge;
	out->opcode = (enum ibv_wr_opcode)in->opcode;
	out->send_flags = rv_ibv_send_flags(qp, in);
	out->imm_data = 0;
	memset(&out->wr, 0, sizeof(out->wr));
	memset(&out->qp_type, 0, sizeof(out->qp_type));
	switch (in->opcode) {
	case RV_WR_SEND_WITH_INV:
	case RV_WR_LOCAL_INV:
		out->invalidate_rkey = in->imm_data;
		break;
	case RV_WR_ATOMIC_CMP_AND_SWP:
	case RV_WR_ATOMIC_FETCH_AND_ADD:
		out->wr.atomic.remote_addr = in->remote_addr;
		out->wr.atomic.rkey = in->rkey;
		out->wr.atomic.compare_add = in->compare_add;
		out->wr.atomic.swap = in->swap;
		break;
	default: /* the common opcodes, on a QP type the fast path leaves here */
		out->imm_data = htobe32(in->imm_data);
		out->wr.rdma.remote_addr = in->remote_addr;
		out->wr.rdma.rkey = in->rkey;
		break;
	}
	if (qp->qp_type == RV_QPT_XRC_SEND)
		out->qp_type.xrc.remote_srqn = in->remote_srqn;
	if (qp->qp_type == RV_QPT_UD) {
		/* Checked by rv_ud_wr_check(): a live AH of this driver. wr.ud
		 * shares the union with the RDMA fields written above. */
		out->wr.ud.ah = in->ah->drv_ah;
		out->wr.ud.remote_qpn = in->remote_qpn;
		out->wr.ud.remote_qkey = in->remote_qkey;
	}
	return 0;
}

/* A libibverbs "int" limit as rverbs' unsigned field. */
static uint32_t limit_u32(int v)
{
	return v < 0 ? 0 : (uint32_t)v;
}

int rv_ibv_qp_attr_mask_to_ibv(uint64_t mask)
{
	/* Equal bit values (checked above); only the supported ones pass. */
	return (int)(mask & RV_IBV_QP_ATTR_MASK);
}

void rv_ibv_ah_attr_to_ibv(const rv_ah_attr *in, struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->dgid, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->flow_label;
	out->grh.sgid_index = in->sgid_index;
	out->grh.hop_limit = in->hop_limit;
	out->grh.traffic_class = in->traffic_class;
	out->is_global = in->is_global;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

void rv_ibv_ah_attr_from_ibv(const struct ibv_ah_attr *in, rv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->dgid, in->grh.dgid.raw, sizeof(out->dgid));
	out->flow_label = in->grh.flow_label;
	out->sgid_index = in->grh.sgid_index;
	out->hop_limit = in->grh.hop_limit;
	out->traffic_class = in->grh.traffic_class;
	out->is_global = in->is_global;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

void rv_ibv_qp_cap_to_ibv(const rv_qp_cap *in, struct ibv_qp_cap *out)
{
	out->max_send_wr = in->max_send_wr;
	out->max_recv_wr = in->max_recv_wr;
	out->max_send_sge = in->max_send_sge;
	out->max_recv_sge = in->max_recv_sge;
	out->max_inline_data = in->max_inline_data;
}

void rv_ibv_qp_cap_from_ibv(const struct ibv_qp_cap *in, rv_qp_cap *out)
{
	out->max_send_wr = in->max_send_wr;
	out->max_recv_wr = in->max_recv_wr;
	out->max_send_sge = in->max_send_sge;
	out->max_recv_sge = in->max_recv_sge;
	out->max_inline_data = in->max_inline_data;
}

void rv_ibv_qp_attr_to_ibv(const rv_qp_attr *in, struct ibv_qp_attr *out, int *ret_mask)
{
	uint64_t m = in->mask & RV_IBV_QP_ATTR_MASK;

	memset(out, 0, sizeof(*out));
	if (m & RV_QP_STATE)
		out->qp_state = (enum ibv_qp_state)in->qp_state;
	if (m & RV_QP_CUR_STATE)
		out->cur_qp_state = (enum ibv_qp_state)in->cur_qp_state;
	if (m & RV_QP_EN_SQD_ASYNC_NOTIFY)
		out->en_sqd_async_notify = in->en_sqd_async_notify;
	if (m & RV_QP_ACCESS_FLAGS)
		out->qp_access_flags = in->qp_access_flags;
	if (m & RV_QP_PKEY_INDEX)
		out->pkey_index = in->pkey_index;
	if (m & RV_QP_PORT)
		out->port_num = in->port_num;
	if (m & RV_QP_QKEY)
		out->qkey = in->qkey;
	if (m & RV_QP_AV)
		rv_ibv_ah_attr_to_ibv(&in->ah_attr, &out->ah_attr);
	if (m & RV_QP_PATH_MTU)
		out->path_mtu = (enum ibv_mtu)in->path_mtu;
	if (m & RV_QP_TIMEOUT)
		out->timeout = in->timeout;
	if (m & RV_QP_RETRY_CNT)
		out->retry_cnt = in->retry_cnt;
	if (m & RV_QP_RNR_RETRY)
		out->rnr_retry = in->rnr_retry;
	if (m & RV_QP_RQ_PSN)
		out->rq_psn = in->rq_psn;
	if (m & RV_QP_MAX_QP_RD_ATOMIC)
		out->max_rd_atomic = in->max_rd_atomic;
	if (m & RV_QP_MIN_RNR_TIMER)
		out->min_rnr_timer = in->min_rnr_timer;
	if (m & RV_QP_SQ_PSN)
		out->sq_psn = in->sq_psn;
	if (m & RV_QP_MAX_DEST_RD_ATOMIC)
		out->max_dest_rd_atomic = in->max_dest_rd_atomic;
	if (m & RV_QP_CAP)
		rv_ibv_qp_cap_to_ibv(&in->cap, &out->cap);
	if (m & RV_QP_DEST_QPN)
		out->dest_qp_num = in->dest_qp_num;
	*ret_mask = rv_ibv_qp_attr_mask_to_ibv(m);
}

void rv_ibv_qp_attr_from_ibv(const struct ibv_qp_attr *in, rv_qp_attr *out)
{
	uint64_t m = out->mask & RV_IBV_QP_ATTR_MASK;

	if (m & RV_QP_STATE)
		out->qp_state = (uint32_t)in->qp_state;
	if (m & RV_QP_CUR_STATE)
		out->cur_qp_state = (uint32_t)in->cur_qp_state;
	if (m & RV_QP_EN_SQD_ASYNC_NOTIFY)
		out->en_sqd_async_notify = in->en_sqd_async_notify;
	if (m & RV_QP_ACCESS_FLAGS)
		out->qp_access_flags = in->qp_access_flags;
	if (m & RV_QP_PKEY_INDEX)
		out->pkey_index = in->pkey_index;
	if (m & RV_QP_PORT)
		out->port_num = in->port_num;
	if (m & RV_QP_QKEY)
		out->qkey = in->qkey;
	if (m & RV_QP_AV)
		rv_ibv_ah_attr_from_ibv(&in->ah_attr, &out->ah_attr);
	if (m & RV_QP_PATH_MTU)
		out->path_mtu = (uint32_t)in->path_mtu;
	if (m & RV_QP_TIMEOUT)
		out->timeout = in->timeout;
	if (m & RV_QP_RETRY_CNT)
		out->retry_cnt = in->retry_cnt;
	if (m & RV_QP_RNR_RETRY)
		out->rnr_retry = in->rnr_retry;
	if (m & RV_QP_RQ_PSN)
		out->rq_psn = in->rq_psn;
	if (m & RV_QP_MAX_QP_RD_ATOMIC)
		out->max_rd_atomic = in->max_rd_atomic;
	if (m & RV_QP_MIN_RNR_TIMER)
		out->min_rnr_timer = in->min_rnr_timer;
	if (m & RV_QP_SQ_PSN)
		out->sq_psn = in->sq_psn;
	if (m & RV_QP_MAX_DEST_RD_ATOMIC)
		out->max_dest_rd_atomic = in->max_dest_rd_atomic;
	if (m & RV_QP_CAP)
		rv_ibv_qp_cap_from_ibv(&in->cap, &out->cap);
	if (m & RV_QP_DEST_QPN)
		out->dest_qp_num = in->dest_qp_num;
}

void rv_ibv_qp_init_attr_to_ibv(const rv_qp_init_attr *in, struct ibv_cq *send_cq,
				struct ibv_cq *recv_cq, void *qp_context,
				struct ibv_qp_init_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->qp_context = qp_context;
	out->send_cq = send_cq;
	out->recv_cq = recv_cq;
	out->srq = NULL;
	rv_ibv_qp_cap_to_ibv(&in->cap, &out->cap);
	out->qp_type = (enum ibv_qp_type)in->qp_type;
	out->sq_sig_all = in->sq_sig_all ? 1 : 0;
}

void rv_ibv_device_attr_from_ibv(const struct ibv_device_attr *in, rv_device_attr *out)
{
	size_t n = strnlen(in->fw_ver, sizeof(in->fw_ver));

	if (n >= sizeof(out->fw_ver))
		n = sizeof(out->fw_ver) - 1;
	memcpy(out->fw_ver, in->fw_ver, n);
	memset(out->fw_ver + n, 0, sizeof(out->fw_ver) - n);
	out->node_guid = be64toh(in->node_guid);
	out->sys_image_guid = be64toh(in->sys_image_guid);
	out->max_mr_size = in->max_mr_size;
	out->page_size_cap = in->page_size_cap;
	out->vendor_id = in->vendor_id;
	out->vendor_part_id = in->vendor_part_id;
	out->hw_ver = in->hw_ver;
	out->max_qp = limit_u32(in->max_qp);
	out->max_qp_wr = limit_u32(in->max_qp_wr);
	out->device_cap_flags = in->device_cap_flags;
	out->max_sge = limit_u32(in->max_sge);
	out->max_sge_rd = limit_u32(in->max_sge_rd);
	out->max_cq = limit_u32(in->max_cq);
	out->max_cqe = limit_u32(in->max_cqe);
	out->max_mr = limit_u32(in->max_mr);
	out->max_pd = limit_u32(in->max_pd);
	out->max_qp_rd_atom = limit_u32(in->max_qp_rd_atom);
	out->max_qp_init_rd_atom = limit_u32(in->max_qp_init_rd_atom);
	out->atomic_cap = (uint32_t)in->atomic_cap;
	out->max_srq = limit_u32(in->max_srq);
	out->max_srq_wr = limit_u32(in->max_srq_wr);
	out->max_srq_sge = limit_u32(in->max_srq_sge);
	out->max_mw = limit_u32(in->max_mw);
	out->max_ah = limit_u32(in->max_ah);
	out->max_mcast_grp = limit_u32(in->max_mcast_grp);
	out->max_mcast_qp_attach = limit_u32(in->max_mcast_qp_attach);
	out->max_total_mcast_qp_attach = limit_u32(in->max_total_mcast_qp_attach);
	out->max_pkeys = in->max_pkeys;
	out->phys_port_cnt = in->phys_port_cnt;
}

/* The extended fields as rverbs/context.h and cq.h promise them. */
RV_SAME(RV_ODP_SUPPORT, IBV_ODP_SUPPORT);
RV_SAME(RV_ODP_SUPPORT_IMPLICIT, IBV_ODP_SUPPORT_IMPLICIT);
RV_SAME(RV_ODP_SUPPORT_SEND, IBV_ODP_SUPPORT_SEND);
RV_SAME(RV_ODP_SUPPORT_RECV, IBV_ODP_SUPPORT_RECV);
RV_SAME(RV_ODP_SUPPORT_WRITE, IBV_ODP_SUPPORT_WRITE);
RV_SAME(RV_ODP_SUPPORT_READ, IBV_ODP_SUPPORT_READ);
RV_SAME(RV_ODP_SUPPORT_ATOMIC, IBV_ODP_SUPPORT_ATOMIC);
RV_SAME(RV_ODP_SUPPORT_SRQ_RECV, IBV_ODP_SUPPORT_SRQ_RECV);
RV_SAME(RV_PCI_ATOMIC_4_BYTE, IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP);
RV_SAME(RV_PCI_ATOMIC_8_BYTE, IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP);
RV_SAME(RV_PCI_ATOMIC_16_BYTE, IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP);
RV_SAME(RV_CQ_WC_TIMESTAMP, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
RV_SAME(RV_CQ_WC_FLOW_TAG, IBV_WC_EX_WITH_FLOW_TAG);
RV_SAME(RV_CQ_WC_TIMESTAMP_WALLCLOCK, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);

void rv_ibv_device_attr_ex_from_ibv(const struct ibv_device_attr_ex *in, rv_device_attr *out)
{
	out->device_cap_flags_ex = in->device_cap_flags_ex;
	out->completion_timestamp_mask = in->completion_timestamp_mask;
	out->hca_core_clock = in->hca_core_clock;
	out->max_dm_size = in->max_dm_size;
	out->odp_general_caps = in->odp_caps.general_caps;
	out->odp_rc_caps = in->odp_caps.per_transport_caps.rc_odp_caps;
	out->odp_uc_caps = in->odp_caps.per_transport_caps.uc_odp_caps;
	out->odp_ud_caps = in->odp_caps.per_transport_caps.ud_odp_caps;
	out->odp_xrc_caps = in->xrc_odp_caps;
	out->pp_rate_limit_min = in->packet_pacing_caps.qp_rate_limit_min;
	out->pp_rate_limit_max = in->packet_pacing_caps.qp_rate_limit_max;
	out->pp_supported_qpts = in->packet_pacing_caps.supported_qpts;
	out->pci_atomic_fetch_add = in->pci_atomic_caps.fetch_add;
	out->pci_atomic_swap = in->pci_atomic_caps.swap;
	out->pci_atomic_compare_swap = in->pci_atomic_caps.compare_swap;
	/* The kernel reports one limit for send and receive WRs (max_sge). */
	out->max_send_sge = limit_u32(in->orig_attr.max_sge);
	out->max_recv_sge = limit_u32(in->orig_attr.max_sge);
	out->max_read_sge = limit_u32(in->orig_attr.max_sge_rd);
	/* Not part of the device query in libibverbs: a QP's cap says it. */
	out->max_inline_data = 0;
	/* Timestamps are known from the mask; whether wall-clock stamps and
	 * flow tags are there only ibv_create_cq_ex tells (rv_cq_new tries). */
	out->cq_wc_flags = in->completion_timestamp_mask ? RV_CQ_WC_TIMESTAMP : 0;
}

void rv_ibv_port_attr_from_ibv(const struct ibv_port_attr *in, rv_port_attr *out)
{
	out->state = (uint32_t)in->state;
	out->max_mtu = (uint32_t)in->max_mtu;
	out->active_mtu = (uint32_t)in->active_mtu;
	out->gid_tbl_len = limit_u32(in->gid_tbl_len);
	out->port_cap_flags = in->port_cap_flags;
	out->max_msg_sz = in->max_msg_sz;
	out->pkey_tbl_len = in->pkey_tbl_len;
	out->lid = in->lid;
	out->sm_lid = in->sm_lid;
	out->link_layer = in->link_layer;
	out->active_speed = in->active_speed;
	out->active_width = in->active_width;
	out->phys_state = in->phys_state;
}
