/*
 * Out of memory in the handle core and the facade: the same scenario runs
 * again and again with the Nth allocation failing (N = 0, 1, 2 ... until a run
 * sees no failure). Each call must succeed or fail with -ENOMEM and a
 * message, leave its output untouched, and the world must end with nothing
 * leaked and nothing destroyed twice.
 *
 * The allocator is wrapped at link time (-Wl,--wrap=malloc,calloc,realloc;
 * see tests/meson.build), so only this program's and the library's own
 * allocations are counted; libc's internal ones are not.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mock-driver.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static long countdown = -1; /* allocations to let through before one fails; -1: never */
static unsigned n_failed;

static int fail_now(void)
{
	if (countdown < 0)
		return 0;
	if (countdown-- == 0) {
		n_failed++;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

struct outcome {
	unsigned bad_rc;      /* a result other than 0 or -ENOMEM */
	unsigned no_message;  /* -ENOMEM without a message */
	unsigned touched;     /* an output written on failure */
	char first_bad[256];
};

static void check(struct outcome *o, int rc, const void *out, const char *what)
{
	/* The test's own constructor reports no message; only the library must. */
	bool library = strcmp(what, "mock_device_new") != 0;

	if (rc == 0)
		return;
	if (rc != -ENOMEM) {
		if (!o->bad_rc++)
			snprintf(o->first_bad, sizeof(o->first_bad), "%s returned %d: %s", what, rc, rv_error_last());
		return;
	}
	if (library && rv_error_last()[0] == '\0' && !o->no_message++)
		snprintf(o->first_bad, sizeof(o->first_bad), "%s failed with -ENOMEM and no message", what);
	if (out && !o->touched++)
		snprintf(o->first_bad, sizeof(o->first_bad), "%s wrote its output on failure", what);
}

/* Build a small world, dump it, close it, release it; with the allocator armed. */
static void scenario(struct outcome *o)
{
	static char buf[128];
	rv_device *d = NULL;
	rv_context *ctx = NULL;
	rv_pd *pd = NULL;
	rv_cq *cq = NULL, *cq2 = NULL;
	rv_mr *mr = NULL, *mr2 = NULL;
	rv_qp *qp = NULL, *qp2 = NULL, *tgt = NULL;
	rv_td *td = NULL;
	rv_pd *pdom = NULL;
	rv_xrcd *xrcd = NULL;
	rv_srq *xsrq = NULL;
	char *text = NULL;
	int rc;

	rv_error_clear();
	check(o, mock_device_new("oom0", &d), d, "mock_device_new");
	if (d) {
		rv_error_clear();
		check(o, rv_context_new(d, NULL, &ctx), ctx, "rv_context_new");
	}
	if (ctx) {
		rv_error_clear();
		check(o, rv_pd_new(ctx, NULL, &pd), pd, "rv_pd_new");
		rv_error_clear();
		check(o, rv_cq_new(ctx, NULL, &cq), cq, "rv_cq_new");
		rv_error_clear();
		check(o, rv_cq_new(ctx, NULL, &cq2), cq2, "rv_cq_new");
	}
	if (pd) {
		rv_error_clear();
		check(o, rv_mr_reg(pd, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, &mr), mr, "rv_mr_reg");
		rv_error_clear();
		check(o, rv_mr_alloc(pd, 100, RV_ACCESS_LOCAL_WRITE, NULL, &mr2), mr2, "rv_mr_alloc");
	}
	if (ctx) {
		rv_error_clear();
		check(o, rv_td_new(ctx, NULL, &td), td, "rv_td_new");
	}
	if (pd && td) {
		rv_pd_attr pa = {.mask = RV_PD_ATTR_PARENT | RV_PD_ATTR_TD, .parent = pd, .td = td};

		rv_error_clear();
		check(o, rv_pd_new(ctx, &pa, &pdom), pdom, "rv_pd_new");
	}
	if (pd && cq && cq2) {
		rv_qp_init_attr a = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ,
				     .send_cq = cq, .recv_cq = cq2};
		rv_error_clear();
		check(o, rv_qp_new(pd, &a, &qp), qp, "rv_qp_new");
		a.recv_cq = cq;
		rv_error_clear();
		check(o, rv_qp_new(pdom ? pdom : pd, &a, &qp2), qp2, "rv_qp_new"); /* in the parent domain */
	}
	if (ctx) {
		rv_error_clear();
		check(o, rv_xrcd_new(ctx, NULL, &xrcd), xrcd, "rv_xrcd_new");
	}
	if (xrcd && pd && cq) {
		rv_srq_attr sa = {.mask = RV_SRQ_INIT_ATTR_XRC, .xrcd = xrcd, .cq = cq};
		rv_qp_init_attr ta = {.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_XRCD,
				      .qp_type = RV_QPT_XRC_RECV, .xrcd = xrcd};
		rv_error_clear();
		check(o, rv_srq_new(pd, &sa, &xsrq), xsrq, "rv_srq_new");
		rv_error_clear();
		check(o, rv_qp_new(pd, &ta, &tgt), tgt, "rv_qp_new");
	}
	if (ctx) {
		rv_error_clear();
		check(o, rv_context_dump(ctx, &text), text, "rv_context_dump");
		rv_free(text);
	}
	if (pd) {
		rv_error_clear();
		check(o, rv_pd_close(pd), NULL, "rv_pd_close");
	}
	if (d) {
		rv_error_clear();
		rc = rv_device_close(d);
		check(o, rc, NULL, "rv_device_close");
		if (rc < 0) {
			long saved = countdown;
			countdown = -1;
			/* Retryable: the same close goes through with memory. */
			if (rv_device_close(d) != 0 && !o->bad_rc++)
				snprintf(o->first_bad, sizeof(o->first_bad), "rv_device_close retry failed: %s",
					 rv_error_last());
			countdown = saved;
		}
	}
	rv_qp_unref(tgt);
	rv_srq_unref(xsrq);
	rv_xrcd_unref(xrcd);
	rv_qp_unref(qp2);
	rv_qp_unref(qp);
	rv_mr_unref(mr2);
	rv_mr_unref(mr);
	rv_cq_unref(cq2);
	rv_cq_unref(cq);
	rv_pd_unref(pdom);
	rv_td_unref(td);
	rv_pd_unref(pd);
	rv_context_unref(ctx);
	rv_device_unref(d);
}

static void test_handles_oom__every_allocation_failure_is_reported_and_leaks_nothing(void **state)
{
	unsigned runs = 0, failing_runs = 0;

	(void)state;
	for (long n = 0;; n++) {
		struct outcome o;

		memset(&o, 0, sizeof(o));
		mock_reset();
		n_failed = 0;
		countdown = n;
		scenario(&o);
		countdown = -1;
		runs++;
		if (o.bad_rc || o.no_message || o.touched)
			fail_msg("allocation #%ld failing: %s", n, o.first_bad);
		if (mock.double_destroys || mock.order_violations || mock.contract_violations)
			fail_msg("allocation #%ld failing: double=%u order=%u contract=%u", n, mock.double_destroys,
				 mock.order_violations, mock.contract_violations);
		if (mock_live_total() != 0)
			fail_msg("allocation #%ld failing: %u object(s) left live in the mock", n, mock_live_total());
		if (n_failed == 0)
			break; /* the scenario needs fewer than n allocations: every one was tried */
		failing_runs++;
		assert_true(n < 10000);
	}
	assert_true(failing_runs >= 20);
	mock_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handles_oom__every_allocation_failure_is_reported_and_leaks_nothing),
	};

	return cmocka_run_group_tests_name("core: handles-oom", tests, NULL, NULL);
}
