/*
 * UC queue pairs on soft0 (lib/drivers/soft, "UC"): two contexts, one UC QP
 * each, connected over TCP with the iWARP framing of RC.
 *
 * Checked: SEND (multi-FPDU) and RDMA WRITE (with immediate) arrive with the
 * right bytes; READ and atomics are refused at post; a SEND without a receive
 * WR is dropped (counted) and the next one is received; a WRITE with a bad
 * key or out of bounds is dropped (counted) with the target memory unchanged
 * and both QPs still in RTS; a SEND longer than its receive WR completes it
 * with RV_WC_LOC_LEN_ERR and the QP stays usable; an RC QP and a UC QP
 * refuse to connect. The drop counters are soft0's (soft_uc_counters, linked
 * from the internal library). Timeouts are hang guards only.
 */
#include <errno.h>
#include <pthread.h>
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

#include "drivers/soft/soft.h"
#include "test-clock.h"

#define BUF (64u * 1024u)
#define WAIT_MS 10000

static void nap(void)
{
	struct timespec ts = {0, 100000};

	nanosleep(&ts, NULL);
}

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
};

struct pair {
	struct side a, b; /* a sends, b receives */
};

static uint32_t open_wr; /* nonzero: side_open's QPs hold this many send and receive WRs */

static void side_open(struct side *s, uint32_t qp_type)
{
	rv_device *dev = NULL;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = qp_type};

	if (open_wr) {
		qa.mask |= RV_QP_INIT_ATTR_CAP;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = open_wr;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	}

	memset(s, 0, sizeof(*s));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &s->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	assert_int_equal(rv_mr_alloc(s->pd, BUF, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &s->mr), 0);
	s->buf = rv_mr_addr(s->mr);
	memset(s->buf, 0, BUF);
	qa.send_cq = s->cq;
	assert_int_equal(rv_qp_new(s->pd, &qa, &s->qp), 0);
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

static struct pair *pair_open(uint32_t type_a, uint32_t type_b)
{
	struct pair *p = calloc(1, sizeof(*p));
	rv_endpoint ea, eb;

	assert_non_null(p);
	side_open(&p->a, type_a);
	side_open(&p->b, type_b);
	assert_int_equal(rv_qp_endpoint(p->a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(p->b.qp, &eb), 0);
	/* RC to UC: the facade refuses mismatched endpoints; claim the same type
	 * so that the wire check (MPA private data) is what is tested. */
	ea.qp_type = type_b;
	eb.qp_type = type_a;
	assert_int_equal(rv_qp_connect(p->b.qp, &ea), 0);
	assert_int_equal(rv_qp_connect(p->a.qp, &eb), 0);
	return p;
}

static void pair_close(struct pair *p)
{
	side_close(&p->a);
	side_close(&p->b);
	free(p);
}

static rv_wc poll1(rv_cq *cq)
{
	int64_t end = now_ms() + WAIT_MS;
	rv_wc wc;

	while (now_ms() < end) {
		int n = rv_cq_poll(cq, &wc, 1);
		assert_true(n >= 0);
		if (n == 1)
			return wc;
		nap();
	}
	fail_msg("no completion within %d ms", WAIT_MS);
	return wc;
}

/* No completion arrives while the CQ is polled a little (also drives progress). */
static void expect_none(rv_cq *cq)
{
	rv_wc wc;

	for (int i = 0; i < 200; i++) {
		assert_int_equal(rv_cq_poll(cq, &wc, 1), 0);
		nap();
	}
}

static rv_sge sge(struct side *s, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	return g;
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void post_recv(struct side *s, size_t off, uint32_t len, uint64_t id)
{
	rv_sge g = sge(s, off, len);
	rv_recv_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1, .reserved = 0};
	size_t n = 0;

	assert_int_equal(rv_qp_post_recv(s->qp, &wr, 1, &n), 0);
	assert_int_equal(n, 1);
}

static int post(struct side *s, uint32_t opcode, size_t off, uint32_t len, uint64_t id, uint64_t raddr,
		uint32_t rkey)
{
	rv_sge g = sge(s, off, len);
	rv_send_wr wr;
	size_t n = 0;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = opcode;
	wr.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	wr.imm_data = 0xc0ffee;
	if (opcode == RV_WR_ATOMIC_FETCH_AND_ADD)
		wr.compare_add = 1;
	return rv_qp_post_send(s->qp, &wr, 1, &n);
}

static void expect_send_ok(struct side *s, uint64_t id)
{
	rv_wc wc = poll1(s->cq);

	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, id);
}

static void counters(struct side *s, uint64_t c[SOFT_UC_NCOUNTERS])
{
	assert_int_equal(soft_uc_counters(s->qp, c), 0);
}

