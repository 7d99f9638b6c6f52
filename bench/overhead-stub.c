/*
 * The provider stub for bench/overhead: libibverbs context ops that do no
 * work, in their own file so that the compiler cannot inline them into the
 * loops that call them (a real provider is a separate shared object).
 */
#include <string.h>

#include "overhead-stub.h"

static int stub_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return 0;
}

static int stub_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return 0;
}

static int stub_poll_empty(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return 0;
}

/* One successful completion per call: what a poll that finds work costs the
 * caller (the provider's own work is one struct copy). */
static const struct ibv_wc one_wc = {.wr_id = 1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RDMA_WRITE,
				     .qp_num = 1};

static int stub_poll_one(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	wc[0] = one_wc;
	return 1;
}

void stub_init(struct stub *s)
{
	memset(s, 0, sizeof(*s));
	s->ctx_empty.ops.post_send = stub_post_send;
	s->ctx_empty.ops.post_recv = stub_post_recv;
	s->ctx_empty.ops.poll_cq = stub_poll_empty;
	s->ctx_one.ops.poll_cq = stub_poll_one;
	s->qp.context = &s->ctx_empty;
	s->qp.qp_num = 1;
	s->qp.qp_type = IBV_QPT_RC;
	s->qp.state = IBV_QPS_RTS;
	s->cq_empty.context = &s->ctx_empty;
	s->cq_empty.cqe = 256;
	s->cq_one.context = &s->ctx_one;
	s->cq_one.cqe = 256;
}
