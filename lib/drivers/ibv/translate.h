/*
 * Pure translations between rverbs structs and libibverbs structs.
 *
 * Owns: every field-by-field conversion the ibv driver makes: QP attributes
 * and their masks, QP init attributes, address vectors, work requests, work
 * completions, device and port attributes.
 * Never calls libibverbs, never allocates, never sets the error message, so
 * that tests/test-ibv-translate.c proves every field without hardware.
 *
 * The work-request and work-completion translators are static inline here
 * because they run once per WR/WC on the data path; the rest lives in
 * translate.c.
 */
#ifndef RV_IBV_TRANSLATE_H
#define RV_IBV_TRANSLATE_H

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "rverbs-private.h"

/* The rv_qp_attr_mask bits passed to ibv_modify_qp and ibv_query_qp; they
 * equal the IBV_QP_* bits (checked in translate.c). */
#define RV_IBV_QP_ATTR_MASK ((uint64_t)RV_QP_ATTR_ALL)

/* rv_send_flags that libibverbs knows; RV_SEND_NO_INLINE is rverbs' own and
 * RV_SEND_INLINE is decided by rv_send_wr_inline(). */
#define RV_IBV_SEND_FLAGS_PASSED \
	((uint32_t)(RV_SEND_FENCE | RV_SEND_SIGNALED | RV_SEND_SOLICITED | RV_SEND_IP_CSUM))

/* The libibverbs mask for an rv_qp_attr mask (unsupported bits dropped). */
int rv_ibv_qp_attr_mask_to_ibv(uint64_t mask);

/* rv_qp_attr -> ibv_qp_attr: every field named in in->mask; the rest zeroed.
 * *ret_mask receives the matching IBV_QP_* mask. */
void rv_ibv_qp_attr_to_ibv(const rv_qp_attr *in, struct ibv_qp_attr *out, int *ret_mask);

/* ibv_qp_attr (from ibv_query_qp) -> rv_qp_attr: every field named in
 * out->mask; out->mask and the other fields are left alone. */
void rv_ibv_qp_attr_from_ibv(const struct ibv_qp_attr *in, rv_qp_attr *out);

void rv_ibv_ah_attr_to_ibv(const rv_ah_attr *in, struct ibv_ah_attr *out);
void rv_ibv_ah_attr_from_ibv(const struct ibv_ah_attr *in, rv_ah_attr *out);

void rv_ibv_qp_cap_to_ibv(const rv_qp_cap *in, struct ibv_qp_cap *out);
void rv_ibv_qp_cap_from_ibv(const struct ibv_qp_cap *in, rv_qp_cap *out);

/* rv_qp_init_attr (defaults applied by the facade) -> ibv_qp_init_attr. The
 * CQs are the libibverbs CQs behind attr->send_cq / recv_cq; qp_context is
 * stored for asynchronous events. No SRQ. */
void rv_ibv_qp_init_attr_to_ibv(const rv_qp_init_attr *in, struct ibv_cq *send_cq,
				struct ibv_cq *recv_cq, void *qp_context,
				struct ibv_qp_init_attr *out);

/* ibv_device_attr -> rv_device_attr: every field but mask. GUIDs become host
 * byte order; negative limits (never reported by sane providers) become 0. */
void rv_ibv_device_attr_from_ibv(const struct ibv_device_attr *in, rv_device_attr *out);

/* ibv_port_attr -> rv_port_attr: every field but mask. */
void rv_ibv_port_attr_from_ibv(const struct ibv_port_attr *in, rv_port_attr *out);

/*
 * rv_send_wr -> ibv_send_wr, with out->next = NULL. The scatter/gather list
 * is shared, not copied (rv_sge and ibv_sge have one layout). The payload
 * goes inline when rv_send_wr_inline() says so; immediate data goes to
 * network byte order; an rkey to invalidate stays in host order.
 * Returns 0, -EINVAL for an opcode rverbs does not define, or -EOPNOTSUPP
 * for what this driver cannot express yet: memory-window binds (rv_send_wr
 * carries no window) and UD sends (address handles have no driver object).
 */
static inline int rv_ibv_send_wr_to_ibv(const struct rv_qp *qp, const rv_send_wr *in,
					struct ibv_send_wr *out)
{
	uint32_t flags = in->send_flags & RV_IBV_SEND_FLAGS_PASSED;

	if (RV_UNLIKELY(in->opcode > RV_WR_SEND_WITH_INV))
		return -EINVAL;
	if (RV_UNLIKELY(in->opcode == RV_WR_BIND_MW || qp->qp_type == RV_QPT_UD))
		return -EOPNOTSUPP;
	if (rv_send_wr_inline(qp, in))
		flags |= IBV_SEND_INLINE;

	/* Field by field: zeroing the whole 128-byte struct costs more than the
	 * rest of the translation (compilers emit rep stos for it). Providers
	 * read the unions by opcode and QP type only: the immediate, the
	 * rdma/atomic union and the XRC one are always written; bind_mw and
	 * tso are read only for opcodes rverbs never emits. */
	out->wr_id = in->wr_id;
	out->next = NULL;
	/* ibv_post_send() does not write through sg_list; the cast only drops
	 * the const its prototype lacks. */
	out->sg_list = (struct ibv_sge *)(uintptr_t)in->sg_list;
	out->num_sge = (int)in->num_sge;
	out->opcode = (enum ibv_wr_opcode)in->opcode;
	out->send_flags = flags;
	out->imm_data = 0;
	out->wr.atomic.remote_addr = 0;
	out->wr.atomic.compare_add = 0;
	out->wr.atomic.swap = 0;
	out->wr.atomic.rkey = 0;
	out->qp_type.xrc.remote_srqn = 0;

	switch (in->opcode) {
	case RV_WR_RDMA_WRITE_WITH_IMM:
		out->imm_data = htobe32(in->imm_data);
		out->wr.rdma.remote_addr = in->remote_addr;
		out->wr.rdma.rkey = in->rkey;
		break;
	case RV_WR_RDMA_WRITE:
	case RV_WR_RDMA_READ:
		out->wr.rdma.remote_addr = in->remote_addr;
		out->wr.rdma.rkey = in->rkey;
		break;
	case RV_WR_SEND_WITH_IMM:
		out->imm_data = htobe32(in->imm_data);
		break;
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
	default: /* RV_WR_SEND */
		break;
	}
	return 0;
}

/* rv_recv_wr -> ibv_recv_wr, with out->next = NULL; sg_list is shared. */
static inline void rv_ibv_recv_wr_to_ibv(const rv_recv_wr *in, struct ibv_recv_wr *out)
{
	out->wr_id = in->wr_id;
	out->next = NULL;
	out->sg_list = (struct ibv_sge *)(uintptr_t)in->sg_list;
	out->num_sge = (int)in->num_sge;
}

/* ibv_wc -> rv_wc. Immediate data comes back to host byte order; an
 * invalidated rkey is already in host order; otherwise imm_data is 0.
 * rv_wc was laid out as ibv_wc (translate.c proves every offset), so the
 * fields travel in one block copy and only imm_data and reserved are fixed. */
static inline void rv_ibv_wc_from_ibv(const struct ibv_wc *in, rv_wc *out)
{
	memcpy(out, in, offsetof(rv_wc, reserved));
	if (in->wc_flags & IBV_WC_WITH_IMM)
		out->imm_data = be32toh(in->imm_data);
	else if (!(in->wc_flags & IBV_WC_WITH_INV))
		out->imm_data = 0;
	out->reserved = 0;
}

#endif