/* Poll the receiver (which runs its progress) until counter k reaches want. */
static void wait_counter(struct side *s, int k, uint64_t want)
{
	int64_t end = now_ms() + WAIT_MS;
	uint64_t c[SOFT_UC_NCOUNTERS];
	rv_wc wc;

	for (;;) {
		counters(s, c);
		if (c[k] >= want)
			break;
		assert_true(now_ms() < end);
		assert_int_equal(rv_cq_poll(s->cq, &wc, 1), 0);
		nap();
	}
	assert_int_equal(c[k], want);
}

static void both_rts(struct pair *p)
{
	assert_int_equal(rv_qp_state_of(p->a.qp), RV_QPS_RTS);
	assert_int_equal(rv_qp_state_of(p->b.qp), RV_QPS_RTS);
}

/* A marker SEND proves everything the sender posted before it was processed. */
static void marker(struct pair *p, uint64_t id)
{
	rv_wc wc;

	post_recv(&p->b, BUF - 64, 64, id);
	p->a.buf[BUF - 64] = (uint8_t)id;
	assert_int_equal(post(&p->a, RV_WR_SEND, BUF - 64, 1, id, 0, 0), 0);
	expect_send_ok(&p->a, id);
	wc = poll1(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(p->b.buf[BUF - 64], (uint8_t)id);
}

static void uc_send_write(void **state)
{
	struct pair *p = pair_open(RV_QPT_UC, RV_QPT_UC);
	uint64_t raddr = (uint64_t)(uintptr_t)p->b.buf;
	rv_wc wc;

	(void)state;
	both_rts(p);
	/* SEND of three FPDUs. */
	fill(p->a.buf, 10000, 3);
	post_recv(&p->b, 0, 12000, 1);
	assert_int_equal(post(&p->a, RV_WR_SEND, 0, 10000, 2, 0, 0), 0);
	expect_send_ok(&p->a, 2);
	wc = poll1(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.byte_len, 10000);
	assert_memory_equal(p->b.buf, p->a.buf, 10000);

	/* RDMA WRITE of three FPDUs: no completion at the target. */
	fill(p->a.buf + 16384, 9000, 77);
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE, 16384, 9000, 3, raddr + 20000, rv_mr_rkey(p->b.mr)), 0);
	expect_send_ok(&p->a, 3);
	marker(p, 4); /* in order after the WRITE */
	assert_memory_equal(p->b.buf + 20000, p->a.buf + 16384, 9000);

	/* RDMA WRITE with immediate: consumes a receive WR. */
	fill(p->a.buf + 32768, 5000, 11);
	post_recv(&p->b, 0, 16, 5);
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE_WITH_IMM, 32768, 5000, 6, raddr + 40000,
			      rv_mr_rkey(p->b.mr)), 0);
	expect_send_ok(&p->a, 6);
	wc = poll1(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.opcode, RV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, 5000);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xc0ffee);
	assert_memory_equal(p->b.buf + 40000, p->a.buf + 32768, 5000);
	both_rts(p);
	pair_close(p);
}

static void uc_read_atomic_refused(void **state)
{
	struct pair *p = pair_open(RV_QPT_UC, RV_QPT_UC);
	uint64_t raddr = (uint64_t)(uintptr_t)p->b.buf;

	(void)state;
	assert_int_equal(post(&p->a, RV_WR_RDMA_READ, 0, 64, 1, raddr, rv_mr_rkey(p->b.mr)), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "UC"));
	assert_int_equal(post(&p->a, RV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 2, raddr, rv_mr_rkey(p->b.mr)), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "UC"));
	assert_int_equal(post(&p->a, RV_WR_ATOMIC_CMP_AND_SWP, 0, 8, 3, raddr, rv_mr_rkey(p->b.mr)), -EINVAL);
	expect_none(p->a.cq);
	both_rts(p);
	marker(p, 9); /* nothing was queued; the QP works */
	pair_close(p);
}

static void uc_send_without_recv_dropped(void **state)
{
	struct pair *p = pair_open(RV_QPT_UC, RV_QPT_UC);
	uint64_t c[SOFT_UC_NCOUNTERS];
	rv_wc wc;

	(void)state;
	/* 6000 bytes, two FPDUs, no receive WR: completes at the sender, lost at the receiver. */
	fill(p->a.buf, 6000, 1);
	assert_int_equal(post(&p->a, RV_WR_SEND, 0, 6000, 1, 0, 0), 0);
	expect_send_ok(&p->a, 1);
	wait_counter(&p->b, SOFT_UC_DROP_NO_RECV, 1);
	expect_none(p->b.cq);
	both_rts(p);
	/* The next SEND lands, in the receive WR posted now. */
	fill(p->a.buf + 8192, 3000, 9);
	post_recv(&p->b, 0, 8192, 2);
	assert_int_equal(post(&p->a, RV_WR_SEND, 8192, 3000, 3, 0, 0), 0);
	expect_send_ok(&p->a, 3);
	wc = poll1(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(p->b.buf, p->a.buf + 8192, 3000);
	/* WRITE with immediate without a receive WR: dropped as well. */
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE_WITH_IMM, 0, 100, 4, (uint64_t)(uintptr_t)p->b.buf + 30000,
			      rv_mr_rkey(p->b.mr)), 0);
	expect_send_ok(&p->a, 4);
	wait_counter(&p->b, SOFT_UC_DROP_NO_RECV, 2);
	marker(p, 5);
	counters(&p->b, c);
	assert_int_equal(c[SOFT_UC_DROP_WRITE], 0);
	both_rts(p);
	pair_close(p);
}

