/*
 * UD queue pairs of the software device: one UDP socket per context, the
 * datagram path in both directions, address handles, and the counters of
 * what was dropped.
 *
 * Owns: the context's UDP socket (bound to the listen address and the same
 * port number as the TCP listener, so rv_endpoint's LID names both), with
 * RV_SOFT_ROCE_PORT a second one on UDP 4791 (RoCEv2's port, where kernel and
 * hardware RoCE devices send: an AV with dlid 0 names it), its receive
 * buffer, the counters. Framing is roce.c's (RoCEv2: BTH, DETH,
 * ImmDt, payload, pad, ICRC); this file does the I/O and the verbs rules:
 *
 * - send: the posting thread checks, gathers (lkeys checked), frames and hands
 *   the datagram to the socket under q->lock; the WR completes then. A full
 *   socket buffer is waited for (at most SOFT_UD_TX_WAIT_MS), then the
 *   datagram is dropped and counted, as a NIC's link would lose it.
 * - receive: the progress thread (sc->lock held) reads every datagram, drops
 *   and counts what is short, truncated, badly framed, for an unknown QP, with
 *   a wrong P_Key or Q_Key, or finds no receive WR; otherwise it writes the
 *   40-byte GRH area and the payload through soft_sgl_write (key, PD and
 *   LOCAL_WRITE checked) and completes the receive.
 * - under a shared secret (sc->auth): every datagram carries roce.h's MAC
 *   trailer (the context's random epoch, a counter, a truncated HMAC); the
 *   receiver drops, before looking at the QP, whatever lacks a valid one or
 *   repeats a (epoch, seq) it has seen, and a context without a secret drops
 *   marked datagrams, which it cannot check (docs/software-device.md).
 * - multicast (rv_qp_attach_mcast): a multicast GID is an IP multicast group
 *   (::ffff:224.0.0.0/4 on an IPv4 context, ff00::/8 on an IPv6 one). The
 *   first QP of the context to attach opens a socket for the group, bound to
 *   the group and RoCEv2's port 4791 with SO_REUSEADDR (every member on the
 *   host gets its own copy) and joined on the context's interface; a send to
 *   a multicast GID goes to that group and port with destination QP 0xFFFFFF
 *   (IBA 9.8.1), and the receiver hands a copy to every QP of the context
 *   attached to the group, each with its Q_Key checked. Under a secret a
 *   group datagram carries the same trailer as a unicast one: every member
 *   holding the secret checks it, and so any holder can send to the group.
 * Never blocks the progress thread; never writes outside a receive WR's SGEs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"
#include "drivers/soft/wire/roce.h"
#include "qp_state.h"

/* Path MTU of soft0's UD: the largest message in one datagram. */
#define SOFT_UD_MTU 4096u
/* A receive buffer with room to spare, so that a longer datagram shows as truncated. */
#define SOFT_UD_RXBUF 8192u
/* Datagrams read per wakeup before the progress thread turns to other work. */
#define SOFT_UD_RX_BATCH 64
/* How long a sender waits for room in a full socket buffer before dropping. */
#define SOFT_UD_TX_WAIT_MS 100
/* IPv4 identification and flags soft0 sends with, and assumes of what it
 * receives (roce.h: the ICRC covers them). */
#define SOFT_UD_IP_ID 0
#define SOFT_UD_IP_DF 0x4000

/* RoCEv2's UDP destination port (IBA A17.3). */
#define SOFT_UD_ROCE_PORT 4791u

/* The destination QP of a multicast datagram (IBA 9.8.1, "Multicast"). */
#define SOFT_UD_MCAST_QPN 0xffffffu

/* One multicast group this context joined (sc->lock). */
struct soft_mcg {
	uint8_t gid[16];
	int fd;          /* bound to the group, port 4791; joined on our interface */
	uint32_t n_qps;  /* attached QPs (QP numbers) */
	uint32_t qpns[SOFT_MAX_MCAST_QP_ATTACH];
	struct soft_mcg *next;
};

struct soft_ud {
	int fd;
	int roce_fd;      /* bound to port 4791 (RV_SOFT_ROCE_PORT), else -1 */
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* our address, network order (IPv4 in the first 4 bytes) */
	uint16_t port;
	_Atomic uint64_t n[SOFT_UD_NCOUNTERS];
	/* Authenticated UD: our identity and counter as a sender (any posting
	 * thread), the windows of the senders we heard (progress thread only). */
	uint64_t epoch;
	_Atomic uint64_t seq;
	struct rv_roce_replay replay;
	unsigned int ifindex;     /* our address's interface (IPv6 multicast), 0 if unknown */
	struct soft_mcg *groups;  /* the groups a QP of ours is attached to (sc->lock) */
	uint32_t n_groups;
	uint8_t rx[SOFT_UD_RXBUF];
};

static void count(struct soft_ud *u, enum soft_ud_counter c)
{
	atomic_fetch_add_explicit(&u->n[c], 1, memory_order_relaxed);
}

