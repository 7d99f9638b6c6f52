/**
 * @file rverbs/pool.h
 * @brief Registered-buffer pools: register big chunks once, hand out buffers in O(1).
 *
 * A pool lives on a PD. It registers large chunks of memory (huge pages when
 * the system has them) up to a configured bound, carves them into buffers of
 * a few fixed sizes (size classes) and hands them out without a system call:
 * rv_pool_get() and rv_pool_put() are O(1), and a per-thread cache means the
 * common path takes no lock. Exhaustion is an error (-ENOMEM), never a wait.
 *
 * A pool depends on its PD: closing the PD (or its context) closes the pool
 * first, which deregisters every chunk. Buffers still out are then no longer
 * registered; their memory stays mapped until the pool's last unref.
 */
#ifndef RVERBS_POOL_H
#define RVERBS_POOL_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A registered-buffer pool. */
typedef struct rv_pool rv_pool;

/** The most size classes a pool can have. */
#define RV_POOL_MAX_CLASSES 8

/**
 * A buffer from a pool. The pool owns it; the caller reads the fields and
 * returns it with rv_pool_put(). The first three fields are those of an
 * rv_sge, so an rv_sge is filled from addr, length and lkey directly.
 */
typedef struct rv_pool_buf {
	uint64_t addr;        /**< start address (aligned to 64 bytes at least) */
	uint32_t length;      /**< bytes: the size of the buffer's class */
	uint32_t lkey;        /**< local key of the chunk holding it */
	uint32_t rkey;        /**< remote key of the chunk holding it */
	uint32_t class_index; /**< which size class it belongs to */
} rv_pool_buf;

/** Which fields of rv_pool_attr the caller set. */
typedef enum rv_pool_attr_mask {
	RV_POOL_ATTR_CLASSES = 1u << 0,      /**< n_classes and class_size are set */
	RV_POOL_ATTR_MAX_BYTES = 1u << 1,    /**< max_bytes is set */
	RV_POOL_ATTR_CHUNK_BYTES = 1u << 2,  /**< chunk_bytes is set */
	RV_POOL_ATTR_ACCESS = 1u << 3,       /**< access is set */
	RV_POOL_ATTR_PAGE = 1u << 4,         /**< page is set */
	RV_POOL_ATTR_NUMA_NODE = 1u << 5,    /**< numa_node is set */
	RV_POOL_ATTR_FLAGS = 1u << 6,        /**< flags is set */
	RV_POOL_ATTR_THREAD_CACHE = 1u << 7, /**< thread_cache is set */
	RV_POOL_ATTR_PREALLOC = 1u << 8      /**< prealloc_chunks is set */
} rv_pool_attr_mask;

/** Options for rv_pool_new(). Grows at the end only. */
typedef struct rv_pool_attr {
	uint64_t mask;          /**< rv_pool_attr_mask: which fields the caller set */
	uint32_t n_classes;     /**< number of size classes, 1..RV_POOL_MAX_CLASSES
				     (default 4: 256 B, 4 KiB, 64 KiB, 1 MiB) */
	uint32_t class_size[RV_POOL_MAX_CLASSES]; /**< buffer sizes, ascending,
				     each rounded up to 64 bytes */
	uint64_t max_bytes;     /**< bound on the bytes registered (default 256 MiB) */
	uint64_t chunk_bytes;   /**< bytes registered per growth (default 2 MiB; at
				     least the class size, rounded to pages) */
	uint32_t access;        /**< rv_access_flags of the chunks (default LOCAL_WRITE |
				     REMOTE_WRITE | REMOTE_READ) */
	uint32_t page;          /**< rv_mem_page of the chunks (default RV_MEM_PAGE_DEFAULT:
				     2 MiB huge pages when the system has free ones) */
	int32_t numa_node;      /**< as rv_mr_alloc_attr::numa_node (default the device's) */
	uint32_t flags;         /**< rv_mem_flags (default 0) */
	uint32_t thread_cache;  /**< buffers per class each thread keeps without a lock
				     (default 32; 0 disables the per-thread caches) */
	uint32_t prealloc_chunks; /**< chunks per class registered at creation (default 0) */
} rv_pool_attr;

/** Which fields of rv_pool_stats to fill. */
typedef enum rv_pool_stats_mask {
	RV_POOL_STATS_ALL = 1u << 0 /**< every field of rv_pool_stats below */
} rv_pool_stats_mask;

