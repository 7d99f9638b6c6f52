/*
 * soft0 against a hostile peer: a raw TCP client that speaks just enough MPA
 * to be accepted, then sends malformed, corrupted and out-of-bounds frames.
 * The QP must end in ERR (or keep working for harmless frames), nothing may
 * crash or hang, and registered memory outside what a frame was allowed to
 * touch must stay unchanged. Run it under ASan to make it mean something.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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

#include "drivers/soft/wire/wire.h"
#include "test-clock.h"

#define FAKE_PORT 1      /* lower than any listener port: the rverbs QP is the passive side */
#define FAKE_QPN 0x777

struct target {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
	rv_endpoint ep;
};

static void target_open(struct target *t)
{
	rv_device *dev;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = NULL};
	rv_endpoint fake;
	rv_sge g;

	memset(t, 0, sizeof(*t));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &t->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq), 0);
	qa.send_cq = t->cq;
	assert_int_equal(rv_qp_new(t->pd, &qa, &t->qp), 0);
	assert_int_equal(rv_mr_alloc(t->pd, 8192, RV_ACCESS_ALL_REMOTE, NULL, &t->mr), 0);
	t->buf = rv_mr_addr(t->mr);
	memset(t->buf, 0xab, 8192);
	assert_int_equal(rv_qp_endpoint(t->qp, &t->ep), 0);
	fake = t->ep;
	fake.lid = FAKE_PORT;
	fake.qpn = FAKE_QPN;
	assert_int_equal(rv_qp_to_init(t->qp, NULL), 0);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)t->buf, .length = 64, .lkey = rv_mr_lkey(t->mr)};
	assert_int_equal(rv_qp_recv(t->qp, &g, 1), 0);
	assert_int_equal(rv_qp_connect(t->qp, &fake), 0);
}

static void target_close(struct target *t)
{
	rv_qp_unref(t->qp);
	rv_mr_unref(t->mr);
	rv_cq_unref(t->cq);
	rv_pd_unref(t->pd);
	assert_int_equal(rv_context_close(t->ctx), 0);
	rv_context_unref(t->ctx);
}

static int raw_connect(const struct target *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(t->ep.lid)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
	/* The peer may have closed already: that is a valid reaction. */
	(void)!send(fd, p, n, MSG_NOSIGNAL);
}

/* Read until n bytes, EOF or 5 s. Returns the bytes read. */
static size_t recv_some(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;
	struct pollfd p = {.fd = fd, .events = POLLIN};

	while (got < n && poll(&p, 1, 5000) == 1) {
		ssize_t r = recv(fd, buf + got, n - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* MPA request as the fake peer; returns true when accepted. */
static bool handshake(const struct target *t, int fd)
{
	uint8_t pd[RV_SOFT_CPD_LEN], frame[128], reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN];
	struct rv_soft_cpd c;
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 2,
				 .pd_len = RV_SOFT_CPD_LEN, .pd = pd};
	struct rv_mpa_frame r;
	int n;

	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t->ep.gid, 16);
	c.port = FAKE_PORT;
	c.src_qpn = FAKE_QPN;
	c.dst_qpn = t->ep.qpn;
	c.ird = c.ord = 16;
	c.caps = RV_SOFT_CAP_IMM | RV_SOFT_CAP_ATOMIC; /* so that RFC 7306 frames reach the checks */
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	n = rv_wire_mpa_encode(frame, sizeof(frame), &f);
	send_all(fd, frame, (size_t)n);
	if (recv_some(fd, reply, sizeof(reply)) != sizeof(reply))
		return false;
	return rv_wire_mpa_decode(reply, sizeof(reply), &r) > 0 && r.reply && !(r.flags & RV_MPA_FLAG_REJECT);
}

