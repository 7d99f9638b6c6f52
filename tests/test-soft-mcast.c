/*
 * Multicast on soft0 (rv_qp_attach_mcast / rv_qp_detach_mcast): groups are IP
 * multicast groups on the context's interface (docs/ud.md, "Multicast").
 *
 * Proves: two receivers in two processes each get every datagram sent to the
 * group, once and in full; a QP attached then detached gets nothing; a
 * datagram with a wrong Q_Key is dropped and counted; two QPs of one context
 * each get a copy; destroying an attached QP leaves the group; the argument
 * rules (UD only, a multicast GID of the context's family, detach of what is
 * not attached); the device reports its multicast limits; and hostile bytes
 * sent to the group (garbage, bad ICRC, a unicast QP number, an unattached
 * Q_Key) are dropped and counted while the group keeps working; under a
 * shared secret a group datagram carries the MAC trailer, which a member
 * with the secret accepts and one without drops.
 *
 * Each run picks its own group (239.x.y.z from its pid and the clock), so
 * that runs in parallel on one host do not hear each other. The drop
 * counters are soft0's (soft_ud_counters, linked from the internal library).
 * No wall-clock thresholds: waits are hang guards only.
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

#include "drivers/soft/soft.h"
#include "drivers/soft/wire/roce.h"
#include "test-clock.h"

#define QKEY 0x0badcafeu
#define BUF 16384
#define GUARD 256
#define WAIT_MS 10000
#define N_MSGS 20
#define MSG_LEN 64

static uint8_t group[16]; /* ::ffff:239.x.y.z, this run's */

/* Receive completions polled while waiting for another (two QPs' copies
 * of one datagram complete in either order), by side; emptied by each case
 * (pick_group), since a side's address may be another case's. */
static struct {
	const void *s;
	rv_wc wc;
} stash[16];

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;   /* receives (and the sends of QPs from ud_qp) */
	rv_cq *txcq; /* the sends of QPs from tx_qp: send_msg polls it alone */
	rv_mr *mr;
	uint8_t *mem;
	uint8_t *buf;
};

static void pick_group(void)
{
	struct timespec ts;
	uint32_t r;

	memset(stash, 0, sizeof(stash));
	clock_gettime(CLOCK_REALTIME, &ts);
	r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)ts.tv_nsec;
	memset(group, 0, sizeof(group));
	group[10] = group[11] = 0xff;
	group[12] = 239;
	group[13] = (uint8_t)(100 + r % 100); /* 239.100-199.x.y: organisation-local scope */
	group[14] = (uint8_t)(r >> 8);
	group[15] = (uint8_t)(1 + (r >> 16) % 254);
}

/* 0 or an errno; no cmocka in children. */
static int side_open_secret(struct side *s, const char *secret)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = "127.0.0.1"};
	rv_device *dev;
	int rc;

	if (secret) {
		ca.mask |= RV_CONTEXT_ATTR_AUTH_SECRET;
		ca.auth_secret = secret;
		ca.auth_secret_len = strlen(secret);
	}
	memset(s, 0, sizeof(*s));
	if ((rc = rv_device_find("soft0", &dev)) < 0)
		return rc;
	rc = rv_context_new(dev, &ca, &s->ctx);
	rv_device_unref(dev);
	if (rc < 0 || (rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0 || (rc = rv_cq_new(s->ctx, NULL, &s->cq)) < 0 ||
	    (rc = rv_cq_new(s->ctx, NULL, &s->txcq)) < 0)
		return rc;
	s->mem = malloc(BUF + 2 * GUARD);
	if (!s->mem)
		return -ENOMEM;
	memset(s->mem, 0x5a, BUF + 2 * GUARD);
	s->buf = s->mem + GUARD;
	return rv_mr_reg(s->pd, s->buf, BUF, RV_ACCESS_LOCAL_WRITE, &s->mr);
}

static bool side_close(struct side *s)
{
	bool guards = true;

	for (int i = 0; i < GUARD; i++)
		guards = guards && s->mem[i] == 0x5a && s->mem[GUARD + BUF + i] == 0x5a;
	rv_mr_unref(s->mr);
	rv_cq_unref(s->txcq);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	rv_context_close(s->ctx);
	rv_context_unref(s->ctx);
	free(s->mem);
	return guards;
}

