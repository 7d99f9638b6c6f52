/*
 * Shared receive queues, asynchronous events and CQ overflow on soft0, end to
 * end through the public API: an SRQ shared by three RC QPs, its limit event
 * seen through epoll on the context's event descriptor, Last WQE Reached,
 * QP fatal after a remote access error, COMM_EST, and a tiny CQ that
 * overflows into a CQ error event. Each test closes everything.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>
#include "test-clock.h"
#include "soft-context.h"

#define NQP 3
#define SLOT 256u
#define BUF (64u * 1024u)

/* Up to 10 s for n completions (a hang guard, not a timing check). */
static int poll_n(rv_cq *cq, rv_wc *wc, int n)
{
	int64_t end = now_ms() + 10000;
	int got = 0;

	while (got < n && now_ms() < end) {
		int k = rv_cq_poll(cq, wc + got, n - got);
		if (k < 0)
			return k;
		got += k;
		if (k == 0) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
	}
	return got;
}

/* Take events until one of type about handle h arrives (others are acked). */
static bool wait_event(rv_context *ctx, uint32_t type, const void *h, rv_async_event *out)
{
	int64_t end = now_ms() + 10000;

	while (now_ms() < end) {
		rv_async_event ev;
		int rc = rv_context_get_async_event(ctx, &ev, 200);

		if (rc == -ETIMEDOUT)
			continue;
		assert_int_equal(rc, 0);
		if (ev.type == type && (!h || (const void *)ev.qp == h || (const void *)ev.cq == h ||
					    (const void *)ev.srq == h)) {
			*out = ev;
			return true;
		}
		rv_async_event_ack(&ev);
	}
	return false;
}

/* No event of type about h is queued now (others are taken and acked). */
static bool no_event(rv_context *ctx, uint32_t type, const void *h)
{
	rv_async_event ev;

	while (rv_context_get_async_event(ctx, &ev, 0) == 0) {
		bool match = ev.type == type && ((const void *)ev.qp == h || (const void *)ev.cq == h ||
						 (const void *)ev.srq == h);
		rv_async_event_ack(&ev);
		if (match)
			return false;
	}
	return true;
}

/* A receiver context with one SRQ shared by NQP QPs, and a sender context
 * with NQP QPs connected one to one. */
struct rig {
	rv_context *rctx, *sctx;
	rv_pd *rpd, *spd;
	rv_cq *rcq, *scq;
	rv_srq *srq;
	rv_qp *rqp[NQP], *sqp[NQP];
	rv_mr *rmr, *smr;
	uint8_t *rbuf, *sbuf;
};

static void rig_open(struct rig *r, uint32_t srq_wr, uint32_t rcq_size)
{
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE, .max_wr = srq_wr,
			  .max_sge = 2};
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = rcq_size};

	memset(r, 0, sizeof(*r));
	r->rctx = open_ctx();
	r->sctx = open_ctx();
	assert_int_equal(rv_pd_new(r->rctx, NULL, &r->rpd), 0);
	assert_int_equal(rv_pd_new(r->sctx, NULL, &r->spd), 0);
	assert_int_equal(rv_cq_new(r->rctx, rcq_size ? &ca : NULL, &r->rcq), 0);
	assert_int_equal(rv_cq_new(r->sctx, NULL, &r->scq), 0);
	assert_int_equal(rv_srq_new(r->rpd, &sa, &r->srq), 0);
	assert_int_equal(rv_mr_alloc(r->rpd, BUF, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &r->rmr), 0);
	assert_int_equal(rv_mr_alloc(r->spd, BUF, RV_ACCESS_LOCAL_WRITE, NULL, &r->smr), 0);
	r->rbuf = rv_mr_addr(r->rmr);
	r->sbuf = rv_mr_addr(r->smr);
	for (int i = 0; i < NQP; i++) {
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ,
				      .send_cq = r->rcq, .srq = r->srq};
		rv_qp_init_attr qs = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = r->scq};
		rv_endpoint er, es;

		assert_int_equal(rv_qp_new(r->rpd, &qa, &r->rqp[i]), 0);
		assert_int_equal(rv_qp_new(r->spd, &qs, &r->sqp[i]), 0);
		assert_int_equal(rv_qp_endpoint(r->rqp[i], &er), 0);
		assert_int_equal(rv_qp_endpoint(r->sqp[i], &es), 0);
		assert_int_equal(rv_qp_connect(r->rqp[i], &es), 0);
		assert_int_equal(rv_qp_connect(r->sqp[i], &er), 0);
	}
}

