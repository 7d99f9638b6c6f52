/*
 * Real rverbs traffic on soft0 for tests/wire-capture.py: two contexts on
 * 127.0.0.1, one RC QP each, SEND/RECV, RDMA WRITE and RDMA READ of several
 * sizes (below, at and above the 4096-byte FPDU payload), every payload
 * checked.
 *
 * Protocol with the capture script: prints "ports A B" (the two contexts'
 * soft0 listen ports, their LIDs) and waits for a line on stdin before it
 * connects, so that the capture sees the MPA request and reply. Prints
 * "done sends=N writes=N reads=N bytes=N" and exits 0 on success, 1 on any
 * failure (with a message on stderr).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rverbs/rverbs.h>
#include "test-clock.h"

#define BUF (1u << 20)

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "wire-traffic: %s failed (%d): %s\n", what, rc, rv_error_last());
	exit(1);
}

#define CHECK(call)                          \
	do {                                 \
		int rc_ = (call);            \
		if (rc_ < 0)                 \
			die(#call, rc_);     \
	} while (0)

static void side_open(struct side *s)
{
	rv_device *dev = NULL;
	rv_qp_init_attr qa;

	memset(s, 0, sizeof(*s));
	CHECK(rv_device_find("soft0", &dev));
	CHECK(rv_context_new(dev, NULL, &s->ctx));
	rv_device_unref(dev);
	CHECK(rv_pd_new(s->ctx, NULL, &s->pd));
	CHECK(rv_cq_new(s->ctx, NULL, &s->cq));
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	CHECK(rv_qp_new(s->pd, &qa, &s->qp));
	CHECK(rv_mr_alloc(s->pd, BUF, RV_ACCESS_ALL_REMOTE, NULL, &s->mr));
	s->buf = rv_mr_addr(s->mr);
}

static void side_close(struct side *s)
{
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	CHECK(rv_context_close(s->ctx));
	rv_context_unref(s->ctx);
}

static uint16_t side_port(struct side *s)
{
	rv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	pa.mask = RV_PORT_ATTR_ALL;
	CHECK(rv_context_query_port(s->ctx, 1, &pa));
	return pa.lid;
}

/* One successful completion with this wr_id within 10 s, or exit. */
static rv_wc poll_one(rv_cq *cq, uint64_t wr_id)
{
	int64_t end = now_ms() + 10000;
	rv_wc wc;
	int n;

	memset(&wc, 0, sizeof(wc));
	while ((n = rv_cq_poll(cq, &wc, 1)) == 0 && now_ms() < end) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	if (n != 1)
		die("rv_cq_poll (no completion within 10 s)", n);
	if (wc.status != RV_WC_SUCCESS || wc.wr_id != wr_id) {
		fprintf(stderr, "wire-traffic: completion wr_id %llu status %u, expected wr_id %llu success\n",
			(unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id);
		exit(1);
	}
	return wc;
}

static rv_sge sge(struct side *s, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	return g;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 31 + (i >> 9));
}

static void same(const void *a, const void *b, size_t n, const char *what, uint32_t size)
{
	if (memcmp(a, b, n) != 0) {
		fprintf(stderr, "wire-traffic: %s of %u bytes: data differ\n", what, size);
		exit(1);
	}
}

