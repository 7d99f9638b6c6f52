/**
 * @file rverbs/conn.h
 * @brief The connection helper: listen on "host:port", accept, connect, and
 *        get back connected RC queue pairs that are already in RTS on both
 *        sides, with the peer's advertised memory region and application data.
 *
 * A client calls rv_connect(); a server creates an rv_listener and calls
 * rv_listener_accept(). The two exchange their endpoints (rv_endpoint: GID,
 * LID, QPN, PSN, MTU, capabilities, an optional memory region) plus
 * application data (up to RV_CONN_PRIVATE_DATA_MAX bytes over TCP; over
 * rdma_cm RV_CONN_CM_PRIVATE_DATA_MAX in the request and
 * RV_CONN_CM_REPLY_PRIVATE_DATA_MAX in the reply on InfiniBand and RoCE,
 * RV_CONN_CM_IWARP_PRIVATE_DATA_MAX each way on iWARP), drive their QPs to RTS,
 * and return an rv_conn. The server's QPs are in RTS before the client's call
 * returns, and the client's before the server's call returns, so the client
 * may RDMA WRITE into the server's advertised buffer at once.
 *
 * The exchange runs over an out-of-band TCP connection (every device,
 * including the software device), or over rdma_cm for kernel RDMA devices
 * that have it (RV_CONN_TRANSPORT_AUTO picks). The TCP connection stays open
 * as the connection's control channel: it carries the graceful disconnect and
 * tells each side when the other one went away.
 *
 * Every wait has a timeout (milliseconds; -1 waits without limit, 0 does not
 * wait). A malformed, hostile, slow or vanishing peer gives a clear error
 * (rv_error_last() names the peer and the fault) within the timeout, never a
 * crash or a hang, and the listener keeps serving the next client.
 *
 * Event-driven use: rv_listener_fd() and rv_conn_fd() are file descriptors
 * to add to an epoll/poll set (readable: call rv_listener_accept() or
 * rv_conn_poll() with timeout 0); rv_connect_start() begins a connection
 * without waiting.
 */
#ifndef RVERBS_CONN_H
#define RVERBS_CONN_H

#include <rverbs/common.h>
#include <rverbs/context.h>
#include <rverbs/cq.h>
#include <rverbs/endpoint.h>
#include <rverbs/mr.h>
#include <rverbs/pd.h>
#include <rverbs/qp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A listening endpoint for the connection helper. */
typedef struct rv_listener rv_listener;
/** A connection: one or more connected queue pairs and their peer's details. */
typedef struct rv_conn rv_conn;

/** A UD QP's membership of a multicast group (rv_mcast_join()). */
typedef struct rv_mcast rv_mcast;

/** The most queue pairs one connection carries. */
#define RV_CONN_MAX_QPS 16

/**
 * The most application data each side sends in the exchange, bytes: the TCP
 * transport's limit (its HELLO message counts it in 16 bits). rdma_cm carries
 * less; docs/connection-helper.md has the table.
 */
#define RV_CONN_PRIVATE_DATA_MAX 65535

/**
 * The application data an rdma_cm connect request carries on InfiniBand and
 * RoCE beside rverbs' own 29-byte header, bytes: the CM REQ's 92 bytes of
 * private data less rdma_cm's 36 (56 for the user) less rverbs' 29.
 */
#define RV_CONN_CM_PRIVATE_DATA_MAX 27

/**
 * The application data an rdma_cm reply (the server's accept) carries on
 * InfiniBand and RoCE, bytes: the CM REP's 196 less rverbs' 29.
 */
#define RV_CONN_CM_REPLY_PRIVATE_DATA_MAX 167

/**
 * The application data an rdma_cm reply to a UD client (the SIDR REP) carries,
 * bytes: the SIDR REP's 136 less rverbs' 29. The UD request carries
 * RV_CONN_CM_PRIVATE_DATA_MAX, as for RC.
 */
#define RV_CONN_CM_UD_REPLY_PRIVATE_DATA_MAX 107

