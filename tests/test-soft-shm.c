/*
 * soft0's same-host path (lib/drivers/soft/samehost/shm.c) between two processes:
 * the path is agreed in both directions (the INFO log says so), large RDMA
 * WRITEs and a SEND from two SGEs land byte for byte, small ones still go
 * through TCP,
 * and the checks of the target are the same: a range past the MR completes
 * the WR that caused it with RV_WC_REM_ACCESS_ERR, and by reference nothing
 * is written. With RVERBS_SOFT_SHM=0 on one side the path is not agreed and the
 * same WRITEs still arrive (over TCP).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include <rverbs/rverbs.h>

#include "fork-peer.h"

#define BUF (2u << 20)
#define SEND_LEN 100000u
#define TIMEOUT_S 30

/* The INFO line of shm.c, as each side saw it (written by a progress thread). */
static char path_line[512];
static pthread_mutex_t path_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_log(rv_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (strstr(msg, "same-host path")) {
		pthread_mutex_lock(&path_lock);
		snprintf(path_line, sizeof(path_line), "%s", msg);
		pthread_mutex_unlock(&path_lock);
	}
}

static bool path_says(const char *a, const char *b)
{
	bool r;

	pthread_mutex_lock(&path_lock);
	r = (!a || strstr(path_line, a)) && (!b || strstr(path_line, b));
	pthread_mutex_unlock(&path_lock);
	return r;
}

static bool path_empty(void)
{
	bool r;

	pthread_mutex_lock(&path_lock);
	r = !path_line[0];
	pthread_mutex_unlock(&path_lock);
	return r;
}

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	rv_qp *qp;
	rv_endpoint peer;
};

static void setup(struct side *s, int fd)
{
	rv_device *dev = NULL;
	uint8_t mine[RV_ENDPOINT_PACKED_MAX], theirs[RV_ENDPOINT_PACKED_MAX];
	uint32_t ml, tl;
	rv_endpoint ep;
	size_t len;

	CHECK(rv_device_find("soft0", &dev) == 0);
	CHECK(rv_context_new(dev, NULL, &s->ctx) == 0);
	rv_device_unref(dev);
	CHECK(rv_pd_new(s->ctx, NULL, &s->pd) == 0);
	CHECK(rv_cq_new(s->ctx, NULL, &s->cq) == 0);
	CHECK(rv_mr_alloc(s->pd, BUF, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &s->mr) == 0);
	memset(rv_mr_addr(s->mr), 0, BUF);
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .send_cq = s->cq,
			     .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 1}};
	CHECK(rv_qp_new(s->pd, &a, &s->qp) == 0);
	CHECK(rv_qp_endpoint(s->qp, &ep) == 0);
	ep.mask |= RV_ENDPOINT_MR;
	ep.mr_addr = (uintptr_t)rv_mr_addr(s->mr);
	ep.mr_length = rv_mr_length(s->mr);
	ep.mr_rkey = rv_mr_rkey(s->mr);
	CHECK(rv_endpoint_pack(&ep, mine, sizeof(mine), &len) == 0);
	ml = (uint32_t)len;
	CHECK(full_io(fd, &ml, 4, true) == 0 && full_io(fd, mine, ml, true) == 0);
	CHECK(full_io(fd, &tl, 4, false) == 0 && tl <= sizeof(theirs) && full_io(fd, theirs, tl, false) == 0);
	CHECK(rv_endpoint_unpack(theirs, tl, &s->peer) == 0);
	CHECK(rv_qp_connect(s->qp, &s->peer) == 0);
	rv_sge r = {(uintptr_t)rv_mr_addr(s->mr) + BUF / 2 + 4096, 2 * SEND_LEN, rv_mr_lkey(s->mr)};
	CHECK(rv_qp_recv(s->qp, &r, 5) == 0);
}

static void teardown(struct side *s)
{
	rv_context_close(s->ctx);
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
}

static uint8_t pat(uint64_t i, uint32_t seed)
{
	return (uint8_t)(i * 131 + (i >> 9) + seed);
}

static rv_wc wait_one(struct side *s)
{
	rv_wc wc;
	time_t end = time(NULL) + TIMEOUT_S;
	int n;

	while ((n = rv_cq_poll(s->cq, &wc, 1)) == 0) {
		CHECK(time(NULL) <= end);
		usleep(50);
	}
	CHECK(n == 1);
	return wc;
}

/* WRITE len bytes (from two SGEs: the first half of the MR's second MiB, then
 * the rest) to the peer at offset off with rkey; returns the status. */
#define write_two_sges(s, off, len, rkey, seed) post_two_sges(s, RV_WR_RDMA_WRITE, off, len, rkey, seed)

