/*
 * The work-request builder's private entry for lib/qp.c (lib/wr_builder.c):
 * free a QP's builder when the QP is released.
 */
#ifndef RV_WR_BUILDER_H
#define RV_WR_BUILDER_H

#include "rverbs-private.h"

void rv_wr_builder_free(struct rv_qp *qp);

#endif
