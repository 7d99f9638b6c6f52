/*
 * The InfiniBand QP state table as a pure function: which transitions are
 * legal and which attributes each one requires or allows, per QP type.
 */
#ifndef RV_QP_STATE_H
#define RV_QP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rverbs/context.h>
#include <rverbs/qp.h>

/* Required and optional rv_qp_attr_mask bits of the transition cur -> next for
 * a QP of qp_type. Returns false when the transition is illegal. */
bool rv_qp_transition_masks(uint32_t qp_type, uint32_t cur, uint32_t next, uint64_t *required,
			    uint64_t *optional);

/* Validate attr against the current state. 0, or -EINVAL with the message set
 * naming the illegal transition or the missing/forbidden attribute. */
int rv_qp_check_modify(uint32_t qp_type, uint32_t cur, const rv_qp_attr *attr, const char *func);

/* Copy into a the fields of u named in u->mask (not the state, not the caps);
 * a->mask is left alone. */
void rv_qp_attr_copy_set(rv_qp_attr *a, const rv_qp_attr *u);

const char *rv_qp_state_name(uint32_t state);
const char *rv_qp_attr_bit_name(uint64_t bit);

#endif
