/*
 * UD between soft0 and a kernel RoCE device, both ways (issue 21): one side
 * on the host (soft0 on the tap's address, with RV_SOFT_ROCE_PORT), the other
 * in the VM of scripts/vm (rxe1 on the guest's end of the tap). Each writes
 * its UD QP's number and GID to a file in a folder both see, reads the
 * other's, and sends "hello from ROLE" to the peer's UDP port 4791 (dlid 0)
 * until the peer says it got it; it checks the peer's message byte for byte
 * and that it came from the peer's QP. So each accepts the other's ICRC and
 * framing. scripts/vm-interop runs the pair.
 *
 * Usage: ud-interop host|guest DIR DEVICE [LISTEN_ADDR]
 *   host:  DEVICE soft0, LISTEN_ADDR the tap's host address
 *   guest: DEVICE rxe1
 * Exit 0 when both messages went through within 60 s.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

#define QKEY 0x2468ace0u
#define WAIT_S 60

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "ud-interop %s:%d: %s failed: %s\n", role, __LINE__, #cond, \
				rv_error_last());                                          \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static const char *role, *dir;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void path_of(char *buf, size_t len, const char *who, const char *what)
{
	snprintf(buf, len, "%s/%s.%s", dir, who, what);
}

static bool exists(const char *who, const char *what)
{
	char p[512];
	path_of(p, sizeof(p), who, what);
	return access(p, F_OK) == 0;
}

/* Written whole under another name, then renamed: the reader sees all or nothing. */
static void put(const char *what, const char *text)
{
	char p[512], tmp[520];
	FILE *f;

	path_of(p, sizeof(p), role, what);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	fputs(text, f);
	CHECK(fclose(f) == 0 && rename(tmp, p) == 0);
}

/* The index of the GID our endpoint advertises (rv_qp_gid_index, the one
 * an AV built by hand must send from), checked to be what the other side,
 * on IPv4, needs: an IPv4-mapped RoCE v2 entry, though entry 0 of a kernel
 * device is its IPv6 link-local one. */
static uint8_t advertised_gid(rv_context *ctx, rv_qp *qp, const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	int idx = rv_qp_gid_index(qp);
	rv_gid_entry e;

	CHECK(idx >= 0);
	CHECK(rv_context_query_gid_entry(ctx, 1, (uint32_t)idx, &e) == 0);
	CHECK(memcmp(e.gid, gid, 16) == 0);
	CHECK(memcmp(e.gid, v4mapped, 12) == 0 && e.gid_type == RV_GID_TYPE_ROCE_V2);
	return (uint8_t)idx;
}

