/*
 * soft0's RoCEv2 codec (lib/drivers/soft/wire/roce.c): the ICRC against a packet a
 * NIC sent, the masking of the variant fields, round trips of UD headers with
 * every pad length, single-bit corruption, and random input.
 *
 * Known answer: a RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx, published
 * as a regression vector in Scapy's test/contrib/roce.uts ("RoCE CNP captured
 * on ConnectX-4 Lx"): IPv4 10.0.17.1 -> 10.0.18.1, TOS 0xc2, identification
 * 0x718c, DF, TTL 64, UDP 0 -> 4791, BTH opcode 0x81 with BECN, 16 bytes of
 * zeros, ICRC bytes 82 fd 00 2a. The hardware computed that ICRC; the codec
 * must reproduce it from the addresses alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/soft/wire/roce.h"

static struct rv_roce_addr loop4(void)
{
	struct rv_roce_addr a = {.family = 4, .sport = 40000, .dport = 40001, .ip_id = 0, .ip_frag = 0x4000};
	a.src[0] = a.dst[0] = 127;
	a.src[3] = a.dst[3] = 1;
	return a;
}

static void test_soft_roce__crc32_check_value(void **state)
{
	(void)state;
	/* The CRC-32 check value of "123456789" (IEEE 802.3). */
	assert_int_equal(rv_roce_crc32(0, "123456789", 9), 0xcbf43926);
	assert_int_equal(rv_roce_crc32(rv_roce_crc32(0, "1234", 4), "56789", 5), 0xcbf43926);
}

static void test_soft_roce__icrc_of_a_connectx4_packet(void **state)
{
	static const uint8_t udp_payload[] = {
		0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, /* BTH */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                         /* CNP pad */
		0x82, 0xfd, 0x00, 0x2a};                                                 /* ICRC */
	struct rv_roce_addr a = {.family = 4, .src = {10, 0, 17, 1}, .dst = {10, 0, 18, 1},
				 .sport = 0, .dport = 4791, .ip_id = 0x718c, .ip_frag = 0x4000};
	uint8_t copy[sizeof(udp_payload)];

	(void)state;
	assert_int_equal(rv_roce_icrc(&a, udp_payload, sizeof(udp_payload) - 4), 0x2a00fd82);
	/* The variant fields do not count: FECN/BECN (BTH byte 4). */
	memcpy(copy, udp_payload, sizeof(copy));
	copy[4] = 0x80;
	assert_int_equal(rv_roce_icrc(&a, copy, sizeof(copy) - 4), 0x2a00fd82);
	/* The invariant ones do: the identification, an address, a port, the P_Key. */
	a.ip_id ^= 1;
	assert_int_not_equal(rv_roce_icrc(&a, udp_payload, sizeof(udp_payload) - 4), 0x2a00fd82);
	a.ip_id ^= 1;
	a.dst[3] ^= 1;
	assert_int_not_equal(rv_roce_icrc(&a, udp_payload, sizeof(udp_payload) - 4), 0x2a00fd82);
	a.dst[3] ^= 1;
	a.sport = 1;
	assert_int_not_equal(rv_roce_icrc(&a, udp_payload, sizeof(udp_payload) - 4), 0x2a00fd82);
	a.sport = 0;
	copy[4] = udp_payload[4];
	copy[3] = 0xfe;
	assert_int_not_equal(rv_roce_icrc(&a, copy, sizeof(copy) - 4), 0x2a00fd82);
}

