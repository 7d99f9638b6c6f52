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
/* The RV_DEVICE_ATTR_EX part. */
void rv_ibv_device_attr_ex_from_ibv(const struct ibv_device_attr_ex *in, rv_device_attr *out);

/* ibv_port_attr -> rv_port_attr: every field but mask. */
void rv_ibv_port_attr_from_ibv(const struct ibv_port_attr *in, rv_port_attr *out);

/* The opcodes whose payload may go inline (SENDs and WRITEs). */
#define RV_IBV_INLINE_OPCODES                                                     \
	((1u << RV_WR_RDMA_WRITE) | (1u << RV_WR_RDMA_WRITE_WITH_IMM) | (1u << RV_WR_SEND) | \
	 (1u << RV_WR_SEND_WITH_IMM) | (1u << RV_WR_SEND_WITH_INV))

/* The libibverbs send flags of in, inline decided by rv_send_wr_inline's
 * rule. in->opcode must be a valid rv_wr_opcode (below 32). Out of line
 * (translate.c): the common path below needs it only when the caller names
 * RV_SEND_INLINE, RV_SEND_NO_INLINE or a flag libibverbs does not know. */
unsigned int rv_ibv_send_flags(const struct rv_qp *qp, const rv_send_wr *in);

/*
 * rv_send_wr -> ibv_send_wr for the common opcodes (RDMA WRITE, WRITE with
 * immediate, SEND, SEND with immediate, RDMA READ: in->opcode <=
 * RV_WR_RDMA_READ) on a connected QP, with out->next = next, when the
 * caller's send flags are all libibverbs ones (no bit outside
 * RV_IBV_SEND_FLAGS_PASSED): straight-line code, no switch, no call. The
 * flags pass unchanged, plus IBV_SEND_INLINE when the payload fits max_inline
 * (qp->cap.max_inline_data; of these opcodes only READ never goes inline).
 * Fields an opcode does not use get whatever the caller's WR held (the
 * immediate in host order, the remote address and key): providers read the
 * unions by opcode and QP type only, so zeroing them would be wasted stores.
 */
static inline void rv_ibv_send_wr_fill(const rv_send_wr *in, uint32_t f, struct ibv_send_wr *next,
				       struct ibv_send_wr *out);

static inline void rv_ibv_send_wr_plain(uint32_t max_inline, const rv_send_wr *in,
					struct ibv_send_wr *next, struct ibv_send_wr *out)
{
	uint32_t f = in->send_flags;

	if (max_inline && in->opcode != RV_WR_RDMA_READ && rv_send_wr_length(in) <= max_inline)
		f |= IBV_SEND_INLINE;
	rv_ibv_send_wr_fill(in, f, next, out);
}

/* The bytes of rv_send_wr laid out as ibv_send_wr (translate.c proves each
 * field): wr_id up to and including wr.rdma.rkey. */
#define RV_IBV_SEND_WR_PREFIX (offsetof(struct ibv_send_wr, wr.rdma.rkey) + sizeof(uint32_t))

/* The caller's WR copied as one block into out (a few vector moves instead
 * of a load and a store per field): next is the caller's reserved_next, the
 * flags and the immediate are the caller's. The empty asm makes the compiler
 * forget what it copied, so that a patch of send_flags after it is one
 * read-modify-write of out's memory, not a reload from in and a store. */
static inline void rv_ibv_send_wr_copy(const rv_send_wr *in, struct ibv_send_wr *out)
{
	memcpy(out, in, RV_IBV_SEND_WR_PREFIX);
	__asm__("" : "+m"(*out));
}

/* rv_ibv_send_wr_plain with the libibverbs send flags f already decided: the
 * caller's WR copied as one block (a few vector moves instead of a load and
 * a store per field), then next, the flags and, for the two opcodes that
 * carry one, the immediate in network byte order patched in. */
static inline void rv_ibv_send_wr_fill(const rv_send_wr *in, uint32_t f, struct ibv_send_wr *next,
				       struct ibv_send_wr *out)
{
	/* sg_list is shared: ibv_post_send() does not write through it. */
	memcpy(out, in, RV_IBV_SEND_WR_PREFIX);
	out->next = next;
	out->send_flags = f;
	/* WRITE_WITH_IMM (1) and SEND_WITH_IMM (3) are the odd opcodes up to
	 * READ; the others leave imm_data unread (providers read it by opcode). */
	if (in->opcode & 1)
		out->imm_data = htobe32(in->imm_data);
}

