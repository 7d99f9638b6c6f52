/*
 * The receive side of a software QP: verifies each FPDU, checks it, and
 * places its payload.
 *
 * Every check happens before a byte is written: the STag must exist, belong
 * to the QP's PD, grant the access (and the QP's qp_access_flags must allow
 * it) and cover [TO, TO + length) without 64-bit overflow. A violation sends
 * a TERMINATE (RFC 5040 §4.8 with the layer/type/code of RFC 5040 §7 and
 * RFC 5041 §7) and moves this QP to ERR; a remote WRITE/READ target gets no
 * completion for it, as on iWARP. A TERMINATE from the peer completes the WR
 * it names with the matching verbs status and flushes the rest.
 *
 * A SEND that finds no receive WR stalls the stream (it stays at the head of
 * the rx buffer and the socket is no longer read) until one is posted; this
 * is how the device behaves with rnr_retry 7 (infinite), the connection
 * helper's default.
 *
 * UC (as an InfiniBand UC responder, which has no response channel to NAK
 * on): a SEND (or WRITE with immediate) that finds no receive WR, and a WRITE
 * with a bad key, out of bounds or without access, are dropped silently
 * (counted in q->uc_count, memory untouched), with the rest of their message;
 * the QP stays in RTS and no TERMINATE is sent. A SEND longer than its receive
 * WR completes that WR with RV_WC_LOC_LEN_ERR and the rest of it is dropped.
 * What breaks the stream itself (CRC, framing, MSN/MO out of order, an opcode
 * UC never sends) still sends a TERMINATE and moves the QP to ERR: TCP cannot
 * resynchronise past a bad frame.
 *
 * Runs in the progress thread with sc->lock and q->lock held. Never blocks.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/soft.h"
#include "drivers/soft/wire/crc32c.h"

static bool before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* This side found an error in the peer's stream: TERMINATE, then ERR. */
static int responder_error(struct soft_qp *q, const struct rv_fpdu *f, uint8_t layer, uint8_t etype,
			   uint8_t ecode, uint32_t rq_status)
{
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: terminating the connection to QP 0x%x (layer %u, type %u, "
	       "code 0x%02x); the QP is in the error state", q->qpn, q->peer_qpn, layer, etype, ecode);
	soft_tx_terminate(q, layer, etype, ecode, f);
	soft_qp_fail(q, q->sq_head, RV_WC_WR_FLUSH_ERR, rq_status, true);
	soft_tx_push(q);
	soft_conn_detach(q, true);
	return -1;
}

/* An untagged DDP buffer error (RFC 5041 §7.2): TERMINATE, QP to error. */
static int untagged_error(struct soft_qp *q, const struct rv_fpdu *f, uint8_t ecode)
{
	return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_UNTAGGED, ecode, RV_WC_WR_FLUSH_ERR);
}

/* XRC target: a message of DDP queue 0 names the XRC SRQ that receives it
 * in its queue number (RV_SOFT_QN_XRC | srqn), which becomes q->srq: its
 * receive WRs, its PD and its CQ serve the message (completion.c,
 * soft_recv_cq, soft_recv_pd). The SRQ must exist and belong to q's XRC
 * domain, and a message under way (a SEND's later FPDUs, its Immediate
 * Data) must name the one it began with. Otherwise the responder refuses
 * the message as the IB spec's invalid XRC SRQ: TERMINATE (DDP untagged,
 * invalid QN), which the initiator completes RV_WC_REM_INV_REQ_ERR
 * (term_status). The receive path holds sc->lock, under which XRC SRQs
 * come and go (srq.c). 0: selected; -1: the QP failed. */
static int xrc_select(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct soft_srq *s = NULL;

	if ((f->qn & RV_SOFT_QN_XRC_MASK) == RV_SOFT_QN_XRC)
		s = soft_xrc_srq_find(q->sc, f->qn & 0xffffff);
	if (!s || s->srq->xrcd != q->xrcd || ((q->rx_in_msg || q->rx_imm_pending) && s != q->srq)) {
		rv_log(RV_LOG_WARN, "soft0: XRC target QP 0x%x: queue number 0x%x names %s", q->qpn, f->qn,
		       (f->qn & RV_SOFT_QN_XRC_MASK) != RV_SOFT_QN_XRC ? "no XRC SRQ"
		       : !s ? "an XRC SRQ that does not exist"
		       : s->srq->xrcd != q->xrcd ? "an XRC SRQ of another XRC domain"
		       : "another XRC SRQ than the message under way");
		return untagged_error(q, f, RV_TERM_DDP_U_QN);
	}
	q->srq = s;
	return 0;
}

/* The checks every untagged message starts with: its queue number and the
 * next message sequence number of that queue. 0 when both hold; otherwise the
 * connection is terminated and -1 returned. */
static int untagged_check_slow(struct soft_qp *q, const struct rv_fpdu *f, uint32_t qn, uint32_t msn)
{
	if (qn == RV_DDP_QN_SEND && q->xrc_tgt) {
		if (xrc_select(q, f) < 0)
			return -1;
	} else if (f->qn != qn || (qn == RV_DDP_QN_SEND && q->xrc_ini)) {
		/* An XRC initiator has no receive queue: nothing may come on queue 0. */
		return untagged_error(q, f, RV_TERM_DDP_U_QN);
	}
	if (f->msn != msn)
		return untagged_error(q, f, RV_TERM_DDP_U_MSN);
	return 0;
}

/* The common case inline (no XRC, queue and MSN as expected: exactly when
 * the full check above returns 0 for a QP without XRC), the rest out of line. */
static inline int untagged_check(struct soft_qp *q, const struct rv_fpdu *f, uint32_t qn, uint32_t msn)
{
	if (RV_LIKELY(!q->xrc_tgt && !q->xrc_ini && f->qn == qn && f->msn == msn))
		return 0;
	return untagged_check_slow(q, f, qn, msn);
}

