/*
 * The handle core: every rverbs handle starts with a struct rv_object.
 *
 * Owns: reference counts, the dependency graph (strong references from a child
 * to what it depends on, a weak registry of dependents in each parent), the
 * depth-first cascade close, and the closed state. Never calls a driver except
 * through the class's destroy hook; never takes a lock on the data path.
 */
#ifndef RV_CORE_OBJECT_H
#define RV_CORE_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rv_obj_type {
	RV_OBJ_DEVICE = 1,
	RV_OBJ_CONTEXT,
	RV_OBJ_PD,
	RV_OBJ_MR,
	RV_OBJ_MW,
	RV_OBJ_CQ,
	RV_OBJ_COMP_CHANNEL,
	RV_OBJ_QP,
	RV_OBJ_SRQ,
	RV_OBJ_AH,
	RV_OBJ_LISTENER,
	RV_OBJ_CONN,
	RV_OBJ_POOL,
	RV_OBJ_TD,
	RV_OBJ_XRCD,
	RV_OBJ_TYPE_MAX
};

/* The families, a row each: X(type, its name in messages). object.c makes
 * the names and the data path's live words from it, and checks at compile
 * time that it has a row per type. A new family: its enum value above, its row here, its
 * rv_object_class and RV_DEFINE_HANDLE_* (below) in its file. */
#define RV_OBJ_TYPE_TABLE(X)                                                   \
	X(DEVICE, "device") X(CONTEXT, "context") X(PD, "PD") X(MR, "MR")       \
	X(MW, "MW") X(CQ, "CQ") X(COMP_CHANNEL, "completion channel") X(QP, "QP") \
	X(SRQ, "SRQ") X(AH, "AH") X(LISTENER, "listener") X(CONN, "connection")  \
	X(POOL, "pool") X(TD, "TD") X(XRCD, "XRC domain")

enum rv_obj_state {
	RV_OBJ_LIVE = 1,
	RV_OBJ_CLOSED = 2,
};

/* A handle whose memory is ours carries this magic (xor its type). */
#define RV_OBJ_MAGIC 0x72766f00u
/* Written over the magic when the memory is freed, to catch use after free. */
#define RV_OBJ_DEAD 0xdeadbeefu

/* A live object whose destroy failed once no handle referred to it any more.
 * It holds no references (RV_OBJ_NOREFS_FLAG) and stays only in the registry
 * of each object it depends on, whose close or last unref retries it. */
#define RV_OBJ_ZOMBIE_FLAG 1u

/* A child depends on at most this many objects (QP: PD, send CQ, recv CQ, SRQ). */
#define RV_OBJ_MAX_DEPS 4

struct rv_object;
struct rv_context;

struct rv_object_class {
	enum rv_obj_type type;
	const char *name; /* "QP", used in messages */
	/* Destroy the underlying resource. 0, or a negative errno with the error
	 * message set; on failure the object stays live and tracked. */
	int (*destroy)(struct rv_object *obj);
	/* Free what the object owns beyond the resource (buffers). May be NULL. */
	void (*release)(struct rv_object *obj);
};

struct rv_object {
	/* magic and state: the first 8 bytes, read as one word by the data
	 * path's handle check (rv_obj_live_fast). */
	uint32_t magic;
	uint32_t state; /* enum rv_obj_state */
	_Atomic uint32_t refcnt;
	uint32_t n_dependents;
	uint32_t cap_dependents;
	uint8_t n_deps;
	uint16_t flags; /* RV_OBJ_*_FLAG, written under the graph lock */
	uint64_t id;
	const struct rv_object_class *cls;
	/* The context whose lock guards this object's graph edges; for a device NULL
	 * (devices use the global lock), for a context itself. Weak for a context;
	 * a strong dependency for every object inside one (it is in deps too). */
	struct rv_context *ctx;
	struct rv_object *deps[RV_OBJ_MAX_DEPS];    /* strong */
	struct rv_object **dependents;              /* weak */
	char close_reason[160];
};

static inline uint32_t rv_obj_magic(enum rv_obj_type t) { return RV_OBJ_MAGIC ^ (uint32_t)t; }

