/*
 * Registered-buffer pools (include/rverbs/pool.h).
 *
 * Owns: the pool handle (a dependent of its PD), its chunks (registrations
 * without a handle, lib/mr.c, deregistered by the pool's destroy), the buffer
 * descriptors, the shared free list per size class, and the per-thread caches.
 *
 * The common path of rv_pool_get/rv_pool_put takes no lock, no atomic
 * read-modify-write and no system call: it finds the calling thread's cache
 * for the pool among a few thread-local slots (a compare of pointer and uid
 * each), then pops or pushes one pointer. Everything else (refilling or
 * flushing half a cache, growing by a chunk, statistics) takes the pool's
 * mutex. Lock order: graph lock, then registry lock, then pool mutex. The
 * destroy runs under the graph lock and never waits for a get or put: closing
 * a pool while another thread uses it is a caller race, as for every handle.
 *
 * A thread's cache is allocated by the pool and listed in it, so that stats
 * can sum its counters and the pool's release frees it. A thread-local slot
 * names its pool by pointer and by a uid that is never reused, so a slot whose
 * pool is gone is recognised without touching freed memory; the buffers it
 * held went with the pool. At thread exit the caches of live pools are
 * flushed back (a pthread key destructor, under the registry lock).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "memory.h"

#define POOL_DEFAULT_MAX_BYTES ((uint64_t)256 << 20)
#define POOL_DEFAULT_CHUNK ((uint64_t)2 << 20)
#define POOL_DEFAULT_TCACHE 32u
#define POOL_MAX_CLASS ((uint32_t)1 << 30)
#define POOL_TSLOTS 8

struct pbuf {
	rv_pool_buf pub;
	struct pbuf *next;
	uint64_t pool_uid;
	uint32_t out; /* 1 while a caller holds it */
};

struct chunk {
	struct rv_mr mr; /* registration without a handle */
	struct rv_mem mem;
	struct pbuf *bufs;
	struct chunk *next;
};

struct pclass {
	uint32_t size;
	uint32_t per_chunk;
	uint32_t tc_limit; /* buffers a thread cache keeps for this class */
	size_t chunk_len;
	struct pbuf *free;
	uint64_t n_free;
};

/* One thread's cache for one pool; only that thread touches mag and n. */
struct tcache {
	struct tcache *next;
	uint32_t n[RV_POOL_MAX_CLASSES];
	_Atomic uint64_t gets, puts, misses; /* written by the owner only */
	struct pbuf *mag[];                   /* n_classes x tc_cap */
};

struct rv_pool {
	struct rv_object obj;
	struct rv_pd *pd;
	uint64_t uid;
	uint32_t n_classes;
	uint32_t tc_cap;
	struct pclass cls[RV_POOL_MAX_CLASSES];
	/* Under lock: */
	pthread_mutex_t lock;
	uint64_t max_bytes, bytes, n_chunks, n_bufs;
	uint64_t out_of_shared, high_water, failures;
	uint64_t gets_gone, puts_gone, misses_gone; /* of caches flushed at thread exit */
	struct chunk *chunks;
	struct tcache *tcs;
	uint32_t access;
	struct rv_mem_req req;
	/* The registry of live pools (for thread-exit flushes). */
	struct rv_pool *live_prev, *live_next;
};

static _Atomic uint64_t next_pool_uid = 1;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rv_pool *registry;

struct tslot {
	struct rv_pool *pool;
	uint64_t uid;
	struct tcache *tc;
};
static _Thread_local struct tslot tslots[POOL_TSLOTS];
static _Thread_local unsigned tslot_victim;
static pthread_key_t tslot_key;
static pthread_once_t tslot_once = PTHREAD_ONCE_INIT;

/* ---- the object ---- */

static int pool_destroy(struct rv_object *obj)
{
	struct rv_pool *pool = (struct rv_pool *)obj;

	for (struct chunk *c = pool->chunks; c; c = c->next) {
		int rc = rv_mr_chunk_dereg(&c->mr);
		if (rc < 0)
			return rc; /* those done stay done: a retry skips them */
	}
	return 0;
}

