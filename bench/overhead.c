/*
 * bench/overhead: what rverbs adds per data-path operation over calling
 * libibverbs directly, on the same objects.
 *
 * No NIC is needed: the objects are fake ibv_context/ibv_qp/ibv_cq whose
 * provider ops do no work (overhead-stub.c). The same fake objects are driven
 * (a) with ibv_post_send / ibv_post_recv / ibv_poll_cq, and (b) through rverbs
 * handles whose driver is the real libibverbs driver (rv_driver_ibv). The
 * handles are built here around the fake objects with the internal layout
 * (lib/rverbs-private.h), since rv_context_new would open a real device; the
 * facade entry points and the driver's data path are the library's own.
 *
 * Then, when the software device is built in, the cost of its own post and
 * poll (two QPs of soft0 connected to each other in this process).
 *
 *   overhead [-n OPS] [-r RUNS]      the table (median ns/op of RUNS runs)
 *   overhead --only LOOP [-n OPS]    run one loop once (for callgrind; see
 *                                    overhead-callgrind.sh); LOOP is a name
 *                                    from the table's first column
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "overhead-stub.h"

static struct stub stub;
static rv_qp *qp;
static rv_cq *cq_empty, *cq_one;
static struct ibv_send_wr iwr;
static struct ibv_recv_wr irwr;
static rv_send_wr rwr;
/* The same WR with RV_SEND_INLINE set by the caller, as the libibverbs caller
 * sets IBV_SEND_INLINE: nothing left to translate, posted as it is. */
static rv_send_wr rwr_inl;
static rv_recv_wr rrwr;
static struct ibv_sge isge;
static rv_sge rsge;
static char payload[64];

/* Soft device objects (NULL when soft0 is not available). */
static rv_qp *soft_qp;
static rv_cq *soft_cq;
static rv_send_wr soft_wr;

#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* ---- the loops: one function each, so callgrind can toggle on them ---- */

__attribute__((noinline)) void loop_ibv_post_send(uint64_t n);
__attribute__((noinline)) void loop_rv_post_send(uint64_t n);
__attribute__((noinline)) void loop_ibv_post_send_inl(uint64_t n);
__attribute__((noinline)) void loop_rv_post_send_inl(uint64_t n);
__attribute__((noinline)) void loop_ibv_post_send16(uint64_t n);
__attribute__((noinline)) void loop_rv_post_send16(uint64_t n);
__attribute__((noinline)) void loop_ibv_post_recv(uint64_t n);
__attribute__((noinline)) void loop_rv_post_recv(uint64_t n);
__attribute__((noinline)) void loop_ibv_poll_empty(uint64_t n);
__attribute__((noinline)) void loop_rv_poll_empty(uint64_t n);
__attribute__((noinline)) void loop_ibv_poll_one(uint64_t n);
__attribute__((noinline)) void loop_rv_poll_one(uint64_t n);
__attribute__((noinline)) void loop_soft_poll_empty(uint64_t n);
__attribute__((noinline)) void loop_soft_post_poll(uint64_t n);
__attribute__((noinline)) void soft_post_batch(void);

void loop_ibv_post_send(uint64_t n)
{
	struct ibv_send_wr *bad;
	for (uint64_t i = 0; i < n; i++) {
		ibv_post_send(&stub.qp, &iwr, &bad);
		BARRIER();
	}
}

void loop_rv_post_send(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		rv_qp_post_send(qp, &rwr, 1, NULL);
		BARRIER();
	}
}

/* The libibverbs loop again (its WR always says IBV_SEND_INLINE), so that
 * each row has its own pair of loop functions for callgrind. */
void loop_ibv_post_send_inl(uint64_t n)
{
	struct ibv_send_wr *bad;
	for (uint64_t i = 0; i < n; i++) {
		ibv_post_send(&stub.qp, &iwr, &bad);
		BARRIER();
	}
}

void loop_rv_post_send_inl(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		rv_qp_post_send(qp, &rwr_inl, 1, NULL);
		BARRIER();
	}
}

/* Batches of 16 WRs per call (a chain for libibverbs, an array for rverbs);
 * n counts WRs, so the figures are per WR. */
#define BATCH 16
static struct ibv_send_wr ichain[BATCH];
static rv_send_wr rarray[BATCH];

void loop_ibv_post_send16(uint64_t n)
{
	struct ibv_send_wr *bad;
	for (uint64_t i = 0; i < n / BATCH; i++) {
		ibv_post_send(&stub.qp, ichain, &bad);
		BARRIER();
	}
}

