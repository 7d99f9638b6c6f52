/*
 * Queue pairs of the software device: creation, the state machine as the
 * facade drives it, and posting. UD QPs share creation and the receive
 * queue; their sends and receives are ud.c's. In-order completion and the
 * error path (soft_sq_complete, soft_qp_fail) are completion.c's.
 *
 * Posting: rv_qp_post_send copies the WRs (and inline payloads) into the send
 * queue and transmits directly in the calling thread (tx.c) under q->lock; the
 * progress thread continues on EPOLLOUT. rv_qp_post_recv only queues, and
 * wakes the progress thread through the eventfd when a SEND is waiting for a
 * receive WR. The data path takes q->lock (uncontended unless the progress
 * thread is receiving on this QP) and makes syscalls only to transmit.
 *
 * QP numbers come from a per-process counter that starts at a random 24-bit
 * base, so they are unique within the process and vary between runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/completion.h"
#include "rverbs/soft.h"
#include "qp_state.h"

static _Atomic uint32_t qpn_counter;
static uint32_t qpn_base;
static bool qpn_ok;
static pthread_once_t qpn_once = PTHREAD_ONCE_INIT;

/* A random start, so that a peer cannot guess the QPNs of a process. */
static void qpn_init(void)
{
	qpn_ok = rv_random_bytes(&qpn_base, sizeof(qpn_base)) == 0;
}

static uint32_t next_qpn(void)
{
	uint32_t n;

	pthread_once(&qpn_once, qpn_init);
	do
		n = (qpn_base + atomic_fetch_add(&qpn_counter, 1)) & 0xffffff;
	while (n < 2); /* 0 and 1 are special QPs in verbs */
	return n;
}

static void set_state(struct soft_qp *q, uint32_t st)
{
	atomic_store(&q->state, st);
}

/*
 * The five work-queue buffers of a QP come from its parent domain's allocator
 * when it has one (rv_pd_attr.alloc, resource type RV_SOFT_RES_TYPE_QP), as
 * ibv_alloc_parent_domain lets a provider do; an allocator that answers
 * RV_PD_ALLOCATOR_USE_DEFAULT, and a PD without one, get calloc. Bit i of
 * qbuf_user says which of them to give back to the parent domain's free.
 */
enum { QBUF_SQ, QBUF_SQ_SGE, QBUF_SQ_INLINE, QBUF_RQ, QBUF_RQ_SGE };

static void *qbuf_alloc(struct soft_qp *q, int which, size_t n, size_t size)
{
	struct rv_pd *pd = q->qp->pd;
	void *p;

	if (pd->alloc) {
		/* n * size cannot overflow: both are bounded by soft0's caps. */
		p = pd->alloc(pd, pd->pd_context, n * size, 64, RV_SOFT_RES_TYPE_QP);
		if (p != RV_PD_ALLOCATOR_USE_DEFAULT) {
			if (p) {
				memset(p, 0, n * size); /* the queues start zeroed, as with calloc */
				q->qbuf_user |= (uint8_t)(1u << which);
			}
			return p;
		}
	}
	return calloc(n, size);
}

static void qbuf_free(struct soft_qp *q, int which, void *p)
{
	struct rv_pd *pd = q->qp->pd;

	if (p && (q->qbuf_user & (1u << which)))
		pd->free(pd, pd->pd_context, p, RV_SOFT_RES_TYPE_QP);
	else
		free(p);
}

static void qp_free(struct soft_qp *q)
{
	qbuf_free(q, QBUF_SQ, q->sq);
	qbuf_free(q, QBUF_SQ_SGE, q->sq_sge);
	qbuf_free(q, QBUF_SQ_INLINE, q->sq_inline);
	qbuf_free(q, QBUF_RQ, q->rq);
	qbuf_free(q, QBUF_RQ_SGE, q->rq_sge);
	free(q->srq_wqe.sge);
	free(q);
}

