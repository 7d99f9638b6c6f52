/*
 * rdma_cm ids on soft0: create and destroy, address and route resolution,
 * listen, connect, accept, reject, disconnect, and the progress thread that
 * receives the exchange's messages and turns them into events.
 *
 * Every id is on one list under cm_lock; the progress thread takes one epoll
 * event at a time and handles it under cm_lock only if its id is still on
 * the list, so rdma_destroy_id never races with it. Nothing blocks while
 * holding cm_lock: sockets are non-blocking and a message is 244 bytes.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/sa.h>

#include "cm.h"

pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_id *ids;
static int epfd = -1;
static pthread_once_t progress_once = PTHREAD_ONCE_INIT;
static void start_progress(void);

/* How long rdma_connect waits for the TCP connection of the exchange. */
#define CM_CONNECT_TIMEOUT_MS 5000
/* How long a refused connection is tried again before the program hears
 * REJECTED: resolving an address and a route on soft0 takes no time, so a
 * client that a peer process told to go ahead (perftest's handshake) can
 * reach the port before that peer's rdma_listen, where a NIC's address and
 * route resolution would have given it the milliseconds it needs. */
#define CM_REFUSED_RETRY_MS 1000
#define CM_REFUSED_STEP_MS 20

static bool alive(const struct cm_id *c)
{
	for (const struct cm_id *i = ids; i; i = i->next)
		if (i == c)
			return true;
	return false;
}

static void unlink_id(struct cm_id *c)
{
	for (struct cm_id **pp = &ids; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

void cm_close_fd(struct cm_id *c)
{
	if (c->fd < 0)
		return;
	if (epfd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->rlen = 0;
}

bool cm_alive(const struct cm_id *c)
{
	return alive(c);
}

void cm_link_id(struct cm_id *c)
{
	c->next = ids;
	ids = c;
}

void cm_unlink_id(struct cm_id *c)
{
	unlink_id(c);
}

/* A real channel's fd: tagged with the low bit (ids are aligned). */
int cm_watch_channel(struct cm_channel *ch)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uintptr_t)ch | 1};

	pthread_once(&progress_once, start_progress);
	if (epfd < 0)
		return -ENOMEM;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, ch->real->fd, &ev) < 0 ? -errno : 0;
}

void cm_unwatch_channel(struct cm_channel *ch)
{
	if (epfd >= 0 && ch->real)
		epoll_ctl(epfd, EPOLL_CTL_DEL, ch->real->fd, NULL);
}

static int watch(struct cm_id *c)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0 ? -errno : 0;
}

int cm_send(struct cm_id *c, const struct cm_msg *m)
{
	uint8_t buf[CM_MSG_WIRE_LEN];
	size_t off = 0;

	if (c->fd < 0)
		return -ENOTCONN;
	cm_msg_encode(m, buf);
	while (off < sizeof(buf)) {
		ssize_t n = send(c->fd, buf + off, sizeof(buf) - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			/* 244 bytes on a fresh connection: the buffer is only
			 * full when the peer stopped reading; wait a little. */
			struct pollfd p = {.fd = c->fd, .events = POLLOUT};

			if (poll(&p, 1, 1000) == 1)
				continue;
			return -ETIMEDOUT;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		off += (size_t)n;
	}
	return 0;
}

/* The exchange is over (the peer went away or sent the end, or the program
 * disconnected): the program hears DISCONNECTED once. The QP is left alone:
 * the program owns it and may have destroyed it already (as with librdmacm,
 * only rdma_disconnect moves it to ERR, in the caller's thread). */
static void peer_gone(struct cm_id *c)
{
	enum cm_state was = c->state;

	cm_close_fd(c);
	if (was == CM_CONNECTING) {
		c->state = CM_IDLE;
		cm_post_event(c, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL, NULL);
		return;
	}
	if ((was == CM_ESTABLISHED || was == CM_ACCEPTED || was == CM_RESPONDED) &&
	    !c->disconnect_reported) {
		c->disconnect_reported = true;
		cm_post_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL);
	}
	c->state = CM_DISCONNECTED;
}

