/*
 * Completion queues, and the words for work-completion statuses.
 *
 * rv_cq_poll is on the data path: one inline handle check, then the driver.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "memory.h"

static int cq_destroy(struct rv_object *obj)
{
	struct rv_cq *cq = (struct rv_cq *)obj;
	uint32_t left = atomic_load(&cq->events_taken) - atomic_load(&cq->events_acked);

	/* Unacknowledged events would make ibv_destroy_cq wait forever. */
	if (left && cq->ctx->drv->cq_ack_events) {
		cq->ctx->drv->cq_ack_events(cq, left);
		atomic_fetch_add(&cq->events_acked, left);
	}
	return cq->ctx->drv->cq_destroy(cq);
}

static const struct rv_object_class cq_class = {
	.type = RV_OBJ_CQ,
	.name = "CQ",
	.destroy = cq_destroy,
};

#define CQ_ATTR_KNOWN \
	(RV_CQ_ATTR_CQE | RV_CQ_ATTR_CHANNEL | RV_CQ_ATTR_COMP_VECTOR | RV_CQ_ATTR_WC_FLAGS | RV_CQ_ATTR_PD)
#define CQ_WC_FLAGS_KNOWN (RV_CQ_WC_TIMESTAMP | RV_CQ_WC_FLOW_TAG | RV_CQ_WC_TIMESTAMP_WALLCLOCK)

/* rv_cq_attr.wc_flags: known bits only, and a driver that can give them. */
static int check_wc_flags(rv_context *ctx, uint64_t wc_flags)
{
	if (wc_flags & ~(uint64_t)CQ_WC_FLAGS_KNOWN)
		return rv_err(EINVAL, "rv_cq_new", "unknown bit 0x%" PRIx64 " in rv_cq_attr.wc_flags",
			      wc_flags & ~(uint64_t)CQ_WC_FLAGS_KNOWN);
	if (wc_flags && !ctx->drv->cq_poll_ex)
		return rv_err(EOPNOTSUPP, "rv_cq_new", "device %s gives no extended completion fields "
			      "(wc_flags 0x%" PRIx64 "); create the CQ without RV_CQ_ATTR_WC_FLAGS",
			      ctx->dev->name, wc_flags);
	return 0;
}

