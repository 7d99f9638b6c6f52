/* The channel pair of channel-pair.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel-pair.h"

static rv_qp *new_qp(rv_pd *pd, rv_cq *cq)
{
	rv_qp_init_attr qa;
	rv_qp *qp = NULL;

	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	return qp;
}

void pair_open(struct pair *p)
{
	rv_device *dev = NULL;
	rv_cq_attr ca;
	rv_endpoint ea, eb;

	memset(p, 0, sizeof(*p));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &p->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(p->ctx, NULL, &p->pd), 0);
	assert_int_equal(rv_comp_channel_new(p->ctx, NULL, &p->ch), 0);
	assert_int_equal(rv_cq_new(p->ctx, NULL, &p->cq_a), 0);
	memset(&ca, 0, sizeof(ca));
	ca.mask = RV_CQ_ATTR_CHANNEL;
	ca.channel = p->ch;
	assert_int_equal(rv_cq_new(p->ctx, &ca, &p->cq_b), 0);
	p->qp_a = new_qp(p->pd, p->cq_a);
	p->qp_b = new_qp(p->pd, p->cq_b);
	assert_int_equal(rv_mr_alloc(p->pd, BUF, RV_ACCESS_LOCAL_WRITE, NULL, &p->mr_a), 0);
	assert_int_equal(rv_mr_alloc(p->pd, BUF, RV_ACCESS_LOCAL_WRITE, NULL, &p->mr_b), 0);
	assert_int_equal(rv_qp_endpoint(p->qp_a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(p->qp_b, &eb), 0);
	assert_int_equal(rv_qp_connect(p->qp_a, &eb), 0);
	assert_int_equal(rv_qp_connect(p->qp_b, &ea), 0);
}

void pair_close(struct pair *p)
{
	rv_qp_unref(p->qp_a);
	rv_qp_unref(p->qp_b);
	rv_mr_unref(p->mr_a);
	rv_mr_unref(p->mr_b);
	rv_cq_unref(p->cq_a);
	rv_cq_unref(p->cq_b);
	rv_comp_channel_unref(p->ch);
	rv_pd_unref(p->pd);
	assert_int_equal(rv_context_close(p->ctx), 0);
	rv_context_unref(p->ctx);
}

void pair_post_send(struct pair *p, uint64_t wr_id, uint32_t flags)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)rv_mr_addr(p->mr_a), .length = 64, .lkey = rv_mr_lkey(p->mr_a)};
	rv_send_wr wr;
	size_t n = 0;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = RV_WR_SEND;
	wr.send_flags = RV_SEND_SIGNALED | flags;
	assert_int_equal(rv_qp_post_send(p->qp_a, &wr, 1, &n), 0);
}

void pair_send_completion(struct pair *p, uint64_t wr_id)
{
	rv_wc wc;
	int rc = 0;

	for (int i = 0; i < 100000 && rc == 0; i++) {
		rc = rv_cq_poll(p->cq_a, &wc, 1);
		if (rc == 0)
			usleep(100);
	}
	assert_int_equal(rc, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
}
