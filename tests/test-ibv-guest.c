/*
 * What only a real kernel RDMA device can show, run in the virtual machine of
 * scripts/vm on rxe0 (scripts/vm-checks): each case is what a NIC user meets
 * and soft0 cannot imitate.
 *
 *   gid-table    the port's GID table as the kernel fills it: a RoCE v2 entry
 *                for the netdev's IPv4 address (IPv4-mapped), on that netdev;
 *   memlock      without CAP_IPC_LOCK, a registration past RLIMIT_MEMLOCK
 *                fails with -ENOMEM and a message that names the limit, one
 *                under it works;
 *   fork         registered memory stays the memory the device writes after
 *                a fork, while the child lives and the parent writes to it
 *                first (copy-on-write must not move the pinned page);
 *   port-events  the netdev taken down and up gives PORT_ERR, then
 *                PORT_ACTIVE, on the context's event queue (it takes the
 *                guest's network down for a moment: run it last).
 *
 * Usage: test-ibv-guest CASE      (RVERBS_DEVICE=rxe0, RVERBS_GUEST_NETDEV=eth0)
 * Exits 77 when RVERBS_DEVICE names no libibverbs device.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/capability.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n  rv_error_last: %s\n",  \
				__FILE__, __LINE__, #cond, rv_error_last());               \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static const char *netdev(void)
{
	const char *n = getenv("RVERBS_GUEST_NETDEV");
	return n && *n ? n : "eth0";
}

static rv_context *open_device(void)
{
	const char *name = getenv("RVERBS_DEVICE");
	rv_device *dev = NULL;
	rv_context *ctx = NULL;

	if (!name || rv_device_find(name, &dev) < 0 || rv_device_kind_of(dev) == RV_DEVICE_SOFT) {
		fprintf(stderr, "skip: RVERBS_DEVICE names no libibverbs device\n");
		exit(77);
	}
	CHECK(rv_context_new(dev, NULL, &ctx) == 0);
	rv_device_unref(dev);
	return ctx;
}

/* The netdev's first IPv4 address, IPv4-mapped as a GID. */
static void netdev_gid(uint8_t gid[16])
{
	char cmd[128], line[128];
	FILE *f;
	struct in_addr a;
	bool found = false;

	snprintf(cmd, sizeof(cmd), "ip -4 -o addr show dev %s", netdev());
	f = popen(cmd, "r");
	CHECK(f != NULL);
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " inet ");
		if (p && sscanf(p, " inet %15[0-9.]", cmd) == 1 && inet_pton(AF_INET, cmd, &a) == 1)
			found = true;
	}
	pclose(f);
	CHECK(found);
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &a, 4);
}

static int case_gid_table(void)
{
	rv_context *ctx = open_device();
	rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};
	uint8_t want[16];
	bool found = false;

	netdev_gid(want);
	CHECK(rv_context_query_port(ctx, 1, &pa) == 0);
	CHECK(pa.gid_tbl_len > 0);
	for (uint32_t i = 0; i < pa.gid_tbl_len; i++) {
		rv_gid_entry e;
		if (rv_context_query_gid_entry(ctx, 1, i, &e) < 0)
			continue; /* an empty slot */
		printf("gid %u: type %u, ifindex %u\n", e.gid_index, e.gid_type, e.ndev_ifindex);
		if (memcmp(e.gid, want, 16) == 0 && e.gid_type == RV_GID_TYPE_ROCE_V2 &&
		    e.ndev_ifindex == if_nametoindex(netdev()))
			found = true;
	}
	CHECK(found);
	rv_context_close(ctx);
	rv_context_unref(ctx);
	printf("gid-table: ok\n");
	return 0;
}

/* Drops CAP_IPC_LOCK (which lets root pin past the limit). */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];

	CHECK(syscall(SYS_capget, &h, d) == 0);
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	CHECK(syscall(SYS_capset, &h, d) == 0);
}

static int case_memlock(void)
{
	struct rlimit rl = {.rlim_cur = 256 * 1024, .rlim_max = 256 * 1024};
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *small = NULL, *big = NULL;
	int rc;

	drop_ipc_lock();
	CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	ctx = open_device();
	CHECK(rv_pd_new(ctx, NULL, &pd) == 0);
	CHECK(rv_mr_alloc(pd, 16 * 1024, RV_ACCESS_LOCAL_WRITE, NULL, &small) == 0);
	rc = rv_mr_alloc(pd, 8u << 20, RV_ACCESS_LOCAL_WRITE, NULL, &big);
	printf("8 MiB past a 256 KiB memlock limit: %d, \"%s\"\n", rc, rv_error_last());
	CHECK(rc == -ENOMEM && big == NULL);
	CHECK(strstr(rv_error_last(), "memlock") || strstr(rv_error_last(), "MEMLOCK"));
	rv_mr_unref(small);
	rv_pd_unref(pd);
	rv_context_close(ctx);
	rv_context_unref(ctx);
	printf("memlock: ok\n");
	return 0;
}

