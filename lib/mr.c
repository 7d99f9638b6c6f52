/*
 * Memory regions: registration of caller memory and of memory rverbs
 * allocates with the placement asked for (page size, NUMA node: lib/memory.c;
 * page-aligned, zeroed, excluded from fork children, owned by the MR until its
 * last unref), and registrations without a handle for the chunks of a pool.
 *
 * Every registration on a device that pins memory is counted against
 * RLIMIT_MEMLOCK before the driver sees it, so the error names the limit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "driver.h"
#include "memory.h"

#define RV_ACCESS_KNOWN (RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ | \
			 RV_ACCESS_REMOTE_ATOMIC | RV_ACCESS_MW_BIND | RV_ACCESS_ZERO_BASED |     \
			 RV_ACCESS_ON_DEMAND | RV_ACCESS_HUGETLB | RV_ACCESS_RELAXED_ORDERING)

static int mr_dereg(struct rv_mr *mr)
{
	int rc = mr->pd->ctx->drv->mr_dereg(mr);

	if (rc == 0 && mr->locked_counted) {
		rv_memlock_unreserve(mr->length);
		mr->locked_counted = false;
	}
	return rc;
}

static int mr_destroy(struct rv_object *obj)
{
	return mr_dereg((struct rv_mr *)obj);
}

static void mr_release(struct rv_object *obj)
{
	struct rv_mr *mr = (struct rv_mr *)obj;
	if (mr->owned)
		munmap(mr->owned, mr->owned_length);
	if (mr->mem_fd >= 0)
		close(mr->mem_fd);
	mr->mem_fd = -1;
}

static const struct rv_object_class mr_class = {
	.type = RV_OBJ_MR,
	.name = "MR",
	.destroy = mr_destroy,
	.release = mr_release,
};

static int check_access(uint32_t access, const char *func)
{
	if (access & ~(uint32_t)RV_ACCESS_KNOWN)
		return rv_err(EINVAL, func, "unknown access bit 0x%x", access & ~(uint32_t)RV_ACCESS_KNOWN);
	if ((access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RV_ACCESS_LOCAL_WRITE))
		return rv_err(EINVAL, func, "REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (the verbs rule)");
	return 0;
}

/* The driver registers mr (pd, addr, length, access set), after the memlock
 * account agreed. Caller holds the graph lock. */
static int mr_driver_reg(struct rv_mr *mr, const char *func)
{
	struct rv_context *ctx = mr->pd->ctx;
	int rc;

	/* On-demand memory is not pinned: the kernel does not count it either. */
	if (rv_memlock_applies(ctx) && !(mr->access & RV_ACCESS_ON_DEMAND)) {
		rc = rv_memlock_reserve(mr->length, func);
		if (rc < 0)
			return rc;
		mr->locked_counted = true;
	}
	rv_error_clear();
	rc = ctx->drv->mr_reg(mr);
	if (rc == -ENOMEM && !rv_err_is_set())
		rv_memlock_explain(func, mr->length);
	rc = rv_err_from_driver(rc, func, "registering the memory");
	if (rc < 0 && mr->locked_counted) {
		rv_memlock_unreserve(mr->length);
		mr->locked_counted = false;
	}
	return rc;
}

static void mr_fields(struct rv_mr *mr, rv_pd *pd, void *addr, size_t length, uint32_t access)
{
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->page_size = rv_mem_page_size();
	mr->numa_node = -1;
	mr->mem_fd = -1;
	mr->implicit = !addr && length == RV_MR_IMPLICIT_LENGTH;
}

/* An MR the caller allocated (a pool's chunk): the object too. */
static void mr_init(struct rv_mr *mr, rv_pd *pd, void *addr, size_t length, uint32_t access)
{
	rv_obj_init(&mr->obj, &mr_class, pd->ctx);
	mr->obj.id = rv_ctx_next_id(pd->ctx);
	mr_fields(mr, pd, addr, length, access);
}

