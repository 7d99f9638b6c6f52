/*
 * Conformance: the extended device query (RV_DEVICE_ATTR_EX) and extended
 * CQs (rv_cq_attr.wc_flags, rv_cq_poll_ex, rv_context_read_clock).
 *
 * What every device must agree on: the extended fields are consistent with
 * the base ones and with each other, and written only when asked for; a
 * device's clock never runs backwards; a completion's raw timestamp lies
 * between two reads of the device clock taken around the operation, and its
 * wall-clock stamp between two reads of CLOCK_REALTIME (bounds, never a
 * speed); the stamps of one CQ do not decrease in the order it returns them;
 * a batch poll returns the completions in order; a flag the device does not
 * report is refused with -EOPNOTSUPP. A device that stamps nothing skips the
 * timestamp cases with its reason.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "conf-harness.h"

#define MSG 64u
#define N_BATCH 8u

static void query(rv_context *ctx, rv_device_attr *da)
{
	memset(da, 0, sizeof(*da));
	da->mask = RV_DEVICE_ATTR_ALL;
	assert_int_equal(rv_context_query_device(ctx, da), 0);
}

/* The base part alone leaves every extended byte as it was. */
static void query_ex_fields(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	size_t ex_off = offsetof(rv_device_attr, device_cap_flags_ex);
	rv_device_attr base, all;

	memset(&base, 0xa5, sizeof(base));
	base.mask = RV_DEVICE_ATTR_BASE;
	assert_int_equal(rv_context_query_device(p->a.ctx, &base), 0);
	assert_int_equal(base.mask, RV_DEVICE_ATTR_BASE);
	for (size_t i = ex_off; i < sizeof(base); i++)
		if (((const uint8_t *)&base)[i] != 0xa5)
			fail_msg("byte %zu of rv_device_attr (extended part) written by a BASE-only query", i);
	query(p->a.ctx, &all);
	assert_int_equal(all.mask, RV_DEVICE_ATTR_ALL);
	assert_int_equal(all.max_qp, base.max_qp);
	/* The limits per WR type agree with the base limits. */
	assert_true(all.max_send_sge >= 1 && all.max_send_sge <= all.max_sge);
	assert_true(all.max_recv_sge >= 1 && all.max_recv_sge <= all.max_sge);
	assert_int_equal(all.max_read_sge, all.max_sge_rd);
	/* A clock is reported with its frequency, and a stamping device says so for CQs. */
	if (all.completion_timestamp_mask)
		assert_true(all.hca_core_clock > 0);
	assert_int_equal(!!(all.cq_wc_flags & RV_CQ_WC_TIMESTAMP), !!all.completion_timestamp_mask);
	/* ODP per transport only with ODP at all; pacing bounds in order. */
	if (!(all.odp_general_caps & RV_ODP_SUPPORT))
		assert_int_equal(all.odp_rc_caps | all.odp_uc_caps | all.odp_ud_caps | all.odp_xrc_caps, 0);
	assert_true(all.pp_rate_limit_min <= all.pp_rate_limit_max);
	/* The QP the harness created got what the device says it allows. */
	assert_true(p->a.cap.max_send_sge <= all.max_send_sge);
	if (all.max_inline_data)
		assert_true(p->a.cap.max_inline_data <= all.max_inline_data);
}