static rv_qp *ud_qp_on(struct side *s, uint32_t qkey, rv_cq *cq)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_CAP,
			      .qp_type = RV_QPT_UD, .send_cq = cq,
			      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1}};
	rv_qp *qp = NULL;

	if (rv_qp_new(s->pd, &qa, &qp) < 0 ||
	    rv_qp_to_init(qp, &(rv_qp_attr){.mask = RV_QP_QKEY, .qkey = qkey}) < 0 ||
	    rv_qp_to_rtr(qp, NULL) < 0 || rv_qp_to_rts(qp, NULL) < 0)
		return rv_qp_unref(qp);
	return qp;
}

/* A QP that receives on s->cq. */
static rv_qp *ud_qp(struct side *s, uint32_t qkey)
{
	return ud_qp_on(s, qkey, s->cq);
}

/* A QP that sends (send_msg) with its completions on s->txcq, apart from
 * the receives that the test waits for on s->cq. */
static rv_qp *tx_qp(struct side *s, uint32_t qkey)
{
	return ud_qp_on(s, qkey, s->txcq);
}

/* Receive WRs for n slots of 256 bytes from slot first; wr_id = slot. */
static int post_recvs(struct side *s, rv_qp *qp, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		rv_sge g = {.addr = (uintptr_t)(s->buf + 256 * i), .length = 256, .lkey = rv_mr_lkey(s->mr)};
		int rc = rv_qp_recv(qp, &g, (uint64_t)i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static rv_ah *group_ah(struct side *s)
{
	rv_ah_attr a;
	rv_ah *ah = NULL;

	memset(&a, 0, sizeof(a));
	memcpy(a.dgid, group, 16);
	a.is_global = 1;
	a.dlid = 0xc001; /* an MLID: meaningless on soft0's Ethernet-like port */
	a.hop_limit = 1;
	rv_ah_new(s->pd, &a, &ah);
	return ah;
}

/* Send message i (its number in the first byte, the rest a pattern) to the group. */
static int send_msg(struct side *s, rv_qp *qp, rv_ah *ah, uint32_t qkey, int i)
{
	uint8_t *p = s->buf + BUF - MSG_LEN;
	rv_sge g = {.addr = (uintptr_t)p, .length = MSG_LEN, .lkey = rv_mr_lkey(s->mr)};
	rv_send_wr wr = {.wr_id = 1000 + (uint64_t)i, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_SIGNALED, .ah = ah, .remote_qpn = RV_MCAST_QPN,
			 .remote_qkey = qkey};
	rv_wc wc;
	int64_t end = now_ms() + WAIT_MS;
	int rc;

	p[0] = (uint8_t)i;
	for (int k = 1; k < MSG_LEN; k++)
		p[k] = (uint8_t)(i * 7 + k);
	rc = rv_qp_post_send(qp, &wr, 1, NULL);
	if (rc < 0)
		return rc;
	/* Wait for its completion: the buffer is reused by the next. */
	for (;;) {
		int n = rv_cq_poll(s->txcq, &wc, 1);
		if (n == 1 && wc.wr_id == wr.wr_id)
			return wc.status == RV_WC_SUCCESS ? 0 : -EIO;
		if (n == 0 && now_ms() > end)
			return -ETIMEDOUT;
		if (n == 0)
			usleep(100);
	}
}

static uint64_t counter(struct side *s, enum soft_ud_counter c)
{
	uint64_t n[SOFT_UD_NCOUNTERS];
	if (soft_ud_counters(s->ctx, n) < 0)
		return UINT64_MAX;
	return n[c];
}

/*
 * A receiver process: QP a attached; with a detached QP b too (attached,
 * then detached). Says "ready" on ready_fd, then expects exactly N_MSGS
 * datagrams on a, each once and intact, none on b, and the datagram with the
 * wrong Q_Key counted. Exit status 0, or the number of the failed check.
 */
static int receiver(int ready_fd, int go_fd, bool with_detached)
{
	struct side s;
	rv_qp *a, *b = NULL;
	bool seen[N_MSGS] = {false};
	int got = 0, rc = 0;
	int64_t end;
	char c = 'r';
	rv_wc wc;

	if (side_open_secret(&s, NULL) < 0 || !(a = ud_qp(&s, QKEY)))
		return 10;
	if (post_recvs(&s, a, 0, N_MSGS + 4) < 0 || rv_qp_attach_mcast(a, group, 0xc001) < 0)
		return 11;
	if (with_detached) {
		if (!(b = ud_qp(&s, QKEY)) || post_recvs(&s, b, 32, 8) < 0)
			return 12;
		if (rv_qp_attach_mcast(b, group, 0xc001) < 0 || rv_qp_detach_mcast(b, group, 0xc001) < 0)
			return 13;
	}
	if (write(ready_fd, &c, 1) != 1)
		return 14;
	end = now_ms() + WAIT_MS;
	while (got < N_MSGS && now_ms() < end) {
		int n = rv_cq_poll(s.cq, &wc, 1);
		if (n == 0) {
			usleep(100);
			continue;
		}
		if (n != 1 || wc.status != RV_WC_SUCCESS || wc.opcode != RV_WC_RECV)
			return 20;
		if (wc.qp_num != rv_qp_num(a))
			return 21; /* the detached QP received */
		if (wc.byte_len != RV_UD_GRH_LEN + MSG_LEN || wc.wr_id >= N_MSGS + 4)
			return 22;
		{
			const uint8_t *p = s.buf + 256 * wc.wr_id + RV_UD_GRH_LEN;
			if (p[0] >= N_MSGS || seen[p[0]])
				return 23; /* out of range, or a duplicate */
			for (int k = 1; k < MSG_LEN; k++)
				if (p[k] != (uint8_t)(p[0] * 7 + k))
					return 24;
			/* The GRH area: the destination is the group (IPv4 header at 20..39). */
			if (memcmp(s.buf + 256 * wc.wr_id + 20 + 16, group + 12, 4) != 0)
				return 25;
			seen[p[0]] = true;
		}
		got++;
	}
	if (got != N_MSGS)
		return 26;
	if (counter(&s, SOFT_UD_DROP_QKEY) < 1)
		return 27; /* the wrong Q_Key's datagram (sent first) was not seen */
	/* Nothing more arrives: the parent tells us it sent everything. */
	if (read(go_fd, &c, 1) != 1)
		return 28;
	usleep(200 * 1000);
	if (rv_cq_poll(s.cq, &wc, 1) != 0)
		rc = 29;
	rv_qp_unref(b);
	rv_qp_unref(a);
	return side_close(&s) ? rc : 30;
}

static void test_soft_mcast__two_processes_get_every_datagram(void **state)
{
	int ready[2], go[2][2], status;
	pid_t pid[2];
	struct side s;
	rv_qp *qp;
	rv_ah *ah;
	char c;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pipe(go[i]), 0);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0)
			_exit(receiver(ready[1], go[i][0], i == 1));
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(side_open_secret(&s, NULL), 0);
	qp = tx_qp(&s, QKEY);
	assert_non_null(qp);
	ah = group_ah(&s);
	assert_non_null(ah);
	/* First a wrong Q_Key (dropped by both), then the messages. */
	assert_int_equal(send_msg(&s, qp, ah, QKEY + 1, 0), 0);
	for (int i = 0; i < N_MSGS; i++)
		assert_int_equal(send_msg(&s, qp, ah, QKEY, i), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(write(go[i][1], "g", 1), 1);
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	rv_ah_unref(ah);
	rv_qp_unref(qp);
	assert_true(side_close(&s));
}

/* Wait until s->cq has a receive with wr_id, or fail; others are kept. */
static rv_wc wait_recv(struct side *s, uint64_t wr_id)
{
	int64_t end = now_ms() + WAIT_MS;
	rv_wc wc;

	for (size_t i = 0; i < sizeof(stash) / sizeof(stash[0]); i++)
		if (stash[i].s == s && stash[i].wc.wr_id == wr_id) {
			stash[i].s = NULL;
			return stash[i].wc;
		}
	for (;;) {
		int n = rv_cq_poll(s->cq, &wc, 1);
		if (n == 1 && wc.wr_id == wr_id)
			return wc;
		assert_true(n >= 0);
		if (n == 1) {
			size_t i = 0;
			while (i < sizeof(stash) / sizeof(stash[0]) && stash[i].s)
				i++;
			assert_true(i < sizeof(stash) / sizeof(stash[0]));
			stash[i].s = s;
			stash[i].wc = wc;
			continue;
		}
		assert_true(now_ms() < end);
		usleep(100);
	}
}

/* Nothing more completed on s->cq, polled or kept. */
static void assert_no_recv(struct side *s)
{
	rv_wc wc;

	for (size_t i = 0; i < sizeof(stash) / sizeof(stash[0]); i++)
		assert_true(stash[i].s != s);
	assert_int_equal(rv_cq_poll(s->cq, &wc, 1), 0);
}

static void test_soft_mcast__every_attached_qp_of_a_context_gets_a_copy(void **state)
{
	struct side s;
	rv_qp *a, *b, *tx;
	rv_ah *ah;
	rv_wc wc;

	(void)state;
	pick_group();
	assert_int_equal(side_open_secret(&s, NULL), 0);
	a = ud_qp(&s, QKEY);
	b = ud_qp(&s, QKEY);
	tx = tx_qp(&s, QKEY);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(tx);
	assert_int_equal(post_recvs(&s, a, 0, 2), 0);
	assert_int_equal(post_recvs(&s, b, 2, 2), 0);
	assert_int_equal(rv_qp_attach_mcast(a, group, 0), 0);
	assert_int_equal(rv_qp_attach_mcast(a, group, 0), 0); /* again: no error, one copy */
	assert_int_equal(rv_qp_attach_mcast(b, group, 0), 0);
	ah = group_ah(&s);
	assert_non_null(ah);
	assert_int_equal(send_msg(&s, tx, ah, QKEY, 5), 0);
	wc = wait_recv(&s, 0);
	assert_int_equal(wc.qp_num, rv_qp_num(a));
	assert_int_equal(wc.src_qp, rv_qp_num(tx));
	assert_int_equal(s.buf[RV_UD_GRH_LEN], 5);
	wc = wait_recv(&s, 2);
	assert_int_equal(wc.qp_num, rv_qp_num(b));
	/* b destroyed while attached: the group goes on serving a alone. */
	rv_qp_close(b);
	rv_qp_unref(b);
	assert_int_equal(send_msg(&s, tx, ah, QKEY, 6), 0);
	wc = wait_recv(&s, 1);
	assert_int_equal(wc.qp_num, rv_qp_num(a));
	assert_int_equal(s.buf[256 + RV_UD_GRH_LEN], 6);
	/* a detached: the group is left, a receives nothing more. */
	assert_int_equal(rv_qp_detach_mcast(a, group, 0), 0);
	assert_int_equal(rv_qp_detach_mcast(a, group, 0), -EINVAL);
	assert_int_equal(post_recvs(&s, a, 0, 1), 0);
	assert_int_equal(send_msg(&s, tx, ah, QKEY, 7), 0);
	usleep(200 * 1000);
	assert_no_recv(&s);
	rv_ah_unref(ah);
	rv_qp_unref(tx);
	rv_qp_unref(a);
	assert_true(side_close(&s));
}

static void test_soft_mcast__argument_rules(void **state)
{
	static const uint8_t unicast[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
	static const uint8_t v6group[16] = {0xff, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = RV_QPT_RC};
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	struct side s;
	rv_qp *ud, *rc;

	(void)state;
	pick_group();
	assert_int_equal(side_open_secret(&s, NULL), 0);
	assert_int_equal(rv_context_query_device(s.ctx, &da), 0);
	assert_int_equal(da.max_mcast_grp, SOFT_MAX_MCAST_GRP);
	assert_int_equal(da.max_mcast_qp_attach, SOFT_MAX_MCAST_QP_ATTACH);
	assert_int_equal(da.max_total_mcast_qp_attach, SOFT_MAX_MCAST_GRP * SOFT_MAX_MCAST_QP_ATTACH);
	ud = ud_qp(&s, QKEY);
	assert_non_null(ud);
	qa.send_cq = s.cq;
	assert_int_equal(rv_qp_new(s.pd, &qa, &rc), 0);
	assert_int_equal(rv_qp_attach_mcast(NULL, group, 0), -EINVAL);
	assert_int_equal(rv_qp_attach_mcast(ud, NULL, 0), -EINVAL);
	assert_int_equal(rv_qp_attach_mcast(rc, group, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "UD"));
	assert_int_equal(rv_qp_attach_mcast(ud, unicast, 0), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "multicast"));
	assert_int_equal(rv_qp_attach_mcast(ud, v6group, 0), -EINVAL); /* an IPv6 group on IPv4 */
	assert_int_equal(rv_qp_detach_mcast(ud, group, 0), -EINVAL);    /* not attached */
	assert_int_equal(rv_qp_attach_mcast(ud, group, 0), 0);
	assert_int_equal(rv_qp_close(ud), 0);
	assert_int_equal(rv_qp_detach_mcast(ud, group, 0), -RV_ECLOSED);
	rv_qp_unref(ud);
	rv_qp_unref(rc);
	assert_true(side_close(&s));
}

/* A framed datagram from a raw socket (bound to 127.0.0.1:fport) to the group. */
static size_t frame(uint8_t *pkt, uint16_t fport, uint32_t dest_qp, uint32_t qkey, const void *payload,
		    uint32_t len)
{
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .pkey = RV_ROCE_DEFAULT_PKEY, .dest_qp = dest_qp,
			       .qkey = qkey, .src_qp = 0x4242};
	struct rv_roce_addr a = {.family = 4, .sport = fport, .dport = 4791, .ip_id = 0, .ip_frag = 0x4000};
	size_t hl;

	a.src[0] = 127;
	a.src[3] = 1;
	memcpy(a.dst, group + 12, 4);
	hl = rv_roce_ud_encode_hdr(&h, len, pkt);
	memcpy(pkt + hl, payload, len);
	return rv_roce_ud_finish(&a, pkt, hl + len);
}

