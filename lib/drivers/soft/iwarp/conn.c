/*
 * Connections of the software device: one TCP stream per connected QP, set up
 * with an MPA request/reply exchange (RFC 5044 §7.1) in revision 2, the
 * enhanced connection setup of RFC 6581: the private data (wire.h,
 * rv_soft_cpd) starts with IRD/ORD and the RTR negotiation and names both QPs.
 * CRC is used when either side requires it (the C bit, RFC 5044 §7.1.3);
 * markers are refused.
 *
 * Who connects: the side whose (gid, port, qpn) tuple compares lower connects
 * to the other's listener at RTR; the other side's listener matches the
 * request against its QP table. A request may arrive before the target QP
 * reaches RTR: it then waits (PENDING) until that QP's RTR, or until
 * SOFT_CONNECT_TIMEOUT_MS. The initiator offers a zero-length READ or WRITE as
 * its RTR message (RFC 6581 peer-to-peer mode), the responder picks one
 * (READ if offered), the initiator sends it as its first FPDU and the
 * responder sends nothing before it.
 *
 * IRD/ORD: each side advertises its IRD (max_dest_rd_atomic) and ORD
 * (max_rd_atomic) and keeps at most min(own ORD, peer's IRD) READs and atomics
 * in flight; the responder enforces the IRD it advertised.
 *
 * Owns: the connection state machine, socket I/O for setup, the stream's
 * events (soft_conn_event, pollers and waiters), the context's timers; the
 * stream itself (flush, epoll interest, teardown) is stream.c's. Runs in the
 * progress thread with sc->lock held, except soft_conn_start/adopt_pending
 * which control calls make with sc->lock held too. Never blocks: every socket
 * is non-blocking.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"
#include "drivers/soft/wire/sha256.h"

/* A connection-setup warning: at most SOFT_SETUP_LOG_PER_S a second per
 * context (a flood of bad requests must not become a flood of log lines);
 * the next line that gets through says how many were left out. */
RV_PRINTF(2, 3) static void setup_warn(struct soft_ctx *sc, const char *fmt, ...)
{
	int64_t now = soft_now_ms();
	char msg[512];
	va_list ap;

	if (now - sc->setup_log_window_ms >= 1000) {
		sc->setup_log_window_ms = now;
		sc->setup_log_lines = 0;
	}
	if (sc->setup_log_lines >= SOFT_SETUP_LOG_PER_S) {
		sc->setup_log_dropped++;
		return;
	}
	sc->setup_log_lines++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sc->setup_log_dropped) {
		rv_log(RV_LOG_WARN, "%s (and %u more connection-setup warnings left out)", msg,
		       sc->setup_log_dropped);
		sc->setup_log_dropped = 0;
	} else {
		rv_log(RV_LOG_WARN, "%s", msg);
	}
}

/*
 * The payload of the FPDUs we send on c, once it is up: as many whole pages as
 * fit the MULPDU (RFC 5044 §8: with markers off, the MSS less the 2-byte MPA
 * length and the 4-byte CRC, and at most the 16-bit ULPDU_Length, less the
 * largest DDP header), at least one page. On loopback (MSS about 64 KiB) that
 * is 60 KiB, a sixteenth of the per-FPDU work of 4 KiB; on an Ethernet path
 * one page, spanning segments as before. Receivers take any FPDU up to
 * RV_ULPDU_MAX, so nothing is negotiated.
 */
static void set_fpdu_payload(struct soft_conn *c)
{
	int mss = 0;
	socklen_t l = sizeof(mss);
	uint32_t ulpdu, pay;

	c->fpdu_payload = c->fpdu_max = SOFT_FPDU_PAYLOAD;
	if (getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) < 0)
		mss = 0;
	/* TCP_MAXSEG starts below the path's (32 741 on loopback, whose MTU is
	 * 65 536, until data flowed): take the path MTU less the IP and TCP
	 * headers with timestamps when that is larger. */
	{
		int mtu = 0, v6 = c->sc->family == AF_INET6;
		l = sizeof(mtu);
		if (getsockopt(c->fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU : IP_MTU, &mtu, &l) == 0 &&
		    mtu - (v6 ? 40 : 20) - 20 - 12 > mss)
			mss = mtu - (v6 ? 40 : 20) - 20 - 12;
	}
	if (mss <= 6 + RV_DDP_UNTAGGED_HDR)
		return;
	ulpdu = (uint32_t)mss - 6 < RV_ULPDU_MAX ? (uint32_t)mss - 6 : RV_ULPDU_MAX;
	pay = (ulpdu - RV_DDP_UNTAGGED_HDR) / SOFT_FPDU_PAYLOAD * SOFT_FPDU_PAYLOAD;
	if (pay > SOFT_FPDU_PAYLOAD_MAX)
		pay = SOFT_FPDU_PAYLOAD_MAX;
	if (pay > c->fpdu_payload)
		c->fpdu_payload = pay;
	/* The largest FPDU that still fits one segment, pad and CRC included
	 * (a multiple of 4: no pad), for chunk_at's large-first split. */
	if ((uint32_t)mss > 2 + RV_DDP_UNTAGGED_HDR + 3 + 4) {
		pay = ((uint32_t)mss - 2 - RV_DDP_UNTAGGED_HDR - 3 - 4) & ~3u;
		if (pay > RV_ULPDU_MAX - RV_DDP_UNTAGGED_HDR)
			pay = (RV_ULPDU_MAX - RV_DDP_UNTAGGED_HDR) & ~3u;
		c->fpdu_max = pay > c->fpdu_payload ? pay : c->fpdu_payload;
	}
}

static struct soft_conn *conn_new(struct soft_ctx *sc, int fd, enum soft_conn_state state)
{
	struct soft_conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev;
	int one = 1, lowat = SOFT_TCP_NOTSENT_LOWAT;

	if (!c)
		return NULL;
	c->rx = malloc(SOFT_RXBUF);
	c->tx = malloc(SOFT_TXBUF);
	if (!c->rx || !c->tx) {
		free(c->rx);
		free(c->tx);
		free(c);
		return NULL;
	}
	c->sc = sc;
	c->fd = fd;
	c->shm_pidfd = -1;
	c->state = state;
	c->fpdu_payload = c->fpdu_max = SOFT_FPDU_PAYLOAD;
	c->events = state == CONN_CONNECTING ? EPOLLOUT : EPOLLIN;
	c->deadline = soft_now_ms() + sc->timeout_ms;
	ev.events = c->events;
	ev.data.ptr = c;
	if (epoll_ctl(sc->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(c->rx);
		free(c->tx);
		free(c);
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
	c->next = sc->conns;
	sc->conns = c;
	return c;
}

/* The QP's connection failed: its work completes with an error. */
static void qp_conn_failed(struct soft_qp *q, const char *why)
{
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: connection to QP 0x%x failed: %s; its work completes with "
	       "RV_WC_RETRY_EXC_ERR and the QP is in the error state", q->qpn, q->peer_qpn, why);
	soft_conn_detach(q, false);
	/* In RTR the application is between rv_qp_to_rtr and rv_qp_to_rts (inside
	 * rv_qp_connect): let that finish, and fail the QP when it reaches RTS. */
	if (atomic_load(&q->state) == RV_QPS_RTR)
		q->conn_failed = true;
	else
		soft_qp_fail(q, q->sq_head, RV_WC_RETRY_EXC_ERR, RV_WC_WR_FLUSH_ERR, false);
}

static int peer_sockaddr(const struct soft_qp *q, struct sockaddr_storage *ss, socklen_t *len)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(ss, 0, sizeof(*ss));
	if (memcmp(q->peer_gid, v4mapped, 12) == 0) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(q->peer_port);
		memcpy(&a->sin_addr, q->peer_gid + 12, 4);
		*len = sizeof(*a);
		return AF_INET;
	}
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(q->peer_port);
	memcpy(&a6->sin6_addr, q->peer_gid, 16);
	*len = sizeof(*a6);
	return AF_INET6;
}

