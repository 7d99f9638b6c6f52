/*
 * The pure parts of the connection helper: the exchange's message framing
 * and HELLO encoding (lib/conn/wire.c), "host:port" parsing, and the rdma_cm
 * transport's private data and attribute translation (lib/conn/cm.c). Every
 * decoder is fed truncated, oversized and corrupted bytes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "conn/cm.h"
#include "conn/sock.h"
#include "conn/wire.h"

static const char *F = "test";

static void sample_hello(struct rv_wire_hello *h, uint32_t n)
{
	static const uint8_t data[5] = {1, 2, 3, 4, 5};

	memset(h, 0, sizeof(*h));
	h->num_qps = n;
	h->required_caps = RV_EP_CAP_ATOMIC;
	for (uint32_t i = 0; i < n; i++) {
		h->ep[i].gid[10] = 0xff;
		h->ep[i].gid[11] = 0xff;
		h->ep[i].gid[12] = 10;
		h->ep[i].lid = 4791;
		h->ep[i].port_num = 1;
		h->ep[i].mtu = 3;
		h->ep[i].qpn = 0x100 + i;
		h->ep[i].psn = 0xabcde;
		h->ep[i].qp_type = 2;
		h->ep[i].caps = RV_EP_CAP_ATOMIC | RV_EP_CAP_SOFT;
		h->ep[i].mask = RV_ENDPOINT_MR;
		h->ep[i].mr_addr = 0x7f0000001000u;
		h->ep[i].mr_length = 4096;
		h->ep[i].mr_rkey = 0x1234;
	}
	h->data = data;
	h->data_len = sizeof(data);
}

static void test_conn_wire__header_round_trip_and_faults(void **state)
{
	uint8_t b[RV_WIRE_HDR_LEN];
	struct rv_wire_hdr h;

	(void)state;
	rv_wire_hdr_encode(b, RV_WIRE_RTU, 0);
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), 0);
	assert_int_equal(h.type, RV_WIRE_RTU);
	assert_int_equal(h.length, 0);
	/* Too short. */
	assert_int_equal(rv_wire_hdr_decode(b, 11, &h, F), -EBADMSG);
	/* Garbage (an HTTP request). */
	assert_int_equal(rv_wire_hdr_decode("GET / HTTP/1.1\r\n", 12, &h, F), -EBADMSG);
	assert_non_null(strstr(rv_error_last(), "RVCN"));
	/* Wrong version. */
	rv_wire_hdr_encode(b, RV_WIRE_REQ, 10);
	b[4] = 2;
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), -EPROTONOSUPPORT);
	assert_non_null(strstr(rv_error_last(), "version 2"));
	/* Unknown type, reserved flags. */
	rv_wire_hdr_encode(b, 9, 0);
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), -EBADMSG);
	rv_wire_hdr_encode(b, RV_WIRE_REQ, 10);
	b[7] = 1;
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), -EBADMSG);
	/* Oversized length fields, per type. */
	rv_wire_hdr_encode(b, RV_WIRE_REQ, RV_WIRE_PAYLOAD_MAX + 1);
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), -EMSGSIZE);
	rv_wire_hdr_encode(b, RV_WIRE_REQ, 0xffffffffu);
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), -EMSGSIZE);
	rv_wire_hdr_encode(b, RV_WIRE_RTU, 1);
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), -EMSGSIZE);
	rv_wire_hdr_encode(b, RV_WIRE_REQ, RV_WIRE_PAYLOAD_MAX);
	assert_int_equal(rv_wire_hdr_decode(b, sizeof(b), &h, F), 0);
}

