/*
 * Shared-memory rings on the same-host path (issue 8): once both directions
 * of shm.c's agreement hold (each side proved it may read the other's
 * memory), each side offers a ring it produces into, in a sealed memfd the
 * peer maps (it takes the descriptor with pidfd_getfd(2), which needs the
 * same ptrace permission process_vm_readv needed). From then on the frames of
 * that direction are the FPDUs tx.c framed, copied from c->tx into the ring
 * instead of send(): no system call when the consumer polls.
 *
 * Per direction, over TCP, in order (SOFT_OP_SHM_CTL kinds, 12 bytes):
 *   3 OFFER  producer -> consumer: our memfd and eventfd descriptor numbers
 *   4 ANSWER consumer -> producer: mapped or not, and its eventfd number
 *   5 SWITCH producer -> consumer: the last frame of this direction on TCP;
 *            every later frame is in the ring (so nothing overtakes), starting
 *            with a zero-length WRITE that confirms the WRs sent over TCP.
 * Anything refused (no pidfd_getfd, a seal or size that is wrong, an
 * eventfd that is not one, RVERBS_SOFT_SHM_RING=0) leaves that direction on
 * TCP. TCP stays up: its EOF/RST is still how a dead peer shows.
 *
 * Completion: the consumer advances its index only after a frame was
 * processed (placed, checked), so once it moved past the last frame of a WR
 * that WR is confirmed (marks: producer index -> send-queue index); no
 * zero-length READ is asked. A frame it refuses stays unconsumed and its
 * TERMINATE names it, as over TCP.
 *
 * Waiting: the consumer is whoever polls first: rv_cq_poll (soft_shmring_poller,
 * memory loads and a trylock) or the progress thread. A progress thread about
 * to sleep while no poller ran for RING_IDLE_US sets "sleeping" in both
 * rings of every connection (consumer and producer side); the peer writes its
 * eventfd (the doorbell) only then, after producing or consuming. A thread
 * blocked in rv_cq_wait does the same (soft_shmring_wait_begin) and sleeps on
 * that doorbell itself; while one does, nobody clears "sleeping".
 *
 * Hostile peer: the ring is network input. The producer index, each record
 * length and the wrap marker are loaded once and bounded; a frame is copied
 * out of shared memory before it is decoded (no double fetch), then goes
 * through rx.c's checks like any FPDU. The producer never reads the data
 * area and checks the consumer index against its own counters. The memfd
 * must carry F_SEAL_SHRINK so the peer cannot truncate it under our mapping.
 * A bad ring: TERMINATE and the QP to ERR (consumer), or the QP to ERR with
 * RV_WC_BAD_RESP_ERR (producer).
 *
 * Locks: as rx.c/tx.c (sc->lock and q->lock for receive, q->lock for
 * transmit); sc->rings (the connections with a ring) under sc->lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"

#define RING_HDR 4096u
#define RING_DATA (64u * 1024u) /* bytes of records per direction */
#define RING_BYTES (RING_HDR + RING_DATA)
#define RING_WRAP 0xffffffffu   /* record length: the rest up to the end is skipped */
#define RING_FRAME_MAX (SOFT_FPDU_PAYLOAD + 256u)
#define RING_MARKS 64u
#define RING_BUDGET 64u         /* frames per connection per pass */
#define RING_IDLE_US 1000       /* no poller for this long: the progress thread may sleep */

enum { CTL_OFFER = 3, CTL_ANSWER = 4, CTL_SWITCH = 5 };

/* Flags of OFFER (the producer may leave the MPA CRC of its ring frames zero)
 * and ANSWER (bit 0: mapped; RING_NOCRC: the consumer takes such frames). A
 * side that does not know the flag ignores it and keeps the CRC. */
#define RING_NOCRC 2u
/* ANSWER: the consumer takes grants in this ring's header (grant.c), so the
 * producer may grant it memory for one-copy WRITEs. */
#define RING_GRANTS 4u
/* The header page past struct ring_hdr: the producer's grant slots (grant.c). */
#define RING_GRANT_OFF 1024u

/* Frames are short and of any length: the compiler inlines a memcpy it
 * cannot size as `rep movs`, which costs more than the frame; libc's does not. */
static void *(*volatile ring_copy)(void *, const void *, size_t) = memcpy;

/* ThreadSanitizer does not know that two mappings of one memfd alias (two
 * contexts of one process map each other's rings): the index handoffs are
 * told to it on a key both sides derive from the memfd's inode. */
#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif
#ifdef RING_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_keys[64];
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define TSAN_ACQUIRE(key) __tsan_acquire(&tsan_keys[(key) % sizeof(tsan_keys)])
#define TSAN_RELEASE(key) __tsan_release(&tsan_keys[(key) % sizeof(tsan_keys)])
/* A mapping replaced under a lock-free reader (soft_shmring_peek) is not a
 * write of its bytes: the reader sees the old mapping or the new one (the
 * kernel swaps them), and acts on neither. ThreadSanitizer's mmap would
 * record a write of the whole range; with the thread's accesses ignored it
 * resets the range's history instead. */
#define TSAN_MAP_BEGIN() __tsan_ignore_thread_begin()
#define TSAN_MAP_END() __tsan_ignore_thread_end()
#else
#define TSAN_ACQUIRE(key) ((void)(key))
#define TSAN_RELEASE(key) ((void)(key))
#define TSAN_MAP_BEGIN() ((void)0)
#define TSAN_MAP_END() ((void)0)
#endif

/* The shared header: each field written by one side only. */
struct ring_hdr {
	_Atomic uint32_t prod;          /* producer: bytes published (free-running) */
	uint8_t pad0[60];
	_Atomic uint32_t cons;          /* consumer: bytes processed */
	uint8_t pad1[60];
	_Atomic uint32_t cons_sleeping; /* consumer: write my eventfd after producing */
	uint8_t pad2[60];
	_Atomic uint32_t prod_sleeping; /* producer: write my eventfd after consuming */
	uint8_t pad3[60];
};

_Static_assert(sizeof(struct ring_hdr) <= RING_GRANT_OFF, "grant slots overlap the ring header");

/* The rings soft_shmring_peek walks: sc->rings' ring objects, by index. */
struct soft_ring_set {
	struct soft_ring_set *old_next; /* sc->ring_sets_old */
	uint32_t cap;
	_Atomic uint32_t n;
	_Atomic(struct soft_shmring *) r[];
};

struct ring_mark {
	uint32_t prod; /* once the consumer index reaches this ... */
	uint32_t sq;   /* ... every send WR before this index was processed */
};

/* peek_on: the directions soft_shmring_peek looks at (mirrors of
 * c->ring_rx_on and c->ring_tx_on, cleared first when the ring goes). */
#define PEEK_RX 1u
#define PEEK_TX 2u