int soft_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr)
{
	static const char *const fn = "rv_qp_new";
	struct soft_ctx *sc = qp->ctx->drv_ctx;
	const rv_qp_cap *cap = &attr->cap;
	struct soft_qp *q;
	int rc;

	if (attr->qp_type != RV_QPT_RC && attr->qp_type != RV_QPT_UC && attr->qp_type != RV_QPT_UD &&
	    attr->qp_type != RV_QPT_XRC_SEND && attr->qp_type != RV_QPT_XRC_RECV)
		return rv_err(EOPNOTSUPP, fn, "soft0 supports RC, UC, UD and XRC QPs (qp_type %u)", attr->qp_type);
	if (attr->qp_type == RV_QPT_UD && !sc->ud)
		return rv_err(EOPNOTSUPP, fn, "this soft0 context has no UDP side for UD QPs: it listens on "
			      "the wildcard address; open it on a specific address (rv_context_attr.listen_addr)");
	if (cap->max_send_wr > SOFT_MAX_QP_WR || cap->max_recv_wr > SOFT_MAX_QP_WR)
		return rv_err(EINVAL, fn, "cap.max_send_wr %u / max_recv_wr %u exceed soft0's max_qp_wr %u",
			      cap->max_send_wr, cap->max_recv_wr, SOFT_MAX_QP_WR);
	if (cap->max_send_sge > SOFT_MAX_SGE || cap->max_recv_sge > SOFT_MAX_SGE)
		return rv_err(EINVAL, fn, "cap.max_send_sge %u / max_recv_sge %u exceed soft0's max_sge %u",
			      cap->max_send_sge, cap->max_recv_sge, SOFT_MAX_SGE);
	if (cap->max_inline_data > SOFT_MAX_INLINE)
		return rv_err(EINVAL, fn, "cap.max_inline_data %u exceeds soft0's limit of %u bytes",
			      cap->max_inline_data, SOFT_MAX_INLINE);
	pthread_once(&qpn_once, qpn_init);
	if (!qpn_ok)
		return rv_err(EIO, fn, "soft0 needs random bytes from the kernel for its QP numbers, and got none "
			      "(getrandom(2) and /dev/urandom failed)");
	q = calloc(1, sizeof(*q));
	if (!q)
		return rv_err(ENOMEM, fn, "out of memory for the QP");
	q->qp = qp;
	q->sc = sc;
	if (attr->srq || attr->qp_type == RV_QPT_XRC_RECV) {
		/* An XRC target's SRQ changes with each message (rx.c): room for any. */
		q->srq = attr->srq ? attr->srq->drv_srq : NULL;
		q->srq_wqe.sge = calloc(q->srq ? q->srq->max_sge : SOFT_MAX_SGE, sizeof(rv_sge));
		if (!q->srq_wqe.sge) {
			free(q);
			return rv_err(ENOMEM, fn, "out of memory for the QP");
		}
	}
	q->sq_size = cap->max_send_wr ? cap->max_send_wr : 1;
	q->rq_size = cap->max_recv_wr ? cap->max_recv_wr : 1;
	q->max_send_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	q->max_recv_sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	q->max_inline = cap->max_inline_data > SOFT_MIN_INLINE ? cap->max_inline_data : SOFT_MIN_INLINE;
	q->sq_mask = soft_pow2_at_least(q->sq_size) - 1;
	q->rq_mask = soft_pow2_at_least(q->rq_size) - 1;
	q->sq = qbuf_alloc(q, QBUF_SQ, (size_t)q->sq_mask + 1, sizeof(*q->sq));
	q->sq_sge = qbuf_alloc(q, QBUF_SQ_SGE, ((size_t)q->sq_mask + 1) * q->max_send_sge, sizeof(*q->sq_sge));
	q->sq_inline = qbuf_alloc(q, QBUF_SQ_INLINE, (size_t)q->sq_mask + 1, q->max_inline);
	q->rq = qbuf_alloc(q, QBUF_RQ, (size_t)q->rq_mask + 1, sizeof(*q->rq));
	q->rq_sge = qbuf_alloc(q, QBUF_RQ_SGE, ((size_t)q->rq_mask + 1) * q->max_recv_sge, sizeof(*q->rq_sge));
	soft_lock_init(&q->lock);
	if (!q->sq || !q->sq_sge || !q->sq_inline || !q->rq || !q->rq_sge) {
		uint32_t ns = q->sq_size, nr = q->rq_size;
		qp_free(q);
		return rv_err(ENOMEM, fn, "out of memory for the QP's queues (%u send, %u receive WRs)",
			      ns, nr);
	}
	for (uint32_t i = 0; i <= q->sq_mask; i++) {
		q->sq[i].sge = &q->sq_sge[(size_t)i * q->max_send_sge];
		q->sq[i].inline_data = &q->sq_inline[(size_t)i * q->max_inline];
	}
	for (uint32_t i = 0; i <= q->rq_mask; i++)
		q->rq[i].sge = &q->rq_sge[(size_t)i * q->max_recv_sge];
	q->msn_tx[0] = q->msn_tx[1] = q->msn_tx[2] = q->msn_tx[3] = 1;
	q->msn_rx[0] = q->msn_rx[1] = q->msn_rx_aresp = 1;
	q->rx_imm_pending = false;
	q->rx_write_acc = q->last_write_len = 0;
	q->ord_max = SOFT_MAX_RD_ATOM;
	q->qpn = next_qpn();
	q->ud = attr->qp_type == RV_QPT_UD; /* ud.c moves its data */
	q->uc = attr->qp_type == RV_QPT_UC; /* rx.c/tx.c: no confirmation, drops instead of TERMINATE */
	q->xrc_ini = attr->qp_type == RV_QPT_XRC_SEND; /* tx.c: SENDs name the remote SRQ */
	q->xrc_tgt = attr->qp_type == RV_QPT_XRC_RECV; /* rx.c: receives into the SRQ named */
	q->xrcd = attr->xrcd;
	atomic_store(&q->state, RV_QPS_RESET);

	soft_lock_take(&sc->lock);
	rc = soft_ctx_add_qp(sc, q);
	soft_lock_give(&sc->lock);
	if (rc < 0) {
		qp_free(q);
		return rv_err(ENOMEM, fn, "out of memory for the QP table");
	}
	qp->qpn = q->qpn;
	qp->cap.max_send_wr = q->sq_size;
	qp->cap.max_recv_wr = q->rq_size;
	qp->cap.max_send_sge = q->max_send_sge;
	qp->cap.max_recv_sge = q->max_recv_sge;
	qp->cap.max_inline_data = q->max_inline;
	qp->drv_qp = q;
	return 0;
}

