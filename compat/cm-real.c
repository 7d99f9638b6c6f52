/*
 * rdma_cm on real devices: the system's librdmacm, passed through.
 *
 * The system's librdmacm is loaded by absolute path into the namespace of
 * the real libibverbs (passthrough.c), so its verbs calls reach the real
 * libibverbs and its providers. An id is created as the layer's; it becomes
 * a real one at rdma_bind_addr or rdma_resolve_addr when the system's
 * rdma_cm can bind the address (or the source address toward the
 * destination) to a device: the address of a netdev a real RDMA device
 * serves. Loopback and wildcard addresses, and addresses the system's
 * rdma_cm answers ENODEV or EADDRNOTAVAIL for, stay soft0's. A wildcard
 * listener listens on both: soft0's TCP port and the real devices.
 *
 * A real id's verbs objects are the real library's own (id->verbs, the PD,
 * the QP), as the libibverbs pass-through hands them to the program. Its
 * events come on the system's channel that the layer's channel keeps beside
 * its queue; the progress thread moves them into the queue, so one channel
 * (and its fd) delivers the events of ids of both kinds.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm.h"

/* libibverbs.so.1 of the layer exports it (passthrough.c). */
void *rverbs_compat_real_rdmacm(void);

struct cm_real cm_real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool available;
static struct cm_channel *real_channels; /* under cm_lock */

