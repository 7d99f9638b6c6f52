/*
 * The libibverbs driver's private header: its device object and the entry
 * points each file of lib/drivers/ibv implements for driver.c's table.
 *
 * Owns: nothing at run time. Never included by the facade, which
 * only sees `rv_driver_ibv` through lib/driver.h.
 */
#ifndef RV_IBV_DRIVER_H
#define RV_IBV_DRIVER_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/resource.h>

#include <infiniband/verbs.h>

#include "driver.h"

/*
 * One ibv_get_device_list() result. libibverbs keeps an unopened
 * struct ibv_device valid only until the list is freed, so the list lives as
 * long as any rv_device made from it (each holds a reference).
 */
struct rv_ibv_device_list {
	struct ibv_device **list;
	_Atomic uint32_t refcnt;
};

/* rv_device::drv_dev of a libibverbs device. */
struct rv_ibv_device {
	struct rv_ibv_device_list *list;
	struct ibv_device *dev;
};

/* The driver's objects are the libibverbs objects themselves: drv_ctx is a
 * struct ibv_context *, drv_pd an ibv_pd *, drv_mr an ibv_mr *, drv_cq an
 * ibv_cq *, drv_qp an ibv_qp *, drv_ah an ibv_ah *. No wrapper, so the data path has one load. */
static inline struct ibv_context *rv_ibv_ctx(const struct rv_context *ctx)
{
	return ctx->drv_ctx;
}

/* device.c */
int rv_ibv_probe(rv_driver_add_fn add, void *cookie);
void rv_ibv_device_release(void *drv_dev);
bool rv_ibv_device_active(void *drv_dev);

/* context.c */
int rv_ibv_context_open(struct rv_context *ctx, const rv_context_attr *attr);
int rv_ibv_context_close(struct rv_context *ctx);
int rv_ibv_query_device(struct rv_context *ctx, rv_device_attr *attr);
int rv_ibv_query_port(struct rv_context *ctx, uint8_t port_num, rv_port_attr *attr);
int rv_ibv_query_gid(struct rv_context *ctx, uint8_t port_num, int index, uint8_t gid[16]);
int rv_ibv_query_gid_entry(struct rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *e);
int rv_ibv_query_pkey(struct rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *pkey);
int rv_ibv_read_clock(struct rv_context *ctx, uint64_t *raw);

/* resources.c */
int rv_ibv_pd_alloc(struct rv_pd *pd);
int rv_ibv_pd_dealloc(struct rv_pd *pd);
int rv_ibv_parent_domain_alloc(struct rv_pd *pd);
int rv_ibv_td_alloc(struct rv_td *td);
int rv_ibv_td_dealloc(struct rv_td *td);
int rv_ibv_qp_query_ece(struct rv_qp *qp, rv_ece *ece);
int rv_ibv_qp_set_ece(struct rv_qp *qp, const rv_ece *ece);
int rv_ibv_qp_set_rate_limit(struct rv_qp *qp, const rv_qp_rate_limit_attr *attr);
int rv_ibv_mr_reg(struct rv_mr *mr);
int rv_ibv_mr_reg_dmabuf(struct rv_mr *mr, uint64_t offset, int fd);
int rv_ibv_mr_dereg(struct rv_mr *mr);
int rv_ibv_mr_advise(struct rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sge, uint32_t n);
int rv_ibv_mr_rereg(struct rv_mr *mr, uint32_t flags, struct rv_pd *pd, void *addr, size_t length,
		    uint32_t access);
int rv_ibv_mw_alloc(struct rv_mw *mw);
int rv_ibv_mw_dealloc(struct rv_mw *mw);
int rv_ibv_mw_bind(struct rv_qp *qp, struct rv_mw *mw, const rv_mw_bind_info *info, uint32_t *new_rkey,
		   uint64_t wr_id, uint32_t send_flags);
