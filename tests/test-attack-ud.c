/*
 * Attacks on soft0's UD under a shared secret (issue 16, finding 2): a
 * context with rv_context_attr.auth_secret delivers no RoCEv2 datagram from
 * anyone who lacks the secret.
 *
 * The attacker is a plain UDP socket on loopback that frames correct RoCEv2
 * datagrams (valid ICRC) itself: every QP number around the target's with
 * the default Q_Key 0x11111111 and others, forged MAC trailers, an
 * authenticated datagram it captured and resends, an authenticated one sent
 * twice (replay), a peer with another secret, a peer with none. Each must be
 * dropped and counted, the receive buffer must stay untouched, the process
 * alive, and authenticated UD between the legitimate contexts must keep
 * working. No wall-clock thresholds: waits are hang guards only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "drivers/soft/wire/roce.h"
#include "drivers/soft/soft.h"
#include "test-clock.h"

#define DEFAULT_QKEY 0x11111111u /* rv_qp_to_init()'s default */
#define BUF 8192
#define GUARD 256
#define WAIT_MS 10000
#define NRECV 16

static const char secret[] = "attack-ud: the secret of the legitimate contexts";
static const char other_secret[] = "attack-ud: somebody else's secret";

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_mr *mr;
	uint8_t *mem;
	uint8_t *buf;
};

static void side_open(struct side *s, const char *key)
{
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR, .listen_addr = "127.0.0.1"};
	rv_device *dev;

	if (key) {
		ca.mask |= RV_CONTEXT_ATTR_AUTH_SECRET;
		ca.auth_secret = key;
		ca.auth_secret_len = (uint32_t)strlen(key);
	}
	memset(s, 0, sizeof(*s));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &ca, &s->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	s->mem = malloc(BUF + 2 * GUARD);
	assert_non_null(s->mem);
	memset(s->mem, 0x5a, BUF + 2 * GUARD);
	s->buf = s->mem + GUARD;
	assert_int_equal(rv_mr_reg(s->pd, s->buf, BUF, RV_ACCESS_LOCAL_WRITE, &s->mr), 0);
}

static void side_close(struct side *s)
{
	for (int i = 0; i < GUARD; i++) {
		assert_int_equal(s->mem[i], 0x5a);
		assert_int_equal(s->mem[GUARD + BUF + i], 0x5a);
	}
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
	free(s->mem);
}

/* A UD QP in RTS with the default Q_Key (rv_qp_to_init without attributes). */
static rv_qp *ud_qp(struct side *s)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_CAP,
			      .qp_type = RV_QPT_UD, .send_cq = s->cq,
			      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1}};
	rv_qp *qp;

	assert_int_equal(rv_qp_new(s->pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);
	assert_int_equal(rv_qp_to_rtr(qp, NULL), 0);
	assert_int_equal(rv_qp_to_rts(qp, NULL), 0);
	return qp;
}

static rv_ah *ah_to_port(struct side *s, uint16_t port)
{
	rv_ah_attr a;
	rv_ah *ah;

	memset(&a, 0, sizeof(a));
	a.dgid[10] = a.dgid[11] = 0xff;
	a.dgid[12] = 127;
	a.dgid[15] = 1;
	a.is_global = 1;
	a.dlid = port;
	assert_int_equal(rv_ah_new(s->pd, &a, &ah), 0);
	return ah;
}

static void post_recv(struct side *s, rv_qp *qp, size_t off, uint32_t len, uint64_t wr_id)
{
	rv_sge g = {.addr = (uintptr_t)(s->buf + off), .length = len, .lkey = rv_mr_lkey(s->mr)};
	assert_int_equal(rv_qp_recv(qp, &g, wr_id), 0);
}

static void send_to(struct side *s, rv_qp *qp, rv_ah *ah, uint32_t qpn, const char *msg, uint64_t wr_id)
{
	size_t len = strlen(msg);
	memcpy(s->buf, msg, len);
	rv_sge g = {.addr = (uintptr_t)s->buf, .length = (uint32_t)len, .lkey = rv_mr_lkey(s->mr)};
	rv_send_wr wr = {.wr_id = wr_id, .sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND,
			 .send_flags = RV_SEND_SIGNALED, .ah = ah, .remote_qpn = qpn,
			 .remote_qkey = DEFAULT_QKEY};
	assert_int_equal(rv_qp_post_send(qp, &wr, 1, NULL), 0);
}

