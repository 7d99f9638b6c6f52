/*
 * The listener: accepts TCP clients and serves their exchanges side by side
 * (up to max_pending at once), so that a slow or hostile client delays
 * nobody. One epoll set holds the listening socket, every client in the
 * middle of its exchange and a timerfd armed for the nearest handshake
 * deadline; it is the descriptor rv_listener_fd() hands out.
 *
 * Pending clients are bounded and served fairly (docs/connection-helper.md,
 * "Bad peers"): a client has first_byte_ms() (at most the handshake
 * timeout) for its first byte; one source address holds at most
 * per_source_max of the max_pending places; a new client always finds a
 * place: when its source is at its cap, its own longest idle client is
 * evicted, else when the listener is full, the longest idle client of all.
 * Evictions and timeouts are logged at most once a second, as counts.
 *
 * Owns: those descriptors and the half-made connections of pending clients.
 * Never blocks beyond the caller's timeout; never waits holding a lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "conn/conn-private.h"

/* How long a new client may stay silent: 5 s, or a quarter of a longer
 * handshake timeout (a caller that allows slow handshakes allows slow
 * starts: 64 clients starting at once in qemu under TCG on a loaded host
 * took over 5 s), never more than the handshake timeout itself. A flood is
 * what eviction is for, not this bound. */
#define LISTENER_FIRST_BYTE_MS 5000

static uint32_t first_byte_ms(uint32_t hs_timeout_ms)
{
	uint32_t quarter = hs_timeout_ms / 4;

	if (hs_timeout_ms < LISTENER_FIRST_BYTE_MS)
		return hs_timeout_ms;
	return quarter > LISTENER_FIRST_BYTE_MS ? quarter : LISTENER_FIRST_BYTE_MS;
}
/* At most one log line per kind of trouble per this many ms. */
#define LISTENER_LOG_INTERVAL_MS 1000
/* Clients accepted per wakeup of the listening socket, at most. */
#define LISTENER_ACCEPT_BATCH 64

struct pending {
	int fd;
	int64_t deadline;   /* first byte, then the whole exchange */
	int64_t accepted;   /* rv_now_ms() at accept */
	int64_t last_heard; /* rv_now_ms() when a byte last arrived (or accepted) */
	bool heard;         /* a byte arrived */
	uint8_t src[16];    /* the client's address, as a GID (per-source cap) */
	char peer[RV_ADDR_STR_MAX];
	struct rv_conn *conn; /* made when the REQ arrived; NULL before */
	struct rv_msg_rx rx;
	/* trust.c: the shared secret over the exchange. */
	int auth_step;        /* 0 nothing yet, 1 challenged, 2 the REQ's MAC arrived */
	uint8_t auth_nc[RV_WIRE_AUTH_NONCE_LEN], auth_ns[RV_WIRE_AUTH_NONCE_LEN];
	uint8_t req_mac[RV_WIRE_AUTH_MAC_LEN];
};

struct rv_listener {
	struct rv_object obj;
	struct rv_context *ctx;
	int lfd, epfd, tfd;
	int port;
	uint32_t hs_timeout_ms;
	uint32_t max_pending;
	uint32_t per_source_max;
	struct pending **pending;
	uint32_t n_pending;
	/* Rate-limited log: what happened since the last line. */
	int64_t log_at;
	uint64_t n_evicted, n_evicted_source, n_silent;
	struct rv_cm_listener *cm; /* rdma_cm transport: its channel is in the epoll set instead of lfd */
	int cm_fd;
};

static void pending_free(struct pending *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->conn)
		rv_conn_discard(p->conn);
	free(p);
}

