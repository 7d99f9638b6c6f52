/*
 * Queue pairs: creation, validated state transitions, the connection helper
 * (rv_qp_connect) and the data path.
 *
 * The data path (rv_qp_post_send/recv and the one-operation wrappers) takes
 * no lock and no atomic: one compare of the handle's first word
 * (rv_obj_live_fast), then the driver. Everything else is control path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "gid_select.h"
#include "qp_signal.h"
#include "wr_builder.h"
#include "qp_state.h"
#include "memory.h"

static int qp_destroy(struct rv_object *obj)
{
	struct rv_qp *qp = (struct rv_qp *)obj;
	int rc = qp->drv->qp_destroy(qp);

	if (rc == 0)
		rv_qp_signal_detach(qp);
	return rc;
}

static void qp_release(struct rv_object *obj)
{
	rv_qp_signal_free((struct rv_qp *)obj);
	rv_wr_builder_free((struct rv_qp *)obj);
}

static const struct rv_object_class qp_class = {
	.type = RV_OBJ_QP,
	.name = "QP",
	.destroy = qp_destroy,
	.release = qp_release,
};

#define QP_INIT_KNOWN (RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ | \
		       RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL | RV_QP_INIT_ATTR_SRQ | \
		       RV_QP_INIT_ATTR_XRCD)

/* Where a post with a NULL n_posted has a driver that needs a pointer write
 * its count: with a pointer of its own the adapter below stays a tail call
 * (no frame for a local). Per thread, so that posts of several threads never
 * write one location; initial-exec, so the address is two instructions
 * without a call. */
static _Thread_local size_t posted_sink __attribute__((tls_model("initial-exec")));

/* qp->post_send and qp->post_recv for a driver that needs a non-NULL
 * n_posted (!post_n_posted_may_be_null): the facade's entry points pass the
 * caller's pointer, NULL included, straight to qp->post_send. */
static int post_send_adapter(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	return qp->drv->post_send(qp, wrs, n, n_posted ? n_posted : &posted_sink);
}

static int post_recv_adapter(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	return qp->drv->post_recv(qp, wrs, n, n_posted ? n_posted : &posted_sink);
}

int (*rv_qp_plain_post_send(const struct rv_qp *qp))(struct rv_qp *, const rv_send_wr *, size_t, size_t *)
{
	return qp->drv->post_n_posted_may_be_null ? qp->drv->post_send : post_send_adapter;
}

int (*rv_qp_plain_post_send_one(const struct rv_qp *qp))(struct rv_qp *, const rv_send_wr *, size_t, size_t *)
{
	const struct rv_driver *drv = qp->drv;

	/* A connected QP's one-WR entry need not test n or the QP type. */
	/* Not an XRC initiator: its WRs carry remote_srqn, which that entry's
	 * pass-through (libibverbs driver) does not place. */
	if (drv->post_n_posted_may_be_null && drv->post_send_one_connected && qp->qp_type != RV_QPT_UD &&
	    qp->qp_type != RV_QPT_XRC_SEND)
		return drv->post_send_one_connected;
	return rv_qp_plain_post_send(qp);
}

/* qp->post_recv of a QP that takes its receives from an SRQ. */
static int post_recv_on_srq_qp(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	(void)wrs;
	(void)n;
	if (n_posted)
		*n_posted = 0;
	return rv_err(EINVAL, "rv_qp_post_recv", "QP #%" PRIu64 " takes its receives from SRQ #%" PRIu64
		      "; post them with rv_srq_post_recv", qp->obj.id, qp->srq->obj.id);
}

/* qp->post_recv of an XRC QP: neither type has a receive queue. */
static int post_recv_on_xrc_qp(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	(void)wrs;
	(void)n;
	if (n_posted)
		*n_posted = 0;
	return rv_err(EINVAL, "rv_qp_post_recv", "QP 0x%x is an XRC %s QP, which has no receive queue; "
		      "post receives to the XRC SRQs (rv_srq_post_recv)", qp->qpn,
		      qp->qp_type == RV_QPT_XRC_SEND ? "initiator" : "target");
}

/* qp->post_send of an XRC target QP: it has no send queue. */
static int post_send_on_xrc_tgt(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	(void)wrs;
	(void)n;
	if (n_posted)
		*n_posted = 0;
	return rv_err(EINVAL, "rv_qp_post_send", "QP 0x%x is an XRC target QP, which has no send queue; "
		      "send through an XRC initiator QP (RV_QPT_XRC_SEND)", qp->qpn);
}

/* The XRC part of rv_qp_new's checks: a target QP needs its domain and no
 * CQ; an initiator has no receive side. */