static bool is_any(const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i])
			return false;
	return true;
}

/* A UDP socket for RoCEv2 datagrams, bound to a; -errno. */
static int ud_socket(int family, const struct sockaddr_storage *a, socklen_t sl, bool reuse)
{
	int one = 1, pmtu, rcvbuf = 1 << 20, fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	/* DF from an unconnected socket: Linux then writes IP identification 0,
	 * which the ICRC covers (roce.h). The rest is for the GRH area. */
	if (family == AF_INET) {
		pmtu = IP_PMTUDISC_DO;
		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one));
	} else {
		pmtu = IPV6_PMTUDISC_DO;
		setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof(one));
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)); /* best effort */
	if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	if (bind(fd, (const struct sockaddr *)a, sl) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

/* The interface that holds our address (0 when none does). */
static unsigned int addr_ifindex(const struct soft_ud *u)
{
	struct ifaddrs *ifs, *i;
	unsigned int idx = 0;

	if (getifaddrs(&ifs) < 0)
		return 0;
	for (i = ifs; i && !idx; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != u->family)
			continue;
		if (u->family == AF_INET
			    ? memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, u->addr, 4) == 0
			    : memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, u->addr, 16) == 0)
			idx = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifs);
	return idx;
}

/* Multicast sends leave from our address's interface and loop back to the
 * members on this host (best effort: a failure shows when a group is used). */
static void mcast_sender(struct soft_ud *u)
{
	int one = 1;

	u->ifindex = addr_ifindex(u);
	if (u->family == AF_INET) {
		struct in_addr ifa;
		memcpy(&ifa, u->addr, 4);
		setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa));
		setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof(one));
	} else {
		int idx = (int)u->ifindex;
		setsockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof(idx));
		setsockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &one, sizeof(one));
	}
}

