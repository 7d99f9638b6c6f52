/*
 * Thread domains, parent domains, ECE and rate limits on soft0 (rverbs/pd.h,
 * rverbs/qp.h): a QP on a parent domain passes traffic with MRs of the
 * parent and of the parent domain (one protection domain), the parent
 * domain's allocators get the QP's queue buffers (and their failure fails
 * the QP cleanly), the close order (TD and parent close the parent domain
 * and what is in it, CQs included; the context closes all), the argument
 * checks, and the truthful refusals of ECE and rate limits. Every test
 * closes everything.
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

#include <cmocka.h>

#include <rverbs/rverbs.h>

#include "soft-pair.h"

/* An allocator that records what it handed out, so the test can check that
 * soft0 used it and gave every buffer back. */
#define MAX_BUFS 16
struct arena {
	int mode;          /* 0: allocate; 1: RV_PD_ALLOCATOR_USE_DEFAULT; 2: NULL from call fail_at */
	int fail_at;       /* with mode 2: the call (0-based) that returns NULL */
	int allocs, frees;
	rv_pd *pd_seen;    /* the pd argument of every call, checked equal */
	bool bad;          /* a call with wrong arguments */
	void *bufs[MAX_BUFS];
	size_t sizes[MAX_BUFS];
};

static void *arena_alloc(rv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t type)
{
	struct arena *a = pd_context;
	void *p = NULL;

	if (pd != a->pd_seen || type != RV_SOFT_RES_TYPE_QP || alignment == 0 ||
	    (alignment & (alignment - 1)) || size == 0)
		a->bad = true;
	if (a->mode == 1)
		return RV_PD_ALLOCATOR_USE_DEFAULT;
	if (a->mode == 2 && a->allocs == a->fail_at)
		return NULL;
	if (a->allocs >= MAX_BUFS || posix_memalign(&p, alignment, size) != 0)
		return NULL;
	memset(p, 0xa5, size); /* soft0 must not rely on zeroed memory from us */
	a->bufs[a->allocs] = p;
	a->sizes[a->allocs] = size;
	a->allocs++;
	return p;
}

static void arena_free(rv_pd *pd, void *pd_context, void *ptr, uint64_t type)
{
	struct arena *a = pd_context;
	bool found = false;

	if (pd != a->pd_seen || type != RV_SOFT_RES_TYPE_QP)
		a->bad = true;
	for (int i = 0; i < a->allocs; i++)
		if (a->bufs[i] == ptr) {
			a->bufs[i] = NULL;
			found = true;
		}
	if (!found)
		a->bad = true; /* freed twice, or not ours */
	free(ptr);
	a->frees++;
}

static rv_qp *qp_on(rv_pd *pd, rv_cq *cq)
{
	rv_qp_init_attr qa;
	rv_qp *qp = NULL;

	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	assert_int_equal(rv_qp_new(pd, &qa, &qp), 0);
	return qp;
}

static rv_pd *parent_domain(rv_pd *parent, rv_td *td, struct arena *ar)
{
	rv_pd_attr pa = {.mask = RV_PD_ATTR_PARENT, .parent = parent};
	rv_pd *pd = NULL;

	if (td) {
		pa.mask |= RV_PD_ATTR_TD;
		pa.td = td;
	}
	if (ar) {
		pa.mask |= RV_PD_ATTR_ALLOCATORS;
		pa.alloc = arena_alloc;
		pa.free = arena_free;
		pa.pd_context = ar;
	}
	assert_int_equal(rv_pd_new(rv_pd_context(parent), &pa, &pd), 0);
	assert_ptr_equal(rv_pd_parent(pd), parent);
	assert_null(rv_pd_parent(parent));
	if (ar)
		ar->pd_seen = pd;
	return pd;
}

/* A's QP lives in a parent domain (with a TD and allocators) of A's PD:
 * SEND from an MR of the parent domain, RDMA WRITE from B into A's MR of the
 * parent PD, both ways the one protection domain. */