static uint32_t post_two_sges(struct side *s, uint32_t opcode, uint64_t off, uint32_t len, uint32_t rkey,
			      uint32_t seed)
{
	uint8_t *src = (uint8_t *)rv_mr_addr(s->mr) + BUF / 2;
	uint32_t a = len / 3;
	rv_sge sge[2] = {{(uintptr_t)src, a, rv_mr_lkey(s->mr)},
			 {(uintptr_t)src + a + 100, len - a, rv_mr_lkey(s->mr)}};
	rv_send_wr wr = {.wr_id = seed, .sg_list = sge, .num_sge = 2, .opcode = opcode,
			 .send_flags = RV_SEND_SIGNALED, .remote_addr = s->peer.mr_addr + off, .rkey = rkey};
	size_t np;

	for (uint32_t i = 0; i < a; i++)
		src[i] = pat(i, seed);
	for (uint32_t i = a; i < len; i++)
		src[i + 100] = pat(i, seed);
	CHECK(rv_qp_post_send(s->qp, &wr, 1, &np) == 0);
	rv_wc wc = wait_one(s);
	CHECK(wc.wr_id == seed);
	return wc.status;
}

/* Sizes: below the path's threshold, at it, and a large one. */
static const uint32_t sizes[] = {4000, 8192, 1000000};

/* The parent writes every size into the child's MR, each at its own offset;
 * the child checks the bytes. Then the error cases (their QPs end in ERR). */
static void writer(struct side *s, int fd, bool expect_path)
{
	uint64_t off = 0;
	char ok = 0;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		CHECK(write_two_sges(s, off, sizes[k], s->peer.mr_rkey, (uint32_t)k + 1) == RV_WC_SUCCESS);
		off += sizes[k] + 64;
	}
	if (expect_path)
		CHECK(path_says("from us by reference", "to us by reference"));
	else
		CHECK(path_empty() || path_says("from us over TCP", NULL));
	/* A SEND after the WRITEs (by reference too when the path is on): when
	 * the child's receive completes, every WRITE before it was placed (RC
	 * order), and its threads know it. */
	CHECK(post_two_sges(s, RV_WR_SEND, 0, SEND_LEN, 0, 7) == RV_WC_SUCCESS);
	CHECK(full_io(fd, &ok, 1, false) == 0); /* checked */
	CHECK(ok == 1);
	/* A range past the end of the MR: the target refuses before a byte moves. */
	CHECK(write_two_sges(s, BUF - 10000, 20000, s->peer.mr_rkey, 9) == RV_WC_REM_ACCESS_ERR);
	CHECK(full_io(fd, &ok, 1, true) == 0);
}

static void reader(struct side *s, int fd, bool by_ref)
{
	const uint8_t *buf = rv_mr_addr(s->mr);
	uint64_t off = 0;
	char ok = 1;
	rv_wc wc = wait_one(s); /* the SEND that follows the WRITEs */
	const uint8_t *got = buf + BUF / 2 + 4096;

	CHECK(wc.status == RV_WC_SUCCESS && wc.opcode == RV_WC_RECV && wc.wr_id == 5);
	CHECK(wc.byte_len == SEND_LEN);
	for (uint32_t i = 0; i < SEND_LEN; i++)
		if (got[i] != pat(i, 7)) {
			fprintf(stderr, "SEND: byte %u differs\n", i);
			ok = 0;
			break;
		}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (uint32_t i = 0; i < sizes[k]; i++)
			if (buf[off + i] != pat(i, (uint32_t)k + 1)) {
				fprintf(stderr, "size %u: byte %u differs\n", sizes[k], i);
				ok = 0;
				break;
			}
		for (uint32_t i = 0; i < 64; i++)
			if (buf[off + sizes[k] + i] != 0)
				ok = 0; /* nothing past the message */
		off += sizes[k] + 64;
	}
	CHECK(full_io(fd, &ok, 1, true) == 0);
	CHECK(full_io(fd, &ok, 1, false) == 0); /* the bounds error happened */
	/* By reference the whole range is checked first; over TCP the FPDUs that
	 * fit were placed before the one that did not (iWARP places as it goes). */
	for (uint32_t i = 0; by_ref && i < 10000; i++)
		CHECK(buf[BUF - 10000 + i] == 0);
}

static void run(bool child_allows)
{
	int sv[2], status;
	pid_t pid;

	path_line[0] = 0;
	rv_set_log_level(RV_LOG_INFO);
	rv_set_log_handler(on_log, NULL);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct side s;
		in_child = true;
		close(sv[0]);
		if (!child_allows)
			setenv("RVERBS_SOFT_SHM", "0", 1);
		memset(&s, 0, sizeof(s));
		setup(&s, sv[1]);
		reader(&s, sv[1], child_allows);
		teardown(&s);
		_exit(0);
	}
	close(sv[1]);
	struct side s;
	memset(&s, 0, sizeof(s));
	setup(&s, sv[0]);
	writer(&s, sv[0], child_allows);
	teardown(&s);
	close(sv[0]);
	rv_set_log_handler(NULL, NULL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_soft_shm__writes_by_reference_between_two_processes(void **state)
{
	(void)state;
	if (getenv("RVERBS_SOFT_SHM") && strcmp(getenv("RVERBS_SOFT_SHM"), "0") == 0)
		skip();
	run(true);
}

static void test_soft_shm__one_side_refuses_and_tcp_carries_it(void **state)
{
	(void)state;
	run(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_shm__writes_by_reference_between_two_processes),
		cmocka_unit_test(test_soft_shm__one_side_refuses_and_tcp_carries_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
