/*
 * Memory windows on soft0 end to end (rverbs/mw.h): bind, remote WRITE/READ
 * through the window, the window's bounds and rights, LOCAL_INV, type 1 vs
 * type 2 (the STag association with the binding QP's stream, RFC 5040), the
 * MW -> MR edge of the ownership graph, and the argument checks. Two or three
 * contexts on 127.0.0.1; every test closes everything.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "soft-pair.h"


#define MRACC (RV_ACCESS_ALL_REMOTE | RV_ACCESS_MW_BIND)
#define WIN_OFF 4096
#define WIN_LEN 1024

static void pair_open(struct side *a, struct side *b)
{
	side_open(a, 0, MRACC);
	side_open(b, 0, MRACC);
	connect_pair(a, &DEFAULTS, b, &DEFAULTS);
}

static uint64_t baddr(struct side *s, size_t off)
{
	return (uint64_t)(uintptr_t)(s->buf + off);
}

/* Bind mw on s->qp to [WIN_OFF, +WIN_LEN) of s->mr; the bind completes. */
static void bind_ok(struct side *s, rv_mw *mw, uint32_t access)
{
	rv_mw_bind_info bi = {.mr = s->mr, .addr = baddr(s, WIN_OFF), .length = WIN_LEN, .access = access};
	rv_wc wc;

	assert_int_equal(rv_qp_bind_mw(s->qp, mw, &bi, 77, RV_SEND_SIGNALED), 0);
	wc = poll_one(s->cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_BIND_MW);
	assert_int_equal(wc.wr_id, 77);
}

static uint32_t write_status(struct side *a, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	rv_sge g = sge(a, 0, len);
	assert_int_equal(rv_qp_write(a->qp, &g, raddr, rkey, 5), 0);
	return poll_one(a->cq).status;
}

static uint32_t read_status(struct side *a, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	rv_sge g = sge(a, 32768, len);
	assert_int_equal(rv_qp_read(a->qp, &g, raddr, rkey, 6), 0);
	return poll_one(a->cq).status;
}

/* WRITE and READ inside a type 2 window; the rkey is the window's, not the MR's. */
static void test_soft_mw__bind_write_read(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL;
	uint32_t k0;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	assert_int_equal(rv_mw_type_of(mw), RV_MW_TYPE_2);
	k0 = rv_mw_rkey(mw);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ);
	/* ibv_inc_rkey: same index, key byte + 1. */
	assert_int_equal(rv_mw_rkey(mw) & ~0xffu, k0 & ~0xffu);
	assert_int_equal(rv_mw_rkey(mw) & 0xffu, (k0 + 1) & 0xffu);
	assert_int_not_equal(rv_mw_rkey(mw), rv_mr_rkey(b.mr));

	fill(a.buf, WIN_LEN, 3);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), WIN_LEN), RV_WC_SUCCESS);
	assert_memory_equal(b.buf + WIN_OFF, a.buf, WIN_LEN);
	fill(b.buf + WIN_OFF + 100, 200, 9);
	assert_int_equal(read_status(&a, baddr(&b, WIN_OFF + 100), rv_mw_rkey(mw), 200), RV_WC_SUCCESS);
	assert_memory_equal(a.buf + 32768, b.buf + WIN_OFF + 100, 200);
	assert_int_equal(rv_mw_close(mw), 0);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

/* rv_mr_rereg refuses an MR a window was bound to (the window copied its
 * range and rights); once the window is closed it goes through. */
static void test_soft_mw__rereg_refused_while_bound(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL;
	uint32_t key;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	key = rv_mr_rkey(b.mr);
	assert_int_equal(rv_mr_rereg(b.mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), -EBUSY);
	assert_non_null(strstr(rv_error_last(), "memory window was bound"));
	assert_int_equal(rv_mr_rkey(b.mr), key);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 8), RV_WC_SUCCESS);
	assert_int_equal(rv_mw_close(mw), 0);
	rv_mw_unref(mw);
	assert_int_equal(rv_mr_rereg(b.mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), 0);
	/* soft0 keeps the keys; the old rkey now has the new (no remote) rights. */
	assert_int_equal(rv_mr_rkey(b.mr), key);
	assert_int_equal(write_status(&a, baddr(&b, 0), key, 8), RV_WC_REM_ACCESS_ERR);
	side_close(&a);
	side_close(&b);
}