RV_EXPORT int rv_cq_new(rv_context *ctx, const rv_cq_attr *attr, rv_cq **ret_cq)
{
	rv_cq_attr a = {.mask = 0, .cqe = 256, .comp_vector = 0, .channel = NULL, .wc_flags = 0};
	struct rv_cq *cq;
	int rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_cq, "ret_cq", attr ? attr->mask : 0,
				  CQ_ATTR_KNOWN, "rv_cq_attr", __func__);

	if (rc < 0)
		return rc;
	if (attr) {
		if (attr->mask & RV_CQ_ATTR_CQE) {
			if (attr->cqe == 0)
				return rv_err(EINVAL, __func__, "cqe is 0; a CQ needs at least one entry");
			a.cqe = attr->cqe;
		}
		if (attr->mask & RV_CQ_ATTR_COMP_VECTOR)
			a.comp_vector = attr->comp_vector;
		if (attr->mask & RV_CQ_ATTR_CHANNEL) {
			rc = rv_obj_check(RV_COBJ(attr->channel), RV_OBJ_COMP_CHANNEL, __func__);
			if (rc < 0)
				return rc;
			if (attr->channel->ctx != ctx)
				return rv_err(EINVAL, __func__, "the completion channel belongs to another context");
			if (!ctx->drv->cq_req_notify)
				return rv_err(EOPNOTSUPP, __func__, "device %s has no completion channels",
					      ctx->dev->name);
			a.channel = attr->channel;
		}
		if (attr->mask & RV_CQ_ATTR_WC_FLAGS) {
			rc = check_wc_flags(ctx, attr->wc_flags);
			if (rc < 0)
				return rc;
			a.wc_flags = attr->wc_flags;
		}
		if (attr->mask & RV_CQ_ATTR_PD) {
			/* As ibv_create_cq_ex: only a parent domain, of this context. */
			rc = rv_obj_check(RV_COBJ(attr->pd), RV_OBJ_PD, __func__);
			if (rc < 0)
				return rc;
			if (attr->pd->ctx != ctx)
				return rv_err(EINVAL, __func__, "rv_cq_attr.pd belongs to another context");
			if (!attr->pd->parent)
				return rv_err(EINVAL, __func__, "rv_cq_attr.pd is an ordinary PD; a CQ takes a parent "
					      "domain (rv_pd_attr's RV_PD_ATTR_PARENT), as ibv_create_cq_ex does");
			a.pd = attr->pd;
		}
		a.mask = attr->mask;
	}
	cq = rv_obj_new(sizeof(*cq), &cq_class, ctx, __func__);
	if (!cq)
		return -ENOMEM;
	cq->ctx = ctx;
	cq->poll = ctx->drv->cq_poll;
	cq->wc_flags = (uint32_t)a.wc_flags;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_depend(&cq->obj, &ctx->obj, __func__);
	if (rc == 0 && a.pd) {
		if (a.pd->obj.state != RV_OBJ_LIVE) /* closed meanwhile */
			rc = rv_err(RV_ECLOSED, __func__, "the parent domain was closed");
		else
			rc = rv_obj_depend(&cq->obj, &a.pd->obj, __func__);
	}
	if (rc == 0 && a.channel) {
		if (a.channel->obj.state != RV_OBJ_LIVE) /* closed meanwhile */
			rc = rv_err(RV_ECLOSED, __func__, "the completion channel was closed");
		else
			rc = rv_obj_depend(&cq->obj, &a.channel->obj, __func__);
		if (rc == 0)
			cq->channel = a.channel;
	}
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->cq_create(cq, &a), __func__, "creating the CQ");
	return RV_OBJ_NEW_END(cq, &ctx->obj, rc, ret_cq);
}

RV_DEFINE_HANDLE_REF_UNREF(cq, RV_OBJ_CQ)

RV_EXPORT int rv_cq_resize(rv_cq *cq, uint32_t cqe)
{
	int rc = rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__);

	if (rc < 0)
		return rc;
	if (cqe == 0)
		return rv_err(EINVAL, __func__, "cqe is 0; a CQ needs at least one entry");
	if (!cq->ctx->drv->cq_resize)
		return rv_err(EOPNOTSUPP, __func__, "device %s cannot resize CQs; create a new one",
			      cq->ctx->dev->name);
	rv_graph_lock(&cq->obj);
	rv_error_clear();
	rc = cq->ctx->drv->cq_resize(cq, cqe);
	rc = rv_err_from_driver(rc, __func__, "resizing the CQ");
	rv_graph_unlock(&cq->obj);
	return rc;
}

RV_DEFINE_HANDLE_CLOSE(cq, RV_OBJ_CQ, "destroying the CQ or a QP using it")

/* What rv_cq_poll's one-compare checks did not let through: a handle that
 * is not a live CQ of this process (in a fork child the CQs it made itself
 * come here and are polled; rv_fork_child is one load of a flag set only
 * there, core/fork.c, and the pid compare makes no system call), bad
 * arguments. Never inlined into the hot path. */
static __attribute__((noinline)) int poll_checked(rv_cq *cq, rv_wc *wc, int max, const char *func)
{
	if (!cq || cq->obj.magic != rv_obj_magic(RV_OBJ_CQ) || cq->obj.state != RV_OBJ_LIVE ||
	    (rv_fork_child && cq->ctx->pid != rv_fork_pid))
		return rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, func);
	if (!wc || max < 1)
		return rv_err(EINVAL, func, "%s", wc ? "max must be at least 1" : "wc is NULL");
	return cq->poll(cq, wc, max);
}

