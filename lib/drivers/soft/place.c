/*
 * Direct placement: the payload of a large RDMA WRITE FPDU goes from the TCP
 * socket straight into the target memory, without the copy through the
 * connection's receive buffer (issue #8: "receive places payload straight
 * into the target memory").
 *
 * When rx.c has processed what the buffer holds and its head is the header of
 * a WRITE whose payload is still mostly on its way (at least SOFT_PLACE_MIN
 * bytes), every check rx.c would make happens first: the QP allows remote
 * WRITE, the STag exists, belongs to the QP's PD, grants REMOTE_WRITE and
 * covers [TO, TO + length). Only then is one byte written. Each recv into the
 * target runs under the MR table's read lock after the same checks again
 * (soft_mem_apply), so an MR deregistered mid-FPDU is never written: that
 * FPDU is terminated as a tagged buffer error. Anything else (a header that
 * does not decode, a check that fails, UC, another opcode, a small payload)
 * stays on the buffered path, which gives the error its usual TERMINATE.
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

#include "crc32c.h"
#include "soft.h"

/* Start placing the WRITE at the head of rx if it qualifies. */
static bool place_begin(struct soft_qp *q, struct soft_conn *c)
{
	size_t avail = c->rx_len - c->rx_off, pre;
	const uint8_t *p = c->rx + c->rx_off;
	struct rv_fpdu f;
	int total;

	if (c->place.placed || c->rx_stalled || q->uc || avail < 2 + RV_DDP_TAGGED_HDR)
		return false;
	total = rv_wire_fpdu_head(p, avail, &f);
	if (total <= 0 || !f.tagged || f.opcode != RV_RDMAP_WRITE || avail >= (size_t)total)
		return false;
	pre = avail - 2 - f.hdr_len;
	if (pre >= f.payload_len || f.payload_len - pre < SOFT_PLACE_MIN)
		return false;
	if (!(q->access & RV_ACCESS_REMOTE_WRITE) ||
	    soft_mem_check(q->sc, q->qp, f.stag, RV_ACCESS_REMOTE_WRITE, f.to, f.payload_len) != SOFT_MEM_OK)
		return false; /* rx.c terminates it once it is all there */
	c->place.crc = c->crc ? rv_crc32c(0, p, avail) : 0; /* length, header, payload so far */
	if (pre && soft_mem_write(q->sc, q->qp, f.stag, RV_ACCESS_REMOTE_WRITE, f.to, p + 2 + f.hdr_len, pre) !=
		   SOFT_MEM_OK)
		return false; /* cannot happen just after the check; the buffered path decides */
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
	size_t len;
	bool crc;
	uint32_t sum;
	ssize_t n;
	int err;
};

/* Under the MR lock, on the checked host address: receive, and sum what came. */
static void recv_fn(void *p, void *arg)
{
	struct recv_into *r = arg;

	do
		r->n = recv(r->fd, p, r->len, MSG_DONTWAIT);
	while (r->n < 0 && errno == EINTR);
	r->err = r->n < 0 ? errno : 0;
	if (r->n > 0 && r->crc)
		r->sum = rv_crc32c(r->sum, p, (size_t)r->n);
}

static ssize_t place_recv(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_place *pl = &c->place;
	struct recv_into r = {c->fd, pl->len - pl->done, c->crc, pl->crc, 0, 0};
	enum soft_mem_err e;

	e = soft_mem_apply(q->sc, q->qp, pl->stag, RV_ACCESS_REMOTE_WRITE, pl->to + pl->done, r.len, recv_fn, &r);
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
	pl->crc = r.sum;
	pl->done += (uint32_t)r.n;
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

	if (c->place.active || place_begin(q, c))
		return place_recv(q, c);
	room = SOFT_RXBUF - c->rx_len;
	if (c->place.follow) {
		/* Large WRITEs are coming: read to the end of the FPDU at the head
		 * and the next header (tagged, the shortest), no further, so that
		 * the next payload can go straight to its target. */
		size_t have = c->rx_len - c->rx_off, end = 0;
		struct rv_fpdu f;
		int total;

		if (c->place.placed)
			end = (size_t)c->place.hdr_len + c->place.trail;
		else if (have >= 2 + RV_DDP_TAGGED_HDR && (total = rv_wire_fpdu_head(c->rx + c->rx_off, have, &f)) > 0)
			end = (size_t)total;
		else if (have < 2 + RV_DDP_TAGGED_HDR)
			end = 0;
		else
			end = SIZE_MAX; /* an untagged header, not all here: read as usual */
		if (end != SIZE_MAX && end + 2 + RV_DDP_TAGGED_HDR > have && end + 2 + RV_DDP_TAGGED_HDR - have < room)
			room = end + 2 + RV_DDP_TAGGED_HDR - have;
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
	c->rx_len += (size_t)n;
	return n;
}
