/*
 * Selective signalling as a QP policy, on every driver.
 *
 * rv_qp_set_signal_every(qp, N) puts sig_post_send in qp->post_send and
 * sig_cq_poll in the send CQ's poll: with the policy off the data path is
 * exactly what it was (the handles' cached entry points), with it on the
 * posting thread marks WRs signalled and the polling thread accounts the
 * completions. Never locks, never allocates on the data path; the posted
 * and retired counters are atomics because posting and polling are often
 * two threads (a single poster and a single poller per QP, documented).
 *
 * Accounting: a ring of depth (max_send_wr) entries records, per posted WR,
 * its wr_id and whether it was signalled. A successful send completion
 * retires every WR up to its own signalled entry (the unsignalled ones before
 * it completed silently, in order; the first signalled entry with its wr_id,
 * else the first signalled one). An error completes WRs one by one,
 * signalled or not (the InfiniBand rule, and soft0's): the first error
 * retires up to the last entry of the current group with its wr_id, each
 * later one the oldest entry.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "driver.h"
#include "qp_signal.h"

struct rv_sig_entry {
	uint64_t wr_id;
	bool signalled;
};

struct rv_qp_signal {
	uint32_t every;             /* signal at least every N-th WR */
	uint32_t depth;             /* ring entries: cap.max_send_wr */
	uint32_t since;             /* poster: WRs posted unsignalled since the last signalled one */
	bool in_error;              /* poller: an error completion was seen (until RESET) */
	_Atomic uint64_t posted;    /* written by the poster */
	_Atomic uint64_t retired;   /* written by the poller */
	struct rv_qp *next_on_cq;   /* the next QP with a policy on the same send CQ */
	struct rv_sig_entry ring[]; /* depth entries, indexed by WR number % depth */
};

/* WRs copied per driver call when choosing their flags. */
#define SIG_CHUNK 16

static uint64_t outstanding(const struct rv_qp_signal *s)
{
	uint64_t p = atomic_load_explicit(&s->posted, memory_order_acquire);
	uint64_t r = atomic_load_explicit(&s->retired, memory_order_acquire);

	return p > r ? p - r : 0;
}

static int sig_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted)
{
	struct rv_qp_signal *s = qp->sig;
	uint64_t posted = atomic_load_explicit(&s->posted, memory_order_relaxed);
	uint64_t out = outstanding(s);
	size_t room = out < s->depth ? s->depth - (size_t)out : 0;
	size_t k = n < room ? n : room, done = 0;
	int rc = 0;

	while (done < k) {
		rv_send_wr tmp[SIG_CHUNK];
		size_t m = k - done < SIG_CHUNK ? k - done : SIG_CHUNK, p = 0;
		uint32_t since = s->since;

		for (size_t i = 0; i < m; i++) {
			struct rv_sig_entry *e = &s->ring[(posted + i) % s->depth];
			bool sig = (wrs[done + i].send_flags & RV_SEND_SIGNALED) || since + 1 >= s->every ||
				   done + i == k - 1;

			tmp[i] = wrs[done + i];
			if (sig)
				tmp[i].send_flags |= RV_SEND_SIGNALED;
			since = sig ? 0 : since + 1;
			e->wr_id = tmp[i].wr_id;
			e->signalled = sig;
		}
		/* Published before the driver sees the WRs, so that a poller
		 * never meets a completion of a WR it does not know yet; taken
		 * back below for what the driver did not post. */
		atomic_store_explicit(&s->posted, posted + m, memory_order_release);
		rc = qp->drv->post_send(qp, tmp, m, &p);
		if (p < m)
			atomic_store_explicit(&s->posted, posted + p, memory_order_release);
		for (size_t i = 0; i < p; i++)
			s->since = (tmp[i].send_flags & RV_SEND_SIGNALED) ? 0 : s->since + 1;
		posted += p;
		done += p;
		if (rc < 0 || p < m)
			break;
	}
	if (n_posted) /* NULL from the caller (lib/qp.c) */
		*n_posted = done;
	if (rc == 0 && done < n) {
		rc = rv_err(ENOMEM, "rv_qp_post_send", "posted %zu of %zu WRs: the send queue is full "
			    "(%" PRIu64 " WRs outstanding, max_send_wr %u)", done, n, out + done, s->depth);
		rv_err_hint("poll the send CQ (rv_qp_send_outstanding() says how much is still out); "
			    "the last WR posted was signalled, so a completion will come");
	}
	return rc;
}

