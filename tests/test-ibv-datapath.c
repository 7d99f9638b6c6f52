/*
 * The libibverbs driver's data path (lib/drivers/ibv/datapath.c) against a
 * mock provider: ibv_post_send, ibv_post_recv and ibv_poll_cq are inline
 * calls through ibv_context::ops, so a fake context proves the batching,
 * the WR chains, n_posted from bad_wr and the polling loop without hardware.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/ibv/ibv-driver.h"
#include "drivers/ibv/translate.h"

#define MAX_CALLS 16
#define MAX_WRS 256

/* What the mock provider saw and how it should answer. */
static struct {
	int calls;
	size_t chain_len[MAX_CALLS];
	uint64_t wr_ids[MAX_WRS];
	unsigned flags[MAX_WRS];
	const void *sg_lists[MAX_WRS];
	const void *wr_ptrs[MAX_WRS]; /* the WR the provider was given */
	unsigned opcodes[MAX_WRS];
	uint32_t imm_be[MAX_WRS];    /* imm_data as given (network order) */
	uint64_t raddrs[MAX_WRS];
	uint32_t rkeys[MAX_WRS];
	int num_sges[MAX_WRS];
	size_t seen;            /* WRs seen over all calls */
	long fail_at;           /* overall index of the WR to refuse, or -1 */
	int fail_rc;            /* what the provider returns then */
	int bad_null;           /* the provider leaves *bad_wr NULL */
	/* poll */
	int available;          /* completions the CQ holds */
	int poll_want[MAX_CALLS];
	int poll_rc_after;      /* once this many were polled, return poll_err */
	int poll_err;
} mock;

static int mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	size_t n = 0;

	(void)qp;
	mock.calls++;
	for (; wr; wr = wr->next, n++) {
		if ((long)mock.seen == mock.fail_at) {
			mock.chain_len[mock.calls - 1] = n;
			*bad = mock.bad_null ? NULL : wr;
			return mock.fail_rc;
		}
		mock.wr_ids[mock.seen] = wr->wr_id;
		mock.flags[mock.seen] = wr->send_flags;
		mock.sg_lists[mock.seen] = wr->sg_list;
		mock.wr_ptrs[mock.seen] = wr;
		mock.opcodes[mock.seen] = wr->opcode;
		mock.imm_be[mock.seen] = wr->imm_data;
		mock.raddrs[mock.seen] = wr->wr.rdma.remote_addr;
		mock.rkeys[mock.seen] = wr->wr.rdma.rkey;
		mock.num_sges[mock.seen] = wr->num_sge;
		mock.seen++;
	}
	mock.chain_len[mock.calls - 1] = n;
	return 0;
}

static int mock_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	size_t n = 0;

	(void)qp;
	mock.calls++;
	for (; wr; wr = wr->next, n++) {
		if ((long)mock.seen == mock.fail_at) {
			mock.chain_len[mock.calls - 1] = n;
			*bad = mock.bad_null ? NULL : wr;
			return mock.fail_rc;
		}
		mock.wr_ids[mock.seen] = wr->wr_id;
		mock.sg_lists[mock.seen] = wr->sg_list;
		mock.wr_ptrs[mock.seen] = wr;
		mock.seen++;
	}
	mock.chain_len[mock.calls - 1] = n;
	return 0;
}

static int mock_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = 0;

	(void)cq;
	mock.poll_want[mock.calls++] = num;
	if (mock.poll_rc_after >= 0 && (int)mock.seen >= mock.poll_rc_after)
		return mock.poll_err;
	while (n < num && mock.available > 0) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = 1000 + mock.seen;
		wc[n].status = IBV_WC_SUCCESS;
		wc[n].opcode = IBV_WC_RECV;
		wc[n].byte_len = (uint32_t)mock.seen;
		wc[n].wc_flags = IBV_WC_WITH_IMM;
		wc[n].imm_data = htobe32((uint32_t)mock.seen);
		wc[n].qp_num = 0x42;
		mock.available--;
		mock.seen++;
		n++;
	}
	return n;
}

static struct ibv_context fake_ctx;
static struct ibv_qp fake_ibqp;
static struct ibv_cq fake_ibcq;
static struct rv_device fake_dev;
static struct rv_context fake_rvctx;
static struct rv_qp qp;
static struct rv_cq cq;

/* The entry under test: rv_ibv_post_send (any QP type), or the one lib/qp.c
 * caches in RC and UC QPs (setup_connected), which must behave the same. */
static int (*post_send)(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted) = rv_ibv_post_send;

