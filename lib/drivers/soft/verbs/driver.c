/*
 * The operations table of the software device, and the two MR calls that
 * also revoke same-host grants (grant.c) on the way out.
 */
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"

/* Memory a peer may hold a grant of (grant.c, rv_mr_alloc's memfd): once
 * deregistered, or re-registered (rights, PD or memory may have changed, and
 * a grant checked them when it was given), every grant of its key is
 * revoked, and the peer copies no more once this returns. */
static int mr_dereg(struct rv_mr *mr)
{
	struct soft_ctx *sc = mr->pd->ctx->drv_ctx;
	uint32_t key = mr->rkey;
	bool shared = mr->mem_fd >= 0 && mr->drv_mr;
	int rc = soft_mr_dereg(mr);

	if (rc == 0 && shared)
		soft_grant_revoke_key(sc, key);
	return rc;
}

static int mr_rereg(struct rv_mr *mr, uint32_t flags, struct rv_pd *pd, void *addr, size_t length, uint32_t access)
{
	int rc = soft_mr_rereg(mr, flags, pd, addr, length, access);

	if (rc == 0 && mr->mem_fd >= 0)
		soft_grant_revoke_key(mr->pd->ctx->drv_ctx, mr->rkey);
	return rc;
}

const struct rv_driver rv_driver_soft = {
	.name = "soft",
	.kind = RV_DEVICE_SOFT,
	.prefers_shared_memory = true, /* one-copy WRITE/READ (samehost/grant.c) */
	.probe = soft_probe,
	.device_release = soft_device_release,
	.device_active = soft_device_active,
	.context_open = soft_context_open,
	.context_close = soft_context_close,
	.query_device = soft_query_device,
	.query_port = soft_query_port,
	.query_gid = soft_query_gid,
	.query_gid_entry = soft_query_gid_entry,
	.query_pkey = soft_query_pkey,
	.pd_alloc = soft_pd_alloc,
	.td_alloc = soft_td_alloc,
	.td_dealloc = soft_td_dealloc,
	.pd_dealloc = soft_pd_dealloc,
	.mr_reg = soft_mr_reg,
	.mr_reg_dmabuf = soft_mr_reg_dmabuf,
	.mr_dereg = mr_dereg,
	.mw_alloc = soft_mw_alloc,
	.mw_dealloc = soft_mw_dealloc,
	.mw_bind = soft_mw_bind,
	.mr_rereg = mr_rereg,
	.mr_advise = soft_mr_advise,
	.cq_create = soft_cq_create,
	.cq_destroy = soft_cq_destroy,
	.cq_poll = soft_cq_poll,
	.cq_poll_ex = soft_cq_poll_ex,
	.read_clock = soft_read_clock,
	.cq_resize = soft_cq_resize,
	.comp_channel_create = soft_comp_channel_create,
	.comp_channel_destroy = soft_comp_channel_destroy,
	.cq_req_notify = soft_cq_req_notify,
	.comp_channel_get_event = soft_comp_channel_get_event,
	.cq_ack_events = NULL,
	.cq_block = soft_cq_block,
	.qp_create = soft_qp_create,
	.qp_destroy = soft_qp_destroy,
	.qp_modify = soft_qp_modify,
	.qp_query = soft_qp_query,
	.post_send = soft_post_send,
	.post_recv = soft_post_recv,
	/* Both take a NULL n_posted: no adapter call in lib/qp.c per post. */
	.post_n_posted_may_be_null = true,
	.ah_create = soft_ah_create,
	.ah_destroy = soft_ah_destroy,
	.mcast_attach = soft_mcast_attach,
	.mcast_detach = soft_mcast_detach,
	.ah_attr_from_wc = NULL, /* the facade reads soft0's GRH area (IPv4 or IPv6 form) */
	.fault_inject = soft_fault_inject,
	.qp_path = soft_qp_path,
	.srq_create = soft_srq_create,
	.srq_destroy = soft_srq_destroy,
	.xrcd_open = soft_xrcd_open,
	.xrcd_close = soft_xrcd_close,
	.srq_modify = soft_srq_modify,
	.srq_query = soft_srq_query,
	.post_srq_recv = soft_post_srq_recv,
	.async_fd = soft_async_fd,
	.get_async_event = soft_get_async_event,
	.raw = NULL,
	.auth_mac = soft_context_auth_mac,
};
