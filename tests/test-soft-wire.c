/*
 * The software device's wire module (lib/drivers/soft/wire/wire.c) and CRC32c:
 * known vectors, encode/decode round trips, and hostile input (truncated,
 * corrupted, garbage) that must be rejected without reading out of bounds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/soft/wire/crc32c.h"
#include "drivers/soft/wire/wire.h"

static void test_soft_wire__crc32c_known_vectors(void **state)
{
	uint8_t zeros[32], ones[32], inc[32];

	(void)state;
	memset(zeros, 0, sizeof(zeros));
	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = (uint8_t)i;
	assert_int_equal(rv_crc32c(0, "123456789", 9), 0xE3069283u);
	/* RFC 3720 §B.4 */
	assert_int_equal(rv_crc32c(0, zeros, 32), 0x8A9136AAu);
	assert_int_equal(rv_crc32c(0, ones, 32), 0x62A8AB43u);
	assert_int_equal(rv_crc32c(0, inc, 32), 0x46DD794Eu);
	assert_int_equal(rv_crc32c(0, "", 0), 0);
}

static void test_soft_wire__crc32c_is_incremental(void **state)
{
	uint8_t buf[1000];

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t cut = 0; cut <= sizeof(buf); cut += 37)
		assert_int_equal(rv_crc32c(rv_crc32c(0, buf, cut), buf + cut, sizeof(buf) - cut),
				 rv_crc32c(0, buf, sizeof(buf)));
	/* The hardware path (where there is one) and the table agree, at every alignment. */
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len < 200; len += 7)
			assert_int_equal(rv_crc32c(0x1234, buf + off, len), rv_crc32c_portable(0x1234, buf + off, len));
	assert_int_equal(rv_crc32c_portable(0, "123456789", 9), 0xE3069283u);
}

/* Long buffers take the three-stream path (rounds of 3 KiB and 384 bytes):
 * it must agree with the table at every length around the round sizes. */
static void test_soft_wire__crc32c_long_buffers(void **state)
{
	static uint8_t buf[20000];
	uint32_t x = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t len = 300; len < 8000; len += 11)
		for (size_t off = 0; off < 3; off++)
			assert_int_equal(rv_crc32c(0xdeadbeef, buf + off, len),
					 rv_crc32c_portable(0xdeadbeef, buf + off, len));
	assert_int_equal(rv_crc32c(0, buf, sizeof(buf)), rv_crc32c_portable(0, buf, sizeof(buf)));
	assert_int_equal(rv_crc32c(rv_crc32c(0, buf, 7777), buf + 7777, sizeof(buf) - 7777),
			 rv_crc32c(0, buf, sizeof(buf)));
}

/* Every implementation this CPU has (crc32c.c chooses one per length at run
 * time) agrees with the table: lengths around the folding's 256/64/16-byte
 * steps, every alignment, chained starting values, the RFC 3720 vectors. */