static void on_message(struct cm_id *c, const struct cm_msg *m)
{
	switch (c->state) {
	case CM_IDLE:
		/* A child of a listener: its first message must be the request. */
		if (m->type != CM_MSG_REQ || m->qp_type != c->id.qp_type)
			break;
		c->peer = *m;
		c->state = CM_REQ_RECEIVED;
		cm_post_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, c->peer_listener, m);
		return;
	case CM_CONNECTING:
		if (m->type == CM_MSG_REJ) {
			cm_close_fd(c);
			c->state = CM_IDLE;
			/* IB CM's reason "consumer defined" */
			cm_post_event(c, RDMA_CM_EVENT_REJECTED, 28, NULL, m);
			return;
		}
		if (m->type != CM_MSG_REP)
			break;
		c->peer = *m;
		if (c->id.qp_type == IBV_QPT_UD) {
			c->state = CM_ESTABLISHED;
			cm_close_fd(c); /* SIDR ends with the reply */
			cm_post_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, m);
			return;
		}
		if (!c->id.qp) {
			c->state = CM_RESPONDED;
			cm_post_event(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, m);
			return;
		}
		if (cm_qp_to_rtr_rts(c, m, m->responder_resources, m->initiator_depth) < 0) {
			struct cm_msg rej = {.type = CM_MSG_REJ, .qp_type = c->id.qp_type};

			cm_send(c, &rej);
			cm_close_fd(c);
			c->state = CM_IDLE;
			cm_post_event(c, RDMA_CM_EVENT_CONNECT_ERROR, -errno, NULL, NULL);
			return;
		}
		{
			struct cm_msg rtu = {.type = CM_MSG_RTU, .qp_type = c->id.qp_type};

			cm_send(c, &rtu);
		}
		c->state = CM_ESTABLISHED;
		cm_post_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, m);
		return;
	case CM_ACCEPTED:
		if (m->type == CM_MSG_RTU) {
			c->state = CM_ESTABLISHED;
			cm_post_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL);
			return;
		}
		if (m->type == CM_MSG_DREQ) {
			peer_gone(c);
			return;
		}
		break;
	case CM_ESTABLISHED:
	case CM_RESPONDED:
	case CM_REQ_RECEIVED:
		if (m->type == CM_MSG_DREQ) {
			peer_gone(c);
			return;
		}
		break;
	default:
		break;
	}
	/* Out of order or malformed: the exchange is over. */
	peer_gone(c);
}

static void on_readable(struct cm_id *c)
{
	if (c->state == CM_LISTENING) {
		int fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct cm_id *child;

		if (fd < 0)
			return;
		child = calloc(1, sizeof(*child));
		if (!child) {
			close(fd);
			return;
		}
		child->fd = fd;
		child->state = CM_IDLE;
		child->id.channel = c->id.channel;
		child->id.context = c->id.context;
		child->id.verbs = c->id.verbs;
		child->id.pd = c->id.verbs ? cm_pd() : NULL;
		child->id.ps = c->id.ps;
		child->id.qp_type = c->id.qp_type;
		child->id.port_num = 1;
		child->peer_listener = &c->id;
		child->ep_qp_attr = c->ep_qp_attr;
		child->ep_pd = c->ep_pd;
		{
			socklen_t len = sizeof(child->id.route.addr.src_storage);

			getsockname(fd, &child->id.route.addr.src_addr, &len);
			len = sizeof(child->id.route.addr.dst_storage);
			getpeername(fd, &child->id.route.addr.dst_addr, &len);
		}
		child->next = ids;
		ids = child;
		if (watch(child) < 0) {
			unlink_id(child);
			close(fd);
			free(child);
		}
		return;
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, MSG_DONTWAIT);
		struct cm_msg m;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			bool announced = c->state != CM_IDLE || !c->peer_listener;

			peer_gone(c);
			if (!announced) {
				/* a connection that never asked: nobody knows of it */
				unlink_id(c);
				free(c);
			}
			return;
		}
		c->rlen += (size_t)n;
		if (c->rlen < sizeof(c->rbuf))
			continue;
		c->rlen = 0;
		if (cm_msg_decode(c->rbuf, &m) < 0) {
			peer_gone(c);
			return;
		}
		on_message(c, &m);
		if (c->fd < 0)
			return;
	}
}