/**
 * The application data either side's rdma_cm message carries on iWARP, bytes:
 * rdma_conn_param's 255 (MPA allows 512) less rverbs' 29.
 */
#define RV_CONN_CM_IWARP_PRIVATE_DATA_MAX 226

/** How the two sides exchange their endpoints. */
typedef enum rv_conn_transport {
	/** rdma_cm for a kernel RDMA device that has it, else TCP (the default). */
	RV_CONN_TRANSPORT_AUTO = 0,
	/** An out-of-band TCP connection to "host:port" (every device). */
	RV_CONN_TRANSPORT_TCP = 1,
	/** rdma_cm (kernel RDMA devices only; required for iWARP hardware). */
	RV_CONN_TRANSPORT_RDMA_CM = 2
} rv_conn_transport;

/** State of a connection (rv_conn_state_of()). */
typedef enum rv_conn_state {
	RV_CONN_CONNECTING = 1,   /**< rv_connect_start(): the exchange is under way */
	RV_CONN_ESTABLISHED = 2,  /**< the QPs are in RTS on both sides */
	RV_CONN_DISCONNECTED = 3, /**< either side disconnected; the QPs are in ERR */
	RV_CONN_FAILED = 4        /**< the exchange failed; rv_conn_poll() said why */
} rv_conn_state;

/** What rv_conn_poll() observed. */
typedef enum rv_conn_event {
	RV_CONN_EVENT_NONE = 0,        /**< nothing new */
	RV_CONN_EVENT_ESTABLISHED = 1, /**< a connection from rv_connect_start() is established */
	RV_CONN_EVENT_DISCONNECTED = 2 /**< the peer disconnected or went away; work was flushed */
} rv_conn_event;

