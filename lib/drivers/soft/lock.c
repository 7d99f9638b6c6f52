/*
 * soft_lock's slow paths (lock.h): the wait, a short spin then a futex, and
 * the wake. Owns nothing else; never takes another lock.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock.h"

#define SOFT_LOCK_SPINS 100 /* a CQ section is a few dozen instructions */

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void soft_lock_wait(struct soft_lock *l)
{
	uint32_t c;

	for (int i = 0; i < SOFT_LOCK_SPINS; i++) {
		uint32_t free = 0;

		if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(&l->v, &free, 1, memory_order_acquire,
							    memory_order_relaxed))
			return;
		relax();
	}
	/* From here the word says 2 while we hold or wait: whoever gives it
	 * back then wakes one sleeper (a needless wake at worst). */
	c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
	while (c != 0) {
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
	}
}

void soft_lock_wake(struct soft_lock *l)
{
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void soft_rwlock_read_wait(struct soft_rwlock *l)
{
	for (int i = 0;; i++) {
		uint32_t v = atomic_load_explicit(&l->v, memory_order_relaxed);

		if (!(v & SOFT_RW_W)) {
			if (atomic_compare_exchange_weak_explicit(&l->v, &v, v + 1, memory_order_acquire,
								  memory_order_relaxed))
				return;
			continue;
		}
		if (i < SOFT_LOCK_SPINS) {
			relax();
			continue;
		}
		/* Counted before the futex looks at the word again (it sleeps only
		 * if W is still set): the writer's unlock clears W, then reads the
		 * count (both seq_cst), so one of the two sees the other. */
		atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&l->v, memory_order_seq_cst) == v)
			syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
		atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
	}
}

void soft_rwlock_write(struct soft_rwlock *l)
{
	uint32_t v;

	soft_lock_take(&l->wr);
	v = atomic_fetch_or_explicit(&l->v, SOFT_RW_W, memory_order_acquire) | SOFT_RW_W;
	for (int i = 0; v != SOFT_RW_W; i++) {
		/* Readers still hold it: their releases come to this word. */
		if (i < SOFT_LOCK_SPINS)
			relax();
		else
			syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
		v = atomic_load_explicit(&l->v, memory_order_acquire);
	}
}

void soft_rwlock_wake(struct soft_rwlock *l)
{
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}
