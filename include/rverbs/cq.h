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
	uint32_t imm_data;    /**< with RV_WC_WITH_IMM: the immediate data in host byte order;
	                       *   with RV_WC_WITH_INV: the invalidated rkey; without either
	                       *   flag undefined (as ibv_wc::imm_data: read it only when a
	                       *   flag says so) */
	uint32_t qp_num;      /**< local QP number */
	uint32_t src_qp;      /**< remote QP number (UD) */
	uint32_t wc_flags;    /**< rv_wc_flags */
	uint16_t pkey_index;  /**< P_Key index (GSI) */
	uint16_t slid;        /**< source LID (UD) */
	uint8_t sl;           /**< service level (UD) */
	uint8_t dlid_path_bits; /**< destination LID path bits (UD) */
	uint16_t reserved;    /**< zero */
} rv_wc;

/**
 * What the completions of a CQ carry beyond rv_wc (rv_cq_attr::wc_flags,
 * rv_wc_ex::ex_flags); the values equal IBV_WC_EX_WITH_*.
 */
typedef enum rv_cq_wc_flags {
	/** rv_wc_ex::timestamp: the device's raw clock when the completion was made */
	RV_CQ_WC_TIMESTAMP = 1u << 7,
	/** rv_wc_ex::flow_tag: the tag of the flow steering rule a receive matched */
	RV_CQ_WC_FLOW_TAG = 1u << 9,
	/** rv_wc_ex::timestamp_wallclock: the completion time in ns since the Unix epoch */
	RV_CQ_WC_TIMESTAMP_WALLCLOCK = 1u << 11
} rv_cq_wc_flags;

/**
 * A work completion with the extended fields (rv_cq_poll_ex()). Like rv_wc
 * it never changes size: later fields take the reserved room.
 */
typedef struct rv_wc_ex {
	rv_wc wc;                     /**< the completion, as rv_cq_poll() gives it */
	/** With RV_CQ_WC_TIMESTAMP: the raw device clock (rv_context_read_clock()) */
	uint64_t timestamp;
	/** With RV_CQ_WC_TIMESTAMP_WALLCLOCK: nanoseconds since the Unix epoch */
	uint64_t timestamp_wallclock;
	uint32_t flow_tag;            /**< with RV_CQ_WC_FLOW_TAG: the flow tag (0: none) */
	uint32_t ex_flags;            /**< rv_cq_wc_flags: which fields above are valid */
	uint64_t reserved[4];         /**< zero; room for later fields */
} rv_wc_ex;

/** Bits of rv_cq_attr::mask. */
enum rv_cq_attr_mask {
	RV_CQ_ATTR_CQE = 1u << 0,         /**< rv_cq_attr::cqe is set */
	RV_CQ_ATTR_CHANNEL = 1u << 1,     /**< rv_cq_attr::channel is set */
	RV_CQ_ATTR_COMP_VECTOR = 1u << 2, /**< rv_cq_attr::comp_vector is set */
	RV_CQ_ATTR_WC_FLAGS = 1u << 3,    /**< rv_cq_attr::wc_flags is set */
	RV_CQ_ATTR_PD = 1u << 4           /**< rv_cq_attr::pd is set */
};

/** Options for rv_cq_new(). */
typedef struct rv_cq_attr {
	uint64_t mask;             /**< which fields the caller set (rv_cq_attr_mask) */
	uint32_t cqe;              /**< minimum number of entries; default 256 */
	uint32_t comp_vector;      /**< completion vector; default 0 */
	rv_comp_channel *channel;  /**< completion channel; default none */
	/**
	 * rv_cq_wc_flags the completions must carry (read them with
	 * rv_cq_poll_ex()); default 0. rv_device_attr::cq_wc_flags says what the
	 * device has; a flag it lacks fails rv_cq_new() with -EOPNOTSUPP.
	 */
	uint64_t wc_flags;
	/**
	 * A parent domain of the same context (rv_pd_attr's RV_PD_ATTR_PARENT),
	 * as `ibv_create_cq_ex`'s parent_domain; default none. The CQ is then a
	 * dependent of it (closing it closes the CQ, and the QPs on the CQ), and
	 * the device may take the CQ's buffers from its allocators and use its
	 * TD's promise (soft0 does neither).
	 */
	rv_pd *pd;
} rv_cq_attr;

