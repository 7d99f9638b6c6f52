/*
 * rdma-write: a one-sided RDMA WRITE between two processes.
 *
 * The server registers a buffer for remote writes and advertises it in its
 * endpoint; the client writes a message into it with one RDMA WRITE; the
 * server, which posted nothing and took no part in the transfer, prints it.
 *
 *   rdma-write                      run both sides (fork) on this host
 *   rdma-write server [PORT]        wait for one client (PORT 0: any)
 *   rdma-write client HOST PORT [MESSAGE]
 *
 * The device is the default one (RVERBS_DEVICE=name to choose).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#include "oob.h"

#define BUF_SIZE 4096

struct side {
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr;
	rv_cq *cq;
	rv_qp *qp;
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s failed: %s\n  %s\n", what, strerror(-rc), rv_error_last());
	return 1;
}

static int side_open(struct side *s, uint32_t access)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	int rc;

	if ((rc = rv_device_default(&s->dev)) < 0)
		return fail("rv_device_default", rc);
	if ((rc = rv_context_new(s->dev, NULL, &s->ctx)) < 0)
		return fail("rv_context_new", rc);
	if ((rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0)
		return fail("rv_pd_new", rc);
	if ((rc = rv_mr_alloc(s->pd, BUF_SIZE, access, &s->mr)) < 0)
		return fail("rv_mr_alloc", rc);
	if ((rc = rv_cq_new(s->ctx, NULL, &s->cq)) < 0)
		return fail("rv_cq_new", rc);
	qa.send_cq = s->cq;
	if ((rc = rv_qp_new(s->pd, &qa, &s->qp)) < 0)
		return fail("rv_qp_new", rc);
	return 0;
}

static void side_close(struct side *s)
{
	/* Unreferencing the context's children in any order is safe; closing the
	 * context would also close them all. */
	rv_qp_unref(s->qp);
	rv_cq_unref(s->cq);
	rv_mr_unref(s->mr);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
	rv_device_unref(s->dev);
}

static int server(int lfd)
{
	struct side s = {0};
	rv_endpoint me, peer;
	int fd, rc, ret = 1;

	if (side_open(&s, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE))
		goto out;
	if ((rc = oob_accept(lfd, &fd)) < 0) {
		fprintf(stderr, "accept: %s\n", strerror(-rc));
		goto out;
	}
	rv_qp_endpoint(s.qp, &me);
	me.mask |= RV_ENDPOINT_MR;
	me.mr_addr = (uintptr_t)rv_mr_addr(s.mr);
	me.mr_length = BUF_SIZE;
	me.mr_rkey = rv_mr_rkey(s.mr);
	if ((rc = oob_exchange(fd, &me, &peer)) < 0) {
		fail("endpoint exchange", rc);
		goto out_fd;
	}
	if ((rc = rv_qp_connect(s.qp, &peer)) < 0) {
		fail("rv_qp_connect", rc);
		goto out_fd;
	}
	/* Barrier 1: both QPs are in RTS. Barrier 2: the client's WRITE completed. */
	if (oob_barrier(fd) < 0 || oob_barrier(fd) < 0) {
		fprintf(stderr, "the client went away\n");
		goto out_fd;
	}
	printf("server: received by RDMA WRITE: \"%s\"\n", (char *)rv_mr_addr(s.mr));
	ret = 0;
out_fd:
	close(fd);
out:
	side_close(&s);
	return ret;
}

static int client(const char *host, const char *port, const char *msg)
{
	struct side s = {0};
	rv_endpoint me, peer;
	rv_wc wc;
	rv_sge sge;
	int fd = -1, rc, ret = 1;

	if (side_open(&s, RV_ACCESS_LOCAL_WRITE))
		goto out;
	if ((rc = oob_connect(host, port, &fd)) < 0) {
		fprintf(stderr, "connect to %s:%s: %s\n", host, port, strerror(-rc));
		goto out;
	}
	rv_qp_endpoint(s.qp, &me);
	if ((rc = oob_exchange(fd, &me, &peer)) < 0) {
		fail("endpoint exchange", rc);
		goto out;
	}
	if (!(peer.mask & RV_ENDPOINT_MR) || peer.mr_length < strlen(msg) + 1) {
		fprintf(stderr, "the server advertised no buffer large enough\n");
		goto out;
	}
	if ((rc = rv_qp_connect(s.qp, &peer)) < 0) {
		fail("rv_qp_connect", rc);
		goto out;
	}
	if (oob_barrier(fd) < 0)
		goto out;
	strcpy(rv_mr_addr(s.mr), msg);
	sge.addr = (uintptr_t)rv_mr_addr(s.mr);
	sge.length = (uint32_t)strlen(msg) + 1;
	sge.lkey = rv_mr_lkey(s.mr);
	if ((rc = rv_qp_write(s.qp, &sge, peer.mr_addr, peer.mr_rkey, 1)) < 0) {
		fail("rv_qp_write", rc);
		goto out;
	}
	if ((rc = oob_wait_completion(s.cq, &wc, 5000)) < 0) {
		fail("waiting for the completion", rc);
		goto out;
	}
	if (wc.status != RV_WC_SUCCESS) {
		fprintf(stderr, "RDMA WRITE failed: %s (%s)\n", rv_wc_status_str((int)wc.status),
			rv_wc_status_hint((int)wc.status));
		goto out;
	}
	printf("client: wrote %u bytes with one RDMA WRITE on %s (QP %u -> %u)\n", sge.length,
	       rv_device_name(s.dev), rv_qp_num(s.qp), peer.qpn);
	ret = oob_barrier(fd) < 0;
out:
	if (fd >= 0)
		close(fd);
	side_close(&s);
	return ret;
}

int main(int argc, char **argv)
{
	const char *msg = "Hello from rverbs: this text arrived by RDMA WRITE.";
	int lfd, port, status;
	char portstr[16];
	pid_t pid;

	if (argc >= 2 && strcmp(argv[1], "server") == 0) {
		if (oob_listen(argc > 2 ? argv[2] : "0", &lfd, &port) < 0)
			return 1;
		printf("listening on port %d\n", port);
		fflush(stdout);
		return server(lfd);
	}
	if (argc >= 4 && strcmp(argv[1], "client") == 0)
		return client(argv[2], argv[3], argc > 4 ? argv[4] : msg);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [server [PORT] | client HOST PORT [MESSAGE]]\n", argv[0]);
		return 2;
	}
	/* Both sides on this host, as two processes. */
	if (oob_listen("0", &lfd, &port) < 0)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int src = server(lfd);
		fflush(stdout);
		_exit(src);
	}
	close(lfd);
	snprintf(portstr, sizeof(portstr), "%d", port);
	int rc = client("127.0.0.1", portstr, msg);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = 1;
	printf("rdma-write: %s\n", rc ? "FAILED" : "ok");
	return rc;
}
