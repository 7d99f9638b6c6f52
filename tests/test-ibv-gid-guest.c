/*
 * GID selection on a kernel RoCE device (issue 19), in the virtual machine
 * of scripts/vm on rxe0 (scripts/vm-checks). The case gives the netdev a
 * second IPv4 address and a global IPv6 one, so that rxe0's GID table holds
 * a link-local entry (index 0), two IPv4-mapped ones and a global IPv6 one,
 * all RoCE v2, and checks on real traffic that:
 *
 *   - a fresh QP advertises an IPv4 entry, not index 0 (link-local);
 *   - rv_qp_connect, for a QP that advertised nothing, sends from the entry
 *     the kernel's route to the peer leaves from (the second IPv4 address;
 *     the IPv6 one for an IPv6 peer). On rxe this decides whether packets
 *     arrive at all: rxe delivers a packet to itself only when source and
 *     destination address are equal;
 *   - an RTR built by hand with rv_qp_gid_index() carries traffic, and one
 *     with sgid_index 0 towards an IPv4 GID is refused, naming both;
 *   - the connection helper over TCP to the second address advertises and
 *     sends from that address's GID, with the caller's traffic class;
 *   - over rdma_cm, to the same address, the QP adopts the GID rdma_cm
 *     chose, which is the one rverbs' own rules chose (the rules agree),
 *     and the ACK timeout reaches the QP.
 *
 * The addresses are removed again at the end. Usage: test-ibv-gid-guest
 * (RVERBS_DEVICE=rxe0, RVERBS_GUEST_NETDEV=eth0, root). Exits 77 when
 * RVERBS_DEVICE names no libibverbs device.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n  rv_error_last: %s\n",  \
				__FILE__, __LINE__, #cond, rv_error_last());               \
			cleanup_addrs();                                                   \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

#define V4B "192.168.77.15"
#define V6 "fd00:77::15"

static char netdev[32] = "eth0";

static void cleanup_addrs(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "ip addr del " V4B "/24 dev %s 2>/dev/null; ip -6 addr del " V6 "/64 dev %s 2>/dev/null",
		 netdev, netdev);
	if (system(cmd) != 0)
		fprintf(stderr, "note: removing the test addresses failed\n");
}

static void gid_of(const char *text, uint8_t gid[16])
{
	struct in_addr a;

	memset(gid, 0, 16);
	if (inet_pton(AF_INET, text, &a) == 1) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &a, 4);
		return;
	}
	CHECK(inet_pton(AF_INET6, text, gid) == 1);
}

/* The index of the RoCE v2 entry for gid, or -1. */
static int find_gid(rv_context *ctx, const uint8_t gid[16])
{
	rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};

	CHECK(rv_context_query_port(ctx, 1, &pa) == 0);
	for (uint32_t i = 0; i < pa.gid_tbl_len && i < 256; i++) {
		rv_gid_entry e;
		if (rv_context_query_gid_entry(ctx, 1, i, &e) == 0 && memcmp(e.gid, gid, 16) == 0 &&
		    e.gid_type == RV_GID_TYPE_ROCE_V2)
			return (int)i;
	}
	return -1;
}

static void print_table(rv_context *ctx)
{
	rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};

	CHECK(rv_context_query_port(ctx, 1, &pa) == 0);
	for (uint32_t i = 0; i < pa.gid_tbl_len && i < 256; i++) {
		rv_gid_entry e;
		char t[INET6_ADDRSTRLEN];
		if (rv_context_query_gid_entry(ctx, 1, i, &e) < 0)
			continue;
		inet_ntop(AF_INET6, e.gid, t, sizeof(t));
		printf("gid %u: %s type %u ifindex %u\n", i, t, e.gid_type, e.ndev_ifindex);
	}
}

struct side {
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
};

