/**
 * @file rverbs/mw.h
 * @brief Memory windows: remote access to part of a registered region.
 *
 * A memory window (MW) gives a peer remote access to a byte range of a
 * memory region (MR) under its own rkey, without registering memory again.
 * Allocate the window on a PD (rv_mw_alloc()), then bind it to a range of an
 * MR of the same PD with rv_qp_bind_mw(): the bind is a work request on the
 * send queue, executed in order with the QP's other work and completed with
 * opcode #RV_WC_BIND_MW. Every bind gives the window a new rkey (the low 8
 * bits, the key part, are incremented as ibv_inc_rkey does); read it with
 * rv_mw_rkey() after posting and send it to the peer.
 *
 * Types (IB spec 10.6.7): a type 1 window is not tied to a QP, any QP of the
 * PD may use its rkey; it is unbound by binding it again with length 0. A
 * type 2 window is associated with the QP that bound it: only that QP's peer
 * may access memory through it, and it is invalidated with an #RV_WR_LOCAL_INV
 * work request whose rv_send_wr::imm_data is the window's rkey, or by the
 * peer with #RV_WR_SEND_WITH_INV naming that rkey in imm_data (the receive
 * completion then has #RV_WC_WITH_INV and the rkey in rv_wc::imm_data).
 *
 * Ownership: a window holds a reference on its PD, and once bound on the MR
 * it is bound to. Closing the MR closes the window (a window never outlives
 * the memory it exposes). A window stays tied to the first MR it was bound
 * to: binding it to another MR fails with -EBUSY; allocate another window.
 *
 * Device support: the software device (soft0) implements both types; on a
 * libibverbs device rv_mw_alloc() fails with -EOPNOTSUPP when the device has
 * no windows of that type. On libibverbs the new rkey of a type 1 bind is the
 * provider's choice (read it with rv_mw_rkey()).
 */
#ifndef RVERBS_MW_H
#define RVERBS_MW_H

#include <rverbs/common.h>
#include <rverbs/qp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Memory window types (IB spec 10.6.7). */
typedef enum rv_mw_type {
	RV_MW_TYPE_1 = 1, /**< bound by any QP of the PD, not tied to one; unbound by a zero-length bind */
	RV_MW_TYPE_2 = 2  /**< tied to the QP that bound it; invalidated by RV_WR_LOCAL_INV */
} rv_mw_type;

/** Where a window is bound: a range of a memory region. */
typedef struct rv_mw_bind_info {
	rv_mr *mr;       /**< the region, live and of the window's PD */
	uint64_t addr;   /**< first byte of the window (a virtual address inside the MR) */
	uint64_t length; /**< bytes in the window; 0 unbinds a type 1 window */
	uint32_t access; /**< RV_ACCESS_REMOTE_READ / _WRITE / _ATOMIC: the rights remote access through the
			      window gets (the MR's own remote rights do not limit them; _WRITE and _ATOMIC
			      need an MR with RV_ACCESS_LOCAL_WRITE) */
} rv_mw_bind_info;

/**
 * Allocate a memory window on @p pd.
 *
 * @param pd      a live protection domain
 * @param type    #RV_MW_TYPE_1 or #RV_MW_TYPE_2
 * @param ret_mw  receives the window, unbound (every remote access through it is refused)
 * @return 0, -EINVAL (bad argument), -RV_ECLOSED (pd closed), -EOPNOTSUPP
 *         (the device has no memory windows), -ENOMEM.
 */
RV_API int rv_mw_alloc(rv_pd *pd, rv_mw_type type, rv_mw **ret_mw);

/**
 * Take a reference on @p mw (NULL is ignored).
 * @param mw a window
 * @return @p mw
 */
RV_API rv_mw *rv_mw_ref(rv_mw *mw);

/**
 * Drop a reference on @p mw; the window is destroyed with the last one.
 * @param mw a window or NULL
 * @return NULL
 */
RV_API rv_mw *rv_mw_unref(rv_mw *mw);

/**
 * Close @p mw now: its rkey stops working at once. Later calls on the handle
 * fail with -RV_ECLOSED; the memory is freed with the last reference.
 * @param mw a window
 * @return 0 (also when already closed), or -EINVAL for a bad handle.
 */
RV_API int rv_mw_close(rv_mw *mw);

/**
 * The window's current rkey: the one set by the last rv_qp_bind_mw() posted.
 * @param mw a live window
 * @return the rkey, or 0 if @p mw is NULL or closed (rv_error_last() says which).
 */
RV_API uint32_t rv_mw_rkey(const rv_mw *mw);

/**
 * The window's type.
 * @param mw a live window
 * @return #RV_MW_TYPE_1 or #RV_MW_TYPE_2, or 0 if @p mw is NULL or closed.
 */
RV_API uint32_t rv_mw_type_of(const rv_mw *mw);

/**
 * Post a bind of @p mw to the range @p info on the send queue of @p qp.
 *
 * The window gets a new rkey at once (rv_mw_rkey()); the bind takes effect
 * when the QP executes the work request, in order with the work posted
 * before it, and completes with opcode #RV_WC_BIND_MW and @p wr_id (status
 * #RV_WC_MW_BIND_ERR, QP to the error state, if the window or region was
 * closed meanwhile). A type 2 window is then associated with @p qp.
 *
 * @param qp          a connected RC QP of the window's PD
 * @param mw          a live window
 * @param info        the range: a live MR of the PD registered with
 *                    #RV_ACCESS_MW_BIND, addr/length inside it,
 *                    access a set of remote rights, possibly empty (a
 *                    window that grants nothing; length 0 and access 0:
 *                    unbind, type 1 only)
 * @param wr_id       returned in the completion
 * @param send_flags  RV_SEND_SIGNALED and/or RV_SEND_FENCE; others are refused
 *
 * As in the IB spec (o10-36.2.x, ibv_bind_mw(3)), the window's rights are
 * its own: the MR needs #RV_ACCESS_MW_BIND, and #RV_ACCESS_LOCAL_WRITE when
 * the window grants #RV_ACCESS_REMOTE_WRITE or #RV_ACCESS_REMOTE_ATOMIC, but
 * not the remote rights themselves. Remote access through the window is
 * checked against the window's rights and range, never the MR's.
 *
 * @retval 0            posted
 * @retval -EINVAL      bad argument (rv_error_last() names it): the MR lacks
 *                      #RV_ACCESS_MW_BIND, or #RV_ACCESS_LOCAL_WRITE for a
 *                      window granting remote write or atomic; the range is
 *                      outside the MR; access has non-remote bits
 * @retval -EBUSY       the window is tied to another MR
 * @retval -RV_ECLOSED  a handle was closed
 * @retval -ENOMEM      send queue full
 * @retval -EOPNOTSUPP  the device has no memory windows, or the QP has a
 *                      selective-signalling policy (not supported with binds yet)
 */
RV_API int rv_qp_bind_mw(rv_qp *qp, rv_mw *mw, const rv_mw_bind_info *info, uint64_t wr_id,
			 uint32_t send_flags);

#ifdef __cplusplus
}
#endif

#endif