/* One test of the handle (rv_obj_live_fast: magic and state as one word,
 * which also fails in a fork child) and of each argument, then a tail call
 * of the driver's poll cached in the CQ. */
RV_EXPORT int rv_cq_poll(rv_cq *cq, rv_wc *wc, int max)
{
	if (RV_UNLIKELY(!rv_obj_live_fast(cq, RV_OBJ_CQ) || !wc || max < 1))
		return poll_checked(cq, wc, max, __func__);
	return cq->poll(cq, wc, max);
}

/* rv_cq_poll_ex on a CQ created without wc_flags: the plain completions,
 * with no extended field. */
static int poll_ex_plain(rv_cq *cq, rv_wc_ex *wc, int max)
{
	rv_wc batch[16];
	int n = cq->poll(cq, batch, max < 16 ? max : 16);

	for (int i = 0; i < n; i++) {
		memset(&wc[i], 0, sizeof(wc[i]));
		wc[i].wc = batch[i];
	}
	return n;
}

RV_EXPORT int rv_cq_poll_ex(rv_cq *cq, rv_wc_ex *wc, int max)
{
	/* As poll_checked: the slow test only when the one-compare test fails
	 * (a fork child's own CQs pass it and are polled). */
	if (RV_UNLIKELY(!rv_obj_live_fast(cq, RV_OBJ_CQ) || !wc || max < 1)) {
		int rc = rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__);

		if (rc < 0)
			return rc;
		if (!wc || max < 1)
			return rv_err(EINVAL, __func__, "%s", wc ? "max must be at least 1" : "wc is NULL");
	}
	if (cq->wc_flags) /* rv_cq_new let wc_flags through only with a cq_poll_ex */
		return cq->ctx->drv->cq_poll_ex(cq, wc, max);
	return poll_ex_plain(cq, wc, max);
}

RV_EXPORT uint64_t rv_cq_get_wc_flags(const rv_cq *cq)
{
	if (rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__) < 0)
		return 0;
	return cq->wc_flags;
}

RV_EXPORT uint32_t rv_cq_size(const rv_cq *cq)
{
	if (rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__) < 0)
		return 0;
	return cq->cqe;
}

/* ---- completion channels ---------------------------------------------- */

static int ch_destroy(struct rv_object *obj)
{
	struct rv_comp_channel *ch = (struct rv_comp_channel *)obj;
	return ch->ctx->drv->comp_channel_destroy(ch);
}

static const struct rv_object_class ch_class = {
	.type = RV_OBJ_COMP_CHANNEL,
	.name = "completion channel",
	.destroy = ch_destroy,
};

RV_EXPORT int rv_comp_channel_new(rv_context *ctx, const rv_comp_channel_attr *attr,
				  rv_comp_channel **ret_ch)
{
	struct rv_comp_channel *ch;
	int rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_ch, "ret_ch", attr ? attr->mask : 0, 0,
				  "rv_comp_channel_attr", __func__);

	if (rc < 0)
		return rc;
	if (!ctx->drv->comp_channel_create)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no completion channels", ctx->dev->name);
	ch = rv_obj_new(sizeof(*ch), &ch_class, ctx, __func__);
	if (!ch)
		return -ENOMEM;
	ch->ctx = ctx;
	ch->fd = -1;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_depend(&ch->obj, &ctx->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->comp_channel_create(ch), __func__, "creating the completion channel");
	return RV_OBJ_NEW_END(ch, &ctx->obj, rc, ret_ch);
}

RV_DEFINE_HANDLE_REF_UNREF(comp_channel, RV_OBJ_COMP_CHANNEL)

RV_DEFINE_HANDLE_CLOSE(comp_channel, RV_OBJ_COMP_CHANNEL, "destroying the channel or a CQ attached to it")

