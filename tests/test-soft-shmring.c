/*
 * soft0's shared-memory rings (lib/drivers/soft/samehost/shmring.c) between two
 * contexts of one process (the same-host path holds: same pid, same network
 * namespace): the rings are switched on in both directions and carry the
 * frames (the ring counters say so), small and by-reference messages mixed
 * arrive in order across the switch-over with exact completion counts and the
 * WRITE before a SEND visible when the SEND completes, RVERBS_SOFT_SHM=0 and
 * RVERBS_SOFT_SHM_RING=0 keep them off, and a ring scribbled by a "hostile
 * peer" (the test writes garbage into the shared mapping) fails the QP that
 * reads it (TERMINATE, ERR, flushed receive WR) without a crash or a hang.
 */
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

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "drivers/soft/soft.h"
#include "soft-pair.h"

#define RING_HDR 4096u          /* shmring.c's layout: header page, then records */
#define RING_DATA (64u * 1024u)
#define LARGE 12000u            /* by reference (>= SOFT_SHM_MIN) */
#define SMALL 64u
#define GUARD_MS 10000

static void stats(struct side *s, uint64_t out[SOFT_RING_NSTATS])
{
	assert_int_equal(soft_shmring_stats(s->qp, out), 0);
}

/* Both sides send and receive through rings, and each took from its peer's
 * ring every frame the peer put in (the first ring frame, a zero-length
 * WRITE, may be consumed a little after the switch): hang guard only. */
static void wait_rings(struct side *a, struct side *b)
{
	int64_t end = now_ms() + GUARD_MS;
	uint64_t sa[SOFT_RING_NSTATS], sb[SOFT_RING_NSTATS];
	rv_wc wc;

	for (;;) {
		stats(a, sa);
		stats(b, sb);
		if (sa[SOFT_RING_STATE] == 3 && sb[SOFT_RING_STATE] == 3 &&
		    sa[SOFT_RING_TX_FRAMES] == sb[SOFT_RING_RX_FRAMES] && sb[SOFT_RING_TX_FRAMES] == sa[SOFT_RING_RX_FRAMES])
			return;
		if (now_ms() > end)
			fail_msg("rings not on after %d ms: states %u, %u", GUARD_MS, (unsigned)sa[SOFT_RING_STATE],
				 (unsigned)sb[SOFT_RING_STATE]);
		assert_int_equal(rv_cq_poll(a->cq, &wc, 1), 0); /* drives progress, nothing completes */
		assert_int_equal(rv_cq_poll(b->cq, &wc, 1), 0);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

/* Two sides with default attributes, connected, both directions on the rings. */
static void ring_pair(struct side *a, struct side *b)
{
	side_open(a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(b, 0, RV_ACCESS_LOCAL_WRITE);
	connect_pair(a, &DEFAULTS, b, &DEFAULTS);
	wait_rings(a, b);
}

static void post_recv(struct side *s, size_t off, uint32_t len, uint64_t id)
{
	rv_sge g = sge(s, off, len);
	rv_recv_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1};
	size_t n;

	assert_int_equal(rv_qp_post_recv(s->qp, &wr, 1, &n), 0);
}

static void post_send(struct side *s, uint32_t op, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		      uint64_t id)
{
	rv_sge g = sge(s, off, len);
	rv_send_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1, .opcode = op, .send_flags = RV_SEND_SIGNALED,
			 .remote_addr = raddr, .rkey = rkey};
	size_t n;

	assert_int_equal(rv_qp_post_send(s->qp, &wr, 1, &n), 0);
}

static int qp_state(rv_qp *qp)
{
	rv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_STATE;
	assert_int_equal(rv_qp_query(qp, &a), 0);
	return a.qp_state;
}

/* Rounds of SEND 64 B, WRITE 64 B, SEND 12000 B (by reference), SEND 64 B,
 * posted from the moment the QPs are connected, so the first rounds straddle
 * the switch from TCP to the rings: every completion once, in order, data
 * right; the WRITE is visible when the SEND after it completes. */
static void test_shmring__mixed_in_order_across_the_switch(void **state)
{
	static const uint32_t len[3] = {SMALL, LARGE, SMALL};
	const size_t slot = 16384, wroff = 3 * 16384;
	struct side a, b;
	uint64_t sa[SOFT_RING_NSTATS], sb[SOFT_RING_NSTATS];
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	for (unsigned round = 0; round < 40; round++) {
		uint64_t base = (uint64_t)round * 16;

		for (unsigned i = 0; i < 3; i++) {
			fill(a.buf + i * slot, len[i], round * 7 + i);
			post_recv(&b, i * slot, (uint32_t)slot, base + i);
		}
		fill(a.buf + wroff, SMALL, round + 100);
		post_send(&a, RV_WR_SEND, 0, len[0], 0, 0, base + 0);
		post_send(&a, RV_WR_RDMA_WRITE, wroff, SMALL,
			  (uint64_t)(uintptr_t)b.buf + wroff, rv_mr_rkey(b.mr), base + 8);
		post_send(&a, RV_WR_SEND, slot, len[1], 0, 0, base + 1);
		post_send(&a, RV_WR_SEND, 2 * slot, len[2], 0, 0, base + 2);
		/* Receiver: three receives in order, the WRITE placed before the second. */
		for (unsigned i = 0; i < 3; i++) {
			wc = poll_one_within(b.cq, GUARD_MS);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.opcode, RV_WC_RECV);
			assert_int_equal(wc.wr_id, base + i);
			assert_int_equal(wc.byte_len, len[i]);
			assert_memory_equal(b.buf + i * slot, a.buf + i * slot, len[i]);
			if (i == 1)
				assert_memory_equal(b.buf + wroff, a.buf + wroff, SMALL);
		}
		/* Sender: four completions in posting order. */
		static const uint64_t order[4] = {0, 8, 1, 2};
		for (unsigned i = 0; i < 4; i++) {
			wc = poll_one_within(a.cq, GUARD_MS);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, base + order[i]);
		}
	}
	/* Nothing more: exact counts. */
	assert_int_equal(rv_cq_poll(a.cq, &wc, 1), 0);
	assert_int_equal(rv_cq_poll(b.cq, &wc, 1), 0);
	/* b only receives: its own switch may come after the last round (a
	 * loaded machine); it must come (wait_rings fails after its guard). */
	wait_rings(&a, &b);
	stats(&a, sa);
	stats(&b, sb);
	assert_int_equal(sa[SOFT_RING_STATE], 3);
	assert_int_equal(sb[SOFT_RING_STATE], 3);
	/* Most of the 160 messages went through a ring (the first rounds may
	 * precede the switch): frames put in on one side, taken out on the other. */
	assert_true(sa[SOFT_RING_TX_FRAMES] >= 100);
	assert_true(sb[SOFT_RING_RX_FRAMES] >= 100);
	assert_int_equal(sa[SOFT_RING_BAD] + sb[SOFT_RING_BAD], 0);
	side_close(&a);
	side_close(&b);
}

