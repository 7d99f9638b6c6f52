/*
 * The work-request builder (rv_qp_wr_*, rverbs/qp.h): ibv_qp_ex's
 * start / per-operation builders / setters / complete-or-abort, on every QP
 * and device.
 *
 * It collects rv_send_wr entries and posts them with rv_qp_post_send() on
 * complete, so a batch gets exactly the validation, automatic inline and
 * signalling policy of the array API, and no driver has a second post path.
 * SGEs and inline bytes are copied into the builder when they are set (the
 * caller may reuse its arrays and buffers at once, as with ibv_wr_*), kept
 * as offsets while the batch grows, and turned into pointers on complete.
 *
 * Owns: one struct rv_wr_builder per QP that ever opened a batch, made at its
 * first rv_qp_wr_start and freed with the QP (lib/qp.c's release). Its
 * arrays grow by doubling and are kept for the next batch: a QP's steady
 * state allocates nothing. Never takes the graph lock; not thread safe per QP
 * (as ibv_qp_ex: the caller serializes calls on one QP).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "wr_builder.h"

/* Where a WR's data is: nothing yet, SGEs, or inline bytes (one SGE over
 * the builder's copy). */
enum wr_data { DATA_NONE, DATA_SGE, DATA_INLINE };

struct wr_slot {
	size_t first;   /* index of its first SGE in sges */
	uint32_t n_sge;
	uint8_t data;   /* enum wr_data */
};

struct rv_wr_builder {
	bool open;
	bool atomic_write; /* the device reports RV_DEVICE_CAP_ATOMIC_WRITE */
	rv_send_wr *wrs;
	struct wr_slot *slots;
	size_t n, cap, cap_slots;
	rv_sge *sges;      /* inline ones hold an offset into inl in addr until complete */
	size_t n_sge, cap_sge;
	uint8_t *inl;
	size_t n_inl, cap_inl;
};

void rv_wr_builder_free(struct rv_qp *qp)
{
	struct rv_wr_builder *b = qp->wrb;

	if (!b)
		return;
	free(b->wrs);
	free(b->slots);
	free(b->sges);
	free(b->inl);
	free(b);
	qp->wrb = NULL;
}

/* Room for `more` elements of `size` bytes after `used` in *arr (capacity
 * *cap, doubled as needed); false when out of memory. */
static bool reserve(void **arr, size_t *cap, size_t used, size_t more, size_t size)
{
	size_t want = *cap ? *cap : 16;
	void *p;

	if (more > SIZE_MAX / size - used)
		return false;
	if (used + more <= *cap)
		return true;
	while (want < used + more)
		want = want > SIZE_MAX / 2 / size ? used + more : want * 2;
	p = realloc(*arr, want * size);
	if (!p)
		return false;
	*arr = p;
	*cap = want;
	return true;
}

/* The builder of a QP with an open batch, or NULL with the error set. */
static struct rv_wr_builder *open_batch(rv_qp *qp, const char *func, int *rc)
{
	*rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, func);
	if (*rc < 0)
		return NULL;
	if (!qp->wrb || !qp->wrb->open) {
		*rc = rv_err(EINVAL, func, "no batch is open on QP 0x%x; call rv_qp_wr_start first", qp->qpn);
		return NULL;
	}
	return qp->wrb;
}

RV_EXPORT int rv_qp_wr_start(rv_qp *qp)
{
	struct rv_wr_builder *b;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (qp->wrb && qp->wrb->open)
		return rv_err(EBUSY, __func__, "a batch is already open on QP 0x%x; post it with "
			      "rv_qp_wr_complete or drop it with rv_qp_wr_abort first", qp->qpn);
	if (!qp->wrb) {
		rv_device_attr da;

		b = calloc(1, sizeof(*b));
		if (!b)
			return rv_err(ENOMEM, __func__, "out of memory for the work-request builder");
		/* Once per QP: a device query may be a system call. */
		memset(&da, 0, sizeof(da));
		if (qp->drv->query_device(qp->ctx, &da) == 0)
			b->atomic_write = (da.device_cap_flags_ex & RV_DEVICE_CAP_ATOMIC_WRITE) != 0;
		rv_error_clear();
		qp->wrb = b;
	}
	b = qp->wrb;
	b->n = b->n_sge = b->n_inl = 0;
	b->open = true;
	return 0;
}

