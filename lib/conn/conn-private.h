/*
 * The connection helper's private layout, shared by the sources in lib/conn.
 *
 * Locking: a connection or a listener is used by one thread at a time (as a
 * socket would be); the graph lock is taken only to add dependencies. Waits
 * never hold a lock.
 */
#ifndef RV_CONN_PRIVATE_H
#define RV_CONN_PRIVATE_H

#include <rverbs/conn.h>

#include "rverbs-private.h"
#include "conn/sock.h"

/* A validated copy of an rv_conn_attr, with defaults applied. */
struct rv_conn_opts {
	uint64_t mask;
	struct rv_pd *pd;
	struct rv_cq *send_cq, *recv_cq;
	struct rv_qp *qps[RV_CONN_MAX_QPS];
	bool caller_qps;
	uint32_t num_qps; /* 0: not set (client default 1; server: the client's) */
	uint32_t qp_type;
	bool has_cap;
	rv_qp_cap cap;
	bool has_mr;
	uint64_t mr_addr, mr_length;
	uint32_t mr_rkey;
	const void *data;
	uint32_t data_len;
	uint32_t required_caps;
	uint32_t transport;
	bool cm; /* rdma_cm drives the QP transitions: leave the QPs in RESET */
	bool has_gid_index;
	uint32_t gid_index;
	struct rv_route route;        /* traffic class, SL, flow label, hop limit, ACK timeout */
	uint32_t resolve_timeout_ms;  /* rdma_cm, per attempt; 0: not set */
	uint32_t resolve_retries;
	uint32_t qkey;                /* UD: the Q_Key of QPs moved to INIT here */
};

enum rv_conn_phase {
	RV_PH_TCP_CONNECTING = 1, /* client: non-blocking connect in progress */
	RV_PH_WAIT_REP,           /* client: REQ sent */
	RV_PH_WAIT_RTU,           /* server: REP sent */
	RV_PH_ESTABLISHED,
	RV_PH_DONE,               /* disconnected or failed; fd closed */
	RV_PH_WAIT_CHALLENGE,     /* client with a secret: AUTH HELLO sent, REQ held back */
};

struct rv_cm_conn;

struct rv_conn {
	struct rv_object obj;
	struct rv_context *ctx;
	uint32_t state;     /* rv_conn_state */
	uint32_t transport; /* rv_conn_transport in use */
	int phase;          /* enum rv_conn_phase */
	bool server;
	bool published;     /* its dependencies are registered: closed through the graph */
	int fd;             /* TCP control channel, or the rdma_cm event channel */
	int error;          /* negative errno of a failed rv_connect_start() */
	char peer_addr[RV_ADDR_STR_MAX];
	struct rv_msg_rx *rx;
	uint8_t *out;       /* client: the encoded REQ */
	size_t out_len;

	uint32_t num_qps;
	struct rv_qp *qps[RV_CONN_MAX_QPS]; /* a reference on each */
	bool own_qps;                       /* created here: closed with the connection */
	struct rv_pd *own_pd;               /* created here, or NULL */
	struct rv_cq *own_cq;               /* created here, or NULL */
	uint32_t required_caps;
	struct rv_route route; /* applied by rv_qp_connect_route */
	rv_endpoint local[RV_CONN_MAX_QPS];
	uint32_t local_qkey[RV_CONN_MAX_QPS]; /* UD: our QPs' Q_Keys, told to the peer */
	uint32_t peer_qkey[RV_CONN_MAX_QPS];  /* UD: the peer's */
	bool have_peer_av;                    /* rdma_cm UD client: the SIDR REP's address handle */
	rv_ah_attr peer_av;

	bool have_peer;
	rv_endpoint peer[RV_CONN_MAX_QPS];
	uint8_t *peer_data;
	uint32_t peer_data_len;
	uint32_t path_mtu;

	struct rv_cm_conn *cm; /* rdma_cm transport state, or NULL */

	/* trust.c: the shared secret over the exchange (client side). */
	bool auth;                                  /* the context has a secret */
	bool have_rep_mac;                          /* the server's AUTH REP_MAC arrived */
	uint8_t auth_nc[RV_WIRE_AUTH_NONCE_LEN];     /* our nonce */
	uint8_t auth_ns[RV_WIRE_AUTH_NONCE_LEN];     /* the server's */
	uint8_t rep_mac[RV_WIRE_AUTH_MAC_LEN];
};

/* conn.c */
int rv_conn_opts_parse(struct rv_context *ctx, const rv_conn_attr *attr, struct rv_conn_opts *o,
		       const char *func);
