/*
 * UD queue pairs and address handles on soft0, through the public API: ping-
 * pong on one context and between two, the reply handle from a completion,
 * the GRH area byte by byte, Q_Key and P_Key rules, datagrams without a
 * receive, oversize messages, one QP sending to many, closed address
 * handles, the error state, datagrams lost or corrupted by soft0's fault
 * injection, an IPv6 context; and hostile datagrams from a raw UDP socket
 * (garbage, truncated, bad ICRC, wrong opcode, unknown QP, correctly framed
 * strangers): the process lives, memory outside the receive buffer stays
 * unchanged, every drop is counted, and UD keeps working.
 *
 * The drop counters are soft0's (soft_ud_counters, linked from the internal
 * library). No wall-clock thresholds: waits are hang guards only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "drivers/soft/wire/roce.h"
#include "drivers/soft/soft.h"
#include "test-clock.h"

#define QKEY 0x11111111u
#define BUF 8192
#define GUARD 256 /* bytes on each side of the receive region, never registered */
#define WAIT_MS 10000

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	uint8_t *mem;  /* GUARD + BUF + GUARD; the MR covers the middle */
	uint8_t *buf;
};

/* A side on listen_addr (NULL: the default) with rv_soft_flags. */
static void side_open_on(struct side *s, const char *listen_addr, uint32_t flags)
{
	rv_context_attr ca = {.mask = (listen_addr ? RV_CONTEXT_ATTR_LISTEN_ADDR : 0) |
				      (flags ? RV_CONTEXT_ATTR_SOFT_FLAGS : 0),
			      .listen_addr = listen_addr, .soft_flags = flags};
	rv_device *dev;

	memset(s, 0, sizeof(*s));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &ca, &s->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	s->mem = malloc(BUF + 2 * GUARD);
	assert_non_null(s->mem);
	memset(s->mem, 0x5a, BUF + 2 * GUARD);
	s->buf = s->mem + GUARD;
	assert_int_equal(rv_mr_reg(s->pd, s->buf, BUF, RV_ACCESS_LOCAL_WRITE, &s->mr), 0);
}

static void side_open(struct side *s)
{
	side_open_on(s, NULL, 0);
}

static void side_close(struct side *s)
{
	for (int i = 0; i < GUARD; i++) {
		assert_int_equal(s->mem[i], 0x5a);
		assert_int_equal(s->mem[GUARD + BUF + i], 0x5a);
	}
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
	free(s->mem);
}

static rv_qp *ud_qp(struct side *s, uint32_t qkey)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_CAP,
			      .qp_type = RV_QPT_UD, .send_cq = s->cq,
			      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2, .max_recv_sge = 2}};
	rv_qp *qp;

	assert_int_equal(rv_qp_new(s->pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_to_init(qp, &(rv_qp_attr){.mask = RV_QP_QKEY, .qkey = qkey}), 0);
	assert_int_equal(rv_qp_to_rtr(qp, NULL), 0);
	assert_int_equal(rv_qp_to_rts(qp, NULL), 0);
	return qp;
}

/* An address handle on s->pd for the port of a QP's endpoint. */
static rv_ah *ah_to(struct side *s, const rv_endpoint *ep)
{
	rv_ah_attr a;
	rv_ah *ah;

	memset(&a, 0, sizeof(a));
	memcpy(a.dgid, ep->gid, 16);
	a.is_global = 1;
	a.dlid = ep->lid;
	assert_int_equal(rv_ah_new(s->pd, &a, &ah), 0);
	return ah;
}