struct soft_shmring {
	/* Read by soft_shmring_peek without sc->lock: the two address ranges
	 * (fixed for the object's life, which ends only at context close) and
	 * atomics. A reader that comes late sees this connection's values or
	 * the next one's in the same object, or zeros: see "Teardown against
	 * the lock-free look" below. */
	uint8_t *tx_region, *rx_region; /* RING_BYTES each: a mapping of a memfd, or zero pages */
	struct soft_shmring *all_next, *pool_next; /* sc->ring_all, sc->ring_pool (sc->lock) */
	_Atomic uint32_t peek_on;
	_Atomic bool broken;
	/* A receive WR came for the SEND that stalled this ring (post_recv, q->lock):
	 * the next pass of a poller or of the progress thread resumes it. */
	_Atomic bool resume;
	/* A busy poller reads the peer's consumer index (a line the peer writes
	 * once per frame) only while someone waits for it: a signaled WR, a send
	 * queue half full, frames waiting for room (q->lock writes, sc->lock reads). */
	_Atomic bool want_cons;
	_Atomic uint32_t tx_cons;  /* the last consumer index seen (checked) */
	_Atomic uint32_t rx_cons;
	/* From here on: cleared for each connection (ring_get). */
	/* The ring we produce into (our memfd), tx_region once mapped. */
	uint8_t *tx_map;
	struct ring_hdr *tx;
	int tx_fd;
	uint32_t tx_prod;          /* ours */
	struct ring_mark marks[RING_MARKS];
	uint32_t mark_head, mark_tail;
	uint32_t tx_unpub;   /* records tx.c framed in place (soft_shmring_framed) since the last flush */
	uint32_t tx_pub;     /* the producer index last published */
	uint32_t want_upto;  /* producer index: a signaled WR's last frame ends here */
	uint32_t sq_scanned; /* send WRs looked at for want_upto */
	/* The peer's ring, which we consume (rx_region once mapped). */
	uint8_t *rx_map;
	struct ring_hdr *rx;
	int peer_evfd; /* the peer context's eventfd: the doorbell */
	uint64_t tx_key, rx_key; /* inodes of the two memfds (ThreadSanitizer annotations) */
	bool enabled; /* rings allowed on this connection (answer offers with yes) */
	bool offer_due, offered, answer_due, answer_ok, switch_due;
	bool tx_nocrc; /* the peer takes our ring frames without CRC (its ANSWER said so) */
	bool rx_nocrc; /* we take the peer's ring frames without CRC (we answered so) */
	_Atomic bool progressed; /* the peer showed progress: retry.c's clock, set by the progress thread */
	uint64_t stat[SOFT_RING_NSTATS];
};

/*
 * Teardown against the lock-free look (soft_shmring_peek). A busy poller
 * looks at every ring of its context before it tries sc->lock, and takes
 * the lock only when a ring has work: an empty poll then costs loads, not
 * a trylock and an unlock (two lock round trips, 15 % of a busy poller's
 * samples). It holds no lock while a connection is torn down, so nothing it
 * reads may go away under it:
 *
 * - The ring objects are never freed before the context closes: a
 *   connection's ring comes from the context's pool (sc->ring_pool) and
 *   goes back to it (soft_shmring_free); sc->ring_all lists them all for
 *   soft_shmring_ctx_fini. A context has as many as it ever had rings at
 *   once.
 * - Each object owns two address ranges of RING_BYTES, reserved when it is
 *   made and unmapped only at context close. A memfd is mapped into a range
 *   with MAP_FIXED; when the ring goes, zero pages (anonymous, read-only)
 *   are mapped over it with MAP_FIXED, which frees the memfd's pages and
 *   never leaves a hole a reader could fault on: since Linux 6.12 a
 *   MAP_FIXED mmap that fails leaves the old mapping in place, and the
 *   replacement of one mapping by another is atomic for a reader.
 * - The array the poller walks (sc->ring_set) mirrors sc->rings by index.
 *   Entries are atomic pointers to pooled objects (or NULL); an array that
 *   is too small is replaced by a larger copy and the old one kept on
 *   sc->ring_sets_old until context close, so a reader that loaded the old
 *   one still reads valid memory. Its count is bounded by its capacity.
 * - peek_on says which directions to look at: set (release) when a
 *   direction switches to the ring, after its mapping and indices are in
 *   place; cleared first when the ring leaves the list (soft_shmring_drop,
 *   soft_shmring_free). The reader loads it, then the indices and the
 *   shared header. Any interleaving with a teardown or a reuse reads either
 *   the old connection's values, the new one's, or zeros from the zero
 *   pages: the answer is at worst wrong once. "Work" when there is none
 *   costs one locked pass, which decides under the locks as before
 *   (ring_ready); "nothing" when there is work is a ring that was not
 *   published yet or just moved, seen on the next empty poll (and every
 *   64th empty poll of cq.c takes the lock anyway).
 * - The reader acts on nothing it read: it only chooses whether to lock.
 *   The producer index is not bounded here (the locked pass bounds it
 *   before any use), and the prefetch of the next record is a hint that
 *   never faults.
 *
 * Context close: the application destroys its CQs and QPs before the
 * context (the facade's order), so no poller of this context runs when
 * soft_shmring_ctx_fini unmaps. tests/test-soft-shmring.c's
 * peek_vs_teardown connects, disconnects and destroys QPs (so rings are
 * freed and reused) while other threads busy-poll; run under
 * ThreadSanitizer (meson setup -Db_sanitize=thread) it checks the
 * annotations' view too.
 */

/* A range of zero pages at `at` (MAP_FIXED over what is there), or a new
 * one (at NULL); NULL if it could not be made. */
static uint8_t *region_zero(uint8_t *at)
{
	void *m;

	TSAN_MAP_BEGIN();
	m = mmap(at, RING_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (at ? MAP_FIXED : 0), -1, 0);
	TSAN_MAP_END();
	return m == MAP_FAILED ? NULL : m;
}

/* The memfd fd mapped into the range at `at`; false (the range keeps
 * what it had) if it could not be. */
static bool region_map(uint8_t *at, int fd)
{
	void *m;

	TSAN_MAP_BEGIN();
	m = mmap(at, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	TSAN_MAP_END();
	return m != MAP_FAILED;
}

/* A mapping of a ring leaves: zero pages in its place. If even that fails
 * (no memory), the memfd's mapping stays, which is as safe to read. */
static void region_release(uint8_t *at)
{
	(void)region_zero(at);
}

/* A ring object for a connection (sc->lock held): from the pool, or a new
 * one with its two ranges; everything but the ranges and the list links
 * cleared. NULL: no memory. */
static struct soft_shmring *ring_get(struct soft_ctx *sc)
{
	struct soft_shmring *r = sc->ring_pool;

	if (r) {
		sc->ring_pool = r->pool_next;
	} else {
		r = calloc(1, sizeof(*r));
		if (!r)
			return NULL;
		r->tx_region = region_zero(NULL);
		r->rx_region = region_zero(NULL);
		if (!r->tx_region || !r->rx_region) {
			if (r->tx_region)
				munmap(r->tx_region, RING_BYTES);
			if (r->rx_region)
				munmap(r->rx_region, RING_BYTES);
			free(r);
			return NULL;
		}
		r->all_next = sc->ring_all;
		sc->ring_all = r;
	}
	r->pool_next = NULL;
	/* The atomics a late reader may load: stored, not cleared by memset. */
	atomic_store_explicit(&r->peek_on, 0, memory_order_relaxed);
	atomic_store_explicit(&r->broken, false, memory_order_relaxed);
	atomic_store_explicit(&r->resume, false, memory_order_relaxed);
	atomic_store_explicit(&r->want_cons, false, memory_order_relaxed);
	atomic_store_explicit(&r->tx_cons, 0, memory_order_relaxed);
	atomic_store_explicit(&r->rx_cons, 0, memory_order_relaxed);
	memset(&r->tx_map, 0, sizeof(*r) - offsetof(struct soft_shmring, tx_map));
	r->tx_fd = r->peer_evfd = -1;
	return r;
}

void soft_shmring_ctx_fini(struct soft_ctx *sc)
{
	while (sc->ring_all) {
		struct soft_shmring *r = sc->ring_all;

		sc->ring_all = r->all_next;
		munmap(r->tx_region, RING_BYTES);
		munmap(r->rx_region, RING_BYTES);
		free(r);
	}
	sc->ring_pool = NULL;
	free(atomic_load_explicit(&sc->ring_set, memory_order_relaxed));
	atomic_store_explicit(&sc->ring_set, NULL, memory_order_relaxed);
	while (sc->ring_sets_old) {
		struct soft_ring_set *s = sc->ring_sets_old;

		sc->ring_sets_old = s->old_next;
		free(s);
	}
}

/* fd is an eventfd (the kernel names its anonymous inode so). */
static bool is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return strcmp(link, "anon_inode:[eventfd]") == 0;
}

