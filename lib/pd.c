/*
 * Protection domains and parent domains. A parent domain is an rv_pd with a
 * parent (an ordinary PD of the same context), optionally a thread domain and
 * allocators: it depends on both, so closing either closes it (and everything
 * in it) first, and it is usable wherever a PD is, with no change to the
 * families that take one.
 */
#include <errno.h>

#include "driver.h"

static int pd_destroy(struct rv_object *obj)
{
	struct rv_pd *pd = (struct rv_pd *)obj;
	return pd->ctx->drv->pd_dealloc(pd);
}

static const struct rv_object_class pd_class = {
	.type = RV_OBJ_PD,
	.name = "PD",
	.destroy = pd_destroy,
};

#define PD_ATTR_KNOWN ((uint64_t)(RV_PD_ATTR_PARENT | RV_PD_ATTR_TD | RV_PD_ATTR_ALLOCATORS))

/* The parent domain's own checks: everything but the context's. */
static int parent_domain_check(rv_context *ctx, const rv_pd_attr *attr, const char *func)
{
	int rc;

	if (!(attr->mask & RV_PD_ATTR_PARENT)) {
		if (attr->mask & (RV_PD_ATTR_TD | RV_PD_ATTR_ALLOCATORS))
			return rv_err(EINVAL, func, "rv_pd_attr.td and the allocators are for a parent domain: "
				      "set RV_PD_ATTR_PARENT and a parent PD too");
		return 0;
	}
	rc = rv_obj_check(RV_COBJ(attr->parent), RV_OBJ_PD, func);
	if (rc < 0)
		return rc;
	if (attr->parent->ctx != ctx)
		return rv_err(EINVAL, func, "rv_pd_attr.parent belongs to another context");
	if (attr->parent->parent)
		return rv_err(EINVAL, func, "rv_pd_attr.parent is itself a parent domain; give its parent PD "
			      "(as ibv_alloc_parent_domain, a parent domain's parent is an ordinary PD)");
	if (attr->mask & RV_PD_ATTR_TD) {
		rc = rv_obj_check(RV_COBJ(attr->td), RV_OBJ_TD, func);
		if (rc < 0)
			return rc;
		if (attr->td->ctx != ctx)
			return rv_err(EINVAL, func, "rv_pd_attr.td belongs to another context");
	}
	if ((attr->mask & RV_PD_ATTR_ALLOCATORS) && (!attr->alloc || !attr->free))
		return rv_err(EINVAL, func, "rv_pd_attr.alloc and .free must both be set with "
			      "RV_PD_ATTR_ALLOCATORS (an allocator returns RV_PD_ALLOCATOR_USE_DEFAULT "
			      "to leave a buffer to the device)");
	return 0;
}

RV_EXPORT int rv_pd_new(rv_context *ctx, const rv_pd_attr *attr, rv_pd **ret_pd)
{
	struct rv_pd *pd;
	uint64_t mask = attr ? attr->mask : 0;
	int rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_pd, "ret_pd", mask, PD_ATTR_KNOWN,
				  "rv_pd_attr", __func__);

	if (rc < 0)
		return rc;
	if (mask) {
		rc = parent_domain_check(ctx, attr, __func__);
		if (rc < 0)
			return rc;
	}
	pd = rv_obj_new(sizeof(*pd), &pd_class, ctx, __func__);
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	if (mask & RV_PD_ATTR_PARENT)
		pd->parent = attr->parent;
	if (mask & RV_PD_ATTR_TD)
		pd->td = attr->td;
	if (mask & RV_PD_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
		pd->pd_context = attr->pd_context;
	}
	rv_graph_lock(&ctx->obj);
	if (pd->parent)
		rc = rv_obj_depend(&pd->obj, &pd->parent->obj, __func__);
	else
		rc = rv_obj_depend(&pd->obj, &ctx->obj, __func__);
	if (rc == 0 && pd->td)
		rc = rv_obj_depend(&pd->obj, &pd->td->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->pd_alloc(pd), __func__,
				    pd->parent ? "allocating the parent domain" : "allocating the PD");
	return RV_OBJ_NEW_END(pd, &ctx->obj, rc, ret_pd);
}

RV_DEFINE_HANDLE_REF_UNREF(pd, RV_OBJ_PD)

RV_DEFINE_HANDLE_CLOSE(pd, RV_OBJ_PD, "destroying the PD or one of its resources")

RV_EXPORT rv_context *rv_pd_context(const rv_pd *pd)
{
	if (rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__) < 0)
		return NULL;
	return pd->ctx;
}

RV_EXPORT rv_pd *rv_pd_parent(const rv_pd *pd)
{
	if (rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__) < 0)
		return NULL;
	return pd->parent;
}
