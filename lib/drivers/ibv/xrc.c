/*
 * XRC through libibverbs: ibv_open_xrcd / ibv_close_xrcd, XRC SRQs
 * (ibv_create_srq_ex with IBV_SRQT_XRC, ibv_get_srq_num) and XRC QPs
 * (ibv_create_qp_ex with IBV_QPT_XRC_SEND / IBV_QPT_XRC_RECV). Posting to
 * an XRC initiator is datapath.c's (remote_srqn: translate.c).
 *
 * Owns: the struct ibv_xrcd behind each rv_xrcd (drv_xrcd). A device
 * without IBV_DEVICE_XRC is refused here, before libibverbs, with
 * -EOPNOTSUPP (a provider without XRC answers ENOSYS or EOPNOTSUPP, and
 * rxe has none).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ibv-driver.h"
#include "translate.h"

static int require_xrc(struct rv_context *ctx, const char *func)
{
	struct ibv_device_attr a;

	if (ibv_query_device(rv_ibv_ctx(ctx), &a) == 0 && !(a.device_cap_flags & IBV_DEVICE_XRC))
		return rv_err(EOPNOTSUPP, func, "device %s has no XRC (device_cap_flags without "
			      "IBV_DEVICE_XRC); use RC QPs", ctx->dev->name);
	return 0;
}

int rv_ibv_xrcd_open(struct rv_xrcd *xrcd)
{
	struct ibv_xrcd_init_attr init;
	struct ibv_xrcd *x;
	char ebuf[128];
	int err = require_xrc(xrcd->ctx, "rv_xrcd_new");

	if (err < 0)
		return err;
	memset(&init, 0, sizeof(init));
	init.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	init.fd = -1; /* a domain of this process alone */
	init.oflags = O_CREAT;
	errno = 0;
	x = ibv_open_xrcd(rv_ibv_ctx(xrcd->ctx), &init);
	if (x) {
		xrcd->drv_xrcd = x;
		return 0;
	}
	err = errno ? errno : ENOMEM;
	return rv_err(err, "rv_xrcd_new", "ibv_open_xrcd on %s failed: %s", xrcd->ctx->dev->name,
		       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
}

int rv_ibv_xrcd_close(struct rv_xrcd *xrcd)
{
	char ebuf[128];
	int rc = ibv_close_xrcd(xrcd->drv_xrcd), err;

	if (rc == 0) {
		xrcd->drv_xrcd = NULL;
		return 0;
	}
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_xrcd_close", "ibv_close_xrcd on %s failed: %s", xrcd->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	rv_err_hint("the XRC domain stays and the close may be retried");
	return -err;
}

int rv_ibv_xrc_srq_create(struct rv_srq *srq, const rv_srq_attr *attr)
{
	struct ibv_srq_init_attr_ex init;
	struct ibv_srq *s;
	uint32_t num = 0;
	char ebuf[128];
	int err;

	err = require_xrc(srq->ctx, "rv_srq_new");
	if (err < 0)
		return err;
	memset(&init, 0, sizeof(init));
	init.srq_context = srq;
	init.attr.max_wr = attr->max_wr;
	init.attr.max_sge = attr->max_sge;
	init.attr.srq_limit = attr->srq_limit;
	init.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			 IBV_SRQ_INIT_ATTR_CQ;
	init.srq_type = IBV_SRQT_XRC;
	init.pd = srq->pd->drv_pd;
	init.xrcd = srq->xrcd->drv_xrcd;
	init.cq = srq->cq->drv_cq;
	errno = 0;
	s = ibv_create_srq_ex(rv_ibv_ctx(srq->ctx), &init);
	if (!s) {
		err = errno ? errno : ENOMEM;
		rv_err(err, "rv_srq_new", "ibv_create_srq_ex(XRC, max_wr %u, max_sge %u) on %s failed: %s",
		       attr->max_wr, attr->max_sge, srq->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
		if (err == ENOMEM)
			rv_ibv_hint_memlock();
		return -err;
	}
	err = ibv_get_srq_num(s, &num);
	if (err) {
		err = rv_ibv_errno(err);
		ibv_destroy_srq(s);
		return rv_err(err, "rv_srq_new", "ibv_get_srq_num on %s failed: %s", srq->ctx->dev->name,
			       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	srq->drv_srq = s;
	srq->srqn = num;
	srq->max_wr = init.attr.max_wr;
	srq->max_sge = init.attr.max_sge;
	return 0;
}

int rv_ibv_xrc_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex init;
	struct ibv_qp *q;
	char ebuf[128];
	int err = require_xrc(qp->ctx, "rv_qp_new");

	if (err < 0)
		return err;
	memset(&init, 0, sizeof(init));
	init.qp_context = qp;
	init.qp_type = (enum ibv_qp_type)attr->qp_type;
	init.sq_sig_all = attr->sq_sig_all ? 1 : 0;
	if (attr->qp_type == RV_QPT_XRC_RECV) {
		/* A target has no PD, CQ or queue of its own (ibv_create_qp_ex(3)). */
		init.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		init.xrcd = attr->xrcd->drv_xrcd;
	} else {
		init.comp_mask = IBV_QP_INIT_ATTR_PD;
		init.pd = qp->pd->drv_pd;
		init.send_cq = qp->send_cq->drv_cq;
		init.recv_cq = qp->send_cq->drv_cq; /* unused: an initiator receives nothing */
		rv_ibv_qp_cap_to_ibv(&attr->cap, &init.cap);
	}
	errno = 0;
	q = ibv_create_qp_ex(rv_ibv_ctx(qp->ctx), &init);
	if (!q) {
		err = errno ? errno : ENOMEM;
		return rv_err(err, "rv_qp_new", "ibv_create_qp_ex(%s) on %s failed: %s",
			       rv_ibv_qp_type_name(attr->qp_type), qp->ctx->dev->name,
			       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	qp->drv_qp = q;
	qp->qpn = q->qp_num;
	rv_ibv_qp_cap_from_ibv(&init.cap, &qp->cap);
	qp->inline_below = rv_inline_below(qp->cap.max_inline_data);
	return 0;
}
