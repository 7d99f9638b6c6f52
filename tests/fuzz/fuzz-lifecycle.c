/*
 * Lifecycle fuzzer (libFuzzer) over the public handle API.
 *
 * Each input is decoded into a program of calls: create any handle from any
 * live or closed parent (or from a handle of the wrong type, or NULL), close,
 * ref, unref, post, poll, query, modify, connect two QPs, bad attribute masks,
 * injected driver failures. The fuzzer keeps its own model of the ownership
 * graph (ownership.md: strong references from children, cascade close, the
 * last unref closes, a closed handle pins nothing, nor does a zombie) and
 * after every step checks:
 *
 * - every return is 0 or an error the call documents, and the exact one where
 *   the arguments decide it (wrong type: -EINVAL; closed: -RV_ECLOSED);
 * - every handle the program holds is live or closed as the model says;
 * - rv_context_dump() of every live context shows exactly the model's live
 *   objects, each under one of its dependencies, with the model's refcount;
 * - on the mock driver: the resources destroyed during the step are exactly
 *   the ones the model closed (no double destroy, none out of order, none
 *   missing), and the mock's live counters equal the model's;
 * - at the end of the input the program drops every reference it holds,
 *   without closing anything first, as a garbage collector would: nothing is
 *   left (the model, the mock's counters, and LeakSanitizer for the memory).
 *
 * Only handles the program still references are passed back to the library:
 * a freed handle is a use after free, which the API does not promise to catch.
 *
 * Device: the mock driver (tests/mock-driver.c) by default; FUZZ_DEVICE=soft0
 * runs the same programs on the software device, with fewer steps per input
 * and without the mock-only checks and failure injection.
 *
 * Built by scripts/fuzz (clang, -fsanitize=fuzzer,address,undefined).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock-driver.h"
#include "rverbs-private.h"

#define MAX_OBJS 96
/* The access bits rv_mr_reg knows (lib/mr.c). */
#define ACCESS_KNOWN (RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ | \
		      RV_ACCESS_REMOTE_ATOMIC | RV_ACCESS_MW_BIND | RV_ACCESS_ZERO_BASED | \
		      RV_ACCESS_ON_DEMAND | RV_ACCESS_HUGETLB | RV_ACCESS_RELAXED_ORDERING)
#define MAX_SLOTS 64
#define MAX_STEPS_MOCK 256
#define MAX_STEPS_SOFT 40
#define MAX_CTX_SOFT 2

struct mobj {
	void *h;
	enum rv_obj_type type;
	struct mobj *deps[RV_OBJ_MAX_DEPS];
	int n_deps;
	int held;      /* references the program holds */
	bool live;     /* not closed (a zombie is live) */
	bool zombie;   /* live, unreferenced, its destroy failed: holds no references */
	uint64_t id;
	uint64_t seq;  /* creation order, for newest-first cascades */
	struct mobj *ctx; /* valid while this object is live */
	uint64_t ctx_id;  /* context ids are unique in the process, unlike model slots */
	const void *dev_h; /* a context's device (handle and id: model slots are reused) */
	uint64_t dev_id;
};

static struct mobj objs[MAX_OBJS];
static struct mobj *slots[MAX_SLOTS];
static int n_slots;
static uint64_t seq;
static bool soft_mode, trace;
static unsigned long long total_steps, total_inputs, total_abandoned, created[RV_OBJ_TYPE_MAX];
static int step_no;

/* Destroys the model predicts during one step (mock mode). */
static const void *predicted[MAX_OBJS * 2];
static uint64_t predicted_id[MAX_OBJS * 2];
static enum rv_obj_type predicted_type[MAX_OBJS * 2];
static int n_predicted;
static bool resync; /* an injected destroy failure happened: trust the mock log */
/* Resources the library abandoned at a device's last unref (destroys still
 * refused there): live in the mock, gone from the model. */
static unsigned abandoned[RV_OBJ_TYPE_MAX];
/* This step abandoned something: the mock then saw parents destroyed (and
 * the device released) under a resource it still has, on purpose. */
static bool abandoned_now;

static const uint8_t *in_p;
static size_t in_n;

static uint8_t u8(void)
{
	if (!in_n)
		return 0;
	in_n--;
	return *in_p++;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz-lifecycle: step %d: ", step_no);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (rv_error_last: %s)\n", rv_error_last());
	for (int i = 0; i < MAX_OBJS; i++)
		if (objs[i].h)
			fprintf(stderr, "  model: %s #%" PRIu64 " held=%d %s%s refcnt=%d\n",
				rv_obj_type_name(objs[i].type), objs[i].id, objs[i].held,
				objs[i].live ? "live" : "closed", objs[i].zombie ? " zombie" : "",
				/* the memory of a handle nobody holds may be gone */
				objs[i].held ? (int)atomic_load(&RV_OBJ(objs[i].h)->refcnt) : -1);
	abort();
}

/* ---- the model ---- */

static struct mobj *m_new(void *h, enum rv_obj_type type, struct mobj *ctx)
{
	for (int i = 0; i < MAX_OBJS; i++) {
		if (objs[i].h)
			continue;
		memset(&objs[i], 0, sizeof(objs[i]));
		objs[i].h = h;
		objs[i].type = type;
		objs[i].live = true;
		objs[i].held = 1;
		objs[i].id = RV_OBJ(h)->id;
		objs[i].seq = ++seq;
		objs[i].ctx = type == RV_OBJ_CONTEXT ? &objs[i] : ctx;
		objs[i].ctx_id = objs[i].ctx ? objs[i].ctx->id : UINT64_MAX;
		created[type]++;
		return &objs[i];
	}
	die("model full");
	return NULL;
}

static bool m_full(void)
{
	for (int i = 0; i < MAX_OBJS; i++)
		if (!objs[i].h)
			return false;
	return true;
}

static int m_refs(const struct mobj *o)
{
	int n = o->held;

	for (int i = 0; i < MAX_OBJS; i++) {
		if (!objs[i].h || !objs[i].live || objs[i].zombie)
			continue;
		for (int d = 0; d < objs[i].n_deps; d++)
			n += objs[i].deps[d] == o;
	}
	return n;
}

static void m_release(struct mobj *o);

static void predict(struct mobj *o)
{
	if (n_predicted < (int)(sizeof(predicted) / sizeof(predicted[0]))) {
		predicted[n_predicted] = o->h;
		predicted_type[n_predicted] = o->type;
		predicted_id[n_predicted++] = o->id;
	}
}

