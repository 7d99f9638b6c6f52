/*
 * Devices and contexts: the merged device list (real devices through the
 * system's libibverbs, then rverbs' soft devices), opening and closing a
 * context, the device's names and GUID, and asynchronous events.
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compat.h"
#include "passthrough.h"

#define COMPAT_MAX_SOFT 8

static struct compat_device soft_devs[COMPAT_MAX_SOFT];
static size_t n_soft;
static pthread_once_t soft_once = PTHREAD_ONCE_INIT;

static __thread int inside_rverbs;

void compat_enter_rverbs(void)
{
	inside_rverbs++;
}

void compat_leave_rverbs(void)
{
	inside_rverbs--;
}

bool compat_inside_rverbs(void)
{
	return inside_rverbs > 0;
}

bool compat_is_soft_device(const struct ibv_device *dev)
{
	uintptr_t p = (uintptr_t)dev, base = (uintptr_t)soft_devs;

	/* One of our slots, at its start, and filled. */
	return p >= base && p < base + sizeof(soft_devs) &&
	       (p - base) % sizeof(struct compat_device) == 0 &&
	       soft_devs[(p - base) / sizeof(struct compat_device)].rv;
}

/* The soft devices are found once and kept for the process's life: a
 * program may hold an unopened ibv_device past ibv_free_device_list(). */
static void find_soft_devices(void)
{
	rv_device **list = NULL;
	size_t n = 0;

	compat_enter_rverbs();
	if (rv_device_list(&list, &n) < 0)
		n = 0;
	compat_leave_rverbs();
	for (size_t i = 0; i < n && n_soft < COMPAT_MAX_SOFT; i++) {
		struct compat_device *d = &soft_devs[n_soft];

		if (rv_device_kind_of(list[i]) != RV_DEVICE_SOFT)
			continue;
		d->rv = rv_device_ref(list[i]);
		/* Like a RoCE NIC: an InfiniBand-transport CA on an Ethernet port
		 * (the port says so), so programs address it with LID and GID. */
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.name, sizeof(d->dev.name), "%s", rv_device_name(list[i]));
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "rverbs-%s", rv_device_name(list[i]));
		/* No sysfs directory exists for it: programs that read one find none. */
		snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/rverbs-%s",
			 rv_device_name(list[i]));
		snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
			 rv_device_name(list[i]));
		n_soft++;
	}
	if (list)
		rv_device_list_free(list);
}

/* A list is our array, with the real library's own list (to free) kept
 * just before it. */
struct list_head {
	struct ibv_device **real;
	size_t pad; /* keeps the array 16-byte aligned, like malloc's */
};

COMPAT_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **real = NULL;
	struct list_head *head;
	struct ibv_device **out;
	int n_real = 0, n = 0;
	bool with_soft = !compat_inside_rverbs();

	if (with_soft)
		pthread_once(&soft_once, find_soft_devices);
	if (compat_real_load()) {
		real = compat_real.ibv_get_device_list(&n_real);
		if (!real)
			n_real = 0; /* no kernel support: soft devices only */
	}
	head = calloc(1, sizeof(*head) + sizeof(*out) * ((size_t)n_real + n_soft + 1));
	if (!head) {
		if (real)
			compat_real.ibv_free_device_list(real);
		errno = ENOMEM;
		return NULL;
	}
	head->real = real;
	out = (struct ibv_device **)(head + 1);
	for (int i = 0; i < n_real; i++)
		out[n++] = real[i];
	for (size_t i = 0; with_soft && i < n_soft; i++)
		out[n++] = &soft_devs[i].dev;
	out[n] = NULL;
	if (num_devices)
		*num_devices = n;
	return out;
}

COMPAT_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	struct list_head *head;

	if (!list)
		return;
	head = (struct list_head *)list - 1;
	if (head->real)
		compat_real.ibv_free_device_list(head->real);
	free(head);
}

COMPAT_EXPORT const char *ibv_get_device_name(struct ibv_device *dev)
{
	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	return dev->name; /* the same field for real devices */
}

