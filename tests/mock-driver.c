/*
 * The mock driver (see mock-driver.h). Fakes live until mock_reset() so that
 * a second destroy is counted instead of being a use after free.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mock-driver.h"

struct mock_state mock;

struct fake {
	enum rv_obj_type type;
	const void *handle;
	uint64_t id;
	bool live;
	unsigned n_destroyed;
	struct fake *parents[4];
	uint32_t qp_state;
	uint32_t srq_limit;
};

static struct fake **fakes;
static size_t n_fakes, cap_fakes;

static const char *type_name(enum rv_obj_type t)
{
	return rv_obj_type_name(t);
}

void mock_reset(void)
{
	for (size_t i = 0; i < n_fakes; i++)
		free(fakes[i]);
	free(fakes);
	fakes = NULL;
	n_fakes = cap_fakes = 0;
	memset(&mock, 0, sizeof(mock));
	mock.post_limit = SIZE_MAX;
	mock.next_qpn = 0x100;
	mock.next_key = 0x1000;
	mock.active_mtu = RV_MTU_1024;
	mock.link_layer = RV_LINK_LAYER_ETHERNET;
	mock.fail_sets_message = true;
}

/* NULL when out of memory: the op then fails with -ENOMEM, as a driver would. */
static struct fake *fake_new(enum rv_obj_type type, const void *handle)
{
	struct fake *f;

