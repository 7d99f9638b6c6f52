/*
 * The software device end to end through the public API: two QPs on soft0
 * (in two contexts, in one context, and in two processes) doing SEND/RECV,
 * RDMA WRITE and READ, and the error paths (local length error, remote
 * access errors with TERMINATE, peer death). Each test closes everything.
 */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>
#include "test-clock.h"
#include "soft-context.h"

#define BUF (1u << 20)

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
	bool own_ctx;
};

static void side_qp(struct side *s)
{
	rv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	assert_int_equal(rv_qp_new(s->pd, &qa, &s->qp), 0);
}

static void side_open(struct side *s, rv_context *shared, uint32_t mr_access)
{
	memset(s, 0, sizeof(*s));
	s->own_ctx = shared == NULL;
	s->ctx = shared ? rv_context_ref(shared) : open_ctx();
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	side_qp(s);
	assert_int_equal(rv_mr_alloc(s->pd, BUF, mr_access, NULL, &s->mr), 0);
	s->buf = rv_mr_addr(s->mr);
}

static void side_close(struct side *s)
{
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
}

static void connect_pair(struct side *a, struct side *b)
{
	rv_endpoint ea, eb;

	assert_int_equal(rv_qp_endpoint(a->qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(a->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(b->qp, &ea), 0);
}

/* Wait up to 10 s for one completion. */
static rv_wc poll_one(rv_cq *cq)
{
	int64_t end = now_ms() + 10000;
	rv_wc wc;
	int n;

	memset(&wc, 0, sizeof(wc));
	while ((n = rv_cq_poll(cq, &wc, 1)) == 0 && now_ms() < end) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	if (n != 1)
		fail_msg("no completion within 10 s (rv_cq_poll returned %d: %s)", n, rv_error_last());
	return wc;
}

static void expect_none(rv_cq *cq, int ms)
{
	rv_wc wc;
	int64_t end = now_ms() + ms;
	while (now_ms() < end)
		assert_int_equal(rv_cq_poll(cq, &wc, 1), 0);
}

static rv_sge sge(struct side *s, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	return g;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 31 + (i >> 9));
}

static void test_soft__device_and_port(void **state)
{
	rv_context *ctx = open_ctx();
	rv_port_attr pa;
	rv_device_attr da;
	rv_gid_entry ge;
	uint16_t pkey;
	uint8_t gid[16], want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};

	(void)state;
	memset(&pa, 0, sizeof(pa));
	pa.mask = RV_PORT_ATTR_ALL;
	assert_int_equal(rv_context_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, RV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, RV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.active_mtu, RV_MTU_4096);
	assert_int_equal(pa.gid_tbl_len, 1);
	assert_true(pa.lid != 0);
	assert_int_equal(rv_context_query_gid(ctx, 1, 0, gid), 0);
	assert_memory_equal(gid, want, 16);
	assert_true(rv_context_query_gid(ctx, 1, 1, gid) < 0);
	/* The typed entry: RoCE v2, on the loopback interface that owns 127.0.0.1. */
	memset(&ge, 0xaa, sizeof(ge));
	assert_int_equal(rv_context_query_gid_entry(ctx, 1, 0, &ge), 0);
	assert_memory_equal(ge.gid, want, 16);
	assert_int_equal(ge.gid_type, RV_GID_TYPE_ROCE_V2);
	assert_int_equal(ge.port_num, 1);
	assert_int_equal(ge.gid_index, 0);
	assert_int_equal(ge.ndev_ifindex, if_nametoindex("lo"));
	for (int i = 0; i < 4; i++)
		assert_int_equal(ge.reserved[i], 0);
	assert_int_equal(rv_context_query_gid_entry(ctx, 1, 1, &ge), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "one GID (index 0)"));
	assert_int_equal(rv_context_query_gid_entry(ctx, 2, 0, &ge), -EINVAL);
	assert_int_equal(rv_context_query_gid_entry(ctx, 0, 0, &ge), -EINVAL);
	assert_int_equal(rv_context_query_gid_entry(ctx, 1, 0, NULL), -EINVAL);
	/* The one P_Key: the default full-membership 0xffff. */
	assert_int_equal(rv_context_query_pkey(ctx, 1, 0, &pkey), 0);
	assert_int_equal(pkey, 0xffff);
	pkey = 0x1234;
	assert_int_equal(rv_context_query_pkey(ctx, 1, 1, &pkey), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "P_Key index 1 does not exist"));
	assert_int_equal(pkey, 0x1234);
	assert_int_equal(rv_context_query_pkey(ctx, 2, 0, &pkey), -EINVAL);
	assert_int_equal(rv_context_query_pkey(ctx, 0, 0, &pkey), -EINVAL);
	assert_int_equal(rv_context_query_pkey(ctx, 1, 0, NULL), -EINVAL);
	memset(&da, 0, sizeof(da));
	da.mask = RV_DEVICE_ATTR_ALL;
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_int_equal(da.phys_port_cnt, 1);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
}

