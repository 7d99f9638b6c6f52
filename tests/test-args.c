/*
 * Argument checking of the handle calls, against the mock driver: a failed
 * create leaves its output, its parents and the driver untouched; NULL,
 * foreign memory, a handle of the wrong type and unknown mask bits are
 * -EINVAL with a message naming them; outputs are written only on success.
 *
 * Every case ends with end_test() (handles-fixture.h).
 */
#include <sys/resource.h>

#include "handles-fixture.h"

/* ---- creation failures ---- */


static void test_handles__create_failures_leave_outputs_parents_and_driver_untouched(void **state)
{
	struct tree t;
	char *before, *after;
	rv_context *ctx = SENTINEL;
	rv_pd *pd = SENTINEL;
	rv_cq *cq = SENTINEL;
	rv_mr *mr = SENTINEL;
	rv_qp *qp = SENTINEL;
	unsigned live;

	(void)state;
	make_tree(&t);
	before = dump(t.ctx);
	live = mock_live_total();
	mock.fail_sets_message = false;

	mock_fail_create(RV_OBJ_CONTEXT, ENODEV, 1);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), -ENODEV);
	assert_msg_contains("rv_context_new: opening the device failed");
	mock_fail_create(RV_OBJ_PD, ENOMEM, 1);
	assert_int_equal(rv_pd_new(t.ctx, NULL, &pd), -ENOMEM);
	assert_msg_contains("rv_pd_new: allocating the PD failed");
	mock_fail_create(RV_OBJ_CQ, EINVAL, 1);
	assert_int_equal(rv_cq_new(t.ctx, NULL, &cq), -EINVAL);
	assert_msg_contains("rv_cq_new: creating the CQ failed");
	mock_fail_create(RV_OBJ_MR, EFAULT, 1);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, &mr), -EFAULT);
	assert_msg_contains("rv_mr_reg: registering the memory failed");
	mock_fail_create(RV_OBJ_MR, EFAULT, 1);
	assert_int_equal(rv_mr_alloc(t.pd, 8, 0, NULL, &mr), -EFAULT);
	assert_msg_contains("rv_mr_alloc: registering the memory failed");
	mock_fail_create(RV_OBJ_QP, ENOSPC, 1);
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t.cq}, &qp),
			 -ENOSPC);
	assert_msg_contains("rv_qp_new: creating the QP failed");

	/* ENOMEM from a registration explains the memlock limit when there is one. */
	struct rlimit rl;
	mock_fail_create(RV_OBJ_MR, ENOMEM, 1);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, &mr), -ENOMEM);
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		assert_msg_contains("locked-memory limit");

	/* With a driver message, the driver's message is kept. */
	mock.fail_sets_message = true;
	mock_fail_create(RV_OBJ_PD, EPERM, 1);
	assert_int_equal(rv_pd_new(t.ctx, NULL, &pd), -EPERM);
	assert_msg_contains("mock_driver: injected failure creating a PD");

	assert_ptr_equal(ctx, SENTINEL);
	assert_ptr_equal(pd, SENTINEL);
	assert_ptr_equal(cq, SENTINEL);
	assert_ptr_equal(mr, SENTINEL);
	assert_ptr_equal(qp, SENTINEL);
	assert_int_equal(mock_live_total(), live);
	after = dump(t.ctx);
	assert_string_equal(before, after); /* same tree, same reference counts */
	rv_free(before);
	rv_free(after);
	unref_tree(&t);
	end_test();
}

/* ---- argument checking ---- */