/* A READ or atomic request its target refuses (RFC 5040 §7.2: RDMAP remote
 * protection error, the code naming which check failed). */
static int remote_prot_error(struct soft_qp *q, const struct rv_fpdu *f, enum soft_mem_err e)
{
	static const uint8_t code[] = {
		[SOFT_MEM_NO_KEY] = RV_TERM_RDMAP_INV_STAG,
		[SOFT_MEM_PD] = RV_TERM_RDMAP_STREAM,
		[SOFT_MEM_ACCESS] = RV_TERM_RDMAP_ACCESS,
		[SOFT_MEM_BOUNDS] = RV_TERM_RDMAP_BOUNDS,
		/* The target memory was unmapped after registration (mr.c). */
		[SOFT_MEM_FAULT] = RV_TERM_RDMAP_ACCESS,
	};

	return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_PROT,
			       (size_t)e < sizeof(code) / sizeof(code[0]) ? code[e] : RV_TERM_RDMAP_ACCESS,
			       RV_WC_WR_FLUSH_ERR);
}

/* This side, as requester, got a response it cannot accept. */
static int requester_error(struct soft_qp *q, const struct rv_fpdu *f, uint32_t fail, uint32_t status,
			   uint8_t ecode)
{
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: bad READ response from QP 0x%x; terminating", q->qpn, q->peer_qpn);
	soft_tx_terminate(q, RV_TERM_DDP, RV_TERM_DDP_TAGGED, ecode, f);
	soft_qp_fail(q, fail, status, RV_WC_WR_FLUSH_ERR, true);
	soft_tx_push(q);
	soft_conn_detach(q, true);
	return -1;
}

static int tagged_error(struct soft_qp *q, const struct rv_fpdu *f, enum soft_mem_err e)
{
	switch (e) {
	case SOFT_MEM_NO_KEY:
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_TAGGED, RV_TERM_DDP_T_INV_STAG,
				       RV_WC_WR_FLUSH_ERR);
	case SOFT_MEM_PD:
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_TAGGED, RV_TERM_DDP_T_STREAM,
				       RV_WC_WR_FLUSH_ERR);
	case SOFT_MEM_BOUNDS:
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_TAGGED, RV_TERM_DDP_T_BOUNDS,
				       RV_WC_WR_FLUSH_ERR);
	case SOFT_MEM_ACCESS:
	default:
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_PROT, RV_TERM_RDMAP_ACCESS,
				       RV_WC_WR_FLUSH_ERR);
	}
}

void soft_rx_tagged_error(struct soft_qp *q, const struct rv_fpdu *f, enum soft_mem_err e)
{
	tagged_error(q, f, e);
}

void soft_rx_send_error(struct soft_qp *q, const struct rv_fpdu *f)
{
	responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_LOCAL_CATA, RV_TERM_RDMAP_UNSPEC, RV_WC_LOC_PROT_ERR);
}

/* UC: this WRITE FPDU (and the rest of its message) goes nowhere. */
static int uc_write_drop(struct soft_qp *q, const struct rv_fpdu *f, bool count)
{
	if (count)
		q->uc_count[SOFT_UC_DROP_WRITE]++;
	q->uc_drop_write = !f->last;
	if (f->last)
		q->uc_write_dropped = true; /* a following Immediate Data belongs to it */
	return 0;
}

/* UC: a WRITE the target refuses (bad key, bounds, access) is dropped, as the
 * IB spec has UC do; but a peer that keeps guessing keys is cut off after
 * SOFT_UC_BAD_KEYS refusals on the QP (TERMINATE, QP to error, an async
 * event), so a brute force of the 32-bit key space gets that many tries. */
static int uc_write_refused(struct soft_qp *q, const struct rv_fpdu *f, enum soft_mem_err e)
{
	if (++q->uc_bad_keys < SOFT_UC_BAD_KEYS)
		return uc_write_drop(q, f, true);
	q->uc_count[SOFT_UC_DROP_WRITE]++;
	rv_log(RV_LOG_WARN, "soft0: UC QP 0x%x: %u WRITEs from QP 0x%x named a key, range or access it may not "
	       "use; taking it for a key search and closing the connection", q->qpn, SOFT_UC_BAD_KEYS, q->peer_qpn);
	return tagged_error(q, f, e);
}

static int rx_write(struct soft_qp *q, const struct rv_fpdu *f)
{
	enum soft_mem_err e;

	/* The length of a WRITE message: the byte_len of a WRITE with immediate. */
	q->rx_write_acc += f->payload_len;
	if (f->last) {
		q->last_write_len = q->rx_write_acc;
		q->rx_write_acc = 0;
	}
	/* A zero-length WRITE touches no memory (RFC 6581 uses one as RTR); with
	 * STag 0 and the RNR tag it is the peer's receiver-not-ready notice. */
	if (q->uc && q->uc_drop_write)
		return uc_write_drop(q, f, false);
	if (f->payload_len == 0) {
		if (f->last)
			q->uc_write_dropped = false;
		if (f->stag == 0 && (f->to & SOFT_RNR_NOTICE_MASK) == SOFT_RNR_NOTICE &&
		    (q->peer_caps & RV_SOFT_CAP_RNR))
			soft_retry_rnr_notice(q, (uint32_t)f->to);
		return 0;
	}
	if (!(q->access & RV_ACCESS_REMOTE_WRITE))
		return q->uc ? uc_write_refused(q, f, SOFT_MEM_ACCESS)
			     : responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_PROT, RV_TERM_RDMAP_ACCESS,
					       RV_WC_WR_FLUSH_ERR);
	e = soft_mem_write(q->sc, q->qp, f->stag, RV_ACCESS_REMOTE_WRITE, f->to, f->payload,
			   f->payload_len);
	if (e != SOFT_MEM_OK)
		return q->uc ? uc_write_refused(q, f, e) : tagged_error(q, f, e);
	if (f->last)
		q->uc_write_dropped = false;
	if (q->conn && q->conn->grant_give)
		soft_grant_offer(q, q->conn, f->stag); /* the next ones by one copy (grant.c) */
	return 0;
}

