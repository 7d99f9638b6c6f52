/*
 * soft0's one-copy same-host WRITE (lib/drivers/soft/samehost/grant.c): once
 * the target placed a WRITE into an MR rv_mr_alloc gave it (a sealed memfd)
 * with REMOTE_WRITE, it grants the MR to the peer, and the peer's later
 * WRITEs into it are one memcpy by the initiator (the ring counters say
 * so). Checked here, between two contexts of one process and between two
 * processes (fork, pidfd_getfd): WRITEs of several sizes land exactly and
 * nothing around them moves; completions stay in order with direct and
 * ring WRITEs and SENDs mixed, and a SEND after a WRITE finds its data;
 * out of bounds, a wrong key and an MR without REMOTE_WRITE fail as before
 * (RV_WC_REM_ACCESS_ERR); rv_mr_rereg and rv_mr_dereg revoke (a WRITE after
 * them fails and writes nothing); RVERBS_SOFT_SHM_DIRECT=0 keeps it off;
 * hostile grants (a descriptor that is no memfd, a shrinkable memfd, one
 * smaller than the range, a slot out of range, a descriptor that does not
 * exist) are refused without a crash and WRITEs keep working.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "drivers/soft/soft.h"
#include "fork-peer.h"
#include "soft-pair.h"

#define GUARD_MS 10000
#define GRANT_OFF 1024u /* shmring.c's RING_GRANT_OFF: the grant slots in the header page */

/* grant.c's slot layout (128 bytes): what a hostile target would write. */
struct slot {
	_Atomic uint64_t gen, addr, len;
	_Atomic uint32_t key, access;
	uint8_t pad0[32];
	_Atomic uint32_t busy;
	uint8_t pad1[60];
};

static uint64_t stat_of(struct side *s, enum soft_ring_stat k)
{
	uint64_t st[SOFT_RING_NSTATS];

	assert_int_equal(soft_shmring_stats(s->qp, st), 0);
	return st[k];
}

static void drive(struct side *a, struct side *b)
{
	rv_wc wc;
	struct timespec ts = {0, 200000};

	assert_int_equal(rv_cq_poll(a->cq, &wc, 1), 0);
	assert_int_equal(rv_cq_poll(b->cq, &wc, 1), 0);
	nanosleep(&ts, NULL);
}

static void wait_rings(struct side *a, struct side *b)
{
	int64_t end = now_ms() + GUARD_MS;

	while (stat_of(a, SOFT_RING_STATE) != 3 || stat_of(b, SOFT_RING_STATE) != 3) {
		if (now_ms() > end)
			fail_msg("rings not on after %d ms", GUARD_MS);
		drive(a, b);
	}
}

static void post(struct side *s, uint32_t op, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t id)
{
	rv_sge g = sge(s, off, len);
	rv_send_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1, .opcode = op, .send_flags = RV_SEND_SIGNALED,
			 .remote_addr = raddr, .rkey = rkey};
	size_t n;

	assert_int_equal(rv_qp_post_send(s->qp, &wr, 1, &n), 0);
}

static void post_recv(struct side *s, size_t off, uint32_t len, uint64_t id)
{
	rv_sge g = sge(s, off, len);
	rv_recv_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1};
	size_t n;

	assert_int_equal(rv_qp_post_recv(s->qp, &wr, 1, &n), 0);
}

static void expect(rv_cq *cq, uint64_t id, uint32_t status)
{
	rv_wc wc = poll_one_within(cq, GUARD_MS);

	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.status, status);
}

static uint64_t raddr(struct side *b, size_t off)
{
	return (uint64_t)(uintptr_t)b->buf + off;
}

/* a and b connected on rings; a's WRITE into b's MR went through the ring
 * and earned a grant, which a mapped. */
