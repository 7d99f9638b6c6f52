/*
 * The QP state table as a pure function (lib/qp_state.c): rv_qp_transition_masks
 * against an independent copy of the InfiniBand table (IBA 1.4 §11.2.4.2, as
 * Linux encodes it in qp_state_table of drivers/infiniband/core/verbs.c), and
 * rv_qp_check_modify's messages and range checks.
 *
 * One deliberate difference with Linux: rverbs also allows RESET -> ERR (its
 * comment says "any state may go to RESET or ERR"); Linux refuses it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/error.h"
#include "qp_state.h"

#define N_STATES 7
#define ALT_UNSUPPORTED ((uint64_t)(RV_QP_ALT_PATH | RV_QP_PATH_MIG_STATE))

static const uint32_t types[] = {RV_QPT_RC, RV_QPT_UC, RV_QPT_UD};
static const char *const type_names[] = {"RC", "UC", "UD"};

struct expect {
	bool valid;
	uint64_t req, opt; /* without RV_QP_STATE */
};

/* The expected table, written out per type from the specification. */
static struct expect expected(int ti, uint32_t cur, uint32_t next)
{
	bool rc = ti == 0, uc = ti == 1, ud = ti == 2;
	struct expect e = {false, 0, 0};

	if (next == RV_QPS_RESET || next == RV_QPS_ERR) {
		e.valid = true;
		return e;
	}
	switch (cur) {
	case RV_QPS_RESET:
		if (next == RV_QPS_INIT) {
			e.valid = true;
			e.req = RV_QP_PKEY_INDEX | RV_QP_PORT | (ud ? RV_QP_QKEY : RV_QP_ACCESS_FLAGS);
		}
		break;
	case RV_QPS_INIT:
		if (next == RV_QPS_INIT) {
			e.valid = true;
			e.opt = RV_QP_PKEY_INDEX | RV_QP_PORT | (ud ? RV_QP_QKEY : RV_QP_ACCESS_FLAGS);
		} else if (next == RV_QPS_RTR) {
			e.valid = true;
			if (ud) {
				e.opt = RV_QP_PKEY_INDEX | RV_QP_QKEY;
			} else {
				e.req = RV_QP_AV | RV_QP_PATH_MTU | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
				if (rc)
					e.req |= RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_MIN_RNR_TIMER;
				e.opt = RV_QP_ALT_PATH | RV_QP_ACCESS_FLAGS | RV_QP_PKEY_INDEX;
			}
		}
		break;
	case RV_QPS_RTR:
		if (next == RV_QPS_RTS) {
			e.valid = true;
			e.req = RV_QP_SQ_PSN;
			if (rc)
				e.req |= RV_QP_TIMEOUT | RV_QP_RETRY_CNT | RV_QP_RNR_RETRY | RV_QP_MAX_QP_RD_ATOMIC;
			if (ud)
				e.opt = RV_QP_CUR_STATE | RV_QP_QKEY;
			else
				e.opt = RV_QP_CUR_STATE | RV_QP_ALT_PATH | RV_QP_ACCESS_FLAGS | RV_QP_PATH_MIG_STATE |
					(rc ? RV_QP_MIN_RNR_TIMER : 0);
		}
		break;
	case RV_QPS_RTS:
	case RV_QPS_SQD:
		if (next == RV_QPS_RTS) {
			e.valid = true;
			if (ud)
				e.opt = RV_QP_CUR_STATE | RV_QP_QKEY;
			else
				e.opt = RV_QP_CUR_STATE | RV_QP_ALT_PATH | RV_QP_ACCESS_FLAGS | RV_QP_PATH_MIG_STATE |
					(rc ? RV_QP_MIN_RNR_TIMER : 0);
		} else if (next == RV_QPS_SQD && cur == RV_QPS_RTS) {
			e.valid = true;
			e.opt = RV_QP_EN_SQD_ASYNC_NOTIFY;
		} else if (next == RV_QPS_SQD && cur == RV_QPS_SQD) {
			e.valid = true;
			if (ud)
				e.opt = RV_QP_PKEY_INDEX | RV_QP_QKEY;
			else if (uc)
				e.opt = RV_QP_AV | RV_QP_ALT_PATH | RV_QP_ACCESS_FLAGS | RV_QP_PKEY_INDEX |
					RV_QP_PATH_MIG_STATE;
			else
				e.opt = RV_QP_PORT | RV_QP_AV | RV_QP_TIMEOUT | RV_QP_RETRY_CNT | RV_QP_RNR_RETRY |
					RV_QP_MAX_QP_RD_ATOMIC | RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_ALT_PATH |
					RV_QP_ACCESS_FLAGS | RV_QP_PKEY_INDEX | RV_QP_MIN_RNR_TIMER |
					RV_QP_PATH_MIG_STATE;
		}
		break;
	case RV_QPS_SQE:
		if (next == RV_QPS_RTS && !rc) {
			e.valid = true;
			e.opt = RV_QP_CUR_STATE | (ud ? RV_QP_QKEY : RV_QP_ACCESS_FLAGS);
		}
		break;
	default:
		break;
	}
	return e;
}

