/*
 * Protection domains and memory regions of the software device, and every
 * access to registered memory.
 *
 * Owns: the per-context MR table (a hash of STags under sc->mr_lock) and the
 * checks made before a byte is copied: key, PD, access right, bounds (with
 * 64-bit overflow checked). Keys are random, unguessable 32-bit values (never
 * 0, which the zero-length confirm READ uses); lkey == rkey. Copies run under
 * the read lock so that a concurrent deregistration waits for them.
 *
 * Registration checks the range as ibv_reg_mr's pinning does (maps.c), but
 * soft0 pins nothing: memory unmapped after registration is gone for soft0
 * too. So what a peer makes soft0 do to registered memory (a WRITE, READ or
 * atomic on it, a SEND into a receive WR) and what lands in it (READ and
 * atomic responses) is done fault-safe: copies the kernel makes
 * (process_vm_readv/writev on this process, EFAULT instead of a signal), or a
 * probe first (atomics, the CRC of a zero-copy send); a failure is
 * SOFT_MEM_FAULT and the WR completes in error. Large transfers move with
 * recv/sendmsg, which fail with EFAULT the same way. memcpy stays for memory
 * rverbs mapped itself (soft_mr.trusted: rv_mr_alloc, pool chunks, unmapped
 * only after deregistration), for every MR under RVERBS_SOFT_TRUST_MEMORY=1,
 * and for the source of this process's own sends (soft_sgl_read): a
 * fault-safe copy is a system call per small message (docs/software-device.md,
 * "Memory", has the trade-off and the figures).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/uio.h>

#include "drivers/soft/soft.h"

/* This process, for process_vm_readv/writev on itself. A context is used only
 * by the process that opened it (core/fork.c refuses it in a fork child),
 * so the pid read once per process stays right for every context it opens:
 * the cached value is refreshed when a context opens (soft_mem_self_init). */
static pid_t self_pid;

void soft_mem_self_init(void)
{
	__atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
}

/* Fault-safe copies (the kernel copies, and fails with EFAULT where memcpy
 * would take a signal); logged once per failure, at WARN. */
static bool copy_fault(const void *where, size_t len, bool to_mr)
{
	rv_log(RV_LOG_WARN, "soft0: registered memory [%p, +%zu) is no longer %s: the process unmapped or "
	       "protected it after registration; the work request completes in error", where, len,
	       to_mr ? "writable" : "readable");
	return false;
}

bool soft_copy_to_mr(void *dst, const void *src, size_t len)
{
	struct iovec l = {(void *)(uintptr_t)src, len}, r = {dst, len};
	ssize_t n;

	if (len == 0)
		return true;
	do
		n = process_vm_writev(__atomic_load_n(&self_pid, __ATOMIC_RELAXED), &l, 1, &r, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len || copy_fault(dst, len, true);
}

bool soft_copy_from_mr(void *dst, const void *src, size_t len)
{
	struct iovec l = {dst, len}, r = {(void *)(uintptr_t)src, len};
	ssize_t n;

	if (len == 0)
		return true;
	do
		n = process_vm_readv(__atomic_load_n(&self_pid, __ATOMIC_RELAXED), &l, 1, &r, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len || copy_fault(src, len, false);
}

/* A copy into / out of the memory of MR m: memcpy when rverbs mapped that
 * memory itself (m->trusted: it stays mapped while m exists, and the caller
 * holds the MR lock), fault-safe otherwise. */
static inline bool copy_in(const struct soft_mr *m, void *dst, const void *src, size_t len)
{
	if (m->trusted) {
		memcpy(dst, src, len);
		return true;
	}
	return soft_copy_to_mr(dst, src, len);
}

static inline bool copy_out(const struct soft_mr *m, void *dst, const void *src, size_t len)
{
	if (m->trusted) {
		memcpy(dst, src, len);
		return true;
	}
	return soft_copy_from_mr(dst, src, len);
}

/* Read one byte of each of the k pages r names; false if one is not readable. */
static bool probe_pages(struct iovec *r, uint32_t k)
{
	uint8_t sink[64];
	struct iovec l = {sink, k};
	ssize_t got;

	do
		got = process_vm_readv(__atomic_load_n(&self_pid, __ATOMIC_RELAXED), &l, 1, r, k, 0);
	while (got < 0 && errno == EINTR);
	return got == (ssize_t)k;
}

bool soft_mem_probe(const struct iovec *iov, uint32_t n)
{
	const uintptr_t page = 4096; /* a larger page is probed more than once, never skipped */
	struct iovec r[64];
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].iov_base, end = a + iov[i].iov_len;

		for (uintptr_t p = a; p < end; p = (p & ~(page - 1)) + page) {
			r[k].iov_base = (void *)p;
			r[k].iov_len = 1;
			if (++k == 64) {
				if (!probe_pages(r, k))
					return copy_fault(iov[i].iov_base, iov[i].iov_len, false);
				k = 0;
			}
		}
	}
	return k == 0 || probe_pages(r, k) || copy_fault(r[0].iov_base, 1, false);
}

