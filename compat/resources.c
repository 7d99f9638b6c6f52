/*
 * soft0's PDs, MRs, completion channels, CQs, SRQs and address handles, and
 * the exported calls that create and destroy them (real devices' objects go
 * to the real library).
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "passthrough.h"

#define compat_pd_of(p) compat_container_of(p, struct compat_pd, pd)
#define compat_mr_of(m) compat_container_of(m, struct compat_mr, mr)
#define compat_cq_of(c) compat_container_of(c, struct compat_cq, cq)
#define compat_srq_of(s) compat_container_of(s, struct compat_srq, srq)
#define compat_ch_of(c) compat_container_of(c, struct compat_channel, ch)

void compat_use(struct ibv_context *c, int *users, int delta)
{
	struct compat_ctx *cc = compat_ctx_of(c);

	pthread_mutex_lock(&cc->lock);
	*users += delta;
	pthread_mutex_unlock(&cc->lock);
}

/* 0 if nothing uses the object (and nothing can start to: the caller is
 * destroying it), else EBUSY as libibverbs says. */
static int check_unused(struct ibv_context *c, const int *users)
{
	struct compat_ctx *cc = compat_ctx_of(c);
	int busy;

	pthread_mutex_lock(&cc->lock);
	busy = *users > 0;
	pthread_mutex_unlock(&cc->lock);
	return busy ? EBUSY : 0;
}

/* ---- PD ------------------------------------------------------------------- */

COMPAT_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct compat_pd *p;
	int rc;

	if (!c)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(c))
		COMPAT_REAL_PTR(ibv_alloc_pd, c);
	p = calloc(1, sizeof(*p));
	if (!p)
		return compat_fail_null(-ENOMEM);
	rc = rv_pd_new(compat_ctx_of(c)->rv, NULL, &p->rv);
	if (rc < 0) {
		free(p);
		return compat_fail_null(rc);
	}
	p->pd.context = c;
	return &p->pd;
}

COMPAT_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct compat_pd *p;
	int rc;

	if (!pd || !pd->context)
		return errno = EINVAL;
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_INT(ibv_dealloc_pd, pd);
	p = compat_pd_of(pd);
	rc = check_unused(pd->context, &p->users);
	if (rc)
		return errno = rc;
	compat_linger_reap(compat_ctx_of(pd->context), true); /* closing the PD closes its QPs */
	rc = rv_pd_close(p->rv);
	if (rc < 0)
		return errno = -rc;
	rv_pd_unref(p->rv);
	compat_pd_unlink(p);
	free(p);
	return 0;
}

COMPAT_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *c, uint32_t pd_handle)
{
	if (c && compat_is_soft(c))
		return compat_fail_null(-EOPNOTSUPP); /* no kernel object to share */
	COMPAT_REAL_PTR(ibv_import_pd, c, pd_handle);
}

COMPAT_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd && pd->context && !compat_is_soft(pd->context) && compat_real.ibv_unimport_pd)
		compat_real.ibv_unimport_pd(pd);
}

/* ---- MR ------------------------------------------------------------------- */

static struct ibv_mr *reg_mr_soft(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access)
{
	struct compat_mr *m;
	int rc;

	/* soft0 addresses remote memory by virtual address: an IOVA other than
	 * the address would be a zero-based or offset region, which it lacks. */
	if (iova != (uintptr_t)addr)
		return compat_fail_null(-EOPNOTSUPP);
	m = calloc(1, sizeof(*m));
	if (!m)
		return compat_fail_null(-ENOMEM);
	/* The optional flags are hints a device may ignore (verbs.h). */
	rc = rv_mr_reg(compat_pd_of(pd)->rv, addr, length, access & ~IBV_ACCESS_OPTIONAL_RANGE, &m->rv);
	if (rc < 0) {
		free(m);
		return compat_fail_null(rc);
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.lkey = rv_mr_lkey(m->rv);
	m->mr.rkey = rv_mr_rkey(m->rv);
	compat_use(pd->context, &compat_pd_of(pd)->users, 1);
	return &m->mr;
}

COMPAT_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	if (!pd || !pd->context)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_reg_mr, pd, addr, length, access);
	return reg_mr_soft(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

COMPAT_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					     uint64_t iova, int access)
{
	if (!pd || !pd->context)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_reg_mr_iova, pd, addr, length, iova, access);
	return reg_mr_soft(pd, addr, length, iova, (unsigned int)access);
}

