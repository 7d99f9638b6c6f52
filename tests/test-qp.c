/*
 * The QP facade, against the mock driver: rv_qp_new's checks, the helpers
 * that walk the state machine (RC and UC), the endpoint and rv_qp_connect,
 * and the data path passing the driver's results through.
 *
 * Every case ends with end_test() (handles-fixture.h).
 */
#include "handles-fixture.h"

static void test_handles__qp_new_rejects_cqs_of_another_context(void **state)
{
	struct tree a, b;
	rv_qp *qp = SENTINEL;

	(void)state;
	make_tree(&a);
	make_tree(&b);
	assert_int_equal(rv_qp_new(a.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = b.cq}, &qp),
			 -EINVAL);
	assert_msg_contains("different contexts");
	assert_int_equal(rv_qp_new(a.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_RECV_CQ,
						      .send_cq = a.cq, .recv_cq = b.cq},
				   &qp), -EINVAL);
	assert_ptr_equal(qp, SENTINEL);
	unref_tree(&a);
	unref_tree(&b);
	end_test();
}

/* ---- data path and QP helpers against canned driver results ---- */

static void test_handles__data_path_passes_driver_results_through(void **state)
{
	struct tree t;
	rv_wc wc[8];
	rv_sge sge;
	rv_send_wr swr[3];
	rv_recv_wr rwr[2];
	size_t n;

	(void)state;
	make_tree(&t);
	sge = (rv_sge){.addr = (uintptr_t)t.buf, .length = 16, .lkey = rv_mr_lkey(t.mr)};
	mock.poll_n = 3;
	for (int i = 0; i < 3; i++)
		mock.poll_wc[i] = (rv_wc){.wr_id = 10u + (unsigned)i, .status = RV_WC_SUCCESS, .opcode = RV_WC_SEND};
	assert_int_equal(rv_cq_poll(t.cq, wc, 8), 3);
	assert_int_equal(wc[2].wr_id, 12);
	assert_int_equal(rv_cq_poll(t.cq, wc, 1), 1);
	mock.poll_rc = -EOVERFLOW;
	assert_int_equal(rv_cq_poll(t.cq, wc, 8), -EOVERFLOW);

	memset(swr, 0, sizeof(swr));
	for (int i = 0; i < 3; i++)
		swr[i] = (rv_send_wr){.wr_id = (unsigned)i, .sg_list = &sge, .num_sge = 1, .opcode = RV_WR_SEND};
	assert_int_equal(rv_qp_post_send(t.qp, swr, 3, &n), 0);
	assert_int_equal(n, 3);
	mock.post_limit = 2;
	assert_int_equal(rv_qp_post_send(t.qp, swr, 3, &n), -ENOMEM);
	assert_int_equal(n, 2);
	assert_int_equal(rv_qp_post_send(t.qp, swr, 3, NULL), -ENOMEM);
	memset(rwr, 0, sizeof(rwr));
	rwr[0] = (rv_recv_wr){.wr_id = 99, .sg_list = &sge, .num_sge = 1};
	rwr[1] = rwr[0];
	mock.post_limit = SIZE_MAX;
	assert_int_equal(rv_qp_post_recv(t.qp, rwr, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(mock.last_recv.wr_id, 99);

	assert_int_equal(rv_qp_write(t.qp, &sge, 0x1234, 0x55, 7), 0);
	assert_int_equal(mock.last_send.opcode, RV_WR_RDMA_WRITE);
	assert_int_equal(mock.last_send.remote_addr, 0x1234);
	assert_int_equal(mock.last_send.rkey, 0x55);
	assert_int_equal(mock.last_send.wr_id, 7);
	assert_true(mock.last_send.send_flags & RV_SEND_SIGNALED);
	assert_int_equal(rv_qp_read(t.qp, &sge, 0x99, 0x66, 8), 0);
	assert_int_equal(mock.last_send.opcode, RV_WR_RDMA_READ);
	assert_int_equal(rv_qp_send(t.qp, &sge, 9), 0);
	assert_int_equal(mock.last_send.opcode, RV_WR_SEND);
	assert_int_equal(mock.last_send.num_sge, 1);
	assert_int_equal(rv_qp_send(t.qp, NULL, 10), 0);
	assert_int_equal(mock.last_send.num_sge, 0);
	assert_int_equal(rv_qp_recv(t.qp, &sge, 11), 0);
	assert_int_equal(mock.last_recv.wr_id, 11);
	mock.post_rc = -ENOMEM;
	assert_int_equal(rv_qp_send(t.qp, &sge, 12), -ENOMEM);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_helpers_walk_the_state_machine(void **state)
{
	struct tree t;
	rv_qp_attr qa;
	rv_qp *ud;

	(void)state;
	make_tree(&t);
	/* RC: the helpers fill the required attributes. */
	assert_int_equal(rv_qp_to_rts(t.qp, NULL), -EINVAL);
	assert_msg_contains("RESET -> RTS");
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0);
	assert_int_equal(mock.last_modify.mask,
			 RV_QP_STATE | RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_ACCESS_FLAGS);
	assert_int_equal(mock.last_modify.qp_access_flags, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE |
							   RV_ACCESS_REMOTE_READ | RV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(rv_qp_to_init(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_INIT}), -EINVAL);
	assert_msg_contains("do not set RV_QP_STATE");
	assert_int_equal(rv_qp_to_rtr(t.qp, NULL), -EINVAL);
	assert_msg_contains("RV_QP_AV");
	assert_int_equal(rv_qp_to_rtr(t.qp, &(rv_qp_attr){.mask = RV_QP_AV | RV_QP_DEST_QPN}), -EINVAL);
	assert_msg_contains("RV_QP_RQ_PSN");
	qa = (rv_qp_attr){.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN, .dest_qp_num = 0x42, .rq_psn = 5};
	assert_int_equal(rv_qp_to_rtr(t.qp, &qa), 0);
	assert_int_equal(mock.last_modify.path_mtu, RV_MTU_1024);
	assert_int_equal(mock.last_modify.min_rnr_timer, 12);
	assert_int_equal(mock.last_modify.max_dest_rd_atomic, 16);
	assert_int_equal(rv_qp_to_rts(t.qp, NULL), 0);
	assert_int_equal(mock.last_modify.sq_psn, t.qp->init_psn);
	assert_int_equal(mock.last_modify.timeout, 14);
	assert_int_equal(mock.last_modify.retry_cnt, 7);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	qa = (rv_qp_attr){.mask = RV_QP_STATE | RV_QP_CAP};
	assert_int_equal(rv_qp_query(t.qp, &qa), 0);
	assert_int_equal(qa.qp_state, RV_QPS_RTS);
	assert_int_equal(qa.cap.max_send_wr, 128);

	/* The device moved the QP to ERR by itself: rverbs sees it. */
	mock_qp_force_state(t.qp, RV_QPS_ERR);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_ERR);
	assert_int_equal(rv_qp_to_rts(t.qp, NULL), -EINVAL);
	assert_msg_contains("ERR -> RTS");
	/* A driver refusal leaves the recorded state alone. */
	mock.fail_modify_errno = EPERM;
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET}), -EPERM);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_ERR);
	mock.fail_modify_errno = 0;
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET}), 0);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RESET);

	/* UD: no attributes needed at any step. */
	ud = new_qp_type(t.pd, t.cq, t.cq, RV_QPT_UD);
	assert_int_equal(rv_qp_to_init(ud, NULL), 0);
	assert_int_equal(mock.last_modify.qkey, 0x11111111);
	assert_int_equal(rv_qp_to_rtr(ud, NULL), 0);
	assert_int_equal(rv_qp_to_rts(ud, NULL), 0);
	assert_int_equal(rv_qp_state_of(ud), RV_QPS_RTS);
	assert_int_equal(rv_qp_connect(ud, &(rv_endpoint){.qp_type = RV_QPT_UD}), -EINVAL);
	assert_msg_contains("UD QPs are not connected");
	ud = rv_qp_unref(ud);
	unref_tree(&t);
	end_test();
}

