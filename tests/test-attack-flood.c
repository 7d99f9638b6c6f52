/*
 * Attack classes 3 to 5 of issue 16: holding a soft0 context's connection
 * setup with state the attacker does not pay for.
 *
 * - Idle connections (never a byte): hundreds of them, then a real peer
 *   connects its QP and moves data; the target never holds more than its
 *   bound of unattached connections (SOFT_MAX_UNATTACHED, 128) in
 *   descriptors, and idle ones go after the first-byte timeout.
 * - Rejected requests in a loop (a QP that does not exist): the target's
 *   descriptors stay bounded while it happens, its log is rate-limited
 *   (SOFT_SETUP_LOG_PER_S), and a real peer still connects.
 * - Requests parked for a QP still in INIT, without a secret: the real peer
 *   of that QP is refused as before (documented: without a secret anyone who
 *   reaches the listener can ask for a QP), but with a secret an attacker
 *   cannot park one at all (test-soft-auth, unproven_request_holds_nothing).
 *
 * The attacker runs in a child process so that the target's descriptor count
 * is the target's alone. Correctness only: the hang guards are generous.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attack-peer.h"

#define BOUND 128 /* SOFT_MAX_UNATTACHED */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned warn_lines;

static void on_log(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	(void)msg;
	if (level != RV_LOG_WARN)
		return;
	pthread_mutex_lock(&log_lock);
	warn_lines++;
	pthread_mutex_unlock(&log_lock);
}

static unsigned warns(void)
{
	unsigned n;

	pthread_mutex_lock(&log_lock);
	n = warn_lines;
	pthread_mutex_unlock(&log_lock);
	return n;
}

static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* A real peer: a second context's RC QP connected to a fresh QP of the
 * target's context (both by rverbs), one RDMA WRITE that must complete. */
static void real_peer_gets_through(struct atk_target *t)
{
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd, *tpd = t->pd;
	rv_cq *cq, *tcq;
	rv_qp *qp, *tqp;
	rv_mr *mr;
	rv_endpoint e1, e2;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_sge g;
	rv_wc wc;
	int n = 0;

	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &tcq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	qa.send_cq = tcq;
	assert_int_equal(rv_qp_new(tpd, &qa, &tqp), 0);
	assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_ALL_REMOTE, NULL, &mr), 0);
	memset(rv_mr_addr(mr), 0x6d, 4096);
	assert_int_equal(rv_qp_endpoint(qp, &e1), 0);
	assert_int_equal(rv_qp_endpoint(tqp, &e2), 0);
	assert_int_equal(rv_qp_connect(qp, &e2), 0);
	assert_int_equal(rv_qp_connect(tqp, &e1), 0);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)rv_mr_addr(mr), .length = 4096, .lkey = rv_mr_lkey(mr)};
	assert_int_equal(rv_qp_write(qp, &g, (uint64_t)(uintptr_t)t->buf, rv_mr_rkey(t->mr), 5), 0);
	for (int i = 0; i < 20000 && n == 0; i++) {
		n = rv_cq_poll(cq, &wc, 1);
		if (n == 0)
			nap_ms(1);
	}
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(t->buf[i], 0x6d);
	memset(t->buf, 0xab, t->len);
	rv_qp_unref(tqp);
	rv_cq_unref(tcq);
	rv_mr_unref(mr);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
}

/* Children that open n idle connections each, then wait for SIGTERM. */
static pid_t idle_flood(const struct atk_target *t, int n, int ready_fd)
{
	pid_t pid = atk_fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int made = 0;
		for (int i = 0; i < n; i++)
			made += atk_connect(t) >= 0;
		(void)!write(ready_fd, &made, sizeof(made));
		pause();
		_exit(0);
	}
	return pid;
}

static void test_attack_flood__idle_connections_do_not_block_a_real_peer(void **state)
{
	struct atk_target t;
	int ready[2], made = 0, base;
	pid_t pid;

	(void)state;
	atk_target_open(&t, NULL, RV_QPT_RC, 65536);
	base = atk_open_fds();
	assert_int_equal(pipe(ready), 0);
	pid = idle_flood(&t, 3 * BOUND, ready[1]);
	assert_int_equal(read(ready[0], &made, sizeof(made)), (ssize_t)sizeof(made));
	assert_int_equal(made, 3 * BOUND); /* the backlog took them all: the target accepts and evicts */
	nap_ms(200);
	/* Bounded while they are there (the listener's accepts included). */
	assert_true(atk_open_fds() <= base + BOUND + 16);
	real_peer_gets_through(&t);
	/* The idle ones do not stay: the first-byte timeout (1 s). */
	for (int i = 0; i < 100 && atk_open_fds() > base + 8; i++)
		nap_ms(100);
	assert_true(atk_open_fds() <= base + 8);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	atk_target_close(&t);
}

/* A child that connects and sends a request for a QP that does not exist,
 * as fast as it can, for ms; reports how many it made. */
static pid_t reject_flood(const struct atk_target *t, int ms, int ready_fd)
{
	pid_t pid = atk_fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct atk_target bad = *t;
		struct timespec a, b;
		int made = 0;

		bad.ep.qpn ^= 0x5a5a5; /* no such QP: a reject each time */
		clock_gettime(CLOCK_MONOTONIC, &a);
		do {
			int fd = atk_connect(&bad);
			if (fd >= 0) {
				made += atk_request(fd, &bad, 0, NULL, 0, NULL, 0, NULL) == 0;
				close(fd);
			}
			clock_gettime(CLOCK_MONOTONIC, &b);
		} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
		(void)!write(ready_fd, &made, sizeof(made));
		_exit(0);
	}
	return pid;
}

static void test_attack_flood__rejected_requests_are_counted_and_quiet(void **state)
{
	struct atk_target t;
	int ready[2], made = 0, base, peak = 0;
	unsigned before;
	pid_t pid;

	(void)state;
	atk_target_open(&t, NULL, RV_QPT_RC, 65536);
	base = atk_open_fds();
	before = warns();
	assert_int_equal(pipe(ready), 0);
	pid = reject_flood(&t, 3000, ready[1]);
	for (int i = 0; i < 30; i++) {
		int n = atk_open_fds();
		peak = n > peak ? n : peak;
		nap_ms(100);
	}
	assert_int_equal(read(ready[0], &made, sizeof(made)), (ssize_t)sizeof(made));
	waitpid(pid, NULL, 0);
	assert_true(made > BOUND); /* more rejects than the bound: it had to count them */
	assert_true(peak <= base + BOUND + 16);
	/* At most SOFT_SETUP_LOG_PER_S (10) warnings a second, plus the window edges. */
	assert_true(warns() - before <= 10 * 5);
	real_peer_gets_through(&t);
	close(ready[0]);
	close(ready[1]);
	atk_target_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attack_flood__idle_connections_do_not_block_a_real_peer),
		cmocka_unit_test(test_attack_flood__rejected_requests_are_counted_and_quiet),
	};
	rv_device *dev;

	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "skip: soft0 is not built in\n");
		return 77;
	}
	rv_device_unref(dev);
	signal(SIGPIPE, SIG_IGN);
	rv_set_log_handler(on_log, NULL);
	return cmocka_run_group_tests_name("attack-flood", tests, NULL, NULL);
}
