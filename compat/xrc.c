/*
 * XRC on soft0 through the layer: ibv_open_xrcd / ibv_close_xrcd (the
 * verbs_context's open_xrcd, close_xrcd), XRC SRQs (ibv_create_srq_ex with
 * IBV_SRQT_XRC; get_srq_num) and XRC QPs (ibv_create_qp_ex with
 * IBV_QPT_XRC_SEND / IBV_QPT_XRC_RECV), on rverbs/xrcd.h. Posting
 * (remote_srqn, ibv_wr_set_xrc_srqn) is datapath.c's and qp_ex.c's; an
 * object is destroyed by the ordinary ibv_destroy_srq / ibv_destroy_qp.
 *
 * A domain's file (IBV_XRCD_INIT_ATTR_FD) names it within the process:
 * opening the same file again on the same context gives the same domain,
 * as the kernel's inode table does; no other process shares it (soft0
 * domains live in one context). ibv_open_qp opens a target QP of a domain
 * of this process again: another handle on the same rverbs QP, which lives
 * until its last handle is destroyed (qp.c, ibv_destroy_qp).
 *
 * A libibverbs target QP has no PD; rverbs' takes one, so each domain has
 * an rverbs PD of its own for its targets (soft0 checks RDMA on a target
 * against the PDs of its domain's XRC SRQs as well: rverbs/qp.h).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compat.h"

#define compat_pd_of(p) compat_container_of(p, struct compat_pd, pd)
#define compat_cq_of(c) compat_container_of(c, struct compat_cq, cq)
#define compat_srq_of(s) compat_container_of(s, struct compat_srq, srq)

/* An XRC SRQ or target QP of a domain, by the pointer the program holds. */
struct xrc_user {
	const void *obj;
	struct xrc_user *next;
};

struct compat_xrcd {
	struct ibv_xrcd xrcd; /* first: the program's struct ibv_xrcd * is ours */
	rv_xrcd *rv;
	rv_pd *tgt_pd;        /* the rverbs PD of its target QPs */
	int opens;            /* ibv_open_xrcd calls not yet closed */
	bool has_file;
	dev_t dev;
	ino_t ino;
	struct xrc_user *users;
	struct compat_xrcd *next;
};

/* The open domains of the process (their files), under xrcd_lock. */
static pthread_mutex_t xrcd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct compat_xrcd *xrcds;

static struct compat_xrcd *xrcd_of(struct ibv_xrcd *x)
{
	return (struct compat_xrcd *)x;
}

/* Record obj as using x (xrcd_lock not needed: x is the caller's). */
static int add_user(struct compat_xrcd *x, const void *obj)
{
	struct xrc_user *u = malloc(sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->obj = obj;
	pthread_mutex_lock(&xrcd_lock);
	u->next = x->users;
	x->users = u;
	pthread_mutex_unlock(&xrcd_lock);
	return 0;
}

/* Whether an SRQ or QP of x still exists (those destroyed are forgotten). */
static bool in_use(struct compat_ctx *cc, struct compat_xrcd *x)
{
	bool busy = false;

	pthread_mutex_lock(&xrcd_lock);
	pthread_mutex_lock(&cc->lock);
	for (struct xrc_user **pu = &x->users; *pu;) {
		struct xrc_user *u = *pu;
		bool live = false;

		for (struct compat_srq *s = cc->srqs; s && !live; s = s->next)
			live = &s->srq == u->obj;
		for (struct compat_qp *q = cc->qps; q && !live; q = q->next)
			live = &q->qp == u->obj;
		if (live) {
			busy = true;
			pu = &u->next;
		} else {
			*pu = u->next;
			free(u);
		}
	}
	pthread_mutex_unlock(&cc->lock);
	pthread_mutex_unlock(&xrcd_lock);
	return busy;
}

struct ibv_xrcd *compat_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *attr)
{
	struct compat_ctx *cc = compat_ctx_of(c);
	struct compat_xrcd *x;
	struct stat st;
	int fd, oflags, rc;

