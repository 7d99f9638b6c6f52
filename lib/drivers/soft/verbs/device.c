/*
 * The software device "soft0": discovery and the device/port/GID queries.
 *
 * Owns: the soft_device object and the capability numbers. The port is the
 * context's TCP listener: state ACTIVE, link layer Ethernet, GID the listen
 * address (IPv4-mapped for IPv4), LID the listen port. active_mtu is
 * RV_MTU_4096, the payload of one FPDU (SOFT_FPDU_PAYLOAD). The one GID
 * entry is typed RoCE v2 (UD goes out as RoCE v2 framing over UDP, roce.c)
 * and names the interface that owns the listen address (getifaddrs; 0 for
 * the wildcard address). The one P_Key is the default 0xffff. Never blocks.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/soft.h"

int soft_probe(rv_driver_add_fn add, void *cookie)
{
	struct soft_device *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return rv_err(ENOMEM, "rv_device_list", "out of memory for the software device");
	snprintf(d->name, sizeof(d->name), "soft0");
	rc = add(cookie, d->name, d);
	if (rc < 0)
		free(d);
	return rc;
}

void soft_device_release(void *drv_dev)
{
	free(drv_dev);
}

bool soft_device_active(void *drv_dev)
{
	(void)drv_dev;
	return true;
}

/*
 * The RV_DEVICE_ATTR_EX part (docs/extended-verbs.md). soft0 stamps every
 * completion from its clock, CLOCK_MONOTONIC in ns (soft_clock_raw), so the
 * core clock is 1 GHz and the stamp has all 64 bits. Its memory is always
 * on-demand: a registration pins nothing, and every access goes through the
 * kernel at the time of the access (memory/mr.c: process_vm_readv/writev),
 * so a page that is not there is faulted in, and an unmapped one fails that
 * access with an error completion instead of a signal. Implicit ODP too: an
 * MR of the whole address space (memory/mr.c: every access to it fault-safe,
 * the sends from it included). No packet pacing, no device memory, no PCIe (its atomics
 * are the CPU's: atomic_cap), no flow steering, no atomic write.
 */
static void query_device_ex(const struct soft_ctx *sc, rv_device_attr *a)
{
	bool atomics = sc->caps & RV_SOFT_CAP_ATOMIC;

	a->device_cap_flags_ex = SOFT_DEVICE_CAP_FLAGS;
	a->completion_timestamp_mask = UINT64_MAX;
	a->hca_core_clock = 1000000; /* kHz: one tick per nanosecond */
	a->max_dm_size = 0;
	a->odp_general_caps = RV_ODP_SUPPORT | RV_ODP_SUPPORT_IMPLICIT;
	a->odp_rc_caps = RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_RECV | RV_ODP_SUPPORT_WRITE | RV_ODP_SUPPORT_READ |
			 RV_ODP_SUPPORT_SRQ_RECV | (atomics ? RV_ODP_SUPPORT_ATOMIC : 0);
	a->odp_uc_caps = RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_RECV | RV_ODP_SUPPORT_WRITE | RV_ODP_SUPPORT_SRQ_RECV;
	a->odp_ud_caps = RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_RECV | RV_ODP_SUPPORT_SRQ_RECV;
	/* XRC: the same paths as RC (the target's SRQ receives, its MRs serve RDMA). */
	a->odp_xrc_caps = RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_WRITE | RV_ODP_SUPPORT_READ | RV_ODP_SUPPORT_SRQ_RECV |
			  (atomics ? RV_ODP_SUPPORT_ATOMIC : 0);
	a->pp_rate_limit_min = 0;
	a->pp_rate_limit_max = 0;
	a->pp_supported_qpts = 0;
	a->pci_atomic_fetch_add = 0;
	a->pci_atomic_swap = 0;
	a->pci_atomic_compare_swap = 0;
	a->max_send_sge = SOFT_MAX_SGE;
	a->max_recv_sge = SOFT_MAX_SGE;
	a->max_read_sge = SOFT_MAX_SGE;
	a->max_inline_data = SOFT_MAX_INLINE;
	a->cq_wc_flags = RV_CQ_WC_TIMESTAMP | RV_CQ_WC_TIMESTAMP_WALLCLOCK;
}

