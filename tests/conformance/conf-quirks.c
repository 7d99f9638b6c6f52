/*
 * The conformance suite's one table of known device differences: device
 * (an fnmatch(3) pattern on its name) -> case -> what the device does
 * instead of what the case expects, why that is the device's behaviour and
 * not rverbs', and where that is written down.
 *
 * How an entry acts (conf-harness.h): a "status" entry makes conf_expect()
 * wait for the device's status where the case expects the other one; any
 * other key is a difference the case itself asks about with conf_quirk(key)
 * and then checks the device's documented behaviour instead. Either way the
 * difference is checked, not skipped, and an entry the case never met fails
 * the case: the table cannot outlive the difference it records.
 *
 * Only a device's own behaviour goes here. Where rverbs was wrong, rverbs
 * was fixed; where the case's expectation contradicted the IB specification
 * or the verbs documentation, the case was fixed. The rxe entries were seen
 * with Debian 12's kernel (6.1.0, rdma_rxe) and rdma-core 44 in scripts/vm;
 * "rxe*" is the name scripts/vm and the usual `rdma link add` examples give
 * soft-RoCE devices.
 */
#include "conf-harness.h"

#define LINUX_RXE "Linux 6.1 drivers/infiniband/sw/rxe/"

const struct conf_quirk conf_quirks[] = {
	/* ---- soft0 ---- */
	{"soft0", "remote invalid request: RDMA WRITE to a QP without remote write access", "status",
	 RV_WC_REM_INV_REQ_ERR, RV_WC_REM_ACCESS_ERR,
	 "the WRITE completes with remote access error, not remote invalid request",
	 "soft0 reports an operation its QP's access flags do not enable as an access violation; the "
	 "verbs documentation gives remote invalid request for it (to change in lib/drivers/soft, "
	 "and this entry goes with it)",
	 "ibv_poll_cq(3), IBV_WC_REM_INV_REQ_ERR"},

	/* ---- rxe (soft-RoCE), Linux 6.1 ---- */
	{"rxe*", "local length error and remote invalid request: SEND longer than the receive", "status",
	 RV_WC_LOC_LEN_ERR, RV_WC_LOC_QP_OP_ERR,
	 "the receive completes with local QP operation error, not local length error",
	 "rxe's responder completes a receive too short for the message with a QP operation error",
	 LINUX_RXE "rxe_resp.c; ibv_poll_cq(3), IBV_WC_LOC_LEN_ERR (a receive too small for the message)"},
	{"rxe*", "local length error and remote invalid request: SEND longer than the receive", "status",
	 RV_WC_REM_INV_REQ_ERR, RV_WC_REM_OP_ERR,
	 "the SEND completes with remote operation error, not remote invalid request",
	 "rxe's responder answers such a SEND with the NAK of a remote operational error",
	 LINUX_RXE "rxe_resp.c; IBA vol. 1 ch. 9, responder length errors (NAK Invalid Request)"},
	{"rxe*", "local protection error: SEND with a bad lkey", "status", RV_WC_LOC_PROT_ERR, RV_WC_LOC_QP_OP_ERR,
	 "the SEND completes with local QP operation error, not local protection error",
	 "rxe's requester reports a send SGE whose lkey names no MR as a QP operation error",
	 LINUX_RXE "rxe_req.c; ibv_poll_cq(3), IBV_WC_LOC_PROT_ERR (SGE without a valid MR)"},
	{"rxe*", "local protection error: RDMA WRITE with a bad lkey", "status", RV_WC_LOC_PROT_ERR, RV_WC_LOC_QP_OP_ERR,
	 "the WRITE completes with local QP operation error, not local protection error",
	 "as for SEND: rxe's requester reports a bad lkey as a QP operation error",
	 LINUX_RXE "rxe_req.c; ibv_poll_cq(3), IBV_WC_LOC_PROT_ERR"},
	{"rxe*", "WR flush error after the QP goes to ERR", "recv-in-err-not-flushed", 0, 0,
	 "a receive posted after the QP went to ERR does not complete (the receives held at the "
	 "transition and the send WRs posted after it do flush)",
	 "rxe flushes its receive queue on the move to ERR; a receive posted later is only queued",
	 LINUX_RXE "rxe_verbs.c (rxe_post_recv), rxe_resp.c; IBA vol. 1: WRs posted to a QP in the Error "
	 "state complete with flush error"},
	{"rxe*", "transport retry exceeded: the peer goes away", "peer-gone-no-retry-exceeded", 0, 0,
	 "a SEND to a peer that went away stays outstanding: no transport retry exceeded within 10 s, "
	 "the QP stays in RTS",
	 "observed in both arrangements (the peer's QP, or its whole context, closed); rxe does not "
	 "end the SEND when its retries meet no responder",
	 LINUX_RXE "rxe_comp.c, rxe_req.c (retransmit and RNR timers)"},
	{"rxe*", "CQ overflow: rv_cq_poll returns -EOVERFLOW, the QP is in ERR", "cq-overflow-qp-stays-rts", 0, 0,
	 "the QP stays in RTS; the overflow is reported by the CQ error event, after which rv_cq_poll "
	 "returns what the CQ held, then -EOVERFLOW",
	 "rxe drops the completion that does not fit and raises IB_EVENT_CQ_ERR, leaving the QP as it is",
	 LINUX_RXE "rxe_cq.c (rxe_cq_post)"},
	{"rxe*", "post-time errors: too many SGEs, a full send queue", "sq-holds-more-than-max-send-wr", 0, 0,
	 "the send queue takes one WR more than the max_send_wr it reports (no -ENOMEM there)",
	 "rxe's queues are rings rounded up to a power of two and a post checks only the ring for room",
	 LINUX_RXE "rxe_queue.c (rxe_queue_init), rxe_verbs.c (post_one_send)"},
	{"rxe*", "XRC: SENDs reach the SRQ the initiator names; WRITE and READ as on RC", "no-xrc", 0, 0,
	 "the device has no XRC: device_cap_flags lacks IBV_DEVICE_XRC, and the XRC domain and the XRC QP "
	 "types are refused with -EOPNOTSUPP (which the case checks)",
	 "rxe implements RC, UC and UD only; it does not set IB_DEVICE_XRC",
	 LINUX_RXE "rxe.c (rxe_init_device_param: device_cap_flags), rxe_verbs.c (no alloc_xrcd)"},
	{"rxe*", "SRQ resize below what it holds, to 0 or above max_srq_wr is refused, nothing lost",
	 "srq-resize-rounds-up", 0, 0,
	 "a resize to fewer receives than the SRQ holds succeeds (the size read back still holds "
	 "them) and nothing is lost",
	 "rxe rounds the new size up to its ring's and refuses only what does not fit in that",
	 LINUX_RXE "rxe_srq.c, rxe_queue.c (rxe_queue_resize)"},
	{"rxe*", "Last WQE Reached for a QP on an SRQ moved to ERR; the SRQ's receives stay", "no-last-wqe-reached", 0, 0,
	 "no Last WQE Reached event comes",
	 "rxe in Linux 6.1 does not raise IB_EVENT_QP_LAST_WQE_REACHED",
	 LINUX_RXE "; IBA vol. 1: the event for a QP on an SRQ that enters Error"},
	{"rxe*", "remote access error: RDMA WRITE beyond the window's end (inside the MR)", "mw-bounds-are-the-mr's", 0, 0,
	 "the WRITE completes with success and places its bytes: only the MR's bounds are checked",
	 "rxe's responder checks an access through a memory window against the window's MR, not "
	 "against the window",
	 LINUX_RXE "rxe_resp.c (check_rkey), rxe_mw.c; IBA vol. 1: a window's bounds limit its rkey"},
	{"rxe*", "remote access error: RDMA READ before the window's start (inside the MR)", "mw-bounds-are-the-mr's", 0, 0,
	 "the READ completes with success and returns the bytes: only the MR's bounds are checked",
	 "as for WRITE: rxe checks an access through a window against its MR's bounds",
	 LINUX_RXE "rxe_resp.c (check_rkey), rxe_mw.c"},
	{"rxe*", "SEND with invalidate of a type 2 window, then an access through it fails", "with-inv-in-kernel-bit", 0, 0,
	 "the receive's WITH_INV flag arrives as bit 2 (libibverbs' IBV_WC_IP_CSUM_OK, rverbs' "
	 "RV_WC_IP_CSUM_OK); the rkey is there and the window is invalidated",
	 "rxe writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into the CQ it shares with user "
	 "space, and rdma-core's rxe provider passes wc_flags on as they are; libibverbs' "
	 "IBV_WC_WITH_INV is 1 << 3",
	 LINUX_RXE "rxe_resp.c; include/rdma/ib_verbs.h (enum ib_wc_flags) vs <infiniband/verbs.h>"},
	{NULL, NULL, NULL, 0, 0, NULL, NULL, NULL},
};
