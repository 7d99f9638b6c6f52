/*
 * Which path soft0 took for `rverbs perf`: TCP, or the same-host path (large
 * WRITEs and SENDs by reference, every frame on shared-memory rings once both
 * sides agreed), from rv_soft_qp_path() on this side's QPs after a run. Each
 * side asks its own QPs; the server sends its answer to the client
 * (perf.c, session_run).
 */
#include <stdlib.h>

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

const char *perf_path_name(enum perf_path p)
{
	static const char *const names[] = {"unknown", "tcp", "same-host", "same-host-rings", "device"};
	return p <= PERF_PATH_NOT_SOFT ? names[p] : "unknown";
}
