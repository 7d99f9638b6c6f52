/*
 * soft_lock: a mutex of one word for the CQ ring (struct soft_cq's lock),
 * which every receive completion and every non-empty poll takes. glibc's
 * pthread_mutex_lock + unlock cost about 60 instructions per pair (the type
 * and elision checks around one lock cmpxchg and one lock xchg); this one
 * costs the same two atomic instructions and about 8 others when nobody
 * waits, so a 64 B message on the same-host ring saves ~100 (a push and a
 * poll; shmlat5 in README.md).
 *
 * The algorithm is Drepper's "mutex 2" ("Futexes Are Tricky", 2011): 0 free,
 * 1 held, 2 held and maybe waited for. Acquire on lock, release on unlock:
 * ThreadSanitizer sees the order through the C11 atomics. A waiter spins a
 * little (the sections are a few dozen instructions), then sleeps on a
 * private futex. Not recursive, no owner check, not for process-shared
 * memory, no condition variables: none is used with the CQ lock.
 *
 * Never blocks but in soft_lock_wait, for as long as a holder's section.
 */
#ifndef RVERBS_SOFT_LOCK_H
#define RVERBS_SOFT_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "rverbs-private.h"

struct soft_lock {
	_Atomic uint32_t v; /* 0 free, 1 held, 2 held with (maybe) sleepers */
};

void soft_lock_wait(struct soft_lock *l);
void soft_lock_wake(struct soft_lock *l);

static inline void soft_lock_init(struct soft_lock *l)
{
	atomic_init(&l->v, 0);
}

static inline void soft_lock_take(struct soft_lock *l)
{
	uint32_t free = 0;

	if (RV_LIKELY(atomic_compare_exchange_strong_explicit(&l->v, &free, 1, memory_order_acquire,
							      memory_order_relaxed)))
		return;
	soft_lock_wait(l);
}

/* 0 when taken, as pthread_mutex_trylock; never waits. */
static inline int soft_lock_try(struct soft_lock *l)
{
	uint32_t free = 0;

	return atomic_compare_exchange_strong_explicit(&l->v, &free, 1, memory_order_acquire, memory_order_relaxed)
		       ? 0
		       : 1;
}

static inline void soft_lock_give(struct soft_lock *l)
{
	if (RV_UNLIKELY(atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2))
		soft_lock_wake(l);
}

/*
 * soft_rwlock: the MR table's read-write lock (sc->mr_lock), which every
 * checked copy to or from registered memory takes for reading (a 64 B SEND:
 * once to read the payload, once to place it). glibc's rdlock + unlock cost
 * about 60 instructions; this costs one CAS and one RMW and a few others.
 *
 * The word: the count of readers holding it (low bits) and W, set by the
 * one writer (writers take `wr` first) from when it waits for the readers
 * to drain until it gives the lock back. A reader joins only by a CAS from
 * a value without W, so the count is exactly the readers that hold it, and
 * while the writer holds it the count is 0: soft_rwlock_give tells the two
 * apart by the count alone. A reader never enters while W is set (writer
 * preference: registrations are rare, the posts and receives that read
 * many). All changes are RMWs of one word, so they are totally ordered: a
 * reader's CAS either comes before the writer's fetch_or (the writer then
 * waits for its release) or sees W. Acquire/release as a mutex's; the
 * waits are futexes on the word (a changed word only means a retry); the
 * writer's unlock wakes only when a reader counted itself in `sleepers`.
 */
#define SOFT_RW_W 0x80000000u

struct soft_rwlock {
	_Atomic uint32_t v;
	_Atomic uint32_t sleepers; /* readers on the futex: the writer's unlock wakes them */
	struct soft_lock wr;       /* writers, one at a time */
};

void soft_rwlock_read_wait(struct soft_rwlock *l);
void soft_rwlock_write(struct soft_rwlock *l);
void soft_rwlock_wake(struct soft_rwlock *l);

static inline void soft_rwlock_init(struct soft_rwlock *l)
{
	atomic_init(&l->v, 0);
	atomic_init(&l->sleepers, 0);
	soft_lock_init(&l->wr);
}

static inline void soft_rwlock_read(struct soft_rwlock *l)
{
	uint32_t v = atomic_load_explicit(&l->v, memory_order_relaxed);

	if (RV_LIKELY(!(v & SOFT_RW_W)) &&
	    RV_LIKELY(atomic_compare_exchange_weak_explicit(&l->v, &v, v + 1, memory_order_acquire,
							    memory_order_relaxed)))
		return;
	soft_rwlock_read_wait(l);
}

/* Either side's unlock: a reader holds with the count at least 1, the
 * writer with it 0 (no reader can join while W is set). */
static inline void soft_rwlock_give(struct soft_rwlock *l)
{
	uint32_t v = atomic_load_explicit(&l->v, memory_order_relaxed);

	if (RV_LIKELY(v & ~SOFT_RW_W)) {
		v = atomic_fetch_sub_explicit(&l->v, 1, memory_order_release);
		if (RV_UNLIKELY(v == (SOFT_RW_W | 1u)))
			soft_rwlock_wake(l); /* the last reader: the writer waits for it */
		return;
	}
	/* seq_cst, as the sleeper's count and recheck (lock.c): either it sees
	 * W gone, or this sees it counted and wakes it. No syscall otherwise
	 * (MW binds and invalidations take the write lock on the data path). */
	atomic_fetch_and_explicit(&l->v, ~SOFT_RW_W, memory_order_seq_cst);
	if (atomic_load_explicit(&l->sleepers, memory_order_seq_cst))
		soft_rwlock_wake(l);
	soft_lock_give(&l->wr);
}

#endif
