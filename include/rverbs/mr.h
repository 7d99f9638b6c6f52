/**
 * @file rverbs/mr.h
 * @brief Memory regions: register caller memory or let rverbs allocate it.
 */
#ifndef RVERBS_MR_H
#define RVERBS_MR_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Access flags of a memory region or QP (values equal IBV_ACCESS_*). */
typedef enum rv_access_flags {
	RV_ACCESS_LOCAL_WRITE = 1u << 0,   /**< the device may write (needed for RECV and READ sinks) */
	RV_ACCESS_REMOTE_WRITE = 1u << 1,  /**< peers may RDMA WRITE (needs LOCAL_WRITE) */
	RV_ACCESS_REMOTE_READ = 1u << 2,   /**< peers may RDMA READ */
	RV_ACCESS_REMOTE_ATOMIC = 1u << 3, /**< peers may run atomics (needs LOCAL_WRITE) */
	RV_ACCESS_MW_BIND = 1u << 4,       /**< memory windows may be bound */
	RV_ACCESS_ZERO_BASED = 1u << 5,    /**< remote addresses are offsets from 0 */
	RV_ACCESS_ON_DEMAND = 1u << 6,     /**< on-demand paging */
	RV_ACCESS_HUGETLB = 1u << 7,       /**< memory is backed by huge pages */
	RV_ACCESS_RELAXED_ORDERING = 1u << 20 /**< relaxed PCIe ordering where the device has it */
} rv_access_flags;

/** Every access flag rverbs knows. */
#define RV_ACCESS_ALL_REMOTE (RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | \
			      RV_ACCESS_REMOTE_READ | RV_ACCESS_REMOTE_ATOMIC)

/**
 * Register caller memory. The caller keeps ownership of the memory and must
 * keep it mapped until the MR is closed.
 * @param pd      the protection domain
 * @param addr    start of the memory
 * @param length  bytes, at least 1
 * @param access  rv_access_flags
 * @param ret_mr  receives the MR
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, zero length, an unknown access bit, or
 *                      REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -ENOMEM      the memlock limit (ulimit -l) or memory ran out;
 *                      rv_error_last() names the limit
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_mr_reg(rv_pd *pd, void *addr, size_t length, uint32_t access, rv_mr **ret_mr);

/**
 * Allocate page-aligned, zeroed memory and register it. The memory belongs to
 * the MR and is freed when the MR is freed (after its last unref).
 * @param pd      the protection domain
 * @param length  bytes, at least 1 (rounded up to whole pages)
 * @param access  rv_access_flags
 * @param ret_mr  receives the MR; rv_mr_addr() gives the memory
 * @retval 0            success
 * @retval -EINVAL      as for rv_mr_reg()
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -ENOMEM      no memory, or the memlock limit
 */
RV_API int rv_mr_alloc(rv_pd *pd, size_t length, uint32_t access, rv_mr **ret_mr);

/** Take a reference on @p mr. Returns @p mr (NULL-safe). */
RV_API rv_mr *rv_mr_ref(rv_mr *mr);

/** Drop a reference; the last one closes and frees the MR. Accepts NULL; returns NULL. */
RV_API rv_mr *rv_mr_unref(rv_mr *mr);

/**
 * Deregister now (after closing memory windows bound to it).
 * @retval 0          success, or already closed
 * @retval -EINVAL    @p mr is NULL or not an MR
 * @retval negative   the driver refused; the MR stays registered and the call may be retried
 */
RV_API int rv_mr_close(rv_mr *mr);

/**
 * The start address of the region. Memory from rv_mr_alloc() stays readable
 * until the last unref, even after close. NULL for an invalid handle.
 */
RV_API void *rv_mr_addr(const rv_mr *mr);

/** The length of the region in bytes; 0 for an invalid handle. */
RV_API size_t rv_mr_length(const rv_mr *mr);

/** The local key (for rv_sge::lkey); 0 for an invalid or closed handle. */
RV_API uint32_t rv_mr_lkey(const rv_mr *mr);

/** The remote key to hand to peers; 0 for an invalid or closed handle. */
RV_API uint32_t rv_mr_rkey(const rv_mr *mr);

/** The PD the MR belongs to (borrowed), or NULL for an invalid handle. */
RV_API rv_pd *rv_mr_pd(const rv_mr *mr);

#ifdef __cplusplus
}
#endif

#endif