static void test_soft_wire__crc32c_every_implementation(void **state)
{
	static const enum rv_crc32c_impl impls[] = {RV_CRC32C_TABLE, RV_CRC32C_SSE42, RV_CRC32C_FOLD,
						    RV_CRC32C_FOLD256, RV_CRC32C_FOLD128, RV_CRC32C_HYBRID256};
	static uint8_t buf[70000];
	uint8_t zeros[32] = {0}, ones[32], inc[32];
	uint32_t x = 777;
	int ran = 0;

	(void)state;
	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
		uint32_t c = 0;

		if (!rv_crc32c_with(impls[k], &c, buf, 4096))
			continue; /* not on this CPU */
		ran++;
		assert_int_equal(c, rv_crc32c_portable(0, buf, 4096));
		for (size_t len = 256; len < 1400; len++)
			for (size_t off = 0; off < 64; off += 13) {
				c = 0x5eed0000u + (uint32_t)len;
				assert_true(rv_crc32c_with(impls[k], &c, buf + off, len));
				assert_int_equal(c, rv_crc32c_portable(0x5eed0000u + (uint32_t)len, buf + off, len));
			}
		for (size_t len = 1400; len <= sizeof(buf) - 64; len = len * 3 / 2 + 1) {
			c = 0xffffffffu;
			assert_true(rv_crc32c_with(impls[k], &c, buf + 1, len));
			assert_int_equal(c, rv_crc32c_portable(0xffffffffu, buf + 1, len));
		}
		c = 0;
		assert_true(rv_crc32c_with(impls[k], &c, buf, sizeof(buf)));
		assert_int_equal(c, rv_crc32c_portable(0, buf, sizeof(buf)));
		/* 65 536 bytes of each RFC 3720 pattern: the 32-byte vectors
		 * repeated, checked against the table. */
		for (int pat = 0; pat < 3; pat++) {
			static uint8_t big[65536];
			const uint8_t *src = pat == 0 ? zeros : pat == 1 ? ones : inc;
			for (size_t i = 0; i < sizeof(big); i += 32)
				memcpy(big + i, src, 32);
			c = 0;
			assert_true(rv_crc32c_with(impls[k], &c, big, sizeof(big)));
			assert_int_equal(c, rv_crc32c_portable(0, big, sizeof(big)));
			if (impls[k] == RV_CRC32C_TABLE || impls[k] == RV_CRC32C_SSE42) { /* the vectors are 32 bytes */
				c = 0;
				assert_true(rv_crc32c_with(impls[k], &c, src, 32));
				assert_int_equal(c, pat == 0 ? 0x8A9136AAu : pat == 1 ? 0x62A8AB43u : 0x46DD794Eu);
			}
		}
	}
	assert_true(ran >= 1); /* the table at least */
}

static uint64_t crc_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Each folding path (those this CPU has) against the table on seeded random
 * data: every length up to 4096 at a random alignment and starting value,
 * then large buffers (up to 1 MiB + odd tails). rv_crc32c itself (whatever it
 * dispatches to) must agree at every length too, including below the
 * folding's minimum. */
static void test_soft_wire__crc32c_folding_random(void **state)
{
	static const enum rv_crc32c_impl impls[] = {RV_CRC32C_FOLD128, RV_CRC32C_FOLD256, RV_CRC32C_FOLD,
						    RV_CRC32C_HYBRID256};
	/* Around the hybrid path's chunk of 7 936 bytes (one, two and four
	 * chunks, with no, a short and a long remainder) and large buffers. */
	static const size_t big[] = {7935,  7936,  7937,  7936 + 127, 7936 + 128, 15872, 15872 + 7935,
				     31744 + 1024 + 28, 32768, 65536, 65536 + 15, 262144 + 129, 1048576,
				     1048576 + 4096 + 77};
	const size_t size = (1u << 20) + 8192;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint8_t *buf = malloc(size);
	int ran = 0;

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(crc_rand(&seed) >> 29);
	for (size_t len = 0; len <= 4096; len++) {
		size_t off = (size_t)(crc_rand(&seed) % 64);
		uint32_t start = (uint32_t)crc_rand(&seed);
		uint32_t want = rv_crc32c_portable(start, buf + off, len);
		assert_int_equal(rv_crc32c(start, buf + off, len), want);
		for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
			uint32_t c = start;
			if (rv_crc32c_with(impls[k], &c, buf + off, len)) {
				assert_int_equal(c, want);
				ran++;
			} else {
				assert_int_equal(c, start); /* untouched when refused */
			}
		}
	}
	for (size_t b = 0; b < sizeof(big) / sizeof(big[0]); b++) {
		size_t off = (size_t)(crc_rand(&seed) % 4096);
		uint32_t start = (uint32_t)crc_rand(&seed);
		uint32_t want = rv_crc32c_portable(start, buf + off, big[b]);
		assert_int_equal(rv_crc32c(start, buf + off, big[b]), want);
		for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
			uint32_t c = start;
			if (rv_crc32c_with(impls[k], &c, buf + off, big[b]))
				assert_int_equal(c, want);
		}
	}
	/* A corrupted byte anywhere changes every path's result. */
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
		uint32_t c0 = 0, c1 = 0;
		size_t at = (size_t)(crc_rand(&seed) % 4096);
		if (!rv_crc32c_with(impls[k], &c0, buf, 4096))
			continue;
		buf[at] ^= 0x10;
		assert_true(rv_crc32c_with(impls[k], &c1, buf, 4096));
		buf[at] ^= 0x10;
		assert_int_not_equal(c0, c1);
	}
	free(buf);
	if (ran == 0)
		print_message("no folding path on this CPU: checked rv_crc32c against the table only\n");
}