static int qp_xrc_defaults(rv_pd *pd, const rv_qp_init_attr *attr, rv_qp_init_attr *a, const char *func)
{
	int rc;

	if (a->qp_type != RV_QPT_XRC_SEND && a->qp_type != RV_QPT_XRC_RECV) {
		if (attr->mask & RV_QP_INIT_ATTR_XRCD)
			return rv_err(EINVAL, func, "RV_QP_INIT_ATTR_XRCD is only for an RV_QPT_XRC_RECV QP");
		return 0;
	}
	if (!pd->ctx->drv->xrcd_open)
		return rv_err(EOPNOTSUPP, func, "device %s has no XRC; qp_type %u needs it", pd->ctx->dev->name,
			      a->qp_type);
	if (attr->mask & RV_QP_INIT_ATTR_SRQ)
		return rv_err(EINVAL, func, "an XRC QP takes no SRQ: an XRC initiator has no receive side and "
			      "an XRC target receives into the XRC SRQ each SEND names");
	if (a->qp_type == RV_QPT_XRC_SEND) {
		if (attr->mask & RV_QP_INIT_ATTR_XRCD)
			return rv_err(EINVAL, func, "RV_QP_INIT_ATTR_XRCD is only for an RV_QPT_XRC_RECV QP");
		a->recv_cq = a->send_cq; /* no receive side: nothing completes there */
		a->cap.max_recv_wr = 0;
		a->cap.max_recv_sge = 0;
		if (a->cap.max_send_wr == 0)
			return rv_err(EINVAL, func, "cap.max_send_wr is 0: an XRC initiator only sends");
		return 0;
	}
	if (!(attr->mask & RV_QP_INIT_ATTR_XRCD))
		return rv_err(EINVAL, func, "an RV_QPT_XRC_RECV QP needs its XRC domain (RV_QP_INIT_ATTR_XRCD)");
	rc = rv_obj_check(RV_COBJ(attr->xrcd), RV_OBJ_XRCD, func);
	if (rc < 0)
		return rc;
	if (attr->xrcd->ctx != pd->ctx)
		return rv_err(EINVAL, func, "the XRC domain and the PD belong to different contexts");
	a->xrcd = attr->xrcd;
	a->send_cq = a->recv_cq = NULL;
	memset(&a->cap, 0, sizeof(a->cap));
	return 0;
}

static int qp_init_defaults(rv_pd *pd, const rv_qp_init_attr *attr, rv_qp_init_attr *a, const char *func)
{
	int rc;

	if (!attr)
		return rv_err(EINVAL, func, "attr is NULL; at least RV_QP_INIT_ATTR_SEND_CQ is required");
	if (attr->mask & ~(uint64_t)QP_INIT_KNOWN)
		return rv_err(EINVAL, func, "unknown bit 0x%" PRIx64 " in rv_qp_init_attr.mask",
			      attr->mask & ~(uint64_t)QP_INIT_KNOWN);
	memset(a, 0, sizeof(*a));
	a->mask = attr->mask;
	a->qp_type = (attr->mask & RV_QP_INIT_ATTR_TYPE) ? attr->qp_type : RV_QPT_RC;
	if (a->qp_type != RV_QPT_RC && a->qp_type != RV_QPT_UC && a->qp_type != RV_QPT_UD &&
	    a->qp_type != RV_QPT_XRC_SEND && a->qp_type != RV_QPT_XRC_RECV)
		return rv_err(EINVAL, func, "qp_type %u is not RV_QPT_RC, RV_QPT_UC, RV_QPT_UD, "
			      "RV_QPT_XRC_SEND or RV_QPT_XRC_RECV", a->qp_type);
	if (a->qp_type == RV_QPT_XRC_RECV) {
		a->sq_sig_all = 1;
		return qp_xrc_defaults(pd, attr, a, func);
	}
	if (!(attr->mask & RV_QP_INIT_ATTR_SEND_CQ))
		return rv_err(EINVAL, func, "RV_QP_INIT_ATTR_SEND_CQ is required");
	a->send_cq = attr->send_cq;
	a->recv_cq = (attr->mask & RV_QP_INIT_ATTR_RECV_CQ) ? attr->recv_cq : attr->send_cq;
	rc = rv_obj_check(RV_COBJ(a->send_cq), RV_OBJ_CQ, func);
	if (rc == 0)
		rc = rv_obj_check(RV_COBJ(a->recv_cq), RV_OBJ_CQ, func);
	if (rc < 0)
		return rc;
	if (a->send_cq->ctx != pd->ctx || a->recv_cq->ctx != pd->ctx)
		return rv_err(EINVAL, func, "the CQs and the PD belong to different contexts");
	a->sq_sig_all = (attr->mask & RV_QP_INIT_ATTR_SQ_SIG_ALL) ? !!attr->sq_sig_all : 1;
	if (attr->mask & RV_QP_INIT_ATTR_CAP) {
		a->cap = attr->cap;
	} else {
		a->cap.max_send_wr = 128;
		a->cap.max_recv_wr = 128;
		a->cap.max_send_sge = 1;
		a->cap.max_recv_sge = 1;
		a->cap.max_inline_data = 0;
	}
	if (attr->mask & RV_QP_INIT_ATTR_SRQ) {
		rc = rv_obj_check(RV_COBJ(attr->srq), RV_OBJ_SRQ, func);
		if (rc < 0)
			return rc;
		if (rv_pd_protection(attr->srq->pd) != rv_pd_protection(pd))
			return rv_err(EINVAL, func, "the SRQ #%" PRIu64 " belongs to another PD; a QP and its "
				      "SRQ must share the PD", attr->srq->obj.id);
		a->srq = attr->srq;
		a->cap.max_recv_wr = 0; /* receives come from the SRQ */
		a->cap.max_recv_sge = 0;
	}
	rc = qp_xrc_defaults(pd, attr, a, func);
	if (rc < 0)
		return rc;
	if (a->cap.max_send_wr == 0 && a->cap.max_recv_wr == 0 && !a->srq)
		return rv_err(EINVAL, func, "cap.max_send_wr and cap.max_recv_wr are both 0");
	return 0;
}

