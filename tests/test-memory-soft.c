/*
 * Registered memory on the software device, through the public API: RDMA
 * WRITE between two 2 MiB huge-page MRs (as root the test reserves the pages
 * in /proc/sys/vm/nr_hugepages and restores the value; otherwise the MRs are
 * whatever the fallback gave, which the test prints), and pool buffers posted
 * directly as scatter/gather elements. Exits 77 without soft0.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#define MiB ((size_t)1 << 20)
#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"
#define FREE_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"

static long saved_nr = -1;

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static bool write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f)
		return false;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok;
}

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
};

static void side_open(struct side *s, uint32_t page)
{
	rv_mr_alloc_attr ma = {.mask = RV_MR_ALLOC_ATTR_PAGE, .page = page};
	rv_qp_init_attr qa;
	rv_device *dev = NULL;

	memset(s, 0, sizeof(*s));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &s->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(s->ctx, NULL, &s->pd), 0);
	assert_int_equal(rv_cq_new(s->ctx, NULL, &s->cq), 0);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	assert_int_equal(rv_qp_new(s->pd, &qa, &s->qp), 0);
	assert_int_equal(rv_mr_alloc(s->pd, 2 * MiB, RV_ACCESS_ALL_REMOTE, &ma, &s->mr), 0);
	if (rv_error_last()[0])
		print_message("placement: %s\n", rv_error_last());
}

static void side_close(struct side *s)
{
	rv_qp_unref(s->qp);
	rv_mr_unref(s->mr);
	rv_cq_unref(s->cq);
	rv_pd_unref(s->pd);
	assert_int_equal(rv_context_close(s->ctx), 0);
	rv_context_unref(s->ctx);
}

static void connect_pair(struct side *a, struct side *b)
{
	rv_endpoint ea, eb;

	assert_int_equal(rv_qp_endpoint(a->qp, &ea), 0);
	assert_int_equal(rv_qp_endpoint(b->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(a->qp, &eb), 0);
	assert_int_equal(rv_qp_connect(b->qp, &ea), 0);
}

static rv_wc poll_one(rv_cq *cq)
{
	struct timespec t0, t;
	rv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(&wc, 0, sizeof(wc));
	while ((n = rv_cq_poll(cq, &wc, 1)) == 0) {
		struct timespec ts = {0, 100000};
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			break;
		nanosleep(&ts, NULL);
	}
	if (n != 1)
		fail_msg("no completion within 10 s (%d: %s)", n, rv_error_last());
	return wc;
}

static void test_memory_soft__rdma_write_between_two_huge_page_mrs(void **state)
{
	struct side a, b;
	uint8_t *src, *dst;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, RV_MEM_PAGE_HUGE_2M);
	side_open(&b, RV_MEM_PAGE_HUGE_2M);
	print_message("page sizes: %zu and %zu bytes (free 2 MiB pages now: %ld)\n", rv_mr_page_size(a.mr),
		      rv_mr_page_size(b.mr), read_long(FREE_2M));
	if (saved_nr >= 0) {
		/* We reserved the pages: these must be hugetlbfs pages. */
		assert_int_equal(rv_mr_page_size(a.mr), 2 * MiB);
		assert_int_equal(rv_mr_page_size(b.mr), 2 * MiB);
	}
	connect_pair(&a, &b);
	src = rv_mr_addr(a.mr);
	dst = rv_mr_addr(b.mr);
	for (size_t i = 0; i < 2 * MiB; i++)
		src[i] = (uint8_t)(i * 7 + (i >> 12));
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)src, .length = (uint32_t)(2 * MiB), .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)dst, rv_mr_rkey(b.mr), 1), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_memory_equal(src, dst, 2 * MiB);
	side_close(&a);
	side_close(&b);
}

