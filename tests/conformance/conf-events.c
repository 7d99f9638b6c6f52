/*
 * Conformance: asynchronous events (rverbs/event.h) that every device with
 * the feature raises: SRQ limit reached (once, then the limit is disarmed),
 * Last WQE Reached for a QP on an SRQ that goes to error, and CQ error when
 * a CQ overflows. Each event names its object (a reference valid until the
 * ack), and the context's event descriptor is readable while one waits.
 *
 * Both arrangements: with one context, A's and B's events share one queue,
 * so the cases look for the event about their own object and acknowledge
 * the others (COMM_EST, QP fatal of the peer, ...), which are not checked
 * here. A device without SRQs or without the SRQ limit skips those cases.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf-harness.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool about(const rv_async_event *ev, const void *h)
{
	return (const void *)ev->qp == h || (const void *)ev->cq == h || (const void *)ev->srq == h;
}

/* Take events until one of type about h arrives; others are acknowledged.
 * Fails after CONF_WAIT_MS (a hang guard). The caller acks the result. */
static rv_async_event wait_event(rv_context *ctx, uint32_t type, const void *h)
{
	int64_t end = now_ms() + CONF_WAIT_MS;

	while (now_ms() < end) {
		rv_async_event ev;
		int rc = rv_context_get_async_event(ctx, &ev, 100);

		if (rc == -ETIMEDOUT)
			continue;
		if (rc < 0)
			fail_msg("rv_context_get_async_event: %d %s", rc, rv_error_last());
		if (ev.type == type && about(&ev, h))
			return ev;
		rv_async_event_ack(&ev);
	}
	fail_msg("no %s event within %d ms", rv_async_event_str(type), CONF_WAIT_MS);
	abort(); /* fail_msg does not return */
}

/* Take and acknowledge what is queued now; fail on an event of type about h. */
static void no_event_now(rv_context *ctx, uint32_t type, const void *h)
{
	rv_async_event ev;

	while (rv_context_get_async_event(ctx, &ev, 0) == 0) {
		bool match = ev.type == type && about(&ev, h);

		rv_async_event_ack(&ev);
		if (match)
			fail_msg("unexpected %s event", rv_async_event_str(type));
	}
}

/* ---- SRQ events ---- */

#define SRQ_WR 16u
#define SLOT 1024u

/* An SRQ on B with n QPs on it, each connected to a QP of A (the first is
 * A's main QP): qa[i] talks to qb[i]. The SRQ returned is borrowed: its QPs,
 * which the harness holds, hold it. */
static rv_srq *srq_rig(struct conf_pair *p, int n, rv_qp **qa, rv_qp **qb)
{
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_MAX_WR, .max_wr = SRQ_WR};
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_srq *srq = NULL;
	int rc;

	assert_int_equal(rv_context_query_device(p->b.ctx, &da), 0);
	if (da.max_srq == 0 || da.max_srq_wr < SRQ_WR)
		conf_skip("an SRQ of %u WRs (max_srq %u, max_srq_wr %u)", SRQ_WR, da.max_srq, da.max_srq_wr);
	rc = rv_srq_new(p->b.pd, &sa, &srq);
	if (rc == -EOPNOTSUPP)
		conf_skip("shared receive queues: %s", rv_error_last());
	assert_int_equal(rc, 0);
	for (int i = 0; i < n; i++) {
		rv_qp_init_attr ia = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = p->a.cq};
		rv_qp_init_attr ib = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ, .send_cq = p->b.cq,
				      .srq = srq};
		rv_endpoint ea, eb;

		if (i == 0) {
			qa[i] = p->a.qp;
		} else {
			assert_int_equal(rv_qp_new(p->a.pd, &ia, &qa[i]), 0);
			conf_adopt_qp(qa[i]);
		}
		rc = rv_qp_new(p->b.pd, &ib, &qb[i]);
		if (rc == -EOPNOTSUPP) {
			rv_srq_unref(srq);
			conf_skip("a QP on an SRQ: %s", rv_error_last());
		}
		assert_int_equal(rc, 0);
		conf_adopt_qp(qb[i]);
		assert_int_equal(rv_qp_endpoint(qa[i], &ea), 0);
		assert_int_equal(rv_qp_endpoint(qb[i], &eb), 0);
		assert_int_equal(rv_qp_connect(qa[i], &eb), 0);
		assert_int_equal(rv_qp_connect(qb[i], &ea), 0);
	}
	rv_srq_unref(srq); /* the QPs hold it until the harness drops them */
	return srq;
}