void loop_rv_post_send16(uint64_t n)
{
	for (uint64_t i = 0; i < n / BATCH; i++) {
		rv_qp_post_send(qp, rarray, BATCH, NULL);
		BARRIER();
	}
}

void loop_ibv_post_recv(uint64_t n)
{
	struct ibv_recv_wr *bad;
	for (uint64_t i = 0; i < n; i++) {
		ibv_post_recv(&stub.qp, &irwr, &bad);
		BARRIER();
	}
}

void loop_rv_post_recv(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		rv_qp_post_recv(qp, &rrwr, 1, NULL);
		BARRIER();
	}
}

void loop_ibv_poll_empty(uint64_t n)
{
	struct ibv_wc wc[1];
	for (uint64_t i = 0; i < n; i++) {
		ibv_poll_cq(&stub.cq_empty, 1, wc);
		BARRIER();
	}
}

void loop_rv_poll_empty(uint64_t n)
{
	rv_wc wc[1];
	for (uint64_t i = 0; i < n; i++) {
		rv_cq_poll(cq_empty, wc, 1);
		BARRIER();
	}
}

void loop_ibv_poll_one(uint64_t n)
{
	struct ibv_wc wc[1];
	for (uint64_t i = 0; i < n; i++) {
		ibv_poll_cq(&stub.cq_one, 1, wc);
		BARRIER();
	}
}

void loop_rv_poll_one(uint64_t n)
{
	rv_wc wc[1];
	for (uint64_t i = 0; i < n; i++) {
		rv_cq_poll(cq_one, wc, 1);
		BARRIER();
	}
}

void loop_soft_poll_empty(uint64_t n)
{
	rv_wc wc[1];
	for (uint64_t i = 0; i < n; i++) {
		rv_cq_poll(soft_cq, wc, 1);
		BARRIER();
	}
}

/* One 64-byte RDMA WRITE posted, then polled until its completion: the
 * whole software path of one operation, transport included (mostly waiting). */
void loop_soft_post_poll(uint64_t n)
{
	rv_wc wc[1];
	for (uint64_t i = 0; i < n; i++) {
		if (rv_qp_post_send(soft_qp, &soft_wr, 1, NULL) < 0) {
			fprintf(stderr, "overhead: soft0 post failed: %s\n", rv_error_last());
			exit(1);
		}
		while (rv_cq_poll(soft_cq, wc, 1) == 0)
			;
	}
}

/* The post alone: SOFT_BATCH unsignalled WRITEs but the last, timed (and, for
 * callgrind, collected) without the wait for their completion. */
#define SOFT_BATCH 64
static double soft_post_ns;

void soft_post_batch(void)
{
	for (int i = 0; i < SOFT_BATCH; i++) {
		soft_wr.send_flags = i == SOFT_BATCH - 1 ? RV_SEND_SIGNALED : 0;
		if (rv_qp_post_send(soft_qp, &soft_wr, 1, NULL) < 0) {
			/* A failed post would time an error path, not a post. */
			fprintf(stderr, "overhead: soft0 post failed: %s\n", rv_error_last());
			exit(1);
		}
	}
}

static double now_ns(void);

static void loop_soft_post(uint64_t n)
{
	rv_wc wc[1];

	soft_post_ns = 0;
	for (uint64_t i = 0; i < n / SOFT_BATCH; i++) {
		double t0 = now_ns();
		soft_post_batch();
		soft_post_ns += now_ns() - t0;
		while (rv_cq_poll(soft_cq, wc, 1) == 0)
			;
	}
	soft_wr.send_flags = RV_SEND_SIGNALED;
}

struct loop {
	const char *name, *what;
	void (*ibv)(uint64_t);
	void (*rv)(uint64_t);
	const char *ibv_name, *rv_name;
};

static const struct loop loops[] = {
	{"post_send", "post_send, 1 WR (64 B WRITE, inline chosen by rverbs)", loop_ibv_post_send, loop_rv_post_send,
	 "loop_ibv_post_send", "loop_rv_post_send"},
	{"post_send_inl", "post_send, 1 WR (64 B WRITE, RV_SEND_INLINE set: posted as is)", loop_ibv_post_send_inl,
	 loop_rv_post_send_inl, "loop_ibv_post_send_inl", "loop_rv_post_send_inl"},
	{"post_send16", "post_send, 16 WRs per call (per WR)", loop_ibv_post_send16, loop_rv_post_send16,
	 "loop_ibv_post_send16", "loop_rv_post_send16"},
	{"post_recv", "post_recv, 1 WR", loop_ibv_post_recv, loop_rv_post_recv, "loop_ibv_post_recv",
	 "loop_rv_post_recv"},
	{"poll_empty", "poll_cq, empty CQ", loop_ibv_poll_empty, loop_rv_poll_empty, "loop_ibv_poll_empty",
	 "loop_rv_poll_empty"},
	{"poll_one", "poll_cq, 1 completion", loop_ibv_poll_one, loop_rv_poll_one, "loop_ibv_poll_one",
	 "loop_rv_poll_one"},
};