int soft_qp_destroy(struct rv_qp *qp)
{
	struct soft_qp *q = qp->drv_qp;
	struct soft_ctx *sc = q->sc;

	/* Out of the progress thread's view first: table, then connection. */
	soft_lock_take(&sc->lock);
	soft_ctx_del_qp(sc, q);
	if (q->ud)
		soft_ud_mcast_forget(sc, q->qpn); /* destroying a QP detaches it (IBA 10.2.4.4) */
	soft_lock_take(&q->lock);
	soft_conn_detach(q, true);
	soft_lock_give(&q->lock);
	soft_lock_give(&sc->lock);
	soft_event_forget(sc, &qp->obj);
	soft_mw_qp_gone(sc, qp);
	qp_free(q);
	qp->drv_qp = NULL;
	return 0;
}

static void reset_queues(struct soft_qp *q)
{
	q->sq_head = q->sq_tx = q->sq_tail = q->sq_confirmed = q->sq_covered = 0;
	q->any_sig = false;
	q->tx_off = 0;
	q->rq_head = q->rq_tail = 0;
	q->srq_have = false; /* to RESET: a WR being filled is discarded, as verbs does */
	if (q->xrc_tgt)
		q->srq = NULL; /* the next message names its SRQ again */
	q->rx_in_msg = false;
	q->rx_bytes = 0;
	q->ord_head = q->ord_tail = q->ird_head = q->ird_tail = 0;
	q->ord_user = q->ird_user = 0;
	q->peer_ird = 0;
	q->peer_caps = 0;
	q->msn_tx[0] = q->msn_tx[1] = q->msn_tx[2] = q->msn_tx[3] = 1;
	q->msn_rx[0] = q->msn_rx[1] = q->msn_rx_aresp = 1;
	q->rx_imm_pending = false;
	q->rx_write_acc = q->last_write_len = 0;
	q->need_rtr = q->term_pending = q->kick = false;
	q->uc_drop_send = q->uc_drop_write = q->uc_write_dropped = q->uc_drop_imm = false;
	q->uc_bad_keys = 0;
	q->have_peer = q->active = q->conn_failed = false;
}