/* One signalled RDMA WRITE of len bytes from a's buffer; its status. */
static rv_wc_status write_remote(struct side *a, void *raddr, uint32_t rkey, uint32_t len)
{
	rv_sge g = sge(a, 0, len);
	rv_send_wr wr = {.wr_id = 7, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
			 .send_flags = RV_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)raddr,
			 .rkey = rkey};
	rv_wc wc;

	assert_int_equal(rv_qp_post_send(a->qp, &wr, 1, NULL), 0);
	wc = poll_one(a->cq);
	assert_int_equal(wc.wr_id, 7);
	return wc.status;
}

/* New connected QPs for both sides (after a remote access error killed the old ones). */
static void fresh_pair(struct side *a, struct side *b)
{
	assert_int_equal(rv_qp_close(a->qp), 0);
	assert_int_equal(rv_qp_close(b->qp), 0);
	rv_qp_unref(a->qp);
	rv_qp_unref(b->qp);
	side_qp(a);
	side_qp(b);
	connect_pair(a, b);
}

/* rv_mr_rereg: access, memory and PD change in place at once; soft0 keeps the keys. */
static void test_soft__mr_rereg(void **state)
{
	static uint8_t target[4096], other[4096];
	uint8_t before[64];
	struct side a, b;
	rv_pd *pd2, *pdx;
	rv_mr *mr, *mr2;
	uint32_t k0, k1, k2, k3;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	memset(target, 0x11, sizeof(target));
	assert_int_equal(rv_mr_reg(b.pd, target, sizeof(target), RV_ACCESS_LOCAL_WRITE |
				   RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ, &mr), 0);
	k0 = rv_mr_rkey(mr);
	fill(a.buf, 64, 3);
	assert_int_equal(write_remote(&a, target, k0, 64), RV_WC_SUCCESS);
	assert_memory_equal(target, a.buf, 64);

	/* Access change: REMOTE_WRITE withdrawn, memory the same. */
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0,
				     RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_READ), 0);
	k1 = rv_mr_rkey(mr);
	assert_int_equal(k1, k0); /* soft0 keeps the keys */
	assert_int_equal(rv_mr_lkey(mr), k1);
	assert_ptr_equal(rv_mr_addr(mr), target);
	assert_int_equal(rv_mr_length(mr), sizeof(target));
	memcpy(before, target, sizeof(before));
	fill(a.buf, 64, 77);
	assert_int_equal(write_remote(&a, target, k1, 64), RV_WC_REM_ACCESS_ERR);
	assert_memory_equal(target, before, 64);

	/* Write allowed again: the same key gets the right back at once. */
	fresh_pair(&a, &b);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0,
				     RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE), 0);
	k2 = rv_mr_rkey(mr);
	assert_int_equal(k2, k1);
	assert_int_equal(write_remote(&a, target, k2, 64), RV_WC_SUCCESS);
	assert_memory_equal(target, a.buf, 64);

	/* New memory: the bounds follow it. */
	memset(other, 0x22, sizeof(other));
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_TRANS, NULL, other, 128, 0), 0);
	k3 = rv_mr_rkey(mr);
	assert_ptr_equal(rv_mr_addr(mr), other);
	assert_int_equal(rv_mr_length(mr), 128);
	fill(a.buf, 64, 40);
	assert_int_equal(write_remote(&a, other, k3, 64), RV_WC_SUCCESS);
	assert_memory_equal(other, a.buf, 64);
	memcpy(before, target, sizeof(before));
	assert_int_equal(write_remote(&a, target, k3, 64), RV_WC_REM_ACCESS_ERR);
	assert_memory_equal(target, before, 64);
	assert_int_equal(other[128], 0x22);

	/* PD move: the MR leaves the QP's PD (a wrong-PD access now) and no
	 * longer depends on its old PD. */
	assert_int_equal(rv_pd_new(b.ctx, NULL, &pd2), 0);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_PD, pd2, NULL, 0, 0), 0);
	assert_ptr_equal(rv_mr_pd(mr), pd2);
	fresh_pair(&a, &b);
	assert_int_equal(write_remote(&a, other, rv_mr_rkey(mr), 64), RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_pd_new(b.ctx, NULL, &pdx), 0);
	assert_int_equal(rv_mr_reg(pdx, target, 64, RV_ACCESS_LOCAL_WRITE, &mr2), 0);
	assert_int_equal(rv_mr_rereg(mr2, RV_REREG_PD | RV_REREG_ACCESS, pd2, NULL, 0,
				     RV_ACCESS_REMOTE_READ), 0);
	assert_int_equal(rv_pd_close(pdx), 0);
	rv_pd_unref(pdx);
	assert_ptr_equal(rv_mr_pd(mr2), pd2);
	assert_int_not_equal(rv_mr_lkey(mr2), 0);
	/* Closing the new PD closes both MRs with it. */
	assert_int_equal(rv_pd_close(pd2), 0);
	assert_int_equal(rv_mr_lkey(mr2), 0);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, 0), -RV_ECLOSED);
	rv_mr_unref(mr2);
	rv_mr_unref(mr);
	rv_pd_unref(pd2);
	side_close(&a);
	side_close(&b);
}

