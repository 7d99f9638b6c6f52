/*
 * A thread blocked in rv_cq_wait on soft0's same-host rings reads the rings
 * itself (lib/drivers/soft/verbs/cq.c, soft_cq_block; samehost/shmring.c,
 * soft_shmring_wait_begin): it sleeps on the context's doorbell, so what the
 * peer puts in the ring must wake it, every time, with nothing lost or taken
 * twice. Two processes (the rings are between processes in real use), RC QPs
 * connected over the rings, both sides blocking in RV_CQ_WAIT_EVENT mode:
 *   - a ping-pong of numbered SENDs, one SEND in 7 signalled: every message
 *     arrives once, in order, with the right payload, and every signalled
 *     SEND completes once;
 *   - the peer answers only after a pause, so the waiter is really asleep
 *     (in poll(), "sleeping" set) when the frame comes: the doorbell wakes
 *     it within the wait's timeout, every time;
 *   - bursts of SENDs while the receiver blocks: all of them, in order;
 *   - the rings were used (the ring counters) and the doorbell was rung.
 * Skipped where the rings cannot come up (no pidfd_getfd: valgrind, old
 * kernels): the connections then stay on TCP, which test-comp-channel covers.
 */
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

#include "drivers/soft/soft.h"

#define MSG 64u
#define SLOTS 32u         /* receive WRs posted ahead, one slot each */
#define PINGS 3000u
#define PAUSES 20u
#define PAUSE_US 20000
#define BURSTS 40u
#define BURST 24u         /* < SLOTS and < the send queue */
#define WAIT_MS 10000     /* per rv_cq_wait: a hang guard only */

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_comp_channel *ch;
	rv_cq *cq;
	rv_mr *mr;
	rv_qp *qp;
	uint8_t *buf;          /* SLOTS receive slots, then the send slots */
	uint64_t recv_next;    /* the number the next received message must carry */
	uint64_t sent, signalled, send_done;
	uint64_t pending_recvs; /* received, not yet taken by expect() */
	uint64_t got[SLOTS * 4];
	uint32_t got_head, got_tail;
};

static uint8_t *send_slot(struct side *s, uint64_t n)
{
	return s->buf + (SLOTS + n % SLOTS) * MSG;
}

static void post_recv(struct side *s, uint32_t slot)
{
	rv_sge g = {(uintptr_t)(s->buf + slot * MSG), MSG, rv_mr_lkey(s->mr)};
	rv_recv_wr wr = {.wr_id = slot, .sg_list = &g, .num_sge = 1};
	size_t n;

	CHECK(rv_qp_post_recv(s->qp, &wr, 1, &n) == 0 && n == 1);
}

/* A message carries its number in its first 8 bytes and a pattern of it after. */
static void send_num(struct side *s, uint64_t num)
{
	uint8_t *p = send_slot(s, s->sent);
	bool sig = (s->sent + 1) % 7 == 0;
	rv_sge g = {(uintptr_t)p, MSG, rv_mr_lkey(s->mr)};
	rv_send_wr wr = {.wr_id = (1ull << 63) | s->sent, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = sig ? RV_SEND_SIGNALED : 0};
	size_t n;

	memcpy(p, &num, 8);
	for (uint32_t i = 8; i < MSG; i++)
		p[i] = (uint8_t)(num * 31 + i);
	CHECK(rv_qp_post_send(s->qp, &wr, 1, &n) == 0 && n == 1);
	s->sent++;
	s->signalled += sig;
}

/* One blocking wait; receives are checked in order and their slots reposted. */
static void wait_some(struct side *s)
{
	rv_wc wc[16];
	int n = rv_cq_wait(s->cq, wc, 16, WAIT_MS);

	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RV_WC_SUCCESS)
			fprintf(stderr, "WR %llx: %s\n", (unsigned long long)wc[i].wr_id, rv_wc_status_str(wc[i].status));
		CHECK(wc[i].status == RV_WC_SUCCESS);
		if (wc[i].wr_id >> 63) {
			CHECK(wc[i].opcode == RV_WC_SEND);
			s->send_done++;
			CHECK(s->send_done <= s->signalled);
			continue;
		}
		CHECK(wc[i].opcode == RV_WC_RECV && wc[i].byte_len == MSG && wc[i].wr_id < SLOTS);
		const uint8_t *p = s->buf + wc[i].wr_id * MSG;
		uint64_t num;

		memcpy(&num, p, 8);
		if (num != s->recv_next)
			fprintf(stderr, "message %llu arrived where %llu was due\n", (unsigned long long)num,
				(unsigned long long)s->recv_next);
		CHECK(num == s->recv_next); /* in order, none lost, none twice */
		for (uint32_t k = 8; k < MSG; k++)
			CHECK(p[k] == (uint8_t)(num * 31 + k));
		s->recv_next++;
		s->pending_recvs++;
		post_recv(s, (uint32_t)wc[i].wr_id);
	}
}

/* Block until `count` more messages were received. */
static void expect(struct side *s, uint64_t count)
{
	while (s->pending_recvs < count)
		wait_some(s);
	s->pending_recvs -= count;
}

static void sync_fd(int fd)
{
	char b = 1;

	CHECK(full_io(fd, &b, 1, true) == 0 && full_io(fd, &b, 1, false) == 0);
}

