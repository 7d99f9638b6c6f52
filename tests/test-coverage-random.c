/*
 * rv_random_bytes() when getrandom(2) fails or gives less than asked (a
 * kernel without it, or a seccomp filter): the bytes it did give are kept and
 * the rest comes from the fallback generator, never left as they were.
 * getrandom is wrapped at link time (-Wl,--wrap=getrandom).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "rverbs-private.h"

ssize_t __real_getrandom(void *buf, size_t len, unsigned int flags);
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags);

static int calls;
static size_t give; /* bytes the next call gives before the failures start */

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags)
{
	(void)flags;
	calls++;
	if (give == 0) {
		errno = ENOSYS;
		return -1;
	}
	if (len > give)
		len = give;
	memset(buf, 0xab, len);
	give = 0;
	return (ssize_t)len;
}

static int all_equal(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void test_coverage_random__fallback_without_getrandom(void **state)
{
	uint8_t a[37], b[37];

	(void)state;
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	calls = 0;
	give = 0;
	rv_random_bytes(a, sizeof(a));
	rv_random_bytes(b, sizeof(b));
	assert_int_equal(calls, 2);
	/* Filled (an odd length: the tail too), and two draws differ. */
	assert_false(all_equal(a, sizeof(a), 0));
	assert_false(all_equal(a + 32, 5, 0) && all_equal(b + 32, 5, 0));
	assert_memory_not_equal(a, b, sizeof(a));
}

static void test_coverage_random__short_read_then_failure(void **state)
{
	uint8_t a[24];

	(void)state;
	memset(a, 0, sizeof(a));
	calls = 0;
	give = 5;
	rv_random_bytes(a, sizeof(a));
	/* One short read, one failure, then the fallback for the 19 left. */
	assert_int_equal(calls, 2);
	assert_true(all_equal(a, 5, 0xab));
	assert_false(all_equal(a + 5, sizeof(a) - 5, 0));
	assert_false(all_equal(a + 5, sizeof(a) - 5, 0xab));
}

static void test_coverage_random__nothing_asked(void **state)
{
	uint8_t a = 0x5a;

	(void)state;
	calls = 0;
	rv_random_bytes(&a, 0);
	assert_int_equal(calls, 0);
	assert_int_equal(a, 0x5a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coverage_random__fallback_without_getrandom),
		cmocka_unit_test(test_coverage_random__short_read_then_failure),
		cmocka_unit_test(test_coverage_random__nothing_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