static void test_conn_wire__hello_round_trip(void **state)
{
	static uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hello in, out;
	struct rv_wire_hdr h;
	int n;

	(void)state;
	for (uint32_t q = 1; q <= RV_CONN_MAX_QPS; q += 15) {
		sample_hello(&in, q);
		n = rv_wire_hello_encode(RV_WIRE_REP, &in, buf, sizeof(buf), F);
		assert_true(n > RV_WIRE_HDR_LEN);
		assert_int_equal(rv_wire_hdr_decode(buf, (size_t)n, &h, F), 0);
		assert_int_equal(h.type, RV_WIRE_REP);
		assert_int_equal(h.length, (uint32_t)n - RV_WIRE_HDR_LEN);
		assert_int_equal(rv_wire_hello_decode(buf + RV_WIRE_HDR_LEN, h.length, &out, F), 0);
		assert_int_equal(out.num_qps, q);
		assert_int_equal(out.required_caps, RV_EP_CAP_ATOMIC);
		assert_int_equal(out.data_len, 5);
		assert_memory_equal(out.data, in.data, 5);
		for (uint32_t i = 0; i < q; i++) {
			assert_int_equal(out.ep[i].qpn, 0x100 + i);
			assert_int_equal(out.ep[i].mr_rkey, 0x1234);
			assert_memory_equal(out.ep[i].gid, in.ep[i].gid, 16);
		}
	}
	/* A capability bit a later library offers is dropped, not refused: a
	 * newer peer still connects (an unknown *required* bit is refused,
	 * below). */
	sample_hello(&in, 2);
	in.ep[1].caps |= 1u << 30;
	n = rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F);
	assert_true(n > RV_WIRE_HDR_LEN);
	assert_int_equal(rv_wire_hello_decode(buf + RV_WIRE_HDR_LEN, (size_t)n - RV_WIRE_HDR_LEN, &out, F), 0);
	assert_int_equal(out.ep[1].caps, RV_EP_CAP_ATOMIC | RV_EP_CAP_SOFT);
	/* The largest HELLO fits RV_WIRE_PAYLOAD_MAX. */
	sample_hello(&in, RV_CONN_MAX_QPS);
	static uint8_t big[RV_CONN_PRIVATE_DATA_MAX];
	in.data = big;
	in.data_len = sizeof(big);
	for (uint32_t i = 0; i < in.num_qps; i++) {
		in.ep[i].mask |= RV_ENDPOINT_USER_DATA;
		in.ep[i].user_data_len = RV_ENDPOINT_USER_DATA_MAX;
	}
	n = rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F);
	assert_true(n > 0 && n <= (int)sizeof(buf));
	/* Limits on input. */
	in.num_qps = 0;
	assert_int_equal(rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F), -EINVAL);
	in.num_qps = 1;
	in.data_len = RV_CONN_PRIVATE_DATA_MAX + 1;
	assert_int_equal(rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F), -EINVAL);
	in.data_len = 1;
	assert_int_equal(rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, 20, F), -ENOSPC);
}

static void test_conn_wire__hello_rejects_every_truncation_and_corruption(void **state)
{
	static uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hello in, out;
	uint8_t *p = buf + RV_WIRE_HDR_LEN;
	size_t len;
	int n;

	(void)state;
	sample_hello(&in, 3);
	n = rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F);
	len = (size_t)n - RV_WIRE_HDR_LEN;
	for (size_t l = 0; l < len; l++)
		assert_int_not_equal(rv_wire_hello_decode(p, l, &out, F), 0);
	/* Every single-byte corruption either decodes to a valid HELLO or is rejected: no crash. */
	for (size_t i = 0; i < len; i++) {
		uint8_t save = p[i];
		p[i] ^= 0xa5;
		(void)rv_wire_hello_decode(p, len, &out, F);
		p[i] = save;
	}
	/* Specific faults. */
	p[0] = 0;
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[0] = RV_CONN_MAX_QPS + 1;
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[0] = 3;
	p[1] = 1;
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[1] = 0;
	p[2] = 0xff; /* private data length 65285: within the limit, but not there */
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[2] = 0;
	p[7] = 0x80; /* an unknown required capability */
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[7] = RV_EP_CAP_ATOMIC;
	p[8] = 0xff; /* the first endpoint claims more bytes than there are */
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[8] = 0;
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), 0);
	/* Trailing garbage after the announced data. */
	assert_int_equal(rv_wire_hello_decode(p, len + 1, &out, F), -EBADMSG);
}

/* Random bytes, and random payloads behind a valid header: never a crash,
 * never an accepted HELLO whose fields are out of range. */