/* ---- rverbs handles around the stub objects ---- */

static int noop_destroy(struct rv_object *obj)
{
	return 0;
}

static const struct rv_object_class ctx_class = {.type = RV_OBJ_CONTEXT, .name = "context", .destroy = noop_destroy};
static const struct rv_object_class cq_class = {.type = RV_OBJ_CQ, .name = "CQ", .destroy = noop_destroy};
static const struct rv_object_class qp_class = {.type = RV_OBJ_QP, .name = "QP", .destroy = noop_destroy};

static rv_device *dev;
static struct rv_context *ctx;

static void make_handles(void)
{
	pthread_mutexattr_t ma;
	struct rv_cq *c[2];
	struct rv_qp *q;

	if (rv_device_new_internal(&rv_driver_ibv, "stub0", NULL, &dev) < 0) {
		fprintf(stderr, "overhead: rv_device_new_internal failed\n");
		exit(1);
	}
	ctx = calloc(1, sizeof(*ctx));
	c[0] = calloc(1, sizeof(*c[0]));
	c[1] = calloc(1, sizeof(*c[1]));
	q = calloc(1, sizeof(*q));
	if (!ctx || !c[0] || !c[1] || !q) {
		fprintf(stderr, "overhead: out of memory\n");
		exit(1);
	}
	rv_obj_init(&ctx->obj, &ctx_class, ctx);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ctx->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	ctx->dev = dev;
	ctx->drv = &rv_driver_ibv;
	ctx->drv_ctx = &stub.ctx_empty;
	for (int i = 0; i < 2; i++) {
		rv_obj_init(&c[i]->obj, &cq_class, ctx);
		c[i]->ctx = ctx;
		c[i]->cqe = 256;
		c[i]->drv_cq = i ? &stub.cq_one : &stub.cq_empty;
		c[i]->poll = rv_driver_ibv.cq_poll;
	}
	rv_obj_init(&q->obj, &qp_class, ctx);
	q->drv = &rv_driver_ibv;
	/* What lib/qp.c caches in an RC QP of this driver. */
	q->post_send = rv_driver_ibv.post_send;
	q->post_send_one = rv_driver_ibv.post_send_one_connected;
	q->post_recv = rv_driver_ibv.post_recv;
	q->drv_qp = &stub.qp;
	q->ctx = ctx;
	q->send_cq = q->recv_cq = c[0];
	q->qp_type = RV_QPT_RC;
	q->qpn = 1;
	q->state = RV_QPS_RTS;
	q->cap = (rv_qp_cap){.max_send_wr = 128, .max_recv_wr = 128, .max_send_sge = 1, .max_recv_sge = 1,
			     .max_inline_data = 64};
	q->inline_below = rv_inline_below(q->cap.max_inline_data); /* as the driver sets it with cap */
	cq_empty = c[0];
	cq_one = c[1];
	qp = q;

	/* The same operation both ways: a signalled, inline 64-byte WRITE. */
	isge = (struct ibv_sge){.addr = (uintptr_t)payload, .length = sizeof(payload), .lkey = 1};
	iwr = (struct ibv_send_wr){.wr_id = 7, .sg_list = &isge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};
	iwr.wr.rdma.remote_addr = 0x1000;
	iwr.wr.rdma.rkey = 2;
	irwr = (struct ibv_recv_wr){.wr_id = 8, .sg_list = &isge, .num_sge = 1};
	rsge = (rv_sge){.addr = (uintptr_t)payload, .length = sizeof(payload), .lkey = 1};
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 7;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	rwr.opcode = RV_WR_RDMA_WRITE;
	rwr.send_flags = RV_SEND_SIGNALED;
	rwr.remote_addr = 0x1000;
	rwr.rkey = 2;
	rwr_inl = rwr;
	rwr_inl.send_flags = RV_SEND_SIGNALED | RV_SEND_INLINE;
	rrwr = (rv_recv_wr){.wr_id = 8, .sg_list = &rsge, .num_sge = 1, .reserved = 0};
	for (int i = 0; i < BATCH; i++) {
		ichain[i] = iwr;
		ichain[i].next = i + 1 < BATCH ? &ichain[i + 1] : NULL;
		rarray[i] = rwr;
	}
}

