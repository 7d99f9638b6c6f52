/*
 * The verbs side of rdma_cm on soft0: the shared soft0 context, QPs, CQs
 * and SRQs created through an id (rdma_create_qp, rdma_create_ep,
 * rdma_create_srq), the QP transitions the exchange drives, the endpoint
 * calls (rdma_create_ep, rdma_get_request), rdma_getaddrinfo, the device
 * list, options, multicast groups (joined by soft0's own means: an IP
 * multicast group, rv_qp_attach_mcast), and what soft0 has no use for (ECE).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

static struct ibv_context *soft_ctx;
static int soft_ctx_err;
static pthread_once_t soft_once = PTHREAD_ONCE_INIT;

static int fail(int err)
{
	errno = err;
	return -1;
}

static void open_soft(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	soft_ctx_err = ENODEV;
	for (int i = 0; list && list[i]; i++) {
		if (strcmp(ibv_get_device_name(list[i]), "soft0") != 0)
			continue;
		soft_ctx = ibv_open_device(list[i]);
		if (!soft_ctx)
			soft_ctx_err = errno;
		break;
	}
	ibv_free_device_list(list);
}

struct ibv_context *cm_verbs(void)
{
	pthread_once(&soft_once, open_soft);
	if (!soft_ctx)
		errno = soft_ctx_err;
	return soft_ctx;
}

/* The device's PD that every id gets with its device (id->pd), as
 * librdmacm gives each id its device's PD: rdma_create_qp with no PD uses
 * it, and programs (pyverbs) create their own QPs on it. Never freed, as
 * the shared context. */
static pthread_mutex_t pd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_pd *soft_pd;

struct ibv_pd *cm_pd(void)
{
	struct ibv_context *c = cm_verbs();

	if (!c)
		return NULL;
	pthread_mutex_lock(&pd_lock);
	if (!soft_pd)
		soft_pd = ibv_alloc_pd(c);
	pthread_mutex_unlock(&pd_lock);
	return soft_pd;
}

CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = cm_verbs();
	if (num_devices)
		*num_devices = list[0] ? 1 : 0;
	return list;
}

CM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- QP transitions ---------------------------------------------------------- */

void cm_fill_local(struct cm_id *c, struct cm_msg *m)
{
	struct ibv_port_attr port;
	union ibv_gid gid;

	if (!c->psn)
		c->psn = cm_random_psn();
	m->qpn = c->id.qp ? c->id.qp->qp_num : 0;
	m->psn = c->psn;
	if (c->id.verbs && ibv_query_port(c->id.verbs, 1, &port) == 0)
		m->lid = port.lid;
	if (c->id.verbs && ibv_query_gid(c->id.verbs, 1, 0, &gid) == 0)
		memcpy(m->gid, gid.raw, 16);
}

