/*
 * The internal error save/restore of lib/core/error.c: a failure path keeps
 * the caller's message across calls that set their own, and takes the text
 * after a "func: " prefix without parsing it again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/error.h"

static void test_error_save__restore_puts_back_the_exact_message(void **state)
{
	struct rv_error_saved s;

	(void)state;
	assert_int_equal(rv_err(EINVAL, "rv_first", "the cause: %d", 7), -EINVAL);
	rv_err_hint("a hint");
	rv_error_save(&s);
	rv_err(ENOMEM, "rv_second", "something else");
	assert_string_equal(rv_error_last(), "rv_second: something else");
	rv_error_restore(&s);
	assert_string_equal(rv_error_last(), "rv_first: the cause: 7; hint: a hint");
}

static void test_error_save__an_empty_message_stays_empty(void **state)
{
	struct rv_error_saved s;

	(void)state;
	rv_error_clear();
	rv_error_save(&s);
	rv_err(EIO, "rv_other", "set meanwhile");
	rv_error_restore(&s);
	assert_false(rv_err_is_set());
	assert_string_equal(rv_error_text(&s, NULL), "");
}

static void test_error_save__text_after_the_prefix(void **state)
{
	struct rv_error_saved s;

	(void)state;
	rv_err(EPROTO, "rv_listener_accept", "client 10.0.0.1: bad header");
	rv_error_save(&s);
	/* Any function's prefix, or only the one named. */
	assert_string_equal(rv_error_text(&s, NULL), "client 10.0.0.1: bad header");
	assert_string_equal(rv_error_text(&s, "rv_listener_accept"), "client 10.0.0.1: bad header");
	assert_string_equal(rv_error_text(&s, "rv_connect"), "rv_listener_accept: client 10.0.0.1: bad header");
	/* A name that only starts the prefix is not it. */
	assert_string_equal(rv_error_text(&s, "rv_listener"), "rv_listener_accept: client 10.0.0.1: bad header");
}

static void test_error_save__a_message_cut_at_the_limit_is_restored_whole(void **state)
{
	struct rv_error_saved s;
	char long_text[2 * RV_ERR_MAX];
	char before[RV_ERR_MAX];

	(void)state;
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	rv_err(E2BIG, "rv_long", "%s", long_text);
	assert_int_equal(strlen(rv_error_last()), RV_ERR_MAX - 1);
	memcpy(before, rv_error_last(), sizeof(before));
	rv_error_save(&s);
	rv_error_clear();
	rv_error_restore(&s);
	assert_memory_equal(rv_error_last(), before, sizeof(before));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_save__restore_puts_back_the_exact_message),
		cmocka_unit_test(test_error_save__an_empty_message_stays_empty),
		cmocka_unit_test(test_error_save__text_after_the_prefix),
		cmocka_unit_test(test_error_save__a_message_cut_at_the_limit_is_restored_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