static void fill_cpd(const struct soft_qp *q, struct rv_soft_cpd *p, uint32_t reason)
{
	memset(p, 0, sizeof(*p));
	p->ird = (uint16_t)soft_qp_ird(q);
	p->ord = (uint16_t)(q->ord_max < SOFT_MAX_RD_ATOM ? q->ord_max : SOFT_MAX_RD_ATOM);
	p->caps = q->sc->caps | (q->uc ? RV_SOFT_CAP_UC : 0) | (q->xrc_ini ? RV_SOFT_CAP_XRC_INI : 0) |
		  (q->xrc_tgt ? RV_SOFT_CAP_XRC_TGT : 0);
	p->min_rnr_timer = q->attr.min_rnr_timer;
	p->rnr_retry = q->attr.rnr_retry;
	memcpy(p->gid, q->sc->gid, 16);
	p->port = q->sc->port;
	p->src_qpn = q->qpn;
	p->dst_qpn = q->peer_qpn;
	p->reason = reason;
}

/* auth: NULL, or SOFT_AUTH_EXT_LEN bytes appended after the other blocks (auth.c). */
static void queue_mpa(struct soft_conn *c, bool reply, uint8_t flags, const struct rv_soft_cpd *p,
		      const uint8_t *auth)
{
	uint8_t pd[RV_SOFT_CPD_LEN + SOFT_SHM_EXT_LEN + SOFT_AUTH_EXT_LEN];
	struct rv_mpa_frame f = {.reply = reply, .flags = flags, .rev = 2, .pd_len = RV_SOFT_CPD_LEN, .pd = pd};
	int n;

	rv_wire_cpd_encode(pd, sizeof(pd), p);
	if (!(flags & RV_MPA_FLAG_REJECT))
		f.pd_len = (uint16_t)(f.pd_len + soft_shm_ext_put(c, reply, pd + RV_SOFT_CPD_LEN));
	if (auth) {
		memcpy(pd + f.pd_len, auth, SOFT_AUTH_EXT_LEN);
		f.pd_len = (uint16_t)(f.pd_len + SOFT_AUTH_EXT_LEN);
	}
	n = rv_wire_mpa_encode(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f);
	if (n > 0)
		c->tx_len += (size_t)n;
}

int soft_conn_start(struct soft_qp *q)
{
	struct soft_ctx *sc = q->sc;
	struct sockaddr_storage ss;
	struct rv_soft_cpd p;
	struct soft_conn *c;
	socklen_t sl;
	int fd, err, family = peer_sockaddr(q, &ss, &sl);
	uint8_t ni[SOFT_AUTH_NONCE_LEN];

	if (sc->auth && rv_random_bytes(ni, sizeof(ni)) < 0)
		return rv_err(EIO, "rv_qp_modify", "no random bytes from the kernel for the authentication "
			      "nonce (getrandom(2) and /dev/urandom failed); not connecting");
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		return rv_err(err, "rv_qp_modify", "socket() for the connection to the peer failed: %s",
			      strerror(err));
	}
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		char a[INET6_ADDRSTRLEN] = "?";
		err = errno;
		close(fd);
		inet_ntop(family, family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr
						    : (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr,
			  a, sizeof(a));
		return rv_err(err == ECONNREFUSED ? ECONNREFUSED : EHOSTUNREACH, "rv_qp_modify",
			      "cannot connect to the peer's soft0 listener %s port %u: %s; is its context "
			      "still open, and is the endpoint (GID/LID) current?",
			      a, q->peer_port, strerror(err));
	}
	c = conn_new(sc, fd, CONN_CONNECTING);
	if (!c) {
		close(fd);
		return rv_err(ENOMEM, "rv_qp_modify", "out of memory for a soft0 connection");
	}
	c->active = true;
	c->qp = q;
	q->conn = c;
	fill_cpd(q, &p, RV_SOFT_REJECT_NONE);
	p.rtr = RV_SOFT_RTR_P2P | RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE;
	c->crc = sc->crc_required;
	if (sc->auth) {
		uint8_t blk[SOFT_AUTH_EXT_LEN], ids[SOFT_AUTH_IDS_LEN], mac[SOFT_AUTH_MAC_LEN];
		memcpy(c->auth_ni, ni, sizeof(ni));
		soft_auth_ids(ids, sc->gid, sc->port, q->qpn, q->peer_gid, q->peer_port, q->peer_qpn);
		soft_auth_mac_request(sc, c->auth_ni, ids, mac);
		soft_auth_block_put(blk, false, c->auth_ni, mac);
		queue_mpa(c, false, c->crc ? RV_MPA_FLAG_CRC : 0, &p, blk);
	} else {
		queue_mpa(c, false, c->crc ? RV_MPA_FLAG_CRC : 0, &p, NULL);
	}
	return 0;
}

static const char *reject_reason(uint32_t reason)
{
	static const char *const why[] = {
		[RV_SOFT_REJECT_NONE] = "rejected",
		[RV_SOFT_REJECT_NO_QP] = "the peer has no QP with that number",
		[RV_SOFT_REJECT_PEER] = "the peer QP expects another peer",
		[RV_SOFT_REJECT_BUSY] = "the peer QP is already connected",
		[RV_SOFT_REJECT_STATE] = "the peer QP did not reach RTR in time",
		[RV_SOFT_REJECT_PROTOCOL] = "the MPA request was malformed",
		[RV_SOFT_REJECT_MARKERS] = "the MPA request asked for markers (M bit), which soft0 does not "
					   "support; connect without markers",
		[RV_SOFT_REJECT_REVISION] = "the MPA request was not revision 2 (RFC 6581); soft0 speaks "
					    "revision 2 only",
		[RV_SOFT_REJECT_RTR] = "no RTR message type in common (RFC 6581: soft0 accepts a zero-length "
				       "READ or WRITE)",
		[RV_SOFT_REJECT_AUTH] = "authentication failed: the two contexts do not share a secret (one "
					"has none, or they differ); give both the same rv_context_attr.auth_secret "
					"or RVERBS_SOFT_SECRET_FILE",
		[RV_SOFT_REJECT_QP_TYPE] = "the peer QP is of another type (an RC QP connects only to an RC QP, "
					   "a UC QP only to a UC QP, an XRC initiator only to an XRC target)",
	};
	return reason < sizeof(why) / sizeof(why[0]) && why[reason] ? why[reason] : why[0];
}

static void reject(struct soft_conn *c, uint32_t reason)
{
	struct rv_soft_cpd p;

	if (reason >= RV_SOFT_REJECT_PROTOCOL)
		setup_warn(c->sc, "soft0: rejecting an MPA request for QP 0x%x from QP 0x%x: %s", c->req.dst_qpn,
			   c->req.src_qpn, reject_reason(reason));

	memset(&p, 0, sizeof(p));
	memcpy(p.gid, c->sc->gid, 16);
	p.port = c->sc->port;
	p.src_qpn = c->req.dst_qpn;
	p.dst_qpn = c->req.src_qpn;
	p.reason = reason;
	queue_mpa(c, true, (uint8_t)(RV_MPA_FLAG_REJECT | (c->sc->crc_required ? RV_MPA_FLAG_CRC : 0)), &p, NULL);
	soft_conn_closing(c);
	/* Nothing of ours waits on it: it goes soon, and counts until then. */
	if (c->state == CONN_CLOSING)
		c->deadline = soft_now_ms() + SOFT_REJECT_LINGER_MS;
}

