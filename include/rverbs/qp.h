/**
 * @file rverbs/qp.h
 * @brief Queue pairs: creation, state transitions, connection, and the data
 *        path (array-based posting and one-operation convenience calls).
 */
#ifndef RVERBS_QP_H
#define RVERBS_QP_H

#include <rverbs/common.h>
#include <rverbs/endpoint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Queue pair transport (values equal IBV_QPT_*). */
typedef enum rv_qp_type {
	RV_QPT_RC = 2, /**< reliable connected */
	RV_QPT_UC = 3, /**< unreliable connected */
	RV_QPT_UD = 4, /**< unreliable datagram */
	RV_QPT_XRC_SEND = 9, /**< XRC initiator (INI): sends only, each SEND names the remote XRC
	                          SRQ (rverbs/xrcd.h); no receive queue, no receive CQ */
	RV_QPT_XRC_RECV = 10 /**< XRC target (TGT) of an XRC domain (RV_QP_INIT_ATTR_XRCD):
	                          receives into the XRC SRQ each SEND names; no send queue, no CQ */
} rv_qp_type;

/** Queue pair state (values equal IBV_QPS_*). */
typedef enum rv_qp_state {
	RV_QPS_RESET = 0, /**< just created */
	RV_QPS_INIT = 1,  /**< receives may be posted */
	RV_QPS_RTR = 2,   /**< ready to receive */
	RV_QPS_RTS = 3,   /**< ready to send */
	RV_QPS_SQD = 4,   /**< send queue drained */
	RV_QPS_SQE = 5,   /**< send queue error */
	RV_QPS_ERR = 6    /**< error: outstanding work is flushed */
} rv_qp_state;

/** Queue sizes of a QP. */
typedef struct rv_qp_cap {
	uint32_t max_send_wr;     /**< send queue depth */
	uint32_t max_recv_wr;     /**< receive queue depth */
	uint32_t max_send_sge;    /**< SGEs per send WR */
	uint32_t max_recv_sge;    /**< SGEs per receive WR */
	uint32_t max_inline_data; /**< largest inline send, bytes */
} rv_qp_cap;

/** Bits of rv_qp_init_attr::mask. */
enum rv_qp_init_attr_mask {
	RV_QP_INIT_ATTR_TYPE = 1u << 0,       /**< qp_type is set (default RV_QPT_RC) */
	RV_QP_INIT_ATTR_SEND_CQ = 1u << 1,    /**< send_cq is set (required) */
	RV_QP_INIT_ATTR_RECV_CQ = 1u << 2,    /**< recv_cq is set (default: send_cq) */
	RV_QP_INIT_ATTR_CAP = 1u << 3,        /**< cap is set (default 128/128/1/1/0) */
	RV_QP_INIT_ATTR_SQ_SIG_ALL = 1u << 4, /**< sq_sig_all is set (default 1) */
	RV_QP_INIT_ATTR_SRQ = 1u << 5,        /**< srq is set: receives come from it (rverbs/srq.h) */
	RV_QP_INIT_ATTR_XRCD = 1u << 6        /**< xrcd is set: required by, and only for,
	                                           RV_QPT_XRC_RECV (rverbs/xrcd.h) */
};

/** Options for rv_qp_new(). */
typedef struct rv_qp_init_attr {
	uint64_t mask;       /**< which fields the caller set (rv_qp_init_attr_mask) */
	uint32_t qp_type;    /**< an rv_qp_type */
	uint32_t sq_sig_all; /**< 1: every send WR completes; 0: only those with RV_SEND_SIGNALED */
	rv_cq *send_cq;      /**< CQ for send completions */
	rv_cq *recv_cq;      /**< CQ for receive completions */
	rv_qp_cap cap;       /**< requested queue sizes */
	rv_srq *srq;         /**< shared receive queue of the same PD (RV_QP_INIT_ATTR_SRQ); the
	                          QP takes its receives from it and cap.max_recv_wr is ignored */
	rv_xrcd *xrcd;       /**< the XRC domain of an RV_QPT_XRC_RECV QP (RV_QP_INIT_ATTR_XRCD) */
} rv_qp_init_attr;

/** Address vector of a connected QP's peer or of an address handle. */
typedef struct rv_ah_attr {
	uint8_t dgid[16];      /**< destination GID */
	uint32_t flow_label;   /**< GRH flow label */
	uint8_t sgid_index;    /**< source GID index */
	uint8_t hop_limit;     /**< GRH hop limit */
	uint8_t traffic_class; /**< GRH traffic class */
	uint8_t is_global;     /**< 1: a GRH is used (RoCE, iWARP, software device) */
	uint16_t dlid;         /**< destination LID (software device: its TCP port) */
	uint8_t sl;            /**< service level */
	uint8_t src_path_bits; /**< source path bits */
	uint8_t static_rate;   /**< static rate */
	uint8_t port_num;      /**< local port */
	uint16_t reserved;     /**< zero */
} rv_ah_attr;

