/*
 * XRC on soft0, end to end through the public API. A receiver context holds
 * an XRC domain with two XRC SRQs (each completing on its own CQ) and two
 * target QPs; two sender contexts each connect one initiator QP to one of
 * the targets. SENDs land in the SRQ they name, whichever target carries
 * them (so both SRQs sit behind one target QP); WRITE, READ and atomics
 * work as on RC; a SEND naming an SRQ of another domain, or no SRQ, fails
 * the initiator's WR with RV_WC_REM_INV_REQ_ERR and leaves the receiver
 * sane. Each test closes everything.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "soft-pair.h" /* open_ctx, now_ms, BUF */

#define NINI 2
#define NSRQ 2
#define SLOT 256u

/* Up to 10 s for n completions (a hang guard, not a timing check). */
static int poll_n(rv_cq *cq, rv_wc *wc, int n)
{
	int64_t end = now_ms() + 10000;
	int got = 0;

	while (got < n && now_ms() < end) {
		int k = rv_cq_poll(cq, wc + got, n - got);
		if (k < 0)
			return k;
		got += k;
		if (k == 0) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
	}
	return got;
}

struct rig {
	rv_context *rctx, *sctx[NINI];
	rv_xrcd *xrcd;
	rv_pd *rpd, *spd[NINI];
	rv_cq *rcq[NSRQ], *scq[NINI];
	rv_srq *srq[NSRQ];
	uint32_t srqn[NSRQ];
	rv_qp *tgt[NINI], *ini[NINI];
	rv_mr *rmr, *smr[NINI];
	uint8_t *rbuf, *sbuf[NINI];
};

static void rig_open(struct rig *r)
{
	const uint32_t racc = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ |
			      RV_ACCESS_REMOTE_ATOMIC;
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_BASE};

	memset(r, 0, sizeof(*r));
	r->rctx = open_ctx(0);
	assert_int_equal(rv_context_query_device(r->rctx, &da), 0);
	assert_true(da.device_cap_flags & (1u << 20)); /* IBV_DEVICE_XRC */
	assert_int_equal(rv_xrcd_new(r->rctx, NULL, &r->xrcd), 0);
	assert_int_equal(rv_pd_new(r->rctx, NULL, &r->rpd), 0);
	assert_int_equal(rv_mr_alloc(r->rpd, BUF, racc, NULL, &r->rmr), 0);
	r->rbuf = rv_mr_addr(r->rmr);
	for (int s = 0; s < NSRQ; s++) {
		rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC | RV_SRQ_INIT_ATTR_MAX_SGE, .max_sge = 2};

		assert_int_equal(rv_cq_new(r->rctx, NULL, &r->rcq[s]), 0);
		sa.xrcd = r->xrcd;
		sa.cq = r->rcq[s];
		assert_int_equal(rv_srq_new(r->rpd, &sa, &r->srq[s]), 0);
		assert_int_equal(rv_srq_num(r->srq[s], &r->srqn[s]), 0);
	}
	assert_int_not_equal(r->srqn[0], r->srqn[1]);
	for (int i = 0; i < NINI; i++) {
		rv_qp_init_attr ta = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_XRCD,
				      .qp_type = RV_QPT_XRC_RECV, .xrcd = r->xrcd};
		rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ,
				      .qp_type = RV_QPT_XRC_SEND};
		rv_endpoint et, ei;

		r->sctx[i] = open_ctx(0);
		assert_int_equal(rv_pd_new(r->sctx[i], NULL, &r->spd[i]), 0);
		assert_int_equal(rv_cq_new(r->sctx[i], NULL, &r->scq[i]), 0);
		assert_int_equal(rv_mr_alloc(r->spd[i], BUF, RV_ACCESS_LOCAL_WRITE, NULL, &r->smr[i]), 0);
		r->sbuf[i] = rv_mr_addr(r->smr[i]);
		ia.send_cq = r->scq[i];
		assert_int_equal(rv_qp_new(r->rpd, &ta, &r->tgt[i]), 0);
		assert_int_equal(rv_qp_new(r->spd[i], &ia, &r->ini[i]), 0);
		assert_int_equal(rv_qp_endpoint(r->tgt[i], &et), 0);
		assert_int_equal(rv_qp_endpoint(r->ini[i], &ei), 0);
		assert_int_equal(rv_qp_connect(r->tgt[i], &ei), 0);
		assert_int_equal(rv_qp_connect(r->ini[i], &et), 0);
	}
}