/* A connection object with its QPs in INIT and local endpoints filled. */
int rv_conn_create(struct rv_context *ctx, const struct rv_conn_opts *o, uint32_t num_qps, bool server,
		   struct rv_conn **ret, const char *func);
/* Make the QPs advertise the GID of the control socket fd's local address
 * (the address the peer reached us at, as rdma_cm's route would), unless
 * the caller chose their GID, and refresh the local endpoints. Hardware
 * devices only; *changed tells whether an endpoint's GID changed. */
int rv_conn_local_gids(struct rv_conn *c, int fd, bool *changed, const char *func);
/* Check the peer's HELLO against ours (names every mismatch), keep its
 * endpoints and data, and connect the QPs (RTR, RTS). */
int rv_conn_apply_peer(struct rv_conn *c, const struct rv_wire_hello *h, const char *func);
/* Fill a HELLO from the connection's local endpoints and the options. */
void rv_conn_hello(const struct rv_conn *c, const struct rv_conn_opts *o, struct rv_wire_hello *h);
/* Move every live QP to ERR (flushing its work). */
void rv_conn_qps_to_err(struct rv_conn *c);
/* -ECONNABORTED (named) when a QP of c is already in the error state: a
 * connection is never reported established with a dead QP. */
int rv_conn_check_qps_alive(const struct rv_conn *c, const char *func);
/* Close and unreference a connection that never reached the caller,
 * keeping the thread's error message. */
void rv_conn_discard(struct rv_conn *c);

/* trust.c: the shared secret and the peer's address. */
/* Whether ctx has a shared secret (rv_context_attr.auth_secret). */
bool rv_conn_has_secret(struct rv_context *ctx);
/* HMAC-SHA256(secret, "rverbs-conn-" role || nc || ns || hdr || payload):
 * role 'S' the server's proof (hdr NULL, len 0), 'Q' a REQ, 'P' a REP (hdr:
 * its RV_WIRE_HDR_LEN header bytes). Only with a secret. */
void rv_conn_auth_mac(struct rv_context *ctx, char role, const uint8_t nc[RV_WIRE_AUTH_NONCE_LEN],
		      const uint8_t ns[RV_WIRE_AUTH_NONCE_LEN], const uint8_t *hdr, const uint8_t *payload,
		      size_t len, uint8_t out[RV_WIRE_AUTH_MAC_LEN]);
/* Equal in time independent of where two MACs differ. */
bool rv_conn_mac_equal(const uint8_t *a, const uint8_t *b);
/* Send an AUTH message (nonce, mac may be NULL: zeros). */
int rv_conn_send_auth(int fd, uint8_t step, const uint8_t *nonce, const uint8_t *mac, int64_t deadline,
		      const char *peer, const char *func);
/* -EADDRNOTAVAIL (named, with the fix) when this context's soft0 GID is a
 * loopback or unspecified address and the control socket fd's peer is not
 * on this host: the peer could not reach our QPs. */
int rv_conn_check_own_addr(struct rv_context *ctx, int fd, const char *peer, const char *func);
/* -EACCES (named) unless every endpoint of h names the address of the
 * control socket fd's peer, or both are this host (software device only). */
int rv_conn_check_peer_addr(struct rv_context *ctx, int fd, const struct rv_wire_hello *h, const char *peer,
			    const char *func);

/* cm.c: the rdma_cm transport. */
struct rv_cm_listener;
bool rv_cm_usable(struct rv_context *ctx);
int rv_cm_listen(struct rv_context *ctx, const char *addr, uint32_t backlog, struct rv_cm_listener **ret,
		 int *ret_port, int *ret_fd, const char *func);
void rv_cm_listener_destroy(struct rv_cm_listener *cml);
/* Handle the listener's pending rdma_cm events: 1 with *ret established, 0
 * nothing complete, < 0 a client failed (named). */
int rv_cm_listener_event(struct rv_cm_listener *cml, const struct rv_conn_opts *o, uint32_t hs_timeout_ms,
			 struct rv_conn **ret, const char *func);
/* Drop the first client whose exchange is overdue: its error, or 0. */
int rv_cm_listener_expire(struct rv_cm_listener *cml, const char *func);
int rv_cm_connect(struct rv_context *ctx, const char *addr, const struct rv_conn_opts *o, int timeout_ms,
		  struct rv_conn **ret, const char *func);
void rv_cm_conn_destroy(struct rv_conn *c);
int rv_cm_conn_poll(struct rv_conn *c, int timeout_ms, uint32_t *ret_event, const char *func);
int rv_cm_conn_disconnect(struct rv_conn *c, int timeout_ms, const char *func);

#endif
