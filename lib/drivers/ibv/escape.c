/*
 * The escape hatch (rverbs/ibv.h): the raw libibverbs object behind a handle.
 *
 * Owns: nothing. Each call validates its handle and returns the object only
 * for a live handle on a libibverbs device; NULL for a software-device handle,
 * a closed handle or anything that is not a handle of the right type. The
 * caller must never destroy what it gets.
 */
#include <rverbs/ibv.h>

#include "ibv-driver.h"

/* RV_COBJ hands a NULL or foreign pointer to rv_obj_check() as is, without a
 * member access through it. */
static bool on_verbs(const struct rv_context *ctx)
{
	return ctx && ctx->dev && ctx->dev->kind == RV_DEVICE_VERBS;
}

RV_EXPORT struct ibv_context *rv_context_ibv(rv_context *ctx)
{
	if (rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, "rv_context_ibv") != 0 || !on_verbs(ctx))
		return NULL;
	return ctx->drv_ctx;
}

RV_EXPORT struct ibv_pd *rv_pd_ibv(rv_pd *pd)
{
	if (rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, "rv_pd_ibv") != 0 || !on_verbs(pd->ctx))
		return NULL;
	return pd->drv_pd;
}

RV_EXPORT struct ibv_mr *rv_mr_ibv(rv_mr *mr)
{
	if (rv_obj_check(RV_COBJ(mr), RV_OBJ_MR, "rv_mr_ibv") != 0 || !mr->pd ||
	    !on_verbs(mr->pd->ctx))
		return NULL;
	return mr->drv_mr;
}

RV_EXPORT struct ibv_cq *rv_cq_ibv(rv_cq *cq)
{
	if (rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, "rv_cq_ibv") != 0 || !on_verbs(cq->ctx))
		return NULL;
	return cq->drv_cq;
}

RV_EXPORT struct ibv_qp *rv_qp_ibv(rv_qp *qp)
{
	if (rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, "rv_qp_ibv") != 0 || !on_verbs(qp->ctx))
		return NULL;
	return qp->drv_qp;
}

/* The driver's raw op: the same answers for an object the facade already
 * validated. */
void *rv_ibv_raw(struct rv_object *obj)
{
	switch (obj->cls->type) {
	case RV_OBJ_CONTEXT:
		return rv_context_ibv((rv_context *)(void *)obj);
	case RV_OBJ_PD:
		return rv_pd_ibv((rv_pd *)(void *)obj);
	case RV_OBJ_MR:
		return rv_mr_ibv((rv_mr *)(void *)obj);
	case RV_OBJ_CQ:
		return rv_cq_ibv((rv_cq *)(void *)obj);
	case RV_OBJ_QP:
		return rv_qp_ibv((rv_qp *)(void *)obj);
	default:
		return NULL;
	}
}
