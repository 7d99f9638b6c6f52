/*
 * UD and multicast through rdma_cm in the connection helper, live on the
 * first kernel RDMA device rdma_cm serves (rxe0 in the VM):
 *
 * - a UD connection over rdma_cm (RDMA_PS_UDP, SIDR REQ/REP): the client's
 *   rv_conn_peer_ah() comes from the SIDR REP's address handle, the
 *   server's from the client's QP in rverbs' private data; a datagram goes
 *   each way, both sides see each other's QP numbers and rdma_cm's Q_Key;
 * - a UD client against a listener that wants RC is refused (-ECONNREFUSED,
 *   the server names the mismatch);
 * - rv_mcast_join(): two QPs join one group through rdma_join_multicast,
 *   both receive a datagram a third QP sends with the join's AH and Q_Key;
 *   after rv_mcast_leave() of one, only the other receives.
 *
 * The address is RVERBS_TEST_CM_ADDR, else the first local IPv4 address that
 * rdma_cm maps to the device. Exits 77 (skip) without such a device; soft0's
 * side of rv_mcast_join is test-mcast-join.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <poll.h>
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
#include <unistd.h>

#include <cmocka.h>
#include <rdma/rdma_cma.h>

#include <rverbs/rverbs.h>

#include "cm-device.h"
#include "test-clock.h"

#define WAIT_MS 10000

/* Receives of 256 bytes in mr from slot first; wr_id = slot. */
static int post_recvs(rv_qp *qp, rv_mr *mr, uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < first + n; i++) {
		rv_sge g = {.addr = (uintptr_t)rv_mr_addr(mr) + 256 * i, .length = 256, .lkey = rv_mr_lkey(mr)};
		int rc = rv_qp_recv(qp, &g, i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* A receive on cq (sends skipped) whose QP is qpn (0: any): its wr_id, or -1. */
static int64_t wait_recv(rv_cq *cq, int ms, uint32_t qpn, uint32_t *src_qp)
{
	int64_t until = now_ms() + ms;
	rv_wc wc;

	while (now_ms() < until) {
		int n = rv_cq_poll(cq, &wc, 1);
		if (n < 0)
			return -1;
		if (n == 1 && (wc.opcode & RV_WC_RECV) && (!qpn || wc.qp_num == qpn)) {
			if (src_qp)
				*src_qp = wc.src_qp;
			return wc.status == RV_WC_SUCCESS ? (int64_t)wc.wr_id : -1;
		}
		if (n == 0)
			usleep(1000);
	}
	return -1;
}

static int send_to(rv_qp *qp, rv_mr *mr, rv_ah *ah, uint32_t qpn, uint32_t qkey, const char *text)
{
	char *src = (char *)rv_mr_addr(mr) + 3840;
	rv_sge g = {.addr = (uintptr_t)src, .length = (uint32_t)strlen(text) + 1, .lkey = rv_mr_lkey(mr)};
	rv_send_wr wr = {.sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND, .ah = ah, .remote_qpn = qpn,
			 .remote_qkey = qkey};

	strcpy(src, text);
	return rv_qp_post_send(qp, &wr, 1, NULL);
}

static const char *payload(rv_mr *mr, int64_t slot)
{
	return (const char *)rv_mr_addr(mr) + 256 * slot + 40; /* after the GRH */
}

struct server {
	rv_context *ctx;
	rv_listener *l;
	uint32_t qp_type;
	volatile int ready; /* receives posted */
	int rc;
	uint32_t qpn, peer_qpn, peer_qkey;
	char got[64];
	char msg[512];
};

static void *serve(void *arg)
{
	struct server *s = arg;
	rv_conn_attr a = {.mask = RV_CONN_ATTR_QP_TYPE | RV_CONN_ATTR_PRIVATE_DATA, .qp_type = s->qp_type,
			  .private_data = "srv", .private_data_len = 4};
	rv_conn *c = NULL;
	rv_mr *mr = NULL;
	rv_ah *ah = NULL;
	int64_t slot;
	uint32_t src = 0;

	s->rc = rv_listener_accept(s->l, &a, WAIT_MS, &c);
	if (s->rc == 0)
		s->rc = rv_mr_alloc(rv_conn_pd(c), 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr);
	if (s->rc == 0)
		s->rc = post_recvs(rv_conn_qp(c, 0), mr, 0, 4);
	if (s->rc == 0)
		s->rc = rv_conn_peer_ah(c, 0, &ah, &s->peer_qpn, &s->peer_qkey);
	if (s->rc < 0) {
		snprintf(s->msg, sizeof(s->msg), "%s", rv_error_last());
		s->ready = -1;
		goto out;
	}
	s->qpn = rv_qp_num(rv_conn_qp(c, 0));
	s->ready = 1;
	slot = wait_recv(rv_conn_cq(c), WAIT_MS, 0, &src);
	if (slot < 0) {
		s->rc = -ETIMEDOUT;
		snprintf(s->msg, sizeof(s->msg), "no datagram from the client");
		goto out;
	}
	snprintf(s->got, sizeof(s->got), "%s", payload(mr, slot));
	if (src != s->peer_qpn) {
		s->rc = -EPROTO;
		snprintf(s->msg, sizeof(s->msg), "the datagram came from QP 0x%x, the client's is 0x%x", src, s->peer_qpn);
		goto out;
	}
	s->rc = send_to(rv_conn_qp(c, 0), mr, ah, s->peer_qpn, s->peer_qkey, "pong from the server");
	if (s->rc == 0 && wait_recv(rv_conn_cq(c), 100, 0, NULL) >= 0) /* the send's completion is skipped */
		s->rc = 0;
	usleep(200 * 1000); /* let the datagram leave before the QP goes */
out:
	rv_ah_unref(ah);
	rv_mr_unref(mr);
	rv_conn_unref(c);
	return NULL;
}

static void test_conn_cm_ud__datagrams_both_ways(void **state)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = RV_CONN_TRANSPORT_RDMA_CM};
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_TRANSPORT | RV_CONN_ATTR_QP_TYPE | RV_CONN_ATTR_PRIVATE_DATA,
			   .transport = RV_CONN_TRANSPORT_RDMA_CM, .qp_type = RV_QPT_UD, .private_data = "cli",
			   .private_data_len = 4};
	struct server s;
	rv_context *ctx;
	rv_conn *c = NULL;
	rv_mr *mr;
	rv_ah *ah;
	rv_endpoint peer;
	uint32_t qpn = 0, qkey = 0, src = 0;
	char addr[96], data[8];
	size_t dlen = 0;
	int64_t slot, until;
	pthread_t t;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.qp_type = RV_QPT_UD;
	s.ctx = cm_ctx();
	ctx = cm_ctx();
	snprintf(addr, sizeof(addr), "%s:0", cm_ip);
	assert_int_equal(rv_listener_new(s.ctx, addr, &la, &s.l), 0);
	snprintf(addr, sizeof(addr), "%s:%d", cm_ip, rv_listener_port(s.l));
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	if (rv_connect(ctx, addr, &ca, WAIT_MS, &c) < 0)
		fail_msg("rv_connect (UD over rdma_cm): %s", rv_error_last());
	assert_int_equal(rv_conn_transport_of(c), RV_CONN_TRANSPORT_RDMA_CM);
	assert_int_equal(rv_conn_peer_data(c, data, sizeof(data), &dlen), 0);
	assert_int_equal(dlen, 4);
	assert_string_equal(data, "srv");
	assert_int_equal(rv_mr_alloc(rv_conn_pd(c), 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	assert_int_equal(post_recvs(rv_conn_qp(c, 0), mr, 0, 4), 0);
	if (rv_conn_peer_ah(c, 0, &ah, &qpn, &qkey) < 0)
		fail_msg("rv_conn_peer_ah: %s", rv_error_last());
	assert_int_equal(qkey, RDMA_UDP_QKEY);
	assert_int_equal(rv_conn_peer_endpoint(c, 0, &peer), 0);
	assert_int_equal(peer.qpn, qpn);
	until = now_ms() + WAIT_MS;
	while (!s.ready && now_ms() < until)
		usleep(1000);
	if (s.ready != 1) {
		pthread_join(t, NULL);
		fail_msg("server: %s", s.msg);
	}
	assert_int_equal(qpn, s.qpn);
	assert_int_equal(send_to(rv_conn_qp(c, 0), mr, ah, qpn, qkey, "ping from the client"), 0);
	slot = wait_recv(rv_conn_cq(c), WAIT_MS, 0, &src);
	pthread_join(t, NULL);
	if (s.rc < 0)
		fail_msg("server: %s", s.msg);
	assert_string_equal(s.got, "ping from the client");
	assert_int_equal(s.peer_qpn, rv_qp_num(rv_conn_qp(c, 0)));
	assert_int_equal(s.peer_qkey, RDMA_UDP_QKEY);
	assert_true(slot >= 0);
	assert_string_equal(payload(mr, slot), "pong from the server");
	assert_int_equal(src, s.qpn);
	/* No disconnect in SIDR: this side's QP goes to ERR, the call returns at once. */
	assert_int_equal(rv_conn_disconnect(c, 1000), 0);
	assert_int_equal(rv_conn_state_of(c), RV_CONN_DISCONNECTED);
	rv_ah_unref(ah);
	rv_mr_unref(mr);
	rv_conn_unref(c);
	rv_context_unref(ctx);
	rv_listener_unref(s.l);
	rv_context_unref(s.ctx);
}

static void test_conn_cm_ud__rc_listener_refuses(void **state)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = RV_CONN_TRANSPORT_RDMA_CM};
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_TRANSPORT | RV_CONN_ATTR_QP_TYPE, .transport = RV_CONN_TRANSPORT_RDMA_CM,
			   .qp_type = RV_QPT_UD};
	struct server s;
	rv_context *ctx;
	rv_conn *c = NULL;
	char addr[96];
	pthread_t t;
	int rc;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.qp_type = RV_QPT_RC;
	s.ctx = cm_ctx();
	ctx = cm_ctx();
	snprintf(addr, sizeof(addr), "%s:0", cm_ip);
	assert_int_equal(rv_listener_new(s.ctx, addr, &la, &s.l), 0);
	snprintf(addr, sizeof(addr), "%s:%d", cm_ip, rv_listener_port(s.l));
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	rc = rv_connect(ctx, addr, &ca, WAIT_MS, &c);
	pthread_join(t, NULL);
	assert_int_equal(rc, -ECONNREFUSED);
	assert_null(c);
	assert_int_equal(s.rc, -EPROTO);
	assert_non_null(strstr(s.msg, "UD"));
	/* RV_CONN_ATTR_QKEY other than rdma_cm's is refused before anything is sent. */
	ca.mask |= RV_CONN_ATTR_QKEY;
	ca.qkey = 0x1234;
	assert_int_equal(rv_connect(ctx, addr, &ca, WAIT_MS, &c), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "RDMA_UDP_QKEY"));
	rv_context_unref(ctx);
	rv_listener_unref(s.l);
	rv_context_unref(s.ctx);
}