int soft_ud_open(struct soft_ctx *sc, const struct sockaddr_storage *ss, socklen_t sl)
{
	static const char *const fn = "rv_context_new";
	struct sockaddr_storage a = *ss;
	struct soft_ud *u;
	int err;

	if (sc->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&a;
		if (is_any((const uint8_t *)&s4->sin_addr, 4))
			return 0; /* the wildcard: no single source address for the ICRC, no UD */
		s4->sin_port = htons(sc->port);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;
		if (is_any((const uint8_t *)&s6->sin6_addr, 16))
			return 0;
		s6->sin6_port = htons(sc->port);
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return rv_err(ENOMEM, fn, "out of memory for soft0's UDP side");
	u->family = sc->family;
	u->port = sc->port;
	if (rv_random_bytes(&u->epoch, sizeof(u->epoch)) < 0) {
		free(u);
		return rv_err(EIO, fn, "no random bytes from the kernel for soft0's UD epoch (getrandom(2) and "
			      "/dev/urandom failed)");
	}
	if (sc->family == AF_INET)
		memcpy(u->addr, &((struct sockaddr_in *)&a)->sin_addr, 4);
	else
		memcpy(u->addr, &((struct sockaddr_in6 *)&a)->sin6_addr, 16);
	u->roce_fd = -1;
	u->fd = ud_socket(sc->family, &a, sl, false);
	if (u->fd < 0) {
		err = -u->fd;
		free(u);
		if (err == EADDRINUSE)
			return -EADDRINUSE; /* the caller picks another port */
		return rv_err(err, fn, "soft0 cannot bind its UDP socket to port %u: %s", sc->port, strerror(err));
	}
	if (sc->roce_port) {
		set_port(&a, SOFT_UD_ROCE_PORT);
		u->roce_fd = ud_socket(sc->family, &a, sl, false);
		if (u->roce_fd < 0) {
			err = -u->roce_fd;
			close(u->fd);
			free(u);
			/* EBUSY, not EADDRINUSE: another port of ours would not help. */
			return rv_err(err == EADDRINUSE ? EBUSY : err, fn,
				      "RV_SOFT_ROCE_PORT: soft0 cannot receive on UDP port %u of its address: %s%s",
				      SOFT_UD_ROCE_PORT, strerror(err),
				      err == EADDRINUSE ? " (another context, or a kernel RoCE device on that address, has "
							  "it; one context per address can)"
							: "");
		}
	}
	mcast_sender(u);
	sc->ud = u;
	return 0;
}

void soft_ud_close(struct soft_ctx *sc)
{
	if (!sc->ud)
		return;
	while (sc->ud->groups) {
		struct soft_mcg *g = sc->ud->groups;
		sc->ud->groups = g->next;
		close(g->fd);
		free(g);
	}
	close(sc->ud->fd);
	if (sc->ud->roce_fd >= 0)
		close(sc->ud->roce_fd);
	free(sc->ud);
	sc->ud = NULL;
}

int soft_ud_fd(const struct soft_ctx *sc)
{
	return sc->ud->fd;
}

int soft_ud_roce_fd(const struct soft_ctx *sc)
{
	return sc->ud ? sc->ud->roce_fd : -1;
}

bool soft_ud_is_tag(const struct soft_ctx *sc, const void *tag)
{
	return sc->ud && tag == sc->ud;
}

int soft_ud_counters(rv_context *ctx, uint64_t out[SOFT_UD_NCOUNTERS])
{
	struct soft_ctx *sc;

	if (!ctx || ctx->dev->kind != RV_DEVICE_SOFT || !(sc = ctx->drv_ctx) || !sc->ud)
		return -EINVAL;
	for (int i = 0; i < SOFT_UD_NCOUNTERS; i++)
		out[i] = atomic_load_explicit(&sc->ud->n[i], memory_order_relaxed);
	return 0;
}

/* ---- address handles ---------------------------------------------------- */

static bool gid_is_v4_mapped(const uint8_t g[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(g, prefix, 12) == 0;
}

/* Whether g is a multicast GID: ff00::/8, or IPv4-mapped 224.0.0.0/4. */
static bool gid_is_mcast(const uint8_t g[16])
{
	return g[0] == 0xff || (gid_is_v4_mapped(g) && (g[12] & 0xf0) == 0xe0);
}

/* Whether attr names a peer this context can reach; the message otherwise. */
static int check_av(struct soft_ctx *sc, const rv_ah_attr *attr, const char *fn)
{
	if (!attr->is_global)
		return rv_err(EINVAL, fn, "soft0 routes by GID: set is_global 1 and dgid to the peer's "
			      "GID (rv_endpoint::gid, its IP address)");
	if (attr->sgid_index != 0)
		return rv_err(EINVAL, fn, "sgid_index %u: soft0's GID table has one entry (index 0)",
			      attr->sgid_index);
	if (sc->family == AF_INET && !gid_is_v4_mapped(attr->dgid))
		return rv_err(EINVAL, fn, "dgid is not an IPv4-mapped GID (::ffff:a.b.c.d) but this "
			      "context is on an IPv4 address: soft0 reaches IPv4 peers only from it");
	if (sc->family == AF_INET6 && gid_is_v4_mapped(attr->dgid))
		return rv_err(EINVAL, fn, "dgid is an IPv4-mapped GID but this context is on an IPv6 "
			      "address: open the peer's context on IPv6 too");
	return 0;
}

int soft_ah_create(struct rv_ah *ah)
{
	struct soft_ctx *sc = ah->pd->ctx->drv_ctx;

	if (!sc->ud)
		return rv_err(EOPNOTSUPP, "rv_ah_new", "this soft0 context has no UDP side: it listens on "
			      "the wildcard address; open it on a specific address (rv_context_attr.listen_addr)");
	/* The facade keeps ah->attr; posting reads it. No driver object. */
	return check_av(sc, &ah->attr, "rv_ah_new");
}

int soft_ah_destroy(struct rv_ah *ah)
{
	(void)ah;
	return 0;
}

/* ---- send ----------------------------------------------------------------- */

static void send_wc(struct soft_qp *q, const rv_send_wr *wr, uint32_t status, uint32_t len)
{
	rv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr->wr_id;
	wc.status = status;
	wc.opcode = RV_WC_SEND;
	wc.byte_len = status == RV_WC_SUCCESS ? len : 0;
	wc.qp_num = q->qpn;
	if (!soft_cq_push(q->qp->send_cq, &wc))
		q->cq_overflow = true;
}

static int check_wr(const struct soft_qp *q, const rv_send_wr *wr, size_t i, uint64_t *len)
{
	static const char *const fn = "rv_qp_post_send";
	int rc = rv_ud_wr_check(q->qp, wr, i);

	if (rc < 0)
		return rc;
	if (wr->num_sge > q->max_send_sge)
		return rv_err(EINVAL, fn, "wrs[%zu] has %u SGEs; the QP's max_send_sge is %u", i, wr->num_sge,
			      q->max_send_sge);
	if (wr->num_sge && !wr->sg_list)
		return rv_err(EINVAL, fn, "wrs[%zu] has num_sge %u but sg_list is NULL", i, wr->num_sge);
	*len = rv_send_wr_length(wr);
	if (*len > SOFT_UD_MTU)
		return rv_err(EINVAL, fn, "wrs[%zu] carries %llu bytes; a UD message fits one packet, the "
			      "path MTU (%u bytes on soft0)", i, (unsigned long long)*len, SOFT_UD_MTU);
	return check_av(q->sc, &wr->ah->attr, fn);
}

/* Where an AV's datagrams go: its dlid (a soft0 context's port), or for
 * dlid 0 RoCEv2's port, where a RoCE NIC's peer listens. */
static uint16_t dest_port(const rv_ah_attr *av)
{
	/* A multicast AV's dlid is the group's MLID, not a port: groups are on 4791. */
	return av->dlid && !gid_is_mcast(av->dgid) ? av->dlid : (uint16_t)SOFT_UD_ROCE_PORT;
}

/* The socket that sends to av, and its port (the ICRC covers it): to a RoCE
 * peer from port 4791 when this context has it, else from the context's. */
static int src_fd(const struct soft_ud *u, const rv_ah_attr *av, uint16_t *port)
{
	if (!av->dlid && u->roce_fd >= 0 && !gid_is_mcast(av->dgid)) {
		*port = SOFT_UD_ROCE_PORT;
		return u->roce_fd;
	}
	*port = u->port;
	return u->fd;
}

/* Hand one datagram to the socket; false when it was dropped. */
static bool send_datagram(struct soft_ud *u, const rv_ah_attr *av, const uint8_t *pkt, size_t len)
{
	uint16_t sport;
	int fd = src_fd(u, av, &sport);
	struct sockaddr_storage to;
	socklen_t tl;
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(int)) * 2];
	} ctl;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)pkt, .iov_len = len};
	struct msghdr m;
	struct cmsghdr *c;
	int ttl = av->hop_limit, tos = av->traffic_class;

	memset(&to, 0, sizeof(to));
	memset(&ctl, 0, sizeof(ctl));
	memset(&m, 0, sizeof(m));
	m.msg_name = &to;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.b;
	m.msg_controllen = sizeof(ctl.b);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_len = CMSG_LEN(sizeof(int));
	if (u->family == AF_INET) {
		struct sockaddr_in *t = (struct sockaddr_in *)&to;
		t->sin_family = AF_INET;
		t->sin_port = htons(dest_port(av));
		memcpy(&t->sin_addr, av->dgid + 12, 4);
		tl = sizeof(*t);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_TTL;
		memcpy(CMSG_DATA(c), &ttl, sizeof(int));
		c = CMSG_NXTHDR(&m, c);
		c->cmsg_len = CMSG_LEN(sizeof(int));
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_TOS;
	} else {
		struct sockaddr_in6 *t = (struct sockaddr_in6 *)&to;
		t->sin6_family = AF_INET6;
		t->sin6_port = htons(dest_port(av));
		memcpy(&t->sin6_addr, av->dgid, 16);
		tl = sizeof(*t);
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_HOPLIMIT;
		memcpy(CMSG_DATA(c), &ttl, sizeof(int));
		c = CMSG_NXTHDR(&m, c);
		c->cmsg_len = CMSG_LEN(sizeof(int));
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_TCLASS;
	}
	memcpy(CMSG_DATA(c), &tos, sizeof(int));
	m.msg_namelen = tl;
	for (int tries = 0; tries < 2; tries++) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};

		if (sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
			return true;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
			break;
		if (tries == 0 && poll(&p, 1, SOFT_UD_TX_WAIT_MS) <= 0)
			break;
	}
	return false;
}