	if (!attr || (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)))
		return compat_fail_null(-EINVAL);
	fd = (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ? attr->fd : -1;
	oflags = (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ? attr->oflags : 0;
	if (oflags & ~(O_CREAT | O_EXCL))
		return compat_fail_null(-EINVAL);
	if (fd >= 0) {
		if (fstat(fd, &st) != 0)
			return compat_fail_null(-EBADF);
		pthread_mutex_lock(&xrcd_lock);
		for (x = xrcds; x; x = x->next)
			if (x->has_file && x->dev == st.st_dev && x->ino == st.st_ino &&
			    x->xrcd.context == c)
				break;
		if (x && !(oflags & O_EXCL))
			x->opens++;
		pthread_mutex_unlock(&xrcd_lock);
		if (x)
			return (oflags & O_EXCL) ? compat_fail_null(-EINVAL) : &x->xrcd;
	}
	/* A new domain: only with O_CREAT (the kernel's rule, fd -1 included). */
	if (!(oflags & O_CREAT))
		return compat_fail_null(-EINVAL);
	x = calloc(1, sizeof(*x));
	if (!x)
		return compat_fail_null(-ENOMEM);
	rc = rv_xrcd_new(cc->rv, NULL, &x->rv);
	if (rc == 0)
		rc = rv_pd_new(cc->rv, NULL, &x->tgt_pd);
	if (rc < 0) {
		rv_xrcd_unref(x->rv);
		free(x);
		return compat_fail_null(rc);
	}
	x->xrcd.context = c;
	x->opens = 1;
	x->has_file = fd >= 0;
	if (x->has_file) {
		x->dev = st.st_dev;
		x->ino = st.st_ino;
	}
	pthread_mutex_lock(&xrcd_lock);
	x->next = xrcds;
	xrcds = x;
	pthread_mutex_unlock(&xrcd_lock);
	return &x->xrcd;
}

int compat_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct compat_xrcd *x, **pp;
	struct compat_ctx *cc;
	int rc;

	if (!xrcd || !xrcd->context)
		return EINVAL;
	x = xrcd_of(xrcd);
	cc = compat_ctx_of(xrcd->context);
	pthread_mutex_lock(&xrcd_lock);
	if (x->opens > 1) {
		x->opens--;
		pthread_mutex_unlock(&xrcd_lock);
		return 0;
	}
	pthread_mutex_unlock(&xrcd_lock);
	/* As libibverbs: a domain with SRQs or target QPs is not closed. */
	if (in_use(cc, x))
		return EBUSY;
	rc = rv_xrcd_close(x->rv);
	if (rc == 0)
		rc = rv_pd_close(x->tgt_pd);
	if (rc < 0)
		return -rc;
	pthread_mutex_lock(&xrcd_lock);
	for (pp = &xrcds; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&xrcd_lock);
	rv_xrcd_unref(x->rv);
	rv_pd_unref(x->tgt_pd);
	free(x);
	return 0;
}

int compat_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	int rc;

	if (!srq || !srq_num)
		return EINVAL;
	rc = rv_srq_num(compat_srq_of(srq)->rv, srq_num);
	return rc < 0 ? -rc : 0;
}

struct ibv_srq *compat_create_xrc_srq(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			      IBV_SRQ_INIT_ATTR_CQ;
	struct compat_ctx *cc = compat_ctx_of(c);
	rv_srq_attr a = {.mask = RV_SRQ_INIT_ATTR_MAX_WR | RV_SRQ_INIT_ATTR_MAX_SGE | RV_SRQ_INIT_ATTR_LIMIT |
				 RV_SRQ_INIT_ATTR_XRC};
	struct compat_srq *s;
	rv_srq_attr got = {0};
	int rc;

	if (attr->comp_mask & ~need)
		return compat_fail_null(-EOPNOTSUPP); /* tag matching */
	if ((attr->comp_mask & need) != need || !attr->pd || !attr->xrcd || !attr->cq ||
	    attr->pd->context != c || attr->xrcd->context != c || attr->cq->context != c)
		return compat_fail_null(-EINVAL);
	a.max_wr = attr->attr.max_wr;
	a.max_sge = attr->attr.max_sge;
	a.srq_limit = attr->attr.srq_limit;
	a.xrcd = xrcd_of(attr->xrcd)->rv;
	a.cq = compat_cq_of(attr->cq)->rv;
	s = calloc(1, sizeof(*s));
	if (!s)
		return compat_fail_null(-ENOMEM);
	rc = rv_srq_new(compat_pd_of(attr->pd)->rv, &a, &s->rv);
	if (rc == 0)
		rc = rv_srq_query(s->rv, &got);
	if (rc == 0)
		rc = add_user(xrcd_of(attr->xrcd), &s->srq);
	if (rc < 0) {
		rv_srq_unref(s->rv);
		free(s);
		return compat_fail_null(rc);
	}
	attr->attr.max_wr = got.max_wr;
	attr->attr.max_sge = got.max_sge;
	s->srq.context = c;
	s->srq.srq_context = attr->srq_context;
	s->srq.pd = attr->pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	pthread_mutex_lock(&cc->lock);
	s->next = cc->srqs;
	cc->srqs = s;
	compat_pd_of(attr->pd)->users++; /* ibv_destroy_srq gives it back */
	pthread_mutex_unlock(&cc->lock);
	return &s->srq;
}

