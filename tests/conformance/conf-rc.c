/*
 * Conformance: connected QPs moving data (RC, and UC where the device has
 * it): SEND (multi-SGE on both sides, solicited), RDMA WRITE and READ
 * (multi-SGE, many MTUs), automatic and explicit inline, CQ events through a
 * completion channel, fences, ordering. Every case checks the bytes placed
 * and that nothing outside the target range changed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf-harness.h"

static rv_send_wr wr_of(uint64_t id, uint32_t opcode, const rv_sge *sg, uint32_t n, uint32_t flags)
{
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = opcode;
	w.sg_list = sg;
	w.num_sge = n;
	w.send_flags = flags | RV_SEND_SIGNALED;
	return w;
}

static void need_sge(const struct conf_pair *p, uint32_t send, uint32_t recv)
{
	if (p->a.cap.max_send_sge < send || p->b.cap.max_recv_sge < recv)
		conf_skip("needs %u send and %u receive SGEs; the QPs have %u and %u", send, recv,
			  p->a.cap.max_send_sge, p->b.cap.max_recv_sge);
}

/* SEND of three SGEs into a receive of two; every byte lands where it should. */
static void send_scatter_gather(uint32_t qp_type)
{
	struct conf_opts o = {.qp_type = qp_type};
	struct conf_pair *p = conf_pair_open(&o);
	rv_sge rs[2], ss[3];
	rv_send_wr w;
	rv_wc wc;

	need_sge(p, 3, 2);
	rs[0] = conf_sge(&p->b.buf, 1000, 100);
	rs[1] = conf_sge(&p->b.buf, 5000, 300);
	conf_post_recv(p->b.qp, 7, rs, 2);
	ss[0] = conf_sge(&p->a.buf, 0, 50);
	ss[1] = conf_sge(&p->a.buf, 2000, 150);
	ss[2] = conf_sge(&p->a.buf, 9000, 50);
	w = wr_of(8, RV_WR_SEND, ss, 3, RV_SEND_NO_INLINE);
	conf_post(p->a.qp, &w);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_true(wc.opcode & RV_WC_RECV);
	assert_int_equal(wc.byte_len, 250);
	assert_int_equal(wc.qp_num, rv_qp_num(p->b.qp));
	conf_expect(p->a.cq, 8, RV_WC_SUCCESS);
	/* 50 + 50 of the second SGE fill the first receive SGE; the rest, the second. */
	assert_memory_equal(p->b.buf.p + 1000, p->a.buf.p, 50);
	assert_memory_equal(p->b.buf.p + 1050, p->a.buf.p + 2000, 50);
	assert_memory_equal(p->b.buf.p + 5000, p->a.buf.p + 2050, 100);
	assert_memory_equal(p->b.buf.p + 5100, p->a.buf.p + 9000, 50);
	/* Nothing else changed, not even the unused 150 bytes of the second
	 * receive SGE. */
	{
		struct conf_range r[] = {{1000, 1100}, {5000, 5150}};
		conf_buf_check_except(&p->b.buf, r, 2);
	}
	conf_buf_check(&p->a.buf, 0, 0);
	conf_expect_none(p->a.cq, 10);
	conf_expect_none(p->b.cq, 10);
}

static void rc_send_scatter_gather(void)
{
	send_scatter_gather(RV_QPT_RC);
}

static void uc_send_scatter_gather(void)
{
	send_scatter_gather(RV_QPT_UC);
}

/*
 * UC: the requester's completion says the WRITE left, not that it landed
 * (IBA §9.7.5.1.5: nothing is acknowledged). A zero-length SEND posted after
 * it is executed after it at the responder, so its receive completion says the
 * WRITE's bytes are placed. Waiting on that completion, rather than reading the
 * target while the device may still write it, is what an application must do
 * and leaves no data race for ThreadSanitizer to report.
 */
