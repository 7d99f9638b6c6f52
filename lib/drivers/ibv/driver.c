/*
 * The libibverbs driver's entry table: hardware NICs (ConnectX, EFA ...) and
 * kernel software devices (rxe, siw) as the facade sees them.
 *
 * Owns: nothing but the table; each op lives in the file named after its
 * purpose (device.c, context.c, resources.c, domain.c, srq.c, qp.c, datapath.c, event.c,
 * escape.c).
 */
#include "ibv-driver.h"

const struct rv_driver rv_driver_ibv = {
	.name = "ibv",
	.kind = RV_DEVICE_VERBS,

	.probe = rv_ibv_probe,
	.device_release = rv_ibv_device_release,
	.device_active = rv_ibv_device_active,

	.context_open = rv_ibv_context_open,
	.context_close = rv_ibv_context_close,
	.query_device = rv_ibv_query_device,
	.query_port = rv_ibv_query_port,
	.query_gid = rv_ibv_query_gid,
	.query_gid_entry = rv_ibv_query_gid_entry,
	.query_pkey = rv_ibv_query_pkey,

	.pd_alloc = rv_ibv_pd_alloc,
	.pd_dealloc = rv_ibv_pd_dealloc,
	.td_alloc = rv_ibv_td_alloc,
	.td_dealloc = rv_ibv_td_dealloc,
	.qp_query_ece = rv_ibv_qp_query_ece,
	.qp_set_ece = rv_ibv_qp_set_ece,
	.qp_set_rate_limit = rv_ibv_qp_set_rate_limit,

	.mr_reg = rv_ibv_mr_reg,
	.mr_reg_dmabuf = rv_ibv_mr_reg_dmabuf,
	.mr_dereg = rv_ibv_mr_dereg,
	.mr_rereg = rv_ibv_mr_rereg,
	.mr_advise = rv_ibv_mr_advise,
	.mw_alloc = rv_ibv_mw_alloc,
	.mw_dealloc = rv_ibv_mw_dealloc,
	.mw_bind = rv_ibv_mw_bind,

	.cq_create = rv_ibv_cq_create,
	.cq_destroy = rv_ibv_cq_destroy,
	.cq_poll = rv_ibv_cq_poll,
	.cq_poll_ex = rv_ibv_cq_poll_ex,
	.read_clock = rv_ibv_read_clock,
	.cq_resize = rv_ibv_cq_resize,
	.comp_channel_create = rv_ibv_comp_channel_create,
	.comp_channel_destroy = rv_ibv_comp_channel_destroy,
	.cq_req_notify = rv_ibv_cq_req_notify,
	.comp_channel_get_event = rv_ibv_comp_channel_get_event,
	.cq_ack_events = rv_ibv_cq_ack_events,

	.qp_create = rv_ibv_qp_create,
	.qp_destroy = rv_ibv_qp_destroy,
	.qp_modify = rv_ibv_qp_modify,
	.qp_query = rv_ibv_qp_query,
	.post_send = rv_ibv_post_send,
	.post_send_one_connected = rv_ibv_post_send_one_connected,
	.post_recv = rv_ibv_post_recv,
	.post_n_posted_may_be_null = true,

	.ah_create = rv_ibv_ah_create,
	.ah_destroy = rv_ibv_ah_destroy,
	.mcast_attach = rv_ibv_mcast_attach,
	.mcast_detach = rv_ibv_mcast_detach,
	.ah_attr_from_wc = rv_ibv_ah_attr_from_wc,
	.srq_create = rv_ibv_srq_create,
	.srq_destroy = rv_ibv_srq_destroy,
	.xrcd_open = rv_ibv_xrcd_open,
	.xrcd_close = rv_ibv_xrcd_close,
	.srq_modify = rv_ibv_srq_modify,
	.srq_query = rv_ibv_srq_query,
	.post_srq_recv = rv_ibv_post_srq_recv,

	.async_fd = rv_ibv_async_fd,
	.get_async_event = rv_ibv_get_async_event,

	.raw = rv_ibv_raw,
};
