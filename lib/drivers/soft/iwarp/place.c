/*
 * Direct placement: the payload of a large RDMA WRITE or SEND FPDU goes from
 * the TCP socket straight into the target memory (the WRITE's STag, the
 * SEND's receive WR), without the copy through the connection's receive
 * buffer (issue #8: "receive places payload straight into the target memory").
 *
 * When rx.c has processed what the buffer holds and its head is the header of
 * a WRITE whose payload is still mostly on its way (at least SOFT_PLACE_MIN
 * bytes), every check rx.c would make happens first: the QP allows remote
 * WRITE, the STag exists, belongs to the QP's PD, grants REMOTE_WRITE and
 * covers [TO, TO + length). Only then is one byte written. Each recv into the
 * target runs under the MR table's read lock after the same checks again
 * (soft_mem_apply), so an MR deregistered mid-FPDU is never written: that
 * FPDU is terminated as a tagged buffer error. A SEND likewise (rx.c,
 * rx_send): queue number and MSN expected, no Immediate Data awaited, a
 * receive WR at hand (taken from the SRQ as the buffered path would), MO
 * where the message stands, the payload within the WR's length, and every
 * SGE it lands in with an lkey of the QP's PD granting LOCAL_WRITE and
 * covering it; each recvmsg into the WR's segments runs under the MR lock
 * after the same SGE checks (soft_sgl_apply), and a failure there gets the
 * buffered path's TERMINATE. Send with Invalidate and UC stay buffered.
 * Anything else (a header that does not decode, a check that fails, UC,
 * another opcode, a small payload) stays on the buffered path, which gives
 * the error its usual TERMINATE.
 *
 * With CRC on, the CRC32c is computed over the bytes as they land and checked
 * when the FPDU's CRC arrives (rx.c, rx_placed): a mismatch then fails the
 * QP with the LLP CRC TERMINATE, as on the buffered path, but the target
 * memory has already received the corrupt payload — what an iWARP NIC that
 * places before the CRC is checked does too (RFC 5044 §8 leaves it to the
 * ULP: the operation fails, the memory's contents are undefined).
 *
 * Runs with q->lock held (and sc->lock, by the progress thread or a poller).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/soft.h"
#include "drivers/soft/wire/crc32c.h"

/* The receive WR a SEND FPDU f would be placed in, when rx_send would accept
 * it and write all of it there; NULL otherwise (the buffered path decides). */
static struct soft_rwqe *send_target(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct soft_rwqe *rw;
	uint64_t cap = 0;
	uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);

	if ((f->opcode != RV_RDMAP_SEND && f->opcode != RV_RDMAP_SEND_SE) || f->qn != RV_DDP_QN_SEND ||
	    f->msn != q->msn_rx[0] || q->rx_imm_pending || (st != RV_QPS_RTR && st != RV_QPS_RTS))
		return NULL;
	if (f->mo != (q->rx_in_msg ? q->rx_bytes : 0))
		return NULL;
	rw = soft_rq_peek(q);
	if (!rw)
		return NULL;
	for (uint32_t i = 0; i < rw->num_sge; i++)
		cap += rw->sge[i].length;
	if ((uint64_t)f->mo + f->payload_len > cap)
		return NULL;
	return rw;
}

static void check_only(const struct iovec *iov, uint32_t n, void *arg)
{
	(void)iov;
	(void)n;
	(void)arg;
}

