/*
 * The private layout of every public handle, shared by the facade (the lib/ sources)
 * and the drivers (lib/drivers/). Nothing here is part of the ABI.
 */
#ifndef RV_PRIVATE_H
#define RV_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include <rverbs/rverbs.h>

#include "core/error.h"
#include "core/object.h"

#define RV_EXPORT __attribute__((visibility("default")))
#define RV_LIKELY(x) __builtin_expect(!!(x), 1)
#define RV_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* A handle as its object header (the header is the first member of each). */
#define RV_OBJ(h) ((struct rv_object *)(void *)(h))
#define RV_COBJ(h) ((const struct rv_object *)(const void *)(h))

struct rv_driver;

struct rv_device {
	struct rv_object obj;
	const struct rv_driver *drv;
	void *drv_dev; /* the driver's device (struct ibv_device *, soft device state) */
	char name[64];
	rv_device_kind kind;
};

struct rv_context {
	struct rv_object obj;
	pthread_mutex_t lock; /* recursive; the graph lock of everything in this context */
	struct rv_device *dev;
	const struct rv_driver *drv;
	void *drv_ctx;
	_Atomic uint64_t next_id;
	pid_t pid; /* the process that created it; a fork child may not use it (core/fork.c) */
};

struct rv_pd {
	struct rv_object obj;
	struct rv_context *ctx;
	void *drv_pd;
	/* A parent domain (lib/pd.c): its parent PD, TD and allocators (each
	 * NULL when not given). parent and td are dependencies. */
	struct rv_pd *parent;
	struct rv_td *td;
	rv_pd_alloc_fn alloc;
	rv_pd_free_fn free;
	void *pd_context;
};

struct rv_td {
	struct rv_object obj;
	struct rv_context *ctx;
	void *drv_td;
};

/* The PD whose protection pd has: its parent for a parent domain, else pd.
 * Facade checks that two objects share a PD compare these. */
static inline struct rv_pd *rv_pd_protection(struct rv_pd *pd)
{
	return pd->parent ? pd->parent : pd;
}

struct rv_mr {
	struct rv_object obj;
	struct rv_pd *pd;
	void *addr;
	size_t length;
	uint32_t access;
	uint32_t lkey;
	uint32_t rkey;
	void *drv_mr;
	void *owned;          /* memory from rv_mr_alloc, freed at release */
	size_t owned_length;
	size_t page_size;     /* as obtained (lib/memory.c) */
	int numa_node;        /* as obtained, -1 unknown */
	/* The sealed memfd behind owned memory (lib/memory.c, rv_mem_req.shareable),
	 * or -1: a driver may hand it to a verified same-host peer (soft0's
	 * one-copy WRITE). Closed at release, after the driver deregistered. */
	int mem_fd;
	bool locked_counted;  /* counted against the memlock limit (lib/memory.c) */
	/* rverbs mapped this memory itself (rv_mr_alloc, a pool's chunk) and
	 * unmaps it only after deregistration: a driver may rely on it being
	 * mapped while registered (soft0 copies it with memcpy, mr.c). */
	bool memory_ours;
	bool dmabuf;          /* rv_mr_reg_dmabuf: addr is the iova; never moved by rv_mr_rereg */
	bool implicit;        /* implicit ODP: addr NULL, length SIZE_MAX, the whole address space */
};

struct rv_comp_channel {
	struct rv_object obj;
	struct rv_context *ctx;
	int fd;       /* set by the driver at create: non-blocking, readable on an event */
	void *drv_ch;
};

