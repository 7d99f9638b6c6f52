/*
 * RoCEv2 framing of soft0's UD datagrams (IBTA Annex A17 over IBA 1.4 ch. 9):
 * the UDP payload is BTH + DETH (+ ImmDt) + payload + pad + ICRC.
 *
 * Owns: the encoding and decoding of that payload, the ICRC, the IP
 * headers soft0 puts in a receive buffer's GRH area, and the MAC trailer and
 * replay window of authenticated UD (below). Pure: no I/O, no allocation, no
 * locks; fuzzable (tests/test-soft-roce.c, tests/fuzz/fuzz-roce-ud.c).
 *
 * The ICRC (IBA §7.8.1, Annex A17.3.3) is the CRC-32 of Ethernet (reflected
 * polynomial 0xEDB88320, initial value and final XOR all ones), sent least
 * significant byte first, over:
 *   8 bytes of 0xFF                          (the masked LRH RoCEv2 does not have)
 *   the IP header  IPv4: TOS, TTL and header checksum as 0xFF bytes
 *                  IPv6: traffic class, flow label and hop limit as all ones
 *   the UDP header with the checksum as 0xFFFF
 *   the BTH with byte 4 (FECN, BECN, reserved) as 0xFF
 *   the rest of the UDP payload up to the ICRC (DETH, ImmDt, payload, pad).
 * The IP and UDP headers are the kernel's, not ours: the codec rebuilds them
 * from struct rv_roce_addr. For IPv4 that needs the identification and the
 * flags, which the spec does not mask: soft0 sends with DF from an unconnected
 * socket, for which Linux writes identification 0, and assumes the same of
 * what it receives (ip_id 0, ip_frag 0x4000), except where ip_id_any says a
 * kernel RoCE device may send (it writes its counter): there the one
 * identification that makes the ICRC match is taken (rv_roce_ipv4_id). Everything else in those headers
 * (lengths, protocol 17, addresses, ports) follows from the datagram.
 */
#ifndef RV_SOFT_ROCE_H
#define RV_SOFT_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RV_ROCE_BTH_LEN 12
#define RV_ROCE_DETH_LEN 8
#define RV_ROCE_IMM_LEN 4
#define RV_ROCE_ICRC_LEN 4
/* UD opcodes (IBA Table 38: transport 011, SEND Only / SEND Only with Immediate). */
#define RV_ROCE_UD_SEND_ONLY 0x64
#define RV_ROCE_UD_SEND_ONLY_IMM 0x65
/* The default P_Key (full member of the default partition). */
#define RV_ROCE_DEFAULT_PKEY 0xffff
/* Largest UDP payload of a message of len bytes: headers, pad and ICRC. */
#define RV_ROCE_UD_OVERHEAD (RV_ROCE_BTH_LEN + RV_ROCE_DETH_LEN + RV_ROCE_IMM_LEN + 3 + RV_ROCE_ICRC_LEN)

/* The addressing a datagram travelled with: what the ICRC covers of the IP
 * and UDP headers. Addresses in network order; IPv4 in src[0..3]/dst[0..3]. */
struct rv_roce_addr {
	int family;       /* 4 or 6 */
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport, dport;
	uint16_t ip_id;   /* IPv4 identification (soft0: 0) */
	uint16_t ip_frag; /* IPv4 flags and fragment offset (soft0: 0x4000, DF) */
	/* Decode: the sender may have used any identification (a kernel RoCE
	 * device's, on the RoCE port): take the one the ICRC says. That costs
	 * the ICRC 16 of its 32 bits against random errors, so soft0's own port
	 * keeps ip_id exact. */
	bool ip_id_any;
};

/* The transport headers of one UD SEND. */
struct rv_roce_ud {
	uint8_t opcode;    /* RV_ROCE_UD_SEND_ONLY or _IMM */
	bool solicited;    /* BTH SE */
	uint8_t pad;       /* BTH PadCnt (decode only; encode derives it) */
	uint16_t pkey;
	uint32_t dest_qp;  /* 24 bits */
	uint32_t psn;      /* 24 bits */
	uint32_t qkey;
	uint32_t src_qp;   /* 24 bits */
	uint32_t imm;      /* host order; with _IMM only */
	uint8_t deth_rsvd; /* DETH byte 4, reserved: 0, or RV_ROCE_UD_AUTH_MARK */
};

/*
 * Authenticated UD (a soft0 context with a shared secret; docs/software-
 * device.md "UD under the secret"). The datagram stays RoCEv2: the DETH's
 * reserved byte is RV_ROCE_UD_AUTH_MARK and the last RV_ROCE_UD_AUTH_LEN
 * bytes of the payload area (before the pad and the ICRC) are a trailer:
 *
 *   epoch u64   the sending context's random identity (fresh per context)
 *   seq   u64   its datagram counter (replay window at the receiver)
 *   mac   16    HMAC-SHA256(secret, "rverbs-ud-1" || family || src || dst ||
 *               sport || dport || BTH (byte 4 masked as the ICRC masks it) ||
 *               DETH || ImmDt || payload || epoch || seq), first 16 bytes
 *
 * The BTH's PadCnt counts the trailer as payload, so a dissector shows the
 * trailer as the message's last 32 bytes.
 */
#define RV_ROCE_UD_AUTH_MARK 0x01
#define RV_ROCE_UD_AUTH_LEN 32
#define RV_ROCE_UD_AUTH_MAC_LEN 16