static int listener_destroy(struct rv_object *obj)
{
	struct rv_listener *l = (struct rv_listener *)obj;

	for (uint32_t i = 0; i < l->n_pending; i++)
		pending_free(l->pending[i]);
	l->n_pending = 0;
	if (l->cm)
		rv_cm_listener_destroy(l->cm);
	l->cm = NULL;
	if (l->lfd >= 0)
		close(l->lfd);
	if (l->tfd >= 0)
		close(l->tfd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->lfd = l->tfd = l->epfd = -1;
	return 0;
}

static void listener_release(struct rv_object *obj)
{
	struct rv_listener *l = (struct rv_listener *)obj;
	free(l->pending);
}

static const struct rv_object_class listener_class = {
	.type = RV_OBJ_LISTENER,
	.name = "listener",
	.destroy = listener_destroy,
	.release = listener_release,
};

#define LISTENER_ATTR_KNOWN (RV_LISTENER_ATTR_BACKLOG | RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT | \
			     RV_LISTENER_ATTR_MAX_PENDING | RV_LISTENER_ATTR_TRANSPORT)

static int epoll_add(int epfd, int fd, void *ptr)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

RV_EXPORT int rv_listener_new(rv_context *ctx, const char *addr, const rv_listener_attr *attr,
			      rv_listener **ret_listener)
{
	uint32_t backlog = 128, hs = 5000, max_pending = 256, transport = RV_CONN_TRANSPORT_AUTO;
	struct rv_listener *l;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!addr || !ret_listener)
		return rv_err(EINVAL, __func__, "%s is NULL", addr ? "ret_listener" : "addr");
	if (attr) {
		if (attr->mask & ~(uint64_t)LISTENER_ATTR_KNOWN)
			return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_listener_attr.mask",
				      attr->mask & ~(uint64_t)LISTENER_ATTR_KNOWN);
		if (attr->mask & RV_LISTENER_ATTR_BACKLOG)
			backlog = attr->backlog;
		if (attr->mask & RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT) {
			if (attr->handshake_timeout_ms == 0)
				return rv_err(EINVAL, __func__, "handshake_timeout_ms must be at least 1");
			hs = attr->handshake_timeout_ms;
		}
		if (attr->mask & RV_LISTENER_ATTR_MAX_PENDING) {
			if (attr->max_pending == 0)
				return rv_err(EINVAL, __func__, "max_pending must be at least 1");
			max_pending = attr->max_pending;
		}
		if (attr->mask & RV_LISTENER_ATTR_TRANSPORT) {
			if (attr->transport > RV_CONN_TRANSPORT_RDMA_CM)
				return rv_err(EINVAL, __func__, "transport %u is not an rv_conn_transport", attr->transport);
			transport = attr->transport;
		}
	}
	if (transport == RV_CONN_TRANSPORT_RDMA_CM && !rv_cm_usable(ctx))
		return rv_err(EOPNOTSUPP, __func__, "device %s has no rdma_cm support; use RV_CONN_TRANSPORT_TCP",
			      ctx->dev->name);
	if (transport == RV_CONN_TRANSPORT_AUTO)
		transport = rv_cm_usable(ctx) ? RV_CONN_TRANSPORT_RDMA_CM : RV_CONN_TRANSPORT_TCP;
	l = rv_obj_new(sizeof(*l), &listener_class, ctx, __func__);
	if (!l)
		return -ENOMEM;
	l->ctx = ctx;
	l->lfd = l->tfd = l->epfd = -1;
	l->hs_timeout_ms = hs;
	l->max_pending = max_pending;
	/* A quarter of the places per source address, at least 4 (all when fewer). */
	l->per_source_max = max_pending / 4 > 4 ? max_pending / 4 : (max_pending < 4 ? max_pending : 4);
	l->cm_fd = -1;
	if (transport == RV_CONN_TRANSPORT_RDMA_CM)
		rc = rv_cm_listen(ctx, addr, backlog, &l->cm, &l->port, &l->cm_fd, __func__);
	else
		rc = rv_sock_listen(addr, backlog, &l->lfd, &l->port, __func__);
	if (rc == 0) {
		l->epfd = epoll_create1(EPOLL_CLOEXEC);
		l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (l->epfd < 0 || l->tfd < 0 || epoll_add(l->epfd, l->tfd, &l->tfd) < 0 ||
		    (l->cm ? epoll_add(l->epfd, l->cm_fd, &l->cm_fd) : epoll_add(l->epfd, l->lfd, &l->lfd)) < 0)
			rc = rv_err(errno, __func__, "epoll/timerfd: %s", strerror(errno));
	}
	if (rc == 0) {
		rv_graph_lock(&ctx->obj);
		rc = rv_obj_depend(&l->obj, &ctx->obj, __func__);
		rv_graph_unlock(&ctx->obj);
	}
	if (rc < 0) {
		listener_destroy(&l->obj);
		rv_obj_abort(&l->obj);
		return rc;
	}
	*ret_listener = l;
	return 0;
}

