/*
 * Shared receive queues of the software device: creation, modify, query and
 * posting. The one place where the receive path gets the receive WR a SEND
 * lands in (from the QP's own receive queue, or from its SRQ) is
 * completion.c's soft_rq_peek, which the transports call down into.
 *
 * An SRQ is a ring of receive WRs under its own lock (s->lock), shared by
 * every QP using it: that lock is the inherent cost of sharing. A QP takes
 * the head WR when a message starts and keeps a private copy (q->srq_wqe)
 * until the message's last FPDU, so the ring is touched once per message.
 * Lock order: q->lock, then s->lock, then the event queue's lock.
 *
 * A QP whose SEND found the SRQ empty stalls its stream, like one with an
 * empty receive queue; it notes the SRQ's post generation, and a post bumps
 * the generation and kicks the progress thread, which resumes every stalled
 * QP whose SRQ moved (context.c, run_kicks).
 *
 * XRC (rverbs/xrcd.h): a domain is a token (its SRQs and target QPs name
 * it); an XRC SRQ gets a number unique in the context and joins the
 * context's list, which the receive path searches (rx.c, xrc_select, under
 * sc->lock) for the SRQ a message names. Lock order as above, sc->lock first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/soft.h"

int soft_xrcd_open(struct rv_xrcd *xrcd)
{
	struct soft_ctx **d = malloc(sizeof(*d));

	if (!d)
		return rv_err(ENOMEM, "rv_xrcd_new", "out of memory for the XRC domain");
	*d = xrcd->ctx->drv_ctx;
	xrcd->drv_xrcd = d;
	return 0;
}

/* Its SRQs and target QPs are gone (the facade closed them first). */
int soft_xrcd_close(struct rv_xrcd *xrcd)
{
	free(xrcd->drv_xrcd);
	xrcd->drv_xrcd = NULL;
	return 0;
}

/* A number no live XRC SRQ of the context has, 24 bits, never 0 (sc->lock). */
static uint32_t xrc_srqn_next(struct soft_ctx *sc)
{
	do
		sc->next_srqn = (sc->next_srqn + 1) & 0xffffff;
	while (sc->next_srqn == 0 || soft_xrc_srq_find(sc, sc->next_srqn));
	return sc->next_srqn;
}

/* A destroyed XRC SRQ leaves the list, and any target QP that last received
 * into it forgets it (its WR in hand is discarded, as the SRQ's own are):
 * a later message naming the number is refused. */
static void xrc_srq_unlink(struct soft_srq *s)
{
	struct soft_ctx *sc = s->sc;

	soft_lock_take(&sc->lock);
	for (struct soft_srq **p = &sc->xrc_srqs; *p; p = &(*p)->xrc_next) {
		if (*p == s) {
			*p = s->xrc_next;
			break;
		}
	}
	sc->qp_gen++; /* cq.c: its CQ's pollers recollect their QPs */
	for (uint32_t i = 0; i < sc->n_qps; i++) {
		struct soft_qp *q = sc->qps[i];

		if (!q->xrc_tgt)
			continue;
		soft_lock_take(&q->lock);
		if (q->srq == s) {
			q->srq = NULL;
			q->srq_have = false;
		}
		soft_lock_give(&q->lock);
	}
	soft_lock_give(&sc->lock);
}

int soft_srq_create(struct rv_srq *srq, const rv_srq_attr *attr)
{
	struct soft_srq *s = calloc(1, sizeof(*s));

	if (!s)
		return rv_err(ENOMEM, "rv_srq_new", "out of memory for the SRQ");
	s->size = attr->max_wr;
	s->max_sge = attr->max_sge;
	s->limit = attr->srq_limit;
	s->sc = srq->ctx->drv_ctx;
	s->srq = srq;
	s->mask = soft_pow2_at_least(s->size) - 1;
	s->rq = calloc((size_t)s->mask + 1, sizeof(*s->rq));
	s->sge = calloc(((size_t)s->mask + 1) * s->max_sge, sizeof(*s->sge));
	if (!s->rq || !s->sge || pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s->rq);
		free(s->sge);
		free(s);
		return rv_err(ENOMEM, "rv_srq_new", "out of memory for an SRQ of %u WRs of %u SGEs",
			      attr->max_wr, attr->max_sge);
	}
	for (uint32_t i = 0; i <= s->mask; i++)
		s->rq[i].sge = &s->sge[(size_t)i * s->max_sge];
	srq->max_wr = s->size;
	srq->max_sge = s->max_sge;
	srq->drv_srq = s;
	if (srq->xrcd) {
		soft_lock_take(&s->sc->lock);
		s->srqn = srq->srqn = xrc_srqn_next(s->sc);
		s->xrc_next = s->sc->xrc_srqs;
		s->sc->xrc_srqs = s;
		s->sc->qp_gen++; /* pollers of its CQ now move its domain's targets (cq.c) */
		soft_lock_give(&s->sc->lock);
	}
	return 0;
}

