/*
 * The libibverbs driver through the public API, against a mock libibverbs.
 *
 * This executable defines the libibverbs entry points the driver calls
 * (ibv_open_device, ibv_create_qp, ibv_modify_qp ...); the linker binds the
 * driver's objects to these definitions before it looks at libibverbs.so, so
 * the whole facade + driver stack runs here without a device: discovery and
 * the device-list lifetime, contexts, queries, PD/MR/CQ/QP creation with
 * their failure messages, every QP transition of rv_qp_connect as libibverbs
 * receives it, the data path, a refused destroy that is retried, and the
 * cascade close with nothing left behind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rverbs/ibv.h>

#include "driver.h"

/* ---- the mock libibverbs ------------------------------------------------ */

#define MOCK_NDEV 2
#define MOCK_MAX_MODIFY 16

static struct {
	int lists_out, ctx_out, pd_out, mr_out, cq_out, qp_out;
	int list_errno;
	int port_state;
	int open_errno;
	int reg_errno;
	int destroy_qp_busy;
	int modify_errno;
	uint32_t next_qpn;
	int reg_access;
	struct ibv_qp_attr modify_attr[MOCK_MAX_MODIFY];
	int modify_mask[MOCK_MAX_MODIFY];
	uint32_t modify_qpn[MOCK_MAX_MODIFY];
	int n_modify;
	struct ibv_qp_init_attr last_init;
	struct ibv_send_wr last_send;
	int n_send;
	int poll_avail;
} m;

static struct ibv_device mock_devs[MOCK_NDEV] = {
	{ .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB, .name = "mock_0" },
	{ .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB, .name = "mock_1" },
};

static int mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	for (; wr; wr = wr->next) {
		m.last_send = *wr;
		m.n_send++;
	}
	return 0;
}

static int mock_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)wr;
	(void)bad;
	return 0;
}

static int mock_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = 0;

	(void)cq;
	for (; n < num && m.poll_avail > 0; n++, m.poll_avail--) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = m.last_send.wr_id;
		wc[n].status = IBV_WC_SUCCESS;
		wc[n].opcode = IBV_WC_RDMA_WRITE;
		wc[n].qp_num = 0x101;
	}
	return n;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;

	if (m.list_errno) {
		errno = m.list_errno;
		return NULL;
	}
	list = calloc(MOCK_NDEV + 1, sizeof(*list));
	for (int i = 0; i < MOCK_NDEV; i++)
		list[i] = &mock_devs[i];
	if (num_devices)
		*num_devices = MOCK_NDEV;
	m.lists_out++;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
	m.lists_out--;
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *c;

	if (m.open_errno) {
		errno = m.open_errno;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	c->device = device;
	c->ops.post_send = mock_post_send;
	c->ops.post_recv = mock_post_recv;
	c->ops.poll_cq = mock_poll_cq;
	c->num_comp_vectors = 2;
	m.ctx_out++;
	return c;
}

int ibv_close_device(struct ibv_context *context)
{
	free(context);
	m.ctx_out--;
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
	(void)context;
	memset(a, 0, sizeof(*a));
	strcpy(a->fw_ver, "1.2.3");
	a->node_guid = htobe64(0x0011223344556677ull);
	a->max_mr_size = 1ull << 30;
	a->max_qp = 100;
	a->max_qp_wr = 1024;
	a->max_sge = 4;
	a->max_cq = 10;
	a->max_cqe = 4096;
	a->max_pd = 10;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->phys_port_cnt = 1;
	return 0;
}

