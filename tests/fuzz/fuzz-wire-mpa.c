/*
 * libFuzzer target: the MPA connection setup parser of the software device
 * (lib/drivers/soft/wire.c: MPA request/reply frames, RFC 5044 §7.1, and the
 * rverbs private data they carry).
 *
 * Each input is used twice:
 *
 * 1. As the bytes a listener (or an initiator waiting for the reply) has
 *    read: rv_wire_mpa_decode, then rv_wire_cpd_decode on the private data,
 *    as conn.c does. libFuzzer's buffer is exactly the input's size, so
 *    AddressSanitizer catches a read past it. Checks: the frame length is
 *    20 + pd_len and within the input, the private data points inside the
 *    frame, every strict prefix decodes to "need more bytes", a refusal
 *    is -EBADMSG and stays a refusal with more bytes appended, and
 *    re-encoding gives back the input (reserved flag bits and the private
 *    data's reserved word aside).
 *
 * 2. As a description of a frame and its private data: encode, decode, and
 *    the fields must come back unchanged.
 *
 * Built and run by scripts/fuzz-wire; seed corpus in tests/fuzz/corpus/wire-mpa.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/wire/wire.h"

#define CHECK(cond)                                                                                   \
	do {                                                                                          \
		if (!(cond)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                                      \
		}                                                                                     \
	} while (0)

static void check_cpd(const uint8_t *pd, size_t len)
{
	struct rv_soft_cpd c, d;
	uint8_t enc[RV_SOFT_CPD_LEN], raw[RV_SOFT_CPD_LEN];
	int n = rv_wire_cpd_decode(pd, len, &c);

	if (n < 0) {
		CHECK(n == -EBADMSG);
		return;
	}
	CHECK(n == RV_SOFT_CPD_LEN && len >= RV_SOFT_CPD_LEN);
	CHECK(c.src_qpn <= 0xffffff && c.dst_qpn <= 0xffffff);
	CHECK(rv_wire_cpd_encode(enc, sizeof(enc), &c) == RV_SOFT_CPD_LEN);
	memcpy(raw, pd, RV_SOFT_CPD_LEN);
	CHECK(memcmp(enc, raw, RV_SOFT_CPD_LEN) == 0); /* every bit has a meaning: exact round trip */
	CHECK(rv_wire_cpd_decode(enc, sizeof(enc), &d) == RV_SOFT_CPD_LEN);
	CHECK(c.ird == d.ird && c.ord == d.ord && c.ird <= 0x3fff && c.ord <= 0x3fff && c.rtr == d.rtr &&
	      c.caps == d.caps && memcmp(c.gid, d.gid, 16) == 0 && c.port == d.port &&
	      c.min_rnr_timer == d.min_rnr_timer && c.rnr_retry == d.rnr_retry &&
	      c.src_qpn == d.src_qpn && c.dst_qpn == d.dst_qpn && c.reason == d.reason);
	CHECK(rv_wire_cpd_encode(enc, RV_SOFT_CPD_LEN - 1, &c) == -ENOSPC);
}

static void as_received(const uint8_t *data, size_t size)
{
	static uint8_t enc[RV_MPA_HDR_LEN + RV_MPA_PD_MAX], longer[RV_MPA_HDR_LEN + RV_MPA_PD_MAX + 1];
	struct rv_mpa_frame f, g;
	int n = rv_wire_mpa_decode(data, size, &f), m;

	if (n < 0) {
		CHECK(n == -EBADMSG);
		/* A refused prefix stays refused whatever follows (no waiting on garbage). */
		if (size < sizeof(longer)) {
			memcpy(longer, data, size);
			longer[size] = 0;
			CHECK(rv_wire_mpa_decode(longer, size + 1, &g) == -EBADMSG);
		}
		return;
	}
	if (n == 0)
		return;
	CHECK((size_t)n <= size && (size_t)n == RV_MPA_HDR_LEN + (size_t)f.pd_len);
	CHECK(f.pd_len <= RV_MPA_PD_MAX && (f.rev == 1 || f.rev == 2) && (f.flags & 0x0f) == 0);
	CHECK(f.pd_len == 0 ? f.pd == NULL : f.pd == data + RV_MPA_HDR_LEN);
	for (size_t k = 0; k < (size_t)n; k++)
		CHECK(rv_wire_mpa_decode(data, k, &g) == 0);
	m = rv_wire_mpa_encode(enc, sizeof(enc), &f);
	CHECK(m == n);
	CHECK(memcmp(enc, data, 16) == 0 && enc[16] == (data[16] & 0xf0) &&
	      memcmp(enc + 17, data + 17, (size_t)n - 17) == 0);
	CHECK(rv_wire_mpa_encode(enc, (size_t)n - 1, &f) == -ENOSPC);
	check_cpd(f.pd, f.pd_len);
}