static void rig_close(struct rig *r)
{
	for (int i = 0; i < NQP; i++) {
		rv_qp_unref(r->rqp[i]);
		rv_qp_unref(r->sqp[i]);
	}
	rv_srq_unref(r->srq);
	rv_mr_unref(r->rmr);
	rv_mr_unref(r->smr);
	rv_cq_unref(r->rcq);
	rv_cq_unref(r->scq);
	rv_pd_unref(r->rpd);
	rv_pd_unref(r->spd);
	assert_int_equal(rv_context_close(r->rctx), 0);
	assert_int_equal(rv_context_close(r->sctx), 0);
	rv_context_unref(r->rctx);
	rv_context_unref(r->sctx);
}

/* Post n receive WRs to the SRQ: WR k lands in slot k (two SGEs of half a slot). */
static void srq_post(struct rig *r, uint32_t first, uint32_t n)
{
	for (uint32_t k = first; k < first + n; k++) {
		rv_sge g[2] = {{.addr = (uint64_t)(uintptr_t)(r->rbuf + k * SLOT), .length = SLOT / 2,
				.lkey = rv_mr_lkey(r->rmr)},
			       {.addr = (uint64_t)(uintptr_t)(r->rbuf + k * SLOT + SLOT / 2), .length = SLOT / 2,
				.lkey = rv_mr_lkey(r->rmr)}};
		rv_recv_wr wr = {.wr_id = k, .sg_list = g, .num_sge = 2, .reserved = 0};
		size_t posted = 0;

		assert_int_equal(rv_srq_post_recv(r->srq, &wr, 1, &posted), 0);
		assert_int_equal(posted, 1);
	}
}

/* Sender QP i sends message m (length len, a pattern naming i and m). */
static void send_msg(struct rig *r, int i, uint32_t m, uint32_t len)
{
	uint8_t *p = r->sbuf + (size_t)(i * 64 + m) * SLOT;
	rv_sge g = {.addr = (uint64_t)(uintptr_t)p, .length = len, .lkey = rv_mr_lkey(r->smr)};

	for (uint32_t b = 0; b < len; b++)
		p[b] = (uint8_t)(i * 71 + m * 13 + b);
	assert_int_equal(rv_qp_send(r->sqp[i], &g, ((uint64_t)i << 32) | m), 0);
}

static int qp_index(struct rig *r, uint32_t qpn)
{
	for (int i = 0; i < NQP; i++)
		if (rv_qp_num(r->rqp[i]) == qpn)
			return i;
	return -1;
}

static void test_srq__shared_by_three_rc_qps(void **state)
{
	const uint32_t per_qp = 5, len = 200;
	rv_wc wc[NQP * 5], sw[NQP * 5];
	uint32_t got[NQP] = {0};
	bool used[NQP * 5] = {false};
	rv_recv_wr wr = {.wr_id = 1, .sg_list = NULL, .num_sge = 0, .reserved = 0};
	struct rig r;

	(void)state;
	rig_open(&r, 64, 0);
	/* A QP with an SRQ refuses its own receives, with a message saying where to post. */
	assert_int_equal(rv_qp_post_recv(r.rqp[0], &wr, 1, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "rv_srq_post_recv"));

	srq_post(&r, 0, NQP * per_qp);
	for (uint32_t m = 0; m < per_qp; m++)
		for (int i = 0; i < NQP; i++)
			send_msg(&r, i, m, len);
	assert_int_equal(poll_n(r.scq, sw, NQP * per_qp), NQP * per_qp);
	for (int k = 0; k < NQP * (int)per_qp; k++)
		assert_int_equal(sw[k].status, RV_WC_SUCCESS);
	assert_int_equal(poll_n(r.rcq, wc, NQP * per_qp), NQP * per_qp);
	for (int k = 0; k < NQP * (int)per_qp; k++) {
		int i = qp_index(&r, wc[k].qp_num);
		uint32_t slot = (uint32_t)wc[k].wr_id;
		const uint8_t *p = r.rbuf + slot * SLOT;
		uint32_t m = UINT32_MAX;

		assert_int_equal(wc[k].status, RV_WC_SUCCESS);
		assert_int_equal(wc[k].opcode, RV_WC_RECV);
		assert_int_equal(wc[k].byte_len, len);
		assert_true(i >= 0);
		assert_true(slot < NQP * per_qp);
		assert_false(used[slot]); /* each WR consumed once */
		used[slot] = true;
		got[i]++;
		/* The payload is one of QP i's messages, whole, in the slot's two SGEs. */
		for (uint32_t c = 0; c < per_qp && m == UINT32_MAX; c++)
			if (p[0] == (uint8_t)(i * 71 + c * 13))
				m = c;
		assert_true(m != UINT32_MAX);
		for (uint32_t b = 0; b < len; b++)
			assert_int_equal(p[b], (uint8_t)(i * 71 + m * 13 + b));
	}
	for (int i = 0; i < NQP; i++)
		assert_int_equal(got[i], per_qp);
	rig_close(&r);
}

