/**
 * @file rverbs/ibv.h
 * @brief The escape hatch: the raw libibverbs objects behind rverbs handles.
 *
 * Not included by rverbs/rverbs.h. Each call returns NULL for objects of the
 * software device (which has no libibverbs object) and for closed handles.
 * The returned objects stay owned by rverbs: never destroy them yourself.
 */
#ifndef RVERBS_IBV_H
#define RVERBS_IBV_H

#include <infiniband/verbs.h>
#include <rverbs/rverbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ibv_context behind @p ctx, or NULL. */
RV_API struct ibv_context *rv_context_ibv(rv_context *ctx);
/** The ibv_pd behind @p pd, or NULL. */
RV_API struct ibv_pd *rv_pd_ibv(rv_pd *pd);
/** The ibv_mr behind @p mr, or NULL. */
RV_API struct ibv_mr *rv_mr_ibv(rv_mr *mr);
/** The ibv_cq behind @p cq, or NULL. */
RV_API struct ibv_cq *rv_cq_ibv(rv_cq *cq);
/** The ibv_qp behind @p qp, or NULL. */
RV_API struct ibv_qp *rv_qp_ibv(rv_qp *qp);

#ifdef __cplusplus
}
#endif

#endif
