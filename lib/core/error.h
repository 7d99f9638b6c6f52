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

#endif
