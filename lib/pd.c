/*
 * Protection domains.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

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
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_pd)
		return rv_err(EINVAL, __func__, "ret_pd is NULL");
	if (attr && attr->mask)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_pd_attr.mask", attr->mask);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return rv_err(ENOMEM, __func__, "out of memory");
	rv_obj_init(&pd->obj, &pd_class, ctx);
	pd->obj.id = rv_ctx_next_id(ctx);
	pd->ctx = ctx;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_add_dep(&pd->obj, &ctx->obj);
	if (rc == 0) {
		rv_error_clear();
		rc = ctx->drv->pd_alloc(pd);
		rc = rv_err_from_driver(rc, __func__, "allocating the PD");
	} else {
		rc = rv_err(ENOMEM, __func__, "out of memory");
	}
	if (rc < 0)
		rv_obj_abort(&pd->obj);
	rv_graph_unlock(&ctx->obj);
	if (rc == 0)
		*ret_pd = pd;
	return rc;
}

RV_DEFINE_HANDLE_REF_UNREF(pd, RV_OBJ_PD)

RV_DEFINE_HANDLE_CLOSE(pd, RV_OBJ_PD, "destroying the PD or one of its resources")

RV_EXPORT rv_context *rv_pd_context(const rv_pd *pd)
{
	if (rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__) < 0)
		return NULL;
	return pd->ctx;
}
