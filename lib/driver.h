/*
 * The internal driver interface. The facade (the lib/ sources) validates arguments,
 * keeps the ownership graph and calls these ops; a driver never sees a NULL,
 * closed or foreign handle, an unknown mask bit, or an illegal QP transition.
 *
 * Conventions for every op:
 * - return 0 (or a count) on success, a negative errno on failure;
 * - on failure, set the message with rv_err(errnum, "rv_xxx", ...) naming the
 *   cause and a hint; if the driver sets none, the facade adds a generic one;
 * - a destroy op that fails must leave the resource intact so the close can
 *   be retried;
 * - create ops store their private object in the handle's drv_* field and
 *   fill the fields documented below.
 */
#ifndef RV_DRIVER_H
#define RV_DRIVER_H

#include "rverbs-private.h"

typedef int (*rv_driver_add_fn)(void *cookie, const char *name, void *drv_dev);

struct rv_driver {
	const char *name; /* "ibv", "soft" */
	rv_device_kind kind;
	/* rv_mr_alloc's default pages: a memfd the driver can share with a
	 * same-host peer rather than transparent huge pages (lib/memory.h,
	 * share_over_thp). */
	bool prefers_shared_memory;

	/* Discovery: call add() once per device. A driver with no devices returns 0. */
	int (*probe)(rv_driver_add_fn add, void *cookie);
	void (*device_release)(void *drv_dev);
	/* True when the device has at least one active port (default-device rule). */
	bool (*device_active)(void *drv_dev);

	/* ctx->dev is set; attr has defaults applied (listen_addr never NULL). */
	int (*context_open)(struct rv_context *ctx, const rv_context_attr *attr);
	int (*context_close)(struct rv_context *ctx);
	/* Fill every field of rv_device_attr (the RV_DEVICE_ATTR_EX ones too) /
	 * rv_port_attr; the facade handles masks. */
	int (*query_device)(struct rv_context *ctx, rv_device_attr *attr);
	int (*query_port)(struct rv_context *ctx, uint8_t port_num, rv_port_attr *attr);
	int (*query_gid)(struct rv_context *ctx, uint8_t port_num, int index, uint8_t gid[16]);
	/* Fill gid, gid_type and ndev_ifindex (the facade sets the rest). May be NULL (-EOPNOTSUPP). */
	int (*query_gid_entry)(struct rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *e);
	/* The P_Key in host byte order. May be NULL (-EOPNOTSUPP). */
	int (*query_pkey)(struct rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *pkey);

	/* A parent domain has pd->parent set (an ordinary, live PD of the
	 * context), and td, alloc, free, pd_context when given. */
	int (*pd_alloc)(struct rv_pd *pd);
	int (*pd_dealloc)(struct rv_pd *pd);
	/* Thread domains; fill td->drv_td. NULL: the device has none (-EOPNOTSUPP). */
	int (*td_alloc)(struct rv_td *td);
	int (*td_dealloc)(struct rv_td *td);
	/* rv_qp_query_ece / rv_qp_set_ece (comp_mask checked 0). NULL: -EOPNOTSUPP. */
	int (*qp_query_ece)(struct rv_qp *qp, rv_ece *ece);
	int (*qp_set_ece)(struct rv_qp *qp, const rv_ece *ece);
	/* rv_qp_set_rate_limit (mask checked, the rate set). NULL: -EOPNOTSUPP. */
	int (*qp_set_rate_limit)(struct rv_qp *qp, const rv_qp_rate_limit_attr *attr);