static void test_conn_wire__random_input(void **state)
{
	static uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hello h;
	struct rv_wire_reject r;
	struct rv_wire_auth au;
	struct rv_wire_hdr hd;
	uint32_t x = 12345;

	(void)state;
	for (int it = 0; it < 20000; it++) {
		size_t len = (x = x * 1103515245u + 12345u) % 600;
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
		if (it % 2)
			buf[RV_WIRE_HDR_LEN] = (uint8_t)(1 + it % 3); /* plausible QP counts */
		(void)rv_wire_hdr_decode(buf, len, &hd, F);
		(void)rv_wire_reject_decode(buf, len, &r, F);
		(void)rv_wire_auth_decode(buf, len, &au, F);
		if (rv_wire_hello_decode(buf, len, &h, F) == 0) {
			assert_true(h.num_qps >= 1 && h.num_qps <= RV_CONN_MAX_QPS);
			assert_true(h.data_len <= RV_CONN_PRIVATE_DATA_MAX);
			for (uint32_t q = 0; q < h.num_qps; q++)
				assert_true(h.ep[q].qpn <= 0xffffff && h.ep[q].user_data_len <= RV_ENDPOINT_USER_DATA_MAX);
		}
	}
}

static void test_conn_wire__reject_round_trip(void **state)
{
	uint8_t buf[RV_WIRE_HDR_LEN + 6 + RV_WIRE_REJECT_TEXT_MAX];
	char long_text[400];
	struct rv_wire_reject r;
	struct rv_wire_hdr h;
	int n;

	(void)state;
	n = rv_wire_reject_encode(EPROTO, "incompatible\x01 QP types", buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(rv_wire_hdr_decode(buf, (size_t)n, &h, F), 0);
	assert_int_equal(rv_wire_reject_decode(buf + RV_WIRE_HDR_LEN, h.length, &r, F), 0);
	assert_int_equal(r.errnum, EPROTO);
	assert_string_equal(r.text, "incompatible? QP types");
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	n = rv_wire_reject_encode(ETIMEDOUT, long_text, buf, sizeof(buf));
	assert_int_equal(n, (int)sizeof(buf));
	assert_int_equal(rv_wire_reject_decode(buf + RV_WIRE_HDR_LEN, (size_t)n - RV_WIRE_HDR_LEN, &r, F), 0);
	assert_int_equal(strlen(r.text), RV_WIRE_REJECT_TEXT_MAX);
	assert_int_equal(rv_wire_reject_decode(buf + RV_WIRE_HDR_LEN, 5, &r, F), -EBADMSG);
	assert_int_equal(rv_wire_reject_decode(buf + RV_WIRE_HDR_LEN, 10, &r, F), -EBADMSG);
	/* A nonsense errno becomes ECONNREFUSED. */
	buf[RV_WIRE_HDR_LEN] = 0x7f;
	assert_int_equal(rv_wire_reject_decode(buf + RV_WIRE_HDR_LEN, (size_t)n - RV_WIRE_HDR_LEN, &r, F), 0);
	assert_int_equal(r.errnum, ECONNREFUSED);
}

/* The AUTH message of an exchange under a shared secret: round trip, exact
 * length, known steps, zero reserved bytes, its header's length limit. */
static void test_conn_wire__auth_round_trip_and_faults(void **state)
{
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_AUTH_LEN];
	struct rv_wire_auth a, d;
	struct rv_wire_hdr h;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.step = RV_AUTH_CHALLENGE;
	for (int i = 0; i < RV_WIRE_AUTH_NONCE_LEN; i++)
		a.nonce[i] = (uint8_t)i;
	for (int i = 0; i < RV_WIRE_AUTH_MAC_LEN; i++)
		a.mac[i] = (uint8_t)(0x80 + i);
	assert_int_equal(rv_wire_auth_encode(&a, buf), (int)sizeof(buf));
	assert_int_equal(rv_wire_hdr_decode(buf, RV_WIRE_HDR_LEN, &h, F), 0);
	assert_int_equal(h.type, RV_WIRE_AUTH);
	assert_int_equal(h.length, RV_WIRE_AUTH_LEN);
	assert_string_equal(rv_wire_type_name(RV_WIRE_AUTH), "AUTH");
	assert_int_equal(rv_wire_auth_decode(buf + RV_WIRE_HDR_LEN, h.length, &d, F), 0);
	assert_int_equal(d.step, RV_AUTH_CHALLENGE);
	assert_memory_equal(d.nonce, a.nonce, sizeof(a.nonce));
	assert_memory_equal(d.mac, a.mac, sizeof(a.mac));
	/* Not exactly 52 bytes. */
	assert_int_equal(rv_wire_auth_decode(buf + RV_WIRE_HDR_LEN, RV_WIRE_AUTH_LEN - 1, &d, F), -EBADMSG);
	assert_int_equal(rv_wire_auth_decode(buf + RV_WIRE_HDR_LEN, 0, &d, F), -EBADMSG);
	/* A longer AUTH is refused by its header, before it is read. */
	rv_wire_hdr_encode(buf, RV_WIRE_AUTH, RV_WIRE_AUTH_LEN + 1);
	assert_int_equal(rv_wire_hdr_decode(buf, RV_WIRE_HDR_LEN, &h, F), -EMSGSIZE);
	rv_wire_auth_encode(&a, buf);
	/* Unknown steps, reserved bytes. */
	buf[RV_WIRE_HDR_LEN] = 0;
	assert_int_equal(rv_wire_auth_decode(buf + RV_WIRE_HDR_LEN, RV_WIRE_AUTH_LEN, &d, F), -EBADMSG);
	buf[RV_WIRE_HDR_LEN] = RV_AUTH_REP_MAC + 1;
	assert_int_equal(rv_wire_auth_decode(buf + RV_WIRE_HDR_LEN, RV_WIRE_AUTH_LEN, &d, F), -EBADMSG);
	assert_non_null(strstr(rv_error_last(), "unknown step"));
	buf[RV_WIRE_HDR_LEN] = RV_AUTH_HELLO;
	buf[RV_WIRE_HDR_LEN + 2] = 1;
	assert_int_equal(rv_wire_auth_decode(buf + RV_WIRE_HDR_LEN, RV_WIRE_AUTH_LEN, &d, F), -EBADMSG);
	assert_non_null(strstr(rv_error_last(), "reserved"));
}