/* The header maps ibv_query_port to an inline that calls this symbol for a
 * context without the extended ops (ours). */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	/* The inline passes a whole struct ibv_port_attr. */
	struct ibv_port_attr *a = (struct ibv_port_attr *)(void *)port_attr;

	(void)context;
	if (port_num != 1)
		return EINVAL;
	a->state = (enum ibv_port_state)m.port_state;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_1024;
	a->gid_tbl_len = 2;
	a->max_msg_sz = 1u << 30;
	a->pkey_tbl_len = 1;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static const uint8_t mock_gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
				      0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55 };

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	(void)context;
	if (port_num != 1 || index < 0 || index >= 2)
		return -1;
	memcpy(gid->raw, mock_gid, 16);
	gid->raw[15] = (uint8_t)(gid->raw[15] + index);
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	pd->context = context;
	m.pd_out++;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	m.pd_out--;
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct ibv_mr *mr;

	(void)iova;
	if (m.reg_errno) {
		errno = m.reg_errno;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = 0x1000u + (uint32_t)m.mr_out;
	mr->rkey = 0x2000u + (uint32_t)m.mr_out;
	m.reg_access = (int)access;
	m.mr_out++;
	return mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	m.mr_out--;
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq *cq;
	int size = 1;

	if (cqe < 1 || cqe > 4096 || comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	/* Like several providers: a power of two minus one, at least cqe. */
	while (size < cqe + 1)
		size <<= 1;
	cq->cqe = size - 1;
	m.cq_out++;
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	m.cq_out--;
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ibv_qp *qp;

	if (init->cap.max_send_wr > 1024 || init->cap.max_recv_wr > 1024 ||
	    init->cap.max_send_sge > 4 || init->cap.max_recv_sge > 4) {
		errno = EINVAL;
		return NULL;
	}
	m.last_init = *init;
	qp = calloc(1, sizeof(*qp));
	qp->context = pd->context;
	qp->qp_context = init->qp_context;
	qp->pd = pd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->qp_num = ++m.next_qpn;
	qp->state = IBV_QPS_RESET;
	qp->qp_type = init->qp_type;
	/* Providers round the inline space up and say so. */
	if (init->cap.max_inline_data < 64)
		init->cap.max_inline_data = 64;
	m.qp_out++;
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (m.destroy_qp_busy) {
		m.destroy_qp_busy = 0;
		return EBUSY;
	}
	free(qp);
	m.qp_out--;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	if (m.n_modify < MOCK_MAX_MODIFY) {
		m.modify_attr[m.n_modify] = *attr;
		m.modify_mask[m.n_modify] = attr_mask;
		m.modify_qpn[m.n_modify] = qp->qp_num;
		m.n_modify++;
	}
	if (m.modify_errno)
		return m.modify_errno;
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	(void)attr_mask;
	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->port_num = 1;
	return 0;
}

/* ---- helpers ------------------------------------------------------------ */

static int setup(void **state)
{
	(void)state;
	memset(&m, 0, sizeof(m));
	m.port_state = IBV_PORT_ACTIVE;
	m.next_qpn = 0x100;
	unsetenv("RVERBS_DEVICE");
	rv_error_clear();
	return 0;
}

/* Every test ends with nothing left in the mock: no leaked verbs object and
 * no device list kept beyond its last device. */
static int teardown(void **state)
{
	(void)state;
	assert_int_equal(m.qp_out, 0);
	assert_int_equal(m.cq_out, 0);
	assert_int_equal(m.mr_out, 0);
	assert_int_equal(m.pd_out, 0);
	assert_int_equal(m.ctx_out, 0);
	assert_int_equal(m.lists_out, 0);
	return 0;
}

static void open_mock(rv_device **dev, rv_context **ctx)
{
	assert_int_equal(rv_device_find("mock_0", dev), 0);
	assert_int_equal(rv_device_kind_of(*dev), RV_DEVICE_VERBS);
	assert_int_equal(rv_context_new(*dev, NULL, ctx), 0);
}

static void close_mock(rv_device *dev, rv_context *ctx)
{
	assert_int_equal(rv_context_close(ctx), 0);
	rv_context_unref(ctx);
	rv_device_unref(dev);
}

#define assert_msg(s) assert_non_null(strstr(rv_error_last(), (s)))

/* ---- tests -------------------------------------------------------------- */

static void test_ibv_driver__probe_lists_devices_and_keeps_the_list_for_the_last(void **state)
{
	rv_device **list, *keep = NULL;
	size_t n;
	int found = 0;

	(void)state;
	assert_int_equal(rv_device_list(&list, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (rv_device_kind_of(list[i]) != RV_DEVICE_VERBS)
			continue;
		found++;
		if (strcmp(rv_device_name(list[i]), "mock_0") == 0)
			keep = rv_device_ref(list[i]);
		else
			assert_string_equal(rv_device_name(list[i]), "mock_1");
	}
	assert_int_equal(found, MOCK_NDEV);
	assert_non_null(keep);
	assert_int_equal(m.lists_out, 1);
	rv_device_list_free(list);
	/* mock_0 is still referenced: its struct ibv_device must stay valid. */
	assert_int_equal(m.lists_out, 1);
	rv_device_unref(keep);
	assert_int_equal(m.lists_out, 0);
}

static void test_ibv_driver__no_kernel_support_means_no_devices(void **state)
{
	static const int errs[] = { ENOSYS, EPERM };
	rv_device **list;
	size_t n;

	(void)state;
	for (size_t e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
		m.list_errno = errs[e];
		/* The listing still succeeds (the software device, if built). */
		assert_int_equal(rv_device_list(&list, &n), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_not_equal(rv_device_kind_of(list[i]), RV_DEVICE_VERBS);
		rv_device_list_free(list);
	}
	assert_int_equal(rv_device_find("mock_0", &(rv_device *){ NULL }), -ENODEV);
}

static void test_ibv_driver__default_device_needs_an_active_port(void **state)
{
	rv_device *dev;
	int rc;

	(void)state;
	assert_int_equal(rv_device_default(&dev), 0);
	assert_string_equal(rv_device_name(dev), "mock_0");
	rv_device_unref(dev);

	m.port_state = IBV_PORT_DOWN;
	rc = rv_device_default(&dev);
	if (rc == 0) {
		assert_int_equal(rv_device_kind_of(dev), RV_DEVICE_SOFT);
		rv_device_unref(dev);
	} else {
		assert_int_equal(rc, -ENODEV);
	}
}

static void test_ibv_driver__open_failure_names_the_call_and_the_permission(void **state)
{
	rv_device *dev;
	rv_context *ctx = NULL;

	(void)state;
	assert_int_equal(rv_device_find("mock_0", &dev), 0);
	m.open_errno = EACCES;
	assert_int_equal(rv_context_new(dev, NULL, &ctx), -EACCES);
	assert_null(ctx);
	assert_msg("rv_context_new");
	assert_msg("ibv_open_device(mock_0)");
	assert_msg("/dev/infiniband/uverbs");
	rv_device_unref(dev);
}

static void test_ibv_driver__queries(void **state)
{
	rv_device *dev;
	rv_context *ctx;
	rv_device_attr da = { .mask = RV_DEVICE_ATTR_ALL };
	rv_port_attr pa = { .mask = RV_PORT_ATTR_ALL };
	uint8_t gid[16];

	(void)state;
	open_mock(&dev, &ctx);
	assert_non_null(rv_context_ibv(ctx));
	assert_ptr_equal(rv_context_ibv(ctx)->device, &mock_devs[0]);

	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	assert_string_equal(da.fw_ver, "1.2.3");
	assert_int_equal(da.node_guid, 0x0011223344556677ull);
	assert_int_equal(da.max_qp_wr, 1024);
	assert_int_equal(da.max_cqe, 4096);
	assert_int_equal(da.atomic_cap, RV_ATOMIC_HCA);
	assert_int_equal(da.phys_port_cnt, 1);

	assert_int_equal(rv_context_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, RV_PORT_ACTIVE);
	assert_int_equal(pa.active_mtu, RV_MTU_1024);
	assert_int_equal(pa.link_layer, RV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 2);

	assert_int_equal(rv_context_query_port(ctx, 2, &pa), -EINVAL);
	assert_msg("ibv_query_port(mock_0, port 2)");
	assert_msg("mock_0 has 1");

	assert_int_equal(rv_context_query_gid(ctx, 1, 1, gid), 0);
	assert_int_equal(gid[0], 0xfe);
	assert_int_equal(gid[15], 0x56);
	assert_int_equal(rv_context_query_gid(ctx, 1, 5, gid), -EINVAL);
	assert_msg("index 5");
	assert_msg("GID table of port 1 has 2 entries");

	close_mock(dev, ctx);
}

static void test_ibv_driver__resources_and_the_escape_hatch(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_cq_attr ca = { .mask = RV_CQ_ATTR_CQE, .cqe = 64 };
	static char buf[4096];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr;
	rv_cq *cq;
	rv_qp *qp;
	rv_qp_cap cap;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_non_null(rv_pd_ibv(pd));
	assert_int_equal(m.pd_out, 1);

	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf),
				   RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, &mr), 0);
	assert_int_equal(m.reg_access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(rv_mr_ibv(mr));
	assert_int_equal(rv_mr_lkey(mr), rv_mr_ibv(mr)->lkey);
	assert_int_equal(rv_mr_rkey(mr), rv_mr_ibv(mr)->rkey);
	assert_ptr_equal(rv_mr_ibv(mr)->addr, buf);

	assert_int_equal(rv_cq_new(ctx, &ca, &cq), 0);
	/* The size the provider actually gave. */
	assert_int_equal(rv_cq_size(cq), 127);
	assert_ptr_equal(rv_cq_ibv(cq)->cq_context, cq);

	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(m.last_init.qp_type, IBV_QPT_RC);
	assert_int_equal(m.last_init.sq_sig_all, 1);
	assert_ptr_equal(m.last_init.send_cq, rv_cq_ibv(cq));
	assert_ptr_equal(m.last_init.recv_cq, rv_cq_ibv(cq));
	assert_ptr_equal(m.last_init.qp_context, qp);
	assert_null(m.last_init.srq);
	assert_int_equal(m.last_init.cap.max_send_wr, 128);
	assert_int_equal(m.last_init.cap.max_recv_sge, 1);
	assert_int_equal(rv_qp_num(qp), 0x101);
	assert_int_equal(rv_qp_ibv(qp)->qp_num, 0x101);
	assert_ptr_equal(rv_qp_ibv(qp)->pd, rv_pd_ibv(pd));
	/* The inline space read back after creation, not the request. */
	assert_int_equal(rv_qp_get_cap(qp, &cap), 0);
	assert_int_equal(cap.max_inline_data, 64);

	/* The hatch refuses what is not a handle of its type. */
	assert_null(rv_qp_ibv(NULL));
	assert_null(rv_qp_ibv((rv_qp *)(void *)cq));
	assert_null(rv_cq_ibv((rv_cq *)(void *)qp));
	assert_null(rv_context_ibv((rv_context *)(void *)pd));

	close_mock(dev, ctx);
	/* Closed handles give NULL. */
	assert_null(rv_qp_ibv(qp));
	assert_null(rv_mr_ibv(mr));
	assert_null(rv_pd_ibv(pd));
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_mr_unref(mr);
	rv_pd_unref(pd);
}

static void test_ibv_driver__mr_enomem_names_the_memlock_limit(void **state)
{
	static char buf[64];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr = NULL;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	m.reg_errno = ENOMEM;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -ENOMEM);
	assert_null(mr);
	assert_msg("rv_mr_reg");
	assert_msg("ibv_reg_mr");
	assert_msg("RLIMIT_MEMLOCK, now ");
	assert_msg("ulimit -l unlimited");
	assert_msg("/etc/security/limits.conf");

	m.reg_errno = EFAULT;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), -EFAULT);
	assert_msg("not entirely mapped");
	close_mock(dev, ctx);
	rv_pd_unref(pd);
}