struct rv_cq {
	struct rv_object obj;
	/* The data path's entry, cached from ctx->drv->cq_poll (one load
	 * instead of three); lib/cq.c may put a wrapper of its own here. */
	int (*poll)(struct rv_cq *cq, rv_wc *wc, int max);
	struct rv_context *ctx;
	uint32_t cqe; /* actual size, set by the driver */
	void *drv_cq;
	struct rv_comp_channel *channel; /* or NULL; a dependency (strong) */
	_Atomic uint32_t events_taken;   /* by rv_comp_channel_get_event */
	_Atomic uint32_t events_acked;
	struct rv_qp *sig_qps;           /* QPs sending here with a signalling policy (lib/qp_signal.c) */
	uint32_t wait_mode;              /* rv_cq_wait_mode */
	_Atomic uint32_t chan_waiters;   /* threads in rv_cq_wait's blocking part (lib/cq.c) */
	_Atomic uint32_t chan_joins;     /* how many ever entered it */
	uint64_t spin_ns;
	uint32_t wc_flags;               /* rv_cq_wc_flags it was created with (rv_cq_poll_ex) */
};

/* How a QP's source GID was chosen (struct rv_qp's sgid). */
enum rv_sgid_how {
	RV_SGID_NONE = 0,   /* not yet: the first rv_qp_endpoint/connect/gid_index chooses */
	RV_SGID_AUTO = 1,   /* by lib/gid_select.c's rules */
	RV_SGID_CALLER = 2, /* rv_qp_set_gid_index() or RV_CONN_ATTR_GID_INDEX: never changed */
};

struct rv_qp {
	struct rv_object obj;
	/* Data path first: the cached driver entry points and the opaque driver QP. */
	const struct rv_driver *drv;
	/* drv->post_send and drv->post_recv, cached (one load fewer per post);
	 * lib/qp.c may put a wrapper of its own in post_send. */
	int (*post_send)(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);
	/* What rv_qp_post_send calls for exactly one WR: post_send, or the
	 * driver's post_send_one_connected on an RC or UC QP (lib/qp.c). */
	int (*post_send_one)(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);
	int (*post_recv)(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted);
	void *drv_qp;
	/* rv_inline_below(cap.max_inline_data), set with cap by a driver that
	 * decides inline on its data path (the libibverbs driver): the
	 * automatic-inline rule as one compare of the payload length. */
	uint32_t inline_below;
	struct rv_context *ctx;
	struct rv_pd *pd;
	struct rv_cq *send_cq;
	struct rv_cq *recv_cq;
	uint32_t qp_type;
	uint32_t qpn;      /* set by the driver at create */
	uint32_t sq_sig_all;
	uint32_t state;    /* rv_qp_state as last set through rverbs (or by the driver on error) */
	uint32_t init_psn; /* random 24-bit initial send PSN */
	uint8_t port_num;  /* the port chosen at INIT (default 1) */
	uint8_t sgid_how;  /* enum rv_sgid_how: whether sgid is chosen, and by whom */
	rv_gid_entry sgid; /* the GID it advertises and sends from (lib/gid_select.c) */
	rv_qp_cap cap;     /* as read back from the driver after create */
	struct rv_qp_signal *sig; /* the signalling policy, or NULL (lib/qp_signal.c) */
	struct rv_srq *srq; /* or NULL; a dependency (strong) */
	struct rv_wr_builder *wrb; /* rv_qp_wr_* state, or NULL before the first batch (lib/wr_builder.c) */
	struct rv_xrcd *xrcd; /* RV_QPT_XRC_RECV: its domain (a dependency, strong); else NULL */
};

struct rv_srq {
	struct rv_object obj;
	struct rv_context *ctx;
	struct rv_pd *pd;
	void *drv_srq;
	uint32_t max_wr;  /* as the driver made it */
	uint32_t max_sge;
	/* An XRC SRQ (RV_SRQ_INIT_ATTR_XRC): its domain and CQ (dependencies,
	 * strong) and the number the driver gave it; NULL, NULL, 0 otherwise. */
	struct rv_xrcd *xrcd;
	struct rv_cq *cq;
	uint32_t srqn;
};

struct rv_xrcd {
	struct rv_object obj;
	struct rv_context *ctx;
	void *drv_xrcd;
};

struct rv_mw {
	struct rv_object obj;
	struct rv_pd *pd;
	uint32_t type;         /* 1 or 2 */
	_Atomic uint32_t rkey; /* as of the last bind posted */
	struct rv_mr *mr;      /* the MR it depends on, once bound (lib/mw.c) */
	void *drv_mw;
};

