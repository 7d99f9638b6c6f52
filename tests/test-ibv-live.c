/*
 * The libibverbs driver end to end, through the public API only: a loopback
 * RC connection between two QPs of the first libibverbs device, an RDMA WRITE,
 * a WRITE with immediate (checking the byte order of the immediate data across
 * the wire), the escape hatch, a capability error and the close.
 *
 * Exits 77 (skipped) when there is no libibverbs device, when its first port
 * is not ACTIVE, or when it is an iWARP device (whose QPs are connected
 * through rdma_cm, not rv_qp_connect).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rverbs/ibv.h>
#include <rverbs/rverbs.h>

#define SKIP 77

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n  rv_error_last: %s\n",  \
				__FILE__, __LINE__, #cond, rv_error_last());               \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll until a completion arrives, for at most 5 seconds. */
static rv_wc poll_one(rv_cq *cq)
{
	double deadline = now() + 5.0;
	rv_wc wc;
	int n;

	while ((n = rv_cq_poll(cq, &wc, 1)) == 0)
		CHECK(now() < deadline);
	CHECK(n == 1);
	if (wc.status != RV_WC_SUCCESS)
		fprintf(stderr, "completion %llu: %s (%s)\n", (unsigned long long)wc.wr_id,
			rv_wc_status_str((int)wc.status), rv_wc_status_hint((int)wc.status));
	CHECK(wc.status == RV_WC_SUCCESS);
	return wc;
}

static rv_device *first_verbs_device(void)
{
	rv_device **list, *found = NULL;
	size_t n;

	CHECK(rv_device_list(&list, &n) == 0);
	for (size_t i = 0; i < n; i++) {
		if (rv_device_kind_of(list[i]) == RV_DEVICE_VERBS) {
			found = rv_device_ref(list[i]);
			break;
		}
	}
	rv_device_list_free(list);
	return found;
}

