/*
 * The pure parts of the rdma_cm transport, unit-tested without a device:
 * the private data rverbs sends in rdma_cm's CONNECT_REQUEST/REPLY, and the
 * translation of rdma_init_qp_attr()'s verbs attributes into rv_qp_attr.
 *
 * Private data layout (big-endian, 29 + data_len bytes: ≤ 56 in a request
 * and ≤ 196 in a reply on InfiniBand and RoCE, ≤ 255 on iWARP; rv_cm_pdata_max):
 *
 *   0 "RV"  2 version u8 (1)  3 flags u8 (bit 0: MR valid)  4 caps u32
 *   8 mr_rkey u32  12 mr_addr u64  20 mr_length u64  28 data_len u8  29 data
 *
 * With flag bit 1 (a UD request, RDMA_PS_UDP: the SIDR REQ names no QP), 26
 * bytes follow the data: qpn u32, qkey u32, gid 16 bytes, lid u16 (the
 * client's QP, for the server's address handle back to it).
 */
#ifndef RV_CONN_CM_H
#define RV_CONN_CM_H

#include <stdbool.h>

#include <infiniband/verbs.h>
#include <rverbs/conn.h>

#define RV_CM_PDATA_FIXED 29
#define RV_CM_PDATA_UD 26
#define RV_CM_PDATA_MAX (RV_CM_PDATA_FIXED + RV_CONN_CM_IWARP_PRIVATE_DATA_MAX + RV_CM_PDATA_UD)

struct rv_cm_pdata {
	uint32_t caps;
	bool has_mr;
	uint64_t mr_addr, mr_length;
	uint32_t mr_rkey;
	uint8_t data[RV_CONN_CM_IWARP_PRIVATE_DATA_MAX];
	uint32_t data_len;
	bool has_ud; /* the UD extension: the client's QP */
	uint32_t ud_qpn, ud_qkey;
	uint8_t ud_gid[16];
	uint16_t ud_lid;
};

/* Returns the encoded length, or -EMSGSIZE when data_len is too long. */
int rv_cm_pdata_encode(const struct rv_cm_pdata *pd, void *buf, size_t cap);
/* -EBADMSG / -EPROTONOSUPPORT with a message for anything malformed. */
int rv_cm_pdata_decode(const void *buf, size_t len, struct rv_cm_pdata *pd, const char *func);
/* The most application data one rdma_cm message carries on a device of
 * that transport (iwarp: IBV_TRANSPORT_IWARP), a request or a reply. */
uint32_t rv_cm_pdata_max(bool iwarp, bool reply);
/* Verbs attributes (as rdma_init_qp_attr fills them) to rverbs ones. */
void rv_cm_qp_attr_from_ibv(const struct ibv_qp_attr *in, int ibv_mask, rv_qp_attr *out);
/* An rdma_cm event's address handle attributes (UD, multicast) to rverbs'. */
void rv_cm_av_from_ibv(const struct ibv_ah_attr *in, rv_ah_attr *out);

#endif
