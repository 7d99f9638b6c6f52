/*
 * Completion channels and completion modes on soft0, through the public API:
 * an event after a SEND with the channel's descriptor readable in epoll,
 * solicited-only arming, timeouts, the close cascade (channel -> CQs -> QPs)
 * with unacknowledged events, rv_cq_wait in its three modes, a confirmation
 * READ's response left for an answer that never comes, and the errors
 * (event mode without a channel, closed and NULL handles).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "channel-pair.h"

static rv_sge sge_of(rv_mr *mr)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)rv_mr_addr(mr), .length = 64, .lkey = rv_mr_lkey(mr)};
	return g;
}

static void post_recv(struct pair *p, uint64_t wr_id)
{
	rv_sge g = sge_of(p->mr_b);
	assert_int_equal(rv_qp_recv(p->qp_b, &g, wr_id), 0);
}

static void send_one(struct pair *p, uint64_t wr_id, uint32_t flags)
{
	rv_wc wc;
	int rc;

	pair_post_send(p, wr_id, flags);
	/* The sender's completion (its CQ is polled, it has no channel). */
	for (int i = 0; i < 100000; i++) {
		rc = rv_cq_poll(p->cq_a, &wc, 1);
		if (rc != 0)
			break;
		usleep(100);
	}
	assert_int_equal(rc, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
}

static void event_after_send_readable_in_epoll(void **state)
{
	struct pair p;
	struct epoll_event ev = {.events = EPOLLIN}, out;
	rv_cq *cq = NULL;
	rv_wc wc;
	int ep, fd;

	(void)state;
	pair_open(&p);
	fd = rv_comp_channel_fd(p.ch);
	assert_true(fd >= 0);
	ep = epoll_create1(0);
	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	assert_int_equal(epoll_wait(ep, &out, 1, 0), 0);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 0, &cq), -EAGAIN);

	post_recv(&p, 11);
	assert_int_equal(rv_cq_req_notify(p.cq_b, 0), 0);
	send_one(&p, 1, 0);
	assert_int_equal(epoll_wait(ep, &out, 1, 10000), 1);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 1000, &cq), 0);
	assert_ptr_equal(cq, p.cq_b);
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(rv_cq_ack_events(p.cq_b, 2), -EINVAL);
	assert_int_equal(rv_cq_ack_events(p.cq_b, 1), 0);
	/* Disarmed by the event: the next completion fires nothing. */
	post_recv(&p, 12);
	send_one(&p, 2, 0);
	assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 10000), 1);
	assert_int_equal(epoll_wait(ep, &out, 1, 0), 0);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 0, &cq), -EAGAIN);
	close(ep);
	pair_close(&p);
}

static void solicited_only(void **state)
{
	struct pair p;
	rv_cq *cq = NULL;
	rv_wc wc;

	(void)state;
	pair_open(&p);
	post_recv(&p, 21);
	post_recv(&p, 22);
	assert_int_equal(rv_cq_req_notify(p.cq_b, 1), 0);
	send_one(&p, 1, 0);
	assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 10000), 1); /* polls: POLL mode */
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 100, &cq), -ETIMEDOUT);
	send_one(&p, 2, RV_SEND_SOLICITED);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 10000, &cq), 0);
	assert_ptr_equal(cq, p.cq_b);
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 22);
	assert_int_equal(rv_cq_ack_events(cq, 1), 0);
	pair_close(&p);
}

static void timeouts(void **state)
{
	struct pair p;
	rv_cq *cq = NULL;
	rv_wc wc;
	int64_t t0;

	(void)state;
	pair_open(&p);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 0, &cq), -EAGAIN);
	t0 = now_ms();
	assert_int_equal(rv_comp_channel_get_event(p.ch, 80, &cq), -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 70);
	assert_null(cq);
	for (int mode = RV_CQ_WAIT_POLL; mode <= RV_CQ_WAIT_SPIN_THEN_BLOCK; mode++) {
		assert_int_equal(rv_cq_set_wait_mode(p.cq_b, mode, 1000000), 0);
		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 0), -EAGAIN);
		t0 = now_ms();
		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 50), -ETIMEDOUT);
		assert_true(now_ms() - t0 >= 40);
	}
	pair_close(&p);
}

