/*
 * The rdma_cm transport for kernel RDMA devices (required by iWARP
 * hardware, whose QPs can only be connected through the kernel's CM).
 *
 * rverbs keeps its own QPs (created through the ibv driver) and lets rdma_cm
 * resolve the route and run the CM exchange; the QP transitions use the
 * attributes rdma_init_qp_attr() computes, applied through rv_qp_modify() so
 * that the facade's state tracking stays exact. rverbs' MR, capabilities and
 * application data travel in the CM private data (cm.h).
 *
 * Owns: the event channel and the cm_id of each rdma_cm connection. Every
 * wait polls the event channel's descriptor with the caller's deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>

#include <rdma/rdma_cma.h>
#include <rverbs/ibv.h>

#include "conn/cm.h"
#include "conn/conn-private.h"
#include "gid_select.h"

struct rv_cm_conn {
	struct rdma_event_channel *ch; /* NULL while the listener's channel serves the id */
	struct rdma_cm_id *id;
};

/* A client of the listener between CONNECT_REQUEST and ESTABLISHED. */
struct cm_pending {
	struct rv_conn *conn;
	int64_t deadline;
};

struct rv_cm_listener {
	struct rv_context *ctx;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_id *ud_id; /* the same address in rdma_cm's UDP port space: UD clients (SIDR) */
	struct cm_pending *pending;
	uint32_t n_pending, cap_pending;
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }
static uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static uint64_t get64(const uint8_t *p) { return ((uint64_t)get32(p) << 32) | get32(p + 4); }

