/*
 * rv_soft_qp_path (rverbs/soft.h): which path soft0 says a QP's traffic
 * takes, between two contexts of this process (the same-host path holds:
 * same pid, same network namespace). TCP only with RVERBS_SOFT_SHM=0; the
 * same-host path without rings with RVERBS_SOFT_SHM_RING=0; by default the
 * path only moves forward (TCP, same host, rings) while traffic runs, and
 * ends on the rings on both sides; NONE before the connection and after it
 * ended; the argument checks (NULL, a closed QP, a QP of another device),
 * with the output left alone on failure. Traffic is checked on every round;
 * the time limits are hang guards, never measurements.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "mock-driver.h"
#include "soft-pair.h"

#define GUARD_MS 10000
#define LARGE 12000u /* a SEND by reference on the same-host path (>= 8 KiB) */
#define SMALL 64u
#define UNTOUCHED ((rv_soft_path)0x5a)

static rv_soft_path path_of(rv_qp *qp)
{
	rv_soft_path p = UNTOUCHED;

	assert_int_equal(rv_soft_qp_path(qp, &p), 0);
	assert_true(p == RV_SOFT_PATH_NONE || p == RV_SOFT_PATH_TCP || p == RV_SOFT_PATH_SAME_HOST ||
		    p == RV_SOFT_PATH_SAME_HOST_RINGS);
	return p;
}

/* One SEND of len bytes from a to b, checked at both ends. */
static void round_trip(struct side *a, struct side *b, uint32_t len, unsigned seed)
{
	rv_sge gs = sge(a, 0, len), gr = sge(b, 0, BUF);
	rv_recv_wr rwr = {.wr_id = seed, .sg_list = &gr, .num_sge = 1};
	rv_send_wr swr = {.wr_id = seed, .sg_list = &gs, .num_sge = 1, .opcode = RV_WR_SEND,
			  .send_flags = RV_SEND_SIGNALED};
	size_t n;
	rv_wc wc;

	fill(a->buf, len, seed);
	assert_int_equal(rv_qp_post_recv(b->qp, &rwr, 1, &n), 0);
	assert_int_equal(rv_qp_post_send(a->qp, &swr, 1, &n), 0);
	wc = poll_one_within(b->cq, GUARD_MS);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, seed);
	assert_int_equal(wc.byte_len, len);
	assert_memory_equal(b->buf, a->buf, len);
	wc = poll_one_within(a->cq, GUARD_MS);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, seed);
}

/* Open a pair with var=0 in the environment of its contexts (read when a
 * context opens), or with the defaults when var is NULL. */
