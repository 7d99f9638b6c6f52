/*
 * Encoding and decoding of the connection exchange (see wire.h for the
 * layout). Pure and fuzzable: never allocates, never does I/O, reads only
 * inside the buffer it is given.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "conn/wire.h"

#define EP_KNOWN_CAPS (RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM | RV_EP_CAP_SOFT | RV_EP_CAP_ROCE_V1 | RV_EP_CAP_ROCE_V2)

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static uint32_t get32(const uint8_t *p) { return ((uint32_t)get16(p) << 16) | get16(p + 2); }

const char *rv_wire_type_name(unsigned type)
{
	static const char *const names[] = {"?", "REQ", "REP", "RTU", "REJECT", "DISCONNECT",
					    "DISCONNECT_ACK", "AUTH"};
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

/* The most a message of this type may carry. */
static uint32_t payload_max(unsigned type)
{
	switch (type) {
	case RV_WIRE_REQ:
	case RV_WIRE_REP:
		return RV_WIRE_PAYLOAD_MAX;
	case RV_WIRE_REJECT:
		return 6 + RV_WIRE_REJECT_TEXT_MAX;
	case RV_WIRE_AUTH:
		return RV_WIRE_AUTH_LEN;
	default:
		return 0;
	}
}

void rv_wire_hdr_encode(void *buf, uint8_t type, uint32_t length)
{
	uint8_t *p = buf;

	memcpy(p, "RVCN", 4);
	p[4] = RV_WIRE_VERSION;
	p[5] = type;
	put16(p + 6, 0);
	put32(p + 8, length);
}

int rv_wire_hdr_decode(const void *buf, size_t len, struct rv_wire_hdr *h, const char *func)
{
	const uint8_t *p = buf;
	uint32_t max;

	if (len < RV_WIRE_HDR_LEN)
		return rv_err(EBADMSG, func, "a message header needs %d bytes, got %zu", RV_WIRE_HDR_LEN, len);
	if (memcmp(p, "RVCN", 4) != 0)
		return rv_err(EBADMSG, func,
			      "not an rverbs connection exchange: the first bytes are %02x %02x %02x %02x, not \"RVCN\"",
			      p[0], p[1], p[2], p[3]);
	if (p[4] != RV_WIRE_VERSION)
		return rv_err(EPROTONOSUPPORT, func,
			      "the peer speaks version %u of the connection exchange; this library speaks version %d",
			      p[4], RV_WIRE_VERSION);
	if (p[5] < RV_WIRE_REQ || p[5] > RV_WIRE_AUTH)
		return rv_err(EBADMSG, func, "unknown message type %u", p[5]);
	if (get16(p + 6) != 0)
		return rv_err(EBADMSG, func, "reserved flags 0x%04x are set in a %s message", get16(p + 6),
			      rv_wire_type_name(p[5]));
	max = payload_max(p[5]);
	if (get32(p + 8) > max)
		return rv_err(EMSGSIZE, func, "a %s message announces %u bytes; at most %u are allowed",
			      rv_wire_type_name(p[5]), get32(p + 8), max);
	h->version = p[4];
	h->type = p[5];
	h->flags = 0;
	h->length = get32(p + 8);
	return 0;
}

