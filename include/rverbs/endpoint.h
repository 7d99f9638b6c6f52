/**
 * @file rverbs/endpoint.h
 * @brief What a peer needs to connect to a queue pair, and its portable byte
 *        encoding for any out-of-band channel.
 */
#ifndef RVERBS_ENDPOINT_H
#define RVERBS_ENDPOINT_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The largest amount of application data an endpoint carries. */
#define RV_ENDPOINT_USER_DATA_MAX 64

/** The largest encoded endpoint, in bytes (version 1). */
#define RV_ENDPOINT_PACKED_MAX 160

/** Bits of rv_endpoint::mask: which optional fields are valid. */
enum rv_endpoint_mask {
	/** mr_addr, mr_length and mr_rkey describe a buffer the peer may access. */
	RV_ENDPOINT_MR = 1u << 0,
	/** user_data holds user_data_len bytes of application data. */
	RV_ENDPOINT_USER_DATA = 1u << 1
};

/** Capabilities a QP's device offers (rv_endpoint::caps). */
enum rv_endpoint_caps {
	RV_EP_CAP_ATOMIC = 1u << 0,     /**< responds to atomic operations */
	RV_EP_CAP_IMM = 1u << 1,        /**< sends and receives immediate data */
	RV_EP_CAP_SOFT = 1u << 2,       /**< served by the rverbs software device */
	/**
	 * The endpoint's GID is a RoCE v1 entry (rv_gid_type). rv_qp_connect()
	 * refuses to connect a QP whose GID is of the other RoCE version, naming
	 * both; an endpoint with neither bit (an older library, InfiniBand,
	 * iWARP, the software device) sets no constraint.
	 */
	RV_EP_CAP_ROCE_V1 = 1u << 3,
	RV_EP_CAP_ROCE_V2 = 1u << 4     /**< the endpoint's GID is a RoCE v2 entry (see RV_EP_CAP_ROCE_V1) */
};

/**
 * A queue pair's address as its peer needs it. rv_qp_endpoint() fills the
 * mandatory fields; the application may add a memory region and user data.
 */
typedef struct rv_endpoint {
	uint64_t mask;        /**< which optional fields are valid (rv_endpoint_mask) */
	uint8_t gid[16];      /**< port GID: entry rv_qp_gid_index() of the port's GID table (software
	                           device: IPv4-mapped listen address) */
	uint16_t lid;         /**< port LID (software device: its TCP port) */
	uint8_t port_num;     /**< port number on the device */
	uint8_t mtu;          /**< active MTU of the port (an rv_mtu) */
	uint32_t qpn;         /**< QP number (24 bits) */
	uint32_t psn;         /**< initial send PSN (24 bits) */
	uint32_t qp_type;     /**< an rv_qp_type */
	uint32_t caps;        /**< rv_endpoint_caps */
	uint64_t mr_addr;     /**< remote address of the advertised buffer */
	uint64_t mr_length;   /**< its length */
	uint32_t mr_rkey;     /**< its remote key */
	uint32_t user_data_len; /**< bytes of user_data in use (≤ RV_ENDPOINT_USER_DATA_MAX) */
	uint8_t user_data[RV_ENDPOINT_USER_DATA_MAX]; /**< application data */
} rv_endpoint;

/**
 * Encode an endpoint as versioned, byte-order independent bytes.
 * @param ep       the endpoint
 * @param buf      output buffer (RV_ENDPOINT_PACKED_MAX bytes always suffice)
 * @param buf_len  size of @p buf
 * @param ret_len  receives the encoded length (may be NULL)
 * @retval 0          success
 * @retval -EINVAL    a NULL argument, an unknown mask bit, a field out of range
 * @retval -ENOSPC    @p buf is too small; nothing was written
 */
RV_API int rv_endpoint_pack(const rv_endpoint *ep, void *buf, size_t buf_len, size_t *ret_len);

/**
 * Decode bytes from rv_endpoint_pack(), validating every field. Safe on any
 * input: hostile or truncated bytes give an error, never a crash.
 * @param buf     the bytes
 * @param len     their number
 * @param ret_ep  receives the endpoint (untouched on failure)
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -EBADMSG     not an endpoint encoding, truncated, or a field out of range
 * @retval -EPROTONOSUPPORT  an encoding version this library does not read
 */
RV_API int rv_endpoint_unpack(const void *buf, size_t len, rv_endpoint *ret_ep);

#ifdef __cplusplus
}
#endif

#endif