static void open_granted_opts(struct side *a, struct side *b, uint32_t b_access, const struct conn_opts *bo)
{
	int64_t end;

	side_open(a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(b, 0, b_access);
	connect_pair(a, &DEFAULTS, b, bo);
	wait_rings(a, b);
	post(a, RV_WR_RDMA_WRITE, 0, 8, raddr(b, 0), rv_mr_rkey(b->mr), 1);
	expect(a->cq, 1, RV_WC_SUCCESS);
	end = now_ms() + GUARD_MS;
	while (stat_of(a, SOFT_RING_GRANTS_TAKEN) == 0) {
		if (now_ms() > end)
			fail_msg("no grant taken after %d ms (given %llu, refused %llu)", GUARD_MS,
				 (unsigned long long)stat_of(b, SOFT_RING_GRANTS_GIVEN),
				 (unsigned long long)stat_of(a, SOFT_RING_GRANTS_REFUSED));
		drive(a, b);
	}
	assert_int_equal(stat_of(b, SOFT_RING_GRANTS_GIVEN), 1);
}

static void open_granted_access(struct side *a, struct side *b, uint32_t b_access)
{
	open_granted_opts(a, b, b_access, &DEFAULTS);
}

static void open_granted(struct side *a, struct side *b)
{
	open_granted_access(a, b, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ);
}

/* Sizes and offsets, each WRITE by one copy, exact, nothing around it moved. */
static void test_onecopy__sizes_land_exactly(void **state)
{
	static const struct {
		size_t off;
		uint32_t len;
	} w[] = {{100, 1}, {1000, 63}, {4096, 4096}, {8191, 5000}, {20000, 20000}, {BUF - 777, 777}};
	struct side a, b;
	uint8_t *shadow = malloc(BUF);
	uint64_t d0;

	(void)state;
	assert_non_null(shadow);
	open_granted(&a, &b);
	fill(b.buf, BUF, 99);
	memcpy(shadow, b.buf, BUF);
	d0 = stat_of(&a, SOFT_RING_DIRECT);
	for (unsigned i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill(a.buf + 30000, w[i].len, i + 1);
		post(&a, RV_WR_RDMA_WRITE, 30000, w[i].len, raddr(&b, w[i].off), rv_mr_rkey(b.mr), 10 + i);
		expect(a.cq, 10 + i, RV_WC_SUCCESS);
		memcpy(shadow + w[i].off, a.buf + 30000, w[i].len);
		assert_memory_equal(b.buf, shadow, BUF); /* the range, and nothing else */
	}
	assert_int_equal(stat_of(&a, SOFT_RING_DIRECT) - d0, sizeof(w) / sizeof(w[0]));
	side_close(&a);
	side_close(&b);
	free(shadow);
}

/* READs from the granted MR (it has REMOTE_READ too): by one copy, exact,
 * the local bytes around the range untouched; a READ after a WRITE sees it. */
static void test_onecopy__reads(void **state)
{
	static const uint32_t len[] = {1, 100, 4096, 30000};
	struct side a, b;
	uint64_t d0;

	(void)state;
	open_granted(&a, &b);
	fill(b.buf, BUF, 3);
	memset(a.buf, 0xee, BUF);
	d0 = stat_of(&a, SOFT_RING_DIRECT);
	for (unsigned i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
		size_t off = 1000 + i * 7;
		post(&a, RV_WR_RDMA_READ, 10000, len[i], raddr(&b, off), rv_mr_rkey(b.mr), 20 + i);
		expect(a.cq, 20 + i, RV_WC_SUCCESS);
		assert_memory_equal(a.buf + 10000, b.buf + off, len[i]);
		assert_int_equal(a.buf[9999], 0xee);
		assert_int_equal(a.buf[10000 + len[i]], 0xee);
	}
	/* WRITE then READ of the same bytes, posted together. */
	fill(a.buf, 512, 9);
	post(&a, RV_WR_RDMA_WRITE, 0, 512, raddr(&b, 50000), rv_mr_rkey(b.mr), 30);
	post(&a, RV_WR_RDMA_READ, 2048, 512, raddr(&b, 50000), rv_mr_rkey(b.mr), 31);
	expect(a.cq, 30, RV_WC_SUCCESS);
	expect(a.cq, 31, RV_WC_SUCCESS);
	assert_memory_equal(a.buf + 2048, a.buf, 512);
	assert_true(stat_of(&a, SOFT_RING_DIRECT) - d0 >= sizeof(len) / sizeof(len[0]));
	side_close(&a);
	side_close(&b);
}

/* A grant of an MR without REMOTE_READ carries no READ: the READ fails
 * with RV_WC_REM_ACCESS_ERR as before, and the local buffer is untouched. */
static void test_onecopy__no_read_without_remote_read(void **state)
{
	struct side a, b;

	(void)state;
	open_granted_access(&a, &b, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	fill(b.buf, BUF, 4);
	memset(a.buf, 0xee, BUF);
	post(&a, RV_WR_RDMA_READ, 10000, 100, raddr(&b, 0), rv_mr_rkey(b.mr), 40);
	expect(a.cq, 40, RV_WC_REM_ACCESS_ERR);
	for (unsigned i = 0; i < 100; i++)
		assert_int_equal(a.buf[10000 + i], 0xee);
	side_close(&a);
	side_close(&b);
}

/* A target QP that answers no READs (max_dest_rd_atomic 0, IRD 0) grants
 * its MR for WRITEs only, however the MR and the QP's access flags allow
 * READs: a READ is a remote invalid request as over the ring, and reads
 * nothing. (The grant once carried REMOTE_READ here, and a READ posted after
 * the grant arrived succeeded: test-soft-ext's read_to_ird_zero saw it now
 * and then.) */
static void test_onecopy__no_read_from_ird_zero(void **state)
{
	struct conn_opts bo = DEFAULTS;
	struct side a, b;

	(void)state;
	bo.max_dest_rd_atomic = 0;
	open_granted_opts(&a, &b, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ, &bo);
	fill(b.buf, BUF, 5);
	memset(a.buf, 0xee, BUF);
	post(&a, RV_WR_RDMA_READ, 10000, 100, raddr(&b, 0), rv_mr_rkey(b.mr), 50);
	expect(a.cq, 50, RV_WC_REM_INV_REQ_ERR);
	for (unsigned i = 0; i < 100; i++)
		assert_int_equal(a.buf[10000 + i], 0xee);
	side_close(&a);
	side_close(&b);
}

/* Rounds posted without waiting: WRITE to X (direct when the queue is
 * empty), SEND (ring), WRITE to X again (after the SEND: held until the
 * ring drained, then direct), SEND. Completions in posting order; the
 * receiver finds X's second value when the second SEND arrives. */
static void test_onecopy__mixed_in_order(void **state)
{
	struct side a, b;
	const size_t x = 40000;

	(void)state;
	open_granted(&a, &b);
	for (unsigned r = 0; r < 30; r++) {
		uint64_t id = 1000 + r * 10;

		fill(a.buf + 0, 512, r * 3 + 1);
		fill(a.buf + 1024, 512, r * 3 + 2);
		fill(a.buf + 2048, 64, r * 3 + 3);
		post_recv(&b, 8192, 1024, id);
		post_recv(&b, 9216, 1024, id + 1);
		post(&a, RV_WR_RDMA_WRITE, 0, 512, raddr(&b, x), rv_mr_rkey(b.mr), id);
		post(&a, RV_WR_SEND, 2048, 64, 0, 0, id + 1);
		post(&a, RV_WR_RDMA_WRITE, 1024, 512, raddr(&b, x), rv_mr_rkey(b.mr), id + 2);
		post(&a, RV_WR_SEND, 2048, 32, 0, 0, id + 3);
		for (unsigned i = 0; i < 4; i++)
			expect(a.cq, id + i, RV_WC_SUCCESS);
		rv_wc wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, id);
		assert_memory_equal(b.buf + 8192, a.buf + 2048, 64);
		wc = poll_one_within(b.cq, GUARD_MS);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, id + 1);
		assert_memory_equal(b.buf + x, a.buf + 1024, 512); /* the later WRITE won, before the SEND */
	}
	assert_true(stat_of(&a, SOFT_RING_DIRECT) >= 30);
	side_close(&a);
	side_close(&b);
}