static int wait_state(rv_qp *qp, int want, int ms)
{
	int64_t end = now_ms() + ms;
	int s;
	while ((s = rv_qp_state_of(qp)) != want && now_ms() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return s;
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static int frame(uint8_t *buf, size_t cap, struct rv_fpdu *f)
{
	int n = rv_wire_fpdu_encode(buf, cap, f);
	assert_true(n > 0);
	return n;
}

static void test_soft_hostile__garbage_before_mpa(void **state)
{
	struct target t;
	uint8_t junk[300];
	uint32_t seed = 1;

	(void)state;
	target_open(&t);
	for (int i = 0; i < 20; i++) {
		int fd = raw_connect(&t);
		for (size_t k = 0; k < sizeof(junk); k++)
			junk[k] = (uint8_t)lcg(&seed);
		if (i & 1)
			memcpy(junk, "MPA ID Req Frame", 16); /* a good key, then garbage */
		send_all(fd, junk, 20 + (size_t)(lcg(&seed) % 280));
		(void)recv_some(fd, junk, sizeof(junk)); /* a reject, or the end */
		close(fd);
	}
	/* The QP is untouched and still waits for its real peer. */
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	target_close(&t);
}

static void test_soft_hostile__wrong_peer_is_rejected(void **state)
{
	struct target t;
	uint8_t pd[RV_SOFT_CPD_LEN], frame_buf[128], reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN];
	struct rv_soft_cpd c;
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 2,
				 .pd_len = RV_SOFT_CPD_LEN, .pd = pd};
	struct rv_mpa_frame r;
	int fd, n;

	(void)state;
	target_open(&t);
	fd = raw_connect(&t);
	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t.ep.gid, 16);
	c.port = FAKE_PORT;
	c.src_qpn = FAKE_QPN + 1; /* not the peer the QP expects */
	c.dst_qpn = t.ep.qpn;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	n = rv_wire_mpa_encode(frame_buf, sizeof(frame_buf), &f);
	send_all(fd, frame_buf, (size_t)n);
	assert_int_equal(recv_some(fd, reply, sizeof(reply)), sizeof(reply));
	assert_true(rv_wire_mpa_decode(reply, sizeof(reply), &r) > 0);
	assert_true(r.flags & RV_MPA_FLAG_REJECT);
	close(fd);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	/* The right peer is still accepted afterwards. */
	fd = raw_connect(&t);
	assert_true(handshake(&t, fd));
	close(fd);
	target_close(&t);
}

