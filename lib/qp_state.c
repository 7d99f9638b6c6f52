/*
 * The QP state table (IBA 1.4 §11.2.4.2 / ibv_modify_qp(3)) as data, and the
 * validation the facade runs before any driver sees a modify.
 * Pure: no handles, no locks, no I/O.
 */
#include <errno.h>
#include <stdbool.h>

#include "core/error.h"
#include "qp_state.h"

#define S RV_QP_STATE
#define RCUC(t) ((t) == RV_QPT_RC || (t) == RV_QPT_UC)

const char *rv_qp_state_name(uint32_t state)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "UNKNOWN";
}

const char *rv_qp_attr_bit_name(uint64_t bit)
{
	static const char *const names[] = {
		"RV_QP_STATE", "RV_QP_CUR_STATE", "RV_QP_EN_SQD_ASYNC_NOTIFY", "RV_QP_ACCESS_FLAGS",
		"RV_QP_PKEY_INDEX", "RV_QP_PORT", "RV_QP_QKEY", "RV_QP_AV", "RV_QP_PATH_MTU",
		"RV_QP_TIMEOUT", "RV_QP_RETRY_CNT", "RV_QP_RNR_RETRY", "RV_QP_RQ_PSN",
		"RV_QP_MAX_QP_RD_ATOMIC", "RV_QP_ALT_PATH", "RV_QP_MIN_RNR_TIMER", "RV_QP_SQ_PSN",
		"RV_QP_MAX_DEST_RD_ATOMIC", "RV_QP_PATH_MIG_STATE", "RV_QP_CAP", "RV_QP_DEST_QPN"};
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (bit == (UINT64_C(1) << i))
			return names[i];
	return "an unknown attribute";
}

bool rv_qp_transition_masks(uint32_t t, uint32_t cur, uint32_t next, uint64_t *req, uint64_t *opt)
{
	/* XRC initiators and targets as Linux's qp_state_table has them: like
	 * RC, but an initiator has no responder attributes and a target no
	 * requester ones beyond its timeout. */
	bool ud = t == RV_QPT_UD, ini = t == RV_QPT_XRC_SEND, tgt = t == RV_QPT_XRC_RECV;
	bool rc = t == RV_QPT_RC;
	uint64_t r = S, o = 0;

	if (t != RV_QPT_RC && t != RV_QPT_UC && t != RV_QPT_UD && !ini && !tgt)
		return false;
	if (next == RV_QPS_RESET || next == RV_QPS_ERR) {
		/* Any state may go to RESET or ERR with the state alone. */
		*req = S;
		*opt = 0;
		return cur <= RV_QPS_ERR;
	}
	switch (cur) {
	case RV_QPS_RESET:
		if (next != RV_QPS_INIT)
			return false;
		r |= RV_QP_PKEY_INDEX | RV_QP_PORT | (ud ? RV_QP_QKEY : RV_QP_ACCESS_FLAGS);
		break;
	case RV_QPS_INIT:
		if (next == RV_QPS_INIT) {
			o = RV_QP_PKEY_INDEX | RV_QP_PORT | (ud ? RV_QP_QKEY : RV_QP_ACCESS_FLAGS);
		} else if (next == RV_QPS_RTR) {
			if (ud) {
				o = RV_QP_PKEY_INDEX | RV_QP_QKEY;
			} else {
				r |= RV_QP_AV | RV_QP_PATH_MTU | RV_QP_DEST_QPN | RV_QP_RQ_PSN;
				if (rc || tgt)
					r |= RV_QP_MAX_DEST_RD_ATOMIC | RV_QP_MIN_RNR_TIMER;
				o = RV_QP_ALT_PATH | RV_QP_ACCESS_FLAGS | RV_QP_PKEY_INDEX;
			}
		} else {
			return false;
		}
		break;
	case RV_QPS_RTR:
		if (next != RV_QPS_RTS)
			return false;
		r |= RV_QP_SQ_PSN;
		if (rc || ini)
			r |= RV_QP_TIMEOUT | RV_QP_RETRY_CNT | RV_QP_RNR_RETRY | RV_QP_MAX_QP_RD_ATOMIC;
		if (tgt)
			r |= RV_QP_TIMEOUT;
		o = RV_QP_CUR_STATE | (ud ? RV_QP_QKEY
					  : RV_QP_ACCESS_FLAGS | RV_QP_ALT_PATH | RV_QP_PATH_MIG_STATE |
						    (rc || tgt ? RV_QP_MIN_RNR_TIMER : 0));
		break;
	case RV_QPS_RTS:
	case RV_QPS_SQD:
		if (next == RV_QPS_RTS) {
			o = RV_QP_CUR_STATE | (ud ? RV_QP_QKEY
						  : RV_QP_ACCESS_FLAGS | RV_QP_ALT_PATH | RV_QP_PATH_MIG_STATE |
							    (rc || tgt ? RV_QP_MIN_RNR_TIMER : 0));
		} else if (next == RV_QPS_SQD && cur == RV_QPS_RTS) {
			o = RV_QP_EN_SQD_ASYNC_NOTIFY;
		} else if (next == RV_QPS_SQD && cur == RV_QPS_SQD) {
			/* As the IBA table (and Linux's qp_state_table) has it: no
			 * PATH_MTU or CUR_STATE here, and RC may change its port. */
			o = ud ? RV_QP_PKEY_INDEX | RV_QP_QKEY
			       : RV_QP_AV | RV_QP_ALT_PATH | RV_QP_ACCESS_FLAGS | RV_QP_PKEY_INDEX |
					 RV_QP_PATH_MIG_STATE |
					 (rc || ini || tgt ? RV_QP_PORT | RV_QP_TIMEOUT | RV_QP_RETRY_CNT | RV_QP_RNR_RETRY |
						       RV_QP_MAX_QP_RD_ATOMIC | RV_QP_MAX_DEST_RD_ATOMIC |
						       RV_QP_MIN_RNR_TIMER
						 : 0);
		} else {
			return false;
		}
		break;
	case RV_QPS_SQE:
		if (next != RV_QPS_RTS || rc || ini || tgt)
			return false;
		o = RV_QP_CUR_STATE | (ud ? RV_QP_QKEY : RV_QP_ACCESS_FLAGS);
		break;
	default:
		return false; /* from ERR only RESET is allowed, handled above */
	}
	*req = r;
	*opt = o;
	return true;
}

