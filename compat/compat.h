/*
 * The private header of the libibverbs-compatible layer (compat/).
 *
 * A soft0 object is a libibverbs public struct (the one verbs.h's inline
 * functions read) embedded in a wrapper that holds the rverbs handle behind
 * it. Real devices' objects are never wrapped: they belong to the system's
 * libibverbs (passthrough.c) and every call on them goes there.
 *
 * Nothing here may include a private header of rdma-core: only
 * <infiniband/verbs.h> and rverbs' public headers.
 */
#ifndef RVERBS_COMPAT_H
#define RVERBS_COMPAT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>
#include <rverbs/rverbs.h>

#define COMPAT_EXPORT __attribute__((visibility("default")))
#define compat_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* ---- soft devices and their objects --------------------------------------- */

struct compat_device {
	struct ibv_device dev; /* what the program sees; first, so the pointer is ours */
	rv_device *rv;
};

struct compat_cq;
struct compat_qp;
struct compat_srq;
struct compat_linger;

struct compat_ctx {
	rv_context *rv;
	pthread_mutex_t lock;   /* guards the object lists below (control path only) */
	struct compat_cq *cqs;  /* to find the ibv_cq of an rv_cq in events */
	struct compat_qp *qps;
	struct compat_srq *srqs;
	struct compat_linger *lingering; /* destroyed RC/UC QPs still connected (linger.c) */
	uint8_t gid[16];        /* port 1's GID: the address of a peer named without a GRH */
	uint16_t lid;           /* port 1's LID: this context's listen port */
	struct compat_ctx *next_open; /* the process's open soft0 contexts (device.c) */
	struct verbs_context vctx; /* last: verbs_context ends with the ibv_context */
};

/* users: the objects that depend on this one. libibverbs refuses to destroy
 * an object in use (EBUSY) where rverbs would close the dependents too. */
struct compat_pd {
	struct ibv_pd pd;
	rv_pd *rv;
	int users;
	/* A parent domain (domain.c): its parent PD and TD (each counts it as a
	 * user) and the program's allocators, called with pd. */
	struct compat_pd *parent;
	struct compat_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};

struct compat_td {
	struct ibv_td td;
	rv_td *rv;
	int users;              /* parent domains bound to it */
};

struct compat_mr {
	struct ibv_mr mr;
	rv_mr *rv;
};

struct compat_channel {
	struct ibv_comp_channel ch;
	rv_comp_channel *rv;
};

struct compat_cq {
	union {
		struct ibv_cq cq;     /* ibv_cq_ex begins as ibv_cq (ibv_cq_ex_to_cq is a cast) */
		struct ibv_cq_ex ex;  /* filled for CQs from ibv_create_cq_ex */
	};
	rv_cq *rv;
	rv_wc cur;              /* the completion an extended poll is on (cq_ex.c) */
	uint32_t ts_flags;      /* IBV_WC_EX_WITH_COMPLETION_TIMESTAMP(_WALLCLOCK) asked for */
	uint64_t ts, ts_wall;   /* cur's timestamps, with ts_flags */
	int users;
	struct compat_pd *pd;   /* the parent domain of ibv_create_cq_ex, or NULL */
	struct compat_cq *next;
};

struct compat_srq {
	struct ibv_srq srq;
	rv_srq *rv;
	int users;
	struct compat_srq *next;
};

struct compat_qp_ex;

struct compat_qp {
	union {
		struct ibv_qp qp;     /* ibv_qp_ex begins with it (qp_base) */
		struct ibv_qp_ex ex;  /* filled for QPs with send operations (qp_ex.c) */
	};
	rv_qp *rv;
	struct compat_qp_ex *wr; /* the ibv_wr_* builder's state, or NULL */
	struct compat_qp *next;
};

struct compat_mw {
	struct ibv_mw mw;
	rv_mw *rv;
};

struct compat_ah {
	struct ibv_ah ah;
	rv_ah *rv;
	/* An AH naming this context's own port (qp.c: compat_ah_rv): the AH of
	 * the other context's port that holds the destination QP, made once. */
	bool own_port;
	rv_ah_attr attr;
	pthread_mutex_t lock;   /* guards peer */
	rv_ah *peer;
	uint16_t peer_lid;
};