static void rig_close(struct rig *r)
{
	for (int i = 0; i < NINI; i++) {
		rv_qp_unref(r->ini[i]);
		rv_mr_unref(r->smr[i]);
		rv_cq_unref(r->scq[i]);
		rv_pd_unref(r->spd[i]);
		assert_int_equal(rv_context_close(r->sctx[i]), 0);
		rv_context_unref(r->sctx[i]);
	}
	/* The context closes the domain, its target QPs and its SRQs. */
	assert_int_equal(rv_context_close(r->rctx), 0);
	for (int i = 0; i < NINI; i++)
		rv_qp_unref(r->tgt[i]);
	for (int s = 0; s < NSRQ; s++) {
		rv_srq_unref(r->srq[s]);
		rv_cq_unref(r->rcq[s]);
	}
	rv_xrcd_unref(r->xrcd);
	rv_mr_unref(r->rmr);
	rv_pd_unref(r->rpd);
	rv_context_unref(r->rctx);
}

/* Post receive k of SRQ s: slot s * 64 + k, two SGEs of half a slot. */
static void srq_post(struct rig *r, int s, uint32_t k)
{
	uint8_t *p = r->rbuf + (size_t)(s * 64 + k) * SLOT;
	rv_sge g[2] = {{.addr = (uint64_t)(uintptr_t)p, .length = SLOT / 2, .lkey = rv_mr_lkey(r->rmr)},
		       {.addr = (uint64_t)(uintptr_t)(p + SLOT / 2), .length = SLOT / 2, .lkey = rv_mr_lkey(r->rmr)}};
	rv_recv_wr wr = {.wr_id = ((uint64_t)s << 32) | k, .sg_list = g, .num_sge = 2};
	size_t posted = 0;

	memset(p, 0, SLOT);
	assert_int_equal(rv_srq_post_recv(r->srq[s], &wr, 1, &posted), 0);
	assert_int_equal(posted, 1);
}

static uint8_t pattern(int i, uint32_t m, uint32_t b)
{
	return (uint8_t)(i * 71 + m * 13 + b);
}

/* Initiator i sends message m of len bytes to the SRQ numbered srqn. */
static void xrc_send(struct rig *r, int i, uint32_t m, uint32_t len, uint32_t srqn)
{
	uint8_t *p = r->sbuf[i] + (size_t)m * SLOT;
	rv_sge g = {.addr = (uint64_t)(uintptr_t)p, .length = len, .lkey = rv_mr_lkey(r->smr[i])};
	rv_send_wr wr = {.wr_id = ((uint64_t)i << 32) | m, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_SIGNALED, .remote_srqn = srqn};
	size_t n = 0;

	for (uint32_t b = 0; b < len; b++)
		p[b] = pattern(i, m, b);
	assert_int_equal(rv_qp_post_send(r->ini[i], &wr, 1, &n), 0);
}

static void expect_send_ok(struct rig *r, int i, int n)
{
	rv_wc wc[8];

	assert_int_equal(poll_n(r->scq[i], wc, n), n);
	for (int k = 0; k < n; k++)
		assert_int_equal(wc[k].status, RV_WC_SUCCESS);
}

