/*
 * rv_soft_fault_inject: the public entry to the software device's fault
 * injection (rverbs/soft.h). Checks the handles and the arguments here, then
 * hands over to the driver's fault_inject operation, which only soft0 has.
 */
#include <errno.h>
#include <inttypes.h>

#include "driver.h"
#include "rverbs/soft.h"

#define FAULT_COUNT_MAX 1000000u
#define FAULT_DELAY_MAX_MS 60000u

RV_EXPORT int rv_soft_fault_inject(rv_context *ctx, rv_qp *qp, rv_soft_fault_kind kind, uint32_t count,
				   uint32_t delay_ms)
{
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (qp) {
		rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);
		if (rc < 0)
			return rc;
		if (qp->ctx != ctx)
			return rv_err(EINVAL, __func__, "QP 0x%x belongs to another context; pass its own "
				      "context, or NULL for every QP of this one", qp->qpn);
	}
	if (!ctx->drv->fault_inject)
		return rv_err(EOPNOTSUPP, __func__, "fault injection exists only on the software device "
			      "(soft0); this context is on device \"%s\" (driver \"%s\")",
			      ctx->dev->name, ctx->drv->name);
	switch (kind) {
	case RV_SOFT_FAULT_CLEAR:
		break;
	case RV_SOFT_FAULT_DROP:
	case RV_SOFT_FAULT_CORRUPT:
	case RV_SOFT_FAULT_RESET:
	case RV_SOFT_FAULT_DELAY:
		if (count < 1 || count > FAULT_COUNT_MAX)
			return rv_err(EINVAL, __func__, "count %" PRIu32 " is out of range: a fault "
				      "affects 1 to %u frames", count, FAULT_COUNT_MAX);
		break;
	default:
		return rv_err(EINVAL, __func__, "unknown fault kind %d; use an RV_SOFT_FAULT_* value",
			      (int)kind);
	}
	if (kind == RV_SOFT_FAULT_DELAY && (delay_ms < 1 || delay_ms > FAULT_DELAY_MAX_MS))
		return rv_err(EINVAL, __func__, "delay_ms %" PRIu32 " is out of range: 1 to %u ms",
			      delay_ms, FAULT_DELAY_MAX_MS);
	if (kind != RV_SOFT_FAULT_DELAY && delay_ms)
		return rv_err(EINVAL, __func__, "delay_ms is for RV_SOFT_FAULT_DELAY only; pass 0");
	return ctx->drv->fault_inject(ctx, qp, (uint32_t)kind, count, delay_ms);
}