/** Bits of rv_conn_attr::mask. */
enum rv_conn_attr_mask {
	/** pd is set: the QPs go into it (default: a new PD in the context). */
	RV_CONN_ATTR_PD = 1u << 0,
	/** send_cq and recv_cq are set (default: one new CQ of 256 entries for both). */
	RV_CONN_ATTR_CQ = 1u << 1,
	/**
	 * qp_type is set: RV_QPT_RC (default), RV_QPT_UC, or RV_QPT_UD: the QPs
	 * go to RTS without a peer, and rv_conn_peer_ah() gives what a send to
	 * the peer's QP needs. With rdma_cm a UD connection is a SIDR exchange
	 * (RDMA_PS_UDP) with rdma_cm's Q_Key, RDMA_UDP_QKEY (0x01234567).
	 */
	RV_CONN_ATTR_QP_TYPE = 1u << 2,
	/** qp_cap is set (default: those of rv_qp_new()). */
	RV_CONN_ATTR_QP_CAP = 1u << 3,
	/**
	 * num_qps is set (1..RV_CONN_MAX_QPS; default 1). A client asks for the
	 * number; a server that sets it rejects clients asking for another.
	 */
	RV_CONN_ATTR_NUM_QPS = 1u << 4,
	/**
	 * qps is set: use the caller's num_qps QPs (RESET or INIT, in one
	 * context; for example with receives already posted in INIT) instead of
	 * creating them. The connection takes a reference on each. Implies
	 * RV_CONN_ATTR_NUM_QPS; pd, cq, qp_type and qp_cap are then ignored.
	 */
	RV_CONN_ATTR_QPS = 1u << 5,
	/** mr is set: its address, length and rkey are advertised to the peer. */
	RV_CONN_ATTR_MR = 1u << 6,
	/** private_data and private_data_len are set: sent to the peer. */
	RV_CONN_ATTR_PRIVATE_DATA = 1u << 7,
	/**
	 * required_caps is set: rv_endpoint_caps the peer's device must have
	 * (RV_EP_CAP_ATOMIC, RV_EP_CAP_IMM); a peer without them is rejected and
	 * told why.
	 */
	RV_CONN_ATTR_REQUIRED_CAPS = 1u << 8,
	/** transport is set (an rv_conn_transport; default RV_CONN_TRANSPORT_AUTO). */
	RV_CONN_ATTR_TRANSPORT = 1u << 9,
	/**
	 * gid_index is set: the QPs advertise and send from this entry of their
	 * port's GID table (rv_qp_set_gid_index()) instead of the one chosen as
	 * rdma_cm would (docs/connection-helper.md, "Which GID"). TCP transport
	 * only: rdma_cm chooses the GID from its route, and refuses it.
	 */
	RV_CONN_ATTR_GID_INDEX = 1u << 10,
	/**
	 * traffic_class is set (default 0): the GRH traffic class, on RoCE v2 the
	 * IP DSCP and ECN bits of the QPs' packets. With rdma_cm it is the id's
	 * type of service (RDMA_OPTION_ID_TOS), set before the route is resolved.
	 */
	RV_CONN_ATTR_TRAFFIC_CLASS = 1u << 11,
	/** sl is set: the service level, 0..15 (default 0). */
	RV_CONN_ATTR_SL = 1u << 12,
	/** flow_label is set: the GRH flow label, 20 bits (default 0). */
	RV_CONN_ATTR_FLOW_LABEL = 1u << 13,
	/** hop_limit is set: the GRH hop limit, on RoCE v2 the IP TTL, 1..255 (default 64). */
	RV_CONN_ATTR_HOP_LIMIT = 1u << 14,
	/**
	 * ack_timeout is set: the QPs' local ACK timeout, 4.096 µs × 2^ack_timeout,
	 * 1..31 (default 14, about 67 ms). With rdma_cm it is set through
	 * RDMA_OPTION_ID_ACK_TIMEOUT.
	 */
	RV_CONN_ATTR_ACK_TIMEOUT = 1u << 15,
	/**
	 * resolve_timeout_ms and resolve_retries are set (rdma_cm only): each
	 * address and route resolution may take resolve_timeout_ms (1..60000;
	 * default: what is left of the call's timeout, or 5000 without one) and
	 * is tried again up to resolve_retries times (0..16; default 0) when it
	 * fails or times out, all within the call's timeout.
	 */
	RV_CONN_ATTR_RESOLVE = 1u << 16,
	/**
	 * qkey is set: the Q_Key of UD QPs the connection moves to INIT (default
	 * 0x11111111, rv_qp_to_init()'s); a caller's QP already in INIT keeps its
	 * own. Each side tells the other its QPs' Q_Keys in the exchange. With
	 * rdma_cm the Q_Key is rdma_cm's, 0x01234567; another is refused.
	 */
	RV_CONN_ATTR_QKEY = 1u << 17
};

/**
 * Options for rv_connect(), rv_connect_start() and rv_listener_accept().
 * Unset fields take the defaults named in rv_conn_attr_mask. The pointed-to
 * data is read during the call only.
 */
typedef struct rv_conn_attr {
	uint64_t mask;             /**< which fields the caller set (rv_conn_attr_mask) */
	rv_pd *pd;                 /**< PD of the QPs */
	rv_cq *send_cq;            /**< send CQ of the QPs */
	rv_cq *recv_cq;            /**< receive CQ of the QPs (NULL: send_cq) */
	rv_qp *const *qps;         /**< the caller's QPs (RV_CONN_ATTR_QPS) */
	rv_mr *mr;                 /**< the memory region to advertise */
	const void *private_data;  /**< application data for the peer */
	uint32_t private_data_len; /**< its length: ≤ RV_CONN_PRIVATE_DATA_MAX (TCP), less with rdma_cm */
	uint32_t qp_type;          /**< an rv_qp_type (RC or UC) */
	uint32_t num_qps;          /**< QPs in the connection */
	uint32_t required_caps;    /**< rv_endpoint_caps the peer must have */
	uint32_t transport;        /**< an rv_conn_transport */
	uint32_t reserved;         /**< zero */
	rv_qp_cap qp_cap;          /**< queue sizes of created QPs */
	uint32_t gid_index;        /**< source GID index (RV_CONN_ATTR_GID_INDEX) */
	uint32_t flow_label;       /**< GRH flow label, 20 bits (RV_CONN_ATTR_FLOW_LABEL) */
	uint8_t traffic_class;     /**< GRH traffic class / IP TOS (RV_CONN_ATTR_TRAFFIC_CLASS) */
	uint8_t sl;                /**< service level, 0..15 (RV_CONN_ATTR_SL) */
	uint8_t hop_limit;         /**< GRH hop limit / IP TTL, 1..255 (RV_CONN_ATTR_HOP_LIMIT) */
	uint8_t ack_timeout;       /**< local ACK timeout code, 1..31 (RV_CONN_ATTR_ACK_TIMEOUT) */
	uint32_t resolve_timeout_ms; /**< rdma_cm: per resolution attempt (RV_CONN_ATTR_RESOLVE) */
	uint32_t resolve_retries;  /**< rdma_cm: further attempts (RV_CONN_ATTR_RESOLVE) */
	uint32_t qkey;             /**< Q_Key of the UD QPs (RV_CONN_ATTR_QKEY) */
} rv_conn_attr;

