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
