/*
 * rv_soft_qp_path: the public query of which path a software device QP's
 * traffic takes (rverbs/soft.h). Checks the handle and the output here, then
 * asks the driver's qp_path operation, which only soft0 has. Read-only.
 */
#include <errno.h>

#include "driver.h"
#include "rverbs/soft.h"

RV_EXPORT int rv_soft_qp_path(rv_qp *qp, rv_soft_path *path)
{
	uint32_t p = RV_SOFT_PATH_NONE;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!path)
		return rv_err(EINVAL, __func__, "path is NULL; pass the address of an rv_soft_path");
	if (!qp->drv->qp_path)
		return rv_err(EOPNOTSUPP, __func__, "QP 0x%x is on device \"%s\" (driver \"%s\"); the path "
			      "query exists only on the software device (soft0)",
			      qp->qpn, qp->ctx->dev->name, qp->drv->name);
	rv_error_clear();
	rc = qp->drv->qp_path(qp, &p);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the QP's path");
	*path = (rv_soft_path)p;
	return 0;
}