/* The next receive completion on cq (send completions are passed over). */
static rv_wc wait_recv(rv_cq *cq)
{
	int64_t end = now_ms() + WAIT_MS;
	rv_wc wc;

	while (now_ms() < end) {
		int n = rv_cq_poll(cq, &wc, 1);
		assert_true(n >= 0);
		if (n == 0) {
			usleep(100);
			continue;
		}
		if (wc.opcode & RV_WC_RECV)
			return wc;
		assert_int_equal(wc.status, RV_WC_SUCCESS);
	}
	fail_msg("no receive completion within %d ms", WAIT_MS);
	return wc;
}

/* No receive completion is waiting on cq. */
static void assert_no_recv(rv_cq *cq)
{
	rv_wc wc;
	int n;

	while ((n = rv_cq_poll(cq, &wc, 1)) == 1)
		assert_false(wc.opcode & RV_WC_RECV);
	assert_int_equal(n, 0);
}

static uint64_t counter(struct side *s, enum soft_ud_counter c)
{
	uint64_t n[SOFT_UD_NCOUNTERS];
	assert_int_equal(soft_ud_counters(s->ctx, n), 0);
	return n[c];
}

static uint64_t rx_total(struct side *s)
{
	uint64_t n[SOFT_UD_NCOUNTERS], t = 0;

	assert_int_equal(soft_ud_counters(s->ctx, n), 0);
	for (int c = SOFT_UD_RX; c < SOFT_UD_NCOUNTERS; c++)
		t += n[c];
	return t;
}

/* Wait until the context has read `want` datagrams more than base. */
static void wait_rx_total(struct side *s, uint64_t base, uint64_t want)
{
	int64_t end = now_ms() + WAIT_MS;
	while (rx_total(s) - base < want && now_ms() < end)
		usleep(200);
	assert_int_equal(rx_total(s) - base, want);
}

/* ---- the attacker ------------------------------------------------------------- */

struct attacker {
	int fd;
	uint16_t port;
	struct side *target;
	uint64_t sent, base;
};