static void *progress(void *arg)
{
	(void)arg;
	for (;;) {
		struct epoll_event ev;
		int n = epoll_wait(epfd, &ev, 1, -1);

		if (n != 1)
			continue;
		pthread_mutex_lock(&cm_lock);
		if (ev.data.u64 & 1)
			cm_real_pump((struct cm_channel *)(uintptr_t)(ev.data.u64 & ~(uint64_t)1));
		else if (alive(ev.data.ptr) && ((struct cm_id *)ev.data.ptr)->fd >= 0)
			on_readable(ev.data.ptr);
		pthread_mutex_unlock(&cm_lock);
	}
	return NULL;
}

static void start_progress(void)
{
	pthread_t t;
	pthread_attr_t a;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, progress, NULL) != 0) {
		close(epfd);
		epfd = -1;
	}
	pthread_attr_destroy(&a);
}

static int fail(int err)
{
	errno = err;
	return -1;
}

CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			     void *context, enum rdma_port_space ps)
{
	struct cm_id *c;

	if (!id)
		return fail(EINVAL);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)
		return fail(EINVAL);
	pthread_once(&progress_once, start_progress);
	if (epfd < 0)
		return fail(ENOMEM);
	c = calloc(1, sizeof(*c));
	if (!c)
		return fail(ENOMEM);
	c->fd = -1;
	if (!channel) {
		struct cm_channel *own = cm_channel_new();

		if (!own) {
			free(c);
			return -1;
		}
		channel = &own->ch;
		c->sync = true;
	}
	c->id.channel = channel;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ? IBV_QPT_UD : IBV_QPT_RC;
	pthread_mutex_lock(&cm_lock);
	c->next = ids;
	ids = c;
	pthread_mutex_unlock(&cm_lock);
	*id = &c->id;
	return 0;
}

/* A request event nobody took: its connection is refused and freed. */
static void drop_request(struct rdma_cm_event *ev)
{
	struct cm_id *child;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return;
	child = cm_id_of(ev->id);
	if (alive(child) && child->real) {
		cm_real.rdma_reject(child->real, NULL, 0);
		cm_real.rdma_destroy_id(child->real); /* its event is acked */
		unlink_id(child);
		free(child);
		return;
	}
	if (alive(child)) {
		struct cm_msg rej = {.type = CM_MSG_REJ, .qp_type = child->id.qp_type};

		cm_send(child, &rej);
		cm_close_fd(child);
		unlink_id(child);
		free(child);
	}
}

CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *c;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	pthread_mutex_lock(&cm_lock);
	if (c->fd >= 0 && (c->state == CM_ESTABLISHED || c->state == CM_ACCEPTED ||
			   c->state == CM_RESPONDED || c->state == CM_REQ_RECEIVED)) {
		struct cm_msg dreq = {.type = CM_MSG_DREQ, .qp_type = id->qp_type};

		cm_send(c, &dreq); /* the peer hears DISCONNECTED, as from the kernel */
	}
	cm_close_fd(c);
	unlink_id(c);
	cm_mc_free_all(c);
	/* A listener's connections that no request event has shown to the
	 * program yet go with it; those shown are the program's, and no longer
	 * name it. */
	for (struct cm_id **pp = &ids, *i; (i = *pp);) {
		if (i->peer_listener == id && i->state == CM_IDLE) {
			*pp = i->next;
			cm_close_fd(i);
			free(i);
			continue;
		}
		if (i->peer_listener == id)
			i->peer_listener = NULL;
		pp = &i->next;
	}
	/* Events not taken yet would name freed memory: they go too, and so do
	 * the connections whose request nobody took. */
	cm_purge_events(id->channel, id, drop_request);
	pthread_mutex_unlock(&cm_lock);
	/* The system's ids go after their events are acked (above): its
	 * rdma_destroy_id waits for that. */
	if (c->real_listener)
		cm_real.rdma_destroy_id(c->real_listener);
	/* Not its QP: the program may have destroyed it with ibv_destroy_qp
	 * (rping does), and librdmacm's rdma_destroy_id leaves it alone too. */
	if (c->real)
		cm_real.rdma_destroy_id(c->real);
	if (c->sync)
		cm_channel_free(cm_container_of(id->channel, struct cm_channel, ch));
	if (!c->real)
		free(id->route.path_rec);
	free(c);
	return 0;
}

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *c;
	int fd, one = 1, rc = 0;
	socklen_t len;

	if (!id || !addr)
		return fail(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return fail(EAFNOSUPPORT); /* AF_IB needs an InfiniBand subnet */
	c = cm_id_of(id);
	if (c->bound || c->real || c->state != CM_IDLE)
		return fail(EINVAL);
	rc = cm_real_try_bind(c, addr);
	if (rc <= 0)
		return rc;
	rc = 0;
	if (!cm_verbs())
		return fail(ENODEV);
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, addr, addr_len(addr)) < 0) {
		rc = errno;
		close(fd);
		return fail(rc);
	}
	pthread_mutex_lock(&cm_lock);
	if (c->bound || c->state != CM_IDLE) {
		pthread_mutex_unlock(&cm_lock);
		close(fd);
		return fail(EINVAL);
	}
	c->fd = fd;
	c->bound = true;
	len = sizeof(id->route.addr.src_storage);
	getsockname(fd, &id->route.addr.src_addr, &len);
	id->verbs = cm_verbs();
	if (id->verbs && !id->pd)
		id->pd = cm_pd();
	id->port_num = 1;
	pthread_mutex_unlock(&cm_lock);
	return 0;
}

