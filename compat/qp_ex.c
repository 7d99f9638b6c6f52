/*
 * Extended QPs (ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS): the
 * ibv_wr_* builders verbs.h calls through struct ibv_qp_ex. The WRs built
 * between ibv_wr_start and ibv_wr_complete collect in arrays of the QP's
 * send queue depth (with their SGEs and inline payloads, copied when set,
 * as the caller may reuse its buffers at once) and go to rverbs in one
 * rv_qp_post_send. Like a provider's, the builder of a QP is not to be used
 * from two threads at once. No allocation after creation.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

struct compat_qp_ex {
	uint32_t cap;       /* WRs in one start..complete */
	uint32_t max_sge;   /* SGEs per WR */
	uint32_t max_inline;
	uint32_t n;         /* WRs built */
	int err;            /* the first error of this batch: wr_complete says it */
	rv_send_wr *wrs;    /* opcode RV_WR_BIND_MW: a window bind, its arguments in binds[] */
	struct ibv_mw_bind_info *binds;
	struct ibv_mw **bind_mws;
	uint32_t *bind_rkeys;
	rv_sge *sges;
	uint8_t *inl;
};

/* The send operations built here (type 2 window binds included); TSO,
 * atomic write and XRC are not (their flags make creation EOPNOTSUPP). */
#define COMPAT_QP_EX_OPS                                                         \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |           \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |  \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW)

static struct compat_qp *of(struct ibv_qp_ex *ex)
{
	return compat_container_of(ex, struct compat_qp, ex);
}

/* The next WR, with the QP's wr_id and flags; NULL (and the batch failed)
 * when the send queue's depth is used up. */
static rv_send_wr *next_wr(struct ibv_qp_ex *ex, uint32_t opcode)
{
	struct compat_qp_ex *s = of(ex)->wr;
	rv_send_wr *w;

	if (s->n == s->cap) {
		if (!s->err)
			s->err = ENOMEM;
		return NULL;
	}
	w = &s->wrs[s->n++];
	memset(w, 0, sizeof(*w));
	w->wr_id = ex->wr_id;
	w->opcode = opcode; /* IBV_WR_* == RV_WR_* */
	w->send_flags = ex->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
					IBV_SEND_INLINE | IBV_SEND_IP_CSUM);
	if (ex->wr_flags != w->send_flags && !s->err)
		s->err = EINVAL;
	return w;
}

/* The WR the set calls apply to: the last one built. */
static rv_send_wr *current(struct ibv_qp_ex *ex)
{
	struct compat_qp_ex *s = of(ex)->wr;

	if (!s->n) {
		if (!s->err)
			s->err = EINVAL;
		return NULL;
	}
	return &s->wrs[s->n - 1];
}

