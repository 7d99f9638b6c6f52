/*
 * Shared receive queues through libibverbs: ibv_create_srq, ibv_modify_srq,
 * ibv_query_srq and ibv_destroy_srq (posting is in datapath.c).
 *
 * Owns: the struct ibv_srq behind each rv_srq (drv_srq). srq_context is the
 * rv_srq, so an IBV_EVENT_SRQ_LIMIT_REACHED names the handle (event.c). A
 * destroy that fails keeps the SRQ, so the close can be retried.
 */
#include <errno.h>
#include <string.h>

#include "ibv-driver.h"
#include "translate.h"

int rv_ibv_srq_create(struct rv_srq *srq, const rv_srq_attr *attr)
{
	struct ibv_srq_init_attr init;
	struct ibv_srq *s;
	char ebuf[128];
	int err;

	if (srq->xrcd)
		return rv_ibv_xrc_srq_create(srq, attr);
	memset(&init, 0, sizeof(init));
	init.srq_context = srq;
	init.attr.max_wr = attr->max_wr;
	init.attr.max_sge = attr->max_sge;
	init.attr.srq_limit = attr->srq_limit;
	errno = 0;
	s = ibv_create_srq(srq->pd->drv_pd, &init);
	if (s) {
		srq->drv_srq = s;
		/* ibv_create_srq() writes back what the SRQ actually got. */
		srq->max_wr = init.attr.max_wr;
		srq->max_sge = init.attr.max_sge;
		return 0;
	}
	err = errno ? errno : ENOMEM;
	rv_err(err, "rv_srq_new", "ibv_create_srq(max_wr %u, max_sge %u, srq_limit %u) on %s failed: %s",
	       attr->max_wr, attr->max_sge, attr->srq_limit, srq->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == ENOMEM)
		rv_ibv_hint_memlock();
	return -err;
}

int rv_ibv_srq_destroy(struct rv_srq *srq)
{
	char ebuf[128];
	int rc = ibv_destroy_srq(srq->drv_srq), err;

	if (rc == 0) {
		srq->drv_srq = NULL;
		return 0;
	}
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_srq_close", "ibv_destroy_srq on %s failed: %s", srq->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	rv_err_hint("the SRQ stays and the close may be retried");
	return -err;
}

int rv_ibv_srq_modify(struct rv_srq *srq, const rv_srq_attr *attr)
{
	struct ibv_srq_attr a;
	char ebuf[128];
	int mask = 0, rc, err;

	memset(&a, 0, sizeof(a));
	if (attr->mask & RV_SRQ_MAX_WR) {
		mask |= IBV_SRQ_MAX_WR;
		a.max_wr = attr->max_wr;
	}
	if (attr->mask & RV_SRQ_LIMIT) {
		mask |= IBV_SRQ_LIMIT;
		a.srq_limit = attr->srq_limit;
	}
	rc = ibv_modify_srq(srq->drv_srq, &a, mask);
	if (rc == 0) {
		if (attr->mask & RV_SRQ_MAX_WR)
			srq->max_wr = attr->max_wr;
		return 0;
	}
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_srq_modify", "ibv_modify_srq on %s failed: %s", srq->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if ((attr->mask & RV_SRQ_MAX_WR) && (err == EINVAL || err == EOPNOTSUPP))
		rv_err_hint("the device may not resize SRQs (IBV_DEVICE_SRQ_RESIZE)");
	return -err;
}

int rv_ibv_srq_query(struct rv_srq *srq, rv_srq_attr *attr)
{
	struct ibv_srq_attr a;
	char ebuf[128];
	int rc, err;

	memset(&a, 0, sizeof(a));
	rc = ibv_query_srq(srq->drv_srq, &a);
	if (rc != 0) {
		err = rv_ibv_errno(rc);
		return rv_err(err, "rv_srq_query", "ibv_query_srq on %s failed: %s", srq->ctx->dev->name,
			      rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}
