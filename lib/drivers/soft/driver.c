/*
 * The operations table of the software device. Owns nothing else.
 */
#include "soft.h"

const struct rv_driver rv_driver_soft = {
	.name = "soft",
	.kind = RV_DEVICE_SOFT,
	.probe = soft_probe,
	.device_release = soft_device_release,
	.device_active = soft_device_active,
	.context_open = soft_context_open,
	.context_close = soft_context_close,
	.query_device = soft_query_device,
	.query_port = soft_query_port,
	.query_gid = soft_query_gid,
	.pd_alloc = soft_pd_alloc,
	.pd_dealloc = soft_pd_dealloc,
	.mr_reg = soft_mr_reg,
	.mr_dereg = soft_mr_dereg,
	.cq_create = soft_cq_create,
	.cq_destroy = soft_cq_destroy,
	.cq_poll = soft_cq_poll,
	.comp_channel_create = soft_comp_channel_create,
	.comp_channel_destroy = soft_comp_channel_destroy,
	.cq_req_notify = soft_cq_req_notify,
	.comp_channel_get_event = soft_comp_channel_get_event,
	.cq_ack_events = NULL,
	.qp_create = soft_qp_create,
	.qp_destroy = soft_qp_destroy,
	.qp_modify = soft_qp_modify,
	.qp_query = soft_qp_query,
	.post_send = soft_post_send,
	.post_recv = soft_post_recv,
	.ah_create = soft_ah_create,
	.ah_destroy = soft_ah_destroy,
	.ah_attr_from_wc = NULL, /* the facade reads soft0's GRH area (IPv4 or IPv6 form) */
	.fault_inject = soft_fault_inject,
	.raw = NULL,
};
