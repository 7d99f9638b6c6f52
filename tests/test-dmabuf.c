/*
 * dma-buf registration (rv_mr_reg_dmabuf) with a real dma-buf: a dumb
 * buffer of the kernel's vgem driver, exported with PRIME. Without vgem
 * (no /dev/dri card named "vgem", and `modprobe vgem` does not make one)
 * the whole test skips with exit 77; scripts/vm has it.
 *
 * soft0: the dma-buf registered at a free iova is what an RDMA WRITE of a
 * peer lands in and an RDMA READ takes from (seen through a second mapping
 * of the same buffer); a misaligned iova, an occupied iova range and a
 * re-registration are refused by name; closing the MR unmaps soft0's
 * mapping. Every libibverbs device: registered, or refused with -EOPNOTSUPP
 * and a reason.
 *
 * The DRM ioctls are the kernel's uapi (include/uapi/drm/drm.h,
 * drm_mode.h); their structures are written out here because the build
 * host need not have the DRM headers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <rverbs/rverbs.h>

#include "soft-pair.h"

struct drm_version_uapi {
	int version_major, version_minor, version_patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct drm_mode_create_dumb_uapi {
	uint32_t height, width, bpp, flags;
	uint32_t handle, pitch;
	uint64_t size;
};

struct drm_prime_handle_uapi {
	uint32_t handle;
	uint32_t flags;
	int32_t fd;
};

#define DRM_IOCTL_VERSION_ _IOWR('d', 0x00, struct drm_version_uapi)
#define DRM_IOCTL_PRIME_HANDLE_TO_FD_ _IOWR('d', 0x2d, struct drm_prime_handle_uapi)
#define DRM_IOCTL_MODE_CREATE_DUMB_ _IOWR('d', 0xB2, struct drm_mode_create_dumb_uapi)

#define DMABUF_LEN (64u * 1024u) /* 128 x 128 pixels of 32 bits */

static int vgem_fd = -1;
static char why_none[256];

