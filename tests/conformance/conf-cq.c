/*
 * Conformance: resizing a CQ (rv_cq_resize) that holds completions. The
 * completions it holds stay, in order, whether it grows or shrinks; a size
 * below what it holds is refused (-EINVAL) and loses nothing. B's CQ gets
 * only B's receive completions (B posts no sends).
 *
 * To know the CQ holds k completions without polling it, A follows its k
 * SENDs with an RDMA READ of B's memory: the READ's response comes after B
 * processed the SENDs, whose completions are then in B's CQ. A device that
 * cannot resize CQs skips.
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

#define MSG 100u
#define SLOT 1024u
#define N_RECV 32u

/* B posts N_RECV receives, wr_id k into slot k. */
static void post_receives(struct conf_pair *p)
{
	for (uint64_t k = 0; k < N_RECV; k++) {
		rv_sge g = conf_sge(&p->b.buf, (size_t)k * SLOT, SLOT);
		conf_post_recv(p->b.qp, k, &g, 1);
	}
}

/* A sends messages [first, first + n) (message m from A's offset MSG * m),
 * then READs 8 bytes of B's buffer: when the READ completes, B's CQ holds
 * the n receive completions. */
static void send_and_settle(struct conf_pair *p, uint32_t first, uint32_t n)
{
	rv_sge r = conf_sge(&p->a.buf, 256 * 1024, 8);

	for (uint32_t m = first; m < first + n; m++) {
		rv_sge g = conf_sge(&p->a.buf, (size_t)MSG * m, MSG);
		assert_int_equal(rv_qp_send(p->a.qp, &g, 100 + m), 0);
	}
	assert_int_equal(rv_qp_read(p->a.qp, &r, conf_addr(&p->b.buf, 512 * 1024 - 8), rv_mr_rkey(p->b.buf.mr), 99),
			 0);
	for (uint32_t m = first; m < first + n; m++)
		conf_expect(p->a.cq, 100 + m, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 99, RV_WC_SUCCESS);
}

/* Poll B's receive completions of messages [first, first + n), in order. */
static void expect_in_order(struct conf_pair *p, uint32_t first, uint32_t n)
{
	for (uint32_t m = first; m < first + n; m++) {
		rv_wc wc = conf_poll(p->b.cq);

		if (wc.wr_id != m || wc.status != RV_WC_SUCCESS)
			fail_msg("receive completion %u: wr_id %llu status %s", m, (unsigned long long)wc.wr_id,
				 rv_wc_status_str((int)wc.status));
		assert_int_equal(wc.opcode, RV_WC_RECV);
		assert_int_equal(wc.byte_len, MSG);
		assert_memory_equal(p->b.buf.p + (size_t)m * SLOT, p->a.buf.p + (size_t)MSG * m, MSG);
	}
}

static void check_b(struct conf_pair *p, uint32_t n)
{
	struct conf_range r[N_RECV];

	for (uint32_t m = 0; m < n; m++)
		r[m] = (struct conf_range){(size_t)m * SLOT, (size_t)m * SLOT + MSG};
	conf_buf_check_except(&p->b.buf, r, (int)n);
}

static void resize_or_skip(rv_cq *cq, uint32_t cqe)
{
	int rc = rv_cq_resize(cq, cqe);

	if (rc == -EOPNOTSUPP)
		conf_skip("resizing a CQ: %s", rv_error_last());
	if (rc < 0)
		fail_msg("rv_cq_resize(%u): %d %s", cqe, rc, rv_error_last());
	assert_true(rv_cq_size(cq) >= cqe);
}

/* Three completions held: grown to 64, then five more arrive; shrunk to
 * what it holds (8), then polled: all 8 in order; shrunk to 16 while
 * empty, 6 more arrive and are polled in order. */
static void resize_keeps_completions_in_order(void)
{
	struct conf_pair *p = conf_pair_open(NULL);

	post_receives(p);
	send_and_settle(p, 0, 3);
	resize_or_skip(p->b.cq, 64);
	send_and_settle(p, 3, 5);
	resize_or_skip(p->b.cq, 8);
	expect_in_order(p, 0, 8);
	resize_or_skip(p->b.cq, 16);
	send_and_settle(p, 8, 6);
	expect_in_order(p, 8, 6);
	assert_int_equal(rv_qp_state_of(p->b.qp), RV_QPS_RTS);
	check_b(p, 14);
}

/* Five completions held: a resize to 4 is refused with -EINVAL, the size is
 * unchanged and the five are still there, in order; so are 0 and a size
 * above the device's max_cqe. */
static void resize_below_what_it_holds_is_refused(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	uint32_t size = rv_cq_size(p->b.cq);
	int rc;

	assert_int_equal(rv_context_query_device(p->b.ctx, &da), 0);
	post_receives(p);
	send_and_settle(p, 0, 5);
	rc = rv_cq_resize(p->b.cq, 4);
	if (rc == -EOPNOTSUPP)
		conf_skip("resizing a CQ: %s", rv_error_last());
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(rv_cq_size(p->b.cq), size);
	assert_int_equal(rv_cq_resize(p->b.cq, 0), -EINVAL);
	if (da.max_cqe < UINT32_MAX)
		assert_int_equal(rv_cq_resize(p->b.cq, da.max_cqe + 1), -EINVAL);
	assert_int_equal(rv_cq_size(p->b.cq), size);
	expect_in_order(p, 0, 5);
	/* Nothing was lost or left behind: the next message is the sixth. */
	send_and_settle(p, 5, 1);
	expect_in_order(p, 5, 1);
	check_b(p, 6);
}

const struct conf_case conf_cq_cases[] = {
	{"CQ resize keeps the completions it holds, in order (grow, shrink to what it holds)",
	 resize_keeps_completions_in_order},
	{"CQ resize below what it holds, to 0 or above max_cqe is refused, nothing lost",
	 resize_below_what_it_holds_is_refused},
	CONF_END,
};
