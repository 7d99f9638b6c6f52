/*
 * soft0's protocol negotiation end to end through the public API: MPA
 * revision 2 with IRD/ORD (RFC 6581), the CRC negotiated per context, and
 * the errors a NIC gives for READs its peer does not accept. Two contexts on
 * 127.0.0.1, one QP each; every test closes everything.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "soft-pair.h"

/* SEND, WRITE and READ between a and b; all succeed with the right bytes. */
static void traffic(struct side *a, struct side *b, unsigned seed)
{
	rv_sge g;
	rv_wc wc;

	fill(a->buf, 3000, seed);
	g = sge(b, 8192, 4096);
	assert_int_equal(rv_qp_recv(b->qp, &g, 1), 0);
	g = sge(a, 0, 3000);
	assert_int_equal(rv_qp_send(a->qp, &g, 2), 0);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	wc = poll_one(b->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(b->buf + 8192, a->buf, 3000);

	g = sge(a, 0, 3000);
	assert_int_equal(rv_qp_write(a->qp, &g, (uint64_t)(uintptr_t)(b->buf + 16384), rv_mr_rkey(b->mr), 3), 0);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_memory_equal(b->buf + 16384, a->buf, 3000);

	fill(b->buf + 24576, 5000, seed + 1);
	g = sge(a, 32768, 5000);
	assert_int_equal(rv_qp_read(a->qp, &g, (uint64_t)(uintptr_t)(b->buf + 24576), rv_mr_rkey(b->mr), 4), 0);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_memory_equal(a->buf + 32768, b->buf + 24576, 5000);
}

/* CRC required or optional on either side: every combination connects and
 * moves data (CRC on unless both sides make it optional). */
static void test_soft_ext__crc_negotiation(void **state)
{
	(void)state;
	for (int combo = 0; combo < 4; combo++) {
		struct side a, b;
		side_open(&a, (combo & 1) ? RV_SOFT_CRC_OPTIONAL : 0, RV_ACCESS_ALL_REMOTE);
		side_open(&b, (combo & 2) ? RV_SOFT_CRC_OPTIONAL : 0, RV_ACCESS_ALL_REMOTE);
		connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
		traffic(&a, &b, (unsigned)combo);
		traffic(&b, &a, (unsigned)combo + 10);
		side_close(&a);
		side_close(&b);
	}
}

static void test_soft_ext__bad_context_flags(void **state)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;
	rv_context_attr a = {.mask = RV_CONTEXT_ATTR_SOFT_FLAGS, .soft_flags = 1u << 7};

	(void)state;
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &a, &ctx), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "soft_flags"));
	assert_null(ctx);
	rv_device_unref(dev);
}

/* A READ to a QP that accepts none (max_dest_rd_atomic 0): remote invalid
 * request on the READ, the requester's QP in ERR, later work flushed. */
static void test_soft_ext__read_to_ird_zero(void **state)
{
	struct side a, b;
	struct conn_opts ob = DEFAULTS;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	ob.max_dest_rd_atomic = 0;
	connect_pair(&a, &DEFAULTS, &b, &ob);
	/* WRITEs still work: IRD concerns READs. */
	g = sge(&a, 0, 100);
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf, rv_mr_rkey(b.mr), 1), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	memset(b.buf + 4096, 0x5a, 64);
	g = sge(&a, 1024, 64);
	assert_int_equal(rv_qp_read(a.qp, &g, (uint64_t)(uintptr_t)(b.buf + 4096), rv_mr_rkey(b.mr), 2), 0);
	g = sge(&a, 2048, 8);
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf, rv_mr_rkey(b.mr), 3), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_REM_INV_REQ_ERR);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	/* Nothing was read. */
	for (int i = 0; i < 64; i++)
		assert_int_equal(a.buf[1024 + i], 0);
	side_close(&a);
	side_close(&b);
}

/* ORD 1 against IRD 1: many READs posted at once all complete, in order,
 * with the right bytes (the requester keeps one in flight). */
