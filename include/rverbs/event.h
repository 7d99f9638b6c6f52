/**
 * @file rverbs/event.h
 * @brief Asynchronous events of a context: port changes, QP and CQ errors,
 *        the SRQ limit, through a file descriptor that can sit in epoll.
 *
 * Each context has one event queue. rv_context_async_fd() gives a descriptor
 * that is readable while an event waits; rv_context_get_async_event() takes
 * one (without waiting, or up to a timeout) and rv_async_event_ack() releases
 * it. An event names the QP, CQ or SRQ it is about with a new reference, so
 * the handle stays valid memory until the ack, even if it is closed meanwhile
 * (calls on it then report -RV_ECLOSED). The ack only drops those references:
 * closing a handle or the context never waits for an unacknowledged event.
 * Events about a handle that is closed before they are taken are discarded.
 */
#ifndef RVERBS_EVENT_H
#define RVERBS_EVENT_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What an asynchronous event reports (values equal IBV_EVENT_*). */
typedef enum rv_async_event_type {
	RV_EVENT_CQ_ERR = 0,              /**< the CQ overflowed (rv_async_event::cq); its QPs went to error */
	RV_EVENT_QP_FATAL = 1,            /**< the device moved the QP to error (wire or transport failure) */
	RV_EVENT_QP_REQ_ERR = 2,          /**< invalid request local work queue error */
	RV_EVENT_QP_ACCESS_ERR = 3,       /**< local access violation error */
	RV_EVENT_COMM_EST = 4,            /**< the QP's connection is established (first message may flow) */
	RV_EVENT_SQ_DRAINED = 5,          /**< the send queue drained in SQD */
	RV_EVENT_PATH_MIG = 6,            /**< path migration to the alternate path */
	RV_EVENT_PATH_MIG_ERR = 7,        /**< path migration failed */
	RV_EVENT_DEVICE_FATAL = 8,        /**< the device failed: close the context */
	RV_EVENT_PORT_ACTIVE = 9,         /**< the port (rv_async_event::port_num) became active */
	RV_EVENT_PORT_ERR = 10,           /**< the port went down */
	RV_EVENT_LID_CHANGE = 11,         /**< the port's LID changed */
	RV_EVENT_PKEY_CHANGE = 12,        /**< the port's P_Key table changed */
	RV_EVENT_SM_CHANGE = 13,          /**< the subnet manager changed */
	RV_EVENT_SRQ_ERR = 14,            /**< the SRQ failed */
	RV_EVENT_SRQ_LIMIT_REACHED = 15,  /**< fewer WRs than the armed limit remain; the limit disarmed */
	RV_EVENT_QP_LAST_WQE_REACHED = 16,/**< a QP using an SRQ went to error: no receive WR will complete on it any more */
	RV_EVENT_CLIENT_REREGISTER = 17,  /**< the SM asks clients to re-register */
	RV_EVENT_GID_CHANGE = 18          /**< the port's GID table changed */
} rv_async_event_type;

/** One asynchronous event, filled by rv_context_get_async_event(). */
typedef struct rv_async_event {
	uint32_t type;     /**< an rv_async_event_type */
	uint32_t port_num; /**< port events: the port number; else 0 */
	rv_qp *qp;         /**< QP events: the QP (a reference, dropped by the ack); else NULL */
	rv_cq *cq;         /**< CQ events: the CQ (a reference, dropped by the ack); else NULL */
	rv_srq *srq;       /**< SRQ events: the SRQ (a reference, dropped by the ack); else NULL */
	uint64_t reserved; /**< zero */
} rv_async_event;

/**
 * The context's asynchronous event descriptor, for poll/epoll/select: readable
 * while an event waits. Non-blocking and owned by the context: do not read
 * or close it; call rv_context_get_async_event().
 * @return the descriptor (≥ 0)
 * @retval -EINVAL      @p ctx is NULL or not a context
 * @retval -RV_ECLOSED  the context is closed
 * @retval -EOPNOTSUPP  the driver has no event queue
 */
RV_API int rv_context_async_fd(rv_context *ctx);

/**
 * Take one asynchronous event, waiting up to @p timeout_ms. Release it with
 * rv_async_event_ack().
 * @param ctx         the context
 * @param ret_ev      receives the event (untouched on failure)
 * @param timeout_ms  0: do not wait; negative: wait forever
 * @retval 0            an event was taken
 * @retval -EAGAIN      no event and @p timeout_ms is 0
 * @retval -ETIMEDOUT   no event within @p timeout_ms
 * @retval -EINTR       a signal interrupted the wait
 * @retval -EINVAL      a NULL argument
 * @retval -RV_ECLOSED  the context is closed
 * @retval -EOPNOTSUPP  the driver has no event queue
 */
RV_API int rv_context_get_async_event(rv_context *ctx, rv_async_event *ret_ev, int timeout_ms);

/**
 * Release an event taken by rv_context_get_async_event(): drop the references
 * it holds and clear its handle fields. NULL-safe; a second ack of the same
 * event does nothing.
 */
RV_API void rv_async_event_ack(rv_async_event *ev);

/**
 * The name of an event type ("QP_FATAL", "SRQ_LIMIT_REACHED").
 * @return a static string; "UNKNOWN" for a value outside rv_async_event_type
 */
RV_API const char *rv_async_event_str(uint32_t type);

#ifdef __cplusplus
}
#endif

#endif
