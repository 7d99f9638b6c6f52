/*
 * Registered memory against the mock driver: rv_mr_alloc placement and every
 * fallback (no huge pages configured, 1 GiB pages, THP, a NUMA node that does
 * not exist, strict requests), the memlock limit (in a forked child without
 * CAP_IPC_LOCK), pools (classes, growth, exhaustion, statistics, close with
 * the PD, many threads, thread exit), the registration cache (hits, misses,
 * eviction, invalidation) and fork safety (the child gets -EPERM on
 * inherited handles and cannot see rverbs memory; the parent keeps working).
 *
 * As root, one case raises /proc/sys/vm/nr_hugepages for the success path of
 * 2 MiB pages and restores it. Each case ends with end_test(): nothing is left
 * live in the mock, nothing was destroyed twice or out of order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mock-driver.h"

#define MiB ((size_t)1 << 20)

static rv_device *dev;
static rv_context *ctx;
static rv_pd *pd;

/* ---- helpers ---- */

static void assert_msg_contains(const char *fragment)
{
	const char *msg = rv_error_last();

	if (!strstr(msg, fragment))
		fail_msg("rv_error_last() is \"%s\"; expected it to contain \"%s\"", msg, fragment);
}

static char last_log[512];
static int n_warn;

static void log_fn(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level == RV_LOG_WARN)
		n_warn++;
	if (level <= RV_LOG_WARN)
		snprintf(last_log, sizeof(last_log), "%s", msg);
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	rv_error_clear();
	rv_set_log_handler(log_fn, NULL);
	rv_set_log_level(RV_LOG_WARN);
	last_log[0] = '\0';
	n_warn = 0;
	if (mock_device_new("mock0", &dev) < 0 || rv_context_new(dev, NULL, &ctx) < 0 || rv_pd_new(ctx, NULL, &pd) < 0)
		return -1;
	return 0;
}

static void end_test(void)
{
	pd = rv_pd_unref(pd);
	assert_int_equal(rv_context_close(ctx), 0);
	ctx = rv_context_unref(ctx);
	dev = rv_device_unref(dev);
	assert_int_equal(mock.double_destroys, 0);
	assert_int_equal(mock.order_violations, 0);
	assert_int_equal(mock.contract_violations, 0);
	assert_int_equal(mock_live_total(), 0);
}

static int teardown(void **state)
{
	(void)state;
	rv_set_log_handler(NULL, NULL);
	mock_reset();
	return 0;
}

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
	ok = fclose(f) == 0 && ok;
	return ok;
}

#define HP2M "/sys/kernel/mm/hugepages/hugepages-2048kB/"

static long free_2m(void)
{
	return read_long(HP2M "free_hugepages");
}

static rv_mr *alloc(size_t len, uint32_t page, int32_t node, uint32_t flags, int want_rc)
{
	rv_mr_alloc_attr a = {.mask = RV_MR_ALLOC_ATTR_PAGE | RV_MR_ALLOC_ATTR_NUMA_NODE | RV_MR_ALLOC_ATTR_FLAGS,
			      .page = page, .numa_node = node, .flags = flags};
	rv_mr *mr = NULL;
	int rc = rv_mr_alloc(pd, len, RV_ACCESS_LOCAL_WRITE, &a, &mr);

	if (rc != want_rc)
		fail_msg("rv_mr_alloc returned %d, expected %d: %s", rc, want_rc, rv_error_last());
	return mr;
}

/* ---- rv_mr_alloc ---- */