COMPAT_EXPORT __be64 ibv_get_device_guid(struct ibv_device *dev)
{
	rv_context *ctx = NULL;
	rv_device_attr a = {.mask = RV_DEVICE_ATTR_ALL};
	uint64_t guid = 0;

	if (!dev)
		return 0;
	if (!compat_is_soft_device(dev))
		return compat_real.ibv_get_device_guid ? compat_real.ibv_get_device_guid(dev) : 0;
	/* soft0's GUID is a context's (its listen address): open one to ask. */
	if (rv_context_new(((struct compat_device *)dev)->rv, NULL, &ctx) == 0 &&
	    rv_context_query_device(ctx, &a) == 0)
		guid = a.node_guid;
	rv_context_unref(ctx);
	return htobe64(guid);
}

COMPAT_EXPORT int ibv_get_device_index(struct ibv_device *dev)
{
	if (!dev)
		return -1;
	if (!compat_is_soft_device(dev))
		return compat_real.ibv_get_device_index ? compat_real.ibv_get_device_index(dev) : -1;
	return -1; /* no kernel device, so no kernel index */
}

/*
 * Every soft0 context listens on a port of its own, its LID, where a NIC's
 * contexts share their port's. A program that connects two contexts of one
 * process (pyverbs' tests: a client and a server, each with its own context)
 * names the peer by its own port's LID and GID, as on a NIC. QP numbers are
 * unique in a process, so the context holding the destination QP tells which
 * LID was meant.
 */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct compat_ctx *open_ctxs; /* guarded by open_lock */

uint16_t compat_peer_lid(struct compat_ctx *cc, uint16_t dlid, const uint8_t *dgid, uint32_t qpn)
{
	uint16_t lid = dlid;

	if (dlid != cc->lid || memcmp(dgid, cc->gid, 16) != 0)
		return dlid;
	pthread_mutex_lock(&open_lock);
	for (struct compat_ctx *o = open_ctxs; o && lid == dlid; o = o->next_open) {
		if (o == cc)
			continue;
		pthread_mutex_lock(&o->lock);
		for (struct compat_qp *q = o->qps; q; q = q->next)
			if (q->qp.qp_num == qpn)
				lid = o->lid;
		pthread_mutex_unlock(&o->lock);
	}
	pthread_mutex_unlock(&open_lock);
	return lid;
}

static struct ibv_context *open_soft(struct compat_device *d)
{
	struct compat_ctx *cc = calloc(1, sizeof(*cc));
	rv_port_attr port = {.mask = RV_PORT_ATTR_ALL};
	int rc;

	if (!cc)
		return compat_fail_null(-ENOMEM);
	rc = rv_context_new(d->rv, NULL, &cc->rv);
	if (rc == 0)
		rc = rv_context_query_gid(cc->rv, 1, 0, cc->gid);
	if (rc == 0)
		rc = rv_context_query_port(cc->rv, 1, &port);
	if (rc < 0) {
		rv_context_unref(cc->rv);
		free(cc);
		return compat_fail_null(rc);
	}
	pthread_mutex_init(&cc->lock, NULL);
	cc->vctx.sz = sizeof(cc->vctx);
	cc->vctx.context.device = &d->dev;
	/* No kernel command file: the async descriptor stands in, so that a
	 * program can dup it and ibv_import_device refuses it (EOPNOTSUPP). */
	cc->vctx.context.cmd_fd = cc->vctx.context.async_fd;
	cc->vctx.context.async_fd = rv_context_async_fd(cc->rv);
	cc->vctx.context.num_comp_vectors = 1;
	cc->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&cc->vctx.context.mutex, NULL);
	compat_ctx_fill_ops(cc);
	cc->lid = port.lid;
	pthread_mutex_lock(&open_lock);
	cc->next_open = open_ctxs;
	open_ctxs = cc;
	pthread_mutex_unlock(&open_lock);
	return &cc->vctx.context;
}

COMPAT_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	if (!dev)
		return compat_fail_null(-EINVAL);
	if (compat_is_soft_device(dev))
		return open_soft((struct compat_device *)dev);
	COMPAT_REAL_PTR(ibv_open_device, dev);
}

