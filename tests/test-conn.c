/*
 * The connection helper against the mock driver: the handle rules, the
 * exchange between rv_connect_start() and rv_listener_accept() driven from
 * one thread, every kind of bad peer (a raw TCP client written here), the
 * mismatches that are named in errors, events and disconnects, the epoll
 * descriptors, and 64 client processes on one listener.
 *
 * Every bad-peer case checks that the listener answers within its timeout
 * with a clear error naming the client, and then serves an honest client.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn/wire.h"
#include "mock-driver.h"
#include "test-clock.h"

struct fixture {
	rv_device *dev;
	rv_context *ctx;
	rv_listener *l;
	int port;
	char addr[64];
};

#define HS_TIMEOUT 300

static int setup(void **state)
{
	static struct fixture f;
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT, .handshake_timeout_ms = HS_TIMEOUT};

	mock_reset();
	memset(&f, 0, sizeof(f));
	assert_int_equal(mock_device_new("mock0", &f.dev), 0);
	assert_int_equal(rv_context_new(f.dev, NULL, &f.ctx), 0);
	assert_int_equal(rv_listener_new(f.ctx, "127.0.0.1:0", &la, &f.l), 0);
	f.port = rv_listener_port(f.l);
	assert_true(f.port > 0 && f.port < 65536);
	snprintf(f.addr, sizeof(f.addr), "127.0.0.1:%d", f.port);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rv_listener_unref(f->l);
	assert_int_equal(rv_context_close(f->ctx), 0);
	rv_context_unref(f->ctx);
	rv_device_unref(f->dev);
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.order_violations, 0);
	assert_int_equal(mock.contract_violations, 0);
	assert_int_equal(mock_live_total(), 0);
	return 0;
}

static char pair_error[512];

/* An honest client and the listener, driven from this thread. */
static int connect_pair(struct fixture *f, const rv_conn_attr *ca, const rv_conn_attr *sa, rv_conn **ret_cli,
			rv_conn **ret_srv)
{
	rv_conn *cli = NULL, *srv = NULL;
	uint32_t ev = RV_CONN_EVENT_NONE;
	int srv_rc = 0, rc = rv_connect_start(f->ctx, f->addr, ca, &cli);

	if (rc < 0)
		return rc;
	for (int i = 0; i < 400 && (ev != RV_CONN_EVENT_ESTABLISHED || !srv); i++) {
		/* A server that rejects the client: keep driving the client, which must learn why. */
		if (!srv && srv_rc == 0) {
			rc = rv_listener_accept(f->l, sa, 0, &srv);
			if (rc < 0 && rc != -EAGAIN)
				srv_rc = rc;
		}
		if (ev != RV_CONN_EVENT_ESTABLISHED) {
			rc = rv_conn_poll(cli, 5, &ev);
			if (rc < 0)
				break;
		}
		rc = 0;
	}
	if (rc == 0 && (!srv || ev != RV_CONN_EVENT_ESTABLISHED))
		rc = -ETIMEDOUT;
	if (rc < 0) {
		snprintf(pair_error, sizeof(pair_error), "%s", rv_error_last());
		rv_conn_unref(cli);
		rv_conn_unref(srv);
		return rc;
	}
	*ret_cli = cli;
	*ret_srv = srv;
	return 0;
}

static void honest_round(struct fixture *f)
{
	rv_conn *cli, *srv;
	uint32_t ev = 0;

	assert_int_equal(connect_pair(f, NULL, NULL, &cli, &srv), 0);
	assert_int_equal(rv_conn_state_of(cli), RV_CONN_ESTABLISHED);
	assert_int_equal(rv_conn_state_of(srv), RV_CONN_ESTABLISHED);
	assert_int_equal(rv_qp_state_of(rv_conn_qp(cli, 0)), RV_QPS_RTS);
	assert_int_equal(rv_qp_state_of(rv_conn_qp(srv, 0)), RV_QPS_RTS);
	assert_int_equal(rv_conn_disconnect(cli, 0), 0);
	assert_int_equal(rv_conn_poll(srv, 2000, &ev), 0);
	assert_int_equal(ev, RV_CONN_EVENT_DISCONNECTED);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
}

