/*
 * Address handles (UD): creation with validated address vectors, the reply
 * handle from a receive completion and its GRH, and the UD checks every
 * driver runs on a send WR.
 *
 * Control path except rv_ud_wr_check, which runs once per UD send WR and
 * only loads (no lock, no atomic).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "gid_select.h"

static int ah_destroy(struct rv_object *obj)
{
	struct rv_ah *ah = (struct rv_ah *)obj;
	return ah->pd->ctx->drv->ah_destroy(ah);
}

static const struct rv_object_class ah_class = {
	.type = RV_OBJ_AH,
	.name = "AH",
	.destroy = ah_destroy,
};

/* Validate *in and apply the documented defaults into *out. */
static int ah_attr_defaults(const rv_ah_attr *in, rv_ah_attr *out, const char *func)
{
	if (in->reserved)
		return rv_err(EINVAL, func, "rv_ah_attr.reserved is 0x%x; it must be 0", in->reserved);
	if (in->flow_label > 0xfffff)
		return rv_err(EINVAL, func, "flow_label 0x%x does not fit 20 bits", in->flow_label);
	if (in->is_global > 1)
		return rv_err(EINVAL, func, "is_global is %u; use 0 or 1", in->is_global);
	if (in->sl > 15)
		return rv_err(EINVAL, func, "sl %u is above 15", in->sl);
	*out = *in;
	if (out->port_num == 0)
		out->port_num = 1;
	if (out->hop_limit == 0)
		out->hop_limit = 64;
	return 0;
}

static int ah_create(rv_pd *pd, const rv_ah_attr *attr, rv_ah **ret_ah, const char *func)
{
	struct rv_context *ctx = pd->ctx;
	struct rv_ah *ah;
	int rc;

	if (!ctx->drv->ah_create)
		return rv_err(EOPNOTSUPP, func, "device %s has no address handles", ctx->dev->name);
	ah = rv_obj_new(sizeof(*ah), &ah_class, ctx, func);
	if (!ah)
		return -ENOMEM;
	ah->pd = pd;
	ah->attr = *attr;
	rv_graph_lock(&pd->obj);
	rc = rv_obj_depend(&ah->obj, &pd->obj, func);
	if (rc == 0)
		rc = RV_DRIVER_CALL(ctx->drv->ah_create(ah), func, "creating the address handle");
	return RV_OBJ_NEW_END(ah, &pd->obj, rc, ret_ah);
}