/* rv_mr_rereg refuses what it cannot do, and leaves the MR as it was. */
static void test_soft__mr_rereg_bad_arguments(void **state)
{
	static uint8_t mem[256];
	rv_context *ctx = open_ctx(), *ctx2 = open_ctx();
	rv_pd *pd, *pd_other;
	rv_mr *mr, *owned;
	uint32_t key;

	(void)state;
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_pd_new(ctx2, NULL, &pd_other), 0);
	assert_int_equal(rv_mr_reg(pd, mem, sizeof(mem), RV_ACCESS_LOCAL_WRITE, &mr), 0);
	assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &owned), 0);
	key = rv_mr_lkey(mr);
	assert_int_equal(rv_mr_rereg(NULL, RV_REREG_ACCESS, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(rv_mr_rereg((rv_mr *)pd, RV_REREG_ACCESS, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(rv_mr_rereg(mr, 0, NULL, NULL, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "flags is 0"));
	assert_int_equal(rv_mr_rereg(mr, 1u << 5, NULL, NULL, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "unknown bit 0x20"));
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_REMOTE_WRITE), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "need LOCAL_WRITE"));
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, 1u << 12), -EINVAL);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_PD, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_PD, pd_other, NULL, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "another context"));
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_TRANS, NULL, NULL, 16, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "addr is NULL"));
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_TRANS, NULL, mem, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "length is 0"));
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_TRANS, NULL, (void *)(uintptr_t)-16, 64, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "wraps"));
	assert_int_equal(rv_mr_rereg(owned, RV_REREG_TRANS, NULL, mem, 16, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "owns its memory"));
	/* Nothing changed on any refusal. */
	assert_int_equal(rv_mr_lkey(mr), key);
	assert_ptr_equal(rv_mr_pd(mr), pd);
	assert_ptr_equal(rv_mr_addr(mr), mem);
	/* ACCESS on an allocated MR is fine. */
	assert_int_equal(rv_mr_rereg(owned, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_ALL_REMOTE), 0);
	/* A closed PD or MR. */
	assert_int_equal(rv_pd_close(pd_other), 0);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_PD, pd_other, NULL, 0, 0), -RV_ECLOSED);
	assert_int_equal(rv_mr_close(mr), 0);
	assert_int_equal(rv_mr_rereg(mr, RV_REREG_ACCESS, NULL, NULL, 0, 0), -RV_ECLOSED);
	rv_mr_unref(mr);
	rv_mr_unref(owned);
	rv_pd_unref(pd);
	rv_pd_unref(pd_other);
	assert_int_equal(rv_context_close(ctx), 0);
	assert_int_equal(rv_context_close(ctx2), 0);
	rv_context_unref(ctx);
	rv_context_unref(ctx2);
}

static void run_send_write_read(struct side *a, struct side *b)
{
	rv_sge rs[2], ss[3], g;
	rv_recv_wr rw;
	rv_send_wr sw;
	rv_wc wc;

	/* SEND of three SGEs into a receive of two. */
	rs[0] = sge(b, 0, 100);
	rs[1] = sge(b, 1000, 200);
	rw = (rv_recv_wr){.wr_id = 7, .sg_list = rs, .num_sge = 2};
	assert_int_equal(rv_qp_post_recv(b->qp, &rw, 1, NULL), 0);
	fill(a->buf, 4096, 1);
	ss[0] = sge(a, 0, 50);
	ss[1] = sge(a, 50, 150);
	ss[2] = sge(a, 200, 50);
	memset(&sw, 0, sizeof(sw));
	sw.wr_id = 8;
	sw.sg_list = ss;
	sw.num_sge = 3;
	sw.opcode = RV_WR_SEND;
	sw.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	assert_int_equal(rv_qp_post_send(a->qp, &sw, 1, NULL), 0);
	wc = poll_one(b->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 250);
	assert_int_equal(wc.qp_num, rv_qp_num(b->qp));
	assert_memory_equal(b->buf, a->buf, 100);
	assert_memory_equal(b->buf + 1000, a->buf + 100, 150);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_SEND);
	assert_int_equal(wc.wr_id, 8);

	/* A small SEND goes inline automatically; the buffer is free at once. */
	g = sge(b, 0, 64);
	assert_int_equal(rv_qp_recv(b->qp, &g, 9), 0);
	memcpy(a->buf, "inline!", 8);
	g = sge(a, 0, 8);
	assert_int_equal(rv_qp_send(a->qp, &g, 10), 0);
	memset(a->buf, 0, 8);
	wc = poll_one(b->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8);
	assert_string_equal((char *)b->buf, "inline!");
	wc = poll_one(a->cq);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, RV_WC_SUCCESS);

	/* WRITE 300000 bytes (many FPDUs), then READ them back elsewhere. */
	fill(a->buf, 300000, 5);
	g = sge(a, 0, 300000);
	assert_int_equal(rv_qp_write(a->qp, &g, (uint64_t)(uintptr_t)b->buf + 4096, rv_mr_rkey(b->mr), 11), 0);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RDMA_WRITE);
	assert_int_equal(wc.wr_id, 11);
	assert_memory_equal(b->buf + 4096, a->buf, 300000);
	g = sge(a, 400000, 300000);
	assert_int_equal(rv_qp_read(a->qp, &g, (uint64_t)(uintptr_t)b->buf + 4096, rv_mr_rkey(b->mr), 12), 0);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, 300000);
	assert_memory_equal(a->buf + 400000, a->buf, 300000);
	expect_none(b->cq, 20); /* one-sided: nothing at the target */
}

