/*
 * The handle core: reference counts, the dependency graph, cascade close.
 *
 * Locking: every object inside a context shares that context's recursive
 * mutex (the graph lock); devices and the registry of contexts under each
 * device use one global mutex. The order is always context lock, then global
 * lock, never the reverse (rv_device_close releases the global lock before
 * closing contexts). Nothing here runs on the data path except the inline
 * state check done by the callers.
 *
 * Lifetime rules:
 * - a live child holds a strong reference on each dependency and is listed in
 *   each dependency's weak registry of dependents;
 * - closing drops those references at once, so a closed handle pins nothing;
 * - a destroy that fails leaves the object live and listed. If its last
 *   reference is already gone it becomes a zombie: it gives up its strong
 *   references (RV_OBJ_NOREFS_FLAG) but stays in every registry it is in, so
 *   it pins nothing either, and whichever of its dependencies is closed or
 *   released first retries its destroy in the cascade and then frees it.
 *   A dependency cannot be freed while a zombie is in its registry: freeing
 *   needs a successful close, and a close empties the registry first;
 * - a context whose close fails at its last unref (a zombie in it still
 *   refuses, or the context's own destroy does) gives up its reference on its
 *   device the same way (RV_OBJ_LEAKED_FLAG): the device's close retries it,
 *   and the device's last unref retries it once more and then abandons what
 *   the driver still refuses (logged), so rverbs' memory is always freed;
 * - nothing is destroyed twice: an object leaves the graph (drop_deps) only
 *   after its destroy succeeded or was abandoned, and is freed once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rverbs-private.h"
#include "core/fork.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define OBJ_FREED_ASAN(obj) __asan_address_is_poisoned(obj)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define OBJ_FREED_ASAN(obj) __asan_address_is_poisoned(obj)
#endif
#endif
#ifndef OBJ_FREED_ASAN
#define OBJ_FREED_ASAN(obj) 0
#endif

/*
 * A second unref (or any call after the last one) is caught cheaply, not
 * always (docs/ownership.md, "Debugging"): a freed handle's magic becomes
 * RV_OBJ_DEAD and its cls points at freed_class, and its memory goes back to
 * the allocator only after the next RV_QUARANTINE handles were freed, so
 * that until then every check reads the poison, whatever the allocator (its
 * links in a freed block, MALLOC_PERTURB_) would have written. Later, cls
 * may still say so until the block is reused (the allocator's links cover
 * the first 16 bytes only); a block reused for another handle of the same
 * type is beyond any cheap check. Under AddressSanitizer a block ASan knows
 * is freed is refused without reading it.
 */
#define RV_QUARANTINE 64
static const struct rv_object_class freed_class = {.type = RV_OBJ_TYPE_MAX, .name = "freed"};
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static void *quarantine[RV_QUARANTINE];
static unsigned quarantine_next;

bool rv_mem_freed_asan(const void *p)
{
	(void)p;
	return OBJ_FREED_ASAN(p);
}

void rv_mem_quarantine(void *p)
{
	void *old;

	pthread_mutex_lock(&quarantine_lock); /* a leaf lock: nothing is taken under it */
	old = quarantine[quarantine_next];
	quarantine[quarantine_next] = p;
	quarantine_next = (quarantine_next + 1) % RV_QUARANTINE;
	pthread_mutex_unlock(&quarantine_lock);
	free(old);
}

static pthread_mutex_t global_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

#define TYPE_NAME(type, name) [RV_OBJ_##type] = name,
static const char *const type_names[RV_OBJ_TYPE_MAX] = {RV_OBJ_TYPE_TABLE(TYPE_NAME)};
#undef TYPE_NAME
/* Every type between 0 and RV_OBJ_TYPE_MAX has its row. */
#define TYPE_ONE(type, name) +1
_Static_assert(0 RV_OBJ_TYPE_TABLE(TYPE_ONE) == RV_OBJ_TYPE_MAX - 1, "a row of RV_OBJ_TYPE_TABLE per rv_obj_type");
#undef TYPE_ONE

const char *rv_obj_type_name(enum rv_obj_type type)
{
	if ((int)type <= 0 || type >= RV_OBJ_TYPE_MAX)
		return "handle";
	return type_names[type];
}