/* One hostile frame after a good handshake. kind selects the attack. */
static void attack(int kind, uint32_t *seed)
{
	struct target t;
	uint8_t buf[9000], pay[4096];
	struct rv_fpdu f;
	int fd, n = 0;
	uint64_t base;
	bool harmless = false;

	target_open(&t);
	fd = raw_connect(&t);
	assert_true(handshake(&t, fd));
	base = (uint64_t)(uintptr_t)t.buf;
	memset(&f, 0, sizeof(f));
	memset(pay, 0xcd, sizeof(pay));
	f.last = true;
	switch (kind) {
	case 0: /* random bytes */
		for (size_t i = 0; i < 200; i++)
			buf[i] = (uint8_t)lcg(seed);
		n = 200;
		break;
	case 1: /* a good WRITE with one bit flipped (CRC) */
		f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr), f.to = base;
		f.payload = pay, f.payload_len = 64;
		n = frame(buf, sizeof(buf), &f);
		buf[20 + lcg(seed) % 40] ^= 0x10;
		break;
	case 2: /* WRITE with a wrong STag */
		f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr) ^ 1, f.to = base;
		f.payload = pay, f.payload_len = 64;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 3: /* WRITE straddling the end of the MR */
		f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr), f.to = base + 8192 - 8;
		f.payload = pay, f.payload_len = 64;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 4: /* WRITE whose TO + length wraps around 2^64 */
		f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr), f.to = UINT64_MAX - 10;
		f.payload = pay, f.payload_len = 64;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 5: /* WRITE below the MR */
		f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr), f.to = base - 64;
		f.payload = pay, f.payload_len = 64;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 6: /* READ request for 4 GiB - 1 */
		f.opcode = RV_RDMAP_READ_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
		f.rreq = (struct rv_read_req){.sink_stag = 5, .sink_to = 0, .size = UINT32_MAX,
					      .src_stag = rv_mr_rkey(t.mr), .src_to = base};
		n = frame(buf, sizeof(buf), &f);
		break;
	case 7: /* READ request with the wrong MSN */
		f.opcode = RV_RDMAP_READ_REQ, f.qn = RV_DDP_QN_READ, f.msn = 42;
		f.rreq = (struct rv_read_req){.sink_stag = 5, .size = 8, .src_stag = rv_mr_rkey(t.mr), .src_to = base};
		n = frame(buf, sizeof(buf), &f);
		break;
	case 8: /* SEND longer than the receive WR (64 bytes) */
		f.opcode = RV_RDMAP_SEND, f.qn = RV_DDP_QN_SEND, f.msn = 1, f.mo = 0;
		f.payload = pay, f.payload_len = 100;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 9: /* SEND segment at a message offset beyond the buffer */
		f.opcode = RV_RDMAP_SEND, f.qn = RV_DDP_QN_SEND, f.msn = 1, f.mo = 0xfffffff0u;
		f.payload = pay, f.payload_len = 32;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 10: /* SEND on an unknown queue number */
		f.opcode = RV_RDMAP_SEND, f.qn = 7, f.msn = 1;
		f.payload = pay, f.payload_len = 8;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 11: /* READ response nobody asked for */
		f.opcode = RV_RDMAP_READ_RESP, f.tagged = true, f.stag = rv_mr_rkey(t.mr), f.to = base;
		f.payload = pay, f.payload_len = 16;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 12: /* an RFC 7306 / unknown opcode */
		f.opcode = 0xb, f.qn = 3, f.msn = 1;
		f.payload = pay, f.payload_len = 8;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 13: /* a TERMINATE */
		f.opcode = RV_RDMAP_TERMINATE, f.qn = RV_DDP_QN_TERM, f.msn = 1;
		f.term.layer = RV_TERM_RDMAP, f.term.etype = RV_TERM_RDMAP_REMOTE_OP, f.term.ecode = 0xff;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 14: /* an MPA length that cannot hold a header */
		buf[0] = 0, buf[1] = 3, buf[2] = 0x41, buf[3] = 0x43;
		n = 4;
		break;
	case 16: /* atomic beyond the end of the MR */
		f.opcode = RV_RDMAP_ATOMIC_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
		f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_FETCH_ADD, .stag = rv_mr_rkey(t.mr), .to = base + 8192,
						.swap_add = 1};
		n = frame(buf, sizeof(buf), &f);
		break;
	case 17: /* atomic with a guessed STag */
		f.opcode = RV_RDMAP_ATOMIC_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
		f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_CMP_SWAP, .stag = rv_mr_rkey(t.mr) + 1, .to = base,
						.swap_add = 1, .swap_add_mask = UINT64_MAX,
						.compare_mask = UINT64_MAX};
		n = frame(buf, sizeof(buf), &f);
		break;
	case 18: /* misaligned atomic */
		f.opcode = RV_RDMAP_ATOMIC_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
		f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_FETCH_ADD, .stag = rv_mr_rkey(t.mr), .to = base + 4,
						.swap_add = 1};
		n = frame(buf, sizeof(buf), &f);
		break;
	case 19: /* masked (partitioned) atomic, which verbs never produce */
		f.opcode = RV_RDMAP_ATOMIC_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
		f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_FETCH_ADD, .stag = rv_mr_rkey(t.mr), .to = base,
						.swap_add = 1, .swap_add_mask = 0xff00};
		n = frame(buf, sizeof(buf), &f);
		break;
	case 20: /* Immediate Data with the wrong MSN */
		f.opcode = RV_RDMAP_IMM, f.qn = RV_DDP_QN_SEND, f.msn = 9, f.imm = 5;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 21: /* an Atomic Response nobody asked for */
		f.opcode = RV_RDMAP_ATOMIC_RESP, f.qn = RV_DDP_QN_ATOMIC_RESP, f.msn = 1, f.aresp_id = 0;
		n = frame(buf, sizeof(buf), &f);
		break;
	case 15: /* a valid in-bounds WRITE and a zero-length READ: harmless */
		f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr), f.to = base + 128;
		f.payload = pay, f.payload_len = 64;
		n = frame(buf, sizeof(buf), &f);
		memset(&f, 0, sizeof(f));
		f.last = true, f.opcode = RV_RDMAP_READ_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
		n += frame(buf + n, sizeof(buf) - (size_t)n, &f);
		harmless = true;
		break;
	}
	send_all(fd, buf, (size_t)n);
	if (harmless) {
		uint8_t resp[64];
		struct rv_fpdu g;
		/* The zero-length READ's response proves the WRITE was placed. */
		assert_int_equal(recv_some(fd, resp, 20), 20);
		assert_int_equal(rv_wire_fpdu_decode(resp, 20, &g), 20);
		assert_int_equal(g.opcode, RV_RDMAP_READ_RESP);
		assert_memory_equal(t.buf + 128, pay, 64);
		assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	} else {
		uint8_t resp[256];
		struct rv_fpdu g;
		size_t got;
		int st;
		/* Random bytes may announce a longer frame than was sent: a truncated
		 * frame is only an error once the stream ends. */
		if (kind == 0)
			shutdown(fd, SHUT_WR);
		st = wait_state(t.qp, RV_QPS_ERR, 5000);
		if (st != RV_QPS_ERR)
			fail_msg("attack %d left the QP in state %d", kind, st);
		/* A TERMINATE comes back before the end (except for a received TERMINATE). */
		got = recv_some(fd, resp, sizeof(resp));
		if (kind != 13 && kind != 0) {
			if (got < 2)
				fail_msg("attack %d: no TERMINATE came back", kind);
			assert_true(rv_wire_fpdu_decode(resp, got, &g) > 0);
			assert_int_equal(g.opcode, RV_RDMAP_TERMINATE);
		}
		/* Nothing outside the allowed range changed (WRITE targets only). */
		for (int i = 0; i < 8192; i++)
			if (t.buf[i] != 0xab && !(i == 0 && kind == 8))
				fail_msg("attack %d changed byte %d of the MR", kind, i);
	}
	close(fd);
	target_close(&t);
}