/* A WRITE one byte past the MR, with a key that is not b's, and into an MR
 * without REMOTE_WRITE: RV_WC_REM_ACCESS_ERR as on the ring, b's memory
 * untouched. */
static void test_onecopy__bad_writes_fail_as_before(void **state)
{
	for (int k = 0; k < 3; k++) {
		struct side a, b;
		rv_mr *ro = NULL;
		uint64_t addr;
		uint32_t key;
		uint64_t d0;

		(void)state;
		open_granted(&a, &b);
		assert_int_equal(rv_mr_alloc(b.pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &ro), 0);
		memset(rv_mr_addr(ro), 0x5a, 4096);
		fill(b.buf, BUF, 7);
		uint8_t *copy = malloc(BUF);
		assert_non_null(copy);
		memcpy(copy, b.buf, BUF);
		key = rv_mr_rkey(b.mr);
		addr = raddr(&b, BUF - 100);
		if (k == 1)
			key ^= 0x100;
		if (k == 2) {
			key = rv_mr_rkey(ro);
			addr = (uint64_t)(uintptr_t)rv_mr_addr(ro);
		}
		d0 = stat_of(&a, SOFT_RING_DIRECT);
		post(&a, RV_WR_RDMA_WRITE, 0, 101, addr, key, 77);
		expect(a.cq, 77, RV_WC_REM_ACCESS_ERR);
		assert_int_equal(stat_of(&a, SOFT_RING_DIRECT), d0);
		assert_memory_equal(b.buf, copy, BUF);
		for (unsigned i = 0; i < 4096; i++)
			assert_int_equal(((uint8_t *)rv_mr_addr(ro))[i], 0x5a);
		free(copy);
		rv_mr_unref(ro);
		side_close(&a);
		side_close(&b);
	}
}

