/*
 * Conformance: UD QPs and address handles. SEND with the 40-byte GRH area
 * and the reply through rv_ah_from_wc, a receive scattered over two SGEs
 * (GRH apart from the payload), a wrong Q_Key dropped without consuming a
 * receive, a send naming a closed address handle refused at post time, and
 * the rules of attaching a UD QP to a multicast group.
 */
#include <errno.h>
#include <string.h>

#include "conf-harness.h"

#define QKEY 0x11111111u

static void ud_ready(struct conf_side *s)
{
	rv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_QKEY;
	a.qkey = QKEY;
	assert_int_equal(rv_qp_to_init(s->qp, &a), 0);
	assert_int_equal(rv_qp_to_rtr(s->qp, NULL), 0);
	assert_int_equal(rv_qp_to_rts(s->qp, NULL), 0);
}

static struct conf_pair *ud_pair(void)
{
	struct conf_opts o = {.qp_type = RV_QPT_UD, .no_connect = true};
	struct conf_pair *p = conf_pair_open(&o);

	ud_ready(&p->a);
	ud_ready(&p->b);
	return p;
}

static rv_send_wr ud_send(uint64_t id, const rv_sge *g, rv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	rv_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = RV_WR_SEND;
	w.sg_list = g;
	w.num_sge = 1;
	w.send_flags = RV_SEND_SIGNALED | RV_SEND_NO_INLINE;
	w.ah = ah;
	w.remote_qpn = qpn;
	w.remote_qkey = qkey;
	return w;
}

/* Two completions on cq in either order (a receive may complete before the
 * send that was posted first): wc[0] gets the one with the smaller wr_id. */
static void poll_two(rv_cq *cq, rv_wc wc[2])
{
	wc[0] = conf_poll(cq);
	wc[1] = conf_poll(cq);
	if (wc[0].wr_id > wc[1].wr_id) {
		rv_wc t = wc[0];
		wc[0] = wc[1];
		wc[1] = t;
	}
}

static void ud_send_with_grh_and_reply_from_the_completion(void)
{
	struct conf_pair *p = ud_pair();
	rv_ah *ah = conf_ah_to(&p->a, &p->b), *reply = NULL;
	rv_send_wr w;
	rv_sge g;
	rv_wc wc, two[2];

	g = conf_sge(&p->b.buf, 4096, RV_UD_GRH_LEN + 256);
	conf_post_recv(p->b.qp, 100, &g, 1);
	g = conf_sge(&p->a.buf, 8192, RV_UD_GRH_LEN + 256);
	conf_post_recv(p->a.qp, 200, &g, 1);
	g = conf_sge(&p->a.buf, 0, 100);
	w = ud_send(1, &g, ah, rv_qp_num(p->b.qp), QKEY);
	conf_post(p->a.qp, &w);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_true(wc.opcode & RV_WC_RECV);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 100);
	assert_int_equal(wc.src_qp, rv_qp_num(p->a.qp));
	assert_int_equal(wc.qp_num, rv_qp_num(p->b.qp));
	assert_true(wc.wc_flags & RV_WC_GRH);
	assert_memory_equal(p->b.buf.p + 4096 + RV_UD_GRH_LEN, p->a.buf.p, 100);
	/* The GRH area and the payload, nothing else. */
	conf_buf_check(&p->b.buf, 4096, 4096 + RV_UD_GRH_LEN + 100);

	assert_int_equal(rv_ah_from_wc(p->b.pd, 1, &wc, p->b.buf.p + 4096, &reply), 0);
	g = conf_sge(&p->b.buf, 0, 10);
	w = ud_send(2, &g, reply, wc.src_qp, QKEY);
	conf_post(p->b.qp, &w);
	conf_expect(p->b.cq, 2, RV_WC_SUCCESS);
	poll_two(p->a.cq, two);
	assert_int_equal(two[0].wr_id, 1);
	assert_int_equal(two[0].status, RV_WC_SUCCESS);
	assert_int_equal(two[1].wr_id, 200);
	assert_int_equal(two[1].status, RV_WC_SUCCESS);
	assert_int_equal(two[1].byte_len, RV_UD_GRH_LEN + 10);
	assert_int_equal(two[1].src_qp, rv_qp_num(p->b.qp));
	assert_memory_equal(p->a.buf.p + 8192 + RV_UD_GRH_LEN, p->b.buf.p, 10);
	conf_buf_check(&p->a.buf, 8192, 8192 + RV_UD_GRH_LEN + 10);
	rv_ah_unref(reply);
	rv_ah_unref(ah);
}

/* The usual UD receive: the GRH into a 40-byte SGE of its own, the payload
 * into a second SGE elsewhere. */
static void ud_receive_over_two_sges(void)
{
	struct conf_pair *p = ud_pair();
	rv_ah *ah = conf_ah_to(&p->a, &p->b);
	rv_sge r[2], g;
	rv_send_wr w;
	rv_wc wc;

	if (p->b.cap.max_recv_sge < 2)
		conf_skip("the QP has %u receive SGEs", p->b.cap.max_recv_sge);
	r[0] = conf_sge(&p->b.buf, 0, RV_UD_GRH_LEN);
	r[1] = conf_sge(&p->b.buf, 10000, 512);
	conf_post_recv(p->b.qp, 5, r, 2);
	g = conf_sge(&p->a.buf, 300, 200);
	w = ud_send(6, &g, ah, rv_qp_num(p->b.qp), QKEY);
	conf_post(p->a.qp, &w);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 200);
	assert_memory_equal(p->b.buf.p + 10000, p->a.buf.p + 300, 200);
	{
		struct conf_range ranges[] = {{0, RV_UD_GRH_LEN}, {10000, 10200}};
		conf_buf_check_except(&p->b.buf, ranges, 2);
	}
	conf_expect(p->a.cq, 6, RV_WC_SUCCESS);
	rv_ah_unref(ah);
}