static void test_soft_hostile__bad_frames_after_setup(void **state)
{
	uint32_t seed = 99;

	(void)state;
	for (int kind = 0; kind <= 21; kind++)
		attack(kind, &seed);
	for (int i = 0; i < 10; i++)
		attack(0, &seed);
}

/* One MPA request with the given header and RTR offer; the decoded reply. */
static bool mpa_exchange(const struct target *t, int fd, uint8_t flags, uint8_t rev, uint8_t rtr,
			 struct rv_mpa_frame *r, struct rv_soft_cpd *rc)
{
	static uint8_t reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN];
	uint8_t pd[RV_SOFT_CPD_LEN], frame_buf[128];
	struct rv_soft_cpd c;
	struct rv_mpa_frame f = {.reply = false, .flags = flags, .rev = rev, .pd_len = RV_SOFT_CPD_LEN, .pd = pd};

	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t->ep.gid, 16);
	c.port = FAKE_PORT;
	c.src_qpn = FAKE_QPN;
	c.dst_qpn = t->ep.qpn;
	c.ird = c.ord = 4;
	c.rtr = rtr;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	send_all(fd, frame_buf, (size_t)rv_wire_mpa_encode(frame_buf, sizeof(frame_buf), &f));
	if (recv_some(fd, reply, sizeof(reply)) != sizeof(reply))
		return false;
	return rv_wire_mpa_decode(reply, sizeof(reply), r) > 0 && r->reply &&
	       rv_wire_cpd_decode(r->pd, r->pd_len, rc) > 0;
}

/* MPA revision 2 negotiation as the listener sees it: markers, revision 1 and
 * an RTR offer it cannot meet are rejected with a reason; the C bit is ORed;
 * the RTR reply picks exactly one of the offered types; IRD is advertised. */
