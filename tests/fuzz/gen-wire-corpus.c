/*
 * Writes the seed corpus of the wire fuzzers (fuzz-wire-fpdu.c,
 * fuzz-wire-mpa.c) with the device's own encoder: a valid FPDU of every
 * RDMAP opcode (tagged and untagged, first/middle/last segments, READ
 * requests, TERMINATEs quoting each kind of header, RFC 7306 Immediate Data
 * and atomics), streams of several
 * FPDUs, MPA requests and replies (revision 2 accepted, rejected, revision 1,
 * markers, a SEND-only RTR offer, empty and
 * maximal private data), and edge cases the decoders must refuse (bad CRC,
 * lengths that cannot hold a header, wrong versions, a T bit contradicting
 * the opcode, truncation, wrong MPA key, revision 3, oversized private data).
 *
 * Usage: gen-wire-corpus FPDU_DIR MPA_DIR (scripts/fuzz-wire --gen-corpus).
 * The output is deterministic, so regenerating changes nothing unless the
 * encoder or this list changed; the test 'fuzz-corpus' fails when the
 * committed corpus is not what this writes (regenerate it then).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/wire/wire.h"

static const char *fpdu_dir, *mpa_dir;

static void put(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static uint8_t payload[8192];

/* Encode f (payload of plen bytes from the pattern) at buf; abort on failure. */
static size_t enc(uint8_t *buf, size_t cap, struct rv_fpdu *f, uint32_t plen)
{
	int n;

	/* The other opcodes' payload comes from their own fields (rreq, term,
	 * areq, aresp_*, imm): the encoder ignores payload for them. */
	if (f->opcode != RV_RDMAP_READ_REQ && f->opcode != RV_RDMAP_TERMINATE && f->opcode != RV_RDMAP_IMM &&
	    f->opcode != RV_RDMAP_IMM_SE && f->opcode != RV_RDMAP_ATOMIC_REQ && f->opcode != RV_RDMAP_ATOMIC_RESP) {
		f->payload = payload;
		f->payload_len = plen;
	}
	n = rv_wire_fpdu_encode(buf, cap, f);
	if (n <= 0) {
		fprintf(stderr, "encode failed: %d\n", n);
		exit(1);
	}
	return (size_t)n;
}

static struct rv_fpdu untagged(uint8_t op, uint32_t qn, uint32_t msn, uint32_t mo, bool last)
{
	struct rv_fpdu f;

	memset(&f, 0, sizeof(f));
	f.opcode = op;
	f.qn = qn;
	f.msn = msn;
	f.mo = mo;
	f.last = last;
	return f;
}

static struct rv_fpdu tagged(uint8_t op, uint32_t stag, uint64_t to, bool last)
{
	struct rv_fpdu f;

	memset(&f, 0, sizeof(f));
	f.opcode = op;
	f.tagged = true;
	f.stag = stag;
	f.to = to;
	f.last = last;
	return f;
}

static void one(const char *name, struct rv_fpdu f, uint32_t plen)
{
	static uint8_t buf[RV_FPDU_MAX];
	put(fpdu_dir, name, buf, enc(buf, sizeof(buf), &f, plen));
}