/* What both sides agreed on, recorded in the QP (either side). */
static void qp_negotiated(struct soft_qp *q, const struct rv_soft_cpd *peer)
{
	q->peer_ird = peer->ird;
	q->peer_caps = peer->caps & q->sc->caps &
		       ~(uint32_t)(RV_SOFT_CAP_UC | RV_SOFT_CAP_XRC_INI | RV_SOFT_CAP_XRC_TGT);
	q->peer_min_rnr_timer = peer->min_rnr_timer & 31u;
	q->rnr_since = 0;
	q->ord_user = q->ird_user = 0;
}

static bool peer_matches(const struct soft_qp *q, const struct rv_soft_cpd *r);

/* The peer's QP type (its caps' type bits) fits q's: UC to UC, RC to RC,
 * an XRC initiator to an XRC target and back. */
static bool type_fits(const struct soft_qp *q, uint32_t caps)
{
	return !(caps & RV_SOFT_CAP_UC) == !q->uc && !(caps & RV_SOFT_CAP_XRC_INI) == !q->xrc_tgt &&
	       !(caps & RV_SOFT_CAP_XRC_TGT) == !q->xrc_ini;
}
static int fill_rx(struct soft_conn *c);
static void consume(struct soft_conn *c, size_t n);

/* The connection becomes q's: FPDUs flow. */
static void attach_passive(struct soft_qp *q, struct soft_conn *c)
{
	c->qp = q;
	q->conn = c;
	c->state = CONN_UP;
	set_fpdu_payload(c);
	soft_event_post(q->sc, RV_EVENT_COMM_EST, &q->qp->obj);
	c->active = false;
	c->may_send = false;
	c->deadline = 0;
	qp_negotiated(q, &c->req);
	soft_tx_push(q);
	if (q->conn == c && c->rx_len) {
		soft_rx_process(q, c); /* what followed MAC_I */
		if (q->conn == c)
			soft_tx_push(q);
	}
	if (q->conn == c)
		soft_conn_update_events(c);
}

static void accept_on(struct soft_qp *q, struct soft_conn *c)
{
	struct rv_soft_cpd p;

	if (!type_fits(q, c->req.caps)) {
		/* The expected peer, of the other type: both sides fail. */
		reject(c, RV_SOFT_REJECT_QP_TYPE);
		/* With a secret, an unauthenticated request must not touch the QP. */
		if (!c->sc->auth)
			qp_conn_failed(q, reject_reason(RV_SOFT_REJECT_QP_TYPE));
		return;
	}
	if ((c->req.rtr & RV_SOFT_RTR_P2P) && !(c->req.rtr & (RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE))) {
		reject(c, RV_SOFT_REJECT_RTR);
		return;
	}
	c->crc = (c->req_flags & RV_MPA_FLAG_CRC) || c->sc->crc_required;
	fill_cpd(q, &p, RV_SOFT_REJECT_NONE);
	/* Peer-to-peer mode: pick one RTR message, READ if offered. */
	if (c->req.rtr & RV_SOFT_RTR_P2P)
		p.rtr = RV_SOFT_RTR_P2P | ((c->req.rtr & RV_SOFT_RTR_READ) ? RV_SOFT_RTR_READ : RV_SOFT_RTR_WRITE);
	if (c->sc->auth) {
		/* Answer the challenge; the QP is not ours before MAC_I checks. */
		uint8_t ids[SOFT_AUTH_IDS_LEN], mac[SOFT_AUTH_MAC_LEN], blk[SOFT_AUTH_EXT_LEN];
		if (rv_random_bytes(c->auth_nr, sizeof(c->auth_nr)) < 0) {
			soft_conn_kill(c); /* no challenge without a fresh nonce (logged) */
			return;
		}
		soft_auth_ids(ids, c->req.gid, c->req.port, c->req.src_qpn, c->sc->gid, c->sc->port, q->qpn);
		soft_auth_mac(c->sc, false, c, ids, mac);
		soft_auth_block_put(blk, true, c->auth_nr, mac);
		queue_mpa(c, true, c->crc ? RV_MPA_FLAG_CRC : 0, &p, blk);
		c->state = CONN_WAIT_AUTH;
		c->auth_qpn = q->qpn;
		c->deadline = soft_now_ms() + (c->sc->timeout_ms < SOFT_REQ_TIMEOUT_MS ? c->sc->timeout_ms
											 : SOFT_REQ_TIMEOUT_MS);
		if (!soft_conn_flush(c)) {
			soft_conn_kill(c);
			return;
		}
		soft_conn_update_events(c);
		return;
	}
	queue_mpa(c, true, c->crc ? RV_MPA_FLAG_CRC : 0, &p, NULL);
	attach_passive(q, c);
}

/* Passive, WAIT_AUTH: the initiator's first FPDU must be MAC_I (auth.c). */
static void on_wait_auth(struct soft_conn *c)
{
	uint8_t ids[SOFT_AUTH_IDS_LEN], mac[SOFT_AUTH_MAC_LEN];
	struct soft_qp *q;
	struct rv_fpdu f;
	int r = fill_rx(c), n;

	n = rv_wire_fpdu_decode_crc(c->rx, c->rx_len, &f, c->crc);
	if (n == 0 && r >= 0)
		return;
	if (n <= 0) {
		setup_warn(c->sc, "soft0: connection for QP 0x%x from QP 0x%x: authentication failed: the "
			   "initiator %s before proving the shared secret (it has another secret?)",
			   c->auth_qpn, c->req.src_qpn, r < 0 ? "closed the connection" : "sent a malformed frame");
		soft_conn_kill(c);
		return;
	}
	soft_auth_ids(ids, c->req.gid, c->req.port, c->req.src_qpn, c->sc->gid, c->sc->port, c->auth_qpn);
	soft_auth_mac(c->sc, true, c, ids, mac);
	if (f.opcode != SOFT_OP_AUTH || f.tagged || f.payload_len != SOFT_AUTH_MAC_LEN ||
	    !rv_mem_equal_ct(f.payload, mac, SOFT_AUTH_MAC_LEN)) {
		setup_warn(c->sc, "soft0: connection for QP 0x%x from QP 0x%x: authentication failed: %s; "
			   "closed, nothing was accepted from it", c->auth_qpn, c->req.src_qpn,
			   f.opcode != SOFT_OP_AUTH ? "the initiator sent other frames before its proof"
						    : "the initiator's proof is wrong (another secret, or a replay)");
		soft_conn_kill(c);
		return;
	}
	consume(c, (size_t)n);
	q = soft_ctx_find_qp(c->sc, c->auth_qpn);
	if (!q) {
		soft_conn_kill(c);
		return;
	}
	soft_lock_take(&q->lock);
	{
		uint32_t st = atomic_load(&q->state);
		if ((st == RV_QPS_RTR || st == RV_QPS_RTS) && !q->active && !q->conn && peer_matches(q, &c->req))
			attach_passive(q, c);
		else
			soft_conn_kill(c); /* the QP moved on (connected, reset, destroyed) meanwhile */
	}
	soft_lock_give(&q->lock);
}

static bool peer_matches(const struct soft_qp *q, const struct rv_soft_cpd *r)
{
	return q->have_peer && memcmp(q->peer_gid, r->gid, 16) == 0 && q->peer_port == r->port &&
	       q->peer_qpn == r->src_qpn;
}

