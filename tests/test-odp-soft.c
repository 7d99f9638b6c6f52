/*
 * On-demand paging on the software device, through the public API: implicit
 * ODP (one MR for the whole address space) taking a peer's RDMA WRITE and
 * READ into memory that was never registered on its own, a WRITE into an
 * address that is not mapped failing that work request (the process lives
 * on), a SEND from an unmapped address with the implicit lkey failing
 * locally, and rv_mr_advise: prefetch that really makes pages resident
 * (mincore), PREFETCH_NO_FAULT that does not, and each error
 * ibv_advise_mr(3) names. Exits 77 without soft0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "soft-pair.h"

#define ODP_ALL (RV_ACCESS_ON_DEMAND | RV_ACCESS_ALL_REMOTE)

/* soft-pair's side with its MR replaced by an implicit one (its buf unused). */
static void odp_side_open(struct side *s)
{
	side_open(s, 0, RV_ACCESS_LOCAL_WRITE);
	s->mr = rv_mr_unref(s->mr);
	s->buf = NULL;
	assert_int_equal(rv_mr_reg(s->pd, NULL, RV_MR_IMPLICIT_LENGTH, ODP_ALL, &s->mr), 0);
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A fresh anonymous mapping, never touched, never registered. */
static uint8_t *fresh(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/* An address no mapping can hold: above the user address space of every
 * 64-bit Linux (47 or 56 bits). A page mapped and then unmapped would do too,
 * but another mapping (soft0's, the allocator's) may take its place. */
static uint8_t *hole(void)
{
	return (uint8_t *)(uintptr_t)(UINT64_C(1) << 62);
}

/* A page that is mapped without any access (PROT_NONE). */
static uint8_t *guard_page(void)
{
	void *p = mmap(NULL, page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static unsigned resident_pages(const void *p, size_t len)
{
	unsigned char vec[64];
	size_t n = len / page_size();
	unsigned k = 0;

	assert_true(n <= sizeof(vec));
	assert_int_equal(mincore((void *)(uintptr_t)p, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		k += vec[i] & 1;
	return k;
}

static void test_odp_soft__device_reports_implicit_odp(void **state)
{
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_EX};
	struct side a;

	(void)state;
	odp_side_open(&a);
	assert_int_equal(rv_context_query_device(a.ctx, &da), 0);
	assert_true(da.odp_general_caps & RV_ODP_SUPPORT);
	assert_true(da.odp_general_caps & RV_ODP_SUPPORT_IMPLICIT);
	assert_true((da.odp_rc_caps & (RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_RECV | RV_ODP_SUPPORT_WRITE |
				       RV_ODP_SUPPORT_READ)) ==
		    (RV_ODP_SUPPORT_SEND | RV_ODP_SUPPORT_RECV | RV_ODP_SUPPORT_WRITE | RV_ODP_SUPPORT_READ));
	assert_null(rv_mr_addr(a.mr));
	assert_true(rv_mr_length(a.mr) == SIZE_MAX);
	assert_int_not_equal(rv_mr_rkey(a.mr), 0);
	side_close(&a);
}

/* b's implicit rkey reaches b's memory that no MR of its own names: a WRITE
 * lands in a fresh mapping, a READ returns another; a's side is implicit too
 * (the WRITE's source and the READ's sink go through a's implicit lkey). */
static void test_odp_soft__implicit_mr_takes_write_and_read_into_unregistered_memory(void **state)
{
	size_t len = 3 * page_size() + 100;
	uint8_t *src, *sink, *bdst, *bsrc;
	struct side a, b;
	rv_sge g;
	rv_wc wc;

	(void)state;
	odp_side_open(&a);
	odp_side_open(&b);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	src = fresh(4 * page_size());
	sink = fresh(4 * page_size());
	bdst = fresh(4 * page_size());
	bsrc = malloc(len);
	assert_non_null(bsrc);
	for (size_t i = 0; i < len; i++) {
		src[i] = (uint8_t)(i * 13 + 1);
		bsrc[i] = (uint8_t)(i * 7 + 5);
	}

	g = (rv_sge){.addr = (uint64_t)(uintptr_t)src, .length = (uint32_t)len, .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)bdst + 1, rv_mr_rkey(b.mr), 1), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_memory_equal(bdst + 1, src, len);
	assert_int_equal(bdst[0], 0);

	g = (rv_sge){.addr = (uint64_t)(uintptr_t)sink, .length = (uint32_t)len, .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_qp_read(a.qp, &g, (uint64_t)(uintptr_t)bsrc, rv_mr_rkey(b.mr), 2), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_memory_equal(sink, bsrc, len);

	free(bsrc);
	munmap(src, 4 * page_size());
	munmap(sink, 4 * page_size());
	munmap(bdst, 4 * page_size());
	side_close(&a);
	side_close(&b);
}

/* The implicit MR covers holes too: a WRITE into one (or into a page
 * without access) completes in error at the writer and the process goes on. */
static void write_fails(uint8_t *where, const char *what)
{
	uint8_t *src = fresh(page_size());
	struct side a, b;
	rv_sge g;
	rv_wc wc;

	odp_side_open(&a);
	odp_side_open(&b);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	memset(src, 0xab, 64);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)src, .length = 64, .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_qp_write(a.qp, &g, (uint64_t)(uintptr_t)where, rv_mr_rkey(b.mr), 7), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 7);
	assert_int_not_equal(wc.status, RV_WC_SUCCESS);
	print_message("WRITE into %s: %s\n", what, rv_wc_status_str(wc.status));
	assert_int_equal(src[0], 0xab);
	munmap(src, page_size());
	side_close(&a);
	side_close(&b);
}

static void test_odp_soft__write_into_an_unmapped_address_fails_the_wr_not_the_process(void **state)
{
	uint8_t *guard = guard_page();

	(void)state;
	write_fails(hole(), "an address nothing maps");
	write_fails(guard, "a PROT_NONE page");
	munmap(guard, page_size());
}

/* The process's own SEND from a hole through the implicit lkey: a local
 * error completion, never a signal. */
static void test_odp_soft__send_from_an_unmapped_address_fails_locally(void **state)
{
	uint8_t *gap = hole();
	struct side a, b;
	rv_sge g;
	rv_wc wc;

	(void)state;
	odp_side_open(&a);
	odp_side_open(&b);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)gap, .length = 64, .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_qp_send(a.qp, &g, 9), 0);
	wc = poll_one(a.cq);
	assert_int_equal(wc.wr_id, 9);
	assert_int_not_equal(wc.status, RV_WC_SUCCESS);
	print_message("SEND from a hole: %s\n", rv_wc_status_str(wc.status));
	side_close(&a);
	side_close(&b);
}

static void test_odp_soft__prefetch_makes_pages_resident_and_no_fault_does_not(void **state)
{
	size_t len = 8 * page_size();
	uint8_t *p = fresh(len), *q = fresh(len);
	struct side a;
	rv_sge g;

	(void)state;
	odp_side_open(&a);
	assert_int_equal(resident_pages(p, len), 0);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)p, .length = (uint32_t)len, .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH_NO_FAULT, RV_ADVISE_MR_FLAG_FLUSH, &g, 1), 0);
	assert_int_equal(resident_pages(p, len), 0);
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH_WRITE, RV_ADVISE_MR_FLAG_FLUSH, &g, 1), 0);
	assert_int_equal(resident_pages(p, len), 8);
	/* Without FLUSH too (soft0 prefetches before returning either way). */
	g.addr = (uint64_t)(uintptr_t)q + page_size();
	g.length = (uint32_t)(2 * page_size());
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH_WRITE, 0, &g, 1), 0);
	assert_int_equal(resident_pages(q, len), 2);
	/* Plain PREFETCH succeeds on readable memory. */
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), 0);
	munmap(p, len);
	munmap(q, len);
	side_close(&a);
}

