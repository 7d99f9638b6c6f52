/*
 * send-recv-pingpong: two-sided SEND/RECV round trips between two processes,
 * with the latency they took.
 *
 * Each side keeps a receive posted; the client SENDs, the server answers with
 * a SEND of the same bytes, and the client checks every byte that comes back.
 *
 *   send-recv-pingpong [-n ITERS] [-s SIZE]                 both sides (fork)
 *   send-recv-pingpong [-n ITERS] [-s SIZE] server [PORT]
 *   send-recv-pingpong [-n ITERS] [-s SIZE] client HOST PORT
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define TIMEOUT_MS 5000

struct side {
	rv_context *ctx;
	rv_conn *conn;
	rv_pd *pd;
	rv_mr *mr; /* first half: receive buffer, second half: send buffer */
	rv_cq *cq;
	rv_qp *qp;
	uint32_t size;
	int recvs; /* receives completed and not yet taken by a round (send_and_receive) */
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s failed: %s\n  %s\n", what, strerror(-rc), rv_error_last());
	return 1;
}

static int side_open(struct side *s, uint32_t size)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	int rc;

	rv_device *dev;

	s->size = size;
	if ((rc = rv_device_default(&dev)) < 0)
		return fail("rv_device_default", rc);
	rc = rv_context_new(dev, NULL, &s->ctx);
	rv_device_unref(dev);
	if (rc < 0)
		return fail("rv_context_new", rc);
	if ((rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0)
		return fail("rv_pd_new", rc);
	if ((rc = rv_mr_alloc(s->pd, 2 * (size_t)size, RV_ACCESS_LOCAL_WRITE, NULL, &s->mr)) < 0)
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
	rv_context_close(s->ctx); /* closes the connection, QP, CQ, MR and PD first */
	rv_conn_unref(s->conn);
	rv_qp_unref(s->qp);
	rv_cq_unref(s->cq);
	rv_mr_unref(s->mr);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
}

static char *buf(struct side *s, int send_half)
{
	return (char *)rv_mr_addr(s->mr) + (send_half ? s->size : 0);
}

static int post_recv(struct side *s)
{
	rv_sge sge = {.addr = (uintptr_t)buf(s, 0), .length = s->size, .lkey = rv_mr_lkey(s->mr)};
	return rv_qp_recv(s->qp, &sge, 0);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/*
 * One round trip of one side: the client SENDs the send half, then takes the
 * echo; the server takes a message, then SENDs it back. The round ends when
 * its SEND completed and its receive came, in whichever order the CQ gives
 * them.
 *
 * A receive that completes here can belong to the next round: a SEND
 * completes when the peer's ACK comes back, and the peer may already have
 * sent its next message by then (it reads our SEND from its CQ and answers
 * before its device's ACK reaches us, or that ACK was lost and only the
 * retransmission's comes; rxe under load does both).
 * Receives are therefore counted (s->recvs) and each round takes one; a
 * round that took every receive it saw as its own would swallow the peer's
 * next message, and both sides would wait for each other until they time
 * out.
 */
static int send_and_receive(struct side *s, int client)
{
	rv_sge sge = {.addr = (uintptr_t)buf(s, 1), .length = s->size, .lkey = rv_mr_lkey(s->mr)};
	double deadline = now_us() + TIMEOUT_MS * 1e3;
	int got_send = 0, got_recv = 0, idle = 0, rc;
	rv_wc wc;

	if (client && (rc = rv_qp_send(s->qp, &sge, 1)) < 0)
		return fail("rv_qp_send", rc);
	while (!got_send || !got_recv) {
		if (!got_recv && s->recvs > 0) {
			s->recvs--;
			got_recv = 1;
			if (!client) {
				/* The message stays in the receive half until
				 * we echo it: the client sends nothing more
				 * before the echo arrives. */
				memcpy(buf(s, 1), buf(s, 0), s->size);
				if ((rc = rv_qp_send(s->qp, &sge, 1)) < 0)
					return fail("rv_qp_send", rc);
			}
			continue;
		}
		if ((rc = rv_cq_poll(s->cq, &wc, 1)) == 0 && now_us() < deadline) {
			/* On the software device the transfer is done by threads of
			 * this process and the peer's: on a machine with few cores,
			 * spinning without pause would starve them. */
			if (++idle % 64 == 0)
				sched_yield();
			continue;
		}
		if (rc <= 0)
			return fail("waiting for a completion", rc ? rc : -ETIMEDOUT);
		if (wc.status != RV_WC_SUCCESS) {
			fprintf(stderr, "%s completed with %s: %s\n", wc.opcode & RV_WC_RECV ? "RECV" : "SEND",
				rv_wc_status_str((int)wc.status), rv_wc_status_hint((int)wc.status));
			return 1;
		}
		if (wc.opcode & RV_WC_RECV) {
			if (wc.byte_len != s->size) {
				fprintf(stderr, "received %u bytes, expected %u\n", wc.byte_len, s->size);
				return 1;
			}
			if ((rc = post_recv(s)) < 0)
				return fail("rv_qp_recv", rc);
			s->recvs++;
		} else {
			got_send = 1;
		}
	}
	return 0;
}

/* Connect our own QP (a receive already posted from INIT, before the peer
 * can send): with a listener as the server, by address as the client. Over
 * the TCP exchange: rdma_cm takes only QPs in RESET (it sets their port and
 * access itself), so it leaves no moment to post a receive before the peer
 * can send. */
static int connect_side(struct side *s, rv_listener *l, const char *addr)
{
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_QPS, .num_qps = 1, .qps = &s->qp};
	int rc;

	if ((rc = rv_qp_to_init(s->qp, NULL)) < 0)
		return fail("rv_qp_to_init", rc);
	if ((rc = post_recv(s)) < 0)
		return fail("rv_qp_recv", rc);
	if (!l) { /* a listener's transport is set in rv_listener_new() */
		ca.mask |= RV_CONN_ATTR_TRANSPORT;
		ca.transport = RV_CONN_TRANSPORT_TCP;
	}
	rc = l ? rv_listener_accept(l, &ca, -1, &s->conn) : rv_connect(s->ctx, addr, &ca, TIMEOUT_MS, &s->conn);
	return rc < 0 ? fail(l ? "rv_listener_accept" : "rv_connect", rc) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* ready_fd >= 0: write the chosen port there once listening (fork mode). */
static int server(const char *port, int ready_fd, int iters, uint32_t size)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = RV_CONN_TRANSPORT_TCP};
	struct side s = {0};
	rv_listener *l = NULL;
	uint32_t ev = 0;
	char addr[32];
	int rc, ret = 1;

	snprintf(addr, sizeof(addr), "*:%s", port);
	if (side_open(&s, size) || ((rc = rv_listener_new(s.ctx, addr, &la, &l)) < 0 && fail("rv_listener_new", rc)))
		goto out;
	printf("listening on port %d\n", rv_listener_port(l));
	fflush(stdout);
	if (ready_fd >= 0 && write(ready_fd, &(int){rv_listener_port(l)}, sizeof(int)) != sizeof(int))
		goto out;
	if (connect_side(&s, l, NULL))
		goto out;
	for (int i = 0; i < iters; i++)
		if (send_and_receive(&s, 0))
			goto out;
	/* The client disconnects when it has checked the last echo. */
	ret = rv_conn_poll(s.conn, TIMEOUT_MS, &ev) < 0 || ev != RV_CONN_EVENT_DISCONNECTED;
