/*
 * Which entry of a port's GID table a QP advertises and sends from, chosen
 * the way rdma_cm chooses it on RoCE (issue 19): the wrong GID index is the
 * most common RoCE failure, and index 0 of a kernel device is usually its
 * IPv6 link-local address, which reaches no IPv4 peer.
 *
 * The rules, best first (docs/connection-helper.md, "Which GID"):
 *   1. only entries that can reach the peer: of its family (IPv4-mapped or
 *      IPv6; RoCE v2 sends IP of the source's family) and, when the peer's
 *      endpoint names its RoCE version, of that version;
 *   2. the entry whose address the kernel uses towards the peer (the route's
 *      source address, as rdma_cm resolves it), or, for the connection
 *      helper, the local address of its control connection;
 *   3. RoCE v2 over RoCE v1 over untyped entries;
 *   4. an IPv4-mapped address over a global IPv6 one over a link-local one;
 *   5. the lowest index.
 * A device without typed entries, or an InfiniBand port, keeps index 0.
 *
 * The QP keeps its choice (struct rv_qp's sgid_*): the GID its endpoint
 * advertised is the one rv_qp_connect sends from, and rv_qp_gid_index()
 * gives it to code that builds an RTR or an address handle by hand.
 * rv_gid_check_av() refuses an address vector whose source entry cannot
 * reach its destination, naming both, instead of letting the device send
 * packets that go nowhere.
 *
 * Control path only; never called from post or poll. Never takes the
 * graph lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "driver.h"
#include "gid_select.h"

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool rv_gid_is_v4(const uint8_t g[16])
{
	return memcmp(g, v4_prefix, 12) == 0;
}

static bool gid_zero(const uint8_t g[16])
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

static bool gid_link_local(const uint8_t g[16])
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

void rv_gid_text(const uint8_t g[16], char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (rv_gid_is_v4(g))
		inet_ntop(AF_INET, g + 12, a, sizeof(a));
	else
		inet_ntop(AF_INET6, g, a, sizeof(a));
	snprintf(buf, len, "%s", a);
}

const char *rv_gid_type_name(uint32_t type)
{
	return type == RV_GID_TYPE_ROCE_V2 ? "RoCE v2" : type == RV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB/untyped";
}

static const char *family_name(const uint8_t g[16])
{
	return rv_gid_is_v4(g) ? "IPv4" : gid_link_local(g) ? "IPv6 link-local" : "IPv6";
}

/*
 * The source address the kernel uses towards peer (the route lookup rdma_cm
 * makes): a UDP socket connected to it, which sends nothing. false when
 * there is no route or the peer is link-local (which needs an interface).
 */
static bool route_source(const uint8_t peer[16], uint8_t out[16])
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	bool ok = false;
	int fd;

	if (gid_link_local(peer))
		return false;
	memset(&ss, 0, sizeof(ss));
	if (rv_gid_is_v4(peer)) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(4791);
		memcpy(&s->sin_addr, peer + 12, 4);
		sl = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(4791);
		memcpy(&s->sin6_addr, peer, 16);
		sl = sizeof(*s);
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&ss, sl) == 0) {
		sl = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			ok = rv_gid_from_sockaddr((struct sockaddr *)&ss, out);
	}
	close(fd);
	return ok;
}