/* Register [addr, addr+length) on pd; owned memory (if any) becomes the MR's. */
static int mr_new(rv_pd *pd, void *addr, size_t length, uint32_t access, const struct rv_mem *owned,
		  rv_mr **ret_mr, const char *func)
{
	struct rv_mr *mr;
	int rc;

	mr = rv_obj_new(sizeof(*mr), &mr_class, pd->ctx, func);
	if (!mr)
		return -ENOMEM;
	mr_fields(mr, pd, addr, length, access);
	if (owned) {
		mr->memory_ours = true;
		mr->owned = owned->addr;
		mr->owned_length = owned->length;
		mr->page_size = owned->page_size;
		mr->numa_node = owned->node;
		mr->mem_fd = owned->fd;
	}
	rv_graph_lock(&pd->obj);
	rc = rv_obj_depend(&mr->obj, &pd->obj, func);
	if (rc == 0)
		rc = mr_driver_reg(mr, func);
	if (rc < 0) {
		mr->owned = NULL; /* the caller frees it on failure */
		mr->mem_fd = -1;
	}
	return RV_OBJ_NEW_END(mr, &pd->obj, rc, ret_mr);
}

int rv_mr_chunk_reg(rv_pd *pd, struct rv_mr *mr, void *addr, size_t length, uint32_t access,
		    const char *func)
{
	int rc;

	memset(mr, 0, sizeof(*mr));
	mr_init(mr, pd, addr, length, access);
	mr->memory_ours = true; /* the pool's own chunk (lib/pool.c), unmapped after this MR */
	rv_graph_lock(&pd->obj);
	rc = mr_driver_reg(mr, func);
	rv_graph_unlock(&pd->obj);
	if (rc < 0)
		mr->obj.state = RV_OBJ_CLOSED;
	return rc;
}

int rv_mr_chunk_dereg(struct rv_mr *mr)
{
	int rc;

	if (mr->obj.state != RV_OBJ_LIVE)
		return 0;
	rc = mr_dereg(mr);
	if (rc == 0)
		mr->obj.state = RV_OBJ_CLOSED;
	return rc;
}

/* RV_ACCESS_ON_DEMAND (and implicit ODP) only where the device reports it,
 * with the error a kernel gives for a device without it (ib_check_mr_access:
 * EOPNOTSUPP). Control path: one device query per ODP registration. */
static int check_odp(struct rv_pd *pd, bool implicit, const char *func)
{
	struct rv_context *ctx = pd->ctx;
	rv_device_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.mask = RV_DEVICE_ATTR_EX;
	rv_error_clear();
	rc = ctx->drv->query_device(ctx, &a);
	if (rc < 0)
		return rv_err_from_driver(rc, func, "querying the device's ODP capabilities");
	if (!(a.odp_general_caps & RV_ODP_SUPPORT))
		return rv_err(EOPNOTSUPP, func, "device %s has no on-demand paging (odp_general_caps 0): "
			      "register without RV_ACCESS_ON_DEMAND", ctx->dev->name);
	if (implicit && !(a.odp_general_caps & RV_ODP_SUPPORT_IMPLICIT))
		return rv_err(EOPNOTSUPP, func, "device %s has on-demand paging but not implicit ODP "
			      "(RV_ODP_SUPPORT_IMPLICIT): register the ranges you use instead of the "
			      "whole address space", ctx->dev->name);
	return 0;
}

RV_EXPORT int rv_mr_reg(rv_pd *pd, void *addr, size_t length, uint32_t access, rv_mr **ret_mr)
{
	bool implicit;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (!ret_mr)
		return rv_err(EINVAL, __func__, "ret_mr is NULL");
	implicit = !addr && length == RV_MR_IMPLICIT_LENGTH;
	if (implicit && !(access & RV_ACCESS_ON_DEMAND))
		return rv_err(EINVAL, __func__, "addr NULL with length SIZE_MAX is an implicit ODP MR, which "
			      "needs RV_ACCESS_ON_DEMAND");
	if (!addr && !implicit)
		return rv_err(EINVAL, __func__, "addr is NULL (an implicit ODP MR has length SIZE_MAX "
			      "and RV_ACCESS_ON_DEMAND)");
	if (length == 0)
		return rv_err(EINVAL, __func__, "length is 0");
	if (!implicit && (uintptr_t)addr + length < (uintptr_t)addr)
		return rv_err(EINVAL, __func__, "addr + length wraps around the address space");
	rc = check_access(access, __func__);
	if (rc < 0)
		return rc;
	if (access & RV_ACCESS_ON_DEMAND) {
		rc = check_odp(pd, implicit, __func__);
		if (rc < 0)
			return rc;
	}
	return mr_new(pd, addr, length, access, NULL, ret_mr, __func__);
}

#define RV_ADVISE_FLAGS_KNOWN RV_ADVISE_MR_FLAG_FLUSH