/* Append a WR with its opcode, wr_id and flags; *ret the new WR. */
static int add_wr(rv_qp *qp, const char *func, uint32_t opcode, uint64_t wr_id, uint32_t send_flags,
		  rv_send_wr **ret)
{
	int rc;
	struct rv_wr_builder *b;

	*ret = NULL; /* gcc -O3 cannot see that open_batch sets rc < 0 whenever it returns NULL */
	b = open_batch(qp, func, &rc);
	if (!b)
		return rc;
	if (!reserve((void **)&b->wrs, &b->cap, b->n, 1, sizeof(*b->wrs)) ||
	    !reserve((void **)&b->slots, &b->cap_slots, b->n, 1, sizeof(*b->slots)))
		return rv_err(ENOMEM, func, "out of memory for %zu work requests", b->n + 1);
	memset(&b->wrs[b->n], 0, sizeof(b->wrs[b->n]));
	memset(&b->slots[b->n], 0, sizeof(b->slots[b->n]));
	b->wrs[b->n].wr_id = wr_id;
	b->wrs[b->n].opcode = opcode;
	b->wrs[b->n].send_flags = send_flags;
	*ret = &b->wrs[b->n++];
	return 0;
}

RV_EXPORT int rv_qp_wr_send(rv_qp *qp, uint64_t wr_id, uint32_t send_flags)
{
	rv_send_wr *w;

	return add_wr(qp, __func__, RV_WR_SEND, wr_id, send_flags, &w);
}

RV_EXPORT int rv_qp_wr_send_imm(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t imm_data)
{
	rv_send_wr *w;
	int rc = add_wr(qp, __func__, RV_WR_SEND_WITH_IMM, wr_id, send_flags, &w);

	if (rc == 0)
		w->imm_data = imm_data;
	return rc;
}

RV_EXPORT int rv_qp_wr_send_inv(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t invalidate_rkey)
{
	rv_send_wr *w;
	int rc = add_wr(qp, __func__, RV_WR_SEND_WITH_INV, wr_id, send_flags, &w);

	if (rc == 0)
		w->imm_data = invalidate_rkey;
	return rc;
}

static int add_rdma(rv_qp *qp, const char *func, uint32_t opcode, uint64_t wr_id, uint32_t send_flags,
		    uint32_t rkey, uint64_t remote_addr, rv_send_wr **ret)
{
	int rc = add_wr(qp, func, opcode, wr_id, send_flags, ret);

	if (rc == 0) {
		(*ret)->rkey = rkey;
		(*ret)->remote_addr = remote_addr;
	}
	return rc;
}

RV_EXPORT int rv_qp_wr_rdma_write(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				  uint64_t remote_addr)
{
	rv_send_wr *w;

	return add_rdma(qp, __func__, RV_WR_RDMA_WRITE, wr_id, send_flags, rkey, remote_addr, &w);
}

RV_EXPORT int rv_qp_wr_rdma_write_imm(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				      uint64_t remote_addr, uint32_t imm_data)
{
	rv_send_wr *w;
	int rc = add_rdma(qp, __func__, RV_WR_RDMA_WRITE_WITH_IMM, wr_id, send_flags, rkey, remote_addr, &w);

	if (rc == 0)
		w->imm_data = imm_data;
	return rc;
}

RV_EXPORT int rv_qp_wr_rdma_read(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				 uint64_t remote_addr)
{
	rv_send_wr *w;

	return add_rdma(qp, __func__, RV_WR_RDMA_READ, wr_id, send_flags, rkey, remote_addr, &w);
}

RV_EXPORT int rv_qp_wr_atomic_cmp_swp(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare, uint64_t swap)
{
	rv_send_wr *w;
	int rc = add_rdma(qp, __func__, RV_WR_ATOMIC_CMP_AND_SWP, wr_id, send_flags, rkey, remote_addr, &w);

	if (rc == 0) {
		w->compare_add = compare;
		w->swap = swap;
	}
	return rc;
}

RV_EXPORT int rv_qp_wr_atomic_fetch_add(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	rv_send_wr *w;
	int rc = add_rdma(qp, __func__, RV_WR_ATOMIC_FETCH_AND_ADD, wr_id, send_flags, rkey, remote_addr, &w);

	if (rc == 0)
		w->compare_add = add;
	return rc;
}