static void side_new(rv_context *ctx, struct side *s)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};

	CHECK(rv_pd_new(ctx, NULL, &s->pd) == 0);
	CHECK(rv_cq_new(ctx, NULL, &s->cq) == 0);
	qa.send_cq = s->cq;
	CHECK(rv_qp_new(s->pd, &qa, &s->qp) == 0);
	CHECK(rv_mr_alloc(s->pd, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &s->mr) == 0);
}

static void side_free(struct side *s)
{
	rv_mr_unref(s->mr);
	rv_qp_unref(s->qp);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
}

/* An RDMA WRITE from a's QP into b's buffer must land (a connected pair). */
static void write_lands(rv_qp *qp, rv_cq *cq, rv_mr *from, rv_mr *to, const char *what)
{
	rv_sge sge = {.addr = (uintptr_t)rv_mr_addr(from), .length = 64, .lkey = rv_mr_lkey(from)};
	rv_wc wc;
	int n = 0;

	memset(rv_mr_addr(to), 0, 64);
	snprintf(rv_mr_addr(from), 64, "%s", what);
	CHECK(rv_qp_write(qp, &sge, (uintptr_t)rv_mr_addr(to), rv_mr_rkey(to), 1) == 0);
	for (int i = 0; i < 5000 && n == 0; i++) {
		struct timespec ts = {0, 1000000};
		n = rv_cq_poll(cq, &wc, 1);
		if (n == 0)
			nanosleep(&ts, NULL);
	}
	CHECK(n == 1);
	if (wc.status != RV_WC_SUCCESS)
		fprintf(stderr, "%s: completion status %u\n", what, wc.status);
	CHECK(wc.status == RV_WC_SUCCESS);
	CHECK(strcmp(rv_mr_addr(to), what) == 0);
	printf("%s: the write landed\n", what);
}

/* Two QPs on ctx: b advertises entry peer_idx; a connects to b's endpoint
 * without giving its own first, so rverbs chooses a's GID for that peer. */
static void route_pair(rv_context *ctx, int peer_idx, int want_idx, const char *what)
{
	struct side a, b;
	rv_endpoint ea, eb;

	side_new(ctx, &a);
	side_new(ctx, &b);
	CHECK(rv_qp_set_gid_index(b.qp, (uint32_t)peer_idx) == 0);
	CHECK(rv_qp_endpoint(b.qp, &eb) == 0);
	CHECK(eb.caps & RV_EP_CAP_ROCE_V2);
	CHECK(rv_qp_connect(a.qp, &eb) == 0);
	printf("%s: rv_qp_connect chose GID index %d (want %d)\n", what, rv_qp_gid_index(a.qp), want_idx);
	CHECK(rv_qp_gid_index(a.qp) == want_idx);
	CHECK(rv_qp_endpoint(a.qp, &ea) == 0);
	CHECK(rv_qp_connect(b.qp, &ea) == 0);
	write_lands(a.qp, a.cq, a.mr, b.mr, what);
	side_free(&a);
	side_free(&b);
}

/* An RTR by hand: sgid 0 (link-local) to an IPv4 GID is refused; the index
 * rv_qp_gid_index() gives works. */
static void hand_built(rv_context *ctx)
{
	struct side a, b;
	rv_endpoint ea, eb;
	rv_qp_attr r;

	side_new(ctx, &a);
	side_new(ctx, &b);
	CHECK(rv_qp_endpoint(a.qp, &ea) == 0);
	CHECK(rv_qp_endpoint(b.qp, &eb) == 0);
	CHECK(rv_qp_gid_index(a.qp) != 0);
	CHECK(rv_qp_to_init(a.qp, NULL) == 0);
	memset(&r, 0, sizeof(r));
	r.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN | RV_QP_PATH_MTU;
	memcpy(r.ah_attr.dgid, eb.gid, 16);
	r.ah_attr.is_global = 1;
	r.ah_attr.hop_limit = 64;
	r.ah_attr.port_num = 1;
	r.dest_qp_num = eb.qpn;
	r.rq_psn = eb.psn;
	r.path_mtu = eb.mtu;
	CHECK(rv_qp_to_rtr(a.qp, &r) == -EINVAL); /* sgid_index 0: the link-local entry */
	printf("hand-built RTR with sgid_index 0: %s\n", rv_error_last());
	CHECK(strstr(rv_error_last(), "cannot reach the peer's GID") != NULL);
	r.ah_attr.sgid_index = (uint8_t)rv_qp_gid_index(a.qp);
	CHECK(rv_qp_to_rtr(a.qp, &r) == 0);
	CHECK(rv_qp_to_rts(a.qp, NULL) == 0);
	CHECK(rv_qp_connect(b.qp, &ea) == 0);
	write_lands(a.qp, a.cq, a.mr, b.mr, "hand-built RTR");
	side_free(&a);
	side_free(&b);
}

