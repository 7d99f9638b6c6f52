/*
 * bench/pool: what a registered-buffer pool saves, and what huge pages buy.
 *
 * 1. Per buffer, in the same run on the same device: rv_pool_get + rv_pool_put
 *    of a 4 KiB buffer (the per-thread cache path), against rv_mr_reg +
 *    rv_mr_unref (deregistration) of 4 KiB of caller memory; the median
 *    nanoseconds per buffer over RUNS runs, and their ratio.
 * 2. RDMA WRITE bandwidth on soft0 between two MRs from rv_mr_alloc with
 *    2 MiB huge pages, against normal pages: STREAM bytes in messages of
 *    MSG bytes, 16 in flight, median of RUNS runs. The page size each side
 *    actually got is printed (huge pages need `sysctl vm.nr_hugepages=N`;
 *    else the fallback, usually transparent huge pages, is what is measured).
 *
 *   pool [-d DEVICE] [-r RUNS] [-n OPS] [-s MSG] [-S STREAM]
 *
 * The device of part 1 is DEVICE, else the default device (RVERBS_DEVICE or
 * the first libibverbs device with an active port, else soft0); part 2 always
 * runs on soft0. No thresholds: the output is a markdown table.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rverbs/rverbs.h>

#define MiB ((size_t)1 << 20)

static int runs = 5;
static long ops = 20000;
static size_t msg = 256 * 1024;
static size_t stream = 128 * MiB;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int die(const char *what, int rc)
{
	fprintf(stderr, "pool: %s failed (%d): %s\n", what, rc, rv_error_last());
	exit(1);
}

static rv_context *open_ctx(const char *name)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;
	int rc = name ? rv_device_find(name, &dev) : rv_device_default(&dev);

	if (rc < 0)
		die("finding the device", rc);
	if ((rc = rv_context_new(dev, NULL, &ctx)) < 0)
		die("rv_context_new", rc);
	rv_device_unref(dev);
	return ctx;
}

/* ---- 1. pool get+put against reg+dereg ---- */

static void bench_alloc(const char *devname)
{
	rv_context *ctx = open_ctx(devname);
	double pool_ns[64], reg_ns[64];
	long reg_ops = ops / 10 > 100 ? ops / 10 : 100;
	rv_pool_buf *b;
	rv_pool *pool;
	rv_pd *pd;
	char *mem;
	int rc;

	if ((rc = rv_pd_new(ctx, NULL, &pd)) < 0)
		die("rv_pd_new", rc);
	if ((rc = rv_pool_new(pd, NULL, &pool)) < 0)
		die("rv_pool_new", rc);
	mem = aligned_alloc(4096, 4096);
	if (!mem)
		die("aligned_alloc", -ENOMEM);
	/* Warm up: the first get registers a chunk and fills this thread's cache. */
	if ((rc = rv_pool_get(pool, 4096, &b)) < 0 || (rc = rv_pool_put(pool, b)) < 0)
		die("rv_pool_get", rc);
	for (int r = 0; r < runs; r++) {
		double t0 = now_ns();
		for (long i = 0; i < ops; i++) {
			rv_pool_get(pool, 4096, &b);
			rv_pool_put(pool, b);
		}
		pool_ns[r] = (now_ns() - t0) / (double)ops;

		t0 = now_ns();
		for (long i = 0; i < reg_ops; i++) {
			rv_mr *mr;
			if ((rc = rv_mr_reg(pd, mem, 4096, RV_ACCESS_LOCAL_WRITE, &mr)) < 0)
				die("rv_mr_reg", rc);
			rv_mr_unref(mr);
		}
		reg_ns[r] = (now_ns() - t0) / (double)reg_ops;
	}
	printf("## Per buffer on %s (median of %d runs)\n\n", rv_device_name(rv_context_device(ctx)), runs);
	printf("| operation | ns per buffer | calls per run |\n|---|---|---|\n");
	printf("| rv_pool_get + rv_pool_put (4 KiB) | %.1f | %ld |\n", median(pool_ns, runs), ops);
	printf("| rv_mr_reg + rv_mr_unref (4 KiB) | %.1f | %ld |\n", median(reg_ns, runs), reg_ops);
	printf("| ratio | %.0f× |  |\n\n", median(reg_ns, runs) / median(pool_ns, runs));
	free(mem);
	rv_pool_unref(pool);
	rv_pd_unref(pd);
	rv_context_close(ctx);
	rv_context_unref(ctx);
}

/* ---- 2. RDMA WRITE bandwidth, huge vs normal pages ---- */

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
};

