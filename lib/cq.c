/*
 * Completion queues, and the words for work-completion statuses.
 *
 * rv_cq_poll is on the data path: one inline handle check, then the driver.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "driver.h"
#include "memory.h"

static int cq_destroy(struct rv_object *obj)
{
	struct rv_cq *cq = (struct rv_cq *)obj;
	return cq->ctx->drv->cq_destroy(cq);
}

static const struct rv_object_class cq_class = {
	.type = RV_OBJ_CQ,
	.name = "CQ",
	.destroy = cq_destroy,
};

#define CQ_ATTR_KNOWN (RV_CQ_ATTR_CQE | RV_CQ_ATTR_CHANNEL | RV_CQ_ATTR_COMP_VECTOR)

RV_EXPORT int rv_cq_new(rv_context *ctx, const rv_cq_attr *attr, rv_cq **ret_cq)
{
	rv_cq_attr a = {.mask = 0, .cqe = 256, .comp_vector = 0, .channel = NULL};
	struct rv_cq *cq;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_cq)
		return rv_err(EINVAL, __func__, "ret_cq is NULL");
	if (attr) {
		if (attr->mask & ~(uint64_t)CQ_ATTR_KNOWN)
			return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_cq_attr.mask",
				      attr->mask & ~(uint64_t)CQ_ATTR_KNOWN);
		if (attr->mask & RV_CQ_ATTR_CQE) {
			if (attr->cqe == 0)
				return rv_err(EINVAL, __func__, "cqe is 0; a CQ needs at least one entry");
			a.cqe = attr->cqe;
		}
		if (attr->mask & RV_CQ_ATTR_COMP_VECTOR)
			a.comp_vector = attr->comp_vector;
		if (attr->mask & RV_CQ_ATTR_CHANNEL)
			return rv_err(EOPNOTSUPP, __func__, "completion channels are not available yet in this version");
		a.mask = attr->mask;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return rv_err(ENOMEM, __func__, "out of memory");
	rv_obj_init(&cq->obj, &cq_class, ctx);
	cq->obj.id = rv_ctx_next_id(ctx);
	cq->ctx = ctx;
	rv_graph_lock(&ctx->obj);
	rc = rv_obj_add_dep(&cq->obj, &ctx->obj);
	if (rc == 0) {
		rv_error_clear();
		rc = ctx->drv->cq_create(cq, &a);
		rc = rv_err_from_driver(rc, __func__, "creating the CQ");
	} else {
		rc = rv_err(ENOMEM, __func__, "out of memory");
	}
	if (rc < 0)
		rv_obj_abort(&cq->obj);
	rv_graph_unlock(&ctx->obj);
	if (rc == 0)
		*ret_cq = cq;
	return rc;
}

RV_EXPORT rv_cq *rv_cq_ref(rv_cq *cq)
{
	if (cq && rv_obj_check_any(RV_COBJ(cq), RV_OBJ_CQ, __func__) == 0)
		rv_obj_ref(&cq->obj);
	return cq;
}

RV_EXPORT rv_cq *rv_cq_unref(rv_cq *cq)
{
	if (cq && rv_obj_check_any(RV_COBJ(cq), RV_OBJ_CQ, __func__) == 0)
		rv_obj_unref(&cq->obj);
	return NULL;
}

RV_EXPORT int rv_cq_close(rv_cq *cq)
{
	int rc = rv_obj_check_any(RV_COBJ(cq), RV_OBJ_CQ, __func__);
	if (rc < 0)
		return rc;
	rv_error_clear();
	rc = rv_obj_close(&cq->obj, "closed by rv_cq_close");
	return rv_err_from_driver(rc, __func__, "destroying the CQ or a QP using it");
}

RV_EXPORT int rv_cq_poll(rv_cq *cq, rv_wc *wc, int max)
{
	/* rv_fork_child: one load of a flag set only in a fork child (lib/memory.c). */
	if (RV_UNLIKELY(!cq || cq->obj.magic != rv_obj_magic(RV_OBJ_CQ) || cq->obj.state != RV_OBJ_LIVE ||
			(rv_fork_child && cq->ctx->pid != rv_fork_pid)))
		return rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__);
	if (RV_UNLIKELY(!wc || max < 1))
		return rv_err(EINVAL, __func__, "%s", wc ? "max must be at least 1" : "wc is NULL");
	return cq->ctx->drv->cq_poll(cq, wc, max);
}

