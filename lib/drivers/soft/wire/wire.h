/*
 * The iWARP wire format of the software device: MPA request/reply frames
 * (RFC 5044 §7.1) with the rverbs connection private data, and FPDUs (RFC 5044
 * §4: MPA length, ULPDU, pad, CRC32c) carrying a DDP segment (RFC 5041 §4,
 * tagged or untagged) with its RDMAP header (RFC 5040 §4).
 *
 * Owns: encoding and decoding of bytes. PURE: no I/O, no allocation, no
 * global state besides the CRC table, no handles. Every decoder is safe on any
 * input bytes (it is a fuzz target): it reads only inside [buf, buf + len) and
 * returns a negative errno for anything malformed.
 *
 * Byte order: every header field is big-endian (network order). The CRC32c is
 * transmitted least significant byte first, as iSCSI does (RFC 3720 §12.1 and
 * its test vectors; RFC 5044 §4.1 refers to that definition).
 */
#ifndef RV_SOFT_WIRE_H
#define RV_SOFT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- MPA connection setup (RFC 5044 §7.1, RFC 6581 for revision 2) ---- */

#define RV_MPA_KEY_LEN 16
#define RV_MPA_HDR_LEN 20 /* key, flags, revision, private data length */
#define RV_MPA_PD_MAX 512
#define RV_MPA_FLAG_MARKERS 0x80u
#define RV_MPA_FLAG_CRC 0x40u
#define RV_MPA_FLAG_REJECT 0x20u

struct rv_mpa_frame {
	bool reply;        /* "MPA ID Rep Frame" rather than "MPA ID Req Frame" */
	uint8_t flags;     /* RV_MPA_FLAG_*; the low 4 bits are reserved */
	uint8_t rev;       /* 1 or 2 */
	uint16_t pd_len;   /* ≤ RV_MPA_PD_MAX */
	const uint8_t *pd; /* decode: points into the input */
};

/* Encode into buf; returns the frame length, -ENOSPC or -EINVAL. */
int rv_wire_mpa_encode(void *buf, size_t cap, const struct rv_mpa_frame *f);
/*
 * Decode one frame from the start of buf: returns its length (> 0), 0 when
 * more bytes are needed, or -EBADMSG (wrong key, revision not 1 or 2, private
 * data longer than RV_MPA_PD_MAX).
 */
int rv_wire_mpa_decode(const void *buf, size_t len, struct rv_mpa_frame *f);

/*
 * Revision 2 (RFC 6581, "enhanced connection establishment"): the private
 * data starts with two 16-bit words, IRD and ORD (14 bits each), whose top
 * bits carry the peer-to-peer flag and the RTR message types the sender can
 * send (request) or chose (reply).
 */
#define RV_MPA_V2_LEN 4
#define RV_MPA_V2_IRD_ORD_MASK 0x3fffu
#define RV_MPA_V2_P2P 0x8000u       /* IRD word: peer-to-peer mode, an RTR message follows */
#define RV_MPA_V2_SEND_RTR 0x4000u  /* IRD word: zero-length SEND as RTR */
#define RV_MPA_V2_WRITE_RTR 0x8000u /* ORD word: zero-length RDMA WRITE as RTR */
#define RV_MPA_V2_READ_RTR 0x4000u  /* ORD word: zero-length RDMA READ as RTR */

/*
 * The rverbs connection private data, carried in the MPA request and reply
 * (revision 2). It names both ends so that the listener can find the QP the
 * request is for, and offers the extensions the sender supports.
 * Layout (big-endian): RFC 6581 IRD word u16 | ORD word u16 | magic "RVS2" |
 * caps u32 | gid[16] | port u16 | min_rnr_timer u8 | rnr_retry u8 |
 * src_qpn u32 | dst_qpn u32 | reason u32.
 */
#define RV_SOFT_CPD_LEN 44