static void doorbell(struct soft_shmring *r)
{
	uint64_t one = 1;

	if (r->peer_evfd < 0)
		return;
	r->stat[SOFT_RING_DOORBELLS]++;
	if (write(r->peer_evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the peer is woken anyway. */
	}
}

/* sc->ring_set with room for cap entries (sc->lock held): the same array,
 * or a larger copy published in its place (the old one kept for readers
 * that loaded it). false: no memory (the lock-free look is turned off). */
static bool set_reserve(struct soft_ctx *sc, uint32_t cap)
{
	struct soft_ring_set *s = atomic_load_explicit(&sc->ring_set, memory_order_relaxed), *t;
	uint32_t n = s ? atomic_load_explicit(&s->n, memory_order_relaxed) : 0;

	if (s && s->cap >= cap)
		return true;
	t = calloc(1, sizeof(*t) + cap * sizeof(t->r[0]));
	if (!t)
		return false;
	t->cap = cap;
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&t->r[i], atomic_load_explicit(&s->r[i], memory_order_relaxed),
				      memory_order_relaxed);
	atomic_store_explicit(&t->n, n, memory_order_relaxed);
	atomic_store_explicit(&sc->ring_set, t, memory_order_release);
	if (s) {
		s->old_next = sc->ring_sets_old;
		sc->ring_sets_old = s;
	}
	return true;
}

static void list_add(struct soft_ctx *sc, struct soft_conn *c)
{
	struct soft_ring_set *s;

	if (sc->n_rings == sc->cap_rings) {
		uint32_t n = sc->cap_rings ? sc->cap_rings * 2 : 8;
		struct soft_conn **a = realloc(sc->rings, n * sizeof(*a));
		if (!a)
			return;
		sc->rings = a;
		sc->cap_rings = n;
	}
	if (!set_reserve(sc, sc->cap_rings))
		atomic_store(&sc->ring_peek_off, true);
	s = atomic_load_explicit(&sc->ring_set, memory_order_relaxed);
	if (s && sc->n_rings < s->cap) {
		atomic_store_explicit(&s->r[sc->n_rings], c->ring, memory_order_release);
		atomic_store_explicit(&s->n, sc->n_rings + 1, memory_order_release);
	}
	sc->rings[sc->n_rings++] = c;
	atomic_store(&sc->rings_live, sc->n_rings);
}

/* c out of sc->rings and of the array the lock-free look walks (sc->lock
 * held, or the context closing); its ring's peek_on cleared first. */
static void list_del(struct soft_ctx *sc, struct soft_conn *c)
{
	struct soft_ring_set *s = atomic_load_explicit(&sc->ring_set, memory_order_relaxed);

	atomic_store_explicit(&c->ring->peek_on, 0, memory_order_release);
	for (uint32_t i = 0; i < sc->n_rings; i++) {
		if (sc->rings[i] == c) {
			uint32_t last = --sc->n_rings;

			sc->rings[i] = sc->rings[last];
			if (s && last < s->cap) {
				/* The last entry moves into the hole, then the count
				 * shrinks: a reader sees c's object (peek_on 0), the
				 * moved one twice, or not the moved one once. */
				atomic_store_explicit(&s->r[i], sc->rings[i]->ring, memory_order_release);
				atomic_store_explicit(&s->n, last, memory_order_release);
				atomic_store_explicit(&s->r[last], NULL, memory_order_release);
			}
			break;
		}
	}
	atomic_store(&sc->rings_live, sc->n_rings);
}

void soft_shmring_drop(struct soft_conn *c)
{
	soft_grant_revoke_conn(c); /* the connection closes: no copy into our memory from now on */
	list_del(c->sc, c);
}

void soft_shmring_free(struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;
	struct soft_ctx *sc = c->sc;

	if (!r)
		return;
	soft_grant_revoke_conn(c); /* the slots live in tx_map's header */
	soft_grant_free(c);
	c->grant_ours = c->grant_peer = NULL;
	c->grant_give = c->grant_take = false;
	list_del(sc, c); /* not dropped first at context close */
	if (r->tx_map)
		region_release(r->tx_region);
	if (r->rx_map)
		region_release(r->rx_region);
	if (r->tx_fd >= 0)
		close(r->tx_fd);
	if (r->peer_evfd >= 0)
		close(r->peer_evfd);
	r->tx_map = r->rx_map = NULL;
	r->tx = r->rx = NULL;
	r->pool_next = sc->ring_pool; /* for the next connection, never freed before the context closes */
	sc->ring_pool = r;
	c->ring = NULL;
	c->ring_tx_on = c->ring_rx_on = false;
}

/* The peer runs in our network namespace. Across namespaces the rings would
 * carry traffic past a link the administrator can take down (and that
 * tests/test-soft-faults.c takes down): such peers stay on TCP. */
