/*
 * What the subcommands of the `rverbs` command share: their entry points and
 * small helpers for names and files. Everything here uses the public rverbs
 * API only (plus /sys, /proc and /dev, which the doctor reads).
 */
#ifndef RV_TOOLS_H
#define RV_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rverbs/rverbs.h>

int cmd_info(int argc, char **argv);
int cmd_perf(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* Names for enum values ("ACTIVE", "Ethernet", "4096"). Never NULL. */
const char *port_state_name(uint32_t state);
const char *link_layer_name(uint32_t ll);
int mtu_bytes(uint32_t mtu);
const char *atomic_cap_name(uint32_t cap);

/* "0011:2233:4455:6677" from a host-order GUID. */
void format_guid(uint64_t guid, char *buf, size_t len);
/* "fe80:0000:...": 8 groups of 4 hex digits. */
void format_gid(const uint8_t gid[16], char *buf, size_t len);
bool gid_is_zero(const uint8_t gid[16]);
/* A type for a GID: from sysfs for kernel devices ("RoCE v2", "IB/RoCE v1"),
 * else guessed from its form ("IPv4-mapped", "link-local"). */
void gid_type(const char *dev, int port, int index, const uint8_t gid[16], char *buf, size_t len);

/* The first line of a file, without the newline; false if unreadable. */
bool read_line(const char *path, char *buf, size_t len);

/* Print "what failed: strerror\n  rv_error_last()" to stderr; returns 1. */
int tool_fail(const char *what, int rc);

/* "64 B", "4 KiB", "1 MiB" */
void format_size(uint64_t bytes, char *buf, size_t len);
/* Parse "64", "4k", "4K", "64KiB", "1m": bytes; -1 if not a size. */
long long parse_size(const char *s);

#endif
