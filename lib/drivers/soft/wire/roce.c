/*
 * RoCEv2 UD framing: BTH, DETH, ImmDt, pad and ICRC (see roce.h for the
 * exact bytes the ICRC covers), and the MAC trailer of authenticated UD.
 * Pure: no I/O, no allocation, no locks.
 */
#include <string.h>

#include "roce.h"
#include "sha256.h"

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), one byte per step. */
static const uint32_t crc_table[256] = {
	0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f,
	0xe963a535, 0x9e6495a3, 0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988,
	0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91, 0x1db71064, 0x6ab020f2,
	0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
	0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9,
	0xfa0f3d63, 0x8d080df5, 0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172,
	0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b, 0x35b5a8fa, 0x42b2986c,
	0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
	0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423,
	0xcfba9599, 0xb8bda50f, 0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924,
	0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d, 0x76dc4190, 0x01db7106,
	0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
	0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d,
	0x91646c97, 0xe6635c01, 0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e,
	0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457, 0x65b0d9c6, 0x12b7e950,
	0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
	0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7,
	0xa4d1c46d, 0xd3d6f4fb, 0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0,
	0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9, 0x5005713c, 0x270241aa,
	0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
	0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81,
	0xb7bd5c3b, 0xc0ba6cad, 0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a,
	0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683, 0xe3630b12, 0x94643b84,
	0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
	0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb,
	0x196c3671, 0x6e6b06e7, 0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc,
	0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5, 0xd6d6a3e8, 0xa1d1937e,
	0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
	0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55,
	0x316e8eef, 0x4669be79, 0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236,
	0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f, 0xc5ba3bbe, 0xb2bd0b28,
	0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
	0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f,
	0x72076785, 0x05005713, 0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38,
	0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21, 0x86d3d2d4, 0xf1d4e242,
	0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
	0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69,
	0x616bffd3, 0x166ccf45, 0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2,
	0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db, 0xaed16a4a, 0xd9d65adc,
	0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
	0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693,
	0x54de5729, 0x23d967bf, 0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94,
	0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
};

uint32_t rv_roce_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

const char *rv_roce_status_name(enum rv_roce_status s)
{
	switch (s) {
	case RV_ROCE_OK: return "ok";
	case RV_ROCE_SHORT: return "too short";
	case RV_ROCE_BAD_VERSION: return "BTH transport version not 0";
	case RV_ROCE_BAD_OPCODE: return "not a UD SEND Only";
	case RV_ROCE_BAD_PAD: return "bad pad count";
	case RV_ROCE_BAD_ICRC: return "bad ICRC";
	}
	return "unknown";
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	put24(p + 1, v);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | get24(p + 1);
}

uint32_t rv_roce_icrc(const struct rv_roce_addr *a, const uint8_t *pkt, size_t len)
{
	/* 8 bytes of ones, the masked IP and UDP headers, the masked BTH. */
	uint8_t h[8 + 40 + 8 + RV_ROCE_BTH_LEN], *ip = h + 8, *udp;
	size_t udp_len = 8 + len + RV_ROCE_ICRC_LEN, n;
	uint32_t crc;

	memset(h, 0xff, 8);
	if (a->family == 4) {
		ip[0] = 0x45;
		ip[1] = 0xff;                       /* TOS */
		put16(ip + 2, (uint32_t)(20 + udp_len));
		put16(ip + 4, a->ip_id);
		put16(ip + 6, a->ip_frag);
		ip[8] = 0xff;                       /* TTL */
		ip[9] = 17;
		ip[10] = ip[11] = 0xff;             /* header checksum */
		memcpy(ip + 12, a->src, 4);
		memcpy(ip + 16, a->dst, 4);
		udp = ip + 20;
	} else {
		ip[0] = 0x6f;                       /* version 6, traffic class ... */
		ip[1] = ip[2] = ip[3] = 0xff;       /* ... and flow label */
		put16(ip + 4, (uint32_t)udp_len);
		ip[6] = 17;
		ip[7] = 0xff;                       /* hop limit */
		memcpy(ip + 8, a->src, 16);
		memcpy(ip + 24, a->dst, 16);
		udp = ip + 40;
	}
	put16(udp, a->sport);
	put16(udp + 2, a->dport);
	put16(udp + 4, (uint32_t)udp_len);
	udp[6] = udp[7] = 0xff;                     /* UDP checksum */
	n = len < RV_ROCE_BTH_LEN ? len : RV_ROCE_BTH_LEN;
	memcpy(udp + 8, pkt, n);
	if (n > 4)
		udp[8 + 4] = 0xff;                  /* FECN, BECN, reserved */
	crc = rv_roce_crc32(0, h, (size_t)(udp + 8 + n - h));
	return rv_roce_crc32(crc, pkt + n, len - n);
}