int soft_query_device(struct rv_context *ctx, rv_device_attr *a)
{
	struct soft_ctx *sc = ctx->drv_ctx;
	uint64_t guid = 0;

	/* A node GUID derived from the listen address and port: stable for a context, distinct per listener. */
	for (int i = 0; i < 16; i++)
		guid = guid * 131 + sc->gid[i];
	guid = (guid << 16) ^ sc->port;
	/* What the wire speaks (conn.c, wire.h): MPA revision 2 (RFC 6581), and
	 * this context's CRC rule (RV_SOFT_CRC_OPTIONAL). */
	snprintf(a->fw_ver, sizeof(a->fw_ver), "rverbs-soft 1.0 (iWARP: MPA rev %u, CRC %s)", RV_SOFT_MPA_REV,
		 sc->crc_required ? "required" : "optional");
	a->node_guid = guid;
	a->sys_image_guid = guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000u;
	a->vendor_id = 0;
	a->vendor_part_id = 0;
	a->hw_ver = 1;
	a->max_qp = SOFT_MAX_QP;
	a->max_qp_wr = SOFT_MAX_QP_WR;
	a->device_cap_flags = SOFT_DEVICE_CAP_FLAGS;
	a->max_sge = SOFT_MAX_SGE;
	a->max_sge_rd = SOFT_MAX_SGE;
	a->max_cq = SOFT_MAX_CQ;
	a->max_cqe = SOFT_MAX_CQE;
	a->max_mr = SOFT_MAX_MR;
	a->max_pd = SOFT_MAX_PD;
	a->max_qp_rd_atom = SOFT_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = SOFT_MAX_RD_ATOM;
	/* RFC 7306 atomics with __atomic builtins on the target word (atomic.c):
	 * atomic with respect to the host CPUs too, unless the context does not
	 * offer the extensions (RV_SOFT_NO_EXT). */
	a->atomic_cap = ((struct soft_ctx *)ctx->drv_ctx)->caps & RV_SOFT_CAP_ATOMIC ? RV_ATOMIC_GLOB : RV_ATOMIC_NONE;
	a->max_srq = SOFT_MAX_SRQ;
	a->max_srq_wr = SOFT_MAX_QP_WR;
	a->max_srq_sge = SOFT_MAX_SGE;
	/* Windows (mr.c) share the STag table, and its limit, with the MRs. */
	a->max_mw = SOFT_MAX_MR;
	a->max_ah = SOFT_MAX_AH;
	/* Multicast (ud.c): IP multicast groups of the context's address family. */
	a->max_mcast_grp = sc->ud ? SOFT_MAX_MCAST_GRP : 0;
	a->max_mcast_qp_attach = sc->ud ? SOFT_MAX_MCAST_QP_ATTACH : 0;
	a->max_total_mcast_qp_attach = sc->ud ? SOFT_MAX_MCAST_GRP * SOFT_MAX_MCAST_QP_ATTACH : 0;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	query_device_ex(sc, a);
	return 0;
}

int soft_read_clock(struct rv_context *ctx, uint64_t *raw)
{
	(void)ctx;
	*raw = soft_clock_raw();
	return 0;
}

int soft_query_port(struct rv_context *ctx, uint8_t port_num, rv_port_attr *a)
{
	struct soft_ctx *sc = ctx->drv_ctx;

	if (port_num != 1)
		return rv_err(EINVAL, "rv_context_query_port", "port %u does not exist; soft0 has port 1 only",
			      port_num);
	a->state = RV_PORT_ACTIVE;
	a->max_mtu = RV_MTU_4096;
	a->active_mtu = RV_MTU_4096;
	a->gid_tbl_len = 1;
	a->port_cap_flags = 0;
	a->max_msg_sz = SOFT_MAX_MSG;
	a->pkey_tbl_len = 1;
	a->lid = sc->port;
	a->sm_lid = 0;
	a->link_layer = RV_LINK_LAYER_ETHERNET;
	a->active_speed = 1;
	a->active_width = 1;
	a->phys_state = 5; /* LinkUp */
	return 0;
}

int soft_query_gid(struct rv_context *ctx, uint8_t port_num, int index, uint8_t gid[16])
{
	struct soft_ctx *sc = ctx->drv_ctx;

	if (port_num != 1 || index != 0)
		return rv_err(EINVAL, "rv_context_query_gid",
			      "port %u GID index %d does not exist; soft0 has port 1 with one GID (index 0)",
			      port_num, index);
	memcpy(gid, sc->gid, 16);
	return 0;
}

/* The index of the interface that owns the listen address, 0 if none does. */
static uint32_t listen_ifindex(const struct soft_ctx *sc)
{
	struct ifaddrs *ifs, *i;
	uint32_t found = 0;

	if (getifaddrs(&ifs) != 0)
		return 0;
	for (i = ifs; i && !found; i = i->ifa_next) {
		const void *a = NULL;
		size_t len = 0, off = 0;

		if (!i->ifa_addr)
			continue;
		if (sc->family == AF_INET && i->ifa_addr->sa_family == AF_INET) {
			a = &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
			len = 4;
			off = 12;
		} else if (sc->family == AF_INET6 && i->ifa_addr->sa_family == AF_INET6) {
			a = &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr;
			len = 16;
		}
		if (a && memcmp(a, sc->gid + off, len) == 0)
			found = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifs);
	return found;
}

int soft_query_gid_entry(struct rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *e)
{
	struct soft_ctx *sc = ctx->drv_ctx;

	if (port_num != 1 || index != 0)
		return rv_err(EINVAL, "rv_context_query_gid_entry",
			      "port %u GID index %u does not exist; soft0 has port 1 with one GID (index 0)",
			      port_num, index);
	memcpy(e->gid, sc->gid, 16);
	e->gid_type = RV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = listen_ifindex(sc);
	return 0;
}

int soft_query_pkey(struct rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *pkey)
{
	(void)ctx;
	if (port_num != 1 || index != 0)
		return rv_err(EINVAL, "rv_context_query_pkey",
			      "port %u P_Key index %u does not exist; soft0 has port 1 with one P_Key "
			      "(index 0, the default 0xffff)", port_num, index);
	*pkey = 0xffff;
	return 0;
}