/** Bits of rv_qp_attr::mask (values equal IBV_QP_*). */
enum rv_qp_attr_mask {
	RV_QP_STATE = 1u << 0,              /**< qp_state */
	RV_QP_CUR_STATE = 1u << 1,          /**< cur_qp_state */
	RV_QP_EN_SQD_ASYNC_NOTIFY = 1u << 2,/**< en_sqd_async_notify */
	RV_QP_ACCESS_FLAGS = 1u << 3,       /**< qp_access_flags */
	RV_QP_PKEY_INDEX = 1u << 4,         /**< pkey_index */
	RV_QP_PORT = 1u << 5,               /**< port_num */
	RV_QP_QKEY = 1u << 6,               /**< qkey */
	RV_QP_AV = 1u << 7,                 /**< ah_attr */
	RV_QP_PATH_MTU = 1u << 8,           /**< path_mtu */
	RV_QP_TIMEOUT = 1u << 9,            /**< timeout */
	RV_QP_RETRY_CNT = 1u << 10,         /**< retry_cnt */
	RV_QP_RNR_RETRY = 1u << 11,         /**< rnr_retry */
	RV_QP_RQ_PSN = 1u << 12,            /**< rq_psn */
	RV_QP_MAX_QP_RD_ATOMIC = 1u << 13,  /**< max_rd_atomic */
	RV_QP_ALT_PATH = 1u << 14,          /**< alternate path (not supported) */
	RV_QP_MIN_RNR_TIMER = 1u << 15,     /**< min_rnr_timer */
	RV_QP_SQ_PSN = 1u << 16,            /**< sq_psn */
	RV_QP_MAX_DEST_RD_ATOMIC = 1u << 17,/**< max_dest_rd_atomic */
	RV_QP_PATH_MIG_STATE = 1u << 18,    /**< path migration state (not supported) */
	RV_QP_CAP = 1u << 19,               /**< cap */
	RV_QP_DEST_QPN = 1u << 20           /**< dest_qp_num */
};

/** Every bit of rv_qp_attr_mask that rv_qp_modify() and rv_qp_query() accept. */
#define RV_QP_ATTR_ALL (0x1fffffu & ~(uint64_t)(RV_QP_ALT_PATH | RV_QP_PATH_MIG_STATE))

/** QP attributes for rv_qp_modify() and rv_qp_query(). */
typedef struct rv_qp_attr {
	uint64_t mask;              /**< rv_qp_attr_mask: the fields set (modify) or wanted (query) */
	uint32_t qp_state;          /**< target state (an rv_qp_state) */
	uint32_t cur_qp_state;      /**< current state */
	uint32_t path_mtu;          /**< an rv_mtu */
	uint32_t qkey;              /**< Q_Key (UD) */
	uint32_t rq_psn;            /**< expected receive PSN (24 bits) */
	uint32_t sq_psn;            /**< first send PSN (24 bits) */
	uint32_t dest_qp_num;       /**< remote QP number (24 bits) */
	uint32_t qp_access_flags;   /**< rv_access_flags allowed to incoming operations */
	rv_qp_cap cap;              /**< queue sizes (query only) */
	rv_ah_attr ah_attr;         /**< the peer's address */
	uint16_t pkey_index;        /**< P_Key index */
	uint8_t en_sqd_async_notify;/**< notify when the SQ is drained */
	uint8_t max_rd_atomic;      /**< outstanding READ/atomic as initiator */
	uint8_t max_dest_rd_atomic; /**< outstanding READ/atomic as target */
	uint8_t min_rnr_timer;      /**< RNR NAK timer code (0..31) */
	uint8_t port_num;           /**< port number */
	uint8_t timeout;            /**< local ACK timeout code: 4.096 µs × 2^timeout (0 = infinite) */
	uint8_t retry_cnt;          /**< transport retries (0..7) */
	uint8_t rnr_retry;          /**< RNR retries (0..7; 7 = infinite) */
	uint8_t reserved[6];        /**< zero */
} rv_qp_attr;

/** Send operation of a work request (values equal IBV_WR_*). */
typedef enum rv_wr_opcode {
	RV_WR_RDMA_WRITE = 0,           /**< RDMA WRITE */
	RV_WR_RDMA_WRITE_WITH_IMM = 1,  /**< RDMA WRITE with immediate data */
	RV_WR_SEND = 2,                 /**< SEND */
	RV_WR_SEND_WITH_IMM = 3,        /**< SEND with immediate data */
	RV_WR_RDMA_READ = 4,            /**< RDMA READ */
	RV_WR_ATOMIC_CMP_AND_SWP = 5,   /**< atomic compare and swap */
	RV_WR_ATOMIC_FETCH_AND_ADD = 6, /**< atomic fetch and add */
	RV_WR_LOCAL_INV = 7,            /**< local invalidate */
	RV_WR_BIND_MW = 8,              /**< bind a memory window */
	RV_WR_SEND_WITH_INV = 9         /**< SEND with invalidate */
} rv_wr_opcode;