static void test_soft_roce__ud_headers_round_trip_with_every_pad(void **state)
{
	struct rv_roce_addr a = loop4();
	uint8_t pkt[RV_ROCE_UD_OVERHEAD + 64];

	(void)state;
	for (int imm = 0; imm < 2; imm++) {
		for (uint32_t len = 0; len <= 9; len++) {
			struct rv_roce_ud h = {.opcode = imm ? RV_ROCE_UD_SEND_ONLY_IMM : RV_ROCE_UD_SEND_ONLY,
					       .solicited = len & 1, .pkey = 0xffff, .dest_qp = 0xabcdef,
					       .psn = 0x123456, .qkey = 0x80000011, .src_qp = 0x654321,
					       .imm = 0xdeadbeef};
			struct rv_roce_ud d;
			size_t hl, n, off;
			uint32_t plen;

			hl = rv_roce_ud_encode_hdr(&h, len, pkt);
			assert_int_equal(hl, imm ? 24 : 20);
			assert_int_equal(pkt[0], imm ? 0x65 : 0x64);
			assert_int_equal((pkt[1] >> 4) & 3, (4 - len % 4) % 4); /* PadCnt */
			assert_int_equal(pkt[1] & 0xf, 0);                      /* TVer */
			for (uint32_t k = 0; k < len; k++)
				pkt[hl + k] = (uint8_t)(0xa0 + k);
			n = rv_roce_ud_finish(&a, pkt, hl + len);
			assert_int_equal(n % 4, 0);
			assert_int_equal(n, hl + len + (4 - len % 4) % 4 + 4);
			assert_int_equal(rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen), RV_ROCE_OK);
			assert_int_equal(off, hl);
			assert_int_equal(plen, len);
			assert_int_equal(d.opcode, h.opcode);
			assert_int_equal(d.solicited, h.solicited);
			assert_int_equal(d.pkey, 0xffff);
			assert_int_equal(d.dest_qp, 0xabcdef);
			assert_int_equal(d.psn, 0x123456);
			assert_int_equal(d.qkey, 0x80000011);
			assert_int_equal(d.src_qp, 0x654321);
			assert_int_equal(d.imm, imm ? 0xdeadbeef : 0);
			for (uint32_t k = 0; k < len; k++)
				assert_int_equal(pkt[off + k], 0xa0 + k);
		}
	}
}

static void test_soft_roce__every_single_bit_error_is_caught(void **state)
{
	struct rv_roce_addr a = loop4(), b;
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY_IMM, .pkey = 0xffff, .dest_qp = 5,
			       .psn = 1, .qkey = 7, .src_qp = 9, .imm = 3};
	uint8_t pkt[RV_ROCE_UD_OVERHEAD + 300];
	struct rv_roce_ud d;
	size_t n, off;
	uint32_t plen;

	(void)state;
	n = rv_roce_ud_encode_hdr(&h, 257, pkt);
	for (int i = 0; i < 257; i++)
		pkt[n + i] = (uint8_t)i;
	n = rv_roce_ud_finish(&a, pkt, n + 257);
	for (size_t bit = 0; bit < n * 8; bit++) {
		enum rv_roce_status s;

		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		s = rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen);
		if (bit / 8 == 4)
			assert_int_equal(s, RV_ROCE_OK); /* FECN/BECN/reserved: masked */
		else
			assert_int_not_equal(s, RV_ROCE_OK);
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* The datagram's addressing is covered too: another sender, port or family. */
	b = a;
	b.src[3] = 2;
	assert_int_equal(rv_roce_ud_decode(&b, pkt, n, &d, &off, &plen), RV_ROCE_BAD_ICRC);
	b = a;
	b.sport++;
	assert_int_equal(rv_roce_ud_decode(&b, pkt, n, &d, &off, &plen), RV_ROCE_BAD_ICRC);
	b = a;
	b.family = 6;
	assert_int_equal(rv_roce_ud_decode(&b, pkt, n, &d, &off, &plen), RV_ROCE_BAD_ICRC);
	assert_int_equal(rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen), RV_ROCE_OK);
	/* Refusals by name, before the ICRC. */
	assert_int_equal(rv_roce_ud_decode(&a, pkt, 23, &d, &off, &plen), RV_ROCE_SHORT);
	pkt[0] = 0x04;
	assert_int_equal(rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen), RV_ROCE_BAD_OPCODE);
	pkt[0] = RV_ROCE_UD_SEND_ONLY_IMM;
	pkt[1] |= 1;
	assert_int_equal(rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen), RV_ROCE_BAD_VERSION);
	assert_string_equal(rv_roce_status_name(RV_ROCE_BAD_ICRC), "bad ICRC");
}