struct rv_ah {
	struct rv_object obj;
	struct rv_pd *pd;
	rv_ah_attr attr; /* as created (defaults applied), for rv_ah_query */
	void *drv_ah;
};

/* Next id for a handle in ctx (ids are per context, from 1). */
static inline uint64_t rv_ctx_next_id(struct rv_context *ctx)
{
	return atomic_fetch_add(&ctx->next_id, 1) + 1;
}

/* Total payload of a send WR; used by the drivers for automatic inline. */
static inline uint64_t rv_send_wr_length(const rv_send_wr *wr)
{
	uint64_t n = 0;

	if (RV_LIKELY(wr->num_sge == 1)) /* the usual case, without the loop */
		return wr->sg_list[0].length;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		n += wr->sg_list[i].length;
	return n;
}

/* Payloads shorter than this fit a QP whose max_inline_data is max_inline:
 * max_inline + 1, or 0 (nothing fits) when the QP has no inline room, so
 * that rv_send_wr_inline's "length <= max_inline_data, and the QP has inline
 * room" is one unsigned compare. A limit of UINT32_MAX (no device has one)
 * is taken as UINT32_MAX - 1. */
static inline uint32_t rv_inline_below(uint32_t max_inline)
{
	if (max_inline == 0)
		return 0;
	return max_inline == UINT32_MAX ? UINT32_MAX : max_inline + 1;
}

/* Whether a send WR goes inline: the caller asked, or it fits the QP's
 * max_inline_data and the caller did not forbid it. Only SENDs and WRITEs. */
static inline bool rv_send_wr_inline(const struct rv_qp *qp, const rv_send_wr *wr)
{
	if (wr->opcode != RV_WR_SEND && wr->opcode != RV_WR_SEND_WITH_IMM &&
	    wr->opcode != RV_WR_RDMA_WRITE && wr->opcode != RV_WR_RDMA_WRITE_WITH_IMM &&
	    wr->opcode != RV_WR_SEND_WITH_INV)
		return false;
	if (wr->send_flags & RV_SEND_INLINE)
		return true;
	if (wr->send_flags & RV_SEND_NO_INLINE || qp->cap.max_inline_data == 0)
		return false;
	return rv_send_wr_length(wr) <= qp->cap.max_inline_data;
}

/*
 * The checks every driver makes on a UD send WR (lib/ah.c): an AH that is
 * live and of the QP's PD, a 24-bit remote_qpn, a SEND opcode. 0, or a
 * negative errno with the message naming wrs[i]. Hot path: loads only.
 */
int rv_ud_wr_check(const struct rv_qp *qp, const rv_send_wr *wr, size_t i);

/* The routing of a connected QP beyond its peer's endpoint (the connection
 * helper's rv_conn_attr fields): mask names the fields set, the rest keep
 * rv_qp_connect's defaults. */
enum rv_route_mask {
	RV_ROUTE_TRAFFIC_CLASS = 1u << 0,
	RV_ROUTE_SL = 1u << 1,
	RV_ROUTE_FLOW_LABEL = 1u << 2,
	RV_ROUTE_HOP_LIMIT = 1u << 3,
	RV_ROUTE_ACK_TIMEOUT = 1u << 4,
};
struct rv_route {
	uint32_t mask;
	uint32_t flow_label;
	uint8_t traffic_class, sl, hop_limit, ack_timeout;
};

/* rv_qp_connect with route (NULL: the defaults) applied to the RTR address
 * vector and the RTS timeout (lib/qp.c). */
int rv_qp_connect_route(struct rv_qp *qp, const rv_endpoint *peer, const struct rv_route *route);

/* Random bytes from the kernel (getrandom(), else /dev/urandom): 0, or -EIO
 * (logged) when it gives none; never a guessable fallback. */
int rv_random_bytes(void *buf, size_t len) __attribute__((warn_unused_result));

#endif