static void test_soft__two_contexts(void **state)
{
	struct side a, b;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	run_send_write_read(&a, &b);
	run_send_write_read(&b, &a);
	side_close(&a);
	side_close(&b);
}

static void test_soft__one_context(void **state)
{
	rv_context *ctx = open_ctx();
	struct side a, b;

	(void)state;
	side_open(&a, ctx, RV_ACCESS_ALL_REMOTE);
	side_open(&b, ctx, RV_ACCESS_ALL_REMOTE);
	connect_pair(&b, &a);
	run_send_write_read(&a, &b);
	side_close(&a);
	side_close(&b);
	rv_context_unref(ctx);
}

static void test_soft__post_before_peer_connects(void **state)
{
	struct side a, b;
	rv_endpoint ea, eb;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	assert_int_equal(rv_qp_endpoint(a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b.qp, &eb), 0);
	/* Both orders of who connects first are covered by the two directions. */
	assert_int_equal(rv_qp_connect(a.qp, &eb), 0);
	memcpy(a.buf, "early", 6);
	g = sge(&a, 0, 6);
	assert_int_equal(rv_qp_send(a.qp, &g, 1), 0);
	g = sge(&a, 0, 6);
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf + 100, rv_mr_rkey(b.mr), 2), 0);
	expect_none(a.cq, 50);
	g = sge(&b, 0, 64);
	assert_int_equal(rv_qp_to_init(b.qp, NULL), 0);
	assert_int_equal(rv_qp_recv(b.qp, &g, 3), 0);
	assert_int_equal(rv_qp_connect(b.qp, &ea), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_string_equal((char *)b.buf, "early");
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_string_equal((char *)b.buf + 100, "early");
	side_close(&a);
	side_close(&b);
}

static void test_soft__send_waits_for_a_receive(void **state)
{
	struct side a, b;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	g = sge(&a, 0, 10);
	assert_int_equal(rv_qp_send(a.qp, &g, 1), 0);
	expect_none(b.cq, 100);
	g = sge(&b, 0, 10);
	assert_int_equal(rv_qp_recv(b.qp, &g, 2), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	side_close(&a);
	side_close(&b);
}

static void test_soft__local_length_error(void **state)
{
	struct side a, b;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	g = sge(&b, 0, 10);
	assert_int_equal(rv_qp_recv(b.qp, &g, 1), 0);
	assert_int_equal(rv_qp_recv(b.qp, &g, 2), 0);
	g = sge(&a, 0, 100);
	assert_int_equal(rv_qp_send(a.qp, &g, 3), 0);
	assert_int_equal(rv_qp_send(a.qp, &g, 4), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_LOC_LEN_ERR);
	wc = poll_one(b.cq);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, RV_WC_REM_INV_REQ_ERR);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	assert_int_equal(rv_qp_state_of(b.qp), RV_QPS_ERR);
	/* Work posted in ERR flushes at once. */
	assert_int_equal(rv_qp_send(a.qp, &g, 5), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	side_close(&a);
	side_close(&b);
}

/* One remote access violation: the WR fails, the rest flush, both QPs go to ERR. */
static void access_violation(uint32_t b_access, uint32_t opcode, int64_t addr_off, uint32_t len, bool bad_key)
{
	struct side a, b;
	rv_send_wr wr[3];
	rv_sge g, ok, r;
	rv_wc wc;

	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, b_access);
	connect_pair(&a, &b);
	r = sge(&b, 0, 64);
	assert_int_equal(rv_qp_recv(b.qp, &r, 100), 0);
	fill(b.buf, 64, 9);
	g = sge(&a, 0, len);
	ok = sge(&a, 0, 8);
	memset(wr, 0, sizeof(wr));
	/* A good WRITE first: it must succeed although a later WR fails. */
	wr[0] = (rv_send_wr){.wr_id = 1, .sg_list = &ok, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
			     .send_flags = RV_SEND_SIGNALED,
			     .remote_addr = (uint64_t)(uintptr_t)b.buf + 4096, .rkey = rv_mr_rkey(b.mr)};
	wr[1] = (rv_send_wr){.wr_id = 2, .sg_list = &g, .num_sge = 1, .opcode = opcode,
			     .send_flags = RV_SEND_SIGNALED,
			     .remote_addr = (uint64_t)(uintptr_t)b.buf + (uint64_t)addr_off,
			     .rkey = rv_mr_rkey(b.mr) ^ (bad_key ? 0x5a5a : 0)};
	wr[2] = (rv_send_wr){.wr_id = 3, .sg_list = &ok, .num_sge = 1, .opcode = RV_WR_SEND,
			     .send_flags = RV_SEND_SIGNALED};
	if (b_access == RV_ACCESS_LOCAL_WRITE) /* first WRITE would fail too */
		wr[0].opcode = RV_WR_SEND, wr[0].sg_list = &ok;
	assert_int_equal(rv_qp_post_send(a.qp, b_access == RV_ACCESS_LOCAL_WRITE ? wr + 1 : wr,
					 b_access == RV_ACCESS_LOCAL_WRITE ? 2 : 3, NULL), 0);
	if (b_access != RV_ACCESS_LOCAL_WRITE) {
		wc = poll_one(a.cq);
		assert_int_equal(wc.wr_id, 1);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
	}
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	/* The target: no completion for the WRITE/READ, its receive flushes. */
	wc = poll_one(b.cq);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	assert_int_equal(rv_qp_state_of(b.qp), RV_QPS_ERR);
	/* Not one byte was written outside what was allowed. */
	for (int i = 0; i < 64; i++)
		assert_int_equal(b.buf[i], (uint8_t)(9 + i * 31));
	side_close(&a);
	side_close(&b);
}