static bool cm_is_iwarp(const struct rdma_cm_id *id)
{
	return id->verbs && id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

/* What the id's transport carries for the application in a request or a reply. */
static uint32_t cm_pdata_limit(const struct rdma_cm_id *id, bool reply)
{
	return rv_cm_pdata_max(cm_is_iwarp(id), reply);
}

int rv_cm_pdata_encode(const struct rv_cm_pdata *pd, void *buf, size_t cap)
{
	uint8_t *p = buf;

	size_t ext = pd->has_ud ? RV_CM_PDATA_UD : 0;

	if (pd->data_len > RV_CONN_CM_IWARP_PRIVATE_DATA_MAX || cap < RV_CM_PDATA_FIXED + pd->data_len + ext)
		return -EMSGSIZE;
	memset(p, 0, RV_CM_PDATA_FIXED);
	p[0] = 'R';
	p[1] = 'V';
	p[2] = 1;
	p[3] = (pd->has_mr ? 1 : 0) | (pd->has_ud ? 2 : 0);
	put32(p + 4, pd->caps);
	if (pd->has_mr) {
		put32(p + 8, pd->mr_rkey);
		put64(p + 12, pd->mr_addr);
		put64(p + 20, pd->mr_length);
	}
	p[28] = (uint8_t)pd->data_len;
	memcpy(p + RV_CM_PDATA_FIXED, pd->data, pd->data_len);
	if (pd->has_ud) {
		uint8_t *u = p + RV_CM_PDATA_FIXED + pd->data_len;
		put32(u, pd->ud_qpn);
		put32(u + 4, pd->ud_qkey);
		memcpy(u + 8, pd->ud_gid, 16);
		u[24] = (uint8_t)(pd->ud_lid >> 8);
		u[25] = (uint8_t)pd->ud_lid;
	}
	return (int)(RV_CM_PDATA_FIXED + pd->data_len + ext);
}

uint32_t rv_cm_pdata_max(bool iwarp, bool reply)
{
	if (iwarp)
		return RV_CONN_CM_IWARP_PRIVATE_DATA_MAX;
	return reply ? RV_CONN_CM_REPLY_PRIVATE_DATA_MAX : RV_CONN_CM_PRIVATE_DATA_MAX;
}

int rv_cm_pdata_decode(const void *buf, size_t len, struct rv_cm_pdata *pd, const char *func)
{
	const uint8_t *p = buf;

	/* The CM pads private data with zeros up to its fixed size: trailing bytes are fine. */
	if (!p || len < RV_CM_PDATA_FIXED || p[0] != 'R' || p[1] != 'V')
		return rv_err(EBADMSG, func, "the rdma_cm private data (%zu bytes) is not from rverbs", len);
	if (p[2] != 1)
		return rv_err(EPROTONOSUPPORT, func, "rdma_cm private data version %u; this library reads version 1", p[2]);
	if (p[3] & ~3u)
		return rv_err(EBADMSG, func, "unknown flags 0x%02x in the rdma_cm private data", p[3]);
	if (p[28] > RV_CONN_CM_IWARP_PRIVATE_DATA_MAX || (size_t)RV_CM_PDATA_FIXED + p[28] > len)
		return rv_err(EBADMSG, func, "the rdma_cm private data announces %u bytes of data; %zu are there (at most %d)",
			      p[28], len - RV_CM_PDATA_FIXED, RV_CONN_CM_IWARP_PRIVATE_DATA_MAX);
	memset(pd, 0, sizeof(*pd));
	pd->has_mr = p[3] & 1u;
	pd->caps = get32(p + 4);
	if (pd->has_mr) {
		pd->mr_rkey = get32(p + 8);
		pd->mr_addr = get64(p + 12);
		pd->mr_length = get64(p + 20);
	}
	pd->data_len = p[28];
	memcpy(pd->data, p + RV_CM_PDATA_FIXED, pd->data_len);
	if (p[3] & 2u) {
		const uint8_t *u = p + RV_CM_PDATA_FIXED + pd->data_len;
		if ((size_t)RV_CM_PDATA_FIXED + pd->data_len + RV_CM_PDATA_UD > len)
			return rv_err(EBADMSG, func, "the rdma_cm private data announces a UD QP; its %d bytes are missing",
				      RV_CM_PDATA_UD);
		pd->has_ud = true;
		pd->ud_qpn = get32(u) & 0xffffffu;
		pd->ud_qkey = get32(u + 4);
		memcpy(pd->ud_gid, u + 8, 16);
		pd->ud_lid = (uint16_t)((u[24] << 8) | u[25]);
	}
	return 0;
}

void rv_cm_qp_attr_from_ibv(const struct ibv_qp_attr *in, int ibv_mask, rv_qp_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->mask = (uint64_t)(unsigned)ibv_mask & RV_QP_ATTR_ALL;
	out->qp_state = in->qp_state;
	out->cur_qp_state = in->cur_qp_state;
	out->path_mtu = in->path_mtu;
	out->qkey = in->qkey;
	out->rq_psn = in->rq_psn;
	out->sq_psn = in->sq_psn;
	out->dest_qp_num = in->dest_qp_num;
	out->qp_access_flags = (uint32_t)in->qp_access_flags;
	memcpy(out->ah_attr.dgid, in->ah_attr.grh.dgid.raw, 16);
	out->ah_attr.flow_label = in->ah_attr.grh.flow_label;
	out->ah_attr.sgid_index = in->ah_attr.grh.sgid_index;
	out->ah_attr.hop_limit = in->ah_attr.grh.hop_limit;
	out->ah_attr.traffic_class = in->ah_attr.grh.traffic_class;
	out->ah_attr.is_global = in->ah_attr.is_global;
	out->ah_attr.dlid = in->ah_attr.dlid;
	out->ah_attr.sl = in->ah_attr.sl;
	out->ah_attr.src_path_bits = in->ah_attr.src_path_bits;
	out->ah_attr.static_rate = in->ah_attr.static_rate;
	out->ah_attr.port_num = in->ah_attr.port_num;
	out->pkey_index = in->pkey_index;
	out->en_sqd_async_notify = in->en_sqd_async_notify;
	out->max_rd_atomic = in->max_rd_atomic;
	out->max_dest_rd_atomic = in->max_dest_rd_atomic;
	out->min_rnr_timer = in->min_rnr_timer;
	out->port_num = in->port_num;
	out->timeout = in->timeout;
	out->retry_cnt = in->retry_cnt;
	out->rnr_retry = in->rnr_retry;
}

void rv_cm_av_from_ibv(const struct ibv_ah_attr *in, rv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->dgid, in->grh.dgid.raw, 16);
	out->flow_label = in->grh.flow_label;
	out->sgid_index = in->grh.sgid_index;
	out->hop_limit = in->grh.hop_limit;
	out->traffic_class = in->grh.traffic_class;
	out->is_global = in->is_global;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

bool rv_cm_usable(struct rv_context *ctx)
{
	struct ibv_context **list;
	bool found = false;
	int n = 0;

	if (ctx->dev->kind != RV_DEVICE_VERBS)
		return false;
	list = rdma_get_devices(&n);
	if (!list)
		return false;
	for (int i = 0; i < n && !found; i++)
		found = strcmp(ibv_get_device_name(list[i]->device), ctx->dev->name) == 0;
	rdma_free_devices(list);
	return found;
}

/* Wait for the next event on the channel: its type, or a negative errno. */
static int next_event(struct rv_cm_conn *cm, int64_t deadline, struct rdma_cm_event **ret, const char *func)
{
	struct pollfd pfd = {.fd = cm->ch->fd, .events = POLLIN, .revents = 0};
	int left = rv_ms_left(deadline);

	if (left == 0 || poll(&pfd, 1, left) <= 0)
		return rv_err(ETIMEDOUT, func, "rdma_cm: no event within the timeout");
	if (rdma_get_cm_event(cm->ch, ret) < 0)
		return rv_err(errno, func, "rdma_get_cm_event: %s", strerror(errno));
	return 0;
}

static int expect_event(struct rv_cm_conn *cm, int64_t deadline, enum rdma_cm_event_type want,
			struct rdma_cm_event **ret, const char *func)
{
	struct rdma_cm_event *ev;
	int rc = next_event(cm, deadline, &ev, func);

	if (rc < 0)
		return rc;
	if (ev->event != want) {
		int st = ev->status;
		enum rdma_cm_event_type got = ev->event;
		rdma_ack_cm_event(ev);
		int err = got == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED : EPROTO;
		if (got == RDMA_CM_EVENT_UNREACHABLE || got == RDMA_CM_EVENT_ADDR_ERROR || got == RDMA_CM_EVENT_ROUTE_ERROR)
			err = st == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
		rc = rv_err(err, func, "rdma_cm: expected %s, got %s (status %d)", rdma_event_str(want), rdma_event_str(got), st);
		return rc;
	}
	*ret = ev;
	return 0;
}

/* Apply rdma_init_qp_attr()'s attributes for state to the rverbs QP, with
 * the caller's SL, flow label and hop limit over the CM's path (its traffic
 * class and ACK timeout went to the CM itself: cm_set_options). At RTR the
 * QP adopts the CM's source GID, so rv_qp_gid_index() and the connection's
 * local endpoint say what the QP sends from. */
static int cm_modify(struct rv_cm_conn *cm, struct rv_conn *c, enum ibv_qp_state state, const char *func)
{
	const struct rv_route *r = &c->route;
	struct rv_qp *qp = c->qps[0];
	struct ibv_qp_attr ia;
	rv_qp_attr a;
	int mask = 0, rc;

	memset(&ia, 0, sizeof(ia));
	ia.qp_state = state;
	if (rdma_init_qp_attr(cm->id, &ia, &mask) < 0)
		return rv_err(errno, func, "rdma_init_qp_attr(%d): %s", (int)state, strerror(errno));
	rv_cm_qp_attr_from_ibv(&ia, mask, &a);
	if (a.mask & RV_QP_AV) {
		if (r->mask & RV_ROUTE_SL)
			a.ah_attr.sl = r->sl;
		if (r->mask & RV_ROUTE_FLOW_LABEL)
			a.ah_attr.flow_label = r->flow_label;
		if (r->mask & RV_ROUTE_HOP_LIMIT)
			a.ah_attr.hop_limit = r->hop_limit;
	}
	rc = rv_qp_modify(qp, &a);
	if (rc == 0 && (a.mask & RV_QP_AV) && a.ah_attr.is_global &&
	    rv_qp_gid_adopt(qp, a.ah_attr.sgid_index) == 0) {
		memcpy(c->local[0].gid, qp->sgid.gid, 16);
		rv_error_clear();
	}
	return rc;
}

/* UD (RDMA_PS_UDP): INIT from rdma_cm (port, P_Key, rdma_cm's Q_Key
 * RDMA_UDP_QKEY), the source GID of the id's local address (the one
 * rdma_cm resolved or the request arrived at), then RTR and RTS without a
 * peer, as librdmacm does for its own UD QPs. rdma_init_qp_attr() only
 * knows INIT for UD ids. */
static int cm_ud_ready(struct rv_cm_conn *cm, struct rv_conn *c, const char *func)
{
	struct rv_qp *qp = c->qps[0];
	rv_qp_attr qa = {.mask = RV_QP_QKEY};
	uint8_t lg[16];
	int rc = cm_modify(cm, c, IBV_QPS_INIT, func);

	if (rc == 0 && rv_gid_from_sockaddr(rdma_get_local_addr(cm->id), lg)) {
		struct rv_gid_want w = {.local_gid = lg};
		rv_gid_entry e;
		rc = rv_gid_pick(c->ctx, qp->port_num, &w, &e, func);
		if (rc == 0 && rv_qp_gid_adopt(qp, e.gid_index) == 0)
			memcpy(c->local[0].gid, qp->sgid.gid, 16);
	}
	if (rc == 0)
		rc = rv_qp_to_rtr(qp, NULL);
	if (rc == 0)
		rc = rv_qp_to_rts(qp, NULL);
	if (rc == 0)
		rc = rv_qp_query(qp, &qa);
	if (rc == 0)
		c->local_qkey[0] = qa.qkey;
	return rc;
}

/* Give an accepted connection its own channel, so that its events are its own. */
static int cm_own_channel(struct rv_conn *c, const char *func)
{
	if (!(c->cm->ch = rdma_create_event_channel()))
		return rv_err(errno, func, "rdma_create_event_channel: %s", strerror(errno));
	if (rdma_migrate_id(c->cm->id, c->cm->ch) < 0)
		return rv_err(errno, func, "rdma_migrate_id: %s", strerror(errno));
	c->fd = c->cm->ch->fd;
	return 0;
}

/* The caller's rdma_cm options on an id: type of service (before the
 * route is resolved: it selects the path) and the ACK timeout. */
static int cm_set_options(struct rdma_cm_id *id, const struct rv_route *r, const char *func)
{
	if (r->mask & RV_ROUTE_TRAFFIC_CLASS) {
		uint8_t tos = r->traffic_class;
		if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)) < 0)
			return rv_err(errno, func, "rdma_set_option(RDMA_OPTION_ID_TOS, %u): %s", tos, strerror(errno));
	}
	if (r->mask & RV_ROUTE_ACK_TIMEOUT) {
		uint8_t t = r->ack_timeout;
		if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)) < 0)
			return rv_err(errno, func, "rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT, %u): %s (the kernel "
				      "may be older than 4.19)", t, strerror(errno));
	}
	return 0;
}

