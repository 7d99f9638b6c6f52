/*
 * The connection helper end to end on the software device soft0: RDMA WRITE
 * into the server's advertised buffer right after connect, SEND/RECV on the
 * caller's own QPs with receives posted before the exchange, graceful
 * disconnect seen by the peer with its work flushed, reconnect loops, IPv6,
 * and 64 client processes on one listener at once.
 *
 * Exits 77 (skip) when soft0 cannot connect two of its own contexts.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#define TMO 10000

static rv_context *soft_ctx(void)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;

	if (rv_device_find("soft0", &dev) < 0)
		return NULL;
	if (rv_context_new(dev, NULL, &ctx) < 0)
		ctx = NULL;
	rv_device_unref(dev);
	return ctx;
}

/* Wait for one completion on cq. */
static int wait_wc(rv_cq *cq, rv_wc *wc, int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = rv_cq_poll(cq, wc, 1);
		if (n != 0)
			return n < 0 ? n : 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 100000}, NULL);
	}
}

/* ---- a server thread: its checks are recorded and asserted by the main thread ---- */

struct server {
	pthread_t thread;
	rv_context *ctx;
	rv_listener *l;
	int port;
	int rounds;
	bool server_disconnects;
	char fail[512];
	char got[64];
};

#define SCHECK(s, cond)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			snprintf((s)->fail, sizeof((s)->fail), "%s:%d: %s (%s)", __FILE__, __LINE__,  \
				 #cond, rv_error_last());                                          \
			fprintf(stderr, "server: %s\n", (s)->fail);                               \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

static void server_open(struct server *s, const char *addr)
{
	memset(s, 0, sizeof(*s));
	s->ctx = soft_ctx();
	assert_non_null(s->ctx);
	assert_int_equal(rv_listener_new(s->ctx, addr, NULL, &s->l), 0);
	s->port = rv_listener_port(s->l);
	assert_true(s->port > 0);
}

static void server_close(struct server *s)
{
	assert_int_equal(pthread_join(s->thread, NULL), 0);
	if (s->fail[0])
		fail_msg("server: %s", s->fail);
	rv_listener_unref(s->l);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
}

/* Serve rounds connections: advertise a buffer and data; the client writes
 * into it and disconnects (or, with server_disconnects, the server does). */
static void *serve_write(void *arg)
{
	struct server *s = arg;
	rv_pd *pd = NULL;
	rv_mr *mr = NULL;
	rv_conn *c = NULL;

	SCHECK(s, rv_pd_new(s->ctx, NULL, &pd) == 0);
	SCHECK(s, rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &mr) == 0);
	for (int r = 0; r < s->rounds; r++) {
		rv_conn_attr a = {.mask = RV_CONN_ATTR_PD | RV_CONN_ATTR_MR | RV_CONN_ATTR_PRIVATE_DATA};
		uint32_t ev = 0;
		size_t n = 0;
		char data[32] = {0};

		a.pd = pd;
		a.mr = mr;
		a.private_data = "from-server";
		a.private_data_len = 11;
		memset(rv_mr_addr(mr), 0, 64);
		SCHECK(s, rv_listener_accept(s->l, &a, TMO, &c) == 0);
		SCHECK(s, rv_conn_state_of(c) == RV_CONN_ESTABLISHED);
		SCHECK(s, rv_conn_peer_data(c, data, sizeof(data), &n) == 0 && n == 11);
		SCHECK(s, memcmp(data, "from-client", 11) == 0);
		/* RTS, or already ERR: a fast client may have written and gone already. */
		SCHECK(s, rv_qp_state_of(rv_conn_qp(c, 0)) == RV_QPS_RTS || s->server_disconnects ||
			      rv_qp_state_of(rv_conn_qp(c, 0)) == RV_QPS_ERR);
		if (s->server_disconnects) {
			/* Wait for the client's write to land, then disconnect from this side. */
			for (int i = 0; i < 10000 && ((char *)rv_mr_addr(mr))[0] == 0; i++)
				nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 1000000}, NULL);
			SCHECK(s, rv_conn_disconnect(c, TMO) == 0);
		} else {
			SCHECK(s, rv_conn_poll(c, TMO, &ev) == 0);
			SCHECK(s, ev == RV_CONN_EVENT_DISCONNECTED);
		}
		SCHECK(s, rv_conn_state_of(c) == RV_CONN_DISCONNECTED);
		SCHECK(s, rv_qp_state_of(rv_conn_qp(c, 0)) == RV_QPS_ERR);
		snprintf(s->got, sizeof(s->got), "%s", (char *)rv_mr_addr(mr));
		SCHECK(s, strcmp(s->got, "written by RDMA") == 0);
		SCHECK(s, rv_conn_close(c) == 0);
		c = rv_conn_unref(c);
	}