/* domain.c */
void compat_ctx_fill_domain_ops(struct compat_ctx *cc);
/* Drop the parent PD's and the TD's count of a parent domain being freed. */
void compat_pd_unlink(struct compat_pd *p);
/* pd is a parent domain of context c. */
bool compat_pd_is_parent_domain(struct ibv_context *c, struct ibv_pd *pd);

/* device.c */
bool compat_is_soft_device(const struct ibv_device *dev);
static inline struct compat_ctx *compat_ctx_of(struct ibv_context *c)
{
	return compat_container_of(c, struct compat_ctx, vctx.context);
}
/* A context, or any object's ->context, is soft0's when its device is ours. */
static inline bool compat_is_soft(const struct ibv_context *c)
{
	return c && compat_is_soft_device(c->device);
}

/* rverbs' negative errno into libibverbs' conventions. */
static inline void *compat_fail_null(int rc)
{
	errno = rc < 0 ? -rc : EINVAL;
	return NULL;
}
static inline int compat_fail_errno(int rc)
{
	errno = rc < 0 ? -rc : EINVAL;
	return -1;
}

/* Calls made into librverbs from the layer: librverbs' own libibverbs driver
 * then reaches this layer (it is the process's libibverbs.so.1), and must see
 * only the real devices, not soft0 a second time. */
void compat_enter_rverbs(void);
void compat_leave_rverbs(void);
bool compat_inside_rverbs(void);

/* query.c */
void compat_ctx_fill_ops(struct compat_ctx *cc);
int compat_query_port_soft(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
			   size_t attr_len);

/* datapath.c */
int compat_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int compat_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int compat_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int compat_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int compat_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* qp_ex.c: the ibv_wr_* builders of an extended QP */
int compat_qp_ex_check(uint64_t send_ops_flags);
int compat_qp_ex_init(struct compat_qp *q);
void compat_qp_ex_free(struct compat_qp *q);

/* cq_ex.c: the polling table of an extended CQ */
void compat_cq_ex_fill(struct compat_cq *q);

/* resources.c: memory windows, through the context's ops */
struct ibv_mw *compat_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int compat_dealloc_mw(struct ibv_mw *mw);
int compat_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* A bind posted as a work request (type 2 windows); positive errno. */
int compat_post_bind_mw(struct ibv_qp *qp, const struct ibv_send_wr *wr);

/* qp.c, resources.c: the soft0 halves of calls the extended tables reach */
struct ibv_qp *compat_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
struct ibv_cq_ex *compat_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr);
struct ibv_srq *compat_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr);
int compat_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			   struct ibv_device_attr_ex *attr, size_t attr_size);

/* xrc.c: XRC domains, XRC SRQs and XRC QPs (the extended tables reach them) */
struct ibv_xrcd *compat_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *attr);
int compat_close_xrcd(struct ibv_xrcd *xrcd);
int compat_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_srq *compat_create_xrc_srq(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr);
struct ibv_qp *compat_create_xrc_qp(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *compat_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *attr);
/* odp.c: ODP capabilities and ibv_advise_mr on soft0 */
void compat_odp_caps(rv_context *ctx, struct ibv_device_attr_ex *ex);
int compat_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		     struct ibv_sge *sg_list, uint32_t num_sges);

/* resources.c: the use counts, under the context's lock */
void compat_use(struct ibv_context *c, int *users, int delta);

/* linger.c: keep a destroyed RC/UC QP in RTS connected a little longer (false:
 * close it now); close those whose time is up, or all of them after waiting. */
bool compat_linger_qp(struct compat_ctx *cc, rv_qp *qp, int qp_type);
void compat_linger_reap(struct compat_ctx *cc, bool wait);
uint16_t compat_peer_lid(struct compat_ctx *cc, uint16_t dlid, const uint8_t *dgid, uint32_t qpn);

/* qp.c: the rverbs handle of a soft0 address handle (UD sends). */
rv_ah *compat_ah_rv(struct ibv_ah *ah, uint32_t remote_qpn);

/* The object lists of a context (events map rverbs handles back). */
struct ibv_cq *compat_find_cq(struct compat_ctx *cc, const rv_cq *rv);
struct ibv_qp *compat_find_qp(struct compat_ctx *cc, const rv_qp *rv);
struct ibv_srq *compat_find_srq(struct compat_ctx *cc, const rv_srq *rv);

#endif