int soft_ud_post_send(struct soft_qp *q, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	static const char *const fn = "rv_qp_post_send";
	struct soft_ud *u = q->sc->ud;
	uint32_t st = atomic_load(&q->state);
	uint8_t pkt[RV_ROCE_UD_OVERHEAD + SOFT_UD_MTU + RV_ROCE_UD_AUTH_LEN];
	bool auth = q->sc->auth;
	size_t i = 0;
	int rc = 0;

	if (st != RV_QPS_RTS && st != RV_QPS_ERR) {
		*n_posted = 0;
		return rv_err(EINVAL, fn, "the UD QP is in %s; sends need RTS (rv_qp_to_init, "
			      "rv_qp_to_rtr, rv_qp_to_rts)", rv_qp_state_name(st));
	}
	for (; i < n; i++) {
		const rv_send_wr *wr = &wrs[i];
		const rv_ah_attr *av;
		struct rv_roce_ud h;
		struct rv_roce_addr a;
		uint64_t len = 0;
		size_t hl, total;
		bool signaled = q->qp->sq_sig_all || (wr->send_flags & RV_SEND_SIGNALED);

		rc = check_wr(q, wr, i, &len);
		if (rc < 0)
			break;
		if (atomic_load(&q->state) == RV_QPS_ERR) {
			send_wc(q, wr, RV_WC_WR_FLUSH_ERR, 0);
			continue;
		}
		av = &wr->ah->attr;
		memset(&h, 0, sizeof(h));
		h.opcode = wr->opcode == RV_WR_SEND_WITH_IMM ? RV_ROCE_UD_SEND_ONLY_IMM : RV_ROCE_UD_SEND_ONLY;
		h.solicited = (wr->send_flags & RV_SEND_SOLICITED) != 0;
		h.pkey = RV_ROCE_DEFAULT_PKEY;
		h.dest_qp = wr->remote_qpn;
		h.psn = q->ud_psn++ & 0xffffff;
		/* A Q_Key with the high bit set means "use the QP's own" (IBA §10.2.5). */
		h.qkey = (wr->remote_qkey & 0x80000000u) ? q->attr.qkey : wr->remote_qkey;
		h.src_qp = q->qpn;
		h.imm = wr->imm_data;
		h.deth_rsvd = auth ? RV_ROCE_UD_AUTH_MARK : 0;
		hl = rv_roce_ud_encode_hdr(&h, (uint32_t)len + (auth ? RV_ROCE_UD_AUTH_LEN : 0), pkt);
		if (wr->send_flags & RV_SEND_INLINE) {
			/* Inline asked for: the caller vouches for the memory, no
			 * key applies. Automatic inline gains nothing here (the
			 * datagram is built now either way), so a WR the caller
			 * did not mark inline has its lkeys checked (issue 17). */
			size_t off = hl;
			for (uint32_t k = 0; k < wr->num_sge; k++) {
				memcpy(pkt + off, (const void *)(uintptr_t)wr->sg_list[k].addr, wr->sg_list[k].length);
				off += wr->sg_list[k].length;
			}
		} else if (soft_sgl_read(q->sc, q->qp->pd, wr->sg_list, wr->num_sge, 0, pkt + hl, len) !=
			   SOFT_MEM_OK) {
			/* As a NIC: the WR completes with a local protection error,
			 * the QP goes to ERR and what follows is flushed. */
			soft_qp_fail(q, q->sq_tail, RV_WC_WR_FLUSH_ERR, RV_WC_WR_FLUSH_ERR, false);
			send_wc(q, wr, RV_WC_LOC_PROT_ERR, 0);
			continue;
		}
		memset(&a, 0, sizeof(a));
		a.family = u->family == AF_INET ? 4 : 6;
		memcpy(a.src, u->addr, 16);
		if (a.family == 4)
			memcpy(a.dst, av->dgid + 12, 4);
		else
			memcpy(a.dst, av->dgid, 16);
		src_fd(u, av, &a.sport);
		a.dport = dest_port(av);
		a.ip_id = SOFT_UD_IP_ID;
		a.ip_frag = SOFT_UD_IP_DF;
		total = hl + len;
		if (auth)
			total = rv_roce_ud_auth_seal(q->sc->auth_key, q->sc->auth_key_len, &a, pkt, total, u->epoch,
						     atomic_fetch_add_explicit(&u->seq, 1, memory_order_relaxed));
		total = rv_roce_ud_finish(&a, pkt, total);
		/* A datagram a fault loses counts as sent: the network lost it. */
		count(u, soft_fault_dgram_lost(q, pkt, total) || send_datagram(u, av, pkt, total) ? SOFT_UD_TX
											       : SOFT_UD_TX_DROP);
		if (signaled)
			send_wc(q, wr, RV_WC_SUCCESS, (uint32_t)len);
	}
	soft_qp_check_overflow(q);
	*n_posted = i;
	return rc;
}

