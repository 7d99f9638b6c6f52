/**
 * @file rverbs/mr.h
 * @brief Memory regions: register caller memory or let rverbs allocate it.
 */
#ifndef RVERBS_MR_H
#define RVERBS_MR_H

#include <rverbs/common.h>
#include <rverbs/qp.h> /* rv_sge */

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

/** rv_mr_reg()'s @p length for an implicit on-demand MR (with a NULL @p addr). */
#define RV_MR_IMPLICIT_LENGTH SIZE_MAX

/**
 * Register caller memory. The caller keeps ownership of the memory and must
 * keep it mapped until the MR is closed.
 *
 * With RV_ACCESS_ON_DEMAND the memory is not pinned (on-demand paging): the
 * device faults pages in when it touches them. The device must report
 * RV_ODP_SUPPORT in rv_device_attr::odp_general_caps (RV_DEVICE_ATTR_EX),
 * and the operations a QP type may run on such memory are in its
 * odp_rc/uc/ud/xrc_caps. ODP memory is not counted against the memlock limit.
 *
 * **Implicit ODP**: @p addr NULL, @p length RV_MR_IMPLICIT_LENGTH (SIZE_MAX)
 * and RV_ACCESS_ON_DEMAND register the whole address space of the process as
 * one MR, where the device reports RV_ODP_SUPPORT_IMPLICIT. Any address is
 * then good with its lkey (and, with a REMOTE_* right, for a peer holding its
 * rkey: such a key opens every page of the process to that peer, so hand it
 * only to peers trusted with all of it; docs/memory.md). An access to an
 * address that is not mapped fails that work request, not the process.
 * rv_mr_addr() returns NULL and rv_mr_length() SIZE_MAX for it.
 * @param pd      the protection domain
 * @param addr    start of the memory; NULL for an implicit MR
 * @param length  bytes, at least 1; RV_MR_IMPLICIT_LENGTH for an implicit MR
 * @param access  rv_access_flags
 * @param ret_mr  receives the MR
 * @retval 0            success
 * @retval -EINVAL      a NULL argument (a NULL @p addr other than for an
 *                      implicit MR), zero length, an unknown access bit,
 *                      REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE, or an
 *                      implicit MR without RV_ACCESS_ON_DEMAND
 * @retval -EOPNOTSUPP  RV_ACCESS_ON_DEMAND on a device without on-demand
 *                      paging, or an implicit MR on a device without
 *                      RV_ODP_SUPPORT_IMPLICIT
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EPERM       the PD belongs to the parent of this fork child
 * @retval -ENOMEM      the memlock limit (ulimit -l) or memory ran out;
 *                      rv_error_last() names the limit, the request and the
 *                      command that raises it
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_mr_reg(rv_pd *pd, void *addr, size_t length, uint32_t access, rv_mr **ret_mr);

/**
 * Register @p length bytes of a dma-buf, from @p offset into it: GPU or
 * accelerator memory an exporter hands out as a file descriptor (as
 * ibv_reg_dmabuf_mr). Local SGEs and peers address the region from @p iova
 * (rv_mr_addr() returns it). The MR keeps what it needs of the dma-buf:
 * @p fd may be closed after the call. It is not counted against the memlock
 * limit (the memory is the exporter's), and rv_mr_rereg() refuses it
 * (-EOPNOTSUPP).
 *
 * On soft0 the exporter must let the CPU map the buffer: soft0 maps it at
 * @p iova itself, so @p iova and @p offset must be page aligned and nothing
 * else of the process may be mapped in the range (docs/extended-verbs.md).
 * @param pd      the protection domain
 * @param offset  where the region starts in the dma-buf
 * @param length  bytes (≥ 1)
 * @param iova    the address of the region's first byte for SGEs and peers
 * @param fd      the dma-buf's file descriptor
 * @param access  rv_access_flags
 * @param ret_mr  receives the MR
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, zero length, a negative @p fd or one
 *                      that is not a dma-buf, an unknown access bit or
 *                      REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE; on soft0
 *                      also an @p iova range that other memory occupies, or a
 *                      misaligned @p iova or @p offset
 * @retval -EOPNOTSUPP  the device cannot register dma-bufs, or (soft0) the
 *                      exporter does not let the CPU map this one
 * @retval -RV_ECLOSED  the PD is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_mr_reg_dmabuf(rv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
			    uint32_t access, rv_mr **ret_mr);

/**
 * Page sizes rv_mr_alloc() and rv_pool_new() can ask for. Every choice falls
 * back down the chain 1 GiB → 2 MiB → transparent huge pages → normal pages
 * unless RV_MEM_STRICT is set; rv_mr_page_size() tells what was obtained.
 */
