/*
 * Connections: the rv_conn handle, the client side of the exchange
 * (rv_connect, rv_connect_start), the checks both sides run on the peer's
 * endpoints, control-channel events and the graceful disconnect.
 *
 * Owns: the connection's QPs (a reference on each; those it created are
 * closed with it), its own PD and CQ when the caller gave none, and the
 * control socket. Never waits while holding a lock; every wait is bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/conn-private.h"
#include "gid_select.h"

static void close_fd(struct rv_conn *c)
{
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

void rv_conn_qps_to_err(struct rv_conn *c)
{
	rv_qp_attr a = {.mask = RV_QP_STATE, .qp_state = RV_QPS_ERR};
	struct rv_error_saved err;

	/* Runs on failure paths: keep the caller's error message. */
	rv_error_save(&err);

	for (uint32_t i = 0; i < c->num_qps; i++) {
		struct rv_qp *qp = c->qps[i];
		if (qp && qp->obj.state == RV_OBJ_LIVE && qp->state != RV_QPS_ERR &&
		    qp->state != RV_QPS_RESET && rv_qp_modify(qp, &a) < 0)
			rv_log(RV_LOG_WARN, "connection #%" PRIu64 ": moving QP %u to ERR failed: %s", c->obj.id,
			       qp->qpn, rv_error_last());
	}
	rv_error_restore(&err);
}