/** Bits of rv_send_wr::send_flags (values equal IBV_SEND_*). */
typedef enum rv_send_flags {
	RV_SEND_FENCE = 1u << 0,     /**< wait for prior READ/atomics first */
	RV_SEND_SIGNALED = 1u << 1,  /**< generate a completion */
	RV_SEND_SOLICITED = 1u << 2, /**< solicited event at the receiver */
	RV_SEND_INLINE = 1u << 3,    /**< copy the payload at post time */
	RV_SEND_IP_CSUM = 1u << 4,   /**< offload IP checksum */
	RV_SEND_NO_INLINE = 1u << 16 /**< rverbs: never choose inline automatically */
} rv_send_flags;

/** One scatter/gather element (layout equal to struct ibv_sge). */
typedef struct rv_sge {
	uint64_t addr;   /**< start address */
	uint32_t length; /**< bytes */
	uint32_t lkey;   /**< local key of the MR holding it */
} rv_sge;

/**
 * A send work request. Work requests are posted as arrays, not chains.
 *
 * The layout starts as struct ibv_send_wr does (the libibverbs driver checks
 * every offset at compile time): wr_id, a pointer where ibv_send_wr has next,
 * sg_list, num_sge, opcode, send_flags, imm_data, then remote_addr and rkey
 * where ibv_send_wr has wr.rdma. So the libibverbs driver hands a single plain
 * RDMA WRITE, SEND or RDMA READ on a connected QP to ibv_post_send() as it is,
 * without building a libibverbs WR, when nothing needs translating: no
 * immediate data (rverbs' is in host byte order), no rverbs-only flag and no
 * inline decision left to rverbs (the caller set RV_SEND_INLINE, or the
 * payload does not fit max_inline_data, or the QP has no inline room). Every
 * other WR is translated, with the same result. The fields after rkey are
 * rverbs' own; the struct is as large as struct ibv_send_wr (128 bytes on
 * LP64), so a provider reading more of a WR than its opcode uses still reads
 * the caller's memory.
 */
typedef struct rv_send_wr {
	uint64_t wr_id;            /**< returned in the completion */
	void *reserved_next;       /**< NULL (where ibv_send_wr has next); the libibverbs driver
	                                fails a WR whose reserved_next is set with -EINVAL */
	const rv_sge *sg_list;     /**< scatter/gather list */
	uint32_t num_sge;          /**< entries in sg_list */
	uint32_t opcode;           /**< an rv_wr_opcode */
	uint32_t send_flags;       /**< rv_send_flags */
	uint32_t imm_data;         /**< immediate data (host byte order) or rkey to invalidate */
	uint64_t remote_addr;      /**< RDMA/atomic target address */
	uint32_t rkey;             /**< RDMA/atomic target key */
	uint32_t remote_qpn;       /**< UD: destination QP */
	uint64_t compare_add;      /**< atomic compare value or addend */
	uint64_t swap;             /**< atomic swap value */
	rv_ah *ah;                 /**< UD: destination address handle */
	uint32_t remote_qkey;      /**< UD: destination Q_Key */
	uint32_t remote_srqn;      /**< XRC initiator (RV_QPT_XRC_SEND): the number of the remote
	                                XRC SRQ (rv_srq_num()) that receives the message; ignored
	                                (and formerly reserved, zero) on other QP types */
	uint64_t reserved_tail[5]; /**< zero; pads the WR to sizeof(struct ibv_send_wr), so that
	                                a provider that reads a whole ibv_send_wr stays inside it */
} rv_send_wr;

/**
 * A receive work request. Its layout is struct ibv_recv_wr's (reserved_next
 * where ibv_recv_wr has next, reserved in its tail padding), so the
 * libibverbs driver posts a single one as it is.
 */
typedef struct rv_recv_wr {
	uint64_t wr_id;        /**< returned in the completion */
	void *reserved_next;   /**< NULL (where ibv_recv_wr has next); the libibverbs driver
	                            fails a WR whose reserved_next is set with -EINVAL */
	const rv_sge *sg_list; /**< scatter list */
	uint32_t num_sge;      /**< entries in sg_list */
	uint32_t reserved;     /**< zero */
} rv_recv_wr;

