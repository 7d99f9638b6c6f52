/*
 * Completion queues of the software device: a ring of rv_wc (and, on a CQ
 * created with timestamps, a ring of their stamps beside it); its producer
 * side (soft_cq_push, the completion channel's signal) is completion.c's.
 *
 * rv_cq_poll first reads one atomic counter and returns 0 without a lock or
 * a syscall when the ring is empty; otherwise it takes the (uncontended,
 * futex-free when free) mutex to copy entries out. Never blocks beyond that
 * mutex. Several threads may poll one CQ: the count is a hint read before
 * the lock, so a locked poll may find nothing (another poller came first)
 * and that is 0, never -EOVERFLOW unless the overflow flag is set.
 *
 * rv_cq_resize swaps the ring under cq->lock, which every push and every
 * non-empty poll take; the lock-free empty check reads only `avail`.
 *
 * Completion channels: an eventfd (semaphore mode, non-blocking) per channel
 * and a FIFO of the CQs that fired (completion.c queues them); this file
 * creates the channel and hands the events out.
 * Lock order: cq->lock is never held while taking the channel lock; a
 * waiter that takes its CQ's event (wait_take_event) takes cq->lock under it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "drivers/soft/completion.h"

int soft_cq_create(struct rv_cq *cq, const rv_cq_attr *attr)
{
	struct soft_cq *c;
	uint32_t n = 1;

	uint32_t wc_flags = (attr->mask & RV_CQ_ATTR_WC_FLAGS) ? (uint32_t)attr->wc_flags : 0;

	if (attr->cqe > SOFT_MAX_CQE)
		return rv_err(EINVAL, "rv_cq_new", "cqe %u exceeds soft0's max_cqe %u", attr->cqe, SOFT_MAX_CQE);
	if (wc_flags & RV_CQ_WC_FLOW_TAG)
		return rv_err(EOPNOTSUPP, "rv_cq_new", "soft0 has no flow steering, so its completions carry "
			      "no flow tag; leave RV_CQ_WC_FLOW_TAG out of wc_flags");
	while (n < attr->cqe)
		n <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return rv_err(ENOMEM, "rv_cq_new", "out of memory for the CQ");
	c->ring = calloc(n, sizeof(*c->ring));
	if (wc_flags)
		c->stamps = calloc(n, sizeof(*c->stamps));
	soft_lock_init(&c->lock);
	if (!c->ring || (wc_flags && !c->stamps)) {
		free(c->ring);
		free(c->stamps);
		free(c);
		return rv_err(ENOMEM, "rv_cq_new", "out of memory for %u CQ entries", n);
	}
	c->wc_flags = wc_flags;
	c->mask = n - 1;
	c->cq = cq;
	c->sc = cq->ctx->drv_ctx;
	if ((attr->mask & RV_CQ_ATTR_CHANNEL) && attr->channel)
		c->ch = attr->channel->drv_ch;
	cq->cqe = n;
	cq->drv_cq = c;
	return 0;
}

/* Takes c out of its channel's FIFO of CQs with events (h->lock held). */
static void channel_unlink(struct soft_channel *h, struct soft_cq *c)
{
	struct soft_cq **pp = &h->head, *prev = NULL;

	while (*pp != c) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	*pp = c->next;
	if (h->tail == c)
		h->tail = prev;
	c->queued = false;
}