RV_EXPORT int rv_ah_new(rv_pd *pd, const rv_ah_attr *attr, rv_ah **ret_ah)
{
	rv_ah_attr a;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL; an address handle needs an address vector");
	if (!ret_ah)
		return rv_err(EINVAL, __func__, "ret_ah is NULL");
	rc = ah_attr_defaults(attr, &a, __func__);
	if (rc == 0)
		rc = rv_gid_check_av(pd->ctx, &a, __func__);
	return rc < 0 ? rc : ah_create(pd, &a, ret_ah, __func__);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * The reply address from a GRH area, for drivers without their own reader.
 * Two layouts exist (IBA 1.4 §8.3; Annex A17 for RoCEv2 over IPv4): a GRH
 * proper (IPVer 6: traffic class, flow label, hop limit, SGID at byte 8), or
 * 20 zero bytes then the IPv4 header (source address at byte 32), which the
 * reply reaches through the IPv4-mapped GID ::ffff:a.b.c.d.
 */
static int attr_from_grh(const uint8_t *g, rv_ah_attr *a, const char *func)
{
	if (all_zero(g, 20) && (g[20] >> 4) == 4) {
		memset(a->dgid, 0, 10);
		a->dgid[10] = a->dgid[11] = 0xff;
		memcpy(a->dgid + 12, g + 32, 4);
		a->traffic_class = g[21];
		a->flow_label = 0;
	} else if ((g[0] >> 4) == 6) {
		memcpy(a->dgid, g + 8, 16);
		a->traffic_class = (uint8_t)((g[0] << 4) | (g[1] >> 4));
		a->flow_label = ((uint32_t)(g[1] & 0xf) << 16) | ((uint32_t)g[2] << 8) | g[3];
	} else {
		return rv_err(EINVAL, func, "the GRH area holds neither a GRH (IP version 6) nor an "
			      "IPv4 header after 20 zero bytes; pass the first 40 bytes of the receive buffer");
	}
	if (all_zero(a->dgid, 16))
		return rv_err(EINVAL, func, "the GRH names no source GID");
	a->is_global = 1;
	a->hop_limit = 64;
	return 0;
}

RV_EXPORT int rv_ah_from_wc(rv_pd *pd, uint8_t port_num, const rv_wc *wc, const void *grh,
			    rv_ah **ret_ah)
{
	struct rv_context *ctx;
	rv_ah_attr a;
	int rc = rv_obj_check(RV_COBJ(pd), RV_OBJ_PD, __func__);

	if (rc < 0)
		return rc;
	if (!wc || !ret_ah)
		return rv_err(EINVAL, __func__, "%s is NULL", wc ? "ret_ah" : "wc");
	if (wc->status != RV_WC_SUCCESS || !(wc->opcode & RV_WC_RECV))
		return rv_err(EINVAL, __func__, "the completion is not a successful receive (status %u, "
			      "opcode %u): only a received message names a sender", wc->status, wc->opcode);
	if ((wc->wc_flags & RV_WC_GRH) && !grh)
		return rv_err(EINVAL, __func__, "the completion has RV_WC_GRH but grh is NULL; pass the "
			      "first %d bytes of the receive buffer", RV_UD_GRH_LEN);
	ctx = pd->ctx;
	if (port_num == 0)
		port_num = 1;
	memset(&a, 0, sizeof(a));
	if (ctx->drv->ah_attr_from_wc) {
		rv_error_clear();
		rc = ctx->drv->ah_attr_from_wc(ctx, port_num, wc, (wc->wc_flags & RV_WC_GRH) ? grh : NULL, &a);
		rc = rv_err_from_driver(rc, __func__, "reading the completion's address");
		if (rc < 0)
			return rc;
	} else {
		if (!ctx->drv->ah_create)
			return rv_err(EOPNOTSUPP, __func__, "device %s has no address handles", ctx->dev->name);
		if ((wc->wc_flags & RV_WC_GRH) && (rc = attr_from_grh(grh, &a, __func__)) < 0)
			return rc;
		a.dlid = wc->slid;
		a.sl = wc->sl;
		a.src_path_bits = wc->dlid_path_bits;
	}
	a.port_num = port_num;
	a.reserved = 0;
	rc = ah_attr_defaults(&a, &a, __func__);
	return rc < 0 ? rc : ah_create(pd, &a, ret_ah, __func__);
}

RV_DEFINE_HANDLE_REF_UNREF(ah, RV_OBJ_AH)

RV_DEFINE_HANDLE_CLOSE(ah, RV_OBJ_AH, "destroying the address handle")

RV_EXPORT int rv_ah_query(const rv_ah *ah, rv_ah_attr *ret_attr)
{
	int rc = rv_obj_check(RV_COBJ(ah), RV_OBJ_AH, __func__);

	if (rc < 0)
		return rc;
	if (!ret_attr)
		return rv_err(EINVAL, __func__, "ret_attr is NULL");
	*ret_attr = ah->attr;
	return 0;
}

RV_EXPORT rv_pd *rv_ah_pd(const rv_ah *ah)
{
	if (rv_obj_check(RV_COBJ(ah), RV_OBJ_AH, __func__) < 0)
		return NULL;
	return ah->pd;
}

int rv_ud_wr_check(const struct rv_qp *qp, const rv_send_wr *wr, size_t i)
{
	static const char *const fn = "rv_qp_post_send";
	const struct rv_ah *ah = wr->ah;

	if (RV_UNLIKELY(wr->opcode != RV_WR_SEND && wr->opcode != RV_WR_SEND_WITH_IMM))
		return rv_err(EINVAL, fn, "wrs[%zu]: opcode %u on a UD QP; UD carries only RV_WR_SEND "
			      "and RV_WR_SEND_WITH_IMM", i, wr->opcode);
	if (RV_UNLIKELY(!ah))
		return rv_err(EINVAL, fn, "wrs[%zu]: a UD send needs an address handle in wr.ah "
			      "(rv_ah_new, or rv_ah_from_wc to reply)", i);
	if (RV_UNLIKELY(ah->obj.magic != rv_obj_magic(RV_OBJ_AH) || ah->obj.state != RV_OBJ_LIVE)) {
		int rc = rv_obj_check(RV_COBJ(ah), RV_OBJ_AH, fn);
		rv_err_hint("wrs[%zu].ah names it", i);
		return rc;
	}
	if (RV_UNLIKELY(ah->pd != qp->pd))
		return rv_err(EINVAL, fn, "wrs[%zu]: the address handle belongs to another PD than the QP",
			      i);
	if (RV_UNLIKELY(wr->remote_qpn == 0 || wr->remote_qpn > 0xffffff))
		return rv_err(EINVAL, fn, "wrs[%zu]: remote_qpn 0x%x is not a 24-bit QP number above 0", i,
			      wr->remote_qpn);
	return 0;
}