static void test_soft_ext__ord_limits_reads_in_flight(void **state)
{
	struct side a, b;
	struct conn_opts oa = DEFAULTS, ob = DEFAULTS;

	(void)state;
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	oa.max_rd_atomic = 4;
	ob.max_dest_rd_atomic = 1; /* a may keep only one READ in flight */
	connect_pair(&a, &oa, &b, &ob);
	fill(b.buf, 32 * 512, 7);
	for (int i = 0; i < 32; i++) {
		rv_sge g = sge(&a, (size_t)i * 512, 512);
		assert_int_equal(rv_qp_read(a.qp, &g, (uint64_t)(uintptr_t)(b.buf + i * 512), rv_mr_rkey(b.mr),
					    (uint64_t)i), 0);
	}
	for (int i = 0; i < 32; i++) {
		rv_wc wc = poll_one(a.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
	}
	assert_memory_equal(a.buf, b.buf, 32 * 512);
	assert_int_equal(rv_qp_state_of(b.qp), RV_QPS_RTS);
	side_close(&a);
	side_close(&b);
}

static rv_send_wr wr_of(uint32_t opcode, rv_sge *g, uint64_t wr_id)
{
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = opcode;
	w.sg_list = g;
	w.num_sge = g ? 1 : 0;
	w.send_flags = RV_SEND_SIGNALED;
	return w;
}

/* SEND and WRITE with immediate: the receiver's WC carries imm_data and the
 * IMM flag; WRITE with immediate consumes a receive WR and waits for one. */
static void test_soft_ext__immediate_data(void **state)
{
	struct side a, b;
	rv_send_wr w;
	rv_sge g, r;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	fill(a.buf, 6000, 3);
	/* SEND with immediate, 6000 bytes (two FPDUs), solicited. */
	r = sge(&b, 8192, 8192);
	assert_int_equal(rv_qp_recv(b.qp, &r, 11), 0);
	g = sge(&a, 0, 6000);
	w = wr_of(RV_WR_SEND_WITH_IMM, &g, 1);
	w.imm_data = 0xdeadbeef;
	w.send_flags |= RV_SEND_SOLICITED;
	assert_int_equal(rv_qp_post_send(a.qp, &w, 1, NULL), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_SEND);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.byte_len, 6000);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xdeadbeef);
	assert_memory_equal(b.buf + 8192, a.buf, 6000);
	/* A plain SEND after it: no IMM flag. */
	assert_int_equal(rv_qp_recv(b.qp, &r, 12), 0);
	g = sge(&a, 0, 10);
	assert_int_equal(rv_qp_send(a.qp, &g, 2), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.wr_id, 12);
	assert_false(wc.wc_flags & RV_WC_WITH_IMM);
	(void)poll_one(a.cq);
	/* WRITE with immediate before any receive is posted: the data lands, the
	 * completion waits for a receive WR. */
	g = sge(&a, 0, 5000);
	w = wr_of(RV_WR_RDMA_WRITE_WITH_IMM, &g, 3);
	w.imm_data = 42;
	w.remote_addr = (uint64_t)(uintptr_t)(b.buf + 20000);
	w.rkey = rv_mr_rkey(b.mr);
	assert_int_equal(rv_qp_post_send(a.qp, &w, 1, NULL), 0);
	{
		int64_t end = now_ms() + 200;
		while (now_ms() < end)
			assert_int_equal(rv_cq_poll(b.cq, &wc, 1), 0);
	}
	r = sge(&b, 0, 16);
	assert_int_equal(rv_qp_recv(b.qp, &r, 13), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 13);
	assert_int_equal(wc.opcode, RV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, 5000);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 42);
	assert_memory_equal(b.buf + 20000, a.buf, 5000);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RDMA_WRITE);
	side_close(&a);
	side_close(&b);
}

static rv_wc atomic_op(struct side *a, struct side *b, uint32_t opcode, size_t remote_off, uint64_t cmp_add,
		       uint64_t swap, size_t local_off)
{
	rv_sge g = sge(a, local_off, 8);
	rv_send_wr w = wr_of(opcode, &g, 77);

	w.remote_addr = (uint64_t)(uintptr_t)(b->buf + remote_off);
	w.rkey = rv_mr_rkey(b->mr);
	w.compare_add = cmp_add;
	w.swap = swap;
	assert_int_equal(rv_qp_post_send(a->qp, &w, 1, NULL), 0);
	return poll_one(a->cq);
}

