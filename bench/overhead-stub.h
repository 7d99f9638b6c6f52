/* The do-nothing provider of bench/overhead; see overhead-stub.c. */
#ifndef RV_BENCH_OVERHEAD_STUB_H
#define RV_BENCH_OVERHEAD_STUB_H

#include <stdbool.h>

#include <infiniband/verbs.h>

struct stub {
	struct ibv_context ctx_empty; /* post_send, post_recv, poll_cq -> 0 */
	struct ibv_context ctx_one;   /* poll_cq -> one completion */
	struct ibv_qp qp;
	struct ibv_cq cq_empty, cq_one;
};

void stub_init(struct stub *s);

/* What the provider was given while recording. */
struct stub_seen {
	unsigned long wrs, inline_wrs, other_wrs; /* other: unlike the first WR seen */
};

/* Start (on) or stop recording the send WRs the provider is given; returns
 * what was recorded since the last call. */
struct stub_seen stub_record_sends(struct stub *s, bool on);

#endif
