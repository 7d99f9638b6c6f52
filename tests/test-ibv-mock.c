/*
 * A mock libibverbs for the ibv driver's tests: the entry points the driver
 * calls, defined in the test executable so that the linker binds the
 * driver's objects to them before it looks at libibverbs.so.
 *
 * It is a working loopback provider: two RC QPs of one process connected to
 * each other move data for WRITE, WRITE_WITH_IMM, READ, SEND, SEND_WITH_IMM
 * and the two atomics, consume receives and complete into their CQs; UD QPs
 * exchange SENDs through address handles (a 40-byte GRH before the payload,
 * the Q_Key checked, a datagram without a receive or with a wrong Q_Key
 * dropped and counted). So
 * tests/test-ibv-live.c runs end to end on it (test 'ibv-live-mock'). Keys,
 * ranges and access flags are checked as a NIC checks them: a violation
 * completes with LOC_PROT_ERR or REM_ACCESS_ERR and moves the QP to ERR.
 * Knobs in `mock` inject failures; counters prove that nothing is leaked.
 *
 * Built on its own (every helper static) or #included by test-ibv-driver.c,
 * which reads and sets `mock`.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MOCK_NDEV 2
#define MOCK_MAX_MODIFY 16
#define MOCK_MAX_QP 64
#define MOCK_RQ 256
#define MOCK_SGE 4
#define MOCK_MAX_MR 64

static struct {
	/* live objects */
	int lists_out, ctx_out, pd_out, mr_out, cq_out, qp_out, ah_out, srq_out;
	/* failure knobs */
	int list_errno;
	int port_state;
	int open_errno;
	int reg_errno;
	int destroy_qp_busy;
	int modify_errno;
	int pd_errno;          /* ibv_alloc_pd fails with it */
	int dealloc_pd_errno;  /* the next ibv_dealloc_pd fails with it (once) */
	int qp_errno;          /* ibv_create_qp fails with it */
	int query_qp_errno;    /* ibv_query_qp fails with it */
	int notify_rc;         /* ibv_req_notify_cq returns it */
	int cq_event_errno;    /* ibv_get_cq_event fails with it (0: EAGAIN) */
	int ah_errno;          /* ibv_create_ah fails with it */
	int mw_errno;          /* ibv_alloc_mw fails with it */
	int mw_out;            /* live memory windows */
	int n_bind;            /* binds seen (ibv_bind_mw and IBV_WR_BIND_MW) */
	struct ibv_mw_bind_info last_bind;
	int ud_dropped;        /* UD datagrams dropped (no receive, wrong Q_Key) */
	struct ibv_ah_attr last_ah;
	/* what the driver passed */
	uint32_t next_qpn;
	int reg_access;
	struct ibv_qp_attr modify_attr[MOCK_MAX_MODIFY];
	int modify_mask[MOCK_MAX_MODIFY];
	uint32_t modify_qpn[MOCK_MAX_MODIFY];
	int n_modify;
	struct ibv_qp_init_attr last_init;
	struct ibv_send_wr last_send;
	int n_send;
	/* shared receive queues */
	int srq_errno;         /* ibv_create_srq fails with it */
	struct ibv_srq_init_attr last_srq_init;
	struct ibv_srq_attr last_srq_modify;
	int last_srq_modify_mask;
	int n_srq_recv;        /* WRs posted through ibv_post_srq_recv */
	uint64_t last_srq_wr_id;
	/* asynchronous events: queued by a test, read by ibv_get_async_event */
	struct ibv_async_event async[8];
	int n_async, async_acked;
	int resize_errno;      /* ibv_resize_cq fails with it */
	int last_resize;
	/* ibv_rereg_mr */
	int n_rereg, rereg_flags;
	int rereg_rc, rereg_errno; /* ibv_rereg_mr returns rereg_rc with errno rereg_errno */
	/* The extended verbs: with `extended` set before ibv_open_device, the
	 * context is a verbs_context with query_device_ex, query_rt_values and
	 * create_cq_ex; ts_mask is the completion timestamp mask it reports
	 * (0: no timestamps), cq_ex_flags the wc_flags beyond the standard ones
	 * its create_cq_ex accepts, clock its raw clock (each stamped
	 * completion advances it by one). */
	int extended;
	uint64_t ts_mask;
	uint64_t cq_ex_flags;
	uint64_t clock;
	int n_cq_ex;           /* CQs made by create_cq_ex */
	/* XRC: with `xrc` set (and `extended`), the device says IBV_DEVICE_XRC
	 * and its context has open_xrcd, close_xrcd, create_srq_ex and
	 * get_srq_num, which record what they were given. */
	int xrc;
	int xrcd_out;
	struct ibv_xrcd_init_attr last_xrcd_init;
	struct ibv_srq_init_attr_ex last_srq_ex;
	/* ODP: query_device_ex reports IBV_ODP_SUPPORT, and _IMPLICIT with
	 * odp_implicit; the extended context's advise_mr returns advise_rc and
	 * keeps what it was given; ibv_reg_mr keeps its range. */
	int odp_implicit;
	int advise_rc, n_advise;
	uint32_t last_advice, last_advise_flags, last_advise_n;
	struct ibv_sge last_advise_sge;
	void *reg_addr;
	size_t reg_length;
} mock = { .port_state = IBV_PORT_ACTIVE, .next_qpn = 0x100 };