static void post_recv(struct side *s, rv_qp *qp, size_t off, uint32_t len, uint64_t wr_id)
{
	rv_sge g = {.addr = (uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	assert_int_equal(rv_qp_recv(qp, &g, wr_id), 0);
}

static int send_to(struct side *s, rv_qp *qp, rv_ah *ah, uint32_t qpn, uint32_t qkey, size_t off,
		   uint32_t len, uint64_t wr_id)
{
	rv_sge g = {.addr = (uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	rv_send_wr wr = {.wr_id = wr_id, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_SIGNALED, .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey};
	return rv_qp_post_send(qp, &wr, 1, NULL);
}

/* The next completion on cq (hang guard WAIT_MS). */
static rv_wc wait_wc(rv_cq *cq)
{
	int64_t end = now_ms() + WAIT_MS;
	rv_wc wc;
	int n;

	while ((n = rv_cq_poll(cq, &wc, 1)) == 0 && now_ms() < end)
		usleep(100);
	assert_int_equal(n, 1);
	return wc;
}

/* Send completions wait_for passed over (wr_id < 64), as a bit set: a
 * receive may complete before the send that caused it. */
static uint64_t sends_seen;

/* The next completion with wr_id (others on the way are checked as sends). */
static rv_wc wait_for(rv_cq *cq, uint64_t wr_id)
{
	for (;;) {
		rv_wc wc = wait_wc(cq);
		if (wc.wr_id == wr_id)
			return wc;
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.opcode, RV_WC_SEND);
		if (wc.wr_id < 64)
			sends_seen |= UINT64_C(1) << wc.wr_id;
	}
}

/* Wait for the send completion wr_id unless wait_for passed over it. */
static void wait_send(rv_cq *cq, uint64_t wr_id)
{
	while (!(sends_seen & (UINT64_C(1) << wr_id))) {
		rv_wc wc = wait_wc(cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.opcode, RV_WC_SEND);
		sends_seen |= UINT64_C(1) << wc.wr_id;
	}
	sends_seen &= ~(UINT64_C(1) << wr_id);
}

static uint64_t counter(struct side *s, enum soft_ud_counter c)
{
	uint64_t n[SOFT_UD_NCOUNTERS];
	assert_int_equal(soft_ud_counters(s->ctx, n), 0);
	return n[c];
}

/* Wait until counter c of s exceeds before (hang guard). */
static void wait_counter(struct side *s, enum soft_ud_counter c, uint64_t before)
{
	int64_t end = now_ms() + WAIT_MS;
	while (counter(s, c) <= before && now_ms() < end)
		usleep(200);
	assert_true(counter(s, c) > before);
}

static void assert_cq_empty(rv_cq *cq)
{
	rv_wc wc;
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 0);
}

/* ---- tests ------------------------------------------------------------------ */

/* Send from a to b, reply with rv_ah_from_wc; b and a may share a context. */
static void ping_pong(struct side *sa, struct side *sb)
{
	rv_qp *a = ud_qp(sa, QKEY), *b = ud_qp(sb, QKEY);
	rv_endpoint eb;
	rv_ah *ah, *reply;
	rv_ah_attr ra;
	rv_wc wc;

	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	ah = ah_to(sa, &eb);
	post_recv(sb, b, 4096, 1024, 100);
	post_recv(sa, a, 6144, 1024, 200);
	memcpy(sa->buf, "ping over RoCEv2", 16);
	assert_int_equal(send_to(sa, a, ah, rv_qp_num(b), QKEY, 0, 16, 1), 0);
	wc = wait_for(sb->cq, 100);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 16);
	assert_int_equal(wc.src_qp, rv_qp_num(a));
	assert_int_equal(wc.qp_num, rv_qp_num(b));
	assert_int_equal(wc.wc_flags, RV_WC_GRH);
	{
		rv_endpoint ea;
		assert_int_equal(rv_qp_endpoint(a, &ea), 0);
		assert_int_equal(wc.slid, ea.lid); /* the sender's port: its LID */
	}
	assert_memory_equal(sb->buf + 4096 + RV_UD_GRH_LEN, "ping over RoCEv2", 16);

	/* The reply goes where the GRH and the completion say it came from. */
	assert_int_equal(rv_ah_from_wc(sb->pd, 1, &wc, sb->buf + 4096, &reply), 0);
	assert_int_equal(rv_ah_query(reply, &ra), 0);
	assert_memory_equal(ra.dgid, eb.gid, 16); /* 127.0.0.1 both ways */
	assert_int_equal(ra.is_global, 1);
	memcpy(sb->buf + 2048, "pong", 4);
	assert_int_equal(send_to(sb, b, reply, wc.src_qp, QKEY, 2048, 4, 2), 0);
	wc = wait_for(sa->cq, 200);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 4);
	assert_int_equal(wc.src_qp, rv_qp_num(b));
	assert_memory_equal(sa->buf + 6144 + RV_UD_GRH_LEN, "pong", 4);
	/* Both sends completed too, and nothing else. */
	wait_send(sa->cq, 1);
	wait_send(sb->cq, 2);
	assert_cq_empty(sa->cq);
	assert_cq_empty(sb->cq);
	rv_ah_unref(reply);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
}

static void test_soft_ud__ping_pong_on_one_context(void **state)
{
	struct side s;

	(void)state;
	side_open(&s);
	ping_pong(&s, &s);
	side_close(&s);
}

static void test_soft_ud__ping_pong_between_two_contexts(void **state)
{
	struct side a, b;

	(void)state;
	side_open(&a);
	side_open(&b);
	ping_pong(&a, &b);
	side_close(&a);
	side_close(&b);
}

/* RV_SOFT_ROCE_PORT: contexts on 127.0.0.1 and 127.0.0.2 also receive on
 * UDP 4791, RoCEv2's port, where a RoCE NIC's UD peers send. An AV with
 * dlid 0 goes there; the receive says slid 0 (the sender's port is a NIC's
 * entropy, not where it listens), so the reply built from the completion
 * goes to the sender's 4791. Another context on 127.0.0.1 with the flag is
 * refused: the port is one socket's. (tests/ud-interop.c does this against
 * the kernel's rxe in the VM.) */