static void pool_release(struct rv_object *obj)
{
	struct rv_pool *pool = (struct rv_pool *)obj;

	pthread_mutex_lock(&registry_lock);
	if (pool->live_prev)
		pool->live_prev->live_next = pool->live_next;
	else if (registry == pool)
		registry = pool->live_next;
	if (pool->live_next)
		pool->live_next->live_prev = pool->live_prev;
	pthread_mutex_unlock(&registry_lock);
	while (pool->chunks) {
		struct chunk *c = pool->chunks;
		pool->chunks = c->next;
		rv_mem_unmap(&c->mem);
		free(c->bufs);
		free(c);
	}
	while (pool->tcs) {
		struct tcache *t = pool->tcs;
		pool->tcs = t->next;
		free(t);
	}
	pthread_mutex_destroy(&pool->lock);
}

static const struct rv_object_class pool_class = {
	.type = RV_OBJ_POOL,
	.name = "pool",
	.destroy = pool_destroy,
	.release = pool_release,
};

/* ---- creation ---- */

#define POOL_ATTR_KNOWN (RV_POOL_ATTR_CLASSES | RV_POOL_ATTR_MAX_BYTES | RV_POOL_ATTR_CHUNK_BYTES | \
			 RV_POOL_ATTR_ACCESS | RV_POOL_ATTR_PAGE | RV_POOL_ATTR_NUMA_NODE |      \
			 RV_POOL_ATTR_FLAGS | RV_POOL_ATTR_THREAD_CACHE | RV_POOL_ATTR_PREALLOC)

static int grow_locked(struct rv_pool *pool, uint32_t ci, const char *func);