static void attacker_open(struct attacker *at, struct side *target)
{
	struct sockaddr_in me = {.sin_family = AF_INET};
	socklen_t ml = sizeof(me);

	at->fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(at->fd >= 0);
	me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(at->fd, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(getsockname(at->fd, (struct sockaddr *)&me, &ml), 0);
	at->port = ntohs(me.sin_port);
	at->target = target;
	at->sent = 0;
	at->base = rx_total(target);
}

/* Send one datagram to port, never more than 32 ahead of what the target
 * has read, so that no socket buffer overflows and every datagram is seen. */
static void attacker_send(struct attacker *at, uint16_t port, const void *p, size_t n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	int64_t end = now_ms() + WAIT_MS;

	while (at->sent - (rx_total(at->target) - at->base) > 32 && now_ms() < end)
		usleep(100);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(sendto(at->fd, p, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	at->sent++;
}

static struct rv_roce_addr addr_of(uint16_t sport, uint16_t dport)
{
	struct rv_roce_addr a = {.family = 4, .sport = sport, .dport = dport, .ip_id = 0, .ip_frag = 0x4000};
	a.src[0] = a.dst[0] = 127;
	a.src[3] = a.dst[3] = 1;
	return a;
}

/* A correctly framed datagram (valid ICRC) from the attacker's port; with
 * mark, the DETH says "authenticated" and trailer (32 bytes) ends the payload. */
static size_t frame(uint8_t *pkt, uint16_t sport, uint16_t dport, uint32_t dest_qp, uint32_t qkey, bool mark,
		    const uint8_t *trailer, const void *payload, uint32_t len)
{
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .pkey = RV_ROCE_DEFAULT_PKEY, .dest_qp = dest_qp,
			       .qkey = qkey, .src_qp = 0x4242, .deth_rsvd = mark ? RV_ROCE_UD_AUTH_MARK : 0};
	struct rv_roce_addr a = addr_of(sport, dport);
	uint32_t tl = trailer ? RV_ROCE_UD_AUTH_LEN : 0;
	size_t hl = rv_roce_ud_encode_hdr(&h, len + tl, pkt);

	memcpy(pkt + hl, payload, len);
	if (trailer)
		memcpy(pkt + hl + len, trailer, tl);
	return rv_roce_ud_finish(&a, pkt, hl + len + tl);
}

/* A datagram sealed with key, as a holder of the secret would send it. */
static size_t sealed(uint8_t *pkt, const char *key, uint16_t sport, uint16_t dport, uint32_t dest_qp,
		     uint64_t epoch, uint64_t seq, const char *msg)
{
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .pkey = RV_ROCE_DEFAULT_PKEY, .dest_qp = dest_qp,
			       .qkey = DEFAULT_QKEY, .src_qp = 0x4343, .deth_rsvd = RV_ROCE_UD_AUTH_MARK};
	struct rv_roce_addr a = addr_of(sport, dport);
	uint32_t len = (uint32_t)strlen(msg);
	size_t hl = rv_roce_ud_encode_hdr(&h, len + RV_ROCE_UD_AUTH_LEN, pkt), n;

	memcpy(pkt + hl, msg, len);
	n = rv_roce_ud_auth_seal((const uint8_t *)key, strlen(key), &a, pkt, hl + len, epoch, seq);
	return rv_roce_ud_finish(&a, pkt, n);
}

/* ---- tests ------------------------------------------------------------------------ */

/* The spray of the report: every QP number near the target's, the default
 * Q_Key and others, plain and with forged trailers. Nothing is delivered,
 * everything is counted as failing authentication (before any QP or Q_Key
 * is looked at), and the legitimate peer's datagram still arrives. */
static void test_attack_ud__spray_without_the_secret_delivers_nothing(void **state)
{
	static const uint32_t qkeys[] = {DEFAULT_QKEY, 0, 0x80000000u, 0xffffffffu, 0x12345678u};
	struct side t, peer;
	struct attacker at;
	rv_qp *b, *a;
	rv_ah *ah;
	uint8_t pkt[8192], trailer[RV_ROCE_UD_AUTH_LEN];
	uint64_t auth0, rx0;
	uint32_t qpn;
	uint16_t port;
	rv_endpoint eb;
	rv_wc wc;

	(void)state;
	side_open(&t, secret);
	side_open(&peer, secret);
	b = ud_qp(&t);
	a = ud_qp(&peer);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	qpn = rv_qp_num(b);
	port = eb.lid;
	for (int i = 0; i < NRECV; i++)
		post_recv(&t, b, 4096 + 128 * (size_t)i, 128, 100 + (uint64_t)i);
	memset(t.buf + 4096, 0xcc, 4096);
	auth0 = counter(&t, SOFT_UD_DROP_AUTH);
	rx0 = counter(&t, SOFT_UD_RX);

	attacker_open(&at, &t);
	srand(16);
	for (uint32_t d = 0; d < 256; d++) {
		uint32_t q = (qpn - 128 + d) & 0xffffff;
		for (size_t k = 0; k < sizeof(qkeys) / sizeof(qkeys[0]); k++) {
			size_t n = frame(pkt, at.port, port, q, qkeys[k], false, NULL, "spray", 5);
			attacker_send(&at, port, pkt, n);
		}
		/* A forged trailer, marked and unmarked. */
		for (size_t i = 0; i < sizeof(trailer); i++)
			trailer[i] = (uint8_t)rand();
		attacker_send(&at, port, pkt, frame(pkt, at.port, port, q, DEFAULT_QKEY, true, trailer, "forged", 6));
		attacker_send(&at, port, pkt, frame(pkt, at.port, port, q, DEFAULT_QKEY, false, trailer, "forged", 6));
	}
	/* The exact QP with an all-zero trailer and the largest message. */
	{
		static uint8_t big[4096];
		memset(trailer, 0, sizeof(trailer));
		attacker_send(&at, port, pkt, frame(pkt, at.port, port, qpn, DEFAULT_QKEY, true, trailer, big, 4096));
	}
	wait_rx_total(&t, at.base, at.sent);
	assert_int_equal(counter(&t, SOFT_UD_DROP_AUTH), auth0 + at.sent);
	assert_int_equal(counter(&t, SOFT_UD_RX), rx0);
	assert_no_recv(t.cq);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(t.buf[4096 + i], 0xcc);

	/* The legitimate peer, with the secret and the default Q_Key: delivered
	 * into the first receive. */
	ah = ah_to_port(&peer, port);
	send_to(&peer, a, ah, qpn, "legit", 1);
	wc = wait_recv(t.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 5);
	assert_int_equal(wc.src_qp, rv_qp_num(a));
	assert_memory_equal(t.buf + 4096 + RV_UD_GRH_LEN, "legit", 5);
	assert_int_equal(t.buf[4096 + RV_UD_GRH_LEN + 5], 0xcc); /* the trailer is not delivered */
	assert_int_equal(counter(&t, SOFT_UD_RX), rx0 + 1);
	close(at.fd);
	rv_ah_unref(ah);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&peer);
	side_close(&t);
}

