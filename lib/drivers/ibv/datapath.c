/*
 * The data path: posting work requests and polling completions.
 *
 * Owns: the translation of rverbs WR arrays into libibverbs WR chains and of
 * ibv_wc arrays into rv_wc. Never allocates, never locks, never uses an atomic:
 * a single WR that needs no translation (rv_send_wr and rv_recv_wr start as
 * ibv_send_wr and ibv_recv_wr) goes to libibverbs as it is, another single
 * WR is translated onto the stack, more in chains of RV_IBV_BATCH on the
 * stack; the scatter/gather lists are passed through without copying, and
 * completions are polled straight into the caller's rv_wc array. The only
 * calls out are ibv_post_send / ibv_post_recv / ibv_poll_cq (provider code,
 * no syscall on the usual providers), and rv_err on failure.
 */
#include <errno.h>
#include <inttypes.h>

#include "ibv-driver.h"
#include "translate.h"

/* WRs translated and posted per libibverbs call.
 * 16 ibv_send_wr are about 2 KiB of stack; larger batches buy nothing since
 * a provider rings its doorbell once per call anyway. */
#define RV_IBV_BATCH 16

/* Which WR of a chain libibverbs reported as bad; 0 if it pointed elsewhere
 * (a provider that does not set bad_wr: assume nothing of the batch went). */
static size_t bad_index(const void *chain, const void *bad, size_t elem, size_t n)
{
	uintptr_t c = (uintptr_t)chain, b = (uintptr_t)bad;

	if (b < c || b >= c + elem * n)
		return 0;
	return (size_t)(b - c) / elem;
}

/* A WR the driver could not translate (rv_ibv_send_wr_to_ibv's refusals). */
static int send_untranslatable(struct rv_qp *qp, const rv_send_wr *wr, size_t index, int err)
{
	if (wr->num_sge && !wr->sg_list)
		return rv_err(EINVAL, "rv_qp_post_send", "WR %zu has num_sge %u but sg_list is NULL", index,
			      wr->num_sge);
	if (wr->reserved_next)
		return rv_err(EINVAL, "rv_qp_post_send", "WR %zu has reserved_next %p: it must be NULL "
			      "(rverbs posts arrays of WRs, not chains)", index, wr->reserved_next);
	if (err == EINVAL)
		return rv_err(EINVAL, "rv_qp_post_send", "WR %zu has opcode %u, which is not an "
			      "rv_wr_opcode", index, wr->opcode);
	rv_err(err, "rv_qp_post_send", "WR %zu (%s) on QP %u cannot be posted through "
	       "libibverbs", index, rv_ibv_wr_opcode_name(wr->opcode), qp->qpn);
	if (wr->opcode == RV_WR_BIND_MW)
		rv_err_hint("memory-window binds are not supported by the libibverbs driver of "
			    "rverbs yet");
	return -err;
}

/* A WR libibverbs refused. */
static int send_failed(struct rv_qp *qp, const rv_send_wr *wr, size_t index, int err)
{
	char ebuf[128];
	/* The caller's list may be what is wrong: do not walk a NULL one. */
	uint64_t len = wr->sg_list ? rv_send_wr_length(wr) : 0;

	rv_err(err, "rv_qp_post_send", "ibv_post_send refused WR %zu (%s, %u SGE, %" PRIu64
	       " bytes) on QP %u: %s", index, rv_ibv_wr_opcode_name(wr->opcode), wr->num_sge,
	       len, qp->qpn, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == ENOMEM)
		rv_err_hint("the send queue is full (max_send_wr %u): poll the send CQ before "
			    "posting more, or create the QP with a deeper queue",
			    qp->cap.max_send_wr);
	else if (err == EINVAL)
		rv_err_hint("check num_sge <= max_send_sge (%u), an inline payload <= "
			    "max_inline_data (%u), the QP state (%s: sends need RTS) and that "
			    "the opcode suits a %s QP", qp->cap.max_send_sge,
			    qp->cap.max_inline_data, rv_ibv_qp_state_name(qp->state),
			    rv_ibv_qp_type_name(qp->qp_type));
	return -err;
}

