/*
 * libFuzzer target: the FPDU decoder of the software device
 * (lib/drivers/soft/wire.c: MPA framing and CRC32c, DDP tagged/untagged
 * headers, RDMAP READ request and TERMINATE parsing).
 *
 * Each input is used twice:
 *
 * 1. As a received byte stream: FPDUs are decoded one after another, as rx.c
 *    does, until the decoder wants more bytes or refuses one. libFuzzer hands
 *    over a heap buffer of exactly the input's size, so AddressSanitizer
 *    catches a read past the input. For every decoded FPDU: its length is
 *    within the input, a multiple of 4 and what rv_wire_fpdu_peek says; every
 *    pointer it returns (payload, header, TERMINATE quote) lies inside the
 *    FPDU; every strict prefix of it decodes to "need more bytes"; and
 *    re-encoding the decoded fields gives a frame that decodes to the same
 *    fields and re-encodes to itself (and equals the input when the input
 *    set no reserved bit and no pad byte).
 *
 * 2. As a description of an FPDU (opcode, flags, fields, payload): it is
 *    encoded, both with rv_wire_fpdu_encode and with begin/payload/seal; the
 *    two must agree, decode(encode(x)) must give back x, and flipping any one
 *    bit outside the MPA length field must make the CRC check fail (CRC32c
 *    detects every single-bit error).
 *
 * Built and run by scripts/fuzz-wire; seed corpus in tests/fuzz/corpus/wire-fpdu
 * (valid frames of every opcode from the encoder, and edge cases), written by
 * tests/fuzz/gen-wire-corpus.c.
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

/* Decoded fields that must survive a round trip (pointers compared by content). */
static void check_same(const struct rv_fpdu *a, const struct rv_fpdu *b)
{
	CHECK(a->opcode == b->opcode);
	CHECK(a->tagged == b->tagged);
	CHECK(a->last == b->last);
	CHECK(a->hdr_len == b->hdr_len);
	if (a->tagged) {
		CHECK(a->stag == b->stag);
		CHECK(a->to == b->to);
	} else {
		CHECK(a->inv_stag == b->inv_stag);
		CHECK(a->qn == b->qn);
		CHECK(a->msn == b->msn);
		CHECK(a->mo == b->mo);
	}
	if (a->opcode == RV_RDMAP_READ_REQ) {
		CHECK(a->rreq.sink_stag == b->rreq.sink_stag && a->rreq.sink_to == b->rreq.sink_to);
		CHECK(a->rreq.size == b->rreq.size && a->rreq.src_stag == b->rreq.src_stag &&
		      a->rreq.src_to == b->rreq.src_to);
	} else if (a->opcode == RV_RDMAP_TERMINATE) {
		const struct rv_term *s = &a->term, *t = &b->term;
		CHECK(s->layer == t->layer && s->etype == t->etype && s->ecode == t->ecode);
		CHECK(s->m == t->m && s->d == t->d && s->r == t->r);
		if (s->m || s->d || s->r) {
			CHECK(s->seg_len == t->seg_len);
			CHECK(s->hdr_len == t->hdr_len);
			CHECK(s->hdr_len == 0 || memcmp(s->hdr, t->hdr, s->hdr_len) == 0);
		}
		CHECK(s->ddp_tagged == t->ddp_tagged && s->ddp_opcode == t->ddp_opcode);
		CHECK(s->ddp_stag == t->ddp_stag && s->ddp_to == t->ddp_to);
		CHECK(s->ddp_qn == t->ddp_qn && s->ddp_msn == t->ddp_msn && s->ddp_mo == t->ddp_mo);
		CHECK(s->has_rreq == t->has_rreq);
	} else if (a->opcode == RV_RDMAP_IMM || a->opcode == RV_RDMAP_IMM_SE) {
		CHECK(a->imm == b->imm);
	} else if (a->opcode == RV_RDMAP_ATOMIC_REQ) {
		const struct rv_atomic_req *s = &a->areq, *t = &b->areq;
		CHECK(s->op == t->op && s->req_id == t->req_id && s->stag == t->stag && s->to == t->to);
		CHECK(s->swap_add == t->swap_add && s->swap_add_mask == t->swap_add_mask);
		CHECK(s->compare == t->compare && s->compare_mask == t->compare_mask);
	} else if (a->opcode == RV_RDMAP_ATOMIC_RESP) {
		CHECK(a->aresp_id == b->aresp_id && a->aresp_orig == b->aresp_orig);
	} else {
		CHECK(a->payload_len == b->payload_len);
		CHECK(a->payload_len == 0 || memcmp(a->payload, b->payload, a->payload_len) == 0);
	}
}