enum rv_soft_reject {
	RV_SOFT_REJECT_NONE = 0,
	RV_SOFT_REJECT_NO_QP = 1,     /* no QP with dst_qpn */
	RV_SOFT_REJECT_PEER = 2,      /* the QP expects another peer */
	RV_SOFT_REJECT_BUSY = 3,      /* the QP is already connected */
	RV_SOFT_REJECT_STATE = 4,     /* the QP is not in RTR/RTS in time */
	RV_SOFT_REJECT_PROTOCOL = 5,  /* malformed request */
	RV_SOFT_REJECT_MARKERS = 6,   /* the request asks for MPA markers */
	RV_SOFT_REJECT_REVISION = 7,  /* MPA revision other than 2 */
	RV_SOFT_REJECT_RTR = 8,       /* no RTR message type in common (RFC 6581) */
	RV_SOFT_REJECT_AUTH = 9,      /* authentication failed */
	RV_SOFT_REJECT_QP_TYPE = 10,  /* RC to UC or UC to RC (RV_SOFT_CAP_UC differs), XRC roles that do not pair */
};

/* RTR negotiation (RFC 6581), decoded from the IRD/ORD words. */
enum rv_soft_rtr {
	RV_SOFT_RTR_P2P = 1u << 0,
	RV_SOFT_RTR_SEND = 1u << 1,
	RV_SOFT_RTR_WRITE = 1u << 2,
	RV_SOFT_RTR_READ = 1u << 3,
};

/* Extensions a side supports (negotiated: used only when both offer them). */
enum rv_soft_caps {
	RV_SOFT_CAP_IMM = 1u << 0,    /* RFC 7306 immediate data */
	RV_SOFT_CAP_ATOMIC = 1u << 1, /* RFC 7306 atomics */
	RV_SOFT_CAP_RNR = 1u << 2,    /* receiver-not-ready notices (retry.c): finite rnr_retry */
	/* Not an offer but the QP type: set by a UC QP, clear for RC (a peer that
	 * predates it is RC). Both ends must agree, or the listener rejects. */
	RV_SOFT_CAP_UC = 1u << 3,
	/* Not offers either but the XRC roles (rverbs/xrcd.h): an XRC initiator
	 * sets INI, an XRC target TGT. An initiator connects only to a target
	 * and back, or the listener rejects (RV_SOFT_REJECT_QP_TYPE). On such a
	 * connection every message of DDP queue 0 names the target's XRC SRQ in
	 * its queue number (RV_SOFT_QN_XRC). */
	RV_SOFT_CAP_XRC_INI = 1u << 4,
	RV_SOFT_CAP_XRC_TGT = 1u << 5,
};

/* The queue number of a SEND or Immediate Data message on an XRC connection:
 * this flag or'ed with the 24-bit number of the XRC SRQ that receives it, in
 * place of RV_DDP_QN_SEND (0). A soft0 extension, used only between an XRC
 * initiator and target (RV_SOFT_CAP_XRC_*); other queue numbers unchanged. */
#define RV_SOFT_QN_XRC 0x58000000u /* 'X' in the top byte */
#define RV_SOFT_QN_XRC_MASK 0xff000000u

struct rv_soft_cpd {
	uint16_t ird, ord;     /* RFC 6581, 0..0x3fff */
	uint8_t rtr;           /* rv_soft_rtr bits */
	uint32_t caps;         /* rv_soft_caps bits */
	uint8_t gid[16];       /* the sender's port GID */
	uint16_t port;         /* the sender's listen port (its LID) */
	uint8_t min_rnr_timer; /* the sender's, as a receiver */
	uint8_t rnr_retry;     /* the sender's, as a requester */
	uint32_t src_qpn;      /* the sender's QP */
	uint32_t dst_qpn;      /* the receiver's QP */
	uint32_t reason;       /* reply only: an rv_soft_reject */
};

int rv_wire_cpd_encode(void *buf, size_t cap, const struct rv_soft_cpd *p);
/* -EBADMSG unless len ≥ RV_SOFT_CPD_LEN with the right magic and 24-bit QPNs
 * (IRD/ORD are masked to 14 bits, unknown caps bits are kept). */
int rv_wire_cpd_decode(const void *buf, size_t len, struct rv_soft_cpd *p);

/* ---- FPDUs: MPA framing + DDP + RDMAP ---- */

