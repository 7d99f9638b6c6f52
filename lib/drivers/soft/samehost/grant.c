/*
 * One-copy RDMA WRITEs between processes of one host (issue 22): the target
 * grants the peer memory it registered with REMOTE_WRITE, and the initiator
 * then does such a WRITE itself, with one memcpy into its mapping of the
 * target's memfd, instead of framing it into the ring for the target to
 * place (two copies) or naming it for process_vm_readv.
 *
 * Why a grant exposes nothing new: it is given only on a connection whose
 * same-host agreement holds (shm.c: the peer proved it holds the other end of
 * this connection) and whose rings are up, and taking the descriptor with
 * pidfd_getfd(2) needs ptrace permission (PTRACE_MODE_ATTACH) over the
 * target, which already allows writing any of its memory.
 *
 * Target (producer of the ring the initiator maps):
 *  - when it places a WRITE into an MR that rverbs allocated from a sealed
 *    memfd (rv_mr_alloc, lib/memory.c), with REMOTE_WRITE, in the QP's PD,
 *    on an RC QP in RTS with REMOTE_WRITE and both rings up, and the peer's
 *    ANSWER said it takes grants, it fills a slot of the grant area in the
 *    header page of its own ring (which the peer maps: RING_GRANT_OFF) with
 *    the MR's address, length and key, publishes a nonzero generation in it,
 *    and has tx.c send GRANT (SOFT_OP_SHM_CTL kind 7: the memfd's descriptor
 *    number, the slot) through the ring (soft_grant_next);
 *  - it revokes (generation 0) on rv_mr_dereg and rv_mr_rereg (verbs/driver.c),
 *    when rv_qp_modify takes the QP out of RTS or changes its access flags
 *    (verbs/qp.c), and when the connection closes (shmring.c);
 *    then it waits, bounded (GRANT_WAIT_US, and only while the peer lives),
 *    until the slot's "busy" word is clear: an honest initiator is not
 *    copying any more, so after rv_mr_dereg returns no write of it lands.
 *
 * Initiator:
 *  - on GRANT it reads the slot once, takes the descriptor (pidfd_getfd),
 *    checks that it is a memfd sealed against shrinking whose size covers the
 *    range, maps it shared, and checks the generation again (a grant revoked
 *    meanwhile may have had its descriptor number reused); anything wrong is
 *    refused quietly and its WRITEs take the ring as before;
 *  - a WRITE (not with immediate) whose rkey has a grant covering
 *    [raddr, raddr + len), on an RC QP in RTS whose send queue is empty (so
 *    an earlier WRITE in the ring cannot land after it, and completions stay
 *    in order), with no fault injection armed: its SGEs are checked as the
 *    framing checks them, then with "busy" set and the generation seen still
 *    live, memcpy into the mapping, "busy" cleared, and it completes at once.
 *    Its release store orders it before any later frame of the QP (a SEND
 *    after it finds the data there).
 *
 * Hostile peers: the slot is read once into locals and bounded; the
 * descriptor must be a memfd with F_SEAL_SHRINK of at least the range's size
 * (no SIGBUS under our copy); a slot index out of range is refused. A target
 * never trusts "busy" beyond its bounded wait; a hostile initiator gains
 * nothing it could not do with ptrace.
 *
 * Locks: the target's slots under sc->lock and q->lock (rx.c's placement, the
 * QP's modify, soft_grant_revoke_key takes both); the initiator's mappings
 * under q->lock (post_send, the ring's receive path).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <emmintrin.h>
#endif

#include "drivers/soft/completion.h"
#include "drivers/soft/soft.h"

#define GRANT_SLOTS 16u
#define GRANT_WAIT_US 5000 /* a target waits this long at most for a copy to finish */
#define GRANT_MAX_LEN ((uint64_t)1 << 46)

/* In the header page of the target's ring (shmring.c), one per grant. */
struct grant_slot {
	_Atomic uint64_t gen;  /* target: nonzero while the grant holds */
	_Atomic uint64_t addr; /* target: the MR's address (its memfd's offset 0) */
	_Atomic uint64_t len;  /* target: the MR's length */
	_Atomic uint32_t key;  /* target: the rkey */
	_Atomic uint32_t access; /* target: RV_ACCESS_REMOTE_WRITE and/or _READ (MR and QP both allow) */
	uint8_t pad0[32];
	_Atomic uint32_t busy; /* initiator: 1 while it checks gen and copies */
	uint8_t pad1[60];
};
_Static_assert(sizeof(struct grant_slot) == 128, "a grant slot is two cache lines");