/**
 * Create a completion queue. The CQ holds a reference on its context (and on
 * its completion channel and its parent domain, if any).
 * @param ctx     the context
 * @param attr    options, or NULL for defaults
 * @param ret_cq  receives the CQ
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown mask bit or rv_cq_wc_flags
 *                      bit, cqe of 0 or above the device's max_cqe
 *                      (rv_error_last() names the limit), a pd that is not a
 *                      parent domain or is of another context
 * @retval -EOPNOTSUPP  a wc_flags bit the device cannot give (no completion
 *                      timestamps, no flow tags); rv_error_last() names it
 * @retval -RV_ECLOSED  the context, the channel or the parent domain is closed
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

/**
 * Poll for completions with their extended fields, without blocking: a
 * batch of up to @p max completions in one call, as rv_cq_poll(), each with
 * the fields the CQ was created for (rv_cq_attr::wc_flags; ex_flags says
 * which are valid, 0 on a CQ created without them). rv_cq_poll() and this
 * call may be mixed on one CQ (not concurrently).
 * @param cq   the CQ
 * @param wc   array of at least @p max entries
 * @param max  how many to take at most (≥ 1)
 * @return the number of completions written to @p wc (0 if none), or
 * @retval -EINVAL      a NULL argument or @p max < 1
 * @retval -RV_ECLOSED  the CQ is closed
 * @retval -EOVERFLOW   the CQ overflowed (as rv_cq_poll())
 */
RV_API int rv_cq_poll_ex(rv_cq *cq, rv_wc_ex *wc, int max);

/** The rv_cq_wc_flags the CQ was created with; 0 for an invalid handle. */
RV_API uint64_t rv_cq_get_wc_flags(const rv_cq *cq);

/**
 * Resize the CQ to at least @p cqe entries (as ibv_resize_cq). Completions
 * already in the CQ are kept, in order. The CQ must stay large enough for
 * every WR its QPs can complete at once, or it overflows (rv_cq_poll()).
 * Do not call it while another thread polls the CQ (like libibverbs).
 * @param cq   the CQ
 * @param cqe  the new minimum number of entries (≥ 1)
 * @retval 0            success; rv_cq_size() gives the new size
 * @retval -EINVAL      @p cq is not a CQ, @p cqe is 0 or above the device's
 *                      max_cqe, or below the number of completions the CQ
 *                      holds now (poll them first)
 * @retval -EOPNOTSUPP  the device cannot resize CQs
 * @retval -RV_ECLOSED  the CQ is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_cq_resize(rv_cq *cq, uint32_t cqe);

/** The number of entries the CQ actually has (≥ requested); 0 for an invalid handle. */
RV_API uint32_t rv_cq_size(const rv_cq *cq);

/* ---- completion channels and completion modes -------------------------- */

/** Bits of rv_comp_channel_attr::mask (none defined yet: set it to 0). */
enum rv_comp_channel_attr_mask {
	RV_COMP_CHANNEL_ATTR_NONE = 0 /**< no optional field */
};

/** Options for rv_comp_channel_new(); extensible. */
typedef struct rv_comp_channel_attr {
	uint64_t mask; /**< which fields the caller set (rv_comp_channel_attr_mask); 0 */
} rv_comp_channel_attr;

/**
 * Create a completion channel: a file descriptor that becomes readable when
 * an armed CQ attached to it (rv_cq_attr::channel) gets a completion.
 *
 * A CQ created with RV_CQ_ATTR_CHANNEL holds a reference on its channel and
 * depends on it: closing the channel closes its CQs (and their QPs) first.
 * @param ctx     the context
 * @param attr    options, or NULL for defaults
 * @param ret_ch  receives the channel
 * @retval 0            success
 * @retval -EINVAL      a NULL argument or an unknown mask bit
 * @retval -RV_ECLOSED  the context is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_comp_channel_new(rv_context *ctx, const rv_comp_channel_attr *attr,
			       rv_comp_channel **ret_ch);

/**
 * Take a reference on @p ch.
 * @return @p ch (NULL-safe)
 */
RV_API rv_comp_channel *rv_comp_channel_ref(rv_comp_channel *ch);

/**
 * Drop a reference; the last one closes and frees the channel.
 * @return NULL (accepts NULL)
 */
RV_API rv_comp_channel *rv_comp_channel_unref(rv_comp_channel *ch);

/**
 * Destroy the channel now, after closing every CQ attached to it (and the QPs
 * using those CQs). Events not yet acknowledged with rv_cq_ack_events() are
 * acknowledged by the close (it never waits for them); events not yet read
 * are discarded. Do not close a channel while another thread waits in
 * rv_comp_channel_get_event() or rv_cq_wait() on it.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p ch is NULL or not a completion channel
 * @retval negative   a destroy failed; the channel stays and the call may be retried
 */
RV_API int rv_comp_channel_close(rv_comp_channel *ch);

