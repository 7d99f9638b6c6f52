/*
 * Memory placement and the memlock account (see memory.h).
 *
 * Placement never depends on libnuma: nodes come from sysfs, binding is the
 * mbind(2) system call and the node of a page get_mempolicy(2). A fallback is
 * never silent: it is logged and handed back to the caller as text.
 * Nothing here runs on the data path.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/mman.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memory.h"

#define SZ_2M ((size_t)2 << 20)
#define SZ_1G ((size_t)1 << 30)

/* From <linux/mempolicy.h>, spelled out so that no NUMA header is needed. */
#define RV_MPOL_PREFERRED 1
#define RV_MPOL_BIND 2
#define RV_MPOL_F_NODE (1u << 0)
#define RV_MPOL_F_ADDR (1u << 1)
#define RV_MAX_NODES 1024

/* <linux/memfd.h>'s, which encode the size as MAP_HUGE_* do. */
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB MAP_HUGE_2MB
#define MFD_HUGE_1GB MAP_HUGE_1GB
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

size_t rv_mem_page_size(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static int read_long(const char *path, long *ret)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%ld", ret) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

/* A path under sysfs. RVERBS_SYSFS_ROOT replaces /sys for the NUMA topology
 * and the devices' nodes (a test aid, like `rverbs doctor --root`); huge page
 * and THP settings are always the kernel's own. */
static int sysfs_root_fmt(char *buf, size_t len, const char *fmt, ...) RV_PRINTF(3, 4);
static int sysfs_root_fmt(char *buf, size_t len, const char *fmt, ...)
{
	const char *root = getenv("RVERBS_SYSFS_ROOT");
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s", root && *root ? root : "/sys");
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return m < 0 || (size_t)m >= len - (size_t)n ? -ENAMETOOLONG : 0;
}

/* The online NUMA nodes as a count and a printable list ("0-1"). */
static int online_nodes(char *list, size_t len)
{
	char path[512];
	FILE *f = NULL;
	int n = 0, a, b;
	char c;

	snprintf(list, len, "?");
	if (sysfs_root_fmt(path, sizeof(path), "/devices/system/node/online") == 0)
		f = fopen(path, "re");
	if (!f)
		return 1; /* no NUMA in this kernel: one node */
	if (!fgets(list, (int)len, f)) {
		fclose(f);
		return 1;
	}
	fclose(f);
	list[strcspn(list, "\n")] = '\0';
	for (const char *p = list; *p;) {
		int k = sscanf(p, "%d%c%d", &a, &c, &b);
		if (k == 3 && c == '-')
			n += b - a + 1;
		else if (k >= 1)
			n++;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return n > 0 ? n : 1;
}

static bool node_exists(int node)
{
	char path[512];

	if (sysfs_root_fmt(path, sizeof(path), "/devices/system/node/node%d", node) < 0)
		return false;
	return access(path, F_OK) == 0;
}

/* The device's node from sysfs, or -1 (the software device, no NUMA). */
static int device_node(const struct rv_context *ctx)
{
	char path[512];
	long node;

	if (ctx->dev->kind != RV_DEVICE_VERBS)
		return -1;
	if (sysfs_root_fmt(path, sizeof(path), "/class/infiniband/%s/device/numa_node", ctx->dev->name) < 0 ||
	    read_long(path, &node) < 0 || node < 0 || node >= RV_MAX_NODES)
		return -1;
	return (int)node;
}

static long sys_mbind(void *addr, size_t len, int mode, int node)
{
	unsigned long mask[RV_MAX_NODES / (8 * sizeof(unsigned long))] = {0};

	mask[(size_t)node / (8 * sizeof(unsigned long))] |= 1ul << ((size_t)node % (8 * sizeof(unsigned long)));
	return syscall(SYS_mbind, addr, len, mode, mask, (unsigned long)RV_MAX_NODES + 1, 0ul);
}

static int node_of(void *addr)
{
	int node = -1;

	if (syscall(SYS_get_mempolicy, &node, NULL, 0ul, addr, (unsigned long)(RV_MPOL_F_NODE | RV_MPOL_F_ADDR)) < 0)
		return -1;
	return node;
}

/* Bytes of transparent huge pages backing the mapping that starts at addr. */
static size_t thp_bytes(const void *addr)
{
	char line[256], start[32];
	size_t kb = 0;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return 0;
	snprintf(start, sizeof(start), "%" PRIxPTR "-", (uintptr_t)addr);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = strncmp(line, start, strlen(start)) == 0;
		} else if (in && sscanf(line, "AnonHugePages: %zu kB", &kb) == 1) {
			break;
		}
	}
	fclose(f);
	return kb * 1024;
}

