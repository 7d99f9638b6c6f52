/*
 * The data path of soft0 objects, reached through the ops of their context
 * (verbs.h's inline ibv_post_send, ibv_post_recv, ibv_post_srq_recv,
 * ibv_poll_cq, ibv_req_notify_cq): libibverbs' linked work requests become
 * rverbs' arrays, 16 at a time on the stack, and rverbs' completions become
 * ibv_wc. No allocation, no lock of its own.
 */
#include <endian.h>
#include <string.h>

#include "compat.h"

#define BATCH 16

static struct compat_qp *qp_of(struct ibv_qp *qp)
{
	return compat_container_of(qp, struct compat_qp, qp);
}

/* One ibv_send_wr into an rv_send_wr; EINVAL for what soft0 cannot post. */
static int send_wr_to_rv(const struct ibv_qp *qp, const struct ibv_send_wr *in, rv_send_wr *out)
{
	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->sg_list = (const rv_sge *)in->sg_list; /* ibv_sge and rv_sge share a layout */
	out->num_sge = in->num_sge < 0 ? 0 : (uint32_t)in->num_sge;
	if (in->num_sge < 0)
		return EINVAL;
	out->opcode = in->opcode; /* IBV_WR_* == RV_WR_* for the ones below */
	out->send_flags = in->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
					    IBV_SEND_INLINE | IBV_SEND_IP_CSUM);
	if (in->send_flags != out->send_flags)
		return EINVAL;
	switch (in->opcode) {
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		out->imm_data = be32toh(in->imm_data);
		/* fallthrough */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		out->remote_addr = in->wr.rdma.remote_addr;
		out->rkey = in->wr.rdma.rkey;
		break;
	case IBV_WR_SEND_WITH_IMM:
		out->imm_data = be32toh(in->imm_data);
		break;
	case IBV_WR_SEND_WITH_INV:
		out->imm_data = in->invalidate_rkey;
		break;
	case IBV_WR_SEND:
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		out->remote_addr = in->wr.atomic.remote_addr;
		out->rkey = in->wr.atomic.rkey;
		out->compare_add = in->wr.atomic.compare_add;
		out->swap = in->wr.atomic.swap;
		break;
	case IBV_WR_LOCAL_INV:
		out->imm_data = in->invalidate_rkey;
		break;
	default:
		return EINVAL; /* TSO, atomic write, flush, driver opcodes (BIND_MW: the caller) */
	}
	if (qp->qp_type == IBV_QPT_XRC_SEND)
		out->remote_srqn = in->qp_type.xrc.remote_srqn;
	if (qp->qp_type == IBV_QPT_UD) {
		if (!in->wr.ud.ah || in->wr.ud.ah->context != qp->context)
			return EINVAL;
		out->ah = compat_ah_rv(in->wr.ud.ah, in->wr.ud.remote_qpn);
		out->remote_qpn = in->wr.ud.remote_qpn;
		out->remote_qkey = in->wr.ud.remote_qkey;
	}
	return 0;
}

int compat_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	rv_send_wr wrs[BATCH];
	struct ibv_send_wr *chunk[BATCH];
	struct compat_qp *q = qp_of(qp);

	while (wr) {
		size_t n = 0, posted = 0;
		int rc = 0;

		for (; wr && n < BATCH; wr = wr->next) {
			if (wr->opcode == IBV_WR_BIND_MW)
				break; /* posted on its own, after the WRs before it */
			rc = send_wr_to_rv(qp, wr, &wrs[n]);
			if (rc)
				break;
			chunk[n++] = wr;
		}
		if (n) {
			int prc = rv_qp_post_send(q->rv, wrs, n, &posted);

			if (prc < 0) {
				*bad = chunk[posted < n ? posted : n - 1];
				return -prc;
			}
		}
		if (rc) {
			*bad = wr;
			return rc;
		}
		if (wr && wr->opcode == IBV_WR_BIND_MW && n < BATCH) {
			rc = compat_post_bind_mw(qp, wr);
			if (rc) {
				*bad = wr;
				return rc;
			}
			wr = wr->next;
		}
	}
	return 0;
}

/* Receive WRs: rv_recv_wr is ibv_recv_wr with next NULL. */
static int post_recv_chain(rv_qp *qp, rv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	rv_recv_wr wrs[BATCH];
	struct ibv_recv_wr *chunk[BATCH];

	while (wr) {
		size_t n = 0, posted = 0;
		int rc;

		for (; wr && n < BATCH; wr = wr->next) {
			if (wr->num_sge < 0) {
				if (n)
					break;
				*bad = wr;
				return EINVAL;
			}
			wrs[n].wr_id = wr->wr_id;
			wrs[n].reserved_next = NULL;
			wrs[n].sg_list = (const rv_sge *)wr->sg_list;
			wrs[n].num_sge = (uint32_t)wr->num_sge;
			wrs[n].reserved = 0;
			chunk[n++] = wr;
		}
		rc = srq ? rv_srq_post_recv(srq, wrs, n, &posted) : rv_qp_post_recv(qp, wrs, n, &posted);
		if (rc < 0) {
			*bad = chunk[posted < n ? posted : n - 1];
			return -rc;
		}
	}
	return 0;
}

int compat_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_chain(qp_of(qp)->rv, NULL, wr, bad);
}

int compat_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_chain(NULL, compat_container_of(srq, struct compat_srq, srq)->rv, wr, bad);
}

int compat_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	rv_cq *rv = compat_container_of(cq, struct compat_cq, cq)->rv;
	rv_wc got[BATCH];
	int total = 0;

	if (n < 0 || (n && !wc))
		return -EINVAL;
	while (total < n) {
		int want = n - total < BATCH ? n - total : BATCH;
		int k = rv_cq_poll(rv, got, want);

		if (k < 0)
			return total ? total : k; /* libibverbs: a negative value on error */
		for (int i = 0; i < k; i++) {
			struct ibv_wc *o = &wc[total + i];

			o->wr_id = got[i].wr_id;
			o->status = (enum ibv_wc_status)got[i].status; /* the same numbering */
			o->opcode = (enum ibv_wc_opcode)got[i].opcode;
			o->vendor_err = got[i].vendor_err;
			o->byte_len = got[i].byte_len;
			if (got[i].wc_flags & RV_WC_WITH_IMM)
				o->imm_data = htobe32(got[i].imm_data); /* network order in verbs */
			else
				o->invalidated_rkey = got[i].imm_data;
			o->qp_num = got[i].qp_num;
			o->src_qp = got[i].src_qp;
			o->wc_flags = got[i].wc_flags; /* IBV_WC_GRH, _WITH_IMM, _IP_CSUM_OK, _WITH_INV */
			o->pkey_index = got[i].pkey_index;
			o->slid = got[i].slid;
			o->sl = got[i].sl;
			o->dlid_path_bits = got[i].dlid_path_bits;
		}
		total += k;
		if (k < want)
			break;
	}
	return total;
}

int compat_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	int rc = rv_cq_req_notify(compat_container_of(cq, struct compat_cq, cq)->rv, solicited_only);

	return rc < 0 ? -rc : 0;
}
