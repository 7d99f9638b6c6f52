/*
 * rv_mcast_join / rv_mcast_leave: a UD QP joins an IP multicast group the
 * way rdma_cm's users do. On a kernel RDMA device with rdma_cm the join goes
 * to the fabric (rdma_join_multicast: the SA on InfiniBand, IGMP/MLD on
 * RoCE) and its MULTICAST_JOIN event gives the group's GID, LID, Q_Key and
 * address handle; on soft0 the group's GID is the IP group itself
 * (docs/ud.md, "Multicast"). Either way the QP is attached
 * (rv_qp_attach_mcast) and the caller gets an address handle to send to the
 * group. Control path only.
 *
 * Owns: the rdma_cm id and event channel of a fabric join, and a reference
 * on the QP until rv_mcast_leave().
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <rdma/rdma_cma.h>

#include "conn/cm.h"
#include "conn/conn-private.h"

struct rv_mcast {
	struct rv_qp *qp; /* a reference */
	uint8_t gid[16];  /* what the QP is attached to */
	uint16_t lid;
	struct sockaddr_storage group;
	struct rdma_event_channel *ch; /* fabric joins only */
	struct rdma_cm_id *id;
	bool joined; /* rdma_join_multicast succeeded: leave it */
};

/* "239.1.2.3" or "ff0e::1" (brackets allowed) to a sockaddr and its GID. */
static int parse_group(const char *group, struct sockaddr_storage *ss, uint8_t gid[16], const char *func)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(group);

	memset(ss, 0, sizeof(*ss));
	memset(gid, 0, 16);
	if (n >= 2 && n < sizeof(buf) && group[0] == '[' && group[n - 1] == ']') {
		memcpy(buf, group + 1, n - 2);
		buf[n - 2] = '\0';
	} else if (n < sizeof(buf)) {
		memcpy(buf, group, n + 1);
	} else {
		buf[0] = '\0';
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, buf, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		if (!IN_MULTICAST(ntohl(s4->sin_addr.s_addr)))
			return rv_err(EINVAL, func, "\"%s\" is not an IPv4 multicast address (224.0.0.0/4)", group);
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &s4->sin_addr, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		if (!IN6_IS_ADDR_MULTICAST(&s6->sin6_addr))
			return rv_err(EINVAL, func, "\"%s\" is not an IPv6 multicast address (ff00::/8)", group);
		memcpy(gid, &s6->sin6_addr, 16);
		return 0;
	}
	return rv_err(EINVAL, func, "group \"%s\" is not an IP multicast address (\"239.1.2.3\", \"ff0e::1\")", group);
}

static int wait_event(struct rv_mcast *m, int64_t deadline, enum rdma_cm_event_type want, struct rdma_cm_event **ret,
		      const char *what, const char *func)
{
	struct pollfd pfd = {.fd = m->ch->fd, .events = POLLIN, .revents = 0};
	int left = rv_ms_left(deadline);
	struct rdma_cm_event *ev;

	if (left == 0 || poll(&pfd, 1, left) <= 0)
		return rv_err(ETIMEDOUT, func, "%s: no rdma_cm event within the timeout", what);
	if (rdma_get_cm_event(m->ch, &ev) < 0)
		return rv_err(errno, func, "rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want) {
		int st = ev->status;
		enum rdma_cm_event_type got = ev->event;
		rdma_ack_cm_event(ev);
		return rv_err(st == -ETIMEDOUT ? ETIMEDOUT : got == RDMA_CM_EVENT_MULTICAST_ERROR ? EPROTO : EHOSTUNREACH,
			      func, "%s: expected %s, got %s (status %d)", what, rdma_event_str(want), rdma_event_str(got), st);
	}
	*ret = ev;
	return 0;
}

