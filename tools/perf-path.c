/*
 * Which path soft0 took for `rverbs perf`: TCP, or the same-host path (large
 * WRITEs and SENDs by reference, every frame on shared-memory rings once both
 * sides agreed), from rv_soft_qp_path() on this side's QPs after a run. Each
 * side asks its own QPs; the server sends its answer to the client
 * (perf.c, session_run).
 */
#include <stdlib.h>
#include <time.h>

#include <rverbs/soft.h>

#include "perf.h"

void perf_path_init(bool tcp_only)
{
	/* soft0 reads RVERBS_SOFT_SHM when a context opens (docs/software-device.md). */
	if (tcp_only)
		setenv("RVERBS_SOFT_SHM", "0", 1);
}

static enum perf_path from_soft(rv_soft_path p)
{
	switch (p) {
	case RV_SOFT_PATH_TCP:
		return PERF_PATH_TCP;
	case RV_SOFT_PATH_SAME_HOST:
		return PERF_PATH_SAMEHOST;
	case RV_SOFT_PATH_SAME_HOST_RINGS:
		return PERF_PATH_RINGS;
	default: /* not connected (any more), or a value this tool does not know */
		return PERF_PATH_UNKNOWN;
	}
}

enum perf_path perf_path_now(const struct rdma *r)
{
	enum perf_path best = PERF_PATH_UNKNOWN;
	rv_soft_path p;
	rv_qp *qp;

	if (!r || !perf_rdma_is_soft(r))
		return PERF_PATH_NOT_SOFT;
	/* The QPs of a session agree the same way; the furthest one along is
	 * what the run used once it got going. */
	for (uint32_t i = 0; (qp = perf_rdma_qp(r, i)) != NULL; i++) {
		if (rv_soft_qp_path(qp, &p) == 0 && from_soft(p) > best)
			best = from_soft(p);
	}
	return best;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The path of the QP furthest behind (a run is as fast as its slowest QP). */
static enum perf_path slowest(const struct rdma *r)
{
	enum perf_path worst = PERF_PATH_NOT_SOFT;
	rv_soft_path p;
	rv_qp *qp;

	for (uint32_t i = 0; (qp = perf_rdma_qp(r, i)) != NULL; i++)
		if (rv_soft_qp_path(qp, &p) == 0 && from_soft(p) < worst)
			worst = from_soft(p);
	return worst;
}

/*
 * soft0 agrees on its same-host path, then its rings, in the moments after
 * a connection is up (the progress threads exchange a few messages): part
 * of connecting, as a NIC's link and address resolution are. A run that
 * started at once timed its first WRITEs over TCP (a 1 MiB same-host run of
 * 2 000 WRITEs averaged 17 against 21 GB/s for 20 000). So before the start
 * barrier each side waits until its QPs are on the rings, or their path has
 * not changed for 50 ms (a peer on another host, or the path refused: TCP
 * for good), at most 1 s. Returns the milliseconds waited.
 */
unsigned perf_path_settle(const struct rdma *r)
{
	int64_t t0 = now_ms(), changed = t0, t;
	enum perf_path last, p;

	if (!r || !perf_rdma_is_soft(r))
		return 0;
	last = slowest(r);
	for (;;) {
		p = slowest(r);
		t = now_ms();
		if (p != last) {
			last = p;
			changed = t;
		}
		if (p == PERF_PATH_RINGS || t - changed >= 50 || t - t0 >= 1000)
			return (unsigned)(t - t0);
		struct timespec nap = {0, 200000};
		nanosleep(&nap, NULL);
	}
}

const char *perf_path_name(enum perf_path p)
{
	static const char *const names[] = {"unknown", "tcp", "same-host", "same-host-rings", "device"};
	return p <= PERF_PATH_NOT_SOFT ? names[p] : "unknown";
}