static void test_srq__stalled_qps_resume_when_the_srq_is_posted_to(void **state)
{
	rv_wc wc[NQP];
	struct rig r;

	(void)state;
	rig_open(&r, 16, 0);
	for (int i = 0; i < NQP; i++)
		send_msg(&r, i, 0, 100);
	/* Nothing to receive into: every SEND waits (rnr_retry 7). */
	assert_int_equal(rv_cq_poll(r.rcq, wc, NQP), 0);
	srq_post(&r, 0, NQP);
	assert_int_equal(poll_n(r.rcq, wc, NQP), NQP);
	for (int i = 0; i < NQP; i++)
		assert_int_equal(wc[i].status, RV_WC_SUCCESS);
	rig_close(&r);
}

static void test_srq__immediate_data_takes_its_receive_from_the_srq(void **state)
{
	rv_wc wc[2];
	rv_sge g;
	rv_send_wr wr;
	struct rig r;
	size_t posted;

	(void)state;
	rig_open(&r, 16, 0);
	srq_post(&r, 0, 2);
	memcpy(r.sbuf, "immediate", 10);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)r.sbuf, .length = 10, .lkey = rv_mr_lkey(r.smr)};
	/* WRITE with immediate into slot 5, then SEND with immediate. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = RV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = 0x1234;
	wr.remote_addr = (uint64_t)(uintptr_t)(r.rbuf + 5 * SLOT);
	wr.rkey = rv_mr_rkey(r.rmr);
	if (rv_qp_post_send(r.sqp[0], &wr, 1, &posted) == -EOPNOTSUPP) {
		rig_close(&r);
		skip(); /* soft0 built without RFC 7306 */
	}
	wr.wr_id = 2;
	wr.opcode = RV_WR_SEND_WITH_IMM;
	wr.imm_data = 0x5678;
	assert_int_equal(rv_qp_post_send(r.sqp[1], &wr, 1, &posted), 0);
	assert_int_equal(poll_n(r.rcq, wc, 2), 2);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(wc[k].status, RV_WC_SUCCESS);
		assert_true(wc[k].wc_flags & RV_WC_WITH_IMM);
		if (wc[k].opcode == RV_WC_RECV_RDMA_WITH_IMM) {
			assert_int_equal(wc[k].imm_data, 0x1234);
			assert_int_equal(wc[k].qp_num, rv_qp_num(r.rqp[0]));
		} else {
			assert_int_equal(wc[k].opcode, RV_WC_RECV);
			assert_int_equal(wc[k].imm_data, 0x5678);
			assert_int_equal(wc[k].byte_len, 10);
			assert_int_equal(wc[k].qp_num, rv_qp_num(r.rqp[1]));
			assert_memory_equal(r.rbuf + wc[k].wr_id * SLOT, "immediate", 10);
		}
		assert_true(wc[k].wr_id < 2);
	}
	assert_int_not_equal(wc[0].wr_id, wc[1].wr_id);
	assert_memory_equal(r.rbuf + 5 * SLOT, "immediate", 10);
	rig_close(&r);
}

