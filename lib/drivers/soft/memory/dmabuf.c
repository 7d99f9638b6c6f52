/*
 * dma-buf registration on the software device (rv_mr_reg_dmabuf).
 *
 * soft0 reaches registered memory with the CPU, and its MRs have no address
 * translation (an MR's addresses are where its bytes are in this process).
 * So a dma-buf is registered by mapping it at the MR's iova itself:
 * mmap(iova, MAP_SHARED | MAP_FIXED_NOREPLACE) of the buffer at the offset.
 * That needs an exporter that lets the CPU map the buffer (-EOPNOTSUPP
 * otherwise, with the exporter's error), an iova and an offset aligned to
 * the page, and nothing else of this process in the range (-EINVAL naming
 * it). The mapping is soft0's own: copies use memcpy on it (trusted), and it
 * goes with the MR (mr.c's soft_mr_dereg unmaps it after the unhook).
 *
 * Never blocks beyond mmap; takes no lock of its own.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "drivers/soft/soft.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17 */
#endif

int soft_mr_reg_dmabuf(struct rv_mr *mr, uint64_t offset, int fd)
{
	uint64_t iova = (uint64_t)(uintptr_t)mr->addr;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	int prot = PROT_READ | (mr->access & RV_ACCESS_LOCAL_WRITE ? PROT_WRITE : 0);
	void *map;
	int rc, err;

	if (iova % page || offset % page || iova == 0)
		return rv_err(EINVAL, "rv_mr_reg_dmabuf", "soft0 maps the dma-buf at the iova itself, so iova "
			      "0x%llx and offset %llu must be nonzero multiples of the page size (%llu)",
			      (unsigned long long)iova, (unsigned long long)offset, (unsigned long long)page);
	map = mmap(mr->addr, mr->length, prot, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (off_t)offset);
	if (map == MAP_FAILED) {
		err = errno;
		if (err == EEXIST)
			return rv_err(EINVAL, "rv_mr_reg_dmabuf", "the range [0x%llx, +%zu) holds other memory of "
				      "this process; soft0 maps the dma-buf at the iova itself: pass a free, "
				      "page-aligned iova (one mmap(PROT_NONE) then munmap gives one)",
				      (unsigned long long)iova, mr->length);
		rv_err(EOPNOTSUPP, "rv_mr_reg_dmabuf", "mapping the dma-buf (%zu bytes at offset %llu) for the "
		       "CPU failed: %s", mr->length, (unsigned long long)offset, strerror(err));
		rv_err_hint("soft0 reaches memory with the CPU, so the exporter must let it map the buffer "
			    "(and offset + length lie inside it)");
		return -EOPNOTSUPP;
	}
	if (map != mr->addr) { /* a kernel before 4.17 took MAP_FIXED_NOREPLACE as a hint */
		munmap(map, mr->length);
		return rv_err(EINVAL, "rv_mr_reg_dmabuf", "the kernel would not map the dma-buf at iova 0x%llx; "
			      "pass a free, page-aligned iova", (unsigned long long)iova);
	}
	rc = soft_mr_reg_mapped(mr, true, map);
	if (rc < 0)
		munmap(map, mr->length);
	return rc;
}