/**
 * Create a queue pair in the RESET state. The QP holds references on its PD
 * and CQs (and its SRQ, with RV_QP_INIT_ATTR_SRQ: closing the SRQ closes the QP). A random 24-bit initial send PSN is chosen.
 *
 * XRC (rverbs/xrcd.h): an RV_QPT_XRC_SEND QP needs a send CQ and no receive
 * side (cap.max_recv_wr and the receive CQ are ignored, RV_QP_INIT_ATTR_SRQ
 * is refused). An RV_QPT_XRC_RECV QP needs RV_QP_INIT_ATTR_XRCD and no CQ
 * (send_cq, recv_cq and cap are ignored); it holds a reference on its XRC
 * domain, whose close closes it. Its PD is rverbs' own bookkeeping (a
 * libibverbs target QP has none); the software device accepts RDMA READ,
 * WRITE and atomics arriving on it on an MR of that PD or of the PD of
 * any XRC SRQ of its domain.
 * @param pd      the protection domain
 * @param attr    options; RV_QP_INIT_ATTR_SEND_CQ is required (except for RV_QPT_XRC_RECV)
 * @param ret_qp  receives the QP
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, a missing send CQ, an unknown mask bit,
 *                      a CQ from another context, or a capability above the
 *                      device limit, an RV_QPT_XRC_RECV QP without an XRC domain
 *                      or a domain given to another QP type, an SRQ on an XRC QP
 *                      (rv_error_last() names it)
 * @retval -EOPNOTSUPP  an XRC QP type on a device without XRC
 * @retval -RV_ECLOSED  the PD or a CQ is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_qp_new(rv_pd *pd, const rv_qp_init_attr *attr, rv_qp **ret_qp);

/** Take a reference on @p qp. Returns @p qp (NULL-safe). */
RV_API rv_qp *rv_qp_ref(rv_qp *qp);

/** Drop a reference; the last one closes and frees the QP. Accepts NULL; returns NULL. */
RV_API rv_qp *rv_qp_unref(rv_qp *qp);

/**
 * Destroy the QP now. Work still in flight is not completed.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p qp is NULL or not a QP
 * @retval negative   the driver refused; the QP stays and the call may be retried
 */
RV_API int rv_qp_close(rv_qp *qp);

/** The QP number; 0 for an invalid handle. */
RV_API uint32_t rv_qp_num(const rv_qp *qp);

/** The QP's PD (borrowed), or NULL for an invalid handle. */
RV_API rv_pd *rv_qp_pd(const rv_qp *qp);

/**
 * The capabilities the QP actually got, read back after creation
 * (max_inline_data may exceed the request).
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_get_cap(const rv_qp *qp, rv_qp_cap *ret_cap);

/**
 * Modify QP attributes; the transition is validated against the InfiniBand
 * state table first, so an illegal transition or a missing or forbidden
 * attribute fails with -EINVAL and a message that names it.
 * @retval 0            success
 * @retval -EINVAL      an illegal transition, a missing or forbidden attribute
 * @retval -RV_ECLOSED  the QP is closed
 * @retval negative     the driver refused
 */
RV_API int rv_qp_modify(rv_qp *qp, const rv_qp_attr *attr);

/**
 * Query QP attributes.
 * @param qp    the QP
 * @param attr  in: attr->mask names the wanted fields; out: their values
 * @retval 0            success
 * @retval -EINVAL      a NULL argument or an unknown mask bit
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_query(rv_qp *qp, rv_qp_attr *attr);

/** The current state (an rv_qp_state), or a negative errno. */
RV_API int rv_qp_state_of(rv_qp *qp);

/**
 * RESET → INIT. @p attr may be NULL or set a subset of: port_num (default 1),
 * pkey_index (0), qp_access_flags (LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE |
 * REMOTE_ATOMIC for RC; LOCAL_WRITE | REMOTE_WRITE for UC), qkey (UD; default 0x11111111).
 * @retval 0            success
 * @retval -EINVAL      the QP is not in RESET, or an attribute not allowed here
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_to_init(rv_qp *qp, const rv_qp_attr *attr);

/**
 * INIT → RTR. For RC/UC, @p attr must set RV_QP_AV, RV_QP_DEST_QPN and
 * RV_QP_RQ_PSN; path_mtu defaults to the port's active MTU, max_dest_rd_atomic
 * to the device limit, min_rnr_timer to 12. UD needs no attributes. Set
 * ah_attr.sgid_index to rv_qp_gid_index(), the GID the QP's endpoint
 * advertised.
 * @retval 0            success
 * @retval -EINVAL      wrong state, a missing/forbidden attribute (named), or,
 *                      on a kernel RoCE device, an sgid_index whose entry is
 *                      empty or cannot reach ah_attr.dgid (both named)
 * @retval -RV_ECLOSED  the QP is closed
 * @retval negative     the driver refused (software device: the peer could not be reached)
 */
RV_API int rv_qp_to_rtr(rv_qp *qp, const rv_qp_attr *attr);