static void wait_modes_receive(void **state)
{
	struct pair p;
	rv_wc wc[4];

	(void)state;
	pair_open(&p);
	for (int mode = RV_CQ_WAIT_POLL; mode <= RV_CQ_WAIT_SPIN_THEN_BLOCK; mode++) {
		assert_int_equal(rv_cq_set_wait_mode(p.cq_b, mode, mode == RV_CQ_WAIT_SPIN_THEN_BLOCK ? 1000 : 0), 0);
		for (int i = 0; i < 3; i++) {
			post_recv(&p, (uint64_t)(100 * mode + i));
			send_one(&p, (uint64_t)i, 0);
			assert_int_equal(rv_cq_wait(p.cq_b, wc, 4, 10000), 1);
			assert_int_equal(wc[0].wr_id, (uint64_t)(100 * mode + i));
			assert_int_equal(wc[0].status, RV_WC_SUCCESS);
		}
	}
	pair_close(&p);
}

/* A blocked rv_cq_wait (event mode) is woken by a completion from elsewhere. */
static void *sender(void *arg)
{
	struct pair *p = arg;
	usleep(100000);
	send_one(p, 9, 0);
	return NULL;
}

static void event_wait_blocks_then_wakes(void **state)
{
	struct pair p;
	pthread_t t;
	rv_wc wc;

	(void)state;
	pair_open(&p);
	assert_int_equal(rv_cq_set_wait_mode(p.cq_b, RV_CQ_WAIT_EVENT, 0), 0);
	post_recv(&p, 31);
	assert_int_equal(pthread_create(&t, NULL, sender, &p), 0);
	assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 10000), 1);
	assert_int_equal(wc.wr_id, 31);
	pthread_join(t, NULL);
	pair_close(&p);
}

/* soft0's blocking waiter reads its QPs' sockets itself (soft_cq_block): a
 * SEND that finds no receive stalls the stream; a receive posted by another
 * thread while the waiter sleeps must still complete it (no lost wake-up). */
struct waiter {
	struct pair *p;
	int n;
	rv_wc wc;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	w->n = rv_cq_wait(w->p->cq_b, &w->wc, 1, 10000);
	return NULL;
}

static void blocking_wait_with_a_stalled_receive(void **state)
{
	struct pair p;
	struct waiter w = {.p = &p};
	pthread_t t;
	rv_wc wc;
	int rc = 0;

	(void)state;
	pair_open(&p);
	assert_int_equal(rv_cq_set_wait_mode(p.cq_b, RV_CQ_WAIT_EVENT, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	usleep(20000);
	pair_post_send(&p, 5, 0);
	usleep(100000); /* the SEND waits for a receive WR */
	post_recv(&p, 51);
	pthread_join(t, NULL);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.wc.status, RV_WC_SUCCESS);
	assert_int_equal(w.wc.wr_id, 51);
	for (int i = 0; i < 100000 && rc == 0; i++) {
		rc = rv_cq_poll(p.cq_a, &wc, 1);
		if (rc == 0)
			usleep(100);
	}
	assert_int_equal(rc, 1);
	assert_int_equal(wc.wr_id, 5);
	pair_close(&p);
}

/* Many blocking waits in a row, receives posted one at a time (so SENDs
 * sometimes wait for them), then the application reads the channel itself:
 * the streams the waiter read must be the progress thread's again. */
static void *send_many(void *arg)
{
	struct pair *p = arg;
	for (int i = 0; i < 200; i++)
		send_one(p, (uint64_t)i, 0);
	return NULL;
}

static void waits_then_channel(int mode)
{
	struct pair p;
	pthread_t t;
	rv_cq *cq = NULL;
	rv_wc wc;

	pair_open(&p);
	/* Spin-then-block with a 1 µs spin: most waits block. */
	assert_int_equal(rv_cq_set_wait_mode(p.cq_b, mode, 1000), 0);
	post_recv(&p, 0);
	assert_int_equal(pthread_create(&t, NULL, send_many, &p), 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 10000), 1);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
		if (i + 1 < 200)
			post_recv(&p, (uint64_t)i + 1);
	}
	pthread_join(t, NULL);
	/* Nothing left over, then the channel directly: an armed CQ's event. */
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 0);
	post_recv(&p, 300);
	assert_int_equal(rv_cq_req_notify(p.cq_b, 0), 0);
	send_one(&p, 300, 0);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 10000, &cq), 0);
	assert_ptr_equal(cq, p.cq_b);
	assert_int_equal(rv_cq_ack_events(cq, 1), 0);
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 300);
	/* Without arming and nobody waiting: the completion still arrives. */
	post_recv(&p, 301);
	send_one(&p, 301, 0);
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 301);
	pair_close(&p);
}