/* An attribute set whose every field holds a valid value for cur/next. */
static rv_qp_attr valid_attr(uint32_t cur, uint32_t next, uint64_t mask)
{
	rv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.mask = mask | RV_QP_STATE;
	a.qp_state = next;
	a.cur_qp_state = cur;
	a.path_mtu = RV_MTU_1024;
	a.port_num = 1;
	a.rq_psn = 0xffffff;
	a.sq_psn = 0xffffff;
	a.dest_qp_num = 0xffffff;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.timeout = 31;
	a.min_rnr_timer = 31;
	a.qkey = 0x11111111;
	return a;
}

static void assert_msg_contains(const char *fragment)
{
	const char *msg = rv_error_last();

	if (!strstr(msg, fragment))
		fail_msg("rv_error_last() is \"%s\"; expected it to contain \"%s\"", msg, fragment);
}

static void test_qp_state__table_matches_the_infiniband_table_for_rc_uc_ud(void **state)
{
	(void)state;
	for (int ti = 0; ti < 3; ti++) {
		for (uint32_t cur = 0; cur < N_STATES; cur++) {
			for (uint32_t next = 0; next < N_STATES; next++) {
				struct expect e = expected(ti, cur, next);
				uint64_t req = 0xdead, opt = 0xbeef;
				bool ok = rv_qp_transition_masks(types[ti], cur, next, &req, &opt);

				if (ok != e.valid)
					fail_msg("%s %s -> %s: rverbs says %s", type_names[ti], rv_qp_state_name(cur),
						 rv_qp_state_name(next), ok ? "legal" : "illegal");
				if (!ok)
					continue;
				if (req != (e.req | RV_QP_STATE) || opt != e.opt)
					fail_msg("%s %s -> %s: required 0x%llx optional 0x%llx, expected 0x%llx 0x%llx",
						 type_names[ti], rv_qp_state_name(cur), rv_qp_state_name(next),
						 (unsigned long long)req, (unsigned long long)opt,
						 (unsigned long long)(e.req | RV_QP_STATE), (unsigned long long)e.opt);
			}
		}
	}
}

static void test_qp_state__every_legal_transition_accepted_with_its_required_mask(void **state)
{
	unsigned legal = 0;

	(void)state;
	for (int ti = 0; ti < 3; ti++) {
		for (uint32_t cur = 0; cur < N_STATES; cur++) {
			for (uint32_t next = 0; next < N_STATES; next++) {
				struct expect e = expected(ti, cur, next);
				rv_qp_attr a;

				if (!e.valid)
					continue;
				legal++;
				a = valid_attr(cur, next, e.req);
				if (rv_qp_check_modify(types[ti], cur, &a, "t") != 0)
					fail_msg("%s %s -> %s with its required mask: %s", type_names[ti],
						 rv_qp_state_name(cur), rv_qp_state_name(next), rv_error_last());
				/* And with every supported optional attribute too. */
				a = valid_attr(cur, next, e.req | (e.opt & ~ALT_UNSUPPORTED));
				if (rv_qp_check_modify(types[ti], cur, &a, "t") != 0)
					fail_msg("%s %s -> %s with its optional mask: %s", type_names[ti],
						 rv_qp_state_name(cur), rv_qp_state_name(next), rv_error_last());
			}
		}
	}
	assert_int_equal(legal, 3 * (7 * 2 + 8) + 2); /* to RESET/ERR from all; 8 more each; SQE -> RTS for UC, UD */
}