	if (n_fakes == cap_fakes) {
		size_t cap = cap_fakes ? cap_fakes * 2 : 64;
		struct fake **grown = realloc(fakes, cap * sizeof(*fakes));

		if (!grown)
			return NULL;
		fakes = grown;
		cap_fakes = cap;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	fakes[n_fakes++] = f;
	f->type = type;
	f->handle = handle;
	f->id = handle ? RV_COBJ(handle)->id : 0;
	f->live = true;
	mock.created[type]++;
	return f;
}

/* Every op but device_release receives a live handle of the right type. */
static void expect_live(const void *handle, enum rv_obj_type type)
{
	const struct rv_object *o = RV_COBJ(handle);

	if (!o || o->magic != rv_obj_magic(type) || o->state != RV_OBJ_LIVE)
		mock.contract_violations++;
}

static bool inject_create(enum rv_obj_type type, int *rc)
{
	if (mock.fail_create_count[type] == 0)
		return false;
	mock.fail_create_count[type]--;
	*rc = -mock.fail_create_errno[type];
	if (mock.fail_sets_message)
		rv_err(mock.fail_create_errno[type], "mock_driver", "injected failure creating a %s",
		       type_name(type));
	return true;
}

/* The common destroy: injection, then the invariants, then the log. */
static int fake_destroy(struct fake *f, enum rv_obj_type type)
{
	mock.destroy_calls[type]++;
	if (mock.fail_destroy_count[type] > 0) {
		mock.fail_destroy_count[type]--;
		if (mock.fail_sets_message)
			rv_err(mock.fail_destroy_errno[type], "mock_driver",
			       "injected failure destroying %s #%llu", type_name(type),
			       (unsigned long long)(f ? f->id : 0));
		return -mock.fail_destroy_errno[type];
	}
	if (!f || f->type != type) {
		mock.contract_violations++;
		return 0;
	}
	if (!f->live)
		mock.double_destroys++;
	for (size_t i = 0; i < n_fakes; i++) {
		if (!fakes[i]->live || fakes[i] == f)
			continue;
		for (int p = 0; p < 4; p++)
			if (fakes[i]->parents[p] == f)
				mock.order_violations++;
	}
	f->live = false;
	f->n_destroyed++;
	mock.destroyed[type]++;
	if (mock.n_log < MOCK_LOG_MAX)
		mock.log[mock.n_log++] = (struct mock_event){.type = type, .handle = f->handle, .id = f->id};
	return 0;
}

unsigned mock_live(enum rv_obj_type type)
{
	return mock.created[type] - mock.destroyed[type];
}

unsigned mock_live_total(void)
{
	unsigned n = 0;

	for (int t = 1; t < RV_OBJ_TYPE_MAX; t++)
		n += mock_live((enum rv_obj_type)t);
	return n;
}

void mock_fail_destroy(enum rv_obj_type type, int errnum, unsigned count)
{
	mock.fail_destroy_errno[type] = errnum;
	mock.fail_destroy_count[type] = count;
}

void mock_fail_create(enum rv_obj_type type, int errnum, unsigned count)
{
	mock.fail_create_errno[type] = errnum;
	mock.fail_create_count[type] = count;
}

long mock_destroy_index(const void *handle)
{
	for (size_t i = 0; i < mock.n_log; i++)
		if (mock.log[i].handle == handle)
			return (long)i;
	return -1;
}

unsigned mock_destroy_count(const void *handle)
{
	for (size_t i = 0; i < n_fakes; i++)
		if (fakes[i]->handle == handle)
			return fakes[i]->n_destroyed;
	return 0;
}

void mock_qp_force_state(rv_qp *qp, uint32_t state)
{
	struct fake *f = qp->drv_qp;
	f->qp_state = state;
}

/* ---- ops ---- */

static int mock_probe(rv_driver_add_fn add, void *cookie)
{
	(void)add;
	(void)cookie;
	return 0;
}

static void mock_device_release(void *drv_dev)
{
	fake_destroy(drv_dev, RV_OBJ_DEVICE);
}

static bool mock_device_active(void *drv_dev)
{
	(void)drv_dev;
	return true;
}

static int mock_context_open(struct rv_context *ctx, const rv_context_attr *attr)
{
	struct fake *f;
	int rc;

	expect_live(ctx, RV_OBJ_CONTEXT);
	if (!attr || !attr->listen_addr)
		mock.contract_violations++;
	if (inject_create(RV_OBJ_CONTEXT, &rc))
		return rc;
	f = fake_new(RV_OBJ_CONTEXT, ctx);
	if (!f)
		return -ENOMEM;
	f->parents[0] = ctx->dev->drv_dev;
	ctx->drv_ctx = f;
	return 0;
}

static int mock_context_close(struct rv_context *ctx)
{
	expect_live(ctx, RV_OBJ_CONTEXT);
	return fake_destroy(ctx->drv_ctx, RV_OBJ_CONTEXT);
}

static int mock_query_device(struct rv_context *ctx, rv_device_attr *attr)
{
	expect_live(ctx, RV_OBJ_CONTEXT);
	if (mock.fail_query_errno) {
		if (mock.fail_sets_message)
			rv_err(mock.fail_query_errno, "mock_driver", "injected query failure");
		return -mock.fail_query_errno;
	}
	memset(attr, 0, sizeof(*attr));
	strcpy(attr->fw_ver, "mock 1.0");
	attr->node_guid = 0x1122334455667788ull;
	attr->max_mr_size = UINT64_C(1) << 40;
	attr->max_qp = 1024;
	attr->max_qp_wr = 4096;
	attr->max_sge = 16;
	attr->max_cq = 1024;
	attr->max_cqe = 65536;
	attr->max_mr = 1024;
	attr->max_pd = 1024;
	attr->max_srq = 1024;
	attr->max_srq_wr = 4096;
	attr->max_srq_sge = 16;
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->atomic_cap = RV_ATOMIC_HCA;
	attr->phys_port_cnt = 1;
	attr->odp_general_caps = mock.odp_general_caps;
	return 0;
}

static int mock_query_port(struct rv_context *ctx, uint8_t port_num, rv_port_attr *attr)
{
	expect_live(ctx, RV_OBJ_CONTEXT);
	if (mock.fail_query_errno) {
		if (mock.fail_sets_message)
			rv_err(mock.fail_query_errno, "mock_driver", "injected query failure");
		return -mock.fail_query_errno;
	}
	if (port_num != 1)
		return rv_err(EINVAL, "rv_context_query_port", "the mock device has only port 1");
	memset(attr, 0, sizeof(*attr));
	attr->state = RV_PORT_ACTIVE;
	attr->max_mtu = RV_MTU_4096;
	attr->active_mtu = mock.active_mtu;
	attr->gid_tbl_len = mock.n_gids ? mock.n_gids : 1;
	attr->max_msg_sz = 1u << 31;
	attr->lid = 7;
	attr->link_layer = mock.link_layer;
	return 0;
}

static int mock_query_gid(struct rv_context *ctx, uint8_t port_num, int index, uint8_t gid[16])
{
	static const uint8_t g[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};

	expect_live(ctx, RV_OBJ_CONTEXT);
	if (mock.fail_query_errno)
		return -mock.fail_query_errno;
	if (mock.n_gids && port_num == 1 && index >= 0 && (unsigned)index < mock.n_gids) {
		memcpy(gid, mock.gids[index].gid, 16);
		return 0;
	}
	if (port_num != 1 || index != 0 || mock.n_gids)
		return rv_err(EINVAL, "rv_context_query_gid", "no GID %d on port %u of the mock device", index, port_num);
	memcpy(gid, g, 16);
	return 0;
}

static int mock_query_gid_entry(struct rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *e)
{
	static const uint8_t zero[16];

	expect_live(ctx, RV_OBJ_CONTEXT);
	if (!mock.n_gids) /* as a driver without typed entries (the facade's own message) */
		return rv_err(EOPNOTSUPP, "rv_context_query_gid_entry", "the device cannot report GID types");
	if (port_num != 1 || index >= mock.n_gids || memcmp(mock.gids[index].gid, zero, 16) == 0)
		return rv_err(ENODATA, "rv_context_query_gid_entry", "no GID entry %u on port %u", index, port_num);
	*e = mock.gids[index];
	e->gid_index = index;
	return 0;
}

static int mock_pd_alloc(struct rv_pd *pd)
{
	struct fake *f;
	int rc;

	expect_live(pd, RV_OBJ_PD);
	if (inject_create(RV_OBJ_PD, &rc))
		return rc;
	f = fake_new(RV_OBJ_PD, pd);
	if (!f)
		return -ENOMEM;
	f->parents[0] = pd->ctx->drv_ctx;
	/* A parent domain must go before its parent PD and its TD. */
	f->parents[1] = pd->parent ? pd->parent->drv_pd : NULL;
	f->parents[2] = pd->td ? pd->td->drv_td : NULL;
	pd->drv_pd = f;
	return 0;
}

static int mock_pd_dealloc(struct rv_pd *pd)
{
	expect_live(pd, RV_OBJ_PD);
	return fake_destroy(pd->drv_pd, RV_OBJ_PD);
}

static int mock_td_alloc(struct rv_td *td)
{
	struct fake *f;
	int rc;

	expect_live(td, RV_OBJ_TD);
	if (inject_create(RV_OBJ_TD, &rc))
		return rc;
	f = fake_new(RV_OBJ_TD, td);
	if (!f)
		return -ENOMEM;
	f->parents[0] = td->ctx->drv_ctx;
	td->drv_td = f;
	return 0;
}

static int mock_td_dealloc(struct rv_td *td)
{
	expect_live(td, RV_OBJ_TD);
	return fake_destroy(td->drv_td, RV_OBJ_TD);
}

static int mock_xrcd_open(struct rv_xrcd *xrcd)
{
	struct fake *f;
	int rc;

	expect_live(xrcd, RV_OBJ_XRCD);
	if (inject_create(RV_OBJ_XRCD, &rc))
		return rc;
	f = fake_new(RV_OBJ_XRCD, xrcd);
	if (!f)
		return -ENOMEM;
	f->parents[0] = xrcd->ctx->drv_ctx;
	xrcd->drv_xrcd = f;
	return 0;
}

static int mock_xrcd_close(struct rv_xrcd *xrcd)
{
	expect_live(xrcd, RV_OBJ_XRCD);
	return fake_destroy(xrcd->drv_xrcd, RV_OBJ_XRCD);
}

static int mock_mr_reg(struct rv_mr *mr)
{
	struct fake *f;
	int rc;

	expect_live(mr, RV_OBJ_MR);
	expect_live(mr->pd, RV_OBJ_PD);
	if ((!mr->addr && !mr->implicit) || !mr->length)
		mock.contract_violations++;
	if (mr->implicit && (mr->length != SIZE_MAX || !(mr->access & RV_ACCESS_ON_DEMAND)))
		mock.contract_violations++;
	if (inject_create(RV_OBJ_MR, &rc))
		return rc;
	f = fake_new(RV_OBJ_MR, mr);
	if (!f)
		return -ENOMEM;
	f->parents[0] = mr->pd->drv_pd;
	mr->lkey = mock.next_key++;
	mr->rkey = mock.next_key++;
	mr->drv_mr = f;
	return 0;
}

static int mock_mr_dereg(struct rv_mr *mr)
{
	expect_live(mr, RV_OBJ_MR);
	return fake_destroy(mr->drv_mr, RV_OBJ_MR);
}

static int mock_mr_advise(struct rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sge, uint32_t n)
{
	expect_live(pd, RV_OBJ_PD);
	if (advice > RV_ADVISE_MR_PREFETCH_NO_FAULT || (flags & ~(uint32_t)RV_ADVISE_MR_FLAG_FLUSH) || n == 0 ||
	    !sge)
		mock.contract_violations++;
	mock.n_advise++;
	mock.last_advice = advice;
	mock.last_advise_flags = flags;
	mock.last_advise_n = n;
	if (sge)
		mock.last_advise_sge = sge[0];
	return 0;
}

static int mock_cq_create(struct rv_cq *cq, const rv_cq_attr *attr)
{
	struct fake *f;
	int rc;

	expect_live(cq, RV_OBJ_CQ);
	if (attr->cqe == 0)
		mock.contract_violations++;
	if (inject_create(RV_OBJ_CQ, &rc))
		return rc;
	f = fake_new(RV_OBJ_CQ, cq);
	if (!f)
		return -ENOMEM;
	f->parents[0] = cq->ctx->drv_ctx;
	cq->cqe = attr->cqe;
	cq->drv_cq = f;
	return 0;
}

static int mock_cq_resize(struct rv_cq *cq, uint32_t cqe)
{
	expect_live(cq, RV_OBJ_CQ);
	if (cqe == 0)
		mock.contract_violations++;
	cq->cqe = cqe;
	return 0;
}

static int mock_cq_destroy(struct rv_cq *cq)
{
	expect_live(cq, RV_OBJ_CQ);
	return fake_destroy(cq->drv_cq, RV_OBJ_CQ);
}

/* Completion channels: a fake with an eventfd the tests never signal; CQs
 * never fire (get_event says -EAGAIN). */
static int mock_comp_channel_create(struct rv_comp_channel *ch)
{
	struct fake *f;
	int rc;

	expect_live(ch, RV_OBJ_COMP_CHANNEL);
	if (inject_create(RV_OBJ_COMP_CHANNEL, &rc))
		return rc;
	f = fake_new(RV_OBJ_COMP_CHANNEL, ch);
	if (!f)
		return -ENOMEM;
	ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ch->fd < 0) {
		f->live = false;
		return -EMFILE;
	}
	f->parents[0] = ch->ctx->drv_ctx;
	ch->drv_ch = f;
	return 0;
}

