/*
 * QP state transitions and queries through libibverbs.
 *
 * Owns: ibv_modify_qp / ibv_query_qp calls and the words for their failures.
 * The facade has already checked the transition against the state table and
 * records the new state on success; this file never changes qp->state itself.
 */
#include <errno.h>
#include <string.h>

#include "ibv-driver.h"
#include "translate.h"

static const char *mtu_name(uint32_t mtu)
{
	static const char *const names[] = { "?", "256", "512", "1024", "2048", "4096" };

	return mtu < sizeof(names) / sizeof(names[0]) ? names[mtu] : "?";
}

/* Why a transition to RTR or RTS is usually refused, for this port. */
static void hint_modify(struct rv_qp *qp, const rv_qp_attr *attr, int err)
{
	struct ibv_context *c = rv_ibv_ctx(qp->ctx);
	uint8_t port = (attr->mask & RV_QP_PORT) ? attr->port_num : qp->port_num;
	/* Without RV_QP_STATE the QP stays where it is. */
	uint32_t target = (attr->mask & RV_QP_STATE) ? attr->qp_state : qp->state;
	struct ibv_port_attr pattr;

	if (c->device->transport_type == IBV_TRANSPORT_IWARP &&
	    (target == RV_QPS_RTR || target == RV_QPS_RTS)) {
		rv_err_hint("%s is an iWARP device: its QPs are connected through rdma_cm, "
			    "the kernel refuses ibv_modify_qp to RTR/RTS", qp->ctx->dev->name);
		return;
	}
	if (ibv_query_port(c, port ? port : 1, &pattr) != 0) {
		if (err == EINVAL)
			rv_err_hint("check port_num (%u): ports are numbered from 1", port);
		return;
	}
	if (target == RV_QPS_RTR && (attr->mask & RV_QP_AV)) {
		if (pattr.link_layer == IBV_LINK_LAYER_ETHERNET && !attr->ah_attr.is_global) {
			rv_err_hint("port %u is Ethernet (RoCE): the address vector needs a GRH "
				    "(is_global 1, the peer's dgid, the sgid_index rv_qp_gid_index() gives)", port);
			return;
		}
		if (attr->ah_attr.is_global && attr->ah_attr.sgid_index >= pattr.gid_tbl_len) {
			rv_err_hint("sgid_index %u is past the GID table of port %u (%d entries); "
				    "rv_qp_gid_index() gives the GID the QP's endpoint advertised",
				    attr->ah_attr.sgid_index, port, pattr.gid_tbl_len);
			return;
		}
		if ((attr->mask & RV_QP_PATH_MTU) && attr->path_mtu > (uint32_t)pattr.active_mtu) {
			rv_err_hint("path_mtu %s exceeds the active MTU %s of port %u",
				    mtu_name(attr->path_mtu), mtu_name((uint32_t)pattr.active_mtu),
				    port);
			return;
		}
		if (pattr.link_layer == IBV_LINK_LAYER_ETHERNET && err != EINVAL) {
			rv_err_hint("on RoCE the kernel resolves the peer GID to a MAC address: check "
				    "that the peer's address is reachable through port %u's network "
				    "interface", port);
			return;
		}
	}
	if (pattr.state != IBV_PORT_ACTIVE) {
		rv_err_hint("port %u is not ACTIVE (state %d)", port, (int)pattr.state);
		return;
	}
	if (err == EINVAL) {
		struct ibv_device_attr dattr;

		if ((attr->mask & (RV_QP_MAX_QP_RD_ATOMIC | RV_QP_MAX_DEST_RD_ATOMIC)) &&
		    ibv_query_device(c, &dattr) == 0)
			rv_err_hint("an attribute is out of range for the transition (mask 0x%llx); "
				    "rd_atomic: requested %u/%u, the device allows %d as initiator and "
				    "%d as target",
				    (unsigned long long)attr->mask, attr->max_rd_atomic,
				    attr->max_dest_rd_atomic, dattr.max_qp_init_rd_atom,
				    dattr.max_qp_rd_atom);
		else
			rv_err_hint("an attribute is missing, forbidden or out of range for this "
				    "transition (mask 0x%llx)", (unsigned long long)attr->mask);
	}
}

int rv_ibv_qp_modify(struct rv_qp *qp, const rv_qp_attr *attr)
{
	struct ibv_qp_attr a;
	char ebuf[128];
	int mask, rc, err;

	rv_ibv_qp_attr_to_ibv(attr, &a, &mask);
	rc = ibv_modify_qp(qp->drv_qp, &a, mask);
	if (rc == 0)
		return 0;
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_qp_modify", "ibv_modify_qp(QP %u, %s -> %s) on %s failed: %s", qp->qpn,
	       rv_ibv_qp_state_name(qp->state),
	       (attr->mask & RV_QP_STATE) ? rv_ibv_qp_state_name(attr->qp_state) : "same state",
	       qp->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	hint_modify(qp, attr, err);
	return -err;
}

int rv_ibv_qp_query(struct rv_qp *qp, rv_qp_attr *attr)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	char ebuf[128];
	int rc, err;

	memset(&a, 0, sizeof(a));
	memset(&init, 0, sizeof(init));
	/* Always ask for the state: some providers fill nothing for an empty
	 * mask, and the state is the one field a caller must never get stale. */
	rc = ibv_query_qp(qp->drv_qp, &a, rv_ibv_qp_attr_mask_to_ibv(attr->mask) | IBV_QP_STATE,
			  &init);
	if (rc != 0) {
		err = rv_ibv_errno(rc);
		return rv_err(err, "rv_qp_query", "ibv_query_qp(QP %u) on %s failed: %s", qp->qpn,
			      qp->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	rv_ibv_qp_attr_from_ibv(&a, attr);
	return 0;
}