static void test_handles__uc_qp_helpers_use_uc_attributes_and_recover_from_sqe(void **state)
{
	struct tree t;
	rv_qp *uc;
	rv_qp_attr rtr = {.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN, .dest_qp_num = 3, .rq_psn = 4};

	(void)state;
	make_tree(&t);
	uc = new_qp_type(t.pd, t.cq, t.cq, RV_QPT_UC);
	assert_int_equal(rv_qp_to_init(uc, NULL), 0);
	assert_int_equal(mock.last_modify.qp_access_flags, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rv_qp_to_rtr(uc, &rtr), 0);
	assert_int_equal(mock.last_modify.mask, RV_QP_STATE | RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN |
						RV_QP_PATH_MTU);
	assert_int_equal(rv_qp_to_rts(uc, NULL), 0);
	assert_int_equal(mock.last_modify.mask, RV_QP_STATE | RV_QP_SQ_PSN);
	/* A send queue error is recoverable for UC, not for RC. */
	mock_qp_force_state(uc, RV_QPS_SQE);
	assert_int_equal(rv_qp_modify(uc, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RTS}), 0);
	assert_int_equal(rv_qp_state_of(uc), RV_QPS_RTS);
	mock_qp_force_state(t.qp, RV_QPS_SQE);
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = RV_QP_STATE, .qp_state = RV_QPS_RTS}), -EINVAL);
	assert_msg_contains("illegal QP transition SQE -> RTS");
	uc = rv_qp_unref(uc);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_endpoint_and_connect_against_the_mock(void **state)
{
	struct tree t;
	rv_endpoint ep, peer;
	rv_qp *uc;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_qp_endpoint(t.qp, &ep), 0);
	assert_int_equal(ep.qpn, 0x100);
	assert_int_equal(ep.psn, t.qp->init_psn);
	assert_int_equal(ep.lid, 7);
	assert_int_equal(ep.mtu, RV_MTU_1024);
	assert_int_equal(ep.qp_type, RV_QPT_RC);
	assert_int_equal(ep.caps, RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM);
	assert_int_equal(ep.mask, 0);
	assert_int_equal(ep.gid[15], 1);

	peer = ep;
	peer.qpn = 0x777;
	peer.psn = 0x123456;
	peer.mtu = RV_MTU_512;
	/* Bad peers are refused before any transition. */
	uc = new_qp_type(t.pd, t.cq, t.cq, RV_QPT_UC);
	assert_int_equal(rv_qp_connect(uc, &peer), -EINVAL);
	assert_msg_contains("QP type");
	assert_int_equal(rv_qp_connect(t.qp, &(rv_endpoint){.qp_type = RV_QPT_RC, .qpn = 0}), -EINVAL);
	assert_msg_contains("out of range");
	assert_int_equal(rv_qp_connect(t.qp, &(rv_endpoint){.qp_type = RV_QPT_RC, .qpn = 5, .psn = 1u << 24}),
			 -EINVAL);
	assert_int_equal(rv_qp_connect(t.qp, &(rv_endpoint){.qp_type = RV_QPT_RC, .qpn = 5}), -EINVAL);
	assert_msg_contains("no GID");
	assert_int_equal(mock.n_modify, 0);

	assert_int_equal(rv_qp_connect(t.qp, &peer), 0);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	assert_int_equal(mock.n_modify, 3);
	/* Connecting again from RTS is refused with the reason. */
	assert_int_equal(rv_qp_connect(t.qp, &peer), -EINVAL);
	assert_msg_contains("starts from RESET or INIT");
	uc = rv_qp_unref(uc);
	unref_tree(&t);
	end_test();
}

