/*
 * Which path soft0 took for `rverbs perf`: TCP, or the same-host path (large
 * WRITEs and SENDs by reference, every frame on shared-memory rings once both
 * sides agreed).
 *
 * The public API has no query for it, so this file watches what soft0 says
 * anyway: its INFO log lines when a QP agrees on the same-host path and when
 * its frames move onto a ring. The handler runs on soft0's progress thread
 * too, so it only sets atomic flags; it never prints (other messages are
 * dropped, as they were without a handler).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static atomic_bool seen_samehost, seen_ring;

static void watch_log(rv_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (strstr(msg, "soft0: ") && strstr(msg, ": same-host path to QP "))
		atomic_store(&seen_samehost, true);
	else if (strstr(msg, "soft0: ") && strstr(msg, "through a shared-memory ring"))
		atomic_store(&seen_ring, true);
}

void perf_path_init(bool tcp_only)
{
	/* soft0 reads RVERBS_SOFT_SHM when a context opens (docs/software-device.md). */
	if (tcp_only)
		setenv("RVERBS_SOFT_SHM", "0", 1);
	rv_set_log_handler(watch_log, NULL);
	rv_set_log_level(RV_LOG_INFO);
}

enum perf_path perf_path_now(bool soft)
{
	if (!soft)
		return PERF_PATH_NOT_SOFT;
	if (atomic_load(&seen_ring))
		return PERF_PATH_RINGS;
	return atomic_load(&seen_samehost) ? PERF_PATH_SAMEHOST : PERF_PATH_TCP;
}

const char *perf_path_name(enum perf_path p)
{
	static const char *const names[] = {"unknown", "tcp", "same-host", "same-host-rings", "device"};
	return p <= PERF_PATH_NOT_SOFT ? names[p] : "unknown";
}