static void test_soft_ud__roce_port(void **state)
{
	struct side sa, sb;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah_attr av;
	rv_ah *ah, *reply;
	rv_wc wc;
	rv_device *dev;
	rv_context *third = NULL;
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR | RV_CONTEXT_ATTR_SOFT_FLAGS,
			      .listen_addr = "127.0.0.1", .soft_flags = RV_SOFT_ROCE_PORT};

	(void)state;
	side_open_on(&sa, "127.0.0.1", RV_SOFT_ROCE_PORT);
	side_open_on(&sb, "127.0.0.2", RV_SOFT_ROCE_PORT);
	a = ud_qp(&sa, QKEY);
	b = ud_qp(&sb, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	memset(&av, 0, sizeof(av));
	memcpy(av.dgid, eb.gid, 16);
	av.is_global = 1;
	av.dlid = 0; /* RoCEv2's port, as to a NIC */
	assert_int_equal(rv_ah_new(sa.pd, &av, &ah), 0);
	post_recv(&sb, b, 4096, 1024, 100);
	post_recv(&sa, a, 6144, 1024, 200);
	memcpy(sa.buf, "to port 4791", 12);
	assert_int_equal(send_to(&sa, a, ah, rv_qp_num(b), QKEY, 0, 12, 1), 0);
	wc = wait_for(sb.cq, 100);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.src_qp, rv_qp_num(a));
	assert_int_equal(wc.slid, 0);
	assert_memory_equal(sb.buf + 4096 + RV_UD_GRH_LEN, "to port 4791", 12);
	assert_int_equal(rv_ah_from_wc(sb.pd, 1, &wc, sb.buf + 4096, &reply), 0);
	memcpy(sb.buf + 2048, "back", 4);
	assert_int_equal(send_to(&sb, b, reply, wc.src_qp, QKEY, 2048, 4, 2), 0);
	wc = wait_for(sa.cq, 200);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_memory_equal(sa.buf + 6144 + RV_UD_GRH_LEN, "back", 4);
	wait_send(sa.cq, 1);
	wait_send(sb.cq, 2);
	/* The port is taken: a third context on the address is refused. */
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &ca, &third), -EBUSY);
	assert_non_null(strstr(rv_error_last(), "4791"));
	rv_device_unref(dev);
	rv_ah_unref(reply);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&sa);
	side_close(&sb);
}

/* The GRH area: 20 zero bytes, then the IPv4 header as RoCEv2 shows it,
 * carrying the AH's hop limit and traffic class; immediate data and SE. */
static void test_soft_ud__grh_area_holds_the_ipv4_header(void **state)
{
	struct side s;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah_attr av;
	rv_ah *ah;
	rv_wc wc;
	const uint8_t *g, *ip;
	uint32_t sum = 0;

	(void)state;
	side_open(&s);
	a = ud_qp(&s, QKEY);
	b = ud_qp(&s, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	memset(&av, 0, sizeof(av));
	memcpy(av.dgid, eb.gid, 16);
	av.is_global = 1;
	av.dlid = eb.lid;
	av.hop_limit = 17;
	av.traffic_class = 0x20;
	assert_int_equal(rv_ah_new(s.pd, &av, &ah), 0);
	post_recv(&s, b, 4096, 256, 7);
	memset(s.buf + 4096, 0xee, 256);
	memcpy(s.buf, "0123456789", 10);
	rv_sge sg = {.addr = (uintptr_t)s.buf, .length = 10, .lkey = rv_mr_lkey(s.mr)};
	rv_send_wr wr = {.wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = RV_WR_SEND_WITH_IMM,
			 .send_flags = RV_SEND_SIGNALED | RV_SEND_SOLICITED, .imm_data = 0xabcdef01,
			 .ah = ah, .remote_qpn = rv_qp_num(b), .remote_qkey = QKEY};
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	wc = wait_for(s.cq, 7);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wc_flags, RV_WC_GRH | RV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xabcdef01);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 10);
	g = s.buf + 4096;
	for (int i = 0; i < 20; i++)
		assert_int_equal(g[i], 0);
	ip = g + 20;
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[1], 0x20);                   /* traffic class */
	/* total length: IP 20 + UDP 8 + BTH 12 + DETH 8 + ImmDt 4 + 10 + pad 2 + ICRC 4 */
	assert_int_equal((ip[2] << 8) | ip[3], 20 + 8 + 12 + 8 + 4 + 12 + 4);
	assert_int_equal((ip[6] << 8) | ip[7], 0x4000);  /* DF */
	assert_int_equal(ip[8], 17);                     /* hop limit */
	assert_int_equal(ip[9], 17);                     /* UDP */
	assert_memory_equal(ip + 12, eb.gid + 12, 4);    /* from 127.0.0.1 */
	assert_memory_equal(ip + 16, eb.gid + 12, 4);    /* to 127.0.0.1 */
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff);                   /* the checksum is valid */
	assert_memory_equal(g + RV_UD_GRH_LEN, "0123456789", 10);
	assert_int_equal(g[RV_UD_GRH_LEN + 10], 0xee);   /* nothing past the message */
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&s);
}

/* A wrong Q_Key and a missing receive: dropped, counted, the sender's WR
 * still succeeds; a Q_Key with the high bit set means the sender's own. */