int cm_qp_to_init(struct cm_id *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	int rc;

	if (c->id.qp_type == IBV_QPT_UD) {
		a.qkey = RDMA_UDP_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		/* What the peer may do is bounded by its keys and the MRs'
		 * access; the kernel's rdma_cm grants the same. */
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    (c->id.qp_type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	rc = ibv_modify_qp(c->id.qp, &a, mask);
	if (rc)
		return fail(rc);
	if (c->id.qp_type != IBV_QPT_UD)
		return 0;
	/* A UD QP is ready at once (librdmacm moves it to RTS). */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	rc = ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE);
	if (rc)
		return fail(rc);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = cm_random_psn();
	rc = ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return rc ? fail(rc) : 0;
}

static uint8_t clamp_rd(uint8_t v)
{
	if (v == 0)
		return 1;
	return v > 16 ? 16 : v;
}

int cm_qp_to_rtr_rts(struct cm_id *c, const struct cm_msg *peer, uint8_t rd_atomic_out,
		     uint8_t rd_atomic_in)
{
	struct ibv_qp_attr a;
	struct ibv_port_attr port;
	int rc;

	if (!c->id.qp || c->id.qp_type == IBV_QPT_UD)
		return 0;
	if (ibv_query_port(c->id.verbs, 1, &port))
		return -1;
	if (!c->psn)
		c->psn = cm_random_psn();
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = port.active_mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = clamp_rd(rd_atomic_in);
	a.min_rnr_timer = 12;
	rc = ibv_modify_qp(c->id.qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN |
				   (c->id.qp_type == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC |
									  IBV_QP_MIN_RNR_TIMER
								  : 0));
	if (rc)
		return fail(rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->psn;
	a.timeout = c->ack_timeout ? c->ack_timeout : 14;
	a.retry_cnt = 7;
	a.rnr_retry = peer->rnr_retry_count ? peer->rnr_retry_count : 7;
	a.max_rd_atomic = clamp_rd(rd_atomic_out);
	rc = ibv_modify_qp(c->id.qp, &a,
			   IBV_QP_STATE | IBV_QP_SQ_PSN |
				   (c->id.qp_type == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
									  IBV_QP_RNR_RETRY |
									  IBV_QP_MAX_QP_RD_ATOMIC
								  : 0));
	return rc ? fail(rc) : 0;
}

CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct cm_id *c;
	struct ibv_port_attr port;

	if (!id || !qp_attr || !qp_attr_mask || !id->verbs)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real)
		return cm_real.rdma_init_qp_attr(c->real, qp_attr, qp_attr_mask) != 0 ? cm_real_fail() : 0;
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		memset(qp_attr, 0, sizeof(*qp_attr));
		qp_attr->qp_state = IBV_QPS_INIT;
		qp_attr->port_num = 1;
		if (id->qp_type == IBV_QPT_UD) {
			qp_attr->qkey = RDMA_UDP_QKEY;
			*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else {
			qp_attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
			*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (c->state < CM_CONNECTING || ibv_query_port(id->verbs, 1, &port))
			return fail(EINVAL);
		memset(qp_attr, 0, sizeof(*qp_attr));
		qp_attr->qp_state = IBV_QPS_RTR;
		qp_attr->path_mtu = port.active_mtu;
		qp_attr->dest_qp_num = c->peer.qpn;
		qp_attr->rq_psn = c->peer.psn;
		qp_attr->ah_attr.is_global = 1;
		memcpy(qp_attr->ah_attr.grh.dgid.raw, c->peer.gid, 16);
		qp_attr->ah_attr.grh.hop_limit = 64;
		qp_attr->ah_attr.dlid = c->peer.lid;
		qp_attr->ah_attr.port_num = 1;
		qp_attr->max_dest_rd_atomic = clamp_rd(c->peer.initiator_depth);
		qp_attr->min_rnr_timer = 12;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		if (!c->psn)
			c->psn = cm_random_psn();
		memset(qp_attr, 0, sizeof(*qp_attr));
		qp_attr->qp_state = IBV_QPS_RTS;
		qp_attr->sq_psn = c->psn;
		qp_attr->timeout = c->ack_timeout ? c->ack_timeout : 14;
		qp_attr->retry_cnt = 7;
		qp_attr->rnr_retry = 7;
		qp_attr->max_rd_atomic = clamp_rd(c->peer.responder_resources);
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		return fail(EINVAL);
	}
}

/* ---- QPs, CQs and SRQs through an id ------------------------------------------ */

static int make_cq(struct rdma_cm_id *id, int cqe, struct ibv_comp_channel **ch, struct ibv_cq **cq)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(id->verbs, cqe > 0 ? cqe : 1, id, *ch, 0);
	if (!*cq) {
		int err = errno;

		ibv_destroy_comp_channel(*ch);
		*ch = NULL;
		return fail(err);
	}
	return 0;
}

static void free_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

