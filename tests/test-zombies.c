/*
 * Zombies, against the mock driver: an object whose destroy fails at its last
 * unref gives up its references and is retried by whichever of its parents is
 * released or closed next (docs/ownership.md, "When a destroy fails").
 *
 * What every case proves: an application that only unrefs (never closes)
 * frees everything, each resource is destroyed exactly once and never before
 * what depends on it, and when the driver never gives in, rverbs still frees
 * all of its own memory (the ASan and valgrind setups check that part).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mock-driver.h"

static rv_device *dev;

struct log_capture {
	char text[16384];
	size_t len;
};

static void capture_log(rv_log_level level, const char *msg, void *user)
{
	struct log_capture *c = user;
	int n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "%d %s\n", (int)level, msg);

	if (n > 0 && c->len + (size_t)n < sizeof(c->text))
		c->len += (size_t)n;
}

static void assert_mock_sane(void)
{
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.order_violations, 0);
	assert_int_equal(mock.contract_violations, 0);
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	rv_set_log_handler(NULL, NULL);
	rv_set_log_level(RV_LOG_WARN);
	return mock_device_new("mock0", &dev);
}

static int teardown(void **state)
{
	(void)state;
	dev = rv_device_unref(dev);
	rv_set_log_handler(NULL, NULL);
	mock_reset();
	return 0;
}

/* The usual tree: a context with a PD, two CQs, an MR and a QP on both CQs. */
enum { H_CTX, H_PD, H_CQ, H_CQ2, H_MR, H_QP, N_HANDLES };

struct tree {
	void *h[N_HANDLES];
	char buf[256];
};

static void make_tree(struct tree *t)
{
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq, *cq2;
	rv_mr *mr;
	rv_qp *qp;
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ};

	memset(t, 0, sizeof(*t));
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq2), 0);
	assert_int_equal(rv_mr_reg(pd, t->buf, sizeof(t->buf), RV_ACCESS_LOCAL_WRITE, &mr), 0);
	a.send_cq = cq;
	a.recv_cq = cq2;
	assert_int_equal(rv_qp_new(pd, &a, &qp), 0);
	t->h[H_CTX] = ctx;
	t->h[H_PD] = pd;
	t->h[H_CQ] = cq;
	t->h[H_CQ2] = cq2;
	t->h[H_MR] = mr;
	t->h[H_QP] = qp;
}

static void unref_one(struct tree *t, int which)
{
	void *h = t->h[which];

	t->h[which] = NULL;
	switch (which) {
	case H_CTX: assert_null(rv_context_unref(h)); break;
	case H_PD: assert_null(rv_pd_unref(h)); break;
	case H_CQ: case H_CQ2: assert_null(rv_cq_unref(h)); break;
	case H_MR: assert_null(rv_mr_unref(h)); break;
	case H_QP: assert_null(rv_qp_unref(h)); break;
	default: fail();
	}
}

static void assert_each_destroyed_once(const struct tree *t)
{
	for (int i = 0; i < N_HANDLES; i++)
		if (mock_destroy_count(t->h[i]) != 1)
			fail_msg("handle %d (0 context, 1 PD, 2-3 CQ, 4 MR, 5 QP) destroyed %u times", i,
				 mock_destroy_count(t->h[i]));
}

static char *dump(rv_context *ctx)
{
	char *text = NULL;

	assert_int_equal(rv_context_dump(ctx, &text), 0);
	assert_non_null(text);
	return text;
}

/* Every order of the six last unrefs (720), with the QP's, the MR's and a
 * CQ's destroy failing once (then also the PD's, and twice each): nobody
 * closes anything, yet everything is destroyed exactly once, children first. */