out:
	rv_conn_unref(c);
	rv_mr_unref(mr);
	rv_pd_unref(pd);
	return NULL;
}

/* The client side of serve_write. */
static void client_write(rv_context *ctx, const char *addr, bool client_disconnects)
{
	rv_conn_attr a = {.mask = RV_CONN_ATTR_PRIVATE_DATA};
	const char *msg = "written by RDMA";
	rv_endpoint peer;
	rv_conn *c = NULL;
	rv_pd *pd;
	rv_mr *mr = NULL;
	rv_sge sge;
	rv_wc wc;
	char data[32] = {0};
	size_t n = 0;
	uint32_t ev = 0;

	a.private_data = "from-client";
	a.private_data_len = 11;
	if (rv_connect(ctx, addr, &a, TMO, &c) < 0)
		fail_msg("rv_connect: %s", rv_error_last());
	assert_int_equal(rv_conn_state_of(c), RV_CONN_ESTABLISHED);
	assert_int_equal(rv_conn_transport_of(c), RV_CONN_TRANSPORT_TCP);
	assert_int_equal(rv_conn_num_qps(c), 1);
	assert_int_equal(rv_qp_state_of(rv_conn_qp(c, 0)), RV_QPS_RTS);
	assert_int_equal(rv_conn_peer_endpoint(c, 0, &peer), 0);
	assert_true(peer.mask & RV_ENDPOINT_MR);
	assert_true(peer.mr_length >= 4096);
	assert_int_equal(rv_conn_peer_data(c, data, sizeof(data), &n), 0);
	assert_int_equal(n, 11);
	assert_memory_equal(data, "from-server", 11);
	assert_true(rv_conn_path_mtu(c) >= RV_MTU_256);

	/* No second round trip: write at once into the advertised buffer. */
	pd = rv_conn_pd(c);
	assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	strcpy(rv_mr_addr(mr), msg);
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = (uint32_t)strlen(msg) + 1;
	sge.lkey = rv_mr_lkey(mr);
	assert_int_equal(rv_qp_write(rv_conn_qp(c, 0), &sge, peer.mr_addr, peer.mr_rkey, 7), 0);
	assert_int_equal(wait_wc(rv_conn_cq(c), &wc, TMO), 0);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	if (client_disconnects) {
		assert_int_equal(rv_conn_disconnect(c, TMO), 0);
	} else {
		assert_int_equal(rv_conn_poll(c, TMO, &ev), 0);
		assert_int_equal(ev, RV_CONN_EVENT_DISCONNECTED);
	}
	assert_int_equal(rv_conn_state_of(c), RV_CONN_DISCONNECTED);
	assert_int_equal(rv_qp_state_of(rv_conn_qp(c, 0)), RV_QPS_ERR);
	rv_mr_unref(mr);
	rv_conn_unref(c);
}

/* UD through the helper over the TCP exchange: the server's own QP (in INIT,
 * receive posted, Q_Key 0x3333), the client's created with RV_CONN_ATTR_QKEY
 * 0x2222; each side learns the other's QP number and Q_Key and gets an
 * address handle from rv_conn_peer_ah(), and a datagram goes each way. */