/* 48 SENDs in a row: completed by the consumer's index, each once, and no
 * zero-length READ among the frames (the receiver takes exactly 48). */
static void test_shmring__completion_by_consumer_index(void **state)
{
	struct side a, b;
	uint64_t before[SOFT_RING_NSTATS], after[SOFT_RING_NSTATS];
	rv_wc wc;

	(void)state;
	ring_pair(&a, &b);
	stats(&b, before);
	for (unsigned i = 0; i < 48; i++)
		post_recv(&b, (i % 16) * 1024, 1024, 1000 + i);
	for (unsigned i = 0; i < 48; i++) {
		rv_sge g = sge(&a, (i % 16) * 1024, 100);
		rv_send_wr wr = {.wr_id = i, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND};
		size_t n;
		assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, &n), 0);
	}
	for (unsigned i = 0; i < 48; i++) {
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 1000 + i);
	}
	/* The QP signals every WR (sq_sig_all 1): 48 completions, in order, once. */
	for (unsigned i = 0; i < 48; i++) {
		wc = poll_one_within(a.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
	}
	assert_int_equal(rv_cq_poll(a.cq, &wc, 1), 0);
	stats(&b, after);
	/* 48 SENDs, and no READ request among the frames b took from its ring
	 * beyond them (b answers nothing: a sends only SENDs). */
	assert_int_equal(after[SOFT_RING_RX_FRAMES] - before[SOFT_RING_RX_FRAMES], 48);
	side_close(&a);
	side_close(&b);
}

/* SENDs and WRITEs of 1 to 2048 bytes, 32 in each rv_qp_post_send (a list),
 * once both rings are on: tx.c frames them in the ring's records themselves
 * (SOFT_RING_IN_PLACE), and when the ring has no room (a list of 32 WRs of
 * 2048 bytes is more than the ring holds) the rest goes through c->tx
 * behind them. Every SEND arrives once, in order, with its bytes; every
 * WRITE's bytes are there when the SEND after it arrives; the sender's
 * completions come in posting order; the ring wraps several times. */