static void pair_open(struct side *a, struct side *b, const char *var)
{
	if (var)
		setenv(var, "0", 1);
	side_open(a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(b, 0, RV_ACCESS_LOCAL_WRITE);
	if (var)
		unsetenv(var);
	assert_int_equal(path_of(a->qp), RV_SOFT_PATH_NONE);
	connect_pair(a, &DEFAULTS, b, &DEFAULTS);
}

/* Traffic both ways, small and large, until both QPs report want (every
 * path seen only moves forward: TCP, same host, rings), then 20 more rounds
 * on which it stays. */
static void drive_until(struct side *a, struct side *b, rv_soft_path want)
{
	int64_t end = now_ms() + GUARD_MS;
	rv_soft_path last_a = RV_SOFT_PATH_TCP, last_b = RV_SOFT_PATH_TCP, pa, pb;
	unsigned round = 0;

	for (;; round++) {
		round_trip(a, b, round % 2 ? LARGE : SMALL, round);
		round_trip(b, a, round % 2 ? SMALL : LARGE, round + 1000);
		/* Connected and a message through: never NONE from here on. */
		pa = path_of(a->qp);
		pb = path_of(b->qp);
		assert_true(pa >= last_a && pa <= want);
		assert_true(pb >= last_b && pb <= want);
		last_a = pa;
		last_b = pb;
		if (pa == want && pb == want)
			break;
		if (now_ms() > end)
			fail_msg("path still %d and %d after %u rounds, expected %d", (int)pa, (int)pb, round, (int)want);
	}
	for (unsigned i = 0; i < 20; i++) {
		round_trip(a, b, i % 2 ? LARGE : SMALL, 2000 + i);
		assert_int_equal(path_of(a->qp), want);
		assert_int_equal(path_of(b->qp), want);
	}
}

static void test_path__tcp_only_with_RVERBS_SOFT_SHM_0(void **state)
{
	struct side a, b;

	(void)state;
	pair_open(&a, &b, "RVERBS_SOFT_SHM");
	drive_until(&a, &b, RV_SOFT_PATH_TCP);
	side_close(&a);
	side_close(&b);
}

static void test_path__same_host_without_rings_with_RVERBS_SOFT_SHM_RING_0(void **state)
{
	struct side a, b;

	(void)state;
	pair_open(&a, &b, "RVERBS_SOFT_SHM_RING");
	drive_until(&a, &b, RV_SOFT_PATH_SAME_HOST);
	side_close(&a);
	side_close(&b);
}

static void test_path__moves_to_the_rings(void **state)
{
	struct side a, b;

	(void)state;
	pair_open(&a, &b, NULL);
	drive_until(&a, &b, RV_SOFT_PATH_SAME_HOST_RINGS);
	side_close(&a);
	side_close(&b);
}

/* A QP moved to ERR gives its connection up: NONE at once on that side,
 * and on the peer once it saw the connection end. */
static void test_path__none_after_the_connection_ended(void **state)
{
	struct side a, b;
	rv_qp_attr at = {.mask = RV_QP_STATE, .qp_state = RV_QPS_ERR};
	int64_t end;

	(void)state;
	pair_open(&a, &b, NULL);
	round_trip(&a, &b, SMALL, 1);
	assert_int_not_equal(path_of(a.qp), RV_SOFT_PATH_NONE);
	assert_int_equal(rv_qp_modify(a.qp, &at), 0);
	assert_int_equal(path_of(a.qp), RV_SOFT_PATH_NONE);
	end = now_ms() + GUARD_MS;
	while (path_of(b.qp) != RV_SOFT_PATH_NONE) {
		rv_wc wc;
		struct timespec ts = {0, 200000};

		if (now_ms() > end)
			fail_msg("the peer's QP still reports a path %d ms after the connection ended", GUARD_MS);
		assert_true(rv_cq_poll(b.cq, &wc, 1) >= 0); /* drives progress */
		nanosleep(&ts, NULL);
	}
	side_close(&a);
	side_close(&b);
}

static void test_path__bad_arguments(void **state)
{
	struct side a;
	rv_soft_path p = UNTOUCHED;
	rv_device *mdev = NULL;
	rv_context *mctx = NULL;
	rv_pd *mpd = NULL;
	rv_cq *mcq = NULL;
	rv_qp *mqp = NULL, *qp = NULL;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	/* Never connected (RESET): NONE. */
	assert_int_equal(path_of(a.qp), RV_SOFT_PATH_NONE);
	/* NULL QP, NULL output: -EINVAL, the output untouched. */
	assert_int_equal(rv_soft_qp_path(NULL, &p), -EINVAL);
	assert_int_equal(p, UNTOUCHED);
	assert_int_equal(rv_soft_qp_path(a.qp, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "path is NULL"));
	/* A closed QP: -RV_ECLOSED, the output untouched. */
	qa.send_cq = a.cq;
	assert_int_equal(rv_qp_new(a.pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(rv_soft_qp_path(qp, &p), -RV_ECLOSED);
	assert_int_equal(p, UNTOUCHED);
	rv_qp_unref(qp);
	/* A QP of another device: -EOPNOTSUPP, naming it. */
	mock_reset();
	assert_int_equal(mock_device_new("mock0", &mdev), 0);
	assert_int_equal(rv_context_new(mdev, NULL, &mctx), 0);
	assert_int_equal(rv_pd_new(mctx, NULL, &mpd), 0);
	assert_int_equal(rv_cq_new(mctx, NULL, &mcq), 0);
	qa.send_cq = mcq;
	assert_int_equal(rv_qp_new(mpd, &qa, &mqp), 0);
	assert_int_equal(rv_soft_qp_path(mqp, &p), -EOPNOTSUPP);
	assert_int_equal(p, UNTOUCHED);
	assert_non_null(strstr(rv_error_last(), "mock0"));
	assert_non_null(strstr(rv_error_last(), "soft0"));
	rv_qp_unref(mqp);
	rv_cq_unref(mcq);
	rv_pd_unref(mpd);
	assert_int_equal(rv_context_close(mctx), 0);
	rv_context_unref(mctx);
	rv_device_unref(mdev);
	assert_int_equal(mock_live_total(), 0);
	side_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path__tcp_only_with_RVERBS_SOFT_SHM_0),
		cmocka_unit_test(test_path__same_host_without_rings_with_RVERBS_SOFT_SHM_RING_0),
		cmocka_unit_test(test_path__moves_to_the_rings),
		cmocka_unit_test(test_path__none_after_the_connection_ended),
		cmocka_unit_test(test_path__bad_arguments),
	};
	return cmocka_run_group_tests_name("soft-path", tests, NULL, NULL);
}