static int pool_configure(struct rv_pool *pool, const rv_pool_attr *attr, uint32_t *prealloc, const char *func)
{
	static const uint32_t def_classes[] = {256, 4096, 65536, 1u << 20};
	uint64_t m = attr ? attr->mask : 0;
	uint64_t chunk = POOL_DEFAULT_CHUNK;
	size_t page = rv_mem_page_size();
	int rc;

	if (m & ~(uint64_t)POOL_ATTR_KNOWN)
		return rv_err(EINVAL, func, "unknown bit 0x%" PRIx64 " in rv_pool_attr.mask", m & ~(uint64_t)POOL_ATTR_KNOWN);
	pool->n_classes = 4;
	for (uint32_t i = 0; i < 4; i++)
		pool->cls[i].size = def_classes[i];
	if (m & RV_POOL_ATTR_CLASSES) {
		if (attr->n_classes == 0 || attr->n_classes > RV_POOL_MAX_CLASSES)
			return rv_err(EINVAL, func, "n_classes %u is not 1..%d", attr->n_classes, RV_POOL_MAX_CLASSES);
		pool->n_classes = attr->n_classes;
		for (uint32_t i = 0; i < attr->n_classes; i++) {
			uint32_t sz = attr->class_size[i];
			if (sz == 0 || sz > POOL_MAX_CLASS)
				return rv_err(EINVAL, func, "class_size[%u] = %u is not 1..1 GiB", i, sz);
			sz = (sz + 63) & ~63u;
			if (i > 0 && sz <= pool->cls[i - 1].size)
				return rv_err(EINVAL, func, "class_size[%u] = %u is not above class_size[%u] "
					      "(sizes ascend, after rounding to 64 bytes)", i, attr->class_size[i], i - 1);
			pool->cls[i].size = sz;
		}
	}
	pool->max_bytes = m & RV_POOL_ATTR_MAX_BYTES ? attr->max_bytes : POOL_DEFAULT_MAX_BYTES;
	if (m & RV_POOL_ATTR_CHUNK_BYTES) {
		if (attr->chunk_bytes == 0 || attr->chunk_bytes > ((uint64_t)1 << 40))
			return rv_err(EINVAL, func, "chunk_bytes %" PRIu64 " is 0 or above 1 TiB", attr->chunk_bytes);
		chunk = attr->chunk_bytes;
	}
	pool->access = m & RV_POOL_ATTR_ACCESS ? attr->access
					       : RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ;
	if (pool->access & ~(uint32_t)(RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ |
				       RV_ACCESS_REMOTE_ATOMIC | RV_ACCESS_RELAXED_ORDERING))
		return rv_err(EINVAL, func, "access 0x%x: a pool's chunks take LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, "
			      "REMOTE_ATOMIC and RELAXED_ORDERING only", pool->access);
	if ((pool->access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC)) && !(pool->access & RV_ACCESS_LOCAL_WRITE))
		return rv_err(EINVAL, func, "REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (the verbs rule)");
	pool->req.page = m & RV_POOL_ATTR_PAGE ? attr->page : RV_MEM_PAGE_DEFAULT;
	pool->req.node = m & RV_POOL_ATTR_NUMA_NODE ? attr->numa_node : RV_MEM_NODE_DEVICE;
	pool->req.flags = m & RV_POOL_ATTR_FLAGS ? attr->flags : 0;
	rc = rv_mem_req_check(pool->req.page, pool->req.node, pool->req.flags, func);
	if (rc < 0)
		return rc;
	pool->tc_cap = m & RV_POOL_ATTR_THREAD_CACHE ? attr->thread_cache : POOL_DEFAULT_TCACHE;
	if (pool->tc_cap > 4096)
		return rv_err(EINVAL, func, "thread_cache %u is above 4096", pool->tc_cap);
	*prealloc = m & RV_POOL_ATTR_PREALLOC ? attr->prealloc_chunks : 0;
	for (uint32_t i = 0; i < pool->n_classes; i++) {
		struct pclass *c = &pool->cls[i];
		uint64_t len = chunk > c->size ? chunk : c->size;
		c->chunk_len = (size_t)((len + page - 1) / page * page);
		c->per_chunk = (uint32_t)(c->chunk_len / c->size);
		c->tc_limit = pool->tc_cap < c->per_chunk / 2 ? pool->tc_cap : c->per_chunk / 2;
		if (c->tc_limit == 0 && pool->tc_cap)
			c->tc_limit = 1;
		if (c->chunk_len > pool->max_bytes)
			return rv_err(EINVAL, func, "max_bytes %" PRIu64 " is below one chunk of class %u (%zu bytes)",
				      pool->max_bytes, i, c->chunk_len);
	}
	return 0;
}

RV_EXPORT int rv_pool_new(rv_pd *pd, const rv_pool_attr *attr, rv_pool **ret_pool)
{
	struct rv_pool *pool;
	uint32_t prealloc = 0;
	int rc = rv_obj_new_check(RV_COBJ(pd), RV_OBJ_PD, ret_pool, "ret_pool", 0, 0, NULL, __func__);

	if (rc < 0)
		return rc;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return rv_err(ENOMEM, __func__, "out of memory");
	rc = pool_configure(pool, attr, &prealloc, __func__);
	if (rc < 0) {
		free(pool);
		return rc;
	}
	rv_obj_init(&pool->obj, &pool_class, pd->ctx);
	pool->obj.id = rv_ctx_next_id(pd->ctx);
	pool->pd = pd;
	pool->uid = atomic_fetch_add(&next_pool_uid, 1);
	pthread_mutex_init(&pool->lock, NULL);
	rv_graph_lock(&pd->obj);
	rc = rv_obj_add_dep(&pool->obj, &pd->obj);
	if (rc < 0) {
		rv_obj_abort(&pool->obj); /* the release destroys the mutex */
		rv_graph_unlock(&pd->obj);
		return rv_err(ENOMEM, __func__, "out of memory");
	}
	pthread_mutex_lock(&registry_lock);
	pool->live_next = registry;
	if (registry)
		registry->live_prev = pool;
	registry = pool;
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_lock(&pool->lock);
	for (uint32_t i = 0; i < pool->n_classes && rc == 0; i++)
		for (uint32_t k = 0; k < prealloc && rc == 0; k++)
			rc = grow_locked(pool, i, __func__);
	pthread_mutex_unlock(&pool->lock);
	rv_graph_unlock(&pd->obj);
	if (rc < 0) {
		struct rv_error_saved err;
		rv_error_save(&err);
		rv_obj_unref(&pool->obj); /* closes: deregisters what was registered */
		rv_err(-rc, __func__, "preallocating: %s", err.msg);
		return rc;
	}
	*ret_pool = pool;
	return 0;
}

