/*
 * The private header of the librdmacm-compatible layer (compat/cm-*.c).
 *
 * rdma_cm on soft0: the connection manager's exchange (REQ, REP, RTU, REJ,
 * DREQ, each carrying the QP's number, LID, GID, PSN and the private data)
 * travels over a TCP connection of its own between the two rdma_cm ids,
 * to the port the passive side bound; the QPs themselves connect as soft0's
 * always do, when they move to RTR (ibv_modify_qp with the peer's LID and
 * GID). The layer uses only libibverbs' public API (the compat
 * libibverbs.so.1 beside it serves soft0) and never calls rverbs.
 */
#ifndef RVERBS_COMPAT_CM_H
#define RVERBS_COMPAT_CM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define CM_EXPORT __attribute__((visibility("default")))
#define cm_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* ---- the wire (cm-wire.c): fixed-size messages, all integers big-endian --- */

enum cm_msg_type {
	CM_MSG_REQ = 1,  /* active -> passive: connect, with the QP and private data */
	CM_MSG_REP = 2,  /* passive -> active: accepted, with its QP */
	CM_MSG_RTU = 3,  /* active -> passive: ready to use (both QPs in RTS) */
	CM_MSG_REJ = 4,  /* either way: rejected, with private data */
	CM_MSG_DREQ = 5, /* either way: disconnect */
};

#define CM_PRIVATE_DATA_MAX 196 /* IB CM's largest (REP); REQ carries 56 for RC */

struct cm_msg {
	uint8_t type;         /* an enum cm_msg_type */
	uint8_t qp_type;      /* IBV_QPT_* of the sender's QP */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t rnr_retry_count;
	uint8_t retry_count;
	uint8_t srq;
	uint8_t private_data_len;
	uint32_t qpn;         /* 24 bits */
	uint32_t psn;         /* 24 bits */
	uint32_t qkey;        /* UD */
	uint16_t lid;         /* soft0: the context's TCP port */
	uint8_t gid[16];
	uint8_t private_data[CM_PRIVATE_DATA_MAX];
};

#define CM_MSG_WIRE_LEN (48 + CM_PRIVATE_DATA_MAX) /* cm-wire.c has the layout */

/* Encode into exactly CM_MSG_WIRE_LEN bytes. */
void cm_msg_encode(const struct cm_msg *m, uint8_t *out);
/* Decode and check every field; -EBADMSG for anything malformed. */
int cm_msg_decode(const uint8_t *in, struct cm_msg *m);

/* ---- events (cm-event.c) ---------------------------------------------------- */

struct cm_channel {
	struct rdma_event_channel ch; /* ch.fd: an eventfd counting the queued events */
	pthread_mutex_t lock;
	struct cm_event *head, *tail;
	/* cm-real.c: the system's channel for the channel's real ids (NULL
	 * until the first), watched by the progress thread, which moves its
	 * events into this queue; real_next: the channels that have one. */
	struct rdma_event_channel *real;
	struct cm_channel *real_next;
};

struct cm_event {
	struct rdma_cm_event ev;
	struct cm_event *next;
	struct rdma_cm_event *real; /* a real id's: the system's event, acked with this one */
	uint8_t private_data[CM_PRIVATE_DATA_MAX];
};

/* ---- ids (cm-id.c) ----------------------------------------------------------- */

enum cm_state {
	CM_IDLE,
	CM_ADDR_RESOLVED,
	CM_ROUTE_RESOLVED,
	CM_LISTENING,
	CM_CONNECTING,    /* active: REQ sent, waiting for REP */
	CM_REQ_RECEIVED,  /* passive child: waiting for rdma_accept/rdma_reject */
	CM_ACCEPTED,      /* passive: REP sent, waiting for RTU */
	CM_RESPONDED,     /* active without a QP: REP received, rdma_establish next */
	CM_ESTABLISHED,
	CM_DISCONNECTED,
};