/*
 * The IPv4 identification a sender used, from its ICRC. The ICRC covers the
 * identification (not masked, Annex A17.3.3), which a UDP socket does not
 * show; soft0 sends 0, but a kernel RoCE device (rxe) sends the kernel's
 * counter. The CRC is affine in the message, so the identification's 16 bits
 * change it by a linear map: with L_k the change bit k makes, the received
 * ICRC matches for the identification x with XOR of L_k over x's bits equal
 * to (received ICRC) XOR (the ICRC for identification 0). Solved by Gaussian
 * elimination; the map is one-to-one, so an ICRC damaged otherwise has no
 * solution but with the chance 2^-16 of any 16-bit field.
 */

/* The raw (reflected) CRC register after `bytes` zero bytes from state v:
 * the zero-byte operator as a 32x32 matrix over GF(2), raised by squaring. */
static uint32_t gf2_times(const uint32_t m[32], uint32_t v)
{
	uint32_t s = 0;

	for (int i = 0; v; i++, v >>= 1)
		if (v & 1)
			s ^= m[i];
	return s;
}

static void gf2_square(uint32_t out[32], const uint32_t m[32])
{
	for (int i = 0; i < 32; i++)
		out[i] = gf2_times(m, m[i]);
}

/* op: the operator of `bytes` zero bytes on the raw CRC register, by
 * squaring the one-byte operator; *one_byte: that operator itself. */
static void zero_op(uint32_t op[32], uint32_t one_byte[32], size_t bytes)
{
	uint32_t a[32], b[32], sq[32], t[32];

	/* One zero bit: shift right, the polynomial where bit 0 was. */
	a[0] = 0xEDB88320u;
	for (int i = 1; i < 32; i++)
		a[i] = 1u << (i - 1);
	gf2_square(b, a); /* 2 bits */
	gf2_square(a, b); /* 4 bits */
	gf2_square(one_byte, a); /* 8 bits */
	memcpy(sq, one_byte, sizeof(sq));
	for (int i = 0; i < 32; i++)
		op[i] = 1u << i; /* identity */
	for (; bytes; bytes >>= 1) {
		if (bytes & 1) {
			for (int i = 0; i < 32; i++)
				t[i] = gf2_times(sq, op[i]);
			memcpy(op, t, sizeof(t));
		}
		if (bytes > 1) {
			gf2_square(t, sq);
			memcpy(sq, t, sizeof(t));
		}
	}
}