void rv_qp_attr_copy_set(rv_qp_attr *a, const rv_qp_attr *u)
{
	uint64_t m = u->mask;

	if (m & RV_QP_PKEY_INDEX) a->pkey_index = u->pkey_index;
	if (m & RV_QP_PORT) a->port_num = u->port_num;
	if (m & RV_QP_ACCESS_FLAGS) a->qp_access_flags = u->qp_access_flags;
	if (m & RV_QP_QKEY) a->qkey = u->qkey;
	if (m & RV_QP_AV) a->ah_attr = u->ah_attr;
	if (m & RV_QP_PATH_MTU) a->path_mtu = u->path_mtu;
	if (m & RV_QP_DEST_QPN) a->dest_qp_num = u->dest_qp_num;
	if (m & RV_QP_RQ_PSN) a->rq_psn = u->rq_psn;
	if (m & RV_QP_SQ_PSN) a->sq_psn = u->sq_psn;
	if (m & RV_QP_MAX_DEST_RD_ATOMIC) a->max_dest_rd_atomic = u->max_dest_rd_atomic;
	if (m & RV_QP_MAX_QP_RD_ATOMIC) a->max_rd_atomic = u->max_rd_atomic;
	if (m & RV_QP_MIN_RNR_TIMER) a->min_rnr_timer = u->min_rnr_timer;
	if (m & RV_QP_TIMEOUT) a->timeout = u->timeout;
	if (m & RV_QP_RETRY_CNT) a->retry_cnt = u->retry_cnt;
	if (m & RV_QP_RNR_RETRY) a->rnr_retry = u->rnr_retry;
	if (m & RV_QP_CUR_STATE) a->cur_qp_state = u->cur_qp_state;
	if (m & RV_QP_EN_SQD_ASYNC_NOTIFY) a->en_sqd_async_notify = u->en_sqd_async_notify;
}