/* IB o10-36.2.x: a window's rights are its own. The MR needs only MW_BIND
 * (and LOCAL_WRITE for a window granting remote write or atomic); remote
 * access through the window is checked against the window, not the MR. */
static void test_soft_mw__window_rights_are_its_own(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL, *mw2 = NULL;
	rv_mr *ro = NULL;
	rv_mw_bind_info bi;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, MRACC);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_MW_BIND); /* no remote rights */
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	/* The MR's own rkey grants nothing remotely. */
	assert_int_equal(write_status(&a, baddr(&b, 0), rv_mr_rkey(b.mr), 8), RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	side_close(&a);
	side_close(&b);

	side_open(&a, 0, MRACC);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_MW_BIND);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	fill(a.buf, 64, 3);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 64), RV_WC_SUCCESS);
	assert_memory_equal(b.buf + WIN_OFF, a.buf, 64);
	/* A window granting remote write needs an MR with LOCAL_WRITE. */
	assert_int_equal(rv_mr_alloc(b.pd, 4096, RV_ACCESS_MW_BIND, NULL, &ro), 0);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_1, &mw2), 0);
	bi = (rv_mw_bind_info){.mr = ro, .addr = (uint64_t)(uintptr_t)rv_mr_addr(ro), .length = 64,
			       .access = RV_ACCESS_REMOTE_WRITE};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw2, &bi, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "RV_ACCESS_LOCAL_WRITE"));
	bi.access = RV_ACCESS_REMOTE_ATOMIC;
	assert_int_equal(rv_qp_bind_mw(b.qp, mw2, &bi, 0, 0), -EINVAL);
	/* ... but a read-only window does not. */
	bi.access = RV_ACCESS_REMOTE_READ;
	assert_int_equal(rv_qp_bind_mw(b.qp, mw2, &bi, 9, RV_SEND_SIGNALED), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	/* The window's rights govern: it grants no READ. */
	assert_int_equal(read_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_mw_close(mw2), 0);
	rv_mw_unref(mw2);
	rv_mw_unref(mw);
	rv_mr_unref(ro);
	side_close(&a);
	side_close(&b);
}

/* A window may grant nothing (IB allows an empty set of rights): the bind
 * succeeds and every remote access through it is refused. */
static void test_soft_mw__window_granting_nothing(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL;
	rv_mw_bind_info bi;
	rv_wc wc;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bi = (rv_mw_bind_info){.mr = b.mr, .addr = baddr(&b, WIN_OFF), .length = 64, .access = 0};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 10, RV_SEND_SIGNALED), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 8), RV_WC_REM_ACCESS_ERR);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

/* rv_mr_rereg on soft0 keeps the keys (ibv_rereg_mr(3): they may change):
 * the peer's rkey and the posted lkey get the new PD, range and rights. */
