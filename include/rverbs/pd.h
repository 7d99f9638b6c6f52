/**
 * @file rverbs/pd.h
 * @brief Protection domains, thread domains and parent domains.
 */
#ifndef RVERBS_PD_H
#define RVERBS_PD_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options for rv_td_new(); no fields yet besides the mask. */
typedef struct rv_td_attr {
	uint64_t mask; /**< which fields the caller set; must be 0 */
} rv_td_attr;

/**
 * Allocate a thread domain (as `ibv_alloc_td`): the caller promises that the
 * objects bound to it (through a parent domain, rv_pd_attr.td) are used from
 * one thread at a time, so a device may drop locks it would take for them.
 * The TD holds a reference on its context. On soft0 the TD is accepted and
 * tracked but changes no lock (docs/extended-verbs.md says why).
 * @param ctx     the context
 * @param attr    options, or NULL
 * @param ret_td  receives the TD
 * @retval 0             success
 * @retval -EINVAL       a NULL argument or an unknown mask bit
 * @retval -RV_ECLOSED   the context is closed
 * @retval -EOPNOTSUPP   the device has no thread domains
 * @retval negative      the driver failed; rv_error_last() says why
 */
RV_API int rv_td_new(rv_context *ctx, const rv_td_attr *attr, rv_td **ret_td);

/** Take a reference; returns @p td. */
RV_API rv_td *rv_td_ref(rv_td *td);

/** Drop a reference; the last one closes and frees the TD. Accepts NULL; returns NULL. */
RV_API rv_td *rv_td_unref(rv_td *td);

/**
 * Close the TD now, after closing every parent domain bound to it (and what
 * is in them).
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p td is NULL or not a TD
 * @retval negative   a destroy failed; the TD stays open and the call may be retried
 */
RV_API int rv_td_close(rv_td *td);

/** The TD's context (borrowed), or NULL for an invalid handle. */
RV_API rv_context *rv_td_context(const rv_td *td);

/**
 * Returned by an rv_pd_alloc_fn to let the device allocate that buffer
 * itself (as `IBV_ALLOCATOR_USE_DEFAULT`).
 */
#define RV_PD_ALLOCATOR_USE_DEFAULT ((void *)-1)

/**
 * soft0's resource type for its allocator calls: the work-queue buffers of a
 * QP (send and receive queues, their scatter/gather lists and inline data).
 * A libibverbs device passes its provider's own types (mlx5dv's
 * `MLX5DV_RES_TYPE_*`).
 */
#define RV_SOFT_RES_TYPE_QP 0x72760001u

/**
 * A parent domain's allocator (as `ibv_parent_domain_init_attr.alloc`): return
 * @p size bytes aligned to @p alignment, zeroed or not, or NULL (the creation
 * then fails with -ENOMEM), or RV_PD_ALLOCATOR_USE_DEFAULT. It and its free
 * run inside the rverbs call that creates or destroys the object, with the
 * context's lock held: they must not call rverbs.
 * @param pd             the parent domain
 * @param pd_context     rv_pd_attr.pd_context
 * @param size           bytes
 * @param alignment      a power of two
 * @param resource_type  what the buffer is for (the device's types)
 */
typedef void *(*rv_pd_alloc_fn)(rv_pd *pd, void *pd_context, size_t size, size_t alignment,
				uint64_t resource_type);

/** Frees what the rv_pd_alloc_fn of the same parent domain returned. */
typedef void (*rv_pd_free_fn)(rv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);

/** Bits of rv_pd_attr.mask. */
typedef enum rv_pd_attr_mask {
	/** rv_pd_attr.parent is set: the new PD is a parent domain of it. */
	RV_PD_ATTR_PARENT = 1u << 0,
	/** rv_pd_attr.td is set (needs RV_PD_ATTR_PARENT). */
	RV_PD_ATTR_TD = 1u << 1,
	/** rv_pd_attr.alloc, .free and .pd_context are set (needs RV_PD_ATTR_PARENT). */
	RV_PD_ATTR_ALLOCATORS = 1u << 2,
} rv_pd_attr_mask;

/**
 * Options for rv_pd_new(). With RV_PD_ATTR_PARENT the new PD is a parent
 * domain (as `ibv_alloc_parent_domain`): the same protection domain as
 * @p parent (MRs of either serve QPs of either), usable wherever a PD is,
 * optionally bound to a thread domain and with allocators the device may
 * call for the buffers of the objects created in it.
 */
typedef struct rv_pd_attr {
	uint64_t mask;       /**< which fields the caller set (rv_pd_attr_mask) */
	rv_pd *parent;       /**< RV_PD_ATTR_PARENT: an ordinary PD of the same context */
	rv_td *td;           /**< RV_PD_ATTR_TD: a TD of the same context */
	rv_pd_alloc_fn alloc; /**< RV_PD_ATTR_ALLOCATORS: the allocator (not NULL) */
	rv_pd_free_fn free;  /**< RV_PD_ATTR_ALLOCATORS: its free (not NULL) */
	void *pd_context;    /**< RV_PD_ATTR_ALLOCATORS: passed to both */
} rv_pd_attr;

/**
 * Allocate a protection domain, or a parent domain (RV_PD_ATTR_PARENT). The
 * PD holds a reference on its context; a parent domain also on its parent and
 * its TD, and closes when either closes.
 * @param ctx     the context
 * @param attr    options, or NULL
 * @param ret_pd  receives the PD
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown mask bit, a parent that is
 *                      itself a parent domain, a parent or TD of another
 *                      context, RV_PD_ATTR_TD or RV_PD_ATTR_ALLOCATORS without
 *                      RV_PD_ATTR_PARENT, or a NULL alloc or free
 * @retval -RV_ECLOSED  the context, the parent or the TD is closed
 * @retval -EOPNOTSUPP  the device has no parent domains
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

/** A parent domain's parent PD (borrowed); NULL for an ordinary PD or an invalid handle. */
RV_API rv_pd *rv_pd_parent(const rv_pd *pd);

#ifdef __cplusplus
}
#endif

#endif