RV_EXPORT int rv_mr_advise(rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sges, size_t n_sges)
{
	struct rv_context *ctx;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	ctx = pd->ctx;
	if (!sges)
		return rv_err(EINVAL, __func__, "sges is NULL");
	if (n_sges == 0 || n_sges > UINT32_MAX)
		return rv_err(EINVAL, __func__, "n_sges %zu is 0 or above UINT32_MAX", n_sges);
	if (advice > RV_ADVISE_MR_PREFETCH_NO_FAULT)
		return rv_err(EINVAL, __func__, "advice %u is not an rv_advise_mr_advice (0..%d)", advice,
			      RV_ADVISE_MR_PREFETCH_NO_FAULT);
	if (flags & ~(uint32_t)RV_ADVISE_FLAGS_KNOWN)
		return rv_err(EINVAL, __func__, "unknown flag 0x%x", flags & ~(uint32_t)RV_ADVISE_FLAGS_KNOWN);
	for (size_t i = 0; i < n_sges; i++)
		if (sges[i].length == 0)
			return rv_err(EINVAL, __func__, "sges[%zu] has length 0", i);
	rc = check_odp(pd, false, __func__);
	if (rc < 0)
		return rc;
	if (!ctx->drv->mr_advise)
		return rv_err(EOPNOTSUPP, __func__, "device %s takes no advice on MRs", ctx->dev->name);
	rv_error_clear();
	rc = ctx->drv->mr_advise(pd, advice, flags, sges, (uint32_t)n_sges);
	return rv_err_from_driver(rc, __func__, "advising the device");
}

/* A dma-buf's file system (linux/magic.h DMA_BUF_MAGIC, "DMAB"). */
#define RV_DMA_BUF_MAGIC 0x444d4142

RV_EXPORT int rv_mr_reg_dmabuf(rv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
			       uint32_t access, rv_mr **ret_mr)
{
	struct rv_context *ctx;
	struct statfs sfs;
	struct rv_mr *mr;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	ctx = pd->ctx;
	if (!ret_mr)
		return rv_err(EINVAL, __func__, "ret_mr is NULL");
	if (length == 0)
		return rv_err(EINVAL, __func__, "length is 0");
	if (iova + length < iova || offset + length < offset)
		return rv_err(EINVAL, __func__, "iova or offset + length wraps around");
	if (fd < 0)
		return rv_err(EINVAL, __func__, "fd %d is not a file descriptor", fd);
	if (fstatfs(fd, &sfs) != 0 || sfs.f_type != RV_DMA_BUF_MAGIC)
		return rv_err(EINVAL, __func__, "fd %d is not a dma-buf; pass the descriptor an exporter "
			      "gave out (a GPU driver, vgem, udmabuf, a DMA heap)", fd);
	rc = check_access(access, __func__);
	if (rc < 0)
		return rc;
	if (!ctx->drv->mr_reg_dmabuf)
		return rv_err(EOPNOTSUPP, __func__, "device %s cannot register dma-bufs", ctx->dev->name);
	mr = rv_obj_new(sizeof(*mr), &mr_class, ctx, __func__);
	if (!mr)
		return -ENOMEM;
	mr_fields(mr, pd, (void *)(uintptr_t)iova, length, access);
	mr->dmabuf = true;
	mr->implicit = false; /* an iova of 0 is not the whole address space */
	rv_graph_lock(&pd->obj);
	rc = rv_obj_depend(&mr->obj, &pd->obj, __func__);
	/* Not host memory the process pins: no memlock account. */
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->mr_reg_dmabuf(mr, offset, fd), __func__, "registering the dma-buf");
	return RV_OBJ_NEW_END(mr, &pd->obj, rc, ret_mr);
}

#define MR_ALLOC_ATTR_KNOWN (RV_MR_ALLOC_ATTR_PAGE | RV_MR_ALLOC_ATTR_NUMA_NODE | RV_MR_ALLOC_ATTR_FLAGS)

/* Validate a placement request (shared with rv_pool_new). */
int rv_mem_req_check(uint32_t page, int32_t node, uint32_t flags, const char *func)
{
	if (page > RV_MEM_PAGE_HUGE_1G)
		return rv_err(EINVAL, func, "page %u is not an rv_mem_page (0..%d)", page, RV_MEM_PAGE_HUGE_1G);
	if (node < RV_MEM_NODE_ANY)
		return rv_err(EINVAL, func, "numa_node %d is neither a node, RV_MEM_NODE_DEVICE nor RV_MEM_NODE_ANY",
			      (int)node);
	if (flags & ~(uint32_t)RV_MEM_STRICT)
		return rv_err(EINVAL, func, "unknown flag 0x%x", flags & ~(uint32_t)RV_MEM_STRICT);
	return 0;
}