/* The difference of two raw clock reads, as far as the mask lets it count. */
static uint64_t clock_diff(uint64_t later, uint64_t earlier, uint64_t mask)
{
	return (later - earlier) & mask;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void read_clock_advances(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_device_attr da;
	uint64_t a, b;
	int rc;

	query(p->a.ctx, &da);
	rc = rv_context_read_clock(p->a.ctx, &a);
	/* A device that stamps nothing has no clock to read: its refusal is
	 * what is checked (rxe). One that stamps but hides its clock skips. */
	if (rc == -EOPNOTSUPP && da.completion_timestamp_mask == 0)
		return;
	if (rc == -EOPNOTSUPP)
		conf_skip("the device stamps completions but has no readable clock: %s", rv_error_last());
	assert_int_equal(rc, 0);
	assert_int_equal(rv_context_read_clock(p->a.ctx, &b), 0);
	assert_int_equal(a & ~da.completion_timestamp_mask, 0);
	/* Not backwards: less than half the counter's range apart, forwards. */
	assert_true(clock_diff(b, a, da.completion_timestamp_mask) <= da.completion_timestamp_mask / 2);
	assert_int_equal(rv_context_read_clock(p->a.ctx, NULL), -EINVAL);
}

/* A sends n messages to B; both sides' CQs get them. */
static void send_messages(struct conf_pair *p, uint32_t n)
{
	for (uint32_t m = 0; m < n; m++) {
		rv_sge r = conf_sge(&p->b.buf, (size_t)m * 1024, 1024);
		conf_post_recv(p->b.qp, 1000 + m, &r, 1);
	}
	for (uint32_t m = 0; m < n; m++) {
		rv_sge g = conf_sge(&p->a.buf, (size_t)m * MSG, MSG);
		assert_int_equal(rv_qp_send(p->a.qp, &g, 100 + m), 0);
	}
}

/* Wait for one extended completion (the hang guard of conf_poll). */
static rv_wc_ex poll_ex_one(rv_cq *cq)
{
	struct timespec start, now, nap = {0, 50000};
	rv_wc_ex x;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		n = rv_cq_poll_ex(cq, &x, 1);
		if (n != 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > CONF_WAIT_MS)
			break;
		nanosleep(&nap, NULL);
	}
	if (n != 1)
		fail_msg("no completion within %d ms (rv_cq_poll_ex returned %d: %s)", CONF_WAIT_MS, n,
			 rv_error_last());
	return x;
}

/* Raw stamps between two clock reads around the operation, non-decreasing on one CQ. */
static void cq_timestamp_raw(void)
{
	struct conf_pair *p;
	rv_device_attr da;
	uint64_t t0, t1, prev_a = 0, prev_b = 0;

	if (!conf_device_stamps())
		return;
	p = conf_pair_open(&(struct conf_opts){.cq_wc_flags = RV_CQ_WC_TIMESTAMP});

	query(p->a.ctx, &da);
	assert_int_equal(rv_cq_get_wc_flags(p->a.cq), RV_CQ_WC_TIMESTAMP);
	assert_int_equal(rv_context_read_clock(p->a.ctx, &t0), 0);
	send_messages(p, 4);
	for (uint32_t m = 0; m < 4; m++) {
		rv_wc_ex xa = poll_ex_one(p->a.cq), xb = poll_ex_one(p->b.cq);

		assert_int_equal(xa.wc.status, RV_WC_SUCCESS);
		assert_int_equal(xa.wc.wr_id, 100 + m);
		assert_int_equal(xb.wc.wr_id, 1000 + m);
		assert_int_equal(xb.wc.byte_len, MSG);
		assert_int_equal(xa.ex_flags, RV_CQ_WC_TIMESTAMP);
		assert_int_equal(xb.ex_flags, RV_CQ_WC_TIMESTAMP);
		if (m) {
			assert_true(clock_diff(xa.timestamp, prev_a, da.completion_timestamp_mask) <=
				    da.completion_timestamp_mask / 2);
			assert_true(clock_diff(xb.timestamp, prev_b, da.completion_timestamp_mask) <=
				    da.completion_timestamp_mask / 2);
		}
		prev_a = xa.timestamp;
		prev_b = xb.timestamp;
		if (conf_arrangement() == CONF_ONE_CONTEXT || rv_device_kind_of(rv_context_device(p->a.ctx)) ==
								   RV_DEVICE_SOFT) {
			/* One clock for both contexts: B's stamps are bounded by A's reads too. */
			assert_true(clock_diff(xb.timestamp, t0, da.completion_timestamp_mask) <=
				    da.completion_timestamp_mask / 2);
		}
		assert_true(clock_diff(xa.timestamp, t0, da.completion_timestamp_mask) <=
			    da.completion_timestamp_mask / 2);
	}
	assert_int_equal(rv_context_read_clock(p->a.ctx, &t1), 0);
	assert_true(clock_diff(t1, prev_a, da.completion_timestamp_mask) <= da.completion_timestamp_mask / 2);
	assert_true(clock_diff(t1, prev_b, da.completion_timestamp_mask) <= da.completion_timestamp_mask / 2);
}