struct grant_give {
	uint64_t gen;
	uint32_t key;
	int fd;        /* the facade's memfd descriptor (named in GRANT) */
	bool used;
	bool announce; /* GRANT still to send */
};

struct grant_take {
	uint64_t gen;
	uint64_t addr, len;
	uint32_t key;
	uint32_t access;
	uint8_t *map; /* our mapping of the target's memfd, len bytes */
};

enum { G_DIRECT, G_GIVEN, G_TAKEN, G_REFUSED, G_REVOKED, G_NSTATS };

struct soft_grants {
	uint64_t stat[G_NSTATS];
	/* Target side. */
	struct grant_give give[GRANT_SLOTS];
	uint64_t gen_next;
	uint32_t no_key;   /* the last key refused, not looked up again until a revocation */
	bool no_key_set;
	/* Initiator side. */
	struct grant_take take[GRANT_SLOTS];
	uint32_t n_take;
	uint32_t last;
};

static struct soft_grants *grants_of(struct soft_conn *c)
{
	if (!c->grants)
		c->grants = calloc(1, sizeof(*c->grants));
	return c->grants;
}

/* The grant area of our ring's header page (which the peer maps) or of the
 * peer's (which we map); shmring.c sets both while the rings are mapped. */
static struct grant_slot *slots(struct soft_conn *c, bool ours)
{
	size_t len = c->grant_area_len;
	void *a = ours ? c->grant_ours : c->grant_peer;

	return a && len >= GRANT_SLOTS * sizeof(struct grant_slot) ? a : NULL;
}

static void count(struct soft_conn *c, int which)
{
	struct soft_grants *g = c->grants;

	if (!g)
		g = c->grants = calloc(1, sizeof(*g));
	if (g)
		g->stat[which]++;
}

void soft_grant_stats(const struct soft_conn *c, uint64_t out[SOFT_RING_NSTATS])
{
	const struct soft_grants *g = c->grants;

	if (!g)
		return;
	out[SOFT_RING_DIRECT] = g->stat[G_DIRECT];
	out[SOFT_RING_GRANTS_GIVEN] = g->stat[G_GIVEN];
	out[SOFT_RING_GRANTS_TAKEN] = g->stat[G_TAKEN];
	out[SOFT_RING_GRANTS_REFUSED] = g->stat[G_REFUSED];
	out[SOFT_RING_REVOKED] = g->stat[G_REVOKED];
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- target ---- */

void soft_grant_offer(struct soft_qp *q, struct soft_conn *c, uint32_t key)
{
	struct soft_grants *g = c->grants;
	struct grant_slot *s;
	uint64_t addr, len;
	uint32_t i, free_i = GRANT_SLOTS, access;
	int fd;

	if (g) {
		for (i = 0; i < GRANT_SLOTS; i++) {
			if (g->give[i].used && g->give[i].key == key)
				return; /* the usual case: granted already */
			if (!g->give[i].used && free_i == GRANT_SLOTS)
				free_i = i;
		}
		if (g->no_key_set && g->no_key == key)
			return;
	} else {
		free_i = 0;
	}
	if (!c->sc->shm_direct || !c->grant_give || !c->ring_tx_on || !c->ring_rx_on || c->state != CONN_UP ||
	    q->uc || q->qp->qp_type != RV_QPT_RC || !(q->access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ)) ||
	    atomic_load(&q->state) != RV_QPS_RTS || !(s = slots(c, true)) || !(g = grants_of(c)))
		return;
	/* READ rights only where this QP answers READs at all: with
	 * max_dest_rd_atomic 0 a READ is a remote invalid request (IRD 0),
	 * and a one-copy READ must fail as the ring path does. */
	if (free_i == GRANT_SLOTS || !soft_mr_grantable(c->sc, key, q->qp->pd, &addr, &len, &fd, &access) ||
	    !(access &= q->access & (soft_qp_ird(q) ? ~0u : ~(uint32_t)RV_ACCESS_REMOTE_READ)) ||
	    len > GRANT_MAX_LEN) {
		g->no_key = key;
		g->no_key_set = true;
		return;
	}
	s += free_i;
	atomic_store_explicit(&s->addr, addr, memory_order_relaxed);
	atomic_store_explicit(&s->len, len, memory_order_relaxed);
	atomic_store_explicit(&s->key, key, memory_order_relaxed);
	atomic_store_explicit(&s->access, access, memory_order_relaxed);
	g->gen_next++;
	atomic_store_explicit(&s->gen, g->gen_next, memory_order_release);
	g->give[free_i] = (struct grant_give){.gen = g->gen_next, .key = key, .fd = fd, .used = true, .announce = true};
	c->grant_due = true;
	count(c, G_GIVEN);
}