static void test_srq__limit_event_through_epoll_on_the_async_fd(void **state)
{
	rv_srq_attr arm = {.mask = RV_SRQ_LIMIT, .srq_limit = 4}, q;
	struct epoll_event ee = {.events = EPOLLIN}, out;
	rv_async_event ev;
	rv_wc wc[8];
	int ep, fd;
	struct rig r;

	(void)state;
	rig_open(&r, 16, 0);
	fd = rv_context_async_fd(r.rctx);
	assert_true(fd >= 0);
	ep = epoll_create1(0);
	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), 0);

	/* COMM_EST for each receiving QP came first. */
	for (int i = 0; i < NQP; i++) {
		assert_true(wait_event(r.rctx, RV_EVENT_COMM_EST, r.rqp[i], &ev));
		assert_ptr_equal(ev.qp, r.rqp[i]);
		rv_async_event_ack(&ev);
	}
	assert_int_equal(rv_context_get_async_event(r.rctx, &ev, 0), -EAGAIN);

	srq_post(&r, 0, 8);
	assert_int_equal(rv_srq_modify(r.srq, &arm), 0);
	assert_int_equal(rv_srq_query(r.srq, &q), 0);
	assert_int_equal(q.srq_limit, 4);
	assert_int_equal(q.max_wr, 16);
	assert_int_equal(q.max_sge, 2);
	/* 4 consumed: 4 left, not below the limit, no event. */
	for (uint32_t m = 0; m < 4; m++)
		send_msg(&r, 0, m, 64);
	assert_int_equal(poll_n(r.rcq, wc, 4), 4);
	assert_int_equal(epoll_wait(ep, &out, 1, 0), 0);
	/* The fifth leaves 3 < 4: the event fires once and the limit disarms. */
	send_msg(&r, 1, 0, 64);
	assert_int_equal(poll_n(r.rcq, wc, 1), 1);
	assert_int_equal(epoll_wait(ep, &out, 1, 10000), 1);
	assert_int_equal(rv_context_get_async_event(r.rctx, &ev, 0), 0);
	assert_int_equal(ev.type, RV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.srq, r.srq);
	assert_null(ev.qp);
	assert_string_equal(rv_async_event_str(ev.type), "SRQ_LIMIT_REACHED");
	rv_async_event_ack(&ev);
	assert_null(ev.srq);
	assert_int_equal(rv_srq_query(r.srq, &q), 0);
	assert_int_equal(q.srq_limit, 0);
	/* Disarmed: consuming more raises nothing. */
	send_msg(&r, 2, 0, 64);
	assert_int_equal(poll_n(r.rcq, wc, 1), 1);
	assert_int_equal(epoll_wait(ep, &out, 1, 0), 0);
	assert_int_equal(rv_context_get_async_event(r.rctx, &ev, 0), -EAGAIN);
	/* A limit at or above max_wr is refused. */
	arm.srq_limit = 16;
	assert_int_equal(rv_srq_modify(r.srq, &arm), -EINVAL);
	close(ep);
	rig_close(&r);
}

static void test_srq__last_wqe_reached_when_a_qp_with_an_srq_goes_to_error(void **state)
{
	rv_qp_attr err = {.mask = RV_QP_STATE, .qp_state = RV_QPS_ERR};
	rv_async_event ev;
	rv_wc wc[2];
	struct rig r;

	(void)state;
	rig_open(&r, 16, 0);
	srq_post(&r, 0, 4);
	assert_int_equal(rv_qp_modify(r.rqp[0], &err), 0);
	assert_true(wait_event(r.rctx, RV_EVENT_QP_LAST_WQE_REACHED, r.rqp[0], &ev));
	rv_async_event_ack(&ev);
	/* The move was the application's: no QP fatal for it. */
	assert_true(no_event(r.rctx, RV_EVENT_QP_FATAL, r.rqp[0]));
	/* The SRQ's WRs are not flushed: the other QPs still receive into them. */
	assert_int_equal(rv_cq_poll(r.rcq, wc, 2), 0);
	send_msg(&r, 1, 0, 32);
	assert_int_equal(poll_n(r.rcq, wc, 1), 1);
	assert_int_equal(wc[0].status, RV_WC_SUCCESS);
	assert_int_equal(wc[0].qp_num, rv_qp_num(r.rqp[1]));
	rig_close(&r);
}