CM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *c;
	int rc;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real) {
		if (cm_real.rdma_listen(c->real, backlog) != 0)
			return cm_real_fail();
		c->state = CM_LISTENING;
		return 0;
	}
	pthread_mutex_lock(&cm_lock);
	if (!c->bound || c->state != CM_IDLE || c->fd < 0) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	if (listen(c->fd, backlog > 0 ? backlog : 128) < 0) {
		rc = errno;
		pthread_mutex_unlock(&cm_lock);
		return fail(rc);
	}
	c->state = CM_LISTENING;
	rc = watch(c);
	pthread_mutex_unlock(&cm_lock);
	if (rc < 0)
		return fail(-rc);
	/* Bound to the wildcard address: the real devices' requests too. */
	if (id->route.addr.src_addr.sa_family == AF_INET
		    ? id->route.addr.src_sin.sin_addr.s_addr == htonl(INADDR_ANY)
		    : IN6_IS_ADDR_UNSPECIFIED(&id->route.addr.src_sin6.sin6_addr))
		cm_real_listen_too(c, backlog > 0 ? backlog : 128);
	return 0;
}

/* The local address the kernel would use toward @p dst (a UDP socket's
 * connect sends nothing). */
static void local_address_toward(const struct sockaddr *dst, struct sockaddr_storage *out)
{
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(*out);

	memset(out, 0, sizeof(*out));
	out->ss_family = dst->sa_family;
	if (fd < 0)
		return;
	if (connect(fd, dst, addr_len(dst)) == 0)
		getsockname(fd, (struct sockaddr *)out, &len);
	close(fd);
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = 0;
	else
		((struct sockaddr_in6 *)out)->sin6_port = 0;
}

CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_id *c;

	(void)timeout_ms;
	if (!id || !dst_addr)
		return fail(EINVAL);
	if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6)
		return fail(EAFNOSUPPORT);
	c = cm_id_of(id);
	if (src_addr && !c->bound && rdma_bind_addr(id, src_addr) < 0)
		return -1;
	if (!c->real && c->state == CM_IDLE &&
	    (!c->bound || (id->route.addr.src_addr.sa_family == AF_INET
				   ? id->route.addr.src_sin.sin_addr.s_addr == htonl(INADDR_ANY)
				   : IN6_IS_ADDR_UNSPECIFIED(&id->route.addr.src_sin6.sin6_addr)))) {
		int r = cm_real_try_resolve(c, dst_addr, timeout_ms);

		if (r < 0)
			return -1;
		if (r == 0) {
			c->state = CM_ADDR_RESOLVED;
			return c->sync ? cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) : 0;
		}
	} else if (c->real) {
		if (cm_real.rdma_resolve_addr(c->real, NULL, dst_addr, timeout_ms) != 0)
			return cm_real_fail();
		c->state = CM_ADDR_RESOLVED;
		return c->sync ? cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) : 0;
	}
	if (!cm_verbs()) {
		pthread_mutex_lock(&cm_lock);
		cm_post_event(c, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, NULL, NULL);
		pthread_mutex_unlock(&cm_lock);
		return c->sync ? cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) : 0;
	}
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_IDLE) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	memcpy(&id->route.addr.dst_storage, dst_addr, addr_len(dst_addr));
	if (!c->bound)
		local_address_toward(dst_addr, &id->route.addr.src_storage);
	id->verbs = cm_verbs();
	if (id->verbs && !id->pd)
		id->pd = cm_pd();
	id->port_num = 1;
	c->state = CM_ADDR_RESOLVED;
	cm_post_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL);
	pthread_mutex_unlock(&cm_lock);
	return c->sync ? cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) : 0;
}

