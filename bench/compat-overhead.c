/*
 * What the libibverbs-compatible layer (compat/) adds on soft0: the same
 * operations through libibverbs' API (ibv_post_send, ibv_post_recv,
 * ibv_poll_cq, verbs.h's inline calls into the layer's soft0 context) and
 * through the rverbs facade (rv_qp_post_send, rv_qp_post_recv, rv_cq_poll),
 * in one process. Each case is one noinline function holding only the
 * measured calls, so that callgrind's --toggle-collect counts them and
 * nothing else (bench/compat-callgrind.sh); waits for completions are
 * outside those functions.
 *
 * Linked against the layer's libibverbs.so.1 (compat/, found first through
 * the executable's RUNPATH), as tests/compat does; librverbs binds to the
 * same library. Each side has two soft0 contexts with one RC QP each,
 * connected to each other (as the layer's two ibv_open_device contexts).
 *
 *   compat-overhead [--only CASE] [-n OPS]     (default: every case, 6400)
 *
 * Prints one line per case run: "CASE calls N completions M". Exit status
 * 77 when soft0 is not in libibverbs' device list (the layer is not in
 * front), 1 on a failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rverbs/rverbs.h>

#define BATCH 64   /* WRITEs per batch: the last signalled; also the CQ's fill */
#define RQ_DEPTH 1024 /* receives posted once per run, into an idle receive queue */
#define BUF 4096

/* The layer's side (libibverbs objects) and the facade's side. */
static struct ibv_context *l_ctx[2];
static struct ibv_pd *l_pd[2];
static struct ibv_mr *l_mr[2];
static struct ibv_cq *l_cq[2];
static struct ibv_qp *l_qp[2];
static char *l_buf[2];
static struct ibv_sge l_sge;
static struct ibv_send_wr l_wr;
static struct ibv_recv_wr l_rwr;

static rv_device *f_dev;
static rv_context *f_ctx[2];
static rv_pd *f_pd[2];
static rv_mr *f_mr[2];
static rv_cq *f_cq[2];
static rv_qp *f_qp[2];
static rv_sge f_sge;
static rv_send_wr f_wr;
static rv_recv_wr f_rwr;

static uint64_t calls, completions;

static void die(const char *what)
{
	fprintf(stderr, "compat-overhead: %s failed: %s\n", what, rv_error_last());
	exit(1);
}

/* Not static, so that callgrind finds them by name. */
void layer_post_send(void);
void facade_post_send(void);
void layer_post_batch(void);
void facade_post_batch(void);
void layer_post_recv(uint64_t n);
void facade_post_recv(uint64_t n);
void layer_poll_empty(uint64_t n);
void facade_poll_empty(uint64_t n);
void layer_poll_full(uint64_t want);
void facade_poll_full(uint64_t want);

/* ---- the measured functions (bench/compat-callgrind.sh toggles on these) ---- */

__attribute__((noinline)) void layer_post_send(void)
{
	struct ibv_send_wr *bad;

	l_wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(l_qp[0], &l_wr, &bad))
		die("ibv_post_send");
}

__attribute__((noinline)) void facade_post_send(void)
{
	f_wr.send_flags = RV_SEND_SIGNALED;
	if (rv_qp_post_send(f_qp[0], &f_wr, 1, NULL) < 0)
		die("rv_qp_post_send");
}

__attribute__((noinline)) void layer_post_batch(void)
{
	struct ibv_send_wr *bad;

	for (int i = 0; i < BATCH; i++) {
		l_wr.send_flags = i == BATCH - 1 ? IBV_SEND_SIGNALED : 0;
		if (ibv_post_send(l_qp[0], &l_wr, &bad))
			die("ibv_post_send");
	}
}

__attribute__((noinline)) void facade_post_batch(void)
{
	for (int i = 0; i < BATCH; i++) {
		f_wr.send_flags = i == BATCH - 1 ? RV_SEND_SIGNALED : 0;
		if (rv_qp_post_send(f_qp[0], &f_wr, 1, NULL) < 0)
			die("rv_qp_post_send");
	}
}