static void srq_post(struct conf_pair *p, rv_srq *srq, uint64_t first, uint32_t n)
{
	for (uint64_t k = first; k < first + n; k++) {
		rv_sge g = conf_sge(&p->b.buf, (size_t)(k % SRQ_WR) * SLOT, SLOT);
		rv_recv_wr w = {.wr_id = k, .sg_list = &g, .num_sge = 1};
		int rc = rv_srq_post_recv(srq, &w, 1, NULL);

		if (rc < 0)
			fail_msg("rv_srq_post_recv: %d %s", rc, rv_error_last());
	}
}

/* One 64-byte SEND from qa to qb; both completions are checked. */
static void srq_send(struct conf_pair *p, rv_qp *qa, rv_qp *qb, uint64_t id)
{
	rv_sge g = conf_sge(&p->a.buf, 64 * (size_t)id, 64);
	rv_wc wc;

	assert_int_equal(rv_qp_send(qa, &g, 1000 + id), 0);
	conf_expect(p->a.cq, 1000 + id, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 64);
	assert_int_equal(wc.qp_num, rv_qp_num(qb));
	assert_memory_equal(p->b.buf.p + (size_t)(wc.wr_id % SRQ_WR) * SLOT, p->a.buf.p + 64 * (size_t)id, 64);
}

/* 8 receives posted, limit armed at 4: four SENDs leave 4 (no event), the
 * fifth leaves 3: SRQ_LIMIT_REACHED once, naming the SRQ, the event
 * descriptor readable; the limit is then disarmed and a sixth raises none. */
static void srq_limit_reached_once(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_srq_attr arm = {.mask = RV_SRQ_LIMIT, .srq_limit = 4}, q = {.mask = 0};
	rv_qp *qa[1], *qb[1];
	rv_srq *srq = srq_rig(p, 1, qa, qb);
	rv_async_event ev;
	struct pollfd pfd = {.events = POLLIN};
	int rc;

	srq_post(p, srq, 0, 8);
	rc = rv_srq_modify(srq, &arm);
	if (rc == -EOPNOTSUPP)
		conf_skip("arming the SRQ limit: %s", rv_error_last());
	assert_int_equal(rc, 0);
	assert_int_equal(rv_srq_query(srq, &q), 0);
	assert_int_equal(q.srq_limit, 4);
	for (uint64_t i = 0; i < 4; i++)
		srq_send(p, qa[0], qb[0], i);
	no_event_now(p->b.ctx, RV_EVENT_SRQ_LIMIT_REACHED, srq);
	srq_send(p, qa[0], qb[0], 4);
	pfd.fd = rv_context_async_fd(p->b.ctx);
	assert_true(pfd.fd >= 0);
	assert_int_equal(poll(&pfd, 1, CONF_WAIT_MS), 1);
	assert_true(pfd.revents & POLLIN);
	ev = wait_event(p->b.ctx, RV_EVENT_SRQ_LIMIT_REACHED, srq);
	assert_ptr_equal(ev.srq, srq);
	assert_null(ev.qp);
	assert_null(ev.cq);
	rv_async_event_ack(&ev);
	assert_null(ev.srq);
	assert_int_equal(rv_srq_query(srq, &q), 0);
	assert_int_equal(q.srq_limit, 0);
	/* Disarmed: one more consumed (2 left) raises nothing. */
	srq_send(p, qa[0], qb[0], 5);
	no_event_now(p->b.ctx, RV_EVENT_SRQ_LIMIT_REACHED, srq);
	conf_buf_check_except(&p->b.buf, &(struct conf_range){0, 8 * SLOT}, 1);
}

/* Two QPs on one SRQ; the application moves the first to ERR: Last WQE
 * Reached names it (its handle valid until the ack), and the SRQ's
 * receives are not flushed: the second QP still receives into them. */
