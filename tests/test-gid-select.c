/*
 * Which GID a QP advertises and sends from (lib/gid_select.c, issue 19),
 * against the mock driver's GID tables: RoCE v2 over v1, IPv4-mapped over
 * global IPv6 over link-local, the peer's family when only the peer's GID is
 * known, RVERBS_GID_INDEX, a peer of a family the port lacks named in the
 * error, and index 0 for a device without typed entries. The index chosen
 * is the one rv_qp_connect puts in the address vector.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mock-driver.h"
#include "rverbs-private.h"

static const uint8_t link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 1, 1};
static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

static void add_gid(const uint8_t g[16], uint32_t type)
{
	rv_gid_entry *e = &mock.gids[mock.n_gids++];

	memset(e, 0, sizeof(*e));
	memcpy(e->gid, g, 16);
	e->gid_type = type;
	e->ndev_ifindex = 2;
}

/* A RoCE port as a kernel fills it: link-local first, then v1 and v2 of
 * each address. */
static void roce_table(bool with_v4, bool with_v6)
{
	add_gid(link_local, RV_GID_TYPE_ROCE_V1);
	add_gid(link_local, RV_GID_TYPE_ROCE_V2);
	if (with_v4) {
		add_gid(v4, RV_GID_TYPE_ROCE_V1);
		add_gid(v4, RV_GID_TYPE_ROCE_V2);
	}
	if (with_v6) {
		add_gid(v6, RV_GID_TYPE_ROCE_V1);
		add_gid(v6, RV_GID_TYPE_ROCE_V2);
	}
}

struct rig {
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
};

static void rig_open(struct rig *r)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};

	assert_int_equal(mock_device_new("mock0", &r->dev), 0);
	assert_int_equal(rv_context_new(r->dev, NULL, &r->ctx), 0);
	assert_int_equal(rv_pd_new(r->ctx, NULL, &r->pd), 0);
	assert_int_equal(rv_cq_new(r->ctx, NULL, &r->cq), 0);
	qa.send_cq = r->cq;
	assert_int_equal(rv_qp_new(r->pd, &qa, &r->qp), 0);
}

static void rig_close(struct rig *r)
{
	rv_qp_unref(r->qp);
	rv_cq_unref(r->cq);
	rv_pd_unref(r->pd);
	assert_int_equal(rv_context_close(r->ctx), 0);
	rv_context_unref(r->ctx);
	rv_device_unref(r->dev);
	assert_int_equal(mock.double_destroys + mock.order_violations + mock.contract_violations, 0);
}

static rv_endpoint peer_with(const uint8_t gid[16])
{
	rv_endpoint p;

	memset(&p, 0, sizeof(p));
	memcpy(p.gid, gid, 16);
	p.qpn = 0x1234;
	p.psn = 7;
	p.qp_type = RV_QPT_RC;
	p.mtu = RV_MTU_1024;
	return p;
}

/* The sgid_index rv_qp_connect asked the driver for (the RTR modify). */
static unsigned connected_sgid(struct rig *r, const uint8_t peer_gid[16])
{
	rv_endpoint p = peer_with(peer_gid);

	assert_int_equal(rv_qp_connect(r->qp, &p), 0);
	assert_int_equal(mock.last_av.sgid_index, r->qp->sgid_index);
	return mock.last_av.sgid_index;
}

static void test_gid_select__endpoint_takes_roce_v2_ipv4(void **state)
{
	struct rig r;
	rv_endpoint me;

	(void)state;
	mock_reset();
	roce_table(true, true);
	rig_open(&r);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_memory_equal(me.gid, v4, 16);
	assert_int_equal(connected_sgid(&r, v4), 3); /* link-local v1, v2, v4 v1, v4 v2 */
	rig_close(&r);
}

static void test_gid_select__ipv6_only_port_takes_the_global_address(void **state)
{
	struct rig r;
	rv_endpoint me;

	(void)state;
	mock_reset();
	roce_table(false, true);
	rig_open(&r);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_memory_equal(me.gid, v6, 16);
	rig_close(&r);
}

static void test_gid_select__without_an_endpoint_the_peers_family(void **state)
{
	struct rig r;

	(void)state;
	mock_reset();
	roce_table(true, true);
	rig_open(&r);
	assert_int_equal(connected_sgid(&r, v6), 5); /* the global IPv6 RoCE v2 entry */
	rig_close(&r);
}

static void test_gid_select__peer_of_a_family_the_port_lacks(void **state)
{
	struct rig r;
	rv_endpoint p = peer_with(v4);

	(void)state;
	mock_reset();
	roce_table(false, true);
	rig_open(&r);
	assert_int_equal(rv_qp_connect(r.qp, &p), -EADDRNOTAVAIL);
	assert_non_null(strstr(rv_error_last(), "IPv4"));
	rig_close(&r);
}

static void test_gid_select__environment_names_the_index(void **state)
{
	struct rig r;
	rv_endpoint me;

	(void)state;
	mock_reset();
	roce_table(true, false);
	rig_open(&r);
	setenv("RVERBS_GID_INDEX", "9", 1);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "RVERBS_GID_INDEX=9"));
	setenv("RVERBS_GID_INDEX", "2", 1);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	unsetenv("RVERBS_GID_INDEX");
	assert_memory_equal(me.gid, v4, 16); /* entry 2: the IPv4 RoCE v1 one */
	assert_int_equal(connected_sgid(&r, v4), 2);
	rig_close(&r);
}

static void test_gid_select__untyped_device_keeps_index_0(void **state)
{
	struct rig r;
	rv_endpoint me;
	static const uint8_t lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};

	(void)state;
	mock_reset();
	rig_open(&r);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_memory_equal(me.gid, lo, 16);
	assert_int_equal(connected_sgid(&r, v6), 0);
	rig_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gid_select__endpoint_takes_roce_v2_ipv4),
		cmocka_unit_test(test_gid_select__ipv6_only_port_takes_the_global_address),
		cmocka_unit_test(test_gid_select__without_an_endpoint_the_peers_family),
		cmocka_unit_test(test_gid_select__peer_of_a_family_the_port_lacks),
		cmocka_unit_test(test_gid_select__environment_names_the_index),
		cmocka_unit_test(test_gid_select__untyped_device_keeps_index_0),
	};

	unsetenv("RVERBS_GID_INDEX");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