static void test_soft_hostile__mpa_negotiation(void **state)
{
	const uint8_t rw = RV_SOFT_RTR_P2P | RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE;
	struct rv_mpa_frame r;
	struct rv_soft_cpd c;
	struct target t;
	int fd;

	(void)state;
	target_open(&t);
	fd = raw_connect(&t);
	assert_true(mpa_exchange(&t, fd, RV_MPA_FLAG_CRC | RV_MPA_FLAG_MARKERS, 2, rw, &r, &c));
	assert_true(r.flags & RV_MPA_FLAG_REJECT);
	assert_int_equal(c.reason, RV_SOFT_REJECT_MARKERS);
	close(fd);
	fd = raw_connect(&t);
	assert_true(mpa_exchange(&t, fd, RV_MPA_FLAG_CRC, 1, rw, &r, &c));
	assert_true(r.flags & RV_MPA_FLAG_REJECT);
	assert_int_equal(c.reason, RV_SOFT_REJECT_REVISION);
	close(fd);
	fd = raw_connect(&t);
	assert_true(mpa_exchange(&t, fd, RV_MPA_FLAG_CRC, 2, RV_SOFT_RTR_P2P | RV_SOFT_RTR_SEND, &r, &c));
	assert_true(r.flags & RV_MPA_FLAG_REJECT);
	assert_int_equal(c.reason, RV_SOFT_REJECT_RTR);
	close(fd);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	/* Accepted: no CRC asked, but this context requires it, so the reply sets C. */
	fd = raw_connect(&t);
	assert_true(mpa_exchange(&t, fd, 0, 2, RV_SOFT_RTR_P2P | RV_SOFT_RTR_WRITE, &r, &c));
	assert_false(r.flags & RV_MPA_FLAG_REJECT);
	assert_int_equal(r.rev, 2);
	assert_true(r.flags & RV_MPA_FLAG_CRC);
	assert_false(r.flags & RV_MPA_FLAG_MARKERS);
	assert_int_equal(c.rtr, RV_SOFT_RTR_P2P | RV_SOFT_RTR_WRITE);
	assert_int_equal(c.ird, 16); /* rv_qp_connect: max_dest_rd_atomic = the device limit */
	assert_int_equal(c.src_qpn, t.ep.qpn);
	assert_int_equal(c.dst_qpn, FAKE_QPN);
	close(fd);
	target_close(&t);
}

/* A context with RV_SOFT_CRC_OPTIONAL and a peer without CRC: the stream has
 * zero CRC fields both ways, and a good CRC is not required. */
static void test_soft_hostile__crc_off_stream(void **state)
{
	struct rv_mpa_frame r;
	struct rv_soft_cpd c;
	struct target t;
	uint8_t buf[512], pay[64], resp[64];
	struct rv_fpdu f, g;
	int fd, n;

	(void)state;
	setenv("RVERBS_SOFT_CRC", "0", 1);
	target_open(&t);
	unsetenv("RVERBS_SOFT_CRC");
	fd = raw_connect(&t);
	assert_true(mpa_exchange(&t, fd, 0, 2, RV_SOFT_RTR_P2P | RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE, &r, &c));
	assert_false(r.flags & RV_MPA_FLAG_REJECT);
	assert_false(r.flags & RV_MPA_FLAG_CRC);
	assert_int_equal(c.rtr, RV_SOFT_RTR_P2P | RV_SOFT_RTR_READ);
	memset(pay, 0x3c, sizeof(pay));
	memset(&f, 0, sizeof(f));
	f.last = true, f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.stag = rv_mr_rkey(t.mr);
	f.to = (uint64_t)(uintptr_t)t.buf + 256, f.payload = pay, f.payload_len = 64;
	n = rv_wire_fpdu_encode_crc(buf, sizeof(buf), &f, false);
	memset(&f, 0, sizeof(f));
	f.last = true, f.opcode = RV_RDMAP_READ_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1;
	n += rv_wire_fpdu_encode_crc(buf + n, sizeof(buf) - (size_t)n, &f, false);
	send_all(fd, buf, (size_t)n);
	assert_int_equal(recv_some(fd, resp, 20), 20);
	assert_int_equal(rv_wire_fpdu_decode_crc(resp, 20, &g, false), 20);
	assert_int_equal(g.opcode, RV_RDMAP_READ_RESP);
	assert_memory_equal(resp + 16, "\0\0\0\0", 4); /* the CRC field is zero */
	assert_memory_equal(t.buf + 256, pay, 64);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	close(fd);
	target_close(&t);
}

/* More READ requests than the IRD the QP advertised (16): TERMINATE with DDP
 * untagged "no buffer" (0x02), the QP in ERR, no byte of the MR changed. */
