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

#endif