static bool same_netns(uint32_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%u/ns/net", pid);
	return stat(path, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

void soft_shmring_start(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_shmring *r;

	(void)q;
	if (c->ring || !c->shm_pull || !c->shm_push || !c->shm_ring_peer || !c->sc->shm_ring)
		return; /* a peer that did not offer rings never sees a ring message */
	r = ring_get(c->sc);
	if (!r)
		return;
	c->ring = r;
	list_add(c->sc, c);
	r->enabled = same_netns(c->shm_pid);
	if (!r->enabled)
		return; /* offers are answered "no" */
	r->tx_fd = memfd_create("rverbs-soft-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->tx_fd < 0)
		return;
	if (ftruncate(r->tx_fd, RING_BYTES) < 0 ||
	    fcntl(r->tx_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	if (!region_map(r->tx_region, r->tx_fd))
		goto fail;
	r->tx_map = r->tx_region;
	r->tx = (struct ring_hdr *)r->tx_map;
	{
		struct stat st;
		if (fstat(r->tx_fd, &st) == 0)
			r->tx_key = (uint64_t)st.st_ino;
	}
	r->offer_due = true;
	return;
fail:
	close(r->tx_fd);
	r->tx_fd = -1;
}

/* The peer's ring: its memfd, sealed against shrinking, of our size. */
static bool map_peer_ring(struct soft_conn *c, uint32_t num)
{
	struct soft_shmring *r = c->ring;
	int fd = soft_shm_dup_fd(c, num), seals;
	struct stat st;
	bool ok;

	if (fd < 0)
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) < 0 || st.st_size != (off_t)RING_BYTES) {
		close(fd);
		return false;
	}
	ok = region_map(r->rx_region, fd);
	close(fd);
	if (!ok)
		return false;
	r->rx_map = r->rx_region;
	r->rx = (struct ring_hdr *)r->rx_map;
	r->rx_key = (uint64_t)st.st_ino;
	atomic_store_explicit(&r->rx_cons, 0, memory_order_relaxed);
	return true;
}

static bool take_peer_evfd(struct soft_conn *c, uint32_t num)
{
	struct soft_shmring *r = c->ring;
	int fd;

	if (r->peer_evfd >= 0)
		return true;
	fd = soft_shm_dup_fd(c, num);
	if (fd < 0)
		return false;
	if (!is_eventfd(fd)) {
		close(fd);
		return false;
	}
	/* Never block on it (it is the peer's description: that is its business). */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	r->peer_evfd = fd;
	return true;
}

/* Both directions on rings and the peer takes frames without CRC: stop
 * computing it (c->crc is only read for our framing and for TCP frames, and
 * none come over TCP any more). The ring is memory: the CRC guarded nothing
 * there but fault injection's "corrupt", which seals one before its flip
 * (fault.c). Every frame is still decoded and checked as before. */
static void crc_off_when_both(struct soft_conn *c)
{
	if (c->ring->tx_nocrc && c->ring_tx_on && c->ring_rx_on && c->crc) {
		c->crc = false;
		c->ring_crc_off = true;
	}
}

static bool ring_ctl_got(struct soft_qp *q, struct soft_conn *c, const uint8_t *p)
{
	struct soft_shmring *r = c->ring;
	uint32_t a, b;

	memcpy(&a, p + 4, 4);
	memcpy(&b, p + 8, 4);
	if (!r)
		return false;
	switch (p[0]) {
	case CTL_OFFER:
		if (r->rx_map || r->answer_due)
			return false;
		r->answer_ok = r->enabled && map_peer_ring(c, a) && take_peer_evfd(c, b);
		r->rx_nocrc = r->answer_ok && (p[1] & RING_NOCRC);
		c->grant_take = r->answer_ok && c->sc->shm_direct;
		if (c->grant_take) {
			c->grant_peer = r->rx_map + RING_GRANT_OFF;
			c->grant_area_len = RING_HDR - RING_GRANT_OFF;
		}
		if (!r->answer_ok && r->rx_map) {
			region_release(r->rx_region);
			r->rx_map = NULL;
			r->rx = NULL;
		}
		r->answer_due = true;
		return true;
	case CTL_ANSWER:
		if (!r->offered || r->switch_due || c->ring_tx_on)
			return false;
		r->offered = false;
		close(r->tx_fd); /* the peer holds its own descriptor now */
		r->tx_fd = -1;
		if ((p[1] & 1u) && take_peer_evfd(c, a)) {
			r->switch_due = true;
			r->tx_nocrc = (p[1] & RING_NOCRC) != 0;
			c->grant_give = (p[1] & RING_GRANTS) && c->sc->shm_direct;
			if (c->grant_give) {
				c->grant_ours = r->tx_map + RING_GRANT_OFF;
				c->grant_area_len = RING_HDR - RING_GRANT_OFF;
			}
		} else {
			region_release(r->tx_region);
			r->tx_map = NULL;
			r->tx = NULL;
		}
		return true;
	case CTL_SWITCH:
		if (!r->rx_map || c->ring_rx_on)
			return false;
		c->ring_rx_on = true;
		/* The lock-free look starts with this direction: its mapping
		 * and rx_cons are in place (release). */
		atomic_fetch_or_explicit(&r->peek_on, PEEK_RX, memory_order_release);
		rv_log(RV_LOG_INFO, "soft0: QP 0x%x: frames from QP 0x%x now arrive through a shared-memory ring",
		       q->qpn, q->peer_qpn);
		crc_off_when_both(c);
		return true;
	default:
		return false;
	}
}

bool soft_shmring_ctl_got(struct soft_qp *q, struct soft_conn *c, const uint8_t *p, size_t len)
{
	int rc;

	if (len == SOFT_SHM_CTL_LEN && p[0] >= CTL_OFFER && p[0] <= CTL_SWITCH)
		return c->shm_peer && !p[2] && !p[3] && c->shm_step == 3 && ring_ctl_got(q, c, p);
	if (len == SOFT_SHM_CTL_LEN && p[0] == SOFT_CTL_GRANT) {
		uint32_t a, b;
		memcpy(&a, p + 4, 4);
		memcpy(&b, p + 8, 4);
		/* Only to a side that said it takes grants, from the ring of a live agreement. */
		return c->shm_peer && !p[1] && !p[2] && !p[3] && c->shm_step == 3 && c->ring && c->ring_rx_on &&
		       c->grant_take && soft_grant_got(q, c, a, b);
	}
	rc = soft_shm_ctl_got(q, c, p, len);
	if (rc == SOFT_SHM_AGREED)
		soft_shmring_start(q, c); /* both directions hold: rings for every frame */
	return rc != SOFT_SHM_REFUSED;
}

void soft_shmring_put_ctl(struct soft_conn *c, uint8_t kind, uint8_t flag, uint32_t a, uint32_t b)
{
	uint8_t pay[SOFT_SHM_CTL_LEN];

	memset(pay, 0, sizeof(pay));
	pay[0] = kind;
	pay[1] = flag;
	memcpy(pay + 4, &a, 4);
	memcpy(pay + 8, &b, 4);
	soft_tx_emit_shm_ctl(c, pay);
}

static void put_ctl(struct soft_conn *c, uint8_t kind, uint8_t flag, uint32_t a, uint32_t b)
{
	soft_shmring_put_ctl(c, kind, flag, a, b);
}

bool soft_shmring_tx_ctl(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;

	if (r->answer_due) {
		r->answer_due = false;
		put_ctl(c, CTL_ANSWER,
			(uint8_t)((r->answer_ok ? 1u : 0u) | (r->rx_nocrc ? RING_NOCRC : 0u) |
				  (c->grant_take ? RING_GRANTS : 0u)),
			(uint32_t)c->sc->bell_fd, 0);
		return true;
	}
	if (r->offer_due) {
		r->offer_due = false;
		r->offered = true;
		put_ctl(c, CTL_OFFER, RING_NOCRC, (uint32_t)r->tx_fd, (uint32_t)c->sc->bell_fd);
		return true;
	}
	/* Switch at a message boundary: the zero-length WRITE that follows must
	 * not fall inside a message (rx.c counts a WRITE's length up to its last FPDU). */
	if (r->switch_due && q->tx_off == 0) {
		struct rv_fpdu f;
		int n;

		r->switch_due = false;
		put_ctl(c, CTL_SWITCH, 0, 0, 0);
		c->ring_tcp_end = c->tx_len;
		c->ring_tx_on = true;
		atomic_fetch_or_explicit(&r->peek_on, PEEK_TX, memory_order_release);
		c->fpdu_payload = SOFT_FPDU_PAYLOAD; /* page-sized frames: several fit in the ring */
		/* First ring frame: its consumption confirms what went over TCP. */
		memset(&f, 0, sizeof(f));
		f.opcode = RV_RDMAP_WRITE;
		f.tagged = true;
		f.last = true;
		n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
		if (n > 0)
			c->tx_len += (size_t)n;
		rv_log(RV_LOG_INFO, "soft0: QP 0x%x: frames to QP 0x%x now go through a shared-memory ring%s", q->qpn,
		       q->peer_qpn, r->tx_nocrc ? " (no CRC once both directions are on rings)" : "");
		crc_off_when_both(c);
		return true;
	}
	return false;
}

/* The producer side found the peer's consumer index impossible. */
static void tx_broken(struct soft_conn *c, const char *why)
{
	struct soft_qp *q = c->qp;

	c->ring->broken = true;
	if (!q)
		return;
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: the shared-memory ring to QP 0x%x is corrupt (%s); its work "
	       "completes with RV_WC_BAD_RESP_ERR and the QP is in the error state", q->qpn, q->peer_qpn, why);
	soft_qp_fail(q, q->sq_head, RV_WC_BAD_RESP_ERR, RV_WC_WR_FLUSH_ERR, false);
	q->kick = true; /* run_kicks closes the connection under sc->lock */
	soft_kick(q->sc);
}

/* The consumer index the peer published, checked: it only moves forward,
 * never past what we produced. false: the ring is broken. */
static bool tx_cons_load(struct soft_conn *c, uint32_t *out)
{
	struct soft_shmring *r = c->ring;
	uint32_t cons = atomic_load_explicit(&r->tx->cons, memory_order_acquire);

	TSAN_ACQUIRE(r->tx_key);

	uint32_t seen = atomic_load_explicit(&r->tx_cons, memory_order_relaxed);

	if (cons - seen > r->tx_prod - seen) {
		tx_broken(c, "consumer index out of range");
		return false;
	}
	if (cons != seen) {
		atomic_store_explicit(&r->tx_cons, cons, memory_order_relaxed);
		/* The peer processed frames; the clock is read later (soft_shmring_poll). */
		atomic_store_explicit(&r->progressed, true, memory_order_relaxed);
	}
	*out = cons;
	return true;
}

/* Whether a busy poller must read the consumer index (q->lock held). The
 * progress thread reads it on every pass (retry.c's clock, unsignaled WRs),
 * so nothing waits on it for longer than its 1 ms nap while a poller runs. */
static void update_want(struct soft_qp *q, struct soft_conn *c, uint32_t cons)
{
	struct soft_shmring *r = c->ring;
	bool want = (int32_t)(r->want_upto - cons) > 0 || c->tx_len > c->tx_off ||
		    (q && q->sq_tail - q->sq_head >= q->sq_size / 2);

	if (atomic_load_explicit(&r->want_cons, memory_order_relaxed) == want)
		return;
	atomic_store_explicit(&r->want_cons, want, memory_order_relaxed);
	if (want && r->tx && atomic_load(&c->sc->ring_waiters) &&
	    !atomic_load_explicit(&r->tx->prod_sleeping, memory_order_relaxed)) {
		/* A waiter sleeps on the doorbell without the producer side set
		 * (set_sleeping): set it, then look, as the fence protocol goes;
		 * consumed meanwhile: ring the doorbell ourselves. */
		uint64_t one = 1;

		atomic_store(&r->tx->prod_sleeping, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&r->tx->cons, memory_order_acquire) != cons &&
		    write(c->sc->bell_fd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is saturated, the waiter is woken anyway. */
		}
	}
}

void soft_shmring_want_cons(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;

	if (!r || !c->ring_tx_on)
		return;
	r->want_upto = r->tx_prod;
	update_want(q, c, atomic_load_explicit(&r->tx_cons, memory_order_relaxed));
}

/* WRs whose last frame the peer consumed are confirmed (q->lock held). */
static void reap(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;
	uint32_t cons;
	bool any = false;

	if (!c->ring_tx_on || r->broken || !tx_cons_load(c, &cons))
		return;
	while (r->mark_head != r->mark_tail) {
		const struct ring_mark *m = &r->marks[r->mark_head % RING_MARKS];
		if ((int32_t)(cons - m->prod) < 0)
			break;
		if ((int32_t)(q->sq_confirmed - m->sq) < 0)
			q->sq_confirmed = m->sq;
		r->mark_head++;
		any = true;
	}
	if (any)
		soft_sq_complete(q);
	update_want(q, c, cons);
}

static void add_mark(struct soft_shmring *r, uint32_t sq)
{
	if (r->mark_tail != r->mark_head) {
		struct ring_mark *last = &r->marks[(r->mark_tail - 1) % RING_MARKS];
		if (last->sq == sq || r->mark_tail - r->mark_head == RING_MARKS) {
			/* Nothing new to confirm, or full: the last mark confirms later. */
			last->prod = r->tx_prod;
			last->sq = sq;
			return;
		}
	}
	r->marks[r->mark_tail % RING_MARKS].prod = r->tx_prod;
	r->marks[r->mark_tail % RING_MARKS].sq = sq;
	r->mark_tail++;
}

/* The bytes a record of a flen-byte frame takes: its length word and the
 * frame, 8-byte aligned. */
static uint32_t rec_len(size_t flen)
{
	return (uint32_t)((4 + flen + 7) & ~(size_t)7);
}

uint8_t *soft_shmring_frame_at(struct soft_conn *c, size_t flen)
{
	struct soft_shmring *r = c->ring;
	uint32_t rec = rec_len(flen), off = r->tx_prod % RING_DATA;
	uint32_t skip = RING_DATA - off < rec ? RING_DATA - off : 0;
	uint32_t cons = atomic_load_explicit(&r->tx_cons, memory_order_relaxed);

	/* Only with nothing in c->tx (which would go first) and room as far
	 * as the consumer index seen last tells: a full ring is
	 * soft_shmring_flush's (it reaps, then fills with the room freed). */
	if (r->broken || c->tx_len || c->ring_tcp_end || flen < 8 || flen > RING_FRAME_MAX ||
	    RING_DATA - (r->tx_prod - cons) < skip + rec)
		return NULL;
	return r->tx_map + RING_HDR + (skip ? 0 : off) + 4;
}

/* The records produced so far are the consumer's; its doorbell if it sleeps. */
static void publish(struct soft_shmring *r)
{
	TSAN_RELEASE(r->tx_key);
	atomic_store_explicit(&r->tx->prod, r->tx_prod, memory_order_release);
	r->tx_pub = r->tx_prod;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&r->tx->cons_sleeping, memory_order_relaxed))
		doorbell(r);
}

