/**
 * @file rverbs/common.h
 * @brief Types shared by every rverbs header: handles, errors, logging, version.
 *
 * rverbs is an object-oriented facade over libibverbs with a built-in software
 * RDMA device. Every resource is an opaque, reference-counted handle. All
 * functions return 0 (or a count) on success and a negative errno on failure;
 * rv_error_last() then explains the failure in words.
 */
#ifndef RVERBS_COMMON_H
#define RVERBS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @cond INTERNAL */
#if defined(RVERBS_BUILDING_LIBRARY)
#define RV_API __attribute__((visibility("default")))
#else
#define RV_API
#endif
/** @endcond */

/** A device: the software device `soft0` or a libibverbs device. */
typedef struct rv_device rv_device;
/** An open device context (like `struct ibv_context`). */
typedef struct rv_context rv_context;
/** A protection domain. */
typedef struct rv_pd rv_pd;
/** A registered memory region. */
typedef struct rv_mr rv_mr;
/** A memory window. */
typedef struct rv_mw rv_mw;
/** A completion queue. */
typedef struct rv_cq rv_cq;
/** A completion channel: a file descriptor that signals CQ events. */
typedef struct rv_comp_channel rv_comp_channel;
/** A queue pair. */
typedef struct rv_qp rv_qp;
/** A shared receive queue. */
typedef struct rv_srq rv_srq;
/** An address handle (UD). */
typedef struct rv_ah rv_ah;
/** A thread domain: a promise that the objects bound to it are used from one thread at a time. */
typedef struct rv_td rv_td;
/** An XRC domain (rverbs/xrcd.h). */
typedef struct rv_xrcd rv_xrcd;

/**
 * Error returned (negated) by every call on a handle that has been closed,
 * explicitly or because something it depends on was closed. Equal to Linux's
 * EBADFD ("file descriptor in bad state"). rv_error_last() says why the
 * handle was closed.
 */
#define RV_ECLOSED 77

/** Severity of a log message. */
typedef enum rv_log_level {
	RV_LOG_ERROR = 0, /**< a failure the caller will also see as an error */
	RV_LOG_WARN = 1,  /**< something degraded (a fallback was taken) */
	RV_LOG_INFO = 2,  /**< lifecycle events */
	RV_LOG_DEBUG = 3  /**< detail for debugging rverbs itself */
} rv_log_level;

/**
 * A log handler. @p msg is a complete line without the trailing newline; it is
 * valid only during the call.
 */
typedef void (*rv_log_fn)(rv_log_level level, const char *msg, void *user);

/**
 * Install a log handler. rverbs never writes to stderr by itself: without a
 * handler, messages are dropped. Pass NULL to remove the handler. Safe while
 * other threads (soft0's progress threads among them) log: once it returns,
 * the previous handler is no longer called. Do not call it from a handler.
 * @param fn    handler, or NULL
 * @param user  passed to every call of @p fn
 */
RV_API void rv_set_log_handler(rv_log_fn fn, void *user);

/**
 * Set the most verbose level passed to the log handler (default RV_LOG_WARN).
 * @retval 0        success
 * @retval -EINVAL  @p level is not an rv_log_level
 */
RV_API int rv_set_log_level(rv_log_level level);

/**
 * The message describing the most recent failure in this thread: the call,
 * the object, the cause and a hint. Never NULL; empty when no call has failed
 * in this thread. Valid until the next rverbs call in this thread.
 */
RV_API const char *rv_error_last(void);

/** Forget the last error of this thread; rv_error_last() then returns "". */
RV_API void rv_error_clear(void);

/**
 * Free memory that rverbs allocated for the caller (for example the text of
 * rv_context_dump()). Accepts NULL.
 */
RV_API void rv_free(void *ptr);

/** The version of the library at run time, as "MAJOR.MINOR.PATCH". */
RV_API const char *rv_version(void);

/**
 * The version of the library at run time as one number:
 * MAJOR * 10000 + MINOR * 100 + PATCH.
 */
RV_API uint32_t rv_version_number(void);

#ifdef __cplusplus
}
#endif

#endif