static void test_shmring__small_frames_in_place_and_behind_a_full_ring(void **state)
{
	const uint32_t slot = 2048, half = BUF / 2;
	struct side a, b;
	uint64_t sa0[SOFT_RING_NSTATS], sa[SOFT_RING_NSTATS], sb0[SOFT_RING_NSTATS], sb[SOFT_RING_NSTATS];
	unsigned k = 0;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	wait_rings(&a, &b);
	stats(&a, sa0);
	stats(&b, sb0);
	for (unsigned batch = 0; batch < 24; batch++) {
		rv_send_wr wr[32];
		rv_sge g[32];
		uint32_t len[32];
		size_t n;

		memset(wr, 0, sizeof(wr));
		memset(b.buf, 0, BUF);
		for (unsigned i = 0; i < 32; i++, k++) {
			/* Every fourth batch all of 2048 bytes: more than the ring holds. */
			len[i] = batch % 4 == 3 ? slot : 1 + (k * 389u) % slot;
			size_t off = (i & 1 ? half : 0) + (i / 2) * slot;
			fill(a.buf + off, len[i], batch * 64 + i);
			g[i] = sge(&a, off, len[i]);
			wr[i].wr_id = batch * 100 + i;
			wr[i].sg_list = &g[i];
			wr[i].num_sge = 1;
			wr[i].send_flags = RV_SEND_SIGNALED;
			if (i & 1) {
				wr[i].opcode = RV_WR_RDMA_WRITE;
				wr[i].remote_addr = (uint64_t)(uintptr_t)b.buf + off;
				wr[i].rkey = rv_mr_rkey(b.mr);
			} else {
				wr[i].opcode = RV_WR_SEND;
				post_recv(&b, off, slot, batch * 100 + i);
			}
		}
		assert_int_equal(rv_qp_post_send(a.qp, wr, 32, &n), 0);
		assert_int_equal(n, 32);
		for (unsigned i = 0; i < 32; i += 2) {
			wc = poll_one_within(b.cq, GUARD_MS);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.opcode, RV_WC_RECV);
			assert_int_equal(wc.wr_id, batch * 100 + i);
			assert_int_equal(wc.byte_len, len[i]);
			assert_memory_equal(b.buf + (i / 2) * slot, a.buf + (i / 2) * slot, len[i]);
			if (i > 0) /* the WRITE before this SEND */
				assert_memory_equal(b.buf + half + (i / 2 - 1) * slot, a.buf + half + (i / 2 - 1) * slot,
						    len[i - 1]);
		}
		for (unsigned i = 0; i < 32; i++) {
			wc = poll_one_within(a.cq, GUARD_MS);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, batch * 100 + i);
		}
		/* The last WRITE: complete at the sender, so placed at b. */
		assert_memory_equal(b.buf + half + 15 * slot, a.buf + half + 15 * slot, len[31]);
	}
	assert_int_equal(rv_cq_poll(a.cq, &wc, 1), 0);
	assert_int_equal(rv_cq_poll(b.cq, &wc, 1), 0);
	stats(&a, sa);
	stats(&b, sb);
	/* 768 WRs, one frame each through the ring, or a WRITE done by one copy
	 * into a region b granted (grant.c: once a grant came, most WRITEs);
	 * the 384 SENDs (about 400 KiB: six times round the ring) all through
	 * it, framed in place or behind a full ring. */
	uint64_t tx = sa[SOFT_RING_TX_FRAMES] - sa0[SOFT_RING_TX_FRAMES];
	uint64_t in_place = sa[SOFT_RING_IN_PLACE] - sa0[SOFT_RING_IN_PLACE];
	assert_int_equal(tx + sa[SOFT_RING_DIRECT] - sa0[SOFT_RING_DIRECT], 768);
	assert_int_equal(sb[SOFT_RING_RX_FRAMES] - sb0[SOFT_RING_RX_FRAMES], tx);
	print_message("%llu of %llu ring frames framed in place\n", (unsigned long long)in_place,
		      (unsigned long long)tx);
	assert_true(tx >= 384);
	assert_true(in_place > 0 && in_place <= tx);

	/* 48 SENDs of 1360 bytes (records of 1392: 66816 bytes, more than the
	 * ring's 65536) in one list before b posts any receive: the first
	 * stalls at the head of the ring, so the ring fills and the last go
	 * through c->tx behind what was framed in place; all arrive, in order,
	 * once b's receives come. */
	{
		rv_send_wr wr[48];
		rv_sge g[48];
		size_t n;

		stats(&a, sa0);
		memset(wr, 0, sizeof(wr));
		memset(b.buf, 0, BUF);
		for (unsigned i = 0; i < 48; i++) {
			fill(a.buf + i * 1360, 1360, 5000 + i);
			g[i] = sge(&a, i * 1360, 1360);
			wr[i].wr_id = 9000 + i;
			wr[i].sg_list = &g[i];
			wr[i].num_sge = 1;
			wr[i].opcode = RV_WR_SEND;
			wr[i].send_flags = RV_SEND_SIGNALED;
		}
		assert_int_equal(rv_qp_post_send(a.qp, wr, 48, &n), 0);
		assert_int_equal(n, 48);
		for (unsigned i = 0; i < 48; i++)
			post_recv(&b, i * 1360, 1360, 9000 + i);
		for (unsigned i = 0; i < 48; i++) {
			wc = poll_one_within(b.cq, GUARD_MS);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 9000 + i);
			assert_int_equal(wc.byte_len, 1360);
		}
		assert_memory_equal(b.buf, a.buf, 48 * 1360);
		for (unsigned i = 0; i < 48; i++) {
			wc = poll_one_within(a.cq, GUARD_MS);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 9000 + i);
		}
		stats(&a, sa);
		assert_int_equal(sa[SOFT_RING_TX_FRAMES] - sa0[SOFT_RING_TX_FRAMES], 48);
		in_place = sa[SOFT_RING_IN_PLACE] - sa0[SOFT_RING_IN_PLACE];
		print_message("a full ring: %llu of 48 framed in place\n", (unsigned long long)in_place);
		assert_true(in_place > 0 && in_place < 48);
	}
	assert_int_equal(sa[SOFT_RING_BAD] + sb[SOFT_RING_BAD], 0);
	side_close(&a);
	side_close(&b);
}

