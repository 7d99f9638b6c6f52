/*
 * Queries of a soft0 context (device, port, GID and P_Key tables), the
 * function tables verbs.h's inline functions call through, and the exported
 * query calls, which forward real devices' contexts to the real library.
 */
#include <endian.h>
#include <string.h>

#include "compat.h"
#include "passthrough.h"

static int query_device_soft(struct compat_ctx *cc, struct ibv_device_attr *out)
{
	rv_device_attr a = {.mask = RV_DEVICE_ATTR_ALL};
	int rc = rv_context_query_device(cc->rv, &a);

	if (rc < 0)
		return -rc;
	memset(out, 0, sizeof(*out));
	memcpy(out->fw_ver, a.fw_ver, sizeof(out->fw_ver));
	out->fw_ver[sizeof(out->fw_ver) - 1] = '\0';
	out->node_guid = htobe64(a.node_guid);
	out->sys_image_guid = htobe64(a.sys_image_guid);
	out->max_mr_size = a.max_mr_size;
	out->page_size_cap = a.page_size_cap;
	/* A device without an IEEE OUI reports 0xffffff, as the kernel's rxe
	 * does; 0 reads as "no device" to programs (pyverbs' tests check it). */
	out->vendor_id = a.vendor_id ? a.vendor_id : 0xffffff;
	out->vendor_part_id = a.vendor_part_id;
	out->hw_ver = a.hw_ver;
	out->max_qp = (int)a.max_qp;
	out->max_qp_wr = (int)a.max_qp_wr;
	out->device_cap_flags = a.device_cap_flags;
	out->max_sge = (int)a.max_sge;
	out->max_sge_rd = (int)a.max_sge_rd;
	out->max_cq = (int)a.max_cq;
	out->max_cqe = (int)a.max_cqe;
	out->max_mr = (int)a.max_mr;
	out->max_pd = (int)a.max_pd;
	out->max_qp_rd_atom = (int)a.max_qp_rd_atom;
	out->max_res_rd_atom = (int)(a.max_qp_rd_atom * a.max_qp);
	out->max_qp_init_rd_atom = (int)a.max_qp_init_rd_atom;
	out->atomic_cap = (enum ibv_atomic_cap)a.atomic_cap;
	out->max_mw = (int)a.max_mw;
	out->max_ah = (int)a.max_ah;
	out->max_mcast_grp = (int)a.max_mcast_grp;
	out->max_mcast_qp_attach = (int)a.max_mcast_qp_attach;
	out->max_total_mcast_qp_attach = (int)a.max_total_mcast_qp_attach;
	out->max_srq = (int)a.max_srq;
	out->max_srq_wr = (int)a.max_srq_wr;
	out->max_srq_sge = (int)a.max_srq_sge;
	out->max_pkeys = (uint16_t)a.max_pkeys;
	out->phys_port_cnt = (uint8_t)a.phys_port_cnt;
	/* No raw packet, RD (EE) or FMR: their maxima stay 0. */
	return 0;
}

int compat_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;
	int rc;

	if (!attr || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	if (in && in->comp_mask)
		return EINVAL;
	memset(&ex, 0, sizeof(ex));
	rc = query_device_soft(compat_ctx_of(c), &ex.orig_attr);
	if (rc)
		return rc;
	/* Completion timestamps as rverbs reports them (0: none) and ODP as
	 * soft0 reports it (odp.c); no TSO, RSS, WQs, packet pacing, tag
	 * matching, CQ moderation or device memory: all zero, as a NIC without
	 * them says. */
	{
		rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};

		if (rv_context_query_device(compat_ctx_of(c)->rv, &da) == 0 &&
		    (da.cq_wc_flags & RV_CQ_WC_TIMESTAMP)) {
			ex.completion_timestamp_mask = da.completion_timestamp_mask;
			ex.hca_core_clock = da.hca_core_clock;
		}
	}
	compat_odp_caps(compat_ctx_of(c)->rv, &ex);
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	if (attr_size > sizeof(ex))
		memset((char *)attr + sizeof(ex), 0, attr_size - sizeof(ex));
	return 0;
}

