/*
 * Shared receive queues: creation against the device caps, the limit, and
 * posting. The SRQ depends on its PD; QPs created with it depend on it
 * (lib/qp.c adds that edge), so closing an SRQ closes its QPs first.
 *
 * rv_srq_post_recv is data path: one inline load of the handle state, then
 * the driver; no lock, no atomic here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static int srq_destroy(struct rv_object *obj)
{
	struct rv_srq *srq = (struct rv_srq *)obj;
	return srq->ctx->drv->srq_destroy(srq);
}

static const struct rv_object_class srq_class = {
	.type = RV_OBJ_SRQ,
	.name = "SRQ",
	.destroy = srq_destroy,
};

#define SRQ_INIT_KNOWN (RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE | RV_SRQ_INIT_ATTR_LIMIT | \
			RV_SRQ_INIT_ATTR_XRC)

/* An XRC SRQ: a live domain and CQ of the PD's context, on a device with XRC. */
static int xrc_defaults(struct rv_pd *pd, const rv_srq_attr *attr, rv_srq_attr *a, const char *func)
{
	int rc;

	if (!pd->ctx->drv->xrcd_open)
		return rv_err(EOPNOTSUPP, func, "device %s has no XRC; create a plain SRQ", pd->ctx->dev->name);
	if (!attr->xrcd || !attr->cq)
		return rv_err(EINVAL, func, "RV_SRQ_INIT_ATTR_XRC needs both xrcd and cq; %s is NULL",
			      attr->xrcd ? "cq" : "xrcd");
	rc = rv_obj_check(RV_COBJ(attr->xrcd), RV_OBJ_XRCD, func);
	if (rc == 0)
		rc = rv_obj_check(RV_COBJ(attr->cq), RV_OBJ_CQ, func);
	if (rc < 0)
		return rc;
	if (attr->xrcd->ctx != pd->ctx || attr->cq->ctx != pd->ctx)
		return rv_err(EINVAL, func, "the XRC domain, the CQ and the PD must belong to one context");
	a->xrcd = attr->xrcd;
	a->cq = attr->cq;
	return 0;
}

static int srq_defaults(struct rv_pd *pd, const rv_srq_attr *attr, rv_srq_attr *a, const char *func)
{
	rv_device_attr dev = {0};
	int rc;

	if (attr && (attr->mask & ~(uint64_t)SRQ_INIT_KNOWN))
		return rv_err(EINVAL, func, "unknown bit 0x%" PRIx64 " in rv_srq_attr.mask",
			      attr->mask & ~(uint64_t)SRQ_INIT_KNOWN);
	memset(a, 0, sizeof(*a));
	a->mask = attr ? attr->mask : 0;
	a->max_wr = attr && (attr->mask & RV_SRQ_INIT_ATTR_MAX_WR) ? attr->max_wr : 128;
	a->max_sge = attr && (attr->mask & RV_SRQ_INIT_ATTR_MAX_SGE) ? attr->max_sge : 1;
	a->srq_limit = attr && (attr->mask & RV_SRQ_INIT_ATTR_LIMIT) ? attr->srq_limit : 0;
	if (a->max_wr == 0 || a->max_sge == 0)
		return rv_err(EINVAL, func, "max_wr %u / max_sge %u: both must be at least 1", a->max_wr,
			      a->max_sge);
	if (!pd->ctx->drv->srq_create)
		return rv_err(EOPNOTSUPP, func, "the %s driver has no shared receive queues",
			      pd->ctx->drv->name);
	rv_error_clear();
	rc = pd->ctx->drv->query_device(pd->ctx, &dev);
	if (rc < 0)
		return rv_err_from_driver(rc, func, "querying the device's SRQ limits");
	if (dev.max_srq == 0)
		return rv_err(EOPNOTSUPP, func, "device %s has no shared receive queues (max_srq is 0); "
			      "post receives on each QP instead", pd->ctx->dev->name);
	if (a->max_wr > dev.max_srq_wr || a->max_sge > dev.max_srq_sge)
		return rv_err(EINVAL, func, "max_wr %u / max_sge %u exceed device %s's max_srq_wr %u / "
			      "max_srq_sge %u", a->max_wr, a->max_sge, pd->ctx->dev->name, dev.max_srq_wr,
			      dev.max_srq_sge);
	if (a->srq_limit >= a->max_wr)
		return rv_err(EINVAL, func, "srq_limit %u must be below max_wr %u", a->srq_limit, a->max_wr);
	if (a->mask & RV_SRQ_INIT_ATTR_XRC)
		return xrc_defaults(pd, attr, a, func);
	return 0;
}

