/*
 * Extended CQs of the libibverbs driver: a CQ created with rv_cq_attr.wc_flags
 * is an ibv_cq_ex (ibv_create_cq_ex), polled with ibv_start_poll /
 * ibv_next_poll / ibv_end_poll and the ibv_wc_read_* accessors, for
 * rv_cq_poll_ex and for rv_cq_poll on that CQ alike (not every provider lets
 * ibv_poll_cq poll an extended CQ).
 *
 * Owns: the creation of such CQs (refused with -EOPNOTSUPP and the reason
 * before asking the provider where the device reports no completion clock)
 * and their two poll entries. drv_cq stays the struct ibv_cq * of the CQ
 * (ibv_cq_ex_to_cq), so resize, notify, destroy and the escape hatch are
 * the plain CQ's. Never blocks.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "ibv-driver.h"
#include "translate.h"

/* What ibv_cq_ex_to_cq undoes: libibverbs' struct ibv_cq_ex begins with the
 * fields of struct ibv_cq, and the cast is how it converts. */
static inline struct ibv_cq_ex *cq_ex(const struct rv_cq *cq)
{
	return (struct ibv_cq_ex *)cq->drv_cq;
}

/* The provider's current entry as an rv_wc (and the extended fields). */
static void read_entry(struct ibv_cq_ex *x, uint32_t want, rv_wc *wc, rv_wc_ex *wcx)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = x->wr_id;
	wc->status = (uint32_t)x->status;
	wc->vendor_err = ibv_wc_read_vendor_err(x);
	/* As ibv_wc: the other fields mean something only on success. */
	if (x->status == IBV_WC_SUCCESS) {
		unsigned int flags = ibv_wc_read_wc_flags(x);

		wc->opcode = (uint32_t)ibv_wc_read_opcode(x);
		wc->byte_len = ibv_wc_read_byte_len(x);
		wc->wc_flags = flags;
		if (flags & IBV_WC_WITH_IMM)
			wc->imm_data = be32toh(ibv_wc_read_imm_data(x));
		else if (flags & IBV_WC_WITH_INV)
			wc->imm_data = ibv_wc_read_invalidated_rkey(x);
		wc->qp_num = ibv_wc_read_qp_num(x);
		wc->src_qp = ibv_wc_read_src_qp(x);
		wc->slid = (uint16_t)ibv_wc_read_slid(x);
		wc->sl = ibv_wc_read_sl(x);
		wc->dlid_path_bits = ibv_wc_read_dlid_path_bits(x);
	}
	if (!wcx)
		return;
	wcx->ex_flags = want;
	if (want & RV_CQ_WC_TIMESTAMP)
		wcx->timestamp = ibv_wc_read_completion_ts(x);
	if (want & RV_CQ_WC_TIMESTAMP_WALLCLOCK)
		wcx->timestamp_wallclock = ibv_wc_read_completion_wallclock_ns(x);
	if ((want & RV_CQ_WC_FLOW_TAG) && x->status == IBV_WC_SUCCESS)
		wcx->flow_tag = ibv_wc_read_flow_tag(x);
}

/* As datapath.c's rv_cq_poll: a provider that reports an overflow only by
 * IBV_EVENT_CQ_ERR (acknowledged into async_events_completed) makes the
 * empty poll return -EOVERFLOW. */
static inline bool cq_err_seen(const struct rv_cq *cq)
{
	const struct ibv_cq *icq = cq->drv_cq;

	return __atomic_load_n(&icq->async_events_completed, __ATOMIC_RELAXED) != 0;
}

static int cq_err_empty(struct rv_cq *cq)
{
	rv_err(EOVERFLOW, "rv_cq_poll", "the device reported a CQ error (IBV_EVENT_CQ_ERR) on this CQ "
	       "of %u entries, and it holds no more completions", cq->cqe);
	rv_err_hint("usually the CQ overflowed: size it for the sum of its QPs' queue depths");
	return -EOVERFLOW;
}

static int poll_error(struct rv_cq *cq, int rc)
{
	rv_err(EOVERFLOW, "rv_cq_poll", "ibv_start_poll/ibv_next_poll on the CQ of %u entries failed "
	       "(%d): the CQ is in error", cq->cqe, rc);
	rv_err_hint("usually the CQ overflowed: size it for the sum of its QPs' queue depths");
	return -EOVERFLOW;
}

