/*
 * On-demand paging through the libibverbs-compatible layer, as a program
 * sees it: soft0's odp_caps in ibv_query_device_ex, ibv_reg_mr with
 * IBV_ACCESS_ON_DEMAND and the implicit form (NULL, SIZE_MAX), and
 * ibv_advise_mr (verbs.h's inline, through the context's advise_mr) with
 * libibverbs' return convention: the errno itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <infiniband/verbs.h>

static struct ibv_context *open_soft0(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "soft0") == 0)
			c = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	assert_non_null(c);
	return c;
}

static void test_compat_odp__caps_implicit_mr_and_advice(void **state)
{
	struct ibv_context *c = open_soft0();
	struct ibv_device_attr_ex ex;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_mr *mr, *imr;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	uint8_t *buf, *gap;
	unsigned char vec[4];

	(void)state;
	memset(&ex, 0, sizeof(ex));
	assert_int_equal(ibv_query_device_ex(c, NULL, &ex), 0);
	assert_int_equal(ex.odp_caps.general_caps, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	assert_true((ex.odp_caps.per_transport_caps.rc_odp_caps & (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV)) ==
		    (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV));
	assert_true(ex.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_SEND);

	pd = ibv_alloc_pd(c);
	assert_non_null(pd);
	buf = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	/* Above the user address space: nothing can be mapped there. */
	gap = (uint8_t *)(uintptr_t)(UINT64_C(1) << 62);

	mr = ibv_reg_mr(pd, buf, pg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	/* Implicit: NULL and SIZE_MAX, with ON_DEMAND only. */
	errno = 0;
	assert_null(ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EINVAL);
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	assert_non_null(imr);
	assert_null(imr->addr);
	assert_true(imr->length == SIZE_MAX);

	/* Prefetch through the implicit lkey makes the pages resident. */
	sge = (struct ibv_sge){.addr = (uintptr_t)(buf + pg), .length = (uint32_t)(3 * pg), .lkey = imr->lkey};
	assert_int_equal(mincore(buf + pg, 3 * pg, vec), 0);
	assert_int_equal((vec[0] | vec[1] | vec[2]) & 1, 0);
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0);
	assert_int_equal(mincore(buf + pg, 3 * pg, vec), 0);
	assert_int_equal(vec[0] & vec[1] & vec[2] & 1, 1);
	/* libibverbs' convention: the errno, returned. */
	sge = (struct ibv_sge){.addr = (uintptr_t)gap, .length = 8, .lkey = imr->lkey};
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EFAULT);
	sge = (struct ibv_sge){.addr = (uintptr_t)buf, .length = 2 * (uint32_t)pg, .lkey = mr->lkey};
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EFAULT);
	sge.length = 8;
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sge, 1), 0);
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0), EINVAL);
	assert_int_equal(ibv_advise_mr(pd, (enum ibv_advise_mr_advice)7, 0, &sge, 1), EINVAL);
	sge.lkey = mr->lkey ^ imr->lkey ^ 0x11u;
	if (sge.lkey != mr->lkey && sge.lkey != imr->lkey)
		assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), ENOENT);

	assert_int_equal(ibv_dereg_mr(imr), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	munmap(buf, 4 * pg);
	assert_int_equal(ibv_close_device(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compat_odp__caps_implicit_mr_and_advice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
