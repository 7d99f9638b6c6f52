/*
 * line-cost: what the primitives of a same-host ring message cost on this
 * machine, as minimums over short trials (the machine is shared, so the
 * minimum is the figure that load does not inflate): an uncontended
 * pthread mutex lock+unlock, a trylock+unlock, an rwlock read lock+unlock,
 * a store followed by a seq_cst fence, and the one-way handoff of a cache
 * line between two processes over MAP_SHARED memory (half a round trip of
 * two lines, each written by one side: what a ring index costs).
 *
 *   build/bench/line-cost
 *
 * See lib/drivers/soft/README.md, "Where a ring message's time goes".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIALS 30
#define OPS 20000
#define ROUNDS 2000 /* round trips per handoff trial */

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void keep_min(double *best, double start, unsigned ops)
{
	double d = (now_ns() - start) / ops;

	if (d < *best)
		*best = d;
}

int main(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	volatile unsigned x = 0;
	_Atomic unsigned a = 0;
	double mutex = 1e12, trylock = 1e12, rdlock = 1e12, fence = 1e12, handoff = 1e12, t;

	for (int k = 0; k < TRIALS; k++) {
		t = now_ns();
		for (unsigned i = 0; i < OPS; i++) {
			pthread_mutex_lock(&m);
			x++;
			pthread_mutex_unlock(&m);
		}
		keep_min(&mutex, t, OPS);
		t = now_ns();
		for (unsigned i = 0; i < OPS; i++) {
			if (pthread_mutex_trylock(&m) == 0) {
				x++;
				pthread_mutex_unlock(&m);
			}
		}
		keep_min(&trylock, t, OPS);
		t = now_ns();
		for (unsigned i = 0; i < OPS; i++) {
			pthread_rwlock_rdlock(&rw);
			x++;
			pthread_rwlock_unlock(&rw);
		}
		keep_min(&rdlock, t, OPS);
		t = now_ns();
		for (unsigned i = 0; i < OPS; i++) {
			atomic_store_explicit(&a, i, memory_order_relaxed);
			atomic_thread_fence(memory_order_seq_cst);
		}
		keep_min(&fence, t, OPS);
	}
	printf("mutex lock+unlock     %6.1f ns\n", mutex);
	printf("mutex trylock+unlock  %6.1f ns\n", trylock);
	printf("rwlock rdlock+unlock  %6.1f ns\n", rdlock);
	printf("store + seq_cst fence %6.1f ns\n", fence);

	/* Two lines: this process writes ping, the child answers on pong. */
	_Atomic unsigned *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED) {
		perror("line-cost: mmap");
		return 1;
	}
	_Atomic unsigned *ping = sh, *pong = sh + 16;
	unsigned total = (unsigned)ROUNDS * TRIALS * 5;
	pid_t pid = fork();

	if (pid < 0) {
		perror("line-cost: fork");
		return 1;
	}
	if (pid == 0) {
		for (unsigned i = 1; i <= total; i++) {
			while (atomic_load_explicit(ping, memory_order_acquire) != i)
				;
			atomic_store_explicit(pong, i, memory_order_release);
		}
		_exit(0);
	}
	for (unsigned i = 1, k = 0; k < TRIALS * 5; k++) {
		t = now_ns();
		for (unsigned j = 0; j < ROUNDS; j++, i++) {
			atomic_store_explicit(ping, i, memory_order_release);
			while (atomic_load_explicit(pong, memory_order_acquire) != i)
				;
		}
		keep_min(&handoff, t, 2 * ROUNDS);
	}
	waitpid(pid, NULL, 0);
	printf("cache-line handoff    %6.1f ns one way (two processes)\n", handoff);
	return 0;
}