/* Wall-clock stamps between two reads of CLOCK_REALTIME around the operation. */
static void cq_timestamp_wallclock(void)
{
	struct conf_pair *p;
	uint64_t w0, w1;
	rv_wc_ex xa, xb;

	if (!conf_device_stamps())
		return;
	p = conf_pair_open(&(struct conf_opts){.cq_wc_flags = RV_CQ_WC_TIMESTAMP | RV_CQ_WC_TIMESTAMP_WALLCLOCK});
	w0 = realtime_ns();

	send_messages(p, 1);
	xa = poll_ex_one(p->a.cq);
	xb = poll_ex_one(p->b.cq);
	w1 = realtime_ns();
	assert_int_equal(xa.wc.status, RV_WC_SUCCESS);
	assert_int_equal(xb.wc.status, RV_WC_SUCCESS);
	assert_int_equal(xa.ex_flags, RV_CQ_WC_TIMESTAMP | RV_CQ_WC_TIMESTAMP_WALLCLOCK);
	/* Bounds, not speed: the clocks of a NIC and of the host may differ by
	 * their synchronisation error, which the device does not report; the
	 * software device's is the host's. */
	if (rv_device_kind_of(rv_context_device(p->a.ctx)) == RV_DEVICE_SOFT) {
		assert_true(xa.timestamp_wallclock >= w0 && xa.timestamp_wallclock <= w1);
		assert_true(xb.timestamp_wallclock >= w0 && xb.timestamp_wallclock <= w1);
	} else {
		assert_true(xa.timestamp_wallclock > 0 && xb.timestamp_wallclock > 0);
	}
}

/* One call returns a batch, in order; rv_cq_poll and rv_cq_poll_ex mix. */
static void cq_poll_ex_batch(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	rv_wc_ex x[N_BATCH];
	rv_wc wc;
	uint32_t got = 0;
	struct timespec nap = {0, 200000};

	assert_int_equal(rv_cq_get_wc_flags(p->a.cq), 0);
	send_messages(p, N_BATCH);
	/* The first with the plain poll, the rest with the extended one. */
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 1000);
	got = 1;
	for (int tries = 0; got < N_BATCH && tries < CONF_WAIT_MS * 5; tries++) {
		int n = rv_cq_poll_ex(p->b.cq, x, (int)N_BATCH);

		assert_true(n >= 0 && (uint32_t)n <= N_BATCH - got);
		for (int i = 0; i < n; i++, got++) {
			assert_int_equal(x[i].wc.wr_id, 1000 + got);
			assert_int_equal(x[i].wc.status, RV_WC_SUCCESS);
			assert_int_equal(x[i].wc.opcode, RV_WC_RECV);
			assert_int_equal(x[i].ex_flags, 0);
			assert_memory_equal(p->b.buf.p + (size_t)got * 1024, p->a.buf.p + (size_t)got * MSG, MSG);
		}
		if (got < N_BATCH)
			nanosleep(&nap, NULL);
	}
	assert_int_equal(got, N_BATCH);
	for (uint32_t m = 0; m < N_BATCH; m++)
		conf_expect(p->a.cq, 100 + m, RV_WC_SUCCESS);
	assert_int_equal(rv_cq_poll_ex(p->a.cq, NULL, 1), -EINVAL);
	assert_int_equal(rv_cq_poll_ex(p->a.cq, x, 0), -EINVAL);
}

/* A flag the device does not report is refused, by name. */
static void cq_unreported_flag_refused(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_device_attr da;
	rv_cq *cq = NULL;
	int rc;

	query(p->a.ctx, &da);
	assert_int_equal(rv_cq_new(p->a.ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = 1u << 0}, &cq),
			 -EINVAL);
	if (!(da.cq_wc_flags & RV_CQ_WC_FLOW_TAG)) {
		rc = rv_cq_new(p->a.ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_FLOW_TAG},
			       &cq);
		if (rc == 0) /* a libibverbs device may have what its query cannot say */
			conf_adopt_cq(cq);
		else
			assert_int_equal(rc, -EOPNOTSUPP);
		if (rv_device_kind_of(rv_context_device(p->a.ctx)) == RV_DEVICE_SOFT)
			assert_int_equal(rc, -EOPNOTSUPP);
	}
	if (!(da.cq_wc_flags & RV_CQ_WC_TIMESTAMP)) {
		rc = rv_cq_new(p->a.ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_TIMESTAMP},
			       &cq);
		assert_int_equal(rc, -EOPNOTSUPP);
	}
}

const struct conf_case conf_cqex_cases[] = {
	{"query_ex_fields", query_ex_fields},
	{"read_clock_advances", read_clock_advances},
	{"cq_timestamp_raw", cq_timestamp_raw},
	{"cq_timestamp_wallclock", cq_timestamp_wallclock},
	{"cq_poll_ex_batch", cq_poll_ex_batch},
	{"cq_unreported_flag_refused", cq_unreported_flag_refused},
	CONF_END,
};