/* Start placing the WRITE or SEND at the head of rx if it qualifies. */
static bool place_begin(struct soft_qp *q, struct soft_conn *c)
{
	size_t avail = c->rx_len - c->rx_off, pre;
	const uint8_t *p = c->rx + c->rx_off;
	struct rv_fpdu f;
	int total;

	struct soft_rwqe *rw = NULL;

	if (c->place.placed || c->rx_stalled || q->uc || c->ring_rx_on || avail < 2 + RV_DDP_TAGGED_HDR)
		return false;
	total = rv_wire_fpdu_head(p, avail, &f);
	if (total <= 0 || avail >= (size_t)total)
		return false;
	if (f.tagged && f.opcode != RV_RDMAP_WRITE)
		return false; /* untagged: send_target checks the opcode */
	pre = avail - 2 - f.hdr_len;
	if (pre >= f.payload_len || f.payload_len - pre < SOFT_PLACE_MIN)
		return false;
	if (f.tagged) {
		if (!(q->access & RV_ACCESS_REMOTE_WRITE) ||
		    soft_mem_check(q->sc, q->qp, f.stag, RV_ACCESS_REMOTE_WRITE, f.to, f.payload_len) != SOFT_MEM_OK)
			return false; /* rx.c terminates it once it is all there */
	} else {
		rw = send_target(q, &f);
		if (!rw || soft_sgl_apply(q->sc, soft_recv_pd(q), rw->sge, rw->num_sge, f.mo, f.payload_len,
					  RV_ACCESS_LOCAL_WRITE, check_only, NULL) != SOFT_MEM_OK)
			return false; /* rx.c decides, with its TERMINATE if any */
	}
	c->place.crc = c->crc ? rv_crc32c(0, p, avail) : 0; /* length, header, payload so far */
	if (pre && (f.tagged ? soft_mem_write(q->sc, q->qp, f.stag, RV_ACCESS_REMOTE_WRITE, f.to, p + 2 + f.hdr_len,
					      pre)
			     : soft_sgl_write(q->sc, soft_recv_pd(q), rw->sge, rw->num_sge, f.mo, p + 2 + f.hdr_len, pre)) !=
		       SOFT_MEM_OK)
		return false; /* cannot happen just after the check; the buffered path decides */
	c->place.send = !f.tagged;
	c->place.follow_send = !f.tagged;
	c->place.mo = f.mo;
	c->place.hdr_len = (uint8_t)(2 + f.hdr_len);
	c->place.trail = (uint8_t)((size_t)total - 2 - f.hdr_len - f.payload_len);
	c->place.stag = f.stag;
	c->place.to = f.to;
	c->place.len = f.payload_len;
	c->place.done = (uint32_t)pre;
	c->place.active = true;
	c->rx_len = c->rx_off + c->place.hdr_len; /* the payload bytes it held are placed */
	c->may_send = true; /* an FPDU from the initiator arrived (RFC 5044 §7.1.2) */
	return true;
}

struct recv_into {
	int fd;
	size_t len;       /* payload bytes still to come */
	uint8_t *ahead;   /* rx buffer room for what follows the payload, or NULL */
	size_t ahead_len; /* its pad, CRC, the next header and SOFT_PLACE_SLACK bytes */
	bool crc;
	uint32_t sum;
	ssize_t n;        /* bytes received in all (payload + ahead) */
	int err;
};

/*
 * One recvmsg into the payload's place (niov segments, checked and under the
 * MR lock) and, behind it, into the rx buffer for the FPDU's pad and CRC and
 * the next header: the read that would come next anyway, saved (issue #8:
 * one system call per FPDU instead of two). The CRC is summed over the
 * payload bytes that came.
 */
