/*
 * XRC domains (rverbs/xrcd.h). A domain depends on its context; XRC SRQs
 * (lib/srq.c) and XRC target QPs (lib/qp.c) depend on it, so closing it
 * closes them first, and closing the context closes it.
 */
#include <errno.h>

#include "driver.h"

static int xrcd_destroy(struct rv_object *obj)
{
	struct rv_xrcd *xrcd = (struct rv_xrcd *)obj;
	return xrcd->ctx->drv->xrcd_close(xrcd);
}

static const struct rv_object_class xrcd_class = {
	.type = RV_OBJ_XRCD,
	.name = "XRC domain",
	.destroy = xrcd_destroy,
};

RV_EXPORT int rv_xrcd_new(rv_context *ctx, const rv_xrcd_attr *attr, rv_xrcd **ret_xrcd)
{
	struct rv_xrcd *xrcd;
	int rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_xrcd, "ret_xrcd", attr ? attr->mask : 0, 0,
				  "rv_xrcd_attr", __func__);

	if (rc < 0)
		return rc;
	if (!ctx->drv->xrcd_open)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no XRC (the %s driver offers no XRC "
			      "domains); use RC QPs", ctx->dev->name, ctx->drv->name);
	xrcd = rv_obj_new(sizeof(*xrcd), &xrcd_class, ctx, __func__);
	if (!xrcd)
		return -ENOMEM;
	xrcd->ctx = ctx;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_depend(&xrcd->obj, &ctx->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->xrcd_open(xrcd), __func__, "opening the XRC domain");
	return RV_OBJ_NEW_END(xrcd, &ctx->obj, rc, ret_xrcd);
}

RV_DEFINE_HANDLE_REF_UNREF(xrcd, RV_OBJ_XRCD)

RV_DEFINE_HANDLE_CLOSE(xrcd, RV_OBJ_XRCD, "closing the XRC domain or one of its SRQs or target QPs")

RV_EXPORT rv_context *rv_xrcd_context(const rv_xrcd *xrcd)
{
	if (rv_obj_check(RV_COBJ(xrcd), RV_OBJ_XRCD, __func__) < 0)
		return NULL;
	return xrcd->ctx;
}