/* The attacker captures an authenticated datagram (the legitimate peer sends
 * it to the attacker's port: as good as sniffing it) and resends it, as it is
 * and redirected to the target's QP: the MAC binds the addresses, ports and
 * QP numbers, so both are dropped. */
static void test_attack_ud__captured_datagram_resent_is_dropped(void **state)
{
	struct side t, peer;
	struct attacker at;
	rv_qp *b, *a;
	rv_ah *to_attacker;
	uint8_t pkt[8192];
	uint64_t auth0, icrc0, rx0;
	rv_endpoint eb;
	ssize_t n;

	(void)state;
	side_open(&t, secret);
	side_open(&peer, secret);
	b = ud_qp(&t);
	a = ud_qp(&peer);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	post_recv(&t, b, 4096, 128, 100);
	attacker_open(&at, &t);
	to_attacker = ah_to_port(&peer, at.port);
	send_to(&peer, a, to_attacker, rv_qp_num(b), "captured", 1);
	n = recv(at.fd, pkt, sizeof(pkt), 0); /* blocking: the datagram is on its way */
	assert_true(n > RV_ROCE_UD_AUTH_LEN);
	assert_int_equal(pkt[16], RV_ROCE_UD_AUTH_MARK);
	auth0 = counter(&t, SOFT_UD_DROP_AUTH);
	icrc0 = counter(&t, SOFT_UD_DROP_ICRC);
	rx0 = counter(&t, SOFT_UD_RX);
	/* As captured (addressed to the attacker's port, from the peer's): the
	 * ICRC, which covers the ports, already fails. */
	attacker_send(&at, eb.lid, pkt, (size_t)n);
	/* Re-framed for the target's port with a valid ICRC, trailer kept: the
	 * MAC fails. */
	{
		struct rv_roce_addr ra = addr_of(at.port, eb.lid);
		size_t body = (size_t)n - RV_ROCE_ICRC_LEN;
		uint32_t ic = rv_roce_icrc(&ra, pkt, body);
		for (int i = 0; i < 4; i++)
			pkt[body + (size_t)i] = (uint8_t)(ic >> (8 * i));
		attacker_send(&at, eb.lid, pkt, (size_t)n);
	}
	wait_rx_total(&t, at.base, at.sent);
	assert_int_equal(counter(&t, SOFT_UD_DROP_ICRC), icrc0 + 1);
	assert_int_equal(counter(&t, SOFT_UD_DROP_AUTH), auth0 + 1);
	assert_int_equal(counter(&t, SOFT_UD_RX), rx0);
	assert_no_recv(t.cq);
	close(at.fd);
	rv_ah_unref(to_attacker);
	rv_qp_unref(a);
	rv_qp_unref(b);
	side_close(&peer);
	side_close(&t);
}

/* Replay: a datagram with a valid MAC (sealed here with the secret, from one
 * socket) is delivered once; the same bytes again, and a sequence number
 * older than the window, are dropped as replays; a newer one is delivered. */