static void test_soft_xrc__sends_land_in_the_srq_they_name(void **state)
{
	struct rig r;
	rv_wc wc[8];
	const uint32_t len = 200;

	(void)state;
	rig_open(&r);
	for (uint32_t k = 0; k < 3; k++) {
		srq_post(&r, 0, k);
		srq_post(&r, 1, k);
	}
	/* Initiator 0 reaches both SRQs through target 0; initiator 1 reaches SRQ 1 through target 1. */
	xrc_send(&r, 0, 0, len, r.srqn[0]);
	xrc_send(&r, 0, 1, len, r.srqn[1]);
	xrc_send(&r, 0, 2, len, r.srqn[0]);
	xrc_send(&r, 1, 3, len, r.srqn[1]);
	expect_send_ok(&r, 0, 3);
	expect_send_ok(&r, 1, 1);

	assert_int_equal(poll_n(r.rcq[0], wc, 2), 2);
	for (int k = 0; k < 2; k++) {
		uint8_t *p = r.rbuf + (size_t)k * SLOT; /* SRQ 0's WRs in posting order */
		uint32_t m = k == 0 ? 0 : 2;

		assert_int_equal(wc[k].status, RV_WC_SUCCESS);
		assert_int_equal(wc[k].opcode, RV_WC_RECV);
		assert_int_equal(wc[k].byte_len, len);
		assert_int_equal(wc[k].wr_id, (uint64_t)k);
		assert_int_equal(wc[k].qp_num, rv_qp_num(r.tgt[0]));
		for (uint32_t b = 0; b < len; b++)
			assert_int_equal(p[b], pattern(0, m, b));
	}
	assert_int_equal(poll_n(r.rcq[1], wc, 2), 2);
	for (int k = 0; k < 2; k++) {
		/* Which target delivered first is up to the two streams. */
		int i = wc[k].qp_num == rv_qp_num(r.tgt[0]) ? 0 : 1;
		uint32_t slot = (uint32_t)(wc[k].wr_id & 0xffffffff);
		uint8_t *p = r.rbuf + (size_t)(64 + slot) * SLOT;

		assert_int_equal(wc[k].status, RV_WC_SUCCESS);
		assert_int_equal(wc[k].wr_id >> 32, 1);
		assert_int_equal(wc[k].qp_num, rv_qp_num(r.tgt[i]));
		for (uint32_t b = 0; b < len; b++)
			assert_int_equal(p[b], pattern(i, i == 0 ? 1 : 3, b));
	}
	assert_int_equal(rv_cq_poll(r.rcq[0], wc, 8), 0);

	/* The builder names the SRQ too; immediate data arrives with it. */
	assert_int_equal(rv_qp_wr_start(r.ini[1]), 0);
	assert_int_equal(rv_qp_wr_send_imm(r.ini[1], 77, RV_SEND_SIGNALED, 0xabcd), 0);
	assert_int_equal(rv_qp_wr_set_sge(r.ini[1], rv_mr_lkey(r.smr[1]), (uint64_t)(uintptr_t)r.sbuf[1], 16), 0);
	assert_int_equal(rv_qp_wr_set_xrc_srqn(r.ini[1], r.srqn[0]), 0);
	assert_int_equal(rv_qp_wr_complete(r.ini[1], NULL), 0);
	expect_send_ok(&r, 1, 1);
	assert_int_equal(poll_n(r.rcq[0], wc, 1), 1);
	assert_int_equal(wc[0].status, RV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 2);
	assert_int_equal(wc[0].byte_len, 16);
	assert_true(wc[0].wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc[0].imm_data, 0xabcd);
	assert_int_equal(wc[0].qp_num, rv_qp_num(r.tgt[1]));
	rig_close(&r);
}

static void test_soft_xrc__write_read_and_atomics_work_as_on_rc(void **state)
{
	struct rig r;
	rv_wc wc[4];
	uint8_t *remote;
	uint64_t raddr;
	rv_sge g;
	rv_send_wr wr;
	size_t n;

	(void)state;
	rig_open(&r);
	remote = r.rbuf + BUF / 2;
	raddr = (uint64_t)(uintptr_t)remote;
	for (int b = 0; b < 100; b++)
		r.sbuf[0][b] = (uint8_t)(b ^ 0x5a);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)r.sbuf[0], .length = 100, .lkey = rv_mr_lkey(r.smr[0])};
	wr = (rv_send_wr){.wr_id = 1, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
			  .send_flags = RV_SEND_SIGNALED, .remote_addr = raddr, .rkey = rv_mr_rkey(r.rmr),
			  .remote_srqn = r.srqn[0]};
	assert_int_equal(rv_qp_post_send(r.ini[0], &wr, 1, &n), 0);
	expect_send_ok(&r, 0, 1);
	for (int b = 0; b < 100; b++)
		assert_int_equal(remote[b], (uint8_t)(b ^ 0x5a));

	/* READ it back into initiator 1's memory, through target 1. */
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)r.sbuf[1], .length = 100, .lkey = rv_mr_lkey(r.smr[1])};
	wr = (rv_send_wr){.wr_id = 2, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_READ,
			  .send_flags = RV_SEND_SIGNALED, .remote_addr = raddr, .rkey = rv_mr_rkey(r.rmr),
			  .remote_srqn = r.srqn[1]};
	assert_int_equal(rv_qp_post_send(r.ini[1], &wr, 1, &n), 0);
	assert_int_equal(poll_n(r.scq[1], wc, 1), 1);
	assert_int_equal(wc[0].status, RV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, RV_WC_RDMA_READ);
	assert_memory_equal(r.sbuf[1], remote, 100);

	/* Fetch and add on an aligned word. */
	memset(remote + 128, 0, 8);
	remote[128] = 40;
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)(r.sbuf[0] + 512), .length = 8, .lkey = rv_mr_lkey(r.smr[0])};
	wr = (rv_send_wr){.wr_id = 3, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_ATOMIC_FETCH_AND_ADD,
			  .send_flags = RV_SEND_SIGNALED, .remote_addr = raddr + 128, .rkey = rv_mr_rkey(r.rmr),
			  .compare_add = 2, .remote_srqn = r.srqn[0]};
	assert_int_equal(rv_qp_post_send(r.ini[0], &wr, 1, &n), 0);
	assert_int_equal(poll_n(r.scq[0], wc, 1), 1);
	assert_int_equal(wc[0].status, RV_WC_SUCCESS);
	assert_int_equal(r.sbuf[0][512], 40);
	assert_int_equal(remote[128], 42);
	/* Nothing completed on the receive side. */
	assert_int_equal(rv_cq_poll(r.rcq[0], wc, 4), 0);
	assert_int_equal(rv_cq_poll(r.rcq[1], wc, 4), 0);
	rig_close(&r);
}