/* The side whose (gid, port, qpn) is lower connects. */
static int tuple_cmp(const struct soft_qp *q)
{
	int c = memcmp(q->sc->gid, q->peer_gid, 16);

	if (c)
		return c;
	if (q->sc->port != q->peer_port)
		return q->sc->port < q->peer_port ? -1 : 1;
	if (q->qpn != q->peer_qpn)
		return q->qpn < q->peer_qpn ? -1 : 1;
	return 0;
}

static int to_rtr(struct soft_qp *q, const rv_qp_attr *attr)
{
	int rc;

	memcpy(q->peer_gid, attr->ah_attr.dgid, 16);
	q->peer_port = attr->ah_attr.dlid;
	q->peer_qpn = attr->dest_qp_num & 0xffffff;
	if (tuple_cmp(q) == 0)
		return rv_err(EINVAL, "rv_qp_modify",
			      "the peer named in ah_attr/dest_qp_num is this QP itself; soft0 connects "
			      "two distinct QPs (create a second QP for loopback)");
	q->have_peer = true;
	q->active = tuple_cmp(q) < 0;
	q->rtr_at = soft_now_ms();
	set_state(q, RV_QPS_RTR);
	if (q->active) {
		rc = soft_conn_start(q);
		if (rc < 0) {
			q->have_peer = false;
			set_state(q, RV_QPS_INIT);
			return rc;
		}
	} else {
		soft_conn_adopt_pending(q);
	}
	return 0;
}

int soft_qp_modify(struct rv_qp *qp, const rv_qp_attr *attr)
{
	struct soft_qp *q = qp->drv_qp;
	struct soft_ctx *sc = q->sc;
	uint64_t m = attr->mask;
	uint32_t cur, next;
	int rc = 0;

	soft_lock_take(&sc->lock);
	soft_lock_take(&q->lock);
	cur = atomic_load(&q->state);
	next = (m & RV_QP_STATE) ? attr->qp_state : cur;
	if (next == RV_QPS_SQD || next == RV_QPS_SQE) {
		rc = rv_err(EOPNOTSUPP, "rv_qp_modify", "soft0 does not support the %s state yet",
			    next == RV_QPS_SQD ? "SQD" : "SQE");
		goto out;
	}
	rv_qp_attr_copy_set(&q->attr, attr);
	if (m & RV_QP_ACCESS_FLAGS)
		q->access = attr->qp_access_flags;
	if (m & RV_QP_MAX_QP_RD_ATOMIC)
		q->ord_max = attr->max_rd_atomic ? attr->max_rd_atomic : 1;
	/* Grants were checked against the QP's rights and RTS (grant.c). */
	if (q->conn && q->conn->grants && ((m & RV_QP_ACCESS_FLAGS) || next != RV_QPS_RTS))
		soft_grant_revoke_conn(q->conn);
	switch (next) {
	case RV_QPS_RESET:
		soft_conn_detach(q, false);
		reset_queues(q);
		/* The QP's completions still in its CQs go too (mlx5 cleans its
		 * CQs at RESET): a program that resets a failed QP and uses it
		 * again must not poll the flushes of its former life. */
		soft_cq_clean(q->qp->send_cq, q->qpn);
		if (q->qp->recv_cq && q->qp->recv_cq != q->qp->send_cq)
			soft_cq_clean(q->qp->recv_cq, q->qpn);
		set_state(q, RV_QPS_RESET);
		break;
	case RV_QPS_INIT:
		set_state(q, RV_QPS_INIT);
		break;
	case RV_QPS_RTR:
		if (cur == RV_QPS_INIT && q->ud)
			set_state(q, RV_QPS_RTR); /* UD: nothing to connect */
		else if (cur == RV_QPS_INIT)
			rc = to_rtr(q, attr);
		break;
	case RV_QPS_RTS:
		set_state(q, RV_QPS_RTS);
		if (q->ud) {
			if (m & RV_QP_SQ_PSN)
				q->ud_psn = attr->sq_psn;
		} else if (q->conn_failed)
			soft_qp_fail(q, q->sq_head, RV_WC_RETRY_EXC_ERR, RV_WC_WR_FLUSH_ERR, false);
		else
			soft_tx_push(q);
		break;
	case RV_QPS_ERR:
		q->err_by_user = true;
		soft_qp_fail(q, q->sq_head, RV_WC_WR_FLUSH_ERR, RV_WC_WR_FLUSH_ERR, false);
		q->err_by_user = false;
		soft_conn_detach(q, true);
		break;
	default:
		break;
	}
out:
	soft_lock_give(&q->lock);
	soft_lock_give(&sc->lock);
	return rc;
}