static void test_soft__remote_access_errors(void **state)
{
	(void)state;
	/* bad key */
	access_violation(RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, 0, 16, true);
	access_violation(RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_READ, 0, 16, true);
	/* beyond the end, and an address that wraps around 2^64 */
	access_violation(RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, (int64_t)BUF - 8, 16, false);
	access_violation(RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_READ, (int64_t)BUF - 8, 16, false);
	access_violation(RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, -(int64_t)(uintptr_t)0 - 1, 16, false);
	/* MR without the right */
	access_violation(RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, RV_WR_RDMA_READ, 0, 16, false);
	access_violation(RV_ACCESS_LOCAL_WRITE, RV_WR_RDMA_WRITE, 0, 16, false);
}

static void test_soft__qp_access_flags_are_checked(void **state)
{
	struct side a, b;
	rv_qp_attr at;
	rv_endpoint ea, eb;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	memset(&at, 0, sizeof(at));
	at.mask = RV_QP_ACCESS_FLAGS;
	at.qp_access_flags = RV_ACCESS_LOCAL_WRITE; /* B's QP allows no remote access */
	assert_int_equal(rv_qp_to_init(b.qp, &at), 0);
	assert_int_equal(rv_qp_endpoint(a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(a.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(b.qp, &ea), 0);
	g = sge(&a, 0, 16);
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf, rv_mr_rkey(b.mr), 1), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
	side_close(&a);
	side_close(&b);
}

static void test_soft__peer_death(void **state)
{
	struct side a, b;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	g = sge(&a, 0, 16);
	assert_int_equal(rv_qp_recv(a.qp, &g, 1), 0);
	/* Make sure the connection is up before B goes away. */
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf, rv_mr_rkey(b.mr), 2), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	side_close(&b); /* the whole context goes: the TCP connection closes */
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf, 1, 3), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	side_close(&a);
}

static void test_soft__unsupported_ops_say_so(void **state)
{
	struct side a, b;
	rv_send_wr wr;
	rv_sge g;

	(void)state;
	/* RFC 7306 is negotiated: a context that does not offer it refuses it. */
	setenv("RVERBS_SOFT_EXT", "0", 1);
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	unsetenv("RVERBS_SOFT_EXT");
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	g = sge(&a, 0, 8);
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = RV_WR_SEND_WITH_IMM;
	assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, NULL), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "immediate"));
	wr.opcode = RV_WR_ATOMIC_FETCH_AND_ADD;
	assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, NULL), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "atomic"));
	side_close(&a);
	side_close(&b);
}

static void test_soft__close_with_traffic_in_flight(void **state)
{
	struct side a, b;
	rv_send_wr wr[32];
	rv_sge g;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	g = sge(&a, 0, 256 * 1024);
	for (int i = 0; i < 32; i++)
		wr[i] = (rv_send_wr){.wr_id = (uint64_t)i, .sg_list = &g, .num_sge = 1,
				     .opcode = (i & 1) ? RV_WR_RDMA_READ : RV_WR_RDMA_WRITE,
				     .send_flags = RV_SEND_SIGNALED,
				     .remote_addr = (uint64_t)(uintptr_t)b.buf, .rkey = rv_mr_rkey(b.mr)};
	assert_int_equal(rv_qp_post_send(a.qp, wr, 32, NULL), 0);
	/* The target goes first, in the middle of the stream, then the initiator. */
	assert_int_equal(rv_qp_close(b.qp), 0);
	assert_int_equal(rv_qp_close(a.qp), 0);
	side_close(&a);
	side_close(&b);
}

