/*
 * Conformance: thread and parent domains, ECE and rate limits (rverbs/pd.h,
 * rverbs/qp.h). A device either has each or refuses it with -EOPNOTSUPP, and
 * the case checks whichever it answers: a parent domain (with a TD where the
 * device has them) carries a QP that passes traffic to and from MRs of the
 * parent domain and of its parent PD; ECE's query and set agree; a device
 * whose pp_rate_limit_max is 0 refuses a rate limit. soft0 has thread and
 * parent domains and refuses ECE and rate limits; rxe refuses all four
 * (it implements none of the four provider ops).
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

/* Say which answer the device gave, so that the log shows a refusal was
 * checked (and why the device gave it) rather than a pass. */
static void refused(const char *what)
{
	print_message("[ REFUSED  ] %s: %s: -EOPNOTSUPP: %s\n", conf_device_name(), what, rv_error_last());
}

static rv_qp *qp_on(rv_pd *pd, rv_cq *cq)
{
	rv_qp_init_attr qa;
	rv_qp *qp = NULL;
	int rc;

	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP;
	qa.send_cq = cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	rc = rv_qp_new(pd, &qa, &qp);
	if (rc < 0)
		fail_msg("rv_qp_new on a parent domain: %d %s", rc, rv_error_last());
	conf_adopt_qp(qp);
	return qp;
}

static void parent_domain_traffic(void)
{
	struct conf_opts o = {.no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);
	rv_td *td = NULL;
	rv_pd *pdom = NULL;
	rv_pd_attr pa = {.mask = RV_PD_ATTR_PARENT};
	struct conf_side a2;
	struct conf_buf *src;
	rv_sge s, r;
	int rc;

	rc = rv_td_new(p->a.ctx, NULL, &td);
	if (rc != 0 && rc != -EOPNOTSUPP)
		fail_msg("rv_td_new: %d %s", rc, rv_error_last());
	if (rc == -EOPNOTSUPP)
		refused("rv_td_new");
	pa.parent = p->a.pd;
	if (td) {
		pa.mask |= RV_PD_ATTR_TD;
		pa.td = td;
	}
	rc = rv_pd_new(p->a.ctx, &pa, &pdom);
	if (rc == -EOPNOTSUPP) {
		/* Refused: a device without parent domains has no TDs either
		 * (libibverbs' providers implement both or neither). */
		refused("rv_pd_new(parent domain)");
		assert_null(td);
		assert_null(pdom);
		return;
	}
	if (rc != 0)
		fail_msg("rv_pd_new(parent domain): %d %s", rc, rv_error_last());
	assert_ptr_equal(rv_pd_parent(pdom), p->a.pd);
	a2 = p->a;
	a2.qp = qp_on(pdom, p->a.cq);
	conf_connect(&a2, &p->b, NULL);

	/* SEND from an MR of the parent domain into B. */
	src = conf_buf_new(pdom, 4096, RV_ACCESS_LOCAL_WRITE);
	conf_buf_fill(src, 0x31);
	r = conf_sge(&p->b.buf, 0, 4096);
	conf_post_recv(p->b.qp, 1, &r, 1);
	s = conf_sge(src, 0, 4096);
	{
		rv_send_wr wr = {.wr_id = 2, .opcode = RV_WR_SEND, .sg_list = &s, .num_sge = 1,
				 .send_flags = RV_SEND_SIGNALED};
		conf_post(a2.qp, &wr);
	}
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	conf_expect(p->b.cq, 1, RV_WC_SUCCESS);
	assert_memory_equal(p->b.buf.p, src->p, 4096);

	/* RDMA WRITE from B into A's main buffer, an MR of the parent PD,
	 * through the parent domain's QP. */
	conf_buf_fill(&p->a.buf, 0x32);
	s = conf_sge(&p->b.buf, 0, 2048);
	{
		rv_send_wr wr = {.wr_id = 3, .opcode = RV_WR_RDMA_WRITE, .sg_list = &s, .num_sge = 1,
				 .send_flags = RV_SEND_SIGNALED};
		wr.remote_addr = conf_addr(&p->a.buf, 8192);
		wr.rkey = rv_mr_rkey(p->a.buf.mr);
		conf_post(p->b.qp, &wr);
	}
	conf_expect(p->b.cq, 3, RV_WC_SUCCESS);
	assert_memory_equal(p->a.buf.p + 8192, src->p, 2048);
	{
		const struct conf_range w = {8192, 8192 + 2048};
		conf_buf_check_except(&p->a.buf, &w, 1);
	}
	rv_pd_unref(pdom);
	rv_td_unref(td);
}

static void ece_query_and_set_agree(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_ece e = {0}, back = {0};
	int q = rv_qp_query_ece(p->a.qp, &e);
	int s;

	if (q != 0 && q != -EOPNOTSUPP)
		fail_msg("rv_qp_query_ece: %d %s", q, rv_error_last());
	s = rv_qp_set_ece(p->a.qp, &e);
	if (q == -EOPNOTSUPP) {
		/* No ECE: setting is refused the same way. */
		assert_int_equal(s, -EOPNOTSUPP);
		refused("rv_qp_query_ece and rv_qp_set_ece");
		return;
	}
	/* Setting what the QP offers is accepted, and reads back. */
	if (s != 0)
		fail_msg("rv_qp_set_ece(the queried options): %d %s", s, rv_error_last());
	assert_int_equal(rv_qp_query_ece(p->a.qp, &back), 0);
	assert_int_equal(back.vendor_id, e.vendor_id);
}

static void rate_limit_matches_caps(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	rv_device_attr d = {.mask = RV_DEVICE_ATTR_EX};
	rv_qp_rate_limit_attr rl = {.mask = RV_QP_RATE_LIMIT_RATE};
	int rc;

	assert_int_equal(rv_context_query_device(p->a.ctx, &d), 0);
	conf_connect(&p->a, &p->b, NULL);
	rl.rate_limit = d.pp_rate_limit_max ? d.pp_rate_limit_min : 1000;
	rc = rv_qp_set_rate_limit(p->a.qp, &rl);
	if (d.pp_rate_limit_max == 0) {
		/* No pacing at all: refused as unsupported. */
		if (rc != -EOPNOTSUPP)
			fail_msg("rate limit on a device reporting no pacing: %d %s", rc, rv_error_last());
		refused("rv_qp_set_rate_limit");
		return;
	}
	if (!(d.pp_supported_qpts & (1u << RV_QPT_RC))) {
		/* Pacing, but not of RC QPs: refused, as unsupported or invalid. */
		if (rc != -EOPNOTSUPP && rc != -EINVAL)
			fail_msg("rate limit on an RC QP of a device pacing other types: %d %s", rc, rv_error_last());
		return;
	}
	if (rc != 0)
		fail_msg("rv_qp_set_rate_limit(%u kbps, within %u..%u): %d %s", rl.rate_limit,
			 d.pp_rate_limit_min, d.pp_rate_limit_max, rc, rv_error_last());
	rl.rate_limit = 0; /* remove it */
	assert_int_equal(rv_qp_set_rate_limit(p->a.qp, &rl), 0);
}

const struct conf_case conf_domains_cases[] = {
	{"parent domain: a QP on it passes traffic with MRs of it and of its parent (or both refused)",
	 parent_domain_traffic},
	{"ECE: query and set agree (or both refused)", ece_query_and_set_agree},
	{"rate limit: refused where the device reports no pacing, accepted in its range", rate_limit_matches_caps},
	CONF_END,
};