enum rv_rdmap_opcode {
	RV_RDMAP_WRITE = 0x0,
	RV_RDMAP_READ_REQ = 0x1,
	RV_RDMAP_READ_RESP = 0x2,
	RV_RDMAP_SEND = 0x3,
	RV_RDMAP_SEND_INV = 0x4,
	RV_RDMAP_SEND_SE = 0x5,
	RV_RDMAP_SEND_SE_INV = 0x6,
	RV_RDMAP_TERMINATE = 0x7,
	/* RFC 7306, used only when both sides offered them (RV_SOFT_CAP_*). */
	RV_RDMAP_IMM = 0x8,         /* Immediate Data: 8 bytes, untagged QN 0 */
	RV_RDMAP_IMM_SE = 0x9,      /* Immediate Data with Solicited Event */
	RV_RDMAP_ATOMIC_REQ = 0xa,  /* Atomic Request: untagged QN 1 (shares the READ request MSNs) */
	RV_RDMAP_ATOMIC_RESP = 0xb, /* Atomic Response: untagged QN 3 */
};

/*
 * The one table of the RDMAP opcodes, a row each:
 *   X(name, tagged, payload layout, fixed payload length or 0, rx handler, fuzz seed)
 * wire.c's encoder and decoder take the tagged check, the payload's layout
 * and its length check from it (op_rows[]); iwarp/rx.c its dispatch
 * (rx_<handler>: a row without its handler does not compile);
 * tests/test-soft-opcodes.c checks that tests/fuzz/corpus/wire-fpdu/ has a
 * seed named <fuzz seed> or <fuzz seed>-* for each. soft0's private opcodes
 * (soft.h, SOFT_OP_*) have no row: they carry plain data.
 */
#define RV_RDMAP_OPCODE_TABLE(X)                                                          \
	X(WRITE,        true,  DATA,  0,                        write,       "write")       \
	X(READ_REQ,     false, RREQ,  RV_RDMAP_READ_REQ_LEN,    read_req,    "read-req")    \
	X(READ_RESP,    true,  DATA,  0,                        read_resp,   "read-resp")   \
	X(SEND,         false, DATA,  0,                        send,        "send")        \
	X(SEND_INV,     false, DATA,  0,                        send,        "send-inv")    \
	X(SEND_SE,      false, DATA,  0,                        send,        "send-se")     \
	X(SEND_SE_INV,  false, DATA,  0,                        send,        "send-se-inv") \
	X(TERMINATE,    false, TERM,  0,                        terminate,   "term")        \
	X(IMM,          false, IMM,   RV_RDMAP_IMM_LEN,         imm,         "imm")         \
	X(IMM_SE,       false, IMM,   RV_RDMAP_IMM_LEN,         imm,         "imm-se")      \
	X(ATOMIC_REQ,   false, AREQ,  RV_RDMAP_ATOMIC_REQ_LEN,  atomic_req,  "atomic-req")  \
	X(ATOMIC_RESP,  false, ARESP, RV_RDMAP_ATOMIC_RESP_LEN, atomic_resp, "atomic-resp")

enum rv_ddp_qn {
	RV_DDP_QN_SEND = 0,
	RV_DDP_QN_READ = 1,
	RV_DDP_QN_TERM = 2,
	RV_DDP_QN_ATOMIC_RESP = 3,
};

/* RFC 7306 payloads (after the 18-byte untagged DDP/RDMAP header). */
#define RV_RDMAP_IMM_LEN 8
#define RV_RDMAP_ATOMIC_REQ_LEN 52  /* opcode, request id, STag, TO, 2 data/mask pairs */
#define RV_RDMAP_ATOMIC_RESP_LEN 12 /* request id, original value */
#define RV_ATOMIC_FETCH_ADD 0u
#define RV_ATOMIC_CMP_SWAP 2u
/* The RsvdULP field of a SEND whose Immediate Data message follows (rverbs'
 * SEND with immediate: the receive WR completes on the Immediate Data). */
#define RV_SOFT_SEND_IMM_FOLLOWS 0x1u

struct rv_atomic_req {
	uint32_t op;      /* RV_ATOMIC_FETCH_ADD or RV_ATOMIC_CMP_SWAP (low 4 bits) */
	uint32_t req_id;
	uint32_t stag;
	uint64_t to;
	uint64_t swap_add, swap_add_mask;
	uint64_t compare, compare_mask;
};