static void *serve_ud(void *arg)
{
	struct server *s = arg;
	rv_pd *pd = NULL;
	rv_cq *cq = NULL;
	rv_qp *qp = NULL;
	rv_mr *mr = NULL;
	rv_conn *c = NULL;
	rv_ah *ah = NULL;
	uint32_t qpn = 0, qkey = 0;
	rv_wc wc;

	SCHECK(s, rv_pd_new(s->ctx, NULL, &pd) == 0);
	SCHECK(s, rv_cq_new(s->ctx, NULL, &cq) == 0);
	SCHECK(s, rv_qp_new(pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE,
						   .send_cq = cq, .qp_type = RV_QPT_UD}, &qp) == 0);
	SCHECK(s, rv_qp_to_init(qp, &(rv_qp_attr){.mask = RV_QP_QKEY, .qkey = 0x3333}) == 0);
	SCHECK(s, rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr) == 0);
	SCHECK(s, rv_qp_recv(qp, &(rv_sge){.addr = (uintptr_t)rv_mr_addr(mr) + 1024, .length = 1024,
					   .lkey = rv_mr_lkey(mr)}, 1) == 0);
	{
		rv_qp *qps[1] = {qp};
		rv_conn_attr a = {.mask = RV_CONN_ATTR_QPS, .qps = qps, .num_qps = 1};
		SCHECK(s, rv_listener_accept(s->l, &a, TMO, &c) == 0);
	}
	SCHECK(s, rv_qp_state_of(qp) == RV_QPS_RTS);
	SCHECK(s, rv_conn_peer_ah(c, 0, &ah, &qpn, &qkey) == 0);
	SCHECK(s, qkey == 0x2222);
	SCHECK(s, wait_wc(cq, &wc, TMO) == 0 && wc.status == RV_WC_SUCCESS && wc.wr_id == 1);
	SCHECK(s, wc.src_qp == qpn && wc.byte_len == RV_UD_GRH_LEN + 4);
	memcpy(s->got, (char *)rv_mr_addr(mr) + 1024 + RV_UD_GRH_LEN, 4);
	memcpy(rv_mr_addr(mr), "pong", 4);
	SCHECK(s, rv_qp_post_send(qp, &(rv_send_wr){.wr_id = 2, .opcode = RV_WR_SEND, .send_flags = RV_SEND_SIGNALED,
						    .num_sge = 1, .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey,
						    .sg_list = &(rv_sge){.addr = (uintptr_t)rv_mr_addr(mr),
									 .length = 4, .lkey = rv_mr_lkey(mr)}},
				  1, NULL) == 0);
	SCHECK(s, wait_wc(cq, &wc, TMO) == 0 && wc.status == RV_WC_SUCCESS && wc.wr_id == 2);
	SCHECK(s, rv_conn_disconnect(c, TMO) == 0);
out:
	rv_ah_unref(ah);
	rv_conn_unref(c);
	rv_qp_unref(qp);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	return NULL;
}