/** Counters of a pool (rv_pool_stats()). Grows at the end only. */
typedef struct rv_pool_stats {
	uint64_t mask;             /**< in: rv_pool_stats_mask; out: what was filled */
	uint64_t chunks;           /**< chunks registered */
	uint64_t bytes_registered; /**< bytes in those chunks */
	uint64_t buffers_total;    /**< buffers carved from them */
	uint64_t buffers_in_use;   /**< got and not yet put (exact when no other thread
				        is inside the pool at the time) */
	uint64_t high_water;       /**< the most buffers ever out of the shared free
				        lists at once: in use or in per-thread caches */
	uint64_t gets;             /**< successful rv_pool_get() calls */
	uint64_t misses;           /**< gets that found the thread's cache empty and
				        took the pool's lock (including those that grew it) */
	uint64_t failures;         /**< gets that failed for want of a buffer */
} rv_pool_stats;

/**
 * Create a pool on @p pd. Nothing is registered until the first get (unless
 * rv_pool_attr::prealloc_chunks says so). The pool holds a reference on the PD.
 * @param pd        the protection domain
 * @param attr      options, or NULL for the defaults
 * @param ret_pool  receives the pool
 * @retval 0            success
 * @retval -EINVAL      a NULL argument; an unknown mask bit; no class, more than
 *                      RV_POOL_MAX_CLASSES, a zero or non-ascending class size or
 *                      one above 1 GiB; a bad access, page, numa_node or flag;
 *                      max_bytes below one chunk
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EPERM       the PD belongs to the parent of this fork child
 * @retval -ENOMEM      out of memory, or preallocation exceeded a limit
 *                      (rv_error_last() says which)
 * @retval negative     the driver failed preallocated registrations
 */
RV_API int rv_pool_new(rv_pd *pd, const rv_pool_attr *attr, rv_pool **ret_pool);

/** Take a reference on @p pool. Returns @p pool (NULL-safe). */
RV_API rv_pool *rv_pool_ref(rv_pool *pool);

/** Drop a reference; the last one closes and frees the pool. Accepts NULL; returns NULL. */
RV_API rv_pool *rv_pool_unref(rv_pool *pool);

/**
 * Deregister every chunk now. Buffers still out stay mapped (until the last
 * unref) but are no longer registered; rv_pool_get() then fails.
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p pool is NULL or not a pool
 * @retval -EPERM     the pool belongs to the parent of this fork child
 * @retval negative   the driver refused a deregistration; the pool stays open
 *                    and the call may be retried
 */
RV_API int rv_pool_close(rv_pool *pool);

/**
 * Get a buffer of at least @p length bytes: one of the smallest class that
 * fits. O(1); from the calling thread's cache without a lock when it has one,
 * else from the pool's shared lists, registering a new chunk when they are
 * empty and the bound allows.
 * @param pool     the pool
 * @param length   bytes needed, 1 up to the largest class size
 * @param ret_buf  receives the buffer
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, or @p length is 0 or above the largest class
 * @retval -RV_ECLOSED  the pool is closed
 * @retval -EPERM       the pool belongs to the parent of this fork child
 * @retval -ENOMEM      the pool is exhausted: every buffer of the class is out
 *                      and registering another chunk would pass max_bytes (or
 *                      the memlock limit, or memory ran out); rv_error_last()
 *                      gives the figures. It never waits.
 * @retval negative     the driver failed to register a new chunk
 */
RV_API int rv_pool_get(rv_pool *pool, size_t length, rv_pool_buf **ret_buf);

/**
 * Return a buffer to its pool. O(1), without a lock when the thread's cache
 * has room. Any thread may put a buffer another thread got.
 * @param pool  the pool the buffer came from
 * @param buf   the buffer
 * @retval 0          success (also for a closed pool: the buffer is just dropped)
 * @retval -EINVAL    a NULL argument, a buffer of another pool, or a buffer that
 *                    is not out (put twice)
 * @retval -EPERM     the pool belongs to the parent of this fork child
 */
RV_API int rv_pool_put(rv_pool *pool, rv_pool_buf *buf);

/**
 * Read the pool's counters.
 * @param pool   the pool (closed is fine)
 * @param stats  in: mask (RV_POOL_STATS_ALL); out: the counters
 * @retval 0        success
 * @retval -EINVAL  a NULL argument, not a pool, or an unknown mask bit
 * @retval -EPERM   the pool belongs to the parent of this fork child
 */
RV_API int rv_pool_stats_get(rv_pool *pool, rv_pool_stats *stats);

/** The PD of the pool (borrowed), or NULL for an invalid or closed handle. */
RV_API rv_pd *rv_pool_pd(const rv_pool *pool);

#ifdef __cplusplus
}
#endif

#endif
