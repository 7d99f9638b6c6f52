/*
 * A mock driver for the handle-core and facade tests: every op allocates a
 * small fake object, counts it, and can be told to fail.
 *
 * Owns: the fakes (freed only by mock_reset, so a second destroy of the same
 * resource is detected, never a use after free), the per-type create/destroy
 * counters, the ordered log of successful destroys, and the invariants a real
 * driver relies on: a resource is never destroyed twice, never before the
 * resources that depend on it, and no op ever sees a handle that is not live.
 * Single-threaded by design, like the tests that use it.
 */
#ifndef RV_TESTS_MOCK_DRIVER_H
#define RV_TESTS_MOCK_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

#include "driver.h"

#define MOCK_LOG_MAX 8192
#define MOCK_WC_MAX 16
#define MOCK_SENT_MAX 256

/* One successful destroy (device: its release), in order. */
struct mock_event {
	enum rv_obj_type type;
	const void *handle; /* the rverbs handle the fake belonged to */
	uint64_t id;        /* that handle's id */
};

struct mock_state {
	unsigned created[RV_OBJ_TYPE_MAX];
	unsigned destroyed[RV_OBJ_TYPE_MAX];
	unsigned destroy_calls[RV_OBJ_TYPE_MAX]; /* including failed ones */
	/* Invariant breaches; every test asserts they stay 0. */
	unsigned double_destroys;    /* a fake destroyed a second time */
	unsigned order_violations;   /* a fake destroyed while a dependent fake lives */
	unsigned contract_violations;/* an op called with a handle that is not live */

	struct mock_event log[MOCK_LOG_MAX];
	size_t n_log;

	/* Failure injection: the next `count` calls of that kind for that type fail. */
	int fail_destroy_errno[RV_OBJ_TYPE_MAX];
	unsigned fail_destroy_count[RV_OBJ_TYPE_MAX];
	int fail_create_errno[RV_OBJ_TYPE_MAX];
	unsigned fail_create_count[RV_OBJ_TYPE_MAX];
	bool fail_sets_message; /* an injected failure sets rv_error_last() itself */
	int fail_query_errno;   /* query_device/query_port/query_gid fail with it */
	int fail_modify_errno;  /* qp_modify fails with it */

	/* Canned data path. */
	int poll_rc;            /* < 0: rv_cq_poll returns it */
	rv_wc poll_wc[MOCK_WC_MAX];
	int poll_n;             /* completions handed out per poll (at most max) */
	int post_rc;            /* 0 or a negative errno for post_send/post_recv */
	size_t post_limit;      /* post at most this many (SIZE_MAX: all) */
	rv_send_wr last_send;
	/* Every send WR posted since mock_reset (the first MOCK_SENT_MAX). */
	uint64_t sent_wr_id[MOCK_SENT_MAX];
	uint32_t sent_flags[MOCK_SENT_MAX];
	size_t n_sent;
	rv_recv_wr last_recv;
	unsigned n_post_send, n_post_recv, n_poll, n_post_srq_recv;

	/* Modify/query. */
	rv_qp_attr last_modify;
	rv_ah_attr last_av;     /* of the last modify that set RV_QP_AV */
	unsigned n_modify;
	uint32_t next_qpn;
	uint32_t next_key;
	uint8_t active_mtu;     /* query_port's active_mtu */
	uint8_t link_layer;     /* query_port's link layer */
	/* A GID table (n_gids > 0): query_port's gid_tbl_len, query_gid and
	 * query_gid_entry (an all-zero GID is an empty slot). Else one GID,
	 * ::ffff:127.0.0.1, and no typed entries. */
	rv_gid_entry gids[8];
	unsigned n_gids;
	/* ODP: query_device's odp_general_caps (0 after mock_reset: no ODP);
	 * mr_advise counts its calls and keeps the last arguments. */
	uint64_t odp_general_caps;
	unsigned n_advise;
	uint32_t last_advice, last_advise_flags, last_advise_n;
	rv_sge last_advise_sge;
};

extern struct mock_state mock;
extern const struct rv_driver mock_driver;

/* Free every fake and zero the state (with defaults: post_limit SIZE_MAX,
 * MTU 1024, Ethernet link layer). Call at the start of each test. */
void mock_reset(void);

/* A device handle served by the mock (a fake device, counted like the rest). */
int mock_device_new(const char *name, rv_device **ret_dev);

unsigned mock_live(enum rv_obj_type type);
unsigned mock_live_total(void);

void mock_fail_destroy(enum rv_obj_type type, int errnum, unsigned count);
void mock_fail_create(enum rv_obj_type type, int errnum, unsigned count);

/* Position of the destroy of handle in the log, or -1 when it was not destroyed. */
long mock_destroy_index(const void *handle);
/* How many times handle's fake was destroyed successfully (double destroys count too). */
unsigned mock_destroy_count(const void *handle);

/* The device moved the QP by itself (for example to ERR). */
void mock_qp_force_state(rv_qp *qp, uint32_t state);

#endif
