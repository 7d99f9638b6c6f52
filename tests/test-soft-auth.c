/*
 * Shared-secret authentication of soft0 connections (lib/drivers/soft/iwarp/auth.c,
 * README.md "Authentication"): SHA-256 and HMAC-SHA256 against the FIPS 180-4
 * and RFC 4231 known answers; two contexts with the same secret connect and
 * move data; a different secret or a missing one is rejected on both sides
 * with nothing placed; a raw TCP client that knows the protocol but not the
 * nonces to come cannot replay a recorded handshake, nor send a bad proof or
 * data before its proof.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "drivers/soft/wire/sha256.h"
#include "drivers/soft/wire/wire.h"
#include "test-clock.h"

/* The wire facts of auth.c, restated here so the test checks them independently. */
#define AUTH_OPCODE 0xCu
#define AUTH_EXT_LEN 56u
#define FAKE_PORT 1 /* lower than any listener port: the rverbs QP is the passive side */
#define FAKE_QPN 0x778
#define BUF 8192

static const char secret_a[] = "correct horse battery staple, 32b";
static const char secret_b[] = "another secret entirely, 32 byte";

/* What soft0 logged, so that the tests can check that a refusal says why. */
static char logged[16384];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_to_buffer(rv_log_level level, const char *msg, void *user)
{
	(void)level, (void)user;
	fprintf(stderr, "rverbs: %s\n", msg);
	pthread_mutex_lock(&log_lock);
	if (strlen(logged) + strlen(msg) + 2 < sizeof(logged)) {
		strcat(logged, msg);
		strcat(logged, "\n");
	}
	pthread_mutex_unlock(&log_lock);
}

static int count_logged(const char *what)
{
	int n = 0;

	pthread_mutex_lock(&log_lock);
	for (const char *p = logged; (p = strstr(p, what)); p++)
		n++;
	logged[0] = 0;
	pthread_mutex_unlock(&log_lock);
	return n;
}

static void clear_logged(void)
{
	pthread_mutex_lock(&log_lock);
	logged[0] = 0;
	pthread_mutex_unlock(&log_lock);
}

/* ---- SHA-256 / HMAC known answers ---- */

static void hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sscanf(s + 2 * i, "%2hhx", &out[i]), 1);
}

static void test_soft_auth__sha256_vectors(void **state)
{
	uint8_t got[32], want[32];
	char *million = malloc(1000000);

	(void)state;
	/* FIPS 180-4 examples (NIST CSRC "SHA256.pdf"). */
	rv_sha256("abc", 3, got);
	hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", want, 32);
	assert_memory_equal(got, want, 32);
	rv_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, got);
	hex("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", want, 32);
	assert_memory_equal(got, want, 32);
	rv_sha256("", 0, got);
	hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", want, 32);
	assert_memory_equal(got, want, 32);
	assert_non_null(million);
	memset(million, 'a', 1000000);
	rv_sha256(million, 1000000, got);
	hex("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", want, 32);
	assert_memory_equal(got, want, 32);
	free(million);
}

static void hmac1(const void *k, size_t kl, const void *d, size_t dl, uint8_t out[32])
{
	struct rv_hmac_part p = {d, dl};
	rv_hmac_sha256(k, kl, &p, 1, out);
}

static void test_soft_auth__hmac_rfc4231(void **state)
{
	uint8_t key[131], data[160], got[32], want[32];

	(void)state;
	/* Test case 1 */
	memset(key, 0x0b, 20);
	hmac1(key, 20, "Hi There", 8, got);
	hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", want, 32);
	assert_memory_equal(got, want, 32);
	/* Test case 2, in two parts to check the concatenation */
	{
		struct rv_hmac_part p[2] = {{"what do ya want ", 16}, {"for nothing?", 12}};
		rv_hmac_sha256("Jefe", 4, p, 2, got);
		hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", want, 32);
		assert_memory_equal(got, want, 32);
	}
	/* Test case 3 */
	memset(key, 0xaa, 20);
	memset(data, 0xdd, 50);
	hmac1(key, 20, data, 50, got);
	hex("773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", want, 32);
	assert_memory_equal(got, want, 32);
	/* Test case 4 */
	for (int i = 0; i < 25; i++)
		key[i] = (uint8_t)(i + 1);
	memset(data, 0xcd, 50);
	hmac1(key, 25, data, 50, got);
	hex("82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", want, 32);
	assert_memory_equal(got, want, 32);
	/* Test case 6: a key longer than the block */
	memset(key, 0xaa, 131);
	hmac1(key, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54, got);
	hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", want, 32);
	assert_memory_equal(got, want, 32);
	/* Test case 7 */
	{
		static const char d7[] = "This is a test using a larger than block-size key and a larger than "
					 "block-size data. The key needs to be hashed before being used by the "
					 "HMAC algorithm.";
		hmac1(key, 131, d7, sizeof(d7) - 1, got);
		hex("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", want, 32);
		assert_memory_equal(got, want, 32);
	}
	assert_true(rv_mem_equal_ct(want, want, 32));
	memcpy(got, want, 32);
	got[31] ^= 1;
	assert_false(rv_mem_equal_ct(got, want, 32));
}

