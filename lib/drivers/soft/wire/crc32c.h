/*
 * CRC32c (Castagnoli), the MPA FPDU checksum (RFC 5044 §4.1, as iSCSI).
 *
 * Owns: the checksum and nothing else. Pure: no I/O, no allocation; the
 * table (and the choice of a hardware instruction) is made once,
 * thread-safely, on first use.
 */
#ifndef RV_SOFT_CRC32C_H
#define RV_SOFT_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC32c over buf. Start with crc = 0; the pre- and post-inversion
 * are applied inside, so rv_crc32c(rv_crc32c(0, a, n), b, m) equals the CRC of
 * a followed by b. rv_crc32c(0, "123456789", 9) == 0xE3069283.
 */
uint32_t rv_crc32c(uint32_t crc, const void *buf, size_t len);

/* The same with the portable table only (for tests that compare both paths). */
uint32_t rv_crc32c_portable(uint32_t crc, const void *buf, size_t len);

/* The implementations crc32c.c chooses from. */
enum rv_crc32c_impl {
	RV_CRC32C_TABLE, /* portable slicing-by-8 */
	RV_CRC32C_SSE42, /* the crc32 instruction, three streams */
	RV_CRC32C_FOLD,  /* VPCLMULQDQ folding on 512-bit registers (AVX-512); needs len >= 256 */
	RV_CRC32C_FOLD256, /* VPCLMULQDQ folding on 256-bit registers (AVX2); needs len >= 128 */
	RV_CRC32C_FOLD128, /* PCLMULQDQ folding on 128-bit registers (SSE4.2); needs len >= 128 */
	RV_CRC32C_HYBRID256, /* FOLD256 and three crc32 streams in one loop (AVX2); needs len >= 128 */
};

/*
 * rv_crc32c through one implementation, for tests: false (and *crc untouched)
 * when this CPU or build lacks it or len is below its minimum.
 */
bool rv_crc32c_with(enum rv_crc32c_impl impl, uint32_t *crc, const void *buf, size_t len);

#endif