RV_EXPORT int rv_qp_new(rv_pd *pd, const rv_qp_init_attr *attr, rv_qp **ret_qp)
{
	rv_qp_init_attr a;
	struct rv_qp *qp;
	int rc = rv_obj_new_check(RV_COBJ(pd), RV_OBJ_PD, ret_qp, "ret_qp", 0, 0, NULL, __func__);

	if (rc < 0)
		return rc;
	rc = qp_init_defaults(pd, attr, &a, __func__);
	if (rc < 0)
		return rc;
	qp = rv_obj_new(sizeof(*qp), &qp_class, pd->ctx, __func__);
	if (!qp)
		return -ENOMEM;
	qp->drv = pd->ctx->drv;
	qp->qp_type = a.qp_type; /* rv_qp_plain_post_send_one picks by it */
	qp->post_send = rv_qp_plain_post_send(qp);
	qp->post_send_one = rv_qp_plain_post_send_one(qp);
	/* A QP on an SRQ refuses receives through its entry point: no test on
	 * the data path of the others. */
	qp->post_recv = a.srq ? post_recv_on_srq_qp
		      : a.qp_type == RV_QPT_XRC_SEND || a.qp_type == RV_QPT_XRC_RECV ? post_recv_on_xrc_qp
		      : qp->drv->post_n_posted_may_be_null ? qp->drv->post_recv : post_recv_adapter;
	if (a.qp_type == RV_QPT_XRC_RECV)
		qp->post_send = qp->post_send_one = post_send_on_xrc_tgt;
	qp->ctx = pd->ctx;
	qp->pd = pd;
	qp->send_cq = a.send_cq;
	qp->recv_cq = a.recv_cq;
	qp->srq = a.srq;
	qp->xrcd = a.xrcd;
	qp->qp_type = a.qp_type;
	qp->sq_sig_all = a.sq_sig_all;
	qp->state = RV_QPS_RESET;
	qp->port_num = 1;
	if (rv_random_bytes(&qp->init_psn, sizeof(qp->init_psn)) < 0)
		qp->init_psn = 0; /* not a secret: a PSN only has to differ between connections */
	qp->init_psn &= 0xffffff;

	rv_graph_lock(&pd->obj);
	rc = rv_obj_depend(&qp->obj, &pd->obj, __func__);
	if (rc == 0 && a.send_cq)
		rc = rv_obj_depend(&qp->obj, &a.send_cq->obj, __func__);
	if (rc == 0 && a.xrcd)
		rc = rv_obj_depend(&qp->obj, &a.xrcd->obj, __func__);
	if (rc == 0 && a.recv_cq != a.send_cq)
		rc = rv_obj_depend(&qp->obj, &a.recv_cq->obj, __func__);
	if (rc == 0 && a.srq)
		rc = rv_obj_depend(&qp->obj, &a.srq->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(qp->drv->qp_create(qp, &a), __func__, "creating the QP");
	return RV_OBJ_NEW_END(qp, &pd->obj, rc, ret_qp);
}

RV_DEFINE_HANDLE_REF_UNREF(qp, RV_OBJ_QP)

RV_DEFINE_HANDLE_CLOSE(qp, RV_OBJ_QP, "destroying the QP")

RV_EXPORT uint32_t rv_qp_num(const rv_qp *qp)
{
	if (rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__) < 0)
		return 0;
	return qp->qpn;
}