static void test_conn_wire__addr_parse(void **state)
{
	char host[RV_HOST_MAX], port[RV_PORT_MAX];

	(void)state;
	assert_int_equal(rv_addr_parse("127.0.0.1:7471", host, port, F), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_string_equal(port, "7471");
	assert_int_equal(rv_addr_parse("[::1]:0", host, port, F), 0);
	assert_string_equal(host, "::1");
	assert_string_equal(port, "0");
	assert_int_equal(rv_addr_parse("*:80", host, port, F), 0);
	assert_string_equal(host, "");
	assert_int_equal(rv_addr_parse(":80", host, port, F), 0);
	assert_string_equal(host, "");
	assert_int_equal(rv_addr_parse("node-1.example:65535", host, port, F), 0);
	assert_string_equal(host, "node-1.example");
	assert_int_equal(rv_addr_parse("localhost", host, port, F), -EINVAL);
	assert_int_equal(rv_addr_parse("::1:80", host, port, F), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "brackets"));
	assert_int_equal(rv_addr_parse("[::1]80", host, port, F), -EINVAL);
	assert_int_equal(rv_addr_parse("h:65536", host, port, F), -EINVAL);
	assert_int_equal(rv_addr_parse("h:-1", host, port, F), -EINVAL);
	assert_int_equal(rv_addr_parse("h:", host, port, F), -EINVAL);
	assert_int_equal(rv_addr_parse("h:8x", host, port, F), -EINVAL);
	assert_int_equal(rv_addr_parse(NULL, host, port, F), -EINVAL);
}

