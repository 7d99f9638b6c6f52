/*
 * Asynchronous events of a context (rverbs/event.h).
 *
 * The driver owns the queue and its descriptor; this file waits on the
 * descriptor, takes events under the graph lock (so a handle an event names
 * cannot be destroyed meanwhile: drivers drop the events of a handle when it
 * is destroyed, and destroys run under that lock too) and gives the caller a
 * reference on each handle named, which rv_async_event_ack drops. Nothing
 * here waits for an ack, so no close can hang on an unacknowledged event.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "driver.h"

static const char *const event_names[] = {
	[RV_EVENT_CQ_ERR] = "CQ_ERR",
	[RV_EVENT_QP_FATAL] = "QP_FATAL",
	[RV_EVENT_QP_REQ_ERR] = "QP_REQ_ERR",
	[RV_EVENT_QP_ACCESS_ERR] = "QP_ACCESS_ERR",
	[RV_EVENT_COMM_EST] = "COMM_EST",
	[RV_EVENT_SQ_DRAINED] = "SQ_DRAINED",
	[RV_EVENT_PATH_MIG] = "PATH_MIG",
	[RV_EVENT_PATH_MIG_ERR] = "PATH_MIG_ERR",
	[RV_EVENT_DEVICE_FATAL] = "DEVICE_FATAL",
	[RV_EVENT_PORT_ACTIVE] = "PORT_ACTIVE",
	[RV_EVENT_PORT_ERR] = "PORT_ERR",
	[RV_EVENT_LID_CHANGE] = "LID_CHANGE",
	[RV_EVENT_PKEY_CHANGE] = "PKEY_CHANGE",
	[RV_EVENT_SM_CHANGE] = "SM_CHANGE",
	[RV_EVENT_SRQ_ERR] = "SRQ_ERR",
	[RV_EVENT_SRQ_LIMIT_REACHED] = "SRQ_LIMIT_REACHED",
	[RV_EVENT_QP_LAST_WQE_REACHED] = "QP_LAST_WQE_REACHED",
	[RV_EVENT_CLIENT_REREGISTER] = "CLIENT_REREGISTER",
	[RV_EVENT_GID_CHANGE] = "GID_CHANGE",
};

RV_EXPORT const char *rv_async_event_str(uint32_t type)
{
	if (type >= sizeof(event_names) / sizeof(event_names[0]) || !event_names[type])
		return "UNKNOWN";
	return event_names[type];
}

static int no_queue(struct rv_context *ctx, const char *func)
{
	return rv_err(EOPNOTSUPP, func, "the %s driver of device %s has no asynchronous event queue",
		      ctx->drv->name, ctx->dev->name);
}

RV_EXPORT int rv_context_async_fd(rv_context *ctx)
{
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ctx->drv->async_fd)
		return no_queue(ctx, __func__);
	rv_error_clear();
	rc = ctx->drv->async_fd(ctx);
	return rc < 0 ? rv_err_from_driver(rc, __func__, "getting the event descriptor") : rc;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether an event's handle is one a caller may receive (live, of this context). */
static bool handle_ok(const void *h, enum rv_obj_type type, const struct rv_context *ctx)
{
	const struct rv_object *o = h;

	return o && o->magic == rv_obj_magic(type) && o->state == RV_OBJ_LIVE && o->ctx == ctx;
}

/* One event without waiting: 0, -EAGAIN or a driver error. */
static int take(struct rv_context *ctx, rv_async_event *ret_ev, const char *func)
{
	rv_async_event ev;
	int rc;

	for (;;) {
		memset(&ev, 0, sizeof(ev));
		rv_graph_lock(&ctx->obj);
		if (ctx->obj.state != RV_OBJ_LIVE) {
			rv_graph_unlock(&ctx->obj);
			return rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, func);
		}
		rv_error_clear();
		rc = ctx->drv->get_async_event(ctx, &ev);
		if (rc == 0 && ((ev.qp && !handle_ok(ev.qp, RV_OBJ_QP, ctx)) ||
				(ev.cq && !handle_ok(ev.cq, RV_OBJ_CQ, ctx)) ||
				(ev.srq && !handle_ok(ev.srq, RV_OBJ_SRQ, ctx)))) {
			/* About a handle closed since: nobody can use it. */
			rv_graph_unlock(&ctx->obj);
			continue;
		}
		if (rc == 0) {
			if (ev.qp)
				rv_obj_ref(RV_OBJ(ev.qp));
			if (ev.cq)
				rv_obj_ref(RV_OBJ(ev.cq));
			if (ev.srq)
				rv_obj_ref(RV_OBJ(ev.srq));
		}
		rv_graph_unlock(&ctx->obj);
		if (rc == 0)
			*ret_ev = ev;
		else if (rc != -EAGAIN)
			rc = rv_err_from_driver(rc, func, "reading the asynchronous event queue");
		return rc;
	}
}

RV_EXPORT int rv_context_get_async_event(rv_context *ctx, rv_async_event *ret_ev, int timeout_ms)
{
	int64_t deadline;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_ev)
		return rv_err(EINVAL, __func__, "ret_ev is NULL");
	if (!ctx->drv->get_async_event || !ctx->drv->async_fd)
		return no_queue(ctx, __func__);
	deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : timeout_ms;
	for (;;) {
		struct pollfd pfd;
		int ms;

		rc = take(ctx, ret_ev, __func__);
		if (rc != -EAGAIN)
			return rc;
		if (deadline == 0)
			return rv_err(EAGAIN, __func__, "no event is waiting");
		if (deadline < 0) {
			ms = -1;
		} else {
			int64_t left = deadline - mono_ms();
			if (left <= 0)
				return rv_err(ETIMEDOUT, __func__, "no event within %d ms", timeout_ms);
			ms = (int)left;
		}
		rv_graph_lock(&ctx->obj);
		pfd.fd = ctx->obj.state == RV_OBJ_LIVE ? ctx->drv->async_fd(ctx) : -1;
		rv_graph_unlock(&ctx->obj);
		if (pfd.fd < 0)
			return rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, ms) < 0 && errno == EINTR)
			return rv_err(EINTR, __func__, "a signal interrupted the wait");
	}
}

RV_EXPORT void rv_async_event_ack(rv_async_event *ev)
{
	rv_qp *qp;
	rv_cq *cq;
	rv_srq *srq;

	if (!ev)
		return;
	qp = ev->qp;
	cq = ev->cq;
	srq = ev->srq;
	ev->qp = NULL;
	ev->cq = NULL;
	ev->srq = NULL;
	/* Through the public unrefs: they ignore a pointer that is no handle. */
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_srq_unref(srq);
}
