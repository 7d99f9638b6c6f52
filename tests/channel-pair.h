/*
 * Two RC QPs in one soft0 context, connected to each other over TCP: a sends
 * to b, and b's CQ has a completion channel. The setup shared by the tests
 * of completion channels and blocking waits (test-comp-channel.c,
 * test-soft-recvwait.c, test-soft-twowait.c). cmocka asserts; every helper fails the running
 * test on an error.
 */
#ifndef RVERBS_TESTS_CHANNEL_PAIR_H
#define RVERBS_TESTS_CHANNEL_PAIR_H

#include <stdint.h>

#include <rverbs/rverbs.h>

#include "test-clock.h"

#define BUF 4096 /* each side's MR */

struct pair {
	rv_context *ctx;
	rv_pd *pd;
	rv_comp_channel *ch;
	rv_cq *cq_a, *cq_b; /* cq_b has the channel */
	rv_qp *qp_a, *qp_b;
	rv_mr *mr_a, *mr_b; /* BUF bytes each, LOCAL_WRITE */
};

/* Opens and connects the pair (queues of 16 WRs, one SGE). */
void pair_open(struct pair *p);
/* Releases every handle and closes the context (asserting it closes). */
void pair_close(struct pair *p);
/* a posts a signalled SEND of mr_a's first 64 bytes (send_flags: flags as
 * well) to b; its completion is cq_a's, for whoever polls it. */
void pair_post_send(struct pair *p, uint64_t wr_id, uint32_t flags);
/* Polls cq_a (up to about 10 s) for one completion, which must be wr_id's
 * and successful. */
void pair_send_completion(struct pair *p, uint64_t wr_id);

#endif