/* ---- two contexts ---- */

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
};

static int open_ctx(const char *secret, rv_context **ctx)
{
	rv_device *dev;
	rv_context_attr a = {.mask = 0};
	int rc;

	if (secret) {
		a.mask = RV_CONTEXT_ATTR_AUTH_SECRET;
		a.auth_secret = secret;
		a.auth_secret_len = (uint32_t)strlen(secret);
	}
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	rc = rv_context_new(dev, &a, ctx);
	rv_device_unref(dev);
	return rc;
}

static void side_open(struct side *s, const char *secret)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};

	memset(s, 0, sizeof(*s));
	assert_int_equal(open_ctx(secret, &s->ctx), 0);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	qa.send_cq = s->cq;
	assert_int_equal(rv_qp_new(s->pd, &qa, &s->qp), 0);
	assert_int_equal(rv_mr_alloc(s->pd, BUF, RV_ACCESS_ALL_REMOTE, NULL, &s->mr), 0);
	s->buf = rv_mr_addr(s->mr);
	memset(s->buf, 0x11, BUF);
}

static void side_close(struct side *s)
{
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
}

static rv_wc poll_one(rv_cq *cq)
{
	int64_t end = now_ms() + 20000; /* hang guard */
	rv_wc wc;
	int n;

	while ((n = rv_cq_poll(cq, &wc, 1)) == 0 && now_ms() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	if (n != 1)
		fail_msg("no completion (rv_cq_poll returned %d: %s)", n, rv_error_last());
	return wc;
}

/* Each side WRITEs 64 bytes of its own pattern into the other's buffer. */
static void write_both(struct side *a, struct side *b, rv_wc_status *sa, rv_wc_status *sb)
{
	rv_endpoint ea, eb;
	rv_sge ga = {.addr = (uint64_t)(uintptr_t)a->buf, .length = 64, .lkey = rv_mr_lkey(a->mr)};
	rv_sge gb = {.addr = (uint64_t)(uintptr_t)b->buf, .length = 64, .lkey = rv_mr_lkey(b->mr)};

	memset(a->buf, 0xa1, 64);
	memset(b->buf, 0xb2, 64);
	assert_int_equal(rv_qp_endpoint(a->qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(a->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(b->qp, &ea), 0);
	assert_int_equal(rv_qp_write(a->qp, &ga, (uint64_t)(uintptr_t)b->buf + 4096, rv_mr_rkey(b->mr), 1), 0);
	assert_int_equal(rv_qp_write(b->qp, &gb, (uint64_t)(uintptr_t)a->buf + 4096, rv_mr_rkey(a->mr), 2), 0);
	*sa = poll_one(a->cq).status;
	*sb = poll_one(b->cq).status;
}

static void test_soft_auth__same_secret_connects(void **state)
{
	struct side a, b;
	rv_wc_status sa, sb;
	uint8_t want[64];

	(void)state;
	side_open(&a, secret_a);
	side_open(&b, secret_a);
	write_both(&a, &b, &sa, &sb);
	assert_int_equal(sa, RV_WC_SUCCESS);
	assert_int_equal(sb, RV_WC_SUCCESS);
	memset(want, 0xa1, 64);
	assert_memory_equal(b.buf + 4096, want, 64);
	memset(want, 0xb2, 64);
	assert_memory_equal(a.buf + 4096, want, 64);
	side_close(&a);
	side_close(&b);
}

/* Both sides' WRITEs fail, and neither buffer changed outside what it wrote itself. */
static void expect_rejected(const char *sa_secret, const char *sb_secret)
{
	struct side a, b;
	rv_wc_status sa, sb;
	uint8_t want[64];

	side_open(&a, sa_secret);
	side_open(&b, sb_secret);
	clear_logged();
	write_both(&a, &b, &sa, &sb);
	/* Both sides say why: the initiator's QP and the responder's listener. */
	assert_true(count_logged("authentication") >= 2);
	assert_int_not_equal(sa, RV_WC_SUCCESS);
	assert_int_not_equal(sb, RV_WC_SUCCESS);
	memset(want, 0x11, 64);
	assert_memory_equal(b.buf + 4096, want, 64);
	assert_memory_equal(a.buf + 4096, want, 64);
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_ERR);
	assert_int_equal(rv_qp_state_of(b.qp), RV_QPS_ERR);
	side_close(&a);
	side_close(&b);
}

static void test_soft_auth__wrong_secret_rejected(void **state)
{
	(void)state;
	expect_rejected(secret_a, secret_b);
}

static void test_soft_auth__one_side_without_secret_rejected(void **state)
{
	(void)state;
	expect_rejected(secret_a, NULL);
	expect_rejected(NULL, secret_a);
}

/* RVERBS_SOFT_SECRET_FILE: the file's bytes are the secret; a missing file fails the open. */
static void test_soft_auth__secret_file(void **state)
{
	char path[] = "/tmp/rverbs-auth-XXXXXX";
	struct side a, b;
	rv_wc_status sa, sb;
	rv_context *ctx;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, secret_a, strlen(secret_a)), (ssize_t)strlen(secret_a));
	close(fd);
	setenv("RVERBS_SOFT_SECRET_FILE", path, 1);
	side_open(&a, NULL);
	unsetenv("RVERBS_SOFT_SECRET_FILE");
	side_open(&b, secret_a);
	write_both(&a, &b, &sa, &sb);
	assert_int_equal(sa, RV_WC_SUCCESS);
	assert_int_equal(sb, RV_WC_SUCCESS);
	side_close(&a);
	side_close(&b);
	unlink(path);
	setenv("RVERBS_SOFT_SECRET_FILE", path, 1);
	assert_int_equal(open_ctx(NULL, &ctx), -ENOENT);
	assert_non_null(strstr(rv_error_last(), "RVERBS_SOFT_SECRET_FILE"));
	unsetenv("RVERBS_SOFT_SECRET_FILE");
}