static void test_handles__wrong_handle_type_through_a_cast_is_einval_naming_both(void **state)
{
	struct tree t;
	rv_wc wc;
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_mr *mr = SENTINEL;
	char want[96];

	(void)state;
	make_tree(&t);
	struct {
		void *h;
		const char *name;
	} objs[] = {{dev, "device"}, {t.ctx, "context"}, {t.pd, "PD"}, {t.cq, "CQ"}, {t.mr, "MR"}, {t.qp, "QP"}};
	size_t n = sizeof(objs) / sizeof(objs[0]);

	for (size_t i = 0; i < n; i++) {
		for (size_t want_i = 0; want_i < n; want_i++) {
			const char *want_name = objs[want_i].name;
			void *h = objs[i].h;
			int rc;

			if (want_i == i)
				continue;
			switch (want_i) {
			case 0: rc = rv_device_kind_of(h); break;
			case 1: rc = rv_context_query_device(h, &da); break;
			case 2: rc = rv_mr_reg(h, t.buf, 8, 0, &mr); break;
			case 3: rc = rv_cq_poll(h, &wc, 1); break;
			case 4: rc = rv_mr_close(h); break;
			default: rc = rv_qp_state_of(h); break;
			}
			assert_int_equal(rc, -EINVAL);
			snprintf(want, sizeof(want), "expected a %s handle, got a %s handle", want_name, objs[i].name);
			assert_msg_contains(want);
		}
	}
	/* Wrong-type ref/unref/close never touch the object. */
	for (int k = 0; k < 3; k++) {
		assert_null(rv_qp_unref((rv_qp *)t.cq));
		assert_null(rv_context_unref((rv_context *)t.pd));
		assert_null(rv_device_unref((rv_device *)t.ctx));
		assert_ptr_equal(rv_pd_ref((rv_pd *)t.qp), t.qp);
		assert_int_equal(rv_pd_close((rv_pd *)t.qp), -EINVAL);
		assert_int_equal(rv_device_close((rv_device *)t.ctx), -EINVAL);
		assert_int_equal(rv_context_close((rv_context *)dev), -EINVAL);
	}
	assert_int_equal(mock.n_log, 0);
	assert_int_equal(mock.n_poll, 0);
	assert_ptr_equal(mr, SENTINEL);
	unref_tree(&t);
	end_test();
}

static void test_handles__foreign_memory_is_einval_not_a_crash(void **state)
{
	uint64_t junk[64];
	rv_wc wc;

	(void)state;
	memset(junk, 0, sizeof(junk));
	assert_int_equal(rv_qp_state_of((rv_qp *)junk), -EINVAL);
	assert_msg_contains("not an rverbs QP handle");
	assert_int_equal(rv_cq_poll((rv_cq *)junk, &wc, 1), -EINVAL);
	assert_int_equal(rv_pd_close((rv_pd *)junk), -EINVAL);
	assert_null(rv_context_unref((rv_context *)junk));
	memset(junk, 0xff, sizeof(junk));
	assert_int_equal(rv_qp_close((rv_qp *)junk), -EINVAL);
	assert_null(rv_device_name((rv_device *)junk));
	end_test();
}