int soft_pd_alloc(struct rv_pd *pd)
{
	/* A PD is only an identity: MRs and QPs compare the rv_pd pointers in
	 * drv_pd, which for a parent domain is its parent's, so that MRs of
	 * either serve QPs of either, as a parent domain's protection is its
	 * parent's. */
	pd->drv_pd = pd->parent ? pd->parent->drv_pd : pd;
	return 0;
}

int soft_pd_dealloc(struct rv_pd *pd)
{
	pd->drv_pd = NULL;
	return 0;
}

int soft_mr_table_init(struct soft_ctx *sc)
{
	const char *trust = getenv("RVERBS_SOFT_TRUST_MEMORY");

	soft_mem_self_init();
	/* The application promises never to unmap memory it registered while
	 * the registration lives: soft0 then copies the caller's MRs with
	 * memcpy too (docs/software-device.md, "Memory"). */
	sc->trust_memory = trust && strcmp(trust, "1") == 0;
	sc->mr_buckets = 256;
	sc->mr_hash = calloc(sc->mr_buckets, sizeof(*sc->mr_hash));
	if (!sc->mr_hash)
		return -ENOMEM;
	soft_rwlock_init(&sc->mr_lock);
	return 0;
}

void soft_mr_table_fini(struct soft_ctx *sc)
{
	if (!sc->mr_hash)
		return;
	for (uint32_t i = 0; i < sc->mr_buckets; i++) {
		struct soft_mr *m = sc->mr_hash[i];
		while (m) {
			struct soft_mr *n = m->next;
			free(m);
			m = n;
		}
	}
	free(sc->mr_hash);
	sc->mr_hash = NULL;
}

static uint32_t bucket(const struct soft_ctx *sc, uint32_t key)
{
	return (key * 0x9e3779b1u) >> 16 & (sc->mr_buckets - 1);
}

static struct soft_mr *lookup(struct soft_ctx *sc, uint32_t key)
{
	for (struct soft_mr *m = sc->mr_hash[bucket(sc, key)]; m; m = m->next)
		if (m->key == key)
			return m;
	return NULL;
}

static void grow(struct soft_ctx *sc)
{
	uint32_t nb = sc->mr_buckets * 2;
	struct soft_mr **nh = calloc(nb, sizeof(*nh));

	if (!nh)
		return; /* longer chains, still correct */
	for (uint32_t i = 0; i < sc->mr_buckets; i++) {
		struct soft_mr *m = sc->mr_hash[i];
		while (m) {
			struct soft_mr *n = m->next;
			uint32_t b = (m->key * 0x9e3779b1u) >> 16 & (nb - 1);
			m->next = nh[b];
			nh[b] = m;
			m = n;
		}
	}
	free(sc->mr_hash);
	sc->mr_hash = nh;
	sc->mr_buckets = nb;
}

/* A random STag nobody in the table has (never 0, never @p avoid); under the
 * write lock. Keys are unguessable on purpose: a peer must not find one. 0
 * when the kernel gives no random bytes. */
static uint32_t fresh_key(struct soft_ctx *sc, uint32_t avoid)
{
	uint32_t key;

	do
		if (rv_random_bytes(&key, sizeof(key)) < 0)
			return 0;
	while (key == 0 || key == avoid || lookup(sc, key));
	return key;
}

#define NO_RANDOM_KEY "soft0 makes its keys from the kernel's random bytes, and got none (getrandom(2) and " \
		      "/dev/urandom failed)"

/* Gives @p m a fresh key and links it into the STag table; -ENOMEM (with
 * the message naming @p fn) when the context is at its MR/MW limit. */
static int stag_add(struct soft_ctx *sc, struct soft_mr *m, const char *fn)
{
	soft_rwlock_write(&sc->mr_lock);
	if (sc->n_mr >= SOFT_MAX_MR) {
		soft_rwlock_give(&sc->mr_lock);
		return rv_err(ENOMEM, fn, "soft0 allows %u MRs and MWs per context; close unused ones",
			      SOFT_MAX_MR);
	}
	m->key = fresh_key(sc, 0);
	if (!m->key) {
		soft_rwlock_give(&sc->mr_lock);
		return rv_err(EIO, fn, NO_RANDOM_KEY);
	}
	if (sc->n_mr >= sc->mr_buckets * 2)
		grow(sc);
	m->next = sc->mr_hash[bucket(sc, m->key)];
	sc->mr_hash[bucket(sc, m->key)] = m;
	sc->n_mr++;
	soft_rwlock_give(&sc->mr_lock);
	return 0;
}

