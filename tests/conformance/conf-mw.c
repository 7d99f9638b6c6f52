/*
 * Conformance: memory windows (rverbs/mw.h). B binds a window of each type
 * on a range of its main buffer; A reaches B's memory through the window's
 * rkey only inside the window and with the window's rights; a type 2 window
 * stops working once invalidated, by B (LOCAL_INV) or by A (SEND with
 * invalidate), and a type 1 window once unbound. Every refused access is a
 * remote access error that writes nothing.
 *
 * A device without memory windows (max_mw 0, or rv_mw_alloc() refusing the
 * type) skips with the reason.
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

/* The window: [WIN_OFF, WIN_OFF + WIN_LEN) of B's main buffer. */
#define WIN_OFF 65536u
#define WIN_LEN 8192u
/* Where A's READs land in A's buffer. */
#define SINK_OFF 262144u

static struct conf_pair *mw_pair_open(void)
{
	struct conf_opts o = {.b_access = RV_ACCESS_ALL_REMOTE | RV_ACCESS_MW_BIND};
	struct conf_pair *p = conf_pair_open(&o);
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};

	assert_int_equal(rv_context_query_device(p->b.ctx, &da), 0);
	if (da.max_mw == 0)
		conf_skip("the device has no memory windows (max_mw 0)");
	return p;
}

static rv_mw *mw_new(struct conf_pair *p, rv_mw_type type)
{
	rv_mw *mw = NULL;
	int rc = rv_mw_alloc(p->b.pd, type, &mw);

	if (rc == -EOPNOTSUPP)
		conf_skip("memory windows of type %d: %s", (int)type, rv_error_last());
	if (rc < 0)
		fail_msg("rv_mw_alloc(type %d): %d %s", (int)type, rc, rv_error_last());
	conf_adopt_mw(mw);
	return mw;
}

/* Bind mw on B's QP to [off, off + len) of B's buffer; the bind completes. */
static void bind_ok(struct conf_pair *p, rv_mw *mw, size_t off, uint64_t len, uint32_t access, uint64_t wr_id)
{
	rv_mw_bind_info bi = {.mr = p->b.buf.mr, .addr = conf_addr(&p->b.buf, off), .length = len, .access = access};
	uint32_t before = rv_mw_rkey(mw);
	rv_wc wc;
	int rc;

	rc = rv_qp_bind_mw(p->b.qp, mw, &bi, wr_id, RV_SEND_SIGNALED);
	if (rc < 0)
		fail_msg("rv_qp_bind_mw: %d %s", rc, rv_error_last());
	/* Every bind gives the window a new rkey, never the MR's. */
	assert_int_not_equal(rv_mw_rkey(mw), before);
	assert_int_not_equal(rv_mw_rkey(mw), rv_mr_rkey(p->b.buf.mr));
	wc = conf_poll(p->b.cq);
	if (wc.wr_id != wr_id || wc.status != RV_WC_SUCCESS || wc.opcode != RV_WC_BIND_MW)
		fail_msg("bind completion: wr_id %llu status %s opcode %u", (unsigned long long)wc.wr_id,
			 rv_wc_status_str((int)wc.status), wc.opcode);
}

static void bind_window(struct conf_pair *p, rv_mw *mw, uint32_t access)
{
	bind_ok(p, mw, WIN_OFF, WIN_LEN, access, 500);
}

/* An RDMA WRITE or READ from A at B's buffer offset off through rkey. */
static void access_at(struct conf_pair *p, uint32_t opcode, size_t off, uint32_t len, uint32_t rkey, uint64_t wr_id)
{
	rv_sge g = conf_sge(&p->a.buf, opcode == RV_WR_RDMA_READ ? SINK_OFF : 0, len);
	rv_send_wr w = {.wr_id = wr_id,
			.sg_list = &g,
			.num_sge = 1,
			.opcode = opcode,
			.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE,
			.remote_addr = conf_addr(&p->b.buf, off),
			.rkey = rkey};

	conf_post(p->a.qp, &w);
}

/* WRITE the whole window from A's [0, WIN_LEN), READ 300 bytes of it back
 * into A's sink; both succeed and move exactly those bytes. */
