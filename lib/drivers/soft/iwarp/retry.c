/*
 * Transport retry exceeded: outstanding RC work always completes.
 *
 * A NIC retransmits an unacknowledged packet every 4.096 µs × 2^timeout and
 * gives up after retry_cnt retries: the WR completes with RETRY_EXC_ERR and
 * the QP goes to ERR. TCP does the retransmitting for soft0, so what is left
 * to bound is a peer that stops answering while the connection stays up (its
 * process is stopped or hung, the link is down, a fault dropped a frame).
 *
 * Rule: a QP in RTS whose connection is up and that has send work outstanding
 * (posted and not completed) must see progress from its peer at least every
 *     bound = 4.096 µs × 2^timeout × (retry_cnt + 1)      (timeout 0: never)
 * where progress is the peer taking bytes (send() accepted some; the peer's
 * TCP window moves only while its process reads) or sending any FPDU; the hot
 * path counts it and the timer tick that sees the count move stamps the time
 * (no clock read per message; at most one tick of slack). Without
 * it, the first outstanding WR completes with RV_WC_RETRY_EXC_ERR, the rest
 * and every receive WR flush, the QP moves to ERR and the connection is
 * closed, so the peer learns at once too. The bound is rounded up to
 * SOFT_RETRY_MIN_MS: the peer is a process the OS may deschedule for a while
 * (a loaded machine, valgrind), which a NIC never is.
 *
 * A receiver that is not ready (a SEND waits for a receive WR, rnr_retry 7:
 * wait forever) does not read its socket, so its peer would see no progress:
 * while it is stalled it sends a zero-length RDMA WRITE (STag 0; RFC 6581
 * uses the same no-op message) every SOFT_RNR_BEAT_MS to show that it lives.
 *
 * Finite rnr_retry (RV_SOFT_CAP_RNR, both sides offered it): iWARP has no RNR
 * NAK, so the stalled receiver's keepalive says it: its TO carries
 * SOFT_RNR_NOTICE and the MSN of the SEND that waits. The sender starts a
 * clock at the first notice for that SEND; when the SEND is still
 * unconfirmed after rnr_retry × the receiver's min_rnr_timer (the IB timer
 * table; rnr_retry 7 = forever), it completes with RV_WC_RNR_RETRY_EXC_ERR,
 * the rest flushes, its QP goes to ERR and the connection closes (the SEND
 * sits in the TCP stream and cannot be withdrawn, so the receiver's QP then
 * sees the end of the stream, unlike an InfiniBand responder that stays in
 * RTS). The clock is checked on the 100 ms timer tick, so the wait is at
 * least the budget and at most a few ticks more.
 *
 * A connection reset or EOF needs no timer: conn.c completes the work at once
 * (TCP has already said the peer is gone).
 *
 * Runs in the progress thread from the timers, with sc->lock held.
 */
#include <string.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"

/* 0 = infinite (timeout 0, as in verbs). */
static int64_t bound_ms(const struct soft_qp *q)
{
	uint32_t t = q->attr.timeout;
	uint64_t ns;
	int64_t ms;

	if (t == 0)
		return 0;
	if (t > 31)
		t = 31;
	ns = (4096ull << t) * ((q->attr.retry_cnt & 7u) + 1u);
	ms = (int64_t)((ns + 999999) / 1000000);
	return ms < SOFT_RETRY_MIN_MS ? SOFT_RETRY_MIN_MS : ms;
}

/* IB min_rnr_timer codes in units of 10 µs (code 0 = 655.36 ms). */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

void soft_retry_rnr_notice(struct soft_qp *q, uint32_t msn)
{
	for (uint32_t i = q->sq_head; i != q->sq_tx; i++) {
		const struct soft_swqe *w = &q->sq[i & q->sq_mask];
		if ((w->opcode == RV_WR_SEND || w->opcode == RV_WR_SEND_WITH_IMM ||
		     w->opcode == RV_WR_RDMA_WRITE_WITH_IMM) && w->msn == msn) {
			if (!q->rnr_since || q->rnr_wqe != i) {
				q->rnr_since = soft_now_ms();
				q->rnr_wqe = i;
			}
			return;
		}
	}
}

