/**
 * @file rverbs/soft.h
 * @brief Fault injection on the software device (soft0), so that an
 *        application can test its own error paths, and which path a QP's
 *        traffic takes (rv_soft_qp_path()).
 *
 * soft0 can lose, corrupt, delay or reset the frames it sends, on request:
 * through rv_soft_fault_inject(), or for a whole process through the
 * environment variable `RVERBS_SOFT_FAULT` (read when a context opens; see
 * docs/software-device.md). What the application then sees is what the verbs
 * say it sees on a real network with the same fault:
 *
 * - **drop** (an RC stream): a lost FPDU cannot be retransmitted by iWARP over
 *   TCP, so the stream stops at the lost frame, as a link that loses every
 *   retry would. The requester sees no progress; after the bound its QP's
 *   `timeout` and `retry_cnt` imply (4.096 µs × 2^timeout × (retry_cnt + 1),
 *   at least 2 s; timeout 0 waits forever, as in verbs) its outstanding work completes with
 *   ::RV_WC_RETRY_EXC_ERR (the first WR; the rest flush) and the QP goes to
 *   ERR; the peer then sees the connection close and fails its own
 *   outstanding work the same way.
 * - **corrupt**: one bit of the frame flips after its CRC was computed. The
 *   receiver's CRC check fails: it sends a TERMINATE (LLP layer, CRC error) and
 *   moves its QP to ERR (receive WRs flush); the sender's WR that was not yet
 *   confirmed completes with ::RV_WC_REM_OP_ERR and the rest flush.
 * - **delay**: the frame and everything queued after it on the same stream
 *   wait `delay_ms` before they are sent (at the device's 100 ms timer
 *   granularity). Data and completions stay correct, only later.
 * - **reset**: instead of the frame, the connection is reset (a TCP RST). Both
 *   sides complete their outstanding work at once: the first WR with
 *   ::RV_WC_RETRY_EXC_ERR, the rest and every receive WR with
 *   ::RV_WC_WR_FLUSH_ERR; the QPs go to ERR. (A NIC would retry until the
 *   bound; here TCP has already said the peer is gone.)
 *
 * Only frames carrying RDMA traffic (FPDUs) are affected, never the MPA
 * connection setup or a TERMINATE. UD datagrams: drop loses one silently,
 * corrupt flips a bit (the receiver's ICRC check drops it); delay and reset do
 * not apply to them. Faults apply to the next frames sent after
 * the call, in the order reset, drop, corrupt, delay when several are pending.
 */
#ifndef RVERBS_SOFT_H
#define RVERBS_SOFT_H

#include <rverbs/common.h>
#include <rverbs/context.h>
#include <rverbs/qp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What rv_soft_fault_inject() does to the next frames. */
typedef enum rv_soft_fault_kind {
	/** Cancel every fault still pending on the context or QP. */
	RV_SOFT_FAULT_CLEAR = 0,
	/** Lose the next `count` frames (on RC the stream stops: see above). */
	RV_SOFT_FAULT_DROP = 1,
	/** Flip one bit in each of the next `count` frames (the CRC check fails). */
	RV_SOFT_FAULT_CORRUPT = 2,
	/** Hold each of the next `count` frames `delay_ms` milliseconds. */
	RV_SOFT_FAULT_DELAY = 3,
	/** Reset the connection that sends each of the next `count` frames. */
	RV_SOFT_FAULT_RESET = 4
} rv_soft_fault_kind;

/**
 * Inject a fault into the frames a software device context sends.
 *
 * Faults add up: a second call of the same kind adds its count (a delay
 * replaces delay_ms). They stay pending until frames consume them or
 * ::RV_SOFT_FAULT_CLEAR cancels them.
 *
 * @param ctx      a live context on soft0.
 * @param qp       NULL: the next frames any QP of @p ctx sends; otherwise only
 *                 the frames of this QP (which must belong to @p ctx). A QP's
 *                 own faults are consumed before the context's.
 * @param kind     the fault.
 * @param count    how many frames it affects (1 to 1000000; ignored by
 *                 ::RV_SOFT_FAULT_CLEAR).
 * @param delay_ms ::RV_SOFT_FAULT_DELAY only: how long each frame waits
 *                 (1 to 60000); must be 0 for the other kinds.
 * @return 0; -EINVAL for a bad handle, kind, count or delay, or a QP of
 *         another context; -RV_ECLOSED for a closed handle; -EOPNOTSUPP when
 *         @p ctx is not on the software device (rv_error_last() says so).
 */
RV_API int rv_soft_fault_inject(rv_context *ctx, rv_qp *qp, rv_soft_fault_kind kind, uint32_t count,
				uint32_t delay_ms);

/**
 * The path a software device QP's traffic takes (rv_soft_qp_path()).
 *
 * Between two processes of one host (or two contexts of one process) soft0
 * agrees on a same-host path after the connection is up, then moves the
 * connection's frames onto shared-memory rings once both directions of that
 * agreement hold (docs/software-device.md, "Same host"). A QP's path
 * therefore moves from ::RV_SOFT_PATH_TCP to ::RV_SOFT_PATH_SAME_HOST to
 * ::RV_SOFT_PATH_SAME_HOST_RINGS in the moments after it connects, as the
 * progress thread exchanges the agreement's messages; it goes back to
 * ::RV_SOFT_PATH_NONE when the connection ends.
 */
typedef enum rv_soft_path {
	/** No connection: the QP is not connected yet (RESET to RTR before
	 *  the peer answered), its connection ended (ERR, or it failed), or
	 *  it is a UD QP (datagrams over UDP, no connection). */
	RV_SOFT_PATH_NONE = 0,
	/** Every frame goes over TCP (iWARP): a peer on another host, the
	 *  same-host path off (`RVERBS_SOFT_SHM=0`, or refused by either
	 *  side), or its agreement not finished yet. */
	RV_SOFT_PATH_TCP = 1,
	/** The same-host path holds in at least one direction: RDMA WRITEs and
	 *  SENDs of 8 KiB or more move by reference (one `process_vm_readv(2)`
	 *  by the target), everything else still over TCP. */
	RV_SOFT_PATH_SAME_HOST = 2,
	/** The same-host path holds and frames move through shared-memory
	 *  rings instead of the socket, in at least one direction (each
	 *  direction switches on its own; the other follows unless it was
	 *  refused, e.g. with `RVERBS_SOFT_SHM_RING=0`). */
	RV_SOFT_PATH_SAME_HOST_RINGS = 3
} rv_soft_path;

/**
 * Which path a software device QP's traffic takes now.
 *
 * A read-only query of the QP's connection, for tools and tests that report
 * or check it (`rverbs perf` prints it). The answer may change right after
 * the call: see ::rv_soft_path for the order in which it moves.
 *
 * @param qp   a live QP on soft0.
 * @param path receives the path; written only on success.
 * @retval 0 success.
 * @retval -EINVAL @p qp is NULL or not a QP, or @p path is NULL.
 * @retval -RV_ECLOSED @p qp was closed.
 * @retval -EOPNOTSUPP @p qp is not on the software device (rv_error_last()
 *         names its device).
 */
RV_API int rv_soft_qp_path(rv_qp *qp, rv_soft_path *path);

#ifdef __cplusplus
}
#endif

#endif