struct cm_id {
	struct rdma_cm_id id;
	enum cm_state state;
	bool sync;              /* created without a channel: calls wait for their event */
	bool bound;
	int fd;                 /* TCP: the listening socket or the connection; -1 */
	uint8_t rbuf[CM_MSG_WIRE_LEN];
	size_t rlen;            /* bytes of the message being received */
	struct cm_msg peer;     /* the peer's REQ or REP */
	uint32_t psn;           /* our QP's first PSN */
	bool cm_made_cqs;       /* rdma_create_qp created the CQs: rdma_destroy_qp frees them */
	uint8_t ack_timeout;    /* RDMA_OPTION_ID_ACK_TIMEOUT: the QP's timeout at RTS; 0: 14 */
	bool disconnect_reported;
	struct ibv_qp_init_attr *ep_qp_attr; /* rdma_create_ep's, for requests of a listener */
	struct ibv_pd *ep_pd;
	struct rdma_cm_id *peer_listener; /* a passive child's listener (NULL once destroyed) */
	struct cm_mc *mcs;      /* multicast groups joined (rdma_join_multicast) */
	struct cm_id *next;     /* every live id, for the progress thread */
	/* cm-real.c: a real device's id (the system's librdmacm's, its context
	 * this cm_id), or NULL for soft0's; the fields of id mirror it. */
	struct rdma_cm_id *real;
	/* A soft0 listener bound to the wildcard address also listens on the
	 * real devices, with this id of the system's (NULL if none). */
	struct rdma_cm_id *real_listener;
};

/* A multicast group an id joined: its address, GID and the program's context. */
struct cm_mc {
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	void *context;
	bool attached;          /* the id's QP was attached to it (a full member) */
	struct cm_mc *next;
};

static inline struct cm_id *cm_id_of(struct rdma_cm_id *id)
{
	return cm_container_of(id, struct cm_id, id);
}

/* The layer's lock: ids, their states and sockets (never held while blocking). */
extern pthread_mutex_t cm_lock;

/* soft0's context, opened once and shared by every id (as librdmacm shares
 * one context per device); NULL with errno when there is none. */
struct ibv_context *cm_verbs(void);
struct ibv_pd *cm_pd(void);

/* Queue an event for an id on its channel (cm_lock held or not). */
int cm_post_event(struct cm_id *c, enum rdma_cm_event_type type, int status,
		  struct rdma_cm_id *listen_id, const struct cm_msg *from_peer);
/* Queue RDMA_CM_EVENT_MULTICAST_JOIN (or _ERROR) for a group: the group's
 * address vector, QP number 0xFFFFFF and Q_Key, the join's context as
 * private_data (as librdmacm). */
int cm_post_mc_event(struct cm_id *c, enum rdma_cm_event_type type, int status, const struct cm_mc *mc);
/* Sync ids: wait for the next event of the id, acknowledge it, and return 0
 * if it was @p want (else -1 with errno from its status). */
int cm_wait(struct cm_id *c, enum rdma_cm_event_type want, struct rdma_cm_id **ret_new_id);
/* Take the events of an id (or of a listener's requests) off a channel that
 * nobody has taken yet: the id is going away. @p dropped sees each. */
void cm_purge_events(struct rdma_event_channel *channel, const struct rdma_cm_id *id,
		     void (*dropped)(struct rdma_cm_event *ev));
struct cm_channel *cm_channel_new(void);
void cm_channel_free(struct cm_channel *ch);

/* cm-verbs.c: QP transitions from the exchanged messages. */
int cm_qp_to_init(struct cm_id *c);
int cm_qp_to_rtr_rts(struct cm_id *c, const struct cm_msg *peer, uint8_t rd_atomic_out,
		     uint8_t rd_atomic_in);
void cm_fill_local(struct cm_id *c, struct cm_msg *m);
/* rdma_destroy_id: forget the id's groups (the QP stays attached until it is
 * destroyed, as with the kernel's rdma_cm). */