static void uc_wait_landed(struct conf_pair *p)
{
	rv_send_wr w = wr_of(90, RV_WR_SEND, NULL, 0, 0);
	rv_wc wc;

	conf_post(p->a.qp, &w);
	conf_expect(p->a.cq, 90, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 91);
	assert_true(wc.opcode & RV_WC_RECV);
	assert_int_equal(wc.byte_len, 0);
}

/* RDMA WRITE from three local SGEs, then READ back into three others. */
static void write_read(uint32_t qp_type, uint32_t len)
{
	struct conf_opts o = {.qp_type = qp_type};
	struct conf_pair *p = conf_pair_open(&o);
	uint32_t part = len / 3, last = len - 2 * part;
	size_t at = 64;
	rv_sge g[3];
	rv_send_wr w;
	rv_wc wc;

	need_sge(p, 3, 1);
	if (qp_type == RV_QPT_UC)
		conf_post_recv(p->b.qp, 91, NULL, 0); /* for uc_wait_landed's SEND */
	g[0] = conf_sge(&p->a.buf, 0, part);
	g[1] = conf_sge(&p->a.buf, len + 100, part);
	g[2] = conf_sge(&p->a.buf, 2 * (size_t)len + 200, last);
	w = wr_of(1, RV_WR_RDMA_WRITE, g, 3, RV_SEND_NO_INLINE);
	w.remote_addr = conf_addr(&p->b.buf, at);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	conf_post(p->a.qp, &w);
	wc = conf_poll(p->a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.opcode, RV_WC_RDMA_WRITE);
	if (qp_type == RV_QPT_UC)
		uc_wait_landed(p);
	assert_memory_equal(p->b.buf.p + at, p->a.buf.p, part);
	assert_memory_equal(p->b.buf.p + at + part, p->a.buf.p + len + 100, part);
	assert_memory_equal(p->b.buf.p + at + 2 * part, p->a.buf.p + 2 * (size_t)len + 200, last);
	conf_buf_check(&p->b.buf, at, at + len);
	conf_expect_none(p->b.cq, 10); /* one-sided: nothing at the target */
	if (qp_type == RV_QPT_UC)
		return; /* UC has no READ */

	/* READ the same bytes back, scattered over three other places in A. */
	conf_buf_fill(&p->a.buf, 42);
	g[0] = conf_sge(&p->a.buf, 10, last);
	g[1] = conf_sge(&p->a.buf, (size_t)len + 20, part);
	g[2] = conf_sge(&p->a.buf, 2 * (size_t)len + 30, part);
	w = wr_of(2, RV_WR_RDMA_READ, g, 3, 0);
	w.remote_addr = conf_addr(&p->b.buf, at);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	conf_post(p->a.qp, &w);
	wc = conf_poll(p->a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, len);
	assert_memory_equal(p->a.buf.p + 10, p->b.buf.p + at, last);
	assert_memory_equal(p->a.buf.p + len + 20, p->b.buf.p + at + last, part);
	assert_memory_equal(p->a.buf.p + 2 * (size_t)len + 30, p->b.buf.p + at + last + part, part);
	{
		struct conf_range r[] = {{10, 10 + last}, {(size_t)len + 20, (size_t)len + 20 + part},
					 {2 * (size_t)len + 30, 2 * (size_t)len + 30 + part}};
		conf_buf_check_except(&p->a.buf, r, 3);
	}
	conf_expect_none(p->b.cq, 10);
}

static void rc_write_read_small(void)
{
	write_read(RV_QPT_RC, 300);
}

static void rc_write_read_many_mtus(void)
{
	write_read(RV_QPT_RC, 150000);
}

static void uc_write(void)
{
	write_read(RV_QPT_UC, 3000);
}

/* A SEND that fits max_inline_data goes inline without being asked: the
 * source may change as soon as the post returns. */