/* rv_mr_rereg taking REMOTE_WRITE away revokes: the next WRITE fails with
 * RV_WC_REM_ACCESS_ERR and the memory (still mapped) is not written. */
static void test_onecopy__rereg_revokes(void **state)
{
	struct side a, b;

	(void)state;
	open_granted(&a, &b);
	fill(a.buf, 256, 5);
	post(&a, RV_WR_RDMA_WRITE, 0, 256, raddr(&b, 512), rv_mr_rkey(b.mr), 2);
	expect(a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(b.buf + 512, a.buf, 256);
	assert_true(stat_of(&a, SOFT_RING_DIRECT) >= 1);
	assert_int_equal(rv_mr_rereg(b.mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), 0);
	assert_true(stat_of(&b, SOFT_RING_REVOKED) >= 1);
	memset(b.buf + 512, 0, 256);
	fill(a.buf, 256, 6);
	post(&a, RV_WR_RDMA_WRITE, 0, 256, raddr(&b, 512), rv_mr_rkey(b.mr), 3);
	expect(a.cq, 3, RV_WC_REM_ACCESS_ERR);
	for (unsigned i = 0; i < 256; i++)
		assert_int_equal(b.buf[512 + i], 0);
	side_close(&a);
	side_close(&b);
}

/* rv_mr_dereg (the MR closed) revokes: a second MR stays granted and
 * written, the closed one's key fails with RV_WC_REM_ACCESS_ERR. */
static void test_onecopy__dereg_revokes(void **state)
{
	struct side a, b;
	rv_mr *m2 = NULL;
	uint8_t *p2;
	uint32_t k2;
	int64_t end;

	(void)state;
	open_granted(&a, &b);
	assert_int_equal(rv_mr_alloc(b.pd, 8192, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &m2), 0);
	p2 = rv_mr_addr(m2);
	k2 = rv_mr_rkey(m2);
	fill(a.buf, 100, 1);
	post(&a, RV_WR_RDMA_WRITE, 0, 100, (uint64_t)(uintptr_t)p2, k2, 4); /* ring; earns a grant */
	expect(a.cq, 4, RV_WC_SUCCESS);
	end = now_ms() + GUARD_MS;
	while (stat_of(&a, SOFT_RING_GRANTS_TAKEN) < 2) {
		if (now_ms() > end)
			fail_msg("second grant not taken");
		drive(&a, &b);
	}
	uint64_t d0 = stat_of(&a, SOFT_RING_DIRECT);
	fill(a.buf, 100, 2);
	post(&a, RV_WR_RDMA_WRITE, 0, 100, (uint64_t)(uintptr_t)p2 + 200, k2, 5);
	expect(a.cq, 5, RV_WC_SUCCESS);
	assert_memory_equal(p2 + 200, a.buf, 100);
	assert_int_equal(stat_of(&a, SOFT_RING_DIRECT), d0 + 1);
	assert_int_equal(rv_mr_close(m2), 0);
	rv_mr_unref(m2);
	assert_true(stat_of(&b, SOFT_RING_REVOKED) >= 1);
	/* The first MR is still granted. */
	post(&a, RV_WR_RDMA_WRITE, 0, 100, raddr(&b, 0), rv_mr_rkey(b.mr), 6);
	expect(a.cq, 6, RV_WC_SUCCESS);
	assert_int_equal(stat_of(&a, SOFT_RING_DIRECT), d0 + 2);
	post(&a, RV_WR_RDMA_WRITE, 0, 100, (uint64_t)(uintptr_t)p2 + 200, k2, 7);
	expect(a.cq, 7, RV_WC_REM_ACCESS_ERR); /* a direct WRITE would have completed successfully */
	side_close(&a);
	side_close(&b);
}

/* RVERBS_SOFT_SHM_DIRECT=0: no grant, every WRITE through the ring, data right. */
static void test_onecopy__off_by_environment(void **state)
{
	struct side a, b;

	(void)state;
	setenv("RVERBS_SOFT_SHM_DIRECT", "0", 1);
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	unsetenv("RVERBS_SOFT_SHM_DIRECT");
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	wait_rings(&a, &b);
	for (unsigned i = 0; i < 20; i++) {
		fill(a.buf, 3000, i);
		post(&a, RV_WR_RDMA_WRITE, 0, 3000, raddr(&b, 5000), rv_mr_rkey(b.mr), i);
		expect(a.cq, i, RV_WC_SUCCESS);
		drive(&a, &b);
	}
	/* Visible once a completion after it was seen (a SEND behind it). */
	post_recv(&b, 0, 64, 99);
	post(&a, RV_WR_SEND, 0, 8, 0, 0, 98);
	expect(a.cq, 98, RV_WC_SUCCESS);
	expect(b.cq, 99, RV_WC_SUCCESS);
	assert_memory_equal(b.buf + 5000, a.buf, 3000);
	assert_int_equal(stat_of(&b, SOFT_RING_GRANTS_GIVEN), 0);
	assert_int_equal(stat_of(&a, SOFT_RING_GRANTS_TAKEN), 0);
	assert_int_equal(stat_of(&a, SOFT_RING_DIRECT), 0);
	side_close(&a);
	side_close(&b);
}

/* a's view of what a hostile b put in its grant area, offered with
 * descriptor fd and slot index: refused, no crash. */
static void hostile_grant(struct side *a, struct side *b, int fd, uint32_t slot, uint64_t len)
{
	struct soft_qp *q = ((struct rv_qp *)a->qp)->drv_qp;
	uint8_t *map = soft_shmring_debug_tx(b->qp, &(uint32_t){0});
	struct slot *s = (struct slot *)(map + GRANT_OFF) + 5;
	uint64_t r0 = stat_of(a, SOFT_RING_GRANTS_REFUSED), t0 = stat_of(a, SOFT_RING_GRANTS_TAKEN);

	atomic_store(&s->addr, raddr(b, 0));
	atomic_store(&s->len, len);
	atomic_store(&s->key, rv_mr_rkey(b->mr) ^ 0x4000);
	atomic_store(&s->access, RV_ACCESS_REMOTE_WRITE);
	atomic_store(&s->gen, 12345);
	soft_lock_take(&q->sc->lock);
	soft_lock_take(&q->lock);
	assert_true(soft_grant_got(q, q->conn, (uint32_t)fd, slot));
	soft_lock_give(&q->lock);
	soft_lock_give(&q->sc->lock);
	atomic_store(&s->gen, 0);
	assert_int_equal(stat_of(a, SOFT_RING_GRANTS_REFUSED), r0 + 1);
	assert_int_equal(stat_of(a, SOFT_RING_GRANTS_TAKEN), t0);
}

static void test_onecopy__hostile_grants_refused(void **state)
{
	struct side a, b;
	int pipefd[2], shrinkable, small;

	(void)state;
	open_granted(&a, &b);
	assert_int_equal(pipe(pipefd), 0);
	shrinkable = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(shrinkable >= 0);
	assert_int_equal(ftruncate(shrinkable, BUF), 0);
	small = memfd_create("hostile-small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(small >= 0);
	assert_int_equal(ftruncate(small, 4096), 0);
	assert_int_equal(fcntl(small, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	hostile_grant(&a, &b, pipefd[0], 5, BUF);   /* not a memfd */
	hostile_grant(&a, &b, shrinkable, 5, BUF);  /* could be truncated under us: SIGBUS */
	hostile_grant(&a, &b, small, 5, BUF);       /* smaller than the range */
	hostile_grant(&a, &b, small, 99, 4096);     /* slot out of range */
	hostile_grant(&a, &b, 1 << 20, 5, 4096);    /* no such descriptor */
	hostile_grant(&a, &b, small, 5, 0);         /* empty range */
	close(pipefd[0]);
	close(pipefd[1]);
	close(shrinkable);
	close(small);
	/* WRITEs still work, by one copy under the real grant. */
	uint64_t d0 = stat_of(&a, SOFT_RING_DIRECT);
	fill(a.buf, 1000, 42);
	post(&a, RV_WR_RDMA_WRITE, 0, 1000, raddr(&b, 100), rv_mr_rkey(b.mr), 9);
	expect(a.cq, 9, RV_WC_SUCCESS);
	assert_memory_equal(b.buf + 100, a.buf, 1000);
	assert_int_equal(stat_of(&a, SOFT_RING_DIRECT), d0 + 1);
	side_close(&a);
	side_close(&b);
}

/* Two processes: the child is the target, the parent writes. The grant's
 * descriptor is taken with pidfd_getfd (skipped where the kernel lacks it:
 * the connection stays without rings or grants). */
static void test_onecopy__between_processes(void **state)
{
	int sv[2];
	pid_t pid;
	struct side a;
	rv_endpoint ea, eb;
	uint64_t baddr;
	uint32_t bkey;
	int status;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct side b;
		char go;
		in_child = true;
		close(sv[0]);
		side_open(&b, 0, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
		CHECK(rv_qp_endpoint(b.qp, &eb) == 0);
		baddr = (uint64_t)(uintptr_t)b.buf;
		bkey = rv_mr_rkey(b.mr);
		CHECK(full_io(sv[1], &eb, sizeof(eb), true) == 0);
		CHECK(full_io(sv[1], &baddr, sizeof(baddr), true) == 0);
		CHECK(full_io(sv[1], &bkey, sizeof(bkey), true) == 0);
		CHECK(full_io(sv[1], &ea, sizeof(ea), false) == 0);
		connect_one(&b, &ea, &DEFAULTS);
		post_recv(&b, 60000, 64, 1);
		/* The SEND after the WRITEs: then the data must be there. */
		rv_wc wc = poll_one_within(b.cq, 20000);
		CHECK(wc.status == RV_WC_SUCCESS);
		uint8_t expect_buf[4096];
		fill(expect_buf, sizeof(expect_buf), 77);
		CHECK(memcmp(b.buf + 1000, expect_buf, sizeof(expect_buf)) == 0);
		for (unsigned i = 0; i < 1000; i++)
			CHECK(b.buf[i] == 0);
		for (unsigned i = 1000 + 4096; i < 60000; i++)
			CHECK(b.buf[i] == 0);
		uint64_t given = stat_of(&b, SOFT_RING_GRANTS_GIVEN);
		CHECK(full_io(sv[1], &given, sizeof(given), true) == 0);
		CHECK(full_io(sv[1], &go, 1, false) == 0);
		side_close(&b);
		_exit(0);
	}
	close(sv[1]);
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rv_qp_endpoint(a.qp, &ea), 0);
	assert_int_equal(full_io(sv[0], &eb, sizeof(eb), false), 0);
	assert_int_equal(full_io(sv[0], &baddr, sizeof(baddr), false), 0);
	assert_int_equal(full_io(sv[0], &bkey, sizeof(bkey), false), 0);
	assert_int_equal(full_io(sv[0], &ea, sizeof(ea), true), 0);
	connect_one(&a, &eb, &DEFAULTS);
	/* Many WRITEs of the same bytes: the first ones through the ring, the
	 * later ones by one copy once the grant came (if the kernel allows). */
	fill(a.buf, 4096, 77);
	for (unsigned i = 0; i < 200; i++) {
		post(&a, RV_WR_RDMA_WRITE, 0, 4096, baddr + 1000, bkey, i);
		expect(a.cq, i, RV_WC_SUCCESS);
		if (i > 20 && stat_of(&a, SOFT_RING_DIRECT) > 3)
			break;
	}
	post(&a, RV_WR_SEND, 0, 8, 0, 0, 999);
	expect(a.cq, 999, RV_WC_SUCCESS);
	uint64_t given = 0;
	assert_int_equal(full_io(sv[0], &given, sizeof(given), false), 0);
	bool rings = stat_of(&a, SOFT_RING_STATE) == 3;
	uint64_t direct = stat_of(&a, SOFT_RING_DIRECT);
	assert_int_equal(full_io(sv[0], "g", 1, true), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	side_close(&a);
	close(sv[0]);
	if (!rings)
		skip(); /* no pidfd_getfd here: no rings between processes, nothing to grant */
	assert_int_equal(given, 1);
	assert_true(direct > 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_onecopy__sizes_land_exactly),
		cmocka_unit_test(test_onecopy__reads),
		cmocka_unit_test(test_onecopy__no_read_without_remote_read),
		cmocka_unit_test(test_onecopy__no_read_from_ird_zero),
		cmocka_unit_test(test_onecopy__mixed_in_order),
		cmocka_unit_test(test_onecopy__bad_writes_fail_as_before),
		cmocka_unit_test(test_onecopy__rereg_revokes),
		cmocka_unit_test(test_onecopy__dereg_revokes),
		cmocka_unit_test(test_onecopy__off_by_environment),
		cmocka_unit_test(test_onecopy__hostile_grants_refused),
		cmocka_unit_test(test_onecopy__between_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