/* rdma_resolve_addr (route false) or rdma_resolve_route, each attempt
 * limited to o's resolve_timeout_ms and tried again resolve_retries times
 * on an error event or a timeout, within the call's deadline. */
static int cm_resolve(struct rv_conn *c, const struct rv_conn_opts *o, const struct sockaddr *to, bool route,
		      int64_t deadline, const char *func)
{
	const char *what = route ? "rdma_resolve_route" : "rdma_resolve_addr";
	enum rdma_cm_event_type want = route ? RDMA_CM_EVENT_ROUTE_RESOLVED : RDMA_CM_EVENT_ADDR_RESOLVED;
	int rc = 0;

	for (uint32_t attempt = 0; attempt <= o->resolve_retries; attempt++) {
		struct rdma_cm_event *ev;
		int left = rv_ms_left(deadline), ms = left < 0 ? 5000 : left;
		int64_t until;
		if (o->resolve_timeout_ms && (left < 0 || (uint32_t)left > o->resolve_timeout_ms))
			ms = (int)o->resolve_timeout_ms;
		if (ms == 0)
			return rv_err(ETIMEDOUT, func, "%s %s: no time left", what, c->peer_addr);
		if ((route ? rdma_resolve_route(c->cm->id, ms) : rdma_resolve_addr(c->cm->id, NULL, (struct sockaddr *)to, ms)) < 0)
			return rv_err(errno, func, "%s %s: %s", what, c->peer_addr, strerror(errno));
		/* The kernel reports its own timeout as an error event; ours is a margin over it. */
		until = rv_deadline(ms + 1000);
		if (deadline >= 0 && deadline < until)
			until = deadline;
		rc = expect_event(c->cm, until, want, &ev, func);
		if (rc == 0) {
			rdma_ack_cm_event(ev);
			return 0;
		}
		if (attempt < o->resolve_retries)
			rv_log(RV_LOG_INFO, "%s %s failed (%s); attempt %u of %u", what, c->peer_addr, rv_error_last(),
			       attempt + 2, o->resolve_retries + 1);
	}
	return rc;
}

void rv_cm_conn_destroy(struct rv_conn *c)
{
	struct rv_cm_conn *cm = c->cm;

	if (cm->id) {
		if (c->state == RV_CONN_ESTABLISHED && cm->id->ps != RDMA_PS_UDP)
			rdma_disconnect(cm->id);
		rdma_destroy_id(cm->id);
	}
	if (cm->ch)
		rdma_destroy_event_channel(cm->ch);
	free(cm);
	c->cm = NULL;
	c->fd = -1;
}