bool rv_gid_from_sockaddr(const struct sockaddr *sa, uint8_t out[16])
{
	if (sa->sa_family == AF_INET) {
		memcpy(out, v4_prefix, 12);
		memcpy(out + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

/* The port's attributes (GID table length, link layer). */
static int port_table(struct rv_context *ctx, uint8_t port, rv_port_attr *pa, const char *func)
{
	int rc;

	memset(pa, 0, sizeof(*pa));
	pa->mask = RV_PORT_ATTR_ALL;
	rv_error_clear();
	rc = ctx->drv->query_port(ctx, port, pa);
	if (rc < 0)
		return rv_err_from_driver(rc, func, "querying the port");
	return 0;
}

/* 0: entry i; -EOPNOTSUPP: the device has no typed entries; -ENODATA: an
 * empty or unreadable slot. */
static int read_entry(struct rv_context *ctx, uint8_t port, uint32_t i, rv_gid_entry *e)
{
	int rc = -EOPNOTSUPP;

	memset(e, 0, sizeof(*e));
	if (ctx->drv->query_gid_entry)
		rc = ctx->drv->query_gid_entry(ctx, port, i, e);
	if (rc == -EOPNOTSUPP || rc == -ENOSYS)
		return -EOPNOTSUPP;
	if (rc < 0 || gid_zero(e->gid))
		return -ENODATA;
	e->gid_index = i;
	e->port_num = port;
	return 0;
}

/* Higher is better; -1: this entry cannot serve w. */
static int score(const rv_gid_entry *e, const struct rv_gid_want *w, const uint8_t *src)
{
	int s = 0;

	if (w->peer_gid && rv_gid_is_v4(w->peer_gid) != rv_gid_is_v4(e->gid))
		return -1;
	if (w->peer_type && e->gid_type != w->peer_type)
		return -1;
	if (src && memcmp(src, e->gid, 16) == 0)
		s += 100;
	s += e->gid_type == RV_GID_TYPE_ROCE_V2 ? 8 : e->gid_type == RV_GID_TYPE_ROCE_V1 ? 4 : 0;
	s += rv_gid_is_v4(e->gid) ? 2 : gid_link_local(e->gid) ? 0 : 1;
	return s;
}

int rv_gid_pick(struct rv_context *ctx, uint8_t port, const struct rv_gid_want *w, rv_gid_entry *ret,
		const char *func)
{
	rv_port_attr pa;
	rv_gid_entry e, best;
	uint8_t route[16];
	const uint8_t *src = w->local_gid;
	int best_score = -1, rc;
	bool any = false;

	rc = port_table(ctx, port, &pa, func);
	if (rc < 0)
		return rc;
	memset(&best, 0, sizeof(best));
	best.port_num = port;
	if (!ctx->drv->query_gid_entry || pa.link_layer != RV_LINK_LAYER_ETHERNET || pa.gid_tbl_len <= 1) {
		/* Nothing to choose: index 0, typed when a kernel device says so
		 * (soft0's typed entry costs an interface scan, and its type says
		 * nothing about its RC, which is iWARP). */
		if (ctx->dev->kind != RV_DEVICE_SOFT && ctx->drv->query_gid_entry && read_entry(ctx, port, 0, &e) == 0) {
			*ret = e;
			return 0;
		}
		rv_error_clear();
		rc = ctx->drv->query_gid(ctx, port, 0, best.gid);
		if (rc < 0)
			return rv_err_from_driver(rc, func, "querying the GID table");
		*ret = best;
		return 0;
	}
	if (!src && w->peer_gid && route_source(w->peer_gid, route))
		src = route;
	for (uint32_t i = 0; i < pa.gid_tbl_len && i < 256; i++) {
		int s;
		if (read_entry(ctx, port, i, &e) < 0)
			continue;
		any = true;
		s = score(&e, w, src);
		if (s > best_score) {
			best_score = s;
			best = e;
		}
	}
	rv_error_clear();
	if (best_score >= 0) {
		*ret = best;
		return 0;
	}
	if (!any) {
		/* Typed entries promised, none readable: as an untyped device. */
		rc = ctx->drv->query_gid(ctx, port, 0, best.gid);
		if (rc < 0)
			return rv_err_from_driver(rc, func, "querying the GID table");
		*ret = best;
		return 0;
	}
	{
		char peer[INET6_ADDRSTRLEN + 8];
		rv_gid_text(w->peer_gid, peer, sizeof(peer));
		if (w->peer_type)
			return rv_err(EADDRNOTAVAIL, func, "port %u of %s has no %s GID of the peer's family (%s): the peer "
				      "%s advertised a %s GID, and both ends of a RoCE connection must use the same "
				      "version; give the port's interface an %s address, or make the peer use the "
				      "other version", port, ctx->dev->name, rv_gid_type_name(w->peer_type),
				      family_name(w->peer_gid), peer, rv_gid_type_name(w->peer_type),
				      family_name(w->peer_gid));
		return rv_err(EADDRNOTAVAIL, func, "port %u of %s has no GID of the peer's family: the peer %s is %s, "
			      "and RoCE v2 sends from an address of the family it sends to; give the port's "
			      "interface an %s address (ip addr add), or connect to the peer's other address",
			      port, ctx->dev->name, peer, family_name(w->peer_gid), family_name(w->peer_gid));
	}
}

int rv_gid_check_peer(struct rv_context *ctx, const rv_gid_entry *mine, const uint8_t peer_gid[16],
		      uint32_t peer_type, const char *func)
{
	char m[INET6_ADDRSTRLEN + 8], p[INET6_ADDRSTRLEN + 8];

	if (mine->gid_type != RV_GID_TYPE_ROCE_V1 && mine->gid_type != RV_GID_TYPE_ROCE_V2)
		return 0; /* not RoCE: no family or version to match */
	rv_gid_text(mine->gid, m, sizeof(m));
	rv_gid_text(peer_gid, p, sizeof(p));
	if (mine->gid_type == RV_GID_TYPE_ROCE_V2 && rv_gid_is_v4(mine->gid) != rv_gid_is_v4(peer_gid))
		return rv_err(EINVAL, func, "GID index %u of %s port %u (%s, %s, %s) cannot reach the peer's GID %s "
			      "(%s): RoCE v2 sends from an address of the family it sends to; use a GID of the "
			      "peer's family (rv_qp_set_gid_index() before rv_qp_endpoint(), or "
			      "RV_CONN_ATTR_GID_INDEX), or give the peer an address of ours",
			      mine->gid_index, ctx->dev->name, mine->port_num, m, family_name(mine->gid),
			      rv_gid_type_name(mine->gid_type), p, family_name(peer_gid));
	if (peer_type && peer_type != mine->gid_type)
		return rv_err(EINVAL, func, "GID index %u of %s port %u (%s) is a %s GID, but the peer's GID %s is "
			      "%s: both ends of a RoCE connection must use the same version; choose GIDs of one "
			      "type on both sides (rv_qp_set_gid_index(), RV_CONN_ATTR_GID_INDEX)",
			      mine->gid_index, ctx->dev->name, mine->port_num, m, rv_gid_type_name(mine->gid_type), p,
			      rv_gid_type_name(peer_type));
	return 0;
}

int rv_gid_check_av(struct rv_context *ctx, const rv_ah_attr *av, const char *func)
{
	rv_port_attr pa;
	rv_gid_entry e;
	uint8_t port = av->port_num ? av->port_num : 1;
	int rc;

	/* Only a kernel RoCE device: soft0's one GID has no route to pick. */
	if (!av->is_global || ctx->dev->kind == RV_DEVICE_SOFT || !ctx->drv->query_gid_entry || gid_zero(av->dgid))
		return 0;
	memset(&pa, 0, sizeof(pa));
	pa.mask = RV_PORT_ATTR_ALL;
	if (ctx->drv->query_port(ctx, port, &pa) < 0 || pa.link_layer != RV_LINK_LAYER_ETHERNET ||
	    av->sgid_index >= pa.gid_tbl_len) {
		rv_error_clear();
		return 0; /* the driver names these itself */
	}
	rc = read_entry(ctx, port, av->sgid_index, &e);
	rv_error_clear();
	if (rc == -EOPNOTSUPP)
		return 0; /* untyped entries: nothing to check against */
	if (rc < 0) {
		return rv_err(EINVAL, func, "sgid_index %u of %s port %u is an empty GID entry; use "
			      "rv_qp_gid_index() (the GID the QP's endpoint advertises) or "
			      "rv_context_query_gid_entry() to find a filled one",
			      av->sgid_index, ctx->dev->name, port);
	}
	rc = rv_gid_check_peer(ctx, &e, av->dgid, 0, func);
	if (rc < 0) {
		struct rv_gid_want w = {.peer_gid = av->dgid};
		rv_gid_entry good;
		char why[512];
		const char *m = rv_error_last();
		size_t fl = strlen(func);
		if (strncmp(m, func, fl) == 0 && m[fl] == ':')
			m += fl + 2; /* rv_err puts the name in front again */
		snprintf(why, sizeof(why), "%s", m);
		if (rv_gid_pick(ctx, port, &w, &good, func) == 0)
			return rv_err(EINVAL, func, "%s (index %u would: rv_qp_gid_index() gives the index a QP "
				      "advertised)", why, good.gid_index);
		return rv_err(EINVAL, func, "%s", why);
	}
	return 0;
}

int rv_qp_gid_choose(struct rv_qp *qp, const struct rv_gid_want *w, bool refine, const char *func)
{
	rv_gid_entry e;
	int rc;

	if (qp->sgid_how == RV_SGID_CALLER || (qp->sgid_how == RV_SGID_AUTO && !refine))
		return 0;
	rc = rv_gid_pick(qp->ctx, qp->port_num, w, &e, func);
	if (rc < 0)
		return rc;
	qp->sgid = e;
	qp->sgid_how = RV_SGID_AUTO;
	return 0;
}

int rv_qp_gid_adopt(struct rv_qp *qp, uint32_t index)
{
	rv_gid_entry e;

	if (read_entry(qp->ctx, qp->port_num, index, &e) < 0)
		return -ENODATA;
	qp->sgid = e;
	if (qp->sgid_how != RV_SGID_CALLER)
		qp->sgid_how = RV_SGID_AUTO;
	return 0;
}