static int raw_connect(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void raw_send(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* A well-formed REQ for one QP, as a hand-written client would send it. */
static int craft_req(uint8_t *buf, size_t cap, uint32_t qp_type, uint8_t mtu, uint32_t caps, bool gid)
{
	struct rv_wire_hello h;

	memset(&h, 0, sizeof(h));
	h.num_qps = 1;
	if (gid) {
		h.ep[0].gid[10] = 0xff;
		h.ep[0].gid[11] = 0xff;
		h.ep[0].gid[12] = 127;
		h.ep[0].gid[15] = 1;
	}
	h.ep[0].lid = 7;
	h.ep[0].port_num = 1;
	h.ep[0].mtu = mtu;
	h.ep[0].qpn = 0x999;
	h.ep[0].psn = 0x123;
	h.ep[0].qp_type = qp_type;
	h.ep[0].caps = caps;
	return rv_wire_hello_encode(RV_WIRE_REQ, &h, buf, cap, "test");
}

/* Read one whole message from a raw socket (with a timeout). */
static int raw_recv_msg(int fd, struct rv_wire_hdr *h, uint8_t *payload, size_t cap)
{
	uint8_t hdr[RV_WIRE_HDR_LEN];
	size_t got = 0;
	struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};

	while (got < sizeof(hdr)) {
		if (poll(&p, 1, 2000) <= 0)
			return -ETIMEDOUT;
		ssize_t n = recv(fd, hdr + got, sizeof(hdr) - got, 0);
		if (n <= 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	if (rv_wire_hdr_decode(hdr, sizeof(hdr), h, "test") < 0 || h->length > cap)
		return -EBADMSG;
	for (got = 0; got < h->length;) {
		ssize_t n = recv(fd, payload + got, h->length - got, 0);
		if (n <= 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

/* The listener must fail this client within bound_ms with errnum and a
 * message containing what, then serve an honest client. */
static void expect_bad_peer(struct fixture *f, int errnum, const char *what, int64_t bound_ms)
{
	rv_conn *c = (rv_conn *)0x1;
	int64_t t0 = now_ms();
	int rc = rv_listener_accept(f->l, NULL, 5000, &c);

	if (rc != -errnum)
		fail_msg("expected %d, got %d: %s", -errnum, rc, rv_error_last());
	assert_true(now_ms() - t0 <= bound_ms);
	assert_ptr_equal(c, (rv_conn *)0x1); /* untouched on failure */
	if (!strstr(rv_error_last(), what))
		fail_msg("\"%s\" does not mention \"%s\"", rv_error_last(), what);
	assert_non_null(strstr(rv_error_last(), "127.0.0.1:"));
	honest_round(f);
}

static void test_conn__honest_client(void **state)
{
	struct fixture *f = *state;
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_PRIVATE_DATA | RV_CONN_ATTR_NUM_QPS};
	rv_conn_attr sa = {.mask = RV_CONN_ATTR_PRIVATE_DATA | RV_CONN_ATTR_MR | RV_CONN_ATTR_PD};
	rv_conn *cli, *srv;
	rv_endpoint ep;
	rv_pd *pd;
	rv_mr *mr;
	char buf[16], addr[64];
	size_t n = 99;

	assert_int_equal(rv_pd_new(f->ctx, NULL, &pd), 0);
	assert_int_equal(rv_mr_alloc(pd, 8192, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &mr), 0);
	ca.private_data = "hi";
	ca.private_data_len = 2;
	ca.num_qps = 4;
	sa.private_data = "welcome";
	sa.private_data_len = 7;
	sa.mr = mr;
	sa.pd = pd;
	assert_int_equal(connect_pair(f, &ca, &sa, &cli, &srv), 0);
	assert_int_equal(rv_conn_num_qps(cli), 4);
	assert_int_equal(rv_conn_num_qps(srv), 4);
	assert_ptr_equal(rv_conn_pd(srv), pd);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(rv_qp_state_of(rv_conn_qp(cli, i)), RV_QPS_RTS);
		assert_int_equal(rv_qp_state_of(rv_conn_qp(srv, i)), RV_QPS_RTS);
		assert_int_equal(rv_conn_peer_endpoint(cli, i, &ep), 0);
		assert_int_equal(ep.qpn, rv_qp_num(rv_conn_qp(srv, i)));
		assert_true(ep.mask & RV_ENDPOINT_MR);
		assert_int_equal(ep.mr_rkey, rv_mr_rkey(mr));
		assert_int_equal(ep.mr_addr, (uintptr_t)rv_mr_addr(mr));
		assert_int_equal(ep.mr_length, 8192);
		assert_int_equal(rv_conn_peer_endpoint(srv, i, &ep), 0);
		assert_int_equal(ep.qpn, rv_qp_num(rv_conn_qp(cli, i)));
		assert_false(ep.mask & RV_ENDPOINT_MR);
	}
	assert_null(rv_conn_qp(cli, 4));
	assert_int_equal(rv_conn_peer_endpoint(cli, 4, &ep), -EINVAL);
	assert_int_equal(rv_conn_peer_data(cli, NULL, 0, &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(rv_conn_peer_data(cli, buf, 3, &n), -ENOSPC);
	assert_int_equal(n, 7);
	assert_int_equal(rv_conn_peer_data(cli, buf, sizeof(buf), &n), 0);
	assert_memory_equal(buf, "welcome", 7);
	assert_int_equal(rv_conn_peer_data(srv, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "hi", 2);
	assert_int_equal(rv_conn_path_mtu(cli), RV_MTU_1024);
	assert_int_equal(rv_conn_peer_addr(cli, addr, sizeof(addr)), 0);
	assert_string_equal(addr, f->addr);
	assert_int_equal(rv_conn_peer_addr(srv, addr, 4), -ENOSPC);
	assert_true(rv_conn_fd(cli) >= 0);
	assert_true(rv_conn_fd(srv) >= 0);

	/* Server-side disconnect: the client learns of it; QPs in ERR; fds gone. */
	uint32_t ev = 0;
	assert_int_equal(rv_conn_poll(cli, 0, &ev), 0);
	assert_int_equal(ev, RV_CONN_EVENT_NONE);
	assert_int_equal(rv_conn_disconnect(srv, 0), 0);
	assert_int_equal(rv_conn_poll(cli, 2000, &ev), 0);
	assert_int_equal(ev, RV_CONN_EVENT_DISCONNECTED);
	assert_int_equal(rv_conn_state_of(cli), RV_CONN_DISCONNECTED);
	assert_int_equal(rv_conn_state_of(srv), RV_CONN_DISCONNECTED);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(rv_qp_state_of(rv_conn_qp(cli, i)), RV_QPS_ERR);
		assert_int_equal(rv_qp_state_of(rv_conn_qp(srv, i)), RV_QPS_ERR);
	}
	assert_int_equal(rv_conn_fd(cli), -EBADF);
	assert_int_equal(rv_conn_disconnect(cli, 100), 0); /* already: fine */

	/* Closing the PD closes the connection that uses it, with the reason. */
	assert_int_equal(rv_pd_close(pd), 0);
	assert_int_equal(rv_conn_state_of(srv), -RV_ECLOSED);
	assert_non_null(strstr(rv_error_last(), "PD"));
	assert_int_equal(rv_conn_close(srv), 0);
	rv_conn_unref(srv);
	rv_conn_unref(cli);
	rv_mr_unref(mr);
	rv_pd_unref(pd);
}

/* The TCP exchange's edge: RV_CONN_PRIVATE_DATA_MAX (its 16-bit length) each
 * way arrives whole; one byte more is refused before anything is sent, with
 * the limit named. */
static void test_conn__private_data_at_the_tcp_limit(void **state)
{
	struct fixture *f = *state;
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_PRIVATE_DATA}, sa = {.mask = RV_CONN_ATTR_PRIVATE_DATA};
	uint8_t *cd = malloc(RV_CONN_PRIVATE_DATA_MAX + 1), *sd = malloc(RV_CONN_PRIVATE_DATA_MAX), *got;
	rv_conn *cli, *srv, *c = (rv_conn *)0x1;
	size_t n = 0;

	assert_non_null(cd);
	assert_non_null(sd);
	got = malloc(RV_CONN_PRIVATE_DATA_MAX);
	assert_non_null(got);
	for (size_t i = 0; i < RV_CONN_PRIVATE_DATA_MAX; i++) {
		cd[i] = (uint8_t)(i * 13 + 1);
		sd[i] = (uint8_t)(i * 7 + 3);
	}
	ca.private_data = cd;
	ca.private_data_len = RV_CONN_PRIVATE_DATA_MAX;
	sa.private_data = sd;
	sa.private_data_len = RV_CONN_PRIVATE_DATA_MAX;
	assert_int_equal(connect_pair(f, &ca, &sa, &cli, &srv), 0);
	assert_int_equal(rv_conn_peer_data(cli, got, RV_CONN_PRIVATE_DATA_MAX, &n), 0);
	assert_int_equal(n, RV_CONN_PRIVATE_DATA_MAX);
	assert_memory_equal(got, sd, RV_CONN_PRIVATE_DATA_MAX);
	assert_int_equal(rv_conn_peer_data(srv, got, RV_CONN_PRIVATE_DATA_MAX, &n), 0);
	assert_int_equal(n, RV_CONN_PRIVATE_DATA_MAX);
	assert_memory_equal(got, cd, RV_CONN_PRIVATE_DATA_MAX);
	rv_conn_unref(srv);
	rv_conn_unref(cli);
	ca.private_data_len = RV_CONN_PRIVATE_DATA_MAX + 1;
	assert_int_equal(rv_connect(f->ctx, f->addr, &ca, 1000, &c), -EINVAL);
	assert_ptr_equal(c, (rv_conn *)0x1);
	assert_non_null(strstr(rv_error_last(), "65535"));
	free(got);
	free(sd);
	free(cd);
}

static void test_conn__handle_rules(void **state)
{
	struct fixture *f = *state;
	rv_conn_attr bad = {.mask = 1u << 20};
	rv_listener_attr lbad = {.mask = 1u << 9};
	rv_listener *l = (rv_listener *)0x1, *l2;
	rv_conn *c = (rv_conn *)0x1;
	uint32_t ev;

	/* NULLs, foreign handles, unknown bits: -EINVAL, outputs untouched. */
	assert_int_equal(rv_listener_new(NULL, "127.0.0.1:0", NULL, &l), -EINVAL);
	assert_int_equal(rv_listener_new(f->ctx, NULL, NULL, &l), -EINVAL);
	assert_int_equal(rv_listener_new(f->ctx, "127.0.0.1:0", NULL, NULL), -EINVAL);
	assert_int_equal(rv_listener_new(f->ctx, "127.0.0.1:0", &lbad, &l), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "0x200"));
	assert_int_equal(rv_listener_new(f->ctx, "no-port", NULL, &l), -EINVAL);
	assert_int_equal(rv_listener_new(f->ctx, f->addr, NULL, &l), -EADDRINUSE);
	assert_int_equal(rv_listener_new(f->ctx, "192.0.2.77:0", NULL, &l), -EADDRNOTAVAIL);
	assert_int_equal(rv_listener_new(f->ctx, "no-such-host.invalid:0", NULL, &l), -EHOSTUNREACH);
	lbad.mask = RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT;
	lbad.handshake_timeout_ms = 0;
	assert_int_equal(rv_listener_new(f->ctx, "127.0.0.1:0", &lbad, &l), -EINVAL);
	assert_ptr_equal(l, (rv_listener *)0x1);
	assert_int_equal(rv_listener_accept(NULL, NULL, 0, &c), -EINVAL);
	assert_int_equal(rv_listener_accept((rv_listener *)f->ctx, NULL, 0, &c), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "expected a listener handle, got a context handle"));
	assert_int_equal(rv_listener_accept(f->l, NULL, 0, NULL), -EINVAL);
	assert_int_equal(rv_listener_accept(f->l, &bad, 0, &c), -EINVAL);
	assert_int_equal(rv_listener_accept(f->l, NULL, 0, &c), -EAGAIN);
	assert_int_equal(rv_connect(NULL, f->addr, NULL, 0, &c), -EINVAL);
	assert_int_equal(rv_connect(f->ctx, NULL, NULL, 0, &c), -EINVAL);
	assert_int_equal(rv_connect(f->ctx, f->addr, NULL, 0, NULL), -EINVAL);
	assert_int_equal(rv_connect(f->ctx, f->addr, &bad, 0, &c), -EINVAL);
	assert_int_equal(rv_connect(f->ctx, "[::1:5", NULL, 0, &c), -EINVAL);
	bad.mask = RV_CONN_ATTR_NUM_QPS;
	bad.num_qps = RV_CONN_MAX_QPS + 1;
	assert_int_equal(rv_connect(f->ctx, f->addr, &bad, 0, &c), -EINVAL);
	bad.mask = RV_CONN_ATTR_PRIVATE_DATA;
	bad.private_data = "x";
	bad.private_data_len = RV_CONN_PRIVATE_DATA_MAX + 1;
	assert_int_equal(rv_connect(f->ctx, f->addr, &bad, 0, &c), -EINVAL);
	bad.mask = RV_CONN_ATTR_QP_TYPE;
	bad.qp_type = 9; /* no such QP type */
	assert_int_equal(rv_connect(f->ctx, f->addr, &bad, 0, &c), -EINVAL);
	bad.mask = RV_CONN_ATTR_REQUIRED_CAPS;
	bad.required_caps = RV_EP_CAP_SOFT;
	assert_int_equal(rv_connect(f->ctx, f->addr, &bad, 0, &c), -EINVAL);
	bad.mask = RV_CONN_ATTR_PD;
	bad.pd = NULL;
	assert_int_equal(rv_connect(f->ctx, f->addr, &bad, 0, &c), -EINVAL);
	assert_ptr_equal(c, (rv_conn *)0x1);
	assert_int_equal(rv_connect_start(f->ctx, f->addr, NULL, NULL), -EINVAL);
	assert_int_equal(rv_conn_poll(NULL, 0, &ev), -EINVAL);
	assert_int_equal(rv_conn_disconnect(NULL, 0), -EINVAL);
	assert_int_equal(rv_conn_close(NULL), -EINVAL);
	assert_int_equal(rv_conn_fd(NULL), -EINVAL);
	assert_int_equal(rv_conn_state_of(NULL), -EINVAL);
	assert_int_equal(rv_conn_num_qps(NULL), 0);
	assert_null(rv_conn_qp(NULL, 0));
	assert_null(rv_conn_pd(NULL));
	assert_null(rv_conn_cq(NULL));
	assert_null(rv_conn_ref(NULL));
	assert_null(rv_conn_unref(NULL));
	assert_null(rv_listener_ref(NULL));
	assert_null(rv_listener_unref(NULL));
	assert_int_equal(rv_listener_port(NULL), -EINVAL);
	assert_int_equal(rv_listener_fd(NULL), -EINVAL);
	assert_int_equal(rv_listener_close(NULL), -EINVAL);

	/* Nothing listens: refused at once. Something listens but never answers: timed out in time. */
	assert_int_equal(rv_listener_new(f->ctx, "127.0.0.1:0", NULL, &l2), 0);
	char addr2[64];
	snprintf(addr2, sizeof(addr2), "127.0.0.1:%d", rv_listener_port(l2));
	int64_t t0 = now_ms();
	assert_int_equal(rv_connect(f->ctx, addr2, NULL, 200, &c), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 1000);
	assert_ptr_equal(c, (rv_conn *)0x1);
	/* A closed listener: distinct closed error; the port is free again. */
	assert_int_equal(rv_listener_close(l2), 0);
	assert_int_equal(rv_listener_close(l2), 0);
	assert_int_equal(rv_listener_port(l2), -RV_ECLOSED);
	assert_int_equal(rv_listener_fd(l2), -RV_ECLOSED);
	assert_int_equal(rv_listener_accept(l2, NULL, 0, &c), -RV_ECLOSED);
	assert_non_null(strstr(rv_error_last(), "rv_listener_close"));
	assert_ptr_equal(rv_listener_ref(l2), l2);
	rv_listener_unref(l2);
	rv_listener_unref(l2);
	assert_int_equal(rv_connect(f->ctx, addr2, NULL, 1000, &c), -ECONNREFUSED);
	assert_ptr_equal(c, (rv_conn *)0x1);
	/* No half-made resources were left behind by any failure. */
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
}

static void test_conn__bad_peer_garbage(void **state)
{
	struct fixture *f = *state;
	int fd = raw_connect(f->port);

	raw_send(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	expect_bad_peer(f, EBADMSG, "not an rverbs connection exchange", 1000);
	close(fd);
}

static void test_conn__bad_peer_wrong_version(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[RV_WIRE_HDR_LEN];
	int fd = raw_connect(f->port);

	rv_wire_hdr_encode(hdr, RV_WIRE_REQ, 100);
	hdr[4] = 7;
	raw_send(fd, hdr, sizeof(hdr));
	expect_bad_peer(f, EPROTONOSUPPORT, "version 7", 1000);
	close(fd);
}

static void test_conn__bad_peer_oversized_length(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[RV_WIRE_HDR_LEN];
	int fd = raw_connect(f->port);

	rv_wire_hdr_encode(hdr, RV_WIRE_REQ, 0x7fffffffu);
	raw_send(fd, hdr, sizeof(hdr));
	expect_bad_peer(f, EMSGSIZE, "2147483647 bytes", 1000);
	close(fd);
}

static void test_conn__bad_peer_truncated_exchange(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[512];
	int n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_1024, 0, true);
	int fd = raw_connect(f->port);

	assert_true(n > 60);
	raw_send(fd, buf, (size_t)n - 30);
	close(fd);
	expect_bad_peer(f, ECONNRESET, "in the middle of a message", 1000);
}

static void test_conn__bad_peer_slow_client_sends_nothing(void **state)
{
	struct fixture *f = *state;
	int fd = raw_connect(f->port);

	/* Bounded by the handshake timeout (300 ms), not by accept's 5 s. */
	expect_bad_peer(f, ETIMEDOUT, "sent nothing", HS_TIMEOUT + 700);
	close(fd);
}

static void test_conn__bad_peer_slow_client_half_request(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[512];
	int n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_1024, 0, true);
	int fd = raw_connect(f->port);

	raw_send(fd, buf, (size_t)n / 2);
	expect_bad_peer(f, ETIMEDOUT, "incomplete", HS_TIMEOUT + 700);
	close(fd);
}

static void test_conn__bad_peer_disconnects_mid_exchange(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hdr h;
	int n, fd;

	/* Gone before its request. */
	fd = raw_connect(f->port);
	close(fd);
	expect_bad_peer(f, ECONNRESET, "before sending its request", 1000);

	/* Gone after our answer, before confirming it. */
	n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_1024, 0, true);
	fd = raw_connect(f->port);
	raw_send(fd, buf, (size_t)n);
	rv_conn *c = (rv_conn *)0x1;
	assert_int_equal(rv_listener_accept(f->l, NULL, 100, &c), -EAGAIN);
	assert_int_equal(raw_recv_msg(fd, &h, buf, sizeof(buf)), 0);
	assert_int_equal(h.type, RV_WIRE_REP);
	close(fd);
	expect_bad_peer(f, ECONNRESET, "before confirming our answer", 1000);
	/* The half-made connection's QP was closed again. */
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
}

static void test_conn__bad_peer_invalid_endpoint_is_rejected_with_reason(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hdr h;
	struct rv_wire_reject rj;
	int n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_1024, 0, true);
	int fd = raw_connect(f->port);

	buf[RV_WIRE_HDR_LEN + 8 + 2] = 'X'; /* break the endpoint's "RVEP" magic */
	raw_send(fd, buf, (size_t)n);
	expect_bad_peer(f, EBADMSG, "endpoint 0 of the HELLO is invalid", 1000);
	assert_int_equal(raw_recv_msg(fd, &h, buf, sizeof(buf)), 0);
	assert_int_equal(h.type, RV_WIRE_REJECT);
	assert_int_equal(rv_wire_reject_decode(buf, h.length, &rj, "test"), 0);
	assert_int_equal(rj.errnum, EBADMSG);
	assert_non_null(strstr(rj.text, "invalid"));
	close(fd);
}

