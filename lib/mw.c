/*
 * Memory windows: allocation on a PD, the bind work request with its argument
 * checks and the rkey increment, and the MW -> MR edge of the ownership graph.
 *
 * Control path. A window depends on its PD from allocation and on its MR from
 * the first bind, so closing the MR closes the window first (the graph's
 * depth-first cascade): a window can never expose deregistered memory.
 */
#include <errno.h>

#include "driver.h"

static int mw_destroy(struct rv_object *obj)
{
	struct rv_mw *mw = (struct rv_mw *)obj;
	return mw->pd->ctx->drv->mw_dealloc(mw);
}

static const struct rv_object_class mw_class = {
	.type = RV_OBJ_MW,
	.name = "MW",
	.destroy = mw_destroy,
};

RV_EXPORT int rv_mw_alloc(rv_pd *pd, rv_mw_type type, rv_mw **ret_mw)
{
	struct rv_context *ctx;
	struct rv_mw *mw;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (type != RV_MW_TYPE_1 && type != RV_MW_TYPE_2)
		return rv_err(EINVAL, __func__, "type %d is not a window type; use RV_MW_TYPE_1 or "
			      "RV_MW_TYPE_2", (int)type);
	if (!ret_mw)
		return rv_err(EINVAL, __func__, "ret_mw is NULL");
	ctx = pd->ctx;
	if (!ctx->drv->mw_alloc)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no memory windows in rverbs yet; "
			      "register a separate MR for the range instead", ctx->dev->name);
	mw = rv_obj_new(sizeof(*mw), &mw_class, ctx, __func__);
	if (!mw)
		return -ENOMEM;
	mw->pd = pd;
	mw->type = type;
	rv_graph_lock(&pd->obj);
	rc = rv_obj_depend(&mw->obj, &pd->obj, __func__);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->mw_alloc(mw), __func__, "allocating the memory window");
	return RV_OBJ_NEW_END(mw, &pd->obj, rc, ret_mw);
}

RV_DEFINE_HANDLE_REF_UNREF(mw, RV_OBJ_MW)

RV_DEFINE_HANDLE_CLOSE(mw, RV_OBJ_MW, "deallocating the memory window")

RV_EXPORT uint32_t rv_mw_rkey(const rv_mw *mw)
{
	if (rv_obj_check(RV_COBJ(mw), RV_OBJ_MW, __func__) < 0)
		return 0;
	return atomic_load(&((struct rv_mw *)mw)->rkey);
}

RV_EXPORT uint32_t rv_mw_type_of(const rv_mw *mw)
{
	if (rv_obj_check(RV_COBJ(mw), RV_OBJ_MW, __func__) < 0)
		return 0;
	return mw->type;
}

