/*
 * The conformance suite's harness (tests/conformance, meson suite
 * 'conformance'): every case runs on every rverbs device present, in two
 * arrangements (both QPs in one context, and one context per QP).
 *
 * Owns: the device list, the run of one case (which device, which
 * arrangement), the QP pairs and guarded buffers a case opens (closed by the
 * harness after the case, whether it passed, failed or skipped), and the
 * helpers every case uses. A case never prints a pass it did not check: a
 * device that cannot run it skips with the reason (conf_skip).
 *
 * Adding cases: write them in a conf-<feature>.c file as
 * `static void name(void)` functions, list them in a `const struct conf_case`
 * table ending with CONF_END, and add the table to groups[] in conf-harness.c
 * (and the file to tests/conformance/meson.build).
 */
#ifndef RV_CONF_HARNESS_H
#define RV_CONF_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

/* Bytes of guard pattern on each side of every buffer a case registers. */
#define CONF_GUARD 4096
/* Default size of each side's main buffer. */
#define CONF_BUF_LEN (512u * 1024u)
/* Hang guard for one completion or event; never a pass/fail threshold. */
#define CONF_WAIT_MS 10000

enum conf_arrangement { CONF_ONE_CONTEXT, CONF_TWO_CONTEXTS };

struct conf_case {
	const char *name;
	void (*run)(void);
};
#define CONF_END {NULL, NULL}

/* A registered buffer with guard bytes around it: alloc holds
 * [guard][p .. p+len)[guard], only the middle part is registered. */
struct conf_buf {
	uint8_t *alloc;
	uint8_t *p;
	size_t len;
	rv_mr *mr;
	uint8_t seed; /* the pattern conf_buf_fill wrote */
};

struct conf_side {
	rv_context *ctx;
	rv_pd *pd;
	rv_comp_channel *ch; /* with conf_opts.channel */
	rv_cq *cq;           /* send and receive CQ */
	rv_qp *qp;
	rv_qp_cap cap;       /* read back after creation */
	struct conf_buf buf; /* the main buffer, filled with a pattern */
};

struct conf_pair {
	struct conf_side a, b;
};

struct conf_opts {
	uint32_t qp_type;   /* 0: RV_QPT_RC */
	uint32_t a_access;  /* 0: RV_ACCESS_ALL_REMOTE */
	uint32_t b_access;  /* 0: RV_ACCESS_ALL_REMOTE */
	bool channel;       /* CQs on a completion channel */
	bool no_connect;    /* the case connects (conf_connect) */
	bool sq_sig_selective; /* sq_sig_all 0: only RV_SEND_SIGNALED WRs complete */
	uint32_t b_qp_access;  /* nonzero: B's QP's qp_access_flags (set at INIT) */
	uint64_t cq_wc_flags;  /* nonzero: both CQs with these rv_cq_wc_flags (refused: skip) */
};

/* The device and arrangement of the running case. */
const char *conf_device_name(void);
enum conf_arrangement conf_arrangement(void);

/* Skip the running case, printing why; the harness cleans up. */
void conf_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Open two QPs (A and B) with a CQ and a guarded main buffer each, in one
 * context or two per the arrangement, and connect them unless told not to.
 * A QP type or an option the device does not have skips the case. */
struct conf_pair *conf_pair_open(const struct conf_opts *opts);

/* Connect x to y and y to x; rts (may be NULL) adds attributes to both
 * sides' RTR -> RTS step (for example a finite rnr_retry); its
 * min_rnr_timer and max_dest_rd_atomic go to the INIT -> RTR step. */
void conf_connect(struct conf_side *x, struct conf_side *y, const rv_qp_attr *rts);
/* An address handle on from's PD for to's port, from the GID from's endpoint
 * advertises (skips where the device has no address handles). */