	/* mr->pd, addr, length, access are set; fill lkey, rkey, drv_mr. */
	int (*mr_reg)(struct rv_mr *mr);
	int (*mr_dereg)(struct rv_mr *mr);
	/* rv_mr_reg_dmabuf: mr->pd, addr (the iova), length, access are set
	 * and mr->dmabuf is true; fd is a dma-buf (checked), valid during the
	 * call only. Fill lkey, rkey, drv_mr; mr_dereg releases it. NULL: the
	 * device has none (-EOPNOTSUPP). */
	int (*mr_reg_dmabuf)(struct rv_mr *mr, uint64_t offset, int fd);
	/* Re-register mr with pd, addr, length, access (all given, changed or not;
	 * flags says which changed, checked). Update mr->lkey, rkey, drv_mr; the
	 * facade updates the rest on success. May be NULL (-EOPNOTSUPP). */
	int (*mr_rereg)(struct rv_mr *mr, uint32_t flags, struct rv_pd *pd, void *addr, size_t length,
			uint32_t access);
	/* rv_mr_advise: advice and flags known, n ≥ 1, each SGE of length ≥ 1
	 * (checked). Check each lkey (an MR of pd: -ENOENT, -EPERM, -EFAULT as
	 * ibv_advise_mr) and carry the advice out. NULL: no advice (-EOPNOTSUPP). */
	int (*mr_advise)(struct rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sge, uint32_t n);

	/* attr has defaults applied; fill cq->cqe (actual size) and drv_cq. A
	 * driver may put its own rv_cq_poll entry for this CQ in cq->poll. */
	int (*cq_create)(struct rv_cq *cq, const rv_cq_attr *attr);
	int (*cq_destroy)(struct rv_cq *cq);
	/* cqe ≥ 1; keep every completion in the CQ, in order, or refuse (a size
	 * below the entries it holds: -EINVAL). Update cq->cqe. May be NULL. */
	int (*cq_resize)(struct rv_cq *cq, uint32_t cqe);
	/* Data path: max ≥ 1, wc non-NULL. */
	int (*cq_poll)(struct rv_cq *cq, rv_wc *wc, int max);
	/* rv_cq_poll_ex on a CQ created with wc_flags (cq->wc_flags nonzero;
	 * cq_create refused the flags it cannot give): as cq_poll, and the
	 * extended fields cq->wc_flags names. Write every field of each
	 * rv_wc_ex. The facade polls a CQ without wc_flags with cq->poll
	 * itself. NULL: the device accepts no wc_flags (rv_cq_new says so). */
	int (*cq_poll_ex)(struct rv_cq *cq, rv_wc_ex *wc, int max);
	/* rv_context_read_clock: the raw clock completion timestamps count in.
	 * NULL: the device has none (-EOPNOTSUPP). */
	int (*read_clock)(struct rv_context *ctx, uint64_t *raw);

	/* Completion channels (rv_comp_channel_new). Fill ch->fd (non-blocking,
	 * readable while an event waits) and drv_ch. cq_create gets attr->channel
	 * (live, of the same context) when RV_CQ_ATTR_CHANNEL is set. */
	int (*comp_channel_create)(struct rv_comp_channel *ch);
	int (*comp_channel_destroy)(struct rv_comp_channel *ch);
	/* Arm cq (it has a channel): the next (solicited) completion fires one event. */
	int (*cq_req_notify)(struct rv_cq *cq, bool solicited_only);
	/* Take one event without blocking: 0 and *ret_cq, or -EAGAIN. Called with
	 * the graph lock held; the facade waits on ch->fd itself. */
	int (*comp_channel_get_event)(struct rv_comp_channel *ch, struct rv_cq **ret_cq);
	/* Acknowledge n events taken for cq (the facade counts them); also called
	 * before cq_destroy with what the caller left unacknowledged. */
	void (*cq_ack_events)(struct rv_cq *cq, unsigned int n);
	/* May be NULL. rv_cq_wait's blocking step for cq (it has a channel and
	 * polled empty): arm it, wait until a completion may be there, ch->fd is
	 * readable or deadline_ns (CLOCK_MONOTONIC, -1: none) passes, moving data
	 * in the calling thread if the driver likes. 1: the channel may hold an
	 * event (the facade takes it without blocking), 0: poll again,
	 * -ETIMEDOUT, -EINTR, -EOPNOTSUPP: not now (the facade arms the CQ and
	 * waits on ch->fd). */
	int (*cq_block)(struct rv_cq *cq, int64_t deadline_ns);

