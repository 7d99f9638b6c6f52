/*
 * The completion module of the software device (see completion.h): work
 * completions into CQ rings, in-order completion of a send queue, a QP's
 * move to ERR with the flush of its work, and the receive WR a message lands
 * in (the QP's receive queue or its SRQ).
 *
 * Producers are posting threads (flushes, local errors, sends framed at post
 * time) and the progress thread, so pushes take cq->lock. An armed CQ
 * (rv_cq_req_notify) fires at most once: the pusher that clears `armed`
 * (atomic exchange) queues the CQ on its channel and writes the eventfd; an
 * unarmed push costs one relaxed load, no syscall. A CQ created with
 * timestamps (rv_cq_attr.wc_flags) gets each entry stamped as it is pushed.
 * Lock order: cq->lock is
 * never held while taking the channel lock.
 *
 * Calls down only: event.c (asynchronous events) and soft_kick (soft.h).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "completion.h"

static bool before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static uint32_t wc_opcode(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case RV_WR_RDMA_WRITE:
	case RV_WR_RDMA_WRITE_WITH_IMM:
		return RV_WC_RDMA_WRITE;
	case RV_WR_RDMA_READ:
		return RV_WC_RDMA_READ;
	case RV_WR_ATOMIC_CMP_AND_SWP:
		return RV_WC_COMP_SWAP;
	case RV_WR_ATOMIC_FETCH_AND_ADD:
		return RV_WC_FETCH_ADD;
	case RV_WR_BIND_MW:
		return RV_WC_BIND_MW;
	case RV_WR_LOCAL_INV:
		return RV_WC_LOCAL_INV;
	default:
		return RV_WC_SEND;
	}
}

static void send_wc(struct soft_qp *q, const struct soft_swqe *w, uint32_t status)
{
	rv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = status;
	wc.opcode = wc_opcode(w->opcode);
	wc.byte_len = status == RV_WC_SUCCESS ? w->length : 0;
	wc.qp_num = q->qpn;
	if (!soft_cq_push(q->qp->send_cq, &wc))
		q->cq_overflow = true;
}

static void recv_wc(struct soft_qp *q, const struct soft_rwqe *w, uint32_t status)
{
	rv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = status;
	wc.opcode = RV_WC_RECV;
	wc.qp_num = q->qpn;
	if (!soft_cq_push(soft_recv_cq(q), &wc))
		q->cq_overflow = true;
}

void soft_sq_complete(struct soft_qp *q)
{
	while (q->sq_head != q->sq_tx) {
		struct soft_swqe *w = &q->sq[q->sq_head & q->sq_mask];
		if (soft_wr_has_response(w->opcode) ? !w->done : !before(q->sq_head, q->sq_confirmed))
			break;
		if (w->signaled)
			send_wc(q, w, RV_WC_SUCCESS);
		q->sq_head++;
	}
}

/* Only the driver's copy: the facade owns qp->state and refreshes it through
 * soft_qp_query, so the progress thread never writes facade memory. */
void soft_qp_overflowed(struct soft_qp *q)
{
	if (atomic_load(&q->state) == RV_QPS_ERR)
		return;
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: its CQ overflowed; the QP is in the error state", q->qpn);
	soft_qp_fail(q, q->sq_head, RV_WC_WR_FLUSH_ERR, RV_WC_WR_FLUSH_ERR, false);
	q->kick = true;
	soft_kick(q->sc);
}