static void test_soft_wire__mpa_round_trip(void **state)
{
	uint8_t pd[RV_SOFT_CPD_LEN], buf[600];
	struct rv_soft_cpd c = {.ird = 32, .ord = 16, .port = 4791, .src_qpn = 0xabcdef, .dst_qpn = 0x12,
				.reason = 0};
	struct rv_soft_cpd c2;
	struct rv_mpa_frame f, g;
	int n;

	(void)state;
	for (int i = 0; i < 16; i++)
		c.gid[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(rv_wire_cpd_encode(pd, sizeof(pd), &c), RV_SOFT_CPD_LEN);
	for (int reply = 0; reply < 2; reply++) {
		f = (struct rv_mpa_frame){.reply = reply, .flags = RV_MPA_FLAG_CRC | (reply ? RV_MPA_FLAG_REJECT : 0),
					  .rev = 1, .pd_len = sizeof(pd), .pd = pd};
		n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
		assert_int_equal(n, RV_MPA_HDR_LEN + RV_SOFT_CPD_LEN);
		assert_memory_equal(buf, reply ? "MPA ID Rep Frame" : "MPA ID Req Frame", 16);
		assert_int_equal(rv_wire_mpa_decode(buf, (size_t)n, &g), n);
		assert_int_equal(g.reply, reply);
		assert_int_equal(g.flags, f.flags);
		assert_int_equal(g.rev, 1);
		assert_int_equal(g.pd_len, RV_SOFT_CPD_LEN);
		assert_int_equal(rv_wire_cpd_decode(g.pd, g.pd_len, &c2), RV_SOFT_CPD_LEN);
		assert_int_equal(c2.ird, c.ird);
		assert_int_equal(c2.ord, c.ord);
		assert_memory_equal(c2.gid, c.gid, 16);
		assert_int_equal(c2.port, c.port);
		assert_int_equal(c2.src_qpn, c.src_qpn);
		assert_int_equal(c2.dst_qpn, c.dst_qpn);
		assert_int_equal(c2.reason, c.reason);
		/* Every prefix asks for more bytes. */
		for (int k = 0; k < n; k++)
			assert_int_equal(rv_wire_mpa_decode(buf, (size_t)k, &g), 0);
	}
	assert_int_equal(rv_wire_mpa_encode(buf, 10, &f), -ENOSPC);
}

/* Revision 2 private data: the RFC 6581 IRD/ORD words lead, with the RTR bits. */
static void test_soft_wire__cpd_rev2_layout(void **state)
{
	uint8_t pd[RV_SOFT_CPD_LEN];
	struct rv_soft_cpd c = {.ird = 0x3fff, .ord = 5, .caps = 0x80000003u, .port = 0xbeef, .min_rnr_timer = 31,
				.rnr_retry = 6, .src_qpn = 0xffffff, .dst_qpn = 2, .reason = 9};
	struct rv_soft_cpd d;

	(void)state;
	for (uint8_t rtr = 0; rtr < 16; rtr++) {
		c.rtr = rtr;
		assert_int_equal(rv_wire_cpd_encode(pd, sizeof(pd), &c), RV_SOFT_CPD_LEN);
		/* IRD word: P2P 0x8000, SEND RTR 0x4000; ORD word: WRITE RTR 0x8000, READ RTR 0x4000. */
		assert_int_equal(pd[0], 0x3f | (rtr & RV_SOFT_RTR_P2P ? 0x80 : 0) | (rtr & RV_SOFT_RTR_SEND ? 0x40 : 0));
		assert_int_equal(pd[1], 0xff);
		assert_int_equal(pd[2], (rtr & RV_SOFT_RTR_WRITE ? 0x80 : 0) | (rtr & RV_SOFT_RTR_READ ? 0x40 : 0));
		assert_int_equal(pd[3], 5);
		assert_memory_equal(pd + 4, "RVS2", 4);
		assert_int_equal(rv_wire_cpd_decode(pd, sizeof(pd), &d), RV_SOFT_CPD_LEN);
		assert_int_equal(d.rtr, rtr);
		assert_int_equal(d.ird, 0x3fff);
		assert_int_equal(d.ord, 5);
		assert_int_equal(d.caps, c.caps);
		assert_int_equal(d.port, 0xbeef);
		assert_int_equal(d.min_rnr_timer, 31);
		assert_int_equal(d.rnr_retry, 6);
		assert_int_equal(d.src_qpn, 0xffffff);
		assert_int_equal(d.dst_qpn, 2);
		assert_int_equal(d.reason, 9);
	}
	/* IRD/ORD beyond 14 bits do not leak into the flags. */
	c.ird = 0xffff;
	c.rtr = 0;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	assert_int_equal(pd[0], 0x3f);
	/* Too short, old magic, QPN beyond 24 bits. */
	assert_int_equal(rv_wire_cpd_decode(pd, RV_SOFT_CPD_LEN - 1, &d), -EBADMSG);
	memcpy(pd + 4, "RVS1", 4);
	assert_int_equal(rv_wire_cpd_decode(pd, sizeof(pd), &d), -EBADMSG);
	memcpy(pd + 4, "RVS2", 4);
	pd[32] = 1;
	assert_int_equal(rv_wire_cpd_decode(pd, sizeof(pd), &d), -EBADMSG);
}

/* CRC negotiated off: a zero CRC field, not checked on decode. */
static void test_soft_wire__fpdu_without_crc(void **state)
{
	uint8_t buf[256], pay[37];
	struct rv_fpdu f, g;
	int n;

	(void)state;
	memset(pay, 0x77, sizeof(pay));
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_SEND, f.last = true, f.qn = RV_DDP_QN_SEND, f.msn = 3;
	f.payload = pay, f.payload_len = sizeof(pay);
	n = rv_wire_fpdu_encode_crc(buf, sizeof(buf), &f, false);
	assert_true(n > 0);
	assert_int_equal(n % 4, 0);
	assert_memory_equal(buf + n - 4, "\0\0\0\0", 4);
	assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, false), n);
	assert_int_equal(g.msn, 3);
	assert_int_equal(g.payload_len, sizeof(pay));
	/* With CRC expected, the zero field is a CRC error; any value passes without. */
	assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, true), -EILSEQ);
	buf[n - 1] = 0x5a;
	assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, false), n);
	/* The same frame sealed with CRC decodes both ways. */
	rv_wire_fpdu_seal_crc(buf, true);
	assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, true), n);
	assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, false), n);
}