/* The source segments (address, length) a by-reference FPDU (shm.c) names, as
 * iovecs of the sender's process; returns their total length. */
static uint64_t ref_iov(const struct rv_fpdu *f, struct iovec *iov, uint32_t n)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t a;
		uint32_t l;
		memcpy(&a, f->payload + i * SOFT_SHM_REF_LEN, 8);
		memcpy(&l, f->payload + i * SOFT_SHM_REF_LEN + 8, 4);
		iov[i].iov_base = (void *)(uintptr_t)a;
		iov[i].iov_len = l;
		total += l;
	}
	return total;
}

/* A WRITE by reference (shm.c): pull the named source segments of the peer's
 * process into the target, after the same checks as rx_write. */
static int rx_write_ref(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct iovec iov[SOFT_MAX_SGE];
	uint32_t n = f->payload_len / SOFT_SHM_REF_LEN;
	uint64_t total;
	enum soft_mem_err e;

	if (!q->conn || !q->conn->shm_pull || f->payload_len % SOFT_SHM_REF_LEN || n > SOFT_MAX_SGE)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
				       RV_WC_WR_FLUSH_ERR);
	total = ref_iov(f, iov, n);
	if (total == 0)
		return 0;
	if (!(q->access & RV_ACCESS_REMOTE_WRITE))
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_PROT, RV_TERM_RDMAP_ACCESS,
				       RV_WC_WR_FLUSH_ERR);
	e = soft_shm_peer_alive(q->conn) ? soft_mem_pull(q->sc, q->qp, f->stag, RV_ACCESS_REMOTE_WRITE, f->to, total,
							 (int)q->conn->shm_pid, iov, n)
					 : SOFT_MEM_PEER;
	if (e == SOFT_MEM_PEER)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_UNSPEC,
				       RV_WC_WR_FLUSH_ERR);
	if (e == SOFT_MEM_OK && q->conn->grant_give)
		soft_grant_offer(q, q->conn, f->stag);
	return e == SOFT_MEM_OK ? 0 : tagged_error(q, f, e);
}

/* A SEND by reference (shm.c): the whole message, pulled into the receive WR
 * at the head of the queue, with the same checks and outcomes as rx_send. */
static int rx_send_ref(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct iovec iov[SOFT_MAX_SGE];
	uint32_t n = f->payload_len / SOFT_SHM_REF_LEN;
	uint64_t total, cap = 0;
	struct soft_rwqe *rw;
	enum soft_mem_err e;
	rv_wc wc;

	if (!q->conn || !q->conn->shm_pull || f->payload_len % SOFT_SHM_REF_LEN || n > SOFT_MAX_SGE || !f->last)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
				       RV_WC_WR_FLUSH_ERR);
	if (untagged_check(q, f, RV_DDP_QN_SEND, q->msn_rx[0]))
		return -1;
	if (q->rx_in_msg || f->mo != 0)
		return untagged_error(q, f, RV_TERM_DDP_U_MO);
	if (!soft_rq_peek(q))
		return 1; /* no receive WR yet: stall, as rx_send */
	total = ref_iov(f, iov, n);
	rw = soft_rq_peek(q);
	for (uint32_t i = 0; i < rw->num_sge; i++)
		cap += rw->sge[i].length;
	q->rx_in_msg = true; /* an error below completes this receive WR */
	q->rx_bytes = 0;
	if (total > cap)
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_UNTAGGED, RV_TERM_DDP_U_TOO_LONG,
				       RV_WC_LOC_LEN_ERR);
	e = soft_shm_peer_alive(q->conn)
		    ? soft_sgl_pull(q->sc, soft_recv_pd(q), rw->sge, rw->num_sge, total, (int)q->conn->shm_pid, iov, n)
		    : SOFT_MEM_PEER;
	if (e == SOFT_MEM_PEER)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_UNSPEC,
				       RV_WC_WR_FLUSH_ERR);
	if (e != SOFT_MEM_OK)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_LOCAL_CATA, RV_TERM_RDMAP_UNSPEC,
				       RV_WC_LOC_PROT_ERR);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = rw->wr_id;
	wc.status = RV_WC_SUCCESS;
	wc.opcode = RV_WC_RECV;
	wc.byte_len = (uint32_t)total;
	wc.qp_num = q->qpn;
	wc.src_qp = q->peer_qpn;
	if (!soft_cq_push(soft_recv_cq(q), &wc))
		q->cq_overflow = true;
	soft_rq_consume(q);
	q->rx_in_msg = false;
	q->msn_rx[0]++;
	return 0;
}

