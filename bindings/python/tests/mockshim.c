/*
 * Test-only: librverbs-pymock.so is librverbs (the same objects) plus the
 * mock driver of tests/mock-driver.c, so that the Python lifecycle tests run
 * without any RDMA device and the mock checks what the binding did: no
 * resource destroyed twice, none before its dependents, no op on a dead
 * handle. Never installed.
 */
#include <string.h>

#include "mock-driver.h"

#define SHIM __attribute__((visibility("default")))

SHIM int rvmock_device_new(const char *name, rv_device **ret_dev);
SHIM void rvmock_reset(void);
SHIM unsigned rvmock_live_total(void);
SHIM unsigned rvmock_live_resources(void);
SHIM unsigned rvmock_violations(void);
SHIM void rvmock_set_completions(int n, uint32_t status);
SHIM unsigned rvmock_n_post_send(void);

int rvmock_device_new(const char *name, rv_device **ret_dev)
{
	return mock_device_new(name, ret_dev);
}

void rvmock_reset(void)
{
	mock_reset();
}

unsigned rvmock_live_total(void)
{
	return mock_live_total();
}

/* Live fakes other than devices. */
unsigned rvmock_live_resources(void)
{
	return mock_live_total() - mock_live(RV_OBJ_DEVICE);
}

unsigned rvmock_violations(void)
{
	return mock.double_destroys + mock.order_violations + mock.contract_violations;
}

/* Every poll returns n completions (wr_id 0..n-1) with the given status. */
void rvmock_set_completions(int n, uint32_t status)
{
	if (n > MOCK_WC_MAX)
		n = MOCK_WC_MAX;
	memset(mock.poll_wc, 0, sizeof(mock.poll_wc));
	for (int i = 0; i < n; i++) {
		mock.poll_wc[i].wr_id = (uint64_t)i;
		mock.poll_wc[i].status = status;
		mock.poll_wc[i].byte_len = 64;
	}
	mock.poll_n = n;
}

unsigned rvmock_n_post_send(void)
{
	return mock.n_post_send;
}