void cm_mc_free_all(struct cm_id *c);

/* cm-id.c: an id's message out, an id's end, a random first PSN (24 bits). */
int cm_send(struct cm_id *c, const struct cm_msg *m);
void cm_close_fd(struct cm_id *c);
uint32_t cm_random_psn(void);
/* cm-id.c: is @p c a live id (cm_lock held); watch a real channel's fd
 * (the progress thread calls cm_real_pump when it is readable). */
bool cm_alive(const struct cm_id *c);
void cm_link_id(struct cm_id *c);
void cm_unlink_id(struct cm_id *c);
int cm_watch_channel(struct cm_channel *ch);
void cm_unwatch_channel(struct cm_channel *ch);
/* cm-event.c: queue an event on a channel (any lock but ch->lock). */
int cm_enqueue(struct cm_channel *ch, struct cm_event *e);

/* ---- pass-through to the system's librdmacm (cm-real.c) ------------------- */

#define CM_REAL_FUNCS(X)                                                       \
	X(rdma_create_event_channel)                                           \
	X(rdma_destroy_event_channel)                                          \
	X(rdma_get_cm_event)                                                   \
	X(rdma_ack_cm_event)                                                   \
	X(rdma_create_id)                                                      \
	X(rdma_destroy_id)                                                     \
	X(rdma_bind_addr)                                                      \
	X(rdma_resolve_addr)                                                   \
	X(rdma_resolve_route)                                                  \
	X(rdma_listen)                                                         \
	X(rdma_connect)                                                        \
	X(rdma_accept)                                                         \
	X(rdma_reject)                                                         \
	X(rdma_disconnect)                                                     \
	X(rdma_establish)                                                      \
	X(rdma_migrate_id)                                                     \
	X(rdma_create_qp)                                                      \
	X(rdma_create_qp_ex)                                                   \
	X(rdma_destroy_qp)                                                     \
	X(rdma_set_option)                                                     \
	X(rdma_init_qp_attr)                                                   \
	X(rdma_notify)                                                         \
	X(rdma_join_multicast)                                                 \
	X(rdma_join_multicast_ex)                                              \
	X(rdma_leave_multicast)

struct cm_real {
#define CM_REAL_MEMBER(name) __typeof__(&name) name;
	CM_REAL_FUNCS(CM_REAL_MEMBER)
#undef CM_REAL_MEMBER
	int *(*errno_location)(void);
};

extern struct cm_real cm_real;

/* The system's librdmacm, loaded into the real libibverbs' namespace; false
 * when there is none (no kernel RDMA, RVERBS_COMPAT_REAL=none ...). */
bool cm_real_available(void);
/* After a failed real call: the real library's errno into ours; -1. */
int cm_real_fail(void);
/* Copy the real id's fields the program reads into c->id. */
void cm_real_sync(struct cm_id *c);
/* Decide at rdma_bind_addr: 0 the id became real and is bound, 1 the
 * address is soft0's (no real device serves it), -1 error (errno). */
int cm_real_try_bind(struct cm_id *c, const struct sockaddr *addr);
/* Decide at rdma_resolve_addr (unbound or wildcard-bound id), as above;
 * on 0 the real resolution is under way. */
int cm_real_try_resolve(struct cm_id *c, struct sockaddr *dst, int timeout_ms);
/* A wildcard soft0 listener: listen on the real devices too (best effort). */
void cm_real_listen_too(struct cm_id *c, int backlog);
/* The channel's real part, made on first use (cm_lock held); NULL + errno. */
struct rdma_event_channel *cm_real_channel(struct cm_channel *ch);
/* Progress thread, cm_lock held: move one real event into the channel. */
void cm_real_pump(struct cm_channel *ch);
/* cm_channel_free: drop the channel's real part. */
void cm_real_channel_free(struct cm_channel *ch);

#endif