/* Zero-based MRs (remote addresses as offsets from 0) would need every
 * remote access to translate its TO, on every placement path; soft0 refuses
 * them, as the kernel does for a device without zero-based support. */
static int zero_based_refused(const char *fn)
{
	return rv_err(EOPNOTSUPP, fn, "soft0 does not implement zero-based MRs (RV_ACCESS_ZERO_BASED): "
		      "address the region with its virtual addresses (rv_mr_addr() + offset)");
}

int soft_mr_reg(struct rv_mr *mr)
{
	return soft_mr_reg_mapped(mr, mr->memory_ours, NULL);
}

/* ours: rverbs (the facade or soft0) mapped the range and unmaps it only
 * after deregistration; dmabuf_map: soft0's mapping of a dma-buf there,
 * unmapped by soft_mr_dereg. */
int soft_mr_reg_mapped(struct rv_mr *mr, bool ours, void *dmabuf_map)
{
	struct soft_ctx *sc = mr->pd->ctx->drv_ctx;
	struct soft_mr *m;

	if (mr->access & RV_ACCESS_ZERO_BASED)
		return zero_based_refused("rv_mr_reg");
	/* As ibv_reg_mr: the whole range present, with the rights asked for
	 * (memory rverbs just mapped read-write needs no look). An implicit MR
	 * is the whole address space, holes included: nothing to check now,
	 * every access is checked by the kernel when it happens. */
	if (!ours && !mr->implicit && soft_range_check(mr->addr, mr->length, mr->access, "rv_mr_reg") < 0)
		return -EFAULT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return rv_err(ENOMEM, "rv_mr_reg", "out of memory for the software MR");
	m->pd = mr->pd->drv_pd;
	m->addr = (uint64_t)(uintptr_t)mr->addr;
	m->length = mr->length;
	m->access = mr->access;
	/* RVERBS_SOFT_TRUST_MEMORY promises that registered memory stays
	 * mapped; the whole address space has holes, so an implicit MR is
	 * never trusted. */
	m->implicit = mr->implicit;
	m->trusted = !m->implicit && (ours || sc->trust_memory);
	m->dmabuf_map = dmabuf_map;
	/* Grantable only when the MR is exactly what the facade mapped from
	 * the memfd (rv_mr_alloc: the MR starts at the mapping, offset 0). */
	m->memfd = ours && !dmabuf_map && mr->mem_fd >= 0 && mr->owned == mr->addr ? mr->mem_fd : -1;
	if (m->implicit && (m->access & SOFT_REMOTE_ACCESS))
		rv_log(RV_LOG_INFO, "soft0: implicit ODP MR with remote access 0x%x: its rkey opens every page "
		       "of this process to a peer that holds it", m->access & SOFT_REMOTE_ACCESS);
	if (m->length > UINT64_MAX - m->addr) {
		free(m);
		return rv_err(EINVAL, "rv_mr_reg", "the region wraps around the address space");
	}
	int rc = stag_add(sc, m, "rv_mr_reg");
	if (rc != 0) {
		free(m);
		return rc;
	}
	mr->lkey = m->key;
	mr->rkey = m->key;
	mr->drv_mr = m;
	return 0;
}

int soft_mr_dereg(struct rv_mr *mr)
{
	struct soft_ctx *sc = mr->pd->ctx->drv_ctx;
	struct soft_mr *m = mr->drv_mr, **pp;

	if (!m)
		return 0;
	soft_rwlock_write(&sc->mr_lock);
	for (pp = &sc->mr_hash[bucket(sc, m->key)]; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			sc->n_mr--;
			break;
		}
	}
	soft_rwlock_give(&sc->mr_lock);
	/* After the unhook: no copy runs on the mapping any more. */
	if (m->dmabuf_map)
		munmap(m->dmabuf_map, m->length);
	free(m);
	mr->drv_mr = NULL;
	return 0;
}

/* Re-register in place under the write lock: every access after it sees the
 * new PD, bounds and rights. The keys stay (ibv_rereg_mr(3): they may change;
 * mlx5 keeps them, and programs such as rdma-core's tests go on using them):
 * a peer holding the rkey gets the new rights, range and PD, so a right
 * taken away, memory moved or a PD changed fails its access at once. */
