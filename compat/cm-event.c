/*
 * Event channels and events: rdma_create_event_channel, rdma_get_cm_event,
 * rdma_ack_cm_event, rdma_event_str, and the waiting of synchronous ids.
 *
 * A channel is a queue and a counting eventfd (EFD_SEMAPHORE): each queued
 * event adds one, and rdma_get_cm_event takes one before it takes an event,
 * so the channel's fd polls readable exactly while events wait, and blocks
 * (or says EAGAIN when the program made it non-blocking) as librdmacm's does.
 * One descriptor, as librdmacm's: closing it does not wake a thread blocked
 * in rdma_get_cm_event (a pipe's write end would, with a false EOF).
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm.h"

static void event_free(struct cm_event *e);

struct cm_channel *cm_channel_new(void)
{
	struct cm_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	pthread_mutex_init(&ch->lock, NULL);
	return ch;
}

void cm_channel_free(struct cm_channel *ch)
{
	struct cm_event *e, *n;

	if (!ch)
		return;
	for (e = ch->head; e; e = n) {
		n = e->next;
		event_free(e);
	}
	cm_real_channel_free(ch); /* after the acks of its events */
	close(ch->ch.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *ch = cm_channel_new();

	return ch ? &ch->ch : NULL;
}

CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel)
		cm_channel_free(cm_container_of(channel, struct cm_channel, ch));
}

int cm_enqueue(struct cm_channel *ch, struct cm_event *e)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ch->lock);
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	pthread_mutex_unlock(&ch->lock);
	if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

/* Free an event; a real id's goes back to the system's librdmacm. */
static void event_free(struct cm_event *e)
{
	if (e->real && cm_real.rdma_ack_cm_event)
		cm_real.rdma_ack_cm_event(e->real);
	free(e);
}

int cm_post_event(struct cm_id *c, enum rdma_cm_event_type type, int status,
		  struct rdma_cm_id *listen_id, const struct cm_msg *from_peer)
{
	struct cm_channel *ch = cm_container_of(c->id.channel, struct cm_channel, ch);
	struct cm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->ev.id = &c->id;
	e->ev.listen_id = listen_id;
	e->ev.event = type;
	e->ev.status = status;
	if (from_peer) {
		memcpy(e->private_data, from_peer->private_data, from_peer->private_data_len);
		if (c->id.qp_type == IBV_QPT_UD) {
			e->ev.param.ud.private_data = e->private_data;
			e->ev.param.ud.private_data_len = from_peer->private_data_len;
			e->ev.param.ud.qp_num = from_peer->qpn;
			e->ev.param.ud.qkey = from_peer->qkey;
			e->ev.param.ud.ah_attr.dlid = from_peer->lid;
			e->ev.param.ud.ah_attr.is_global = 1;
			memcpy(e->ev.param.ud.ah_attr.grh.dgid.raw, from_peer->gid, 16);
			e->ev.param.ud.ah_attr.grh.hop_limit = 64;
			e->ev.param.ud.ah_attr.port_num = 1;
		} else {
			e->ev.param.conn.private_data = e->private_data;
			e->ev.param.conn.private_data_len = from_peer->private_data_len;
			/* What the peer offers, seen from this side. */
			e->ev.param.conn.responder_resources = from_peer->initiator_depth;
			e->ev.param.conn.initiator_depth = from_peer->responder_resources;
			e->ev.param.conn.rnr_retry_count = from_peer->rnr_retry_count;
			e->ev.param.conn.retry_count = from_peer->retry_count;
			e->ev.param.conn.srq = from_peer->srq;
			e->ev.param.conn.qp_num = from_peer->qpn;
		}
	}
	return cm_enqueue(ch, e);
}

int cm_post_mc_event(struct cm_id *c, enum rdma_cm_event_type type, int status, const struct cm_mc *mc)
{
	struct cm_channel *ch = cm_container_of(c->id.channel, struct cm_channel, ch);
	struct cm_event *e = calloc(1, sizeof(*e));
	struct rdma_ud_param *ud;

	if (!e)
		return -ENOMEM;
	e->ev.id = &c->id;
	e->ev.event = type;
	e->ev.status = status;
	ud = &e->ev.param.ud;
	ud->private_data = mc->context;
	ud->qp_num = 0xffffff; /* the multicast QP (IBA 9.8.1) */
	ud->qkey = RDMA_UDP_QKEY;
	ud->ah_attr.is_global = 1;
	ud->ah_attr.grh.dgid = mc->mgid;
	ud->ah_attr.grh.hop_limit = 64;
	ud->ah_attr.port_num = 1;
	/* dlid 0: soft0's port is Ethernet-like, a group has no MLID (as RoCE). */
	return cm_enqueue(ch, e);
}

void cm_purge_events(struct rdma_event_channel *channel, const struct rdma_cm_id *id,
		     void (*dropped)(struct rdma_cm_event *ev))
{
	struct cm_channel *ch = cm_container_of(channel, struct cm_channel, ch);
	struct cm_event **pp, *e, *gone = NULL;
	uint64_t one;

	pthread_mutex_lock(&ch->lock);
	for (pp = &ch->head; (e = *pp);) {
		if (e->ev.id == id || e->ev.listen_id == id) {
			*pp = e->next;
			e->next = gone;
			gone = e;
			continue;
		}
		ch->tail = e;
		pp = &e->next;
	}
	if (!ch->head)
		ch->tail = NULL;
	pthread_mutex_unlock(&ch->lock);
	while ((e = gone)) {
		struct pollfd p = {.fd = ch->ch.fd, .events = POLLIN};

		gone = e->next;
		/* Take its count back; never block (a reader may have taken it
		 * already, and then finds no event: ENODATA). */
		if (poll(&p, 1, 0) == 1 && read(ch->ch.fd, &one, sizeof(one)) < 0) {
			/* nothing to take back */
		}
		/* A real event is acked first: dropped() may destroy its id,
		 * which the system's librdmacm allows only once it is acked. */
		if (e->real && cm_real.rdma_ack_cm_event)
			cm_real.rdma_ack_cm_event(e->real);
		e->real = NULL;
		if (dropped)
			dropped(&e->ev);
		event_free(e);
	}
}

CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_channel *ch;
	struct cm_event *e;
	uint64_t one;
	ssize_t n;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	ch = cm_container_of(channel, struct cm_channel, ch);
	do
		n = read(ch->ch.fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(one))
		return -1;
	pthread_mutex_lock(&ch->lock);
	e = ch->head;
	if (e) {
		ch->head = e->next;
		if (!ch->head)
			ch->tail = NULL;
	}
	pthread_mutex_unlock(&ch->lock);
	if (!e) {
		errno = ENODATA;
		return -1;
	}
	e->next = NULL;
	*event = &e->ev;
	return 0;
}

CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	event_free(cm_container_of(event, struct cm_event, ev));
	return 0;
}

int cm_wait(struct cm_id *c, enum rdma_cm_event_type want, struct rdma_cm_id **ret_new_id)
{
	struct rdma_cm_event *ev;
	int status;
	enum rdma_cm_event_type got;

	if (rdma_get_cm_event(c->id.channel, &ev) < 0)
		return -1;
	got = ev->event;
	status = ev->status;
	if (ret_new_id)
		*ret_new_id = ev->id;
	rdma_ack_cm_event(ev);
	if (got == want)
		return 0;
	errno = status < 0 ? -status : (status ? status : ECONNREFUSED);
	return -1;
}

CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event >= sizeof(names) / sizeof(names[0]))
		return "UNKNOWN EVENT";
	return names[event];
}