static void test_memory__alloc_default_is_aligned_zeroed_and_reports_its_placement(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	rv_mr *mr = NULL;
	uint8_t *p;

	(void)state;
	rv_error_clear();
	assert_int_equal(rv_mr_alloc(pd, 3000, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	assert_string_equal(rv_error_last(), ""); /* nothing was asked, nothing fell back */
	p = rv_mr_addr(mr);
	assert_int_equal((uintptr_t)p % page, 0);
	assert_int_equal(rv_mr_length(mr), page);
	assert_int_equal(rv_mr_page_size(mr), page);
	for (size_t i = 0; i < page; i++)
		assert_int_equal(p[i], 0);
	assert_true(rv_mr_numa_node(mr) >= -1);
	assert_int_equal(n_warn, 0);
	mr = rv_mr_unref(mr);
	end_test();
}

static void test_memory__alloc_rejects_unknown_bits_pages_nodes_and_flags(void **state)
{
	rv_mr_alloc_attr a;
	rv_mr *mr = (rv_mr *)(uintptr_t)0x5e5e;

	(void)state;
	a = (rv_mr_alloc_attr){.mask = 1u << 9};
	assert_int_equal(rv_mr_alloc(pd, 4096, 0, &a, &mr), -EINVAL);
	assert_msg_contains("unknown bit 0x200 in rv_mr_alloc_attr.mask");
	a = (rv_mr_alloc_attr){.mask = RV_MR_ALLOC_ATTR_PAGE, .page = 9};
	assert_int_equal(rv_mr_alloc(pd, 4096, 0, &a, &mr), -EINVAL);
	assert_msg_contains("not an rv_mem_page");
	a = (rv_mr_alloc_attr){.mask = RV_MR_ALLOC_ATTR_NUMA_NODE, .numa_node = -3};
	assert_int_equal(rv_mr_alloc(pd, 4096, 0, &a, &mr), -EINVAL);
	assert_msg_contains("numa_node -3");
	a = (rv_mr_alloc_attr){.mask = RV_MR_ALLOC_ATTR_FLAGS, .flags = 1u << 5};
	assert_int_equal(rv_mr_alloc(pd, 4096, 0, &a, &mr), -EINVAL);
	assert_msg_contains("unknown flag 0x20");
	assert_ptr_equal(mr, (rv_mr *)(uintptr_t)0x5e5e); /* outputs untouched on failure */
	assert_int_equal(mock.created[RV_OBJ_MR], 0);
	end_test();
}

static void test_memory__huge_2m_without_configured_pages_falls_back_visibly(void **state)
{
	rv_mr *mr;

	(void)state;
	if (free_2m() > 0)
		skip(); /* pages are configured here: the success case covers it */
	mr = alloc(4 * MiB, RV_MEM_PAGE_HUGE_2M, RV_MEM_NODE_ANY, 0, 0);
	assert_msg_contains("rv_mr_alloc: fell back to");
	assert_msg_contains("2 MiB huge pages unavailable");
	assert_msg_contains("vm.nr_hugepages");
	assert_int_equal(n_warn, 1);
	assert_non_null(strstr(last_log, "2 MiB huge pages unavailable"));
	/* THP or normal pages: whichever, the getter says which. */
	assert_true(rv_mr_page_size(mr) == 2 * MiB || rv_mr_page_size(mr) == (size_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(rv_mr_length(mr), 4 * MiB);
	memset(rv_mr_addr(mr), 0xab, 4 * MiB);
	mr = rv_mr_unref(mr);
	end_test();
}

static void test_memory__huge_strict_without_pages_is_enomem_and_registers_nothing(void **state)
{
	(void)state;
	if (free_2m() > 0)
		skip();
	alloc(2 * MiB, RV_MEM_PAGE_HUGE_2M, RV_MEM_NODE_ANY, RV_MEM_STRICT, -ENOMEM);
	assert_msg_contains("no 2 MiB huge pages for 2097152 bytes");
	alloc(2 * MiB, RV_MEM_PAGE_HUGE_1G, RV_MEM_NODE_ANY, RV_MEM_STRICT, -ENOMEM);
	assert_msg_contains("no 1 GiB huge pages");
	assert_int_equal(mock.created[RV_OBJ_MR], 0);
	end_test();
}

static void test_memory__huge_1g_falls_back_down_the_chain(void **state)
{
	rv_mr *mr;

	(void)state;
	if (read_long("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages") > 0)
		skip();
	mr = alloc(MiB, RV_MEM_PAGE_HUGE_1G, RV_MEM_NODE_ANY, 0, 0);
	assert_msg_contains("1 GiB huge pages unavailable");
	if (free_2m() > 0) {
		assert_int_equal(rv_mr_page_size(mr), 2 * MiB);
	} else {
		assert_msg_contains("2 MiB huge pages unavailable");
	}
	mr = rv_mr_unref(mr);
	end_test();
}

static void test_memory__thp_request_reports_what_the_kernel_gave(void **state)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char mode[128] = "";
	rv_mr *mr;

	(void)state;
	if (f) {
		if (!fgets(mode, sizeof(mode), f))
			mode[0] = '\0';
		fclose(f);
	}
	mr = alloc(4 * MiB, RV_MEM_PAGE_THP, RV_MEM_NODE_ANY, 0, 0);
	if (!mode[0] || strstr(mode, "[never]")) {
		assert_msg_contains("transparent huge pages are disabled");
		assert_int_equal(rv_mr_page_size(mr), (size_t)sysconf(_SC_PAGESIZE));
	} else if (rv_mr_page_size(mr) == 2 * MiB) {
		assert_int_equal((uintptr_t)rv_mr_addr(mr) % (2 * MiB), 0);
	} else {
		assert_msg_contains("transparent huge pages back");
	}
	mr = rv_mr_unref(mr);
	/* Normal pages are normal, and never a fallback. */
	rv_error_clear();
	mr = alloc(4 * MiB, RV_MEM_PAGE_NORMAL, RV_MEM_NODE_ANY, 0, 0);
	assert_int_equal(rv_mr_page_size(mr), (size_t)sysconf(_SC_PAGESIZE));
	assert_string_equal(rv_error_last(), "");
	mr = rv_mr_unref(mr);
	end_test();
}

/* As root: reserve 2 MiB pages for the test, use them, give them back. */
static void test_memory__huge_2m_success_with_pages_reserved_as_root(void **state)
{
	const char *nr = "/proc/sys/vm/nr_hugepages";
	long before = read_long(nr);
	bool raised = false;
	rv_mr *mr;

	(void)state;
	if (free_2m() < 2) {
		if (geteuid() != 0 || before < 0 || !write_long(nr, before + 2) || free_2m() < 2) {
			if (before >= 0 && read_long(nr) != before)
				write_long(nr, before);
			skip(); /* not root, or the kernel could not find two free 2 MiB pages */
		}
		raised = true;
	}
	rv_error_clear();
	mr = alloc(3 * MiB, RV_MEM_PAGE_HUGE_2M, RV_MEM_NODE_ANY, RV_MEM_STRICT, 0);
	assert_string_equal(rv_error_last(), "");
	assert_int_equal(rv_mr_page_size(mr), 2 * MiB);
	assert_int_equal(rv_mr_length(mr), 4 * MiB);
	assert_int_equal((uintptr_t)rv_mr_addr(mr) % (2 * MiB), 0);
	memset(rv_mr_addr(mr), 1, 4 * MiB);
	mr = rv_mr_unref(mr);
	if (raised)
		assert_true(write_long(nr, before));
	end_test();
}

static void test_memory__numa_node_that_does_not_exist_falls_back_or_fails_strictly(void **state)
{
	rv_mr *mr;

	(void)state;
	mr = alloc(8192, RV_MEM_PAGE_NORMAL, 999, 0, 0);
	assert_msg_contains("NUMA node 999 does not exist (online nodes: ");
	assert_int_equal(n_warn, 1);
	assert_true(rv_mr_numa_node(mr) != 999);
	mr = rv_mr_unref(mr);
	alloc(8192, RV_MEM_PAGE_NORMAL, 999, RV_MEM_STRICT, -EINVAL);
	assert_msg_contains("NUMA node 999 does not exist");
	end_test();
}

static void test_memory__numa_node_0_binds_or_says_why_not(void **state)
{
	rv_mr *mr;

	(void)state;
	rv_error_clear();
	mr = alloc(8192, RV_MEM_PAGE_NORMAL, 0, 0, 0);
	if (rv_error_last()[0])
		assert_msg_contains("binding to NUMA node 0 failed (mbind: "); /* a container without mbind */
	else
		assert_int_equal(rv_mr_numa_node(mr), 0);
	mr = rv_mr_unref(mr);
	end_test();
}

/* A fake sysfs (RVERBS_SYSFS_ROOT) with two nodes and mock0 on one of them. */
static char fake_sys[64];

static void fake_sysfs(const char *device_node)
{
	char path[512];

	snprintf(fake_sys, sizeof(fake_sys), "/tmp/rverbs-test-sys.%d", (int)getpid());
	snprintf(path, sizeof(path), "mkdir -p %s/class/infiniband/mock0/device %s/devices/system/node/node0 "
		 "%s/devices/system/node/node1", fake_sys, fake_sys, fake_sys);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/devices/system/node/online", fake_sys);
	{
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs("0-1\n", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/class/infiniband/mock0/device/numa_node", fake_sys);
	{
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(device_node, f);
		fclose(f);
	}
	setenv("RVERBS_SYSFS_ROOT", fake_sys, 1);
}

static void fake_sysfs_remove(void)
{
	char cmd[128];

	unsetenv("RVERBS_SYSFS_ROOT");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake_sys);
	assert_int_equal(system(cmd), 0);
}

static void test_memory__default_node_is_the_devices_from_sysfs(void **state)
{
	rv_mr *mr;

	(void)state;
	/* mock0 on node 0 of two: preferred, and the kernel's node 0 is real. */
	fake_sysfs("0\n");
	rv_error_clear();
	assert_int_equal(rv_mr_alloc(pd, 8192, 0, NULL, &mr), 0);
	if (rv_error_last()[0])
		assert_msg_contains("preferring the device's NUMA node 0 failed (mbind: "); /* no mbind here */
	else
		assert_int_equal(rv_mr_numa_node(mr), 0);
	mr = rv_mr_unref(mr);
	fake_sysfs_remove();

	/* mock0 on node 1, which the kernel does not have: the preference fails,
	 * and says so (at RV_LOG_INFO: nothing in particular was asked). */
	fake_sysfs("1\n");
	assert_int_equal(rv_mr_alloc(pd, 8192, 0, NULL, &mr), 0);
	assert_msg_contains("preferring the device's NUMA node 1 failed (mbind: ");
	assert_int_equal(n_warn, 0);
	mr = rv_mr_unref(mr);
	/* Node 1 asked for explicitly: binding fails, at RV_LOG_WARN; strictly, an error. */
	mr = alloc(8192, RV_MEM_PAGE_NORMAL, 1, 0, 0);
	assert_msg_contains("binding to NUMA node 1 failed (mbind: ");
	assert_int_equal(n_warn, 1);
	mr = rv_mr_unref(mr);
	alloc(8192, RV_MEM_PAGE_NORMAL, 1, RV_MEM_STRICT, -ENOMEM);
	assert_msg_contains("binding to NUMA node 1 failed: mbind: ");
	fake_sysfs_remove();

	/* A device without a node (-1): nothing to prefer, nothing said. */
	fake_sysfs("-1\n");
	rv_error_clear();
	assert_int_equal(rv_mr_alloc(pd, 8192, 0, NULL, &mr), 0);
	assert_string_equal(rv_error_last(), "");
	mr = rv_mr_unref(mr);
	fake_sysfs_remove();
	end_test();
}

static void test_memory__caller_memory_reports_page_size_and_unknown_node(void **state)
{
	static char buf[100];
	rv_mr *mr;

	(void)state;
	assert_int_equal(rv_mr_reg(pd, buf, sizeof(buf), 0, &mr), 0);
	assert_int_equal(rv_mr_page_size(mr), (size_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(rv_mr_numa_node(mr), -1);
	assert_int_equal(rv_mr_numa_node(NULL), -EINVAL);
	assert_int_equal(rv_mr_page_size(NULL), 0);
	mr = rv_mr_unref(mr);
	end_test();
}

/* ---- the memlock limit, in a child without CAP_IPC_LOCK ---- */

static int drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return (int)syscall(SYS_capset, &h, d);
}

#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child: %s failed at line %d: %s\n", #cond, __LINE__,   \
				rv_error_last());                                                  \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)

static int memlock_child(void)
{
	struct rlimit rl = {.rlim_cur = MiB, .rlim_max = MiB};
	rv_pool_attr pa = {.mask = RV_POOL_ATTR_CLASSES | RV_POOL_ATTR_CHUNK_BYTES | RV_POOL_ATTR_THREAD_CACHE |
				   RV_POOL_ATTR_PAGE,
			   .n_classes = 1, .class_size = {4096}, .chunk_bytes = 256 * 1024,
			   .page = RV_MEM_PAGE_NORMAL};
	rv_device *d;
	rv_context *c;
	rv_pd *p;
	rv_mr *a, *b;
	rv_pool *pool;
	rv_pool_buf *bufs[257];
	int rc, n;

	mock_reset();
	CHILD_CHECK(drop_cap_ipc_lock() == 0);
	CHILD_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	CHILD_CHECK(mock_device_new("mock1", &d) == 0);
	CHILD_CHECK(rv_context_new(d, NULL, &c) == 0);
	CHILD_CHECK(rv_pd_new(c, NULL, &p) == 0);
	CHILD_CHECK(rv_mr_alloc(p, 512 * 1024, RV_ACCESS_LOCAL_WRITE, NULL, &a) == 0);
	rc = rv_mr_alloc(p, 768 * 1024, RV_ACCESS_LOCAL_WRITE, NULL, &b);
	CHILD_CHECK(rc == -ENOMEM);
	CHILD_CHECK(strstr(rv_error_last(), "registering 768 KiB would exceed the locked-memory limit"));
	CHILD_CHECK(strstr(rv_error_last(), "of 1 MiB: 512 KiB are registered"));
	CHILD_CHECK(strstr(rv_error_last(), "ulimit -l unlimited"));
	CHILD_CHECK(mock.created[RV_OBJ_MR] == 1); /* the driver never saw it */
	/* Caller memory counts the same way. */
	{
		static char big[768 * 1024];
		CHILD_CHECK(rv_mr_reg(p, big, sizeof(big), 0, &b) == -ENOMEM);
		CHILD_CHECK(strstr(rv_error_last(), "locked-memory limit"));
	}
	/* Deregistering gives the room back. */
	a = rv_mr_unref(a);
	CHILD_CHECK(rv_mr_alloc(p, 768 * 1024, RV_ACCESS_LOCAL_WRITE, NULL, &b) == 0);
	b = rv_mr_unref(b);
	/* A pool grows to the limit, then says why it cannot grow further. */
	CHILD_CHECK(rv_pool_new(p, &pa, &pool) == 0);
	for (n = 0; n < 257 && (rc = rv_pool_get(pool, 4096, &bufs[n])) == 0; n++)
		;
	CHILD_CHECK(rc == -ENOMEM && n == 256);
	CHILD_CHECK(strstr(rv_error_last(), "locked-memory limit"));
	for (int i = 0; i < n; i++)
		CHILD_CHECK(rv_pool_put(pool, bufs[i]) == 0);
	rv_pool_unref(pool);
	rv_pd_unref(p);
	CHILD_CHECK(rv_context_close(c) == 0);
	rv_context_unref(c);
	rv_device_unref(d);
	CHILD_CHECK(mock_live_total() == 0);
	return 0;
}

static void test_memory__memlock_limit_reached_is_explained(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(memlock_child());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	end_test();
}

/* ---- pools ---- */

static rv_pool *new_pool(uint32_t cls, uint64_t chunk, uint64_t max, uint32_t tcache)
{
	rv_pool_attr a = {.mask = RV_POOL_ATTR_CLASSES | RV_POOL_ATTR_CHUNK_BYTES | RV_POOL_ATTR_MAX_BYTES |
				  RV_POOL_ATTR_THREAD_CACHE | RV_POOL_ATTR_PAGE,
			  .n_classes = 1, .class_size = {cls}, .chunk_bytes = chunk, .max_bytes = max,
			  .thread_cache = tcache, .page = RV_MEM_PAGE_NORMAL};
	rv_pool *pool = NULL;

	if (rv_pool_new(pd, &a, &pool) < 0)
		fail_msg("rv_pool_new: %s", rv_error_last());
	return pool;
}

static rv_pool_stats stats_of(rv_pool *pool)
{
	rv_pool_stats s = {.mask = RV_POOL_STATS_ALL};

	assert_int_equal(rv_pool_stats_get(pool, &s), 0);
	assert_int_equal(s.mask, RV_POOL_STATS_ALL);
	return s;
}

static void test_pool__default_classes_and_a_buffer_fills_an_sge(void **state)
{
	rv_pool *pool;
	rv_pool_buf *b, *c;
	rv_pool_stats s;
	rv_sge sge;

	(void)state;
	assert_int_equal(rv_pool_new(pd, NULL, &pool), 0);
	assert_ptr_equal(rv_pool_pd(pool), pd);
	s = stats_of(pool);
	assert_int_equal(s.chunks, 0); /* nothing registered before the first get */
	assert_int_equal(rv_pool_get(pool, 100, &b), 0);
	assert_int_equal(b->length, 256);
	assert_int_equal(b->class_index, 0);
	assert_int_equal(b->addr % 64, 0);
	assert_true(b->lkey != 0 && b->rkey != 0);
	sge = (rv_sge){.addr = b->addr, .length = b->length, .lkey = b->lkey};
	memset((void *)(uintptr_t)sge.addr, 0x5a, sge.length);
	assert_int_equal(rv_pool_get(pool, 5000, &c), 0);
	assert_int_equal(c->length, 65536);
	assert_int_equal(c->class_index, 2);
	s = stats_of(pool);
	assert_int_equal(s.chunks, 2);
	assert_int_equal(s.buffers_in_use, 2);
	assert_int_equal(s.gets, 2);
	assert_int_equal(rv_pool_put(pool, b), 0);
	assert_int_equal(rv_pool_put(pool, c), 0);
	s = stats_of(pool);
	assert_int_equal(s.buffers_in_use, 0);
	assert_int_equal(rv_pool_get(pool, (size_t)2 << 20, &b), -EINVAL);
	assert_msg_contains("above the largest class");
	pool = rv_pool_unref(pool);
	end_test();
}

static void test_pool__grows_by_chunks_to_its_bound_then_exhaustion_is_enomem(void **state)
{
	rv_pool_buf *bufs[33];
	rv_pool *pool;
	rv_pool_stats s;
	rv_pool_buf *b;

	(void)state;
	pool = new_pool(4096, 64 * 1024, 128 * 1024, 0); /* 16 buffers per chunk, 2 chunks */
	for (int i = 0; i < 32; i++)
		assert_int_equal(rv_pool_get(pool, 4096, &bufs[i]), 0);
	s = stats_of(pool);
	assert_int_equal(s.chunks, 2);
	assert_int_equal(s.bytes_registered, 128 * 1024);
	assert_int_equal(s.buffers_total, 32);
	assert_int_equal(mock.created[RV_OBJ_MR], 2);
	b = (rv_pool_buf *)(uintptr_t)0x5e5e;
	assert_int_equal(rv_pool_get(pool, 1, &b), -ENOMEM);
	assert_ptr_equal(b, (rv_pool_buf *)(uintptr_t)0x5e5e);
	assert_msg_contains("is exhausted: every 4096-byte buffer is out");
	assert_msg_contains("bound of 128 KiB (128 KiB registered in 2 chunks)");
	assert_msg_contains("hint: put buffers back");
	s = stats_of(pool);
	assert_int_equal(s.buffers_in_use, 32);
	assert_int_equal(s.high_water, 32);
	assert_int_equal(s.failures, 1);
	assert_int_equal(s.misses, 32); /* no thread cache: every get takes the lock */
	for (int i = 0; i < 32; i++)
		assert_int_equal(rv_pool_put(pool, bufs[i]), 0);
	/* Reuse: no new chunk. */
	for (int i = 0; i < 32; i++)
		assert_int_equal(rv_pool_get(pool, 4096, &bufs[i]), 0);
	for (int i = 0; i < 32; i++)
		for (int j = i + 1; j < 32; j++)
			assert_true(bufs[i]->addr != bufs[j]->addr);
	for (int i = 0; i < 32; i++)
		assert_int_equal(rv_pool_put(pool, bufs[i]), 0);
	s = stats_of(pool);
	assert_int_equal(s.chunks, 2);
	assert_int_equal(s.buffers_in_use, 0);
	assert_int_equal(s.high_water, 32);
	pool = rv_pool_unref(pool);
	assert_int_equal(mock.destroyed[RV_OBJ_MR], 2);
	end_test();
}

static void test_pool__thread_cache_serves_without_the_lock(void **state)
{
	rv_pool *pool = new_pool(256, 64 * 1024, MiB, 16);
	rv_pool_buf *b[8];
	rv_pool_stats s;

	(void)state;
	for (int round = 0; round < 100; round++) {
		for (int i = 0; i < 8; i++)
			assert_int_equal(rv_pool_get(pool, 200, &b[i]), 0);
		for (int i = 0; i < 8; i++)
			assert_int_equal(rv_pool_put(pool, b[i]), 0);
	}
	s = stats_of(pool);
	assert_int_equal(s.gets, 800);
	assert_true(s.misses <= 2);
	assert_int_equal(s.buffers_in_use, 0);
	assert_true(s.high_water >= 8 && s.high_water <= 8 + 16);
	pool = rv_pool_unref(pool);
	end_test();
}

static void test_pool__bad_arguments_are_einval(void **state)
{
	rv_pool_attr a;
	rv_pool *pool, *other;
	rv_pool_buf *b, *ob;

	(void)state;
	a = (rv_pool_attr){.mask = 1u << 20};
	assert_int_equal(rv_pool_new(pd, &a, &pool), -EINVAL);
	assert_msg_contains("unknown bit 0x100000 in rv_pool_attr.mask");
	a = (rv_pool_attr){.mask = RV_POOL_ATTR_CLASSES, .n_classes = 2, .class_size = {4096, 4000}};
	assert_int_equal(rv_pool_new(pd, &a, &pool), -EINVAL);
	assert_msg_contains("class_size[1] = 4000 is not above class_size[0]");
	a = (rv_pool_attr){.mask = RV_POOL_ATTR_CLASSES, .n_classes = 9};
	assert_int_equal(rv_pool_new(pd, &a, &pool), -EINVAL);
	a = (rv_pool_attr){.mask = RV_POOL_ATTR_MAX_BYTES, .max_bytes = 4096};
	assert_int_equal(rv_pool_new(pd, &a, &pool), -EINVAL);
	assert_msg_contains("below one chunk");
	a = (rv_pool_attr){.mask = RV_POOL_ATTR_ACCESS, .access = RV_ACCESS_REMOTE_WRITE};
	assert_int_equal(rv_pool_new(pd, &a, &pool), -EINVAL);
	assert_int_equal(rv_pool_new(NULL, NULL, &pool), -EINVAL);
	assert_int_equal(rv_pool_new(pd, NULL, NULL), -EINVAL);

	pool = new_pool(256, 4096, MiB, 4);
	other = new_pool(256, 4096, MiB, 4);
	assert_int_equal(rv_pool_get(pool, 0, &b), -EINVAL);
	assert_int_equal(rv_pool_get(pool, 1, NULL), -EINVAL);
	assert_int_equal(rv_pool_get(pool, 1, &b), 0);
	assert_int_equal(rv_pool_get(other, 1, &ob), 0);
	assert_int_equal(rv_pool_put(other, b), -EINVAL);
	assert_msg_contains("is not from pool #");
	assert_int_equal(rv_pool_put(pool, b), 0);
	assert_int_equal(rv_pool_put(pool, b), -EINVAL);
	assert_msg_contains("put twice?");
	assert_int_equal(rv_pool_put(pool, NULL), -EINVAL);
	assert_int_equal(rv_pool_get((rv_pool *)pd, 1, &b), -EINVAL);
	assert_msg_contains("expected a pool handle, got a PD handle");
	assert_int_equal(rv_pool_put(other, ob), 0);
	assert_null(rv_pool_unref(NULL));
	assert_null(rv_pool_ref(NULL));
	pool = rv_pool_unref(pool);
	other = rv_pool_unref(other);
	end_test();
}

static void test_pool__closing_the_pd_closes_the_pool_first(void **state)
{
	rv_pool *pool = new_pool(4096, 64 * 1024, MiB, 4);
	rv_pool_buf *b;
	rv_pool_stats s;
	char *text;

	(void)state;
	assert_int_equal(rv_pool_get(pool, 1, &b), 0);
	assert_int_equal(rv_context_dump(ctx, &text), 0);
	assert_non_null(strstr(text, "pool #"));
	rv_free(text);
	assert_int_equal(rv_pd_close(pd), 0);
	/* The chunk was deregistered before the PD (the mock checks the order). */
	assert_int_equal(mock.destroyed[RV_OBJ_MR], 1);
	assert_int_equal(rv_pool_get(pool, 1, &b), -RV_ECLOSED);
	assert_msg_contains("closed because its PD #");
	/* The buffer's memory is still mapped, and it can be put back. */
	memset((void *)(uintptr_t)b->addr, 1, b->length);
	assert_int_equal(rv_pool_put(pool, b), 0);
	s = stats_of(pool);
	assert_int_equal(s.bytes_registered, 0);
	assert_int_equal(s.buffers_in_use, 0);
	assert_int_equal(rv_pool_close(pool), 0);
	assert_null(rv_pool_pd(pool));
	pool = rv_pool_unref(pool);
	end_test();
}

static void test_pool__failed_chunk_deregistration_keeps_the_close_retryable(void **state)
{
	rv_pool *pool = new_pool(4096, 64 * 1024, MiB, 0);
	rv_pool_buf *b;

	(void)state;
	assert_int_equal(rv_pool_get(pool, 1, &b), 0);
	mock_fail_destroy(RV_OBJ_MR, EBUSY, 1);
	assert_int_equal(rv_pool_close(pool), -EBUSY);
	assert_int_equal(rv_pool_put(pool, b), 0);
	assert_int_equal(rv_pool_get(pool, 1, &b), 0); /* still open */
	assert_int_equal(rv_pool_put(pool, b), 0);
	assert_int_equal(rv_pool_close(pool), 0);
	assert_int_equal(mock.destroyed[RV_OBJ_MR], 1);
	pool = rv_pool_unref(pool);
	end_test();
}

static void test_pool__preallocated_chunks_are_registered_at_creation(void **state)
{
	rv_pool_attr a = {.mask = RV_POOL_ATTR_CLASSES | RV_POOL_ATTR_PREALLOC | RV_POOL_ATTR_PAGE |
				  RV_POOL_ATTR_CHUNK_BYTES,
			  .n_classes = 2, .class_size = {512, 8192}, .prealloc_chunks = 2,
			  .chunk_bytes = 64 * 1024, .page = RV_MEM_PAGE_NORMAL};
	rv_pool *pool;

	(void)state;
	assert_int_equal(rv_pool_new(pd, &a, &pool), 0);
	assert_int_equal(stats_of(pool).chunks, 4);
	assert_int_equal(mock.created[RV_OBJ_MR], 4);
	/* Preallocation beyond the bound fails creation and leaves nothing. */
	a.mask |= RV_POOL_ATTR_MAX_BYTES;
	a.max_bytes = 128 * 1024;
	assert_int_equal(rv_pool_new(pd, &a, &pool), -ENOMEM);
	assert_msg_contains("preallocating: ");
	assert_int_equal(mock.created[RV_OBJ_MR] - mock.destroyed[RV_OBJ_MR], 4);
	pool = NULL;
	end_test();
}

/* Many threads getting and putting: no buffer is ever handed out twice. */
#define N_THREADS 8
#define N_ROUNDS 3000

struct worker {
	rv_pool *pool;
	int id;
	int errors;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	rv_pool_buf *held[4];
	unsigned seed = (unsigned)w->id * 7919u + 1;

	for (int r = 0; r < N_ROUNDS; r++) {
		int n = 1 + (int)(rand_r(&seed) % 4);
		for (int i = 0; i < n; i++) {
			size_t len = 1 + rand_r(&seed) % 5000;
			if (rv_pool_get(w->pool, len, &held[i]) < 0) {
				w->errors++;
				n = i;
				break;
			}
			*(volatile uint32_t *)(uintptr_t)held[i]->addr = (uint32_t)w->id;
		}
		for (int i = 0; i < n; i++) {
			if (*(volatile uint32_t *)(uintptr_t)held[i]->addr != (uint32_t)w->id)
				w->errors += 1000; /* someone else got it too */
			if (rv_pool_put(w->pool, held[i]) < 0)
				w->errors++;
		}
	}
	return NULL;
}

static void test_pool__many_threads_get_and_put_concurrently(void **state)
{
	rv_pool_attr a = {.mask = RV_POOL_ATTR_CLASSES | RV_POOL_ATTR_CHUNK_BYTES | RV_POOL_ATTR_THREAD_CACHE |
				  RV_POOL_ATTR_PAGE,
			  .n_classes = 2, .class_size = {1024, 8192}, .chunk_bytes = 128 * 1024,
			  .thread_cache = 8, .page = RV_MEM_PAGE_NORMAL};
	struct worker w[N_THREADS];
	pthread_t th[N_THREADS];
	rv_pool *pool;
	rv_pool_stats s;

	(void)state;
	assert_int_equal(rv_pool_new(pd, &a, &pool), 0);
	for (int i = 0; i < N_THREADS; i++) {
		w[i] = (struct worker){.pool = pool, .id = i + 1};
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < N_THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].errors, 0);
	}
	s = stats_of(pool);
	assert_int_equal(s.buffers_in_use, 0);
	assert_true(s.gets >= (uint64_t)N_THREADS * N_ROUNDS);
	assert_true(s.misses < s.gets / 2);
	/* The threads are gone: their caches went back to the shared lists. */
	assert_true(s.high_water <= s.buffers_total);
	pool = rv_pool_unref(pool);
	end_test();
}

static void *hoard(void *arg)
{
	rv_pool *pool = arg;
	rv_pool_buf *b[4];

	for (int i = 0; i < 4; i++)
		if (rv_pool_get(pool, 1, &b[i]) < 0)
			return (void *)1;
	for (int i = 0; i < 4; i++)
		rv_pool_put(pool, b[i]); /* into this thread's cache */
	return NULL;
}

static void test_pool__a_thread_that_exits_gives_its_cache_back(void **state)
{
	rv_pool *pool = new_pool(4096, 32 * 1024, 32 * 1024, 8); /* 8 buffers in all */
	rv_pool_buf *b[8];
	pthread_t th;
	void *ret;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, hoard, pool), 0);
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_null(ret);
	for (int i = 0; i < 8; i++)
		assert_int_equal(rv_pool_get(pool, 1, &b[i]), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(rv_pool_put(pool, b[i]), 0);
	pool = rv_pool_unref(pool);
	end_test();
}

