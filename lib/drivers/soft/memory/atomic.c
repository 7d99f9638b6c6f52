/*
 * RFC 7306 atomics on the responder: compare-and-swap and fetch-and-add on
 * an 8-byte aligned word of registered memory.
 *
 * The word is changed with the compiler's __atomic builtins (sequentially
 * consistent), so an operation is atomic with respect to every other one
 * soft0 executes (from any QP, any context of the process) and to the owner
 * process's own __atomic / C11 atomic operations on the same word
 * (atomic_cap RV_ATOMIC_HCA, with the stronger property that host atomics
 * are included). Masked variants (RFC 7306 masks other than "whole word")
 * are not offered by verbs and are refused by the caller (rx.c).
 *
 * Runs in the progress thread; the MR lock is held around the operation, so
 * the memory cannot be deregistered under it.
 */
#include <string.h>

#include <sys/uio.h>

#include "drivers/soft/soft.h"

struct op {
	const struct rv_atomic_req *a;
	uint64_t orig;
	bool fault;
};

static void run(void *p, void *arg)
{
	struct op *o = arg;
	uint64_t *w = p;
	struct iovec word = {p, 8};

	/* The word is read in place: first make sure it is still mapped (mr.c,
	 * soft_mem_probe; one system call, as an atomic's round trip costs far
	 * more). A word the process made read-only after registration is not
	 * caught (docs/software-device.md, "Memory"). */
	if (!soft_mem_probe(&word, 1)) {
		o->fault = true;
		return;
	}
	if (o->a->op == RV_ATOMIC_FETCH_ADD) {
		o->orig = __atomic_fetch_add(w, o->a->swap_add, __ATOMIC_SEQ_CST);
	} else {
		uint64_t expect = o->a->compare;
		/* On failure expect receives the current value: the original either way. */
		__atomic_compare_exchange_n(w, &expect, o->a->swap_add, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		o->orig = expect;
	}
}

enum soft_mem_err soft_atomic_exec(struct soft_ctx *sc, struct rv_qp *qp, const struct rv_atomic_req *a,
				   uint64_t *orig)
{
	struct op o = {.a = a, .orig = 0, .fault = false};
	enum soft_mem_err e = soft_mem_apply(sc, qp, a->stag, RV_ACCESS_REMOTE_ATOMIC, a->to, 8, run, &o);

	if (e == SOFT_MEM_OK && o.fault)
		e = SOFT_MEM_FAULT;
	if (e == SOFT_MEM_OK)
		*orig = o.orig;
	return e;
}