static void write_and_read_through(struct conf_pair *p, rv_mw *mw)
{
	struct conf_range sink = {SINK_OFF, SINK_OFF + 300};

	access_at(p, RV_WR_RDMA_WRITE, WIN_OFF, WIN_LEN, rv_mw_rkey(mw), 1);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	access_at(p, RV_WR_RDMA_READ, WIN_OFF + 1000, 300, rv_mw_rkey(mw), 2);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(p->b.buf.p + WIN_OFF, p->a.buf.p, WIN_LEN);
	assert_memory_equal(p->a.buf.p + SINK_OFF, p->a.buf.p + 1000, 300);
	conf_buf_check(&p->b.buf, WIN_OFF, WIN_OFF + WIN_LEN);
	conf_buf_check_except(&p->a.buf, &sink, 1);
}

static void bind_write_read(rv_mw_type type)
{
	struct conf_pair *p = mw_pair_open();
	rv_mw *mw = mw_new(p, type);

	assert_int_equal(rv_mw_type_of(mw), type);
	bind_window(p, mw, RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ);
	write_and_read_through(p, mw);
}

static void type1_bind_write_read(void)
{
	bind_write_read(RV_MW_TYPE_1);
}

static void type2_bind_write_read(void)
{
	bind_write_read(RV_MW_TYPE_2);
}

/* One access the window must refuse: the WR completes with remote access
 * error, the QPs go to ERR, and no byte of either buffer changed. */
struct mw_violation {
	rv_mw_type type;
	uint32_t rights;  /* the window's */
	uint32_t opcode;  /* RDMA WRITE or READ */
	int64_t off;      /* from the window's start */
	uint32_t len;
};

static void refused_through_window(const struct mw_violation *v)
{
	struct conf_pair *p = mw_pair_open();
	rv_mw *mw = mw_new(p, v->type);

	bind_window(p, mw, v->rights);
	access_at(p, v->opcode, (size_t)((int64_t)WIN_OFF + v->off), v->len, rv_mw_rkey(mw), 7);
	if (conf_quirk("mw-bounds-are-the-mr's")) {
		/* The device's difference: the access succeeds inside the MR,
		 * moving exactly its bytes. */
		size_t off = (size_t)((int64_t)WIN_OFF + v->off);
		struct conf_range sink = {SINK_OFF, SINK_OFF + v->len};

		conf_expect(p->a.cq, 7, RV_WC_SUCCESS);
		assert_int_equal(rv_qp_state_of(p->a.qp), RV_QPS_RTS);
		if (v->opcode == RV_WR_RDMA_WRITE) {
			assert_memory_equal(p->b.buf.p + off, p->a.buf.p, v->len);
			conf_buf_check(&p->b.buf, off, off + v->len);
			conf_buf_check(&p->a.buf, 0, 0);
		} else {
			assert_memory_equal(p->a.buf.p + SINK_OFF, p->b.buf.p + off, v->len);
			conf_buf_check(&p->b.buf, 0, 0);
			conf_buf_check_except(&p->a.buf, &sink, 1);
		}
		return;
	}
	conf_expect(p->a.cq, 7, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_qp_state_of(p->a.qp), RV_QPS_ERR);
	conf_buf_check(&p->b.buf, 0, 0);
	conf_buf_check(&p->a.buf, 0, 0);
}

static void write_beyond_the_window_end(void)
{
	/* The MR goes on after the window: only the window's bounds refuse it. */
	struct mw_violation v = {RV_MW_TYPE_1, RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ, RV_WR_RDMA_WRITE,
				 WIN_LEN - 16, 32};
	refused_through_window(&v);
}

static void read_before_the_window_start(void)
{
	struct mw_violation v = {RV_MW_TYPE_2, RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ, RV_WR_RDMA_READ, -8,
				 16};
	refused_through_window(&v);
}

static void read_through_a_write_only_window(void)
{
	struct mw_violation v = {RV_MW_TYPE_2, RV_ACCESS_REMOTE_WRITE, RV_WR_RDMA_READ, 0, 16};
	refused_through_window(&v);
}

/* A WRITE through an rkey that no longer works: remote access error, and
 * B's buffer holds only what the earlier good WRITE of 64 bytes wrote. */
static void write_refused_after(struct conf_pair *p, uint32_t rkey)
{
	access_at(p, RV_WR_RDMA_WRITE, WIN_OFF + 4096, 64, rkey, 9);
	conf_expect(p->a.cq, 9, RV_WC_REM_ACCESS_ERR);
	conf_buf_check(&p->b.buf, WIN_OFF, WIN_OFF + 64);
}

/* A type 2 window invalidated by B's LOCAL_INV: the WR completes with
 * opcode LOCAL_INV, and A's next access through the rkey fails. */