RV_DEFINE_HANDLE_REF_UNREF(listener, RV_OBJ_LISTENER)

RV_EXPORT int rv_listener_close(rv_listener *listener)
{
	int rc = rv_obj_check_any(RV_COBJ(listener), RV_OBJ_LISTENER, __func__);

	if (rc < 0)
		return rc;
	return rv_obj_close(&listener->obj, "closed by rv_listener_close");
}

RV_EXPORT int rv_listener_port(const rv_listener *listener)
{
	int rc = rv_obj_check(RV_COBJ(listener), RV_OBJ_LISTENER, __func__);
	return rc < 0 ? rc : listener->port;
}

RV_EXPORT int rv_listener_fd(const rv_listener *listener)
{
	int rc = rv_obj_check(RV_COBJ(listener), RV_OBJ_LISTENER, __func__);
	return rc < 0 ? rc : listener->epfd;
}

/* Arm the timerfd for the nearest handshake deadline (or disarm it). */
static void arm_timer(struct rv_listener *l)
{
	struct itimerspec its;
	int64_t next = INT64_MAX, left;

	memset(&its, 0, sizeof(its));
	for (uint32_t i = 0; i < l->n_pending; i++)
		if (l->pending[i]->deadline < next)
			next = l->pending[i]->deadline;
	if (next != INT64_MAX) {
		left = next - rv_now_ms();
		if (left < 1)
			left = 1;
		its.it_value.tv_sec = left / 1000;
		its.it_value.tv_nsec = (left % 1000) * 1000000;
	}
	timerfd_settime(l->tfd, 0, &its, NULL);
}

static void remove_pending(struct rv_listener *l, uint32_t i)
{
	l->pending[i] = l->pending[--l->n_pending];
	arm_timer(l);
}

/* One line per LISTENER_LOG_INTERVAL_MS at most, with the counts since the last. */
static void log_trouble(struct rv_listener *l)
{
	int64_t now = rv_now_ms();

	if (now - l->log_at < LISTENER_LOG_INTERVAL_MS || !(l->n_evicted || l->n_evicted_source || l->n_silent))
		return;
	rv_log(RV_LOG_WARN, "listener #%" PRIu64 ": %" PRIu64 " client(s) evicted to make room (listener full, "
	       "max_pending %u), %" PRIu64 " evicted for their address's cap (%u), %" PRIu64 " silent past %u ms",
	       l->obj.id, l->n_evicted, l->max_pending, l->n_evicted_source, l->per_source_max, l->n_silent,
	       first_byte_ms(l->hs_timeout_ms));
	l->n_evicted = l->n_evicted_source = l->n_silent = 0;
	l->log_at = now;
}

/* Drop pending client i to make room (no error for the caller: logged). */
static void evict(struct rv_listener *l, uint32_t i, bool for_source)
{
	struct pending *p = l->pending[i];

	rv_sock_send_reject(p->fd, EBUSY, "the server evicted this idle client to make room for others");
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
	remove_pending(l, i);
	pending_free(p);
	if (for_source)
		l->n_evicted_source++;
	else
		l->n_evicted++;
	log_trouble(l);
}

