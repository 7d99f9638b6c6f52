/**
 * @file rverbs/xrcd.h
 * @brief XRC domains: the eXtended Reliable Connected transport's receive
 *        side, shared by XRC SRQs and XRC target (TGT) QPs.
 *
 * XRC lets one process reach many receive queues of a remote node through
 * one connection: an XRC initiator QP (RV_QPT_XRC_SEND) connects to an XRC
 * target QP (RV_QPT_XRC_RECV) of the remote XRC domain, and each SEND names
 * the XRC SRQ that receives it (rv_send_wr::remote_srqn, or
 * rv_qp_wr_set_xrc_srqn()). The SRQ must belong to the same XRC domain as
 * the target QP; a SEND naming another is refused by the responder (the
 * initiator's WR completes RV_WC_REM_INV_REQ_ERR and its QP enters the error
 * state, as the InfiniBand spec says for an invalid XRC SRQ). The receive
 * completes on the SRQ's own CQ (rv_srq_attr::cq).
 *
 * Ownership: an XRC domain holds a reference on its context; XRC SRQs
 * (rv_srq_new() with RV_SRQ_INIT_ATTR_XRC) and target QPs
 * (RV_QP_INIT_ATTR_XRCD) hold one on it and depend on it: rv_xrcd_close()
 * closes the target QPs first, then the SRQs, then the domain. Closing the
 * context closes its XRC domains.
 *
 * An XRC domain belongs to one context: sharing it between processes
 * through a file (ibv_open_xrcd()'s fd and oflags) is not offered.
 */
#ifndef RVERBS_XRCD_H
#define RVERBS_XRCD_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options for rv_xrcd_new(); no fields yet besides the mask. */
typedef struct rv_xrcd_attr {
	uint64_t mask; /**< which fields the caller set; must be 0 */
} rv_xrcd_attr;

/**
 * Open a new XRC domain (ibv_open_xrcd() without a file). The domain holds
 * a reference on its context.
 * @param ctx        the context
 * @param attr       options, or NULL
 * @param ret_xrcd   receives the domain
 * @retval 0            success
 * @retval -EINVAL      a NULL argument or an unknown mask bit
 * @retval -EOPNOTSUPP  the device has no XRC (device_cap_flags without
 *                      IBV_DEVICE_XRC, bit 20)
 * @retval -RV_ECLOSED  the context is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_xrcd_new(rv_context *ctx, const rv_xrcd_attr *attr, rv_xrcd **ret_xrcd);

/** Take a reference on @p xrcd. Returns @p xrcd (NULL-safe). */
RV_API rv_xrcd *rv_xrcd_ref(rv_xrcd *xrcd);

/** Drop a reference; the last one closes and frees the domain. Accepts NULL; returns NULL. */
RV_API rv_xrcd *rv_xrcd_unref(rv_xrcd *xrcd);

/**
 * Close the XRC domain now, after closing its target QPs and XRC SRQs.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p xrcd is NULL or not an XRC domain
 * @retval negative   a destroy failed; the domain stays open and the call may be retried
 */
RV_API int rv_xrcd_close(rv_xrcd *xrcd);

/** The domain's context (borrowed), or NULL for an invalid or closed handle. */
RV_API rv_context *rv_xrcd_context(const rv_xrcd *xrcd);

#ifdef __cplusplus
}
#endif

#endif
