/*
 * CRC32c, reflected polynomial 0x82F63B78.
 *
 * Two implementations with the same result: the SSE4.2 crc32 instruction on
 * x86-64 CPUs that have it (chosen once at run time; three streams side by
 * side, about 8 bytes per cycle, which matters because every payload byte is
 * checksummed on both sides), and a
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
/*
 * The crc32 instruction has a latency of three cycles and a throughput of one:
 * one dependent chain uses a third of it. So long buffers are cut into three
 * streams of equal length checksummed side by side and joined after: the
 * instruction is linear (no inversion inside), so
 *   crc(c, A B) = shift_|B|(crc(c, A)) ^ crc(0, B)
 * where shift_n(x) advances the register x over n zero bytes, itself linear
 * in x and precomputed as four byte tables per stream length.
 */
#define CRC_LONG 1024u  /* bytes per stream: 3 KiB per round */
#define CRC_SHORT 128u  /* then 384 bytes per round */
static uint32_t shift_long[4][256], shift_short[4][256];

__attribute__((target("sse4.2"))) static uint32_t zeros_sse42(uint32_t crc, size_t len)
{
	uint64_t c = crc;

	for (size_t i = 0; i < len / 8; i++)
		c = __builtin_ia32_crc32di(c, 0);
	return (uint32_t)c;
}

static void shift_table(uint32_t t[4][256], size_t len)
{
	uint32_t bit[32];

	for (int i = 0; i < 32; i++)
		bit[i] = zeros_sse42(1u << i, len);
	for (int k = 0; k < 4; k++)
		for (int b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (int i = 0; i < 8; i++)
				if ((b >> i) & 1)
					v ^= bit[8 * k + i];
			t[k][b] = v;
		}
}

static inline uint32_t shift(uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

__attribute__((target("sse4.2"))) static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Whole rounds of three streams of n bytes each (n a multiple of 8). */
__attribute__((target("sse4.2"))) static uint32_t rounds(uint32_t crc, const uint8_t **pp, size_t *len, size_t n,
							 uint32_t t[4][256])
{
	const uint8_t *p = *pp;

	while (*len >= 3 * n) {
		uint64_t c0 = crc, c1 = 0, c2 = 0;
		for (size_t i = 0; i < n; i += 8) {
			c0 = __builtin_ia32_crc32di(c0, load64(p + i));
			c1 = __builtin_ia32_crc32di(c1, load64(p + n + i));
			c2 = __builtin_ia32_crc32di(c2, load64(p + 2 * n + i));
		}
		crc = shift(t, shift(t, (uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * n;
		*len -= 3 * n;
	}
	*pp = p;
	return crc;
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c;

	while (len && ((uintptr_t)p & 7)) {
		crc = __builtin_ia32_crc32qi(crc, *p++);
		len--;
	}
	crc = rounds(crc, &p, &len, CRC_LONG, shift_long);
	crc = rounds(crc, &p, &len, CRC_SHORT, shift_short);
	c = crc;
	while (len >= 8) {
		c = __builtin_ia32_crc32di(c, load64(p));
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
	if (__builtin_cpu_supports("sse4.2")) {
		shift_table(shift_long, CRC_LONG);
		shift_table(shift_short, CRC_SHORT);
		crc_impl = crc_sse42;
	}
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