static void test_soft_domains__qp_on_parent_domain_passes_traffic(void **state)
{
	struct side a, b;
	struct arena ar;
	rv_td *td = NULL;
	rv_pd *pdom;
	rv_mr *pmr = NULL;
	uint8_t *pbuf;
	rv_cq *pcq = NULL;
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_PD};
	rv_wc wc;

	(void)state;
	memset(&ar, 0, sizeof(ar));
	side_open(&a, 0, RV_ACCESS_ALL_REMOTE);
	side_open(&b, 0, RV_ACCESS_ALL_REMOTE);
	assert_int_equal(rv_td_new(a.ctx, NULL, &td), 0);
	assert_ptr_equal(rv_td_context(td), a.ctx);
	pdom = parent_domain(a.pd, td, &ar);
	assert_int_equal(rv_qp_close(a.qp), 0);
	rv_qp_unref(a.qp);
	ca.pd = pdom;
	assert_int_equal(rv_cq_new(a.ctx, &ca, &pcq), 0); /* A's CQ is in the parent domain too */
	a.qp = qp_on(pdom, pcq);
	/* The five queue buffers came from the allocator, and were used. */
	assert_int_equal(ar.allocs, 5);
	assert_int_equal(ar.frees, 0);
	assert_false(ar.bad);
	assert_int_equal(rv_mr_alloc(pdom, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &pmr), 0);
	pbuf = rv_mr_addr(pmr);
	connect_pair(&a, &DEFAULTS, &b, &DEFAULTS);

	for (int i = 0; i < 3; i++) {
		rv_sge r = sge(&b, 0, 4096);
		rv_sge s = {.addr = (uint64_t)(uintptr_t)pbuf, .length = 1000, .lkey = rv_mr_lkey(pmr)};

		fill(pbuf, 1000, 7u + (unsigned)i);
		assert_int_equal(rv_qp_recv(b.qp, &r, 10), 0);
		assert_int_equal(rv_qp_send(a.qp, &s, 11), 0);
		wc = poll_one(pcq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		wc = poll_one(b.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 1000);
		assert_memory_equal(b.buf, pbuf, 1000);
	}
	{
		rv_sge s = sge(&b, 8192, 2048);

		fill(b.buf + 8192, 2048, 99);
		assert_int_equal(rv_qp_write(b.qp, &s, (uint64_t)(uintptr_t)(a.buf + 100), rv_mr_rkey(a.mr), 12), 0);
		wc = poll_one(b.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_memory_equal(a.buf + 100, b.buf + 8192, 2048);
	}
	/* A window of the parent PD, bound by the parent domain's QP to an MR of
	 * the parent domain: one protection domain, so B writes through it. */
	{
		rv_mr *wmr = NULL;
		rv_mw *mw = NULL;
		rv_mw_bind_info bi;
		rv_sge s = sge(&b, 16384, 512);

		assert_int_equal(rv_mr_alloc(pdom, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE |
						 RV_ACCESS_MW_BIND, NULL, &wmr), 0);
		assert_int_equal(rv_mw_alloc(a.pd, RV_MW_TYPE_2, &mw), 0);
		bi = (rv_mw_bind_info){.mr = wmr, .addr = (uint64_t)(uintptr_t)rv_mr_addr(wmr) + 1024,
				       .length = 512, .access = RV_ACCESS_REMOTE_WRITE};
		assert_int_equal(rv_qp_bind_mw(a.qp, mw, &bi, 13, RV_SEND_SIGNALED), 0);
		wc = poll_one(pcq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		fill(b.buf + 16384, 512, 5);
		assert_int_equal(rv_qp_write(b.qp, &s, bi.addr, rv_mw_rkey(mw), 14), 0);
		wc = poll_one(b.cq);
		assert_int_equal(wc.status, RV_WC_SUCCESS);
		assert_memory_equal((uint8_t *)rv_mr_addr(wmr) + 1024, b.buf + 16384, 512);
		rv_mw_unref(mw);
		rv_mr_unref(wmr);
	}
	/* An SRQ of the parent PD serves a QP of the parent domain. */
	{
		rv_srq *srq = NULL;
		rv_qp *sq = NULL;
		rv_qp_init_attr qa;

		assert_int_equal(rv_srq_new(a.pd, NULL, &srq), 0);
		memset(&qa, 0, sizeof(qa));
		qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_SRQ;
		qa.send_cq = pcq;
		qa.srq = srq;
		assert_int_equal(rv_qp_new(pdom, &qa, &sq), 0);
		assert_int_equal(ar.allocs, 10);
		rv_qp_unref(sq);
		assert_int_equal(ar.frees, 5);
		rv_srq_unref(srq);
	}
	assert_int_equal(rv_qp_close(a.qp), 0);
	assert_int_equal(ar.frees, 10);
	assert_false(ar.bad);
	rv_mr_unref(pmr);
	rv_cq_unref(pcq);
	rv_pd_unref(pdom);
	rv_td_unref(td);
	side_close(&a);
	side_close(&b);
}

/* RV_PD_ALLOCATOR_USE_DEFAULT leaves the buffers to soft0 (nothing to free
 * through the allocator); a NULL from it fails rv_qp_new with -ENOMEM and
 * gives back the buffers already allocated. */
static void test_soft_domains__allocator_default_and_failure(void **state)
{
	struct side a;
	struct arena ar;
	rv_pd *pdom;
	rv_qp *qp = NULL;
	rv_qp_init_attr qa;

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	memset(&ar, 0, sizeof(ar));
	ar.mode = 1;
	pdom = parent_domain(a.pd, NULL, &ar);
	qp = qp_on(pdom, a.cq);
	assert_int_equal(rv_qp_close(qp), 0);
	rv_qp_unref(qp);
	assert_int_equal(ar.allocs, 0);
	assert_int_equal(ar.frees, 0);
	assert_false(ar.bad);

	ar.mode = 2;
	ar.fail_at = 2;
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qa.send_cq = a.cq;
	qp = NULL;
	assert_int_equal(rv_qp_new(pdom, &qa, &qp), -ENOMEM);
	assert_null(qp);
	assert_int_equal(ar.allocs, 2);
	assert_int_equal(ar.frees, 2);
	assert_false(ar.bad);
	/* The parent domain still works once the allocator does. */
	ar.mode = 0;
	ar.allocs = ar.frees = 0;
	qp = qp_on(pdom, a.cq);
	assert_int_equal(ar.allocs, 5);
	rv_qp_unref(qp);
	assert_int_equal(ar.frees, 5);
	rv_pd_unref(pdom);
	side_close(&a);
}

/* Closing the TD closes the parent domain bound to it and the QP and MR in
 * it, but not the parent PD; closing the parent PD closes its parent
 * domains; closing the context closes the TD. */
static void test_soft_domains__close_order(void **state)
{
	struct side a;
	struct arena ar;
	rv_td *td = NULL;
	rv_pd *pdom, *pdom2;
	rv_qp *qp;
	rv_mr *mr = NULL;

	(void)state;
	memset(&ar, 0, sizeof(ar));
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rv_td_new(a.ctx, NULL, &td), 0);
	pdom = parent_domain(a.pd, td, &ar);
	qp = qp_on(pdom, a.cq);
	assert_int_equal(rv_mr_alloc(pdom, 4096, RV_ACCESS_LOCAL_WRITE, NULL, &mr), 0);
	assert_int_equal(rv_td_close(td), 0);
	assert_int_equal(rv_qp_state_of(qp), -RV_ECLOSED);
	assert_int_equal(ar.frees, 5);
	assert_null(rv_pd_context(pdom));
	assert_int_equal(rv_mr_lkey(mr), 0); /* the C API's answer for a closed MR */
	assert_non_null(rv_pd_context(a.pd));
	assert_int_equal(rv_qp_state_of(a.qp), RV_QPS_RESET);
	/* A closed TD or parent cannot take a new parent domain. */
	{
		rv_pd_attr pa = {.mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = a.pd, .td = td};
		rv_pd *out = (rv_pd *)&pa;

		assert_int_equal(rv_pd_new(a.ctx, &pa, &out), -RV_ECLOSED);
		assert_ptr_equal(out, (rv_pd *)&pa);
	}
	rv_qp_unref(qp);
	rv_mr_unref(mr);
	rv_pd_unref(pdom);
	rv_td_unref(td);

	/* A CQ in a parent domain: closing the parent PD closes the parent
	 * domain, the CQ in it, and the QP on that CQ. */
	pdom2 = parent_domain(a.pd, NULL, NULL);
	{
		rv_cq_attr ca = {.mask = RV_CQ_ATTR_PD, .pd = pdom2};
		rv_cq *cq = NULL;

		assert_int_equal(rv_cq_new(a.ctx, &ca, &cq), 0);
		qp = qp_on(pdom2, cq);
		assert_int_equal(rv_pd_close(a.pd), 0);
		assert_int_equal(rv_qp_state_of(qp), -RV_ECLOSED);
		assert_int_equal(rv_cq_poll(cq, &(rv_wc){0}, 1), -RV_ECLOSED);
		rv_cq_unref(cq);
	}
	assert_null(rv_pd_context(pdom2));
	rv_qp_unref(qp);
	rv_pd_unref(pdom2);

	td = NULL;
	assert_int_equal(rv_td_new(a.ctx, NULL, &td), 0);
	side_close(&a); /* closes the context, and the TD with it */
	assert_null(rv_td_context(td));
	assert_int_equal(rv_td_close(td), 0);
	rv_td_unref(td);
}

/* Every argument check, the output untouched on each failure. */
static void test_soft_domains__argument_checks(void **state)
{
	struct side a, b;
	rv_td *td = NULL, *td_b = NULL;
	rv_pd *pdom, *sentinel = (rv_pd *)&a, *out = sentinel;
	rv_td *tout = (rv_td *)&a;
	rv_pd_attr pa;
	rv_td_attr ta = {.mask = 1};

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	side_open(&b, 0, RV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rv_td_new(a.ctx, NULL, &td), 0);
	assert_int_equal(rv_td_new(b.ctx, NULL, &td_b), 0);
	assert_int_equal(rv_td_new(NULL, NULL, &tout), -EINVAL);
	assert_int_equal(rv_td_new(a.ctx, NULL, NULL), -EINVAL);
	assert_int_equal(rv_td_new(a.ctx, &ta, &tout), -EINVAL);
	assert_ptr_equal(tout, (rv_td *)&a);
	assert_int_equal(rv_td_close(NULL), -EINVAL);
	assert_null(rv_td_unref(NULL));
	assert_null(rv_td_context((rv_td *)a.pd)); /* not a TD */

#define REFUSED(errnum, ...)                                                     \
	do {                                                                      \
		pa = (rv_pd_attr){__VA_ARGS__};                                   \
		assert_int_equal(rv_pd_new(a.ctx, &pa, &out), (errnum));          \
		assert_ptr_equal(out, sentinel);                                  \
	} while (0)
	REFUSED(-EINVAL, .mask = 1u << 3);                                     /* unknown bit */
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_TD, .td = td);                      /* TD without parent */
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_ALLOCATORS, .alloc = arena_alloc, .free = arena_free);
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT);                            /* NULL parent */
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT, .parent = b.pd);            /* other context */
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT, .parent = (rv_pd *)td);     /* not a PD */
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = a.pd, .td = td_b);
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = a.pd, .td = NULL);
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_ALLOCATORS, .parent = a.pd, .alloc = arena_alloc);
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_ALLOCATORS, .parent = a.pd, .free = arena_free);
	pdom = parent_domain(a.pd, td, NULL);
	REFUSED(-EINVAL, .mask = RV_PD_ATTR_PARENT, .parent = pdom);            /* a parent domain's parent domain */
