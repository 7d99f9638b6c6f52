/*
 * Which GID a QP advertises and sends from (lib/gid_select.c, issue 19),
 * against GID tables in the mock driver: RoCE v2 over v1, IPv4-mapped over
 * global IPv6 over link-local, the peer's family and RoCE version, the
 * route's source address, a caller's index (rv_qp_set_gid_index), the
 * index read back for hand-built address vectors (rv_qp_gid_index), and
 * every mismatch named in its error. The index chosen is the one
 * rv_qp_connect puts in the RTR address vector.
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
static const uint8_t v4_peer[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 1, 2};
static const uint8_t loop4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t v6_peer[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

static void add_gid(const uint8_t g[16], uint32_t type)
{
	rv_gid_entry *e = &mock.gids[mock.n_gids++];

	memset(e, 0, sizeof(*e));
	if (g)
		memcpy(e->gid, g, 16);
	e->gid_type = type;
	e->ndev_ifindex = 2;
}

/* A RoCE port as a kernel with both versions fills it: link-local first,
 * then v1 and v2 of each address. */
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

static rv_endpoint peer_with(const uint8_t gid[16], uint32_t caps)
{
	rv_endpoint p;

	memset(&p, 0, sizeof(p));
	memcpy(p.gid, gid, 16);
	p.qpn = 0x1234;
	p.psn = 7;
	p.qp_type = RV_QPT_RC;
	p.mtu = RV_MTU_1024;
	p.caps = caps;
	return p;
}

/* The sgid_index rv_qp_connect gave the driver (the RTR modify). */
static unsigned connected_sgid(struct rig *r, const uint8_t peer_gid[16], uint32_t caps)
{
	rv_endpoint p = peer_with(peer_gid, caps);

	assert_int_equal(rv_qp_connect(r->qp, &p), 0);
	assert_int_equal(mock.last_av.sgid_index, rv_qp_gid_index(r->qp));
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
	assert_true(me.caps & RV_EP_CAP_ROCE_V2);
	assert_false(me.caps & RV_EP_CAP_ROCE_V1);
	assert_int_equal(rv_qp_gid_index(r.qp), 3); /* link-local v1, v2, v4 v1, v4 v2 */
	assert_int_equal(connected_sgid(&r, v4_peer, RV_EP_CAP_ROCE_V2), 3);
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
	assert_int_equal(rv_qp_gid_index(r.qp), 3);
	rig_close(&r);
}

static void test_gid_select__without_an_endpoint_the_peers_family(void **state)
{
	struct rig r;

	(void)state;
	mock_reset();
	roce_table(true, true);
	rig_open(&r);
	assert_int_equal(connected_sgid(&r, v6_peer, 0), 5); /* the global IPv6 RoCE v2 entry */
	rig_close(&r);
}

static void test_gid_select__without_an_endpoint_the_peers_roce_version(void **state)
{
	struct rig r;

	(void)state;
	mock_reset();
	roce_table(true, true);
	rig_open(&r);
	assert_int_equal(connected_sgid(&r, v4_peer, RV_EP_CAP_ROCE_V1), 2); /* IPv4, RoCE v1 */
	rig_close(&r);
}

/* Two IPv4 entries: the one the kernel's route to the peer leaves from
 * wins, though it comes later in the table (127.0.0.1 routes to itself). */
static void test_gid_select__the_route_to_the_peer_picks_the_address(void **state)
{
	struct rig r;

	(void)state;
	mock_reset();
	add_gid(link_local, RV_GID_TYPE_ROCE_V2);
	add_gid(v4, RV_GID_TYPE_ROCE_V2);
	add_gid(loop4, RV_GID_TYPE_ROCE_V2);
	rig_open(&r);
	assert_int_equal(connected_sgid(&r, loop4, RV_EP_CAP_ROCE_V2), 2);
	rig_close(&r);
}

static void test_gid_select__peer_of_a_family_the_port_lacks(void **state)
{
	struct rig r;
	rv_endpoint p = peer_with(v4_peer, 0);

	(void)state;
	mock_reset();
	roce_table(false, true);
	rig_open(&r);
	assert_int_equal(rv_qp_connect(r.qp, &p), -EADDRNOTAVAIL);
	assert_non_null(strstr(rv_error_last(), "no GID of the peer's family"));
	assert_non_null(strstr(rv_error_last(), "10.1.1.2 is IPv4"));
	rig_close(&r);
}