static void load(void)
{
	void *h = rverbs_compat_real_rdmacm();
	struct cm_real r = {0};
	void *sym;

	if (!h)
		return;
#define CM_REAL_LOOKUP(name)                                                   \
	sym = dlsym(h, #name);                                                 \
	memcpy(&r.name, &sym, sizeof(sym));                                    \
	if (!r.name)                                                           \
		return;
	CM_REAL_FUNCS(CM_REAL_LOOKUP)
#undef CM_REAL_LOOKUP
	/* The path may name this very layer: then there is no real one. */
	if (r.rdma_create_id == &rdma_create_id)
		return;
	sym = dlsym(h, "__errno_location"); /* the namespace's libc */
	memcpy(&r.errno_location, &sym, sizeof(sym));
	cm_real = r;
	available = true;
}

bool cm_real_available(void)
{
	pthread_once(&once, load);
	return available;
}

int cm_real_fail(void)
{
	if (cm_real.errno_location)
		errno = *cm_real.errno_location();
	return -1;
}

void cm_real_sync(struct cm_id *c)
{
	struct rdma_cm_id *r = c->real;

	if (!r)
		return;
	c->id.verbs = r->verbs;
	c->id.route = r->route;
	c->id.port_num = r->port_num;
	c->id.qp = r->qp;
	c->id.qp_type = r->qp_type;
	c->id.pd = r->pd;
	c->id.send_cq_channel = r->send_cq_channel;
	c->id.send_cq = r->send_cq;
	c->id.recv_cq_channel = r->recv_cq_channel;
	c->id.recv_cq = r->recv_cq;
	c->id.srq = r->srq;
}

struct rdma_event_channel *cm_real_channel(struct cm_channel *ch)
{
	int rc;

	if (ch->real)
		return ch->real;
	ch->real = cm_real.rdma_create_event_channel();
	if (!ch->real) {
		cm_real_fail();
		return NULL;
	}
	rc = cm_watch_channel(ch);
	if (rc < 0) {
		cm_real.rdma_destroy_event_channel(ch->real);
		ch->real = NULL;
		errno = -rc;
		return NULL;
	}
	ch->real_next = real_channels;
	real_channels = ch;
	return ch->real;
}

void cm_real_channel_free(struct cm_channel *ch)
{
	if (!ch->real)
		return;
	pthread_mutex_lock(&cm_lock);
	cm_unwatch_channel(ch);
	for (struct cm_channel **pp = &real_channels; *pp; pp = &(*pp)->real_next)
		if (*pp == ch) {
			*pp = ch->real_next;
			break;
		}
	pthread_mutex_unlock(&cm_lock);
	cm_real.rdma_destroy_event_channel(ch->real);
	ch->real = NULL;
}

static bool channel_alive(const struct cm_channel *ch)
{
	for (const struct cm_channel *i = real_channels; i; i = i->real_next)
		if (i == ch)
			return true;
	return false;
}

static bool is_any(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static bool is_loopback(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/* A new real id for c on its channel's real part (cm_lock held). */
static struct rdma_cm_id *new_real(struct cm_id *c)
{
	struct cm_channel *ch = cm_container_of(c->id.channel, struct cm_channel, ch);
	struct rdma_cm_id *r;

	if (!cm_real_channel(ch))
		return NULL;
	if (cm_real.rdma_create_id(ch->real, &r, c, c->id.ps) != 0) {
		cm_real_fail();
		return NULL;
	}
	return r;
}

int cm_real_try_bind(struct cm_id *c, const struct sockaddr *addr)
{
	struct rdma_cm_id *r;
	int err;

	if (!cm_real_available() || is_any(addr) || is_loopback(addr))
		return 1;
	pthread_mutex_lock(&cm_lock);
	r = new_real(c);
	if (!r) {
		pthread_mutex_unlock(&cm_lock);
		return 1; /* no rdma_cm in the kernel: soft0's */
	}
	if (cm_real.rdma_bind_addr(r, (struct sockaddr *)addr) != 0) {
		cm_real_fail();
		err = errno;
		pthread_mutex_unlock(&cm_lock);
		cm_real.rdma_destroy_id(r);
		if (err == ENODEV || err == EADDRNOTAVAIL || err == ENOENT || err == ENXIO)
			return 1; /* no real device serves it */
		errno = err;
		return -1;
	}
	c->real = r;
	c->bound = true;
	cm_real_sync(c);
	pthread_mutex_unlock(&cm_lock);
	return 0;
}

int cm_real_try_resolve(struct cm_id *c, struct sockaddr *dst, int timeout_ms)
{
	struct sockaddr_storage src;
	socklen_t len = sizeof(src);
	int fd, rc;

	if (!cm_real_available() || is_loopback(dst))
		return 1;
	/* The source address the kernel would use toward dst. */
	memset(&src, 0, sizeof(src));
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	rc = connect(fd, dst, dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							 : sizeof(struct sockaddr_in));
	if (rc == 0)
		rc = getsockname(fd, (struct sockaddr *)&src, &len);
	close(fd);
	if (rc != 0)
		return 1;
	/* A wildcard-bound id keeps its port. */
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = c->bound ? c->id.route.addr.src_sin.sin_port : 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port =
			c->bound ? c->id.route.addr.src_sin6.sin6_port : 0;
	rc = cm_real_try_bind(c, (struct sockaddr *)&src);
	if (rc != 0)
		return rc; /* soft0's: a wildcard-bound id keeps its socket */
	/* A wildcard-bound id's soft0 socket goes: the port is the real id's. */
	pthread_mutex_lock(&cm_lock);
	cm_close_fd(c);
	pthread_mutex_unlock(&cm_lock);
	if (cm_real.rdma_resolve_addr(c->real, NULL, dst, timeout_ms) != 0)
		return cm_real_fail();
	return 0;
}

void cm_real_listen_too(struct cm_id *c, int backlog)
{
	struct rdma_cm_id *r;

	if (!cm_real_available() || c->real_listener)
		return;
	pthread_mutex_lock(&cm_lock);
	r = new_real(c);
	pthread_mutex_unlock(&cm_lock);
	if (!r)
		return;
	if (cm_real.rdma_bind_addr(r, &c->id.route.addr.src_addr) != 0 ||
	    cm_real.rdma_listen(r, backlog) != 0) {
		if (getenv("RVERBS_COMPAT_DEBUG"))
			fprintf(stderr, "rverbs compat: the wildcard listener is soft0's only: %s\n",
				strerror(*cm_real.errno_location()));
		cm_real.rdma_destroy_id(r);
		return;
	}
	c->real_listener = r;
}

void cm_real_pump(struct cm_channel *ch)
{
	struct pollfd p;
	struct rdma_cm_event *rev;
	struct cm_id *c, *l = NULL;
	struct cm_event *e;

	if (!channel_alive(ch))
		return;
	p = (struct pollfd){.fd = ch->real->fd, .events = POLLIN};
	if (poll(&p, 1, 0) != 1 || cm_real.rdma_get_cm_event(ch->real, &rev) != 0)
		return;
	c = rev->id->context;
	if (rev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* rev->id is a new real id, with its listener's context. */
		struct rdma_cm_id *child = rev->id;

		l = rev->listen_id->context;
		c = NULL;
		if (cm_alive(l))
			c = calloc(1, sizeof(*c));
		if (!c) {
			cm_real.rdma_reject(child, NULL, 0);
			cm_real.rdma_ack_cm_event(rev);
			cm_real.rdma_destroy_id(child);
			return;
		}
		c->fd = -1;
		c->real = child;
		c->bound = true;
		c->state = CM_REQ_RECEIVED;
		c->peer_listener = &l->id;
		c->id.channel = l->id.channel;
		c->id.context = l->id.context;
		c->id.ps = l->id.ps;
		child->context = c;
		cm_real_sync(c);
		cm_link_id(c);
	} else if (!cm_alive(c)) {
		cm_real.rdma_ack_cm_event(rev); /* its id is being destroyed */
		return;
	}
	cm_real_sync(c);
	e = calloc(1, sizeof(*e));
	if (!e) {
		cm_real.rdma_ack_cm_event(rev);
		return;
	}
	e->ev = *rev;
	e->ev.id = &c->id;
	e->ev.listen_id = l ? &l->id : NULL;
	e->real = rev;
	/* Events go to the id's channel (a sync child migrates: its own). */
	cm_enqueue(cm_container_of(c->id.channel, struct cm_channel, ch), e);
}