static void test_soft_hostile__reads_beyond_ird(void **state)
{
	struct target t;
	uint8_t buf[17 * 60], resp[4096];
	struct rv_fpdu f, g;
	size_t got, off = 0;
	int fd, n = 0;
	bool term = false;

	(void)state;
	target_open(&t);
	fd = raw_connect(&t);
	assert_true(handshake(&t, fd));
	for (uint32_t i = 0; i < 17; i++) {
		memset(&f, 0, sizeof(f));
		f.last = true, f.opcode = RV_RDMAP_READ_REQ, f.qn = RV_DDP_QN_READ, f.msn = 1 + i;
		f.rreq = (struct rv_read_req){.sink_stag = 5, .size = 8, .src_stag = rv_mr_rkey(t.mr),
					      .src_to = (uint64_t)(uintptr_t)t.buf};
		n += frame(buf + n, sizeof(buf) - (size_t)n, &f);
	}
	send_all(fd, buf, (size_t)n);
	assert_int_equal(wait_state(t.qp, RV_QPS_ERR, 5000), RV_QPS_ERR);
	got = recv_some(fd, resp, sizeof(resp));
	while (off < got) {
		int k = rv_wire_fpdu_decode(resp + off, got - off, &g);
		assert_true(k > 0);
		if (g.opcode == RV_RDMAP_TERMINATE) {
			assert_int_equal(g.term.layer, RV_TERM_DDP);
			assert_int_equal(g.term.etype, RV_TERM_DDP_UNTAGGED);
			assert_int_equal(g.term.ecode, RV_TERM_DDP_U_NO_BUF);
			assert_int_equal(g.term.ddp_qn, RV_DDP_QN_READ);
			term = true;
		}
		off += (size_t)k;
	}
	assert_true(term);
	for (int i = 0; i < 8192; i++)
		assert_int_equal(t.buf[i], 0xab);
	close(fd);
	target_close(&t);
}

/* Immediate Data after a WRITE with every receive WR used up: the stream
 * waits (receiver not ready), no error; a receive posted later completes it
 * with the immediate. The earlier receive WR takes the first one. */
static void test_soft_hostile__imm_without_a_receive(void **state)
{
	struct target t;
	uint8_t buf[256];
	struct rv_fpdu f;
	rv_wc wc;
	rv_sge g;
	int fd, n = 0;

	(void)state;
	target_open(&t);
	fd = raw_connect(&t);
	assert_true(handshake(&t, fd));
	for (uint32_t i = 0; i < 2; i++) {
		memset(&f, 0, sizeof(f));
		f.last = true, f.opcode = RV_RDMAP_IMM, f.qn = RV_DDP_QN_SEND, f.msn = 1 + i, f.imm = 100 + i;
		n += frame(buf + n, sizeof(buf) - (size_t)n, &f);
	}
	send_all(fd, buf, (size_t)n);
	for (int tries = 0; tries < 5000 && rv_cq_poll(t.cq, &wc, 1) == 0; tries++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.opcode, RV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 100);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)t.buf, .length = 8, .lkey = rv_mr_lkey(t.mr)};
	assert_int_equal(rv_qp_recv(t.qp, &g, 2), 0);
	for (int tries = 0; tries < 5000 && rv_cq_poll(t.cq, &wc, 1) == 0; tries++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.imm_data, 101);
	assert_true(wc.wc_flags & RV_WC_WITH_IMM);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	for (int i = 0; i < 8192; i++)
		assert_int_equal(t.buf[i], 0xab);
	close(fd);
	target_close(&t);
}

/* An XRC target QP (RV_QPT_XRC_RECV) with SRQ A of its domain, one receive
 * posted, and SRQ B of another domain, each completing on t.cq; the fake
 * peer connects as an XRC initiator. */
struct xrc_target {
	struct target t;
	rv_xrcd *xrcd, *other;
	rv_srq *a, *b, *a2;
	uint32_t na, nb, na2;
};

