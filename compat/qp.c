/*
 * soft0's queue pairs and address handles: creation, ibv_modify_qp and
 * ibv_query_qp translated to rverbs, and the addressing rule.
 *
 * Addressing: soft0's port has LID = its TCP (and UDP) port and GID = its
 * IPv4-mapped address, so an ah_attr {dlid, grh.dgid} names the peer. A
 * program that sends no GRH (is_global 0, as ibv_rc_pingpong without -g)
 * gives only the LID: the peer is then taken to listen on this context's own
 * address, which is right for every peer on the same host (soft0 listens on
 * 127.0.0.1 unless RVERBS_SOFT_LISTEN_ADDR says otherwise).
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "passthrough.h"

#define compat_qp_of(q) compat_container_of(q, struct compat_qp, qp)
#define compat_pd_of(p) compat_container_of(p, struct compat_pd, pd)
#define compat_cq_of(c) compat_container_of(c, struct compat_cq, cq)
#define compat_srq_of(s) compat_container_of(s, struct compat_srq, srq)

/* The IBV_QP_* bits rverbs knows (rv_qp_attr_mask has the same values). */
#define COMPAT_QP_ATTR_KNOWN 0x1fffffu

static void ah_to_rv(struct compat_ctx *cc, const struct ibv_ah_attr *in, rv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	if (in->is_global) {
		memcpy(out->dgid, in->grh.dgid.raw, 16);
		out->flow_label = in->grh.flow_label;
		out->sgid_index = in->grh.sgid_index;
		out->hop_limit = in->grh.hop_limit;
		out->traffic_class = in->grh.traffic_class;
	} else {
		memcpy(out->dgid, cc->gid, 16); /* see the top of this file */
		out->hop_limit = 64;
	}
	out->is_global = 1;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

static void ah_from_rv(const rv_ah_attr *in, struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->dgid, 16);
	out->grh.flow_label = in->flow_label;
	out->grh.sgid_index = in->sgid_index;
	out->grh.hop_limit = in->hop_limit;
	out->grh.traffic_class = in->traffic_class;
	out->is_global = in->is_global;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

/* ---- QP ------------------------------------------------------------------- */

static struct compat_qp *create_qp_soft(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_context *c = pd->context;
	struct compat_ctx *cc = compat_ctx_of(c);
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ |
				     RV_QP_INIT_ATTR_RECV_CQ | RV_QP_INIT_ATTR_CAP |
				     RV_QP_INIT_ATTR_SQ_SIG_ALL};
	struct compat_qp *q;
	rv_qp_cap cap;
	int rc;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD)
		return compat_fail_null(-EOPNOTSUPP); /* no raw packet, XRC or driver QPs */
	if (!attr->send_cq || !attr->recv_cq || attr->send_cq->context != c ||
	    attr->recv_cq->context != c || (attr->srq && attr->srq->context != c))
		return compat_fail_null(-EINVAL);
	a.qp_type = attr->qp_type; /* IBV_QPT_* == RV_QPT_* */
	a.sq_sig_all = attr->sq_sig_all ? 1 : 0;
	a.send_cq = compat_cq_of(attr->send_cq)->rv;
	a.recv_cq = compat_cq_of(attr->recv_cq)->rv;
	a.cap.max_send_wr = attr->cap.max_send_wr;
	a.cap.max_recv_wr = attr->cap.max_recv_wr;
	a.cap.max_send_sge = attr->cap.max_send_sge;
	a.cap.max_recv_sge = attr->cap.max_recv_sge;
	a.cap.max_inline_data = attr->cap.max_inline_data;
	if (attr->srq) {
		a.mask |= RV_QP_INIT_ATTR_SRQ;
		a.srq = compat_srq_of(attr->srq)->rv;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return compat_fail_null(-ENOMEM);
	rc = rv_qp_new(compat_pd_of(pd)->rv, &a, &q->rv);
	if (rc == 0)
		rc = rv_qp_get_cap(q->rv, &cap);
	if (rc < 0) {
		rv_qp_unref(q->rv);
		free(q);
		return compat_fail_null(rc);
	}
	/* libibverbs writes back what the device gave. */
	attr->cap.max_send_wr = cap.max_send_wr;
	attr->cap.max_recv_wr = attr->srq ? 0 : cap.max_recv_wr;
	attr->cap.max_send_sge = cap.max_send_sge;
	attr->cap.max_recv_sge = cap.max_recv_sge;
	attr->cap.max_inline_data = cap.max_inline_data;
	q->qp.context = c;
	q->qp.qp_context = attr->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.srq = attr->srq;
	q->qp.qp_num = rv_qp_num(q->rv);
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = attr->qp_type;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	pthread_mutex_lock(&cc->lock);
	q->next = cc->qps;
	cc->qps = q;
	compat_pd_of(pd)->users++;
	compat_cq_of(attr->send_cq)->users++;
	compat_cq_of(attr->recv_cq)->users++;
	if (attr->srq)
		compat_srq_of(attr->srq)->users++;
	pthread_mutex_unlock(&cc->lock);
	return q;
}