/* RFC 7306 messages: layouts, round trips, wrong lengths and T bits refused. */
static void test_soft_wire__rfc7306_frames(void **state)
{
	uint8_t buf[256];
	struct rv_fpdu f, g;
	int n;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_ATOMIC_REQ, f.last = true, f.qn = RV_DDP_QN_READ, f.msn = 7;
	f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_CMP_SWAP, .req_id = 0x01020304, .stag = 0xa1b2c3d4,
					.to = 0x1122334455667788ull, .swap_add = 5, .swap_add_mask = UINT64_MAX,
					.compare = 9, .compare_mask = UINT64_MAX};
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	assert_int_equal(n, (int)rv_wire_fpdu_len(RV_DDP_UNTAGGED_HDR + RV_RDMAP_ATOMIC_REQ_LEN));
	assert_int_equal(buf[3] & 0x0f, 0xa);            /* opcode */
	assert_int_equal(buf[2 + 18 + 3], RV_ATOMIC_CMP_SWAP); /* atomic opcode, low 4 bits of the first word */
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), n);
	assert_int_equal(g.opcode, RV_RDMAP_ATOMIC_REQ);
	assert_false(g.tagged);
	assert_int_equal(g.qn, RV_DDP_QN_READ);
	assert_int_equal(g.areq.req_id, 0x01020304);
	assert_int_equal(g.areq.stag, 0xa1b2c3d4);
	assert_int_equal(g.areq.to, 0x1122334455667788ull);
	assert_int_equal(g.areq.swap_add, 5);
	assert_int_equal(g.areq.compare, 9);
	assert_int_equal(g.areq.compare_mask, UINT64_MAX);
	/* Every prefix needs more bytes; a wrong length is malformed. */
	for (int k = 0; k < n; k++)
		assert_true(rv_wire_fpdu_decode(buf, (size_t)k, &g) == 0);
	f.opcode = RV_RDMAP_READ_REQ; /* a 28-byte body with the atomic opcode patched in */
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	buf[3] = (uint8_t)((buf[3] & 0xf0) | RV_RDMAP_ATOMIC_REQ);
	rv_wire_fpdu_seal(buf);
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), -EBADMSG);

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_ATOMIC_RESP, f.last = true, f.qn = RV_DDP_QN_ATOMIC_RESP, f.msn = 1;
	f.aresp_id = 77, f.aresp_orig = 0xfedcba9876543210ull;
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	assert_int_equal(n, (int)rv_wire_fpdu_len(RV_DDP_UNTAGGED_HDR + RV_RDMAP_ATOMIC_RESP_LEN));
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), n);
	assert_int_equal(g.aresp_id, 77);
	assert_int_equal(g.aresp_orig, 0xfedcba9876543210ull);
	assert_int_equal(g.qn, RV_DDP_QN_ATOMIC_RESP);

	for (uint8_t op = RV_RDMAP_IMM; op <= RV_RDMAP_IMM_SE; op++) {
		memset(&f, 0, sizeof(f));
		f.opcode = op, f.last = true, f.qn = RV_DDP_QN_SEND, f.msn = 3, f.imm = 0xcafef00d;
		n = rv_wire_fpdu_encode_crc(buf, sizeof(buf), &f, op == RV_RDMAP_IMM);
		assert_int_equal(n, (int)rv_wire_fpdu_len(RV_DDP_UNTAGGED_HDR + RV_RDMAP_IMM_LEN));
		assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, op == RV_RDMAP_IMM), n);
		assert_int_equal(g.opcode, op);
		assert_int_equal(g.imm, 0xcafef00d);
		/* the T bit set on an untagged RFC 7306 message */
		buf[2] |= 0x80;
		assert_int_equal(rv_wire_fpdu_decode_crc(buf, (size_t)n, &g, false), -EBADMSG);
	}
}