/* Refused on every device for now, each with its reason: rv_send_wr has no
 * atomic-write opcode, and libibverbs documents the operation only for the
 * ibv_wr_* API of a QP created for it (IBV_QP_EX_WITH_ATOMIC_WRITE), which
 * rverbs' QPs are not. Declared now so that adding it changes no layout. */
RV_EXPORT int rv_qp_wr_atomic_write(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				    uint64_t remote_addr, const void *value)
{
	int rc;
	struct rv_wr_builder *b = open_batch(qp, __func__, &rc);

	(void)wr_id;
	(void)send_flags;
	(void)rkey;
	(void)remote_addr;
	if (!b)
		return rc;
	if (!value)
		return rv_err(EINVAL, __func__, "value is NULL; pass the 8 bytes to write");
	if (!b->atomic_write)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no RDMA atomic write "
			      "(RV_DEVICE_CAP_ATOMIC_WRITE is not in device_cap_flags_ex)", qp->ctx->dev->name);
	return rv_err(EOPNOTSUPP, __func__, "device %s has RDMA atomic write, but rverbs posts through "
		      "ibv_post_send, for which libibverbs defines no atomic write; use an 8-byte "
		      "rv_qp_wr_atomic_cmp_swp or the raw QP (rverbs/ibv.h) with ibv_wr_atomic_write",
		      qp->ctx->dev->name);
}

/* The latest WR of the open batch, if its data is not set yet. */
static struct wr_slot *data_slot(rv_qp *qp, const char *func, int *rc, struct rv_wr_builder **ret_b)
{
	struct rv_wr_builder *b = open_batch(qp, func, rc);

	if (!b)
		return NULL;
	if (b->n == 0) {
		*rc = rv_err(EINVAL, func, "the batch has no work request yet; add one (rv_qp_wr_send, "
			     "rv_qp_wr_rdma_write ...) before setting its data");
		return NULL;
	}
	if (b->slots[b->n - 1].data != DATA_NONE) {
		*rc = rv_err(EINVAL, func, "work request %zu of the batch has its data already; each "
			     "takes one of rv_qp_wr_set_sge, _set_sge_list, _set_inline_data", b->n - 1);
		return NULL;
	}
	*ret_b = b;
	return &b->slots[b->n - 1];
}

RV_EXPORT int rv_qp_wr_set_sge_list(rv_qp *qp, const rv_sge *sges, size_t n)
{
	struct rv_wr_builder *b;
	struct wr_slot *s;
	int rc;

	if (!(s = data_slot(qp, __func__, &rc, &b)))
		return rc;
	if (!sges && n)
		return rv_err(EINVAL, __func__, "sges is NULL with n %zu", n);
	if (n > UINT32_MAX)
		return rv_err(EINVAL, __func__, "n %zu exceeds any device's max_send_sge", n);
	if (!reserve((void **)&b->sges, &b->cap_sge, b->n_sge, n, sizeof(*b->sges)))
		return rv_err(ENOMEM, __func__, "out of memory for %zu SGEs", b->n_sge + n);
	if (n)
		memcpy(&b->sges[b->n_sge], sges, n * sizeof(*sges));
	s->first = b->n_sge;
	s->n_sge = (uint32_t)n;
	s->data = DATA_SGE;
	b->n_sge += n;
	return 0;
}

RV_EXPORT int rv_qp_wr_set_sge(rv_qp *qp, uint32_t lkey, uint64_t addr, uint32_t length)
{
	rv_sge g = {.addr = addr, .length = length, .lkey = lkey};

	return rv_qp_wr_set_sge_list(qp, &g, 1);
}

