/*
 * Conformance: the work-request builder (rv_qp_wr_*). A batch built one call
 * per operation moves the same bytes and completes the same way as the
 * array API: SEND, SEND with immediate, WRITE over an SGE list, WRITE with
 * immediate, READ, both atomics, inline data copied when it is set, a UD
 * SEND addressed with rv_qp_wr_set_ud_addr. Misuse is refused with a named
 * error and posts nothing; an abort posts nothing; atomic write is refused
 * with -EOPNOTSUPP.
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

#define QKEY 0x22222222u

/* SEND, SEND_WITH_IMM, WRITE (two SGEs), WRITE_WITH_IMM, READ in one batch. */
static void builder_batch_of_operations(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint32_t rkey = rv_mr_rkey(p->b.buf.mr), lkey = rv_mr_lkey(p->a.buf.mr);
	rv_sge two[2] = {conf_sge(&p->a.buf, 1000, 50), conf_sge(&p->a.buf, 3000, 70)};
	size_t posted = 99;
	rv_wc wc;

	for (uint64_t k = 0; k < 3; k++) {
		rv_sge r = conf_sge(&p->b.buf, 100000 + (size_t)k * 1024, 1024);
		conf_post_recv(p->b.qp, 500 + k, &r, 1);
	}
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_send(p->a.qp, 1, RV_SEND_SIGNALED), 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 0), 100), 0);
	assert_int_equal(rv_qp_wr_send_imm(p->a.qp, 2, RV_SEND_SIGNALED, 0xabcd1234u), 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 200), 10), 0);
	assert_int_equal(rv_qp_wr_rdma_write(p->a.qp, 3, RV_SEND_SIGNALED, rkey, conf_addr(&p->b.buf, 20000)), 0);
	assert_int_equal(rv_qp_wr_set_sge_list(p->a.qp, two, 2), 0);
	two[0].length = 1; /* copied at the call: changing it now changes nothing */
	assert_int_equal(rv_qp_wr_rdma_write_imm(p->a.qp, 4, RV_SEND_SIGNALED, rkey, conf_addr(&p->b.buf, 30000),
						 77),
			 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 5000), 33), 0);
	assert_int_equal(rv_qp_wr_rdma_read(p->a.qp, 5, RV_SEND_SIGNALED, rkey, conf_addr(&p->b.buf, 40000)), 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 60000), 200), 0);
	assert_int_equal(rv_qp_wr_complete(p->a.qp, &posted), 0);
	assert_int_equal(posted, 5);
	for (uint64_t k = 1; k <= 5; k++)
		conf_expect(p->a.cq, k, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 500);
	assert_int_equal(wc.byte_len, 100);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 501);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xabcd1234u);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 502);
	assert_int_equal(wc.opcode, RV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 77);
	assert_memory_equal(p->b.buf.p + 100000, p->a.buf.p, 100);
	assert_memory_equal(p->b.buf.p + 101024, p->a.buf.p + 200, 10);
	assert_memory_equal(p->b.buf.p + 20000, p->a.buf.p + 1000, 50);
	assert_memory_equal(p->b.buf.p + 20050, p->a.buf.p + 3000, 70);
	assert_memory_equal(p->b.buf.p + 30000, p->a.buf.p + 5000, 33);
	assert_memory_equal(p->a.buf.p + 60000, p->b.buf.p + 40000, 200);
	conf_buf_check_except(&p->b.buf,
			      (const struct conf_range[]){{20000, 20120}, {30000, 30033}, {100000, 100100},
							  {101024, 101034}},
			      4);
}