static int setup(void **state)
{
	(void)state;
	memset(&mock, 0, sizeof(mock));
	mock.fail_at = -1;
	mock.poll_rc_after = -1;
	memset(&fake_ctx, 0, sizeof(fake_ctx));
	fake_ctx.ops.post_send = mock_post_send;
	fake_ctx.ops.post_recv = mock_post_recv;
	fake_ctx.ops.poll_cq = mock_poll_cq;
	memset(&fake_ibqp, 0, sizeof(fake_ibqp));
	fake_ibqp.context = &fake_ctx;
	fake_ibqp.qp_num = 0x42;
	memset(&fake_ibcq, 0, sizeof(fake_ibcq));
	fake_ibcq.context = &fake_ctx;
	memset(&fake_dev, 0, sizeof(fake_dev));
	strcpy(fake_dev.name, "mock0");
	memset(&fake_rvctx, 0, sizeof(fake_rvctx));
	fake_rvctx.dev = &fake_dev;
	fake_rvctx.drv_ctx = &fake_ctx;
	memset(&qp, 0, sizeof(qp));
	qp.drv_qp = &fake_ibqp;
	qp.ctx = &fake_rvctx;
	qp.qp_type = RV_QPT_RC;
	qp.qpn = 0x42;
	qp.state = RV_QPS_RTS;
	qp.cap = (rv_qp_cap){ .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			      .max_recv_sge = 1, .max_inline_data = 32 };
	qp.inline_below = rv_inline_below(qp.cap.max_inline_data); /* as the driver sets it */
	memset(&cq, 0, sizeof(cq));
	cq.drv_cq = &fake_ibcq;
	cq.ctx = &fake_rvctx;
	cq.cqe = 256;
	rv_error_clear();
	return 0;
}

/* What rv_qp_post_send does on an RC or UC QP of this driver. */
static int post_send_as_facade(struct rv_qp *q, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	return n == 1 ? rv_ibv_post_send_one_connected(q, wrs, n, n_posted)
		      : rv_ibv_post_send(q, wrs, n, n_posted);
}

static int setup_connected(void **state)
{
	setup(state);
	post_send = post_send_as_facade;
	return 0;
}

static int teardown_connected(void **state)
{
	(void)state;
	post_send = rv_ibv_post_send;
	return 0;
}

static rv_sge sges[MAX_WRS];

static void make_send(rv_send_wr *w, size_t n, uint32_t len)
{
	for (size_t i = 0; i < n; i++) {
		sges[i] = (rv_sge){ .addr = 0x10000 + i * 64, .length = len, .lkey = 5 };
		memset(&w[i], 0, sizeof(w[i]));
		w[i].wr_id = 100 + i;
		w[i].sg_list = &sges[i];
		w[i].num_sge = 1;
		w[i].opcode = RV_WR_RDMA_WRITE;
		w[i].send_flags = RV_SEND_SIGNALED;
		w[i].rkey = 9;
	}
}

/* A batch mixing what the batch loop builds by block copy with what it
 * hands to the one-at-a-time path (READ, two SGEs, rverbs' own flag, a
 * caller's inline mark above the limit, immediates) gives the provider, WR
 * by WR, what posting each WR alone gives it. */