static void test_soft_ud__qkey_mismatch_and_no_receive_are_dropped(void **state)
{
	struct side s;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah *ah;
	rv_wc wc;
	uint64_t before;

	(void)state;
	side_open(&s);
	a = ud_qp(&s, 0x1234);
	b = ud_qp(&s, 0x5678);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	ah = ah_to(&s, &eb);

	/* No receive posted. */
	before = counter(&s, SOFT_UD_DROP_NO_RECV);
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), 0x5678, 0, 8, 1), 0);
	wc = wait_wc(s.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	wait_counter(&s, SOFT_UD_DROP_NO_RECV, before);

	/* A receive, but the wrong Q_Key (and the sender's own, via the high bit). */
	post_recv(&s, b, 4096, 256, 9);
	before = counter(&s, SOFT_UD_DROP_QKEY);
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), 0x5679, 0, 8, 2), 0);
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), 0x80000000u, 0, 8, 3), 0);
	wait_counter(&s, SOFT_UD_DROP_QKEY, before + 1);
	assert_int_equal(wait_wc(s.cq).wr_id, 2);
	assert_int_equal(wait_wc(s.cq).wr_id, 3);
	assert_cq_empty(s.cq);

	/* The receive is still there for the right Q_Key. */
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), 0x5678, 0, 8, 4), 0);
	wc = wait_for(s.cq, 9);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 8);

	/* An unknown QP number: dropped and counted. */
	before = counter(&s, SOFT_UD_DROP_QP);
	assert_int_equal(send_to(&s, a, ah, (rv_qp_num(b) + 4096) & 0xffffff, 0x5678, 0, 8, 5), 0);
	wait_counter(&s, SOFT_UD_DROP_QP, before);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&s);
}

/* Bad sends fail at post with a message; nothing goes out. */
static void test_soft_ud__bad_sends_are_refused_at_post(void **state)
{
	struct side s;
	rv_qp *a, *b, *rc;
	rv_endpoint eb;
	rv_ah *ah;
	rv_ah_attr av;
	uint64_t tx;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_UD};

	(void)state;
	side_open(&s);
	a = ud_qp(&s, QKEY);
	b = ud_qp(&s, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	ah = ah_to(&s, &eb);
	tx = counter(&s, SOFT_UD_TX);
	/* Larger than the path MTU. */
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), QKEY, 0, 4097, 1), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "wrs[0] carries 4097 bytes; a UD message fits one packet"));
	/* No AH, an RDMA opcode, a QPN beyond 24 bits. */
	assert_int_equal(send_to(&s, a, NULL, rv_qp_num(b), QKEY, 0, 8, 1), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "needs an address handle"));
	assert_int_equal(send_to(&s, a, ah, 1u << 24, QKEY, 0, 8, 1), -EINVAL);
	rv_sge g = {.addr = (uintptr_t)s.buf, .length = 8, .lkey = rv_mr_lkey(s.mr)};
	rv_send_wr w = {.sg_list = &g, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE, .ah = ah,
			.remote_qpn = rv_qp_num(b), .remote_qkey = QKEY};
	assert_int_equal(rv_qp_post_send(a, &w, 1, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "UD carries only"));
	assert_int_equal(rv_qp_write(a, &g, 0, 0, 1), -EINVAL);
	assert_int_equal(counter(&s, SOFT_UD_TX), tx);
	assert_cq_empty(s.cq);

	/* Address vectors soft0 cannot reach. */
	memset(&av, 0, sizeof(av));
	memcpy(av.dgid, eb.gid, 16);
	av.dlid = eb.lid;
	assert_int_equal(rv_ah_new(s.pd, &av, &(rv_ah *){NULL}), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "set is_global 1"));
	av.is_global = 1;
	av.dlid = eb.lid;
	av.dgid[10] = 0;
	assert_int_equal(rv_ah_new(s.pd, &av, &(rv_ah *){NULL}), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "not an IPv4-mapped GID"));

	/* A GRH area that holds neither form names no sender. */
	{
		uint8_t junk[RV_UD_GRH_LEN];
		rv_wc fake = {.status = RV_WC_SUCCESS, .opcode = RV_WC_RECV, .wc_flags = RV_WC_GRH,
			      .slid = eb.lid};
		memset(junk, 0x11, sizeof(junk));
		assert_int_equal(rv_ah_from_wc(s.pd, 1, &fake, junk, &(rv_ah *){NULL}), -EINVAL);
		assert_non_null(strstr(rv_error_last(), "holds neither a GRH"));
		memset(junk, 0, sizeof(junk));
		junk[0] = 0x60; /* IP version 6, but no source GID */
		assert_int_equal(rv_ah_from_wc(s.pd, 1, &fake, junk, &(rv_ah *){NULL}), -EINVAL);
		assert_non_null(strstr(rv_error_last(), "names no source GID"));
	}

	/* A UD QP in RTR cannot send. */
	qa.send_cq = s.cq;
	assert_int_equal(rv_qp_new(s.pd, &qa, &rc), 0);
	assert_int_equal(rv_qp_to_init(rc, NULL), 0);
	assert_int_equal(rv_qp_to_rtr(rc, NULL), 0);
	assert_int_equal(send_to(&s, rc, ah, rv_qp_num(b), QKEY, 0, 8, 1), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "sends need RTS"));
	/* rv_qp_connect is for connected QPs. */
	assert_int_equal(rv_qp_connect(rc, &eb), -EINVAL);
	rv_qp_unref(rc);

	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&s);
}

/* One QP, one post, three destinations on two contexts; a 4096-byte message;
 * a receive buffer too small completes with a length error. */