static void test_soft_ext__atomics(void **state)
{
	struct side a, b;
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	uint64_t v;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	assert_int_equal(rv_context_query_device(a.ctx, &da), 0);
	assert_int_not_equal(da.atomic_cap, RV_ATOMIC_NONE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	v = 40;
	memcpy(b.buf + 64, &v, 8);
	wc = atomic_op(&a, &b, RV_WR_ATOMIC_FETCH_AND_ADD, 64, 2, 0, 0);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_FETCH_ADD);
	assert_int_equal(wc.byte_len, 8);
	memcpy(&v, a.buf, 8);
	assert_int_equal(v, 40);
	memcpy(&v, b.buf + 64, 8);
	assert_int_equal(v, 42);
	/* CAS that matches, then one that does not: the original comes back both times. */
	wc = atomic_op(&a, &b, RV_WR_ATOMIC_CMP_AND_SWP, 64, 42, 7, 8);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_COMP_SWAP);
	memcpy(&v, a.buf + 8, 8);
	assert_int_equal(v, 42);
	wc = atomic_op(&a, &b, RV_WR_ATOMIC_CMP_AND_SWP, 64, 42, 9, 16);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	memcpy(&v, a.buf + 16, 8);
	assert_int_equal(v, 7);
	memcpy(&v, b.buf + 64, 8);
	assert_int_equal(v, 7);
	/* Misaligned: remote invalid request, QP to ERR, the word untouched. */
	memset(b.buf + 128, 0x11, 16);
	wc = atomic_op(&a, &b, RV_WR_ATOMIC_FETCH_AND_ADD, 131, 1, 0, 24);
	assert_int_equal(wc.status, RV_WC_REM_INV_REQ_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	for (int i = 0; i < 16; i++)
		assert_int_equal(b.buf[128 + i], 0x11);
	side_close(&a);
	side_close(&b);
}

/* An MR without REMOTE_ATOMIC: remote access error, nothing changed. */
static void test_soft_ext__atomic_without_access(void **state)
{
	struct side a, b;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	memset(b.buf, 0x22, 16);
	wc = atomic_op(&a, &b, RV_WR_ATOMIC_CMP_AND_SWP, 0, 0x2222222222222222ull, 1, 0);
	assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 16; i++)
		assert_int_equal(b.buf[i], 0x22);
	side_close(&a);
	side_close(&b);
}

/* A peer that does not offer RFC 7306: posting IMM or atomics is refused at
 * once with -EOPNOTSUPP and a message; ordinary traffic still works. */
static void test_soft_ext__not_negotiated(void **state)
{
	struct side a, b;
	rv_send_wr w;
	rv_sge g;

	(void)state;
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, RV_SOFT_NO_EXT, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	traffic(&a, &b, 5); /* the connection is up: the negotiation is known */
	g = sge(&a, 0, 8);
	w = wr_of(RV_WR_SEND_WITH_IMM, &g, 1);
	assert_int_equal(rv_qp_post_send(a.qp, &w, 1, NULL), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "did not negotiate"));
	w = wr_of(RV_WR_ATOMIC_FETCH_AND_ADD, &g, 2);
	w.remote_addr = (uint64_t)(uintptr_t)b.buf;
	w.rkey = rv_mr_rkey(b.mr);
	assert_int_equal(rv_qp_post_send(a.qp, &w, 1, NULL), -EOPNOTSUPP);
	w = wr_of(RV_WR_ATOMIC_FETCH_AND_ADD, &g, 2);
	assert_int_equal(rv_qp_post_send(b.qp, &w, 1, NULL), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "RV_SOFT_NO_EXT"));
	traffic(&a, &b, 6);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_RTS);
	side_close(&a);
	side_close(&b);
}

/* Contention: fetch-and-add from 4 QPs (each driven by its own thread) and
 * local __atomic adds from 2 threads on the same word of b's memory; the
 * final value is the sum of all of them and every fetched value is distinct. */
#define NQ 4
#define PER 300
#define LOCAL_PER 20000

struct racer {
	struct side a;
	struct side *b;
	uint64_t fetched[PER];
};

static void *remote_adds(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < PER; i++) {
		rv_wc wc = atomic_op(&r->a, r->b, RV_WR_ATOMIC_FETCH_AND_ADD, 0, 1, 0, (size_t)(i % 64) * 8);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		memcpy(&r->fetched[i], r->a.buf + (i % 64) * 8, 8);
	}
	return NULL;
}