/* A hand-written client whose REQ has a given flaw: the listener names it and tells the client. */
static void mismatch(struct fixture *f, const rv_conn_attr *sa, uint32_t qp_type, uint8_t mtu, uint32_t caps,
		     bool gid, int errnum, const char *what)
{
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hdr h;
	struct rv_wire_reject rj;
	rv_conn *c = (rv_conn *)0x1;
	int n = craft_req(buf, sizeof(buf), qp_type, mtu, caps, gid);
	int fd = raw_connect(f->port);

	raw_send(fd, buf, (size_t)n);
	n = rv_listener_accept(f->l, sa, 2000, &c);
	if (n != -errnum || !strstr(rv_error_last(), what))
		fail_msg("expected %d \"%s\", got %d: %s", -errnum, what, n, rv_error_last());
	assert_ptr_equal(c, (rv_conn *)0x1);
	assert_int_equal(raw_recv_msg(fd, &h, buf, sizeof(buf)), 0);
	assert_int_equal(h.type, RV_WIRE_REJECT);
	assert_int_equal(rv_wire_reject_decode(buf, h.length, &rj, "test"), 0);
	assert_int_equal(rj.errnum, errnum);
	assert_non_null(strstr(rj.text, what));
	close(fd);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
}

static void test_conn__mismatches_are_named(void **state)
{
	struct fixture *f = *state;
	rv_conn_attr sa = {.mask = RV_CONN_ATTR_REQUIRED_CAPS, .required_caps = RV_EP_CAP_ATOMIC};
	rv_conn_attr two = {.mask = RV_CONN_ATTR_NUM_QPS, .num_qps = 2};
	const uint32_t all = RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM;

	mismatch(f, NULL, RV_QPT_UC, RV_MTU_1024, all, true, EPROTO, "incompatible QP types");
	mismatch(f, NULL, RV_QPT_RC, RV_MTU_1024, all, false, EPROTO, "has no GID");
	mismatch(f, &sa, RV_QPT_RC, RV_MTU_1024, RV_EP_CAP_IMM, true, EOPNOTSUPP, "lacks atomic operations");
	mismatch(f, &two, RV_QPT_RC, RV_MTU_1024, all, true, EPROTO, "accepts 2");
	honest_round(f);

	/* The client is told too: its own rv_connect fails with the server's reason. */
	rv_conn_attr uc = {.mask = RV_CONN_ATTR_QP_TYPE, .qp_type = RV_QPT_UC};
	rv_conn_attr imm = {.mask = RV_CONN_ATTR_REQUIRED_CAPS, .required_caps = RV_EP_CAP_IMM};
	rv_conn *cli = (rv_conn *)0x1, *srv = (rv_conn *)0x1;
	assert_int_equal(connect_pair(f, &uc, NULL, &cli, &srv), -EPROTO);
	assert_non_null(strstr(pair_error, "rv_conn_poll: 127.0.0.1:"));
	assert_non_null(strstr(pair_error, "rejected the connection: incompatible QP types"));
	assert_ptr_equal(cli, (rv_conn *)0x1);
	/* Requirements met on both sides pass. */
	assert_int_equal(connect_pair(f, &imm, &sa, &cli, &srv), 0);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
}