static void last_wqe_reached_for_a_qp_on_an_srq(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_qp_attr err = {.mask = RV_QP_STATE, .qp_state = RV_QPS_ERR};
	rv_qp *qa[2], *qb[2];
	rv_srq *srq = srq_rig(p, 2, qa, qb);
	rv_async_event ev;
	rv_wc wc;

	srq_post(p, srq, 0, 4);
	assert_int_equal(rv_qp_modify(qb[0], &err), 0);
	if (conf_quirk("no-last-wqe-reached")) {
		/* The device's difference: no event; the rest holds. */
		struct timespec ts = {1, 0};

		nanosleep(&ts, NULL);
		no_event_now(p->b.ctx, RV_EVENT_QP_LAST_WQE_REACHED, qb[0]);
		assert_int_equal(rv_qp_state_of(qb[0]), RV_QPS_ERR);
	} else {
		ev = wait_event(p->b.ctx, RV_EVENT_QP_LAST_WQE_REACHED, qb[0]);
		assert_ptr_equal(ev.qp, qb[0]);
		assert_null(ev.srq);
		assert_int_equal(rv_qp_num(ev.qp), rv_qp_num(qb[0]));
		assert_int_equal(rv_qp_state_of(ev.qp), RV_QPS_ERR);
		rv_async_event_ack(&ev);
		assert_null(ev.qp);
	}
	/* Nothing of the SRQ completed with a flush. */
	assert_int_equal(rv_cq_poll(p->b.cq, &wc, 1), 0);
	srq_send(p, qa[1], qb[1], 0);
	conf_buf_check_except(&p->b.buf, &(struct conf_range){0, 4 * SLOT}, 1);
}

/* ---- CQ error ---- */

/* A CQ of a few entries gets more receive completions than it holds: CQ
 * error names it, and rv_cq_poll reports the overflow after what it held. */
static void cq_error_event_on_overflow(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = 4};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP,
			      .cap = {.max_send_wr = 4, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1}};
	rv_endpoint ea, eb;
	rv_async_event ev;
	rv_cq *small;
	rv_qp *qp;
	rv_wc wc[64];
	uint32_t size;
	int n, got = 0;

	assert_int_equal(rv_cq_new(p->b.ctx, &ca, &small), 0);
	conf_adopt_cq(small);
	size = rv_cq_size(small);
	assert_true(size >= 4 && size <= 60);
	qa.send_cq = small;
	assert_int_equal(rv_qp_new(p->b.pd, &qa, &qp), 0);
	conf_adopt_qp(qp);
	assert_int_equal(rv_qp_endpoint(p->a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(qp, &eb), 0);
	assert_int_equal(rv_qp_connect(p->a.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(qp, &ea), 0);
	for (uint32_t i = 0; i < size + 4; i++) {
		rv_sge g = conf_sge(&p->b.buf, 64 * (size_t)i, 64);
		assert_int_equal(rv_qp_recv(qp, &g, i), 0);
	}
	for (uint32_t i = 0; i < size + 4; i++) {
		rv_sge g = conf_sge(&p->a.buf, 0, 16);
		assert_int_equal(rv_qp_send(p->a.qp, &g, i), 0);
	}
	ev = wait_event(p->b.ctx, RV_EVENT_CQ_ERR, small);
	assert_ptr_equal(ev.cq, small);
	assert_null(ev.qp);
	assert_string_equal(rv_async_event_str(ev.type), "CQ_ERR");
	rv_async_event_ack(&ev);
	assert_null(ev.cq);
	while ((n = rv_cq_poll(small, wc, 64)) > 0)
		got += n;
	assert_int_equal(n, -EOVERFLOW);
	assert_true(got <= (int)size);
	conf_buf_check(&p->b.buf, 0, 64 * (size_t)(size + 4));
}

const struct conf_case conf_events_cases[] = {
	{"SRQ limit reached: raised once below the limit (event fd readable), then disarmed", srq_limit_reached_once},
	{"Last WQE Reached for a QP on an SRQ moved to ERR; the SRQ's receives stay", last_wqe_reached_for_a_qp_on_an_srq},
	{"CQ error event when a CQ overflows (names the CQ)", cq_error_event_on_overflow},
	CONF_END,
};
