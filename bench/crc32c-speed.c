/*
 * crc32c-speed: GB/s of each CRC32c implementation soft0 has on this CPU
 * (lib/drivers/soft/wire/crc32c.c), and of rv_crc32c's run-time choice, per
 * buffer length. Buffers stay in cache (each is checksummed again and again);
 * the figure is the median of ROUNDS timed rounds, implementations
 * interleaved within each round so machine load hits them alike. Time is
 * this thread's CPU time, so waiting for a CPU on a loaded machine does not
 * count (GB/s per busy core).
 *
 *   build/bench/crc32c-speed [ROUNDS]     (default 7)
 *
 * A benchmark, not a test: it checks only that every path agrees with the
 * table, and exits 1 if one does not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drivers/soft/wire/crc32c.h"

#define NIMPL 7
static const char *const names[NIMPL] = {"table", "sse42", "fold512", "fold256", "fold128", "hybrid256", "rv_crc32c"};
static const enum rv_crc32c_impl ids[NIMPL - 1] = {RV_CRC32C_TABLE, RV_CRC32C_SSE42, RV_CRC32C_FOLD,
						   RV_CRC32C_FOLD256, RV_CRC32C_FOLD128, RV_CRC32C_HYBRID256};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One checksum through implementation i; false if this CPU lacks it. */
static bool run(int i, uint32_t *c, const uint8_t *p, size_t len)
{
	if (i == NIMPL - 1) {
		*c = rv_crc32c(*c, p, len);
		return true;
	}
	return rv_crc32c_with(ids[i], c, p, len);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {64, 256, 1024, 4096, 16384, 32768, 65536, 1048576};
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	size_t max = 1048576;
	uint8_t *buf = malloc(max);
	uint64_t s = 88172645463325252ull;
	double *gbs = calloc((size_t)rounds, sizeof(*gbs) * NIMPL);
	volatile uint32_t sink = 0;

	if (!buf || !gbs || rounds < 1)
		return 2;
	for (size_t i = 0; i < max; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		buf[i] = (uint8_t)(s >> 32);
	}
	printf("%-8s", "bytes");
	for (int i = 0; i < NIMPL; i++)
		printf(" %10s", names[i]);
	printf("   (GB/s, median of %d rounds)\n", rounds);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t len = sizes[z];
		size_t reps = (64u << 20) / len; /* 64 MiB per timing */
		uint32_t want = rv_crc32c_portable(0, buf, len);
		bool have[NIMPL];

		for (int i = 0; i < NIMPL; i++) {
			uint32_t c = 0;
			have[i] = run(i, &c, buf, len);
			if (have[i] && c != want) {
				fprintf(stderr, "%s disagrees with the table at %zu bytes\n", names[i], len);
				return 1;
			}
		}
		for (int r = 0; r < rounds; r++)
			for (int i = 0; i < NIMPL; i++) {
				uint32_t c = 0;
				size_t n = i == 0 ? reps / 8 + 1 : reps; /* the table is slow */
				double t0;

				if (!have[i])
					continue;
				t0 = now();
				for (size_t k = 0; k < n; k++)
					run(i, &c, buf, len);
				gbs[i * rounds + r] = (double)n * (double)len / (now() - t0) / 1e9;
				sink ^= c;
			}
		printf("%-8zu", len);
		for (int i = 0; i < NIMPL; i++) {
			if (!have[i]) {
				printf(" %10s", "-");
				continue;
			}
			qsort(gbs + i * rounds, (size_t)rounds, sizeof(*gbs), cmp);
			printf(" %10.2f", gbs[i * rounds + rounds / 2]);
		}
		printf("\n");
	}
	free(buf);
	free(gbs);
	return sink == 0xffffffffu && 0;
}