static void *local_adds(void *arg)
{
	uint64_t *w = arg;

	for (int i = 0; i < LOCAL_PER; i++)
		__atomic_fetch_add(w, 1000000, __ATOMIC_SEQ_CST);
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void test_soft_ext__atomic_contention(void **state)
{
	static struct racer rs[NQ];
	static uint64_t all[NQ * PER];
	struct side b;
	rv_qp *bqs[NQ];
	pthread_t th[NQ + 2];
	uint64_t *word;
	rv_qp_init_attr qa;

	(void)state;
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	word = (uint64_t *)(void *)b.buf;
	*word = 0;
	for (int i = 0; i < NQ; i++) {
		rv_endpoint ea, eb;
		rv_qp *bq;

		side_open(&rs[i].a, 0, RV_ACCESS_ALL_REMOTE);
		rs[i].b = &b;
		memset(&qa, 0, sizeof(qa));
		qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
		qa.send_cq = b.cq;
		qa.cap.max_send_wr = 8;
		qa.cap.max_recv_wr = 8;
		assert_int_equal(rv_qp_new(b.pd, &qa, &bq), 0);
		assert_int_equal(rv_qp_endpoint(rs[i].a.qp, &ea), 0);
		assert_int_equal(rv_qp_endpoint(bq, &eb), 0);
		connect_one(&rs[i].a, &eb, &DEFAULTS);
		{
			struct side tmp = b;
			tmp.qp = bq;
			connect_one(&tmp, &ea, &DEFAULTS);
		}
		bqs[i] = bq;
	}
	for (int i = 0; i < NQ; i++)
		assert_int_equal(pthread_create(&th[i], NULL, remote_adds, &rs[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[NQ + i], NULL, local_adds, word), 0);
	for (int i = 0; i < NQ + 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(__atomic_load_n(word, __ATOMIC_SEQ_CST), (uint64_t)NQ * PER + 2ull * LOCAL_PER * 1000000);
	/* Every remote add saw a distinct count of earlier remote adds. */
	for (int i = 0; i < NQ; i++)
		for (int k = 0; k < PER; k++)
			all[i * PER + k] = rs[i].fetched[k] % 1000000;
	qsort(all, NQ * PER, sizeof(all[0]), cmp_u64);
	for (int k = 0; k < NQ * PER; k++)
		assert_int_equal(all[k], (uint64_t)k);
	for (int i = 0; i < NQ; i++) {
		side_close(&rs[i].a);
		rv_qp_unref(bqs[i]);
	}
	side_close(&b);
}

/* Finite rnr_retry: a SEND that finds no receive WR completes with RNR retry
 * exceeded (the next one flushes, the QP is in ERR) for rnr_retry 0..6; with
 * 7 it waits and succeeds once a receive is posted late. */
static void test_soft_ext__rnr_retry(void **state)
{
	(void)state;
	for (int retry = 0; retry <= 7; retry++) {
		struct side a, b;
		struct conn_opts oa = DEFAULTS, ob = DEFAULTS;
		rv_sge g;
		rv_wc wc;

		side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
		side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
		oa.rnr_retry = retry;
		ob.min_rnr_timer = retry % 2 ? 1 : 14; /* 10 µs or 1.28 ms per retry */
		connect_pair(&a, &oa, &b, &ob);
		g = sge(&a, 0, 100);
		assert_int_equal(rv_qp_send(a.qp, &g, 1), 0);
		assert_int_equal(rv_qp_send(a.qp, &g, 2), 0);
		if (retry < 7) {
			wc = poll_one_within(a.cq, 10000);
			assert_int_equal(wc.wr_id, 1);
			assert_int_equal(wc.status, RV_WC_RNR_RETRY_EXC_ERR);
			wc = poll_one_within(a.cq, 10000);
			assert_int_equal(wc.wr_id, 2);
			assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
			assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
		} else {
			int64_t end = now_ms() + 700; /* several notices and timer ticks */
			while (now_ms() < end)
				assert_int_equal(rv_cq_poll(a.cq, &wc, 1), 0);
			rv_sge r = sge(&b, 4096, 200);
			assert_int_equal(rv_qp_recv(b.qp, &r, 10), 0);
			r = sge(&b, 8192, 200);
			assert_int_equal(rv_qp_recv(b.qp, &r, 11), 0);
			for (int k = 1; k <= 2; k++) {
				wc = poll_one(a.cq);
				assert_int_equal(wc.wr_id, (uint64_t)k);
				assert_int_equal(wc.status, RV_WC_SUCCESS);
			}
			wc = poll_one(b.cq);
			assert_int_equal(wc.wr_id, 10);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_RTS);
		}
		side_close(&a);
		side_close(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_ext__crc_negotiation),
		cmocka_unit_test(test_soft_ext__bad_context_flags),
		cmocka_unit_test(test_soft_ext__read_to_ird_zero),
		cmocka_unit_test(test_soft_ext__ord_limits_reads_in_flight),
		cmocka_unit_test(test_soft_ext__immediate_data),
		cmocka_unit_test(test_soft_ext__atomics),
		cmocka_unit_test(test_soft_ext__atomic_without_access),
		cmocka_unit_test(test_soft_ext__not_negotiated),
		cmocka_unit_test(test_soft_ext__atomic_contention),
		cmocka_unit_test(test_soft_ext__rnr_retry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