static void test_conn_wire__cm_private_data(void **state)
{
	uint8_t buf[64];
	struct rv_cm_pdata in, out;
	int n;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.caps = RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM;
	in.has_mr = true;
	in.mr_addr = 0x123456789au;
	in.mr_length = 1u << 20;
	in.mr_rkey = 0xdeadbeef;
	in.data_len = RV_CONN_CM_PRIVATE_DATA_MAX;
	memset(in.data, 0x5a, in.data_len);
	n = rv_cm_pdata_encode(&in, buf, sizeof(buf));
	/* It fits an InfiniBand REQ through rdma_cm (56 bytes). */
	assert_true(n > 0 && n <= 56);
	assert_int_equal(rv_cm_pdata_decode(buf, (size_t)n, &out, F), 0);
	assert_int_equal(out.caps, in.caps);
	assert_true(out.has_mr);
	assert_int_equal(out.mr_addr, in.mr_addr);
	assert_int_equal(out.mr_length, in.mr_length);
	assert_int_equal(out.mr_rkey, in.mr_rkey);
	assert_int_equal(out.data_len, in.data_len);
	assert_memory_equal(out.data, in.data, in.data_len);
	/* The CM pads with zeros: longer input is fine. */
	memset(buf + n, 0, sizeof(buf) - (size_t)n);
	assert_int_equal(rv_cm_pdata_decode(buf, sizeof(buf), &out, F), 0);
	for (int l = 0; l < n; l++)
		assert_int_not_equal(rv_cm_pdata_decode(buf, (size_t)l, &out, F), 0);
	assert_int_equal(rv_cm_pdata_decode(NULL, 0, &out, F), -EBADMSG);
	buf[2] = 9;
	assert_int_equal(rv_cm_pdata_decode(buf, (size_t)n, &out, F), -EPROTONOSUPPORT);
	buf[2] = 1;
	buf[3] = 4; /* an unknown flag */
	assert_int_equal(rv_cm_pdata_decode(buf, (size_t)n, &out, F), -EBADMSG);
	buf[3] = 3; /* the UD flag without its bytes */
	assert_int_equal(rv_cm_pdata_decode(buf, (size_t)n, &out, F), -EBADMSG);
	buf[3] = 1;
	buf[28] = (uint8_t)(sizeof(buf) - 29 + 1); /* more than is there */
	assert_int_equal(rv_cm_pdata_decode(buf, sizeof(buf), &out, F), -EBADMSG);
}

/* A UD request over rdma_cm (SIDR names no QP): the client's QP number,
 * Q_Key, GID and LID follow the data (flags bit 1), and the whole fits a
 * SIDR REQ's 180 bytes for the user. */
static void test_conn_wire__cm_private_data_ud(void **state)
{
	uint8_t buf[RV_CM_PDATA_MAX];
	struct rv_cm_pdata in, out;
	int n;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.data_len = RV_CONN_CM_PRIVATE_DATA_MAX;
	memset(in.data, 0xa5, in.data_len);
	in.has_ud = true;
	in.ud_qpn = 0x123456;
	in.ud_qkey = 0x01234567;
	for (int i = 0; i < 16; i++)
		in.ud_gid[i] = (uint8_t)(0xf0 + i);
	in.ud_lid = 0xbeef;
	n = rv_cm_pdata_encode(&in, buf, sizeof(buf));
	assert_int_equal(n, RV_CM_PDATA_FIXED + RV_CONN_CM_PRIVATE_DATA_MAX + RV_CM_PDATA_UD);
	assert_true(n <= 180);
	assert_int_equal(rv_cm_pdata_encode(&in, buf, (size_t)n - 1), -EMSGSIZE);
	assert_int_equal(rv_cm_pdata_decode(buf, (size_t)n, &out, F), 0);
	assert_true(out.has_ud);
	assert_false(out.has_mr);
	assert_int_equal(out.ud_qpn, in.ud_qpn);
	assert_int_equal(out.ud_qkey, in.ud_qkey);
	assert_memory_equal(out.ud_gid, in.ud_gid, 16);
	assert_int_equal(out.ud_lid, in.ud_lid);
	assert_int_equal(out.data_len, in.data_len);
	assert_memory_equal(out.data, in.data, in.data_len);
	for (int l = 0; l < n; l++)
		assert_int_not_equal(rv_cm_pdata_decode(buf, (size_t)l, &out, F), 0);
	/* Without the flag, the same bytes are an RC request: no QP in it. */
	buf[3] = 0;
	assert_int_equal(rv_cm_pdata_decode(buf, (size_t)n, &out, F), 0);
	assert_false(out.has_ud);
}