RV_DEFINE_HANDLE_REF_UNREF(pool, RV_OBJ_POOL)

RV_DEFINE_HANDLE_CLOSE(pool, RV_OBJ_POOL, "deregistering a chunk of the pool")

RV_EXPORT rv_pd *rv_pool_pd(const rv_pool *pool)
{
	if (rv_obj_check(RV_COBJ(pool), RV_OBJ_POOL, __func__) < 0)
		return NULL;
	return pool->pd;
}

/* ---- growth (pool lock held, and the graph lock) ---- */

static void fmt_size(char *buf, size_t len, uint64_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(buf, len, "%" PRIu64 " bytes", n);
}

static int exhausted(struct rv_pool *pool, uint32_t ci, const char *func)
{
	char reg[32], max[32], chunk[32];

	fmt_size(reg, sizeof(reg), pool->bytes);
	fmt_size(max, sizeof(max), pool->max_bytes);
	fmt_size(chunk, sizeof(chunk), pool->cls[ci].chunk_len);
	pool->failures++;
	rv_err(ENOMEM, func, "pool #%" PRIu64 " is exhausted: every %u-byte buffer is out, and another %s chunk "
	       "would pass its bound of %s (%s registered in %" PRIu64 " chunks)", pool->obj.id, pool->cls[ci].size,
	       chunk, max, reg, pool->n_chunks);
	rv_err_hint("put buffers back, or raise rv_pool_attr.max_bytes; each thread may also keep up to %u buffers "
		    "per class in its cache", pool->cls[ci].tc_limit);
	return -ENOMEM;
}

static int grow_locked(struct rv_pool *pool, uint32_t ci, const char *func)
{
	struct pclass *cls = &pool->cls[ci];
	struct chunk *c;
	uint32_t n;
	int rc;

	if (pool->bytes + cls->chunk_len > pool->max_bytes)
		return exhausted(pool, ci, func);
	c = calloc(1, sizeof(*c));
	if (!c)
		return rv_err(ENOMEM, func, "out of memory");
	/* rv_mem_map logs a fallback (the first chunk's only: later ones fall
	 * back the same way). */
	pool->req.quiet = pool->n_chunks > 0;
	rc = rv_mem_map(pool->pd->ctx, cls->chunk_len, &pool->req, &c->mem, func);
	if (rc < 0) {
		free(c);
		if (rc == -ENOMEM)
			pool->failures++;
		return rc;
	}
	if (pool->bytes + c->mem.length > pool->max_bytes) {
		/* Huge pages rounded the chunk up past the bound. */
		rv_mem_unmap(&c->mem);
		free(c);
		return exhausted(pool, ci, func);
	}
	n = (uint32_t)(c->mem.length / cls->size);
	c->bufs = calloc(n, sizeof(*c->bufs));
	if (!c->bufs) {
		rv_mem_unmap(&c->mem);
		free(c);
		return rv_err(ENOMEM, func, "out of memory");
	}
	rc = rv_mr_chunk_reg(pool->pd, &c->mr, c->mem.addr, c->mem.length, pool->access, func);
	if (rc < 0) {
		if (rc == -ENOMEM)
			pool->failures++;
		rv_mem_unmap(&c->mem);
		free(c->bufs);
		free(c);
		return rc;
	}
	for (uint32_t i = n; i-- > 0;) {
		struct pbuf *b = &c->bufs[i];
		b->pub.addr = (uint64_t)(uintptr_t)c->mem.addr + (uint64_t)i * cls->size;
		b->pub.length = cls->size;
		b->pub.lkey = c->mr.lkey;
		b->pub.rkey = c->mr.rkey;
		b->pub.class_index = ci;
		b->pool_uid = pool->uid;
		b->next = cls->free;
		cls->free = b;
	}
	cls->n_free += n;
	c->next = pool->chunks;
	pool->chunks = c;
	pool->n_chunks++;
	pool->n_bufs += n;
	pool->bytes += c->mem.length;
	return 0;
}