static void test_srq__closing_the_srq_closes_its_qps(void **state)
{
	struct rig r;

	(void)state;
	rig_open(&r, 16, 0);
	assert_int_equal(rv_srq_close(r.srq), 0);
	for (int i = 0; i < NQP; i++) {
		assert_int_equal(rv_qp_state_of(r.rqp[i]), -RV_ECLOSED);
		assert_non_null(strstr(rv_error_last(), "SRQ"));
	}
	assert_int_equal(rv_srq_post_recv(r.srq, &(rv_recv_wr){.wr_id = 0}, 1, NULL), -RV_ECLOSED);
	rig_close(&r);
}

/* Two plain RC QPs in two contexts. */
struct pair {
	rv_context *ctx[2];
	rv_pd *pd[2];
	rv_cq *cq[2];
	rv_qp *qp[2];
	rv_mr *mr[2];
};

static void pair_open(struct pair *p, uint32_t cqe1, uint32_t recv_wr1)
{
	for (int i = 0; i < 2; i++) {
		rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = i == 1 && cqe1 ? cqe1 : 256};
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP};

		p->ctx[i] = open_ctx();
		assert_int_equal(rv_pd_new(p->ctx[i], NULL, &p->pd[i]), 0);
		assert_int_equal(rv_cq_new(p->ctx[i], &ca, &p->cq[i]), 0);
		qa.send_cq = p->cq[i];
		qa.cap.max_send_wr = 32;
		qa.cap.max_recv_wr = i == 1 && recv_wr1 ? recv_wr1 : 32;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		assert_int_equal(rv_qp_new(p->pd[i], &qa, &p->qp[i]), 0);
		assert_int_equal(rv_mr_alloc(p->pd[i], BUF, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL,
					     &p->mr[i]), 0);
	}
	{
		rv_endpoint e0, e1;
		assert_int_equal(rv_qp_endpoint(p->qp[0], &e0), 0);
		assert_int_equal(rv_qp_endpoint(p->qp[1], &e1), 0);
		assert_int_equal(rv_qp_connect(p->qp[0], &e1), 0);
		assert_int_equal(rv_qp_connect(p->qp[1], &e0), 0);
	}
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		rv_qp_unref(p->qp[i]);
		rv_mr_unref(p->mr[i]);
		rv_cq_unref(p->cq[i]);
		rv_pd_unref(p->pd[i]);
		assert_int_equal(rv_context_close(p->ctx[i]), 0);
		rv_context_unref(p->ctx[i]);
	}
}

static rv_sge mr_sge(rv_mr *mr, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)((uint8_t *)rv_mr_addr(mr) + off), .length = len,
		    .lkey = rv_mr_lkey(mr)};
	return g;
}