struct server_arg {
	rv_listener *l;
	const rv_conn_attr *attr;
	rv_conn *conn;
	int rc;
	char err[512];
};

static void *serve(void *p)
{
	struct server_arg *s = p;

	s->rc = rv_listener_accept(s->l, s->attr, 10000, &s->conn);
	if (s->rc < 0)
		snprintf(s->err, sizeof(s->err), "%s", rv_error_last());
	return NULL;
}

/* The helper to the second address (TCP or rdma_cm): both QPs' GID is that
 * address's entry; the caller's traffic class / ACK timeout are applied. */
static void helper_pair(rv_context *ctx, uint32_t transport, int want_idx, const char *what)
{
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = transport};
	rv_conn_attr ca = {.mask = RV_CONN_ATTR_TRANSPORT | RV_CONN_ATTR_TRAFFIC_CLASS | RV_CONN_ATTR_ACK_TIMEOUT |
				   RV_CONN_ATTR_PD | RV_CONN_ATTR_MR,
			   .transport = transport, .traffic_class = 0x68, .ack_timeout = 16};
	rv_conn_attr sa;
	struct server_arg s = {.attr = &sa};
	struct side a;
	rv_conn *cli = NULL;
	rv_endpoint peer;
	rv_qp_attr q = {.mask = RV_QP_AV | RV_QP_TIMEOUT};
	pthread_t t;
	char addr[64];
	rv_mr *to;
	int rc;

	if (transport == RV_CONN_TRANSPORT_RDMA_CM)
		ca.mask |= RV_CONN_ATTR_RESOLVE, ca.resolve_timeout_ms = 2000, ca.resolve_retries = 2;
	side_new(ctx, &a);
	ca.pd = a.pd;
	ca.mr = a.mr;
	sa = ca; /* the listener's transport is its own */
	sa.mask &= ~(uint64_t)(RV_CONN_ATTR_TRANSPORT | RV_CONN_ATTR_RESOLVE);
	CHECK(rv_listener_new(ctx, V4B ":0", &la, &s.l) == 0);
	snprintf(addr, sizeof(addr), V4B ":%d", rv_listener_port(s.l));
	CHECK(pthread_create(&t, NULL, serve, &s) == 0);
	rc = rv_connect(ctx, addr, &ca, 10000, &cli);
	if (rc < 0)
		fprintf(stderr, "%s: connect: %s\n", what, rv_error_last());
	CHECK(pthread_join(t, NULL) == 0);
	if (s.rc < 0)
		fprintf(stderr, "%s: accept: %s\n", what, s.err);
	CHECK(rc == 0 && s.rc == 0);
	CHECK(rv_conn_transport_of(cli) == (int)transport);
	printf("%s: client GID index %d, server GID index %d (want %d)\n", what, rv_qp_gid_index(rv_conn_qp(cli, 0)),
	       rv_qp_gid_index(rv_conn_qp(s.conn, 0)), want_idx);
	CHECK(rv_qp_gid_index(rv_conn_qp(cli, 0)) == want_idx);
	CHECK(rv_qp_gid_index(rv_conn_qp(s.conn, 0)) == want_idx);
	CHECK(rv_qp_query(rv_conn_qp(cli, 0), &q) == 0);
	printf("%s: traffic class 0x%x, sgid_index %u, timeout %u\n", what, q.ah_attr.traffic_class,
	       q.ah_attr.sgid_index, q.timeout);
	CHECK(q.ah_attr.sgid_index == want_idx);
	CHECK(q.timeout == 16);
	CHECK(q.ah_attr.traffic_class == 0x68); /* rdma_cm: the TOS of the id, in the path it resolved */
	CHECK(rv_conn_peer_endpoint(cli, 0, &peer) == 0);
	/* The server's buffer (it advertised the same side's MR: one process). */
	to = a.mr;
	{
		rv_mr *from;
		CHECK(rv_mr_alloc(rv_conn_pd(cli), 4096, RV_ACCESS_LOCAL_WRITE, NULL, &from) == 0);
		write_lands(rv_conn_qp(cli, 0), rv_conn_cq(cli), from, to, what);
		rv_mr_unref(from);
	}
	rv_conn_unref(cli);
	rv_conn_unref(s.conn);
	rv_listener_unref(s.l);
	side_free(&a);
}