static void xrc_target_open(struct xrc_target *x)
{
	rv_device *dev;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_XRCD, .qp_type = RV_QPT_XRC_RECV};
	rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC};
	rv_endpoint fake;
	rv_sge g;
	rv_recv_wr wr = {.wr_id = 1, .sg_list = &g, .num_sge = 1};
	struct target *t = &x->t;

	memset(x, 0, sizeof(*x));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &t->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq), 0);
	assert_int_equal(rv_xrcd_new(t->ctx, NULL, &x->xrcd), 0);
	assert_int_equal(rv_xrcd_new(t->ctx, NULL, &x->other), 0);
	sa.cq = t->cq;
	sa.xrcd = x->xrcd;
	assert_int_equal(rv_srq_new(t->pd, &sa, &x->a), 0);
	assert_int_equal(rv_srq_new(t->pd, &sa, &x->a2), 0);
	sa.xrcd = x->other;
	assert_int_equal(rv_srq_new(t->pd, &sa, &x->b), 0);
	assert_int_equal(rv_srq_num(x->a, &x->na), 0);
	assert_int_equal(rv_srq_num(x->a2, &x->na2), 0);
	assert_int_equal(rv_srq_num(x->b, &x->nb), 0);
	qa.xrcd = x->xrcd;
	assert_int_equal(rv_qp_new(t->pd, &qa, &t->qp), 0);
	assert_int_equal(rv_mr_alloc(t->pd, 8192, RV_ACCESS_ALL_REMOTE, NULL, &t->mr), 0);
	t->buf = rv_mr_addr(t->mr);
	memset(t->buf, 0xab, 8192);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)t->buf, .length = 64, .lkey = rv_mr_lkey(t->mr)};
	for (int i = 0; i < 3; i++) {
		rv_srq *s = i == 0 ? x->a : i == 1 ? x->a2 : x->b;
		assert_int_equal(rv_srq_post_recv(s, &wr, 1, NULL), 0);
	}
	assert_int_equal(rv_qp_endpoint(t->qp, &t->ep), 0);
	fake = t->ep;
	fake.lid = FAKE_PORT;
	fake.qpn = FAKE_QPN;
	fake.qp_type = RV_QPT_XRC_SEND;
	assert_int_equal(rv_qp_connect(t->qp, &fake), 0);
}

static void xrc_target_close(struct xrc_target *x)
{
	rv_srq_unref(x->a);
	rv_srq_unref(x->a2);
	rv_srq_unref(x->b);
	rv_xrcd_unref(x->xrcd);
	rv_xrcd_unref(x->other);
	target_close(&x->t);
}

/* The MPA request of an XRC initiator. */
static bool xrc_handshake(const struct target *t, int fd, uint32_t role)
{
	uint8_t pd[RV_SOFT_CPD_LEN], frame_buf[128], reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN];
	struct rv_soft_cpd c;
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 2,
				 .pd_len = RV_SOFT_CPD_LEN, .pd = pd};
	struct rv_mpa_frame r;
	int n;

	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t->ep.gid, 16);
	c.port = FAKE_PORT;
	c.src_qpn = FAKE_QPN;
	c.dst_qpn = t->ep.qpn;
	c.ird = c.ord = 16;
	c.caps = RV_SOFT_CAP_IMM | role;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	n = rv_wire_mpa_encode(frame_buf, sizeof(frame_buf), &f);
	send_all(fd, frame_buf, (size_t)n);
	if (recv_some(fd, reply, sizeof(reply)) != sizeof(reply))
		return false;
	return rv_wire_mpa_decode(reply, sizeof(reply), &r) > 0 && r.reply && !(r.flags & RV_MPA_FLAG_REJECT);
}

/* A SEND segment of message msn naming queue number qn. */
static int xrc_send_seg(uint8_t *buf, size_t cap, uint32_t qn, uint32_t msn, uint32_t mo, bool last)
{
	static const uint8_t payload[16] = "xrc-hostile-pay";
	struct rv_fpdu f;

	memset(&f, 0, sizeof(f));
	f.last = last, f.opcode = RV_RDMAP_SEND, f.qn = qn, f.msn = msn, f.mo = mo;
	f.payload = payload, f.payload_len = sizeof(payload);
	return frame(buf, cap, &f);
}

/* XRC: a SEND on queue 0 without an SRQ number, naming an SRQ that does not
 * exist, one of another XRC domain, or switching SRQs inside a message is
 * refused (TERMINATE, the target QP to ERR) without touching any receive
 * buffer or completing anything; the control case, a well-formed SEND,
 * lands. A peer claiming another role than initiator is rejected. */