int main(void)
{
	/* Below, at and above one FPDU's payload (4096), and many FPDUs. */
	static const uint32_t sizes[] = {1, 7, 100, 4096, 4097, 10000, 70000};
	struct side a, b;
	rv_endpoint ea, eb;
	char line[64];
	unsigned sends = 0, writes = 0, reads = 0;
	unsigned long long bytes = 0;
	uint64_t id = 1;

	side_open(&a);
	side_open(&b);
	printf("ports %u %u\n", side_port(&a), side_port(&b));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin)) {
		fprintf(stderr, "wire-traffic: no go line on stdin\n");
		return 1;
	}

	CHECK(rv_qp_endpoint(a.qp, &ea));
	CHECK(rv_qp_endpoint(b.qp, &eb));
	CHECK(rv_qp_connect(a.qp, &eb));
	CHECK(rv_qp_connect(b.qp, &ea));

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		uint64_t rid = id++, sid = id++, wid = id++, qid = id++;
		rv_sge g;
		rv_wc wc;

		/* SEND a → b (small ones go inline). */
		fill(a.buf, n, (unsigned)i);
		memset(b.buf, 0, n);
		g = sge(&b, 0, n);
		CHECK(rv_qp_recv(b.qp, &g, rid));
		g = sge(&a, 0, n);
		CHECK(rv_qp_send(a.qp, &g, sid));
		wc = poll_one(b.cq, rid);
		if (wc.byte_len != n) {
			fprintf(stderr, "wire-traffic: RECV of %u bytes reported %u\n", n, wc.byte_len);
			return 1;
		}
		poll_one(a.cq, sid);
		same(b.buf, a.buf, n, "SEND", n);
		sends++;

		/* RDMA WRITE b → a. */
		fill(b.buf + 200000, n, (unsigned)i + 50);
		g = sge(&b, 200000, n);
		CHECK(rv_qp_write(b.qp, &g, (uint64_t)(uintptr_t)a.buf + 400000, rv_mr_rkey(a.mr), wid));
		poll_one(b.cq, wid);
		same(a.buf + 400000, b.buf + 200000, n, "RDMA WRITE", n);
		writes++;

		/* RDMA READ by a of what b wrote there. */
		memset(a.buf + 600000, 0, n);
		g = sge(&a, 600000, n);
		CHECK(rv_qp_read(a.qp, &g, (uint64_t)(uintptr_t)b.buf + 200000, rv_mr_rkey(b.mr), qid));
		wc = poll_one(a.cq, qid);
		if (wc.byte_len != n) {
			fprintf(stderr, "wire-traffic: READ of %u bytes reported %u\n", n, wc.byte_len);
			return 1;
		}
		same(a.buf + 600000, b.buf + 200000, n, "RDMA READ", n);
		reads++;
		bytes += 3ull * n;
	}

	/* RFC 7306: a WRITE with immediate and a SEND with immediate (Immediate
	 * Data messages, opcode 0x8), a fetch-and-add and a compare-and-swap
	 * (Atomic Request 0xa / Response 0xb). */
	{
		uint64_t rid = id++, wid = id++, sid = id++, v = 5;
		rv_send_wr w;
		rv_sge g, r = sge(&b, 0, 64);

		CHECK(rv_qp_recv(b.qp, &r, rid));
		g = sge(&a, 0, 100);
		memset(&w, 0, sizeof(w));
		w.wr_id = wid, w.opcode = RV_WR_RDMA_WRITE_WITH_IMM, w.sg_list = &g, w.num_sge = 1;
		w.send_flags = RV_SEND_SIGNALED, w.imm_data = 0x1234;
		w.remote_addr = (uint64_t)(uintptr_t)b.buf + 1000, w.rkey = rv_mr_rkey(b.mr);
		CHECK(rv_qp_post_send(a.qp, &w, 1, NULL));
		poll_one(a.cq, wid);
		poll_one(b.cq, rid);
		rid = id++;
		CHECK(rv_qp_recv(b.qp, &r, rid));
		g = sge(&a, 0, 20);
		w.wr_id = sid, w.opcode = RV_WR_SEND_WITH_IMM;
		CHECK(rv_qp_post_send(a.qp, &w, 1, NULL));
		poll_one(a.cq, sid);
		poll_one(b.cq, rid);
		memcpy(b.buf + 4096, &v, 8);
		for (int k = 0; k < 2; k++) {
			uint64_t aid = id++;
			g = sge(&a, 8192, 8);
			memset(&w, 0, sizeof(w));
			w.wr_id = aid, w.sg_list = &g, w.num_sge = 1, w.send_flags = RV_SEND_SIGNALED;
			w.opcode = k ? RV_WR_ATOMIC_CMP_AND_SWP : RV_WR_ATOMIC_FETCH_AND_ADD;
			w.compare_add = k ? 6 : 1, w.swap = 99;
			w.remote_addr = (uint64_t)(uintptr_t)b.buf + 4096, w.rkey = rv_mr_rkey(b.mr);
			CHECK(rv_qp_post_send(a.qp, &w, 1, NULL));
			poll_one(a.cq, aid);
		}
		memcpy(&v, b.buf + 4096, 8);
		if (v != 99) {
			fprintf(stderr, "wire-traffic: atomics left %llu, expected 99\n", (unsigned long long)v);
			return 1;
		}
	}

	side_close(&a);
	side_close(&b);
	printf("done sends=%u writes=%u reads=%u bytes=%llu\n", sends, writes, reads, bytes);
	return 0;
}
