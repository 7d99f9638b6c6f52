/*
 * soft_lock and soft_rwlock (lib/drivers/soft/lock.h), since shmlat5 the
 * locks of the CQs, the QPs and the MR table. Each alone from several
 * threads: a plain counter that only the lock orders (ThreadSanitizer
 * reports any lapse), a holder that sleeps (its waiters go through the
 * futex and must be woken), readers that must never see half of a write,
 * a writer that waits for a reader. Then the CQ from several threads at
 * once: four posters whose QPs share one CQ that a fifth thread polls
 * while a sixth resizes it (every push, poll and resize takes the lock),
 * each completion seen exactly once; and the same four posters with two
 * pollers, run CQ_RUNS times (a locked poll that found the ring empty
 * because the other poller came first returned -EOVERFLOW, a false
 * overflow, in 1 to 4 runs in 100 here), then ten runs of two pollers and the
 * resizer. Suites soft and threads (.ci/run
 * builds threads with -Db_sanitize=thread). Exits 77 when soft0 is not
 * built in.
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

#include "drivers/soft/lock.h"
#include "test-clock.h"
#include "soft-context.h"

#define THREADS 4

static struct soft_lock lock;
static uint64_t counter; /* only under lock: not atomic on purpose */
static pthread_barrier_t go;

static void nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static void *count_main(void *arg)
{
	long n = (long)(intptr_t)arg;

	pthread_barrier_wait(&go);
	for (long i = 0; i < n; i++) {
		soft_lock_take(&lock);
		counter++;
		soft_lock_give(&lock);
	}
	return NULL;
}

static void test_soft_lock__counts_under_contention(void **state)
{
	enum { N = 200000 };
	pthread_t th[THREADS];

	(void)state;
	soft_lock_init(&lock);
	counter = 0;
	assert_int_equal(pthread_barrier_init(&go, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, count_main, (void *)(intptr_t)N), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&go);
	assert_int_equal(counter, (uint64_t)THREADS * N);
	assert_int_equal(atomic_load(&lock.v), 0);
}

static _Atomic int entered;

static void *sleeper_waiter_main(void *arg)
{
	(void)arg;
	soft_lock_take(&lock);
	counter++;
	atomic_fetch_add(&entered, 1);
	soft_lock_give(&lock);
	return NULL;
}

/* A holder that sleeps 50 ms: its waiters spin out, sleep on the futex
 * (the word goes to 2) and are all woken, one give after another. */
static void test_soft_lock__sleeping_waiters_are_woken(void **state)
{
	pthread_t th[THREADS];

	(void)state;
	soft_lock_init(&lock);
	counter = 0;
	atomic_store(&entered, 0);
	soft_lock_take(&lock);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, sleeper_waiter_main, NULL), 0);
	nap_us(50000);
	assert_int_equal(atomic_load(&entered), 0);
	assert_int_equal(atomic_load(&lock.v), 2); /* someone sleeps on it */
	soft_lock_give(&lock);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(atomic_load(&entered), THREADS);
	assert_int_equal(counter, THREADS);
	assert_int_equal(atomic_load(&lock.v), 0);
}

/* ---- soft_rwlock (the MR table's lock): readers see no half-done write ---- */

static struct soft_rwlock rw;
static uint64_t pair_a, pair_b; /* written together under the write lock */
static _Atomic int readers_bad, rw_stop;

static void *rw_reader_main(void *arg)
{
	long n = (long)(intptr_t)arg;

	pthread_barrier_wait(&go);
	for (long i = 0; i < n; i++) {
		soft_rwlock_read(&rw);
		if (pair_a != pair_b)
			atomic_store(&readers_bad, 1);
		soft_rwlock_give(&rw);
	}
	return NULL;
}

static void *rw_writer_main(void *arg)
{
	long n = (long)(intptr_t)arg;

	pthread_barrier_wait(&go);
	for (long i = 0; i < n; i++) {
		soft_rwlock_write(&rw);
		pair_a++;
		if (i % 64 == 0)
			nap_us(1); /* a write held across a sleep: readers wait on the futex */
		pair_b++;
		soft_rwlock_give(&rw);
	}
	return NULL;
}

static void test_soft_lock__rwlock_readers_and_writers(void **state)
{
	pthread_t th[THREADS];

	(void)state;
	soft_rwlock_init(&rw);
	pair_a = pair_b = 0;
	atomic_store(&readers_bad, 0);
	assert_int_equal(pthread_barrier_init(&go, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, i < 2 ? rw_writer_main : rw_reader_main,
						(void *)(intptr_t)(i < 2 ? 2000 : 200000)),
				 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&go);
	assert_int_equal(atomic_load(&readers_bad), 0);
	assert_int_equal(pair_a, 4000);
	assert_int_equal(pair_b, 4000);
	assert_int_equal(atomic_load(&rw.v), 0);
	assert_int_equal(atomic_load(&rw.wr.v), 0);
}