int soft_mr_rereg(struct rv_mr *mr, uint32_t flags, struct rv_pd *pd, void *addr, size_t length,
		  uint32_t access)
{
	struct soft_ctx *sc = mr->pd->ctx->drv_ctx;
	struct soft_mr *m = mr->drv_mr;
	uint64_t a = (uint64_t)(uintptr_t)addr;

	(void)flags;
	if (access & RV_ACCESS_ZERO_BASED)
		return zero_based_refused("rv_mr_rereg");
	if (soft_range_check(addr, length, access, "rv_mr_rereg") < 0)
		return -EFAULT;
	if (length > UINT64_MAX - a)
		return rv_err(EINVAL, "rv_mr_rereg", "the region wraps around the address space");
	soft_rwlock_write(&sc->mr_lock);
	m->pd = pd->drv_pd;
	m->addr = a;
	m->length = length;
	m->access = access;
	/* New memory is the caller's (the facade refuses RV_REREG_TRANS on
	 * memory rverbs owns); the same memory keeps what it was. */
	m->trusted = sc->trust_memory || (m->trusted && a == (uint64_t)(uintptr_t)mr->addr);
	if (a != (uint64_t)(uintptr_t)mr->addr || length != mr->length)
		m->memfd = -1; /* no longer the memfd's mapping */
	soft_rwlock_give(&sc->mr_lock);
	return 0;
}

/*
 * An XRC target QP (rverbs/xrcd.h) accepts the MRs of the PDs its domain's
 * XRC SRQs use, besides its own PD: the IB spec checks a request against
 * the PD of the SRQ the request names, which soft0's tagged frames cannot
 * carry. The list is sc->lock's; remote accesses of a target come from its
 * receive path, which holds it.
 */
static bool xrc_domain_pd(const struct soft_mr *m, const struct rv_qp *qp)
{
	const struct soft_ctx *sc;

	if (!qp || qp->qp_type != RV_QPT_XRC_RECV)
		return false;
	sc = qp->ctx->drv_ctx;
	for (const struct soft_srq *s = sc->xrc_srqs; s; s = s->xrc_next)
		if (s->srq->xrcd == qp->xrcd && s->srq->pd->drv_pd == m->pd)
			return true;
	return false;
}

/*
 * pd: the accessing QP's PD. qp: the accessing QP for a remote access (the
 * access has a REMOTE_* bit), NULL for a local key. A window's key is only
 * good for remote access, while bound, and (type 2) from the QP that bound it.
 */
static enum soft_mem_err check(const struct soft_mr *m, const struct rv_pd *pd, const struct rv_qp *qp,
			       uint32_t access, uint64_t addr, uint64_t len)
{
	if (!m)
		return SOFT_MEM_NO_KEY;
	if (m->mw) {
		if (!(access & SOFT_REMOTE_ACCESS) || !m->bound)
			return SOFT_MEM_NO_KEY;
		if (m->mw_type == RV_MW_TYPE_2 && m->qp != qp)
			return SOFT_MEM_PD; /* RFC 5040 6.2: the STag is not associated with this stream */
	}
	if (m->pd != pd->drv_pd && !xrc_domain_pd(m, qp))
		return SOFT_MEM_PD;
	if ((m->access & access) != access)
		return SOFT_MEM_ACCESS;
	/* addr + len may overflow: compare by differences only. */
	if (addr < m->addr || addr - m->addr > m->length || len > m->length - (addr - m->addr))
		return SOFT_MEM_BOUNDS;
	return SOFT_MEM_OK;
}

enum soft_mem_err soft_mem_check(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				 uint64_t addr, uint64_t len)
{
	enum soft_mem_err e;

	soft_rwlock_read(&sc->mr_lock);
	e = check(lookup(sc, key), qp->pd, qp, access, addr, len);
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

enum soft_mem_err soft_mem_apply(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				 uint64_t addr, uint64_t len, void (*fn)(void *p, void *arg), void *arg)
{
	enum soft_mem_err e;

	soft_rwlock_read(&sc->mr_lock);
	e = check(lookup(sc, key), qp->pd, qp, access, addr, len);
	if (e == SOFT_MEM_OK)
		fn((void *)(uintptr_t)addr, arg);
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

enum soft_mem_err soft_mem_write(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				 uint64_t addr, const void *src, uint64_t len)
{
	const struct soft_mr *m;
	enum soft_mem_err e;

	soft_rwlock_read(&sc->mr_lock);
	m = lookup(sc, key);
	e = check(m, qp->pd, qp, access, addr, len);
	if (e == SOFT_MEM_OK && !copy_in(m, (void *)(uintptr_t)addr, src, len))
		e = SOFT_MEM_FAULT;
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

enum soft_mem_err soft_mem_read(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				uint64_t addr, void *dst, uint64_t len)
{
	const struct soft_mr *m;
	enum soft_mem_err e;