/* For 200 ms after a failed SEND from a to b: no receive of b completes
 * successfully (one may be flushed once the QPs fail), and b.buf[from, to)
 * stays zero. */
static void nothing_lands(struct side *a, struct side *b, size_t from, size_t to)
{
	int64_t end = now_ms() + 200;
	rv_wc wc;

	while (now_ms() < end) {
		if (rv_cq_poll(b->cq, &wc, 1) == 1)
			assert_int_not_equal(wc.status, RV_WC_SUCCESS);
		rv_cq_poll(a->cq, &wc, 1);
	}
	for (size_t i = from; i < to; i++)
		assert_int_equal(b->buf[i], 0);
}

/* A SEND whose lkey is wrong, on its way to be framed in place: it fails at
 * the sender (RV_WC_LOC_PROT_ERR) and nothing of it reaches the peer (the
 * record it would have used is not published: the receive WR does not
 * complete with data, the receive buffer stays as it was). */
static void test_shmring__bad_lkey_in_place_publishes_nothing(void **state)
{
	struct side a, b;
	rv_sge g;
	rv_send_wr wr;
	rv_wc wc;
	size_t n;

	(void)state;
	ring_pair(&a, &b);
	post_recv(&b, 0, 1024, 7);
	fill(a.buf, 512, 9);
	g = sge(&a, 0, 512);
	g.lkey ^= 0x5a5a00;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = RV_WR_SEND;
	wr.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	assert_int_equal(rv_qp_post_send(a.qp, &wr, 1, &n), 0);
	wc = poll_one_within(a.cq, GUARD_MS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_LOC_PROT_ERR);
	/* b: no data (the counters go with the connection, which the failure
	 * closes); its receive may be flushed once the QPs fail. */
	nothing_lands(&a, &b, 0, 1024);
	side_close(&a);
	side_close(&b);
}

/* One 64 B signalled SEND from m at off (automatic inline, or RV_SEND_INLINE
 * with a made-up lkey, which verbs does not look at): its completion. */
static rv_wc send_small_from(struct side *s, rv_mr *m, size_t off, bool inl, uint32_t lkey, uint64_t id)
{
	rv_sge g = {(uint64_t)(uintptr_t)((uint8_t *)rv_mr_addr(m) + off), SMALL, lkey};
	rv_send_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_SIGNALED | (inl ? RV_SEND_INLINE : 0)};
	size_t n;

	assert_int_equal(rv_qp_post_send(s->qp, &wr, 1, &n), 0);
	return poll_one_within(s->cq, GUARD_MS);
}

/* The post's shortcut on a ring (tx.c, soft_tx_ring_now: a small SEND
 * framed in the record at post time, from its SGEs) checks the keys as the
 * framing does: from a second MR it arrives (framed in place), with
 * RV_SEND_INLINE and a made-up lkey too, and after rv_mr_close of that MR a
 * SEND naming its old lkey fails with RV_WC_LOC_PROT_ERR at the sender and
 * nothing of it reaches the peer (the memory rv_mr_alloc gave stays readable
 * until the last unref, so a missed check would send its bytes). */