static void blocking_waits_then_channel(void **state)
{
	(void)state;
	waits_then_channel(RV_CQ_WAIT_EVENT);
}

static void spin_then_block_waits_then_channel(void **state)
{
	(void)state;
	waits_then_channel(RV_CQ_WAIT_SPIN_THEN_BLOCK);
}

/* A signalled SEND carries a confirmation READ (soft0); the receiver's
 * READ response must not wait for the application's answer (an earlier
 * soft0 held it back, see its README): when the application never answers,
 * the sender's completion must still come, after a poller that stops and
 * while the receiver blocks in rv_cq_wait again. */
static void send_completes_without_an_answer(void **state)
{
	struct pair p;
	struct waiter w = {.p = &p};
	pthread_t t;
	rv_wc wc;
	int rc = 0;

	(void)state;
	/* Over TCP: the same-host rings confirm without READs. */
	assert_int_equal(setenv("RVERBS_SOFT_SHM", "0", 1), 0);
	pair_open(&p);
	assert_int_equal(unsetenv("RVERBS_SOFT_SHM"), 0);
	/* Busy poller: a few empty polls make it read the stream itself. */
	post_recv(&p, 70);
	for (int i = 0; i < 10; i++)
		assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 0);
	pair_post_send(&p, 7, 0);
	/* Busy, yielding: a hang guard of about 10 s, not a count of polls
	 * (100 000 tight polls ran out once on a loaded machine). */
	for (long i = 0; i < 10000000 && rc == 0; i++) {
		rc = rv_cq_poll(p.cq_b, &wc, 1);
		if (rc == 0)
			sched_yield();
	}
	assert_int_equal(rc, 1);
	assert_int_equal(wc.wr_id, 70);
	/* b neither answers nor polls again. */
	pair_send_completion(&p, 7);

	/* Blocked waiter: receives one SEND, then waits again without answering. */
	assert_int_equal(rv_cq_set_wait_mode(p.cq_b, RV_CQ_WAIT_EVENT, 0), 0);
	post_recv(&p, 80);
	post_recv(&p, 81);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	usleep(20000);
	pair_post_send(&p, 8, 0);
	pthread_join(t, NULL);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.wc.wr_id, 80);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	pair_send_completion(&p, 8); /* while b sleeps in its second wait */
	pair_post_send(&p, 9, 0); /* releases it */
	pthread_join(t, NULL);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.wc.wr_id, 81);
	pair_send_completion(&p, 9);
	pair_close(&p);
}

static void close_cascades_and_unacked_events_do_not_hang(void **state)
{
	struct pair p;
	rv_cq *cq = NULL;
	rv_wc wc;

	(void)state;
	pair_open(&p);
	post_recv(&p, 41);
	assert_int_equal(rv_cq_req_notify(p.cq_b, 0), 0);
	send_one(&p, 1, 0);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 10000, &cq), 0);
	assert_ptr_equal(cq, p.cq_b);
	/* Not acknowledged. And one more armed and fired but never read. */
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), 1);
	post_recv(&p, 42);
	assert_int_equal(rv_cq_req_notify(p.cq_b, 0), 0);
	send_one(&p, 2, 0);
	assert_int_equal(rv_comp_channel_close(p.ch), 0);
	assert_int_equal(rv_cq_poll(p.cq_b, &wc, 1), -RV_ECLOSED);
	assert_int_equal(rv_qp_state_of(p.qp_b), -RV_ECLOSED);
	/* The other QP and its CQ stay open (the QP may see the peer go: ERR). */
	assert_true(rv_qp_state_of(p.qp_a) >= 0);
	assert_true(rv_cq_poll(p.cq_a, &wc, 1) >= 0);
	/* Closed-handle errors. */
	assert_int_equal(rv_comp_channel_fd(p.ch), -RV_ECLOSED);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 0, &cq), -RV_ECLOSED);
	assert_int_equal(rv_cq_req_notify(p.cq_b, 0), -RV_ECLOSED);
	assert_int_equal(rv_cq_ack_events(p.cq_b, 1), -RV_ECLOSED);
	assert_int_equal(rv_cq_set_wait_mode(p.cq_b, RV_CQ_WAIT_POLL, 0), -RV_ECLOSED);
	assert_int_equal(rv_cq_wait(p.cq_b, &wc, 1, 0), -RV_ECLOSED);
	assert_int_equal(rv_comp_channel_close(p.ch), 0);
	pair_close(&p);
}