int rv_ibv_cq_create(struct rv_cq *cq, const rv_cq_attr *attr);
int rv_ibv_cq_destroy(struct rv_cq *cq);
int rv_ibv_cq_resize(struct rv_cq *cq, uint32_t cqe);
int rv_ibv_comp_channel_create(struct rv_comp_channel *ch);
int rv_ibv_comp_channel_destroy(struct rv_comp_channel *ch);
int rv_ibv_cq_req_notify(struct rv_cq *cq, bool solicited_only);
int rv_ibv_comp_channel_get_event(struct rv_comp_channel *ch, struct rv_cq **ret_cq);
void rv_ibv_cq_ack_events(struct rv_cq *cq, unsigned int n);
int rv_ibv_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr);
int rv_ibv_qp_destroy(struct rv_qp *qp);
int rv_ibv_ah_create(struct rv_ah *ah);
int rv_ibv_ah_destroy(struct rv_ah *ah);
int rv_ibv_mcast_attach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid);
int rv_ibv_mcast_detach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid);
int rv_ibv_ah_attr_from_wc(struct rv_context *ctx, uint8_t port_num, const rv_wc *wc,
			   const void *grh, rv_ah_attr *attr);

/* qp.c */
int rv_ibv_qp_modify(struct rv_qp *qp, const rv_qp_attr *attr);
int rv_ibv_qp_query(struct rv_qp *qp, rv_qp_attr *attr);

/* datapath.c */
int rv_ibv_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);
/* rv_ibv_post_send for one WR (n == 1) on an RC or UC QP: tests neither. */
int rv_ibv_post_send_one_connected(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);
int rv_ibv_post_recv(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted);
int rv_ibv_post_srq_recv(struct rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted);
int rv_ibv_cq_poll(struct rv_cq *cq, rv_wc *wc, int max);

/* cq_ex.c: CQs created with rv_cq_attr.wc_flags (rv_ibv_cq_create calls it). */
int rv_ibv_cq_create_ex(struct rv_cq *cq, const rv_cq_attr *attr);
int rv_ibv_cq_poll_ex(struct rv_cq *cq, rv_wc_ex *wc, int max);

/* srq.c */
int rv_ibv_srq_create(struct rv_srq *srq, const rv_srq_attr *attr);
/* xrc.c */
int rv_ibv_xrcd_open(struct rv_xrcd *xrcd);
int rv_ibv_xrcd_close(struct rv_xrcd *xrcd);
int rv_ibv_xrc_srq_create(struct rv_srq *srq, const rv_srq_attr *attr);
int rv_ibv_xrc_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr);
int rv_ibv_srq_destroy(struct rv_srq *srq);
int rv_ibv_srq_modify(struct rv_srq *srq, const rv_srq_attr *attr);
int rv_ibv_srq_query(struct rv_srq *srq, rv_srq_attr *attr);

/* event.c */
int rv_ibv_async_fd(struct rv_context *ctx);
int rv_ibv_get_async_event(struct rv_context *ctx, rv_async_event *ev);
void rv_ibv_async_event_from_ibv(const struct ibv_async_event *in, rv_async_event *out);

/* escape.c */
void *rv_ibv_raw(struct rv_object *obj);

/* hint.c: turning libibverbs failures into errno values and words. */

/* The positive errno of a failed libibverbs call, whichever convention it
 * follows (returns the errno, returns -1 and sets errno, returns -errno);
 * EIO when it gave nothing usable. */
int rv_ibv_errno(int rc);
/* Thread-safe strerror. */
const char *rv_ibv_strerror(int err, char *buf, size_t len);
/* "8 MiB", "unlimited": a resource limit value in words. */
void rv_ibv_format_limit(rlim_t value, char *buf, size_t len);
/* Append the RLIMIT_MEMLOCK hint to the current error message. */
void rv_ibv_hint_memlock(void);
/* The name of a QP state or QP type for messages ("RTR", "RC"). */
const char *rv_ibv_qp_state_name(uint32_t state);
const char *rv_ibv_qp_type_name(uint32_t type);
const char *rv_ibv_wr_opcode_name(uint32_t opcode);

#endif
