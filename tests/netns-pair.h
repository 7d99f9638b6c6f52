/*
 * Two hosts for the tests that need them: two network namespaces joined by a
 * veth pair, each end with an address of 10.SUBNET.ID.0/24 (ID from the
 * test's pid, so that tests running at once do not meet). Needs root and
 * iproute2's ip; a test skips (77) when netns_usable() is false or
 * netns_pair_new() fails.
 */
#ifndef RVERBS_TESTS_NETNS_PAIR_H
#define RVERBS_TESTS_NETNS_PAIR_H

#include <stdbool.h>

struct netns_pair {
	char ns_a[32], ns_b[32];   /* the namespaces' names (ip netns) */
	char ip_a[32], ip_b[32];   /* ns_a's address (.1) and ns_b's (.2) */
	char dev_a[16], dev_b[16]; /* the veth ends, in ns_a and in ns_b */
};

/* system() of a formatted command line; its status. */
int netns_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Root, and `ip` runs. */
bool netns_usable(void);
/* Moves the calling thread (the process, if single-threaded) into namespace
 * name; 0 or -errno. */
int netns_enter(const char *name);
/* Creates the pair, named after tag (a few letters) and the pid, on
 * 10.subnet.ID.0/24, loopback up in both; 0, or -1 with nothing left behind. */
int netns_pair_new(struct netns_pair *p, const char *tag, int subnet);
void netns_pair_del(const struct netns_pair *p);

#endif