/* UD connections: the Q_Keys follow the private data (flags bit 0); a
 * HELLO with an unknown flag, or with the bit but not the bytes, is refused. */
static void test_conn_wire__hello_carries_ud_qkeys(void **state)
{
	static uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	struct rv_wire_hello in, out;
	uint8_t *p = buf + RV_WIRE_HDR_LEN;
	size_t len;
	int n;

	(void)state;
	sample_hello(&in, 3);
	in.has_qkeys = true;
	for (uint32_t i = 0; i < 3; i++) {
		in.ep[i].qp_type = 4;
		in.qkey[i] = 0x80000000u + i;
	}
	n = rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F);
	assert_true(n > 0);
	len = (size_t)n - RV_WIRE_HDR_LEN;
	assert_int_equal(p[1], RV_WIRE_HELLO_QKEYS);
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), 0);
	assert_true(out.has_qkeys);
	assert_int_equal(out.data_len, 5);
	assert_memory_equal(out.data, in.data, 5);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(out.qkey[i], 0x80000000u + i);
	for (size_t l = 0; l < len; l++)
		assert_int_not_equal(rv_wire_hello_decode(p, l, &out, F), 0);
	p[1] = 0x03; /* an unknown flag */
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[1] = 0; /* the Q_Keys' bytes read as private data the HELLO did not announce */
	assert_int_equal(rv_wire_hello_decode(p, len, &out, F), -EBADMSG);
	p[1] = RV_WIRE_HELLO_QKEYS;
	assert_int_equal(rv_wire_hello_decode(p, len - 4, &out, F), -EBADMSG); /* one Q_Key short */
	/* Without UD QPs nothing follows the data and the flags stay 0. */
	in.has_qkeys = false;
	n = rv_wire_hello_encode(RV_WIRE_REQ, &in, buf, sizeof(buf), F);
	assert_int_equal(p[1], 0);
	assert_int_equal(rv_wire_hello_decode(p, (size_t)n - RV_WIRE_HDR_LEN, &out, F), 0);
	assert_false(out.has_qkeys);
}

/* Each rdma_cm transport's edge: the limit fits its message exactly, one
 * more byte does not (IB CM REQ 56 and REP 196 for the user, rdma_conn_param
 * 255 on iWARP), and a peer announcing more than any transport carries is
 * refused. */
static void test_conn_wire__cm_private_data_limits(void **state)
{
	static const struct {
		bool iwarp, reply;
		uint32_t limit;
		int message;
	} edges[] = {
		{false, false, RV_CONN_CM_PRIVATE_DATA_MAX, 56},
		{false, true, RV_CONN_CM_REPLY_PRIVATE_DATA_MAX, 196},
		{true, false, RV_CONN_CM_IWARP_PRIVATE_DATA_MAX, 255},
		{true, true, RV_CONN_CM_IWARP_PRIVATE_DATA_MAX, 255},
	};
	uint8_t buf[RV_CM_PDATA_MAX + 16];
	struct rv_cm_pdata in, out;

	(void)state;
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		assert_int_equal(rv_cm_pdata_max(edges[i].iwarp, edges[i].reply), edges[i].limit);
		memset(&in, 0, sizeof(in));
		in.has_mr = true;
		in.data_len = edges[i].limit;
		memset(in.data, (int)i + 1, in.data_len);
		assert_int_equal(rv_cm_pdata_encode(&in, buf, sizeof(buf)), edges[i].message);
		assert_int_equal(rv_cm_pdata_decode(buf, (size_t)edges[i].message, &out, F), 0);
		assert_int_equal(out.data_len, edges[i].limit);
		assert_memory_equal(out.data, in.data, in.data_len);
		/* limit + 1 no longer fits the transport's message. */
		in.data_len = edges[i].limit + 1;
		if (in.data_len <= RV_CONN_CM_IWARP_PRIVATE_DATA_MAX)
			assert_true(rv_cm_pdata_encode(&in, buf, sizeof(buf)) > edges[i].message);
	}
	in.data_len = RV_CONN_CM_IWARP_PRIVATE_DATA_MAX + 1;
	assert_int_equal(rv_cm_pdata_encode(&in, buf, sizeof(buf)), -EMSGSIZE);
	in.data_len = RV_CONN_CM_IWARP_PRIVATE_DATA_MAX;
	assert_int_equal(rv_cm_pdata_encode(&in, buf, RV_CM_PDATA_FIXED + RV_CONN_CM_IWARP_PRIVATE_DATA_MAX - 1), -EMSGSIZE); /* no room */
	memset(buf, 0, sizeof(buf));
	buf[0] = 'R';
	buf[1] = 'V';
	buf[2] = 1;
	buf[28] = RV_CONN_CM_IWARP_PRIVATE_DATA_MAX + 1; /* a hostile peer announces more */
	assert_int_equal(rv_cm_pdata_decode(buf, sizeof(buf), &out, F), -EBADMSG);
}

