/*
 * The same-host path of the software device: between two processes of one
 * host, an RDMA WRITE or SEND of SOFT_SHM_MIN bytes or more does not carry
 * its payload through TCP; the FPDU names the source memory and the target
 * pulls it with one process_vm_readv(2) straight into the registered memory
 * (rx.c), after the same checks as over TCP. TCP still carries
 * everything else (setup, SEND, READ, confirmations, TERMINATE), so ordering,
 * completion and error semantics are unchanged: a WRITE completes once the
 * peer confirmed it, i.e. after it pulled the data.
 *
 * Who the peer is, is what the kernel says, never what the peer says
 * (docs/software-device.md, "Threat model"). The agreement, once per
 * connection:
 * 1. both sides allow it (RVERBS_SOFT_SHM, default 1) and see both ends of
 *    the TCP connection on this host; each appends an extension to its MPA
 *    private data that says only that (magic, kind, flags): no pid, no
 *    address, nothing about the process before authentication;
 * 2. once the connection is up (after authentication when a secret is set),
 *    the initiator sends SOFT_OP_SHM_CTL kind 1 naming its pid and the
 *    descriptor number of its end of this TCP connection; the responder
 *    takes that descriptor out of that process with pidfd_getfd(2) (which
 *    needs the ptrace permission process_vm_readv needs) and accepts the
 *    process only if the descriptor is the other end of this very connection:
 *    same network namespace (SO_NETNS_COOKIE), our peer address its local
 *    one and our local address its peer one. A peer that names another
 *    process (the target itself, a victim) names one that does not hold this
 *    connection, and is refused. The pidfd is kept: before every read the
 *    process must still be alive (no pid reuse);
 * 3. the responder answers with kind 2: whether it accepted, and its own pid
 *    and descriptor, which the initiator checks the same way; kind 6 carries
 *    the initiator's result back.
 * A side sends WRITEs by reference only once the other said it accepted; a
 * second agreement on a connection, or a message out of order, is a
 * TERMINATE. Anything refused leaves the connection on TCP.
 *
 * Runs under the connection's rules (conn.c, rx.c, tx.c): sc->lock and/or
 * q->lock held by the caller. Below shmring.c, which hands the agreement's
 * control messages here and starts the rings once it holds: never calls it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drivers/soft/soft.h"

enum { CTL_ID_I = 1, CTL_ID_R = 2, CTL_RESULT_I = 6 };

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* An end of a TCP socket as 16 address bytes (IPv4-mapped) and a port. */
static bool end_of(int fd, bool local, uint8_t out[18])
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	memset(out, 0, 18);
	if ((local ? getsockname(fd, (struct sockaddr *)&ss, &l) : getpeername(fd, (struct sockaddr *)&ss, &l)) < 0)
		return false;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &a->sin_addr, 4);
		memcpy(out + 16, &a->sin_port, 2);
		return true;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
		memcpy(out, &a->sin6_addr, 16);
		memcpy(out + 16, &a->sin6_port, 2);
		return true;
	}
	return false;
}

/* Both ends of c's connection are on this host: the peer's address is a
 * loopback one or our own. (A host's other addresses reach it too, but a
 * peer behind them is not the one we connected to by that address.) Before
 * the connection is established (the initiator's request), the peer's
 * address is the GID its endpoint named. */
static bool peer_is_local(const struct soft_conn *c)
{
	uint8_t l[18], p[18];

	if (!end_of(c->fd, true, l))
		return false;
	if (!end_of(c->fd, false, p)) {
		if (!c->qp)
			return false;
		memcpy(p, c->qp->peer_gid, 16);
	}
	return soft_addr_is_loopback(p) || memcmp(p, l, 16) == 0;
}

