/*
 * Conformance: immediate data and atomics (RFC 7306 on soft0). SEND and
 * RDMA WRITE with immediate; fetch-and-add and compare-and-swap (a swap that
 * happens and one that does not); several QPs adding to one counter at once;
 * an atomic on an MR without REMOTE_ATOMIC. A device without the operation
 * skips: atomic_cap NONE, or -EOPNOTSUPP when the WR is posted.
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

static rv_send_wr wr_of(uint64_t id, uint32_t opcode, const rv_sge *sg, uint32_t n)
{
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = opcode;
	w.sg_list = sg;
	w.num_sge = n;
	w.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	return w;
}

/* Post, skipping the case when the device lacks the operation. */
static void post_or_skip(rv_qp *qp, const rv_send_wr *w, const char *what)
{
	int rc = rv_qp_post_send(qp, w, 1, NULL);

	if (rc == -EOPNOTSUPP)
		conf_skip("%s: %s", what, rv_error_last());
	if (rc < 0)
		fail_msg("rv_qp_post_send(%s): %d %s", what, rc, rv_error_last());
}

static void need_atomics(struct conf_side *s)
{
	rv_device_attr da;

	memset(&da, 0, sizeof(da));
	da.mask = RV_DEVICE_ATTR_ALL;
	assert_int_equal(rv_context_query_device(s->ctx, &da), 0);
	if (da.atomic_cap == RV_ATOMIC_NONE)
		conf_skip("the device reports atomic_cap NONE (no atomics)");
}

/* ---- immediate data ---- */

static void send_with_immediate(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w;
	rv_sge r, s;
	rv_wc wc;

	r = conf_sge(&p->b.buf, 0, 64);
	conf_post_recv(p->b.qp, 1, &r, 1);
	s = conf_sge(&p->a.buf, 100, 20);
	w = wr_of(2, RV_WR_SEND_WITH_IMM, &s, 1);
	w.imm_data = 0x12345678u;
	post_or_skip(p->a.qp, &w, "SEND with immediate");
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0x12345678u);
	assert_int_equal(wc.byte_len, 20);
	assert_memory_equal(p->b.buf.p, p->a.buf.p + 100, 20);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	conf_buf_check(&p->b.buf, 0, 20);
}

/* RDMA WRITE with immediate: the data goes to the remote address, the
 * immediate consumes a receive whose buffer stays untouched. */
static void write_with_immediate(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w;
	rv_sge r, s;
	rv_wc wc;

	r = conf_sge(&p->b.buf, 0, 64);
	conf_post_recv(p->b.qp, 1, &r, 1);
	s = conf_sge(&p->a.buf, 0, 3000);
	w = wr_of(2, RV_WR_RDMA_WRITE_WITH_IMM, &s, 1);
	w.imm_data = 0xcafef00du;
	w.remote_addr = conf_addr(&p->b.buf, 10000);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	post_or_skip(p->a.qp, &w, "RDMA WRITE with immediate");
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV_RDMA_WITH_IMM);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xcafef00du);
	assert_int_equal(wc.byte_len, 3000);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(p->b.buf.p + 10000, p->a.buf.p, 3000);
	conf_buf_check(&p->b.buf, 10000, 13000); /* the receive buffer [0, 64) too */
}

/* ---- atomics ---- */

static uint64_t *target_word(struct conf_pair *p, size_t off)
{
	return (uint64_t *)(void *)(p->b.buf.p + off);
}

static void fetch_and_add(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w;
	rv_sge s;
	rv_wc wc;
	uint64_t old;

	need_atomics(&p->a);
	*target_word(p, 64) = 1000;
	s = conf_sge(&p->a.buf, 8, 8);
	w = wr_of(1, RV_WR_ATOMIC_FETCH_AND_ADD, &s, 1);
	w.remote_addr = conf_addr(&p->b.buf, 64);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	w.compare_add = 234;
	post_or_skip(p->a.qp, &w, "fetch and add");
	wc = conf_poll(p->a.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_FETCH_ADD);
	assert_int_equal(wc.byte_len, 8);
	memcpy(&old, p->a.buf.p + 8, 8);
	assert_int_equal(old, 1000);
	assert_int_equal(*target_word(p, 64), 1234);
	{
		struct conf_range r = {64, 72};
		conf_buf_check_except(&p->b.buf, &r, 1);
	}
	conf_buf_check(&p->a.buf, 8, 16);
	conf_expect_none(p->b.cq, 10);
}

static void compare_and_swap(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w;
	rv_sge s;
	rv_wc wc;
	uint64_t old;

	need_atomics(&p->a);
	*target_word(p, 128) = 77;
	s = conf_sge(&p->a.buf, 0, 8);
	w = wr_of(1, RV_WR_ATOMIC_CMP_AND_SWP, &s, 1);
	w.remote_addr = conf_addr(&p->b.buf, 128);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	w.compare_add = 76; /* differs: no swap */
	w.swap = 5;
	post_or_skip(p->a.qp, &w, "compare and swap");
	wc = conf_poll(p->a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_COMP_SWAP);
	memcpy(&old, p->a.buf.p, 8);
	assert_int_equal(old, 77);
	assert_int_equal(*target_word(p, 128), 77);
	w.wr_id = 2;
	w.compare_add = 77; /* equal: swapped */
	conf_post(p->a.qp, &w);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	memcpy(&old, p->a.buf.p, 8);
	assert_int_equal(old, 77);
	assert_int_equal(*target_word(p, 128), 5);
	{
		struct conf_range r = {128, 136};
		conf_buf_check_except(&p->b.buf, &r, 1);
	}
}