static void test_soft_ud__one_qp_many_destinations(void **state)
{
	struct side s, t;
	rv_qp *a, *d[3];
	rv_endpoint e[3];
	rv_ah *ah[3];
	rv_send_wr wr[3];
	rv_sge g;
	size_t posted = 0;
	rv_wc wc;

	(void)state;
	side_open(&s);
	side_open(&t);
	a = ud_qp(&s, QKEY);
	d[0] = ud_qp(&s, QKEY);
	d[1] = ud_qp(&t, QKEY);
	d[2] = ud_qp(&t, QKEY);
	for (int i = 0; i < 3; i++) {
		struct side *x = i == 0 ? &s : &t;
		assert_int_equal(rv_qp_endpoint(d[i], &e[i]), 0);
		ah[i] = ah_to(&s, &e[i]);
		/* d[2]'s buffer (1024 bytes) is too small for the message. */
		post_recv(x, d[i], i == 2 ? 0 : 4096, i == 2 ? 1024 : 4096, 50 + (uint64_t)i);
	}
	for (int i = 0; i < 4096; i++)
		s.buf[i] = (uint8_t)(i * 7);
	g = (rv_sge){.addr = (uintptr_t)s.buf, .length = 4096, .lkey = rv_mr_lkey(s.mr)};
	for (int i = 0; i < 3; i++)
		wr[i] = (rv_send_wr){.wr_id = 10 + (uint64_t)i, .sg_list = &g, .num_sge = 1,
				     .opcode = RV_WR_SEND, .ah = ah[i], .remote_qpn = rv_qp_num(d[i]),
				     .remote_qkey = QKEY};
	/* 4096 - 40 bytes: with the GRH area they fill a 4096-byte receive. */
	g.length = 4096 - RV_UD_GRH_LEN;
	assert_int_equal(rv_qp_post_send(a, wr, 3, &posted), 0);
	assert_int_equal(posted, 3);
	wc = wait_for(s.cq, 50);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4096);
	assert_memory_equal(s.buf + 4096 + RV_UD_GRH_LEN, s.buf, 4096 - RV_UD_GRH_LEN);
	wc = wait_wc(t.cq);
	if (wc.wr_id == 52) {
		assert_int_equal(wc.status, RV_WC_LOC_LEN_ERR); /* 1024 bytes for 4096 */
		wc = wait_wc(t.cq);
		assert_int_equal(wc.wr_id, 51);
	} else {
		assert_int_equal(wc.wr_id, 51);
		assert_int_equal(wait_wc(t.cq).status, RV_WC_LOC_LEN_ERR);
	}
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.src_qp, rv_qp_num(a));
	assert_memory_equal(t.buf + 4096 + RV_UD_GRH_LEN, s.buf, 4096 - RV_UD_GRH_LEN);
	for (int i = 0; i < 3; i++) {
		rv_ah_unref(ah[i]);
		rv_qp_unref(d[i]);
	}
	rv_qp_unref(a);
	side_close(&s);
	side_close(&t);
}

/* A closed AH in a send WR: -RV_ECLOSED; closing the PD closes its AHs. */
static void test_soft_ud__closed_address_handles(void **state)
{
	struct side s;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah *ah, *ah2;
	rv_pd *pd2;
	rv_ah_attr q;

	(void)state;
	side_open(&s);
	a = ud_qp(&s, QKEY);
	b = ud_qp(&s, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	ah = ah_to(&s, &eb);
	assert_int_equal(rv_ah_close(ah), 0);
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), QKEY, 0, 8, 1), -RV_ECLOSED);
	assert_non_null(strstr(rv_error_last(), "closed by rv_ah_close"));
	assert_int_equal(rv_ah_query(ah, &q), -RV_ECLOSED);
	assert_cq_empty(s.cq);

	assert_int_equal(rv_pd_new(s.ctx, NULL, &pd2), 0);
	{
		rv_ah_attr av;
		memset(&av, 0, sizeof(av));
		memcpy(av.dgid, eb.gid, 16);
		av.is_global = 1;
		av.dlid = eb.lid;
		assert_int_equal(rv_ah_new(pd2, &av, &ah2), 0);
	}
	/* Another PD's AH is refused while it lives ... */
	assert_int_equal(send_to(&s, a, ah2, rv_qp_num(b), QKEY, 0, 8, 1), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "another PD"));
	/* ... and closed with its PD. */
	assert_int_equal(rv_pd_close(pd2), 0);
	assert_int_equal(rv_ah_query(ah2, &q), -RV_ECLOSED);
	assert_non_null(strstr(rv_error_last(), "closed because its PD #"));
	rv_ah_unref(ah2);
	rv_pd_unref(pd2);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&s);
}

/* ERR flushes posted receives and later sends; a bad lkey is a local
 * protection error that moves the QP to ERR. */