static void log_line(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	fprintf(stderr, "rverbs log %d: %s\n", (int)level, msg);
}

int main(void)
{
	const char *name = getenv("RVERBS_DEVICE"), *nd = getenv("RVERBS_GUEST_NETDEV");
	uint8_t g_b[16], g_6[16];
	int i_b = -1, i_6 = -1, idx;
	rv_device *dev = NULL;
	rv_context *ctx = NULL;
	char cmd[200];

	if (!name || rv_device_find(name, &dev) < 0 || rv_device_kind_of(dev) == RV_DEVICE_SOFT) {
		fprintf(stderr, "skip: RVERBS_DEVICE names no libibverbs device\n");
		return 77;
	}
	if (nd && *nd)
		snprintf(netdev, sizeof(netdev), "%s", nd);
	rv_set_log_handler(log_line, NULL);
	CHECK(rv_context_new(dev, NULL, &ctx) == 0);
	rv_device_unref(dev);
	snprintf(cmd, sizeof(cmd), "ip addr add " V4B "/24 dev %s && ip -6 addr add " V6 "/64 dev %s nodad", netdev,
		 netdev);
	CHECK(system(cmd) == 0);
	gid_of(V4B, g_b);
	gid_of(V6, g_6);
	/* The kernel adds the GIDs on the address events, asynchronously. */
	for (int i = 0; i < 100 && (i_b < 0 || i_6 < 0); i++) {
		struct timespec ts = {0, 100000000};
		i_b = find_gid(ctx, g_b);
		i_6 = find_gid(ctx, g_6);
		if (i_b < 0 || i_6 < 0)
			nanosleep(&ts, NULL);
	}
	print_table(ctx);
	CHECK(i_b > 0 && i_6 > 0);

	idx = -1;
	{
		struct side s;
		rv_endpoint e;
		side_new(ctx, &s);
		idx = rv_qp_gid_index(s.qp);
		CHECK(rv_qp_endpoint(s.qp, &e) == 0);
		printf("a fresh QP advertises GID index %d\n", idx);
		CHECK(idx > 0); /* not the link-local entry 0 */
		CHECK(e.gid[10] == 0xff && e.gid[11] == 0xff); /* IPv4-mapped */
		side_free(&s);
	}
	route_pair(ctx, i_b, i_b, "route to " V4B);
	route_pair(ctx, i_6, i_6, "route to " V6);
	hand_built(ctx);
	helper_pair(ctx, RV_CONN_TRANSPORT_TCP, i_b, "helper over TCP to " V4B);
	helper_pair(ctx, RV_CONN_TRANSPORT_RDMA_CM, i_b, "helper over rdma_cm to " V4B);
	rv_context_close(ctx);
	rv_context_unref(ctx);
	cleanup_addrs();
	printf("gid-select: ok\n");
	return 0;
}