/* opcode and send_flags as one 8-byte word (adjacent 32-bit fields,
 * translate.c): the opcode in the low half on a little-endian machine. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define OP_FLAGS(op, fl) ((uint64_t)(fl) << 32 | (uint32_t)(op))
#else
#define OP_FLAGS(op, fl) ((uint64_t)(op) << 32 | (uint32_t)(fl))
#endif

/* Zero for a WRITE or SEND with or without immediate (opcodes 0 to 3) whose
 * flags are libibverbs ones or RV_SEND_INLINE, with reserved_next NULL: what
 * send_chain's batch loop builds, found with one load, mask and OR. */
static inline uint64_t batch_not_buildable(const rv_send_wr *wr)
{
	uint64_t w;

	memcpy(&w, &wr->opcode, sizeof(w));
	return (w & OP_FLAGS(~(uint32_t)RV_WR_SEND_WITH_IMM,
			     ~(RV_IBV_SEND_FLAGS_PASSED | (uint32_t)RV_SEND_INLINE))) |
	       (uintptr_t)wr->reserved_next;
}

/* Translate up to want WRs (the first is the caller's WR number first) into
 * chain, linked; stop at the first the driver refuses (*terr: its negative
 * errno) or, on a UD QP, the first whose address handle or QPN is wrong
 * (*uerr, message set). Returns how many were translated. What holds for
 * the whole QP (its type, its inline limit) is looked at once, not per WR. */
static inline size_t send_chain(const struct rv_qp *qp, const rv_send_wr *wr, size_t first,
				size_t want, struct ibv_send_wr *chain, int *terr, int *uerr)
{
	uint32_t max_inline = qp->cap.max_inline_data;
	/* An XRC initiator's WRs carry remote_srqn, which only the general
	 * translation (rv_ibv_send_wr_other) places: not "connected" here. */
	bool connected = qp->qp_type != RV_QPT_UD && qp->qp_type != RV_QPT_XRC_SEND;
	bool ud = qp->qp_type == RV_QPT_UD;
	struct ibv_send_wr *out = chain, *end = chain + want;

	/* Each WR points at the next slot; the caller cuts off the last. */
	while (out < end) {
		/* The usual WR on a connected QP with inline room: a WRITE or
		 * SEND (with or without immediate), one SGE, libibverbs flags.
		 * READs and the rest take the one-at-a-time path below, so
		 * that this loop tests neither the inline room nor READ. A
		 * caller's RV_SEND_INLINE passes as it is (rv_ibv_send_flags'
		 * rule for these opcodes). */
		if (RV_LIKELY(connected && max_inline)) {
			for (; out < end; out++, wr++) {
				uint32_t fl;

				if (RV_UNLIKELY(batch_not_buildable(wr) || wr->num_sge != 1 || !wr->sg_list))
					break;
				fl = wr->send_flags;
				if (wr->sg_list[0].length <= max_inline)
					fl |= IBV_SEND_INLINE;
				rv_ibv_send_wr_fill(wr, fl, out + 1, out);
			}
			if (out == end)
				break;
		}
		/* One WR the loop above does not take. A list the provider
		 * would dereference must be there (send_untranslatable). */
		if (RV_UNLIKELY(wr->num_sge && !wr->sg_list)) {
			*terr = -EINVAL;
			break;
		}
		if (RV_LIKELY(wr->opcode <= RV_WR_RDMA_READ && connected && !wr->reserved_next)) {
			rv_ibv_send_wr_common(qp, max_inline, wr, out + 1, out);
		} else {
			if (RV_UNLIKELY(wr->reserved_next)) {
				*terr = -EINVAL; /* send_untranslatable says why */
				break;
			}
			/* UD: the address handle and QPN are checked before the
			 * provider dereferences them. */
			if (ud &&
			    (*uerr = rv_ud_wr_check(qp, wr, first + (size_t)(out - chain))) < 0)
				break;
			*terr = rv_ibv_send_wr_other(qp, wr, out);
			if (RV_UNLIKELY(*terr))
				break;
			out->next = out + 1;
		}
		out++;
		wr++;
	}
	return (size_t)(out - chain);
}

/* The WRs of wrs from done on (those before it are posted), or a WR the
 * one-WR path does not take: translated into chains of RV_IBV_BATCH on the
 * stack. */