static struct ibv_device mock_devs[MOCK_NDEV] = {
	{ .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB, .name = "mock_0" },
	{ .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB, .name = "mock_1" },
};

static const uint8_t mock_gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
				      0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55 };

struct mock_cq {
	union {
		struct ibv_cq cq;     /* first: the driver holds &cq */
		struct ibv_cq_ex cqx; /* a CQ of create_cq_ex: ibv_cq_ex_to_cq is the cast */
	};
	struct ibv_wc *q;
	uint64_t *ts;       /* create_cq_ex with a timestamp: the stamp of each entry */
	bool loaded;        /* create_cq_ex: start_poll/next_poll loaded the head entry */
	int size, head, count;
};

struct mock_recv {
	uint64_t wr_id;
	int num_sge;
	struct ibv_sge sge[MOCK_SGE];
};

struct mock_qp {
	struct ibv_qp qp; /* first */
	uint32_t dest_qpn;
	uint32_t qkey;
	int sq_sig_all;
	struct mock_recv rq[MOCK_RQ];
	int rq_head, rq_count;
};

static struct mock_qp *mock_qps[MOCK_MAX_QP];

struct mock_mr {
	struct ibv_mr mr; /* first */
	unsigned int access;
};

static struct mock_mr *mock_mrs[MOCK_MAX_MR];

/* The MR with this key covering [addr, addr + len) with the access, or NULL. */
static const struct mock_mr *mock_find_mr(uint32_t key, int remote, uint64_t addr, uint64_t len,
					  unsigned int need)
{
	for (int i = 0; i < MOCK_MAX_MR; i++) {
		const struct mock_mr *m = mock_mrs[i];

		if (!m || (remote ? m->mr.rkey : m->mr.lkey) != key)
			continue;
		if (addr < (uintptr_t)m->mr.addr ||
		    addr + len > (uintptr_t)m->mr.addr + m->mr.length ||
		    (m->access & need) != need)
			return NULL;
		return m;
	}
	return NULL;
}

/* Every SGE under a local key with the access (LOCAL_WRITE for sinks). */
static int mock_sges_ok(const struct ibv_sge *sge, int n, unsigned int need)
{
	for (int i = 0; i < n; i++)
		if (!mock_find_mr(sge[i].lkey, 0, sge[i].addr, sge[i].length, need))
			return 0;
	return 1;
}

static struct mock_qp *mock_find_qp(uint32_t qpn)
{
	for (int i = 0; i < MOCK_MAX_QP; i++)
		if (mock_qps[i] && mock_qps[i]->qp.qp_num == qpn)
			return mock_qps[i];
	return NULL;
}

static int mock_complete(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct mock_cq *c = (struct mock_cq *)cq;

	if (c->count == c->size)
		return -1;
	c->q[(c->head + c->count) % c->size] = *wc;
	if (c->ts)
		c->ts[(c->head + c->count) % c->size] = ++mock.clock & mock.ts_mask;
	c->count++;
	return 0;
}

static uint64_t mock_sge_len(const struct ibv_sge *sge, int n)
{
	uint64_t len = 0;

	for (int i = 0; i < n; i++)
		len += sge[i].length;
	return len;
}