typedef enum rv_mem_page {
	/** The best that costs nothing to ask for: hugetlbfs 2 MiB pages when the
	 *  length is at least 2 MiB and the system has free ones, else transparent
	 *  huge pages for lengths of at least 2 MiB (on the software device: normal
	 *  pages of shared memory it can hand to a same-host peer for one-copy
	 *  WRITEs and READs; docs/memory.md), else normal pages. A fallback
	 *  is logged at RV_LOG_INFO only, since nothing in particular was asked. */
	RV_MEM_PAGE_DEFAULT = 0,
	/** Normal pages (the system page size), no transparent huge pages. */
	RV_MEM_PAGE_NORMAL = 1,
	/** Transparent huge pages (madvise(MADV_HUGEPAGE)), else normal pages. */
	RV_MEM_PAGE_THP = 2,
	/** hugetlbfs 2 MiB pages (MAP_HUGETLB | MAP_HUGE_2MB), else THP, else normal. */
	RV_MEM_PAGE_HUGE_2M = 3,
	/** hugetlbfs 1 GiB pages (MAP_HUGE_1GB), else 2 MiB, else THP, else normal. */
	RV_MEM_PAGE_HUGE_1G = 4
} rv_mem_page;

/** rv_mr_alloc_attr::numa_node: the device's own node (the default). */
#define RV_MEM_NODE_DEVICE (-1)
/** rv_mr_alloc_attr::numa_node: no binding; the kernel's first-touch policy. */
#define RV_MEM_NODE_ANY (-2)

/** Flags of rv_mr_alloc_attr::flags and rv_pool_attr::flags. */
typedef enum rv_mem_flags {
	/** Fail with -ENOMEM (page size) or -EINVAL (node) instead of falling back. */
	RV_MEM_STRICT = 1u << 0
} rv_mem_flags;

/** Which fields of rv_mr_alloc_attr the caller set. */
typedef enum rv_mr_alloc_attr_mask {
	RV_MR_ALLOC_ATTR_PAGE = 1u << 0,      /**< rv_mr_alloc_attr::page is set */
	RV_MR_ALLOC_ATTR_NUMA_NODE = 1u << 1, /**< rv_mr_alloc_attr::numa_node is set */
	RV_MR_ALLOC_ATTR_FLAGS = 1u << 2      /**< rv_mr_alloc_attr::flags is set */
} rv_mr_alloc_attr_mask;

/** Placement of memory rv_mr_alloc() allocates. Grows at the end only. */
typedef struct rv_mr_alloc_attr {
	uint64_t mask;     /**< rv_mr_alloc_attr_mask: which fields the caller set */
	uint32_t page;     /**< rv_mem_page (default RV_MEM_PAGE_DEFAULT) */
	int32_t numa_node; /**< a node number, RV_MEM_NODE_DEVICE (default) or RV_MEM_NODE_ANY */
	uint32_t flags;    /**< rv_mem_flags (default 0) */
} rv_mr_alloc_attr;

