/*
 * Words for libibverbs failures: errno extraction across libibverbs' return
 * conventions, thread-safe strerror, resource-limit text and the names of
 * QP states, types and opcodes used in messages.
 *
 * Owns: nothing; every function is called on a failure path only. Never
 * called on the data path's success path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ibv-driver.h"

int rv_ibv_errno(int rc)
{
	/* libibverbs calls return the errno (ibv_destroy_qp, ibv_modify_qp ...),
	 * -1 with errno set (ibv_close_device, ibv_query_gid), or a negative
	 * errno (some providers' post and poll). */
	if (rc > 0)
		return rc;
	if (rc == -1 && errno > 0)
		return errno;
	if (rc < -1)
		return -rc;
	return EIO;
}

const char *rv_ibv_strerror(int err, char *buf, size_t len)
{
#if defined(__GLIBC__)
	/* The GNU strerror_r (we build with _GNU_SOURCE) returns the text. */
	return strerror_r(err, buf, len);
#else
	if (strerror_r(err, buf, len) != 0)
		snprintf(buf, len, "error %d", err);
	return buf;
#endif
}

void rv_ibv_format_limit(rlim_t value, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB" };
	size_t u = 0;

	if (value == RLIM_INFINITY) {
		snprintf(buf, len, "unlimited");
		return;
	}
	/* Show whole units only, as ulimit users think of them. */
	while (u + 1 < sizeof(units) / sizeof(units[0]) && value >= 1024 && value % 1024 == 0) {
		value /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", (uint64_t)value, units[u]);
}

void rv_ibv_hint_memlock(void)
{
	struct rlimit rl;
	char soft[32], hard[32];

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
		rv_err_hint("registration pins memory against RLIMIT_MEMLOCK; raise it with "
			    "`ulimit -l unlimited` or a memlock line in /etc/security/limits.conf");
		return;
	}
	if (rl.rlim_cur == RLIM_INFINITY) {
		rv_err_hint("RLIMIT_MEMLOCK is unlimited, so it is not the cause: the device ran "
			    "out of translation resources or the system out of memory; close "
			    "unused MRs or register fewer, larger regions");
		return;
	}
	rv_ibv_format_limit(rl.rlim_cur, soft, sizeof(soft));
	rv_ibv_format_limit(rl.rlim_max, hard, sizeof(hard));
	/* Kept short: the whole message must fit rv_error_last()'s 512 bytes. */
	rv_err_hint("registration pins memory against RLIMIT_MEMLOCK, now %s (hard %s): raise it "
		    "with `ulimit -l unlimited` before starting the program (past the hard limit "
		    "only as root), or for good with `* - memlock unlimited` in "
		    "/etc/security/limits.conf or LimitMEMLOCK=infinity for a systemd unit",
		    soft, hard);
}

const char *rv_ibv_qp_state_name(uint32_t state)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown state";
}

const char *rv_ibv_qp_type_name(uint32_t type)
{
	switch (type) {
	case RV_QPT_RC:
		return "RC";
	case RV_QPT_UC:
		return "UC";
	case RV_QPT_UD:
		return "UD";
	case RV_QPT_XRC_SEND:
		return "XRC_SEND";
	case RV_QPT_XRC_RECV:
		return "XRC_RECV";
	default:
		return "unknown QP type";
	}
}

const char *rv_ibv_wr_opcode_name(uint32_t opcode)
{
	static const char *const names[] = {
		"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ",
		"ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW",
		"SEND_WITH_INV",
	};

	return opcode < sizeof(names) / sizeof(names[0]) ? names[opcode] : "unknown opcode";
}