static void test_handles__null_everywhere_returns_einval_and_never_crashes(void **state)
{
	struct tree t;
	rv_wc wc;
	size_t n = 77;
	rv_sge sge = {0};
	uint8_t gid[16];
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};
	rv_qp_attr qa = {.mask = RV_QP_STATE};
	rv_qp_cap cap;
	rv_endpoint ep;
	void *out = SENTINEL;

	(void)state;
	/* NULL handles. */
	assert_int_equal(rv_device_close(NULL), -EINVAL);
	assert_msg_contains("the device handle is NULL");
	assert_null(rv_device_name(NULL));
	assert_int_equal(rv_device_kind_of(NULL), -EINVAL);
	assert_null(rv_device_unref(NULL));
	assert_int_equal(rv_context_new(NULL, NULL, (rv_context **)&out), -EINVAL);
	assert_int_equal(rv_context_close(NULL), -EINVAL);
	assert_null(rv_context_unref(NULL));
	assert_null(rv_context_device(NULL));
	assert_int_equal(rv_context_query_device(NULL, &da), -EINVAL);
	assert_int_equal(rv_context_query_port(NULL, 1, &pa), -EINVAL);
	assert_int_equal(rv_context_query_gid(NULL, 1, 0, gid), -EINVAL);
	assert_int_equal(rv_context_query_gid_entry(NULL, 1, 0, &(rv_gid_entry){0}), -EINVAL);
	assert_int_equal(rv_context_query_pkey(NULL, 1, 0, &(uint16_t){0}), -EINVAL);
	assert_int_equal(rv_mr_rereg(NULL, RV_REREG_ACCESS, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(rv_context_dump(NULL, (char **)&out), -EINVAL);
	assert_int_equal(rv_pd_new(NULL, NULL, (rv_pd **)&out), -EINVAL);
	assert_msg_contains("the context handle is NULL");
	assert_int_equal(rv_pd_close(NULL), -EINVAL);
	assert_null(rv_pd_unref(NULL));
	assert_null(rv_pd_context(NULL));
	assert_int_equal(rv_mr_reg(NULL, &n, 8, 0, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_mr_alloc(NULL, 8, 0, NULL, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_mr_close(NULL), -EINVAL);
	assert_null(rv_mr_unref(NULL));
	assert_null(rv_mr_addr(NULL));
	assert_int_equal(rv_mr_length(NULL), 0);
	assert_int_equal(rv_mr_lkey(NULL), 0);
	assert_int_equal(rv_mr_rkey(NULL), 0);
	assert_null(rv_mr_pd(NULL));
	assert_int_equal(rv_cq_new(NULL, NULL, (rv_cq **)&out), -EINVAL);
	assert_int_equal(rv_cq_close(NULL), -EINVAL);
	assert_null(rv_cq_unref(NULL));
	assert_int_equal(rv_cq_poll(NULL, &wc, 1), -EINVAL);
	assert_int_equal(rv_cq_size(NULL), 0);
	assert_int_equal(rv_qp_new(NULL, NULL, (rv_qp **)&out), -EINVAL);
	assert_int_equal(rv_qp_close(NULL), -EINVAL);
	assert_null(rv_qp_unref(NULL));
	assert_int_equal(rv_qp_num(NULL), 0);
	assert_null(rv_qp_pd(NULL));
	assert_int_equal(rv_qp_get_cap(NULL, &cap), -EINVAL);
	assert_int_equal(rv_qp_modify(NULL, &qa), -EINVAL);
	assert_int_equal(rv_qp_query(NULL, &qa), -EINVAL);
	assert_int_equal(rv_qp_state_of(NULL), -EINVAL);
	assert_int_equal(rv_qp_to_init(NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_to_rtr(NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_to_rts(NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_endpoint(NULL, &ep), -EINVAL);
	assert_int_equal(rv_qp_connect(NULL, &ep), -EINVAL);
	assert_int_equal(rv_qp_post_send(NULL, NULL, 0, &n), -EINVAL);
	assert_int_equal(rv_qp_post_recv(NULL, NULL, 0, &n), -EINVAL);
	assert_int_equal(rv_qp_write(NULL, &sge, 0, 0, 0), -EINVAL);
	assert_int_equal(rv_qp_read(NULL, &sge, 0, 0, 0), -EINVAL);
	assert_int_equal(rv_qp_send(NULL, &sge, 0), -EINVAL);
	assert_int_equal(rv_qp_recv(NULL, &sge, 0), -EINVAL);
	assert_msg_contains("the QP handle is NULL");
	assert_int_equal(n, 0); /* n_posted: nothing was posted, even on a NULL QP (issue 17) */
	assert_ptr_equal(out, SENTINEL);
	rv_free(NULL);
	assert_int_equal(rv_device_list(NULL, NULL), -EINVAL);
	assert_int_equal(rv_device_find(NULL, (rv_device **)&out), -EINVAL);
	assert_int_equal(rv_device_find("mock0", NULL), -EINVAL);
	assert_int_equal(rv_device_default(NULL), -EINVAL);
	assert_ptr_equal(out, SENTINEL);

	/* NULL inputs and outputs on live handles. */
	make_tree(&t);
	assert_int_equal(rv_context_new(dev, NULL, NULL), -EINVAL);
	assert_int_equal(rv_context_new(dev, &(rv_context_attr){.mask = RV_CONTEXT_ATTR_LISTEN_ADDR}, (rv_context **)&out),
			 -EINVAL);
	assert_msg_contains("listen_addr is NULL");
	assert_int_equal(rv_context_query_device(t.ctx, NULL), -EINVAL);
	assert_int_equal(rv_context_query_port(t.ctx, 1, NULL), -EINVAL);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, NULL), -EINVAL);
	assert_int_equal(rv_context_query_gid_entry(t.ctx, 1, 0, NULL), -EINVAL);
	assert_int_equal(rv_context_query_pkey(t.ctx, 1, 0, NULL), -EINVAL);
	/* The mock driver has neither query: a clear EOPNOTSUPP. */
	assert_int_equal(rv_context_query_gid_entry(t.ctx, 1, 0, &(rv_gid_entry){0}), -EOPNOTSUPP);
	assert_msg_contains("cannot report GID types");
	assert_int_equal(rv_context_query_pkey(t.ctx, 1, 0, &(uint16_t){0}), -EOPNOTSUPP);
	assert_msg_contains("no P_Key query");
	assert_int_equal(rv_mr_rereg(t.mr, RV_REREG_ACCESS, NULL, NULL, 0, 0), -EOPNOTSUPP);
	assert_msg_contains("cannot re-register");
	assert_int_equal(rv_context_dump(t.ctx, NULL), -EINVAL);
	assert_int_equal(rv_pd_new(t.ctx, NULL, NULL), -EINVAL);
	assert_int_equal(rv_cq_new(t.ctx, NULL, NULL), -EINVAL);
	assert_int_equal(rv_mr_reg(t.pd, NULL, 8, 0, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("addr is NULL");
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 0, NULL), -EINVAL);
	assert_int_equal(rv_mr_alloc(t.pd, 8, 0, NULL, NULL), -EINVAL);
	assert_int_equal(rv_qp_new(t.pd, NULL, (rv_qp **)&out), -EINVAL);
	assert_msg_contains("RV_QP_INIT_ATTR_SEND_CQ is required");
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ}, (rv_qp **)&out), -EINVAL);
	assert_msg_contains("the CQ handle is NULL");
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = 0, .send_cq = t.cq}, (rv_qp **)&out), -EINVAL);
	assert_msg_contains("RV_QP_INIT_ATTR_SEND_CQ is required");
	assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = t.cq}, NULL),
			 -EINVAL);
	assert_int_equal(rv_cq_poll(t.cq, NULL, 1), -EINVAL);
	assert_int_equal(rv_cq_poll(t.cq, &wc, 0), -EINVAL);
	assert_int_equal(rv_cq_poll(t.cq, &wc, -5), -EINVAL);
	assert_int_equal(rv_qp_get_cap(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_modify(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_query(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_endpoint(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_connect(t.qp, NULL), -EINVAL);
	assert_int_equal(rv_qp_post_send(t.qp, NULL, 1, &n), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(rv_qp_post_recv(t.qp, NULL, 1, NULL), -EINVAL);
	/* Zero work requests: nothing to do, not an error, and the driver is not called. */
	n = 5;
	assert_int_equal(rv_qp_post_send(t.qp, NULL, 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(rv_qp_post_recv(t.qp, &(rv_recv_wr){0}, 0, NULL), 0);
	assert_int_equal(mock.n_post_send + mock.n_post_recv + mock.n_poll, 0);
	assert_ptr_equal(out, SENTINEL);
	assert_int_equal(mock.n_modify, 0);
	/* Multicast: NULLs, a non-UD QP, a unicast GID; the mock has no multicast. */
	{
		static const uint8_t group[16] = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
		static const uint8_t unicast[16] = {0xfe, 0x80};
		rv_qp *ud;
		assert_int_equal(rv_qp_attach_mcast(NULL, group, 0), -EINVAL);
		assert_int_equal(rv_qp_detach_mcast(NULL, group, 0), -EINVAL);
		assert_int_equal(rv_qp_attach_mcast(t.qp, NULL, 0), -EINVAL);
		assert_int_equal(rv_qp_attach_mcast(t.qp, group, 0), -EINVAL); /* RC */
		assert_msg_contains("only UD QPs");
		assert_int_equal(rv_qp_new(t.pd, &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE,
							 .send_cq = t.cq, .qp_type = RV_QPT_UD}, &ud), 0);
		assert_int_equal(rv_qp_attach_mcast(ud, unicast, 0), -EINVAL);
		assert_msg_contains("not a multicast GID");
		assert_int_equal(rv_qp_attach_mcast(ud, group, 0), -EOPNOTSUPP);
		assert_msg_contains("no multicast");
		assert_int_equal(rv_qp_detach_mcast(ud, group, 0), -EOPNOTSUPP);
		rv_qp_unref(ud);
	}
	unref_tree(&t);
	end_test();
}

static void test_handles__unknown_mask_bits_are_rejected_naming_the_bit(void **state)
{
	struct tree t;
	void *out = SENTINEL;
	rv_device_attr da;
	rv_port_attr pa;
	rv_qp_attr qa;

	(void)state;
	make_tree(&t);
	assert_int_equal(rv_context_new(dev, &(rv_context_attr){.mask = 1u << 5}, (rv_context **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x20 in rv_context_attr.mask");
	assert_int_equal(rv_pd_new(t.ctx, &(rv_pd_attr){.mask = 1u << 3}, (rv_pd **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x8 in rv_pd_attr.mask");
	assert_int_equal(rv_td_new(t.ctx, &(rv_td_attr){.mask = 1}, (rv_td **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x1 in rv_td_attr.mask");
	assert_int_equal(rv_cq_new(t.ctx, &(rv_cq_attr){.mask = UINT64_C(1) << 40}, (rv_cq **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x10000000000 in rv_cq_attr.mask");
	assert_int_equal(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | (1u << 7), .send_cq = t.cq},
				   (rv_qp **)&out), -EINVAL);
	assert_msg_contains("unknown bit 0x80 in rv_qp_init_attr.mask");
	da = (rv_device_attr){.mask = RV_DEVICE_ATTR_ALL | 0x8};
	assert_int_equal(rv_context_query_device(t.ctx, &da), -EINVAL);
	assert_msg_contains("unknown bit 0x8 in rv_device_attr.mask");
	pa = (rv_port_attr){.mask = UINT64_C(1) << 63};
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), -EINVAL);
	assert_msg_contains("unknown bit 0x8000000000000000 in rv_port_attr.mask");
	qa = (rv_qp_attr){.mask = RV_QP_STATE | (UINT64_C(1) << 30)};
	assert_int_equal(rv_qp_query(t.qp, &qa), -EINVAL);
	assert_msg_contains("unknown bit 0x40000000 in rv_qp_attr.mask");
	assert_int_equal(rv_qp_modify(t.qp, &(rv_qp_attr){.mask = UINT64_C(1) << 22}), -EINVAL);
	assert_msg_contains("unknown bit 0x400000 in rv_qp_attr.mask");
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, 1u << 9, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("unknown access bit 0x200");
	assert_int_equal(rv_mr_alloc(t.pd, 8, 1u << 31, NULL, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("unknown access bit 0x80000000");
	/* Known bits with invalid values are named too. */
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, RV_ACCESS_REMOTE_WRITE, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("LOCAL_WRITE");
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 0, 0, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("length is 0");
	assert_int_equal(rv_mr_reg(t.pd, (void *)(uintptr_t)-16, 64, 0, (rv_mr **)&out), -EINVAL);
	assert_msg_contains("wraps around");
	assert_int_equal(rv_mr_alloc(t.pd, 0, 0, NULL, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_mr_alloc(t.pd, SIZE_MAX, 0, NULL, (rv_mr **)&out), -EINVAL);
	assert_int_equal(rv_cq_new(t.ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_CQE, .cqe = 0}, (rv_cq **)&out), -EINVAL);
	assert_msg_contains("cqe is 0");
	assert_int_equal(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE,
						      .qp_type = 8, .send_cq = t.cq},
				   (rv_qp **)&out), -EINVAL);
	assert_msg_contains("qp_type 8");
	assert_int_equal(rv_qp_new(t.pd,
				   &(rv_qp_init_attr){.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP,
						      .send_cq = t.cq},
				   (rv_qp **)&out), -EINVAL);
	assert_msg_contains("both 0");
	assert_int_equal(rv_context_query_port(t.ctx, 0, &(rv_port_attr){.mask = RV_PORT_ATTR_ALL}), -EINVAL);
	assert_msg_contains("port numbers start at 1");
	assert_int_equal(rv_context_query_gid(t.ctx, 1, -1, (uint8_t[16]){0}), -EINVAL);
	assert_int_equal(rv_set_log_level((rv_log_level)4), -EINVAL);
	assert_msg_contains("not an rv_log_level");
	assert_int_equal(rv_set_log_level((rv_log_level)-1), -EINVAL);
	assert_ptr_equal(out, SENTINEL);
	assert_int_equal(mock_live(RV_OBJ_MR), 1);
	unref_tree(&t);
	end_test();
}

static void test_handles__outputs_untouched_on_failure(void **state)
{
	struct tree t;
	rv_device_attr da, da_copy;
	rv_port_attr pa, pa_copy;
	rv_qp_attr qa, qa_copy;
	rv_qp_cap cap, cap_copy;
	rv_endpoint ep, ep_copy;
	uint8_t gid[16], gid_copy[16];
	char *text = SENTINEL;
	rv_device *d = SENTINEL;

	(void)state;
	make_tree(&t);
	memset(&da, 0xa5, sizeof(da));
	memset(&pa, 0xa5, sizeof(pa));
	memset(&qa, 0xa5, sizeof(qa));
	memset(&cap, 0xa5, sizeof(cap));
	memset(&ep, 0xa5, sizeof(ep));
	memset(gid, 0xa5, sizeof(gid));
	da.mask = RV_DEVICE_ATTR_ALL;
	pa.mask = RV_PORT_ATTR_ALL;
	qa.mask = RV_QP_STATE;
	da_copy = da;
	pa_copy = pa;
	qa_copy = qa;
	cap_copy = cap;
	ep_copy = ep;
	memcpy(gid_copy, gid, sizeof(gid));

	/* Driver failures. */
	mock.fail_query_errno = EIO;
	assert_int_equal(rv_context_query_device(t.ctx, &da), -EIO);
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), -EIO);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, gid), -EIO);
	assert_int_equal(rv_qp_endpoint(t.qp, &ep), -EIO);
	mock.fail_query_errno = 0;
	assert_int_equal(rv_context_query_port(t.ctx, 2, &pa), -EINVAL);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 3, gid), -EINVAL);
	/* Closed handles. */
	assert_int_equal(rv_qp_close(t.qp), 0);
	assert_int_equal(rv_qp_query(t.qp, &qa), -RV_ECLOSED);
	assert_int_equal(rv_qp_get_cap(t.qp, &cap), -RV_ECLOSED);
	assert_int_equal(rv_qp_endpoint(t.qp, &ep), -RV_ECLOSED);
	assert_int_equal(rv_context_dump((rv_context *)t.pd, &text), -EINVAL);
	assert_int_equal(rv_device_find("no-such-device", &d), -ENODEV);
	assert_msg_contains("no-such-device");
	assert_int_equal(rv_context_close(t.ctx), 0);
	assert_int_equal(rv_context_query_device(t.ctx, &da), -RV_ECLOSED);
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), -RV_ECLOSED);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, gid), -RV_ECLOSED);

	assert_memory_equal(&da, &da_copy, sizeof(da));
	assert_memory_equal(&pa, &pa_copy, sizeof(pa));
	assert_memory_equal(&qa, &qa_copy, sizeof(qa));
	assert_memory_equal(&cap, &cap_copy, sizeof(cap));
	assert_memory_equal(&ep, &ep_copy, sizeof(ep));
	assert_memory_equal(gid, gid_copy, sizeof(gid));
	assert_ptr_equal(text, SENTINEL);
	assert_ptr_equal(d, SENTINEL);
	unref_tree(&t);
	end_test();
}

static void test_handles__query_mask_zero_writes_nothing_and_all_writes_the_mask(void **state)
{
	struct tree t;
	rv_device_attr da;
	rv_port_attr pa;
	uint8_t gid[16];

	(void)state;
	make_tree(&t);
	memset(&da, 0xa5, sizeof(da));
	da.mask = 0;
	assert_int_equal(rv_context_query_device(t.ctx, &da), 0);
	assert_int_equal(da.max_cqe, 0xa5a5a5a5u);
	da.mask = RV_DEVICE_ATTR_ALL;
	assert_int_equal(rv_context_query_device(t.ctx, &da), 0);
	assert_int_equal(da.mask, RV_DEVICE_ATTR_ALL);
	assert_int_equal(da.max_cqe, 65536);
	assert_string_equal(da.fw_ver, "mock 1.0");
	pa.mask = RV_PORT_ATTR_ALL;
	assert_int_equal(rv_context_query_port(t.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, RV_PORT_ACTIVE);
	assert_int_equal(pa.lid, 7);
	assert_int_equal(rv_context_query_gid(t.ctx, 1, 0, gid), 0);
	assert_int_equal(gid[15], 1);
	unref_tree(&t);
	end_test();
}

/* On-demand registration and rv_mr_advise: argument checks first, then the
 * device's ODP capabilities, and only then the driver. */
static void test_handles__odp_registration_and_advice_check_arguments_then_device_caps(void **state)
{
	rv_sge g;
	rv_mr *mr = SENTINEL, *imr = NULL;
	struct tree t;

	(void)state;
	make_tree(&t);
	g = (rv_sge){.addr = (uint64_t)(uintptr_t)t.buf, .length = 8, .lkey = rv_mr_lkey(t.mr)};

	/* A device without ODP: ON_DEMAND and advice refused as a NIC without them. */
	mock.odp_general_caps = 0;
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, RV_ACCESS_ON_DEMAND, &mr), -EOPNOTSUPP);
	assert_msg_contains("no on-demand paging");
	assert_ptr_equal(mr, SENTINEL);
	assert_int_equal(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EOPNOTSUPP);
	assert_int_equal(mock.n_advise, 0);
	assert_int_equal(rv_mr_alloc(t.pd, 4096, RV_ACCESS_ON_DEMAND, NULL, &mr), -EOPNOTSUPP);
	assert_ptr_equal(mr, SENTINEL);
	assert_int_equal(rv_mr_rereg(t.mr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_ON_DEMAND), -EOPNOTSUPP);
	assert_msg_contains("no on-demand paging");

	/* Implicit: NULL + SIZE_MAX needs ON_DEMAND; NULL with another length is NULL. */
	assert_int_equal(rv_mr_reg(t.pd, NULL, SIZE_MAX, RV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_msg_contains("needs RV_ACCESS_ON_DEMAND");
	assert_int_equal(rv_mr_reg(t.pd, NULL, 4096, RV_ACCESS_ON_DEMAND, &mr), -EINVAL);
	assert_msg_contains("addr is NULL");
	assert_int_equal(rv_mr_reg(t.pd, NULL, SIZE_MAX, RV_ACCESS_ON_DEMAND, NULL), -EINVAL);

	/* ODP without implicit ODP: a range registers, the whole space does not. */
	mock.odp_general_caps = RV_ODP_SUPPORT;
	assert_int_equal(rv_mr_reg(t.pd, NULL, SIZE_MAX, RV_ACCESS_ON_DEMAND, &mr), -EOPNOTSUPP);
	assert_msg_contains("not implicit ODP");
	assert_ptr_equal(mr, SENTINEL);
	assert_int_equal(rv_mr_reg(t.pd, t.buf, 8, RV_ACCESS_ON_DEMAND, &imr), 0);
	imr = rv_mr_unref(imr);

	mock.odp_general_caps = RV_ODP_SUPPORT | RV_ODP_SUPPORT_IMPLICIT;
	assert_int_equal(rv_mr_reg(t.pd, NULL, SIZE_MAX, RV_ACCESS_ON_DEMAND | RV_ACCESS_LOCAL_WRITE, &imr), 0);
	assert_null(rv_mr_addr(imr));
	assert_true(rv_mr_length(imr) == SIZE_MAX);
	assert_int_equal(rv_mr_rereg(imr, RV_REREG_ACCESS, NULL, NULL, 0, RV_ACCESS_ON_DEMAND), -EOPNOTSUPP);
	assert_msg_contains("implicit ODP MR");

	/* Advice: each argument named, the driver not called. */
	assert_int_equal(rv_mr_advise(NULL, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EINVAL);
	assert_int_equal(rv_mr_advise((rv_pd *)t.cq, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EINVAL);
	assert_int_equal(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH, 0, NULL, 1), -EINVAL);
	assert_msg_contains("sges is NULL");
	assert_int_equal(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 0), -EINVAL);
	assert_msg_contains("n_sges 0");
	assert_int_equal(rv_mr_advise(t.pd, 3, 0, &g, 1), -EINVAL);
	assert_msg_contains("advice 3");
	assert_int_equal(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH, 2, &g, 1), -EINVAL);
	assert_msg_contains("unknown flag 0x2");
	g.length = 0;
	assert_int_equal(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EINVAL);
	assert_msg_contains("length 0");
	assert_int_equal(mock.n_advise, 0);

	/* Well formed: handed to the driver as given. */
	g.length = 8;
	assert_int_equal(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH_WRITE, RV_ADVISE_MR_FLAG_FLUSH, &g, 1), 0);
	assert_int_equal(mock.n_advise, 1);
	assert_int_equal(mock.last_advice, RV_ADVISE_MR_PREFETCH_WRITE);
	assert_int_equal(mock.last_advise_flags, RV_ADVISE_MR_FLAG_FLUSH);
	assert_int_equal(mock.last_advise_n, 1);
	assert_int_equal(mock.last_advise_sge.lkey, g.lkey);

	/* A closed PD. */
	assert_int_equal(rv_mr_close(imr), 0);
	imr = rv_mr_unref(imr);
	assert_int_equal(rv_pd_close(t.pd), 0);
	assert_closed_rc(rv_mr_advise(t.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), NULL);
	unref_tree(&t);
	end_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HANDLES_TEST(test_handles__create_failures_leave_outputs_parents_and_driver_untouched),
		HANDLES_TEST(test_handles__wrong_handle_type_through_a_cast_is_einval_naming_both),
		HANDLES_TEST(test_handles__foreign_memory_is_einval_not_a_crash),
		HANDLES_TEST(test_handles__null_everywhere_returns_einval_and_never_crashes),
		HANDLES_TEST(test_handles__unknown_mask_bits_are_rejected_naming_the_bit),
		HANDLES_TEST(test_handles__outputs_untouched_on_failure),
		HANDLES_TEST(test_handles__query_mask_zero_writes_nothing_and_all_writes_the_mask),
		HANDLES_TEST(test_handles__odp_registration_and_advice_check_arguments_then_device_caps),
	};

	return cmocka_run_group_tests_name("core: args", tests, NULL, NULL);
}