static void test_soft_auth__bad_attr(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_context_attr a = {.mask = RV_CONTEXT_ATTR_AUTH_SECRET, .auth_secret = NULL, .auth_secret_len = 4};

	(void)state;
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, &a, &ctx), -EINVAL);
	a.auth_secret = "x";
	a.auth_secret_len = 0;
	assert_int_equal(rv_context_new(dev, &a, &ctx), -EINVAL);
	rv_device_unref(dev);
}

/* ---- a raw client that knows the secret, against a passive rverbs QP ---- */

struct target {
	struct side s;
	rv_endpoint ep;
};

static void target_arm(struct target *t)
{
	rv_endpoint fake = t->ep;

	fake.lid = FAKE_PORT;
	fake.qpn = FAKE_QPN;
	assert_int_equal(rv_qp_to_init(t->s.qp, NULL), 0);
	assert_int_equal(rv_qp_connect(t->s.qp, &fake), 0);
}

static void target_open(struct target *t)
{
	side_open(&t->s, secret_a);
	assert_int_equal(rv_qp_endpoint(t->s.qp, &t->ep), 0);
	target_arm(t);
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

/* true when the peer closed the connection (within the hang guard). */
static bool closed_by_peer(int fd)
{
	uint8_t b[256];
	struct pollfd p = {.fd = fd, .events = POLLIN};

	while (poll(&p, 1, 5000) == 1) {
		ssize_t r = recv(fd, b, sizeof(b), 0);
		if (r <= 0)
			return true;
	}
	return false;
}

static void put_id(uint8_t *o, const uint8_t gid[16], uint16_t port, uint32_t qpn)
{
	memcpy(o, gid, 16);
	o[16] = (uint8_t)(port >> 8), o[17] = (uint8_t)port;
	o[18] = (uint8_t)(qpn >> 24), o[19] = (uint8_t)(qpn >> 16), o[20] = (uint8_t)(qpn >> 8), o[21] = (uint8_t)qpn;
}

static void mac(const char *label, const uint8_t ni[16], const uint8_t nr[16], const struct target *t,
		uint8_t out[32])
{
	uint8_t ids[44];
	struct rv_hmac_part p[4] = {{label, strlen(label)}, {ni, 16}, {nr, 16}, {ids, 44}};

	put_id(ids, t->ep.gid, FAKE_PORT, FAKE_QPN);
	put_id(ids + 22, t->ep.gid, t->ep.lid, t->ep.qpn);
	rv_hmac_sha256(secret_a, strlen(secret_a), p, 4, out);
}

/* The request's MAC_Q: HMAC(secret, "rverbs-auth-Q" || N_i || ids). */
static void mac_q(const uint8_t ni[16], const struct target *t, uint8_t out[32])
{
	uint8_t ids[44];
	struct rv_hmac_part p[3] = {{"rverbs-auth-Q", 13}, {ni, 16}, {ids, 44}};

	put_id(ids, t->ep.gid, FAKE_PORT, FAKE_QPN);
	put_id(ids + 22, t->ep.gid, t->ep.lid, t->ep.qpn);
	rv_hmac_sha256(secret_a, strlen(secret_a), p, 3, out);
}

/* The MPA request with our nonce and its MAC_Q; returns its length in req. */
static size_t make_request(const struct target *t, const uint8_t ni[16], uint8_t *req, size_t cap)
{
	uint8_t pd[RV_SOFT_CPD_LEN + AUTH_EXT_LEN];
	struct rv_soft_cpd c;
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 2, .pd_len = sizeof(pd), .pd = pd};

	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t->ep.gid, 16);
	c.port = FAKE_PORT;
	c.src_qpn = FAKE_QPN;
	c.dst_qpn = t->ep.qpn;
	c.ird = c.ord = 4;
	c.rtr = RV_SOFT_RTR_P2P | RV_SOFT_RTR_WRITE;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	memset(pd + RV_SOFT_CPD_LEN, 0, AUTH_EXT_LEN);
	memcpy(pd + RV_SOFT_CPD_LEN, "RAU1", 4);
	memcpy(pd + RV_SOFT_CPD_LEN + 8, ni, 16);
	mac_q(ni, t, pd + RV_SOFT_CPD_LEN + 24);
	return (size_t)rv_wire_mpa_encode(req, cap, &f);
}

