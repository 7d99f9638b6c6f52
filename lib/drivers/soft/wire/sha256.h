/*
 * SHA-256 (FIPS 180-4 §6.2) and HMAC-SHA256 (RFC 2104), for the connection
 * authentication of the software device (auth.c). Pure functions, no state
 * beyond the caller's context.
 */
#ifndef RV_SOFT_SHA256_H
#define RV_SOFT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define RV_SHA256_LEN 32
#define RV_SHA256_BLOCK 64

struct rv_sha256 {
	uint32_t h[8];
	uint64_t len;      /* bytes hashed so far */
	uint8_t buf[RV_SHA256_BLOCK];
	size_t fill;
};

void rv_sha256_init(struct rv_sha256 *s);
void rv_sha256_update(struct rv_sha256 *s, const void *data, size_t len);
void rv_sha256_final(struct rv_sha256 *s, uint8_t out[RV_SHA256_LEN]);
void rv_sha256(const void *data, size_t len, uint8_t out[RV_SHA256_LEN]);

/* HMAC-SHA256 over the concatenation of n parts (RFC 2104). */
struct rv_hmac_part {
	const void *p;
	size_t len;
};
void rv_hmac_sha256(const void *key, size_t key_len, const struct rv_hmac_part *parts, size_t n,
		    uint8_t out[RV_SHA256_LEN]);

/* Equal in time independent of where they differ. */
int rv_mem_equal_ct(const void *a, const void *b, size_t len);

#endif
