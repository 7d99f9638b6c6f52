/*
 * On-demand paging through the layer: the ODP capabilities of
 * ibv_query_device_ex (odp_caps, xrc_odp_caps) and ibv_advise_mr on soft0
 * (verbs.h's inline calls the context's advise_mr). ibv_reg_mr's
 * IBV_ACCESS_ON_DEMAND, implicit ODP included (addr NULL, length SIZE_MAX),
 * passes through resources.c to rv_mr_reg, which checks it.
 *
 * Never called for a real device: those contexts carry the real provider's
 * verbs_context.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "compat.h"

_Static_assert(sizeof(struct ibv_sge) == sizeof(rv_sge) &&
	       offsetof(struct ibv_sge, addr) == offsetof(rv_sge, addr) &&
	       offsetof(struct ibv_sge, length) == offsetof(rv_sge, length) &&
	       offsetof(struct ibv_sge, lkey) == offsetof(rv_sge, lkey),
	       "ibv_sge and rv_sge share a layout");
_Static_assert((int)IBV_ODP_SUPPORT == (int)RV_ODP_SUPPORT &&
	       (int)IBV_ODP_SUPPORT_IMPLICIT == (int)RV_ODP_SUPPORT_IMPLICIT &&
	       (int)IBV_ODP_SUPPORT_SEND == (int)RV_ODP_SUPPORT_SEND &&
	       (int)IBV_ODP_SUPPORT_SRQ_RECV == (int)RV_ODP_SUPPORT_SRQ_RECV,
	       "rv_odp_* mirror ibv_odp_*");
_Static_assert((int)IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT == (int)RV_ADVISE_MR_PREFETCH_NO_FAULT &&
	       (int)IBV_ADVISE_MR_FLAG_FLUSH == (int)RV_ADVISE_MR_FLAG_FLUSH,
	       "rv_advise_mr_* mirror ibv_advise_mr's");

void compat_odp_caps(rv_context *ctx, struct ibv_device_attr_ex *ex)
{
	rv_device_attr a;

	memset(&a, 0, sizeof(a));
	a.mask = RV_DEVICE_ATTR_EX;
	/* A failed query leaves the caps 0: no ODP, as a NIC without it says. */
	if (rv_context_query_device(ctx, &a) < 0)
		return;
	ex->odp_caps.general_caps = a.odp_general_caps;
	ex->odp_caps.per_transport_caps.rc_odp_caps = a.odp_rc_caps;
	ex->odp_caps.per_transport_caps.uc_odp_caps = a.odp_uc_caps;
	ex->odp_caps.per_transport_caps.ud_odp_caps = a.odp_ud_caps;
	ex->xrc_odp_caps = a.odp_xrc_caps;
}

int compat_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		     struct ibv_sge *sg_list, uint32_t num_sges)
{
	const struct compat_pd *p;

	if (!pd || !sg_list)
		return EINVAL;
	p = compat_container_of(pd, struct compat_pd, pd);
	/* ibv_advise_mr returns the errno itself (0 on success). */
	return -rv_mr_advise(p->rv, (uint32_t)advice, flags, (const rv_sge *)sg_list, num_sges);
}