static int mock_comp_channel_destroy(struct rv_comp_channel *ch)
{
	int rc;

	expect_live(ch, RV_OBJ_COMP_CHANNEL);
	rc = fake_destroy(ch->drv_ch, RV_OBJ_COMP_CHANNEL);
	if (rc == 0) {
		close(ch->fd);
		ch->fd = -1;
	}
	return rc;
}

static int mock_cq_req_notify(struct rv_cq *cq, bool solicited_only)
{
	(void)solicited_only;
	expect_live(cq, RV_OBJ_CQ);
	if (!cq->channel)
		mock.contract_violations++;
	return 0;
}

static int mock_comp_channel_get_event(struct rv_comp_channel *ch, struct rv_cq **ret_cq)
{
	(void)ret_cq;
	expect_live(ch, RV_OBJ_COMP_CHANNEL);
	return -EAGAIN;
}

static void mock_cq_ack_events(struct rv_cq *cq, unsigned int n)
{
	(void)cq;
	(void)n;
}

static int mock_cq_poll(struct rv_cq *cq, rv_wc *wc, int max)
{
	int n;

	expect_live(cq, RV_OBJ_CQ);
	if (!wc || max < 1)
		mock.contract_violations++;
	mock.n_poll++;
	if (mock.poll_rc < 0)
		return mock.poll_rc;
	n = mock.poll_n < max ? mock.poll_n : max;
	memcpy(wc, mock.poll_wc, (size_t)n * sizeof(*wc));
	return n;
}