/** Bits of rv_listener_attr::mask. */
enum rv_listener_attr_mask {
	/** backlog is set (default 128). */
	RV_LISTENER_ATTR_BACKLOG = 1u << 0,
	/**
	 * handshake_timeout_ms is set: how long one client may take to complete
	 * its exchange (default 5000). A slower client is dropped with -ETIMEDOUT.
	 */
	RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT = 1u << 1,
	/** max_pending is set: clients in the middle of an exchange at once (default 256). */
	RV_LISTENER_ATTR_MAX_PENDING = 1u << 2,
	/** transport is set (an rv_conn_transport; default RV_CONN_TRANSPORT_AUTO). */
	RV_LISTENER_ATTR_TRANSPORT = 1u << 3
};

/** Options for rv_listener_new(). */
typedef struct rv_listener_attr {
	uint64_t mask;                 /**< which fields the caller set (rv_listener_attr_mask) */
	uint32_t backlog;              /**< listen(2) backlog */
	uint32_t handshake_timeout_ms; /**< per-client exchange timeout, ≥ 1 */
	uint32_t max_pending;          /**< concurrent exchanges, ≥ 1 */
	uint32_t transport;            /**< an rv_conn_transport */
} rv_listener_attr;

/**
 * Listen for connections on @p addr. The listener holds a reference on
 * @p ctx; closing the context closes it.
 * @param ctx           the context whose device the accepted QPs use
 * @param addr          "host:port": "127.0.0.1:7471", "[::1]:0", "*:7471"
 *                      (every address), a host name; port 0 picks a free port
 *                      (rv_listener_port() reads it)
 * @param attr          options, or NULL for defaults
 * @param ret_listener  receives the listener
 * @retval 0              success
 * @retval -EINVAL        a NULL argument, an unknown mask bit, a zero timeout
 *                        or max_pending, or @p addr is not "host:port"
 * @retval -RV_ECLOSED    @p ctx is closed
 * @retval -EADDRINUSE    the port is taken
 * @retval -EADDRNOTAVAIL the host is not an address of this machine
 * @retval -EHOSTUNREACH  the host name does not resolve
 * @retval -EOPNOTSUPP    RV_CONN_TRANSPORT_RDMA_CM on a device without rdma_cm
 * @retval -ENOMEM        out of memory
 */
RV_API int rv_listener_new(rv_context *ctx, const char *addr, const rv_listener_attr *attr,
			   rv_listener **ret_listener);

/** Take a reference on @p listener. Returns @p listener (NULL-safe). */
RV_API rv_listener *rv_listener_ref(rv_listener *listener);

/** Drop a reference; the last one closes and frees the listener. Accepts NULL; returns NULL. */
RV_API rv_listener *rv_listener_unref(rv_listener *listener);

/**
 * Stop listening now; clients in the middle of an exchange are dropped.
 * Connections already accepted are not affected.
 * @retval 0        success, or already closed
 * @retval -EINVAL  @p listener is NULL or not a listener
 */