static void test_soft_roce__ipv6_icrc_masks_class_flow_and_hop_limit(void **state)
{
	struct rv_roce_addr a = {.family = 6, .sport = 1, .dport = 2};
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .pkey = 0xffff, .dest_qp = 5, .qkey = 7};
	uint8_t pkt[RV_ROCE_UD_OVERHEAD + 8], hdr[40];
	struct rv_roce_ud d;
	size_t n, off;
	uint32_t plen;

	(void)state;
	a.src[15] = a.dst[15] = 1; /* ::1 */
	n = rv_roce_ud_encode_hdr(&h, 4, pkt);
	memcpy(pkt + n, "abcd", 4);
	n = rv_roce_ud_finish(&a, pkt, n + 4);
	assert_int_equal(rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen), RV_ROCE_OK);
	assert_int_equal(plen, 4);
	rv_roce_ipv6_header(&a, 0xb8, 9, n, hdr);
	assert_int_equal(hdr[0], 0x6b);
	assert_int_equal(hdr[1], 0x80);
	assert_int_equal((hdr[4] << 8) | hdr[5], 8 + n);
	assert_int_equal(hdr[6], 17);
	assert_int_equal(hdr[7], 9);
	assert_memory_equal(hdr + 8, a.src, 16);
	assert_memory_equal(hdr + 24, a.dst, 16);
}

static void test_soft_roce__ipv4_header_for_the_grh_area(void **state)
{
	struct rv_roce_addr a = loop4();
	uint8_t ip[20];
	uint32_t sum = 0;

	(void)state;
	rv_roce_ipv4_header(&a, 0x20, 63, 100, ip);
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[1], 0x20);
	assert_int_equal((ip[2] << 8) | ip[3], 128);
	assert_int_equal((ip[6] << 8) | ip[7], 0x4000);
	assert_int_equal(ip[8], 63);
	assert_int_equal(ip[9], 17);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff);
}

/* Random bytes and random mutations of a good datagram: the decoder reads
 * only inside the buffer (a copy of exactly len bytes on the heap, so that
 * AddressSanitizer or valgrind sees any overread) and accepts nothing whose
 * ICRC it did not verify. */
/* The MAC trailer of authenticated UD: sealed datagrams open with the same
 * key and give back message, epoch and seq; another key, another address or
 * port, any bit of the covered part changed, or no mark: refused. */
static void test_soft_roce__auth_trailer_seals_and_opens(void **state)
{
	static const uint8_t key[] = "k1", other[] = "k2";
	struct rv_roce_addr a = loop4(), b;
	uint8_t pkt[RV_ROCE_UD_OVERHEAD + RV_ROCE_UD_AUTH_LEN + 64], copy[sizeof(pkt)];

	(void)state;
	for (uint32_t len = 0; len <= 9; len++) {
		struct rv_roce_ud h = {.opcode = len & 1 ? RV_ROCE_UD_SEND_ONLY_IMM : RV_ROCE_UD_SEND_ONLY,
				       .pkey = 0xffff, .dest_qp = 0x12, .qkey = 0x11111111, .src_qp = 0x34,
				       .deth_rsvd = RV_ROCE_UD_AUTH_MARK};
		struct rv_roce_ud d;
		uint64_t ep = 0, sq = 0;
		size_t hl, n, off;
		uint32_t plen;

		hl = rv_roce_ud_encode_hdr(&h, len + RV_ROCE_UD_AUTH_LEN, pkt);
		assert_int_equal(pkt[16], RV_ROCE_UD_AUTH_MARK);
		memset(pkt + hl, 0x61, len);
		n = rv_roce_ud_auth_seal(key, 2, &a, pkt, hl + len, 0x0102030405060708u, 99 + len);
		assert_int_equal(n, hl + len + RV_ROCE_UD_AUTH_LEN);
		n = rv_roce_ud_finish(&a, pkt, n);
		assert_int_equal(rv_roce_ud_decode(&a, pkt, n, &d, &off, &plen), RV_ROCE_OK);
		assert_int_equal(d.deth_rsvd, RV_ROCE_UD_AUTH_MARK);
		assert_int_equal(plen, len + RV_ROCE_UD_AUTH_LEN);
		{
			uint32_t pl = plen;
			assert_true(rv_roce_ud_auth_open(key, 2, &a, pkt, off, &pl, &ep, &sq));
			assert_int_equal(pl, len);
			assert_true(ep == 0x0102030405060708u);
			assert_true(sq == 99 + len);
		}
		{
			uint32_t pl = plen;
			assert_false(rv_roce_ud_auth_open(other, 2, &a, pkt, off, &pl, &ep, &sq));
			assert_int_equal(pl, plen);
			b = a;
			b.sport++;
			assert_false(rv_roce_ud_auth_open(key, 2, &b, pkt, off, &pl, &ep, &sq));
			b = a;
			b.src[3] = 2;
			assert_false(rv_roce_ud_auth_open(key, 2, &b, pkt, off, &pl, &ep, &sq));
		}
		/* Every bit of the covered part but BTH byte 4. */
		for (size_t bit = 0; bit < (off + plen) * 8; bit++) {
			uint32_t pl = plen;
			if (bit / 8 == 4)
				continue;
			memcpy(copy, pkt, n);
			copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			assert_false(rv_roce_ud_auth_open(key, 2, &a, copy, off, &pl, &ep, &sq));
		}
		/* BTH byte 4 is masked, as the ICRC masks it. */
		memcpy(copy, pkt, n);
		copy[4] ^= 0xc0;
		{
			uint32_t pl = plen;
			assert_true(rv_roce_ud_auth_open(key, 2, &a, copy, off, &pl, &ep, &sq));
		}
		/* Without the mark the trailer is not looked at. */
		memcpy(copy, pkt, n);
		copy[16] = 0;
		{
			uint32_t pl = plen;
			assert_false(rv_roce_ud_auth_open(key, 2, &a, copy, off, &pl, &ep, &sq));
		}
	}
	/* Too short for a trailer. */
	{
		struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .deth_rsvd = RV_ROCE_UD_AUTH_MARK};
		uint32_t pl = RV_ROCE_UD_AUTH_LEN - 1;
		uint64_t ep, sq;
		rv_roce_ud_encode_hdr(&h, pl, pkt);
		assert_false(rv_roce_ud_auth_open(key, 2, &a, pkt, 20, &pl, &ep, &sq));
	}
}