static void *rw_slow_reader_main(void *arg)
{
	(void)arg;
	soft_rwlock_read(&rw);
	atomic_store(&rw_stop, 1);
	nap_us(50000); /* the writer waits for this reader on the futex */
	if (pair_a != 0)
		atomic_store(&readers_bad, 1);
	soft_rwlock_give(&rw);
	return NULL;
}

/* A writer that comes while a reader holds the lock waits for it (and
 * readers that come after the writer wait for the writer). */
static void test_soft_lock__rwlock_writer_waits_for_reader(void **state)
{
	pthread_t r;

	(void)state;
	soft_rwlock_init(&rw);
	pair_a = pair_b = 0;
	atomic_store(&readers_bad, 0);
	atomic_store(&rw_stop, 0);
	assert_int_equal(pthread_create(&r, NULL, rw_slow_reader_main, NULL), 0);
	while (!atomic_load(&rw_stop))
		nap_us(100);
	soft_rwlock_write(&rw);
	pair_a = pair_b = 1;
	soft_rwlock_give(&rw);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_int_equal(atomic_load(&readers_bad), 0);
	assert_int_equal(atomic_load(&rw.v), 0);
}

/* ---- the CQ: four posters, one poller and a resizer, or two pollers ----
 * The completions are pushed by the posting threads (the shortcut's reap),
 * by the pollers (their ring pass) and by the progress threads, all under
 * the CQ lock, while the resizer swaps the ring under it. With two pollers
 * the CQ "overflowed" in about 1 run in 6 (seen in shmlat5): it never did.
 * Both pollers read the lock-free count (c->avail) as non-zero, the first
 * took the entries, and the second, finding the ring empty under the lock,
 * returned -EOVERFLOW whatever the overflow flag said (cq2poll: the flag
 * was clear in every such failure, and no completion came twice). */

enum { PER_QP = 2000, WINDOW = 24, CQ_RUNS = 40 };

struct poster {
	rv_qp *qp;
	rv_sge sge;
	uint64_t raddr;
	uint32_t rkey;
	_Atomic int done;             /* completions seen for this QP, by either poller */
	_Atomic uint8_t seen[PER_QP]; /* by wr_id: each exactly once */
	_Atomic int bad;
};

static struct poster posters[THREADS];
static rv_cq *shared_cq;
static _Atomic int total_done, stop, failed; /* failed: a poller gave up, all stop */
static int64_t deadline;

static void *cq_poster_main(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < PER_QP; i++) {
		rv_send_wr w = {.wr_id = (uint64_t)i, .sg_list = &p->sge, .num_sge = 1,
				.opcode = RV_WR_RDMA_WRITE, .send_flags = RV_SEND_SIGNALED,
				.remote_addr = p->raddr, .rkey = p->rkey};
		while (i - atomic_load(&p->done) >= WINDOW && now_ms() < deadline && !atomic_load(&failed))
			nap_us(20);
		if (atomic_load(&failed))
			return NULL; /* the poller's error is the one reported */
		int rc = rv_qp_post_send(p->qp, &w, 1, NULL);

		if (rc != 0) {
			fprintf(stderr, "post %d: %d (%s)\n", i, rc, rv_error_last());
			return (void *)1;
		}
	}
	return NULL;
}

static void *cq_poller_main(void *arg)
{
	(void)arg;
	while (atomic_load(&total_done) < THREADS * PER_QP && now_ms() < deadline && !atomic_load(&failed)) {
		rv_wc wc[4];
		int n = rv_cq_poll(shared_cq, wc, 4);

		if (n < 0) {
			fprintf(stderr, "poll: %d (%s)\n", n, rv_error_last());
			atomic_store(&failed, 1);
			return (void *)1;
		}
		for (int k = 0; k < n; k++) {
			int i = 0;

			while (i < THREADS && rv_qp_num(posters[i].qp) != wc[k].qp_num)
				i++;
			if (i == THREADS || wc[k].status != RV_WC_SUCCESS || wc[k].wr_id >= PER_QP) {
				fprintf(stderr, "wc: qp %u status %s wr_id %llu opcode %d\n", wc[k].qp_num,
					rv_wc_status_str((int)wc[k].status), (unsigned long long)wc[k].wr_id, (int)wc[k].opcode);
				atomic_store(&failed, 1);
				return (void *)1;
			}
			/* Each completion exactly once. */
			if (atomic_exchange(&posters[i].seen[wc[k].wr_id], 1))
				atomic_store(&posters[i].bad, 1);
			atomic_fetch_add(&posters[i].done, 1);
			atomic_fetch_add(&total_done, 1);
		}
	}
	return NULL;
}

static void *cq_resizer_main(void *arg)
{
	(void)arg;
	for (uint32_t k = 0; !atomic_load(&stop); k++) {
		/* WINDOW * THREADS at most are held: both sizes fit them. */
		if (rv_cq_resize(shared_cq, k % 2 ? 256 : 512) != 0)
			return (void *)1;
		nap_us(200);
	}
	return NULL;
}

