/*
 * What the library tells, against the mock driver: rv_context_dump, the leak
 * report of RVERBS_DEBUG=leaks, the log handler and its levels, the
 * per-thread error message, and that the library never writes to stdout or
 * stderr by itself.
 *
 * Every case ends with end_test() (handles-fixture.h).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handles-fixture.h"

static void *error_in_thread(void *arg)
{
	int *ok = arg;

	/* A fresh thread has no message, and its failures stay its own. */
	*ok = rv_error_last()[0] == '\0';
	rv_qp_close(NULL);
	*ok = *ok && strstr(rv_error_last(), "rv_qp_close") != NULL;
	return NULL;
}

static void test_handles__error_message_is_per_thread(void **state)
{
	pthread_t th;
	int ok = 0;

	(void)state;
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(pthread_create(&th, NULL, error_in_thread, &ok), 0);
	pthread_join(th, NULL);
	assert_true(ok);
	assert_msg_contains("rv_pd_close");
	rv_error_clear();
	assert_string_equal(rv_error_last(), "");
	end_test();
}

/* ---- dump, leaks, logging ---- */

static void test_handles__context_dump_lists_the_tree_with_types_ids_refs_and_state(void **state)
{
	struct tree t;
	char *text, want[96];

	(void)state;
	make_tree(&t);
	text = dump(t.ctx);
	/* user + PD + 2 CQs; the dump's own reference is not shown. */
	snprintf(want, sizeof(want), "context #%" PRIu64 " refs=4 live\n", id_of(t.ctx));
	assert_true(strncmp(text, want, strlen(want)) == 0);
	snprintf(want, sizeof(want), "\n  PD #%" PRIu64 " refs=3 live\n", id_of(t.pd));
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n    MR #%" PRIu64 " refs=1 live\n", id_of(t.mr));
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n    QP #%" PRIu64 " refs=1 live\n", id_of(t.qp));
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n  CQ #%" PRIu64 " refs=2 live\n", id_of(t.cq));
	assert_non_null(strstr(text, want));
	rv_free(text);

	assert_int_equal(rv_pd_close(t.pd), 0);
	text = dump(t.ctx);
	assert_null(strstr(text, "PD #"));
	assert_null(strstr(text, "QP #"));
	snprintf(want, sizeof(want), "\n  CQ #%" PRIu64 " refs=1 live\n", id_of(t.cq));
	assert_non_null(strstr(text, want));
	rv_free(text);

	assert_int_equal(rv_context_close(t.ctx), 0);
	text = dump(t.ctx);
	snprintf(want, sizeof(want), "context #%" PRIu64 " refs=1 closed (closed by rv_context_close)\n",
		 id_of(t.ctx));
	assert_string_equal(text, want);
	rv_free(text);
	unref_tree(&t);
	end_test();
}

static void test_handles__rverbs_debug_leaks_reports_referenced_handles_through_the_log_handler(void **state)
{
	struct tree t;
	struct log_capture cap = {0};
	char want[96];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	make_tree(&t);
	/* Without RVERBS_DEBUG: no leak lines. */
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_null(strstr(cap.text, "leak"));

	setenv("RVERBS_DEBUG", "leaks", 1);
	assert_int_equal(rv_context_close(t.ctx), 0);
	snprintf(want, sizeof(want), "%d leak: CQ #%" PRIu64 " still has", RV_LOG_WARN, id_of(t.cq));
	assert_non_null(strstr(cap.text, want));
	snprintf(want, sizeof(want), "leak: CQ #%" PRIu64 " still has", id_of(t.cq2));
	assert_non_null(strstr(cap.text, want));
	assert_null(strstr(cap.text, "leak: PD")); /* already closed: not a dependent any more */

	/* A context closed with nothing referenced reports nothing. */
	rv_context *c2;
	size_t len = cap.len;
	assert_int_equal(rv_context_new(dev, NULL, &c2), 0);
	assert_int_equal(rv_context_close(c2), 0);
	c2 = rv_context_unref(c2);
	assert_int_equal(cap.len, len);
	unsetenv("RVERBS_DEBUG");
	rv_set_log_handler(NULL, NULL);
	unref_tree(&t);
	end_test();
}