/* The header decoder of direct placement: the FPDU's length and header from
 * the header bytes alone; 0 until they are all there; header errors as the
 * full decoder reports them. */
static void test_soft_wire__fpdu_head_before_the_payload(void **state)
{
	static uint8_t buf[RV_FPDU_MAX], pay[40000];
	struct rv_fpdu f, h;
	int n;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_WRITE;
	f.tagged = true;
	f.last = true;
	f.stag = 0x12345678;
	f.to = 0x1122334455667788ull;
	f.payload = pay;
	f.payload_len = sizeof(pay);
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	assert_true(n > 0);
	for (size_t k = 0; k < 2 + RV_DDP_TAGGED_HDR; k++)
		assert_int_equal(rv_wire_fpdu_head(buf, k, &h), 0);
	assert_int_equal(rv_wire_fpdu_head(buf, 2 + RV_DDP_TAGGED_HDR, &h), n);
	assert_true(h.tagged && h.last && h.opcode == RV_RDMAP_WRITE && h.stag == f.stag && h.to == f.to);
	assert_int_equal(h.payload_len, sizeof(pay));
	assert_int_equal(h.hdr_len, RV_DDP_TAGGED_HDR);
	assert_null(h.payload);
	/* An untagged header needs its 18 bytes. */
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_SEND;
	f.last = true;
	f.qn = 0;
	f.msn = 7;
	f.payload = pay;
	f.payload_len = 100;
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	assert_int_equal(rv_wire_fpdu_head(buf, 2 + RV_DDP_UNTAGGED_HDR - 1, &h), 0);
	assert_int_equal(rv_wire_fpdu_head(buf, 2 + RV_DDP_UNTAGGED_HDR, &h), n);
	assert_int_equal(h.msn, 7);
	/* Header errors. */
	buf[2] ^= 0x03; /* DDP version */
	assert_int_equal(rv_wire_fpdu_head(buf, 64, &h), -EPROTO);
	buf[2] ^= 0x03;
	buf[0] = 0;
	buf[1] = 4; /* a ULPDU shorter than any DDP header */
	assert_int_equal(rv_wire_fpdu_head(buf, 64, &h), -EMSGSIZE);
}