static int mock_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr)
{
	struct fake *f;
	int rc;

	expect_live(qp, RV_OBJ_QP);
	expect_live(qp->pd, RV_OBJ_PD);
	if (qp->qp_type == RV_QPT_XRC_RECV) {
		/* A target QP: its domain, no CQ, no queue (lib/driver.h). */
		expect_live(attr->xrcd, RV_OBJ_XRCD);
		if (qp->send_cq || qp->recv_cq || attr->cap.max_send_wr || attr->cap.max_recv_wr || attr->srq)
			mock.contract_violations++;
	} else {
		expect_live(qp->send_cq, RV_OBJ_CQ);
		expect_live(qp->recv_cq, RV_OBJ_CQ);
		if (attr->xrcd || (qp->qp_type == RV_QPT_XRC_SEND && (attr->cap.max_recv_wr || attr->srq)))
			mock.contract_violations++;
	}
	if (inject_create(RV_OBJ_QP, &rc))
		return rc;
	f = fake_new(RV_OBJ_QP, qp);
	if (!f)
		return -ENOMEM;
	f->parents[0] = qp->pd->drv_pd;
	if (qp->qp_type == RV_QPT_XRC_RECV) {
		f->parents[1] = attr->xrcd->drv_xrcd;
	} else {
		f->parents[1] = qp->send_cq->drv_cq;
		f->parents[2] = qp->recv_cq->drv_cq;
	}
	if (attr->srq) {
		expect_live(attr->srq, RV_OBJ_SRQ);
		f->parents[3] = attr->srq->drv_srq;
	}
	f->qp_state = RV_QPS_RESET;
	qp->qpn = mock.next_qpn++;
	qp->cap = attr->cap;
	qp->drv_qp = f;
	return 0;
}