static void test_handles__qp_helper_failures_report_their_own_message_not_a_stale_one(void **state)
{
	struct tree t;
	rv_endpoint peer;
	rv_qp_attr rtr = {.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN, .dest_qp_num = 9, .rq_psn = 1};

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_qp_endpoint(t.qp, &peer), 0);
	peer.qpn = 0x55;
	assert_int_equal(rv_qp_to_init(t.qp, NULL), 0);
	mock.fail_sets_message = false;
	mock.fail_query_errno = EIO;
#define STALE_THEN(call, name)                                             \
	do {                                                               \
		assert_int_equal(rv_pd_new(NULL, NULL, NULL), -EINVAL);    \
		assert_int_equal(call, -EIO);                              \
		assert_msg_contains(name);                                 \
		assert_msg_contains(strerror(EIO));                        \
	} while (0)
	STALE_THEN(rv_qp_to_rtr(t.qp, &rtr), "rv_qp_to_rtr: querying the device failed");
	STALE_THEN(rv_qp_connect(t.qp, &peer), "rv_qp_connect: querying the port failed");
	STALE_THEN(rv_qp_endpoint(t.qp, &peer), "rv_qp_endpoint: querying the port failed");
	mock.fail_query_errno = 0;
	assert_int_equal(rv_qp_to_rtr(t.qp, &rtr), 0);
	mock.fail_query_errno = EIO;
	STALE_THEN(rv_qp_to_rts(t.qp, NULL), "rv_qp_to_rts: querying the device failed");
