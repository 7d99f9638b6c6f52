/*
 * Memory regions: registration of caller memory and of memory rverbs
 * allocates (page-aligned, zeroed, owned by the MR until its last unref).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "driver.h"

#define RV_ACCESS_KNOWN (RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ | \
			 RV_ACCESS_REMOTE_ATOMIC | RV_ACCESS_MW_BIND | RV_ACCESS_ZERO_BASED |     \
			 RV_ACCESS_ON_DEMAND | RV_ACCESS_HUGETLB | RV_ACCESS_RELAXED_ORDERING)

static int mr_destroy(struct rv_object *obj)
{
	struct rv_mr *mr = (struct rv_mr *)obj;
	return mr->pd->ctx->drv->mr_dereg(mr);
}

static void mr_release(struct rv_object *obj)
{
	struct rv_mr *mr = (struct rv_mr *)obj;
	if (mr->owned)
		munmap(mr->owned, mr->owned_length);
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

static void explain_enomem(const char *func, size_t length)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rv_err(ENOMEM, func, "registering %zu bytes failed: the locked-memory limit is %llu bytes",
		       length, (unsigned long long)rl.rlim_cur);
		rv_err_hint("raise it with `ulimit -l unlimited` or a memlock line in /etc/security/limits.conf");
	}
}

/* Register [addr, addr+length) on pd; owned memory (if any) becomes the MR's. */
static int mr_new(rv_pd *pd, void *addr, size_t length, uint32_t access, void *owned, rv_mr **ret_mr,
		  const char *func)
{
	struct rv_mr *mr;
	int rc;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return rv_err(ENOMEM, func, "out of memory");
	rv_obj_init(&mr->obj, &mr_class, pd->ctx);
	mr->obj.id = rv_ctx_next_id(pd->ctx);
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->owned = owned;
	mr->owned_length = owned ? length : 0;
	rv_graph_lock(&pd->obj);
	rc = rv_obj_add_dep(&mr->obj, &pd->obj);
	if (rc == 0) {
		rv_error_clear();
		rc = pd->ctx->drv->mr_reg(mr);
		if (rc == -ENOMEM && !rv_err_is_set())
			explain_enomem(func, length);
		rc = rv_err_from_driver(rc, func, "registering the memory");
	} else {
		rc = rv_err(ENOMEM, func, "out of memory");
	}
	if (rc < 0) {
		mr->owned = NULL; /* the caller frees it on failure */
		rv_obj_abort(&mr->obj);
	}
	rv_graph_unlock(&pd->obj);
	if (rc == 0)
		*ret_mr = mr;
	return rc;
}

RV_EXPORT int rv_mr_reg(rv_pd *pd, void *addr, size_t length, uint32_t access, rv_mr **ret_mr)
{
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (!addr || !ret_mr)
		return rv_err(EINVAL, __func__, "%s is NULL", addr ? "ret_mr" : "addr");
	if (length == 0)
		return rv_err(EINVAL, __func__, "length is 0");
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return rv_err(EINVAL, __func__, "addr + length wraps around the address space");
	rc = check_access(access, __func__);
	if (rc < 0)
		return rc;
	return mr_new(pd, addr, length, access, NULL, ret_mr, __func__);
}

RV_EXPORT int rv_mr_alloc(rv_pd *pd, size_t length, uint32_t access, rv_mr **ret_mr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len;
	void *mem;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (!ret_mr)
		return rv_err(EINVAL, __func__, "ret_mr is NULL");
	if (length == 0 || length > SIZE_MAX - page)
		return rv_err(EINVAL, __func__, "length %zu is 0 or too large", length);
	rc = check_access(access, __func__);
	if (rc < 0)
		return rc;
	len = (length + page - 1) & ~(page - 1);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return rv_err(ENOMEM, __func__, "allocating %zu bytes failed", len);
	rc = mr_new(pd, mem, len, access, mem, ret_mr, __func__);
	if (rc < 0)
		munmap(mem, len);
	return rc;
}

RV_EXPORT rv_mr *rv_mr_ref(rv_mr *mr)
{
	if (mr && rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__) == 0)
		rv_obj_ref(&mr->obj);
	return mr;
}

RV_EXPORT rv_mr *rv_mr_unref(rv_mr *mr)
{
	if (mr && rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__) == 0)
		rv_obj_unref(&mr->obj);
	return NULL;
}

RV_EXPORT int rv_mr_close(rv_mr *mr)
{
	int rc = rv_obj_check_any(RV_COBJ(mr), RV_OBJ_MR, __func__);
	if (rc < 0)
		return rc;
	rv_error_clear();
	rc = rv_obj_close(&mr->obj, "closed by rv_mr_close");
	return rv_err_from_driver(rc, __func__, "deregistering the MR");
}

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