static void test_conn__mtu_is_the_minimum(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hdr h;
	struct rv_wire_hello rep;
	rv_qp_attr qa = {.mask = RV_QP_PATH_MTU};
	rv_conn *c = NULL;
	int n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_256, RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM, true);
	int fd = raw_connect(f->port);

	raw_send(fd, buf, (size_t)n);
	assert_int_equal(rv_listener_accept(f->l, NULL, 100, &c), -EAGAIN);
	assert_int_equal(raw_recv_msg(fd, &h, buf, sizeof(buf)), 0);
	assert_int_equal(h.type, RV_WIRE_REP);
	assert_int_equal(rv_wire_hello_decode(buf, h.length, &rep, "test"), 0);
	assert_int_equal(rep.ep[0].mtu, RV_MTU_1024);
	rv_wire_hdr_encode(buf, RV_WIRE_RTU, 0);
	raw_send(fd, buf, RV_WIRE_HDR_LEN);
	assert_int_equal(rv_listener_accept(f->l, NULL, 2000, &c), 0);
	assert_int_equal(rv_conn_path_mtu(c), RV_MTU_256);
	assert_int_equal(rv_qp_query(rv_conn_qp(c, 0), &qa), 0);
	assert_int_equal(mock.last_modify.mask & RV_QP_STATE, RV_QP_STATE);
	/* The peer going away (EOF, no DISCONNECT) is an event too. */
	close(fd);
	uint32_t ev = 0;
	assert_int_equal(rv_conn_poll(c, 2000, &ev), 0);
	assert_int_equal(ev, RV_CONN_EVENT_DISCONNECTED);
	assert_int_equal(rv_qp_state_of(rv_conn_qp(c, 0)), RV_QPS_ERR);
	rv_conn_unref(c);
}