	soft_rwlock_read(&sc->mr_lock);
	m = lookup(sc, key);
	e = check(m, qp->pd, qp, access, addr, len);
	if (e == SOFT_MEM_OK && !copy_out(m, dst, (const void *)(uintptr_t)addr, len))
		e = SOFT_MEM_FAULT;
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

/* Walk an SGE list from byte offset off, copying len bytes in or out.
 * Inlined into soft_sgl_read and soft_sgl_write, so each has its direction
 * as a constant (a 64 B SEND on a ring copies once each way: shmlat6). */
static inline __attribute__((always_inline)) enum soft_mem_err sgl_copy(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				  uint64_t off, void *buf, uint64_t len, bool to_sgl)
{
	enum soft_mem_err e = SOFT_MEM_OK;
	uint8_t *p = buf;
	uint32_t i = 0;

	if (len == 0)
		return SOFT_MEM_OK;
	while (i < n && off >= sge[i].length) {
		off -= sge[i].length;
		i++;
	}
	soft_rwlock_read(&sc->mr_lock);
	for (; i < n && len; i++, off = 0) {
		uint64_t k = sge[i].length - off;
		if (k > len)
			k = len;
		if (k == 0)
			continue;
		const struct soft_mr *m = lookup(sc, sge[i].lkey);

		e = check(m, pd, NULL, to_sgl ? RV_ACCESS_LOCAL_WRITE : 0, sge[i].addr, sge[i].length);
		if (e != SOFT_MEM_OK)
			break;
		/* Into registered memory: fault-safe unless rverbs owns it (a
		 * peer's SEND, a READ response). Out of it: the source of this
		 * process's own send, framed for a WR it posted, with memcpy
		 * (see the top of the file). */
		if (to_sgl && !copy_in(m, (void *)(uintptr_t)(sge[i].addr + off), p, k)) {
			e = SOFT_MEM_FAULT;
			break;
		}
		/* An implicit MR covers unmapped addresses too: even the
		 * process's own send from it is fault-safe. */
		if (!to_sgl && m->implicit && !soft_copy_from_mr(p, (const void *)(uintptr_t)(sge[i].addr + off), k)) {
			e = SOFT_MEM_FAULT;
			break;
		}
		if (!to_sgl && !m->implicit)
			memcpy(p, (const void *)(uintptr_t)(sge[i].addr + off), k);
		p += k;
		len -= k;
	}
	soft_rwlock_give(&sc->mr_lock);
	if (e == SOFT_MEM_OK && len)
		e = SOFT_MEM_BOUNDS;
	return e;
}

/* The SGE list from off, len bytes, each SGE checked (lkey, PD, access,
 * bounds), as an iovec handed to fn under the MR table's read lock, so that
 * no MR goes away meanwhile. resident: refuse implicit (ODP) MRs with
 * SOFT_MEM_FAULT, since their pages may be holes that fn must not touch. */
static enum soft_mem_err sgl_apply(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				   uint64_t off, uint64_t len, uint32_t access, bool resident,
				   void (*fn)(const struct iovec *iov, uint32_t niov, void *arg), void *arg)
{
	struct iovec iov[SOFT_MAX_SGE];
	enum soft_mem_err e = SOFT_MEM_OK;
	uint32_t i = 0, k = 0;

	while (i < n && off >= sge[i].length) {
		off -= sge[i].length;
		i++;
	}
	soft_rwlock_read(&sc->mr_lock);
	for (; i < n && len && k < SOFT_MAX_SGE; i++, off = 0) {
		uint64_t m = sge[i].length - off;
		const struct soft_mr *mr;
		if (m > len)
			m = len;
		if (m == 0)
			continue;
		mr = lookup(sc, sge[i].lkey);
		e = check(mr, pd, NULL, access, sge[i].addr, sge[i].length);
		if (e != SOFT_MEM_OK)
			break;
		if (resident && mr->implicit) {
			e = SOFT_MEM_FAULT;
			break;
		}
		iov[k].iov_base = (void *)(uintptr_t)(sge[i].addr + off);
		iov[k].iov_len = (size_t)m;
		k++;
		len -= m;
	}
	if (e == SOFT_MEM_OK && len)
		e = SOFT_MEM_BOUNDS;
	if (e == SOFT_MEM_OK)
		fn(iov, k, arg);
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

enum soft_mem_err soft_sgl_apply(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				 uint64_t off, uint64_t len, uint32_t access,
				 void (*fn)(const struct iovec *iov, uint32_t niov, void *arg), void *arg)
{
	return sgl_apply(sc, pd, sge, n, off, len, access, false, fn, arg);
}

/* The source of a one-copy WRITE (grant.c): every SGE checked as the framing
 * checks it (lkey, PD, bounds; access 0), then fn(iov) under the read lock.
 * Implicit MRs are refused (SOFT_MEM_FAULT: the ring path copies them
 * fault-safe). */
enum soft_mem_err soft_sgl_direct(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				  uint64_t len, void (*fn)(const struct iovec *iov, uint32_t niov, void *arg),
				  void *arg)
{
	return sgl_apply(sc, pd, sge, n, 0, len, 0, true, fn, arg);
}

/* grant.c: key names an MR (not a window) of pd with REMOTE_WRITE or
 * REMOTE_READ backed by a memfd: its range, descriptor and those rights. */
bool soft_mr_grantable(struct soft_ctx *sc, uint32_t key, const struct rv_pd *pd, uint64_t *addr, uint64_t *len,
		       int *fd, uint32_t *access)
{
	const struct soft_mr *m;
	bool ok;

	soft_rwlock_read(&sc->mr_lock);
	m = lookup(sc, key);
	ok = m && !m->mw && !m->implicit && m->memfd >= 0 && m->trusted && m->pd == pd->drv_pd &&
	     (m->access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ));
	if (ok) {
		*access = m->access & (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ);
		*addr = m->addr;
		*len = m->length;
		*fd = m->memfd;
	}
	soft_rwlock_give(&sc->mr_lock);
	return ok;
}

bool soft_sgl_trusted(struct soft_ctx *sc, const rv_sge *sge, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct soft_mr *m;

		if (!sge[i].length)
			continue;
		m = lookup(sc, sge[i].lkey);
		if (!m || !m->trusted)
			return false;
	}
	return true;
}

enum soft_mem_err soft_sgl_read(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				uint64_t off, void *dst, uint64_t len)
{
	return sgl_copy(sc, pd, sge, n, off, dst, len, false);
}

enum soft_mem_err soft_sgl_write(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				 uint64_t off, const void *src, uint64_t len)
{
	return sgl_copy(sc, pd, sge, n, off, (void *)(uintptr_t)src, len, true);
}

enum soft_mem_err soft_mem_pull(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				uint64_t addr, uint64_t len, int pid, const struct iovec *src, uint32_t n)
{
	struct iovec dst = {(void *)(uintptr_t)addr, (size_t)len};
	enum soft_mem_err e;

