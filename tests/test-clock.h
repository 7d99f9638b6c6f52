/*
 * The monotonic clock in milliseconds: the tests' deadlines (how long to wait
 * for a completion or a peer before failing), never a timing threshold.
 */
#ifndef RVERBS_TESTS_TEST_CLOCK_H
#define RVERBS_TESTS_TEST_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