int rv_cm_connect(struct rv_context *ctx, const char *addr, const struct rv_conn_opts *o, int timeout_ms,
		  struct rv_conn **ret, const char *func)
{
	int64_t deadline = rv_deadline(timeout_ms);
	char host[RV_HOST_MAX], port[RV_PORT_MAX];
	uint8_t pdata[RV_CM_PDATA_MAX];
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct addrinfo hints, *ai = NULL;
	struct rv_cm_pdata mine, peer;
	struct rv_conn_opts oo = *o;
	struct rv_conn *c;
	uint32_t peer_qpn = 0;
	bool ud = o->qp_type == RV_QPT_UD;
	int rc, n;

	oo.cm = true;
	if (o->caller_qps)
		for (uint32_t i = 0; i < o->num_qps; i++)
			if (o->qps[i]->state != RV_QPS_RESET)
				return rv_err(EINVAL, func, "with rdma_cm, the caller's QPs must be in RESET: the CM chooses their port and access");

	if (!rv_cm_usable(ctx))
		return rv_err(EOPNOTSUPP, func, "device %s has no rdma_cm support; use RV_CONN_TRANSPORT_TCP",
			      ctx->dev->name);
	if (o->has_gid_index)
		return rv_err(EINVAL, func, "RV_CONN_ATTR_GID_INDEX: rdma_cm chooses the GID from its route to the "
			      "peer; use RV_CONN_TRANSPORT_TCP to choose it yourself");
	if ((o->num_qps ? o->num_qps : 1) != 1)
		return rv_err(EOPNOTSUPP, func, "rdma_cm connects one QP per connection; num_qps is %u", o->num_qps);
	if (ud && (o->mask & RV_CONN_ATTR_QKEY) && o->qkey != RDMA_UDP_QKEY)
		return rv_err(EINVAL, func, "RV_CONN_ATTR_QKEY 0x%x: rdma_cm's UD QPs use its Q_Key 0x%x "
			      "(RDMA_UDP_QKEY); use RV_CONN_TRANSPORT_TCP to choose another", o->qkey, RDMA_UDP_QKEY);
	if (o->data_len > RV_CONN_CM_IWARP_PRIVATE_DATA_MAX)
		return rv_err(EMSGSIZE, func, "%u bytes of private data; an rdma_cm request carries at most %d "
			      "(RV_CONN_CM_IWARP_PRIVATE_DATA_MAX, iWARP) and %d on InfiniBand and RoCE "
			      "(RV_CONN_CM_PRIVATE_DATA_MAX); RV_CONN_TRANSPORT_TCP carries up to %d",
			      o->data_len, RV_CONN_CM_IWARP_PRIVATE_DATA_MAX, RV_CONN_CM_PRIVATE_DATA_MAX,
			      RV_CONN_PRIVATE_DATA_MAX);
	rc = rv_addr_parse(addr, host, port, func);
	if (rc < 0)
		return rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return rv_err(EHOSTUNREACH, func, "cannot resolve \"%s\"", host);
	rc = rv_conn_create(ctx, &oo, 1, false, &c, func);
	if (rc < 0) {
		freeaddrinfo(ai);
		return rc;
	}
	c->transport = RV_CONN_TRANSPORT_RDMA_CM;
	rv_sockaddr_str(ai->ai_addr, c->peer_addr);
	c->cm = calloc(1, sizeof(*c->cm));
	rc = c->cm ? 0 : rv_err(ENOMEM, func, "out of memory");
	if (rc == 0 && !(c->cm->ch = rdma_create_event_channel()))
		rc = rv_err(errno, func, "rdma_create_event_channel: %s", strerror(errno));
	if (rc == 0 && rdma_create_id(c->cm->ch, &c->cm->id, c, ud ? RDMA_PS_UDP : RDMA_PS_TCP) < 0)
		rc = rv_err(errno, func, "rdma_create_id: %s", strerror(errno));
	if (rc == 0) {
		c->fd = c->cm->ch->fd;
		rc = cm_set_options(c->cm->id, &o->route, func);
	}
	if (rc == 0)
		rc = cm_resolve(c, o, ai->ai_addr, false, deadline, func);
	freeaddrinfo(ai);
	if (rc == 0 && strcmp(ibv_get_device_name(c->cm->id->verbs->device), ctx->dev->name) != 0)
		rc = rv_err(EADDRNOTAVAIL, func, "%s is reached through device %s, not %s", c->peer_addr,
			    ibv_get_device_name(c->cm->id->verbs->device), ctx->dev->name);
	if (rc == 0)
		rc = cm_resolve(c, o, NULL, true, deadline, func);
	if (rc == 0 && o->data_len > cm_pdata_limit(c->cm->id, false))
		rc = rv_err(EMSGSIZE, func, "%u bytes of private data; an rdma_cm request on %s carries at most %u "
			    "(%s); RV_CONN_TRANSPORT_TCP carries up to %d", o->data_len, ctx->dev->name,
			    cm_pdata_limit(c->cm->id, false), cm_is_iwarp(c->cm->id) ? "iWARP, RV_CONN_CM_IWARP_PRIVATE_DATA_MAX"
			    : "InfiniBand and RoCE, RV_CONN_CM_PRIVATE_DATA_MAX", RV_CONN_PRIVATE_DATA_MAX);
	if (rc == 0)
		rc = ud ? cm_ud_ready(c->cm, c, func) : cm_modify(c->cm, c, IBV_QPS_INIT, func);
	memset(&mine, 0, sizeof(mine));
	if (ud) { /* the SIDR REQ names no QP: the server learns ours here */
		mine.has_ud = true;
		mine.ud_qpn = c->qps[0]->qpn;
		mine.ud_qkey = c->local_qkey[0];
		memcpy(mine.ud_gid, c->local[0].gid, 16);
		mine.ud_lid = c->local[0].lid;
	}
	mine.caps = c->local[0].caps;
	mine.has_mr = o->has_mr;
	mine.mr_addr = o->mr_addr;
	mine.mr_length = o->mr_length;
	mine.mr_rkey = o->mr_rkey;
	mine.data_len = o->data_len;
	if (o->data_len)
		memcpy(mine.data, o->data, o->data_len);
	n = rv_cm_pdata_encode(&mine, pdata, sizeof(pdata));
	if (rc == 0) {
		memset(&param, 0, sizeof(param));
		param.private_data = pdata;
		param.private_data_len = (uint8_t)n;
		param.responder_resources = 16;
		param.initiator_depth = 16;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		param.qp_num = c->qps[0]->qpn;
		if (rdma_connect(c->cm->id, &param) < 0)
			rc = rv_err(errno, func, "rdma_connect %s: %s", c->peer_addr, strerror(errno));
	}
	if (rc == 0 && ud && (rc = next_event(c->cm, deadline, &ev, func)) == 0) {
		/* SIDR REP: ESTABLISHED with the server's QPN, Q_Key and the address
		 * handle attributes to reach it; a refusal is UNREACHABLE with the
		 * SIDR status (1: no listener, 2: rejected). */
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			rc = rv_cm_pdata_decode(ev->param.ud.private_data, ev->param.ud.private_data_len, &peer, func);
			peer_qpn = ev->param.ud.qp_num;
			c->peer_qkey[0] = ev->param.ud.qkey;
			rv_cm_av_from_ibv(&ev->param.ud.ah_attr, &c->peer_av);
			c->have_peer_av = true;
		} else if (ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status > 0) {
			rc = rv_err(ECONNREFUSED, func, "rdma_cm: %s refused the UD request (SIDR status %d%s)",
				    c->peer_addr, ev->status, ev->status == 2 ? ": rejected; the server's error says why"
				    : ev->status == 1 ? ": nothing listens there for UD clients" : "");
		} else {
			rc = rv_err(ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status == -ETIMEDOUT ? ETIMEDOUT
				    : ev->event == RDMA_CM_EVENT_UNREACHABLE ? EHOSTUNREACH : EPROTO, func,
				    "rdma_cm: expected %s, got %s (status %d)", rdma_event_str(RDMA_CM_EVENT_ESTABLISHED),
				    rdma_event_str(ev->event), ev->status);
		}
		rdma_ack_cm_event(ev);
	}
	if (rc == 0 && !ud && (rc = expect_event(c->cm, deadline, RDMA_CM_EVENT_CONNECT_RESPONSE, &ev, func)) == 0) {
		rc = rv_cm_pdata_decode(ev->param.conn.private_data, ev->param.conn.private_data_len, &peer, func);
		peer_qpn = ev->param.conn.qp_num; /* the REP's local QPN: the listener's QP */
		rdma_ack_cm_event(ev);
	}
	if (rc == 0 && (c->required_caps & ~peer.caps))
		rc = rv_err(EOPNOTSUPP, func, "%s's device lacks capabilities 0x%x that this connection requires",
			    c->peer_addr, c->required_caps & ~peer.caps);
	/* INIT again, as librdmacm does on the CM reply: before it, rdma_cm knows
	 * nothing of the responder and gives qp_access_flags 0, so a peer's
	 * WRITE or READ would fail with remote invalid request. */
	if (rc == 0 && !ud)
		rc = cm_modify(c->cm, c, IBV_QPS_INIT, func);
	if (rc == 0 && !ud)
		rc = cm_modify(c->cm, c, IBV_QPS_RTR, func);
	if (rc == 0 && !ud)
		rc = cm_modify(c->cm, c, IBV_QPS_RTS, func);
	if (rc == 0 && !ud && rdma_establish(c->cm->id) < 0)
		rc = rv_err(errno, func, "rdma_establish: %s", strerror(errno));
	if (rc < 0) {
		if (c->cm && c->cm->id && !ud)
			rdma_reject(c->cm->id, NULL, 0);
		rv_conn_discard(c);
		return rc;
	}
	c->peer[0] = c->local[0];
	c->peer[0].mask = peer.has_mr ? RV_ENDPOINT_MR : 0;
	c->peer[0].caps = peer.caps;
	c->peer[0].mr_addr = peer.mr_addr;
	c->peer[0].mr_length = peer.mr_length;
	c->peer[0].mr_rkey = peer.mr_rkey;
	c->peer[0].qpn = peer_qpn;
	if (ud) {
		memcpy(c->peer[0].gid, c->peer_av.dgid, 16);
		c->peer[0].lid = c->peer_av.dlid;
	}
	if (peer.data_len) {
		c->peer_data = malloc(peer.data_len);
		if (c->peer_data) {
			memcpy(c->peer_data, peer.data, peer.data_len);
			c->peer_data_len = peer.data_len;
		}
	}
	c->path_mtu = c->local[0].mtu;
	c->have_peer = true;
	c->state = RV_CONN_ESTABLISHED;
	c->phase = RV_PH_ESTABLISHED;
	*ret = c;
	return 0;
}