static int mock_qp_destroy(struct rv_qp *qp)
{
	expect_live(qp, RV_OBJ_QP);
	return fake_destroy(qp->drv_qp, RV_OBJ_QP);
}

static int mock_qp_modify(struct rv_qp *qp, const rv_qp_attr *attr)
{
	struct fake *f = qp->drv_qp;

	expect_live(qp, RV_OBJ_QP);
	mock.n_modify++;
	mock.last_modify = *attr;
	if (attr->mask & RV_QP_AV)
		mock.last_av = attr->ah_attr;
	if (mock.fail_modify_errno) {
		if (mock.fail_sets_message)
			rv_err(mock.fail_modify_errno, "mock_driver", "injected modify failure");
		return -mock.fail_modify_errno;
	}
	if (attr->mask & RV_QP_STATE)
		f->qp_state = attr->qp_state;
	return 0;
}

static int mock_qp_query(struct rv_qp *qp, rv_qp_attr *attr)
{
	struct fake *f = qp->drv_qp;

	expect_live(qp, RV_OBJ_QP);
	if (attr->mask & RV_QP_STATE)
		attr->qp_state = f->qp_state;
	if (attr->mask & RV_QP_PORT)
		attr->port_num = qp->port_num;
	return 0;
}

static int mock_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	size_t k = n < mock.post_limit ? n : mock.post_limit;

	expect_live(qp, RV_OBJ_QP);
	if (!wrs || n == 0 || !n_posted) {
		mock.contract_violations++;
		return -EINVAL;
	}
	mock.n_post_send++;
	mock.last_send = wrs[0];
	for (size_t i = 0; i < k && mock.n_sent < MOCK_SENT_MAX; i++, mock.n_sent++) {
		mock.sent_wr_id[mock.n_sent] = wrs[i].wr_id;
		mock.sent_flags[mock.n_sent] = wrs[i].send_flags;
	}
	*n_posted = k;
	if (mock.post_rc)
		return mock.post_rc;
	return k < n ? -ENOMEM : 0;
}

static int mock_post_recv(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	size_t k = n < mock.post_limit ? n : mock.post_limit;

	expect_live(qp, RV_OBJ_QP);
	if (!wrs || n == 0 || !n_posted) {
		mock.contract_violations++;
		return -EINVAL;
	}
	mock.n_post_recv++;
	mock.last_recv = wrs[0];
	*n_posted = k;
	if (mock.post_rc)
		return mock.post_rc;
	return k < n ? -ENOMEM : 0;
}

static int mock_srq_create(struct rv_srq *srq, const rv_srq_attr *attr)
{
	struct fake *f;
	int rc;

	expect_live(srq, RV_OBJ_SRQ);
	expect_live(srq->pd, RV_OBJ_PD);
	if (attr->max_wr == 0 || attr->max_sge == 0)
		mock.contract_violations++;
	if (inject_create(RV_OBJ_SRQ, &rc))
		return rc;
	f = fake_new(RV_OBJ_SRQ, srq);
	if (!f)
		return -ENOMEM;
	f->parents[0] = srq->pd->drv_pd;
	if (srq->xrcd) {
		expect_live(srq->xrcd, RV_OBJ_XRCD);
		expect_live(srq->cq, RV_OBJ_CQ);
		f->parents[1] = srq->xrcd->drv_xrcd;
		f->parents[2] = srq->cq->drv_cq;
		srq->srqn = mock.next_qpn++; /* unique, as a device's SRQ numbers */
	}
	f->srq_limit = attr->srq_limit;
	srq->max_wr = attr->max_wr;
	srq->max_sge = attr->max_sge;
	srq->drv_srq = f;
	return 0;
}