#define RV_DDP_TAGGED_HDR 14   /* control(2) STag(4) TO(8) */
#define RV_DDP_UNTAGGED_HDR 18 /* control(2) RsvdULP(4) QN(4) MSN(4) MO(4) */
#define RV_RDMAP_READ_REQ_LEN 28
#define RV_ULPDU_MAX 65535u
/* Everything an FPDU adds around its payload, at most: length, header, pad, CRC. */
#define RV_FPDU_OVERHEAD (2 + RV_DDP_UNTAGGED_HDR + 3 + 4)
#define RV_FPDU_MAX (2 + RV_ULPDU_MAX + 3 + 4)

/* Terminate layers, types and codes (RFC 5040 §4.8, §7; RFC 5041 §7; RFC 5044 §8). */
enum rv_term_layer { RV_TERM_RDMAP = 0, RV_TERM_DDP = 1, RV_TERM_LLP = 2 };
enum rv_term_rdmap_etype {
	RV_TERM_RDMAP_LOCAL_CATA = 0,
	RV_TERM_RDMAP_REMOTE_PROT = 1,
	RV_TERM_RDMAP_REMOTE_OP = 2,
};
enum rv_term_rdmap_ecode {
	RV_TERM_RDMAP_INV_STAG = 0x00,
	RV_TERM_RDMAP_BOUNDS = 0x01,
	RV_TERM_RDMAP_ACCESS = 0x02,
	RV_TERM_RDMAP_STREAM = 0x03, /* STag not associated with this stream (PD) */
	RV_TERM_RDMAP_TO_WRAP = 0x04,
	RV_TERM_RDMAP_VERSION = 0x05,
	RV_TERM_RDMAP_OPCODE = 0x06,
	RV_TERM_RDMAP_CATA_STREAM = 0x07,
	RV_TERM_RDMAP_CATA_GLOBAL = 0x08,
	RV_TERM_RDMAP_NO_INV = 0x09,
	RV_TERM_RDMAP_UNSPEC = 0xff,
};
enum rv_term_ddp_etype { RV_TERM_DDP_CATA = 0, RV_TERM_DDP_TAGGED = 1, RV_TERM_DDP_UNTAGGED = 2 };
enum rv_term_ddp_ecode {
	/* tagged buffer errors */
	RV_TERM_DDP_T_INV_STAG = 0x00,
	RV_TERM_DDP_T_BOUNDS = 0x01,
	RV_TERM_DDP_T_STREAM = 0x02,
	RV_TERM_DDP_T_TO_WRAP = 0x03,
	RV_TERM_DDP_T_VERSION = 0x04,
	/* untagged buffer errors */
	RV_TERM_DDP_U_QN = 0x01,
	RV_TERM_DDP_U_NO_BUF = 0x02,
	RV_TERM_DDP_U_MSN = 0x03,
	RV_TERM_DDP_U_MO = 0x04,
	RV_TERM_DDP_U_TOO_LONG = 0x05,
	RV_TERM_DDP_U_VERSION = 0x06,
};
enum rv_term_llp_ecode { RV_TERM_LLP_CRC = 0x02, RV_TERM_LLP_MARKER = 0x03, RV_TERM_LLP_FPDU = 0x04 };

struct rv_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

struct rv_term {
	uint8_t layer, etype, ecode;
	bool m, d, r;      /* segment length / DDP header / RDMAP header present */
	uint16_t seg_len;  /* length of the terminated DDP segment */
	/* Encode: the terminated DDP+RDMAP header bytes as received (d), then,
	 * for a READ request, its 28 bytes (r). Decode: points into the input. */
	const uint8_t *hdr;
	uint16_t hdr_len;
	/* Decode: the terminated DDP header, parsed (valid when d). */
	bool ddp_tagged;
	uint8_t ddp_opcode;
	uint32_t ddp_stag, ddp_qn, ddp_msn, ddp_mo;
	uint64_t ddp_to;
	bool has_rreq;
	struct rv_read_req rreq; /* valid when has_rreq */
};