static void wr_rdma(struct ibv_qp_ex *ex, uint32_t op, uint32_t rkey, uint64_t addr, uint32_t imm)
{
	rv_send_wr *w = next_wr(ex, op);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->imm_data = imm;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{
	wr_rdma(ex, RV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wr_rdma(ex, RV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, be32toh(imm));
}

static void wr_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{
	wr_rdma(ex, RV_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, uint64_t compare,
			      uint64_t swap)
{
	rv_send_wr *w = next_wr(ex, RV_WR_ATOMIC_CMP_AND_SWP);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->compare_add = compare;
		w->swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, uint64_t add)
{
	rv_send_wr *w = next_wr(ex, RV_WR_ATOMIC_FETCH_AND_ADD);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->compare_add = add;
	}
}

static void wr_send(struct ibv_qp_ex *ex)
{
	next_wr(ex, RV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *ex, __be32 imm)
{
	rv_send_wr *w = next_wr(ex, RV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = be32toh(imm);
}

static void wr_send_inv(struct ibv_qp_ex *ex, uint32_t rkey)
{
	rv_send_wr *w = next_wr(ex, RV_WR_SEND_WITH_INV);

	if (w)
		w->imm_data = rkey;
}

static void wr_local_inv(struct ibv_qp_ex *ex, uint32_t rkey)
{
	rv_send_wr *w = next_wr(ex, RV_WR_LOCAL_INV);

	if (w)
		w->imm_data = rkey;
}

static void wr_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	rv_send_wr *w = current(ex);

	if (!w)
		return;
	if (!ah || ah->context != ex->qp_base.context) {
		of(ex)->wr->err = of(ex)->wr->err ? of(ex)->wr->err : EINVAL;
		return;
	}
	w->ah = compat_ah_rv(ah, qpn);
	w->remote_qpn = qpn;
	w->remote_qkey = qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *ex, size_t n, const struct ibv_sge *list)
{
	struct compat_qp_ex *s = of(ex)->wr;
	rv_send_wr *w = current(ex);
	rv_sge *sg;

	if (!w)
		return;
	if (n > s->max_sge || (n && !list)) {
		s->err = s->err ? s->err : EINVAL;
		return;
	}
	sg = &s->sges[(size_t)(s->n - 1) * s->max_sge];
	memcpy(sg, list, n * sizeof(*sg)); /* ibv_sge and rv_sge share a layout */
	w->sg_list = sg;
	w->num_sge = (uint32_t)n;
}

static void wr_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(ex, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *ex, size_t n, const struct ibv_data_buf *bufs)
{
	struct compat_qp_ex *s = of(ex)->wr;
	rv_send_wr *w = current(ex);
	uint8_t *dst;
	size_t len = 0;
	rv_sge *sg;

	if (!w)
		return;
	for (size_t i = 0; i < n; i++)
		len += bufs[i].length;
	if (len > s->max_inline) {
		s->err = s->err ? s->err : EINVAL; /* more than the QP's max_inline_data */
		return;
	}
	dst = &s->inl[(size_t)(s->n - 1) * s->max_inline];
	for (size_t i = 0, off = 0; i < n; off += bufs[i].length, i++)
		memcpy(dst + off, bufs[i].addr, bufs[i].length);
	sg = &s->sges[(size_t)(s->n - 1) * s->max_sge];
	*sg = (rv_sge){.addr = (uintptr_t)dst, .length = (uint32_t)len};
	w->sg_list = sg;
	w->num_sge = len ? 1 : 0;
	w->send_flags |= RV_SEND_INLINE; /* the lkey is not looked at, as in verbs */
}

static void wr_set_inline_data(struct ibv_qp_ex *ex, void *addr, size_t length)
{
	struct ibv_data_buf b = {.addr = addr, .length = length};

	wr_set_inline_data_list(ex, 1, &b);
}

static void wr_start(struct ibv_qp_ex *ex)
{
	of(ex)->wr->n = 0;
	of(ex)->wr->err = 0;
}

static int wr_complete(struct ibv_qp_ex *ex)
{
	struct compat_qp *q = of(ex);
	struct compat_qp_ex *s = q->wr;
	int rc = s->err;

	/* In order: the runs of WRs between binds in one rv_qp_post_send each,
	 * a bind as the bind work request (compat_post_bind_mw). */
	for (uint32_t i = 0, first = 0; !rc && i <= s->n; i++) {
		if (i < s->n && s->wrs[i].opcode != RV_WR_BIND_MW)
			continue;
		if (i > first) {
			rc = rv_qp_post_send(q->rv, s->wrs + first, i - first, NULL);
			rc = rc < 0 ? -rc : 0;
		}
		if (!rc && i < s->n) {
			struct ibv_send_wr b = {.wr_id = s->wrs[i].wr_id, .opcode = IBV_WR_BIND_MW,
						.send_flags = s->wrs[i].send_flags};

			b.bind_mw.mw = s->bind_mws[i];
			b.bind_mw.rkey = s->bind_rkeys[i];
			b.bind_mw.bind_info = s->binds[i];
			rc = compat_post_bind_mw(&q->qp, &b);
		}
		first = i + 1;
	}
	s->n = 0;
	s->err = 0;
	return rc;
}

static void wr_abort(struct ibv_qp_ex *ex)
{
	of(ex)->wr->n = 0;
	of(ex)->wr->err = 0;
}

static void wr_unsupported(struct ibv_qp_ex *ex)
{
	struct compat_qp_ex *s = of(ex)->wr;

	s->err = s->err ? s->err : EOPNOTSUPP;
}

/* A type 2 window's bind, posted in its place by wr_complete. */
static void wr_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct compat_qp_ex *s = of(ex)->wr;
	rv_send_wr *w;

	if (!mw || !info) {
		s->err = s->err ? s->err : EINVAL;
		return;
	}
	w = next_wr(ex, RV_WR_BIND_MW);
	if (!w)
		return;
	s->bind_mws[s->n - 1] = mw;
	s->bind_rkeys[s->n - 1] = rkey;
	s->binds[s->n - 1] = *info;
}

static void wr_send_tso(struct ibv_qp_ex *ex, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	wr_unsupported(ex);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *ex, uint32_t srqn)
{
	rv_send_wr *w = current(ex);

	/* Read by an XRC initiator only, as rv_send_wr.remote_srqn is. */
	if (w)
		w->remote_srqn = srqn;
}

static void wr_atomic_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, const void *wr)
{
	(void)rkey, (void)addr, (void)wr;
	wr_unsupported(ex);
}

int compat_qp_ex_check(uint64_t send_ops_flags)
{
	return (send_ops_flags & ~(uint64_t)COMPAT_QP_EX_OPS) ? -EOPNOTSUPP : 0;
}

int compat_qp_ex_init(struct compat_qp *q)
{
	struct compat_qp_ex *s = calloc(1, sizeof(*s));
	rv_qp_cap cap;

	if (!s || rv_qp_get_cap(q->rv, &cap) < 0) {
		free(s);
		return -ENOMEM;
	}
	s->cap = cap.max_send_wr ? cap.max_send_wr : 1;
	s->max_sge = cap.max_send_sge ? cap.max_send_sge : 1;
	s->max_inline = cap.max_inline_data;
	s->wrs = calloc(s->cap, sizeof(*s->wrs));
	s->sges = calloc((size_t)s->cap * s->max_sge, sizeof(*s->sges));
	s->inl = calloc(s->cap, s->max_inline ? s->max_inline : 1);
	s->binds = calloc(s->cap, sizeof(*s->binds));
	s->bind_mws = calloc(s->cap, sizeof(*s->bind_mws));
	s->bind_rkeys = calloc(s->cap, sizeof(*s->bind_rkeys));
	if (!s->wrs || !s->sges || !s->inl || !s->binds || !s->bind_mws || !s->bind_rkeys) {
		free(s->wrs);
		free(s->sges);
		free(s->inl);
		free(s->binds);
		free(s->bind_mws);
		free(s->bind_rkeys);
		free(s);
		return -ENOMEM;
	}
	q->wr = s;
	q->ex.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	q->ex.wr_atomic_fetch_add = wr_atomic_fetch_add;
	q->ex.wr_bind_mw = wr_bind_mw;
	q->ex.wr_local_inv = wr_local_inv;
	q->ex.wr_rdma_read = wr_rdma_read;
	q->ex.wr_rdma_write = wr_rdma_write;
	q->ex.wr_rdma_write_imm = wr_rdma_write_imm;
	q->ex.wr_send = wr_send;
	q->ex.wr_send_imm = wr_send_imm;
	q->ex.wr_send_inv = wr_send_inv;
	q->ex.wr_send_tso = wr_send_tso;
	q->ex.wr_set_ud_addr = wr_set_ud_addr;
	q->ex.wr_set_xrc_srqn = wr_set_xrc_srqn;
	q->ex.wr_set_inline_data = wr_set_inline_data;
	q->ex.wr_set_inline_data_list = wr_set_inline_data_list;
	q->ex.wr_set_sge = wr_set_sge;
	q->ex.wr_set_sge_list = wr_set_sge_list;
	q->ex.wr_start = wr_start;
	q->ex.wr_complete = wr_complete;
	q->ex.wr_abort = wr_abort;
	q->ex.wr_atomic_write = wr_atomic_write;
	return 0;
}

void compat_qp_ex_free(struct compat_qp *q)
{
	if (!q->wr)
		return;
	free(q->wr->wrs);
	free(q->wr->sges);
	free(q->wr->inl);
	free(q->wr->binds);
	free(q->wr->bind_mws);
	free(q->wr->bind_rkeys);
	free(q->wr);
	q->wr = NULL;
}