void soft_shmring_framed(struct soft_conn *c, size_t flen, bool now)
{
	struct soft_shmring *r = c->ring;
	uint32_t rec = rec_len(flen), off = r->tx_prod % RING_DATA;

	if (RING_DATA - off < rec) {
		atomic_store_explicit((_Atomic uint32_t *)(void *)(r->tx_map + RING_HDR + off), RING_WRAP,
				      memory_order_relaxed);
		r->tx_prod += RING_DATA - off;
		off = 0;
	}
	atomic_store_explicit((_Atomic uint32_t *)(void *)(r->tx_map + RING_HDR + off), (uint32_t)flen,
			      memory_order_relaxed);
	r->tx_prod += rec;
	r->tx_unpub++;
	r->stat[SOFT_RING_IN_PLACE]++;
	if (now)
		publish(r); /* the marks and want_cons follow in soft_shmring_flush */
}

/* The send WRs framed up to q->sq_tx are in the ring: a mark confirms them
 * once the consumer passed it, and a signaled one among them makes a busy
 * poller read the consumer index (want_upto). */
static inline void mark_sent(struct soft_qp *q, struct soft_shmring *r)
{
	uint32_t i = r->sq_scanned;

	if ((int32_t)(i - q->sq_head) < 0 || (int32_t)(q->sq_tx - i) < 0)
		i = q->sq_head;
	for (; i != q->sq_tx; i++)
		if (q->sq[i & q->sq_mask].signaled)
			r->want_upto = r->tx_prod; /* the application polls for it */
	r->sq_scanned = q->sq_tx;
	add_mark(r, q->sq_tx);
	q->sq_covered = q->sq_tx; /* no zero-length READ needed (tx.c) */
}