static void test_qp_state__every_illegal_transition_rejected_naming_it(void **state)
{
	char want[96];
	unsigned illegal = 0;

	(void)state;
	for (int ti = 0; ti < 3; ti++) {
		for (uint32_t cur = 0; cur < N_STATES; cur++) {
			for (uint32_t next = 0; next < N_STATES; next++) {
				uint64_t req, opt;
				rv_qp_attr a;

				if (expected(ti, cur, next).valid)
					continue;
				illegal++;
				assert_false(rv_qp_transition_masks(types[ti], cur, next, &req, &opt));
				/* Whatever attributes come along, the transition itself is named. */
				a = valid_attr(cur, next, 0);
				assert_int_equal(rv_qp_check_modify(types[ti], cur, &a, "rv_qp_modify"), -EINVAL);
				snprintf(want, sizeof(want), "rv_qp_modify: illegal QP transition %s -> %s",
					 rv_qp_state_name(cur), rv_qp_state_name(next));
				assert_msg_contains(want);
			}
		}
	}
	assert_true(illegal > 0);
}

static void test_qp_state__missing_required_attribute_is_named(void **state)
{
	char want[128];

	(void)state;
	for (int ti = 0; ti < 3; ti++) {
		for (uint32_t cur = 0; cur < N_STATES; cur++) {
			for (uint32_t next = 0; next < N_STATES; next++) {
				struct expect e = expected(ti, cur, next);

				if (!e.valid)
					continue;
				for (int b = 0; b < 64; b++) {
					uint64_t bit = UINT64_C(1) << b;
					rv_qp_attr a;

					if (!(e.req & bit))
						continue;
					a = valid_attr(cur, next, e.req & ~bit);
					assert_int_equal(rv_qp_check_modify(types[ti], cur, &a, "f"), -EINVAL);
					snprintf(want, sizeof(want), "the transition %s -> %s requires %s",
						 rv_qp_state_name(cur), rv_qp_state_name(next), rv_qp_attr_bit_name(bit));
					assert_msg_contains(want);
				}
			}
		}
	}
}

static void test_qp_state__forbidden_attribute_is_named(void **state)
{
	char want[128];
	unsigned checked = 0;

	(void)state;
	for (int ti = 0; ti < 3; ti++) {
		for (uint32_t cur = 0; cur < N_STATES; cur++) {
			for (uint32_t next = 0; next < N_STATES; next++) {
				struct expect e = expected(ti, cur, next);

				if (!e.valid)
					continue;
				for (int b = 1; b < 21; b++) {
					uint64_t bit = UINT64_C(1) << b;
					rv_qp_attr a;

					if ((e.req | e.opt) & bit || bit & (ALT_UNSUPPORTED | RV_QP_CAP))
						continue;
					a = valid_attr(cur, next, e.req | bit);
					assert_int_equal(rv_qp_check_modify(types[ti], cur, &a, "f"), -EINVAL);
					snprintf(want, sizeof(want), "%s is not allowed in the transition %s -> %s",
						 rv_qp_attr_bit_name(bit), rv_qp_state_name(cur), rv_qp_state_name(next));
					assert_msg_contains(want);
					checked++;
				}
			}
		}
	}
	assert_true(checked > 500);
}

static void test_qp_state__alternate_path_and_migration_are_unsupported(void **state)
{
	rv_qp_attr a;

	(void)state;
	a = valid_attr(RV_QPS_RTS, RV_QPS_RTS, RV_QP_ALT_PATH);
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTS, &a, "f"), -EOPNOTSUPP);
	assert_msg_contains("alternate paths");
	a = valid_attr(RV_QPS_RTS, RV_QPS_RTS, RV_QP_PATH_MIG_STATE);
	assert_int_equal(rv_qp_check_modify(RV_QPT_UC, RV_QPS_RTS, &a, "f"), -EOPNOTSUPP);
}