COMPAT_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					      uint64_t iova, unsigned int access)
{
	if (!pd || !pd->context)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_reg_mr_iova2, pd, addr, length, iova, access);
	return reg_mr_soft(pd, addr, length, iova, access);
}

COMPAT_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					       uint64_t iova, int fd, int access)
{
	if (!pd || !pd->context)
		return compat_fail_null(-EINVAL);
	if (compat_is_soft(pd->context))
		return compat_fail_null(-EOPNOTSUPP); /* soft0 cannot map a dma-buf */
	COMPAT_REAL_PTR(ibv_reg_dmabuf_mr, pd, offset, length, iova, fd, access);
}

COMPAT_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			       size_t length, int access)
{
	struct compat_mr *m;
	struct ibv_pd *new_pd;
	int rc;

	if (!mr || !mr->context) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (!compat_is_soft(mr->context)) {
		if (!compat_real.ibv_rereg_mr) {
			errno = EINVAL;
			return IBV_REREG_MR_ERR_INPUT;
		}
		rc = compat_real.ibv_rereg_mr(mr, flags, pd, addr, length, access);
		if (rc)
			compat_real_errno();
		return rc;
	}
	m = compat_mr_of(mr);
	new_pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd : mr->pd;
	if (!new_pd || new_pd->context != mr->context) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	/* IBV_REREG_MR_CHANGE_* == RV_REREG_* */
	rc = rv_mr_rereg(m->rv, (uint32_t)flags, compat_pd_of(new_pd)->rv, addr, length,
			 (uint32_t)access & ~IBV_ACCESS_OPTIONAL_RANGE);
	if (rc < 0) {
		errno = -rc;
		return rc == -EINVAL ? IBV_REREG_MR_ERR_INPUT : IBV_REREG_MR_ERR_CMD;
	}
	if (new_pd != mr->pd) {
		compat_use(mr->context, &compat_pd_of(mr->pd)->users, -1);
		compat_use(mr->context, &compat_pd_of(new_pd)->users, 1);
		mr->pd = new_pd;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
	}
	mr->lkey = rv_mr_lkey(m->rv);
	mr->rkey = rv_mr_rkey(m->rv);
	return 0;
}

COMPAT_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct compat_mr *m;
	int rc;

	if (!mr || !mr->context)
		return errno = EINVAL;
	if (!compat_is_soft(mr->context))
		COMPAT_REAL_INT(ibv_dereg_mr, mr);
	m = compat_mr_of(mr);
	rc = rv_mr_close(m->rv);
	if (rc < 0)
		return errno = -rc;
	compat_use(mr->context, &compat_pd_of(mr->pd)->users, -1);
	rv_mr_unref(m->rv);
	free(m);
	return 0;
}

COMPAT_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	if (pd && pd->context && compat_is_soft(pd->context))
		return compat_fail_null(-EOPNOTSUPP);
	COMPAT_REAL_PTR(ibv_import_mr, pd, mr_handle);
}

COMPAT_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (mr && mr->context && !compat_is_soft(mr->context) && compat_real.ibv_unimport_mr)
		compat_real.ibv_unimport_mr(mr);
}

COMPAT_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *c, uint32_t dm_handle)
{
	if (c && compat_is_soft(c))
		return compat_fail_null(-EOPNOTSUPP); /* soft0 has no device memory */
	COMPAT_REAL_PTR(ibv_import_dm, c, dm_handle);
}

COMPAT_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	if (dm && dm->context && !compat_is_soft(dm->context) && compat_real.ibv_unimport_dm)
		compat_real.ibv_unimport_dm(dm);
}

/* ---- memory windows --------------------------------------------------------- */

#define compat_mw_of(w) compat_container_of(w, struct compat_mw, mw)