CM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct cm_id *c;
	struct ibv_qp_init_attr a;
	bool made = false;
	int err;

	if (!id || !attr || !id->verbs)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real) {
		/* On the real device: the real PD, CQs and QP (the system's). */
		if (cm_real.rdma_create_qp(c->real, pd, attr) != 0)
			return cm_real_fail();
		cm_real_sync(c);
		return 0;
	}
	if (!pd)
		pd = id->pd;
	if (!pd || pd->context != id->verbs)
		return fail(EINVAL);
	/* The port space says datagram or connected; RC or UC is the QP's. */
	if ((attr->qp_type == IBV_QPT_UD) != (id->qp_type == IBV_QPT_UD) ||
	    (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD))
		return fail(EINVAL);
	id->qp_type = attr->qp_type;
	a = *attr;
	/* Like librdmacm: CQs the caller did not give are made here, each with
	 * its completion channel, for rdma_get_send_comp/rdma_get_recv_comp. */
	if (!a.send_cq) {
		if (make_cq(id, (int)a.cap.max_send_wr, &id->send_cq_channel, &id->send_cq) < 0)
			return -1;
		a.send_cq = id->send_cq;
		made = true;
	}
	if (!a.recv_cq) {
		if (a.srq && id->srq == a.srq && id->recv_cq) {
			a.recv_cq = id->recv_cq;
		} else if (make_cq(id, (int)a.cap.max_recv_wr, &id->recv_cq_channel, &id->recv_cq) < 0) {
			err = errno;
			if (made)
				free_cqs(id);
			return fail(err);
		}
		a.recv_cq = id->recv_cq;
		made = true;
	}
	id->qp = ibv_create_qp(pd, &a);
	if (!id->qp) {
		err = errno;
		if (made)
			free_cqs(id);
		return fail(err);
	}
	c->cm_made_cqs = made;
	if (cm_qp_to_init(c) < 0) {
		err = errno;
		ibv_destroy_qp(id->qp);
		id->qp = NULL;
		if (made)
			free_cqs(id);
		return fail(err);
	}
	attr->cap = a.cap;
	return 0;
}

CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr a;
	int rc;

	if (!id || !attr)
		return fail(EINVAL);
	if (cm_id_of(id)->real) {
		if (cm_real.rdma_create_qp_ex(cm_id_of(id)->real, attr) != 0)
			return cm_real_fail();
		cm_real_sync(cm_id_of(id));
		return 0;
	}
	if (attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
		return fail(EOPNOTSUPP); /* extended QPs are not offered on soft0 */
	memset(&a, 0, sizeof(a));
	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	rc = rdma_create_qp(id, (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL, &a);
	if (rc == 0)
		attr->cap = a.cap;
	return rc;
}

CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cm_id *c;

	if (!id || !id->qp)
		return;
	c = cm_id_of(id);
	if (c->real) {
		cm_real.rdma_destroy_qp(c->real);
		cm_real_sync(c);
		return;
	}
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	if (c->cm_made_cqs)
		free_cqs(id);
	c->cm_made_cqs = false;
}

CM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (id && cm_id_of(id)->real)
		return fail(EOPNOTSUPP); /* docs/compat.md: not passed through */
	if (!id || !attr || !id->verbs)
		return fail(EINVAL);
	if (!pd)
		pd = id->pd;
	if (!pd)
		return fail(EINVAL);
	if (!id->recv_cq && make_cq(id, (int)attr->attr.max_wr, &id->recv_cq_channel, &id->recv_cq) < 0)
		return -1;
	id->srq = ibv_create_srq(pd, attr);
	return id->srq ? 0 : -1;
}

CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;

	if (id && cm_id_of(id)->real)
		return fail(EOPNOTSUPP); /* docs/compat.md: not passed through */
	if (!id || !attr)
		return fail(EINVAL);
	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
					  IBV_SRQ_INIT_ATTR_CQ))
		return fail(EOPNOTSUPP);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC)
		return fail(EOPNOTSUPP); /* XRC and tag matching are not on soft0 */
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) && attr->cq && !id->recv_cq)
		id->recv_cq = attr->cq;
	if (rdma_create_srq(id, (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : NULL, &a) < 0)
		return -1;
	attr->attr = a.attr;
	return 0;
}

CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	if (!id->qp && id->recv_cq && id->recv_cq != id->send_cq) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = NULL;
		if (id->recv_cq_channel)
			ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = NULL;
	}
}

/* ---- endpoints (rdma_verbs.h's synchronous calls) ---------------------------- */

CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	int err;

	if (!id || !res)
		return fail(EINVAL);
	if (rdma_create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space) < 0)
		return -1;
	if (res->ai_flags & RAI_PASSIVE) {
		if (!res->ai_src_addr || rdma_bind_addr(cid, res->ai_src_addr) < 0)
			goto fail_id;
		/* Requests to this listener get QPs like this one. */
		if (qp_init_attr) {
			struct cm_id *c = cm_id_of(cid);

			c->ep_qp_attr = malloc(sizeof(*qp_init_attr));
			if (!c->ep_qp_attr) {
				errno = ENOMEM;
				goto fail_id;
			}
			*c->ep_qp_attr = *qp_init_attr;
			if (res->ai_qp_type)
				c->ep_qp_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
			c->ep_pd = pd;
		}
		*id = cid;
		return 0;
	}
	if (!res->ai_dst_addr ||
	    rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000) < 0 ||
	    rdma_resolve_route(cid, 2000) < 0)
		goto fail_id;
	if (qp_init_attr) {
		/* As librdmacm: the QP's type is the address's. */
		qp_init_attr->qp_type = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type : cid->qp_type;
		if (!pd) {
			pd = cid->pd = ibv_alloc_pd(cid->verbs);
			if (!pd)
				goto fail_id;
		}
		if (rdma_create_qp(cid, pd, qp_init_attr) < 0)
			goto fail_id;
	}
	*id = cid;
	return 0;
fail_id:
	err = errno;
	rdma_destroy_ep(cid);
	return fail(err);
}

CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	struct cm_id *c;
	struct ibv_pd *own_pd;

	if (!id)
		return;
	c = cm_id_of(id);
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	/* Only a PD rdma_create_ep allocated is the endpoint's (a child of a
	 * listener shares its listener's). */
	own_pd = (!c->ep_pd && !c->peer_listener && id->pd != soft_pd) ? id->pd : NULL;
	if (!c->peer_listener)
		free(c->ep_qp_attr);
	rdma_destroy_id(id);
	if (own_pd)
		ibv_dealloc_pd(own_pd);
}

CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id *l, *c;
	struct rdma_cm_id *child = NULL;
	int err;

	if (!listen || !id)
		return fail(EINVAL);
	l = cm_id_of(listen);
	if (!l->sync)
		return fail(EINVAL); /* an id with a channel gets requests as events */
	if (cm_wait(l, RDMA_CM_EVENT_CONNECT_REQUEST, &child) < 0)
		return -1;
	c = cm_id_of(child);
	/* The child is synchronous too, with a channel of its own. */
	if (rdma_migrate_id(child, NULL) < 0)
		goto fail_child;
	if (l->ep_qp_attr) {
		struct ibv_qp_init_attr a = *l->ep_qp_attr;
		struct ibv_pd *pd = l->ep_pd;

		if (a.qp_type != IBV_QPT_RC && a.qp_type != IBV_QPT_UC && a.qp_type != IBV_QPT_UD)
			a.qp_type = child->qp_type;

		if (!pd) {
			pd = child->pd = ibv_alloc_pd(child->verbs);
			if (!pd)
				goto fail_child;
			c->ep_pd = NULL;
		}
		if (rdma_create_qp(child, pd, &a) < 0)
			goto fail_child;
	}
	*id = child;
	return 0;
fail_child:
	err = errno;
	rdma_reject(child, NULL, 0);
	rdma_destroy_ep(child);
	return fail(err);
}

/* ---- rdma_getaddrinfo ------------------------------------------------------------ */

static int addrinfo_one(const struct addrinfo *ai, const struct rdma_addrinfo *hints,
			struct rdma_addrinfo **ret)
{
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));
	struct sockaddr *copy;

	if (!r)
		return -ENOMEM;
	copy = malloc(ai->ai_addrlen);
	if (!copy) {
		free(r);
		return -ENOMEM;
	}
	memcpy(copy, ai->ai_addr, ai->ai_addrlen);
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space :
			   (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
	if (r->ai_flags & RAI_PASSIVE) {
		r->ai_src_addr = copy;
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = copy;
		r->ai_dst_len = ai->ai_addrlen;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = malloc(hints->ai_src_len);
			if (!r->ai_src_addr) {
				free(copy);
				free(r);
				return -ENOMEM;
			}
			memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
		}
	}
	*ret = r;
	return 0;
}

/* Neither node nor service: the answer is the hints' own addresses, as
 * librdmacm's (pyverbs' AddrInfo(src=...) resolves src first and then asks
 * this way with it as ai_src_addr). */
