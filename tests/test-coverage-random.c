/*
 * rv_random_bytes() when getrandom(2) fails or gives less than asked (a
 * kernel without it, or a seccomp filter): the rest comes from /dev/urandom;
 * when that cannot be opened either, the call fails with -EIO (and logs
 * why) rather than make guessable bytes, and what uses it refuses to go on:
 * soft0 makes no MR key. getrandom and open are wrapped at link time
 * (-Wl,--wrap=getrandom,--wrap=open,--wrap=open64).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "rverbs-private.h"

ssize_t __real_getrandom(void *buf, size_t len, unsigned int flags);
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags);
int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
int __real_open64(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...);

static int calls, urandom_opens;
static size_t give;       /* bytes the next call gives before the failures start */
static bool no_urandom;   /* /dev/urandom cannot be opened */

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags)
{
	(void)flags;
	calls++;
	if (give == 0) {
		errno = ENOSYS;
		return -1;
	}
	if (give >= 1u << 30)
		return __real_getrandom(buf, len, flags); /* working as usual */
	if (len > give)
		len = give;
	memset(buf, 0xab, len);
	give = 0;
	return (ssize_t)len;
}

static int opened(const char *path, int flags, bool large, va_list ap)
{
	mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;

	if (strcmp(path, "/dev/urandom") == 0) {
		urandom_opens++;
		if (no_urandom) {
			errno = ENOENT;
			return -1;
		}
	}
	return large ? __real_open64(path, flags, mode) : __real_open(path, flags, mode);
}

int __wrap_open(const char *path, int flags, ...)
{
	va_list ap;
	int r;

	va_start(ap, flags);
	r = opened(path, flags, false, ap);
	va_end(ap);
	return r;
}

int __wrap_open64(const char *path, int flags, ...)
{
	va_list ap;
	int r;

	va_start(ap, flags);
	r = opened(path, flags, true, ap);
	va_end(ap);
	return r;
}

static int all_equal(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void reset(size_t g, bool urandom_missing)
{
	calls = urandom_opens = 0;
	give = g;
	no_urandom = urandom_missing;
}

static void test_coverage_random__urandom_without_getrandom(void **state)
{
	uint8_t a[37], b[37];

	(void)state;
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	reset(0, false);
	assert_int_equal(rv_random_bytes(a, sizeof(a)), 0);
	assert_int_equal(rv_random_bytes(b, sizeof(b)), 0);
	assert_int_equal(calls, 2);
	assert_int_equal(urandom_opens, 2);
	/* Filled (an odd length: the tail too), and two draws differ. */
	assert_false(all_equal(a, sizeof(a), 0));
	assert_false(all_equal(a + 32, 5, 0) && all_equal(b + 32, 5, 0));
	assert_memory_not_equal(a, b, sizeof(a));
}

static void test_coverage_random__short_read_then_urandom(void **state)
{
	uint8_t a[24];

	(void)state;
	memset(a, 0, sizeof(a));
	reset(5, false);
	assert_int_equal(rv_random_bytes(a, sizeof(a)), 0);
	/* One short read, one failure, then /dev/urandom for the 19 left. */
	assert_int_equal(calls, 2);
	assert_int_equal(urandom_opens, 1);
	assert_true(all_equal(a, 5, 0xab));
	assert_false(all_equal(a + 5, sizeof(a) - 5, 0));
	assert_false(all_equal(a + 5, sizeof(a) - 5, 0xab));
}

static char logged[512];

static void on_log(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level == RV_LOG_ERROR)
		snprintf(logged, sizeof(logged), "%s", msg);
}

/* Neither source: an error, said in the log; never a clock-seeded fallback. */
static void test_coverage_random__no_source_fails_loudly(void **state)
{
	uint8_t a[16];

	(void)state;
	logged[0] = 0;
	rv_set_log_handler(on_log, NULL);
	reset(0, true);
	assert_int_equal(rv_random_bytes(a, sizeof(a)), -EIO);
	assert_non_null(strstr(logged, "no random bytes"));
	rv_set_log_handler(NULL, NULL);
	no_urandom = false;
}

/* soft0 makes no key from nothing: registration fails with -EIO. */
static void test_coverage_random__soft0_makes_no_key_without_randomness(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr = NULL;
	static uint8_t page[4096];

	(void)state;
	reset(1u << 30, false); /* getrandom works while the context opens */
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	reset(0, true);
	assert_int_equal(rv_mr_reg(pd, page, sizeof(page), RV_ACCESS_ALL_REMOTE, &mr), -EIO);
	assert_null(mr);
	assert_non_null(strstr(rv_error_last(), "random"));
	reset(1u << 30, false);
	rv_pd_unref(pd);
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
}

static void test_coverage_random__nothing_asked(void **state)
{
	uint8_t a = 0x5a;

	(void)state;
	reset(0, false);
	assert_int_equal(rv_random_bytes(&a, 0), 0);
	assert_int_equal(calls, 0);
	assert_int_equal(a, 0x5a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coverage_random__urandom_without_getrandom),
		cmocka_unit_test(test_coverage_random__short_read_then_urandom),
		cmocka_unit_test(test_coverage_random__no_source_fails_loudly),
		cmocka_unit_test(test_coverage_random__nothing_asked),
		cmocka_unit_test(test_coverage_random__soft0_makes_no_key_without_randomness),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