int soft_cq_destroy(struct rv_cq *cq)
{
	struct soft_cq *c = cq->drv_cq;

	if (!c)
		return 0;
	if (c->ch) {
		struct soft_channel *h = c->ch;
		uint64_t v;

		pthread_mutex_lock(&h->lock);
		if (c->queued)
			channel_unlink(h, c);
		/* Take this CQ's unread events off the eventfd (one per read). */
		for (; c->pending; c->pending--)
			if (read(h->efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
				break;
		pthread_mutex_unlock(&h->lock);
	}
	soft_event_forget(cq->ctx->drv_ctx, &cq->obj);
	free(c->ring);
	free(c->stamps);
	free(c);
	cq->drv_cq = NULL;
	return 0;
}

/* Under c->lock: a new ring, the entries moved in order; refused below them. */
int soft_cq_resize(struct rv_cq *cq, uint32_t cqe)
{
	struct soft_cq *c = cq->drv_cq;
	uint32_t n = 1, held;
	struct soft_cq_stamp *stamps = NULL;
	rv_wc *ring;

	if (cqe > SOFT_MAX_CQE)
		return rv_err(EINVAL, "rv_cq_resize", "cqe %u exceeds soft0's max_cqe %u", cqe, SOFT_MAX_CQE);
	while (n < cqe)
		n <<= 1;
	ring = calloc(n, sizeof(*ring));
	if (c->stamps)
		stamps = calloc(n, sizeof(*stamps));
	if (!ring || (c->stamps && !stamps)) {
		free(ring);
		free(stamps);
		return rv_err(ENOMEM, "rv_cq_resize", "out of memory for %u CQ entries", n);
	}
	soft_lock_take(&c->lock);
	held = c->tail - c->head;
	if (held > cqe) {
		soft_lock_give(&c->lock);
		free(ring);
		free(stamps);
		return rv_err(EINVAL, "rv_cq_resize", "the CQ holds %u completions, more than the %u "
			      "entries asked for; poll them first or choose a larger size", held, cqe);
	}
	for (uint32_t i = 0; i < held; i++) {
		ring[i] = c->ring[(c->head + i) & c->mask];
		if (stamps)
			stamps[i] = c->stamps[(c->head + i) & c->mask];
	}
	free(c->ring);
	free(c->stamps);
	c->ring = ring;
	c->stamps = stamps;
	c->mask = n - 1;
	c->head = 0;
	c->tail = held;
	cq->cqe = n;
	soft_lock_give(&c->lock);
	return 0;
}

int soft_cq_req_notify(struct rv_cq *cq, bool solicited_only)
{
	struct soft_cq *c = cq->drv_cq;
	int want = solicited_only ? ARM_SOLICITED : ARM_ALL;
	int cur = ARM_NONE;

	/* Under the lock: ordered against concurrent pushes (see
	 * soft_cq_push_se), and against the last blocking waiter's disarm
	 * (soft_cq_block), which would otherwise take this arm away if it came
	 * between the arm and clearing wait_armed. The application's arm stays
	 * when the last blocking waiter leaves. Arming for all completions
	 * widens an armed solicited-only CQ; arming solicited-only never
	 * narrows an armed CQ (as verbs). */
	soft_lock_take(&c->lock);
	if (!atomic_compare_exchange_strong(&c->armed, &cur, want) && want == ARM_ALL)
		atomic_store(&c->armed, ARM_ALL);
	c->wait_armed = false;
	soft_lock_give(&c->lock);
	/* The application is about to sleep: streams a poller was reading go
	 * back to the progress thread now, not after SOFT_POLL_HANDBACK_US. */
	if (atomic_load_explicit(&c->sc->n_polled, memory_order_relaxed)) {
		atomic_store(&c->sc->handback, true);
		soft_kick(c->sc);
	}
	if (atomic_load_explicit(&c->sc->rings_live, memory_order_relaxed))
		soft_shmring_wake(c->sc); /* the caller is about to block: doorbells from now on */
	return 0;
}

int soft_comp_channel_create(struct rv_comp_channel *ch)
{
	struct soft_channel *h = calloc(1, sizeof(*h));

	if (!h)
		return rv_err(ENOMEM, "rv_comp_channel_new", "out of memory");
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	if (h->efd < 0) {
		int err = errno;
		free(h);
		return rv_err(err, "rv_comp_channel_new", "eventfd failed: %s", strerror(err));
	}
	if (pthread_mutex_init(&h->lock, NULL) != 0) {
		close(h->efd);
		free(h);
		return rv_err(ENOMEM, "rv_comp_channel_new", "out of memory");
	}
	ch->fd = h->efd;
	ch->drv_ch = h;
	return 0;
}

int soft_comp_channel_destroy(struct rv_comp_channel *ch)
{
	struct soft_channel *h = ch->drv_ch;

	if (!h)
		return 0;
	close(h->efd);
	pthread_mutex_destroy(&h->lock);
	free(h);
	ch->drv_ch = NULL;
	ch->fd = -1;
	return 0;
}

int soft_comp_channel_get_event(struct rv_comp_channel *ch, struct rv_cq **ret_cq)
{
	struct soft_channel *h = ch->drv_ch;
	struct soft_cq *c;
	uint64_t v;

	pthread_mutex_lock(&h->lock);
	if (read(h->efd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		pthread_mutex_unlock(&h->lock);
		return -EAGAIN;
	}
	c = h->head;
	if (!c) { /* cannot happen: one queued event per eventfd count */
		pthread_mutex_unlock(&h->lock);
		return -EAGAIN;
	}
	if (--c->pending == 0) {
		c->queued = false;
		h->head = c->next;
		if (!h->head)
			h->tail = NULL;
	}
	*ret_cq = c->cq;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* Entry i of the ring as an rv_wc_ex (c->lock held). Only CQs created with
 * wc_flags come here (lib/cq.c), and those have stamps. */
static void ex_entry(const struct soft_cq *c, uint32_t i, rv_wc_ex *x)
{
	memset(x, 0, sizeof(*x));
	x->wc = c->ring[i];
	x->ex_flags = c->wc_flags;
	if (c->wc_flags & RV_CQ_WC_TIMESTAMP)
		x->timestamp = c->stamps[i].raw;
	x->timestamp_wallclock = c->stamps[i].wall; /* 0 without RV_CQ_WC_TIMESTAMP_WALLCLOCK */
}

/* Empty polls in a row by this thread, any CQ (reset by a poll that finds one). */
static _Thread_local uint32_t empty_polls __attribute__((tls_model("initial-exec")));
/* µs: when this thread last read the clock for poll_progress (see there). */
static _Thread_local int64_t poll_stamp __attribute__((tls_model("initial-exec")));
/* poll_stamp is to be read again before a stream poll uses it. */
static _Thread_local bool poll_stamp_due __attribute__((tls_model("initial-exec")));

/* The QPs that complete into c: those a poller of c must keep moving. */
static void collect_qps(struct soft_cq *c)
{
	struct soft_ctx *sc = c->sc;

	c->n_qps = 0;
	c->has_ud = false;
	for (uint32_t i = 0; i < sc->n_qps; i++) {
		struct soft_qp *q = sc->qps[i];
		/* Not an XRC target whose SRQ completes here: its stream stays
		 * the progress thread's. A poller that took it would keep it
		 * from epoll for SOFT_POLL_HANDBACK_US after moving on to
		 * another CQ (pyverbs' XRC traffic alternates between the
		 * client's and the server's CQ in one thread: about 25 ms a
		 * message instead of 0.3). */
		if (q->qp->send_cq != c->cq && q->qp->recv_cq != c->cq)
			continue;
		if (q->ud) {
			c->has_ud = true;
			continue;
		}
		if (c->n_qps < SOFT_POLL_DIRECT_MAX)
			c->qps[c->n_qps] = q;
		c->n_qps++;
	}
	c->qp_gen = sc->qp_gen + 1;
}

/* The CQ this thread last moved data for as a busy poller, and its context. */
static _Thread_local const struct soft_cq *poll_last_cq __attribute__((tls_model("initial-exec")));
static _Thread_local struct soft_ctx *poll_last_sc __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t poll_last_serial __attribute__((tls_model("initial-exec")));

/*
 * The thread turns to another CQ (pyverbs polls the client's CQ, then the
 * server's, in one thread): the streams it took for the last one go back to
 * their progress thread now. Before, they stayed out of epoll until
 * SOFT_POLL_HANDBACK_US (1 ms) after the last poll, and a SEND whose
 * completion needed the other side to read such a stream (its confirmation
 * READ) waited that long: about 1 ms per message (test-soft-handback;
 * pyverbs' test_qpex over TCP 55.8 s, now 5.9 s). Costs a kick of that
 * context's progress thread per turn, and an epoll_ctl per stream when the
 * thread comes back.
 */
static void poll_switch(struct soft_cq *c)
{
	/* Only across contexts: one thread polling a QP's send CQ and its
	 * receive CQ in turn (one context) would otherwise hand the same
	 * streams back and take them again on every turn, a kick and two
	 * epoll_ctl each; within a context the 1 ms hand-back stays. */
	if (poll_last_sc && poll_last_sc != c->sc)
		soft_ctx_handback_from(poll_last_sc, poll_last_serial);
	poll_last_cq = c;
	poll_last_sc = c->sc;
	poll_last_serial = c->sc->serial;
}

/*
 * The poller moves its own data (a busy-polling application should not wait
 * for a thread wake-up): with few QPs on the CQ, one recv(MSG_DONTWAIT) per
 * QP, as a busy-polling TCP application does, and their streams leave epoll
 * so the progress thread sleeps; otherwise epoll_wait(0) every few polls
 * (sc->lock held: poll_empty took it, never waiting for it: whoever holds it
 * is doing the same work).
 */
static void poll_progress_locked(struct soft_cq *c)
{
	struct soft_ctx *sc = c->sc;

	bool ring_only = !c->has_ud;

	if (c->qp_gen != sc->qp_gen + 1)
		collect_qps(c);
	if (c->n_qps <= SOFT_POLL_DIRECT_MAX) {
		for (uint32_t i = 0; i < c->n_qps; i++) {
			const struct soft_conn *qc = c->qps[i]->conn; /* changes under sc->lock, held */

			/* A stream whose peer switched to its ring: soft_conn_poll
			 * returns at once and its stamp is not used; no clock read for
			 * it (a same-host ping-pong read the clock once per message). */
			if (qc && atomic_load_explicit(&qc->ring_rx_on, memory_order_relaxed))
				continue;
			ring_only = false;
			if (poll_stamp_due) {
				poll_stamp = soft_now_us();
				poll_stamp_due = false;
			}
			soft_conn_poll(c->qps[i], poll_stamp, false);
		}
	}
	if ((c->n_qps > SOFT_POLL_DIRECT_MAX || c->has_ud) && (empty_polls & (SOFT_POLL_PROGRESS_EVERY - 1)) == 0)
		soft_ctx_poll_progress(sc);
	ring_only = ring_only && c->n_qps <= SOFT_POLL_DIRECT_MAX;
	if (atomic_load_explicit(&c->ring_only, memory_order_relaxed) != ring_only)
		atomic_store_explicit(&c->ring_only, ring_only, memory_order_relaxed);
}

/*
 * An empty poll (c->avail was 0, progress on): the shared-memory rings
 * (shmring.c) on every one — memory loads, no system call — and, from the
 * SOFT_POLL_PROGRESS_AFTER-th empty poll in a row, the CQ's sockets
 * (poll_progress_locked), under one sc->lock trylock for both (before, one
 * trylock each: two lock round trips per empty poll). ring_busy: the ring
 * pass counts as a busy poller's (see poll_cq). The stamp only keeps
 * streams from being handed back (SOFT_POLL_HANDBACK_US, 1 ms): the clock is
 * due on the first progress poll after a completion and every 16th after
 * that, not on each (a vDSO clock read was 5 % of a busy poller's samples,
 * a third of what its recv took in user space), and read only when a TCP
 * stream is polled with it (poll_progress_locked), never for QPs on rings.
 */
#define SOFT_POLL_LOCK_EVERY 64 /* the empty polls that take sc->lock whatever the look says */

static void poll_empty(struct soft_cq *c, bool ring_busy, bool rings)
{
	struct soft_ctx *sc = c->sc;
	uint32_t n = empty_polls + 1;
	bool progress = n >= SOFT_POLL_PROGRESS_AFTER;

	if (rings)
		soft_shmring_poller_stamp(sc, ring_busy);
	if (progress) {
		empty_polls = n;
		if (RV_UNLIKELY(poll_last_cq != c))
			poll_switch(c);
		if (n == SOFT_POLL_PROGRESS_AFTER || (n & 15) == 0)
			poll_stamp_due = true; /* read where a stream poll uses it */
	}
	if (progress && (n & (SOFT_POLL_LOCK_EVERY - 1)) != 0 &&
	    atomic_load_explicit(&c->ring_only, memory_order_relaxed))
		progress = false; /* every QP of the CQ is on a ring: no socket to read */
	if (rings && !(progress || (n & (SOFT_POLL_LOCK_EVERY - 1)) == 0) && !soft_shmring_peek(sc, ring_busy))
		rings = false; /* nothing in the rings: no sc->lock round trip */
	if ((rings || progress) && soft_lock_try(&sc->lock) == 0) {
		if (rings)
			soft_shmring_poller_locked(sc, ring_busy);
		if (progress && !sc->stop && atomic_load_explicit(&c->avail, memory_order_acquire) == 0)
			poll_progress_locked(c);
		soft_lock_give(&sc->lock);
	}
	if (!progress && atomic_load_explicit(&c->avail, memory_order_acquire) == 0)
		empty_polls = n;
}

/* rv_cq_poll (wcx NULL) and rv_cq_poll_ex (wc NULL): inlined into each with
 * a constant NULL, so the plain poll's copy loop has no extra test. */
static inline __attribute__((always_inline)) int poll_cq(struct rv_cq *cq, rv_wc *wc, rv_wc_ex *wcx, int max)
{
	struct soft_cq *c = cq->drv_cq;
	uint32_t n = 0;

	if (atomic_load_explicit(&c->avail, memory_order_acquire) == 0 && c->sc->poll_progress)
		/* The rings on every empty poll, the sockets when busy polling
		 * (receive in this thread). An armed CQ polls once before blocking
		 * and is no busy poller for the rings, nor is rv_cq_wait's poll
		 * around its block (below SOFT_POLL_PROGRESS_AFTER: soft_cq_block
		 * resets the count), which would otherwise clear "sleeping" and wake
		 * the progress thread once per message. */
		poll_empty(c, atomic_load_explicit(&c->armed, memory_order_relaxed) == ARM_NONE &&
				      empty_polls + 1 >= SOFT_POLL_PROGRESS_AFTER,
			   atomic_load_explicit(&c->sc->rings_live, memory_order_relaxed) != 0);
	if (atomic_load_explicit(&c->avail, memory_order_acquire) == 0) {
		if (RV_LIKELY(!atomic_load_explicit(&c->overflow, memory_order_relaxed)))
			return 0;
	} else {
		soft_lock_take(&c->lock);
		while (n < (uint32_t)max && c->head != c->tail) {
			if (wcx)
				ex_entry(c, c->head & c->mask, &wcx[n++]);
			else
				wc[n++] = c->ring[c->head & c->mask];
			c->head++;
		}
		atomic_store_explicit(&c->avail, c->tail - c->head, memory_order_release);
		soft_lock_give(&c->lock);
		empty_polls = 0;
		/* n is 0 when another poller took what `avail` showed between
		 * the look and the lock (or soft_cq_clean took the entries of
		 * a QP moved to RESET): an empty poll, not an overflow. It returned
		 * -EOVERFLOW here unconditionally, and two threads polling one
		 * CQ saw a false overflow (test-soft-lock, two pollers). */
		if (n || RV_LIKELY(!atomic_load_explicit(&c->overflow, memory_order_relaxed)))
			return (int)n;
	}
	return rv_err(EOVERFLOW, "rv_cq_poll",
		      "the CQ overflowed: completions were lost and the QPs that used it are in the error "
		      "state; size it for every WR that can complete at once (max_send_wr + "
		      "max_recv_wr of its QPs)");
}

int soft_cq_poll(struct rv_cq *cq, rv_wc *wc, int max)
{
	return poll_cq(cq, wc, NULL, max);
}

int soft_cq_poll_ex(struct rv_cq *cq, rv_wc_ex *wc, int max)
{
	return poll_cq(cq, NULL, wc, max);
}

/* Milliseconds poll() may sleep before deadline_ns (-1: forever), rounded up. */
static int ms_until(int64_t deadline_ns)
{
	struct timespec ts;
	int64_t left;

	if (deadline_ns < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	left = deadline_ns - ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	if (left <= 0)
		return 0;
	return left / 1000000 >= INT32_MAX ? INT32_MAX : (int)((left + 999999) / 1000000);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Spin-then-block, adaptive: before soft_cq_block arms the CQ and sleeps,
 * the thread polls as a busy poller would (the rings, its QPs' sockets) for
 * up to sc->wait_spin_ns. A wake-up costs the sleeper about as much as the
 * message itself on a virtual machine (a blocking eventfd ping-pong between
 * two processes is 7-8 µs one way on the development VM, the rings' busy
 * poll 1 µs), so a reply that comes within the spin saves a sleep and a
 * wake-up. wait_spin_adapt decides per CQ: a spin that found nothing turns
 * spinning off; it comes back (full bound) only after 2, 4, ... 256 waits in
 * a row whose sleep ended within the bound (the spin would have caught them:
 * a ping-pong), never for waits that sleep longer (an idle application pays
 * no spin). A spin that loses its CPU (below) stops at once and counts as
 * found nothing; a spin whose first look finds the completion neither wins
 * nor fails (below). The CPU it costs is the spin: a ping-pong whose peer
 * answers within it spins both sides all the time, as busy polling does;
 * RVERBS_SOFT_WAIT_SPIN_US=0 turns it off. SPIN_WON or SPIN_THERE: a
 * completion is in the CQ.
 *
 * A completion the spin's first look finds came while the thread was away
 * (most often preempted at its send by that very peer, on the same CPU, or
 * by other work): the spin saved no sleep. It counted as a win, which reset
 * the backoff, so a ping-pong whose two ends share a CPU (one busy process
 * beside them on 2 CPUs, or a 1-CPU container) spun before nearly every
 * sleep: 1.6-2.1 recv per message instead of 1.2, 1.7-5 us more CPU per
 * message (lib/drivers/soft/README.md, Progress). It now leaves the backoff
 * as it is (SPIN_THERE). Reading the clock at every look with a tighter
 * lost-CPU gap (4 us plus twice the shortest look) was tried beside it and
 * taken out: it changed no count on one CPU and the quiet ping-pong measured
 * slower with it (two sets of 11 rounds); getrusage's count of involuntary
 * switches tells a lost CPU exactly but costs about 2 us a call here.
 */
#define SOFT_WAIT_SPIN_GAP_NS 20000

/* What a spin came to (wait_spin). */
enum spin_result {
	SPIN_NONE,  /* nothing came (or the thread lost its CPU): it sleeps */
	SPIN_WON,   /* a completion came after at least one empty look: a sleep saved */
	SPIN_THERE, /* the first look found it: no sleep saved, none wasted */
};

static enum spin_result wait_spin(struct soft_cq *c, uint32_t budget, int64_t start, int64_t deadline_ns)
{
	struct soft_ctx *sc = c->sc;
	int64_t end = start + budget, last = start, now;
	uint32_t i;

	if (deadline_ns >= 0 && end > deadline_ns)
		end = deadline_ns;
	empty_polls = SOFT_POLL_PROGRESS_AFTER - 1;
	for (i = 1;; i++) {
		poll_empty(c, true, atomic_load_explicit(&sc->rings_live, memory_order_relaxed) != 0);
		if (atomic_load_explicit(&c->avail, memory_order_acquire))
			break;
		if ((i & 7) == 0) {
			now = mono_ns();
			if (now >= end || now - last > SOFT_WAIT_SPIN_GAP_NS) {
				empty_polls = 0;
				return SPIN_NONE;
			}
			last = now;
		}
		cpu_relax();
	}
	empty_polls = 0;
	return i == 1 ? SPIN_THERE : SPIN_WON;
}

/* After a wait: spun is whether it spun (and found nothing: it slept), got
 * whether the sleep ended with something to do rather than the deadline. */
static void wait_spin_adapt(struct soft_cq *c, bool spun, int64_t start, bool got)
{
	uint32_t fails = atomic_load_explicit(&c->spin_fails, memory_order_relaxed);

	if (spun) {
		/* Found nothing: off, and back only after 2^fails short waits. */
		if (fails < 8)
			fails++;
		atomic_store_explicit(&c->spin_fails, fails, memory_order_relaxed);
		atomic_store_explicit(&c->spin_skip, 1u << fails, memory_order_relaxed);
		atomic_store_explicit(&c->spin_ns, 0, memory_order_relaxed);
		return;
	}
	if (!got || mono_ns() - start > (int64_t)c->sc->wait_spin_ns)
		return; /* a long wait: a spin would have been wasted */
	uint32_t skip = atomic_load_explicit(&c->spin_skip, memory_order_relaxed);
	if (skip > 1) {
		atomic_store_explicit(&c->spin_skip, skip - 1, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&c->spin_skip, 0, memory_order_relaxed);
	atomic_store_explicit(&c->spin_ns, c->sc->wait_spin_ns, memory_order_relaxed);
}

/* soft_cq_block's recv is off for this wait (backing off after a timeout:
 * SO_RCVTIMEO ends on a scheduler tick, so a wait with a near deadline that
 * times out in the recv ends up to a tick or two late; an idle stream pays
 * that once per 2-256 waits, a ping-pong never). */
static bool recv_skipped(struct soft_cq *c)
{
	uint32_t skip = atomic_load_explicit(&c->recv_skip, memory_order_relaxed);

	if (!skip)
		return false;
	atomic_store_explicit(&c->recv_skip, skip - 1, memory_order_relaxed);
	return true;
}

static void recv_timed_out(struct soft_cq *c)
{
	uint32_t fails = atomic_load_explicit(&c->recv_fails, memory_order_relaxed);

	if (fails < 8)
		fails++;
	atomic_store_explicit(&c->recv_fails, fails, memory_order_relaxed);
	atomic_store_explicit(&c->recv_skip, 1u << fails, memory_order_relaxed);
}

/*
 * A waiter woken through the channel (the CQ's arm fired, or the eventfd was
 * readable) takes one of its CQ's events off the channel itself and, in the
 * same step, hands the wake-up on to the waiters still asleep. The eventfd
 * is one count for every thread in poll() on it: a sleeper that the write
 * woke but that ran only after another thread had read the count finds it 0
 * and sleeps on (poll looks again); and the arm fires once, so the next
 * completion wrote nothing: of two threads waiting on one CQ, one slept to
 * its deadline with its completion in the CQ (README.md, "Two waiters on one
 * CQ"). So, with waiters left, the CQ is armed again for them and, if it
 * holds completions (this thread takes at most what it asked for), they get
 * one more event, which whoever takes it hands on the same way. One waiter
 * alone: the one read the facade's take of the event made before, nothing
 * more. 1: the count was another CQ's (a channel shared by CQs), the facade
 * takes it as before; 0: poll again. Out of line: a blocking ping-pong's
 * waiter seldom leaves through the channel (on the rings 14 of 9 748 waits
 * quiet, 65-85 of 8 200-9 100 at load 5; none of 10 000 over TCP), and
 * inlined it grew soft_cq_block by 81 instructions.
 */
static __attribute__((noinline)) int wait_take_event(struct soft_cq *c)
{
	struct soft_channel *h = c->ch;
	bool hand_on = false;
	uint64_t v;
	int rc;

	pthread_mutex_lock(&h->lock);
	if (!c->pending) {
		/* Another thread took it (a waiter that does hands it on); 1
		 * only for what other CQs have on a shared channel. */
		rc = h->head != NULL;
		pthread_mutex_unlock(&h->lock);
		return rc;
	}
	if (read(h->efd, &v, sizeof(v)) == (ssize_t)sizeof(v) && --c->pending == 0)
		channel_unlink(h, c);
	soft_lock_take(&c->lock);
	if (atomic_load_explicit(&c->waiters, memory_order_relaxed)) {
		int none = ARM_NONE;

		if (atomic_compare_exchange_strong(&c->armed, &none, ARM_ALL))
			c->wait_armed = true; /* theirs: the last one out disarms */
		hand_on = c->tail != c->head;
	}
	soft_lock_give(&c->lock);
	if (hand_on)
		soft_channel_post_locked(c);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/*
 * rv_cq_wait's blocking step, like a blocking TCP recv: the thread sleeps in
 * poll() on the sockets of the CQ's QPs (taken out of the progress thread's
 * epoll interest, as a busy poller's are) and the channel's eventfd, and when
 * a socket wakes it, receives and completes in its own thread — one wake-up
 * per message instead of the progress thread's and then this one's. With
 * shared-memory rings it sleeps on the context's doorbell too (taken out of
 * the progress thread's interest, "sleeping" set in every ring, shmring.c's
 * fence protocol), and when the doorbell rings it reads the rings itself
 * (under the sc->lock trylock: whoever holds it reads them too). The CQ
 * is armed meanwhile, so completions that arrive any other way (the progress
 * thread: setup, timers, streams we do not watch; posting threads: flushes)
 * write the channel and wake it. The arm is the waiters' own: the last one
 * out disarms it unless it fired or the application armed it too, so our
 * own receives do not write the eventfd. A waiter on one TCP stream and
 * nothing else sleeps in that stream's recv instead, as a blocking TCP
 * application does (no poll() per message), bounded so that what comes
 * another way is seen within sc->wait_recv_ms (README.md, "Blocking over TCP
 * with a busy process"). -EOPNOTSUPP (the facade's channel
 * wait) for CQs served through epoll (a UD QP, many QPs) or with
 * RVERBS_SOFT_POLL_PROGRESS=0.
 */
int soft_cq_block(struct rv_cq *cq, int64_t deadline_ns)
{
	struct soft_cq *c = cq->drv_cq;
	struct soft_ctx *sc = c->sc;
	struct pollfd pfd[SOFT_POLL_DIRECT_MAX + 2];
	struct soft_qp *qs[SOFT_POLL_DIRECT_MAX];
	uint32_t n = 0, gen;
	int64_t now = 0;
	bool readable = false, fired, rings, ring_work = false, got, ours = false, claimed = false;
	int r, err;
	/* The recv a waiter on one stream sleeps in (soft_conn_sleep_claim). */
	struct soft_conn *sleep_c = NULL;
	int sleep_fd = -1;
	size_t sleep_room = 0;
	ssize_t slept = 0;
	uint8_t *sleep_buf = NULL;

	uint32_t budget = 0;
	int64_t start = 0;

	/* rv_cq_wait's polls around the block are not a busy poller's. */
	empty_polls = 0;
	if (!c->ch || !sc->poll_progress)
		return -EOPNOTSUPP;
	/* Spin first (not after rv_cq_wait's own spin, RV_CQ_WAIT_SPIN_THEN_BLOCK). */
	if (sc->wait_spin_ns && cq->wait_mode != RV_CQ_WAIT_SPIN_THEN_BLOCK) {
		budget = atomic_load_explicit(&c->spin_ns, memory_order_relaxed);
		start = mono_ns();
		enum spin_result won = budget ? wait_spin(c, budget, start, deadline_ns) : SPIN_NONE;

		if (won == SPIN_WON)
			atomic_store_explicit(&c->spin_fails, 0, memory_order_relaxed);
		if (won != SPIN_NONE)
			return 0;
	}
	soft_lock_take(&sc->lock);
	if (c->qp_gen != sc->qp_gen + 1)
		collect_qps(c);
	if (sc->stop || c->has_ud || c->n_qps > SOFT_POLL_DIRECT_MAX) {
		soft_lock_give(&sc->lock);
		return -EOPNOTSUPP;
	}
	/* Counted before the streams leave epoll: soft_conn_handback (under
	 * sc->lock, like this) leaves a waited stream alone. */
	soft_lock_take(&c->lock);
	atomic_fetch_add_explicit(&c->waiters, 1, memory_order_relaxed);
	if (atomic_load(&c->armed) != ARM_ALL) {
		if (atomic_exchange(&c->armed, ARM_ALL) == ARM_NONE)
			c->wait_armed = ours = true;
	}
	r = c->tail != c->head; /* pushed before the arm: it did not fire */
	soft_lock_give(&c->lock);
	for (uint32_t i = 0; i < c->n_qps && !r; i++) {
		bool out;
		int fd = soft_conn_wait_fd(c->qps[i], &out);

		claimed |= fd == -2;
		if (fd < 0)
			continue;
		qs[n] = c->qps[i];
		pfd[n].fd = fd;
		pfd[n].events = (short)(POLLIN | (out ? POLLOUT : 0));
		pfd[n].revents = 0;
		n++;
	}
	gen = c->qp_gen;
	atomic_fetch_add_explicit(&sc->n_watched, n, memory_order_relaxed);
	rings = sc->n_rings != 0;
	if (n == 1 && c->n_qps == 1 && !r && ours && !rings && pfd[0].events == POLLIN && sc->wait_recv_ms &&
	    !recv_skipped(c)) {
		/* One stream, nothing else this CQ's arm is for (the waiters'
		 * own, no event of the application's waiting on the channel):
		 * sleep in its recv, as a blocking TCP application does, instead
		 * of poll() then recv. Bounded: what completes the CQ another way
		 * (its arm writes the channel, which this sleep does not watch)
		 * is seen within sc->wait_recv_ms; a kill shuts the socket down,
		 * which ends the recv at once. */
		int tmo = ms_until(deadline_ns);

		if (tmo < 0 || tmo > sc->wait_recv_ms)
			tmo = sc->wait_recv_ms;
		if (tmo > 0)
			sleep_c = soft_conn_sleep_claim(qs[0], tmo, &sleep_fd, &sleep_buf, &sleep_room);
	}
	if (rings) {
		/* The doorbell wakes this thread alone: not the progress thread
		 * too, which would race it for the rings (it takes the doorbell
		 * back once no waiter came for a millisecond). */
		if (atomic_load_explicit(&sc->bell_on, memory_order_relaxed))
			soft_ctx_bell(sc, false);
		ring_work = soft_shmring_wait_begin(sc);
		r |= ring_work;
	}
	soft_lock_give(&sc->lock);

	pfd[n].fd = c->ch->efd;
	pfd[n].events = POLLIN;
	pfd[n].revents = 0;
	pfd[n + 1].fd = sc->bell_fd;
	pfd[n + 1].events = POLLIN;
	pfd[n + 1].revents = 0;
	err = 0;
	got = true;
	if (r) {
		r = 0; /* something was there already */
	} else {
		bool sleep_poll = true;

		if (sleep_c) {
			slept = recv(sleep_fd, sleep_buf, sleep_room, 0);
			err = slept < 0 ? errno : 0;
			if (slept >= 0 || (err != EAGAIN && err != EWOULDBLOCK && err != EINTR)) {
				/* Bytes, the end, or an error: news of the stream
				 * (soft_conn_slept, below). */
				r = 1;
				err = 0;
				sleep_poll = false;
			} else {
				soft_conn_sleep_release(sleep_c);
				sleep_c = NULL;
				if (err == EAGAIN || err == EWOULDBLOCK)
					recv_timed_out(c);
				/* The bound, not the deadline: poll() for the rest. */
				sleep_poll = err == EAGAIN || err == EWOULDBLOCK ? ms_until(deadline_ns) != 0 : false;
				r = err == EINTR ? -1 : 0;
				if (err != EINTR)
					err = 0;
				got = false;
			}
		}
		if (sleep_poll) {
			int tmo = ms_until(deadline_ns);

			/* A stream another waiter sleeps in the recv of is not
			 * watched here; should that waiter leave without it (its
			 * deadline), look again within the recv's bound, not at
			 * this wait's deadline. */
			if (claimed && (tmo < 0 || tmo > sc->wait_recv_ms))
				tmo = sc->wait_recv_ms;
			r = poll(pfd, n + 1 + rings, tmo);
			err = r < 0 ? errno : 0;
			got = r > 0;
		}
	}

	atomic_fetch_sub_explicit(&sc->n_watched, n, memory_order_relaxed);
	if (rings)
		soft_shmring_wait_end(sc);
	if (n || rings)
		now = soft_ctx_waiter_left(sc);
	soft_lock_take(&c->lock);
	fired = atomic_load(&c->armed) == ARM_NONE;
	if (atomic_fetch_sub_explicit(&c->waiters, 1, memory_order_relaxed) == 1 && c->wait_armed) {
		/* Before receiving: what we complete ourselves need not wake anyone. */
		int all = ARM_ALL;
		atomic_compare_exchange_strong(&c->armed, &all, ARM_NONE);
		c->wait_armed = false;
	}
	soft_lock_give(&c->lock);

	if (start)
		wait_spin_adapt(c, budget != 0, start, got);
	for (uint32_t i = 0; i < n; i++)
		readable |= pfd[i].revents != 0;
	if (rings && pfd[n + 1].revents) {
		uint64_t v;

		ring_work = true;
		if (read(sc->bell_fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: another waiter (or the progress thread) took it. */
		}
	}
	if (sleep_c) {
		if (slept > 0) {
			atomic_fetch_add_explicit(&sc->wait_recvs, 1, memory_order_relaxed);
			atomic_store_explicit(&c->recv_fails, 0, memory_order_relaxed);
		}
		soft_lock_take(&sc->lock);
		soft_conn_slept(c->qp_gen == gen && c->qp_gen == sc->qp_gen + 1 && !sc->stop ? qs[0] : NULL, sleep_c,
				slept, sleep_room, now);
		soft_lock_give(&sc->lock);
	} else if (readable) {
		soft_lock_take(&sc->lock);
		if (c->qp_gen == gen && c->qp_gen == sc->qp_gen + 1 && !sc->stop) {
			for (uint32_t i = 0; i < n; i++) {
				if (pfd[i].revents & POLLOUT)
					soft_conn_wait_out(qs[i]); /* room for frames that waited */
				if (pfd[i].revents & ~POLLOUT)
					soft_conn_poll(qs[i], now, true);
			}
		}
		if (ring_work && !sc->stop)
			soft_shmring_poll(sc, false);
		soft_lock_give(&sc->lock);
	} else if (ring_work && soft_lock_try(&sc->lock) == 0) {
		/* Not waiting for it: its holder (the progress thread, another
		 * waiter or poller) reads the rings, or the facade's next poll
		 * and wait look again. */
		if (!sc->stop)
			soft_shmring_poll(sc, false);
		soft_lock_give(&sc->lock);
	}
	if (err == EINTR)
		return -EINTR;
	if (fired || pfd[n].revents)
		return wait_take_event(c);
	if (r == 0 && deadline_ns >= 0 && ms_until(deadline_ns) == 0 &&
	    atomic_load_explicit(&c->avail, memory_order_acquire) == 0)
		return -ETIMEDOUT;
	return 0;
}