void soft_qp_fail(struct soft_qp *q, uint32_t fail, uint32_t status, uint32_t rq_status, bool term)
{
	if (atomic_load(&q->state) == RV_QPS_ERR)
		return;
	atomic_store(&q->state, RV_QPS_ERR);
	soft_event_qp_error(q);
	for (uint32_t i = q->sq_head; i != q->sq_tail; i++) {
		struct soft_swqe *w = &q->sq[i & q->sq_mask];
		uint32_t s;

		if (before(i, fail) &&
		    (soft_wr_has_response(w->opcode) ? w->done : before(i, q->sq_confirmed)))
			s = RV_WC_SUCCESS;
		else if (before(i, fail))
			s = RV_WC_WR_FLUSH_ERR;
		else
			s = i == fail ? status : RV_WC_WR_FLUSH_ERR;
		if (s != RV_WC_SUCCESS || w->signaled)
			send_wc(q, w, s);
	}
	q->sq_head = q->sq_tx = q->sq_covered = q->sq_confirmed = q->sq_tail;
	q->tx_off = 0;
	for (uint32_t i = q->rq_head; i != q->rq_tail; i++)
		recv_wc(q, &q->rq[i & q->rq_mask],
			i == q->rq_head && q->rx_in_msg ? rq_status : RV_WC_WR_FLUSH_ERR);
	q->rq_head = q->rq_tail;
	if (q->srq_have) {
		recv_wc(q, &q->srq_wqe, q->rx_in_msg ? rq_status : RV_WC_WR_FLUSH_ERR);
		q->srq_have = false;
	}
	q->rx_in_msg = false;
	q->rx_bytes = 0;
	q->rx_imm_pending = false;
	q->ord_head = q->ord_tail;
	q->ird_head = q->ird_tail;
	q->ord_user = q->ird_user = 0;
	q->need_rtr = false;
	if (!term)
		q->term_pending = false;
}

void soft_qp_flush_posted(struct soft_qp *q)
{
	for (; q->sq_head != q->sq_tail; q->sq_head++)
		send_wc(q, &q->sq[q->sq_head & q->sq_mask], RV_WC_WR_FLUSH_ERR);
	q->sq_tx = q->sq_covered = q->sq_confirmed = q->sq_tail;
	for (; q->rq_head != q->rq_tail; q->rq_head++)
		recv_wc(q, &q->rq[q->rq_head & q->rq_mask], RV_WC_WR_FLUSH_ERR);
}