bool rv_roce_ipv4_id(const struct rv_roce_addr *a, const uint8_t *pkt, size_t len, uint32_t icrc, uint16_t *id)
{
	/* The CRC's stream: 8 ones, the IPv4 header (identification at bytes
	 * 4-5), the UDP header, the payload: the identification's byte k is
	 * followed by (8 + 20 + 8 + len) - (8 + 4 + k) - 1 bytes. */
	size_t total = 8 + 20 + 8 + len;
	struct rv_roce_addr z = *a;
	uint32_t vec[16], comb[16], d, tail[32], one_byte[32];
	int n = 0;

	if (a->family != 4)
		return false;
	z.ip_id = 0;
	d = icrc ^ rv_roce_icrc(&z, pkt, len);
	/* One operator for what follows the identification, built once: the
	 * change bit k makes is where that operator takes the register change
	 * the identification's bytes leave (the high byte's also passes the low
	 * byte, one zero byte). */
	zero_op(tail, one_byte, total - (8 + 4 + 2));
	for (int k = 0; k < 16; k++) {
		uint32_t c = (uint32_t)1 << (k & 7);
		for (int i = 0; i < 8; i++) /* the register change that byte makes from 0 */
			c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
		if (k >= 8) /* byte 0 (bits 15..8) of the big-endian identification */
			c = gf2_times(one_byte, c);
		vec[n] = gf2_times(tail, c);
		comb[n++] = 1u << k;
	}
	/* A basis by leading bit, each vector with the identification bits it
	 * stands for; then D reduced against it. */
	{
		uint32_t bv[32] = {0}, bc[32] = {0}, x = 0;

		for (int k = 0; k < n; k++) {
			uint32_t v = vec[k], c = comb[k];
			for (int bit = 31; bit >= 0 && v; bit--) {
				if (!(v >> bit & 1))
					continue;
				if (!bv[bit]) {
					bv[bit] = v;
					bc[bit] = c;
					break;
				}
				v ^= bv[bit];
				c ^= bc[bit];
			}
		}
		for (int bit = 31; bit >= 0; bit--) {
			if (!(d >> bit & 1))
				continue;
			if (!bv[bit])
				return false;
			d ^= bv[bit];
			x ^= bc[bit];
		}
		*id = (uint16_t)x;
		return true;
	}
}

size_t rv_roce_ud_hdr_len(uint8_t opcode)
{
	return RV_ROCE_BTH_LEN + RV_ROCE_DETH_LEN + (opcode == RV_ROCE_UD_SEND_ONLY_IMM ? RV_ROCE_IMM_LEN : 0);
}

size_t rv_roce_ud_encode_hdr(const struct rv_roce_ud *h, uint32_t len, uint8_t *out)
{
	uint8_t pad = (uint8_t)((4 - (len & 3)) & 3);

	/* BTH: opcode; SE, MigReq 0, PadCnt, TVer 0; P_Key; reserved byte;
	 * DestQP; AckReq 0 and reserved; PSN. */
	out[0] = h->opcode;
	out[1] = (uint8_t)((h->solicited ? 0x80 : 0) | pad << 4);
	put16(out + 2, h->pkey);
	out[4] = 0;
	put24(out + 5, h->dest_qp & 0xffffff);
	out[8] = 0;
	put24(out + 9, h->psn & 0xffffff);
	/* DETH: Q_Key; reserved byte; SrcQP. */
	put32(out + 12, h->qkey);
	out[16] = h->deth_rsvd;
	put24(out + 17, h->src_qp & 0xffffff);
	if (h->opcode == RV_ROCE_UD_SEND_ONLY_IMM)
		put32(out + 20, h->imm);
	return rv_roce_ud_hdr_len(h->opcode);
}

size_t rv_roce_ud_finish(const struct rv_roce_addr *a, uint8_t *pkt, size_t hdr_and_payload)
{
	size_t n = hdr_and_payload;
	uint32_t icrc;

	while (n & 3)
		pkt[n++] = 0;
	icrc = rv_roce_icrc(a, pkt, n);
	/* Least significant byte first, as Ethernet's FCS. */
	pkt[n] = (uint8_t)icrc;
	pkt[n + 1] = (uint8_t)(icrc >> 8);
	pkt[n + 2] = (uint8_t)(icrc >> 16);
	pkt[n + 3] = (uint8_t)(icrc >> 24);
	return n + RV_ROCE_ICRC_LEN;
}

