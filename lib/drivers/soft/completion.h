/*
 * The completion module of the software device: what every transport (tx.c,
 * rx.c, conn.c, shmring.c, retry.c, ext.c, ud.c) and the verbs objects call
 * *down* into to finish work: push a work completion to a CQ (and fire its
 * completion channel), complete a QP's send queue in order, fail a QP and
 * flush its work, flush work posted to a QP in ERR, take the receive WR a
 * message lands in (from the QP's receive queue or its SRQ). Raising the
 * asynchronous events that go with it is event.c's (soft_event_post).
 *
 * The CQ ring and the completion channel are shared with cq.c (the verbs
 * object: create, resize, poll, arm, wait), which is why their structures
 * stand here: completion.c is the producer, cq.c the consumer.
 *
 * Never calls up into a transport or a verbs object; takes cq->lock (a soft_lock, lock.h)
 * and ch->lock (leaves), and the caller holds q->lock where it says so. Lock
 * order: ch->lock, then cq->lock (a waiter's hand-on, cq.c); never ch->lock
 * under cq->lock.
 */
#ifndef RVERBS_SOFT_COMPLETION_H
#define RVERBS_SOFT_COMPLETION_H

#include "lock.h"
#include "soft.h"

struct soft_channel {
	pthread_mutex_t lock; /* guards the FIFO */
	int efd;
	struct soft_cq *head, *tail; /* CQs with pending events, oldest first */
};

enum { ARM_NONE, ARM_SOLICITED, ARM_ALL };

/* The extended fields of one CQ entry (rv_cq_poll_ex), beside the ring. */
struct soft_cq_stamp {
	uint64_t raw;  /* soft_clock_raw() when the completion was pushed */
	uint64_t wall; /* CLOCK_REALTIME in ns then, with RV_CQ_WC_TIMESTAMP_WALLCLOCK */
};

struct soft_cq {
	struct soft_lock lock; /* lock.h: the ring, head and tail, the arm's handshake */
	struct rv_cq *cq;
	struct soft_ctx *sc;
	struct soft_channel *ch; /* or NULL */
	_Atomic int armed;       /* ARM_* */
	uint32_t pending;        /* events queued on ch (ch->lock) */
	bool queued;             /* in ch's FIFO (ch->lock) */
	struct soft_cq *next;    /* ch's FIFO (ch->lock) */
	rv_wc *ring;
	struct soft_cq_stamp *stamps; /* as many as ring, or NULL: a CQ without timestamps */
	uint32_t wc_flags;       /* rv_cq_wc_flags it was created with */
	uint32_t mask;
	uint32_t head, tail;
	_Atomic uint32_t avail;  /* tail - head, readable without the lock */
	_Atomic bool overflow;
	/* The QPs a poller of this CQ serves (sc->lock): rebuilt when sc->qp_gen moves. */
	struct soft_qp *qps[SOFT_POLL_DIRECT_MAX];
	uint32_t n_qps;          /* connected QPs (not UD); > SOFT_POLL_DIRECT_MAX: served through epoll */
	bool has_ud;             /* a UD QP: its datagrams come through epoll */
	uint32_t qp_gen;         /* sc->qp_gen the list was built at, + 1 (0: never) */
	/* The last poll_progress_locked found every QP of the list on a ring
	 * (none of their sockets is read): cq.c's empty polls skip sc->lock
	 * for it, but on every 64th. */
	_Atomic bool ring_only;
	_Atomic uint32_t waiters; /* threads in soft_cq_block (changed under lock) */
	bool wait_armed;         /* a waiter armed the CQ, not the application (lock) */
	/* ns soft_cq_block spins before it sleeps (adaptive, at most
	 * sc->wait_spin_ns; see wait_spin in cq.c). */
	_Atomic uint32_t spin_ns;
	_Atomic uint32_t spin_fails; /* spins in a row that found nothing (capped) */
	_Atomic uint32_t spin_skip;  /* short waits to sleep through before spinning again */
	/* A recv of soft_cq_block's that timed out (its SO_RCVTIMEO ends on a
	 * scheduler tick, 8 ms here for 1 ms) turns the recv off for 2, 4, ...
	 * 256 waits; one that brought bytes resets it. */
	_Atomic uint32_t recv_fails;
	_Atomic uint32_t recv_skip;
};

/* ---- CQs ---- */
/* Drop the completions of QP qpn still in cq (a QP moved to RESET: its
 * completions are gone, as mlx5 cleans its CQs then). */
void soft_cq_clean(struct rv_cq *cq, uint32_t qpn);
/* false when the CQ is full: the completion is lost and the CQ reports -EOVERFLOW. */
bool soft_cq_push(struct rv_cq *cq, const rv_wc *wc);
/* As soft_cq_push; solicited: a receive completion of a SEND with SE. */
bool soft_cq_push_se(struct rv_cq *cq, const rv_wc *wc, bool solicited);
/* A thread blocks in soft_cq_block on cq, reading its QPs' sockets itself. */
bool soft_cq_waited(const struct rv_cq *cq);
/* One event of c's on its channel: queued and the eventfd written (c->ch->lock
 * held). */
void soft_channel_post_locked(struct soft_cq *c);

/* ---- QPs ---- */
/* Complete finished send WRs in order (q->lock held). */
void soft_sq_complete(struct soft_qp *q);
/* If a CQ of q overflowed, move q to ERR and have the progress thread close
 * its connection (q->lock held). The test inline: it runs after every post
 * and ring pass, and a call for one load was about 6 instructions. */
void soft_qp_overflowed(struct soft_qp *q);
static inline void soft_qp_check_overflow(struct soft_qp *q)
{
	if (RV_UNLIKELY(q->cq_overflow))
		soft_qp_overflowed(q);
}
/*
 * Move q to ERR (q->lock held): send WRs before index fail complete as
 * successful if the peer confirmed them (else they flush), the one at fail
 * gets status, the rest and every receive WR flush; rq_status, if not FLUSH, goes to the receive WR
 * being filled. If term is true the queued TERMINATE is sent before the
 * connection closes. fail == q->sq_tail fails nothing in particular.
 */
void soft_qp_fail(struct soft_qp *q, uint32_t fail, uint32_t status, uint32_t rq_status, bool term);
/* Work posted to a QP in ERR completes at once, flushed (q->lock held). */
void soft_qp_flush_posted(struct soft_qp *q);

/* ---- receive WRs ---- */
/* The receive WR the next/current SEND lands in (its QP's rq head or a WR
 * taken from its SRQ), or NULL when there is none yet (q->lock held). */
struct soft_rwqe *soft_srq_peek(struct soft_qp *q); /* the SRQ's half, out of line */
static inline struct soft_rwqe *soft_rq_peek(struct soft_qp *q)
{
	/* Inline: once per SEND received (a call was about 10 instructions). */
	if (RV_LIKELY(!q->srq))
		return q->rq_head != q->rq_tail ? &q->rq[q->rq_head & q->rq_mask] : NULL;
	return soft_srq_peek(q);
}
/* The message in soft_rq_peek()'s WR completed: move past it. */
static inline void soft_rq_consume(struct soft_qp *q)
{
	if (q->srq)
		q->srq_have = false;
	else
		q->rq_head++;
}
/* q stalled on an empty SRQ that has been posted to since (progress thread). */
bool soft_srq_resumable(const struct soft_qp *q);
/* The XRC SRQ numbered srqn in sc, or NULL (sc->lock held). */
struct soft_srq *soft_xrc_srq_find(struct soft_ctx *sc, uint32_t srqn);

#endif
