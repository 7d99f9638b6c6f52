/*
 * rv_qp_attach_mcast / rv_qp_detach_mcast: a UD QP joins or leaves a
 * multicast group. Checks here what every device agrees on (a live UD QP, a
 * multicast GID, as the kernel's ib_attach_mcast does), then asks the
 * driver's mcast_attach / mcast_detach; a driver without them has no
 * multicast. Control path only.
 */
#include <errno.h>
#include <string.h>

#include "driver.h"
#include "rverbs-private.h"

/* ff00::/8, or IPv4-mapped 224.0.0.0/4 (rdma_is_multicast_addr). */
static bool gid_is_mcast(const uint8_t g[16])
{
	static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return g[0] == 0xff || (memcmp(g, v4, 12) == 0 && (g[12] & 0xf0) == 0xe0);
}

static int mcast_check(rv_qp *qp, const uint8_t *gid, const char *fn)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, fn);

	if (rc < 0)
		return rc;
	if (!gid)
		return rv_err(EINVAL, fn, "gid is NULL; pass the group's 16-byte GID");
	if (qp->qp_type != RV_QPT_UD)
		return rv_err(EINVAL, fn, "QP 0x%x is of type %u, not UD (%u); only UD QPs join multicast groups",
			      qp->qpn, qp->qp_type, (unsigned)RV_QPT_UD);
	if (!gid_is_mcast(gid))
		return rv_err(EINVAL, fn, "the GID is not a multicast GID: it must begin with 0xff (ff00::/8), "
			      "or be an IPv4-mapped multicast address (::ffff:224.0.0.0 to ::ffff:239.255.255.255)");
	if (!qp->drv->mcast_attach)
		return rv_err(EOPNOTSUPP, fn, "device \"%s\" has no multicast (max_mcast_grp 0)", qp->ctx->dev->name);
	return 0;
}

RV_EXPORT int rv_qp_attach_mcast(rv_qp *qp, const uint8_t gid[16], uint16_t lid)
{
	int rc = mcast_check(qp, gid, __func__);

	if (rc < 0)
		return rc;
	rv_error_clear();
	rc = qp->drv->mcast_attach(qp, gid, lid);
	return rc < 0 ? rv_err_from_driver(rc, __func__, "attaching the QP to the group") : 0;
}

RV_EXPORT int rv_qp_detach_mcast(rv_qp *qp, const uint8_t gid[16], uint16_t lid)
{
	int rc = mcast_check(qp, gid, __func__);

	if (rc < 0)
		return rc;
	rv_error_clear();
	rc = qp->drv->mcast_detach(qp, gid, lid);
	return rc < 0 ? rv_err_from_driver(rc, __func__, "detaching the QP from the group") : 0;
}