RV_EXPORT int rv_qp_wr_set_inline_data_list(rv_qp *qp, const rv_sge *bufs, size_t n)
{
	struct rv_wr_builder *b;
	struct wr_slot *s;
	size_t total = 0;
	int rc;

	if (!(s = data_slot(qp, __func__, &rc, &b)))
		return rc;
	if (!bufs && n)
		return rv_err(EINVAL, __func__, "bufs is NULL with n %zu", n);
	for (size_t i = 0; i < n; i++) {
		if (!bufs[i].addr && bufs[i].length)
			return rv_err(EINVAL, __func__, "buffer %zu has address 0 and length %u", i, bufs[i].length);
		total += bufs[i].length;
	}
	if (total > UINT32_MAX)
		return rv_err(EINVAL, __func__, "%zu inline bytes exceed any device's max_inline_data", total);
	if (!reserve((void **)&b->inl, &b->cap_inl, b->n_inl, total ? total : 1, 1) ||
	    !reserve((void **)&b->sges, &b->cap_sge, b->n_sge, 1, sizeof(*b->sges)))
		return rv_err(ENOMEM, __func__, "out of memory for %zu inline bytes", b->n_inl + total);
	/* The copy is made now: the caller may reuse its buffers at once. */
	s->first = b->n_sge;
	s->n_sge = total ? 1 : 0;
	s->data = DATA_INLINE;
	b->sges[b->n_sge] = (rv_sge){.addr = b->n_inl, .length = (uint32_t)total, .lkey = 0};
	for (size_t i = 0; i < n; i++) {
		if (bufs[i].length)
			memcpy(b->inl + b->n_inl, (const void *)(uintptr_t)bufs[i].addr, bufs[i].length);
		b->n_inl += bufs[i].length;
	}
	b->n_sge += s->n_sge;
	b->wrs[b->n - 1].send_flags |= RV_SEND_INLINE;
	return 0;
}

RV_EXPORT int rv_qp_wr_set_inline_data(rv_qp *qp, const void *addr, size_t length)
{
	rv_sge g = {.addr = (uintptr_t)addr, .length = 0, .lkey = 0};

	if (length > UINT32_MAX)
		return rv_err(EINVAL, __func__, "length %zu exceeds any device's max_inline_data", length);
	g.length = (uint32_t)length;
	return rv_qp_wr_set_inline_data_list(qp, &g, 1);
}

RV_EXPORT int rv_qp_wr_set_ud_addr(rv_qp *qp, rv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	int rc;
	struct rv_wr_builder *b = open_batch(qp, __func__, &rc);

	if (!b)
		return rc;
	if (qp->qp_type != RV_QPT_UD)
		return rv_err(EINVAL, __func__, "QP 0x%x is not a UD QP; only UD work requests take an "
			      "address", qp->qpn);
	if (b->n == 0)
		return rv_err(EINVAL, __func__, "the batch has no work request yet; add one before its address");
	if (!ah)
		return rv_err(EINVAL, __func__, "ah is NULL");
	b->wrs[b->n - 1].ah = ah;
	b->wrs[b->n - 1].remote_qpn = remote_qpn;
	b->wrs[b->n - 1].remote_qkey = remote_qkey;
	return 0;
}

RV_EXPORT int rv_qp_wr_set_xrc_srqn(rv_qp *qp, uint32_t remote_srqn)
{
	int rc;
	struct rv_wr_builder *b = open_batch(qp, __func__, &rc);

	if (!b)
		return rc;
	if (qp->qp_type != RV_QPT_XRC_SEND)
		return rv_err(EINVAL, __func__, "QP 0x%x is not an XRC initiator QP; only its work requests "
			      "name a remote SRQ", qp->qpn);
	if (b->n == 0)
		return rv_err(EINVAL, __func__, "the batch has no work request yet; add one before its SRQ number");
	b->wrs[b->n - 1].remote_srqn = remote_srqn;
	return 0;
}

RV_EXPORT int rv_qp_wr_complete(rv_qp *qp, size_t *ret_n_posted)
{
	size_t posted = 0;
	int rc;
	struct rv_wr_builder *b = open_batch(qp, __func__, &rc);

	if (!b)
		return rc;
	b->open = false;
	for (size_t i = 0; i < b->n; i++) {
		struct wr_slot *s = &b->slots[i];

		if (s->data == DATA_INLINE && s->n_sge)
			b->sges[s->first].addr = (uintptr_t)(b->inl + b->sges[s->first].addr);
		b->wrs[i].sg_list = s->n_sge ? &b->sges[s->first] : NULL;
		b->wrs[i].num_sge = s->n_sge;
	}
	rc = b->n ? rv_qp_post_send(qp, b->wrs, b->n, &posted) : 0;
	if (ret_n_posted)
		*ret_n_posted = posted;
	return rc;
}

RV_EXPORT int rv_qp_wr_abort(rv_qp *qp)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (qp->wrb)
		qp->wrb->open = false;
	return 0;
}