RV_EXPORT int rv_comp_channel_fd(const rv_comp_channel *ch)
{
	int rc = rv_obj_check(RV_COBJ(ch), RV_OBJ_COMP_CHANNEL, __func__);
	return rc < 0 ? rc : ch->fd;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Take one event, waiting until deadline_ns (-1: forever, 0: not at all). */
/*
 * Several threads in rv_cq_wait on one CQ share its channel, whose arm fires
 * once: the thread that takes the event may take every completion or only
 * its own, and the others, asleep on the channel, hear of nothing that came
 * before the next arm (two waiters, one slept to its deadline with its
 * completion in the CQ: docs/concepts.md, "Completion handling";
 * test-soft-twowait). So the thread that takes an event arms the CQ again at once when
 * others wait, and while others wait each sleeps at most SHARED_SLICE_MS
 * before it arms and looks again itself: a completion that came between the
 * fire and the new arm is found within a slice. One waiter alone sleeps
 * until the event or the deadline, as before, but looks every ALONE_SLICE_MS
 * whether others have joined since it fell asleep (it cannot know how they
 * fared with the arm it made) and if so arms and looks again.
 */
#define SHARED_SLICE_MS 4
#define ALONE_SLICE_MS 200 /* a waiter alone notices others joining */

/*
 * Takes one event off ch, sleeping until deadline_ns (-1: no deadline, 0: do
 * not sleep). With shared_by (the CQ rv_cq_wait waits on), it returns
 * -EAGAIN without an error when, after a sleep, it finds no event and may
 * have missed one: woken by an event another thread took, or after a sleep
 * while others waited (at most SHARED_SLICE_MS), or after a sleep alone
 * (at most ALONE_SLICE_MS) during which others came.
 */
static int get_event_sliced(struct rv_comp_channel *ch, int64_t deadline_ns, struct rv_cq *shared_by,
			    struct rv_cq **ret_cq, const char *func)
{
	bool woken = false, slept_shared = false;
	uint32_t joins = 0;

	for (;;) {
		struct rv_cq *cq = NULL;
		struct pollfd pfd;
		int rc, ms;

		rv_graph_lock(&ch->obj);
		if (ch->obj.state != RV_OBJ_LIVE) {
			rv_graph_unlock(&ch->obj);
			return rv_obj_check(RV_COBJ(ch), RV_OBJ_COMP_CHANNEL, func);
		}
		rc = ch->ctx->drv->comp_channel_get_event(ch, &cq);
		if (rc == 0 && cq) {
			atomic_fetch_add(&cq->events_taken, 1);
			*ret_cq = cq;
		}
		rv_graph_unlock(&ch->obj);
		if (rc == 0)
			return 0;
		if (rc != -EAGAIN)
			return rv_err_from_driver(rc, func, "reading the completion channel");
		if (shared_by && (woken || slept_shared || joins != atomic_load(&shared_by->chan_joins)))
			return -EAGAIN; /* the caller arms and looks at its CQ again */
		if (deadline_ns == 0)
			return rv_err(EAGAIN, func, "no event is waiting");
		if (deadline_ns < 0) {
			ms = -1;
		} else {
			int64_t left = deadline_ns - mono_ns();
			if (left <= 0)
				return rv_err(ETIMEDOUT, func, "no event within the timeout");
			ms = (int)((left + 999999) / 1000000);
		}
		if (shared_by) {
			int slice = ALONE_SLICE_MS;

			joins = atomic_load(&shared_by->chan_joins);
			if (atomic_load(&shared_by->chan_waiters) > 1) {
				slept_shared = true;
				slice = SHARED_SLICE_MS;
			}
			if (ms < 0 || ms > slice)
				ms = slice;
		}
		pfd.fd = ch->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, ms);
		if (rc < 0 && errno == EINTR)
			return rv_err(EINTR, func, "a signal interrupted the wait");
		woken = rc > 0;
	}
}

static int get_event(struct rv_comp_channel *ch, int64_t deadline_ns, struct rv_cq **ret_cq,
		     const char *func)
{
	return get_event_sliced(ch, deadline_ns, NULL, ret_cq, func);
}