struct ibv_mw *compat_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct compat_mw *w;
	int rc;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return compat_fail_null(-EINVAL);
	w = calloc(1, sizeof(*w));
	if (!w)
		return compat_fail_null(-ENOMEM);
	rc = rv_mw_alloc(compat_pd_of(pd)->rv, (rv_mw_type)type, &w->rv); /* the same values */
	if (rc < 0) {
		free(w);
		return compat_fail_null(rc);
	}
	w->mw.context = pd->context;
	w->mw.pd = pd;
	w->mw.rkey = rv_mw_rkey(w->rv);
	w->mw.type = type;
	compat_use(pd->context, &compat_pd_of(pd)->users, 1);
	return &w->mw;
}

int compat_dealloc_mw(struct ibv_mw *mw)
{
	struct compat_mw *w = compat_mw_of(mw);
	int rc = rv_mw_close(w->rv);

	if (rc < 0)
		return -rc;
	compat_use(mw->context, &compat_pd_of(mw->pd)->users, -1);
	rv_mw_unref(w->rv);
	free(w);
	return 0;
}

static int bind_soft(struct ibv_qp *qp, struct ibv_mw *mw, const struct ibv_mw_bind_info *b,
		     uint64_t wr_id, unsigned int send_flags)
{
	struct compat_mw *w = compat_mw_of(mw);
	/* IBV_ACCESS_* == RV_ACCESS_*. A window's rights are remote rights:
	 * programs pass the MR's LOCAL_WRITE along (pyverbs does), which means
	 * nothing for a window and which a NIC ignores; rverbs takes only the
	 * remote bits. */
	const unsigned int remote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_ATOMIC;
	rv_mw_bind_info info = {.addr = b->addr, .length = b->length,
				.access = b->mw_access_flags & remote};
	int rc;

	if (qp->context != mw->context || (b->mr && b->mr->context != mw->context))
		return EINVAL;
	if (b->mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EOPNOTSUPP; /* soft0 has no zero-based regions or windows */
	if (b->mr)
		info.mr = compat_mr_of(b->mr)->rv;
	rc = rv_qp_bind_mw(compat_container_of(qp, struct compat_qp, qp)->rv, w->rv, &info, wr_id,
			   send_flags);
	if (rc < 0)
		return -rc;
	mw->rkey = rv_mw_rkey(w->rv); /* the new key, as the provider writes it back */
	return 0;
}

int compat_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	if (!qp || !mw || !mw_bind)
		return EINVAL;
	return bind_soft(qp, mw, &mw_bind->bind_info, mw_bind->wr_id, mw_bind->send_flags);
}

int compat_post_bind_mw(struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
	struct ibv_mw *mw = wr->bind_mw.mw;

	/* A type 1 window is bound with ibv_bind_mw, never by a work request;
	 * the new rkey is the old one's next key (ibv_inc_rkey), which rverbs
	 * chooses: a program naming another one cannot have it. */
	if (!mw || mw->type != IBV_MW_TYPE_2 || wr->bind_mw.rkey != ibv_inc_rkey(mw->rkey))
		return EINVAL;
	return bind_soft(qp, mw, &wr->bind_mw.bind_info, wr->wr_id, wr->send_flags);
}

/* ---- completion channels -------------------------------------------------- */

COMPAT_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	struct compat_channel *ch;
	int rc;

	if (!c)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(c))
		COMPAT_REAL_PTR(ibv_create_comp_channel, c);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return compat_fail_null(-ENOMEM);
	rc = rv_comp_channel_new(compat_ctx_of(c)->rv, NULL, &ch->rv);
	if (rc < 0) {
		free(ch);
		return compat_fail_null(rc);
	}
	ch->ch.context = c;
	ch->ch.fd = rv_comp_channel_fd(ch->rv);
	return &ch->ch;
}

COMPAT_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct compat_channel *ch;
	int rc;

	if (!channel || !channel->context)
		return errno = EINVAL;
	if (!compat_is_soft(channel->context))
		COMPAT_REAL_INT(ibv_destroy_comp_channel, channel);
	ch = compat_ch_of(channel);
	rc = check_unused(channel->context, &channel->refcnt);
	if (rc)
		return errno = rc;
	rc = rv_comp_channel_close(ch->rv);
	if (rc < 0)
		return errno = -rc;
	rv_comp_channel_unref(ch->rv);
	free(ch);
	return 0;
}