/* Opcodes whose ULPDU has a fixed layout (no free payload): the encoder
 * writes their fields, not f->payload. */
static bool fixed_layout(uint8_t op)
{
	return op == RV_RDMAP_READ_REQ || op == RV_RDMAP_TERMINATE || op == RV_RDMAP_IMM ||
	       op == RV_RDMAP_IMM_SE || op == RV_RDMAP_ATOMIC_REQ || op == RV_RDMAP_ATOMIC_RESP;
}

static bool inside(const uint8_t *p, size_t n, const uint8_t *lo, size_t len)
{
	return n == 0 || (p >= lo && p <= lo + len && n <= (size_t)(lo + len - p));
}

/* One decoded FPDU f of length n at p (the rest of the input is avail bytes). */
static void check_decoded(const uint8_t *p, size_t avail, int n, const struct rv_fpdu *f)
{
	static uint8_t enc[RV_FPDU_MAX], enc2[RV_FPDU_MAX];
	struct rv_fpdu g;
	size_t len = (size_t)n, ulpdu = (size_t)p[0] << 8 | p[1];
	bool canonical;
	int m, m2;

	CHECK(len <= avail && len >= 2 + RV_DDP_TAGGED_HDR + 4 && len % 4 == 0);
	CHECK(len == rv_wire_fpdu_peek(p, avail));
	CHECK(len == rv_wire_fpdu_len(ulpdu));
	CHECK(f->hdr == p + 2 && f->hdr_len == rv_wire_ddp_hdr_len(f->tagged));
	CHECK(inside(f->payload, f->payload_len, p, len - 4));
	CHECK(f->hdr_len + f->payload_len == ulpdu);
	if (f->opcode == RV_RDMAP_TERMINATE && f->term.hdr_len)
		CHECK(inside(f->term.hdr, f->term.hdr_len, f->payload, f->payload_len));
	if (f->opcode == RV_RDMAP_READ_REQ)
		CHECK(f->payload_len == RV_RDMAP_READ_REQ_LEN);
	/* The decoder answers "need more" for every strict prefix (a stream
	 * reader must never act on half a frame). Sampled to stay fast. */
	for (size_t k = 0; k < len; k += 1 + k / 4)
		CHECK(rv_wire_fpdu_decode(p, k, &g) == 0);

	/* Re-encode what was decoded: a canonical frame. */
	m = rv_wire_fpdu_encode(enc, sizeof(enc), f);
	CHECK(m > 0);
	CHECK(rv_wire_fpdu_decode(enc, (size_t)m, &g) == m);
	check_same(f, &g);
	m2 = rv_wire_fpdu_encode(enc2, sizeof(enc2), &g);
	CHECK(m2 == m && memcmp(enc, enc2, (size_t)m) == 0);
	/* No reserved control bit, zero pad, and (TERMINATE) nothing after what
	 * its control bits announce: then the canonical frame is the input. */
	canonical = (((unsigned)p[2] << 8 | p[3]) & 0x3c30u) == 0;
	for (size_t i = 2 + ulpdu; i < len - 4; i++)
		canonical = canonical && p[i] == 0;
	if (f->opcode == RV_RDMAP_TERMINATE) {
		const uint8_t *t = f->payload;
		canonical = canonical && ((unsigned)t[2] << 8 | t[3]) % 0x2000u == 0 &&
			    (f->term.m || f->term.d || f->term.r || f->payload_len == 4);
	}
	/* An Atomic Request's first word: 28 reserved bits, then AOpCode
	 * (RFC 7306 Atomic Request); the decoder ignores the reserved ones. */
	if (f->opcode == RV_RDMAP_ATOMIC_REQ)
		canonical = canonical && (f->payload[0] | f->payload[1] | f->payload[2] | (f->payload[3] & 0xf0u)) == 0;
	if (canonical)
		CHECK((size_t)m == len && memcmp(enc, p, len) == 0);
}