static int rx_read_req(struct soft_qp *q, const struct rv_fpdu *f)
{
	const struct rv_read_req *r = &f->rreq;
	enum soft_mem_err e = SOFT_MEM_OK;

	if (untagged_check(q, f, RV_DDP_QN_READ, q->msn_rx[1]))
		return -1;
	if (!f->last || f->mo != 0)
		return untagged_error(q, f, RV_TERM_DDP_U_MO);
	/* A QP that accepts no READs (IRD 0) treats one as an unexpected opcode;
	 * beyond the IRD it advertised, no buffer (RFC 6581). A zero-length READ
	 * (RTR, confirmation) touches no memory and is always answered. */
	if (r->size && (soft_qp_ird(q) == 0 || q->uc))
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
				       RV_WC_WR_FLUSH_ERR);
	if (q->ird_tail - q->ird_head >= SOFT_IRD_CAP || (r->size && q->ird_user >= soft_qp_ird(q)))
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_UNTAGGED, RV_TERM_DDP_U_NO_BUF,
				       RV_WC_WR_FLUSH_ERR);
	if (r->size) {
		if (!(q->access & RV_ACCESS_REMOTE_READ))
			e = SOFT_MEM_ACCESS;
		else
			e = soft_mem_check(q->sc, q->qp, r->src_stag, RV_ACCESS_REMOTE_READ, r->src_to,
					   r->size);
	}
	if (e != SOFT_MEM_OK)
		return remote_prot_error(q, f, e);
	q->msn_rx[1]++;
	q->ird[q->ird_tail % SOFT_IRD_CAP].req = *r;
	q->ird[q->ird_tail % SOFT_IRD_CAP].sent = 0;
	q->ird[q->ird_tail % SOFT_IRD_CAP].counted = r->size != 0;
	q->ird[q->ird_tail % SOFT_IRD_CAP].atomic = false;
	q->ird_user += r->size != 0;
	q->ird_tail++;
	if (r->size && q->conn && q->conn->grant_give)
		soft_grant_offer(q, q->conn, r->src_stag); /* the next READs by one copy (grant.c) */
	return 0;
}

/* The oldest user READ in flight, else the oldest WR. */
static uint32_t first_read(const struct soft_qp *q)
{
	for (uint32_t i = q->ord_head; i != q->ord_tail; i++)
		if (q->ord[i % SOFT_ORD_CAP].user)
			return q->ord[i % SOFT_ORD_CAP].wqe;
	return q->sq_head;
}

/* A response's sink (a READ's SGEs, an atomic's 8 bytes) was deregistered or
 * unmapped since the post: the WR fails, the QP with it. */
static int local_sink_gone(struct soft_qp *q, const struct soft_ord *o, const char *what)
{
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: %s's local buffer is no longer registered", q->qpn, what);
	soft_qp_fail(q, o->wqe, RV_WC_LOC_PROT_ERR, RV_WC_WR_FLUSH_ERR, false);
	soft_conn_detach(q, false);
	return -1;
}

/* The oldest READ or atomic in flight got its whole response. */
static void response_done(struct soft_qp *q, const struct soft_ord *o)
{
	if (before(q->sq_confirmed, o->upto))
		q->sq_confirmed = o->upto;
	q->ord_head++;
	soft_sq_complete(q);
}

static int rx_read_resp(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct soft_ord *o;

	if (q->ord_head == q->ord_tail)
		return requester_error(q, f, q->sq_head, RV_WC_BAD_RESP_ERR, RV_TERM_DDP_T_INV_STAG);
	o = &q->ord[q->ord_head % SOFT_ORD_CAP];
	if (o->atomic || f->stag != o->sink_stag)
		return requester_error(q, f, first_read(q), RV_WC_BAD_RESP_ERR, RV_TERM_DDP_T_INV_STAG);
	if (f->to != o->sink_to + o->got || f->payload_len > o->len - o->got ||
	    (f->last && o->got + f->payload_len != o->len))
		return requester_error(q, f, first_read(q), RV_WC_BAD_RESP_ERR, RV_TERM_DDP_T_BOUNDS);
	if (o->user && f->payload_len) {
		struct soft_swqe *w = &q->sq[o->wqe & q->sq_mask];
		if (soft_sgl_write(q->sc, q->qp->pd, w->sge, w->num_sge, o->got, f->payload, f->payload_len) !=
		    SOFT_MEM_OK)
			return local_sink_gone(q, o, "a READ");
	}
	o->got += f->payload_len;
	if (f->last) {
		if (o->user) {
			q->sq[o->wqe & q->sq_mask].done = true;
			q->ord_user--;
		}
		response_done(q, o);
	}
	return 0;
}

/* UC: the rest of a SEND message that is being dropped. */
static int uc_send_drop(struct soft_qp *q, const struct rv_fpdu *f)
{
	q->uc_drop_send = !f->last;
	if (f->last) {
		q->msn_rx[0]++;
		/* Its Immediate Data message (ext.c) is dropped too. */
		q->uc_drop_imm = f->inv_stag == RV_SOFT_SEND_IMM_FOLLOWS && (q->peer_caps & RV_SOFT_CAP_IMM);
	}
	return 0;
}

/* UC: a receive WR fails (the QP stays up) and its message is dropped. */
static int uc_recv_fail(struct soft_qp *q, struct soft_rwqe *rw, const struct rv_fpdu *f, uint32_t status)
{
	rv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = rw->wr_id;
	wc.status = status;
	wc.opcode = RV_WC_RECV;
	wc.qp_num = q->qpn;
	wc.src_qp = q->peer_qpn;
	if (!soft_cq_push(soft_recv_cq(q), &wc))
		q->cq_overflow = true;
	soft_rq_consume(q);
	q->rx_in_msg = false;
	q->rx_bytes = 0;
	q->uc_count[SOFT_UC_RX_TOO_LONG]++;
	return uc_send_drop(q, f);
}

/* 0: placed; 1: no receive WR yet (stall); -1: the QP failed. placed: the
 * payload is already in the receive WR (place.c), only the checks (which it
 * passed before one byte was written) and the accounting remain. */