static void setup(struct side *s, int fd)
{
	rv_device *dev = NULL;
	uint8_t mine[RV_ENDPOINT_PACKED_MAX], theirs[RV_ENDPOINT_PACKED_MAX];
	uint32_t ml, tl;
	rv_endpoint ep, peer;
	size_t len;

	memset(s, 0, sizeof(*s));
	CHECK(rv_device_find("soft0", &dev) == 0);
	CHECK(rv_context_new(dev, NULL, &s->ctx) == 0);
	rv_device_unref(dev);
	CHECK(rv_pd_new(s->ctx, NULL, &s->pd) == 0);
	CHECK(rv_comp_channel_new(s->ctx, NULL, &s->ch) == 0);
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CHANNEL, .cqe = 256, .channel = s->ch};
	CHECK(rv_cq_new(s->ctx, &ca, &s->cq) == 0);
	CHECK(rv_cq_set_wait_mode(s->cq, RV_CQ_WAIT_EVENT, 0) == 0);
	CHECK(rv_mr_alloc(s->pd, 2 * SLOTS * MSG, RV_ACCESS_LOCAL_WRITE, NULL, &s->mr) == 0);
	s->buf = rv_mr_addr(s->mr);
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ | RV_QP_INIT_ATTR_CAP |
				     RV_QP_INIT_ATTR_SQ_SIG_ALL,
			     .send_cq = s->cq, .recv_cq = s->cq, .sq_sig_all = 0,
			     .cap = {.max_send_wr = 64, .max_recv_wr = SLOTS, .max_send_sge = 1, .max_recv_sge = 1}};
	CHECK(rv_qp_new(s->pd, &a, &s->qp) == 0);
	CHECK(rv_qp_endpoint(s->qp, &ep) == 0);
	CHECK(rv_endpoint_pack(&ep, mine, sizeof(mine), &len) == 0);
	ml = (uint32_t)len;
	CHECK(full_io(fd, &ml, 4, true) == 0 && full_io(fd, mine, ml, true) == 0);
	CHECK(full_io(fd, &tl, 4, false) == 0 && tl <= sizeof(theirs) && full_io(fd, theirs, tl, false) == 0);
	CHECK(rv_endpoint_unpack(theirs, tl, &peer) == 0);
	CHECK(rv_qp_connect(s->qp, &peer) == 0);
	for (uint32_t i = 0; i < SLOTS; i++)
		post_recv(s, i);
	sync_fd(fd); /* both sides' receives are posted before the first SEND */
}

/* Every signalled SEND completed once, and nothing else is left in the CQ. */
static void finish(struct side *s)
{
	rv_wc wc;

	while (s->send_done < s->signalled)
		wait_some(s);
	CHECK(rv_cq_poll(s->cq, &wc, 1) == 0);
	CHECK(s->pending_recvs == 0);
}

static void teardown(struct side *s)
{
	rv_context_close(s->ctx);
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_comp_channel_unref(s->ch);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
}


static uint64_t ring_state(struct side *s, uint64_t st[SOFT_RING_NSTATS])
{
	CHECK(soft_shmring_stats(s->qp, st) == 0);
	return st[SOFT_RING_STATE];
}

/* The client: warm-up until both directions are on the rings (or skip),
 * then the phases; the server mirrors it. Returns false: no rings here. */
static bool run(bool client, int fd)
{
	struct side s;
	uint64_t st[SOFT_RING_NSTATS];
	uint64_t num = 0;
	char on, peer_on;

	setup(&s, fd);
	/* Warm-up: messages until our side sends and receives through the rings. */
	for (uint32_t i = 0; i < 200; i++) {
		if (client) {
			send_num(&s, num++);
			expect(&s, 1);
		} else {
			expect(&s, 1);
			send_num(&s, num++);
		}
	}
	sync_fd(fd);
	on = ring_state(&s, st) == 3;
	CHECK(full_io(fd, &on, 1, true) == 0 && full_io(fd, &peer_on, 1, false) == 0);
	if (!on || !peer_on) {
		finish(&s);
		sync_fd(fd);
		teardown(&s);
		return false;
	}

	/* Ping-pong, both sides blocking. */
	for (uint32_t i = 0; i < PINGS; i++) {
		if (client) {
			send_num(&s, num++);
			expect(&s, 1);
		} else {
			expect(&s, 1);
			send_num(&s, num++);
		}
	}
	/* The answer comes after a pause: the waiter is asleep when it does. */
	for (uint32_t i = 0; i < PAUSES; i++) {
		if (client) {
			send_num(&s, num++);
			expect(&s, 1);
		} else {
			expect(&s, 1);
			usleep(PAUSE_US);
			send_num(&s, num++);
		}
	}
	/* Bursts: the server sends BURST messages at once, the client answers
	 * once it has them all. */
	for (uint32_t i = 0; i < BURSTS; i++) {
		if (client) {
			expect(&s, BURST);
			send_num(&s, num++);
		} else {
			for (uint32_t k = 0; k < BURST; k++)
				send_num(&s, num++);
			expect(&s, 1);
		}
	}
	finish(&s);
	sync_fd(fd);
	CHECK(ring_state(&s, st) == 3);
	CHECK(st[SOFT_RING_BAD] == 0);
	/* Everything after the warm-up went through the rings: at least one
	 * frame per message each way, and a blocked peer needed doorbells. */
	CHECK(st[SOFT_RING_RX_FRAMES] >= PINGS + PAUSES + (client ? BURSTS * BURST : BURSTS));
	CHECK(st[SOFT_RING_DOORBELLS] > 0);
	sync_fd(fd);
	teardown(&s);
	return true;
}

static void test_ringwait__blocked_waiter_gets_every_message_in_order(void **state)
{
	int sv[2], status;
	pid_t pid;
	bool rings;

	(void)state;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		in_child = true;
		close(sv[0]);
		run(false, sv[1]);
		_exit(0);
	}
	close(sv[1]);
	rings = run(true, sv[0]);
	close(sv[0]);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!rings)
		skip(); /* no rings between processes here: TCP's waiter is test-comp-channel's */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ringwait__blocked_waiter_gets_every_message_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