/* Read the reply; fills nr and the responder's MAC. */
static bool read_reply(int fd, uint8_t nr[16], uint8_t mac_r[32])
{
	uint8_t reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN + AUTH_EXT_LEN];
	struct rv_mpa_frame r;
	const uint8_t *x;

	if (recv_some(fd, reply, sizeof(reply)) != sizeof(reply))
		return false;
	if (rv_wire_mpa_decode(reply, sizeof(reply), &r) <= 0 || !r.reply || (r.flags & RV_MPA_FLAG_REJECT) ||
	    r.pd_len != RV_SOFT_CPD_LEN + AUTH_EXT_LEN)
		return false;
	x = r.pd + RV_SOFT_CPD_LEN;
	if (memcmp(x, "RAU1", 4) != 0 || x[4] != 1)
		return false;
	memcpy(nr, x + 8, 16);
	memcpy(mac_r, x + 24, 32);
	return true;
}

static size_t auth_frame(const uint8_t m[32], uint8_t *buf, size_t cap)
{
	struct rv_fpdu f;
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = AUTH_OPCODE;
	f.last = true;
	f.payload = m;
	f.payload_len = 32;
	n = rv_wire_fpdu_encode(buf, cap, &f);
	assert_true(n > 0);
	return (size_t)n;
}

static size_t write_frame(const struct target *t, uint8_t fill, uint8_t *buf, size_t cap)
{
	static uint8_t pay[64];
	struct rv_fpdu f;
	int n;

	memset(pay, fill, sizeof(pay));
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_WRITE, f.tagged = true, f.last = true;
	f.stag = rv_mr_rkey(t->s.mr), f.to = (uint64_t)(uintptr_t)t->s.buf;
	f.payload = pay, f.payload_len = sizeof(pay);
	n = rv_wire_fpdu_encode(buf, cap, &f);
	assert_true(n > 0);
	return (size_t)n;
}

