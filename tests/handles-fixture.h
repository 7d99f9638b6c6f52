/*
 * The fixture the handle tests share (test-handles.c, test-destroy-retry.c,
 * test-args.c, test-qp.c, test-log.c): a mock device per case, the usual
 * tree of objects on it, and the checks every case ends with.
 *
 * Every case runs between handles_setup and handles_teardown and ends with
 * end_test(): the device is released and the mock must hold no live object,
 * with nothing destroyed twice or out of order.
 */
#ifndef RV_TESTS_HANDLES_FIXTURE_H
#define RV_TESTS_HANDLES_FIXTURE_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mock-driver.h"

/* What an output holds before a call that must leave it alone. */
#define SENTINEL ((void *)(uintptr_t)0x5e5e5e5eu)

/* The case's device (mock0), made by handles_setup, released by end_test. */
extern rv_device *dev;

void assert_msg_contains(const char *fragment);
/* rc is -RV_ECLOSED and the message says "is closed" (and fragment, if any). */
void assert_closed_rc(int rc, const char *fragment);
void assert_mock_sane(void);
/* Release the test's device and check that nothing is left. */
void end_test(void);

int handles_setup(void **state);
int handles_teardown(void **state);

uint64_t id_of(const void *h);
rv_qp *new_qp_type(rv_pd *pd, rv_cq *scq, rv_cq *rcq, uint32_t type);
rv_qp *new_qp(rv_pd *pd, rv_cq *scq, rv_cq *rcq);

/* The usual tree: a context with a PD, two CQs, an MR and a QP (created in that order). */
struct tree {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq, *cq2;
	rv_mr *mr;
	rv_qp *qp;
	char buf[256];
};

void make_tree(struct tree *t);
void unref_tree(struct tree *t);

/* first was destroyed (successfully, in the mock's log) before then. */
void assert_before(const void *first, const void *then);
/* rv_context_dump's text; the caller frees it. */
char *dump(rv_context *ctx);

struct log_capture {
	char text[8192];
	size_t len;
	unsigned lines;
};

/* A log handler appending "level message\n" to the struct log_capture in user. */
void capture_log(rv_log_level level, const char *msg, void *user);

/* A case of these files, with the shared setup and teardown. */
#define HANDLES_TEST(name) cmocka_unit_test_setup_teardown(name, handles_setup, handles_teardown)

#endif