RV_API int rv_listener_close(rv_listener *listener);

/**
 * The port the listener is bound to (the chosen one when it asked for port 0).
 * @return the port (1..65535), or
 * @retval -EINVAL      @p listener is NULL or not a listener
 * @retval -RV_ECLOSED  the listener is closed
 */
RV_API int rv_listener_port(const rv_listener *listener);

/**
 * A file descriptor that becomes readable when rv_listener_accept() has work:
 * a new client, bytes from a client in the middle of its exchange, or an
 * exchange that reached its timeout. Owned by the listener.
 * @return the descriptor, or
 * @retval -EINVAL      @p listener is NULL or not a listener
 * @retval -RV_ECLOSED  the listener is closed
 */
RV_API int rv_listener_fd(const rv_listener *listener);

/**
 * Accept one connection. Serves every client that is in the middle of its
 * exchange (up to max_pending at once), and returns as soon as one is
 * established, one fails, or @p timeout_ms passes. A client's QPs are
 * created (or the caller's taken) with the @p attr of the call that receives
 * its request; with RV_CONN_ATTR_QPS, keep them for one client at a time.
 *
 * A failed exchange returns its error and leaves the listener ready for the
 * next call: the peer is named in rv_error_last(), and it is sent the reason
 * when it was rejected.
 * @param listener    the listener
 * @param attr        QP and exchange options, or NULL for defaults
 * @param timeout_ms  how long to wait (-1: no limit; 0: only what is ready)
 * @param ret_conn    receives the established connection
 * @retval 0                 success
 * @retval -EINVAL           a NULL argument, an unknown mask bit, a bad field
 *                           (named), or QPs from another context
 * @retval -RV_ECLOSED       the listener or something in @p attr is closed
 * @retval -EAGAIN           no connection was established within @p timeout_ms
 * @retval -ETIMEDOUT        a client did not complete its exchange within the
 *                           handshake timeout
 * @retval -EBADMSG          a client sent bytes that are not an rverbs exchange,
 *                           or an endpoint that does not validate
 * @retval -EPROTONOSUPPORT  a client speaks another version of the exchange
 * @retval -EMSGSIZE         a client announced a message above the limits, or
 *                           rdma_cm: private_data_len is above what the
 *                           transport's reply carries (the limit is named)
 * @retval -ECONNRESET       a client closed its connection mid-exchange
 * @retval -EPROTO           the client's QPs do not match ours (QP type,
 *                           number of QPs, missing GID on an Ethernet port)
 * @retval -EOPNOTSUPP       the client's device lacks a required capability
 * @retval -ECONNREFUSED     the client rejected our endpoints (its reason is
 *                           in rv_error_last())
 * @retval -EBUSY            a second client arrived while the caller's QPs
 *                           (RV_CONN_ATTR_QPS) already served a first one
 * @retval -ENOMEM           out of memory
 * @retval negative          creating or connecting the QPs failed (named)
 */
RV_API int rv_listener_accept(rv_listener *listener, const rv_conn_attr *attr, int timeout_ms,
			      rv_conn **ret_conn);

/**
 * Connect to a listener and wait until the connection is established.
 * @param ctx         the context whose device the QPs use
 * @param addr        the listener's "host:port" ("[v6addr]:port" for IPv6)
 * @param attr        QP and exchange options, or NULL for defaults
 * @param timeout_ms  how long the whole call may take (-1: no limit)
 * @param ret_conn    receives the connection, in RV_CONN_ESTABLISHED
 * @retval 0                 success
 * @retval -EINVAL           a NULL argument, an unknown mask bit, a bad field
 *                           (named), @p addr is not "host:port", or the PD,
 *                           CQs or QPs belong to another context
 * @retval -RV_ECLOSED       @p ctx or something in @p attr is closed
 * @retval -EHOSTUNREACH     the host name does not resolve
 * @retval -ECONNREFUSED     nothing listens there, or the server rejected us
 *                           (rv_error_last() gives its reason)
 * @retval -ETIMEDOUT        not established within @p timeout_ms
 * @retval -EBADMSG          the server's answer is not a valid exchange
 * @retval -EPROTONOSUPPORT  the server speaks another version of the exchange
 * @retval -ECONNRESET       the server closed the connection mid-exchange
 * @retval -EPROTO           the server's QPs do not match ours
 * @retval -EOPNOTSUPP       the server's device lacks a required capability,
 *                           or RV_CONN_TRANSPORT_RDMA_CM on a device without it
 * @retval -EMSGSIZE         rdma_cm: private_data_len is above what the
 *                           transport's request carries (the limit is named)
 * @retval -ENOMEM           out of memory
 * @retval negative          creating or connecting the QPs failed (named)
 */
