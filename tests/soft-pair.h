/*
 * Two soft0 contexts with one RC QP, CQ, PD and MR each, connected by hand
 * (INIT, RTR, RTS with chosen attributes): the setup shared by the soft0 tests
 * of protocol extensions and memory windows. cmocka asserts; every helper
 * fails the running test on an error.
 */
#ifndef RVERBS_TESTS_SOFT_PAIR_H
#define RVERBS_TESTS_SOFT_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include <rverbs/rverbs.h>

#define BUF (1u << 16)

struct side {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
};

/* Connection attributes a test may change from the helper's defaults. */
struct conn_opts {
	int max_dest_rd_atomic; /* -1: default */
	int max_rd_atomic;      /* -1: default */
	int rnr_retry;          /* -1: default (7) */
	int min_rnr_timer;      /* -1: default (12) */
	uint32_t access;        /* qp_access_flags; 0: default */
};

extern const struct conn_opts DEFAULTS;

rv_context *open_ctx(uint32_t soft_flags);
/* A new RC QP on s's PD and CQ (64 WRs and 4 SGEs each way), as side_open's. */
rv_qp *side_qp_new(struct side *s);
void side_open(struct side *s, uint32_t soft_flags, uint32_t mr_access);
void side_close(struct side *s);
void connect_one(struct side *s, const rv_endpoint *peer, const struct conn_opts *o);
void connect_pair(struct side *a, const struct conn_opts *oa, struct side *b, const struct conn_opts *ob);
int64_t now_ms(void);
rv_wc poll_one_within(rv_cq *cq, int limit_ms);
rv_wc poll_one(rv_cq *cq);
rv_sge sge(struct side *s, size_t off, uint32_t len);
void fill(uint8_t *p, size_t n, unsigned seed);

/* Signalled 64-byte SENDs numbered by wr_id, with bytes checked on receipt. */
#define MSG_SMALL 64u
void post_recv_small(struct side *s, rv_qp *qp, uint64_t id);
void post_send_small(struct side *s, rv_qp *qp, uint64_t id);
void check_recv_small(struct side *s, rv_wc wc, uint64_t id);

#endif