static void test_odp_soft__advice_errors_are_ibv_advise_mr_s(void **state)
{
	uint8_t *buf = fresh(2 * page_size()), *gap = hole();
	rv_mr *ro = NULL, *other_mr = NULL;
	rv_pd *other = NULL;
	struct side a;
	rv_sge g;

	(void)state;
	odp_side_open(&a);
	assert_int_equal(rv_mr_reg(a.pd, buf, page_size(), RV_ACCESS_REMOTE_READ, &ro), 0);
	assert_int_equal(rv_pd_new(a.ctx, NULL, &other), 0);
	assert_int_equal(rv_mr_reg(other, buf, page_size(), RV_ACCESS_LOCAL_WRITE, &other_mr), 0);

	/* An explicit MR of soft0 is on demand too: it takes advice in its range. */
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)buf, .length = 64, .lkey = rv_mr_lkey(ro)};
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, RV_ADVISE_MR_FLAG_FLUSH, &g, 1), 0);
	/* PREFETCH_WRITE on a read-only MR: EPERM. */
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH_WRITE, 0, &g, 1), -EPERM);
	assert_non_null(strstr(rv_error_last(), "LOCAL_WRITE"));
	/* Beyond the MR: EFAULT. */
	g.addr += page_size() - 8;
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EFAULT);
	assert_non_null(strstr(rv_error_last(), "not inside the MR"));
	/* No such key: ENOENT. */
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)buf, .length = 64, .lkey = rv_mr_lkey(ro) ^ 0x5a5a5a5au};
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -ENOENT);
	/* Another PD's MR: EPERM. */
	g.lkey = rv_mr_lkey(other_mr);
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EPERM);
	assert_non_null(strstr(rv_error_last(), "another PD"));
	/* A hole in the implicit MR: EFAULT, for reading and for writing. */
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)gap, .length = 64, .lkey = rv_mr_lkey(a.mr)};
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EFAULT);
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH_WRITE, 0, &g, 1), -EFAULT);
	assert_non_null(strstr(rv_error_last(), "not mapped"));
	/* A read-only page cannot be prefetched for writing. */
	assert_int_equal(mprotect(buf + page_size(), page_size(), PROT_READ), 0);
	g.addr = (uint64_t)(uintptr_t)(buf + page_size());
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), 0);
	assert_int_equal(rv_mr_advise(a.pd, RV_ADVISE_MR_PREFETCH_WRITE, 0, &g, 1), -EFAULT);

	rv_mr_unref(ro);
	rv_mr_unref(other_mr);
	rv_pd_unref(other);
	munmap(buf, 2 * page_size());
	side_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_odp_soft__device_reports_implicit_odp),
		cmocka_unit_test(test_odp_soft__implicit_mr_takes_write_and_read_into_unregistered_memory),
		cmocka_unit_test(test_odp_soft__write_into_an_unmapped_address_fails_the_wr_not_the_process),
		cmocka_unit_test(test_odp_soft__send_from_an_unmapped_address_fails_locally),
		cmocka_unit_test(test_odp_soft__prefetch_makes_pages_resident_and_no_fault_does_not),
		cmocka_unit_test(test_odp_soft__advice_errors_are_ibv_advise_mr_s),
	};
	rv_device *dev = NULL;

	if (rv_device_find("soft0", &dev) < 0) {
		printf("SKIP: no soft0 device (built without the software device)\n");
		return 77;
	}
	rv_device_unref(dev);
	return cmocka_run_group_tests_name("memory: odp on soft0", tests, NULL, NULL);
}