RV_API int rv_connect(rv_context *ctx, const char *addr, const rv_conn_attr *attr, int timeout_ms,
		      rv_conn **ret_conn);

/**
 * Begin a connection without waiting: the connection starts in
 * RV_CONN_CONNECTING; add rv_conn_fd() to an epoll set and call
 * rv_conn_poll() when it is readable (or with a timeout) until it reports
 * RV_CONN_EVENT_ESTABLISHED or an error. TCP transport only.
 * @retval 0 and the errors of rv_connect() that arise before any waiting
 *           (-EINVAL, -RV_ECLOSED, -EHOSTUNREACH, -ECONNREFUSED, -ENOMEM,
 *           -EOPNOTSUPP for RV_CONN_TRANSPORT_RDMA_CM)
 */
RV_API int rv_connect_start(rv_context *ctx, const char *addr, const rv_conn_attr *attr,
			    rv_conn **ret_conn);

/** Take a reference on @p conn. Returns @p conn (NULL-safe). */
RV_API rv_conn *rv_conn_ref(rv_conn *conn);

/**
 * Drop a reference; the last one closes the connection as rv_conn_close()
 * does and frees it. Accepts NULL; returns NULL.
 */
RV_API rv_conn *rv_conn_unref(rv_conn *conn);

/**
 * Close the connection now: tell the peer (without waiting for it), move the
 * QPs to ERR, close the QPs the connection created and release the caller's.
 * @retval 0        success, or already closed
 * @retval -EINVAL  @p conn is NULL or not a connection
 */
RV_API int rv_conn_close(rv_conn *conn);

/**
 * Disconnect gracefully: tell the peer, move the QPs to ERR (outstanding work
 * completes with RV_WC_WR_FLUSH_ERR on both sides) and wait for the peer's
 * acknowledgement. The handle stays open (its QPs can still be polled) until
 * closed. The peer sees RV_CONN_EVENT_DISCONNECTED.
 * @param conn        the connection
 * @param timeout_ms  how long to wait for the peer (-1: no limit; 0: tell the
 *                    peer without waiting for its acknowledgement)
 * @retval 0            success (or already disconnected)
 * @retval -EINVAL      @p conn is NULL or not a connection
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval -ETIMEDOUT   the peer did not acknowledge in time; the connection is
 *                      disconnected on this side all the same
 */
RV_API int rv_conn_disconnect(rv_conn *conn, int timeout_ms);

/**
 * Process the connection's control channel: finish a connection from
 * rv_connect_start(), or learn that the peer disconnected or went away (the
 * QPs then move to ERR and their outstanding work is flushed).
 * @param conn        the connection
 * @param timeout_ms  how long to wait for an event (-1: no limit; 0: do not wait)
 * @param ret_event   receives an rv_conn_event (RV_CONN_EVENT_NONE when the
 *                    wait ended without one)
 * @retval 0            an event, or none within @p timeout_ms
 * @retval -EINVAL      a NULL argument or not a connection
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval negative     a connection from rv_connect_start() failed, with the
 *                      errors of rv_connect(); the state is RV_CONN_FAILED
 */
RV_API int rv_conn_poll(rv_conn *conn, int timeout_ms, uint32_t *ret_event);