static void test_events__qp_fatal_after_a_remote_access_error(void **state)
{
	struct pair p;
	rv_async_event ev;
	rv_sge g;
	rv_wc wc;

	(void)state;
	pair_open(&p, 0, 0);
	g = mr_sge(p.mr[0], 0, 64);
	/* A WRITE past the end of the peer's MR. */
	assert_int_equal(rv_qp_write(p.qp[0], &g, (uint64_t)(uintptr_t)rv_mr_addr(p.mr[1]) + BUF - 8,
				     rv_mr_rkey(p.mr[1]), 7), 0);
	assert_int_equal(poll_n(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, RV_WC_REM_ACCESS_ERR);
	/* Both sides' QPs went to error because of the wire: QP fatal on each. */
	assert_true(wait_event(p.ctx[0], RV_EVENT_QP_FATAL, p.qp[0], &ev));
	assert_ptr_equal(ev.qp, p.qp[0]);
	assert_string_equal(rv_async_event_str(ev.type), "QP_FATAL");
	rv_async_event_ack(&ev);
	assert_true(wait_event(p.ctx[1], RV_EVENT_QP_FATAL, p.qp[1], &ev));
	rv_async_event_ack(&ev);
	assert_int_equal(rv_qp_state_of(p.qp[0]), RV_QPS_ERR);
	pair_close(&p);
}

static void test_events__cq_overflow_is_an_error_never_silent_loss(void **state)
{
	struct pair p;
	rv_async_event ev;
	rv_wc wc[4];
	int n, got = 0;
	int64_t end;

	(void)state;
	/* QP 1 receives into a CQ of 2 entries with 8 receives posted. */
	pair_open(&p, 2, 8);
	assert_int_equal(rv_cq_size(p.cq[1]), 2);
	for (uint64_t k = 0; k < 8; k++) {
		rv_sge g = mr_sge(p.mr[1], k * 64, 64);
		assert_int_equal(rv_qp_recv(p.qp[1], &g, k), 0);
	}
	for (uint64_t k = 0; k < 4; k++) {
		rv_sge g = mr_sge(p.mr[0], k * 64, 16);
		assert_int_equal(rv_qp_send(p.qp[0], &g, k), 0);
	}
	/* The third completion finds the CQ full: CQ error event, the QP to error. */
	assert_true(wait_event(p.ctx[1], RV_EVENT_CQ_ERR, p.cq[1], &ev));
	assert_ptr_equal(ev.cq, p.cq[1]);
	assert_null(ev.qp);
	rv_async_event_ack(&ev);
	assert_true(wait_event(p.ctx[1], RV_EVENT_QP_FATAL, p.qp[1], &ev));
	rv_async_event_ack(&ev);
	assert_int_equal(rv_qp_state_of(p.qp[1]), RV_QPS_ERR);
	/* The entries that fit are there, then the poll reports the overflow. */
	end = now_ms() + 10000;
	while ((n = rv_cq_poll(p.cq[1], wc, 4)) > 0 && now_ms() < end)
		got += n;
	assert_int_equal(got, 2);
	assert_int_equal(n, -EOVERFLOW);
	assert_non_null(strstr(rv_error_last(), "overflowed"));
	pair_close(&p);
}

static void test_events__handles_stay_valid_until_the_ack_and_close_never_waits(void **state)
{
	struct pair p;
	rv_async_event ev, held;
	rv_sge g;
	rv_wc wc;

	(void)state;
	pair_open(&p, 0, 0);
	assert_true(wait_event(p.ctx[0], RV_EVENT_COMM_EST, p.qp[0], &held));
	/* Close the QP the event names: the handle stays valid memory, closed. */
	assert_int_equal(rv_qp_close(p.qp[0]), 0);
	assert_int_equal(rv_qp_num(held.qp), 0);
	assert_int_equal(rv_qp_state_of(held.qp), -RV_ECLOSED);
	/* Events queued about a closed handle are discarded, not delivered. */
	g = mr_sge(p.mr[1], 0, 8);
	assert_int_equal(rv_qp_write(p.qp[1], &g, 0, 0x1234, 1), 0);
	assert_int_equal(poll_n(p.cq[1], &wc, 1), 1);
	assert_true(wait_event(p.ctx[1], RV_EVENT_QP_FATAL, p.qp[1], &ev));
	rv_async_event_ack(&ev);
	/* Unread events and an unacknowledged one: closing the contexts returns. */
	pair_close(&p);
	rv_async_event_ack(&held); /* drops the last reference: frees the QP */
	rv_async_event_ack(&held); /* a second ack does nothing */
	rv_async_event_ack(NULL);
}

static void test_cq__resize_keeps_entries_and_refuses_below_them(void **state)
{
	struct pair p;
	rv_wc wc[16];

	(void)state;
	pair_open(&p, 4, 16);
	for (uint64_t k = 0; k < 12; k++) {
		rv_sge g = mr_sge(p.mr[1], k * 64, 64);
		assert_int_equal(rv_qp_recv(p.qp[1], &g, k), 0);
	}
	/* Three completions wait in a CQ of 4. */
	for (uint64_t k = 0; k < 3; k++) {
		rv_sge g = mr_sge(p.mr[0], k * 64, 8);
		assert_int_equal(rv_qp_send(p.qp[0], &g, k), 0);
	}
	assert_int_equal(poll_n(p.cq[0], wc, 3), 3);
	/* Below the entries it holds: refused, nothing lost. */
	assert_int_equal(rv_cq_resize(p.cq[1], 2), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "holds"));
	assert_int_equal(rv_cq_size(p.cq[1]), 4);
	assert_int_equal(rv_cq_resize(p.cq[1], 0), -EINVAL);
	assert_int_equal(rv_cq_resize(p.cq[1], 1u << 30), -EINVAL);
	/* Grown: the three are still there, in order, and eight more fit. */
	assert_int_equal(rv_cq_resize(p.cq[1], 16), 0);
	assert_int_equal(rv_cq_size(p.cq[1]), 16);
	for (uint64_t k = 3; k < 11; k++) {
		rv_sge g = mr_sge(p.mr[0], k * 64, 8);
		assert_int_equal(rv_qp_send(p.qp[0], &g, k), 0);
	}
	assert_int_equal(poll_n(p.cq[0], wc, 8), 8);
	assert_int_equal(poll_n(p.cq[1], wc, 11), 11);
	for (uint64_t k = 0; k < 11; k++) {
		assert_int_equal(wc[k].status, RV_WC_SUCCESS);
		assert_int_equal(wc[k].wr_id, k);
	}
	/* Shrunk to exactly what it may hold: still no overflow. */
	assert_int_equal(rv_cq_resize(p.cq[1], 1), 0);
	assert_int_equal(rv_cq_size(p.cq[1]), 1);
	{
		rv_sge g = mr_sge(p.mr[0], 0, 8);
		assert_int_equal(rv_qp_send(p.qp[0], &g, 99), 0);
	}
	assert_int_equal(poll_n(p.cq[1], wc, 1), 1);
	assert_int_equal(wc[0].wr_id, 11);
	assert_int_equal(rv_qp_state_of(p.qp[1]), RV_QPS_RTS);
	assert_int_equal(rv_cq_close(p.cq[1]), 0);
	assert_int_equal(rv_cq_resize(p.cq[1], 8), -RV_ECLOSED);
	pair_close(&p);
}