int compat_query_port_soft(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
			   size_t attr_len)
{
	rv_port_attr p = {.mask = RV_PORT_ATTR_ALL};
	struct ibv_port_attr o;
	int rc;

	if (!attr)
		return EINVAL;
	rc = rv_context_query_port(compat_ctx_of(c)->rv, port, &p);
	if (rc < 0)
		return -rc;
	memset(&o, 0, sizeof(o));
	o.state = (enum ibv_port_state)p.state;
	o.max_mtu = (enum ibv_mtu)p.max_mtu;
	o.active_mtu = (enum ibv_mtu)p.active_mtu;
	o.gid_tbl_len = (int)p.gid_tbl_len;
	o.port_cap_flags = p.port_cap_flags;
	o.max_msg_sz = p.max_msg_sz;
	o.pkey_tbl_len = (uint16_t)p.pkey_tbl_len;
	o.lid = p.lid;
	o.sm_lid = p.sm_lid;
	o.link_layer = p.link_layer; /* RV_LINK_LAYER_* == IBV_LINK_LAYER_* */
	o.active_speed = p.active_speed;
	o.active_width = p.active_width;
	o.phys_state = p.phys_state;
	o.max_vl_num = 1;
	memcpy(attr, &o, attr_len < sizeof(o) ? attr_len : sizeof(o));
	return 0;
}

/* ibv_query_rt_values_ex: the raw completion clock, in tv_nsec as mlx5
 * gives it (tv_sec 0), in units of hca_core_clock. */
static int query_rt_values_soft(struct ibv_context *c, struct ibv_values_ex *values)
{
	uint64_t raw;
	int rc;

	if (!values)
		return EINVAL;
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		rc = rv_context_read_clock(compat_ctx_of(c)->rv, &raw);
		if (rc < 0)
			return -rc;
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)raw;
	}
	return 0;
}

void compat_ctx_fill_ops(struct compat_ctx *cc)
{
	struct verbs_context *v = &cc->vctx;

	v->context.ops.poll_cq = compat_poll_cq;
	v->context.ops.req_notify_cq = compat_req_notify_cq;
	v->context.ops.post_send = compat_post_send;
	v->context.ops.post_recv = compat_post_recv;
	v->context.ops.post_srq_recv = compat_post_srq_recv;
	v->context.ops.alloc_mw = compat_alloc_mw;
	v->context.ops.bind_mw = compat_bind_mw;
	v->context.ops.dealloc_mw = compat_dealloc_mw;
	v->query_port = compat_query_port_soft;
	v->query_device_ex = compat_query_device_ex;
	v->create_qp_ex = compat_create_qp_ex;
	v->create_srq_ex = compat_create_srq_ex;
	v->create_cq_ex = compat_create_cq_ex;
	compat_ctx_fill_domain_ops(cc);
	v->open_xrcd = compat_open_xrcd;
	v->close_xrcd = compat_close_xrcd;
	v->get_srq_num = compat_get_srq_num;
	v->open_qp = compat_open_qp;
	v->query_rt_values = query_rt_values_soft;
	v->advise_mr = compat_advise_mr;
}

COMPAT_EXPORT int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *attr)
{
	if (!c || !attr)
		return errno = EINVAL;
	if (!compat_is_soft(c))
		COMPAT_REAL_INT(ibv_query_device, c, attr);
	return errno = query_device_soft(compat_ctx_of(c), attr);
}

/* The exported symbol takes the old port struct, which is ibv_port_attr up to
 * (not including) port_cap_flags2's tail; verbs.h calls it only for contexts
 * without query_port in their verbs_context. */
COMPAT_EXPORT int ibv_query_port(struct ibv_context *c, uint8_t port,
				 struct _compat_ibv_port_attr *attr)
{
	if (!c || !attr)
		return errno = EINVAL;
	if (!compat_is_soft(c))
		COMPAT_REAL_INT(ibv_query_port, c, port, attr);
	return errno = compat_query_port_soft(c, port, (struct ibv_port_attr *)attr,
					      offsetof(struct ibv_port_attr, port_cap_flags2));
}

COMPAT_EXPORT int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	int rc;

	if (!c || !gid)
		return compat_fail_errno(-EINVAL);
	if (!compat_is_soft(c)) {
		if (!compat_real.ibv_query_gid)
			return compat_fail_errno(-EINVAL);
		rc = compat_real.ibv_query_gid(c, port, index, gid);
		if (rc)
			compat_real_errno();
		return rc;
	}
	rc = rv_context_query_gid(compat_ctx_of(c)->rv, port, index, gid->raw);
	return rc < 0 ? compat_fail_errno(rc) : 0;
}