static void test_handles__log_handler_gets_errors_at_debug_level_only_when_asked(void **state)
{
	struct log_capture cap = {0};

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(cap.lines, 0); /* default level WARN: errors are not logged */
	assert_int_equal(rv_set_log_level(RV_LOG_DEBUG), 0);
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(cap.lines, 1);
	assert_non_null(strstr(cap.text, "3 rv_pd_close: the PD handle is NULL"));
	rv_set_log_handler(NULL, NULL);
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_int_equal(cap.lines, 1);
	assert_int_equal(rv_set_log_level(RV_LOG_WARN), 0);
	end_test();
}

static void test_handles__destroy_failure_is_logged_as_an_error(void **state)
{
	struct tree t;
	struct log_capture cap = {0};
	char want[128];

	(void)state;
	rv_set_log_handler(capture_log, &cap);
	make_tree(&t);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	snprintf(want, sizeof(want), "%d destroying QP #%" PRIu64 " failed", RV_LOG_ERROR, id_of(t.qp));
	t.qp = rv_qp_unref(t.qp);
	assert_non_null(strstr(cap.text, want));
	assert_non_null(strstr(cap.text, "can be retried"));
	rv_set_log_handler(NULL, NULL);
	unref_tree(&t);
	/* The zombie pins nothing: the first of its parents released retried it. */
	assert_int_equal(mock_live(RV_OBJ_QP), 0);
	assert_int_equal(mock.destroyed[RV_OBJ_QP], 1);
	end_test();
}

/* Run fn with stdout and stderr redirected to a file; return how many bytes were written. */
static long run_capturing_stdio(void (*fn)(void))
{
	char path[] = "/tmp/rverbs-test-stdio-XXXXXX";
	int fd = mkstemp(path), out, err;
	struct stat st;

	assert_true(fd >= 0);
	unlink(path);
	fflush(stdout);
	fflush(stderr);
	out = dup(1);
	err = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	fn();
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	return (long)st.st_size;
}

static void noisy_operations(void)
{
	struct tree t;
	char *text;

	rv_set_log_handler(NULL, NULL);
	rv_set_log_level(RV_LOG_DEBUG);
	setenv("RVERBS_DEBUG", "leaks", 1);
	make_tree(&t);
	rv_pd_close(NULL);
	rv_qp_state_of((rv_qp *)t.cq);
	mock_fail_destroy(RV_OBJ_QP, EBUSY, 1);
	rv_pd_close(t.pd);
	rv_context_close(t.ctx); /* leaks reported, nowhere to go */
	rv_qp_state_of(t.qp);
	rv_context_dump(t.ctx, &text);
	rv_free(text);
	rv_device_close(dev);
	unref_tree(&t);
	unsetenv("RVERBS_DEBUG");
	rv_set_log_level(RV_LOG_WARN);
}

static void test_handles__library_never_writes_to_stdout_or_stderr_by_itself(void **state)
{
	(void)state;
	assert_int_equal(run_capturing_stdio(noisy_operations), 0);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HANDLES_TEST(test_handles__error_message_is_per_thread),
		HANDLES_TEST(test_handles__context_dump_lists_the_tree_with_types_ids_refs_and_state),
		HANDLES_TEST(test_handles__rverbs_debug_leaks_reports_referenced_handles_through_the_log_handler),
		HANDLES_TEST(test_handles__log_handler_gets_errors_at_debug_level_only_when_asked),
		HANDLES_TEST(test_handles__destroy_failure_is_logged_as_an_error),
		HANDLES_TEST(test_handles__library_never_writes_to_stdout_or_stderr_by_itself),
	};

	return cmocka_run_group_tests_name("core: log", tests, NULL, NULL);
}