/* The rows compare like with like only if the provider is given the same
 * WR both ways: a signalled 64-byte WRITE with IBV_SEND_INLINE (a QP whose
 * inline limit was left unset would post the rverbs rows without it, and
 * they would measure another operation). Checked once before the loops. */
static void check_same_wr(void)
{
	struct stub_seen ibv, rv;
	struct ibv_send_wr *bad;

	stub_record_sends(&stub, true);
	ibv_post_send(&stub.qp, &iwr, &bad);
	ibv_post_send(&stub.qp, ichain, &bad);
	ibv = stub_record_sends(&stub, true);
	rv_qp_post_send(qp, &rwr, 1, NULL);
	rv_qp_post_send(qp, &rwr_inl, 1, NULL);
	rv_qp_post_send(qp, rarray, BATCH, NULL);
	rv = stub_record_sends(&stub, false);
	if (ibv.wrs != BATCH + 1 || rv.wrs != BATCH + 2 || ibv.inline_wrs != ibv.wrs || rv.inline_wrs != rv.wrs ||
	    ibv.other_wrs || rv.other_wrs) {
		fprintf(stderr, "overhead: the provider was not given the same inline WRITE both ways "
			"(libibverbs: %lu WRs, %lu inline, %lu different; rverbs: %lu, %lu, %lu)\n",
			ibv.wrs, ibv.inline_wrs, ibv.other_wrs, rv.wrs, rv.inline_wrs, rv.other_wrs);
		exit(1);
	}
}

static void free_handles(void)
{
	free(qp);
	free(cq_empty);
	free(cq_one);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	rv_device_unref(dev);
}

/* ---- the software device ---- */

static rv_device *soft_dev;
static rv_context *soft_ctx;
static rv_pd *soft_pd;
static rv_mr *soft_mr;
static rv_qp *soft_peer;

static void soft_close(void)
{
	rv_context_close(soft_ctx);
	rv_qp_unref(soft_qp);
	rv_qp_unref(soft_peer);
	rv_cq_unref(soft_cq);
	rv_mr_unref(soft_mr);
	rv_pd_unref(soft_pd);
	rv_context_unref(soft_ctx);
	rv_device_unref(soft_dev);
	soft_qp = NULL;
}

static const char *soft_open(void)
{
	static rv_sge sge;
	/* sq_sig_all 0: rverbs' default signals every WR, and the batch below
	 * signals one in SOFT_BATCH, as verbs practice does. */
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SQ_SIG_ALL, .sq_sig_all = 0};
	rv_endpoint a, b;

	if (rv_device_find("soft0", &soft_dev) < 0)
		return "soft0 is not built in";
	if (rv_context_new(soft_dev, NULL, &soft_ctx) < 0 || rv_pd_new(soft_ctx, NULL, &soft_pd) < 0 ||
	    rv_mr_alloc(soft_pd, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE, NULL, &soft_mr) < 0 ||
	    rv_cq_new(soft_ctx, NULL, &soft_cq) < 0)
		return rv_error_last();
	qa.send_cq = soft_cq;
	if (rv_qp_new(soft_pd, &qa, &soft_qp) < 0 || rv_qp_new(soft_pd, &qa, &soft_peer) < 0 ||
	    rv_qp_endpoint(soft_qp, &a) < 0 || rv_qp_endpoint(soft_peer, &b) < 0 ||
	    rv_qp_connect(soft_qp, &b) < 0 || rv_qp_connect(soft_peer, &a) < 0)
		return rv_error_last();
	sge = (rv_sge){.addr = (uintptr_t)rv_mr_addr(soft_mr), .length = 64, .lkey = rv_mr_lkey(soft_mr)};
	memset(&soft_wr, 0, sizeof(soft_wr));
	soft_wr.sg_list = &sge;
	soft_wr.num_sge = 1;
	soft_wr.opcode = RV_WR_RDMA_WRITE;
	soft_wr.send_flags = RV_SEND_SIGNALED;
	soft_wr.remote_addr = (uintptr_t)rv_mr_addr(soft_mr) + 2048;
	soft_wr.rkey = rv_mr_rkey(soft_mr);
	return NULL;
}

/* ---- measuring ---- */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double time_once(void (*fn)(uint64_t), uint64_t n)
{
	double t0 = now_ns();
	fn(n);
	return (now_ns() - t0) / (double)n;
}