/**
 * RTR → RTS. Defaults: sq_psn the QP's own random PSN, timeout 14, retry_cnt 7,
 * rnr_retry 7, max_rd_atomic the device limit.
 * @retval 0            success
 * @retval -EINVAL      wrong state, or an attribute not allowed here
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_to_rts(rv_qp *qp, const rv_qp_attr *attr);

/**
 * This QP's endpoint (GID, LID, QPN, PSN, MTU, capabilities) for its peer.
 * The optional fields are cleared; add a memory region or user data before
 * packing it. The GID is entry rv_qp_gid_index() of the port's GID table;
 * on RoCE, capabilities carry its version (RV_EP_CAP_ROCE_V1/V2).
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_endpoint(rv_qp *qp, rv_endpoint *ret_ep);

/**
 * The index in the QP's port's GID table of the GID the QP advertises in its
 * endpoint (rv_qp_endpoint()) and sends from (rv_qp_connect()). Code that
 * builds an RTR address vector or an address handle by hand puts it in
 * rv_ah_attr::sgid_index, so that its packets come from the GID its peer
 * was told.
 *
 * The index is chosen once per QP, by the first of rv_qp_endpoint(),
 * rv_qp_connect() and this call, as rdma_cm chooses on RoCE: an entry of
 * the peer's family (IPv4-mapped for an IPv4 peer) and, if the peer's
 * endpoint says, of its RoCE version; the one whose address the kernel's
 * route to the peer uses as its source; RoCE v2 over RoCE v1; an
 * IPv4-mapped address over a global IPv6 one over a link-local one; the
 * lowest index (without a peer, the same without its first two rules). A
 * device without typed GID entries, an InfiniBand port and the software
 * device use index 0. rv_qp_set_gid_index() sets it instead.
 * @return the index (≥ 0), or
 * @retval -EINVAL      @p qp is NULL or not a QP
 * @retval -RV_ECLOSED  the QP is closed
 * @retval negative     querying the port's GID table failed
 */
RV_API int rv_qp_gid_index(rv_qp *qp);

/**
 * Make the QP advertise and send from entry @p index of its port's GID
 * table, instead of the one rv_qp_gid_index() would choose. Call it before
 * rv_qp_endpoint() (after rv_qp_to_init() if the QP uses another port than
 * 1: changing the port forgets the index).
 * @retval 0            success
 * @retval -EINVAL      @p qp is not a QP, the QP is past INIT, @p index is
 *                      past the GID table or names an empty entry
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_set_gid_index(rv_qp *qp, uint32_t index);

/**
 * Drive the QP from RESET (or INIT) to RTS against @p peer with sane defaults:
 * MTU the minimum of both ports, timeout 14, retry 7, rnr_retry 7,
 * min_rnr_timer 12, rd_atomic from the device caps, the PSNs of both endpoints,
 * hop limit 64, and as source GID the one the QP's endpoint advertised
 * (rv_qp_gid_index()).
 * @retval 0            success: the QP is in RTS
 * @retval -EINVAL      the peer endpoint is incompatible (QP type, missing GID,
 *                      a GID our GID cannot reach: another IP family, another
 *                      RoCE version); rv_error_last() names both
 * @retval -EADDRNOTAVAIL the port has no GID that reaches the peer's (its
 *                      family, its RoCE version), named
 * @retval -RV_ECLOSED  the QP is closed
 * @retval negative     a transition failed; rv_error_last() names it
 */
RV_API int rv_qp_connect(rv_qp *qp, const rv_endpoint *peer);

/**
 * Selective signalling as a policy of this QP: from now on rverbs chooses
 * which send WRs are signalled, on every driver. A WR is signalled when the
 * caller set RV_SEND_SIGNALED, when it is the @p n-th since the last
 * signalled one, and when it is the last WR a rv_qp_post_send() call posts
 * (so a completion always comes for what was posted). rverbs never lets
 * unsignalled work fill the send queue: a post that would exceed
 * max_send_wr outstanding WRs posts what fits, signals the last of those and
 * returns -ENOMEM. (Should the driver refuse a WR in the middle of a post,
 * the WRs before it may all be unsignalled; the next post's last WR covers
 * them.) The completions polled from the send CQ are accounted
 * (rv_qp_send_outstanding()), including error completions, which the device
 * generates for unsignalled WRs too.
 *
 * Set it before posting on the QP, with one thread posting and one thread
 * polling the send CQ at a time; changing it while another thread posts is a
 * caller race. On a CQ shared by sends and receives, give them distinct
 * wr_ids if the count must be exact after an error (an error completion
 * carries no reliable opcode). With the policy off the post path is the
 * plain one, without any extra test.
 * @param qp  the QP; it must have been created with sq_sig_all = 0
 * @param n   signal at least every n-th WR, 1 .. max_send_wr; 0 turns the
 *            policy off (only when nothing is outstanding)
 * @retval 0            success
 * @retval -EINVAL      @p n exceeds the send queue depth, or the QP signals
 *                      every WR already (sq_sig_all = 1)
 * @retval -EBUSY       turning the policy off while WRs are outstanding
 * @retval -ENOMEM      out of memory
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_set_signal_every(rv_qp *qp, uint32_t n);

/**
 * How many send WRs of a QP with a signalling policy (rv_qp_set_signal_every())
 * are posted and not yet known complete: a WR is known complete once the
 * completion of a later signalled WR, or its own, has been polled.
 * @return the count (0 .. max_send_wr), or a negative errno
 * @retval -EINVAL      @p qp is not a QP, or it has no signalling policy
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_send_outstanding(rv_qp *qp);

/**
 * Post send work requests. A WR whose payload fits max_inline_data is sent
 * inline unless it has RV_SEND_NO_INLINE.
 * @param qp         the QP
 * @param wrs        array of @p n work requests
 * @param n          number of work requests
 * @param n_posted   receives how many were posted (may be NULL); on failure
 *                   the failing one is wrs[*n_posted]
 * @retval 0            all posted
 * @retval -EINVAL      a NULL argument or an invalid WR (rv_error_last() names it)
 * @retval -ENOMEM      the send queue is full
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_post_send(rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);

/**
 * Post receive work requests.
 * @param qp         the QP
 * @param wrs        array of @p n work requests
 * @param n          number of work requests
 * @param n_posted   receives how many were posted (may be NULL)
 * @retval 0            all posted
 * @retval -EINVAL      a NULL argument or an invalid WR, or the QP takes its
 *                      receives from an SRQ (post with rv_srq_post_recv())
 * @retval -ENOMEM      the receive queue is full
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_post_recv(rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted);

/**
 * Post one signalled RDMA WRITE of @p local to (@p remote_addr, @p rkey).
 * @retval 0 or the errors of rv_qp_post_send()
 */