static void test_conn__epoll_on_listener_and_connection(void **state)
{
	struct fixture *f = *state;
	struct epoll_event ev = {.events = EPOLLIN}, out[4];
	rv_conn *cli, *srv = NULL;
	uint32_t e = 0;
	int ep = epoll_create1(0), lfd = rv_listener_fd(f->l);

	assert_true(lfd >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev), 0);
	assert_int_equal(epoll_wait(ep, out, 4, 0), 0);
	assert_int_equal(rv_connect_start(f->ctx, f->addr, NULL, &cli), 0);
	assert_int_equal(rv_conn_state_of(cli), RV_CONN_CONNECTING);
	assert_int_equal(rv_conn_peer_endpoint(cli, 0, &(rv_endpoint){0}), -ENOTCONN);
	assert_int_equal(rv_conn_path_mtu(cli), -ENOTCONN);
	/* The listener's descriptor wakes up for the new client... */
	assert_int_equal(epoll_wait(ep, out, 4, 2000), 1);
	assert_int_equal(rv_listener_accept(f->l, NULL, 0, &srv), -EAGAIN);
	/* ...the client's for the progress of its exchange... */
	struct pollfd p = {.fd = rv_conn_fd(cli), .events = POLLIN | POLLOUT, .revents = 0};
	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(rv_conn_poll(cli, 0, &e), 0);
	assert_int_equal(e, RV_CONN_EVENT_NONE);
	/* ...and again for its request. */
	assert_int_equal(epoll_wait(ep, out, 4, 2000), 1);
	assert_int_equal(rv_listener_accept(f->l, NULL, 0, &srv), -EAGAIN);
	p.events = POLLIN;
	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(rv_conn_poll(cli, 0, &e), 0);
	assert_int_equal(e, RV_CONN_EVENT_ESTABLISHED);
	assert_int_equal(epoll_wait(ep, out, 4, 2000), 1);
	assert_int_equal(rv_listener_accept(f->l, NULL, 0, &srv), 0);
	/* The server's connection descriptor wakes up for the client's disconnect. */
	p.fd = rv_conn_fd(srv);
	assert_int_equal(rv_conn_disconnect(cli, 0), 0);
	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(rv_conn_poll(srv, 0, &e), 0);
	assert_int_equal(e, RV_CONN_EVENT_DISCONNECTED);
	close(ep);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
}