static int conn_destroy(struct rv_object *obj)
{
	struct rv_conn *c = (struct rv_conn *)obj;
	int rc = 0;

	if (c->cm)
		rv_cm_conn_destroy(c);
	if (c->fd >= 0 && c->phase == RV_PH_ESTABLISHED) {
		uint8_t hdr[RV_WIRE_HDR_LEN];
		rv_wire_hdr_encode(hdr, RV_WIRE_DISCONNECT, 0);
		/* Best effort and never waiting: the peer also learns of a close from EOF. */
		if (send(c->fd, hdr, sizeof(hdr), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			rv_log(RV_LOG_DEBUG, "connection #%" PRIu64 ": the peer is already gone", obj->id);
	}
	close_fd(c);
	c->phase = RV_PH_DONE;
	for (uint32_t i = 0; i < c->num_qps; i++) {
		struct rv_qp *qp = c->qps[i];
		if (!qp || qp->obj.state != RV_OBJ_LIVE)
			continue;
		if (c->own_qps) {
			int r = rv_obj_close(&qp->obj, "closed because its connection was closed");
			if (r < 0 && rc == 0)
				rc = r;
		}
	}
	if (!c->own_qps)
		rv_conn_qps_to_err(c);
	return rc;
}

static void conn_release(struct rv_object *obj)
{
	struct rv_conn *c = (struct rv_conn *)obj;

	for (uint32_t i = 0; i < c->num_qps; i++)
		if (c->qps[i])
			rv_obj_unref(&c->qps[i]->obj);
	if (c->own_cq)
		rv_obj_unref(&c->own_cq->obj);
	if (c->own_pd)
		rv_obj_unref(&c->own_pd->obj);
	free(c->rx);
	free(c->out);
	free(c->peer_data);
}

static const struct rv_object_class conn_class = {
	.type = RV_OBJ_CONN,
	.name = "connection",
	.destroy = conn_destroy,
	.release = conn_release,
};

#define CONN_ATTR_KNOWN                                                                            \
	(RV_CONN_ATTR_PD | RV_CONN_ATTR_CQ | RV_CONN_ATTR_QP_TYPE | RV_CONN_ATTR_QP_CAP |          \
	 RV_CONN_ATTR_NUM_QPS | RV_CONN_ATTR_QPS | RV_CONN_ATTR_MR | RV_CONN_ATTR_PRIVATE_DATA |   \
	 RV_CONN_ATTR_REQUIRED_CAPS | RV_CONN_ATTR_TRANSPORT | RV_CONN_ATTR_GID_INDEX |               \
	 RV_CONN_ATTR_TRAFFIC_CLASS | RV_CONN_ATTR_SL | RV_CONN_ATTR_FLOW_LABEL | RV_CONN_ATTR_HOP_LIMIT | \
	 RV_CONN_ATTR_ACK_TIMEOUT | RV_CONN_ATTR_RESOLVE | RV_CONN_ATTR_QKEY)
#define REQUIRABLE_CAPS (RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM)

static int check_in_ctx(const struct rv_object *obj, enum rv_obj_type type, struct rv_context *ctx,
			const char *field, const char *func)
{
	int rc = rv_obj_check(obj, type, func);

	if (rc < 0)
		return rc;
	if (obj->ctx != ctx)
		return rv_err(EINVAL, func, "attr->%s belongs to another context than the one connecting", field);
	return 0;
}

/* The routing fields of rv_conn_attr (issue 19), each checked against its range. */
static int parse_route(const rv_conn_attr *attr, struct rv_conn_opts *o, const char *func)
{
	uint64_t m = attr->mask;

	if (m & RV_CONN_ATTR_GID_INDEX) {
		if (attr->gid_index > 255)
			return rv_err(EINVAL, func, "gid_index %u is above 255, the largest GID index an address vector holds",
				      attr->gid_index);
		o->has_gid_index = true;
		o->gid_index = attr->gid_index;
	}
	if (m & RV_CONN_ATTR_TRAFFIC_CLASS) {
		o->route.mask |= RV_ROUTE_TRAFFIC_CLASS;
		o->route.traffic_class = attr->traffic_class;
	}
	if (m & RV_CONN_ATTR_SL) {
		if (attr->sl > 15)
			return rv_err(EINVAL, func, "sl %u is above 15", attr->sl);
		o->route.mask |= RV_ROUTE_SL;
		o->route.sl = attr->sl;
	}
	if (m & RV_CONN_ATTR_FLOW_LABEL) {
		if (attr->flow_label > 0xfffff)
			return rv_err(EINVAL, func, "flow_label 0x%x does not fit 20 bits", attr->flow_label);
		o->route.mask |= RV_ROUTE_FLOW_LABEL;
		o->route.flow_label = attr->flow_label;
	}
	if (m & RV_CONN_ATTR_HOP_LIMIT) {
		if (attr->hop_limit == 0)
			return rv_err(EINVAL, func, "hop_limit 0 would drop every packet at the first router; use 1..255");
		o->route.mask |= RV_ROUTE_HOP_LIMIT;
		o->route.hop_limit = attr->hop_limit;
	}
	if (m & RV_CONN_ATTR_ACK_TIMEOUT) {
		if (attr->ack_timeout < 1 || attr->ack_timeout > 31)
			return rv_err(EINVAL, func, "ack_timeout %u: use 1..31 (4.096 us x 2^n; 0, infinite, is not "
				      "offered: a lost peer would hang the QP)", attr->ack_timeout);
		o->route.mask |= RV_ROUTE_ACK_TIMEOUT;
		o->route.ack_timeout = attr->ack_timeout;
	}
	if (m & RV_CONN_ATTR_RESOLVE) {
		if (attr->resolve_timeout_ms < 1 || attr->resolve_timeout_ms > 60000)
			return rv_err(EINVAL, func, "resolve_timeout_ms %u: use 1..60000", attr->resolve_timeout_ms);
		if (attr->resolve_retries > 16)
			return rv_err(EINVAL, func, "resolve_retries %u is above 16", attr->resolve_retries);
		o->resolve_timeout_ms = attr->resolve_timeout_ms;
		o->resolve_retries = attr->resolve_retries;
	}
	return 0;
}

int rv_conn_opts_parse(struct rv_context *ctx, const rv_conn_attr *attr, struct rv_conn_opts *o,
		       const char *func)
{
	uint64_t m = attr ? attr->mask : 0;
	int rc;

	memset(o, 0, sizeof(*o));
	o->qp_type = RV_QPT_RC;
	if (!attr)
		return 0;
	o->mask = m;
	if (m & ~(uint64_t)CONN_ATTR_KNOWN)
		return rv_err(EINVAL, func, "unknown bit 0x%" PRIx64 " in rv_conn_attr.mask", m & ~(uint64_t)CONN_ATTR_KNOWN);
	if (attr->reserved)
		return rv_err(EINVAL, func, "rv_conn_attr.reserved must be 0");
	if (m & RV_CONN_ATTR_QP_TYPE) {
		if (attr->qp_type != RV_QPT_RC && attr->qp_type != RV_QPT_UC && attr->qp_type != RV_QPT_UD)
			return rv_err(EINVAL, func, "qp_type %u: a connection carries RV_QPT_RC, RV_QPT_UC or "
				      "RV_QPT_UD QPs", attr->qp_type);
		o->qp_type = attr->qp_type;
	}
	if (m & (RV_CONN_ATTR_NUM_QPS | RV_CONN_ATTR_QPS)) {
		if (attr->num_qps < 1 || attr->num_qps > RV_CONN_MAX_QPS)
			return rv_err(EINVAL, func, "num_qps is %u; a connection has 1 to %d QPs", attr->num_qps,
				      RV_CONN_MAX_QPS);
		o->num_qps = attr->num_qps;
	}
	if (m & RV_CONN_ATTR_QPS) {
		if (!attr->qps)
			return rv_err(EINVAL, func, "RV_CONN_ATTR_QPS is set but qps is NULL");
		for (uint32_t i = 0; i < o->num_qps; i++) {
			struct rv_qp *qp = attr->qps[i];
			rc = check_in_ctx(RV_COBJ(qp), RV_OBJ_QP, ctx, "qps[]", func);
			if (rc < 0)
				return rc;
			if (qp->qp_type != RV_QPT_RC && qp->qp_type != RV_QPT_UC && qp->qp_type != RV_QPT_UD)
				return rv_err(EINVAL, func, "qps[%u] is of type %u; a connection carries RC, UC or UD QPs",
					      i, qp->qp_type);
			if (i && (qp->qp_type != o->qps[0]->qp_type || qp->pd != o->qps[0]->pd ||
				  qp->send_cq != o->qps[0]->send_cq || qp->recv_cq != o->qps[0]->recv_cq))
				return rv_err(EINVAL, func, "qps[%u] differs from qps[0] in type, PD or CQs", i);
			for (uint32_t k = 0; k < i; k++)
				if (o->qps[k] == qp)
					return rv_err(EINVAL, func, "qps[%u] and qps[%u] are the same QP", k, i);
			o->qps[i] = qp;
		}
		o->caller_qps = true;
		o->qp_type = o->qps[0]->qp_type;
	}
	o->qkey = (m & RV_CONN_ATTR_QKEY) ? attr->qkey : 0x11111111u; /* rv_qp_to_init()'s default */
	if ((m & RV_CONN_ATTR_PD) && !o->caller_qps) {
		rc = check_in_ctx(RV_COBJ(attr->pd), RV_OBJ_PD, ctx, "pd", func);
		if (rc < 0)
			return rc;
		o->pd = attr->pd;
	}
	if ((m & RV_CONN_ATTR_CQ) && !o->caller_qps) {
		rc = check_in_ctx(RV_COBJ(attr->send_cq), RV_OBJ_CQ, ctx, "send_cq", func);
		if (rc == 0 && attr->recv_cq)
			rc = check_in_ctx(RV_COBJ(attr->recv_cq), RV_OBJ_CQ, ctx, "recv_cq", func);
		if (rc < 0)
			return rc;
		o->send_cq = attr->send_cq;
		o->recv_cq = attr->recv_cq ? attr->recv_cq : attr->send_cq;
	}
	if (m & RV_CONN_ATTR_QP_CAP) {
		o->has_cap = true;
		o->cap = attr->qp_cap;
	}
	if (m & RV_CONN_ATTR_MR) {
		rc = check_in_ctx(RV_COBJ(attr->mr), RV_OBJ_MR, ctx, "mr", func);
		if (rc < 0)
			return rc;
		o->has_mr = true;
		o->mr_addr = (uintptr_t)attr->mr->addr;
		o->mr_length = attr->mr->length;
		o->mr_rkey = attr->mr->rkey;
	}
	if (m & RV_CONN_ATTR_PRIVATE_DATA) {
		if (attr->private_data_len > RV_CONN_PRIVATE_DATA_MAX)
			return rv_err(EINVAL, func, "private_data_len %u is above RV_CONN_PRIVATE_DATA_MAX (%d)",
				      attr->private_data_len, RV_CONN_PRIVATE_DATA_MAX);
		if (!attr->private_data && attr->private_data_len)
			return rv_err(EINVAL, func, "private_data is NULL but private_data_len is %u",
				      attr->private_data_len);
		o->data = attr->private_data;
		o->data_len = attr->private_data_len;
	}
	if (m & RV_CONN_ATTR_REQUIRED_CAPS) {
		if (attr->required_caps & ~(uint32_t)REQUIRABLE_CAPS)
			return rv_err(EINVAL, func, "required_caps 0x%x: only RV_EP_CAP_ATOMIC and RV_EP_CAP_IMM can be required",
				      attr->required_caps);
		o->required_caps = attr->required_caps;
	}
	if (m & RV_CONN_ATTR_TRANSPORT) {
		if (attr->transport > RV_CONN_TRANSPORT_RDMA_CM)
			return rv_err(EINVAL, func, "transport %u is not an rv_conn_transport", attr->transport);
		o->transport = attr->transport;
	}
	return parse_route(attr, o, func);
}

int rv_conn_create(struct rv_context *ctx, const struct rv_conn_opts *o, uint32_t num_qps, bool server,
		   struct rv_conn **ret, const char *func)
{
	struct rv_pd *pd;
	struct rv_cq *scq, *rcq;
	struct rv_conn *c;
	int rc = 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		return rv_err(ENOMEM, func, "out of memory");
	c->rx = calloc(1, sizeof(*c->rx));
	if (!c->rx) {
		free(c);
		return rv_err(ENOMEM, func, "out of memory");
	}
	rv_obj_init(&c->obj, &conn_class, ctx);
	c->obj.id = rv_ctx_next_id(ctx);
	c->ctx = ctx;
	c->fd = -1;
	c->state = RV_CONN_CONNECTING;
	c->transport = RV_CONN_TRANSPORT_TCP;
	c->server = server;
	c->required_caps = o->required_caps;
	c->route = o->route;
	c->num_qps = num_qps;

	if (o->caller_qps) {
		for (uint32_t i = 0; i < num_qps; i++) {
			c->qps[i] = o->qps[i];
			rv_obj_ref(&c->qps[i]->obj);
		}
	} else {
		rv_qp_init_attr qa;

		pd = o->pd;
		if (!pd) {
			rc = rv_pd_new(ctx, NULL, &c->own_pd);
			pd = c->own_pd;
		}
		scq = o->send_cq;
		rcq = o->recv_cq;
		if (rc == 0 && !scq) {
			rc = rv_cq_new(ctx, NULL, &c->own_cq);
			scq = rcq = c->own_cq;
		}
		memset(&qa, 0, sizeof(qa));
		qa.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ |
			  (o->has_cap ? RV_QP_INIT_ATTR_CAP : 0);
		qa.qp_type = o->qp_type;
		qa.send_cq = scq;
		qa.recv_cq = rcq;
		qa.cap = o->cap;
		c->own_qps = true;
		for (uint32_t i = 0; rc == 0 && i < num_qps; i++)
			rc = rv_qp_new(pd, &qa, &c->qps[i]);
	}
	for (uint32_t i = 0; rc == 0 && !o->cm && i < num_qps; i++) {
		rv_qp_attr qa = {.mask = RV_QP_QKEY, .qkey = o->qkey};
		bool ud = c->qps[i]->qp_type == RV_QPT_UD;

		if (c->qps[i]->state == RV_QPS_RESET)
			rc = rv_qp_to_init(c->qps[i], ud ? &qa : NULL);
		else if (ud) /* the caller's, in INIT: its own Q_Key */
			rc = rv_qp_query(c->qps[i], &qa);
		c->local_qkey[i] = qa.qkey;
	}
	for (uint32_t i = 0; rc == 0 && o->has_gid_index && i < num_qps; i++) {
		rc = rv_qp_set_gid_index(c->qps[i], o->gid_index);
		if (rc < 0) {
			char why[400];
			snprintf(why, sizeof(why), "%s", rv_error_last());
			rc = rv_err(-rc, func, "attr->gid_index: %s", why);
		}
	}
	for (uint32_t i = 0; rc == 0 && i < num_qps; i++) {
		rc = rv_qp_endpoint(c->qps[i], &c->local[i]);
		if (rc == 0 && o->has_mr) {
			c->local[i].mask |= RV_ENDPOINT_MR;
			c->local[i].mr_addr = o->mr_addr;
			c->local[i].mr_length = o->mr_length;
			c->local[i].mr_rkey = o->mr_rkey;
		}
	}
	if (rc == 0) {
		struct rv_qp *q0 = c->qps[0];
		rv_graph_lock(&ctx->obj);
		rc = rv_obj_add_dep(&c->obj, &q0->pd->obj);
		if (rc == 0)
			rc = rv_obj_add_dep(&c->obj, &q0->send_cq->obj);
		if (rc == 0 && q0->recv_cq != q0->send_cq)
			rc = rv_obj_add_dep(&c->obj, &q0->recv_cq->obj);
		rv_graph_unlock(&ctx->obj);
		if (rc < 0)
			rc = rv_err(ENOMEM, func, "out of memory");
		else
			c->published = true;
	}
	if (rc < 0) {
		rv_conn_discard(c);
		return rc;
	}
	*ret = c;
	return 0;
}

void rv_conn_discard(struct rv_conn *c)
{
	struct rv_error_saved err;

	rv_error_save(&err);
	if (!c->published) {
		/* Never in the graph: undo what creation did, without the graph. */
		conn_destroy(&c->obj);
		rv_obj_abort(&c->obj);
	} else {
		rv_obj_close(&c->obj, "closed because its exchange failed");
		rv_obj_unref(&c->obj);
	}
	rv_error_restore(&err);
}

static const char *caps_text(uint32_t caps)
{
	switch (caps & REQUIRABLE_CAPS) {
	case RV_EP_CAP_ATOMIC:
		return "atomic operations (RV_EP_CAP_ATOMIC)";
	case RV_EP_CAP_IMM:
		return "immediate data (RV_EP_CAP_IMM)";
	default:
		return "atomic operations and immediate data (RV_EP_CAP_ATOMIC, RV_EP_CAP_IMM)";
	}
}

static const char *qpt_name(uint32_t t)
{
	return t == RV_QPT_RC ? "RC" : t == RV_QPT_UC ? "UC" : t == RV_QPT_UD ? "UD" : "unknown";
}

static unsigned mtu_bytes(uint32_t mtu)
{
	return mtu >= RV_MTU_256 && mtu <= RV_MTU_4096 ? 128u << mtu : 0;
}

static bool gid_zero(const uint8_t gid[16])
{
	for (int i = 0; i < 16; i++)
		if (gid[i])
			return false;
	return true;
}

int rv_conn_apply_peer(struct rv_conn *c, const struct rv_wire_hello *h, const char *func)
{
	rv_port_attr pattr;
	uint32_t missing;
	int rc;

	if (h->num_qps != c->num_qps)
		return rv_err(EPROTO, func, "%s offers %u QP(s) in the connection; this side has %u",
			      c->peer_addr, h->num_qps, c->num_qps);
	for (uint32_t i = 0; i < c->num_qps; i++)
		if (h->ep[i].qp_type != c->qps[i]->qp_type)
			return rv_err(EPROTO, func, "incompatible QP types: %s's QP %u is %s, ours is %s", c->peer_addr,
				      i, qpt_name(h->ep[i].qp_type), qpt_name(c->qps[i]->qp_type));
	missing = c->required_caps & ~h->ep[0].caps;
	if (missing)
		return rv_err(EOPNOTSUPP, func, "%s's device lacks %s, which this connection requires",
			      c->peer_addr, caps_text(missing));
	missing = h->required_caps & ~c->local[0].caps;
	if (missing)
		return rv_err(EOPNOTSUPP, func, "%s requires %s, which this side's device (%s) lacks", c->peer_addr,
			      caps_text(missing), c->ctx->dev->name);
	memset(&pattr, 0, sizeof(pattr));
	pattr.mask = RV_PORT_ATTR_ALL;
	rc = rv_context_query_port(c->ctx, c->qps[0]->port_num, &pattr);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < c->num_qps; i++)
		if (pattr.link_layer == RV_LINK_LAYER_ETHERNET && gid_zero(h->ep[i].gid))
			return rv_err(EPROTO, func,
				      "%s's endpoint %u has no GID, which our Ethernet port (RoCE, iWARP, software device) needs; "
				      "hint: the peer's port has no IP address configured",
				      c->peer_addr, i);
	c->path_mtu = pattr.active_mtu ? pattr.active_mtu : RV_MTU_1024;
	if (h->ep[0].mtu >= RV_MTU_256 && h->ep[0].mtu != c->path_mtu) {
		uint32_t m = h->ep[0].mtu < c->path_mtu ? h->ep[0].mtu : c->path_mtu;
		rv_log(RV_LOG_INFO, "connection #%" PRIu64 ": MTU differs (ours %u, %s's %u bytes); using %u",
		       c->obj.id, mtu_bytes(c->path_mtu), c->peer_addr, mtu_bytes(h->ep[0].mtu), mtu_bytes(m));
		c->path_mtu = m;
	}
	if (h->data_len) {
		c->peer_data = malloc(h->data_len);
		if (!c->peer_data)
			return rv_err(ENOMEM, func, "out of memory");
		memcpy(c->peer_data, h->data, h->data_len);
		c->peer_data_len = h->data_len;
	}
	memcpy(c->peer, h->ep, sizeof(c->peer[0]) * c->num_qps);
	if (c->qps[0]->qp_type == RV_QPT_UD) {
		if (!h->has_qkeys)
			return rv_err(EPROTO, func, "%s sent UD endpoints without their Q_Keys", c->peer_addr);
		memcpy(c->peer_qkey, h->qkey, sizeof(c->peer_qkey[0]) * c->num_qps);
	}
	c->have_peer = true;
	for (uint32_t i = 0; i < c->num_qps; i++) {
		if (c->qps[i]->qp_type == RV_QPT_UD) { /* no peer in a UD QP: RTR and RTS alone */
			rc = c->qps[i]->state == RV_QPS_INIT ? rv_qp_to_rtr(c->qps[i], NULL) : 0;
			if (rc == 0 && c->qps[i]->state == RV_QPS_RTR)
				rc = rv_qp_to_rts(c->qps[i], NULL);
			if (rc < 0)
				return rc;
			continue;
		}
		rc = rv_qp_connect_route(c->qps[i], &h->ep[i], &c->route);
		if (rc < 0) {
			struct rv_error_saved why;
			rv_error_save(&why);
			return rv_err(-rc, func, "connecting QP %u to %s failed: %s", i, c->peer_addr, why.msg);
		}
	}
	return 0;
}

int rv_conn_local_gids(struct rv_conn *c, int fd, bool *changed, const char *func)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint8_t here[16];

	*changed = false;
	if (c->ctx->dev->kind == RV_DEVICE_SOFT) /* its one GID is its listen address */
		return 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || !rv_gid_from_sockaddr((struct sockaddr *)&ss, here))
		return 0; /* no address to go by: the choice without it stands */
	for (uint32_t i = 0; i < c->num_qps; i++) {
		struct rv_gid_want w = {.local_gid = here};
		rv_endpoint ep;
		int rc = rv_qp_gid_choose(c->qps[i], &w, true, func);
		if (rc == 0)
			rc = rv_qp_endpoint(c->qps[i], &ep);
		if (rc < 0)
			return rc;
		if (memcmp(ep.gid, c->local[i].gid, 16) != 0 || ep.caps != c->local[i].caps)
			*changed = true;
		memcpy(c->local[i].gid, ep.gid, 16);
		c->local[i].caps = ep.caps;
	}
	return 0;
}