	soft_rwlock_read(&sc->mr_lock);
	e = check(lookup(sc, key), qp->pd, qp, access, addr, len);
	/* Under the lock: the target MR cannot be deregistered while the kernel copies. */
	if (e == SOFT_MEM_OK && len && process_vm_readv(pid, &dst, 1, src, n, 0) != (ssize_t)len)
		e = SOFT_MEM_PEER;
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

enum soft_mem_err soft_sgl_pull(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				uint64_t len, int pid, const struct iovec *src, uint32_t nsrc)
{
	struct iovec dst[SOFT_MAX_SGE];
	enum soft_mem_err e = SOFT_MEM_OK;
	uint64_t left = len;
	uint32_t k = 0;

	soft_rwlock_read(&sc->mr_lock);
	for (uint32_t i = 0; i < n && left && k < SOFT_MAX_SGE; i++) {
		uint64_t l = sge[i].length < left ? sge[i].length : left;
		if (!l)
			continue;
		e = check(lookup(sc, sge[i].lkey), pd, NULL, RV_ACCESS_LOCAL_WRITE, sge[i].addr, sge[i].length);
		if (e != SOFT_MEM_OK)
			break;
		dst[k].iov_base = (void *)(uintptr_t)sge[i].addr;
		dst[k++].iov_len = (size_t)l;
		left -= l;
	}
	if (e == SOFT_MEM_OK && left)
		e = SOFT_MEM_BOUNDS;
	if (e == SOFT_MEM_OK && len && process_vm_readv(pid, dst, k, src, nsrc, 0) != (ssize_t)len)
		e = SOFT_MEM_PEER;
	soft_rwlock_give(&sc->mr_lock);
	return e;
}

/* ---- advice (rv_mr_advise) ---- */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Fault [addr, +len) in for reading or writing. MADV_POPULATE_* fault the
 * pages as an access would (ENOMEM on a hole, EFAULT on a fault). EINVAL
 * means either a kernel before 5.14 or a mapping that does not allow the
 * access (Linux answers POPULATE_WRITE on a read-only mapping so): the maps
 * tell them apart (maps.c, the check of registration), and memory that has
 * the access gets MADV_WILLNEED instead. Never called under the MR lock: it
 * may sleep on I/O. */
static int populate(uint64_t addr, uint64_t len, bool write)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~(page - 1);
	size_t l = (size_t)((uintptr_t)addr + (uintptr_t)len - a);

