/**
 * @file rverbs/cq.h
 * @brief Completion queues and work completions.
 */
#ifndef RVERBS_CQ_H
#define RVERBS_CQ_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status of a work completion (values equal IBV_WC_*). */
typedef enum rv_wc_status {
	RV_WC_SUCCESS = 0,            /**< the operation completed */
	RV_WC_LOC_LEN_ERR = 1,        /**< local length error */
	RV_WC_LOC_QP_OP_ERR = 2,      /**< local QP operation error */
	RV_WC_LOC_EEC_OP_ERR = 3,     /**< local EE context operation error */
	RV_WC_LOC_PROT_ERR = 4,       /**< local protection error */
	RV_WC_WR_FLUSH_ERR = 5,       /**< flushed: the QP was in the error state */
	RV_WC_MW_BIND_ERR = 6,        /**< memory window bind error */
	RV_WC_BAD_RESP_ERR = 7,       /**< bad response */
	RV_WC_LOC_ACCESS_ERR = 8,     /**< local access error */
	RV_WC_REM_INV_REQ_ERR = 9,    /**< remote invalid request */
	RV_WC_REM_ACCESS_ERR = 10,    /**< remote access error */
	RV_WC_REM_OP_ERR = 11,        /**< remote operation error */
	RV_WC_RETRY_EXC_ERR = 12,     /**< transport retry counter exceeded */
	RV_WC_RNR_RETRY_EXC_ERR = 13, /**< receiver-not-ready retry counter exceeded */
	RV_WC_LOC_RDD_VIOL_ERR = 14,  /**< local RDD violation */
	RV_WC_REM_INV_RD_REQ_ERR = 15,/**< remote invalid RD request */
	RV_WC_REM_ABORT_ERR = 16,     /**< remote aborted */
	RV_WC_INV_EECN_ERR = 17,      /**< invalid EE context number */
	RV_WC_INV_EEC_STATE_ERR = 18, /**< invalid EE context state */
	RV_WC_FATAL_ERR = 19,         /**< fatal error */
	RV_WC_RESP_TIMEOUT_ERR = 20,  /**< response timeout */
	RV_WC_GENERAL_ERR = 21        /**< general error */
} rv_wc_status;

/** What a work completion completed (values equal IBV_WC_*). */
typedef enum rv_wc_opcode {
	RV_WC_SEND = 0,          /**< SEND (any variant) */
	RV_WC_RDMA_WRITE = 1,    /**< RDMA WRITE (any variant) */
	RV_WC_RDMA_READ = 2,     /**< RDMA READ */
	RV_WC_COMP_SWAP = 3,     /**< atomic compare and swap */
	RV_WC_FETCH_ADD = 4,     /**< atomic fetch and add */
	RV_WC_BIND_MW = 5,       /**< memory window bind */
	RV_WC_LOCAL_INV = 6,     /**< local invalidate */
	RV_WC_RECV = 128,        /**< a receive; test (opcode & RV_WC_RECV) */
	RV_WC_RECV_RDMA_WITH_IMM = 129 /**< RDMA WRITE with immediate consumed a receive */
} rv_wc_opcode;

/** Bits of rv_wc::wc_flags (values equal IBV_WC_*). */
typedef enum rv_wc_flags {
	RV_WC_GRH = 1u << 0,        /**< the first 40 bytes of the buffer hold a GRH */
	RV_WC_WITH_IMM = 1u << 1,   /**< rv_wc::imm_data is valid */
	RV_WC_IP_CSUM_OK = 1u << 2, /**< IP checksum verified */
	RV_WC_WITH_INV = 1u << 3    /**< rv_wc::imm_data holds the invalidated rkey */
} rv_wc_flags;

/** A work completion. Every field a verbs program reads. */
typedef struct rv_wc {
	uint64_t wr_id;       /**< the wr_id of the completed work request */
	uint32_t status;      /**< an rv_wc_status */
	uint32_t opcode;      /**< an rv_wc_opcode (valid for receives even on error only if SUCCESS) */
	uint32_t vendor_err;  /**< device-specific error detail */
	uint32_t byte_len;    /**< bytes received, or transferred for READ/atomics */
	uint32_t imm_data;    /**< immediate data in host byte order, or the invalidated rkey */
	uint32_t qp_num;      /**< local QP number */
	uint32_t src_qp;      /**< remote QP number (UD) */
	uint32_t wc_flags;    /**< rv_wc_flags */
	uint16_t pkey_index;  /**< P_Key index (GSI) */
	uint16_t slid;        /**< source LID (UD) */
	uint8_t sl;           /**< service level (UD) */
	uint8_t dlid_path_bits; /**< destination LID path bits (UD) */
	uint16_t reserved;    /**< zero */
} rv_wc;

/** Bits of rv_cq_attr::mask. */
enum rv_cq_attr_mask {
	RV_CQ_ATTR_CQE = 1u << 0,         /**< rv_cq_attr::cqe is set */
	RV_CQ_ATTR_CHANNEL = 1u << 1,     /**< rv_cq_attr::channel is set */
	RV_CQ_ATTR_COMP_VECTOR = 1u << 2  /**< rv_cq_attr::comp_vector is set */
};

/** Options for rv_cq_new(). */
typedef struct rv_cq_attr {
	uint64_t mask;             /**< which fields the caller set (rv_cq_attr_mask) */
	uint32_t cqe;              /**< minimum number of entries; default 256 */
	uint32_t comp_vector;      /**< completion vector; default 0 */
	rv_comp_channel *channel;  /**< completion channel; default none */
} rv_cq_attr;

/**
 * Create a completion queue. The CQ holds a reference on its context (and on
 * its completion channel, if any).
 * @param ctx     the context
 * @param attr    options, or NULL for defaults
 * @param ret_cq  receives the CQ
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown mask bit, cqe of 0 or above
 *                      the device's max_cqe (rv_error_last() names the limit)
 * @retval -RV_ECLOSED  the context is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_cq_new(rv_context *ctx, const rv_cq_attr *attr, rv_cq **ret_cq);

/** Take a reference on @p cq. Returns @p cq (NULL-safe). */
RV_API rv_cq *rv_cq_ref(rv_cq *cq);

/** Drop a reference; the last one closes and frees the CQ. Accepts NULL; returns NULL. */
RV_API rv_cq *rv_cq_unref(rv_cq *cq);

/**
 * Destroy the CQ now, after closing every QP that uses it.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p cq is NULL or not a CQ
 * @retval negative   a destroy failed; the CQ stays and the call may be retried
 */
RV_API int rv_cq_close(rv_cq *cq);

/**
 * Poll for completions without blocking.
 * @param cq   the CQ
 * @param wc   array of at least @p max entries
 * @param max  how many to take at most (≥ 1)
 * @return the number of completions written to @p wc (0 if none), or
 * @retval -EINVAL      a NULL argument or @p max < 1
 * @retval -RV_ECLOSED  the CQ is closed
 * @retval -EOVERFLOW   the CQ overflowed: completions were lost and the QPs
 *                      using it moved to the error state
 */
RV_API int rv_cq_poll(rv_cq *cq, rv_wc *wc, int max);

/** The number of entries the CQ actually has (≥ requested); 0 for an invalid handle. */
RV_API uint32_t rv_cq_size(const rv_cq *cq);

/** A short name for a work-completion status ("remote access error"); never NULL. */
RV_API const char *rv_wc_status_str(int status);

/**
 * One line on what usually causes a work-completion status and what to check;
 * never NULL.
 */
RV_API const char *rv_wc_status_hint(int status);

#ifdef __cplusplus
}
#endif

#endif