static bool thp_enabled(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strstr(buf, "[never]") == NULL && buf[0];
}

static void add_fallback(struct rv_mem *m, const char *fmt, ...) RV_PRINTF(2, 3);
static void add_fallback(struct rv_mem *m, const char *fmt, ...)
{
	size_t n = strlen(m->fallback);
	va_list ap;

	if (n && n + 3 < sizeof(m->fallback)) {
		memcpy(m->fallback + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(m->fallback + n, sizeof(m->fallback) - n, fmt, ap);
	va_end(ap);
}

/* Why hugetlbfs pages of size sz are not there, for the message. */
static void hugetlb_why(size_t sz, char *buf, size_t len)
{
	char path[128];
	long total = -1, free_pages = -1;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%zukB/nr_hugepages", sz >> 10);
	read_long(path, &total);
	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%zukB/free_hugepages", sz >> 10);
	read_long(path, &free_pages);
	if (total < 0)
		snprintf(buf, len, "this kernel has no %s huge page pool", sz == SZ_1G ? "1 GiB" : "2 MiB");
	else if (total == 0)
		snprintf(buf, len, "none are configured (%s: `sysctl vm.nr_hugepages=N`%s)",
			 sz == SZ_1G ? "reserve them at boot with hugepagesz=1G hugepages=N" : "raise with",
			 sz == SZ_1G ? "" : " as root");
	else
		snprintf(buf, len, "%ld of %ld are free, too few for the request", free_pages, total);
}

static void *map_hugetlb(size_t len, size_t sz)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (sz == SZ_1G ? MAP_HUGE_1GB : MAP_HUGE_2MB);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A sealed memfd of len bytes mapped MAP_SHARED (rv_mem_req.shareable): the
 * same zeroed pages an anonymous mapping gives, which a driver may hand to a
 * verified same-host peer. F_SEAL_SHRINK | F_SEAL_GROW: the size is fixed, so
 * a peer that maps it never takes SIGBUS and we never see it grow. hugetlb:
 * 0, or the MFD_HUGE_* size. NULL (and no message) when the kernel refuses:
 * the caller maps anonymous memory as before.
 */
static void *map_memfd(size_t len, size_t hugetlb, int *fd_out)
{
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	void *p;
	int fd;

	if (hugetlb)
		flags |= MFD_HUGETLB | (hugetlb == SZ_1G ? MFD_HUGE_1GB : MFD_HUGE_2MB);
	fd = memfd_create("rverbs-mr", flags);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)len) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	*fd_out = fd;
	return p;
}

static void *map_hugetlb_req(size_t len, size_t sz, bool shareable, int *fd)
{
	void *p = shareable ? map_memfd(len, sz, fd) : NULL;

	return p ? p : map_hugetlb(len, sz);
}