static void m_free(struct mobj *o)
{
	if (o->type == RV_OBJ_DEVICE)
		predict(o); /* the mock logs a device at its release */
	memset(o, 0, sizeof(*o));
}

/* Close o after its live dependents, newest first (ownership.md). Like the
 * library, hold a reference on o meanwhile: closing its last dependent must
 * not release o under our feet. */
static void m_close(struct mobj *o)
{
	struct mobj *deps[RV_OBJ_MAX_DEPS];
	bool zombie = o->zombie;
	int n;

	if (!o->live)
		return;
	o->held++;
	for (;;) {
		struct mobj *newest = NULL;
		for (int i = 0; i < MAX_OBJS; i++) {
			if (!objs[i].h || !objs[i].live)
				continue;
			for (int d = 0; d < objs[i].n_deps; d++)
				if (objs[i].deps[d] == o && (!newest || objs[i].seq > newest->seq))
					newest = &objs[i];
		}
		if (!newest)
			break;
		newest->held++; /* the cascade's reference */
		m_close(newest);
		newest->held--;
		m_release(newest);
	}
	o->held--;
	o->live = false;
	if (o->type != RV_OBJ_DEVICE)
		predict(o);
	n = o->n_deps;
	memcpy(deps, o->deps, sizeof(deps));
	o->n_deps = 0;
	o->zombie = false;
	if (!zombie) /* a zombie gave its references up when it became one */
		for (int d = 0; d < n; d++)
			m_release(deps[d]);
}

/* o lost a reference: at zero the last unref closes (if live) and frees it. */
static void m_release(struct mobj *o)
{
	if (!o->h || m_refs(o) > 0)
		return;
	if (o->live)
		m_close(o);
	if (o->h && m_refs(o) == 0)
		m_free(o);
}

/* ---- handles by type ---- */

static void h_ref(enum rv_obj_type t, void *h)
{
	switch (t) {
	case RV_OBJ_DEVICE: rv_device_ref(h); break;
	case RV_OBJ_CONTEXT: rv_context_ref(h); break;
	case RV_OBJ_PD: rv_pd_ref(h); break;
	case RV_OBJ_MR: rv_mr_ref(h); break;
	case RV_OBJ_CQ: rv_cq_ref(h); break;
	case RV_OBJ_QP: rv_qp_ref(h); break;
	case RV_OBJ_COMP_CHANNEL: rv_comp_channel_ref(h); break;
	default: break;
	}
}

static void h_unref(enum rv_obj_type t, void *h)
{
	void *r;
	switch (t) {
	case RV_OBJ_DEVICE: r = rv_device_unref(h); break;
	case RV_OBJ_CONTEXT: r = rv_context_unref(h); break;
	case RV_OBJ_PD: r = rv_pd_unref(h); break;
	case RV_OBJ_MR: r = rv_mr_unref(h); break;
	case RV_OBJ_CQ: r = rv_cq_unref(h); break;
	case RV_OBJ_QP: r = rv_qp_unref(h); break;
	case RV_OBJ_COMP_CHANNEL: r = rv_comp_channel_unref(h); break;
	default: r = NULL; break;
	}
	if (r)
		die("unref returned non-NULL");
}

static int h_close(enum rv_obj_type t, void *h)
{
	switch (t) {
	case RV_OBJ_DEVICE: return rv_device_close(h);
	case RV_OBJ_CONTEXT: return rv_context_close(h);
	case RV_OBJ_PD: return rv_pd_close(h);
	case RV_OBJ_MR: return rv_mr_close(h);
	case RV_OBJ_CQ: return rv_cq_close(h);
	case RV_OBJ_QP: return rv_qp_close(h);
	case RV_OBJ_COMP_CHANNEL: return rv_comp_channel_close(h);
	default: return -EINVAL;
	}
}

/* Whether the library says the handle is live, through a public getter. */
static bool h_live(enum rv_obj_type t, void *h)
{
	switch (t) {
	case RV_OBJ_DEVICE: /* no public probe of a closed device */
		return rv_device_name(h) && RV_OBJ(h)->state == RV_OBJ_LIVE;
	case RV_OBJ_CONTEXT: return rv_context_device(h) != NULL;
	case RV_OBJ_PD: return rv_pd_context(h) != NULL;
	case RV_OBJ_MR: return rv_mr_pd(h) != NULL;
	case RV_OBJ_CQ: return rv_cq_size(h) != 0;
	case RV_OBJ_QP: return rv_qp_num(h) != 0;
	case RV_OBJ_COMP_CHANNEL: return rv_comp_channel_fd(h) >= 0;
	default: return false;
	}
}

static const enum rv_obj_type fuzz_types[] = {RV_OBJ_DEVICE, RV_OBJ_CONTEXT, RV_OBJ_PD,
					      RV_OBJ_MR, RV_OBJ_CQ, RV_OBJ_QP, RV_OBJ_COMP_CHANNEL};

/* ---- slots: one per reference the program holds ---- */

static void slot_add(struct mobj *o)
{
	if (n_slots == MAX_SLOTS)
		die("slots full");
	slots[n_slots++] = o;
}

static void slot_drop(int i)
{
	slots[i] = slots[--n_slots];
}

/* A handle argument: a held slot (any type), or NULL. */
static struct mobj *pick(void)
{
	uint8_t b = u8();

	if (!n_slots || b % 16 == 15)
		return NULL;
	return slots[b % n_slots];
}

/* Mostly a handle of the type the call wants (live or closed), else any. */
static struct mobj *pick_t(enum rv_obj_type t)
{
	uint8_t b = u8();
	int n = 0, k;

	if (b % 4 == 0)
		return pick();
	for (int i = 0; i < n_slots; i++)
		n += slots[i]->type == t;
	if (!n)
		return pick();
	k = (b / 4) % n;
	for (int i = 0; i < n_slots; i++)
		if (slots[i]->type == t && k-- == 0)
			return slots[i];
	return NULL;
}

static int pick_slot(void)
{
	return n_slots ? u8() % n_slots : -1;
}

/* The error an argument check gives for this handle as type t: 0 if usable. */
static int arg_rc(const struct mobj *o, enum rv_obj_type t)
{
	if (!o || o->type != t)
		return -EINVAL;
	return o->live ? 0 : -RV_ECLOSED;
}

