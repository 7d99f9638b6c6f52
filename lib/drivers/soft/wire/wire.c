/*
 * Encoding and decoding of MPA frames and FPDUs (see wire.h for the formats).
 *
 * Owns: byte layouts only. Never does I/O, never allocates, never reads
 * outside the buffer it was given; it must stay safe on hostile input.
 */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "wire.h"

static const char mpa_key_req[RV_MPA_KEY_LEN] = {'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
						 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'};
static const char mpa_key_rep[RV_MPA_KEY_LEN] = {'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
						 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'};
static const uint8_t cpd_magic[4] = {'R', 'V', 'S', '2'};

/* DDP/RDMAP control word (RFC 5041 §4.2, RFC 5040 §4.3): wire.h. */
#define CTL_T RV_WIRE_CTL_T
#define CTL_L RV_WIRE_CTL_L
#define CTL_DV_SHIFT RV_WIRE_CTL_DV_SHIFT
#define CTL_DV_MASK 0x0300u
#define CTL_RV_SHIFT RV_WIRE_CTL_RV_SHIFT
#define CTL_RV_MASK 0x00c0u
#define CTL_OPCODE RV_WIRE_CTL_OPCODE
#define DDP_VERSION RV_WIRE_DDP_VERSION
#define RDMAP_VERSION RV_WIRE_RDMAP_VERSION

/* Terminate header control bits (RFC 5040 §4.8). */
#define TERM_M 0x8000u
#define TERM_D 0x4000u
#define TERM_R 0x2000u

#define put16 rv_wire_put16
#define put32 rv_wire_put32
#define put64 rv_wire_put64

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ---- MPA request/reply ---- */

int rv_wire_mpa_encode(void *buf, size_t cap, const struct rv_mpa_frame *f)
{
	uint8_t *p = buf;

	if (f->pd_len > RV_MPA_PD_MAX || (f->pd_len && !f->pd) || f->rev < 1 || f->rev > 2)
		return -EINVAL;
	if (cap < RV_MPA_HDR_LEN + (size_t)f->pd_len)
		return -ENOSPC;
	memcpy(p, f->reply ? mpa_key_rep : mpa_key_req, RV_MPA_KEY_LEN);
	p[16] = f->flags & 0xf0u;
	p[17] = f->rev;
	put16(p + 18, f->pd_len);
	if (f->pd_len)
		memcpy(p + RV_MPA_HDR_LEN, f->pd, f->pd_len);
	return RV_MPA_HDR_LEN + f->pd_len;
}

int rv_wire_mpa_decode(const void *buf, size_t len, struct rv_mpa_frame *f)
{
	const uint8_t *p = buf;
	bool reply;
	uint16_t pd_len;

	/* Reject a wrong key as early as its first differing byte. */
	for (size_t i = 0; i < len && i < RV_MPA_KEY_LEN; i++)
		if (p[i] != (uint8_t)mpa_key_req[i] && p[i] != (uint8_t)mpa_key_rep[i])
			return -EBADMSG;
	if (len < RV_MPA_HDR_LEN)
		return 0;
	if (memcmp(p, mpa_key_req, RV_MPA_KEY_LEN) == 0)
		reply = false;
	else if (memcmp(p, mpa_key_rep, RV_MPA_KEY_LEN) == 0)
		reply = true;
	else
		return -EBADMSG;
	if (p[17] < 1 || p[17] > 2)
		return -EBADMSG;
	pd_len = get16(p + 18);
	if (pd_len > RV_MPA_PD_MAX)
		return -EBADMSG;
	if (len < RV_MPA_HDR_LEN + (size_t)pd_len)
		return 0;
	f->reply = reply;
	f->flags = p[16] & 0xf0u;
	f->rev = p[17];
	f->pd_len = pd_len;
	f->pd = pd_len ? p + RV_MPA_HDR_LEN : NULL;
	return RV_MPA_HDR_LEN + pd_len;
}

int rv_wire_cpd_encode(void *buf, size_t cap, const struct rv_soft_cpd *c)
{
	uint8_t *p = buf;
	uint16_t ird = c->ird & RV_MPA_V2_IRD_ORD_MASK, ord = c->ord & RV_MPA_V2_IRD_ORD_MASK;

	if (cap < RV_SOFT_CPD_LEN)
		return -ENOSPC;
	if (c->rtr & RV_SOFT_RTR_P2P)
		ird |= RV_MPA_V2_P2P;
	if (c->rtr & RV_SOFT_RTR_SEND)
		ird |= RV_MPA_V2_SEND_RTR;
	if (c->rtr & RV_SOFT_RTR_WRITE)
		ord |= RV_MPA_V2_WRITE_RTR;
	if (c->rtr & RV_SOFT_RTR_READ)
		ord |= RV_MPA_V2_READ_RTR;
	put16(p, ird);
	put16(p + 2, ord);
	memcpy(p + 4, cpd_magic, 4);
	put32(p + 8, c->caps);
	memcpy(p + 12, c->gid, 16);
	put16(p + 28, c->port);
	p[30] = c->min_rnr_timer;
	p[31] = c->rnr_retry;
	put32(p + 32, c->src_qpn);
	put32(p + 36, c->dst_qpn);
	put32(p + 40, c->reason);
	return RV_SOFT_CPD_LEN;
}

int rv_wire_cpd_decode(const void *buf, size_t len, struct rv_soft_cpd *c)
{
	const uint8_t *p = buf;
	struct rv_soft_cpd t;
	uint16_t ird, ord;

	if (!p || len < RV_SOFT_CPD_LEN || memcmp(p + 4, cpd_magic, 4) != 0)
		return -EBADMSG;
	ird = get16(p);
	ord = get16(p + 2);
	t.ird = ird & RV_MPA_V2_IRD_ORD_MASK;
	t.ord = ord & RV_MPA_V2_IRD_ORD_MASK;
	t.rtr = (uint8_t)((ird & RV_MPA_V2_P2P ? RV_SOFT_RTR_P2P : 0) |
			  (ird & RV_MPA_V2_SEND_RTR ? RV_SOFT_RTR_SEND : 0) |
			  (ord & RV_MPA_V2_WRITE_RTR ? RV_SOFT_RTR_WRITE : 0) |
			  (ord & RV_MPA_V2_READ_RTR ? RV_SOFT_RTR_READ : 0));
	t.caps = get32(p + 8);
	memcpy(t.gid, p + 12, 16);
	t.port = get16(p + 28);
	t.min_rnr_timer = p[30];
	t.rnr_retry = p[31];
	t.src_qpn = get32(p + 32);
	t.dst_qpn = get32(p + 36);
	t.reason = get32(p + 40);
	if (t.src_qpn > 0xffffff || t.dst_qpn > 0xffffff)
		return -EBADMSG;
	*c = t;
	return RV_SOFT_CPD_LEN;
}

/* ---- FPDUs ---- */

/*
 * The RDMAP opcodes (RFC 5040 §4.2, RFC 7306 §5): one row each, made from
 * wire.h's RV_RDMAP_OPCODE_TABLE, from which the encoder and the decoder take
 * whether the opcode is tagged, how its payload is laid out and, for the
 * fixed layouts, its one valid length. A new opcode is a row there and, if
 * its payload has fields of its own, a case of body_put/body_get. Opcodes
 * without a row (soft0's private ones, the unassigned) carry plain data and
 * may be tagged or not; their meaning is the receiver's (rx.c).
 */
enum op_body {
	BODY_DATA,  /* payload_len bytes of data (WRITE, READ response, SENDs) */
	BODY_RREQ,  /* a READ request */
	BODY_TERM,  /* a TERMINATE message: variable, term_decode checks it */
	BODY_IMM,   /* 8 bytes of immediate data */
	BODY_AREQ,  /* an atomic request */
	BODY_ARESP, /* an atomic response */
};

struct op_row {
	bool known;      /* a standard opcode: its tagged bit must match */
	bool tagged;
	uint8_t body;    /* enum op_body */
	uint8_t len;     /* the payload length of a fixed layout, 0 if variable */
};

#define OP_ROW(name, tagged, body, len, handler, seed) [RV_RDMAP_##name] = {true, tagged, BODY_##body, len},
static const struct op_row op_rows[CTL_OPCODE + 1] = {RV_RDMAP_OPCODE_TABLE(OP_ROW)};
#undef OP_ROW

/* Plain data: the row of an opcode beyond the 4 bits of the field, which an
 * encoder's caller may pass (the header keeps its low 4 bits). */
static const struct op_row op_data = {false, false, BODY_DATA, 0};

static const struct op_row *op_row(uint8_t op)
{
	return op <= CTL_OPCODE ? &op_rows[op] : &op_data;
}

static void areq_put(uint8_t *p, const struct rv_atomic_req *a)
{
	put32(p, a->op & 0xfu);
	put32(p + 4, a->req_id);
	put32(p + 8, a->stag);
	put64(p + 12, a->to);
	put64(p + 20, a->swap_add);
	put64(p + 28, a->swap_add_mask);
	put64(p + 36, a->compare);
	put64(p + 44, a->compare_mask);
}

static void areq_get(const uint8_t *p, struct rv_atomic_req *a)
{
	a->op = get32(p) & 0xfu;
	a->req_id = get32(p + 4);
	a->stag = get32(p + 8);
	a->to = get64(p + 12);
	a->swap_add = get64(p + 20);
	a->swap_add_mask = get64(p + 28);
	a->compare = get64(p + 36);
	a->compare_mask = get64(p + 44);
}

/* rv_wire_fpdu_begin is inline in wire.h (the post frames with it). */

size_t rv_wire_fpdu_seal(uint8_t *buf)
{
	return rv_wire_fpdu_seal_crc(buf, true);
}

size_t rv_wire_fpdu_seal_crc(uint8_t *buf, bool use_crc)
{
	size_t n = 2 + (size_t)get16(buf);
	size_t total = rv_wire_fpdu_len(n - 2);
	uint32_t crc;

	while (n < total - 4)
		buf[n++] = 0;
	crc = use_crc ? rv_crc32c(0, buf, n) : 0;
	buf[n] = (uint8_t)crc;
	buf[n + 1] = (uint8_t)(crc >> 8);
	buf[n + 2] = (uint8_t)(crc >> 16);
	buf[n + 3] = (uint8_t)(crc >> 24);
	return total;
}

static void rreq_put(uint8_t *p, const struct rv_read_req *r)
{
	put32(p, r->sink_stag);
	put64(p + 4, r->sink_to);
	put32(p + 12, r->size);
	put32(p + 16, r->src_stag);
	put64(p + 20, r->src_to);
}

static void rreq_get(const uint8_t *p, struct rv_read_req *r)
{
	r->sink_stag = get32(p);
	r->sink_to = get64(p + 4);
	r->size = get32(p + 12);
	r->src_stag = get32(p + 16);
	r->src_to = get64(p + 20);
}

static size_t term_len(const struct rv_term *t)
{
	return 4 + ((t->m || t->d || t->r) ? 2u + t->hdr_len : 0u);
}

int rv_wire_fpdu_encode(void *buf, size_t cap, const struct rv_fpdu *f)
{
	return rv_wire_fpdu_encode_crc(buf, cap, f, true);
}

int rv_wire_fpdu_encode_crc(void *buf, size_t cap, const struct rv_fpdu *f, bool crc)
{
	uint8_t *p = buf;
	const struct op_row *row = op_row(f->opcode);
	size_t plen, off, hlen = rv_wire_ddp_hdr_len(f->tagged);

	if (row->len)
		plen = row->len;
	else if (row->body == BODY_TERM)
		plen = term_len(&f->term);
	else
		plen = f->payload_len;
	if (hlen + plen > RV_ULPDU_MAX)
		return -EMSGSIZE;
	if (cap < rv_wire_fpdu_len(hlen + plen))
		return -ENOSPC;
	off = rv_wire_fpdu_begin(p, f, plen);
	switch (row->body) {
	case BODY_RREQ:
		rreq_put(p + off, &f->rreq);
		break;
	case BODY_AREQ:
		areq_put(p + off, &f->areq);
		break;
	case BODY_ARESP:
		put32(p + off, f->aresp_id);
		put64(p + off + 4, f->aresp_orig);
		break;
	case BODY_IMM:
		put64(p + off, f->imm);
		break;
	case BODY_TERM: {
		const struct rv_term *t = &f->term;
		uint16_t ctl = (uint16_t)((t->m ? TERM_M : 0) | (t->d ? TERM_D : 0) | (t->r ? TERM_R : 0));
		p[off] = (uint8_t)((t->layer & 0xf) << 4 | (t->etype & 0xf));
		p[off + 1] = t->ecode;
		put16(p + off + 2, ctl);
		if (t->m || t->d || t->r) {
			put16(p + off + 4, t->seg_len);
			if (t->hdr_len)
				memcpy(p + off + 6, t->hdr, t->hdr_len);
		}
		break;
	}
	default:
		if (plen)
			memcpy(p + off, f->payload, plen);
		break;
	}
	return (int)rv_wire_fpdu_seal_crc(p, crc);
}

size_t rv_wire_fpdu_peek(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	return len < 2 ? 0 : rv_wire_fpdu_len(get16(p));
}

static int term_decode(const uint8_t *p, size_t len, struct rv_term *t)
{
	uint16_t ctl;

	memset(t, 0, sizeof(*t));
	if (len < 4)
		return -EBADMSG;
	t->layer = p[0] >> 4;
	t->etype = p[0] & 0xf;
	t->ecode = p[1];
	ctl = get16(p + 2);
	t->m = ctl & TERM_M;
	t->d = ctl & TERM_D;
	t->r = ctl & TERM_R;
	if (!(t->m || t->d || t->r))
		return 0;
	if (len < 6)
		return -EBADMSG;
	t->seg_len = get16(p + 4);
	t->hdr = p + 6;
	t->hdr_len = (uint16_t)(len - 6);
	if (t->d) {
		const uint8_t *h = t->hdr;
		uint16_t dctl;
		size_t hl;

		if (t->hdr_len < 2)
			return -EBADMSG;
		dctl = get16(h);
		t->ddp_tagged = dctl & CTL_T;
		t->ddp_opcode = dctl & CTL_OPCODE;
		hl = rv_wire_ddp_hdr_len(t->ddp_tagged);
		if (t->hdr_len < hl)
			return -EBADMSG;
		if (t->ddp_tagged) {
			t->ddp_stag = get32(h + 2);
			t->ddp_to = get64(h + 6);
		} else {
			t->ddp_qn = get32(h + 6);
			t->ddp_msn = get32(h + 10);
			t->ddp_mo = get32(h + 14);
		}
		if (t->r && !t->ddp_tagged && t->ddp_opcode == RV_RDMAP_READ_REQ &&
		    t->hdr_len >= hl + RV_RDMAP_READ_REQ_LEN) {
			t->has_rreq = true;
			rreq_get(h + hl, &t->rreq);
		}
	}
	return 0;
}

/* The DDP/RDMAP header of the FPDU at p whose ULPDU is ulpdu bytes, of which
 * len bytes from p are at hand: 1 and the header fields of *f set (every
 * one of them, the other kind's zero; payload NULL, the opcode bodies not
 * touched), 0 when the header is not all there yet, or a negative errno for
 * a bad header (*f then partly written). No memset of the whole struct: it
 * is ~150 bytes, most of them opcode bodies a SEND never reads (shmlat5).
 * Shared by rv_wire_fpdu_head and rv_wire_fpdu_decode_crc, which must agree
 * (the wire fuzzer checks it). */
static int ddp_header(const uint8_t *p, size_t ulpdu, size_t len, struct rv_fpdu *f)
{
	size_t hlen;
	uint16_t ctl;
	bool tagged;
	uint8_t opcode;

	ctl = get16(p + 2);
	if ((ctl & CTL_DV_MASK) >> CTL_DV_SHIFT != DDP_VERSION)
		return -EPROTO;
	if ((ctl & CTL_RV_MASK) >> CTL_RV_SHIFT != RDMAP_VERSION)
		return -EPROTONOSUPPORT;
	tagged = ctl & CTL_T;
	opcode = ctl & CTL_OPCODE;
	hlen = rv_wire_ddp_hdr_len(tagged);
	if (ulpdu < hlen)
		return -EMSGSIZE;
	if (len < 2 + hlen)
		return 0;
	if (op_row(opcode)->known && op_row(opcode)->tagged != tagged)
		return -EBADMSG;
	f->opcode = opcode;
	f->tagged = tagged;
	f->last = ctl & CTL_L;
	if (tagged) {
		f->stag = get32(p + 4);
		f->to = get64(p + 8);
		f->inv_stag = f->qn = f->msn = f->mo = 0;
	} else {
		f->stag = 0;
		f->to = 0;
		f->inv_stag = get32(p + 4);
		f->qn = get32(p + 8);
		f->msn = get32(p + 12);
		f->mo = get32(p + 16);
	}
	f->payload = NULL;
	f->hdr = p + 2;
	f->hdr_len = (uint8_t)hlen;
	f->payload_len = (uint32_t)(ulpdu - hlen);
	return 1;
}

int rv_wire_fpdu_head(const void *buf, size_t len, struct rv_fpdu *out)
{
	const uint8_t *p = buf;
	struct rv_fpdu f;
	size_t ulpdu;
	int rc;

	if (len < 2 + RV_DDP_TAGGED_HDR)
		return 0;
	ulpdu = get16(p);
	if (ulpdu < RV_DDP_TAGGED_HDR)
		return -EMSGSIZE;
	memset(&f, 0, sizeof(f)); /* as before: the bodies zero (not the ring's path) */
	rc = ddp_header(p, ulpdu, len, &f);
	if (rc <= 0)
		return rc;
	*out = f;
	return (int)rv_wire_fpdu_len(ulpdu);
}

int rv_wire_fpdu_decode(const void *buf, size_t len, struct rv_fpdu *out)
{
	return rv_wire_fpdu_decode_crc(buf, len, out, true);
}

int rv_wire_fpdu_decode_crc(const void *buf, size_t len, struct rv_fpdu *out, bool use_crc)
{
	const uint8_t *p = buf;
	const struct op_row *row;
	size_t ulpdu, total, hlen, body;
	uint32_t crc, sent;
	int rc; /* ddp_header cannot return 0 here: the whole FPDU is at hand */

	if (len < 2)
		return 0;
	ulpdu = get16(p);
	if (ulpdu < RV_DDP_TAGGED_HDR)
		return -EMSGSIZE;
	total = rv_wire_fpdu_len(ulpdu);
	if (len < total)
		return 0;
	body = total - 4;
	if (use_crc) {
		crc = rv_crc32c(0, p, body);
		sent = (uint32_t)p[body] | (uint32_t)p[body + 1] << 8 | (uint32_t)p[body + 2] << 16 |
		       (uint32_t)p[body + 3] << 24;
		if (crc != sent)
			return -EILSEQ;
	}

	rc = ddp_header(p, ulpdu, len, out); /* straight into the caller's struct */
	if (rc < 0)
		return rc;
	hlen = out->hdr_len;
	out->payload = p + 2 + hlen;
	row = op_row(out->opcode);
	if (row->len && out->payload_len != row->len)
		return -EBADMSG;
	switch (row->body) {
	case BODY_RREQ:
		rreq_get(out->payload, &out->rreq);
		break;
	case BODY_TERM:
		if (term_decode(out->payload, out->payload_len, &out->term) < 0)
			return -EBADMSG;
		break;
	case BODY_AREQ:
		areq_get(out->payload, &out->areq);
		break;
	case BODY_ARESP:
		out->aresp_id = get32(out->payload);
		out->aresp_orig = get64(out->payload + 4);
		break;
	case BODY_IMM:
		out->imm = get64(out->payload);
		break;
	default:
		break;
	}
	return (int)total;
}