RV_EXPORT uint32_t rv_cq_size(const rv_cq *cq)
{
	if (rv_obj_check(RV_COBJ(cq), RV_OBJ_CQ, __func__) < 0)
		return 0;
	return cq->cqe;
}

static const struct {
	const char *name;
	const char *hint;
} wc_status_text[] = {
	[RV_WC_SUCCESS] = {"success", "the operation completed"},
	[RV_WC_LOC_LEN_ERR] = {"local length error",
		"a receive buffer was smaller than the incoming message, or a send exceeded the port MTU (UD) or max message size"},
	[RV_WC_LOC_QP_OP_ERR] = {"local QP operation error",
		"the work request was malformed for this QP: too many SGEs, inline data over max_inline_data, or an opcode the QP type does not allow"},
	[RV_WC_LOC_EEC_OP_ERR] = {"local EE context operation error", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_LOC_PROT_ERR] = {"local protection error",
		"an SGE's lkey does not cover its address range, belongs to another PD, or lacks LOCAL_WRITE for a receive/READ sink"},
	[RV_WC_WR_FLUSH_ERR] = {"work request flushed error",
		"the QP is in the error state; this WR was never executed. Look at the first completion with another status for the cause"},
	[RV_WC_MW_BIND_ERR] = {"memory window bind error", "the MR lacks MW_BIND access or the window exceeds the MR"},
	[RV_WC_BAD_RESP_ERR] = {"bad response error", "the responder sent an unexpected transport response"},
	[RV_WC_LOC_ACCESS_ERR] = {"local access error",
		"a protection error on the local data buffers during an RDMA READ response or atomic response"},
	[RV_WC_REM_INV_REQ_ERR] = {"remote invalid request error",
		"the responder rejected the request: an opcode it does not support, a message too long for its receive, or an invalid QP state"},
	[RV_WC_REM_ACCESS_ERR] = {"remote access error",
		"the rkey is wrong, the remote range is outside the MR, the MR lacks REMOTE_WRITE/READ/ATOMIC, or it belongs to another PD than the remote QP"},
	[RV_WC_REM_OP_ERR] = {"remote operation error", "the responder could not complete the operation (e.g. its receive WR was bad)"},
	[RV_WC_RETRY_EXC_ERR] = {"transport retry counter exceeded",
		"the peer did not answer within timeout x retry_cnt: it died, its QP is not in RTR/RTS, or the path (GID, LID, MTU) is wrong"},
	[RV_WC_RNR_RETRY_EXC_ERR] = {"RNR retry counter exceeded",
		"the peer had no receive posted for a SEND rnr_retry times in a row: post receives before the peer sends, or raise rnr_retry (7 = infinite)"},
	[RV_WC_LOC_RDD_VIOL_ERR] = {"local RDD violation error", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_REM_INV_RD_REQ_ERR] = {"remote invalid RD request", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_REM_ABORT_ERR] = {"remote aborted error", "the responder aborted the operation"},
	[RV_WC_INV_EECN_ERR] = {"invalid EE context number", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_INV_EEC_STATE_ERR] = {"invalid EE context state error", "RD transport error (not used by RC/UC/UD)"},
	[RV_WC_FATAL_ERR] = {"fatal error", "the device failed; reopen the context"},
	[RV_WC_RESP_TIMEOUT_ERR] = {"response timeout error", "the responder did not answer in time"},
	[RV_WC_GENERAL_ERR] = {"general error", "the device reported an error with no specific status; check the vendor error"},
};

RV_EXPORT const char *rv_wc_status_str(int status)
{
	if (status < 0 || (size_t)status >= sizeof(wc_status_text) / sizeof(wc_status_text[0]))
		return "unknown status";
	return wc_status_text[status].name;
}

RV_EXPORT const char *rv_wc_status_hint(int status)
{
	if (status < 0 || (size_t)status >= sizeof(wc_status_text) / sizeof(wc_status_text[0]))
		return "not a work-completion status known to this version of rverbs";
	return wc_status_text[status].hint;
}