static void rc_inline_automatic(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint32_t n = p->a.cap.max_inline_data;
	rv_sge g;

	if (n == 0)
		conf_skip("the QP has max_inline_data 0: no inline sends");
	if (n > 256)
		n = 256;
	g = conf_sge(&p->b.buf, 0, n);
	conf_post_recv(p->b.qp, 1, &g, 1);
	memcpy(p->a.buf.p, "inline payload, copied at post time", n < 36 ? n : 36);
	g = conf_sge(&p->a.buf, 0, n);
	assert_int_equal(rv_qp_send(p->a.qp, &g, 2), 0);
	{
		uint8_t want[256];
		memcpy(want, p->a.buf.p, n);
		memset(p->a.buf.p, 0xee, n); /* the WR must not read this any more */
		conf_expect(p->b.cq, 1, RV_WC_SUCCESS);
		assert_memory_equal(p->b.buf.p, want, n);
	}
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	conf_buf_check(&p->b.buf, 0, n);
}

/* RV_SEND_INLINE up to max_inline_data works; one byte more is refused at
 * post time, with nothing posted. */
static void rc_inline_explicit_and_too_long(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint32_t n = p->a.cap.max_inline_data;
	rv_sge g;
	rv_send_wr w;
	size_t posted = 99;

	if (n == 0)
		conf_skip("the QP has max_inline_data 0: no inline sends");
	g = conf_sge(&p->b.buf, 0, n + 64);
	conf_post_recv(p->b.qp, 1, &g, 1);
	g = conf_sge(&p->a.buf, 0, n);
	w = wr_of(2, RV_WR_SEND, &g, 1, RV_SEND_INLINE);
	conf_post(p->a.qp, &w);
	conf_expect(p->b.cq, 1, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(p->b.buf.p, p->a.buf.p, n);
	g = conf_sge(&p->a.buf, 0, n + 1);
	w = wr_of(3, RV_WR_SEND, &g, 1, RV_SEND_INLINE);
	assert_int_equal(rv_qp_post_send(p->a.qp, &w, 1, &posted), -EINVAL);
	assert_int_equal(posted, 0);
	conf_expect_none(p->a.cq, 20);
	conf_buf_check(&p->b.buf, 0, n);
}

/* CQ events: an armed CQ sends one event per arming, for the next completion. */
static void rc_cq_events_through_a_channel(void)
{
	struct conf_opts o = {.channel = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_cq *fired = NULL;
	rv_sge g;
	rv_wc wc;

	for (int round = 0; round < 3; round++) {
		assert_int_equal(rv_cq_req_notify(p->b.cq, 0), 0);
		g = conf_sge(&p->b.buf, 0, 64);
		conf_post_recv(p->b.qp, 10 + round, &g, 1);
		g = conf_sge(&p->a.buf, 0, 32);
		assert_int_equal(rv_qp_send(p->a.qp, &g, 20 + round), 0);
		assert_int_equal(rv_comp_channel_get_event(p->b.ch, CONF_WAIT_MS, &fired), 0);
		assert_ptr_equal(fired, p->b.cq);
		assert_int_equal(rv_cq_ack_events(p->b.cq, 1), 0);
		wc = conf_poll(p->b.cq);
		assert_int_equal(wc.wr_id, 10 + round);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		conf_expect(p->a.cq, 20 + round, RV_WC_SUCCESS);
		/* Disarmed after firing: nothing more is pending. */
		assert_int_equal(rv_comp_channel_get_event(p->b.ch, 0, &fired), -EAGAIN);
	}
}

/* Solicited-only arming: an unsolicited SEND completes without an event,
 * a solicited one (RV_SEND_SOLICITED) fires it. */
static void rc_solicited_event(void)
{
	struct conf_opts o = {.channel = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_cq *fired = NULL;
	rv_send_wr w;
	rv_sge g, s;

	assert_int_equal(rv_cq_req_notify(p->b.cq, 1), 0);
	g = conf_sge(&p->b.buf, 0, 64);
	conf_post_recv(p->b.qp, 1, &g, 1);
	g = conf_sge(&p->b.buf, 64, 64);
	conf_post_recv(p->b.qp, 2, &g, 1);
	s = conf_sge(&p->a.buf, 0, 16);
	w = wr_of(3, RV_WR_SEND, &s, 1, 0);
	conf_post(p->a.qp, &w);
	conf_expect(p->b.cq, 1, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 3, RV_WC_SUCCESS);
	assert_int_equal(rv_comp_channel_get_event(p->b.ch, 50, &fired), -ETIMEDOUT);
	w = wr_of(4, RV_WR_SEND, &s, 1, RV_SEND_SOLICITED);
	conf_post(p->a.qp, &w);
	assert_int_equal(rv_comp_channel_get_event(p->b.ch, CONF_WAIT_MS, &fired), 0);
	assert_ptr_equal(fired, p->b.cq);
	assert_int_equal(rv_cq_ack_events(p->b.cq, 1), 0);
	conf_expect(p->b.cq, 2, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 4, RV_WC_SUCCESS);
}

/* A fenced WRITE waits for the READ before it: the READ sees the old bytes
 * although the WRITE that overwrites them was posted right after it. */
static void rc_fence_orders_a_write_after_a_read(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w[2];
	rv_sge r, s;
	uint8_t old[4096];

	memcpy(old, p->b.buf.p, sizeof(old));
	memset(p->a.buf.p + 65536, 0x5a, sizeof(old));
	r = conf_sge(&p->a.buf, 0, sizeof(old));
	s = conf_sge(&p->a.buf, 65536, sizeof(old));
	w[0] = wr_of(1, RV_WR_RDMA_READ, &r, 1, 0);
	w[0].remote_addr = conf_addr(&p->b.buf, 0);
	w[0].rkey = rv_mr_rkey(p->b.buf.mr);
	w[1] = wr_of(2, RV_WR_RDMA_WRITE, &s, 1, RV_SEND_FENCE | RV_SEND_NO_INLINE);
	w[1].remote_addr = conf_addr(&p->b.buf, 0);
	w[1].rkey = rv_mr_rkey(p->b.buf.mr);
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 2, NULL), 0);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(p->a.buf.p, old, sizeof(old));
	for (size_t i = 0; i < sizeof(old); i++)
		assert_int_equal(p->b.buf.p[i], 0x5a);
	conf_buf_check(&p->b.buf, 0, sizeof(old));
}

/* Many SENDs complete in order, each into its own receive. */
/* Zero-length SEND and RDMA WRITE: valid, they complete, nothing changes
 * (the receive completes with byte_len 0). */
static void rc_zero_length_send_and_write(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w;
	rv_sge r;
	rv_wc wc;

	r = conf_sge(&p->b.buf, 0, 64);
	conf_post_recv(p->b.qp, 1, &r, 1);
	w = wr_of(2, RV_WR_SEND, NULL, 0, 0);
	conf_post(p->a.qp, &w);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 0);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	w = wr_of(3, RV_WR_RDMA_WRITE, NULL, 0, 0);
	w.remote_addr = conf_addr(&p->b.buf, 0);
	w.rkey = rv_mr_rkey(p->b.buf.mr);
	conf_post(p->a.qp, &w);
	conf_expect(p->a.cq, 3, RV_WC_SUCCESS);
	conf_buf_check(&p->b.buf, 0, 0);
	conf_buf_check(&p->a.buf, 0, 0);
}