	/* qp->pd, send_cq, recv_cq, qp_type, sq_sig_all are set; attr has defaults
	 * applied. Fill qp->qpn, qp->cap (read back) and drv_qp. */
	int (*qp_create)(struct rv_qp *qp, const rv_qp_init_attr *attr);
	int (*qp_destroy)(struct rv_qp *qp);
	/* attr has been validated against the state table (lib/qp_state.c); on
	 * success the facade records attr->qp_state in qp->state. */
	int (*qp_modify)(struct rv_qp *qp, const rv_qp_attr *attr);
	/* Fill the fields named in attr->mask. qp_state must be current: a driver
	 * whose QP moved to ERR by itself reports RV_QPS_ERR. */
	int (*qp_query)(struct rv_qp *qp, rv_qp_attr *attr);
	/* Data path: wrs non-NULL, n ≥ 1, n_posted non-NULL and set on every
	 * return (the facade passes the caller's pointer through). Apply
	 * automatic inline with rv_send_wr_inline(). */
	int (*post_send)(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);
	int (*post_recv)(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted);
	/* True: post_send and post_recv also take a NULL n_posted (the
	 * caller's, passed through as it is); false: the facade gives them a
	 * pointer of its own when the caller passes NULL (lib/qp.c). */
	bool post_n_posted_may_be_null;
	/* Optional: post_send for exactly one WR (n == 1) on a QP of a
	 * connected type (RC, UC), which may leave out the tests for batches
	 * and UD; lib/qp.c caches it in those QPs (with
	 * post_n_posted_may_be_null only) for rv_qp_post_send's one-WR posts.
	 * NULL: post_send for those too. */
	int (*post_send_one_connected)(struct rv_qp *qp, const rv_send_wr *wrs, size_t n,
				       size_t *n_posted);

	/* Address handles (rv_ah_new). ah->pd and ah->attr (validated, defaults
	 * applied) are set; fill drv_ah. NULL: the device has none (-EOPNOTSUPP). */
	int (*ah_create)(struct rv_ah *ah);
	int (*ah_destroy)(struct rv_ah *ah);
	/* rv_ah_from_wc: the address vector that answers the sender of wc (a
	 * successful receive; grh non-NULL when wc has RV_WC_GRH). May be NULL:
	 * the facade then reads the GRH itself (lib/ah.c). */
	int (*ah_attr_from_wc)(struct rv_context *ctx, uint8_t port_num, const rv_wc *wc,
			       const void *grh, rv_ah_attr *attr);
	/* Fault injection (rv_soft_fault_inject; arguments checked by the facade,
	 * qp NULL or of ctx). NULL: the device has none (-EOPNOTSUPP). */
	int (*fault_inject)(struct rv_context *ctx, struct rv_qp *qp, uint32_t kind, uint32_t count,
			    uint32_t delay_ms);
	/* rv_soft_qp_path: which path qp's traffic takes now, an rv_soft_path
	 * value (qp checked by the facade; read-only). NULL: the device has no
	 * such paths (-EOPNOTSUPP). */
	int (*qp_path)(struct rv_qp *qp, uint32_t *path);
	/* Shared receive queues (rv_srq_new). srq->pd is set; attr has defaults
	 * applied and is validated against the device caps. Fill srq->max_wr,
	 * max_sge (actual) and drv_srq. qp_create gets attr->srq (live, same PD)
	 * with RV_QP_INIT_ATTR_SRQ; post_recv is never called on such a QP. */
	int (*srq_create)(struct rv_srq *srq, const rv_srq_attr *attr);
	/* XRC (rverbs/xrcd.h). NULL: the device has no XRC (-EOPNOTSUPP), and
	 * the facade then refuses XRC SRQs and XRC QP types. xrcd_open fills
	 * drv_xrcd. An XRC SRQ reaches srq_create with srq->xrcd and srq->cq set
	 * (live, same context); the driver fills srq->srqn. qp_create gets an
	 * RV_QPT_XRC_RECV QP with attr->xrcd set (live) and no CQ (send_cq and
	 * recv_cq NULL, cap zero); an RV_QPT_XRC_SEND QP with cap.max_recv_wr 0
	 * and no SRQ. post_send on an XRC_SEND QP takes wr->remote_srqn. */
	int (*xrcd_open)(struct rv_xrcd *xrcd);
	int (*xrcd_close)(struct rv_xrcd *xrcd);
	int (*srq_destroy)(struct rv_srq *srq);
	/* attr->mask is RV_SRQ_LIMIT and/or RV_SRQ_MAX_WR, checked. */
	int (*srq_modify)(struct rv_srq *srq, const rv_srq_attr *attr);
	int (*srq_query)(struct rv_srq *srq, rv_srq_attr *attr);
	/* Data path: wrs non-NULL, n ≥ 1, n_posted non-NULL. */
	int (*post_srq_recv)(struct rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted);

