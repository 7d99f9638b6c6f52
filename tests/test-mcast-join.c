/*
 * rv_mcast_join / rv_mcast_leave on soft0: the helper's multicast join maps
 * an IP group to soft0's multicast GID (docs/ud.md, "Multicast"), attaches
 * the QP and returns an address handle and Q_Key that reach the group.
 *
 * Proves: a datagram sent with what rv_mcast_join() returned reaches a
 * member in another process and a member in the sender's own context, in
 * full; after rv_mcast_leave() the member gets nothing more while one still
 * joined does; the argument rules (NULLs, a unicast or malformed group, an
 * IPv6 group on an IPv4 context, an RC QP, a QP in RESET) are refused with
 * -EINVAL and a message. Each run picks its own group (239.x.y.z from its
 * pid and the clock). Waits are hang guards only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>
#include "test-clock.h"

#define WAIT_MS 10000

static char group[32];

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	uint8_t *buf;
};

static int side_open(struct side *s)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = "127.0.0.1"};
	rv_device *dev;
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = rv_device_find("soft0", &dev)) < 0)
		return rc;
	rc = rv_context_new(dev, &ca, &s->ctx);
	rv_device_unref(dev);
	if (rc < 0 || (rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0 || (rc = rv_cq_new(s->ctx, NULL, &s->cq)) < 0)
		return rc;
	return rv_mr_alloc(s->pd, 8192, RV_ACCESS_LOCAL_WRITE, NULL, &s->mr);
}

static void side_close(struct side *s)
{
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	rv_context_unref(s->ctx);
}

static rv_qp *ud_qp(struct side *s, bool rts)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_UD,
			      .send_cq = s->cq};
	rv_qp *qp = NULL;

	if (rv_qp_new(s->pd, &qa, &qp) < 0)
		return NULL;
	if (rts && (rv_qp_to_init(qp, NULL) < 0 || rv_qp_to_rtr(qp, NULL) < 0 || rv_qp_to_rts(qp, NULL) < 0))
		return rv_qp_unref(qp);
	return qp;
}

static int post_recvs(struct side *s, rv_qp *qp, uint32_t first, uint32_t n)
{
	uint8_t *base = rv_mr_addr(s->mr);
	for (uint32_t i = first; i < first + n; i++) {
		rv_sge g = {.addr = (uintptr_t)(base + 256 * i), .length = 256, .lkey = rv_mr_lkey(s->mr)};
		int rc = rv_qp_recv(qp, &g, i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Wait for a receive on s->cq (sends are skipped): its wr_id, or -1. */
static int64_t wait_recv(struct side *s, int ms, uint32_t *len)
{
	int64_t until = now_ms() + ms;
	rv_wc wc;

	while (now_ms() < until) {
		int n = rv_cq_poll(s->cq, &wc, 1);
		if (n < 0)
			return -1;
		if (n == 1 && (wc.opcode & RV_WC_RECV)) {
			*len = wc.byte_len;
			return wc.status == RV_WC_SUCCESS ? (int64_t)wc.wr_id : -1;
		}
		if (n == 0)
			usleep(1000);
	}
	return -1;
}

static int send_group(struct side *s, rv_qp *qp, rv_ah *ah, uint32_t qkey, const char *text)
{
	uint8_t *src = (uint8_t *)rv_mr_addr(s->mr) + 7936;
	rv_sge g = {.addr = (uintptr_t)src, .length = (uint32_t)strlen(text) + 1, .lkey = rv_mr_lkey(s->mr)};
	rv_send_wr wr = {.sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND, .ah = ah,
			 .remote_qpn = RV_MCAST_QPN, .remote_qkey = qkey};

	strcpy((char *)src, text);
	return rv_qp_post_send(qp, &wr, 1, NULL);
}

/* The UD receive buffer: 40 bytes of GRH, then the payload. */
static const char *payload(struct side *s, int64_t slot)
{
	return (const char *)rv_mr_addr(s->mr) + 256 * slot + 40;
}

/* The child: join, tell the parent, expect "hello group" then, after the
 * parent said it left, nothing else but "still here". Exit 0 on success. */