/* A SEND naming srqn fails initiator 0's WR with RV_WC_REM_INV_REQ_ERR; the
 * receiver's SRQs keep their WRs and initiator 1 still reaches them. */
static void expect_refused(struct rig *r, uint32_t srqn)
{
	rv_wc wc[4];
	rv_qp_attr qa = {.mask = RV_QP_STATE};

	srq_post(r, 0, 0);
	xrc_send(r, 0, 0, 64, srqn);
	assert_int_equal(poll_n(r->scq[0], wc, 1), 1);
	assert_int_equal(wc[0].status, RV_WC_REM_INV_REQ_ERR);
	assert_int_equal(rv_qp_query(r->ini[0], &qa), 0);
	assert_int_equal(qa.qp_state, RV_QPS_ERR);
	assert_int_equal(rv_cq_poll(r->rcq[0], wc, 4), 0);
	xrc_send(r, 1, 1, 64, r->srqn[0]);
	expect_send_ok(r, 1, 1);
	assert_int_equal(poll_n(r->rcq[0], wc, 1), 1);
	assert_int_equal(wc[0].status, RV_WC_SUCCESS);
	assert_int_equal(wc[0].qp_num, rv_qp_num(r->tgt[1]));
}

static void test_soft_xrc__an_srq_of_another_domain_is_refused(void **state)
{
	struct rig r;
	rv_xrcd *other;
	rv_srq *foreign;
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC};
	uint32_t fn = 0;

	(void)state;
	rig_open(&r);
	assert_int_equal(rv_xrcd_new(r.rctx, NULL, &other), 0);
	sa.xrcd = other;
	sa.cq = r.rcq[0];
	assert_int_equal(rv_srq_new(r.rpd, &sa, &foreign), 0);
	assert_int_equal(rv_srq_num(foreign, &fn), 0);
	expect_refused(&r, fn);
	rv_srq_unref(foreign);
	rv_xrcd_unref(other);
	rig_close(&r);
}

static void test_soft_xrc__an_unknown_srq_number_is_refused(void **state)
{
	struct rig r;

	(void)state;
	rig_open(&r);
	expect_refused(&r, (r.srqn[0] ^ r.srqn[1]) | 0x800000);
	rig_close(&r);
}

static void test_soft_xrc__a_closed_srq_no_longer_receives(void **state)
{
	struct rig r;
	uint32_t gone;

	(void)state;
	rig_open(&r);
	gone = r.srqn[1];
	assert_int_equal(rv_srq_close(r.srq[1]), 0);
	expect_refused(&r, gone);
	rig_close(&r);
}

/* RDMA on a target is checked against its own PD or the PD of an XRC SRQ of
 * its domain (the SRQ's PD is what the IB spec checks); any other PD is a
 * remote access error. */