bool soft_grant_next(struct soft_conn *c, uint32_t *fd, uint32_t *slot)
{
	struct soft_grants *g = c->grants;

	for (uint32_t i = 0; g && i < GRANT_SLOTS; i++) {
		if (g->give[i].used && g->give[i].announce) {
			g->give[i].announce = false;
			*fd = (uint32_t)g->give[i].fd;
			*slot = i;
			return true;
		}
	}
	c->grant_due = false;
	return false;
}

/* Generation 0, then wait (bounded) until the initiator's copy is over. */
static void revoke_slot(struct soft_conn *c, struct grant_slot *s, struct grant_give *gv)
{
	int64_t until = 0;

	gv->used = false;
	gv->announce = false;
	if (!s)
		return;
	atomic_store_explicit(&s->gen, 0, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t spins = 0; atomic_load_explicit(&s->busy, memory_order_seq_cst); spins++) {
		if (spins < 64)
			continue;
		if (!until)
			until = now_us() + GRANT_WAIT_US;
		else if (now_us() > until || !soft_shm_peer_alive(c))
			break; /* a stopped or hostile peer: trusted no further */
		sched_yield();
	}
	count(c, G_REVOKED);
}

static void revoke_conn_key(struct soft_conn *c, bool all, uint32_t key)
{
	struct soft_grants *g = c->grants;
	struct grant_slot *s = slots(c, true);

	if (!g)
		return;
	g->no_key_set = false; /* rights or memory changed: look again at the next WRITE */
	for (uint32_t i = 0; i < GRANT_SLOTS; i++)
		if (g->give[i].used && (all || g->give[i].key == key))
			revoke_slot(c, s ? s + i : NULL, &g->give[i]);
}

void soft_grant_revoke_conn(struct soft_conn *c)
{
	revoke_conn_key(c, true, 0);
}

void soft_grant_revoke_key(struct soft_ctx *sc, uint32_t key)
{
	soft_lock_take(&sc->lock);
	for (uint32_t i = 0; i < sc->n_rings; i++) {
		struct soft_conn *c = sc->rings[i];
		struct soft_qp *q = c->qp;
		if (!c->grants)
			continue;
		if (q)
			soft_lock_take(&q->lock);
		revoke_conn_key(c, false, key);
		if (q)
			soft_lock_give(&q->lock);
	}
	soft_lock_give(&sc->lock);
}

/* ---- initiator ---- */

static void take_drop(struct soft_grants *g, uint32_t i)
{
	struct grant_take *t = &g->take[i];

	if (!t->map)
		return;
	munmap(t->map, t->len);
	memset(t, 0, sizeof(*t));
	g->n_take--;
}

/* fd is a memfd (the kernel names its inode "/memfd:..."). */
static bool is_memfd(int fd)
{
	char path[64], link[80];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return strncmp(link, "/memfd:", 7) == 0;
}

static bool refuse(struct soft_conn *c, int fd, const char *why)
{
	if (fd >= 0)
		close(fd);
	count(c, G_REFUSED);
	rv_log(RV_LOG_DEBUG, "soft0: a grant of the same-host peer is refused (%s); its WRITEs take the ring", why);
	return true; /* quietly: the protocol is intact */
}