static void fpdus(void)
{
	static uint8_t buf[RV_FPDU_MAX], hdr[64], stream[16384];
	struct rv_fpdu f, w, r;
	size_t n, s = 0;

	one("write-0", tagged(RV_RDMAP_WRITE, 0x1234abcd, 0x7f0000001000ull, true), 0);
	one("write-1", tagged(RV_RDMAP_WRITE, 0x1234abcd, 0x7f0000001000ull, true), 1);
	one("write-middle-4096", tagged(RV_RDMAP_WRITE, 0x1234abcd, 0x7f0000002000ull, false), 4096);
	one("write-to-wraps", tagged(RV_RDMAP_WRITE, 0xffffffff, 0xfffffffffffffff0ull, true), 33);
	f = untagged(RV_RDMAP_READ_REQ, RV_DDP_QN_READ, 1, 0, true);
	one("read-req-zero-confirm", f, 0);
	f.rreq = (struct rv_read_req){.sink_stag = 0x11, .sink_to = 0x1000, .size = 70000,
				      .src_stag = 0x22, .src_to = 0x2000};
	f.msn = 2;
	one("read-req", f, 0);
	one("read-resp-0", tagged(RV_RDMAP_READ_RESP, 0x11, 0x1000, true), 0);
	one("read-resp-first-4096", tagged(RV_RDMAP_READ_RESP, 0x11, 0x1000, false), 4096);
	one("read-resp-last-3", tagged(RV_RDMAP_READ_RESP, 0x11, 0x2000, true), 3);
	one("send-0", untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 1, 0, true), 0);
	one("send-5", untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 1, 0, true), 5);
	one("send-middle", untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 7, 4096, false), 4096);
	f = untagged(RV_RDMAP_SEND_INV, RV_DDP_QN_SEND, 3, 0, true);
	f.inv_stag = 0xdeadbeef;
	one("send-inv", f, 16);
	one("send-se", untagged(RV_RDMAP_SEND_SE, RV_DDP_QN_SEND, 4, 0, true), 64);
	f = untagged(RV_RDMAP_SEND_SE_INV, RV_DDP_QN_SEND, 5, 0, true);
	f.inv_stag = 0x42;
	one("send-se-inv", f, 2);
	/* XRC (soft0): a SEND naming XRC SRQ 0x123456 in its queue number. */
	one("send-xrc", untagged(RV_RDMAP_SEND, RV_SOFT_QN_XRC | 0x123456u, 1, 0, true), 24);
	/* RFC 7306: Immediate Data (with and without SE), Atomic Requests (fetch
	 * and add, compare and swap with masks), an Atomic Response; then an
	 * Immediate Data with the T bit (refused) and an opcode beyond them. */
	f = untagged(RV_RDMAP_IMM, RV_DDP_QN_SEND, 2, 0, true);
	f.imm = 0x0102030405060708ull;
	one("imm", f, 0);
	f = untagged(RV_RDMAP_IMM_SE, RV_DDP_QN_SEND, 3, 0, true);
	f.imm = 0xfedcba9876543210ull;
	one("imm-se", f, 0);
	f = untagged(RV_RDMAP_ATOMIC_REQ, RV_DDP_QN_READ, 1, 0, true);
	f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_FETCH_ADD, .req_id = 7, .stag = 0x1234abcd,
					.to = 0x7f0000001008ull, .swap_add = 5, .swap_add_mask = 0};
	one("atomic-req-fetch-add", f, 0);
	f.msn = 2;
	f.areq = (struct rv_atomic_req){.op = RV_ATOMIC_CMP_SWAP, .req_id = 8, .stag = 0x1234abcd,
					.to = 0x7f0000001010ull, .swap_add = 0xaaaa, .swap_add_mask = ~0ull,
					.compare = 0x5555, .compare_mask = 0xffff};
	one("atomic-req-cmp-swap", f, 0);
	f = untagged(RV_RDMAP_ATOMIC_RESP, RV_DDP_QN_ATOMIC_RESP, 1, 0, true);
	f.aresp_id = 7;
	f.aresp_orig = 0x1122334455667788ull;
	one("atomic-resp", f, 0);
	f = untagged(RV_RDMAP_IMM, RV_DDP_QN_SEND, 1, 0, true);
	n = enc(buf, sizeof(buf), &f, 0);
	buf[2] |= 0x80; /* T bit on an Immediate Data */
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "imm-with-t-bit", buf, n);
	one("opf-tagged", tagged(0xf, 5, 6, false), 1);

	/* TERMINATEs: bare, quoting a tagged header, an untagged one, a READ request. */
	f = untagged(RV_RDMAP_TERMINATE, RV_DDP_QN_TERM, 1, 0, true);
	f.term.layer = RV_TERM_LLP;
	f.term.ecode = RV_TERM_LLP_CRC;
	one("term-bare-llp-crc", f, 0);
	w = tagged(RV_RDMAP_WRITE, 0xabc, 0x5000, true);
	n = enc(buf, sizeof(buf), &w, 10);
	memcpy(hdr, buf + 2, RV_DDP_TAGGED_HDR);
	f.term = (struct rv_term){.layer = RV_TERM_DDP, .etype = RV_TERM_DDP_TAGGED,
				  .ecode = RV_TERM_DDP_T_BOUNDS, .m = true, .d = true, .seg_len = 24,
				  .hdr = hdr, .hdr_len = RV_DDP_TAGGED_HDR};
	f.msn = 2;
	one("term-write-bounds", f, 0);
	w = untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 9, 0, true);
	n = enc(buf, sizeof(buf), &w, 10);
	memcpy(hdr, buf + 2, RV_DDP_UNTAGGED_HDR);
	f.term = (struct rv_term){.layer = RV_TERM_DDP, .etype = RV_TERM_DDP_UNTAGGED,
				  .ecode = RV_TERM_DDP_U_TOO_LONG, .m = true, .d = true, .seg_len = 28,
				  .hdr = hdr, .hdr_len = RV_DDP_UNTAGGED_HDR};
	one("term-send-too-long", f, 0);
	r = untagged(RV_RDMAP_READ_REQ, RV_DDP_QN_READ, 1, 0, true);
	r.rreq = (struct rv_read_req){.sink_stag = 1, .sink_to = 2, .size = 3, .src_stag = 4, .src_to = 5};
	n = enc(buf, sizeof(buf), &r, 0);
	memcpy(hdr, buf + 2, RV_DDP_UNTAGGED_HDR + RV_RDMAP_READ_REQ_LEN);
	f.term = (struct rv_term){.layer = RV_TERM_RDMAP, .etype = RV_TERM_RDMAP_REMOTE_PROT,
				  .ecode = RV_TERM_RDMAP_INV_STAG, .m = true, .d = true, .r = true,
				  .seg_len = RV_DDP_UNTAGGED_HDR + RV_RDMAP_READ_REQ_LEN, .hdr = hdr,
				  .hdr_len = RV_DDP_UNTAGGED_HDR + RV_RDMAP_READ_REQ_LEN};
	one("term-read-req-inv-stag", f, 0);

	/* A stream as the initiator sends it: confirm READ, SENDs, a WRITE, a READ. */
	f = untagged(RV_RDMAP_READ_REQ, RV_DDP_QN_READ, 1, 0, true);
	s += enc(stream + s, sizeof(stream) - s, &f, 0);
	f = untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 1, 0, false);
	s += enc(stream + s, sizeof(stream) - s, &f, 4096);
	f = untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 1, 4096, true);
	s += enc(stream + s, sizeof(stream) - s, &f, 100);
	f = tagged(RV_RDMAP_WRITE, 0x77, 0x9000, true);
	s += enc(stream + s, sizeof(stream) - s, &f, 50);
	s += enc(stream + s, sizeof(stream) - s, &r, 0);
	put(fpdu_dir, "stream-initiator", stream, s);
	/* The same stream cut in the middle of its last FPDU. */
	put(fpdu_dir, "stream-truncated", stream, s - 7);

	/* Refused: bad CRC, a length that cannot hold a header, versions, T bit. */
	f = untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 1, 0, true);
	n = enc(buf, sizeof(buf), &f, 8);
	buf[n - 1] ^= 0x01;
	put(fpdu_dir, "bad-crc", buf, n);
	buf[n - 1] ^= 0x01;
	buf[10] ^= 0x80;
	put(fpdu_dir, "bad-crc-header-bit", buf, n);
	{
		uint8_t tiny[20] = {0, 13};
		put(fpdu_dir, "ulpdu-13", tiny, sizeof(tiny));
	}
	/* Untagged control word with a 14..17 byte ULPDU: too short for its header. */
	f = tagged(RV_RDMAP_WRITE, 1, 2, true);
	n = enc(buf, sizeof(buf), &f, 2);
	buf[2] &= 0x7f;            /* clear T */
	buf[3] = (buf[3] & 0xf0) | RV_RDMAP_SEND;
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "untagged-short", buf, n);
	f = untagged(RV_RDMAP_SEND, RV_DDP_QN_SEND, 1, 0, true);
	n = enc(buf, sizeof(buf), &f, 4);
	buf[2] = (uint8_t)((buf[2] & ~0x03) | 0x02); /* DDP version 2 */
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "ddp-version-2", buf, n);
	n = enc(buf, sizeof(buf), &f, 4);
	buf[3] = (uint8_t)((buf[3] & ~0xc0) | 0x80); /* RDMAP version 2 */
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "rdmap-version-2", buf, n);
	n = enc(buf, sizeof(buf), &f, 4);
	buf[2] |= 0x80; /* T bit on a SEND */
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "send-with-t-bit", buf, n);
	n = enc(buf, sizeof(buf), &f, 4);
	buf[2] |= 0x3c; /* reserved control bits: ignored */
	buf[3] |= 0x30;
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "reserved-bits", buf, n);
	f = untagged(RV_RDMAP_READ_REQ, RV_DDP_QN_READ, 1, 0, true);
	n = enc(buf, sizeof(buf), &f, 0);
	buf[1] -= 4; /* READ request 24 bytes */
	n = rv_wire_fpdu_seal(buf);
	put(fpdu_dir, "read-req-short", buf, n);
	f = untagged(RV_RDMAP_TERMINATE, RV_DDP_QN_TERM, 1, 0, true);
	f.term = (struct rv_term){.layer = RV_TERM_DDP, .d = true, .m = true, .hdr = hdr, .hdr_len = 1};
	n = enc(buf, sizeof(buf), &f, 0);
	put(fpdu_dir, "term-quote-too-short", buf, n);
	put(fpdu_dir, "empty", buf, 0);
	put(fpdu_dir, "one-byte", buf, 1);
}