/* ---- per-thread caches ---- */

/* Return a cache's buffers to the shared lists. Pool lock held. */
static void flush_locked(struct rv_pool *pool, struct tcache *t, uint32_t ci, uint32_t keep)
{
	struct pclass *cls = &pool->cls[ci];
	struct pbuf **mag = &t->mag[(size_t)ci * pool->tc_cap];

	while (t->n[ci] > keep) {
		struct pbuf *b = mag[--t->n[ci]];
		b->next = cls->free;
		cls->free = b;
		cls->n_free++;
		pool->out_of_shared--;
	}
}

/* Give a cache back to its pool, if the pool is still alive. Registry lock held. */
static void retire_slot(struct tslot *s)
{
	struct rv_pool *p;

	for (p = registry; p; p = p->live_next)
		if (p == s->pool && p->uid == s->uid)
			break;
	if (p) {
		pthread_mutex_lock(&p->lock);
		for (uint32_t i = 0; i < p->n_classes; i++)
			flush_locked(p, s->tc, i, 0);
		p->gets_gone += atomic_load_explicit(&s->tc->gets, memory_order_relaxed);
		p->puts_gone += atomic_load_explicit(&s->tc->puts, memory_order_relaxed);
		p->misses_gone += atomic_load_explicit(&s->tc->misses, memory_order_relaxed);
		for (struct tcache **pp = &p->tcs; *pp; pp = &(*pp)->next) {
			if (*pp == s->tc) {
				*pp = s->tc->next;
				break;
			}
		}
		pthread_mutex_unlock(&p->lock);
		free(s->tc);
	}
	/* else the pool is gone and freed the cache with it */
	memset(s, 0, sizeof(*s));
}

static void thread_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&registry_lock);
	for (unsigned i = 0; i < POOL_TSLOTS; i++)
		if (tslots[i].pool)
			retire_slot(&tslots[i]);
	pthread_mutex_unlock(&registry_lock);
}

static void tslot_key_init(void)
{
	pthread_key_create(&tslot_key, thread_exit);
}

static inline struct tcache *my_cache(const struct rv_pool *pool)
{
	for (unsigned i = 0; i < POOL_TSLOTS; i++)
		if (tslots[i].pool == pool && tslots[i].uid == pool->uid)
			return tslots[i].tc;
	return NULL;
}

/* A cache for this thread: a free slot, one of a pool that is gone, or the
 * oldest one (given back to its pool). NULL when out of memory. */
static struct tcache *new_cache(struct rv_pool *pool)
{
	size_t sz = sizeof(struct tcache) + (size_t)pool->n_classes * pool->tc_cap * sizeof(struct pbuf *);
	struct tcache *t = calloc(1, sz);
	struct tslot *s = NULL;