/* ---- CQ ------------------------------------------------------------------- */

static struct compat_cq *create_cq_soft(struct ibv_context *c, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector, struct ibv_pd *pdom,
				       uint64_t wc_flags)
{
	struct compat_ctx *cc = compat_ctx_of(c);
	rv_cq_attr a = {.mask = RV_CQ_ATTR_CQE | RV_CQ_ATTR_COMP_VECTOR};
	struct compat_cq *q;
	int rc;

	if (cqe <= 0 || comp_vector < 0 || comp_vector >= c->num_comp_vectors ||
	    (channel && channel->context != c))
		return compat_fail_null(-EINVAL);
	a.cqe = (uint32_t)cqe;
	a.comp_vector = (uint32_t)comp_vector;
	if (channel) {
		a.mask |= RV_CQ_ATTR_CHANNEL;
		a.channel = compat_ch_of(channel)->rv;
	}
	if (pdom) {
		a.mask |= RV_CQ_ATTR_PD;
		a.pd = compat_pd_of(pdom)->rv;
	}
	if (wc_flags) {
		a.mask |= RV_CQ_ATTR_WC_FLAGS;
		a.wc_flags = wc_flags; /* RV_CQ_WC_TIMESTAMP* == IBV_WC_EX_WITH_COMPLETION_TIMESTAMP* */
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return compat_fail_null(-ENOMEM);
	rc = rv_cq_new(cc->rv, &a, &q->rv);
	if (rc < 0) {
		free(q);
		return compat_fail_null(rc);
	}
	q->cq.context = c;
	q->cq.channel = channel;
	q->cq.cq_context = cq_context;
	q->cq.cqe = (int)rv_cq_size(q->rv);
	q->ts_flags = (uint32_t)wc_flags;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	pthread_mutex_lock(&cc->lock);
	q->next = cc->cqs;
	cc->cqs = q;
	if (channel)
		channel->refcnt++;
	pthread_mutex_unlock(&cc->lock);
	return q;
}

COMPAT_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
					   struct ibv_comp_channel *channel, int comp_vector)
{
	if (!c)
		return compat_fail_null(-EINVAL);
	struct compat_cq *q;

	if (!compat_is_soft(c))
		COMPAT_REAL_PTR(ibv_create_cq, c, cqe, cq_context, channel, comp_vector);
	q = create_cq_soft(c, cqe, cq_context, channel, comp_vector, NULL, 0);
	return q ? &q->cq : NULL;
}

/* The completion fields every soft0 CQ has; the timestamps rverbs gives
 * where the device says so (rv_device_attr::cq_wc_flags); VLAN, flow tag
 * and tag matching it has not, and asking for them is EOPNOTSUPP, as on a NIC. */
#define COMPAT_CQ_EX_WC_FLAGS                                                   \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |     \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |           \
	 IBV_WC_EX_WITH_DLID_PATH_BITS)
#define COMPAT_CQ_EX_TS_FLAGS \
	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

struct ibv_cq_ex *compat_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr)
{
	struct compat_cq *q;

	if (!attr || attr->cqe > INT32_MAX)
		return compat_fail_null(-EINVAL);
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return compat_fail_null(-EINVAL);
	/* As libibverbs' providers: parent_domain must be a parent domain of c
	 * (rv_cq_new checks it too); the parent domain counts the CQ as a user
	 * until it goes. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain &&
	    !compat_pd_is_parent_domain(c, attr->parent_domain))
		return compat_fail_null(-EINVAL);
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		return compat_fail_null(-EOPNOTSUPP); /* IGNORE_OVERRUN */
	if (attr->wc_flags & ~(uint64_t)(COMPAT_CQ_EX_WC_FLAGS | COMPAT_CQ_EX_TS_FLAGS))
		return compat_fail_null(-EOPNOTSUPP);
	/* Timestamps: rv_cq_new refuses with -EOPNOTSUPP what the device lacks. */
	q = create_cq_soft(c, (int)attr->cqe, attr->cq_context, attr->channel, (int)attr->comp_vector,
			   (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ? attr->parent_domain : NULL,
			   attr->wc_flags & COMPAT_CQ_EX_TS_FLAGS);
	if (!q)
		return NULL;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain) {
		q->pd = compat_pd_of(attr->parent_domain);
		compat_use(c, &q->pd->users, 1);
	}
	compat_cq_ex_fill(q);
	return &q->ex;
}