static void test_shmring__post_shortcut_checks_keys_after_mr_close(void **state)
{
	struct side a, b;
	uint64_t s0[SOFT_RING_NSTATS], s1[SOFT_RING_NSTATS];
	rv_mr *m;
	uint32_t lkey;
	rv_wc wc;

	(void)state;
	ring_pair(&a, &b);
	assert_int_equal(rv_mr_alloc(a.pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &m), 0);
	lkey = rv_mr_lkey(m);
	fill(rv_mr_addr(m), 4096, 31);
	for (unsigned i = 0; i < 3; i++)
		post_recv(&b, i * 1024, 1024, 40 + i);
	stats(&a, s0);
	wc = send_small_from(&a, m, 0, false, lkey, 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	wc = send_small_from(&a, m, 128, true, 0x1234567, 2);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	for (unsigned i = 0; i < 2; i++) {
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 40 + i);
		assert_int_equal(wc.byte_len, SMALL);
		assert_memory_equal(b.buf + i * 1024, (uint8_t *)rv_mr_addr(m) + i * 128, SMALL);
	}
	stats(&a, s1);
	assert_int_equal(s1[SOFT_RING_IN_PLACE] - s0[SOFT_RING_IN_PLACE], 2);

	assert_int_equal(rv_mr_close(m), 0);
	wc = send_small_from(&a, m, 256, false, lkey, 3);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, RV_WC_LOC_PROT_ERR);
	nothing_lands(&a, &b, 2048, 3072);
	rv_mr_unref(m);
	side_close(&a);
	side_close(&b);
}

/* Last 4 bytes of the frame in the record at producer index prod: its MPA CRC. */
static uint32_t record_crc(const uint8_t *map, uint32_t prod)
{
	const uint8_t *rec = map + RING_HDR + prod % RING_DATA;
	uint32_t len, crc;

	memcpy(&len, rec, 4);
	assert_true(len >= 8 && len < 8192);
	memcpy(&crc, rec + 4 + len - 4, 4);
	return crc;
}

/* With both rings on, ring frames carry no CRC (agreed in the ring setup;
 * the TCP frames before the switch kept theirs): data still arrive intact,
 * and fault injection's corrupt, which seals a CRC before its flip, is still
 * caught by the consumer (TERMINATE, both QPs to ERR). */
static void test_shmring__frames_without_crc_and_corrupt_still_caught(void **state)
{
	struct side a, b;
	uint64_t sa[SOFT_RING_NSTATS], sb[SOFT_RING_NSTATS];
	uint32_t prod = 0;
	uint8_t *map;
	rv_wc wc;

	(void)state;
	ring_pair(&a, &b);
	stats(&a, sa);
	stats(&b, sb);
	assert_int_equal(sa[SOFT_RING_CRC_OFF], 1);
	assert_int_equal(sb[SOFT_RING_CRC_OFF], 1);
	for (unsigned i = 0; i < 8; i++) {
		map = soft_shmring_debug_tx(a.qp, &prod);
		assert_non_null(map);
		fill(a.buf, SMALL + i, i);
		post_recv(&b, 1024, 1024, i);
		post_send(&a, RV_WR_SEND, 0, SMALL + i, 0, 0, i);
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, SMALL + i);
		assert_memory_equal(b.buf + 1024, a.buf, SMALL + i);
		assert_int_equal(record_crc(map, prod), 0); /* the frame a put in its ring */
		assert_int_equal(poll_one_within(a.cq, GUARD_MS).status, RV_WC_SUCCESS);
	}
	/* The next frame a sends is corrupted after its CRC was sealed. */
	post_recv(&b, 1024, 1024, 100);
	post_recv(&b, 2048, 1024, 101);
	assert_int_equal(rv_soft_fault_inject(a.ctx, NULL, RV_SOFT_FAULT_CORRUPT, 1, 0), 0);
	post_send(&a, RV_WR_SEND, 0, SMALL, 0, 0, 200);
	wc = poll_one_within(b.cq, GUARD_MS);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(b.qp), RV_QPS_ERR);
	wc = poll_one_within(a.cq, GUARD_MS);
	assert_int_equal(wc.wr_id, 200);
	assert_int_not_equal(wc.status, RV_WC_SUCCESS);
	stats(&b, sb);
	side_close(&a);
	side_close(&b);
}

