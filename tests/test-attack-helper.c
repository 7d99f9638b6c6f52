/*
 * Attacks on the connection helper (issue 16, findings 6 and 7), against an
 * rv_listener on soft0 served by a thread of this process:
 *
 * - a raw TCP client whose REQ names another address in its endpoints: the
 *   server refuses before making any QP, names the address in both sides'
 *   errors, and, across network namespaces (root), never opens a TCP
 *   connection to the address named;
 * - the shared secret covers the exchange: a plain REQ, a forged proof,
 *   clients with another secret or none, a server without one;
 * - slow clients: 400 clients that send one byte (or nothing) from several
 *   addresses, with a handshake timeout far longer than the test, do not
 *   keep 10 legitimate rv_connect() calls out; log lines stay rate-limited.
 *
 * Each attack fails, the listener stays alive and legitimate clients keep
 * connecting. Waits are hang guards only (generous), never thresholds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "conn/wire.h"
#include "netns-pair.h"
#include "test-clock.h"

#define HANG_MS 20000
#define MAX_SERVED 64

static const char secret[] = "attack-helper: the secret of the legitimate side";

static rv_context *soft_ctx(const char *listen, const char *key)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = listen};
	rv_device *dev;
	rv_context *ctx;

	if (key) {
		ca.mask |= RV_CONTEXT_ATTR_AUTH_SECRET;
		ca.auth_secret = key;
		ca.auth_secret_len = (uint32_t)strlen(key);
	}
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &ca, &ctx), 0);
	rv_device_unref(dev);
	return ctx;
}

/* ---- the server: a thread that accepts until told to stop --------------------- */

struct server {
	rv_context *ctx;
	rv_listener *l;
	int port;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;
	rv_conn *served[MAX_SERVED];
	int n_served;
	int n_errors;
	char last_error[512];
	int last_rc;
};