static void test_gid_select__peer_of_a_version_the_port_lacks(void **state)
{
	struct rig r;
	rv_endpoint p = peer_with(v4_peer, RV_EP_CAP_ROCE_V1);

	(void)state;
	mock_reset();
	add_gid(link_local, RV_GID_TYPE_ROCE_V2);
	add_gid(v4, RV_GID_TYPE_ROCE_V2);
	rig_open(&r);
	assert_int_equal(rv_qp_connect(r.qp, &p), -EADDRNOTAVAIL);
	assert_non_null(strstr(rv_error_last(), "no RoCE v1 GID"));
	rig_close(&r);
}

/* The endpoint went out with an IPv4 GID; a peer that answers with an IPv6
 * one cannot be reached from it: named, not silently switched. */
static void test_gid_select__advertised_ipv4_gid_against_an_ipv6_peer(void **state)
{
	struct rig r;
	rv_endpoint me, p = peer_with(v6_peer, RV_EP_CAP_ROCE_V2);

	(void)state;
	mock_reset();
	roce_table(true, true);
	rig_open(&r);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_int_equal(rv_qp_connect(r.qp, &p), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "GID index 3"));
	assert_non_null(strstr(rv_error_last(), "cannot reach the peer's GID 2001:db8::2 (IPv6)"));
	assert_int_equal(rv_qp_state_of(r.qp), RV_QPS_RESET); /* refused before any transition */
	rig_close(&r);
}

static void test_gid_select__roce_v1_gid_against_a_roce_v2_peer(void **state)
{
	struct rig r;
	rv_endpoint me, p = peer_with(v4_peer, RV_EP_CAP_ROCE_V2);

	(void)state;
	mock_reset();
	roce_table(true, false);
	rig_open(&r);
	assert_int_equal(rv_qp_set_gid_index(r.qp, 2), 0); /* IPv4, RoCE v1 */
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_memory_equal(me.gid, v4, 16);
	assert_true(me.caps & RV_EP_CAP_ROCE_V1);
	assert_int_equal(rv_qp_connect(r.qp, &p), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "is a RoCE v1 GID, but the peer's GID 10.1.1.2 is RoCE v2"));
	rig_close(&r);
}

static void test_gid_select__caller_sets_the_index(void **state)
{
	struct rig r;
	rv_endpoint me;

	(void)state;
	mock_reset();
	roce_table(true, true);
	add_gid(NULL, 0); /* an empty slot, index 6 */
	rig_open(&r);
	assert_int_equal(rv_qp_set_gid_index(r.qp, 7), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "past the GID table"));
	assert_int_equal(rv_qp_set_gid_index(r.qp, 6), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "is empty"));
	assert_int_equal(rv_qp_set_gid_index(r.qp, 5), 0);
	assert_int_equal(rv_qp_gid_index(r.qp), 5);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_memory_equal(me.gid, v6, 16);
	assert_int_equal(connected_sgid(&r, v6_peer, RV_EP_CAP_ROCE_V2), 5);
	assert_int_equal(rv_qp_set_gid_index(r.qp, 3), -EINVAL); /* in RTS now */
	assert_non_null(strstr(rv_error_last(), "RTS"));
	assert_int_equal(rv_qp_gid_index(NULL), -EINVAL);
	assert_int_equal(rv_qp_set_gid_index(NULL, 0), -EINVAL);
	rig_close(&r);
}

/* A hand-built RTR with sgid_index 0 (the link-local entry) to an IPv4
 * peer: the mismatch that broke on rxe0, named with the index to use. */
