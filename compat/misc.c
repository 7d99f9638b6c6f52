/*
 * The calls of libibverbs that belong to no device: status and event names,
 * rate conversions, fork support, sysfs helpers and the kernel-ABI copies
 * librdmacm uses (forwarded to the real library, the only one with a kernel).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "passthrough.h"

COMPAT_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return rv_wc_status_str((int)status); /* RV_WC_* == IBV_WC_* */
}

COMPAT_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	return rv_async_event_str((uint32_t)event); /* RV_EVENT_* == IBV_EVENT_* */
}

COMPAT_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const names[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if (node_type < 0 || (size_t)node_type >= sizeof(names) / sizeof(names[0]) || !names[node_type])
		return "unknown";
	return names[node_type];
}

COMPAT_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const names[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
					    "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};

	if (port_state < 0 || (size_t)port_state >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[port_state];
}

/* Each rate: its enum value, its multiple of 2.5 Gb/s (0 if none) and Mb/s. */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
	{IBV_RATE_2_5_GBPS, 1, 2500},    {IBV_RATE_5_GBPS, 2, 5000},
	{IBV_RATE_10_GBPS, 4, 10000},    {IBV_RATE_20_GBPS, 8, 20000},
	{IBV_RATE_30_GBPS, 12, 30000},   {IBV_RATE_40_GBPS, 16, 40000},
	{IBV_RATE_60_GBPS, 24, 60000},   {IBV_RATE_80_GBPS, 32, 80000},
	{IBV_RATE_120_GBPS, 48, 120000}, {IBV_RATE_14_GBPS, 0, 14062},
	{IBV_RATE_56_GBPS, 0, 56250},    {IBV_RATE_112_GBPS, 0, 112500},
	{IBV_RATE_168_GBPS, 0, 168750},  {IBV_RATE_25_GBPS, 10, 25781},
	{IBV_RATE_100_GBPS, 40, 103125}, {IBV_RATE_200_GBPS, 80, 206250},
	{IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
	{IBV_RATE_50_GBPS, 20, 53125},   {IBV_RATE_400_GBPS, 160, 425000},
	{IBV_RATE_600_GBPS, 240, 637500}, {IBV_RATE_800_GBPS, 320, 850000},
	{IBV_RATE_1200_GBPS, 480, 1275000},
};
#define N_RATES (sizeof(rates) / sizeof(rates[0]))

COMPAT_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mult ? rates[i].mult : -1;
	return -1;
}

COMPAT_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (rates[i].mult && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

COMPAT_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

COMPAT_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* soft0 pins no memory, so fork needs nothing for it; a real device's
 * registrations are the real library's business. */
COMPAT_EXPORT int ibv_fork_init(void)
{
	if (compat_real_load() && compat_real.ibv_fork_init)
		return compat_real.ibv_fork_init();
	return 0;
}

COMPAT_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	if (compat_real_load() && compat_real.ibv_is_fork_initialized)
		return compat_real.ibv_is_fork_initialized();
	return IBV_FORK_UNNEEDED;
}

COMPAT_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	if (compat_real_load() && compat_real.ibv_dontfork_range)
		return compat_real.ibv_dontfork_range(base, size);
	return 0;
}

COMPAT_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	if (compat_real_load() && compat_real.ibv_dofork_range)
		return compat_real.ibv_dofork_range(base, size);
	return 0;
}

COMPAT_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *c, struct ibv_ah_attr *attr,
					      uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	if (c && compat_is_soft(c))
		return errno = EOPNOTSUPP; /* soft0 has no Ethernet layer of its own */
	COMPAT_REAL_INT(ibv_resolve_eth_l2_from_gid, c, attr, eth_mac, vid);
}

COMPAT_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH"); /* libibverbs' override */

	return env && *env ? env : "/sys";
}

COMPAT_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[4096];
	ssize_t len;
	int fd;

	if (!dir || !file || !buf || !size)
		return -1;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len <= 0)
		return -1;
	if ((size_t)len == size)
		len--;
	if (buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return (int)len;
}

COMPAT_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	if (compat_real.ibv_copy_ah_attr_from_kern)
		compat_real.ibv_copy_ah_attr_from_kern(dst, src);
}

COMPAT_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	if (compat_real.ibv_copy_qp_attr_from_kern)
		compat_real.ibv_copy_qp_attr_from_kern(dst, src);
}

COMPAT_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	if (compat_real.ibv_copy_path_rec_from_kern)
		compat_real.ibv_copy_path_rec_from_kern(dst, src);
}

COMPAT_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	if (compat_real.ibv_copy_path_rec_to_kern)
		compat_real.ibv_copy_path_rec_to_kern(dst, src);
}