/* Several QPs add 1 to one counter at once, many times: the counter ends at
 * the total and every fetched value 0..total-1 was returned exactly once. */
static void fetch_and_add_from_several_qps(void)
{
	enum { QPS = 4, ADDS = 64, TOTAL = QPS * ADDS };
	struct conf_pair *p = conf_pair_open(NULL);
	rv_qp *qa[QPS] = {NULL}, *qb[QPS] = {NULL};
	static uint8_t seen[TOTAL];
	rv_send_wr w;
	rv_sge s;

	need_atomics(&p->a);
	*target_word(p, 0) = 0;
	/* Probe on the pair's own QP first, so that a skip leaves nothing open. */
	s = conf_sge(&p->a.buf, 0, 8);
	w = wr_of(999, RV_WR_ATOMIC_FETCH_AND_ADD, &s, 1);
	w.remote_addr = conf_addr(&p->b.buf, 0);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	w.compare_add = 0;
	post_or_skip(p->a.qp, &w, "fetch and add");
	conf_expect(p->a.cq, 999, RV_WC_SUCCESS);

	for (int q = 0; q < QPS; q++) {
		rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .cap = {
			.max_send_wr = ADDS, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
		rv_endpoint ea, eb;

		ia.send_cq = p->a.cq;
		assert_int_equal(rv_qp_new(p->a.pd, &ia, &qa[q]), 0);
		conf_adopt_qp(qa[q]);
		ia.send_cq = p->b.cq;
		assert_int_equal(rv_qp_new(p->b.pd, &ia, &qb[q]), 0);
		conf_adopt_qp(qb[q]);
		assert_int_equal(rv_qp_endpoint(qa[q], &ea), 0);
		assert_int_equal(rv_qp_endpoint(qb[q], &eb), 0);
		assert_int_equal(rv_qp_connect(qa[q], &eb), 0);
		assert_int_equal(rv_qp_connect(qb[q], &ea), 0);
	}
	/* All posted before any is polled: the adds of the QPs interleave. */
	for (int i = 0; i < ADDS; i++) {
		for (int q = 0; q < QPS; q++) {
			size_t slot = 4096 + ((size_t)q * ADDS + (size_t)i) * 8;
			s = conf_sge(&p->a.buf, slot, 8);
			w = wr_of((uint64_t)q * ADDS + (uint64_t)i, RV_WR_ATOMIC_FETCH_AND_ADD, &s, 1);
			w.remote_addr = conf_addr(&p->b.buf, 0);
			w.rkey = rv_mr_rkey(p->b.buf.mr);
			w.compare_add = 1;
			conf_post(qa[q], &w);
		}
	}
	memset(seen, 0, sizeof(seen));
	for (int n = 0; n < TOTAL; n++) {
		rv_wc wc = conf_poll(p->a.cq);
		uint64_t v;
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_true(wc.wr_id < TOTAL);
		memcpy(&v, p->a.buf.p + 4096 + wc.wr_id * 8, 8);
		assert_true(v < TOTAL);
		assert_int_equal(seen[v], 0);
		seen[v] = 1;
	}
	assert_int_equal(*target_word(p, 0), TOTAL);
	{
		struct conf_range r = {0, 8};
		conf_buf_check_except(&p->b.buf, &r, 1);
	}
}

/* An atomic on an MR without REMOTE_ATOMIC: remote access error, the word
 * unchanged. */
static void atomic_without_remote_atomic(void)
{
	struct conf_opts o = {.b_access = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ};
	struct conf_pair *p = conf_pair_open(&o);
	rv_send_wr w;
	rv_sge s;

	need_atomics(&p->a);
	s = conf_sge(&p->a.buf, 0, 8);
	w = wr_of(1, RV_WR_ATOMIC_FETCH_AND_ADD, &s, 1);
	w.remote_addr = conf_addr(&p->b.buf, 64);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	w.compare_add = 1;
	post_or_skip(p->a.qp, &w, "fetch and add");
	conf_expect(p->a.cq, 1, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_qp_state_of(p->a.qp), RV_QPS_ERR);
	conf_buf_check(&p->b.buf, 0, 0);
	conf_buf_check(&p->a.buf, 0, 0);
}

const struct conf_case conf_atomics_cases[] = {
	{"SEND with immediate data", send_with_immediate},
	{"RDMA WRITE with immediate data", write_with_immediate},
	{"atomic fetch and add", fetch_and_add},
	{"atomic compare and swap, equal and different", compare_and_swap},
	{"atomic fetch and add from 4 QPs on one counter", fetch_and_add_from_several_qps},
	{"remote access error: atomic on an MR without REMOTE_ATOMIC", atomic_without_remote_atomic},
	CONF_END,
};