	if (!t)
		return NULL;
	pthread_once(&tslot_once, tslot_key_init);
	pthread_setspecific(tslot_key, (void *)1); /* so that thread_exit runs */
	pthread_mutex_lock(&registry_lock);
	for (unsigned i = 0; i < POOL_TSLOTS && !s; i++) {
		struct rv_pool *p;
		if (!tslots[i].pool) {
			s = &tslots[i];
			break;
		}
		for (p = registry; p; p = p->live_next)
			if (p == tslots[i].pool && p->uid == tslots[i].uid)
				break;
		if (!p) {
			memset(&tslots[i], 0, sizeof(tslots[i]));
			s = &tslots[i];
		}
	}
	if (!s) {
		s = &tslots[tslot_victim++ % POOL_TSLOTS];
		retire_slot(s);
	}
	pthread_mutex_lock(&pool->lock);
	t->next = pool->tcs;
	pool->tcs = t;
	pthread_mutex_unlock(&pool->lock);
	s->pool = pool;
	s->uid = pool->uid;
	s->tc = t;
	pthread_mutex_unlock(&registry_lock);
	return t;
}

/* ---- get and put ---- */

static inline bool pool_usable(const struct rv_pool *pool)
{
	return RV_LIKELY(pool && pool->obj.magic == rv_obj_magic(RV_OBJ_POOL) && pool->obj.state == RV_OBJ_LIVE &&
			 !rv_fork_child);
}