static int deliver_send(struct soft_qp *q, const struct rv_fpdu *f, bool placed)
{
	const bool is_inv = f->opcode == RV_RDMAP_SEND_INV || f->opcode == RV_RDMAP_SEND_SE_INV;
	struct soft_rwqe *rw = NULL;
	uint64_t cap = 0;

	if (untagged_check(q, f, RV_DDP_QN_SEND, q->msn_rx[0]))
		return -1;
	if (q->uc && q->uc_drop_send)
		return uc_send_drop(q, f);
	if (!q->rx_in_msg) {
		/* One look at the RQ (or the SRQ's slot) per SEND, kept below:
		 * nothing between here and its use consumes or adds a WR. */
		rw = soft_rq_peek(q);
		if (q->uc && !rw) {
			q->uc_count[SOFT_UC_DROP_NO_RECV]++; /* UC: no RNR, the SEND is lost */
			return uc_send_drop(q, f);
		}
		if (!rw)
			return 1;
		q->rx_in_msg = true;
		q->rx_bytes = 0;
	}
	if (f->mo != q->rx_bytes)
		return untagged_error(q, f, RV_TERM_DDP_U_MO);
	if (!rw)
		rw = soft_rq_peek(q); /* a later FPDU of the message: its WR, taken by the first */
	for (uint32_t i = 0; i < rw->num_sge; i++)
		cap += rw->sge[i].length;
	if ((uint64_t)f->mo + f->payload_len > cap && q->uc)
		return uc_recv_fail(q, rw, f, RV_WC_LOC_LEN_ERR);
	if ((uint64_t)f->mo + f->payload_len > cap)
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_UNTAGGED, RV_TERM_DDP_U_TOO_LONG,
				       RV_WC_LOC_LEN_ERR);
	if (f->payload_len && !placed &&
	    soft_sgl_write(q->sc, soft_recv_pd(q), rw->sge, rw->num_sge, f->mo, f->payload, f->payload_len) !=
		    SOFT_MEM_OK)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_LOCAL_CATA, RV_TERM_RDMAP_UNSPEC,
				       RV_WC_LOC_PROT_ERR);
	q->rx_bytes += f->payload_len;
	if (f->last && !is_inv && f->inv_stag == RV_SOFT_SEND_IMM_FOLLOWS && (q->peer_caps & RV_SOFT_CAP_IMM)) {
		/* SEND with immediate (ext.c): the receive WR completes on the Immediate Data. */
		q->rx_imm_pending = true;
		q->msn_rx[0]++;
		return 0;
	}
	if (f->last && is_inv && !soft_mw_remote_inv(q, f->inv_stag))
		/* RFC 5040 7.4.1: an STag this stream may not invalidate. */
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_PROT, RV_TERM_RDMAP_INV_STAG,
				       RV_WC_WR_FLUSH_ERR);
	if (f->last) {
		rv_wc wc;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = rw->wr_id;
		wc.status = RV_WC_SUCCESS;
		wc.opcode = RV_WC_RECV;
		if (is_inv) {
			wc.wc_flags = RV_WC_WITH_INV;
			wc.imm_data = f->inv_stag;
		}
		wc.byte_len = q->rx_bytes;
		wc.qp_num = q->qpn;
		wc.src_qp = q->peer_qpn;
		if (!soft_cq_push_se(soft_recv_cq(q), &wc,
				     f->opcode == RV_RDMAP_SEND_SE || f->opcode == RV_RDMAP_SEND_SE_INV))
			q->cq_overflow = true;
		soft_rq_consume(q);
		q->rx_in_msg = false;
		q->rx_bytes = 0;
		q->msn_rx[0]++;
	}
	return 0;
}

/* The four SENDs (with invalidate, with solicited event). */
static int rx_send(struct soft_qp *q, const struct rv_fpdu *f)
{
	return deliver_send(q, f, false);
}

/* RFC 7306 Immediate Data: completes the SEND it follows, or a receive WR of
 * its own after a WRITE. 0: placed; 1: no receive WR yet (stall); -1: failed. */
static int rx_imm(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct soft_rwqe *rw;
	rv_wc wc;

	if (!(q->peer_caps & RV_SOFT_CAP_IMM))
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
				       RV_WC_WR_FLUSH_ERR);
	if (untagged_check(q, f, RV_DDP_QN_SEND, q->msn_rx[0]))
		return -1;
	if (!f->last || f->mo != 0)
		return untagged_error(q, f, RV_TERM_DDP_U_MO);
	memset(&wc, 0, sizeof(wc));
	if (q->uc && !q->rx_imm_pending &&
	    (q->uc_drop_imm || q->uc_write_dropped || !soft_rq_peek(q))) {
		/* UC: the SEND or WRITE it ends was dropped, or no receive WR. */
		if (!q->uc_drop_imm && !q->uc_write_dropped)
			q->uc_count[SOFT_UC_DROP_NO_RECV]++;
		q->uc_drop_imm = q->uc_write_dropped = false;
		q->last_write_len = 0;
		q->msn_rx[0]++;
		return 0;
	}
	if (q->rx_imm_pending) {
		wc.opcode = RV_WC_RECV;
		wc.byte_len = q->rx_bytes;
	} else {
		/* WRITE with immediate consumes a receive WR, as verbs require. */
		if (!soft_rq_peek(q))
			return 1;
		wc.opcode = RV_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = q->last_write_len;
	}
	rw = soft_rq_peek(q);
	wc.wr_id = rw->wr_id;
	wc.status = RV_WC_SUCCESS;
	wc.imm_data = (uint32_t)f->imm;
	wc.wc_flags = RV_WC_WITH_IMM;
	wc.qp_num = q->qpn;
	wc.src_qp = q->peer_qpn;
	if (!soft_cq_push_se(soft_recv_cq(q), &wc, f->opcode == RV_RDMAP_IMM_SE))
		q->cq_overflow = true;
	soft_rq_consume(q);
	q->rx_in_msg = false;
	q->rx_imm_pending = false;
	q->rx_bytes = 0;
	q->last_write_len = 0;
	q->msn_rx[0]++;
	return 0;
}

/* RFC 7306 Atomic Request: checked like a READ (key, PD, access, bounds,
 * IRD), 8-byte aligned, executed at once (atomic.c) and answered in order with
 * the READ responses (tx.c). */