static void test_conn_soft__ud_through_the_tcp_exchange(void **state)
{
	struct server s;
	rv_context *ctx = soft_ctx();
	rv_conn_attr a = {.mask = RV_CONN_ATTR_QP_TYPE | RV_CONN_ATTR_QKEY, .qp_type = RV_QPT_UD, .qkey = 0x2222};
	rv_conn *c;
	rv_ah *ah = (rv_ah *)0x1;
	rv_mr *mr;
	rv_qp *qp;
	rv_qp_attr qa = {.mask = RV_QP_QKEY};
	rv_endpoint ep;
	uint32_t qpn = 0, qkey = 0, ev = 0;
	char addr[64];
	rv_wc wc;

	(void)state;
	server_open(&s, "127.0.0.1:0");
	assert_int_equal(pthread_create(&s.thread, NULL, serve_ud, &s), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	assert_int_equal(rv_connect(ctx, addr, &a, TMO, &c), 0);
	qp = rv_conn_qp(c, 0);
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_RTS);
	assert_int_equal(rv_qp_query(qp, &qa), 0);
	assert_int_equal(qa.qkey, 0x2222);
	assert_int_equal(rv_conn_peer_ah(c, 1, &ah, NULL, NULL), -EINVAL);
	assert_ptr_equal(ah, (rv_ah *)0x1);
	assert_int_equal(rv_conn_peer_ah(c, 0, &ah, &qpn, &qkey), 0);
	assert_int_equal(rv_conn_peer_endpoint(c, 0, &ep), 0);
	assert_int_equal(qpn, ep.qpn);
	assert_int_equal(qkey, 0x3333);
	assert_int_equal(rv_mr_alloc(rv_conn_pd(c), 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	assert_int_equal(rv_qp_recv(qp, &(rv_sge){.addr = (uintptr_t)rv_mr_addr(mr) + 1024, .length = 1024,
						 .lkey = rv_mr_lkey(mr)}, 7), 0);
	memcpy(rv_mr_addr(mr), "ping", 4);
	assert_int_equal(rv_qp_post_send(qp, &(rv_send_wr){.wr_id = 8, .opcode = RV_WR_SEND, .num_sge = 1, .ah = ah,
						       .send_flags = RV_SEND_SIGNALED, .remote_qpn = qpn,
						       .remote_qkey = qkey,
						       .sg_list = &(rv_sge){.addr = (uintptr_t)rv_mr_addr(mr), .length = 4,
									    .lkey = rv_mr_lkey(mr)}},
					 1, NULL), 0);
	for (int got = 0; got < 2;) {
		assert_int_equal(wait_wc(rv_conn_cq(c), &wc, TMO), 0);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		if (wc.wr_id == 7) {
			assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 4);
			assert_memory_equal((char *)rv_mr_addr(mr) + 1024 + RV_UD_GRH_LEN, "pong", 4);
		} else {
			assert_int_equal(wc.wr_id, 8);
		}
		got++;
	}
	assert_int_equal(rv_conn_poll(c, TMO, &ev), 0);
	assert_int_equal(ev, RV_CONN_EVENT_DISCONNECTED);
	server_close(&s);
	assert_memory_equal(s.got, "ping", 4);
	rv_ah_unref(ah);
	rv_mr_unref(mr);
	rv_conn_unref(c);
	rv_context_unref(ctx);
}

static void test_conn_soft__write_right_after_connect(void **state)
{
	struct server s;
	rv_context *ctx = soft_ctx();
	char addr[64];

	(void)state;
	server_open(&s, "127.0.0.1:0");
	s.rounds = 1;
	assert_int_equal(pthread_create(&s.thread, NULL, serve_write, &s), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	client_write(ctx, addr, true);
	server_close(&s);
	rv_context_unref(ctx);
}

static void test_conn_soft__ipv6_and_server_side_disconnect(void **state)
{
	struct server s;
	rv_context *ctx = soft_ctx();
	char addr[64];

	(void)state;
	server_open(&s, "[::1]:0");
	s.rounds = 1;
	s.server_disconnects = true;
	assert_int_equal(pthread_create(&s.thread, NULL, serve_write, &s), 0);
	snprintf(addr, sizeof(addr), "[::1]:%d", s.port);
	client_write(ctx, addr, false);
	server_close(&s);
	rv_context_unref(ctx);
}

static void test_conn_soft__reconnect_loop(void **state)
{
	struct server s;
	rv_context *ctx = soft_ctx();
	char addr[64];

	(void)state;
	server_open(&s, "127.0.0.1:0");
	s.rounds = 20;
	assert_int_equal(pthread_create(&s.thread, NULL, serve_write, &s), 0);
	snprintf(addr, sizeof(addr), "localhost:%d", s.port);
	for (int i = 0; i < s.rounds; i++)
		client_write(ctx, addr, true);
	server_close(&s);
	rv_context_unref(ctx);
}

/* SEND/RECV on the caller's QPs, receives posted in INIT before the exchange;
 * then the client disconnects and the server's outstanding receive is flushed. */
static void *serve_echo(void *arg)
{
	struct server *s = arg;
	rv_pd *pd = NULL;
	rv_cq *cq = NULL;
	rv_qp *qp = NULL;
	rv_mr *mr = NULL;
	rv_conn *c = NULL;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_conn_attr a = {.mask = RV_CONN_ATTR_QPS};
	rv_sge sge;
	rv_wc wc;
	uint32_t ev = 0;

	SCHECK(s, rv_pd_new(s->ctx, NULL, &pd) == 0);
	SCHECK(s, rv_cq_new(s->ctx, NULL, &cq) == 0);
	SCHECK(s, rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr) == 0);
	qa.send_cq = cq;
	SCHECK(s, rv_qp_new(pd, &qa, &qp) == 0);
	SCHECK(s, rv_qp_to_init(qp, NULL) == 0);
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = 64;
	sge.lkey = rv_mr_lkey(mr);
	SCHECK(s, rv_qp_recv(qp, &sge, 1) == 0);
	SCHECK(s, rv_qp_recv(qp, &sge, 2) == 0);
	a.num_qps = 1;
	a.qps = &qp;
	SCHECK(s, rv_listener_accept(s->l, &a, TMO, &c) == 0);
	SCHECK(s, rv_conn_qp(c, 0) == qp);
	SCHECK(s, wait_wc(cq, &wc, TMO) == 0);
	SCHECK(s, wc.status == RV_WC_SUCCESS && (wc.opcode & RV_WC_RECV) && wc.wr_id == 1);
	snprintf(s->got, sizeof(s->got), "%s", (char *)rv_mr_addr(mr));
	sge.length = wc.byte_len;
	SCHECK(s, rv_qp_send(qp, &sge, 3) == 0);
	SCHECK(s, wait_wc(cq, &wc, TMO) == 0);
	SCHECK(s, wc.status == RV_WC_SUCCESS && wc.wr_id == 3);
	SCHECK(s, rv_conn_poll(c, TMO, &ev) == 0 && ev == RV_CONN_EVENT_DISCONNECTED);
	/* The second receive was never consumed: it is flushed. */
	SCHECK(s, wait_wc(cq, &wc, TMO) == 0);
	SCHECK(s, wc.wr_id == 2 && wc.status == RV_WC_WR_FLUSH_ERR);
out:
	rv_conn_unref(c);
	rv_qp_unref(qp);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	return NULL;
}

static void test_conn_soft__send_recv_on_callers_qps_and_flush(void **state)
{
	struct server s;
	rv_context *ctx = soft_ctx();
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	rv_conn *c;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_conn_attr a = {.mask = RV_CONN_ATTR_QPS | RV_CONN_ATTR_NUM_QPS};
	rv_sge sge;
	rv_wc wc;
	char addr[64];
	int got_send = 0, got_recv = 0;

	(void)state;
	server_open(&s, "127.0.0.1:0");
	assert_int_equal(pthread_create(&s.thread, NULL, serve_echo, &s), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);
	sge.addr = (uintptr_t)rv_mr_addr(mr) + 2048;
	sge.length = 64;
	sge.lkey = rv_mr_lkey(mr);
	assert_int_equal(rv_qp_recv(qp, &sge, 10), 0);
	a.num_qps = 1;
	a.qps = &qp;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	assert_int_equal(rv_connect(ctx, addr, &a, TMO, &c), 0);
	strcpy(rv_mr_addr(mr), "ping");
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = 5;
	assert_int_equal(rv_qp_send(qp, &sge, 11), 0);
	while (!got_send || !got_recv) {
		assert_int_equal(wait_wc(cq, &wc, TMO), 0);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		if (wc.wr_id == 10)
			got_recv = 1;
		else if (wc.wr_id == 11)
			got_send = 1;
	}
	assert_string_equal((char *)rv_mr_addr(mr) + 2048, "ping");
	assert_int_equal(rv_conn_disconnect(c, TMO), 0);
	rv_conn_unref(c);
	server_close(&s);
	assert_string_equal(s.got, "ping");
	/* The caller's QP outlives the connection (in ERR), with its references. */
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_ERR);
	rv_qp_unref(qp);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
}