int rv_cm_conn_poll(struct rv_conn *c, int timeout_ms, uint32_t *ret_event, const char *func)
{
	struct rdma_cm_event *ev;
	int rc;

	*ret_event = RV_CONN_EVENT_NONE;
	if (c->state != RV_CONN_ESTABLISHED)
		return 0;
	rc = next_event(c->cm, rv_deadline(timeout_ms), &ev, func);
	if (rc == -ETIMEDOUT) {
		rv_error_clear();
		return 0;
	}
	if (rc < 0)
		return rc;
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		rv_conn_qps_to_err(c);
		c->state = RV_CONN_DISCONNECTED;
		*ret_event = RV_CONN_EVENT_DISCONNECTED;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

int rv_cm_conn_disconnect(struct rv_conn *c, int timeout_ms, const char *func)
{
	struct rdma_cm_event *ev;
	int rc;

	if (c->state != RV_CONN_ESTABLISHED)
		return 0;
	if (c->cm->id->ps == RDMA_PS_UDP) { /* SIDR has no disconnect: the peer is not told */
		rv_conn_qps_to_err(c);
		c->state = RV_CONN_DISCONNECTED;
		return 0;
	}
	rdma_disconnect(c->cm->id);
	rv_conn_qps_to_err(c);
	c->state = RV_CONN_DISCONNECTED;
	rc = expect_event(c->cm, rv_deadline(timeout_ms), RDMA_CM_EVENT_DISCONNECTED, &ev, func);
	if (rc == 0)
		rdma_ack_cm_event(ev);
	return rc;
}

/* ---- the listening side ---- */

int rv_cm_listen(struct rv_context *ctx, const char *addr, uint32_t backlog, struct rv_cm_listener **ret,
		 int *ret_port, int *ret_fd, const char *func)
{
	char host[RV_HOST_MAX], port[RV_PORT_MAX];
	struct addrinfo hints, *ai = NULL;
	struct rv_cm_listener *cml;
	int rc = rv_addr_parse(addr, host, port, func);

	if (rc < 0)
		return rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &ai) != 0)
		return rv_err(EHOSTUNREACH, func, "cannot resolve \"%s\"", host);
	cml = calloc(1, sizeof(*cml));
	if (!cml) {
		freeaddrinfo(ai);
		return rv_err(ENOMEM, func, "out of memory");
	}
	cml->ctx = ctx;
	if (!(cml->ch = rdma_create_event_channel()))
		rc = rv_err(errno, func, "rdma_create_event_channel: %s", strerror(errno));
	else if (rdma_create_id(cml->ch, &cml->id, NULL, RDMA_PS_TCP) < 0)
		rc = rv_err(errno, func, "rdma_create_id: %s", strerror(errno));
	else if (rdma_bind_addr(cml->id, ai->ai_addr) < 0)
		rc = rv_err(errno, func, "rdma_bind_addr \"%s\": %s", addr, strerror(errno));
	else if (cml->id->verbs && strcmp(ibv_get_device_name(cml->id->verbs->device), ctx->dev->name) != 0)
		rc = rv_err(EADDRNOTAVAIL, func, "\"%s\" belongs to device %s, not %s", addr,
			    ibv_get_device_name(cml->id->verbs->device), ctx->dev->name);
	else if (rdma_listen(cml->id, (int)backlog) < 0)
		rc = rv_err(errno, func, "rdma_listen: %s", strerror(errno));
	/* UD clients come in rdma_cm's UDP port space, on the same port. Not on
	 * iWARP (no UD; its CM listens on the TCP port itself). Best effort: a
	 * listener that cannot listen there still serves RC and UC clients, and
	 * a UD client's SIDR REQ is refused by the kernel's CM (no listener). */
	if (rc == 0 && !(cml->id->verbs && cm_is_iwarp(cml->id))) {
		struct sockaddr_storage ss;
		const char *fail = NULL;
		memcpy(&ss, rdma_get_local_addr(cml->id), sizeof(ss));
		if (ss.ss_family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = rdma_get_src_port(cml->id);
		else
			((struct sockaddr_in6 *)&ss)->sin6_port = rdma_get_src_port(cml->id);
		if (rdma_create_id(cml->ch, &cml->ud_id, NULL, RDMA_PS_UDP) < 0)
			fail = "rdma_create_id(RDMA_PS_UDP)";
		else if (rdma_bind_addr(cml->ud_id, (struct sockaddr *)&ss) < 0)
			fail = "rdma_bind_addr(RDMA_PS_UDP)";
		else if (rdma_listen(cml->ud_id, (int)backlog) < 0)
			fail = "rdma_listen(RDMA_PS_UDP)";
		if (fail) {
			rv_log(RV_LOG_INFO, "listener \"%s\": %s: %s; UD clients are not served over rdma_cm", addr, fail,
			       strerror(errno));
			if (cml->ud_id)
				rdma_destroy_id(cml->ud_id);
			cml->ud_id = NULL;
		}
	}
	freeaddrinfo(ai);
	if (rc < 0) {
		rv_cm_listener_destroy(cml);
		return rc;
	}
	*ret_port = ntohs(rdma_get_src_port(cml->id));
	*ret_fd = cml->ch->fd;
	*ret = cml;
	return 0;
}

