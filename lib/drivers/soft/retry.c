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
 * TCP window moves only while its process reads) or sending any FPDU. Without
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
 * A connection reset or EOF needs no timer: conn.c completes the work at once
 * (TCP has already said the peer is gone).
 *
 * Runs in the progress thread from the timers, with sc->lock held.
 */
#include <string.h>

#include "soft.h"

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

		pthread_mutex_lock(&q->lock);
		c = q->conn;
		if (!c || c->state != CONN_UP || atomic_load(&q->state) != RV_QPS_RTS) {
			q->retry_watch = false;
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		if (c->rx_stalled)
			rnr_beat(q, c, now);
		bound = bound_ms(q);
		if (q->conn != c || q->sq_head == q->sq_tail || bound == 0) {
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
		pthread_mutex_unlock(&q->lock);
	}
}