__attribute__((noinline)) void layer_post_recv(uint64_t n)
{
	struct ibv_recv_wr *bad;

	for (uint64_t i = 0; i < n; i++)
		if (ibv_post_recv(l_qp[1], &l_rwr, &bad))
			die("ibv_post_recv");
}

__attribute__((noinline)) void facade_post_recv(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (rv_qp_post_recv(f_qp[1], &f_rwr, 1, NULL) < 0)
			die("rv_qp_post_recv");
}

__attribute__((noinline)) void layer_poll_empty(uint64_t n)
{
	struct ibv_wc wc;

	for (uint64_t i = 0; i < n; i++)
		if (ibv_poll_cq(l_cq[1], 1, &wc) != 0)
			die("ibv_poll_cq (empty)");
}

__attribute__((noinline)) void facade_poll_empty(uint64_t n)
{
	rv_wc wc;

	for (uint64_t i = 0; i < n; i++)
		if (rv_cq_poll(f_cq[1], &wc, 1) != 0)
			die("rv_cq_poll (empty)");
}

/* Polls one completion at a time until @p want came; counts every call. */
__attribute__((noinline)) void layer_poll_full(uint64_t want)
{
	struct ibv_wc wc;

	for (uint64_t got = 0; got < want; calls++) {
		int r = ibv_poll_cq(l_cq[0], 1, &wc);

		if (r < 0 || (r == 1 && wc.status != IBV_WC_SUCCESS))
			die("ibv_poll_cq");
		got += (uint64_t)r;
	}
}

__attribute__((noinline)) void facade_poll_full(uint64_t want)
{
	rv_wc wc;

	for (uint64_t got = 0; got < want; calls++) {
		int r = rv_cq_poll(f_cq[0], &wc, 1);

		if (r < 0 || (r == 1 && wc.status != RV_WC_SUCCESS))
			die("rv_cq_poll");
		got += (uint64_t)r;
	}
}

/* ---- waits, outside the measured functions ---- */

static void layer_wait(uint64_t n)
{
	struct ibv_wc wc;

	for (uint64_t got = 0; got < n;) {
		int r = ibv_poll_cq(l_cq[0], 1, &wc);

		if (r < 0 || (r == 1 && wc.status != IBV_WC_SUCCESS))
			die("ibv_poll_cq (wait)");
		got += (uint64_t)r;
	}
}

static void facade_wait(uint64_t n)
{
	rv_wc wc;

	for (uint64_t got = 0; got < n;) {
		int r = rv_cq_poll(f_cq[0], &wc, 1);

		if (r < 0 || (r == 1 && wc.status != RV_WC_SUCCESS))
			die("rv_cq_poll (wait)");
		got += (uint64_t)r;
	}
}

/* ---- setup ---- */