static void test_soft_hostile__xrc_srq_numbers(void **state)
{
	for (int kind = 0; kind < 6; kind++) {
		struct xrc_target x;
		uint8_t buf[512];
		rv_wc wc;
		int fd, n = 0, tries;

		(void)state;
		xrc_target_open(&x);
		fd = raw_connect(&x.t);
		if (kind == 5) {
			/* Claims to be a target too: not an initiator's peer. */
			assert_false(xrc_handshake(&x.t, fd, RV_SOFT_CAP_XRC_TGT));
			close(fd);
			xrc_target_close(&x);
			continue;
		}
		assert_true(xrc_handshake(&x.t, fd, RV_SOFT_CAP_XRC_INI));
		switch (kind) {
		case 0: /* the control: SRQ A, two segments */
			n += xrc_send_seg(buf + n, sizeof(buf) - (size_t)n, RV_SOFT_QN_XRC | x.na, 1, 0, false);
			n += xrc_send_seg(buf + n, sizeof(buf) - (size_t)n, RV_SOFT_QN_XRC | x.na, 1, 16, true);
			break;
		case 1:
			n += xrc_send_seg(buf, sizeof(buf), RV_DDP_QN_SEND, 1, 0, true);
			break;
		case 2:
			n += xrc_send_seg(buf, sizeof(buf), RV_SOFT_QN_XRC | ((x.na ^ x.nb ^ x.na2) | 0x800000), 1, 0, true);
			break;
		case 3:
			n += xrc_send_seg(buf, sizeof(buf), RV_SOFT_QN_XRC | x.nb, 1, 0, true);
			break;
		case 4:
			n += xrc_send_seg(buf + n, sizeof(buf) - (size_t)n, RV_SOFT_QN_XRC | x.na, 1, 0, false);
			n += xrc_send_seg(buf + n, sizeof(buf) - (size_t)n, RV_SOFT_QN_XRC | x.na2, 1, 16, true);
			break;
		}
		send_all(fd, buf, (size_t)n);
		if (kind == 0) {
			for (tries = 0; tries < 5000 && rv_cq_poll(x.t.cq, &wc, 1) == 0; tries++) {
				struct timespec ts = {0, 1000000};
				nanosleep(&ts, NULL);
			}
			assert_int_equal(wc.status, RV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, 32);
			assert_int_equal(wc.qp_num, rv_qp_num(x.t.qp));
			assert_memory_equal(x.t.buf, "xrc-hostile-pay", 16);
			assert_int_equal(rv_qp_state_of(x.t.qp), RV_QPS_RTS);
		} else {
			assert_int_equal(wait_state(x.t.qp, RV_QPS_ERR, 5000), RV_QPS_ERR);
			/* A refused first segment wrote nothing; case 4's first
			 * segment landed in SRQ A's WR, which then flushes. */
			if (kind == 4) {
				assert_int_equal(rv_cq_poll(x.t.cq, &wc, 1), 1);
				assert_int_not_equal(wc.status, RV_WC_SUCCESS);
			} else {
				assert_int_equal(rv_cq_poll(x.t.cq, &wc, 1), 0);
				for (int i = 0; i < 8192; i++)
					assert_int_equal(x.t.buf[i], 0xab);
			}
		}
		close(fd);
		xrc_target_close(&x);
	}
}

static void test_soft_hostile__idle_connections_are_bounded(void **state)
{
	struct target t;
	int fds[140], extra, fd;
	uint8_t b;
	struct pollfd p;

	(void)state;
	target_open(&t);
	for (int i = 0; i < 140; i++)
		fds[i] = raw_connect(&t);
	/* Beyond the bound (128 waiting), connections are closed at once. */
	extra = fds[139];
	p = (struct pollfd){.fd = extra, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_true(recv(extra, &b, 1, 0) <= 0);
	for (int i = 0; i < 140; i++)
		close(fds[i]);
	/* Once they are gone, the real peer gets through. */
	for (int tries = 0;; tries++) {
		fd = raw_connect(&t);
		if (handshake(&t, fd))
			break;
		close(fd);
		assert_true(tries < 50);
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
	close(fd);
	target_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_hostile__garbage_before_mpa),
		cmocka_unit_test(test_soft_hostile__wrong_peer_is_rejected),
		cmocka_unit_test(test_soft_hostile__bad_frames_after_setup),
		cmocka_unit_test(test_soft_hostile__idle_connections_are_bounded),
		cmocka_unit_test(test_soft_hostile__mpa_negotiation),
		cmocka_unit_test(test_soft_hostile__crc_off_stream),
		cmocka_unit_test(test_soft_hostile__reads_beyond_ird),
		cmocka_unit_test(test_soft_hostile__imm_without_a_receive),
		cmocka_unit_test(test_soft_hostile__xrc_srq_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