/**
 * The channel's file descriptor, for poll/epoll/select: readable while an
 * event is waiting. It is always non-blocking (O_NONBLOCK) and owned by the
 * channel: do not read or close it; call rv_comp_channel_get_event().
 * @return the descriptor (≥ 0)
 * @retval -EINVAL      @p ch is NULL or not a completion channel
 * @retval -RV_ECLOSED  the channel is closed
 */
RV_API int rv_comp_channel_fd(const rv_comp_channel *ch);

/**
 * Arm the CQ: its next completion (with @p solicited_only, its next
 * solicited receive completion or error completion) sends one event to its
 * channel, then the CQ is disarmed (as ibv_req_notify_cq). Completions already
 * in the CQ do not fire: poll again after arming.
 * @param cq              a CQ created with a channel
 * @param solicited_only  nonzero: only solicited and error completions
 * @retval 0            success
 * @retval -EINVAL      @p cq is NULL or not a CQ, or it has no channel
 * @retval -RV_ECLOSED  the CQ is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_cq_req_notify(rv_cq *cq, int solicited_only);

/**
 * Take one event from the channel, waiting up to @p timeout_ms.
 * Each event must be acknowledged with rv_cq_ack_events() (in batches is fine).
 * @param ch          the channel
 * @param timeout_ms  0: do not wait; negative: wait forever
 * @param ret_cq      receives the CQ that fired; a borrowed pointer (no new
 *                    reference), valid while the CQ is open
 * @retval 0            an event was taken
 * @retval -EAGAIN      no event and @p timeout_ms is 0
 * @retval -ETIMEDOUT   no event within @p timeout_ms
 * @retval -EINTR       a signal interrupted the wait
 * @retval -EINVAL      a NULL argument or @p ch is not a completion channel
 * @retval -RV_ECLOSED  the channel is closed
 */
RV_API int rv_comp_channel_get_event(rv_comp_channel *ch, int timeout_ms, rv_cq **ret_cq);

/**
 * Acknowledge @p n events taken for @p cq by rv_comp_channel_get_event().
 * Closing a CQ acknowledges what is left itself, so it never hangs.
 * @retval 0            success
 * @retval -EINVAL      @p cq is NULL or not a CQ, or @p n exceeds the events
 *                      taken and not yet acknowledged
 * @retval -RV_ECLOSED  the CQ is closed
 */
RV_API int rv_cq_ack_events(rv_cq *cq, unsigned int n);

/** How rv_cq_wait() waits (rv_cq_set_wait_mode()). */
typedef enum rv_cq_wait_mode {
	RV_CQ_WAIT_POLL = 0,            /**< busy poll (default): lowest latency, one core */
	RV_CQ_WAIT_EVENT = 1,           /**< arm, re-poll, block on the channel */
	RV_CQ_WAIT_SPIN_THEN_BLOCK = 2  /**< busy poll for spin_ns, then as RV_CQ_WAIT_EVENT */
} rv_cq_wait_mode;

/**
 * Choose how rv_cq_wait() waits on this CQ.
 * @param cq       the CQ
 * @param mode     an rv_cq_wait_mode
 * @param spin_ns  the busy-poll budget of RV_CQ_WAIT_SPIN_THEN_BLOCK, in
 *                 nanoseconds (0: a default of 50 µs); ignored by the others
 * @retval 0            success
 * @retval -EINVAL      @p cq is NULL or not a CQ, an unknown mode, or an event
 *                      mode on a CQ created without a channel
 * @retval -RV_ECLOSED  the CQ is closed
 */
RV_API int rv_cq_set_wait_mode(rv_cq *cq, int mode, uint64_t spin_ns);

/**
 * Wait up to @p timeout_ms for completions, as set by rv_cq_set_wait_mode().
 * In the event modes this call arms the CQ and takes and acknowledges the
 * events of its channel: give such a CQ a channel of its own, and do not
 * call rv_comp_channel_get_event() on that channel yourself.
 * @param cq          the CQ
 * @param wc          array of at least @p max entries
 * @param max         how many to take at most (≥ 1)
 * @param timeout_ms  0: poll once; negative: wait forever
 * @return the number of completions written to @p wc (≥ 1), or
 * @retval -EAGAIN      none and @p timeout_ms is 0
 * @retval -ETIMEDOUT   none within @p timeout_ms
 * @retval -EINVAL      a NULL argument or @p max < 1
 * @retval -RV_ECLOSED  the CQ (or its channel) is closed
 * @retval -EOVERFLOW   the CQ overflowed (as rv_cq_poll())
 * @retval -EINTR       a signal interrupted a blocking wait
 */
RV_API int rv_cq_wait(rv_cq *cq, rv_wc *wc, int max, int timeout_ms);

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
