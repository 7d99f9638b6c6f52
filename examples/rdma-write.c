/*
 * rdma-write: a one-sided RDMA WRITE between two processes.
 *
 * The server registers a buffer for remote writes and advertises it when it
 * accepts the connection; the client writes a message into it with one RDMA
 * WRITE right after connecting (no second round trip) and disconnects; the
 * server, which posted nothing and took no part in the transfer, learns of
 * the disconnect and prints the message.
 *
 *   rdma-write                      run both sides (fork) on this host
 *   rdma-write server [PORT]        wait for one client (PORT 0: any)
 *   rdma-write client HOST PORT [MESSAGE]
 *
 * The device is the default one (RVERBS_DEVICE=name to choose). Both sides
 * on one host (fork) meet on 127.0.0.1 over the TCP exchange: rdma_cm, which
 * the other modes use on a kernel device that has it, cannot route to the
 * loopback address.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define BUF_SIZE 4096
#define TIMEOUT_MS 10000

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s failed: %s\n  %s\n", what, strerror(-rc), rv_error_last());
	return 1;
}

static int open_context(rv_context **ctx)
{
	rv_device *dev;
	int rc = rv_device_default(&dev);

	if (rc == 0)
		rc = rv_context_new(dev, NULL, ctx);
	rv_device_unref(dev);
	return rc < 0 ? fail("opening the default device", rc) : 0;
}

/* The exchange: the device's choice, or TCP (fork mode, on 127.0.0.1). */
static rv_conn_transport transport = RV_CONN_TRANSPORT_AUTO;

/* ready_fd >= 0: write the chosen port there once listening (fork mode). */
static int server(const char *port, int ready_fd)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = transport};
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_PD | RV_CONN_ATTR_MR};
	rv_context *ctx = NULL;
	rv_listener *l = NULL;
	rv_conn *conn = NULL;
	uint32_t ev = 0;
	char addr[32];
	int rc, ret = 1;

	snprintf(addr, sizeof(addr), "*:%s", port);
	if (open_context(&ctx))
		return 1;
	if ((rc = rv_pd_new(ctx, NULL, &ca.pd)) < 0 ||
	    (rc = rv_mr_alloc(ca.pd, BUF_SIZE, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &ca.mr)) < 0 ||
	    (rc = rv_listener_new(ctx, addr, &la, &l)) < 0) {
		fail("setting up the server", rc);
		goto out;
	}
	printf("listening on port %d\n", rv_listener_port(l));
	fflush(stdout);
	if (ready_fd >= 0 && write(ready_fd, &(int){rv_listener_port(l)}, sizeof(int)) != sizeof(int))
		goto out;
	if ((rc = rv_listener_accept(l, &ca, -1, &conn)) < 0 && fail("rv_listener_accept", rc))
		goto out;
	/* The client disconnects once its WRITE has completed. */
	if ((rc = rv_conn_poll(conn, TIMEOUT_MS, &ev)) < 0 || ev != RV_CONN_EVENT_DISCONNECTED) {
		fprintf(stderr, "the client did not finish within %d ms\n", TIMEOUT_MS);
		goto out;
	}
	printf("server: received by RDMA WRITE: \"%s\"\n", (char *)rv_mr_addr(ca.mr));
	ret = 0;
out:
	rv_context_close(ctx); /* closes the connection, listener, MR and PD first */
	rv_conn_unref(conn);
	rv_listener_unref(l);
	rv_mr_unref(ca.mr);
	rv_pd_unref(ca.pd);
	rv_context_unref(ctx);
	return ret;
}

static int client(const char *host, const char *port, const char *msg)
{
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_TRANSPORT, .transport = transport};
	rv_context *ctx = NULL;
	rv_conn *conn = NULL;
	rv_mr *mr = NULL;
	rv_endpoint peer;
	rv_sge sge;
	rv_wc wc;
	char addr[300];
	int rc, n = 0, ret = 1;

	snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	if (open_context(&ctx))
		return 1;
	if ((rc = rv_connect(ctx, addr, &ca, TIMEOUT_MS, &conn)) < 0 && fail("rv_connect", rc))
		goto out;
	/* The server's buffer came with the connection. */
	rv_conn_peer_endpoint(conn, 0, &peer);
	if (!(peer.mask & RV_ENDPOINT_MR) || peer.mr_length < strlen(msg) + 1) {
		fprintf(stderr, "the server advertised no buffer large enough\n");
		goto out;
	}
	if ((rc = rv_mr_alloc(rv_conn_pd(conn), BUF_SIZE, RV_ACCESS_LOCAL_WRITE, NULL, &mr)) < 0 && fail("rv_mr_alloc", rc))
		goto out;
	strcpy(rv_mr_addr(mr), msg);
	sge.addr = (uintptr_t)rv_mr_addr(mr);
	sge.length = (uint32_t)strlen(msg) + 1;
	sge.lkey = rv_mr_lkey(mr);
	if ((rc = rv_qp_write(rv_conn_qp(conn, 0), &sge, peer.mr_addr, peer.mr_rkey, 1)) < 0 && fail("rv_qp_write", rc))
		goto out;
	for (time_t end = time(NULL) + TIMEOUT_MS / 1000; n == 0 && time(NULL) <= end;)
		n = rv_cq_poll(rv_conn_cq(conn), &wc, 1);
	if (n != 1 || wc.status != RV_WC_SUCCESS) {
		fprintf(stderr, "RDMA WRITE failed: %s (%s)\n", n == 1 ? rv_wc_status_str((int)wc.status) : "no completion",
			n == 1 ? rv_wc_status_hint((int)wc.status) : rv_error_last());
		goto out;
	}
	printf("client: wrote %u bytes with one RDMA WRITE on %s (QP %u -> %u)\n", sge.length,
	       rv_device_name(rv_context_device(ctx)), rv_qp_num(rv_conn_qp(conn, 0)), peer.qpn);
	ret = rv_conn_disconnect(conn, TIMEOUT_MS) < 0;
out:
	rv_mr_unref(mr);
	rv_conn_unref(conn);
	rv_context_unref(ctx);
	return ret;
}

int main(int argc, char **argv)
{
	const char *msg = "Hello from rverbs: this text arrived by RDMA WRITE.";
	int pfd[2], port, status, rc;
	char portstr[16];
	pid_t pid;

	if (argc >= 2 && strcmp(argv[1], "server") == 0)
		return server(argc > 2 ? argv[2] : "0", -1);
	if (argc >= 4 && strcmp(argv[1], "client") == 0)
		return client(argv[2], argv[3], argc > 4 ? argv[4] : msg);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [server [PORT] | client HOST PORT [MESSAGE]]\n", argv[0]);
		return 2;
	}
	/* Both sides on this host, as two processes; the server says its port through a pipe. */
	transport = RV_CONN_TRANSPORT_TCP;
	fflush(stdout);
	if (pipe(pfd) < 0 || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(pfd[0]);
		rc = server("0", pfd[1]);
		fflush(stdout);
		_exit(rc);
	}
	close(pfd[1]);
	rc = read(pfd[0], &port, sizeof(port)) == sizeof(port) ? 0 : 1;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if (rc == 0)
		rc = client("127.0.0.1", portstr, msg);
	if (rc != 0)
		kill(pid, SIGTERM); /* the server would wait for a client forever */
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = 1;
	printf("rdma-write: %s\n", rc ? "FAILED" : "ok");
	return rc;
}