RV_EXPORT int rv_mr_alloc(rv_pd *pd, size_t length, uint32_t access, const rv_mr_alloc_attr *attr,
			  rv_mr **ret_mr)
{
	struct rv_mem_req req = {.page = RV_MEM_PAGE_DEFAULT, .node = RV_MEM_NODE_DEVICE, .shareable = true};
	struct rv_mem mem;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (!ret_mr)
		return rv_err(EINVAL, __func__, "ret_mr is NULL");
	if (length == 0 || length > SIZE_MAX / 2)
		return rv_err(EINVAL, __func__, "length %zu is 0 or too large", length);
	rc = check_access(access, __func__);
	if (rc == 0 && (access & RV_ACCESS_ON_DEMAND))
		rc = check_odp(pd, false, __func__);
	if (rc < 0)
		return rc;
	req.share_over_thp = pd->ctx->drv->prefers_shared_memory;
	if (attr) {
		if (attr->mask & ~(uint64_t)MR_ALLOC_ATTR_KNOWN)
			return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_mr_alloc_attr.mask",
				      attr->mask & ~(uint64_t)MR_ALLOC_ATTR_KNOWN);
		if (attr->mask & RV_MR_ALLOC_ATTR_PAGE)
			req.page = attr->page;
		if (attr->mask & RV_MR_ALLOC_ATTR_NUMA_NODE)
			req.node = attr->numa_node;
		if (attr->mask & RV_MR_ALLOC_ATTR_FLAGS)
			req.flags = attr->flags;
		rc = rv_mem_req_check(req.page, req.node, req.flags, __func__);
		if (rc < 0)
			return rc;
	}
	rc = rv_mem_map(pd->ctx, length, &req, &mem, __func__);
	if (rc < 0)
		return rc;
	rc = mr_new(pd, mem.addr, mem.length, access, &mem, ret_mr, __func__);
	if (rc < 0) {
		rv_mem_unmap(&mem);
		return rc;
	}
	rv_mem_report_fallback(&mem, __func__);
	return 0;
}

#define RV_REREG_KNOWN (RV_REREG_TRANS | RV_REREG_PD | RV_REREG_ACCESS)