RV_EXPORT rv_pd *rv_qp_pd(const rv_qp *qp)
{
	if (rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__) < 0)
		return NULL;
	return qp->pd;
}

RV_EXPORT int rv_qp_get_cap(const rv_qp *qp, rv_qp_cap *ret_cap)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);
	if (rc < 0)
		return rc;
	if (!ret_cap)
		return rv_err(EINVAL, __func__, "ret_cap is NULL");
	*ret_cap = qp->cap;
	return 0;
}

/* The state as the driver sees it: a QP may have moved to ERR by itself. */
static uint32_t current_state(struct rv_qp *qp)
{
	rv_qp_attr q = {.mask = RV_QP_STATE};

	if (qp->drv->qp_query(qp, &q) == 0 && q.qp_state <= RV_QPS_ERR)
		qp->state = q.qp_state;
	return qp->state;
}

/* rv_qp_modify under the name of the public call that asked for it, so that
 * a helper's error names the helper (rv_qp_to_rts: illegal transition ...). */
static int qp_modify(rv_qp *qp, const rv_qp_attr *attr, const char *func)
{
	int rc;

	rv_graph_lock(&qp->obj);
	rc = rv_qp_check_modify(qp->qp_type, current_state(qp), attr, func);
	if (rc == 0 && (attr->mask & RV_QP_AV))
		rc = rv_gid_check_av(qp->ctx, &attr->ah_attr, func);
	if (rc == 0) {
		rv_error_clear();
		rc = qp->drv->qp_modify(qp, attr);
		rc = rv_err_from_driver(rc, func, "modifying the QP");
	}
	if (rc == 0) {
		if (attr->mask & RV_QP_STATE)
			qp->state = attr->qp_state;
		if ((attr->mask & RV_QP_STATE) && attr->qp_state == RV_QPS_RESET)
			rv_qp_signal_reset(qp);
		if ((attr->mask & RV_QP_PORT) && attr->port_num != qp->port_num) {
			qp->port_num = attr->port_num;
			qp->sgid_how = RV_SGID_NONE; /* a GID index names an entry of one port */
		}
	}
	rv_graph_unlock(&qp->obj);
	return rc;
}

RV_EXPORT int rv_qp_modify(rv_qp *qp, const rv_qp_attr *attr)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL");
	return qp_modify(qp, attr, __func__);
}

RV_EXPORT int rv_qp_query(rv_qp *qp, rv_qp_attr *attr)
{
	rv_qp_attr tmp;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL");
	if (attr->mask & ~(uint64_t)RV_QP_ATTR_ALL)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_qp_attr.mask",
			      attr->mask & ~(uint64_t)RV_QP_ATTR_ALL);
	memset(&tmp, 0, sizeof(tmp));
	tmp.mask = attr->mask;
	rv_error_clear();
	rc = qp->drv->qp_query(qp, &tmp);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the QP");
	if (tmp.mask & RV_QP_CAP)
		tmp.cap = qp->cap;
	*attr = tmp;
	return 0;
}

RV_EXPORT int rv_qp_state_of(rv_qp *qp)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);
	return rc < 0 ? rc : (int)current_state(qp);
}

/* Copy the caller's fields over the defaults in *a. */
static void overlay(rv_qp_attr *a, const rv_qp_attr *u)
{
	rv_qp_attr_copy_set(a, u);
	a->mask |= u->mask;
}

/* The helpers refuse a user mask that names the state: they choose it. */
static int helper_attr(rv_qp_attr *a, const rv_qp_attr *user, uint32_t next, const char *func)
{
	if (user && (user->mask & RV_QP_STATE))
		return rv_err(EINVAL, func, "do not set RV_QP_STATE: this call chooses the target state");
	a->mask |= RV_QP_STATE;
	a->qp_state = next;
	if (user)
		overlay(a, user);
	return 0;
}

static int device_caps(struct rv_qp *qp, rv_device_attr *dattr, rv_port_attr *pattr, uint8_t port)
{
	int rc = 0;

	rv_error_clear(); /* a driver failure without a message must not report an older one */
	if (dattr) {
		memset(dattr, 0, sizeof(*dattr));
		rc = qp->drv->query_device(qp->ctx, dattr);
	}
	if (rc == 0 && pattr) {
		memset(pattr, 0, sizeof(*pattr));
		rc = qp->drv->query_port(qp->ctx, port, pattr);
	}
	return rc;
}