bool soft_shmring_flush(struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;
	/* Records tx.c framed in place come first: c->tx was empty then. */
	uint32_t cons, moved = r->tx_unpub;

	r->tx_unpub = 0;
	if (r->broken) {
		c->tx_off = c->tx_len = c->ring_tcp_end = 0; /* nothing reaches a broken ring */
		return true;
	}
	if (c->tx_len == 0 && !moved)
		return true; /* soft_tx_push flushes before it frames: nothing yet */
	/* The frames up to the switch still go over TCP (never behind records
	 * framed in place: soft_shmring_frame_at refuses while they wait). */
	while (c->ring_tcp_end > c->tx_off) {
		ssize_t n = send(c->fd, c->tx + c->tx_off, c->ring_tcp_end - c->tx_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				r->tx_unpub += moved;
				return true;
			}
			c->tx_off = c->tx_len = c->ring_tcp_end = 0;
			return false;
		}
		c->tx_off += (size_t)n;
		if (c->qp)
			soft_retry_progress(c->qp);
	}
	c->ring_tcp_end = 0;
	/* The peer's consumer index is on a line the peer writes: it is read
	 * only when the index we saw last leaves too little room. Completions
	 * do not wait for it: ring_ready sees the index move and the poller or
	 * the progress thread reaps. Whoever reads it confirms first, then fills
	 * with it: it also uses the room it frees (ring_ready relies on it). */
	bool fresh = false;

	cons = atomic_load_explicit(&r->tx_cons, memory_order_relaxed);
	while (c->tx_off < c->tx_len) {
		const uint8_t *fr = c->tx + c->tx_off;
		size_t flen = rv_wire_fpdu_peek(fr, c->tx_len - c->tx_off);
		uint32_t rec = rec_len(flen), off = r->tx_prod % RING_DATA;
		uint32_t skip = RING_DATA - off < rec ? RING_DATA - off : 0;

		if (flen == 0 || flen > RING_FRAME_MAX || flen > c->tx_len - c->tx_off) {
			/* Cannot happen: tx.c frames whole FPDUs of at most one page after the switch. */
			tx_broken(c, "a frame larger than a ring record");
			c->tx_off = c->tx_len = 0;
			return true;
		}
		if (RING_DATA - (r->tx_prod - cons) < skip + rec) {
			if (fresh)
				break; /* full: the rest waits for the consumer */
			fresh = true;
			if (c->qp)
				reap(c->qp, c);
			else if (!tx_cons_load(c, &cons))
				return true;
			if (r->broken)
				return true;
			cons = atomic_load_explicit(&r->tx_cons, memory_order_relaxed);
			continue;
		}
		if (skip) {
			atomic_store_explicit((_Atomic uint32_t *)(void *)(r->tx_map + RING_HDR + off), RING_WRAP,
					      memory_order_relaxed);
			r->tx_prod += skip;
			off = 0;
		}
		ring_copy(r->tx_map + RING_HDR + off + 4, fr, flen);
		atomic_store_explicit((_Atomic uint32_t *)(void *)(r->tx_map + RING_HDR + off), (uint32_t)flen,
				      memory_order_relaxed);
		r->tx_prod += rec;
		c->tx_off += flen;
		moved++;
	}
	if (moved) {
		r->stat[SOFT_RING_TX_FRAMES] += moved;
		if (r->tx_pub != r->tx_prod)
			publish(r);
	}
	if (c->tx_off == c->tx_len) {
		c->tx_off = c->tx_len = 0;
		if (c->qp && moved)
			mark_sent(c->qp, r);
	}
	update_want(c->qp, c, atomic_load_explicit(&r->tx_cons, memory_order_relaxed));
	return true;
}

/* soft_tx_ring_done's flush (q->lock held): every WR of the post was framed
 * in place by soft_tx_ring_now, which found c->tx empty, nothing waiting for
 * TCP and the ring not broken (soft_shmring_frame_at), and q->lock kept it
 * so. soft_shmring_flush's copy of c->tx into the ring, and its checks for
 * it, then have nothing to do: only the publish (when the last WR of the
 * post was not framed here), the marks and want_cons remain. Anything else
 * takes the whole flush. */
void soft_shmring_framed_done(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;
	uint32_t moved = r->tx_unpub;

	if (RV_UNLIKELY(!moved || r->broken || c->tx_len || c->ring_tcp_end)) {
		soft_shmring_flush(c);
		return;
	}
	r->tx_unpub = 0;
	r->stat[SOFT_RING_TX_FRAMES] += moved;
	if (r->tx_pub != r->tx_prod)
		publish(r);
	mark_sent(q, r);
	update_want(q, c, atomic_load_explicit(&r->tx_cons, memory_order_relaxed));
}

/* The consumer found the peer's ring corrupt: TERMINATE, QP to ERR (rx.c). */
static void rx_broken(struct soft_qp *q, struct soft_conn *c, const char *why)
{
	rv_log(RV_LOG_WARN, "soft0: QP 0x%x: the shared-memory ring from QP 0x%x is corrupt (%s)", q->qpn,
	       q->peer_qpn, why);
	c->ring->stat[SOFT_RING_BAD]++;
	soft_rx_bad_frame(q, -EMSGSIZE);
}

/* Consume what the peer put in its ring; confirm our WRs first when `cons`
 * (the progress thread, a poller someone waits for: want_cons). */
static void ring_rx(struct soft_qp *q, struct soft_conn *c, bool cons)
{
	struct soft_shmring *r = c->ring;
	uint8_t *data;
	uint8_t buf[RING_FRAME_MAX];
	uint32_t prod, done = 0, rc;

	if (c->ring_tx_on && (cons || c->tx_len > c->tx_off)) {
		reap(q, c);
		if (c->tx_len > c->tx_off && !soft_fault_held(c))
			soft_shmring_flush(c); /* the room reap saw is used now */
	}
	if (!c->ring_rx_on || q->conn != c)
		return;
	data = r->rx_map + RING_HDR; /* mapped once ring_rx_on: not before (our TX ring may be up alone) */
	/* rc: our consumer index (one writer, under q->lock; ring_ready reads it). */
	rc = atomic_load_explicit(&r->rx_cons, memory_order_relaxed);
	prod = atomic_load_explicit(&r->rx->prod, memory_order_acquire);
	TSAN_ACQUIRE(r->rx_key);
	if (prod - rc > RING_DATA) {
		rx_broken(q, c, "producer index out of range");
		return;
	}
	while (q->conn == c && !c->rx_stalled && prod != rc && done < RING_BUDGET) {
		uint32_t off = rc % RING_DATA, avail = prod - rc, rec;
		/* One load of the length; the frame is copied out before it is read. */
		uint32_t len = atomic_load_explicit((_Atomic uint32_t *)(void *)(data + off), memory_order_relaxed);
		struct rv_fpdu f;
		int n, res;

		if (len == RING_WRAP) {
			if (off == 0 || RING_DATA - off > avail) {
				rx_broken(q, c, "misplaced wrap marker");
				return;
			}
			rc += RING_DATA - off;
			atomic_store_explicit(&r->rx_cons, rc, memory_order_relaxed);
			TSAN_RELEASE(r->rx_key);
			atomic_store_explicit(&r->rx->cons, rc, memory_order_release);
			continue;
		}
		rec = (4 + len + 7) & ~7u;
		if (len < 8 || len > RING_FRAME_MAX || rec > RING_DATA - off || rec > avail) {
			rx_broken(q, c, "record length out of range");
			return;
		}
		ring_copy(buf, data + off + 4, len);
		/* Without CRC agreed, a frame whose CRC field is not zero is still
		 * checked (fault injection's corrupt, a producer that sealed anyway). */
		n = rv_wire_fpdu_decode_crc(buf, len, &f,
					    r->rx_nocrc ? (buf[len - 4] | buf[len - 3] | buf[len - 2] | buf[len - 1]) != 0
							: c->crc || c->ring_crc_off);
		if (n <= 0 || (uint32_t)n != len) {
			r->stat[SOFT_RING_BAD]++;
			soft_rx_bad_frame(q, n < 0 ? n : -EMSGSIZE);
			return;
		}
		c->may_send = true;
		res = soft_rx_fpdu(q, &f);
		if (res > 0) {
			c->rx_stalled = true; /* stays at the head, unconsumed, until a receive WR comes */
			break;
		}
		if (res < 0)
			return; /* the QP failed on it: not consumed, its TERMINATE names it */
		rc += rec;
		atomic_store_explicit(&r->rx_cons, rc, memory_order_relaxed);
		TSAN_RELEASE(r->rx_key);
		atomic_store_explicit(&r->rx->cons, rc, memory_order_release);
		done++;
		if (prod == rc) {
			prod = atomic_load_explicit(&r->rx->prod, memory_order_acquire); /* more since? */
			TSAN_ACQUIRE(r->rx_key);
		}
		if (prod - rc > RING_DATA) {
			rx_broken(q, c, "producer index out of range");
			return;
		}
	}
	if (done) {
		r->stat[SOFT_RING_RX_FRAMES] += done;
		atomic_store_explicit(&r->progressed, true, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&r->rx->prod_sleeping, memory_order_relaxed))
			doorbell(r);
	}
}

void soft_shmring_rx(struct soft_qp *q, struct soft_conn *c)
{
	ring_rx(q, c, true);
}