struct ibv_qp *compat_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct compat_ctx *cc = compat_ctx_of(c);
	struct compat_qp *q, *found = NULL;
	struct compat_xrcd *x;
	struct xrc_user *u;

	if (!attr || (attr->comp_mask & need) != need ||
	    (attr->comp_mask & ~(need | IBV_QP_OPEN_ATTR_CONTEXT)) || attr->qp_type != IBV_QPT_XRC_RECV ||
	    !attr->xrcd || attr->xrcd->context != c)
		return compat_fail_null(-EINVAL);
	x = xrcd_of(attr->xrcd);
	q = calloc(1, sizeof(*q));
	u = malloc(sizeof(*u));
	if (!q || !u) {
		free(q);
		free(u);
		return compat_fail_null(-ENOMEM);
	}
	/* A target QP of this domain with that number (the users list says whose). */
	pthread_mutex_lock(&xrcd_lock);
	pthread_mutex_lock(&cc->lock);
	for (struct compat_qp *t = cc->qps; t && !found; t = t->next) {
		if (t->qp.qp_type != IBV_QPT_XRC_RECV || t->qp.qp_num != attr->qp_num)
			continue;
		for (struct xrc_user *e = x->users; e && !found; e = e->next)
			if (e->obj == &t->qp)
				found = t;
	}
	if (found) {
		q->rv = rv_qp_ref(found->rv);
		q->qp.context = c;
		q->qp.qp_context = (attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? attr->qp_context : NULL;
		q->qp.qp_num = found->qp.qp_num;
		q->qp.state = found->qp.state;
		q->qp.qp_type = IBV_QPT_XRC_RECV;
		pthread_mutex_init(&q->qp.mutex, NULL);
		pthread_cond_init(&q->qp.cond, NULL);
		q->next = cc->qps;
		cc->qps = q;
		u->obj = &q->qp;
		u->next = x->users;
		x->users = u;
	}
	pthread_mutex_unlock(&cc->lock);
	pthread_mutex_unlock(&xrcd_lock);
	if (!found) {
		free(q);
		free(u);
		return compat_fail_null(-EINVAL);
	}
	return &q->qp;
}

struct ibv_qp *compat_create_xrc_qp(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr)
{
	struct compat_ctx *cc = compat_ctx_of(c);
	bool tgt = attr->qp_type == IBV_QPT_XRC_RECV;
	rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SQ_SIG_ALL};
	struct compat_xrcd *x = NULL;
	struct compat_qp *q;
	rv_pd *pd;
	rv_qp_cap cap;
	int rc;

	/* Create flags and a TSO header that ask for nothing pass (pyverbs sets the bits). */
	if ((attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_MAX_TSO_HEADER)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) && attr->max_tso_header))
		return compat_fail_null(-EOPNOTSUPP);
	if (tgt) {
		/* A target: its domain, nothing else (ibv_create_qp_ex(3)). */
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd || attr->xrcd->context != c ||
		    (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
			return compat_fail_null(-EINVAL);
		x = xrcd_of(attr->xrcd);
		a.mask |= RV_QP_INIT_ATTR_XRCD;
		a.xrcd = x->rv;
		pd = x->tgt_pd;
	} else {
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != c ||
		    !attr->send_cq || attr->send_cq->context != c || (attr->recv_cq && attr->recv_cq->context != c) ||
		    attr->srq)
			return compat_fail_null(-EINVAL);
		if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
			rc = compat_qp_ex_check(attr->send_ops_flags);
			if (rc < 0)
				return compat_fail_null(rc);
		}
		a.mask |= RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
		a.send_cq = compat_cq_of(attr->send_cq)->rv;
		a.cap.max_send_wr = attr->cap.max_send_wr;
		a.cap.max_send_sge = attr->cap.max_send_sge;
		a.cap.max_inline_data = attr->cap.max_inline_data;
		pd = compat_pd_of(attr->pd)->rv;
	}
	a.qp_type = attr->qp_type; /* IBV_QPT_XRC_* == RV_QPT_XRC_* */
	a.sq_sig_all = attr->sq_sig_all ? 1 : 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return compat_fail_null(-ENOMEM);
	rc = rv_qp_new(pd, &a, &q->rv);
	if (rc == 0)
		rc = rv_qp_get_cap(q->rv, &cap);
	if (rc == 0 && x)
		rc = add_user(x, &q->qp);
	if (rc < 0) {
		rv_qp_unref(q->rv);
		free(q);
		return compat_fail_null(rc);
	}
	attr->cap.max_send_wr = cap.max_send_wr;
	attr->cap.max_recv_wr = 0;
	attr->cap.max_send_sge = cap.max_send_sge;
	attr->cap.max_recv_sge = 0;
	attr->cap.max_inline_data = cap.max_inline_data;
	q->qp.context = c;
	q->qp.qp_context = attr->qp_context;
	q->qp.pd = tgt ? NULL : attr->pd; /* as libibverbs: a target has no PD or CQ */
	q->qp.send_cq = tgt ? NULL : attr->send_cq;
	q->qp.recv_cq = tgt ? NULL : attr->recv_cq;
	q->qp.qp_num = rv_qp_num(q->rv);
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = attr->qp_type;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	pthread_mutex_lock(&cc->lock);
	q->next = cc->qps;
	cc->qps = q;
	if (!tgt) { /* ibv_destroy_qp gives these back */
		compat_pd_of(attr->pd)->users++;
		compat_cq_of(attr->send_cq)->users++;
		if (attr->recv_cq)
			compat_cq_of(attr->recv_cq)->users++;
	}
	pthread_mutex_unlock(&cc->lock);
	if (!tgt && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		rc = compat_qp_ex_init(q);
		if (rc < 0) {
			ibv_destroy_qp(&q->qp);
			return compat_fail_null(rc);
		}
		q->ex.comp_mask = 0;
	}
	return &q->qp;
}