COMPAT_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!pd || !pd->context || !attr)
		return compat_fail_null(-EINVAL);
	struct compat_qp *q;

	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_create_qp, pd, attr);
	if (attr->qp_type == IBV_QPT_XRC_SEND) {
		/* verbs.h's ibv_create_qp_ex comes here when only the PD is set. */
		struct ibv_qp_init_attr_ex ex = {.qp_context = attr->qp_context, .send_cq = attr->send_cq,
						 .recv_cq = attr->recv_cq, .srq = attr->srq, .cap = attr->cap,
						 .qp_type = attr->qp_type, .sq_sig_all = attr->sq_sig_all,
						 .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd};
		struct ibv_qp *x = compat_create_xrc_qp(pd->context, &ex);

		if (x)
			attr->cap = ex.cap;
		return x;
	}
	q = create_qp_soft(pd, attr);
	return q ? &q->qp : NULL;
}

struct ibv_qp *compat_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr base;
	struct compat_qp *q;
	int rc;

	if (!attr)
		return compat_fail_null(-EINVAL);
	if (attr->qp_type == IBV_QPT_XRC_SEND || attr->qp_type == IBV_QPT_XRC_RECV)
		return compat_create_xrc_qp(c, attr); /* xrc.c */
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != c)
		return compat_fail_null(-EINVAL);
	/* Create flags, TSO, RSS, source QPNs: not on soft0 (XRC: xrc.c). A
	 * mask bit whose field asks for nothing (no create flag, a TSO header
	 * of 0) asks for nothing soft0 lacks: pyverbs' tests set them so. */
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_MAX_TSO_HEADER) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) && attr->max_tso_header))
		return compat_fail_null(-EOPNOTSUPP);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		rc = compat_qp_ex_check(attr->send_ops_flags);
		if (rc < 0)
			return compat_fail_null(rc);
	}
	memset(&base, 0, sizeof(base));
	base.qp_context = attr->qp_context;
	base.send_cq = attr->send_cq;
	base.recv_cq = attr->recv_cq;
	base.srq = attr->srq;
	base.cap = attr->cap;
	base.qp_type = attr->qp_type;
	base.sq_sig_all = attr->sq_sig_all;
	q = create_qp_soft(attr->pd, &base);
	if (!q)
		return NULL;
	attr->cap = base.cap;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		rc = compat_qp_ex_init(q);
		if (rc < 0) {
			ibv_destroy_qp(&q->qp);
			return compat_fail_null(rc);
		}
		q->ex.comp_mask = 0;
	}
	return &q->qp;
}