static int first_bit_name(uint64_t bits, const char **name)
{
	for (unsigned i = 0; i < 64; i++) {
		if (bits & (UINT64_C(1) << i)) {
			*name = rv_qp_attr_bit_name(UINT64_C(1) << i);
			return 1;
		}
	}
	return 0;
}

int rv_qp_check_modify(uint32_t t, uint32_t cur, const rv_qp_attr *attr, const char *func)
{
	uint64_t mask = attr->mask, req, opt;
	uint32_t next = (mask & RV_QP_STATE) ? attr->qp_state : cur;
	const char *name;

	if (mask & ~(uint64_t)RV_QP_ATTR_ALL) {
		if (mask & (RV_QP_ALT_PATH | RV_QP_PATH_MIG_STATE))
			return rv_err(EOPNOTSUPP, func, "alternate paths and path migration are not supported");
		return rv_err(EINVAL, func, "unknown bit 0x%llx in rv_qp_attr.mask",
			      (unsigned long long)(mask & ~(uint64_t)RV_QP_ATTR_ALL));
	}
	if (mask & RV_QP_CAP)
		return rv_err(EINVAL, func, "RV_QP_CAP cannot be modified (queue sizes are fixed at creation)");
	if (next > RV_QPS_ERR)
		return rv_err(EINVAL, func, "qp_state %u is not an rv_qp_state", next);
	if (!rv_qp_transition_masks(t, cur, next, &req, &opt))
		return rv_err(EINVAL, func, "illegal QP transition %s -> %s for this QP type",
			      rv_qp_state_name(cur), rv_qp_state_name(next));
	if (!(mask & RV_QP_STATE))
		req &= ~(uint64_t)RV_QP_STATE; /* a modify within the same state */
	if (first_bit_name(req & ~mask, &name))
		return rv_err(EINVAL, func, "the transition %s -> %s requires %s", rv_qp_state_name(cur),
			      rv_qp_state_name(next), name);
	if (first_bit_name(mask & ~(req | opt | RV_QP_STATE), &name))
		return rv_err(EINVAL, func, "%s is not allowed in the transition %s -> %s", name,
			      rv_qp_state_name(cur), rv_qp_state_name(next));
	if ((mask & RV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return rv_err(EINVAL, func, "cur_qp_state says %s but the QP is in %s",
			      rv_qp_state_name(attr->cur_qp_state), rv_qp_state_name(cur));
	if ((mask & RV_QP_PATH_MTU) && (attr->path_mtu < RV_MTU_256 || attr->path_mtu > RV_MTU_4096))
		return rv_err(EINVAL, func, "path_mtu %u is not an rv_mtu (1..5)", attr->path_mtu);
	if ((mask & RV_QP_RQ_PSN) && attr->rq_psn > 0xffffff)
		return rv_err(EINVAL, func, "rq_psn 0x%x does not fit 24 bits", attr->rq_psn);
	if ((mask & RV_QP_SQ_PSN) && attr->sq_psn > 0xffffff)
		return rv_err(EINVAL, func, "sq_psn 0x%x does not fit 24 bits", attr->sq_psn);
	if ((mask & RV_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff)
		return rv_err(EINVAL, func, "dest_qp_num 0x%x does not fit 24 bits", attr->dest_qp_num);
	if ((mask & RV_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return rv_err(EINVAL, func, "retry_cnt %u is above 7", attr->retry_cnt);
	if ((mask & RV_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return rv_err(EINVAL, func, "rnr_retry %u is above 7", attr->rnr_retry);
	if ((mask & RV_QP_TIMEOUT) && attr->timeout > 31)
		return rv_err(EINVAL, func, "timeout %u is above 31", attr->timeout);
	if ((mask & RV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return rv_err(EINVAL, func, "min_rnr_timer %u is above 31", attr->min_rnr_timer);
	if ((mask & RV_QP_PORT) && attr->port_num == 0)
		return rv_err(EINVAL, func, "port_num 0: ports start at 1");
	return 0;
}