static void test_soft_mw__rereg_keeps_keys(void **state)
{
	struct side a, b;
	rv_pd *pd2 = NULL;
	uint32_t lkey, rkey;

	(void)state;
	pair_open(&a, &b);
	lkey = rv_mr_lkey(b.mr);
	rkey = rv_mr_rkey(b.mr);
	assert_int_equal(rv_mr_rereg(b.mr, RV_REREG_ACCESS, NULL, NULL, 0,
				     RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(rv_mr_lkey(b.mr), lkey);
	assert_int_equal(rv_mr_rkey(b.mr), rkey);
	fill(a.buf, 32, 7);
	assert_int_equal(write_status(&a, baddr(&b, 128), rkey, 32), RV_WC_SUCCESS);
	assert_memory_equal(b.buf + 128, a.buf, 32);
	/* READ was taken away. */
	assert_int_equal(read_status(&a, baddr(&b, 128), rkey, 32), RV_WC_REM_ACCESS_ERR);
	side_close(&a);
	side_close(&b);

	/* Another PD: the same key fails for the QP of the old PD. */
	pair_open(&a, &b);
	rkey = rv_mr_rkey(b.mr);
	assert_int_equal(rv_pd_new(b.ctx, NULL, &pd2), 0);
	assert_int_equal(rv_mr_rereg(b.mr, RV_REREG_PD, pd2, NULL, 0, 0), 0);
	assert_int_equal(rv_mr_rkey(b.mr), rkey);
	assert_int_equal(write_status(&a, baddr(&b, 0), rkey, 8), RV_WC_REM_ACCESS_ERR);
	assert_int_equal(rv_mr_rereg(b.mr, RV_REREG_PD, b.pd, NULL, 0, 0), 0);
	rv_pd_unref(pd2);
	side_close(&a);
	side_close(&b);
}

/* Both QPs of a connection reset and connected again, one after the other
 * (as rdma-core's tests restate QPs): whichever side's request reaches the
 * other while that one still holds the old connection, or is in ERR, waits
 * for its next RTR instead of being refused; RESET drops the QP's
 * completions still in its CQ (the flushes of its former life); traffic
 * then flows. */
static void reconnect_case(bool lower_first)
{
	struct side a, b, *first, *second;
	rv_endpoint ea, eb, *pe_first, *pe_second;
	rv_qp_attr r = {.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET};
	rv_sge g;
	rv_wc wc;

	pair_open(&a, &b);
	/* Traffic first: the connection is up on both sides. */
	g = sge(&b, 0, 64);
	assert_int_equal(rv_qp_recv(b.qp, &g, 1), 0);
	g = sge(&a, 0, 64);
	assert_int_equal(rv_qp_send(a.qp, &g, 2), 0);
	assert_int_equal(poll_one(a.cq).status, RV_WC_SUCCESS);
	assert_int_equal(poll_one(b.cq).status, RV_WC_SUCCESS);
	/* A receive outstanding on each side: the first side's reset fails the
	 * other's QP, which flushes it; the resets then drop those flushes. */
	g = sge(&a, 1024, 64);
	assert_int_equal(rv_qp_recv(a.qp, &g, 7), 0);
	g = sge(&b, 1024, 64);
	assert_int_equal(rv_qp_recv(b.qp, &g, 8), 0);
	assert_int_equal(rv_qp_endpoint(a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b.qp, &eb), 0);
	/* The side whose (gid, port, qpn) is lower connects: the ports differ. */
	if ((ea.lid < eb.lid) == lower_first) {
		first = &a, second = &b, pe_first = &eb, pe_second = &ea;
	} else {
		first = &b, second = &a, pe_first = &ea, pe_second = &eb;
	}
	assert_int_equal(rv_qp_modify(first->qp, &r), 0);
	connect_one(first, pe_first, &DEFAULTS);
	assert_int_equal(rv_qp_modify(second->qp, &r), 0);
	connect_one(second, pe_second, &DEFAULTS);
	g = sge(&b, 0, 64);
	assert_int_equal(rv_qp_recv(b.qp, &g, 3), 0);
	fill(a.buf, 64, 9);
	g = sge(&a, 0, 64);
	assert_int_equal(rv_qp_send(a.qp, &g, 4), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 4);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	assert_memory_equal(b.buf, a.buf, 64);
	side_close(&a);
	side_close(&b);
}

static void test_soft_mw__reset_reconnect_lower_first(void **state)
{
	(void)state;
	reconnect_case(true);
}

static void test_soft_mw__reset_reconnect_higher_first(void **state)
{
	(void)state;
	reconnect_case(false);
}

/* kind 0: past the end of the window (inside the MR); 1: before it; 2:
 * READ on a WRITE-only window; 3: the key before the bind (stale). */
static void outside_case(int kind)
{
	struct side a, b;
	uint8_t before[BUF];
	rv_mw *mw = NULL;
	uint32_t st, k0;

	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	k0 = rv_mw_rkey(mw);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	fill(b.buf, BUF, 40);
	memcpy(before, b.buf, BUF);
	fill(a.buf, 64, 1);
	if (kind == 0)
		st = write_status(&a, baddr(&b, WIN_OFF + WIN_LEN - 32), rv_mw_rkey(mw), 64);
	else if (kind == 1)
		st = write_status(&a, baddr(&b, WIN_OFF - 8), rv_mw_rkey(mw), 16);
	else if (kind == 2)
		st = read_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16);
	else
		st = write_status(&a, baddr(&b, WIN_OFF), k0, 16);
	assert_int_equal(st, RV_WC_REM_ACCESS_ERR);
	assert_memory_equal(b.buf, before, BUF);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

static void test_soft_mw__outside_window_refused(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++)
		outside_case(k);
}

/* LOCAL_INV of a bound type 2 window: later access refused; bound again, it works. */
static void test_soft_mw__local_invalidate(void **state)
{
	struct side a, b;
	rv_send_wr wr;
	rv_mw *mw = NULL;
	rv_wc wc;
	size_t n = 0;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_SUCCESS);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = RV_WR_LOCAL_INV;
	wr.send_flags = RV_SEND_SIGNALED;
	wr.imm_data = rv_mw_rkey(mw);
	assert_int_equal(rv_qp_post_send(b.qp, &wr, 1, &n), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_LOCAL_INV);
	assert_int_equal(wc.wr_id, 9);
	/* Bound again (new key): works; then invalidated: refused, memory unchanged. */
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_SUCCESS);
	wr.imm_data = rv_mw_rkey(mw);
	assert_int_equal(rv_qp_post_send(b.qp, &wr, 1, &n), 0);
	assert_int_equal(poll_one(b.cq).status, RV_WC_SUCCESS);
	memset(b.buf + WIN_OFF, 0x5a, 16);
	fill(a.buf, 16, 77);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 16; i++)
		assert_int_equal(b.buf[WIN_OFF + i], 0x5a);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