COMPAT_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	rv_qp_attr a;
	int rc;

	if (!qp || !qp->context || !attr)
		return errno = EINVAL;
	if (!compat_is_soft(qp->context))
		COMPAT_REAL_INT(ibv_modify_qp, qp, attr, mask);
	if ((unsigned int)mask & ~COMPAT_QP_ATTR_KNOWN)
		return errno = EOPNOTSUPP; /* rate limits and later attributes */
	memset(&a, 0, sizeof(a));
	a.mask = (uint32_t)mask; /* IBV_QP_* == RV_QP_* */
	a.qp_state = attr->qp_state;
	a.cur_qp_state = attr->cur_qp_state;
	a.path_mtu = attr->path_mtu;
	a.qkey = attr->qkey;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.dest_qp_num = attr->dest_qp_num;
	a.qp_access_flags = (uint32_t)attr->qp_access_flags;
	a.cap.max_send_wr = attr->cap.max_send_wr;
	a.cap.max_recv_wr = attr->cap.max_recv_wr;
	a.cap.max_send_sge = attr->cap.max_send_sge;
	a.cap.max_recv_sge = attr->cap.max_recv_sge;
	a.cap.max_inline_data = attr->cap.max_inline_data;
	if (mask & IBV_QP_AV) {
		ah_to_rv(compat_ctx_of(qp->context), &attr->ah_attr, &a.ah_attr);
		if (mask & IBV_QP_DEST_QPN)
			a.ah_attr.dlid = compat_peer_lid(compat_ctx_of(qp->context), a.ah_attr.dlid,
							 a.ah_attr.dgid, attr->dest_qp_num);
	}
	a.pkey_index = attr->pkey_index;
	a.en_sqd_async_notify = attr->en_sqd_async_notify;
	a.max_rd_atomic = attr->max_rd_atomic;
	a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a.min_rnr_timer = attr->min_rnr_timer;
	a.port_num = attr->port_num;
	a.timeout = attr->timeout;
	a.retry_cnt = attr->retry_cnt;
	a.rnr_retry = attr->rnr_retry;
	rc = rv_qp_modify(compat_qp_of(qp)->rv, &a);
	if (rc < 0)
		return errno = -rc;
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

COMPAT_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			       struct ibv_qp_init_attr *init_attr)
{
	rv_qp_attr a;
	int rc;

	if (!qp || !qp->context || !attr || !init_attr)
		return errno = EINVAL;
	if (!compat_is_soft(qp->context))
		COMPAT_REAL_INT(ibv_query_qp, qp, attr, mask, init_attr);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_ATTR_ALL;
	rc = rv_qp_query(compat_qp_of(qp)->rv, &a);
	if (rc < 0)
		return errno = -rc;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)a.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)a.cur_qp_state;
	attr->path_mtu = (enum ibv_mtu)a.path_mtu;
	attr->qkey = a.qkey;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	attr->dest_qp_num = a.dest_qp_num;
	attr->qp_access_flags = (unsigned int)a.qp_access_flags;
	attr->cap.max_send_wr = a.cap.max_send_wr;
	attr->cap.max_recv_wr = qp->srq ? 0 : a.cap.max_recv_wr;
	attr->cap.max_send_sge = a.cap.max_send_sge;
	attr->cap.max_recv_sge = a.cap.max_recv_sge;
	attr->cap.max_inline_data = a.cap.max_inline_data;
	ah_from_rv(&a.ah_attr, &attr->ah_attr);
	attr->pkey_index = a.pkey_index;
	attr->en_sqd_async_notify = a.en_sqd_async_notify;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->port_num = a.port_num;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = attr->cap;
	init_attr->qp_type = qp->qp_type;
	qp->state = attr->qp_state;
	return 0;
}

COMPAT_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct compat_ctx *cc;
	struct compat_qp *q, **pp;
	bool shared;
	int rc;

	if (!qp || !qp->context)
		return errno = EINVAL;
	if (!compat_is_soft(qp->context))
		COMPAT_REAL_INT(ibv_destroy_qp, qp);
	q = compat_qp_of(qp);
	cc = compat_ctx_of(qp->context);
	compat_linger_reap(cc, false);
	/* An XRC target opened again (ibv_open_qp, xrc.c) lives until its last handle goes. */
	pthread_mutex_lock(&cc->lock);
	shared = false;
	for (struct compat_qp *o = cc->qps; o && !shared; o = o->next)
		shared = o != q && o->rv == q->rv;
	pthread_mutex_unlock(&cc->lock);
	if (shared) {
		rv_qp_unref(q->rv);
	} else if (!compat_linger_qp(cc, q->rv, qp->qp_type)) {
		rc = rv_qp_close(q->rv);
		if (rc < 0)
			return errno = -rc;
		rv_qp_unref(q->rv);
	}
	pthread_mutex_lock(&cc->lock);
	for (pp = &cc->qps; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	/* An XRC target has no PD or CQ, an XRC initiator maybe no receive CQ (xrc.c). */
	if (qp->pd)
		compat_pd_of(qp->pd)->users--;
	if (qp->send_cq)
		compat_cq_of(qp->send_cq)->users--;
	if (qp->recv_cq)
		compat_cq_of(qp->recv_cq)->users--;
	if (qp->srq)
		compat_srq_of(qp->srq)->users--;
	pthread_mutex_unlock(&cc->lock);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	compat_qp_ex_free(q);
	free(q);
	return 0;
}