static void builder_atomics(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint32_t rkey = rv_mr_rkey(p->b.buf.mr), lkey = rv_mr_lkey(p->a.buf.mr);
	uint64_t target = 40, got;
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_BASE};

	assert_int_equal(rv_context_query_device(p->a.ctx, &da), 0);
	if (da.atomic_cap == RV_ATOMIC_NONE)
		conf_skip("the device reports atomic_cap NONE (no atomics)");
	memcpy(p->b.buf.p + 4096, &target, 8);
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_atomic_fetch_add(p->a.qp, 1, RV_SEND_SIGNALED, rkey, conf_addr(&p->b.buf, 4096), 2),
			 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 8192), 8), 0);
	assert_int_equal(rv_qp_wr_atomic_cmp_swp(p->a.qp, 2, RV_SEND_SIGNALED | RV_SEND_FENCE, rkey,
						 conf_addr(&p->b.buf, 4096), 42, 1000),
			 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 8200), 8), 0);
	assert_int_equal(rv_qp_wr_complete(p->a.qp, NULL), 0);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	memcpy(&got, p->a.buf.p + 8192, 8);
	assert_int_equal(got, 40);
	memcpy(&got, p->a.buf.p + 8200, 8);
	assert_int_equal(got, 42);
	memcpy(&got, p->b.buf.p + 4096, 8);
	assert_int_equal(got, 1000);
}

/* Inline bytes are taken when set: the caller's buffer may change before complete. */
static void builder_inline_copied_when_set(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint8_t msg[40], part2[8];
	rv_sge bufs[2];
	rv_wc wc;

	if (p->a.cap.max_inline_data < sizeof(msg) + sizeof(part2))
		conf_skip("max_inline_data %u is below 48 bytes", p->a.cap.max_inline_data);
	for (uint64_t k = 0; k < 2; k++) {
		rv_sge r = conf_sge(&p->b.buf, (size_t)k * 1024, 1024);
		conf_post_recv(p->b.qp, 10 + k, &r, 1);
	}
	memset(msg, 'a', sizeof(msg));
	memset(part2, 'b', sizeof(part2));
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_send(p->a.qp, 1, RV_SEND_SIGNALED), 0);
	assert_int_equal(rv_qp_wr_set_inline_data(p->a.qp, msg, sizeof(msg)), 0);
	assert_int_equal(rv_qp_wr_send(p->a.qp, 2, RV_SEND_SIGNALED), 0);
	bufs[0] = (rv_sge){.addr = (uintptr_t)msg, .length = 4, .lkey = 0};
	bufs[1] = (rv_sge){.addr = (uintptr_t)part2, .length = sizeof(part2), .lkey = 0};
	assert_int_equal(rv_qp_wr_set_inline_data_list(p->a.qp, bufs, 2), 0);
	memset(msg, 'z', sizeof(msg));
	memset(part2, 'z', sizeof(part2));
	assert_int_equal(rv_qp_wr_complete(p->a.qp, NULL), 0);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.byte_len, 40);
	for (int i = 0; i < 40; i++)
		assert_int_equal(p->b.buf.p[i], 'a');
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.byte_len, 12);
	assert_memory_equal(p->b.buf.p + 1024, "aaaabbbbbbbb", 12);
}

static void builder_ud_send(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.qp_type = RV_QPT_UD, .no_connect = true});
	rv_qp_attr a = {.mask = RV_QP_QKEY, .qkey = QKEY};
	rv_ah *ah = NULL;
	rv_sge g;
	rv_wc wc;

	for (int i = 0; i < 2; i++) {
		rv_qp *qp = i ? p->b.qp : p->a.qp;
		assert_int_equal(rv_qp_to_init(qp, &a), 0);
		assert_int_equal(rv_qp_to_rtr(qp, NULL), 0);
		assert_int_equal(rv_qp_to_rts(qp, NULL), 0);
	}
	ah = conf_ah_to(&p->a, &p->b);
	g = conf_sge(&p->b.buf, 4096, RV_UD_GRH_LEN + 256);
	conf_post_recv(p->b.qp, 100, &g, 1);
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_send(p->a.qp, 1, RV_SEND_SIGNALED), 0);
	assert_int_equal(rv_qp_wr_set_ud_addr(p->a.qp, NULL, rv_qp_num(p->b.qp), QKEY), -EINVAL);
	assert_int_equal(rv_qp_wr_set_ud_addr(p->a.qp, ah, rv_qp_num(p->b.qp), QKEY), 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, rv_mr_lkey(p->a.buf.mr), conf_addr(&p->a.buf, 0), 100), 0);
	assert_int_equal(rv_qp_wr_complete(p->a.qp, NULL), 0);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 100);
	assert_int_equal(wc.src_qp, rv_qp_num(p->a.qp));
	assert_memory_equal(p->b.buf.p + 4096 + RV_UD_GRH_LEN, p->a.buf.p, 100);
	rv_ah_unref(ah);
}

