/*
 * For the tests that need the kernel's rdma_cm (conn-cm, conn-cm-ud; they
 * run in the VM with rxe0 and skip elsewhere): the device and address to
 * use, and a context on that device.
 */
#ifndef RVERBS_TESTS_CM_DEVICE_H
#define RVERBS_TESTS_CM_DEVICE_H

#include <stdbool.h>

#include <rverbs/rverbs.h>

/* Set by cm_device_find: the device's name and its IPv4 address. */
extern char cm_dev_name[64], cm_ip[64];

/* The first rdma_cm device and an IPv4 address rdma_cm maps to it
 * (RVERBS_TEST_CM_ADDR picks the address); false when there is none. */
bool cm_device_find(void);
/* A context on that device (cmocka asserts). */
rv_context *cm_ctx(void);

#endif
