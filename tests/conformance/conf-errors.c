/*
 * Conformance: every error status a program can provoke on purpose, with
 * the status on the WR that caused it, the later WRs flushed, and not one
 * byte written outside what the operation was allowed to write (the guards
 * and the rest of every buffer keep their pattern).
 *
 * Statuses a device does not produce (for example RNR retry exceeded on a
 * device that only retries forever) skip with the reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf-harness.h"

static rv_send_wr wr_of(uint64_t id, uint32_t opcode, const rv_sge *sg, uint32_t n)
{
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = opcode;
	w.sg_list = sg;
	w.num_sge = n;
	w.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	return w;
}

static void expect_err_state(rv_qp *qp)
{
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_ERR);
}

/* A SEND longer than the receive: the receiver's WR completes with a local
 * length error, the sender's with remote invalid request; both QPs go to
 * ERR and flush. The receive buffer may hold part of the message, nothing
 * beyond it. */
static void send_longer_than_the_receive(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_sge r, s;

	r = conf_sge(&p->b.buf, 100, 10);
	conf_post_recv(p->b.qp, 1, &r, 1);
	conf_post_recv(p->b.qp, 2, &r, 1);
	s = conf_sge(&p->a.buf, 0, 100);
	assert_int_equal(rv_qp_send(p->a.qp, &s, 3), 0);
	assert_int_equal(rv_qp_send(p->a.qp, &s, 4), 0);
	conf_expect(p->b.cq, 1, RV_WC_LOC_LEN_ERR);
	conf_expect(p->b.cq, 2, RV_WC_WR_FLUSH_ERR);
	conf_expect(p->a.cq, 3, RV_WC_REM_INV_REQ_ERR);
	conf_expect(p->a.cq, 4, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	expect_err_state(p->b.qp);
	conf_buf_check(&p->b.buf, 100, 110);
	conf_buf_check(&p->a.buf, 0, 0);
}

/* A bad lkey in a send SGE: local protection error on that WR, nothing sent. */
static void bad_lkey(uint32_t opcode)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w[2];
	rv_sge bad, ok, r;

	r = conf_sge(&p->b.buf, 0, 64);
	conf_post_recv(p->b.qp, 1, &r, 1);
	bad = conf_sge(&p->a.buf, 0, 32);
	bad.lkey ^= 0x5a5a00;
	ok = conf_sge(&p->a.buf, 0, 32);
	w[0] = wr_of(2, opcode, &bad, 1);
	w[0].remote_addr = conf_addr(&p->b.buf, 4096);
	w[0].rkey = rv_mr_rkey(p->b.buf.mr);
	w[1] = wr_of(3, RV_WR_SEND, &ok, 1);
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 2, NULL), 0);
	conf_expect(p->a.cq, 2, opcode == RV_WR_RDMA_READ ? RV_WC_LOC_PROT_ERR : RV_WC_LOC_PROT_ERR);
	conf_expect(p->a.cq, 3, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	conf_buf_check(&p->a.buf, 0, 0);
	/* The receiver saw nothing of the bad WR (its receive may flush later
	 * when the connection goes down, or stay posted: not checked). */
	conf_buf_check(&p->b.buf, 0, 0);
}

static void bad_lkey_send(void)
{
	bad_lkey(RV_WR_SEND);
}

static void bad_lkey_write(void)
{
	bad_lkey(RV_WR_RDMA_WRITE);
}

static void bad_lkey_read_sink(void)
{
	bad_lkey(RV_WR_RDMA_READ);
}

/* One remote access violation on B's buffer: a good WRITE before it
 * succeeds, the bad WR completes with remote access error, the SEND after it
 * flushes, both QPs end in ERR, and B's buffer keeps every byte it had
 * outside what the good WRITE wrote. */