bool soft_shmring_resume(struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;

	if (!r || !c->ring_rx_on)
		return false;
	atomic_store_explicit(&r->resume, true, memory_order_relaxed);
	/* Against soft_shmring_sleep, which sets "sleeping" and then looks at
	 * the rings (ring_ready sees `resume`): either it sees the flag, or we
	 * see it asleep and kick it. Awake, it passes within a millisecond (a
	 * poller sooner). */
	atomic_thread_fence(memory_order_seq_cst);
	return !atomic_load_explicit(&c->sc->ring_sleeping, memory_order_relaxed);
}

/* The connection closes (soft_conn_detach, graceful): a TERMINATE the ring
 * has no room for (its consumer is slow or waits for a receive WR) goes over
 * TCP instead of being lost when the linger time ends. The frames framed
 * before it belong to WRs that failed with the QP: they are dropped. The
 * peer takes it after what its ring holds (soft_shmring_drain). */
void soft_shmring_closing(struct soft_qp *q, struct soft_conn *c)
{
	size_t n = q->term_len;

	if (!c->ring || !c->ring_tx_on || c->ring->broken)
		return;
	soft_shmring_flush(c); /* the room the consumer freed since */
	if (n == 0 || c->tx_len - c->tx_off < n || memcmp(c->tx + c->tx_len - n, q->term, n) != 0)
		return; /* no TERMINATE waits: it is in the ring, or there is none */
	memmove(c->tx, c->tx + c->tx_len - n, n);
	c->tx_off = 0;
	c->tx_len = n;
	c->ring_tcp_end = n;
	rv_log(RV_LOG_INFO, "soft0: QP 0x%x: the shared-memory ring to QP 0x%x is full: its TERMINATE goes "
	       "over TCP", q->qpn, q->peer_qpn);
}

bool soft_shmring_drain(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_shmring *r = c->ring;

	/* Bounded: a ring holds at most RING_DATA / 8 records, RING_BUDGET a pass. */
	for (uint32_t i = 0; i <= RING_DATA / 8 / RING_BUDGET && q->conn == c && !c->rx_stalled; i++) {
		if (atomic_load_explicit(&r->rx->prod, memory_order_acquire) ==
		    atomic_load_explicit(&r->rx_cons, memory_order_relaxed))
			return true;
		ring_rx(q, c, true);
	}
	return q->conn == c && !c->rx_stalled;
}

/* "sleeping" in every ring: as consumer (the peer rings after producing)
 * and as producer (after consuming). While a blocked waiter sleeps on the
 * doorbell, the producer side only where someone waits for the consumer
 * index (want_cons: a signaled WR, frames waiting for room): otherwise the
 * peer's consumption of each of our messages would wake the waiter for
 * nothing, two wake-ups per message instead of one. */
static void set_sleeping(struct soft_ctx *sc, uint32_t v)
{
	bool waiters = v && atomic_load(&sc->ring_waiters);

	for (uint32_t i = 0; i < sc->n_rings; i++) {
		struct soft_shmring *r = sc->rings[i]->ring;
		if (r->rx)
			atomic_store(&r->rx->cons_sleeping, v);
		if (r->tx)
			atomic_store(&r->tx->prod_sleeping,
				     waiters ? (uint32_t)atomic_load_explicit(&r->want_cons, memory_order_relaxed) : v);
	}
	sc->ring_sleeping = v != 0;
}

/* Work for this connection now: frames to consume, or the consumer moved
 * (looked at only when `cons` or someone waits for it: want_cons). */
static inline __attribute__((always_inline)) bool ring_ready(const struct soft_conn *c, bool cons)
{
	const struct soft_shmring *r = c->ring;

	if (r->broken)
		return false;
	if (c->ring_rx_on && c->rx_stalled && atomic_load_explicit(&r->resume, memory_order_relaxed))
		return true;
	if (c->ring_rx_on && !c->rx_stalled) {
		uint32_t rc = atomic_load_explicit(&r->rx_cons, memory_order_relaxed);
		const uint8_t *next = r->rx_map + RING_HDR + rc % RING_DATA;

		/* The lines the next record will be in, fetched together with the
		 * producer index instead of after it: one cache miss when a frame
		 * comes, not two in a row (a hint: nothing is read from them here). */
		__builtin_prefetch(next);
		__builtin_prefetch(next + 64);
		if (atomic_load_explicit(&r->rx->prod, memory_order_acquire) != rc)
			return true;
	}
	return c->ring_tx_on && (cons || atomic_load_explicit(&r->want_cons, memory_order_relaxed)) &&
	       atomic_load_explicit(&r->tx->cons, memory_order_acquire) !=
		       atomic_load_explicit(&r->tx_cons, memory_order_relaxed);
}

/* ring_ready(c, false) for soft_shmring_peek, from the ring object alone
 * and without a lock ("Teardown against the lock-free look"). A stalled
 * ring with frames counts as work (the connection's rx_stalled is not read
 * here): its locked pass finds none, as every empty poll did before. */
static bool peek_ready(struct soft_shmring *r)
{
	uint32_t on = atomic_load_explicit(&r->peek_on, memory_order_acquire);

	if (!on || atomic_load_explicit(&r->broken, memory_order_relaxed))
		return false;
	if (on & PEEK_RX) {
		const struct ring_hdr *rx = (const struct ring_hdr *)r->rx_region;
		uint32_t rc = atomic_load_explicit(&r->rx_cons, memory_order_relaxed);
		const uint8_t *next = r->rx_region + RING_HDR + rc % RING_DATA;

		if (atomic_load_explicit(&r->resume, memory_order_relaxed))
			return true;
		/* As ring_ready: the record's lines with the index (a hint). */
		__builtin_prefetch(next);
		__builtin_prefetch(next + 64);
		if (atomic_load_explicit(&rx->prod, memory_order_relaxed) != rc)
			return true;
	}
	if ((on & PEEK_TX) && atomic_load_explicit(&r->want_cons, memory_order_relaxed)) {
		const struct ring_hdr *tx = (const struct ring_hdr *)r->tx_region;

		return atomic_load_explicit(&tx->cons, memory_order_relaxed) !=
		       atomic_load_explicit(&r->tx_cons, memory_order_relaxed);
	}
	return false;
}

bool soft_shmring_peek(struct soft_ctx *sc, bool busy)
{
	struct soft_ring_set *s;
	uint32_t n;

	/* soft_shmring_poller_locked clears "sleeping" for a busy poller. */
	if (busy && atomic_load_explicit(&sc->ring_sleeping, memory_order_relaxed))
		return true;
	s = atomic_load_explicit(&sc->ring_set, memory_order_acquire);
	if (!s || atomic_load_explicit(&sc->ring_peek_off, memory_order_relaxed))
		return true;
	n = atomic_load_explicit(&s->n, memory_order_acquire);
	if (n > s->cap)
		n = s->cap;
	for (uint32_t i = 0; i < n; i++) {
		struct soft_shmring *r = atomic_load_explicit(&s->r[i], memory_order_acquire);

		if (r && peek_ready(r))
			return true;
	}
	return false;
}

/* Anything for soft_tx_push after the ring was read (q->lock held): frames
 * waiting, a TERMINATE, READ responses, WRs not framed yet, the ring's setup
 * messages; otherwise it is skipped (a 64 B ping-pong has none). */
static bool tx_work(const struct soft_qp *q, const struct soft_conn *c)
{
	return c->tx_len || q->term_pending || q->ird_head != q->ird_tail || q->sq_tx != q->sq_tail ||
	       q->need_rtr || c->shm_send_ctl || c->rx_stalled || !c->ring_tx_on || !c->ring_rx_on || c->grant_due;
}