static void off_by_env(const char *var)
{
	struct side a, b;
	uint64_t sa[SOFT_RING_NSTATS];
	rv_wc wc;

	setenv(var, "0", 1);
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE);
	unsetenv(var);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	for (unsigned i = 0; i < 20; i++) {
		fill(a.buf, SMALL, i);
		post_recv(&b, 0, 1024, i);
		post_send(&a, RV_WR_SEND, 0, SMALL, 0, 0, i);
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_memory_equal(b.buf, a.buf, SMALL);
		wc = poll_one_within(a.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
	}
	stats(&a, sa);
	assert_int_equal(sa[SOFT_RING_STATE], 0);
	assert_int_equal(sa[SOFT_RING_TX_FRAMES], 0);
	side_close(&a);
	side_close(&b);
}

static void test_shmring__off_with_RVERBS_SOFT_SHM_0(void **state)
{
	(void)state;
	off_by_env("RVERBS_SOFT_SHM");
}

static void test_shmring__off_with_RVERBS_SOFT_SHM_RING_0(void **state)
{
	(void)state;
	off_by_env("RVERBS_SOFT_SHM_RING");
}

/* The SEND comes before its receive WR (it waits at the head of the ring);
 * the receive posted while b busy-polls resumes it (the poller's next ring
 * pass, no wake-up of the progress thread), in order, data right. */
static void test_shmring__receive_posted_after_the_send(void **state)
{
	struct side a, b;
	rv_wc wc;

	(void)state;
	ring_pair(&a, &b);
	for (unsigned i = 0; i < 20; i++) {
		int64_t until = now_ms() + 2;

		fill(a.buf, SMALL, i);
		post_send(&a, RV_WR_SEND, 0, SMALL, 0, 0, i);
		while (now_ms() < until) /* b's poller finds the SEND and no receive WR */
			assert_int_equal(rv_cq_poll(b.cq, &wc, 1), 0);
		post_recv(&b, 1024, 1024, 100 + i);
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.byte_len, SMALL);
		assert_memory_equal(b.buf + 1024, a.buf, SMALL);
		wc = poll_one_within(a.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
	}
	side_close(&a);
	side_close(&b);
}

/* a's ring to b is full (b has no receive WR for the SEND at its head) when a
 * terminates the connection (b's WRITE names a bad rkey): a's TERMINATE goes
 * over TCP and b takes it after the frames its ring holds, once receives
 * come. b's WRITE fails with the TERMINATE's status, not with the end of
 * the stream (retry exceeded) as when the TERMINATE was lost. */
static void test_shmring__terminate_over_tcp_when_the_ring_is_full(void **state)
{
	const uint32_t len = 4096, sends = 20; /* 4 KiB frames: 15 fill the 64 KiB ring */
	struct side a, b;
	uint32_t recvs = 0, flushed = 0;
	bool write_done = false;
	rv_wc wc;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	wait_rings(&a, &b);
	for (uint32_t i = 0; i < sends; i++)
		post_send(&a, RV_WR_SEND, 0, len, 0, 0, i);
	/* b's WRITE reaches a through b's ring; a answers with a TERMINATE. */
	post_send(&b, RV_WR_RDMA_WRITE, 0, 8, (uint64_t)(uintptr_t)a.buf, rv_mr_rkey(a.mr) ^ 0x5a5a5a5au, 99);
	for (uint32_t i = 0; i < sends; i++) {
		wc = poll_one_within(a.cq, GUARD_MS);
		assert_int_equal(wc.wr_id, i);
		assert_int_not_equal(wc.status, RV_WC_SUCCESS); /* a's QP failed first */
	}
	assert_int_equal(qp_state(a.qp), RV_QPS_ERR);
	/* Now b's receives: the SENDs in the ring, then the TERMINATE. */
	for (uint32_t i = 0; i < BUF / len; i++)
		post_recv(&b, i * len, len, 1000 + i);
	while (!write_done) {
		wc = poll_one_within(b.cq, GUARD_MS);
		if (wc.wr_id == 99) {
			assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
			write_done = true;
		} else if (wc.status == RV_WC_SUCCESS) {
			assert_int_equal(wc.wr_id, 1000 + recvs);
			assert_int_equal(flushed, 0);
			recvs++;
		} else {
			assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
			flushed++;
		}
	}
	assert_true(recvs > 0 && recvs < sends); /* what the ring held */
	assert_int_equal(qp_state(b.qp), RV_QPS_ERR);
	side_close(&a);
	side_close(&b);
}

enum scribble { BAD_LENGTH, BAD_FRAME, BAD_PRODUCER };

/* What soft0 logged about the ring and the TERMINATE (progress or polling thread). */
static _Atomic bool saw_corrupt, saw_terminate;