/* One batch: wc or wcx receives up to max entries. */
static int poll_batch(struct rv_cq *cq, rv_wc *wc, rv_wc_ex *wcx, int max)
{
	struct ibv_cq_ex *x = cq_ex(cq);
	struct ibv_poll_cq_attr pa;
	int n = 0, rc;

	memset(&pa, 0, sizeof(pa));
	rc = ibv_start_poll(x, &pa);
	if (rc == ENOENT)
		return RV_UNLIKELY(cq_err_seen(cq)) ? cq_err_empty(cq) : 0;
	if (rc != 0)
		return poll_error(cq, rc);
	for (;;) {
		if (wcx) {
			memset(&wcx[n], 0, sizeof(wcx[n]));
			read_entry(x, cq->wc_flags, &wcx[n].wc, &wcx[n]);
		} else {
			read_entry(x, 0, &wc[n], NULL);
		}
		if (++n == max)
			break;
		rc = ibv_next_poll(x);
		if (rc != 0)
			break;
	}
	ibv_end_poll(x);
	return rc != 0 && rc != ENOENT && n == 0 ? poll_error(cq, rc) : n;
}

int rv_ibv_cq_poll_ex(struct rv_cq *cq, rv_wc_ex *wc, int max)
{
	return poll_batch(cq, NULL, wc, max);
}

/* rv_cq_poll on an extended CQ (lib/cq.c calls cq->poll). */
static int poll_plain_on_ex(struct rv_cq *cq, rv_wc *wc, int max)
{
	return poll_batch(cq, wc, NULL, max);
}

int rv_ibv_cq_create_ex(struct rv_cq *cq, const rv_cq_attr *attr)
{
	struct ibv_context *c = rv_ibv_ctx(cq->ctx);
	struct ibv_cq_init_attr_ex ia;
	struct ibv_device_attr_ex ax;
	struct ibv_cq_ex *x;
	char ebuf[128];
	int err;

	memset(&ax, 0, sizeof(ax));
	if ((attr->wc_flags & RV_CQ_WC_TIMESTAMP) &&
	    (ibv_query_device_ex(c, NULL, &ax) != 0 || ax.completion_timestamp_mask == 0))
		return rv_err(EOPNOTSUPP, "rv_cq_new", "device %s does not stamp completions "
			      "(ibv_query_device_ex reports no completion_timestamp_mask); leave "
			      "RV_CQ_WC_TIMESTAMP out of wc_flags", cq->ctx->dev->name);
	memset(&ia, 0, sizeof(ia));
	ia.cqe = attr->cqe;
	ia.cq_context = cq; /* ibv_get_cq_event gives it back */
	if ((attr->mask & RV_CQ_ATTR_CHANNEL) && attr->channel)
		ia.channel = attr->channel->drv_ch;
	ia.comp_vector = attr->comp_vector;
	ia.wc_flags = IBV_WC_STANDARD_FLAGS | attr->wc_flags;
	if ((attr->mask & RV_CQ_ATTR_PD) && attr->pd) {
		ia.comp_mask |= IBV_CQ_INIT_ATTR_MASK_PD;
		ia.parent_domain = attr->pd->drv_pd;
	}
	errno = 0;
	x = ibv_create_cq_ex(c, &ia);
	if (x) {
		struct ibv_cq *q = ibv_cq_ex_to_cq(x);

		cq->drv_cq = q;
		cq->cqe = q->cqe > 0 ? (uint32_t)q->cqe : attr->cqe;
		cq->poll = poll_plain_on_ex;
		return 0;
	}
	err = errno ? errno : ENOMEM;
	if (err == EOPNOTSUPP || err == ENOSYS || err == EPROTONOSUPPORT) {
		rv_err(EOPNOTSUPP, "rv_cq_new", "device %s cannot give the completion fields 0x%llx "
		       "(ibv_create_cq_ex: %s)", cq->ctx->dev->name, (unsigned long long)attr->wc_flags,
		       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
		rv_err_hint("wall-clock stamps and flow tags depend on the device and its provider; "
			    "ask for fewer rv_cq_wc_flags");
		return -EOPNOTSUPP;
	}
	rv_err(err, "rv_cq_new", "ibv_create_cq_ex(cqe %u, comp_vector %u, wc_flags 0x%llx) on %s "
	       "failed: %s", attr->cqe, attr->comp_vector, (unsigned long long)ia.wc_flags,
	       cq->ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == EINVAL)
		rv_err_hint("the device may refuse these rv_cq_wc_flags, or cqe %u / comp_vector %u "
			    "exceed its limits", attr->cqe, attr->comp_vector);
	return -err;
}
