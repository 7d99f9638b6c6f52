/*
 * Asynchronous events through libibverbs: the context's async_fd, made
 * non-blocking, read with ibv_get_async_event and translated.
 *
 * Each event is acknowledged (ibv_ack_async_event) as soon as it has been
 * translated, under the facade's graph lock: ibv_destroy_qp/cq/srq wait for
 * the acks of their events, and the rverbs handle the event names is pinned
 * by the reference the facade takes instead, so no close ever waits for the
 * application. The handles come back through the verbs objects' context
 * pointers (qp_context, cq_context, srq_context), which rverbs sets to the
 * handles at creation. Never touches the ownership graph.
 */
#include <errno.h>
#include <fcntl.h>

#include "ibv-driver.h"

int rv_ibv_async_fd(struct rv_context *ctx)
{
	struct ibv_context *c = rv_ibv_ctx(ctx);
	char ebuf[128];
	int fl = fcntl(c->async_fd, F_GETFL), err;

	/* rv_context_get_async_event waits with poll(); reads never block. */
	if (fl >= 0 && (fl & O_NONBLOCK))
		return c->async_fd;
	if (fl >= 0 && fcntl(c->async_fd, F_SETFL, fl | O_NONBLOCK) == 0)
		return c->async_fd;
	err = errno;
	return rv_err(err, "rv_context_async_fd", "making %s's async_fd non-blocking failed: %s",
		      ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
}

/* ibv_async_event -> rv_async_event: the enum values are equal (rverbs/event.h). */
void rv_ibv_async_event_from_ibv(const struct ibv_async_event *in, rv_async_event *out)
{
	out->type = (uint32_t)in->event_type;
	switch (in->event_type) {
	case IBV_EVENT_CQ_ERR:
		out->cq = in->element.cq ? in->element.cq->cq_context : NULL;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp = in->element.qp ? in->element.qp->qp_context : NULL;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		out->srq = in->element.srq ? in->element.srq->srq_context : NULL;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		out->port_num = (uint32_t)in->element.port_num;
		break;
	default:
		break;
	}
}

int rv_ibv_get_async_event(struct rv_context *ctx, rv_async_event *ev)
{
	struct ibv_context *c = rv_ibv_ctx(ctx);
	struct ibv_async_event e;
	char ebuf[128];
	int err;

	if (rv_ibv_async_fd(ctx) < 0)
		return -EIO;
	errno = 0;
	if (ibv_get_async_event(c, &e) != 0) {
		err = errno ? errno : EIO;
		if (err == EAGAIN || err == EWOULDBLOCK)
			return -EAGAIN;
		return rv_err(err, "rv_context_get_async_event", "ibv_get_async_event on %s failed: %s",
			      ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	rv_ibv_async_event_from_ibv(&e, ev);
	ibv_ack_async_event(&e);
	return 0;
}