static bool is_errno(int rc, const int *allowed)
{
	for (; *allowed; allowed++)
		if (rc == *allowed)
			return true;
	return false;
}

#define ALLOWED(...) ((const int[]){__VA_ARGS__, 0})

/* A create failure injected into the driver, acceptable where the outcome is
 * the device's call (exact == 1). */
static int extra_ok;

static void expect(const char *call, int rc, int exact, const int *allowed)
{
	if (exact == 1 && extra_ok && rc == extra_ok)
		return;
	if (exact != 1) {
		if (rc != exact)
			die("%s returned %d, expected %d", call, rc, exact);
		return;
	}
	if (rc != 0 && !is_errno(rc, allowed))
		die("%s returned %d, not a documented error", call, rc);
}

/* A pending injected create failure for type t: its errno, else 0. */
static int pending_create_failure(enum rv_obj_type t)
{
	if (soft_mode || !mock.fail_create_count[t])
		return 0;
	extra_ok = -mock.fail_create_errno[t];
	return extra_ok;
}

/* Destroys the mock refused so far (injected failures), and at step start. */
static unsigned failed0;

static unsigned failed_destroys(void)
{
	unsigned n = 0;

	if (soft_mode)
		return 0;
	for (int t = 1; t < RV_OBJ_TYPE_MAX; t++)
		n += mock.destroy_calls[t] - mock.destroyed[t];
	return n;
}

/* ---- operations ---- */

static char buf[65536];
static unsigned n_devices;

static void op_device_new(void)
{
	rv_device *d;
	int rc;

	if (m_full() || n_slots == MAX_SLOTS)
		return;
	if (soft_mode) {
		rc = rv_device_find("soft0", &d);
	} else {
		char name[16];
		snprintf(name, sizeof(name), "mock%u", n_devices++ % 100);
		rc = mock_device_new(name, &d);
	}
	if (rc < 0)
		die("device_new: %d", rc);
	slot_add(m_new(d, RV_OBJ_DEVICE, NULL));
}

static void op_context_new(void)
{
	struct mobj *p = pick_t(RV_OBJ_DEVICE);
	rv_context_attr a = {.mask = u8() % 8 == 0 ? UINT64_C(1) << (u8() % 64) : 0, .listen_addr = "127.0.0.1"};
	rv_context *c = NULL;
	int exact, rc, n = 0;

	if (m_full() || n_slots == MAX_SLOTS)
		return;
	if (soft_mode) {
		for (int i = 0; i < MAX_OBJS; i++)
			n += objs[i].h && objs[i].type == RV_OBJ_CONTEXT;
		if (n >= MAX_CTX_SOFT)
			return;
	}
	extra_ok = 0;
	exact = arg_rc(p, RV_OBJ_DEVICE);
	if (exact == 0 && (a.mask & ~(uint64_t)(RV_CONTEXT_ATTR_LISTEN_ADDR | RV_CONTEXT_ATTR_SOFT_FLAGS |
						RV_CONTEXT_ATTR_AUTH_SECRET)))
		exact = -EINVAL;
	/* A shared secret is soft0's feature, and this program never gives one
	 * (auth_secret is NULL): refused as unsupported elsewhere, invalid on soft0. */
	if (exact == 0 && (a.mask & RV_CONTEXT_ATTR_AUTH_SECRET))
		exact = soft_mode ? -EINVAL : -EOPNOTSUPP;
	if (exact == 0)
		exact = pending_create_failure(RV_OBJ_CONTEXT);
	rc = rv_context_new(p ? p->h : NULL, &a, &c);
	expect("rv_context_new", rc, soft_mode && exact == 0 ? 1 : exact, ALLOWED(-EADDRNOTAVAIL, -ENOMEM, -EMFILE));
	if (rc == 0) {
		struct mobj *o = m_new(c, RV_OBJ_CONTEXT, NULL);
		o->deps[o->n_deps++] = p;
		o->dev_h = p->h;
		o->dev_id = p->id;
		slot_add(o);
	}
}

static void op_pd_new(void)
{
	struct mobj *p = pick_t(RV_OBJ_CONTEXT);
	rv_pd_attr a = {.mask = u8() % 8 == 0 ? UINT64_C(1) << (u8() % 64) : 0};
	rv_pd_attr *ap = u8() % 2 ? &a : NULL;
	rv_pd *pd = NULL;
	int exact, rc;

	if (m_full() || n_slots == MAX_SLOTS)
		return;
	exact = arg_rc(p, RV_OBJ_CONTEXT);
	if (exact == 0 && ap && a.mask)
		exact = -EINVAL;
	if (exact == 0)
		exact = pending_create_failure(RV_OBJ_PD);
	rc = rv_pd_new(p ? p->h : NULL, ap, &pd);
	expect("rv_pd_new", rc, soft_mode && exact == 0 ? 1 : exact, ALLOWED(-ENOMEM));
	if (rc == 0) {
		struct mobj *o = m_new(pd, RV_OBJ_PD, p);
		o->deps[o->n_deps++] = p;
		slot_add(o);
	}
}

static void op_channel_new(void)
{
	struct mobj *p = pick_t(RV_OBJ_CONTEXT);
	rv_comp_channel_attr a = {.mask = u8() % 8 == 0 ? UINT64_C(1) << (u8() % 64) : 0};
	rv_comp_channel *ch = NULL;
	int exact, rc;

	if (m_full() || n_slots == MAX_SLOTS)
		return;
	extra_ok = 0;
	exact = arg_rc(p, RV_OBJ_CONTEXT);
	if (exact == 0 && a.mask)
		exact = -EINVAL;
	if (exact == 0)
		exact = pending_create_failure(RV_OBJ_COMP_CHANNEL);
	rc = rv_comp_channel_new(p ? p->h : NULL, &a, &ch);
	expect("rv_comp_channel_new", rc, soft_mode && exact == 0 ? 1 : exact, ALLOWED(-ENOMEM, -EMFILE));
	if (rc == 0) {
		struct mobj *o = m_new(ch, RV_OBJ_COMP_CHANNEL, p);
		o->deps[o->n_deps++] = p;
		slot_add(o);
	}
}