static enum rv_obj_type obj_type(const struct rv_object *obj)
{
	return obj->cls->type;
}

/* RV_OBJ_ZOMBIE_FLAG (object.h): last reference gone while a failed destroy
 * kept the object live. */
/* A context whose close failed at its last unref: its device reaps it. */
#define RV_OBJ_LEAKED_FLAG 2u
/* deps[] only lists the registries the object is in: it gave up the strong
 * references (zombies and leaked contexts), so leaving the graph unregisters
 * it without an unref. */
#define RV_OBJ_NOREFS_FLAG 4u
/* A cascade closed the object while its last unref was in flight in another
 * thread and took a reference on its context for that thread (pin_for_owner). */
#define RV_OBJ_PINNED_FLAG 8u

/* magic in the low half and state in the high half of a little-endian
 * word, the other way round on a big-endian one. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LIVE_WORD(t) ((uint64_t)RV_OBJ_LIVE << 32 | (uint32_t)(RV_OBJ_MAGIC ^ (uint32_t)(t)))
#else
#define LIVE_WORD(t) ((uint64_t)(uint32_t)(RV_OBJ_MAGIC ^ (uint32_t)(t)) << 32 | RV_OBJ_LIVE)
#endif
_Static_assert(offsetof(struct rv_object, state) == 4 && sizeof(((struct rv_object *)0)->state) == 4,
	       "magic and state are the object's first 8 bytes");

#define TYPE_LIVE_WORD(type, name) [RV_OBJ_##type] = LIVE_WORD(RV_OBJ_##type),
uint64_t rv_obj_live_words[RV_OBJ_TYPE_MAX] = {RV_OBJ_TYPE_TABLE(TYPE_LIVE_WORD)};
#undef TYPE_LIVE_WORD

void rv_obj_init(struct rv_object *obj, const struct rv_object_class *cls, struct rv_context *ctx)
{
	memset(obj, 0, sizeof(*obj));
	obj->magic = rv_obj_magic(cls->type);
	obj->state = RV_OBJ_LIVE;
	obj->cls = cls;
	obj->ctx = ctx;
	atomic_init(&obj->refcnt, 1);
}

static void lock_for(struct rv_object *obj)
{
	if (obj_type(obj) == RV_OBJ_DEVICE)
		pthread_mutex_lock(&global_lock);
}

static void unlock_for(struct rv_object *obj)
{
	if (obj_type(obj) == RV_OBJ_DEVICE)
		pthread_mutex_unlock(&global_lock);
}

int rv_obj_add_dep(struct rv_object *obj, struct rv_object *dep)
{
	int rc = 0;

	if (obj->n_deps >= RV_OBJ_MAX_DEPS)
		return -EOVERFLOW;
	lock_for(dep);
	if (dep->n_dependents == dep->cap_dependents) {
		uint32_t cap = dep->cap_dependents ? dep->cap_dependents * 2 : 8;
		struct rv_object **n = realloc(dep->dependents, cap * sizeof(*n));
		if (!n) {
			rc = -ENOMEM;
			goto out;
		}
		dep->dependents = n;
		dep->cap_dependents = cap;
	}
	dep->dependents[dep->n_dependents++] = obj;
	atomic_fetch_add(&dep->refcnt, 1);
	obj->deps[obj->n_deps++] = dep;
out:
	unlock_for(dep);
	return rc;
}

static void unregister_from(struct rv_object *dep, struct rv_object *obj)
{
	lock_for(dep);
	for (uint32_t i = dep->n_dependents; i-- > 0;) {
		if (dep->dependents[i] == obj) {
			memmove(&dep->dependents[i], &dep->dependents[i + 1],
				(dep->n_dependents - i - 1) * sizeof(dep->dependents[0]));
			dep->n_dependents--;
			break;
		}
	}
	unlock_for(dep);
}

void rv_obj_remove_dep(struct rv_object *obj, struct rv_object *dep)
{
	uint8_t i;

	for (i = 0; i < obj->n_deps && obj->deps[i] != dep; i++)
		;
	if (i == obj->n_deps)
		return;
	memmove(&obj->deps[i], &obj->deps[i + 1], (size_t)(obj->n_deps - i - 1) * sizeof(obj->deps[0]));
	obj->deps[--obj->n_deps] = NULL;
	unregister_from(dep, obj);
	if (!(obj->flags & RV_OBJ_NOREFS_FLAG))
		rv_obj_unref(dep);
}

static void free_obj(struct rv_object *obj)
{
	if (obj->cls->release)
		obj->cls->release(obj);
	free(obj->dependents);
	obj->magic = RV_OBJ_DEAD;
	obj->cls = &freed_class;
	rv_mem_quarantine(obj);
}

/* Leave the graph: unregister from every dependency and drop the strong
 * references, unless the object gave them up already (a zombie). */