/**
 * Allocate page-aligned, zeroed memory with the placement the caller asks for,
 * and register it. The memory belongs to the MR and is unmapped when the MR is
 * freed (after its last unref); it is excluded from fork children
 * (MADV_DONTFORK).
 *
 * Placement: the page size of @p attr (see rv_mem_page) and the NUMA node:
 * by default the device's own node, read from
 * /sys/class/infiniband/DEVICE/device/numa_node (preferred, not enforced: the
 * kernel may use another node when that one is full); a node number binds the
 * memory to that node (mbind(MPOL_BIND)). The software device has no node,
 * and a machine with one node needs no binding.
 *
 * A fallback (fewer or smaller huge pages, a node that does not exist or
 * cannot be bound) is never silent: the call succeeds, logs at RV_LOG_WARN
 * (RV_LOG_INFO for RV_MEM_PAGE_DEFAULT) and leaves the explanation in
 * rv_error_last(); rv_mr_page_size() and rv_mr_numa_node() report what was
 * obtained. With RV_MEM_STRICT the call fails instead.
 *
 * @param pd      the protection domain
 * @param length  bytes, at least 1; rounded up to whole pages: 1 GiB or 2 MiB for
 *                hugetlbfs pages, 2 MiB when transparent huge pages were tried,
 *                else the system page size (rv_mr_length() gives the result)
 * @param access  rv_access_flags
 * @param attr    placement, or NULL for the defaults
 * @param ret_mr  receives the MR; rv_mr_addr() gives the memory
 * @retval 0            success (possibly after a fallback: see rv_error_last())
 * @retval -EINVAL      as for rv_mr_reg(); an unknown mask, flag or page bit; a
 *                      numa_node below RV_MEM_NODE_ANY; with RV_MEM_STRICT, a
 *                      node that does not exist
 * @retval -EOPNOTSUPP  RV_ACCESS_ON_DEMAND on a device without on-demand paging
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EPERM       the PD belongs to the parent of this fork child
 * @retval -ENOMEM      no memory; with RV_MEM_STRICT, the page size or node
 *                      could not be had; or the registration would exceed the
 *                      memlock limit (rv_error_last() names the limit, the
 *                      request and how to raise it)
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_mr_alloc(rv_pd *pd, size_t length, uint32_t access, const rv_mr_alloc_attr *attr,
		       rv_mr **ret_mr);

/** What rv_mr_rereg() changes (values equal IBV_REREG_MR_CHANGE_*). */
typedef enum rv_rereg_flags {
	RV_REREG_TRANS = 1u << 0,  /**< new memory: addr and length */
	RV_REREG_PD = 1u << 1,     /**< a new protection domain: pd */
	RV_REREG_ACCESS = 1u << 2  /**< new access flags: access */
} rv_rereg_flags;

/**
 * Change a memory region in place, as ibv_rereg_mr(3): its memory, its PD
 * and/or its access flags; the arguments @p flags does not name are ignored.
 * The keys may change: read rv_mr_lkey() and rv_mr_rkey() again afterwards.
 * On the software device they stay (as on mlx5), and from the moment the
 * call returns every access with them gets the new PD, range and rights: a
 * peer whose right was taken away gets a remote access error, and a receive
 * posted into memory the MR no longer covers fails (local protection error;
 * the sender sees a remote operation error). Do not call it while work using
 * the MR is outstanding.
 * With RV_REREG_PD the MR moves in the ownership graph: it depends on the new
 * PD, no longer on the old one (closing the old PD leaves it alive). The new
 * PD must belong to the MR's context.
 * On failure the MR is unchanged on the software device; on a libibverbs
 * device it may be left unusable (ibv_rereg_mr(3)): close it.
 * @param mr      the memory region
 * @param flags   rv_rereg_flags, at least one
 * @param pd      the new PD (RV_REREG_PD)
 * @param addr    the new memory (RV_REREG_TRANS); the caller keeps it mapped
 *                until the MR is closed or moved again
 * @param length  its length in bytes, at least 1 (RV_REREG_TRANS)
 * @param access  the new rv_access_flags (RV_REREG_ACCESS)
 * @retval 0            success
 * @retval -EINVAL      a NULL or invalid handle, no flag or an unknown one,
 *                      an access rule broken (as rv_mr_reg()), a PD of another
 *                      context, RV_REREG_TRANS on an MR from rv_mr_alloc()
 *                      (it owns its memory) or on a NULL addr / zero length
 * @retval -RV_ECLOSED  the MR or the new PD is closed
 * @retval -EBUSY       a memory window was bound to the MR (close the window
 *                      first: rverbs cannot tell an invalidated window apart)
 * @retval -EOPNOTSUPP  the device cannot re-register, the MR is an implicit
 *                      ODP MR, or the new access has RV_ACCESS_ON_DEMAND on a
 *                      device without on-demand paging
 * @retval -ENOMEM      the memlock limit or memory ran out
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_mr_rereg(rv_mr *mr, uint32_t flags, rv_pd *pd, void *addr, size_t length,
		       uint32_t access);

/** Advice of rv_mr_advise() (values equal IBV_ADVISE_MR_ADVICE_*). */
typedef enum rv_advise_mr_advice {
	/** Fault the pages in for reading before the I/O that needs them. */
	RV_ADVISE_MR_PREFETCH = 0,
	/** Fault the pages in for reading and writing (the MR needs LOCAL_WRITE). */
	RV_ADVISE_MR_PREFETCH_WRITE = 1,
	/** Hand the device only the pages that are present already; fault none in. */
	RV_ADVISE_MR_PREFETCH_NO_FAULT = 2
} rv_advise_mr_advice;