/* The requests waiting for QP qpn to reach RTR; *oldest: the first of them. */
static uint32_t pending_for(const struct soft_ctx *sc, uint32_t qpn, struct soft_conn **oldest)
{
	uint32_t n = 0;

	*oldest = NULL;
	for (struct soft_conn *c = sc->conns; c; c = c->next) {
		if (c->state != CONN_PENDING || c->req.dst_qpn != qpn)
			continue;
		if (!*oldest || c->born_ms <= (*oldest)->born_ms)
			*oldest = c;
		n++;
	}
	return n;
}

/* The connections waiting for MAC_I for QP qpn; *oldest: the first of them. */
static uint32_t authenticating_for(const struct soft_ctx *sc, uint32_t qpn, struct soft_conn **oldest)
{
	uint32_t n = 0;

	*oldest = NULL;
	for (struct soft_conn *c = sc->conns; c; c = c->next) {
		if (c->state != CONN_WAIT_AUTH || c->auth_qpn != qpn)
			continue;
		if (!*oldest || c->born_ms <= (*oldest)->born_ms)
			*oldest = c;
		n++;
	}
	return n;
}

/* Passive side: a complete MPA request is in c->req. */
static void handle_request(struct soft_conn *c)
{
	struct soft_qp *q = soft_ctx_find_qp(c->sc, c->req.dst_qpn);
	uint32_t st;

	if (!q) {
		reject(c, RV_SOFT_REJECT_NO_QP);
		return;
	}
	soft_lock_take(&q->lock);
	st = atomic_load(&q->state);
	/* A QP in ERR may be reset and connected again; so may one whose peer
	 * was reset and asks again while this side has not yet seen its old
	 * connection end (a NIC drops the requests meanwhile and the requester
	 * retries): such a request waits for the QP's next RTR too. */
	if (st == RV_QPS_RESET || st == RV_QPS_INIT || st == RV_QPS_ERR ||
	    ((st == RV_QPS_RTR || st == RV_QPS_RTS) && q->conn && !q->active && peer_matches(q, &c->req))) {
		struct soft_conn *oldest;
		uint32_t n = pending_for(c->sc, q->qpn, &oldest);

		/* Without a secret, one request waits per QP, first come. With
		 * one, every request here proved it (MAC_Q): a few may wait, and
		 * the QP's challenge at RTR tells the peer from a copy of its
		 * request; past that, the oldest makes room. */
		if (n && !c->sc->auth) {
			reject(c, RV_SOFT_REJECT_BUSY);
			soft_lock_give(&q->lock);
			return;
		}
		if (n >= SOFT_MAX_PENDING_PER_QP)
			reject(oldest, RV_SOFT_REJECT_BUSY);
		c->state = CONN_PENDING;
		c->deadline = soft_now_ms() + c->sc->timeout_ms;
		soft_conn_update_events(c);
	} else if ((st == RV_QPS_RTR || st == RV_QPS_RTS) && !q->active && peer_matches(q, &c->req)) {
		struct soft_conn *oldest;
		/* Proven requests answering this QP's challenge: a few, the
		 * oldest making room (copies of an old request prove too). */
		if (authenticating_for(c->sc, q->qpn, &oldest) >= SOFT_MAX_PENDING_PER_QP)
			soft_conn_kill(oldest);
		accept_on(q, c);
	} else if (st == RV_QPS_RTR || st == RV_QPS_RTS) {
		reject(c, RV_SOFT_REJECT_PEER);
	} else {
		reject(c, RV_SOFT_REJECT_STATE);
	}
	soft_lock_give(&q->lock);
}

void soft_conn_adopt_pending(struct soft_qp *q)
{
	struct soft_conn *c, *next;
	for (c = q->sc->conns; c; c = next) {
		next = c->next;
		if (c->state != CONN_PENDING || c->req.dst_qpn != q->qpn)
			continue;
		if (!q->conn && peer_matches(q, &c->req))
			accept_on(q, c);
		else
			reject(c, q->conn ? RV_SOFT_REJECT_BUSY : RV_SOFT_REJECT_PEER);
	}
}

/* Not attached to a QP and naming none of ours: what any peer that reaches
 * the listener can make us hold. (A request that names a QP, PENDING or
 * WAIT_AUTH, is bounded per QP instead: SOFT_MAX_PENDING_PER_QP, one without
 * a secret; a burst of real requests for many QPs must all wait.) */
static bool is_unattached(const struct soft_conn *c)
{
	return c->state == CONN_WAIT_REQ || c->state == CONN_CLOSING;
}

/* Which to evict first: what is closing anyway, then connections that sent
 * nothing, then part of a request. */
static int idleness(const struct soft_conn *c)
{
	return c->state == CONN_CLOSING ? 2 : c->rx_len ? 0 : 1;
}

/* Counts the unattached connections, and those from src; true at a bound.
 * Loopback is every local process, so it has no bound of its own: a burst
 * of a local peer's connections (many QPs at once) may take them all. */
static bool full(const struct soft_ctx *sc, const uint8_t src[16], uint32_t *n, uint32_t *from)
{
	*n = *from = 0;
	for (const struct soft_conn *c = sc->conns; c; c = c->next) {
		if (!is_unattached(c))
			continue;
		(*n)++;
		*from += memcmp(c->src, src, 16) == 0;
	}
	return (*from >= SOFT_MAX_UNATTACHED_PER_SOURCE && !soft_addr_is_loopback(src)) || *n >= SOFT_MAX_UNATTACHED;
}

/* Make room for one more unattached connection from src: closes the idlest,
 * oldest one (of that source, when it is the source's bound that is reached). */
static void evict_one(struct soft_ctx *sc, const uint8_t src[16])
{
	struct soft_conn *victim = NULL;
	uint32_t n, from;
	bool per_source;

	if (!full(sc, src, &n, &from))
		return;
	per_source = from >= SOFT_MAX_UNATTACHED_PER_SOURCE && !soft_addr_is_loopback(src);
	for (struct soft_conn *c = sc->conns; c; c = c->next) {
		if (!is_unattached(c) || (per_source && memcmp(c->src, src, 16) != 0))
			continue;
		if (!victim || idleness(c) > idleness(victim) ||
		    (idleness(c) == idleness(victim) && c->born_ms < victim->born_ms))
			victim = c;
	}
	if (!victim)
		return;
	setup_warn(sc, "soft0: %u connections not attached to a QP (%u from this one's address); closing the "
		   "oldest idle one to make room", n, from);
	soft_conn_kill(victim);
}

static void on_wait_req(struct soft_conn *c);

/* Read the requests that have arrived on connections waiting for one, so
 * that what looks idle is idle (a burst of legitimate connects can fill the
 * bound before the batch of events reaches them). */
static void sweep_wait_req(struct soft_ctx *sc)
{
	struct soft_conn *c, *next;

	for (c = sc->conns; c; c = next) {
		next = c->next;
		if (c->state == CONN_WAIT_REQ)
			on_wait_req(c);
	}
}

static void peer_addr16(int fd, uint8_t out[16])
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	memset(out, 0, 16);
	if (getpeername(fd, (struct sockaddr *)&ss, &l) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(out, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	}
}