/* The argument checks of a bind (the facade's part; the driver checks the QP state). */
static int bind_check(const struct rv_qp *qp, const struct rv_mw *mw, const rv_mw_bind_info *info,
		      uint32_t send_flags)
{
	static const char *const fn = "rv_qp_bind_mw";
	const uint32_t remote = RV_ACCESS_REMOTE_READ | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC;
	const struct rv_mr *mr = info->mr;
	uint64_t base;
	int rc;

	if (send_flags & ~(uint32_t)(RV_SEND_SIGNALED | RV_SEND_FENCE))
		return rv_err(EINVAL, fn, "send_flags 0x%x: a bind takes only RV_SEND_SIGNALED and "
			      "RV_SEND_FENCE", send_flags);
	if (qp->qp_type != RV_QPT_RC)
		return rv_err(EINVAL, fn, "windows are bound on RC QPs; this QP is of type %u", qp->qp_type);
	if (rv_pd_protection(qp->pd) != rv_pd_protection(mw->pd))
		return rv_err(EINVAL, fn, "the window and the QP belong to different PDs");
	if (qp->sig)
		return rv_err(EOPNOTSUPP, fn, "the QP has a selective-signalling policy "
			      "(rv_qp_set_signal_every), which does not account binds yet; bind on a QP without one");
	if (info->length == 0 && info->access == 0) {
		if (mw->type != RV_MW_TYPE_1)
			return rv_err(EINVAL, fn, "a zero-length bind unbinds a type 1 window; invalidate a "
				      "type 2 window with RV_WR_LOCAL_INV");
	} else if (info->length == 0) {
		return rv_err(EINVAL, fn, "length is 0 but access is 0x%x; a window needs at least one byte "
			      "(length 0 with access 0 unbinds a type 1 window)", info->access);
	}
	if (info->access & ~remote)
		return rv_err(EINVAL, fn, "access 0x%x: a window grants only RV_ACCESS_REMOTE_READ, _WRITE "
			      "and _ATOMIC", info->access);
	rc = rv_obj_check(RV_COBJ(mr), RV_OBJ_MR, fn);
	if (rc < 0) {
		rv_err_hint("info->mr names it");
		return rc;
	}
	if (rv_pd_protection(mr->pd) != rv_pd_protection(mw->pd))
		return rv_err(EINVAL, fn, "info->mr belongs to another PD than the window");
	if (!(mr->access & RV_ACCESS_MW_BIND))
		return rv_err(EINVAL, fn, "the MR was registered without RV_ACCESS_MW_BIND; register it "
			      "with that flag to bind windows to it");
	/* IB spec o10-36.2.x: the MR need not grant the window's remote rights
	 * (the window's own rights govern remote access through it), but a
	 * window that lets peers write needs a region the HCA may write. */
	if ((info->access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & RV_ACCESS_LOCAL_WRITE))
		return rv_err(EINVAL, fn, "access 0x%x grants remote write or atomic, but the MR was "
			      "registered without RV_ACCESS_LOCAL_WRITE (its access is 0x%x)",
			      info->access, mr->access);
	base = (uint64_t)(uintptr_t)mr->addr;
	if (info->addr < base || info->addr - base > mr->length || info->length > mr->length - (info->addr - base))
		return rv_err(EINVAL, fn, "the range [0x%llx, +%llu) is not inside the MR [0x%llx, +%zu)",
			      (unsigned long long)info->addr, (unsigned long long)info->length,
			      (unsigned long long)base, mr->length);
	if (mw->mr && mw->mr != mr)
		return rv_err(EBUSY, fn, "the window is tied to the MR it was first bound to; allocate "
			      "another window for this MR");
	return 0;
}

RV_EXPORT int rv_qp_bind_mw(rv_qp *qp, rv_mw *mw, const rv_mw_bind_info *info, uint64_t wr_id,
			    uint32_t send_flags)
{
	struct rv_context *ctx;
	uint32_t old, new_rkey;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	rc = rv_obj_check(RV_COBJ(mw), RV_OBJ_MW, __func__);
	if (rc < 0)
		return rc;
	if (!info)
		return rv_err(EINVAL, __func__, "info is NULL; name the MR range to bind");
	ctx = mw->pd->ctx;
	if (!ctx->drv->mw_bind)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no memory windows in rverbs yet",
			      ctx->dev->name);
	rv_graph_lock(&mw->pd->obj);
	rc = bind_check(qp, mw, info, send_flags);
	if (rc == 0 && !mw->mr) {
		/* The first bind ties the window to the MR: closing the MR closes the window. */
		if (rv_obj_add_dep(&mw->obj, &info->mr->obj) < 0)
			rc = rv_err(ENOMEM, __func__, "out of memory");
		else
			mw->mr = info->mr;
	}
	if (rc == 0) {
		/* ibv_inc_rkey: the low 8 bits (the key) change, the index stays. */
		old = atomic_load(&mw->rkey);
		new_rkey = (old & ~0xffu) | ((old + 1) & 0xffu);
		rv_error_clear();
		rc = ctx->drv->mw_bind(qp, mw, info, &new_rkey, wr_id, send_flags);
		rc = rv_err_from_driver(rc, __func__, "posting the bind");
		if (rc == 0)
			atomic_store(&mw->rkey, new_rkey);
	}
	rv_graph_unlock(&mw->pd->obj);
	return rc;
}