/* A SEND of 200000 bytes (many MTUs, many segments) into one receive. */
static void rc_large_send(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	enum { LEN = 200000 };
	rv_sge r, s;
	rv_wc wc;

	r = conf_sge(&p->b.buf, 7, LEN + 100);
	conf_post_recv(p->b.qp, 1, &r, 1);
	s = conf_sge(&p->a.buf, 3, LEN);
	assert_int_equal(rv_qp_send(p->a.qp, &s, 2), 0);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, LEN);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(p->b.buf.p + 7, p->a.buf.p + 3, LEN);
	conf_buf_check(&p->b.buf, 7, 7 + LEN);
}

/* sq_sig_all 0: only the WRs with RV_SEND_SIGNALED complete; the
 * unsignalled ones before them did their work all the same. */
static void rc_selective_signalling(void)
{
	struct conf_opts o = {.sq_sig_selective = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_send_wr w[4];
	rv_sge g[4];

	for (int i = 0; i < 4; i++) {
		g[i] = conf_sge(&p->a.buf, (size_t)i * 1000, 100);
		w[i] = wr_of((uint64_t)i + 1, RV_WR_RDMA_WRITE, &g[i], 1, RV_SEND_NO_INLINE);
		w[i].remote_addr = conf_addr(&p->b.buf, (size_t)i * 500);
		w[i].rkey = rv_mr_rkey(p->b.buf.mr);
		if (i < 3)
			w[i].send_flags &= ~(uint32_t)RV_SEND_SIGNALED;
	}
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 4, NULL), 0);
	conf_expect(p->a.cq, 4, RV_WC_SUCCESS);
	conf_expect_none(p->a.cq, 20);
	for (int i = 0; i < 4; i++)
		assert_memory_equal(p->b.buf.p + i * 500, p->a.buf.p + i * 1000, 100);
	{
		struct conf_range r[] = {{0, 100}, {500, 600}, {1000, 1100}, {1500, 1600}};
		conf_buf_check_except(&p->b.buf, r, 4);
	}
}