/* The fabric's join: the group's address handle attributes and Q_Key. */
static int join_fabric(struct rv_mcast *m, const char *group, int64_t deadline, rv_ah_attr *av, uint32_t *qkey,
		       const char *func)
{
	struct rv_context *ctx = m->qp->ctx;
	struct rdma_cm_event *ev;
	int left, rc;

	if (!(m->ch = rdma_create_event_channel()))
		return rv_err(errno, func, "rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(m->ch, &m->id, m, RDMA_PS_UDP) < 0)
		return rv_err(errno, func, "rdma_create_id: %s", strerror(errno));
	left = rv_ms_left(deadline);
	if (rdma_resolve_addr(m->id, NULL, (struct sockaddr *)&m->group, left < 0 || left > 5000 ? 5000 : left) < 0)
		return rv_err(errno, func, "rdma_resolve_addr %s: %s", group, strerror(errno));
	rc = wait_event(m, deadline, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, "resolving the group's route", func);
	if (rc < 0)
		return rc;
	rdma_ack_cm_event(ev);
	if (!m->id->verbs || strcmp(ibv_get_device_name(m->id->verbs->device), ctx->dev->name) != 0)
		return rv_err(EADDRNOTAVAIL, func, "the route to group %s leaves through device %s, not %s (the QP's)",
			      group, m->id->verbs ? ibv_get_device_name(m->id->verbs->device) : "none", ctx->dev->name);
	if (rdma_join_multicast(m->id, (struct sockaddr *)&m->group, m) < 0)
		return rv_err(errno, func, "rdma_join_multicast %s: %s", group, strerror(errno));
	rc = wait_event(m, deadline, RDMA_CM_EVENT_MULTICAST_JOIN, &ev, "joining the group", func);
	if (rc < 0) {
		rdma_leave_multicast(m->id, (struct sockaddr *)&m->group);
		return rc;
	}
	m->joined = true;
	rv_cm_av_from_ibv(&ev->param.ud.ah_attr, av);
	*qkey = ev->param.ud.qkey;
	rdma_ack_cm_event(ev);
	memcpy(m->gid, av->dgid, 16);
	m->lid = av->dlid;
	return 0;
}

static void mcast_free(struct rv_mcast *m, bool attached)
{
	if (attached)
		rv_qp_detach_mcast(m->qp, m->gid, m->lid); /* -RV_ECLOSED once the QP is gone: nothing to undo */
	if (m->joined)
		rdma_leave_multicast(m->id, (struct sockaddr *)&m->group);
	if (m->id)
		rdma_destroy_id(m->id);
	if (m->ch)
		rdma_destroy_event_channel(m->ch);
	rv_qp_unref(m->qp);
	free(m);
}

RV_EXPORT int rv_mcast_join(rv_qp *qp, const char *group, int timeout_ms, rv_mcast **ret_mcast, rv_ah **ret_ah,
			    uint32_t *ret_qkey)
{
	int64_t deadline = rv_deadline(timeout_ms);
	rv_qp_attr qa = {.mask = RV_QP_QKEY};
	struct rv_error_saved why;
	struct rv_mcast *m;
	rv_ah_attr av = {0};
	uint32_t qkey = 0;
	rv_ah *ah = NULL;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!group || !ret_mcast || !ret_ah)
		return rv_err(EINVAL, __func__, "%s is NULL", !group ? "group" : !ret_mcast ? "ret_mcast" : "ret_ah");
	if (qp->qp_type != RV_QPT_UD)
		return rv_err(EINVAL, __func__, "QP 0x%x is of type %u, not UD; only UD QPs join multicast groups",
			      qp->qpn, qp->qp_type);
	if (qp->state == RV_QPS_RESET || qp->state == RV_QPS_ERR)
		return rv_err(EINVAL, __func__, "QP 0x%x is in %s; move it to INIT (or on to RTS) first", qp->qpn,
			      qp->state == RV_QPS_RESET ? "RESET" : "ERR");
	m = calloc(1, sizeof(*m));
	if (!m)
		return rv_err(ENOMEM, __func__, "out of memory");
	m->qp = rv_qp_ref(qp);
	rc = parse_group(group, &m->group, m->gid, __func__);
	if (rc == 0)
		rc = rv_qp_query(qp, &qa);
	if (rc < 0) {
		mcast_free(m, false);
		return rc;
	}
	if (rv_cm_usable(qp->ctx)) {
		rc = join_fabric(m, group, deadline, &av, &qkey, __func__);
		/* The group's Q_Key is the fabric's (rdma_cm's RDMA_UDP_QKEY on RoCE): the QP takes it to receive. */
		if (rc == 0 && qkey != qa.qkey) {
			rv_qp_attr nq = {.mask = RV_QP_QKEY, .qkey = qkey};
			rc = rv_qp_modify(qp, &nq);
			if (rc < 0) {
				rv_error_save(&why);
				rc = rv_err(-rc, __func__, "giving QP 0x%x the group's Q_Key 0x%x (it has 0x%x): %s", qp->qpn,
					    qkey, qa.qkey, why.msg);
			}
		}
	} else if (qp->ctx->dev->kind == RV_DEVICE_VERBS) {
		rc = rv_err(EOPNOTSUPP, __func__, "device %s has no rdma_cm: join the group with the fabric yourself "
			    "and attach with rv_qp_attach_mcast()", qp->ctx->dev->name);
	} else { /* soft0: the group's GID is the IP group; the Q_Key is the QP's */
		memset(&av, 0, sizeof(av));
		memcpy(av.dgid, m->gid, 16);
		av.is_global = 1;
		av.hop_limit = 64;
		av.sgid_index = (uint8_t)qp->sgid.gid_index;
		av.port_num = qp->port_num;
		qkey = qa.qkey;
	}
	if (rc == 0)
		rc = rv_qp_attach_mcast(qp, m->gid, m->lid);
	if (rc == 0) {
		rc = rv_ah_new(qp->pd, &av, &ah);
		if (rc < 0) {
			rv_error_save(&why);
			mcast_free(m, true);
			return rv_err(-rc, __func__, "the group's address handle: %s", why.msg);
		}
	}
	if (rc < 0) {
		rv_error_save(&why);
		mcast_free(m, false);
		return rv_err(-rc, __func__, "%s", why.msg);
	}
	*ret_mcast = m;
	*ret_ah = ah;
	if (ret_qkey)
		*ret_qkey = qkey;
	return 0;
}

RV_EXPORT int rv_mcast_leave(rv_mcast *mcast)
{
	if (!mcast)
		return rv_err(EINVAL, __func__, "mcast is NULL");
	mcast_free(mcast, true);
	return 0;
}