int rv_wire_hello_encode(uint8_t type, const struct rv_wire_hello *h, void *buf, size_t cap,
			 const char *func)
{
	uint8_t *p = buf;
	size_t off = RV_WIRE_HDR_LEN + RV_WIRE_HELLO_FIXED;
	int rc;

	if (h->num_qps < 1 || h->num_qps > RV_CONN_MAX_QPS)
		return rv_err(EINVAL, func, "%u QPs; a connection has 1 to %d", h->num_qps, RV_CONN_MAX_QPS);
	if (h->data_len > RV_CONN_PRIVATE_DATA_MAX)
		return rv_err(EINVAL, func, "%u bytes of private data; at most %d", h->data_len,
			      RV_CONN_PRIVATE_DATA_MAX);
	if (cap < off)
		return rv_err(ENOSPC, func, "buffer too small for a HELLO");
	for (uint32_t i = 0; i < h->num_qps; i++) {
		size_t n;
		if (cap < off + 2)
			return rv_err(ENOSPC, func, "buffer too small for a HELLO");
		rc = rv_endpoint_pack(&h->ep[i], p + off + 2, cap - off - 2, &n);
		if (rc < 0)
			return rc;
		put16(p + off, (uint16_t)n);
		off += 2 + n;
	}
	if (cap < off + h->data_len + (h->has_qkeys ? 4 * (size_t)h->num_qps : 0))
		return rv_err(ENOSPC, func, "buffer too small for a HELLO");
	if (h->data_len)
		memcpy(p + off, h->data, h->data_len);
	off += h->data_len;
	for (uint32_t i = 0; h->has_qkeys && i < h->num_qps; i++, off += 4)
		put32(p + off, h->qkey[i]);
	p[RV_WIRE_HDR_LEN] = (uint8_t)h->num_qps;
	p[RV_WIRE_HDR_LEN + 1] = h->has_qkeys ? RV_WIRE_HELLO_QKEYS : 0;
	put16(p + RV_WIRE_HDR_LEN + 2, (uint16_t)h->data_len);
	put32(p + RV_WIRE_HDR_LEN + 4, h->required_caps);
	rv_wire_hdr_encode(p, type, (uint32_t)(off - RV_WIRE_HDR_LEN));
	return (int)off;
}

int rv_wire_hello_decode(const void *payload, size_t len, struct rv_wire_hello *h, const char *func)
{
	const uint8_t *p = payload;
	size_t off = RV_WIRE_HELLO_FIXED;
	uint32_t n, data_len;
	int rc;

	if (len < RV_WIRE_HELLO_FIXED)
		return rv_err(EBADMSG, func, "a HELLO needs at least %d bytes, got %zu", RV_WIRE_HELLO_FIXED, len);
	n = p[0];
	data_len = get16(p + 2);
	if (n < 1 || n > RV_CONN_MAX_QPS)
		return rv_err(EBADMSG, func, "the HELLO announces %u QPs; 1 to %d are allowed", n, RV_CONN_MAX_QPS);
	if (p[1] & ~RV_WIRE_HELLO_QKEYS)
		return rv_err(EBADMSG, func, "the HELLO's flags byte is 0x%02x; only bit 0 (Q_Keys) is known", p[1]);
	if (data_len > RV_CONN_PRIVATE_DATA_MAX)
		return rv_err(EMSGSIZE, func, "the HELLO announces %u bytes of private data; at most %d",
			      data_len, RV_CONN_PRIVATE_DATA_MAX);
	memset(h, 0, sizeof(*h));
	h->num_qps = n;
	h->required_caps = get32(p + 4);
	if (h->required_caps & ~(uint32_t)(RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM))
		return rv_err(EBADMSG, func, "the HELLO requires unknown capability bits 0x%x",
			      h->required_caps & ~(uint32_t)(RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM));
	for (uint32_t i = 0; i < n; i++) {
		size_t ep_len;
		if (len - off < 2)
			return rv_err(EBADMSG, func, "the HELLO is truncated in endpoint %u of %u", i, n);
		ep_len = get16(p + off);
		off += 2;
		if (ep_len > len - off || ep_len > RV_ENDPOINT_PACKED_MAX)
			return rv_err(EBADMSG, func, "endpoint %u claims %zu bytes; %zu remain (at most %d allowed)", i,
				      ep_len, len - off, RV_ENDPOINT_PACKED_MAX);
		rc = rv_endpoint_unpack(p + off, ep_len, &h->ep[i]);
		if (rc < 0) {
			struct rv_error_saved why;
			rv_error_save(&why);
			return rv_err(-rc, func, "endpoint %u of the HELLO is invalid (%s)", i, why.msg);
		}
		/* What an endpoint offers only describes it: a bit a later
		 * library adds is not for us to judge, so it is dropped rather
		 * than refusing the peer (required_caps above stays strict). */
		h->ep[i].caps &= (uint32_t)EP_KNOWN_CAPS;
		off += ep_len;
	}
	{
		size_t tail = (p[1] & RV_WIRE_HELLO_QKEYS) ? 4 * (size_t)n : 0;
		if (len - off != data_len + tail)
			return rv_err(EBADMSG, func, "the HELLO has %zu bytes after its endpoints; it announced %u of "
				      "private data%s", len - off, data_len, tail ? " and its QPs' Q_Keys" : "");
	}
	h->data = data_len ? p + off : NULL;
	h->data_len = data_len;
	off += data_len;
	if (p[1] & RV_WIRE_HELLO_QKEYS) {
		h->has_qkeys = true;
		for (uint32_t i = 0; i < n; i++, off += 4)
			h->qkey[i] = get32(p + off);
	}
	return 0;
}