static void uc_bad_write_dropped(void **state)
{
	struct pair *p = pair_open(RV_QPT_UC, RV_QPT_UC);
	uint64_t raddr = (uint64_t)(uintptr_t)p->b.buf;
	uint32_t rkey = rv_mr_rkey(p->b.mr);
	uint64_t c[SOFT_UC_NCOUNTERS];
	static uint8_t zero[BUF];

	(void)state;
	fill(p->a.buf, 9000, 5);
	/* Wrong key (multi-FPDU), then out of bounds by one byte. */
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE, 0, 9000, 1, raddr, rkey ^ 0x5a5a5a5au), 0);
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE, 0, 100, 2, raddr + BUF - 99, rkey), 0);
	/* WRITE with immediate to a bad key: its immediate is dropped with it. */
	post_recv(&p->b, 0, 16, 3);
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE_WITH_IMM, 0, 100, 4, raddr, rkey ^ 1u), 0);
	expect_send_ok(&p->a, 1);
	expect_send_ok(&p->a, 2);
	expect_send_ok(&p->a, 4);
	wait_counter(&p->b, SOFT_UC_DROP_WRITE, 3);
	/* The receive WR posted above was not consumed: the marker's SEND takes it. */
	{
		rv_wc wc;
		p->a.buf[BUF - 64] = 0x42;
		assert_int_equal(post(&p->a, RV_WR_SEND, BUF - 64, 1, 5, 0, 0), 0);
		expect_send_ok(&p->a, 5);
		wc = poll1(p->b.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 3);
		assert_int_equal(wc.opcode, RV_WC_RECV);
		assert_int_equal(p->b.buf[0], 0x42);
		p->b.buf[0] = 0;
	}
	assert_memory_equal(p->b.buf, zero, BUF);
	counters(&p->b, c);
	assert_int_equal(c[SOFT_UC_DROP_WRITE], 3);
	assert_int_equal(c[SOFT_UC_DROP_NO_RECV], 0);
	both_rts(p);
	/* A good WRITE still works. */
	assert_int_equal(post(&p->a, RV_WR_RDMA_WRITE, 0, 9000, 6, raddr + 100, rkey), 0);
	expect_send_ok(&p->a, 6);
	marker(p, 7);
	assert_memory_equal(p->b.buf + 100, p->a.buf, 9000);
	both_rts(p);
	pair_close(p);
}

static void uc_send_too_long(void **state)
{
	struct pair *p = pair_open(RV_QPT_UC, RV_QPT_UC);
	uint64_t c[SOFT_UC_NCOUNTERS];
	rv_wc wc;

	(void)state;
	fill(p->a.buf, 9000, 2);
	post_recv(&p->b, 0, 100, 1);
	assert_int_equal(post(&p->a, RV_WR_SEND, 0, 9000, 2, 0, 0), 0);
	expect_send_ok(&p->a, 2);
	wc = poll1(p->b.cq);
	assert_int_equal(wc.status, RV_WC_LOC_LEN_ERR);
	assert_int_equal(wc.wr_id, 1);
	counters(&p->b, c);
	assert_int_equal(c[SOFT_UC_RX_TOO_LONG], 1);
	both_rts(p);
	/* The rest of that SEND went nowhere; the next one lands in the next WR. */
	post_recv(&p->b, 200, 100, 3);
	assert_int_equal(post(&p->a, RV_WR_SEND, 4000, 50, 4, 0, 0), 0);
	expect_send_ok(&p->a, 4);
	wc = poll1(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.byte_len, 50);
	assert_memory_equal(p->b.buf + 200, p->a.buf + 4000, 50);
	both_rts(p);
	pair_close(p);
}

/* Both contexts' progress threads log, so the message is kept under a lock. */
static char log_seen[512];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_fn(rv_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (strstr(msg, "another type")) {
		pthread_mutex_lock(&log_lock);
		snprintf(log_seen, sizeof(log_seen), "%s", msg);
		pthread_mutex_unlock(&log_lock);
	}
}

static bool log_seen_has(const char *what)
{
	bool has;

	pthread_mutex_lock(&log_lock);
	has = strstr(log_seen, what) != NULL;
	log_seen[0] = 0;
	pthread_mutex_unlock(&log_lock);
	return has;
}