static int layer_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_port_attr port[2];

	for (int i = 0; list && list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "soft0") == 0)
			dev = list[i];
	if (!dev) {
		if (list)
			ibv_free_device_list(list);
		return -1;
	}
	for (int s = 0; s < 2; s++) {
		struct ibv_qp_init_attr qa = {0};
		struct ibv_qp_attr a = {0};

		l_ctx[s] = ibv_open_device(dev);
		if (!l_ctx[s] || !(l_pd[s] = ibv_alloc_pd(l_ctx[s])) || !(l_buf[s] = calloc(1, BUF)))
			die("ibv_open_device/ibv_alloc_pd");
		l_mr[s] = ibv_reg_mr(l_pd[s], l_buf[s], BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		l_cq[s] = ibv_create_cq(l_ctx[s], 2 * RQ_DEPTH, NULL, NULL, 0);
		if (!l_mr[s] || !l_cq[s])
			die("ibv_reg_mr/ibv_create_cq");
		qa.send_cq = qa.recv_cq = l_cq[s];
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 2 * BATCH;
		qa.cap.max_recv_wr = RQ_DEPTH;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		if (!(l_qp[s] = ibv_create_qp(l_pd[s], &qa)))
			die("ibv_create_qp");
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (ibv_modify_qp(l_qp[s], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
		    ibv_query_port(l_ctx[s], 1, &port[s]))
			die("ibv_modify_qp INIT");
	}
	ibv_free_device_list(list);
	for (int s = 0; s < 2; s++) {
		struct ibv_qp_attr a = {0};

		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = l_qp[!s]->qp_num;
		a.rq_psn = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr.dlid = port[!s].lid;
		a.ah_attr.port_num = 1;
		if (ibv_modify_qp(l_qp[s], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
							 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("ibv_modify_qp RTR");
	}
	for (int s = 0; s < 2; s++) {
		struct ibv_qp_attr a = {0};

		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 1;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(l_qp[s], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
							 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			die("ibv_modify_qp RTS");
	}
	l_sge = (struct ibv_sge){.addr = (uintptr_t)l_buf[0], .length = 64, .lkey = l_mr[0]->lkey};
	l_wr = (struct ibv_send_wr){.sg_list = &l_sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};
	l_wr.wr.rdma.remote_addr = (uintptr_t)l_buf[1] + 2048;
	l_wr.wr.rdma.rkey = l_mr[1]->rkey;
	l_rwr = (struct ibv_recv_wr){.sg_list = &l_sge, .num_sge = 1};
	return 0;
}

static void facade_open(void)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SQ_SIG_ALL | RV_QP_INIT_ATTR_CAP};
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE, .cqe = 2 * RQ_DEPTH};
	rv_endpoint ep[2];

	rv_device **list;

	/* Not rv_device_find: with the layer in the process, librverbs' libibverbs
	 * driver lists the layer's soft0 too (first), and a context opened on
	 * that one would reach soft0 through the layer. The built-in one is
	 * RV_DEVICE_SOFT. */
	if (rv_device_list(&list, NULL) < 0)
		die("rv_device_list");
	for (size_t i = 0; list[i]; i++)
		if (rv_device_kind_of(list[i]) == RV_DEVICE_SOFT && strcmp(rv_device_name(list[i]), "soft0") == 0)
			f_dev = rv_device_ref(list[i]);
	rv_device_list_free(list);
	if (!f_dev)
		die("finding the built-in soft0");
	qa.cap = (rv_qp_cap){.max_send_wr = 2 * BATCH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1,
			     .max_recv_sge = 1};
	for (int s = 0; s < 2; s++) {
		if (rv_context_new(f_dev, NULL, &f_ctx[s]) < 0 || rv_pd_new(f_ctx[s], NULL, &f_pd[s]) < 0 ||
		    rv_mr_alloc(f_pd[s], BUF, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &f_mr[s]) < 0 ||
		    rv_cq_new(f_ctx[s], &ca, &f_cq[s]) < 0)
			die("soft0 facade setup");
		qa.send_cq = f_cq[s];
		if (rv_qp_new(f_pd[s], &qa, &f_qp[s]) < 0 || rv_qp_endpoint(f_qp[s], &ep[s]) < 0)
			die("rv_qp_new");
	}
	if (rv_qp_connect(f_qp[0], &ep[1]) < 0 || rv_qp_connect(f_qp[1], &ep[0]) < 0)
		die("rv_qp_connect");
	f_sge = (rv_sge){.addr = (uintptr_t)rv_mr_addr(f_mr[0]), .length = 64, .lkey = rv_mr_lkey(f_mr[0])};
	f_wr = (rv_send_wr){.sg_list = &f_sge, .num_sge = 1, .opcode = RV_WR_RDMA_WRITE};
	f_wr.remote_addr = (uintptr_t)rv_mr_addr(f_mr[1]) + 2048;
	f_wr.rkey = rv_mr_rkey(f_mr[1]);
	f_rwr = (rv_recv_wr){.sg_list = &f_sge, .num_sge = 1};
}

static void close_all(void)
{
	for (int s = 0; s < 2; s++) {
		if (ibv_destroy_qp(l_qp[s]) || ibv_destroy_cq(l_cq[s]) || ibv_dereg_mr(l_mr[s]) ||
		    ibv_dealloc_pd(l_pd[s]) || ibv_close_device(l_ctx[s]))
			die("closing the layer's objects");
		free(l_buf[s]);
	}
	for (int s = 0; s < 2; s++) {
		rv_context_close(f_ctx[s]);
		rv_qp_unref(f_qp[s]);
		rv_cq_unref(f_cq[s]);
		rv_mr_unref(f_mr[s]);
		rv_pd_unref(f_pd[s]);
		rv_context_unref(f_ctx[s]);
	}
	rv_device_unref(f_dev);
}

/* ---- the cases ---- */

static void run_case(const char *name, uint64_t n)
{
	uint64_t batches = (n + BATCH - 1) / BATCH;
	int layer = strncmp(name, "layer_", 6) == 0;
	const char *op = name + (layer ? 6 : 7);

	calls = completions = 0;
	if (strcmp(op, "post_send") == 0) {
		for (uint64_t i = 0; i < n; i++) {
			layer ? layer_post_send() : facade_post_send();
			layer ? layer_wait(1) : facade_wait(1);
		}
		calls = completions = n;
	} else if (strcmp(op, "post_batch") == 0) {
		for (uint64_t i = 0; i < batches; i++) {
			layer ? layer_post_batch() : facade_post_batch();
			layer ? layer_wait(1) : facade_wait(1);
		}
		calls = batches * BATCH;
		completions = batches;
	} else if (strcmp(op, "post_recv") == 0) {
		/* Once: the receive queue holds RQ_DEPTH and nothing consumes them. */
		calls = n < RQ_DEPTH ? n : RQ_DEPTH;
		layer ? layer_post_recv(calls) : facade_post_recv(calls);
	} else if (strcmp(op, "poll_empty") == 0) {
		layer ? layer_poll_empty(n) : facade_poll_empty(n);
		calls = n;
	} else if (strcmp(op, "poll_full") == 0) {
		/* BATCH signalled WRITEs, a pause for their completions to arrive,
		 * then polls until all BATCH came: calls > completions means some
		 * polls found the CQ empty (reported, not hidden). */
		for (uint64_t i = 0; i < batches; i++) {
			for (int k = 0; k < BATCH; k++)
				layer ? layer_post_send() : facade_post_send();
			usleep(20000);
			layer ? layer_poll_full(BATCH) : facade_poll_full(BATCH);
		}
		completions = batches * BATCH;
	} else {
		fprintf(stderr, "compat-overhead: no case %s\n", name);
		exit(2);
	}
	printf("%s calls %llu completions %llu\n", name, (unsigned long long)calls,
	       (unsigned long long)completions);
}

int main(int argc, char **argv)
{
	static const char *const all[] = {"layer_post_send",  "facade_post_send",  "layer_post_batch",
					  "facade_post_batch", "layer_post_recv",   "facade_post_recv",
					  "layer_poll_empty", "facade_poll_empty", "layer_poll_full",
					  "facade_poll_full"};
	const char *only = NULL;
	uint64_t n = 6400;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: compat-overhead [--only CASE] [-n OPS]\n");
			return 2;
		}
	}
	if (n == 0)
		n = 1;
	if (layer_open() < 0) {
		fprintf(stderr, "compat-overhead: soft0 is not in libibverbs' device list "
				"(is the layer's libibverbs.so.1 in front?)\n");
		return 77;
	}
	facade_open();
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!only || strcmp(only, all[i]) == 0)
			run_case(all[i], n);
	close_all();
	return 0;
}
