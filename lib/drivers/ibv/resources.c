/*
 * Creation and destruction of libibverbs PDs, MRs, CQs, QPs and address
 * handles.
 *
 * Owns: the struct ibv_pd / ibv_mr / ibv_cq / ibv_qp behind each handle
 * (drv_pd, drv_mr, drv_cq, drv_qp, drv_ah) and the words for their failures. A
 * destroy that fails leaves the object and its drv_* pointer untouched, so
 * the facade keeps it tracked and the close can be retried. Never touches the
 * ownership graph.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ibv-driver.h"
#include "translate.h"

/* Report a failed destroy (errno-returning verbs) and keep the object. */
static int destroy_failed(int rc, const char *func, const char *verb, const char *what,
			  const char *devname)
{
	char ebuf[128];
	int err = rv_ibv_errno(rc);

	rv_err(err, func, "%s on %s failed: %s", verb, devname,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EBUSY)
		rv_err_hint("%s is still in use by a resource rverbs does not track "
			    "(one made through the escape hatch?); it stays and the close "
			    "may be retried", what);
	else
		rv_err_hint("%s stays and the close may be retried", what);
	return -err;
}

/* ---- protection domains ------------------------------------------------ */

int rv_ibv_pd_alloc(struct rv_pd *pd)
{
	struct ibv_pd *p;
	char ebuf[128];
	int err;

	if (pd->parent)
		return rv_ibv_parent_domain_alloc(pd);
	errno = 0;
	p = ibv_alloc_pd(rv_ibv_ctx(pd->ctx));
	if (p) {
		pd->drv_pd = p;
		return 0;
	}
	err = errno ? errno : ENOMEM;
	rv_err(err, "rv_pd_new", "ibv_alloc_pd on %s failed: %s", pd->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == ENOMEM || err == ENOSPC) {
		struct ibv_device_attr dattr;

		if (ibv_query_device(rv_ibv_ctx(pd->ctx), &dattr) == 0)
			rv_err_hint("the device allows %d PDs in all; close unused ones", dattr.max_pd);
	}
	return -err;
}

int rv_ibv_pd_dealloc(struct rv_pd *pd)
{
	int rc = ibv_dealloc_pd(pd->drv_pd);

	if (rc != 0)
		return destroy_failed(rc, "rv_pd_close", "ibv_dealloc_pd", "the PD",
				      pd->ctx->dev->name);
	pd->drv_pd = NULL;
	return 0;
}

/* ---- memory regions ---------------------------------------------------- */

/* A registration the provider made: the MR takes it and its keys. */
static int mr_took(struct rv_mr *mr, struct ibv_mr *m)
{
	mr->drv_mr = m;
	mr->lkey = m->lkey;
	mr->rkey = m->rkey;
	return 0;
}