static void test_soft__many_messages_in_order(void **state)
{
	enum { N = 20000, DEPTH = 64 };
	struct side a, b;
	rv_qp_init_attr qa;
	uint64_t next_recv = 0, next_send = 0, got = 0, sent_done = 0;
	rv_wc wc[16];
	int64_t end = now_ms() + 60000;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	/* A QP that signals every 8th send only. */
	rv_qp_unref(a.qp);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	qa.send_cq = a.cq;
	qa.sq_sig_all = 0;
	qa.cap = (rv_qp_cap){.max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1, .max_recv_sge = 1};
	assert_int_equal(rv_qp_new(a.pd, &qa, &a.qp), 0);
	assert_int_equal(rv_qp_to_init(b.qp, NULL), 0);
	for (; next_recv < DEPTH; next_recv++) {
		rv_sge g = sge(&b, (next_recv % DEPTH) * 64, 64);
		assert_int_equal(rv_qp_recv(b.qp, &g, next_recv), 0);
	}
	connect_pair(&a, &b);
	while (got < N && now_ms() < end) {
		while (next_send < N && next_send - sent_done < DEPTH - 8) {
			rv_sge g = sge(&a, (next_send % DEPTH) * 64, 8);
			rv_send_wr w = {.wr_id = next_send, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
					.send_flags = (next_send % 8 == 7 || next_send == N - 1) ? RV_SEND_SIGNALED : 0};
			memcpy(a.buf + (next_send % DEPTH) * 64, &next_send, 8);
			assert_int_equal(rv_qp_post_send(a.qp, &w, 1, NULL), 0);
			next_send++;
		}
		int n = rv_cq_poll(a.cq, wc, 16);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, RV_WC_SUCCESS);
			assert_true(wc[i].wr_id >= sent_done);
			sent_done = wc[i].wr_id + 1;
		}
		n = rv_cq_poll(b.cq, wc, 16);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			uint64_t v;
			assert_int_equal(wc[i].status, RV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, got);
			memcpy(&v, b.buf + (wc[i].wr_id % DEPTH) * 64, 8);
			assert_int_equal(v, got);
			got++;
			rv_sge g = sge(&b, (next_recv % DEPTH) * 64, 64);
			assert_int_equal(rv_qp_recv(b.qp, &g, next_recv), 0);
			next_recv++;
		}
	}
	assert_int_equal(got, N);
	side_close(&a);
	side_close(&b);
}

static void test_soft__ipv6_and_bad_listen_addr(void **state)
{
	rv_device *dev = NULL;
	rv_context *c6 = NULL, *bad = NULL;
	rv_context_attr at = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = "not-an-address"};
	struct side a, b;
	uint8_t gid[16], want[16] = {0};

	(void)state;
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &at, &bad), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "not-an-address"));
	at.listen_addr = "::1";
	if (rv_context_new(dev, &at, &c6) < 0) {
		rv_device_unref(dev);
		skip(); /* no IPv6 loopback here */
	}
	want[15] = 1;
	assert_int_equal(rv_context_query_gid(c6, 1, 0, gid), 0);
	assert_memory_equal(gid, want, 16);
	{
		rv_gid_entry ge;

		assert_int_equal(rv_context_query_gid_entry(c6, 1, 0, &ge), 0);
		assert_memory_equal(ge.gid, want, 16);
		assert_int_equal(ge.gid_type, RV_GID_TYPE_ROCE_V2);
		assert_int_equal(ge.ndev_ifindex, if_nametoindex("lo"));
	}
	side_open(&a, c6, RV_ACCESS_ALL_REMOTE);
	side_open(&b, c6, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	run_send_write_read(&a, &b);
	side_close(&a);
	side_close(&b);
	rv_context_unref(c6);
	rv_device_unref(dev);
}

static void test_soft__unreachable_peer_fails_the_work(void **state)
{
	struct side a, b;
	rv_endpoint eb;
	rv_sge g;
	rv_wc wc;
	int rc;

	(void)state;
	/* Whichever side connects, setup gives up after 1 s (main() sets the limit). */
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	/* A peer QP number that does not exist on a live listener. */
	assert_int_equal(rv_qp_endpoint(b.qp, &eb), 0);
	eb.qpn ^= 0x800000;
	g = sge(&a, 0, 8);
	assert_int_equal(rv_qp_connect(a.qp, &eb), 0);
	assert_int_equal(rv_qp_send(a.qp, &g, 1), 0);
	assert_int_equal(rv_qp_send(a.qp, &g, 2), 0);
	/* RETRY_EXC_ERR, or a flush when the rejection came before the post. */
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 1);
	if (wc.status != RV_WC_RETRY_EXC_ERR && wc.status != RV_WC_WR_FLUSH_ERR)
		fail_msg("WR 1 completed with status %u", wc.status);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);

	/* The peer's context is gone: connecting fails now, or the work fails later. */
	side_close(&b);
	rv_qp_unref(a.qp);
	{
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = a.cq};
		assert_int_equal(rv_qp_new(a.pd, &qa, &a.qp), 0);
	}
	rc = rv_qp_connect(a.qp, &eb);
	if (rc == 0) {
		assert_int_equal(rv_qp_send(a.qp, &g, 3), 0);
		wc = poll_one(a.cq);
		assert_int_equal(wc.wr_id, 3);
		/* RETRY_EXC_ERR, or a flush when the QP failed before the send was posted. */
		if (wc.status != RV_WC_RETRY_EXC_ERR && wc.status != RV_WC_WR_FLUSH_ERR)
			fail_msg("WR 3 completed with status %u", wc.status);
	} else {
		assert_int_equal(rc, -ECONNREFUSED);
		assert_non_null(strstr(rv_error_last(), "listener"));
	}
	side_close(&a);
}