/* Selective signalling as a QP policy (rv_qp_set_signal_every): in a batch
 * of 10 with n = 4, the 4th, the 8th and the last complete; every WR did its
 * work; rv_qp_send_outstanding() counts down to 0 as they are polled. */
static void rc_signal_every_policy(void)
{
	struct conf_opts o = {.sq_sig_selective = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_send_wr w[10];
	rv_sge g[10];
	int rc = rv_qp_set_signal_every(p->a.qp, 4);

	if (rc == -EOPNOTSUPP)
		conf_skip("rv_qp_set_signal_every: %s", rv_error_last());
	assert_int_equal(rc, 0);
	for (int i = 0; i < 10; i++) {
		g[i] = conf_sge(&p->a.buf, (size_t)i * 100, 100);
		w[i] = wr_of((uint64_t)i + 1, RV_WR_RDMA_WRITE, &g[i], 1, RV_SEND_NO_INLINE);
		w[i].send_flags &= ~(uint32_t)RV_SEND_SIGNALED;
		w[i].remote_addr = conf_addr(&p->b.buf, (size_t)i * 100);
		w[i].rkey = rv_mr_rkey(p->b.buf.mr);
	}
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 10, NULL), 0);
	assert_true(rv_qp_send_outstanding(p->a.qp) > 0);
	conf_expect(p->a.cq, 4, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 8, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 10, RV_WC_SUCCESS);
	conf_expect_none(p->a.cq, 20);
	assert_int_equal(rv_qp_send_outstanding(p->a.qp), 0);
	assert_memory_equal(p->b.buf.p, p->a.buf.p, 1000);
	conf_buf_check(&p->b.buf, 0, 1000);
}

/* The policy never lets unsignalled work overflow the send queue: a batch
 * larger than the queue posts what fits, signals the last of it and
 * returns -ENOMEM; polling brings the outstanding count back to 0. */