/* Medians of runs; the two paths alternate so that drift hits both alike. */
static void measure(void (*a)(uint64_t), void (*b)(uint64_t), uint64_t n, int runs, double *ma, double *mb)
{
	double *ta = calloc((size_t)runs, sizeof(double)), *tb = calloc((size_t)runs, sizeof(double));

	if (!ta || !tb)
		exit(1);
	a(n / 10);
	if (b)
		b(n / 10);
	for (int r = 0; r < runs; r++) {
		ta[r] = time_once(a, n);
		if (b)
			tb[r] = time_once(b, n);
	}
	qsort(ta, (size_t)runs, sizeof(double), cmp_double);
	qsort(tb, (size_t)runs, sizeof(double), cmp_double);
	*ma = ta[runs / 2];
	*mb = tb[runs / 2];
	free(ta);
	free(tb);
}

static int run_only(const char *name, uint64_t n)
{
	struct {
		const char *name;
		void (*fn)(uint64_t);
		bool soft;
	} all[] = {
		{"loop_ibv_post_send", loop_ibv_post_send, false}, {"loop_rv_post_send", loop_rv_post_send, false},
		{"loop_ibv_post_send_inl", loop_ibv_post_send_inl, false},
		{"loop_rv_post_send_inl", loop_rv_post_send_inl, false},
		{"loop_ibv_post_send16", loop_ibv_post_send16, false}, {"loop_rv_post_send16", loop_rv_post_send16, false},
		{"loop_ibv_post_recv", loop_ibv_post_recv, false}, {"loop_rv_post_recv", loop_rv_post_recv, false},
		{"loop_ibv_poll_empty", loop_ibv_poll_empty, false}, {"loop_rv_poll_empty", loop_rv_poll_empty, false},
		{"loop_ibv_poll_one", loop_ibv_poll_one, false}, {"loop_rv_poll_one", loop_rv_poll_one, false},
		{"loop_soft_poll_empty", loop_soft_poll_empty, true}, {"loop_soft_post_poll", loop_soft_post_poll, true},
		{"soft_post_batch", loop_soft_post, true},
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (strcmp(all[i].name, name) != 0)
			continue;
		if (all[i].soft) {
			const char *why = soft_open();
			if (why) {
				fprintf(stderr, "overhead: %s\n", why);
				return 77;
			}
		}
		all[i].fn(n);
		if (all[i].soft)
			soft_close();
		return 0;
	}
	fprintf(stderr, "overhead: no loop named %s\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"only", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0}};
	uint64_t n = 1000000;
	int runs = 21, opt, rc = 0;
	const char *only = NULL, *why;

	while ((opt = getopt_long(argc, argv, "n:r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'r': runs = atoi(optarg); break;
		case 'o': only = optarg; break;
		default:
			fprintf(stderr, "usage: overhead [-n OPS] [-r RUNS] | --only LOOP [-n OPS]\n");
			return 2;
		}
	}
	if (n < 10 || runs < 1) {
		fprintf(stderr, "overhead: -n must be at least 10 and -r at least 1\n");
		return 2;
	}
	stub_init(&stub);
	make_handles();
	check_same_wr();
	if (only) {
		rc = run_only(only, n);
		free_handles();
		return rc;
	}
	printf("bench/overhead: nanoseconds per operation, median of %d runs of %" PRIu64 " operations\n", runs, n);
	printf("provider stub: post_send/post_recv/poll_cq do no work (bench/overhead-stub.c)\n\n");
	printf("| operation | libibverbs ns/op | rverbs ns/op | added ns/op |\n|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++) {
		double a, b;
		measure(loops[i].ibv, loops[i].rv, n, runs, &a, &b);
		printf("| %s | %.2f | %.2f | %+.2f |\n", loops[i].what, a, b, b - a);
	}
	free_handles();

	printf("\nsoftware device soft0 (its own post and poll, two QPs of one process connected to each other):\n");
	if ((why = soft_open())) {
		printf("not measured: %s\n", why);
	} else {
		double empty, pp, unused;
		uint64_t m = n / 100 < 1000 ? 1000 : n / 100;
		measure(loop_soft_poll_empty, NULL, n, runs, &empty, &unused);
		measure(loop_soft_post_poll, NULL, m, runs < 5 ? runs : 5, &pp, &unused);
		loop_soft_post(m * 4);
		printf("| operation | ns/op |\n|---|---|\n");
		printf("| poll_cq, empty CQ | %.2f |\n", empty);
		printf("| post_send, 64 B WRITE, %d per batch (post calls only) | %.0f |\n", SOFT_BATCH,
		       soft_post_ns / (double)(m * 4 / SOFT_BATCH * SOFT_BATCH));
		printf("| post 64 B WRITE + poll until its completion (%" PRIu64 " ops) | %.0f |\n", m, pp);
	}
	soft_close();
	return rc;
}