RV_API int rv_qp_write(rv_qp *qp, const rv_sge *local, uint64_t remote_addr, uint32_t rkey,
		       uint64_t wr_id);

/**
 * Post one signalled RDMA READ from (@p remote_addr, @p rkey) into @p local.
 * @retval 0 or the errors of rv_qp_post_send()
 */
RV_API int rv_qp_read(rv_qp *qp, const rv_sge *local, uint64_t remote_addr, uint32_t rkey,
		      uint64_t wr_id);

/**
 * Post one signalled SEND of @p local.
 * @retval 0 or the errors of rv_qp_post_send()
 */
RV_API int rv_qp_send(rv_qp *qp, const rv_sge *local, uint64_t wr_id);

/**
 * Post one receive into @p local.
 * @retval 0 or the errors of rv_qp_post_recv()
 */
RV_API int rv_qp_recv(rv_qp *qp, const rv_sge *local, uint64_t wr_id);

/* ---- the work-request builder (as ibv_qp_ex / ibv_wr_*) ------------------ */

/**
 * Open a batch of send work requests on @p qp, built one call per operation
 * as with libibverbs' ibv_wr_start() and the ibv_wr_* builders: an operation
 * (rv_qp_wr_send(), rv_qp_wr_rdma_write(), ...) starts a WR, the setters
 * (rv_qp_wr_set_sge(), rv_qp_wr_set_inline_data(), rv_qp_wr_set_ud_addr())
 * fill the latest one, rv_qp_wr_complete() posts the batch with
 * rv_qp_post_send() (the same validation, automatic inline and signalling
 * policy) and rv_qp_wr_abort() drops it. Nothing reaches the device before
 * rv_qp_wr_complete(). Works on every QP and device; no creation flag is
 * needed. One batch per QP at a time; like ibv_qp_ex, the calls on one QP
 * are not thread safe (serialize them). docs/extended-verbs.md has the
 * details.
 * @param qp  the QP
 * @retval 0            a batch is open
 * @retval -EINVAL      @p qp is not a QP
 * @retval -EBUSY       a batch is already open on @p qp (complete or abort it)
 * @retval -ENOMEM      out of memory
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_wr_start(rv_qp *qp);

/**
 * Add a SEND to the open batch (ibv_wr_send()); its data comes from a setter.
 * @param qp          the QP with an open batch
 * @param wr_id       returned in the completion
 * @param send_flags  rv_send_flags
 * @retval 0            added
 * @retval -EINVAL      @p qp is not a QP, or no batch is open (rv_qp_wr_start())
 * @retval -ENOMEM      out of memory
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_wr_send(rv_qp *qp, uint64_t wr_id, uint32_t send_flags);

/**
 * Add a SEND with immediate data @p imm_data, host byte order (ibv_wr_send_imm()).
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_send_imm(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t imm_data);

/**
 * Add a SEND with invalidate of @p invalidate_rkey at the receiver (ibv_wr_send_inv()).
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_send_inv(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t invalidate_rkey);

/**
 * Add an RDMA WRITE to (@p remote_addr, @p rkey) (ibv_wr_rdma_write()).
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_rdma_write(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
			       uint64_t remote_addr);

/**
 * Add an RDMA WRITE with immediate data (ibv_wr_rdma_write_imm()).
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_rdma_write_imm(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				   uint64_t remote_addr, uint32_t imm_data);

/**
 * Add an RDMA READ of (@p remote_addr, @p rkey) into the WR's SGEs (ibv_wr_rdma_read()).
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_rdma_read(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
			      uint64_t remote_addr);

/**
 * Add an atomic compare and swap (ibv_wr_atomic_cmp_swp()); the original
 * value lands in the WR's one 8-byte SGE.
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_atomic_cmp_swp(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare, uint64_t swap);

/**
 * Add an atomic fetch and add (ibv_wr_atomic_fetch_add()); the original
 * value lands in the WR's one 8-byte SGE.
 * @retval 0 or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_atomic_fetch_add(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add);

/**
 * Add an RDMA atomic write of the 8 bytes at @p value (ibv_wr_atomic_write()),
 * where the device has it (RV_DEVICE_CAP_ATOMIC_WRITE).
 * @retval 0            added
 * @retval -EOPNOTSUPP  the device has no atomic write, or rverbs cannot post
 *                      one to it (rv_error_last() says which)
 * @retval -EINVAL      @p value is NULL, or the errors of rv_qp_wr_send()
 */
