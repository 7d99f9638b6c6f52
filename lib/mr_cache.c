/*
 * The registration cache (include/rverbs/mr_cache.h; rules in docs/memory.md).
 *
 * Owns: a list of registrations in least-recently-used order, each an rv_mr
 * handle on which the cache holds one reference. Never hooks free() or
 * munmap(): the caller invalidates. One mutex guards the list; a miss
 * registers under it (registrations on one cache are serialised, which keeps
 * two threads from registering the same range twice). Lock order: the cache
 * mutex, then the graph lock (taken by rv_mr_reg/rv_mr_unref).
 *
 * The cache is not in the ownership graph: it is a helper holding references
 * on a PD and on MRs, so a closed PD closes the cached MRs, and the cache
 * drops closed entries when it meets them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

#define CACHE_MAGIC 0x72766d63u
#define CACHE_DEAD 0xdeadcac4u
/* What a freed cache's pd points to (never a PD). */
static const char cache_freed_mark;
#define CACHE_FREED_PD ((rv_pd *)(uintptr_t)&cache_freed_mark)
#define CACHE_DEFAULT_ENTRIES 256u
#define CACHE_DEFAULT_BYTES ((uint64_t)1 << 30)

struct entry {
	struct entry *prev, *next;
	uintptr_t start, end;
	uint32_t access;
	rv_mr *mr;
};

struct rv_mr_cache {
	uint32_t magic;
	_Atomic uint32_t refcnt;
	pthread_mutex_t lock;
	rv_pd *pd;
	struct entry *head, *tail; /* most recently used first */
	uint32_t n, max_entries;
	uint64_t bytes, max_bytes;
	uint64_t hits, misses, evictions, invalidations;
};

static int cache_check(const rv_mr_cache *cache, const char *func)
{
	if (!cache)
		return rv_err(EINVAL, func, "the cache handle is NULL");
	/* A freed cache: the allocator may have overwritten the magic, not
	 * pd (lib/core/object.c, freed_class, says why). */
	if (rv_mem_freed_asan(cache) ||
	    (cache->magic != CACHE_MAGIC && (cache->magic == (uint32_t)CACHE_DEAD || cache->pd == CACHE_FREED_PD)))
		return rv_err(EINVAL, func, "the cache handle was already freed (used after its last unref: "
			      "a second unref, or a call after it)");
	if (cache->magic != CACHE_MAGIC)
		return rv_err(EINVAL, func, "not an rverbs cache handle");
	/* Fork safety: the cache belongs to the process of its PD's context. */
	if (RV_UNLIKELY(rv_fork_child) && rv_fork_check(RV_COBJ(cache->pd), func) < 0)
		return -EPERM;
	return 0;
}

RV_EXPORT int rv_mr_cache_new(rv_pd *pd, const rv_mr_cache_attr *attr, rv_mr_cache **ret_cache)
{
	const uint64_t known = RV_MR_CACHE_ATTR_MAX_ENTRIES | RV_MR_CACHE_ATTR_MAX_BYTES;
	struct rv_mr_cache *c;
	int rc = rv_obj_new_check(RV_COBJ(pd), RV_OBJ_PD, ret_cache, "ret_cache", attr ? attr->mask : 0, known,
				  "rv_mr_cache_attr", __func__);

	if (rc < 0)
		return rc;
	if (attr && attr->reserved)
		return rv_err(EINVAL, __func__, "rv_mr_cache_attr.reserved must be 0");
	if (attr && (((attr->mask & RV_MR_CACHE_ATTR_MAX_ENTRIES) && attr->max_entries == 0) ||
		     ((attr->mask & RV_MR_CACHE_ATTR_MAX_BYTES) && attr->max_bytes == 0)))
		return rv_err(EINVAL, __func__, "a bound of 0 would cache nothing");
	c = calloc(1, sizeof(*c));
	if (!c)
		return rv_err(ENOMEM, __func__, "out of memory");
	c->magic = CACHE_MAGIC;
	atomic_init(&c->refcnt, 1);
	pthread_mutex_init(&c->lock, NULL);
	c->max_entries = attr && (attr->mask & RV_MR_CACHE_ATTR_MAX_ENTRIES) ? attr->max_entries : CACHE_DEFAULT_ENTRIES;
	c->max_bytes = attr && (attr->mask & RV_MR_CACHE_ATTR_MAX_BYTES) ? attr->max_bytes : CACHE_DEFAULT_BYTES;
	c->pd = rv_pd_ref(pd);
	*ret_cache = c;
	return 0;
}

static void unlink_entry(struct rv_mr_cache *c, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	c->n--;
	c->bytes -= e->end - e->start;
}

static void drop_entry(struct rv_mr_cache *c, struct entry *e)
{
	unlink_entry(c, e);
	rv_mr_unref(e->mr);
	free(e);
}

static void push_front(struct rv_mr_cache *c, struct entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
	c->n++;
	c->bytes += e->end - e->start;
}

