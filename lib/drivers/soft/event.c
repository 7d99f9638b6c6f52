/*
 * The asynchronous event queue of a software context: a FIFO of events and
 * an eventfd that is readable (counter 1) exactly while the FIFO is not
 * empty. Anything in the driver raises an event with one call,
 * soft_event_post(); the facade takes them through soft_get_async_event().
 *
 * An event names its handle by the facade object (a borrowed pointer). So
 * that a queued event never outlives its handle, the destroy of a QP, CQ or
 * SRQ calls soft_event_forget() first. The FIFO is bounded: beyond
 * SOFT_MAX_EVENTS unread events a new one is dropped with a warning (a
 * program that never reads its events must not grow without bound).
 *
 * ev->lock is a leaf: it is taken under any other lock of the driver and
 * nothing is called while holding it. Never blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "soft.h"

#define SOFT_MAX_EVENTS 4096u

int soft_event_init(struct soft_ctx *sc)
{
	struct soft_evq *q = &sc->evq;

	memset(q, 0, sizeof(*q));
	q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->fd < 0)
		return -errno;
	if (pthread_mutex_init(&q->lock, NULL) != 0) {
		close(q->fd);
		q->fd = -1;
		return -ENOMEM;
	}
	return 0;
}

void soft_event_fini(struct soft_ctx *sc)
{
	struct soft_evq *q = &sc->evq;

	if (q->fd < 0)
		return;
	close(q->fd);
	q->fd = -1;
	pthread_mutex_destroy(&q->lock);
	free(q->ev);
	q->ev = NULL;
	q->n = q->cap = 0;
}

static void set_readable(struct soft_evq *q, bool readable)
{
	uint64_t v = 1;

	if (readable) {
		if (write(q->fd, &v, sizeof(v)) < 0) {
			/* Cannot fail: the counter never exceeds 1. */
		}
	} else if (read(q->fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: already 0. */
	}
}

void soft_event_post(struct soft_ctx *sc, uint32_t type, struct rv_object *obj)
{
	struct soft_evq *q = &sc->evq;
	struct soft_event *e;

	pthread_mutex_lock(&q->lock);
	if (q->n >= SOFT_MAX_EVENTS) {
		pthread_mutex_unlock(&q->lock);
		rv_log(RV_LOG_WARN, "soft0: %u asynchronous events are unread; dropping %s "
		       "(read them with rv_context_get_async_event)", SOFT_MAX_EVENTS, rv_async_event_str(type));
		return;
	}
	if (q->n == q->cap) {
		uint32_t cap = q->cap ? q->cap * 2 : 16;
		struct soft_event *grown = realloc(q->ev, cap * sizeof(*grown));

		if (!grown) {
			pthread_mutex_unlock(&q->lock);
			rv_log(RV_LOG_WARN, "soft0: out of memory; asynchronous event %s dropped",
			       rv_async_event_str(type));
			return;
		}
		q->ev = grown;
		q->cap = cap;
	}
	e = &q->ev[q->n++];
	e->type = type;
	e->obj = obj;
	if (q->n == 1)
		set_readable(q, true);
	pthread_mutex_unlock(&q->lock);
}

void soft_event_qp_error(struct soft_qp *q)
{
	/* A move to ERR asked for by rv_qp_modify is no device error; Last WQE
	 * Reached is raised for every QP with an SRQ (IB spec 11.6.3.1). */
	if (!q->err_by_user)
		soft_event_post(q->sc, RV_EVENT_QP_FATAL, &q->qp->obj);
	if (q->srq)
		soft_event_post(q->sc, RV_EVENT_QP_LAST_WQE_REACHED, &q->qp->obj);
}

void soft_event_forget(struct soft_ctx *sc, const struct rv_object *obj)
{
	struct soft_evq *q = &sc->evq;
	uint32_t k = 0;

	pthread_mutex_lock(&q->lock);
	for (uint32_t i = 0; i < q->n; i++)
		if (q->ev[i].obj != obj)
			q->ev[k++] = q->ev[i];
	if (q->n && k == 0)
		set_readable(q, false);
	q->n = k;
	pthread_mutex_unlock(&q->lock);
}

int soft_async_fd(struct rv_context *ctx)
{
	struct soft_ctx *sc = ctx->drv_ctx;

	return sc->evq.fd;
}

int soft_get_async_event(struct rv_context *ctx, rv_async_event *ev)
{
	struct soft_evq *q = &((struct soft_ctx *)ctx->drv_ctx)->evq;
	struct soft_event e;

	pthread_mutex_lock(&q->lock);
	if (q->n == 0) {
		pthread_mutex_unlock(&q->lock);
		return -EAGAIN;
	}
	e = q->ev[0];
	memmove(&q->ev[0], &q->ev[1], (q->n - 1) * sizeof(q->ev[0]));
	if (--q->n == 0)
		set_readable(q, false);
	pthread_mutex_unlock(&q->lock);

	ev->type = e.type;
	switch (e.obj ? e.obj->cls->type : RV_OBJ_DEVICE) {
	case RV_OBJ_QP:
		ev->qp = (rv_qp *)(void *)e.obj;
		break;
	case RV_OBJ_CQ:
		ev->cq = (rv_cq *)(void *)e.obj;
		break;
	case RV_OBJ_SRQ:
		ev->srq = (rv_srq *)(void *)e.obj;
		break;
	default:
		ev->port_num = 1;
		break;
	}
	return 0;
}