	/* Asynchronous events (rverbs/event.h). async_fd: the context's event
	 * descriptor (non-blocking, readable while an event waits). get_async_event:
	 * take one event without blocking (0, or -EAGAIN), called with the graph
	 * lock held; fill type, port_num and the handle it names (borrowed, live:
	 * a driver drops the queued events of a QP/CQ/SRQ when it destroys it and
	 * never makes the facade's close wait for an event). Either may be NULL. */
	int (*async_fd)(struct rv_context *ctx);
	int (*get_async_event)(struct rv_context *ctx, rv_async_event *ev);

	/* Memory windows (rverbs/mw.h). mw_alloc: mw->pd and type are set; fill
	 * mw->rkey and drv_mw. mw_bind: post the bind on qp's send queue (qp, mw
	 * and info->mr live, same PD, range and access checked); *new_rkey is the
	 * window's rkey once bound (ibv_inc_rkey of the current one); a driver
	 * whose device picks the key itself writes it back. NULL: the device has
	 * none (-EOPNOTSUPP). */
	int (*mw_alloc)(struct rv_mw *mw);
	int (*mw_dealloc)(struct rv_mw *mw);
	int (*mw_bind)(struct rv_qp *qp, struct rv_mw *mw, const rv_mw_bind_info *info, uint32_t *new_rkey,
		       uint64_t wr_id, uint32_t send_flags);

	/* Multicast (rv_qp_attach_mcast): qp is a live UD QP, gid a multicast
	 * GID (checked by the facade). Attaching twice is not an error; detaching
	 * a QP that is not attached is -EINVAL. NULL: the device has no
	 * multicast (-EOPNOTSUPP). */
	int (*mcast_attach)(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid);
	int (*mcast_detach)(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid);

	/* Escape hatch: the struct ibv_* behind a handle, or NULL. May be NULL. */
	void *(*raw)(struct rv_object *obj);

	/* The context's shared secret (rv_context_attr.auth_secret) for the
	 * connection helper's exchange, without handing the key out: 1 with
	 * out = HMAC-SHA256(secret, msg), 0 when the context has no secret.
	 * May be NULL (no device of the driver has a secret). */
	int (*auth_mac)(struct rv_context *ctx, const void *msg, size_t len, uint8_t out[32]);
};

/* A device handle served by drv, outside discovery: for tests with a mock
 * driver. Not exported from the shared library. */
int rv_device_new_internal(const struct rv_driver *drv, const char *name, void *drv_dev,
			   rv_device **ret_dev);

/* The drivers built in (NULL when a driver is disabled at build time). */
extern const struct rv_driver rv_driver_ibv;
extern const struct rv_driver rv_driver_soft;

#endif