static void test_conn__close_cascades_and_connecting_disconnect(void **state)
{
	struct fixture *f = *state;
	rv_conn *cli, *srv, *pend;

	assert_int_equal(connect_pair(f, NULL, NULL, &cli, &srv), 0);
	/* A connection still connecting can be abandoned. */
	assert_int_equal(rv_connect_start(f->ctx, f->addr, NULL, &pend), 0);
	assert_int_equal(rv_conn_disconnect(pend, 0), 0);
	assert_int_equal(rv_conn_state_of(pend), RV_CONN_DISCONNECTED);
	/* Closing the context closes the listener and every connection in it. */
	assert_int_equal(rv_context_close(f->ctx), 0);
	assert_int_equal(rv_conn_state_of(cli), -RV_ECLOSED);
	assert_int_equal(rv_conn_disconnect(srv, 0), -RV_ECLOSED);
	assert_int_equal(rv_listener_port(f->l), -RV_ECLOSED);
	assert_non_null(strstr(rv_error_last(), "context"));
	rv_conn_unref(pend);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
}

/* A hostile server: rv_connect_start()/rv_conn_poll() get a clear error each time. */
enum server_act { SRV_GARBAGE, SRV_WRONG_VERSION, SRV_CLOSE, SRV_REJECT, SRV_BAD_HELLO, SRV_OVERSIZED };

static void hostile_server(struct fixture *f, int lfd, int port, enum server_act act, int errnum, const char *what)
{
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hdr h;
	char addr[64];
	rv_conn *c;
	uint32_t ev = 0;
	int sfd, rc = 0, n;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_int_equal(rv_connect_start(f->ctx, addr, NULL, &c), 0);
	sfd = accept(lfd, NULL, NULL);
	assert_true(sfd >= 0);
	for (int i = 0; i < 100 && rc == 0; i++) {
		rc = rv_conn_poll(c, 10, &ev); /* connects and sends the REQ */
		struct pollfd p = {.fd = sfd, .events = POLLIN, .revents = 0};
		if (poll(&p, 1, 0) == 1)
			break;
	}
	assert_int_equal(raw_recv_msg(sfd, &h, buf, sizeof(buf)), 0);
	assert_int_equal(h.type, RV_WIRE_REQ);
	switch (act) {
	case SRV_GARBAGE:
		raw_send(sfd, "HTTP/1.1 400 Bad Request\r\n\r\n", 28);
		break;
	case SRV_WRONG_VERSION:
		rv_wire_hdr_encode(buf, RV_WIRE_REP, 0);
		buf[4] = 3;
		raw_send(sfd, buf, RV_WIRE_HDR_LEN);
		break;
	case SRV_OVERSIZED:
		rv_wire_hdr_encode(buf, RV_WIRE_REP, 1u << 30);
		raw_send(sfd, buf, RV_WIRE_HDR_LEN);
		break;
	case SRV_CLOSE:
		break;
	case SRV_REJECT:
		n = rv_wire_reject_encode(EACCES, "not on the guest list", buf, sizeof(buf));
		raw_send(sfd, buf, (size_t)n);
		break;
	case SRV_BAD_HELLO:
		n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_1024, 0, true);
		buf[5] = RV_WIRE_REP;
		buf[RV_WIRE_HDR_LEN] = 2; /* claims two QPs, carries one */
		raw_send(sfd, buf, (size_t)n);
		break;
	}
	if (act == SRV_CLOSE)
		close(sfd);
	rc = rv_conn_poll(c, 2000, &ev);
	if (rc != -errnum || !strstr(rv_error_last(), what))
		fail_msg("expected %d \"%s\", got %d: %s", -errnum, what, rc, rv_error_last());
	assert_int_equal(rv_conn_state_of(c), RV_CONN_FAILED);
	assert_int_equal(rv_conn_poll(c, 0, &ev), -errnum); /* stays failed */
	assert_int_equal(rv_conn_fd(c), -EBADF);
	if (act == SRV_BAD_HELLO) {
		/* The client tells the server why it rejects the answer. */
		struct rv_wire_reject rj;
		assert_int_equal(raw_recv_msg(sfd, &h, buf, sizeof(buf)), 0);
		assert_int_equal(h.type, RV_WIRE_REJECT);
		assert_int_equal(rv_wire_reject_decode(buf, h.length, &rj, "test"), 0);
		assert_int_equal(rj.errnum, EBADMSG);
	}
	if (act != SRV_CLOSE)
		close(sfd);
	rv_conn_unref(c);
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
}