bool soft_grant_got(struct soft_qp *q, struct soft_conn *c, uint32_t num, uint32_t slot)
{
	struct grant_slot *s = slots(c, false);
	struct soft_grants *g;
	uint64_t gen, addr, len;
	uint32_t key, access;
	struct stat st;
	int fd, seals;
	void *m;

	(void)q;
	if (!s || !c->sc->shm_direct)
		return refuse(c, -1, "no grant area");
	if (slot >= GRANT_SLOTS)
		return refuse(c, -1, "slot out of range");
	s += slot;
	/* Each field once, into locals: the peer may change them meanwhile. */
	gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	addr = atomic_load_explicit(&s->addr, memory_order_relaxed);
	len = atomic_load_explicit(&s->len, memory_order_relaxed);
	key = atomic_load_explicit(&s->key, memory_order_relaxed);
	access = atomic_load_explicit(&s->access, memory_order_relaxed) &
		 (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ);
	if (!gen)
		return refuse(c, -1, "revoked already");
	if (len == 0 || len > GRANT_MAX_LEN || addr > UINT64_MAX - len)
		return refuse(c, -1, "bad range");
	if (!access)
		return refuse(c, -1, "no rights");
	fd = soft_shm_dup_fd(c, num);
	if (fd < 0)
		return refuse(c, -1, "descriptor not taken");
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !is_memfd(fd))
		return refuse(c, fd, "not a memfd");
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return refuse(c, fd, "not sealed against shrinking");
	if (st.st_size < 0 || (uint64_t)st.st_size < len)
		return refuse(c, fd, "smaller than the range");
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return refuse(c, -1, "mmap failed");
	madvise(m, len, MADV_DONTFORK); /* not into a fork child */
	/* Revoked meanwhile: the descriptor number may have been another file's. */
	if (atomic_load_explicit(&s->gen, memory_order_seq_cst) != gen || !(g = grants_of(c))) {
		munmap(m, len);
		return refuse(c, -1, "revoked meanwhile");
	}
	take_drop(g, slot);
	g->take[slot] = (struct grant_take){.gen = gen, .addr = addr, .len = len, .key = key, .access = access, .map = m};
	g->n_take++;
	count(c, G_TAKEN);
	rv_log(RV_LOG_DEBUG, "soft0: QP 0x%x: WRITEs to key 0x%x [0x%llx, +%llu) now go by one copy", q->qpn, key,
	       (unsigned long long)addr, (unsigned long long)len);
	return true;
}

struct direct_copy {
	struct grant_slot *s;
	uint64_t gen;
	uint8_t *dst;
	bool done;
};

/*
 * The copy of a direct WRITE. glibc's memcpy keeps its stores cached up to
 * its non-temporal threshold, which it derives from the L3 size CPUID
 * reports: in a VM that can be far beyond the real cache (here 256 MiB from
 * CPUID against 32 MiB in sysfs, so a threshold of 192 MiB), and a copy
 * whose source and destination do not fit the cache then pays a read for
 * ownership of each destination line and evicts everything else. From a
 * quarter of the L3 (as the kernel's sysfs reports it) a direct WRITE streams
 * its stores (x86-64: SSE2 non-temporal stores, an sfence before the copy is
 * announced). Measured by copy alone, median of 9 (1 GiB each, CPU time,
 * memfd mappings, load 6.5): 4 MiB memcpy 17.8 GB/s, streaming 16.7;
 * 8 MiB 4.9 against 9.5; 16 MiB 5.1 against 7.6; 1 MiB 23.1 against 16.6.
 * RVERBS_SOFT_NT_COPY=BYTES sets the threshold (0: never stream).
 *
 * Between 512 KiB and that threshold a CPU with ERMS copies by `rep movsb`:
 * glibc (2.36) stops using it above the L2 size on AMD (512 KiB on Zen 3)
 * and runs its AVX2 loop, which the string instruction beats there (copy
 * alone, memfd mappings, 1 MiB: 43 against 50 GB/s; 2 MiB 43 against 51;
 * 4 MiB 36-47 against 50-52; 256 KiB the same). Without ERMS (Zen 2) the
 * string instructions are 4x slower than memcpy (10 against 40 GB/s at
 * 1 MiB), so they wait for the CPUID bit. UCX's 1 MiB put on one host is a
 * memcpy into the peer's mapped buffer too (see the README, session 12).
 * RVERBS_SOFT_REP_COPY=BYTES sets where it starts (0: never).
 */
static _Atomic size_t nt_threshold; /* 0 until nt_init ran */
static size_t rep_min = SIZE_MAX;   /* set once by nt_init, before nt_threshold */
static pthread_once_t nt_once = PTHREAD_ONCE_INIT;