static void drop_deps(struct rv_object *obj)
{
	struct rv_object *deps[RV_OBJ_MAX_DEPS];
	uint8_t n = obj->n_deps;
	bool refs = !(obj->flags & RV_OBJ_NOREFS_FLAG);

	memcpy(deps, obj->deps, sizeof(deps));
	for (uint8_t i = 0; i < n; i++)
		unregister_from(deps[i], obj);
	obj->n_deps = 0;
	memset(obj->deps, 0, sizeof(obj->deps));
	if (refs)
		for (uint8_t i = 0; i < n; i++)
			rv_obj_unref(deps[i]);
}

/* obj's last reference is gone and its destroy failed: make it a zombie that
 * stays in its dependencies' registries and drops its references on them.
 * Caller holds the graph lock. Dropping a reference may run a dependency's
 * last unref, whose cascade retries obj's destroy and can free obj: obj is
 * marked before the first unref and never touched after it. */
static void zombify(struct rv_object *obj)
{
	struct rv_object *deps[RV_OBJ_MAX_DEPS];
	uint8_t n = obj->n_deps;

	obj->flags |= RV_OBJ_ZOMBIE_FLAG | RV_OBJ_NOREFS_FLAG;
	memcpy(deps, obj->deps, sizeof(deps));
	for (uint8_t i = 0; i < n; i++)
		rv_obj_unref(deps[i]);
}

void rv_obj_abort(struct rv_object *obj)
{
	drop_deps(obj);
	free_obj(obj);
}

int rv_obj_new_check(const struct rv_object *parent, enum rv_obj_type parent_type, const void *ret,
		     const char *ret_name, uint64_t mask, uint64_t known, const char *attr_name,
		     const char *func)
{
	int rc = rv_obj_check(parent, parent_type, func);

	if (rc < 0)
		return rc;
	if (!ret)
		return rv_err(EINVAL, func, "%s is NULL", ret_name);
	if (attr_name && (mask & ~known))
		return rv_err(EINVAL, func, "unknown bit 0x%" PRIx64 " in %s.mask", mask & ~known, attr_name);
	return 0;
}

void *rv_obj_new(size_t size, const struct rv_object_class *cls, struct rv_context *ctx, const char *func)
{
	struct rv_object *obj = calloc(1, size);

	if (!obj) {
		rv_err(ENOMEM, func, "out of memory");
		return NULL;
	}
	rv_obj_init(obj, cls, ctx);
	obj->id = rv_ctx_next_id(ctx);
	return obj;
}

int rv_obj_depend(struct rv_object *obj, struct rv_object *dep, const char *func)
{
	return rv_obj_add_dep(obj, dep) < 0 ? rv_err(ENOMEM, func, "out of memory") : 0;
}

int rv_obj_new_end(struct rv_object *obj, struct rv_object *parent, int rc)
{
	if (rc < 0)
		rv_obj_abort(obj);
	rv_graph_unlock(parent);
	return rc;
}

void rv_obj_ref(struct rv_object *obj)
{
	atomic_fetch_add_explicit(&obj->refcnt, 1, memory_order_relaxed);
}

/* Take a reference unless the count already reached zero: an object found
 * through a weak registry may be in another thread's final_unref, waiting for
 * the graph lock we hold. Resurrecting it would free it twice. */
