/*
 * The portable byte encoding of rv_endpoint (version 1). Big-endian, fixed
 * layout, no padding:
 *
 *   0  "RVEP"            4  version (1)       5  reserved (0)
 *   6  total length u16  8  mask u32          12 gid[16]
 *   28 lid u16           30 port_num u8       31 mtu u8
 *   32 qpn u32           36 psn u32           40 qp_type u32   44 caps u32
 *   48 mr_addr u64       56 mr_length u64     64 mr_rkey u32
 *   68 user_data_len u16 70 user_data[user_data_len]
 *
 * Pure: unpack reads only inside [buf, buf+len) and validates every field.
 */
#include <errno.h>
#include <string.h>

#include "rverbs-private.h"

#define EP_VERSION 1
#define EP_FIXED 70
#define EP_MASK_KNOWN (RV_ENDPOINT_MR | RV_ENDPOINT_USER_DATA)

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static uint32_t get32(const uint8_t *p) { return ((uint32_t)get16(p) << 16) | get16(p + 2); }
static uint64_t get64(const uint8_t *p) { return ((uint64_t)get32(p) << 32) | get32(p + 4); }

static int validate(const rv_endpoint *ep, int errnum, const char *func)
{
	if (ep->mask & ~(uint64_t)EP_MASK_KNOWN)
		return rv_err(errnum, func, "unknown bit 0x%llx in the endpoint mask",
			      (unsigned long long)(ep->mask & ~(uint64_t)EP_MASK_KNOWN));
	if (ep->qpn > 0xffffff)
		return rv_err(errnum, func, "qpn 0x%x does not fit 24 bits", ep->qpn);
	if (ep->psn > 0xffffff)
		return rv_err(errnum, func, "psn 0x%x does not fit 24 bits", ep->psn);
	if (ep->mtu > RV_MTU_4096)
		return rv_err(errnum, func, "mtu %u is not an rv_mtu", ep->mtu);
	if (ep->qp_type != RV_QPT_RC && ep->qp_type != RV_QPT_UC && ep->qp_type != RV_QPT_UD &&
	    ep->qp_type != RV_QPT_XRC_SEND && ep->qp_type != RV_QPT_XRC_RECV)
		return rv_err(errnum, func, "qp_type %u is not RC, UC, UD, XRC_SEND or XRC_RECV", ep->qp_type);
	if (ep->user_data_len > RV_ENDPOINT_USER_DATA_MAX)
		return rv_err(errnum, func, "user_data_len %u is above %d", ep->user_data_len,
			      RV_ENDPOINT_USER_DATA_MAX);
	if (!(ep->mask & RV_ENDPOINT_USER_DATA) && ep->user_data_len)
		return rv_err(errnum, func, "user_data_len is %u but RV_ENDPOINT_USER_DATA is not set",
			      ep->user_data_len);
	return 0;
}

RV_EXPORT int rv_endpoint_pack(const rv_endpoint *ep, void *buf, size_t buf_len, size_t *ret_len)
{
	uint8_t *p = buf;
	size_t len;
	int rc;

	if (!ep || !buf)
		return rv_err(EINVAL, __func__, "%s is NULL", ep ? "buf" : "ep");
	rc = validate(ep, EINVAL, __func__);
	if (rc < 0)
		return rc;
	len = EP_FIXED + ((ep->mask & RV_ENDPOINT_USER_DATA) ? ep->user_data_len : 0);
	if (buf_len < len)
		return rv_err(ENOSPC, __func__, "the buffer has %zu bytes; the endpoint needs %zu", buf_len, len);
	memset(p, 0, len);
	memcpy(p, "RVEP", 4);
	p[4] = EP_VERSION;
	put16(p + 6, (uint16_t)len);
	put32(p + 8, (uint32_t)ep->mask);
	memcpy(p + 12, ep->gid, 16);
	put16(p + 28, ep->lid);
	p[30] = ep->port_num;
	p[31] = ep->mtu;
	put32(p + 32, ep->qpn);
	put32(p + 36, ep->psn);
	put32(p + 40, ep->qp_type);
	put32(p + 44, ep->caps);
	if (ep->mask & RV_ENDPOINT_MR) {
		put64(p + 48, ep->mr_addr);
		put64(p + 56, ep->mr_length);
		put32(p + 64, ep->mr_rkey);
	}
	if (ep->mask & RV_ENDPOINT_USER_DATA) {
		put16(p + 68, (uint16_t)ep->user_data_len);
		memcpy(p + EP_FIXED, ep->user_data, ep->user_data_len);
	}
	if (ret_len)
		*ret_len = len;
	return 0;
}

RV_EXPORT int rv_endpoint_unpack(const void *buf, size_t len, rv_endpoint *ret_ep)
{
	const uint8_t *p = buf;
	rv_endpoint ep;
	size_t total;
	int rc;

	if (!buf || !ret_ep)
		return rv_err(EINVAL, __func__, "%s is NULL", buf ? "ret_ep" : "buf");
	if (len < 8 || memcmp(p, "RVEP", 4) != 0)
		return rv_err(EBADMSG, __func__, "not an rverbs endpoint (%zu bytes, bad magic or too short)", len);
	if (p[4] != EP_VERSION)
		return rv_err(EPROTONOSUPPORT, __func__, "endpoint encoding version %u; this library reads version %d",
			      p[4], EP_VERSION);
	total = get16(p + 6);
	if (len < EP_FIXED || total < EP_FIXED || total > len)
		return rv_err(EBADMSG, __func__, "truncated endpoint: %zu bytes, header says %zu, at least %d needed",
			      len, total, EP_FIXED);
	if (p[5] != 0)
		return rv_err(EBADMSG, __func__, "reserved byte is 0x%02x, not 0", p[5]);
	memset(&ep, 0, sizeof(ep));
	ep.mask = get32(p + 8);
	memcpy(ep.gid, p + 12, 16);
	ep.lid = get16(p + 28);
	ep.port_num = p[30];
	ep.mtu = p[31];
	ep.qpn = get32(p + 32);
	ep.psn = get32(p + 36);
	ep.qp_type = get32(p + 40);
	ep.caps = get32(p + 44);
	ep.mr_addr = get64(p + 48);
	ep.mr_length = get64(p + 56);
	ep.mr_rkey = get32(p + 64);
	ep.user_data_len = get16(p + 68);
	rc = validate(&ep, EBADMSG, __func__);
	if (rc < 0)
		return rc;
	if (!(ep.mask & RV_ENDPOINT_MR) && (ep.mr_addr || ep.mr_length || ep.mr_rkey))
		return rv_err(EBADMSG, __func__, "memory-region fields are set but RV_ENDPOINT_MR is not");
	if (total != EP_FIXED + ep.user_data_len)
		return rv_err(EBADMSG, __func__, "length %zu does not match %d + user_data_len %u", total, EP_FIXED,
			      ep.user_data_len);
	memcpy(ep.user_data, p + EP_FIXED, ep.user_data_len);
	*ret_ep = ep;
	return 0;
}