static void side_open(struct side *s, uint32_t page, size_t len)
{
	rv_mr_alloc_attr ma = {.mask = RV_MR_ALLOC_ATTR_PAGE, .page = page};
	rv_qp_init_attr qa;
	int rc;

	memset(s, 0, sizeof(*s));
	s->ctx = open_ctx("soft0");
	if ((rc = rv_pd_new(s->ctx, NULL, &s->pd)) < 0 || (rc = rv_cq_new(s->ctx, NULL, &s->cq)) < 0)
		die("rv_pd_new/rv_cq_new", rc);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if ((rc = rv_qp_new(s->pd, &qa, &s->qp)) < 0)
		die("rv_qp_new", rc);
	if ((rc = rv_mr_alloc(s->pd, len, RV_ACCESS_ALL_REMOTE, &ma, &s->mr)) < 0)
		die("rv_mr_alloc", rc);
}

static void side_close(struct side *s)
{
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	rv_context_close(s->ctx);
	rv_context_unref(s->ctx);
}

static double write_gbps(struct side *a, struct side *b, size_t len)
{
	uint64_t dst = (uint64_t)(uintptr_t)rv_mr_addr(b->mr);
	uint8_t *src = rv_mr_addr(a->mr);
	size_t n = stream / msg, posted = 0, done = 0;
	double t0 = now_ns();
	rv_wc wc[16];

	while (done < n) {
		while (posted < n && posted - done < 16) {
			size_t off = (posted * msg) % (len - msg + 1);
			rv_sge g = {.addr = (uint64_t)(uintptr_t)(src + off), .length = (uint32_t)msg,
				    .lkey = rv_mr_lkey(a->mr)};
			int rc = rv_qp_write(a->qp, &g, dst + off, rv_mr_rkey(b->mr), posted);
			if (rc < 0)
				die("rv_qp_write", rc);
			posted++;
		}
		int k = rv_cq_poll(a->cq, wc, 16);
		if (k < 0)
			die("rv_cq_poll", k);
		for (int i = 0; i < k; i++)
			if (wc[i].status != RV_WC_SUCCESS)
				die("an RDMA WRITE", -(int)wc[i].status);
		done += (size_t)k;
	}
	return (double)(n * msg) * 8 / (now_ns() - t0);
}

static void bench_write(void)
{
	static const struct {
		uint32_t page;
		const char *name;
	} kinds[] = {{RV_MEM_PAGE_HUGE_2M, "2 MiB huge pages"}, {RV_MEM_PAGE_NORMAL, "normal pages"}};
	size_t len = 32 * MiB;

	printf("## RDMA WRITE on soft0: %zu KiB messages, %zu MiB per run, 16 in flight (median of %d runs)\n\n",
	       msg >> 10, stream >> 20, runs);
	printf("| MRs asked for | page size obtained (src / dst) | Gb/s |\n|---|---|---|\n");
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct side a, b;
		rv_endpoint ea, eb;
		double gbps[64];
		int rc;

		side_open(&a, kinds[k].page, len);
		side_open(&b, kinds[k].page, len);
		if ((rc = rv_qp_endpoint(a.qp, &ea)) < 0 || (rc = rv_qp_endpoint(b.qp, &eb)) < 0 ||
		    (rc = rv_qp_connect(a.qp, &eb)) < 0 || (rc = rv_qp_connect(b.qp, &ea)) < 0)
			die("connecting", rc);
		write_gbps(&a, &b, len); /* warm up */
		for (int r = 0; r < runs; r++)
			gbps[r] = write_gbps(&a, &b, len);
		printf("| %s | %zu / %zu bytes | %.2f |\n", kinds[k].name, rv_mr_page_size(a.mr),
		       rv_mr_page_size(b.mr), median(gbps, runs));
		side_close(&a);
		side_close(&b);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int c;

	while ((c = getopt(argc, argv, "d:r:n:s:S:h")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'r': runs = atoi(optarg); break;
		case 'n': ops = atol(optarg); break;
		case 's': msg = (size_t)atol(optarg); break;
		case 'S': stream = (size_t)atol(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-r RUNS] [-n OPS] [-s MSG] [-S STREAM]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (runs < 1 || runs > 64 || ops < 1 || msg < 1 || msg > 16 * MiB || stream < msg) {
		fprintf(stderr, "pool: RUNS is 1..64, OPS >= 1, MSG 1..16 MiB, STREAM >= MSG\n");
		return 2;
	}
	bench_alloc(dev);
	bench_write();
	return 0;
}