static bool ref_unless_zero(struct rv_object *obj)
{
	uint32_t n = atomic_load_explicit(&obj->refcnt, memory_order_relaxed);

	while (n != 0)
		if (atomic_compare_exchange_weak_explicit(&obj->refcnt, &n, n + 1, memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	return false;
}

static bool leak_debug(void)
{
	const char *v = getenv("RVERBS_DEBUG");
	return v && strstr(v, "leaks");
}

static void report_leak(struct rv_object *obj, int depth, void *arg)
{
	(void)arg;
	(void)depth;
	rv_log(RV_LOG_WARN, "leak: %s #%" PRIu64 " still has %u reference(s) when its context was closed",
	       rv_obj_type_name(obj_type(obj)), obj->id, atomic_load(&obj->refcnt));
}

/* Drop the reference the cascade took on a dependent. At zero the dependent
 * was only pinned by its own children: free it if it is closed, else (its
 * destroy failed) it becomes a zombie for the next close of a parent. */
static void cascade_put(struct rv_object *d)
{
	if (atomic_fetch_sub_explicit(&d->refcnt, 1, memory_order_acq_rel) != 1)
		return;
	if (d->state == RV_OBJ_CLOSED)
		free_obj(d);
	else
		zombify(d);
}

/* d's last reference was dropped in another thread, which is on its way to
 * our lock in final_unref and will free d. Closing d drops d's references,
 * and with them maybe the last one keeping d's context alive, while that
 * thread is about to lock the context: take a reference on the context for
 * it, before d's references go. final_unref drops it. Once per object. */
static void pin_for_owner(struct rv_object *d)
{
	if (d->flags & RV_OBJ_PINNED_FLAG)
		return;
	d->flags |= RV_OBJ_PINNED_FLAG;
	rv_obj_ref(&d->ctx->obj);
}

/* Close obj after its dependents, newest first. Caller holds the graph lock.
 * With force (the device's last unref, nothing can retry after it) a destroy
 * that fails is logged and abandoned: the driver keeps the resource, rverbs
 * frees its handle. */
static int close_locked(struct rv_object *obj, const char *reason, bool force)
{
	bool zombie;
	int rc;

	if (obj->state == RV_OBJ_CLOSED)
		return 0;
	if (obj_type(obj) == RV_OBJ_CONTEXT && obj->n_dependents && leak_debug())
		rv_obj_walk(obj, report_leak, NULL);

	while (obj->n_dependents > 0) {
		struct rv_object *d = obj->dependents[obj->n_dependents - 1];
		char why[sizeof(obj->close_reason)];

		snprintf(why, sizeof(why), "closed because its %s #%" PRIu64 " was closed",
			 rv_obj_type_name(obj_type(obj)), obj->id);
		/* d may be referenced only by its own dependents, whose closing
		 * drops those references: hold one so d outlives its close. A
		 * zombie has none and is freed by close_locked itself. A
		 * dependent whose last reference another thread just dropped has
		 * none either: that thread waits for our lock in final_unref and
		 * frees it, closed by us, after we release the lock. */
		if (d->flags & RV_OBJ_ZOMBIE_FLAG) {
			rc = close_locked(d, why, force);
		} else if (ref_unless_zero(d)) {
			rc = close_locked(d, why, force);
			cascade_put(d);
		} else {
			pin_for_owner(d);
			rc = close_locked(d, why, force);
		}
		if (rc < 0)
			return rc;
	}

	rc = obj->cls->destroy ? obj->cls->destroy(obj) : 0;
	if (rc < 0 && force) {
		rv_log(RV_LOG_ERROR, "abandoning %s #%" PRIu64 ": its destroy failed again (%s) at its device's last unref, "
		       "the last chance to retry; rverbs frees its handle, the driver keeps the resource",
		       rv_obj_type_name(obj_type(obj)), obj->id, strerror(-rc));
	} else if (rc < 0) {
		rv_log(RV_LOG_ERROR, "destroying %s #%" PRIu64 " failed (%s); it stays tracked and the close can be retried",
		       rv_obj_type_name(obj_type(obj)), obj->id, strerror(-rc));
		return rc;
	}
	snprintf(obj->close_reason, sizeof(obj->close_reason), "%s", reason);
	drop_deps(obj);
	zombie = obj->flags & RV_OBJ_ZOMBIE_FLAG;
	/* The last write: a thread in final_unref that reads CLOSED frees obj
	 * at once (a dependent the cascade closed without a reference). */
	__atomic_store_n(&obj->state, RV_OBJ_CLOSED, __ATOMIC_RELEASE);
	if (zombie)
		free_obj(obj);
	return 0;
}

static pthread_mutex_t *graph_mutex(struct rv_object *obj, struct rv_context **ret_ctx)
{
	struct rv_context *ctx;

	if (obj_type(obj) == RV_OBJ_DEVICE) {
		*ret_ctx = NULL;
		return &global_lock;
	}
	ctx = obj_type(obj) == RV_OBJ_CONTEXT ? (struct rv_context *)obj : obj->ctx;
	*ret_ctx = ctx;
	return &ctx->lock;
}

void rv_graph_lock(struct rv_object *obj)
{
	struct rv_context *ctx;
	pthread_mutex_t *m = graph_mutex(obj, &ctx);

	if (ctx)
		rv_obj_ref(&ctx->obj);
	pthread_mutex_lock(m);
}

void rv_graph_unlock(struct rv_object *obj)
{
	struct rv_context *ctx;
	pthread_mutex_t *m = graph_mutex(obj, &ctx);

	pthread_mutex_unlock(m);
	if (ctx)
		rv_obj_unref(&ctx->obj);
}

/* Drop device_close's reference on a leaked context it revived: at zero,
 * free it if the close went through, else it stays leaked for the next try
 * (no retry here: the close just failed). */
static void put_revived(struct rv_object *c)
{
	if (atomic_fetch_sub_explicit(&c->refcnt, 1, memory_order_acq_rel) != 1)
		return;
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == RV_OBJ_CLOSED)
		free_obj(c);
	else
		__atomic_fetch_or(&c->flags, RV_OBJ_LEAKED_FLAG, __ATOMIC_RELEASE);
}

static int device_close(struct rv_object *dev, const char *reason)
{
	struct rv_object **ctxs;
	bool *revived;
	uint32_t n;
	int rc = 0;

	pthread_mutex_lock(&global_lock);
	if (dev->state == RV_OBJ_CLOSED) {
		pthread_mutex_unlock(&global_lock);
		return 0;
	}
	n = dev->n_dependents;
	ctxs = calloc(n ? n : 1, sizeof(*ctxs));
	revived = calloc(n ? n : 1, sizeof(*revived));
	if (!ctxs || !revived) {
		pthread_mutex_unlock(&global_lock);
		free(ctxs);
		free(revived);
		return -ENOMEM;
	}
	/* A context whose last reference is gone is closing itself in its
	 * final_unref: leave it to that (not resurrected, see ref_unless_zero).
	 * A leaked one (its close failed at its last unref) is nobody's: take
	 * it, clearing the flag so that a concurrent device close does not. */
	for (uint32_t i = 0; i < n; i++) {
		struct rv_object *c = dev->dependents[i];
		ctxs[i] = NULL;
		if (ref_unless_zero(c)) {
			ctxs[i] = c;
		} else if (__atomic_fetch_and(&c->flags, (uint16_t)~RV_OBJ_LEAKED_FLAG, __ATOMIC_ACQ_REL) &
			   RV_OBJ_LEAKED_FLAG) {
			rv_obj_ref(c);
			ctxs[i] = c;
			revived[i] = true;
		}
	}
	pthread_mutex_unlock(&global_lock);

	for (uint32_t i = n; i-- > 0;) {
		if (!ctxs[i])
			continue;
		if (rc == 0)
			rc = rv_obj_close(ctxs[i], "closed because its device was closed");
		if (revived[i])
			put_revived(ctxs[i]);
		else
			rv_obj_unref(ctxs[i]);
	}
	free(ctxs);
	free(revived);
	if (rc < 0)
		return rc;

	pthread_mutex_lock(&global_lock);
	if (dev->n_dependents == 0) {
		dev->state = RV_OBJ_CLOSED;
		snprintf(dev->close_reason, sizeof(dev->close_reason), "%s", reason);
	} else {
		rc = -EBUSY; /* a context was opened while we were closing */
	}
	pthread_mutex_unlock(&global_lock);
	return rc;
}

int rv_obj_close(struct rv_object *obj, const char *reason)
{
	int rc;

	if (obj_type(obj) == RV_OBJ_DEVICE)
		return device_close(obj, reason);
	/* A closed handle pins nothing, not even the context whose lock guarded
	 * it: that context may be gone. */
	if (obj->state == RV_OBJ_CLOSED)
		return 0;
	rv_graph_lock(obj);
	rc = close_locked(obj, reason, false);
	rv_graph_unlock(obj);
	return rc;
}

/* The device's last unref: only leaked contexts can still be registered
 * (a live one holds a reference). Nothing can retry after this, so each is
 * closed once more and, if that still fails, closed by force: rverbs frees
 * every handle of the branch and the driver keeps what it would not destroy
 * (a kernel driver releases it when the process exits). */
static void reap_leaked_contexts(struct rv_object *dev)
{
	pthread_mutex_lock(&global_lock);
	while (dev->n_dependents > 0) {
		struct rv_object *c = dev->dependents[dev->n_dependents - 1];
		struct rv_context *ctx = (struct rv_context *)c;
		const char *why = "closed by its device's last unref";

		pthread_mutex_unlock(&global_lock); /* lock order: context, then global */
		pthread_mutex_lock(&ctx->lock);
		if (close_locked(c, why, false) < 0) {
			rv_log(RV_LOG_ERROR, "context #%" PRIu64 " still cannot be destroyed at its device's last unref; "
			       "rverbs abandons what the driver refuses to destroy and frees the handles", c->id);
			close_locked(c, why, true);
		}
		pthread_mutex_unlock(&ctx->lock);
		free_obj(c);
		pthread_mutex_lock(&global_lock);
	}
	pthread_mutex_unlock(&global_lock);
}

/* The last unref of a context whose close failed: it gives up its reference
 * on its device (keeping its place in the device's registry) so that the
 * device's close or last unref can reap it. Not twice: a revived context
 * whose close fails again already gave it up. */
static void leak_context(struct rv_object *obj)
{
	struct rv_object *deps[RV_OBJ_MAX_DEPS];
	uint8_t n = obj->n_deps;
	uint16_t old;

	rv_log(RV_LOG_ERROR, "context #%" PRIu64 " could not be destroyed at its last unref; it is leaked until "
	       "its device is closed or released, which retry", obj->id);
	memcpy(deps, obj->deps, sizeof(deps));
	/* From here device_close may take and free obj: no access after. */
	old = __atomic_fetch_or(&obj->flags, RV_OBJ_LEAKED_FLAG | RV_OBJ_NOREFS_FLAG, __ATOMIC_ACQ_REL);
	if (old & RV_OBJ_NOREFS_FLAG)
		return;
	for (uint8_t i = 0; i < n; i++)
		rv_obj_unref(deps[i]);
}

/* An object closed by another thread's cascade during our final_unref. */
static void free_closed(struct rv_object *obj)
{
	struct rv_context *pin = (obj->flags & RV_OBJ_PINNED_FLAG) ? obj->ctx : NULL;

	free_obj(obj);
	if (pin)
		rv_obj_unref(&pin->obj);
}

static void final_unref(struct rv_object *obj)
{
	int rc;

	/* Unlocked: a cascade in another thread may be closing obj now (it
	 * found it in a registry after our count reached zero). */
	if (__atomic_load_n(&obj->state, __ATOMIC_ACQUIRE) == RV_OBJ_CLOSED) {
		free_closed(obj);
		return;
	}
	switch (obj_type(obj)) {
	case RV_OBJ_DEVICE:
		/* Live contexts hold references: only leaked ones are left. */
		reap_leaked_contexts(obj);
		obj->state = RV_OBJ_CLOSED;
		free_obj(obj);
		return;
	case RV_OBJ_CONTEXT: {
		struct rv_context *ctx = (struct rv_context *)obj;
		/* Every object in the context holds a reference on it through
		 * its dependencies, except zombies, which hold none: only
		 * zombies are left, and no other thread can be in this context
		 * (its graph lock holds a reference). No temporary ref needed. */
		pthread_mutex_lock(&ctx->lock);
		rc = close_locked(obj, "closed by its last unref", false);
		pthread_mutex_unlock(&ctx->lock);
		if (rc == 0)
			free_obj(obj);
		else
			leak_context(obj);
		return;
	}
	default: {
		/* Safe to read obj->ctx and take a reference on it although our
		 * count is zero: we saw obj live, so either it still holds its
		 * references (a live object's dependencies are live and lead to
		 * its context), or another thread's cascade closed it since, and
		 * that cascade took a reference on the context for us before it
		 * dropped obj's (pin_for_owner), which we release below. Taking
		 * the reference through rv_graph_lock after re-reading the state
		 * would race: the cascade's context may be freed in between. */
		struct rv_context *ctx = obj->ctx;
		bool pinned;

		rv_obj_ref(&ctx->obj);
		pthread_mutex_lock(&ctx->lock);
		rc = close_locked(obj, "closed by its last unref", false); /* 0 if closed meanwhile */
		pinned = obj->flags & RV_OBJ_PINNED_FLAG;
		if (rc < 0)
			zombify(obj); /* obj may be freed from here on */
		pthread_mutex_unlock(&ctx->lock);
		if (rc == 0)
			free_obj(obj);
		if (pinned)
			rv_obj_unref(&ctx->obj);
		rv_obj_unref(&ctx->obj);
		return;
	}
	}
}

void rv_obj_unref(struct rv_object *obj)
{
	if (atomic_fetch_sub_explicit(&obj->refcnt, 1, memory_order_acq_rel) == 1)
		final_unref(obj);
}

static int check(const struct rv_object *obj, enum rv_obj_type type, const char *func, bool closed_ok)
{
	if (!obj)
		return rv_err(EINVAL, func, "the %s handle is NULL", rv_obj_type_name(type));
	if (RV_UNLIKELY(rv_mem_freed_asan(obj)) ||
	    (obj->magic != rv_obj_magic(type) && (obj->magic == RV_OBJ_DEAD || obj->cls == &freed_class)))
		return rv_err(EINVAL, func, "the %s handle was already freed (used after its last unref: "
			      "a second unref, or a call after it)", rv_obj_type_name(type));
	if (obj->magic != rv_obj_magic(type)) {
		uint32_t other = obj->magic ^ RV_OBJ_MAGIC;
		if (other > 0 && other < RV_OBJ_TYPE_MAX)
			return rv_err(EINVAL, func, "expected a %s handle, got a %s handle",
				      rv_obj_type_name(type), rv_obj_type_name((enum rv_obj_type)other));
		return rv_err(EINVAL, func, "not an rverbs %s handle", rv_obj_type_name(type));
	}
	/* Fork safety (core/fork.c): one load and a branch in the parent. */
	if (RV_UNLIKELY(rv_fork_child) && rv_fork_check(obj, func) < 0)
		return -EPERM;
	if (!closed_ok && obj->state != RV_OBJ_LIVE)
		return rv_err(RV_ECLOSED, func, "%s #%" PRIu64 " is closed (%s)", rv_obj_type_name(type),
			      obj->id, obj->close_reason);
	return 0;
}

int rv_obj_check(const struct rv_object *obj, enum rv_obj_type type, const char *func)
{
	return check(obj, type, func, false);
}

int rv_obj_check_any(const struct rv_object *obj, enum rv_obj_type type, const char *func)
{
	return check(obj, type, func, true);
}

static void walk(struct rv_object *obj, int depth, rv_obj_visit_fn fn, void *arg)
{
	for (uint32_t i = 0; i < obj->n_dependents; i++) {
		fn(obj->dependents[i], depth, arg);
		walk(obj->dependents[i], depth + 1, fn, arg);
	}
}

void rv_obj_walk(struct rv_object *root, rv_obj_visit_fn fn, void *arg)
{
	walk(root, 0, fn, arg);
}