/* LOCAL_INV of a plain MR's key, or of a type 1 window: local protection error. */
static void test_soft_mw__local_invalidate_refused(void **state)
{
	for (int k = 0; k < 2; k++) {
		struct side a, b;
		rv_send_wr wr;
		rv_mw *mw = NULL;
		size_t n = 0;

		(void)state;
		pair_open(&a, &b);
		assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_1, &mw), 0);
		bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
		memset(&wr, 0, sizeof(wr));
		wr.opcode = RV_WR_LOCAL_INV;
		wr.send_flags = RV_SEND_SIGNALED;
		wr.imm_data = k == 0 ? rv_mr_rkey(b.mr) : rv_mw_rkey(mw);
		assert_int_equal(rv_qp_post_send(b.qp, &wr, 1, &n), 0);
		assert_int_equal(poll_one(b.cq).status, RV_WC_LOC_PROT_ERR);
		rv_mw_unref(mw);
		side_close(&a);
		side_close(&b);
	}
}

/* A type 2 window answers only the stream of the QP that bound it; a type 1
 * window any QP of the PD. c talks to b2, a second QP in b's PD. */
static void test_soft_mw__type2_tied_to_qp(void **state)
{
	struct side a, b, c;
	rv_qp_init_attr qa;
	rv_qp *qp1;
	rv_mw *w1 = NULL, *w2 = NULL;

	(void)state;
	pair_open(&a, &b);
	side_open(&c, 0, MRACC);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = b.cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qp1 = b.qp;
	assert_int_equal(rv_qp_new(b.pd, &qa, &b.qp), 0);
	{
		struct side b2 = b;
		connect_pair(&c, &DEFAULTS, &b2, &DEFAULTS);
	}
	/* b.qp is now the second QP (connected to c); bind both windows on qp1. */
	{
		rv_qp *qp2 = b.qp;
		b.qp = qp1;
		assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_1, &w1), 0);
		assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &w2), 0);
		bind_ok(&b, w1, RV_ACCESS_REMOTE_WRITE);
		bind_ok(&b, w2, RV_ACCESS_REMOTE_WRITE);
		assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(w2), 16), RV_WC_SUCCESS);
		assert_int_equal(write_status(&c, baddr(&b, WIN_OFF), rv_mw_rkey(w1), 16), RV_WC_SUCCESS);
		memset(b.buf + WIN_OFF, 0x33, 16);
		assert_int_equal(write_status(&c, baddr(&b, WIN_OFF), rv_mw_rkey(w2), 16), RV_WC_REM_ACCESS_ERR);
		for (int i = 0; i < 16; i++)
			assert_int_equal(b.buf[WIN_OFF + i], 0x33);
		rv_qp_unref(qp2);
	}
	rv_mw_unref(w1);
	rv_mw_unref(w2);
	side_close(&a);
	side_close(&b);
	side_close(&c);
}

/* A fresh QP for s, like side_open's. */
static void new_qp(struct side *s)
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

/* Destroying the QP a type 2 window is bound on invalidates the window: a
 * new QP can bind it again (a bound type 2 window could not be), and no
 * later QP inherits the old association. */
static void test_soft_mw__qp_destroy_invalidates_type2(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rv_qp_close(b.qp), 0);
	rv_qp_unref(b.qp);
	rv_qp_unref(a.qp);
	new_qp(&a);
	new_qp(&b);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	fill(a.buf, 16, 8);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_SUCCESS);
	assert_memory_equal(b.buf + WIN_OFF, a.buf, 16);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