static int child(int ready_fd)
{
	struct side s;
	rv_mcast *m = NULL;
	rv_ah *ah = NULL;
	rv_qp *qp;
	uint32_t qkey = 0, len = 0;
	int64_t slot;

	if (side_open(&s) < 0 || !(qp = ud_qp(&s, true)) || post_recvs(&s, qp, 0, 8) < 0)
		return 10;
	if (rv_mcast_join(qp, group, 5000, &m, &ah, &qkey) < 0) {
		fprintf(stderr, "child: rv_mcast_join: %s\n", rv_error_last());
		return 11;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 12;
	slot = wait_recv(&s, WAIT_MS, &len);
	if (slot < 0 || strcmp(payload(&s, slot), "hello group") != 0)
		return 13;
	slot = wait_recv(&s, WAIT_MS, &len);
	if (slot < 0 || strcmp(payload(&s, slot), "still here") != 0)
		return 14;
	rv_ah_unref(ah);
	if (rv_mcast_leave(m) < 0)
		return 15;
	rv_qp_unref(qp);
	side_close(&s);
	return 0;
}

static void test_mcast_join__two_processes(void **state)
{
	struct side s;
	rv_mcast *m1 = NULL, *m2 = NULL;
	rv_ah *ah = NULL, *ah2 = NULL;
	rv_qp *tx, *r2;
	uint32_t qkey = 0, qkey2 = 0, len = 0;
	int p[2], st = 0;
	int64_t slot;
	pid_t pid;
	char c;

	(void)state;
	assert_int_equal(pipe(p), 0);
	pid = fork(); /* before any context of this process */
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(child(p[1]));
	}
	close(p[1]);
	assert_int_equal(side_open(&s), 0);
	tx = ud_qp(&s, true);
	r2 = ud_qp(&s, true);
	assert_non_null(tx);
	assert_non_null(r2);
	assert_int_equal(post_recvs(&s, r2, 0, 8), 0);
	/* The sender joins too: its AH and Q_Key are what it sends with. */
	if (rv_mcast_join(tx, group, 5000, &m1, &ah, &qkey) < 0)
		fail_msg("rv_mcast_join: %s", rv_error_last());
	assert_int_equal(rv_mcast_join(r2, group, 5000, &m2, &ah2, &qkey2), 0);
	assert_int_equal(qkey, 0x11111111u); /* soft0: the QP's own (rv_qp_to_init's default) */
	assert_int_equal(qkey2, qkey);
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(send_group(&s, tx, ah, qkey, "hello group"), 0);
	/* The member in this context (multicast loopback) gets its copy. */
	slot = wait_recv(&s, WAIT_MS, &len);
	assert_true(slot >= 0);
	assert_int_equal(len, 40 + 12);
	assert_string_equal(payload(&s, slot), "hello group");
	/* r2 leaves: the next datagram reaches the child only. */
	assert_int_equal(rv_mcast_leave(m2), 0);
	assert_int_equal(send_group(&s, tx, ah, qkey, "still here"), 0);
	assert_true(wait_recv(&s, 300, &len) < 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	rv_ah_unref(ah2);
	rv_ah_unref(ah);
	assert_int_equal(rv_mcast_leave(m1), 0);
	rv_qp_unref(r2);
	rv_qp_unref(tx);
	side_close(&s);
	close(p[0]);
}

static void test_mcast_join__arguments(void **state)
{
	rv_qp_init_attr rc_attr = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = NULL};
	struct side s;
	rv_mcast *m = NULL;
	rv_ah *ah = NULL;
	rv_qp *qp, *reset, *rc;

	(void)state;
	assert_int_equal(side_open(&s), 0);
	qp = ud_qp(&s, true);
	reset = ud_qp(&s, false);
	rc_attr.send_cq = s.cq;
	assert_int_equal(rv_qp_new(s.pd, &rc_attr, &rc), 0);
	assert_non_null(qp);
	assert_int_equal(rv_mcast_join(NULL, group, 0, &m, &ah, NULL), -EINVAL);
	assert_int_equal(rv_mcast_join(qp, NULL, 0, &m, &ah, NULL), -EINVAL);
	assert_int_equal(rv_mcast_join(qp, group, 0, NULL, &ah, NULL), -EINVAL);
	assert_int_equal(rv_mcast_join(qp, group, 0, &m, NULL, NULL), -EINVAL);
	assert_int_equal(rv_mcast_join(qp, "10.1.2.3", 0, &m, &ah, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "not an IPv4 multicast"));
	assert_int_equal(rv_mcast_join(qp, "fe80::1", 0, &m, &ah, NULL), -EINVAL);
	assert_int_equal(rv_mcast_join(qp, "239.1.2", 0, &m, &ah, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "not an IP multicast address"));
	assert_int_equal(rv_mcast_join(qp, "[ff0e::1]", 0, &m, &ah, NULL), -EINVAL); /* IPv6 group, IPv4 context */
	assert_int_equal(rv_mcast_join(rc, group, 0, &m, &ah, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "not UD"));
	assert_int_equal(rv_mcast_join(reset, group, 0, &m, &ah, NULL), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "RESET"));
	assert_null(m);
	assert_null(ah);
	assert_int_equal(rv_mcast_leave(NULL), -EINVAL);
	/* A membership outlives its QP's handle: leave after the QP closed. */
	assert_int_equal(rv_mcast_join(qp, group, 0, &m, &ah, NULL), 0);
	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(rv_mcast_leave(m), 0);
	rv_ah_unref(ah);
	rv_qp_unref(qp);
	rv_qp_unref(reset);
	rv_qp_unref(rc);
	side_close(&s);
}

/* Whether soft0 can bind a group's socket here (docs/ud.md, "Multicast"). */
static bool group_port_free(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(4791)};
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM, 0), rc;

	if (fd < 0)
		return true;
	inet_pton(AF_INET, group, &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return rc == 0 || errno != EADDRINUSE;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcast_join__two_processes),
		cmocka_unit_test(test_mcast_join__arguments),
	};
	struct timespec ts;
	uint32_t r;

	clock_gettime(CLOCK_REALTIME, &ts);
	r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)ts.tv_nsec;
	snprintf(group, sizeof(group), "239.%u.%u.%u", 100 + r % 100, (r >> 8) & 0xff, 1 + (r >> 16) % 254);
	if (!group_port_free()) {
		printf("skipped: UDP port 4791 is held without SO_REUSEADDR (a kernel RoCE device?): soft0 cannot "
		       "bind a multicast group here\n");
		return 77;
	}
	return cmocka_run_group_tests_name("mcast-join", tests, NULL, NULL);
}