/* The first 8 bytes (magic, state) of a live object of each type, as one
 * word. A fork child zeroes them (core/fork.c), so that there no handle
 * passes rv_obj_live_fast and each goes through the complete check, which
 * refuses the parent's objects: the data path needs no fork test of its own. */
extern uint64_t rv_obj_live_words[RV_OBJ_TYPE_MAX] __attribute__((visibility("hidden")));

/* The data path's handle check: h is a live object of type t, in a process
 * that has not forked from the one that made it. One load and one compare
 * beside the NULL test. false says nothing about why: the caller then runs
 * its complete check (rv_obj_check, rv_fork_check), which also accepts the
 * live objects of a fork child's own. */
static inline bool rv_obj_live_fast(const void *h, enum rv_obj_type t)
{
	uint64_t w;

	if (!h)
		return false;
	/* memcpy: the word is two uint32_t fields; one 8-byte load. */
	__builtin_memcpy(&w, h, sizeof(w));
	return w == rv_obj_live_words[t];
}

/* Whether p lies in a block AddressSanitizer knows is freed (always false
 * without ASan): lets a handle check refuse a freed handle without the read
 * ASan would report. */
bool rv_mem_freed_asan(const void *p);
/* free(p), delayed until RV_QUARANTINE more blocks came here (object.c), so
 * that the poison written into a freed handle stays readable meanwhile. */
void rv_mem_quarantine(void *p);

/* Initialise with refcount 1, live, no dependencies. */
void rv_obj_init(struct rv_object *obj, const struct rv_object_class *cls,
		 struct rv_context *ctx);

/* Take a strong reference on dep and register obj as its dependent. Call with
 * the graph lock held (or before obj is visible to anyone). */
int rv_obj_add_dep(struct rv_object *obj, struct rv_object *dep);

/* Undo one rv_obj_add_dep: unregister obj from dep and drop the strong
 * reference (which may free dep). Call with the graph lock held. */
void rv_obj_remove_dep(struct rv_object *obj, struct rv_object *dep);

/* Undo every rv_obj_add_dep and free the memory of an object whose creation
 * failed before the resource existed. */
void rv_obj_abort(struct rv_object *obj);

/*
 * The common part of every rv_<family>_new, so that a family writes only its
 * own checks, fields and driver call, and every failure unwinds the same way
 * (the output and the parent untouched; no id taken before the allocation;
 * the resource never made, or undone by the driver):
 *
 *	rc = rv_obj_new_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, ret_pd, "ret_pd",
 *			      attr ? attr->mask : 0, 0, "rv_pd_attr", __func__);
 *	...the family's own checks...
 *	pd = rv_obj_new(sizeof(*pd), &pd_class, ctx, __func__);
 *	...its fields...
 *	rv_graph_lock(&ctx->obj);
 *	rc = rv_obj_depend(&pd->obj, &ctx->obj, __func__);
 *	if (rc == 0)
 *		rc = RV_DRIVER_CALL(ctx->drv->pd_alloc(pd), __func__, "allocating the PD");
 *	return RV_OBJ_NEW_END(pd, &ctx->obj, rc, ret_pd);
 */

/* A live parent of parent_type; ret (the output, named ret_name in the
 * message) not NULL; no bit of mask outside known, named with attr_name
 * ("unknown bit 0x8 in rv_pd_attr.mask"); attr_name NULL when the family
 * checks its mask itself. 0 or a negative errno with the message set. */
int rv_obj_new_check(const struct rv_object *parent, enum rv_obj_type parent_type, const void *ret,
		     const char *ret_name, uint64_t mask, uint64_t known, const char *attr_name,
		     const char *func);

/* A zeroed handle of size bytes whose struct rv_object comes first, initialised
 * for cls in ctx (rv_obj_init), with the context's next id. NULL, with the
 * message "func: out of memory", when memory is short. */
void *rv_obj_new(size_t size, const struct rv_object_class *cls, struct rv_context *ctx, const char *func);

/* rv_obj_add_dep with the message "func: out of memory" when it fails. */
int rv_obj_depend(struct rv_object *obj, struct rv_object *dep, const char *func);