void rv_cm_listener_destroy(struct rv_cm_listener *cml)
{
	for (uint32_t i = 0; i < cml->n_pending; i++)
		rv_conn_discard(cml->pending[i].conn);
	free(cml->pending);
	if (cml->ud_id)
		rdma_destroy_id(cml->ud_id);
	if (cml->id)
		rdma_destroy_id(cml->id);
	if (cml->ch)
		rdma_destroy_event_channel(cml->ch);
	free(cml);
}

static void drop_pending(struct rv_cm_listener *cml, uint32_t i)
{
	cml->pending[i] = cml->pending[--cml->n_pending];
}

/* CONNECT_REQUEST: make the connection, INIT, RTR and RTS from the CM, then
 * accept. RTS comes before the REP, as in librdmacm's rdma_accept(): the CM
 * allows it from REQ_RCVD on, while after ESTABLISHED a client that has
 * already disconnected (DREQ received) makes rdma_init_qp_attr() fail. */
/*
 * A UD client names its QP's GID in rverbs' private data (the SIDR REQ
 * names no QP), and the server's datagrams go there (rv_conn_peer_ah). On
 * an Ethernet port (RoCE) that GID is the request's source address, so it
 * must be: otherwise a client could aim the server's datagrams at another
 * host. On InfiniBand a GID is not an address and is taken as named.
 */
static int ud_peer_gid_check(struct rdma_cm_id *id, const uint8_t gid[16], const char *peer_addr,
			     const char *func)
{
	struct ibv_port_attr pa;
	uint8_t want[16];
	char named[RV_ADDR_STR_MAX];

	if (ibv_query_port(id->verbs, id->port_num, &pa) != 0)
		return rv_err(EIO, func, "cannot query port %u of %s to check the UD client's GID", id->port_num,
			      ibv_get_device_name(id->verbs->device));
	if (pa.link_layer != IBV_LINK_LAYER_ETHERNET)
		return 0;
	if (rv_gid_from_sockaddr(rdma_get_peer_addr(id), want) && memcmp(want, gid, 16) == 0)
		return 0;
	rv_gid_text(gid, named, sizeof(named));
	return rv_err(EPROTO, func, "the UD client's private data names GID %s, not its own address %s: "
		      "refused (this server's datagrams would go to another host)", named, peer_addr);
}