static void nt_init(void)
{
	const char *e = getenv("RVERBS_SOFT_NT_COPY");
	const char *r = getenv("RVERBS_SOFT_REP_COPY");
	unsigned long long l3 = 0;
	char buf[32], *end;
	FILE *f;

#if defined(__x86_64__)
	{
		unsigned int a, b, c, d;

		/* CPUID.(EAX=7,ECX=0):EBX bit 9 is ERMS. */
		if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 9)))
			rep_min = (size_t)512 << 10;
		if (r && *r) {
			unsigned long long v = strtoull(r, &end, 10);

			if (*end == 0)
				rep_min = v == 0 || v > SIZE_MAX ? SIZE_MAX : (size_t)v;
		}
	}
#else
	(void)r;
#endif
	if (e && *e) {
		unsigned long long v = strtoull(e, &end, 10);
		if (*end == 0) {
			atomic_store(&nt_threshold, v == 0 || v > SIZE_MAX ? SIZE_MAX : (size_t)v);
			return;
		}
	}
	f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			l3 = strtoull(buf, &end, 10);
			l3 <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 0;
		}
		fclose(f);
	}
#if defined(_SC_LEVEL3_CACHE_SIZE)
	if (!l3) {
		long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
		l3 = v > 0 ? (unsigned long long)v : 0;
	}
#endif
	/* No L3 known: that of a 32 MiB one. At least 1 MiB either way. */
	l3 = l3 ? l3 / 4 : (unsigned long long)8 << 20;
	if (l3 < ((unsigned long long)1 << 20))
		l3 = (unsigned long long)1 << 20;
	atomic_store(&nt_threshold, l3 > SIZE_MAX ? SIZE_MAX : (size_t)l3);
}

/* The threshold: one acquire load once known (every direct WRITE asks; it also publishes rep_min). */
static size_t nt_min(void)
{
	size_t t = atomic_load_explicit(&nt_threshold, memory_order_acquire);

	if (t == 0) {
		pthread_once(&nt_once, nt_init);
		t = atomic_load(&nt_threshold);
	}
	return t;
}

#if defined(__x86_64__)
/* The string instruction: cached stores, the CPU picks the width. */
static void copy_rep(uint8_t *dst, const uint8_t *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* Cached stores up to the first 64-byte boundary of dst, then full lines by
 * non-temporal stores, then the tail cached. The caller fences. */
static void copy_stream(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t head = (size_t)(-(uintptr_t)dst & 63);

	if (head > n)
		head = n;
	memcpy(dst, src, head);
	dst += head;
	src += head;
	n -= head;
	for (; n >= 64; n -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + 48));
		_mm_stream_si128((__m128i *)(void *)dst, a);
		_mm_stream_si128((__m128i *)(void *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(void *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(void *)(dst + 48), d);
	}
	memcpy(dst, src, n);
}
#endif

static void direct_copy(const struct iovec *iov, uint32_t n, void *arg)
{
	struct direct_copy *d = arg;
	uint8_t *p = d->dst;
	size_t total = 0;
	bool stream = false, rep = false;

	for (uint32_t i = 0; i < n; i++)
		total += iov[i].iov_len;
#if defined(__x86_64__)
	stream = total >= nt_min(); /* outside the busy window: the first call reads sysfs */
	rep = !stream && total >= rep_min;
#endif
	(void)stream;
	(void)rep;
	/* Dekker with the target's revoke (gen = 0; seq_cst fence; read busy):
	 * the seq_cst fence between our store and our load is what orders them
	 * (C11 7.17.4: of two seq_cst fences one precedes the other, so either
	 * we read gen 0 or the target reads busy 1). A seq_cst store before it
	 * was a second full barrier (xchg, then lock or), and the load needs no
	 * more than acquire: nothing of the copy may move above it. */
	atomic_store_explicit(&d->s->busy, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&d->s->gen, memory_order_acquire) == d->gen) {
		for (uint32_t i = 0; i < n; i++) {
#if defined(__x86_64__)
			if (stream)
				copy_stream(p, iov[i].iov_base, iov[i].iov_len);
			else if (rep)
				copy_rep(p, iov[i].iov_base, iov[i].iov_len);
			else
#endif
				memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
#if defined(__x86_64__)
		/* Streaming stores are weakly ordered: none may pass the release
		 * below (the target, or a SEND behind it, would see stale lines). */
		if (stream)
			_mm_sfence();
#endif
		d->done = true;
	}
	/* Release: the copy before "not busy", and before any later frame. */
	atomic_store_explicit(&d->s->busy, 0, memory_order_release);
}

/* The taken grant that covers [raddr, raddr + len) of key, or GRANT_SLOTS. */
static uint32_t grant_find(struct soft_grants *g, uint32_t key, uint64_t raddr, uint64_t len, uint32_t access)
{
	uint32_t i = g->last;
	const struct grant_take *t;

	if (!(g->take[i].map && g->take[i].key == key)) {
		for (i = 0; i < GRANT_SLOTS; i++)
			if (g->take[i].map && g->take[i].key == key)
				break;
		if (i == GRANT_SLOTS)
			return GRANT_SLOTS;
		g->last = i;
	}
	t = &g->take[i];
	if (!(t->access & access))
		return GRANT_SLOTS; /* the ring path refuses it as the target would */
	/* Differences only: raddr + len may overflow. */
	if (raddr < t->addr || raddr - t->addr > t->len || len > t->len - (raddr - t->addr))
		return GRANT_SLOTS; /* the ring path reports it as the target would */
	return i;
}

/* The QP may do WRITEs by one copy now (q->lock held). */
static struct soft_grants *grant_usable(struct soft_qp *q)
{
	struct soft_conn *c = q->conn;
	struct soft_grants *g = c ? c->grants : NULL;

	if (!g || !g->n_take || q->uc || atomic_load(&q->state) != RV_QPS_RTS || c->state != CONN_UP ||
	    !c->ring_tx_on || atomic_load_explicit(&q->fault.armed, memory_order_relaxed) ||
	    atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed))
		return NULL;
	return g;
}

