/**
 * @file rverbs/srq.h
 * @brief Shared receive queues: one pool of receive work requests that many
 *        QPs of the same PD take their receives from.
 *
 * A QP created with RV_QP_INIT_ATTR_SRQ takes every incoming SEND's receive
 * WR from its SRQ; rv_qp_post_recv() on it fails (post to the SRQ instead).
 * The SRQ holds a reference on its PD; each QP using it holds a reference on
 * the SRQ and depends on it: closing the SRQ closes those QPs first.
 *
 * The limit: rv_srq_modify() with RV_SRQ_LIMIT arms the SRQ; when the number
 * of posted receive WRs falls below the limit, the device raises
 * RV_EVENT_SRQ_LIMIT_REACHED on the context's asynchronous event queue
 * (rverbs/event.h) once and disarms the limit (as ibv_modify_srq(3)).
 */
#ifndef RVERBS_SRQ_H
#define RVERBS_SRQ_H

#include <rverbs/common.h>
#include <rverbs/qp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bits of rv_srq_attr::mask for rv_srq_new() (which fields are set). */
enum rv_srq_init_attr_mask {
	RV_SRQ_INIT_ATTR_MAX_WR = 1u << 0,  /**< max_wr is set (default 128) */
	RV_SRQ_INIT_ATTR_MAX_SGE = 1u << 1, /**< max_sge is set (default 1) */
	RV_SRQ_INIT_ATTR_LIMIT = 1u << 2,   /**< srq_limit is set (default 0: not armed) */
	RV_SRQ_INIT_ATTR_XRC = 1u << 3      /**< xrcd and cq are set: an XRC SRQ (rverbs/xrcd.h) */
};

/** Bits of rv_srq_attr::mask for rv_srq_modify() (values equal IBV_SRQ_*). */
enum rv_srq_attr_mask {
	RV_SRQ_MAX_WR = 1u << 0, /**< resize to max_wr (a device may refuse: -EOPNOTSUPP) */
	RV_SRQ_LIMIT = 1u << 1   /**< arm the limit at srq_limit */
};

/** Sizes and limit of an SRQ, for rv_srq_new(), rv_srq_modify() and rv_srq_query(). */
typedef struct rv_srq_attr {
	uint64_t mask;      /**< rv_srq_init_attr_mask (new), rv_srq_attr_mask (modify); ignored by query */
	uint32_t max_wr;    /**< receive WRs the SRQ holds */
	uint32_t max_sge;   /**< SGEs per receive WR */
	uint32_t srq_limit; /**< the limit event fires when fewer WRs than this remain; 0: disarmed */
	uint32_t reserved;  /**< zero */
	rv_xrcd *xrcd;      /**< rv_srq_new() with RV_SRQ_INIT_ATTR_XRC: the XRC domain of the SRQ */
	rv_cq *cq;          /**< rv_srq_new() with RV_SRQ_INIT_ATTR_XRC: the CQ of its receive
	                         completions (an XRC target QP has no CQ of its own) */
} rv_srq_attr;

/**
 * Create a shared receive queue. The SRQ holds a reference on its PD.
 *
 * With RV_SRQ_INIT_ATTR_XRC, an XRC SRQ (ibv_create_srq_ex() with
 * IBV_SRQT_XRC): it receives the SENDs that name its number (rv_srq_num())
 * through any target QP of its XRC domain, checks their receive buffers
 * against @p pd and completes them on @p attr->cq. It holds references on
 * the domain and the CQ and depends on both (closing either closes it).
 * No QP is created with it (RV_QP_INIT_ATTR_SRQ refuses it).
 * @param pd       the protection domain (the QPs using the SRQ must share it)
 * @param attr     sizes, or NULL for defaults (128 WRs of 1 SGE, limit not armed)
 * @param ret_srq  receives the SRQ
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown mask bit, max_wr or max_sge of 0
 *                      or above the device's max_srq_wr/max_srq_sge, or a limit
 *                      not below max_wr, an XRC SRQ whose domain or CQ is NULL,
 *                      not one, or of another context (rv_error_last() names it)
 * @retval -EOPNOTSUPP  the device has no SRQ (max_srq is 0), or no XRC for an XRC SRQ
 * @retval -RV_ECLOSED  the PD, the XRC domain or the CQ is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_srq_new(rv_pd *pd, const rv_srq_attr *attr, rv_srq **ret_srq);

/**
 * Take a reference on @p srq.
 * @return @p srq (NULL-safe)
 */
