/*
 * Concurrency of the handle core, the facade and soft0, for ThreadSanitizer
 * (.ci/run builds this suite with -Db_sanitize=thread; it passes without it
 * too): posters on their own QPs sharing one CQ polled by another thread (with
 * soft0's progress thread in the middle), ref/unref of one handle from many
 * threads, unrelated objects created and closed in parallel, and a close
 * cascade racing with the unrefs of its children (ownership.md: refcounts are
 * atomic, close takes the context lock; the library survives that race).
 * Exits 77 when soft0 is not built in.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>
#include "test-clock.h"
#include "soft-context.h"

#define THREADS 4

static void nap(void)
{
	struct timespec ts = {0, 20000};
	nanosleep(&ts, NULL);
}

static rv_qp *new_qp(rv_pd *pd, rv_cq *cq)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .send_cq = cq};
	rv_qp *qp = NULL;

	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	return qp;
}

/* The dump's line for the first handle of that type, e.g. "PD #1 refs=1 live". */
static void assert_dump_has(rv_context *ctx, const char *fragment)
{
	char *text = NULL;

	assert_int_equal(rv_context_dump(ctx, &text), 0);
	if (!strstr(text, fragment))
		fail_msg("dump lacks \"%s\":\n%s", fragment, text);
	rv_free(text);
}

/* ---- posters on their own QPs, one shared CQ, one poller ---- */

struct poster {
	rv_qp *qp;
	rv_sge sge;
	uint64_t raddr;
	uint32_t rkey;
	int n;
	_Atomic int done; /* completions the poller counted for this QP */
};

static void *poster_main(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < p->n; i++) {
		rv_send_wr w = {.wr_id = (uint64_t)i, .sg_list = &p->sge, .num_sge = 1,
				.opcode = i % 2 ? RV_WR_RDMA_WRITE : RV_WR_RDMA_READ, .send_flags = RV_SEND_SIGNALED,
				.remote_addr = p->raddr, .rkey = p->rkey};
		while (i - atomic_load(&p->done) >= 32)
			nap();
		if (rv_qp_post_send(p->qp, &w, 1, NULL) != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_threads__posters_share_a_cq_that_another_thread_polls(void **state)
{
	enum { N = 400 };
	rv_context *ca = open_ctx(), *cb = open_ctx();
	rv_pd *pa, *pb;
	rv_cq *qa_cq, *qb_cq;
	rv_mr *ma, *mb;
	rv_qp *qa[THREADS], *qb[THREADS];
	struct poster p[THREADS];
	pthread_t th[THREADS];
	int64_t end = now_ms() + 60000;
	int total = 0;

	(void)state;
	assert_int_equal(rv_pd_new(ca, NULL, &pa), 0);
	assert_int_equal(rv_pd_new(cb, NULL, &pb), 0);
	assert_int_equal(rv_cq_new(ca, NULL, &qa_cq), 0);
	assert_int_equal(rv_cq_new(cb, NULL, &qb_cq), 0);
	assert_int_equal(rv_mr_alloc(pa, 65536, RV_ACCESS_ALL_REMOTE, NULL, &ma), 0);
	assert_int_equal(rv_mr_alloc(pb, 65536, RV_ACCESS_ALL_REMOTE, NULL, &mb), 0);
	for (int i = 0; i < THREADS; i++) {
		rv_endpoint ea, eb;
		qa[i] = new_qp(pa, qa_cq);
		qb[i] = new_qp(pb, qb_cq);
		assert_int_equal(rv_qp_endpoint(qa[i], &ea), 0);
		assert_int_equal(rv_qp_endpoint(qb[i], &eb), 0);
		assert_int_equal(rv_qp_connect(qa[i], &eb), 0);
		assert_int_equal(rv_qp_connect(qb[i], &ea), 0);
		p[i] = (struct poster){.qp = qa[i], .n = N, .rkey = rv_mr_rkey(mb),
				       .raddr = (uint64_t)(uintptr_t)rv_mr_addr(mb) + (uint64_t)i * 4096,
				       .sge = {.addr = (uint64_t)(uintptr_t)rv_mr_addr(ma) + (uint64_t)i * 4096,
					       .length = 1024, .lkey = rv_mr_lkey(ma)}};
		atomic_init(&p[i].done, 0);
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, poster_main, &p[i]), 0);
	while (total < THREADS * N && now_ms() < end) {
		rv_wc wc[16];
		int n = rv_cq_poll(qa_cq, wc, 16);

		assert_true(n >= 0);
		for (int k = 0; k < n; k++) {
			int i = 0;
			while (i < THREADS && rv_qp_num(qa[i]) != wc[k].qp_num)
				i++;
			assert_true(i < THREADS);
			assert_int_equal(wc[k].status, RV_WC_SUCCESS);
			assert_int_equal(wc[k].wr_id, (uint64_t)atomic_load(&p[i].done)); /* in order per QP */
			atomic_fetch_add(&p[i].done, 1);
			total++;
		}
		if (!n)
			nap();
	}
	for (int i = 0; i < THREADS; i++) {
		void *rc;
		assert_int_equal(pthread_join(th[i], &rc), 0);
		assert_null(rc);
	}
	assert_int_equal(total, THREADS * N);
	for (int i = 0; i < THREADS; i++) {
		rv_qp_unref(qa[i]);
		rv_qp_unref(qb[i]);
	}
	rv_mr_unref(ma);
	rv_mr_unref(mb);
	rv_cq_unref(qa_cq);
	rv_cq_unref(qb_cq);
	rv_pd_unref(pa);
	rv_pd_unref(pb);
	rv_context_unref(ca);
	rv_context_unref(cb);
}

/* ---- ref/unref of one handle from many threads ---- */

struct shared {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	pthread_barrier_t go;
	void *children[THREADS][8]; /* references handed to each thread */
	int n_children;
};

static void *refunref_main(void *arg)
{
	struct shared *s = arg;

	pthread_barrier_wait(&s->go);
	for (int i = 0; i < 20000; i++) {
		assert_ptr_equal(rv_pd_ref(s->pd), s->pd);
		if (i % 64 == 0)
			rv_context_ref(s->ctx);
		rv_pd_unref(s->pd);
		if (i % 64 == 0)
			rv_context_unref(s->ctx);
	}
	return NULL;
}

static void test_threads__ref_and_unref_one_handle(void **state)
{
	struct shared s = {.ctx = open_ctx()};
	pthread_t th[THREADS];

	(void)state;
	assert_int_equal(rv_pd_new(s.ctx, NULL, &s.pd), 0);
	pthread_barrier_init(&s.go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, refunref_main, &s), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&s.go);
	assert_dump_has(s.ctx, "context #");
	assert_dump_has(s.ctx, "PD #1 refs=1 live");
	rv_pd_unref(s.pd);
	rv_context_unref(s.ctx);
}