/* Copy between a flat buffer and an SGE list, in either direction. */
static void mock_gather(const struct ibv_sge *sge, int n, uint8_t *dst)
{
	for (int i = 0; i < n; i++) {
		memcpy(dst, (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		dst += sge[i].length;
	}
}

static void mock_scatter(const struct ibv_sge *sge, int n, const uint8_t *src, uint64_t len)
{
	for (int i = 0; i < n && len > 0; i++) {
		uint64_t k = sge[i].length < len ? sge[i].length : len;

		memcpy((void *)(uintptr_t)sge[i].addr, src, k);
		src += k;
		len -= k;
	}
}

static int mock_take_recv(struct mock_qp *q, struct mock_recv *r)
{
	if (q->rq_count == 0)
		return -1;
	*r = q->rq[q->rq_head];
	q->rq_head = (q->rq_head + 1) % MOCK_RQ;
	q->rq_count--;
	return 0;
}

static enum ibv_wc_opcode mock_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/* Complete wr in error (always signalled) and move q to ERR, as a NIC does. */
static int mock_fail(struct mock_qp *q, const struct ibv_send_wr *wr, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr->wr_id;
	wc.status = status;
	wc.qp_num = q->qp.qp_num;
	mock_complete(q->qp.send_cq, &wc);
	q->qp.state = IBV_QPS_ERR;
	return 0;
}

struct mock_ah {
	struct ibv_ah ah; /* first */
	struct ibv_ah_attr attr;
};

/* A UD SEND: as a NIC on one subnet; a datagram nobody takes is dropped. */
static int mock_execute_ud(struct mock_qp *q, const struct ibv_send_wr *wr)
{
	const struct mock_ah *ah = (const struct mock_ah *)wr->wr.ud.ah;
	struct mock_qp *peer = mock_find_qp(wr->wr.ud.remote_qpn);
	uint64_t len = mock_sge_len(wr->sg_list, wr->num_sge);
	uint8_t *buf;
	struct mock_recv r;
	struct ibv_wc wc;

	if (q->qp.state != IBV_QPS_RTS || !ah || wr->num_sge > MOCK_SGE ||
	    (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) || len > 4096)
		return EINVAL;
	if (!(wr->send_flags & IBV_SEND_INLINE) && !mock_sges_ok(wr->sg_list, wr->num_sge, 0))
		return mock_fail(q, wr, IBV_WC_LOC_PROT_ERR);
	if (!peer || peer->qp.qp_type != IBV_QPT_UD || peer->qp.state < IBV_QPS_RTR ||
	    peer->qkey != wr->wr.ud.remote_qkey || mock_take_recv(peer, &r) != 0) {
		mock.ud_dropped++;
	} else {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = r.wr_id;
		wc.qp_num = peer->qp.qp_num;
		wc.opcode = IBV_WC_RECV;
		if (mock_sge_len(r.sge, r.num_sge) < 40 + len ||
		    !mock_sges_ok(r.sge, r.num_sge, IBV_ACCESS_LOCAL_WRITE)) {
			wc.status = IBV_WC_LOC_LEN_ERR;
		} else {
			/* The GRH: IPVer 6, traffic class, flow label, payload
			 * length, next header 0x1b, hop limit, SGID, DGID. */
			struct ibv_grh grh;

			buf = malloc(40 + len);
			if (!buf)
				return ENOMEM;
			memset(&grh, 0, sizeof(grh));
			grh.version_tclass_flow = htobe32(6u << 28 |
							  (uint32_t)ah->attr.grh.traffic_class << 20 |
							  ah->attr.grh.flow_label);
			grh.paylen = htobe16((uint16_t)len);
			grh.next_hdr = 0x1b;
			grh.hop_limit = ah->attr.grh.hop_limit;
			memcpy(grh.sgid.raw, mock_gid, 16);
			memcpy(grh.dgid.raw, ah->attr.grh.dgid.raw, 16);
			memcpy(buf, &grh, 40);
			mock_gather(wr->sg_list, wr->num_sge, buf + 40);
			mock_scatter(r.sge, r.num_sge, buf, 40 + len);
			free(buf);
			wc.byte_len = (uint32_t)(40 + len);
			wc.src_qp = q->qp.qp_num;
			wc.wc_flags = IBV_WC_GRH;
			wc.slid = 0x11;
			wc.sl = ah->attr.sl;
			wc.pkey_index = 0;
			if (wr->opcode == IBV_WR_SEND_WITH_IMM) {
				wc.imm_data = wr->imm_data;
				wc.wc_flags |= IBV_WC_WITH_IMM;
			}
		}
		mock_complete(peer->qp.recv_cq, &wc);
	}
	if (q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.opcode = IBV_WC_SEND;
		wc.byte_len = (uint32_t)len;
		wc.qp_num = q->qp.qp_num;
		mock_complete(q->qp.send_cq, &wc);
	}
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct mock_ah *a;

	mock.last_ah = *attr;
	if (mock.ah_errno) {
		errno = mock.ah_errno;
		return NULL;
	}
	if (attr->port_num != 1 || (attr->is_global && attr->grh.sgid_index >= 2)) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->ah.context = pd->context;
	a->ah.pd = pd;
	a->attr = *attr;
	mock.ah_out++;
	return &a->ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	mock.ah_out--;
	return 0;
}

/* As libibverbs: the reply goes to the GRH's SGID from the local GID whose
 * value is the GRH's DGID. */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	(void)context;
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		uint32_t vtf = be32toh(grh->version_tclass_flow);
		int idx = -1;

		for (int i = 0; i < 2; i++) {
			union ibv_gid g;
			memcpy(g.raw, mock_gid, 16);
			g.raw[15] = (uint8_t)(g.raw[15] + i);
			if (memcmp(g.raw, grh->dgid.raw, 16) == 0)
				idx = i;
		}
		if (idx < 0) {
			errno = ENOENT;
			return -1;
		}
		ah_attr->is_global = 1;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.sgid_index = (uint8_t)idx;
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah_attr->grh.hop_limit = 0xff;
	}
	return 0;
}