static int rx_atomic_req(struct soft_qp *q, const struct rv_fpdu *f)
{
	const struct rv_atomic_req *a = &f->areq;
	struct soft_ird *r;
	enum soft_mem_err e;
	uint64_t orig = 0;
	bool cas = a->op == RV_ATOMIC_CMP_SWAP;

	if (!(q->peer_caps & RV_SOFT_CAP_ATOMIC) || soft_qp_ird(q) == 0 || q->uc ||
	    (a->op != RV_ATOMIC_FETCH_ADD && !cas) ||
	    (cas ? a->swap_add_mask != UINT64_MAX || a->compare_mask != UINT64_MAX : a->swap_add_mask != 0))
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
				       RV_WC_WR_FLUSH_ERR);
	if (untagged_check(q, f, RV_DDP_QN_READ, q->msn_rx[1]))
		return -1;
	if (!f->last || f->mo != 0)
		return untagged_error(q, f, RV_TERM_DDP_U_MO);
	if (q->ird_tail - q->ird_head >= SOFT_IRD_CAP || q->ird_user >= soft_qp_ird(q))
		return responder_error(q, f, RV_TERM_DDP, RV_TERM_DDP_UNTAGGED, RV_TERM_DDP_U_NO_BUF,
				       RV_WC_WR_FLUSH_ERR);
	/* Misaligned: an invalid request (the requester sees RV_WC_REM_INV_REQ_ERR). */
	if (a->to % 8)
		return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_UNSPEC,
				       RV_WC_WR_FLUSH_ERR);
	if (!(q->access & RV_ACCESS_REMOTE_ATOMIC))
		e = SOFT_MEM_ACCESS;
	else
		e = soft_atomic_exec(q->sc, q->qp, a, &orig);
	if (e != SOFT_MEM_OK)
		return remote_prot_error(q, f, e);
	q->msn_rx[1]++;
	r = &q->ird[q->ird_tail % SOFT_IRD_CAP];
	memset(r, 0, sizeof(*r));
	r->atomic = true;
	r->counted = true;
	r->req_id = a->req_id;
	r->orig = orig;
	q->ird_user++;
	q->ird_tail++;
	return 0;
}

/* RFC 7306 Atomic Response: only for the oldest outstanding request, which
 * must be this atomic; the original value goes into the WR's 8-byte SGE. */
static int rx_atomic_resp(struct soft_qp *q, const struct rv_fpdu *f)
{
	struct soft_ord *o = &q->ord[q->ord_head % SOFT_ORD_CAP];
	struct soft_swqe *w;
	uint64_t v = f->aresp_orig;

	if (f->qn != RV_DDP_QN_ATOMIC_RESP || f->msn != q->msn_rx_aresp || q->ord_head == q->ord_tail ||
	    !o->atomic || o->wqe != f->aresp_id)
		return requester_error(q, f, q->ord_head != q->ord_tail ? first_read(q) : q->sq_head,
				       RV_WC_BAD_RESP_ERR, RV_TERM_DDP_T_INV_STAG);
	w = &q->sq[o->wqe & q->sq_mask];
	if (soft_sgl_write(q->sc, q->qp->pd, w->sge, w->num_sge, 0, &v, 8) != SOFT_MEM_OK)
		return local_sink_gone(q, o, "an atomic");
	q->msn_rx_aresp++;
	w->done = true;
	q->ord_user--;
	response_done(q, o);
	return 0;
}

static uint32_t term_status(const struct rv_term *t)
{
	/* An atomic the responder cannot execute (misaligned, unsupported): an
	 * invalid request, as on InfiniBand. */
	if (t->layer == RV_TERM_RDMAP && t->etype == RV_TERM_RDMAP_REMOTE_OP && t->d && !t->ddp_tagged &&
	    t->ddp_opcode == RV_RDMAP_ATOMIC_REQ)
		return RV_WC_REM_INV_REQ_ERR;
	if (t->layer == RV_TERM_RDMAP) {
		if (t->etype == RV_TERM_RDMAP_REMOTE_PROT)
			return RV_WC_REM_ACCESS_ERR;
		if (t->etype == RV_TERM_RDMAP_REMOTE_OP &&
		    (t->ecode == RV_TERM_RDMAP_OPCODE || t->ecode == RV_TERM_RDMAP_VERSION))
			return RV_WC_REM_INV_REQ_ERR;
		return RV_WC_REM_OP_ERR;
	}
	if (t->layer == RV_TERM_DDP) {
		if (t->etype == RV_TERM_DDP_TAGGED)
			return t->ecode == RV_TERM_DDP_T_VERSION ? RV_WC_REM_INV_REQ_ERR : RV_WC_REM_ACCESS_ERR;
		if (t->etype == RV_TERM_DDP_UNTAGGED && t->ecode == RV_TERM_DDP_U_TOO_LONG)
			return RV_WC_REM_INV_REQ_ERR;
		/* An XRC SRQ the target refused (rx.c, xrc_select): the IB spec's
		 * invalid request. */
		if (t->etype == RV_TERM_DDP_UNTAGGED && t->ecode == RV_TERM_DDP_U_QN && t->d && !t->ddp_tagged &&
		    (t->ddp_qn & RV_SOFT_QN_XRC_MASK) == RV_SOFT_QN_XRC)
			return RV_WC_REM_INV_REQ_ERR;
		/* A READ beyond the responder's IRD: an invalid request, as on InfiniBand. */
		if (t->etype == RV_TERM_DDP_UNTAGGED && t->ecode == RV_TERM_DDP_U_NO_BUF && t->d &&
		    !t->ddp_tagged && t->ddp_qn == RV_DDP_QN_READ)
			return RV_WC_REM_INV_REQ_ERR;
		return RV_WC_REM_OP_ERR;
	}
	return RV_WC_REM_OP_ERR;
}