static void test_soft_ud__error_state_flushes(void **state)
{
	struct side s;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah *ah;
	rv_wc wc;

	(void)state;
	side_open(&s);
	a = ud_qp(&s, QKEY);
	b = ud_qp(&s, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	ah = ah_to(&s, &eb);
	post_recv(&s, a, 4096, 64, 30);
	rv_sge g = {.addr = (uintptr_t)s.buf, .length = 8, .lkey = rv_mr_lkey(s.mr) ^ 1};
	rv_send_wr wr = {.wr_id = 31, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_NO_INLINE, .ah = ah,
			 .remote_qpn = rv_qp_num(b), .remote_qkey = QKEY};
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	wc = wait_wc(s.cq);
	assert_int_equal(wc.wr_id, 30);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	wc = wait_wc(s.cq);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.status, RV_WC_LOC_PROT_ERR);
	assert_int_equal(rv_qp_state_of(a), RV_QPS_ERR);
	g.lkey = rv_mr_lkey(s.mr);
	wr.wr_id = 32;
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	wc = wait_wc(s.cq);
	assert_int_equal(wc.wr_id, 32);
	assert_int_equal(wc.status, RV_WC_WR_FLUSH_ERR);
	/* Back to RESET and up again: it works. */
	assert_int_equal(rv_qp_modify(a, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET}), 0);
	assert_int_equal(rv_qp_to_init(a, NULL), 0);
	assert_int_equal(rv_qp_to_rtr(a, NULL), 0);
	assert_int_equal(rv_qp_to_rts(a, NULL), 0);
	post_recv(&s, b, 4096, 64, 33);
	wr.wr_id = 34;
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	assert_int_equal(wait_for(s.cq, 33).status, RV_WC_SUCCESS);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&s);
}

/* Packet loss through soft0's fault injection: a lost datagram still
 * completes its send successfully (UD promises nothing), the receiver never
 * hears of it and its receive WRs stay posted for what does arrive; a
 * corrupted one fails the ICRC and is dropped and counted. */
static void test_soft_ud__lost_and_corrupted_datagrams(void **state)
{
	struct side s;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah *ah;
	rv_wc wc;
	uint64_t icrc, got = 0, sends = 0;

	(void)state;
	side_open(&s);
	a = ud_qp(&s, QKEY);
	b = ud_qp(&s, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	ah = ah_to(&s, &eb);
	for (uint64_t i = 0; i < 8; i++)
		post_recv(&s, b, 4096 + 64 * i, 64, 100 + i);
	/* The next 3 datagrams of a are lost, then one is corrupted. */
	assert_int_equal(rv_soft_fault_inject(s.ctx, a, RV_SOFT_FAULT_DROP, 3, 0), 0);
	icrc = counter(&s, SOFT_UD_DROP_ICRC);
	for (int i = 0; i < 6; i++)
		s.buf[i] = (uint8_t)i;
	for (uint64_t i = 0; i < 4; i++) {
		assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), QKEY, i, 1, i), 0);
	}
	assert_int_equal(rv_soft_fault_inject(s.ctx, a, RV_SOFT_FAULT_CORRUPT, 1, 0), 0);
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), QKEY, 4, 1, 4), 0);
	wait_counter(&s, SOFT_UD_DROP_ICRC, icrc);
	/* Then the link is clean again. */
	assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), QKEY, 5, 1, 5), 0);
	while (got < 2 || sends < 6) {
		wc = wait_wc(s.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		if (wc.opcode == RV_WC_SEND) {
			sends++;
			continue;
		}
		/* Only datagrams 3 and 5 arrive, into the first two receives. */
		assert_int_equal(wc.wr_id, 100 + got);
		assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 1);
		assert_int_equal(s.buf[4096 + 64 * got + RV_UD_GRH_LEN], got == 0 ? 3 : 5);
		got++;
	}
	assert_int_equal(counter(&s, SOFT_UD_DROP_ICRC), icrc + 1);
	assert_cq_empty(s.cq);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&s);
}