static void unref_every_order(unsigned fail_count, bool fail_pd)
{
	int perm[N_HANDLES];
	unsigned orders = 0, zombies = 0, abandoned = 0;

	for (int i = 0; i < N_HANDLES; i++)
		perm[i] = i;
	for (;;) {
		struct tree t, ids;
		int i, j;

		dev = rv_device_unref(dev); /* the fixture's, in the first round */
		mock_reset();
		assert_int_equal(mock_device_new("mock0", &dev), 0);
		make_tree(&t);
		ids = t;
		mock_fail_destroy(RV_OBJ_QP, EBUSY, fail_count);
		mock_fail_destroy(RV_OBJ_MR, EIO, fail_count);
		mock_fail_destroy(RV_OBJ_CQ, EBUSY, fail_count);
		if (fail_pd)
			mock_fail_destroy(RV_OBJ_PD, EBUSY, fail_count);
		for (i = 0; i < N_HANDLES; i++) {
			unref_one(&t, perm[i]);
			assert_mock_sane();
		}
		/* Failing once, the retries at the parents' last unrefs suffice;
		 * failing twice, the context may be left to its device's last
		 * unref (the test holds the device). */
		if (fail_count == 1)
			assert_int_equal(mock_live_total(), 1); /* the device */
		dev = rv_device_unref(dev);
		if (fail_pd) {
			/* Refusals can outlast the last chances: what is still
			 * refused at the device's last unref is abandoned, never
			 * destroyed twice. */
			abandoned += mock_live_total();
			for (i = 0; i < N_HANDLES; i++)
				assert_true(mock_destroy_count(ids.h[i]) <= 1);
			assert_int_equal(mock.double_destroys, 0);
			assert_int_equal(mock.contract_violations, 0);
		} else {
			for (i = 0; i < N_HANDLES; i++)
				if (mock_destroy_count(ids.h[i]) != 1)
					fail_msg("order %d%d%d%d%d%d: handle %d destroyed %u times", perm[0], perm[1],
						 perm[2], perm[3], perm[4], perm[5], i, mock_destroy_count(ids.h[i]));
			assert_mock_sane();
			assert_int_equal(mock_live_total(), 0);
		}
		for (int ty = 1; ty < RV_OBJ_TYPE_MAX; ty++)
			zombies += mock.destroy_calls[ty] - mock.destroyed[ty];
		orders++;

		/* next permutation (lexicographic) */
		for (i = N_HANDLES - 2; i >= 0 && perm[i] > perm[i + 1]; i--)
			;
		if (i < 0)
			break;
		for (j = N_HANDLES - 1; perm[j] < perm[i]; j--)
			;
		int tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
		for (int a = i + 1, b = N_HANDLES - 1; a < b; a++, b--) {
			tmp = perm[a];
			perm[a] = perm[b];
			perm[b] = tmp;
		}
	}
	assert_int_equal(orders, 720);
	/* The failures did happen: at least one per failing type per order. */
	assert_true(zombies >= orders * (fail_pd ? 4 : 3));
	if (fail_pd)
		print_message("%u resources abandoned in 720 orders\n", abandoned);
	mock_reset();
	assert_int_equal(mock_device_new("mock0", &dev), 0);
}

static void test_zombies__unref_only_with_failing_qp_mr_cq_destroys_frees_everything_in_every_order(void **state)
{
	(void)state;
	unref_every_order(1, false);
}

static void test_zombies__unref_only_with_destroys_failing_twice_frees_everything_in_every_order(void **state)
{
	(void)state;
	unref_every_order(2, false);
}

static void test_zombies__unref_only_with_a_pd_that_refuses_too_never_destroys_twice(void **state)
{
	(void)state;
	unref_every_order(2, true);
}

static void test_zombies__a_zombie_pins_nothing_and_its_parents_last_unref_retries_it(void **state)
{
	struct tree t, ids;
	rv_context *ctx;
	char *text;

	(void)state;
	make_tree(&t);
	ids = t;
	ctx = rv_context_ref(t.h[H_CTX]);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 2);
	unref_one(&t, H_QP); /* the destroy fails: a zombie */
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	/* It gave up its references: the PD has ours and the MR's, the CQs ours. */
	assert_int_equal(atomic_load(&RV_OBJ(ids.h[H_PD])->refcnt), 2);
	assert_int_equal(atomic_load(&RV_OBJ(ids.h[H_CQ])->refcnt), 1);
	assert_int_equal(atomic_load(&RV_OBJ(ids.h[H_CQ2])->refcnt), 1);
	text = dump(ctx);
	assert_non_null(strstr(text, "QP #"));
	assert_non_null(strstr(text, "refs=0 zombie(destroy failed)"));
	rv_free(text);

	/* The first parent to go retries: the destroy fails again, so the CQ
	 * (whose close needs the QP gone) becomes a zombie too. */
	unref_one(&t, H_CQ2);
	assert_int_equal(mock.destroy_calls[RV_OBJ_QP], 2);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	assert_int_equal(mock_live(RV_OBJ_CQ), 2);
	text = dump(ctx);
	assert_non_null(strstr(text, "CQ #"));
	rv_free(text);

	/* The driver gives in: the PD's last unref (after its MR's) retries
	 * and frees the QP, then destroys the PD. */
	unref_one(&t, H_MR);
	unref_one(&t, H_PD);
	assert_int_equal(mock_destroy_count(ids.h[H_QP]), 1);
	assert_int_equal(mock_destroy_count(ids.h[H_PD]), 1);
	assert_true(mock_destroy_index(ids.h[H_QP]) < mock_destroy_index(ids.h[H_PD]));
	assert_int_equal(mock_live(RV_OBJ_CQ), 2); /* the zombie CQ waits for the context */
	text = dump(ctx);
	assert_null(strstr(text, "QP #"));
	assert_non_null(strstr(text, "zombie(destroy failed)"));
	rv_free(text);

	unref_one(&t, H_CQ);
	ctx = rv_context_unref(ctx);
	unref_one(&t, H_CTX);
	assert_each_destroyed_once(&ids);
	assert_true(mock_destroy_index(ids.h[H_CQ2]) < mock_destroy_index(ids.h[H_CTX]));
	assert_mock_sane();
	dev = rv_device_unref(dev);
	assert_int_equal(mock_live_total(), 0);
}

