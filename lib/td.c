/*
 * Thread domains: a handle the caller binds to parent domains (lib/pd.c) to
 * promise single-threaded use of what is created in them. The facade keeps
 * the ownership (a TD depends on its context; parent domains depend on it)
 * and leaves the meaning to the driver.
 */
#include <errno.h>

#include "driver.h"

static int td_destroy(struct rv_object *obj)
{
	struct rv_td *td = (struct rv_td *)obj;
	return td->ctx->drv->td_dealloc(td);
}

static const struct rv_object_class td_class = {
	.type = RV_OBJ_TD,
	.name = "TD",
	.destroy = td_destroy,
};

RV_EXPORT int rv_td_new(rv_context *ctx, const rv_td_attr *attr, rv_td **ret_td)
{
	struct rv_td *td;
	int rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_td, "ret_td", attr ? attr->mask : 0, 0,
				  "rv_td_attr", __func__);

	if (rc < 0)
		return rc;
	if (!ctx->drv->td_alloc)
		return rv_err(EOPNOTSUPP, __func__, "%s has no thread domains", ctx->dev->name);
	td = rv_obj_new(sizeof(*td), &td_class, ctx, __func__);
	if (!td)
		return -ENOMEM;
	td->ctx = ctx;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_depend(&td->obj, &ctx->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->td_alloc(td), __func__, "allocating the TD");
	return RV_OBJ_NEW_END(td, &ctx->obj, rc, ret_td);
}

RV_DEFINE_HANDLE_REF_UNREF(td, RV_OBJ_TD)

RV_DEFINE_HANDLE_CLOSE(td, RV_OBJ_TD, "destroying the TD or a parent domain bound to it")

RV_EXPORT rv_context *rv_td_context(const rv_td *td)
{
	if (rv_obj_check(RV_COBJ(td), RV_OBJ_TD, __func__) < 0)
		return NULL;
	return td->ctx;
}