/*
 * Write the trailer after the payload: pkt holds hdr_and_payload bytes (the
 * headers encoded for a length that includes RV_ROCE_UD_AUTH_LEN, with
 * deth_rsvd RV_ROCE_UD_AUTH_MARK) and has room for the trailer. Returns the
 * new length, to pass to rv_roce_ud_finish.
 */
size_t rv_roce_ud_auth_seal(const uint8_t *key, size_t key_len, const struct rv_roce_addr *a, uint8_t *pkt,
			    size_t hdr_and_payload, uint64_t epoch, uint64_t seq);

/*
 * Check the trailer of a datagram rv_roce_ud_decode accepted (its payload at
 * pkt + off, plen bytes, trailer included): true when the MAC matches (in
 * constant time), with *plen reduced to the message and the trailer's epoch
 * and sequence number. Reads nothing outside [pkt, pkt + off + plen).
 */
bool rv_roce_ud_auth_open(const uint8_t *key, size_t key_len, const struct rv_roce_addr *a, const uint8_t *pkt,
			  size_t off, uint32_t *plen, uint64_t *epoch, uint64_t *seq);

/*
 * Replay windows of authenticated senders (RFC 4303 §3.4.3 style): per
 * epoch, the highest sequence number seen and a bit for each of the 64 below
 * it. RV_ROCE_REPLAY_SENDERS epochs are remembered; the one heard least
 * recently is forgotten first. Only datagrams with a valid MAC reach it, so
 * only holders of the secret take a slot. Zero-initialise.
 */
#define RV_ROCE_REPLAY_SENDERS 64
#define RV_ROCE_REPLAY_WINDOW 64
struct rv_roce_replay {
	uint64_t clock;
	struct {
		uint64_t epoch, top;
		uint64_t bits; /* bit i: top - i was seen */
		uint64_t used; /* clock when last heard; 0: free */
	} w[RV_ROCE_REPLAY_SENDERS];
};

/* True when (epoch, seq) is new (and now recorded); false when it was seen
 * or is older than the window. */
bool rv_roce_replay_check(struct rv_roce_replay *r, uint64_t epoch, uint64_t seq);

/* Why a datagram was refused. */
enum rv_roce_status {
	RV_ROCE_OK = 0,
	RV_ROCE_SHORT,       /* shorter than its headers and ICRC */
	RV_ROCE_BAD_VERSION, /* BTH TVer not 0 */
	RV_ROCE_BAD_OPCODE,  /* not a UD SEND Only (with immediate) */
	RV_ROCE_BAD_PAD,     /* PadCnt larger than what follows the headers */
	RV_ROCE_BAD_ICRC,    /* the ICRC does not match */
};

const char *rv_roce_status_name(enum rv_roce_status s);

/* Standard CRC-32 (IEEE 802.3), continued from crc (start with 0). */
uint32_t rv_roce_crc32(uint32_t crc, const void *buf, size_t len);

/* The ICRC of a UDP payload of len bytes (everything before the ICRC). */
uint32_t rv_roce_icrc(const struct rv_roce_addr *a, const uint8_t *pkt, size_t len);
/* IPv4: the identification (*id) for which pkt's len bytes (before the ICRC)
 * have ICRC icrc, everything else as a says; false when none has. */
bool rv_roce_ipv4_id(const struct rv_roce_addr *a, const uint8_t *pkt, size_t len, uint32_t icrc, uint16_t *id);

/* Header bytes for a message (20 without, 24 with immediate data). */
size_t rv_roce_ud_hdr_len(uint8_t opcode);

/*
 * Write the headers of h for a payload of len bytes into out (room for
 * rv_roce_ud_hdr_len bytes); the caller puts the payload after them and
 * calls rv_roce_ud_finish. Returns the header length.
 */
size_t rv_roce_ud_encode_hdr(const struct rv_roce_ud *h, uint32_t len, uint8_t *out);

/*
 * Append the pad (zeros, to a multiple of 4) and the ICRC to pkt, which holds
 * hdr_and_payload bytes and has room for 3 + 4 more. Returns the UDP payload
 * length.
 */
size_t rv_roce_ud_finish(const struct rv_roce_addr *a, uint8_t *pkt, size_t hdr_and_payload);

/*
 * Decode and verify a UDP payload: headers into *h, the payload at
 * pkt + *off, *plen bytes. Checks the length, TVer, opcode, PadCnt and ICRC
 * in that order and reads nothing outside [pkt, pkt + len).
 */
enum rv_roce_status rv_roce_ud_decode(const struct rv_roce_addr *a, const uint8_t *pkt, size_t len,
				      struct rv_roce_ud *h, size_t *off, uint32_t *plen);

/*
 * The 20-byte IPv4 header of a received datagram as RoCEv2 shows it in a
 * GRH area (after 20 zero bytes): version 4, IHL 5, tos, total length,
 * identification and flags from a, ttl, protocol 17, a valid checksum,
 * the addresses.
 */
void rv_roce_ipv4_header(const struct rv_roce_addr *a, uint8_t tos, uint8_t ttl, size_t udp_payload,
			 uint8_t out[20]);

/* The 40-byte IPv6 header (version 6, traffic class, flow label 0, payload
 * length, next header 17, hop limit, addresses): the GRH of an IPv6 datagram. */
void rv_roce_ipv6_header(const struct rv_roce_addr *a, uint8_t tclass, uint8_t hop_limit,
			 size_t udp_payload, uint8_t out[40]);

#endif
