/*
 * CRC32c, reflected polynomial 0x82F63B78.
 *
 * Two implementations with the same result: the SSE4.2 crc32 instruction on
 * x86-64 CPUs that have it (chosen once at run time; several GB/s, which
 * matters because every payload byte is checksummed on both sides), and a
 * portable slicing-by-8 table otherwise.
 *
 * Owns: the lookup tables and the choice. Never allocates; both are set up
 * once under pthread_once so concurrent first calls are safe.
 */
#include <pthread.h>
#include <string.h>

#include "crc32c.h"

static uint32_t table[8][256];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc_impl)(uint32_t crc, const uint8_t *p, size_t len);

static uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		/* Byte-wise loads keep this independent of alignment and endianness. */
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
		      table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static void init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
	crc_impl = crc_table;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		crc_impl = crc_sse42;
#endif
}

uint32_t rv_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&init_once, init);
	return ~crc_impl(~crc, buf, len);
}

uint32_t rv_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&init_once, init);
	return ~crc_table(~crc, buf, len);
}
