/*
 * soft0 at scale: many connected RC QPs between two processes, traffic on
 * every one of them, every byte checked.
 *
 * The parent and a forked child each create N QPs on one CQ, exchange the
 * endpoints over a socketpair and connect QP i to the peer's QP i. On every
 * QP the parent RDMA WRITEs a 64-byte pattern naming the QP into slot i of
 * the child's MR, then SENDs the QP's index; the child checks that each QP
 * received exactly its own index and, after every SEND arrived, that every
 * slot holds its pattern (the WRITE was placed before the SEND that follows
 * it on the same QP). Then both sides run a second round the other way on
 * every QP. The open-files limit is raised (one socket per QP per process).
 * No timing: bench/soft-vs-tcp --qps N measures the rates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rverbs/rverbs.h>

#include "fork-peer.h"

#define NQP 200
#define SLOT 64
#define TIMEOUT_S 60

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr; /* NQP slots of SLOT bytes, then NQP receive buffers of 8 bytes */
	rv_qp *qp[NQP];
	rv_endpoint peer[NQP];
};

/* What the progress threads report goes to stderr (the log of a failure),
 * until the peer's closing is expected. The handler stays installed: it is
 * not changed while progress threads may call it. */
static _Atomic bool quiet;

static void log_to_stderr(rv_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (!atomic_load(&quiet))
		fprintf(stderr, "[%d] %s\n", (int)getpid(), msg);
}

static uint8_t *slot(struct side *s, uint32_t i)
{
	return (uint8_t *)rv_mr_addr(s->mr) + (size_t)i * SLOT;
}

static uint64_t *rbuf(struct side *s, uint32_t i)
{
	return (uint64_t *)((uint8_t *)rv_mr_addr(s->mr) + (size_t)NQP * SLOT + (size_t)i * 8);
}

static void pattern(uint8_t *p, uint32_t i, uint32_t round)
{
	for (uint32_t k = 0; k < SLOT; k++)
		p[k] = (uint8_t)(i * 31 + k + round * 7);
}

static void setup(struct side *s, int fd)
{
	rv_device *dev = NULL;
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = 4 * NQP};
	static uint8_t mine[NQP][RV_ENDPOINT_PACKED_MAX], theirs[NQP][RV_ENDPOINT_PACKED_MAX];
	static uint32_t mine_len[NQP], theirs_len[NQP];

	CHECK(rv_device_find("soft0", &dev) == 0);
	CHECK(rv_context_new(dev, NULL, &s->ctx) == 0);
	rv_device_unref(dev);
	CHECK(rv_pd_new(s->ctx, NULL, &s->pd) == 0);
	CHECK(rv_cq_new(s->ctx, &ca, &s->cq) == 0);
	CHECK(rv_mr_alloc(s->pd, (size_t)NQP * (SLOT + 8) + SLOT,
			  RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &s->mr) == 0);
	for (uint32_t i = 0; i < NQP; i++) {
		rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP, .send_cq = s->cq,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
		rv_endpoint ep;
		size_t len;
		CHECK(rv_qp_new(s->pd, &a, &s->qp[i]) == 0);
		CHECK(rv_qp_endpoint(s->qp[i], &ep) == 0);
		ep.mask |= RV_ENDPOINT_MR;
		ep.mr_addr = (uintptr_t)rv_mr_addr(s->mr);
		ep.mr_length = rv_mr_length(s->mr);
		ep.mr_rkey = rv_mr_rkey(s->mr);
		CHECK(rv_endpoint_pack(&ep, mine[i], sizeof(mine[i]), &len) == 0);
		mine_len[i] = (uint32_t)len;
	}
	/* All at once each way: a socketpair buffers the ~30 KiB. */
	CHECK(full_io(fd, mine_len, sizeof(mine_len), true) == 0);
	CHECK(full_io(fd, mine, sizeof(mine), true) == 0);
	CHECK(full_io(fd, theirs_len, sizeof(theirs_len), false) == 0);
	CHECK(full_io(fd, theirs, sizeof(theirs), false) == 0);
	for (uint32_t i = 0; i < NQP; i++) {
		CHECK(theirs_len[i] <= RV_ENDPOINT_PACKED_MAX);
		CHECK(rv_endpoint_unpack(theirs[i], theirs_len[i], &s->peer[i]) == 0);
		CHECK(rv_qp_connect(s->qp[i], &s->peer[i]) == 0);
		rv_sge sge = {(uintptr_t)rbuf(s, i), 8, rv_mr_lkey(s->mr)};
		CHECK(rv_qp_recv(s->qp[i], &sge, i) == 0);
	}
}

static void teardown(struct side *s)
{
	atomic_store(&quiet, true); /* the peer closing its side is expected now */
	rv_context_close(s->ctx);
	for (uint32_t i = 0; i < NQP; i++)
		rv_qp_unref(s->qp[i]);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
}

