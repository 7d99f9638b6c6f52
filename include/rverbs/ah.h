/**
 * @file rverbs/ah.h
 * @brief Address handles: where an unreliable datagram (UD) send goes.
 *
 * A UD QP is not connected: each send work request names its destination
 * with an address handle (rv_send_wr::ah, the path to the peer's port), the
 * peer's QP number (rv_send_wr::remote_qpn) and its Q_Key
 * (rv_send_wr::remote_qkey). An address handle belongs to a PD and can be
 * used by every UD QP of that PD, for any number of sends.
 *
 * Received UD messages start with a 40-byte Global Route Header area
 * (#RV_UD_GRH_LEN): post receive buffers 40 bytes larger than the largest
 * message. When rv_wc::wc_flags has RV_WC_GRH, those 40 bytes hold the GRH
 * and rv_ah_from_wc() turns the completion and the GRH into an address
 * handle for the reply.
 *
 * Ownership: an address handle holds a reference on its PD; closing the PD
 * (or its context) closes the address handle. A send work request naming a
 * closed address handle fails with -RV_ECLOSED.
 */
#ifndef RVERBS_AH_H
#define RVERBS_AH_H

#include <rverbs/common.h>
#include <rverbs/cq.h>
#include <rverbs/qp.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Bytes at the start of every UD receive buffer reserved for the Global Route
 * Header. rv_wc::byte_len of a UD receive counts them.
 */
#define RV_UD_GRH_LEN 40

/**
 * Create an address handle on @p pd for the address vector @p attr.
 *
 * Fields of rv_ah_attr as read here: dgid (with is_global 1: required on
 * Ethernet ports, RoCE and the software device), dlid (InfiniBand; the
 * software device: the peer's port number, as rv_endpoint::lid carries it),
 * sl, sgid_index, hop_limit (0 means 64), traffic_class, flow_label (20 bits),
 * port_num (0 means port 1), src_path_bits, static_rate. The field reserved
 * must be 0: it is kept for attributes a later version adds. On RoCE take
 * sgid_index from rv_qp_gid_index() of the sending QP: entry 0 is usually
 * the IPv6 link-local GID.
 *
 * @param pd      the protection domain
 * @param attr    the address vector
 * @param ret_ah  receives the address handle
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, reserved not 0, flow_label above 20
 *                      bits, or an address the device cannot reach, such
 *                      as a kernel RoCE device's sgid_index naming an empty
 *                      entry or one of the other IP family than dgid
 *                      (rv_error_last() names the field, both GIDs and the
 *                      index that would reach dgid)
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EOPNOTSUPP  the device has no address handles
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_ah_new(rv_pd *pd, const rv_ah_attr *attr, rv_ah **ret_ah);

/**
 * Create an address handle that answers the sender of a received UD message:
 * the destination is the message's source (from @p wc and the GRH).
 *
 * @param pd        the protection domain
 * @param port_num  the local port the message arrived on (0 means 1)
 * @param wc        the receive completion (RV_WC_SUCCESS, opcode RV_WC_RECV
 *                  or RV_WC_RECV_RDMA_WITH_IMM)
 * @param grh       the first #RV_UD_GRH_LEN bytes of the receive buffer;
 *                  required when wc->wc_flags has RV_WC_GRH, else ignored
 * @param ret_ah    receives the address handle
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, a completion that is not a
 *                      successful receive, RV_WC_GRH without @p grh, or a
 *                      GRH that names no usable source address
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EOPNOTSUPP  the device has no address handles
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_ah_from_wc(rv_pd *pd, uint8_t port_num, const rv_wc *wc, const void *grh,
			 rv_ah **ret_ah);

/** Take a reference on @p ah. Returns @p ah (NULL-safe). */
RV_API rv_ah *rv_ah_ref(rv_ah *ah);

/** Drop a reference; the last one closes and frees the address handle. Accepts NULL; returns NULL. */
RV_API rv_ah *rv_ah_unref(rv_ah *ah);

/**
 * Destroy the address handle now. Sends already posted with it are not
 * affected; sends posted after the close fail with -RV_ECLOSED.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p ah is NULL or not an address handle
 * @retval negative   the driver refused; the handle stays and the call may be retried
 */
RV_API int rv_ah_close(rv_ah *ah);

/**
 * The address vector the handle was created with (for rv_ah_from_wc(): the
 * one derived from the completion).
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -RV_ECLOSED  the address handle is closed
 */
RV_API int rv_ah_query(const rv_ah *ah, rv_ah_attr *ret_attr);

/** The address handle's PD (borrowed), or NULL for an invalid handle. */
RV_API rv_pd *rv_ah_pd(const rv_ah *ah);

#ifdef __cplusplus
}
#endif

#endif