#undef REFUSED
	/* A CQ takes a parent domain of its context, not an ordinary PD. */
	{
		rv_cq *cq = (rv_cq *)sentinel;
		rv_cq_attr ca = {.mask = RV_CQ_ATTR_PD, .pd = a.pd};

		assert_int_equal(rv_cq_new(a.ctx, &ca, &cq), -EINVAL);
		ca.pd = pdom;
		assert_int_equal(rv_cq_new(b.ctx, &ca, &cq), -EINVAL);
		ca.pd = NULL;
		assert_int_equal(rv_cq_new(a.ctx, &ca, &cq), -EINVAL);
		assert_ptr_equal(cq, (rv_cq *)sentinel);
		ca.pd = pdom;
		assert_int_equal(rv_cq_new(a.ctx, &ca, &cq), 0);
		rv_cq_unref(cq);
	}
	assert_null(rv_pd_parent(NULL));
	rv_pd_unref(pdom);
	rv_td_unref(td);
	rv_td_unref(td_b);
	side_close(&a);
	side_close(&b);
}

/* soft0 has no ECE and does not pace: -EOPNOTSUPP, after the argument
 * checks, and its device attributes say so (pp_rate_limit_max 0). */
static void test_soft_domains__ece_and_rate_limit_refused(void **state)
{
	struct side a;
	rv_ece e = {.vendor_id = 1, .options = 2, .comp_mask = 0}, got = {7, 7, 7};
	rv_qp_rate_limit_attr rl = {.mask = RV_QP_RATE_LIMIT_RATE, .rate_limit = 1000};
	rv_device_attr d = {.mask = RV_DEVICE_ATTR_EX};

	(void)state;
	side_open(&a, 0, RV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rv_context_query_device(a.ctx, &d), 0);
	assert_int_equal(d.pp_rate_limit_max, 0);
	assert_int_equal(d.pp_supported_qpts, 0);
	assert_int_equal(rv_qp_query_ece(a.qp, &got), -EOPNOTSUPP);
	assert_int_equal(got.vendor_id, 7);
	assert_non_null(strstr(rv_error_last(), "ECE"));
	assert_int_equal(rv_qp_set_ece(a.qp, &e), -EOPNOTSUPP);
	assert_int_equal(rv_qp_set_rate_limit(a.qp, &rl), -EOPNOTSUPP);
	assert_non_null(strstr(rv_error_last(), "pp_rate_limit_max"));

	assert_int_equal(rv_qp_query_ece(a.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_query_ece(NULL, &got), -EINVAL);
	assert_int_equal(rv_qp_set_ece(a.qp, NULL), -EINVAL);
	e.comp_mask = 1;
	assert_int_equal(rv_qp_set_ece(a.qp, &e), -EINVAL);
	assert_int_equal(rv_qp_set_rate_limit(a.qp, NULL), -EINVAL);
	rl.mask = 0;
	assert_int_equal(rv_qp_set_rate_limit(a.qp, &rl), -EINVAL);
	rl.mask = RV_QP_RATE_LIMIT_RATE | (1u << 5);
	assert_int_equal(rv_qp_set_rate_limit(a.qp, &rl), -EINVAL);
	assert_int_equal(rv_qp_close(a.qp), 0);
	rl.mask = RV_QP_RATE_LIMIT_RATE;
	assert_int_equal(rv_qp_set_rate_limit(a.qp, &rl), -RV_ECLOSED);
	assert_int_equal(rv_qp_query_ece(a.qp, &got), -RV_ECLOSED);
	side_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_domains__qp_on_parent_domain_passes_traffic),
		cmocka_unit_test(test_soft_domains__allocator_default_and_failure),
		cmocka_unit_test(test_soft_domains__close_order),
		cmocka_unit_test(test_soft_domains__argument_checks),
		cmocka_unit_test(test_soft_domains__ece_and_rate_limit_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