/*
 * A sender that waits with rv_cq_wait while its socket is full: soft0's
 * blocked waiter then watches the socket for room and sends the frames that
 * waited itself (the progress thread stays out), and switching to busy
 * polling between rounds hands that back. 48 WRITEs of 1 MiB in flight (far
 * more than the socket holds), every one signalled; each round's last WRITE
 * lands whole. Environment RVERBS_SOFT_SHM=0: over TCP, not the same-host
 * path.
 */
static void blocked_sender_waits_for_room(void **state)
{
	enum { LEN = 1 << 20, N = 48 };
	static const int modes[] = {RV_CQ_WAIT_EVENT, RV_CQ_WAIT_POLL, RV_CQ_WAIT_SPIN_THEN_BLOCK, RV_CQ_WAIT_EVENT};
	rv_device *dev = NULL;
	rv_context *ctx = NULL;
	rv_pd *pd = NULL;
	rv_comp_channel *ch = NULL;
	rv_cq *cq_a = NULL, *cq_b = NULL;
	rv_qp *a = NULL, *b = NULL;
	rv_mr *src = NULL, *dst = NULL;
	rv_qp_init_attr qa;
	rv_cq_attr ca;
	rv_endpoint ea, eb;
	uint8_t *s;

	(void)state;
	setenv("RVERBS_SOFT_SHM", "0", 1);
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	unsetenv("RVERBS_SOFT_SHM");
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_comp_channel_new(ctx, NULL, &ch), 0);
	memset(&ca, 0, sizeof(ca));
	ca.mask = RV_CQ_ATTR_CHANNEL | RV_CQ_ATTR_CQE;
	ca.channel = ch;
	ca.cqe = 2 * N;
	assert_int_equal(rv_cq_new(ctx, &ca, &cq_a), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq_b), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.cap.max_send_wr = N;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.send_cq = cq_a;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	qa.send_cq = cq_b;
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(rv_mr_alloc(pd, LEN, RV_ACCESS_LOCAL_WRITE, NULL, &src), 0);
	assert_int_equal(rv_mr_alloc(pd, LEN, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &dst), 0);
	assert_int_equal(rv_qp_endpoint(a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_int_equal(rv_qp_connect(a, &eb), 0);
	assert_int_equal(rv_qp_connect(b, &ea), 0);
	s = rv_mr_addr(src);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		rv_sge g = {.addr = (uint64_t)(uintptr_t)s, .length = LEN, .lkey = rv_mr_lkey(src)};
		int done = 0;

		assert_int_equal(rv_cq_set_wait_mode(cq_a, modes[m], 1000), 0);
		for (size_t i = 0; i < LEN; i++)
			s[i] = (uint8_t)(i * 3 + (i >> 12) + m * 41);
		for (int k = 0; k < N; k++) {
			rv_send_wr wr;
			size_t np = 0;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = (uint64_t)k;
			wr.sg_list = &g;
			wr.num_sge = 1;
			wr.opcode = RV_WR_RDMA_WRITE;
			wr.send_flags = RV_SEND_SIGNALED;
			wr.remote_addr = (uint64_t)(uintptr_t)rv_mr_addr(dst);
			wr.rkey = rv_mr_rkey(dst);
			assert_int_equal(rv_qp_post_send(a, &wr, 1, &np), 0);
		}
		while (done < N) {
			rv_wc wc[16];
			int n = rv_cq_wait(cq_a, wc, 16, 20000); /* hang guard */

			assert_true(n > 0);
			for (int i = 0; i < n; i++) {
				assert_int_equal(wc[i].status, RV_WC_SUCCESS);
				assert_int_equal(wc[i].wr_id, (uint64_t)(done + i));
			}
			done += n;
		}
		assert_memory_equal(rv_mr_addr(dst), s, LEN);
	}
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_mr_unref(src);
	rv_mr_unref(dst);
	rv_cq_unref(cq_a);
	rv_cq_unref(cq_b);
	rv_comp_channel_unref(ch);
	rv_pd_unref(pd);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
}