/* A zero-length SEND (MSN 1: the first on a QP just connected or reset). The
 * target executes a connection's frames in order, so the completion of the
 * receive it consumes says the WRITE framed before it has been placed: the test
 * waits on that completion instead of reading memory soft0 may be writing. */
static size_t send_frame(uint8_t *buf, size_t cap)
{
	struct rv_fpdu f;
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_SEND, f.qn = RV_DDP_QN_SEND, f.msn = 1, f.last = true;
	n = rv_wire_fpdu_encode(buf, cap, &f);
	assert_true(n > 0);
	return (size_t)n;
}

/* The receive send_frame's SEND consumes; then wait for it. */
static void expect_send_received(struct target *t)
{
	rv_wc wc = poll_one(t->s.cq);

	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 77);
	assert_true(wc.opcode & RV_WC_RECV);
}

/* true when all n bytes at p are v. Only called once nothing may be writing
 * there: after a completion, or after the connection that could have was refused. */
static bool all_bytes(const uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void reset_target(struct target *t)
{
	rv_qp_attr a = {.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET};

	assert_int_equal(rv_qp_modify(t->s.qp, &a), 0);
	memset(t->s.buf, 0x11, BUF);
	target_arm(t);
}

/* A legitimate raw handshake works (so the protocol is as documented); its
 * recording replayed on a fresh connection is refused and places nothing;
 * the QP then still accepts a real initiator. */
static void test_soft_auth__replay_rejected(void **state)
{
	struct target t;
	uint8_t ni[16], nr[16], mr[32], want[32], mi[32], req[256], rec[512], w[256], tail_buf[64];
	size_t req_len, rec_len, n, tail;
	int fd;

	(void)state;
	target_open(&t);
	/* The recorded session. */
	for (int i = 0; i < 16; i++)
		ni[i] = (uint8_t)(i * 7 + 3);
	req_len = make_request(&t, ni, req, sizeof(req));
	fd = raw_connect(&t);
	assert_int_equal(send(fd, req, req_len, MSG_NOSIGNAL), (ssize_t)req_len);
	assert_true(read_reply(fd, nr, mr));
	mac("rverbs-auth-R", ni, nr, &t, want);
	assert_memory_equal(mr, want, 32); /* the responder proved the secret */
	mac("rverbs-auth-I", ni, nr, &t, mi);
	rec_len = auth_frame(mi, rec, sizeof(rec));
	rec_len += write_frame(&t, 0x5a, rec + rec_len, sizeof(rec) - rec_len);
	assert_int_equal(rv_qp_recv(t.s.qp, NULL, 77), 0);
	assert_int_equal(send(fd, rec, rec_len, MSG_NOSIGNAL), (ssize_t)rec_len);
	tail = send_frame(tail_buf, sizeof(tail_buf));
	assert_int_equal(send(fd, tail_buf, tail, MSG_NOSIGNAL), (ssize_t)tail);
	expect_send_received(&t);
	assert_true(all_bytes(t.s.buf, 0x5a, 64)); /* authenticated: the WRITE landed */
	close(fd);

	/* The replay, against the same QP armed again for the same peer. */
	reset_target(&t);
	fd = raw_connect(&t);
	n = (size_t)send(fd, req, req_len, MSG_NOSIGNAL);
	assert_int_equal(n, req_len);
	assert_true(read_reply(fd, nr, mr)); /* a fresh nonce; it cannot answer it */
	write_frame(&t, 0x5b, w, sizeof(w));
	rec_len = auth_frame(mi, rec, sizeof(rec));
	rec_len += write_frame(&t, 0x5b, rec + rec_len, sizeof(rec) - rec_len);
	(void)!send(fd, rec, rec_len, MSG_NOSIGNAL);
	assert_true(closed_by_peer(fd));
	close(fd);
	assert_true(all_bytes(t.s.buf, 0x11, BUF));
	assert_int_not_equal(rv_qp_state_of(t.s.qp), RV_QPS_ERR);

	/* The real initiator still gets in. */
	ni[0] ^= 0xff;
	req_len = make_request(&t, ni, req, sizeof(req));
	fd = raw_connect(&t);
	assert_int_equal(send(fd, req, req_len, MSG_NOSIGNAL), (ssize_t)req_len);
	assert_true(read_reply(fd, nr, mr));
	mac("rverbs-auth-I", ni, nr, &t, mi);
	rec_len = auth_frame(mi, rec, sizeof(rec));
	rec_len += write_frame(&t, 0x5c, rec + rec_len, sizeof(rec) - rec_len);
	rec_len += send_frame(rec + rec_len, sizeof(rec) - rec_len);
	assert_int_equal(rv_qp_recv(t.s.qp, NULL, 77), 0);
	assert_int_equal(send(fd, rec, rec_len, MSG_NOSIGNAL), (ssize_t)rec_len);
	expect_send_received(&t);
	assert_true(all_bytes(t.s.buf, 0x5c, 64));
	close(fd);
	side_close(&t.s);
}

/* After MAC_R: a wrong MAC_I, or a WRITE before any MAC_I, is refused, nothing placed. */
static void test_soft_auth__bad_proof_or_data_first(void **state)
{
	(void)state;
	for (int kind = 0; kind < 3; kind++) {
		struct target t;
		uint8_t ni[16] = {1, 2, 3}, nr[16], mr[32], mi[32], req[256], buf[512];
		size_t len = 0;
		int fd;

		target_open(&t);
		ni[15] = (uint8_t)kind;
		fd = raw_connect(&t);
		len = make_request(&t, ni, req, sizeof(req));
		assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
		assert_true(read_reply(fd, nr, mr));
		mac("rverbs-auth-I", ni, nr, &t, mi);
		len = 0;
		if (kind == 0) { /* one bit wrong */
			mi[5] ^= 0x20;
			len = auth_frame(mi, buf, sizeof(buf));
		} else if (kind == 1) { /* the responder's own MAC reflected back */
			len = auth_frame(mr, buf, sizeof(buf));
		}
		len += write_frame(&t, 0x66, buf + len, sizeof(buf) - len); /* kind 2: data first */
		(void)!send(fd, buf, len, MSG_NOSIGNAL);
		assert_true(closed_by_peer(fd));
		close(fd);
		assert_true(all_bytes(t.s.buf, 0x11, BUF));
		assert_int_not_equal(rv_qp_state_of(t.s.qp), RV_QPS_ERR);
		side_close(&t.s);
	}
}

/* A request without the block, to a context with a secret: MPA reject, reason 9. */
static void test_soft_auth__no_block_gets_reject_9(void **state)
{
	struct target t;
	uint8_t pd[RV_SOFT_CPD_LEN], req[256], reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN];
	struct rv_soft_cpd c, rc;
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 2, .pd_len = sizeof(pd), .pd = pd};
	struct rv_mpa_frame r;
	int fd, n;

	(void)state;
	target_open(&t);
	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t.ep.gid, 16);
	c.port = FAKE_PORT;
	c.src_qpn = FAKE_QPN;
	c.dst_qpn = t.ep.qpn;
	c.rtr = RV_SOFT_RTR_P2P | RV_SOFT_RTR_WRITE;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	n = rv_wire_mpa_encode(req, sizeof(req), &f);
	fd = raw_connect(&t);
	assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
	assert_int_equal(recv_some(fd, reply, sizeof(reply)), sizeof(reply));
	assert_true(rv_wire_mpa_decode(reply, sizeof(reply), &r) > 0);
	assert_true(r.flags & RV_MPA_FLAG_REJECT);
	assert_true(rv_wire_cpd_decode(r.pd, r.pd_len, &rc) > 0);
	assert_int_equal(rc.reason, RV_SOFT_REJECT_AUTH);
	close(fd);
	side_close(&t.s);
}