void soft_conn_accept(struct soft_ctx *sc)
{
	bool swept = false;

	for (;;) {
		struct soft_conn *c;
		int fd = accept4(sc->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		uint8_t src[16];
		uint32_t n, from;

		if (fd < 0)
			return; /* EAGAIN, or a transient error (EMFILE): try at the next event */
		peer_addr16(fd, src);
		if (!swept && full(sc, src, &n, &from)) {
			swept = true; /* once per batch: idle connections cost one recv each */
			sweep_wait_req(sc);
		}
		evict_one(sc, src);
		c = conn_new(sc, fd, CONN_WAIT_REQ);
		if (!c) {
			setup_warn(sc, "soft0: out of memory for an incoming connection; dropped");
			soft_close_socket(fd);
			continue;
		}
		memcpy(c->src, src, 16);
		c->born_ms = soft_now_ms();
		/* Its first byte soon (an initiator sends its request at once),
		 * the whole request within SOFT_REQ_TIMEOUT_MS (on_wait_req). */
		c->deadline = c->born_ms + (sc->timeout_ms < SOFT_FIRST_BYTE_MS ? sc->timeout_ms : SOFT_FIRST_BYTE_MS);
	}
}

/* Read what the socket has into c->rx. 1: got bytes, 0: nothing now, -1: EOF/error. */
static int fill_rx(struct soft_conn *c)
{
	int got = 0;

	while (c->rx_len < SOFT_RXBUF) {
		ssize_t n = recv(c->fd, c->rx + c->rx_len, SOFT_RXBUF - c->rx_len, MSG_DONTWAIT);
		if (n > 0) {
			c->rx_len += (size_t)n;
			got = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return got;
		return got ? 1 : -1; /* report the EOF on the next call, after the data */
	}
	return got;
}

static void consume(struct soft_conn *c, size_t n)
{
	memmove(c->rx, c->rx + n, c->rx_len - n);
	c->rx_len -= n;
}

/* The request's authentication block matches what this context requires,
 * and with a secret its MAC_Q proves it (auth.c) and its nonce is not that
 * of a request we hold (a copy). Otherwise it is rejected: false. */
static bool request_proven(struct soft_conn *c, const struct rv_mpa_frame *f)
{
	uint8_t mac[SOFT_AUTH_MAC_LEN], want[SOFT_AUTH_MAC_LEN], ids[SOFT_AUTH_IDS_LEN];
	int a = soft_auth_block_find(f->pd, f->pd_len, false, c->auth_ni, mac);
	const char *why = NULL;

	if (a < 0)
		why = "malformed authentication block";
	else if (a > 0 && !c->sc->auth)
		why = "the peer authenticates with a shared secret but this context has none "
		      "(rv_context_attr.auth_secret, RVERBS_SOFT_SECRET_FILE)";
	else if (a == 0 && c->sc->auth)
		why = "this context requires authentication but the peer sent none (it has no secret)";
	if (!why && c->sc->auth) {
		soft_auth_ids(ids, c->req.gid, c->req.port, c->req.src_qpn, c->sc->gid, c->sc->port,
			      c->req.dst_qpn);
		soft_auth_mac_request(c->sc, c->auth_ni, ids, want);
		if (!rv_mem_equal_ct(mac, want, sizeof(want)))
			why = "authentication failed: the request's proof does not match our secret (the two "
			      "contexts have different secrets)";
		for (const struct soft_conn *o = c->sc->conns; !why && o; o = o->next)
			if (o != c && (o->state == CONN_PENDING || o->state == CONN_WAIT_AUTH) &&
			    memcmp(o->auth_ni, c->auth_ni, SOFT_AUTH_NONCE_LEN) == 0)
				why = "a copy of a request this context holds (the same nonce)";
	}
	if (!why)
		return true;
	setup_warn(c->sc, "soft0: MPA request for QP 0x%x from QP 0x%x: %s", c->req.dst_qpn, c->req.src_qpn, why);
	reject(c, RV_SOFT_REJECT_AUTH);
	return false;
}

/* The request names a loopback GID but did not come from loopback. */
static bool claims_loopback(const struct soft_conn *c)
{
	return soft_addr_is_loopback(c->req.gid) && !soft_addr_is_loopback(c->src);
}

static void on_wait_req(struct soft_conn *c)
{
	struct rv_mpa_frame f;
	int n;

	if (fill_rx(c) < 0) {
		soft_conn_kill(c);
		return;
	}
	if (c->rx_len) /* it spoke: the whole request may take SOFT_REQ_TIMEOUT_MS */
		c->deadline = c->born_ms + (c->sc->timeout_ms < SOFT_REQ_TIMEOUT_MS ? c->sc->timeout_ms
										    : SOFT_REQ_TIMEOUT_MS);
	n = rv_wire_mpa_decode(c->rx, c->rx_len, &f);
	if (n == 0)
		return;
	if (n < 0 || f.reply || rv_wire_cpd_decode(f.pd, f.pd_len, &c->req) < 0) {
		memset(&c->req, 0, sizeof(c->req));
		reject(c, n > 0 && !f.reply && f.rev != 2 ? RV_SOFT_REJECT_REVISION : RV_SOFT_REJECT_PROTOCOL);
		return;
	}
	if (f.rev != 2) {
		reject(c, RV_SOFT_REJECT_REVISION);
		return;
	}
	if (f.flags & RV_MPA_FLAG_MARKERS) {
		reject(c, RV_SOFT_REJECT_MARKERS);
		return;
	}
	c->req_flags = f.flags;
	if (!request_proven(c, &f))
		return;
	if (claims_loopback(c)) {
		/* A GID on loopback from another host: it could not be connected
		 * back to, and names some local peer it is not. */
		setup_warn(c->sc, "soft0: MPA request for QP 0x%x from QP 0x%x: it names a loopback GID but comes "
			   "from another address; refused", c->req.dst_qpn, c->req.src_qpn);
		reject(c, RV_SOFT_REJECT_PEER);
		return;
	}
	soft_shm_ext_got(c, false, f.pd, f.pd_len);
	consume(c, (size_t)n);
	handle_request(c);
}

static void on_wait_reply(struct soft_qp *q, struct soft_conn *c)
{
	struct rv_mpa_frame f;
	struct rv_soft_cpd p;
	int r = fill_rx(c), n;

	n = rv_wire_mpa_decode(c->rx, c->rx_len, &f);
	if (n == 0 && r >= 0)
		return;
	if (n <= 0) {
		qp_conn_failed(q, r < 0 ? "the peer closed the connection during MPA setup"
					: "the peer's MPA reply is malformed");
		return;
	}
	if (!f.reply || rv_wire_cpd_decode(f.pd, f.pd_len, &p) < 0) {
		qp_conn_failed(q, "the peer's MPA reply is malformed");
		return;
	}
	if (f.flags & RV_MPA_FLAG_REJECT) {
		qp_conn_failed(q, reject_reason(p.reason));
		return;
	}
	if (f.rev != 2) {
		qp_conn_failed(q, "the peer's MPA reply is not revision 2 (RFC 6581)");
		return;
	}
	if (f.flags & RV_MPA_FLAG_MARKERS) {
		qp_conn_failed(q, "the peer's MPA reply asks for markers (M bit); soft0 does not support them");
		return;
	}
	if (p.src_qpn != q->peer_qpn || p.dst_qpn != q->qpn) {
		qp_conn_failed(q, "the MPA reply names other QPs");
		return;
	}
	if (!type_fits(q, p.caps)) {
		qp_conn_failed(q, reject_reason(RV_SOFT_REJECT_QP_TYPE));
		return;
	}
	if (!(p.rtr & RV_SOFT_RTR_P2P) || (p.rtr & RV_SOFT_RTR_SEND) ||
	    !(p.rtr & (RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE)) ||
	    (p.rtr & (RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE)) == (RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE)) {
		qp_conn_failed(q, "the peer's MPA reply chose no single RTR message type among those offered "
				  "(RFC 6581)");
		return;
	}
	c->crc = c->crc || (f.flags & RV_MPA_FLAG_CRC);
	if (q->sc->auth) {
		uint8_t nr[SOFT_AUTH_NONCE_LEN], mac[SOFT_AUTH_MAC_LEN], want[SOFT_AUTH_MAC_LEN], ids[SOFT_AUTH_IDS_LEN];
		uint8_t pay[SOFT_AUTH_MAC_LEN];
		struct rv_fpdu a;
		int k = soft_auth_block_find(f.pd, f.pd_len, true, nr, mac);

		if (k <= 0) {
			qp_conn_failed(q, "authentication failed: the peer did not prove the shared secret (it has "
					  "none, or does not support it)");
			return;
		}
		memcpy(c->auth_nr, nr, sizeof(nr));
		soft_auth_ids(ids, q->sc->gid, q->sc->port, q->qpn, q->peer_gid, q->peer_port, q->peer_qpn);
		soft_auth_mac(q->sc, false, c, ids, want);
		if (!rv_mem_equal_ct(mac, want, sizeof(want))) {
			qp_conn_failed(q, "authentication failed: the peer's proof does not match our secret (the "
					  "two contexts have different secrets)");
			return;
		}
		/* Our proof goes first, before the RTR message (tx.c appends after it). */
		soft_auth_mac(q->sc, true, c, ids, pay);
		memset(&a, 0, sizeof(a));
		a.opcode = SOFT_OP_AUTH;
		a.last = true;
		a.payload = pay;
		a.payload_len = sizeof(pay);
		k = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &a, c->crc);
		if (k > 0)
			c->tx_len += (size_t)k;
	}
	soft_shm_ext_got(c, true, f.pd, f.pd_len);
	consume(c, (size_t)n);
	c->state = CONN_UP;
	set_fpdu_payload(c);
	soft_event_post(q->sc, RV_EVENT_COMM_EST, &q->qp->obj);
	c->deadline = 0;
	c->may_send = true;
	qp_negotiated(q, &p);
	q->need_rtr = true;
	q->rtr_write = !(p.rtr & RV_SOFT_RTR_READ);
	soft_tx_push(q);
	if (q->conn == c && c->rx_len)
		soft_rx_process(q, c);
	if (q->conn == c)
		soft_conn_update_events(c);
}

static void on_up(struct soft_qp *q, struct soft_conn *c, uint32_t events)
{
	if (events & EPOLLOUT) {
		c->tx_blocked = false; /* room again: soft_tx_push may try */
		soft_tx_push(q);
	}
	if (q->conn != c)
		return;
	if ((events & (EPOLLERR | EPOLLHUP)) && c->rx_stalled) {
		/* The stream is gone while a SEND waits for a receive WR. */
		qp_conn_failed(q, "the peer reset the connection");
		return;
	}
	if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && c->ring_rx_on && !c->rx_stalled) {
		/* The ring first: what the peer wrote there came before its EOF. */
		soft_shmring_rx(q, c);
		if (q->conn != c)
			return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		/* Bounded rounds so one busy stream cannot starve the others; one
		 * read each (into rx, or a WRITE's payload into its target, place.c),
		 * processed before the next so that each large WRITE is placed. */
		for (int round = 0; round < 16 && q->conn == c && !c->rx_stalled; round++) {
			ssize_t r = soft_place_read(q, c);
			if (r == -2)
				return; /* placement failed the QP */
			if (r < 0) {
				qp_conn_failed(q, "the peer closed or reset the connection");
				return;
			}
			soft_rx_process(q, c);
			if (r > 0 && q->conn == c)
				q->sc->rx_batch |= c->rx_small_run >= SOFT_RX_PEEK_RUN && !c->place.active ? 1 : 2;
			/* A read that took less than it asked for emptied the socket:
			 * the next one would only say EAGAIN (epoll reports new bytes). */
			if (r == 0 || c->rx_drained)
				break;
		}
		if (q->conn == c)
			soft_tx_push(q);
	}
	if (q->conn == c)
		soft_conn_update_events(c);
}