int soft_qp_query(struct rv_qp *qp, rv_qp_attr *attr)
{
	struct soft_qp *q = qp->drv_qp;
	uint64_t mask = attr->mask;

	soft_lock_take(&q->lock);
	*attr = q->attr;
	attr->mask = mask;
	attr->qp_state = atomic_load(&q->state);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = q->access;
	attr->cap = qp->cap;
	soft_lock_give(&q->lock);
	return 0;
}

/* rv_soft_qp_path: read-only. sc->lock for the connection's state and its
 * same-host agreement (the progress thread changes both under it), q->lock
 * for q->conn, in the usual order. A connection's path only moves forward
 * (TCP, same host once shm.c agreed, rings once a direction switched in
 * shmring.c) until it ends. */
int soft_qp_path(struct rv_qp *qp, uint32_t *path)
{
	struct soft_qp *q = qp->drv_qp;
	const struct soft_conn *c;

	soft_lock_take(&q->sc->lock);
	soft_lock_take(&q->lock);
	c = q->conn;
	if (!c || c->state != CONN_UP)
		*path = RV_SOFT_PATH_NONE;
	else if (atomic_load(&c->ring_tx_on) || atomic_load(&c->ring_rx_on))
		*path = RV_SOFT_PATH_SAME_HOST_RINGS;
	else if (c->shm_step == 3 && (c->shm_push || c->shm_pull))
		*path = RV_SOFT_PATH_SAME_HOST;
	else
		*path = RV_SOFT_PATH_TCP;
	soft_lock_give(&q->lock);
	soft_lock_give(&q->sc->lock);
	return 0;
}