static void errors(void **state)
{
	struct pair p;
	rv_comp_channel *ch = NULL;
	rv_comp_channel_attr ha = {.mask = 1};
	rv_cq_attr ca;
	rv_cq *cq = NULL;
	rv_wc wc;

	(void)state;
	pair_open(&p);
	/* Event modes and arming need a channel. */
	assert_int_equal(rv_cq_set_wait_mode(p.cq_a, RV_CQ_WAIT_EVENT, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "channel"));
	assert_int_equal(rv_cq_set_wait_mode(p.cq_a, RV_CQ_WAIT_SPIN_THEN_BLOCK, 0), -EINVAL);
	assert_int_equal(rv_cq_set_wait_mode(p.cq_a, 7, 0), -EINVAL);
	assert_int_equal(rv_cq_set_wait_mode(p.cq_a, RV_CQ_WAIT_POLL, 0), 0);
	assert_int_equal(rv_cq_req_notify(p.cq_a, 0), -EINVAL);
	assert_int_equal(rv_cq_ack_events(p.cq_a, 1), -EINVAL);
	assert_int_equal(rv_cq_ack_events(p.cq_a, 0), 0);
	/* NULL and wrong handles, bad attrs. */
	assert_int_equal(rv_comp_channel_new(NULL, NULL, &ch), -EINVAL);
	assert_int_equal(rv_comp_channel_new(p.ctx, NULL, NULL), -EINVAL);
	assert_int_equal(rv_comp_channel_new(p.ctx, &ha, &ch), -EINVAL);
	assert_int_equal(rv_comp_channel_fd(NULL), -EINVAL);
	assert_int_equal(rv_comp_channel_fd((rv_comp_channel *)(void *)p.cq_a), -EINVAL);
	assert_int_equal(rv_comp_channel_get_event(NULL, 0, &cq), -EINVAL);
	assert_int_equal(rv_comp_channel_get_event(p.ch, 0, NULL), -EINVAL);
	assert_int_equal(rv_comp_channel_close(NULL), -EINVAL);
	assert_null(rv_comp_channel_unref(NULL));
	assert_null(rv_comp_channel_ref(NULL));
	assert_int_equal(rv_cq_req_notify(NULL, 0), -EINVAL);
	assert_int_equal(rv_cq_wait(NULL, &wc, 1, 0), -EINVAL);
	assert_int_equal(rv_cq_wait(p.cq_a, NULL, 1, 0), -EINVAL);
	assert_int_equal(rv_cq_wait(p.cq_a, &wc, 0, 0), -EINVAL);
	/* A CQ on a closed or foreign channel. */
	memset(&ca, 0, sizeof(ca));
	ca.mask = RV_CQ_ATTR_CHANNEL;
	ca.channel = NULL;
	assert_int_equal(rv_cq_new(p.ctx, &ca, &cq), -EINVAL);
	assert_int_equal(rv_comp_channel_new(p.ctx, NULL, &ch), 0);
	assert_ptr_equal(rv_comp_channel_ref(ch), ch);
	rv_comp_channel_unref(ch);
	assert_int_equal(rv_comp_channel_close(ch), 0);
	ca.channel = ch;
	assert_int_equal(rv_cq_new(p.ctx, &ca, &cq), -RV_ECLOSED);
	rv_comp_channel_unref(ch);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(event_after_send_readable_in_epoll),
		cmocka_unit_test(solicited_only),
		cmocka_unit_test(timeouts),
		cmocka_unit_test(wait_modes_receive),
		cmocka_unit_test(event_wait_blocks_then_wakes),
		cmocka_unit_test(blocking_wait_with_a_stalled_receive),
		cmocka_unit_test(blocking_waits_then_channel),
		cmocka_unit_test(spin_then_block_waits_then_channel),
		cmocka_unit_test(send_completes_without_an_answer),
		cmocka_unit_test(close_cascades_and_unacked_events_do_not_hang),
		cmocka_unit_test(blocked_sender_waits_for_room),
		cmocka_unit_test(errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