void rv_conn_hello(const struct rv_conn *c, const struct rv_conn_opts *o, struct rv_wire_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->num_qps = c->num_qps;
	h->required_caps = c->required_caps;
	memcpy(h->ep, c->local, sizeof(c->local[0]) * c->num_qps);
	h->data = o->data;
	h->data_len = o->data_len;
	h->has_qkeys = c->qps[0]->qp_type == RV_QPT_UD;
	if (h->has_qkeys)
		memcpy(h->qkey, c->local_qkey, sizeof(c->local_qkey[0]) * c->num_qps);
}

int rv_conn_check_qps_alive(const struct rv_conn *c, const char *func)
{
	for (uint32_t i = 0; i < c->num_qps; i++)
		if (c->qps[i]->state == RV_QPS_ERR || rv_qp_state_of(c->qps[i]) == RV_QPS_ERR)
			return rv_err(ECONNABORTED, func, "QP %u (0x%x) to %s is in the error state already: its "
				      "connection to the peer's QP failed (the log says why)",
				      i, c->qps[i]->qpn, c->peer_addr);
	return 0;
}

/* ---- client ---- */

static int fail(struct rv_conn *c, int rc)
{
	c->error = rc;
	c->state = RV_CONN_FAILED;
	c->phase = RV_PH_DONE;
	close_fd(c);
	rv_conn_qps_to_err(c);
	return rc;
}