/* Execute one WR between q and its peer; 0, or an errno for bad_wr. */
static int mock_execute(struct mock_qp *q, const struct ibv_send_wr *wr)
{
	struct mock_qp *peer = mock_find_qp(q->dest_qpn);
	uint64_t len = mock_sge_len(wr->sg_list, wr->num_sge);
	struct ibv_wc wc;
	struct mock_recv r;
	uint8_t *buf;

	if (q->qp.state != IBV_QPS_RTS || !peer || peer->qp.state < IBV_QPS_RTR ||
	    wr->num_sge > MOCK_SGE)
		return EINVAL;
	buf = malloc(len ? len : 1);
	if (!buf)
		return ENOMEM;
	memset(&wc, 0, sizeof(wc));
	if (!(wr->send_flags & IBV_SEND_INLINE) &&
	    !mock_sges_ok(wr->sg_list, wr->num_sge,
			  wr->opcode == IBV_WR_RDMA_READ ||
			  wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			  wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_ACCESS_LOCAL_WRITE : 0)) {
		free(buf);
		return mock_fail(q, wr, IBV_WC_LOC_PROT_ERR);
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		if (!mock_find_mr(wr->wr.rdma.rkey, 1, wr->wr.rdma.remote_addr, len,
				  wr->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ
								 : IBV_ACCESS_REMOTE_WRITE)) {
			free(buf);
			return mock_fail(q, wr, IBV_WC_REM_ACCESS_ERR);
		}
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (!mock_find_mr(wr->wr.atomic.rkey, 1, wr->wr.atomic.remote_addr, 8,
				  IBV_ACCESS_REMOTE_ATOMIC)) {
			free(buf);
			return mock_fail(q, wr, IBV_WC_REM_ACCESS_ERR);
		}
		break;
	default:
		break;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		mock_gather(wr->sg_list, wr->num_sge, buf);
		memcpy((void *)(uintptr_t)wr->wr.rdma.remote_addr, buf, len);
		if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
			if (mock_take_recv(peer, &r) != 0)
				goto rnr;
			wc.wr_id = r.wr_id;
			wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			wc.byte_len = (uint32_t)len;
			wc.imm_data = wr->imm_data;
			wc.wc_flags = IBV_WC_WITH_IMM;
			wc.qp_num = peer->qp.qp_num;
			mock_complete(peer->qp.recv_cq, &wc);
		}
		break;
	case IBV_WR_RDMA_READ:
		mock_scatter(wr->sg_list, wr->num_sge,
			     (const uint8_t *)(uintptr_t)wr->wr.rdma.remote_addr, len);
		break;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		if (mock_take_recv(peer, &r) != 0)
			goto rnr;
		if (!mock_sges_ok(r.sge, r.num_sge, IBV_ACCESS_LOCAL_WRITE) ||
		    mock_sge_len(r.sge, r.num_sge) < len) {
			free(buf);
			return mock_fail(q, wr, IBV_WC_REM_OP_ERR);
		}
		mock_gather(wr->sg_list, wr->num_sge, buf);
		mock_scatter(r.sge, r.num_sge, buf, len);
		wc.wr_id = r.wr_id;
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = (uint32_t)len;
		if (wr->opcode == IBV_WR_SEND_WITH_IMM) {
			wc.imm_data = wr->imm_data;
			wc.wc_flags = IBV_WC_WITH_IMM;
		}
		wc.qp_num = peer->qp.qp_num;
		wc.src_qp = q->qp.qp_num;
		mock_complete(peer->qp.recv_cq, &wc);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD: {
		uint64_t *target = (uint64_t *)(uintptr_t)wr->wr.atomic.remote_addr;
		uint64_t old = *target;

		if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			*target = old + wr->wr.atomic.compare_add;
		else if (old == wr->wr.atomic.compare_add)
			*target = wr->wr.atomic.swap;
		mock_scatter(wr->sg_list, wr->num_sge, (const uint8_t *)&old, sizeof(old));
		len = sizeof(old);
		break;
	}
	default:
		free(buf);
		return EINVAL;
	}
	free(buf);
	if (q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.opcode = mock_wc_opcode(wr->opcode);
		wc.byte_len = (uint32_t)len;
		wc.qp_num = q->qp.qp_num;
		mock_complete(q->qp.send_cq, &wc);
	}
	return 0;
rnr:
	/* No receive posted at the peer: as after the RNR retries ran out. */
	free(buf);
	return mock_fail(q, wr, IBV_WC_RNR_RETRY_EXC_ERR);
}

/* A bind completes at once (the mock checks no ranges: the facade did). */
static int mock_bind(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi,
		     uint64_t wr_id, unsigned int flags)
{
	struct mock_qp *q = (struct mock_qp *)qp;
	struct ibv_wc wc;

	if (qp->state != IBV_QPS_RTS)
		return EINVAL;
	mock.n_bind++;
	mock.last_bind = *bi;
	mw->rkey = rkey;
	if ((flags & IBV_SEND_SIGNALED) || q->sq_sig_all) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr_id;
		wc.status = IBV_WC_SUCCESS;
		wc.opcode = IBV_WC_BIND_MW;
		wc.qp_num = qp->qp_num;
		mock_complete(qp->send_cq, &wc);
	}
	return 0;
}

static struct ibv_mw *mock_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	static uint32_t next = 0x100;
	struct ibv_mw *m;

	if (mock.mw_errno) {
		errno = mock.mw_errno;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->context = pd->context;
	m->pd = pd;
	m->type = type;
	m->rkey = (next++) << 8 | 0x7f;
	mock.mw_out++;
	return m;
}

static int mock_dealloc_mw(struct ibv_mw *mw)
{
	free(mw);
	mock.mw_out--;
	return 0;
}

static int mock_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	return mock_bind(qp, mw, ibv_inc_rkey(mw->rkey), &b->bind_info, b->wr_id, b->send_flags);
}

