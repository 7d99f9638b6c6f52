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

/* What stub_post_send_seen saw: WRs over all calls, those with
 * IBV_SEND_INLINE, and those whose other fields differ from the first. */
static struct stub_seen seen;
static struct ibv_send_wr seen_first;

/* A post_send that records, for the check before the loops (not timed). */
static int stub_post_send_seen(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (seen.wrs++ == 0)
			seen_first = *wr;
		seen.inline_wrs += !!(wr->send_flags & IBV_SEND_INLINE);
		seen.other_wrs += wr->wr_id != seen_first.wr_id || wr->opcode != seen_first.opcode ||
				  wr->send_flags != seen_first.send_flags || wr->num_sge != 1 ||
				  wr->sg_list[0].addr != seen_first.sg_list[0].addr ||
				  wr->sg_list[0].length != seen_first.sg_list[0].length ||
				  wr->wr.rdma.remote_addr != seen_first.wr.rdma.remote_addr ||
				  wr->wr.rdma.rkey != seen_first.wr.rdma.rkey;
	}
	return 0;
}

struct stub_seen stub_record_sends(struct stub *s, bool on)
{
	struct stub_seen r = seen;

	s->ctx_empty.ops.post_send = on ? stub_post_send_seen : stub_post_send;
	memset(&seen, 0, sizeof(seen));
	return r;
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