static rv_wc poll_one(rv_cq *cq)
{
	rv_wc wc;
	int n = 0;

	for (int i = 0; i < 10000 && n == 0; i++) {
		struct timespec ts = {0, 1000000};
		n = rv_cq_poll(cq, &wc, 1);
		if (n == 0)
			nanosleep(&ts, NULL);
	}
	CHECK(n == 1);
	CHECK(wc.status == RV_WC_SUCCESS);
	return wc;
}

static int case_fork(void)
{
	rv_context *ctx = open_device();
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *a, *b;
	rv_mr *src, *dst;
	rv_endpoint ea, eb;
	rv_sge g;
	int go[2];
	pid_t child;
	uint8_t *d;

	CHECK(rv_pd_new(ctx, NULL, &pd) == 0);
	CHECK(rv_cq_new(ctx, NULL, &cq) == 0);
	qa.send_cq = cq;
	CHECK(rv_qp_new(pd, &qa, &a) == 0);
	CHECK(rv_qp_new(pd, &qa, &b) == 0);
	CHECK(rv_mr_alloc(pd, 4096, RV_ACCESS_ALL_REMOTE, NULL, &src) == 0);
	CHECK(rv_mr_alloc(pd, 4096, RV_ACCESS_ALL_REMOTE, NULL, &dst) == 0);
	CHECK(rv_qp_endpoint(a, &ea) == 0 && rv_qp_endpoint(b, &eb) == 0);
	CHECK(rv_qp_connect(a, &eb) == 0 && rv_qp_connect(b, &ea) == 0);
	d = rv_mr_addr(dst);
	memset(d, 0x11, 4096);
	memset(rv_mr_addr(src), 0x77, 4096);
	/* A child that lives across the transfer and holds its copy of the
	 * address space; the parent writes to the page first, which is where a
	 * copy-on-write would move it away from the device. */
	CHECK(pipe(go) == 0);
	fflush(NULL);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		char c;
		close(go[1]);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	memset(d, 0x22, 4096);
	g = (rv_sge){.addr = (uintptr_t)rv_mr_addr(src), .length = 4096, .lkey = rv_mr_lkey(src)};
	CHECK(rv_qp_write(a, &g, (uintptr_t)d, rv_mr_rkey(dst), 1) == 0);
	poll_one(cq);
	for (int i = 0; i < 4096; i++)
		CHECK(d[i] == 0x77);
	close(go[1]);
	CHECK(waitpid(child, NULL, 0) == child);
	close(go[0]);
	rv_context_close(ctx);
	rv_context_unref(ctx);
	rv_qp_unref(a);
	rv_qp_unref(b);
	rv_mr_unref(src);
	rv_mr_unref(dst);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	printf("fork: ok\n");
	return 0;
}

/* The next port event, skipping others, within 20 s. */
static uint32_t next_port_event(rv_context *ctx)
{
	for (int i = 0; i < 20; i++) {
		rv_async_event ev;
		int rc = rv_context_get_async_event(ctx, &ev, 20000);
		CHECK(rc == 0);
		printf("event %s, port %u\n", rv_async_event_str(ev.type), ev.port_num);
		uint32_t t = ev.type;
		rv_async_event_ack(&ev);
		if (t == RV_EVENT_PORT_ERR || t == RV_EVENT_PORT_ACTIVE)
			return t;
	}
	return 0;
}

static int case_port_events(void)
{
	rv_context *ctx = open_device();
	char cmd[128];
	int st;

	snprintf(cmd, sizeof(cmd), "ip link set %s down", netdev());
	CHECK(system(cmd) == 0);
	st = (int)next_port_event(ctx);
	snprintf(cmd, sizeof(cmd), "ip link set %s up", netdev());
	CHECK(system(cmd) == 0);
	CHECK(st == RV_EVENT_PORT_ERR);
	CHECK(next_port_event(ctx) == RV_EVENT_PORT_ACTIVE);
	rv_context_close(ctx);
	rv_context_unref(ctx);
	printf("port-events: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	if (strcmp(c, "gid-table") == 0)
		return case_gid_table();
	if (strcmp(c, "memlock") == 0)
		return case_memlock();
	if (strcmp(c, "fork") == 0)
		return case_fork();
	if (strcmp(c, "port-events") == 0)
		return case_port_events();
	fprintf(stderr, "usage: test-ibv-guest gid-table|memlock|fork|port-events\n");
	return 2;
}