struct rv_fpdu {
	uint8_t opcode; /* enum rv_rdmap_opcode */
	bool tagged;    /* DDP T bit */
	bool last;      /* DDP L bit */
	/* tagged */
	uint32_t stag;
	uint64_t to;
	/* untagged */
	uint32_t inv_stag; /* RsvdULP: the STag to invalidate (SEND with invalidate) */
	uint32_t qn, msn, mo;
	/* The ULP payload after the DDP/RDMAP header. Decode: points into the
	 * input. Encode: copied by rv_wire_fpdu_encode (not for READ_REQ and
	 * TERMINATE, whose payload comes from rreq / term). */
	const uint8_t *payload;
	uint32_t payload_len;
	/* Decode: the DDP+RDMAP header bytes (for a TERMINATE that quotes them). */
	const uint8_t *hdr;
	uint8_t hdr_len;
	struct rv_read_req rreq; /* READ_REQ */
	struct rv_term term;     /* TERMINATE */
	struct rv_atomic_req areq; /* ATOMIC_REQ */
	uint32_t aresp_id;       /* ATOMIC_RESP: the request id */
	uint64_t aresp_orig;     /* ATOMIC_RESP: the value before the operation */
	uint64_t imm;            /* IMM, IMM_SE: the 8 bytes as a big-endian number */
};

/* The DDP+RDMAP header length (14 or 18). */
static inline size_t rv_wire_ddp_hdr_len(bool tagged)
{
	return tagged ? RV_DDP_TAGGED_HDR : RV_DDP_UNTAGGED_HDR;
}

/* The whole FPDU length for a ULPDU (DDP header + payload) of ulpdu_len bytes. */
static inline size_t rv_wire_fpdu_len(size_t ulpdu_len)
{
	return (2 + ulpdu_len + 3) / 4 * 4 + 4;
}

/*
 * Two-step encoding for callers that gather the payload themselves:
 * rv_wire_fpdu_begin writes the MPA length and the DDP/RDMAP header for a
 * payload of payload_len bytes and returns the offset of the payload; the
 * caller writes the payload there; rv_wire_fpdu_seal writes the pad and the
 * CRC and returns the FPDU length. buf must have room for
 * rv_wire_fpdu_len(rv_wire_ddp_hdr_len(f->tagged) + payload_len) bytes, and
 * the ULPDU must not exceed RV_ULPDU_MAX (the caller's job).
 */
static inline size_t rv_wire_fpdu_begin(uint8_t *buf, const struct rv_fpdu *f, size_t payload_len);
size_t rv_wire_fpdu_seal(uint8_t *buf);
/*
 * As rv_wire_fpdu_seal, for a stream that negotiated CRC off: the CRC field is
 * still there (RFC 5044 §4) and carries zero.
 */
size_t rv_wire_fpdu_seal_crc(uint8_t *buf, bool crc);

/*
 * Encode a whole FPDU: the payload from f->payload (or from f->rreq for a
 * READ_REQ, f->term for a TERMINATE). Returns its length, -ENOSPC when cap is
 * too small, -EMSGSIZE when the ULPDU exceeds RV_ULPDU_MAX.
 */
int rv_wire_fpdu_encode(void *buf, size_t cap, const struct rv_fpdu *f);
/* As rv_wire_fpdu_encode; crc false writes a zero CRC field. */
int rv_wire_fpdu_encode_crc(void *buf, size_t cap, const struct rv_fpdu *f, bool crc);

/* The length of the FPDU starting at buf, 0 if fewer than 2 bytes are there. */
size_t rv_wire_fpdu_peek(const void *buf, size_t len);

/*
 * Decode and verify one FPDU at the start of buf. Returns its length (> 0),
 * 0 when more bytes are needed, or:
 *   -EMSGSIZE         the MPA length cannot hold a DDP header
 *   -EILSEQ           CRC mismatch
 *   -EPROTO           DDP version not 1
 *   -EPROTONOSUPPORT  RDMAP version not 1
 *   -EBADMSG          a malformed header: T bit contradicting the opcode, a
 *                     READ request that is not 28 bytes, a bad TERMINATE, an
 *                     RFC 7306 message of the wrong length (8, 52, 12)
 * f is written as the decoding goes (no copy of the ~150-byte struct; the
 * ring's receive path decodes every frame): on success every header field
 * and the body of its opcode (rreq, term, areq, aresp_*, imm; pointers into
 * buf) are set, the other opcodes' bodies are left as they were; on failure
 * its contents are unspecified.
 */