static void test_events__argument_checks(void **state)
{
	rv_context *ctx = open_ctx();
	rv_async_event ev;

	(void)state;
	assert_int_equal(rv_context_get_async_event(ctx, NULL, 0), -EINVAL);
	assert_int_equal(rv_context_get_async_event(NULL, &ev, 0), -EINVAL);
	assert_int_equal(rv_context_async_fd(NULL), -EINVAL);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 0), -EAGAIN);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 20), -ETIMEDOUT);
	assert_string_equal(rv_async_event_str(RV_EVENT_QP_LAST_WQE_REACHED), "QP_LAST_WQE_REACHED");
	assert_string_equal(rv_async_event_str(RV_EVENT_CQ_ERR), "CQ_ERR");
	assert_string_equal(rv_async_event_str(999), "UNKNOWN");
	assert_int_equal(rv_context_close(ctx), 0);
	assert_int_equal(rv_context_async_fd(ctx), -RV_ECLOSED);
	assert_int_equal(rv_context_get_async_event(ctx, &ev, 0), -RV_ECLOSED);
	rv_context_unref(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srq__shared_by_three_rc_qps),
		cmocka_unit_test(test_srq__stalled_qps_resume_when_the_srq_is_posted_to),
		cmocka_unit_test(test_srq__immediate_data_takes_its_receive_from_the_srq),
		cmocka_unit_test(test_srq__limit_event_through_epoll_on_the_async_fd),
		cmocka_unit_test(test_srq__last_wqe_reached_when_a_qp_with_an_srq_goes_to_error),
		cmocka_unit_test(test_srq__closing_the_srq_closes_its_qps),
		cmocka_unit_test(test_events__qp_fatal_after_a_remote_access_error),
		cmocka_unit_test(test_events__cq_overflow_is_an_error_never_silent_loss),
		cmocka_unit_test(test_events__handles_stay_valid_until_the_ack_and_close_never_waits),
		cmocka_unit_test(test_cq__resize_keeps_entries_and_refuses_below_them),
		cmocka_unit_test(test_events__argument_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