static void test_ibv_driver__cq_and_qp_caps_name_the_device_limits(void **state)
{
	rv_cq_attr ca = { .mask = RV_CQ_ATTR_CQE, .cqe = 5000 };
	rv_qp_init_attr qa;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp = NULL;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_cq_new(ctx, &ca, &cq), -EINVAL);
	assert_msg("ibv_create_cq(cqe 5000");
	assert_msg("allows cqe up to 4096");

	ca.cqe = 16;
	assert_int_equal(rv_cq_new(ctx, &ca, &cq), 0);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = cq;
	qa.cap = (rv_qp_cap){ .max_send_wr = 5000, .max_recv_wr = 1, .max_send_sge = 1,
			      .max_recv_sge = 1 };
	assert_int_equal(rv_qp_new(pd, &qa, &qp), -EINVAL);
	assert_null(qp);
	assert_msg("ibv_create_qp(RC) on mock_0");
	assert_msg("max_send_wr 5000");
	assert_msg("max_qp_wr 1024");
	close_mock(dev, ctx);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__connect_gives_libibverbs_each_transition(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b;
	rv_endpoint ea, eb;
	const struct ibv_qp_attr *x;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &a), 0);
	assert_int_equal(rv_qp_new(pd, &qa, &b), 0);
	assert_int_equal(rv_qp_endpoint(a, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b, &eb), 0);
	assert_memory_equal(ea.gid, mock_gid, 16);

	assert_int_equal(rv_qp_connect(a, &eb), 0);
	assert_int_equal(rv_qp_state_of(a), RV_QPS_RTS);
	assert_int_equal(m.n_modify, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(m.modify_qpn[i], rv_qp_num(a));

	x = &m.modify_attr[0];
	assert_int_equal(m.modify_mask[0],
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	assert_int_equal(x->qp_state, IBV_QPS_INIT);
	assert_int_equal(x->port_num, 1);
	assert_int_equal(x->pkey_index, 0);
	assert_int_equal(x->qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);

	x = &m.modify_attr[1];
	assert_int_equal(m.modify_mask[1], IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER);
	assert_int_equal(x->qp_state, IBV_QPS_RTR);
	assert_int_equal(x->dest_qp_num, rv_qp_num(b));
	assert_int_equal(x->rq_psn, eb.psn);
	assert_int_equal(x->path_mtu, IBV_MTU_1024);
	assert_int_equal(x->max_dest_rd_atomic, 16);
	assert_int_equal(x->min_rnr_timer, 12);
	assert_int_equal(x->ah_attr.is_global, 1);
	assert_memory_equal(x->ah_attr.grh.dgid.raw, eb.gid, 16);
	assert_int_equal(x->ah_attr.grh.sgid_index, 0);
	assert_int_equal(x->ah_attr.grh.hop_limit, 64);
	assert_int_equal(x->ah_attr.port_num, 1);

	x = &m.modify_attr[2];
	assert_int_equal(m.modify_mask[2], IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	assert_int_equal(x->qp_state, IBV_QPS_RTS);
	assert_int_equal(x->sq_psn, ea.psn);
	assert_int_equal(x->timeout, 14);
	assert_int_equal(x->retry_cnt, 7);
	assert_int_equal(x->rnr_retry, 7);
	assert_int_equal(x->max_rd_atomic, 16);

	close_mock(dev, ctx);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__refused_rtr_explains_roce_addressing(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_qp_attr rtr;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(rv_qp_to_init(qp, NULL), 0);

	memset(&rtr, 0, sizeof(rtr));
	rtr.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
	rtr.dest_qp_num = 0x999;
	rtr.ah_attr.port_num = 1; /* no GRH on an Ethernet port */
	m.modify_errno = EINVAL;
	assert_int_equal(rv_qp_to_rtr(qp, &rtr), -EINVAL);
	assert_msg("ibv_modify_qp(QP 257, INIT -> RTR) on mock_0");
	assert_msg("Ethernet (RoCE)");
	assert_msg("is_global 1");
	/* The QP did not move. */
	m.modify_errno = 0;
	assert_int_equal(rv_qp_state_of(qp), RV_QPS_INIT);

	close_mock(dev, ctx);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__data_path_through_the_facade(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	static char buf[256];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	rv_wc wc[4];

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), 0);

	rv_sge sge = { .addr = (uintptr_t)buf, .length = 32, .lkey = rv_mr_lkey(mr) };
	assert_int_equal(rv_qp_write(qp, &sge, 0xabc000, 0x77, 9), 0);
	assert_int_equal(m.n_send, 1);
	assert_int_equal(m.last_send.opcode, IBV_WR_RDMA_WRITE);
	/* 32 bytes fit the 64 bytes of inline space the provider gave. */
	assert_int_equal(m.last_send.send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	assert_int_equal(m.last_send.wr.rdma.remote_addr, 0xabc000);
	assert_int_equal(m.last_send.wr.rdma.rkey, 0x77);
	assert_ptr_equal(m.last_send.sg_list, &sge);

	m.poll_avail = 1;
	assert_int_equal(rv_cq_poll(cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(wc[0].opcode, RV_WC_RDMA_WRITE);
	assert_int_equal(rv_cq_poll(cq, wc, 4), 0);

	close_mock(dev, ctx);
	rv_mr_unref(mr);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__refused_destroy_keeps_the_qp_and_the_close_retries(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);

	m.destroy_qp_busy = 1;
	assert_int_equal(rv_qp_close(qp), -EBUSY);
	assert_msg("rv_qp_close");
	assert_msg("ibv_destroy_qp on mock_0");
	assert_msg("retried");
	assert_int_equal(m.qp_out, 1);
	assert_non_null(rv_qp_ibv(qp));

	assert_int_equal(rv_qp_close(qp), 0);
	assert_int_equal(m.qp_out, 0);
	assert_null(rv_qp_ibv(qp));

	close_mock(dev, ctx);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
}

static void test_ibv_driver__unref_of_everything_frees_every_verbs_object(void **state)
{
	rv_qp_init_attr qa = { .mask = RV_QP_INIT_ATTR_SEND_CQ };
	static char buf[64];
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;

	(void)state;
	open_mock(&dev, &ctx);
	assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), 0);
	assert_int_equal(m.ctx_out + m.pd_out + m.cq_out + m.qp_out + m.mr_out, 5);
	/* No explicit close: dropping the last references destroys everything. */
	rv_qp_unref(qp);
	rv_mr_unref(mr);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
	rv_device_unref(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_ibv_driver__probe_lists_devices_and_keeps_the_list_for_the_last),
		T(test_ibv_driver__no_kernel_support_means_no_devices),
		T(test_ibv_driver__default_device_needs_an_active_port),
		T(test_ibv_driver__open_failure_names_the_call_and_the_permission),
		T(test_ibv_driver__queries),
		T(test_ibv_driver__resources_and_the_escape_hatch),
		T(test_ibv_driver__mr_enomem_names_the_memlock_limit),
		T(test_ibv_driver__cq_and_qp_caps_name_the_device_limits),
		T(test_ibv_driver__connect_gives_libibverbs_each_transition),
		T(test_ibv_driver__refused_rtr_explains_roce_addressing),
		T(test_ibv_driver__data_path_through_the_facade),
		T(test_ibv_driver__refused_destroy_keeps_the_qp_and_the_close_retries),
		T(test_ibv_driver__unref_of_everything_frees_every_verbs_object),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