RV_API int rv_qp_wr_atomic_write(rv_qp *qp, uint64_t wr_id, uint32_t send_flags, uint32_t rkey,
				 uint64_t remote_addr, const void *value);

/**
 * Give the latest WR of the batch one SGE (ibv_wr_set_sge()). A WR takes one
 * setter call: an SGE, an SGE list or inline data.
 * @retval 0            set
 * @retval -EINVAL      no batch or no WR in it, or the WR's data is set already
 * @retval -ENOMEM      out of memory
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_wr_set_sge(rv_qp *qp, uint32_t lkey, uint64_t addr, uint32_t length);

/**
 * Give the latest WR @p n SGEs, copied (ibv_wr_set_sge_list()).
 * @retval 0 or the errors of rv_qp_wr_set_sge(); -EINVAL also for a NULL
 *         @p sges with @p n > 0
 */
RV_API int rv_qp_wr_set_sge_list(rv_qp *qp, const rv_sge *sges, size_t n);

/**
 * Make the latest WR's payload the @p length bytes at @p addr, copied now
 * (the buffer may be reused at once) and sent inline (ibv_wr_set_inline_data()).
 * rv_qp_wr_complete() fails it with -EINVAL when it exceeds the QP's
 * max_inline_data.
 * @retval 0 or the errors of rv_qp_wr_set_sge(); -EINVAL also for a NULL
 *         @p addr with @p length > 0
 */
RV_API int rv_qp_wr_set_inline_data(rv_qp *qp, const void *addr, size_t length);

/**
 * As rv_qp_wr_set_inline_data() with @p n buffers, each rv_sge giving addr
 * and length (lkey is ignored), copied now in order (ibv_wr_set_inline_data_list()).
 * @retval 0 or the errors of rv_qp_wr_set_inline_data()
 */
RV_API int rv_qp_wr_set_inline_data_list(rv_qp *qp, const rv_sge *bufs, size_t n);

/**
 * Address the latest WR of a UD QP's batch (ibv_wr_set_ud_addr()).
 * @param qp           the UD QP with an open batch
 * @param ah           the destination's address handle (of the QP's PD)
 * @param remote_qpn   the destination QP
 * @param remote_qkey  its Q_Key
 * @retval 0            set
 * @retval -EINVAL      not a UD QP, no batch or no WR in it, or @p ah NULL
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_wr_set_ud_addr(rv_qp *qp, rv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey);

/**
 * Name the remote XRC SRQ of the latest WR of an XRC initiator QP's batch
 * (ibv_wr_set_xrc_srqn()); sets its rv_send_wr::remote_srqn.
 * @param qp           the RV_QPT_XRC_SEND QP with an open batch
 * @param remote_srqn  the number of the remote XRC SRQ (rv_srq_num() there)
 * @retval 0            set
 * @retval -EINVAL      not an XRC initiator QP, no batch or no WR in it
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_wr_set_xrc_srqn(rv_qp *qp, uint32_t remote_srqn);

/**
 * Post the batch with rv_qp_post_send() and close it (ibv_wr_complete()).
 * As there, the WRs before a refused one stay posted: @p ret_n_posted says
 * how many. The batch is closed whatever the outcome.
 * @param qp            the QP with an open batch
 * @param ret_n_posted  receives how many WRs were posted (may be NULL)
 * @retval 0            all posted (an empty batch posts nothing)
 * @retval -EINVAL      no batch is open, or a WR is invalid (rv_error_last()
 *                      names it, as rv_qp_post_send() does)
 * @retval negative     the errors of rv_qp_post_send()
 */
RV_API int rv_qp_wr_complete(rv_qp *qp, size_t *ret_n_posted);

/**
 * Drop the open batch without posting anything (ibv_wr_abort()).
 * @retval 0            dropped (or no batch was open)
 * @retval -EINVAL      @p qp is not a QP
 * @retval -RV_ECLOSED  the QP is closed
 */
RV_API int rv_qp_wr_abort(rv_qp *qp);

/**
 * Enhanced Connection Establishment options (as `struct ibv_ece`): what a
 * device offers to or agreed with its peer, exchanged by the connection
 * manager.
 */
typedef struct rv_ece {
	uint32_t vendor_id; /**< the IEEE OUI of the device's vendor */
	uint32_t options;   /**< vendor-defined option bits */
	uint32_t comp_mask; /**< must be 0 */
} rv_ece;

/**
 * Read the QP's ECE options (as `ibv_query_ece`).
 * @retval 0             success; @p ret_ece written
 * @retval -EINVAL       a NULL argument or not a QP
 * @retval -RV_ECLOSED   the QP is closed
 * @retval -EOPNOTSUPP   the device has no ECE (soft0; rxe)
 */