static int check_send_wr(const struct soft_qp *q, const rv_send_wr *wr, size_t i, uint64_t len)
{
	static const char *const fn = "rv_qp_post_send";

	/* UC has no responses (IBA §9.4: READ and atomics are RC/RD only). */
	if (q->uc && soft_wr_has_response(wr->opcode))
		return rv_err(EINVAL, fn, "wrs[%zu]: %s is not allowed on a UC QP (UC carries SEND and RDMA "
			      "WRITE only); use an RC QP", i,
			      wr->opcode == RV_WR_RDMA_READ ? "RDMA READ" : "an atomic operation");
	if (q->xrc_ini && wr->remote_srqn > 0xffffff)
		return rv_err(EINVAL, fn, "wrs[%zu]: remote_srqn 0x%x does not fit 24 bits", i, wr->remote_srqn);
	switch (wr->opcode) {
	case RV_WR_SEND:
	case RV_WR_RDMA_WRITE:
	case RV_WR_RDMA_READ:
		break;
	case RV_WR_SEND_WITH_INV:
		if (q->uc)
			return rv_err(EOPNOTSUPP, fn, "wrs[%zu]: SEND with invalidate on a UC QP is not "
				      "supported by soft0; use RC", i);
		break;
	case RV_WR_LOCAL_INV:
		if (wr->num_sge)
			return rv_err(EINVAL, fn, "wrs[%zu]: a LOCAL_INV moves no data; set num_sge to 0", i);
		break;
	case RV_WR_SEND_WITH_IMM:
	case RV_WR_RDMA_WRITE_WITH_IMM:
	case RV_WR_ATOMIC_CMP_AND_SWP:
	case RV_WR_ATOMIC_FETCH_AND_ADD: {
		int rc = soft_ext_check_wr(q, wr, i);
		if (rc < 0)
			return rc;
		break;
	}
	default:
		return rv_err(EOPNOTSUPP, fn, "wrs[%zu]: opcode %u is not supported by soft0", i, wr->opcode);
	}
	if (wr->num_sge > q->max_send_sge)
		return rv_err(EINVAL, fn, "wrs[%zu] has %u SGEs; the QP's max_send_sge is %u", i, wr->num_sge,
			      q->max_send_sge);
	if (len > SOFT_MAX_MSG)
		return rv_err(EINVAL, fn, "wrs[%zu] moves %llu bytes; soft0's max_msg_sz is %u", i,
			      (unsigned long long)len, SOFT_MAX_MSG);
	if (q->sq_tail - q->sq_head >= q->sq_size)
		return rv_err(ENOMEM, fn, "the send queue is full (%u WRs outstanding); poll the send CQ "
			      "before posting more, or create the QP with a larger cap.max_send_wr", q->sq_size);
	return 0;
}