RV_EXPORT int rv_qp_to_init(rv_qp *qp, const rv_qp_attr *attr)
{
	rv_qp_attr a;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.pkey_index = 0;
	if (qp->qp_type == RV_QPT_UD) {
		a.mask = RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_QKEY;
		a.qkey = 0x11111111;
	} else {
		a.mask = RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_ACCESS_FLAGS;
		a.qp_access_flags = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE;
		if (qp->qp_type == RV_QPT_RC || qp->qp_type == RV_QPT_XRC_SEND || qp->qp_type == RV_QPT_XRC_RECV)
			a.qp_access_flags |= RV_ACCESS_REMOTE_READ | RV_ACCESS_REMOTE_ATOMIC;
	}
	rc = helper_attr(&a, attr, RV_QPS_INIT, __func__);
	return rc < 0 ? rc : qp_modify(qp, &a, __func__);
}

RV_EXPORT int rv_qp_to_rtr(rv_qp *qp, const rv_qp_attr *attr)
{
	rv_device_attr dattr;
	rv_port_attr pattr;
	rv_qp_attr a;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	memset(&a, 0, sizeof(a));
	if (qp->qp_type != RV_QPT_UD) {
		const char *missing = NULL;
		uint64_t m = attr ? attr->mask : 0;
		if (!(m & RV_QP_AV))
			missing = "RV_QP_AV (the peer's GID/LID)";
		else if (!(m & RV_QP_DEST_QPN))
			missing = "RV_QP_DEST_QPN (the peer's QP number)";
		else if (!(m & RV_QP_RQ_PSN))
			missing = "RV_QP_RQ_PSN (the peer's initial send PSN)";
		if (missing)
			return rv_err(EINVAL, __func__, "a connected QP needs %s; rv_qp_connect() fills it from an rv_endpoint",
				      missing);
		rc = device_caps(qp, &dattr, &pattr, qp->port_num);
		if (rc < 0)
			return rv_err_from_driver(rc, __func__, "querying the device");
		a.mask = RV_QP_PATH_MTU;
		a.path_mtu = pattr.active_mtu ? pattr.active_mtu : RV_MTU_1024;
		if (qp->qp_type == RV_QPT_RC || qp->qp_type == RV_QPT_XRC_RECV) {
			a.mask |= RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_MIN_RNR_TIMER;
			a.max_dest_rd_atomic = (uint8_t)(dattr.max_qp_rd_atom > 16 ? 16 : dattr.max_qp_rd_atom);
			a.min_rnr_timer = 12;
		}
	}
	rc = helper_attr(&a, attr, RV_QPS_RTR, __func__);
	return rc < 0 ? rc : qp_modify(qp, &a, __func__);
}

RV_EXPORT int rv_qp_to_rts(rv_qp *qp, const rv_qp_attr *attr)
{
	rv_device_attr dattr;
	rv_qp_attr a;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_SQ_PSN;
	a.sq_psn = qp->init_psn;
	if (qp->qp_type == RV_QPT_XRC_RECV) {
		a.mask |= RV_QP_TIMEOUT;
		a.timeout = 14;
	}
	if (qp->qp_type == RV_QPT_RC || qp->qp_type == RV_QPT_XRC_SEND) {
		rc = device_caps(qp, &dattr, NULL, 0);
		if (rc < 0)
			return rv_err_from_driver(rc, __func__, "querying the device");
		a.mask |= RV_QP_TIMEOUT | RV_QP_RETRY_CNT | RV_QP_RNR_RETRY | RV_QP_MAX_QP_RD_ATOMIC;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)(dattr.max_qp_init_rd_atom > 16 ? 16 : dattr.max_qp_init_rd_atom);
	}
	rc = helper_attr(&a, attr, RV_QPS_RTS, __func__);
	return rc < 0 ? rc : qp_modify(qp, &a, __func__);
}

static bool gid_is_zero(const uint8_t gid[16])
{
	for (int i = 0; i < 16; i++)
		if (gid[i])
			return false;
	return true;
}

/* The RoCE version of the QP's GID as endpoint capabilities (hardware only:
 * soft0's RC is iWARP, whatever its one GID's type). */
static uint32_t roce_caps(const struct rv_qp *qp)
{
	if (qp->ctx->dev->kind == RV_DEVICE_SOFT)
		return 0;
	return qp->sgid.gid_type == RV_GID_TYPE_ROCE_V2 ? RV_EP_CAP_ROCE_V2 :
	       qp->sgid.gid_type == RV_GID_TYPE_ROCE_V1 ? RV_EP_CAP_ROCE_V1 : 0;
}