static int mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct mock_qp *q = (struct mock_qp *)qp;

	for (; wr; wr = wr->next) {
		int rc;

		/* A provider reads a WR by opcode and QP type: the members after
		 * wr (XRC, bind_mw, tso) only for their QP type and opcodes. So
		 * does this one: rverbs hands an rv_send_wr, which ends before
		 * them, to the provider as it is (rverbs/qp.h). */
		memset(&mock.last_send, 0, sizeof(mock.last_send));
		memcpy(&mock.last_send, wr,
		       wr->opcode == IBV_WR_BIND_MW ? sizeof(*wr) : offsetof(struct ibv_send_wr, qp_type));
		mock.n_send++;
		if (wr->opcode == IBV_WR_BIND_MW) {
			rc = mock_bind(qp, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info, wr->wr_id,
				       wr->send_flags);
			if (rc) {
				*bad = wr;
				return rc;
			}
			continue;
		}
		rc = q->qp.qp_type == IBV_QPT_UD ? mock_execute_ud(q, wr) : mock_execute(q, wr);
		if (rc) {
			*bad = wr;
			return rc;
		}
	}
	return 0;
}

static int mock_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct mock_qp *q = (struct mock_qp *)qp;

	for (; wr; wr = wr->next) {
		struct mock_recv *r;

		if (q->rq_count == MOCK_RQ || wr->num_sge > MOCK_SGE) {
			*bad = wr;
			return q->rq_count == MOCK_RQ ? ENOMEM : EINVAL;
		}
		r = &q->rq[(q->rq_head + q->rq_count) % MOCK_RQ];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge > 0)
			memcpy(r->sge, wr->sg_list, sizeof(r->sge[0]) * (size_t)wr->num_sge);
		q->rq_count++;
	}
	return 0;
}

static int mock_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct mock_cq *c = (struct mock_cq *)cq;
	int n = 0;

	for (; n < num && c->count > 0; n++) {
		wc[n] = c->q[c->head];
		c->head = (c->head + 1) % c->size;
		c->count--;
	}
	return n;
}

/* ---- the extended verbs (mock.extended) ---- */

static struct mock_cq *cq_of_ex(struct ibv_cq_ex *x)
{
	return (struct mock_cq *)(void *)x;
}

static const struct ibv_wc *ex_cur(struct ibv_cq_ex *x)
{
	struct mock_cq *c = cq_of_ex(x);

	return &c->q[c->head];
}

static int ex_load(struct mock_cq *c)
{
	if (c->count == 0)
		return ENOENT;
	c->cqx.wr_id = c->q[c->head].wr_id;
	c->cqx.status = c->q[c->head].status;
	c->loaded = true;
	return 0;
}

static void ex_consume(struct mock_cq *c)
{
	if (!c->loaded)
		return;
	c->head = (c->head + 1) % c->size;
	c->count--;
	c->loaded = false;
}

static int ex_start_poll(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *attr)
{
	(void)attr;
	return ex_load(cq_of_ex(x));
}

static int ex_next_poll(struct ibv_cq_ex *x)
{
	ex_consume(cq_of_ex(x));
	return ex_load(cq_of_ex(x));
}

static void ex_end_poll(struct ibv_cq_ex *x)
{
	ex_consume(cq_of_ex(x));
}

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *x) { return ex_cur(x)->opcode; }
static uint32_t ex_read_vendor_err(struct ibv_cq_ex *x) { return ex_cur(x)->vendor_err; }
static uint32_t ex_read_byte_len(struct ibv_cq_ex *x) { return ex_cur(x)->byte_len; }
static __be32 ex_read_imm_data(struct ibv_cq_ex *x) { return ex_cur(x)->imm_data; }
static uint32_t ex_read_qp_num(struct ibv_cq_ex *x) { return ex_cur(x)->qp_num; }
static uint32_t ex_read_src_qp(struct ibv_cq_ex *x) { return ex_cur(x)->src_qp; }
static unsigned int ex_read_wc_flags(struct ibv_cq_ex *x) { return ex_cur(x)->wc_flags; }
static uint32_t ex_read_slid(struct ibv_cq_ex *x) { return ex_cur(x)->slid; }
static uint8_t ex_read_sl(struct ibv_cq_ex *x) { return ex_cur(x)->sl; }
static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *x) { return ex_cur(x)->dlid_path_bits; }

static uint64_t ex_read_completion_ts(struct ibv_cq_ex *x)
{
	struct mock_cq *c = cq_of_ex(x);

	return c->ts[c->head];
}

static struct ibv_cq_ex *mock_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	uint64_t beyond = a->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS;
	struct ibv_cq *cq;
	struct mock_cq *c;

	if (beyond & ~mock.cq_ex_flags || ((beyond & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) && !mock.ts_mask)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = ibv_create_cq(context, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector);
	if (!cq)
		return NULL;
	c = (struct mock_cq *)cq;
	if (beyond & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) {
		c->ts = calloc((size_t)c->size, sizeof(*c->ts));
		if (!c->ts) {
			ibv_destroy_cq(cq);
			errno = ENOMEM;
			return NULL;
		}
	}
	c->cqx.start_poll = ex_start_poll;
	c->cqx.next_poll = ex_next_poll;
	c->cqx.end_poll = ex_end_poll;
	c->cqx.read_opcode = ex_read_opcode;
	c->cqx.read_vendor_err = ex_read_vendor_err;
	c->cqx.read_byte_len = ex_read_byte_len;
	c->cqx.read_imm_data = ex_read_imm_data;
	c->cqx.read_qp_num = ex_read_qp_num;
	c->cqx.read_src_qp = ex_read_src_qp;
	c->cqx.read_wc_flags = ex_read_wc_flags;
	c->cqx.read_slid = ex_read_slid;
	c->cqx.read_sl = ex_read_sl;
	c->cqx.read_dlid_path_bits = ex_read_dlid_path_bits;
	c->cqx.read_completion_ts = ex_read_completion_ts;
	mock.n_cq_ex++;
	return &c->cqx;
}