static int addrinfo_from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo **ret)
{
	const struct sockaddr *any = hints->ai_src_addr ? hints->ai_src_addr : hints->ai_dst_addr;
	struct rdma_addrinfo *r;

	if (any->sa_family != AF_INET && any->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if ((hints->ai_src_addr && hints->ai_src_addr->sa_family == AF_INET6 &&
	     hints->ai_src_len < sizeof(struct sockaddr_in6)) ||
	    (hints->ai_dst_addr && hints->ai_dst_addr->sa_family == AF_INET6 &&
	     hints->ai_dst_len < sizeof(struct sockaddr_in6)))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ai_flags = hints->ai_flags;
	r->ai_family = any->sa_family;
	r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints->ai_port_space ? hints->ai_port_space :
			   (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
	if (hints->ai_src_addr) {
		r->ai_src_addr = malloc(hints->ai_src_len);
		if (!r->ai_src_addr)
			goto nomem;
		memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
		r->ai_src_len = hints->ai_src_len;
	}
	if (hints->ai_dst_addr) {
		r->ai_dst_addr = malloc(hints->ai_dst_len);
		if (!r->ai_dst_addr)
			goto nomem;
		memcpy(r->ai_dst_addr, hints->ai_dst_addr, hints->ai_dst_len);
		r->ai_dst_len = hints->ai_dst_len;
	}
	*ret = r;
	return 0;
nomem:
	free(r->ai_src_addr);
	free(r);
	return -ENOMEM;
}

CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo h = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc;

	if (!res)
		return fail(EINVAL);
	if (!node && !service) {
		if (!hints || (!hints->ai_src_addr && !hints->ai_dst_addr) ||
		    (hints->ai_src_addr && hints->ai_src_len < sizeof(struct sockaddr_in)) ||
		    (hints->ai_dst_addr && hints->ai_dst_len < sizeof(struct sockaddr_in)))
			return fail(EINVAL);
		rc = addrinfo_from_hints(hints, res);
		return rc < 0 ? fail(-rc) : 0;
	}
	if (hints && hints->ai_family && hints->ai_family != AF_INET && hints->ai_family != AF_INET6)
		return fail(EAFNOSUPPORT); /* AF_IB: no InfiniBand subnet on soft0 */
	h.ai_family = hints ? hints->ai_family : AF_UNSPEC;
	if (hints && (hints->ai_flags & RAI_PASSIVE))
		h.ai_flags |= AI_PASSIVE;
	if (hints && (hints->ai_flags & RAI_NUMERICHOST))
		h.ai_flags |= AI_NUMERICHOST;
	rc = getaddrinfo(node, service, &h, &ai);
	if (rc)
		return fail(rc == EAI_SYSTEM ? errno : (rc == EAI_MEMORY ? ENOMEM : EADDRNOTAVAIL));
	rc = addrinfo_one(ai, hints, res);
	freeaddrinfo(ai);
	return rc < 0 ? fail(-rc) : 0;
}

CM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

/* ---- options and what soft0 has no use for ------------------------------------- */

CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	if (!id || (optlen && !optval))
		return fail(EINVAL);
	if (cm_id_of(id)->real)
		return cm_real.rdma_set_option(cm_id_of(id)->real, level, optname, optval, optlen) != 0
			       ? cm_real_fail()
			       : 0;
	/* ACK timeout: the QP's timeout attribute when the id moves it to RTS
	 * (as librdmacm), a uint8_t below 32. */
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
		if (optlen != sizeof(uint8_t) || *(const uint8_t *)optval > 31)
			return fail(EINVAL);
		cm_id_of(id)->ack_timeout = *(const uint8_t *)optval;
		return 0;
	}
	/* The other ID options are about the kernel's path and port choices
	 * (TOS, address reuse, IPv6-only): soft0's exchange follows the
	 * socket's defaults, so they are accepted and change nothing. */
	if (level == RDMA_OPTION_ID &&
	    (optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_REUSEADDR ||
	     optname == RDMA_OPTION_ID_AFONLY))
		return 0;
	return fail(ENOSYS); /* as librdmacm says for an option it does not know */
}

CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	if (id && cm_id_of(id)->real)
		return cm_real.rdma_notify(cm_id_of(id)->real, event) != 0 ? cm_real_fail() : 0;
	(void)event;
	return id ? 0 : fail(EINVAL); /* soft0 reports COMM_EST itself */
}

/* ---- multicast: soft0 joins IP multicast groups (docs/ud.md) -------------------- */