static void test_soft__peer_death_seen_despite_a_fork_child(void **state)
{
	struct side a, b;
	rv_sge g;
	rv_wc wc;
	int pfd[2], status;
	pid_t pid;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	g = sge(&a, 0, 16);
	assert_int_equal(rv_qp_recv(a.qp, &g, 1), 0);
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)b.buf, rv_mr_rkey(b.mr), 2), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 2);
	/* A child inherits copies of every socket and sits on them. */
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(pfd[1]);
		_exit(read(pfd[0], &c, 1) < 0);
	}
	close(pfd[0]);
	side_close(&b);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	close(pfd[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	side_close(&a);
}

/* Two posting threads on two QPs that share one CQ, while this thread polls. */
struct poster {
	rv_qp *qp;
	struct side *dst;
	uint8_t *src;
	uint32_t lkey;
	int n;
	_Atomic int done; /* completions seen by the poller */
};

static void *poster_main(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < p->n; i++) {
		rv_sge g = {.addr = (uint64_t)(uintptr_t)p->src, .length = 512, .lkey = p->lkey};
		rv_send_wr w = {.wr_id = (uint64_t)i, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
				.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE,
				.remote_addr = (uint64_t)(uintptr_t)p->dst->buf, .rkey = rv_mr_rkey(p->dst->mr)};
		while (i - atomic_load(&p->done) >= 32) {
			struct timespec ts = {0, 10000};
			nanosleep(&ts, NULL);
		}
		if (rv_qp_post_send(p->qp, &w, 1, NULL) != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_soft__threads_share_a_cq(void **state)
{
	enum { N = 3000 };
	struct side a, b;
	rv_qp *a2, *b2;
	rv_qp_init_attr qa;
	rv_endpoint e1, e2;
	struct poster p[2];
	pthread_t th[2];
	int64_t end = now_ms() + 60000;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &b);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qa.send_cq = a.cq;
	assert_int_equal(rv_qp_new(a.pd, &qa, &a2), 0);
	qa.send_cq = b.cq;
	assert_int_equal(rv_qp_new(b.pd, &qa, &b2), 0);
	assert_int_equal(rv_qp_endpoint(a2, &e1), 0);
	assert_int_equal(rv_qp_endpoint(b2, &e2), 0);
	assert_int_equal(rv_qp_connect(b2, &e1), 0);
	assert_int_equal(rv_qp_connect(a2, &e2), 0);
	for (int i = 0; i < 2; i++) {
		p[i] = (struct poster){.qp = i ? a2 : a.qp, .dst = &b, .src = a.buf + i * 4096,
				       .lkey = rv_mr_lkey(a.mr), .n = N};
		atomic_init(&p[i].done, 0);
		assert_int_equal(pthread_create(&th[i], NULL, poster_main, &p[i]), 0);
	}
	while ((atomic_load(&p[0].done) < N || atomic_load(&p[1].done) < N) && now_ms() < end) {
		rv_wc wc[16];
		int n = rv_cq_poll(a.cq, wc, 16);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			struct poster *pp = wc[i].qp_num == rv_qp_num(a.qp) ? &p[0] : &p[1];
			assert_int_equal(wc[i].status, RV_WC_SUCCESS);
			/* In order per QP. */
			assert_int_equal(wc[i].wr_id, (uint64_t)atomic_load(&pp->done));
			atomic_fetch_add(&pp->done, 1);
		}
	}
	for (int i = 0; i < 2; i++) {
		void *rc;
		pthread_join(th[i], &rc);
		assert_null(rc);
		assert_int_equal(atomic_load(&p[i].done), N);
	}
	rv_qp_unref(a2);
	rv_qp_unref(b2);
	side_close(&a);
	side_close(&b);
}

static void test_soft__cq_overflow_moves_the_qp_to_error(void **state)
{
	struct side a, b;
	rv_cq *small;
	rv_qp *qp;
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = 4};
	rv_qp_init_attr qa;
	rv_endpoint ea, eb;
	rv_wc wc[8];
	rv_sge g;
	int n, got = 0;
	int64_t end;

	(void)state;
	side_open(&a, NULL, RV_ACCESS_ALL_REMOTE);
	side_open(&b, NULL, RV_ACCESS_ALL_REMOTE);
	assert_int_equal(rv_cq_new(a.ctx, &ca, &small), 0);
	assert_int_equal(rv_cq_size(small), 4);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qa.send_cq = small;
	assert_int_equal(rv_qp_new(a.pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_endpoint(qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(qp, &eb), 0);
	assert_int_equal(rv_qp_connect(b.qp, &ea), 0);
	g = sge(&a, 0, 64);
	for (int i = 0; i < 8; i++)
		assert_int_equal(rv_qp_write(qp, &g, (uint64_t)(uintptr_t)b.buf, rv_mr_rkey(b.mr), (uint64_t)i), 0);
	end = now_ms() + 10000;
	while (rv_qp_state_of(qp) != RV_QPS_ERR && now_ms() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_ERR);
	while ((n = rv_cq_poll(small, wc, 8)) > 0)
		got += n;
	assert_int_equal(got, 4);
	assert_int_equal(n, -EOVERFLOW);
	assert_non_null(strstr(rv_error_last(), "overflow"));
	rv_qp_unref(qp);
	rv_cq_unref(small);
	side_close(&a);
	side_close(&b);
}

/* Two processes: endpoints travel over pipes as rv_endpoint_pack bytes. */
static void exchange(int wfd, int rfd, rv_qp *qp, rv_mr *mr, rv_endpoint *peer)
{
	rv_endpoint ep;
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	size_t n;
	uint32_t len;

	assert_int_equal(rv_qp_endpoint(qp, &ep), 0);
	ep.mask |= RV_ENDPOINT_MR;
	ep.mr_addr = (uint64_t)(uintptr_t)rv_mr_addr(mr);
	ep.mr_length = rv_mr_length(mr);
	ep.mr_rkey = rv_mr_rkey(mr);
	assert_int_equal(rv_endpoint_pack(&ep, buf, sizeof(buf), &n), 0);
	len = (uint32_t)n;
	assert_int_equal(write(wfd, &len, 4), 4);
	assert_int_equal(write(wfd, buf, n), (ssize_t)n);
	assert_int_equal(read(rfd, &len, 4), 4);
	assert_true(len <= sizeof(buf));
	assert_int_equal(read(rfd, buf, len), (ssize_t)len);
	assert_int_equal(rv_endpoint_unpack(buf, len, peer), 0);
}

static int child_main(int wfd, int rfd)
{
	struct side s;
	rv_endpoint peer;
	rv_sge g;
	rv_wc wc;
	char c;

	side_open(&s, NULL, RV_ACCESS_ALL_REMOTE);
	g = sge(&s, 0, 4096);
	assert_int_equal(rv_qp_to_init(s.qp, NULL), 0);
	assert_int_equal(rv_qp_recv(s.qp, &g, 1), 0);
	exchange(wfd, rfd, s.qp, s.mr, &peer);
	assert_int_equal(rv_qp_connect(s.qp, &peer), 0);
	wc = poll_one(s.cq);
	if (wc.status != RV_WC_SUCCESS || wc.byte_len != 12 || memcmp(s.buf, "hello child", 12) != 0)
		return 1;
	/* Answer with a WRITE into the parent's advertised buffer, then a SEND. */
	memcpy(s.buf + 8192, "written by child", 17);
	g = sge(&s, 8192, 17);
	assert_int_equal(rv_qp_write(s.qp, &g, peer.mr_addr + 100, peer.mr_rkey, 2), 0);
	assert_int_equal(rv_qp_send(s.qp, &g, 3), 0);
	wc = poll_one(s.cq);
	if (wc.status != RV_WC_SUCCESS)
		return 2;
	wc = poll_one(s.cq);
	if (wc.status != RV_WC_SUCCESS)
		return 3;
	/* Wait until the parent has read everything before closing. */
	if (read(rfd, &c, 1) != 1)
		return 4;
	side_close(&s);
	return 0;
}

static void test_soft__two_processes(void **state)
{
	int p2c[2], c2p[2], status;
	struct side s;
	rv_endpoint peer;
	rv_sge g;
	rv_wc wc;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(p2c), 0);
	assert_int_equal(pipe(c2p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		_exit(child_main(c2p[1], p2c[0]));
	}
	close(p2c[0]);
	close(c2p[1]);
	side_open(&s, NULL, RV_ACCESS_ALL_REMOTE);
	g = sge(&s, 0, 4096);
	assert_int_equal(rv_qp_to_init(s.qp, NULL), 0);
	assert_int_equal(rv_qp_recv(s.qp, &g, 1), 0);
	exchange(p2c[1], c2p[0], s.qp, s.mr, &peer);
	assert_int_equal(rv_qp_connect(s.qp, &peer), 0);
	memcpy(s.buf + 8192, "hello child", 12);
	g = sge(&s, 8192, 12);
	assert_int_equal(rv_qp_send(s.qp, &g, 9), 0);
	wc = poll_one(s.cq);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	wc = poll_one(s.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 17);
	assert_string_equal((char *)s.buf, "written by child");
	assert_string_equal((char *)s.buf + 100, "written by child");
	assert_int_equal(write(p2c[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(p2c[1]);
	close(c2p[0]);
	side_close(&s);
}

int main(void)
{
	setenv("RVERBS_SOFT_TIMEOUT_MS", "1000", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft__two_processes),
		cmocka_unit_test(test_soft__device_and_port),
		cmocka_unit_test(test_soft__mr_rereg),
		cmocka_unit_test(test_soft__mr_rereg_bad_arguments),
		cmocka_unit_test(test_soft__two_contexts),
		cmocka_unit_test(test_soft__one_context),
		cmocka_unit_test(test_soft__post_before_peer_connects),
		cmocka_unit_test(test_soft__send_waits_for_a_receive),
		cmocka_unit_test(test_soft__local_length_error),
		cmocka_unit_test(test_soft__remote_access_errors),
		cmocka_unit_test(test_soft__qp_access_flags_are_checked),
		cmocka_unit_test(test_soft__peer_death),
		cmocka_unit_test(test_soft__peer_death_seen_despite_a_fork_child),
		cmocka_unit_test(test_soft__unsupported_ops_say_so),
		cmocka_unit_test(test_soft__close_with_traffic_in_flight),
		cmocka_unit_test(test_soft__many_messages_in_order),
		cmocka_unit_test(test_soft__threads_share_a_cq),
		cmocka_unit_test(test_soft__cq_overflow_moves_the_qp_to_error),
		cmocka_unit_test(test_soft__ipv6_and_bad_listen_addr),
		cmocka_unit_test(test_soft__unreachable_peer_fails_the_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