static void test_soft_wire__mpa_rejects_garbage(void **state)
{
	uint8_t buf[64];
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 1, .pd_len = 0, .pd = NULL};
	struct rv_mpa_frame g;
	int n;

	(void)state;
	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	assert_int_equal(n, RV_MPA_HDR_LEN);
	buf[3] = 'X';
	assert_int_equal(rv_wire_mpa_decode(buf, (size_t)n, &g), -EBADMSG);
	assert_int_equal(rv_wire_mpa_decode(buf, 4, &g), -EBADMSG); /* early, on the first bad byte */
	buf[3] = ' ';
	buf[17] = 3; /* revision */
	assert_int_equal(rv_wire_mpa_decode(buf, (size_t)n, &g), -EBADMSG);
	buf[17] = 2;
	assert_int_equal(rv_wire_mpa_decode(buf, (size_t)n, &g), n);
	buf[18] = 0x02; /* pd_len 513 */
	buf[19] = 0x01;
	assert_int_equal(rv_wire_mpa_decode(buf, (size_t)n, &g), -EBADMSG);
	f.pd_len = 513;
	f.pd = buf;
	assert_int_equal(rv_wire_mpa_encode(buf, sizeof(buf), &f), -EINVAL);
	assert_int_equal(rv_wire_cpd_decode("RVSX", 4, (struct rv_soft_cpd *)buf), -EBADMSG);
}

static void check_trailer(const uint8_t *buf, int n)
{
	uint32_t crc = rv_crc32c(0, buf, (size_t)n - 4);

	assert_int_equal(n % 4, 0);
	/* The CRC goes out least significant byte first, as in iSCSI. */
	assert_int_equal(buf[n - 4], crc & 0xff);
	assert_int_equal(buf[n - 1], crc >> 24);
}

static void test_soft_wire__fpdu_round_trip(void **state)
{
	uint8_t payload[5000], buf[6000];
	struct rv_fpdu f, g;
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i ^ (i >> 8));
	for (uint32_t len = 0; len < 4100; len = len < 16 ? len + 1 : len * 2 + 1) {
		/* tagged WRITE */
		memset(&f, 0, sizeof(f));
		f.opcode = RV_RDMAP_WRITE;
		f.tagged = true;
		f.last = len & 1;
		f.stag = 0xdeadbeef;
		f.to = 0x0123456789abcdefull;
		f.payload = payload;
		f.payload_len = len;
		n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
		assert_int_equal(n, (int)rv_wire_fpdu_len(RV_DDP_TAGGED_HDR + len));
		check_trailer(buf, n);
		assert_int_equal(rv_wire_fpdu_peek(buf, 2), (size_t)n);
		assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), n);
		assert_int_equal(g.opcode, RV_RDMAP_WRITE);
		assert_true(g.tagged);
		assert_int_equal(g.last, f.last);
		assert_int_equal(g.stag, f.stag);
		assert_true(g.to == f.to);
		assert_int_equal(g.payload_len, len);
		if (len)
			assert_memory_equal(g.payload, payload, len);
		/* untagged SEND */
		memset(&f, 0, sizeof(f));
		f.opcode = RV_RDMAP_SEND_SE;
		f.last = true;
		f.qn = RV_DDP_QN_SEND;
		f.msn = 77;
		f.mo = 4096;
		f.payload = payload + 1;
		f.payload_len = len;
		n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
		assert_int_equal(n, (int)rv_wire_fpdu_len(RV_DDP_UNTAGGED_HDR + len));
		check_trailer(buf, n);
		assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), n);
		assert_int_equal(g.opcode, RV_RDMAP_SEND_SE);
		assert_false(g.tagged);
		assert_int_equal(g.qn, 0);
		assert_int_equal(g.msn, 77);
		assert_int_equal(g.mo, 4096);
		assert_int_equal(g.payload_len, len);
		if (len)
			assert_memory_equal(g.payload, payload + 1, len);
		/* Truncated: always "need more", never a result. */
		for (int k = 0; k < n; k += (n > 64 ? 61 : 1))
			assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)k, &g), 0);
	}
}