/* The same with any send flags (a loop loads max_inline once). */
static inline void rv_ibv_send_wr_common(const struct rv_qp *qp, uint32_t max_inline,
					 const rv_send_wr *in, struct ibv_send_wr *next,
					 struct ibv_send_wr *out)
{
	rv_ibv_send_wr_plain(max_inline, in, next, out);
	if (RV_UNLIKELY(in->send_flags & ~RV_IBV_SEND_FLAGS_PASSED))
		out->send_flags = rv_ibv_send_flags(qp, in);
}

/* The other opcodes, and the refusals (translate.c). */
int rv_ibv_send_wr_other(const struct rv_qp *qp, const rv_send_wr *in, struct ibv_send_wr *out);

/*
 * rv_send_wr -> ibv_send_wr, with out->next = NULL. The scatter/gather list
 * is shared, not copied (rv_sge and ibv_sge have one layout). The payload
 * goes inline when rv_send_wr_inline() says so; immediate data goes to
 * network byte order; an rkey to invalidate stays in host order. Union
 * fields the opcode does not use are unspecified.
 * Returns 0, -EINVAL for an opcode rverbs does not define, or -EOPNOTSUPP
 * for what this driver cannot express yet: memory-window binds (rv_send_wr
 * carries no window). A UD WR must have passed rv_ud_wr_check() (a live
 * address handle of this driver): its ibv_ah, remote QPN and Q_Key go to wr.ud.
 */
static inline int rv_ibv_send_wr_to_ibv(const struct rv_qp *qp, const rv_send_wr *in,
					struct ibv_send_wr *out)
{
	/* UD and XRC initiator WRs carry fields the common path leaves out. */
	if (RV_LIKELY(in->opcode <= RV_WR_RDMA_READ && qp->qp_type != RV_QPT_UD &&
		      qp->qp_type != RV_QPT_XRC_SEND)) {
		rv_ibv_send_wr_common(qp, qp->cap.max_inline_data, in, NULL, out);
		return 0;
	}
	return rv_ibv_send_wr_other(qp, in, out);
}

/* rv_recv_wr -> ibv_recv_wr, with out->next = NULL; sg_list is shared. */
static inline void rv_ibv_recv_wr_to_ibv(const rv_recv_wr *in, struct ibv_recv_wr *out)
{
	out->wr_id = in->wr_id;
	out->next = NULL;
	out->sg_list = (struct ibv_sge *)(uintptr_t)in->sg_list;
	out->num_sge = (int)in->num_sge;
}

/* A work completion that libibverbs wrote as an ibv_wc into rv_wc's memory
 * (rv_wc has ibv_wc's layout and size up to reserved: translate.c proves every
 * offset), made an rv_wc: immediate data back to host byte order, an
 * invalidated rkey left in host order; without either flag imm_data is left
 * as the provider wrote it (undefined, as in libibverbs: rverbs/cq.h);
 * reserved (ibv_wc's tail padding) 0. */
static inline void rv_ibv_wc_fix(rv_wc *wc)
{
	/* The usual completion carries no immediate: one test, one store. */
	if (RV_UNLIKELY(wc->wc_flags & IBV_WC_WITH_IMM))
		wc->imm_data = be32toh(wc->imm_data);
	wc->reserved = 0;
}

/* ibv_wc -> rv_wc, by a block copy and rv_ibv_wc_fix. */
static inline void rv_ibv_wc_from_ibv(const struct ibv_wc *in, rv_wc *out)
{
	memcpy(out, in, sizeof(*out));
	rv_ibv_wc_fix(out);
}

/* rv_wc -> ibv_wc (the reverse of rv_ibv_wc_from_ibv), for
 * ibv_init_ah_from_wc; immediate data goes back to network byte order. */
static inline void rv_ibv_wc_to_ibv(const rv_wc *in, struct ibv_wc *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out, in, offsetof(rv_wc, reserved));
	if (in->wc_flags & RV_WC_WITH_IMM)
		out->imm_data = htobe32(in->imm_data);
}

#endif
