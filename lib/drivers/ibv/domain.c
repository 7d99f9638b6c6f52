/*
 * Thread domains, parent domains, ECE and packet pacing through libibverbs:
 * each a direct call of its ibv_* verb, whose provider decides (rxe: no
 * thread or parent domains, no ECE, no pacing; mlx5: all four). A refusal
 * keeps the provider's errno and names the verb.
 */
#include <errno.h>

#include "ibv-driver.h"

static int failed(int err, const char *fn, const char *verb, struct rv_context *ctx)
{
	char ebuf[128];

	err = err ? err : EOPNOTSUPP;
	rv_err(err, fn, "%s on %s failed: %s", verb, ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EOPNOTSUPP)
		rv_err_hint("the device's provider does not implement %s", verb);
	return -err;
}

int rv_ibv_td_alloc(struct rv_td *td)
{
	struct ibv_td_init_attr a = {0};
	struct ibv_td *t;

	errno = 0;
	t = ibv_alloc_td(rv_ibv_ctx(td->ctx), &a);
	if (!t)
		return failed(errno, "rv_td_new", "ibv_alloc_td", td->ctx);
	td->drv_td = t;
	return 0;
}

int rv_ibv_td_dealloc(struct rv_td *td)
{
	int rc = ibv_dealloc_td(td->drv_td);

	if (rc != 0) {
		char ebuf[128];

		rv_err(rc, "rv_td_close", "ibv_dealloc_td on %s failed: %s; the TD stays and the close may be "
		       "retried", td->ctx->dev->name, rv_ibv_strerror(rc, ebuf, sizeof(ebuf)));
		return -rc;
	}
	td->drv_td = NULL;
	return 0;
}

/* The provider's allocator calls, with the parent domain as pd_context. */
static void *pd_alloc_tramp(struct ibv_pd *ipd, void *pd_context, size_t size, size_t alignment,
			    uint64_t resource_type)
{
	struct rv_pd *pd = pd_context;

	(void)ipd;
	return pd->alloc(pd, pd->pd_context, size, alignment, resource_type);
}

static void pd_free_tramp(struct ibv_pd *ipd, void *pd_context, void *ptr, uint64_t resource_type)
{
	struct rv_pd *pd = pd_context;

	(void)ipd;
	pd->free(pd, pd->pd_context, ptr, resource_type);
}

int rv_ibv_parent_domain_alloc(struct rv_pd *pd)
{
	struct ibv_parent_domain_init_attr a = {0};
	struct ibv_pd *p;

	a.pd = pd->parent->drv_pd;
	a.td = pd->td ? pd->td->drv_td : NULL;
	if (pd->alloc) {
		a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
		a.alloc = pd_alloc_tramp;
		a.free = pd_free_tramp;
		a.pd_context = pd;
	}
	errno = 0;
	p = ibv_alloc_parent_domain(rv_ibv_ctx(pd->ctx), &a);
	if (!p)
		return failed(errno, "rv_pd_new", "ibv_alloc_parent_domain", pd->ctx);
	pd->drv_pd = p;
	return 0;
}

int rv_ibv_qp_query_ece(struct rv_qp *qp, rv_ece *ece)
{
	struct ibv_ece e = {0};
	int rc = ibv_query_ece(qp->drv_qp, &e);

	if (rc != 0)
		return failed(rc, "rv_qp_query_ece", "ibv_query_ece", qp->ctx);
	ece->vendor_id = e.vendor_id;
	ece->options = e.options;
	ece->comp_mask = e.comp_mask;
	return 0;
}

int rv_ibv_qp_set_ece(struct rv_qp *qp, const rv_ece *ece)
{
	struct ibv_ece e = {.vendor_id = ece->vendor_id, .options = ece->options, .comp_mask = ece->comp_mask};
	int rc = ibv_set_ece(qp->drv_qp, &e);

	if (rc != 0)
		return failed(rc, "rv_qp_set_ece", "ibv_set_ece", qp->ctx);
	return 0;
}

int rv_ibv_qp_set_rate_limit(struct rv_qp *qp, const rv_qp_rate_limit_attr *attr)
{
	struct ibv_qp_rate_limit_attr a = {0};
	int rc;

	a.rate_limit = attr->rate_limit;
	if (attr->mask & RV_QP_RATE_LIMIT_MAX_BURST)
		a.max_burst_sz = attr->max_burst_sz;
	if (attr->mask & RV_QP_RATE_LIMIT_PKT_SIZE)
		a.typical_pkt_sz = attr->typical_pkt_sz;
	rc = ibv_modify_qp_rate_limit(qp->drv_qp, &a);
	if (rc != 0)
		return failed(rc, "rv_qp_set_rate_limit", "ibv_modify_qp_rate_limit", qp->ctx);
	return 0;
}