static void test_attack_ud__replayed_datagram_is_dropped(void **state)
{
	struct side t;
	struct attacker at;
	rv_qp *b;
	uint8_t pkt[8192], old[8192];
	uint64_t rep0, rx0;
	rv_endpoint eb;
	size_t n, no;
	rv_wc wc;

	(void)state;
	side_open(&t, secret);
	b = ud_qp(&t);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	for (int i = 0; i < 4; i++)
		post_recv(&t, b, 4096 + 128 * (size_t)i, 128, 100 + (uint64_t)i);
	attacker_open(&at, &t);
	rep0 = counter(&t, SOFT_UD_DROP_REPLAY);
	rx0 = counter(&t, SOFT_UD_RX);
	no = sealed(old, secret, at.port, eb.lid, rv_qp_num(b), 77, 1000, "old");
	n = sealed(pkt, secret, at.port, eb.lid, rv_qp_num(b), 77, 1000 + RV_ROCE_REPLAY_WINDOW, "first");
	attacker_send(&at, eb.lid, pkt, n);
	wc = wait_recv(t.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 100);
	assert_memory_equal(t.buf + 4096 + RV_UD_GRH_LEN, "first", 5);
	attacker_send(&at, eb.lid, pkt, n);  /* the same again */
	attacker_send(&at, eb.lid, old, no); /* older than the window */
	wait_rx_total(&t, at.base, at.sent);
	assert_int_equal(counter(&t, SOFT_UD_DROP_REPLAY), rep0 + 2);
	assert_int_equal(counter(&t, SOFT_UD_RX), rx0 + 1);
	assert_no_recv(t.cq);
	/* Within the window and not seen: delivered (UD may reorder). */
	n = sealed(pkt, secret, at.port, eb.lid, rv_qp_num(b), 77, 1000 + RV_ROCE_REPLAY_WINDOW - 3, "late");
	attacker_send(&at, eb.lid, pkt, n);
	wc = wait_recv(t.cq);
	assert_int_equal(wc.wr_id, 101);
	assert_memory_equal(t.buf + 4096 + 128 + RV_UD_GRH_LEN, "late", 4);
	close(at.fd);
	rv_qp_unref(b);
	side_close(&t);
}

/* Peers that do not share the secret: one with another secret, one with
 * none (its datagrams carry no trailer). Both ways nothing is delivered;
 * a context without a secret drops marked datagrams, which it cannot check,
 * rather than deliver their trailer as data. */
static void test_attack_ud__other_secret_and_no_secret_are_dropped(void **state)
{
	struct side t, wrong, none;
	rv_qp *b, *w, *o;
	rv_ah *ah_t, *ah_none;
	rv_endpoint eb, eo;
	uint64_t auth_t, auth_none, rx_t, rx_none;

	(void)state;
	side_open(&t, secret);
	side_open(&wrong, other_secret);
	side_open(&none, NULL);
	b = ud_qp(&t);
	w = ud_qp(&wrong);
	o = ud_qp(&none);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_int_equal(rv_qp_endpoint(o, &eo), 0);
	post_recv(&t, b, 4096, 128, 100);
	post_recv(&none, o, 4096, 128, 200);
	auth_t = counter(&t, SOFT_UD_DROP_AUTH);
	auth_none = counter(&none, SOFT_UD_DROP_AUTH);
	rx_t = counter(&t, SOFT_UD_RX);
	rx_none = counter(&none, SOFT_UD_RX);
	ah_t = ah_to_port(&wrong, eb.lid);
	send_to(&wrong, w, ah_t, rv_qp_num(b), "wrong secret", 1);
	rv_ah *ah_t2 = ah_to_port(&none, eb.lid);
	send_to(&none, o, ah_t2, rv_qp_num(b), "no secret", 2);
	ah_none = ah_to_port(&t, eo.lid);
	send_to(&t, b, ah_none, rv_qp_num(o), "to the unauthenticated", 3);
	{
		int64_t end = now_ms() + WAIT_MS;
		while ((counter(&t, SOFT_UD_DROP_AUTH) < auth_t + 2 || counter(&none, SOFT_UD_DROP_AUTH) < auth_none + 1) &&
		       now_ms() < end)
			usleep(200);
	}
	assert_int_equal(counter(&t, SOFT_UD_DROP_AUTH), auth_t + 2);
	assert_int_equal(counter(&none, SOFT_UD_DROP_AUTH), auth_none + 1);
	assert_int_equal(counter(&t, SOFT_UD_RX), rx_t);
	assert_int_equal(counter(&none, SOFT_UD_RX), rx_none);
	assert_no_recv(t.cq);
	assert_no_recv(none.cq);
	rv_ah_unref(ah_none);
	rv_ah_unref(ah_t2);
	rv_ah_unref(ah_t);
	rv_qp_unref(b);
	rv_qp_unref(w);
	rv_qp_unref(o);
	side_close(&none);
	side_close(&wrong);
	side_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attack_ud__spray_without_the_secret_delivers_nothing),
		cmocka_unit_test(test_attack_ud__captured_datagram_resent_is_dropped),
		cmocka_unit_test(test_attack_ud__replayed_datagram_is_dropped),
		cmocka_unit_test(test_attack_ud__other_secret_and_no_secret_are_dropped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