#undef STALE_THEN
	mock.fail_query_errno = 0;
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTR);
	unref_tree(&t);
	end_test();
}

static void test_handles__endpoint_from_a_qp_survives_pack_and_unpack_and_connects(void **state)
{
	struct tree t;
	rv_qp *peer_qp;
	rv_endpoint ep, back;
	uint8_t wire[RV_ENDPOINT_PACKED_MAX];
	size_t len;

	(void)state;
	make_tree(&t);
	peer_qp = new_qp(t.pd, t.cq2, t.cq2);
	assert_int_equal(rv_qp_endpoint(peer_qp, &ep), 0);
	ep.mask = RV_ENDPOINT_MR;
	ep.mr_addr = (uintptr_t)rv_mr_addr(t.mr);
	ep.mr_length = rv_mr_length(t.mr);
	ep.mr_rkey = rv_mr_rkey(t.mr);
	assert_int_equal(rv_endpoint_pack(&ep, wire, sizeof(wire), &len), 0);
	assert_int_equal(rv_endpoint_unpack(wire, len, &back), 0);
	assert_int_equal(back.qpn, rv_qp_num(peer_qp));
	assert_int_equal(back.mr_rkey, rv_mr_rkey(t.mr));
	assert_int_equal(rv_qp_connect(t.qp, &back), 0);
	assert_int_equal(mock.last_modify.sq_psn, t.qp->init_psn);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	peer_qp = rv_qp_unref(peer_qp);
	unref_tree(&t);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HANDLES_TEST(test_handles__qp_new_rejects_cqs_of_another_context),
		HANDLES_TEST(test_handles__data_path_passes_driver_results_through),
		HANDLES_TEST(test_handles__qp_helpers_walk_the_state_machine),
		HANDLES_TEST(test_handles__uc_qp_helpers_use_uc_attributes_and_recover_from_sqe),
		HANDLES_TEST(test_handles__qp_endpoint_and_connect_against_the_mock),
		HANDLES_TEST(test_handles__qp_helper_failures_report_their_own_message_not_a_stale_one),
		HANDLES_TEST(test_handles__endpoint_from_a_qp_survives_pack_and_unpack_and_connects),
	};

	return cmocka_run_group_tests_name("core: qp", tests, NULL, NULL);
}
