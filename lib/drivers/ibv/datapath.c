/*
 * The data path: posting work requests and polling completions.
 *
 * Owns: the translation of rverbs WR arrays into libibverbs WR chains and of
 * ibv_wc arrays into rv_wc. Never allocates, never locks, never uses an atomic:
 * the chains and the ibv_wc array live on the stack in batches of RV_IBV_BATCH,
 * and the scatter/gather lists are passed through without copying. The only
 * calls out are ibv_post_send / ibv_post_recv / ibv_poll_cq (provider code,
 * no syscall on the usual providers), and rv_err on failure.
 */
#include <errno.h>
#include <inttypes.h>

#include "ibv-driver.h"
#include "translate.h"

/* WRs translated and posted per libibverbs call, and WCs polled per call.
 * 16 ibv_send_wr are about 2 KiB of stack; larger batches buy nothing since
 * a provider rings its doorbell once per call anyway. */
#define RV_IBV_BATCH 16

/* Which WR of a chain libibverbs reported as bad; 0 if it pointed elsewhere
 * (a provider that does not set bad_wr: assume nothing of the batch went). */
static size_t bad_index(const void *chain, const void *bad, size_t elem, size_t n)
{
	uintptr_t c = (uintptr_t)chain, b = (uintptr_t)bad;

	if (b < c || b >= c + elem * n)
		return 0;
	return (size_t)(b - c) / elem;
}

/* A WR the driver could not translate (rv_ibv_send_wr_to_ibv's refusals). */
static int send_untranslatable(struct rv_qp *qp, const rv_send_wr *wr, size_t index, int err)
{
	if (err == EINVAL)
		return rv_err(EINVAL, "rv_qp_post_send", "WR %zu has opcode %u, which is not an "
			      "rv_wr_opcode", index, wr->opcode);
	rv_err(err, "rv_qp_post_send", "WR %zu (%s) on QP %u cannot be posted through "
	       "libibverbs", index, rv_ibv_wr_opcode_name(wr->opcode), qp->qpn);
	if (wr->opcode == RV_WR_BIND_MW)
		rv_err_hint("memory-window binds are not supported by the libibverbs driver of "
			    "rverbs yet");
	else if (qp->qp_type == RV_QPT_UD)
		rv_err_hint("UD sends need address handles, which the libibverbs driver of "
			    "rverbs does not support yet");
	return -err;
}

/* A WR libibverbs refused. */
static int send_failed(struct rv_qp *qp, const rv_send_wr *wr, size_t index, int err)
{
	char ebuf[128];
	/* The caller's list may be what is wrong: do not walk a NULL one. */
	uint64_t len = wr->sg_list ? rv_send_wr_length(wr) : 0;

	rv_err(err, "rv_qp_post_send", "ibv_post_send refused WR %zu (%s, %u SGE, %" PRIu64
	       " bytes) on QP %u: %s", index, rv_ibv_wr_opcode_name(wr->opcode), wr->num_sge,
	       len, qp->qpn, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == ENOMEM)
		rv_err_hint("the send queue is full (max_send_wr %u): poll the send CQ before "
			    "posting more, or create the QP with a deeper queue",
			    qp->cap.max_send_wr);
	else if (err == EINVAL)
		rv_err_hint("check num_sge <= max_send_sge (%u), an inline payload <= "
			    "max_inline_data (%u), the QP state (%s: sends need RTS) and that "
			    "the opcode suits a %s QP", qp->cap.max_send_sge,
			    qp->cap.max_inline_data, rv_ibv_qp_state_name(qp->state),
			    rv_ibv_qp_type_name(qp->qp_type));
	return -err;
}