static void test_conn_wire__cm_qp_attr_translation(void **state)
{
	struct ibv_qp_attr ia;
	rv_qp_attr a;

	(void)state;
	memset(&ia, 0, sizeof(ia));
	ia.qp_state = IBV_QPS_RTR;
	ia.path_mtu = IBV_MTU_1024;
	ia.dest_qp_num = 0x1234;
	ia.rq_psn = 0x777;
	ia.max_dest_rd_atomic = 4;
	ia.min_rnr_timer = 12;
	ia.ah_attr.is_global = 1;
	ia.ah_attr.grh.dgid.raw[15] = 9;
	ia.ah_attr.grh.hop_limit = 64;
	ia.ah_attr.grh.sgid_index = 3;
	ia.ah_attr.dlid = 17;
	ia.ah_attr.port_num = 1;
	rv_cm_qp_attr_from_ibv(&ia, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_RATE_LIMIT,
			       &a);
	assert_int_equal(a.mask, RV_QP_STATE | RV_QP_AV | RV_QP_PATH_MTU | RV_QP_DEST_QPN | RV_QP_RQ_PSN |
					 RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_MIN_RNR_TIMER);
	assert_int_equal(a.qp_state, RV_QPS_RTR);
	assert_int_equal(a.path_mtu, RV_MTU_1024);
	assert_int_equal(a.dest_qp_num, 0x1234);
	assert_int_equal(a.rq_psn, 0x777);
	assert_int_equal(a.max_dest_rd_atomic, 4);
	assert_int_equal(a.ah_attr.is_global, 1);
	assert_int_equal(a.ah_attr.dgid[15], 9);
	assert_int_equal(a.ah_attr.hop_limit, 64);
	assert_int_equal(a.ah_attr.sgid_index, 3);
	assert_int_equal(a.ah_attr.dlid, 17);
	assert_int_equal(a.ah_attr.port_num, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_wire__header_round_trip_and_faults),
		cmocka_unit_test(test_conn_wire__hello_round_trip),
		cmocka_unit_test(test_conn_wire__hello_rejects_every_truncation_and_corruption),
		cmocka_unit_test(test_conn_wire__hello_carries_ud_qkeys),
		cmocka_unit_test(test_conn_wire__random_input),
		cmocka_unit_test(test_conn_wire__reject_round_trip),
		cmocka_unit_test(test_conn_wire__auth_round_trip_and_faults),
		cmocka_unit_test(test_conn_wire__addr_parse),
		cmocka_unit_test(test_conn_wire__cm_private_data),
		cmocka_unit_test(test_conn_wire__cm_private_data_ud),
		cmocka_unit_test(test_conn_wire__cm_private_data_limits),
		cmocka_unit_test(test_conn_wire__cm_qp_attr_translation),
	};
	return cmocka_run_group_tests_name("conn-wire", tests, NULL, NULL);
}
