/*
 * Memory placement and the memlock account, for the facade
 * (lib/mr.c, lib/pool.c, lib/mr_cache.c).
 *
 * Owns: mapping memory with the page size and NUMA node asked for (hugetlbfs,
 * transparent huge pages, mbind(2) without libnuma) and reporting what was
 * obtained; the process-wide count of bytes registered on devices that pin
 * memory, checked against RLIMIT_MEMLOCK (read once per process, afresh in a
 * fork child). Never calls a driver.
 */
#ifndef RV_MEMORY_H
#define RV_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fork.h" /* fork safety is the core's; the facade's files that check it include this */
#include "rverbs-private.h"

/* ---- placement ---- */

struct rv_mem_req {
	uint32_t page;  /* rv_mem_page */
	int32_t node;   /* a node, RV_MEM_NODE_DEVICE or RV_MEM_NODE_ANY */
	uint32_t flags; /* rv_mem_flags */
	/* Log fallbacks of an explicit request at this level (RV_LOG_WARN), and
	 * those of RV_MEM_PAGE_DEFAULT at RV_LOG_INFO. */
	bool quiet;     /* a later chunk of a pool: log at RV_LOG_DEBUG */
	/* Back the memory by a sealed memfd (F_SEAL_SHRINK | F_SEAL_GROW) mapped
	 * MAP_SHARED, so that a driver can hand the descriptor to a verified
	 * same-host peer (soft0's one-copy WRITE, lib/drivers/soft/README.md).
	 * Only where it keeps every other property: normal pages and hugetlbfs
	 * pages; memory that wants transparent huge pages stays anonymous
	 * (unless share_over_thp, below). rv_mr_alloc sets it. */
	bool shareable;
	/* With shareable and RV_MEM_PAGE_DEFAULT: prefer the memfd over the
	 * transparent huge pages the default would ask for at 2 MiB and more
	 * (rv_driver.prefers_shared_memory: soft0, whose one-copy WRITE and
	 * READ need the memfd and gain more from it than from THP). */
	bool share_over_thp;
};

struct rv_mem {
	void *addr;
	size_t length;    /* mapped, a multiple of page_size */
	size_t page_size; /* as obtained */
	int node;         /* as obtained, -1 unknown */
	bool hugetlb;     /* hugetlbfs pages (else normal pages, maybe THP) */
	int fd;           /* the memfd behind it (rv_mem_req.shareable), else -1; closed by rv_mem_unmap */
	char fallback[256]; /* "" or what was not obtained, and why */
};

/* Map zeroed memory of at least length bytes for ctx's device as req says,
 * excluded from fork children. 0, or a negative errno with the message set
 * (strict requests that could not be met: -ENOMEM or -EINVAL). A fallback
 * fills ret->fallback and is logged; the caller puts it in rv_error_last()
 * once the call has succeeded (rv_mem_report_fallback). */
int rv_mem_map(struct rv_context *ctx, size_t length, const struct rv_mem_req *req,
	       struct rv_mem *ret, const char *func);
void rv_mem_unmap(struct rv_mem *mem);
/* Put mem->fallback (if any) into rv_error_last() as "func: ...". */
void rv_mem_report_fallback(const struct rv_mem *mem, const char *func);

/* The system page size. */
size_t rv_mem_page_size(void);

/* Validate page, node and flags of a placement request (lib/mr.c). */
int rv_mem_req_check(uint32_t page, int32_t node, uint32_t flags, const char *func);

/* ---- registrations without a handle (the chunks of a pool, lib/mr.c) ---- */

/* Register [addr, addr+length) on pd into *mr, which is not in the ownership
 * graph: its owner deregisters it before the PD goes. Memlock-counted. */
int rv_mr_chunk_reg(rv_pd *pd, struct rv_mr *mr, void *addr, size_t length, uint32_t access,
		    const char *func);
/* 0 (also when not registered), or the driver's error: then it stays registered. */
int rv_mr_chunk_dereg(struct rv_mr *mr);

/* ---- the memlock account ---- */

/* Whether registrations on ctx's device pin memory against RLIMIT_MEMLOCK. */
bool rv_memlock_applies(const struct rv_context *ctx);
/* Count bytes (rounded to pages) about to be registered; -ENOMEM with the
 * message (limit, request, how to raise it) when that would exceed the limit. */
int rv_memlock_reserve(size_t bytes, const char *func);
void rv_memlock_unreserve(size_t bytes);
/* Explain an -ENOMEM of the driver in terms of the limit (message + hint). */
void rv_memlock_explain(const char *func, size_t bytes);

#endif