/* One run: four posters, `pollers` pollers, a resizer if asked. */
static void cq_run(int pollers, bool resize)
{
	rv_context *ca = open_ctx(), *cb = open_ctx();
	rv_pd *pa, *pb;
	rv_cq *cb_cq;
	rv_mr *ma, *mb;
	rv_qp *qb[THREADS];
	pthread_t th[THREADS], pl[2], rs;
	void *rc;

	deadline = now_ms() + 120000;
	atomic_store(&total_done, 0);
	atomic_store(&stop, 0);
	atomic_store(&failed, 0);
	assert_int_equal(rv_pd_new(ca, NULL, &pa), 0);
	assert_int_equal(rv_pd_new(cb, NULL, &pb), 0);
	assert_int_equal(rv_cq_new(ca, &(rv_cq_attr){.mask = RV_CQ_ATTR_CQE, .cqe = 256}, &shared_cq), 0);
	assert_int_equal(rv_cq_new(cb, NULL, &cb_cq), 0);
	assert_int_equal(rv_mr_alloc(pa, 65536, RV_ACCESS_ALL_REMOTE, NULL, &ma), 0);
	assert_int_equal(rv_mr_alloc(pb, 65536, RV_ACCESS_ALL_REMOTE, NULL, &mb), 0);
	for (int i = 0; i < THREADS; i++) {
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .send_cq = shared_cq};
		rv_endpoint ea, eb;

		qa.cap.max_send_wr = 64;
		qa.cap.max_recv_wr = 16;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		memset(&posters[i], 0, sizeof(posters[i]));
		assert_int_equal(rv_qp_new(pa, &qa, &posters[i].qp), 0);
		qa.send_cq = cb_cq;
		assert_int_equal(rv_qp_new(pb, &qa, &qb[i]), 0);
		assert_int_equal(rv_qp_endpoint(posters[i].qp, &ea), 0);
		assert_int_equal(rv_qp_endpoint(qb[i], &eb), 0);
		assert_int_equal(rv_qp_connect(posters[i].qp, &eb), 0);
		assert_int_equal(rv_qp_connect(qb[i], &ea), 0);
		posters[i].rkey = rv_mr_rkey(mb);
		posters[i].raddr = (uint64_t)(uintptr_t)rv_mr_addr(mb) + (uint64_t)i * 4096;
		posters[i].sge = (rv_sge){.addr = (uint64_t)(uintptr_t)rv_mr_addr(ma) + (uint64_t)i * 4096,
					  .length = 64, .lkey = rv_mr_lkey(ma)};
	}
	for (int k = 0; k < pollers; k++)
		assert_int_equal(pthread_create(&pl[k], NULL, cq_poller_main, NULL), 0);
	if (resize)
		assert_int_equal(pthread_create(&rs, NULL, cq_resizer_main, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, cq_poster_main, &posters[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], &rc), 0);
		assert_null(rc);
	}
	for (int k = 0; k < pollers; k++) {
		assert_int_equal(pthread_join(pl[k], &rc), 0);
		assert_null(rc);
	}
	atomic_store(&stop, 1);
	if (resize) {
		assert_int_equal(pthread_join(rs, &rc), 0);
		assert_null(rc);
	}
	assert_int_equal(atomic_load(&total_done), THREADS * PER_QP);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(atomic_load(&posters[i].bad), 0);
		assert_int_equal(atomic_load(&posters[i].done), PER_QP);
		for (int k = 0; k < PER_QP; k++)
			assert_int_equal(atomic_load(&posters[i].seen[k]), 1);
	}
	for (int i = 0; i < THREADS; i++) {
		rv_qp_unref(posters[i].qp);
		rv_qp_unref(qb[i]);
	}
	rv_mr_unref(ma);
	rv_mr_unref(mb);
	rv_cq_unref(shared_cq);
	rv_cq_unref(cb_cq);
	rv_pd_unref(pa);
	rv_pd_unref(pb);
	rv_context_unref(ca);
	rv_context_unref(cb);
}

static void test_soft_lock__cq_four_posters_a_poller_and_a_resize(void **state)
{
	(void)state;
	cq_run(1, true);
}

static void test_soft_lock__cq_four_posters_two_pollers(void **state)
{
	(void)state;
	for (int run = 0; run < CQ_RUNS; run++)
		cq_run(2, false);
}

/* Two pollers while the ring is swapped under them (fewer runs: the false
 * overflow above is caught without the resizer). */
static void test_soft_lock__cq_two_pollers_and_a_resize(void **state)
{
	(void)state;
	for (int run = 0; run < CQ_RUNS / 4; run++)
		cq_run(2, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_lock__counts_under_contention),
		cmocka_unit_test(test_soft_lock__sleeping_waiters_are_woken),
		cmocka_unit_test(test_soft_lock__rwlock_readers_and_writers),
		cmocka_unit_test(test_soft_lock__rwlock_writer_waits_for_reader),
		cmocka_unit_test(test_soft_lock__cq_four_posters_a_poller_and_a_resize),
		cmocka_unit_test(test_soft_lock__cq_four_posters_two_pollers),
		cmocka_unit_test(test_soft_lock__cq_two_pollers_and_a_resize),
	};
	rv_device *dev = NULL;

	if (rv_device_find("soft0", &dev) < 0)
		return 77;
	rv_device_unref(dev);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
