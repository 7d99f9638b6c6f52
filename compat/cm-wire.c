/*
 * The rdma_cm exchange's messages on the wire: pure encode and decode, no
 * I/O. Every message has one size, so a reader needs no length field:
 *
 *   0  "RVCM"             16 QP number (24 bits)   32 GID (16)
 *   4  version 1          20 first PSN (24 bits)   48 private data (196,
 *   5  type               24 Q_Key                     zero past its length)
 *   6  QP type            28 LID
 *   7  private data length 30 zero (2)
 *   8  responder resources, initiator depth, RNR retry count, retry count
 *  12  SRQ (0/1), zero (3)
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "cm.h"

static const uint8_t magic[4] = {'R', 'V', 'C', 'M'};

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

void cm_msg_encode(const struct cm_msg *m, uint8_t *out)
{
	uint16_t lid = htobe16(m->lid);

	memset(out, 0, CM_MSG_WIRE_LEN);
	memcpy(out, magic, 4);
	out[4] = 1;
	out[5] = m->type;
	out[6] = m->qp_type;
	out[7] = m->private_data_len;
	out[8] = m->responder_resources;
	out[9] = m->initiator_depth;
	out[10] = m->rnr_retry_count;
	out[11] = m->retry_count;
	out[12] = m->srq ? 1 : 0;
	put32(out + 16, m->qpn & 0xffffff);
	put32(out + 20, m->psn & 0xffffff);
	put32(out + 24, m->qkey);
	memcpy(out + 28, &lid, 2);
	memcpy(out + 32, m->gid, 16);
	memcpy(out + 48, m->private_data,
	       m->private_data_len < CM_PRIVATE_DATA_MAX ? m->private_data_len : CM_PRIVATE_DATA_MAX);
}

int cm_msg_decode(const uint8_t *in, struct cm_msg *m)
{
	uint16_t lid;

	if (memcmp(in, magic, 4) != 0 || in[4] != 1)
		return -EBADMSG;
	if (in[5] < CM_MSG_REQ || in[5] > CM_MSG_DREQ)
		return -EBADMSG;
	if (in[6] != IBV_QPT_RC && in[6] != IBV_QPT_UC && in[6] != IBV_QPT_UD)
		return -EBADMSG;
	if (in[7] > CM_PRIVATE_DATA_MAX || in[12] > 1 || in[13] || in[14] || in[15] || in[30] || in[31])
		return -EBADMSG;
	if (get32(in + 16) > 0xffffff || get32(in + 20) > 0xffffff)
		return -EBADMSG;
	/* The bytes past the private data must be zero: one encoding per message. */
	for (size_t i = 48u + in[7]; i < CM_MSG_WIRE_LEN; i++)
		if (in[i])
			return -EBADMSG;
	memset(m, 0, sizeof(*m));
	m->type = in[5];
	m->qp_type = in[6];
	m->private_data_len = in[7];
	m->responder_resources = in[8];
	m->initiator_depth = in[9];
	m->rnr_retry_count = in[10];
	m->retry_count = in[11];
	m->srq = in[12];
	m->qpn = get32(in + 16);
	m->psn = get32(in + 20);
	m->qkey = get32(in + 24);
	memcpy(&lid, in + 28, 2);
	m->lid = be16toh(lid);
	memcpy(m->gid, in + 32, 16);
	memcpy(m->private_data, in + 48, m->private_data_len);
	return 0;
}