/* One path record, as programs read it from the route: soft0's Ethernet
 * port, the GIDs of both ends where known. */
static struct ibv_sa_path_rec *path_record(struct cm_id *c)
{
	struct ibv_sa_path_rec *p = calloc(1, sizeof(*p));
	struct ibv_port_attr port;

	if (!p)
		return NULL;
	if (ibv_query_gid(c->id.verbs, 1, 0, &p->sgid) < 0)
		memset(&p->sgid, 0, sizeof(p->sgid));
	if (ibv_query_port(c->id.verbs, 1, &port) == 0) {
		p->slid = htobe16(port.lid);
		p->mtu = port.active_mtu;
	}
	if (c->id.route.addr.dst_addr.sa_family == AF_INET) {
		p->dgid.raw[10] = p->dgid.raw[11] = 0xff;
		memcpy(p->dgid.raw + 12, &c->id.route.addr.dst_sin.sin_addr, 4);
	} else {
		memcpy(p->dgid.raw, &c->id.route.addr.dst_sin6.sin6_addr, 16);
	}
	p->pkey = htobe16(0xffff);
	p->hop_limit = 64;
	p->numb_path = 1;
	return p;
}

CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *c;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real) {
		if (cm_real.rdma_resolve_route(c->real, timeout_ms) != 0)
			return cm_real_fail();
		return c->sync ? cm_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) : 0;
	}
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_ADDR_RESOLVED) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	free(id->route.path_rec);
	id->route.path_rec = path_record(c);
	id->route.num_paths = id->route.path_rec ? 1 : 0;
	c->state = CM_ROUTE_RESOLVED;
	cm_post_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL);
	pthread_mutex_unlock(&cm_lock);
	return c->sync ? cm_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) : 0;
}

/* A TCP connection to the peer's bound address, within a bound time;
 * called without cm_lock (it may wait). */
static int tcp_connect_once(struct cm_id *c, int fd)
{
	const struct sockaddr *dst = &c->id.route.addr.dst_addr;
	struct pollfd p;
	int err = 0;
	socklen_t len = sizeof(err);

	if (connect(fd, dst, addr_len(dst)) < 0 && errno != EINPROGRESS)
		return -errno;
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	if (poll(&p, 1, CM_CONNECT_TIMEOUT_MS) != 1)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)
		return -(err ? err : EIO);
	return 0;
}