static __attribute__((noinline)) int post_send_chains_from(struct rv_qp *qp, const rv_send_wr *wrs,
							   size_t n, size_t *n_posted, size_t done)
{
	struct ibv_send_wr chain[RV_IBV_BATCH];
	size_t sink;

	if (!n_posted) /* the caller's NULL, passed through (driver.c) */
		n_posted = &sink;
	while (done < n) {
		struct ibv_send_wr *bad = NULL;
		size_t want = n - done < RV_IBV_BATCH ? n - done : RV_IBV_BATCH;
		int terr = 0, uerr = 0, rc;
		size_t k = send_chain(qp, &wrs[done], done, want, chain, &terr, &uerr);

		if (k > 0) {
			chain[k - 1].next = NULL;
			rc = ibv_post_send(qp->drv_qp, chain, &bad);
			if (RV_UNLIKELY(rc != 0)) {
				size_t i = bad_index(chain, bad, sizeof(chain[0]), k);

				*n_posted = done + i;
				return send_failed(qp, &wrs[done + i], done + i, rv_ibv_errno(rc));
			}
		}
		done += k;
		if (RV_UNLIKELY(uerr)) {
			*n_posted = done;
			return uerr;
		}
		if (RV_UNLIKELY(terr)) {
			*n_posted = done;
			return send_untranslatable(qp, &wrs[done], done, -terr);
		}
	}
	*n_posted = done;
	return 0;
}

static int post_send_chains(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	return post_send_chains_from(qp, wrs, n, n_posted, 0);
}

/*
 * A batch on a connected QP, while its WRs are WRITEs and SENDs (with or
 * without immediate) of one SGE, with libibverbs flags (RV_SEND_INLINE
 * allowed) and reserved_next NULL: each chunk of RV_IBV_BATCH is checked
 * and built in one loop that tests nothing else, then posted with one call.
 * A WR of another kind hands the array, from the start of its chunk
 * (nothing of that chunk posted yet), to post_send_chains_from. The test
 * of a WR is one load, mask and OR (batch_not_buildable) and its SGE count;
 * the build is a block copy with next, the inline bit (one compare with
 * inline_below) and, for the two opcodes with one, the immediate patched
 * in. What is needed after a post is kept in the frame, not in callee-saved
 * registers (saving and restoring them costs more than reloading it once
 * per chunk).
 */
static __attribute__((noinline)) int post_send_batch(struct rv_qp *qp, const rv_send_wr *wrs, size_t n,
						     size_t *n_posted)
{
	struct {
		struct ibv_send_wr chain[RV_IBV_BATCH], *bad;
		struct rv_qp *qp;
		const rv_send_wr *wrs;
		size_t *n_posted, n, done, k;
	} f;
	int rc;

	/* Every way out below but success sets *n_posted again. */
	if (n_posted) /* may be NULL (driver.c) */
		*n_posted = n;
	f.qp = qp;
	f.wrs = wrs;
	f.n_posted = n_posted;
	f.n = n;
	f.done = 0;
	do {
		size_t k = f.n - f.done < RV_IBV_BATCH ? f.n - f.done : RV_IBV_BATCH;
		const rv_send_wr *wr = f.wrs + f.done, *end = wr + k;

		f.k = k;
		struct ibv_send_wr *out = f.chain;
		uint32_t below = f.qp->inline_below;

		do { /* k >= 1 */
			if (RV_UNLIKELY(batch_not_buildable(wr) || wr->num_sge != 1 || !wr->sg_list))
				return post_send_chains_from(f.qp, f.wrs, f.n, f.n_posted, f.done);
			rv_ibv_send_wr_copy(wr, out);
			out->next = out + 1;
			if (wr->sg_list[0].length < below)
				out->send_flags |= IBV_SEND_INLINE;
			if (wr->opcode & 1)
				out->imm_data = htobe32(wr->imm_data);
			out++;
		} while (++wr != end);
		out[-1].next = NULL;
		rc = ibv_post_send(f.qp->drv_qp, f.chain, &f.bad);
		/* The empty asm says the call may have changed f: the
		 * compiler reloads what it needs from the frame. */
		__asm__ __volatile__("" : "+m"(f));
		if (RV_UNLIKELY(rc != 0)) {
			size_t i = f.done + bad_index(f.chain, f.bad, sizeof(f.chain[0]), f.k);

			if (f.n_posted)
				*f.n_posted = i;
			return send_failed(f.qp, &f.wrs[i], i, rv_ibv_errno(rc));
		}
		f.done += f.k;
	} while (f.done < f.n);
	return 0;
}