/* ---- receive -------------------------------------------------------------- */

/* Whether a decoded datagram passes the context's authentication; *plen
 * loses the trailer (progress thread). */
static bool ud_auth_ok(struct soft_ctx *sc, struct soft_ud *u, const struct rv_roce_addr *a,
		       const struct rv_roce_ud *h, const uint8_t *pkt, size_t off, uint32_t *plen)
{
	uint64_t epoch, seq;

	if (!sc->auth) {
		if (h->deth_rsvd != RV_ROCE_UD_AUTH_MARK)
			return true;
		/* An authenticated sender: we cannot check it, and its payload
		 * ends with the trailer. */
		count(u, SOFT_UD_DROP_AUTH);
		rv_log(RV_LOG_DEBUG, "soft0: dropped an authenticated UD datagram from port %u: this context "
		       "has no secret (rv_context_attr.auth_secret, RVERBS_SOFT_SECRET_FILE)", a->sport);
		return false;
	}
	if (!rv_roce_ud_auth_open(sc->auth_key, sc->auth_key_len, a, pkt, off, plen, &epoch, &seq)) {
		count(u, SOFT_UD_DROP_AUTH);
		return false;
	}
	if (!rv_roce_replay_check(&u->replay, epoch, seq)) {
		count(u, SOFT_UD_DROP_REPLAY);
		return false;
	}
	return true;
}