COMPAT_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct compat_cq *q;
	int rc;

	if (!cq || !cq->context)
		return errno = EINVAL;
	if (!compat_is_soft(cq->context))
		COMPAT_REAL_INT(ibv_resize_cq, cq, cqe);
	if (cqe <= 0)
		return errno = EINVAL;
	q = compat_cq_of(cq);
	rc = rv_cq_resize(q->rv, (uint32_t)cqe);
	if (rc < 0)
		return errno = -rc;
	cq->cqe = (int)rv_cq_size(q->rv);
	return 0;
}

COMPAT_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct compat_ctx *cc;
	struct compat_cq *q, **pp;
	int rc;

	if (!cq || !cq->context)
		return errno = EINVAL;
	if (!compat_is_soft(cq->context))
		COMPAT_REAL_INT(ibv_destroy_cq, cq);
	q = compat_cq_of(cq);
	cc = compat_ctx_of(cq->context);
	rc = check_unused(cq->context, &q->users);
	if (rc)
		return errno = rc;
	compat_linger_reap(cc, true); /* closing the CQ closes its QPs */
	rc = rv_cq_close(q->rv);
	if (rc < 0)
		return errno = -rc;
	pthread_mutex_lock(&cc->lock);
	for (pp = &cc->cqs; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	if (cq->channel)
		cq->channel->refcnt--;
	if (q->pd)
		q->pd->users--;
	pthread_mutex_unlock(&cc->lock);
	rv_cq_unref(q->rv);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(q);
	return 0;
}

struct ibv_cq *compat_find_cq(struct compat_ctx *cc, const rv_cq *rv)
{
	for (struct compat_cq *q = cc->cqs; q; q = q->next)
		if (q->rv == rv)
			return &q->cq;
	return NULL;
}

COMPAT_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
				   void **cq_context)
{
	struct compat_ctx *cc;
	struct ibv_cq *found;
	rv_cq *rvcq = NULL;
	int rc;

	if (!channel || !channel->context || !cq || !cq_context)
		return compat_fail_errno(-EINVAL);
	if (!compat_is_soft(channel->context)) {
		if (!compat_real.ibv_get_cq_event)
			return compat_fail_errno(-EINVAL);
		rc = compat_real.ibv_get_cq_event(channel, cq, cq_context);
		if (rc)
			compat_real_errno();
		return rc;
	}
	/* Blocking, as libibverbs' read(2) of a blocking channel. soft0's
	 * descriptor is non-blocking for rverbs' own use, so a program's
	 * O_NONBLOCK cannot be told from it: a call with nothing pending waits
	 * (docs/compat.md). */
	rc = rv_comp_channel_get_event(compat_ch_of(channel)->rv, -1, &rvcq);
	if (rc < 0)
		return compat_fail_errno(rc);
	cc = compat_ctx_of(channel->context);
	pthread_mutex_lock(&cc->lock);
	found = compat_find_cq(cc, rvcq);
	pthread_mutex_unlock(&cc->lock);
	if (!found) {
		/* Its CQ was destroyed meanwhile: nothing to hand out. */
		rv_cq_ack_events(rvcq, 1);
		return compat_fail_errno(-EAGAIN);
	}
	*cq = found;
	*cq_context = found->cq_context;
	return 0;
}

COMPAT_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq || !cq->context)
		return;
	if (!compat_is_soft(cq->context)) {
		if (compat_real.ibv_ack_cq_events)
			compat_real.ibv_ack_cq_events(cq, nevents);
		return;
	}
	rv_cq_ack_events(compat_cq_of(cq)->rv, nevents);
}

/* ---- SRQ ------------------------------------------------------------------ */

static struct ibv_srq *create_srq_soft(struct ibv_pd *pd, void *srq_context, struct ibv_srq_attr *attr)
{
	struct compat_ctx *cc = compat_ctx_of(pd->context);
	rv_srq_attr a = {.mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE |
				 RV_SRQ_INIT_ATTR_LIMIT};
	struct compat_srq *s;
	int rc;

