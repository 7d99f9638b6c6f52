/*
 * Thread-local error messages and the log hook.
 *
 * Owns: rv_error_last()'s buffer and the log handler. Never prints by itself.
 */
#ifndef RV_CORE_ERROR_H
#define RV_CORE_ERROR_H

#include <rverbs/common.h>

#define RV_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Set the thread's message ("func: text") and return -errnum. errnum is positive. */
int rv_err(int errnum, const char *func, const char *fmt, ...) RV_PRINTF(3, 4);
/* Append a hint to the current message ("; hint: ..."). */
void rv_err_hint(const char *fmt, ...) RV_PRINTF(1, 2);
/* The message buffer is empty? (drivers set one; the facade adds a generic one if not). */
int rv_err_is_set(void);

void rv_log(rv_log_level level, const char *fmt, ...) RV_PRINTF(2, 3);

/* For negative return values from drivers without a message of their own. */
int rv_err_from_driver(int rc, const char *func, const char *what);

/* rv_error_last()'s buffer size: messages longer than this are cut. */
#define RV_ERR_MAX 512

/* A copy of the thread's message ("func: text"), for a failure path that
 * runs calls which may set their own before it reports or restores it. */
struct rv_error_saved {
	char msg[RV_ERR_MAX];
};
void rv_error_save(struct rv_error_saved *s);
/* Make s the thread's message again, exactly (nothing is logged). */
void rv_error_restore(const struct rv_error_saved *s);
/* The text of s after its "func: " prefix: after any function's when func
 * is NULL, after func's own only otherwise; s whole when it has none. */
const char *rv_error_text(const struct rv_error_saved *s, const char *func);

#endif
