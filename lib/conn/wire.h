/*
 * The connection helper's exchange over out-of-band TCP, as bytes (version 1).
 *
 * Every message is a 12-byte header followed by its payload, big-endian:
 *
 *   0 "RVCN"   4 version u8 (1)   5 type u8   6 flags u16 (0)   8 length u32
 *
 * HELLO (REQ from the client, REP from the server) payload:
 *
 *   0 num_qps u8   1 flags u8   2 private_data_len u16
 *   4 required_caps u32 (what the sender requires of the receiver, for its messages)
 *   8 num_qps × { len u16, rv_endpoint_pack() bytes[len] }, then private data,
 *   then with flags bit 0 (RV_WIRE_HELLO_QKEYS: UD QPs) num_qps × Q_Key u32
 *
 * Other flag bits are 0 (a library before UD connections took the flags byte
 * as reserved and refuses a HELLO with bit 0: a UD connection needs both
 * sides to have them).
 *
 * REJECT payload: errno u32, text_len u16, text (UTF-8, no NUL). RTU (ready to
 * use), DISCONNECT and DISCONNECT_ACK have no payload.
 *
 * AUTH (only between sides whose contexts have a shared secret; trust.c):
 *
 *   0 step u8 (1..4)   1 reserved u8[3] (0)   4 nonce[16]   20 mac[32]
 *
 * (steps 1 and 3 carry zeros where they have no nonce or MAC).
 *
 * Owns: encoding and decoding. PURE: no I/O, no handles, no allocation. The
 * decoders read only inside [buf, buf + len) and reject anything malformed
 * with a negative errno and an rv_err() message naming the fault.
 */
#ifndef RV_CONN_WIRE_H
#define RV_CONN_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rverbs/conn.h>

#define RV_WIRE_VERSION 1
#define RV_WIRE_HDR_LEN 12
#define RV_WIRE_HELLO_FIXED 8
#define RV_WIRE_REJECT_TEXT_MAX 255
#define RV_WIRE_HELLO_QKEYS 0x01
/* The largest payload of any message: a HELLO with every QP, all the data and the Q_Keys. */
#define RV_WIRE_PAYLOAD_MAX \
	(RV_WIRE_HELLO_FIXED + RV_CONN_MAX_QPS * (2 + RV_ENDPOINT_PACKED_MAX + 4) + RV_CONN_PRIVATE_DATA_MAX)

enum rv_wire_type {
	RV_WIRE_REQ = 1,
	RV_WIRE_REP = 2,
	RV_WIRE_RTU = 3,
	RV_WIRE_REJECT = 4,
	RV_WIRE_DISCONNECT = 5,
	RV_WIRE_DISCONNECT_ACK = 6,
	RV_WIRE_AUTH = 7,
};

/* The AUTH message's steps (docs/connection-helper.md, "The shared secret"). */
enum rv_wire_auth_step {
	RV_AUTH_HELLO = 1,     /* client: its nonce */
	RV_AUTH_CHALLENGE = 2, /* server: its nonce and its proof */
	RV_AUTH_REQ_MAC = 3,   /* client: the MAC of the REQ that follows */
	RV_AUTH_REP_MAC = 4,   /* server: the MAC of the REP that follows */
};

#define RV_WIRE_AUTH_NONCE_LEN 16
#define RV_WIRE_AUTH_MAC_LEN 32
#define RV_WIRE_AUTH_LEN (4 + RV_WIRE_AUTH_NONCE_LEN + RV_WIRE_AUTH_MAC_LEN)

struct rv_wire_auth {
	uint8_t step;
	uint8_t nonce[RV_WIRE_AUTH_NONCE_LEN];
	uint8_t mac[RV_WIRE_AUTH_MAC_LEN];
};

struct rv_wire_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t length;
};

struct rv_wire_hello {
	uint32_t num_qps;
	uint32_t required_caps;
	rv_endpoint ep[RV_CONN_MAX_QPS];
	const uint8_t *data; /* decode: points into the input */
	uint32_t data_len;
	bool has_qkeys;      /* UD QPs: qkey[] is carried */
	uint32_t qkey[RV_CONN_MAX_QPS];
};

struct rv_wire_reject {
	int errnum;                               /* positive */
	char text[RV_WIRE_REJECT_TEXT_MAX + 1];   /* NUL-terminated, printable */
};

const char *rv_wire_type_name(unsigned type);

/* Encode a header; buf has RV_WIRE_HDR_LEN bytes. */
void rv_wire_hdr_encode(void *buf, uint8_t type, uint32_t length);
/* Decode and validate a header (magic, version, type, flags, length limit for
 * the type). func names the caller in the error message. */
int rv_wire_hdr_decode(const void *buf, size_t len, struct rv_wire_hdr *h, const char *func);

/* Encode header + HELLO payload; returns the total length or a negative errno. */
int rv_wire_hello_encode(uint8_t type, const struct rv_wire_hello *h, void *buf, size_t cap,
			 const char *func);
int rv_wire_hello_decode(const void *payload, size_t len, struct rv_wire_hello *h, const char *func);

/* Encode header + REJECT payload; returns the total length or a negative errno. */
int rv_wire_reject_encode(int errnum, const char *text, void *buf, size_t cap);
int rv_wire_reject_decode(const void *payload, size_t len, struct rv_wire_reject *r, const char *func);

/* Encode header + AUTH payload into buf (RV_WIRE_HDR_LEN + RV_WIRE_AUTH_LEN
 * bytes); returns the total length. */
int rv_wire_auth_encode(const struct rv_wire_auth *a, void *buf);
int rv_wire_auth_decode(const void *payload, size_t len, struct rv_wire_auth *a, const char *func);

#endif