/* Whether fd is (a duplicate of) an open soft0 context's cmd_fd. */
static bool is_soft_cmd_fd(int fd)
{
	struct stat st, o;
	bool found = false;

	if (fstat(fd, &st) < 0)
		return false;
	pthread_mutex_lock(&open_lock);
	for (struct compat_ctx *c = open_ctxs; c && !found; c = c->next_open)
		found = fstat(c->vctx.context.cmd_fd, &o) == 0 && o.st_dev == st.st_dev &&
			o.st_ino == st.st_ino;
	pthread_mutex_unlock(&open_lock);
	return found;
}

COMPAT_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	/* A soft0 context has no kernel object to share with another process
	 * or context: refused as by a kernel without the import ioctl. */
	if (!compat_real.ibv_import_device || is_soft_cmd_fd(cmd_fd))
		return compat_fail_null(-EOPNOTSUPP);
	COMPAT_REAL_PTR(ibv_import_device, cmd_fd);
}

COMPAT_EXPORT int ibv_close_device(struct ibv_context *c)
{
	struct compat_ctx *cc;

	if (!c)
		return errno = EINVAL;
	if (!compat_is_soft(c))
		COMPAT_REAL_INT(ibv_close_device, c);
	cc = compat_ctx_of(c);
	pthread_mutex_lock(&open_lock);
	for (struct compat_ctx **p = &open_ctxs; *p; p = &(*p)->next_open)
		if (*p == cc) {
			*p = cc->next_open;
			break;
		}
	pthread_mutex_unlock(&open_lock);
	compat_linger_reap(cc, true);
	/* rverbs closes what the program left open, children first. */
	rv_context_close(cc->rv);
	rv_context_unref(cc->rv);
	pthread_mutex_destroy(&cc->lock);
	pthread_mutex_destroy(&c->mutex);
	free(cc);
	return 0;
}

COMPAT_EXPORT int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *event)
{
	struct compat_ctx *cc;
	rv_async_event ev;
	int rc;

	if (!c || !event)
		return compat_fail_errno(-EINVAL);
	if (!compat_is_soft(c)) {
		if (!compat_real.ibv_get_async_event)
			return compat_fail_errno(-EINVAL);
		rc = compat_real.ibv_get_async_event(c, event);
		if (rc)
			compat_real_errno();
		return rc;
	}
	cc = compat_ctx_of(c);
	/* Blocking, as libibverbs' read(2) of a blocking async_fd. soft0's
	 * descriptor is non-blocking for rverbs' own use, so a program's
	 * O_NONBLOCK cannot be told from it: a call with nothing pending waits
	 * (docs/compat.md). */
	rc = rv_context_get_async_event(cc->rv, &ev, -1);
	if (rc < 0)
		return compat_fail_errno(rc);
	memset(event, 0, sizeof(*event));
	event->event_type = (enum ibv_event_type)ev.type; /* the same numbering */
	pthread_mutex_lock(&cc->lock);
	if (ev.qp)
		event->element.qp = compat_find_qp(cc, ev.qp);
	else if (ev.cq)
		event->element.cq = compat_find_cq(cc, ev.cq);
	else if (ev.srq)
		event->element.srq = compat_find_srq(cc, ev.srq);
	else
		event->element.port_num = (int)ev.port_num;
	pthread_mutex_unlock(&cc->lock);
	/* The program's ack comes later and needs nothing: drop rverbs' references
	 * now (a destroyed object's events are not waited for). */
	rv_async_event_ack(&ev);
	return 0;
}

COMPAT_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct ibv_context *c = NULL;

	if (!event)
		return;
	switch (event->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		c = event->element.qp ? event->element.qp->context : NULL;
		break;
	case IBV_EVENT_CQ_ERR:
		c = event->element.cq ? event->element.cq->context : NULL;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		c = event->element.srq ? event->element.srq->context : NULL;
		break;
	case IBV_EVENT_WQ_FATAL:
		break; /* soft0 has no WQs */
	default:
		return; /* port and device events carry no object to account */
	}
	if (c && compat_is_soft(c))
		return;
	if (compat_real.ibv_ack_async_event)
		compat_real.ibv_ack_async_event(event);
}