static void op_cq_new(void)
{
	static const uint32_t cqes[] = {0, 1, 16, 256, 1u << 20, UINT32_MAX};
	struct mobj *p = pick_t(RV_OBJ_CONTEXT), *ch;
	uint8_t m = u8();
	rv_cq_attr a = {.mask = m & 0x8fu, .cqe = cqes[u8() % 6]}; /* wc_flags 0: a plain CQ */
	rv_cq *cq = NULL;
	int exact, rc;

	ch = pick_t(RV_OBJ_COMP_CHANNEL);
	a.channel = ch ? ch->h : NULL;
	if (m & 0x80u)
		a.mask = UINT64_C(1) << (u8() % 64);
	if (m_full() || n_slots == MAX_SLOTS)
		return;
	extra_ok = 0;
	pending_create_failure(RV_OBJ_CQ);
	exact = arg_rc(p, RV_OBJ_CONTEXT);
	if (exact == 0 && (a.mask & ~(uint64_t)0xf))
		exact = -EINVAL;
	else if (exact == 0 && (a.mask & RV_CQ_ATTR_CQE) && a.cqe == 0)
		exact = -EINVAL; /* checked before the channel */
	else if (exact == 0 && (a.mask & RV_CQ_ATTR_CHANNEL) && arg_rc(ch, RV_OBJ_COMP_CHANNEL))
		exact = arg_rc(ch, RV_OBJ_COMP_CHANNEL);
	else if (exact == 0 && (a.mask & RV_CQ_ATTR_CHANNEL) && ch->ctx_id != p->ctx_id)
		exact = -EINVAL;
	else if (exact == 0 && (a.mask & RV_CQ_ATTR_CQE))
		exact = 1; /* cqe limits: the device's call */
	if (exact == 0)
		exact = pending_create_failure(RV_OBJ_CQ);
	rc = rv_cq_new(p ? p->h : NULL, &a, &cq);
	expect("rv_cq_new", rc, soft_mode && exact == 0 ? 1 : exact, ALLOWED(-EINVAL, -EOPNOTSUPP, -ENOMEM));
	if (rc == 0) {
		struct mobj *o = m_new(cq, RV_OBJ_CQ, p);
		o->deps[o->n_deps++] = p;
		if (a.mask & RV_CQ_ATTR_CHANNEL)
			o->deps[o->n_deps++] = ch;
		slot_add(o);
	}
}

static void op_mr_new(void)
{
	struct mobj *p = pick_t(RV_OBJ_PD);
	uint8_t how = u8();
	uint32_t access = how & 0x40 ? 1u << (u8() % 32) : (uint32_t)(u8() & 0x1f);
	size_t len = how & 0x20 ? 0 : 64u + (u8() % 64) * 512u;
	rv_mr *mr = NULL;
	int exact, rc;

	if (m_full() || n_slots == MAX_SLOTS)
		return;
	extra_ok = 0;
	pending_create_failure(RV_OBJ_MR);
	exact = arg_rc(p, RV_OBJ_PD);
	if (exact == 0 && (len == 0 || (access & ~(uint32_t)ACCESS_KNOWN)))
		exact = -EINVAL;
	if (exact == 0 && (access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RV_ACCESS_LOCAL_WRITE))
		exact = -EINVAL;
	/* The mock reports no ODP: the facade refuses ON_DEMAND before the driver. */
	if (exact == 0 && !soft_mode && (access & RV_ACCESS_ON_DEMAND) &&
	    !(mock.odp_general_caps & RV_ODP_SUPPORT))
		exact = -EOPNOTSUPP;
	if (exact == 0)
		exact = pending_create_failure(RV_OBJ_MR);
	if (how & 1)
		rc = rv_mr_alloc(p ? p->h : NULL, len ? 4096 : 0, access, NULL, &mr);
	else
		rc = rv_mr_reg(p ? p->h : NULL, buf, len, access, &mr);
	/* Access bits a device lacks (ON_DEMAND, MW_BIND...) are the device's call. */
	expect("rv_mr_reg/alloc", rc, exact == 0 ? 1 : exact, ALLOWED(-EINVAL, -EOPNOTSUPP, -ENOMEM));
	if (rc == 0) {
		struct mobj *o = m_new(mr, RV_OBJ_MR, p->ctx);
		o->deps[o->n_deps++] = p;
		slot_add(o);
	}
}

static void op_qp_new(void)
{
	struct mobj *p = pick_t(RV_OBJ_PD), *s = pick_t(RV_OBJ_CQ), *r = pick_t(RV_OBJ_CQ);
	uint8_t m = u8();
	rv_qp_init_attr a = {.mask = m & 0x1f, .qp_type = 2 + u8() % 4};
	bool null_attr = u8() % 16 == 0;
	rv_qp *qp = NULL;
	int exact, rc;

	if (m & 0x80)
		a.mask = UINT64_C(1) << (u8() % 64);
	a.send_cq = s ? s->h : NULL;
	a.recv_cq = r ? r->h : NULL;
	a.cap.max_send_wr = u8() % 4 ? 16 : 0;
	a.cap.max_recv_wr = u8() % 4 ? 16 : 0;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = u8() % 2 ? 64 : 0;
	a.sq_sig_all = 1;
	if (m_full() || n_slots == MAX_SLOTS)
		return;
	extra_ok = 0;
	pending_create_failure(RV_OBJ_QP);
	exact = arg_rc(p, RV_OBJ_PD);
	if (exact == 0 && null_attr) {
		exact = -EINVAL; /* RV_QP_INIT_ATTR_SEND_CQ is required */
	} else if (exact == 0) {
		if (a.mask & ~(uint64_t)0x1f || !(a.mask & RV_QP_INIT_ATTR_SEND_CQ))
			exact = -EINVAL;
		else if ((a.mask & RV_QP_INIT_ATTR_TYPE) && (a.qp_type < 2 || a.qp_type > 4))
			exact = -EINVAL;
		else if (arg_rc(s, RV_OBJ_CQ) ||
			 ((a.mask & RV_QP_INIT_ATTR_RECV_CQ) && arg_rc(r, RV_OBJ_CQ)))
			exact = 1; /* a bad CQ: -EINVAL or -RV_ECLOSED */
		else if (s->ctx_id != p->ctx_id || ((a.mask & RV_QP_INIT_ATTR_RECV_CQ) && r->ctx_id != p->ctx_id))
			exact = -EINVAL;
		else if ((a.mask & RV_QP_INIT_ATTR_CAP) || (a.mask & RV_QP_INIT_ATTR_TYPE))
			exact = 1; /* capabilities and types: the device's call */
	}
	if (exact == 0)
		exact = pending_create_failure(RV_OBJ_QP);
	rc = rv_qp_new(p ? p->h : NULL, null_attr ? NULL : &a, &qp);
	expect("rv_qp_new", rc, soft_mode && exact == 0 ? 1 : exact,
	       ALLOWED(-EINVAL, -RV_ECLOSED, -EOPNOTSUPP, -ENOMEM));
	if (rc == 0) {
		struct mobj *o = m_new(qp, RV_OBJ_QP, p->ctx);
		struct mobj *rc_ = (a.mask & RV_QP_INIT_ATTR_RECV_CQ) ? r : s;
		if (!(a.mask & RV_QP_INIT_ATTR_SEND_CQ) || arg_rc(s, RV_OBJ_CQ) || arg_rc(rc_, RV_OBJ_CQ))
			die("rv_qp_new succeeded with a bad CQ");
		o->deps[o->n_deps++] = p;
		o->deps[o->n_deps++] = s;
		if (rc_ != s)
			o->deps[o->n_deps++] = rc_;
		slot_add(o);
	}
}