/* Copy the WR's payload (SGEs checked as the framing checks them, or its
 * inline data) into slot i's mapping at raddr. false: nothing was copied
 * (an SGE failed its check: the ring path completes the WR with its error;
 * or the grant was revoked: unmapped, the ring path from now on). */
static bool grant_copy(struct soft_qp *q, struct soft_grants *g, uint32_t i, uint64_t raddr, const rv_sge *sge,
		       uint32_t n, const struct iovec *inl, uint32_t n_inl, uint64_t len)
{
	struct grant_take *t = &g->take[i];
	struct direct_copy d;

	d.s = slots(q->conn, false);
	if (!d.s)
		return false;
	d.s += i;
	d.gen = t->gen;
	d.dst = t->map + (raddr - t->addr);
	d.done = false;
	if (inl)
		direct_copy(inl, n_inl, &d);
	else if (soft_sgl_direct(q->sc, q->qp->pd, sge, n, len, direct_copy, &d) != SOFT_MEM_OK)
		return false;
	if (!d.done) {
		take_drop(g, i);
		return false;
	}
	count(q->conn, G_DIRECT);
	return true;
}

/* A READ from a grant with REMOTE_READ: with "busy" set and the generation
 * still live, copy from the mapping into the local SGEs (checked as a READ
 * response's placement checks them: lkey, PD, LOCAL_WRITE, bounds). false:
 * the ring path takes it (nothing was read; an SGE that failed its check
 * may have received part of it, as a READ response would have). wc: push a
 * completion (post time; tx.c completes through the send queue). */
static bool grant_read(struct soft_qp *q, struct soft_grants *g, uint32_t key, uint64_t raddr, const rv_sge *sge,
		       uint32_t n, uint64_t len, uint64_t wr_id, bool wc_now)
{
	uint32_t i = grant_find(g, key, raddr, len, RV_ACCESS_REMOTE_READ);
	struct grant_slot *s = slots(q->conn, false);
	struct grant_take *t;
	enum soft_mem_err e;

	if (i == GRANT_SLOTS || !s)
		return false;
	s += i;
	t = &g->take[i];
	/* As direct_copy: one seq_cst fence between "busy" and the generation. */
	atomic_store_explicit(&s->busy, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&s->gen, memory_order_acquire) != t->gen) {
		atomic_store_explicit(&s->busy, 0, memory_order_release);
		take_drop(g, i);
		return false;
	}
	e = soft_sgl_write(q->sc, q->qp->pd, sge, n, 0, t->map + (raddr - t->addr), len);
	atomic_store_explicit(&s->busy, 0, memory_order_release);
	if (e != SOFT_MEM_OK)
		return false;
	count(q->conn, G_DIRECT);
	if (wc_now) {
		rv_wc wc;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr_id;
		wc.status = RV_WC_SUCCESS;
		wc.opcode = RV_WC_RDMA_READ;
		wc.byte_len = (uint32_t)len;
		wc.qp_num = q->qpn;
		if (!soft_cq_push(q->qp->send_cq, &wc))
			q->cq_overflow = true;
	}
	return true;
}