static void test_soft_wire__read_request_and_terminate(void **state)
{
	uint8_t buf[256], tbuf[256];
	struct rv_fpdu f, g, t, u;
	int n, m;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_READ_REQ;
	f.last = true;
	f.qn = RV_DDP_QN_READ;
	f.msn = 5;
	f.rreq = (struct rv_read_req){.sink_stag = 1, .sink_to = 2, .size = 3, .src_stag = 0x44,
				      .src_to = UINT64_MAX};
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	assert_int_equal(n, (int)rv_wire_fpdu_len(RV_DDP_UNTAGGED_HDR + RV_RDMAP_READ_REQ_LEN));
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), n);
	assert_int_equal(g.opcode, RV_RDMAP_READ_REQ);
	assert_int_equal(g.rreq.sink_stag, 1);
	assert_true(g.rreq.sink_to == 2);
	assert_int_equal(g.rreq.size, 3);
	assert_int_equal(g.rreq.src_stag, 0x44);
	assert_true(g.rreq.src_to == UINT64_MAX);

	/* A TERMINATE quoting that request's DDP and RDMAP headers. */
	memset(&t, 0, sizeof(t));
	t.opcode = RV_RDMAP_TERMINATE;
	t.last = true;
	t.qn = RV_DDP_QN_TERM;
	t.msn = 1;
	t.term.layer = RV_TERM_RDMAP;
	t.term.etype = RV_TERM_RDMAP_REMOTE_PROT;
	t.term.ecode = RV_TERM_RDMAP_ACCESS;
	t.term.m = t.term.d = t.term.r = true;
	t.term.seg_len = (uint16_t)(g.hdr_len + g.payload_len);
	t.term.hdr = g.hdr;
	t.term.hdr_len = (uint16_t)(g.hdr_len + RV_RDMAP_READ_REQ_LEN);
	m = rv_wire_fpdu_encode(tbuf, sizeof(tbuf), &t);
	assert_true(m > 0);
	assert_int_equal(rv_wire_fpdu_decode(tbuf, (size_t)m, &u), m);
	assert_int_equal(u.opcode, RV_RDMAP_TERMINATE);
	assert_int_equal(u.term.layer, RV_TERM_RDMAP);
	assert_int_equal(u.term.etype, RV_TERM_RDMAP_REMOTE_PROT);
	assert_int_equal(u.term.ecode, RV_TERM_RDMAP_ACCESS);
	assert_true(u.term.d && u.term.r && u.term.m);
	assert_false(u.term.ddp_tagged);
	assert_int_equal(u.term.ddp_opcode, RV_RDMAP_READ_REQ);
	assert_int_equal(u.term.ddp_qn, RV_DDP_QN_READ);
	assert_int_equal(u.term.ddp_msn, 5);
	assert_true(u.term.has_rreq);
	assert_int_equal(u.term.rreq.src_stag, 0x44);

	/* A bare TERMINATE (no quoted header) decodes too. */
	t.term.m = t.term.d = t.term.r = false;
	t.term.hdr_len = 0;
	m = rv_wire_fpdu_encode(tbuf, sizeof(tbuf), &t);
	assert_int_equal(rv_wire_fpdu_decode(tbuf, (size_t)m, &u), m);
	assert_false(u.term.d);
}

/* Re-seal a frame after editing its header so that only the edit is wrong. */
static void reseal(uint8_t *buf)
{
	rv_wire_fpdu_seal(buf);
}