RV_API rv_srq *rv_srq_ref(rv_srq *srq);

/**
 * Drop a reference; the last one closes and frees the SRQ.
 * @return NULL (accepts NULL)
 */
RV_API rv_srq *rv_srq_unref(rv_srq *srq);

/**
 * Destroy the SRQ now, after closing every QP that uses it. Receive WRs
 * still posted are discarded without completions (their QPs are gone).
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p srq is NULL or not an SRQ
 * @retval negative   a destroy failed; the SRQ stays and the call may be retried
 */
RV_API int rv_srq_close(rv_srq *srq);

/**
 * Post receive work requests to the SRQ. Any QP using the SRQ may consume
 * any of them, in posting order.
 * @param srq       the SRQ
 * @param wrs       array of @p n receive WRs
 * @param n         how many (≥ 1)
 * @param n_posted  receives how many were posted (all on success; those
 *                  before the faulty one on failure); may be NULL
 * @retval 0            all posted
 * @retval -EINVAL      a NULL argument, @p n of 0, or a WR with more SGEs than max_sge
 * @retval -ENOMEM      the SRQ is full (max_wr WRs posted and not consumed)
 * @retval -RV_ECLOSED  the SRQ is closed
 */
RV_API int rv_srq_post_recv(rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted);

/**
 * Modify the SRQ: with RV_SRQ_LIMIT, arm the limit at @p attr->srq_limit (the
 * next time fewer WRs than that remain, RV_EVENT_SRQ_LIMIT_REACHED is raised
 * once and the limit disarms); with RV_SRQ_MAX_WR, resize to @p attr->max_wr
 * receive WRs, keeping the WRs posted and not yet consumed, in order (a
 * device may round the size up: rv_srq_query() tells). With both bits, both
 * apply or neither.
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown or empty mask, a limit not
 *                      below max_wr (the new one with RV_SRQ_MAX_WR), a max_wr of
 *                      0, above the device's max_srq_wr, or below the receive WRs
 *                      the SRQ holds; nothing changed
 * @retval -EOPNOTSUPP  the device cannot resize an SRQ (device_cap_flags without
 *                      IBV_DEVICE_SRQ_RESIZE; some devices say -EINVAL instead)
 * @retval -RV_ECLOSED  the SRQ is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_srq_modify(rv_srq *srq, const rv_srq_attr *attr);

/**
 * Query the SRQ: max_wr, max_sge and the current limit (0 when disarmed,
 * for example after the limit event fired).
 * @param srq       the SRQ
 * @param ret_attr  receives the attributes (mask set to 0)
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -RV_ECLOSED  the SRQ is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_srq_query(rv_srq *srq, rv_srq_attr *ret_attr);

/**
 * The number of an XRC SRQ (ibv_get_srq_num()): what an XRC initiator puts
 * in rv_send_wr::remote_srqn to reach it. Unique among the SRQs of the
 * device (software device: of the context).
 * @param srq        the XRC SRQ
 * @param ret_srqn   receives the number
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, or @p srq is not an XRC SRQ
 * @retval -RV_ECLOSED  the SRQ is closed
 */
RV_API int rv_srq_num(const rv_srq *srq, uint32_t *ret_srqn);

/**
 * The PD of the SRQ (a borrowed pointer).
 * @return the PD, or NULL for an invalid or closed handle
 */
RV_API rv_pd *rv_srq_pd(const rv_srq *srq);

#ifdef __cplusplus
}
#endif

#endif