static void test_zombies__explicit_close_of_a_parent_still_retries_a_zombie(void **state)
{
	struct tree t, ids;

	(void)state;
	make_tree(&t);
	ids = t;
	mock_fail_destroy(RV_OBJ_MR, EBUSY, 1);
	unref_one(&t, H_MR);
	assert_int_equal(mock_live(RV_OBJ_MR), 1);
	assert_int_equal(rv_pd_close(t.h[H_PD]), 0);
	assert_int_equal(mock_destroy_count(ids.h[H_MR]), 1);
	for (int i = 0; i < N_HANDLES; i++)
		if (t.h[i])
			unref_one(&t, i);
	assert_each_destroyed_once(&ids);
	assert_mock_sane();
	dev = rv_device_unref(dev);
	assert_int_equal(mock_live_total(), 0);
}

/* The driver refuses the QP's destroy until the device's close: the context's
 * last unref cannot destroy the context, which is leaked (logged) and gives
 * up its device reference; the device's close retries and frees everything. */
static void test_zombies__a_context_leaked_by_a_refusing_zombie_is_reaped_by_device_close(void **state)
{
	struct log_capture cap = {0};
	struct tree t, ids;
	char want[160];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	make_tree(&t);
	ids = t;
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1000);
	assert_int_equal(atomic_load(&RV_OBJ(dev)->refcnt), 2);
	snprintf(want, sizeof(want), "%d context #%" PRIu64 " could not be destroyed at its last unref", RV_LOG_ERROR,
		 RV_COBJ(ids.h[H_CTX])->id);
	for (int i = N_HANDLES; i-- > 0;)
		unref_one(&t, i);
	assert_non_null(strstr(cap.text, want));
	/* The QP and what it needs are live in the driver; the MR went. */
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	assert_int_equal(mock_live(RV_OBJ_PD), 1);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	assert_int_equal(mock_destroy_count(ids.h[H_MR]), 1);
	/* The leaked context no longer pins the device. */
	assert_int_equal(atomic_load(&RV_OBJ(dev)->refcnt), 1);
	/* Still refusing: the device's close fails and can be retried. */
	assert_int_equal(rv_device_close(dev), -EBUSY);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	assert_int_equal(atomic_load(&RV_OBJ(dev)->refcnt), 1);
	mock_fail_destroy(RV_OBJ_QP, 0, 0);
	assert_int_equal(rv_device_close(dev), 0);
	assert_each_destroyed_once(&ids);
	assert_mock_sane();
	dev = rv_device_unref(dev);
	assert_int_equal(mock_live_total(), 0);
}

/* The driver never destroys the QP, and the application only unrefs (the
 * device too): the device's last unref is the last chance. rverbs retries
 * once more, then abandons what the driver refuses (logged), still asks the
 * driver to destroy the rest, and frees every handle: no memory of ours is
 * left (ASan/valgrind), whatever the driver does. */