static void op_close(void)
{
	int i = pick_slot();
	struct mobj *o;
	int rc;

	if (i < 0)
		return;
	o = slots[i];
	rc = h_close(o->type, o->h);
	if (failed_destroys() != failed0) {
		expect("close (destroy failure injected)", rc, 1, ALLOWED(-EBUSY, -EIO));
		resync = true;
		return;
	}
	expect("close", rc, 0, NULL);
	m_close(o);
}

static void op_ref(void)
{
	int i = pick_slot();

	if (i < 0 || n_slots == MAX_SLOTS)
		return;
	h_ref(slots[i]->type, slots[i]->h);
	slots[i]->held++;
	slot_add(slots[i]);
}

static void op_unref(void)
{
	int i = pick_slot();
	struct mobj *o;

	if (i < 0)
		return;
	o = slots[i];
	slot_drop(i);
	h_unref(o->type, o->h);
	o->held--;
	if (failed_destroys() != failed0)
		resync = true;
	else
		m_release(o);
}

/* A handle of another type passed where type t is expected. */
static void op_wrong_type(void)
{
	int i = pick_slot();
	enum rv_obj_type t = fuzz_types[u8() % 7];
	struct mobj *o;

	if (i < 0)
		return;
	o = slots[i];
	if (o->type == t)
		return;
	switch (u8() % 4) {
	case 0: expect("close(wrong type)", h_close(t, o->h), -EINVAL, NULL); break;
	case 1: h_ref(t, o->h); break;   /* a no-op: the dump check proves it */
	case 2: h_unref(t, o->h); break;
	default:
		if (h_live(t, o->h))
			die("a %s handle passed as %s looks live", rv_obj_type_name(o->type), rv_obj_type_name(t));
		break;
	}
}

static rv_sge sge_of(void)
{
	rv_sge g = {.addr = (uintptr_t)buf + u8() * 16u, .length = u8() % 3 ? u8() : 0, .lkey = 0};

	for (int i = 0; i < MAX_OBJS; i++)
		if (objs[i].h && objs[i].type == RV_OBJ_MR && objs[i].live && objs[i].held &&
		    rv_mr_addr(objs[i].h) == buf) {
			g.lkey = rv_mr_lkey(objs[i].h);
			break;
		}
	return g;
}

static void op_post(void)
{
	struct mobj *q = pick_t(RV_OBJ_QP);
	void *h = q ? q->h : NULL;
	rv_sge g = sge_of();
	rv_send_wr sw = {.wr_id = 1, .sg_list = &g, .num_sge = 1, .opcode = u8() % 12, .send_flags = u8() & 0xf};
	rv_recv_wr rw = {.wr_id = 2, .sg_list = &g, .num_sge = 1};
	size_t n = u8() % 3, posted = 99;
	int exact = arg_rc(q, RV_OBJ_QP), rc;

	if (exact == 0)
		exact = 1;
	switch (u8() % 6) {
	case 0: rc = rv_qp_post_send(h, n == 2 ? NULL : &sw, n, &posted); break;
	case 1: rc = rv_qp_post_recv(h, n == 2 ? NULL : &rw, n, &posted); break;
	case 2: rc = rv_qp_send(h, &g, 3); break;
	case 3: rc = rv_qp_recv(h, &g, 4); break;
	case 4: rc = rv_qp_write(h, &g, (uintptr_t)buf, 0x1234, 5); break;
	default: rc = rv_qp_read(h, &g, (uintptr_t)buf, 0x1234, 6); break;
	}
	expect("post", rc, exact, ALLOWED(-EINVAL, -ENOMEM, -EAGAIN, -ENOTCONN, -EOPNOTSUPP, -EPIPE));
}

static void op_poll(void)
{
	struct mobj *c = pick_t(RV_OBJ_CQ);
	rv_wc wc[4];
	int max = u8() % 6 - 1; /* -1 .. 4 */
	int exact = arg_rc(c, RV_OBJ_CQ), rc;

	if (exact == 0 && max < 1)
		exact = -EINVAL;
	rc = rv_cq_poll(c ? c->h : NULL, max > 4 ? NULL : wc, max > 4 ? 1 : max);
	if (exact == 0 && max > 4)
		exact = -EINVAL;
	if (exact == 0) {
		if (rc > max || (rc < 0 && rc != -EOVERFLOW))
			die("rv_cq_poll returned %d for max %d", rc, max);
		return;
	}
	expect("rv_cq_poll", rc, exact, NULL);
}