/* Deliver one verified datagram to QP q (sc->lock held). */
static void deliver_to(struct soft_ctx *sc, struct soft_ud *u, struct soft_qp *q, const struct rv_roce_addr *a,
		       const struct rv_roce_ud *h, const uint8_t *payload, uint32_t plen, size_t udp_len,
		       int tos, int ttl, bool roce)
{
	struct soft_rwqe *w;
	uint8_t grh[RV_UD_GRH_LEN];
	uint64_t cap = 0;
	uint32_t st;
	rv_wc wc;

	if (!q) {
		count(u, SOFT_UD_DROP_QP);
		return;
	}
	soft_lock_take(&q->lock);
	st = atomic_load(&q->state);
	if (!q->ud || st < RV_QPS_RTR || st == RV_QPS_ERR) {
		count(u, SOFT_UD_DROP_QP);
	} else if ((h->pkey & 0x7fff) != (RV_ROCE_DEFAULT_PKEY & 0x7fff)) {
		count(u, SOFT_UD_DROP_PKEY);
	} else if (h->qkey != q->attr.qkey) {
		count(u, SOFT_UD_DROP_QKEY);
	} else if (!(w = soft_rq_peek(q))) { /* its receive queue or its SRQ */
		count(u, SOFT_UD_DROP_NO_RECV);
	} else {
		for (uint32_t k = 0; k < w->num_sge; k++)
			cap += w->sge[k].length;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.opcode = RV_WC_RECV;
		wc.qp_num = q->qpn;
		if (cap < RV_UD_GRH_LEN + (uint64_t)plen) {
			wc.status = RV_WC_LOC_LEN_ERR;
		} else {
			memset(grh, 0, sizeof(grh));
			if (a->family == 4)
				rv_roce_ipv4_header(a, (uint8_t)tos, (uint8_t)ttl, udp_len, grh + 20);
			else
				rv_roce_ipv6_header(a, (uint8_t)tos, (uint8_t)ttl, udp_len, grh);
			if (soft_sgl_write(sc, q->qp->pd, w->sge, w->num_sge, 0, grh, RV_UD_GRH_LEN) != SOFT_MEM_OK ||
			    soft_sgl_write(sc, q->qp->pd, w->sge, w->num_sge, RV_UD_GRH_LEN, payload, plen) !=
				    SOFT_MEM_OK) {
				wc.status = RV_WC_LOC_PROT_ERR;
			} else {
				wc.status = RV_WC_SUCCESS;
				wc.byte_len = RV_UD_GRH_LEN + plen;
				wc.src_qp = h->src_qp;
				wc.wc_flags = RV_WC_GRH;
				if (h->opcode == RV_ROCE_UD_SEND_ONLY_IMM) {
					wc.wc_flags |= RV_WC_WITH_IMM;
					wc.imm_data = h->imm;
				}
				/* soft0's LID is a context's port number: the sender's
				 * (0 from the RoCE port: the peer listens on 4791). */
				wc.slid = roce ? 0 : a->sport;
				wc.pkey_index = 0;
			}
		}
		soft_rq_consume(q);
		if (!soft_cq_push_se(q->qp->recv_cq, &wc, h->solicited))
			q->cq_overflow = true;
		count(u, wc.status == RV_WC_SUCCESS ? SOFT_UD_RX : SOFT_UD_RX_ERR);
		soft_qp_check_overflow(q);
	}
	soft_lock_give(&q->lock);
}

/* Deliver one verified datagram: to its QP, or for one that arrived on group
 * g's socket, a copy to each QP attached to g (sc->lock held). */
static void deliver(struct soft_ctx *sc, struct soft_ud *u, const struct soft_mcg *g, const struct rv_roce_addr *a,
		    const struct rv_roce_ud *h, const uint8_t *payload, uint32_t plen, size_t udp_len,
		    int tos, int ttl, bool roce)
{
	if (!g) {
		deliver_to(sc, u, soft_ctx_find_qp(sc, h->dest_qp), a, h, payload, plen, udp_len, tos, ttl, roce);
		return;
	}
	/* A group's datagram names the multicast QP, never one of ours. */
	if (h->dest_qp != SOFT_UD_MCAST_QPN || !g->n_qps) {
		count(u, SOFT_UD_DROP_QP);
		return;
	}
	for (uint32_t i = 0; i < g->n_qps; i++)
		deliver_to(sc, u, soft_ctx_find_qp(sc, g->qpns[i]), a, h, payload, plen, udp_len, tos, ttl, false);
}

/* Reads what waits on fd, bound to our port `port`. On the RoCE port the
 * sender's port is a RoCE NIC's entropy, not where it listens: the
 * completion says slid 0, so that a reply's AV (rv_ah_from_wc) goes to 4791. */
