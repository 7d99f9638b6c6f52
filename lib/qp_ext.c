/*
 * QP options a device may lack: ECE (Enhanced Connection Establishment) and
 * packet pacing. The facade checks the arguments and refuses with
 * -EOPNOTSUPP for a driver without the op; the driver says what its device
 * does. Control path only.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "driver.h"

RV_EXPORT int rv_qp_query_ece(rv_qp *qp, rv_ece *ret_ece)
{
	rv_ece tmp;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!ret_ece)
		return rv_err(EINVAL, __func__, "ret_ece is NULL");
	if (!qp->drv->qp_query_ece)
		return rv_err(EOPNOTSUPP, __func__, "%s has no ECE (Enhanced Connection Establishment)",
			      qp->ctx->dev->name);
	memset(&tmp, 0, sizeof(tmp));
	rv_error_clear();
	rc = qp->drv->qp_query_ece(qp, &tmp);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the QP's ECE options");
	*ret_ece = tmp;
	return 0;
}

RV_EXPORT int rv_qp_set_ece(rv_qp *qp, const rv_ece *ece)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!ece)
		return rv_err(EINVAL, __func__, "ece is NULL");
	if (ece->comp_mask)
		return rv_err(EINVAL, __func__, "rv_ece.comp_mask 0x%x: no bit is defined", ece->comp_mask);
	if (!qp->drv->qp_set_ece)
		return rv_err(EOPNOTSUPP, __func__, "%s has no ECE (Enhanced Connection Establishment)",
			      qp->ctx->dev->name);
	rv_error_clear();
	rc = qp->drv->qp_set_ece(qp, ece);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "setting the QP's ECE options");
	return 0;
}

#define RATE_LIMIT_KNOWN \
	((uint64_t)(RV_QP_RATE_LIMIT_RATE | RV_QP_RATE_LIMIT_MAX_BURST | RV_QP_RATE_LIMIT_PKT_SIZE))

RV_EXPORT int rv_qp_set_rate_limit(rv_qp *qp, const rv_qp_rate_limit_attr *attr)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL");
	if (attr->mask & ~RATE_LIMIT_KNOWN)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_qp_rate_limit_attr.mask",
			      attr->mask & ~RATE_LIMIT_KNOWN);
	if (!(attr->mask & RV_QP_RATE_LIMIT_RATE))
		return rv_err(EINVAL, __func__, "rv_qp_rate_limit_attr.rate_limit is not set "
			      "(RV_QP_RATE_LIMIT_RATE; 0 removes a limit)");
	if (!qp->drv->qp_set_rate_limit)
		return rv_err(EOPNOTSUPP, __func__, "%s does not pace its QPs (rv_device_attr.pp_rate_limit_max "
			      "is 0)", qp->ctx->dev->name);
	rv_error_clear();
	rc = qp->drv->qp_set_rate_limit(qp, attr);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "setting the QP's rate limit");
	return 0;
}