/** Flags of rv_mr_advise() (values equal IBV_ADVISE_MR_FLAG_*). */
typedef enum rv_advise_mr_flags {
	/** Return only once the advice has been carried out (synchronous). */
	RV_ADVISE_MR_FLAG_FLUSH = 1u << 0
} rv_advise_mr_flags;

/**
 * Give the device advice about ranges of on-demand MRs of @p pd, as
 * ibv_advise_mr(3): prefetch them so that the first I/O on them does not
 * wait for page faults. Each SGE names a range of an MR of @p pd by its lkey
 * (addr, length, lkey). Best effort: pages prefetched may be paged out again
 * before the I/O. Without RV_ADVISE_MR_FLAG_FLUSH the device may return
 * before the advice is carried out.
 *
 * On soft0 every MR is on demand; prefetching populates the pages
 * (madvise(MADV_POPULATE_READ/WRITE), MADV_WILLNEED on kernels before 5.14)
 * before the call returns, with or without FLUSH. PREFETCH_NO_FAULT checks
 * the ranges and does nothing more: soft0 has no page table of its own to
 * fill, the CPU's is the one it uses (docs/memory.md).
 * @param pd      the protection domain of the MRs
 * @param advice  an rv_advise_mr_advice
 * @param flags   rv_advise_mr_flags
 * @param sges    the ranges, each within an MR of @p pd
 * @param n_sges  how many, at least 1
 * @retval 0            success
 * @retval -EINVAL      @p pd NULL or not a PD, NULL @p sges, @p n_sges 0
 *                      or above UINT32_MAX, an unknown advice or flag, an SGE
 *                      of length 0, or a key that names a memory window
 * @retval -RV_ECLOSED  the PD is closed
 * @retval -EOPNOTSUPP  the device has no on-demand paging, or cannot take advice
 * @retval -ENOENT      an lkey names no MR of the device
 * @retval -EPERM       an lkey of another PD, or PREFETCH_WRITE on an MR
 *                      registered without RV_ACCESS_LOCAL_WRITE
 * @retval -EFAULT      a range outside its MR, or memory that is not mapped
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_mr_advise(rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sges, size_t n_sges);

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

/**
 * The page size backing the region, as obtained: 1 GiB or 2 MiB for hugetlbfs
 * pages, 2 MiB for transparent huge pages the kernel actually provided (read
 * from /proc/self/smaps at allocation), else the system page size. For caller
 * memory (rv_mr_reg()) the system page size. 0 for an invalid handle.
 */
RV_API size_t rv_mr_page_size(const rv_mr *mr);

/**
 * The NUMA node holding the region's first page, as obtained
 * (get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)); for memory from rv_mr_alloc()
 * only. -1 when unknown (caller memory, or the kernel would not say), and
 * -EINVAL for an invalid handle.
 */
RV_API int rv_mr_numa_node(const rv_mr *mr);

#ifdef __cplusplus
}
#endif

#endif