static void on_log(rv_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (strstr(msg, "shared-memory ring from"))
		atomic_store(&saw_corrupt, true);
	if (strstr(msg, "terminating the connection"))
		atomic_store(&saw_terminate, true);
}

/* a's ring to b gets garbage as a hostile a would write it: b's QP fails
 * (its receive WR flushes, a sees the TERMINATE), nothing crashes or hangs. */
static void hostile(enum scribble how)
{
	struct side a, b;
	uint64_t sb[SOFT_RING_NSTATS];
	uint32_t prod = 0;
	uint8_t *map;
	_Atomic uint32_t *hdr_prod;
	rv_wc wc;

	ring_pair(&a, &b);
	/* One good message first: the ring works. */
	post_recv(&b, 0, 1024, 1);
	post_send(&a, RV_WR_SEND, 0, SMALL, 0, 0, 1);
	assert_int_equal(poll_one_within(b.cq, GUARD_MS).status, RV_WC_SUCCESS);
	assert_int_equal(poll_one_within(a.cq, GUARD_MS).status, RV_WC_SUCCESS);
	post_recv(&b, 0, 1024, 2);

	atomic_store(&saw_corrupt, false);
	atomic_store(&saw_terminate, false);
	rv_set_log_handler(on_log, NULL);
	map = soft_shmring_debug_tx(a.qp, &prod);
	assert_non_null(map);
	hdr_prod = (_Atomic uint32_t *)(void *)map; /* first field of the header */
	{
		uint8_t *rec = map + RING_HDR + prod % RING_DATA;
		uint32_t l;
		switch (how) {
		case BAD_LENGTH:
			l = 0x7ffffff0u; /* far beyond the ring */
			memcpy(rec, &l, 4);
			atomic_store(hdr_prod, prod + 16);
			break;
		case BAD_FRAME:
			l = 64;
			memcpy(rec, &l, 4);
			for (unsigned i = 0; i < 64; i++)
				rec[4 + i] = (uint8_t)(0xa5 ^ (i * 13));
			atomic_store(hdr_prod, prod + 72);
			break;
		case BAD_PRODUCER:
			atomic_store(hdr_prod, prod + 10u * RING_DATA);
			break;
		}
	}
	/* b's poller reads the ring: its receive WR flushes, its QP is in ERR. */
	wc = poll_one_within(b.cq, GUARD_MS);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(b.qp), RV_QPS_ERR);
	/* Found in the ring (index or length) or by the frame decoder, and answered with a TERMINATE. */
	assert_true(how == BAD_FRAME || atomic_load(&saw_corrupt));
	assert_true(atomic_load(&saw_terminate));
	stats(&b, sb); /* the connection is gone: counters read 0, the call still works */
	/* a learns it (TERMINATE or the end of the stream): its next WR does not succeed. */
	post_send(&a, RV_WR_SEND, 0, SMALL, 0, 0, 3);
	wc = poll_one_within(a.cq, GUARD_MS);
	assert_int_equal(wc.wr_id, 3);
	assert_int_not_equal(wc.status, RV_WC_SUCCESS);
	rv_set_log_handler(NULL, NULL);
	side_close(&a);
	side_close(&b);
}

static void test_shmring__hostile_record_length(void **state)
{
	(void)state;
	hostile(BAD_LENGTH);
}

static void test_shmring__hostile_frame_bytes(void **state)
{
	(void)state;
	hostile(BAD_FRAME);
}

static void test_shmring__hostile_producer_index(void **state)
{
	(void)state;
	hostile(BAD_PRODUCER);
}


/* ---- The lock-free look at the rings (soft_shmring_peek) against teardown ---- */

struct peek_poller {
	rv_cq *cq;
	_Atomic bool stop;
	_Atomic uint64_t polls, bad;
};

/* Busy-polls a CQ of context A that no QP completes into: every empty poll
 * looks at A's rings without sc->lock while the main thread connects,
 * disconnects and destroys A's QPs and closes their peers' contexts. */
static void *peek_poll(void *arg)
{
	struct peek_poller *p = arg;
	rv_wc wc[4];

	while (!atomic_load(&p->stop)) {
		if (rv_cq_poll(p->cq, wc, 4) != 0)
			atomic_fetch_add(&p->bad, 1);
		atomic_fetch_add_explicit(&p->polls, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Mappings of ring memfds ("rverbs-soft-ring") in this process. */
static int ring_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "rverbs-soft-ring"))
			n++;
	fclose(f);
	return n;
}