/* The longest idle pending client (of address src when not NULL), or -1. */
static int64_t longest_idle(const struct rv_listener *l, const uint8_t *src, uint32_t *count)
{
	int64_t best = -1;

	*count = 0;
	for (uint32_t i = 0; i < l->n_pending; i++) {
		const struct pending *p = l->pending[i];
		if (src && memcmp(p->src, src, 16) != 0)
			continue;
		(*count)++;
		if (best < 0 || p->last_heard < l->pending[best]->last_heard)
			best = i;
	}
	return best;
}

static void addr_key(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

/* Accept the waiting clients (a batch), making room for each: a new client
 * never waits in the kernel's backlog behind idle ones. */
static void accept_new(struct rv_listener *l)
{
	for (int k = 0; k < LISTENER_ACCEPT_BATCH; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct pending *p;
		uint8_t src[16];
		uint32_t n_src, n_all;
		int64_t victim;
		int fd = accept4(l->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				rv_log(RV_LOG_WARN, "listener #%" PRIu64 ": accept: %s", l->obj.id, strerror(errno));
			return;
		}
		addr_key(&ss, src);
		victim = longest_idle(l, src, &n_src);
		if (n_src >= l->per_source_max) {
			evict(l, (uint32_t)victim, true);
		} else if (l->n_pending >= l->max_pending) {
			victim = longest_idle(l, NULL, &n_all);
			evict(l, (uint32_t)victim, false);
		}
		if (l->n_pending % 64 == 0) {
			struct pending **n = realloc(l->pending, (l->n_pending + 64) * sizeof(*n));
			if (!n) {
				close(fd);
				return;
			}
			l->pending = n;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			return;
		}
		p->fd = fd;
		p->accepted = p->last_heard = rv_now_ms();
		p->deadline = p->accepted + first_byte_ms(l->hs_timeout_ms);
		memcpy(p->src, src, 16);
		rv_sockaddr_str((struct sockaddr *)&ss, p->peer);
		if (epoll_add(l->epfd, fd, p) < 0) {
			close(fd);
			free(p);
			return;
		}
		l->pending[l->n_pending++] = p;
	}
}

/* Tell the client why, with the current error message; returns rc. */
static int reject_pending(struct pending *p, int rc)
{
	struct rv_error_saved err;

	rv_error_save(&err);
	rv_sock_send_reject(p->fd, -rc, rv_error_text(&err, NULL));
	return rc;
}

/* The server's side of an AUTH message (trust.c): 0 to read on, < 0 failed. */
static int on_auth(struct rv_listener *l, struct pending *p, const char *func)
{
	struct rv_wire_auth a;
	uint8_t mac[RV_WIRE_AUTH_MAC_LEN];
	int rc = rv_wire_auth_decode(p->rx.payload, p->rx.hdr.length, &a, func);

	if (rc < 0)
		return reject_pending(p, rc);
	if (!rv_conn_has_secret(l->ctx))
		return reject_pending(p, rv_err(EACCES, func, "client %s wants to authenticate the exchange with a "
						"shared secret, but this server's context has none "
						"(rv_context_attr.auth_secret, RVERBS_SOFT_SECRET_FILE)", p->peer));
	if (p->auth_step == 0 && a.step == RV_AUTH_HELLO) {
		memcpy(p->auth_nc, a.nonce, sizeof(p->auth_nc));
		if (rv_random_bytes(p->auth_ns, sizeof(p->auth_ns)) < 0)
			return reject_pending(p, rv_err(EIO, func, "no random bytes from the kernel for the "
							"authentication nonce; client %s refused", p->peer));
		rv_conn_auth_mac(l->ctx, 'S', p->auth_nc, p->auth_ns, NULL, NULL, 0, mac);
		rc = rv_conn_send_auth(p->fd, RV_AUTH_CHALLENGE, p->auth_ns, mac, p->deadline, p->peer, func);
		if (rc < 0)
			return rc;
		p->auth_step = 1;
		return 0;
	}
	if (p->auth_step == 1 && a.step == RV_AUTH_REQ_MAC) {
		memcpy(p->req_mac, a.mac, sizeof(p->req_mac));
		p->auth_step = 2;
		return 0;
	}
	return reject_pending(p, rv_err(EBADMSG, func, "client %s sent AUTH step %u out of order", p->peer, a.step));
}

/* With a secret: whether the REQ in p->rx carries the client's proof. */
static int check_request_mac(struct rv_listener *l, struct pending *p, const char *func)
{
	uint8_t want[RV_WIRE_AUTH_MAC_LEN];

	if (!rv_conn_has_secret(l->ctx))
		return 0;
	if (p->auth_step != 2)
		return reject_pending(p, rv_err(EACCES, func, "client %s sent its request without proving the shared "
						"secret, which this server's context has (give the client's context "
						"the same rv_context_attr.auth_secret or RVERBS_SOFT_SECRET_FILE)",
						p->peer));
	rv_conn_auth_mac(l->ctx, 'Q', p->auth_nc, p->auth_ns, p->rx.hdr_buf, p->rx.payload, p->rx.hdr.length, want);
	if (!rv_conn_mac_equal(want, p->req_mac))
		return reject_pending(p, rv_err(EACCES, func, "client %s does not know the shared secret (the MAC of "
						"its request does not match)", p->peer));
	return 0;
}

/* A REQ arrived: make the connection, connect its QPs, answer with a REP. */
static int on_request(struct rv_listener *l, struct pending *p, const struct rv_conn_opts *o, const char *func)
{
	struct rv_wire_hello h, mine;
	uint8_t *out;
	int n, rc = rv_wire_hello_decode(p->rx.payload, p->rx.hdr.length, &h, func);

	/* Before anything is made: the endpoints must name the client's address. */
	if (rc == 0)
		rc = rv_conn_check_peer_addr(l->ctx, p->fd, &h, p->peer, func);
	if (rc == 0)
		rc = rv_conn_check_own_addr(l->ctx, p->fd, p->peer, func);
	if (rc == 0 && o->num_qps && o->num_qps != h.num_qps)
		rc = rv_err(EPROTO, func, "asks for %u QP(s); this server accepts %u", h.num_qps, o->num_qps);
	for (uint32_t i = 0; rc == 0 && o->caller_qps && i < o->num_qps; i++)
		if (o->qps[i]->state != RV_QPS_RESET && o->qps[i]->state != RV_QPS_INIT)
			rc = rv_err(EBUSY, func, "the QPs given to rv_listener_accept() already serve another client");
	if (rc < 0)
		goto reject;
	rc = rv_conn_create(l->ctx, o, h.num_qps, true, &p->conn, func);
	if (rc < 0)
		goto reject;
	memcpy(p->conn->peer_addr, p->peer, sizeof(p->peer));
	{
		bool changed; /* nothing was sent yet: the REP carries the final GIDs */
		rc = rv_conn_local_gids(p->conn, p->fd, &changed, func);
	}
	if (rc == 0)
		rc = rv_conn_apply_peer(p->conn, &h, func);
	if (rc < 0)
		goto reject;
	out = malloc(RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX);
	if (!out) {
		rc = rv_err(ENOMEM, func, "out of memory");
		goto reject;
	}
	rv_conn_hello(p->conn, o, &mine);
	n = rv_wire_hello_encode(RV_WIRE_REP, &mine, out, RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX, func);
	rc = n < 0 ? n : 0;
	if (rc == 0 && p->auth_step == 2) {
		/* The REP's MAC first: the client acts on nothing it cannot check. */
		uint8_t mac[RV_WIRE_AUTH_MAC_LEN];
		rv_conn_auth_mac(l->ctx, 'P', p->auth_nc, p->auth_ns, out, out + RV_WIRE_HDR_LEN,
				 (size_t)n - RV_WIRE_HDR_LEN, mac);
		rc = rv_conn_send_auth(p->fd, RV_AUTH_REP_MAC, NULL, mac, p->deadline, p->peer, func);
	}
	if (rc == 0)
		rc = rv_sock_send_all(p->fd, out, (size_t)n, p->deadline, p->peer, func);
	free(out);
	if (rc < 0)
		return rc;
	p->conn->phase = RV_PH_WAIT_RTU;
	return 0;
reject:
	return reject_pending(p, rc);
}

/* Serve one pending client: 1 with *ret when established, 0 waiting, < 0 failed. */
static int serve(struct rv_listener *l, struct pending *p, const struct rv_conn_opts *o, struct rv_conn **ret,
		 const char *func)
{
	struct rv_wire_reject rj;
	int rc;

	for (;;) {
		size_t before = p->rx.got;

		rc = rv_msg_rx_read(p->fd, &p->rx, p->peer, func);
		if (rc > 0 || p->rx.got != before) {
			p->last_heard = rv_now_ms();
			if (!p->heard) /* it spoke: the whole handshake timeout from its accept */
				p->deadline = p->accepted + l->hs_timeout_ms;
			p->heard = true;
		}
		if (rc == -ENOTCONN)
			rc = rv_err(ECONNRESET, func, "client %s closed the connection %s", p->peer,
				    p->conn ? "before confirming our answer" : "before sending its request");
		if (rc <= 0)
			return rc;
		rv_msg_rx_reset(&p->rx);
		switch (p->rx.hdr.type) {
		case RV_WIRE_AUTH:
			if (p->conn)
				return rv_err(EBADMSG, func, "client %s sent AUTH after its REQ", p->peer);
			rc = on_auth(l, p, func);
			if (rc < 0)
				return rc;
			continue;
		case RV_WIRE_REQ:
			if (p->conn)
				return rv_err(EBADMSG, func, "client %s sent a second REQ", p->peer);
			rc = check_request_mac(l, p, func);
			if (rc < 0)
				return rc;
			rc = on_request(l, p, o, func);
			if (rc < 0) {
				struct rv_error_saved why;
				rv_error_save(&why);
				return rv_err(-rc, func, "client %s: %s", p->peer, rv_error_text(&why, func));
			}
			continue;
		case RV_WIRE_RTU:
			if (!p->conn)
				return rv_err(EBADMSG, func, "client %s sent an RTU before its REQ", p->peer);
			p->conn->fd = p->fd;
			p->fd = -1;
			p->conn->phase = RV_PH_ESTABLISHED;
			p->conn->state = RV_CONN_ESTABLISHED;
			*ret = p->conn;
			p->conn = NULL;
			return 1;
		case RV_WIRE_REJECT:
			rc = rv_wire_reject_decode(p->rx.payload, p->rx.hdr.length, &rj, func);
			if (rc < 0)
				return rc;
			return rv_err(rj.errnum, func, "client %s rejected the connection: %s", p->peer, rj.text);
		default:
			return rv_err(EBADMSG, func, "client %s sent a %s message during the exchange", p->peer,
				      rv_wire_type_name(p->rx.hdr.type));
		}
	}
}

/* Drop the first client whose handshake is overdue, with its error. */
static int expire(struct rv_listener *l, const char *func)
{
	int64_t now = rv_now_ms();

	for (uint32_t i = 0; i < l->n_pending; i++) {
		struct pending *p = l->pending[i];
		if (p->deadline > now)
			continue;
		int rc;
		if (!p->heard) {
			l->n_silent++;
			log_trouble(l);
			rc = rv_err(ETIMEDOUT, func, "client %s sent nothing within %u ms", p->peer,
				    (unsigned)(p->deadline - p->accepted));
		} else {
			rc = rv_err(ETIMEDOUT, func, "client %s did not complete its exchange within %u ms (%s)",
				    p->peer, l->hs_timeout_ms,
				    p->conn ? "no confirmation of our answer"
					    : p->rx.got ? "its request is incomplete" : "it sent no request");
		}
		rv_sock_send_reject(p->fd, ETIMEDOUT, "the exchange took too long");
		remove_pending(l, i);
		pending_free(p);
		return rc;
	}
	return 0;
}

RV_EXPORT int rv_listener_accept(rv_listener *listener, const rv_conn_attr *attr, int timeout_ms,
				 rv_conn **ret_conn)
{
	int64_t deadline = rv_deadline(timeout_ms);
	struct rv_listener *l = listener;
	struct rv_conn_opts o;
	int rc = rv_obj_check(RV_COBJ(listener), RV_OBJ_LISTENER, __func__);

	if (rc < 0)
		return rc;
	if (!ret_conn)
		return rv_err(EINVAL, __func__, "ret_conn is NULL");
	rc = rv_obj_check(RV_COBJ(l->ctx), RV_OBJ_CONTEXT, __func__);
	if (rc == 0)
		rc = rv_conn_opts_parse(l->ctx, attr, &o, __func__);
	if (rc < 0)
		return rc;
	if (o.mask & RV_CONN_ATTR_TRANSPORT)
		return rv_err(EINVAL, __func__, "the listener's transport is chosen in rv_listener_new(); do not set RV_CONN_ATTR_TRANSPORT");
	for (;;) {
		struct epoll_event evs[32];
		int64_t wake = deadline;
		int n, wait;

		rc = expire(l, __func__);
		if (rc == 0 && l->cm)
			rc = rv_cm_listener_expire(l->cm, __func__);
		if (rc < 0)
			return rc;
		if (l->cm)
			wake = rv_now_ms() + 100 < wake ? rv_now_ms() + 100 : wake; /* cm deadlines: checked at least every 100 ms */
		for (uint32_t i = 0; i < l->n_pending; i++)
			if (l->pending[i]->deadline < wake)
				wake = l->pending[i]->deadline;
		wait = rv_ms_left(wake);
		n = epoll_wait(l->epfd, evs, 32, wait);
		if (n < 0 && errno != EINTR)
			return rv_err(errno, __func__, "epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;
			struct rv_conn *c = NULL;

			if (ptr == &l->lfd) {
				accept_new(l);
				arm_timer(l);
				continue;
			}
			if (ptr == &l->cm_fd) {
				rc = rv_cm_listener_event(l->cm, &o, l->hs_timeout_ms, &c, __func__);
				if (rc < 0)
					return rc;
				if (rc > 0) {
					*ret_conn = c;
					return 0;
				}
				continue;
			}
			if (ptr == &l->tfd) {
				uint64_t ticks;
				if (read(l->tfd, &ticks, sizeof(ticks)) < 0)
					ticks = 0;
				continue;
			}
			struct pending *p = ptr;
			bool live = false;
			/* accept_new may have evicted it earlier in this batch. */
			for (uint32_t k = 0; k < l->n_pending && !live; k++)
				live = l->pending[k] == p;
			if (!live)
				continue;
			rc = serve(l, p, &o, &c, __func__);
			if (rc == 0)
				continue;
			for (uint32_t k = 0; k < l->n_pending; k++)
				if (l->pending[k] == p) {
					if (p->fd >= 0)
						epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
					else
						epoll_ctl(l->epfd, EPOLL_CTL_DEL, c->fd, NULL);
					remove_pending(l, k);
					break;
				}
			if (rc < 0) {
				pending_free(p);
				return rc;
			}
			free(p);
			*ret_conn = c;
			return 0;
		}
		if (rv_ms_left(deadline) == 0) {
			rc = expire(l, __func__);
			if (rc == 0 && l->cm)
				rc = rv_cm_listener_expire(l->cm, __func__);
			return rc < 0 ? rc : rv_err(EAGAIN, __func__, "no connection was established within %d ms",
						    timeout_ms);
		}
	}
}
