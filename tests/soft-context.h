/*
 * A context on soft0 with default options, for tests that build their own
 * resources on it. Fails the running cmocka test when soft0 cannot be opened.
 * Include after <cmocka.h>.
 */
#ifndef RVERBS_TESTS_SOFT_CONTEXT_H
#define RVERBS_TESTS_SOFT_CONTEXT_H

#include <rverbs/rverbs.h>

static inline rv_context *open_ctx(void)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;

	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	rv_device_unref(dev);
	return ctx;
}

#endif