static void stream_decode(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct rv_fpdu f;
		int n = rv_wire_fpdu_decode(data + off, size - off, &f);

		if (n == 0) {
			CHECK(size - off < 2 || size - off < rv_wire_fpdu_peek(data + off, size - off));
			break;
		}
		if (n < 0) {
			CHECK(n == -EMSGSIZE || n == -EILSEQ || n == -EPROTO || n == -EPROTONOSUPPORT ||
			      n == -EBADMSG);
			break;
		}
		check_decoded(data + off, size - off, n, &f);
		/* The header decoder of direct placement agrees with the full
		 * decoder on every FPDU it accepts, from the header alone. */
		{
			struct rv_fpdu h;
			size_t hl = 2 + (size_t)f.hdr_len;
			CHECK(rv_wire_fpdu_head(data + off, hl, &h) == n);
			CHECK(h.tagged == f.tagged && h.last == f.last && h.opcode == f.opcode &&
			      h.payload_len == f.payload_len && h.hdr_len == f.hdr_len && h.payload == NULL);
			CHECK(f.tagged ? h.stag == f.stag && h.to == f.to
				       : h.qn == f.qn && h.msn == f.msn && h.mo == f.mo && h.inv_stag == f.inv_stag);
			CHECK(rv_wire_fpdu_head(data + off, hl - 1, &h) == 0);
		}
		off += (size_t)n;
	}
	/* On anything: never past len, errors from the documented set. */
	{
		struct rv_fpdu h;
		int k = rv_wire_fpdu_head(data, size, &h);
		CHECK(k >= 0 || k == -EMSGSIZE || k == -EPROTO || k == -EPROTONOSUPPORT || k == -EBADMSG);
	}
}