static void test_soft_wire__fpdu_rejects_bad_headers(void **state)
{
	uint8_t buf[128], pay[128] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct rv_fpdu f, g;
	int n;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_SEND;
	f.last = true;
	f.payload = pay;
	f.payload_len = 8;
	n = rv_wire_fpdu_encode(buf, sizeof(buf), &f);
	assert_true(n > 0);
	/* CRC */
	buf[n - 1] ^= 1;
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), -EILSEQ);
	buf[n - 1] ^= 1;
	/* every single flipped byte is caught */
	for (int i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int r;
			buf[i] ^= (uint8_t)(1u << bit);
			r = rv_wire_fpdu_decode(buf, (size_t)n, &g);
			assert_true(r <= 0);
			buf[i] ^= (uint8_t)(1u << bit);
		}
	}
	/* DDP version 0 */
	buf[2] &= (uint8_t)~0x03;
	reseal(buf);
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), -EPROTO);
	buf[2] |= 0x01;
	/* RDMAP version 2 */
	buf[3] = (uint8_t)((buf[3] & 0x3f) | 0x80);
	reseal(buf);
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), -EPROTONOSUPPORT);
	buf[3] = (uint8_t)((buf[3] & 0x3f) | 0x40);
	/* SEND with the T bit: contradiction */
	buf[2] |= 0x80;
	reseal(buf);
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), -EBADMSG);
	buf[2] &= 0x7f;
	/* READ request whose body is not 28 bytes */
	buf[3] = (uint8_t)((buf[3] & 0xf0) | RV_RDMAP_READ_REQ);
	reseal(buf);
	assert_int_equal(rv_wire_fpdu_decode(buf, (size_t)n, &g), -EBADMSG);
	/* MPA length below any DDP header */
	buf[0] = 0;
	buf[1] = 5;
	assert_int_equal(rv_wire_fpdu_decode(buf, sizeof(buf), &g), -EMSGSIZE);
	/* Encoding refuses a ULPDU above 65535 bytes. */
	f.payload_len = 70000;
	assert_int_equal(rv_wire_fpdu_encode(buf, sizeof(buf), &f), -EMSGSIZE);
	f.payload_len = 120;
	assert_int_equal(rv_wire_fpdu_encode(buf, sizeof(buf), &f), -ENOSPC);
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static void test_soft_wire__garbage_is_safe(void **state)
{
	uint32_t seed = 12345;

	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = lcg(&seed) % 300;
		uint8_t *buf = malloc(len ? len : 1); /* exact size: ASan catches any overread */
		struct rv_fpdu f;
		struct rv_mpa_frame m;
		struct rv_soft_cpd c;
		int r;

		assert_non_null(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)lcg(&seed);
		/* Small lengths so that some frames are complete and reach the CRC check. */
		if (len >= 2 && (iter & 1)) {
			buf[0] = 0;
			buf[1] = (uint8_t)(len > 10 ? len - 8 : 14);
		}
		if ((iter % 3) == 0 && len >= 2 && rv_wire_fpdu_peek(buf, len) <= len)
			rv_wire_fpdu_seal(buf);
		r = rv_wire_fpdu_decode(buf, len, &f);
		assert_true(r <= (int)len);
		if (r > 0)
			assert_true(f.payload + f.payload_len <= buf + len);
		r = rv_wire_fpdu_decode_crc(buf, len, &f, false);
		assert_true(r <= (int)len);
		if (r > 0)
			assert_true(f.payload + f.payload_len <= buf + len);
		r = rv_wire_mpa_decode(buf, len, &m);
		assert_true(r <= (int)len);
		(void)rv_wire_cpd_decode(buf, len, &c);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_wire__crc32c_known_vectors),
		cmocka_unit_test(test_soft_wire__crc32c_is_incremental),
		cmocka_unit_test(test_soft_wire__crc32c_long_buffers),
		cmocka_unit_test(test_soft_wire__crc32c_every_implementation),
		cmocka_unit_test(test_soft_wire__crc32c_folding_random),
		cmocka_unit_test(test_soft_wire__mpa_round_trip),
		cmocka_unit_test(test_soft_wire__fpdu_head_before_the_payload),
		cmocka_unit_test(test_soft_wire__mpa_rejects_garbage),
		cmocka_unit_test(test_soft_wire__cpd_rev2_layout),
		cmocka_unit_test(test_soft_wire__fpdu_without_crc),
		cmocka_unit_test(test_soft_wire__rfc7306_frames),
		cmocka_unit_test(test_soft_wire__fpdu_round_trip),
		cmocka_unit_test(test_soft_wire__read_request_and_terminate),
		cmocka_unit_test(test_soft_wire__fpdu_rejects_bad_headers),
		cmocka_unit_test(test_soft_wire__garbage_is_safe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