/* The reply on fd is an MPA reject with this reason. */
static bool rejected_with(int fd, uint32_t reason)
{
	uint8_t reply[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN];
	struct rv_mpa_frame r;
	struct rv_soft_cpd rc;

	return recv_some(fd, reply, sizeof(reply)) == sizeof(reply) &&
	       rv_wire_mpa_decode(reply, sizeof(reply), &r) > 0 && (r.flags & RV_MPA_FLAG_REJECT) &&
	       rv_wire_cpd_decode(r.pd, r.pd_len, &rc) > 0 && rc.reason == reason;
}

/* Issue 16, item 3: a request for a QP still in INIT holds nothing unless it
 * proves the secret (MAC_Q): one with a made-up proof is rejected at once,
 * a copy of a held request too; a copy of a request that is no longer held
 * waits beside the real peer's, and at RTR only the real peer answers the
 * challenge and gets the QP. */
static void test_soft_auth__unproven_request_holds_nothing(void **state)
{
	struct target t;
	uint8_t ni_copy[16], ni_real[16], nr[16], mr[32], mi[32], req[256], buf[512];
	size_t len;
	int bogus, copy, dup, real;

	(void)state;
	side_open(&t.s, secret_a);
	assert_int_equal(rv_qp_endpoint(t.s.qp, &t.ep), 0);
	assert_int_equal(rv_qp_to_init(t.s.qp, NULL), 0);
	memset(ni_copy, 0x42, sizeof(ni_copy));
	memset(ni_real, 0x24, sizeof(ni_real));

	/* A dummy block (the MAC of another secret): refused, nothing held. */
	len = make_request(&t, ni_copy, req, sizeof(req));
	req[RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN + 30] ^= 1;
	bogus = raw_connect(&t);
	assert_int_equal(send(bogus, req, len, MSG_NOSIGNAL), (ssize_t)len);
	assert_true(rejected_with(bogus, RV_SOFT_REJECT_AUTH));
	close(bogus);

	/* A recorded request parks; the same request again is refused. */
	len = make_request(&t, ni_copy, req, sizeof(req));
	copy = raw_connect(&t);
	assert_int_equal(send(copy, req, len, MSG_NOSIGNAL), (ssize_t)len);
	dup = raw_connect(&t);
	assert_int_equal(send(dup, req, len, MSG_NOSIGNAL), (ssize_t)len);
	assert_true(rejected_with(dup, RV_SOFT_REJECT_AUTH));
	close(dup);

	/* The real peer's request is not refused because of the copy. */
	len = make_request(&t, ni_real, req, sizeof(req));
	real = raw_connect(&t);
	assert_int_equal(send(real, req, len, MSG_NOSIGNAL), (ssize_t)len);
	target_arm(&t); /* to RTR and RTS: both requests get their challenge */
	assert_true(read_reply(real, nr, mr));
	mac("rverbs-auth-I", ni_real, nr, &t, mi);
	len = auth_frame(mi, buf, sizeof(buf));
	len += write_frame(&t, 0x77, buf + len, sizeof(buf) - len);
	len += send_frame(buf + len, sizeof(buf) - len);
	assert_int_equal(rv_qp_recv(t.s.qp, NULL, 77), 0);
	assert_int_equal(send(real, buf, len, MSG_NOSIGNAL), (ssize_t)len);
	expect_send_received(&t);
	assert_true(all_bytes(t.s.buf, 0x77, 64));
	/* The copy got a challenge it cannot answer; it is closed. */
	assert_true(read_reply(copy, nr, mr));
	assert_true(closed_by_peer(copy));
	close(copy);
	assert_int_equal(rv_qp_state_of(t.s.qp), RV_QPS_RTS);
	close(real);
	side_close(&t.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_auth__sha256_vectors),
		cmocka_unit_test(test_soft_auth__hmac_rfc4231),
		cmocka_unit_test(test_soft_auth__bad_attr),
		cmocka_unit_test(test_soft_auth__secret_file),
		cmocka_unit_test(test_soft_auth__same_secret_connects),
		cmocka_unit_test(test_soft_auth__wrong_secret_rejected),
		cmocka_unit_test(test_soft_auth__one_side_without_secret_rejected),
		cmocka_unit_test(test_soft_auth__no_block_gets_reject_9),
		cmocka_unit_test(test_soft_auth__replay_rejected),
		cmocka_unit_test(test_soft_auth__bad_proof_or_data_first),
		cmocka_unit_test(test_soft_auth__unproven_request_holds_nothing),
	};

	/* The passive side of a refused connection fails its work after the setup limit. */
	setenv("RVERBS_SOFT_TIMEOUT_MS", "2000", 1);
	rv_set_log_handler(log_to_buffer, NULL);
	unsetenv("RVERBS_SOFT_SECRET_FILE");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