/* The group's GID: IPv4-mapped for an IPv4 group; 0 or -errno. */
static int mc_gid(const struct sockaddr *addr, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
		if (!IN_MULTICAST(ntohl(a->sin_addr.s_addr)))
			return -EINVAL;
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &a->sin_addr, 4);
		return 0;
	}
	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
		if (!IN6_IS_ADDR_MULTICAST(&a->sin6_addr))
			return -EINVAL;
		memcpy(gid->raw, &a->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT; /* AF_IB: an InfiniBand subnet's SA assigns groups */
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
		      16) == 0;
}

static int join(struct rdma_cm_id *id, struct sockaddr *addr, bool full_member, void *context)
{
	struct cm_id *c;
	struct cm_mc *mc;
	int rc;

	if (!id || !addr)
		return fail(EINVAL);
	c = cm_id_of(id);
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return fail(ENOMEM);
	rc = mc_gid(addr, &mc->mgid);
	if (rc < 0) {
		free(mc);
		return fail(-rc);
	}
	memcpy(&mc->addr, addr, addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	mc->context = context;
	pthread_mutex_lock(&cm_lock);
	/* As the kernel's: a bound or address-resolved datagram id. */
	if (!id->verbs || (c->state != CM_ADDR_RESOLVED && !(c->state == CM_IDLE && c->bound)) ||
	    id->qp_type != IBV_QPT_UD) {
		pthread_mutex_unlock(&cm_lock);
		free(mc);
		return fail(EINVAL);
	}
	if (full_member && id->qp) {
		if (ibv_attach_mcast(id->qp, &mc->mgid, 0) != 0) {
			rc = errno;
			pthread_mutex_unlock(&cm_lock);
			free(mc);
			return fail(rc);
		}
		mc->attached = true;
	}
	mc->next = c->mcs;
	c->mcs = mc;
	cm_post_mc_event(c, RDMA_CM_EVENT_MULTICAST_JOIN, 0, mc);
	pthread_mutex_unlock(&cm_lock);
	return c->sync ? cm_wait(c, RDMA_CM_EVENT_MULTICAST_JOIN, NULL) : 0;
}

CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	if (id && addr && cm_id_of(id)->real) {
		struct cm_id *c = cm_id_of(id);

		if (cm_real.rdma_join_multicast(c->real, addr, context) != 0)
			return cm_real_fail();
		return c->sync ? cm_wait(c, RDMA_CM_EVENT_MULTICAST_JOIN, NULL) : 0;
	}
	return join(id, addr, true, context);
}

CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
				     void *context)
{
	const uint32_t known = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;

	if (id && mc_join_attr && cm_id_of(id)->real) {
		struct cm_id *c = cm_id_of(id);

		if (cm_real.rdma_join_multicast_ex(c->real, mc_join_attr, context) != 0)
			return cm_real_fail();
		return c->sync ? cm_wait(c, RDMA_CM_EVENT_MULTICAST_JOIN, NULL) : 0;
	}
	if (!mc_join_attr || (mc_join_attr->comp_mask & ~known) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS))
		return fail(EINVAL);
	if (mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return fail(EINVAL);
	/* A send-only member gets the group's address vector; its QP is not attached. */
	return join(id, mc_join_attr->addr, mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *c;
	struct cm_mc **pp, *mc;
	int rc = 0;

	if (!id || !addr)
		return fail(EINVAL);
	c = cm_id_of(id);
	if (c->real)
		return cm_real.rdma_leave_multicast(c->real, addr) != 0 ? cm_real_fail() : 0;
	pthread_mutex_lock(&cm_lock);
	for (pp = &c->mcs; (mc = *pp) && !same_addr(&mc->addr, addr); pp = &mc->next)
		;
	if (!mc) {
		pthread_mutex_unlock(&cm_lock);
		return fail(EADDRNOTAVAIL); /* not joined, as librdmacm says */
	}
	*pp = mc->next;
	if (mc->attached && id->qp && ibv_detach_mcast(id->qp, &mc->mgid, 0) != 0)
		rc = errno;
	pthread_mutex_unlock(&cm_lock);
	free(mc);
	return rc ? fail(rc) : 0;
}

void cm_mc_free_all(struct cm_id *c)
{
	while (c->mcs) {
		struct cm_mc *mc = c->mcs;
		c->mcs = mc->next;
		free(mc);
	}
}

CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return fail(EOPNOTSUPP); /* soft0 has no enhanced connection options */
}

CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return fail(EOPNOTSUPP);
}