	if (madvise((void *)a, l, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
		return 0;
	if (errno == EFAULT || errno == ENOMEM || errno == EPERM || errno == EACCES)
		return -EFAULT;
	if (errno != EINVAL)
		return -errno;
	if (soft_range_check((void *)(uintptr_t)addr, (size_t)len, write ? RV_ACCESS_LOCAL_WRITE : 0,
			     "rv_mr_advise") < 0)
		return -EFAULT;
	return madvise((void *)a, l, MADV_WILLNEED) == 0 ? 0 : -EFAULT;
}

/*
 * Every MR of soft0 is on demand (device.c), so every MR takes advice. The
 * checks are ibv_advise_mr(3)'s: an lkey of no MR (ENOENT), a window's key
 * (EINVAL), another PD's MR or PREFETCH_WRITE without LOCAL_WRITE (EPERM), a
 * range outside the MR (EFAULT). Prefetching runs before the call returns
 * (FLUSH or not). PREFETCH_NO_FAULT: soft0 reaches memory through the CPU's
 * page table, which holds the present pages already; there is nothing more
 * to hand over, so after the checks it faults nothing in.
 */
int soft_mr_advise(struct rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sge, uint32_t n)
{
	struct soft_ctx *sc = pd->ctx->drv_ctx;
	bool write = advice == RV_ADVISE_MR_PREFETCH_WRITE;

	(void)flags;
	for (uint32_t i = 0; i < n; i++) {
		const struct soft_mr *m;
		int rc = 0;

		soft_rwlock_read(&sc->mr_lock);
		m = lookup(sc, sge[i].lkey);
		if (!m)
			rc = rv_err(ENOENT, "rv_mr_advise", "sges[%u]: lkey 0x%x names no MR of this context", i,
				    sge[i].lkey);
		else if (m->mw)
			rc = rv_err(EINVAL, "rv_mr_advise", "sges[%u]: key 0x%x is a memory window's, not an MR's",
				    i, sge[i].lkey);
		else if (m->pd != pd)
			rc = rv_err(EPERM, "rv_mr_advise", "sges[%u]: the MR of lkey 0x%x belongs to another PD", i,
				    sge[i].lkey);
		else if (write && !(m->access & RV_ACCESS_LOCAL_WRITE))
			rc = rv_err(EPERM, "rv_mr_advise", "sges[%u]: PREFETCH_WRITE on an MR registered without "
				    "RV_ACCESS_LOCAL_WRITE", i);
		else if (check(m, pd, NULL, 0, sge[i].addr, sge[i].length) != SOFT_MEM_OK)
			rc = rv_err(EFAULT, "rv_mr_advise", "sges[%u]: [0x%llx, +%u) is not inside the MR of "
				    "lkey 0x%x", i, (unsigned long long)sge[i].addr, sge[i].length, sge[i].lkey);
		soft_rwlock_give(&sc->mr_lock);
		if (rc < 0)
			return rc;
		if (advice == RV_ADVISE_MR_PREFETCH_NO_FAULT)
			continue;
		/* Outside the lock: a deregistration meanwhile leaves the pages
		 * populated, which harms nothing (advice is best effort). */
		rc = populate(sge[i].addr, sge[i].length, write);
		if (rc < 0)
			return rv_err(-rc, "rv_mr_advise", "sges[%u]: [0x%llx, +%u) could not be faulted in for "
				      "%s: %s", i, (unsigned long long)sge[i].addr, sge[i].length,
				      write ? "writing" : "reading", rc == -EFAULT ? "it is not mapped with that "
				      "access (unmapped, or protected against it)" : strerror(-rc));
	}
	return 0;
}

/* ---- memory windows: entries of the same STag table ---- */

int soft_mw_alloc(struct rv_mw *mw)
{
	struct soft_ctx *sc = mw->pd->ctx->drv_ctx;
	struct soft_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return rv_err(ENOMEM, "rv_mw_alloc", "out of memory for the software MW");
	m->memfd = -1;
	m->pd = mw->pd->drv_pd;
	m->mw = true;
	m->mw_type = (uint8_t)mw->type;
	/* Random index and key, as for MRs; each bind increments the low byte. */
	int rc = stag_add(sc, m, "rv_mw_alloc");
	if (rc != 0) {
		free(m);
		return rc;
	}
	mw->rkey = m->key;
	mw->drv_mw = m;
	return 0;
}

static void unlink_entry(struct soft_ctx *sc, struct soft_mr *m)
{
	for (struct soft_mr **pp = &sc->mr_hash[bucket(sc, m->key)]; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			return;
		}
	}
}

int soft_mw_dealloc(struct rv_mw *mw)
{
	struct soft_ctx *sc = mw->pd->ctx->drv_ctx;
	struct soft_mr *m = mw->drv_mw;

	if (!m)
		return 0;
	/* Under the write lock: the key changes with binds run by the progress thread. */
	soft_rwlock_write(&sc->mr_lock);
	unlink_entry(sc, m);
	sc->n_mr--;
	soft_rwlock_give(&sc->mr_lock);
	free(m);
	mw->drv_mw = NULL;
	return 0;
}

/* BIND_MW: imm = the key at post time, rkey = the key after the bind,
 * remote_addr/compare_add/swap = addr/length/access (qp.c soft_mw_bind). */
static uint32_t exec_bind(struct soft_ctx *sc, struct soft_qp *q, const struct soft_swqe *w)
{
	struct soft_mr *m = lookup(sc, w->imm), *n;

	if (!m) {
		/* Replayed after a reconnect: already applied. */
		n = lookup(sc, w->rkey);
		return n && n->mw ? RV_WC_SUCCESS : RV_WC_MW_BIND_ERR;
	}
	if (!m->mw || m->pd != q->qp->pd->drv_pd)
		return RV_WC_MW_BIND_ERR;
	if (m->mw_type == RV_MW_TYPE_2 && m->bound)
		return RV_WC_MW_BIND_ERR; /* a type 2 window is invalidated before it is bound again */
	n = lookup(sc, w->rkey);
	if (n && n != m)
		return RV_WC_MW_BIND_ERR; /* the incremented key is taken: vanishingly rare */
	unlink_entry(sc, m);
	m->key = w->rkey;
	m->next = sc->mr_hash[bucket(sc, m->key)];
	sc->mr_hash[bucket(sc, m->key)] = m;
	m->addr = w->remote_addr;
	m->length = w->compare_add;
	m->access = (uint32_t)w->swap;
	m->bound = w->compare_add != 0;
	m->qp = m->mw_type == RV_MW_TYPE_2 ? q->qp : NULL;
	return RV_WC_SUCCESS;
}

/* LOCAL_INV: imm = the rkey of a type 2 window of the QP's PD (soft0 has no
 * fast-registration MRs); bound by this QP, or already invalid. */
static uint32_t exec_local_inv(struct soft_ctx *sc, struct soft_qp *q, const struct soft_swqe *w)
{
	struct soft_mr *m = lookup(sc, w->imm);

	if (!m || !m->mw || m->mw_type != RV_MW_TYPE_2 || m->pd != q->qp->pd->drv_pd)
		return RV_WC_LOC_PROT_ERR;
	if (m->bound && m->qp != q->qp)
		return RV_WC_LOC_PROT_ERR;
	m->bound = false;
	m->qp = NULL;
	return RV_WC_SUCCESS;
}

uint32_t soft_mw_exec(struct soft_qp *q, const struct soft_swqe *w)
{
	struct soft_ctx *sc = q->sc;
	uint32_t st;

	soft_rwlock_write(&sc->mr_lock);
	st = w->opcode == RV_WR_BIND_MW ? exec_bind(sc, q, w) : exec_local_inv(sc, q, w);
	soft_rwlock_give(&sc->mr_lock);
	return st;
}

bool soft_mw_remote_inv(struct soft_qp *q, uint32_t stag)
{
	struct soft_ctx *sc = q->sc;
	struct soft_mr *m;
	bool ok = false;

	soft_rwlock_write(&sc->mr_lock);
	m = lookup(sc, stag);
	if (m && m->mw && m->mw_type == RV_MW_TYPE_2 && m->pd == q->qp->pd->drv_pd && (!m->bound || m->qp == q->qp)) {
		m->bound = false;
		m->qp = NULL;
		ok = true;
	}
	soft_rwlock_give(&sc->mr_lock);
	return ok;
}

void soft_mw_qp_gone(struct soft_ctx *sc, const struct rv_qp *qp)
{
	soft_rwlock_write(&sc->mr_lock);
	for (uint32_t i = 0; i < sc->mr_buckets; i++) {
		for (struct soft_mr *m = sc->mr_hash[i]; m; m = m->next) {
			if (m->mw && m->qp == qp) {
				m->bound = false;
				m->qp = NULL;
			}
		}
	}
	soft_rwlock_give(&sc->mr_lock);
}