int rv_ibv_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	struct ibv_qp *q = qp->drv_qp;
	struct ibv_send_wr chain[RV_IBV_BATCH];
	size_t done = 0;

	while (done < n) {
		struct ibv_send_wr *bad = NULL;
		size_t k = 0, want = n - done < RV_IBV_BATCH ? n - done : RV_IBV_BATCH;
		int terr = 0, rc;

		for (; k < want; k++) {
			terr = rv_ibv_send_wr_to_ibv(qp, &wrs[done + k], &chain[k]);
			if (RV_UNLIKELY(terr))
				break;
			if (k > 0)
				chain[k - 1].next = &chain[k];
		}
		if (k > 0) {
			rc = ibv_post_send(q, chain, &bad);
			if (RV_UNLIKELY(rc != 0)) {
				size_t i = bad_index(chain, bad, sizeof(chain[0]), k);

				*n_posted = done + i;
				return send_failed(qp, &wrs[done + i], done + i, rv_ibv_errno(rc));
			}
		}
		done += k;
		if (RV_UNLIKELY(terr)) {
			*n_posted = done;
			return send_untranslatable(qp, &wrs[done], done, -terr);
		}
	}
	*n_posted = done;
	return 0;
}

int rv_ibv_post_recv(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	struct ibv_qp *q = qp->drv_qp;
	struct ibv_recv_wr chain[RV_IBV_BATCH];
	size_t done = 0;

	while (done < n) {
		struct ibv_recv_wr *bad = NULL;
		size_t k, want = n - done < RV_IBV_BATCH ? n - done : RV_IBV_BATCH;
		int rc;

		for (k = 0; k < want; k++) {
			rv_ibv_recv_wr_to_ibv(&wrs[done + k], &chain[k]);
			if (k > 0)
				chain[k - 1].next = &chain[k];
		}
		rc = ibv_post_recv(q, chain, &bad);
		if (RV_UNLIKELY(rc != 0)) {
			size_t i = bad_index(chain, bad, sizeof(chain[0]), k);
			int err = rv_ibv_errno(rc);
			char ebuf[128];

			*n_posted = done + i;
			rv_err(err, "rv_qp_post_recv", "ibv_post_recv refused WR %zu (%u SGE) on "
			       "QP %u: %s", done + i, wrs[done + i].num_sge, qp->qpn,
			       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
			if (err == ENOMEM)
				rv_err_hint("the receive queue is full (max_recv_wr %u): wait for "
					    "receives to complete or create the QP with a deeper "
					    "queue", qp->cap.max_recv_wr);
			else if (err == EINVAL)
				rv_err_hint("check num_sge <= max_recv_sge (%u) and the QP state (%s: "
					    "receives need INIT or later)", qp->cap.max_recv_sge,
					    rv_ibv_qp_state_name(qp->state));
			return -err;
		}
		done += k;
	}
	*n_posted = done;
	return 0;
}

int rv_ibv_cq_poll(struct rv_cq *cq, rv_wc *wc, int max)
{
	struct ibv_cq *q = cq->drv_cq;
	struct ibv_wc iwc[RV_IBV_BATCH];
	int total = 0;

	while (total < max) {
		int want = max - total < RV_IBV_BATCH ? max - total : RV_IBV_BATCH;
		int got = ibv_poll_cq(q, want, iwc);

		if (RV_UNLIKELY(got < 0)) {
			/* Completions already taken must not be lost: return them;
			 * the next poll reports the error again. */
			if (total > 0)
				return total;
			rv_err(EOVERFLOW, "rv_cq_poll", "ibv_poll_cq on CQ of %u entries returned %d: "
			       "the CQ is in error", cq->cqe, got);
			rv_err_hint("usually the CQ overflowed: more work was outstanding on its QPs "
				    "than it has entries; size the CQ for the sum of their queue "
				    "depths (the QPs are now in the error state)");
			return -EOVERFLOW;
		}
		for (int i = 0; i < got; i++)
			rv_ibv_wc_from_ibv(&iwc[i], &wc[total + i]);
		total += got;
		if (got < want)
			break;
	}
	return total;
}