static void test_memory_soft__pool_buffers_post_directly(void **state)
{
	rv_pool_attr pa = {.mask = RV_POOL_ATTR_CLASSES, .n_classes = 2, .class_size = {4096, 65536}};
	struct side a, b;
	rv_pool *pool;
	rv_pool_buf *buf;
	rv_sge g;
	rv_wc wc;

	(void)state;
	side_open(&a, RV_MEM_PAGE_DEFAULT);
	side_open(&b, RV_MEM_PAGE_DEFAULT);
	connect_pair(&a, &b);
	assert_int_equal(rv_pool_new(a.pd, &pa, &pool), 0);
	for (int i = 0; i < 20; i++) {
		size_t len = i % 2 ? 60000 : 3000;
		assert_int_equal(rv_pool_get(pool, len, &buf), 0);
		memset((void *)(uintptr_t)buf->addr, 'a' + i, len);
		g = (rv_sge){.addr = buf->addr, .length = (uint32_t)len, .lkey = buf->lkey};
		assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)rv_mr_addr(b.mr) + (size_t)i * 65536,
					     rv_mr_rkey(b.mr), (uint64_t)i),
				 0);
		wc = poll_one(a.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(rv_pool_put(pool, buf), 0);
		assert_int_equal(((uint8_t *)rv_mr_addr(b.mr))[(size_t)i * 65536 + len - 1], 'a' + i);
	}
	/* Closing the PD closes the pool first. */
	assert_int_equal(rv_pd_close(a.pd), 0);
	assert_int_equal(rv_pool_get(pool, 1, &buf), -RV_ECLOSED);
	rv_pool_unref(pool);
	side_close(&a);
	side_close(&b);
}

/* Does /proc/self/maps name rverbs' memfd for the mapping holding addr? */
static bool backed_by_memfd(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	uintptr_t a = (uintptr_t)addr, lo, hi;
	char line[512];
	bool found = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 && a >= lo && a < hi) {
			found = strstr(line, "memfd:rverbs-mr") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

/* The default page choice on soft0 takes shared memory it can grant a
 * same-host peer (one-copy WRITE), at 2 MiB and more too, where other
 * devices get transparent huge pages; asking for THP keeps them. */
static void test_memory_soft__default_pages_are_shareable_thp_on_request(void **state)
{
	rv_mr_alloc_attr thp = {.mask = RV_MR_ALLOC_ATTR_PAGE, .page = RV_MEM_PAGE_THP};
	struct side a;
	rv_mr *small, *big, *anon;

	(void)state;
	side_open(&a, RV_MEM_PAGE_DEFAULT);
	assert_true(backed_by_memfd(rv_mr_addr(a.mr)));
	assert_int_equal(rv_mr_alloc(a.pd, 4096, RV_ACCESS_ALL_REMOTE, NULL, &small), 0);
	assert_int_equal(rv_mr_alloc(a.pd, 4 * MiB + 1, RV_ACCESS_ALL_REMOTE, NULL, &big), 0);
	assert_int_equal(rv_mr_alloc(a.pd, 2 * MiB, RV_ACCESS_ALL_REMOTE, &thp, &anon), 0);
	assert_true(backed_by_memfd(rv_mr_addr(small)));
	assert_true(backed_by_memfd(rv_mr_addr(big)));
	assert_true(rv_mr_length(big) >= 4 * MiB + 1);
	((volatile uint8_t *)rv_mr_addr(big))[4 * MiB] = 1; /* the last byte asked for is mapped */
	assert_false(backed_by_memfd(rv_mr_addr(anon)));
	rv_mr_unref(small);
	rv_mr_unref(big);
	rv_mr_unref(anon);
	side_close(&a);
}

static int group_setup(void **state)
{
	long nr = read_long(NR_HUGEPAGES);

	(void)state;
	if (read_long(FREE_2M) < 2 && geteuid() == 0 && nr >= 0 && write_long(NR_HUGEPAGES, nr + 2)) {
		if (read_long(FREE_2M) >= 2)
			saved_nr = nr;
		else
			write_long(NR_HUGEPAGES, nr);
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (saved_nr >= 0 && !write_long(NR_HUGEPAGES, saved_nr))
		return -1;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_soft__rdma_write_between_two_huge_page_mrs),
		cmocka_unit_test(test_memory_soft__pool_buffers_post_directly),
		cmocka_unit_test(test_memory_soft__default_pages_are_shareable_thp_on_request),
	};
	rv_device *dev = NULL;

	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "soft0 is not available: %s\n", rv_error_last());
		return 77;
	}
	rv_device_unref(dev);
	/* The huge-page cases read and change vm.nr_hugepages: one run at a time
	 * on this machine, whichever build directory it comes from. */
	int lock = open("/tmp/rverbs-test-hugepages.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (lock >= 0)
		flock(lock, LOCK_EX);
	return cmocka_run_group_tests_name("memory-soft", tests, group_setup, group_teardown);
}