/* A context on ::1: the GRH area is the IPv6 header; IPv4 GIDs are refused. */
static void test_soft_ud__ipv6_context(void **state)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = "::1"};
	static const uint8_t loop6[16] = {[15] = 1};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_UD};
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	rv_qp *a, *b;
	rv_endpoint eb;
	rv_ah_attr av;
	rv_ah *ah, *reply;
	uint8_t *buf;
	rv_wc wc;

	(void)state;
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	if (rv_context_new(dev, &ca, &ctx) < 0) {
		rv_device_unref(dev);
		skip(); /* no IPv6 loopback on this machine */
	}
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_mr_alloc(pd, 8192, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	buf = rv_mr_addr(mr);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	for (rv_qp *q = a; q; q = q == a ? b : NULL) {
		assert_int_equal(rv_qp_to_init(q, NULL), 0);
		assert_int_equal(rv_qp_to_rtr(q, NULL), 0);
		assert_int_equal(rv_qp_to_rts(q, NULL), 0);
	}
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_memory_equal(eb.gid, loop6, 16);
	memset(&av, 0, sizeof(av));
	memcpy(av.dgid, eb.gid, 16);
	av.is_global = 1;
	av.dlid = eb.lid;
	av.hop_limit = 5;
	av.traffic_class = 0x40;
	assert_int_equal(rv_ah_new(pd, &av, &ah), 0);
	rv_sge rs = {.addr = (uintptr_t)buf + 4096, .length = 256, .lkey = rv_mr_lkey(mr)};
	assert_int_equal(rv_qp_recv(b, &rs, 1), 0);
	memcpy(buf, "six", 3);
	rv_sge ss = {.addr = (uintptr_t)buf, .length = 3, .lkey = rv_mr_lkey(mr)};
	rv_send_wr wr = {.wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = RV_WR_SEND, .ah = ah,
			 .remote_qpn = rv_qp_num(b), .remote_qkey = QKEY};
	assert_int_equal(rv_qp_post_send(a, &wr, 1, NULL), 0);
	wc = wait_for(cq, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 3);
	assert_int_equal(buf[4096] >> 4, 6);                     /* IP version 6 */
	assert_int_equal(((buf[4096] & 0xf) << 4) | (buf[4097] >> 4), 0x40); /* traffic class */
	assert_int_equal(buf[4096 + 6], 17);                     /* next header UDP */
	assert_int_equal(buf[4096 + 7], 5);                      /* hop limit */
	assert_memory_equal(buf + 4096 + 8, loop6, 16);
	assert_memory_equal(buf + 4096 + 24, loop6, 16);
	assert_memory_equal(buf + 4096 + RV_UD_GRH_LEN, "six", 3);
	/* The facade reads the IPv6 form too. */
	assert_int_equal(rv_ah_from_wc(pd, 1, &wc, buf + 4096, &reply), 0);
	assert_int_equal(rv_ah_query(reply, &av), 0);
	assert_memory_equal(av.dgid, loop6, 16);
	assert_int_equal(av.traffic_class, 0x40);
	/* An IPv4-mapped GID is out of reach from an IPv6 context. */
	av.dgid[10] = av.dgid[11] = 0xff;
	av.dgid[15] = 0;
	av.dgid[12] = 127;
	av.dgid[15] = 1;
	assert_int_equal(rv_ah_new(pd, &av, &(rv_ah *){NULL}), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "IPv4-mapped GID but this context is on an IPv6"));
	rv_ah_unref(reply);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
}

/* ---- hostile datagrams ------------------------------------------------------ */

/* Every datagram the context read, counted once whatever became of it. */
static uint64_t rx_total(struct side *s)
{
	uint64_t n[SOFT_UD_NCOUNTERS], t = 0;

	assert_int_equal(soft_ud_counters(s->ctx, n), 0);
	for (int c = SOFT_UD_RX; c < SOFT_UD_NCOUNTERS; c++)
		t += n[c];
	return t;
}

static struct side *raw_target;
static uint64_t raw_sent, raw_base;

/* Send one datagram, never more than 32 ahead of what the context has read,
 * so that the socket buffer cannot overflow on a slow machine and every
 * datagram is seen. */