RV_EXPORT rv_mr_cache *rv_mr_cache_ref(rv_mr_cache *cache)
{
	if (cache && cache_check(cache, __func__) == 0)
		atomic_fetch_add_explicit(&cache->refcnt, 1, memory_order_relaxed);
	return cache;
}

RV_EXPORT rv_mr_cache *rv_mr_cache_unref(rv_mr_cache *cache)
{
	if (!cache || cache_check(cache, __func__) < 0)
		return NULL;
	if (atomic_fetch_sub_explicit(&cache->refcnt, 1, memory_order_acq_rel) != 1)
		return NULL;
	while (cache->head)
		drop_entry(cache, cache->head);
	rv_pd_unref(cache->pd);
	pthread_mutex_destroy(&cache->lock);
	cache->magic = (uint32_t)CACHE_DEAD;
	cache->pd = CACHE_FREED_PD;
	rv_mem_quarantine(cache);
	return NULL;
}

RV_EXPORT int rv_mr_cache_get(rv_mr_cache *cache, void *addr, size_t length, uint32_t access, rv_mr **ret_mr)
{
	size_t page = rv_mem_page_size();
	uintptr_t a = (uintptr_t)addr, start, end;
	struct entry *e, *next;
	rv_mr *mr;
	int rc = cache_check(cache, __func__);

	if (rc < 0)
		return rc;
	if (!addr || !ret_mr)
		return rv_err(EINVAL, __func__, "%s is NULL", addr ? "ret_mr" : "addr");
	if (length == 0 || a + length < a || a + length > UINTPTR_MAX - page)
		return rv_err(EINVAL, __func__, "length %zu is 0 or the range wraps around", length);
	start = a & ~(uintptr_t)(page - 1);
	end = (a + length + page - 1) & ~(uintptr_t)(page - 1);
	if (end - start > cache->max_bytes)
		return rv_err(EINVAL, __func__, "%zu bytes are more than the cache's max_bytes (%" PRIu64 ")",
			      (size_t)(end - start), cache->max_bytes);
	pthread_mutex_lock(&cache->lock);
	for (e = cache->head; e; e = next) {
		next = e->next;
		if (RV_COBJ(e->mr)->state != RV_OBJ_LIVE) {
			drop_entry(cache, e); /* closed with its PD */
			continue;
		}
		if (e->start <= a && a + length <= e->end && (access & ~e->access) == 0) {
			unlink_entry(cache, e);
			push_front(cache, e);
			cache->hits++;
			*ret_mr = rv_mr_ref(e->mr);
			pthread_mutex_unlock(&cache->lock);
			return 0;
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&cache->lock);
		return rv_err(ENOMEM, __func__, "out of memory");
	}
	rc = rv_mr_reg(cache->pd, (void *)start, end - start, access, &mr);
	if (rc < 0) {
		struct rv_error_saved err;
		rv_error_save(&err);
		pthread_mutex_unlock(&cache->lock);
		free(e);
		rv_err(-rc, __func__, "%s", err.msg);
		return rc;
	}
	cache->misses++;
	e->start = start;
	e->end = end;
	e->access = access;
	e->mr = mr;
	push_front(cache, e);
	while ((cache->n > cache->max_entries || cache->bytes > cache->max_bytes) && cache->tail != e) {
		drop_entry(cache, cache->tail);
		cache->evictions++;
	}
	*ret_mr = rv_mr_ref(mr);
	pthread_mutex_unlock(&cache->lock);
	return 0;
}

RV_EXPORT int rv_mr_cache_invalidate(rv_mr_cache *cache, const void *addr, size_t length)
{
	uintptr_t a = (uintptr_t)addr, z;
	struct entry *e, *next;
	int n = 0, rc = cache_check(cache, __func__);

	if (rc < 0)
		return rc;
	if (length == 0)
		return 0;
	z = a + length < a ? UINTPTR_MAX : a + length;
	pthread_mutex_lock(&cache->lock);
	for (e = cache->head; e; e = next) {
		next = e->next;
		if (e->start < z && a < e->end) {
			drop_entry(cache, e);
			cache->invalidations++;
			n++;
		}
	}
	pthread_mutex_unlock(&cache->lock);
	return n;
}

RV_EXPORT int rv_mr_cache_stats_get(rv_mr_cache *cache, rv_mr_cache_stats *stats)
{
	int rc = cache_check(cache, __func__);

	if (rc < 0)
		return rc;
	if (!stats)
		return rv_err(EINVAL, __func__, "stats is NULL");
	if (stats->mask & ~(uint64_t)RV_MR_CACHE_STATS_ALL)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_mr_cache_stats.mask",
			      stats->mask & ~(uint64_t)RV_MR_CACHE_STATS_ALL);
	if (!stats->mask)
		return 0;
	pthread_mutex_lock(&cache->lock);
	stats->entries = cache->n;
	stats->bytes = cache->bytes;
	stats->hits = cache->hits;
	stats->misses = cache->misses;
	stats->evictions = cache->evictions;
	stats->invalidations = cache->invalidations;
	pthread_mutex_unlock(&cache->lock);
	stats->mask = RV_MR_CACHE_STATS_ALL;
	return 0;
}