/* A WRITE or SEND the caller marked inline, with libibverbs flags only
 * (RV_SEND_INLINE set, nothing outside RV_IBV_SEND_FLAGS_PASSED besides),
 * and reserved_next NULL: zero when (opcode, flags) masked equals the
 * wanted word and reserved_next is NULL, so one OR joins both tests. */
static inline uint64_t not_as_is_inline(const rv_send_wr *wr)
{
	uint64_t w;

	memcpy(&w, &wr->opcode, sizeof(w));
	return ((w & OP_FLAGS(~(uint32_t)RV_WR_SEND, ~RV_IBV_SEND_FLAGS_PASSED)) ^
		OP_FLAGS(0, RV_SEND_INLINE)) | (uintptr_t)wr->reserved_next;
}

/* (num_sge, opcode) as one 8-byte word (adjacent 32-bit fields, translate.c). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SGE_OP(nsge, op) ((uint64_t)(op) << 32 | (uint32_t)(nsge))
#else
#define SGE_OP(nsge, op) ((uint64_t)(nsge) << 32 | (uint32_t)(op))
#endif

/* Zero for one SGE and a WRITE or SEND without immediate (opcodes 0 and 2),
 * with reserved_next NULL: one load, mask, flip and OR, as above but on the
 * (num_sge, opcode) word, whose mask differs from the one above (with the
 * same mask the compiler would keep it in a register for both tests, one
 * move more on the as-is post). The flags are tested apart. */
static inline uint64_t not_one_sge_write_or_send(const rv_send_wr *wr)
{
	uint64_t w;

	memcpy(&w, &wr->num_sge, sizeof(w));
	return ((w & SGE_OP(~0u, ~(uint32_t)RV_WR_SEND)) ^ SGE_OP(1, 0)) | (uintptr_t)wr->reserved_next;
}

/* Zero for a WRITE or SEND with or without immediate (opcodes 0 to 3) whose
 * flags are libibverbs ones without IBV_SEND_INLINE, with reserved_next NULL. */
static inline uint64_t not_plain_write_or_send(const rv_send_wr *wr)
{
	uint64_t w;

	memcpy(&w, &wr->opcode, sizeof(w));
	return (w & OP_FLAGS(~(uint32_t)RV_WR_SEND_WITH_IMM, ~RV_IBV_SEND_FLAGS_PASSED)) |
	       (uintptr_t)wr->reserved_next;
}

/* What the failure path of a one-WR post needs lives in the poster's frame
 * beside the WR, whose address escapes to libibverbs: the compiler reloads
 * it after the call on failure only, instead of saving and restoring three
 * callee-saved registers on every post. */
struct send_frame {
	struct ibv_send_wr w, *bad;
	struct rv_qp *qp;
	const rv_send_wr *wr;
	size_t *n_posted;
};

/* Post w, the libibverbs form of the caller's one WR wr (wr itself, or f->w).
 * Inlined at each use, so that the as-is post passes the caller's pointer
 * straight on. */
static inline __attribute__((always_inline)) int post_send_one(struct rv_qp *qp, struct ibv_send_wr *w,
							       const rv_send_wr *wr, size_t *n_posted,
							       struct send_frame *f)
{
	int rc;

	f->qp = qp;
	f->wr = wr;
	f->n_posted = n_posted;
	if (n_posted) /* may be NULL (driver.c) */
		*n_posted = 1;
	rc = ibv_post_send(qp->drv_qp, w, &f->bad);
	if (RV_LIKELY(rc == 0)) {
		/* 0 is already in the return register: the empty asm keeps
		 * the compiler from zeroing it once more. */
		__asm__("" : "+r"(rc));
		return rc;
	}
	if (f->n_posted)
		*f->n_posted = 0;
	return send_failed(f->qp, f->wr, 0, rv_ibv_errno(rc));
}

/* The body of both entries: any false for the one-WR entry lib/qp.c caches
 * in RC and UC QPs, which then tests neither n nor the QP type. */