/* Frames wait in c->tx for room in the socket (the socket said EAGAIN). */
static bool out_blocked(const struct soft_conn *c)
{
	return c->tx_blocked && c->tx_len > c->tx_off && !c->ring_tx_on && !soft_fault_held(c);
}

/*
 * A busy poller's empty poll need not read a stream that can bring it
 * nothing to complete or to take (SOFT_POLL_IDLE_AFTER): no receive WR (a
 * SEND or an immediate could only stall), no SRQ, no user READ or atomic in
 * flight. What can still come is the READ response to our confirmation
 * (completes our SENDs and WRITEs: at most SOFT_POLL_IDLE_EVERY polls later,
 * each one without a system call), a peer's WRITEs (no completion here), a
 * READ request (answered as late) or a TERMINATE; at most SOFT_POLL_IDLE_US
 * later for a thread that polls seldom. A streaming sender made one recv per
 * empty poll that said EAGAIN: at 4 KiB, 5.6 per WRITE. A waiter
 * (rv_cq_wait) always reads. q->lock held.
 */
static bool poll_may_skip(struct soft_qp *q, struct soft_conn *c)
{
	int64_t now;

	if (c->poll_idle < SOFT_POLL_IDLE_AFTER || q->rq_head != q->rq_tail || q->srq || q->ord_user ||
	    q->rx_in_msg || c->place.active)
		return false;
	/* A vDSO clock read (tens of ns) bounds the wait of a thread that
	 * polls seldom; the recv it saves costs a microsecond or more. */
	now = soft_now_us();
	if (++c->poll_skip < SOFT_POLL_IDLE_EVERY && now - c->poll_read_us < SOFT_POLL_IDLE_US)
		return true;
	c->poll_skip = 0;
	c->poll_read_us = now;
	return false;
}

void soft_conn_poll(struct soft_qp *q, int64_t now_us, bool waiter)
{
	struct soft_conn *c = q->conn; /* changes under sc->lock, which the caller holds */
	bool touched = false;

	/* A stream whose peer switched to its ring (shmring.c) carries nothing
	 * but its end: soft_shmring_poller serves it, without a recv (and
	 * without q->lock: a busy poller comes here on every empty poll). */
	if (c && atomic_load_explicit(&c->ring_rx_on, memory_order_relaxed))
		return;
	soft_lock_take(&q->lock);
	c = q->conn;
	if (!c || c->state != CONN_UP || c->rx_stalled || c->ring_rx_on) {
		soft_lock_give(&q->lock);
		return;
	}
	q->polled_at = now_us;
	if (c->tx_held)
		soft_tx_push(q); /* the application polls again: what it held back goes now */
	/* A busy poller also sends what waits for room in the socket (as a
	 * waiter does on POLLOUT, soft_conn_wait_fd): the progress thread's
	 * EPOLLOUT is off while it polls (out_waited, taken back by the
	 * hand-back). Its wake-up per full socket was a third busy thread on
	 * the sender's side (issue #22, tcpbw4). */
	if (!c->polled || (!waiter && !c->out_waited && out_blocked(c))) {
		atomic_fetch_add_explicit(&c->sc->n_polled, !c->polled, memory_order_relaxed);
		c->polled = true;
		c->out_waited = c->out_waited || (!waiter && out_blocked(c));
		soft_conn_update_events(c);
	}
	if (!waiter && poll_may_skip(q, c)) {
		soft_lock_give(&q->lock);
		return;
	}
	if (!waiter && c->out_waited && out_blocked(c)) {
		struct pollfd pf = {.fd = c->fd, .events = POLLOUT};

		/* The room EPOLLOUT would have reported (the same threshold). */
		if (poll(&pf, 1, 0) > 0 && (pf.revents & POLLOUT)) {
			c->tx_blocked = false;
			soft_tx_push(q);
			touched = true;
			if (q->conn != c) {
				soft_lock_give(&q->lock);
				return;
			}
		}
	}
	/* One recv per poll, as a busy-polling TCP application does; more only
	 * while there is more (bounded, like on_up). */
	for (int round = 0; round < 16 && q->conn == c && !c->rx_stalled; round++) {
		ssize_t n = soft_place_read(q, c);
		bool more;

		if (round == 0)
			c->poll_idle = n != 0 ? 0 : c->poll_idle < UINT8_MAX ? c->poll_idle + 1 : UINT8_MAX;
		if (n == 0)
			break;
		touched = true;
		if (n == -2)
			break;
		if (n < 0) {
			qp_conn_failed(q, "the peer closed or reset the connection");
			break;
		}
		/* A read that left room found the socket drained, unless a WRITE is being placed. */
		more = c->place.active || c->place.placed || c->rx_len == SOFT_RXBUF;
		soft_rx_process(q, c);
		if (q->conn != c)
			break;
		if (soft_tx_idle(q) || soft_tx_hold(q)) {
			/* Nothing to send, or only the peer's confirmations'
			 * READ responses, held for the application's answer
			 * (soft_tx_hold, bounded by SOFT_HOLD_US): our own
			 * completions (a READ response confirmed our SENDs)
			 * still go to the CQ now. */
			soft_sq_complete(q);
			soft_qp_check_overflow(q);
		} else {
			soft_tx_push(q);
		}
		if (!more)
			break;
	}
	/* An empty poll changed nothing epoll's interest depends on. */
	if (touched && q->conn == c)
		soft_conn_update_events(c);
	soft_lock_give(&q->lock);
}