void soft_channel_post_locked(struct soft_cq *c)
{
	struct soft_channel *h = c->ch;
	uint64_t one = 1;

	c->pending++;
	if (!c->queued) {
		c->queued = true;
		c->next = NULL;
		if (h->tail)
			h->tail->next = c;
		else
			h->head = c;
		h->tail = c;
	}
	if (write(h->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		c->pending--; /* the counter is full: cannot happen with one event per arm */
}

static void channel_signal(struct soft_cq *c)
{
	pthread_mutex_lock(&c->ch->lock);
	soft_channel_post_locked(c);
	pthread_mutex_unlock(&c->ch->lock);
}

/* The extended fields a CQ created with timestamps keeps for each entry:
 * one or two vDSO clock reads, on such CQs only. */
static void stamp(const struct soft_cq *c, struct soft_cq_stamp *s)
{
	struct timespec ts;

	s->raw = soft_clock_raw();
	s->wall = 0;
	if (c->wc_flags & RV_CQ_WC_TIMESTAMP_WALLCLOCK) {
		clock_gettime(CLOCK_REALTIME, &ts);
		s->wall = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
}

void soft_cq_clean(struct rv_cq *cq, uint32_t qpn)
{
	struct soft_cq *c = cq->drv_cq;
	uint32_t w;

	soft_lock_take(&c->lock);
	w = c->head;
	for (uint32_t r = c->head; r != c->tail; r++) {
		if (c->ring[r & c->mask].qp_num == qpn)
			continue;
		if (w != r) {
			c->ring[w & c->mask] = c->ring[r & c->mask];
			if (c->stamps)
				c->stamps[w & c->mask] = c->stamps[r & c->mask];
		}
		w++;
	}
	c->tail = w;
	atomic_store_explicit(&c->avail, c->tail - c->head, memory_order_release);
	soft_lock_give(&c->lock);
}

bool soft_cq_push(struct rv_cq *cq, const rv_wc *wc)
{
	return soft_cq_push_se(cq, wc, false);
}

bool soft_cq_push_se(struct rv_cq *cq, const rv_wc *wc, bool solicited)
{
	struct soft_cq *c = cq->drv_cq;
	bool ok = true;
	int armed;

	soft_lock_take(&c->lock);
	/* An overflowed CQ stays in error (as a NIC's): nothing more enters it,
	 * not even into room a poll made since (the flushes of its QPs). */
	if (c->tail - c->head > c->mask || atomic_load_explicit(&c->overflow, memory_order_relaxed)) {
		if (!atomic_exchange(&c->overflow, true))
			soft_event_post(cq->ctx->drv_ctx, RV_EVENT_CQ_ERR, &cq->obj);
		ok = false;
	} else {
		c->ring[c->tail & c->mask] = *wc;
		if (c->stamps) /* under the lock: stamps rise in the CQ's order */
			stamp(c, &c->stamps[c->tail & c->mask]);
		c->tail++;
		atomic_store_explicit(&c->avail, c->tail - c->head, memory_order_release);
	}
	/* Read under the lock: soft_cq_req_notify takes it after arming, so
	 * either this push sees the arm or the re-poll after arming sees the
	 * entry (no lost wakeup). */
	armed = atomic_load_explicit(&c->armed, memory_order_relaxed);
	soft_lock_give(&c->lock);
	if (RV_UNLIKELY(armed != ARM_NONE)) {
		/* Solicited-only fires on solicited receives and on errors. */
		if (armed == ARM_ALL || solicited || wc->status != RV_WC_SUCCESS || !ok) {
			if (atomic_compare_exchange_strong(&c->armed, &armed, ARM_NONE))
				channel_signal(c);
		}
	}
	return ok;
}

bool soft_cq_waited(const struct rv_cq *cq)
{
	const struct soft_cq *c = cq ? cq->drv_cq : NULL;

	return c && atomic_load_explicit(&c->waiters, memory_order_relaxed) != 0;
}

/* Take the SRQ's head WR into q's private slot (q->lock held). */
static bool srq_take(struct soft_qp *q)
{
	struct soft_srq *s = q->srq;
	const struct soft_rwqe *w;
	bool limit_hit = false;

	pthread_mutex_lock(&s->lock);
	if (s->head == s->tail) {
		q->srq_gen_seen = atomic_load(&s->gen);
		atomic_store(&s->starving, true);
		pthread_mutex_unlock(&s->lock);
		return false;
	}
	w = &s->rq[s->head & s->mask];
	q->srq_wqe.wr_id = w->wr_id;
	q->srq_wqe.num_sge = w->num_sge;
	memcpy(q->srq_wqe.sge, w->sge, w->num_sge * sizeof(rv_sge));
	s->head++;
	/* ibv_modify_srq(3): the event fires when fewer than srq_limit WRs
	 * remain, then the limit disarms until armed again. */
	if (s->limit && s->tail - s->head < s->limit) {
		s->limit = 0;
		limit_hit = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (limit_hit)
		soft_event_post(q->sc, RV_EVENT_SRQ_LIMIT_REACHED, &s->srq->obj);
	q->srq_have = true;
	return true;
}

struct soft_rwqe *soft_srq_peek(struct soft_qp *q)
{
	if (!q->srq_have && !srq_take(q))
		return NULL;
	return &q->srq_wqe;
}

/* A linear search: a context has few XRC SRQs (one per receiving process
 * or thread that shares the node's connections), searched once per FPDU of DDP queue 0 (rx.c). */
struct soft_srq *soft_xrc_srq_find(struct soft_ctx *sc, uint32_t srqn)
{
	for (struct soft_srq *s = sc->xrc_srqs; s; s = s->xrc_next)
		if (s->srqn == srqn)
			return s;
	return NULL;
}

bool soft_srq_resumable(const struct soft_qp *q)
{
	return q->srq && q->conn && q->conn->rx_stalled && atomic_load(&q->srq->gen) != q->srq_gen_seen;
}