static void mpa(const char *name, bool reply, uint8_t flags, uint8_t rev, const struct rv_soft_cpd *c,
		uint16_t pd_len)
{
	static uint8_t buf[RV_MPA_HDR_LEN + RV_MPA_PD_MAX], pd[RV_MPA_PD_MAX];
	struct rv_mpa_frame f = {.reply = reply, .flags = flags, .rev = rev, .pd_len = pd_len, .pd = pd};
	int n;

	memset(pd, 0x5a, sizeof(pd));
	if (c)
		rv_wire_cpd_encode(pd, sizeof(pd), c);
	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	if (n <= 0) {
		fprintf(stderr, "mpa encode failed: %d\n", n);
		exit(1);
	}
	put(mpa_dir, name, buf, (size_t)n);
}

static void mpas(void)
{
	static uint8_t buf[RV_MPA_HDR_LEN + RV_MPA_PD_MAX + 8];
	struct rv_soft_cpd c = {.ird = 32, .ord = 16,
				.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1},
				.port = 40000, .src_qpn = 0x123456, .dst_qpn = 0x654321};
	struct rv_mpa_frame f = {.rev = 2, .flags = RV_MPA_FLAG_CRC, .pd_len = RV_SOFT_CPD_LEN, .pd = buf + 100};
	int n;

	c.rtr = RV_SOFT_RTR_P2P | RV_SOFT_RTR_READ | RV_SOFT_RTR_WRITE;
	c.caps = RV_SOFT_CAP_IMM | RV_SOFT_CAP_ATOMIC;
	c.min_rnr_timer = 12;
	c.rnr_retry = 7;
	mpa("request", false, RV_MPA_FLAG_CRC, 2, &c, RV_SOFT_CPD_LEN);
	c.rtr = RV_SOFT_RTR_P2P | RV_SOFT_RTR_READ;
	mpa("reply", true, RV_MPA_FLAG_CRC, 2, &c, RV_SOFT_CPD_LEN);
	c.reason = RV_SOFT_REJECT_NO_QP;
	mpa("reply-reject", true, RV_MPA_FLAG_CRC | RV_MPA_FLAG_REJECT, 2, &c, RV_SOFT_CPD_LEN);
	c.reason = 0;
	mpa("request-rev1", false, RV_MPA_FLAG_CRC, 1, &c, RV_SOFT_CPD_LEN);
	mpa("request-markers", false, RV_MPA_FLAG_CRC | RV_MPA_FLAG_MARKERS, 2, &c, RV_SOFT_CPD_LEN);
	mpa("request-no-crc", false, 0, 2, &c, RV_SOFT_CPD_LEN);
	mpa("request-no-pd", false, RV_MPA_FLAG_CRC, 2, NULL, 0);
	mpa("request-pd-max", false, RV_MPA_FLAG_CRC, 2, &c, RV_MPA_PD_MAX);
	mpa("request-pd-short", false, RV_MPA_FLAG_CRC, 2, &c, RV_SOFT_CPD_LEN - 1);
	mpa("request-pd-not-rverbs", false, RV_MPA_FLAG_CRC, 2, NULL, RV_SOFT_CPD_LEN);
	c.caps |= RV_SOFT_CAP_XRC_INI;
	mpa("request-xrc-ini", false, RV_MPA_FLAG_CRC, 2, &c, RV_SOFT_CPD_LEN);
	c.caps &= ~(uint32_t)RV_SOFT_CAP_XRC_INI;
	c.rtr = RV_SOFT_RTR_P2P | RV_SOFT_RTR_SEND;
	mpa("request-send-rtr-only", false, RV_MPA_FLAG_CRC, 2, &c, RV_SOFT_CPD_LEN);
	c.src_qpn = 0xffffff;
	c.dst_qpn = 0x2;
	c.ird = c.ord = 0x3fff;
	mpa("request-qpn-limits", false, RV_MPA_FLAG_CRC, 2, &c, RV_SOFT_CPD_LEN);

	/* Refused or incomplete. */
	rv_wire_cpd_encode(buf + 100, RV_SOFT_CPD_LEN, &c);
	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	buf[17] = 3;
	put(mpa_dir, "rev3", buf, (size_t)n);
	buf[17] = 0;
	put(mpa_dir, "rev0", buf, (size_t)n);
	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	buf[18] = 0x02;
	buf[19] = 0x01; /* 513 bytes of private data */
	put(mpa_dir, "pd-513", buf, (size_t)n);
	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	buf[16] |= 0x0f; /* reserved flag bits: ignored */
	put(mpa_dir, "reserved-flags", buf, (size_t)n);
	n = rv_wire_mpa_encode(buf, sizeof(buf), &f);
	put(mpa_dir, "truncated-header", buf, 12);
	put(mpa_dir, "truncated-pd", buf, (size_t)n - 1);
	buf[9] = 'X';
	put(mpa_dir, "wrong-key", buf, (size_t)n);
	memcpy(buf, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	put(mpa_dir, "http", buf, 27);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s FPDU_CORPUS_DIR MPA_CORPUS_DIR\n", argv[0]);
		return 2;
	}
	fpdu_dir = argv[1];
	mpa_dir = argv[2];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 31 + 7);
	fpdus();
	mpas();
	return 0;
}
