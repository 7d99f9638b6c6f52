/* The two-context soft0 setup of soft-pair.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "soft-pair.h"
const struct conn_opts DEFAULTS = {-1, -1, -1, -1, 0};

rv_context *open_ctx(uint32_t soft_flags)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;
	rv_context_attr a = {.mask = RV_CONTEXT_ATTR_SOFT_FLAGS, .soft_flags = soft_flags};

	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &a, &ctx), 0);
	rv_device_unref(dev);
	return ctx;
}

rv_qp *side_qp_new(struct side *s)
{
	rv_qp_init_attr qa;
	rv_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	assert_int_equal(rv_qp_new(s->pd, &qa, &qp), 0);
	return qp;
}

void side_open(struct side *s, uint32_t soft_flags, uint32_t mr_access)
{
	memset(s, 0, sizeof(*s));
	s->ctx = open_ctx(soft_flags);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	s->qp = side_qp_new(s);
	assert_int_equal(rv_mr_alloc(s->pd, BUF, mr_access, NULL, &s->mr), 0);
	s->buf = rv_mr_addr(s->mr);
	memset(s->buf, 0, BUF);
}

void side_close(struct side *s)
{
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
}

/* INIT, RTR, RTS against peer with the attributes of o. */
void connect_one(struct side *s, const rv_endpoint *peer, const struct conn_opts *o)
{
	rv_qp_attr a;

	memset(&a, 0, sizeof(a));
	if (o->access) {
		a.mask = RV_QP_ACCESS_FLAGS;
		a.qp_access_flags = o->access;
	}
	assert_int_equal(rv_qp_to_init(s->qp, o->access ? &a : NULL), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	if (o->max_dest_rd_atomic >= 0) {
		a.mask |= RV_QP_MAX_DEST_RD_ATOMIC;
		a.max_dest_rd_atomic = (uint8_t)o->max_dest_rd_atomic;
	}
	if (o->min_rnr_timer >= 0) {
		a.mask |= RV_QP_MIN_RNR_TIMER;
		a.min_rnr_timer = (uint8_t)o->min_rnr_timer;
	}
	assert_int_equal(rv_qp_to_rtr(s->qp, &a), 0);
	memset(&a, 0, sizeof(a));
	if (o->max_rd_atomic >= 0) {
		a.mask |= RV_QP_MAX_QP_RD_ATOMIC;
		a.max_rd_atomic = (uint8_t)o->max_rd_atomic;
	}
	if (o->rnr_retry >= 0) {
		a.mask |= RV_QP_RNR_RETRY;
		a.rnr_retry = (uint8_t)o->rnr_retry;
	}
	assert_int_equal(rv_qp_to_rts(s->qp, &a), 0);
}

void connect_pair(struct side *a, const struct conn_opts *oa, struct side *b, const struct conn_opts *ob)
{
	rv_endpoint ea, eb;

	assert_int_equal(rv_qp_endpoint(a->qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b->qp, &eb), 0);
	connect_one(a, &eb, oa);
	connect_one(b, &ea, ob);
}

int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One completion within limit_ms (a hang guard, not a measurement). */
rv_wc poll_one_within(rv_cq *cq, int limit_ms)
{
	int64_t end = now_ms() + limit_ms;
	rv_wc wc;
	int n;

	memset(&wc, 0, sizeof(wc));
	while ((n = rv_cq_poll(cq, &wc, 1)) == 0 && now_ms() < end) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	if (n != 1)
		fail_msg("no completion within %d ms (rv_cq_poll returned %d: %s)", limit_ms, n, rv_error_last());
	return wc;
}

rv_wc poll_one(rv_cq *cq)
{
	return poll_one_within(cq, 20000);
}

rv_sge sge(struct side *s, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	return g;
}

void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 31 + (i >> 9));
}

/* Small numbered messages (MSG_SMALL bytes): message id's receive buffer is
 * slot id % 16 of s's first half, its send buffer the same slot of the second
 * half, its bytes a function of id. */
void post_recv_small(struct side *s, rv_qp *qp, uint64_t id)
{
	rv_sge g = sge(s, (id % 16) * MSG_SMALL, MSG_SMALL);
	rv_recv_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1};
	size_t n;

	assert_int_equal(rv_qp_post_recv(qp, &wr, 1, &n), 0);
}

void post_send_small(struct side *s, rv_qp *qp, uint64_t id)
{
	uint8_t *p = s->buf + BUF / 2 + (id % 16) * MSG_SMALL;
	rv_sge g = sge(s, BUF / 2 + (id % 16) * MSG_SMALL, MSG_SMALL);
	rv_send_wr wr = {.wr_id = id, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_SIGNALED};
	size_t n;

	for (uint32_t i = 0; i < MSG_SMALL; i++)
		p[i] = (uint8_t)(id * 7 + i);
	assert_int_equal(rv_qp_post_send(qp, &wr, 1, &n), 0);
}

void check_recv_small(struct side *s, rv_wc wc, uint64_t id)
{
	const uint8_t *p = s->buf + (id % 16) * MSG_SMALL;

	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.byte_len, MSG_SMALL);
	for (uint32_t i = 0; i < MSG_SMALL; i++)
		assert_int_equal(p[i], (uint8_t)(id * 7 + i));
}