int main(void)
{
	rv_cq_attr cq_attr = { .mask = RV_CQ_ATTR_CQE, .cqe = 64 };
	rv_qp_init_attr qp_attr;
	rv_port_attr port = { .mask = RV_PORT_ATTR_ALL };
	rv_endpoint ep_a, ep_b;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b, *huge;
	rv_mr *src, *dst;
	struct ibv_context *raw_ctx;
	rv_wc wc;

	dev = first_verbs_device();
	if (!dev) {
		printf("SKIP: no libibverbs device\n");
		return SKIP;
	}
	printf("device %s\n", rv_device_name(dev));
	CHECK(rv_context_new(dev, NULL, &ctx) == 0);
	raw_ctx = rv_context_ibv(ctx);
	CHECK(raw_ctx != NULL);
	CHECK(strcmp(ibv_get_device_name(raw_ctx->device), rv_device_name(dev)) == 0);
	CHECK(rv_context_query_port(ctx, 1, &port) == 0);
	if (port.state != RV_PORT_ACTIVE) {
		printf("SKIP: port 1 of %s is not ACTIVE (state %u)\n", rv_device_name(dev),
		       port.state);
		rv_context_unref(ctx);
		rv_device_unref(dev);
		return SKIP;
	}
	if (raw_ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
		printf("SKIP: %s is iWARP: QPs connect through rdma_cm\n", rv_device_name(dev));
		rv_context_unref(ctx);
		rv_device_unref(dev);
		return SKIP;
	}

	CHECK(rv_pd_new(ctx, NULL, &pd) == 0);
	CHECK(rv_pd_ibv(pd) != NULL);
	CHECK(rv_cq_new(ctx, &cq_attr, &cq) == 0);
	CHECK(rv_cq_ibv(cq) != NULL);
	CHECK(rv_cq_size(cq) >= 64);

	memset(&qp_attr, 0, sizeof(qp_attr));
	qp_attr.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qp_attr.send_cq = cq;
	CHECK(rv_qp_new(pd, &qp_attr, &a) == 0);
	CHECK(rv_qp_new(pd, &qp_attr, &b) == 0);
	CHECK(rv_qp_ibv(a) != NULL && rv_qp_ibv(a)->qp_num == rv_qp_num(a));

	/* A capability far above any device: refused with both numbers named. */
	qp_attr.mask |= RV_QP_INIT_ATTR_CAP;
	qp_attr.cap = (rv_qp_cap){ .max_send_wr = 0x7fffffff, .max_recv_wr = 1,
				   .max_send_sge = 1, .max_recv_sge = 1 };
	CHECK(rv_qp_new(pd, &qp_attr, &huge) < 0);
	CHECK(strstr(rv_error_last(), "ibv_create_qp") != NULL);
	printf("expected failure: %s\n", rv_error_last());

	CHECK(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, &src) == 0);
	CHECK(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, &dst) == 0);
	CHECK(rv_mr_ibv(src) != NULL && rv_mr_ibv(src)->lkey == rv_mr_lkey(src));

	CHECK(rv_qp_endpoint(a, &ep_a) == 0);
	CHECK(rv_qp_endpoint(b, &ep_b) == 0);
	CHECK(rv_qp_connect(a, &ep_b) == 0);
	CHECK(rv_qp_connect(b, &ep_a) == 0);
	CHECK(rv_qp_state_of(a) == RV_QPS_RTS);
	CHECK(rv_qp_state_of(b) == RV_QPS_RTS);

	/* RDMA WRITE from a's buffer into b's. */
	for (int i = 0; i < 4096; i++)
		((unsigned char *)rv_mr_addr(src))[i] = (unsigned char)(i * 7 + 3);
	rv_sge sge = { .addr = (uintptr_t)rv_mr_addr(src), .length = 4096, .lkey = rv_mr_lkey(src) };
	CHECK(rv_qp_write(a, &sge, (uintptr_t)rv_mr_addr(dst), rv_mr_rkey(dst), 7) == 0);
	wc = poll_one(cq);
	CHECK(wc.wr_id == 7 && wc.opcode == RV_WC_RDMA_WRITE && wc.qp_num == rv_qp_num(a));
	CHECK(memcmp(rv_mr_addr(src), rv_mr_addr(dst), 4096) == 0);

	/* WRITE with immediate: consumes a receive on b and carries 0xdeadbeef. */
	rv_recv_wr rwr = { .wr_id = 21, .sg_list = NULL, .num_sge = 0 };
	size_t posted;
	CHECK(rv_qp_post_recv(b, &rwr, 1, &posted) == 0 && posted == 1);
	rv_send_wr swr;
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 22;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = RV_WR_RDMA_WRITE_WITH_IMM;
	swr.send_flags = RV_SEND_SIGNALED;
	swr.imm_data = 0xdeadbeef;
	swr.remote_addr = (uintptr_t)rv_mr_addr(dst);
	swr.rkey = rv_mr_rkey(dst);
	sge.length = 64;
	CHECK(rv_qp_post_send(a, &swr, 1, &posted) == 0 && posted == 1);
	for (int got = 0; got < 2; got++) {
		wc = poll_one(cq);
		if (wc.wr_id == 21) {
			CHECK(wc.opcode == RV_WC_RECV_RDMA_WITH_IMM);
			CHECK(wc.wc_flags & RV_WC_WITH_IMM);
			CHECK(wc.imm_data == 0xdeadbeef);
			CHECK(wc.qp_num == rv_qp_num(b));
		} else {
			CHECK(wc.wr_id == 22 && wc.opcode == RV_WC_RDMA_WRITE);
		}
	}

	/* Closing the context closes everything; the hatch then gives NULL. */
	CHECK(rv_context_close(ctx) == 0);
	CHECK(rv_qp_ibv(a) == NULL);
	CHECK(rv_context_ibv(ctx) == NULL);
	rv_mr_unref(src);
	rv_mr_unref(dst);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
	rv_device_unref(dev);
	printf("loopback RC WRITE and WRITE_WITH_IMM passed\n");
	return 0;
}
