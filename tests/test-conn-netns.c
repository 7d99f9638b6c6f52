/*
 * The connection helper across network namespaces: a server in one
 * namespace, 64 client processes in another, joined by a veth pair, all on
 * the software device (rv_context_attr.listen_addr set to each namespace's
 * address). Each client writes its own slot of the server's buffer right
 * after connecting and then disconnects; the server sees every disconnect.
 *
 * Needs root and `ip` (iproute2); exits 77 (skip) without them, or when
 * soft0 is not built in.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
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

#include "netns-pair.h"

#define N_CLIENTS 64
#define PORT 7471

static struct netns_pair net;

static rv_context *soft_ctx(const char *listen_addr)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = listen_addr};
	rv_device *dev = NULL;
	rv_context *ctx = NULL;

	if (rv_device_find("soft0", &dev) < 0)
		return NULL;
	if (rv_context_new(dev, &ca, &ctx) < 0)
		ctx = NULL;
	rv_device_unref(dev);
	return ctx;
}

static int wait_wc(rv_cq *cq, rv_wc *wc, int timeout_ms)
{
	for (int i = 0; i < timeout_ms * 10; i++) {
		int n = rv_cq_poll(cq, wc, 1);
		if (n != 0)
			return n < 0 ? n : 0;
		nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 100000}, NULL);
	}
	return -ETIMEDOUT;
}

static int server(int ready_fd)
{
	rv_conn_attr a = {.mask = RV_CONN_ATTR_PD | RV_CONN_ATTR_MR | RV_CONN_ATTR_PRIVATE_DATA};
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT, .handshake_timeout_ms = 30000};
	rv_conn *conns[N_CLIENTS];
	rv_context *ctx;
	rv_listener *l;
	rv_pd *pd;
	rv_mr *mr;
	char addr[64];

	if (netns_enter(net.ns_a) < 0 || !(ctx = soft_ctx(net.ip_a)))
		return 2;
	snprintf(addr, sizeof(addr), "%s:%d", net.ip_a, PORT);
	if (rv_pd_new(ctx, NULL, &pd) < 0 ||
	    rv_mr_alloc(pd, 8 * N_CLIENTS, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &mr) < 0 ||
	    rv_listener_new(ctx, addr, &la, &l) < 0) {
		fprintf(stderr, "server: %s\n", rv_error_last());
		return 3;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 4;
	close(ready_fd);
	a.pd = pd;
	a.mr = mr;
	a.private_data = net.ns_a;
	a.private_data_len = (uint32_t)strlen(net.ns_a);
	for (int i = 0; i < N_CLIENTS; i++)
		if (rv_listener_accept(l, &a, 60000, &conns[i]) < 0) {
			fprintf(stderr, "server: accept %d: %s\n", i, rv_error_last());
			return 5;
		}
	for (int i = 0; i < N_CLIENTS; i++) {
		uint32_t ev = 0;
		if (rv_conn_poll(conns[i], 60000, &ev) < 0 || ev != RV_CONN_EVENT_DISCONNECTED)
			return 6;
		rv_conn_unref(conns[i]);
	}
	for (int i = 0; i < N_CLIENTS; i++)
		if (((uint64_t *)rv_mr_addr(mr))[i] != 0xabc000u + (unsigned)i) {
			fprintf(stderr, "server: slot %d holds 0x%llx\n", i,
				(unsigned long long)((uint64_t *)rv_mr_addr(mr))[i]);
			return 7;
		}
	rv_listener_unref(l);
	rv_mr_unref(mr);
	rv_pd_unref(pd);
	rv_context_close(ctx);
	rv_context_unref(ctx);
	return 0;
}

static int client(int idx)
{
	rv_context *ctx;
	rv_endpoint peer;
	rv_conn *c;
	rv_mr *mr;
	rv_sge sge;
	rv_wc wc;
	char addr[64], data[32] = {0};
	size_t n = 0;

	if (netns_enter(net.ns_b) < 0 || !(ctx = soft_ctx(net.ip_b)))
		return 2;
	snprintf(addr, sizeof(addr), "%s:%d", net.ip_a, PORT);
	if (rv_connect(ctx, addr, NULL, 60000, &c) < 0) {
		fprintf(stderr, "client %d: %s\n", idx, rv_error_last());
		return 3;
	}
	if (rv_conn_peer_data(c, data, sizeof(data), &n) < 0 || strcmp(data, net.ns_a) != 0)
		return 4;
	if (rv_conn_peer_endpoint(c, 0, &peer) < 0 || rv_mr_alloc(rv_conn_pd(c), 8, RV_ACCESS_LOCAL_WRITE, NULL, &mr) < 0)
		return 5;
	*(uint64_t *)rv_mr_addr(mr) = 0xabc000u + (unsigned)idx;
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = 8;
	sge.lkey = rv_mr_lkey(mr);
	if (rv_qp_write(rv_conn_qp(c, 0), &sge, peer.mr_addr + 8u * (unsigned)idx, peer.mr_rkey, 1) < 0 ||
	    wait_wc(rv_conn_cq(c), &wc, 30000) < 0 || wc.status != RV_WC_SUCCESS) {
		fprintf(stderr, "client %d: RDMA WRITE failed: %s\n", idx, rv_error_last());
		return 6;
	}
	if (rv_conn_disconnect(c, 30000) < 0)
		return 7;
	rv_mr_unref(mr);
	rv_conn_unref(c);
	rv_context_unref(ctx);
	return 0;
}

static void test_conn_netns__64_clients_from_another_namespace(void **state)
{
	pid_t srv, pids[N_CLIENTS];
	int pfd[2], st;
	char r;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	fflush(NULL);
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		close(pfd[0]);
		_exit(server(pfd[1]));
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &r, 1), 1);
	close(pfd[0]);
	for (int i = 0; i < N_CLIENTS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(client(i));
	}
	for (int i = 0; i < N_CLIENTS; i++) {
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(waitpid(srv, &st, 0), srv);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_netns__64_clients_from_another_namespace),
	};
	rv_device *dev = NULL;
	int rc;

	if (!netns_usable()) {
		fprintf(stderr, "skip: needs root and iproute2's ip\n");
		return 77;
	}
	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "skip: soft0 is not built in\n");
		return 77;
	}
	rv_device_unref(dev);
	if (netns_pair_new(&net, "conn", 213) < 0) {
		fprintf(stderr, "skip: cannot create network namespaces here\n");
		return 77;
	}
	rc = cmocka_run_group_tests_name("conn-netns", tests, NULL, NULL);
	netns_pair_del(&net);
	return rc;
}