/**
 * A file descriptor that becomes readable when rv_conn_poll() has work (and,
 * while connecting, writable when the connection attempt completes). Owned by
 * the connection; -EBADF once the control channel is gone (after a
 * disconnect).
 * @return the descriptor, or
 * @retval -EINVAL      @p conn is NULL or not a connection
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval -EBADF       the connection has no control channel any more
 */
RV_API int rv_conn_fd(const rv_conn *conn);

/**
 * The connection's state.
 * @return an rv_conn_state, or
 * @retval -EINVAL      @p conn is NULL or not a connection
 * @retval -RV_ECLOSED  @p conn is closed
 */
RV_API int rv_conn_state_of(const rv_conn *conn);

/** The number of QPs in the connection; 0 for an invalid or closed handle. */
RV_API uint32_t rv_conn_num_qps(const rv_conn *conn);

/**
 * One of the connection's QPs (borrowed: take a reference to keep it beyond
 * the connection), or NULL for an invalid or closed handle or an index out of
 * range.
 */
RV_API rv_qp *rv_conn_qp(const rv_conn *conn, uint32_t index);

/**
 * The PD of the connection's QPs (borrowed), or NULL for an invalid or closed
 * handle.
 */
RV_API rv_pd *rv_conn_pd(const rv_conn *conn);

/**
 * The send CQ of the connection's QPs (borrowed; also their receive CQ unless
 * rv_conn_attr::recv_cq named another), or NULL for an invalid or closed
 * handle.
 */
RV_API rv_cq *rv_conn_cq(const rv_conn *conn);

/**
 * The peer's endpoint for QP @p index: its QP number, PSN, GID, MTU,
 * capabilities and, when the peer advertised one (mask has RV_ENDPOINT_MR),
 * its memory region's address, length and rkey.
 * @retval 0            success
 * @retval -EINVAL      a NULL argument or @p index out of range
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval -ENOTCONN    the exchange has not completed yet
 */
RV_API int rv_conn_peer_endpoint(const rv_conn *conn, uint32_t index, rv_endpoint *ret_ep);

/**
 * For a UD connection: what a send to the peer's QP @p index needs, for
 * rv_send_wr's ah, remote_qpn and remote_qkey. The address handle is new
 * (in the connection's PD, from the peer's GID and LID, this QP's source
 * GID and the connection's traffic class and hop limit; on an rdma_cm
 * client, from the address handle attributes of the SIDR REP's
 * RDMA_CM_EVENT_ESTABLISHED with the connection's traffic class, flow
 * label, SL and hop limit over them where set); the caller owns the
 * reference.
 * @param conn      the connection
 * @param index     the QP, 0..rv_conn_num_qps() - 1
 * @param ret_ah    receives the address handle
 * @param ret_qpn   receives the peer QP's number, or NULL
 * @param ret_qkey  receives the peer QP's Q_Key, or NULL
 * @retval 0            success
 * @retval -EINVAL      a NULL @p conn or @p ret_ah, @p index out of range, or
 *                      the connection's QPs are not UD
 * @retval -RV_ECLOSED  @p conn (or its PD) is closed
 * @retval -ENOTCONN    the exchange has not completed yet
 * @retval negative     creating the address handle failed (rv_ah_new())
 */
RV_API int rv_conn_peer_ah(const rv_conn *conn, uint32_t index, rv_ah **ret_ah, uint32_t *ret_qpn,
			   uint32_t *ret_qkey);

/**
 * Copy the application data the peer sent. With @p buf NULL and @p buf_len 0,
 * only its length is returned.
 * @param conn     the connection
 * @param buf      where to copy it, or NULL
 * @param buf_len  size of @p buf
 * @param ret_len  receives the length of the peer's data
 * @retval 0            success
 * @retval -EINVAL      a NULL @p conn or @p ret_len, or @p buf NULL with a length
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval -ENOTCONN    the exchange has not completed yet
 * @retval -ENOSPC      @p buf is smaller than the data; nothing was written
 */
RV_API int rv_conn_peer_data(const rv_conn *conn, void *buf, size_t buf_len, size_t *ret_len);