int soft_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	struct soft_qp *q = qp->drv_qp;
	uint32_t st;
	size_t i = 0, queued = 0, framed = 0;
	int rc = 0;

	soft_lock_take(&q->lock);
	if (q->ud) {
		rc = soft_ud_post_send(q, wrs, n, &i);
		goto out;
	}
	st = atomic_load(&q->state);
	if (RV_UNLIKELY(st == RV_QPS_RESET || st == RV_QPS_INIT)) {
		rc = rv_err(EINVAL, "rv_qp_post_send", "the QP is in %s; send work can be posted once it is "
			    "connected (rv_qp_connect, or RTR/RTS)", st == RV_QPS_RESET ? "RESET" : "INIT");
		goto out;
	}
	for (; i < n; i++) {
		const rv_send_wr *wr = &wrs[i];
		uint64_t len;
		struct soft_swqe *w;

		/* Before the length is summed over the list. */
		if (RV_UNLIKELY(wr->num_sge && !wr->sg_list)) {
			rc = rv_err(EINVAL, "rv_qp_post_send", "wrs[%zu] has num_sge %u but sg_list is NULL",
				    i, wr->num_sge);
			break;
		}
		len = rv_send_wr_length(wr);
		rc = check_send_wr(q, wr, i, len);
		if (RV_UNLIKELY(rc < 0))
			break;
		/* One copy into memory the peer granted (grant.c): done and completed here. */
		if (q->conn && q->conn->grants && soft_grant_write(q, wr, len))
			continue;
		w = &q->sq[q->sq_tail & q->sq_mask];
		w->inl = rv_send_wr_inline(qp, wr);
		if (w->inl && len > q->max_inline) {
			rc = rv_err(EINVAL, "rv_qp_post_send", "wrs[%zu]: %llu bytes inline exceed the QP's "
				    "max_inline_data %u; drop RV_SEND_INLINE", i, (unsigned long long)len,
				    q->max_inline);
			break;
		}
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->flags = wr->send_flags;
		w->length = (uint32_t)len;
		w->remote_addr = wr->remote_addr;
		w->rkey = wr->rkey;
		w->imm = wr->imm_data;
		w->srqn = q->xrc_ini ? wr->remote_srqn : 0;
		w->compare_add = wr->compare_add;
		w->swap = wr->swap;
		w->done = false;
		w->signaled = qp->sq_sig_all || (wr->send_flags & RV_SEND_SIGNALED);
		w->msn = 0;
		if (w->signaled && w->opcode != RV_WR_RDMA_READ) {
			q->sig_sparse = !q->any_sig || q->sq_tail - q->last_sig >= SOFT_CONFIRM_EVERY; /* tx.c, sig_due */
			q->last_sig = q->sq_tail; /* tx.c, confirm_now */
			q->any_sig = true;
		}
		/* Inline chosen by rverbs, not the caller: the payload is taken
		 * now, but only after the checks the framing of a non-inline
		 * WR makes (soft_sgl_read: each lkey exists, is of the QP's PD
		 * and covers its SGE). A WR that fails them goes the
		 * non-inline way, whose framing completes it with
		 * RV_WC_LOC_PROT_ERR as before (issue 17): automatic inline
		 * changes when the payload is read, never the outcome. One
		 * read lock of the MR table, which the framing would take. */
		if (q->conn && q->conn->ring_tx_on && soft_tx_ring_now(q, w, wr, i + 1 == n)) {
			/* Framed in the ring now (tx.c): payload taken, SGEs checked. */
			q->sq_tail++;
			queued++;
			framed++;
			continue;
		}
		if (w->inl && !(wr->send_flags & RV_SEND_INLINE) && len &&
		    soft_sgl_read(q->sc, qp->pd, wr->sg_list, wr->num_sge, 0, w->inline_data, len) != SOFT_MEM_OK)
			w->inl = false;
		else if (w->inl && (wr->send_flags & RV_SEND_INLINE)) {
			/* Inline asked for: as with verbs, the lkeys are not
			 * looked at, and the caller may reuse its buffer as
			 * soon as this returns. */
			uint32_t off = 0;
			for (uint32_t k = 0; k < wr->num_sge; k++) {
				memcpy(w->inline_data + off, (const void *)(uintptr_t)wr->sg_list[k].addr,
				       wr->sg_list[k].length);
				off += wr->sg_list[k].length;
			}
		}
		if (w->inl) {
			w->num_sge = 0;
		} else {
			w->num_sge = wr->num_sge;
			if (wr->num_sge)
				memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(rv_sge));
		}
		q->sq_tail++;
		queued++;
	}
	if (i > 0) {
		/* WRs done by one copy (grant.c) never entered the send queue:
		 * a post of only those has nothing for tx.c to frame, and
		 * soft_tx_post (a clock read, the gathering checks, a push that
		 * finds nothing) was 15 % of the initiator's samples at 4 KiB. */
		if (atomic_load(&q->state) == RV_QPS_ERR)
			soft_qp_flush_posted(q);
		else if (q->conn && queued && framed == queued)
			soft_tx_ring_done(q); /* all framed in the ring already */
		else if (q->conn && queued)
			soft_tx_post(q); /* tx.c: small unsignalled WRs of a busy stream may wait for more */
		soft_qp_check_overflow(q);
	}
out:
	soft_lock_give(&q->lock);
	if (n_posted) /* NULL from the facade (post_n_posted_may_be_null) */
		*n_posted = i;
	return rc;
}