static void test_qp_state__unknown_mask_bits_are_named(void **state)
{
	rv_qp_attr a;

	(void)state;
	a = valid_attr(RV_QPS_RESET, RV_QPS_ERR, UINT64_C(1) << 21);
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RESET, &a, "f"), -EINVAL);
	assert_msg_contains("unknown bit 0x200000 in rv_qp_attr.mask");
	a = valid_attr(RV_QPS_RESET, RV_QPS_ERR, UINT64_C(1) << 63);
	assert_int_equal(rv_qp_check_modify(RV_QPT_UD, RV_QPS_RESET, &a, "f"), -EINVAL);
	assert_msg_contains("unknown bit 0x8000000000000000");
	assert_string_equal(rv_qp_attr_bit_name(UINT64_C(1) << 21), "an unknown attribute");
	assert_string_equal(rv_qp_attr_bit_name(3), "an unknown attribute");
	assert_string_equal(rv_qp_attr_bit_name(0), "an unknown attribute");
	assert_string_equal(rv_qp_attr_bit_name(RV_QP_DEST_QPN), "RV_QP_DEST_QPN");
	assert_string_equal(rv_qp_attr_bit_name(RV_QP_STATE), "RV_QP_STATE");
}

static void test_qp_state__cap_cannot_be_modified(void **state)
{
	rv_qp_attr a = valid_attr(RV_QPS_RTS, RV_QPS_RTS, RV_QP_CAP);

	(void)state;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTS, &a, "f"), -EINVAL);
	assert_msg_contains("RV_QP_CAP cannot be modified");
}

/* For each range-checked field: the largest valid value passes, the next fails naming it. */
static void test_qp_state__range_checks_name_the_field(void **state)
{
	const uint64_t rtr_rc = RV_QP_AV | RV_QP_PATH_MTU | RV_QP_DEST_QPN | RV_QP_RQ_PSN |
				RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_MIN_RNR_TIMER;
	const uint64_t rts_rc = RV_QP_SQ_PSN | RV_QP_TIMEOUT | RV_QP_RETRY_CNT | RV_QP_RNR_RETRY |
				RV_QP_MAX_QP_RD_ATOMIC;
	rv_qp_attr a;

	(void)state;
#define BAD_RTR(field, value, msg)                                                        \
	do {                                                                              \
		a = valid_attr(RV_QPS_INIT, RV_QPS_RTR, rtr_rc);                          \
		assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_INIT, &a, "f"), 0); \
		a.field = value;                                                          \
		assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_INIT, &a, "f"), -EINVAL); \
		assert_msg_contains(msg);                                                 \
	} while (0)
#define BAD_RTS(field, value, msg)                                                        \
	do {                                                                              \
		a = valid_attr(RV_QPS_RTR, RV_QPS_RTS, rts_rc);                           \
		assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTR, &a, "f"), 0);  \
		a.field = value;                                                          \
		assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTR, &a, "f"), -EINVAL); \
		assert_msg_contains(msg);                                                 \
	} while (0)
	BAD_RTR(rq_psn, 0x1000000, "rq_psn 0x1000000 does not fit 24 bits");
	BAD_RTR(rq_psn, UINT32_MAX, "rq_psn");
	BAD_RTR(dest_qp_num, 0x1000000, "dest_qp_num 0x1000000 does not fit 24 bits");
	BAD_RTR(path_mtu, 0, "path_mtu 0 is not an rv_mtu");
	BAD_RTR(path_mtu, RV_MTU_4096 + 1, "path_mtu 6 is not an rv_mtu");
	BAD_RTR(min_rnr_timer, 32, "min_rnr_timer 32 is above 31");
	BAD_RTS(sq_psn, 0x1000000, "sq_psn 0x1000000 does not fit 24 bits");
	BAD_RTS(retry_cnt, 8, "retry_cnt 8 is above 7");
	BAD_RTS(rnr_retry, 8, "rnr_retry 8 is above 7");
	BAD_RTS(timeout, 32, "timeout 32 is above 31");
	BAD_RTS(timeout, 255, "timeout 255");
#undef BAD_RTR
#undef BAD_RTS
	for (uint32_t mtu = RV_MTU_256; mtu <= RV_MTU_4096; mtu++) {
		a = valid_attr(RV_QPS_INIT, RV_QPS_RTR, rtr_rc);
		a.path_mtu = mtu;
		assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_INIT, &a, "f"), 0);
	}
	a = valid_attr(RV_QPS_RESET, RV_QPS_INIT, RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_ACCESS_FLAGS);
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RESET, &a, "f"), 0);
	a.port_num = 0;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RESET, &a, "f"), -EINVAL);
	assert_msg_contains("port_num 0: ports start at 1");
	a = valid_attr(RV_QPS_RESET, 7, 0);
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RESET, &a, "f"), -EINVAL);
	assert_msg_contains("qp_state 7 is not an rv_qp_state");
	a = valid_attr(RV_QPS_RESET, UINT32_MAX, 0);
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RESET, &a, "f"), -EINVAL);
}