/* 64 client processes connect to one listener at once, each writes its own
 * slot of the server's buffer, then disconnects. */
#define N_CLIENTS 64

static int child_client(int port, int idx)
{
	rv_context *ctx = soft_ctx();
	rv_endpoint peer;
	rv_conn *c = NULL;
	rv_mr *mr = NULL;
	rv_wc wc;
	rv_sge sge;
	char addr[64];
	int rc;

	if (!ctx)
		return 2;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	rc = rv_connect(ctx, addr, NULL, 60000, &c);
	if (rc < 0) {
		fprintf(stderr, "client %d: %s\n", idx, rv_error_last());
		return 3;
	}
	if (rv_conn_peer_endpoint(c, 0, &peer) < 0 || rv_mr_alloc(rv_conn_pd(c), 64, RV_ACCESS_LOCAL_WRITE, NULL, &mr) < 0)
		return 4;
	*(uint64_t *)rv_mr_addr(mr) = 0x1000u + (unsigned)idx;
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = 8;
	sge.lkey = rv_mr_lkey(mr);
	if (rv_qp_write(rv_conn_qp(c, 0), &sge, peer.mr_addr + 8u * (unsigned)idx, peer.mr_rkey, 1) < 0 ||
	    wait_wc(rv_conn_cq(c), &wc, 30000) < 0 || wc.status != RV_WC_SUCCESS) {
		fprintf(stderr, "client %d: write failed: %s\n", idx, rv_error_last());
		return 5;
	}
	rc = rv_conn_disconnect(c, 30000);
	rv_mr_unref(mr);
	rv_conn_unref(c);
	rv_context_unref(ctx);
	return rc < 0 ? 6 : 0;
}