int rv_ibv_mr_reg_dmabuf(struct rv_mr *mr, uint64_t offset, int fd)
{
	const char *devname = mr->pd->ctx->dev->name;
	uint64_t iova = (uint64_t)(uintptr_t)mr->addr;
	struct ibv_mr *m;
	char ebuf[128];
	int err;

	errno = 0;
	m = ibv_reg_dmabuf_mr(mr->pd->drv_pd, offset, mr->length, iova, fd, (int)mr->access);
	if (m)
		return mr_took(mr, m);
	err = errno ? errno : ENOMEM;
	if (err == EOPNOTSUPP || err == ENOSYS || err == EPROTONOSUPPORT) {
		rv_err(EOPNOTSUPP, "rv_mr_reg_dmabuf", "device %s cannot register dma-bufs "
		       "(ibv_reg_dmabuf_mr: %s)", devname, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
		rv_err_hint("the device, its kernel driver or rdma-core lacks dma-buf support; register "
			    "host memory with rv_mr_reg instead");
		return -EOPNOTSUPP;
	}
	rv_err(err, "rv_mr_reg_dmabuf", "ibv_reg_dmabuf_mr(offset %llu, %zu bytes, iova 0x%llx, fd %d, "
	       "access 0x%x) on %s failed: %s", (unsigned long long)offset, mr->length,
	       (unsigned long long)iova, fd, mr->access, devname, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EINVAL)
		rv_err_hint("offset + length must lie inside the dma-buf, and the device may require "
			    "iova and offset to agree modulo its page size");
	return -err;
}

int rv_ibv_mr_reg(struct rv_mr *mr)
{
	const char *devname = mr->pd->ctx->dev->name;
	struct ibv_mr *m;
	char ebuf[128];
	int err;

	errno = 0;
	m = ibv_reg_mr(mr->pd->drv_pd, mr->addr, mr->length, (int)mr->access);
	if (m)
		return mr_took(mr, m);
	err = errno ? errno : ENOMEM;
	rv_err(err, "rv_mr_reg", "ibv_reg_mr(%p, %zu bytes, access 0x%x) on %s failed: %s",
	       mr->addr, mr->length, mr->access, devname, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	switch (err) {
	case ENOMEM:
	case EAGAIN:
		rv_ibv_hint_memlock();
		break;
	case EFAULT:
		rv_err_hint("the range [%p, +%zu) is not entirely mapped in this process",
			    mr->addr, mr->length);
		break;
	case EACCES:
	case EPERM:
		rv_err_hint("the memory's protection does not allow the access flags: local or "
			    "remote write needs writable pages (is it mapped read-only?)");
		break;
	case EINVAL:
	case EOPNOTSUPP: {
		struct ibv_device_attr dattr;

		if (ibv_query_device(rv_ibv_ctx(mr->pd->ctx), &dattr) == 0 &&
		    (uint64_t)mr->length > dattr.max_mr_size)
			rv_err_hint("%zu bytes exceed the device's max_mr_size of %llu",
				    mr->length, (unsigned long long)dattr.max_mr_size);
		else
			rv_err_hint("the device may not support an access flag: ON_DEMAND needs "
				    "on-demand paging, MW_BIND memory windows, ZERO_BASED is "
				    "rarely supported");
		break;
	}
	default:
		break;
	}
	return -err;
}

int rv_ibv_mr_dereg(struct rv_mr *mr)
{
	int rc = ibv_dereg_mr(mr->drv_mr);

	if (rc != 0)
		return destroy_failed(rc, "rv_mr_close", "ibv_dereg_mr", "the MR",
				      mr->pd->ctx->dev->name);
	mr->drv_mr = NULL;
	return 0;
}

_Static_assert((int)RV_REREG_TRANS == (int)IBV_REREG_MR_CHANGE_TRANSLATION &&
	       (int)RV_REREG_PD == (int)IBV_REREG_MR_CHANGE_PD &&
	       (int)RV_REREG_ACCESS == (int)IBV_REREG_MR_CHANGE_ACCESS,
	       "rv_rereg_flags mirror ibv_rereg_mr_flags");

int rv_ibv_mr_rereg(struct rv_mr *mr, uint32_t flags, struct rv_pd *pd, void *addr, size_t length,
		    uint32_t access)
{
	struct ibv_mr *m = mr->drv_mr;
	char ebuf[128];
	int rc, err;

	errno = 0;
	rc = ibv_rereg_mr(m, (int)flags, (flags & RV_REREG_PD) ? pd->drv_pd : NULL,
			  (flags & RV_REREG_TRANS) ? addr : NULL, (flags & RV_REREG_TRANS) ? length : 0,
			  (flags & RV_REREG_ACCESS) ? (int)access : 0);
	/* DO_FORK_OLD: the new registration is in place; only the old range kept
	 * its don't-fork mark, which concerns fork children, not this MR. */
	if (rc == 0 || rc == IBV_REREG_MR_ERR_DO_FORK_OLD) {
		mr->lkey = m->lkey;
		mr->rkey = m->rkey;
		return 0;
	}
	err = errno > 0 ? errno : (rc == IBV_REREG_MR_ERR_INPUT ? EINVAL : EIO);
	rv_err(err, "rv_mr_rereg", "ibv_rereg_mr(flags 0x%x) on %s failed (%d): %s", flags,
	       mr->pd->ctx->dev->name, rc, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (rc == IBV_REREG_MR_ERR_CMD || rc == IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW)
		rv_err_hint("the device refused it and the MR must not be used any more: close it "
			    "and register anew");
	else if (err == EOPNOTSUPP || err == ENOSYS)
		rv_err_hint("this device or its provider cannot re-register; register anew with "
			    "rv_mr_reg and close this MR");
	else
		rv_err_hint("the MR is unchanged and still usable");
	return -err;
}

_Static_assert((int)RV_ADVISE_MR_PREFETCH == (int)IBV_ADVISE_MR_ADVICE_PREFETCH &&
	       (int)RV_ADVISE_MR_PREFETCH_WRITE == (int)IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	       (int)RV_ADVISE_MR_PREFETCH_NO_FAULT == (int)IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT &&
	       (int)RV_ADVISE_MR_FLAG_FLUSH == (int)IBV_ADVISE_MR_FLAG_FLUSH,
	       "rv_advise_mr_* mirror ibv_advise_mr's advice and flags");

int rv_ibv_mr_advise(struct rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sge, uint32_t n)
{
	char ebuf[128];
	int rc;

	/* rv_sge and ibv_sge share a layout (translate.c); libibverbs only reads the list. */
	rc = ibv_advise_mr(pd->drv_pd, (enum ibv_advise_mr_advice)advice, flags,
			   (struct ibv_sge *)(uintptr_t)sge, n);
	if (rc == 0)
		return 0;
	if (rc == ENOSYS)
		rc = EOPNOTSUPP; /* old libibverbs: the verb is missing */
	rv_err(rc, "rv_mr_advise", "ibv_advise_mr(advice %u, flags 0x%x, %u SGEs) on %s failed: %s", advice,
	       flags, n, pd->ctx->dev->name, rv_ibv_strerror(rc, ebuf, sizeof(ebuf)));
	switch (rc) {
	case EOPNOTSUPP:
		rv_err_hint("the device or its provider takes no advice (no ODP prefetch)");
		break;
	case EFAULT:
		rv_err_hint("a range lies outside its MR or is not mapped, or an lkey is not of an ODP MR "
			    "(registered with RV_ACCESS_ON_DEMAND)");
		break;
	case EPERM:
		rv_err_hint("an lkey of another PD, or PREFETCH_WRITE on an MR without LOCAL_WRITE");
		break;
	default:
		break;
	}
	return -rc;
}

/* ---- completion queues ------------------------------------------------- */

int rv_ibv_cq_create(struct rv_cq *cq, const rv_cq_attr *attr)
{
	struct ibv_context *c = rv_ibv_ctx(cq->ctx);
	struct ibv_cq *q;
	char ebuf[128];
	int err;

	struct ibv_comp_channel *ch = NULL;

	if (((attr->mask & RV_CQ_ATTR_WC_FLAGS) && attr->wc_flags) || ((attr->mask & RV_CQ_ATTR_PD) && attr->pd))
		return rv_ibv_cq_create_ex(cq, attr);
	if ((attr->mask & RV_CQ_ATTR_CHANNEL) && attr->channel)
		ch = attr->channel->drv_ch;
	errno = 0;
	/* cq_context is the handle: ibv_get_cq_event gives it back. */
	q = ibv_create_cq(c, (int)attr->cqe, cq, ch, (int)attr->comp_vector);
	if (q) {
		cq->drv_cq = q;
		cq->cqe = q->cqe > 0 ? (uint32_t)q->cqe : attr->cqe;
		return 0;
	}
	err = errno ? errno : ENOMEM;
	rv_err(err, "rv_cq_new", "ibv_create_cq(cqe %u, comp_vector %u) on %s failed: %s",
	       attr->cqe, attr->comp_vector, cq->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EINVAL || err == ENOMEM) {
		struct ibv_device_attr dattr;

		if (ibv_query_device(c, &dattr) == 0)
			rv_err_hint("requested cqe %u and comp_vector %u; the device allows cqe up "
				    "to %d, %d CQs in all, and this context has %d completion "
				    "vectors",
				    attr->cqe, attr->comp_vector, dattr.max_cqe, dattr.max_cq,
				    c->num_comp_vectors);
	}
	return -err;
}

int rv_ibv_cq_destroy(struct rv_cq *cq)
{
	int rc = ibv_destroy_cq(cq->drv_cq);

	if (rc != 0)
		return destroy_failed(rc, "rv_cq_close", "ibv_destroy_cq", "the CQ",
				      cq->ctx->dev->name);
	cq->drv_cq = NULL;
	return 0;
}

/* ---- completion channels ---------------------------------------------- */

int rv_ibv_cq_resize(struct rv_cq *cq, uint32_t cqe)
{
	struct ibv_cq *c = cq->drv_cq;
	char ebuf[128];
	int rc, err;

	if (cqe > INT32_MAX)
		return rv_err(EINVAL, "rv_cq_resize", "cqe %u does not fit libibverbs' int", cqe);
	rc = ibv_resize_cq(c, (int)cqe);
	if (rc == 0) {
		/* The provider may round up; cq->cqe is what it got. */
		cq->cqe = c->cqe > 0 ? (uint32_t)c->cqe : cqe;
		return 0;
	}
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_cq_resize", "ibv_resize_cq(%u) on %s failed: %s", cqe, cq->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EINVAL) {
		struct ibv_device_attr dattr;

		if (ibv_query_device(c->context, &dattr) == 0 && cqe > (uint32_t)dattr.max_cqe)
			rv_err_hint("the device allows max_cqe %d", dattr.max_cqe);
		else
			rv_err_hint("the CQ may hold more completions than %u: poll them first", cqe);
	} else if (err == EOPNOTSUPP || err == ENOSYS) {
		rv_err_hint("the device cannot resize CQs; create a new one");
	}
	return -err;
}

int rv_ibv_comp_channel_create(struct rv_comp_channel *ch)
{
	struct ibv_comp_channel *cc;
	char ebuf[128];
	int err, fl;

	errno = 0;
	cc = ibv_create_comp_channel(rv_ibv_ctx(ch->ctx));
	if (!cc) {
		err = errno ? errno : ENOMEM;
		return rv_err(err, "rv_comp_channel_new", "ibv_create_comp_channel on %s failed: %s",
			      ch->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	/* rv_comp_channel_get_event waits with poll(); reads never block. */
	fl = fcntl(cc->fd, F_GETFL);
	if (fl < 0 || fcntl(cc->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		err = errno;
		ibv_destroy_comp_channel(cc);
		return rv_err(err, "rv_comp_channel_new", "making the channel's descriptor non-blocking "
			      "failed: %s", rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	ch->drv_ch = cc;
	ch->fd = cc->fd;
	return 0;
}

int rv_ibv_comp_channel_destroy(struct rv_comp_channel *ch)
{
	int rc = ibv_destroy_comp_channel(ch->drv_ch);

	if (rc != 0)
		return destroy_failed(rc, "rv_comp_channel_close", "ibv_destroy_comp_channel",
				      "the completion channel", ch->ctx->dev->name);
	ch->drv_ch = NULL;
	ch->fd = -1;
	return 0;
}

int rv_ibv_cq_req_notify(struct rv_cq *cq, bool solicited_only)
{
	char ebuf[128];
	int rc = ibv_req_notify_cq(cq->drv_cq, solicited_only ? 1 : 0);

	if (rc != 0)
		return rv_err(rc > 0 ? rc : EIO, "rv_cq_req_notify", "ibv_req_notify_cq on %s failed: %s",
			      cq->ctx->dev->name, rv_ibv_strerror(rc > 0 ? rc : EIO, ebuf, sizeof(ebuf)));
	return 0;
}

int rv_ibv_comp_channel_get_event(struct rv_comp_channel *ch, struct rv_cq **ret_cq)
{
	struct ibv_cq *q = NULL;
	void *context = NULL;
	char ebuf[128];
	int err;

	errno = 0;
	if (ibv_get_cq_event(ch->drv_ch, &q, &context) == 0) {
		*ret_cq = context;
		return 0;
	}
	err = errno ? errno : EIO;
	if (err == EAGAIN || err == EWOULDBLOCK)
		return -EAGAIN;
	return rv_err(err, "rv_comp_channel_get_event", "ibv_get_cq_event on %s failed: %s",
		      ch->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
}

void rv_ibv_cq_ack_events(struct rv_cq *cq, unsigned int n)
{
	ibv_ack_cq_events(cq->drv_cq, n);
}

/* ---- queue pairs ------------------------------------------------------- */

static void hint_qp_caps(struct ibv_context *c, const rv_qp_init_attr *attr)
{
	struct ibv_device_attr dattr;

	if (ibv_query_device(c, &dattr) != 0)
		return;
	rv_err_hint("requested %s QP with max_send_wr %u, max_recv_wr %u, max_send_sge %u, "
		    "max_recv_sge %u, max_inline_data %u; the device allows max_qp_wr %d, "
		    "max_sge %d, %d QPs in all (its inline limit is not reported: try a "
		    "smaller max_inline_data)",
		    rv_ibv_qp_type_name(attr->qp_type), attr->cap.max_send_wr,
		    attr->cap.max_recv_wr, attr->cap.max_send_sge, attr->cap.max_recv_sge,
		    attr->cap.max_inline_data, dattr.max_qp_wr, dattr.max_sge, dattr.max_qp);
}

int rv_ibv_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr)
{
	struct ibv_context *c = rv_ibv_ctx(qp->ctx);
	struct ibv_qp_init_attr init;
	struct ibv_qp *q;
	char ebuf[128];
	int err;

	if (attr->qp_type == RV_QPT_XRC_SEND || attr->qp_type == RV_QPT_XRC_RECV)
		return rv_ibv_xrc_qp_create(qp, attr);
	rv_ibv_qp_init_attr_to_ibv(attr, qp->send_cq->drv_cq, qp->recv_cq->drv_cq, qp, &init);
	if (attr->srq)
		init.srq = attr->srq->drv_srq;
	errno = 0;
	q = ibv_create_qp(qp->pd->drv_pd, &init);
	if (q) {
		qp->drv_qp = q;
		qp->qpn = q->qp_num;
		/* ibv_create_qp() writes back what the QP actually got; the
		 * inline limit in particular may exceed the request, and
		 * rv_send_wr_inline() relies on it. */
		rv_ibv_qp_cap_from_ibv(&init.cap, &qp->cap);
		qp->inline_below = rv_inline_below(qp->cap.max_inline_data);
		return 0;
	}
	err = errno ? errno : ENOMEM;
	rv_err(err, "rv_qp_new", "ibv_create_qp(%s) on %s failed: %s",
	       rv_ibv_qp_type_name(attr->qp_type), qp->ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	switch (err) {
	case EINVAL:
	case ENOMEM:
	case ENOSPC:
		hint_qp_caps(c, attr);
		break;
	case EOPNOTSUPP:
	case ENOSYS:
	case EPROTONOSUPPORT:
		rv_err_hint("the device does not offer %s QPs (EFA offers UD and SRD only, "
			    "iWARP devices RC only)", rv_ibv_qp_type_name(attr->qp_type));
		break;
	default:
		break;
	}
	return -err;
}

int rv_ibv_qp_destroy(struct rv_qp *qp)
{
	int rc = ibv_destroy_qp(qp->drv_qp);

	if (rc != 0)
		return destroy_failed(rc, "rv_qp_close", "ibv_destroy_qp", "the QP",
				      qp->ctx->dev->name);
	qp->drv_qp = NULL;
	return 0;
}

/* ---- address handles --------------------------------------------------- */

int rv_ibv_ah_create(struct rv_ah *ah)
{
	struct ibv_ah_attr a;
	struct ibv_ah *h;
	char ebuf[128];
	int err;

	rv_ibv_ah_attr_to_ibv(&ah->attr, &a);
	errno = 0;
	h = ibv_create_ah(ah->pd->drv_pd, &a);
	if (h) {
		ah->drv_ah = h;
		return 0;
	}
	err = errno ? errno : EINVAL;
	rv_err(err, "rv_ah_new", "ibv_create_ah(port %u, dlid %u, is_global %u, sgid_index %u) on "
	       "%s failed: %s", a.port_num, a.dlid, a.is_global, a.grh.sgid_index,
	       ah->pd->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EINVAL || err == ENOENT || err == ENETUNREACH || err == EHOSTUNREACH)
		rv_err_hint("on RoCE the address vector needs is_global 1, the peer's dgid and "
			    "an sgid_index of the local GID table; the kernel resolves the dgid "
			    "to a MAC address, so the peer must be reachable from the port's "
			    "network interface");
	return -err;
}

int rv_ibv_ah_destroy(struct rv_ah *ah)
{
	int rc = ibv_destroy_ah(ah->drv_ah);

	if (rc != 0)
		return destroy_failed(rc, "rv_ah_close", "ibv_destroy_ah", "the address handle",
				      ah->pd->ctx->dev->name);
	ah->drv_ah = NULL;
	return 0;
}

/* ---- multicast ------------------------------------------------------------ */

static int mcast_call(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid, bool attach)
{
	union ibv_gid g;
	char ebuf[128];
	int rc;

	memcpy(g.raw, gid, 16);
	rc = attach ? ibv_attach_mcast(qp->drv_qp, &g, lid) : ibv_detach_mcast(qp->drv_qp, &g, lid);
	if (rc == 0)
		return 0;
	if (rc < 0) /* some providers return -1 with errno */
		rc = errno ? errno : EINVAL;
	return rv_err(rc, attach ? "rv_qp_attach_mcast" : "rv_qp_detach_mcast", "%s(QP 0x%x, MLID 0x%x) on %s failed: %s",
		      attach ? "ibv_attach_mcast" : "ibv_detach_mcast", qp->qpn, lid, qp->ctx->dev->name,
		      rv_ibv_strerror(rc, ebuf, sizeof(ebuf)));
}

int rv_ibv_mcast_attach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid)
{
	return mcast_call(qp, gid, lid, true);
}

int rv_ibv_mcast_detach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid)
{
	return mcast_call(qp, gid, lid, false);
}

int rv_ibv_ah_attr_from_wc(struct rv_context *ctx, uint8_t port_num, const rv_wc *wc,
			   const void *grh, rv_ah_attr *attr)
{
	struct ibv_ah_attr a;
	struct ibv_wc iwc;
	char ebuf[128];
	int rc, err;

	rv_ibv_wc_to_ibv(wc, &iwc);
	memset(&a, 0, sizeof(a));
	errno = 0;
	/* libibverbs reads the GRH only when the WC says it is there. */
	rc = ibv_init_ah_from_wc(rv_ibv_ctx(ctx), port_num, &iwc,
				 (struct ibv_grh *)(uintptr_t)grh, &a);
	if (rc == 0) {
		rv_ibv_ah_attr_from_ibv(&a, attr);
		return 0;
	}
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_ah_from_wc", "ibv_init_ah_from_wc(port %u, src_qp %u, slid %u) on %s "
	       "failed: %s", port_num, wc->src_qp, wc->slid, ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	rv_err_hint("the GRH's destination GID must be in the GID table of port %u (the "
		    "message arrived there)", port_num);
	return -err;
}

/* ---- memory windows ---------------------------------------------------- */

int rv_ibv_mw_alloc(struct rv_mw *mw)
{
	struct ibv_mw *m;
	char ebuf[128];
	int err;

	errno = 0;
	m = ibv_alloc_mw(mw->pd->drv_pd, mw->type == RV_MW_TYPE_1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (m) {
		mw->drv_mw = m;
		mw->rkey = m->rkey;
		return 0;
	}
	err = errno ? errno : ENOMEM;
	rv_err(err, "rv_mw_alloc", "ibv_alloc_mw(type %u) on %s failed: %s", mw->type,
	       mw->pd->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EOPNOTSUPP || err == ENOSYS)
		rv_err_hint("the device has no type %u memory windows (device_cap_flags "
			    "IBV_DEVICE_MEM_WINDOW_TYPE_%s)", mw->type, mw->type == 1 ? "1" : "2A/2B");
	return -err;
}

int rv_ibv_mw_dealloc(struct rv_mw *mw)
{
	int rc = ibv_dealloc_mw(mw->drv_mw);

	if (rc != 0)
		return destroy_failed(rc, "rv_mw_close", "ibv_dealloc_mw", "the memory window",
				      mw->pd->ctx->dev->name);
	mw->drv_mw = NULL;
	return 0;
}

/* Type 1: ibv_bind_mw (the provider picks the new rkey); type 2: an
 * IBV_WR_BIND_MW work request carrying the rkey the facade computed. */
int rv_ibv_mw_bind(struct rv_qp *qp, struct rv_mw *mw, const rv_mw_bind_info *info, uint32_t *new_rkey,
		   uint64_t wr_id, uint32_t send_flags)
{
	struct ibv_mw *m = mw->drv_mw;
	struct ibv_mw_bind_info bi;
	char ebuf[128];
	int rc;

	memset(&bi, 0, sizeof(bi));
	bi.mr = info->mr->drv_mr;
	bi.addr = info->addr;
	bi.length = info->length;
	bi.mw_access_flags = info->access;
	if (mw->type == RV_MW_TYPE_1) {
		struct ibv_mw_bind b;

		memset(&b, 0, sizeof(b));
		b.wr_id = wr_id;
		b.send_flags = (int)send_flags;
		b.bind_info = bi;
		rc = ibv_bind_mw(qp->drv_qp, m, &b);
		if (rc == 0)
			*new_rkey = m->rkey;
	} else {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = wr_id;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = send_flags;
		wr.bind_mw.mw = m;
		wr.bind_mw.rkey = *new_rkey;
		wr.bind_mw.bind_info = bi;
		rc = ibv_post_send(qp->drv_qp, &wr, &bad);
	}
	if (rc == 0)
		return 0;
	rc = rc < 0 ? -rc : rc;
	return rv_err(rc, "rv_qp_bind_mw", "%s on %s failed: %s",
		      mw->type == RV_MW_TYPE_1 ? "ibv_bind_mw" : "ibv_post_send(IBV_WR_BIND_MW)",
		      mw->pd->ctx->dev->name, rv_ibv_strerror(rc, ebuf, sizeof(ebuf)));
}