static void raw_send(int fd, const void *p, size_t n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(4791)};

	memcpy(&to.sin_addr, group + 12, 4);
	assert_int_equal(sendto(fd, p, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	usleep(200); /* loopback: let the progress thread keep up */
}

static void test_soft_mcast__hostile_datagrams_to_the_group(void **state)
{
	struct side s;
	rv_qp *a, *tx;
	rv_ah *ah;
	struct sockaddr_in me = {.sin_family = AF_INET};
	socklen_t ml = sizeof(me);
	struct in_addr ifa;
	uint8_t pkt[512];
	uint64_t bad, icrc, qp, qkey, rx;
	size_t n;
	int fd;
	rv_wc wc;

	(void)state;
	pick_group();
	assert_int_equal(side_open_secret(&s, NULL), 0);
	a = ud_qp(&s, QKEY);
	tx = tx_qp(&s, QKEY);
	assert_non_null(a);
	assert_non_null(tx);
	memset(s.buf, 0xcc, 4096);
	assert_int_equal(post_recvs(&s, a, 0, 1), 0);
	assert_int_equal(rv_qp_attach_mcast(a, group, 0), 0);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &ml), 0);
	ifa.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa)), 0);
	bad = counter(&s, SOFT_UD_DROP_BAD);
	icrc = counter(&s, SOFT_UD_DROP_ICRC);
	qp = counter(&s, SOFT_UD_DROP_QP);
	qkey = counter(&s, SOFT_UD_DROP_QKEY);
	rx = counter(&s, SOFT_UD_RX);

	/* Empty, truncated, garbage, a flipped bit, a unicast QP number, a wrong Q_Key. */
	n = frame(pkt, ntohs(me.sin_port), RV_MCAST_QPN, QKEY, "stranger", 8);
	raw_send(fd, pkt, 0);
	for (size_t k = 1; k < n; k += 7)
		raw_send(fd, pkt, k);
	srand(239);
	for (int i = 0; i < 50; i++) {
		uint8_t junk[100];
		for (size_t k = 0; k < sizeof(junk); k++)
			junk[k] = (uint8_t)rand();
		raw_send(fd, junk, (size_t)rand() % sizeof(junk));
	}
	pkt[30] ^= 0x10;
	raw_send(fd, pkt, n);
	n = frame(pkt, ntohs(me.sin_port), rv_qp_num(a), QKEY, "unicast", 7);
	raw_send(fd, pkt, n);
	n = frame(pkt, ntohs(me.sin_port), RV_MCAST_QPN, QKEY ^ 1, "qkey", 4);
	raw_send(fd, pkt, n);
	/* And a good one from the stranger: delivered. */
	n = frame(pkt, ntohs(me.sin_port), RV_MCAST_QPN, QKEY, "good group datagram", 19);
	raw_send(fd, pkt, n);
	wc = wait_recv(&s, 0);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.src_qp, 0x4242);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 19);
	assert_memory_equal(s.buf + RV_UD_GRH_LEN, "good group datagram", 19);
	for (int i = RV_UD_GRH_LEN + 19; i < 4096; i++)
		assert_int_equal(s.buf[i], 0xcc);
	assert_true(counter(&s, SOFT_UD_DROP_BAD) > bad);
	assert_true(counter(&s, SOFT_UD_DROP_ICRC) > icrc);
	assert_int_equal(counter(&s, SOFT_UD_DROP_QP), qp + 1);
	assert_int_equal(counter(&s, SOFT_UD_DROP_QKEY), qkey + 1);
	assert_int_equal(counter(&s, SOFT_UD_RX), rx + 1);
	close(fd);
	/* The group still works from a QP. */
	ah = group_ah(&s);
	assert_non_null(ah);
	assert_int_equal(post_recvs(&s, a, 1, 1), 0);
	assert_int_equal(send_msg(&s, tx, ah, QKEY, 9), 0);
	assert_int_equal(wait_recv(&s, 1).status, RV_WC_SUCCESS);
	rv_ah_unref(ah);
	rv_qp_unref(tx);
	rv_qp_unref(a);
	assert_true(side_close(&s));
}