static int mock_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	(void)input;
	memset(attr, 0, attr_size);
	ibv_query_device(context, &attr->orig_attr);
	attr->completion_timestamp_mask = mock.ts_mask;
	attr->hca_core_clock = mock.ts_mask ? 156250 : 0;
	attr->device_cap_flags_ex = attr->orig_attr.device_cap_flags | (1ULL << 40);
	attr->odp_caps.general_caps = IBV_ODP_SUPPORT | (mock.odp_implicit ? IBV_ODP_SUPPORT_IMPLICIT : 0);
	attr->odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE;
	attr->packet_pacing_caps.qp_rate_limit_min = 1000;
	attr->packet_pacing_caps.qp_rate_limit_max = 100000000;
	attr->packet_pacing_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	attr->max_dm_size = 262144;
	attr->pci_atomic_caps.fetch_add = IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP;
	attr->pci_atomic_caps.compare_swap = IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP |
					     IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP;
	return 0;
}

static int mock_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			  struct ibv_sge *sg_list, uint32_t num_sges)
{
	(void)pd;
	mock.n_advise++;
	mock.last_advice = (uint32_t)advice;
	mock.last_advise_flags = flags;
	mock.last_advise_n = num_sges;
	if (num_sges)
		mock.last_advise_sge = sg_list[0];
	return mock.advise_rc;
}

static int mock_query_rt_values(struct ibv_context *context, struct ibv_values_ex *v)
{
	(void)context;
	if (!mock.ts_mask)
		return EOPNOTSUPP;
	v->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	v->raw_clock.tv_sec = 0;
	v->raw_clock.tv_nsec = (long)(mock.clock & mock.ts_mask);
	return 0;
}

/* Completion channels: an fd that never signals; CQs arm but never fire. */
static int mock_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return mock.notify_rc;
}

/* Shared receive queues: created, modified, queried and posted to; the
 * loopback data path does not consume from them. */
struct mock_srq {
	struct ibv_srq srq; /* first */
	struct ibv_srq_attr attr;
};

static int mock_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct mock_srq *s = (struct mock_srq *)srq;

	for (; wr; wr = wr->next) {
		if (wr->num_sge > (int)s->attr.max_sge) {
			*bad = wr;
			return EINVAL;
		}
		mock.n_srq_recv++;
		mock.last_srq_wr_id = wr->wr_id;
	}
	return 0;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct mock_srq *s;

	if (mock.srq_errno) {
		errno = mock.srq_errno;
		return NULL;
	}
	mock.last_srq_init = *init;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->srq.context = pd->context;
	s->srq.pd = pd;
	s->srq.srq_context = init->srq_context;
	/* Providers round up and say so. */
	init->attr.max_wr = init->attr.max_wr < 16 ? 16 : init->attr.max_wr;
	s->attr = init->attr;
	mock.srq_out++;
	return &s->srq;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct mock_srq *s = (struct mock_srq *)srq;

	mock.last_srq_modify = *attr;
	mock.last_srq_modify_mask = mask;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL; /* like most providers: no resize */
	if (mask & IBV_SRQ_LIMIT)
		s->attr.srq_limit = attr->srq_limit;
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	*attr = ((struct mock_srq *)srq)->attr;
	return 0;
}

static struct ibv_xrcd *mock_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *init)
{
	struct ibv_xrcd *x = calloc(1, sizeof(*x));

	mock.last_xrcd_init = *init;
	if (!x)
		return NULL;
	x->context = c;
	mock.xrcd_out++;
	return x;
}

static int mock_close_xrcd(struct ibv_xrcd *x)
{
	free(x);
	mock.xrcd_out--;
	return 0;
}

static struct ibv_srq *mock_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *init)
{
	struct mock_srq *s = calloc(1, sizeof(*s));

	mock.last_srq_ex = *init;
	if (!s)
		return NULL;
	s->srq.context = c;
	s->srq.pd = init->pd;
	s->srq.srq_context = init->srq_context;
	s->attr = init->attr;
	mock.srq_out++;
	return &s->srq;
}

static int mock_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	(void)srq;
	*num = 0x4242;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	free(srq);
	mock.srq_out--;
	return 0;
}

/* Asynchronous events: a test queues them in mock.async and makes the
 * async_fd readable with mock_async_signal(). */