/* Reject the peer with the current error message, then fail. */
static int reject(struct rv_conn *c, int rc)
{
	struct rv_error_saved err;

	rv_error_save(&err);
	rv_sock_send_reject(c->fd, -rc, rv_error_text(&err, NULL));
	return fail(c, rc);
}

/* The client's side of an AUTH message (trust.c): 0 to read on, < 0 failed. */
static int client_auth(struct rv_conn *c, int64_t deadline, const char *func)
{
	struct rv_wire_auth a;
	uint8_t want[RV_WIRE_AUTH_MAC_LEN];
	int rc = rv_wire_auth_decode(c->rx->payload, c->rx->hdr.length, &a, func);

	if (rc < 0)
		return reject(c, rc);
	if (!c->auth)
		return reject(c, rv_err(EACCES, func, "%s wants to authenticate the exchange with a shared secret, "
					"but this context has none (rv_context_attr.auth_secret, "
					"RVERBS_SOFT_SECRET_FILE)", c->peer_addr));
	if (c->phase == RV_PH_WAIT_CHALLENGE && a.step == RV_AUTH_CHALLENGE) {
		memcpy(c->auth_ns, a.nonce, sizeof(c->auth_ns));
		rv_conn_auth_mac(c->ctx, 'S', c->auth_nc, c->auth_ns, NULL, NULL, 0, want);
		if (!rv_conn_mac_equal(want, a.mac))
			return reject(c, rv_err(EACCES, func, "%s did not prove the shared secret: its context has "
						"another one", c->peer_addr));
		/* Our proof covers the REQ that follows it. */
		rv_conn_auth_mac(c->ctx, 'Q', c->auth_nc, c->auth_ns, c->out, c->out + RV_WIRE_HDR_LEN,
				 c->out_len - RV_WIRE_HDR_LEN, want);
		rc = rv_conn_send_auth(c->fd, RV_AUTH_REQ_MAC, NULL, want, deadline, c->peer_addr, func);
		if (rc == 0)
			rc = rv_sock_send_all(c->fd, c->out, c->out_len, deadline, c->peer_addr, func);
		if (rc < 0)
			return fail(c, rc);
		c->phase = RV_PH_WAIT_REP;
		return 0;
	}
	if (c->phase == RV_PH_WAIT_REP && a.step == RV_AUTH_REP_MAC && !c->have_rep_mac) {
		memcpy(c->rep_mac, a.mac, sizeof(c->rep_mac));
		c->have_rep_mac = true;
		return 0;
	}
	return reject(c, rv_err(EBADMSG, func, "%s sent AUTH step %u out of order", c->peer_addr, a.step));
}