int soft_mw_bind(struct rv_qp *qp, struct rv_mw *mw, const rv_mw_bind_info *info, uint32_t *new_rkey,
		 uint64_t wr_id, uint32_t send_flags)
{
	static const char *const fn = "rv_qp_bind_mw";
	struct soft_qp *q = qp->drv_qp;
	struct soft_swqe *w;
	uint32_t st;
	int rc = 0;

	soft_lock_take(&q->lock);
	st = atomic_load(&q->state);
	if (st == RV_QPS_RESET || st == RV_QPS_INIT) {
		rc = rv_err(EINVAL, fn, "the QP is in %s; bind once it is connected (RTS)",
			    st == RV_QPS_RESET ? "RESET" : "INIT");
		goto out;
	}
	if (q->sq_tail - q->sq_head >= q->sq_size) {
		rc = rv_err(ENOMEM, fn, "the send queue is full (%u WRs outstanding); poll the send CQ "
			    "first", q->sq_size);
		goto out;
	}
	/* Run by the sender in send-queue order (tx.c, soft_mw_exec). */
	w = &q->sq[q->sq_tail & q->sq_mask];
	w->wr_id = wr_id;
	w->opcode = RV_WR_BIND_MW;
	w->flags = send_flags;
	w->num_sge = 0;
	w->length = 0;
	w->inl = false;
	w->imm = atomic_load(&mw->rkey);
	w->rkey = *new_rkey;
	w->remote_addr = info->addr;
	w->compare_add = info->length;
	w->swap = info->access;
	w->done = false;
	w->signaled = qp->sq_sig_all || (send_flags & RV_SEND_SIGNALED);
	w->msn = 0;
	if (w->signaled) {
		q->sig_sparse = !q->any_sig || q->sq_tail - q->last_sig >= SOFT_CONFIRM_EVERY; /* tx.c, sig_due */
		q->last_sig = q->sq_tail; /* tx.c, confirm_now */
		q->any_sig = true;
	}
	q->sq_tail++;
	if (atomic_load(&q->state) == RV_QPS_ERR)
		soft_qp_flush_posted(q);
	else if (q->conn)
		soft_tx_push(q);
	soft_qp_check_overflow(q);
out:
	soft_lock_give(&q->lock);
	return rc;
}

int soft_post_recv(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	static const char *const fn = "rv_qp_post_recv";
	struct soft_qp *q = qp->drv_qp;
	size_t i = 0;
	int rc = 0;

	soft_lock_take(&q->lock);
	if (RV_UNLIKELY(atomic_load(&q->state) == RV_QPS_RESET)) {
		rc = rv_err(EINVAL, fn, "the QP is in RESET; move it to INIT first (rv_qp_to_init)");
		goto out;
	}
	for (; i < n; i++) {
		const rv_recv_wr *wr = &wrs[i];
		struct soft_rwqe *w;

		if (wr->num_sge > q->max_recv_sge) {
			rc = rv_err(EINVAL, fn, "wrs[%zu] has %u SGEs; the QP's max_recv_sge is %u", i,
				    wr->num_sge, q->max_recv_sge);
			break;
		}
		if (wr->num_sge && !wr->sg_list) {
			rc = rv_err(EINVAL, fn, "wrs[%zu] has num_sge %u but sg_list is NULL", i, wr->num_sge);
			break;
		}
		if (q->rq_tail - q->rq_head >= q->rq_size) {
			rc = rv_err(ENOMEM, fn, "the receive queue is full (%u WRs); create the QP with a "
				    "larger cap.max_recv_wr", q->rq_size);
			break;
		}
		w = &q->rq[q->rq_tail & q->rq_mask];
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		if (wr->num_sge == 1)
			w->sge[0] = wr->sg_list[0]; /* the usual receive: one move, not a libc call */
		else if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(rv_sge));
		q->rq_tail++;
	}
	if (i > 0) {
		if (atomic_load(&q->state) == RV_QPS_ERR) {
			soft_qp_flush_posted(q);
			soft_qp_check_overflow(q);
		} else if (q->conn && q->conn->rx_stalled && !q->kick && !soft_shmring_resume(q->conn)) {
			/* Rare path: a SEND is waiting for exactly this (on a ring the
			 * next ring pass resumes it, unless the progress thread sleeps). */
			q->kick = true;
			soft_kick(q->sc);
		}
	}
out:
	soft_lock_give(&q->lock);
	if (n_posted) /* NULL from the facade (post_n_posted_may_be_null) */
		*n_posted = i;
	return rc;
}

int soft_uc_counters(rv_qp *qp, uint64_t out[SOFT_UC_NCOUNTERS])
{
	struct soft_qp *q = soft_qp_of(qp);

	if (!q || !q->uc)
		return -EINVAL;
	soft_lock_take(&q->lock);
	memcpy(out, q->uc_count, sizeof(q->uc_count));
	soft_lock_give(&q->lock);
	return 0;
}