/* The replay window: each (epoch, seq) once; 64 below the newest; 64 senders,
 * the one heard least recently forgotten. */
static void test_soft_roce__replay_window(void **state)
{
	static struct rv_roce_replay r;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_true(rv_roce_replay_check(&r, 1, 1000));
	assert_false(rv_roce_replay_check(&r, 1, 1000));
	assert_true(rv_roce_replay_check(&r, 1, 999)); /* late, inside the window */
	assert_false(rv_roce_replay_check(&r, 1, 999));
	assert_true(rv_roce_replay_check(&r, 2, 1000)); /* another sender */
	assert_true(rv_roce_replay_check(&r, 1, 1063)); /* the window now 1000..1063 */
	assert_false(rv_roce_replay_check(&r, 1, 1000)); /* seen, at the window's edge */
	assert_false(rv_roce_replay_check(&r, 1, 999));  /* below the window */
	assert_true(rv_roce_replay_check(&r, 1, 1001));  /* inside, not seen */
	assert_true(rv_roce_replay_check(&r, 1, 5000));  /* a jump */
	assert_false(rv_roce_replay_check(&r, 1, 1063));
	assert_true(rv_roce_replay_check(&r, 1, 4999));
	/* 62 more senders fill the 64 places; sender 1 is heard again, then a
	 * new one takes the place of the least recently heard: sender 2, whose
	 * datagrams would then be accepted again (the documented limit). */
	for (uint64_t e = 100; e < 100 + RV_ROCE_REPLAY_SENDERS - 2; e++)
		assert_true(rv_roce_replay_check(&r, e, 7));
	assert_true(rv_roce_replay_check(&r, 1, 5001));
	assert_true(rv_roce_replay_check(&r, 200, 7));
	assert_false(rv_roce_replay_check(&r, 1, 5001));
	assert_false(rv_roce_replay_check(&r, 100, 7));
	assert_true(rv_roce_replay_check(&r, 2, 1000));
}

/* A kernel RoCE device (rxe) sends its IP identification counter, which the
 * ICRC covers and a UDP socket does not show: where ip_id_any says so, the
 * one identification that makes the ICRC match is taken; elsewhere the
 * datagram is refused, and a damaged one is refused either way. */