/* Its QPs are gone (the facade closed them first): nothing can reach it. */
int soft_srq_destroy(struct rv_srq *srq)
{
	struct soft_srq *s = srq->drv_srq;

	if (srq->xrcd)
		xrc_srq_unlink(s);
	soft_event_forget(s->sc, &srq->obj);
	pthread_mutex_destroy(&s->lock);
	free(s->rq);
	free(s->sge);
	free(s);
	srq->drv_srq = NULL;
	return 0;
}

/*
 * Resize (RV_SRQ_MAX_WR), as rv_cq_resize does a CQ: new arrays, the WRs
 * still posted copied over in order, swapped under the SRQ's lock. No QP
 * points into the ring (a QP copies its WR out, srq_take), so the swap needs
 * nothing but that lock. Below what the SRQ holds, or above the device's
 * max_srq_wr: -EINVAL, nothing changed. With RV_SRQ_LIMIT too, both apply or
 * neither (the facade checked the limit against the new max_wr).
 */
int soft_srq_modify(struct rv_srq *srq, const rv_srq_attr *attr)
{
	static const char *const fn = "rv_srq_modify";
	struct soft_srq *s = srq->drv_srq;
	struct soft_rwqe *rq = NULL, *old_rq = NULL;
	rv_sge *sge = NULL, *old_sge = NULL;
	uint32_t size = attr->max_wr, slots = 0;

	if (attr->mask & RV_SRQ_MAX_WR) {
		if (size > SOFT_MAX_QP_WR)
			return rv_err(EINVAL, fn, "max_wr %u is above soft0's max_srq_wr %u", size,
				      SOFT_MAX_QP_WR);
		slots = soft_pow2_at_least(size);
		rq = calloc(slots, sizeof(*rq));
		sge = calloc((size_t)slots * s->max_sge, sizeof(*sge));
		if (!rq || !sge) {
			free(rq);
			free(sge);
			return rv_err(ENOMEM, fn, "out of memory for an SRQ of %u WRs of %u SGEs", size,
				      s->max_sge);
		}
		for (uint32_t i = 0; i < slots; i++)
			rq[i].sge = &sge[(size_t)i * s->max_sge];
	}
	pthread_mutex_lock(&s->lock);
	if (rq) {
		uint32_t held = s->tail - s->head;

		if (held > size) {
			pthread_mutex_unlock(&s->lock);
			free(rq);
			free(sge);
			return rv_err(EINVAL, fn, "max_wr %u is below the %u receive WRs the SRQ holds; "
				      "resize once they are consumed", size, held);
		}
		for (uint32_t i = 0; i < held; i++) {
			const struct soft_rwqe *w = &s->rq[(s->head + i) & s->mask];

			rq[i].wr_id = w->wr_id;
			rq[i].num_sge = w->num_sge;
			memcpy(rq[i].sge, w->sge, w->num_sge * sizeof(rv_sge));
		}
		old_rq = s->rq, old_sge = s->sge;
		s->rq = rq, s->sge = sge;
		s->size = size;
		s->mask = slots - 1;
		s->head = 0, s->tail = held;
		srq->max_wr = size; /* the facade holds the graph lock */
	}
	if (attr->mask & RV_SRQ_LIMIT)
		s->limit = attr->srq_limit;
	pthread_mutex_unlock(&s->lock);
	free(old_rq);
	free(old_sge);
	return 0;
}

int soft_srq_query(struct rv_srq *srq, rv_srq_attr *attr)
{
	struct soft_srq *s = srq->drv_srq;

	pthread_mutex_lock(&s->lock);
	attr->max_wr = s->size;
	attr->max_sge = s->max_sge;
	attr->srq_limit = s->limit;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int soft_post_srq_recv(struct rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	static const char *const fn = "rv_srq_post_recv";
	struct soft_srq *s = srq->drv_srq;
	size_t i = 0;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	for (; i < n; i++) {
		const rv_recv_wr *wr = &wrs[i];
		struct soft_rwqe *w;

		if (wr->num_sge > s->max_sge) {
			rc = rv_err(EINVAL, fn, "wrs[%zu] has %u SGEs; the SRQ's max_sge is %u", i,
				    wr->num_sge, s->max_sge);
			break;
		}
		if (wr->num_sge && !wr->sg_list) {
			rc = rv_err(EINVAL, fn, "wrs[%zu] has num_sge %u but sg_list is NULL", i, wr->num_sge);
			break;
		}
		if (s->tail - s->head >= s->size) {
			rc = rv_err(ENOMEM, fn, "the SRQ is full (%u WRs); create it with a larger max_wr",
				    s->size);
			break;
		}
		w = &s->rq[s->tail & s->mask];
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(rv_sge));
		s->tail++;
	}
	if (i > 0)
		atomic_fetch_add(&s->gen, 1);
	pthread_mutex_unlock(&s->lock);
	/* Rare path: a QP's SEND waits for exactly this. */
	if (i > 0 && atomic_exchange(&s->starving, false))
		soft_kick(s->sc);
	*n_posted = i;
	return rc;
}