static uint32_t peer_roce_type(const rv_endpoint *peer)
{
	if ((peer->caps & RV_EP_CAP_ROCE_V2) && !(peer->caps & RV_EP_CAP_ROCE_V1))
		return RV_GID_TYPE_ROCE_V2;
	if ((peer->caps & RV_EP_CAP_ROCE_V1) && !(peer->caps & RV_EP_CAP_ROCE_V2))
		return RV_GID_TYPE_ROCE_V1;
	return 0; /* not said (an older library, soft0, InfiniBand), or both: no constraint */
}

RV_EXPORT int rv_qp_gid_index(rv_qp *qp)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	rc = rv_qp_gid_choose(qp, &(struct rv_gid_want){0}, false, __func__);
	return rc < 0 ? rc : (int)qp->sgid.gid_index;
}

RV_EXPORT int rv_qp_set_gid_index(rv_qp *qp, uint32_t index)
{
	rv_port_attr pattr;
	rv_gid_entry e;
	uint32_t state;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	state = current_state(qp);
	if (state != RV_QPS_RESET && state != RV_QPS_INIT)
		return rv_err(EINVAL, __func__, "the QP is in %s; its GID is chosen before it connects (RESET or INIT)",
			      rv_qp_state_name(state));
	rc = device_caps(qp, NULL, &pattr, qp->port_num);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the port");
	if (index >= pattr.gid_tbl_len || index > 255)
		return rv_err(EINVAL, __func__, "GID index %u is past the GID table of port %u of %s (%u entries)", index,
			      qp->port_num, qp->ctx->dev->name, pattr.gid_tbl_len);
	memset(&e, 0, sizeof(e));
	rv_error_clear();
	rc = qp->drv->query_gid_entry ? qp->drv->query_gid_entry(qp->ctx, qp->port_num, index, &e) : -EOPNOTSUPP;
	if (rc == -EOPNOTSUPP) { /* untyped entries: the GID alone */
		memset(&e, 0, sizeof(e));
		rv_error_clear();
		rc = qp->drv->query_gid(qp->ctx, qp->port_num, (int)index, e.gid);
		if (rc < 0)
			return rv_err_from_driver(rc, __func__, "reading the GID entry");
	}
	if (rc < 0 || gid_is_zero(e.gid))
		return rv_err(EINVAL, __func__, "GID index %u of port %u of %s is empty; on RoCE an entry exists for each "
			      "IP address of the port's interface (rv_context_query_gid_entry() lists them)", index,
			      qp->port_num, qp->ctx->dev->name);
	e.gid_index = index;
	e.port_num = qp->port_num;
	qp->sgid = e;
	qp->sgid_how = RV_SGID_CALLER;
	return 0;
}

RV_EXPORT int rv_qp_endpoint(rv_qp *qp, rv_endpoint *ret_ep)
{
	rv_device_attr dattr;
	rv_port_attr pattr;
	rv_endpoint ep;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!ret_ep)
		return rv_err(EINVAL, __func__, "ret_ep is NULL");
	memset(&ep, 0, sizeof(ep));
	rv_error_clear();
	rc = device_caps(qp, &dattr, &pattr, qp->port_num);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the port");
	rc = rv_qp_gid_choose(qp, &(struct rv_gid_want){0}, false, __func__);
	if (rc < 0)
		return rc;
	memcpy(ep.gid, qp->sgid.gid, 16);
	ep.caps |= roce_caps(qp);
	ep.lid = pattr.lid;
	ep.port_num = qp->port_num;
	ep.mtu = (uint8_t)pattr.active_mtu;
	ep.qpn = qp->qpn;
	ep.psn = qp->init_psn;
	ep.qp_type = qp->qp_type;
	if (dattr.atomic_cap != RV_ATOMIC_NONE)
		ep.caps |= RV_EP_CAP_ATOMIC;
	if (qp->ctx->dev->kind == RV_DEVICE_SOFT)
		ep.caps |= RV_EP_CAP_SOFT;
	/* soft0 offers immediate data with its atomics (RFC 7306, both negotiated
	 * together; none with RV_SOFT_NO_EXT); hardware devices always have it. */
	if (qp->ctx->dev->kind != RV_DEVICE_SOFT || dattr.atomic_cap != RV_ATOMIC_NONE)
		ep.caps |= RV_EP_CAP_IMM;
	*ret_ep = ep;
	return 0;
}