static void recv_payload(struct recv_into *r, const struct iovec *iov, uint32_t niov)
{
	struct iovec v[SOFT_MAX_SGE + 1];
	struct msghdr mh;
	size_t left;

	memcpy(v, iov, niov * sizeof(*iov));
	if (r->ahead) {
		v[niov].iov_base = r->ahead;
		v[niov].iov_len = r->ahead_len;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = v;
	mh.msg_iovlen = niov + (r->ahead ? 1 : 0);
	do
		r->n = recvmsg(r->fd, &mh, MSG_DONTWAIT);
	while (r->n < 0 && errno == EINTR);
	r->err = r->n < 0 ? errno : 0;
	left = r->n > 0 && r->crc ? ((size_t)r->n < r->len ? (size_t)r->n : r->len) : 0;
	for (uint32_t i = 0; i < niov && left; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
		r->sum = rv_crc32c(r->sum, iov[i].iov_base, k);
		left -= k;
	}
}

/* Into a receive WR's segments (soft_sgl_apply: checked, under the lock). */
static void recvmsg_fn(const struct iovec *iov, uint32_t niov, void *arg)
{
	recv_payload(arg, iov, niov);
}

/* Into a WRITE's target (soft_mem_apply: the checked host address, under the lock). */
static void recv_fn(void *p, void *arg)
{
	struct recv_into *r = arg;
	struct iovec iov = {p, r->len};

	recv_payload(r, &iov, 1);
}

static ssize_t place_recv(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_place *pl = &c->place;
	struct recv_into r = {c->fd, pl->len - pl->done, NULL, 0, c->crc, pl->crc, 0, 0};
	/* pad, CRC, the next header and SOFT_PLACE_SLACK more: a small FPDU
	 * after this one (the tail of a 64 KiB WRITE, tx.c chunk_at; a
	 * confirmation's READ request) comes in this read too, with the header
	 * after it. What the slack takes of a following payload is placed from
	 * rx as place_begin does with any payload bytes already there. */
	size_t ahead = (size_t)pl->trail + 2 + (pl->send ? RV_DDP_UNTAGGED_HDR : RV_DDP_TAGGED_HDR) + SOFT_PLACE_SLACK;
	enum soft_mem_err e;

	/* rx holds this FPDU's header only (place_begin): pad, CRC and the next
	 * header go behind it, where the next read would put them. */
	if (c->rx_len == c->rx_off + pl->hdr_len && SOFT_RXBUF - c->rx_len >= ahead) {
		r.ahead = c->rx + c->rx_len;
		r.ahead_len = ahead;
	}

	if (pl->send) {
		/* The receive WR send_target found: still at the head (nothing else
		 * of this stream is processed meanwhile, an SRQ's WR is this QP's). */
		struct soft_rwqe *rw = soft_rq_peek(q);
		uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
		if (!rw || (st != RV_QPS_RTR && st != RV_QPS_RTS))
			return -1; /* cannot happen while the connection is ours */
		e = soft_sgl_apply(q->sc, soft_recv_pd(q), rw->sge, rw->num_sge, pl->mo + pl->done, r.len,
				   RV_ACCESS_LOCAL_WRITE, recvmsg_fn, &r);
		if (e != SOFT_MEM_OK) {
			/* A segment went away under the FPDU: nothing was written. */
			struct rv_fpdu f;
			pl->active = false;
			if (rv_wire_fpdu_head(c->rx + c->rx_off, pl->hdr_len, &f) <= 0)
				memset(&f, 0, sizeof(f));
			soft_rx_send_error(q, &f);
			return -2;
		}
	} else {
		e = soft_mem_apply(q->sc, q->qp, pl->stag, RV_ACCESS_REMOTE_WRITE, pl->to + pl->done, r.len, recv_fn,
				   &r);
	}
	if (e != SOFT_MEM_OK) {
		/* The MR went away (or changed) under the FPDU: nothing was written. */
		struct rv_fpdu f;
		pl->active = false;
		if (rv_wire_fpdu_head(c->rx + c->rx_off, pl->hdr_len, &f) <= 0)
			memset(&f, 0, sizeof(f));
		soft_rx_tagged_error(q, &f, e);
		return -2;
	}
	if (r.n < 0)
		return r.err == EAGAIN || r.err == EWOULDBLOCK ? 0 : -1;
	if (r.n == 0)
		return -1;
	c->rx_drained = (size_t)r.n < r.len + r.ahead_len;
	pl->crc = r.sum;
	if ((size_t)r.n > r.len) {
		c->rx_len += (size_t)r.n - r.len; /* read ahead: the payload is complete */
		pl->done = pl->len;
	} else {
		pl->done += (uint32_t)r.n;
	}
	if (pl->done == pl->len) {
		pl->active = false;
		pl->placed = true;
		pl->follow = SOFT_PLACE_FOLLOW; /* the next WRITE is likely placed too: read up to its header */
	}
	return r.n;
}

ssize_t soft_place_read(struct soft_qp *q, struct soft_conn *c)
{
	size_t room;
	ssize_t n;

	/* A waiter sleeps in recv on this socket (soft_conn_sleep_claim): the
	 * bytes are its, in order; read nothing beside it. */
	if (atomic_load_explicit(&c->rx_sleep, memory_order_acquire))
		return 0;
	if (c->place.active || place_begin(q, c))
		return place_recv(q, c);
	room = SOFT_RXBUF - c->rx_len;
	if (c->place.follow) {
		/* Large WRITEs are coming: read to the end of the FPDU at the head
		 * and the next header (tagged, the shortest), no further, so that
		 * the next payload can go straight to its target. */
		size_t have = c->rx_len - c->rx_off, end = 0;
		size_t look = 2 + (c->place.follow_send ? RV_DDP_UNTAGGED_HDR : RV_DDP_TAGGED_HDR);

		if (c->place.placed)
			end = (size_t)c->place.hdr_len + c->place.trail;
		else if (have >= 2)
			/* The FPDU at the head ends where its MPA length says, whatever
			 * its kind: a READ request (every SOFT_CONFIRM_EVERY messages)
			 * whose untagged header is not all here is read to its end too,
			 * not with a full-buffer read that would pull the next payloads
			 * through the buffer (issue #8: a fifth of a 64 KiB WRITE stream
			 * was copied twice). */
			end = rv_wire_fpdu_len((size_t)c->rx[c->rx_off] << 8 | c->rx[c->rx_off + 1]);
		if (end + look > have && end + look - have < room)
			room = end + look - have;
	}
	if (room == 0)
		return 0;
	do
		n = recv(c->fd, c->rx + c->rx_len, room, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	if (n == 0)
		return -1;
	c->rx_drained = (size_t)n < room;
	c->rx_len += (size_t)n;
	return n;
}