static void rx_from(struct soft_ctx *sc, struct soft_ud *u, int fd, uint16_t port, const struct soft_mcg *g)
{
	for (int i = 0; i < SOFT_UD_RX_BATCH; i++) {
		struct sockaddr_storage from;
		union {
			struct cmsghdr h;
			uint8_t b[256];
		} ctl;
		struct iovec iov = {.iov_base = u->rx, .iov_len = sizeof(u->rx)};
		struct msghdr m;
		struct cmsghdr *c;
		struct rv_roce_addr a;
		struct rv_roce_ud h;
		enum rv_roce_status s;
		size_t off;
		uint32_t plen;
		int tos = 0, ttl = 64;
		ssize_t n;

		memset(&m, 0, sizeof(m));
		m.msg_name = &from;
		m.msg_namelen = sizeof(from);
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.b;
		m.msg_controllen = sizeof(ctl.b);
		n = recvmsg(fd, &m, MSG_DONTWAIT);
		if (n < 0)
			return; /* EAGAIN: drained (other errors: a later wakeup retries) */
		if (m.msg_flags & MSG_TRUNC) {
			count(u, SOFT_UD_DROP_LONG);
			continue;
		}
		memset(&a, 0, sizeof(a));
		if (from.ss_family == AF_INET && u->family == AF_INET) {
			const struct sockaddr_in *f = (const struct sockaddr_in *)&from;
			a.family = 4;
			memcpy(a.src, &f->sin_addr, 4);
			a.sport = ntohs(f->sin_port);
		} else if (from.ss_family == AF_INET6 && u->family == AF_INET6) {
			const struct sockaddr_in6 *f = (const struct sockaddr_in6 *)&from;
			a.family = 6;
			memcpy(a.src, &f->sin6_addr, 16);
			a.sport = ntohs(f->sin6_port);
		} else {
			count(u, SOFT_UD_DROP_BAD);
			continue;
		}
		if (g) /* the ICRC covers the group's address, where it was sent */
			memcpy(a.dst, a.family == 4 ? g->gid + 12 : g->gid, a.family == 4 ? 4 : 16);
		else
			memcpy(a.dst, u->addr, 16);
		a.dport = port;
		/* A kernel RoCE device writes its own identification (on the RoCE
		 * port, and to a group, which it may have joined too). */
		a.ip_id_any = fd == u->roce_fd || g;
		a.ip_id = SOFT_UD_IP_ID;
		a.ip_frag = SOFT_UD_IP_DF;
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			int v = 0;
			if (c->cmsg_len < CMSG_LEN(1))
				continue;
			/* IP_TOS arrives as one byte, the others as an int. */
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
				v = *CMSG_DATA(c);
			else if (c->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&v, CMSG_DATA(c), sizeof(int));
			if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) ||
			    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS))
				tos = v;
			else if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
				 (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT))
				ttl = v;
		}
		s = rv_roce_ud_decode(&a, u->rx, (size_t)n, &h, &off, &plen);
		if (s != RV_ROCE_OK) {
			count(u, s == RV_ROCE_BAD_ICRC ? SOFT_UD_DROP_ICRC : SOFT_UD_DROP_BAD);
			rv_log(RV_LOG_DEBUG, "soft0: dropped a UD datagram from port %u: %s", a.sport,
			       rv_roce_status_name(s));
			continue;
		}
		if (!ud_auth_ok(sc, u, &a, &h, u->rx, off, &plen))
			continue;
		if (plen > SOFT_UD_MTU) {
			count(u, SOFT_UD_DROP_LONG);
			continue;
		}
		deliver(sc, u, g, &a, &h, u->rx + off, plen, (size_t)n, tos, ttl, fd == u->roce_fd);
	}
	/* More may wait: level-triggered epoll wakes the thread again. */
}

void soft_ud_rx(struct soft_ctx *sc)
{
	struct soft_ud *u = sc->ud;

	rx_from(sc, u, u->fd, u->port, NULL);
	if (u->roce_fd >= 0)
		rx_from(sc, u, u->roce_fd, SOFT_UD_ROCE_PORT, NULL);
	for (const struct soft_mcg *g = u->groups; g; g = g->next)
		rx_from(sc, u, g->fd, SOFT_UD_ROCE_PORT, g);
}

/* ---- multicast ------------------------------------------------------------ */

static struct soft_mcg *group_find(struct soft_ud *u, const uint8_t gid[16])
{
	for (struct soft_mcg *g = u->groups; g; g = g->next)
		if (memcmp(g->gid, gid, 16) == 0)
			return g;
	return NULL;
}

/* A socket bound to the group and port 4791, joined on our interface; -errno
 * with the message set. */
static int group_socket(struct soft_ctx *sc, struct soft_ud *u, const uint8_t gid[16], const char *fn)
{
	struct sockaddr_storage a;
	socklen_t sl;
	char txt[INET6_ADDRSTRLEN] = "?";
	int fd, rc, err;

	memset(&a, 0, sizeof(a));
	if (u->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&a;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(SOFT_UD_ROCE_PORT);
		memcpy(&s4->sin_addr, gid + 12, 4);
		sl = sizeof(*s4);
		inet_ntop(AF_INET, gid + 12, txt, sizeof(txt));
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(SOFT_UD_ROCE_PORT);
		memcpy(&s6->sin6_addr, gid, 16);
		s6->sin6_scope_id = u->ifindex; /* link-local groups need it */
		sl = sizeof(*s6);
		inet_ntop(AF_INET6, gid, txt, sizeof(txt));
	}
	fd = ud_socket(u->family, &a, sl, true);
	if (fd < 0)
		return rv_err(-fd, fn, "soft0 cannot bind a socket to multicast group %s, UDP port %u: %s%s", txt,
			      SOFT_UD_ROCE_PORT, strerror(-fd),
			      fd == -EADDRINUSE ? " (a socket without SO_REUSEADDR, such as a kernel RoCE device's, "
						  "holds that port for every address)"
						: "");
	if (u->family == AF_INET) {
		struct ip_mreq m;
		memcpy(&m.imr_multiaddr, gid + 12, 4);
		memcpy(&m.imr_interface, u->addr, 4);
		rc = setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m));
	} else {
		struct ipv6_mreq m;
		memcpy(&m.ipv6mr_multiaddr, gid, 16);
		m.ipv6mr_interface = u->ifindex;
		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m));
	}
	if (rc < 0) {
		err = errno;
		close(fd);
		return rv_err(err == ENOBUFS ? ENOMEM : err, fn,
			      "soft0 cannot join multicast group %s on the interface of its address: %s%s", txt,
			      strerror(err),
			      err == ENOBUFS ? " (the kernel's limit on memberships per socket or host, "
					       "net.ipv4.igmp_max_memberships)"
					     : "");
	}
	if (epoll_ctl(sc->epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){.events = EPOLLIN, .data.ptr = u}) < 0) {
		err = errno;
		close(fd);
		return rv_err(err, fn, "soft0 cannot watch its socket of multicast group %s: %s", txt, strerror(err));
	}
	return fd;
}