static void op_query(void)
{
	uint8_t k = u8();
	struct mobj *o = pick_t(k & 0x80 ? RV_OBJ_CONTEXT : RV_OBJ_QP);
	void *h = o ? o->h : NULL;
	int rc;

	if (k & 0x80) {
		/* Context queries, on whatever handle was picked. */
		int exact = arg_rc(o, RV_OBJ_CONTEXT);
		rv_device_attr da = {.mask = k & 0x40 ? UINT64_C(1) << (k % 64) : (k & 1)};
		rv_port_attr pa = {.mask = k & 0x40 ? UINT64_C(1) << (k % 64) : 1};
		uint8_t gid[16];
		uint8_t port = u8() % 3;
		char *text = NULL;

		switch (k % 4) {
		case 0:
			rc = rv_context_query_device(h, &da);
			if (exact == 0 && (da.mask & ~(uint64_t)RV_DEVICE_ATTR_ALL) && (k & 0x40))
				exact = -EINVAL;
			expect("rv_context_query_device", rc, exact == 0 ? 1 : exact, ALLOWED(-EINVAL));
			break;
		case 1:
			rc = rv_context_query_port(h, port, &pa);
			expect("rv_context_query_port", rc, exact == 0 ? 1 : exact, ALLOWED(-EINVAL));
			break;
		case 2:
			rc = rv_context_query_gid(h, port, u8() % 3 - 1, gid);
			expect("rv_context_query_gid", rc, exact == 0 ? 1 : exact, ALLOWED(-EINVAL));
			break;
		default:
			rc = rv_context_dump(h, &text);
			expect("rv_context_dump", rc, exact == -RV_ECLOSED ? 0 : exact, NULL);
			rv_free(text);
			break;
		}
		return;
	} else {
		int exact = arg_rc(o, RV_OBJ_QP);
		rv_qp_attr qa = {.mask = k & 0x40 ? UINT64_C(1) << (k % 64) : RV_QP_STATE};
		rv_qp_cap cap;
		rv_endpoint ep;

		switch (k % 5) {
		case 0: rc = rv_qp_query(h, &qa); break;
		case 1: rc = rv_qp_state_of(h); if (rc >= 0 && exact == 0) return; break;
		case 2: rc = rv_qp_get_cap(h, &cap); break;
		case 3: rc = rv_qp_endpoint(h, &ep); break;
		default:
			qa.qp_state = u8() % 8;
			qa.mask |= RV_QP_STATE;
			rc = rv_qp_modify(h, &qa);
			break;
		}
		expect("QP query/modify", rc, exact == 0 ? 1 : exact, ALLOWED(-EINVAL, -EOPNOTSUPP));
	}
}

static void op_connect(void)
{
	struct mobj *a = pick_t(RV_OBJ_QP), *b = pick_t(RV_OBJ_QP);
	rv_endpoint ea, eb;

	if (arg_rc(a, RV_OBJ_QP) || arg_rc(b, RV_OBJ_QP) || a == b)
		return;
	if (rv_qp_endpoint(a->h, &ea) < 0 || rv_qp_endpoint(b->h, &eb) < 0)
		die("rv_qp_endpoint failed on a live QP");
	for (int side = 0; side < 2; side++) {
		int rc = rv_qp_connect(side ? b->h : a->h, side ? &ea : &eb);
		if (rc < 0 && (rc < -4095 || rc == -RV_ECLOSED))
			die("rv_qp_connect returned %d", rc);
	}
}

static void op_device_list(void)
{
	rv_device **list = NULL;
	size_t n = 0;
	int rc = rv_device_list(u8() % 8 ? &list : NULL, &n);

	expect("rv_device_list", rc, list || rc ? (rc == 0 ? 0 : 1) : -EINVAL, ALLOWED(-EINVAL, -ENOMEM));
	rv_device_list_free(list);
}

static void op_inject(void)
{
	static const enum rv_obj_type t[] = {RV_OBJ_CONTEXT, RV_OBJ_PD, RV_OBJ_MR, RV_OBJ_CQ, RV_OBJ_QP,
					     RV_OBJ_COMP_CHANNEL};
	uint8_t k = u8();

	if (soft_mode)
		return;
	/* Not a context's destroy: one that fails at the last unref is left to
	 * the device, and abandoned at the device's last unref if the failure
	 * is still pending then (tests/test-zombies.c covers that). */
	if (k & 1)
		mock_fail_create(t[(k >> 1) % 6], k & 0x80 ? EIO : ENOMEM, 1);
	else
		mock_fail_destroy(t[(k >> 1) % 6], k & 0x80 ? EIO : EBUSY, 1 + (k >> 6) % 2);
}

/* ---- invariants ---- */

static struct mobj *find_in_ctx(const struct mobj *ctx, const char *type, uint64_t id)
{
	for (int i = 0; i < MAX_OBJS; i++) {
		struct mobj *o = &objs[i];
		if (o->h && o->ctx_id == ctx->id && o->id == id && !strcmp(rv_obj_type_name(o->type), type))
			return o;
	}
	return NULL;
}

static int appearances(const struct mobj *o)
{
	int n = 0;

	if (o->type == RV_OBJ_CONTEXT)
		return 1;
	for (int d = 0; d < o->n_deps; d++)
		n += appearances(o->deps[d]);
	return n;
}

static void check_dump(struct mobj *ctx)
{
	char *text = NULL, *line, *save = NULL;
	struct mobj *stack[16] = {0};
	int seen[MAX_OBJS] = {0};
	int rc = rv_context_dump(ctx->h, &text);

	if (rc < 0)
		die("rv_context_dump: %d", rc);
	if (trace)
		fprintf(stderr, "%s", text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int indent = 0, depth;
		char type[32], state[32];
		uint64_t id;
		unsigned refs;
		struct mobj *o;

		while (line[indent] == ' ')
			indent++;
		depth = indent / 2;
		if (sscanf(line + indent, "%31[^#] #%" SCNu64 " refs=%u %31s", type, &id, &refs, state) != 4)
			die("dump line \"%s\" unparsable", line);
		type[strlen(type) - 1] = '\0'; /* the space before '#' */
		o = find_in_ctx(ctx, type, id);
		if (!o)
			die("dump shows %s #%" PRIu64 " which the model does not have", type, id);
		if (depth >= 16 || (depth == 0) != (o == ctx))
			die("dump: %s #%" PRIu64 " at depth %d", type, id, depth);
		if (depth > 0) {
			bool dep = false;
			for (int d = 0; d < o->n_deps; d++)
				dep |= o->deps[d] == stack[depth - 1];
			if (!dep || !o->live)
				die("dump: %s #%" PRIu64 " under something it does not depend on", type, id);
		}
		stack[depth] = o;
		if ((int)refs != m_refs(o))
			die("dump: %s #%" PRIu64 " refs=%u, model %d", type, id, refs, m_refs(o));
		if (!strcmp(state, "live") || !strncmp(state, "zombie", 6)) {
			if (!o->live)
				die("dump: %s #%" PRIu64 " %s, model closed", type, id, state);
			if ((state[0] == 'z') != (m_refs(o) == 0))
				die("dump: %s #%" PRIu64 " %s with %d held", type, id, state, o->held);
		} else if (o->live) {
			die("dump: %s #%" PRIu64 " %s, model live", type, id, state);
		}
		seen[o - objs]++;
	}
	for (int i = 0; i < MAX_OBJS; i++) {
		struct mobj *o = &objs[i];
		if (!o->h || o->ctx_id != ctx->id || (!o->live && o != ctx))
			continue;
		if (seen[i] != appearances(o))
			die("dump: %s #%" PRIu64 " shown %d times, expected %d", rv_obj_type_name(o->type), o->id,
			    seen[i], appearances(o));
	}
	rv_free(text);
}