/* One thread using more pools than it has cache slots: the oldest cache is
 * given back to its pool, and no buffer is lost. */
static void test_pool__more_pools_than_thread_slots_lose_no_buffer(void **state)
{
	enum { N = 11 };
	rv_pool *pools[N];
	rv_pool_buf *b[8];

	(void)state;
	for (int i = 0; i < N; i++)
		pools[i] = new_pool(4096, 32 * 1024, 32 * 1024, 4); /* 8 buffers each */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			assert_int_equal(rv_pool_get(pools[i], 1, &b[0]), 0);
			assert_int_equal(rv_pool_put(pools[i], b[0]), 0); /* stays in a cache */
		}
	}
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 8; k++)
			if (rv_pool_get(pools[i], 1, &b[k]) < 0)
				fail_msg("pool %d, buffer %d: %s", i, k, rv_error_last());
		for (int k = 0; k < 8; k++)
			assert_int_equal(rv_pool_put(pools[i], b[k]), 0);
		assert_int_equal(stats_of(pools[i]).buffers_in_use, 0);
	}
	for (int i = 0; i < N; i++)
		pools[i] = rv_pool_unref(pools[i]);
	end_test();
}

/* ---- the registration cache ---- */

static rv_mr_cache_stats cstats(rv_mr_cache *c)
{
	rv_mr_cache_stats s = {.mask = RV_MR_CACHE_STATS_ALL};

	assert_int_equal(rv_mr_cache_stats_get(c, &s), 0);
	return s;
}