/* A datagram with the wrong Q_Key is dropped: the sender completes, the
 * receive stays posted and takes the next good datagram. */
static void ud_wrong_qkey_is_dropped(void)
{
	struct conf_pair *p = ud_pair();
	rv_ah *ah = conf_ah_to(&p->a, &p->b);
	rv_sge r, g1, g2;
	rv_send_wr w;
	rv_wc wc;

	r = conf_sge(&p->b.buf, 0, RV_UD_GRH_LEN + 64);
	conf_post_recv(p->b.qp, 1, &r, 1);
	g1 = conf_sge(&p->a.buf, 0, 16);
	w = ud_send(2, &g1, ah, rv_qp_num(p->b.qp), QKEY ^ 1);
	conf_post(p->a.qp, &w);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	g2 = conf_sge(&p->a.buf, 1000, 24);
	w = ud_send(3, &g2, ah, rv_qp_num(p->b.qp), QKEY);
	conf_post(p->a.qp, &w);
	conf_expect(p->a.cq, 3, RV_WC_SUCCESS);
	wc = conf_poll(p->b.cq);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, RV_UD_GRH_LEN + 24);
	assert_memory_equal(p->b.buf.p + RV_UD_GRH_LEN, p->a.buf.p + 1000, 24);
	conf_buf_check(&p->b.buf, 0, RV_UD_GRH_LEN + 24);
	conf_expect_none(p->b.cq, 20);
	rv_ah_unref(ah);
}

/* A send naming a closed address handle is refused when posted. */
static void ud_send_with_a_closed_ah_is_refused(void)
{
	struct conf_pair *p = ud_pair();
	rv_ah *ah = conf_ah_to(&p->a, &p->b);
	rv_sge g = conf_sge(&p->a.buf, 0, 8);
	rv_send_wr w = ud_send(1, &g, ah, rv_qp_num(p->b.qp), QKEY);
	size_t posted = 7;

	assert_int_equal(rv_ah_close(ah), 0);
	assert_int_equal(rv_qp_post_send(p->a.qp, &w, 1, &posted), -RV_ECLOSED);
	assert_int_equal(posted, 0);
	conf_expect_none(p->a.cq, 20);
	conf_buf_check(&p->b.buf, 0, 0);
	rv_ah_unref(ah);
}

/* Multicast attach and detach, as every device with multicast agrees
 * (the kernel's ib_attach_mcast, rxe's and soft0's groups): the limits
 * reported, attach and attach again, detach, detach again refused, only UD
 * QPs and multicast GIDs. Delivery to the group is soft0's own test
 * (test-soft-mcast), which needs no fabric. */
static void ud_multicast_attach_and_detach(void)
{
	struct conf_pair *p = ud_pair();
	rv_device_attr da;
	/* 239.254.x.y, IPv4-mapped: a RoCE GID; soft0 takes it on its IPv4 address. */
	uint8_t group[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 254, 0, 0};
	static const uint8_t unicast[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 15};
	rv_qp_init_attr qa;
	rv_qp *rc;

	memset(&da, 0, sizeof(da));
	da.mask = RV_DEVICE_ATTR_MCAST;
	assert_int_equal(rv_context_query_device(p->b.ctx, &da), 0);
	if (!da.max_mcast_grp) {
		assert_int_equal(rv_qp_attach_mcast(p->b.qp, group, 0xc001), -EOPNOTSUPP);
		conf_skip("the device has no multicast (max_mcast_grp 0), and says so");
	}
	assert_true(da.max_mcast_qp_attach >= 1);
	assert_true(da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach);
	group[14] = (uint8_t)(rv_qp_num(p->b.qp) >> 8);
	group[15] = (uint8_t)(rv_qp_num(p->b.qp) | 1);
	if (rv_qp_attach_mcast(p->b.qp, group, 0xc001) == -EADDRINUSE) /* soft0 beside a kernel RoCE device */
		conf_skip("the group's port is taken on this host: %s", rv_error_last());
	assert_int_equal(rv_qp_attach_mcast(p->b.qp, group, 0xc001), 0);
	assert_int_equal(rv_qp_attach_mcast(p->a.qp, group, 0xc001), 0);
	assert_int_equal(rv_qp_detach_mcast(p->b.qp, group, 0xc001), 0);
	assert_int_equal(rv_qp_detach_mcast(p->b.qp, group, 0xc001), -EINVAL);
	assert_int_equal(rv_qp_detach_mcast(p->a.qp, group, 0xc001), 0);
	assert_int_equal(rv_qp_attach_mcast(p->a.qp, unicast, 0xc001), -EINVAL);
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ;
	qa.send_cq = p->a.cq;
	assert_int_equal(rv_qp_new(p->a.pd, &qa, &rc), 0);
	assert_int_equal(rv_qp_attach_mcast(rc, group, 0xc001), -EINVAL);
	rv_qp_unref(rc);
	conf_expect_none(p->b.cq, 20);
}

const struct conf_case conf_ud_cases[] = {
	{"UD SEND with the GRH area, reply through rv_ah_from_wc", ud_send_with_grh_and_reply_from_the_completion},
	{"UD receive over two SGEs (GRH apart from the payload)", ud_receive_over_two_sges},
	{"UD datagram with a wrong Q_Key is dropped", ud_wrong_qkey_is_dropped},
	{"UD send naming a closed address handle is refused", ud_send_with_a_closed_ah_is_refused},
	{"UD multicast attach and detach", ud_multicast_attach_and_detach},
	CONF_END,
};