static void test_soft_xrc__rdma_uses_the_pds_of_the_domain(void **state)
{
	struct rig r;
	rv_pd *pd2, *pd3;
	rv_srq *srq2;
	rv_mr *mr2, *mr3;
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC};
	rv_sge g;
	rv_send_wr wr;
	rv_wc wc;
	size_t n;

	(void)state;
	rig_open(&r);
	assert_int_equal(rv_pd_new(r.rctx, NULL, &pd2), 0);
	assert_int_equal(rv_pd_new(r.rctx, NULL, &pd3), 0);
	sa.xrcd = r.xrcd;
	sa.cq = r.rcq[0];
	assert_int_equal(rv_srq_new(pd2, &sa, &srq2), 0);
	assert_int_equal(rv_mr_alloc(pd2, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &mr2), 0);
	assert_int_equal(rv_mr_alloc(pd3, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &mr3), 0);
	memset(r.sbuf[0], 0x3c, 64);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)r.sbuf[0], .length = 64, .lkey = rv_mr_lkey(r.smr[0])};
	wr = (rv_send_wr){.wr_id = 1, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
			  .send_flags = RV_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)rv_mr_addr(mr2),
			  .rkey = rv_mr_rkey(mr2), .remote_srqn = r.srqn[0]};
	assert_int_equal(rv_qp_post_send(r.ini[0], &wr, 1, &n), 0);
	expect_send_ok(&r, 0, 1);
	assert_int_equal(((uint8_t *)rv_mr_addr(mr2))[63], 0x3c);
	wr.wr_id = 2;
	wr.remote_addr = (uint64_t)(uintptr_t)rv_mr_addr(mr3);
	wr.rkey = rv_mr_rkey(mr3);
	assert_int_equal(rv_qp_post_send(r.ini[0], &wr, 1, &n), 0);
	assert_int_equal(poll_n(r.scq[0], &wc, 1), 1);
	assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
	assert_int_equal(((uint8_t *)rv_mr_addr(mr3))[0], 0);
	rv_mr_unref(mr2);
	rv_mr_unref(mr3);
	rv_srq_unref(srq2);
	rv_pd_unref(pd2);
	rv_pd_unref(pd3);
	rig_close(&r);
}

static void test_soft_xrc__roles_must_pair(void **state)
{
	rv_context *a = open_ctx(0), *b = open_ctx(0);
	rv_pd *pa, *pb;
	rv_cq *ca, *cb;
	rv_qp *ini, *rc;
	rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ, .qp_type = RV_QPT_XRC_SEND};
	rv_qp_init_attr ra = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_endpoint ei, er;

	(void)state;
	assert_int_equal(rv_pd_new(a, NULL, &pa), 0);
	assert_int_equal(rv_pd_new(b, NULL, &pb), 0);
	assert_int_equal(rv_cq_new(a, NULL, &ca), 0);
	assert_int_equal(rv_cq_new(b, NULL, &cb), 0);
	ia.send_cq = ca;
	ra.send_cq = cb;
	assert_int_equal(rv_qp_new(pa, &ia, &ini), 0);
	assert_int_equal(rv_qp_new(pb, &ra, &rc), 0);
	assert_int_equal(rv_qp_endpoint(ini, &ei), 0);
	assert_int_equal(rv_qp_endpoint(rc, &er), 0);
	/* The helper refuses the pair before any connection is tried. */
	assert_int_equal(rv_qp_connect(ini, &er), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "XRC target"));
	assert_int_equal(rv_qp_connect(rc, &ei), -EINVAL);
	rv_qp_unref(ini);
	rv_qp_unref(rc);
	rv_cq_unref(ca);
	rv_cq_unref(cb);
	rv_pd_unref(pa);
	rv_pd_unref(pb);
	assert_int_equal(rv_context_close(a), 0);
	assert_int_equal(rv_context_close(b), 0);
	rv_context_unref(a);
	rv_context_unref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_xrc__sends_land_in_the_srq_they_name),
		cmocka_unit_test(test_soft_xrc__write_read_and_atomics_work_as_on_rc),
		cmocka_unit_test(test_soft_xrc__an_srq_of_another_domain_is_refused),
		cmocka_unit_test(test_soft_xrc__an_unknown_srq_number_is_refused),
		cmocka_unit_test(test_soft_xrc__a_closed_srq_no_longer_receives),
		cmocka_unit_test(test_soft_xrc__rdma_uses_the_pds_of_the_domain),
		cmocka_unit_test(test_soft_xrc__roles_must_pair),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