/* RC to UC, either side active: both QPs fail, nothing is delivered. */
static void rc_uc_refused(void **state)
{
	(void)state;
	for (int round = 0; round < 2; round++) {
		struct pair *p;
		rv_wc wc;

		(void)log_seen_has("");
		rv_set_log_handler(log_fn, NULL);
		p = pair_open(round ? RV_QPT_RC : RV_QPT_UC, round ? RV_QPT_UC : RV_QPT_RC);
		post_recv(&p->b, 0, 64, 1);
		assert_int_equal(post(&p->a, RV_WR_SEND, 0, 64, 2, 0, 0), 0);
		wc = poll1(p->a.cq);
		assert_int_equal(wc.wr_id, 2);
		assert_int_not_equal(wc.status, RV_WC_SUCCESS);
		wc = poll1(p->b.cq);
		assert_int_equal(wc.wr_id, 1);
		assert_int_not_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(rv_qp_state_of(p->a.qp), RV_QPS_ERR);
		assert_int_equal(rv_qp_state_of(p->b.qp), RV_QPS_ERR);
		rv_set_log_handler(NULL, NULL);
		assert_true(log_seen_has("another type"));
		pair_close(p);
	}
}

/* The queues' free-running counters across their 2^32 wrap, with queues of
 * 3 WRs (not a power of two): WRs posted as one list at counters
 * 0xfffffffe, 0xffffffff, 0 each keep their own slot (verbs/qp.c,
 * soft_qp's sq_mask; with counter % 3 the last two shared slot 0, and the
 * third overwrote the second). UC over TCP (RVERBS_SOFT_SHM=0): nothing but
 * the send and receive queues follows the counters there, so the test may
 * set them. Every round's data and wr_ids arrive in order, both sides. */
static void uc_queue_counters_wrap(void **state)
{
	struct pair *p;
	struct soft_qp *qa, *qb;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	open_wr = 3;
	p = pair_open(RV_QPT_UC, RV_QPT_UC);
	open_wr = 0;
	unsetenv("RVERBS_SOFT_SHM");
	qa = p->a.qp->drv_qp;
	qb = p->b.qp->drv_qp;
	soft_lock_take(&qa->lock);
	qa->sq_head = qa->sq_tx = qa->sq_tail = qa->sq_confirmed = qa->sq_covered = 0xfffffffeu;
	soft_lock_give(&qa->lock);
	soft_lock_take(&qb->lock);
	qb->rq_head = qb->rq_tail = 0xfffffffeu;
	soft_lock_give(&qb->lock);
	for (unsigned round = 0; round < 4; round++) {
		rv_recv_wr rw[3];
		rv_send_wr sw[3];
		rv_sge rg[3], sg[3];
		size_t n = 0;

		memset(rw, 0, sizeof(rw));
		memset(sw, 0, sizeof(sw));
		memset(p->b.buf, 0, 3 * 1024);
		for (unsigned i = 0; i < 3; i++) {
			fill(p->a.buf + i * 1024, 700, (uint8_t)(round * 3 + i + 1));
			rg[i] = sge(&p->b, i * 1024, 1024);
			rw[i].wr_id = 100 + round * 3 + i;
			rw[i].sg_list = &rg[i];
			rw[i].num_sge = 1;
			sg[i] = sge(&p->a, i * 1024, 700);
			sw[i].wr_id = 10 + round * 3 + i;
			sw[i].sg_list = &sg[i];
			sw[i].num_sge = 1;
			sw[i].opcode = RV_WR_SEND;
			sw[i].send_flags = RV_SEND_SIGNALED;
		}
		assert_int_equal(rv_qp_post_recv(p->b.qp, rw, 3, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(rv_qp_post_send(p->a.qp, sw, 3, &n), 0);
		assert_int_equal(n, 3);
		for (unsigned i = 0; i < 3; i++) {
			rv_wc wc = poll1(p->b.cq);
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 100 + round * 3 + i);
			assert_int_equal(wc.byte_len, 700);
			expect_send_ok(&p->a, 10 + round * 3 + i);
		}
		assert_memory_equal(p->b.buf, p->a.buf, 700);
		assert_memory_equal(p->b.buf + 1024, p->a.buf + 1024, 700);
		assert_memory_equal(p->b.buf + 2048, p->a.buf + 2048, 700);
	}
	pair_close(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uc_send_write),
		cmocka_unit_test(uc_read_atomic_refused),
		cmocka_unit_test(uc_send_without_recv_dropped),
		cmocka_unit_test(uc_bad_write_dropped),
		cmocka_unit_test(uc_send_too_long),
		cmocka_unit_test(rc_uc_refused),
		cmocka_unit_test(uc_queue_counters_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