static void test_conn__hostile_servers(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	int port = ntohs(sin.sin_port);
	hostile_server(f, lfd, port, SRV_GARBAGE, EBADMSG, "not an rverbs connection exchange");
	hostile_server(f, lfd, port, SRV_WRONG_VERSION, EPROTONOSUPPORT, "version 3");
	hostile_server(f, lfd, port, SRV_OVERSIZED, EMSGSIZE, "1073741824 bytes");
	hostile_server(f, lfd, port, SRV_CLOSE, ECONNRESET, "before answering our request");
	hostile_server(f, lfd, port, SRV_REJECT, EACCES, "rejected the connection: not on the guest list");
	hostile_server(f, lfd, port, SRV_BAD_HELLO, EBADMSG, "HELLO");
	close(lfd);
}

/* The caller's QPs serve one client: a second one is turned away, named. */
static void test_conn__callers_qps_serve_one_client(void **state)
{
	struct fixture *f = *state;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_conn_attr sa = {.mask = RV_CONN_ATTR_QPS, .num_qps = 1};
	rv_conn *cli, *srv, *c2 = (rv_conn *)0x1;
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	int fd, n;

	assert_int_equal(rv_pd_new(f->ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(f->ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	sa.qps = &qp;
	assert_int_equal(connect_pair(f, NULL, &sa, &cli, &srv), 0);
	assert_ptr_equal(rv_conn_qp(srv, 0), qp);
	n = craft_req(buf, sizeof(buf), RV_QPT_RC, RV_MTU_1024, 0, true);
	fd = raw_connect(f->port);
	raw_send(fd, buf, (size_t)n);
	assert_int_equal(rv_listener_accept(f->l, &sa, 2000, &c2), -EBUSY);
	assert_non_null(strstr(rv_error_last(), "already serve another client"));
	assert_ptr_equal(c2, (rv_conn *)0x1);
	close(fd);
	/* Closing the connection leaves the caller's QP alive, in ERR. */
	assert_int_equal(rv_conn_close(srv), 0);
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_ERR);
	rv_conn_unref(srv);
	rv_conn_unref(cli);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

/* 64 client processes (each with its own mock device) on one listener. */
static void test_conn__64_client_processes(void **state)
{
	struct fixture *f = *state;
	enum { N = 64 };
	/* Its own listener: 64 processes at once (under valgrind, say) need more than 300 ms. */
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT, .handshake_timeout_ms = 60000};
	rv_conn *conns[N];
	pid_t pids[N];

	rv_listener_unref(f->l);
	assert_int_equal(rv_listener_new(f->ctx, "127.0.0.1:0", &la, &f->l), 0);
	snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%d", rv_listener_port(f->l));
	fflush(NULL);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			rv_device *dev;
			rv_context *ctx;
			rv_conn *c;
			uint32_t ev = 0;
			int rc;
			if (mock_device_new("mock1", &dev) < 0 || rv_context_new(dev, NULL, &ctx) < 0)
				_exit(2);
			rc = rv_connect(ctx, f->addr, NULL, 30000, &c);
			if (rc < 0) {
				fprintf(stderr, "client %d: %s\n", i, rv_error_last());
				_exit(3);
			}
			/* The server disconnects: this side learns of it. */
			if (rv_conn_poll(c, 30000, &ev) < 0 || ev != RV_CONN_EVENT_DISCONNECTED)
				_exit(4);
			_exit(rv_qp_state_of(rv_conn_qp(c, 0)) == RV_QPS_ERR ? 0 : 5);
		}
	}
	for (int i = 0; i < N; i++) {
		int rc = rv_listener_accept(f->l, NULL, 30000, &conns[i]);
		if (rc < 0)
			fail_msg("accept %d: %s", i, rv_error_last());
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(rv_conn_disconnect(conns[i], 30000), 0);
		rv_conn_unref(conns[i]);
	}
	for (int i = 0; i < N; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

/* The routing fields of rv_conn_attr reach the QPs' RTR address vector and
 * RTS timeout (issue 19). */
static void test_conn__routing_fields_reach_the_qps(void **state)
{
	struct fixture *f = *state;
	rv_conn_attr a = {.mask = RV_CONN_ATTR_TRAFFIC_CLASS | RV_CONN_ATTR_SL | RV_CONN_ATTR_FLOW_LABEL |
				  RV_CONN_ATTR_HOP_LIMIT | RV_CONN_ATTR_ACK_TIMEOUT,
			  .traffic_class = 0x68, .sl = 5, .flow_label = 0x54321, .hop_limit = 7, .ack_timeout = 19};
	rv_conn *cli, *srv;

	assert_int_equal(connect_pair(f, &a, &a, &cli, &srv), 0);
	/* The client connects last: its RTR and RTS are the last modifies. */
	assert_int_equal(mock.last_av.traffic_class, 0x68);
	assert_int_equal(mock.last_av.sl, 5);
	assert_int_equal(mock.last_av.flow_label, 0x54321);
	assert_int_equal(mock.last_av.hop_limit, 7);
	assert_true(mock.last_modify.mask & RV_QP_TIMEOUT);
	assert_int_equal(mock.last_modify.timeout, 19);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
	/* Without them: rv_qp_connect's defaults. */
	assert_int_equal(connect_pair(f, NULL, NULL, &cli, &srv), 0);
	assert_int_equal(mock.last_av.traffic_class, 0);
	assert_int_equal(mock.last_av.hop_limit, 64);
	assert_int_equal(mock.last_modify.timeout, 14);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
}

static void expect_bad_attr(struct fixture *f, const rv_conn_attr *a, const char *what)
{
	rv_conn *c = NULL;

	assert_int_equal(rv_connect_start(f->ctx, f->addr, a, &c), -EINVAL);
	assert_null(c);
	if (!strstr(rv_error_last(), what))
		fail_msg("\"%s\" does not mention \"%s\"", rv_error_last(), what);
}

static void test_conn__routing_fields_are_checked(void **state)
{
	struct fixture *f = *state;

	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_SL, .sl = 16}, "sl 16 is above 15");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_FLOW_LABEL, .flow_label = 0x100000}, "20 bits");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_HOP_LIMIT}, "hop_limit 0");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_ACK_TIMEOUT}, "ack_timeout 0");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_ACK_TIMEOUT, .ack_timeout = 32}, "ack_timeout 32");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_RESOLVE, .resolve_retries = 1}, "resolve_timeout_ms 0");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_RESOLVE, .resolve_timeout_ms = 100,
					   .resolve_retries = 17}, "resolve_retries 17");
	expect_bad_attr(f, &(rv_conn_attr){.mask = RV_CONN_ATTR_GID_INDEX, .gid_index = 256}, "gid_index 256");
	expect_bad_attr(f, &(rv_conn_attr){.mask = 1u << 30}, "unknown bit");
	honest_round(f);
}