/* Now that the control connection has a local address: the GIDs the QPs
 * advertise follow it (rv_conn_local_gids), and the REQ, not sent yet, is
 * encoded again if one changed. */
static int client_local_gids(struct rv_conn *c, const char *func)
{
	struct rv_wire_hello h;
	uint8_t *out;
	bool changed;
	int n, rc = rv_conn_local_gids(c, c->fd, &changed, func);

	if (rc < 0 || !changed)
		return rc;
	rc = rv_wire_hello_decode(c->out + RV_WIRE_HDR_LEN, c->out_len - RV_WIRE_HDR_LEN, &h, func);
	if (rc < 0)
		return rc;
	memcpy(h.ep, c->local, sizeof(c->local[0]) * c->num_qps);
	out = malloc(RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX);
	if (!out)
		return rv_err(ENOMEM, func, "out of memory");
	n = rv_wire_hello_encode(RV_WIRE_REQ, &h, out, RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX, func);
	if (n < 0) {
		free(out);
		return n;
	}
	free(c->out); /* h.data pointed into it: freed only after the encode */
	c->out = out;
	c->out_len = (size_t)n;
	return 0;
}

/* One step of the client: 1 established, 0 waiting for the socket, < 0 failed. */
static int client_step(struct rv_conn *c, int64_t deadline, const char *func)
{
	struct rv_wire_hello h;
	struct rv_wire_reject rj;
	uint8_t want[RV_WIRE_AUTH_MAC_LEN];
	int rc;

	if (c->phase == RV_PH_TCP_CONNECTING) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLOUT, .revents = 0};
		if (poll(&pfd, 1, 0) <= 0)
			return 0;
		rc = rv_sock_connect_finish(c->fd, c->peer_addr, func);
		if (rc == 0)
			rc = rv_conn_check_own_addr(c->ctx, c->fd, c->peer_addr, func);
		if (rc == 0)
			rc = client_local_gids(c, func);
		if (rc == 0 && c->auth)
			rc = rv_conn_send_auth(c->fd, RV_AUTH_HELLO, c->auth_nc, NULL, deadline, c->peer_addr, func);
		else if (rc == 0)
			rc = rv_sock_send_all(c->fd, c->out, c->out_len, deadline, c->peer_addr, func);
		if (rc < 0)
			return fail(c, rc);
		c->phase = c->auth ? RV_PH_WAIT_CHALLENGE : RV_PH_WAIT_REP;
	}
	for (;;) {
		rc = rv_msg_rx_read(c->fd, c->rx, c->peer_addr, func);
		if (rc == -ENOTCONN)
			rc = rv_err(ECONNRESET, func, "%s closed the connection before answering our request",
				    c->peer_addr);
		if (rc <= 0)
			return rc < 0 ? fail(c, rc) : 0;
		rv_msg_rx_reset(c->rx);
		if (c->rx->hdr.type != RV_WIRE_AUTH)
			break;
		rc = client_auth(c, deadline, func);
		if (rc < 0)
			return rc;
	}
	switch (c->rx->hdr.type) {
	case RV_WIRE_REP:
		if (c->auth) {
			/* Nothing in a REP is acted on before its MAC checks. */
			if (c->phase != RV_PH_WAIT_REP || !c->have_rep_mac)
				return reject(c, rv_err(EACCES, func, "%s answered without proving the shared secret "
							"(its context has none)", c->peer_addr));
			rv_conn_auth_mac(c->ctx, 'P', c->auth_nc, c->auth_ns, c->rx->hdr_buf, c->rx->payload,
					 c->rx->hdr.length, want);
			if (!rv_conn_mac_equal(want, c->rep_mac))
				return reject(c, rv_err(EACCES, func, "the MAC of %s's REP does not match: the answer "
							"was altered on the way", c->peer_addr));
		}
		rc = rv_wire_hello_decode(c->rx->payload, c->rx->hdr.length, &h, func);
		if (rc == 0)
			rc = rv_conn_check_peer_addr(c->ctx, c->fd, &h, c->peer_addr, func);
		if (rc < 0)
			return reject(c, rc);
		rc = rv_conn_apply_peer(c, &h, func);
		if (rc < 0)
			return reject(c, rc);
		rc = rv_sock_send_empty(c->fd, RV_WIRE_RTU, deadline, c->peer_addr, func);
		if (rc < 0)
			return fail(c, rc);
		c->phase = RV_PH_ESTABLISHED;
		c->state = RV_CONN_ESTABLISHED;
		return 1;
	case RV_WIRE_REJECT:
		rc = rv_wire_reject_decode(c->rx->payload, c->rx->hdr.length, &rj, func);
		if (rc == 0)
			rc = rv_err(rj.errnum, func, "%s rejected the connection: %s", c->peer_addr, rj.text);
		return fail(c, rc);
	default:
		return fail(c, rv_err(EBADMSG, func, "%s answered with a %s message instead of a REP", c->peer_addr,
				      rv_wire_type_name(c->rx->hdr.type)));
	}
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
	int left = rv_ms_left(deadline);

	if (left == 0)
		return 0;
	return poll(&pfd, 1, left);
}