/* Type 1: a zero-length bind unbinds; access refused afterwards. */
static void test_soft_mw__type1_unbind(void **state)
{
	struct side a, b;
	rv_mw_bind_info bi;
	rv_mw *mw = NULL;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_1, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_SUCCESS);
	bi = (rv_mw_bind_info){.mr = b.mr, .addr = baddr(&b, WIN_OFF), .length = 0, .access = 0};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 3, RV_SEND_SIGNALED), 0);
	assert_int_equal(poll_one(b.cq).status, RV_WC_SUCCESS);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_REM_ACCESS_ERR);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

/* Closing the MR closes the window bound to it: its key stops working, the
 * handle answers -RV_ECLOSED. */
static void test_soft_mw__mr_close_closes_window(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL;
	rv_mr *mr2 = NULL;
	rv_mw_bind_info bi;
	uint32_t key;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	key = rv_mw_rkey(mw);
	assert_int_equal(rv_mr_close(b.mr), 0);
	assert_int_equal(rv_mw_rkey(mw), 0);
	assert_int_equal(rv_mw_close(mw), 0); /* already closed: a no-op */
	assert_int_equal(rv_mr_alloc(b.pd, BUF, MRACC, NULL, &mr2), 0);
	bi = (rv_mw_bind_info){.mr = mr2, .addr = (uint64_t)(uintptr_t)rv_mr_addr(mr2), .length = 8,
			       .access = RV_ACCESS_REMOTE_WRITE};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 1, 0), -RV_ECLOSED);
	/* The old key is gone: the peer's access is refused, not a use after free. */
	assert_int_equal(write_status(&a, 4096, key, 16), RV_WC_REM_ACCESS_ERR);
	rv_mw_unref(mw);
	rv_mr_unref(mr2);
	side_close(&a);
	side_close(&b);
}

static void post_send_inv(struct side *a, uint32_t rkey)
{
	rv_sge g = sge(a, 0, 100);
	rv_send_wr wr;
	size_t n = 0;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 11;
	wr.opcode = RV_WR_SEND_WITH_INV;
	wr.send_flags = RV_SEND_SIGNALED;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.imm_data = rkey;
	assert_int_equal(rv_qp_post_send(a->qp, &wr, 1, &n), 0);
}

/* SEND with invalidate: the peer's type 2 window (bound on the receiving QP)
 * is invalidated; the receive completion says which key, with RV_WC_WITH_INV. */
static void test_soft_mw__send_with_invalidate(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL;
	rv_sge g;
	rv_wc wc;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	bind_ok(&b, mw, RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_SUCCESS);
	g = sge(&b, 8192, 4096);
	assert_int_equal(rv_qp_recv(b.qp, &g, 21), 0);
	fill(a.buf, 100, 5);
	post_send_inv(&a, rv_mw_rkey(mw));
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_SEND);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(wc.byte_len, 100);
	assert_true(wc.wc_flags & RV_WC_WITH_INV);
	assert_int_equal(wc.imm_data, rv_mw_rkey(mw));
	assert_memory_equal(b.buf + 8192, a.buf, 100);
	memset(b.buf + WIN_OFF, 0x44, 16);
	assert_int_equal(write_status(&a, baddr(&b, WIN_OFF), rv_mw_rkey(mw), 16), RV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 16; i++)
		assert_int_equal(b.buf[WIN_OFF + i], 0x44);
	rv_mw_unref(mw);
	side_close(&a);
	side_close(&b);
}

/* SEND with invalidate naming an MR's key (not invalidatable on soft0): the
 * receiver TERMINATEs, the sender's SEND gets a remote access error. */
static void test_soft_mw__send_with_invalidate_refused(void **state)
{
	struct side a, b;
	rv_sge g;

	(void)state;
	pair_open(&a, &b);
	g = sge(&b, 8192, 4096);
	assert_int_equal(rv_qp_recv(b.qp, &g, 21), 0);
	post_send_inv(&a, rv_mr_rkey(b.mr));
	assert_int_equal(poll_one(a.cq).status, RV_WC_REM_ACCESS_ERR);
	/* Still works on a fresh pair with a window: covered above. */
	side_close(&a);
	side_close(&b);
}