static int tcp_connect(struct cm_id *c)
{
	const struct sockaddr *dst = &c->id.route.addr.dst_addr;
	struct sockaddr_storage bound;
	bool was_bound = c->fd >= 0;
	int fd = c->fd, rc, one = 1;
	socklen_t len = sizeof(bound);

	if (was_bound)
		getsockname(fd, (struct sockaddr *)&bound, &len);
	c->fd = -1;
	for (int waited = 0;; waited += CM_REFUSED_STEP_MS) {
		if (fd < 0) {
			fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return -errno;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (was_bound && bind(fd, (struct sockaddr *)&bound, len) < 0) {
				rc = -errno;
				close(fd);
				return rc;
			}
		}
		rc = tcp_connect_once(c, fd);
		if (rc != -ECONNREFUSED || waited >= CM_REFUSED_RETRY_MS)
			break;
		/* A refused socket cannot connect again: a new one next time. */
		close(fd);
		fd = -1;
		usleep(CM_REFUSED_STEP_MS * 1000);
	}
	if (rc < 0) {
		close(fd);
		return rc;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	len = sizeof(c->id.route.addr.src_storage);
	getsockname(fd, &c->id.route.addr.src_addr, &len);
	return 0;
}

static void param_into(struct cm_msg *m, const struct rdma_conn_param *p, size_t max_private)
{
	if (!p)
		return;
	m->responder_resources = p->responder_resources;
	m->initiator_depth = p->initiator_depth;
	m->rnr_retry_count = p->rnr_retry_count;
	m->retry_count = p->retry_count;
	m->srq = p->srq ? 1 : 0;
	if (p->private_data && p->private_data_len) {
		m->private_data_len = (uint8_t)(p->private_data_len < max_private ? p->private_data_len
										  : max_private);
		memcpy(m->private_data, p->private_data, m->private_data_len);
	}
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *c;
	struct cm_msg req = {.type = CM_MSG_REQ};
	int rc;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real) {
		if (cm_real.rdma_connect(c->real, conn_param) != 0)
			return cm_real_fail();
		cm_real_sync(c);
		return c->sync ? cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, NULL) : 0;
	}
	/* IB CM carries 56 bytes in an RC request, 216 in a SIDR request. */
	if (conn_param && conn_param->private_data_len >
				  (id->qp_type == IBV_QPT_UD ? CM_PRIVATE_DATA_MAX : 56))
		return fail(EINVAL);
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	cm_fill_local(c, &req);
	if (!id->qp && conn_param)
		req.qpn = conn_param->qp_num & 0xffffff;
	param_into(&req, conn_param, CM_PRIVATE_DATA_MAX);
	req.qp_type = id->qp_type;
	if (id->qp_type == IBV_QPT_UD)
		req.qkey = RDMA_UDP_QKEY;
	c->state = CM_CONNECTING; /* no second rdma_connect while this one runs */
	pthread_mutex_unlock(&cm_lock);
	rc = tcp_connect(c);
	pthread_mutex_lock(&cm_lock);
	if (rc == 0)
		rc = cm_send(c, &req);
	if (rc == 0)
		rc = watch(c);
	if (rc < 0) {
		cm_close_fd(c);
		c->state = CM_ROUTE_RESOLVED;
		/* As the kernel's rdma_cm: nobody listening is a rejection
		 * (reason 8, invalid service ID), told by an event. */
		cm_post_event(c, rc == -ECONNREFUSED ? RDMA_CM_EVENT_REJECTED : RDMA_CM_EVENT_UNREACHABLE,
			      rc == -ECONNREFUSED ? 8 : rc, NULL, NULL);
	}
	pthread_mutex_unlock(&cm_lock);
	return c->sync ? cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, NULL) : 0;
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *c;
	struct cm_msg rep = {.type = CM_MSG_REP};
	int rc = 0;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real) {
		if (cm_real.rdma_accept(c->real, conn_param) != 0)
			return cm_real_fail();
		cm_real_sync(c);
		if (c->sync && id->qp_type != IBV_QPT_UD)
			return cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, NULL);
		return 0;
	}
	if (conn_param && conn_param->private_data_len > CM_PRIVATE_DATA_MAX)
		return fail(EINVAL);
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_REQ_RECEIVED || c->fd < 0) {
		pthread_mutex_unlock(&cm_lock);
		return fail(c->state == CM_DISCONNECTED ? ECONNRESET : EINVAL);
	}
	if (id->qp && id->qp_type != IBV_QPT_UD)
		rc = cm_qp_to_rtr_rts(c, &c->peer,
				      conn_param ? conn_param->initiator_depth : 1,
				      conn_param ? conn_param->responder_resources : 1);
	if (rc < 0) {
		rc = errno;
		pthread_mutex_unlock(&cm_lock);
		return fail(rc);
	}
	cm_fill_local(c, &rep);
	if (!id->qp && conn_param)
		rep.qpn = conn_param->qp_num & 0xffffff;
	param_into(&rep, conn_param, CM_PRIVATE_DATA_MAX);
	rep.qp_type = id->qp_type;
	if (id->qp_type == IBV_QPT_UD)
		rep.qkey = RDMA_UDP_QKEY;
	rc = cm_send(c, &rep);
	if (rc < 0) {
		peer_gone(c);
		pthread_mutex_unlock(&cm_lock);
		return fail(-rc);
	}
	if (id->qp_type == IBV_QPT_UD) {
		c->state = CM_ESTABLISHED; /* SIDR: the reply ends it */
		cm_close_fd(c);
	} else {
		c->state = CM_ACCEPTED;
	}
	pthread_mutex_unlock(&cm_lock);
	if (c->sync && id->qp_type != IBV_QPT_UD)
		return cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, NULL);
	return 0;
}