static inline __attribute__((always_inline)) int post_send_entry(struct rv_qp *qp, const rv_send_wr *wrs,
								 size_t n, size_t *n_posted, bool any)
{
	struct send_frame f;

	if (RV_UNLIKELY(any && (n != 1 || qp->qp_type == RV_QPT_UD || qp->qp_type == RV_QPT_XRC_SEND))) {
		if (n > 1 && qp->qp_type != RV_QPT_UD)
			return post_send_batch(qp, wrs, n, n_posted);
		return post_send_chains(qp, wrs, n, n_posted);
	}
	/* SGEs counted but no list: refused by the general path, before the
	 * provider dereferences it (issue 17). One load of a field in the
	 * line the tests below read. */
	if (RV_UNLIKELY(!wrs->sg_list) && wrs->num_sge)
		return post_send_chains(qp, wrs, n, n_posted);
	/* A WRITE or SEND the caller marked inline, with libibverbs flags
	 * only: the caller's WR is the libibverbs WR (rverbs/qp.h,
	 * translate.c), nothing to build. ibv_post_send() does not write
	 * through it; the cast only drops the const its prototype lacks. */
	if (RV_LIKELY(!not_as_is_inline(wrs)))
		return post_send_one(qp, (struct ibv_send_wr *)(uintptr_t)wrs, wrs, n_posted, &f);
	/* Read reserved_next again below rather than keep it in a register
	 * from the test above, so that the test above reads it from memory
	 * in one instruction with the OR. */
	__asm__ __volatile__("" ::: "memory");
	/* A WRITE or SEND without immediate, one SGE, reserved_next NULL,
	 * libibverbs flags without inline: the usual WR whose inline bit
	 * rverbs decides. It goes inline when its length is below the QP's
	 * inline_below (one compare), as it is otherwise. */
	if (RV_LIKELY(!not_one_sge_write_or_send(wrs) &&
		      !(wrs->send_flags & ~RV_IBV_SEND_FLAGS_PASSED))) {
		if (RV_LIKELY(wrs->sg_list[0].length < qp->inline_below)) {
			/* The caller's WR (reserved_next, NULL, becomes
			 * next) with the inline bit set in the copy. */
			rv_ibv_send_wr_copy(wrs, &f.w);
			f.w.send_flags |= IBV_SEND_INLINE;
			return post_send_one(qp, &f.w, wrs, n_posted, &f);
		}
		return post_send_one(qp, (struct ibv_send_wr *)(uintptr_t)wrs, wrs, n_posted, &f);
	}
	/* reserved_next read again below too, for the same reason. */
	__asm__ __volatile__("" ::: "memory");
	/* The same with immediate data (host order in rverbs): built on the
	 * stack, inline when it fits. */
	if (RV_LIKELY(!not_plain_write_or_send(wrs) && wrs->num_sge == 1)) {
		rv_ibv_send_wr_copy(wrs, &f.w);
		if (wrs->sg_list[0].length < qp->inline_below)
			f.w.send_flags |= IBV_SEND_INLINE;
		f.w.imm_data = htobe32(wrs->imm_data);
		return post_send_one(qp, &f.w, wrs, n_posted, &f);
	}
	if (RV_UNLIKELY(wrs->reserved_next)) /* post_send_chains says why */
		return post_send_chains(qp, wrs, n, n_posted);
	/* A READ of one SGE with plain flags never goes inline: as it is. */
	if (wrs->opcode == RV_WR_RDMA_READ && !(wrs->send_flags & ~RV_IBV_SEND_FLAGS_PASSED) &&
	    wrs->num_sge == 1)
		return post_send_one(qp, (struct ibv_send_wr *)(uintptr_t)wrs, wrs, n_posted, &f);
	/* Anything else (rverbs' own flags, several SGEs, the other opcodes):
	 * the general path. */
	return post_send_chains(qp, wrs, n, n_posted);
}

int rv_ibv_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	return post_send_entry(qp, wrs, n, n_posted, true);
}

int rv_ibv_post_send_one_connected(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	return post_send_entry(qp, wrs, 1, n_posted, false);
}