static int mock_srq_destroy(struct rv_srq *srq)
{
	expect_live(srq, RV_OBJ_SRQ);
	return fake_destroy(srq->drv_srq, RV_OBJ_SRQ);
}

static int mock_srq_modify(struct rv_srq *srq, const rv_srq_attr *attr)
{
	struct fake *f = srq->drv_srq;

	expect_live(srq, RV_OBJ_SRQ);
	if (attr->mask & RV_SRQ_MAX_WR)
		srq->max_wr = attr->max_wr;
	if (attr->mask & RV_SRQ_LIMIT)
		f->srq_limit = attr->srq_limit;
	return 0;
}

static int mock_srq_query(struct rv_srq *srq, rv_srq_attr *attr)
{
	struct fake *f = srq->drv_srq;

	expect_live(srq, RV_OBJ_SRQ);
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = f->srq_limit;
	return 0;
}

static int mock_post_srq_recv(struct rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	size_t k = n < mock.post_limit ? n : mock.post_limit;

	expect_live(srq, RV_OBJ_SRQ);
	if (!wrs || n == 0 || !n_posted) {
		mock.contract_violations++;
		return -EINVAL;
	}
	mock.n_post_srq_recv++;
	mock.last_recv = wrs[0];
	*n_posted = k;
	if (mock.post_rc)
		return mock.post_rc;
	return k < n ? -ENOMEM : 0;
}

const struct rv_driver mock_driver = {
	.name = "mock",
	.kind = RV_DEVICE_VERBS,
	.probe = mock_probe,
	.device_release = mock_device_release,
	.device_active = mock_device_active,
	.context_open = mock_context_open,
	.context_close = mock_context_close,
	.query_device = mock_query_device,
	.query_port = mock_query_port,
	.query_gid = mock_query_gid,
	.query_gid_entry = mock_query_gid_entry,
	.pd_alloc = mock_pd_alloc,
	.pd_dealloc = mock_pd_dealloc,
	.td_alloc = mock_td_alloc,
	.td_dealloc = mock_td_dealloc,
	.mr_reg = mock_mr_reg,
	.mr_dereg = mock_mr_dereg,
	.mr_advise = mock_mr_advise,
	.cq_create = mock_cq_create,
	.cq_destroy = mock_cq_destroy,
	.cq_poll = mock_cq_poll,
	.cq_resize = mock_cq_resize,
	.comp_channel_create = mock_comp_channel_create,
	.comp_channel_destroy = mock_comp_channel_destroy,
	.cq_req_notify = mock_cq_req_notify,
	.comp_channel_get_event = mock_comp_channel_get_event,
	.cq_ack_events = mock_cq_ack_events,
	.qp_create = mock_qp_create,
	.qp_destroy = mock_qp_destroy,
	.qp_modify = mock_qp_modify,
	.qp_query = mock_qp_query,
	.post_send = mock_post_send,
	.post_recv = mock_post_recv,
	.srq_create = mock_srq_create,
	.srq_destroy = mock_srq_destroy,
	.xrcd_open = mock_xrcd_open,
	.xrcd_close = mock_xrcd_close,
	.srq_modify = mock_srq_modify,
	.srq_query = mock_srq_query,
	.post_srq_recv = mock_post_srq_recv,
	.raw = NULL,
};

int mock_device_new(const char *name, rv_device **ret_dev)
{
	struct fake *f = fake_new(RV_OBJ_DEVICE, NULL);
	rv_device *dev;
	int rc;

	if (!f)
		return -ENOMEM;
	/* On failure the library has released the fake through device_release. */
	rc = rv_device_new_internal(&mock_driver, name, f, &dev);
	if (rc < 0)
		return rc;
	f->handle = dev;
	f->id = RV_OBJ(dev)->id;
	*ret_dev = dev;
	return 0;
}