static void test_cache__hits_misses_eviction_and_invalidation(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	rv_mr_cache_attr a = {.mask = RV_MR_CACHE_ATTR_MAX_ENTRIES, .max_entries = 2};
	char *mem = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rv_mr_cache *c;
	rv_mr *m1, *m2, *m3, *m4;
	rv_mr_cache_stats s;

	(void)state;
	assert_true(mem != MAP_FAILED);
	assert_int_equal(rv_mr_cache_new(pd, &a, &c), 0);
	/* Miss: registers the whole page. */
	assert_int_equal(rv_mr_cache_get(c, mem + 10, 100, RV_ACCESS_LOCAL_WRITE, &m1), 0);
	assert_ptr_equal(rv_mr_addr(m1), mem);
	assert_int_equal(rv_mr_length(m1), page);
	/* Hit: inside it, same or fewer rights. */
	assert_int_equal(rv_mr_cache_get(c, mem + 200, 300, 0, &m2), 0);
	assert_ptr_equal(m2, m1);
	/* More rights than cached: a miss. */
	assert_int_equal(rv_mr_cache_get(c, mem + 200, 300, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_READ, &m3), 0);
	assert_ptr_not_equal(m3, m1);
	s = cstats(c);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.misses, 2);
	assert_int_equal(s.entries, 2);
	/* A third range evicts the least recently used (m1's). */
	assert_int_equal(rv_mr_cache_get(c, mem + 4 * page, 2 * page, 0, &m4), 0);
	s = cstats(c);
	assert_int_equal(s.evictions, 1);
	assert_int_equal(s.entries, 2);
	/* m1 is still the caller's and still registered. */
	assert_true(rv_mr_lkey(m1) != 0);
	m2 = rv_mr_unref(m2);
	m1 = rv_mr_unref(m1);
	assert_int_equal(mock.destroyed[RV_OBJ_MR], 1);
	/* Invalidation before "freeing" the first pages. */
	assert_int_equal(rv_mr_cache_invalidate(c, mem, page), 1);
	assert_int_equal(rv_mr_cache_invalidate(c, mem, page), 0);
	s = cstats(c);
	assert_int_equal(s.invalidations, 1);
	assert_int_equal(s.entries, 1);
	/* The next get of that range registers anew. */
	assert_int_equal(rv_mr_cache_get(c, mem + 10, 100, 0, &m1), 0);
	assert_ptr_not_equal(m1, m3);
	assert_int_equal(cstats(c).misses, 4);
	m1 = rv_mr_unref(m1);
	m3 = rv_mr_unref(m3);
	m4 = rv_mr_unref(m4);
	assert_int_equal(rv_mr_cache_get(c, NULL, 1, 0, &m1), -EINVAL);
	assert_int_equal(rv_mr_cache_get(c, mem, 0, 0, &m1), -EINVAL);
	c = rv_mr_cache_unref(c);
	assert_int_equal(mock.created[RV_OBJ_MR], mock.destroyed[RV_OBJ_MR]);
	munmap(mem, 8 * page);
	end_test();
}

