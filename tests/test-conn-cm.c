/*
 * The connection helper over rdma_cm, live: a listener and a client on the
 * first kernel RDMA device that rdma_cm serves, RDMA WRITE into the
 * advertised buffer right after connect, and a graceful disconnect seen by
 * the server, which meanwhile WRITEs into the buffer the client advertised
 * (the client's QP must grant remote write: rdma_cm gives the access flags
 * only with the CM reply) and reads the QP numbers both sides see. The
 * address is RVERBS_TEST_CM_ADDR, else the first local IPv4 address that
 * rdma_cm maps to the device.
 *
 * Exits 77 (skip) when no rdma_cm device exists (the pure parts of the
 * rdma_cm transport are tested in test-conn-wire.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <rdma/rdma_cma.h>

#include <rverbs/rverbs.h>

#include "cm-device.h"

struct server {
	rv_context *ctx;
	rv_listener *l;
	rv_mr *mr;
	rv_pd *pd;
	int rc;
	uint32_t ev;
	uint32_t qpn, peer_qpn; /* its QP's number, the client's as the server sees it */
	char msg[512];
};

static void *serve(void *arg)
{
	struct server *s = arg;
	rv_conn_attr a = {.mask = RV_CONN_ATTR_PD | RV_CONN_ATTR_MR};
	rv_conn *c = NULL;
	rv_endpoint peer;
	rv_sge sge;
	rv_wc wc;
	int n;

	a.pd = s->pd;
	a.mr = s->mr;
	s->rc = rv_listener_accept(s->l, &a, 10000, &c);
	if (s->rc == 0) {
		s->qpn = rv_qp_num(rv_conn_qp(c, 0));
		s->rc = rv_conn_peer_endpoint(c, 0, &peer);
	}
	if (s->rc == 0) {
		s->peer_qpn = peer.qpn;
		strcpy((char *)rv_mr_addr(s->mr) + 1024, "from the server");
		sge.addr = (uintptr_t)rv_mr_addr(s->mr) + 1024;
		sge.length = 16;
		sge.lkey = rv_mr_lkey(s->mr);
		s->rc = (peer.mask & RV_ENDPOINT_MR) ? rv_qp_write(rv_conn_qp(c, 0), &sge, peer.mr_addr, peer.mr_rkey, 2)
						      : -EPROTO;
		if (s->rc == -EPROTO)
			snprintf(s->msg, sizeof(s->msg), "the client advertised no buffer");
	}
	if (s->rc == 0) {
		while ((n = rv_cq_poll(rv_conn_cq(c), &wc, 1)) == 0)
			;
		s->rc = n < 0 ? n : wc.status == RV_WC_SUCCESS ? 0 : -EIO;
		if (s->rc < 0)
			snprintf(s->msg, sizeof(s->msg), "the server's WRITE into the client's buffer: %s",
				 n < 0 ? rv_error_last() : rv_wc_status_str((int)wc.status));
	}
	if (s->rc == 0)
		s->rc = rv_conn_poll(c, 10000, &s->ev);
	if (s->msg[0]) {
		rv_conn_unref(c);
		return NULL;
	}
	snprintf(s->msg, sizeof(s->msg), "%s", rv_error_last());
	rv_conn_unref(c);
	return NULL;
}

static void test_conn_cm__write_and_disconnect(void **state)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = RV_CONN_TRANSPORT_RDMA_CM};
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_TRANSPORT | RV_CONN_ATTR_PD | RV_CONN_ATTR_MR,
			   .transport = RV_CONN_TRANSPORT_RDMA_CM};
	rv_mr *client_mr;
	time_t deadline;
	struct server s;
	rv_context *ctx;
	rv_endpoint peer;
	rv_conn *c;
	rv_mr *mr;
	rv_sge sge;
	rv_wc wc;
	pthread_t t;
	char addr[96];
	int n = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.ctx = cm_ctx();
	ctx = cm_ctx();
	assert_int_equal(rv_pd_new(s.ctx, NULL, &s.pd), 0);
	assert_int_equal(rv_mr_alloc(s.pd, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &s.mr), 0);
	snprintf(addr, sizeof(addr), "%s:0", cm_ip);
	assert_int_equal(rv_listener_new(s.ctx, addr, &la, &s.l), 0);
	snprintf(addr, sizeof(addr), "%s:%d", cm_ip, rv_listener_port(s.l));
	assert_int_equal(rv_pd_new(ctx, NULL, &ca.pd), 0);
	assert_int_equal(rv_mr_alloc(ca.pd, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &client_mr), 0);
	ca.mr = client_mr;
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	if (rv_connect(ctx, addr, &ca, 10000, &c) < 0)
		fail_msg("rv_connect: %s", rv_error_last());
	assert_int_equal(rv_conn_transport_of(c), RV_CONN_TRANSPORT_RDMA_CM);
	assert_int_equal(rv_conn_peer_endpoint(c, 0, &peer), 0);
	assert_true(peer.mask & RV_ENDPOINT_MR);
	assert_int_equal(rv_mr_alloc(rv_conn_pd(c), 64, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	strcpy(rv_mr_addr(mr), "over rdma_cm");
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = 13;
	sge.lkey = rv_mr_lkey(mr);
	assert_int_equal(rv_qp_write(rv_conn_qp(c, 0), &sge, peer.mr_addr, peer.mr_rkey, 1), 0);
	while ((n = rv_cq_poll(rv_conn_cq(c), &wc, 1)) == 0)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	/* The server's WRITE into this side's buffer (it fails on the server's
	 * side with remote invalid request if this QP lacks remote write). */
	deadline = time(NULL) + 10;
	while (strcmp(rv_mr_addr(client_mr), "from the server") != 0 && time(NULL) < deadline)
		;
	assert_int_equal(rv_conn_disconnect(c, 5000), 0);
	pthread_join(t, NULL);
	if (s.rc < 0)
		fail_msg("server: %s", s.msg);
	assert_string_equal(rv_mr_addr(client_mr), "from the server");
	/* Each side's peer endpoint names the other's QP. */
	assert_int_equal(s.peer_qpn, rv_qp_num(rv_conn_qp(c, 0)));
	assert_int_equal(peer.qpn, s.qpn);
	assert_int_equal(s.ev, RV_CONN_EVENT_DISCONNECTED);
	assert_string_equal(rv_mr_addr(s.mr), "over rdma_cm");
	rv_mr_unref(mr);
	rv_conn_unref(c);
	rv_mr_unref(client_mr);
	rv_pd_unref(ca.pd);
	rv_context_unref(ctx);
	rv_listener_unref(s.l);
	rv_mr_unref(s.mr);
	rv_pd_unref(s.pd);
	rv_context_unref(s.ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_cm__write_and_disconnect),
	};

	if (!cm_device_find()) {
		fprintf(stderr, "skip: no rdma_cm device with an IPv4 address here\n");
		return 77;
	}
	return cmocka_run_group_tests_name("conn-cm", tests, NULL, NULL);
}