static void test_soft_roce__ipv4_identification_from_the_icrc(void **state)
{
	struct rv_roce_addr a = loop4(), any;
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .pkey = 0xffff, .dest_qp = 5, .qkey = 7, .src_qp = 9};
	uint8_t pkt[RV_ROCE_UD_OVERHEAD + 300];
	struct rv_roce_ud d;
	size_t n, off;
	uint32_t plen, icrc;
	uint16_t id = 0;
	int refused = 0;

	(void)state;
	n = rv_roce_ud_encode_hdr(&h, 200, pkt);
	for (int i = 0; i < 200; i++)
		pkt[n + i] = (uint8_t)(i * 7);
	a.ip_id = 0xb349; /* as rxe sent one */
	n = rv_roce_ud_finish(&a, pkt, n + 200);
	icrc = (uint32_t)pkt[n - 4] | (uint32_t)pkt[n - 3] << 8 | (uint32_t)pkt[n - 2] << 16 | (uint32_t)pkt[n - 1] << 24;
	assert_true(rv_roce_ipv4_id(&a, pkt, n - 4, icrc, &id));
	assert_int_equal(id, 0xb349);
	any = a;
	any.ip_id = 0;
	assert_int_equal(rv_roce_ud_decode(&any, pkt, n, &d, &off, &plen), RV_ROCE_BAD_ICRC);
	any.ip_id_any = true;
	assert_int_equal(rv_roce_ud_decode(&any, pkt, n, &d, &off, &plen), RV_ROCE_OK);
	assert_int_equal(d.src_qp, 9);
	/* Every single bit damaged outside the masked byte: still refused. */
	for (size_t bit = 0; bit < n * 8; bit++) {
		if (bit / 8 == 4)
			continue;
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		refused += rv_roce_ud_decode(&any, pkt, n, &d, &off, &plen) != RV_ROCE_OK;
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	assert_int_equal(refused, (int)(n * 8 - 8));
}

static void test_soft_roce__random_input(void **state)
{
	struct rv_roce_addr a = loop4();
	struct rv_roce_ud h = {.opcode = RV_ROCE_UD_SEND_ONLY, .pkey = 0xffff, .dest_qp = 5, .qkey = 7};
	uint8_t good[RV_ROCE_UD_OVERHEAD + 64];
	size_t gn;
	int accepted = 0;

	(void)state;
	gn = rv_roce_ud_encode_hdr(&h, 61, good);
	memset(good + gn, 0x33, 61);
	gn = rv_roce_ud_finish(&a, good, gn + 61);
	srand(20261130);
	for (int i = 0; i < 200000; i++) {
		size_t len = (size_t)rand() % 120;
		uint8_t *p = malloc(len ? len : 1);
		struct rv_roce_ud d;
		size_t off = 0;
		uint32_t plen = 0;

		assert_non_null(p);
		if (i & 1) {
			for (size_t k = 0; k < len; k++)
				p[k] = (uint8_t)rand();
			if (len > 1 && (rand() & 1))
				p[0] = (rand() & 1) ? RV_ROCE_UD_SEND_ONLY : RV_ROCE_UD_SEND_ONLY_IMM;
			if (len > 1 && (rand() & 1))
				p[1] &= 0xf0;
		} else {
			len = len < gn ? len : gn;
			memcpy(p, good, len);
			for (int k = rand() % 4; k >= 0 && len; k--)
				p[(size_t)rand() % len] ^= (uint8_t)(1u << (rand() % 8));
		}
		if (rv_roce_ud_decode(&a, p, len, &d, &off, &plen) == RV_ROCE_OK) {
			assert_true(off + plen + d.pad + RV_ROCE_ICRC_LEN == len);
			assert_int_equal(rv_roce_icrc(&a, p, len - 4),
					 p[len - 4] | p[len - 3] << 8 | p[len - 2] << 16 | (uint32_t)p[len - 1] << 24);
			accepted++;
		}
		free(p);
	}
	/* Only copies whose flips all fell in the masked BTH byte 4 pass. */
	assert_true(accepted > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_roce__crc32_check_value),
		cmocka_unit_test(test_soft_roce__icrc_of_a_connectx4_packet),
		cmocka_unit_test(test_soft_roce__ud_headers_round_trip_with_every_pad),
		cmocka_unit_test(test_soft_roce__every_single_bit_error_is_caught),
		cmocka_unit_test(test_soft_roce__ipv6_icrc_masks_class_flow_and_hop_limit),
		cmocka_unit_test(test_soft_roce__ipv4_header_for_the_grh_area),
		cmocka_unit_test(test_soft_roce__auth_trailer_seals_and_opens),
		cmocka_unit_test(test_soft_roce__replay_window),
		cmocka_unit_test(test_soft_roce__ipv4_identification_from_the_icrc),
		cmocka_unit_test(test_soft_roce__random_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