static void test_cache__closed_pd_drops_its_entries(void **state)
{
	static char buf[8192];
	rv_mr_cache *c;
	rv_mr *m;

	(void)state;
	assert_int_equal(rv_mr_cache_new(pd, NULL, &c), 0);
	assert_int_equal(rv_mr_cache_get(c, buf, 10, 0, &m), 0);
	m = rv_mr_unref(m);
	assert_int_equal(rv_pd_close(pd), 0);
	assert_int_equal(rv_mr_cache_get(c, buf, 10, 0, &m), -RV_ECLOSED);
	assert_msg_contains("is closed");
	assert_int_equal(cstats(c).entries, 0);
	c = rv_mr_cache_unref(c);
	end_test();
}

/* ---- fork ---- */

static int fork_child(rv_mr *mr, rv_pool *pool, rv_qp *qp, rv_cq *cq)
{
	rv_pool_buf *b;
	rv_pd *p2;
	rv_cq *c2;
	rv_device *d;
	rv_context *c;
	rv_wc wc;
	static char one;
	rv_sge g = {.addr = (uintptr_t)&one, .length = 1, .lkey = 1};
	rv_send_wr sw = {.sg_list = &g, .num_sge = 1, .opcode = RV_WR_SEND};
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	size_t posted = 99;
	rv_qp *q2;

	mock_reset();
	/* Inherited handles: a clear error, and nothing reaches the driver. */
	CHILD_CHECK(rv_pd_new(ctx, NULL, &p2) == -EPERM);
	CHILD_CHECK(strstr(rv_error_last(), "rv_pd_new: context #"));
	CHILD_CHECK(strstr(rv_error_last(), "is a fork child of it"));
	CHILD_CHECK(strstr(rv_error_last(), "open a new context in the child"));
	CHILD_CHECK(rv_mr_lkey(mr) == 0);
	CHILD_CHECK(strstr(rv_error_last(), "rv_mr_lkey: MR #"));
	CHILD_CHECK(rv_pool_get(pool, 1, &b) == -EPERM);
	CHILD_CHECK(rv_pd_close(pd) == -EPERM);
	CHILD_CHECK(rv_context_close(ctx) == -EPERM);
	/* The data path too: nothing reaches the parent's queues. */
	CHILD_CHECK(rv_qp_send(qp, &g, 1) == -EPERM);
	CHILD_CHECK(strstr(rv_error_last(), "rv_qp_send: QP #"));
	/* Nothing posted: wrs[0] failed (issue 17: *n_posted is written). */
	CHILD_CHECK(rv_qp_post_send(qp, &sw, 1, &posted) == -EPERM && posted == 0);
	CHILD_CHECK(strstr(rv_error_last(), "rv_qp_post_send: QP #"));
	CHILD_CHECK(rv_qp_post_recv(qp, &(rv_recv_wr){.sg_list = &g, .num_sge = 1}, 1, NULL) == -EPERM);
	CHILD_CHECK(rv_cq_poll(cq, &wc, 1) == -EPERM);
	CHILD_CHECK(mock.n_post_send == 0 && mock.n_poll == 0);
	CHILD_CHECK(mock.n_log == 0);
	/* Its own context works. */
	CHILD_CHECK(mock_device_new("mock2", &d) == 0);
	CHILD_CHECK(rv_context_new(d, NULL, &c) == 0);
	CHILD_CHECK(rv_pd_new(c, NULL, &p2) == 0);
	CHILD_CHECK(rv_cq_new(c, NULL, &c2) == 0);
	CHILD_CHECK(rv_cq_poll(c2, &wc, 1) == 0 && mock.n_poll == 1);
	/* Its own QP posts: in a fork child every handle takes the complete
	 * check (rv_obj_live_words are zeroed there), which lets its own pass. */
	qa.send_cq = c2;
	CHILD_CHECK(rv_qp_new(p2, &qa, &q2) == 0);
	CHILD_CHECK(rv_qp_post_send(q2, &sw, 1, NULL) == 0 && mock.n_post_send == 1);
	CHILD_CHECK(rv_qp_post_send(q2, &sw, 1, &posted) == 0 && posted == 1);
	CHILD_CHECK(rv_qp_post_recv(q2, &(rv_recv_wr){.sg_list = &g, .num_sge = 1}, 1, NULL) == 0);
	rv_qp_unref(q2);
	rv_cq_unref(c2);
	rv_pd_unref(p2);
	CHILD_CHECK(rv_context_close(c) == 0);
	rv_context_unref(c);
	rv_device_unref(d);
	return 0;
}

