/*
 * Fault injection (fault.c): its entry points, and the transmit hooks the
 * senders (tx.c, ext.c, retry.c, stream.c, conn.c, shmring.c, ud.c) call down into. Apart
 * from soft.h so that soft.h, which every stage includes, calls no transport.
 */
#ifndef RVERBS_SOFT_FAULT_H
#define RVERBS_SOFT_FAULT_H

#include "drivers/soft/soft.h"

/* Read RVERBS_SOFT_FAULT into sc->fault; -EINVAL (with rv_err) when malformed. */
int soft_fault_env(struct soft_ctx *sc);
int soft_fault_inject(struct rv_context *ctx, struct rv_qp *qp, uint32_t kind, uint32_t count,
		      uint32_t delay_ms);
size_t soft_fault_frame(struct soft_qp *q, struct soft_conn *c, uint8_t *frame, size_t len);
/*
 * Transmit hook: frame (len bytes) was just framed into c->tx for q. Returns
 * how many bytes of it to keep in the stream: len, or 0 when a fault dropped
 * it (q->lock held). Inline so that the fault-free path is one test.
 */
static inline size_t soft_fault_tx(struct soft_qp *q, struct soft_conn *c, uint8_t *frame, size_t len)
{
	if (RV_LIKELY(!atomic_load_explicit(&q->fault.armed, memory_order_relaxed) &&
		      !atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed)))
		return len;
	return soft_fault_frame(q, c, frame, len);
}
/* True while a fault holds c's transmit side: flush sends nothing, no EPOLLOUT. */
static inline __attribute__((always_inline)) bool soft_fault_held(const struct soft_conn *c)
{
	return RV_UNLIKELY(c->fault_stopped || c->fault_hold);
}
/* A datagram transport (UD) about to send pkt (len bytes, its ICRC last) for
 * q: true when a fault loses it (do not send); corrupt flips a bit in place. */
bool soft_fault_dgram_lost(struct soft_qp *q, uint8_t *pkt, size_t len);

#endif
