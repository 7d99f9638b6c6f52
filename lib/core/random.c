/*
 * Random numbers for keys, PSNs and QP numbers. Keys must be unguessable, so
 * the kernel's generator is used; the fallback only covers kernels without
 * getrandom(2) and is seeded from the clock and the address space.
 */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "rverbs-private.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rv_random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom(p + done, len - done, 0);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (done < len) {
		static _Thread_local uint64_t state;
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		state ^= (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)&ts;
		while (done < len) {
			uint64_t r = splitmix(&state);
			size_t k = len - done < sizeof(r) ? len - done : sizeof(r);
			memcpy(p + done, &r, k);
			done += k;
		}
	}
}