/* One SEND of 64 B from `from` to `to`, both completions checked. */
static void send_one(struct side *from, struct side *to, uint64_t id)
{
	rv_wc wc;

	post_recv_small(to, to->qp, id);
	post_send_small(from, from->qp, id);
	check_recv_small(to, poll_one_within(to->cq, GUARD_MS), id);
	wc = poll_one_within(from->cq, GUARD_MS);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, id);
}

/* Rounds of: a new QP on context A and a new context B, connected, both
 * directions on the rings, SENDs both ways; then A's QP destroyed and B
 * closed, in either order. Two threads busy-poll a spare CQ of A all along
 * (the lock-free look walks A's rings while they are torn down, freed to
 * the pool and reused). Every message arrives once with its bytes, the
 * spare CQ never completes anything, A's ring objects are reused (not one
 * per round), and no mapping of a ring memfd is left once the connections
 * are gone. Under ThreadSanitizer this is the race the design argues
 * (shmring.c, "Teardown against the lock-free look"). */
static void test_shmring__peek_vs_teardown(void **state)
{
	enum { ROUNDS = 24, POLLERS = 2 };
	struct side a, b;
	struct peek_poller p[POLLERS];
	pthread_t t[POLLERS];
	rv_cq *spare;
	uint32_t all = 0, pooled = 0;
	uint64_t id = 1;
	int64_t end;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rv_cq_new(a.ctx, NULL, &spare), 0);
	for (int i = 0; i < POLLERS; i++) {
		p[i].cq = spare;
		atomic_init(&p[i].stop, false);
		atomic_init(&p[i].polls, 0);
		atomic_init(&p[i].bad, 0);
		assert_int_equal(pthread_create(&t[i], NULL, peek_poll, &p[i]), 0);
	}
	for (int round = 0; round < ROUNDS; round++) {
		if (round > 0)
			a.qp = side_qp_new(&a);
		side_open(&b, 0, RV_ACCESS_LOCAL_WRITE);
		connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
		wait_rings(&a, &b);
		for (int m = 0; m < 8; m++) {
			send_one(&a, &b, id++);
			send_one(&b, &a, id++);
		}
		assert_int_equal(soft_shmring_debug_pool(a.qp, &all, &pooled), 0);
		assert_true(all >= 1);
		if (round % 2 == 0) {
			rv_qp_unref(a.qp); /* A's side goes first: its ring leaves while B's still produces */
			side_close(&b);
		} else {
			side_close(&b); /* the peer goes first: A's ring stays mapped, its peer's memfd closed */
			rv_qp_unref(a.qp);
		}
		a.qp = NULL;
	}
	/* Pooled: at most the rings that were alive at once (one QP, and the
	 * connection the progress thread had not freed yet), not one a round. */
	print_message("ring objects %u (pooled %u), polls %llu %llu\n", all, pooled, (unsigned long long)atomic_load(&p[0].polls), (unsigned long long)atomic_load(&p[1].polls));
	assert_true(all <= 3);
	/* The last connection is freed by A's progress thread: then no ring
	 * memfd is mapped (zero pages were mapped over its ranges). */
	end = now_ms() + GUARD_MS;
	while (ring_mappings() != 0 && now_ms() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(ring_mappings(), 0);
	for (int i = 0; i < POLLERS; i++) {
		atomic_store(&p[i].stop, true);
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(atomic_load(&p[i].bad), 0);
		assert_true(atomic_load(&p[i].polls) > 0);
	}
	rv_cq_unref(spare);
	a.qp = side_qp_new(&a); /* side_close unrefs one */
	side_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shmring__mixed_in_order_across_the_switch),
		cmocka_unit_test(test_shmring__completion_by_consumer_index),
		cmocka_unit_test(test_shmring__small_frames_in_place_and_behind_a_full_ring),
		cmocka_unit_test(test_shmring__bad_lkey_in_place_publishes_nothing),
		cmocka_unit_test(test_shmring__post_shortcut_checks_keys_after_mr_close),
		cmocka_unit_test(test_shmring__frames_without_crc_and_corrupt_still_caught),
		cmocka_unit_test(test_shmring__off_with_RVERBS_SOFT_SHM_0),
		cmocka_unit_test(test_shmring__off_with_RVERBS_SOFT_SHM_RING_0),
		cmocka_unit_test(test_shmring__receive_posted_after_the_send),
		cmocka_unit_test(test_shmring__terminate_over_tcp_when_the_ring_is_full),
		cmocka_unit_test(test_shmring__hostile_record_length),
		cmocka_unit_test(test_shmring__hostile_frame_bytes),
		cmocka_unit_test(test_shmring__hostile_producer_index),
		cmocka_unit_test(test_shmring__peek_vs_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