RV_EXPORT int rv_qp_connect(rv_qp *qp, const rv_endpoint *peer)
{
	return rv_qp_connect_route(qp, peer, NULL);
}

int rv_qp_connect_route(struct rv_qp *qp, const rv_endpoint *peer, const struct rv_route *route)
{
	const char *fn = "rv_qp_connect"; /* the public call's name in messages */
	rv_port_attr pattr;
	rv_qp_attr a;
	uint32_t state;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, fn);

	if (rc < 0)
		return rc;
	if (!peer)
		return rv_err(EINVAL, fn, "peer is NULL");
	if (qp->qp_type == RV_QPT_UD)
		return rv_err(EINVAL, fn, "UD QPs are not connected: use rv_qp_to_init/to_rtr/to_rts and address handles");
	if (qp->qp_type == RV_QPT_XRC_SEND || qp->qp_type == RV_QPT_XRC_RECV) {
		uint32_t want = qp->qp_type == RV_QPT_XRC_SEND ? RV_QPT_XRC_RECV : RV_QPT_XRC_SEND;
		if (peer->qp_type != want)
			return rv_err(EINVAL, fn, "the peer's QP type is %u: an XRC initiator (%u) connects to an "
				      "XRC target (%u) and a target to an initiator", peer->qp_type,
				      RV_QPT_XRC_SEND, RV_QPT_XRC_RECV);
	} else if (peer->qp_type != qp->qp_type) {
		return rv_err(EINVAL, fn, "the peer's QP type %u differs from ours (%u): both sides must be RC or both UC",
			      peer->qp_type, qp->qp_type);
	}
	if (peer->qpn == 0 || peer->qpn > 0xffffff || peer->psn > 0xffffff)
		return rv_err(EINVAL, fn, "the peer endpoint's qpn 0x%x or psn 0x%x is out of range",
			      peer->qpn, peer->psn);
	rc = device_caps(qp, NULL, &pattr, qp->port_num);
	if (rc < 0)
		return rv_err_from_driver(rc, fn, "querying the port");
	if (pattr.link_layer == RV_LINK_LAYER_ETHERNET && gid_is_zero(peer->gid))
		return rv_err(EINVAL, fn, "the peer endpoint has no GID, which an Ethernet port (RoCE, iWARP, software device) needs");
	if (!gid_is_zero(peer->gid)) {
		/* The GID our endpoint advertised (or, if it never gave one, the
		 * one that reaches this peer) is the one we send from. */
		struct rv_gid_want w = {.peer_gid = peer->gid, .peer_type = peer_roce_type(peer)};
		rc = rv_qp_gid_choose(qp, &w, false, fn);
		if (rc == 0 && qp->ctx->dev->kind != RV_DEVICE_SOFT)
			rc = rv_gid_check_peer(qp->ctx, &qp->sgid, peer->gid, w.peer_type, fn);
		if (rc < 0)
			return rc;
	}

	state = current_state(qp);
	if (state == RV_QPS_RESET) {
		rc = rv_qp_to_init(qp, NULL);
		if (rc < 0)
			return rc;
		state = RV_QPS_INIT;
	}
	if (state != RV_QPS_INIT)
		return rv_err(EINVAL, fn, "the QP is in %s; rv_qp_connect starts from RESET or INIT",
			      rv_qp_state_name(state));
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN | RV_QP_PATH_MTU;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.is_global = !gid_is_zero(peer->gid);
	a.ah_attr.hop_limit = 64;
	a.ah_attr.sgid_index = (uint8_t)qp->sgid.gid_index; /* the GID our endpoint advertised */
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = qp->port_num;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.path_mtu = pattr.active_mtu ? pattr.active_mtu : RV_MTU_1024;
	if (peer->mtu >= RV_MTU_256 && peer->mtu < a.path_mtu)
		a.path_mtu = peer->mtu;
	if (route && (route->mask & RV_ROUTE_TRAFFIC_CLASS))
		a.ah_attr.traffic_class = route->traffic_class;
	if (route && (route->mask & RV_ROUTE_SL))
		a.ah_attr.sl = route->sl;
	if (route && (route->mask & RV_ROUTE_FLOW_LABEL))
		a.ah_attr.flow_label = route->flow_label;
	if (route && (route->mask & RV_ROUTE_HOP_LIMIT))
		a.ah_attr.hop_limit = route->hop_limit;
	rc = rv_qp_to_rtr(qp, &a);
	if (rc < 0)
		return rc;
	if (route && (route->mask & RV_ROUTE_ACK_TIMEOUT) && qp->qp_type == RV_QPT_RC) {
		memset(&a, 0, sizeof(a));
		a.mask = RV_QP_TIMEOUT;
		a.timeout = route->ack_timeout;
		return rv_qp_to_rts(qp, &a);
	}
	return rv_qp_to_rts(qp, NULL);
}