static void local_invalidate_then_access_fails(void)
{
	struct conf_pair *p = mw_pair_open();
	rv_mw *mw = mw_new(p, RV_MW_TYPE_2);
	rv_send_wr inv = {.wr_id = 600, .opcode = RV_WR_LOCAL_INV, .send_flags = RV_SEND_SIGNALED};
	rv_wc wc;

	bind_window(p, mw, RV_ACCESS_REMOTE_WRITE);
	access_at(p, RV_WR_RDMA_WRITE, WIN_OFF, 64, rv_mw_rkey(mw), 1);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	inv.imm_data = rv_mw_rkey(mw);
	conf_post(p->b.qp, &inv);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 600);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_LOCAL_INV);
	write_refused_after(p, rv_mw_rkey(mw));
}

/* A's SEND with invalidate names B's type 2 window (bound on the QP that
 * receives): B's receive completes with RV_WC_WITH_INV and the rkey, and
 * A's next access through the rkey fails. */
static void send_with_invalidate_then_access_fails(void)
{
	struct conf_pair *p = mw_pair_open();
	rv_mw *mw = mw_new(p, RV_MW_TYPE_2);
	rv_sge r = conf_sge(&p->b.buf, 0, 4096), s = conf_sge(&p->a.buf, 1024, 100);
	rv_send_wr w = {.wr_id = 3,
			.sg_list = &s,
			.num_sge = 1,
			.opcode = RV_WR_SEND_WITH_INV,
			.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE};
	struct conf_range changed[2] = {{0, 100}, {WIN_OFF, WIN_OFF + 64}};
	rv_wc wc;

	bind_window(p, mw, RV_ACCESS_REMOTE_WRITE);
	access_at(p, RV_WR_RDMA_WRITE, WIN_OFF, 64, rv_mw_rkey(mw), 1);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	conf_post_recv(p->b.qp, 20, &r, 1);
	w.imm_data = rv_mw_rkey(mw);
	conf_post(p->a.qp, &w);
	conf_expect(p->a.cq, 3, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 20);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.byte_len, 100);
	if (conf_quirk("with-inv-in-kernel-bit"))
		assert_int_equal(wc.wc_flags & (RV_WC_WITH_INV | RV_WC_IP_CSUM_OK), RV_WC_IP_CSUM_OK);
	else
		assert_true(wc.wc_flags & RV_WC_WITH_INV);
	assert_int_equal(wc.imm_data, rv_mw_rkey(mw));
	assert_memory_equal(p->b.buf.p, p->a.buf.p + 1024, 100);
	access_at(p, RV_WR_RDMA_WRITE, WIN_OFF + 4096, 64, rv_mw_rkey(mw), 9);
	conf_expect(p->a.cq, 9, RV_WC_REM_ACCESS_ERR);
	conf_buf_check_except(&p->b.buf, changed, 2);
}

/* A type 1 window bound again with length 0 is unbound: A's next access
 * through its rkey (the one the unbind gave it) fails. */
static void type1_unbind_then_access_fails(void)
{
	struct conf_pair *p = mw_pair_open();
	rv_mw *mw = mw_new(p, RV_MW_TYPE_1);

	bind_window(p, mw, RV_ACCESS_REMOTE_WRITE);
	access_at(p, RV_WR_RDMA_WRITE, WIN_OFF, 64, rv_mw_rkey(mw), 1);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	bind_ok(p, mw, WIN_OFF, 0, 0, 501);
	write_refused_after(p, rv_mw_rkey(mw));
}

const struct conf_case conf_mw_cases[] = {
	{"type 1 window: bind, RDMA WRITE and READ through it", type1_bind_write_read},
	{"type 2 window: bind, RDMA WRITE and READ through it", type2_bind_write_read},
	{"remote access error: RDMA WRITE beyond the window's end (inside the MR)", write_beyond_the_window_end},
	{"remote access error: RDMA READ before the window's start (inside the MR)", read_before_the_window_start},
	{"remote access error: RDMA READ through a window without REMOTE_READ", read_through_a_write_only_window},
	{"LOCAL_INV of a type 2 window, then an access through it fails", local_invalidate_then_access_fails},
	{"SEND with invalidate of a type 2 window, then an access through it fails",
	 send_with_invalidate_then_access_fails},
	{"type 1 window unbound (zero-length bind), then an access through it fails", type1_unbind_then_access_fails},
	CONF_END,
};