static void raw_send(int fd, uint16_t port, const void *p, size_t n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	int64_t end = now_ms() + WAIT_MS;

	while (raw_sent - (rx_total(raw_target) - raw_base) > 32 && now_ms() < end)
		usleep(100);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(sendto(fd, p, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	raw_sent++;
}

/* A correctly framed datagram from the raw socket (fd bound to fport). */
static size_t frame(uint8_t *pkt, uint16_t fport, uint16_t dport, uint8_t opcode, uint32_t dest_qp,
		    uint32_t qkey, const void *payload, uint32_t len)
{
	struct rv_roce_ud h = {.opcode = opcode, .pkey = RV_ROCE_DEFAULT_PKEY, .dest_qp = dest_qp,
			       .qkey = qkey, .src_qp = 0x4242, .imm = 0};
	struct rv_roce_addr a = {.family = 4, .sport = fport, .dport = dport, .ip_id = 0, .ip_frag = 0x4000};
	size_t hl;

	a.src[0] = a.dst[0] = 127;
	a.src[3] = a.dst[3] = 1;
	hl = rv_roce_ud_encode_hdr(&h, len, pkt);
	memcpy(pkt + hl, payload, len);
	return rv_roce_ud_finish(&a, pkt, hl + len);
}

static void test_soft_ud__hostile_datagrams_are_dropped_and_counted(void **state)
{
	struct side s;
	rv_qp *b;
	rv_endpoint eb;
	struct sockaddr_in me = {.sin_family = AF_INET};
	socklen_t ml = sizeof(me);
	uint8_t pkt[8192], good[64];
	uint64_t bad, icrc, qp, qkey, lng, rx;
	uint16_t fport;
	size_t n;
	int fd;
	rv_wc wc;

	(void)state;
	side_open(&s);
	b = ud_qp(&s, QKEY);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	post_recv(&s, b, 4096, 128, 77);
	memset(s.buf + 4096, 0xcc, 4096);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &ml), 0);
	fport = ntohs(me.sin_port);
	raw_target = &s;
	raw_sent = 0;
	raw_base = rx_total(&s);
	bad = counter(&s, SOFT_UD_DROP_BAD);
	icrc = counter(&s, SOFT_UD_DROP_ICRC);
	qp = counter(&s, SOFT_UD_DROP_QP);
	qkey = counter(&s, SOFT_UD_DROP_QKEY);
	lng = counter(&s, SOFT_UD_DROP_LONG);
	rx = counter(&s, SOFT_UD_RX);

	/* Empty, 1 byte, every truncation of a good frame, garbage. */
	n = frame(pkt, fport, eb.lid, RV_ROCE_UD_SEND_ONLY, rv_qp_num(b), QKEY, "stranger", 8);
	raw_send(fd, eb.lid, pkt, 0);
	for (size_t k = 1; k < n; k++)
		raw_send(fd, eb.lid, pkt, k);
	srand(4791);
	for (int i = 0; i < 200; i++) {
		uint8_t junk[200];
		size_t len = (size_t)rand() % sizeof(junk);
		for (size_t k = 0; k < len; k++)
			junk[k] = (uint8_t)rand();
		raw_send(fd, eb.lid, junk, len);
	}
	/* Each bit of a good frame flipped (outside BTH byte 4, which the ICRC masks). */
	for (size_t bit = 0; bit < n * 8; bit++) {
		if (bit / 8 == 4)
			continue;
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		raw_send(fd, eb.lid, pkt, n);
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* Correctly framed: an RC opcode, an unknown QP, a wrong Q_Key, longer
	 * than the MTU, longer than the receive buffer's room. */
	n = frame(pkt, fport, eb.lid, RV_ROCE_UD_SEND_ONLY, rv_qp_num(b), QKEY, "stranger", 8);
	pkt[0] = 0x04; /* RC SEND Only */
	raw_send(fd, eb.lid, pkt, n);
	n = frame(pkt, fport, eb.lid, RV_ROCE_UD_SEND_ONLY, (rv_qp_num(b) + 77) & 0xffffff, QKEY, "x", 1);
	raw_send(fd, eb.lid, pkt, n);
	n = frame(pkt, fport, eb.lid, RV_ROCE_UD_SEND_ONLY, rv_qp_num(b), QKEY + 1, "x", 1);
	raw_send(fd, eb.lid, pkt, n);
	{
		static uint8_t big[5000];
		n = frame(pkt, fport, eb.lid, RV_ROCE_UD_SEND_ONLY, rv_qp_num(b), QKEY, big, 4100);
		raw_send(fd, eb.lid, pkt, n);
	}
	/* And a good one from the stranger: delivered, with its port as slid. */
	memcpy(good, "hello from a raw socket", 23);
	n = frame(pkt, fport, eb.lid, RV_ROCE_UD_SEND_ONLY, rv_qp_num(b), QKEY, good, 23);
	raw_send(fd, eb.lid, pkt, n);

	wc = wait_for(s.cq, 77);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.src_qp, 0x4242);
	assert_int_equal(wc.slid, fport);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 23);
	assert_memory_equal(s.buf + 4096 + RV_UD_GRH_LEN, good, 23);
	for (int i = RV_UD_GRH_LEN + 23; i < 4096; i++)
		assert_int_equal(s.buf[4096 + i], 0xcc);
	/* Datagrams are handled in order: everything before the good one was seen,
	 * each counted once. */
	assert_int_equal(rx_total(&s) - raw_base, raw_sent);
	assert_true(counter(&s, SOFT_UD_DROP_BAD) >= bad + 1 + 200 / 2);
	assert_true(counter(&s, SOFT_UD_DROP_ICRC) > icrc + 100);
	assert_int_equal(counter(&s, SOFT_UD_DROP_QP), qp + 1);
	assert_int_equal(counter(&s, SOFT_UD_DROP_QKEY), qkey + 1);
	assert_int_equal(counter(&s, SOFT_UD_DROP_LONG), lng + 1);
	assert_int_equal(counter(&s, SOFT_UD_RX), rx + 1);
	close(fd);

	/* UD still works end to end. */
	{
		rv_qp *a = ud_qp(&s, QKEY);
		rv_ah *ah = ah_to(&s, &eb);
		post_recv(&s, b, 4096, 128, 78);
		assert_int_equal(send_to(&s, a, ah, rv_qp_num(b), QKEY, 0, 8, 79), 0);
		assert_int_equal(wait_for(s.cq, 78).status, RV_WC_SUCCESS);
		rv_ah_unref(ah);
		rv_qp_unref(a);
	}
	rv_qp_unref(b);
	side_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_ud__ping_pong_on_one_context),
		cmocka_unit_test(test_soft_ud__roce_port),
		cmocka_unit_test(test_soft_ud__ping_pong_between_two_contexts),
		cmocka_unit_test(test_soft_ud__grh_area_holds_the_ipv4_header),
		cmocka_unit_test(test_soft_ud__qkey_mismatch_and_no_receive_are_dropped),
		cmocka_unit_test(test_soft_ud__bad_sends_are_refused_at_post),
		cmocka_unit_test(test_soft_ud__one_qp_many_destinations),
		cmocka_unit_test(test_soft_ud__closed_address_handles),
		cmocka_unit_test(test_soft_ud__error_state_flushes),
		cmocka_unit_test(test_soft_ud__lost_and_corrupted_datagrams),
		cmocka_unit_test(test_soft_ud__ipv6_context),
		cmocka_unit_test(test_soft_ud__hostile_datagrams_are_dropped_and_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
