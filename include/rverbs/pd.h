/**
 * @file rverbs/pd.h
 * @brief Protection domains.
 */
#ifndef RVERBS_PD_H
#define RVERBS_PD_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options for rv_pd_new(); no fields yet besides the mask. */
typedef struct rv_pd_attr {
	uint64_t mask; /**< which fields the caller set; must be 0 */
} rv_pd_attr;

/**
 * Allocate a protection domain. The PD holds a reference on its context.
 * @param ctx     the context
 * @param attr    options, or NULL
 * @param ret_pd  receives the PD
 * @retval 0            success
 * @retval -EINVAL      a NULL argument or an unknown mask bit
 * @retval -RV_ECLOSED  the context is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_pd_new(rv_context *ctx, const rv_pd_attr *attr, rv_pd **ret_pd);

/** Take a reference on @p pd. Returns @p pd (NULL-safe). */
RV_API rv_pd *rv_pd_ref(rv_pd *pd);

/** Drop a reference; the last one closes and frees the PD. Accepts NULL; returns NULL. */
RV_API rv_pd *rv_pd_unref(rv_pd *pd);

/**
 * Close the PD now, after closing every QP, MR, MW, SRQ and AH in it.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p pd is NULL or not a PD
 * @retval negative   a destroy failed; the PD stays open and the call may be retried
 */
RV_API int rv_pd_close(rv_pd *pd);

/** The PD's context (borrowed), or NULL for an invalid handle. */
RV_API rv_context *rv_pd_context(const rv_pd *pd);

#ifdef __cplusplus
}
#endif

#endif