static int64_t deadline_of(int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	if (timeout_ms == 0)
		return 0;
	return mono_ns() + (int64_t)timeout_ms * 1000000;
}

RV_EXPORT int rv_comp_channel_get_event(rv_comp_channel *ch, int timeout_ms, rv_cq **ret_cq)
{
	int rc = rv_obj_check(RV_COBJ(ch), RV_OBJ_COMP_CHANNEL, __func__);

	if (rc < 0)
		return rc;
	if (!ret_cq)
		return rv_err(EINVAL, __func__, "ret_cq is NULL");
	return get_event(ch, deadline_of(timeout_ms), ret_cq, __func__);
}

static int req_notify(struct rv_cq *cq, bool solicited_only, const char *func)
{
	rv_error_clear();
	return rv_err_from_driver(cq->ctx->drv->cq_req_notify(cq, solicited_only), func,
				  "arming the CQ");
}

RV_EXPORT int rv_cq_req_notify(rv_cq *cq, int solicited_only)
{
	int rc = rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__);

	if (rc < 0)
		return rc;
	if (!cq->channel)
		return rv_err(EINVAL, __func__, "CQ #%" PRIu64 " has no completion channel; create it "
			      "with RV_CQ_ATTR_CHANNEL", cq->obj.id);
	return req_notify(cq, solicited_only != 0, __func__);
}

RV_EXPORT int rv_cq_ack_events(rv_cq *cq, unsigned int n)
{
	int rc = rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__);
	uint32_t left;

	if (rc < 0)
		return rc;
	if (n == 0)
		return 0;
	rv_graph_lock(&cq->obj);
	left = atomic_load(&cq->events_taken) - atomic_load(&cq->events_acked);
	if (n > left) {
		rv_graph_unlock(&cq->obj);
		return rv_err(EINVAL, __func__, "%u events to acknowledge but only %u were taken and "
			      "not acknowledged", n, left);
	}
	if (cq->ctx->drv->cq_ack_events)
		cq->ctx->drv->cq_ack_events(cq, n);
	atomic_fetch_add(&cq->events_acked, n);
	rv_graph_unlock(&cq->obj);
	return 0;
}

#define DEFAULT_SPIN_NS 50000

RV_EXPORT int rv_cq_set_wait_mode(rv_cq *cq, int mode, uint64_t spin_ns)
{
	int rc = rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__);

	if (rc < 0)
		return rc;
	if (mode != RV_CQ_WAIT_POLL && mode != RV_CQ_WAIT_EVENT && mode != RV_CQ_WAIT_SPIN_THEN_BLOCK)
		return rv_err(EINVAL, __func__, "unknown wait mode %d", mode);
	if (mode != RV_CQ_WAIT_POLL && !cq->channel)
		return rv_err(EINVAL, __func__, "%s needs a completion channel but CQ #%" PRIu64
			      " has none; create it with RV_CQ_ATTR_CHANNEL",
			      mode == RV_CQ_WAIT_EVENT ? "RV_CQ_WAIT_EVENT" : "RV_CQ_WAIT_SPIN_THEN_BLOCK",
			      cq->obj.id);
	cq->wait_mode = (uint32_t)mode;
	cq->spin_ns = spin_ns ? spin_ns : DEFAULT_SPIN_NS;
	return 0;
}

/* rv_cq_poll for rv_cq_wait: the same checks, and a failure (a closed CQ, a
 * bad argument, a CQ in error) names rv_cq_wait, the call the caller made. */
static int wait_poll(rv_cq *cq, rv_wc *wc, int max)
{
	int n;

	if (RV_UNLIKELY(!rv_obj_live_fast(cq, RV_OBJ_CQ) || !wc || max < 1))
		return poll_checked(cq, wc, max, "rv_cq_wait");
	n = cq->poll(cq, wc, max);
	if (RV_UNLIKELY(n < 0)) {
		struct rv_error_saved why;
		const char *text;

		rv_error_save(&why);
		text = rv_error_text(&why, "rv_cq_poll");
		if (text != why.msg)
			return rv_err(-n, "rv_cq_wait", "%s", text);
	}
	return n;
}