static int gid_entry_soft(struct ibv_context *c, uint32_t port, uint32_t index,
			  struct ibv_gid_entry *out)
{
	rv_gid_entry e;
	int rc;

	if (port > UINT8_MAX)
		return -EINVAL;
	rc = rv_context_query_gid_entry(compat_ctx_of(c)->rv, (uint8_t)port, index, &e);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	memcpy(out->gid.raw, e.gid, 16);
	out->gid_index = e.gid_index;
	out->port_num = e.port_num;
	out->gid_type = e.gid_type; /* RV_GID_TYPE_* == IBV_GID_TYPE_* */
	out->ndev_ifindex = e.ndev_ifindex;
	return 0;
}

COMPAT_EXPORT int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index,
				    struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	int rc;

	if (!c || !entry)
		return EINVAL;
	if (!compat_is_soft(c))
		COMPAT_REAL_INT(_ibv_query_gid_ex, c, port, index, entry, flags, entry_size);
	if (flags || entry_size < sizeof(*entry))
		return EINVAL;
	rc = gid_entry_soft(c, port, index, entry);
	/* libibverbs: ENODATA for an index past the table's valid entries. */
	return rc == -EINVAL ? ENODATA : -rc;
}

COMPAT_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *entries,
					   size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ibv_device_attr dev;
	rv_port_attr p = {.mask = RV_PORT_ATTR_ALL};
	size_t n = 0;

	if (!c || (!entries && max_entries))
		return -EINVAL;
	if (!compat_is_soft(c)) {
		if (!compat_real._ibv_query_gid_table)
			return -EINVAL;
		return compat_real._ibv_query_gid_table(c, entries, max_entries, flags, entry_size);
	}
	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (query_device_soft(compat_ctx_of(c), &dev))
		return -EIO;
	for (uint32_t port = 1; port <= dev.phys_port_cnt; port++) {
		if (rv_context_query_port(compat_ctx_of(c)->rv, (uint8_t)port, &p) < 0)
			return -EIO;
		for (uint32_t i = 0; i < p.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			if (gid_entry_soft(c, port, i, &e) < 0)
				continue; /* an empty slot */
			if (n == max_entries)
				return -EINVAL; /* libibverbs: the array is too small */
			memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return (ssize_t)n;
}

COMPAT_EXPORT int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index,
				     int *type)
{
	struct ibv_gid_entry e;
	int rc;

	if (!c || !type)
		return compat_fail_errno(-EINVAL);
	if (!compat_is_soft(c)) {
		if (!compat_real.ibv_query_gid_type)
			return compat_fail_errno(-EINVAL);
		rc = compat_real.ibv_query_gid_type(c, port, index, type);
		if (rc)
			compat_real_errno();
		return rc;
	}
	rc = gid_entry_soft(c, port, index, &e);
	if (rc < 0)
		return compat_fail_errno(rc);
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
	return 0;
}

COMPAT_EXPORT int ibv_query_pkey(struct ibv_context *c, uint8_t port, int index, __be16 *pkey)
{
	uint16_t v;
	int rc;

	if (!c || !pkey)
		return compat_fail_errno(-EINVAL);
	if (!compat_is_soft(c)) {
		if (!compat_real.ibv_query_pkey)
			return compat_fail_errno(-EINVAL);
		rc = compat_real.ibv_query_pkey(c, port, index, pkey);
		if (rc)
			compat_real_errno();
		return rc;
	}
	if (index < 0 || index > UINT16_MAX)
		return compat_fail_errno(-EINVAL);
	rc = rv_context_query_pkey(compat_ctx_of(c)->rv, port, (uint16_t)index, &v);
	if (rc < 0)
		return compat_fail_errno(rc);
	*pkey = htobe16(v);
	return 0;
}

COMPAT_EXPORT int ibv_get_pkey_index(struct ibv_context *c, uint8_t port, __be16 pkey)
{
	struct ibv_device_attr dev;

	if (!c)
		return -EINVAL;
	if (!compat_is_soft(c))
		return compat_real.ibv_get_pkey_index ? compat_real.ibv_get_pkey_index(c, port, pkey) : -EINVAL;
	if (query_device_soft(compat_ctx_of(c), &dev))
		return -EIO;
	for (int i = 0; i < dev.max_pkeys; i++) {
		__be16 v;

		if (ibv_query_pkey(c, port, i, &v) == 0 && v == pkey)
			return i;
	}
	return -ENOENT;
}