/* Normal pages, aligned to 2 MiB when align is set (so THP can back them). */
static void *map_normal(size_t len, bool align)
{
	size_t extra = align ? SZ_2M : 0;
	char *p = mmap(NULL, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	if (!extra)
		return p;
	a = round_up((uintptr_t)p, SZ_2M);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	if ((uintptr_t)p + extra > a)
		munmap((char *)a + len, (uintptr_t)p + extra - a);
	return (void *)a;
}

static void populate(void *addr, size_t len, size_t step)
{
	if (madvise(addr, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < len; off += step)
		((volatile char *)addr)[off] = 0;
}

static const char *page_name(size_t sz)
{
	return sz == SZ_1G ? "1 GiB huge pages" : sz == SZ_2M ? "2 MiB huge pages" : "normal pages";
}

/* Map with the page size req asks for, falling back down the chain. */
static int map_pages(size_t length, const struct rv_mem_req *req, struct rv_mem *m, const char *func)
{
	size_t page = rv_mem_page_size();
	bool strict = req->flags & RV_MEM_STRICT;
	bool want_thp;
	char why[160];

	if (req->page == RV_MEM_PAGE_HUGE_1G) {
		size_t len = round_up(length, SZ_1G);
		if ((m->addr = map_hugetlb_req(len, SZ_1G, req->shareable, &m->fd))) {
			m->length = len;
			m->page_size = SZ_1G;
			m->hugetlb = true;
			return 0;
		}
		hugetlb_why(SZ_1G, why, sizeof(why));
		if (strict)
			return rv_err(ENOMEM, func, "no 1 GiB huge pages for %zu bytes: %s", length, why);
		add_fallback(m, "1 GiB huge pages unavailable (%s)", why);
	}
	if (req->page == RV_MEM_PAGE_HUGE_1G || req->page == RV_MEM_PAGE_HUGE_2M ||
	    (req->page == RV_MEM_PAGE_DEFAULT && length >= SZ_2M)) {
		size_t len = round_up(length, SZ_2M);
		if ((m->addr = map_hugetlb_req(len, SZ_2M, req->shareable, &m->fd))) {
			m->length = len;
			m->page_size = SZ_2M;
			m->hugetlb = true;
			return 0;
		}
		hugetlb_why(SZ_2M, why, sizeof(why));
		if (strict)
			return rv_err(ENOMEM, func, "no 2 MiB huge pages for %zu bytes: %s", length, why);
		add_fallback(m, "2 MiB huge pages unavailable (%s)", why);
	}
	want_thp = req->page != RV_MEM_PAGE_NORMAL && (req->page != RV_MEM_PAGE_DEFAULT || length >= SZ_2M);
	if (want_thp && req->page == RV_MEM_PAGE_DEFAULT && req->shareable && req->share_over_thp) {
		size_t len = round_up(length, page);
		if ((m->addr = map_memfd(len, 0, &m->fd))) {
			m->length = len;
			m->page_size = page;
			return 0;
		}
	}
	if (want_thp && !thp_enabled()) {
		if (strict)
			return rv_err(ENOMEM, func, "no huge pages for %zu bytes: transparent huge pages are disabled "
				      "(/sys/kernel/mm/transparent_hugepage/enabled)", length);
		add_fallback(m, "transparent huge pages are disabled");
		want_thp = false;
	}
	m->length = round_up(length, want_thp ? SZ_2M : page);
	/* shmem's transparent huge pages follow their own switch
	 * (shmem_enabled), usually "never": memory that wants THP stays
	 * anonymous rather than lose them to a memfd. */
	if (req->shareable && !want_thp && (m->addr = map_memfd(m->length, 0, &m->fd))) {
		m->page_size = page;
		return 0;
	}
	m->addr = map_normal(m->length, want_thp);
	if (!m->addr)
		return rv_err(ENOMEM, func, "mapping %zu bytes failed: %s", m->length, strerror(errno));
	m->page_size = page;
	if (want_thp && madvise(m->addr, m->length, MADV_HUGEPAGE) < 0) {
		if (strict) {
			munmap(m->addr, m->length);
			m->addr = NULL;
			return rv_err(ENOMEM, func, "madvise(MADV_HUGEPAGE) failed: %s", strerror(errno));
		}
		add_fallback(m, "madvise(MADV_HUGEPAGE) failed (%s)", strerror(errno));
		want_thp = false;
	}
	if (want_thp)
		m->page_size = SZ_2M; /* confirmed or corrected after populating */
	return 0;
}

static int place(struct rv_context *ctx, const struct rv_mem_req *req, struct rv_mem *m, const char *func)
{
	bool strict = req->flags & RV_MEM_STRICT;
	char nodes[64];
	int n_nodes = online_nodes(nodes, sizeof(nodes));
	int node = req->node;

	if (node == RV_MEM_NODE_ANY)
		return 0;
	if (node == RV_MEM_NODE_DEVICE) {
		node = device_node(ctx);
		if (node < 0 || n_nodes <= 1)
			return 0; /* no node to prefer, or nothing to choose from */
		if (sys_mbind(m->addr, m->length, RV_MPOL_PREFERRED, node) < 0)
			add_fallback(m, "preferring the device's NUMA node %d failed (mbind: %s)", node, strerror(errno));
		return 0;
	}
	if (node >= RV_MAX_NODES || !node_exists(node)) {
		if (strict)
			return rv_err(EINVAL, func, "NUMA node %d does not exist (online nodes: %s)", node, nodes);
		add_fallback(m, "NUMA node %d does not exist (online nodes: %s), memory is not bound", node, nodes);
		return 0;
	}
	if (sys_mbind(m->addr, m->length, RV_MPOL_BIND, node) < 0) {
		int e = errno;
		if (strict)
			return rv_err(ENOMEM, func, "binding to NUMA node %d failed: mbind: %s", node, strerror(e));
		add_fallback(m, "binding to NUMA node %d failed (mbind: %s), memory is not bound", node, strerror(e));
	}
	return 0;
}

int rv_mem_map(struct rv_context *ctx, size_t length, const struct rv_mem_req *req, struct rv_mem *ret,
	       const char *func)
{
	struct rv_mem m;
	int rc;

	memset(&m, 0, sizeof(m));
	m.node = -1;
	m.fd = -1;
	if (length > SIZE_MAX - SZ_1G)
		return rv_err(EINVAL, func, "length %zu is too large", length);
	rc = map_pages(length, req, &m, func);
	if (rc < 0)
		return rc;
	rc = place(ctx, req, &m, func);
	if (rc < 0) {
		rv_mem_unmap(&m);
		return rc;
	}
	/* Registered memory must not be shared copy-on-write with a child:
	 * after fork the parent's writes would go to pages the device no
	 * longer maps (what ibv_fork_init() does for registered ranges). */
	if (madvise(m.addr, m.length, MADV_DONTFORK) < 0)
		add_fallback(&m, "madvise(MADV_DONTFORK) failed (%s): a fork child shares this memory", strerror(errno));
	populate(m.addr, m.length, m.page_size);
	if (!m.hugetlb && m.page_size == SZ_2M) {
		/* hugetlbfs pages are certain; THP are whatever the kernel gave. */
		size_t thp = thp_bytes(m.addr);
		if (thp < m.length) {
			add_fallback(&m, "transparent huge pages back %zu of %zu bytes", thp, m.length);
			if (thp == 0)
				m.page_size = rv_mem_page_size();
		}
	}
	m.node = node_of(m.addr);
	if (m.node < 0) {
		char nodes[64];
		if (online_nodes(nodes, sizeof(nodes)) == 1)
			m.node = (int)strtol(nodes, NULL, 10);
	}
	if (m.fallback[0]) {
		bool explicit = req->page != RV_MEM_PAGE_DEFAULT || req->node >= 0;
		rv_log(req->quiet ? RV_LOG_DEBUG : explicit ? RV_LOG_WARN : RV_LOG_INFO,
		       "%s: %zu bytes on %s, node %d: %s", func, m.length, page_name(m.page_size), m.node, m.fallback);
	}
	*ret = m;
	return 0;
}

void rv_mem_unmap(struct rv_mem *mem)
{
	/* fd is only meaningful for memory rv_mem_map gave (a zeroed struct has 0). */
	if (mem->addr) {
		munmap(mem->addr, mem->length);
		if (mem->fd >= 0)
			close(mem->fd);
	}
	mem->addr = NULL;
	mem->fd = -1;
}

void rv_mem_report_fallback(const struct rv_mem *mem, const char *func)
{
	if (mem->fallback[0])
		rv_err(ENOMEM, func, "fell back to %s (node %d): %s", page_name(mem->page_size), mem->node,
		       mem->fallback);
}

/* ---- the memlock account ---- */

static pthread_mutex_t memlock_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool memlock_read;
static struct rlimit memlock_limit;
static bool memlock_capable; /* CAP_IPC_LOCK: the kernel ignores the limit */
static size_t memlock_used;  /* bytes registered through rverbs on pinning devices */
static pthread_once_t memlock_once = PTHREAD_ONCE_INIT;

#define RV_CAP_IPC_LOCK 14

/* A fork child is a new process: its limit and account start afresh (its
 * inherited registrations are not its own). */
static void memlock_forget(void)
{
	memlock_read = false;
	memlock_used = 0;
	pthread_mutex_init(&memlock_mutex, NULL);
}

static void memlock_arm(void)
{
	pthread_atfork(NULL, NULL, memlock_forget);
}

static void memlock_read_once(void)
{
	char line[256];
	FILE *f;

	if (memlock_read)
		return;
	memlock_read = true;
	if (getrlimit(RLIMIT_MEMLOCK, &memlock_limit) < 0)
		memlock_limit.rlim_cur = memlock_limit.rlim_max = RLIM_INFINITY;
	memlock_capable = false;
	if ((f = fopen("/proc/self/status", "re"))) {
		unsigned long long caps;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &caps) == 1)
				memlock_capable = caps & (1ull << RV_CAP_IPC_LOCK);
		fclose(f);
	}
}

