/*
 * Thread domains, parent domains and packet pacing of soft0 contexts: the
 * verbs_context ops that verbs.h's inline ibv_alloc_td, ibv_dealloc_td,
 * ibv_alloc_parent_domain and ibv_modify_qp_rate_limit call, on rv_td_new,
 * rv_pd_new (RV_PD_ATTR_PARENT) and rv_qp_set_rate_limit. A parent domain is
 * a compat_pd like any PD, so every PD-taking call of the layer takes it;
 * ibv_dealloc_pd frees it. Counters (ibv_create_counters) have no op here:
 * verbs.h then answers EOPNOTSUPP, which is soft0's answer (docs/compat.md).
 */
#include <errno.h>
#include <stdlib.h>

#include "compat.h"

#define compat_pd_of(p) compat_container_of(p, struct compat_pd, pd)
#define compat_td_of(t) compat_container_of(t, struct compat_td, td)
#define compat_qp_of(q) compat_container_of(q, struct compat_qp, qp)

static struct ibv_td *compat_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *attr)
{
	struct compat_td *t;
	int rc;

	if (!attr || attr->comp_mask)
		return compat_fail_null(-EINVAL); /* no comp_mask bit is defined */
	t = calloc(1, sizeof(*t));
	if (!t)
		return compat_fail_null(-ENOMEM);
	rc = rv_td_new(compat_ctx_of(c)->rv, NULL, &t->rv);
	if (rc < 0) {
		free(t);
		return compat_fail_null(rc);
	}
	t->td.context = c;
	return &t->td;
}

static int compat_dealloc_td(struct ibv_td *td)
{
	struct compat_td *t = compat_td_of(td);
	struct compat_ctx *cc = compat_ctx_of(td->context);
	int rc, busy;

	pthread_mutex_lock(&cc->lock);
	busy = t->users > 0;
	pthread_mutex_unlock(&cc->lock);
	if (busy)
		return EBUSY; /* a parent domain is bound to it */
	rc = rv_td_close(t->rv);
	if (rc < 0)
		return -rc;
	rv_td_unref(t->rv);
	free(t);
	return 0;
}

/* The allocators rverbs calls, with the compat_pd as their pd_context: the
 * program's own, with the ibv_pd it knows. */
static void *alloc_tramp(rv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t resource_type)
{
	struct compat_pd *p = pd_context;

	(void)pd;
	return p->alloc(&p->pd, p->pd_context, size, alignment, resource_type);
}

static void free_tramp(rv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
	struct compat_pd *p = pd_context;

	(void)pd;
	p->free(&p->pd, p->pd_context, ptr, resource_type);
}

#define PD_INIT_KNOWN ((uint32_t)(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT))

static struct ibv_pd *compat_alloc_parent_domain(struct ibv_context *c, struct ibv_parent_domain_init_attr *attr)
{
	rv_pd_attr a = {.mask = RV_PD_ATTR_PARENT};
	struct compat_pd *p, *parent;
	struct compat_td *td = NULL;
	int rc;

	/* As libibverbs' providers: a PD of this context that is not itself a
	 * parent domain, a TD of this context or none, both allocators or none. */
	if (!attr || !attr->pd || attr->pd->context != c || (attr->comp_mask & ~PD_INIT_KNOWN))
		return compat_fail_null(-EINVAL);
	parent = compat_pd_of(attr->pd);
	if (parent->parent || (attr->td && attr->td->context != c))
		return compat_fail_null(-EINVAL);
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!attr->alloc || !attr->free))
		return compat_fail_null(-EINVAL);
	p = calloc(1, sizeof(*p));
	if (!p)
		return compat_fail_null(-ENOMEM);
	a.parent = parent->rv;
	if (attr->td) {
		td = compat_td_of(attr->td);
		a.mask |= RV_PD_ATTR_TD;
		a.td = td->rv;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		p->alloc = attr->alloc;
		p->free = attr->free;
		if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
			p->pd_context = attr->pd_context;
		a.mask |= RV_PD_ATTR_ALLOCATORS;
		a.alloc = alloc_tramp;
		a.free = free_tramp;
		a.pd_context = p;
	}
	rc = rv_pd_new(compat_ctx_of(c)->rv, &a, &p->rv);
	if (rc < 0) {
		free(p);
		return compat_fail_null(rc);
	}
	p->pd.context = c;
	p->parent = parent;
	p->td = td;
	compat_use(c, &parent->users, 1);
	if (td)
		compat_use(c, &td->users, 1);
	return &p->pd;
}

void compat_pd_unlink(struct compat_pd *p)
{
	if (p->parent)
		compat_use(p->pd.context, &p->parent->users, -1);
	if (p->td)
		compat_use(p->pd.context, &p->td->users, -1);
}

bool compat_pd_is_parent_domain(struct ibv_context *c, struct ibv_pd *pd)
{
	return pd->context == c && compat_pd_of(pd)->parent;
}

static int compat_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr)
{
	rv_qp_rate_limit_attr a = {.mask = RV_QP_RATE_LIMIT_RATE};
	int rc;

	if (!attr)
		return EINVAL;
	a.rate_limit = attr->rate_limit;
	if (attr->max_burst_sz) {
		a.mask |= RV_QP_RATE_LIMIT_MAX_BURST;
		a.max_burst_sz = attr->max_burst_sz;
	}
	if (attr->typical_pkt_sz) {
		a.mask |= RV_QP_RATE_LIMIT_PKT_SIZE;
		a.typical_pkt_sz = attr->typical_pkt_sz;
	}
	rc = rv_qp_set_rate_limit(compat_qp_of(qp)->rv, &a);
	return rc < 0 ? -rc : 0;
}

void compat_ctx_fill_domain_ops(struct compat_ctx *cc)
{
	struct verbs_context *v = &cc->vctx;

	v->alloc_td = compat_alloc_td;
	v->dealloc_td = compat_dealloc_td;
	v->alloc_parent_domain = compat_alloc_parent_domain;
	v->modify_qp_rate_limit = compat_modify_qp_rate_limit;
}