/* The send WR a TERMINATE names, by the DDP header it quotes. */
static uint32_t term_victim(const struct soft_qp *q, const struct rv_term *t)
{
	uint32_t end = q->sq_tx + (q->tx_off ? 1 : 0), i;

	if (t->d) {
		for (i = q->sq_head; i != end; i++) {
			const struct soft_swqe *w = &q->sq[i & q->sq_mask];
			if (t->ddp_tagged && (t->ddp_opcode == RV_RDMAP_WRITE || t->ddp_opcode == SOFT_OP_WRITE_REF)) {
				if ((w->opcode == RV_WR_RDMA_WRITE || w->opcode == RV_WR_RDMA_WRITE_WITH_IMM) &&
				    w->rkey == t->ddp_stag &&
				    t->ddp_to >= w->remote_addr && t->ddp_to - w->remote_addr <= w->length)
					return i;
			} else if (!t->ddp_tagged && (t->ddp_qn == RV_DDP_QN_SEND ||
						       (q->xrc_ini && (t->ddp_qn & RV_SOFT_QN_XRC_MASK) == RV_SOFT_QN_XRC))) {
				/* SEND (with immediate: its SEND or its Immediate Data message),
				 * WRITE with immediate: its Immediate Data message (ext.c). */
				if (((w->opcode == RV_WR_SEND || w->opcode == RV_WR_RDMA_WRITE_WITH_IMM ||
				      w->opcode == RV_WR_SEND_WITH_INV) &&
				     w->msn == t->ddp_msn) ||
				    (w->opcode == RV_WR_SEND_WITH_IMM && (w->msn == t->ddp_msn || w->msn + 1 == t->ddp_msn)))
					return i;
			} else if (!t->ddp_tagged && t->ddp_qn == RV_DDP_QN_READ) {
				if (soft_wr_has_response(w->opcode) && w->opcode != RV_WR_BIND_MW &&
				    w->opcode != RV_WR_LOCAL_INV && w->msn == t->ddp_msn)
					return i;
			}
		}
	}
	/* Not named: the oldest WR the peer has not confirmed. */
	for (i = q->sq_head; i != q->sq_tx; i++) {
		const struct soft_swqe *w = &q->sq[i & q->sq_mask];
		if (soft_wr_has_response(w->opcode) ? !w->done : !before(i, q->sq_confirmed))
			return i;
	}
	return i;
}

static int rx_terminate(struct soft_qp *q, const struct rv_fpdu *f)
{
	const struct rv_term *t = &f->term;
	uint32_t victim = term_victim(q, t);
	uint32_t status = term_status(t);

	/* The peer handles its stream in order: it processed everything before
	 * the message it terminated on. */
	if (before(q->sq_confirmed, victim))
		q->sq_confirmed = victim;
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: QP 0x%x terminated the connection (layer %u, type %u, code "
	       "0x%02x): %s", q->qpn, q->peer_qpn, t->layer, t->etype, t->ecode,
	       victim != q->sq_tail ? "the WR it names fails, the rest flush" : "outstanding work flushes");
	soft_qp_fail(q, victim, status, RV_WC_WR_FLUSH_ERR, false);
	soft_conn_detach(q, true);
	return -1;
}

/* The same-host path's control message (shmring.c, shm.c). */
static int rx_shm_ctl(struct soft_qp *q, const struct rv_fpdu *f)
{
	if (q->conn && soft_shmring_ctl_got(q, q->conn, f->payload, f->payload_len))
		return 0;
	return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
			       RV_WC_WR_FLUSH_ERR);
}

typedef int (*rx_handler)(struct soft_qp *q, const struct rv_fpdu *f);

/* The handler of each opcode of the 4-bit field: the standard ones from
 * wire.h's opcode table (its handler column), soft0's private ones here. */
#define RX_ROW(name, tagged, body, len, handler, seed) [RV_RDMAP_##name] = rx_##handler,
static const rx_handler rx_handlers[16] = {
	RV_RDMAP_OPCODE_TABLE(RX_ROW)
	[SOFT_OP_SEND_REF] = rx_send_ref,
	[SOFT_OP_SHM_CTL] = rx_shm_ctl,
	[SOFT_OP_WRITE_REF] = rx_write_ref,
};
#undef RX_ROW

int soft_rx_fpdu(struct soft_qp *q, const struct rv_fpdu *f)
{
	rx_handler h = f->opcode < 16 ? rx_handlers[f->opcode] : NULL;

	/* The peer talks, not only answers our confirmations: a post that
	 * follows is an answer to it, not part of a stream (tx.c, gatherable). */
	if (f->opcode != RV_RDMAP_READ_RESP)
		q->rx_peer++;
	if (RV_LIKELY(h))
		return h(q, f);
	/* SOFT_OP_AUTH after the setup, unassigned opcodes: not ours to take. */
	return responder_error(q, f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
			       RV_WC_WR_FLUSH_ERR);
}

/* A frame that does not decode: say why at the layer that found it. */
void soft_rx_bad_frame(struct soft_qp *q, int err)
{
	switch (err) {
	case -EILSEQ:
		responder_error(q, NULL, RV_TERM_LLP, 0, RV_TERM_LLP_CRC, RV_WC_WR_FLUSH_ERR);
		break;
	case -EPROTO:
		responder_error(q, NULL, RV_TERM_DDP, RV_TERM_DDP_UNTAGGED, RV_TERM_DDP_U_VERSION,
				RV_WC_WR_FLUSH_ERR);
		break;
	case -EPROTONOSUPPORT:
		responder_error(q, NULL, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_VERSION,
				RV_WC_WR_FLUSH_ERR);
		break;
	case -EMSGSIZE:
		responder_error(q, NULL, RV_TERM_LLP, 0, RV_TERM_LLP_FPDU, RV_WC_WR_FLUSH_ERR);
		break;
	default:
		responder_error(q, NULL, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_UNSPEC,
				RV_WC_WR_FLUSH_ERR);
		break;
	}
}