static __attribute__((unused)) void mock_async_signal(struct ibv_context *c)
{
	uint64_t one = 1;

	if (write(c->async_fd, &one, sizeof(one)) < 0)
		abort();
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	uint64_t v;

	if (mock.n_async == 0) {
		errno = EAGAIN;
		return -1;
	}
	*event = mock.async[0];
	memmove(&mock.async[0], &mock.async[1], sizeof(mock.async[0]) * (size_t)(mock.n_async - 1));
	if (--mock.n_async == 0 && read(context->async_fd, &v, sizeof(v)) < 0)
		abort();
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
	mock.async_acked++;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct mock_cq *c = (struct mock_cq *)cq;

	mock.last_resize = cqe;
	if (mock.resize_errno)
		return mock.resize_errno;
	struct ibv_wc *q;

	if (cqe < c->count || cqe > 4096)
		return EINVAL;
	q = calloc((size_t)cqe + 1, sizeof(*q));
	if (!q)
		return ENOMEM;
	for (int i = 0; i < c->count; i++)
		q[i] = c->q[(c->head + i) % c->size];
	free(c->q);
	c->q = q;
	c->head = 0;
	c->size = cqe + 1; /* one more than asked, as the provider may round up */
	cq->cqe = c->size;
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->context = context;
	ch->fd = eventfd(0, EFD_CLOEXEC);
	if (ch->fd < 0) {
		free(ch);
		return NULL;
	}
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	close(channel->fd);
	free(channel);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	(void)channel;
	(void)cq;
	(void)cq_context;
	errno = mock.cq_event_errno ? mock.cq_event_errno : EAGAIN;
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;

	if (mock.list_errno) {
		errno = mock.list_errno;
		return NULL;
	}
	list = calloc(MOCK_NDEV + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < MOCK_NDEV; i++)
		list[i] = &mock_devs[i];
	if (num_devices)
		*num_devices = MOCK_NDEV;
	mock.lists_out++;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
	mock.lists_out--;
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *c;

	if (mock.open_errno) {
		errno = mock.open_errno;
		return NULL;
	}
	if (mock.extended) {
		struct verbs_context *v = calloc(1, sizeof(*v));

		if (!v)
			return NULL;
		v->sz = sizeof(*v);
		v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
		v->query_device_ex = mock_query_device_ex;
		v->query_rt_values = mock_query_rt_values;
		v->create_cq_ex = mock_create_cq_ex;
		if (mock.xrc) {
			v->open_xrcd = mock_open_xrcd;
			v->close_xrcd = mock_close_xrcd;
			v->create_srq_ex = mock_create_srq_ex;
			v->get_srq_num = mock_get_srq_num;
		}
		v->advise_mr = mock_advise_mr;
		c = &v->context;
	} else {
		c = calloc(1, sizeof(*c));
	}
	if (!c)
		return NULL;
	c->device = device;
	c->ops.post_send = mock_post_send;
	c->ops.post_recv = mock_post_recv;
	c->ops.poll_cq = mock_poll_cq;
	c->ops.req_notify_cq = mock_req_notify_cq;
	c->ops.post_srq_recv = mock_post_srq_recv;
	c->ops.alloc_mw = mock_alloc_mw;
	c->ops.dealloc_mw = mock_dealloc_mw;
	c->ops.bind_mw = mock_bind_mw;
	c->async_fd = eventfd(0, EFD_CLOEXEC);
	c->num_comp_vectors = 2;
	mock.ctx_out++;
	return c;
}

int ibv_close_device(struct ibv_context *context)
{
	close(context->async_fd);
	if (context->abi_compat == __VERBS_ABI_IS_EXTENDED)
		free(verbs_get_ctx(context));
	else
		free(context);
	mock.ctx_out--;
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
	a->max_sge = MOCK_SGE;
	a->max_cq = 10;
	a->max_cqe = 4096;
	a->max_pd = 10;
	a->max_srq = 10;
	a->max_srq_wr = 1024;
	a->max_srq_sge = MOCK_SGE;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->phys_port_cnt = 1;
	if (mock.xrc)
		a->device_cap_flags |= IBV_DEVICE_XRC;
	return 0;
}

/* verbs.h maps ibv_query_port to an inline that calls this symbol for a
 * context without the extended ops (ours), passing a whole ibv_port_attr. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr *a = (struct ibv_port_attr *)(void *)port_attr;

	(void)context;
	if (port_num != 1)
		return EINVAL;
	a->state = (enum ibv_port_state)mock.port_state;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_1024;
	a->gid_tbl_len = 2;
	a->max_msg_sz = 1u << 30;
	a->pkey_tbl_len = 1;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	(void)context;
	if (port_num != 1 || index < 0 || index >= 2)
		return -1;
	memcpy(gid->raw, mock_gid, 16);
	gid->raw[15] = (uint8_t)(gid->raw[15] + index);
	return 0;
}

/* Entry 0 is RoCE v1 on ifindex 7, entry 1 RoCE v2 on ifindex 7. */
int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	(void)flags;
	if (entry_size < sizeof(*entry))
		return EINVAL;
	if (ibv_query_gid(context, (uint8_t)port_num, (int)gid_index, &entry->gid) != 0)
		return port_num == 1 ? ENODATA : EINVAL;
	entry->gid_index = gid_index;
	entry->port_num = port_num;
	entry->gid_type = gid_index == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 7;
	return 0;
}

