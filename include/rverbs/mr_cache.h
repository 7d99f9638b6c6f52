/**
 * @file rverbs/mr_cache.h
 * @brief An opt-in, bounded registration cache for caller memory.
 *
 * rv_mr_cache_get() returns an MR covering (address, length, access), reusing
 * one the cache registered before when it covers the range with at least
 * those access rights, and registering the pages of the range otherwise.
 * Least-recently-used registrations are deregistered when the cache passes
 * its bounds. The cache has no hidden hooks: it never intercepts free(),
 * munmap() or brk. The rules (docs/memory.md) are the whole contract:
 *
 * 1. Before memory that a cached registration may cover is freed, unmapped or
 *    remapped, the caller calls rv_mr_cache_invalidate() on its range.
 * 2. An MR from rv_mr_cache_get() is the caller's reference: it stays
 *    registered until the caller unrefs it, even after an invalidation or an
 *    eviction, which only stop the cache from handing it out again. So the
 *    memory must stay mapped until those references are dropped too.
 * 3. The cache is safe to use from several threads (one mutex).
 */
#ifndef RVERBS_MR_CACHE_H
#define RVERBS_MR_CACHE_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A registration cache on one PD. */
typedef struct rv_mr_cache rv_mr_cache;

/** Which fields of rv_mr_cache_attr the caller set. */
typedef enum rv_mr_cache_attr_mask {
	RV_MR_CACHE_ATTR_MAX_ENTRIES = 1u << 0, /**< max_entries is set */
	RV_MR_CACHE_ATTR_MAX_BYTES = 1u << 1    /**< max_bytes is set */
} rv_mr_cache_attr_mask;

/** Bounds of a cache. Grows at the end only. */
typedef struct rv_mr_cache_attr {
	uint64_t mask;        /**< rv_mr_cache_attr_mask: which fields the caller set */
	uint32_t max_entries; /**< registrations kept (default 256) */
	uint32_t reserved;    /**< must be 0 */
	uint64_t max_bytes;   /**< bytes those registrations cover (default 1 GiB) */
} rv_mr_cache_attr;

/** Which fields of rv_mr_cache_stats to fill. */
typedef enum rv_mr_cache_stats_mask {
	RV_MR_CACHE_STATS_ALL = 1u << 0 /**< every field below */
} rv_mr_cache_stats_mask;

/** Counters of a cache. Grows at the end only. */
typedef struct rv_mr_cache_stats {
	uint64_t mask;          /**< in: rv_mr_cache_stats_mask; out: what was filled */
	uint64_t entries;       /**< registrations held now */
	uint64_t bytes;         /**< bytes they cover */
	uint64_t hits;          /**< gets served by a cached registration */
	uint64_t misses;        /**< gets that registered */
	uint64_t evictions;     /**< registrations dropped to stay within the bounds */
	uint64_t invalidations; /**< registrations dropped by rv_mr_cache_invalidate() */
} rv_mr_cache_stats;

/**
 * Create a cache for registrations on @p pd. The cache holds a reference on
 * the PD; when the PD is closed, its cached MRs are closed with it and the
 * cache drops them.
 * @param pd         the protection domain
 * @param attr       bounds, or NULL for the defaults
 * @param ret_cache  receives the cache
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown mask bit, reserved not 0, or a bound of 0
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EPERM       the PD belongs to the parent of this fork child
 * @retval -ENOMEM      out of memory
 */
RV_API int rv_mr_cache_new(rv_pd *pd, const rv_mr_cache_attr *attr, rv_mr_cache **ret_cache);

/** Take a reference on @p cache. Returns @p cache (NULL-safe). */
RV_API rv_mr_cache *rv_mr_cache_ref(rv_mr_cache *cache);

/**
 * Drop a reference; the last one drops every cached registration (MRs the
 * caller still holds stay registered until their own unref) and the PD.
 * Accepts NULL; returns NULL.
 */
RV_API rv_mr_cache *rv_mr_cache_unref(rv_mr_cache *cache);

/**
 * An MR covering [@p addr, @p addr + @p length) with at least @p access, as a
 * new reference the caller drops with rv_mr_unref(). A hit reuses a cached
 * registration; a miss registers the whole pages of the range and caches
 * that, evicting least-recently-used registrations beyond the bounds.
 * @param cache   the cache
 * @param addr    start of the memory
 * @param length  bytes, at least 1
 * @param access  rv_access_flags the caller needs
 * @param ret_mr  receives the MR (a new reference)
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, zero length, a range that wraps, an
 *                      unknown access bit, or a range larger than max_bytes
 * @retval -RV_ECLOSED  the cache's PD is closed
 * @retval -EPERM       the cache belongs to the parent of this fork child
 * @retval -ENOMEM      out of memory or the memlock limit (rv_error_last() names it)
 * @retval negative     the driver failed to register; rv_error_last() says why
 */
RV_API int rv_mr_cache_get(rv_mr_cache *cache, void *addr, size_t length, uint32_t access,
			   rv_mr **ret_mr);

/**
 * Forget every cached registration that overlaps [@p addr, @p addr +
 * @p length), before the caller frees or remaps that memory. Those the caller
 * still holds stay registered until unreferenced.
 * @param cache   the cache
 * @param addr    start of the range
 * @param length  bytes (0 invalidates nothing)
 * @retval >=0      the number of registrations dropped
 * @retval -EINVAL  @p cache is NULL or not a cache
 * @retval -EPERM   the cache belongs to the parent of this fork child
 */
RV_API int rv_mr_cache_invalidate(rv_mr_cache *cache, const void *addr, size_t length);

/**
 * Read the cache's counters.
 * @param cache  the cache
 * @param stats  in: mask (RV_MR_CACHE_STATS_ALL); out: the counters
 * @retval 0        success
 * @retval -EINVAL  a NULL argument, not a cache, or an unknown mask bit
 */
RV_API int rv_mr_cache_stats_get(rv_mr_cache *cache, rv_mr_cache_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