static void rc_signal_every_policy_never_overflows_the_queue(void)
{
	struct conf_opts o = {.sq_sig_selective = true, .no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	uint32_t depth = p->a.cap.max_send_wr;
	rv_send_wr *w;
	rv_endpoint ea, eb;
	rv_sge g = conf_sge(&p->a.buf, 0, 8);
	size_t posted = 0;
	int rc = rv_qp_set_signal_every(p->a.qp, depth);

	if (rc == -EOPNOTSUPP)
		conf_skip("rv_qp_set_signal_every: %s", rv_error_last());
	assert_int_equal(rc, 0);
	w = calloc(depth + 5, sizeof(*w));
	assert_non_null(w);
	/* A connected, B not yet: nothing completes while A posts. */
	assert_int_equal(rv_qp_endpoint(p->a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(p->b.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(p->a.qp, &eb), 0);
	for (uint32_t i = 0; i < depth + 5; i++) {
		w[i] = wr_of(i, RV_WR_RDMA_WRITE, &g, 1, RV_SEND_NO_INLINE);
		w[i].send_flags &= ~(uint32_t)RV_SEND_SIGNALED;
		w[i].remote_addr = conf_addr(&p->b.buf, 0);
		w[i].rkey = rv_mr_rkey(p->b.buf.mr);
	}
	rc = rv_qp_post_send(p->a.qp, w, depth + 5, &posted);
	free(w);
	assert_int_equal(rc, -ENOMEM);
	assert_int_equal(posted, depth);
	assert_int_equal(rv_qp_send_outstanding(p->a.qp), (int)depth);
	assert_int_equal(rv_qp_connect(p->b.qp, &ea), 0);
	conf_expect(p->a.cq, depth - 1, RV_WC_SUCCESS); /* the last that fit, signalled */
	conf_expect_none(p->a.cq, 20);
	assert_int_equal(rv_qp_send_outstanding(p->a.qp), 0);
	conf_buf_check(&p->b.buf, 0, 8);
}

static void rc_sends_complete_in_order(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	enum { N = 100 };
	rv_sge g;

	for (uint64_t i = 0; i < N; i++) {
		g = conf_sge(&p->b.buf, i * 64, 64);
		conf_post_recv(p->b.qp, 1000 + i, &g, 1);
	}
	for (uint64_t i = 0; i < N; i++) {
		g = conf_sge(&p->a.buf, i * 100, 64);
		assert_int_equal(rv_qp_send(p->a.qp, &g, i), 0);
		if (i % 32 == 31) /* keep the send queue from overflowing */
			for (uint64_t j = i - 31; j <= i; j++)
				conf_expect(p->a.cq, j, RV_WC_SUCCESS);
	}
	for (uint64_t j = N - N % 32; j < N; j++)
		conf_expect(p->a.cq, j, RV_WC_SUCCESS);
	for (uint64_t i = 0; i < N; i++) {
		rv_wc wc = conf_poll(p->b.cq);
		assert_int_equal(wc.wr_id, 1000 + i);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_memory_equal(p->b.buf.p + i * 64, p->a.buf.p + i * 100, 64);
	}
	conf_buf_check(&p->b.buf, 0, N * 64);
}

const struct conf_case conf_rc_cases[] = {
	{"RC SEND, 3 SGEs into a receive of 2", rc_send_scatter_gather},
	{"UC SEND, 3 SGEs into a receive of 2", uc_send_scatter_gather},
	{"RC RDMA WRITE and READ, 3 SGEs, 300 bytes", rc_write_read_small},
	{"RC RDMA WRITE and READ, 3 SGEs, 150000 bytes", rc_write_read_many_mtus},
	{"UC RDMA WRITE, 3 SGEs", uc_write},
	{"RC inline chosen automatically", rc_inline_automatic},
	{"RC RV_SEND_INLINE up to max_inline_data, refused beyond", rc_inline_explicit_and_too_long},
	{"RC CQ events through a completion channel", rc_cq_events_through_a_channel},
	{"RC solicited event", rc_solicited_event},
	{"RC fence: a fenced WRITE after a READ", rc_fence_orders_a_write_after_a_read},
	{"RC 100 SENDs complete in order", rc_sends_complete_in_order},
	{"RC zero-length SEND and RDMA WRITE", rc_zero_length_send_and_write},
	{"RC SEND of 200000 bytes into one receive", rc_large_send},
	{"RC selective signalling (sq_sig_all 0)", rc_selective_signalling},
	{"RC signalling policy: every 4th and the last of a batch", rc_signal_every_policy},
	{"RC signalling policy never overflows the send queue", rc_signal_every_policy_never_overflows_the_queue},
	CONF_END,
};
