/*
 * What the kernel checks when ibv_reg_mr pins a range, for soft0, which pins
 * nothing: every page of the range is mapped, readable, and writable when the
 * access asks for writes (LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC, MW_BIND:
 * the kernel's ib_access_writable()). Else -EFAULT, as ibv_reg_mr fails.
 *
 * Owns: reading /proc/self/maps. Control path only (registration); never
 * called with a lock of the data path held.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/soft/soft.h"

/* The access bits for which the kernel pins pages for writing. */
#define WRITABLE_ACCESS \
	(RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC | RV_ACCESS_MW_BIND)

/* /proc/self/maps, whole, NUL-terminated; NULL on failure. */
static char *read_maps(size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

int soft_range_check(const void *addr, size_t length, uint32_t access, const char *fn)
{
	uintptr_t cur = (uintptr_t)addr, end = cur + length;
	bool want_w = (access & WRITABLE_ACCESS) != 0;
	size_t len;
	char *maps, *line;

	if (length == 0)
		return 0;
	maps = read_maps(&len);
	if (!maps) /* no procfs: nothing to check against; the copies stay fault-safe (mr.c) */
		return 0;
	/* The lines are sorted by address and do not overlap. */
	for (line = maps; *line && cur < end;) {
		char *next = strchr(line, '\n');
		unsigned long lo, hi;
		char perms[5] = "";

		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && hi > cur) {
			if (lo > cur)
				break; /* a hole at cur */
			if (perms[0] != 'r' || (want_w && perms[1] != 'w')) {
				free(maps);
				return rv_err(EFAULT, fn, "the memory at 0x%" PRIxPTR " (in [%p, +%zu)) is %s; soft0 "
					      "refuses it as ibv_reg_mr does", cur, addr, length,
					      perms[0] != 'r' ? "not readable (PROT_NONE)"
							      : "read-only but the access asks for writes (LOCAL_WRITE, "
								"REMOTE_WRITE, REMOTE_ATOMIC or MW_BIND)");
			}
			cur = hi;
		}
		line = next;
	}
	free(maps);
	if (cur < end)
		return rv_err(EFAULT, fn, "the memory at 0x%" PRIxPTR " (in [%p, +%zu)) is not mapped; soft0 "
			      "refuses it as ibv_reg_mr does", cur, addr, length);
	return 0;
}
