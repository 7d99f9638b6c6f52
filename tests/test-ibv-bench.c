/*
 * What the ibv driver's data path costs over calling libibverbs directly,
 * measured against a provider that does nothing (ibv_post_send and
 * ibv_poll_cq are inline calls through ibv_context::ops, so a fake context
 * isolates the driver's own work: translation, chaining, batching).
 *
 * A benchmark, not a test: `meson test --benchmark --suite ibv`. Each figure
 * is the best of 25 runs, in nanoseconds per work request or completion.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "drivers/ibv/ibv-driver.h"
#include "drivers/ibv/translate.h"

#define N 2000000L
#define RUNS 25
#define BATCH 16

static volatile uint64_t sink;

static int nop_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	for (; wr; wr = wr->next)
		sink += wr->wr_id + wr->send_flags;
	return 0;
}

static int nop_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	for (int i = 0; i < n; i++) {
		wc[i].wr_id = (uint64_t)i;
		wc[i].status = IBV_WC_SUCCESS;
		wc[i].wc_flags = 0;
	}
	return n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ibv_context ictx;
static struct ibv_qp iqp;
static struct ibv_cq icq;
static struct rv_qp qp;
static struct rv_cq cq;
static rv_sge sge = { .addr = 0x1000, .length = 32, .lkey = 5 };

static void direct_post_one(void)
{
	for (long i = 0; i < N; i++) {
		struct ibv_send_wr w, *bad;

		memset(&w, 0, sizeof(w));
		w.wr_id = (uint64_t)i;
		w.sg_list = (struct ibv_sge *)&sge;
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		w.wr.rdma.remote_addr = 0x5000;
		w.wr.rdma.rkey = 9;
		ibv_post_send(&iqp, &w, &bad);
	}
}

static void driver_post_one(void)
{
	for (long i = 0; i < N; i++) {
		rv_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
				 .opcode = RV_WR_RDMA_WRITE, .send_flags = RV_SEND_SIGNALED,
				 .remote_addr = 0x5000, .rkey = 9 };
		size_t posted;

		rv_ibv_post_send(&qp, &w, 1, &posted);
	}
}

static void direct_post_batch(void)
{
	for (long i = 0; i < N / BATCH; i++) {
		struct ibv_send_wr w[BATCH], *bad;

		for (int k = 0; k < BATCH; k++) {
			w[k].wr_id = (uint64_t)k;
			w[k].next = k < BATCH - 1 ? &w[k + 1] : NULL;
			w[k].sg_list = (struct ibv_sge *)&sge;
			w[k].num_sge = 1;
			w[k].opcode = IBV_WR_RDMA_WRITE;
			w[k].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
			w[k].wr.rdma.remote_addr = 0x5000;
			w[k].wr.rdma.rkey = 9;
		}
		ibv_post_send(&iqp, w, &bad);
	}
}

static rv_send_wr batch[BATCH];

static void driver_post_batch(void)
{
	for (long i = 0; i < N / BATCH; i++) {
		size_t posted;

		rv_ibv_post_send(&qp, batch, BATCH, &posted);
	}
}

static void direct_poll(void)
{
	struct ibv_wc wc[BATCH];

	for (long i = 0; i < N / BATCH; i++) {
		ibv_poll_cq(&icq, BATCH, wc);
		sink += wc[3].wr_id;
	}
}

static void driver_poll(void)
{
	rv_wc wc[BATCH];

	for (long i = 0; i < N / BATCH; i++) {
		rv_ibv_cq_poll(&cq, wc, BATCH);
		sink += wc[3].wr_id;
	}
}

static void measure(const char *label, void (*fn)(void))
{
	double best = 1e9;

	for (int r = 0; r < RUNS; r++) {
		double t0 = now(), dt;

		fn();
		dt = now() - t0;
		if (dt < best)
			best = dt;
	}
	printf("%-48s %6.2f ns\n", label, best * 1e9 / (double)N);
}

int main(void)
{
	ictx.ops.post_send = nop_post_send;
	ictx.ops.poll_cq = nop_poll_cq;
	iqp.context = &ictx;
	icq.context = &ictx;
	qp.drv_qp = &iqp;
	qp.qp_type = RV_QPT_RC;
	qp.cap.max_inline_data = 64;
	qp.inline_below = rv_inline_below(qp.cap.max_inline_data); /* as the driver sets it */
	cq.drv_cq = &icq;
	for (int k = 0; k < BATCH; k++)
		batch[k] = (rv_send_wr){ .wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1,
					 .opcode = RV_WR_RDMA_WRITE, .send_flags = RV_SEND_SIGNALED,
					 .remote_addr = 0x5000, .rkey = 9 };

	measure("post 1 WR: ibv_send_wr memset + ibv_post_send", direct_post_one);
	measure("post 1 WR: rv_ibv_post_send (auto inline)", driver_post_one);
	measure("post 16 WRs: build chain + ibv_post_send, per WR", direct_post_batch);
	measure("post 16 WRs: rv_ibv_post_send, per WR", driver_post_batch);
	measure("poll 16: ibv_poll_cq, per WC", direct_poll);
	measure("poll 16: rv_ibv_cq_poll, per WC", driver_poll);
	return 0;
}