struct violation {
	uint32_t b_access;   /* B's buffer */
	uint32_t opcode;     /* RDMA WRITE or READ */
	int64_t off;         /* from B's buffer */
	uint32_t len;
	uint32_t rkey_xor;
	bool other_pd;       /* the target MR belongs to another PD of B's context */
};

static void remote_violation(const struct violation *v)
{
	struct conf_opts o = {.b_access = v->b_access};
	struct conf_pair *p = conf_pair_open(&o);
	struct conf_buf *target = &p->b.buf;
	rv_send_wr w[3];
	rv_sge bad, ok, r;
	bool good_write = v->b_access & RV_ACCESS_REMOTE_WRITE && !v->other_pd;

	if (v->other_pd) {
		rv_pd *pd2;
		assert_int_equal(rv_pd_new(p->b.ctx, NULL, &pd2), 0);
		target = conf_buf_new(pd2, 65536, RV_ACCESS_ALL_REMOTE);
		rv_pd_unref(pd2); /* the harness holds it for the buffer */
	}
	r = conf_sge(&p->b.buf, 8192, 64);
	conf_post_recv(p->b.qp, 100, &r, 1);
	bad = conf_sge(&p->a.buf, 0, v->len);
	ok = conf_sge(&p->a.buf, 0, 8);
	memset(w, 0, sizeof(w));
	w[0] = wr_of(1, RV_WR_RDMA_WRITE, &ok, 1);
	w[0].remote_addr = conf_addr(&p->b.buf, 4096);
	w[0].rkey = rv_mr_rkey(p->b.buf.mr);
	w[1] = wr_of(2, v->opcode, &bad, 1);
	w[1].remote_addr = conf_addr(target, 0) + (uint64_t)v->off;
	w[1].rkey = rv_mr_rkey(target->mr) ^ v->rkey_xor;
	w[2] = wr_of(3, RV_WR_SEND, &ok, 1);
	if (good_write) {
		assert_int_equal(rv_qp_post_send(p->a.qp, w, 3, NULL), 0);
		conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	} else {
		assert_int_equal(rv_qp_post_send(p->a.qp, w + 1, 2, NULL), 0);
	}
	conf_expect(p->a.cq, 2, RV_WC_REM_ACCESS_ERR);
	conf_expect(p->a.cq, 3, RV_WC_WR_FLUSH_ERR);
	/* The target's receive flushes: no completion for the WRITE/READ itself. */
	conf_expect(p->b.cq, 100, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	expect_err_state(p->b.qp);
	if (good_write)
		conf_buf_check(&p->b.buf, 4096, 4096 + 8);
	else
		conf_buf_check(&p->b.buf, 0, 0);
	if (target != &p->b.buf)
		conf_buf_check(target, 0, 0);
	/* A failed READ wrote nothing into its sink either. */
	conf_buf_check(&p->a.buf, 0, 0);
}

static void remote_access_bad_rkey_write(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, 0, 16, 0x5a5a00, false};
	remote_violation(&v);
}

static void remote_access_bad_rkey_read(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_READ, 0, 16, 0x5a5a00, false};
	remote_violation(&v);
}

static void remote_access_write_beyond_the_end(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, CONF_BUF_LEN - 8, 16, 0, false};
	remote_violation(&v);
}

static void remote_access_read_beyond_the_end(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_READ, CONF_BUF_LEN - 8, 16, 0, false};
	remote_violation(&v);
}

static void remote_access_write_before_the_start(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, -8, 16, 0, false};
	remote_violation(&v);
}

static void remote_access_write_without_remote_write(void)
{
	struct violation v = {RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_READ, RV_WR_RDMA_WRITE, 0, 16, 0, false};
	remote_violation(&v);
}

static void remote_access_read_without_remote_read(void)
{
	struct violation v = {RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, RV_WR_RDMA_READ, 0, 16, 0, false};
	remote_violation(&v);
}

static void remote_access_write_to_an_mr_of_another_pd(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_WRITE, 0, 16, 0, true};
	remote_violation(&v);
}