/* The next event of ch within WAIT_MS, acknowledged; its type, or -1. */
static int next_cm_event(struct rdma_event_channel *ch)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev = NULL;
	int type;

	if (poll(&pfd, 1, WAIT_MS) != 1 || rdma_get_cm_event(ch, &ev) != 0)
		return -1;
	type = (int)ev->event;
	rdma_ack_cm_event(ev);
	return type;
}

/* A UD client that names another host's GID as its own in rverbs' private
 * data (so that the server's datagrams would go there) is refused on RoCE:
 * a raw librdmacm SIDR request with hand-made private data. */
static void test_conn_cm_ud__client_naming_another_hosts_gid_is_refused(void **state)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = RV_CONN_TRANSPORT_RDMA_CM};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = NULL;
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_UDP}, *ai = NULL;
	struct rdma_conn_param cp;
	uint8_t pd[29 + 26];
	struct server s;
	char port[16], addr[96];
	pthread_t t;
	int type;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.qp_type = RV_QPT_UD;
	s.ctx = cm_ctx();
	snprintf(addr, sizeof(addr), "%s:0", cm_ip);
	assert_int_equal(rv_listener_new(s.ctx, addr, &la, &s.l), 0);
	snprintf(port, sizeof(port), "%d", rv_listener_port(s.l));
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);

	/* rverbs' private data, version 1, flag 2 (a UD QP follows), no MR, no
	 * data; then QPN, Q_Key, the GID ::ffff:192.0.2.1 (TEST-NET-1), LID 0. */
	memset(pd, 0, sizeof(pd));
	pd[0] = 'R';
	pd[1] = 'V';
	pd[2] = 1;
	pd[3] = 2;
	pd[29 + 3] = 5;                          /* QPN 5 */
	memcpy(pd + 29 + 4, "\x01\x23\x45\x67", 4); /* RDMA_UDP_QKEY */
	pd[29 + 8 + 10] = 0xff;
	pd[29 + 8 + 11] = 0xff;
	pd[29 + 8 + 12] = 192;
	pd[29 + 8 + 14] = 2;
	pd[29 + 8 + 15] = 1;
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	assert_int_equal(rdma_getaddrinfo(cm_ip, port, &hints, &ai), 0);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, ai->ai_dst_addr, WAIT_MS), 0);
	assert_int_equal(next_cm_event(ch), RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(id, WAIT_MS), 0);
	assert_int_equal(next_cm_event(ch), RDMA_CM_EVENT_ROUTE_RESOLVED);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	assert_int_equal(rdma_connect(id, &cp), 0);
	type = next_cm_event(ch);
	pthread_join(t, NULL);
	assert_int_not_equal(type, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(s.rc, -EPROTO);
	assert_non_null(strstr(s.msg, "not its own address"));
	rdma_destroy_id(id);
	rdma_freeaddrinfo(ai);
	rdma_destroy_event_channel(ch);
	rv_listener_unref(s.l);
	rv_context_unref(s.ctx);
}