void soft_conn_flush_held(struct soft_ctx *sc)
{
	for (struct soft_conn *c = sc->conns; c && atomic_load(&sc->n_held); c = c->next) {
		struct soft_qp *q = c->qp;

		/* Whoever holds q->lock (a posting, polling or waiting
		 * application thread) sends what is held, or leaves it held:
		 * then this thread looks again within a millisecond (n_held). */
		if (!q || soft_lock_try(&q->lock) != 0)
			continue;
		if (q->conn == c && c->tx_held)
			soft_tx_push(q);
		soft_lock_give(&q->lock);
	}
}

uint64_t soft_ctx_handback_timeouts(const rv_context *ctx)
{
	const struct soft_ctx *sc = ctx->drv_ctx;

	return atomic_load_explicit(&sc->handback_timeouts, memory_order_relaxed);
}

uint64_t soft_ctx_wait_recvs(const rv_context *ctx)
{
	const struct soft_ctx *sc = ctx->drv_ctx;

	return atomic_load_explicit(&sc->wait_recvs, memory_order_relaxed);
}

void soft_conn_handback(struct soft_ctx *sc, int64_t now_us, bool all)
{
	for (struct soft_conn *c = sc->conns; c; c = c->next) {
		if (!c->polled)
			continue;
		if (!all && c->qp && now_us - c->qp->polled_at < SOFT_POLL_HANDBACK_US)
			continue;
		/* A thread blocked in rv_cq_wait watches this socket (soft_cq_block). */
		if (c->qp && !c->rx_stalled &&
		    (soft_cq_waited(c->qp->qp->send_cq) || soft_cq_waited(c->qp->qp->recv_cq)))
			continue;
		if (!all) {
			int waiting = 0;

			/* Bytes sat in a stream nobody served for a millisecond. */
			if (c->fd >= 0 && ioctl(c->fd, FIONREAD, &waiting) == 0 && waiting > 0)
				atomic_fetch_add_explicit(&sc->handback_timeouts, 1, memory_order_relaxed);
		}
		/* c->events is the QP's (posting threads update it under q->lock). */
		if (c->qp)
			soft_lock_take(&c->qp->lock);
		soft_conn_unpoll(c);
		/* Level-triggered: bytes that arrived meanwhile are reported at once. */
		soft_conn_update_events(c);
		if (c->qp)
			soft_lock_give(&c->qp->lock);
	}
}

int soft_conn_wait_fd(struct soft_qp *q, bool *out)
{
	struct soft_conn *c;
	int fd = -1;

	*out = false;
	soft_lock_take(&q->lock);
	c = q->conn;
	if (c && c->tx_held)
		soft_tx_push(q); /* not held while this thread sleeps */
	if (c && atomic_load_explicit(&c->rx_sleep, memory_order_relaxed)) {
		/* Another waiter sleeps in its recv: it reads this stream, and
		 * what it completes here writes the channel (this CQ is armed). */
		fd = -2;
	} else if (c && c->state == CONN_UP && !c->rx_stalled && !c->ring_rx_on) {
		/* Frames wait for room (issue #8): this thread sends them when the
		 * socket takes bytes again, not the progress thread, which would
		 * contend with it for q->lock and the socket. */
		bool w = c->tx_blocked && c->tx_len > c->tx_off && !c->ring_tx_on && !soft_fault_held(c);

		if (!c->polled || w != c->out_waited) {
			atomic_fetch_add_explicit(&c->sc->n_polled, !c->polled, memory_order_relaxed);
			c->polled = true;
			c->out_waited = w;
			soft_conn_update_events(c);
		}
		*out = w;
		fd = c->fd;
	} else if (c && c->polled && c->rx_stalled) {
		/* When the receive resumes (run_kicks), the progress thread reads on. */
		soft_conn_unpoll(c);
		soft_conn_update_events(c);
	}
	soft_lock_give(&q->lock);
	return fd;
}

struct soft_conn *soft_conn_sleep_claim(struct soft_qp *q, int timeout_ms, int *fd, uint8_t **buf, size_t *room)
{
	struct soft_conn *c;

	soft_lock_take(&q->lock);
	c = q->conn;
	/* A plain TCP stream the waiter already watches (soft_conn_wait_fd):
	 * no payload being placed straight into memory (its bytes must not
	 * pass through the waiter's buffer), no frames waiting for room (the
	 * waiter watches POLLOUT then), no same-host peer (its ring may take
	 * over), room for a read. */
	if (!c || c->state != CONN_UP || !c->polled || c->rx_stalled || c->ring_rx_on || c->ring ||
	    c->shm_peer || c->place.active || c->place.follow || c->out_waited || c->tx_held ||
	    atomic_load_explicit(&c->rx_sleep, memory_order_relaxed) || c->rx_len >= SOFT_RXBUF)
		goto none;
	if (!c->sleep_buf && !(c->sleep_buf = malloc(SOFT_WAIT_RECV_BUF)))
		goto none;
	if (!c->rx_blocking) {
		/* Once per stream: every other call on it passes MSG_DONTWAIT. */
		int fl = fcntl(c->fd, F_GETFL);

		if (fl < 0 || fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
			goto none;
		c->rx_blocking = true;
	}
	if (c->rcvtimeo_ms != timeout_ms) {
		struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};

		if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
			goto none;
		c->rcvtimeo_ms = timeout_ms;
	}
	*fd = c->fd;
	*room = SOFT_RXBUF - c->rx_len < SOFT_WAIT_RECV_BUF ? SOFT_RXBUF - c->rx_len : SOFT_WAIT_RECV_BUF;
	*buf = c->sleep_buf;
	atomic_store_explicit(&c->rx_sleep, true, memory_order_release);
	soft_lock_give(&q->lock);
	return c;
none:
	soft_lock_give(&q->lock);
	return NULL;
}

void soft_conn_sleep_release(struct soft_conn *c)
{
	atomic_store_explicit(&c->rx_sleep, false, memory_order_release);
}