/*
 * The WRITE or SEND FPDU at p whose payload place.c put into the target or the
 * receive WR: once its pad and CRC are here, check the CRC (summed as the
 * payload landed) and account the WRITE as rx_write does, the SEND as
 * rx_send does (completing its receive WR on the last FPDU). Returns the bytes it takes in rx, 0 when they
 * are not all here, -1 when the CRC is wrong (TERMINATE sent, detached).
 */
static int rx_placed(struct soft_qp *q, struct soft_conn *c, const uint8_t *p, size_t avail)
{
	struct soft_place *pl = &c->place;
	size_t need = (size_t)pl->hdr_len + pl->trail;
	struct rv_fpdu f;

	if (avail < need)
		return 0;
	pl->placed = false;
	q->rx_peer++; /* as soft_rx_fpdu: a WRITE or SEND */
	if (c->crc) {
		const uint8_t *t = p + pl->hdr_len + pl->trail - 4;
		uint32_t sum = rv_crc32c(pl->crc, p + pl->hdr_len, (size_t)pl->trail - 4); /* the pad */
		uint32_t sent = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
		if (sum != sent) {
			soft_rx_bad_frame(q, -EILSEQ);
			return -1;
		}
	}
	if (rv_wire_fpdu_head(p, pl->hdr_len, &f) <= 0) { /* decoded before: cannot fail */
		soft_rx_bad_frame(q, -EBADMSG);
		return -1;
	}
	if (pl->send) {
		int r = deliver_send(q, &f, true); /* f.payload_len: the whole payload, placed */
		if (r > 0) /* its receive WR was there when placing began: cannot happen */
			soft_rx_bad_frame(q, -EPROTO);
		return r ? -1 : (int)need;
	}
	q->rx_write_acc += pl->len;
	if (f.last) {
		q->last_write_len = q->rx_write_acc;
		q->rx_write_acc = 0;
		q->uc_write_dropped = false;
	}
	return (int)need;
}

void soft_rx_process(struct soft_qp *q, struct soft_conn *c)
{
	size_t off = 0;

	while (q->conn == c && !c->rx_stalled && !c->place.active) {
		struct rv_fpdu f;
		int n, r;

		if (RV_UNLIKELY(c->place.placed)) {
			c->rx_small_run = 0;
			n = rx_placed(q, c, c->rx + c->rx_off + off, c->rx_len - c->rx_off - off);
			if (n < 0)
				return;
			if (n == 0)
				break;
			off += (size_t)n;
			continue;
		}
		n = rv_wire_fpdu_decode_crc(c->rx + c->rx_off + off, c->rx_len - c->rx_off - off, &f, c->crc);
		if (n == 0)
			break;
		/* The initiator has sent its first FPDU (RFC 5044 §7.1.2): we may
		 * send, if only a TERMINATE for a bad one. */
		c->may_send = true;
		if (n < 0) {
			soft_rx_bad_frame(q, n);
			return;
		}
		/* For the progress thread's peek (context.c, SOFT_RX_PEEK_RUN). */
		c->rx_small_run = f.payload_len >= SOFT_PLACE_MIN ? 0 : c->rx_small_run < UINT8_MAX ? c->rx_small_run + 1 : UINT8_MAX;
		if (RV_UNLIKELY(c->ring_rx_on)) {
			/* After the switch to the ring (shmring.c) nothing comes over TCP
			 * but a TERMINATE the ring had no room for when the peer closed:
			 * taken after what the ring holds (waits while a SEND there waits
			 * for a receive WR). */
			if (f.opcode != RV_RDMAP_TERMINATE) {
				responder_error(q, &f, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_OP, RV_TERM_RDMAP_OPCODE,
						RV_WC_WR_FLUSH_ERR);
				return;
			}
			if (!soft_shmring_drain(q, c)) {
				if (q->conn != c)
					return; /* failed on a ring frame: detached */
				break;          /* stalled: resumed with the next receive WR */
			}
		}
		/* A large WRITE or SEND came buffered: read only up to the next
		 * header from now on, so that the next one can be placed (place.c). */
		if (f.payload_len >= SOFT_PLACE_MIN && !q->uc &&
		    ((f.tagged && f.opcode == RV_RDMAP_WRITE) ||
		     (!f.tagged && (f.opcode == RV_RDMAP_SEND || f.opcode == RV_RDMAP_SEND_SE)))) {
			c->place.follow = SOFT_PLACE_FOLLOW;
			c->place.follow_send = !f.tagged;
		} else if (c->place.follow)
			c->place.follow--;
		r = soft_rx_fpdu(q, &f);
		if (r > 0) {
			c->rx_stalled = true;
			break;
		}
		if (r < 0)
			return; /* detached: the connection's buffer is no longer ours */
		off += (size_t)n;
	}
	if (off) {
		soft_retry_progress(q); /* the peer sent FPDUs */
		c->rx_off += off;
		if (c->rx_off == c->rx_len) {
			c->rx_off = c->rx_len = 0;
		} else if (SOFT_RXBUF - c->rx_len < RV_FPDU_MAX) {
			/* Move the partial FPDU to the front only when a largest one
			 * might no longer fit behind it (not after every batch). */
			memmove(c->rx, c->rx + c->rx_off, c->rx_len - c->rx_off);
			c->rx_len -= c->rx_off;
			c->rx_off = 0;
		}
	}
	if (c->ring && q->conn == c && !c->rx_stalled)
		soft_shmring_rx(q, c); /* after the switch, which came over TCP */
	soft_qp_check_overflow(q);
}