static void remote_access_read_from_an_mr_of_another_pd(void)
{
	struct violation v = {RV_ACCESS_ALL_REMOTE, RV_WR_RDMA_READ, 0, 16, 0, true};
	remote_violation(&v);
}

/* B's QP allows no remote access (qp_access_flags at INIT): a WRITE into
 * B's fully open MR fails with remote invalid request, the status the verbs
 * documentation gives for an operation the remote QP's qp_access_flags do
 * not enable (ibv_poll_cq(3), IBV_WC_REM_INV_REQ_ERR; remote access error is
 * an MR's protection), and writes nothing. */
static void remote_access_qp_without_remote_write(void)
{
	struct conf_opts o = {.b_qp_access = RV_ACCESS_LOCAL_WRITE};
	struct conf_pair *p = conf_pair_open(&o);
	rv_sge g = conf_sge(&p->a.buf, 0, 16);

	assert_int_equal(rv_qp_write(p->a.qp, &g, conf_addr(&p->b.buf, 0), rv_mr_rkey(p->b.buf.mr), 1), 0);
	conf_expect(p->a.cq, 1, RV_WC_REM_INV_REQ_ERR);
	expect_err_state(p->a.qp);
	conf_buf_check(&p->b.buf, 0, 0);
}

/* Remote invalid request: an RDMA READ to a responder that accepts no
 * READ (max_dest_rd_atomic 0) fails with remote invalid request; nothing is
 * placed in the sink. */
static void remote_invalid_request_read_to_a_qp_without_read_resources(void)
{
	struct conf_opts o = {.no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_qp_attr rts;
	rv_send_wr w[2];
	rv_sge s;

	memset(&rts, 0, sizeof(rts));
	rts.mask = RV_QP_MAX_DEST_RD_ATOMIC;
	rts.max_dest_rd_atomic = 0;
	conf_connect(&p->a, &p->b, &rts);
	s = conf_sge(&p->a.buf, 0, 64);
	w[0] = wr_of(1, RV_WR_RDMA_READ, &s, 1);
	w[0].remote_addr = conf_addr(&p->b.buf, 0);
	w[0].rkey = rv_mr_rkey(p->b.buf.mr);
	w[1] = wr_of(2, RV_WR_SEND, &s, 1);
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 2, NULL), 0);
	conf_expect(p->a.cq, 1, RV_WC_REM_INV_REQ_ERR);
	conf_expect(p->a.cq, 2, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	conf_buf_check(&p->a.buf, 0, 0);
	conf_buf_check(&p->b.buf, 0, 0);
}

/* Moving a QP to ERR flushes its receive queue and every WR posted after. */
static void flush_after_the_qp_goes_to_error(void)
{
	struct conf_opts o = {.sq_sig_selective = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_qp_attr a;
	rv_send_wr w[2];
	rv_sge r, s;

	for (uint64_t i = 0; i < 4; i++) {
		r = conf_sge(&p->a.buf, i * 64, 64);
		conf_post_recv(p->a.qp, 10 + i, &r, 1);
	}
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_STATE;
	a.qp_state = RV_QPS_ERR;
	assert_int_equal(rv_qp_modify(p->a.qp, &a), 0);
	for (uint64_t i = 0; i < 4; i++)
		conf_expect(p->a.cq, 10 + i, RV_WC_WR_FLUSH_ERR);
	s = conf_sge(&p->a.buf, 0, 16);
	w[0] = wr_of(20, RV_WR_SEND, &s, 1);
	w[1] = wr_of(21, RV_WR_RDMA_WRITE, &s, 1);
	w[1].send_flags &= ~(uint32_t)RV_SEND_SIGNALED; /* flushed WRs complete, signalled or not */
	w[1].remote_addr = conf_addr(&p->b.buf, 0);
	w[1].rkey = rv_mr_rkey(p->b.buf.mr);
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 2, NULL), 0);
	conf_expect(p->a.cq, 20, RV_WC_WR_FLUSH_ERR);
	conf_expect(p->a.cq, 21, RV_WC_WR_FLUSH_ERR);
	r = conf_sge(&p->a.buf, 0, 64);
	conf_post_recv(p->a.qp, 30, &r, 1);
	if (conf_quirk("recv-in-err-not-flushed"))
		conf_expect_none(p->a.cq, 1000);
	else
		conf_expect(p->a.cq, 30, RV_WC_WR_FLUSH_ERR);
	conf_buf_check(&p->a.buf, 0, 0);
	conf_buf_check(&p->b.buf, 0, 0);
}

