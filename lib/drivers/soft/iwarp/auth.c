/*
 * Mutual authentication of soft0 connections with a shared secret (README.md,
 * "Authentication"). Challenge-response carried by the MPA exchange:
 * 1. request: the initiator appends a block (magic "RAU1", kind 0) with a
 *    fresh 16-byte nonce N_i and MAC_Q = HMAC(secret, "rverbs-auth-Q" ||
 *    N_i || ids), so that the responder holds no state (a request waiting
 *    for its QP, a slot of the QP) for a peer that does not know the secret;
 *    a copied request is the only way around that, and it repeats an N_i
 *    (conn.c refuses a second request with the N_i of one it holds), and
 *    cannot answer the challenge of step 2;
 * 2. reply: the responder appends its block (kind 1) with a fresh N_r and
 *    MAC_R = HMAC-SHA256(secret, "rverbs-auth-R" || N_i || N_r || ids);
 * 3. the initiator checks MAC_R and sends, as its first FPDU (before the RTR
 *    message), SOFT_OP_AUTH carrying MAC_I = HMAC(secret, "rverbs-auth-I" ||
 *    N_i || N_r || ids). The responder attaches the connection to its QP only
 *    once MAC_I checks; before that it reads nothing else.
 * ids: initiator GID, port, QPN, then the responder's (22 bytes each,
 * big-endian). Fresh nonces on both sides make a recorded handshake useless.
 * A side with a secret rejects a peer without the block and vice versa.
 */
#include <string.h>

#include "drivers/soft/soft.h"
#include "drivers/soft/wire/sha256.h"

static const uint8_t auth_magic[4] = {'R', 'A', 'U', '1'};

int soft_auth_set_key(struct soft_ctx *sc, const void *secret, size_t len)
{
	if (!len) {
		sc->auth = false;
		return 0;
	}
	if (len > RV_SHA256_BLOCK) {
		rv_sha256(secret, len, sc->auth_key); /* what HMAC does with a long key */
		sc->auth_key_len = RV_SHA256_LEN;
	} else {
		memcpy(sc->auth_key, secret, len);
		sc->auth_key_len = len;
	}
	sc->auth = true;
	return 0;
}

static void put_id(uint8_t *o, const uint8_t gid[16], uint16_t port, uint32_t qpn)
{
	memcpy(o, gid, 16);
	o[16] = (uint8_t)(port >> 8);
	o[17] = (uint8_t)port;
	o[18] = (uint8_t)(qpn >> 24);
	o[19] = (uint8_t)(qpn >> 16);
	o[20] = (uint8_t)(qpn >> 8);
	o[21] = (uint8_t)qpn;
}

void soft_auth_mac(const struct soft_ctx *sc, bool initiator_proof, const struct soft_conn *c,
		   const uint8_t ids[SOFT_AUTH_IDS_LEN], uint8_t out[SOFT_AUTH_MAC_LEN])
{
	static const char lr[] = "rverbs-auth-R", li[] = "rverbs-auth-I";
	struct rv_hmac_part parts[4] = {
		{initiator_proof ? li : lr, sizeof(lr) - 1},
		{c->auth_ni, SOFT_AUTH_NONCE_LEN},
		{c->auth_nr, SOFT_AUTH_NONCE_LEN},
		{ids, SOFT_AUTH_IDS_LEN},
	};
	rv_hmac_sha256(sc->auth_key, sc->auth_key_len, parts, 4, out);
}

void soft_auth_ids(uint8_t ids[SOFT_AUTH_IDS_LEN], const uint8_t igid[16], uint16_t iport, uint32_t iqpn,
		   const uint8_t rgid[16], uint16_t rport, uint32_t rqpn)
{
	put_id(ids, igid, iport, iqpn);
	put_id(ids + 22, rgid, rport, rqpn);
}

void soft_auth_mac_request(const struct soft_ctx *sc, const uint8_t ni[SOFT_AUTH_NONCE_LEN],
			   const uint8_t ids[SOFT_AUTH_IDS_LEN], uint8_t out[SOFT_AUTH_MAC_LEN])
{
	static const char lq[] = "rverbs-auth-Q";
	struct rv_hmac_part parts[3] = {
		{lq, sizeof(lq) - 1},
		{ni, SOFT_AUTH_NONCE_LEN},
		{ids, SOFT_AUTH_IDS_LEN},
	};
	rv_hmac_sha256(sc->auth_key, sc->auth_key_len, parts, 3, out);
}

size_t soft_auth_block_put(uint8_t *buf, bool reply, const uint8_t nonce[SOFT_AUTH_NONCE_LEN],
			   const uint8_t *mac)
{
	memcpy(buf, auth_magic, 4);
	buf[4] = reply;
	buf[5] = buf[6] = buf[7] = 0;
	memcpy(buf + 8, nonce, SOFT_AUTH_NONCE_LEN);
	if (mac)
		memcpy(buf + 8 + SOFT_AUTH_NONCE_LEN, mac, SOFT_AUTH_MAC_LEN);
	else
		memset(buf + 8 + SOFT_AUTH_NONCE_LEN, 0, SOFT_AUTH_MAC_LEN);
	return SOFT_AUTH_EXT_LEN;
}

int soft_auth_block_find(const uint8_t *pd, size_t len, bool reply, uint8_t nonce[SOFT_AUTH_NONCE_LEN],
			 uint8_t mac[SOFT_AUTH_MAC_LEN])
{
	/* The blocks after rv_soft_cpd: the same-host one (shm.c) if any, then ours. */
	for (size_t off = RV_SOFT_CPD_LEN; off + 4 <= len;) {
		const uint8_t *x = pd + off;
		if (memcmp(x, auth_magic, 4) == 0) {
			if (len - off < SOFT_AUTH_EXT_LEN || x[4] != (uint8_t)reply)
				return -1;
			memcpy(nonce, x + 8, SOFT_AUTH_NONCE_LEN);
			memcpy(mac, x + 8 + SOFT_AUTH_NONCE_LEN, SOFT_AUTH_MAC_LEN);
			return 1;
		}
		if (memcmp(x, SOFT_SHM_EXT_MAGIC, 4) == 0 && off == RV_SOFT_CPD_LEN) {
			off += SOFT_SHM_EXT_LEN;
			continue;
		}
		return 0;
	}
	return 0;
}