static void test_gid_select__hand_built_rtr_is_checked(void **state)
{
	struct rig r;
	rv_qp_attr a;
	int idx;

	(void)state;
	mock_reset();
	add_gid(link_local, RV_GID_TYPE_ROCE_V2); /* as rxe fills it */
	add_gid(v4, RV_GID_TYPE_ROCE_V2);
	rig_open(&r);
	assert_int_equal(rv_qp_to_init(r.qp, NULL), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
	memcpy(a.ah_attr.dgid, v4_peer, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.dest_qp_num = 0x99;
	assert_int_equal(rv_qp_to_rtr(r.qp, &a), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "GID index 0"));
	assert_non_null(strstr(rv_error_last(), "index 1 would"));
	idx = rv_qp_gid_index(r.qp);
	assert_int_equal(idx, 1);
	a.ah_attr.sgid_index = (uint8_t)idx;
	a.ah_attr.traffic_class = 0x68;
	a.ah_attr.sl = 3;
	a.ah_attr.flow_label = 0x12345;
	assert_int_equal(rv_qp_to_rtr(r.qp, &a), 0);
	assert_int_equal(mock.last_av.sgid_index, 1);
	assert_int_equal(mock.last_av.traffic_class, 0x68);
	assert_int_equal(mock.last_av.sl, 3);
	assert_int_equal(mock.last_av.flow_label, 0x12345);
	rig_close(&r);
}

/* An address handle built by hand is checked the same way, before the
 * device sees it (the mock has no address handles: a valid one reaches
 * the driver and gets its -EOPNOTSUPP). */
static void test_gid_select__hand_built_ah_is_checked(void **state)
{
	struct rig r;
	rv_ah_attr av;
	rv_ah *ah = NULL;

	(void)state;
	mock_reset();
	add_gid(link_local, RV_GID_TYPE_ROCE_V2);
	add_gid(v4, RV_GID_TYPE_ROCE_V2);
	add_gid(NULL, 0); /* an empty slot, index 2 */
	rig_open(&r);
	memset(&av, 0, sizeof(av));
	memcpy(av.dgid, v4_peer, 16);
	av.is_global = 1;
	assert_int_equal(rv_ah_new(r.pd, &av, &ah), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "cannot reach the peer's GID 10.1.1.2 (IPv4)"));
	assert_non_null(strstr(rv_error_last(), "index 1 would"));
	av.sgid_index = 2;
	assert_int_equal(rv_ah_new(r.pd, &av, &ah), -EINVAL);
	assert_non_null(strstr(rv_error_last(), "sgid_index 2 of mock0 port 1 is an empty GID entry"));
	av.sgid_index = (uint8_t)rv_qp_gid_index(r.qp);
	assert_int_equal(av.sgid_index, 1);
	assert_int_equal(rv_ah_new(r.pd, &av, &ah), -EOPNOTSUPP);
	assert_null(ah);
	rig_close(&r);
}

static void test_gid_select__untyped_device_keeps_index_0(void **state)
{
	struct rig r;
	rv_endpoint me;

	(void)state;
	mock_reset();
	rig_open(&r);
	assert_int_equal(rv_qp_endpoint(r.qp, &me), 0);
	assert_memory_equal(me.gid, loop4, 16);
	assert_false(me.caps & (RV_EP_CAP_ROCE_V1 | RV_EP_CAP_ROCE_V2));
	assert_int_equal(rv_qp_gid_index(r.qp), 0);
	assert_int_equal(connected_sgid(&r, v6_peer, 0), 0);
	rig_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gid_select__endpoint_takes_roce_v2_ipv4),
		cmocka_unit_test(test_gid_select__ipv6_only_port_takes_the_global_address),
		cmocka_unit_test(test_gid_select__without_an_endpoint_the_peers_family),
		cmocka_unit_test(test_gid_select__without_an_endpoint_the_peers_roce_version),
		cmocka_unit_test(test_gid_select__the_route_to_the_peer_picks_the_address),
		cmocka_unit_test(test_gid_select__peer_of_a_family_the_port_lacks),
		cmocka_unit_test(test_gid_select__peer_of_a_version_the_port_lacks),
		cmocka_unit_test(test_gid_select__advertised_ipv4_gid_against_an_ipv6_peer),
		cmocka_unit_test(test_gid_select__roce_v1_gid_against_a_roce_v2_peer),
		cmocka_unit_test(test_gid_select__caller_sets_the_index),
		cmocka_unit_test(test_gid_select__hand_built_rtr_is_checked),
		cmocka_unit_test(test_gid_select__hand_built_ah_is_checked),
		cmocka_unit_test(test_gid_select__untyped_device_keeps_index_0),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