static int on_connect_request(struct rv_cm_listener *cml, struct rdma_cm_event *ev, const struct rv_conn_opts *o,
			      uint32_t hs_timeout_ms, struct rdma_cm_id **ret_dead, struct rv_conn **ret_ud,
			      const char *func)
{
	struct rdma_cm_id *id = ev->id;
	bool ud = id->ps == RDMA_PS_UDP;
	bool want_ud = (o->caller_qps ? o->qps[0]->qp_type : o->qp_type) == RV_QPT_UD;
	const void *req_pdata = ud ? ev->param.ud.private_data : ev->param.conn.private_data;
	uint8_t req_pdata_len = ud ? ev->param.ud.private_data_len : ev->param.conn.private_data_len;
	struct rv_conn_opts oo = *o;
	struct rdma_conn_param param;
	struct rv_cm_pdata peer, mine;
	uint8_t pdata[RV_CM_PDATA_MAX];
	struct rv_conn *c = NULL;
	char peer_addr[RV_ADDR_STR_MAX];
	int rc, n;

	rv_sockaddr_str(rdma_get_peer_addr(id), peer_addr);
	oo.cm = true;
	rc = rv_cm_pdata_decode(req_pdata, req_pdata_len, &peer, func);
	if (rc == 0 && ud != want_ud)
		rc = rv_err(EPROTO, func, "the client asks for %s QPs (%s); this server's are %s", ud ? "UD" : "connected",
			    ud ? "RDMA_PS_UDP" : "RDMA_PS_TCP", want_ud ? "UD" : "connected");
	if (rc == 0 && ud && !peer.has_ud)
		rc = rv_err(EBADMSG, func, "a UD request without the client's QP in its private data");
	if (rc == 0 && ud)
		rc = ud_peer_gid_check(id, peer.ud_gid, peer_addr, func);
	if (rc == 0 && ud && (o->mask & RV_CONN_ATTR_QKEY) && o->qkey != RDMA_UDP_QKEY)
		rc = rv_err(EINVAL, func, "RV_CONN_ATTR_QKEY 0x%x: rdma_cm's UD QPs use its Q_Key 0x%x (RDMA_UDP_QKEY)",
			    o->qkey, RDMA_UDP_QKEY);
	if (rc == 0 && strcmp(ibv_get_device_name(id->verbs->device), cml->ctx->dev->name) != 0)
		rc = rv_err(EADDRNOTAVAIL, func, "arrived on device %s, not %s", ibv_get_device_name(id->verbs->device),
			    cml->ctx->dev->name);
	if (rc == 0 && o->num_qps > 1)
		rc = rv_err(EPROTO, func, "rdma_cm connects one QP; this server wants %u", o->num_qps);
	if (rc == 0 && o->has_gid_index)
		rc = rv_err(EINVAL, func, "RV_CONN_ATTR_GID_INDEX: rdma_cm chooses the GID from the client's "
			    "route; listen with RV_CONN_TRANSPORT_TCP to choose it yourself");
	if (rc == 0 && o->caller_qps && o->qps[0]->state != RV_QPS_RESET)
		rc = rv_err(EBUSY, func, "the QP given to rv_listener_accept() is not in RESET (already serving a client?)");
	if (rc == 0 && (o->required_caps & ~peer.caps))
		rc = rv_err(EOPNOTSUPP, func, "the client's device lacks capabilities 0x%x that this connection requires",
			    o->required_caps & ~peer.caps);
	if (rc == 0)
		rc = rv_conn_create(cml->ctx, &oo, 1, true, &c, func);
	if (rc == 0) {
		c->transport = RV_CONN_TRANSPORT_RDMA_CM;
		memcpy(c->peer_addr, peer_addr, sizeof(peer_addr));
		c->cm = calloc(1, sizeof(*c->cm));
		if (!c->cm)
			rc = rv_err(ENOMEM, func, "out of memory");
	}
	if (rc == 0) {
		c->cm->id = id;
		id->context = c;
		/* The client's type of service chose the path; ours only marks our packets. */
		rc = cm_set_options(id, &o->route, func);
	}
	if (rc == 0 && ud)
		rc = cm_ud_ready(c->cm, c, func);
	if (rc == 0 && !ud)
		rc = cm_modify(c->cm, c, IBV_QPS_INIT, func);
	if (rc == 0 && !ud)
		rc = cm_modify(c->cm, c, IBV_QPS_RTR, func);
	if (rc == 0 && !ud)
		rc = cm_modify(c->cm, c, IBV_QPS_RTS, func);
	if (rc == 0) {
		memset(&mine, 0, sizeof(mine));
		mine.caps = c->local[0].caps;
		mine.has_mr = o->has_mr;
		mine.mr_addr = o->mr_addr;
		mine.mr_length = o->mr_length;
		mine.mr_rkey = o->mr_rkey;
		uint32_t lim = ud ? RV_CONN_CM_UD_REPLY_PRIVATE_DATA_MAX : cm_pdata_limit(id, true);
		mine.data_len = o->data_len <= lim ? o->data_len : 0;
		if (mine.data_len)
			memcpy(mine.data, o->data, mine.data_len);
		if (ud && o->data_len > lim)
			rc = rv_err(EMSGSIZE, func, "%u bytes of private data; an rdma_cm reply to a UD client (SIDR REP) "
				    "carries at most %u (RV_CONN_CM_UD_REPLY_PRIVATE_DATA_MAX)", o->data_len, lim);
		else if (o->data_len > cm_pdata_limit(id, true))
			rc = rv_err(EMSGSIZE, func, "%u bytes of private data; an rdma_cm reply on %s carries at most %u "
				    "(%s)", o->data_len, ibv_get_device_name(id->verbs->device), cm_pdata_limit(id, true),
				    cm_is_iwarp(id) ? "iWARP, RV_CONN_CM_IWARP_PRIVATE_DATA_MAX"
						    : "InfiniBand and RoCE, RV_CONN_CM_REPLY_PRIVATE_DATA_MAX");
	}
	if (rc == 0) {
		n = rv_cm_pdata_encode(&mine, pdata, sizeof(pdata));
		memset(&param, 0, sizeof(param));
		param.private_data = pdata;
		param.private_data_len = (uint8_t)n;
		if (!ud) {
			param.responder_resources = ev->param.conn.initiator_depth;
			param.initiator_depth = ev->param.conn.responder_resources;
			param.rnr_retry_count = 7;
		}
		param.qp_num = c->qps[0]->qpn; /* UD: the SIDR REP's QPN; its Q_Key is rdma_cm's (RDMA_UDP_QKEY) */
		if (rdma_accept(id, &param) < 0)
			rc = rv_err(errno, func, "rdma_accept: %s", strerror(errno));
	}
	if (rc == 0 && !ud && cml->n_pending == cml->cap_pending) {
		uint32_t cap = cml->cap_pending ? cml->cap_pending * 2 : 16;
		struct cm_pending *np = realloc(cml->pending, cap * sizeof(*np));
		if (!np)
			rc = rv_err(ENOMEM, func, "out of memory");
		else {
			cml->pending = np;
			cml->cap_pending = cap;
		}
	}
	if (rc < 0) {
		struct rv_error_saved err;
		rv_error_save(&err);
		if (c) {
			c->cm->id = NULL; /* the listener's event handling owns it until accepted */
			rv_conn_discard(c);
		}
		rdma_reject(id, NULL, 0);
		*ret_dead = id; /* destroyed once its event is acknowledged */
		return rv_err(-rc, func, "client %s: %s", peer_addr, rv_error_text(&err, func));
	}
	c->have_peer = true;
	c->peer[0] = c->local[0];
	c->peer[0].mask = peer.has_mr ? RV_ENDPOINT_MR : 0;
	c->peer[0].caps = peer.caps;
	c->peer[0].mr_addr = peer.mr_addr;
	c->peer[0].mr_length = peer.mr_length;
	c->peer[0].mr_rkey = peer.mr_rkey;
	c->peer[0].qpn = ev->param.conn.qp_num; /* the REQ's local QPN: the client's QP */
	if (ud) { /* the SIDR REQ names no QP: the client's came in rverbs' private data */
		c->peer[0].qpn = peer.ud_qpn;
		memcpy(c->peer[0].gid, peer.ud_gid, 16);
		c->peer[0].lid = peer.ud_lid;
		c->peer_qkey[0] = peer.ud_qkey;
	}
	if (peer.data_len && (c->peer_data = malloc(peer.data_len))) {
		memcpy(c->peer_data, peer.data, peer.data_len);
		c->peer_data_len = peer.data_len;
	}
	c->path_mtu = c->local[0].mtu;
	if (ud) { /* established with the SIDR REP: no ESTABLISHED event follows */
		*ret_ud = c;
		return 0;
	}
	cml->pending[cml->n_pending].conn = c;
	cml->pending[cml->n_pending].deadline = rv_now_ms() + hs_timeout_ms;
	cml->n_pending++;
	return 0;
}