static void test_zombies__a_destroy_that_never_succeeds_is_abandoned_at_the_devices_last_unref(void **state)
{
	struct log_capture cap = {0};
	struct tree t, ids;
	char want[160];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	make_tree(&t);
	ids = t;
	snprintf(want, sizeof(want), "%d abandoning QP #%" PRIu64 ": its destroy failed again", RV_LOG_ERROR,
		 RV_COBJ(ids.h[H_QP])->id);
	dev = rv_device_unref(dev); /* the context holds the device */
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1000);
	/* An explicit close of the context fails and leaves it usable. */
	assert_int_equal(rv_context_close(t.h[H_CTX]), -EBUSY);
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	for (int i = 0; i < N_HANDLES; i++)
		unref_one(&t, i);
	if (!strstr(cap.text, want))
		fail_msg("log:\n%s", cap.text);
	assert_non_null(strstr(cap.text, "still cannot be destroyed at its device's last unref"));
	/* The driver kept the QP, as it insisted; everything else was destroyed
	 * once and the device released. The QP's destroy was asked for at its
	 * explicit close, its last unref, each of its parents' last unrefs, the
	 * device's last unref, and once more by force. */
	assert_int_equal(mock_live(RV_OBJ_QP), 1);
	assert_int_equal(mock_live_total(), 1);
	for (int i = 0; i < N_HANDLES; i++)
		if (i != H_QP)
			assert_int_equal(mock_destroy_count(ids.h[i]), 1);
	assert_int_equal(mock_destroy_count(ids.h[H_QP]), 0);
	assert_true(mock.destroy_calls[RV_OBJ_QP] >= 5);
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.contract_violations, 0);
}

/* The same with the context's own destroy refusing: abandoned too. */
static void test_zombies__a_context_whose_destroy_never_succeeds_is_abandoned_at_the_devices_last_unref(void **state)
{
	struct log_capture cap = {0};
	rv_context *ctx;
	rv_pd *pd;

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	mock_fail_destroy(RV_OBJ_CONTEXT, EIO, 1000);
	ctx = rv_context_unref(ctx);
	pd = rv_pd_unref(pd);
	assert_int_equal(mock_live(RV_OBJ_PD), 0);
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	dev = rv_device_unref(dev);
	assert_non_null(strstr(cap.text, "abandoning context #"));
	assert_int_equal(mock_live(RV_OBJ_CONTEXT), 1);
	assert_int_equal(mock_live(RV_OBJ_DEVICE), 0);
	/* (The mock counts releasing the device under a live context as an
	 * order violation: that is the abandonment, on purpose.) */
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.contract_violations, 0);
}

/* A QP's last unref racing with its PD's close and the context's last unref
 * in another thread: the cascade may close the QP while the first thread is
 * on its way to the context's lock (final_unref's window, lib/core/object.c).
 * Nothing is freed twice or used after free (ASan, TSan) and everything is
 * destroyed once. */
struct race {
	pthread_barrier_t go;
	struct tree *t;
};

static void *race_unref_qp(void *p)
{
	struct race *r = p;

	pthread_barrier_wait(&r->go);
	unref_one(r->t, H_QP);
	return NULL;
}

static void *race_close_pd_and_release_the_rest(void *p)
{
	struct race *r = p;

	pthread_barrier_wait(&r->go);
	rv_pd_close(r->t->h[H_PD]);
	unref_one(r->t, H_PD);
	unref_one(r->t, H_MR);
	unref_one(r->t, H_CQ);
	unref_one(r->t, H_CQ2);
	unref_one(r->t, H_CTX);
	return NULL;
}

static void test_zombies__last_unref_racing_a_cascade_and_the_contexts_last_unref(void **state)
{
	(void)state;
	for (int it = 0; it < 300; it++) {
		struct tree t, ids;
		struct race r = {.t = &t};
		pthread_t a, b;

		make_tree(&t);
		ids = t;
		pthread_barrier_init(&r.go, NULL, 2);
		assert_int_equal(pthread_create(&a, NULL, race_unref_qp, &r), 0);
		assert_int_equal(pthread_create(&b, NULL, race_close_pd_and_release_the_rest, &r), 0);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		pthread_barrier_destroy(&r.go);
		assert_each_destroyed_once(&ids);
		assert_mock_sane();
	}
	dev = rv_device_unref(dev);
	assert_int_equal(mock_live_total(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_zombies__unref_only_with_failing_qp_mr_cq_destroys_frees_everything_in_every_order),
		T(test_zombies__unref_only_with_destroys_failing_twice_frees_everything_in_every_order),
		T(test_zombies__unref_only_with_a_pd_that_refuses_too_never_destroys_twice),
		T(test_zombies__a_zombie_pins_nothing_and_its_parents_last_unref_retries_it),
		T(test_zombies__explicit_close_of_a_parent_still_retries_a_zombie),
		T(test_zombies__a_context_leaked_by_a_refusing_zombie_is_reaped_by_device_close),
		T(test_zombies__a_destroy_that_never_succeeds_is_abandoned_at_the_devices_last_unref),
		T(test_zombies__a_context_whose_destroy_never_succeeds_is_abandoned_at_the_devices_last_unref),
		T(test_zombies__last_unref_racing_a_cascade_and_the_contexts_last_unref),
#undef T
	};

	return cmocka_run_group_tests_name("core: zombies", tests, NULL, NULL);
}