/* A little reader over the input for the structured half. */
struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes; i++) {
		v = v << 8 | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

static void structured(const uint8_t *data, size_t size)
{
	static uint8_t a[RV_FPDU_MAX], b[RV_FPDU_MAX], quote[64];
	struct in in = {data, size};
	struct rv_fpdu f, g;
	size_t plen, flip;
	uint8_t op;
	int n, n2;

	memset(&f, 0, sizeof(f));
	op = (uint8_t)(take(&in, 1) & 0x0f);
	f.opcode = op;
	f.tagged = op == RV_RDMAP_WRITE || op == RV_RDMAP_READ_RESP;
	if (op > RV_RDMAP_TERMINATE)
		f.tagged = take(&in, 1) & 1; /* RFC 7306 opcodes: either kind of header */
	f.last = take(&in, 1) & 1;
	if (f.tagged) {
		f.stag = (uint32_t)take(&in, 4);
		f.to = take(&in, 8);
	} else {
		f.inv_stag = (uint32_t)take(&in, 4);
		f.qn = (uint32_t)take(&in, 4);
		f.msn = (uint32_t)take(&in, 4);
		f.mo = (uint32_t)take(&in, 4);
	}
	if (op == RV_RDMAP_READ_REQ) {
		f.rreq.sink_stag = (uint32_t)take(&in, 4);
		f.rreq.sink_to = take(&in, 8);
		f.rreq.size = (uint32_t)take(&in, 4);
		f.rreq.src_stag = (uint32_t)take(&in, 4);
		f.rreq.src_to = take(&in, 8);
	} else if (op == RV_RDMAP_TERMINATE) {
		uint8_t bits = (uint8_t)take(&in, 1);
		f.term.layer = bits & 0xf;
		f.term.etype = bits >> 4;
		f.term.ecode = (uint8_t)take(&in, 1);
		bits = (uint8_t)take(&in, 1);
		f.term.m = bits & 1;
		f.term.d = bits & 2;
		f.term.r = bits & 4;
		f.term.seg_len = (uint16_t)take(&in, 2);
		if (f.term.m || f.term.d || f.term.r) {
			f.term.hdr_len = (uint16_t)(take(&in, 1) % sizeof(quote));
			for (size_t i = 0; i < f.term.hdr_len; i++)
				quote[i] = (uint8_t)take(&in, 1);
			f.term.hdr = quote;
		}
	} else if (op == RV_RDMAP_IMM || op == RV_RDMAP_IMM_SE) {
		f.imm = take(&in, 8);
	} else if (op == RV_RDMAP_ATOMIC_REQ) {
		f.areq.op = (uint32_t)take(&in, 1) & 0xfu;
		f.areq.req_id = (uint32_t)take(&in, 4);
		f.areq.stag = (uint32_t)take(&in, 4);
		f.areq.to = take(&in, 8);
		f.areq.swap_add = take(&in, 8);
		f.areq.swap_add_mask = take(&in, 8);
		f.areq.compare = take(&in, 8);
		f.areq.compare_mask = take(&in, 8);
	} else if (op == RV_RDMAP_ATOMIC_RESP) {
		f.aresp_id = (uint32_t)take(&in, 4);
		f.aresp_orig = take(&in, 8);
	} else {
		f.payload = in.p;
		f.payload_len = (uint32_t)in.n;
	}
	flip = (size_t)take(&in, 2);

	n = rv_wire_fpdu_encode(a, sizeof(a), &f);
	plen = op == RV_RDMAP_READ_REQ ? RV_RDMAP_READ_REQ_LEN
	       : op == RV_RDMAP_TERMINATE ? 4 + (f.term.m || f.term.d || f.term.r ? 2u + f.term.hdr_len : 0u)
	       : op == RV_RDMAP_IMM || op == RV_RDMAP_IMM_SE ? RV_RDMAP_IMM_LEN
	       : op == RV_RDMAP_ATOMIC_REQ ? RV_RDMAP_ATOMIC_REQ_LEN
	       : op == RV_RDMAP_ATOMIC_RESP ? RV_RDMAP_ATOMIC_RESP_LEN
					  : f.payload_len;
	if (rv_wire_ddp_hdr_len(f.tagged) + plen > RV_ULPDU_MAX) {
		CHECK(n == -EMSGSIZE);
		return;
	}
	CHECK(n > 0 && (size_t)n == rv_wire_fpdu_len(rv_wire_ddp_hdr_len(f.tagged) + plen));
	/* Too small a buffer is refused, not overrun. */
	CHECK(rv_wire_fpdu_encode(b, (size_t)n - 1, &f) == -ENOSPC);

	/* Two-step encoding gives the same bytes. */
	if (!fixed_layout(op)) {
		size_t off = rv_wire_fpdu_begin(b, &f, plen);
		CHECK(off == 2 + rv_wire_ddp_hdr_len(f.tagged));
		if (plen)
			memcpy(b + off, f.payload, plen);
		CHECK(rv_wire_fpdu_seal(b) == (size_t)n);
		CHECK(memcmp(a, b, (size_t)n) == 0);
	}

	/* decode(encode(x)) == x. */
	n2 = rv_wire_fpdu_decode(a, (size_t)n, &g);
	if (op == RV_RDMAP_TERMINATE && f.term.d) {
		/* A TERMINATE that claims a DDP header must quote a whole one. */
		size_t need = f.term.hdr_len >= 2 ? rv_wire_ddp_hdr_len(f.term.hdr[0] & 0x80) : 2;
		if (f.term.hdr_len < need) {
			CHECK(n2 == -EBADMSG);
			return;
		}
	}
	if (op > RV_RDMAP_TERMINATE && n2 == -EBADMSG)
		return; /* RFC 7306 opcodes: the decoder may hold them to their own layouts */
	CHECK(n2 == n);
	if (op == RV_RDMAP_READ_REQ || op == RV_RDMAP_TERMINATE) {
		CHECK(g.opcode == f.opcode && g.tagged == f.tagged && g.last == f.last);
		CHECK(g.inv_stag == f.inv_stag && g.qn == f.qn && g.msn == f.msn && g.mo == f.mo);
		if (op == RV_RDMAP_READ_REQ) {
			CHECK(g.rreq.sink_stag == f.rreq.sink_stag && g.rreq.sink_to == f.rreq.sink_to);
			CHECK(g.rreq.size == f.rreq.size && g.rreq.src_stag == f.rreq.src_stag &&
			      g.rreq.src_to == f.rreq.src_to);
		} else {
			const struct rv_term *s = &f.term, *t = &g.term;
			CHECK(s->layer == t->layer && s->etype == t->etype && s->ecode == t->ecode);
			CHECK(s->m == t->m && s->d == t->d && s->r == t->r);
			if (s->m || s->d || s->r) {
				CHECK(s->seg_len == t->seg_len && s->hdr_len == t->hdr_len);
				CHECK(s->hdr_len == 0 || memcmp(s->hdr, t->hdr, s->hdr_len) == 0);
			}
		}
	} else {
		CHECK(g.hdr_len == rv_wire_ddp_hdr_len(f.tagged));
		f.hdr_len = g.hdr_len; /* an output of the decoder only */
		check_same(&f, &g);
	}

	/* Any single flipped bit after the length field fails the CRC check. */
	flip = 16 + flip % ((size_t)n * 8 - 16);
	a[flip / 8] ^= (uint8_t)(1u << (flip % 8));
	CHECK(rv_wire_fpdu_decode(a, (size_t)n, &g) == -EILSEQ);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stream_decode(data, size);
	structured(data, size);
	return 0;
}
