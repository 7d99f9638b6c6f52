/*
 * The `rverbs` command: one executable whose subcommands live in their own
 * files (info.c, perf*.c, doctor.c, run.c). This file dispatches and holds the small
 * helpers they share (names, formatting, reading sysfs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rverbs COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  info [-d DEV] [-v] [--json]     devices, ports, GIDs and capabilities\n"
		"  perf [TEST] [MODE] [OPTIONS]    RDMA benchmarks like perftest (rverbs perf --help)\n"
		"  bench [OPTIONS]                 raw TCP vs rverbs RC table (same as perf --compare)\n"
		"  doctor [--json] [--root DIR]    check this machine's RDMA setup; exit 1 if a check fails\n"
		"  run [--] PROGRAM [ARGS...]      run a libibverbs program with soft0 in its device list\n"
		"  version                         the library version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "info") == 0)
		return cmd_info(argc - 1, argv + 1);
	if (strcmp(argv[1], "perf") == 0)
		return cmd_perf(argc - 1, argv + 1);
	if (strcmp(argv[1], "bench") == 0)
		return cmd_bench(argc - 1, argv + 1);
	if (strcmp(argv[1], "doctor") == 0)
		return cmd_doctor(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("rverbs %s\n", rv_version());
		return 0;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "rverbs: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}

const char *port_state_name(uint32_t state)
{
	static const char *const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "UNKNOWN";
}

const char *link_layer_name(uint32_t ll)
{
	switch (ll) {
	case RV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case RV_LINK_LAYER_ETHERNET: return "Ethernet";
	default: return "Unspecified";
	}
}

int mtu_bytes(uint32_t mtu)
{
	return mtu >= RV_MTU_256 && mtu <= RV_MTU_4096 ? 128 << mtu : 0;
}

const char *atomic_cap_name(uint32_t cap)
{
	switch (cap) {
	case RV_ATOMIC_NONE: return "none";
	case RV_ATOMIC_HCA: return "HCA";
	case RV_ATOMIC_GLOB: return "global";
	default: return "unknown";
	}
}

void format_guid(uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
		 (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
}

void format_gid(const uint8_t g[16], char *buf, size_t len)
{
	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13],
		 g[14], g[15]);
}

bool gid_is_zero(const uint8_t gid[16])
{
	for (int i = 0; i < 16; i++)
		if (gid[i])
			return false;
	return true;
}

bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

void gid_type(const char *dev, int port, int index, const uint8_t g[16], char *buf, size_t len)
{
	static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char path[512];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d", dev, port, index);
	if (read_line(path, buf, len) && buf[0])
		return;
	if (memcmp(g, v4map, sizeof(v4map)) == 0)
		snprintf(buf, len, "IPv4-mapped");
	else if (g[0] == 0xfe && (g[1] & 0xc0) == 0x80)
		snprintf(buf, len, "link-local");
	else
		snprintf(buf, len, "IPv6");
}

int tool_fail(const char *what, int rc)
{
	const char *msg = rv_error_last();

	fprintf(stderr, "rverbs: %s failed: %s\n", what, strerror(rc < 0 ? -rc : rc));
	if (msg[0])
		fprintf(stderr, "  %s\n", msg);
	return 1;
}

void format_size(uint64_t b, char *buf, size_t len)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

long long parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (strcmp(end, "") != 0 && strcmp(end, "B") != 0 && strcmp(end, "iB") != 0 && strcmp(end, "b") != 0)
		return -1;
	return v > (1ull << 40) ? -1 : (long long)v;
}