static int reject(struct rdma_cm_id *id, const void *private_data, uint8_t len)
{
	struct cm_id *c;
	struct cm_msg rej = {.type = CM_MSG_REJ};

	if (!id || (len && !private_data) || len > 148) /* IB CM's REJ room */
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real)
		return cm_real.rdma_reject(c->real, private_data, len) != 0 ? cm_real_fail() : 0;
	rej.qp_type = id->qp_type;
	rej.private_data_len = len;
	if (len)
		memcpy(rej.private_data, private_data, len);
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_REQ_RECEIVED) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	cm_send(c, &rej);
	cm_close_fd(c);
	c->state = CM_IDLE;
	pthread_mutex_unlock(&cm_lock);
	return 0;
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

CM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *c;
	struct cm_msg rtu = {.type = CM_MSG_RTU};
	int rc;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real)
		return cm_real.rdma_establish(c->real) != 0 ? cm_real_fail() : 0;
	rtu.qp_type = id->qp_type;
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_RESPONDED) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	rc = cm_send(c, &rtu);
	if (rc == 0)
		c->state = CM_ESTABLISHED;
	pthread_mutex_unlock(&cm_lock);
	return rc < 0 ? fail(-rc) : 0;
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *c;
	struct cm_msg dreq = {.type = CM_MSG_DREQ};

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real)
		return cm_real.rdma_disconnect(c->real) != 0 ? cm_real_fail() : 0;
	dreq.qp_type = id->qp_type;
	pthread_mutex_lock(&cm_lock);
	if (c->state != CM_ESTABLISHED && c->state != CM_ACCEPTED && c->state != CM_RESPONDED &&
	    c->state != CM_DISCONNECTED) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EINVAL);
	}
	if (c->fd >= 0)
		cm_send(c, &dreq);
	peer_gone(c); /* our side hears one DISCONNECTED too */
	pthread_mutex_unlock(&cm_lock);
	if (id->qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

		ibv_modify_qp(id->qp, &a, IBV_QP_STATE); /* outstanding work flushes */
	}
	return 0;
}

CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_id *c;
	struct rdma_event_channel *old;
	bool was_sync, now_sync = false;

	if (!id)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (!channel) {
		/* No channel: the id becomes synchronous, with one of its own. */
		struct cm_channel *own = cm_channel_new();

		if (!own)
			return -1;
		channel = &own->ch;
		now_sync = true;
	}
	if (c->real) {
		/* The real id moves to the new channel's real part (its
		 * rdma_migrate_id waits for the acks of its events: unlocked). */
		struct cm_channel *nc = cm_container_of(channel, struct cm_channel, ch);
		struct rdma_event_channel *rch;
		int err = 0;

		pthread_mutex_lock(&cm_lock);
		rch = cm_real_channel(nc);
		if (!rch)
			err = errno;
		pthread_mutex_unlock(&cm_lock);
		if (rch && cm_real.rdma_migrate_id(c->real, rch) != 0) {
			cm_real_fail();
			err = errno;
		}
		if (err) {
			if (now_sync)
				cm_channel_free(nc);
			return fail(err);
		}
	}
	pthread_mutex_lock(&cm_lock);
	old = id->channel;
	was_sync = c->sync;
	id->channel = channel;
	c->sync = now_sync;
	pthread_mutex_unlock(&cm_lock);
	/* Events already queued stay on the old channel, as librdmacm's do;
	 * an id's own channel goes with it. */
	if (was_sync && old != channel)
		cm_channel_free(cm_container_of(old, struct cm_channel, ch));
	return 0;
}

CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	if (!id)
		return 0;
	return id->route.addr.src_addr.sa_family == AF_INET6 ? id->route.addr.src_sin6.sin6_port
							     : id->route.addr.src_sin.sin_port;
}

CM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	if (!id)
		return 0;
	return id->route.addr.dst_addr.sa_family == AF_INET6 ? id->route.addr.dst_sin6.sin6_port
							     : id->route.addr.dst_sin.sin_port;
}

uint32_t cm_random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)random();
	return v & 0xffffff;
}