static int cmp_ptr(const void *a, const void *b)
{
	const struct mock_event *x = a, *y = b;
	return x->handle < y->handle ? -1 : x->handle > y->handle;
}

/* The mock's log of this step against the model's predictions. */
static void check_mock_log(size_t log0)
{
	size_t n = mock.n_log - log0;
	struct mock_event pred[MAX_OBJS * 2];

	if (trace)
		for (size_t i = log0; i < mock.n_log; i++)
			fprintf(stderr, "  destroyed %s #%" PRIu64 "\n", rv_obj_type_name(mock.log[i].type), mock.log[i].id);
	if (abandoned_now)
		mock.order_violations = 0;
	abandoned_now = false;
	if (mock.double_destroys || mock.order_violations || mock.contract_violations)
		die("mock: %u double destroys, %u order violations, %u contract violations", mock.double_destroys,
		    mock.order_violations, mock.contract_violations);
	if (resync)
		return;
	if ((int)n != n_predicted) {
		for (size_t i = log0; i < mock.n_log; i++)
			fprintf(stderr, "  destroyed %s #%" PRIu64 "\n", rv_obj_type_name(mock.log[i].type), mock.log[i].id);
		for (int i = 0; i < n_predicted; i++)
			fprintf(stderr, "  predicted %s #%" PRIu64 "\n", rv_obj_type_name(predicted_type[i]), predicted_id[i]);
		die("%zu resources destroyed, the model predicted %d", n, n_predicted);
	}
	for (int i = 0; i < n_predicted; i++)
		pred[i] = (struct mock_event){.handle = predicted[i], .id = predicted_id[i]};
	qsort(pred, n, sizeof(pred[0]), cmp_ptr);
	qsort(&mock.log[log0], n, sizeof(pred[0]), cmp_ptr);
	for (size_t i = 0; i < n; i++)
		if (pred[i].handle != mock.log[log0 + i].handle || pred[i].id != mock.log[log0 + i].id)
			die("destroyed %s #%" PRIu64 ", the model predicted another", rv_obj_type_name(mock.log[log0 + i].type),
			    mock.log[log0 + i].id);
	for (int t = 1; t < RV_OBJ_TYPE_MAX; t++) {
		unsigned live = 0;
		for (int i = 0; i < MAX_OBJS; i++)
			live += objs[i].h && objs[i].type == (enum rv_obj_type)t &&
				(objs[i].live || t == RV_OBJ_DEVICE);
		live += abandoned[t];
		if (mock_live((enum rv_obj_type)t) != live)
			die("mock has %u live %s, model %u", mock_live((enum rv_obj_type)t),
			    rv_obj_type_name((enum rv_obj_type)t), live);
	}
}

/*
 * After an injected destroy failure the exact order of a partial cascade is
 * the library's to choose: take what was destroyed from the mock's log (the
 * driver's truth), then apply the reference rules. A live object nobody
 * references is a zombie (kept by the library, ownership.md), which gives up
 * its own references; a device nobody references was released, and what its
 * leaked contexts still held that the driver refused to destroy was
 * abandoned (lib/core/object.c, reap_leaked_contexts).
 */
static void abandon_device(struct mobj *dev)
{
	bool under[MAX_OBJS] = {false};

	/* Decide first: marking a context changes what its objects point at. */
	for (int i = 0; i < MAX_OBJS; i++) {
		struct mobj *o = &objs[i];
		under[i] = o->h && o->live && o != dev && o->ctx && o->ctx->h && o->ctx->dev_h == dev->h &&
			   o->ctx->dev_id == dev->id;
	}
	for (int i = 0; i < MAX_OBJS; i++) {
		struct mobj *o = &objs[i];
		if (!under[i])
			continue;
		if (!o->zombie)
			die("%s #%" PRIu64 " is live and referenced under a released device",
			    rv_obj_type_name(o->type), o->id);
		abandoned[o->type]++;
		abandoned_now = true;
		o->live = false;
		o->zombie = false;
		o->n_deps = 0;
	}
	memset(dev, 0, sizeof(*dev));
}

static void resync_from_log(size_t log0)
{
	bool released[MAX_OBJS] = {false};

	for (size_t e = log0; e < mock.n_log; e++) {
		for (int i = 0; i < MAX_OBJS; i++) {
			struct mobj *o = &objs[i];
			if (o->h != mock.log[e].handle || o->id != mock.log[e].id)
				continue;
			if (o->type == RV_OBJ_DEVICE) {
				released[i] = true; /* abandon_device, once the zombies are known */
			} else {
				o->live = false;
				o->n_deps = 0;
			}
		}
	}
	for (bool again = true; again;) {
		again = false;
		for (int i = 0; i < MAX_OBJS; i++) {
			struct mobj *o = &objs[i];
			if (o->h && o->live && !o->zombie && o->type != RV_OBJ_DEVICE && m_refs(o) == 0) {
				o->zombie = true;
				again = true;
			}
		}
	}
	for (int i = 0; i < MAX_OBJS; i++) {
		struct mobj *o = &objs[i];
		if (o->h && o->type == RV_OBJ_DEVICE && released[i] && m_refs(o) > 0)
			die("device #%" PRIu64 " was released with %d references", o->id, m_refs(o));
		if (o->h && o->type == RV_OBJ_DEVICE && m_refs(o) == 0)
			abandon_device(o);
	}
	for (int i = 0; i < MAX_OBJS; i++) {
		struct mobj *o = &objs[i];
		if (o->h && o->type == RV_OBJ_DEVICE)
			o->live = RV_OBJ(o->h)->state == RV_OBJ_LIVE;
	}
	for (bool again = true; again;) {
		again = false;
		for (int i = 0; i < MAX_OBJS; i++) {
			struct mobj *o = &objs[i];
			if (o->h && !o->live && o->type != RV_OBJ_DEVICE && m_refs(o) == 0) {
				memset(o, 0, sizeof(*o));
				again = true;
			}
		}
	}
}