static void test_fork__child_gets_a_clear_error_and_the_parent_keeps_working(void **state)
{
	rv_pool *pool = new_pool(4096, 64 * 1024, MiB, 4);
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	rv_pool_buf *b;
	rv_mr *mr = NULL;
	rv_cq *cq;
	rv_qp *qp;
	rv_wc wc;
	volatile char *mem;
	int st;
	pid_t pid;

	(void)state;
	assert_int_equal(rv_mr_alloc(pd, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	mem = rv_mr_addr(mr);
	mem[0] = 'p';
	assert_int_equal(rv_pool_get(pool, 1, &b), 0);
	assert_int_equal(rv_cq_new(ctx, NULL, &cq), 0);
	qa.send_cq = cq;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fork_child(mr, pool, qp, cq));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	/* Memory rverbs allocated is not mapped in a child (MADV_DONTFORK). */
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		_exit(mem[0] == 'p' ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);

	/* The parent is untouched. */
	assert_int_equal(mem[0], 'p');
	assert_true(rv_mr_lkey(mr) != 0);
	assert_int_equal(rv_pool_put(pool, b), 0);
	assert_int_equal(rv_pool_get(pool, 1, &b), 0);
	assert_int_equal(rv_pool_put(pool, b), 0);
	assert_int_equal(rv_cq_poll(cq, &wc, 1), 0);
	qp = rv_qp_unref(qp);
	cq = rv_cq_unref(cq);
	mr = rv_mr_unref(mr);
	pool = rv_pool_unref(pool);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_memory__alloc_default_is_aligned_zeroed_and_reports_its_placement),
		T(test_memory__alloc_rejects_unknown_bits_pages_nodes_and_flags),
		T(test_memory__huge_2m_without_configured_pages_falls_back_visibly),
		T(test_memory__huge_strict_without_pages_is_enomem_and_registers_nothing),
		T(test_memory__huge_1g_falls_back_down_the_chain),
		T(test_memory__thp_request_reports_what_the_kernel_gave),
		T(test_memory__huge_2m_success_with_pages_reserved_as_root),
		T(test_memory__numa_node_that_does_not_exist_falls_back_or_fails_strictly),
		T(test_memory__numa_node_0_binds_or_says_why_not),
		T(test_memory__default_node_is_the_devices_from_sysfs),
		T(test_memory__caller_memory_reports_page_size_and_unknown_node),
		T(test_memory__memlock_limit_reached_is_explained),
		T(test_pool__default_classes_and_a_buffer_fills_an_sge),
		T(test_pool__grows_by_chunks_to_its_bound_then_exhaustion_is_enomem),
		T(test_pool__thread_cache_serves_without_the_lock),
		T(test_pool__bad_arguments_are_einval),
		T(test_pool__closing_the_pd_closes_the_pool_first),
		T(test_pool__failed_chunk_deregistration_keeps_the_close_retryable),
		T(test_pool__preallocated_chunks_are_registered_at_creation),
		T(test_pool__many_threads_get_and_put_concurrently),
		T(test_pool__a_thread_that_exits_gives_its_cache_back),
		T(test_pool__more_pools_than_thread_slots_lose_no_buffer),
		T(test_cache__hits_misses_eviction_and_invalidation),
		T(test_cache__closed_pd_drops_its_entries),
		T(test_fork__child_gets_a_clear_error_and_the_parent_keeps_working),
#undef T
	};

	/* The huge-page cases read and change vm.nr_hugepages: one run at a time
	 * on this machine, whichever build directory it comes from. */
	int lock = open("/tmp/rverbs-test-hugepages.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (lock >= 0)
		flock(lock, LOCK_EX);
	return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