static void test_ibv_datapath__post_send_mixed_batch_as_each_alone(void **state)
{
	enum { N = 12 };
	rv_sge two[2] = { { .addr = 0x1000, .length = 20, .lkey = 5 },
			  { .addr = 0x2000, .length = 12, .lkey = 5 } };
	rv_send_wr w[N];
	unsigned flags[N], opcodes[N];
	uint32_t imm[N], rkeys[N];
	uint64_t raddrs[N], ids[N];
	const void *sgl[N];
	size_t posted = 999;

	(void)state;
	make_send(w, N, 16);
	for (size_t i = 0; i < N; i++) {
		w[i].remote_addr = 0x9000 + i;
		w[i].imm_data = 0x01020300u + (uint32_t)i;
	}
	w[1].opcode = RV_WR_RDMA_READ;
	w[2].opcode = RV_WR_SEND_WITH_IMM;
	w[3].send_flags |= RV_SEND_INLINE;
	sges[3].length = 40; /* above max_inline_data 32, inline as asked */
	w[4].sg_list = two;
	w[4].num_sge = 2;
	w[5].send_flags |= RV_SEND_NO_INLINE;
	w[6].opcode = RV_WR_RDMA_WRITE_WITH_IMM;
	sges[7].length = 33; /* above the limit: not inline */
	w[8].opcode = RV_WR_SEND;
	w[9].opcode = RV_WR_RDMA_READ;
	w[10].opcode = RV_WR_RDMA_WRITE_WITH_IMM;
	sges[10].length = 0;
	assert_int_equal(post_send(&qp, w, N, &posted), 0);
	assert_int_equal(posted, N);
	assert_int_equal(mock.calls, 1);
	assert_int_equal(mock.chain_len[0], N);
	for (size_t i = 0; i < N; i++) {
		flags[i] = mock.flags[i];
		opcodes[i] = mock.opcodes[i];
		imm[i] = mock.imm_be[i];
		rkeys[i] = mock.rkeys[i];
		raddrs[i] = mock.raddrs[i];
		ids[i] = mock.wr_ids[i];
		sgl[i] = mock.sg_lists[i];
		assert_int_equal(mock.num_sges[i], w[i].num_sge);
	}
	for (size_t i = 0; i < N; i++) {
		size_t k = mock.seen;

		assert_int_equal(post_send(&qp, &w[i], 1, &posted), 0);
		assert_int_equal(flags[i], mock.flags[k]);
		assert_int_equal(opcodes[i], mock.opcodes[k]);
		assert_int_equal(rkeys[i], mock.rkeys[k]);
		assert_int_equal(raddrs[i], mock.raddrs[k]);
		assert_int_equal(ids[i], mock.wr_ids[k]);
		assert_ptr_equal(sgl[i], mock.sg_lists[k]);
		if (w[i].opcode == RV_WR_RDMA_WRITE_WITH_IMM || w[i].opcode == RV_WR_SEND_WITH_IMM)
			assert_int_equal(imm[i], htobe32(w[i].imm_data));
	}
	/* The flags themselves, against the rule (rverbs/qp.h). */
	assert_int_equal(flags[0], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(flags[1], IBV_SEND_SIGNALED);
	assert_int_equal(flags[2], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(flags[3], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(flags[4], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(flags[5], IBV_SEND_SIGNALED);
	assert_int_equal(flags[7], IBV_SEND_SIGNALED);
	assert_int_equal(opcodes[9], IBV_WR_RDMA_READ);
}

static void test_ibv_datapath__post_send_batches_of_16_in_order(void **state)
{
	rv_send_wr w[40];
	size_t posted = 999;

	(void)state;
	make_send(w, 40, 64);
	assert_int_equal(post_send(&qp, w, 40, &posted), 0);
	assert_int_equal(posted, 40);
	assert_int_equal(mock.calls, 3);
	assert_int_equal(mock.chain_len[0], 16);
	assert_int_equal(mock.chain_len[1], 16);
	assert_int_equal(mock.chain_len[2], 8);
	for (size_t i = 0; i < 40; i++) {
		assert_int_equal(mock.wr_ids[i], 100 + i);
		/* The caller's SGE, not a copy. */
		assert_ptr_equal(mock.sg_lists[i], &sges[i]);
		/* 64 bytes exceed max_inline_data 32: not inline. */
		assert_int_equal(mock.flags[i], IBV_SEND_SIGNALED);
	}
}

/* A batch on a connected QP is built chunk by chunk while its WRs are
 * WRITEs and SENDs of one SGE with libibverbs flags; a WR of another kind in
 * the second chunk hands the rest, from that chunk's start, to the general
 * path: every WR reaches the provider once, in order, with the flags and
 * immediate each gets alone, and the counts and messages name WRs by their
 * index in the caller's array. */
static void test_ibv_datapath__post_send_batch_falls_back_from_its_chunk(void **state)
{
	enum { N = 36 };
	rv_send_wr w[N];
	size_t posted = 999;
	int dummy;

	(void)state;
	make_send(w, N, 8);
	for (size_t i = 0; i < N; i++) {
		w[i].opcode = i % 4 == 1 ? RV_WR_RDMA_WRITE_WITH_IMM : i % 4 == 3 ? RV_WR_SEND_WITH_IMM
			    : i % 4 == 2 ? RV_WR_SEND : RV_WR_RDMA_WRITE;
		w[i].imm_data = 0x0a0b0c00u + (uint32_t)i;
		w[i].remote_addr = 0x7000 + i;
		sges[i].length = i % 3 == 0 ? 33 : 32; /* every third above max_inline_data 32 */
	}
	w[5].send_flags |= RV_SEND_INLINE; /* the caller's inline, as it is */
	sges[5].length = 40;
	w[18].opcode = RV_WR_RDMA_READ; /* second chunk: the general path from WR 16 */
	assert_int_equal(post_send(&qp, w, N, &posted), 0);
	assert_int_equal(posted, N);
	assert_int_equal(mock.seen, N);
	assert_int_equal(mock.calls, 3);
	assert_int_equal(mock.chain_len[0], 16);
	assert_int_equal(mock.chain_len[1], 16);
	assert_int_equal(mock.chain_len[2], 4);
	for (size_t i = 0; i < N; i++) {
		unsigned want = IBV_SEND_SIGNALED;

		if (i == 5 || (i != 18 && sges[i].length <= 32))
			want |= IBV_SEND_INLINE;
		assert_int_equal(mock.wr_ids[i], 100 + i);
		assert_int_equal(mock.flags[i], want);
		assert_int_equal(mock.raddrs[i], 0x7000 + i);
		assert_ptr_equal(mock.sg_lists[i], &sges[i]);
		if (w[i].opcode == RV_WR_RDMA_WRITE_WITH_IMM || w[i].opcode == RV_WR_SEND_WITH_IMM)
			assert_int_equal(mock.imm_be[i], htobe32(w[i].imm_data));
	}
	assert_int_equal(mock.opcodes[18], IBV_WR_RDMA_READ);

	/* A WR the driver refuses in the second chunk: the first chunk and
	 * the WRs of the second before it are posted, the message names it
	 * by its index in the array. */
	setup(NULL);
	make_send(w, N, 8);
	w[20].opcode = RV_WR_BIND_MW;
	assert_int_equal(post_send(&qp, w, N, &posted), -EOPNOTSUPP);
	assert_int_equal(posted, 20);
	assert_int_equal(mock.seen, 20);
	assert_non_null(strstr(rv_error_last(), "WR 20 (BIND_MW)"));

	setup(NULL);
	make_send(w, N, 8);
	w[33].reserved_next = &dummy;
	assert_int_equal(post_send(&qp, w, N, &posted), -EINVAL);
	assert_int_equal(posted, 33);
	assert_int_equal(mock.seen, 33);
	assert_non_null(strstr(rv_error_last(), "WR 33 has reserved_next"));
}

/* A QP without inline room sends nothing inline by itself, on every path;
 * the caller's RV_SEND_INLINE still goes through. */
static void test_ibv_datapath__no_inline_room_no_automatic_inline(void **state)
{
	rv_send_wr w[20];
	size_t posted;

	(void)state;
	qp.cap.max_inline_data = 0;
	qp.inline_below = rv_inline_below(0);
	make_send(w, 20, 0);
	w[3].send_flags |= RV_SEND_INLINE;
	w[4].opcode = RV_WR_SEND_WITH_IMM;
	assert_int_equal(post_send(&qp, w, 20, &posted), 0);
	assert_int_equal(post_send(&qp, &w[0], 1, &posted), 0);
	assert_int_equal(post_send(&qp, &w[4], 1, &posted), 0);
	assert_int_equal(mock.seen, 22);
	for (size_t i = 0; i < 22; i++)
		assert_int_equal(mock.flags[i], i == 3 ? IBV_SEND_SIGNALED | IBV_SEND_INLINE : IBV_SEND_SIGNALED);
}

/* rv_inline_below: the automatic-inline rule (length <= max_inline_data, and
 * some inline room) as one compare. */
static void test_ibv_datapath__inline_below_is_the_rule(void **state)
{
	static const uint32_t limits[] = {0, 1, 32, 220, UINT32_MAX - 1};
	static const uint32_t lengths[] = {0, 1, 31, 32, 33, 220, 221, UINT32_MAX - 1};

	(void)state;
	for (size_t a = 0; a < sizeof(limits) / sizeof(limits[0]); a++)
		for (size_t b = 0; b < sizeof(lengths) / sizeof(lengths[0]); b++) {
			bool rule = limits[a] != 0 && lengths[b] <= limits[a];

			assert_int_equal(lengths[b] < rv_inline_below(limits[a]), rule);
		}
	/* The one value it cannot express: a payload of 4 GiB - 1 on a QP
	 * claiming that much inline room goes by reference. */
	assert_int_equal(rv_inline_below(UINT32_MAX), UINT32_MAX);
}

static void test_ibv_datapath__post_send_inline_when_it_fits(void **state)
{
	rv_send_wr w[3];
	size_t posted;

	(void)state;
	make_send(w, 3, 32);
	w[1].send_flags |= RV_SEND_NO_INLINE;
	assert_int_equal(post_send(&qp, w, 3, &posted), 0);
	assert_int_equal(posted, 3);
	assert_int_equal(mock.flags[0], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(mock.flags[1], IBV_SEND_SIGNALED);
	assert_int_equal(mock.flags[2], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
}

/* One WR at a time: the straight-line path (one SGE, plain flags, common
 * opcode) and the general one (anything else) agree on what reaches the
 * provider. */
static void test_ibv_datapath__post_send_one_wr_each_path(void **state)
{
	rv_sge two[2] = { { .addr = 0x1000, .length = 20, .lkey = 5 },
			  { .addr = 0x2000, .length = 12, .lkey = 5 } };
	rv_send_wr w;
	size_t posted = 999;

	(void)state;
	make_send(&w, 1, 32);
	assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
	assert_int_equal(posted, 1);
	assert_int_equal(mock.chain_len[0], 1);
	assert_int_equal(mock.flags[0], IBV_SEND_SIGNALED | IBV_SEND_INLINE);

	/* 33 bytes do not fit max_inline_data 32. */
	sges[0].length = 33;
	assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
	assert_int_equal(mock.flags[1], IBV_SEND_SIGNALED);

	/* Two SGEs of 32 bytes together: the general path, inline. */
	w.sg_list = two;
	w.num_sge = 2;
	assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
	assert_int_equal(mock.flags[2], IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_ptr_equal(mock.sg_lists[2], two);

	/* rverbs' own flag never reaches libibverbs. */
	w.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	w.num_sge = 1;
	assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
	assert_int_equal(mock.flags[3], IBV_SEND_SIGNALED);

	/* A READ never goes inline; an atomic takes the general path. */
	w.send_flags = RV_SEND_SIGNALED;
	w.opcode = RV_WR_RDMA_READ;
	assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
	assert_int_equal(mock.flags[4], IBV_SEND_SIGNALED);
	w.opcode = RV_WR_ATOMIC_FETCH_AND_ADD;
	assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
	assert_int_equal(mock.flags[5], IBV_SEND_SIGNALED);
	assert_int_equal(mock.calls, 6);
	assert_int_equal(posted, 1);

	/* A refused single WR: nothing posted, the message names it. */
	mock.fail_at = (long)mock.seen;
	mock.fail_rc = ENOMEM;
	w.opcode = RV_WR_RDMA_WRITE;
	assert_int_equal(post_send(&qp, &w, 1, &posted), -ENOMEM);
	assert_int_equal(posted, 0);
	assert_non_null(strstr(rv_error_last(), "send queue is full"));
}

/* A single WR with nothing to translate reaches the provider as the caller's
 * own memory (rv_send_wr starts as ibv_send_wr); one that needs translating
 * (automatic inline, immediate data, rverbs' flags, READ marked inline) is
 * built on the stack; both give the provider the same flags as before. */
static void test_ibv_datapath__post_send_as_is_when_nothing_to_translate(void **state)
{
	rv_send_wr w;
	size_t posted = 999;
	struct {
		uint32_t opcode, flags, len, max_inline;
		bool as_is;
		unsigned ibv_flags;
	} cases[] = {
		{RV_WR_RDMA_WRITE, RV_SEND_SIGNALED | RV_SEND_INLINE, 32, 32, true, IBV_SEND_SIGNALED | IBV_SEND_INLINE},
		{RV_WR_SEND, RV_SEND_INLINE | RV_SEND_SOLICITED, 8, 32, true, IBV_SEND_INLINE | IBV_SEND_SOLICITED},
		{RV_WR_RDMA_WRITE, RV_SEND_SIGNALED, 33, 32, true, IBV_SEND_SIGNALED},
		{RV_WR_SEND, RV_SEND_FENCE, 8, 0, true, IBV_SEND_FENCE},
		{RV_WR_RDMA_READ, RV_SEND_SIGNALED, 8, 32, true, IBV_SEND_SIGNALED},
		{RV_WR_RDMA_WRITE, RV_SEND_SIGNALED, 32, 32, false, IBV_SEND_SIGNALED | IBV_SEND_INLINE},
		{RV_WR_RDMA_WRITE_WITH_IMM, RV_SEND_INLINE, 8, 32, false, IBV_SEND_INLINE},
		{RV_WR_SEND_WITH_IMM, 0, 64, 32, false, 0},
		{RV_WR_RDMA_WRITE, RV_SEND_NO_INLINE, 8, 32, false, 0},
		{RV_WR_RDMA_READ, RV_SEND_INLINE, 8, 32, false, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		make_send(&w, 1, cases[i].len);
		w.opcode = cases[i].opcode;
		w.send_flags = cases[i].flags;
		qp.cap.max_inline_data = cases[i].max_inline;
		qp.inline_below = rv_inline_below(cases[i].max_inline);
		assert_int_equal(post_send(&qp, &w, 1, &posted), 0);
		assert_int_equal(posted, 1);
		assert_int_equal(mock.flags[i], cases[i].ibv_flags);
		assert_ptr_equal(mock.sg_lists[i], &sges[0]);
		assert_int_equal(mock.wr_ids[i], 100);
		if (cases[i].as_is)
			assert_ptr_equal(mock.wr_ptrs[i], &w);
		else
			assert_ptr_not_equal(mock.wr_ptrs[i], &w);
	}
	assert_int_equal(mock.calls, (int)(sizeof(cases) / sizeof(cases[0])));
}

/* reserved_next must be NULL, on the single-WR path and in a batch: the WRs
 * before it are posted, it is refused with a message that names it. */
static void test_ibv_datapath__reserved_next_is_refused(void **state)
{
	rv_send_wr w[3];
	rv_recv_wr r[3];
	size_t posted = 999;
	int dummy;

	(void)state;
	make_send(w, 3, 8);
	w[0].send_flags |= RV_SEND_INLINE;
	w[0].reserved_next = &dummy;
	assert_int_equal(post_send(&qp, w, 1, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_int_equal(mock.calls, 0);
	assert_non_null(strstr(rv_error_last(), "reserved_next"));

	w[0].reserved_next = NULL;
	w[1].reserved_next = &dummy;
	assert_int_equal(post_send(&qp, w, 3, &posted), -EINVAL);
	assert_int_equal(posted, 1);
	assert_int_equal(mock.seen, 1);
	assert_non_null(strstr(rv_error_last(), "WR 1 has reserved_next"));

	memset(r, 0, sizeof(r));
	r[0].reserved_next = &dummy;
	assert_int_equal(rv_ibv_post_recv(&qp, r, 1, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	r[0].reserved_next = NULL;
	r[2].reserved_next = &dummy;
	assert_int_equal(rv_ibv_post_recv(&qp, r, 3, &posted), -EINVAL);
	assert_int_equal(posted, 2);
	assert_int_equal(mock.seen, 3);
	assert_non_null(strstr(rv_error_last(), "WR 2 has reserved_next"));

	/* A single receive otherwise goes as it is. */
	assert_int_equal(rv_ibv_post_recv(&qp, r, 1, &posted), 0);
	assert_ptr_equal(mock.wr_ptrs[3], &r[0]);
}

/* SGEs counted with no list (issue 17) are refused on every path before the
 * provider would dereference the list: one WR of each kind the single-WR
 * path sorts, and in a batch, where the WRs before it are posted. */
static void test_ibv_datapath__sge_count_without_list_is_refused(void **state)
{
	static const struct {
		uint32_t opcode, flags;
	} kinds[] = {
		{RV_WR_RDMA_WRITE, RV_SEND_SIGNALED | RV_SEND_INLINE}, /* as it is, inline */
		{RV_WR_RDMA_WRITE, RV_SEND_SIGNALED},                  /* automatic inline */
		{RV_WR_SEND_WITH_IMM, RV_SEND_SIGNALED},               /* built on the stack */
		{RV_WR_RDMA_READ, RV_SEND_SIGNALED},                   /* READ as it is */
		{RV_WR_SEND, RV_SEND_SIGNALED | RV_SEND_NO_INLINE},    /* the general path */
	};
	rv_send_wr w[3];
	rv_recv_wr r[3];
	size_t posted;

	(void)state;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		make_send(w, 3, 8);
		w[0].opcode = kinds[i].opcode;
		w[0].send_flags = kinds[i].flags;
		w[0].sg_list = NULL;
		posted = 999;
		assert_int_equal(post_send(&qp, w, 1, &posted), -EINVAL);
		assert_int_equal(posted, 0);
		assert_int_equal(mock.calls, 0);
		assert_non_null(strstr(rv_error_last(), "WR 0 has num_sge 1 but sg_list is NULL"));
	}
	make_send(w, 3, 8);
	w[1].sg_list = NULL;
	assert_int_equal(post_send(&qp, w, 3, &posted), -EINVAL);
	assert_int_equal(posted, 1);
	assert_int_equal(mock.seen, 1);
	assert_non_null(strstr(rv_error_last(), "WR 1 has num_sge 1 but sg_list is NULL"));

	memset(r, 0, sizeof(r));
	r[0].num_sge = 1;
	assert_int_equal(rv_ibv_post_recv(&qp, r, 1, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_non_null(strstr(rv_error_last(), "WR 0 has num_sge 1 but sg_list is NULL"));
	r[0].num_sge = 0;
	r[2].num_sge = 2;
	assert_int_equal(rv_ibv_post_recv(&qp, r, 3, &posted), -EINVAL);
	assert_int_equal(posted, 2);
	assert_non_null(strstr(rv_error_last(), "WR 2 has num_sge 2 but sg_list is NULL"));
}

/* The driver takes a NULL n_posted (driver.c: the facade passes the
 * caller's through): every path posts, and a refusal is still reported. */
static void test_ibv_datapath__null_n_posted_on_every_path(void **state)
{
	rv_send_wr w[20];
	rv_recv_wr r[3];
	int dummy;

	(void)state;
	make_send(w, 20, 8);
	w[0].send_flags |= RV_SEND_INLINE;
	assert_int_equal(post_send(&qp, w, 1, NULL), 0);      /* as it is */
	assert_ptr_equal(mock.wr_ptrs[0], &w[0]);
	assert_int_equal(post_send(&qp, &w[1], 1, NULL), 0);  /* translated */
	assert_ptr_not_equal(mock.wr_ptrs[1], &w[1]);
	assert_int_equal(post_send(&qp, w, 20, NULL), 0);     /* chains */
	assert_int_equal(mock.seen, 22);
	w[5].reserved_next = &dummy;
	assert_int_equal(post_send(&qp, w, 20, NULL), -EINVAL);
	assert_int_equal(mock.seen, 27);
	mock.fail_at = (long)mock.seen;
	mock.fail_rc = ENOMEM;
	assert_int_equal(post_send(&qp, w, 1, NULL), -ENOMEM);
	assert_non_null(strstr(rv_error_last(), "send queue is full"));
	mock.fail_at = -1;

	memset(r, 0, sizeof(r));
	assert_int_equal(rv_ibv_post_recv(&qp, r, 1, NULL), 0);
	assert_int_equal(rv_ibv_post_recv(&qp, r, 3, NULL), 0);
	mock.fail_at = (long)mock.seen;
	assert_int_equal(rv_ibv_post_recv(&qp, r, 1, NULL), -ENOMEM);
	assert_non_null(strstr(rv_error_last(), "receive queue is full"));
}

static void test_ibv_datapath__post_send_full_queue_counts_from_bad_wr(void **state)
{
	rv_send_wr w[40];
	size_t posted = 999;

	(void)state;
	make_send(w, 40, 64);
	mock.fail_at = 20; /* in the second batch, its fifth WR */
	mock.fail_rc = ENOMEM;
	assert_int_equal(post_send(&qp, w, 40, &posted), -ENOMEM);
	assert_int_equal(posted, 20);
	assert_int_equal(mock.calls, 2);
	assert_non_null(strstr(rv_error_last(), "rv_qp_post_send"));
	assert_non_null(strstr(rv_error_last(), "ibv_post_send"));
	assert_non_null(strstr(rv_error_last(), "WR 20"));
	assert_non_null(strstr(rv_error_last(), "send queue is full"));
	assert_non_null(strstr(rv_error_last(), "max_send_wr 64"));
}

static void test_ibv_datapath__post_send_negative_errno_provider(void **state)
{
	rv_send_wr w[4];
	size_t posted;

	(void)state;
	make_send(w, 4, 8);
	mock.fail_at = 0;
	mock.fail_rc = -EINVAL;
	assert_int_equal(post_send(&qp, w, 4, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_non_null(strstr(rv_error_last(), "max_send_sge (1)"));
}

static void test_ibv_datapath__post_send_bad_wr_unset_counts_the_batch_as_unposted(void **state)
{
	rv_send_wr w[20];
	size_t posted;

	(void)state;
	make_send(w, 20, 8);
	mock.fail_at = 18;
	mock.fail_rc = EINVAL;
	mock.bad_null = 1;
	assert_int_equal(post_send(&qp, w, 20, &posted), -EINVAL);
	assert_int_equal(posted, 16);
}

static void test_ibv_datapath__post_send_untranslatable_wr_posts_those_before(void **state)
{
	rv_send_wr w[8];
	size_t posted = 999;

	(void)state;
	make_send(w, 8, 8);
	w[5].opcode = RV_WR_BIND_MW;
	assert_int_equal(post_send(&qp, w, 8, &posted), -EOPNOTSUPP);
	assert_int_equal(posted, 5);
	assert_int_equal(mock.calls, 1);
	assert_int_equal(mock.chain_len[0], 5);
	assert_non_null(strstr(rv_error_last(), "WR 5 (BIND_MW)"));
	assert_non_null(strstr(rv_error_last(), "memory-window binds are not supported"));

	/* The very first WR: nothing reaches the provider. */
	setup(NULL);
	w[0].opcode = 77;
	assert_int_equal(post_send(&qp, w, 8, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_int_equal(mock.calls, 0);
	assert_non_null(strstr(rv_error_last(), "WR 0 has opcode 77"));

	/* A UD QP: a WR without an address handle never reaches the provider. */
	setup(NULL);
	make_send(w, 2, 8);
	w[0].opcode = RV_WR_SEND;
	qp.qp_type = RV_QPT_UD;
	assert_int_equal(post_send(&qp, w, 2, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	assert_int_equal(mock.calls, 0);
	assert_non_null(strstr(rv_error_last(), "wrs[0]: a UD send needs an address handle"));
}

static void test_ibv_datapath__post_recv_batches_and_bad_wr(void **state)
{
	rv_recv_wr w[33];
	size_t posted = 999;

	(void)state;
	for (size_t i = 0; i < 33; i++) {
		sges[i] = (rv_sge){ .addr = 0x20000 + i * 64, .length = 64, .lkey = 6 };
		w[i] = (rv_recv_wr){ .wr_id = 500 + i, .sg_list = &sges[i], .num_sge = 1 };
	}
	assert_int_equal(rv_ibv_post_recv(&qp, w, 33, &posted), 0);
	assert_int_equal(posted, 33);
	assert_int_equal(mock.calls, 3);
	assert_int_equal(mock.chain_len[2], 1);
	for (size_t i = 0; i < 33; i++) {
		assert_int_equal(mock.wr_ids[i], 500 + i);
		assert_ptr_equal(mock.sg_lists[i], &sges[i]);
	}

	setup(NULL);
	mock.fail_at = 17;
	mock.fail_rc = ENOMEM;
	assert_int_equal(rv_ibv_post_recv(&qp, w, 33, &posted), -ENOMEM);
	assert_int_equal(posted, 17);
	assert_non_null(strstr(rv_error_last(), "rv_qp_post_recv"));
	assert_non_null(strstr(rv_error_last(), "receive queue is full"));
}

static void test_ibv_datapath__poll_asks_once_and_translates_in_place(void **state)
{
	rv_wc wc[100];

	(void)state;
	/* Garbage where ibv_wc has tail padding must not reach the caller. */
	memset(wc, 0xff, sizeof(wc));
	mock.available = 40;
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 100), 40);
	/* The provider writes the caller's array: one call for all of max. */
	assert_int_equal(mock.calls, 1);
	assert_int_equal(mock.poll_want[0], 100);
	for (int i = 0; i < 40; i++) {
		assert_int_equal(wc[i].wr_id, 1000 + (uint64_t)i);
		assert_int_equal(wc[i].opcode, RV_WC_RECV);
		assert_int_equal(wc[i].imm_data, (uint32_t)i);
		assert_int_equal(wc[i].byte_len, (uint32_t)i);
		assert_int_equal(wc[i].reserved, 0);
	}
}

static void test_ibv_datapath__poll_never_asks_for_more_than_max(void **state)
{
	rv_wc wc[5];

	(void)state;
	mock.available = 40;
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 5), 5);
	assert_int_equal(mock.calls, 1);
	assert_int_equal(mock.poll_want[0], 5);
	assert_int_equal(mock.available, 35);

	setup(NULL);
	mock.available = 32;
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 1), 1);

	setup(NULL);
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 5), 0);
	assert_int_equal(mock.calls, 1);
}

static void test_ibv_datapath__poll_error_after_completions(void **state)
{
	rv_wc wc[64];

	(void)state;
	mock.available = 40;
	mock.poll_rc_after = 16;
	mock.poll_err = -2;
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 16), 16);

	/* The next poll reports the error. */
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 64), -EOVERFLOW);
	assert_non_null(strstr(rv_error_last(), "rv_cq_poll"));
	assert_non_null(strstr(rv_error_last(), "ibv_poll_cq"));
	assert_non_null(strstr(rv_error_last(), "overflow"));
}

/* A provider that reports an overflow only by the CQ error event (rxe):
 * once that event has been acknowledged, the polls return what the CQ holds,
 * then -EOVERFLOW instead of 0. */
static void test_ibv_datapath__poll_overflow_after_cq_error_event(void **state)
{
	rv_wc wc[64];

	(void)state;
	mock.available = 3;
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 64), 3);
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 64), 0);
	mock.available = 2;
	fake_ibcq.async_events_completed = 1; /* what ibv_ack_async_event(CQ_ERR) does */
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 64), 2);
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 1), -EOVERFLOW);
	assert_non_null(strstr(rv_error_last(), "IBV_EVENT_CQ_ERR"));
	assert_int_equal(rv_ibv_cq_poll(&cq, wc, 64), -EOVERFLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ibv_datapath__post_send_batches_of_16_in_order, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_mixed_batch_as_each_alone, setup),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_mixed_batch_as_each_alone,
							 setup_connected, teardown_connected, NULL),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_inline_when_it_fits, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_batch_falls_back_from_its_chunk, setup),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_batch_falls_back_from_its_chunk,
							 setup_connected, teardown_connected, NULL),
		cmocka_unit_test_setup(test_ibv_datapath__no_inline_room_no_automatic_inline, setup),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__no_inline_room_no_automatic_inline,
							 setup_connected, teardown_connected, NULL),
		cmocka_unit_test(test_ibv_datapath__inline_below_is_the_rule),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_one_wr_each_path, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_as_is_when_nothing_to_translate, setup),
		cmocka_unit_test_setup(test_ibv_datapath__reserved_next_is_refused, setup),
		cmocka_unit_test_setup(test_ibv_datapath__sge_count_without_list_is_refused, setup),
		cmocka_unit_test_setup(test_ibv_datapath__null_n_posted_on_every_path, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_full_queue_counts_from_bad_wr, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_negative_errno_provider, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_bad_wr_unset_counts_the_batch_as_unposted, setup),
		cmocka_unit_test_setup(test_ibv_datapath__post_send_untranslatable_wr_posts_those_before, setup),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_batches_of_16_in_order, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_inline_when_it_fits, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_one_wr_each_path, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_as_is_when_nothing_to_translate, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__reserved_next_is_refused, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__sge_count_without_list_is_refused, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__null_n_posted_on_every_path, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_full_queue_counts_from_bad_wr, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_negative_errno_provider, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_prestate_setup_teardown(test_ibv_datapath__post_send_bad_wr_unset_counts_the_batch_as_unposted, setup_connected, teardown_connected, NULL),
		cmocka_unit_test_setup(test_ibv_datapath__post_recv_batches_and_bad_wr, setup),
		cmocka_unit_test_setup(test_ibv_datapath__poll_asks_once_and_translates_in_place, setup),
		cmocka_unit_test_setup(test_ibv_datapath__poll_never_asks_for_more_than_max, setup),
		cmocka_unit_test_setup(test_ibv_datapath__poll_error_after_completions, setup),
		cmocka_unit_test_setup(test_ibv_datapath__poll_overflow_after_cq_error_event, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