/* Account one completion of qp (polled from its send CQ). */
static void account(struct rv_qp *qp, const rv_wc *wc)
{
	struct rv_qp_signal *s = qp->sig;
	bool shared = qp->recv_cq == qp->send_cq;
	uint64_t head = atomic_load_explicit(&s->retired, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&s->posted, memory_order_acquire);
	uint64_t through = UINT64_MAX;

	if (wc->status == RV_WC_SUCCESS) {
		uint64_t first = UINT64_MAX;

		if (shared && (wc->opcode & RV_WC_RECV))
			return;
		/* The signalled WR with this wr_id (normally the first one),
		 * else the first signalled one. */
		for (uint64_t i = head; i < tail; i++) {
			const struct rv_sig_entry *e = &s->ring[i % s->depth];
			if (!e->signalled)
				continue;
			if (first == UINT64_MAX)
				first = i;
			if (e->wr_id == wc->wr_id) {
				through = i;
				break;
			}
		}
		if (through == UINT64_MAX)
			through = first;
	} else if (!s->in_error) {
		/* The failed WR is in the current group (the earlier groups'
		 * completions were polled before it): the last entry with its
		 * wr_id, so that duplicate wr_ids can only retire too early,
		 * never leave work outstanding for ever. */
		for (uint64_t i = head; i < tail; i++) {
			const struct rv_sig_entry *e = &s->ring[i % s->depth];
			if (e->wr_id == wc->wr_id)
				through = i;
			if (e->signalled)
				break;
		}
		if (through == UINT64_MAX && !shared && head < tail)
			through = head;
		if (through != UINT64_MAX)
			s->in_error = true;
	} else if (head < tail && (!shared || s->ring[head % s->depth].wr_id == wc->wr_id)) {
		/* Flushed, in order: the oldest WR. */
		through = head;
	}
	if (through != UINT64_MAX)
		atomic_store_explicit(&s->retired, through + 1, memory_order_release);
}

/* The send CQ's poll while a QP on it has a policy. */
static int sig_cq_poll(struct rv_cq *cq, rv_wc *wc, int max)
{
	int got = cq->ctx->drv->cq_poll(cq, wc, max);

	for (int i = 0; i < got; i++) {
		for (struct rv_qp *qp = cq->sig_qps; qp; qp = qp->sig->next_on_cq) {
			if (qp->qpn == wc[i].qp_num) {
				account(qp, &wc[i]);
				break;
			}
		}
	}
	return got;
}

static void attach(struct rv_qp *qp, struct rv_qp_signal *s)
{
	struct rv_cq *cq = qp->send_cq;

	s->next_on_cq = cq->sig_qps;
	qp->sig = s;
	cq->sig_qps = qp;
	cq->poll = sig_cq_poll;
	qp->post_send = sig_post_send;
	qp->post_send_one = sig_post_send;
}

void rv_qp_signal_detach(struct rv_qp *qp)
{
	struct rv_cq *cq = qp->send_cq;

	if (!qp->sig)
		return;
	for (struct rv_qp **p = &cq->sig_qps; *p; p = &(*p)->sig->next_on_cq) {
		if (*p == qp) {
			*p = qp->sig->next_on_cq;
			break;
		}
	}
	qp->sig->next_on_cq = NULL;
	if (!cq->sig_qps)
		cq->poll = cq->ctx->drv->cq_poll;
	qp->post_send = rv_qp_plain_post_send(qp);
	qp->post_send_one = rv_qp_plain_post_send_one(qp);
}

void rv_qp_signal_free(struct rv_qp *qp)
{
	free(qp->sig);
	qp->sig = NULL;
}

void rv_qp_signal_reset(struct rv_qp *qp)
{
	struct rv_qp_signal *s = qp->sig;

	if (!s)
		return;
	atomic_store(&s->retired, atomic_load(&s->posted));
	s->since = 0;
	s->in_error = false;
}

RV_EXPORT int rv_qp_set_signal_every(rv_qp *qp, uint32_t n)
{
	struct rv_qp_signal *s;
	uint64_t out;
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (qp->sq_sig_all)
		return rv_err(EINVAL, __func__, "QP %u was created with sq_sig_all = 1: every WR is "
			      "signalled already; create it with RV_QP_INIT_ATTR_SQ_SIG_ALL and "
			      "sq_sig_all = 0 to use a signalling policy", qp->qpn);
	if (n > qp->cap.max_send_wr)
		return rv_err(EINVAL, __func__, "n = %u exceeds the send queue depth of QP %u "
			      "(max_send_wr %u): unsignalled work could fill the queue with "
			      "nothing to reclaim it; use 1..%u, or 0 to turn the policy off",
			      n, qp->qpn, qp->cap.max_send_wr, qp->cap.max_send_wr);
	rv_graph_lock(&qp->obj);
	if (n == 0) {
		out = qp->sig ? outstanding(qp->sig) : 0;
		if (out > 0) {
			rc = rv_err(EBUSY, __func__, "QP %u still has %" PRIu64 " send WRs outstanding; "
				    "poll its send CQ until rv_qp_send_outstanding() is 0, then turn "
				    "the policy off", qp->qpn, out);
		} else if (qp->sig) {
			rv_qp_signal_detach(qp);
			rv_qp_signal_free(qp);
		}
	} else if (qp->sig) {
		qp->sig->every = n;
	} else {
		s = calloc(1, sizeof(*s) + qp->cap.max_send_wr * sizeof(s->ring[0]));
		if (!s) {
			rc = rv_err(ENOMEM, __func__, "out of memory");
		} else {
			s->every = n;
			s->depth = qp->cap.max_send_wr;
			attach(qp, s);
		}
	}
	rv_graph_unlock(&qp->obj);
	return rc;
}

RV_EXPORT int rv_qp_send_outstanding(rv_qp *qp)
{
	int rc = rv_obj_check(RV_COBJ(qp), RV_OBJ_QP, __func__);

	if (rc < 0)
		return rc;
	if (!qp->sig)
		return rv_err(EINVAL, __func__, "QP %u has no signalling policy, so its unsignalled "
			      "work is not accounted; set one with rv_qp_set_signal_every()", qp->qpn);
	return (int)outstanding(qp->sig);
}