int rv_wire_fpdu_decode(const void *buf, size_t len, struct rv_fpdu *f);
/* As rv_wire_fpdu_decode; crc false does not check the CRC field (RFC 5044 §4:
 * without CRC the receiver ignores it). */
int rv_wire_fpdu_decode_crc(const void *buf, size_t len, struct rv_fpdu *f, bool crc);

/*
 * The header of the FPDU starting at buf, before its payload has arrived
 * (direct placement): the MPA length and the DDP/RDMAP header, with the
 * checks rv_wire_fpdu_decode makes on them. Returns the whole FPDU's length
 * (> 0), 0 when the header is not all there, or the errors of
 * rv_wire_fpdu_decode for the header. f gets the header fields, hdr and
 * payload_len; payload is NULL and nothing opcode-specific is decoded.
 */
int rv_wire_fpdu_head(const void *buf, size_t len, struct rv_fpdu *f);

/* ---- Inline encoders: the header of a frame framed at post time
 * (iwarp/tx.c's data_head) is written where its fields are known, without a
 * call or a struct read back through memory (issue 22, shmlat6). ---- */

/* DDP/RDMAP control word (RFC 5041 §4.2, RFC 5040 §4.3). */
#define RV_WIRE_CTL_T 0x8000u
#define RV_WIRE_CTL_L 0x4000u
#define RV_WIRE_CTL_DV_SHIFT 8
#define RV_WIRE_CTL_RV_SHIFT 6
#define RV_WIRE_CTL_OPCODE 0x000fu
#define RV_WIRE_DDP_VERSION 1u
#define RV_WIRE_RDMAP_VERSION 1u

/* Big-endian stores (network order). A byte swap and one store each: the
 * byte-wise form, inlined into a caller, was assembled by shifts and ors
 * (146 instructions for data_head's header against 88 with the call). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RV_WIRE_BE16(v) __builtin_bswap16(v)
#define RV_WIRE_BE32(v) __builtin_bswap32(v)
#define RV_WIRE_BE64(v) __builtin_bswap64(v)
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RV_WIRE_BE16(v) (v)
#define RV_WIRE_BE32(v) (v)
#define RV_WIRE_BE64(v) (v)
#else
#error "wire.h: unknown byte order"
#endif

static inline void rv_wire_put16(uint8_t *p, uint16_t v)
{
	v = RV_WIRE_BE16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rv_wire_put32(uint8_t *p, uint32_t v)
{
	v = RV_WIRE_BE32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rv_wire_put64(uint8_t *p, uint64_t v)
{
	v = RV_WIRE_BE64(v);
	memcpy(p, &v, sizeof(v));
}

static inline size_t rv_wire_fpdu_begin(uint8_t *buf, const struct rv_fpdu *f, size_t payload_len)
{
	size_t hlen = rv_wire_ddp_hdr_len(f->tagged);
	uint16_t ctl = (uint16_t)(RV_WIRE_DDP_VERSION << RV_WIRE_CTL_DV_SHIFT |
				  RV_WIRE_RDMAP_VERSION << RV_WIRE_CTL_RV_SHIFT | (f->opcode & RV_WIRE_CTL_OPCODE));

	if (f->tagged)
		ctl |= RV_WIRE_CTL_T;
	if (f->last)
		ctl |= RV_WIRE_CTL_L;
	rv_wire_put16(buf, (uint16_t)(hlen + payload_len));
	rv_wire_put16(buf + 2, ctl);
	if (f->tagged) {
		rv_wire_put32(buf + 4, f->stag);
		rv_wire_put64(buf + 8, f->to);
	} else {
		rv_wire_put32(buf + 4, f->inv_stag);
		rv_wire_put32(buf + 8, f->qn);
		rv_wire_put32(buf + 12, f->msn);
		rv_wire_put32(buf + 16, f->mo);
	}
	return 2 + hlen;
}

#endif