/* WRITE the pattern into the peer's slot i, then SEND i, on every QP. */
static void send_round(struct side *s, uint32_t round)
{
	uint8_t *src = (uint8_t *)rv_mr_addr(s->mr) + (size_t)NQP * (SLOT + 8);
	uint32_t done = 0;
	time_t end = time(NULL) + TIMEOUT_S;

	for (uint32_t i = 0; i < NQP; i++) {
		uint64_t idx = i;
		pattern(src, i, round);
		/* Inline: posting copies the pattern, so src is free for the next QP. */
		rv_sge w = {(uintptr_t)src, SLOT, rv_mr_lkey(s->mr)};
		rv_send_wr wr[2] = {
			{.wr_id = i, .sg_list = &w, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE,
			 .send_flags = RV_SEND_INLINE, .remote_addr = s->peer[i].mr_addr + (uint64_t)i * SLOT,
			 .rkey = s->peer[i].mr_rkey},
			{.wr_id = i, .num_sge = 1, .opcode = RV_WR_SEND, .send_flags = RV_SEND_INLINE},
		};
		rv_sge g = {(uintptr_t)&idx, 8, 0};
		size_t np;
		wr[1].sg_list = &g;
		CHECK(rv_qp_post_send(s->qp[i], wr, 2, &np) == 0 && np == 2);
	}
	/* sq_sig_all (the default): two completions per QP, the WRITE's and the SEND's. */
	while (done < 2 * NQP) {
		rv_wc wc[64];
		int n = rv_cq_poll(s->cq, wc, 64);
		CHECK(n >= 0);
		for (int k = 0; k < n; k++) {
			if (wc[k].status != RV_WC_SUCCESS)
				fprintf(stderr, "QP %u WR %llu: %s\n", wc[k].qp_num, (unsigned long long)wc[k].wr_id, rv_wc_status_str((int)wc[k].status));
			CHECK(wc[k].status == RV_WC_SUCCESS);
			CHECK(wc[k].opcode != RV_WC_RECV);
			done++;
		}
		if (!n) {
			CHECK(time(NULL) <= end);
			usleep(100);
		}
	}
}

/* Every QP receives its own index; then every slot holds its pattern. */
static void recv_round(struct side *s, uint32_t round)
{
	static bool seen[NQP];
	uint32_t got = 0;
	time_t end = time(NULL) + TIMEOUT_S;

	memset(seen, 0, sizeof(seen));
	while (got < NQP) {
		rv_wc wc[64];
		int n = rv_cq_poll(s->cq, wc, 64);
		CHECK(n >= 0);
		for (int k = 0; k < n; k++) {
			uint32_t i = (uint32_t)wc[k].wr_id;
			if (wc[k].status != RV_WC_SUCCESS || wc[k].opcode != RV_WC_RECV)
				fprintf(stderr, "round %u: QP %u WR %llu: opcode %u, %s\n", round, wc[k].qp_num,
					(unsigned long long)wc[k].wr_id, wc[k].opcode, rv_wc_status_str((int)wc[k].status));
			CHECK(wc[k].status == RV_WC_SUCCESS && wc[k].opcode == RV_WC_RECV);
			CHECK(i < NQP && !seen[i]);
			CHECK(wc[k].qp_num == rv_qp_num(s->qp[i]));
			CHECK(wc[k].byte_len == 8 && *rbuf(s, i) == i);
			seen[i] = true;
			got++;
			rv_sge sge = {(uintptr_t)rbuf(s, i), 8, rv_mr_lkey(s->mr)};
			CHECK(rv_qp_recv(s->qp[i], &sge, i) == 0);
		}
		if (!n) {
			CHECK(time(NULL) <= end);
			usleep(100);
		}
	}
	for (uint32_t i = 0; i < NQP; i++) {
		uint8_t want[SLOT];
		pattern(want, i, round);
		CHECK(memcmp(slot(s, i), want, SLOT) == 0);
	}
}

static void test_soft_scale__many_qps_between_two_processes(void **state)
{
	struct rlimit rl;
	int sv[2], status;
	pid_t pid;

	(void)state;
	rv_set_log_handler(log_to_stderr, NULL);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4 * NQP + 64) {
		rl.rlim_cur = rl.rlim_max < 4 * NQP + 64 ? rl.rlim_max : 4 * NQP + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * NQP + 64)
		skip(); /* cannot hold a socket per QP */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct side s;
		char sync = 0;
		in_child = true;
		close(sv[0]);
		memset(&s, 0, sizeof(s));
		setup(&s, sv[1]);
		recv_round(&s, 1);
		CHECK(full_io(sv[1], &sync, 1, true) == 0);  /* round 1 checked */
		CHECK(full_io(sv[1], &sync, 1, false) == 0); /* the parent saw its completions */
		send_round(&s, 2);
		atomic_store(&quiet, true); /* the parent closing first is expected now */
		CHECK(full_io(sv[1], &sync, 1, true) == 0);  /* our completions are in */
		CHECK(full_io(sv[1], &sync, 1, false) == 0); /* the parent checked round 2: close */
		teardown(&s);
		_exit(0);
	}
	close(sv[1]);
	static struct side s;
	char sync = 0;
	memset(&s, 0, sizeof(s));
	setup(&s, sv[0]);
	send_round(&s, 1);
	CHECK(full_io(sv[0], &sync, 1, false) == 0);
	CHECK(full_io(sv[0], &sync, 1, true) == 0); /* now the other way */
	recv_round(&s, 2);
	CHECK(full_io(sv[0], &sync, 1, false) == 0);
	atomic_store(&quiet, true); /* the child closing first is expected now */
	CHECK(full_io(sv[0], &sync, 1, true) == 0);
	teardown(&s);
	close(sv[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_scale__many_qps_between_two_processes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