struct ibv_qp *compat_find_qp(struct compat_ctx *cc, const rv_qp *rv)
{
	for (struct compat_qp *q = cc->qps; q; q = q->next)
		if (q->rv == rv)
			return &q->qp;
	return NULL;
}

COMPAT_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (qp && qp->context && compat_is_soft(qp->context)) {
		struct compat_qp *q = compat_qp_of(qp);

		/* As libibverbs: only a QP created with send operations has one. */
		return q->wr ? &q->ex : compat_fail_null(-EINVAL);
	}
	COMPAT_REAL_PTR(ibv_qp_to_qp_ex, qp);
}

COMPAT_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (qp && qp->context && compat_is_soft(qp->context)) {
		rv_ece e;
		int rc;

		if (!ece)
			return errno = EINVAL;
		rc = rv_qp_query_ece(compat_qp_of(qp)->rv, &e); /* soft0: EOPNOTSUPP */
		if (rc < 0)
			return errno = -rc;
		ece->vendor_id = e.vendor_id;
		ece->options = e.options;
		ece->comp_mask = e.comp_mask;
		return 0;
	}
	COMPAT_REAL_INT(ibv_query_ece, qp, ece);
}

COMPAT_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (qp && qp->context && compat_is_soft(qp->context)) {
		rv_ece e;
		int rc;

		if (!ece)
			return errno = EINVAL;
		e.vendor_id = ece->vendor_id;
		e.options = ece->options;
		e.comp_mask = ece->comp_mask;
		rc = rv_qp_set_ece(compat_qp_of(qp)->rv, &e); /* soft0: EOPNOTSUPP */
		return rc < 0 ? (errno = -rc) : 0;
	}
	COMPAT_REAL_INT(ibv_set_ece, qp, ece);
}

COMPAT_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	if (qp && qp->context && compat_is_soft(qp->context))
		return 0; /* soft0 places data as it arrives: no in-order guarantee promised */
	return compat_real.ibv_query_qp_data_in_order ? compat_real.ibv_query_qp_data_in_order(qp, op, flags) : 0;
}

COMPAT_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (qp && qp->context && compat_is_soft(qp->context)) {
		/* soft0 joins the IP multicast group the GID names (docs/ud.md). */
		int rc = gid ? rv_qp_attach_mcast(compat_qp_of(qp)->rv, gid->raw, lid) : -EINVAL;
		return rc < 0 ? (errno = -rc) : 0;
	}
	COMPAT_REAL_INT(ibv_attach_mcast, qp, gid, lid);
}

COMPAT_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (qp && qp->context && compat_is_soft(qp->context)) {
		int rc = gid ? rv_qp_detach_mcast(compat_qp_of(qp)->rv, gid->raw, lid) : -EINVAL;
		return rc < 0 ? (errno = -rc) : 0;
	}
	COMPAT_REAL_INT(ibv_detach_mcast, qp, gid, lid);
}

/* ---- address handles ------------------------------------------------------ */

#define compat_ah_of(a) compat_container_of(a, struct compat_ah, ah)

static struct ibv_ah *ah_soft(struct ibv_pd *pd, rv_ah *rv, const rv_ah_attr *a)
{
	struct compat_ah *h = calloc(1, sizeof(*h));

	if (!h) {
		rv_ah_unref(rv);
		return compat_fail_null(-ENOMEM);
	}
	h->rv = rv;
	h->attr = *a;
	h->own_port = a->dlid == compat_ctx_of(pd->context)->lid &&
		      memcmp(a->dgid, compat_ctx_of(pd->context)->gid, 16) == 0;
	pthread_mutex_init(&h->lock, NULL);
	h->ah.context = pd->context;
	h->ah.pd = pd;
	compat_use(pd->context, &compat_pd_of(pd)->users, 1);
	return &h->ah;
}