int rv_wire_reject_encode(int errnum, const char *text, void *buf, size_t cap)
{
	uint8_t *p = buf;
	size_t n = strlen(text);

	if (n > RV_WIRE_REJECT_TEXT_MAX)
		n = RV_WIRE_REJECT_TEXT_MAX;
	if (cap < RV_WIRE_HDR_LEN + 6 + n)
		return -ENOSPC;
	rv_wire_hdr_encode(p, RV_WIRE_REJECT, (uint32_t)(6 + n));
	put32(p + RV_WIRE_HDR_LEN, (uint32_t)errnum);
	put16(p + RV_WIRE_HDR_LEN + 4, (uint16_t)n);
	memcpy(p + RV_WIRE_HDR_LEN + 6, text, n);
	return (int)(RV_WIRE_HDR_LEN + 6 + n);
}

int rv_wire_reject_decode(const void *payload, size_t len, struct rv_wire_reject *r, const char *func)
{
	const uint8_t *p = payload;
	size_t n;

	if (len < 6)
		return rv_err(EBADMSG, func, "a REJECT needs at least 6 bytes, got %zu", len);
	n = get16(p + 4);
	if (n != len - 6 || n > RV_WIRE_REJECT_TEXT_MAX)
		return rv_err(EBADMSG, func, "a REJECT announces %zu bytes of text but carries %zu", n, len - 6);
	r->errnum = (int)get32(p);
	if (r->errnum <= 0 || r->errnum > 4095)
		r->errnum = ECONNREFUSED;
	/* The text is shown to humans: keep printable ASCII only. */
	for (size_t i = 0; i < n; i++)
		r->text[i] = (p[6 + i] >= 0x20 && p[6 + i] < 0x7f) ? (char)p[6 + i] : '?';
	r->text[n] = '\0';
	return 0;
}

int rv_wire_auth_encode(const struct rv_wire_auth *a, void *buf)
{
	uint8_t *p = buf;

	rv_wire_hdr_encode(p, RV_WIRE_AUTH, RV_WIRE_AUTH_LEN);
	p += RV_WIRE_HDR_LEN;
	p[0] = a->step;
	p[1] = p[2] = p[3] = 0;
	memcpy(p + 4, a->nonce, RV_WIRE_AUTH_NONCE_LEN);
	memcpy(p + 4 + RV_WIRE_AUTH_NONCE_LEN, a->mac, RV_WIRE_AUTH_MAC_LEN);
	return RV_WIRE_HDR_LEN + RV_WIRE_AUTH_LEN;
}

int rv_wire_auth_decode(const void *payload, size_t len, struct rv_wire_auth *a, const char *func)
{
	const uint8_t *p = payload;

	if (len != RV_WIRE_AUTH_LEN)
		return rv_err(EBADMSG, func, "an AUTH message carries %d bytes, not %zu", RV_WIRE_AUTH_LEN, len);
	if (p[0] < RV_AUTH_HELLO || p[0] > RV_AUTH_REP_MAC)
		return rv_err(EBADMSG, func, "an AUTH message with unknown step %u", p[0]);
	if (p[1] || p[2] || p[3])
		return rv_err(EBADMSG, func, "an AUTH message's reserved bytes are not 0");
	a->step = p[0];
	memcpy(a->nonce, p + 4, RV_WIRE_AUTH_NONCE_LEN);
	memcpy(a->mac, p + 4 + RV_WIRE_AUTH_NONCE_LEN, RV_WIRE_AUTH_MAC_LEN);
	return 0;
}
