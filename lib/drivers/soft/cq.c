/*
 * Completion queues of the software device: a ring of rv_wc.
 *
 * Producers are posting threads (flushes, local errors, sends framed at post
 * time) and the progress thread, so pushes take cq->lock. rv_cq_poll first
 * reads one atomic counter and returns 0 without a lock or a syscall when the
 * ring is empty; otherwise it takes the (uncontended, futex-free when free)
 * mutex to copy entries out. Never blocks beyond that mutex.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

struct soft_cq {
	pthread_mutex_t lock;
	rv_wc *ring;
	uint32_t mask;
	uint32_t head, tail;
	_Atomic uint32_t avail;  /* tail - head, readable without the lock */
	_Atomic bool overflow;
};

int soft_cq_create(struct rv_cq *cq, const rv_cq_attr *attr)
{
	struct soft_cq *c;
	uint32_t n = 1;

	if (attr->cqe > SOFT_MAX_CQE)
		return rv_err(EINVAL, "rv_cq_new", "cqe %u exceeds soft0's max_cqe %u", attr->cqe, SOFT_MAX_CQE);
	while (n < attr->cqe)
		n <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return rv_err(ENOMEM, "rv_cq_new", "out of memory for the CQ");
	c->ring = calloc(n, sizeof(*c->ring));
	if (!c->ring || pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c->ring);
		free(c);
		return rv_err(ENOMEM, "rv_cq_new", "out of memory for %u CQ entries", n);
	}
	c->mask = n - 1;
	cq->cqe = n;
	cq->drv_cq = c;
	return 0;
}

int soft_cq_destroy(struct rv_cq *cq)
{
	struct soft_cq *c = cq->drv_cq;

	if (!c)
		return 0;
	pthread_mutex_destroy(&c->lock);
	free(c->ring);
	free(c);
	cq->drv_cq = NULL;
	return 0;
}

bool soft_cq_push(struct rv_cq *cq, const rv_wc *wc)
{
	struct soft_cq *c = cq->drv_cq;
	bool ok = true;

	pthread_mutex_lock(&c->lock);
	if (c->tail - c->head > c->mask) {
		atomic_store(&c->overflow, true);
		ok = false;
	} else {
		c->ring[c->tail & c->mask] = *wc;
		c->tail++;
		atomic_store_explicit(&c->avail, c->tail - c->head, memory_order_release);
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}

int soft_cq_poll(struct rv_cq *cq, rv_wc *wc, int max)
{
	struct soft_cq *c = cq->drv_cq;
	uint32_t n = 0;

	if (atomic_load_explicit(&c->avail, memory_order_acquire) == 0) {
		if (RV_LIKELY(!atomic_load_explicit(&c->overflow, memory_order_relaxed)))
			return 0;
	} else {
		pthread_mutex_lock(&c->lock);
		while (n < (uint32_t)max && c->head != c->tail) {
			wc[n++] = c->ring[c->head & c->mask];
			c->head++;
		}
		atomic_store_explicit(&c->avail, c->tail - c->head, memory_order_release);
		pthread_mutex_unlock(&c->lock);
		if (n)
			return (int)n;
	}
	return rv_err(EOVERFLOW, "rv_cq_poll",
		      "the CQ overflowed: completions were lost and the QPs that used it are in the error "
		      "state; size it for every WR that can complete at once (max_send_wr + "
		      "max_recv_wr of its QPs)");
}