RV_API int rv_qp_query_ece(rv_qp *qp, rv_ece *ret_ece);

/**
 * Set the ECE options the QP offers or accepts (as `ibv_set_ece`), before it
 * leaves INIT.
 * @retval 0             success
 * @retval -EINVAL       a NULL argument, not a QP, or a nonzero comp_mask
 * @retval -RV_ECLOSED   the QP is closed
 * @retval -EOPNOTSUPP   the device has no ECE (soft0; rxe)
 * @retval negative      the device refused the options; rv_error_last() says why
 */
RV_API int rv_qp_set_ece(rv_qp *qp, const rv_ece *ece);

/** Bits of rv_qp_rate_limit_attr.mask. */
typedef enum rv_qp_rate_limit_mask {
	RV_QP_RATE_LIMIT_RATE = 1u << 0,       /**< rate_limit is set */
	RV_QP_RATE_LIMIT_MAX_BURST = 1u << 1,  /**< max_burst_sz is set */
	RV_QP_RATE_LIMIT_PKT_SIZE = 1u << 2,   /**< typical_pkt_sz is set */
} rv_qp_rate_limit_mask;

/** Packet pacing of a QP's send queue (as `struct ibv_qp_rate_limit_attr`). */
typedef struct rv_qp_rate_limit_attr {
	uint64_t mask;           /**< which fields the caller set (rv_qp_rate_limit_mask) */
	uint32_t rate_limit;     /**< kbps; 0 removes the limit */
	uint32_t max_burst_sz;   /**< bytes; 0: the device's default */
	uint16_t typical_pkt_sz; /**< bytes; 0: the port's MTU */
} rv_qp_rate_limit_attr;

/**
 * Limit the QP's transmit rate (as `ibv_modify_qp_rate_limit`). The device's
 * range and QP types are rv_device_attr's pp_rate_limit_min/max and
 * pp_supported_qpts; a device with pp_rate_limit_max 0 has no pacing.
 * @retval 0             success
 * @retval -EINVAL       a NULL argument, not a QP, an unknown mask bit, or
 *                       no RV_QP_RATE_LIMIT_RATE
 * @retval -RV_ECLOSED   the QP is closed
 * @retval -EOPNOTSUPP   the device does not pace (soft0; rxe)
 * @retval negative      the device refused the rate; rv_error_last() says why
 */
RV_API int rv_qp_set_rate_limit(rv_qp *qp, const rv_qp_rate_limit_attr *attr);

/** The destination QP number of a datagram sent to a multicast group (IBA 9.8.1). */
#define RV_MCAST_QPN 0xFFFFFFu

/**
 * Attach a UD QP to a multicast group (ibv_attach_mcast()): datagrams sent
 * to the group (destination QP 0xFFFFFF, RV_MCAST_QPN) are delivered to the
 * QP, a copy to each attached QP, with the QP's Q_Key checked as for unicast.
 * Attaching a QP that is attached already succeeds. Destroying the QP
 * detaches it. On the software device the group is an IP multicast group
 * joined on the context's interface (docs/ud.md, "Multicast").
 * @param qp   a UD QP
 * @param gid  the group's GID, 16 bytes: ff00::/8, or an IPv4-mapped
 *             multicast address (IPv4-mapped: ffff in bytes 10 and 11, 224.0.0.0/4 in bytes 12 to 15) on RoCE and soft0
 * @param lid  the group's multicast LID (InfiniBand; ignored on Ethernet ports)
 * @retval 0             success
 * @retval -EINVAL       a NULL argument, @p gid is not a multicast GID, the QP
 *                       is not UD, or the device refused the LID or the GID's
 *                       address family (named)
 * @retval -RV_ECLOSED   the QP is closed
 * @retval -EOPNOTSUPP   the device has no multicast (max_mcast_grp 0)
 * @retval -ENOMEM       max_mcast_grp or max_mcast_qp_attach is reached (named),
 *                       or out of memory
 * @retval negative      the device or the host refused the group (named)
 */
RV_API int rv_qp_attach_mcast(rv_qp *qp, const uint8_t gid[16], uint16_t lid);

/**
 * Detach a UD QP from a multicast group (ibv_detach_mcast()): from now on it
 * receives nothing sent to the group.
 * @param qp   a UD QP
 * @param gid  the group's GID, as given to rv_qp_attach_mcast()
 * @param lid  the group's multicast LID
 * @retval 0             success
 * @retval -EINVAL       a NULL argument, @p gid is not a multicast GID, the QP
 *                       is not UD, or it is not attached to the group
 * @retval -RV_ECLOSED   the QP is closed
 * @retval -EOPNOTSUPP   the device has no multicast
 * @retval negative      the device refused (named)
 */
RV_API int rv_qp_detach_mcast(rv_qp *qp, const uint8_t gid[16], uint16_t lid);

#ifdef __cplusplus
}
#endif

#endif