/* RNR: a SEND to a QP with no receive posted, with rnr_retry 0, fails with
 * RNR retry exceeded. A device that waits forever whatever rnr_retry says
 * skips. */
static void rnr_retry_exceeded(void)
{
	struct conf_opts o = {.no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_qp_attr rts;
	rv_sge s;
	rv_wc wc;
	int n = 0;

	memset(&rts, 0, sizeof(rts));
	rts.mask = RV_QP_RNR_RETRY | RV_QP_MIN_RNR_TIMER;
	rts.rnr_retry = 0;
	rts.min_rnr_timer = 1; /* 0.01 ms */
	conf_connect(&p->a, &p->b, &rts);
	s = conf_sge(&p->a.buf, 0, 16);
	assert_int_equal(rv_qp_send(p->a.qp, &s, 1), 0);
	/* The only wait in the suite that decides something: with rnr_retry 0
	 * the first RNR NAK ends the SEND; 3 s is far beyond any such delay. */
	for (int i = 0; i < 3000 && (n = rv_cq_poll(p->a.cq, &wc, 1)) == 0; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	if (n == 0)
		conf_skip("a SEND to a QP without receives still waits after 3 s with rnr_retry 0: the device retries "
			  "forever whatever rnr_retry says");
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_RNR_RETRY_EXC_ERR);
	expect_err_state(p->a.qp);
	conf_buf_check(&p->b.buf, 0, 0);
}

/* Transport retry exceeded: the peer goes away (its QP, or in the
 * two-context arrangement its whole context) while a SEND waits for it. */
static void transport_retry_exceeded_peer_gone(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_sge s, r;

	/* The connection is up: one SEND round trip. */
	r = conf_sge(&p->b.buf, 0, 64);
	conf_post_recv(p->b.qp, 1, &r, 1);
	s = conf_sge(&p->a.buf, 0, 16);
	assert_int_equal(rv_qp_send(p->a.qp, &s, 2), 0);
	conf_expect(p->b.cq, 1, RV_WC_SUCCESS);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	/* A SEND that B will never receive (no receive posted), then B goes. */
	r = conf_sge(&p->a.buf, 4096, 64);
	conf_post_recv(p->a.qp, 3, &r, 1);
	assert_int_equal(rv_qp_send(p->a.qp, &s, 4), 0);
	if (conf_arrangement() == CONF_TWO_CONTEXTS)
		assert_int_equal(rv_context_close(p->b.ctx), 0);
	else
		assert_int_equal(rv_qp_close(p->b.qp), 0);
	if (conf_quirk("peer-gone-no-retry-exceeded")) {
		/* The device's difference: the SEND stays outstanding. */
		conf_expect_none(p->a.cq, 3000);
		assert_int_equal(rv_qp_state_of(p->a.qp), RV_QPS_RTS);
		conf_buf_check(&p->a.buf, 0, 0);
		conf_buf_check(&p->b.buf, 0, 16);
		return;
	}
	conf_expect(p->a.cq, 4, RV_WC_RETRY_EXC_ERR);
	conf_expect(p->a.cq, 3, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	conf_buf_check(&p->a.buf, 0, 0);
	conf_buf_check(&p->b.buf, 0, 16);
}

/* Errors at post time: a WR with more SGEs than the QP has is -EINVAL, a
 * full send queue is -ENOMEM; *n_posted names the failing WR, and the WRs
 * before it are posted and complete once the peer is there. */
static void post_time_errors(void)
{
	struct conf_opts o = {.no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	uint32_t depth = p->a.cap.max_send_wr;
	rv_send_wr *w = calloc(depth + 1, sizeof(*w));
	rv_sge g[8];
	rv_endpoint ea, eb;
	size_t posted = 12345;

	assert_non_null(w);
	if (depth + 1 > 256) {
		free(w);
		conf_skip("the send queue has %u entries, more than the CQ's 256", depth);
	}
	/* A is connected, B not yet: nothing A posts can complete meanwhile. */
	assert_int_equal(rv_qp_endpoint(p->a.qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(p->b.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(p->a.qp, &eb), 0);
	for (int i = 0; i < 8; i++)
		g[i] = conf_sge(&p->a.buf, (size_t)i * 8, 8);
	if (p->a.cap.max_send_sge < 8) {
		w[0] = wr_of(1, RV_WR_SEND, g, p->a.cap.max_send_sge + 1);
		assert_int_equal(rv_qp_post_send(p->a.qp, w, 1, &posted), -EINVAL);
		assert_int_equal(posted, 0);
	}
	for (uint32_t i = 0; i <= depth; i++) {
		w[i] = wr_of(i, RV_WR_RDMA_WRITE, &g[0], 1);
		w[i].remote_addr = conf_addr(&p->b.buf, 0);
		w[i].rkey = rv_mr_rkey(p->b.buf.mr);
	}
	if (conf_quirk("sq-holds-more-than-max-send-wr")) {
		/* The device takes one WR past the depth it reports: all complete. */
		assert_int_equal(rv_qp_post_send(p->a.qp, w, depth + 1, &posted), 0);
		assert_int_equal(posted, depth + 1);
		depth++;
	} else {
		assert_int_equal(rv_qp_post_send(p->a.qp, w, depth + 1, &posted), -ENOMEM);
		assert_int_equal(posted, depth);
	}
	assert_int_equal(rv_qp_connect(p->b.qp, &ea), 0);
	for (uint32_t i = 0; i < depth; i++)
		conf_expect(p->a.cq, i, RV_WC_SUCCESS);
	conf_expect_none(p->a.cq, 20);
	free(w);
	conf_buf_check(&p->b.buf, 0, 8);
}

/* Wait for the CQ error event naming cq (others are acknowledged); fails
 * after CONF_WAIT_MS (a hang guard). */
static void wait_cq_err(rv_context *ctx, rv_cq *cq)
{
	for (int waited = 0; waited < CONF_WAIT_MS; waited += 100) {
		rv_async_event ev;
		int rc = rv_context_get_async_event(ctx, &ev, 100);
		bool found;

		if (rc == -ETIMEDOUT)
			continue;
		if (rc < 0)
			fail_msg("rv_context_get_async_event: %d %s", rc, rv_error_last());
		found = ev.type == RV_EVENT_CQ_ERR && ev.cq == cq;
		rv_async_event_ack(&ev);
		if (found)
			return;
	}
	fail_msg("no CQ_ERR event within %d ms", CONF_WAIT_MS);
}

/* A CQ too small for the completions it gets: rv_cq_poll returns what it
 * holds, then -EOVERFLOW, and the QP using it is in ERR (an error, never a
 * silent loss). */
static void cq_overflow_is_an_error(void)
{
	struct conf_opts o = {.no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = 4};
	rv_qp_init_attr qa;
	rv_endpoint ea, eb;
	rv_cq *small;
	rv_qp *qp;
	rv_sge g;
	rv_wc wc[64];
	uint32_t size;
	int n, got = 0;

	assert_int_equal(rv_cq_new(p->a.ctx, &ca, &small), 0);
	conf_adopt_cq(small);
	size = rv_cq_size(small);
	assert_true(size >= 4 && size <= 60);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = small;
	qa.cap.max_send_wr = size + 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	assert_int_equal(rv_qp_new(p->a.pd, &qa, &qp), 0);
	conf_adopt_qp(qp);
	assert_int_equal(rv_qp_endpoint(qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(p->b.qp, &eb), 0);
	assert_int_equal(rv_qp_connect(qp, &eb), 0);
	assert_int_equal(rv_qp_connect(p->b.qp, &ea), 0);
	g = conf_sge(&p->a.buf, 0, 64);
	for (uint32_t i = 0; i < size + 4; i++)
		assert_int_equal(rv_qp_write(qp, &g, conf_addr(&p->b.buf, 0), rv_mr_rkey(p->b.buf.mr), i), 0);
	if (conf_quirk("cq-overflow-qp-stays-rts")) {
		/* The device's difference: the CQ error event says it, the QP
		 * stays in RTS. */
		wait_cq_err(p->a.ctx, small);
		assert_int_equal(rv_qp_state_of(qp), RV_QPS_RTS);
	} else {
		/* Hang guard only: the overflow comes once the completions are in. */
		for (int i = 0; i < CONF_WAIT_MS && rv_qp_state_of(qp) != RV_QPS_ERR; i++) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
		assert_int_equal(rv_qp_state_of(qp), RV_QPS_ERR);
	}
	while ((n = rv_cq_poll(small, wc, 64)) > 0)
		got += n;
	assert_int_equal(n, -EOVERFLOW);
	assert_true(got <= (int)size);
	conf_buf_check(&p->b.buf, 0, 64);
}

/* Inject a fault on the frames A's QP sends; only the software device can
 * (a NIC needs a cable pulled), so other devices skip. */
static void inject_or_skip(struct conf_pair *p, rv_soft_fault_kind kind)
{
	rv_sge g = conf_sge(&p->a.buf, 0, 8);
	int rc;

	/* First a WRITE that completes: the connection is up and A has no frame
	 * of its own pending (the connection's first READ, a confirmation), so
	 * the fault hits the case's own WR. */
	assert_int_equal(rv_qp_write(p->a.qp, &g, conf_addr(&p->b.buf, 0), rv_mr_rkey(p->b.buf.mr), 999), 0);
	conf_expect(p->a.cq, 999, RV_WC_SUCCESS);
	rc = rv_soft_fault_inject(p->a.ctx, p->a.qp, kind, 1, 0);

	if (rc == -EOPNOTSUPP)
		conf_skip("losing or corrupting frames on purpose needs the software device's fault injection: %s",
			  rv_error_last());
	assert_int_equal(rc, 0);
}

/* Transport retry exceeded on a live peer: every frame lost, the QP's
 * timeout 10 (4.2 ms; soft0 waits at least 2 s) and retry_cnt 1 run out;
 * the first WR fails, the next flushes, the QP goes to ERR, B's buffer is
 * untouched. */
static void transport_retry_exceeded_frames_lost(void)
{
	struct conf_opts o = {.no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_qp_attr rts;
	rv_send_wr w[2];
	rv_sge s;

	memset(&rts, 0, sizeof(rts));
	rts.mask = RV_QP_TIMEOUT | RV_QP_RETRY_CNT;
	rts.timeout = 10;
	rts.retry_cnt = 1;
	conf_connect(&p->a, &p->b, &rts);
	inject_or_skip(p, RV_SOFT_FAULT_DROP);
	s = conf_sge(&p->a.buf, 0, 4096);
	w[0] = wr_of(1, RV_WR_RDMA_WRITE, &s, 1);
	w[0].remote_addr = conf_addr(&p->b.buf, 0);
	w[0].rkey = rv_mr_rkey(p->b.buf.mr);
	w[1] = w[0];
	w[1].wr_id = 2;
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 2, NULL), 0);
	conf_expect(p->a.cq, 1, RV_WC_RETRY_EXC_ERR);
	conf_expect(p->a.cq, 2, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	conf_buf_check(&p->b.buf, 0, 8); /* the warm-up WRITE, nothing more */
}

/* Remote operation error: a frame corrupted on the way fails the receiver's
 * check; the sender's WR completes with remote operation error. */
static void remote_operation_error_corrupted_frame(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_send_wr w[2];
	rv_sge s, r;

	r = conf_sge(&p->b.buf, 0, 8192);
	conf_post_recv(p->b.qp, 1, &r, 1);
	inject_or_skip(p, RV_SOFT_FAULT_CORRUPT);
	s = conf_sge(&p->a.buf, 0, 1000);
	w[0] = wr_of(2, RV_WR_SEND, &s, 1);
	w[1] = wr_of(3, RV_WR_SEND, &s, 1);
	assert_int_equal(rv_qp_post_send(p->a.qp, w, 2, NULL), 0);
	conf_expect(p->a.cq, 2, RV_WC_REM_OP_ERR);
	conf_expect(p->a.cq, 3, RV_WC_WR_FLUSH_ERR);
	conf_expect(p->b.cq, 1, RV_WC_WR_FLUSH_ERR);
	expect_err_state(p->a.qp);
	expect_err_state(p->b.qp);
	/* The corrupted frame was refused before placement (the warm-up WRITE
	 * wrote [0, 8)). */
	conf_buf_check(&p->b.buf, 0, 8);
}

const struct conf_case conf_errors_cases[] = {
	{"local length error and remote invalid request: SEND longer than the receive", send_longer_than_the_receive},
	{"local protection error: SEND with a bad lkey", bad_lkey_send},
	{"local protection error: RDMA WRITE with a bad lkey", bad_lkey_write},
	{"local protection error: RDMA READ into a bad lkey", bad_lkey_read_sink},
	{"remote access error: RDMA WRITE with a bad rkey", remote_access_bad_rkey_write},
	{"remote access error: RDMA READ with a bad rkey", remote_access_bad_rkey_read},
	{"remote access error: RDMA WRITE beyond the end of the MR", remote_access_write_beyond_the_end},
	{"remote access error: RDMA READ beyond the end of the MR", remote_access_read_beyond_the_end},
	{"remote access error: RDMA WRITE before the start of the MR", remote_access_write_before_the_start},
	{"remote access error: RDMA WRITE without REMOTE_WRITE", remote_access_write_without_remote_write},
	{"remote access error: RDMA READ without REMOTE_READ", remote_access_read_without_remote_read},
	{"remote access error: RDMA WRITE to an MR of another PD", remote_access_write_to_an_mr_of_another_pd},
	{"remote access error: RDMA READ from an MR of another PD", remote_access_read_from_an_mr_of_another_pd},
	{"remote invalid request: RDMA WRITE to a QP without remote write access", remote_access_qp_without_remote_write},
	{"remote invalid request: RDMA READ to a QP with max_dest_rd_atomic 0",
	 remote_invalid_request_read_to_a_qp_without_read_resources},
	{"WR flush error after the QP goes to ERR", flush_after_the_qp_goes_to_error},
	{"RNR retry exceeded (rnr_retry 0)", rnr_retry_exceeded},
	{"transport retry exceeded: the peer goes away", transport_retry_exceeded_peer_gone},
	{"transport retry exceeded: frames lost (timeout 10, retry_cnt 1)", transport_retry_exceeded_frames_lost},
	{"remote operation error: a corrupted frame", remote_operation_error_corrupted_frame},
	{"CQ overflow: rv_cq_poll returns -EOVERFLOW, the QP is in ERR", cq_overflow_is_an_error},
	{"post-time errors: too many SGEs, a full send queue", post_time_errors},
	CONF_END,
};