static void structured(const uint8_t *data, size_t size)
{
	static uint8_t buf[RV_MPA_HDR_LEN + RV_MPA_PD_MAX], pd[RV_MPA_PD_MAX];
	struct rv_mpa_frame f, g;
	struct rv_soft_cpd c, d;
	size_t i = 0;
	int n;

	if (size < 4 + 29)
		return;
	memset(&f, 0, sizeof(f));
	f.reply = data[i] & 1;
	f.rev = (uint8_t)(data[i++] >> 1 & 3);
	f.flags = data[i++];
	f.pd_len = (uint16_t)((data[i] << 8 | data[i + 1]) % (RV_MPA_PD_MAX + 64));
	i += 2;
	memset(&c, 0, sizeof(c));
	c.ird = (uint16_t)((data[i] << 8 | data[i + 1]) & 0x3fff);
	c.ord = (uint16_t)((data[i + 2] << 8 | data[i + 3]) & 0x3fff);
	c.rtr = (uint8_t)(data[i] >> 4); /* RFC 6581 P2P/RTR bits */
	memcpy(c.gid, data + i + 4, 16);
	c.port = (uint16_t)(data[i + 20] << 8 | data[i + 21]);
	c.src_qpn = (uint32_t)data[i + 22] << 16 | (uint32_t)data[i + 23] << 8 | data[i + 24];
	c.dst_qpn = (uint32_t)data[i + 25] << 16 | (uint32_t)data[i + 26] << 8 | data[i + 27];
	c.reason = data[i + 28];
	i += 29;
	memset(pd, 0, sizeof(pd));
	CHECK(rv_wire_cpd_encode(pd, sizeof(pd), &c) == RV_SOFT_CPD_LEN);
	if (f.pd_len > RV_SOFT_CPD_LEN && f.pd_len <= RV_MPA_PD_MAX) {
		size_t extra = f.pd_len - RV_SOFT_CPD_LEN;
		if (extra > size - i)
			extra = size - i;
		memcpy(pd + RV_SOFT_CPD_LEN, data + i, extra);
	}
	f.pd = pd;

	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	if (f.pd_len > RV_MPA_PD_MAX || f.rev < 1 || f.rev > 2) {
		CHECK(n == -EINVAL);
		return;
	}
	CHECK(n == RV_MPA_HDR_LEN + f.pd_len);
	CHECK(rv_wire_mpa_decode(buf, (size_t)n, &g) == n);
	CHECK(g.reply == f.reply && g.rev == f.rev && g.flags == (f.flags & 0xf0) && g.pd_len == f.pd_len);
	CHECK(g.pd_len == 0 || memcmp(g.pd, pd, g.pd_len) == 0);
	if (f.pd_len >= RV_SOFT_CPD_LEN) {
		CHECK(rv_wire_cpd_decode(g.pd, g.pd_len, &d) == RV_SOFT_CPD_LEN);
		CHECK(d.ird == c.ird && d.ord == c.ord && d.rtr == c.rtr && memcmp(d.gid, c.gid, 16) == 0 &&
		      d.port == c.port &&
		      d.src_qpn == c.src_qpn && d.dst_qpn == c.dst_qpn && d.reason == c.reason);
	} else {
		CHECK(rv_wire_cpd_decode(g.pd, g.pd_len, &d) == -EBADMSG);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_received(data, size);
	structured(data, size);
	return 0;
}