bool soft_grant_write(struct soft_qp *q, const rv_send_wr *wr, uint64_t len)
{
	struct iovec iov[SOFT_MAX_SGE];
	struct soft_grants *g;
	uint32_t i;

	if ((wr->opcode != RV_WR_RDMA_WRITE && wr->opcode != RV_WR_RDMA_READ) || len == 0 ||
	    q->sq_head != q->sq_tail || !(g = grant_usable(q)))
		return false;
	if (wr->opcode == RV_WR_RDMA_READ)
		return grant_read(q, g, wr->rkey, wr->remote_addr, wr->sg_list, wr->num_sge, len, wr->wr_id,
				  q->qp->sq_sig_all || (wr->send_flags & RV_SEND_SIGNALED));
	i = grant_find(g, wr->rkey, wr->remote_addr, len, RV_ACCESS_REMOTE_WRITE);
	if (i == GRANT_SLOTS)
		return false;
	if (wr->send_flags & RV_SEND_INLINE) {
		/* As the inline path: the lkeys are not looked at. */
		if (wr->num_sge > SOFT_MAX_SGE)
			return false;
		for (uint32_t k = 0; k < wr->num_sge; k++) {
			iov[k].iov_base = (void *)(uintptr_t)wr->sg_list[k].addr;
			iov[k].iov_len = wr->sg_list[k].length;
		}
	}
	if (!grant_copy(q, g, i, wr->remote_addr, wr->sg_list, wr->num_sge,
			(wr->send_flags & RV_SEND_INLINE) ? iov : NULL, wr->num_sge, len))
		return false;
	if (q->qp->sq_sig_all || (wr->send_flags & RV_SEND_SIGNALED)) {
		rv_wc wc;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.status = RV_WC_SUCCESS;
		wc.opcode = RV_WC_RDMA_WRITE;
		wc.byte_len = (uint32_t)len;
		wc.qp_num = q->qpn;
		if (!soft_cq_push(q->qp->send_cq, &wc))
			q->cq_overflow = true;
	}
	return true;
}

int soft_grant_tx_wr(struct soft_qp *q, const struct soft_swqe *w)
{
	struct soft_grants *g;
	struct iovec iov;
	uint32_t i;

	if ((w->opcode != RV_WR_RDMA_WRITE && w->opcode != RV_WR_RDMA_READ) || w->length == 0 ||
	    !(g = grant_usable(q)))
		return -1;
	i = grant_find(g, w->rkey, w->remote_addr, w->length,
		       w->opcode == RV_WR_RDMA_READ ? RV_ACCESS_REMOTE_READ : RV_ACCESS_REMOTE_WRITE);
	if (i == GRANT_SLOTS)
		return -1;
	if (q->sq_tx != q->sq_confirmed || q->ord_head != q->ord_tail)
		return 0; /* frames (or READs) before it still pending: it must not pass them */
	if (w->opcode == RV_WR_RDMA_READ)
		return grant_read(q, g, w->rkey, w->remote_addr, w->sge, w->num_sge, w->length, 0, false) ? 1 : -1;
	iov.iov_base = w->inline_data;
	iov.iov_len = w->length;
	return grant_copy(q, g, i, w->remote_addr, w->sge, w->num_sge, w->inl ? &iov : NULL, 1, w->length) ? 1 : -1;
}

void soft_grant_free(struct soft_conn *c)
{
	struct soft_grants *g = c->grants;

	if (!g)
		return;
	for (uint32_t i = 0; i < GRANT_SLOTS; i++)
		take_drop(g, i);
	free(g);
	c->grants = NULL;
}