/* ---- unrelated objects created and closed in parallel ---- */

static void *churn_main(void *arg)
{
	struct shared *s = arg;
	rv_context *own = open_ctx();

	pthread_barrier_wait(&s->go);
	for (int i = 0; i < 40; i++) {
		/* Half in the shared context (its lock), half in a context of our own. */
		rv_context *ctx = i % 2 ? s->ctx : own;
		rv_pd *pd;
		rv_cq *cq;
		rv_mr *mr;
		rv_qp *qp;

		assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
		assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
		assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
		qp = new_qp(pd, cq);
		if (i % 3 == 0) {
			assert_int_equal(rv_pd_close(pd), 0); /* cascades to the QP and the MR */
			assert_int_equal(rv_qp_num(qp), 0);
		} else if (i % 3 == 1) {
			assert_int_equal(rv_cq_close(cq), 0); /* cascades to the QP */
		}
		rv_qp_unref(qp);
		rv_mr_unref(mr);
		rv_cq_unref(cq);
		rv_pd_unref(pd);
	}
	rv_context_unref(own);
	return NULL;
}

static void test_threads__unrelated_objects_in_parallel(void **state)
{
	struct shared s = {.ctx = open_ctx()};
	pthread_t th[THREADS];
	char *text = NULL;

	(void)state;
	pthread_barrier_init(&s.go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, churn_main, &s), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&s.go);
	/* Nothing is left in the shared context. */
	assert_int_equal(rv_context_dump(s.ctx, &text), 0);
	assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1); /* one line: the context */
	rv_free(text);
	rv_context_unref(s.ctx);
}

/* ---- a close cascade racing with the unrefs of the children ---- */

static _Atomic int worker_index;

static void *unref_children_main(void *arg)
{
	struct shared *s = arg;
	int me = atomic_fetch_add(&worker_index, 1);

	pthread_barrier_wait(&s->go);
	for (int k = 0; k < s->n_children; k++) {
		void *h = s->children[me][k];
		/* MRs at even, QPs at odd positions. */
		if (k % 2)
			rv_qp_unref(h);
		else
			rv_mr_unref(h);
	}
	return NULL;
}

static void test_threads__close_cascade_races_child_unrefs(void **state)
{
	(void)state;
	for (int round = 0; round < 30; round++) {
		struct shared s = {.ctx = open_ctx(), .n_children = 8};
		pthread_t th[THREADS - 1];
		int rc;

		assert_int_equal(rv_pd_new(s.ctx, NULL, &s.pd), 0);
		assert_int_equal(rv_cq_new(s.ctx, NULL, &s.cq), 0);
		for (int t = 0; t < THREADS - 1; t++)
			for (int k = 0; k < s.n_children; k++) {
				rv_mr *mr;
				if (k % 2) {
					s.children[t][k] = new_qp(s.pd, s.cq);
				} else {
					assert_int_equal(rv_mr_alloc(s.pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
					s.children[t][k] = mr;
				}
			}
		atomic_store(&worker_index, 0);
		pthread_barrier_init(&s.go, NULL, THREADS);
		for (int t = 0; t < THREADS - 1; t++)
			assert_int_equal(pthread_create(&th[t], NULL, unref_children_main, &s), 0);
		pthread_barrier_wait(&s.go);
		/* Close the PD, the CQ or the whole context while the children go. */
		switch (round % 3) {
		case 0: rc = rv_pd_close(s.pd); break;
		case 1: rc = rv_cq_close(s.cq); break;
		default: rc = rv_context_close(s.ctx); break;
		}
		assert_int_equal(rc, 0);
		for (int t = 0; t < THREADS - 1; t++)
			assert_int_equal(pthread_join(th[t], NULL), 0);
		pthread_barrier_destroy(&s.go);
		rv_cq_unref(s.cq);
		rv_pd_unref(s.pd);
		rv_context_unref(s.ctx);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads__posters_share_a_cq_that_another_thread_polls),
		cmocka_unit_test(test_threads__ref_and_unref_one_handle),
		cmocka_unit_test(test_threads__unrelated_objects_in_parallel),
		cmocka_unit_test(test_threads__close_cascade_races_child_unrefs),
	};
	rv_device *dev = NULL;

	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "test-threads: no soft0 device (%s)\n", rv_error_last());
		return 77;
	}
	rv_device_unref(dev);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