static rv_qp *ud_qp(rv_pd *pd, rv_cq *cq)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_UD,
			      .send_cq = cq};
	rv_qp *qp = NULL;

	if (rv_qp_new(pd, &qa, &qp) < 0 || rv_qp_to_init(qp, NULL) < 0 || rv_qp_to_rtr(qp, NULL) < 0 ||
	    rv_qp_to_rts(qp, NULL) < 0)
		fail_msg("a UD QP: %s", rv_error_last());
	return qp;
}

static void test_conn_cm_ud__mcast_join(void **state)
{
	rv_context *ctx = cm_ctx();
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	rv_qp *tx, *r1, *r2;
	rv_mcast *m1 = NULL, *m2 = NULL;
	rv_ah *ah1 = NULL, *ah2 = NULL;
	uint32_t qkey1 = 0, qkey2 = 0, src = 0;
	int64_t a, b;
	char group[32];

	(void)state;
	snprintf(group, sizeof(group), "239.%u.%u.%u", 100 + (unsigned)getpid() % 100, (unsigned)time(NULL) & 0xff,
		 1 + (unsigned)getpid() % 254);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	tx = ud_qp(pd, cq);
	r1 = ud_qp(pd, cq);
	r2 = ud_qp(pd, cq);
	assert_int_equal(post_recvs(r1, mr, 0, 4), 0);
	assert_int_equal(post_recvs(r2, mr, 4, 4), 0);
	if (rv_mcast_join(r1, group, WAIT_MS, &m1, &ah1, &qkey1) < 0)
		fail_msg("rv_mcast_join %s: %s", group, rv_error_last());
	if (rv_mcast_join(r2, group, WAIT_MS, &m2, &ah2, &qkey2) < 0)
		fail_msg("rv_mcast_join %s (second QP): %s", group, rv_error_last());
	assert_int_equal(qkey1, qkey2);
	usleep(300 * 1000); /* IGMP report and the interface's membership */
	assert_int_equal(send_to(tx, mr, ah1, RV_MCAST_QPN, qkey1, "to the group"), 0);
	a = wait_recv(cq, WAIT_MS, rv_qp_num(r1), &src);
	if (a < 0)
		fail_msg("the first member got nothing");
	assert_int_equal(src, rv_qp_num(tx));
	b = wait_recv(cq, WAIT_MS, rv_qp_num(r2), NULL);
	if (b < 0)
		fail_msg("the second member got nothing");
	assert_string_equal(payload(mr, a), "to the group");
	assert_string_equal(payload(mr, b), "to the group");
	assert_int_equal(rv_mcast_leave(m2), 0);
	assert_int_equal(send_to(tx, mr, ah1, RV_MCAST_QPN, qkey1, "again"), 0);
	a = wait_recv(cq, WAIT_MS, rv_qp_num(r1), NULL);
	assert_true(a >= 0);
	assert_string_equal(payload(mr, a), "again");
	assert_true(wait_recv(cq, 300, rv_qp_num(r2), NULL) < 0);
	assert_int_equal(rv_mcast_leave(m1), 0);
	rv_ah_unref(ah1);
	rv_ah_unref(ah2);
	rv_qp_unref(tx);
	rv_qp_unref(r1);
	rv_qp_unref(r2);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_cm_ud__datagrams_both_ways),
		cmocka_unit_test(test_conn_cm_ud__rc_listener_refuses),
		cmocka_unit_test(test_conn_cm_ud__client_naming_another_hosts_gid_is_refused),
		cmocka_unit_test(test_conn_cm_ud__mcast_join),
	};

	if (!cm_device_find()) {
		fprintf(stderr, "skip: no rdma_cm device with an IPv4 address here\n");
		return 77;
	}
	return cmocka_run_group_tests_name("conn-cm-ud", tests, NULL, NULL);
}
