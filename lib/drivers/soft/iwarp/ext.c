/*
 * RFC 7306 on the requester: immediate data and atomics as a negotiated
 * extension. Each side offers RV_SOFT_CAP_IMM / RV_SOFT_CAP_ATOMIC in the MPA
 * private data (unless its context has RV_SOFT_NO_EXT); a QP uses an
 * extension only when both offered it, so a peer that lacks it never receives
 * one of its messages.
 *
 * - RDMA WRITE with immediate: the WRITE message, then an Immediate Data
 *   message (opcode 0x8, untagged QN 0, its own MSN, 8 bytes: the 32-bit
 *   verbs immediate in the low half, big-endian). The receiver completes a
 *   receive WR with RV_WC_RECV_RDMA_WITH_IMM, byte_len the WRITE's length.
 * - SEND with immediate: the SEND message with RsvdULP = 1
 *   (RV_SOFT_SEND_IMM_FOLLOWS), then an Immediate Data message; the receive WR
 *   the SEND filled completes on the Immediate Data (RV_WC_RECV, IMM flag).
 *   RFC 7306 defines no single "SEND with immediate" message; this pairing is
 *   rverbs' own, used only between peers that negotiated RV_SOFT_CAP_IMM.
 *   With RV_SEND_SOLICITED the Immediate Data message is 0x9 (with SE).
 * - Atomics: an Atomic Request (0xa, untagged QN 1, sharing the READ request
 *   MSNs and the ORD/IRD credits) with FetchAdd (0) or CmpSwap (2), whole-word
 *   masks, request id = the WR's send queue index; the Atomic Response (0xb,
 *   QN 3) carries the original value, written into the WR's 8-byte SGE.
 *
 * Posting one of these on a QP whose context has RV_SOFT_NO_EXT, or whose
 * connection is up without the peer having negotiated it, fails at once with
 * -EOPNOTSUPP. Work posted before the connection is up and found unsupported
 * when it is framed completes with RV_WC_LOC_QP_OP_ERR (the QP goes to ERR).
 *
 * Runs with q->lock held (posting thread or progress thread).
 */
#include <errno.h>
#include <string.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"

static uint32_t wr_cap(uint32_t opcode)
{
	return opcode == RV_WR_ATOMIC_CMP_AND_SWP || opcode == RV_WR_ATOMIC_FETCH_AND_ADD ? RV_SOFT_CAP_ATOMIC
															: RV_SOFT_CAP_IMM;
}

int soft_ext_check_wr(const struct soft_qp *q, const rv_send_wr *wr, size_t i)
{
	static const char *const fn = "rv_qp_post_send";
	uint32_t cap = wr_cap(wr->opcode);
	const char *what = cap == RV_SOFT_CAP_IMM ? "immediate data" : "atomics";

	if (!(q->sc->caps & cap))
		return rv_err(EOPNOTSUPP, fn, "wrs[%zu]: %s: this context was opened with RV_SOFT_NO_EXT (or "
			      "RVERBS_SOFT_EXT=0), so soft0 does not offer RFC 7306 to its peers", i, what);
	if (q->conn && q->conn->state == CONN_UP && !(q->peer_caps & cap))
		return rv_err(EOPNOTSUPP, fn, "wrs[%zu]: %s: the peer did not negotiate RFC 7306 %s in the MPA "
			      "exchange (a plain iWARP peer, or RV_SOFT_NO_EXT on its side)", i, what, what);
	if (cap == RV_SOFT_CAP_ATOMIC &&
	    (wr->num_sge != 1 || !wr->sg_list || wr->sg_list[0].length != 8))
		return rv_err(EINVAL, fn, "wrs[%zu]: an atomic needs exactly one SGE of 8 bytes for the original "
			      "value (num_sge %u)", i, wr->num_sge);
	return 0;
}

/* Framed but not negotiated (posted before the connection came up). */
static bool refused(struct soft_qp *q, const struct soft_swqe *w)
{
	if (q->peer_caps & wr_cap(w->opcode))
		return false;
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: the peer did not negotiate RFC 7306 %s; the WR completes with "
	       "RV_WC_LOC_QP_OP_ERR", q->qpn, wr_cap(w->opcode) == RV_SOFT_CAP_IMM ? "immediate data" : "atomics");
	soft_qp_fail(q, q->sq_tx, RV_WC_LOC_QP_OP_ERR, RV_WC_WR_FLUSH_ERR, false);
	q->kick = true;
	soft_kick(q->sc);
	return true;
}

bool soft_ext_refused(struct soft_qp *q, const struct soft_swqe *w)
{
	return refused(q, w);
}

void soft_ext_emit_imm(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w)
{
	struct rv_fpdu f;
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = (w->flags & RV_SEND_SOLICITED) ? RV_RDMAP_IMM_SE : RV_RDMAP_IMM;
	f.last = true;
	f.qn = soft_send_qn(q, w);
	f.msn = q->msn_tx[RV_DDP_QN_SEND]++;
	f.imm = w->imm;
	if (w->opcode == RV_WR_RDMA_WRITE_WITH_IMM)
		w->msn = f.msn; /* a TERMINATE names it by this MSN */
	n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
	if (n > 0)
		c->tx_len += soft_fault_tx(q, c, c->tx + c->tx_len, (size_t)n);
}

bool soft_ext_emit_atomic(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w)
{
	struct soft_ord *o = &q->ord[q->ord_tail % SOFT_ORD_CAP];
	bool cas = w->opcode == RV_WR_ATOMIC_CMP_AND_SWP;
	struct rv_fpdu f;
	int n;

	if (refused(q, w))
		return false;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_ATOMIC_REQ;
	f.last = true;
	f.qn = RV_DDP_QN_READ;
	f.msn = q->msn_tx[RV_DDP_QN_READ]++;
	f.areq.op = cas ? RV_ATOMIC_CMP_SWAP : RV_ATOMIC_FETCH_ADD;
	f.areq.req_id = q->sq_tx;
	f.areq.stag = w->rkey;
	f.areq.to = w->remote_addr;
	f.areq.swap_add = cas ? w->swap : w->compare_add;
	f.areq.swap_add_mask = cas ? UINT64_MAX : 0; /* FetchAdd: no carry boundaries */
	f.areq.compare = cas ? w->compare_add : 0;
	f.areq.compare_mask = cas ? UINT64_MAX : 0;
	n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
	if (n > 0)
		c->tx_len += soft_fault_tx(q, c, c->tx + c->tx_len, (size_t)n);
	memset(o, 0, sizeof(*o));
	o->len = 8;
	o->user = true;
	o->atomic = true;
	o->wqe = q->sq_tx;
	o->upto = q->sq_tx;
	q->ord_tail++;
	q->ord_user++;
	w->msn = f.msn;
	q->sq_covered = q->sq_tx + 1;
	q->sq_tx++;
	return true;
}

void soft_ext_emit_atomic_resp(struct soft_qp *q, struct soft_conn *c, const struct soft_ird *r)
{
	struct rv_fpdu f;
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_ATOMIC_RESP;
	f.last = true;
	f.qn = RV_DDP_QN_ATOMIC_RESP;
	f.msn = q->msn_tx[RV_DDP_QN_ATOMIC_RESP]++;
	f.aresp_id = r->req_id;
	f.aresp_orig = r->orig;
	n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
	if (n > 0)
		c->tx_len += soft_fault_tx(q, c, c->tx + c->tx_len, (size_t)n);
}