/* Drive the client until established, failed, or the deadline. */
static int client_run(struct rv_conn *c, int64_t deadline, bool *established, const char *func)
{
	for (;;) {
		int rc = client_step(c, deadline, func);
		if (rc != 0) {
			*established = rc > 0;
			return rc < 0 ? rc : 0;
		}
		if (rv_ms_left(deadline) == 0)
			return 0;
		wait_fd(c->fd, c->phase == RV_PH_TCP_CONNECTING ? POLLOUT : POLLIN, deadline);
	}
}

/* A client's own QPs must be fresh (a server's are checked per request: the
 * same attr is passed again while an earlier client is being served). */
static int check_fresh_qps(const struct rv_conn_opts *o, const char *func)
{
	for (uint32_t i = 0; o->caller_qps && i < o->num_qps; i++)
		if (o->qps[i]->state != RV_QPS_RESET && o->qps[i]->state != RV_QPS_INIT)
			return rv_err(EINVAL, func, "qps[%u] is not in RESET or INIT", i);
	return 0;
}

static int connect_start(rv_context *ctx, const char *addr, struct rv_conn_opts *o, rv_conn **ret_conn,
			 const char *func)
{
	struct rv_wire_hello h;
	struct rv_conn *c;
	int n, rc;

	c = NULL;
	rc = rv_conn_create(ctx, o, o->num_qps ? o->num_qps : 1, false, &c, func);
	if (rc < 0)
		return rc;
	c->out = malloc(RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX);
	if (!c->out) {
		rv_err(ENOMEM, func, "out of memory");
		rv_conn_discard(c);
		return -ENOMEM;
	}
	rv_conn_hello(c, o, &h);
	n = rv_wire_hello_encode(RV_WIRE_REQ, &h, c->out, RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX, func);
	if (n < 0) {
		rv_conn_discard(c);
		return n;
	}
	c->out_len = (size_t)n;
	c->auth = rv_conn_has_secret(ctx);
	if (c->auth && rv_random_bytes(c->auth_nc, sizeof(c->auth_nc)) < 0) {
		rv_conn_discard(c);
		return rv_err(EIO, func, "no random bytes from the kernel for the authentication nonce "
			      "(getrandom(2) and /dev/urandom failed)");
	}
	rc = rv_sock_connect_start(addr, &c->fd, c->peer_addr, func);
	if (rc < 0) {
		rv_conn_discard(c);
		return rc;
	}
	c->phase = RV_PH_TCP_CONNECTING;
	*ret_conn = c;
	return 0;
}

static int connect_args(rv_context *ctx, const char *addr, rv_conn **ret_conn, const char *func)
{
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, func);
	char host[RV_HOST_MAX], port[RV_PORT_MAX];

	if (rc < 0)
		return rc;
	if (!ret_conn)
		return rv_err(EINVAL, func, "ret_conn is NULL");
	return rv_addr_parse(addr, host, port, func);
}

RV_EXPORT int rv_connect_start(rv_context *ctx, const char *addr, const rv_conn_attr *attr, rv_conn **ret_conn)
{
	struct rv_conn_opts o;
	int rc = connect_args(ctx, addr, ret_conn, __func__);

	if (rc == 0)
		rc = rv_conn_opts_parse(ctx, attr, &o, __func__);
	if (rc == 0)
		rc = check_fresh_qps(&o, __func__);
	if (rc < 0)
		return rc;
	if (o.transport == RV_CONN_TRANSPORT_RDMA_CM ||
	    (o.transport == RV_CONN_TRANSPORT_AUTO && rv_cm_usable(ctx)))
		return rv_err(EOPNOTSUPP, __func__,
			      "rdma_cm connections (device %s) are made with rv_connect(); rv_connect_start() uses RV_CONN_TRANSPORT_TCP",
			      ctx->dev->name);
	return connect_start(ctx, addr, &o, ret_conn, __func__);
}