/* Each misuse is refused by name and posts nothing. */
static void builder_misuse_refused(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint32_t lkey = rv_mr_lkey(p->a.buf.mr);
	uint64_t value = 7;
	size_t posted = 99;

	assert_int_equal(rv_qp_wr_send(p->a.qp, 1, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "rv_qp_wr_start"));
	assert_int_equal(rv_qp_wr_complete(p->a.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_start(p->a.qp), -EBUSY);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 0), 8), -EINVAL);
	assert_int_equal(rv_qp_wr_send(p->a.qp, 1, RV_SEND_SIGNALED), 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 0), 8), 0);
	assert_int_equal(rv_qp_wr_set_sge(p->a.qp, lkey, conf_addr(&p->a.buf, 0), 8), -EINVAL);
	assert_int_equal(rv_qp_wr_set_inline_data(p->a.qp, NULL, 4), -EINVAL);
	assert_int_equal(rv_qp_wr_set_sge_list(p->a.qp, NULL, 1), -EINVAL);
	assert_int_equal(rv_qp_wr_set_ud_addr(p->a.qp, NULL, 1, 1), -EINVAL); /* an RC QP */
	assert_int_equal(rv_qp_wr_atomic_write(p->a.qp, 2, 0, 1, conf_addr(&p->b.buf, 0), NULL), -EINVAL);
	assert_int_equal(rv_qp_wr_atomic_write(p->a.qp, 2, 0, 1, conf_addr(&p->b.buf, 0), &value), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "atomic write"));
	/* Abort: nothing was posted. */
	assert_int_equal(rv_qp_wr_abort(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_complete(p->a.qp, NULL), -EINVAL);
	conf_expect_none(p->a.cq, 50);
	/* An empty batch posts nothing and succeeds. */
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_complete(p->a.qp, &posted), 0);
	assert_int_equal(posted, 0);
	/* An invalid WR is refused by rv_qp_post_send's validation: too many SGEs. */
	{
		rv_sge many[64];

		for (int i = 0; i < 64; i++)
			many[i] = conf_sge(&p->a.buf, (size_t)i * 8, 8);
		assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
		assert_int_equal(rv_qp_wr_send(p->a.qp, 3, RV_SEND_SIGNALED), 0);
		assert_int_equal(rv_qp_wr_set_sge_list(p->a.qp, many, 64), 0);
		assert_int_equal(rv_qp_wr_complete(p->a.qp, &posted), -EINVAL);
		assert_int_equal(posted, 0);
	}
	/* The batch is closed after a failed complete. */
	assert_int_equal(rv_qp_wr_start(p->a.qp), 0);
	assert_int_equal(rv_qp_wr_abort(p->a.qp), 0);
	conf_expect_none(p->a.cq, 50);
	assert_int_equal(rv_qp_wr_start(NULL), -EINVAL);
	assert_int_equal(rv_qp_wr_abort(NULL), -EINVAL);
}

const struct conf_case conf_wr_builder_cases[] = {
	{"a batch of SEND, SEND_WITH_IMM, WRITE (2 SGEs), WRITE_WITH_IMM, READ", builder_batch_of_operations},
	{"atomics through the builder", builder_atomics},
	{"inline data copied when it is set", builder_inline_copied_when_set},
	{"UD SEND addressed by rv_qp_wr_set_ud_addr", builder_ud_send},
	{"builder misuse refused, abort posts nothing", builder_misuse_refused},
	CONF_END,
};