/* ---- data path ---- */

/* The complete check of a QP on the data path: live, and not a parent's
 * QP in a fork child (rv_fork_child: one load of a flag set only there,
 * core/fork.c; the pid compare makes no system call). */
static inline int qp_live(const struct rv_qp *qp)
{
	return RV_LIKELY(qp && qp->obj.magic == rv_obj_magic(RV_OBJ_QP) && qp->obj.state == RV_OBJ_LIVE &&
			 !(RV_UNLIKELY(rv_fork_child) && qp->ctx->pid != rv_fork_pid));
}

/* What the post entry points' one-compare checks did not let through: a
 * handle that is not a live QP of this process (n_posted untouched; in a
 * fork child the QPs it made itself come here and are posted), an empty or
 * NULL array. Off the hot path, never inlined into it. */
static __attribute__((noinline)) int post_checked(rv_qp *qp, const void *wrs, size_t n, size_t *n_posted,
						  bool send, const char *func)
{
	if (!qp_live(qp)) {
		/* Nothing was posted: say so, as the driver's refusals do. */
		if (n_posted)
			*n_posted = 0;
		return rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, func);
	}
	if (!wrs || n == 0) {
		if (n_posted)
			*n_posted = 0;
		return n == 0 ? 0 : rv_err(EINVAL, func, "wrs is NULL"); /* here n > 0 means wrs is NULL */
	}
	return send ? qp->post_send(qp, wrs, n, n_posted) : qp->post_recv(qp, wrs, n, n_posted);
}

/* One test of the handle (rv_obj_live_fast: its magic and state as one
 * word, which also fails in a fork child) and of each argument, then a tail
 * call of the entry cached in the QP with the caller's n_posted, NULL
 * included (the driver's entry takes it, or the adapter above). */
RV_EXPORT int rv_qp_post_send(rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	if (RV_UNLIKELY(!rv_obj_live_fast(qp, RV_OBJ_QP) || !wrs))
		return post_checked(qp, wrs, n, n_posted, true, __func__);
	/* One WR, the usual post: an entry that need not test n (and, on a
	 * connected QP of the libibverbs driver, the QP type). */
	if (RV_LIKELY(n == 1))
		return qp->post_send_one(qp, wrs, n, n_posted);
	if (RV_UNLIKELY(n == 0))
		return post_checked(qp, wrs, n, n_posted, true, __func__);
	return qp->post_send(qp, wrs, n, n_posted);
}

RV_EXPORT int rv_qp_post_recv(rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	if (RV_UNLIKELY(!rv_obj_live_fast(qp, RV_OBJ_QP) || !wrs || n == 0))
		return post_checked(qp, wrs, n, n_posted, false, __func__);
	return qp->post_recv(qp, wrs, n, n_posted);
}

static int post_one(rv_qp *qp, uint32_t opcode, const rv_sge *local, uint64_t raddr, uint32_t rkey,
		    uint64_t wr_id, const char *func)
{
	rv_send_wr wr;

	if (RV_UNLIKELY(!qp_live(qp)))
		return rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, func);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = local;
	wr.num_sge = local ? 1 : 0;
	wr.opcode = opcode;
	wr.send_flags = RV_SEND_SIGNALED;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	size_t posted;
	return qp->post_send_one(qp, &wr, 1, &posted);
}

RV_EXPORT int rv_qp_write(rv_qp *qp, const rv_sge *local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id)
{
	return post_one(qp, RV_WR_RDMA_WRITE, local, remote_addr, rkey, wr_id, __func__);
}

RV_EXPORT int rv_qp_read(rv_qp *qp, const rv_sge *local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id)
{
	return post_one(qp, RV_WR_RDMA_READ, local, remote_addr, rkey, wr_id, __func__);
}

RV_EXPORT int rv_qp_send(rv_qp *qp, const rv_sge *local, uint64_t wr_id)
{
	return post_one(qp, RV_WR_SEND, local, 0, 0, wr_id, __func__);
}

RV_EXPORT int rv_qp_recv(rv_qp *qp, const rv_sge *local, uint64_t wr_id)
{
	rv_recv_wr wr = {.wr_id = wr_id, .sg_list = local, .num_sge = local ? 1 : 0, .reserved = 0};
	size_t posted;

	if (RV_UNLIKELY(!qp_live(qp)))
		return rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);
	return qp->post_recv(qp, &wr, 1, &posted);
}