/* ibv_post_recv refused WR i. */
static int recv_failed(struct rv_qp *qp, const rv_recv_wr *wr, size_t i, int rc)
{
	int err = rv_ibv_errno(rc);
	char ebuf[128];

	rv_err(err, "rv_qp_post_recv", "ibv_post_recv refused WR %zu (%u SGE) on QP %u: %s", i,
	       wr->num_sge, qp->qpn, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (err == ENOMEM)
		rv_err_hint("the receive queue is full (max_recv_wr %u): wait for receives to "
			    "complete or create the QP with a deeper queue", qp->cap.max_recv_wr);
	else if (err == EINVAL)
		rv_err_hint("check num_sge <= max_recv_sge (%u) and the QP state (%s: receives "
			    "need INIT or later)", qp->cap.max_recv_sge,
			    rv_ibv_qp_state_name(qp->state));
	return -err;
}

/* Up to want receive WRs translated into chain, linked; stops before the
 * first whose reserved_next is set or whose SGEs have no list. Returns how many. */
static size_t recv_chain(const rv_recv_wr *wrs, size_t want, struct ibv_recv_wr *chain)
{
	size_t k;

	for (k = 0; k < want; k++) {
		if (RV_UNLIKELY(wrs[k].reserved_next || (wrs[k].num_sge && !wrs[k].sg_list)))
			break;
		rv_ibv_recv_wr_to_ibv(&wrs[k], &chain[k]);
		if (k > 0)
			chain[k - 1].next = &chain[k];
	}
	return k;
}

static int recv_reserved_set(const char *func, const rv_recv_wr *wr, size_t i)
{
	if (wr->num_sge && !wr->sg_list)
		return rv_err(EINVAL, func, "WR %zu has num_sge %u but sg_list is NULL", i, wr->num_sge);
	return rv_err(EINVAL, func, "WR %zu has reserved_next %p: it must be NULL (rverbs posts "
		      "arrays of WRs, not chains)", i, wr->reserved_next);
}

static __attribute__((noinline)) int post_recv_chains(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	struct ibv_qp *q = qp->drv_qp;
	struct ibv_recv_wr chain[RV_IBV_BATCH];
	size_t done = 0, sink;

	if (!n_posted) /* the caller's NULL, passed through (driver.c) */
		n_posted = &sink;

	while (done < n) {
		struct ibv_recv_wr *bad = NULL;
		size_t k, want = n - done < RV_IBV_BATCH ? n - done : RV_IBV_BATCH;
		int rc;

		k = recv_chain(&wrs[done], want, chain);
		rc = k ? ibv_post_recv(q, chain, &bad) : 0;
		if (RV_UNLIKELY(rc != 0)) {
			size_t i = bad_index(chain, bad, sizeof(chain[0]), k);

			*n_posted = done + i;
			return recv_failed(qp, &wrs[done + i], done + i, rc);
		}
		done += k;
		if (RV_UNLIKELY(k < want)) {
			*n_posted = done;
			return recv_reserved_set("rv_qp_post_recv", &wrs[done], done);
		}
	}
	*n_posted = done;
	return 0;
}

int rv_ibv_post_recv(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	/* As in rv_ibv_post_send: the failure path's arguments in the frame. */
	struct {
		struct ibv_recv_wr *bad;
		struct rv_qp *qp;
		const rv_recv_wr *wr;
		size_t *n_posted;
	} f;
	int rc;

	/* rv_recv_wr has ibv_recv_wr's layout (translate.c proves it): a
	 * single WR goes to libibverbs as it is. */
	if (RV_UNLIKELY(n != 1 || wrs->reserved_next || (!wrs->sg_list && wrs->num_sge)))
		return post_recv_chains(qp, wrs, n, n_posted);
	f.qp = qp;
	f.wr = wrs;
	f.n_posted = n_posted;
	if (n_posted) /* may be NULL (driver.c) */
		*n_posted = 1;
	rc = ibv_post_recv(qp->drv_qp, (struct ibv_recv_wr *)(uintptr_t)wrs, &f.bad);
	if (RV_UNLIKELY(rc != 0)) {
		if (f.n_posted)
			*f.n_posted = 0;
		return recv_failed(f.qp, f.wr, 0, rc);
	}
	return 0;
}

/* Whether a CQ error event of this CQ has been read and acknowledged: the
 * only asynchronous event affiliated with a CQ is IBV_EVENT_CQ_ERR, and
 * ibv_ack_async_event() (rv_ibv_get_async_event acks each event as it reads
 * it) counts it in the CQ's async_events_completed. Providers that report an
 * overflow only by that event (rxe: ibv_poll_cq keeps returning what the CQ
 * holds, then 0) thus make rv_cq_poll return -EOVERFLOW once the CQ is empty,
 * as it does where ibv_poll_cq itself fails. Read on the empty poll only: one
 * load (relaxed: written once, under libibverbs' CQ mutex) and a compare. */
static inline bool cq_err_seen(const struct rv_cq *cq)
{
	struct ibv_cq *icq = cq->drv_cq;

	return __atomic_load_n(&icq->async_events_completed, __ATOMIC_RELAXED) != 0;
}

static int poll_failed(struct rv_cq *cq, int got)
{
	if (got == 0)
		rv_err(EOVERFLOW, "rv_cq_poll", "the device reported a CQ error (IBV_EVENT_CQ_ERR) on this CQ "
		       "of %u entries, and it holds no more completions", cq->cqe);
	else
		rv_err(EOVERFLOW, "rv_cq_poll", "ibv_poll_cq on CQ of %u entries returned %d: the CQ is "
		       "in error", cq->cqe, got);
	rv_err_hint("usually the CQ overflowed: more work was outstanding on its QPs than it "
		    "has entries; size the CQ for the sum of their queue depths (completions were "
		    "lost; the QPs are in the error state, or stuck on some devices)");
	return -EOVERFLOW;
}

int rv_ibv_post_srq_recv(struct rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted)
{
	struct ibv_recv_wr chain[RV_IBV_BATCH];
	size_t done = 0;

	while (done < n) {
		struct ibv_recv_wr *bad = NULL;
		size_t k, want = n - done < RV_IBV_BATCH ? n - done : RV_IBV_BATCH;
		int rc;

		k = recv_chain(&wrs[done], want, chain);
		rc = k ? ibv_post_srq_recv(srq->drv_srq, chain, &bad) : 0;
		if (RV_UNLIKELY(rc != 0)) {
			size_t i = bad_index(chain, bad, sizeof(chain[0]), k);
			int err = rv_ibv_errno(rc);
			char ebuf[128];

			*n_posted = done + i;
			rv_err(err, "rv_srq_post_recv", "ibv_post_srq_recv refused WR %zu (%u SGE): %s",
			       done + i, wrs[done + i].num_sge, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
			if (err == ENOMEM)
				rv_err_hint("the SRQ is full (max_wr %u): wait for receives to complete or "
					    "create a larger SRQ", srq->max_wr);
			else if (err == EINVAL)
				rv_err_hint("check num_sge <= the SRQ's max_sge (%u)", srq->max_sge);
			return -err;
		}
		done += k;
		if (RV_UNLIKELY(k < want)) {
			*n_posted = done;
			return recv_reserved_set("rv_srq_post_recv", &wrs[done], done);
		}
	}
	*n_posted = done;
	return 0;
}

/* What a poll that returned other than 0 or 1 completions does: a negative
 * count is the CQ's error; more than one completion are fixed in a loop. Out
 * of line, so that the usual polls (none, one) keep a short path. */
static __attribute__((noinline)) int poll_more(struct rv_cq *cq, rv_wc *wc, int got)
{
	rv_wc *end;

	if (RV_UNLIKELY(got < 0))
		return poll_failed(cq, got);
	for (end = wc + got; wc != end; wc++)
		rv_ibv_wc_fix(wc);
	return got;
}

int rv_ibv_cq_poll(struct rv_cq *cq, rv_wc *wc, int max)
{
	/* What is needed after the call lives in this frame: the empty asm
	 * says it reads and rewrites f in memory, so the compiler stores the two
	 * pointers and reloads them when there is work after the call, instead
	 * of saving and restoring two callee-saved registers on every poll,
	 * empty ones too. */
	struct {
		struct rv_cq *cq;
		rv_wc *wc;
	} f = {cq, wc};
	int got;

	__asm__ __volatile__("" : "+m"(f));
	/* rv_wc has ibv_wc's layout and size (translate.c proves it): the
	 * provider writes the caller's array directly, and each completion is
	 * fixed up in place (imm_data byte order, reserved). */
	got = ibv_poll_cq(cq->drv_cq, max, (struct ibv_wc *)(void *)wc);
	if (RV_LIKELY(got == 0))
		return RV_UNLIKELY(cq_err_seen(f.cq)) ? poll_failed(f.cq, 0) : 0;
	if (RV_LIKELY(got == 1)) { /* a busy poller's usual catch: no loop */
		rv_ibv_wc_fix(f.wc);
		return 1;
	}
	return poll_more(f.cq, f.wc, got);
}
