/*
 * libFuzzer target: soft0's authentication block (lib/drivers/soft/auth.c),
 * the part of the MPA private data a hostile peer controls before it has
 * proved anything, and the MAC computation it leads to.
 *
 * Input: byte 0 holds flags (bit 0: the block kind the reader expects,
 * reply or request; bits 1-3 shape the frame of part 2), the rest is used
 * twice:
 *
 * 1. As the private data conn.c hands to soft_auth_block_find. The buffer
 *    has exactly the input's size, so AddressSanitizer catches a read past
 *    it. Checks: the result is the one the layout below gives (restated
 *    here so that the check is independent of the code), the nonce and MAC
 *    are the block's bytes when found and untouched otherwise.
 * 2. As a description: private data with an optional same-host block before
 *    the auth block and bytes after it, built with soft_auth_block_put;
 *    it must be found with the nonce and MAC written (zeros for a request),
 *    refused as the other kind, and every truncation inside the block is
 *    malformed (absent when not even the magic fits). Then the MACs from a
 *    secret, nonces and QP identities read from the input: they equal
 *    HMAC-SHA256 computed directly (RFC 2104: a key longer than 64 bytes is
 *    hashed first), and so does the request's MAC_Q (over N_i and the ids);
 *    the three differ from each other, one
 *    flipped bit of a nonce or of the ids changes them, and a key set after
 *    another (longer) one leaves no trace of it.
 *
 * Layout (lib/drivers/soft/README.md, "Authentication"): after the 44-byte
 * rverbs private data, optionally a same-host block ("RSH2", 32 bytes), then
 * the auth block: "RAU1", kind (0 request, 1 reply), 3 bytes of padding, a
 * 16-byte nonce and a 32-byte MAC (56 bytes). Anything else there: no block.
 *
 * Built and run by scripts/fuzz-wire (target "auth"); seed corpus in
 * tests/fuzz/corpus/soft-auth (tests/fuzz/gen-auth-corpus.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/wire/sha256.h"
#include "drivers/soft/soft.h"

#define CHECK(cond)                                                                                   \
	do {                                                                                          \
		if (!(cond)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                                      \
		}                                                                                     \
	} while (0)

/* The layout's constants, restated. */
#define CPD_LEN 44u
#define SHM_LEN 32u
#define BLOCK_LEN 56u
#define NONCE_LEN 16u
#define MAC_LEN 32u

/* ---- part 1: the reader on hostile bytes ---- */

/* What soft_auth_block_find must return for pd, per the layout; *at is the
 * block's offset when it returns 1. */
static int expected_find(const uint8_t *pd, size_t len, bool reply, size_t *at)
{
	size_t off = CPD_LEN;

	if (off + 4 <= len && memcmp(pd + off, "RSH2", 4) == 0)
		off += SHM_LEN;
	if (off + 4 > len || memcmp(pd + off, "RAU1", 4) != 0)
		return 0;
	if (len - off < BLOCK_LEN || pd[off + 4] != (uint8_t)reply)
		return -1;
	*at = off;
	return 1;
}

static void check_find(const uint8_t *pd, size_t len, bool reply)
{
	uint8_t nonce[NONCE_LEN], mac[MAC_LEN];
	size_t at = 0;
	int want = expected_find(pd, len, reply, &at);
	int got;

	memset(nonce, 0xee, sizeof(nonce));
	memset(mac, 0xee, sizeof(mac));
	got = soft_auth_block_find(pd, len, reply, nonce, mac);
	CHECK(got == want);
	if (got == 1) {
		CHECK(at + BLOCK_LEN <= len);
		CHECK(memcmp(nonce, pd + at + 8, NONCE_LEN) == 0);
		CHECK(memcmp(mac, pd + at + 8 + NONCE_LEN, MAC_LEN) == 0);
	} else {
		for (size_t i = 0; i < NONCE_LEN; i++)
			CHECK(nonce[i] == 0xee);
		for (size_t i = 0; i < MAC_LEN; i++)
			CHECK(mac[i] == 0xee);
	}
}

/* ---- part 2: the input as a description ---- */

struct reader {
	const uint8_t *p;
	size_t len, off;
};

/* The next n bytes of the input, zeros once it is used up. */
static void take(struct reader *r, void *out, size_t n)
{
	uint8_t *o = out;

	for (size_t i = 0; i < n; i++)
		o[i] = r->off < r->len ? r->p[r->off++] : 0;
}