RV_EXPORT int rv_connect(rv_context *ctx, const char *addr, const rv_conn_attr *attr, int timeout_ms,
			 rv_conn **ret_conn)
{
	int64_t deadline = rv_deadline(timeout_ms);
	struct rv_conn_opts o;
	struct rv_conn *c;
	bool established = false;
	int rc = connect_args(ctx, addr, ret_conn, __func__);

	if (rc == 0)
		rc = rv_conn_opts_parse(ctx, attr, &o, __func__);
	if (rc == 0)
		rc = check_fresh_qps(&o, __func__);
	if (rc < 0)
		return rc;
	if (o.transport == RV_CONN_TRANSPORT_RDMA_CM ||
	    (o.transport == RV_CONN_TRANSPORT_AUTO && rv_cm_usable(ctx)))
		return rv_cm_connect(ctx, addr, &o, timeout_ms, ret_conn, __func__);
	rc = connect_start(ctx, addr, &o, &c, __func__);
	if (rc < 0)
		return rc;
	rc = client_run(c, deadline, &established, __func__);
	if (rc == 0 && !established)
		rc = rv_err(ETIMEDOUT, __func__, "no connection to %s within %d ms", c->peer_addr, timeout_ms);
	if (rc == 0)
		rc = rv_conn_check_qps_alive(c, __func__);
	if (rc < 0) {
		rv_conn_discard(c);
		return rc;
	}
	*ret_conn = c;
	return 0;
}

/* ---- the handle ---- */

RV_DEFINE_HANDLE_REF_UNREF(conn, RV_OBJ_CONN)

RV_DEFINE_HANDLE_CLOSE(conn, RV_OBJ_CONN, "closing the connection's QPs")

/* The peer disconnected (DISCONNECT received, or EOF): flush and finish. */
static void peer_gone(struct rv_conn *c, bool ack)
{
	rv_conn_qps_to_err(c);
	if (ack)
		rv_sock_send_empty(c->fd, RV_WIRE_DISCONNECT_ACK, rv_deadline(100), c->peer_addr, "rv_conn_poll");
	close_fd(c);
	c->phase = RV_PH_DONE;
	c->state = RV_CONN_DISCONNECTED;
}

/* Read control messages of an established connection: 1 when it ended. */
static int control_step(struct rv_conn *c, const char *func)
{
	int rc = rv_msg_rx_read(c->fd, c->rx, c->peer_addr, func);

	if (rc == 0)
		return 0;
	if (rc < 0) {
		/* The peer went away: an event for the caller, not a failed call. */
		rv_log(RV_LOG_INFO, "connection #%" PRIu64 ": %s", c->obj.id, rv_error_last());
		rv_error_clear();
		peer_gone(c, false);
		return 1;
	}
	rv_msg_rx_reset(c->rx);
	if (c->rx->hdr.type == RV_WIRE_DISCONNECT) {
		rv_log(RV_LOG_INFO, "connection #%" PRIu64 ": %s disconnected", c->obj.id, c->peer_addr);
		peer_gone(c, true);
		return 1;
	}
	if (c->rx->hdr.type == RV_WIRE_DISCONNECT_ACK) {
		peer_gone(c, false);
		return 1;
	}
	rv_log(RV_LOG_WARN, "connection #%" PRIu64 ": %s sent an unexpected %s message; disconnecting", c->obj.id,
	       c->peer_addr, rv_wire_type_name(c->rx->hdr.type));
	peer_gone(c, false);
	return 1;
}

RV_EXPORT int rv_conn_poll(rv_conn *conn, int timeout_ms, uint32_t *ret_event)
{
	int64_t deadline = rv_deadline(timeout_ms);
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);

	if (rc < 0)
		return rc;
	if (!ret_event)
		return rv_err(EINVAL, __func__, "ret_event is NULL");
	if (conn->cm)
		return rv_cm_conn_poll(conn, timeout_ms, ret_event, __func__);
	if (conn->state == RV_CONN_FAILED)
		return rv_err(-conn->error, __func__, "the connection to %s failed earlier (%s)", conn->peer_addr,
			      strerror(-conn->error));
	if (conn->state == RV_CONN_CONNECTING) {
		bool established = false;
		rc = client_run(conn, deadline, &established, __func__);
		if (rc < 0)
			return rc;
		*ret_event = established ? RV_CONN_EVENT_ESTABLISHED : RV_CONN_EVENT_NONE;
		return 0;
	}
	*ret_event = RV_CONN_EVENT_NONE;
	while (conn->state == RV_CONN_ESTABLISHED) {
		if (control_step(conn, __func__)) {
			*ret_event = RV_CONN_EVENT_DISCONNECTED;
			break;
		}
		if (rv_ms_left(deadline) == 0 || wait_fd(conn->fd, POLLIN, deadline) <= 0)
			break;
	}
	return 0;
}

RV_EXPORT int rv_conn_disconnect(rv_conn *conn, int timeout_ms)
{
	int64_t deadline = rv_deadline(timeout_ms);
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);

	if (rc < 0)
		return rc;
	if (conn->cm)
		return rv_cm_conn_disconnect(conn, timeout_ms, __func__);
	if (conn->state == RV_CONN_CONNECTING) {
		fail(conn, -ECONNABORTED);
		conn->state = RV_CONN_DISCONNECTED;
		return 0;
	}
	if (conn->state != RV_CONN_ESTABLISHED)
		return 0;
	if (rv_sock_send_empty(conn->fd, RV_WIRE_DISCONNECT, deadline, conn->peer_addr, __func__) < 0) {
		/* The peer is gone already: that is disconnected too. */
		peer_gone(conn, false);
		return 0;
	}
	rv_conn_qps_to_err(conn);
	if (timeout_ms == 0) {
		/* Told, not waited for: the peer's answer is not needed. */
		peer_gone(conn, false);
		return 0;
	}
	while (conn->state == RV_CONN_ESTABLISHED) {
		rc = rv_msg_rx_read(conn->fd, conn->rx, conn->peer_addr, __func__);
		if (rc < 0) {
			peer_gone(conn, false);
			break;
		}
		if (rc > 0) {
			uint8_t t = conn->rx->hdr.type;
			rv_msg_rx_reset(conn->rx);
			if (t == RV_WIRE_DISCONNECT_ACK || t == RV_WIRE_DISCONNECT) {
				/* Both sides may disconnect at once: a DISCONNECT is an answer too. */
				peer_gone(conn, t == RV_WIRE_DISCONNECT);
				break;
			}
			continue;
		}
		if (rv_ms_left(deadline) == 0 || wait_fd(conn->fd, POLLIN, deadline) <= 0) {
			peer_gone(conn, false);
			return rv_err(ETIMEDOUT, __func__,
				      "%s did not acknowledge the disconnect within %d ms; disconnected on this side",
				      conn->peer_addr, timeout_ms);
		}
	}
	return 0;
}