size_t soft_shm_ext_put(struct soft_conn *c, bool reply, uint8_t *buf)
{
	uint32_t kind = reply;

	/* XRC connections take TCP: the SRQ number rides in the queue number
	 * of the FPDUs (rx.c, xrc_select), which the by-reference and ring
	 * paths do not carry. */
	if (c->qp && (c->qp->xrc_ini || c->qp->xrc_tgt))
		return 0;
	if (!c->sc->shm_enabled || (reply && !c->shm_peer) || (!reply && !peer_is_local(c)))
		return 0;
	memset(buf, 0, SOFT_SHM_EXT_LEN);
	memcpy(buf, SOFT_SHM_EXT_MAGIC, 4);
	memcpy(buf + 4, &kind, 4);
	buf[12] = c->sc->shm_ring ? 1 : 0; /* flags: 1 = shared-memory rings (shmring.c) */
	return SOFT_SHM_EXT_LEN;
}

void soft_shm_ext_got(struct soft_conn *c, bool reply, const uint8_t *pd, size_t len)
{
	const uint8_t *x = pd + RV_SOFT_CPD_LEN;
	uint32_t kind;

	if (c->shm_offered)
		return; /* once per connection */
	c->shm_offered = true;
	c->shm_peer = c->shm_pull = c->shm_push = false;
	if (!c->sc->shm_enabled || len < RV_SOFT_CPD_LEN + SOFT_SHM_EXT_LEN || memcmp(x, SOFT_SHM_EXT_MAGIC, 4) != 0)
		return;
	memcpy(&kind, x + 4, 4);
	if (kind != (uint32_t)reply || !peer_is_local(c) || (c->qp && (c->qp->xrc_ini || c->qp->xrc_tgt)))
		return;
	c->shm_peer = true;
	c->shm_ring_peer = (x[12] & 1) != 0;
	if (reply) {
		c->shm_ctl_due = CTL_ID_I; /* after the RTR message (tx.c) */
		c->shm_send_ctl = true;
	}
}

/* Is fd the other end of c's TCP connection, in c's network namespace? */
static bool other_end(const struct soft_conn *c, int fd)
{
	uint8_t ml[18], mp[18], tl[18], tp[18];
	uint64_t ma = 0, ta = 0;
	socklen_t la = sizeof(ma), lb = sizeof(ta);
	int type = 0, proto = 0;
	socklen_t lt = sizeof(type), lp = sizeof(proto);

	uint64_t ka = 0, kb = 0;
	socklen_t lka = sizeof(ka), lkb = sizeof(kb);

	/* Not our own socket (a stream connected to itself has both ends alike). */
	if (getsockopt(c->fd, SOL_SOCKET, SO_COOKIE, &ka, &lka) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, &kb, &lkb) == 0 && ka == kb)
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &lt) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &lp) < 0 || proto != IPPROTO_TCP)
		return false;
	/* Both ends in one namespace: there, an established 4-tuple is unique. */
	if (getsockopt(c->fd, SOL_SOCKET, SO_NETNS_COOKIE, &ma, &la) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &ta, &lb) < 0 || ma != ta)
		return false;
	return end_of(c->fd, true, ml) && end_of(c->fd, false, mp) && end_of(fd, true, tl) &&
	       end_of(fd, false, tp) && memcmp(ml, tp, 18) == 0 && memcmp(mp, tl, 18) == 0;
}

/* Accept process pid as the peer if its descriptor num is the other end of
 * c. Keeps a pidfd on it (or -1 when it is this process). */
static bool verify_peer(struct soft_conn *c, uint32_t pid, uint32_t num)
{
	int pfd = -1, fd = -1;
	bool ok;

	if (!pid || num > (uint32_t)INT32_MAX)
		return false;
	if (pid == (uint32_t)getpid()) {
		/* Both ends in this process (two contexts): only if we do hold
		 * the other end, which no one else can make true. */
		fd = fcntl((int)num, F_DUPFD_CLOEXEC, 0);
	} else {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
		pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		if (pfd >= 0)
			fd = (int)syscall(SYS_pidfd_getfd, pfd, (int)num, 0);
#endif
	}
	ok = fd >= 0 && other_end(c, fd);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		if (pfd >= 0)
			close(pfd);
		return false;
	}
	c->shm_pid = pid;
	c->shm_pidfd = pfd;
	return true;
}

