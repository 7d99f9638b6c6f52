/*
 * The libibverbs driver end to end, through the public API only: a loopback
 * RC connection between two QPs of the first usable libibverbs device, an RDMA
 * WRITE, a WRITE with immediate (checking the byte order of the immediate data
 * across the wire), a READ, a small SEND (inline where the QP allows), 40
 * WRITEs posted in one call, the escape hatch, a capability error and the
 * close.
 *
 * Exits 77 (skipped) when no libibverbs device has port 1 ACTIVE (iWARP
 * devices do not count: their QPs connect through rdma_cm, not
 * rv_qp_connect) or when the device has no RC QPs (EFA).
 */
#include <errno.h>
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

/* The first libibverbs device whose port 1 is ACTIVE and that is not iWARP,
 * with a context open on it; NULL if there is none. */
static rv_context *first_usable_context(void)
{
	rv_device **list;
	rv_context *found = NULL;
	size_t n;

	CHECK(rv_device_list(&list, &n) == 0);
	for (size_t i = 0; i < n && !found; i++) {
		rv_port_attr port = { .mask = RV_PORT_ATTR_ALL };
		struct ibv_context *raw;
		rv_context *ctx;

		if (rv_device_kind_of(list[i]) != RV_DEVICE_VERBS)
			continue;
		if (rv_context_new(list[i], NULL, &ctx) != 0) {
			printf("%s: cannot open: %s\n", rv_device_name(list[i]), rv_error_last());
			continue;
		}
		raw = rv_context_ibv(ctx);
		CHECK(raw != NULL);
		CHECK(strcmp(ibv_get_device_name(raw->device), rv_device_name(list[i])) == 0);
		CHECK(rv_context_query_port(ctx, 1, &port) == 0);
		if (port.state != RV_PORT_ACTIVE)
			printf("%s: port 1 is not ACTIVE (state %u)\n", rv_device_name(list[i]),
			       port.state);
		else if (raw->device->transport_type == IBV_TRANSPORT_IWARP)
			printf("%s: iWARP, its QPs connect through rdma_cm\n", rv_device_name(list[i]));
		else
			found = rv_context_ref(ctx);
		rv_context_unref(ctx);
	}
	rv_device_list_free(list);
	return found;
}