/* The end of a creation under parent's graph lock: on failure (rc < 0) undo
 * obj (rv_obj_abort), then drop the lock; rc. RV_OBJ_NEW_END also writes the
 * output, on success only. */
int rv_obj_new_end(struct rv_object *obj, struct rv_object *parent, int rc);
#define RV_OBJ_NEW_END(h, parent, rc, ret)                                        \
	(rv_obj_new_end(&(h)->obj, (parent), (rc)) < 0 ? (rc) : (*(ret) = (h), 0))

/* A driver call under func's name: the message cleared first, so that a
 * failure without one of the driver's gets "func: what failed: strerror". */
#define RV_DRIVER_CALL(call, func, what) rv_err_from_driver((rv_error_clear(), (call)), (func), (what))

void rv_obj_ref(struct rv_object *obj);
/* Drop a reference; at zero close (if live) and free. */
void rv_obj_unref(struct rv_object *obj);

/* Close obj and, first, everything that depends on it. reason is the text a
 * later call on the closed handle reports ("closed by rv_qp_close"). */
int rv_obj_close(struct rv_object *obj, const char *reason);

/* Validate a handle argument of a public entry: NULL, foreign memory or wrong
 * type give -EINVAL; a closed handle -RV_ECLOSED with its close reason. */
int rv_obj_check(const struct rv_object *obj, enum rv_obj_type type, const char *func);
/* As rv_obj_check but a closed handle is acceptable (ref, unref, close, dump). */
int rv_obj_check_any(const struct rv_object *obj, enum rv_obj_type type, const char *func);

/* Graph locking for a control-path call on obj: takes a temporary reference on
 * the context so that nothing the call releases can free the lock it holds. */
void rv_graph_lock(struct rv_object *obj);
void rv_graph_unlock(struct rv_object *obj);

/* For rv_context_dump and leak reports: visit live dependents depth-first. */
typedef void (*rv_obj_visit_fn)(struct rv_object *obj, int depth, void *arg);
void rv_obj_walk(struct rv_object *root, rv_obj_visit_fn fn, void *arg);

const char *rv_obj_type_name(enum rv_obj_type type);

/*
 * The lifecycle functions every handle family exports, each from one line
 * in the family's file (systemd's DEFINE_TRIVIAL_REF_UNREF_FUNC idea), so a
 * new family writes only its own logic:
 * - RV_DEFINE_HANDLE_REF_UNREF(family, type): rv_<family>_ref and
 *   rv_<family>_unref; NULL-safe, a closed handle accepted, anything else
 *   refused with the message and left alone;
 * - RV_DEFINE_HANDLE_CLOSE(family, type, what): rv_<family>_close, which
 *   closes the handle and its dependents ("closed by rv_<family>_close");
 *   what names the work when the driver fails without a message ("destroying
 *   the QP").
 * Used at file scope of the facade's files (they need rverbs-private.h), without a
 * semicolon after them.
 */
#define RV_DEFINE_HANDLE_REF_UNREF(family, type)                                  \
	RV_EXPORT rv_##family *rv_##family##_ref(rv_##family *h)                   \
	{                                                                         \
		if (h && rv_obj_check_any(RV_COBJ(h), type, __func__) == 0)         \
			rv_obj_ref(&h->obj);                                         \
		return h;                                                         \
	}                                                                         \
	RV_EXPORT rv_##family *rv_##family##_unref(rv_##family *h)                 \
	{                                                                         \
		if (h && rv_obj_check_any(RV_COBJ(h), type, __func__) == 0)         \
			rv_obj_unref(&h->obj);                                       \
		return NULL;                                                      \
	}

#define RV_DEFINE_HANDLE_CLOSE(family, type, what)                                \
	RV_EXPORT int rv_##family##_close(rv_##family *h)                            \
	{                                                                         \
		int rc = rv_obj_check_any(RV_COBJ(h), type, __func__);              \
                                                                                  \
		if (rc < 0)                                                       \
			return rc;                                                \
		rv_error_clear();                                                 \
		rc = rv_obj_close(&h->obj, "closed by rv_" #family "_close");     \
		return rv_err_from_driver(rc, __func__, what);                    \
	}

#endif
