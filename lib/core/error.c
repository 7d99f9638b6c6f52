/*
 * Thread-local error messages and the log hook.
 *
 * Owns: the per-thread message behind rv_error_last() and the process-wide log
 * handler. Never writes to stderr or any file by itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

static _Thread_local char err_buf[RV_ERR_MAX];

/* The handler and its argument change together, and a handler being
 * replaced is not called once rv_set_log_handler() returns (its user data
 * may be gone): callers hold the lock for reading around the call. Logging
 * is off the data path, so the lock costs nothing there. */
static pthread_rwlock_t log_lock = PTHREAD_RWLOCK_INITIALIZER;
static rv_log_fn log_fn;
static void *log_user;
static _Atomic int log_level = RV_LOG_WARN;

static void vlog(rv_log_level level, const char *fmt, va_list ap)
{
	char line[RV_ERR_MAX];

	if ((int)level > atomic_load(&log_level))
		return;
	pthread_rwlock_rdlock(&log_lock);
	if (log_fn) {
		vsnprintf(line, sizeof(line), fmt, ap);
		log_fn(level, line, log_user);
	}
	pthread_rwlock_unlock(&log_lock);
}

__attribute__((visibility("default"))) void rv_set_log_handler(rv_log_fn fn, void *user)
{
	pthread_rwlock_wrlock(&log_lock);
	log_user = user;
	log_fn = fn;
	pthread_rwlock_unlock(&log_lock);
}

__attribute__((visibility("default"))) int rv_set_log_level(rv_log_level level)
{
	if ((int)level < RV_LOG_ERROR || (int)level > RV_LOG_DEBUG)
		return rv_err(EINVAL, "rv_set_log_level", "level %d is not an rv_log_level (0..3)",
			      (int)level);
	atomic_store(&log_level, (int)level);
	return 0;
}

void rv_log(rv_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

int rv_err(int errnum, const char *func, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(err_buf, sizeof(err_buf), "%s: ", func);
	if (n < 0 || (size_t)n >= sizeof(err_buf))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(err_buf + n, sizeof(err_buf) - (size_t)n, fmt, ap);
	va_end(ap);
	rv_log(RV_LOG_DEBUG, "%s", err_buf);
	return -errnum;
}

void rv_err_hint(const char *fmt, ...)
{
	size_t n = strlen(err_buf);
	va_list ap;

	if (n + 10 >= sizeof(err_buf))
		return;
	memcpy(err_buf + n, "; hint: ", 8);
	n += 8;
	err_buf[n] = '\0';
	va_start(ap, fmt);
	vsnprintf(err_buf + n, sizeof(err_buf) - n, fmt, ap);
	va_end(ap);
}

int rv_err_is_set(void)
{
	return err_buf[0] != '\0';
}

int rv_err_from_driver(int rc, const char *func, const char *what)
{
	if (rc >= 0)
		return rc;
	if (!rv_err_is_set())
		return rv_err(-rc, func, "%s failed: %s", what, strerror(-rc));
	return rc;
}

void rv_error_save(struct rv_error_saved *s)
{
	memcpy(s->msg, err_buf, sizeof(s->msg));
}

void rv_error_restore(const struct rv_error_saved *s)
{
	memcpy(err_buf, s->msg, sizeof(err_buf));
}

const char *rv_error_text(const struct rv_error_saved *s, const char *func)
{
	const char *sep;
	size_t n;

	if (!func) {
		sep = strstr(s->msg, ": ");
		return sep ? sep + 2 : s->msg;
	}
	n = strlen(func);
	if (strncmp(s->msg, func, n) == 0 && s->msg[n] == ':' && s->msg[n + 1] == ' ')
		return s->msg + n + 2;
	return s->msg;
}

__attribute__((visibility("default"))) const char *rv_error_last(void)
{
	return err_buf;
}

__attribute__((visibility("default"))) void rv_error_clear(void)
{
	err_buf[0] = '\0';
}