rv_ah *conf_ah_to(struct conf_side *from, struct conf_side *to);
/* Whether the device under test stamps completions (its
 * completion_timestamp_mask). Where it does not, this checks that it
 * refuses a CQ asking for stamps with -EOPNOTSUPP, so that a timestamp case
 * returns having checked the refusal instead of skipping (a known
 * difference is checked, not skipped; see conf-quirks.c). */
bool conf_device_stamps(void);

/* Hand a QP or CQ the case created over to the harness, which drops the
 * reference after the case (QPs first), whether it passed or not. */
void conf_adopt_qp(rv_qp *qp);
void conf_adopt_cq(rv_cq *cq);
/* The same for a memory window, dropped before any QP: rxe holds the QP of a
 * type 2 bind until the window goes, and warns when the QP is destroyed
 * first (rxe_pool.c __rxe_cleanup). */
void conf_adopt_mw(rv_mw *mw);

/* Another guarded buffer registered on pd, closed by the harness. */
struct conf_buf *conf_buf_new(rv_pd *pd, size_t len, uint32_t access);
/* Fill the registered part and the guards with a pattern derived from seed. */
void conf_buf_fill(struct conf_buf *b, uint8_t seed);
/* The byte conf_buf_fill(b, seed) wrote at offset off of the registered part. */
uint8_t conf_pattern(uint8_t seed, size_t off);
/* Assert that the guards and every byte of the registered part outside
 * [from, to) still hold the pattern (from == to: nothing may have changed). */
void conf_buf_check(const struct conf_buf *b, size_t from, size_t to);
/* The same with several ranges [from, to) that may have changed. */
struct conf_range {
	size_t from, to;
};
void conf_buf_check_except(const struct conf_buf *b, const struct conf_range *r, int n);
rv_sge conf_sge(const struct conf_buf *b, size_t off, uint32_t len);
uint64_t conf_addr(const struct conf_buf *b, size_t off);

/* Completions: wait for one (fails after CONF_WAIT_MS), check one, check
 * that none comes within ms. */
rv_wc conf_poll(rv_cq *cq);
void conf_expect(rv_cq *cq, uint64_t wr_id, uint32_t status);
void conf_expect_none(rv_cq *cq, int ms);

/* Post one send WR, asserting the post succeeds. */
void conf_post(rv_qp *qp, const rv_send_wr *wr);
void conf_post_recv(rv_qp *qp, uint64_t wr_id, const rv_sge *sges, uint32_t n);

/* A device's known difference from a case (conf-quirks.c, the one table of
 * them): on a device whose name matches the fnmatch(3) pattern `device`, the
 * case `case_name` meets `difference` instead of its expectation. key
 * "status": conf_expect() waits for status `actual` where the case expects
 * `expected`; any other key names a difference the case asks about with
 * conf_quirk() and then checks. An entry the case did not meet fails it. */
struct conf_quirk {
	const char *device;
	const char *case_name;
	const char *key;
	uint32_t expected, actual;
	const char *difference; /* what the device does instead */
	const char *reason;     /* why that is the device's behaviour, not rverbs' */
	const char *reference;  /* where it is written down */
};
extern const struct conf_quirk conf_quirks[]; /* ends with a NULL device */

/* Whether the quirk table gives the running case, on the running device, the
 * difference key (printed and counted as met when it does). */
bool conf_quirk(const char *key);

/* The case tables (one per conf-*.c file). */
extern const struct conf_case conf_rc_cases[];
extern const struct conf_case conf_errors_cases[];
extern const struct conf_case conf_ud_cases[];
extern const struct conf_case conf_atomics_cases[];
extern const struct conf_case conf_srq_cases[];
extern const struct conf_case conf_events_cases[];
extern const struct conf_case conf_cq_cases[];
extern const struct conf_case conf_mw_cases[];
extern const struct conf_case conf_cqex_cases[];
extern const struct conf_case conf_wr_builder_cases[];
extern const struct conf_case conf_domains_cases[];
extern const struct conf_case conf_xrc_cases[];
extern const struct conf_case conf_odp_cases[];

#endif