enum rv_roce_status rv_roce_ud_decode(const struct rv_roce_addr *a, const uint8_t *pkt, size_t len,
				      struct rv_roce_ud *h, size_t *off, uint32_t *plen)
{
	size_t hl, body;
	uint32_t icrc;
	const uint8_t *ic;

	if (len < RV_ROCE_BTH_LEN + RV_ROCE_DETH_LEN + RV_ROCE_ICRC_LEN)
		return RV_ROCE_SHORT;
	if (pkt[1] & 0x0f)
		return RV_ROCE_BAD_VERSION;
	if (pkt[0] != RV_ROCE_UD_SEND_ONLY && pkt[0] != RV_ROCE_UD_SEND_ONLY_IMM)
		return RV_ROCE_BAD_OPCODE;
	hl = rv_roce_ud_hdr_len(pkt[0]);
	if (len < hl + RV_ROCE_ICRC_LEN)
		return RV_ROCE_SHORT;
	body = len - hl - RV_ROCE_ICRC_LEN;
	if (((pkt[1] >> 4) & 3) > body)
		return RV_ROCE_BAD_PAD;
	ic = pkt + len - RV_ROCE_ICRC_LEN;
	icrc = (uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 | (uint32_t)ic[3] << 24;
	if (icrc != rv_roce_icrc(a, pkt, len - RV_ROCE_ICRC_LEN)) {
		/* Another IPv4 identification than the one assumed (a kernel RoCE
		 * device's): the one the ICRC says, if any (rv_roce_ipv4_id). */
		uint16_t id = 0;
		if (!a->ip_id_any || !rv_roce_ipv4_id(a, pkt, len - RV_ROCE_ICRC_LEN, icrc, &id) || id == a->ip_id)
			return RV_ROCE_BAD_ICRC;
	}
	h->opcode = pkt[0];
	h->solicited = (pkt[1] & 0x80) != 0;
	h->pad = (pkt[1] >> 4) & 3;
	h->pkey = (uint16_t)(pkt[2] << 8 | pkt[3]);
	h->dest_qp = get24(pkt + 5);
	h->psn = get24(pkt + 9);
	h->qkey = get32(pkt + 12);
	h->src_qp = get24(pkt + 17);
	h->imm = h->opcode == RV_ROCE_UD_SEND_ONLY_IMM ? get32(pkt + 20) : 0;
	h->deth_rsvd = pkt[16];
	*off = hl;
	*plen = (uint32_t)(body - h->pad);
	return RV_ROCE_OK;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* The MAC of the len bytes of pkt (headers, payload, epoch, seq). */
static void auth_mac(const uint8_t *key, size_t key_len, const struct rv_roce_addr *a, const uint8_t *pkt,
		     size_t len, uint8_t out[RV_SHA256_LEN])
{
	static const char label[] = "rverbs-ud-1";
	uint8_t ad[1 + 16 + 16 + 4], bth[RV_ROCE_BTH_LEN];

	ad[0] = (uint8_t)a->family;
	memcpy(ad + 1, a->src, 16);
	memcpy(ad + 17, a->dst, 16);
	put16(ad + 33, a->sport);
	put16(ad + 35, a->dport);
	memcpy(bth, pkt, RV_ROCE_BTH_LEN);
	bth[4] = 0xff; /* FECN, BECN, reserved: the network may change them */
	struct rv_hmac_part parts[4] = {
		{label, sizeof(label) - 1},
		{ad, sizeof(ad)},
		{bth, sizeof(bth)},
		{pkt + RV_ROCE_BTH_LEN, len - RV_ROCE_BTH_LEN},
	};
	rv_hmac_sha256(key, key_len, parts, 4, out);
}

size_t rv_roce_ud_auth_seal(const uint8_t *key, size_t key_len, const struct rv_roce_addr *a, uint8_t *pkt,
			    size_t hdr_and_payload, uint64_t epoch, uint64_t seq)
{
	uint8_t mac[RV_SHA256_LEN];
	size_t n = hdr_and_payload;

	put64(pkt + n, epoch);
	put64(pkt + n + 8, seq);
	n += 16;
	auth_mac(key, key_len, a, pkt, n, mac);
	memcpy(pkt + n, mac, RV_ROCE_UD_AUTH_MAC_LEN);
	return n + RV_ROCE_UD_AUTH_MAC_LEN;
}

bool rv_roce_ud_auth_open(const uint8_t *key, size_t key_len, const struct rv_roce_addr *a, const uint8_t *pkt,
			  size_t off, uint32_t *plen, uint64_t *epoch, uint64_t *seq)
{
	uint8_t mac[RV_SHA256_LEN];
	size_t end;

	if (off < RV_ROCE_BTH_LEN + RV_ROCE_DETH_LEN || *plen < RV_ROCE_UD_AUTH_LEN ||
	    pkt[16] != RV_ROCE_UD_AUTH_MARK)
		return false;
	end = off + *plen - RV_ROCE_UD_AUTH_MAC_LEN; /* after epoch and seq */
	auth_mac(key, key_len, a, pkt, end, mac);
	if (!rv_mem_equal_ct(mac, pkt + end, RV_ROCE_UD_AUTH_MAC_LEN))
		return false;
	*epoch = get64(pkt + end - 16);
	*seq = get64(pkt + end - 8);
	*plen -= RV_ROCE_UD_AUTH_LEN;
	return true;
}

bool rv_roce_replay_check(struct rv_roce_replay *r, uint64_t epoch, uint64_t seq)
{
	int found = -1, lru = 0;

	for (int i = 0; i < RV_ROCE_REPLAY_SENDERS; i++) {
		if (r->w[i].used && r->w[i].epoch == epoch) {
			found = i;
			break;
		}
		if (r->w[i].used < r->w[lru].used)
			lru = i;
	}
	r->clock++;
	if (found < 0) {
		/* A free slot (used 0) or the sender heard least recently. */
		r->w[lru].epoch = epoch;
		r->w[lru].top = seq;
		r->w[lru].bits = 1;
		r->w[lru].used = r->clock;
		return true;
	}
	r->w[found].used = r->clock;
	uint64_t top = r->w[found].top, *bits = &r->w[found].bits;
	if (seq > top) {
		uint64_t d = seq - top;
		*bits = d >= RV_ROCE_REPLAY_WINDOW ? 1 : (*bits << d) | 1;
		r->w[found].top = seq;
		return true;
	}
	if (top - seq >= RV_ROCE_REPLAY_WINDOW || ((*bits >> (top - seq)) & 1))
		return false;
	*bits |= UINT64_C(1) << (top - seq);
	return true;
}

/* The IPv4 header checksum (RFC 791, RFC 1071). */
static uint16_t ip_checksum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

void rv_roce_ipv4_header(const struct rv_roce_addr *a, uint8_t tos, uint8_t ttl, size_t udp_payload,
			 uint8_t out[20])
{
	out[0] = 0x45;
	out[1] = tos;
	put16(out + 2, (uint32_t)(20 + 8 + udp_payload));
	put16(out + 4, a->ip_id);
	put16(out + 6, a->ip_frag);
	out[8] = ttl;
	out[9] = 17;
	out[10] = out[11] = 0;
	memcpy(out + 12, a->src, 4);
	memcpy(out + 16, a->dst, 4);
	put16(out + 10, ip_checksum(out, 20));
}

void rv_roce_ipv6_header(const struct rv_roce_addr *a, uint8_t tclass, uint8_t hop_limit,
			 size_t udp_payload, uint8_t out[40])
{
	out[0] = (uint8_t)(0x60 | tclass >> 4);
	out[1] = (uint8_t)(tclass << 4);
	out[2] = out[3] = 0;
	put16(out + 4, (uint32_t)(8 + udp_payload));
	out[6] = 17;
	out[7] = hop_limit;
	memcpy(out + 8, a->src, 16);
	memcpy(out + 24, a->dst, 16);
}