/* One entry, 0x8001, in network order as libibverbs returns it. */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0)
		return -1;
	*pkey = htobe16(0x8001);
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd;

	if (mock.pd_errno) {
		errno = mock.pd_errno;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->context = context;
	mock.pd_out++;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (mock.dealloc_pd_errno) {
		int e = mock.dealloc_pd_errno;

		mock.dealloc_pd_errno = 0;
		return e;
	}
	free(pd);
	mock.pd_out--;
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct mock_mr *m;
	int slot = -1;

	(void)iova;
	if (mock.reg_errno) {
		errno = mock.reg_errno;
		return NULL;
	}
	for (int i = 0; i < MOCK_MAX_MR && slot < 0; i++)
		if (!mock_mrs[i])
			slot = i;
	/* As ibv_reg_mr(3): remote write or atomic need local write. */
	if (slot < 0 || ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
			 !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = slot < 0 ? ENOMEM : EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.lkey = 0x1000u + (uint32_t)slot;
	m->mr.rkey = 0x2000u + (uint32_t)slot;
	m->access = access;
	mock_mrs[slot] = m;
	mock.reg_access = (int)access;
	mock.reg_addr = addr;
	mock.reg_length = length;
	mock.mr_out++;
	return &m->mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

/* As ibv_rereg_mr(3); new keys on every success (0x3000 + slot). */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	struct mock_mr *m = (struct mock_mr *)mr;

	mock.n_rereg++;
	mock.rereg_flags = flags;
	if (mock.rereg_rc) {
		errno = mock.rereg_errno;
		return mock.rereg_rc;
	}
	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED)
		return IBV_REREG_MR_ERR_INPUT;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		m->access = (unsigned int)access;
	mr->lkey ^= 0x3000u;
	mr->rkey ^= 0x3000u;
	return 0;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	for (int i = 0; i < MOCK_MAX_MR; i++)
		if (mock_mrs[i] == (struct mock_mr *)mr)
			mock_mrs[i] = NULL;
	free(mr);
	mock.mr_out--;
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct mock_cq *c;
	int size = 1;

	if (cqe < 1 || cqe > 4096 || comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	/* Like several providers: a power of two minus one, at least cqe. */
	while (size < cqe + 1)
		size <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->q = calloc((size_t)size, sizeof(*c->q));
	if (!c->q) {
		free(c);
		return NULL;
	}
	c->size = size - 1;
	c->cq.context = context;
	c->cq.channel = channel;
	c->cq.cq_context = cq_context;
	c->cq.cqe = size - 1;
	mock.cq_out++;
	return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct mock_cq *c = (struct mock_cq *)cq;

	free(c->ts);
	free(c->q);
	free(c);
	mock.cq_out--;
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct mock_qp *q;
	int slot = -1;

	if (mock.qp_errno) {
		errno = mock.qp_errno;
		return NULL;
	}
	for (int i = 0; i < MOCK_MAX_QP && slot < 0; i++)
		if (!mock_qps[i])
			slot = i;
	if (init->cap.max_send_wr > 1024 || init->cap.max_recv_wr > 1024 ||
	    init->cap.max_send_sge > MOCK_SGE || init->cap.max_recv_sge > MOCK_SGE || slot < 0) {
		errno = EINVAL;
		return NULL;
	}
	mock.last_init = *init;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->qp.context = pd->context;
	q->qp.qp_context = init->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = init->send_cq;
	q->qp.recv_cq = init->recv_cq;
	q->qp.qp_num = ++mock.next_qpn;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = init->qp_type;
	q->sq_sig_all = init->sq_sig_all;
	/* Providers round the inline space up and say so. */
	if (init->cap.max_inline_data < 64)
		init->cap.max_inline_data = 64;
	mock_qps[slot] = q;
	mock.qp_out++;
	return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (mock.destroy_qp_busy) {
		mock.destroy_qp_busy = 0;
		return EBUSY;
	}
	for (int i = 0; i < MOCK_MAX_QP; i++)
		if (mock_qps[i] == (struct mock_qp *)qp)
			mock_qps[i] = NULL;
	/* As the kernel does: unread events about the QP go with it. */
	for (int i = 0; i < mock.n_async;) {
		enum ibv_event_type t = mock.async[i].event_type;
		bool about_qp = (t >= IBV_EVENT_QP_FATAL && t <= IBV_EVENT_PATH_MIG_ERR) ||
				t == IBV_EVENT_QP_LAST_WQE_REACHED;

		if (about_qp && mock.async[i].element.qp == qp) {
			memmove(&mock.async[i], &mock.async[i + 1],
				sizeof(mock.async[0]) * (size_t)(mock.n_async - i - 1));
			mock.n_async--;
		} else {
			i++;
		}
	}
	free(qp);
	mock.qp_out--;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct mock_qp *q = (struct mock_qp *)qp;

	if (mock.n_modify < MOCK_MAX_MODIFY) {
		mock.modify_attr[mock.n_modify] = *attr;
		mock.modify_mask[mock.n_modify] = attr_mask;
		mock.modify_qpn[mock.n_modify] = qp->qp_num;
		mock.n_modify++;
	}
	if (mock.modify_errno)
		return mock.modify_errno;
	if (attr_mask & IBV_QP_DEST_QPN)
		q->dest_qpn = attr->dest_qp_num;
	if (attr_mask & IBV_QP_QKEY)
		q->qkey = attr->qkey;
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct mock_qp *q = (struct mock_qp *)qp;

	(void)attr_mask;
	if (mock.query_qp_errno)
		return mock.query_qp_errno;
	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->dest_qp_num = q->dest_qpn;
	attr->port_num = 1;
	return 0;
}