int main(int argc, char **argv)
{
	const char *peer, *devname, *listen_addr = argc > 4 ? argv[4] : NULL;
	rv_context_attr ca = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR | RV_CONTEXT_ATTR_SOFT_FLAGS,
			      .soft_flags = RV_SOFT_ROCE_PORT};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_CAP,
			      .qp_type = RV_QPT_UD,
			      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	rv_ah *ah;
	rv_ah_attr av;
	rv_endpoint me;
	char text[256], want[64], msg[64], line[256];
	unsigned peer_qpn = 0, g[16];
	bool got = false;
	uint8_t sgid;
	uint8_t *buf;
	double end, next_send = 0;
	int sent = 0;

	if (argc < 4 || (strcmp(argv[1], "host") != 0 && strcmp(argv[1], "guest") != 0)) {
		fprintf(stderr, "usage: ud-interop host|guest DIR DEVICE [LISTEN_ADDR]\n");
		return 2;
	}
	role = argv[1];
	dir = argv[2];
	devname = argv[3];
	peer = strcmp(role, "host") == 0 ? "guest" : "host";
	ca.listen_addr = listen_addr;
	CHECK(rv_device_find(devname, &dev) == 0);
	CHECK(rv_context_new(dev, listen_addr ? &ca : NULL, &ctx) == 0);
	rv_device_unref(dev);
	CHECK(rv_pd_new(ctx, NULL, &pd) == 0);
	CHECK(rv_cq_new(ctx, NULL, &cq) == 0);
	qa.send_cq = cq;
	CHECK(rv_qp_new(pd, &qa, &qp) == 0);
	CHECK(rv_qp_to_init(qp, &(rv_qp_attr){.mask = RV_QP_QKEY, .qkey = QKEY}) == 0);
	CHECK(rv_qp_to_rtr(qp, NULL) == 0);
	CHECK(rv_qp_to_rts(qp, NULL) == 0);
	CHECK(rv_mr_alloc(pd, 65536, RV_ACCESS_LOCAL_WRITE, NULL, &mr) == 0);
	buf = rv_mr_addr(mr);
	for (int i = 0; i < 8; i++) {
		rv_sge s = {.addr = (uintptr_t)(buf + 4096 * (size_t)(i + 1)), .length = 4096, .lkey = rv_mr_lkey(mr)};
		CHECK(rv_qp_recv(qp, &s, (uint64_t)i + 100) == 0);
	}
	CHECK(rv_qp_endpoint(qp, &me) == 0);
	sgid = advertised_gid(ctx, qp, me.gid);
	{
		int n = snprintf(text, sizeof(text), "%u", me.qpn);
		for (int i = 0; i < 16; i++)
			n += snprintf(text + n, sizeof(text) - (size_t)n, " %u", me.gid[i]);
		snprintf(text + n, sizeof(text) - (size_t)n, "\n");
	}
	put("ep", text);
	printf("ud-interop %s: %s QP %u\n", role, devname, me.qpn);
	fflush(stdout);

	end = now() + WAIT_S;
	while (!exists(peer, "ep")) {
		CHECK(now() < end);
		usleep(100000);
	}
	{
		char p[512];
		FILE *f;
		path_of(p, sizeof(p), peer, "ep");
		f = fopen(p, "r");
		CHECK(f && fgets(line, sizeof(line), f));
		fclose(f);
		CHECK(sscanf(line, "%u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u", &peer_qpn, &g[0], &g[1],
			     &g[2], &g[3], &g[4], &g[5], &g[6], &g[7], &g[8], &g[9], &g[10], &g[11], &g[12],
			     &g[13], &g[14], &g[15]) == 17);
	}
	memset(&av, 0, sizeof(av));
	for (int i = 0; i < 16; i++)
		av.dgid[i] = (uint8_t)g[i];
	av.is_global = 1;
	av.hop_limit = 64;
	av.dlid = 0; /* RoCEv2's port 4791 */
	av.port_num = 1;
	av.sgid_index = sgid;
	CHECK(rv_ah_new(pd, &av, &ah) == 0);
	snprintf(msg, sizeof(msg), "hello from %s", role);
	snprintf(want, sizeof(want), "hello from %s", peer);
	memcpy(buf, msg, strlen(msg) + 1);

	/* Send until the peer says it got ours, and take the peer's. */
	while (!(got && exists(peer, "got"))) {
		rv_wc wc;
		int n;

		CHECK(now() < end);
		if (!exists(peer, "got") && now() >= next_send) {
			rv_sge s = {.addr = (uintptr_t)buf, .length = (uint32_t)strlen(msg) + 1, .lkey = rv_mr_lkey(mr)};
			rv_send_wr wr = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = RV_WR_SEND,
					 .send_flags = RV_SEND_SIGNALED, .ah = ah, .remote_qpn = peer_qpn,
					 .remote_qkey = QKEY};
			CHECK(rv_qp_post_send(qp, &wr, 1, NULL) == 0);
			sent++;
			next_send = now() + 0.2;
		}
		while ((n = rv_cq_poll(cq, &wc, 1)) == 1) {
			CHECK(wc.status == RV_WC_SUCCESS);
			if (!(wc.opcode & RV_WC_RECV))
				continue;
			{
				const char *m = (const char *)(buf + 4096 * (size_t)(wc.wr_id - 100 + 1) + RV_UD_GRH_LEN);
				CHECK(wc.byte_len == RV_UD_GRH_LEN + strlen(want) + 1);
				CHECK(wc.src_qp == peer_qpn);
				CHECK(strcmp(m, want) == 0);
			}
			if (!got) {
				printf("ud-interop %s: got \"%s\" from QP %u\n", role, want, wc.src_qp);
				fflush(stdout);
				put("got", "1\n");
				got = true;
			}
			{
				rv_sge s = {.addr = (uintptr_t)(buf + 4096 * (size_t)(wc.wr_id - 100 + 1)), .length = 4096,
					    .lkey = rv_mr_lkey(mr)};
				CHECK(rv_qp_recv(qp, &s, wc.wr_id) == 0);
			}
		}
		CHECK(n == 0);
		usleep(10000);
	}
	printf("ud-interop %s: ok (%d datagrams sent)\n", role, sent);
	rv_context_close(ctx);
	rv_ah_unref(ah);
	rv_mr_unref(mr);
	rv_qp_unref(qp);
	rv_cq_unref(cq);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
	return 0;
}