bool soft_shm_peer_alive(const struct soft_conn *c)
{
	struct pollfd p = {.fd = c->shm_pidfd, .events = POLLIN};

	if (c->shm_pidfd < 0)
		return c->shm_pid == (uint32_t)getpid();
	/* A pidfd is readable once its process exited: its pid may be reused. */
	return poll(&p, 1, 0) == 0;
}

int soft_shm_dup_fd(const struct soft_conn *c, uint32_t num)
{
	if (!c->shm_pull || num > (uint32_t)INT32_MAX)
		return -1;
	if (c->shm_pidfd < 0)
		return c->shm_pid == (uint32_t)getpid() ? fcntl((int)num, F_DUPFD_CLOEXEC, 0) : -1;
#if defined(SYS_pidfd_getfd)
	return (int)syscall(SYS_pidfd_getfd, c->shm_pidfd, (int)num, 0);
#else
	return -1;
#endif
}

void soft_shm_release(struct soft_conn *c)
{
	if (c->shm_pidfd >= 0)
		close(c->shm_pidfd);
	c->shm_pidfd = -1;
}

void soft_shm_ctl_put(struct soft_conn *c, uint8_t *buf)
{
	uint32_t pid = (uint32_t)getpid(), num = (uint32_t)c->fd;

	memset(buf, 0, SOFT_SHM_CTL_LEN);
	buf[0] = c->shm_ctl_due;
	buf[1] = c->shm_pull;
	if (c->shm_ctl_due != CTL_RESULT_I) {
		memcpy(buf + 4, &pid, 4);
		memcpy(buf + 8, &num, 4);
	}
	if (c->shm_ctl_due == CTL_ID_I)
		c->shm_step = 1; /* sent: kind 2 may come */
	c->shm_ctl_due = 0;
}

/* Returns SOFT_SHM_AGREED: the caller (shmring.c) starts the rings. */
static int agreed(struct soft_qp *q, struct soft_conn *c)
{
	c->shm_step = 3; /* done: no further agreement message is taken */
	rv_log(RV_LOG_INFO, "soft0: QP 0x%x: same-host path to QP 0x%x: WRITEs and SENDs of %u bytes or more from us %s, "
	       "to us %s", q->qpn, q->peer_qpn, SOFT_SHM_MIN, c->shm_push ? "by reference" : "over TCP",
	       c->shm_pull ? "by reference" : "over TCP");
	return SOFT_SHM_AGREED;
}

int soft_shm_ctl_got(struct soft_qp *q, struct soft_conn *c, const uint8_t *p, size_t len)
{
	uint32_t pid, num;

	if (!c->shm_peer || len != SOFT_SHM_CTL_LEN || p[2] || p[3])
		return SOFT_SHM_REFUSED;
	memcpy(&pid, p + 4, 4);
	memcpy(&num, p + 8, 4);
	switch (p[0]) {
	case CTL_ID_I: /* responder: the initiator's identity */
		if (c->active || c->shm_step != 0 || p[1])
			return SOFT_SHM_REFUSED;
		c->shm_pull = verify_peer(c, pid, num);
		c->shm_step = 1;
		c->shm_ctl_due = CTL_ID_R;
		c->shm_send_ctl = true;
		return SOFT_SHM_TAKEN;
	case CTL_ID_R: /* initiator: the responder's result and identity */
		if (!c->active || c->shm_step != 1 || p[1] > 1)
			return SOFT_SHM_REFUSED;
		c->shm_push = p[1] != 0;
		c->shm_pull = verify_peer(c, pid, num);
		c->shm_ctl_due = CTL_RESULT_I;
		c->shm_send_ctl = true;
		return agreed(q, c);
	case CTL_RESULT_I: /* responder: the initiator's result */
		if (c->active || c->shm_step != 1 || p[1] > 1 || pid || num)
			return SOFT_SHM_REFUSED;
		c->shm_push = p[1] != 0;
		return agreed(q, c);
	default:
		return SOFT_SHM_REFUSED;
	}
}
