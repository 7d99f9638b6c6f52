/*
 * Protection domains.
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

RV_EXPORT int rv_pd_new(rv_context *ctx, const rv_pd_attr *attr, rv_pd **ret_pd)
{
	struct rv_pd *pd;
	int rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_pd, "ret_pd", attr ? attr->mask : 0, 0,
				  "rv_pd_attr", __func__);

	if (rc < 0)
		return rc;
	pd = rv_obj_new(sizeof(*pd), &pd_class, ctx, __func__);
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_depend(&pd->obj, &ctx->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->pd_alloc(pd), __func__, "allocating the PD");
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