RV_EXPORT int rv_conn_fd(const rv_conn *conn)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);

	if (rc < 0)
		return rc;
	if (conn->fd < 0)
		return rv_err(EBADF, __func__, "the connection to %s has no control channel any more (%s)",
			      conn->peer_addr, conn->state == RV_CONN_FAILED ? "it failed" : "it was disconnected");
	return conn->fd;
}

RV_EXPORT int rv_conn_state_of(const rv_conn *conn)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);
	return rc < 0 ? rc : (int)conn->state;
}

RV_EXPORT uint32_t rv_conn_num_qps(const rv_conn *conn)
{
	return rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__) < 0 ? 0 : conn->num_qps;
}

RV_EXPORT rv_qp *rv_conn_qp(const rv_conn *conn, uint32_t index)
{
	if (rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__) < 0)
		return NULL;
	if (index >= conn->num_qps) {
		rv_err(EINVAL, __func__, "index %u: the connection has %u QP(s)", index, conn->num_qps);
		return NULL;
	}
	return conn->qps[index];
}

RV_EXPORT rv_pd *rv_conn_pd(const rv_conn *conn)
{
	return rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__) < 0 ? NULL : conn->qps[0]->pd;
}

RV_EXPORT rv_cq *rv_conn_cq(const rv_conn *conn)
{
	return rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__) < 0 ? NULL : conn->qps[0]->send_cq;
}

static int need_peer(const rv_conn *conn, const char *func)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, func);

	if (rc < 0)
		return rc;
	if (!conn->have_peer)
		return rv_err(ENOTCONN, func, "the exchange with %s has not completed", conn->peer_addr);
	return 0;
}

RV_EXPORT int rv_conn_peer_endpoint(const rv_conn *conn, uint32_t index, rv_endpoint *ret_ep)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);

	if (rc < 0)
		return rc;
	if (!ret_ep)
		return rv_err(EINVAL, __func__, "ret_ep is NULL");
	if (index >= conn->num_qps)
		return rv_err(EINVAL, __func__, "index %u: the connection has %u QP(s)", index, conn->num_qps);
	rc = need_peer(conn, __func__);
	if (rc < 0)
		return rc;
	*ret_ep = conn->peer[index];
	return 0;
}

RV_EXPORT int rv_conn_peer_ah(const rv_conn *conn, uint32_t index, rv_ah **ret_ah, uint32_t *ret_qpn,
			      uint32_t *ret_qkey)
{
	rv_ah_attr a;
	rv_ah *ah;
	const struct rv_qp *qp;
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);

	if (rc < 0)
		return rc;
	if (!ret_ah)
		return rv_err(EINVAL, __func__, "ret_ah is NULL");
	if (index >= conn->num_qps)
		return rv_err(EINVAL, __func__, "index %u: the connection has %u QP(s)", index, conn->num_qps);
	qp = conn->qps[index];
	if (qp->qp_type != RV_QPT_UD)
		return rv_err(EINVAL, __func__, "the connection's QPs are connected (type %u): address handles are for "
			      "UD connections (RV_CONN_ATTR_QP_TYPE RV_QPT_UD)", qp->qp_type);
	rc = need_peer(conn, __func__);
	if (rc < 0)
		return rc;
	memset(&a, 0, sizeof(a));
	if (conn->have_peer_av) { /* rdma_cm: the SIDR REP's address handle, as the CM resolved it */
		a = conn->peer_av;
		if (conn->route.mask & RV_ROUTE_HOP_LIMIT)
			a.hop_limit = conn->route.hop_limit;
	} else {
		memcpy(a.dgid, conn->peer[index].gid, 16);
		a.is_global = 1;
		a.dlid = conn->peer[index].lid;
		a.sgid_index = (uint8_t)qp->sgid.gid_index;
		a.port_num = qp->port_num;
		a.hop_limit = (conn->route.mask & RV_ROUTE_HOP_LIMIT) ? conn->route.hop_limit : 64;
	}
	if (conn->route.mask & RV_ROUTE_TRAFFIC_CLASS)
		a.traffic_class = conn->route.traffic_class;
	if (conn->route.mask & RV_ROUTE_FLOW_LABEL)
		a.flow_label = conn->route.flow_label;
	if (conn->route.mask & RV_ROUTE_SL)
		a.sl = conn->route.sl;
	rc = rv_ah_new(qp->pd, &a, &ah);
	if (rc < 0)
		return rc;
	*ret_ah = ah;
	if (ret_qpn)
		*ret_qpn = conn->peer[index].qpn;
	if (ret_qkey)
		*ret_qkey = conn->peer_qkey[index];
	return 0;
}

RV_EXPORT int rv_conn_peer_data(const rv_conn *conn, void *buf, size_t buf_len, size_t *ret_len)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);

	if (rc < 0)
		return rc;
	if (!ret_len)
		return rv_err(EINVAL, __func__, "ret_len is NULL");
	if (!buf && buf_len)
		return rv_err(EINVAL, __func__, "buf is NULL but buf_len is %zu", buf_len);
	rc = need_peer(conn, __func__);
	if (rc < 0)
		return rc;
	if (buf && buf_len < conn->peer_data_len)
		return rv_err(ENOSPC, __func__, "the peer sent %u bytes; buf has %zu", conn->peer_data_len, buf_len);
	if (buf && conn->peer_data_len)
		memcpy(buf, conn->peer_data, conn->peer_data_len);
	*ret_len = conn->peer_data_len;
	return 0;
}

RV_EXPORT int rv_conn_peer_addr(const rv_conn *conn, char *buf, size_t buf_len)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);
	size_t n;

	if (rc < 0)
		return rc;
	if (!buf)
		return rv_err(EINVAL, __func__, "buf is NULL");
	n = strlen(conn->peer_addr);
	if (buf_len <= n)
		return rv_err(ENOSPC, __func__, "buf has %zu bytes; %zu are needed", buf_len, n + 1);
	memcpy(buf, conn->peer_addr, n + 1);
	return 0;
}

RV_EXPORT int rv_conn_path_mtu(const rv_conn *conn)
{
	int rc = need_peer(conn, __func__);
	return rc < 0 ? rc : (int)conn->path_mtu;
}

RV_EXPORT int rv_conn_transport_of(const rv_conn *conn)
{
	int rc = rv_obj_check(RV_COBJ(conn), RV_OBJ_CONN, __func__);
	return rc < 0 ? rc : (int)conn->transport;
}