int rv_cm_listener_event(struct rv_cm_listener *cml, const struct rv_conn_opts *o, uint32_t hs_timeout_ms,
			 struct rv_conn **ret, const char *func)
{
	struct rdma_cm_event *ev;
	struct rv_conn *c = NULL;
	uint32_t i;
	int rc;

	if (rdma_get_cm_event(cml->ch, &ev) < 0)
		return errno == EAGAIN ? 0 : rv_err(errno, func, "rdma_get_cm_event: %s", strerror(errno));
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct rdma_cm_id *dead = NULL;
		rc = on_connect_request(cml, ev, o, hs_timeout_ms, &dead, &c, func);
		rdma_ack_cm_event(ev);
		if (dead)
			rdma_destroy_id(dead);
		if (rc < 0 || !c)
			return rc;
		rc = cm_own_channel(c, func); /* after the ack: rdma_migrate_id waits for it */
		if (rc < 0) {
			rv_conn_discard(c);
			return rc;
		}
		c->state = RV_CONN_ESTABLISHED;
		c->phase = RV_PH_ESTABLISHED;
		*ret = c;
		return 1;
	}
	for (i = 0; i < cml->n_pending; i++)
		if (cml->pending[i].conn->cm->id == ev->id)
			break;
	if (i == cml->n_pending) {
		rdma_ack_cm_event(ev);
		return 0;
	}
	c = cml->pending[i].conn;
	drop_pending(cml, i);
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		rc = rv_err(ECONNRESET, func, "client %s: %s before the connection was established", c->peer_addr,
			    rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		rv_conn_discard(c);
		return rc;
	}
	rdma_ack_cm_event(ev);
	/* Give the connection its own channel, so that its events (disconnect) are its own. */
	rc = cm_own_channel(c, func);
	if (rc < 0) {
		rv_conn_discard(c);
		return rc;
	}
	c->state = RV_CONN_ESTABLISHED;
	c->phase = RV_PH_ESTABLISHED;
	*ret = c;
	return 1;
}

int rv_cm_listener_expire(struct rv_cm_listener *cml, const char *func)
{
	int64_t now = rv_now_ms();

	for (uint32_t i = 0; i < cml->n_pending; i++) {
		struct rv_conn *c = cml->pending[i].conn;
		if (cml->pending[i].deadline > now)
			continue;
		int rc = rv_err(ETIMEDOUT, func, "client %s did not complete the rdma_cm exchange in time", c->peer_addr);
		drop_pending(cml, i);
		rv_conn_discard(c);
		return rc;
	}
	return 0;
}
