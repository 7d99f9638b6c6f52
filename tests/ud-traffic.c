/*
 * UD traffic for tests/ud-capture.py: two soft0 contexts on 127.0.0.1, UD
 * QPs exchanging SENDs of every pad length, with and without immediate data
 * and SE, from 0 to 4096 bytes, to several destinations, and replies through
 * rv_ah_from_wc. Every datagram is received (so none is lost on lo), and its
 * payload checked.
 *
 * Prints "ports P1 P2" (the contexts' UDP ports, their LIDs), waits for a
 * line on stdin (the capture is running), sends, and prints "datagrams N"
 * (how many it sent). Exit 0 on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define QKEY 0x11111111u
#define BUF (64 * 1024)

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	uint8_t *buf;
	rv_qp *qp[2];
	rv_endpoint ep[2];
};

static int fail(const char *what)
{
	fprintf(stderr, "ud-traffic: %s: %s\n", what, rv_error_last());
	exit(1);
}

static void side_open(struct side *s)
{
	rv_device *dev;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_CAP,
			      .qp_type = RV_QPT_UD,
			      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1}};

	if (rv_device_find("soft0", &dev) || rv_context_new(dev, NULL, &s->ctx))
		fail("soft0");
	rv_device_unref(dev);
	if (rv_pd_new(s->ctx, NULL, &s->pd) || rv_cq_new(s->ctx, NULL, &s->cq) ||
	    rv_mr_alloc(s->pd, BUF, RV_ACCESS_LOCAL_WRITE, NULL, &s->mr))
		fail("resources");
	s->buf = rv_mr_addr(s->mr);
	qa.send_cq = s->cq;
	for (int i = 0; i < 2; i++) {
		if (rv_qp_new(s->pd, &qa, &s->qp[i]) || rv_qp_to_init(s->qp[i], NULL) ||
		    rv_qp_to_rtr(s->qp[i], NULL) || rv_qp_to_rts(s->qp[i], NULL) ||
		    rv_qp_endpoint(s->qp[i], &s->ep[i]))
			fail("UD QP");
	}
}

static rv_wc wait_recv(struct side *s)
{
	time_t end = time(NULL) + 10;
	rv_wc wc;

	for (;;) {
		int n = rv_cq_poll(s->cq, &wc, 1);
		if (n < 0)
			fail("poll");
		if (n == 1 && (wc.opcode & RV_WC_RECV))
			break;
		if (n == 1 && wc.status != RV_WC_SUCCESS)
			fail("send completion");
		if (n == 0 && time(NULL) > end)
			fail("no receive within 10 s");
	}
	if (wc.status != RV_WC_SUCCESS)
		fail(rv_wc_status_str((int)wc.status));
	return wc;
}

int main(void)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 63, 100, 1000, 1499, 4095, 4096};
	struct side a, b;
	rv_ah *to_b[2];
	unsigned datagrams = 0;

	side_open(&a);
	side_open(&b);
	/* The capture starts between the ports line and "go". */
	printf("ports %u %u\n", a.ep[0].lid, b.ep[0].lid);
	fflush(stdout);
	{
		char go[16];
		if (!fgets(go, sizeof(go), stdin))
			return 1;
	}
	for (int i = 0; i < 2; i++) {
		rv_ah_attr av;
		memset(&av, 0, sizeof(av));
		memcpy(av.dgid, b.ep[i].gid, 16);
		av.is_global = 1;
		av.dlid = b.ep[i].lid;
		av.traffic_class = (uint8_t)(i * 0x20);
		if (rv_ah_new(a.pd, &av, &to_b[i]))
			fail("rv_ah_new");
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int imm = 0; imm < 2; imm++) {
			uint32_t len = sizes[k];
			int dst = (int)(k + (size_t)imm) & 1;
			rv_sge rs = {.addr = (uintptr_t)b.buf, .length = 4096 + RV_UD_GRH_LEN, .lkey = rv_mr_lkey(b.mr)};
			rv_sge ss = {.addr = (uintptr_t)a.buf, .length = len, .lkey = rv_mr_lkey(a.mr)};
			rv_send_wr wr = {.wr_id = k, .sg_list = &ss, .num_sge = 1,
					 .opcode = imm ? RV_WR_SEND_WITH_IMM : RV_WR_SEND,
					 .send_flags = RV_SEND_SIGNALED | (len & 1 ? RV_SEND_SOLICITED : 0),
					 .imm_data = 0x1000u + (uint32_t)k, .ah = to_b[dst],
					 .remote_qpn = rv_qp_num(b.qp[dst]), .remote_qkey = QKEY};
			rv_wc wc;
			rv_ah *reply;

			for (uint32_t i = 0; i < len; i++)
				a.buf[i] = (uint8_t)(i + k);
			if (rv_qp_recv(b.qp[dst], &rs, 1) || rv_qp_post_send(a.qp[0], &wr, 1, NULL))
				fail("post");
			datagrams++;
			wc = wait_recv(&b);
			if (wc.byte_len != RV_UD_GRH_LEN + len || memcmp(b.buf + RV_UD_GRH_LEN, a.buf, len) ||
			    wc.src_qp != rv_qp_num(a.qp[0]) || !(wc.wc_flags & RV_WC_GRH) ||
			    (imm && wc.imm_data != 0x1000u + k))
				fail("the received message differs from the sent one");
			/* The reply, through the completion's address. */
			if (rv_ah_from_wc(b.pd, 1, &wc, b.buf, &reply))
				fail("rv_ah_from_wc");
			rs = (rv_sge){.addr = (uintptr_t)a.buf + 8192, .length = 4096 + RV_UD_GRH_LEN,
				      .lkey = rv_mr_lkey(a.mr)};
			ss = (rv_sge){.addr = (uintptr_t)b.buf + RV_UD_GRH_LEN, .length = len, .lkey = rv_mr_lkey(b.mr)};
			wr.ah = reply;
			wr.remote_qpn = wc.src_qp;
			wr.send_flags = RV_SEND_SIGNALED;
			if (rv_qp_recv(a.qp[0], &rs, 2) || rv_qp_post_send(b.qp[dst], &wr, 1, NULL))
				fail("post the reply");
			datagrams++;
			wc = wait_recv(&a);
			if (wc.byte_len != RV_UD_GRH_LEN + len || memcmp(a.buf + 8192 + RV_UD_GRH_LEN, a.buf, len))
				fail("the reply differs");
			rv_ah_unref(reply);
		}
	}
	printf("datagrams %u\n", datagrams);
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		rv_ah_unref(to_b[i]);
		rv_qp_unref(a.qp[i]);
		rv_qp_unref(b.qp[i]);
	}
	for (struct side *s = &a; s; s = s == &a ? &b : NULL) {
		rv_mr_unref(s->mr);
		rv_cq_unref(s->cq);
		rv_pd_unref(s->pd);
		if (rv_context_close(s->ctx))
			fail("rv_context_close");
		rv_context_unref(s->ctx);
	}
	return 0;
}
