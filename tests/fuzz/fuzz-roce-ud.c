/*
 * libFuzzer target: the RoCEv2 UD decoder of the software device
 * (lib/drivers/soft/roce.c: BTH, DETH, ImmDt, pad, ICRC).
 *
 * The first input byte chooses the addressing (bit 0: IPv4 or IPv6, the
 * rest varies the ports) and whether the ICRC is recomputed over the rest of
 * the input before decoding (bit 7): random bytes almost never carry a valid
 * ICRC, so without that the parsing after the check would go unexplored. The
 * rest is the UDP payload, in a heap buffer of exactly its size so that
 * AddressSanitizer catches any read past it. Invariants:
 *
 * - a decoded datagram's parts fill it exactly (headers + payload + pad +
 *   ICRC), the header length is the opcode's, the opcode is a UD SEND Only;
 * - re-encoding the decoded header for the decoded payload and finishing it
 *   gives a datagram that decodes to the same fields and payload, and equals
 *   the input when the input's reserved bits and pad bytes were zero;
 * - flipping any bit outside BTH byte 4 (FECN/BECN, masked by the ICRC) of a
 *   decoded datagram makes it fail;
 * - authenticated UD (the MAC trailer): the decoded datagram's trailer never
 *   checks under the fuzzer's key unless the input was sealed with it;
 *   sealing the decoded message under that key, finishing and decoding again
 *   gives a datagram whose trailer checks and gives back the message, epoch
 *   and sequence number, and that no longer checks with any one bit of its
 *   MAC-covered part flipped (ICRC recomputed, so only the MAC can refuse);
 * - the replay window, fed the payload's bytes as sequence numbers, accepts
 *   each (epoch, seq) at most once.
 *
 * Built and run by scripts/fuzz-wire (target "roce"); seed corpus in
 * tests/fuzz/corpus/roce-ud, written by tests/fuzz/gen-wire-corpus.c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/wire/roce.h"

static const uint8_t key[] = "fuzz-roce-ud key";

#define CHECK(cond)                                                                                   \
	do {                                                                                          \
		if (!(cond)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                                      \
		}                                                                                     \
	} while (0)

static void addr_from(uint8_t sel, struct rv_roce_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = (sel & 1) ? 6 : 4;
	if (a->family == 4) {
		a->src[0] = a->dst[0] = 127;
		a->src[3] = 1;
		a->dst[3] = (uint8_t)(1 + ((sel >> 1) & 3));
	} else {
		a->src[15] = a->dst[15] = 1;
	}
	a->sport = (uint16_t)(40000 + ((sel >> 3) & 7));
	a->dport = 4791;
	a->ip_frag = 0x4000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_roce_addr a;
	struct rv_roce_ud h, h2;
	size_t off, off2, len, n;
	uint32_t plen, plen2;
	uint8_t *pkt, *again;

	if (size < 1)
		return 0;
	addr_from(data[0], &a);
	len = size - 1;
	pkt = malloc(len ? len : 1);
	if (!pkt)
		return 0;
	memcpy(pkt, data + 1, len);
	if ((data[0] & 0x80) && len >= RV_ROCE_ICRC_LEN) {
		uint32_t ic = rv_roce_icrc(&a, pkt, len - RV_ROCE_ICRC_LEN);
		for (int i = 0; i < 4; i++)
			pkt[len - 4 + (size_t)i] = (uint8_t)(ic >> (8 * i));
	}
	if (rv_roce_ud_decode(&a, pkt, len, &h, &off, &plen) != RV_ROCE_OK) {
		free(pkt);
		return 0;
	}
	CHECK(h.opcode == RV_ROCE_UD_SEND_ONLY || h.opcode == RV_ROCE_UD_SEND_ONLY_IMM);
	CHECK(off == rv_roce_ud_hdr_len(h.opcode));
	CHECK(off + plen + h.pad + RV_ROCE_ICRC_LEN == len);

	/* Re-encode: same fields, and the input itself when it was canonical
	 * (our encoder pads to a multiple of 4, so only then can they agree). */
	again = malloc(off + plen + RV_ROCE_UD_OVERHEAD);
	CHECK(again != NULL);
	CHECK(rv_roce_ud_encode_hdr(&h, plen, again) == off);
	memcpy(again + off, pkt + off, plen);
	n = rv_roce_ud_finish(&a, again, off + plen);
	CHECK(rv_roce_ud_decode(&a, again, n, &h2, &off2, &plen2) == RV_ROCE_OK);
	CHECK(off2 == off && plen2 == plen && memcmp(again + off2, pkt + off, plen) == 0);
	CHECK(h2.opcode == h.opcode && h2.solicited == h.solicited && h2.pkey == h.pkey &&
	      h2.dest_qp == h.dest_qp && h2.psn == h.psn && h2.qkey == h.qkey && h2.src_qp == h.src_qp &&
	      h2.imm == h.imm && h2.deth_rsvd == h.deth_rsvd);
	{
		bool canonical = (pkt[1] & 0x40) == 0 && pkt[4] == 0 && pkt[8] == 0 &&
				 h.pad == ((4 - plen % 4) % 4);
		for (size_t i = 0; canonical && i < h.pad; i++)
			canonical = pkt[off + plen + i] == 0;
		if (canonical)
			CHECK(n == len && memcmp(again, pkt, len) == 0);
	}
	free(again);

	/* The MAC trailer: open the input as it is (checks only when the seed
	 * was sealed with our key), then seal the message and open it again. */
	{
		uint32_t pl = plen, pl2;
		uint64_t ep, sq, ep2, sq2;
		bool opened = rv_roce_ud_auth_open(key, sizeof(key) - 1, &a, pkt, off, &pl, &ep, &sq);
		uint8_t *s = malloc(off + plen + RV_ROCE_UD_OVERHEAD + RV_ROCE_UD_AUTH_LEN);
		size_t sl, hl;
		struct rv_roce_ud hs = h;

		CHECK(s != NULL);
		if (opened)
			CHECK(h.deth_rsvd == RV_ROCE_UD_AUTH_MARK && pl + RV_ROCE_UD_AUTH_LEN == plen);
		else
			CHECK(pl == plen);
		hs.deth_rsvd = RV_ROCE_UD_AUTH_MARK;
		ep = (uint64_t)data[0] << 56 | plen;
		sq = (uint64_t)plen * 977u;
		hl = rv_roce_ud_encode_hdr(&hs, plen + RV_ROCE_UD_AUTH_LEN, s);
		memcpy(s + hl, pkt + off, plen);
		sl = rv_roce_ud_auth_seal(key, sizeof(key) - 1, &a, s, hl + plen, ep, sq);
		CHECK(sl == hl + plen + RV_ROCE_UD_AUTH_LEN);
		sl = rv_roce_ud_finish(&a, s, sl);
		CHECK(rv_roce_ud_decode(&a, s, sl, &h2, &off2, &pl2) == RV_ROCE_OK);
		CHECK(rv_roce_ud_auth_open(key, sizeof(key) - 1, &a, s, off2, &pl2, &ep2, &sq2));
		CHECK(pl2 == plen && ep2 == ep && sq2 == sq && memcmp(s + off2, pkt + off, plen) == 0);
		{
			/* A bit of the covered part (BTH bytes but 4, DETH, ImmDt,
			 * message, trailer), with a valid ICRC again. */
			size_t covered = off2 + plen + RV_ROCE_UD_AUTH_LEN;
			size_t bit = ((size_t)data[0] * 257 + plen) % (covered * 8);
			if (bit / 8 != 4) {
				uint32_t ic;
				pl2 = plen + RV_ROCE_UD_AUTH_LEN;
				s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
				ic = rv_roce_icrc(&a, s, sl - RV_ROCE_ICRC_LEN);
				for (int i = 0; i < 4; i++)
					s[sl - 4 + (size_t)i] = (uint8_t)(ic >> (8 * i));
				if (rv_roce_ud_decode(&a, s, sl, &h2, &off2, &pl2) == RV_ROCE_OK)
					CHECK(!rv_roce_ud_auth_open(key, sizeof(key) - 1, &a, s, off2, &pl2, &ep2, &sq2));
			}
		}
		free(s);
	}

	/* The replay window: every (epoch, seq) at most once. */
	{
		static struct rv_roce_replay r;
		uint8_t seen[256];
		memset(&r, 0, sizeof(r));
		memset(seen, 0, sizeof(seen));
		for (uint32_t i = 0; i < plen; i++) {
			uint8_t v = pkt[off + i];
			uint64_t ep = v >> 7;        /* two senders */
			uint64_t sq = 1000 + (v & 0x7f);
			if (rv_roce_replay_check(&r, ep, sq)) {
				CHECK(!seen[v]);
				seen[v] = 1;
			}
		}
	}

	/* One bit flipped anywhere but the masked byte: refused. */
	{
		size_t bit = (size_t)data[0] * 131 % (len * 8);
		if (bit / 8 != 4) {
			pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			CHECK(rv_roce_ud_decode(&a, pkt, len, &h2, &off2, &plen2) != RV_ROCE_OK);
		}
	}
	free(pkt);
	return 0;
}