	a.max_wr = attr->max_wr;
	a.max_sge = attr->max_sge;
	a.srq_limit = attr->srq_limit;
	s = calloc(1, sizeof(*s));
	if (!s)
		return compat_fail_null(-ENOMEM);
	rc = rv_srq_new(compat_pd_of(pd)->rv, &a, &s->rv);
	if (rc == 0)
		rc = rv_srq_query(s->rv, &a);
	if (rc < 0) {
		rv_srq_unref(s->rv);
		free(s);
		return compat_fail_null(rc);
	}
	attr->max_wr = a.max_wr; /* what the device gave, as libibverbs writes back */
	attr->max_sge = a.max_sge;
	s->srq.context = pd->context;
	s->srq.srq_context = srq_context;
	s->srq.pd = pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	pthread_mutex_lock(&cc->lock);
	s->next = cc->srqs;
	cc->srqs = s;
	compat_pd_of(pd)->users++;
	pthread_mutex_unlock(&cc->lock);
	return &s->srq;
}

COMPAT_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!pd || !pd->context || !attr)
		return compat_fail_null(-EINVAL);
	if (!compat_is_soft(pd->context))
		COMPAT_REAL_PTR(ibv_create_srq, pd, attr);
	return create_srq_soft(pd, attr->srq_context, &attr->attr);
}

struct ibv_srq *compat_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr)
{
	if (!attr)
		return compat_fail_null(-EINVAL);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC)
		return compat_create_xrc_srq(c, attr); /* xrc.c */
	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD))
		return compat_fail_null(-EOPNOTSUPP); /* tag matching; an XRCD or CQ without IBV_SRQT_XRC */
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC)
		return compat_fail_null(-EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != c)
		return compat_fail_null(-EINVAL);
	return create_srq_soft(attr->pd, attr->srq_context, &attr->attr);
}

COMPAT_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	rv_srq_attr a = {0};
	int rc;

	if (!srq || !srq->context || !attr)
		return errno = EINVAL;
	if (!compat_is_soft(srq->context))
		COMPAT_REAL_INT(ibv_modify_srq, srq, attr, mask);
	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return errno = EINVAL;
	a.mask = (uint64_t)mask; /* IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT == RV_SRQ_* */
	a.max_wr = attr->max_wr;
	a.srq_limit = attr->srq_limit;
	rc = rv_srq_modify(compat_srq_of(srq)->rv, &a);
	return rc < 0 ? (errno = -rc) : 0;
}

COMPAT_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	rv_srq_attr a = {0};
	int rc;

	if (!srq || !srq->context || !attr)
		return errno = EINVAL;
	if (!compat_is_soft(srq->context))
		COMPAT_REAL_INT(ibv_query_srq, srq, attr);
	rc = rv_srq_query(compat_srq_of(srq)->rv, &a);
	if (rc < 0)
		return errno = -rc;
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}

COMPAT_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct compat_ctx *cc;
	struct compat_srq *s, **pp;
	int rc;

	if (!srq || !srq->context)
		return errno = EINVAL;
	if (!compat_is_soft(srq->context))
		COMPAT_REAL_INT(ibv_destroy_srq, srq);
	s = compat_srq_of(srq);
	cc = compat_ctx_of(srq->context);
	rc = check_unused(srq->context, &s->users);
	if (rc)
		return errno = rc;
	compat_linger_reap(cc, true); /* closing the SRQ closes its QPs */
	rc = rv_srq_close(s->rv);
	if (rc < 0)
		return errno = -rc;
	pthread_mutex_lock(&cc->lock);
	for (pp = &cc->srqs; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	compat_pd_of(srq->pd)->users--;
	pthread_mutex_unlock(&cc->lock);
	rv_srq_unref(s->rv);
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(s);
	return 0;
}

struct ibv_srq *compat_find_srq(struct compat_ctx *cc, const rv_srq *rv)
{
	for (struct compat_srq *s = cc->srqs; s; s = s->next)
		if (s->rv == rv)
			return &s->srq;
	return NULL;
}