static uint32_t take_u32(struct reader *r)
{
	uint8_t b[4];

	take(r, b, 4);
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void check_block_roundtrip(struct reader *r, uint8_t flags)
{
	bool reply = flags & 1, with_shm = flags & 2, with_mac = flags & 4, trailing = flags & 8;
	uint8_t pd[CPD_LEN + SHM_LEN + BLOCK_LEN + 16], nonce[NONCE_LEN], mac[MAC_LEN];
	uint8_t got_nonce[NONCE_LEN], got_mac[MAC_LEN], zero[MAC_LEN] = {0};
	size_t off = CPD_LEN, len;

	take(r, pd, CPD_LEN);
	if (with_shm) {
		memcpy(pd + off, "RSH2", 4);
		take(r, pd + off + 4, SHM_LEN - 4);
		off += SHM_LEN;
	}
	take(r, nonce, NONCE_LEN);
	take(r, mac, MAC_LEN);
	CHECK(soft_auth_block_put(pd + off, reply, nonce, with_mac ? mac : NULL) == BLOCK_LEN);
	CHECK(memcmp(pd + off, "RAU1", 4) == 0 && pd[off + 4] == (uint8_t)reply);
	CHECK(pd[off + 5] == 0 && pd[off + 6] == 0 && pd[off + 7] == 0);
	len = off + BLOCK_LEN;
	if (trailing) {
		take(r, pd + len, 16);
		len += 16;
	}
	for (int pass = 0; pass < 2; pass++) {
		/* Each pass on an exact-size copy, so that ASan sees any overread. */
		uint8_t *copy = malloc(len);

		CHECK(copy);
		memcpy(copy, pd, len);
		if (pass == 0) {
			CHECK(soft_auth_block_find(copy, len, reply, got_nonce, got_mac) == 1);
			CHECK(memcmp(got_nonce, nonce, NONCE_LEN) == 0);
			CHECK(memcmp(got_mac, with_mac ? mac : zero, MAC_LEN) == 0);
		} else {
			CHECK(soft_auth_block_find(copy, len, !reply, got_nonce, got_mac) == -1);
		}
		free(copy);
	}
	/* Cut inside the block: malformed once the magic is there, absent before. */
	for (size_t cut = off; cut < off + BLOCK_LEN; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);

		CHECK(copy);
		memcpy(copy, pd, cut);
		CHECK(soft_auth_block_find(copy, cut, reply, got_nonce, got_mac) == (cut < off + 4 ? 0 : -1));
		free(copy);
	}
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

/* HMAC-SHA256(secret, label || ni || nr || ids), the key hashed first when
 * longer than a block (RFC 2104 §2). */
static void reference_mac(const uint8_t *secret, size_t slen, const char *label, const uint8_t *ni,
			  const uint8_t *nr, const uint8_t *ids, uint8_t out[MAC_LEN])
{
	uint8_t key[RV_SHA256_LEN];
	struct rv_hmac_part parts[4] = {
		{label, strlen(label)}, {ni, NONCE_LEN}, {nr, NONCE_LEN}, {ids, SOFT_AUTH_IDS_LEN}};

	if (slen > RV_SHA256_BLOCK) {
		rv_sha256(secret, slen, key);
		rv_hmac_sha256(key, sizeof(key), parts, 4, out);
	} else {
		rv_hmac_sha256(secret, slen, parts, 4, out);
	}
}

static void check_macs(struct reader *r)
{
	static struct soft_ctx sc, sc2; /* large; only the key fields are used */
	static struct soft_conn c;
	uint8_t slen_b, secret[160], other[160], igid[16], rgid[16], ids[SOFT_AUTH_IDS_LEN], want_ids[SOFT_AUTH_IDS_LEN];
	uint8_t mi[MAC_LEN], mr[MAC_LEN], ref[MAC_LEN], again[MAC_LEN], flip_b[2];
	uint16_t iport, rport;
	uint32_t iqpn, rqpn;
	size_t slen;

	take(r, &slen_b, 1);
	slen = 1 + slen_b % sizeof(secret); /* 1..160: both sides of the 64-byte block */
	take(r, secret, slen);
	take(r, c.auth_ni, NONCE_LEN);
	take(r, c.auth_nr, NONCE_LEN);
	take(r, igid, 16);
	take(r, rgid, 16);
	iport = (uint16_t)take_u32(r);
	rport = (uint16_t)take_u32(r);
	iqpn = take_u32(r) & 0xffffff;
	rqpn = take_u32(r) & 0xffffff;
	take(r, flip_b, 2);

	soft_auth_ids(ids, igid, iport, iqpn, rgid, rport, rqpn);
	put_id(want_ids, igid, iport, iqpn);
	put_id(want_ids + 22, rgid, rport, rqpn);
	CHECK(memcmp(ids, want_ids, SOFT_AUTH_IDS_LEN) == 0);

	memset(&sc, 0, sizeof(sc));
	CHECK(soft_auth_set_key(&sc, secret, slen) == 0 && sc.auth);
	soft_auth_mac(&sc, true, &c, ids, mi);
	soft_auth_mac(&sc, false, &c, ids, mr);
	reference_mac(secret, slen, "rverbs-auth-I", c.auth_ni, c.auth_nr, ids, ref);
	CHECK(memcmp(mi, ref, MAC_LEN) == 0);
	reference_mac(secret, slen, "rverbs-auth-R", c.auth_ni, c.auth_nr, ids, ref);
	CHECK(memcmp(mr, ref, MAC_LEN) == 0);
	CHECK(memcmp(mi, mr, MAC_LEN) != 0);
	/* The request's MAC_Q: over N_i and the ids only (no N_r yet), a label
	 * of its own, so it is neither proof of the handshake. */
	{
		uint8_t mq[MAC_LEN], key[RV_SHA256_LEN];
		struct rv_hmac_part q[3] = {{"rverbs-auth-Q", 13}, {c.auth_ni, NONCE_LEN}, {ids, SOFT_AUTH_IDS_LEN}};

		soft_auth_mac_request(&sc, c.auth_ni, ids, mq);
		if (slen > RV_SHA256_BLOCK) {
			rv_sha256(secret, slen, key);
			rv_hmac_sha256(key, sizeof(key), q, 3, ref);
		} else {
			rv_hmac_sha256(secret, slen, q, 3, ref);
		}
		CHECK(memcmp(mq, ref, MAC_LEN) == 0);
		CHECK(memcmp(mq, mi, MAC_LEN) != 0 && memcmp(mq, mr, MAC_LEN) != 0);
	}

	/* A key set after a longer one: the same MACs as on a fresh context. */
	memset(&sc2, 0, sizeof(sc2));
	memset(other, 0xa5, sizeof(other));
	CHECK(soft_auth_set_key(&sc2, other, sizeof(other)) == 0);
	CHECK(soft_auth_set_key(&sc2, secret, slen) == 0);
	soft_auth_mac(&sc2, true, &c, ids, again);
	CHECK(memcmp(again, mi, MAC_LEN) == 0);

	/* One flipped bit of a nonce or of the ids changes both proofs. */
	{
		size_t bit = ((size_t)flip_b[0] << 8 | flip_b[1]) % ((2 * NONCE_LEN + SOFT_AUTH_IDS_LEN) * 8);
		size_t byte = bit / 8;
		uint8_t *p = byte < NONCE_LEN ? &c.auth_ni[byte]
			     : byte < 2 * NONCE_LEN ? &c.auth_nr[byte - NONCE_LEN]
						    : &ids[byte - 2 * NONCE_LEN];

		*p ^= (uint8_t)(1u << (bit % 8));
		soft_auth_mac(&sc, true, &c, ids, again);
		CHECK(memcmp(again, mi, MAC_LEN) != 0);
		soft_auth_mac(&sc, false, &c, ids, again);
		CHECK(memcmp(again, mr, MAC_LEN) != 0);
	}

	/* No secret: authentication off. */
	CHECK(soft_auth_set_key(&sc, secret, 0) == 0 && !sc.auth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r;
	uint8_t flags;

	if (size < 1)
		return 0;
	flags = data[0];
	/* libFuzzer's buffer has exactly the input's size. */
	check_find(data + 1, size - 1, flags & 1);
	r = (struct reader){data + 1, size - 1, 0};
	check_block_roundtrip(&r, flags);
	check_macs(&r);
	return 0;
}
