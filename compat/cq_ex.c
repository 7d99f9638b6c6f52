/*
 * Extended CQs (ibv_create_cq_ex): the polling table verbs.h's
 * ibv_start_poll, ibv_next_poll, ibv_end_poll and ibv_wc_read_* call. One
 * completion at a time is taken from rverbs into the CQ and read from there;
 * the same CQ also answers ibv_poll_cq. No allocation, no lock of its own.
 */
#include <endian.h>

#include "compat.h"

static struct compat_cq *of(struct ibv_cq_ex *ex)
{
	return compat_container_of(ex, struct compat_cq, ex);
}

static int take(struct compat_cq *q)
{
	rv_wc_ex x;
	int n;

	if (q->ts_flags) {
		n = rv_cq_poll_ex(q->rv, &x, 1);
		if (n > 0) {
			q->cur = x.wc;
			q->ts = x.timestamp;
			q->ts_wall = x.timestamp_wallclock;
		}
	} else {
		n = rv_cq_poll(q->rv, &q->cur, 1);
	}

	if (n < 0)
		return -n;
	if (n == 0)
		return ENOENT; /* verbs.h: nothing to poll */
	q->ex.status = (enum ibv_wc_status)q->cur.status;
	q->ex.wr_id = q->cur.wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return take(of(ex));
}

static int next_poll(struct ibv_cq_ex *ex)
{
	return take(of(ex));
}

static void end_poll(struct ibv_cq_ex *ex)
{
	(void)ex;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ex)
{
	return (enum ibv_wc_opcode)of(ex)->cur.opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.byte_len;
}

/* Immediate data in network order; an invalidated rkey as it is
 * (ibv_wc_read_invalidated_rkey reads it through this call too). */
static __be32 read_imm_data(struct ibv_cq_ex *ex)
{
	const rv_wc *w = &of(ex)->cur;

	return (w->wc_flags & RV_WC_WITH_IMM) ? htobe32(w->imm_data) : (__be32)w->imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.wc_flags;
}

static uint32_t read_slid(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.slid;
}

static uint8_t read_sl(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	return of(ex)->cur.dlid_path_bits;
}

/* The raw clock (rv_context_read_clock(), hca_core_clock kHz). */
static uint64_t read_completion_ts(struct ibv_cq_ex *ex)
{
	return of(ex)->ts;
}

static uint64_t read_completion_wallclock_ns(struct ibv_cq_ex *ex)
{
	return of(ex)->ts_wall;
}

void compat_cq_ex_fill(struct compat_cq *q)
{
	q->ex.start_poll = start_poll;
	q->ex.next_poll = next_poll;
	q->ex.end_poll = end_poll;
	q->ex.read_opcode = read_opcode;
	q->ex.read_vendor_err = read_vendor_err;
	q->ex.read_byte_len = read_byte_len;
	q->ex.read_imm_data = read_imm_data;
	q->ex.read_qp_num = read_qp_num;
	q->ex.read_src_qp = read_src_qp;
	q->ex.read_wc_flags = read_wc_flags;
	q->ex.read_slid = read_slid;
	q->ex.read_sl = read_sl;
	q->ex.read_dlid_path_bits = read_dlid_path_bits;
	if (q->ts_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		q->ex.read_completion_ts = read_completion_ts;
	if (q->ts_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		q->ex.read_completion_wallclock_ns = read_completion_wallclock_ns;
}