static inline void count(_Atomic uint64_t *c)
{
	/* Only the owning thread writes: a relaxed load and store, no RMW. */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static int get_slow(struct rv_pool *pool, uint32_t ci, struct tcache *t, rv_pool_buf **ret_buf)
{
	struct pclass *cls = &pool->cls[ci];
	struct pbuf *b;
	uint32_t batch;
	int rc = 0;

	if (!t && pool->tc_cap)
		t = new_cache(pool); /* NULL (out of memory) just means no cache */
	pthread_mutex_lock(&pool->lock);
	if (!cls->free) {
		/* Growing registers memory: the graph lock comes first. */
		pthread_mutex_unlock(&pool->lock);
		rv_graph_lock(&pool->obj);
		pthread_mutex_lock(&pool->lock);
		if (pool->obj.state != RV_OBJ_LIVE)
			rc = rv_obj_check(&pool->obj, RV_OBJ_POOL, "rv_pool_get");
		else if (!cls->free)
			rc = grow_locked(pool, ci, "rv_pool_get");
		rv_graph_unlock(&pool->obj);
		if (rc < 0) {
			pthread_mutex_unlock(&pool->lock);
			return rc;
		}
	}
	b = cls->free;
	cls->free = b->next;
	cls->n_free--;
	pool->out_of_shared++;
	if (t) {
		struct pbuf **mag = &t->mag[(size_t)ci * pool->tc_cap];
		batch = cls->tc_limit / 2;
		while (batch-- > 0 && cls->free && t->n[ci] < cls->tc_limit) {
			struct pbuf *x = cls->free;
			cls->free = x->next;
			cls->n_free--;
			pool->out_of_shared++;
			mag[t->n[ci]++] = x;
		}
		count(&t->misses);
		count(&t->gets);
	} else {
		pool->misses_gone++;
		pool->gets_gone++;
	}
	if (pool->out_of_shared > pool->high_water)
		pool->high_water = pool->out_of_shared;
	pthread_mutex_unlock(&pool->lock);
	b->out = 1;
	*ret_buf = &b->pub;
	return 0;
}

RV_EXPORT int rv_pool_get(rv_pool *pool, size_t length, rv_pool_buf **ret_buf)
{
	struct tcache *t;
	uint32_t ci;

	if (!pool_usable(pool)) {
		int rc = rv_obj_check(RV_COBJ(pool), RV_OBJ_POOL, __func__);
		if (rc < 0)
			return rc;
	}
	if (RV_UNLIKELY(!ret_buf || length == 0))
		return rv_err(EINVAL, __func__, "%s", ret_buf ? "length is 0" : "ret_buf is NULL");
	for (ci = 0; ci < pool->n_classes && length > pool->cls[ci].size; ci++)
		;
	if (RV_UNLIKELY(ci == pool->n_classes))
		return rv_err(EINVAL, __func__, "length %zu is above the largest class of pool #%" PRIu64 " (%u bytes)",
			      length, pool->obj.id, pool->cls[pool->n_classes - 1].size);
	t = my_cache(pool);
	if (RV_LIKELY(t && t->n[ci])) {
		struct pbuf *b = t->mag[(size_t)ci * pool->tc_cap + --t->n[ci]];
		b->out = 1;
		count(&t->gets);
		*ret_buf = &b->pub;
		return 0;
	}
	return get_slow(pool, ci, t, ret_buf);
}

RV_EXPORT int rv_pool_put(rv_pool *pool, rv_pool_buf *buf)
{
	struct pbuf *b = (struct pbuf *)(void *)buf;
	struct tcache *t;
	uint32_t ci;

	if (!pool_usable(pool)) {
		int rc = rv_obj_check_any(RV_COBJ(pool), RV_OBJ_POOL, __func__);
		if (rc < 0)
			return rc;
	}
	if (RV_UNLIKELY(!buf))
		return rv_err(EINVAL, __func__, "buf is NULL");
	if (RV_UNLIKELY(b->pool_uid != pool->uid))
		return rv_err(EINVAL, __func__, "the buffer at 0x%" PRIx64 " is not from pool #%" PRIu64, buf->addr,
			      pool->obj.id);
	if (RV_UNLIKELY(!b->out))
		return rv_err(EINVAL, __func__, "the buffer at 0x%" PRIx64 " is not out (put twice?)", buf->addr);
	b->out = 0;
	ci = buf->class_index;
	t = my_cache(pool);
	if (!t && pool->tc_cap && pool->obj.state == RV_OBJ_LIVE)
		t = new_cache(pool);
	if (RV_LIKELY(t && t->n[ci] < pool->cls[ci].tc_limit)) {
		t->mag[(size_t)ci * pool->tc_cap + t->n[ci]++] = b;
		count(&t->puts);
		return 0;
	}
	pthread_mutex_lock(&pool->lock);
	if (t) {
		flush_locked(pool, t, ci, pool->cls[ci].tc_limit / 2);
		t->mag[(size_t)ci * pool->tc_cap + t->n[ci]++] = b;
		count(&t->puts);
	} else {
		b->next = pool->cls[ci].free;
		pool->cls[ci].free = b;
		pool->cls[ci].n_free++;
		pool->out_of_shared--;
		pool->puts_gone++;
	}
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

RV_EXPORT int rv_pool_stats_get(rv_pool *pool, rv_pool_stats *stats)
{
	rv_pool_stats s;
	int rc = rv_obj_check_any(RV_COBJ(pool), RV_OBJ_POOL, __func__);
	uint64_t puts;

	if (rc < 0)
		return rc;
	if (!stats)
		return rv_err(EINVAL, __func__, "stats is NULL");
	if (stats->mask & ~(uint64_t)RV_POOL_STATS_ALL)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_pool_stats.mask",
			      stats->mask & ~(uint64_t)RV_POOL_STATS_ALL);
	if (!stats->mask)
		return 0;
	memset(&s, 0, sizeof(s));
	pthread_mutex_lock(&pool->lock);
	s.chunks = pool->n_chunks;
	s.bytes_registered = pool->obj.state == RV_OBJ_LIVE ? pool->bytes : 0;
	s.buffers_total = pool->n_bufs;
	s.high_water = pool->high_water;
	s.failures = pool->failures;
	s.gets = pool->gets_gone;
	s.misses = pool->misses_gone;
	puts = pool->puts_gone;
	for (struct tcache *t = pool->tcs; t; t = t->next) {
		s.gets += atomic_load_explicit(&t->gets, memory_order_relaxed);
		s.misses += atomic_load_explicit(&t->misses, memory_order_relaxed);
		puts += atomic_load_explicit(&t->puts, memory_order_relaxed);
	}
	pthread_mutex_unlock(&pool->lock);
	s.buffers_in_use = s.gets > puts ? s.gets - puts : 0;
	s.mask = RV_POOL_STATS_ALL;
	*stats = s;
	return 0;
}