RV_EXPORT int rv_mr_rereg(rv_mr *mr, uint32_t flags, rv_pd *pd, void *addr, size_t length,
			  uint32_t access)
{
	struct rv_context *ctx;
	struct rv_pd *new_pd;
	bool reserved = false;
	int rc = rv_obj_check(RV_COBJ(mr), RV_OBJ_MR, __func__);

	if (rc < 0)
		return rc;
	ctx = mr->pd->ctx;
	if (mr->dmabuf)
		return rv_err(EOPNOTSUPP, __func__, "the MR is a dma-buf (rv_mr_reg_dmabuf), which is not "
			      "re-registered; register a new MR and close this one");
	if (mr->implicit)
		return rv_err(EOPNOTSUPP, __func__, "the MR is an implicit ODP MR (the whole address space), "
			      "which is not re-registered; register a new MR and close this one");
	if (flags & ~(uint32_t)RV_REREG_KNOWN)
		return rv_err(EINVAL, __func__, "unknown bit 0x%x in flags", flags & ~(uint32_t)RV_REREG_KNOWN);
	if (flags == 0)
		return rv_err(EINVAL, __func__, "flags is 0; name what changes: RV_REREG_TRANS, "
			      "RV_REREG_PD, RV_REREG_ACCESS");
	if (flags & RV_REREG_PD) {
		rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);
		if (rc < 0)
			return rc;
		if (pd->ctx != ctx)
			return rv_err(EINVAL, __func__, "the new PD belongs to another context than the MR");
	} else {
		pd = mr->pd;
	}
	if (flags & RV_REREG_TRANS) {
		if (mr->owned)
			return rv_err(EINVAL, __func__, "the MR owns its memory (rv_mr_alloc); RV_REREG_TRANS "
				      "would leak it: register new memory with rv_mr_reg instead");
		if (!addr || length == 0)
			return rv_err(EINVAL, __func__, "RV_REREG_TRANS needs memory: %s",
				      addr ? "length is 0" : "addr is NULL");
		if ((uintptr_t)addr + length < (uintptr_t)addr)
			return rv_err(EINVAL, __func__, "addr + length wraps around the address space");
	} else {
		addr = mr->addr;
		length = mr->length;
	}
	if (flags & RV_REREG_ACCESS) {
		rc = check_access(access, __func__);
		if (rc == 0 && (access & RV_ACCESS_ON_DEMAND))
			rc = check_odp(mr->pd, false, __func__);
		if (rc < 0)
			return rc;
	} else {
		access = mr->access;
	}
	if (!ctx->drv->mr_rereg)
		return rv_err(EOPNOTSUPP, __func__, "device %s cannot re-register an MR; register "
			      "anew with rv_mr_reg and close this one", ctx->dev->name);
	new_pd = pd;
	rv_graph_lock(&mr->obj);
	/* Check again under the lock: a cascade may have closed either meanwhile. */
	if (mr->obj.state != RV_OBJ_LIVE || new_pd->obj.state != RV_OBJ_LIVE) {
		rv_graph_unlock(&mr->obj);
		return rv_err(RV_ECLOSED, __func__, "the %s was closed meanwhile",
			      mr->obj.state != RV_OBJ_LIVE ? "MR" : "new PD");
	}
	/* A window bound to the MR copied its range and rights at bind time; the
	 * IB spec has reregistration fail while windows are bound. rverbs does
	 * not see invalidations complete, so any window tied to the MR counts. */
	for (uint32_t i = 0; i < mr->obj.n_dependents; i++) {
		const struct rv_object *d = mr->obj.dependents[i];

		if (d->cls->type == RV_OBJ_MW && d->state == RV_OBJ_LIVE) {
			rv_graph_unlock(&mr->obj);
			return rv_err(EBUSY, __func__, "a memory window was bound to this MR; close its "
				      "windows first (reregistration fails while windows are bound)");
		}
	}
	if (new_pd != mr->pd && rv_obj_add_dep(&mr->obj, &new_pd->obj) < 0) {
		rv_graph_unlock(&mr->obj);
		return rv_err(ENOMEM, __func__, "out of memory");
	}
	if ((flags & RV_REREG_TRANS) && mr->locked_counted) {
		rc = rv_memlock_reserve(length, __func__);
		if (rc < 0)
			goto fail;
		reserved = true;
	}
	rv_error_clear();
	rc = ctx->drv->mr_rereg(mr, flags, new_pd, addr, length, access);
	rc = rv_err_from_driver(rc, __func__, "re-registering the MR");
	if (rc < 0)
		goto fail;
	if (reserved)
		rv_memlock_unreserve(mr->length);
	if (new_pd != mr->pd) {
		struct rv_pd *old = mr->pd;

		mr->pd = new_pd;
		rv_obj_remove_dep(&mr->obj, &old->obj);
	}
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	rv_graph_unlock(&mr->obj);
	return 0;
fail:
	if (reserved)
		rv_memlock_unreserve(length);
	if (new_pd != mr->pd)
		rv_obj_remove_dep(&mr->obj, &new_pd->obj);
	rv_graph_unlock(&mr->obj);
	return rc;
}

RV_DEFINE_HANDLE_REF_UNREF(mr, RV_OBJ_MR)

RV_DEFINE_HANDLE_CLOSE(mr, RV_OBJ_MR, "deregistering the MR")

RV_EXPORT void *rv_mr_addr(const rv_mr *mr)
{
	if (rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__) < 0)
		return NULL;
	return mr->addr;
}

RV_EXPORT size_t rv_mr_length(const rv_mr *mr)
{
	if (rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__) < 0)
		return 0;
	return mr->length;
}

RV_EXPORT uint32_t rv_mr_lkey(const rv_mr *mr)
{
	if (rv_obj_check(RV_COBJ(mr), RV_OBJ_MR, __func__) < 0)
		return 0;
	return mr->lkey;
}

RV_EXPORT uint32_t rv_mr_rkey(const rv_mr *mr)
{
	if (rv_obj_check(RV_COBJ(mr), RV_OBJ_MR, __func__) < 0)
		return 0;
	return mr->rkey;
}

RV_EXPORT rv_pd *rv_mr_pd(const rv_mr *mr)
{
	if (rv_obj_check(RV_COBJ(mr), RV_OBJ_MR, __func__) < 0)
		return NULL;
	return mr->pd;
}

RV_EXPORT size_t rv_mr_page_size(const rv_mr *mr)
{
	if (rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__) < 0)
		return 0;
	return mr->page_size;
}

RV_EXPORT int rv_mr_numa_node(const rv_mr *mr)
{
	int rc = rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__);

	return rc < 0 ? rc : mr->numa_node;
}