/**
 * The peer's address as text ("192.0.2.1:7471", "[2001:db8::1]:7471").
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval -ENOSPC      @p buf is too small (64 bytes always suffice)
 */
RV_API int rv_conn_peer_addr(const rv_conn *conn, char *buf, size_t buf_len);

/**
 * The path MTU both sides use: the minimum of the two ports' active MTUs.
 * @return an rv_mtu, or
 * @retval -EINVAL      @p conn is NULL or not a connection
 * @retval -RV_ECLOSED  @p conn is closed
 * @retval -ENOTCONN    the exchange has not completed yet
 */
RV_API int rv_conn_path_mtu(const rv_conn *conn);

/**
 * Join the UD QP @p qp to the IP multicast group @p group and get what a
 * send to the group needs: an address handle (rv_send_wr::ah), the group's
 * Q_Key (rv_send_wr::remote_qkey) and, always, the destination QPN
 * RV_MCAST_QPN. On a kernel RDMA device the join goes to the fabric with
 * rdma_cm (rdma_join_multicast(): the subnet administrator on InfiniBand,
 * IGMP/MLD on RoCE), and the QP takes the group's Q_Key (rdma_cm's
 * RDMA_UDP_QKEY, 0x01234567, on RoCE) when its own differs. On the software
 * device the group's GID is the IP group (IPv4-mapped for IPv4; the
 * context's address family) and the Q_Key is the QP's. Either way the QP is
 * attached (rv_qp_attach_mcast()): it receives the group's datagrams from
 * then on, once in RTR. The membership holds a reference on @p qp.
 * @param qp          a UD QP in INIT, RTR or RTS
 * @param group       "239.1.2.3", "ff0e::1" (or "[ff0e::1]")
 * @param timeout_ms  how long the fabric's join may take (-1: no limit)
 * @param ret_mcast   receives the membership, for rv_mcast_leave()
 * @param ret_ah      receives the address handle to the group (the caller
 *                    owns the reference)
 * @param ret_qkey    receives the group's Q_Key, or NULL
 * @retval 0              success
 * @retval -EINVAL        a NULL argument, @p qp is not UD or is in RESET or
 *                        ERR, @p group is not an IP multicast address (or,
 *                        on the software device, not of the context's family)
 * @retval -RV_ECLOSED    @p qp is closed
 * @retval -EOPNOTSUPP    the device has no multicast, or is a kernel device
 *                        without rdma_cm
 * @retval -EADDRNOTAVAIL the route to the group leaves through another device
 * @retval -ETIMEDOUT     the fabric did not answer within @p timeout_ms
 * @retval -EHOSTUNREACH  rdma_cm could not resolve a route to the group
 * @retval -EPROTO        the fabric refused the join (MULTICAST_ERROR)
 * @retval -EADDRINUSE    software device: the group's UDP port is held by a
 *                        kernel RoCE device (docs/ud.md)
 * @retval -ENOMEM        out of memory
 * @retval negative       attaching the QP or making the address handle failed
 */
RV_API int rv_mcast_join(rv_qp *qp, const char *group, int timeout_ms, rv_mcast **ret_mcast, rv_ah **ret_ah,
			 uint32_t *ret_qkey);

/**
 * Leave the group: detach the QP (rv_qp_detach_mcast(); nothing to do when
 * the QP is already closed), leave the fabric's group (rdma_leave_multicast())
 * and free the membership, dropping its reference on the QP. Address handles
 * from rv_mcast_join() stay valid until unreferenced.
 * @retval 0        success
 * @retval -EINVAL  @p mcast is NULL
 */
RV_API int rv_mcast_leave(rv_mcast *mcast);

/**
 * The transport the exchange used.
 * @return an rv_conn_transport (never RV_CONN_TRANSPORT_AUTO), or
 * @retval -EINVAL      @p conn is NULL or not a connection
 * @retval -RV_ECLOSED  @p conn is closed
 */
RV_API int rv_conn_transport_of(const rv_conn *conn);

#ifdef __cplusplus
}
#endif

#endif