static void check_all(size_t log0)
{
	if (!soft_mode) {
		if (resync)
			resync_from_log(log0);
		check_mock_log(log0);
	}
	for (int i = 0; i < n_slots; i++)
		if (h_live(slots[i]->type, slots[i]->h) != slots[i]->live)
			die("%s #%" PRIu64 " is %s, the model says %s", rv_obj_type_name(slots[i]->type), slots[i]->id,
			    slots[i]->live ? "closed" : "live", slots[i]->live ? "live" : "closed");
	for (int i = 0; i < MAX_OBJS; i++)
		/* Not a leaked context (a zombie): nothing references it. */
		if (objs[i].h && objs[i].type == RV_OBJ_CONTEXT && (objs[i].held || (objs[i].live && !objs[i].zombie)))
			check_dump(&objs[i]);
}

/* ---- the program ---- */

static void (*const ops[])(void) = {
	op_device_new, op_context_new, op_pd_new, op_cq_new, op_mr_new, op_qp_new,
	op_close, op_close, op_ref, op_unref, op_unref, op_wrong_type,
	op_post, op_poll, op_query, op_connect, op_device_list, op_inject, op_channel_new,
};

static void quiet(rv_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)msg;
	(void)user;
}

static void report(void)
{
	fprintf(stderr, "fuzz-lifecycle: %llu inputs, %llu steps (%s); created %llu contexts, %llu PDs, "
		"%llu MRs, %llu CQs, %llu QPs, %llu completion channels; %llu resources abandoned\n", total_inputs,
		total_steps, soft_mode ? "soft0" : "mock driver", created[RV_OBJ_CONTEXT], created[RV_OBJ_PD],
		created[RV_OBJ_MR], created[RV_OBJ_CQ], created[RV_OBJ_QP], created[RV_OBJ_COMP_CHANNEL],
		total_abandoned);
}

static void prelude(void)
{
	rv_context *c;
	rv_pd *pd = NULL;
	rv_cq *cq = NULL;
	struct mobj *o, *co;

	if (rv_context_new(slots[0]->h, NULL, &c) < 0)
		die("prelude: rv_context_new");
	co = m_new(c, RV_OBJ_CONTEXT, NULL);
	co->deps[co->n_deps++] = slots[0];
	co->dev_h = slots[0]->h;
	co->dev_id = slots[0]->id;
	slot_add(co);
	if (rv_pd_new(c, NULL, &pd) < 0 || rv_cq_new(c, NULL, &cq) < 0)
		die("prelude: rv_pd_new/rv_cq_new");
	o = m_new(pd, RV_OBJ_PD, co);
	o->deps[o->n_deps++] = co;
	slot_add(o);
	o = m_new(cq, RV_OBJ_CQ, co);
	o->deps[o->n_deps++] = co;
	slot_add(o);
	{
		rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ, .send_cq = cq};
		rv_qp *qp = NULL;
		struct mobj *pdo = slots[n_slots - 2], *cqo = slots[n_slots - 1];

		if (rv_qp_new(pd, &qa, &qp) < 0)
			die("prelude: rv_qp_new");
		o = m_new(qp, RV_OBJ_QP, co);
		o->deps[o->n_deps++] = pdo;
		o->deps[o->n_deps++] = cqo;
		slot_add(o);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *d = getenv("FUZZ_DEVICE");

	(void)argc;
	(void)argv;
	soft_mode = d && !strcmp(d, "soft0");
	trace = getenv("FUZZ_TRACE") != NULL;
	rv_set_log_handler(quiet, NULL);
	atexit(report);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int max_steps = soft_mode ? MAX_STEPS_SOFT : MAX_STEPS_MOCK;

	in_p = data;
	in_n = size;
	memset(objs, 0, sizeof(objs));
	memset(abandoned, 0, sizeof(abandoned));
	n_slots = 0;
	resync = false;
	if (!soft_mode)
		mock_reset();
	total_inputs++;
	/* Every program starts with a device, a context, a PD, a CQ and a QP. */
	step_no = 0;
	op_device_new();
	prelude();
	for (step_no = 1; in_n && step_no <= max_steps; step_no++) {
		size_t log0 = soft_mode ? 0 : mock.n_log;
		n_predicted = 0;
		failed0 = failed_destroys();
		if (!soft_mode && mock.n_log > MOCK_LOG_MAX - 2 * MAX_OBJS)
			break;
		uint8_t op = u8() % (sizeof(ops) / sizeof(ops[0]));
		if (trace)
			fprintf(stderr, "step %d: op %u, %d slots\n", step_no, op, n_slots);
		ops[op]();
		total_steps++;
		if (failed_destroys() != failed0)
			resync = true;
		check_all(log0);
		resync = false;
	}

	/* The end: the driver stops refusing, and the program drops every
	 * reference it holds, newest first, closing nothing: each zombie is
	 * retried by the last unref of one of its parents (or its context's,
	 * or its device's), which the model predicts like any cascade. */
	if (!soft_mode) {
		memset(mock.fail_destroy_count, 0, sizeof(mock.fail_destroy_count));
		memset(mock.fail_create_count, 0, sizeof(mock.fail_create_count));
	}
	while (n_slots) {
		size_t log0 = soft_mode ? 0 : mock.n_log;
		struct mobj *o = slots[n_slots - 1];
		n_predicted = 0;
		n_slots--;
		h_unref(o->type, o->h);
		o->held--;
		m_release(o);
		check_all(log0);
	}
	for (int i = 0; i < MAX_OBJS; i++)
		if (objs[i].h)
			die("%s #%" PRIu64 " is left after the last unref", rv_obj_type_name(objs[i].type), objs[i].id);
	if (!soft_mode) {
		unsigned n_abandoned = 0;
		for (int t = 1; t < RV_OBJ_TYPE_MAX; t++)
			n_abandoned += abandoned[t];
		if (mock_live_total() != n_abandoned)
			die("the mock still has %u live objects (%u abandoned)", mock_live_total(), n_abandoned);
		total_abandoned += n_abandoned;
	}
	return 0;
}