static void test_soft_mw__bad_arguments(void **state)
{
	struct side a, b;
	rv_mw *mw = NULL, *mw1 = NULL;
	rv_mr *plain = NULL, *other = NULL;
	rv_mw_bind_info bi;

	(void)state;
	pair_open(&a, &b);
	assert_int_equal(rv_mw_alloc(NULL, RV_MW_TYPE_1, &mw), -EINVAL);
	assert_int_equal(rv_mw_alloc(b.pd, 3, &mw), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "RV_MW_TYPE_1"));
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, NULL), -EINVAL);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_2, &mw), 0);
	assert_int_equal(rv_mw_alloc(b.pd, RV_MW_TYPE_1, &mw1), 0);
	assert_int_equal(rv_mw_rkey(NULL), 0);
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, NULL, 0, 0), -EINVAL);
	bi = (rv_mw_bind_info){.mr = b.mr, .addr = baddr(&b, WIN_OFF), .length = WIN_LEN,
			       .access = RV_ACCESS_REMOTE_WRITE};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, RV_SEND_INLINE), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "send_flags"));
	bi.access = RV_ACCESS_LOCAL_WRITE;
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, 0), -EINVAL);
	bi.access = RV_ACCESS_REMOTE_WRITE;
	bi.length = BUF; /* past the MR's end */
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "not inside the MR"));
	bi.addr = baddr(&b, 0) - 1;
	bi.length = 8;
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, 0), -EINVAL);
	bi.addr = baddr(&b, WIN_OFF);
	bi.length = 0;
	bi.access = 0; /* unbind: type 1 only */
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "LOCAL_INV"));
	/* An MR without RV_ACCESS_MW_BIND. */
	assert_int_equal(rv_mr_alloc(b.pd, 4096, RV_ACCESS_ALL_REMOTE, NULL, &plain), 0);
	bi = (rv_mw_bind_info){.mr = plain, .addr = (uint64_t)(uintptr_t)rv_mr_addr(plain), .length = 8,
			       .access = RV_ACCESS_REMOTE_WRITE};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "RV_ACCESS_MW_BIND"));
	/* A window of another PD than the QP. */
	assert_int_equal(rv_qp_bind_mw(a.qp, mw, &bi, 0, 0), -EINVAL);
	/* Tied to its first MR. */
	bind_ok(&b, mw1, RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rv_mr_alloc(b.pd, 4096, MRACC, NULL, &other), 0);
	bi = (rv_mw_bind_info){.mr = other, .addr = (uint64_t)(uintptr_t)rv_mr_addr(other), .length = 8,
			       .access = RV_ACCESS_REMOTE_WRITE};
	assert_int_equal(rv_qp_bind_mw(b.qp, mw1, &bi, 0, 0), -EBUSY);
	/* Closed window. */
	assert_int_equal(rv_mw_close(mw), 0);
	assert_int_equal(rv_qp_bind_mw(b.qp, mw, &bi, 0, 0), -RV_ECLOSED);
	assert_int_equal(rv_mw_rkey(mw), 0);
	rv_mw_unref(mw);
	rv_mw_unref(mw1);
	rv_mr_unref(plain);
	rv_mr_unref(other);
	side_close(&a);
	side_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_mw__bind_write_read),
		cmocka_unit_test(test_soft_mw__rereg_refused_while_bound),
		cmocka_unit_test(test_soft_mw__window_rights_are_its_own),
		cmocka_unit_test(test_soft_mw__window_granting_nothing),
		cmocka_unit_test(test_soft_mw__rereg_keeps_keys),
		cmocka_unit_test(test_soft_mw__reset_reconnect_lower_first),
		cmocka_unit_test(test_soft_mw__reset_reconnect_higher_first),
		cmocka_unit_test(test_soft_mw__outside_window_refused),
		cmocka_unit_test(test_soft_mw__local_invalidate),
		cmocka_unit_test(test_soft_mw__local_invalidate_refused),
		cmocka_unit_test(test_soft_mw__type2_tied_to_qp),
		cmocka_unit_test(test_soft_mw__type1_unbind),
		cmocka_unit_test(test_soft_mw__qp_destroy_invalidates_type2),
		cmocka_unit_test(test_soft_mw__mr_close_closes_window),
		cmocka_unit_test(test_soft_mw__send_with_invalidate),
		cmocka_unit_test(test_soft_mw__send_with_invalidate_refused),
		cmocka_unit_test(test_soft_mw__bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