RV_EXPORT int rv_srq_new(rv_pd *pd, const rv_srq_attr *attr, rv_srq **ret_srq)
{
	rv_srq_attr a;
	struct rv_srq *srq;
	int rc = rv_obj_new_check(RV_COBJ(pd), RV_OBJ_PD, ret_srq, "ret_srq", 0, 0, NULL, __func__);

	if (rc < 0)
		return rc;
	srq = rv_obj_new(sizeof(*srq), &srq_class, pd->ctx, __func__);
	if (!srq)
		return -ENOMEM;
	srq->ctx = pd->ctx;
	srq->pd = pd;

	rv_graph_lock(&pd->obj);
	rc = srq_defaults(pd, attr, &a, __func__); /* asks the device: under the lock */
	if (rc == 0)
		rc = rv_obj_depend(&srq->obj, &pd->obj, __func__);
	if (rc == 0 && a.xrcd) {
		srq->xrcd = a.xrcd;
		srq->cq = a.cq;
		rc = rv_obj_depend(&srq->obj, &a.xrcd->obj, __func__);
		if (rc == 0)
			rc = rv_obj_depend(&srq->obj, &a.cq->obj, __func__);
	}
	if (rc == 0)
		rc = RV_DRIVER_CALL(pd->ctx->drv->srq_create(srq, &a), __func__, "creating the SRQ");
	return RV_OBJ_NEW_END(srq, &pd->obj, rc, ret_srq);
}

RV_DEFINE_HANDLE_REF_UNREF(srq, RV_OBJ_SRQ)

RV_DEFINE_HANDLE_CLOSE(srq, RV_OBJ_SRQ, "destroying the SRQ or one of its QPs")

RV_EXPORT int rv_srq_post_recv(rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	size_t posted = 0;
	int rc;

	if (RV_UNLIKELY(!srq || srq->obj.magic != rv_obj_magic(RV_OBJ_SRQ) || srq->obj.state != RV_OBJ_LIVE)) {
		if (n_posted)
			*n_posted = 0;
		return rv_obj_check(RV_COBJ(srq), RV_OBJ_SRQ, __func__);
	}
	if (RV_UNLIKELY(!wrs || n == 0)) {
		if (n_posted)
			*n_posted = 0;
		return rv_err(EINVAL, __func__, wrs ? "n is 0" : "wrs is NULL");
	}
	rc = srq->ctx->drv->post_srq_recv(srq, wrs, n, &posted);
	if (n_posted)
		*n_posted = posted;
	return rc;
}

RV_EXPORT int rv_srq_modify(rv_srq *srq, const rv_srq_attr *attr)
{
	const uint64_t known = RV_SRQ_MAX_WR | RV_SRQ_LIMIT;
	int rc = rv_obj_check(RV_COBJ(srq), RV_OBJ_SRQ, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL");
	if (attr->mask & ~known)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_srq_attr.mask",
			      attr->mask & ~known);
	if (!attr->mask)
		return rv_err(EINVAL, __func__, "attr->mask is 0: set RV_SRQ_LIMIT (arm the limit) "
			      "or RV_SRQ_MAX_WR (resize)");
	if ((attr->mask & RV_SRQ_MAX_WR) && attr->max_wr == 0)
		return rv_err(EINVAL, __func__, "max_wr is 0");
	if ((attr->mask & RV_SRQ_LIMIT) &&
	    attr->srq_limit >= ((attr->mask & RV_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr))
		return rv_err(EINVAL, __func__, "srq_limit %u must be below the SRQ's max_wr %u",
			      attr->srq_limit, (attr->mask & RV_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr);
	rv_graph_lock(&srq->obj);
	rv_error_clear();
	rc = srq->ctx->drv->srq_modify(srq, attr);
	rc = rv_err_from_driver(rc, __func__, "modifying the SRQ");
	rv_graph_unlock(&srq->obj);
	return rc;
}

RV_EXPORT int rv_srq_query(rv_srq *srq, rv_srq_attr *ret_attr)
{
	rv_srq_attr a;
	int rc = rv_obj_check(RV_COBJ(srq), RV_OBJ_SRQ, __func__);

	if (rc < 0)
		return rc;
	if (!ret_attr)
		return rv_err(EINVAL, __func__, "ret_attr is NULL");
	memset(&a, 0, sizeof(a));
	rv_error_clear();
	rc = srq->ctx->drv->srq_query(srq, &a);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the SRQ");
	a.mask = 0;
	*ret_attr = a;
	return 0;
}

RV_EXPORT int rv_srq_num(const rv_srq *srq, uint32_t *ret_srqn)
{
	int rc = rv_obj_check(RV_COBJ(srq), RV_OBJ_SRQ, __func__);

	if (rc < 0)
		return rc;
	if (!ret_srqn)
		return rv_err(EINVAL, __func__, "ret_srqn is NULL");
	if (!srq->xrcd)
		return rv_err(EINVAL, __func__, "SRQ #%" PRIu64 " is not an XRC SRQ; only XRC SRQs have a "
			      "number (create it with RV_SRQ_INIT_ATTR_XRC)", srq->obj.id);
	*ret_srqn = srq->srqn;
	return 0;
}

RV_EXPORT rv_pd *rv_srq_pd(const rv_srq *srq)
{
	if (rv_obj_check(RV_COBJ(srq), RV_OBJ_SRQ, __func__) < 0)
		return NULL;
	return srq->pd;
}