int main(void)
{
	rv_cq_attr cq_attr = { .mask = RV_CQ_ATTR_CQE, .cqe = 64 };
	rv_qp_init_attr qp_attr;
	rv_endpoint ep_a, ep_b;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b, *huge;
	rv_mr *src, *dst;
	rv_wc wc;
	int rc;

	ctx = first_usable_context();
	if (!ctx) {
		printf("SKIP: no libibverbs device with an active port (iWARP excluded)\n");
		return SKIP;
	}
	dev = rv_device_ref(rv_context_device(ctx));
	printf("device %s\n", rv_device_name(dev));

	CHECK(rv_pd_new(ctx, NULL, &pd) == 0);
	CHECK(rv_pd_ibv(pd) != NULL);
	CHECK(rv_cq_new(ctx, &cq_attr, &cq) == 0);
	CHECK(rv_cq_ibv(cq) != NULL);
	CHECK(rv_cq_size(cq) >= 64);

	memset(&qp_attr, 0, sizeof(qp_attr));
	qp_attr.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qp_attr.send_cq = cq;
	rc = rv_qp_new(pd, &qp_attr, &a);
	if (rc == -EOPNOTSUPP) {
		printf("SKIP: %s has no RC QPs: %s\n", rv_device_name(dev), rv_error_last());
		rv_context_unref(ctx);
		rv_pd_unref(pd);
		rv_cq_unref(cq);
		rv_device_unref(dev);
		return SKIP;
	}
	CHECK(rc == 0);
	CHECK(rv_qp_new(pd, &qp_attr, &b) == 0);
	CHECK(rv_qp_ibv(a) != NULL && rv_qp_ibv(a)->qp_num == rv_qp_num(a));

	/* A capability far above any device: refused with both numbers named. */
	qp_attr.mask |= RV_QP_INIT_ATTR_CAP;
	qp_attr.cap = (rv_qp_cap){ .max_send_wr = 0x7fffffff, .max_recv_wr = 1,
				   .max_send_sge = 1, .max_recv_sge = 1 };
	CHECK(rv_qp_new(pd, &qp_attr, &huge) < 0);
	CHECK(strstr(rv_error_last(), "ibv_create_qp") != NULL);
	printf("expected failure: %s\n", rv_error_last());

	/* Caller memory (rv_mr_reg), page-aligned as NICs like it. */
	static _Alignas(4096) unsigned char src_buf[4096], dst_buf[4096];
	CHECK(rv_mr_reg(pd, src_buf, sizeof(src_buf), RV_ACCESS_LOCAL_WRITE, &src) == 0);
	CHECK(rv_mr_reg(pd, dst_buf, sizeof(dst_buf),
			RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ,
			&dst) == 0);
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

	/* RDMA READ of b's buffer back into a's, after clearing a's. */
	memset(rv_mr_addr(src), 0, 4096);
	sge.length = 4096;
	CHECK(rv_qp_read(a, &sge, (uintptr_t)rv_mr_addr(dst), rv_mr_rkey(dst), 23) == 0);
	wc = poll_one(cq);
	CHECK(wc.wr_id == 23 && wc.opcode == RV_WC_RDMA_READ && wc.byte_len == 4096);
	CHECK(memcmp(rv_mr_addr(src), rv_mr_addr(dst), 4096) == 0);

	/* A small SEND (inline whenever the QP has inline space) into a receive. */
	rv_qp_cap cap;
	CHECK(rv_qp_get_cap(a, &cap) == 0);
	printf("QP caps read back: send_wr %u recv_wr %u send_sge %u recv_sge %u inline %u\n",
	       cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge, cap.max_recv_sge,
	       cap.max_inline_data);
	rv_sge rsge = { .addr = (uintptr_t)rv_mr_addr(dst) + 2048, .length = 64,
			.lkey = rv_mr_lkey(dst) };
	CHECK(rv_qp_recv(b, &rsge, 31) == 0);
	memcpy(rv_mr_addr(src), "sixteen bytes!!", 16);
	sge.length = 16;
	CHECK(rv_qp_send(a, &sge, 32) == 0);
	for (int got = 0; got < 2; got++) {
		wc = poll_one(cq);
		if (wc.wr_id == 31) {
			CHECK(wc.opcode == RV_WC_RECV && wc.byte_len == 16);
			CHECK(memcmp((char *)rv_mr_addr(dst) + 2048, "sixteen bytes!!", 16) == 0);
		} else {
			CHECK(wc.wr_id == 32 && wc.opcode == RV_WC_SEND);
		}
	}

	/* 40 WRITEs in one call: more than one batch of the driver. */
	rv_send_wr many[40];
	rv_sge msge[40];
	for (int i = 0; i < 40; i++) {
		msge[i] = (rv_sge){ .addr = (uintptr_t)rv_mr_addr(src) + (uint64_t)i * 64,
				    .length = 64, .lkey = rv_mr_lkey(src) };
		memset(&many[i], 0, sizeof(many[i]));
		many[i].wr_id = 100 + (uint64_t)i;
		many[i].sg_list = &msge[i];
		many[i].num_sge = 1;
		many[i].opcode = RV_WR_RDMA_WRITE;
		many[i].send_flags = RV_SEND_SIGNALED;
		many[i].remote_addr = (uintptr_t)rv_mr_addr(dst) + (uint64_t)i * 64;
		many[i].rkey = rv_mr_rkey(dst);
	}
	CHECK(rv_qp_post_send(a, many, 40, &posted) == 0 && posted == 40);
	for (int i = 0; i < 40; i++) {
		wc = poll_one(cq);
		CHECK(wc.wr_id == 100 + (uint64_t)i && wc.opcode == RV_WC_RDMA_WRITE);
	}
	CHECK(memcmp(rv_mr_addr(src), rv_mr_addr(dst), 40 * 64) == 0);

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
	printf("loopback RC WRITE, WRITE_WITH_IMM, READ, SEND and 40 WRITEs in one call passed\n");
	return 0;
}