static int channel_wait_once(rv_cq *cq, rv_wc *wc, int max, int64_t deadline)
{
	struct rv_cq *ev = NULL;
	int n, rc = req_notify(cq, false, "rv_cq_wait");

	if (rc < 0)
		return rc;
	/* A completion pushed before the arm does not fire: poll again. */
	n = wait_poll(cq, wc, max);
	if (n != 0)
		return n;
	rc = get_event_sliced(cq->channel, deadline, cq, &ev, "rv_cq_wait");
	if (rc == -EAGAIN)
		return 0; /* a shared wait's slice: arm and look again */
	if (rc < 0)
		return rc == -EAGAIN || rc == -ETIMEDOUT
			       ? rv_err(ETIMEDOUT, "rv_cq_wait", "no completion within the timeout")
			       : rc;
	rv_cq_ack_events(ev, 1);
	if (ev == cq && atomic_load(&cq->chan_waiters) > 1 && req_notify(cq, false, "rv_cq_wait") < 0)
		rv_error_clear(); /* the others' slices still find what comes */
	return wait_poll(cq, wc, max);
}

/* rv_cq_wait's blocking part: the driver's own block (cq_block) where it
 * has one for this CQ, the completion channel otherwise. */
static int block(rv_cq *cq, rv_wc *wc, int max, int64_t deadline)
{
	for (;;) {
		struct rv_cq *ev = NULL;
		int n, rc;

		if (cq->ctx->drv->cq_block) {
			/* The driver waits itself (soft0: on the CQ's sockets and the
			 * channel, receiving in this thread: one wake-up per message). */
			rv_error_clear();
			rc = cq->ctx->drv->cq_block(cq, deadline);
			if (rc == -ETIMEDOUT)
				return rv_err(ETIMEDOUT, "rv_cq_wait", "no completion within the timeout");
			if (rc == -EINTR)
				return rv_err(EINTR, "rv_cq_wait", "a signal interrupted the wait");
			if (rc < 0 && rc != -EOPNOTSUPP)
				return rv_err_from_driver(rc, "rv_cq_wait", "waiting for a completion");
			if (rc >= 0) {
				if (rc > 0) {
					if (get_event(cq->channel, 0, &ev, "rv_cq_wait") == 0)
						rv_cq_ack_events(ev, 1);
					else
						rv_error_clear(); /* taken by another reader */
				}
				n = wait_poll(cq, wc, max);
				if (n != 0)
					return n;
				continue;
			}
		}
		n = channel_wait_once(cq, wc, max, deadline);
		if (n != 0)
			return n;
	}
}

RV_EXPORT int rv_cq_wait(rv_cq *cq, rv_wc *wc, int max, int timeout_ms)
{
	int64_t deadline, spin_end;
	int n = wait_poll(cq, wc, max);

	if (n != 0)
		return n;
	deadline = deadline_of(timeout_ms);
	if (deadline == 0)
		return rv_err(EAGAIN, __func__, "no completion is waiting");
	if (cq->wait_mode != RV_CQ_WAIT_EVENT) {
		spin_end = cq->wait_mode == RV_CQ_WAIT_POLL ? deadline : mono_ns() + (int64_t)cq->spin_ns;
		if (deadline > 0 && spin_end > deadline)
			spin_end = deadline;
		for (;;) {
			n = wait_poll(cq, wc, max);
			if (n != 0)
				return n;
			if (spin_end >= 0 && mono_ns() >= spin_end)
				break;
		}
		if (cq->wait_mode == RV_CQ_WAIT_POLL || (deadline > 0 && mono_ns() >= deadline))
			return rv_err(ETIMEDOUT, __func__, "no completion within the timeout");
	}
	atomic_fetch_add(&cq->chan_joins, 1);
	atomic_fetch_add(&cq->chan_waiters, 1);
	n = block(cq, wc, max, deadline);
	atomic_fetch_sub(&cq->chan_waiters, 1);
	return n;
}