static void test_conn_soft__64_client_processes(void **state)
{
	rv_context *ctx = soft_ctx();
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT, .handshake_timeout_ms = 60000};
	rv_conn_attr a = {.mask = RV_CONN_ATTR_PD | RV_CONN_ATTR_MR};
	rv_conn *conns[N_CLIENTS];
	rv_listener *l;
	pid_t pids[N_CLIENTS];
	rv_pd *pd;
	rv_mr *mr;
	int port;

	(void)state;
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_mr_alloc(pd, 8 * N_CLIENTS, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &mr), 0);
	assert_int_equal(rv_listener_new(ctx, "127.0.0.1:0", &la, &l), 0);
	port = rv_listener_port(l);
	fflush(NULL);
	for (int i = 0; i < N_CLIENTS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(child_client(port, i));
	}
	a.pd = pd;
	a.mr = mr;
	for (int i = 0; i < N_CLIENTS; i++) {
		int rc = rv_listener_accept(l, &a, 60000, &conns[i]);
		if (rc < 0)
			fail_msg("accept %d: %s", i, rv_error_last());
	}
	for (int i = 0; i < N_CLIENTS; i++) {
		uint32_t ev = 0;
		assert_int_equal(rv_conn_poll(conns[i], 60000, &ev), 0);
		assert_int_equal(ev, RV_CONN_EVENT_DISCONNECTED);
		rv_conn_unref(conns[i]);
	}
	for (int i = 0; i < N_CLIENTS; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	for (int i = 0; i < N_CLIENTS; i++)
		assert_int_equal(((uint64_t *)rv_mr_addr(mr))[i], 0x1000u + (unsigned)i);
	rv_listener_unref(l);
	rv_mr_unref(mr);
	rv_pd_unref(pd);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
}

/* Whether soft0 can connect two of its contexts here (else: skip). */
static bool soft_connects(void)
{
	rv_context *a = soft_ctx(), *b = soft_ctx();
	rv_listener *l = NULL;
	rv_conn *c = NULL, *s = NULL;
	char addr[64];
	bool ok = false;

	if (a && b && rv_listener_new(a, "127.0.0.1:0", NULL, &l) == 0) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", rv_listener_port(l));
		if (rv_connect_start(b, addr, NULL, &c) == 0) {
			uint32_t ev = 0;
			for (int i = 0; i < 100 && ev != RV_CONN_EVENT_ESTABLISHED; i++) {
				if (!s && rv_listener_accept(l, NULL, 10, &s) < 0 && errno == 0)
					break;
				if (rv_conn_poll(c, 10, &ev) < 0)
					break;
			}
			if (!s)
				rv_listener_accept(l, NULL, 1000, &s);
			ok = ev == RV_CONN_EVENT_ESTABLISHED && s;
		}
	}
	if (!ok)
		fprintf(stderr, "soft0 cannot connect here: %s\n", rv_error_last());
	rv_conn_unref(s);
	rv_conn_unref(c);
	rv_listener_unref(l);
	rv_context_unref(a);
	rv_context_unref(b);
	return ok;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_soft__write_right_after_connect),
		cmocka_unit_test(test_conn_soft__ud_through_the_tcp_exchange),
		cmocka_unit_test(test_conn_soft__ipv6_and_server_side_disconnect),
		cmocka_unit_test(test_conn_soft__send_recv_on_callers_qps_and_flush),
		cmocka_unit_test(test_conn_soft__reconnect_loop),
		cmocka_unit_test(test_conn_soft__64_client_processes),
	};

	if (!soft_connects())
		return 77;
	return cmocka_run_group_tests_name("conn-soft", tests, NULL, NULL);
}