COMPAT_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	rv_ah_attr a;
	rv_ah *rv = NULL;
	int rc;

	if (!pd || !pd->context || !attr)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_create_ah, pd, attr);
	/* soft0's port is Ethernet (RoCE v2 for UD): like every RoCE device
	 * (the kernel's rdma_check_ah_attr, so rxe too), an AH without a GRH
	 * is refused. ibv_ud_pingpong needs -g there. */
	if (!attr->is_global)
		return compat_fail_null(-EINVAL);
	ah_to_rv(compat_ctx_of(pd->context), attr, &a);
	rc = rv_ah_new(compat_pd_of(pd)->rv, &a, &rv);
	if (rc < 0)
		return compat_fail_null(rc);
	return ah_soft(pd, rv, &a);
}

COMPAT_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct compat_ah *h;
	int rc;

	if (!ah || !ah->context)
		return errno = EINVAL;
	if (!compat_is_soft(ah->context))
		COMPAT_REAL_INT(ibv_destroy_ah, ah);
	h = compat_ah_of(ah);
	rc = rv_ah_close(h->rv);
	if (rc < 0)
		return errno = -rc;
	compat_use(ah->context, &compat_pd_of(ah->pd)->users, -1);
	rv_ah_unref(h->rv);
	if (h->peer) {
		rv_ah_close(h->peer);
		rv_ah_unref(h->peer);
	}
	pthread_mutex_destroy(&h->lock);
	free(h);
	return 0;
}

/* The sender's GID from the 40 bytes before a UD payload: a GRH, or (RoCE v2
 * over IPv4) 20 unused bytes and the IPv4 header. */
static void grh_source_gid(const struct ibv_grh *grh, uint8_t gid[16])
{
	const uint8_t *b = (const uint8_t *)grh;

	if ((b[20] >> 4) == 4) {
		memset(gid, 0, 10);
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, b + 20 + 12, 4);
	} else {
		memcpy(gid, grh->sgid.raw, 16);
	}
}

COMPAT_EXPORT int ibv_init_ah_from_wc(struct ibv_context *c, uint8_t port_num, struct ibv_wc *wc,
				      struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	if (!c || !wc || !ah_attr)
		return compat_fail_errno(-EINVAL);
	if (!compat_is_soft(c)) {
		int rc;

		if (!compat_real.ibv_init_ah_from_wc)
			return compat_fail_errno(-EINVAL);
		rc = compat_real.ibv_init_ah_from_wc(c, port_num, wc, grh, ah_attr);
		if (rc)
			compat_real_errno();
		return rc;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		if (!grh)
			return compat_fail_errno(-EINVAL);
		ah_attr->is_global = 1;
		grh_source_gid(grh, ah_attr->grh.dgid.raw);
		ah_attr->grh.hop_limit = 0xff;
	}
	return 0;
}

COMPAT_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						   struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (!pd || !pd->context || !wc)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_create_ah_from_wc, pd, wc, grh, port_num);
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

/*
 * The rverbs AH a UD send to remote_qpn goes through. An AH naming this
 * context's own port may mean another soft0 context of the process (see
 * compat_peer_lid): that one's AH is made at the first send to it and kept
 * (one peer context per AH, as pyverbs' tests use them). Only such AHs pay
 * here: a lookup of the destination QP under the process's context lock on
 * every send (a same-process test's cost, never a program's between hosts).
 */
rv_ah *compat_ah_rv(struct ibv_ah *ah, uint32_t remote_qpn)
{
	struct compat_ah *h = compat_ah_of(ah);
	struct compat_ctx *cc = compat_ctx_of(ah->context);
	rv_ah *rv = h->rv;
	uint16_t lid;

	if (!h->own_port)
		return rv;
	lid = compat_peer_lid(cc, h->attr.dlid, h->attr.dgid, remote_qpn);
	if (lid == h->attr.dlid)
		return rv;
	pthread_mutex_lock(&h->lock);
	if (!h->peer) {
		rv_ah_attr a = h->attr;

		a.dlid = lid;
		if (rv_ah_new(compat_pd_of(ah->pd)->rv, &a, &h->peer) == 0)
			h->peer_lid = lid;
		else
			h->peer = NULL;
	}
	if (h->peer && h->peer_lid == lid)
		rv = h->peer;
	pthread_mutex_unlock(&h->lock);
	return rv;
}