void soft_shmring_poll(struct soft_ctx *sc, bool awake)
{
	/* The progress thread clears "sleeping" when it wakes; a busy poller
	 * clears it only together with a wake-up (soft_shmring_poller), or the
	 * sleeping thread would miss the next doorbell. */
	if (awake && atomic_load(&sc->ring_waiters)) {
		/* A blocked waiter sleeps on the doorbell: keep "sleeping" set,
		 * also in rings that came up since it looked (the loop below
		 * looks again after the fence). */
		set_sleeping(sc, 1);
		atomic_thread_fence(memory_order_seq_cst);
	} else if (awake && sc->ring_sleeping) {
		set_sleeping(sc, 0);
	}
	/* Backwards: a connection that fails leaves the list (swap with the last, done already). */
	for (uint32_t i = sc->n_rings; i-- > 0;) {
		struct soft_conn *c;
		struct soft_qp *q;

		if (i >= sc->n_rings)
			continue;
		c = sc->rings[i];
		q = c->qp;
		if (!q)
			continue;
		/* Progress for retry.c, stamped here (the progress thread runs this
		 * before every timer tick) rather than a clock read per frame. */
		if (awake && atomic_exchange_explicit(&c->ring->progressed, false, memory_order_relaxed)) {
			soft_lock_take(&q->lock);
			soft_retry_progress(q);
			soft_lock_give(&q->lock);
		}
		if (!ring_ready(c, awake))
			continue;
		soft_lock_take(&q->lock);
		if (q->conn == c && c->rx_stalled && atomic_exchange(&c->ring->resume, false)) {
			/* As run_kicks: what TCP brought (a TERMINATE after the switch), then the ring. */
			c->rx_stalled = false;
			soft_rx_process(q, c);
			if (q->conn == c)
				soft_tx_push(q);
		} else if (q->conn == c) {
			ring_rx(q, c, awake || atomic_load_explicit(&c->ring->want_cons, memory_order_relaxed));
			if (q->conn == c && tx_work(q, c))
				soft_tx_push(q); /* READ responses, a TERMINATE, what waited for room */
		}
		soft_qp_check_overflow(q);
		soft_lock_give(&q->lock);
	}
}

/* Empty polls by this thread, per context (hashed): the clock is read on
 * every 64th, which is often enough to say "a poller is busy" (RING_IDLE_US,
 * 1 ms: 64 empty polls take a few microseconds; every 16th was 6 % of a
 * busy-poll ping-pong's samples). */
static _Thread_local uint8_t ring_polls[16] __attribute__((tls_model("initial-exec")));

void soft_shmring_poller_stamp(struct soft_ctx *sc, bool busy)
{
	uint8_t *n = &ring_polls[((uintptr_t)sc >> 6) % sizeof(ring_polls)];

	if (busy && (++*n & 63u) == 1)
		atomic_store_explicit(&sc->ring_poll_at, soft_now_us(), memory_order_relaxed);
}

void soft_shmring_poller(struct soft_ctx *sc, bool busy)
{
	soft_shmring_poller_stamp(sc, busy);
	if (soft_lock_try(&sc->lock) != 0)
		return;
	soft_shmring_poller_locked(sc, busy);
	soft_lock_give(&sc->lock);
}

void soft_shmring_poller_locked(struct soft_ctx *sc, bool busy)
{
	if (busy && sc->ring_sleeping && !sc->stop && !atomic_load(&sc->ring_waiters)) {
		/* A busy poller is back while the progress thread sleeps with
		 * "sleeping" set: until that thread gets a CPU (on a small machine
		 * the pollers hold them), every frame would cost the peer a
		 * doorbell. Clear it here and wake the thread once (it then naps,
		 * RING_IDLE_US, and sets "sleeping" again when the poller stops). */
		uint64_t one = 1;

		atomic_store_explicit(&sc->ring_poll_at, soft_now_us(), memory_order_relaxed);
		set_sleeping(sc, 0);
		if (write(sc->evfd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is saturated, the thread is woken anyway. */
		}
	}
	if (!sc->stop)
		soft_shmring_poll(sc, false);
}

void soft_shmring_wake(struct soft_ctx *sc)
{
	uint64_t one = 1;

	/* The progress thread may be in its short naps without "sleeping" set
	 * (a poller was active): have it set it now, not a nap later. */
	if (atomic_exchange_explicit(&sc->ring_poll_at, 0, memory_order_relaxed) != 0 &&
	    write(sc->evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the thread is woken anyway. */
	}
}

/* The same protocol as soft_shmring_sleep's: "sleeping", the fence, one more
 * look; the producer publishes, fences, then reads the flag. One of the two
 * sees the other, so a frame never comes without a doorbell or a look. */
bool soft_shmring_wait_begin(struct soft_ctx *sc)
{
	atomic_fetch_add(&sc->ring_waiters, 1);
	set_sleeping(sc, 1);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t i = 0; i < sc->n_rings; i++)
		if (sc->rings[i]->qp && ring_ready(sc->rings[i], false))
			return true;
	return false;
}

void soft_shmring_wait_end(struct soft_ctx *sc)
{
	/* "sleeping" stays: the waiter is likely back soon (a ping-pong), and
	 * the next progress pass or busy poller clears it once none is. */
	atomic_fetch_sub(&sc->ring_waiters, 1);
}

int soft_shmring_sleep(struct soft_ctx *sc, int timeout)
{
	bool work = false;

	if (soft_now_us() - atomic_load_explicit(&sc->ring_poll_at, memory_order_relaxed) < RING_IDLE_US)
		return timeout < 1 ? timeout : 1; /* a poller consumes: look again soon, no doorbells */
	soft_lock_take(&sc->lock);
	set_sleeping(sc, 1);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t i = 0; i < sc->n_rings && !work; i++)
		work = sc->rings[i]->qp && ring_ready(sc->rings[i], true);
	soft_lock_give(&sc->lock);
	return work ? 0 : timeout;
}

int soft_shmring_stats(rv_qp *qp, uint64_t out[SOFT_RING_NSTATS])
{
	struct soft_qp *q = soft_qp_of(qp);
	struct soft_ctx *sc;

	if (!q)
		return -EINVAL;
	sc = q->sc;
	soft_lock_take(&sc->lock);
	soft_lock_take(&q->lock);
	memset(out, 0, SOFT_RING_NSTATS * sizeof(out[0]));
	if (q->conn && q->conn->ring) {
		memcpy(out, q->conn->ring->stat, sizeof(q->conn->ring->stat));
		soft_grant_stats(q->conn, out);
		out[SOFT_RING_STATE] = (q->conn->ring_tx_on ? 1u : 0u) | (q->conn->ring_rx_on ? 2u : 0u);
		out[SOFT_RING_CRC_OFF] = q->conn->ring_crc_off;
	}
	soft_lock_give(&q->lock);
	soft_lock_give(&sc->lock);
	return 0;
}

void *soft_shmring_debug_tx(rv_qp *qp, uint32_t *prod)
{
	struct soft_qp *q = soft_qp_of(qp);
	void *p = NULL;

	if (!q)
		return NULL;
	soft_lock_take(&q->lock);
	if (q->conn && q->conn->ring && q->conn->ring_tx_on) {
		p = q->conn->ring->tx_map;
		*prod = q->conn->ring->tx_prod;
	}
	soft_lock_give(&q->lock);
	return p;
}

int soft_shmring_debug_pool(rv_qp *qp, uint32_t *all, uint32_t *pooled)
{
	struct soft_qp *q = soft_qp_of(qp);
	struct soft_ctx *sc;

	if (!q)
		return -EINVAL;
	sc = q->sc;
	*all = *pooled = 0;
	soft_lock_take(&sc->lock);
	for (const struct soft_shmring *r = sc->ring_all; r; r = r->all_next)
		++*all;
	for (const struct soft_shmring *r = sc->ring_pool; r; r = r->pool_next)
		++*pooled;
	soft_lock_give(&sc->lock);
	return 0;
}