static const struct {
	const char *name;
	const char *hint;
} wc_status_text[] = {
	[RV_WC_SUCCESS] = {"success", "the operation completed"},
	[RV_WC_LOC_LEN_ERR] = {"local length error",
		"a receive buffer was smaller than the incoming message, or a send exceeded the port MTU (UD) or max message size"},
	[RV_WC_LOC_QP_OP_ERR] = {"local QP operation error",
		"the work request was malformed for this QP: too many SGEs, inline data over max_inline_data, or an opcode the QP type does not allow"},
	[RV_WC_LOC_EEC_OP_ERR] = {"local EE context operation error", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_LOC_PROT_ERR] = {"local protection error",
		"an SGE's lkey does not cover its address range, belongs to another PD, or lacks LOCAL_WRITE for a receive/READ sink"},
	[RV_WC_WR_FLUSH_ERR] = {"work request flushed error",
		"the QP is in the error state; this WR was never executed. Look at the first completion with another status for the cause"},
	[RV_WC_MW_BIND_ERR] = {"memory window bind error", "the MR lacks MW_BIND access or the window exceeds the MR"},
	[RV_WC_BAD_RESP_ERR] = {"bad response error", "the responder sent an unexpected transport response"},
	[RV_WC_LOC_ACCESS_ERR] = {"local access error",
		"a protection error on the local data buffers during an RDMA READ response or atomic response"},
	[RV_WC_REM_INV_REQ_ERR] = {"remote invalid request error",
		"the responder rejected the request: an opcode it does not support, a message too long for its receive, or an invalid QP state"},
	[RV_WC_REM_ACCESS_ERR] = {"remote access error",
		"the rkey is wrong, the remote range is outside the MR, the MR lacks REMOTE_WRITE/READ/ATOMIC, or it belongs to another PD than the remote QP"},
	[RV_WC_REM_OP_ERR] = {"remote operation error", "the responder could not complete the operation (e.g. its receive WR was bad)"},
	[RV_WC_RETRY_EXC_ERR] = {"transport retry counter exceeded",
		"the peer did not answer within timeout x retry_cnt: it died, its QP is not in RTR/RTS, or the path (GID, LID, MTU) is wrong"},
	[RV_WC_RNR_RETRY_EXC_ERR] = {"RNR retry counter exceeded",
		"the peer had no receive posted for a SEND rnr_retry times in a row: post receives before the peer sends, or raise rnr_retry (7 = infinite)"},
	[RV_WC_LOC_RDD_VIOL_ERR] = {"local RDD violation error", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_REM_INV_RD_REQ_ERR] = {"remote invalid RD request", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_REM_ABORT_ERR] = {"remote aborted error", "the responder aborted the operation"},
	[RV_WC_INV_EECN_ERR] = {"invalid EE context number", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_INV_EEC_STATE_ERR] = {"invalid EE context state error", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_FATAL_ERR] = {"fatal error", "the device failed; reopen the context"},
	[RV_WC_RESP_TIMEOUT_ERR] = {"response timeout error", "the responder did not answer in time"},
	[RV_WC_GENERAL_ERR] = {"general error", "the device reported an error with no specific status; check the vendor error"},
};

RV_EXPORT const char *rv_wc_status_str(int status)
{
	if (status < 0 || (size_t)status >= sizeof(wc_status_text) / sizeof(wc_status_text[0]))
		return "unknown status";
	return wc_status_text[status].name;
}

RV_EXPORT const char *rv_wc_status_hint(int status)
{
	if (status < 0 || (size_t)status >= sizeof(wc_status_text) / sizeof(wc_status_text[0]))
		return "not a work-completion status known to this version of rverbs";
	return wc_status_text[status].hint;
}