/* The peer's notice for a SEND still unconfirmed past rnr_retry × its timer. */
static void rnr_check(struct soft_qp *q, int64_t now)
{
	uint32_t retry = q->attr.rnr_retry & 7u;
	int64_t budget;

	if (!q->rnr_since)
		return;
	/* Placed since (a confirmation covers it) or completed: the stall ended. */
	if ((int32_t)(q->rnr_wqe - q->sq_confirmed) < 0 || (int32_t)(q->rnr_wqe - q->sq_head) < 0) {
		q->rnr_since = 0;
		return;
	}
	if (retry == 7)
		return;
	budget = ((int64_t)retry * rnr_timer_10us[q->peer_min_rnr_timer & 31u] + 99) / 100;
	if (now - q->rnr_since < budget)
		return;
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: QP 0x%x had no receive WR for a SEND for %lld ms (rnr_retry %u, "
	       "min_rnr_timer %u): RNR retry exceeded; the SEND completes with RV_WC_RNR_RETRY_EXC_ERR and "
	       "the QP is in the error state", q->qpn, q->peer_qpn, (long long)(now - q->rnr_since), retry,
	       q->peer_min_rnr_timer);
	q->rnr_since = 0;
	q->retry_watch = false;
	soft_qp_fail(q, q->rnr_wqe, RV_WC_RNR_RETRY_EXC_ERR, RV_WC_WR_FLUSH_ERR, false);
	soft_conn_detach(q, false);
}

/* A zero-length WRITE between two messages: "alive, receiver not ready". */
static void rnr_beat(struct soft_qp *q, struct soft_conn *c, int64_t now)
{
	struct rv_fpdu f;
	int n;

	if (now - q->rnr_beat_at < SOFT_RNR_BEAT_MS || !c->may_send || q->tx_off != 0 ||
	    (q->ird_head != q->ird_tail && q->ird[q->ird_head % SOFT_IRD_CAP].sent != 0) ||
	    c->tx_len != c->tx_off || soft_fault_held(c))
		return;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_WRITE;
	f.tagged = true;
	f.last = true;
	if (q->peer_caps & RV_SOFT_CAP_RNR)
		f.to = SOFT_RNR_NOTICE | q->msn_rx[0]; /* the SEND at the head waits */
	c->tx_len = c->tx_off = 0;
	n = rv_wire_fpdu_encode_crc(c->tx, SOFT_TXBUF, &f, c->crc);
	if (n > 0)
		c->tx_len = (size_t)n;
	q->rnr_beat_at = now;
	soft_tx_push(q);
}

void soft_retry_timers(struct soft_ctx *sc, int64_t now)
{
	for (uint32_t i = 0; i < sc->n_qps; i++) {
		struct soft_qp *q = sc->qps[i];
		struct soft_conn *c;
		int64_t bound;

		soft_lock_take(&q->lock);
		c = q->conn;
		if (!c || c->state != CONN_UP || atomic_load(&q->state) != RV_QPS_RTS) {
			q->retry_watch = false;
			soft_lock_give(&q->lock);
			continue;
		}
		if (c->rx_stalled)
			rnr_beat(q, c, now);
		rnr_check(q, now);
		if (q->conn != c) {
			soft_lock_give(&q->lock);
			continue;
		}
		if (q->progress_n != q->progress_seen) {
			/* Progress since the last tick (soft_retry_progress counts it). */
			q->progress_seen = q->progress_n;
			q->progress_at = now;
		}
		bound = bound_ms(q);
		/* UC: no transport retry (nothing is acknowledged). */
		if (q->conn != c || q->sq_head == q->sq_tail || bound == 0 || q->uc) {
			q->retry_watch = false;
		} else if (!q->retry_watch) {
			/* Work appeared: the clock starts now at the latest. */
			q->retry_watch = true;
			if (q->progress_at < now)
				q->progress_at = now;
		} else if (now - q->progress_at > bound) {
			rv_log(RV_LOG_WARN, "soft0: QP 0x%x: no progress from QP 0x%x for %lld ms (timeout %u, "
			       "retry_cnt %u allow %lld ms): transport retry exceeded; its work completes with "
			       "RV_WC_RETRY_EXC_ERR and the QP is in the error state", q->qpn, q->peer_qpn,
			       (long long)(now - q->progress_at), q->attr.timeout, q->attr.retry_cnt,
			       (long long)bound);
			q->retry_watch = false;
			soft_qp_fail(q, q->sq_head, RV_WC_RETRY_EXC_ERR, RV_WC_WR_FLUSH_ERR, false);
			soft_conn_detach(q, false);
		}
		soft_lock_give(&q->lock);
	}
}