static const uint8_t gid_link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t gid_v4_other[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 1, 1};
static const uint8_t gid_v4_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};

/* A RoCE GID table of three entries: link-local, 10.1.1.1, 127.0.0.1. */
static void three_gids(void)
{
	const uint8_t *g[3] = {gid_link_local, gid_v4_other, gid_v4_loop};

	memset(mock.gids, 0, sizeof(mock.gids));
	for (int i = 0; i < 3; i++) {
		memcpy(mock.gids[i].gid, g[i], 16);
		mock.gids[i].gid_type = RV_GID_TYPE_ROCE_V2;
		mock.gids[i].ndev_ifindex = 1;
	}
	mock.n_gids = 3;
}

/* Over 127.0.0.1 both sides advertise and send from the GID of that
 * address (entry 2), as rdma_cm's route would choose, not the first IPv4
 * entry (10.1.1.1) that ranks equal without it. */
static void test_conn__gid_follows_the_control_connection(void **state)
{
	struct fixture *f = *state;
	rv_conn *cli, *srv;
	rv_endpoint ep;

	three_gids();
	if (connect_pair(f, NULL, NULL, &cli, &srv) < 0)
		fail_msg("%s", pair_error);
	assert_int_equal(rv_qp_gid_index(rv_conn_qp(cli, 0)), 2);
	assert_int_equal(rv_qp_gid_index(rv_conn_qp(srv, 0)), 2);
	assert_int_equal(mock.last_av.sgid_index, 2);
	assert_int_equal(rv_conn_peer_endpoint(cli, 0, &ep), 0);
	assert_memory_equal(ep.gid, gid_v4_loop, 16);
	assert_true(ep.caps & RV_EP_CAP_ROCE_V2);
	assert_int_equal(rv_conn_peer_endpoint(srv, 0, &ep), 0);
	assert_memory_equal(ep.gid, gid_v4_loop, 16);
	rv_conn_unref(cli);
	rv_conn_unref(srv);
	mock.n_gids = 0;
}

/* RV_CONN_ATTR_GID_INDEX overrides the choice on the side that sets it;
 * an index past the table is refused before anything is sent. */
static void test_conn__gid_index_attr(void **state)
{
	struct fixture *f = *state;
	rv_conn_attr a = {.mask = RV_CONN_ATTR_GID_INDEX, .gid_index = 1};
	rv_conn *cli, *srv;
	rv_endpoint ep;

	three_gids();
	assert_int_equal(connect_pair(f, &a, NULL, &cli, &srv), 0);
	assert_int_equal(rv_qp_gid_index(rv_conn_qp(cli, 0)), 1);
	assert_int_equal(rv_qp_gid_index(rv_conn_qp(srv, 0)), 2);
	assert_int_equal(rv_conn_peer_endpoint(srv, 0, &ep), 0);
	assert_memory_equal(ep.gid, gid_v4_other, 16);
	assert_int_equal(mock.last_av.sgid_index, 1); /* the client's RTR */
	rv_conn_unref(cli);
	rv_conn_unref(srv);
	a.gid_index = 3;
	expect_bad_attr(f, &a, "attr->gid_index: rv_qp_set_gid_index: GID index 3 is past the GID table");
	mock.n_gids = 0;
	honest_round(f);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_conn__honest_client),
		T(test_conn__handle_rules),
		T(test_conn__private_data_at_the_tcp_limit),
		T(test_conn__bad_peer_garbage),
		T(test_conn__bad_peer_wrong_version),
		T(test_conn__bad_peer_oversized_length),
		T(test_conn__bad_peer_truncated_exchange),
		T(test_conn__bad_peer_slow_client_sends_nothing),
		T(test_conn__bad_peer_slow_client_half_request),
		T(test_conn__bad_peer_disconnects_mid_exchange),
		T(test_conn__bad_peer_invalid_endpoint_is_rejected_with_reason),
		T(test_conn__mismatches_are_named),
		T(test_conn__mtu_is_the_minimum),
		T(test_conn__epoll_on_listener_and_connection),
		T(test_conn__close_cascades_and_connecting_disconnect),
		T(test_conn__hostile_servers),
		T(test_conn__callers_qps_serve_one_client),
		T(test_conn__64_client_processes),
		T(test_conn__routing_fields_reach_the_qps),
		T(test_conn__routing_fields_are_checked),
		T(test_conn__gid_follows_the_control_connection),
		T(test_conn__gid_index_attr),
	};
	return cmocka_run_group_tests_name("conn", tests, NULL, NULL);
}