static void test_soft_mcast__secret_group_carries_the_trailer(void **state)
{
	struct side with, without, sender;
	rv_qp *a, *b, *tx;
	rv_ah *ah;
	uint64_t auth;
	int64_t end;
	rv_wc wc;

	(void)state;
	pick_group();
	assert_int_equal(side_open_secret(&with, "group secret"), 0);
	assert_int_equal(side_open_secret(&without, NULL), 0);
	assert_int_equal(side_open_secret(&sender, "group secret"), 0);
	a = ud_qp(&with, QKEY);
	b = ud_qp(&without, QKEY);
	tx = tx_qp(&sender, QKEY);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(tx);
	assert_int_equal(post_recvs(&with, a, 0, 1), 0);
	assert_int_equal(post_recvs(&without, b, 0, 1), 0);
	assert_int_equal(rv_qp_attach_mcast(a, group, 0), 0);
	assert_int_equal(rv_qp_attach_mcast(b, group, 0), 0);
	auth = counter(&without, SOFT_UD_DROP_AUTH);
	ah = group_ah(&sender);
	assert_non_null(ah);
	assert_int_equal(send_msg(&sender, tx, ah, QKEY, 3), 0);
	wc = wait_recv(&with, 0);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + MSG_LEN); /* the trailer is not payload */
	end = now_ms() + WAIT_MS;
	while (counter(&without, SOFT_UD_DROP_AUTH) == auth && now_ms() < end)
		usleep(200);
	assert_int_equal(counter(&without, SOFT_UD_DROP_AUTH), auth + 1);
	assert_no_recv(&without);
	rv_ah_unref(ah);
	rv_qp_unref(tx);
	rv_qp_unref(b);
	rv_qp_unref(a);
	assert_true(side_close(&sender));
	assert_true(side_close(&without));
	assert_true(side_close(&with));
}

static int setup(void **state)
{
	(void)state;
	pick_group();
	return 0;
}

/* Whether soft0 can bind a group's socket here: not where a kernel RoCE
 * device holds UDP 4791 for every address (docs/ud.md, "Multicast"). */
static bool group_port_free(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(4791)};
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM, 0), rc;

	if (fd < 0)
		return true; /* let the cases say what fails */
	memcpy(&a.sin_addr, group + 12, 4);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return rc == 0 || errno != EADDRINUSE;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First, before any context exists in this process: it forks. */
		cmocka_unit_test_setup(test_soft_mcast__two_processes_get_every_datagram, setup),
		cmocka_unit_test(test_soft_mcast__every_attached_qp_of_a_context_gets_a_copy),
		cmocka_unit_test(test_soft_mcast__argument_rules),
		cmocka_unit_test(test_soft_mcast__hostile_datagrams_to_the_group),
		cmocka_unit_test(test_soft_mcast__secret_group_carries_the_trailer),
	};

	pick_group();
	if (!group_port_free()) {
		printf("skipped: UDP port 4791 is held without SO_REUSEADDR (a kernel RoCE device?): soft0 "
		       "cannot join groups on this host\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