void soft_conn_slept(struct soft_qp *q, struct soft_conn *c, ssize_t n, size_t asked, int64_t now_us)
{
	bool more = false;

	if (!q) {
		soft_conn_sleep_release(c);
		return;
	}
	soft_lock_take(&q->lock);
	/* Under q->lock: no reader comes between these bytes and the ones after. */
	soft_conn_sleep_release(c);
	if (q->conn != c || c->state != CONN_UP || c->ring_rx_on) {
		/* Killed or closing meanwhile: its bytes are nobody's. */
	} else if (n <= 0) {
		qp_conn_failed(q, "the peer closed or reset the connection");
	} else if ((size_t)n > asked || (size_t)n > SOFT_RXBUF - c->rx_len) {
		/* Cannot happen (only reads grow rx_len, and none came between);
		 * never write past rx. */
		qp_conn_failed(q, "the receive buffer changed under a blocked waiter");
	} else {
		memcpy(c->rx + c->rx_len, c->sleep_buf, (size_t)n);
		c->rx_len += (size_t)n;
		c->rx_drained = (size_t)n < asked;
		c->poll_idle = 0;
		q->polled_at = now_us;
		soft_rx_process(q, c);
		if (q->conn == c) {
			if (soft_tx_idle(q) || soft_tx_hold(q)) {
				soft_sq_complete(q);
				soft_qp_check_overflow(q);
			} else {
				soft_tx_push(q);
			}
		}
		if (q->conn == c) {
			soft_conn_update_events(c);
			more = !c->rx_drained || c->place.active || c->place.placed;
		}
	}
	soft_lock_give(&q->lock);
	if (more)
		soft_conn_poll(q, now_us, true); /* the recv filled what it asked: read on */
}

void soft_conn_wait_out(struct soft_qp *q)
{
	soft_lock_take(&q->lock);
	if (q->conn && q->conn->state == CONN_UP) {
		q->conn->tx_blocked = false; /* POLLOUT: room again */
		soft_tx_push(q);
	}
	soft_lock_give(&q->lock);
}

static void on_closing(struct soft_conn *c, uint32_t events)
{
	if ((events & EPOLLOUT) && !soft_conn_drain_then_shut(c))
		return;
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		c->rx_off = c->rx_len = 0;
		if (fill_rx(c) < 0) {
			soft_conn_kill(c);
			return;
		}
		c->rx_off = c->rx_len = 0;
	}
	soft_conn_update_events(c);
}

void soft_conn_event(struct soft_conn *c, uint32_t events)
{
	struct soft_qp *q = c->qp;

	if (c->state == CONN_DEAD)
		return;
	if (q)
		soft_lock_take(&q->lock);
	switch (c->state) {
	case CONN_CONNECTING: {
		int err = 0;
		socklen_t l = sizeof(err);
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
		if (err) {
			qp_conn_failed(q, strerror(err));
			break;
		}
		c->state = CONN_WAIT_REPLY;
		if (!soft_conn_flush(c)) {
			qp_conn_failed(q, "the connection broke while sending the MPA request");
			break;
		}
		soft_conn_update_events(c);
		break;
	}
	case CONN_WAIT_REPLY:
		if ((events & EPOLLOUT) && !soft_conn_flush(c)) {
			qp_conn_failed(q, "the connection broke while sending the MPA request");
			break;
		}
		if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			on_wait_reply(q, c);
		else
			soft_conn_update_events(c);
		break;
	case CONN_WAIT_REQ:
		on_wait_req(c);
		break;
	case CONN_WAIT_AUTH:
		if ((events & EPOLLOUT) && !soft_conn_flush(c)) {
			soft_conn_kill(c);
			break;
		}
		if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			on_wait_auth(c);
		if (c->state == CONN_WAIT_AUTH)
			soft_conn_update_events(c);
		break;
	case CONN_PENDING:
		if (events & (EPOLLERR | EPOLLHUP))
			soft_conn_kill(c);
		break;
	case CONN_UP:
		on_up(q, c, events);
		break;
	case CONN_CLOSING:
		on_closing(c, events);
		break;
	case CONN_DEAD:
		break;
	}
	if (q)
		soft_lock_give(&q->lock);
}

/* Transmission resumes on connections whose fault delay is over (fault.c
 * holds them: soft_fault_held). Here, not in fault.c: restarting the
 * transmit side is a call up into tx.c, which calls fault.c's hook. */
static void release_fault_holds(struct soft_ctx *sc, int64_t now)
{
	for (struct soft_conn *c = sc->conns; c; c = c->next) {
		struct soft_qp *q = c->qp;
		int64_t hold = c->fault_hold; /* a look without the QP's lock (atomic) */

		if (!hold || now < hold)
			continue;
		if (q) {
			soft_lock_take(&q->lock);
			/* Again under the lock: a frame sent meanwhile may have
			 * extended the hold, which must not be lifted early. */
			hold = c->fault_hold;
			if (hold && now >= hold) {
				c->fault_hold = 0;
				soft_tx_push(q);
			}
			soft_lock_give(&q->lock);
		} else {
			c->fault_hold = 0;
			soft_conn_flush(c);
			soft_conn_update_events(c);
		}
	}
}

void soft_conn_timers(struct soft_ctx *sc, int64_t now)
{
	struct soft_conn *c, *next;

	release_fault_holds(sc, now);
	soft_retry_timers(sc, now);
	/* A passive QP with work queued whose peer never connects: fail the work,
	 * as a verbs device would after its transport retries. */
	for (uint32_t i = 0; i < sc->n_qps; i++) {
		struct soft_qp *q = sc->qps[i];
		uint32_t st = atomic_load(&q->state);

		if (q->conn && st == RV_QPS_RTS) {
			/* Unsignalled WRs left unconfirmed (tx.c, confirm_now): ask now. */
			soft_lock_take(&q->lock);
			if (q->conn && q->sq_tx == q->sq_tail && q->sq_tx != q->sq_covered) {
				q->confirm_late = true;
				soft_tx_push(q);
			}
			soft_lock_give(&q->lock);
		}
		if (q->active || !q->have_peer || q->conn || q->conn_failed ||
		    (st != RV_QPS_RTR && st != RV_QPS_RTS) ||
		    now < q->rtr_at + sc->timeout_ms)
			continue;
		soft_lock_take(&q->lock);
		if (q->sq_head != q->sq_tail && !q->conn)
			qp_conn_failed(q, "the peer never connected; did it call rv_qp_connect (or reach RTR) "
					  "with our endpoint?");
		soft_lock_give(&q->lock);
	}

	for (c = sc->conns; c; c = next) {
		next = c->next;
		if (!c->deadline || now < c->deadline)
			continue;
		switch (c->state) {
		case CONN_CONNECTING:
		case CONN_WAIT_REPLY: {
			struct soft_qp *q = c->qp;
			soft_lock_take(&q->lock);
			qp_conn_failed(q, "connection setup timed out; did the peer call rv_qp_connect "
					  "(or reach RTR) with our endpoint?");
			soft_lock_give(&q->lock);
			break;
		}
		case CONN_WAIT_REQ:
			soft_conn_kill(c);
			break;
		case CONN_WAIT_AUTH:
			setup_warn(sc, "soft0: connection for QP 0x%x from QP 0x%x: no proof of the shared secret in "
				   "time; closed", c->auth_qpn, c->req.src_qpn);
			soft_conn_kill(c);
			break;
		case CONN_PENDING:
			reject(c, RV_SOFT_REJECT_STATE);
			break;
		case CONN_CLOSING:
			soft_conn_kill(c);
			break;
		default:
			break;
		}
	}
}