int soft_mcast_attach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid)
{
	static const char *const fn = "rv_qp_attach_mcast";
	struct soft_qp *q = qp->drv_qp;
	struct soft_ctx *sc = q->sc;
	struct soft_ud *u = sc->ud;
	struct soft_mcg *g;
	int rc = 0;

	(void)lid; /* an Ethernet port: the MLID means nothing, as on RoCE */
	if (!u)
		return rv_err(EOPNOTSUPP, fn, "this soft0 context has no UDP side: it listens on the wildcard "
			      "address; open it on a specific address (rv_context_attr.listen_addr)");
	if ((u->family == AF_INET) != gid_is_v4_mapped(gid))
		return rv_err(EINVAL, fn, "the group is an %s multicast GID but this context is on an %s address: "
			      "soft0 joins groups of its own address family",
			      gid_is_v4_mapped(gid) ? "IPv4-mapped" : "IPv6", u->family == AF_INET ? "IPv4" : "IPv6");
	soft_lock_take(&sc->lock);
	g = group_find(u, gid);
	if (g) {
		for (uint32_t i = 0; i < g->n_qps; i++)
			if (g->qpns[i] == q->qpn)
				goto out; /* attached already: as ibv_attach_mcast, not an error */
		if (g->n_qps == SOFT_MAX_MCAST_QP_ATTACH) {
			rc = rv_err(ENOMEM, fn, "%u QPs are attached to this group already, soft0's "
				    "max_mcast_qp_attach", SOFT_MAX_MCAST_QP_ATTACH);
			goto out;
		}
	} else {
		if (u->n_groups == SOFT_MAX_MCAST_GRP) {
			rc = rv_err(ENOMEM, fn, "this context has joined %u multicast groups, soft0's max_mcast_grp",
				    SOFT_MAX_MCAST_GRP);
			goto out;
		}
		g = calloc(1, sizeof(*g));
		if (!g) {
			rc = rv_err(ENOMEM, fn, "out of memory for a multicast group");
			goto out;
		}
		memcpy(g->gid, gid, 16);
		g->fd = group_socket(sc, u, gid, fn);
		if (g->fd < 0) {
			rc = g->fd;
			free(g);
			goto out;
		}
		g->next = u->groups;
		u->groups = g;
		u->n_groups++;
	}
	g->qpns[g->n_qps++] = q->qpn;
out:
	soft_lock_give(&sc->lock);
	return rc;
}

/* Take QP qpn off g; the group is left (its socket closed) with its last QP. */
static bool group_drop(struct soft_ud *u, struct soft_mcg *g, uint32_t qpn)
{
	uint32_t i;

	for (i = 0; i < g->n_qps && g->qpns[i] != qpn; i++)
		;
	if (i == g->n_qps)
		return false;
	g->qpns[i] = g->qpns[--g->n_qps];
	if (!g->n_qps) {
		struct soft_mcg **pp = &u->groups;
		while (*pp != g)
			pp = &(*pp)->next;
		*pp = g->next;
		u->n_groups--;
		close(g->fd); /* leaves the group and the epoll set */
		free(g);
	}
	return true;
}

int soft_mcast_detach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid)
{
	static const char *const fn = "rv_qp_detach_mcast";
	struct soft_qp *q = qp->drv_qp;
	struct soft_ctx *sc = q->sc;
	struct soft_mcg *g;
	int rc = 0;

	(void)lid;
	if (!sc->ud)
		return rv_err(EINVAL, fn, "QP 0x%x is attached to no multicast group (this context has no UDP side)",
			      q->qpn);
	soft_lock_take(&sc->lock);
	g = group_find(sc->ud, gid);
	if (!g || !group_drop(sc->ud, g, q->qpn))
		rc = rv_err(EINVAL, fn, "QP 0x%x is not attached to that multicast group", q->qpn);
	soft_lock_give(&sc->lock);
	return rc;
}

void soft_ud_mcast_forget(struct soft_ctx *sc, uint32_t qpn)
{
	struct soft_mcg *g, *next;

	if (!sc->ud)
		return;
	for (g = sc->ud->groups; g; g = next) {
		next = g->next;
		group_drop(sc->ud, g, qpn);
	}
}
