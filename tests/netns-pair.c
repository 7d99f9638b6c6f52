/*
 * Two hosts as two network namespaces: see netns-pair.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netns-pair.h"

int netns_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

bool netns_usable(void)
{
	return geteuid() == 0 && system("ip -V >/dev/null 2>&1") == 0;
}

int netns_enter(const char *name)
{
	char path[128];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc < 0 ? -errno : 0;
}

int netns_pair_new(struct netns_pair *p, const char *tag, int subnet)
{
	int pid = (int)getpid(), id = pid % 250 + 1;

	snprintf(p->ns_a, sizeof(p->ns_a), "rv%sA%d", tag, pid);
	snprintf(p->ns_b, sizeof(p->ns_b), "rv%sB%d", tag, pid);
	snprintf(p->dev_a, sizeof(p->dev_a), "%sA%d", tag, pid);
	snprintf(p->dev_b, sizeof(p->dev_b), "%sB%d", tag, pid);
	snprintf(p->ip_a, sizeof(p->ip_a), "10.%d.%d.1", subnet, id);
	snprintf(p->ip_b, sizeof(p->ip_b), "10.%d.%d.2", subnet, id);
	if (netns_sh("ip netns add %s && ip netns add %s", p->ns_a, p->ns_b) != 0 ||
	    netns_sh("ip link add %s netns %s type veth peer name %s netns %s", p->dev_a, p->ns_a, p->dev_b,
		     p->ns_b) != 0 ||
	    netns_sh("ip -n %s addr add %s/24 dev %s && ip -n %s link set %s up && ip -n %s link set lo up", p->ns_a,
		     p->ip_a, p->dev_a, p->ns_a, p->dev_a, p->ns_a) != 0 ||
	    netns_sh("ip -n %s addr add %s/24 dev %s && ip -n %s link set %s up && ip -n %s link set lo up", p->ns_b,
		     p->ip_b, p->dev_b, p->ns_b, p->dev_b, p->ns_b) != 0) {
		netns_pair_del(p);
		return -1;
	}
	return 0;
}

void netns_pair_del(const struct netns_pair *p)
{
	netns_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", p->ns_a, p->ns_b);
}
