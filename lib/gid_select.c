/*
 * Which entry of a port's GID table a QP uses, chosen the way rdma_cm does
 * on RoCE (issue 19): the wrong GID index is the most common RoCE failure,
 * and index 0 is often the IPv6 link-local one, which does not route.
 *
 * Without a peer (rv_qp_endpoint, which advertises the GID): RoCE v2 over
 * RoCE v1 over the rest, an IPv4-mapped address over a global IPv6 one over
 * a link-local one, the lowest index among equals. With a peer's GID (a QP
 * that never gave its endpoint): the same, but only entries of the peer's
 * family (IPv4-mapped or IPv6). RVERBS_GID_INDEX=n takes entry n, as
 * NCCL_IB_GID_INDEX does. A device without typed GID entries (or with an
 * InfiniBand link layer) uses index 0, as before. The choice is kept in the
 * QP: the GID it advertised must be the one its packets come from.
 *
 * Control path only; never called from post or poll.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "rverbs-private.h"

static bool is_v4_mapped(const uint8_t g[16])
{
	static const uint8_t p[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(g, p, 12) == 0;
}

static bool is_zero(const uint8_t g[16])
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

static bool is_link_local(const uint8_t g[16])
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* Higher is better; -1: not usable for this peer. */
static int score(const rv_gid_entry *e, const uint8_t *peer)
{
	int s;

	if (is_zero(e->gid))
		return -1;
	if (peer && is_v4_mapped(peer) != is_v4_mapped(e->gid))
		return -1; /* RoCE v2 cannot send IPv6 to IPv4 or back */
	s = e->gid_type == RV_GID_TYPE_ROCE_V2 ? 8 : e->gid_type == RV_GID_TYPE_ROCE_V1 ? 4 : 0;
	if (is_v4_mapped(e->gid))
		s += 2;
	else if (!is_link_local(e->gid))
		s += 1;
	return s;
}

int rv_gid_choose(struct rv_qp *qp, const uint8_t *peer_gid, const char *func)
{
	struct rv_context *ctx = qp->ctx;
	rv_port_attr pattr;
	const char *env = getenv("RVERBS_GID_INDEX");
	int best = -1, best_score = -1, rc;
	bool typed = false; /* the device gave at least one typed entry */

	if (qp->sgid_chosen)
		return 0;
	memset(&pattr, 0, sizeof(pattr));
	pattr.mask = RV_PORT_ATTR_ALL;
	rc = ctx->drv->query_port(ctx, qp->port_num, &pattr);
	if (rc < 0)
		return rc;
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*end || v < 0 || v >= (long)pattr.gid_tbl_len || v > 255)
			return rv_err(EINVAL, func, "RVERBS_GID_INDEX=%s is not an index of port %u's GID table (%u "
				      "entries)", env, qp->port_num, pattr.gid_tbl_len);
		best = (int)v;
	} else if (ctx->drv->query_gid_entry && pattr.link_layer == RV_LINK_LAYER_ETHERNET) {
		for (uint32_t i = 0; i < pattr.gid_tbl_len && i < 256; i++) {
			rv_gid_entry e;
			int s;
			memset(&e, 0, sizeof(e));
			if (ctx->drv->query_gid_entry(ctx, qp->port_num, i, &e) < 0)
				continue; /* an empty slot */
			typed = true;
			s = score(&e, peer_gid);
			if (s > best_score) {
				best_score = s;
				best = (int)i;
			}
		}
		if (best < 0 && peer_gid && typed)
			return rv_err(EADDRNOTAVAIL, func, "port %u has no GID of the peer's family (%s): a RoCE "
				      "v2 QP sends from an address of the same family it sends to; give the port an "
				      "address of that family, or set RVERBS_GID_INDEX", qp->port_num,
				      is_v4_mapped(peer_gid) ? "IPv4" : "IPv6");
	}
	rv_error_clear();
	qp->sgid_index = (uint8_t)(best < 0 ? 0 : best);
	qp->sgid_chosen = true;
	return 0;
}