bool rv_memlock_applies(const struct rv_context *ctx)
{
	return ctx->dev->kind == RV_DEVICE_VERBS;
}

static void fmt_bytes(char *buf, size_t len, unsigned long long n)
{
	if (n >= (1ull << 20) && n % (1ull << 20) == 0)
		snprintf(buf, len, "%llu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%llu KiB", n >> 10);
	else
		snprintf(buf, len, "%llu bytes", n);
}

/* before: the account refused (else the driver failed with ENOMEM). */
static void memlock_message(const char *func, size_t bytes, size_t used, bool before)
{
	char lim[32], req[32], in_use[32];

	fmt_bytes(lim, sizeof(lim), (unsigned long long)memlock_limit.rlim_cur);
	fmt_bytes(req, sizeof(req), (unsigned long long)bytes);
	fmt_bytes(in_use, sizeof(in_use), (unsigned long long)used);
	if (before)
		rv_err(ENOMEM, func, "registering %s would exceed the locked-memory limit (RLIMIT_MEMLOCK, ulimit -l) "
		       "of %s: %s are registered through rverbs already", req, lim, in_use);
	else
		rv_err(ENOMEM, func, "registering %s failed: the locked-memory limit (RLIMIT_MEMLOCK, ulimit -l) is %s, "
		       "%s are registered through rverbs already%s", req, lim, in_use,
		       memlock_capable ? " (this process has CAP_IPC_LOCK, so the limit is likely not the cause)" : "");
	rv_err_hint("raise it with `ulimit -l unlimited` (hard limit %s%s), `prlimit --memlock=unlimited --pid %d`, "
		    "or a `* - memlock unlimited` line in /etc/security/limits.conf",
		    memlock_limit.rlim_max == RLIM_INFINITY ? "unlimited" : "set", memlock_limit.rlim_max == RLIM_INFINITY ? "" : "; raising it past that needs root",
		    (int)getpid());
}