out:
	rv_listener_unref(l);
	side_close(&s);
	return ret;
}

static int client(const char *host, const char *port, int iters, uint32_t size)
{
	struct side s = {0};
	double *rtt = calloc((size_t)iters, sizeof(*rtt)), sum = 0;
	char addr[300];
	int ret = 1;

	snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	if (!rtt || side_open(&s, size) || connect_side(&s, NULL, addr))
		goto out;
	for (int i = 0; i < iters; i++) {
		for (uint32_t k = 0; k < size; k++)
			buf(&s, 1)[k] = (char)(i + k);
		double t0 = now_us();
		if (send_and_receive(&s, 1))
			goto out;
		rtt[i] = now_us() - t0;
		if (memcmp(buf(&s, 0), buf(&s, 1), size) != 0) {
			fprintf(stderr, "iteration %d: the echoed bytes differ from the sent ones\n", i);
			goto out;
		}
		sum += rtt[i];
	}
	qsort(rtt, (size_t)iters, sizeof(*rtt), cmp_double);
	printf("send-recv-pingpong on %s: %d round trips of %u bytes, all bytes verified\n",
	       rv_device_name(rv_context_device(s.ctx)), iters, size);
	printf("  one-way latency (RTT/2), us: min %.2f  median %.2f  avg %.2f  p99 %.2f  max %.2f\n",
	       rtt[0] / 2, rtt[iters / 2] / 2, sum / iters / 2, rtt[(size_t)((iters - 1) * 0.99)] / 2,
	       rtt[iters - 1] / 2);
	printf("  round trips per second: %.0f\n", iters / (sum / 1e6));
	ret = rv_conn_disconnect(s.conn, TIMEOUT_MS) < 0;
out:
	free(rtt);
	side_close(&s);
	return ret;
}

int main(int argc, char **argv)
{
	int iters = 10000, opt, pfd[2], port, status, rc;
	uint32_t size = 64;
	char portstr[16];
	pid_t pid;

	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		if (opt == 'n')
			iters = atoi(optarg);
		else if (opt == 's')
			size = (uint32_t)strtoul(optarg, NULL, 0);
		else
			goto usage;
	}
	if (iters < 1 || size < 1 || size > (1u << 24))
		goto usage;
	argc -= optind;
	argv += optind;
	if (argc >= 1 && strcmp(argv[0], "server") == 0)
		return server(argc > 1 ? argv[1] : "0", -1, iters, size);
	if (argc == 3 && strcmp(argv[0], "client") == 0)
		return client(argv[1], argv[2], iters, size);
	if (argc != 0)
		goto usage;
	/* Both sides on this host, as two processes; the server says its port through a pipe. */
	fflush(stdout);
	if (pipe(pfd) < 0 || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		int src;
		close(pfd[0]);
		src = server("0", pfd[1], iters, size);
		fflush(stdout);
		_exit(src);
	}
	close(pfd[1]);
	rc = read(pfd[0], &port, sizeof(port)) == sizeof(port) ? 0 : 1;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if (rc == 0)
		rc = client("127.0.0.1", portstr, iters, size);
	if (rc != 0)
		kill(pid, SIGTERM); /* the server would wait for a client forever */
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = 1;
	printf("send-recv-pingpong: %s\n", rc ? "FAILED" : "ok");
	return rc;
usage:
	fprintf(stderr, "usage: send-recv-pingpong [-n ITERS] [-s SIZE] [server [PORT] | client HOST PORT]\n");
	return 2;
}