static void *server_main(void *arg)
{
	struct server *s = arg;

	while (!atomic_load(&s->stop)) {
		rv_conn *c = NULL;
		int rc = rv_listener_accept(s->l, NULL, 100, &c);

		pthread_mutex_lock(&s->lock);
		if (rc == 0) {
			if (s->n_served < MAX_SERVED)
				s->served[s->n_served++] = c;
			else
				rv_conn_unref(c);
		} else if (rc != -EAGAIN) {
			s->n_errors++;
			s->last_rc = rc;
			snprintf(s->last_error, sizeof(s->last_error), "%s", rv_error_last());
		}
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static void server_start(struct server *s, const char *listen, const char *key, const rv_listener_attr *la)
{
	char addr[64];

	memset(s, 0, sizeof(*s));
	s->ctx = soft_ctx(listen, key);
	snprintf(addr, sizeof(addr), "%s:0", listen);
	assert_int_equal(rv_listener_new(s->ctx, addr, la, &s->l), 0);
	s->port = rv_listener_port(s->l);
	assert_true(s->port > 0);
	pthread_mutex_init(&s->lock, NULL);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static int server_served(struct server *s)
{
	pthread_mutex_lock(&s->lock);
	int n = s->n_served;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Wait (hang guard) until the server has counted an error containing text;
 * returns its rc. */
static int server_wait_error(struct server *s, int errors_before, const char *text)
{
	int64_t end = now_ms() + HANG_MS;
	int rc = 0;

	for (;;) {
		pthread_mutex_lock(&s->lock);
		bool seen = s->n_errors > errors_before && strstr(s->last_error, text);
		rc = s->last_rc;
		pthread_mutex_unlock(&s->lock);
		if (seen)
			return rc;
		if (now_ms() > end)
			fail_msg("the server reported no error containing \"%s\" (last: %s)", text, s->last_error);
		usleep(1000);
	}
}

static int server_errors(struct server *s)
{
	pthread_mutex_lock(&s->lock);
	int n = s->n_errors;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void server_stop(struct server *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	for (int i = 0; i < s->n_served; i++)
		rv_conn_unref(s->served[i]);
	rv_listener_unref(s->l);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
	pthread_mutex_destroy(&s->lock);
}

/* A legitimate client: connects, checks the connection, closes it. */
static int legit_connect(const char *listen, const char *key, int port, char *err, size_t err_len)
{
	rv_context *ctx = soft_ctx(listen, key);
	char addr[64];
	rv_conn *c = NULL;
	int rc;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	rc = rv_connect(ctx, addr, NULL, HANG_MS, &c);
	if (rc == 0) {
		assert_int_equal(rv_conn_state_of(c), RV_CONN_ESTABLISHED);
		assert_int_equal(rv_qp_state_of(rv_conn_qp(c, 0)), RV_QPS_RTS);
		rv_conn_unref(c);
	} else if (err) {
		snprintf(err, err_len, "%s", rv_error_last());
	}
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
	return rc;
}

/* ---- the raw attacker ------------------------------------------------------------ */

static int tcp_connect(const char *src, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (src) {
		struct sockaddr_in b = {.sin_family = AF_INET};
		assert_int_equal(inet_pton(AF_INET, src, &b.sin_addr), 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&b, sizeof(b)), 0);
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	int64_t end = now_ms() + HANG_MS;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		assert_true(poll(&pfd, 1, (int)(end - now_ms())) == 1);
		ssize_t n = recv(fd, p, len, 0);
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

/* Read one message; its type, the payload into payload (RV_WIRE_PAYLOAD_MAX). */
static uint8_t recv_msg(int fd, uint8_t *payload, uint32_t *len)
{
	uint8_t hdr[RV_WIRE_HDR_LEN];
	struct rv_wire_hdr h;

	recv_all(fd, hdr, sizeof(hdr));
	assert_int_equal(rv_wire_hdr_decode(hdr, sizeof(hdr), &h, "test"), 0);
	recv_all(fd, payload, h.length);
	*len = h.length;
	return h.type;
}

/* The next message must be a REJECT with errnum and text containing want. */
static void expect_reject(int fd, int errnum, const char *want)
{
	static uint8_t payload[RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_reject rj;
	uint32_t len;

	assert_int_equal(recv_msg(fd, payload, &len), RV_WIRE_REJECT);
	assert_int_equal(rv_wire_reject_decode(payload, len, &rj, "test"), 0);
	assert_int_equal(rj.errnum, errnum);
	if (!strstr(rj.text, want))
		fail_msg("the REJECT says \"%s\", not \"%s\"", rj.text, want);
}

/* A REQ with n RC endpoints whose GIDs are the IPv4 addresses gids[i]. */
static int make_req(uint8_t *buf, size_t cap, uint32_t n, const char *const *gids)
{
	struct rv_wire_hello h;

	memset(&h, 0, sizeof(h));
	h.num_qps = n;
	for (uint32_t i = 0; i < n; i++) {
		rv_endpoint *e = &h.ep[i];
		e->gid[10] = e->gid[11] = 0xff;
		assert_int_equal(inet_pton(AF_INET, gids[i], e->gid + 12), 1);
		e->lid = 7471;
		e->port_num = 1;
		e->mtu = RV_MTU_1024;
		e->qpn = 0x100 + i;
		e->psn = 1;
		e->qp_type = RV_QPT_RC;
	}
	return rv_wire_hello_encode(RV_WIRE_REQ, &h, buf, cap, "test");
}

/* ---- finding 6: the helper connects only where it should ---------------------------- */

static void test_attack_helper__request_naming_another_address_is_refused(void **state)
{
	static const char *const far[RV_CONN_MAX_QPS] = {
		"192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1",
		"192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1"};
	static const char *const mixed[2] = {"127.0.0.1", "198.51.100.7"};
	static uint8_t req[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct server s;
	int fd, n, e0;

	(void)state;
	server_start(&s, "127.0.0.1", NULL, NULL);
	/* 16 endpoints naming a far address, as in the report. */
	e0 = server_errors(&s);
	n = make_req(req, sizeof(req), RV_CONN_MAX_QPS, far);
	assert_true(n > 0);
	fd = tcp_connect(NULL, s.port);
	send_all(fd, req, (size_t)n);
	expect_reject(fd, EACCES, "names address 192.0.2.1, but the exchange came from 127.0.0.1");
	close(fd);
	assert_int_equal(server_wait_error(&s, e0, "names address 192.0.2.1"), -EACCES);
	/* One good endpoint and one far one: refused all the same. */
	e0 = server_errors(&s);
	n = make_req(req, sizeof(req), 2, mixed);
	fd = tcp_connect(NULL, s.port);
	send_all(fd, req, (size_t)n);
	expect_reject(fd, EACCES, "endpoint 1 names address 198.51.100.7");
	close(fd);
	assert_int_equal(server_wait_error(&s, e0, "198.51.100.7"), -EACCES);
	/* The listener serves legitimate clients, from loopback, whose endpoints
	 * name loopback or (same host) this host's other addresses. */
	assert_int_equal(legit_connect("127.0.0.1", NULL, s.port, NULL, 0), 0);
	assert_int_equal(legit_connect("127.0.0.1", NULL, s.port, NULL, 0), 0);
	{
		int64_t end = now_ms() + HANG_MS;
		while (server_served(&s) < 2 && now_ms() < end)
			usleep(1000);
	}
	assert_int_equal(server_served(&s), 2);
	server_stop(&s);
}

/* ---- the namespace variant (root): no TCP connection reaches the named address -------- */

static struct netns_pair net;

/* In a child in namespace B: a TCP trap on its address (net.ip_b), port 7471, reports, through
 * the pipe, how many connections it accepted in total before being told to
 * stop (a byte on the stop pipe). */
static pid_t trap_start(int *counts_fd, int *stop_fd)
{
	int cp[2], sp[2];
	pid_t pid;

	assert_int_equal(pipe(cp), 0);
	assert_int_equal(pipe(sp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(7471)};
		int one = 1, n = 0, lfd;
		uint8_t ready = 'r';

		close(cp[0]);
		close(sp[1]);
		if (netns_enter(net.ns_b) < 0)
			_exit(2);
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		inet_pton(AF_INET, net.ip_b, &a.sin_addr);
		if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 64) < 0)
			_exit(3);
		if (write(cp[1], &ready, 1) != 1)
			_exit(4);
		for (;;) {
			struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sp[0], .events = POLLIN}};
			poll(p, 2, -1);
			if (p[0].revents & POLLIN) {
				int c = accept(lfd, NULL, NULL);
				if (c >= 0) {
					n++;
					close(c);
				}
			}
			if (p[1].revents)
				break;
		}
		if (write(cp[1], &n, sizeof(n)) != sizeof(n))
			_exit(5);
		_exit(0);
	}
	close(cp[1]);
	close(sp[0]);
	*counts_fd = cp[0];
	*stop_fd = sp[1];
	return pid;
}

static void test_attack_helper__no_connection_to_the_named_address_across_namespaces(void **state)
{
	const char *trap[2] = {net.ip_b, net.ip_b};
	static uint8_t req[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct server s;
	int counts_fd, stop_fd, fd, n, st, old_ns, accepted = -1;
	uint8_t ready;
	pid_t trap_pid;

	(void)state;
	if (!netns_usable() || netns_pair_new(&net, "atk", 216) < 0)
		skip();
	trap_pid = trap_start(&counts_fd, &stop_fd);
	assert_int_equal(read(counts_fd, &ready, 1), 1);
	/* The server and the attacker in namespace A (the attacker on its loopback). */
	old_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(old_ns >= 0);
	assert_int_equal(netns_enter(net.ns_a), 0);
	server_start(&s, "127.0.0.1", NULL, NULL);
	n = make_req(req, sizeof(req), 2, trap);
	fd = tcp_connect(NULL, s.port);
	send_all(fd, req, (size_t)n);
	{
		char want[64];
		snprintf(want, sizeof(want), "names address %s", net.ip_b);
		expect_reject(fd, EACCES, want);
	}
	close(fd);
	/* A legitimate client after it: served (so the attacker's request is
	 * long done), then the trap reports what reached it. */
	assert_int_equal(legit_connect("127.0.0.1", NULL, s.port, NULL, 0), 0);
	server_stop(&s);
	assert_int_equal(setns(old_ns, CLONE_NEWNET), 0);
	close(old_ns);
	assert_int_equal(write(stop_fd, "x", 1), 1);
	assert_int_equal(read(counts_fd, &accepted, sizeof(accepted)), (ssize_t)sizeof(accepted));
	assert_int_equal(waitpid(trap_pid, &st, 0), trap_pid);
	close(counts_fd);
	close(stop_fd);
	netns_pair_del(&net);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(accepted, 0);
}

/* ---- finding 6: the secret covers the helper's exchange ---------------------------------- */

static void test_attack_helper__secret_covers_the_exchange(void **state)
{
	static const char *const here[1] = {"127.0.0.1"};
	static uint8_t req[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX], payload[RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_auth a, ch;
	uint8_t msg[RV_WIRE_HDR_LEN + RV_WIRE_AUTH_LEN];
	char err[512];
	struct server s;
	uint32_t len;
	int fd, n, e0;

	(void)state;
	server_start(&s, "127.0.0.1", secret, NULL);
	n = make_req(req, sizeof(req), 1, here);

	/* A plain REQ: refused before anything is made. */
	e0 = server_errors(&s);
	fd = tcp_connect(NULL, s.port);
	send_all(fd, req, (size_t)n);
	expect_reject(fd, EACCES, "without proving the shared secret");
	close(fd);
	assert_int_equal(server_wait_error(&s, e0, "without proving the shared secret"), -EACCES);

	/* The challenge, then a forged proof and the REQ. */
	e0 = server_errors(&s);
	fd = tcp_connect(NULL, s.port);
	memset(&a, 0, sizeof(a));
	a.step = RV_AUTH_HELLO;
	memset(a.nonce, 0x11, sizeof(a.nonce));
	send_all(fd, msg, (size_t)rv_wire_auth_encode(&a, msg));
	assert_int_equal(recv_msg(fd, payload, &len), RV_WIRE_AUTH);
	assert_int_equal(rv_wire_auth_decode(payload, len, &ch, "test"), 0);
	assert_int_equal(ch.step, RV_AUTH_CHALLENGE);
	a.step = RV_AUTH_REQ_MAC;
	memset(a.nonce, 0, sizeof(a.nonce));
	memset(a.mac, 0x5a, sizeof(a.mac));
	send_all(fd, msg, (size_t)rv_wire_auth_encode(&a, msg));
	send_all(fd, req, (size_t)n);
	expect_reject(fd, EACCES, "does not know the shared secret");
	close(fd);
	assert_int_equal(server_wait_error(&s, e0, "does not know the shared secret"), -EACCES);

	/* Steps out of order. */
	e0 = server_errors(&s);
	fd = tcp_connect(NULL, s.port);
	a.step = RV_AUTH_REP_MAC;
	send_all(fd, msg, (size_t)rv_wire_auth_encode(&a, msg));
	expect_reject(fd, EBADMSG, "out of order");
	close(fd);
	assert_int_equal(server_wait_error(&s, e0, "out of order"), -EBADMSG);

	/* rv_connect from a context with another secret, and with none. */
	e0 = server_errors(&s);
	assert_int_equal(legit_connect("127.0.0.1", "another secret", s.port, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "did not prove the shared secret"));
	assert_int_equal(legit_connect("127.0.0.1", NULL, s.port, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "without proving the shared secret"));

	/* With the secret: connected, again and again. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(legit_connect("127.0.0.1", secret, s.port, err, sizeof(err)), 0);
	{
		int64_t end = now_ms() + HANG_MS;
		while (server_served(&s) < 3 && now_ms() < end)
			usleep(1000);
	}
	assert_int_equal(server_served(&s), 3);
	server_stop(&s);

	/* A server without a secret and a client with one: refused, and said. */
	server_start(&s, "127.0.0.1", NULL, NULL);
	assert_int_equal(legit_connect("127.0.0.1", secret, s.port, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "this server's context has none"));
	assert_int_equal(legit_connect("127.0.0.1", NULL, s.port, NULL, 0), 0);
	server_stop(&s);
}

/* ---- finding 7: slow clients do not starve rv_listener ---------------------------------- */

static int n_warn_lines;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_log(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= RV_LOG_WARN && strstr(msg, "listener #")) {
		pthread_mutex_lock(&log_lock);
		n_warn_lines++;
		pthread_mutex_unlock(&log_lock);
	}
}

static void test_attack_helper__slow_clients_do_not_starve_the_listener(void **state)
{
	/* A handshake timeout far longer than the test: without eviction, the
	 * first max_pending slow clients would hold every place throughout. */
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT, .handshake_timeout_ms = 600000};
	enum { N_SLOW = 400, N_LEGIT = 10 };
	static int slow[N_SLOW + 100];
	struct rlimit rl;
	struct server s;
	int64_t t0;
	int n = 0;

	(void)state;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < 2 * (N_SLOW + 100) + 200)
		skip(); /* not enough descriptors for both ends of the slow clients */
	rv_set_log_handler(count_log, NULL);
	server_start(&s, "127.0.0.1", NULL, &la);
	t0 = now_ms();
	/* 400 clients from 8 other loopback addresses: one byte each, except
	 * every tenth, which sends nothing. */
	for (int i = 0; i < N_SLOW; i++) {
		char src[32];
		snprintf(src, sizeof(src), "127.0.1.%d", 1 + i % 8);
		slow[n] = tcp_connect(src, s.port);
		if (i % 10)
			send_all(slow[n], "R", 1);
		n++;
	}
	/* Then legitimate clients, each after the slow ones. */
	for (int i = 0; i < N_LEGIT; i++) {
		char err[512] = "";
		int rc = legit_connect("127.0.0.1", NULL, s.port, err, sizeof(err));
		if (rc != 0)
			fail_msg("legitimate client %d of %d failed behind %d slow ones: %s", i + 1, N_LEGIT, N_SLOW, err);
	}
	/* 100 more slow clients from the legitimate clients' own address (its
	 * cap evicts its own idle ones), then legitimate clients again. */
	for (int i = 0; i < 100; i++) {
		slow[n] = tcp_connect(NULL, s.port);
		send_all(slow[n], "R", 1);
		n++;
	}
	for (int i = 0; i < N_LEGIT; i++) {
		char err[512] = "";
		int rc = legit_connect("127.0.0.1", NULL, s.port, err, sizeof(err));
		if (rc != 0)
			fail_msg("legitimate client %d failed behind slow ones from its own address: %s", i + 1, err);
	}
	{
		int64_t end = now_ms() + HANG_MS;
		while (server_served(&s) < 2 * N_LEGIT && now_ms() < end)
			usleep(1000);
	}
	assert_int_equal(server_served(&s), 2 * N_LEGIT);
	/* Evictions happened (the slow clients outnumber the places) and were
	 * logged as counts: at most one line a second, plus one. */
	{
		int64_t secs = (now_ms() - t0) / 1000 + 1;
		pthread_mutex_lock(&log_lock);
		int lines = n_warn_lines;
		pthread_mutex_unlock(&log_lock);
		assert_true(lines >= 1);
		assert_true(lines <= secs + 1);
	}
	server_stop(&s);
	rv_set_log_handler(NULL, NULL);
	for (int i = 0; i < n; i++)
		close(slow[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attack_helper__request_naming_another_address_is_refused),
		cmocka_unit_test(test_attack_helper__no_connection_to_the_named_address_across_namespaces),
		cmocka_unit_test(test_attack_helper__secret_covers_the_exchange),
		cmocka_unit_test(test_attack_helper__slow_clients_do_not_starve_the_listener),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