/* The vgem card, if /dev/dri has one. */
static int find_vgem(void)
{
	DIR *d = opendir("/dev/dri");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	while (found < 0 && (e = readdir(d))) {
		char path[300], name[32] = "";
		struct drm_version_uapi v;
		int fd;

		if (strncmp(e->d_name, "card", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (ioctl(fd, DRM_IOCTL_VERSION_, &v) == 0 && strcmp(name, "vgem") == 0)
			found = fd;
		else
			close(fd);
	}
	closedir(d);
	return found;
}

static bool open_vgem(void)
{
	vgem_fd = find_vgem();
	if (vgem_fd < 0 && geteuid() == 0 && system("modprobe vgem >/dev/null 2>&1") == 0) {
		for (int i = 0; i < 20 && vgem_fd < 0; i++) {
			usleep(50000); /* udev or devtmpfs makes the node */
			vgem_fd = find_vgem();
		}
	}
	if (vgem_fd < 0)
		snprintf(why_none, sizeof(why_none), "no vgem card in /dev/dri (and modprobe vgem %s)",
			 geteuid() == 0 ? "made none" : "needs root");
	return vgem_fd >= 0;
}

/* A new dma-buf of DMABUF_LEN bytes (its fd, read-write). */
static int new_dmabuf(void)
{
	struct drm_mode_create_dumb_uapi c = {.height = 128, .width = 128, .bpp = 32};
	struct drm_prime_handle_uapi h;

	assert_int_equal(ioctl(vgem_fd, DRM_IOCTL_MODE_CREATE_DUMB_, &c), 0);
	assert_true(c.size >= DMABUF_LEN);
	memset(&h, 0, sizeof(h));
	h.handle = c.handle;
	h.flags = O_CLOEXEC | O_RDWR;
	assert_int_equal(ioctl(vgem_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD_, &h), 0);
	return h.fd;
}

/* The identity ("device inode") of the mapping that covers addr in
 * /proc/self/maps, or "" where nothing is mapped there. */
static void mapping_at(uint64_t addr, char *ident, size_t n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	assert_non_null(f);
	ident[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, ino;
		char dev[32];

		if (sscanf(line, "%llx-%llx %*s %*s %31s %llu", &lo, &hi, dev, &ino) == 4 && addr >= lo &&
		    addr < hi) {
			snprintf(ident, n, "%s %llu", dev, ino);
			break;
		}
	}
	fclose(f);
}

/* A page-aligned address range with nothing mapped in it (just now). */
static uint64_t free_iova(size_t len)
{
	void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	munmap(p, len);
	return (uint64_t)(uintptr_t)p;
}

static void test_dmabuf__soft0_write_and_read_through_a_vgem_buffer(void **state)
{
	struct side a, b;
	int fd = new_dmabuf();
	uint8_t *view = mmap(NULL, DMABUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint64_t iova;
	int rc;
	rv_mr *dm = NULL, *bad = NULL;
	rv_sge g;
	rv_wc wc;
	char view_ident[64], here[64];

	(void)state;
	assert_true(view != MAP_FAILED);
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	iova = free_iova(DMABUF_LEN); /* after every other mapping of the test */

	/* Refused by name: a misaligned iova, a range other memory holds. */
	assert_int_equal(rv_mr_reg_dmabuf(b.pd, 0, DMABUF_LEN, iova + 8, fd, RV_ACCESS_ALL_REMOTE, &bad), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "multiples of the page size"));
	assert_int_equal(rv_mr_reg_dmabuf(b.pd, 0, DMABUF_LEN, (uint64_t)(uintptr_t)view, fd, RV_ACCESS_ALL_REMOTE,
					  &bad),
			 -EINVAL);
	assert_non_null(strstr(rv_error_last(), "holds other memory"));
	assert_null(bad);

	rc = rv_mr_reg_dmabuf(b.pd, 0, DMABUF_LEN, iova, fd, RV_ACCESS_ALL_REMOTE, &dm);
	if (rc != 0)
		fail_msg("rv_mr_reg_dmabuf: %d %s", rc, rv_error_last());
	close(fd); /* the MR keeps what it needs */
	assert_int_equal((uint64_t)(uintptr_t)rv_mr_addr(dm), iova);
	assert_int_equal(rv_mr_rereg(dm, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_LOCAL_WRITE), -EOPNOTSUPP);

	/* A's WRITE lands in the dma-buf, seen through the other mapping. */
	fill(a.buf, 4096, 7);
	g = sge(&a, 0, 4096);
	assert_int_equal(rv_qp_write(a.qp, &g, iova + 8192, rv_mr_rkey(dm), 1), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_memory_equal(view + 8192, a.buf, 4096);
	/* And a READ takes what the exporter's side wrote. */
	memset(view + 100, 0x5c, 300);
	g = sge(&a, 20000, 300);
	assert_int_equal(rv_qp_read(a.qp, &g, iova + 100, rv_mr_rkey(dm), 2), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	for (int i = 0; i < 300; i++)
		assert_int_equal(a.buf[20000 + i], 0x5c);
	/* B's own SGEs use the iova and the lkey as well. */
	g = (rv_sge){.addr = iova + 8192, .length = 64, .lkey = rv_mr_lkey(dm)};
	assert_int_equal(rv_qp_write(b.qp, &g, (uint64_t)(uintptr_t)a.buf + 40000, rv_mr_rkey(a.mr), 3), 0);
	wc = poll_one(b.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_memory_equal(a.buf + 40000, view + 8192, 64);

	/* Closing the MR unmaps soft0's mapping: no page of the range is the
	 * dma-buf any more. (Not "the range is free": a progress thread may map
	 * something of its own there at once, a peer's grant for one.) */
	mapping_at((uint64_t)(uintptr_t)view, view_ident, sizeof(view_ident));
	assert_true(view_ident[0] != '\0');
	mapping_at(iova, here, sizeof(here));
	assert_string_equal(here, view_ident);
	assert_int_equal(rv_mr_close(dm), 0);
	rv_mr_unref(dm);
	for (size_t off = 0; off < DMABUF_LEN; off += 4096) {
		mapping_at(iova + off, here, sizeof(here));
		assert_string_not_equal(here, view_ident);
	}
	munmap(view, DMABUF_LEN);
	side_close(&a);
	side_close(&b);
}

static void test_dmabuf__every_libibverbs_device_registers_or_says_why_not(void **state)
{
	rv_device **list;
	size_t n, tried = 0;

	(void)state;
	assert_int_equal(rv_device_list(&list, &n), 0);
	for (size_t i = 0; i < n; i++) {
		rv_context *ctx = NULL;
		rv_pd *pd = NULL;
		rv_mr *mr = NULL;
		int fd, rc;

		if (rv_device_kind_of(list[i]) != RV_DEVICE_VERBS || rv_context_new(list[i], NULL, &ctx) < 0)
			continue;
		assert_int_equal(rv_pd_new(ctx, NULL, &pd), 0);
		fd = new_dmabuf();
		rc = rv_mr_reg_dmabuf(pd, 0, DMABUF_LEN, 0, fd, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_READ, &mr);
		close(fd);
		if (rc == 0) {
			assert_int_not_equal(rv_mr_lkey(mr), 0);
			rv_mr_unref(mr);
		} else {
			assert_int_equal(rc, -EOPNOTSUPP);
			assert_non_null(strstr(rv_error_last(), "dma-buf"));
			printf("# %s: %s\n", rv_device_name(list[i]), rv_error_last());
		}
		tried++;
		rv_pd_unref(pd);
		rv_context_close(ctx);
		rv_context_unref(ctx);
	}
	rv_device_list_free(list);
	if (!tried)
		skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dmabuf__soft0_write_and_read_through_a_vgem_buffer),
		cmocka_unit_test(test_dmabuf__every_libibverbs_device_registers_or_says_why_not),
	};
	int rc;

	if (!open_vgem()) {
		printf("SKIP: %s\n", why_none);
		return 77;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	close(vgem_fd);
	return rc;
}