static void test_qp_state__cur_qp_state_must_match_the_current_state(void **state)
{
	rv_qp_attr a = valid_attr(RV_QPS_RTS, RV_QPS_RTS, RV_QP_CUR_STATE);

	(void)state;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTS, &a, "f"), 0);
	a.cur_qp_state = RV_QPS_SQD;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTS, &a, "f"), -EINVAL);
	assert_msg_contains("cur_qp_state says SQD but the QP is in RTS");
}

static void test_qp_state__modify_without_the_state_bit_stays_in_the_current_state(void **state)
{
	rv_qp_attr a;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_PKEY_INDEX;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_INIT, &a, "f"), 0);
	a.mask = RV_QP_ACCESS_FLAGS | RV_QP_MIN_RNR_TIMER;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTS, &a, "f"), 0);
	a.mask = RV_QP_MIN_RNR_TIMER;
	assert_int_equal(rv_qp_check_modify(RV_QPT_UC, RV_QPS_RTS, &a, "f"), -EINVAL);
	assert_msg_contains("RV_QP_MIN_RNR_TIMER is not allowed in the transition RTS -> RTS");
	a.mask = RV_QP_ACCESS_FLAGS;
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, RV_QPS_RTR, &a, "f"), -EINVAL);
	assert_msg_contains("illegal QP transition RTR -> RTR");
	a.mask = 0;
	assert_int_equal(rv_qp_check_modify(RV_QPT_UD, RV_QPS_ERR, &a, "f"), 0);
}

static void test_qp_state__unknown_qp_type_and_state_are_rejected(void **state)
{
	uint64_t req = 1, opt = 2;
	rv_qp_attr a = valid_attr(RV_QPS_RESET, RV_QPS_INIT, RV_QP_PKEY_INDEX | RV_QP_PORT | RV_QP_ACCESS_FLAGS);

	(void)state;
	assert_false(rv_qp_transition_masks(1, RV_QPS_RESET, RV_QPS_INIT, &req, &opt));
	assert_false(rv_qp_transition_masks(99, RV_QPS_RESET, RV_QPS_INIT, &req, &opt));
	assert_false(rv_qp_transition_masks(RV_QPT_RC, 7, RV_QPS_RESET, &req, &opt));
	assert_false(rv_qp_transition_masks(RV_QPT_RC, UINT32_MAX, RV_QPS_ERR, &req, &opt));
	assert_int_equal(rv_qp_check_modify(99, RV_QPS_RESET, &a, "f"), -EINVAL);
	assert_msg_contains("illegal QP transition RESET -> INIT");
	a = valid_attr(9, RV_QPS_RESET, 0);
	assert_int_equal(rv_qp_check_modify(RV_QPT_RC, 9, &a, "f"), -EINVAL);
	assert_msg_contains("UNKNOWN -> RESET");
	assert_string_equal(rv_qp_state_name(RV_QPS_SQE), "SQE");
	assert_string_equal(rv_qp_state_name(7), "UNKNOWN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qp_state__table_matches_the_infiniband_table_for_rc_uc_ud),
		cmocka_unit_test(test_qp_state__every_legal_transition_accepted_with_its_required_mask),
		cmocka_unit_test(test_qp_state__every_illegal_transition_rejected_naming_it),
		cmocka_unit_test(test_qp_state__missing_required_attribute_is_named),
		cmocka_unit_test(test_qp_state__forbidden_attribute_is_named),
		cmocka_unit_test(test_qp_state__alternate_path_and_migration_are_unsupported),
		cmocka_unit_test(test_qp_state__unknown_mask_bits_are_named),
		cmocka_unit_test(test_qp_state__cap_cannot_be_modified),
		cmocka_unit_test(test_qp_state__range_checks_name_the_field),
		cmocka_unit_test(test_qp_state__cur_qp_state_must_match_the_current_state),
		cmocka_unit_test(test_qp_state__modify_without_the_state_bit_stays_in_the_current_state),
		cmocka_unit_test(test_qp_state__unknown_qp_type_and_state_are_rejected),
	};

	return cmocka_run_group_tests_name("core: qp-state", tests, NULL, NULL);
}
