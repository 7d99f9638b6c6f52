/*
 * Selective signalling as a QP policy (rv_qp_set_signal_every): the facade's
 * send wrapper that chooses which WRs are signalled, and the accounting of
 * completions, on every driver.
 *
 * Owns: struct rv_qp_signal (one per QP with a policy) and the list of such
 * QPs on their send CQ. Never takes a lock on the data path; the policy is
 * switched on and off under the graph lock.
 */
#ifndef RV_QP_SIGNAL_H
#define RV_QP_SIGNAL_H

#include "rverbs-private.h"

/* A QP with a policy is being destroyed (graph lock held): leave its send
 * CQ's list; the CQ polls without accounting once no such QP is left. */
void rv_qp_signal_detach(struct rv_qp *qp);

/* The post_send entry of a QP without a policy (lib/qp.c): the driver's,
 * or the facade's adapter when the driver needs a non-NULL n_posted. */
int (*rv_qp_plain_post_send(const struct rv_qp *qp))(struct rv_qp *, const rv_send_wr *, size_t, size_t *);
/* What lib/qp.c caches in qp->post_send_one without a signal policy. */
int (*rv_qp_plain_post_send_one(const struct rv_qp *qp))(struct rv_qp *, const rv_send_wr *, size_t, size_t *);

/* Free the policy state (at the handle's release). */
void rv_qp_signal_free(struct rv_qp *qp);

/* The QP went back to RESET: nothing is outstanding any more. */
void rv_qp_signal_reset(struct rv_qp *qp);

#endif