int rv_memlock_reserve(size_t bytes, const char *func)
{
	size_t page = rv_mem_page_size();
	int rc = 0;

	bytes = round_up(bytes, page);
	pthread_once(&memlock_once, memlock_arm); /* before the lock a fork could copy */
	pthread_mutex_lock(&memlock_mutex);
	memlock_read_once();
	if (!memlock_capable && memlock_limit.rlim_cur != RLIM_INFINITY &&
	    (bytes > memlock_limit.rlim_cur || memlock_used > memlock_limit.rlim_cur - bytes)) {
		memlock_message(func, bytes, memlock_used, true);
		rc = -ENOMEM;
	} else {
		memlock_used += bytes;
	}
	pthread_mutex_unlock(&memlock_mutex);
	return rc;
}

void rv_memlock_unreserve(size_t bytes)
{
	bytes = round_up(bytes, rv_mem_page_size());
	pthread_mutex_lock(&memlock_mutex);
	memlock_used -= bytes < memlock_used ? bytes : memlock_used;
	pthread_mutex_unlock(&memlock_mutex);
}

void rv_memlock_explain(const char *func, size_t bytes)
{
	size_t used;

	pthread_once(&memlock_once, memlock_arm); /* before the lock a fork could copy */
	pthread_mutex_lock(&memlock_mutex);
	memlock_read_once();
	used = memlock_used;
	pthread_mutex_unlock(&memlock_mutex);
	if (memlock_limit.rlim_cur == RLIM_INFINITY)
		return;
	memlock_message(func, round_up(bytes, rv_mem_page_size()), used, false);
}
